"""Row keys for contribution bounding, per row or a column at a time, and the per-unit selection by key.

A row's key ``K`` (a uint64) is the tables' specified hash (:mod:`dpcompose.transformations._hash`)
when the row is *plain* — a ``tuple`` or ``list`` (exact types) whose fields are all ``None``, ``bool``,
``float``, ``str`` or ``int`` in ``[-2**63, 2**64)`` (exact types) —
``acc = ROW_SEED; acc = splitmix64(acc ^ h(f))`` over the fields in order, with ``h`` the tables' value
code (an int by its bits modulo ``2**64``, ``None`` the null code); for any other row, the first 8 bytes
(big-endian) of ``H_row(e)``, the keyed BLAKE2b of its canonical encoding ``e``. Either way ``K`` is a
function of ``e`` (the encoding names every type exactly, so it decides whether the row is plain), which is
what the stability proof of ``make_bound_contributions`` needs.

The column-at-a-time path computes the same keys from numpy columns (:func:`plain_columns` reads them
from a list of equal-length tuples or a numpy structured array); :func:`plain_row_key` is the per-row
definition, and the tests check that the two agree.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

import numpy as np
import numpy.typing as npt

from dpcompose.transformations._hash import (
    NULL_CODE,
    ROW_SEED,
    SPLITMIX_GAMMA,
    SPLITMIX_M1,
    SPLITMIX_M2,
    fold_row_key,
    string_code,
    value_codes,
)

__all__ = ["column_keys", "plain_columns", "plain_row_key", "same_rows_of", "select_smallest"]

U64 = npt.NDArray[np.uint64]
_MASK = (1 << 64) - 1
_GAMMA = int(SPLITMIX_GAMMA)
_M1 = int(SPLITMIX_M1)
_M2 = int(SPLITMIX_M2)
_SEED = int(ROW_SEED)
_NULL = int(NULL_CODE)
_NAN_BITS = 0x7FF8000000000000
_INT_LOW = -(1 << 63)
_INT_HIGH = 1 << 64
_PACK_FLOAT = struct.Struct("<d").pack
_FLOAT_BITS = struct.Struct("<Q").unpack


def _mix(x: int) -> int:
    """SplitMix64's output function on one Python int (as :func:`~._hash.splitmix64`)."""
    z = (x + _GAMMA) & _MASK
    z = ((z ^ (z >> 30)) * _M1) & _MASK
    z = ((z ^ (z >> 27)) * _M2) & _MASK
    return z ^ (z >> 31)


def _value_code(value: Any) -> int | None:
    """``h(value)`` for a plain value, ``None`` for any other."""
    kind = type(value)
    if kind is int:
        return _mix(value & _MASK) if _INT_LOW <= value < _INT_HIGH else None
    if kind is str:
        return string_code(value)
    if kind is float:
        if value != value:
            return _mix(_NAN_BITS)
        return _mix(_FLOAT_BITS(_PACK_FLOAT(0.0 if value == 0.0 else value))[0])
    if kind is bool:
        return _mix(int(value))
    if value is None:
        return _NULL
    return None


def plain_row_key(row: Any) -> int | None:
    """The key ``K`` of a plain row (see the module docstring), or ``None`` if the row is not plain."""
    if type(row) is not tuple and type(row) is not list:
        return None
    acc = _SEED
    for value in row:
        code = _value_code(value)
        if code is None:
            return None
        acc = _mix(acc ^ code)
    return acc


_COLUMN_TYPES = {int: "i", float: "f", str: "S", bool: "b"}


def _column(values: Sequence[Any]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any] | None] | None:
    """A column of plain values of one type (and ``None``s) as a numpy array and its null mask, or
    ``None`` when the values mix types or hold anything else (the caller then keys row by row)."""
    kinds = set(map(type, values))
    nulls: np.ndarray[Any, Any] | None = None
    if type(None) in kinds:
        kinds.discard(type(None))
        nulls = np.fromiter((v is None for v in values), dtype=bool, count=len(values))
    if len(kinds) > 1 or not kinds.issubset(_COLUMN_TYPES):
        return None
    kind = _COLUMN_TYPES[kinds.pop()] if kinds else "S"
    if kind == "S":
        return np.array(values, dtype=object), nulls
    filled = values
    if nulls is not None:
        fill = {"i": 0, "f": 0.0, "b": False}[kind]
        filled = [fill if v is None else v for v in values]
    try:
        if kind == "i":
            return np.array(filled, dtype=np.int64), nulls
    except OverflowError:
        try:
            return np.array(filled, dtype=np.uint64), nulls  # [2**63, 2**64): the same bits mod 2**64
        except OverflowError:
            return None
    return np.array(filled, dtype=np.float64 if kind == "f" else np.bool_), nulls


def plain_columns(data: Any) -> list[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any] | None]] | None:
    """The columns of ``data`` (a list of plain rows of one length and one type per column, or a numpy
    structured array of bool, int, float64-or-narrower and str fields), each as a numpy array and its null
    mask; ``None`` when ``data`` is not of that form (the caller keys row by row)."""
    if isinstance(data, np.ndarray):
        names = data.dtype.names
        if data.ndim != 1 or not names:
            return None
        columns: list[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any] | None]] = []
        for name in names:
            field = data.dtype.fields[name][0] if data.dtype.fields else None
            if field is None or field.subdtype is not None or field.names is not None:
                return None
            if not (field.kind in "biuU" or (field.kind == "f" and field.itemsize <= 8)):
                return None
            column = data[name]
            columns.append((column.astype(object) if field.kind == "U" else column, None))
        return columns
    if not data:
        return None
    shapes = set(map(type, data))
    if shapes != {tuple} and shapes != {list}:
        return None
    widths = set(map(len, data))
    if len(widths) != 1:
        return None
    width = widths.pop()
    if width == 0:
        return None
    out = []
    for j in range(width):
        column = _column(list(map(itemgetter(j), data)))
        if column is None:
            return None
        out.append(column)
    return out


def column_keys(columns: list[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any] | None]]) -> U64:
    """The key ``K`` of every row from its plain columns (as :func:`plain_row_key` row by row), one
    column's codes in memory at a time."""
    acc = np.full(len(columns[0][0]), ROW_SEED, dtype=np.uint64)
    for values, nulls in columns:
        fold_row_key(acc, value_codes(values, nulls))
    return acc


def same_rows_of(
    columns: list[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any] | None]],
) -> Callable[[np.ndarray[Any, Any], np.ndarray[Any, Any]], np.ndarray[Any, np.dtype[np.bool_]]]:
    """For plain columns, a vectorised test of whether rows ``a[j]`` and ``b[j]`` are the same value (the
    same canonical encoding): every column equal, floats by their bits, nulls at the same places."""

    def same(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> np.ndarray[Any, np.dtype[np.bool_]]:
        out = np.ones(len(a), dtype=bool)
        for values, nulls in columns:
            x, y = values[a], values[b]
            if values.dtype.kind == "f":
                width = np.dtype(f"u{values.dtype.itemsize}")
                x, y = x.view(width), y.view(width)
            equal = np.asarray(x == y, dtype=bool)
            if nulls is not None:
                na, nb = nulls[a], nulls[b]
                equal = (na == nb) & (na | equal)
            out &= equal
        return out

    return same


_COMPOSITE_UNIT_BITS = 40
"""Int units spanning at most ``2**40`` values are used as they are; others are numbered first."""

_BLOCK = 1 << 18
"""Sorted neighbours are compared this many at a time (no sorted copy of the n sort keys)."""


def _unit_codes(units: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], int]:
    """Non-negative codes of the units (equal units, equal codes) as uint64, and their bit width."""
    if units.dtype.kind == "b":
        units = units.view(np.uint8)
    if units.dtype.kind in "iu" and units.size:
        lo, hi = units.min(), units.max()
        span = int(hi) - int(lo)
        if span < 1 << _COMPOSITE_UNIT_BITS:
            shifted = units.astype(np.int64 if units.dtype.kind == "i" else np.uint64)  # a copy
            shifted -= shifted.dtype.type(lo)  # no overflow: the span fits; now non-negative
            return shifted.view(np.uint64), span.bit_length()
    uniques, inverse = np.unique(units, return_inverse=True)
    return inverse.reshape(-1).astype(np.uint64), max(len(uniques) - 1, 0).bit_length()


def _neighbours(
    sortable: U64, order: np.ndarray[Any, Any], bits: int
) -> tuple[np.ndarray[Any, np.dtype[np.bool_]], np.ndarray[Any, np.dtype[np.bool_]]]:
    """For the items in sorted order ``sortable[order]``: whether each starts a new unit (its top ``bits``
    bits differ from the previous item's) and whether it ties with the previous item (equal sort keys);
    a block at a time."""
    n = len(order)
    fresh = np.empty(n, dtype=bool)
    tied = np.empty(n, dtype=bool)
    unit_step = np.uint64(1 << (64 - bits)) if bits else None
    last = None
    for begin in range(0, n, _BLOCK):
        block = sortable[order[begin : begin + _BLOCK]]
        previous = np.empty_like(block)
        previous[1:] = block[:-1]
        previous[0] = block[0] if last is None else last
        last = block[-1]
        previous ^= block
        if unit_step is None:
            fresh[begin : begin + len(block)] = False
        else:
            np.greater_equal(previous, unit_step, out=fresh[begin : begin + len(block)])
        np.equal(previous, 0, out=tied[begin : begin + len(block)])
    fresh[0], tied[0] = True, False
    return fresh, tied


def select_smallest(
    units: np.ndarray[Any, Any],
    keys: U64,
    limit: int,
    label: Callable[[int], tuple[bytes, bool]],
    key_of: Callable[[int], int],
    same_rows: Callable[[np.ndarray[Any, Any], np.ndarray[Any, Any]], np.ndarray[Any, Any]] | None = None,
) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """Within each unit, mark the ``limit`` items with the smallest ``(key, label)``.

    ``units`` are codes (equal codes: one unit; ints, bools or any sortable dtype); ``keys`` the items'
    keys, **overwritten** (the sort reuses the buffer); ``key_of(i)`` gives item ``i``'s key again and
    ``label(i)`` its canonical encoding and whether it is opaque. Items are sorted by unit and key with
    numpy; only a run of items that tie there across the cut of their unit (holding both the ``limit``-th
    and the next item) is re-ordered by ``(key, label)`` in Python. ``same_rows(a, b)``, if given, tells
    (vectorised) whether items ``a[j]`` and ``b[j]`` are the same value (equal labels, not opaque): a run
    of one value is left as it is. Items with equal labels are interchangeable, except opaque ones: an
    opaque label with copies on both sides of the cut is dropped whole. Keys are a function of the labels
    (the caller guarantees it), so every copy of a label sits in the same run.
    """
    n = len(keys)
    mark = np.zeros(n, dtype=bool)
    if n == 0:
        return mark
    codes, bits = _unit_codes(units)
    # (unit, key) as one uint64: the unit above the key's top 64 - bits bits (an order-preserving
    # truncation of the key; ties it creates are runs, settled below by the full key). bits <= 40: a
    # unit code is below the number of items or spans at most 2**40 values (_unit_codes).
    sortable = keys
    if bits:
        sortable >>= np.uint64(bits)
        codes <<= np.uint64(64 - bits)
        sortable |= codes
    del codes, keys
    order = np.argsort(sortable)
    fresh, tied = _neighbours(sortable, order, bits)
    del sortable
    rank = np.arange(n, dtype=np.int32 if n < 1 << 31 else np.int64)
    start = rank.copy()
    start[~fresh] = 0
    np.maximum.accumulate(start, out=start)
    rank -= start
    del start
    mark[order[rank < limit]] = True
    cuts = np.flatnonzero(rank == limit)  # the first dropped item of each unit over the limit
    del rank
    if cuts.size == 0:
        return mark
    cuts = cuts[tied[cuts]]  # a run straddles the cut
    if cuts.size == 0:
        return mark
    run_start = np.where(tied, 0, np.arange(n))
    np.maximum.accumulate(run_start, out=run_start)
    if same_rows is not None:  # leave runs of one value alone
        inside = np.flatnonzero(tied)
        differ = ~same_rows(order[inside], order[inside - 1])
        mixed = np.unique(run_start[inside[differ]])
        cuts = cuts[np.isin(run_start[cuts], mixed)]
    for cut in cuts.tolist():
        start = int(run_start[cut])
        end = cut + 1
        while end < n and tied[end]:
            end += 1
        _settle(mark, order[start:end].tolist(), cut - start, key_of, label)
    return mark


def _settle(
    mark: np.ndarray[Any, np.dtype[np.bool_]],
    members: list[int],
    room: int,
    key_of: Callable[[int], int],
    label: Callable[[int], tuple[bytes, bool]],
) -> None:
    """Re-decide a run of tied items straddling a cut: of ``members``, the ``room`` with the smallest
    ``(key, label)`` are marked (an opaque label at the cut dropped whole); in place."""
    ranked = sorted(((key_of(i), *label(i), i) for i in members), key=lambda t: (t[0], t[1]))
    kept = ranked[:room]
    boundary = ranked[room]
    if kept and kept[-1][1] == boundary[1] and boundary[2]:
        kept = [t for t in kept if t[1] != boundary[1]]  # an opaque straddle: all its copies dropped
    mark[members] = False
    mark[[t[3] for t in kept]] = True
