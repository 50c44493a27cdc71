"""The per-identifier caps of :mod:`dpcompose.tables._engine` on numpy columns, by sorting: which rows an
engine keeps for ``max_groups`` and ``max_rows``, from the specified hash keys
(:mod:`dpcompose.transformations._hash`) and exact identities of the identifier and group values.

An *identity* of a column is a list of arrays whose values are equal at two rows exactly when the column's
values are (nulls equal to each other): for an int, bool, date or float column its codes and its null mask
(the code is a bijection of the value's int64 or canonical float bits, so only a null and one value share a
code), for a string column one dense index per distinct value (null: -1).

* Group cap: the rows sorted by (identifier, group key, group values); a group starts where any of them
  changes; the groups of one identifier are numbered from 0 in that order, and the rows of its first
  ``max_groups`` groups are kept. Groups are distinct values, so never more than ``max_groups`` are kept;
  two groups of one identifier with equal keys (a 64-bit collision) are ordered by their values.
* Row cap: the rows sorted by (identifier, row key); the first ``max_rows`` rows of each identifier are
  kept. Rows with equal keys are identical rows (or collide, probability about ``2**-64`` per pair), so
  which of them is kept does not change an aggregate.

These are the ordinal ranks of the plan (``rank("ordinal").over(id) <= cap`` over the distinct groups, then
over the rows) computed with a few int64 arrays of the frame's length, instead of an engine's window
function and multi-column join.

Examples:
    >>> import numpy as np
    >>> ids = [np.array([1, 1, 1, 2], dtype=np.int64)]
    >>> first_per_identifier(ids, np.array([9, 3, 5, 1], dtype=np.uint64), 2).tolist()
    [False, True, True, True]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["first_groups_per_identifier", "first_per_identifier"]

Arr = npt.NDArray[np.generic]
Mask = npt.NDArray[np.bool_]


def _changes(columns: Sequence[Arr], order: npt.NDArray[np.intp], out: Mask) -> None:
    """``out[i] |= (any column differs between sorted positions i − 1 and i)``, for i >= 1."""
    for column in columns:
        s = column[order]
        out[1:] |= s[1:] != s[:-1]


def _positions(n: int) -> npt.NDArray[np.signedinteger[Any]]:
    """``0, 1, …, n − 1`` in the narrowest of int32 and int64 that holds them."""
    return np.arange(n, dtype=np.int32 if n < 1 << 31 else np.int64)


def _index_in_run(starts: Mask) -> npt.NDArray[np.signedinteger[Any]]:
    """For each sorted position, its distance from the last position at or before it where ``starts``."""
    at = _positions(len(starts))
    first = np.where(starts, at, 0).astype(at.dtype, copy=False)
    np.maximum.accumulate(first, out=first)
    at -= first
    return at


def first_per_identifier(identity: Sequence[Arr], keys: npt.NDArray[np.uint64], limit: int) -> Mask:
    """The row cap: per identifier (rows equal in every array of ``identity``), the ``limit`` rows with the
    smallest ``keys`` (unsigned), as a mask over the rows."""
    n = len(keys)
    keep = np.zeros(n, dtype=bool)
    if n == 0:
        return keep
    order = np.lexsort((keys, *identity[::-1]))  # the last array sorts first
    starts = np.zeros(n, dtype=bool)
    starts[0] = True
    _changes(identity, order, starts)
    keep[order] = _index_in_run(starts) < limit
    return keep


def first_groups_per_identifier(
    identity: Sequence[Arr], groups: Sequence[Arr], keys: npt.NDArray[np.uint64], limit: int
) -> Mask:
    """The group cap: per identifier (``identity``), the rows of its ``limit`` distinct groups (rows equal
    in every array of ``groups``) with the smallest group ``keys``, as a mask over the rows."""
    n = len(keys)
    keep = np.zeros(n, dtype=bool)
    if n == 0:
        return keep
    order = np.lexsort((*groups[::-1], keys, *identity[::-1]))
    id_starts = np.zeros(n, dtype=bool)
    id_starts[0] = True
    _changes(identity, order, id_starts)
    group_starts = id_starts.copy()
    _changes([keys, *groups], order, group_starts)
    # the group's number counted over all identifiers (int32 while it fits), minus that of its
    # identifier's first group
    number = np.cumsum(group_starts, dtype=np.int32 if n < 1 << 31 else np.int64)
    del group_starts
    first = np.where(id_starts, number, 0).astype(number.dtype, copy=False)
    np.maximum.accumulate(first, out=first)  # (numbers never decrease along the sorted rows)
    number -= first
    keep[order] = number < limit  # the first group of an identifier has number 0
    return keep
