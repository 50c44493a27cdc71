"""The subsampled Gaussian's Rényi curve (removal sum alone, by the symmetric-base lemma of
``accounting._rdp``) against high-precision integrals and sums of both directions."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcompose.accounting import (
    PrivacyLoss,
    subsampled_gaussian_renyi,
    subsampled_renyi,
    subsampled_zcdp_to_renyi,
)
from dpcompose.errors import InvalidParameter

from ._reference import mpf as to_mpf

mp = mpmath.mp


def moment(q: Fraction, rho: Fraction, power: int) -> mpmath.mpf:
    """E_{N(0,σ²)}[(1 − q + q·e^{(2x−1)/2σ²})^power], σ² = 1/2ρ (shift 1), by numerical integration."""
    qq, s = to_mpf(q), mpmath.sqrt(1 / (2 * to_mpf(rho)))

    def f(x: mpmath.mpf) -> mpmath.mpf:
        return mpmath.npdf(x, 0, s) * (1 - qq + qq * mpmath.exp((2 * x - 1) / (2 * s * s))) ** power

    cuts = sorted(
        {
            -40 * s,
            -8 * s,
            mpmath.mpf(0),
            mpmath.mpf(1) / 2,
            mpmath.mpf(1),
            8 * s,
            40 * s,
            mpmath.mpf(power) / 2,
            mpmath.mpf(power),
        }
    )
    return mpmath.quad(f, [-mpmath.inf, *cuts, mpmath.inf])


def removal_sum(q: Fraction, rho: Fraction, alpha: int) -> mpmath.mpf:
    """ln A_α/(α − 1) at the working precision (A_α − 1 summed as non-negative terms)."""
    qq, r = to_mpf(q), to_mpf(rho)
    excess = mpmath.fsum(
        mpmath.binomial(alpha, j) * (1 - qq) ** (alpha - j) * qq**j * mpmath.expm1((j - 1) * j * r)
        for j in range(2, alpha + 1)
    )
    return mpmath.log1p(excess) / (alpha - 1)


def value(x: Fraction) -> mpmath.mpf:
    return to_mpf(x)


_LEMMA_POINTS = {  # (the default test and its thorough twin draw alike)
    "q": st.fractions(Fraction(0), Fraction(1)),
    "log_s": st.fractions(Fraction(-40), Fraction(40)),
    "alpha": st.one_of(st.integers(1, 300).map(Fraction), st.fractions(Fraction(1), Fraction(40))),
}


@settings(max_examples=60, deadline=None)
@given(**_LEMMA_POINTS)
def test_symmetric_lemma_pointwise(q: Fraction, log_s: Fraction, alpha: Fraction) -> None:
    _check_symmetric_lemma(q, log_s, alpha)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(**_LEMMA_POINTS)
def test_symmetric_lemma_pointwise_thorough(q: Fraction, log_s: Fraction, alpha: Fraction) -> None:
    _check_symmetric_lemma(q, log_s, alpha)


def _check_symmetric_lemma(q: Fraction, log_s: Fraction, alpha: Fraction) -> None:
    # G(s) = a^α + s^{1−α}b^α − s^α b^{1−α} − a^{1−α} ≥ 0, a = 1 − q + qs, b = (1 − q)s + q: the pointwise
    # inequality behind B_α ≤ A_α for symmetric pairs (module docstring of accounting._rdp)
    with mp.workdps(60):
        qq, s, al = to_mpf(q), mpmath.exp(to_mpf(log_s)), to_mpf(alpha)
        a, b = 1 - qq + qq * s, (1 - qq) * s + qq
        left = a**al + s ** (1 - al) * b**al
        right = s**al * b ** (1 - al) + a ** (1 - al)
        assert left >= right * (1 - mpmath.mpf(10) ** -50)


CASES = [
    (Fraction(1, 10**6), Fraction(1, 10), 128),  # the outside check of issue 34: 1.29e-5 → 1.28e-6
    (Fraction(1, 10**6), Fraction(1, 10), 256),
    (Fraction(1, 50), Fraction(1, 10), 64),
    (Fraction(1, 2), Fraction(1, 100), 2),
    (Fraction(1, 2), Fraction(1, 100), 10),
    (Fraction(1, 8), Fraction(1, 2), 8),
    (Fraction(1, 200), Fraction(1, 3), 32),
]


@pytest.mark.parametrize(("rho", "q", "alpha"), CASES)
def test_curve_is_the_integral_both_orders(rho: Fraction, q: Fraction, alpha: int) -> None:
    (ours,) = subsampled_gaussian_renyi(rho, q, (Fraction(alpha),))
    with mp.workdps(40):
        rem = mpmath.log(moment(q, rho, alpha)) / (alpha - 1)
        add = mpmath.log(moment(q, rho, 1 - alpha)) / (alpha - 1)
        assert add <= rem * (1 + mpmath.mpf(10) ** -25)  # the lemma, on the integrals themselves
        true = max(rem, add)
        assert value(ours) >= true
        assert value(ours) <= true * (1 + mpmath.mpf(10) ** -11)  # tight: float padding only
        assert abs(rem - removal_sum(q, rho, alpha)) <= mpmath.mpf(10) ** -25 * rem


def test_outside_check_before_and_after() -> None:
    rho, q, a = Fraction(1, 10**6), Fraction(1, 10), (Fraction(128),)
    (tight,) = subsampled_gaussian_renyi(rho, q, a)
    (general,) = subsampled_zcdp_to_renyi(rho, q, a)  # any ρ-zCDP base: the addition lemma decides
    assert 1.28e-6 < float(tight) < 1.2801e-6
    assert float(general) > 1.28e-5
    # the Gaussian pair reads the tight curve through PrivacyLoss.renyi
    sigma = Fraction(1000)  # ρ = 1/2σ² = 5e-7 here
    sub = PrivacyLoss.subsampled(PrivacyLoss.gaussian(1, sigma), q).renyi([128])
    assert sub == subsampled_gaussian_renyi(1 / (2 * sigma * sigma), q, a)


GRID = [
    (rho, q, alpha)
    for rho in (Fraction(1, 10**6), Fraction(1, 10**4), Fraction(1, 100), Fraction(1, 8), Fraction(1, 2))
    for q in (Fraction(1, 1000), Fraction(1, 100), Fraction(1, 10))
    for alpha in (2, 3, 4, 8, 16, 32, 64, 128, 256)
]


def test_no_loose_case_on_the_grid() -> None:
    # 135 integer-order cases: the Gaussian curve is within 1e-6 (absolute) and 1e-12 (relative) of the
    # exact divergence everywhere; the general ρ-zCDP curve is looser by more than 1e-6 in 32 of them
    loose_general = 0
    with mp.workdps(60):
        for rho, q, alpha in GRID:
            true = min(removal_sum(q, rho, alpha), alpha * to_mpf(rho))
            (ours,) = subsampled_gaussian_renyi(rho, q, (Fraction(alpha),))
            (general,) = subsampled_zcdp_to_renyi(rho, q, (Fraction(alpha),))
            assert true <= value(ours) <= true * (1 + mpmath.mpf(10) ** -12)
            assert value(general) >= true
            loose_general += value(general) - true > mpmath.mpf(10) ** -6
    assert loose_general == 32


def dgauss_divergences(q: Fraction, sigma: int, shift: int, alpha: int) -> tuple[mpmath.mpf, mpmath.mpf]:
    """The subsampled discrete Gaussian's D_α both ways at an integer shift, summed over the integers."""
    zs = range(-30 * sigma - 10 - shift, 30 * sigma + 11 + shift)
    w = {z: mpmath.exp(-mpmath.mpf(z * z) / (2 * sigma * sigma)) for z in zs}
    total = mpmath.fsum(w.values())
    p0 = {z: v / total for z, v in w.items()}
    qq = to_mpf(q)
    mix = {z: (1 - qq) * p0[z] + qq * p0.get(z - shift, mpmath.mpf(0)) for z in zs}
    removal = mpmath.fsum(mix[z] ** alpha * p0[z] ** (1 - alpha) for z in zs)
    addition = mpmath.fsum(p0[z] ** alpha * mix[z] ** (1 - alpha) for z in zs)
    return mpmath.log(removal) / (alpha - 1), mpmath.log(addition) / (alpha - 1)


@pytest.mark.parametrize(
    ("q", "sigma", "shift", "alpha"),
    [
        (Fraction(1, 100), 1, 1, 2),
        (Fraction(1, 100), 1, 1, 12),
        (Fraction(1, 10), 2, 1, 6),
        (Fraction(1, 3), 3, 2, 16),
        (Fraction(1, 10), 4, 1, 64),
        (Fraction(1, 2), 2, 1, 5),
    ],
)
def test_discrete_gaussian_both_orders(q: Fraction, sigma: int, shift: int, alpha: int) -> None:
    step = PrivacyLoss.subsampled(PrivacyLoss.discrete_gaussian(shift, sigma), q)
    curve = step.renyi([alpha])
    assert curve is not None
    with mp.workdps(40):
        removal, addition = dgauss_divergences(q, sigma, shift, alpha)
        assert addition <= removal  # the lemma on the integers (the reflection z ↦ shift − z)
        assert value(curve[0]) >= removal
        # and the curve is the Gaussian's removal sum (an upper bound here: CKS 2020 Thm 4 per moment)
        assert curve == subsampled_gaussian_renyi(Fraction(shift * shift, 2 * sigma * sigma), q, [alpha])


_CURVE_CASES = {  # (the default test and its thorough twin draw alike)
    "q": st.fractions(Fraction(1, 10**5), Fraction(99, 100)),
    "sigma": st.fractions(Fraction(1, 2), Fraction(20)),
    "alpha": st.integers(2, 48),
}


@settings(max_examples=8, deadline=None)  # (~0.15 s each: a 40-digit integral; 150 in the twin)
@given(**_CURVE_CASES)
def test_gaussian_curve_bounds_both_orders(q: Fraction, sigma: Fraction, alpha: int) -> None:
    _check_gaussian_curve_bounds(q, sigma, alpha)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(**_CURVE_CASES)
def test_gaussian_curve_bounds_both_orders_thorough(q: Fraction, sigma: Fraction, alpha: int) -> None:
    _check_gaussian_curve_bounds(q, sigma, alpha)


def _check_gaussian_curve_bounds(q: Fraction, sigma: Fraction, alpha: int) -> None:
    rho = 1 / (2 * sigma * sigma)
    if alpha * (alpha - 1) * rho > 150:  # (an astronomically large moment: the cap αρ decides there)
        return
    (ours,) = subsampled_gaussian_renyi(rho, q, (Fraction(alpha),))
    with mp.workdps(40):
        add = mpmath.log(moment(q, rho, 1 - alpha)) / (alpha - 1)
        rem = removal_sum(q, rho, alpha)
        assert value(ours) >= max(add, rem)
        tight = min(rem, alpha * to_mpf(rho))
        assert value(ours) <= tight * (1 + mpmath.mpf(10) ** -11) + mpmath.mpf(10) ** -300


def test_only_gaussian_children_drop_the_addition_side() -> None:
    q, a = Fraction(1, 10), (Fraction(64),)
    lap = PrivacyLoss.subsampled(PrivacyLoss.laplace(1, 100), q).renyi(a)
    eps = Fraction(1, 100)
    assert lap is not None
    assert lap == subsampled_renyi(lambda j: min(eps, j * eps * eps / 2), q, a)  # general bound kept
    with pytest.raises(InvalidParameter, match="symmetric"):
        subsampled_renyi(lambda j: Fraction(j), q, a, symmetric=1)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameter, match="rho="):
        subsampled_gaussian_renyi(Fraction(-1), q, a)
    with pytest.raises(InvalidParameter, match="q="):
        subsampled_gaussian_renyi(Fraction(1), Fraction(2), a)
