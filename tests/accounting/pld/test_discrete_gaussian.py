"""The certified PLD of the discrete Gaussian against exact references (mpmath sums, closed forms)."""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcompose.accounting import PrivacyProfile, gaussian_profile, pld_discrete_gaussian
from dpcompose.accounting._pld import discrete_gaussian as discrete_gaussian_mod
from dpcompose.errors import InvalidParameter


def m(q: Fraction | int) -> mpmath.mpf:
    q = Fraction(q)
    return mpmath.mpf(q.numerator) / q.denominator


@functools.lru_cache(maxsize=64)
def brute_atoms(delta: int, s: Fraction | int) -> tuple[tuple[mpmath.mpf, mpmath.mpf], ...]:
    """(loss, P-mass) of every z ∈ [−40s − Δ − 10, 40s + Δ + 10] for N_Z(0, s²) against N_Z(Δ, s²), 40 digits
    (the rest of the mass is below e^{−800})."""
    with mpmath.workdps(40):
        sm = m(s)
        w = math.ceil(40 * Fraction(s)) + delta + 10
        zs = range(-w, w + 1)
        f = [mpmath.exp(-(mpmath.mpf(z) ** 2) / (2 * sm * sm)) for z in zs]
        total = mpmath.fsum(f)
        return tuple(
            ((delta * delta - 2 * z * delta) / (2 * sm * sm), fz / total) for z, fz in zip(zs, f, strict=True)
        )


def brute_delta(delta: int, s: Fraction | int, eps: float) -> mpmath.mpf:
    """δ(ε) = Σ P(z)(1 − e^{ε − L(z)})₊ by direct summation (:func:`brute_atoms`)."""
    with mpmath.workdps(40):
        e = mpmath.mpf(eps)
        return mpmath.fsum(p * -mpmath.expm1(e - loss) for loss, p in brute_atoms(delta, s) if loss > e)


def _he(n: int, x: mpmath.mpf) -> mpmath.mpf:
    """The probabilists' Hermite polynomial He_n(x) = 2^{−n/2} H_n(x/√2)."""
    return mpmath.hermite(n, x / mpmath.sqrt(2)) / mpmath.mpf(2) ** (mpmath.mpf(n) / 2)


def em_delta(delta: int, s: Fraction | int, eps: float, terms: int = 8) -> mpmath.mpf:
    """δ(ε) of the discrete Gaussian pair for large s, at 80 digits: δ = (H(−c) − e^ε H(Δ − c))/Z with c the
    largest z of loss above ε and H(a) = Σ_{y≥a} e^{−y²/2s²} by the Euler–Maclaurin series
    ∫_a^∞ f + f(a)/2 − Σ_k B_{2k}/(2k)!·f^{(2k−1)}(a) (its remainder is below s^{−2·terms}), and Z by
    Poisson summation, s√(2π)(1 + 2Σ_k e^{−2π²s²k²})."""
    sq = Fraction(s)
    c = math.ceil((delta * delta - 2 * sq * sq * Fraction(eps)) / (2 * delta)) - 1
    with mpmath.workdps(80):
        sm = m(sq)

        def tail_sum(a: int) -> mpmath.mpf:
            x = mpmath.mpf(a)
            f = mpmath.exp(-x * x / (2 * sm * sm))
            total = sm * mpmath.sqrt(2 * mpmath.pi) * mpmath.ncdf(-x / sm) + f / 2
            for k in range(1, terms + 1):
                n = 2 * k - 1
                deriv = (-1) ** n * sm ** (-n) * _he(n, x / sm) * f
                total -= mpmath.bernoulli(2 * k) / mpmath.factorial(2 * k) * deriv
            return total

        z = (
            sm
            * mpmath.sqrt(2 * mpmath.pi)
            * (1 + 2 * mpmath.fsum(mpmath.exp(-2 * mpmath.pi**2 * sm * sm * k * k) for k in range(1, 4)))
        )
        return (tail_sum(-c) - mpmath.exp(mpmath.mpf(eps)) * tail_sum(delta - c)) / z


# -- small s: brute force -------------------------------------------------------------------------------

LATTICE_EPSILONS = [0.0, 0.0625, 0.125, 0.3125, 0.5, 1.0, 1.6875, 2.5]  # multiples of 2**-14: tightness
OFF_LATTICE = [0.05, 0.1, 0.3, 1.7]  # δ is read at the lattice point below: the certificate only


def check_small(delta: int, s: Fraction | int) -> None:
    pld = pld_discrete_gaussian(delta, s)
    for eps in LATTICE_EPSILONS + OFF_LATTICE:
        lo, hi = pld.delta_bounds(eps)
        ref = brute_delta(delta, s, eps)
        assert m(lo) <= ref <= m(hi), (delta, s, eps, float(lo), float(ref), float(hi))
        if eps in LATTICE_EPSILONS:
            assert m(hi) - ref <= ref * mpmath.mpf("1e-3") + mpmath.mpf("1e-12"), (delta, s, eps, float(hi))


@pytest.mark.parametrize(
    ("delta", "s"),
    # every Δ and every s in the default run (Δ/s from 1/5 to 3); the rest of the 3 × 4 grid is slow
    [(1, 1), (3, 1), (2, 2), (2, 3), (1, 5), (3, 5)]
    + [
        pytest.param(d, s, marks=pytest.mark.slow)
        for d, s in [(1, 2), (1, 3), (2, 1), (2, 5), (3, 2), (3, 3)]
    ],
)
def test_small_s_against_brute_force(delta: int, s: int) -> None:
    check_small(delta, s)


@pytest.mark.parametrize(("delta", "s"), [(1, Fraction(1, 2)), (2, Fraction(5, 2)), (7, Fraction(41, 3))])
def test_rational_s_against_brute_force(delta: int, s: Fraction) -> None:
    check_small(delta, s)


@settings(max_examples=25, deadline=None)
@given(
    delta=st.integers(1, 6),
    s=st.fractions(Fraction(1, 2), Fraction(8), max_denominator=8),
    eps=st.floats(0.0, 3.0),
)
def test_never_below_brute_force(delta: int, s: Fraction, eps: float) -> None:
    lo, hi = pld_discrete_gaussian(delta, s, step_bits=10).delta_bounds(eps)
    ref = brute_delta(delta, s, eps)
    assert m(lo) <= ref <= m(hi), (delta, s, eps, float(lo), float(ref), float(hi))


def test_composition_of_small_s_against_brute_force() -> None:
    # two discrete Gaussians (1, 3) ∘ (2, 3): brute-force δ of the product pair from the two loss lists
    with mpmath.workdps(40):

        def atoms(delta: int, s: int) -> list[tuple[mpmath.mpf, mpmath.mpf]]:
            zs = range(-40 * s - delta, 40 * s + delta + 1)
            f = [mpmath.exp(-(mpmath.mpf(z) ** 2) / (2 * s * s)) for z in zs]
            tot = mpmath.fsum(f)
            return [
                (mpmath.mpf(delta * delta - 2 * z * delta) / (2 * s * s), fz / tot)
                for z, fz in zip(zs, f, strict=True)
            ]

        a, b = atoms(1, 3), atoms(2, 3)
        a = [x for x in a if x[1] > mpmath.mpf("1e-30")]
        b = [x for x in b if x[1] > mpmath.mpf("1e-30")]
        pld = pld_discrete_gaussian(1, 3).compose(pld_discrete_gaussian(2, 3))
        for eps in [0.0, 0.5, 1.25]:
            e = mpmath.mpf(eps)
            ref = mpmath.fsum(
                pa * pb * (1 - mpmath.exp(e - la - lb)) for la, pa in a for lb, pb in b if la + lb > e
            )
            lo, hi = pld.delta_bounds(eps)
            assert m(lo) <= ref <= m(hi) + mpmath.mpf("1e-29"), (eps, float(lo), float(ref), float(hi))
            assert m(hi) - ref <= ref * mpmath.mpf("1e-3") + mpmath.mpf("1e-12")


# -- large s: the Euler–Maclaurin path ------------------------------------------------------------------


def test_reference_series_matches_brute_force() -> None:
    # the mpmath reference used below, checked once against direct summation
    for eps in [0.0, 0.02, 0.1]:
        a, b = em_delta(3, 60, eps), brute_delta(3, 60, eps)
        assert abs(a - b) <= b * mpmath.mpf("1e-25"), (eps, a, b)


@pytest.mark.parametrize("s", [3000, 2**20 + 3])
@pytest.mark.parametrize("m_panels", [1, 4])
def test_euler_maclaurin_bucket_sums_within_their_bound(s: int, m_panels: int) -> None:
    """Σ_{z=A}^{B} e^{−z²/2s²}/(s√(2π)) from the Euler–Maclaurin step is within its own relative bound of
    the exact sum (mpmath), and that bound is small."""
    ranges = [(-50, 40), (1000, 1900), (10 * s, 10 * s + 600), (-13 * s - 300, -13 * s), (5, 13)]
    a = np.array([float(r[0]) for r in ranges])
    b = np.array([float(r[1]) for r in ranges])
    two_s2 = 2.0 * s * s
    log_n0 = math.log(s) + 0.5 * math.log(2 * math.pi)
    log_s, rel = discrete_gaussian_mod.em_bucket_logs(a, b, float(s), two_s2, log_n0, m_panels)
    with mpmath.workdps(40):
        for (lo, hi), ls, r in zip(ranges, log_s.tolist(), rel.tolist(), strict=True):
            exact_sum = mpmath.fsum(mpmath.exp(-(mpmath.mpf(z) ** 2) / two_s2) for z in range(lo, hi + 1))
            exact_sum /= s * mpmath.sqrt(2 * mpmath.pi)
            assert abs(mpmath.exp(ls) - exact_sum) <= r * exact_sum, (lo, hi, r)
            assert r < 1e-11, (lo, hi, r)


def _em_tail(x0: int, sm: mpmath.mpf) -> mpmath.mpf:
    """H(x0) = Σ_{y≥x0} e^{−y²/2s²} by the Euler–Maclaurin series of :func:`em_delta` (10 terms), at the
    current precision."""
    x = mpmath.mpf(x0)
    f = mpmath.exp(-x * x / (2 * sm * sm))
    total = sm * mpmath.sqrt(2 * mpmath.pi) * mpmath.ncdf(-x / sm) + f / 2
    for k in range(1, 11):
        n = 2 * k - 1
        deriv = (-1) ** n * sm ** (-n) * _he(n, x / sm) * f
        total -= mpmath.bernoulli(2 * k) / mpmath.factorial(2 * k) * deriv
    return total


def exact_range_sum(a: int, b: int, s: Fraction | int) -> mpmath.mpf:
    """Σ_{z=a}^{b} e^{−z²/2s²}/(s√(2π)) to at least 45 digits: summed term by term for short ranges, else as
    H(a) − H(b + 1) (:func:`_em_tail`; used only for s ≥ 500, where its remainder is below 1e-40 relative).

    A range left of 0 is mirrored (f is even): there H(a) ≈ s√(2π) and the difference is ~e^{−t²/2} smaller,
    which at a fixed 50 digits left ~10 (3.5e-12 off at s = 10**7, [−127666375, −127662374]). The working
    precision is also raised by the digits the difference cancels, so that 45 remain for any range."""
    if b < 0:
        a, b = -b, -a
    dps = 50
    while True:
        with mpmath.workdps(dps):
            sm = m(Fraction(s))
            n0 = sm * mpmath.sqrt(2 * mpmath.pi)
            if b - a <= 4000:
                terms = (mpmath.exp(-(mpmath.mpf(z) ** 2) / (2 * sm * sm)) for z in range(a, b + 1))
                return mpmath.fsum(terms) / n0
            assert Fraction(s) >= 500
            ha = _em_tail(a, sm)
            out = ha - _em_tail(b + 1, sm)
            lost = math.ceil((mpmath.mag(ha) - mpmath.mag(out)) * 0.302) + 1  # decimal digits cancelled
            if dps - lost >= 45:
                return out / n0
            dps = lost + 50


def test_reference_range_sum_is_exact_far_in_the_left_tail() -> None:
    # Found by hypothesis (test_shared_range_sums_within_their_bound): at s = 10**7 over [−127666375,
    # −127662374] (t ≈ −12.8, 4002 integers) the reference H(a) − H(b + 1) at 50 digits cancelled all but ~10
    # and was 3.5e-12 off, above _range_sums' bound 7.4e-13; _range_sums itself is within 1.3e-14 of the
    # exact sum. The reference now agrees with term-by-term summation, and _range_sums is within its bound.
    s, lo, hi = 10**7, -127666375, -127662374
    with mpmath.workdps(60):
        sm = mpmath.mpf(s)
        direct = mpmath.fsum(mpmath.exp(-(mpmath.mpf(z) ** 2) / (2 * sm * sm)) for z in range(lo, hi + 1))
        direct /= sm * mpmath.sqrt(2 * mpmath.pi)
        ref = exact_range_sum(lo, hi, s)
        assert abs(ref - direct) <= direct * mpmath.mpf("1e-40"), float(abs(ref - direct) / direct)
        log_n0 = math.log(s) + 0.5 * math.log(2 * math.pi)
        a, b = np.array([float(lo)]), np.array([float(hi)])
        ls, rel = discrete_gaussian_mod.range_sums(a, b, float(s), 2.0 * s * s, log_n0, "")
        ours = mpmath.exp(ls[0])
        assert abs(ours - direct) <= rel[0] * direct, (float(ours / direct - 1), rel)
        assert rel[0] < 1e-12


@settings(max_examples=30, deadline=None)
@given(
    s=st.sampled_from([10**5, 10**7, 123_456_789, 2**40]),
    t=st.floats(8.0, 14.5),
    side=st.sampled_from([-1, 1]),
    n=st.one_of(st.integers(9, 4000), st.integers(4001, 10**6)),
)
def test_range_sums_far_in_the_tail_within_their_bound(s: int, t: float, side: int, n: int) -> None:
    """Large s, ranges far in either tail (|z|/s from 8 to 14.5, where x = z²/2s² is up to 105 and the range
    sums are e^{−x} times s√(2π) smaller than the normaliser): ``_range_sums`` is within its relative bound
    of the exact sum (mpmath, :func:`exact_range_sum`), and the bound is small."""
    a = math.floor(side * t * s)
    b = a + n - 1
    log_n0 = math.log(s) + 0.5 * math.log(2 * math.pi)
    log_s, rel = discrete_gaussian_mod.range_sums(
        np.array([float(a)]), np.array([float(b)]), float(s), 2.0 * s * s, log_n0, ""
    )
    exact = exact_range_sum(a, b, s)
    assert abs(mpmath.exp(log_s[0]) - exact) <= rel[0] * exact, (s, a, b, rel[0])
    assert rel[0] < 1e-10, (s, a, b, rel[0])


@settings(max_examples=30, deadline=None)
@given(
    s=st.sampled_from([Fraction(1, 2), 1, 3, Fraction(41, 3), 100, 777, 3000, 2**20 + 3, 10**7]),
    data=st.data(),
)
def test_shared_range_sums_within_their_bound(s: Fraction | int, data: st.DataObject) -> None:
    """The range sums shared by the discrete Gaussian PLDs (``_range_sums``: Euler–Maclaurin or atom by
    atom) are within their relative bound of the exact sum on random ranges of every length, at s exact
    (a Fraction) and rounded to a float inside."""
    sq = Fraction(s)
    k = math.ceil(15 * sq) + 3
    lengths = st.one_of(st.integers(1, 8), st.integers(9, 200), st.integers(1, 2 * k))
    ranges = []
    for _ in range(6):
        n = min(data.draw(lengths), 2 * k)
        if sq < 500:
            n = min(n, 4000)
        a = data.draw(st.integers(-k, k - n + 1))
        ranges.append((a, a + n - 1))
    a_f = np.array([float(r[0]) for r in ranges])
    b_f = np.array([float(r[1]) for r in ranges])
    s_f = float(sq)
    log_n0 = math.log(s_f) + 0.5 * math.log(2 * math.pi)
    log_s, rel = discrete_gaussian_mod.range_sums(a_f, b_f, s_f, 2 * float(sq * sq), log_n0, "test")
    for (lo, hi), ls, r in zip(ranges, log_s.tolist(), rel.tolist(), strict=True):
        exact = exact_range_sum(lo, hi, sq)
        assert abs(mpmath.exp(ls) - exact) <= r * exact, (s, lo, hi, r)
        assert r < 1e-6, (s, lo, hi, r)


def test_found_by_hypothesis_a_steep_range_is_summed_atom_by_atom() -> None:
    # s = 1/2, range [−2, 6]: the Euler–Maclaurin correction D/T = −4/3 made T(1 + D/T) negative and
    # log1p(D/T) a NaN with a RuntimeWarning (an error in the tests). The bound does not apply there: rel is
    # infinite, and _range_sums sums such a range atom by atom, within its bound.
    s_f = 0.5
    log_n0 = math.log(s_f) + 0.5 * math.log(2 * math.pi)
    a, b = np.array([-2.0]), np.array([6.0])
    _, rel = discrete_gaussian_mod.em_bucket_logs(a, b, s_f, 2 * s_f * s_f, log_n0, 16)
    assert rel[0] == math.inf
    log_s, rel = discrete_gaussian_mod.range_sums(a, b, s_f, 2 * s_f * s_f, log_n0, "test")
    exact = exact_range_sum(-2, 6, Fraction(1, 2))
    assert abs(mpmath.exp(log_s[0]) - exact) <= rel[0] * exact and rel[0] < 1e-6


@pytest.mark.parametrize("s", [Fraction(1, 30), Fraction(1, 2), 1, 3, Fraction(41, 3), 3000, 2**20 + 3])
def test_normaliser_within_its_bound(s: Fraction | int) -> None:
    """``_normaliser`` (Poisson summation, or the direct sum plus tails where that is tighter) against the
    exact normaliser s√(2π)·(1 + 2Σ_k e^{−2π²s²k²}) (the Jacobi theta transformation), allowing the float
    log's own rounding."""
    sq = Fraction(s)
    with mpmath.workdps(50):
        sm = m(sq)
        z_exact = (
            sm
            * mpmath.sqrt(2 * mpmath.pi)
            * (1 + 2 * mpmath.fsum(mpmath.exp(-2 * mpmath.pi**2 * sm * sm * k * k) for k in range(1, 40)))
        )
        k = max(1, math.ceil(14 * sq))
        for z_min, z_max in [(-k, k), (-k, k + 7), (0, 0), (-3, 2 * k)]:
            log_z, rel_z = discrete_gaussian_mod.normaliser(sq, z_min, z_max)
            pad = rel_z + 8 * 2.0**-53 * (abs(log_z) + 1)
            assert abs(mpmath.exp(log_z) - z_exact) <= pad * z_exact, (s, z_min, z_max, rel_z)
            assert rel_z < 1e-8 or z_min == z_max == 0, (s, rel_z)


@settings(max_examples=20, deadline=None)
@given(
    s=st.sampled_from([50, 3000, 2**20 + 3]),
    t0=st.floats(-14.0, 14.0),
    w=st.floats(1e-4, 0.5),
)
def test_simpson_panels_give_the_least_bound(s: int, t0: float, w: float) -> None:
    """The panels chosen per range give a Simpson bound no larger than any other m ∈ {1, 2, 4, 8, 16}
    (so no range's bound is looser than under a fixed choice of m)."""
    a = np.array([math.floor(t0 * s)], dtype=np.float64)
    b = a + max(2.0, math.floor(w * s))
    log_n0 = math.log(s) + 0.5 * math.log(2 * math.pi)
    chosen = int(discrete_gaussian_mod.simpson_panels(a, b, float(s))[0])
    bounds = {
        mv: float(discrete_gaussian_mod.simpson_logs(a, b, mv, float(s), 2.0 * s * s, log_n0)[1][0])
        for mv in (1, 2, 4, 8, 16)
    }
    assert bounds[chosen] <= min(bounds.values()) * (1 + 1e-9), (chosen, bounds)


def test_em_usable_refuses_a_long_range_without_a_bound() -> None:
    rel = np.array([1e-7, 0.3, 2e-6, 0.6])
    count = np.array([10, 2**17, 100, 2**17])
    with pytest.raises(InvalidParameter, match=r"sigma=3: no certified masses on this lattice .*step_bits"):
        discrete_gaussian_mod.em_usable(rel, count, "sigma=3")
    ok = discrete_gaussian_mod.em_usable(rel[:3], count[:3], "sigma=3")
    assert ok.tolist() == [True, True, False]  # the loose short range is summed atom by atom


@pytest.mark.parametrize("s", [2**20, 1_234_567, 10**7])
def test_large_s_against_exact_and_continuous(s: int) -> None:
    delta = s // 20
    pld = pld_discrete_gaussian(delta, s)
    cont = gaussian_profile(delta, s)
    for eps in [0.0, 0.125, 0.25, 0.5]:  # lattice points
        lo, hi = pld.delta_bounds(eps)
        ref = em_delta(delta, s, eps)
        assert m(lo) <= ref <= m(hi), (eps, float(lo), float(ref), float(hi))
        c = m(cont.delta(eps))
        # the discrete and continuous δ agree far beyond 1e-6 here, and the upper end is within 1e-6 of both
        assert abs(ref - c) <= c * mpmath.mpf("1e-9")
        assert m(hi) - c <= c * mpmath.mpf("1e-6"), (eps, float(hi), float(c))
    for eps in [0.01, 0.1, 0.3]:  # off the lattice: only the certificate
        lo, hi = pld.delta_bounds(eps)
        ref = em_delta(delta, s, eps)
        assert m(lo) <= ref <= m(hi), (eps, float(lo), float(ref), float(hi))


@pytest.mark.parametrize(
    ("delta", "s", "bits"),
    [
        (150, 3000, 14),
        (1, 3000, 14),
        pytest.param(3000, 2000, 14, marks=pytest.mark.slow),  # (Δ > s, as the next case)
        (2000, 1000, 14),
        (7, 4093, 14),
        (2000, 1000, 8),
        (20_000, 1000, 8),
    ],
)
def test_bucket_path_matches_atom_path(
    delta: int, s: int, bits: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bucket path (forced: Euler–Maclaurin for long buckets, direct sums for buckets of at most 8
    integers, as at bits 8 here) and the atom path give the same certified curve, and both contain the exact
    value."""
    atoms = pld_discrete_gaussian(delta, s, step_bits=bits)
    monkeypatch.setattr(discrete_gaussian_mod, "ATOM_LIMIT", 0)
    buckets = pld_discrete_gaussian(delta, s, step_bits=bits)
    for eps in [0.0, 0.01, 0.1, 0.5, 1.0, 3.0]:
        ref = em_delta(delta, s, eps)
        for pld in (atoms, buckets):
            lo, hi = pld.delta_bounds(eps)
            assert m(lo) <= ref <= m(hi), (eps, float(lo), float(ref), float(hi))
        ha, hb = atoms.delta(eps), buckets.delta(eps)
        assert abs(ha - hb) <= Fraction(1, 10**6) * max(ha, hb) + Fraction(1, 10**30)


def _total(side: object) -> float:
    """The correctly rounded sum of the stored masses and the mass at +∞."""
    return math.fsum([*side.masses.tolist(), side.inf])  # type: ignore[attr-defined]


@pytest.mark.parametrize("force_buckets", [False, True])
@pytest.mark.parametrize(
    ("delta", "s"), [(3, 5), (150, 3000), (1, 3000), (2000, 1000), (2**20 // 20, 2**20), (61_728, 1_234_567)]
)
def test_mass_is_kept(delta: int, s: int, force_buckets: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Connect-the-dots keeps the P-mass and every tail is kept on the upper side: its total is at least 1;
    the lower side holds lower bounds of masses that sum to at most 1. Both are within the certified
    relative errors (amplified by 1/h in the split), which are far below these margins."""
    if force_buckets:
        if s < 1000:
            return
        monkeypatch.setattr(discrete_gaussian_mod, "ATOM_LIMIT", 0)
    pld = pld_discrete_gaussian(delta, s)
    up, low = _total(pld.upper), _total(pld.lower)
    assert 1 <= up <= 1 + 1e-7, up - 1
    assert 1 - 1e-11 <= low <= 1, 1 - low


def test_thousand_fold_composition() -> None:
    s = 2**20
    delta = s // 20
    pld = pld_discrete_gaussian(delta, s).self_compose(1000)
    lo, hi = pld.epsilon_bounds(1e-6)
    cont = PrivacyProfile.compose([gaussian_profile(delta, s)] * 1000).epsilon(1e-6)  # μ = √1000·Δ/s
    assert lo <= cont <= hi, (float(lo), float(cont), float(hi))
    assert float(hi) <= 8.31


# -- tiny s: one output carries all but e^{−1/(2s²)} of the mass ----------------------------------------


@pytest.mark.parametrize("s", [Fraction(1, 30), Fraction(1, 20), Fraction(1, 15)])
def test_tiny_s_is_one_atom_and_brackets_brute_force(s: Fraction) -> None:
    """For s < 1/14 only z = 0 is enumerated (every other output has P < e^{−98}): the PLD is a single
    lattice point plus the tails, not tens of millions of points spanning the far outputs' losses (4.4e7 at
    s = 1/30, which took 16 s to build), and it still brackets the exact δ at every ε, past the far outputs'
    losses (±μ²/2·(1 ± 2)) too."""
    pld = pld_discrete_gaussian(1, s)
    assert pld.upper.masses.size <= 2 and pld.lower.masses.size == 1
    half = float(1 / (2 * s * s))  # the loss of z = 0
    for eps in [0.0, 1.0, half - 1, half - 1e-3, half + 1, 2 * half, 3 * half - 1, 3 * half + 1]:
        lo, hi = pld.delta_bounds(eps)
        ref = brute_delta(1, s, eps)
        assert m(lo) <= ref <= m(hi), (eps, float(lo), float(ref), float(hi))
        if eps < half - 30:  # δ ≈ 1 − e^{ε − μ²/2}: tight (nearer the atom, the lattice step shows)
            assert m(hi) - m(lo) <= mpmath.mpf("1e-9") * ref


@pytest.mark.parametrize(
    ("m_", "s"), [(1, Fraction(1, 30)), (2, Fraction(1, 3)), (43, 3), (40, Fraction(41, 3))]
)
def test_tail_sums_bound_the_exact_sums(m_: int, s: Fraction | int) -> None:
    """Σ_{y≥m} e^{−y²/2s²} ≤ f(m) + s√(2π)Φ(−m/s), and the float bound is above the exact sum (mpmath)."""
    ours = discrete_gaussian_mod.tail_sum_up(m_, Fraction(s))
    with mpmath.workdps(50):
        sm = m(Fraction(s))
        exact = mpmath.nsum(lambda y: mpmath.exp(-(y**2) / (2 * sm * sm)), [m_, mpmath.inf])
    assert exact <= ours <= exact * 2, (float(exact), ours)


# -- small things ---------------------------------------------------------------------------------------


def test_zero_sensitivity_is_free() -> None:
    pld = pld_discrete_gaussian(0, 3)
    assert pld.delta(0) < 1e-12
    assert pld.epsilon(0) == 0


def test_fraction_and_int_s_agree() -> None:
    a = pld_discrete_gaussian(2, 3).delta_bounds(0.5)
    b = pld_discrete_gaussian(2, Fraction(6, 2)).delta_bounds(0.5)
    assert a == b


@pytest.mark.parametrize(
    "call",
    [
        lambda: pld_discrete_gaussian(-1, 3),
        lambda: pld_discrete_gaussian(1.5, 3),  # type: ignore[arg-type]
        lambda: pld_discrete_gaussian(True, 3),
        lambda: pld_discrete_gaussian(1, 0),
        lambda: pld_discrete_gaussian(1, -2),
        lambda: pld_discrete_gaussian(1, math.nan),
        lambda: pld_discrete_gaussian(1, math.inf),
        lambda: pld_discrete_gaussian(100, 1),  # Δ/s above 30
        lambda: pld_discrete_gaussian(1, 10**9),  # Δ/s below 1e-8
        lambda: pld_discrete_gaussian(10**400, 10**400),  # s above 2**40
        lambda: pld_discrete_gaussian(1, Fraction(1, 10**400)),  # Δ/s far above 30
        lambda: pld_discrete_gaussian(1, 3, step_bits=0),
        lambda: pld_discrete_gaussian(1, 3, tail=1.0),
        lambda: pld_discrete_gaussian(30, 1, step_bits=40),  # too many buckets
    ],
)
def test_bad_input_raises_invalid_parameter(call: object) -> None:
    with pytest.raises(InvalidParameter):
        call()  # type: ignore[operator]
