"""The backend interface every table engine implements (:mod:`dpcompose.tables._engines` chooses one).

Everything else in :mod:`dpcompose.tables` is engine-neutral: it validates the query against the schema,
computes the privacy map, and adds exact integer noise on the driver to the exact integer aggregates an
engine returns. An engine only has to compute those aggregates, with these primitives:

* ``schema(data)``: column name -> ``"int" | "float" | "str" | "bool"`` (or another name for any other
  type), from metadata only;
* ``aggregate(data, plan)``: run the plan — select, filter, keep known keys, cap groups per identifier,
  cap rows per identifier (the hash of :mod:`dpcompose.transformations._hash`), clamp with the NaN/null
  policy, convert to the fixed-point grid, group and aggregate — and collect the exact counts and integer sums
  per key to numpy int64 arrays, as :class:`Aggregates`: aligned with the plan's keys when they are
  known, or, for unknown keys (``plan.keys is None``), for every key present after the caps, in the order
  of :func:`key_order` (by value), so the result does not depend on the engine or the partitioning.

* ``probe(data)``: a check, built from the data's engine handle (a Spark session) and never reading its
  rows, that the engine can run a job; :func:`~dpcompose.tables._engines.engine_check` runs it before every
  charge.

The plan (:class:`Plan`) is plain data, so a second engine (Spark, :mod:`dpcompose.tables._spark`)
implements the same steps and is tested to return bit-identical arrays. :func:`run_job` runs a charged
job: whatever fails in it is reported without the engine's message.
"""

from __future__ import annotations

import builtins
import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from dpcompose.errors import DomainMismatch

__all__ = [
    "Aggregates",
    "BelowSpec",
    "Engine",
    "Plan",
    "SumSpec",
    "collect_columns",
    "collect_rows",
    "combine_halves",
    "key_order",
    "run_job",
    "scalings",
    "sum_key",
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
    def key(self) -> tuple[str, str, bool]:
        """This sum's key among a query's released vectors (:func:`sum_key`)."""
        return sum_key(self.column, self.square)


def sum_key(column: str, square: bool = False) -> tuple[str, str, bool]:
    """The key of the sum (or sum of squares) of ``column`` among a query's released vectors:
    ``("sum", column, square)``. A tuple, so that no column name (a schema's or a derived one: any string)
    can equal another vector's key."""
    return ("sum", column, square)


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
        predicate: a filter expression tree (:mod:`dpcompose.transformations._expr`) or None.
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

    @property
    def group_pair(self) -> tuple[str, ...]:
        """The columns of an (identifier, group) pair for the ``max_groups`` cap: the identifier, then the
        ``by`` columns other than it (a ``by`` column that is the identifier is part of the pair once)."""
        assert self.id is not None
        return (self.id, *[c for c in self.by if c != self.id])


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


_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def combine_halves(
    counts: npt.NDArray[np.int64], hi: npt.NDArray[np.int64], lo: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """The exact sums ``Σv`` from an engine's totals of the two 16-bit halves of ``u = v + 2**31`` (``hi`` of
    ``u // 2**16``, ``lo`` of ``u % 2**16``) and the counts ``n``: ``Σv = (Σhi − n·2**15)·2**16 + Σlo``.

    Exact in int64 whenever every count is below ``2**32`` (a Polars frame holds fewer rows, and so does any
    group of one): each summed value has ``|v| <= 2**31``, so ``u`` is in ``[0, 2**32]``, its ``hi`` in
    ``[0, 2**16]`` and ``(hi − 2**15)·2**16`` in ``[−2**31, 2**31]``. Summed over ``n`` rows, ``n·2**15``,
    ``|Σhi − n·2**15| <= n·2**15``, ``|(Σhi − n·2**15)·2**16| <= n·2**31`` and the result ``|Σv| <= n·2**31``
    are all at most ``(2**32 − 1)·2**31 < 2**63``. A larger count (only an engine with more than ``2**32``
    rows in one group can report one) is recombined in Python integers and saturated to the int64 range
    (clamping is 1-Lipschitz, so a sum's sensitivity is unchanged, and the noise mechanisms saturate the
    same way): a query never raises on data in its domain, even after its charge.

    Examples:
        >>> n = np.array([2], dtype=np.int64)  # the values 2**31 and -2**31: u = 2**32 and 0
        >>> combine_halves(n, np.array([2**16], dtype=np.int64), np.array([0], dtype=np.int64)).tolist()
        [0]
    """
    if counts.size and int(counts.max()) >= 1 << 32:
        exact = [
            min(max((h - c * (1 << 15)) * 65536 + low, _INT64_MIN), _INT64_MAX)
            for c, h, low in zip(counts.tolist(), hi.tolist(), lo.tolist(), strict=True)
        ]
        return np.array(exact, dtype=np.int64)
    out: npt.NDArray[np.int64] = (hi - counts * (1 << 15)) * 65536 + lo
    return out


def collect_columns(
    keys: tuple[tuple[Any, ...], ...],
    counts: npt.NDArray[np.int64],
    parts: list[npt.NDArray[np.int64]],
    plan: Plan,
) -> Aggregates:
    """:class:`Aggregates` from an engine's result already in final order, as columns: ``keys`` (the
    aligned or sorted keys), the counts, then per sum the totals of its two 16-bit halves, then the distinct
    and threshold counts — int64 arrays aligned with ``keys``. A key with count 0 (absent, or the total of
    an empty frame) gets zeros everywhere."""
    n_sums, n_dist = len(plan.sums), len(plan.distinct)
    empty = counts == 0
    values = [combine_halves(counts, parts[2 * i], parts[2 * i + 1]) for i in range(n_sums)]
    values += parts[2 * n_sums :]
    if empty.any():
        values = [np.where(empty, 0, v).astype(np.int64) for v in values]
    return Aggregates(
        keys, counts, values[:n_sums], values[n_sums : n_sums + n_dist], values[n_sums + n_dist :]
    )


def _key_order_indices(columns: Sequence[Sequence[Any]]) -> npt.NDArray[np.intp]:
    """The indices that sort the keys ``zip(*columns)`` by :func:`key_order`: each column's values replaced
    by their rank among the column's distinct non-null values (null ranked last), then a stable lexicographic
    sort of the ranks — the same order as ``sorted(keys, key=key_order)``, without a Python key per row."""
    ranks = []
    for column in columns:
        distinct = sorted({v for v in column if v is not None})
        rank: dict[Any, int] = {v: i for i, v in enumerate(distinct)}
        rank[None] = len(distinct)
        ranks.append(np.array([rank[v] for v in column], dtype=np.int64))
    out: npt.NDArray[np.intp] = np.lexsort(ranks[::-1]).astype(np.intp)  # the last array is the primary key
    return out


def collect_rows(rows: Iterable[Sequence[Any]], plan: Plan) -> Aggregates:
    """:class:`Aggregates` from an engine's result rows, each: the ``by`` values, the row count, then per
    sum the totals of its two 16-bit halves (of ``value + 2**31``), then the distinct and threshold counts —
    the aggregation order every engine uses. A row with count 0 (the total of an empty frame, whose sums an
    engine may report as null) is skipped; the rows are transposed once and handled as columns
    (:func:`collect_columns`): aligned with ``plan.keys`` (zeros for absent keys) or, for unknown keys,
    sorted by :func:`key_order`."""
    nb = len(plan.by)
    width = nb + 1 + 2 * len(plan.sums) + len(plan.distinct) + len(plan.below)
    columns: list[tuple[Any, ...]] = list(zip(*rows, strict=True)) or [()] * width
    counts = np.array(columns[nb], dtype=np.int64)
    if not counts.all():  # before the other columns are read: an empty total's sums may be null
        present = counts != 0
        columns = [tuple(itertools.compress(c, present.tolist())) for c in columns]
        counts = counts[present]
    found = list(zip(*columns[:nb], strict=True)) if nb else [()] * len(counts)
    parts = [np.array(c, dtype=np.int64) for c in columns[nb + 1 :]]
    if not plan.by:
        keys: tuple[tuple[Any, ...], ...] = ((),)
        take = np.zeros(1, dtype=np.intp) if found else np.full(1, -1, dtype=np.intp)
    elif plan.keys is None:
        take = _key_order_indices(columns[:nb])
        keys = tuple(found[i] for i in take.tolist())
    else:
        keys = plan.keys
        index = {k: i for i, k in enumerate(found)}
        take = np.array([index.get(k, -1) for k in keys], dtype=np.intp)

    def gather(v: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        out: npt.NDArray[np.int64] = np.append(v, np.int64(0))[take]  # -1 (absent) reads the appended 0
        return out

    return collect_columns(keys, gather(counts), [gather(p) for p in parts], plan)


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

    def probe(self, data: Any) -> Callable[[], str | None]:
        """A liveness probe for the engine ``data`` runs on: a call returns None when the engine can run a
        job, else why it cannot. The probe holds the engine's handle (a Spark session), not ``data``, and
        reads only the engine's state: no job, no row, so its answer and its time depend on no data."""
        ...


#: What a failed charged job says: never the engine's own message (it may quote private values).
JOB_FAILED = (
    "the engine job failed while the query read the data (the query was charged): the data's own lazy plan "
    "failed (a strict cast, a raising UDF), or the engine stopped during the job. The error is not shown, "
    "as it may quote private values. A lazy frame must evaluate on all of its rows: collect it once to "
    "check, or make its casts non-strict"
)


def run_job(engine: Engine, data: Any, plan: Plan) -> Aggregates:
    """``engine.aggregate(data, plan)`` for a query that has been charged, reporting no failure's text.

    The domain check read the data's schema, not its rows, so only the data's own lazy plan (or the engine
    stopping mid-job) can fail here, and its message may quote private values: an ``Exception`` becomes a
    :class:`~dpcompose.DomainMismatch` with the fixed text :data:`JOB_FAILED`; any other ``BaseException``
    (``KeyboardInterrupt``, ``SystemExit``, Polars' ``PanicException``, an exception group) is raised
    again as a new exception of the same type whose only argument is that text (:func:`rebuilt`; a
    group's members are rebuilt the same way). Either is raised after the handler has ended, so the
    original is neither its ``__cause__`` nor its ``__context__``.
    """
    failure: BaseException | None = None
    shape: Shape | None = None
    try:
        return engine.aggregate(data, plan)
    except Exception:
        failure = DomainMismatch(JOB_FAILED)
    except BaseException as exc:
        shape = exception_shape(exc)  # its type (and its members' types): nothing else is kept
    if failure is None:
        assert shape is not None
        failure = rebuilt(shape)
    raise failure


#: An exception's type, and for an exception group its members' shapes.
Shape = tuple[type[BaseException], "tuple[Shape, ...] | None"]

_GROUP: type[BaseException] | None = getattr(builtins, "BaseExceptionGroup", None)  # Python ≥ 3.11
_MAX_DEPTH = 8  # groups nested deeper are rebuilt as their nearest built-in type


def exception_shape(exc: BaseException, depth: int = 0) -> Shape:
    """The type of ``exc`` and, for an exception group, the shapes of its members: no argument, note,
    traceback, cause or context, so no text the exception carried."""
    members = getattr(exc, "exceptions", None)
    if _GROUP is not None and isinstance(exc, _GROUP) and isinstance(members, tuple) and depth < _MAX_DEPTH:
        return type(exc), tuple(exception_shape(e, depth + 1) for e in members)
    return type(exc), None


def rebuilt(shape: Shape) -> BaseException:
    """A new exception of the shape's type whose only argument is :data:`JOB_FAILED` (a group: with members
    rebuilt the same way). If the type's constructor refuses, one made by ``BaseException.__new__`` and
    initialised by its nearest built-in base (so a ``SystemExit`` still exits with a failure status); if
    that fails too, an exception of the nearest built-in type that accepts the text. Never the original.

    Examples:
        >>> err = rebuilt((KeyboardInterrupt, None))
        >>> type(err).__name__, err.args == (JOB_FAILED,)
        ('KeyboardInterrupt', True)
    """
    cls, members = shape
    if members is not None and _GROUP is not None:
        inner = [rebuilt(m) for m in members]
        for make in (cls, _GROUP):
            try:
                out: object = make(JOB_FAILED, inner)
            except Exception:
                continue
            if isinstance(out, BaseException):
                return out
    try:
        out = cls(JOB_FAILED)
        if type(out) is cls:
            assert isinstance(out, BaseException)
            out.args = (JOB_FAILED,)
            return out
    except Exception:
        pass
    builtin = [c for c in cls.__mro__ if c.__module__ == "builtins" and issubclass(c, BaseException)]
    init = next(vars(c)["__init__"] for c in builtin if "__init__" in vars(c))
    try:
        made = BaseException.__new__(cls)
        init(made, JOB_FAILED)
        return made
    except Exception:
        pass
    for base in builtin:
        try:
            return base(JOB_FAILED)
        except Exception:
            continue
    return BaseException(JOB_FAILED)


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
