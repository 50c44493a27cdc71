"""Tests of the exact samplers: ``dpcompose.measurements._sampling`` and the modules it draws on
(``_random``, ``_inversion``, ``_huge_scales``).

Distribution checks compare the empirical pmf with the exact pmf by a chi-square goodness-of-fit test.
False-alarm rate: each check fails when its p-value is below ``ALPHA = 1e-6``, so a correct sampler fails
a given check with probability 1e-6 (and never, with the fixed seeds used here, on a given platform).
Bins: every integer whose expected count is at least 20, and one pooled bin for each tail beyond them, so
the tails are tested too. The default run uses 2·10⁵ draws per batch check and 10⁴ per scalar check; the
``slow`` run uses 10⁶ (batch) and 2·10⁵ (scalar).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import itertools
import math
from collections.abc import Callable
from fractions import Fraction
from types import ModuleType

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpcompose.errors import InvalidParameter
from dpcompose.measurements import _huge_scales, _inversion, _random, _sampling
from dpcompose.measurements._sampling import (
    BytesSource,
    RandomSource,
    RecordingSource,
    SecureSource,
    SeededSource,
    discrete_gaussian_array,
    discrete_laplace_array,
    randbelow,
    sample_bernoulli,
    sample_bernoulli_exp,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)
from exact_pairs import gaussian_kernel_sum

ALPHA = 1e-6
MP_DPS = 40  # mpmath digits for this module's tests (tests/conftest.py applies it)

LAPLACE_SCALES = [Fraction(1, 3), Fraction(1), Fraction(7, 3), Fraction(10)]
GAUSS_SIGMA2 = [Fraction(1, 4), Fraction(1), Fraction(2), Fraction(50, 3), Fraction(400)]


# ---------------------------------------------------------------------------------------------------------
# exact pmfs (mpmath, 40 digits) and the chi-square check
# ---------------------------------------------------------------------------------------------------------


def laplace_pmf(scale: Fraction) -> Callable[[int], float]:
    q = mpmath.exp(-1 / mpmath.mpf(scale.numerator) * scale.denominator)
    c = (1 - q) / (1 + q)
    return lambda x: float(c * q ** abs(x))


def gaussian_pmf(sigma2: Fraction) -> Callable[[int], float]:
    s2 = mpmath.mpf(sigma2.numerator) / sigma2.denominator
    z = _gaussian_normaliser(sigma2, mpmath.mp.prec)
    return lambda x: float(mpmath.exp(-(mpmath.mpf(x) ** 2) / (2 * s2)) / z)


@functools.cache
def _gaussian_normaliser(sigma2: Fraction, prec: int) -> mpmath.mpf:
    """Σ_x exp(−x²/2σ²) over the integers, with a proven remainder (was: a sum over |x| ≤ 60σ + 60,
    70,000 terms at σ² = 10⁶/3, most of them below 1e-300)."""
    s2 = mpmath.mpf(sigma2.numerator) / sigma2.denominator
    return 1 + 2 * gaussian_kernel_sum(1, mpmath.sqrt(s2))


def chi_square_pvalue(samples: np.ndarray, pmf: Callable[[int], float]) -> float:
    """Goodness of fit of integer samples to a symmetric pmf; tails pooled into two bins."""
    n = samples.size
    lo = 0
    while n * pmf(lo + 1) >= 20:
        lo += 1
    support = np.arange(-lo, lo + 1)
    centre = np.array([pmf(int(x)) for x in support])
    tail = (1.0 - float(centre.sum())) / 2  # symmetric pmf: equal tails
    expected = n * np.concatenate([[tail], centre, [tail]])
    # bin 0: x < -lo; bins 1..2lo+1: x = -lo..lo; last bin: x > lo (one pass, not one per support point)
    binned = np.clip(samples, -lo - 1, lo + 1).astype(np.int64) + lo + 1
    observed = np.bincount(binned, minlength=2 * lo + 3).astype(float)
    if tail * n < 1e-9:  # tails too thin to test: there must be no draws there at all
        assert observed[0] == observed[-1] == 0
        expected, observed = expected[1:-1], observed[1:-1]
    expected *= observed.sum() / expected.sum()
    return float(stats.chisquare(observed, expected).pvalue)


def assert_fits(samples: np.ndarray, pmf: Callable[[int], float]) -> None:
    p = chi_square_pvalue(samples, pmf)
    assert p >= ALPHA, f"chi-square p-value {p:.3g} < {ALPHA}"


# ---------------------------------------------------------------------------------------------------------
# distribution checks
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scale", LAPLACE_SCALES)
def test_discrete_laplace_array_matches_exact_pmf(scale: Fraction) -> None:
    assert_fits(discrete_laplace_array(scale, 200_000, SeededSource(11)), laplace_pmf(scale))


@pytest.mark.parametrize("sigma2", GAUSS_SIGMA2)
def test_discrete_gaussian_array_matches_exact_pmf(sigma2: Fraction) -> None:
    assert_fits(discrete_gaussian_array(sigma2, 200_000, SeededSource(12)), gaussian_pmf(sigma2))


@pytest.mark.parametrize("scale", [Fraction(1, 2), Fraction(7, 3)])
def test_scalar_discrete_laplace_matches_exact_pmf(scale: Fraction) -> None:
    src = SeededSource(13)
    xs = np.array([sample_discrete_laplace(scale, src) for _ in range(10_000)])
    assert_fits(xs, laplace_pmf(scale))


@pytest.mark.parametrize(
    "sigma2", [pytest.param(Fraction(1, 4), marks=pytest.mark.slow), Fraction(50, 3)]
)  # the same scalar algorithm at both sizes; σ² = 1/4 runs in the slow run
def test_scalar_discrete_gaussian_matches_exact_pmf(sigma2: Fraction) -> None:
    src = SeededSource(14)
    xs = np.array([sample_discrete_gaussian(sigma2, src) for _ in range(10_000)])
    assert_fits(xs, gaussian_pmf(sigma2))


def test_large_parameters_use_exact_big_integer_path() -> None:
    # σ² with a 2**-60 denominator does not fit the int64 path: the object (Python int) path runs.
    sigma2 = Fraction(9) + Fraction(1, 2**60)
    assert_fits(discrete_gaussian_array(sigma2, 50_000, SeededSource(15)), gaussian_pmf(sigma2))
    scale = Fraction(2**60 + 1, 2**58)  # numerator above the 8-bit-shift bound of the int64 path
    assert_fits(discrete_laplace_array(scale, 50_000, SeededSource(16)), laplace_pmf(scale))


def test_scalar_and_batch_agree_in_distribution() -> None:
    scale = Fraction(5, 2)
    src = SeededSource(17)
    scalar = np.array([sample_discrete_laplace(scale, src) for _ in range(10_000)])
    batch = discrete_laplace_array(scale, 10_000, src)
    edges = np.array([-1000, -6, -3, -1, 0, 1, 2, 4, 7, 1001])
    table = np.array([np.histogram(scalar, edges)[0], np.histogram(batch, edges)[0]])
    assert stats.chi2_contingency(table).pvalue >= ALPHA


@pytest.mark.slow
@pytest.mark.parametrize("scale", [*LAPLACE_SCALES, Fraction(100)])
def test_discrete_laplace_array_million(scale: Fraction) -> None:
    assert_fits(discrete_laplace_array(scale, 1_000_000, SeededSource(21)), laplace_pmf(scale))


@pytest.mark.slow
@pytest.mark.parametrize("sigma2", [*GAUSS_SIGMA2, Fraction(10**6)])
def test_discrete_gaussian_array_million(sigma2: Fraction) -> None:
    assert_fits(discrete_gaussian_array(sigma2, 1_000_000, SeededSource(22)), gaussian_pmf(sigma2))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sampler", "param", "pmf"),
    [
        (sample_discrete_laplace, Fraction(7, 3), laplace_pmf(Fraction(7, 3))),
        (sample_discrete_gaussian, Fraction(50, 3), gaussian_pmf(Fraction(50, 3))),
    ],
)
def test_scalar_samplers_large_run(
    sampler: Callable[[Fraction, RandomSource], int], param: Fraction, pmf: Callable[[int], float]
) -> None:
    src = SeededSource(23)
    assert_fits(np.array([sampler(param, src) for _ in range(200_000)]), pmf)


# ---------------------------------------------------------------------------------------------------------
# Bernoulli samplers (scalar and the vectorised building blocks)
# ---------------------------------------------------------------------------------------------------------


def binom_ok(successes: int, trials: int, p: float) -> bool:
    return bool(stats.binomtest(successes, trials, p).pvalue >= ALPHA)


@pytest.mark.parametrize("p", [Fraction(0), Fraction(1, 3), Fraction(999, 1000), Fraction(1)])
def test_bernoulli(p: Fraction) -> None:
    src = SeededSource(31)
    k = sum(sample_bernoulli(p, src) for _ in range(20_000))
    assert binom_ok(k, 20_000, float(p))


@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(5, 2)])
def test_bernoulli_exp(gamma: Fraction) -> None:
    src = SeededSource(32)
    k = sum(sample_bernoulli_exp(gamma, src) for _ in range(20_000))
    assert binom_ok(k, 20_000, math.exp(-gamma))


@pytest.mark.parametrize("dtype", [np.int64, object])
@pytest.mark.parametrize(("num", "den"), [(0, 5), (2, 7), (7, 7), (17, 6), (10**20 + 3, 10**20)])
def test_vectorised_bernoulli_exp(num: int, den: int, dtype: type) -> None:
    if dtype is np.int64 and num >= 1 << 62:
        pytest.skip("int64 path only for small numbers")
    n = 100_000
    got = _sampling.bern_exp(np.full(n, num, dtype=dtype), den, SeededSource(33))
    assert binom_ok(int(got.sum()), n, float(mpmath.exp(-mpmath.mpf(num) / den)))


def test_vectorised_bernoulli_exp_minus_one_and_ratio() -> None:
    n = 200_000
    got = _sampling.bern_exp_minus_one(n, SeededSource(34))
    assert binom_ok(int(got.sum()), n, math.exp(-1))
    num = np.arange(n, dtype=np.int64) % 10
    ratio = _sampling.bern_ratio(num, 10, SeededSource(35))
    for j in range(10):
        assert binom_ok(int(ratio[num == j].sum()), int((num == j).sum()), j / 10)


@pytest.mark.parametrize("m", [1, 2, 3, 200, 257, 65537, 2**40 + 5, 2**62])
def test_uniform_below_range_and_spread(m: int) -> None:
    u = _sampling.uniform_below(m, 20_000, SeededSource(36))
    assert u.min() >= 0
    assert u.max() < m
    if m > 1:  # top and bottom halves equally likely (m even) / within one count (m odd)
        lower = int((u < m // 2).sum())
        assert binom_ok(lower, 20_000, (m // 2) / m)


def test_randbelow_is_uniform() -> None:
    src = SeededSource(37)
    counts = np.bincount([randbelow(6, src) for _ in range(30_000)], minlength=6)
    assert stats.chisquare(counts).pvalue >= ALPHA


# ---------------------------------------------------------------------------------------------------------
# inversion sampler: integer bounds of exp and of the tail probabilities, and the exact fallback
# ---------------------------------------------------------------------------------------------------------


def exact_tails(kind: str, param: Fraction, count: int) -> list[mpmath.mpf]:
    """P[|X| >= k] for k = 1..count at 60 digits (mpmath)."""
    with mpmath.workdps(60):
        p = mpmath.mpf(param.numerator) / param.denominator
        if kind == "laplace":
            q = mpmath.exp(-1 / p)
            return [2 * q**k / (1 + q) for k in range(1, count + 1)]
        if kind == "geom":
            return [mpmath.exp(-p * k) for k in range(1, count + 1)]
        m = int(20 * math.isqrt(int(param) + 1)) + 30
        w = [mpmath.mpf(1)] + [2 * mpmath.exp(-(mpmath.mpf(j) ** 2) / (2 * p)) for j in range(1, m + 1)]
        z = mpmath.fsum(w)
        suffix, acc = [mpmath.mpf(0)] * (m + 2), mpmath.mpf(0)
        for j in range(m, -1, -1):
            acc += w[j]
            suffix[j] = acc
        return [suffix[k] / z if k <= m else mpmath.mpf(0) for k in range(1, count + 1)]


def assert_true_tail_bounds(kind: str, param: Fraction, prec: int) -> None:
    lo, hi = _inversion.tail_bounds(kind, param, prec)
    tails = exact_tails(kind, param, len(lo) + 3)
    with mpmath.workdps(60):
        scale = mpmath.mpf(2) ** prec
        for k, tail in enumerate(tails, start=1):
            low, high = (int(lo[k - 1]), int(hi[k - 1])) if k <= len(lo) else (0, int(hi[-1]))
            assert low <= tail * scale <= high, (kind, param, prec, k)
            assert high - low <= 2 or k > len(lo)  # tight: the fallback is rare
        assert hi[-1] <= 2  # the neglected tail is below 2**-prec (a bucket near U = 0)


@given(
    x=st.fractions(min_value=0, max_value=800, max_denominator=10**6)
    | st.sampled_from([Fraction(1, 2**70), Fraction(3**40, 2**61), Fraction(2**64 + 1, 2**60)]),
    w=st.integers(1, 200),
)
def test_integer_exp_bounds_are_true_and_tight(x: Fraction, w: int) -> None:
    lo, hi = _inversion.exp_neg_bounds(x, w)
    with mpmath.workdps(80):
        value = mpmath.exp(-mpmath.mpf(x.numerator) / x.denominator) * mpmath.mpf(2) ** w
        assert lo <= value <= hi
    assert 0 <= hi - lo <= 2


@pytest.mark.parametrize("prec", [31, 63, 95])
@pytest.mark.parametrize(
    "sigma2", [Fraction(1, 100), Fraction(1, 4), Fraction(7, 10), Fraction(2), Fraction(400)]
)
def test_gaussian_tail_bounds_are_true_bounds(sigma2: Fraction, prec: int) -> None:
    assert_true_tail_bounds("gauss", sigma2, prec)


@pytest.mark.parametrize("prec", [31, 63, 95])
@pytest.mark.parametrize("scale", [Fraction(1, 10), Fraction(1, 3), Fraction(7, 3), Fraction(40)])
def test_laplace_tail_bounds_are_true_bounds(scale: Fraction, prec: int) -> None:
    assert_true_tail_bounds("laplace", scale, prec)


@given(
    kind=st.sampled_from(["gauss", "laplace"]),
    param=st.fractions(min_value=Fraction(1, 50), max_value=30, max_denominator=10**4),
)
def test_tail_bounds_are_true_bounds_for_random_parameters(kind: str, param: Fraction) -> None:
    assert_true_tail_bounds(kind, param, _inversion.U_BITS)


def band_stream(u: int, extra: list[int], negative: bool) -> bytes:
    """Bytes that make the inversion sampler read the 31-bit prefix ``u`` then 32-bit refinements."""
    word = (u << 1) | int(negative)
    return word.to_bytes(4, "little") + b"".join(e.to_bytes(4, "little") for e in extra)


@pytest.mark.parametrize(
    ("kind", "param"), [("gauss", Fraction(2)), ("gauss", Fraction(1, 3)), ("laplace", Fraction(7, 3))]
)
@pytest.mark.parametrize("k", [1, 2, 4])
def test_undecided_draws_are_decided_by_more_bits(kind: str, param: Fraction, k: int) -> None:
    # u = ⌊2**31·T_k⌋ is always in the undecided band of boundary k; the next 32 (then 64) bits of U place
    # it just below or just above T_k, and the magnitude must be k or k - 1 accordingly.
    table = _inversion.inverse_table(kind, param)
    with mpmath.workdps(60):
        tail = exact_tails(kind, param, k)[k - 1]
        u = int(mpmath.floor(tail * 2**31))
        r63 = int(mpmath.floor(tail * 2**63)) - (u << 32)
        r95 = int(mpmath.floor(tail * 2**95)) - (int(mpmath.floor(tail * 2**63)) << 32)
    assert table.hi_desc[k - 1] > u >= table.lo_desc[k - 1]  # in the band
    cases = [([r63 - 1], k), ([r63 + 1], k - 1), ([r63, r95 - 1], k), ([r63, r95 + 1], k - 1)]
    for extra, expected in cases:
        for negative in (False, True):
            src = BytesSource(band_stream(u, extra, negative))
            got = _inversion.inverse_block(table, 1, src)
            assert got.tolist() == [-expected if negative else expected]
            with pytest.raises(EOFError):  # every byte of the stream was used
                src.random_bytes(1)


@pytest.mark.parametrize(
    ("kind", "param", "pmf"),
    [
        ("gauss", Fraction(1, 4), gaussian_pmf(Fraction(1, 4))),
        ("gauss", Fraction(2), gaussian_pmf(Fraction(2))),
        ("gauss", Fraction(50, 3), gaussian_pmf(Fraction(50, 3))),
        ("laplace", Fraction(1, 3), laplace_pmf(Fraction(1, 3))),
        ("laplace", Fraction(7, 3), laplace_pmf(Fraction(7, 3))),
    ],
)
def test_coarse_bounds_fallback_matches_exact_pmf(
    kind: str, param: Fraction, pmf: Callable[[int], float]
) -> None:
    # Bounds widened by 2**24 (still true bounds) leave many draws undecided at 31 bits: the exact
    # fallback draws more bits often, and the output must still fit the exact pmf.
    table = _inversion.inverse_table(kind, param, slack=1 << 24)
    rec = RecordingSource(SeededSource(51))
    xs = _inversion.fill_exact(100_000, lambda n: _inversion.inverse_block(table, n, rec))
    assert sum(c[0] == "randbits" for c in rec.calls) > 1000
    assert_fits(xs, pmf)


def test_inverse_tables_are_cached_and_bounded() -> None:
    first = _inversion.inverse_table("gauss", Fraction(3))
    assert _inversion.inverse_table("gauss", Fraction(3)) is first
    for j in range(2 * _inversion.TABLE_CACHE_SIZE):
        _inversion.inverse_table("laplace", Fraction(j + 1, 7))
    assert len(_inversion.TABLES) == _inversion.TABLE_CACHE_SIZE
    assert not _inversion.table_is_cached("gauss", Fraction(3))


def normal_binned_fit(samples: np.ndarray, sigma2: Fraction) -> float:
    """Chi-square p-value with 34 bins of width σ/4 plus two tails, for σ so large that the discrete
    Gaussian's bin masses equal the normal's up to a relative error far below the test's resolution."""
    sigma = mpmath.sqrt(mpmath.mpf(sigma2.numerator) / sigma2.denominator)
    edges = [int(mpmath.floor(sigma * j / 4)) for j in range(-16, 17)]
    cdf = [mpmath.ncdf((e + mpmath.mpf(1) / 2) / sigma) for e in edges]  # P[X <= e], midpoint rule
    inner = [float(b - a) for a, b in itertools.pairwise(cdf)]
    probs = np.array([float(cdf[0]), *inner, float(1 - cdf[-1])])
    idx = np.searchsorted(np.array(edges), samples, side="left")  # bin j: edges[j-1] < x <= edges[j]
    observed = np.bincount(idx, minlength=len(probs)).astype(float)
    return float(stats.chisquare(observed, probs * samples.size).pvalue)


@pytest.mark.parametrize("sigma2", [Fraction(2**26 + 1, 3), Fraction(2**41 + 1), Fraction(10**13, 7)])
def test_discrete_gaussian_array_huge_variance(sigma2: Fraction) -> None:
    xs = discrete_gaussian_array(sigma2, 200_000, SeededSource(52))
    assert normal_binned_fit(xs, sigma2) >= ALPHA


@pytest.mark.parametrize("sigma2", [Fraction(7, 10), Fraction(1, 30), Fraction(10**6 + 1, 3)])
def test_discrete_gaussian_array_more_variances(sigma2: Fraction) -> None:
    assert_fits(discrete_gaussian_array(sigma2, 200_000, SeededSource(53)), gaussian_pmf(sigma2))


def test_discrete_laplace_array_large_scale_uses_digit_split() -> None:
    scale = Fraction(10_000, 3)  # above the inversion-table limit: the digit split (tables built)
    assert scale > _inversion.LAPLACE_TABLE_MAX_SCALE
    _huge_scales.PLANS.clear()
    assert_fits(discrete_laplace_array(scale, 200_000, SeededSource(54)), laplace_pmf(scale))
    assert _huge_scales.plan_is_cached(scale)
    # a small uncached request at a large scale runs CKS Algorithm 2 on blocks instead
    other = Fraction(10_001, 3)
    assert discrete_laplace_array(other, 100, SeededSource(54)).shape == (100,)
    assert not _huge_scales.plan_is_cached(other)


@pytest.mark.parametrize("sigma2", [Fraction(1, 4), Fraction(50, 3), Fraction(9) + Fraction(1, 2**50)])
def test_gaussian_block_algorithm_matches_exact_pmf(sigma2: Fraction) -> None:
    # CKS Algorithm 3 on blocks (used above the table limit), at small σ² to test it against the pmf;
    # the last σ² needs the exact Python-integer (object array) path.
    src = SeededSource(55)
    xs = _sampling.fill(100_000, lambda n: _sampling.gaussian_block(sigma2, n, src))
    assert_fits(xs, gaussian_pmf(sigma2))


@pytest.mark.parametrize("scale", [Fraction(7, 3), Fraction(2**60 + 1, 2**58)])
def test_laplace_block_algorithm_matches_exact_pmf(scale: Fraction) -> None:
    src = SeededSource(56)
    n, d = scale.numerator, scale.denominator
    xs = _sampling.fill(100_000, lambda c: _sampling.laplace_block(n, d, c, src))
    assert_fits(xs, laplace_pmf(scale))


def test_small_uncached_requests_do_not_build_tables() -> None:
    sigma2 = Fraction(10**6 + 7)  # a table of ~10⁴ entries: not worth building for 100 draws
    discrete_gaussian_array(sigma2, 100, SeededSource(57))
    assert not _inversion.table_is_cached("gauss", sigma2)
    discrete_gaussian_array(sigma2, 20_000, SeededSource(57))
    assert _inversion.table_is_cached("gauss", sigma2)


# ---------------------------------------------------------------------------------------------------------
# huge Laplace scales: the split G = 2^D·A + Σ 2^o_j·B_j (top geometric by inversion, digits by rejection)
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("prec", [31, 63])
@pytest.mark.parametrize("rate", [Fraction(1, 64), Fraction(1, 33), Fraction(3, 7), Fraction(5, 2)])
def test_geometric_tail_bounds_are_true_bounds(rate: Fraction, prec: int) -> None:
    assert_true_tail_bounds("geom", rate, prec)


_GEOM_RATES = st.fractions(min_value=Fraction(1, 64), max_value=4, max_denominator=2**40)


@settings(max_examples=20)
@given(rate=_GEOM_RATES)
def test_geometric_tail_bounds_for_random_rates(rate: Fraction) -> None:
    assert_true_tail_bounds("geom", rate, _inversion.U_BITS)


@pytest.mark.slow
@settings(max_examples=60)
@given(rate=_GEOM_RATES)
def test_geometric_tail_bounds_for_random_rates_thorough(rate: Fraction) -> None:
    assert_true_tail_bounds("geom", rate, _inversion.U_BITS)


# rates 2^o/t of the digits: t up to 2^50 with a power-of-two denominator (the float mechanisms' scales)
digit_rates = st.builds(
    lambda o, t: Fraction(2**o) / t,
    st.integers(0, 40),
    st.fractions(min_value=2**11, max_value=2**50, max_denominator=2**20),
) | st.fractions(min_value=0, max_value=3, max_denominator=2**62)


@settings(deadline=None)
@given(rate=digit_rates, count=st.integers(1, 40), prec=st.sampled_from([31, 62]))
def test_power_bounds_are_true_and_tight(rate: Fraction, count: int, prec: int) -> None:
    lo, hi = _huge_scales.power_bounds(rate, count, prec)
    assert lo.dtype == hi.dtype == np.int64
    with mpmath.workdps(60):
        r = mpmath.exp(-mpmath.mpf(rate.numerator) / rate.denominator)
        for i in range(count):
            value = r**i * mpmath.mpf(2) ** prec
            assert lo[i] <= value <= hi[i], (rate, i, prec)
            assert hi[i] - lo[i] <= 2


def test_digit_tables_of_a_float_mechanism_scale_are_true_bounds() -> None:
    # t = scale/2^k for scale = 10.0 (k = -27): t = 10·2^27; spot-check entries across both tables
    t = Fraction(10 * 2**27)
    plan = _huge_scales.laplace_plan(t)
    assert plan.top_bits == 25 and [(d.offset, d.bits) for d in plan.digits] == [(0, 25)]
    table = plan.digits[0]
    with mpmath.workdps(60):
        rho = mpmath.exp(-mpmath.mpf(table.rate.numerator) / table.rate.denominator)
        for lo, hi, step in [
            (table.lo_low, table.hi_low, 1),
            (table.lo_high, table.hi_high, 2**table.low_bits),
        ]:
            for i in [0, 1, 2, 777, lo.size // 2, lo.size - 1]:
                value = rho ** (i * step) * mpmath.mpf(2) ** 31
                assert lo[i] <= value <= hi[i] and hi[i] - lo[i] <= 2


def finite_pmf_pvalue(samples: np.ndarray, probs: list[float]) -> float:
    """Chi-square p-value of samples on ``0..len(probs)-1``; bins with expected count < 20 pooled."""
    n = samples.size
    assert samples.min() >= 0 and samples.max() < len(probs)
    observed = np.bincount(samples, minlength=len(probs)).astype(float)
    expected = n * np.array(probs)
    big = expected >= 20
    obs = np.append(observed[big], observed[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    return float(stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue)


def truncated_geometric(rate: Fraction, bits: int) -> list[float]:
    with mpmath.workdps(40):
        rho = mpmath.exp(-mpmath.mpf(rate.numerator) / rate.denominator)
        w = [rho**b for b in range(2**bits)]
        z = mpmath.fsum(w)
        return [float(x / z) for x in w]


@pytest.mark.parametrize(
    ("scale", "offset", "bits", "slack"),
    [
        (Fraction(3), 0, 3, 0),
        (Fraction(20, 3), 2, 4, 0),
        (Fraction(7, 3), 1, 2, 1 << 24),  # bounds widened: the exact refinement runs often
        (Fraction(2**20 + 1, 2**10), 0, 11, 0),  # nearly uniform: 2048 values
    ],
)
def test_digits_match_the_truncated_geometric(scale: Fraction, offset: int, bits: int, slack: int) -> None:
    # The digit B_j must have P[b] ∝ exp(-b·2^offset/t) exactly on [0, 2^bits).
    table = _huge_scales.digit_table(scale, offset, bits, slack)
    rec = RecordingSource(SeededSource(61))
    xs = _huge_scales.digit_block(table, 100_000, rec)
    if slack:
        assert sum(c[0] == "randbits" for c in rec.calls) > 1000
    assert finite_pmf_pvalue(xs, truncated_geometric(table.rate, bits)) >= ALPHA


@pytest.mark.parametrize(
    ("scale", "top_bits", "max_bits", "slack"),
    [
        (Fraction(1, 3), 1, 26, 0),
        pytest.param(Fraction(7, 3), 2, 26, 0, marks=pytest.mark.slow),  # one digit again, other scales
        pytest.param(Fraction(10), 3, 26, 0, marks=pytest.mark.slow),
        (Fraction(10), 5, 2, 0),  # three digits of 2, 2 and 1 bits
        (Fraction(40), 6, 3, 1 << 24),  # two digits, refinement forced
        (Fraction(40), 0, 26, 0),  # no digits: the top geometric is G itself
    ],
)
def test_digit_split_matches_exact_laplace_pmf(
    monkeypatch: pytest.MonkeyPatch, scale: Fraction, top_bits: int, max_bits: int, slack: int
) -> None:
    # Forced at moderate scales, the whole construction S·(2^D·A + Σ 2^o_j·B_j), -0 rejected, must give
    # the exact discrete Laplace pmf (tails pooled).
    monkeypatch.setattr(_huge_scales, "DIGIT_MAX_BITS", max_bits)
    monkeypatch.setattr(_huge_scales, "PLANS", type(_huge_scales.PLANS)())
    plan = _huge_scales.laplace_plan(scale, top_bits, slack)
    assert sum(d.bits for d in plan.digits) == top_bits and all(d.bits <= max_bits for d in plan.digits)
    src = SeededSource(62)
    xs = _inversion.fill_exact(200_000, lambda n: _huge_scales.laplace_digits_block(plan, n, src))
    assert_fits(xs, laplace_pmf(scale))


def laplace_binned_pvalue(samples: np.ndarray, scale: Fraction, edges: list[int]) -> float:
    """Chi-square p-value of samples in bins (-inf, e0], (e0, e1], ..., (e_last, inf), exact bin masses."""
    with mpmath.workdps(40):
        q = mpmath.exp(-mpmath.mpf(scale.denominator) / scale.numerator)

        def cdf(x: int) -> mpmath.mpf:  # P[X <= x]
            return q ** (-x) / (1 + q) if x < 0 else 1 - q ** (x + 1) / (1 + q)

        cdfs = [cdf(e) for e in edges]
        probs = [cdfs[0], *[b - a for a, b in itertools.pairwise(cdfs)], 1 - cdfs[-1]]
        expected = np.array([float(p) for p in probs]) * samples.size
    idx = np.searchsorted(np.array(edges), samples, side="left")
    observed = np.bincount(idx, minlength=len(probs)).astype(float)
    return float(stats.chisquare(observed, expected).pvalue)


@pytest.mark.parametrize(
    "scale", [Fraction(10 * 2**27), Fraction(3 * 2**59 + 1, 2**30), Fraction(2**50), Fraction(5000)]
)
def test_huge_scale_laplace_bins_and_low_digits(scale: Fraction) -> None:
    # Bins of width t/4 out to ±8t (the top geometric and the high digits), plus the residues mod 2^8
    # and the bins of |X| mod 2^D (the low digits): at these scales P[X ≡ r mod 256] is uniform to a
    # relative 2^-20, and |X| mod 2^D has the truncated-geometric-like slope that bins of 2^D/8 resolve.
    xs = discrete_laplace_array(scale, 200_000, SeededSource(63))
    t = scale.numerator // scale.denominator
    edges = [j * t // 4 for j in range(-32, 33)]
    assert laplace_binned_pvalue(xs, scale, edges) >= ALPHA
    residues = np.bincount(xs % 256, minlength=256).astype(float)
    assert stats.chisquare(residues).pvalue >= ALPHA
    d = _huge_scales.laplace_top_bits(scale)
    low = np.abs(xs) % (1 << d) >> max(d - 3, 0)
    with mpmath.workdps(40):  # P[|X| mod 2^D in octant j], |X| = 0 weight 1, others 2, both ∝ q^|x|
        q = mpmath.exp(-mpmath.mpf(scale.denominator) / scale.numerator)
        width = (1 << d) >> 3 if d >= 3 else 1
        octants = 1 << min(d, 3)
        lead = [(1 - q**width) / (1 - q) * q ** (j * width) for j in range(octants)]
        mass = [2 * x / (1 - q ** (1 << d)) for x in lead]  # summed over every block of 2^D
        mass[0] -= 1  # x = 0 counted once
        z = mpmath.fsum(mass)
        probs = [float(x / z) for x in mass]
    assert finite_pmf_pvalue(low, probs) >= ALPHA


def test_undecided_digit_candidate_is_decided_by_more_bits() -> None:
    # v = ⌊2^31·ρ^b⌋ is always undecided (ρ^b is irrational); the next 32 (then 64) bits of U place it
    # just below (accept: the draw is b) or just above (reject: a second word with b = 0 is drawn).
    table = _huge_scales.digit_table(Fraction(10**9 + 7, 3), 0, 20)
    b = 700_001
    with mpmath.workdps(60):
        rho_b = mpmath.exp(-mpmath.mpf(table.rate.numerator * b) / table.rate.denominator)
        v = int(mpmath.floor(rho_b * 2**31))
        r63 = int(mpmath.floor(rho_b * 2**63)) - (v << 32)
        r95 = int(mpmath.floor(rho_b * 2**95)) - (int(mpmath.floor(rho_b * 2**63)) << 32)
    word = ((b << 44) | v).to_bytes(8, "little")
    zero = (12345).to_bytes(8, "little")  # b = 0: always accepted
    cases = [([r63 - 1], b), ([r63 + 1], 0), ([r63, r95 - 1], b), ([r63, r95 + 1], 0)]
    for extra, expected in cases:
        stream = word + b"".join(e.to_bytes(4, "little") for e in extra)
        if expected == 0:
            stream += zero
        src = BytesSource(stream)
        assert _huge_scales.digit_block(table, 1, src).tolist() == [expected]
        with pytest.raises(EOFError):  # every byte of the stream was used
            src.random_bytes(1)


def test_negative_zero_is_rejected_and_redrawn() -> None:
    # Top word: U prefix 2^31 - 1 (A = 0) with the sign bit set; digit word: b = 0. The draw -0 is rejected
    # and the next (positive) draw is returned.
    plan = _huge_scales.laplace_plan(Fraction(5000), 4)
    top_neg = (2**32 - 1).to_bytes(4, "little")
    top_pos = (2**32 - 2).to_bytes(4, "little")
    digit_zero, digit_three = (5).to_bytes(8, "little"), ((3 << 60) | 5).to_bytes(8, "little")
    src = BytesSource(top_neg + digit_zero + top_pos + digit_three)
    assert _huge_scales.laplace_digits_block(plan, 1, src).tolist() == [3]
    src = BytesSource(top_neg + digit_three)
    assert _huge_scales.laplace_digits_block(plan, 1, src).tolist() == [-3]


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    scale=st.fractions(min_value=2**11, max_value=2**50, max_denominator=2**30),
    size=st.integers(100, 300),  # with slack, P[no refinement] <= (3/4)**100 < 1e-12
    slack=st.sampled_from([0, 1 << 28]),
)
def test_digit_split_output_is_a_function_of_the_byte_stream(
    seed: int, scale: Fraction, size: int, slack: int
) -> None:
    plan = _huge_scales.laplace_plan(scale, None, slack)
    rec = RecordingSource(SeededSource(seed))
    first = _huge_scales.laplace_digits_block(plan, size, rec)
    assert first.dtype == np.int64
    if slack:
        assert any(c[0] == "randbits" for c in rec.calls)  # the exact refinement ran
    replay = _huge_scales.laplace_digits_block(plan, size, BytesSource(rec.stream))
    np.testing.assert_array_equal(first, replay)


# ---------------------------------------------------------------------------------------------------------
# outputs depend only on the integer random stream; no floats on the sampling path
# ---------------------------------------------------------------------------------------------------------

rationals = st.fractions(min_value=Fraction(1, 20), max_value=Fraction(50), max_denominator=1000)


@given(seed=st.integers(0, 2**32), scale=rationals, size=st.integers(0, 300))
def test_laplace_output_is_a_function_of_the_byte_stream(seed: int, scale: Fraction, size: int) -> None:
    rec = RecordingSource(SeededSource(seed))
    first = discrete_laplace_array(scale, size, rec)
    assert first.dtype == np.int64
    assert all(isinstance(c[1], int) and not isinstance(c[1], bool) for c in rec.calls)
    replay = discrete_laplace_array(scale, size, BytesSource(rec.stream))
    np.testing.assert_array_equal(first, replay)
    rec2 = RecordingSource(SeededSource(seed))
    assert sample_discrete_laplace(scale, rec2) == sample_discrete_laplace(scale, BytesSource(rec2.stream))


@given(seed=st.integers(0, 2**32), sigma2=rationals, size=st.integers(0, 300))
def test_gaussian_output_is_a_function_of_the_byte_stream(seed: int, sigma2: Fraction, size: int) -> None:
    rec = RecordingSource(SeededSource(seed))
    first = discrete_gaussian_array(sigma2, size, rec)
    replay = discrete_gaussian_array(sigma2, size, BytesSource(rec.stream))
    np.testing.assert_array_equal(first, replay)
    rec2 = RecordingSource(SeededSource(seed))
    one = sample_discrete_gaussian(sigma2, rec2)
    assert one == sample_discrete_gaussian(sigma2, BytesSource(rec2.stream))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32), kind=st.sampled_from(["gauss", "laplace"]), param=rationals)
def test_inversion_fallback_output_is_a_function_of_the_byte_stream(
    seed: int, kind: str, param: Fraction
) -> None:
    table = _inversion.inverse_table(kind, param, slack=1 << 29)
    rec = RecordingSource(SeededSource(seed))
    first = _inversion.inverse_block(table, 200, rec)
    assert any(c[0] == "randbits" for c in rec.calls)  # the fallback ran
    np.testing.assert_array_equal(first, _inversion.inverse_block(table, 200, BytesSource(rec.stream)))


def test_seeded_source_is_reproducible_and_secure_source_is_not_constant() -> None:
    a = discrete_gaussian_array(Fraction(9), 100, SeededSource(5))
    b = discrete_gaussian_array(Fraction(9), 100, SeededSource(5))
    np.testing.assert_array_equal(a, b)
    c = discrete_gaussian_array(Fraction(9), 100, SecureSource())
    d = discrete_gaussian_array(Fraction(9), 100)  # default source: SecureSource
    assert not np.array_equal(c, d)  # equal with probability far below 1e-30
    assert isinstance(SecureSource(), RandomSource)
    assert isinstance(SeededSource(1), RandomSource)


_SAMPLER_MODULES = (_random, _sampling, _inversion, _huge_scales)
"""Every module on the sampling path."""


class _NoMath:
    """Stands in for the ``math`` module inside the sampler: only exact integer functions are allowed."""

    isqrt = staticmethod(math.isqrt)
    factorial = staticmethod(math.factorial)

    def __getattr__(self, name: str) -> None:
        raise AssertionError(f"the sampling path used math.{name}")


def test_samplers_run_with_float_conversion_forbidden(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_float(self: Fraction) -> float:
        raise AssertionError("a Fraction was converted to float on the sampling path")

    monkeypatch.setattr(Fraction, "__float__", no_float)
    for module in _SAMPLER_MODULES:
        if hasattr(module, "math"):
            monkeypatch.setattr(module, "math", _NoMath())
    src = SeededSource(41)
    sample_bernoulli(Fraction(1, 3), src)
    sample_bernoulli_exp(Fraction(7, 3), src)
    sample_discrete_laplace(Fraction(7, 3), src)
    sample_discrete_gaussian(Fraction(50, 3), src)
    assert discrete_laplace_array(Fraction(7, 3), 1000, src).dtype == np.int64
    assert discrete_gaussian_array(Fraction(50, 3), 1000, src).dtype == np.int64
    assert discrete_gaussian_array(Fraction(9) + Fraction(1, 2**60), 100, src).dtype == np.int64
    # inversion tables built, and the exact fallback run, with floats forbidden too
    _inversion.TABLES.clear()
    _inversion.tail_bounds.cache_clear()
    assert discrete_gaussian_array(Fraction(50, 7), 1000, src).dtype == np.int64
    assert discrete_laplace_array(Fraction(11, 3), 1000, src).dtype == np.int64
    coarse = _inversion.inverse_table("gauss", Fraction(3, 7), slack=1 << 27)
    assert _inversion.inverse_block(coarse, 1000, src).dtype == np.int64
    assert _inversion.table_is_cached("gauss", Fraction(50, 7))
    # the digit split at a huge scale: plan built and refinement run with floats forbidden
    _huge_scales.PLANS.clear()
    assert discrete_laplace_array(Fraction(2**31 + 1, 3), 20_000, src).dtype == np.int64
    assert _huge_scales.plan_is_cached(Fraction(2**31 + 1, 3))
    plan = _huge_scales.laplace_plan(Fraction(2**40 + 1, 7), None, slack=1 << 28)
    assert _huge_scales.laplace_digits_block(plan, 1000, src).dtype == np.int64
    # the bucketed envelope at a huge σ²: plan built and the acceptance refinement run (v has 12 bits
    # there, widened by 2^9 units) with floats forbidden
    _huge_scales.GAUSS_PLANS.clear()
    assert discrete_gaussian_array(Fraction(2**41 + 1, 3), 30_000, src).dtype == np.int64
    assert _huge_scales.gauss_plan_is_cached(Fraction(2**41 + 1, 3))
    gplan = _huge_scales.gauss_plan(Fraction(2**59 + 1, 7), None, slack=1 << 9)
    assert _huge_scales.gauss_bucket_block(gplan, 1000, src).dtype == np.int64


@pytest.mark.parametrize("module", _SAMPLER_MODULES, ids=lambda m: m.__name__)
def test_sampling_module_has_no_float_operations_in_its_source(module: ModuleType) -> None:
    tree = ast.parse(inspect.getsource(module))
    banned = {
        "float",
        "exp",
        "log",
        "log1p",
        "expm1",
        "sqrt",
        "uniform",
        "normal",
        "laplace",
        "random_sample",
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant):
            assert not isinstance(node.value, float), f"float literal {node.value!r}"
        if isinstance(node, ast.Name):
            assert node.id not in banned, f"name {node.id!r} used"
        if isinstance(node, ast.Attribute):
            assert node.attr not in banned, f"attribute .{node.attr} used"


# ---------------------------------------------------------------------------------------------------------
# bad parameters
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0.5, float("nan"), math.inf, 0, -1, Fraction(-1, 2), True, "1", None])
def test_bad_scale_raises(bad: object) -> None:
    with pytest.raises(InvalidParameter, match="scale"):
        discrete_laplace_array(bad, 3)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameter, match="scale"):
        sample_discrete_laplace(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameter, match="sigma2"):
        discrete_gaussian_array(bad, 3)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameter, match="sigma2"):
        sample_discrete_gaussian(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [-1, 2.0, True])
def test_bad_size_raises(bad: object) -> None:
    with pytest.raises(InvalidParameter, match="size"):
        discrete_laplace_array(1, bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameter, match="size"):
        discrete_gaussian_array(1, bad)  # type: ignore[arg-type]


def test_bad_bernoulli_parameters_raise() -> None:
    with pytest.raises(InvalidParameter, match="p="):
        sample_bernoulli(Fraction(3, 2))
    with pytest.raises(InvalidParameter, match="p="):
        sample_bernoulli(0.5)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameter, match="gamma"):
        sample_bernoulli_exp(-1)
    with pytest.raises(InvalidParameter, match="n="):
        randbelow(0)
    with pytest.raises(InvalidParameter, match="seed"):
        SeededSource(-1)
    with pytest.raises(InvalidParameter, match="scale"):
        discrete_laplace_array(2**60, 1)
    with pytest.raises(EOFError):
        BytesSource(b"").random_bytes(1)


# ---------------------------------------------------------------------------------------------------------
# huge Gaussian variances: the bucketed envelope (J by inversion, R uniform, acceptance exp(-N/(2σ²)))
# ---------------------------------------------------------------------------------------------------------


def half_gauss_tails(param: Fraction, count: int) -> list[mpmath.mpf]:
    """P[M >= k], k = 1..count, for P[M = m] ∝ exp(-m²/(2·param)) on m >= 0, at 60 digits."""
    with mpmath.workdps(60):
        p = mpmath.mpf(param.numerator) / param.denominator
        m = int(20 * math.isqrt(int(param) + 1)) + 30
        w = [mpmath.exp(-(mpmath.mpf(j) ** 2) / (2 * p)) for j in range(m + 1)]
        suffix, acc = [mpmath.mpf(0)] * (m + 2), mpmath.mpf(0)
        for j in range(m, -1, -1):
            acc += w[j]
            suffix[j] = acc
        return [suffix[k] / suffix[0] if k <= m else mpmath.mpf(0) for k in range(1, count + 1)]


_HALF_GAUSS_PARAMS = st.fractions(
    min_value=Fraction(1, 50), max_value=100, max_denominator=10**4
) | st.sampled_from([Fraction(2**40 + 1, 2**24), Fraction(2**36, 2**20 - 3)])


@settings(max_examples=8, deadline=None)
@given(param=_HALF_GAUSS_PARAMS, prec=st.sampled_from([31, 63]))
def test_half_gaussian_tail_bounds_are_true_bounds(param: Fraction, prec: int) -> None:
    _check_half_gaussian_tail_bounds(param, prec)


@pytest.mark.slow
@settings(max_examples=20, deadline=None)
@given(param=_HALF_GAUSS_PARAMS, prec=st.sampled_from([31, 63]))
def test_half_gaussian_tail_bounds_are_true_bounds_thorough(param: Fraction, prec: int) -> None:
    _check_half_gaussian_tail_bounds(param, prec)


def _check_half_gaussian_tail_bounds(param: Fraction, prec: int) -> None:
    lo, hi = _inversion.tail_bounds("halfgauss", param, prec)
    tails = half_gauss_tails(param, len(lo) + 3)
    with mpmath.workdps(60):
        scale = mpmath.mpf(2) ** prec
        for k, tail in enumerate(tails, start=1):
            low, high = (int(lo[k - 1]), int(hi[k - 1])) if k <= len(lo) else (0, int(hi[-1]))
            assert low <= tail * scale <= high, (param, prec, k)
            assert high - low <= 2 or k > len(lo)
    assert hi[-1] <= 2


# σ² of the float Gaussian's grid (integer σ in [2^20, 2^21]), and general rationals up to 2^60
huge_sigma2 = st.integers(2**20, 2**21).map(lambda s: Fraction(s * s)) | st.fractions(
    min_value=2**26 + 1, max_value=2**60, max_denominator=2**30
)


@settings(max_examples=30, deadline=None)
@given(sigma2=huge_sigma2, data=st.data())
def test_bucket_acceptance_bounds_are_true(sigma2: Fraction, data: st.DataObject) -> None:
    # For random candidates (j < cap, r < W): the int64 bounds lo·lo' <= 2^62·exp(-(N'+1)·c) and
    # hi·hi' >= 2^62·exp(-N'·c) bracket 2^62·exp(-N/(2σ²)), checked at 60 digits, and they are tight.
    plan = _huge_scales.gauss_plan(sigma2)
    acc = plan.accept
    assert acc.rate == Fraction(2**acc.offset) / (2 * sigma2)
    assert plan.v_bits >= 12 and (plan.one_word == (plan.bucket_bits <= 20))
    width = 1 << plan.bucket_bits
    mask = (1 << acc.low_bits) - 1
    for _ in range(5):
        j = data.draw(st.integers(0, plan.cap - 1))
        r = data.draw(st.integers(0, width - 1))
        n = r * (2 * j * width + r)
        assert n < 2**62
        n_trunc = n >> acc.offset
        up = n_trunc + 1
        lower = int(acc.lo_high[up >> acc.low_bits]) * int(acc.lo_low[up & mask])
        upper = int(acc.hi_high[n_trunc >> acc.low_bits]) * int(acc.hi_low[n_trunc & mask])
        with mpmath.workdps(60):
            value = (
                mpmath.exp(-mpmath.mpf(n) * sigma2.denominator / (2 * sigma2.numerator)) * mpmath.mpf(2) ** 62
            )
            assert lower <= value <= upper, (sigma2, j, r)
        assert upper - lower <= 2**37  # relative width at most 2^-25: the refinement is rare


def gauss_bucket_draws(
    sigma2: Fraction, bits: int | None, slack: int, size: int, source: RandomSource
) -> np.ndarray:
    plan = _huge_scales.gauss_plan(sigma2, bits, slack)
    return _inversion.fill_exact(size, lambda n: _huge_scales.gauss_bucket_block(plan, n, source))


@pytest.mark.parametrize(
    ("sigma2", "bits", "slack", "one_word"),
    [
        (Fraction(1, 4), 0, 0, True),  # W = 1: every candidate accepted, the bucket table is the pmf
        (Fraction(2), 2, 0, True),  # W = 4 > σ: most candidates rejected
        (Fraction(50, 3), 1, 0, True),
        (Fraction(400), 2, 0, True),
        (Fraction(400), 3, 0, False),  # two words per candidate (the layout for s > 20)
        (Fraction(10**4 + 1, 3), 4, 0, True),
    ],
)
def test_bucket_envelope_matches_exact_gaussian_pmf(
    monkeypatch: pytest.MonkeyPatch, sigma2: Fraction, bits: int, slack: int, one_word: bool
) -> None:
    # Forced at small σ (bins meaningful), the construction S·(JW + R), accepted with probability
    # exp(-N/(2σ²)), -0 rejected, must give the exact discrete Gaussian pmf (tails pooled); p < 1e-6 fails.
    monkeypatch.setattr(_huge_scales, "GAUSS_PLANS", type(_huge_scales.GAUSS_PLANS)())
    if not one_word:
        monkeypatch.setattr(_huge_scales, "ONE_WORD_MAX_BITS", -1)
    plan = _huge_scales.gauss_plan(sigma2, bits, slack)
    assert plan.one_word == one_word and plan.bucket_bits == bits
    assert_fits(gauss_bucket_draws(sigma2, bits, slack, 200_000, SeededSource(70)), gaussian_pmf(sigma2))


@pytest.mark.parametrize(
    ("sigma2", "bits"), [(Fraction(50, 3), 2), pytest.param(Fraction(400), 3, marks=pytest.mark.slow)]
)  # both one-word layouts with the same refinements; the second σ² runs in the slow run
def test_bucket_envelope_with_widened_bounds_refines_exactly(sigma2: Fraction, bits: int) -> None:
    # Bucket bounds widened by 2^20 units of 2^-31 and acceptance tests by 2^(v_bits - 5) units of
    # 2^-v_bits (still true bounds): the exact refinements run often, and the pmf must still be exact.
    v_bits = 32 - bits
    rec = RecordingSource(SeededSource(71))
    plan = _huge_scales.gauss_plan(sigma2, bits, 1 << (v_bits - 5))
    assert plan.slack == 1 << (v_bits - 5)
    xs = _inversion.fill_exact(100_000, lambda n: _huge_scales.gauss_bucket_block(plan, n, rec))
    assert sum(c[0] == "randbits" for c in rec.calls) > 1000
    assert_fits(xs, gaussian_pmf(sigma2))


def test_buckets_beyond_the_table_are_decided_in_python_integers() -> None:
    # With the table's reach cut to three buckets, every J >= 3 (|X| >= 6, about 18% of the draws) takes
    # the exact Python-integer path.
    sigma2 = Fraction(50, 3)
    plan = dataclasses.replace(_huge_scales.gauss_plan(sigma2, 1), cap=3)
    src = SeededSource(72)
    xs = _inversion.fill_exact(100_000, lambda n: _huge_scales.gauss_bucket_block(plan, n, src))
    assert_fits(xs, gaussian_pmf(sigma2))


def test_undecided_acceptance_is_decided_by_more_bits() -> None:
    # v = ⌊2^20·exp(-N/(2σ²))⌋ is always undecided; the next 32 (then 64) bits of U place U just below
    # (accept) or just above (reject: a second candidate, J = 0 and R = 5, is drawn).
    sigma2 = Fraction(1_500_001**2)
    plan = _huge_scales.gauss_plan(sigma2)
    s = plan.bucket_bits
    assert (s, plan.v_bits, plan.one_word) == (12, 20, True)
    j, r = 700, 3001
    table = plan.buckets
    u = int(np.flatnonzero(table.guide == j)[0]) << table.shift  # a prefix whose bucket is J = j
    n = r * (2 * j * (1 << s) + r)
    with mpmath.workdps(60):
        p = mpmath.exp(-mpmath.mpf(n) * sigma2.denominator / (2 * sigma2.numerator))
        v = int(mpmath.floor(p * 2**20))
        r52 = int(mpmath.floor(p * 2**52)) - (v << 32)
        r84 = int(mpmath.floor(p * 2**84)) - (int(mpmath.floor(p * 2**52)) << 32)
    word = ((u << 33) | (r << 20) | v).to_bytes(8, "little")
    u0 = int(np.flatnonzero(table.guide == 0)[0]) << table.shift
    second = ((u0 << 33) | (5 << 20) | 0).to_bytes(8, "little")  # v = 0: accepted at once
    cases = [([r52 - 1], True), ([r52 + 1], False), ([r52, r84 - 1], True), ([r52, r84 + 1], False)]
    for extra, accepted in cases:
        stream = word + b"".join(e.to_bytes(4, "little") for e in extra)
        if not accepted:
            stream += second
        src = BytesSource(stream)
        assert _huge_scales.gauss_bucket_block(plan, 1, src).tolist() == [j * 2**s + r if accepted else 5]
        with pytest.raises(EOFError):  # every byte of the stream was used
            src.random_bytes(1)


def test_bucket_negative_zero_is_rejected_and_redrawn() -> None:
    plan = _huge_scales.gauss_plan(Fraction(2**41 + 1))
    s, table = plan.bucket_bits, plan.buckets
    u0 = int(np.flatnonzero(table.guide == 0)[0]) << table.shift
    neg_zero = ((u0 << 33) | (1 << 32)).to_bytes(8, "little")  # J = 0, S = -1, R = 0, v = 0
    neg_seven = ((u0 << 33) | (1 << 32) | (7 << (32 - s))).to_bytes(8, "little")
    pos_zero = (u0 << 33).to_bytes(8, "little")
    assert _huge_scales.gauss_bucket_block(plan, 1, BytesSource(neg_zero + neg_seven)).tolist() == [-7]
    assert _huge_scales.gauss_bucket_block(plan, 1, BytesSource(pos_zero)).tolist() == [0]


def discrete_gaussian_bin_masses(sigma2: Fraction, edges: list[int]) -> list[float]:
    """P[X <= e_0], P[e_(i-1) < X <= e_i], P[X > e_last] of the discrete Gaussian, at 40 digits.

    By Euler–Maclaurin, Σ_{x=a+1}^{b} f(x) = ∫_{a+1/2}^{b+1/2} f + (f'(b+1/2) - f'(a+1/2))/24 + ρ with
    |ρ| <= ∫|f'''|/(5760)·(a few) = O(σ^-3) for f(x) = exp(-x²/(2σ²)); the sum over all integers is
    σ√(2π)(1 + 2Σ_k exp(-2π²k²σ²)) = σ√(2π) to far more than 40 digits for σ > 2^10. The masses are
    therefore exact to a relative 10^-9 or better, far below the chi-square's resolution.
    """
    with mpmath.workdps(40):
        s2 = mpmath.mpf(sigma2.numerator) / sigma2.denominator
        sigma = mpmath.sqrt(s2)

        def cum(e: int) -> mpmath.mpf:  # P[X <= e]
            y = mpmath.mpf(e) + mpmath.mpf(1) / 2
            deriv = -y / s2 * mpmath.exp(-(y**2) / (2 * s2))
            return mpmath.ncdf(y / sigma) + deriv / 24 / (sigma * mpmath.sqrt(2 * mpmath.pi))

        cdfs = [cum(e) for e in edges]
        probs = [cdfs[0], *[b - a for a, b in itertools.pairwise(cdfs)], 1 - cdfs[-1]]
        return [float(p) for p in probs]


@pytest.mark.parametrize(
    "sigma2",
    [
        Fraction(1_048_576**2),  # the float Gaussian's grid: σ = 2^20, s = 12
        Fraction((3 * 2**19 + 12345) ** 2),
        Fraction(2**41 + 1, 3),
        Fraction(2**59 + 7),  # s = 21: two words per candidate
    ],
)
def test_huge_variance_gaussian_bins_and_residues(sigma2: Fraction) -> None:
    # Bins of width σ/4 out to ±8σ against exact bin masses (mpmath), residues mod 3 and mod 256
    # (uniform to a relative exp(-2π²σ²/256²)), and |X| mod W in eighths (the offset R and its acceptance,
    # expected masses by the normal cdf in float64 — exact to 1e-12 here). Each fails at p < 1e-6.
    _huge_scales.GAUSS_PLANS.clear()
    xs = discrete_gaussian_array(sigma2, 200_000, SeededSource(73))
    plan = _huge_scales.gauss_plan(sigma2)
    assert _huge_scales.gauss_plan_is_cached(sigma2)
    sigma = math.isqrt(sigma2.numerator // sigma2.denominator)
    edges = [j * sigma // 4 for j in range(-32, 33)]
    probs = np.array(discrete_gaussian_bin_masses(sigma2, edges))
    idx = np.searchsorted(np.array(edges), xs, side="left")
    observed = np.bincount(idx, minlength=probs.size).astype(float)
    keep = probs * xs.size >= 5
    rest = observed[~keep].sum()
    assert (
        stats.chisquare(
            np.append(observed[keep], rest), np.append(probs[keep], probs[~keep].sum()) * xs.size
        ).pvalue
        >= ALPHA
    )
    for mod in (3, 256):
        assert stats.chisquare(np.bincount(xs % mod, minlength=mod)).pvalue >= ALPHA
    width = 1 << plan.bucket_bits
    octant = (np.abs(xs) % width) * 8 // width
    sd = math.sqrt(float(sigma2))
    top = 10 * sd
    starts = np.arange(0, top, width, dtype=float)
    mass = np.zeros(8)
    for k in range(8):  # P[|X| mod W in [kW/8, (k+1)W/8)], continuity-corrected, |X| = 0 counted once
        a, b = starts + k * width / 8 - 0.5, starts + (k + 1) * width / 8 - 0.5
        mass[k] = 2 * np.sum(stats.norm.cdf(b / sd) - stats.norm.cdf(np.maximum(a, 0) / sd))
    mass[0] -= 2 * (stats.norm.cdf(0.5 / sd) - 0.5)  # x = 0 has weight 1, not 2
    assert finite_pmf_pvalue(octant, list(mass / mass.sum())) >= ALPHA


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    sigma2=huge_sigma2,
    size=st.integers(100, 300),
    widen=st.booleans(),
)
def test_bucket_envelope_output_is_a_function_of_the_byte_stream(
    seed: int, sigma2: Fraction, size: int, widen: bool
) -> None:
    # widened acceptance tests (by 2^-3): P[no refinement in 100 candidates] <= (3/4)^100 < 1e-12
    slack = 1 << (_huge_scales.gauss_plan(sigma2).v_bits - 3) if widen else 0
    plan = _huge_scales.gauss_plan(sigma2, None, slack)
    rec = RecordingSource(SeededSource(seed))
    first = _huge_scales.gauss_bucket_block(plan, size, rec)
    assert first.dtype == np.int64
    if slack:
        assert any(c[0] == "randbits" for c in rec.calls)  # the exact refinement ran
    np.testing.assert_array_equal(first, _huge_scales.gauss_bucket_block(plan, size, BytesSource(rec.stream)))


def test_bucket_envelope_is_used_and_deterministic_for_a_seed() -> None:
    sigma2 = Fraction(1_234_567**2)
    _huge_scales.GAUSS_PLANS.clear()
    small = discrete_gaussian_array(sigma2, 100, SeededSource(74))  # too few draws to build a plan
    assert small.shape == (100,) and not _huge_scales.gauss_plan_is_cached(sigma2)
    a = discrete_gaussian_array(sigma2, 50_000, SeededSource(74))
    assert _huge_scales.gauss_plan_is_cached(sigma2)
    np.testing.assert_array_equal(a, discrete_gaussian_array(sigma2, 50_000, SeededSource(74)))
    assert not np.array_equal(a, discrete_gaussian_array(sigma2, 50_000, SeededSource(75)))


@pytest.mark.slow
@pytest.mark.parametrize(("sigma2", "bits"), [(Fraction(50, 3), 1), (Fraction(10**4 + 1, 3), 4)])
def test_bucket_envelope_million(sigma2: Fraction, bits: int) -> None:
    src = SeededSource(76)
    assert_fits(gauss_bucket_draws(sigma2, bits, 0, 1_000_000, src), gaussian_pmf(sigma2))


@pytest.mark.slow
def test_huge_variance_gaussian_million_bins() -> None:
    sigma2 = Fraction(1_500_001**2)
    xs = discrete_gaussian_array(sigma2, 1_000_000, SeededSource(77))
    edges = [j * 1_500_001 // 4 for j in range(-32, 33)]
    probs = np.array(discrete_gaussian_bin_masses(sigma2, edges))
    idx = np.searchsorted(np.array(edges), xs, side="left")
    observed = np.bincount(idx, minlength=probs.size).astype(float)
    keep = probs * xs.size >= 5
    obs = np.append(observed[keep], observed[~keep].sum())
    assert stats.chisquare(obs, np.append(probs[keep], probs[~keep].sum()) * xs.size).pvalue >= ALPHA


def test_a_seed_gives_the_same_draws_whatever_tables_the_process_built() -> None:
    """A seeded source decides the algorithm by the call alone: a table another call built (cached for the
    secure source) does not change which numbers a seed gives."""
    pairs = (
        (_sampling.discrete_gaussian_array, Fraction(1009, 3)),
        (_sampling.discrete_laplace_array, Fraction(997, 7)),
    )
    for draw, param in pairs:
        before = draw(param, 5, _sampling.SeededSource(11)).tolist()
        draw(param, 200_000, _sampling.SeededSource(1))  # amortises, so builds and caches the table
        assert draw(param, 5, _sampling.SeededSource(11)).tolist() == before
