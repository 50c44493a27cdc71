"""A built table query (:class:`TableQuery`): a Measurement whose map is known before any engine job
runs.

A query ``ctx.query().filter(...).group_by(..., keys=[...]).agg(count(), sum(c), mean(c))`` becomes:

1. an engine job (:mod:`dpcompose.tables._engine`) computing *exact integer* aggregates: the filter, the
   known keys, the per-identifier caps (``max_groups`` groups, then ``max_rows`` rows, chosen by the
   specified hash), the NaN/null policy and clamp, the fixed-point grid ``2**k``, and per key the row
   count and the integer sums;
2. exact discrete noise on the driver, by the catalogue's ``make_discrete_laplace`` (PureDP and ApproxDP
   contexts) or ``make_discrete_gaussian`` (zCDP contexts) on the int64 vectors;
3. scaling back (sums times ``2**k``) and ``mean = noisy sum / max(noisy count, 1)`` clipped to the
   column's bounds — post-processing. The clip moves a released mean only towards ``[lo, hi]``, where the
   true mean of the clamped values lies, so it never moves it away from the truth: any accuracy statement
   ``|mean − truth| <= w`` holds after it too, and the intervals (:meth:`TableQuery.intervals`, computed
   from the noisy vectors and clipped to the bounds themselves) contain the clipped release whenever they
   contain the unclipped one. A released sample variance ``max(Q − S²/n, 0)/(n − 1)`` (``n`` the noisy
   count, at least 2) is capped at ``(hi − lo)²/4 · m/(m − 1)``, ``m = 2⌈n/2⌉``, for that same ``n``
   (:func:`~dpcompose.tables._intervals.variance_cap`), the most the sample variance of ``n`` values in
   ``[lo, hi]`` can be, so the release is a value the estimator can give on data within the bounds. Its
   interval is computed from the noisy vectors, not from the release, so its coverage is unchanged; its
   upper end is capped by the same bound at the box's least count (at most ``n``), which is no lower, so
   the cap never takes a release above ``x_hi``. The cap moves a release towards the truth whenever the
   true count is at least the noisy one (the truth is then below the cap); when it is smaller, the cap can
   pass below the truth by at most ``(hi − lo)²/4 · (1/(m_true − 1) − 1/(m − 1))`` (``m_true`` the true count
   rounded up to even).

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
a count-like vector, and ``quantile`` a report-noisy-min per key (their maps are in their docstrings,
:mod:`dpcompose.tables._agg`). A
person-level unit is measured by ``dp.SymmetricIdDistance(id_column)``, the catalogue's identifier metric.

With ``selection="gaussian"``, unknown keys are selected by the discrete Gaussian threshold of
``make_gaussian_threshold`` instead, every vector noised as in a zCDP Context
(:mod:`dpcompose.tables._selection`).
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from dpcompose.accounting._exact import sqrt_down, sqrt_up_q
from dpcompose.accuracy import discrete_laplace_scale_to_accuracy
from dpcompose.combinators import make_pure_to_approx
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
    Node,
    PureDP,
    VectorDomain,
)
from dpcompose.errors import InvalidParameter
from dpcompose.measurements import (
    make_discrete_gaussian,
    make_discrete_laplace,
    make_gaussian_threshold,
    make_laplace_threshold,
    make_report_noisy_max,
    partition_threshold,
)
from dpcompose.measurements._threshold import gaussian_threshold_delta
from dpcompose.tables._agg import Agg, count_distinct
from dpcompose.tables._engine import Plan, SumSpec, run_job, sum_key
from dpcompose.tables._engines import engine_for
from dpcompose.tables._fixed import grid_bound, unit_exponent
from dpcompose.tables._intervals import (
    check_level,
    component_half_width,
    mean_bounds,
    mean_half_width_at,
    split_alpha,
    variance_bounds,
    variance_cap,
    variance_half_width_at,
)
from dpcompose.tables._selection import GaussianSelection, check_selection
from dpcompose.tables._shown import shown_in_result_units

if TYPE_CHECKING:  # annotations only: the Context module imports this one
    from dpcompose.tables._context import Context

__all__ = ["ReleasedVector", "Summary", "TableQuery"]

_INTS = VectorDomain(AtomDomain(int))
_COUNT: tuple[Any, ...] = ("count",)  # the row count's key among the vectors (see ReleasedVector.what)
_KEYS_DOMAIN = MapDomain(AtomDomain(str), AtomDomain(int))  # the threshold's map does not read keys


@dataclass(frozen=True)
class ReleasedVector:
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
    (``.summarize()``), and ``.release()``, which charges the Context's budget and runs it.

    The parts its map is read from: ``.plan`` (the engine job), ``.vectors`` (each released integer vector
    with its sensitivity per unit and its noise, a :class:`ReleasedVector`) and ``.quantiles`` (per
    quantile: the aggregate, its first threshold count in the plan, its L∞ sensitivity per unit, its
    noisy-min selection and that selection's scale).

    ``.context`` is the Context it is charged to, ``.budget`` what it was priced at and ``.share`` the
    index of the Context's budget share that is (None for ``query(privacy_loss=...)``), and ``.steps`` the
    builder calls before ``agg``: with ``.aggs`` they are what ``dp.to_json`` stores
    (:mod:`dpcompose.tables._stored`).
    """

    def __init__(
        self,
        ctx: Context,
        plan: Plan,
        aggs: tuple[Agg, ...],
        budget: Any,
        kinds: dict[str, str],
        share: int | None = None,
        selection: str = "laplace",
        steps: tuple[tuple[Any, ...], ...] = (),
    ) -> None:
        self._ctx = ctx
        self.context = ctx  # the Context it is charged to
        self.steps = steps  # the builder calls before agg (what dp.to_json stores, with aggs and budget)
        self.share = share  # the Context's share the budget is (None: stated with query(privacy_loss=...))
        self._kinds = kinds  # every column's kind, derived ones included (the results' dtypes)
        self.plan = plan
        self.aggs = aggs
        self._released = _Released()  # the noisy vectors behind each released frame still alive
        self.budget = budget
        measure = ctx.measure
        released: list[ReleasedVector] = []
        r = plan.max_rows if plan.max_rows is not None else 1
        self.unknown_keys = plan.keys is None and bool(plan.by)
        self._gauss_sel: GaussianSelection | None = None  # selection="gaussian": the whole query's ρ, δ split
        if self.unknown_keys:
            check_selection(measure, budget)
            if selection == "gaussian":
                self._gauss_sel = GaussianSelection.of(budget)
        gauss = isinstance(measure, ZCDP) or self._gauss_sel is not None  # discrete Gaussian, costs in ρ
        rho_total = self._gauss_sel.rho if self._gauss_sel is not None else budget
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
                if gauss:
                    rho = Fraction(rho_total) / share
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
            released.append(ReleasedVector(what, maybe, sens, noise, scale, label))
        self.vectors = tuple(released)
        # each quantile: report-noisy-min over integer scores, L∞ sensitivity R·max(a, b − a) per person
        self.quantiles: list[tuple[Agg, int, int, Measurement[Any, Any, Any, Any], Fraction]] = []
        start = 0
        for agg in quantiles:
            assert agg.alpha is not None
            a_num, b_den = agg.alpha.numerator, agg.alpha.denominator
            sens = r * max(a_num, b_den - a_num)
            if gauss:
                eps_q = Fraction(sqrt_down(2 * Fraction(rho_total) / share))  # pure ε, ε²/2 <= its ρ share
                if eps_q <= 0:
                    raise InvalidParameter(f"the quantile's share of ρ = {rho_total} is too small to use")
            else:
                eps_q = (budget[0] if isinstance(measure, ApproxDP) else Fraction(budget)) / share
            scale = 2 * Fraction(sens) / eps_q  # non-monotonic scores: ε = 2·Δ∞/scale
            m = len(agg.candidates)
            select = make_report_noisy_max(
                VectorDomain(AtomDomain(int), size=m), LInfDistance(), scale, optimize="min"
            )
            self.quantiles.append((agg, start, sens, select, scale))
            start += 2 * m
        self.threshold: int | None = None
        if self.unknown_keys:
            # per person (or row): at most l0 keys, at most l∞ rows in one key, at most l1 rows in all
            l_inf = r
            l0 = min(plan.max_groups, r) if plan.max_groups is not None else r
            self._l = (l0, r, l_inf)
            count_scale = released[0].scale
            if self._gauss_sel is not None:  # the δ split: see dpcompose.tables._selection
                g = self._gauss_sel
                self.threshold = partition_threshold(count_scale, g.threshold_delta, self._l, "gaussian")
                self._selection = make_gaussian_threshold(
                    _KEYS_DOMAIN, L01InfDistance(), count_scale, self.threshold, noise_delta=g.noise_delta
                )
            else:
                self.threshold = partition_threshold(count_scale, budget[1], d_in=self._l)
                self._selection = make_laplace_threshold(
                    _KEYS_DOMAIN, L01InfDistance(), count_scale, self.threshold
                )
        self.measurement = self._build()
        if self._gauss_sel is not None:
            self._gauss_sel.check(self.measurement.map(1), budget)

    def _build(self) -> Measurement[Any, Any, Any, Any]:
        ctx, plan, released = self._ctx, self.plan, self.vectors
        out_measure: Measure[Any] = ZCDP() if isinstance(ctx.measure, ZCDP) else PureDP()
        unknown, gaussian = self.unknown_keys, self._gauss_sel
        in_rho = isinstance(ctx.measure, ZCDP) or gaussian is not None
        gauss_note = ", Gaussian" if gaussian is not None else ""
        if unknown:
            out_measure = ApproxDP()

        def privacy_map(d_in: int) -> Any:
            costs = [rel.noise.map(d_in * rel.sensitivity) for rel in released]
            for _, _, sens, select, _ in self.quantiles:
                eps = select.map(Fraction(d_in * sens))
                costs.append(eps * eps / 2 if in_rho else eps)  # ε-DP is ε²/2-zCDP
            if not unknown:
                return out_measure.compose(costs)
            # each key's release (noisy count, noisy sums) happens only when its noisy count reaches the
            # threshold: keys in both neighbours cost their noise's ε (basic composition over the released
            # vectors), a key in one neighbour only costs its release probability, the δ of
            # make_laplace_threshold at (l0, l1, l∞)·d_in (Korolova et al. 2009; Wilson et al. 2020)
            l0, l1, li = self._l
            if gaussian is not None:  # ρ of all vectors, then (ε, δ) (dpcompose.tables._selection)
                assert self.threshold is not None
                sigma = released[0].scale
                at = (l0 * d_in, Fraction(l1 * d_in), Fraction(li * d_in))
                return gaussian.cost(costs, gaussian_threshold_delta(sigma, self.threshold, at))
            delta = self._selection.map((l0 * d_in, Fraction(l1 * d_in), Fraction(li * d_in)))[1]
            return PureDP().compose(costs), delta

        def run(data: Any) -> Any:
            engine = engine_for(data)
            assert engine is not None  # the domain check ran first
            found = run_job(engine, data, plan)  # a failure shows none of its text (it may quote data)
            return self._finish(found.keys, found.counts, found.sums, found.distincts, found.belows)

        built: Measurement[Any, Any, Any, Any] = Measurement(
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
                    *((("keys", f"selected, threshold {self.threshold}{gauss_note}"),) if unknown else ()),
                ),
                source="stable filter/caps (McSherry 2009) then discrete noise per released vector"
                + ("; keys: partition selection (Korolova et al. 2009)" if unknown else ""),
                theorem="basic composition of the released vectors"
                + ("; zCDP composition, CKS 2020 Cor 13 to (ε, δ)" if gaussian else ""),
                children=tuple(
                    shown_in_result_units(rel.noise, rel.spec, rel.scale, rel.label) for rel in released
                )
                + tuple(q[3] for q in self.quantiles),
                child_inputs=lambda d: (
                    tuple(d * rel.sensitivity for rel in released)
                    + tuple(Fraction(d * q[2]) for q in self.quantiles)
                ),
            ),
        )
        if isinstance(ctx.measure, ApproxDP) and isinstance(out_measure, PureDP):
            # known keys: ε-DP, reported in the Context's own measure as (ε, 0) (ε-DP is (ε, 0)-DP by
            # definition), so that every query of an ApproxDP Context maps to an (ε, δ) pair
            return make_pure_to_approx(built)
        return built

    def _finish(
        self,
        keys: tuple[tuple[Any, ...], ...],
        counts: np.ndarray,
        sums: list[np.ndarray],
        distincts: list[np.ndarray],
        belows: list[np.ndarray],
    ) -> Any:
        import polars as pl  # optional dependency (polars): the results are a Polars DataFrame

        exact_of: dict[tuple[Any, ...], np.ndarray] = {_COUNT: counts}
        exact_of.update({("distinct", c): d for c, d in zip(self.plan.distinct, distincts, strict=True)})
        exact_of.update({spec.key: v for spec, v in zip(self.plan.sums, sums, strict=True)})
        noisy = {rel.what: rel.noise(exact_of[rel.what]) for rel in self.vectors}
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
        for agg, start, _, select, _ in self.quantiles:
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
                total = noisy[spec.key].astype(np.float64) * math.ldexp(1.0, unit_exponent(spec))
            if agg.op == "variance":
                sq = specs[sum_key(agg.column or "", square=True)]
                n = np.maximum(noisy[_COUNT], 2).astype(np.float64)
                with np.errstate(over="ignore", invalid="ignore"):
                    squares = noisy[sq.key].astype(np.float64) * math.ldexp(1.0, unit_exponent(sq))
                    var = np.maximum(squares - total * total / n, 0.0) / (n - 1)
                var = np.minimum(var, variance_cap(spec, n))  # Popoviciu at the n used (post-processing)
                columns[agg.name] = pl.Series(agg.name, var, dtype=pl.Float64)
                continue
            if agg.op == "sum":
                if spec.kind == "int" and spec.k == 0:
                    columns[agg.name] = pl.Series(agg.name, noisy[spec.key], dtype=pl.Int64)
                else:
                    columns[agg.name] = pl.Series(agg.name, total, dtype=pl.Float64)
            else:  # clipped to the bounds, where the mean of the clamped values lies (post-processing)
                n = np.maximum(noisy[_COUNT], 1).astype(np.float64)
                mean = np.clip(total / n, float(spec.lo), float(spec.hi))
                columns[agg.name] = pl.Series(agg.name, mean, dtype=pl.Float64)
        frame = pl.DataFrame(columns)
        self._released.add(frame, noisy)  # the noisy vectors (public) behind intervals(frame)
        return frame

    def summarize(self, alpha: float = 0.05, rows: int | Sequence[int] = (100, 1000, 10000)) -> Summary:
        """What the query costs and how accurate each released statistic is, before release (nothing is
        read from the data).

        ``.rows``: per released vector, the noise and the half-width ``a`` with ``P(|noise| > a) <= alpha``
        in the result's units. The vectors are named for the user: ``count``, ``x_sum`` (also behind a
        mean or a variance of ``x``), ``x_sum_of_squares`` (a variance's third vector, in units of ``x²``),
        ``x_count_distinct``, and each quantile by its result column: a count's or a sum's interval is its
        release ± ``a`` (a sum's is for the values on the column's grid ``2**k``, within ``n·2**k/2`` of the
        clamped values' sum). Discrete Laplace with scale t: ``P(|Z| > a) = 2·p**(a+1)/(1+p)``,
        ``p = e**(-1/t)`` (exact). Discrete Gaussian with σ: the least ``a`` at which an upper bound (by
        sums and integrals) on the exact tail ``2·Σ_{z>a} f(z) / Σ_z f(z)``, ``f(z) = e**(-z²/(2σ²))``
        (Canonne–Kamath–Steinke 2020), is at most ``alpha``
        (:func:`dpcompose.accuracy.discrete_gaussian_scale_to_accuracy`). A quantile's row is in records:
        with probability ``>= 1 - alpha`` (a union bound over its ``m`` candidates' noises) the chosen
        candidate ``c`` has ``|(1 − q)·L(c) − q·G(c)|`` within that many records of the best candidate's
        (``L``, ``G``: the values below and above ``c``), so at most ``q·n + s* + a`` values lie below it and
        ``(1 − q)·n + s* + a`` above (``s*`` the best candidate's score).

        ``.statistics``: per mean and variance, the half-width at most (half the width) of the certified
        interval :meth:`intervals` will give for a key of ``n`` rows, for each ``n`` in ``rows``, on an
        event of probability ``>= 1 - alpha`` and whatever the values are — a union bound over the
        statistic's noisy vectors, each given ``alpha/c``, and the clamp (the module
        ``dpcompose.tables._intervals`` states the proof).

        Args:
            alpha: the level, in (0, 1).
            rows: the numbers of rows per key to show the means' and variances' widths at (public guesses;
                the data is not read).

        Raises:
            InvalidParameter: ``alpha`` outside (0, 1), or ``rows`` not positive integers.
        """
        check_level(alpha)
        at = _row_counts(rows)
        lines = []
        for rel in self.vectors:
            unit = 1.0 if rel.spec is None else math.ldexp(1.0, unit_exponent(rel.spec))
            t = float(rel.scale)
            dist = "discrete Gaussian" if self._gaussian else "discrete Laplace"
            lines.append((rel.label, dist, t * unit, self._half(rel, alpha) * unit))
        for agg, _, _, _, scale in self.quantiles:
            assert agg.alpha is not None
            b_den = agg.alpha.denominator
            lines.append(
                (agg.name, "noisy min, d. Laplace", float(scale) / b_den, self._rank_slack(agg, alpha))
            )
        stats = []
        for agg in self.aggs:
            if agg.op == "mean":
                spec, a_n, a_s = self._mean_parts(agg, alpha)
                widths = tuple(mean_half_width_at(n, a_n, a_s, spec) for n in at)
                stats.append((agg.name, "mean of the clamped values (n >= 1)", widths))
            elif agg.op == "variance":
                spec, squares, a_n, a_s, a_q = self._variance_parts(agg, alpha)
                widths = tuple(variance_half_width_at(n, a_n, a_s, a_q, spec, squares) for n in at)
                stats.append((agg.name, "sample variance of the clamped values (n >= 2)", widths))
        cost = self.measurement.output_measure.display(self.measurement.map(1))
        return Summary(cost, alpha, tuple(lines), tuple(stats), at)

    @property
    def _gaussian(self) -> bool:
        """The query's vectors carry discrete Gaussian noise (a zCDP Context, or Gaussian selection)."""
        return isinstance(self._ctx.measure, ZCDP) or self._gauss_sel is not None

    def _vector(self, what: tuple[Any, ...]) -> ReleasedVector:
        return next(rel for rel in self.vectors if rel.what == what)

    def _half(self, rel: ReleasedVector, alpha: float) -> int:
        """The vector's half-width at level ``alpha``, in its integer units."""
        return component_half_width(rel.scale, self._gaussian, alpha)

    def _mean_parts(self, agg: Agg, alpha: float) -> tuple[SumSpec, int, int]:
        """A mean's sum and the half-widths of its count and sum at ``alpha/2`` each (the union bound)."""
        rel, count = self._vector(sum_key(agg.column or "")), self._vector(_COUNT)
        assert rel.spec is not None
        a_n, a_s = (self._half(v, split_alpha(alpha, 2)) for v in (count, rel))
        return rel.spec, a_n, a_s

    def _variance_parts(self, agg: Agg, alpha: float) -> tuple[SumSpec, SumSpec, int, int, int]:
        """A variance's sum and sum of squares, and the half-widths of its count, sum and sum of squares at
        ``alpha/3`` each (the union bound)."""
        rel = self._vector(sum_key(agg.column or ""))
        sq = self._vector(sum_key(agg.column or "", square=True))
        a3 = split_alpha(alpha, 3)
        a_n, a_s, a_q = (self._half(v, a3) for v in (self._vector(_COUNT), rel, sq))
        assert rel.spec is not None
        assert sq.spec is not None
        return rel.spec, sq.spec, a_n, a_s, a_q

    def _rank_slack(self, agg: Agg, alpha: float) -> float:
        """A quantile's excess rank error in records: all ``m`` noises within ``a`` (``alpha/m`` each), so
        the chosen score is within ``2a`` of the least; scores are ``b·|(1 − q)L − qG|``: ``2a/b``."""
        _, _, _, _, scale = next(q for q in self.quantiles if q[0] == agg)
        assert agg.alpha is not None
        a = discrete_laplace_scale_to_accuracy(scale, split_alpha(alpha, len(agg.candidates)))
        return 2 * a / agg.alpha.denominator

    def intervals(self, result: Any, alpha: float = 0.05) -> Any:
        """The interval of every released statistic of ``result`` (a frame this query's :meth:`release`
        returned — the same object): a Polars DataFrame with the group-by columns and, per aggregate
        ``x``, ``x_lo`` and ``x_hi``, or for a quantile ``x_rank_slack``. Post-processing of the release:
        nothing is charged or read from the data.

        Per key and per statistic, with probability at least ``1 - alpha`` over the noise:

        * a count or distinct count: its true value lies in ``[release − a, release + a]`` (and ``>= 0``);
        * a sum: the true sum of the values on the column's grid ``2**k`` (within ``n·2**k/2`` of the
          clamped values' sum; equal for int columns with bounds below ``2**31``) lies in ``[release ± a]``;
        * a mean: the true mean of the clamped values lies in ``[x_lo, x_hi]`` (keys with ``n >= 1``);
        * a variance: the true sample variance of the clamped values lies in ``[x_lo, x_hi]`` (keys with
          ``n >= 2``);
        * a quantile: the released candidate ``c`` has at most ``q·n + s* + x_rank_slack`` values below it
          and ``(1 − q)·n + s* + x_rank_slack`` above it (``s*``: the best candidate's
          ``|(1 − q)L − qG|``), a statement in ranks.

        Means and variances use the union bound over their noisy vectors (the module
        ``dpcompose.tables._intervals`` states the proofs); the statements hold for each statistic and key on
        its own, not for all at once. With unknown keys (``keys=None``) they hold for a key's release and
        coverage together (the probability that a key is released with its truth outside is at most
        ``alpha``), not conditionally on the key being released.

        Raises:
            InvalidParameter: ``result`` is not a frame this query released, or a bad ``alpha``.
        """
        import polars as pl  # optional dependency (polars): the intervals are a Polars DataFrame

        check_level(alpha)
        noisy = self._released.get(result)
        if noisy is None:
            raise InvalidParameter(
                "result must be a frame this query's release() returned (the very object: the intervals "
                "are computed from the noisy vectors kept with it)"
            )
        columns: dict[str, Any] = {name: result.get_column(name) for name in self.plan.by}
        as_float = {what: values.astype(np.float64) for what, values in noisy.items()}
        for agg in self.aggs:
            name = agg.name
            if agg.op in ("count", "count_distinct"):
                what = _COUNT if agg.op == "count" else ("distinct", agg.column)
                a = self._half(self._vector(what), alpha)
                columns[f"{name}_lo"] = pl.Series(np.maximum(noisy[what] - a, 0), dtype=pl.Int64)
                columns[f"{name}_hi"] = pl.Series(noisy[what] + a, dtype=pl.Int64)
            elif agg.op == "sum":
                rel = self._vector(sum_key(agg.column or ""))
                assert rel.spec is not None
                a = self._half(rel, alpha)
                if rel.spec.kind == "int" and rel.spec.k == 0:
                    columns[f"{name}_lo"] = pl.Series(noisy[rel.what] - a, dtype=pl.Int64)
                    columns[f"{name}_hi"] = pl.Series(noisy[rel.what] + a, dtype=pl.Int64)
                else:
                    unit = math.ldexp(1.0, rel.spec.k)
                    with np.errstate(over="ignore", invalid="ignore"):
                        lo = (as_float[rel.what] - a) * unit
                        hi = (as_float[rel.what] + a) * unit
                    columns[f"{name}_lo"] = pl.Series(np.nextafter(lo, -np.inf), dtype=pl.Float64)
                    columns[f"{name}_hi"] = pl.Series(np.nextafter(hi, np.inf), dtype=pl.Float64)
            elif agg.op == "mean":
                spec, a_n, a_s = self._mean_parts(agg, alpha)
                lo, hi = mean_bounds(as_float[_COUNT], as_float[spec.key], a_n, a_s, spec)
                columns[f"{name}_lo"], columns[f"{name}_hi"] = pl.Series(lo), pl.Series(hi)
            elif agg.op == "variance":
                spec, squares, a_n, a_s, a_q = self._variance_parts(agg, alpha)
                lo, hi = variance_bounds(
                    as_float[_COUNT], as_float[spec.key], as_float[squares.key], a_n, a_s, a_q, spec, squares
                )
                columns[f"{name}_lo"], columns[f"{name}_hi"] = pl.Series(lo), pl.Series(hi)
            else:  # quantile
                slack = self._rank_slack(agg, alpha)
                columns[f"{name}_rank_slack"] = pl.Series([slack] * result.height, dtype=pl.Float64)
        return pl.DataFrame(columns)

    def release(self) -> Any:
        """Charge the Context's budget (refused with BudgetExceeded before anything runs) and run the query;
        returns a Polars DataFrame of noisy results, one row per key. A dead engine (a stopped Spark
        session) is refused with EngineUnavailable before the charge, taking no share."""
        return self._ctx.charge_and_run(self.measurement, self.budget, self.share)


class _Released:
    """The noisy vectors behind each frame a query released, for as long as the frame lives: entries are
    keyed by the frame's ``id`` (a Polars frame is not hashable) with a weak reference to it, and each is
    removed when its frame is collected, so a query released again and again holds only the frames its
    caller still holds. (A finalizer runs when its frame is freed, before that ``id`` can be reused.)"""

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref[Any], dict[tuple[Any, ...], np.ndarray]]] = {}

    def add(self, frame: Any, noisy: dict[tuple[Any, ...], np.ndarray]) -> None:
        key = id(frame)
        self._entries[key] = (weakref.ref(frame), noisy)
        weakref.finalize(frame, self._entries.pop, key, None)  # holds the dict, not the query or frame

    def get(self, frame: object) -> dict[tuple[Any, ...], np.ndarray] | None:
        """The noisy vectors behind ``frame`` (the very object released), or None."""
        entry = self._entries.get(id(frame))
        return entry[1] if entry is not None and entry[0]() is frame else None

    def __len__(self) -> int:
        return len(self._entries)


def _row_counts(rows: object) -> tuple[int, ...]:
    """``summarize``'s ``rows``: one positive int or a non-empty list of them."""
    if isinstance(rows, np.integer | np.ndarray):
        rows = rows.tolist()
    values = [rows] if isinstance(rows, int) and not isinstance(rows, bool) else rows
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
        raise InvalidParameter(f"rows={rows!r} must be a positive int or a list of them")
    values = [v.item() if isinstance(v, np.generic) else v for v in values]
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int) or not 0 < v < 1 << 53:
            raise InvalidParameter(f"rows={rows!r}: {v!r} must be a positive int (rows per key)")
    return tuple(values)


@dataclass(frozen=True)
class Summary:
    """What a query costs and how accurate it is, before release: ``rows`` per released vector
    ``(vector, noise, scale, accuracy)`` in result units, and ``statistics`` per mean and variance
    ``(name, what the interval is for, half-widths at the ``rows_per_key`` row counts)``."""

    cost: str
    alpha: float
    rows: tuple[tuple[str, str, float, float], ...]  # (vector, noise, scale, accuracy) in result units
    statistics: tuple[tuple[str, str, tuple[float, ...]], ...] = ()
    rows_per_key: tuple[int, ...] = ()

    def __repr__(self) -> str:
        w = max([20, *(len(r[0]) for r in self.rows)])  # columns stay aligned for long names
        d = max([18, *(len(r[1]) for r in self.rows)])
        lines = [f"cost: {self.cost}", f"{'released':<{w}} {'noise':<{d}} {'scale':>12} {'accuracy':>12}"]
        for what, dist, scale, acc in self.rows:
            lines.append(f"{what:<{w}} {dist:<{d}} {scale:>12.4g} {acc:>12.4g}")
        lines.append(f"(accuracy: |noise| <= value with probability >= {1 - self.alpha:g})")
        if self.statistics:
            w = max([20, *(len(s[0]) for s in self.statistics)])
            d = max(len(s[1]) for s in self.statistics)
            head = "".join(f" {'n=' + str(n):>10}" for n in self.rows_per_key)
            lines.append(f"{'statistic':<{w}} {'certified interval for the true':<{d}}{head}")
            for name, what, widths in self.statistics:
                lines.append(
                    f"{name:<{w}} {what:<{d}}" + "".join(f" {'±' + format(x, '.4g'):>10}" for x in widths)
                )
            lines.append(
                f"(± at most, for a key of n rows, with probability >= {1 - self.alpha:g}: "
                "query.intervals(result) gives the interval)"
            )
        return "\n".join(lines)
