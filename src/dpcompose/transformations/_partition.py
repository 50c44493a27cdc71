"""Partitioning a dataset into disjoint parts by a key."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

from dpcompose.core import (
    ChangeOneDistance,
    Domain,
    Metric,
    Node,
    PartitionDistance,
    Transformation,
    VectorDomain,
)
from dpcompose.core._metrics import refuse_table_domain
from dpcompose.core._recipe import recorded
from dpcompose.errors import DomainMismatch, InvalidParameter
from dpcompose.transformations._clamp import check_dataset_metric

__all__ = ["make_partition"]


@recorded
def make_partition(
    input_domain: Domain,
    input_metric: Metric,
    by: Callable[[Any], Hashable] | int | str,
    keys: Sequence[Hashable],
) -> Transformation[Any, tuple[list[Any], ...], int, int]:
    """Split a dataset into ``len(keys)`` disjoint parts: part i holds the records whose key is ``keys[i]``.

    Records whose key is not declared go to no part, and so does a record for which ``by`` raises or
    gives an unhashable key (a missing column, say): an exception would be an output no map accounts
    for, while dropping a record is a function of that record alone, so the stability is unchanged. The
    keys are declared in advance (public), so the number and order of the parts never depend on the data.

    Stability (``PartitionDistance``: records added or removed, summed over parts): add/remove of d
    records changes at most d records in total; changing d records removes d and adds d, so at most 2d.

    Args:
        input_domain: a ``VectorDomain`` of records.
        input_metric: ``SymmetricDistance()`` or ``ChangeOneDistance()``.
        by: a function of a record giving its key, or a column index/name (``record[by]``).
        keys: the declared keys, distinct.

    Source: McSherry 2009 (PINQ, §4.4 "Partition": disjoint parts).

    Examples:
        >>> import dpcompose as dp
        >>> rows = dp.VectorDomain(dp.AtomDomain(tuple))
        >>> part = dp.t.make_partition(rows, dp.SymmetricDistance(), by=0, keys=["a", "b"])
        >>> part([("a", 1), ("b", 2), ("a", 3), ("z", 4), ()])  # () has no column 0: no part
        ([('a', 1), ('a', 3)], [('b', 2)])
        >>> part.map(1)
        1
    """
    check_dataset_metric(input_metric)
    refuse_table_domain(input_domain)
    if not isinstance(input_domain, VectorDomain):
        raise DomainMismatch(f"input_domain={input_domain!r} must be a VectorDomain of records")
    try:
        keys = tuple(keys)
    except TypeError:
        raise InvalidParameter(f"keys={keys!r} must be a sequence of keys") from None
    if len(keys) == 0:
        raise InvalidParameter(f"keys={list(keys)!r} must not be empty")
    if any(_unequal_to_itself(k) for k in keys):  # NaN: a record would match it only as the very same object
        raise InvalidParameter(
            f"keys={list(keys)!r}: a key that is not equal to itself (NaN) matches no record"
        )
    try:
        index = {k: i for i, k in enumerate(keys)}
    except TypeError as exc:
        raise InvalidParameter(f"keys={list(keys)!r} must be hashable") from exc
    if len(index) != len(keys):
        raise InvalidParameter(f"keys={list(keys)!r} must be distinct")
    if callable(by):
        key_of: Callable[[Any], Hashable] = by
    elif isinstance(by, (int, str)):
        column = by

        def key_of(record: Any) -> Hashable:
            return record[column]  # type: ignore[no-any-return]

    else:
        raise InvalidParameter(f"by={by!r} must be a function, a column index or a column name")
    part_domain = VectorDomain(input_domain.element_domain)
    factor = 2 if isinstance(input_metric, ChangeOneDistance) else 1

    def run(data: Any) -> tuple[list[Any], ...]:
        parts: list[list[Any]] = [[] for _ in keys]
        for record in data:
            try:
                i = index.get(key_of(record))
            except Exception:  # a record's own failure sends it to no part; nothing escapes
                i = None
            if i is not None:
                parts[i].append(record)
        return tuple(parts)

    return Transformation(
        input_domain,
        VectorDomain(part_domain, size=len(keys)),
        input_metric,
        PartitionDistance(),
        run,
        lambda d_in: factor * d_in,
        node=Node("partition", params=(("parts", str(len(keys))),), source="McSherry 2009 §4.4"),
    )


def _unequal_to_itself(key: object) -> bool:
    """Whether ``key != key`` (a NaN), counting a key whose comparison raises as one: a signaling NaN
    (``Decimal('sNaN')``) raises on comparison and on hashing (found by the bad-input fuzzer: it escaped as
    a raw ``decimal.InvalidOperation``)."""
    try:
        return bool(key != key)
    except Exception:
        return True
