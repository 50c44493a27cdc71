from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

import dpcompose as dp

FLOAT = dp.AtomDomain(float)
VEC = dp.VectorDomain(dp.AtomDomain(float))
ABS = dp.AbsoluteDistance()

scales = st.floats(min_value=1e-6, max_value=1e6, allow_nan=False, allow_infinity=False)
d_ins = st.fractions(min_value=0, max_value=1000)


@given(scales, d_ins, d_ins)
def test_laplace_map_exact_and_monotone(scale: float, a: Fraction, b: Fraction) -> None:
    m = dp.m.make_laplace(FLOAT, ABS, scale=scale)
    lo, hi = sorted((a, b))
    # ε = d_in / (exact binary value of scale), plus at most one grid step g <= scale·2**-30 of rounding
    assert lo / Fraction(scale) <= m.map(lo) <= lo / Fraction(scale) + Fraction(1, 2**30)
    assert m.map(1) == 1 / Fraction(scale) or Fraction(scale) >= 2**31  # integer d_in: exact
    assert m.map(lo) <= m.map(hi)


@given(scales, d_ins, d_ins)
def test_gaussian_map_exact_and_monotone(scale: float, a: Fraction, b: Fraction) -> None:
    m = dp.m.make_gaussian(dp.VectorDomain(dp.AtomDomain(float), size=3), dp.L2Distance(), scale=scale)
    lo, hi = sorted((a, b))
    # the noise used has σ' = ⌈σ/g⌉·g ∈ [σ, σ(1 + 2**-20)]; the rounding adds < √3 grid steps, g <= σ·2**-20
    ideal = lo / Fraction(scale)
    assert ideal**2 / 2 * (1 - Fraction(1, 2**19)) <= m.map(lo) <= (ideal + Fraction(2, 2**20)) ** 2 / 2
    assert m.map(lo) <= m.map(hi)


@given(st.integers(0, 20), st.integers(0, 20), st.floats(0, 10), st.integers(1, 6))
def test_randomized_response_map_monotone(a: int, b: int, eps: float, k: int) -> None:
    dom = dp.CategoricalDomain(range(k))
    m = dp.m.make_randomized_response(dom, dp.DiscreteDistance(), epsilon=eps)
    lo, hi = sorted((a, b))
    assert m.map(lo) <= m.map(hi)
    assert m.map(1) == (Fraction(eps) if k > 1 else 0)


def test_ten_laplace_use_up_budget_exactly() -> None:
    lap = dp.m.make_laplace(FLOAT, ABS, scale=10.0)
    ten = dp.make_sequential(*[lap] * 10)
    assert ten.map(1) == 1
    assert ten.check(1, 1.0)
    assert not dp.make_sequential(*[lap] * 11).check(1, 1.0)


def test_laplace_with_inexact_scale_never_under_reports() -> None:
    m = dp.m.make_laplace(FLOAT, ABS, scale=0.3)
    assert Fraction(0.3) < Fraction(3, 10)  # the float is below 3/10 ...
    assert m.map(1) == 1 / Fraction(0.3) > Fraction(10, 3)  # ... so ε is above 10/3


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf, -math.inf, "1"])
@pytest.mark.parametrize("maker", [dp.m.make_laplace, dp.m.make_gaussian])
def test_noise_scale_rejected_with_value(maker: object, bad: object) -> None:
    with pytest.raises(dp.InvalidParameter, match=r"scale="):
        maker(FLOAT, ABS, scale=bad)  # type: ignore[operator]


@pytest.mark.parametrize("bad", [-0.1, math.nan, math.inf])
def test_rr_epsilon_rejected(bad: float) -> None:
    with pytest.raises(dp.InvalidParameter, match="epsilon="):
        dp.m.make_randomized_response(dp.CategoricalDomain(["a", "b"]), dp.DiscreteDistance(), epsilon=bad)


@pytest.mark.parametrize("bad", [-0.1, 1.0, 1.5, math.nan])
def test_rr_approx_delta_rejected(bad: float) -> None:
    with pytest.raises(dp.InvalidParameter, match="delta="):
        dp.m.make_randomized_response_approx(
            dp.CategoricalDomain([0, 1]), dp.DiscreteDistance(), epsilon=1.0, delta=bad
        )


def test_rr_approx_needs_two_categories() -> None:
    with pytest.raises(dp.DomainMismatch, match="two categories"):
        dp.m.make_randomized_response_approx(
            dp.CategoricalDomain([0, 1, 2]), dp.DiscreteDistance(), epsilon=1.0, delta=0.1
        )


def test_domain_and_metric_pairs_checked() -> None:
    with pytest.raises(dp.DomainMismatch):
        dp.m.make_laplace(VEC, ABS, scale=1.0)
    with pytest.raises(dp.DomainMismatch):
        dp.m.make_gaussian(VEC, dp.L1Distance(), scale=1.0)
    with pytest.raises(dp.DomainMismatch):
        dp.m.make_laplace(dp.AtomDomain(str), ABS, scale=1.0)
    with pytest.raises(dp.DomainMismatch):
        dp.m.make_randomized_response(dp.AtomDomain(int), dp.DiscreteDistance(), epsilon=1.0)


def test_rr_data_outside_domain_runs_nothing() -> None:
    rr = dp.m.make_randomized_response(dp.CategoricalDomain(["a", "b"]), dp.DiscreteDistance(), epsilon=1.0)
    with pytest.raises(dp.DomainMismatch, match="'c'"):
        rr("c")


def test_vector_laplace_shape_and_seeded_reproducibility() -> None:
    m1 = dp.m.make_laplace(VEC, dp.L1Distance(), scale=1.0, rng=np.random.default_rng(5))
    m2 = dp.m.make_laplace(VEC, dp.L1Distance(), scale=1.0, rng=np.random.default_rng(5))
    out1, out2 = m1([1.0, 2.0, 3.0]), m2([1.0, 2.0, 3.0])
    assert out1.shape == (3,) and np.array_equal(out1, out2)


FALSE_ALARM = 1e-6  # each frequency test wrongly fails with probability at most 1e-6


@pytest.mark.parametrize(("k", "eps"), [(2, 0.5), (3, 1.0), (5, 2.0)])
def test_randomized_response_frequencies(k: int, eps: float) -> None:
    """15,000 releases (the slow twin: 60,000); the chi-square false-alarm rate is the same at any count."""
    _check_rr_frequencies(k, eps, 15_000)


@pytest.mark.slow
@pytest.mark.parametrize(("k", "eps"), [(2, 0.5), (3, 1.0), (5, 2.0)])
def test_randomized_response_frequencies_thorough(k: int, eps: float) -> None:
    _check_rr_frequencies(k, eps, 60_000)


def _check_rr_frequencies(k: int, eps: float, n: int) -> None:
    rng = np.random.default_rng(1234 + k)
    rr = dp.m.make_randomized_response(
        dp.CategoricalDomain(range(k)), dp.DiscreteDistance(), epsilon=eps, rng=rng
    )
    counts = Counter(rr(0) for _ in range(n))
    p_keep = math.exp(eps) / (math.exp(eps) + k - 1)
    expected = [n * p_keep] + [n * (1 - p_keep) / (k - 1)] * (k - 1)
    observed = [counts.get(c, 0) for c in range(k)]
    assert stats.chisquare(observed, expected).pvalue > FALSE_ALARM


@pytest.mark.parametrize(("eps", "delta"), [(0.5, 0.1), (1.0, 0.25)])
def test_rr_approx_frequencies(eps: float, delta: float) -> None:
    """15,000 releases (the slow twin: 60,000); the chi-square false-alarm rate is the same at any count."""
    _check_rr_approx_frequencies(eps, delta, 15_000)


@pytest.mark.slow
@pytest.mark.parametrize(("eps", "delta"), [(0.5, 0.1), (1.0, 0.25)])
def test_rr_approx_frequencies_thorough(eps: float, delta: float) -> None:
    _check_rr_approx_frequencies(eps, delta, 60_000)


def _check_rr_approx_frequencies(eps: float, delta: float, n: int) -> None:
    rng = np.random.default_rng(99)
    rr = dp.m.make_randomized_response_approx(
        dp.CategoricalDomain([0, 1]), dp.DiscreteDistance(), epsilon=eps, delta=delta, rng=rng
    )
    counts = Counter(rr(1) for _ in range(n))
    assert counts.get("Iam0", 0) == 0  # probability exactly 0
    e = math.exp(eps)
    probs = {"Iam1": delta, 1: (1 - delta) * e / (1 + e), 0: (1 - delta) / (1 + e)}
    observed = [counts.get(o, 0) for o in probs]
    assert sum(observed) == n
    assert stats.chisquare(observed, [n * p for p in probs.values()]).pvalue > FALSE_ALARM
