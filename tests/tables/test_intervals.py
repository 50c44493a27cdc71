"""The intervals of a table query's statistics: ``summarize()`` before release, ``intervals(result)`` after.

Coverage is measured by simulation with seeded noise (the catalogue's samplers driven by a numpy
Generator, their reproducible path) added to the exact aggregates of the query's own plan, with the
query's own scales, and compared with a one-sided binomial bound: with ``RUNS`` runs at level ``1 − α`` the
count of covered runs must reach the ``1e-6`` quantile of Binomial(RUNS, 1 − α) — a coverage below
``1 − α`` by a few points fails, and the seeds make each run the same.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from scipy.stats import binom

import dpcompose as dp
from dpcompose.tables._intervals import (
    component_half_width,
    mean_bounds,
    mean_half_width_at,
    split_alpha,
    variance_bounds,
    variance_half_width_at,
)
from dpcompose.tables._polars import PolarsEngine

pl = pytest.importorskip("polars")

RUNS = 2000
ALPHA = 0.05
NEED = int(binom.ppf(1e-6, RUNS, 1 - ALPHA))  # about 1853 of 2000: covered runs needed


def _people(n: int, seed: int) -> Any:
    rng = np.random.default_rng(seed)
    return pl.DataFrame({
        "user": np.arange(n),
        "g": rng.choice(["a", "b"], n, p=[0.8, 0.2]),
        "age": rng.normal(40, 6, n).round().astype(np.int64),  # variance about 36 (issue 35's 35.15)
        "income": rng.exponential(60.0, n),  # some beyond the bound: the clamp
    })  # fmt: skip


SCHEMA = {
    "user": dp.Column(int),
    "g": dp.Column(str),
    "age": dp.Column(int, bounds=(0, 120)),
    "income": dp.Column(float, bounds=(0.0, 200.0)),
}


def _noisy(
    q: Any, exact: dict[tuple[Any, ...], np.ndarray], rng: np.random.Generator, gaussian: bool = False
) -> dict[Any, Any]:
    """``RUNS`` noisy copies of each released vector, with the query's noise and scale, seeded."""
    out = {}
    for rel in q.vectors:
        ints = dp.VectorDomain(dp.AtomDomain(int))
        if gaussian:
            noise = dp.m.make_discrete_gaussian(ints, dp.L2Distance(), rel.scale, rng=rng)
        else:
            noise = dp.m.make_discrete_laplace(ints, dp.L1Distance(), rel.scale, rng=rng)
        # one release of the vector tiled RUNS times: the same independent noise per entry and run as RUNS
        # releases of the vector (the mechanism noises each entry independently), in one call
        keys = len(exact[rel.what])
        out[rel.what] = noise(np.tile(exact[rel.what], RUNS)).reshape(RUNS, keys)  # (RUNS, keys)
    return out


def _exact(q: Any, df: Any) -> dict[tuple[Any, ...], np.ndarray]:
    found = PolarsEngine().aggregate(df, q.plan)
    exact: dict[tuple[Any, ...], np.ndarray] = {("count",): found.counts}
    exact.update({s.key: v for s, v in zip(q.plan.sums, found.sums, strict=True)})
    return exact


def _truth(df: Any, column: str, lo: float, hi: float) -> tuple[dict[str, float], dict[str, float]]:
    """Per key, the mean and the sample variance of the clamped values, exactly."""
    means, variances = {}, {}
    for key in ("a", "b"):
        xs = [Fraction(min(max(v, lo), hi)) for v in df.filter(pl.col("g") == key)[column].to_list()]
        n = len(xs)
        mean = sum(xs, Fraction(0)) / n
        means[key] = float(mean)
        variances[key] = float(sum(((x - mean) ** 2 for x in xs), Fraction(0)) / (n - 1))
    return means, variances


def _vector(q: Any, label: str) -> Any:
    return next(rel for rel in q.vectors if rel.label == label)


@pytest.mark.parametrize(
    ("measure", "loss", "column"),
    [(dp.PureDP(), 1.0, "age"), (dp.PureDP(), 1.0, "income"), (dp.ZCDP(), 0.5, "age")],
)
def test_mean_and_variance_intervals_cover_at_least_one_minus_alpha(
    measure: Any, loss: float, column: str
) -> None:
    """Issue 35's case (a variance of about 35 at ε = 1): the certified intervals cover the true clamped
    mean and variance in at least 1 − α of 2000 seeded runs, per key, and the pre-release half-width
    ``summarize()`` states bounds the interval's in at least 1 − α of them."""
    df = _people(3000, seed=1)
    ctx = dp.Context(df, SCHEMA, privacy_loss=loss, measure=measure, split_evenly_over=1)
    q = ctx.query().group_by("g", keys=["a", "b"]).agg(dp.tables.mean(column), dp.tables.variance(column))
    summary = q.summarize(rows=[int(n) for n in _exact(q, df)[("count",)]])
    widths = {name: ws for name, _, ws in summary.statistics}
    gaussian = isinstance(measure, dp.ZCDP)
    noisy = _noisy(q, _exact(q, df), np.random.default_rng(35), gaussian)
    count, total = _vector(q, "count"), _vector(q, f"{column}_sum")
    squares = _vector(q, f"{column}_sum_of_squares")
    a2 = [component_half_width(v.scale, gaussian, split_alpha(ALPHA, 2)) for v in (count, total)]
    a3 = [component_half_width(v.scale, gaussian, split_alpha(ALPHA, 3)) for v in (count, total, squares)]
    c, s, sq = (noisy[v.what].astype(np.float64) for v in (count, total, squares))
    m_lo, m_hi = mean_bounds(c, s, *a2, total.spec)
    v_lo, v_hi = variance_bounds(c, s, sq, *a3, total.spec, squares.spec)
    lo, hi = SCHEMA[column].bounds  # type: ignore[misc]
    means, variances = _truth(df, column, lo, hi)
    for j, key in enumerate(("a", "b")):
        covered_mean = int(((m_lo[:, j] <= means[key]) & (means[key] <= m_hi[:, j])).sum())
        covered_var = int(((v_lo[:, j] <= variances[key]) & (variances[key] <= v_hi[:, j])).sum())
        assert covered_mean >= NEED, (key, covered_mean)
        assert covered_var >= NEED, (key, covered_var)
        within = int(((m_hi[:, j] - m_lo[:, j]) / 2 <= widths[f"{column}_mean"][j]).sum())
        assert within >= NEED, (key, within)
        within = int(((v_hi[:, j] - v_lo[:, j]) / 2 <= widths[f"{column}_variance"][j]).sum())
        assert within >= NEED, (key, within)
    # not vacuous: at 2400 rows the mean is pinned far tighter than its clamp
    assert float(np.median(m_hi[:, 0] - m_lo[:, 0])) < (hi - lo) / 20


def test_a_too_narrow_interval_is_caught_by_the_same_check() -> None:
    """The check can fail: the same construction with each component's half-width at level 0.3 (an
    interval claimed at 95% but built for about 50%) covers too rarely, and the binomial bound refuses it."""
    df = _people(3000, seed=2)
    ctx = dp.Context(df, SCHEMA, privacy_loss=0.5, split_evenly_over=1)
    q = ctx.query().group_by("g", keys=["a", "b"]).agg(dp.tables.mean("income"))
    noisy = _noisy(q, _exact(q, df), np.random.default_rng(7))
    count, total = _vector(q, "count"), _vector(q, "income_sum")
    c, s = (noisy[v.what].astype(np.float64) for v in (count, total))
    means, _ = _truth(df, "income", 0.0, 200.0)
    narrow = [component_half_width(v.scale, False, 0.3) for v in (count, total)]
    lo, hi = mean_bounds(c, s, *narrow, total.spec)
    assert int(((lo[:, 1] <= means["b"]) & (means["b"] <= hi[:, 1])).sum()) < NEED
    a2 = [component_half_width(v.scale, False, split_alpha(ALPHA, 2)) for v in (count, total)]
    lo, hi = mean_bounds(c, s, *a2, total.spec)
    assert int(((lo[:, 1] <= means["b"]) & (means["b"] <= hi[:, 1])).sum()) >= NEED


def test_quantile_rank_statement_holds() -> None:
    """The chosen candidate's |(1 − q)L − qG| is within the stated slack of the best candidate's, in at
    least 1 − α of 2000 seeded selections."""
    df = _people(500, seed=3)
    ctx = dp.Context(df, SCHEMA, privacy_loss=0.3, split_evenly_over=1)
    cands = list(range(20, 61, 2))
    q = ctx.query().agg(dp.tables.quantile("age", 0.5, cands))
    slack = q.summarize().rows[0][3]
    ages = np.array(df["age"].to_list())
    less = np.array([(ages < c).sum() for c in cands])
    greater = np.array([(ages > c).sum() for c in cands])
    scores = np.abs(less - greater)  # b·|(1 − q)L − qG| with q = 1/2, b = 2
    _, _, _, _, scale = q.quantiles[0]
    select = dp.m.make_report_noisy_max(
        dp.VectorDomain(dp.AtomDomain(int), size=len(cands)), dp.LInfDistance(), scale, optimize="min",
        rng=np.random.default_rng(5),
    )  # fmt: skip
    excess = np.array([(scores[select(scores)] - scores.min()) / 2 for _ in range(RUNS)])
    assert int((excess <= slack).sum()) >= NEED
    assert slack < len(ages) / 10  # a statement about ranks that says something at this size


def test_intervals_of_a_release() -> None:
    """``intervals(result)`` gives every statistic's interval for the released values; at a huge ε they
    hold the true values tightly; a frame the query did not release is refused."""
    df = _people(400, seed=4)
    ctx = dp.Context(df, SCHEMA, privacy_loss=1e4, split_evenly_over=2)
    aggs = (
        dp.tables.count(), dp.tables.sum("age"), dp.tables.sum("income"), dp.tables.mean("income"),
        dp.tables.variance("age"), dp.tables.quantile("age", 0.5, [30, 40, 50]),
        dp.tables.count_distinct("user"),
    )  # fmt: skip
    q = ctx.query().group_by("g", keys=["a", "b"]).agg(*aggs)
    result = q.release()
    iv = q.intervals(result, alpha=1e-9)  # coverage: each statement fails with probability at most alpha
    tight = q.intervals(result)  # widths at the default 0.05 (the 1e-9 intervals contain these)
    assert iv.columns == [
        "g", "count_lo", "count_hi", "age_sum_lo", "age_sum_hi", "income_sum_lo", "income_sum_hi",
        "income_mean_lo", "income_mean_hi", "age_variance_lo", "age_variance_hi",
        "age_quantile_0.5_rank_slack", "user_count_distinct_lo", "user_count_distinct_hi",
    ]  # fmt: skip
    means, _ = _truth(df, "income", 0.0, 200.0)
    _, variances = _truth(df, "age", 0, 120)
    for j, key in enumerate(("a", "b")):
        rows = df.filter(pl.col("g") == key)
        assert iv["count_lo"][j] <= rows.height <= iv["count_hi"][j]
        assert iv["age_sum_lo"][j] <= rows["age"].sum() <= iv["age_sum_hi"][j]
        assert iv["income_mean_lo"][j] <= means[key] <= iv["income_mean_hi"][j]
        assert tight["income_mean_hi"][j] - tight["income_mean_lo"][j] < 0.1
        assert iv["age_variance_lo"][j] <= variances[key] <= iv["age_variance_hi"][j]
        assert tight["age_variance_hi"][j] - tight["age_variance_lo"][j] < 3.0
        assert iv["count_lo"][j] <= result["count"][j] <= iv["count_hi"][j]
    assert q.intervals(result, alpha=0.5)["income_mean_hi"][0] <= iv["income_mean_hi"][0]
    with pytest.raises(dp.InvalidParameter, match="release"):
        q.intervals(result.clone())
    with pytest.raises(dp.InvalidParameter, match="alpha"):
        q.intervals(result, alpha=1.0)
    with pytest.raises(dp.InvalidParameter, match="rows"):
        q.summarize(rows=0)
    with pytest.raises(dp.InvalidParameter, match="rows"):
        q.summarize(rows=[])


def test_summarize_shows_a_variance_width_before_release() -> None:
    """Issue 35: a variance released at ε = 1 came out 41.2 and 46.4 against 35.15 with no warning; now
    ``summarize()`` states the width of its interval for the row counts given, before anything runs, and
    it narrows as the rows grow."""
    ctx = dp.Context(_people(10, seed=5), SCHEMA, privacy_loss=1.0, split_evenly_over=1)
    q = ctx.query().agg(dp.tables.variance("age"))
    summary = q.summarize(rows=[100, 1000, 10000, 100000])
    ((name, what, widths),) = summary.statistics
    assert name == "age_variance" and "variance" in what
    assert widths[0] >= widths[1] > widths[2] > widths[3] > 0
    assert widths[0] <= 120**2 / 4 * 100 / 99  # never past the clamp's Popoviciu bound
    text = repr(summary)
    assert "age_variance" in text and "n=1000" in text and "intervals(result)" in text
    assert mean_half_width_at(1, 3, 3, _vector(q, "age_sum").spec) <= 60  # n = 1: the clamp's half
    sq = _vector(q, "age_sum_of_squares").spec
    assert variance_half_width_at(1, 3, 3, 3, _vector(q, "age_sum").spec, sq) == 120**2 / 4


def test_intervals_with_unknown_keys_follow_the_released_keys() -> None:
    df = pl.DataFrame({"user": np.arange(300), "g": ["x"] * 299 + ["y"], "age": [30] * 300})
    schema = {"user": dp.Column(int), "g": dp.Column(str), "age": dp.Column(int, bounds=(0, 100))}
    ctx = dp.Context(df, schema, measure=dp.ApproxDP(), privacy_loss=(1.0, 1e-6), split_evenly_over=1)
    q = ctx.query().group_by("g", keys=None).agg(dp.tables.mean("age"))
    result = q.release()
    iv = q.intervals(result, alpha=1e-9)  # (each statement fails with probability at most alpha)
    assert iv["g"].to_list() == result["g"].to_list() == ["x"]
    assert iv["age_mean_lo"][0] <= 30 <= iv["age_mean_hi"][0]


def test_intervals_of_an_empty_release_and_of_one_key() -> None:
    """No key released (unknown keys, all below the threshold): an empty frame with every column; no
    group-by: one row, at most the clamp's range (two rows cannot pin a variance down)."""
    df = pl.DataFrame({"user": [1, 2], "g": ["x", "y"], "age": [30, 40]})
    schema = {"user": dp.Column(int), "g": dp.Column(str), "age": dp.Column(int, bounds=(0, 100))}
    ctx = dp.Context(df, schema, measure=dp.ApproxDP(), privacy_loss=(1.0, 1e-6), split_evenly_over=2)
    q = ctx.query().group_by("g", keys=None).agg(dp.tables.mean("age"), dp.tables.variance("age"))
    iv = q.intervals(q.release())
    assert iv.height == 0
    assert iv.columns == ["g", "age_mean_lo", "age_mean_hi", "age_variance_lo", "age_variance_hi"]
    q = ctx.query().agg(dp.tables.mean("age"), dp.tables.variance("age"))
    iv = q.intervals(q.release(), alpha=1e-9)  # unseeded noise: a statement fails w.p. <= alpha
    assert iv.height == 1
    assert 0 <= iv["age_mean_lo"][0] <= 35 <= iv["age_mean_hi"][0] <= 100
    assert (
        0 <= iv["age_variance_lo"][0] <= 50 <= iv["age_variance_hi"][0] <= 100**2 / 2 * (1 + 1e-9)
    )  # outward
    assert q.summarize(rows=np.array([10, 100])).rows_per_key == (10, 100)


def _dgauss_tail(sigma: Fraction, a: int) -> Any:
    """``P(|Z| > a)`` for the discrete Gaussian with ``σ² = sigma²``: mpmath sums to ``±(a + 40σ + 40)``
    (the terms left out are below ``e**-800``)."""
    mpmath = pytest.importorskip("mpmath")
    with mpmath.workdps(40):
        s2 = mpmath.mpf(sigma.numerator) ** 2 / mpmath.mpf(sigma.denominator) ** 2
        top = a + 40 * math.ceil(sigma) + 40

        def f(z: int) -> Any:
            return mpmath.exp(-mpmath.mpf(z * z) / (2 * s2))

        total = 1 + 2 * mpmath.fsum(f(z) for z in range(1, top + 1))
        return 2 * mpmath.fsum(f(z) for z in range(a + 1, top + 1)) / total


@pytest.mark.parametrize(
    "sigma", [Fraction(1, 2), Fraction(3), Fraction(4669, 1000), Fraction(10), Fraction(75)]
)
@pytest.mark.parametrize("alpha", [0.05, split_alpha(0.05, 3), 1e-6])
def test_the_gaussian_half_width_is_the_least_certified_one(sigma: Fraction, alpha: float) -> None:
    """A zCDP table's half-width is the accuracy module's for the discrete Gaussian that runs (σ² = scale²):
    valid (the exact tail at ``a`` is at most α) and the least such ``a`` (the exact tail at ``a − 1`` is
    above α). The σ-sub-Gaussian bound ``⌈σ√(2 ln(2/α))⌉`` gives 28 for σ = 10 at α = 0.05, not 20."""
    a = component_half_width(sigma, True, alpha)
    assert a == dp.accuracy.discrete_gaussian_scale_to_accuracy(sigma, alpha)
    assert _dgauss_tail(sigma, a) <= alpha
    assert a == 0 or _dgauss_tail(sigma, a - 1) > alpha
    if (sigma, alpha) == (Fraction(10), 0.05):
        assert a == 20


@pytest.mark.slow
@pytest.mark.parametrize("sigma", [Fraction(1, 2), Fraction(4669, 1000), Fraction(10), Fraction(2000)])
@pytest.mark.parametrize("alpha", [0.05, 0.01])
def test_the_gaussian_half_width_covers_the_sampler_by_simulation(sigma: Fraction, alpha: float) -> None:
    """Draws of ``make_discrete_gaussian`` (seeded) leave ``[−a, a]`` in at most the ``1 − 1e-6`` quantile
    of Binomial(N, α) draws; at ``a − 1`` (narrower) they leave it more often than α allows (the check can
    fail), except where the two tails are too close to tell apart at this N."""
    n = 400_000
    a = component_half_width(sigma, True, alpha)
    noise = dp.m.make_discrete_gaussian(
        dp.VectorDomain(dp.AtomDomain(int)), dp.L2Distance(), sigma, rng=np.random.default_rng(int(sigma * 7))
    )
    z = np.abs(noise(np.zeros(n, dtype=np.int64)))
    allowed = binom.ppf(1 - 1e-6, n, alpha)
    assert int((z > a).sum()) <= allowed
    if float(_dgauss_tail(sigma, a - 1)) > 1.05 * alpha:
        assert int((z > a - 1).sum()) > binom.ppf(1e-6, n, alpha)
