"""Groupwise statistics: partition the records, apply one statistic per part, release one value per part.

The building block of subsample-and-aggregate (Nissim, Raskhodnikova, Smith 2007), median of means and
PATE-style voting (Papernot et al. 2017): the records are split into ``k`` disjoint parts by a declared key
or by a fixed hash of a column (a user identifier, so that one person's rows all land in one part), a
bounded statistic is computed on each part, and the vector of the ``k`` values is released with the
stability the partition gives: a neighbouring dataset changes only a few parts, each by at most the
statistic's range (or by the statistic's own stability, if smaller).
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import math
import operator
from collections.abc import Callable, Hashable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose._validation import check_positive_int
from dpcompose._validation import short_repr as _short
from dpcompose.accounting import exact, float_down, float_up
from dpcompose.accounting._exact import sqrt_up_q
from dpcompose.core import (
    AbsoluteDistance,
    AtomDomain,
    ChangeOneDistance,
    Domain,
    L1Distance,
    L2Distance,
    LInfDistance,
    Metric,
    Node,
    SymmetricDistance,
    Transformation,
    VectorDomain,
)
from dpcompose.core._metrics import SymmetricIdDistance, check_space
from dpcompose.core._recipe import recorded
from dpcompose.errors import DomainMismatch, InvalidParameter
from dpcompose.measurements._random import RandomSource, caller_or_secure_source
from dpcompose.transformations._clamp import check_dataset_metric
from dpcompose.transformations._contributions import OTHER_CLASS, column_class, row_encoding, safe_class
from dpcompose.transformations._stats import random_selection

__all__ = ["BUCKET_PERSON", "MAX_BUCKETS", "TABLE_LIMIT", "bucket_of", "make_groupwise", "worst_spread"]

BUCKET_PERSON = b"dpc.groupwise.v1"
"""The BLAKE2b personalisation of the bucket hash (public: it fixes the hash, it keeps nothing secret)."""

TABLE_LIMIT = 2**15
"""The most rows changed (``T`` below) for which the map tabulates the statistic's stability map; beyond
it the map uses the range bound, which is valid for every ``T`` (see :func:`make_groupwise`)."""

MAX_BUCKETS = 2**20
"""The most hashed buckets (the output holds one value per bucket)."""

_DP_LIMIT = 2**22
"""The most additions the dynamic programme of :func:`worst_spread` may spend (parts × T²)."""

_DP_BITS = 62
"""The dynamic programme adds int64 numpy vectors: every partial sum stays below 2**_DP_BITS."""

_INT64 = 2**63 - 1


def bucket_of(value_class: bytes, buckets: int) -> int:
    """The hashed bucket of a value, from its identity class (the bytes of
    :func:`~dpcompose.transformations._contributions.safe_class`): ``⌊h·k / 2**64⌋`` with ``h`` the first 8
    bytes, little-endian, of ``blake2b(value_class, digest_size=16, person=BUCKET_PERSON)``.

    Fixed and data-independent: a function of the value alone. Values that ``SymmetricIdDistance`` counts
    as one identifier (``1``, ``1.0``, ``numpy.int64(1)``) have one class, so one bucket.

    Examples:
        >>> from dpcompose.transformations._contributions import safe_class
        >>> bucket_of(safe_class(1), 4) == bucket_of(safe_class(1.0), 4)
        True
        >>> 0 <= bucket_of(safe_class("ann"), 3) < 3
        True
    """
    h = int.from_bytes(
        hashlib.blake2b(value_class, digest_size=16, person=BUCKET_PERSON).digest()[:8], "little"
    )
    return (h * buckets) >> 64


def worst_spread(g: Sequence[Fraction], parts: int) -> Fraction:
    """max of Σᵢ g(jᵢ) over at most ``parts`` parts with Σ jᵢ ≤ T (``T = len(g) - 1``, ``g[0] = 0``): the
    worst total change when T changed rows fall into ``parts`` parts that share the per-part bound g.

    * g convex on {0, …, T}: g(T) (all rows in one part): g(j) ≤ (j/T)·g(T), so Σ g(jᵢ) ≤ g(T).
    * g concave: the sum of the T largest positive marginals, spread level by level over the parts (every
      part has the same non-increasing marginals g(m) − g(m−1), so taking level m in up to ``parts`` parts
      before level m + 1 is a valid allocation and an exchange argument shows nothing beats it).
    * otherwise: a dynamic programme over min(parts, T) parts, O(min(parts, T)·T²) additions on int64
      vectors (:func:`_spread_programme`): exact when g over a common denominator fits, else on g rounded
      up to a multiple of 2**-s (never below the truth, above it by less than min(parts, T)²·max g·2**-60,
      at most 2**-44 of max g, as min(parts, T)³ ≤ 2**22); when the additions exceed 2**22, the valid
      bound min(parts, T)·max g.

    Examples:
        >>> from fractions import Fraction as F
        >>> worst_spread([F(0), F(1), F(1), F(1)], 2)  # capped: spreading is worst, but only 2 parts
        Fraction(2, 1)
        >>> worst_spread([F(0), F(1), F(4), F(9)], 3)  # convex: all in one part
        Fraction(9, 1)
        >>> worst_spread([F(0), F(2), F(2), F(5)], 2)  # neither: 5 (one part) beats 2 + 2
        Fraction(5, 1)
    """
    total = len(g) - 1
    if total <= 0 or parts <= 0:
        return Fraction(0)
    diffs = [g[j + 1] - 2 * g[j] + g[j - 1] for j in range(1, total)]
    if all(d >= 0 for d in diffs):
        return max(Fraction(0), g[total])
    if all(d <= 0 for d in diffs):
        acc, left = Fraction(0), total
        for m in range(1, total + 1):
            gain = g[m] - g[m - 1]
            if gain <= 0 or left == 0:
                break
            take = min(parts, left)
            acc += gain * take
            left -= take
        return acc
    used = min(parts, total)
    top = max(Fraction(0), *g)
    if used * total * total > _DP_LIMIT:
        return used * top
    if top == 0:
        return Fraction(0)
    return _spread_programme([max(Fraction(0), x) for x in g], used, top)


def _spread_programme(g: list[Fraction], used: int, top: Fraction) -> Fraction:
    """max Σ g(jᵢ) over ``used`` parts with Σ jᵢ ≤ T, for g ≥ 0 with maximum ``top`` > 0.

    g is scaled to integers G(j) = ⌈g(j)·D⌉: D the common denominator when ``used``·max G stays below
    2**62 (then G = g·D exactly and the answer is exact), else D = 2**s with 2**60 ≤ used·top·D < 2**61
    (then G/D ≥ g, so the answer, the maximum of sums of G over D, is at least the true maximum, and
    exceeds it by less than used/D < used²·top·2**-60). best[s], the most over the parts so far with at
    most s rows, is non-decreasing in s; one more part gives max(best[s], max_j best[s−j] + G(j)), one
    int64 vector maximum per j. Every entry is a sum of at most ``used`` values of G, so below 2**62.
    """
    total = len(g) - 1
    denominator = Fraction(math.lcm(*(v.denominator for v in g)))
    if used * math.ceil(top * denominator) >= 2**_DP_BITS:
        # D = 2**shift with x/2 ≤ D < x for x = 2**61/(used·top): used·⌈top·D⌉ < 2**61 + used < 2**62
        x = Fraction(2 ** (_DP_BITS - 1), used) / top
        shift = x.numerator.bit_length() - x.denominator.bit_length()  # ⌊log2 x⌋ or one more
        if Fraction(2) ** shift >= x:
            shift -= 1
        denominator = Fraction(2) ** shift
    scaled = np.array([math.ceil(v * denominator) for v in g], dtype=np.int64)
    best = np.zeros(total + 1, dtype=np.int64)
    for _ in range(used):
        step = best.copy()
        for j in range(1, total + 1):
            np.maximum(step[j:], best[: total + 1 - j] + scaled[j], out=step[j:])
        best = step
    return Fraction(int(best[total])) / denominator


class _Parts:
    """Which part a record belongs to: a variant per kind of partition (declared keys, hashed buckets)."""

    count: int
    label: tuple[str, str]

    def index(self, key_class: bytes) -> int | None:  # pragma: no cover - abstract
        raise NotImplementedError


class _KeyParts(_Parts):
    """Part i holds the records whose key has the class of ``keys[i]``; other keys go to no part."""

    def __init__(self, keys: object) -> None:
        if isinstance(keys, (str, bytes)) or not isinstance(keys, Sequence):
            raise InvalidParameter(f"keys={_short(keys)} must be a list or tuple of the declared keys")
        classes = [safe_class(k) for k in keys]
        if not classes:
            raise InvalidParameter("keys=[] must not be empty: declare at least one key")
        for i, (key, key_class) in enumerate(zip(keys, classes, strict=True)):
            if key_class == OTHER_CLASS:
                raise InvalidParameter(
                    f"keys[{i}]={_short(key)} is a {type(key).__name__}, which is not compared by value "
                    "(every value of such a type would be one key): declare keys of None, bool, int, "
                    "float, str, bytes, Fraction, Decimal, UUID or numpy scalars (or tuples, lists, sets, "
                    "dicts of them), and turn other keys into one of these in by "
                    "(e.g. by=lambda r: r[0].isoformat() for a date)"
                )
        self.lookup = {c: i for i, c in enumerate(classes)}
        if len(self.lookup) != len(classes):
            raise InvalidParameter(
                f"keys={_short(keys)} must be distinct (compared by value: 1 and 1.0 are one)"
            )
        self.count = len(classes)
        self.label = ("keys", str(self.count))

    def index(self, key_class: bytes) -> int | None:
        return self.lookup.get(key_class)


class _HashParts(_Parts):
    """Part i holds the records whose key hashes to bucket i (:func:`bucket_of`)."""

    def __init__(self, buckets: object) -> None:
        self.count = check_positive_int(buckets, "buckets")
        if self.count > MAX_BUCKETS:
            raise InvalidParameter(f"buckets={_short(buckets)} must be at most 2**20 (one value per bucket)")
        self.label = ("buckets", str(self.count))

    def index(self, key_class: bytes) -> int | None:
        return bucket_of(key_class, self.count)


def _parts(keys: object, buckets: object) -> _Parts:
    if (keys is None) == (buckets is None):
        raise InvalidParameter(
            "give exactly one of keys= (the declared keys, one part each) or buckets= (the number of "
            f"hashed buckets); got keys={_short(keys)}, buckets={_short(buckets)}"
        )
    return _KeyParts(keys) if keys is not None else _HashParts(buckets)


_PLAIN_KEYS = (int, str)
"""Key types whose identity class is a function of ``(type, value)`` as a dict compares them: a key of
exactly one of these types is routed once per distinct value and remembered for the rest of the run."""


class _Router:
    """Sends each record to its part (or none), by the identity class of its key. Never raises."""

    def __init__(self, by: object, input_metric: Metric, parts: _Parts) -> None:
        if isinstance(input_metric, SymmetricIdDistance) and (
            isinstance(by, bool) or not isinstance(by, (int, str)) or by != input_metric.id_key
        ):
            raise InvalidParameter(
                f"by={_short(by)} must be the identifier column {input_metric.id_key!r} of {input_metric!r}: "
                "only a partition by the identifier puts all of a person's rows in one part"
            )
        self.parts = parts
        if isinstance(by, (int, str)) and not isinstance(by, bool):
            self.column: int | str | None = by
            self.key_of: Callable[[Any], Any] | None = None
        elif callable(by):
            self.column, self.key_of = None, by
        else:
            raise InvalidParameter(
                f"by={_short(by)} must be a column index, a column name or a function of a record"
            )

    def _slow(self, record: Any) -> int | None:
        if self.column is not None:
            return self.parts.index(column_class(record, self.column))
        assert self.key_of is not None
        try:
            value = self.key_of(record)
        except Exception:  # a record's own failure sends it to no part; nothing escapes
            return None
        return self.parts.index(safe_class(value))

    def split(self, data: Any, k: int) -> list[list[Any]]:
        """The k parts of ``data``, each in input order. A key of a plain type (exactly ``int`` or
        ``str``) read from a plain record (exactly a tuple, list or dict, where ``record[column]`` is
        what :func:`column_class` reads) is routed once per distinct value; every other record by its
        class. Both give the same part. When every record is plain and every key of one plain type, the
        keys are read, made distinct and the records grouped a whole column at a time
        (:meth:`_split_columns`); otherwise record by record."""
        if self.column is not None and isinstance(data, (list, tuple)):
            grouped = self._split_columns(data, k)
            if grouped is not None:
                return grouped
        groups: list[list[Any]] = [[] for _ in range(k)]
        memo: dict[tuple[type, Any], int | None] = {}
        column, key_of = self.column, self.key_of
        for record in data:
            value: Any = None
            if key_of is not None:
                try:
                    value = key_of(record)
                except Exception:  # a record's own failure sends it to no part; nothing escapes
                    continue
            elif type(record) in (tuple, list, dict):
                try:
                    value = record[column]
                except Exception:  # no such column: the class "missing", by the slow path
                    value = None
            kind = type(value)
            if kind in _PLAIN_KEYS:
                key = (kind, value)
                if key in memo:
                    i = memo[key]
                else:
                    i = memo[key] = self.parts.index(safe_class(value))
            elif key_of is not None:
                i = self.parts.index(safe_class(value))
            else:
                i = self._slow(record)
            if i is not None:
                groups[i].append(record)
        return groups

    def _split_columns(self, records: Sequence[Any], k: int) -> list[list[Any]] | None:
        """:meth:`split` a column at a time, or None (the record-by-record path decides) unless every
        record is exactly a tuple, list or dict holding the column and every key is exactly an ``int`` or
        a ``str``. The distinct keys (a dict of them: for these types equal keys are equal classes) are
        routed as :meth:`split` routes them, one :func:`bucket_of` (or key lookup) each, each record gets
        its key's part in numpy, and a stable sort by part keeps each part's records in input order: the
        same parts as record by record."""
        n = len(records)
        if n == 0 or not set(map(type, records)) <= {tuple, list, dict}:
            return None
        try:
            keys = list(map(operator.itemgetter(self.column), records))
        except Exception:  # a record without the column: its class "missing", record by record
            return None
        if not set(map(type, keys)) <= {int, str}:
            return None
        distinct = {key: i for i, key in enumerate(dict.fromkeys(keys))}
        position = np.fromiter(map(distinct.__getitem__, keys), dtype=np.int64, count=n)
        index = self.parts.index
        routes = np.array(
            [-1 if (i := index(safe_class(key))) is None else i for key in distinct], dtype=np.int64
        )
        part = routes[position]
        order = np.argsort(part, kind="stable")  # records of no part (-1) first, then part by part
        ends = np.cumsum(np.bincount(part + 1, minlength=k + 1)).tolist()
        ordered = np.fromiter(records, dtype=object, count=n)[order]
        return [ordered[ends[i] : ends[i + 1]].tolist() for i in range(k)]


class _Range:
    """A part's value: one number or a vector of ``size`` numbers, each within [lo, hi] (outward to the
    carrier), and the clamp onto them."""

    def __init__(self, carrier: type, bounds: object, size: int | None = None) -> None:
        if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
            raise InvalidParameter(f"bounds={_short(bounds)} must be a pair (lo, hi)")
        lo, hi = exact(bounds[0], "bounds[0]"), exact(bounds[1], "bounds[1]")
        if lo > hi:
            raise InvalidParameter(f"bounds={_short(bounds)} must satisfy lo <= hi")
        self.carrier = carrier
        self.size = size
        if carrier is int:
            lo_i, hi_i = math.ceil(lo), math.floor(hi)
            if lo_i > hi_i or not (lo_i >= -_INT64 - 1 and hi_i <= _INT64):
                raise InvalidParameter(
                    f"bounds={_short(bounds)} must contain an integer and lie within int64 for integer parts"
                )
            self.lo: Any = lo_i
            self.hi: Any = hi_i
            self.width = Fraction(hi_i - lo_i)
        else:
            lo_f, hi_f = float_down(lo), float_up(hi)
            if math.isinf(lo_f) or math.isinf(hi_f):
                raise InvalidParameter(f"bounds={_short(bounds)} must lie within the float range")
            self.lo, self.hi = lo_f, hi_f
            self.width = Fraction(hi_f) - Fraction(lo_f)
        self.dtype = np.int64 if carrier is int else np.float64

    def clamp(self, value: Any) -> Any:
        """The value onto [lo, hi] (each coordinate of a vector); a value that is not a number (or NaN),
        and a vector of another shape, is ``lo`` (every coordinate). Never raises."""
        if self.size is not None:
            try:
                arr = np.asarray(value, dtype=self.dtype)
            except Exception:  # not numbers: the defined fallback
                arr = None
            if arr is None or arr.shape != (self.size,):
                return np.full(self.size, self.lo, dtype=self.dtype)
            if self.carrier is float:
                arr = np.where(np.isnan(arr), self.lo, arr)
            return np.clip(arr, self.lo, self.hi)
        try:
            v = int(value) if self.carrier is int else float(value)
        except Exception:  # not a number: the defined fallback
            return self.lo
        if v != v:
            return self.lo
        return min(max(v, self.lo), self.hi)

    def atom(self) -> AtomDomain:
        return AtomDomain(self.carrier, bounds=(self.lo, self.hi))


class _Statistic:
    """What is computed on a part: a library transformation (its map may bound a part's change) or a plain
    function (only the range bounds it)."""

    span: _Range
    trust_map: bool
    norm: type[Metric]  # the metric a part's change is measured in (the statistic's output metric)

    def value(self, part: list[Any]) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def stat_map(self, rows: int) -> Fraction:  # pragma: no cover - abstract
        raise NotImplementedError

    def part_range(self) -> Fraction:
        """The most a part's clamped value can move, in ``norm``: w = hi − lo for a number or in L∞,
        m·w in L1, √m·w (rounded up) in L2, for a vector of m coordinates each moving at most w. Tight:
        lo everywhere against hi everywhere."""
        m, w = self.span.size, self.span.width
        if m is None or self.norm is LInfDistance:
            return w
        if self.norm is L1Distance:
            return m * w
        return sqrt_up_q(m * w * w)


_VECTOR_NORMS = (L1Distance, L2Distance, LInfDistance)


class _TransformationStatistic(_Statistic):
    def __init__(self, statistic: Transformation[Any, Any, Any, Any], part_domain: Domain, bounds: object):
        if statistic.input_domain != part_domain:
            raise DomainMismatch(
                f"statistic's input_domain={statistic.input_domain!r} must be {part_domain!r}: a part holds "
                "records of the input, any number of them (resize inside the statistic if it needs a size)"
            )
        if not isinstance(statistic.input_metric, SymmetricDistance):
            raise DomainMismatch(
                f"statistic's input_metric={statistic.input_metric!r} must be SymmetricDistance(): a part "
                "gains and loses records"
            )
        out, out_metric = statistic.output_domain, statistic.output_metric
        size: int | None = None
        if isinstance(out, VectorDomain) and out.size is not None and isinstance(out_metric, _VECTOR_NORMS):
            size, out = out.size, out.element_domain
        elif not isinstance(out_metric, AbsoluteDistance):
            raise DomainMismatch(
                f"statistic's output_metric={out_metric!r} must be AbsoluteDistance() (a number per part) or "
                "L1Distance()/L2Distance()/LInfDistance() on a sized vector"
            )
        if not (isinstance(out, AtomDomain) and out.carrier in (int, float)):
            raise DomainMismatch(
                f"statistic's output_domain={statistic.output_domain!r} must be AtomDomain(int|float) or a "
                "sized VectorDomain of them: one number or one vector per part"
            )
        if bounds is None and out.bounds is None:
            raise DomainMismatch(
                f"statistic's output_domain={statistic.output_domain!r} has no bounds: pass bounds=(lo, hi), "
                "the range every part's value (each coordinate) is clamped to"
            )
        self.span = _Range(out.carrier, out.bounds if bounds is None else bounds, size)
        # an output domain that admits NaN has no stability for NaN outputs: the range alone bounds a part
        self.trust_map = not out.nan
        self.norm = type(out_metric)
        self.statistic = statistic

    def value(self, part: list[Any]) -> Any:
        return self.statistic.function(part)  # a part's records are in the domain: no check needed

    def stat_map(self, rows: int) -> Fraction:
        d: Fraction = self.statistic.output_metric.validate(self.statistic.map(rows), "statistic.map")
        return d


def canonical_order(records: list[Any], source: RandomSource) -> list[Any]:
    """The records sorted by their exact encoding (:func:`row_encoding`), each run of records with one
    encoding in uniformly random order (drawn from ``source``): a sequence whose distribution depends on
    the multiset of ``records`` only, not on their order.

    Proof. The encoding is a function of the record, so the runs, and the multiset of records in each,
    are functions of the multiset. Without ties the sequence is that function. With ties, a uniform
    permutation of the records (:func:`~dpcompose.transformations._stats.random_selection`) is sorted
    stably by encoding: the records of a run keep their relative order in the permutation, which is
    uniform whatever the input order, so the sequence is a uniformly random arrangement of each run's
    multiset, run after run, and the input order has no influence. (Records the encoding tells apart
    never tie; records it cannot, values of unknown types or nested too deep, are shuffled.)

    Examples:
        >>> from dpcompose.measurements._random import SeededSource
        >>> canonical_order([("b", 2), ("a", 1), ("b", 1)], SeededSource(0))
        [('a', 1), ('b', 1), ('b', 2)]
    """
    codes = [row_encoding(r)[0] for r in records]
    order = sorted(range(len(records)), key=codes.__getitem__)
    if any(codes[a] == codes[b] for a, b in itertools.pairwise(order)):
        shuffled = random_selection(len(records), len(records), source).tolist()
        order = sorted(shuffled, key=codes.__getitem__)  # stable: each run keeps the uniform order
    return [records[i] for i in order]


class _FunctionStatistic(_Statistic):
    """A plain function of a part's records, given a copy of them in a canonical order
    (:func:`canonical_order`), so that its value's distribution depends on the part's multiset of records
    only and it cannot change the caller's records."""

    def __init__(self, function: Callable[[list[Any]], Any], bounds: object, source: RandomSource) -> None:
        if bounds is None:
            raise InvalidParameter(
                "bounds=None: a statistic given as a function needs bounds=(lo, hi), the range every part's "
                "value is clamped to (ints for integer values, e.g. a vote)"
            )
        ints = isinstance(bounds, (tuple, list)) and all(
            isinstance(b, (int, np.integer)) and not isinstance(b, (bool, np.bool_)) for b in bounds
        )
        self.span = _Range(int if ints else float, bounds)
        self.trust_map = False
        self.norm = AbsoluteDistance
        self.function = function
        self.source = source

    def value(self, part: list[Any]) -> Any:
        return self.function(copy.deepcopy(canonical_order(part, self.source)))

    def stat_map(self, rows: int) -> Fraction:  # pragma: no cover - trust_map is False
        return self.span.width


def _output_metric(metric: object, plan: _Statistic) -> Metric:
    """The output metric: changed parts (default), or a norm — any of L∞/L1/L2 for numbers, the
    statistic's own norm for vectors (a part's change is known in that norm only)."""
    out: object = ChangeOneDistance() if metric is None else metric
    if isinstance(out, LInfDistance) and out.monotonic:
        raise InvalidParameter(
            "metric=LInfDistance(monotonic=True) does not hold: the parts' values can move in different "
            "directions; use LInfDistance()"
        )
    if plan.span.size is None:
        allowed: tuple[type[Metric], ...] = (ChangeOneDistance, *_VECTOR_NORMS)
        names = "ChangeOneDistance(), LInfDistance(), L1Distance() or L2Distance()"
    else:
        allowed = (ChangeOneDistance, plan.norm)
        names = f"ChangeOneDistance() or the statistic's own {plan.norm.__name__}()"
    if type(out) not in allowed:
        raise InvalidParameter(f"metric={_short(metric)} must be {names}")
    assert isinstance(out, Metric)
    return out


@recorded
def make_groupwise(
    input_domain: Domain,
    input_metric: Metric,
    statistic: Transformation[Any, Any, Any, Any] | Callable[[list[Any]], Any],
    by: int | str | Callable[[Any], Hashable],
    *,
    keys: Sequence[Hashable] | None = None,
    buckets: int | None = None,
    bounds: tuple[Any, Any] | None = None,
    metric: Metric | None = None,
    rng: np.random.Generator | RandomSource | None = None,
) -> Transformation[Any, Any, int, Any]:
    """Split the records into k disjoint parts and release ``statistic`` of each part: a vector of k values.

    The parts: with ``keys=[…]``, part i holds the records whose key (``record[by]``, or ``by(record)``)
    equals ``keys[i]`` (compared by value, under the rule of ``SymmetricIdDistance``: ``1``, ``1.0`` and
    ``numpy.int64(1)`` are one key, ``True`` is not ``1``); records with another key go to no part. A
    declared key must be of a type compared by value (a ``date``, a ``complex``, a user object or a
    ``str`` subclass is refused: all such values share one class). With ``buckets=k``, part i holds the
    records whose key hashes to i (:func:`bucket_of`: BLAKE2b of the key's identity class, fixed and
    data-independent, so the parts are a function of each record alone; a key column a record lacks is
    the key "missing", and all keys of types not compared by value are the key "other": each hashes like
    any other). A ``by`` function that raises sends its record to no part. ``by`` must be a deterministic
    function of the record alone (no state shared between records, no randomness): the proofs below need
    each record's part to be a function of that record; the library cannot check it. The number and order
    of the parts are public.

    The statistic is either a library ``Transformation`` (its stability map may bound a part's change
    below the range) or a plain function of a part's records (a teacher model, a vote): then only the
    range bounds a part's change. A function gets a deep copy of the part's records (it cannot change the
    caller's data; a record that cannot be copied makes its part's value ``lo``), sorted by their exact
    encoding (the one ``make_bound_contributions`` uses), with each run of records that encoding cannot
    tell apart (equal values; values of unknown types, such as dates or user objects; values nested too
    deep) in uniformly random order, drawn from ``rng``: so the distribution of what it sees depends on
    the part's multiset of records only, never on their order (:func:`canonical_order`). A function must
    depend on its argument alone (no state shared between calls).

    A transformation statistic may also return a vector of m numbers (a sized ``VectorDomain`` under
    ``L1Distance``, ``L2Distance`` or ``LInfDistance``: a histogram, a clipped vector sum): then each
    coordinate is clamped to ``bounds``, and a part's change is measured in the statistic's norm.

    Each part's value is the statistic of the part, clamped to ``bounds`` (default: the bounds of the
    statistic's output domain; a function needs them, and its values are ints when both bounds are ints,
    floats otherwise). An **empty part** is passed to the statistic like any other: its value is the
    statistic of ``[]``, clamped (``make_resize`` pads an empty part with its constant, so a resized mean
    gives that constant). A part on which a plain function raises or returns NaN or a non-number gets
    ``lo`` (only the range bounds a function's part). A Transformation statistic is run as it is: its own
    map bounds its part, which a ``lo`` in place of a failure would not respect, and a Transformation never
    raises on data in its domain (a part's records are in it). So the transformation never raises on data in
    its domain.

    Stability (proof). Let the parts' values be vᵢ = clamp(s(Pᵢ)), w = hi − lo (after rounding the bounds
    outward to the carrier), R the most a clamped value can move (w for a number; for a vector of m
    coordinates in the statistic's norm: w in L∞, m·w in L1, √m·w rounded up in L2 — lo everywhere against
    hi everywhere), and g(j) = min(s.map(j), R) for j ≥ 1, g(0) = 0: two parts whose records are j apart
    in ``SymmetricDistance`` have values at most g(j) apart, since clamping (coordinate by coordinate) is
    1-Lipschitz in every one of these norms and maps into a box of diameter R; min(s.map(j), R) is the
    largest norm in the intersection of that ball and the box, so it is tight given s.map and R. (A
    transformation statistic must take a part of any size under ``SymmetricDistance``; when its output
    domain admits NaN, and for a function, g(j) = R.)

    A function statistic makes the transformation randomized (the shuffle of tied records). The bounds
    below then hold for a coupling: a part whose multiset of records is the same in both datasets has
    the same distribution of values in both (:func:`canonical_order`), so its draws are coupled to be
    equal; the parts are shuffled independently, so the coupled outputs differ only in the changed parts,
    each by at most R, and are within the stated distance with probability 1. A measurement after it
    then keeps its guarantee: its output on each dataset is the mixture over the coupled pairs, and the
    divergences that define every measure here (hockey-stick, Rényi) are jointly convex or jointly
    quasi-convex, so the mixture is no further apart than the worst coupled pair (van Erven and
    Harremoës 2014, "Rényi divergence and Kullback–Leibler divergence", IEEE Trans. Inf. Theory, Thm 13;
    the coupling argument of OpenDP's ``make_resize``).

    * Row level. Adding or removing one record changes exactly one part by one record (the record's part
      is a function of the record alone), so datasets ``d_in`` apart in ``SymmetricDistance`` give parts
      whose distances jᵢ sum to at most T = d_in; one changed record removes a record from one part and
      adds one to another (or the same), so under ``ChangeOneDistance`` T = 2·d_in. At most min(T, k)
      parts change.
    * User level (``SymmetricIdDistance``, ``by`` its identifier column): a person's rows all have the
      identifier's class, so all lie in one part; ``d_in`` people changed touch at most min(d_in, k) parts.
      A person's rows are unbounded, so each touched part moves by at most R (g ≡ R).

    The output distance, by ``metric``:

    * ``ChangeOneDistance()`` (default; the number of changed parts, for median of means, votes and any
      consumer of a sized dataset of k values — or of k vectors): min(T, k) (user level: min(d_in, k));
      0 when w = 0.
    * ``LInfDistance()``: max over 1 ≤ j ≤ T of g(j) (user level: R).
    * ``L1Distance()``: the most Σ g(jᵢ) over allocations with Σ jᵢ ≤ T (:func:`worst_spread`; user level:
      min(d_in, k)·R).
    * ``L2Distance()``: the square root (rounded up to a rational) of the most Σ g(jᵢ)² over the same
      allocations (user level: √min(d_in, k)·R, rounded up).

    For numbers any of the four applies; for vectors, ``ChangeOneDistance()`` or the statistic's own norm
    (the k vectors are then concatenated, part by part, into one vector of k·m: its L1 distance is the
    sum of the parts', its squared L2 distance the sum of their squares, its L∞ distance their maximum).

    Each is attained by some allocation of the changed rows (given only s.map and R), so none is loose
    beyond those two facts. For T above ``TABLE_LIMIT`` rows the statistic's map is not tabulated and
    g ≡ R is used (valid for every T).

    Args:
        input_domain: a ``VectorDomain`` of records.
        input_metric: ``SymmetricDistance()``, ``ChangeOneDistance()`` or ``SymmetricIdDistance(id_key)``
            (then ``by`` must be ``id_key``).
        statistic: a library ``Transformation`` from ``VectorDomain(element)`` (the input's element
            domain, no size) under ``SymmetricDistance()`` to a number (``AtomDomain(int|float)``,
            ``AbsoluteDistance()``) or to a sized vector of numbers (``L1Distance()``, ``L2Distance()`` or
            ``LInfDistance()``), or a function of a part's records (a list) returning a number.
        by: the key's column (an index or a name) or a function of a record.
        keys: the declared keys, one part each (give this or ``buckets``).
        buckets: the number k of hashed buckets (give this or ``keys``).
        bounds: ``(lo, hi)``, the range of a part's value; needed when the statistic's output domain has
            none.
        metric: the output metric: ``ChangeOneDistance()`` (default), ``LInfDistance()``,
            ``L1Distance()`` or ``L2Distance()`` (for a vector statistic: the statistic's own).
        rng: the source of the shuffle of tied records for a function statistic: a numpy ``Generator`` or
            ``RandomSource`` for reproducible runs only (NOT private). Default (``None``): the operating
            system's secure source.

    Returns:
        A transformation onto ``VectorDomain(AtomDomain(carrier, bounds=(lo, hi)), size=k)`` (a numpy
        ``float64`` or ``int64`` array of the k part values, in part order). For a vector statistic of m
        coordinates: a (k, m) array in ``VectorDomain(VectorDomain(atom, size=m), size=k)`` under
        ``ChangeOneDistance``, else the k·m values concatenated.

    Raises:
        DomainMismatch: a domain or metric that does not fit (named), a statistic that does not take an
            unsized part under ``SymmetricDistance`` or does not return a number, no bounds.
        InvalidParameter: both or neither of ``keys``/``buckets``; keys empty, repeated or of a type not
            compared by value; ``buckets`` not a positive integer; ``by`` not a column or function (or not
            the identifier column at user level); bad ``bounds``; ``rng`` not a generator or random source.

    Source: sample and aggregate, Nissim, Raskhodnikova, Smith 2007 ("Smooth sensitivity and sampling in
    private data analysis", STOC: disjoint blocks, each record in one block, a robust aggregate of the
    blocks' outputs); disjoint parts as in McSherry 2009 (PINQ, §4.4); the bounds above are proven here.

    Examples:
        >>> import dpcompose as dp
        >>> rows = dp.VectorDomain(dp.AtomDomain(tuple))                   # (user, value)
        >>> value = dp.t.make_select_column(rows, dp.SymmetricDistance(), 1, dp.AtomDomain(int), 0)
        >>> total = value >> dp.t.make_clamp(value.output_domain, value.output_metric, (0, 10))
        >>> total = total >> dp.t.make_sum(total.output_domain, total.output_metric)
        >>> parts = dp.t.make_groupwise(rows, dp.SymmetricIdDistance(0), total, by=0, buckets=3,
        ...                             bounds=(0, 30), metric=dp.L1Distance())
        >>> parts([("ann", 4), ("bob", 20), ("ann", 9)]).tolist()   # ann's part, bob's (clamped to 10)
        [0, 13, 10]
        >>> parts.map(1), parts.map(5)                 # one person: one part, at most the range 30
        (Fraction(30, 1), Fraction(90, 1))
    """
    check_space(input_domain, input_metric, allow_identifiers=True)
    user_level = isinstance(input_metric, SymmetricIdDistance)
    if not user_level:
        check_dataset_metric(input_metric)
    assert isinstance(input_domain, VectorDomain)
    parts = _parts(keys, buckets)
    router = _Router(by, input_metric, parts)
    part_domain = VectorDomain(input_domain.element_domain)
    source = caller_or_secure_source(rng)
    plan: _Statistic
    if isinstance(statistic, Transformation):
        plan = _TransformationStatistic(statistic, part_domain, bounds)
    elif callable(statistic):
        plan = _FunctionStatistic(statistic, bounds, source)
    else:
        raise InvalidParameter(
            f"statistic={_short(statistic)} must be a Transformation or a function of a part's records"
        )
    span = plan.span
    out_metric = _output_metric(metric, plan)
    k = parts.count
    width = span.width
    factor = 2 if isinstance(input_metric, ChangeOneDistance) else 1
    dtype = span.dtype
    vector = span.size is not None
    flat = vector and not isinstance(out_metric, ChangeOneDistance)
    part_range = plan.part_range()

    def run(data: Any) -> Any:
        values = []
        for group in router.split(data, k):
            if plan.trust_map:  # a Transformation whose own map bounds the part: it never raises on its
                value = plan.value(group)  # domain, and a lo in place of a failure would not be within it
            else:
                try:
                    value = plan.value(group)
                except Exception:  # only the range bounds this part: its failure is the defined value lo
                    value = span.lo
            values.append(span.clamp(value))
        if vector:
            out = np.stack(values).astype(dtype, copy=False) if values else np.empty((0, 0), dtype=dtype)
            return out.reshape(-1) if flat else out
        return np.asarray(values, dtype=dtype)

    def per_part(total: int) -> list[Fraction] | None:
        """g(0), …, g(total), or None when g ≡ R is used (user level, a NaN domain, T too large)."""
        if user_level or not plan.trust_map or total > TABLE_LIMIT:
            return None
        return [Fraction(0), *(min(plan.stat_map(j), part_range) for j in range(1, total + 1))]

    def stability(d_in: int) -> Any:
        total = d_in if user_level else factor * d_in
        touched = min(total, k)
        if isinstance(out_metric, ChangeOneDistance):
            return 0 if width == 0 else touched
        g = per_part(total)
        if isinstance(out_metric, LInfDistance):
            if g is None:
                return part_range if touched else Fraction(0)
            return max(g)
        if isinstance(out_metric, L1Distance):
            return touched * part_range if g is None else worst_spread(g, k)
        if g is None:
            return sqrt_up_q(touched * part_range * part_range)
        return sqrt_up_q(worst_spread([x * x for x in g], k))

    if not vector:
        output_domain = VectorDomain(span.atom(), size=k)
    elif flat:
        output_domain = VectorDomain(span.atom(), size=k * (span.size or 0))
    else:
        output_domain = VectorDomain(VectorDomain(span.atom(), size=span.size), size=k)
    return Transformation(
        input_domain,
        output_domain,
        input_metric,
        out_metric,
        run,
        stability,
        node=_node(parts, span, out_metric, statistic, user_level, factor),
    )


def _node(
    parts: _Parts,
    span: _Range,
    out_metric: Metric,
    statistic: object,
    user_level: bool,
    factor: int,
) -> Node:
    """A transformation statistic at row level is a child, shown at the T = factor·d_in rows its map
    receives. Otherwise its map is not used (a part moves by at most the range): it is named in the
    parameters (a function by its name)."""
    params = (parts.label, ("bounds", f"({span.lo}, {span.hi})"), ("metric", repr(out_metric)))
    source = "Nissim–Raskhodnikova–Smith 2007 (sample and aggregate); bounds proven in make_groupwise"
    if user_level or not isinstance(statistic, Transformation):
        name = (
            statistic.node.label()
            if isinstance(statistic, Transformation)
            else str(getattr(statistic, "__name__", type(statistic).__name__))
        )
        return Node("groupwise", params=(*params, ("per_part", "range"), ("statistic", name)), source=source)
    return Node(
        "groupwise",
        params=params,
        source=source,
        children=(statistic,),
        child_inputs=lambda d_in: (factor * d_in,),
    )
