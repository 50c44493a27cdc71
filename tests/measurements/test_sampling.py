"""Tests of the exact samplers in ``dpcompose.measurements._sampling``.

Distribution checks compare the empirical pmf with the exact pmf by a chi-square goodness-of-fit test.
False-alarm rate: each check fails when its p-value is below ``ALPHA = 1e-6``, so a correct sampler fails
a given check with probability 1e-6 (and never, with the fixed seeds used here, on a given platform).
Bins: every integer whose expected count is at least 20, and one pooled bin for each tail beyond them, so
the tails are tested too. The default run uses 2·10⁵ draws per batch check and 10⁴ per scalar check; the
``slow`` run uses 10⁶ (batch) and 2·10⁵ (scalar).
"""

from __future__ import annotations

import ast
import inspect
import itertools
import math
from collections.abc import Callable
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpcompose.errors import InvalidParameter
from dpcompose.measurements import _sampling
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

ALPHA = 1e-6
mpmath.mp.dps = 40

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
    m = int(60 * math.sqrt(float(sigma2))) + 60
    z = mpmath.fsum(mpmath.exp(-(mpmath.mpf(x) ** 2) / (2 * s2)) for x in range(-m, m + 1))
    return lambda x: float(mpmath.exp(-(mpmath.mpf(x) ** 2) / (2 * s2)) / z)


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
    observed = np.concatenate(
        [[np.sum(samples < -lo)], [np.sum(samples == x) for x in support], [np.sum(samples > lo)]]
    ).astype(float)
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


@pytest.mark.parametrize("sigma2", [Fraction(1, 4), Fraction(50, 3)])
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
    got = _sampling._bern_exp(np.full(n, num, dtype=dtype), den, SeededSource(33))
    assert binom_ok(int(got.sum()), n, float(mpmath.exp(-mpmath.mpf(num) / den)))


def test_vectorised_bernoulli_exp_minus_one_and_ratio() -> None:
    n = 200_000
    got = _sampling._bern_exp_minus_one(n, SeededSource(34))
    assert binom_ok(int(got.sum()), n, math.exp(-1))
    num = np.arange(n, dtype=np.int64) % 10
    ratio = _sampling._bern_ratio(num, 10, SeededSource(35))
    for j in range(10):
        assert binom_ok(int(ratio[num == j].sum()), int((num == j).sum()), j / 10)


@pytest.mark.parametrize("m", [1, 2, 3, 200, 257, 65537, 2**40 + 5, 2**62])
def test_uniform_below_range_and_spread(m: int) -> None:
    u = _sampling._uniform_below(m, 20_000, SeededSource(36))
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
        m = int(20 * math.isqrt(int(param) + 1)) + 30
        w = [mpmath.mpf(1)] + [2 * mpmath.exp(-(mpmath.mpf(j) ** 2) / (2 * p)) for j in range(1, m + 1)]
        z = mpmath.fsum(w)
        suffix, acc = [mpmath.mpf(0)] * (m + 2), mpmath.mpf(0)
        for j in range(m, -1, -1):
            acc += w[j]
            suffix[j] = acc
        return [suffix[k] / z if k <= m else mpmath.mpf(0) for k in range(1, count + 1)]


def assert_true_tail_bounds(kind: str, param: Fraction, prec: int) -> None:
    lo, hi = _sampling._tail_bounds(kind, param, prec)
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
    lo, hi = _sampling._exp_neg_bounds(x, w)
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
    assert_true_tail_bounds(kind, param, _sampling._U_BITS)


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
    table = _sampling._inverse_table(kind, param)
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
            got = _sampling._inverse_block(table, 1, src)
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
    table = _sampling._inverse_table(kind, param, slack=1 << 24)
    rec = RecordingSource(SeededSource(51))
    xs = _sampling._fill_exact(100_000, lambda n: _sampling._inverse_block(table, n, rec))
    assert sum(c[0] == "randbits" for c in rec.calls) > 1000
    assert_fits(xs, pmf)


def test_inverse_tables_are_cached_and_bounded() -> None:
    first = _sampling._inverse_table("gauss", Fraction(3))
    assert _sampling._inverse_table("gauss", Fraction(3)) is first
    for j in range(2 * _sampling._TABLE_CACHE_SIZE):
        _sampling._inverse_table("laplace", Fraction(j + 1, 7))
    assert len(_sampling._TABLES) == _sampling._TABLE_CACHE_SIZE
    assert not _sampling._table_is_cached("gauss", Fraction(3))


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


def test_discrete_laplace_array_large_scale_uses_block_algorithm() -> None:
    scale = Fraction(10_000, 3)  # above the inversion-table limit: CKS Algorithm 2 on blocks
    assert scale > _sampling._LAPLACE_TABLE_MAX_SCALE
    assert_fits(discrete_laplace_array(scale, 200_000, SeededSource(54)), laplace_pmf(scale))


@pytest.mark.parametrize("sigma2", [Fraction(1, 4), Fraction(50, 3), Fraction(9) + Fraction(1, 2**50)])
def test_gaussian_block_algorithm_matches_exact_pmf(sigma2: Fraction) -> None:
    # CKS Algorithm 3 on blocks (used above the table limit), at small σ² to test it against the pmf;
    # the last σ² needs the exact Python-integer (object array) path.
    src = SeededSource(55)
    xs = _sampling._fill(100_000, lambda n: _sampling._gaussian_block(sigma2, n, src))
    assert_fits(xs, gaussian_pmf(sigma2))


@pytest.mark.parametrize("scale", [Fraction(7, 3), Fraction(2**60 + 1, 2**58)])
def test_laplace_block_algorithm_matches_exact_pmf(scale: Fraction) -> None:
    src = SeededSource(56)
    n, d = scale.numerator, scale.denominator
    xs = _sampling._fill(100_000, lambda c: _sampling._laplace_block(n, d, c, src))
    assert_fits(xs, laplace_pmf(scale))


def test_small_uncached_requests_do_not_build_tables() -> None:
    sigma2 = Fraction(10**6 + 7)  # a table of ~10⁴ entries: not worth building for 100 draws
    discrete_gaussian_array(sigma2, 100, SeededSource(57))
    assert not _sampling._table_is_cached("gauss", sigma2)
    discrete_gaussian_array(sigma2, 20_000, SeededSource(57))
    assert _sampling._table_is_cached("gauss", sigma2)


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
    table = _sampling._inverse_table(kind, param, slack=1 << 29)
    rec = RecordingSource(SeededSource(seed))
    first = _sampling._inverse_block(table, 200, rec)
    assert any(c[0] == "randbits" for c in rec.calls)  # the fallback ran
    np.testing.assert_array_equal(first, _sampling._inverse_block(table, 200, BytesSource(rec.stream)))


def test_seeded_source_is_reproducible_and_secure_source_is_not_constant() -> None:
    a = discrete_gaussian_array(Fraction(9), 100, SeededSource(5))
    b = discrete_gaussian_array(Fraction(9), 100, SeededSource(5))
    np.testing.assert_array_equal(a, b)
    c = discrete_gaussian_array(Fraction(9), 100, SecureSource())
    d = discrete_gaussian_array(Fraction(9), 100)  # default source: SecureSource
    assert not np.array_equal(c, d)  # equal with probability far below 1e-30
    assert isinstance(SecureSource(), RandomSource)
    assert isinstance(SeededSource(1), RandomSource)


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
    monkeypatch.setattr(_sampling, "math", _NoMath())
    src = SeededSource(41)
    sample_bernoulli(Fraction(1, 3), src)
    sample_bernoulli_exp(Fraction(7, 3), src)
    sample_discrete_laplace(Fraction(7, 3), src)
    sample_discrete_gaussian(Fraction(50, 3), src)
    assert discrete_laplace_array(Fraction(7, 3), 1000, src).dtype == np.int64
    assert discrete_gaussian_array(Fraction(50, 3), 1000, src).dtype == np.int64
    assert discrete_gaussian_array(Fraction(9) + Fraction(1, 2**60), 100, src).dtype == np.int64
    # inversion tables built, and the exact fallback run, with floats forbidden too
    _sampling._TABLES.clear()
    _sampling._tail_bounds.cache_clear()
    assert discrete_gaussian_array(Fraction(50, 7), 1000, src).dtype == np.int64
    assert discrete_laplace_array(Fraction(11, 3), 1000, src).dtype == np.int64
    coarse = _sampling._inverse_table("gauss", Fraction(3, 7), slack=1 << 27)
    assert _sampling._inverse_block(coarse, 1000, src).dtype == np.int64
    assert _sampling._table_is_cached("gauss", Fraction(50, 7))


def test_sampling_module_has_no_float_operations_in_its_source() -> None:
    tree = ast.parse(inspect.getsource(_sampling))
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
