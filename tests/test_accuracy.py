"""dp.accuracy: the accuracy bounds against mpmath (exact tails) and against samples of the actual mechanisms
(fixed seeds; binomial checks at 5 standard deviations)."""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpcompose as dp
from dpcompose.measurements._discrete import Grid, release_on_grid
from dpcompose.measurements._sampling import SeededSource, discrete_gaussian_array, discrete_laplace_array
from exact_pairs import gaussian_kernel_sum

A = dp.accuracy


def _mp(x: Fraction | float | int) -> mpmath.mpf:
    q = Fraction(x)
    return mpmath.mpf(q.numerator) / q.denominator


def dlap_tail(t: Fraction | float, k: int) -> mpmath.mpf:
    """P[|Z| > k] for Z ~ DLap(t), exactly (a geometric series)."""
    if k < 0:
        return mpmath.mpf(1)
    r = mpmath.exp(-1 / _mp(t))
    return 2 * r ** (k + 1) / (1 + r)


def dgauss_tail(s2: Fraction, k: int) -> mpmath.mpf:
    """P[|Z| > k] for the discrete Gaussian of parameter σ² (sums with a proven remainder, to 50 digits)."""
    if k < 0:
        return mpmath.mpf(1)
    sigma = mpmath.sqrt(_mp(s2))
    return 2 * gaussian_kernel_sum(k + 1, sigma) / _dgauss_normaliser(s2, mpmath.mp.dps)


@functools.cache
def _dgauss_normaliser(s2: Fraction, dps: int) -> mpmath.mpf:
    """Σ_z exp(−z²/2σ²) over the integers: the same sum for every α and k at one σ², so computed once (at
    σ = 300 it is ~5,000 terms, and each parametrised case asked for it twice)."""
    return 1 + 2 * gaussian_kernel_sum(1, mpmath.sqrt(_mp(s2)))


# --- the discrete formulas ----------------------------------------------------------------------------------


@given(
    t=st.fractions(min_value=Fraction(1, 50), max_value=10**4, max_denominator=1000),
    alpha=st.sampled_from([1e-12, 1e-6, 0.001, 0.01, 0.05, 0.1, 0.5, 0.9]),
)
def test_discrete_laplace_accuracy_is_the_least_certified_k(t: Fraction, alpha: float) -> None:
    k = A.discrete_laplace_scale_to_accuracy(t, alpha)
    assert isinstance(k, int)
    assert dlap_tail(t, k) <= alpha
    assert dlap_tail(t, k - 1) > alpha * (1 - 1e-9)  # least, up to the outward rounding


@pytest.mark.parametrize("sigma", [Fraction(1, 3), 1, 3, Fraction(17, 2), 40, 300])
@pytest.mark.parametrize("alpha", [1e-9, 0.01, 0.05, 0.3])
def test_discrete_gaussian_accuracy_is_the_least_certified_k(sigma: Fraction | int, alpha: float) -> None:
    s2 = Fraction(sigma) ** 2
    k = A.discrete_gaussian_scale_to_accuracy(sigma, alpha)
    assert dgauss_tail(s2, k) <= alpha
    assert dgauss_tail(s2, k - 1) > alpha * (1 - 1e-9)


def test_discrete_gaussian_accuracy_for_large_sigma_uses_integral_bounds_that_hold() -> None:
    sigma = 5000
    k = A.discrete_gaussian_scale_to_accuracy(sigma, 0.05)
    # the discrete Gaussian of large σ is within a relative 1e-10 of the normal tail here
    normal = mpmath.erfc((k + 1) / (sigma * mpmath.sqrt(2)))
    assert normal <= 0.05 * (1 + 1e-6)
    assert k <= float(sigma * mpmath.sqrt(2) * mpmath.erfinv(0.95)) * (1 + 2e-4) + 2


# --- the grid mechanisms ------------------------------------------------------------------------------------


@given(
    scale=st.floats(1e-6, 1e9),
    alpha=st.sampled_from([1e-10, 1e-3, 0.05, 0.5]),
)
@settings(max_examples=40)
def test_laplace_accuracy_covers_the_grid_release_and_the_seeded_path(scale: float, alpha: float) -> None:
    a = A.laplace_scale_to_accuracy(scale, alpha, data="float")
    assert A.laplace_scale_to_accuracy(scale, alpha, data="any") >= a  # "any" covers integer data too
    b = Fraction(scale)
    continuous = _mp(b) * mpmath.log(1 / _mp(alpha))
    assert a >= continuous  # seeded float path: P[|L| > a] = e^{−a/b}
    for integer in (False, True):
        grid = Grid.for_laplace(b, integer)
        # |release − x| <= g|Z| + g/2: the noise must satisfy |Z| <= (a − g/2)/g
        k = math.floor((Fraction(a) - grid.width / 2) / grid.width)
        assert dlap_tail(grid.units, k) <= alpha
    assert a <= continuous * (1 + 1e-8) + float(Grid.for_laplace(b).width) * 2  # and it is tight


@given(
    scale=st.floats(1e-6, 1e9),
    alpha=st.sampled_from([1e-10, 1e-3, 0.05, 0.5]),
)
@settings(max_examples=25)
def test_gaussian_accuracy_covers_the_grid_release_and_the_seeded_path(scale: float, alpha: float) -> None:
    a = A.gaussian_scale_to_accuracy(scale, alpha, data="float")
    assert A.gaussian_scale_to_accuracy(scale, alpha, data="any") >= a  # "any" covers integer data too
    sigma = _mp(Fraction(scale))
    continuous = sigma * mpmath.sqrt(2) * mpmath.erfinv(1 - _mp(alpha))
    assert a >= continuous
    for integer in (False, True):
        grid = Grid.for_gaussian(Fraction(scale), integer)
        k = math.floor((Fraction(a) - grid.width / 2) / grid.width)
        # σ_g >= 2**20 grid units: the normal tail of σ_g is within a relative 1e-6 of the discrete one;
        # P[|Z| > k] <= P[|N| > k] + (2/√(2π)σ) e^{...} bounded through the integral argument: check by
        # the normal tail at k + 1 (the sum from k + 1 is at most f(k + 1) + ∫_{k+1}^∞ f)
        units = _mp(grid.units)
        x = (k + 1) / (units * mpmath.sqrt(2))
        bound = (
            (mpmath.exp(-(x**2)) + units * mpmath.sqrt(mpmath.pi / 2) * mpmath.erfc(x))
            * 2
            / (units * mpmath.sqrt(2 * mpmath.pi) - 1)
        )
        assert bound <= alpha * (1 + 1e-12)
    assert a <= continuous * (1 + 1e-5) + float(Grid.for_gaussian(Fraction(scale)).width) * 2


# --- the inverses -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [1e-6, 0.05, 0.5])
@pytest.mark.parametrize("accuracy", [0.01, 1.0, 30.0, 1e6])
def test_laplace_inverse_round_trips(accuracy: float, alpha: float) -> None:
    b = A.accuracy_to_laplace_scale(accuracy, alpha)
    assert A.laplace_scale_to_accuracy(b, alpha) <= accuracy
    assert A.laplace_scale_to_accuracy(b * (1 + 1e-6), alpha) > accuracy  # nearly the largest
    ideal = accuracy / math.log(1 / alpha)
    assert ideal * (1 - 1e-6) < b <= ideal


@pytest.mark.parametrize("alpha", [1e-6, 0.05, 0.5])
@pytest.mark.parametrize("accuracy", [0.01, 1.0, 30.0, 1e6])
def test_gaussian_inverse_round_trips(accuracy: float, alpha: float) -> None:
    s = A.accuracy_to_gaussian_scale(accuracy, alpha)
    assert A.gaussian_scale_to_accuracy(s, alpha) <= accuracy
    assert A.gaussian_scale_to_accuracy(s * (1 + 1e-5), alpha) > accuracy


@pytest.mark.parametrize("alpha", [1e-6, 0.05, 0.5])
@pytest.mark.parametrize("accuracy", [0, 1, 7.5, 1000])
def test_discrete_inverses_are_nearly_the_largest_scale(accuracy: float, alpha: float) -> None:
    k = math.floor(accuracy)
    t = A.accuracy_to_discrete_laplace_scale(accuracy, alpha)
    assert A.discrete_laplace_scale_to_accuracy(t, alpha) <= k
    assert dlap_tail(t * (1 + 1e-9), k) > alpha * (1 - 1e-9)
    s = A.accuracy_to_discrete_gaussian_scale(accuracy, alpha)
    assert A.discrete_gaussian_scale_to_accuracy(s, alpha) <= k
    if s < 1000:  # below the integral-bound regime, the certified tail is the exact one
        assert dgauss_tail(Fraction(s * (1 + 1e-6)) ** 2, k) > alpha * (1 - 1e-6)


# --- against samples of the actual mechanisms ---------------------------------------------------------------

N = 200_000


def _binomial_ok(misses: int, p: float, n: int = N) -> bool:
    """``misses`` is within 5 standard deviations of ``n·p`` (a fixed seed: deterministic)."""
    return abs(misses - n * p) <= 5 * math.sqrt(n * p * (1 - p)) + 1


def _at_most(misses: int, alpha: float, n: int = N) -> bool:
    return misses <= n * alpha + 5 * math.sqrt(n * alpha * (1 - alpha))


@pytest.mark.parametrize(("scale", "alpha"), [(1, 0.05), (3.5, 0.1), (40, 0.01)])
def test_discrete_laplace_coverage_on_samples(scale: float, alpha: float) -> None:
    m = dp.m.make_discrete_laplace(
        dp.VectorDomain(dp.AtomDomain(int)), dp.L1Distance(), scale, rng=np.random.default_rng(11)
    )
    release = m(np.zeros(N, dtype=np.int64))
    k = A.discrete_laplace_scale_to_accuracy(scale, alpha)
    misses = int((np.abs(release) > k).sum())
    assert _at_most(misses, alpha)
    assert _binomial_ok(misses, float(dlap_tail(Fraction(scale), k)))  # the sampler matches the formula
    lo, hi = A.confidence_interval(release[:5], scale, alpha, "discrete_laplace")
    assert list(hi - lo) == [2 * k] * 5


@pytest.mark.parametrize(("scale", "alpha"), [(1, 0.05), (2.5, 0.1), (30, 0.01)])
def test_discrete_gaussian_coverage_on_samples(scale: float, alpha: float) -> None:
    m = dp.m.make_discrete_gaussian(
        dp.VectorDomain(dp.AtomDomain(int)), dp.L2Distance(), scale, rng=np.random.default_rng(12)
    )
    release = m(np.zeros(N, dtype=np.int64))
    k = A.discrete_gaussian_scale_to_accuracy(scale, alpha)
    misses = int((np.abs(release) > k).sum())
    assert _at_most(misses, alpha)
    assert _binomial_ok(misses, float(dgauss_tail(Fraction(scale) ** 2, k)))


def _grid_release(kind: str, scale: float, x: np.ndarray, seed: int) -> np.ndarray:
    """What the secure make_laplace / make_gaussian release on float data, with a seeded bit source."""
    if kind == "laplace":
        grid = Grid.for_laplace(Fraction(scale))
        noise = discrete_laplace_array(grid.units, x.size, SeededSource(seed))
    else:
        grid = Grid.for_gaussian(Fraction(scale))
        noise = discrete_gaussian_array(grid.units**2, x.size, SeededSource(seed))
    out = release_on_grid(x, True, grid, noise)
    assert isinstance(out, np.ndarray)
    return out


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
@pytest.mark.parametrize(("scale", "alpha"), [(1.0, 0.05), (1e-9, 0.1), (123.456, 0.01)])
def test_float_mechanisms_coverage_on_samples(kind: str, scale: float, alpha: float) -> None:
    x = np.random.default_rng(4).uniform(-10 * scale, 10 * scale, N)  # off-grid data
    to_accuracy = A.laplace_scale_to_accuracy if kind == "laplace" else A.gaussian_scale_to_accuracy
    a = to_accuracy(scale, alpha)
    secure = _grid_release(kind, scale, x, 5)
    lo, hi = A.confidence_interval(secure, scale, alpha, kind)
    assert _at_most(int(((x < lo) | (x > hi)).sum()), alpha)
    assert _at_most(int((np.abs(secure - x) > a).sum()), alpha)
    # the seeded fast path (plain float noise) is covered too
    dom = dp.VectorDomain(dp.AtomDomain(float), size=N)
    if kind == "laplace":
        m = dp.m.make_laplace(dom, dp.L1Distance(), scale, rng=np.random.default_rng(6))
        p = alpha
    else:
        m = dp.m.make_gaussian(dom, dp.L2Distance(), scale, rng=np.random.default_rng(6))
        p = alpha
    seeded = m(x)
    misses = int((np.abs(seeded - x) > a).sum())
    assert _at_most(misses, p)
    assert _binomial_ok(misses, p)  # and it is tight: the miss rate is alpha, not far below


def test_make_laplace_on_integers_is_covered_by_the_float_accuracy() -> None:
    """make_laplace/make_gaussian on int data release integers with discrete noise of the same scale
    (issue 15): laplace_scale_to_accuracy/gaussian_scale_to_accuracy with data="int" or "any" cover that
    release (at least the discrete accuracy, a whole number), and confidence_interval reads an int release
    as one."""
    for scale in (1.0, 3.0, 10.0, 1000.5):
        for alpha in (0.5, 0.05, 1e-6):
            assert dp.accuracy.laplace_scale_to_accuracy(scale, alpha, data="any") >= (
                dp.accuracy.discrete_laplace_scale_to_accuracy(scale, alpha)
            )
            assert dp.accuracy.gaussian_scale_to_accuracy(scale, alpha, data="any") >= (
                dp.accuracy.discrete_gaussian_scale_to_accuracy(scale, alpha)
            )
    assert dp.accuracy.laplace_scale_to_accuracy(10.0, 0.05, data="any") == 30  # discrete Laplace, 10
    assert dp.accuracy.laplace_scale_to_accuracy(10.0, 0.05, data="int") == 30
    assert dp.accuracy.gaussian_scale_to_accuracy(1.0, 0.05, data="int") == 2
    with pytest.raises(dp.InvalidParameter, match="data"):
        dp.accuracy.laplace_scale_to_accuracy(10.0, 0.05, data="str")
    for make in (dp.m.make_laplace, dp.m.make_gaussian):
        m = make(dp.AtomDomain(int), dp.AbsoluteDistance(), 3.0)
        assert isinstance(m(5), int)
    assert A.confidence_interval(100, 10.0, 0.05) == (70, 130)  # an int release: discrete Laplace of 10
    assert A.confidence_interval(np.array([100]), 10.0, 0.05)[0].tolist() == [70]


# --- confidence intervals -----------------------------------------------------------------------------------


def test_confidence_interval_shapes_and_edges() -> None:
    lo, hi = A.confidence_interval(100.0, 10.0, 0.05)
    a = A.laplace_scale_to_accuracy(10.0, 0.05)
    assert lo <= 100.0 - a and hi >= 100.0 + a and hi - lo < 2 * a + 1e-12
    assert A.confidence_interval(7, 2, 0.05, "discrete_laplace") == (1, 13)
    assert A.confidence_interval(math.inf, 1.0, 0.05) == (-math.inf, math.inf)
    big = 1e300
    lo, hi = A.confidence_interval(big, 1.0, 0.05, "gaussian")
    assert lo < big < hi  # widened by the release's last-place rounding
    arr_lo, arr_hi = A.confidence_interval(np.array([0.0, 5.0, -math.inf]), 1.0, 0.05)
    assert arr_lo[0] <= -a / 10 and arr_hi[1] >= 5 + a / 10 and arr_lo[2] == -math.inf
    ints_lo, ints_hi = A.confidence_interval(np.array([2**62, -3]), 1, 0.05, "discrete_gaussian")
    assert ints_lo[0] == 2**62 - 2 and ints_hi[1] == -1
    with pytest.raises(dp.InvalidParameter, match="value"):
        A.confidence_interval(math.nan, 1.0, 0.05)
    with pytest.raises(dp.InvalidParameter, match="mechanism"):
        A.confidence_interval(1.0, 1.0, 0.05, "cauchy")
    with pytest.raises(dp.InvalidParameter, match="alpha"):
        A.laplace_scale_to_accuracy(1.0, 1.0)
    with pytest.raises(dp.InvalidParameter, match="scale"):
        A.gaussian_scale_to_accuracy(-1.0, 0.1)


def test_accuracy_needs_no_scipy() -> None:
    import os
    import subprocess
    import sys

    src = os.path.dirname(os.path.dirname(dp.__file__))  # this checkout's src/, not an installed copy
    code = (
        "import sys, dpcompose as dp; dp.accuracy.gaussian_scale_to_accuracy(2.0, 0.05); "
        "dp.accuracy.accuracy_to_discrete_gaussian_scale(5, 0.05); print('scipy' in sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": src}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == "False"


def test_limits_are_refused_by_name() -> None:
    with pytest.raises(dp.InvalidParameter, match="alpha"):
        A.discrete_gaussian_scale_to_accuracy(1, 1e-301)
    assert A.discrete_gaussian_scale_to_accuracy(1, 1e-300) > 30
    with pytest.raises(dp.InvalidParameter, match="scale"):
        A.discrete_gaussian_scale_to_accuracy(2.0**41, 0.05)
    with pytest.raises(dp.InvalidParameter, match="scale"):
        A.discrete_laplace_scale_to_accuracy(2.0**51, 0.05)
    assert A.confidence_interval(1e308 * 10, 1.0, 0.05) == (-math.inf, math.inf)  # an overflowed float
    # an int release is make_laplace on integer data: exact discrete noise, an exact integer interval
    assert A.confidence_interval(10**400, 1.0, 0.05) == (10**400 - 3, 10**400 + 3)
    assert A.confidence_interval(2**60 + 1, 1.0, 0.05) == (2**60 - 2, 2**60 + 4)
    lo, hi = A.confidence_interval(float(2**60), 1.0, 0.05)  # a float release: half an ulp (128) more
    assert lo < 2**60 - 128 and hi > 2**60 + 128


def test_the_interval_is_read_from_the_measurement_that_released() -> None:
    """confidence_interval needed the scale and the mechanism's name typed by hand and refused the
    measurement itself."""
    ints = dp.VectorDomain(dp.AtomDomain(int))
    sym = dp.SymmetricDistance()
    noise = dp.m.make_laplace(dp.AtomDomain(int), dp.AbsoluteDistance(), scale=10.0)
    count = dp.t.make_count(ints, sym) >> noise
    assert dp.accuracy.confidence_interval(120, measurement=count, alpha=0.05) == (
        dp.accuracy.confidence_interval(120, 10.0, 0.05, "laplace")
    )
    g = dp.m.make_gaussian(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=3.5)
    assert dp.accuracy.confidence_interval(3.5, measurement=g, alpha=0.1) == (
        dp.accuracy.confidence_interval(3.5, 3.5, 0.1, "gaussian")
    )
    dl = dp.m.make_discrete_laplace(dp.AtomDomain(int), dp.AbsoluteDistance(), scale=Fraction(7, 2))
    assert dp.accuracy.confidence_interval(7, measurement=dl, alpha=0.05) == (
        dp.accuracy.confidence_interval(7, Fraction(7, 2), 0.05, "discrete_laplace")
    )
    dg = dp.m.make_discrete_gaussian(dp.AtomDomain(int), dp.AbsoluteDistance(), scale=2)
    assert dp.accuracy.confidence_interval(7, measurement=dg, alpha=0.05) == (3, 11)
    with pytest.raises(dp.InvalidParameter, match="last step"):
        dp.accuracy.confidence_interval(1.0, measurement=count >> (lambda x: x + 1), alpha=0.05)
    with pytest.raises(dp.InvalidParameter, match="not both"):
        dp.accuracy.confidence_interval(1, 10.0, 0.05, measurement=count)
    with pytest.raises(dp.InvalidParameter, match="alpha is required"):
        dp.accuracy.confidence_interval(1, measurement=count)
    with pytest.raises(dp.InvalidParameter, match="scale is required"):
        dp.accuracy.confidence_interval(1, alpha=0.05)
    with pytest.raises(dp.InvalidParameter, match="must be a Measurement"):
        dp.accuracy.confidence_interval(1, alpha=0.05, measurement="laplace")  # type: ignore[arg-type]
