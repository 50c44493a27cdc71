"""The exponential mechanism (issue 36): its exact law, and its maps against exact Rényi divergences.

The mechanism releases ``i`` with probability ``exp(rᵢ/t)/Σⱼ exp(rⱼ/t)`` for integer grid indices ``r``.
:func:`law` computes that law with mpmath; the privacy tests enumerate neighbouring score vectors and
compare every Rényi divergence ``D_α(P‖P')`` on a grid of orders with ``α·ρ`` of the zCDP map (and the
largest ``|log P/P'|`` with the pure map).
"""

from __future__ import annotations

import itertools
from collections import Counter
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
import pytest
from scipy import stats

import dpcompose as dp
from dpcompose.errors import InvalidParameter
from dpcompose.measurements._exponential import exponential_argmax
from dpcompose.measurements._sampling import SeededSource

mpmath.mp.dps = 40

ORDERS = [1.0001, 1.01, 1.1, 1.5, 2, 3, 5, 10, 32, 100, 1000]


def law(scores: tuple[int, ...], t: Fraction) -> list[Any]:
    """``P[i] ∝ exp(sᵢ/t)``, in mpmath."""
    w = [mpmath.exp(mpmath.mpf(s) / (mpmath.mpf(t.numerator) / t.denominator)) for s in scores]
    total = mpmath.fsum(w)
    return [x / total for x in w]


def renyi(p: list[Any], q: list[Any], alpha: float) -> Any:
    a = mpmath.mpf(alpha)
    return mpmath.log(mpmath.fsum(x**a * y ** (1 - a) for x, y in zip(p, q, strict=True))) / (a - 1)


def worst(m: int, low: int, high: int, t: Fraction, monotonic: bool) -> tuple[Any, Any]:
    """The largest ``D_α/α`` over the grid of orders and the largest ``|log P/P'|``, over score vectors in
    ``[low, high]^m`` and neighbours one apart in L∞ (all moving one way if ``monotonic``)."""
    steps = [(0, 1)] if monotonic else [(-1, 0, 1)]
    worst_rho = mpmath.mpf(0)
    worst_eps = mpmath.mpf(0)
    for s in itertools.product(range(low, high + 1), repeat=m):
        p = law(s, t)
        for delta in itertools.product(*(steps * m)):
            s2 = tuple(a + b for a, b in zip(s, delta, strict=True))
            q = law(s2, t)
            worst_eps = max(worst_eps, max(abs(mpmath.log(x / y)) for x, y in zip(p, q, strict=True)))
            for alpha in ORDERS:
                worst_rho = max(worst_rho, renyi(p, q, alpha) / alpha, renyi(q, p, alpha) / alpha)
    return worst_rho, worst_eps


def _maps(t: Fraction, monotonic: bool, size: int) -> tuple[Fraction, Fraction]:
    scores = dp.VectorDomain(dp.AtomDomain(int), size=size)
    metric = dp.LInfDistance(monotonic=monotonic)
    zcdp = dp.m.make_exponential_mechanism(scores, metric, t, output_measure=dp.ZCDP())
    pure = dp.m.make_exponential_mechanism(scores, metric, t)
    return zcdp.map(Fraction(1)), pure.map(Fraction(1))


@pytest.mark.parametrize(
    ("t", "monotonic"),
    [
        (Fraction(3), False),
        pytest.param(Fraction(1, 2), True),
        pytest.param(Fraction(1, 2), False, marks=pytest.mark.slow),
        pytest.param(Fraction(3), True, marks=pytest.mark.slow),
    ],
)
def test_zcdp_map_bounds_every_exact_renyi_divergence(t: Fraction, monotonic: bool) -> None:
    """``D_α(P‖P') <= α·η²/8`` at every order of the grid, for every neighbouring pair enumerated, and the
    map is nearly attained (a looser map, e.g. ε²/2, would leave a gap of 4×)."""
    rho, eps = _maps(t, monotonic, 2)
    got_rho, got_eps = worst(2, 0, 2, t, monotonic)
    assert got_rho <= mpmath.mpf(rho.numerator) / rho.denominator
    assert got_eps <= mpmath.mpf(eps.numerator) / eps.denominator * (1 + mpmath.mpf(10) ** -30)
    assert rho == eps * eps / 8
    if t == 3:  # small η: the bounded-range bound is tight as η → 0 (two outcomes, loss ±η/2)
        assert got_rho >= 0.85 * float(rho)


@pytest.mark.slow
@pytest.mark.parametrize("monotonic", [False, True])
@pytest.mark.parametrize("t", [Fraction(1, 4), Fraction(1), Fraction(7, 3), Fraction(10)])
def test_zcdp_map_bounds_exact_renyi_three_candidates(t: Fraction, monotonic: bool) -> None:
    rho, eps = _maps(t, monotonic, 3)
    got_rho, got_eps = worst(3, -1, 2, t, monotonic)
    assert got_rho <= mpmath.mpf(rho.numerator) / rho.denominator
    assert got_eps <= mpmath.mpf(eps.numerator) / eps.denominator * (1 + mpmath.mpf(10) ** -30)


def test_float_scores_take_the_report_noisy_max_width() -> None:
    """For float scores η is report noisy max's ε (d_in rounded up to the grid); ρ = η²/8 exactly."""
    scores = dp.VectorDomain(dp.AtomDomain(float), size=4)
    for metric in (dp.LInfDistance(), dp.LInfDistance(monotonic=True)):
        for scale in (1e-3, 0.7, 3.0, 2.0**40):
            rnm = dp.m.make_report_noisy_max(scores, metric, scale)
            em = dp.m.make_exponential_mechanism(scores, metric, scale, "min", output_measure=dp.ZCDP())
            for d in (Fraction(1), Fraction(1, 3), Fraction(5)):
                assert em.map(d) == rnm.map(d) ** 2 / 8
                assert dp.m.make_exponential_mechanism(scores, metric, scale).map(d) == rnm.map(d)


def _chi2(counts: Counter[int], probs: list[float], n: int) -> float:
    observed = [counts.get(i, 0) for i in range(len(probs))]
    return float(stats.chisquare(observed, [p * n for p in probs]).pvalue)


@pytest.mark.parametrize(
    ("r", "units", "n"),
    [
        ([0, 1, 2, 2], Fraction(1), 1000),  # equal scores have equal weight: no tie-break
        pytest.param([0, 1, 2, 2], Fraction(1), 20000, marks=pytest.mark.slow),
        pytest.param([5, 0, 3, 4], Fraction(3, 2), 6000, marks=pytest.mark.slow),
        pytest.param([0, 2**60, 2**60 + 2**59], Fraction(2**60), 6000, marks=pytest.mark.slow),  # Python ints
        pytest.param([-(2**60), 0, 7, 9], Fraction(5, 7), 6000, marks=pytest.mark.slow),  # a huge gap
    ],
)
def test_sampler_draws_the_exponential_law(r: list[int], units: Fraction, n: int) -> None:
    src = SeededSource(11)
    arr = np.array(r, dtype=np.int64)
    counts = Counter(exponential_argmax(arr, units, src) for _ in range(n))
    probs = [float(p) for p in law(tuple(r), units)]
    support = [i for i, p in enumerate(probs) if p > 1e-12]
    assert set(counts) <= set(support)
    kept = [probs[i] for i in support]
    assert _chi2(Counter({j: counts.get(i, 0) for j, i in enumerate(support)}), kept, n) > 1e-4


def test_sampler_takes_the_python_int_path_exactly() -> None:
    """A numerator of 2**60 (past the int64 Bernoulli path): P ∝ (1, e, e^1.5), a short run."""
    n = 500
    src = SeededSource(2)
    r = np.array([0, 2**60, 2**60 + 2**59], dtype=np.int64)
    counts = Counter(exponential_argmax(r, Fraction(2**60), src) for _ in range(n))
    probs = [float(p) for p in law((0, 2**60, 2**60 + 2**59), Fraction(2**60))]
    assert _chi2(counts, probs, n) > 1e-4


def test_measurement_selects_by_optimize_and_reproduces_with_rng() -> None:
    scores = dp.VectorDomain(dp.AtomDomain(float), size=3)
    em = dp.m.make_exponential_mechanism(scores, dp.LInfDistance(), 0.5, "min", rng=np.random.default_rng(3))
    assert em([10.0, -40.0, 30.0]) == 1
    a = dp.m.make_exponential_mechanism(scores, dp.LInfDistance(), 2.0, rng=SeededSource(5))
    b = dp.m.make_exponential_mechanism(scores, dp.LInfDistance(), 2.0, rng=SeededSource(5))
    assert [a([0.0, 1.0, 2.0]) for _ in range(30)] == [b([0.0, 1.0, 2.0]) for _ in range(30)]
    assert em.output_measure == dp.PureDP()
    assert isinstance(em([0.0, 0.0, 0.0]), int)


def test_output_measure_must_be_pure_or_zcdp() -> None:
    scores = dp.VectorDomain(dp.AtomDomain(int), size=2)
    with pytest.raises(InvalidParameter, match="output_measure"):
        dp.m.make_exponential_mechanism(scores, dp.LInfDistance(), 1.0, output_measure=dp.RenyiDP())
    with pytest.raises(InvalidParameter, match="scale"):
        dp.m.make_exponential_mechanism(scores, dp.LInfDistance(), -1.0)


def test_bounded_range_to_zcdp_is_an_eighth_of_the_square() -> None:
    assert dp.accounting.bounded_range_to_zcdp(Fraction(1, 2)) == Fraction(1, 32)
    assert dp.accounting.bounded_range_to_zcdp(0) == 0
    with pytest.raises(InvalidParameter, match="eta"):
        dp.accounting.bounded_range_to_zcdp(-1.0)
