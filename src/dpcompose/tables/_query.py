"""The table Context and its query builder: every query is a Measurement whose map is known before any
engine job runs.

A query ``ctx.query().filter(...).group_by(..., keys=[...]).agg(count(), sum(c), mean(c))`` becomes:

1. an engine job (:mod:`dpcompose.tables._engine`) computing *exact integer* aggregates: the filter, the
   known keys, the per-identifier caps (``max_groups`` groups, then ``max_rows`` rows, chosen by the
   specified hash), the NaN/null policy and clamp, the fixed-point grid ``2**k``, and per key the row
   count and the integer sums;
2. exact discrete noise on the driver, by the catalogue's ``make_discrete_laplace`` (PureDP and ApproxDP
   contexts) or ``make_discrete_gaussian`` (zCDP contexts) on the int64 vectors;
3. scaling back (sums times ``2**k``) and ``mean = noisy sum / max(noisy count, 1)`` — post-processing.

Privacy map (stability of the steps, then the noise): neighbours differ in the rows of ``d`` identifiers
(or in ``d`` rows at row level, where ``R = 1``). The filter and the key restriction act row by row and
the caps act per identifier on that identifier's rows alone, so after them the tables differ in at most
``d·R`` rows (``R = max_rows``). One row changes the count vector by 1 in one key and a sum vector by at
most ``M = max(|lo_g|, |hi_g|)`` grid units in one key, so the L1 and the L2 sensitivities are ``d·R`` and
``d·R·M``. The released vectors compose by the measure's own rule (sum of ε, sum of ρ).
Source: McSherry 2009 (stable transformations); Dwork–Roth 2014 Thm 3.16 / Bun–Steinke 2016 Lemma 2.3
(composition); the noise measurements cite theirs.

``group_by(..., keys=None)`` selects unknown keys privately (partition selection with the discrete
Laplace threshold of ``make_laplace_threshold``). ``variance`` adds a vector of squares, ``count_distinct``
a count-like vector, and ``quantile`` a report-noisy-min per key (their maps are in their docstrings). A
person-level unit is measured by ``dp.SymmetricIdDistance(id_column)``, the catalogue's identifier metric.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose.accounting._exact import sqrt_down, sqrt_up_q
from dpcompose.accuracy import discrete_laplace_scale_to_accuracy
from dpcompose.combinators import make_privacy_filter
from dpcompose.core import (
    ZCDP,
    ApproxDP,
    AtomDomain,
    L01InfDistance,
    L1Distance,
    L2Distance,
    LInfDistance,
    MapDomain,
    Measure,
    Measurement,
    Metric,
    Node,
    PureDP,
    SymmetricDistance,
    SymmetricIdDistance,
    VectorDomain,
)
from dpcompose.core._metrics import validate_count
from dpcompose.errors import DomainMismatch, InvalidParameter
from dpcompose.measurements import (
    make_discrete_gaussian,
    make_discrete_laplace,
    make_laplace_threshold,
    make_report_noisy_max,
    partition_threshold,
)
from dpcompose.tables import _expr
from dpcompose.tables._engine import BelowSpec, Plan, SumSpec, run_job, sum_key
from dpcompose.tables._engines import engine_check, engine_for
from dpcompose.tables._schema import Column, FrameDomain, check_column_name
from dpcompose.tables._shares import BudgetShares
from dpcompose.transformations._quantile import QuantileAlpha, quantile_candidates

__all__ = [
    "Agg",
    "Context",
    "PrivacyUnit",
    "Query",
    "TableQuery",
    "count",
    "count_distinct",
    "mean",
    "quantile",
    "sum",
    "unit_of",
    "variance",
]

_INTS = VectorDomain(AtomDomain(int))
_COUNT: tuple[Any, ...] = ("count",)  # the row count's key among the released vectors (see _Released.what)
_KEYS_DOMAIN = MapDomain(AtomDomain(str), AtomDomain(int))  # the threshold's map does not read keys
_MAX_SHARES = 2**20  # queries per Context


def _check_selection_budget(measure: Measure[Any], budget: Any) -> None:
    """Unknown keys need a δ: refuse other budgets before anything is built or spent."""
    if not isinstance(measure, ApproxDP) or budget[1] <= 0:
        raise InvalidParameter(
            "group_by(..., keys=None) selects the keys privately (partition selection), which needs a δ: "
            "use Context(..., measure=dp.ApproxDP(), privacy_loss=(ε, δ)) with δ > 0, or pass keys=[...]"
        )


# --- privacy unit -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PrivacyUnit:
    """Who is protected: all rows of one identifier, with the caps the engine enforces."""

    id: str
    max_rows: int
    max_groups: int | None = None


def _positive_int(v: object, name: str) -> int:
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, bool) or not isinstance(v, int) or v < 1 or v >= 1 << 31:
        raise InvalidParameter(f"{name}={v!r} must be an integer in [1, 2**31)")
    return v


def unit_of(id: str, max_rows: int, max_groups: int | None = None) -> PrivacyUnit:
    """The unit of privacy "all rows of one identifier": neighbouring tables differ in every row of one
    value of column ``id``.

    Args:
        id: the identifier column (declared in the schema).
        max_rows: rows kept per identifier (the rows with the smallest specified hash keys).
        max_groups: groups kept per identifier in a group-by (by hash of identifier and group). With
            known keys it does not lower the noise (``max_rows`` alone bounds it); with unknown keys it is
            the ``l0`` bound of partition selection.

    Raises:
        InvalidParameter: ``id`` not a non-empty str, caps not integers in [1, 2**31).

    Examples:
        >>> unit_of(id="user_id", max_rows=5)
        PrivacyUnit(id='user_id', max_rows=5, max_groups=None)
    """
    if not isinstance(id, str) or not id:
        raise InvalidParameter(f"id={id!r} must be a non-empty column name")
    return PrivacyUnit(
        id,
        _positive_int(max_rows, "max_rows"),
        None if max_groups is None else _positive_int(max_groups, "max_groups"),
    )


# --- aggregates -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Agg:
    """An aggregate of a query: ``count``, or ``sum``, ``mean``, ``variance``, ``quantile``,
    ``count_distinct`` of a column (with optional own bounds). Build one with the functions of the same
    names."""

    op: str
    column: str | None = None
    bounds: tuple[Any, Any] | None = None
    alpha: Fraction | None = None  # quantile only
    candidates: tuple[Any, ...] = ()  # quantile only

    @property
    def name(self) -> str:
        """The output column's name."""
        if self.op == "quantile":
            return f"{self.column}_quantile_{float(self.alpha or 0):g}"
        return "count" if self.op == "count" else f"{self.column}_{self.op}"


def count() -> Agg:
    """The number of rows per key (after the filter and the caps).

    Examples:
        >>> count().name
        'count'
    """
    return Agg("count")


def _col_agg(op: str, column: object, bounds: object) -> Agg:
    if not isinstance(column, str) or not column:
        raise InvalidParameter(f"column={column!r} must be a non-empty column name")
    if bounds is not None and (not isinstance(bounds, (tuple, list)) or len(bounds) != 2):
        raise InvalidParameter(f"bounds={bounds!r} must be a pair (lo, hi)")
    return Agg(op, column, None if bounds is None else (bounds[0], bounds[1]))


def sum(column: str, bounds: tuple[Any, Any] | None = None) -> Agg:
    """The sum of a numeric column per key, each value clamped to ``bounds`` (default: the schema's).

    Examples:
        >>> sum("income").name
        'income_sum'
    """
    return _col_agg("sum", column, bounds)


def mean(column: str, bounds: tuple[Any, Any] | None = None) -> Agg:
    """The mean of a numeric column per key: noisy sum / max(noisy count, 1).

    Examples:
        >>> mean("income", bounds=(0, 1000)).name
        'income_mean'
    """
    return _col_agg("mean", column, bounds)


def variance(column: str, bounds: tuple[Any, Any] | None = None) -> Agg:
    """The sample variance of a numeric column per key, from three noisy vectors (count n, sum S, sum of
    squares Q, each on its exact integer grid): ``max(Q − S²/n, 0) / (n − 1)`` with ``n = max(noisy
    count, 2)``. The budget share is split over the three.

    Examples:
        >>> variance("income", bounds=(0, 1000)).name
        'income_variance'
    """
    return _col_agg("variance", column, bounds)


def quantile(
    column: str, alpha: float | Fraction, candidates: Sequence[Any], bounds: tuple[Any, Any] | None = None
) -> Agg:
    """The α-quantile of a numeric column per key, chosen privately among ``candidates``.

    Per key, candidate ``c`` gets the integer score ``|(b − a)·L(c) − a·G(c)|`` with ``α = a/b``,
    ``L(c) = #{x < c}`` and ``G(c) = #{x > c}`` (values read with the column's null/NaN policy and clamped to
    its bounds, compared exactly by the engine), and report-noisy-min with exact discrete Laplace noise
    picks one — as :func:`~dpcompose.measurements.make_private_quantile` does for one vector. One person
    with ``r_k`` rows in key ``k`` moves that key's scores by at most ``r_k·max(a, b − a)`` (L∞); the keys'
    selections are independent, so the costs add over the keys a person touches: ε = 2·R·max(a, b − a) /
    (b·scale) in all, with ``R`` the row cap (Smith 2011; Dwork–Roth 2014 Claim 3.9, re-proved for discrete
    noise in :mod:`dpcompose.measurements._noisy_max`).

    Examples:
        >>> quantile("age", 0.5, [20, 40, 60]).name
        'age_quantile_0.5'
    """
    agg = _col_agg("quantile", column, bounds)
    a = QuantileAlpha(alpha)
    if isinstance(candidates, (str, bytes)) or not isinstance(candidates, (Sequence, np.ndarray)):
        raise InvalidParameter(f"candidates={candidates!r} must be a list of numbers")
    if isinstance(candidates, np.ndarray) and candidates.ndim != 1:
        raise InvalidParameter(f"candidates={candidates!r} must be one-dimensional (a list of numbers)")
    cands = tuple(c.item() if isinstance(c, np.generic) else c for c in candidates)
    if not cands:
        raise InvalidParameter("candidates=[] must not be empty")
    return dataclasses.replace(agg, alpha=a.value, candidates=cands)


def count_distinct(column: str) -> Agg:
    """The number of distinct non-null values of an int, str or bool column per key (after the filter and
    the caps). One person's rows move it by at most their row cap in all keys together, as a count.

    Float columns are refused: engines disagree on whether -0.0 and 0.0, or two NaNs, are one value.

    Examples:
        >>> count_distinct("city").name
        'city_count_distinct'
    """
    return _col_agg("count_distinct", column, None)


# --- fixed point --------------------------------------------------------------------------------------


def _floor_log2(x: int | float) -> int:
    return math.frexp(x)[1] - 1


def sum_spec(name: str, column: Column, bounds: tuple[Any, Any] | None) -> SumSpec:
    """The grid of a summed column: ``k = ⌊log₂ max(|lo|, |hi|)⌋ - 30`` so every grid value has magnitude at
    most ``2**31`` (ints with ``max(|lo|, |hi|) < 2**31`` stay exact, ``k = 0``)."""
    if column.kind not in ("int", "float"):
        raise InvalidParameter(f"column={name!r} is a {column.kind} column; sum and mean need int or float")
    use = Column(column.dtype, bounds=bounds if bounds is not None else column.bounds, fill=column.fill)
    if use.bounds is None:
        raise InvalidParameter(
            f"column={name!r} has no bounds: declare Column(..., bounds=(lo, hi)) or pass bounds= to the "
            "aggregate"
        )
    if column.nullable and column.fill is None:
        raise InvalidParameter(
            f"column={name!r} is nullable: declare Column(..., fill=v), the value a null stands for in sums"
        )
    lo, hi = use.bounds
    fill = use.fill if use.fill is not None else min(max(0, lo), hi)
    big = max(abs(lo), abs(hi))
    k = 0 if big == 0 or (column.kind == "int" and big < 1 << 31) else _floor_log2(big) - 30
    return SumSpec(name, column.kind, lo, hi, fill, k)


def _to_grid(x: int | float, spec: SumSpec) -> int:
    """The grid value of a (clamped) number, exactly as the engines compute it (round half to even)."""
    q = Fraction(x) / Fraction(2) ** spec.k
    return round(q)  # Python's round of a Fraction is half to even


def square_spec(spec: SumSpec) -> SumSpec:
    """The sum of squares of ``spec``'s grid values for a variance: ``⌊g²/2**shift⌋`` with shift =
    max(0, 2·bitlen(M) − 31) for the grid bound M, so every summed value stays within 2**31."""
    return dataclasses.replace(spec, square=True, shift=max(0, 2 * grid_bound(spec).bit_length() - 31))


def grid_bound(spec: SumSpec) -> int:
    """``M = max(|lo_g|, |hi_g|)``: the most one row moves a sum, in grid units (for a ``square`` spec,
    ``⌊M²/2**shift⌋``, the largest summed value; they are all ≥ 0)."""
    m = max(abs(_to_grid(spec.lo, spec)), abs(_to_grid(spec.hi, spec)))
    return (m * m) >> spec.shift if spec.square else m


def _unit_exponent(spec: SumSpec) -> int:
    """A summed value's unit is ``2**e``: the grid ``2**k``, or ``2**(2k + shift)`` for squares."""
    return 2 * spec.k + spec.shift if spec.square else spec.k


def _below_specs(agg: Agg, column: Column) -> list[BelowSpec]:
    """The threshold counts of a quantile: ``#{x < c}`` for every candidate, then ``#{x <= c}``."""
    assert agg.column is not None
    spec = sum_spec(agg.column, column, agg.bounds)  # the bounds, fill and kind every aggregate uses
    carrier = int if spec.kind == "int" else float
    cands = quantile_candidates(list(agg.candidates), carrier).tolist()
    out = [BelowSpec(spec.column, spec.kind, spec.lo, spec.hi, spec.fill, c, True) for c in cands]
    out += [BelowSpec(spec.column, spec.kind, spec.lo, spec.hi, spec.fill, c, False) for c in cands]
    return out


# --- the query ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Released:
    """One released integer vector: what it aggregates, its sensitivity per unit, its noise."""

    what: tuple[Any, ...]  # the internal key: _COUNT, a SumSpec.key or ("distinct", column) (never a string:
    # a column may have any name, and a vector keyed by a column's name could take another vector's noise)
    spec: SumSpec | None
    sensitivity: int  # grid units per d_in = 1 (R or R·M)
    noise: Measurement[Any, Any, Any, Any]
    scale: Fraction
    label: str  # its name for the user (summarize): "count", "x_sum", "x_sum_of_squares", "x_count_distinct"


class TableQuery:
    """A built query: a :class:`~dpcompose.Measurement` (``.measurement``), its cost and accuracy
    (``.summarize()``), and ``.release()``, which charges the Context's budget and runs it."""

    def __init__(
        self,
        ctx: Context,
        plan: Plan,
        aggs: tuple[Agg, ...],
        budget: Any,
        kinds: dict[str, str],
        share: int | None = None,
    ) -> None:
        self._ctx = ctx
        self._share = share  # the Context's share the budget is (None: stated with query(privacy_loss=...))
        self._kinds = kinds  # every column's kind, derived ones included (the results' dtypes)
        self.plan = plan
        self.aggs = aggs
        self.budget = budget
        measure = ctx.measure
        released: list[_Released] = []
        r = plan.max_rows if plan.max_rows is not None else 1
        self.unknown_keys = plan.keys is None and bool(plan.by)
        if self.unknown_keys:
            _check_selection_budget(measure, budget)
        wanted: list[tuple[tuple[Any, ...], SumSpec | None, str]] = []
        if self.unknown_keys or any(a.op in ("count", "mean", "variance") for a in aggs):
            wanted.append((_COUNT, None, "count"))  # unknown keys: the noisy counts select the keys
        for s in plan.sums:
            wanted.append((s.key, s, f"{s.column}_sum_of_squares" if s.square else f"{s.column}_sum"))
        for c in plan.distinct:  # moves like a count: R per person
            wanted.append((("distinct", c), None, count_distinct(c).name))
        quantiles = [a for a in aggs if a.op == "quantile"]
        share = len(wanted) + len(quantiles)
        for what, maybe, label in wanted:
            sens = r * (1 if maybe is None else grid_bound(maybe))
            try:
                if isinstance(measure, ZCDP):
                    rho = Fraction(budget) / share
                    scale = sqrt_up_q(Fraction(sens * sens) / (2 * rho)) if sens else Fraction(1)
                    noise = make_discrete_gaussian(_INTS, L2Distance(), scale)
                else:
                    eps = (budget[0] if isinstance(measure, ApproxDP) else Fraction(budget)) / share
                    scale = Fraction(sens) / eps if sens else Fraction(1)
                    noise = make_discrete_laplace(_INTS, L1Distance(), scale)
            except InvalidParameter as exc:
                where = "" if maybe is None else f" of {maybe.column!r}"
                raise InvalidParameter(
                    f"{label}: its noise would be too wide for the exact integer sampler ({exc}; the scale "
                    f"is in units of the column's grid): narrow the bounds{where}, lower max_rows, or give "
                    "this query a larger share of the budget"
                ) from None
            released.append(_Released(what, maybe, sens, noise, scale, label))
        self._released = tuple(released)
        # each quantile: report-noisy-min over integer scores, L∞ sensitivity R·max(a, b − a) per person
        self._quantiles: list[tuple[Agg, int, int, Measurement[Any, Any, Any, Any], Fraction]] = []
        start = 0
        for agg in quantiles:
            assert agg.alpha is not None
            a_num, b_den = agg.alpha.numerator, agg.alpha.denominator
            sens = r * max(a_num, b_den - a_num)
            if isinstance(measure, ZCDP):
                eps_q = Fraction(sqrt_down(2 * Fraction(budget) / share))  # pure ε with ε²/2 <= its ρ share
                if eps_q <= 0:
                    raise InvalidParameter(f"the quantile's share of ρ = {budget} is too small to use")
            else:
                eps_q = (budget[0] if isinstance(measure, ApproxDP) else Fraction(budget)) / share
            scale = 2 * Fraction(sens) / eps_q  # non-monotonic scores: ε = 2·Δ∞/scale
            m = len(agg.candidates)
            select = make_report_noisy_max(
                VectorDomain(AtomDomain(int), size=m), LInfDistance(), scale, optimize="min"
            )
            self._quantiles.append((agg, start, sens, select, scale))
            start += 2 * m
        self.threshold: int | None = None
        if self.unknown_keys:
            # per person (or row): at most l0 keys, at most l∞ rows in one key, at most l1 rows in all
            l_inf = r
            l0 = min(plan.max_groups, r) if plan.max_groups is not None else r
            self._l = (l0, r, l_inf)
            count_scale = released[0].scale
            self.threshold = partition_threshold(count_scale, budget[1], d_in=self._l)
            self._selection = make_laplace_threshold(
                _KEYS_DOMAIN, L01InfDistance(), count_scale, self.threshold
            )
        self.measurement = self._build()

    def _build(self) -> Measurement[Any, Any, Any, Any]:
        ctx, plan, released = self._ctx, self.plan, self._released
        out_measure: Measure[Any] = ZCDP() if isinstance(ctx.measure, ZCDP) else PureDP()
        unknown = self.unknown_keys
        if unknown:
            out_measure = ApproxDP()

        def privacy_map(d_in: int) -> Any:
            costs = [rel.noise.map(d_in * rel.sensitivity) for rel in released]
            for _, _, sens, select, _ in self._quantiles:
                eps = select.map(Fraction(d_in * sens))
                costs.append(eps * eps / 2 if isinstance(ctx.measure, ZCDP) else eps)  # ε-DP is ε²/2-zCDP
            if not unknown:
                return out_measure.compose(costs)
            # each key's release (noisy count, noisy sums) happens only when its noisy count reaches the
            # threshold: keys in both neighbours cost their noise's ε (basic composition over the released
            # vectors), a key in one neighbour only costs its release probability, the δ of
            # make_laplace_threshold at (l0, l1, l∞)·d_in (Korolova et al. 2009; Wilson et al. 2020)
            l0, l1, li = self._l
            delta = self._selection.map((l0 * d_in, Fraction(l1 * d_in), Fraction(li * d_in)))[1]
            return PureDP().compose(costs), delta

        def run(data: Any) -> Any:
            engine = engine_for(data)
            assert engine is not None  # the domain check ran first
            found = run_job(engine, data, plan)  # a failure shows none of its text (it may quote data)
            return self._finish(found.keys, found.counts, found.sums, found.distincts, found.belows)

        return Measurement(
            ctx.domain,
            ctx.metric,
            out_measure,
            run,
            privacy_map,
            node=Node(
                "table_query",
                params=(
                    ("aggs", ", ".join(a.name for a in self.aggs)),
                    ("by", ", ".join(plan.by) or "-"),
                    *((("keys", f"selected, threshold {self.threshold}"),) if unknown else ()),
                ),
                source="stable filter/caps (McSherry 2009) then discrete noise per released vector"
                + ("; keys: partition selection (Korolova et al. 2009)" if unknown else ""),
                theorem="basic composition of the released vectors",
                children=tuple(rel.noise for rel in released) + tuple(q[3] for q in self._quantiles),
                child_inputs=lambda d: tuple(d * rel.sensitivity for rel in released)
                + tuple(Fraction(d * q[2]) for q in self._quantiles),
            ),
        )

    def _finish(
        self,
        keys: tuple[tuple[Any, ...], ...],
        counts: np.ndarray,
        sums: list[np.ndarray],
        distincts: list[np.ndarray],
        belows: list[np.ndarray],
    ) -> Any:
        import polars as pl

        exact_of: dict[tuple[Any, ...], np.ndarray] = {_COUNT: counts}
        exact_of.update({("distinct", c): d for c, d in zip(self.plan.distinct, distincts, strict=True)})
        exact_of.update({spec.key: v for spec, v in zip(self.plan.sums, sums, strict=True)})
        noisy = {rel.what: rel.noise(exact_of[rel.what]) for rel in self._released}
        if self.unknown_keys:  # release a key only when its noisy count reaches the threshold
            assert self.threshold is not None
            keep = noisy[_COUNT] >= self.threshold
            keys = tuple(k for k, kept in zip(keys, keep.tolist(), strict=True) if kept)
            noisy = {name: values[keep] for name, values in noisy.items()}
            # the quantiles are selected for the released keys only (their number is released; selecting
            # for the dropped keys too cost time that grew with keys nobody sees)
            counts = counts[keep]
            belows = [b[keep] for b in belows]
        chosen: dict[str, list[Any]] = {}
        for agg, start, _, select, _ in self._quantiles:
            assert agg.alpha is not None
            a_num, b_den = agg.alpha.numerator, agg.alpha.denominator
            m = len(agg.candidates)
            less = np.stack(belows[start : start + m], axis=1)  # m >= 1: quantile() refuses no candidates
            at_most = np.stack(belows[start + m : start + 2 * m], axis=1)
            greater = counts[:, None] - at_most
            scores = np.abs((b_den - a_num) * less - a_num * greater).astype(np.int64)
            chosen[agg.name] = [agg.candidates[select(row)] for row in scores]
        plan = self.plan
        columns: dict[str, Any] = {}
        kinds = self._kinds
        dtypes = {"int": pl.Int64, "float": pl.Float64, "str": pl.String, "bool": pl.Boolean}
        for j, name in enumerate(plan.by):
            columns[name] = pl.Series(name, [k[j] for k in keys], dtype=dtypes[kinds[name]])
        specs = {s.key: s for s in plan.sums}
        for agg in self.aggs:
            if agg.op == "count":
                columns[agg.name] = pl.Series(agg.name, noisy[_COUNT], dtype=pl.Int64)
                continue
            if agg.op == "count_distinct":
                columns[agg.name] = pl.Series(agg.name, noisy[("distinct", agg.column)], dtype=pl.Int64)
                continue
            if agg.op == "quantile":
                dtype = pl.Int64 if kinds[agg.column or ""] == "int" else pl.Float64
                columns[agg.name] = pl.Series(agg.name, chosen[agg.name], dtype=dtype)
                continue
            spec = specs[sum_key(agg.column or "")]
            # (post-processing of the noisy vectors: a float overflow gives ±inf or NaN, never a warning
            # that a caller's warnings filter could turn into an exception after the charge)
            with np.errstate(over="ignore", invalid="ignore"):
                total = noisy[spec.key].astype(np.float64) * math.ldexp(1.0, _unit_exponent(spec))
            if agg.op == "variance":
                sq = specs[sum_key(agg.column or "", square=True)]
                n = np.maximum(noisy[_COUNT], 2).astype(np.float64)
                with np.errstate(over="ignore", invalid="ignore"):
                    squares = noisy[sq.key].astype(np.float64) * math.ldexp(1.0, _unit_exponent(sq))
                    var = np.maximum(squares - total * total / n, 0.0) / (n - 1)
                columns[agg.name] = pl.Series(agg.name, var, dtype=pl.Float64)
                continue
            if agg.op == "sum":
                if spec.kind == "int" and spec.k == 0:
                    columns[agg.name] = pl.Series(agg.name, noisy[spec.key], dtype=pl.Int64)
                else:
                    columns[agg.name] = pl.Series(agg.name, total, dtype=pl.Float64)
            else:
                n = np.maximum(noisy[_COUNT], 1).astype(np.float64)
                columns[agg.name] = pl.Series(agg.name, total / n, dtype=pl.Float64)
        return pl.DataFrame(columns)

    def summarize(self, alpha: float = 0.05) -> Summary:
        """The cost at the unit (d_in = 1) and, per released vector, the noise and the half-width ``a``
        with ``P(|noise| > a) <= alpha`` in the result's units — computed without touching the data. The
        vectors are named for the user: ``count``, ``x_sum`` (also behind a mean or a variance of ``x``),
        ``x_sum_of_squares`` (a variance's third vector, in units of ``x²``), ``x_count_distinct``, and
        each quantile by its result column.

        Discrete Laplace with scale t: ``P(|Z| > a) = 2·p**(a+1)/(1+p)``, ``p = e**(-1/t)`` (exact, for
        integer ``a``). Discrete Gaussian: it is σ-sub-Gaussian (Canonne–Kamath–Steinke 2020, Cor. 9), so
        ``P(|Z| >= a) <= 2·exp(-a²/(2σ²))`` and ``a = σ·√(2 ln(2/alpha))`` is an upper bound. Means have
        no closed form here (a ratio of two noisy values) and show none. A quantile's row is in records:
        with probability ``>= 1 - alpha`` (a union bound over its ``m`` candidates' noises) the chosen
        candidate's ``|(1 − α)·L − α·G|`` is within that many records of the best candidate's.
        """
        if not isinstance(alpha, float | int) or isinstance(alpha, bool) or not 0 < alpha < 1:
            raise InvalidParameter(f"alpha={alpha!r} must be in (0, 1)")
        rows = []
        for rel in self._released:
            unit = 1.0 if rel.spec is None else math.ldexp(1.0, _unit_exponent(rel.spec))
            t = float(rel.scale)
            if isinstance(self._ctx.measure, ZCDP):
                dist = "discrete Gaussian"
                half = t * math.sqrt(2 * math.log(2 / alpha))
            else:
                dist = "discrete Laplace"
                half = discrete_laplace_scale_to_accuracy(rel.scale, alpha)
            rows.append((rel.label, dist, t * unit, half * unit))
        for agg, _, _, _, scale in self._quantiles:
            assert agg.alpha is not None
            b_den = agg.alpha.denominator
            # union bound over the m noises: all within ±a with probability ≥ 1 − alpha, so the chosen
            # score is within 2a of the least one; in records (scores are b·|(1 − α)L − αG|): 2a/b
            a = discrete_laplace_scale_to_accuracy(scale, alpha / len(agg.candidates))
            rows.append((agg.name, "noisy min, d. Laplace", float(scale) / b_den, 2 * a / b_den))
        cost = self.measurement.output_measure.display(self.measurement.map(1))
        return Summary(cost, alpha, tuple(rows))

    def release(self) -> Any:
        """Charge the Context's budget (refused with BudgetExceeded before anything runs) and run the query;
        returns a Polars DataFrame of noisy results, one row per key. A dead engine (a stopped Spark
        session) is refused with EngineUnavailable before the charge, taking no share."""
        return self._ctx._release(self.measurement, self.budget, self._share)


@dataclass(frozen=True)
class Summary:
    """What a query costs and how accurate it is, before release."""

    cost: str
    alpha: float
    rows: tuple[tuple[str, str, float, float], ...]  # (vector, noise, scale, accuracy) in result units

    def __repr__(self) -> str:
        w = max([20, *(len(r[0]) for r in self.rows)])  # columns stay aligned for long names
        d = max([18, *(len(r[1]) for r in self.rows)])
        lines = [f"cost: {self.cost}", f"{'released':<{w}} {'noise':<{d}} {'scale':>12} {'accuracy':>12}"]
        for what, dist, scale, acc in self.rows:
            lines.append(f"{what:<{w}} {dist:<{d}} {scale:>12.4g} {acc:>12.4g}")
        lines.append(f"(accuracy: |noise| <= value with probability >= {1 - self.alpha:g})")
        return "\n".join(lines)


class Query:
    """An immutable query builder: ``with_column(s)``, ``select``, ``filter``, ``group_by(..., keys=...)``,
    ``agg(...)``."""

    def __init__(
        self,
        ctx: Context,
        budget: Any,
        predicate: _expr.Expr | None = None,
        by: tuple[str, ...] = (),
        keys: tuple[tuple[Any, ...], ...] | None = None,
        derived: tuple[tuple[str, _expr.Expr, Column], ...] = (),
        visible: tuple[str, ...] | None = None,
        share: int | None = None,
    ) -> None:
        self._ctx, self._budget, self._predicate = ctx, budget, predicate
        self._share = share
        self._by, self._keys = by, keys
        self._derived, self._visible = derived, visible

    def _copy(self, **changes: Any) -> Query:
        fields: dict[str, Any] = {
            "predicate": self._predicate, "by": self._by, "keys": self._keys, "derived": self._derived,
            "visible": self._visible,
        }  # fmt: skip
        fields.update(changes)
        return Query(self._ctx, self._budget, share=self._share, **fields)

    def _column(self, name: object, what: str = "column") -> Column:
        """A column of this query's view: a declared or derived one that ``select`` kept (all by default)."""
        if self._visible is not None and name not in self._visible:
            raise InvalidParameter(
                f"{what}={name!r} is not among the selected columns ({', '.join(self._visible)})"
            )
        for n, _, column in self._derived:
            if n == name:
                return column
        return self._ctx.domain.column(name, what)

    def _kinds(self) -> dict[str, str]:
        kinds = {**self._ctx.kinds, **{n: column.kind for n, _, column in self._derived}}
        return {n: k for n, k in kinds.items() if self._visible is None or n in self._visible}

    def select(self, *columns: str) -> Query:
        """Keep only these columns (declared or derived) visible to the rest of the query.

        Examples:
            >>> import dpcompose as dp
            >>> import polars as pl
            >>> schema = dp.FrameDomain({"a": dp.Column(int), "b": dp.Column(str)})
            >>> ctx = dp.Context(pl.DataFrame({"a": [1], "b": ["x"]}), schema, privacy_loss=1.0,
            ...                  split_evenly_over=1)
            >>> ctx.query().select("a").filter(dp.col("b") == "x")
            Traceback (most recent call last):
            ...
            dpcompose.errors.InvalidParameter: predicate: column 'b' is not in the schema (declared: a)
        """
        if not columns:
            raise InvalidParameter("select() needs at least one column name")
        for name in columns:
            self._column(name, "select")
        # only the view narrows: every derived column is still computed, as a kept one may read a dropped one
        return self._copy(visible=tuple(columns))

    def with_column(
        self, name: str, expr: _expr.Expr, *, bounds: tuple[float, float], fill: float | None = None
    ) -> Query:
        """A new float column computed row by row from ``expr`` (``+``, ``-``, ``*`` of numeric columns and
        numbers, on IEEE doubles in every engine), with declared ``bounds`` (the clamp its sums, means and
        quantiles apply) and ``fill`` (what a null or NaN result stands for; default: 0 clamped into the
        bounds). A row-wise map: one person's rows stay their rows, so every map is unchanged.

        Examples:
            >>> import dpcompose as dp
            >>> import polars as pl
            >>> schema = dp.FrameDomain({"price": dp.Column(float, bounds=(0.0, 100.0)),
            ...                          "qty": dp.Column(int, bounds=(0, 10))})
            >>> ctx = dp.Context(pl.DataFrame({"price": [2.5], "qty": [4]}), schema, privacy_loss=1e9,
            ...                  split_evenly_over=1)
            >>> q = ctx.query().with_column("total", dp.col("price") * dp.col("qty"), bounds=(0.0, 1000.0))
            >>> round(q.agg(dp.tables.sum("total")).release()["total_sum"][0], 3)  # noise at ε = 1e9: ~1e-6
            10.0
        """
        if not isinstance(name, str) or not name:
            raise InvalidParameter(f"name={name!r} must be a non-empty column name")
        taken = [*self._ctx.domain.schema, *(n for n, _, _ in self._derived)]
        if name in taken:
            raise InvalidParameter(f"name={name!r} is already a column; pick a new name")
        check_column_name(name, "name", taken)
        if _expr.check(expr, self._kinds(), "expr") not in ("int", "float"):
            raise InvalidParameter(f"expr={expr!r} must be numeric (+, -, * of columns and numbers)")
        if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
            raise InvalidParameter(f"bounds={bounds!r} must be a pair (lo, hi)")
        try:
            lo, hi = (float(b) if isinstance(b, int) and not isinstance(b, bool) else b for b in bounds)
        except OverflowError:
            raise InvalidParameter("bounds: an integer bound is beyond the float range (1.8e308)") from None
        checked = Column(float, bounds=(lo, hi))  # refuses bounds that are not finite floats lo <= hi
        assert checked.bounds is not None
        lo, hi = checked.bounds
        default = min(max(0.0, lo), hi)
        column = Column(float, bounds=(lo, hi), nullable=True, fill=default if fill is None else fill)
        visible = None if self._visible is None else (*self._visible, name)
        return self._copy(derived=(*self._derived, (name, expr, column)), visible=visible)

    def with_columns(self, **columns: tuple[_expr.Expr, tuple[float, float]]) -> Query:
        """Several :meth:`with_column` at once: ``with_columns(name=(expr, (lo, hi)), ...)``, in order (a
        later one may read an earlier one).

        Examples:
            >>> import dpcompose as dp
            >>> import polars as pl
            >>> schema = dp.FrameDomain({"a": dp.Column(float, bounds=(0.0, 1.0))})
            >>> ctx = dp.Context(pl.DataFrame({"a": [0.5]}), schema, privacy_loss=1e9, split_evenly_over=1)
            >>> q = ctx.query().with_columns(b=(dp.col("a") * 2, (0.0, 2.0)), c=(dp.col("b") + 1, (1.0, 3.0)))
            >>> round(q.agg(dp.tables.sum("c")).release()["c_sum"][0], 3)  # 0.5·2 + 1
            2.0
        """
        query = self
        for name, spec in columns.items():
            if not isinstance(spec, tuple) or len(spec) != 2:
                raise InvalidParameter(f"{name}={spec!r} must be a pair (expression, (lo, hi))")
            query = query.with_column(name, spec[0], bounds=spec[1])
        return query

    def filter(self, predicate: _expr.Expr) -> Query:
        """Keep the rows where ``predicate`` is true (checked against the schema now)."""
        if _expr.check(predicate, self._kinds(), "predicate") != "bool":
            raise InvalidParameter(f"predicate={predicate!r} must be a boolean expression")
        combined = predicate if self._predicate is None else self._predicate & predicate
        return self._copy(predicate=combined)

    def group_by(self, *by: str, keys: Sequence[Any] | None = None) -> Query:
        """Group by the columns ``by`` with the public list ``keys`` (a value per key for one column, a
        tuple per key for several). Rows with other keys are dropped; every listed key gets a row.

        ``keys=None`` (unknown keys): every key present after the filter and the caps is a candidate, and
        a key is released only when its noisy count reaches a threshold chosen from the query's δ
        (partition selection, as ``make_laplace_threshold``): needs an ``ApproxDP`` Context with δ > 0.
        With unknown keys the count is always computed and noised (it selects the keys; its ε is part of
        the cost), and released keys come sorted by value.
        """
        if not by:
            raise InvalidParameter("by=() must name at least one column")
        if len(set(by)) != len(by):
            raise InvalidParameter(f"by={by!r} names a column twice")
        for name in by:
            col = self._column(name, "by")
            if col.kind == "float":
                raise InvalidParameter(f"by={name!r} is a float column; group by int, str or bool columns")
        if keys is None:  # unknown keys: selected privately at release (partition selection)
            return self._copy(by=tuple(by), keys=None)
        if isinstance(keys, (str, bytes)) or not isinstance(keys, Sequence) or len(keys) == 0:
            raise InvalidParameter(f"keys={keys!r} must be a non-empty list of keys")
        rows: list[tuple[Any, ...]] = []
        for key in keys:
            parts = tuple(key) if len(by) > 1 and isinstance(key, (tuple, list)) else (key,)
            if len(parts) != len(by):
                raise InvalidParameter(f"keys: {key!r} must have one value per column of by={by!r}")
            clean = []
            for name, v in zip(by, parts, strict=True):
                v = v.item() if isinstance(v, np.generic) else v
                col = self._column(name, "by")
                if v is None:
                    if not col.nullable:
                        raise InvalidParameter(f"keys: None for column {name!r}, which is not nullable")
                elif _expr.literal_kind(v, "keys") != col.kind:
                    raise InvalidParameter(f"keys: {v!r} is not a {col.kind} (column {name!r})")
                clean.append(v)
            rows.append(tuple(clean))
        if len(set(rows)) != len(rows):
            raise InvalidParameter(f"keys={keys!r} must be distinct")
        return self._copy(by=tuple(by), keys=tuple(rows))

    def agg(self, *aggs: Agg) -> TableQuery:
        """The aggregates to release (``count()``, ``sum(c)``, ``mean(c)``, ``variance(c)``,
        ``quantile(c, alpha, candidates)``, ``count_distinct(c)``), as one query."""
        if not aggs:
            raise InvalidParameter("aggs=() must list at least one aggregate")
        ctx = self._ctx
        specs: dict[tuple[str, str, bool], SumSpec] = {}
        distinct: list[str] = []
        below: list[BelowSpec] = []
        for a in aggs:
            if not isinstance(a, Agg):
                raise InvalidParameter(
                    f"aggs: {a!r} must be built by dp.tables.count, sum, mean, variance, quantile or "
                    "count_distinct"
                )
            if a.column is None:
                continue
            if a.op == "quantile":
                below.extend(_below_specs(a, self._column(a.column, "column")))
                continue
            if a.op == "count_distinct":
                kind = self._column(a.column, "column").kind
                if kind not in ("int", "str", "bool"):
                    raise InvalidParameter(
                        f"count_distinct({a.column!r}): a {kind} column; distinct values are counted for "
                        "int, str or bool columns (engines disagree on -0.0 vs 0.0 and on NaN)"
                    )
                distinct.append(a.column)
                continue
            spec = sum_spec(a.column, self._column(a.column, "column"), a.bounds)
            if spec.key in specs and specs[spec.key] != spec:
                raise InvalidParameter(f"column={a.column!r} is aggregated with two different bounds")
            specs[spec.key] = spec
            if a.op == "variance":
                squares = square_spec(spec)
                if _unit_exponent(squares) + 63 > 1023:  # a noisy int64 times the unit must be a finite float
                    raise InvalidParameter(
                        f"variance({a.column!r}): bounds {a.bounds or 'of the column'} are too wide for a "
                        "variance (its squares' unit exceeds the float range); narrow them below 2**480"
                    )
                specs[squares.key] = squares
        if len({a.name for a in aggs}) != len(aggs):
            raise InvalidParameter("aggs: an aggregate is listed twice")
        clash = sorted({a.name for a in aggs} & set(self._by))
        if clash:
            raise InvalidParameter(
                f"aggs: the result column {clash[0]!r} is also a group-by column (the result would hold it "
                "twice); group by a copy of the column under another name (with_column), or rename it"
            )
        unit = ctx.privacy_unit
        read = set(self._by) | _expr.columns_of(self._predicate) | {s.column for s in specs.values()}
        read |= set(distinct)
        read |= {b.column for b in below}
        for _, expr, _ in self._derived:  # every derived column is computed from its declared columns
            read |= _expr.columns_of(expr)
        if unit is not None:
            read.add(unit.id)
        columns = tuple(n for n, _ in ctx.domain.columns if n in read)
        plan = Plan(
            columns=columns,
            predicate=self._predicate,
            by=self._by,
            keys=self._keys if self._keys is not None or self._by else ((),),  # None: unknown keys
            id=None if unit is None else unit.id,
            max_rows=None if unit is None else unit.max_rows,
            max_groups=None if unit is None else unit.max_groups,
            sums=tuple(specs.values()),
            distinct=tuple(distinct),
            below=tuple(below),
            derived=tuple((name, expr) for name, expr, _ in self._derived),
        )
        return TableQuery(ctx, plan, tuple(aggs), self._budget, self._kinds(), self._share)


class Context:
    """Data, unit of privacy, budget and split: the entry point for private table queries.

    Args:
        data: a Polars DataFrame or LazyFrame, or a pandas DataFrame (converted with Polars).
        domain: a :class:`FrameDomain` (or a mapping column -> :class:`Column`) declaring the schema; the
            data's schema is checked against it now (metadata only, no scan).
        privacy_unit: ``dp.unit_of(id=..., max_rows=..., max_groups=...)``, or None for row-level privacy
            (neighbours differ in one row).
        privacy_loss: the total budget in ``measure``'s units (ε, ρ, or (ε, δ)).
        measure: ``dp.PureDP()`` (discrete Laplace noise), ``dp.ZCDP()`` (discrete Gaussian) or
            ``dp.ApproxDP()`` (discrete Laplace queries under an (ε, δ) filter).
        split_evenly_over: the budget is split into this many equal query shares, or
        split_by_weights: into shares proportional to these weights; the i-th release gets share i.
        ledger: a :class:`~dpcompose.MemoryLedger` / :class:`~dpcompose.SQLiteLedger` for the filter.

    The Context holds a privacy filter (``dp.make_privacy_filter``) over the data: each ``release()``
    is charged there before its engine job runs.

    Raises:
        InvalidParameter: a bad budget, split, unit or schema. DomainMismatch: the data's schema does not
            match, or the identifier column is not declared.

    Examples:
        >>> import dpcompose as dp, polars as pl
        >>> df = pl.DataFrame({"user": [1, 1, 2], "age": [30, 31, 40]})
        >>> ctx = dp.Context(df, {"user": dp.Column(int), "age": dp.Column(int, bounds=(0, 100))},
        ...                  privacy_unit=dp.unit_of(id="user", max_rows=2), privacy_loss=1.0,
        ...                  split_evenly_over=2)
        >>> q = ctx.query().agg(dp.tables.count())
        >>> q.measurement.map(1)
        Fraction(1, 2)
    """

    def __init__(
        self,
        data: Any,
        domain: FrameDomain | dict[str, Column],
        *,
        privacy_unit: PrivacyUnit | None = None,
        privacy_loss: Any,
        measure: Measure[Any] | None = None,
        split_evenly_over: int | None = None,
        split_by_weights: Sequence[float] | None = None,
        ledger: Any = None,
    ) -> None:
        if not isinstance(domain, FrameDomain):
            try:
                domain = FrameDomain(domain)
            except InvalidParameter as exc:
                raise InvalidParameter(f"domain: {exc}") from None
        self.domain = domain
        if privacy_unit is not None and not isinstance(privacy_unit, PrivacyUnit):
            raise InvalidParameter(f"privacy_unit={privacy_unit!r} must be dp.unit_of(...) or None")
        self.privacy_unit = privacy_unit
        unit = privacy_unit
        self.metric: Metric = SymmetricDistance() if unit is None else SymmetricIdDistance(unit.id)
        if privacy_unit is not None and privacy_unit.id not in domain.schema:
            raise DomainMismatch(
                f"privacy_unit: the identifier column {privacy_unit.id!r} is not declared in the schema"
            )
        measure = PureDP() if measure is None else measure
        if not isinstance(measure, (PureDP, ZCDP, ApproxDP)):
            raise InvalidParameter(f"measure={measure!r} must be dp.PureDP(), dp.ZCDP() or dp.ApproxDP()")
        self.measure = measure
        budget: Any = measure.parse(privacy_loss, "privacy_loss")
        _check_positive(budget, privacy_loss, "privacy_loss")
        if (split_evenly_over is None) == (split_by_weights is None):
            raise InvalidParameter("split_evenly_over= or split_by_weights= (exactly one) must be given")
        if split_evenly_over is not None:
            n = validate_count(split_evenly_over, "split_evenly_over")
            if n > _MAX_SHARES:  # found by review: 10**9 built a list of 10**9 shares (24 GB, killed)
                raise InvalidParameter(
                    f"split_evenly_over={split_evenly_over!r}: at most {_MAX_SHARES} queries per context "
                    "(one share each); split the budget between contexts for more"
                )
            if n == 0:
                raise InvalidParameter("split_evenly_over=0 must be at least 1")
            self._shares = BudgetShares.even(measure, budget, n)
        else:
            if isinstance(split_by_weights, (str, bytes)) or not isinstance(split_by_weights, Sequence):
                raise InvalidParameter(f"split_by_weights={split_by_weights!r} must be a list of weights")
            weights = []
            for w in split_by_weights:
                if isinstance(w, bool) or not isinstance(w, (int, float, Fraction)):
                    raise InvalidParameter(
                        f"split_by_weights={split_by_weights!r}: weight {w!r} is a {type(w).__name__}; "
                        "weights must be int, float or Fraction (for numpy scalars, use .item())"
                    )
                if (isinstance(w, float) and not math.isfinite(w)) or not w > 0:
                    raise InvalidParameter(f"split_by_weights={split_by_weights!r}: weights must be > 0")
                weights.append(Fraction(w))
            if not weights:
                raise InvalidParameter("split_by_weights=[] must list at least one weight")
            self._shares = BudgetShares.weighted(measure, budget, weights)
        self.kinds = {n: c.kind for n, c in domain.columns}
        filt = make_privacy_filter(domain, self.metric, measure, d_in=1, d_out=privacy_loss, ledger=ledger)
        self._queryable = filt(data)  # checks the data's schema (no scan)
        self._check_engine = engine_check(data)  # the engine's liveness, before each charge (no scan)

    def query(self, privacy_loss: Any = None) -> Query:
        """A new query with the share of the next release (or ``privacy_loss`` in the context's measure).

        Shares go to releases in order: a query built but never released (or refused) takes no share.
        Each share goes to one release, also when threads release at once: ``release()`` takes the share
        next at that moment if it is the size the query was priced at, and is refused otherwise
        (``BudgetExceeded``: nothing is run or spent; build the query again).
        """
        if privacy_loss is not None:
            share = self.measure.parse(privacy_loss, "privacy_loss")
            _check_positive(share, privacy_loss, "privacy_loss")
            return Query(self, share)
        index, share = self._shares.peek()
        return Query(self, share, share=index)

    def _release(self, measurement: Measurement[Any, Any, Any, Any], budget: Any, share: int | None) -> Any:
        """Charge the filter and run ``measurement`` as the next release (:meth:`BudgetShares.hand_out`)."""
        q = self._queryable
        self._check_engine()  # refused before any share is taken or anything is charged
        return self._shares.hand_out(budget, share, lambda: q(measurement), lambda: q.queries_charged)

    def remaining(self) -> Any:
        """What the Context's filter has left."""
        return self._queryable.remaining()

    def __repr__(self) -> str:
        unit = "row" if self.privacy_unit is None else repr(self.privacy_unit)
        return f"Context({self.domain!r}, unit={unit}, measure={self.measure!r}, shares={len(self._shares)})"


def _check_positive(budget: Any, raw: object, name: str) -> None:
    """A query's noise is scaled by its ε (or ρ): it must be positive."""
    first = budget[0] if isinstance(budget, tuple) else budget
    if first <= 0:
        raise InvalidParameter(f"{name}={raw!r} must be positive (ε > 0, or ρ > 0): noise is scaled by it")
