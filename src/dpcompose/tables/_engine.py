"""The backend interface every table engine implements, and the choice of engine from the data's type.

Everything else in :mod:`dpcompose.tables` is engine-neutral: it validates the query against the schema,
computes the privacy map, and adds exact integer noise on the driver to the exact integer aggregates an
engine returns. An engine only has to compute those aggregates, with these primitives:

* ``schema(data)``: column name -> ``"int" | "float" | "str" | "bool"`` (or another name for any other
  type), from metadata only;
* ``aggregate(data, plan)``: run the plan — select, filter, keep known keys, cap groups per identifier,
  cap rows per identifier (the hash of :mod:`dpcompose.tables._hash`), clamp with the NaN/null policy,
  convert to the fixed-point grid, group and aggregate — and collect the exact counts and integer sums
  per key to numpy int64 arrays, as :class:`Aggregates`: aligned with the plan's keys when they are
  known, or, for unknown keys (``plan.keys is None``), for every key present after the caps, in the order
  of :func:`key_order` (by value), so the result does not depend on the engine or the partitioning.

The plan (:class:`Plan`) is plain data, so a second engine (Spark, :mod:`dpcompose.tables._spark`)
implements the same steps and is tested to return bit-identical arrays.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

__all__ = [
    "Aggregates",
    "BelowSpec",
    "Engine",
    "Plan",
    "SumSpec",
    "collect_keys",
    "collect_rows",
    "engine_for",
    "key_order",
    "scalings",
]


@dataclass(frozen=True)
class SumSpec:
    """One exact integer sum: column ``column`` with nulls/NaN read as ``fill``, clamped to ``[lo, hi]``,
    then on the grid ``2**k`` (``round_half_even(x·2**-k)``; for int columns with ``k > 0`` the same
    rounding in integer arithmetic). With ``square``, the summed value is ``⌊g²/2**shift⌋`` of that grid
    value ``g`` (|g| ≤ M ≤ 2**31 with M the grid bound and shift = max(0, 2·bitlen(M) − 31), so g² fits
    int64 and the result lies in [0, 2**31]): the sum of squares of a variance, on the grid
    ``2**(2k + shift)``, computed in integer arithmetic by every engine. (A fixed shift of 31 would floor
    the squares of small ints, say ages, to 0.)"""

    column: str
    kind: str  # "int" or "float"
    lo: int | float
    hi: int | float
    fill: int | float
    k: int
    square: bool = False
    shift: int = 0  # squares only: see above

    @property
    def key(self) -> str:
        """The name of this sum among a query's released vectors."""
        return f"{self.column}^2" if self.square else self.column


@dataclass(frozen=True)
class BelowSpec:
    """One count of rows whose value is below ``value`` (``strict``: ``<``; else ``<=``): column ``column``
    with nulls/NaN read as ``fill``, clamped to ``[lo, hi]``, compared exactly (IEEE doubles for float
    columns, int64 for int columns) — the ``#{x < c}`` and ``#{x <= c}`` of a quantile's scores."""

    column: str
    kind: str  # "int" or "float"
    lo: int | float
    hi: int | float
    fill: int | float
    value: int | float
    strict: bool


@dataclass(frozen=True)
class Plan:
    """What an engine computes, engine-neutrally.

    Attributes:
        columns: the declared columns the query reads, in schema order (row keys hash them in this order).
        predicate: a filter expression tree (:mod:`dpcompose.tables._expr`) or None.
        by: the group-by columns (empty: one total).
        keys: the known keys, each a tuple of values (one per ``by`` column); ``((),)`` when ``by`` is empty;
            None for unknown keys: every key present in the filtered, capped data (with ``by`` empty,
            None means the one total ``()``, as ``((),)`` does).
        id: the identifier column, or None for row-level privacy.
        max_rows: rows kept per identifier (None: no cap).
        max_groups: groups kept per identifier (None: no cap).
        sums: the integer sums to compute.
        distinct: the int/str/bool columns whose number of distinct non-null values per key to count.
        below: the threshold counts to compute (a quantile's scores).
        derived: float columns ``(name, expression)`` computed from ``columns`` row by row before the
            filter (``with_column``); they are not part of the cap hash (they are functions of the row).
    """

    columns: tuple[str, ...]
    predicate: Any
    by: tuple[str, ...]
    keys: tuple[tuple[Any, ...], ...] | None
    id: str | None
    max_rows: int | None
    max_groups: int | None
    sums: tuple[SumSpec, ...]
    distinct: tuple[str, ...] = ()
    below: tuple[BelowSpec, ...] = ()
    derived: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True, eq=False)
class Aggregates:
    """What an engine returns for a :class:`Plan`: the keys, and per key the exact row count and the
    exact integer sum of each ``plan.sums`` entry (int64 arrays aligned with ``keys``).

    ``keys`` is ``plan.keys`` when the plan lists them (a listed key absent from the data has count 0), or
    for unknown keys the keys present after the filter and the caps, sorted by :func:`key_order`.
    """

    keys: tuple[tuple[Any, ...], ...]
    counts: npt.NDArray[np.int64]
    sums: list[npt.NDArray[np.int64]]
    distincts: list[npt.NDArray[np.int64]] = field(default_factory=list)  # one per ``plan.distinct``
    belows: list[npt.NDArray[np.int64]] = field(default_factory=list)  # one per ``plan.below``


def key_order(key: tuple[Any, ...]) -> tuple[Any, ...]:
    """The sort key of a group key: by value, column by column, nulls last (group-by columns are int,
    str or bool; strings compare by code point, the order of their UTF-8 bytes).

    Examples:
        >>> sorted([("b", 2), (None, 1), ("a", None), ("a", 1)], key=key_order)
        [('a', 1), ('a', None), ('b', 2), (None, 1)]
    """
    return tuple((v is None, 0 if v is None else v) for v in key)


def collect_rows(rows: Iterable[Sequence[Any]], plan: Plan) -> Aggregates:
    """:class:`Aggregates` from an engine's result rows, each: the ``by`` values, the row count, then per
    sum the totals of its two 16-bit halves (of ``value + 2**31``), then the distinct and threshold counts —
    the aggregation order every engine uses. The halves are recombined exactly; a row with count 0 (the
    total of an empty frame) is skipped."""
    nb, n_sums = len(plan.by), len(plan.sums)
    found: dict[tuple[Any, ...], tuple[int, list[int]]] = {}
    for row in rows:
        n = int(row[nb])
        if n == 0:
            continue
        parts = [int(v) for v in row[nb + 1 :]]
        sums = [parts[2 * i] * 65536 + parts[2 * i + 1] - n * (1 << 31) for i in range(n_sums)]
        found[tuple(row[:nb])] = (n, sums + parts[2 * n_sums :])
    return collect_keys(found, plan)


def collect_keys(
    found: dict[tuple[Any, ...], tuple[int, list[int]]], plan: Plan
) -> Aggregates:
    """:class:`Aggregates` from an engine's collected groups ``key -> (count, [value, ...])`` (the
    ``plan.sums``, then the ``plan.distinct``, then the ``plan.below`` values): aligned with ``plan.keys``
    (zeros for absent keys) or, for unknown keys, sorted by :func:`key_order`."""
    if not plan.by:
        keys: tuple[tuple[Any, ...], ...] = ((),)
    elif plan.keys is None:
        keys = tuple(sorted(found, key=key_order))
    else:
        keys = plan.keys
    n_sums, n_dist = len(plan.sums), len(plan.distinct)
    empty = (0, [0] * (n_sums + n_dist + len(plan.below)))
    rows = [found.get(k, empty) for k in keys]
    counts = np.array([r[0] for r in rows], dtype=np.int64)
    columns = [np.array([r[1][i] for r in rows], dtype=np.int64) for i in range(len(empty[1]))]
    return Aggregates(
        keys, counts, columns[:n_sums], columns[n_sums : n_sums + n_dist], columns[n_sums + n_dist :]
    )


class Engine(Protocol):
    """A table engine: schema from metadata, and exact integer aggregates for a :class:`Plan`."""

    name: str

    def schema(self, data: Any) -> Mapping[str, str]:
        """Column name -> kind (``"int"``, ``"float"``, ``"str"``, ``"bool"``, or another type name)."""
        ...

    def aggregate(self, data: Any, plan: Plan) -> Aggregates:
        """The keys, the exact count per key and the exact integer sum per key for each ``plan.sums``
        entry."""
        ...


def engine_for(data: object) -> Engine | None:
    """The engine for ``data``, chosen from its type (Polars DataFrame/LazyFrame, pandas DataFrame, Spark
    DataFrame), or None. Engine modules are imported only when data of their type is seen.

    Examples:
        >>> engine_for([1, 2]) is None
        True
    """
    module = type(data).__module__.split(".")[0]
    if module in ("polars", "pandas"):
        from dpcompose.tables._polars import PolarsEngine, is_polars_data

        if is_polars_data(data):
            return PolarsEngine()
    if module == "pyspark":
        from dpcompose.tables._spark import SparkEngine, is_spark_data

        if is_spark_data(data):
            return SparkEngine()
    return None


def scalings(k: int) -> list[float]:
    """The grid scaling of a :class:`SumSpec`, shared by the engines: powers of two whose product is
    ``2**-k``, each a finite float (``2**1104`` is not: tiny bounds give ``k`` down to ``-1104``); scaling
    by them in turn is exact, as the result stays within ``2**31``.

    Examples:
        >>> scalings(0), scalings(3), len(scalings(-1104))
        ([], [0.125], 2)
    """
    if k == 0:
        return []
    if abs(k) <= 1000:
        return [math.ldexp(1.0, -k)]
    half = -k // 2
    return [math.ldexp(1.0, half), math.ldexp(1.0, -k - half)]
