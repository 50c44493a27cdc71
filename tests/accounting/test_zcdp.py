"""zCDP and Rényi conversions against mpmath minimisation over the order α."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcompose import accounting as acc
from dpcompose.errors import InvalidParameter

from ._reference import assert_tight, golden_min, mpf

rho_st = st.floats(min_value=1e-6, max_value=50.0)
delta_st = st.floats(min_value=1e-15, max_value=0.5)


def _bbghs(alpha: mpmath.mpf, r: mpmath.mpf, delta: mpmath.mpf) -> mpmath.mpf:
    return r + mpmath.log((alpha - 1) / alpha) - (mpmath.log(delta) + mpmath.log(alpha)) / (alpha - 1)


def _cks_eps_ref(rho: float, delta: float) -> mpmath.mpf:
    r, d = mpf(rho), mpf(delta)
    centre = 0.5 * (math.log(-math.log(delta)) - math.log(rho))

    def f(u: mpmath.mpf) -> mpmath.mpf:
        a = 1 + mpmath.exp(u)
        return _bbghs(a, a * r, d)

    best = golden_min(f, centre - 30, centre + 30)
    bs = r + 2 * mpmath.sqrt(r * mpmath.log(1 / d))
    return max(mpf(0), min(best, bs))


@given(rho_st, delta_st)
def test_zcdp_to_approx_against_mpmath(rho: float, delta: float) -> None:
    assert_tight(acc.zcdp_to_approx(rho, delta), _cks_eps_ref(rho, delta), rel=1e-9, abs_=1e-12)


@given(rho_st, delta_st, st.floats(min_value=1.0, max_value=4.0))
def test_zcdp_to_approx_monotone(rho: float, delta: float, factor: float) -> None:
    assert acc.zcdp_to_approx(rho, delta) <= acc.zcdp_to_approx(rho * factor, delta)
    assert acc.zcdp_to_approx(rho, delta / factor) >= acc.zcdp_to_approx(rho, delta)


def test_zcdp_to_approx_monotone_just_below_a_float() -> None:
    """A ρ a hair below ``zcdp_budget``'s (a float) converts to no more than it: the rounding of ρ and δ to
    a grid is non-decreasing whatever the denominators (a ρ with a 3 in its denominator once rounded to a
    coarser grid and converted to ε + 2e-13)."""
    d = Fraction(5, 10**7)
    rho = acc.zcdp_budget(1, d)
    at = acc.zcdp_to_approx(rho, d)
    assert at <= 1
    for den in (3, 7, 1000003):
        below = rho * (1 - Fraction(1, den * 2**52))
        assert acc.zcdp_to_approx(below, d) <= at
        assert acc.zcdp_to_approx(rho, d * (1 - Fraction(1, den * 2**60))) >= at


@settings(max_examples=20)
@given(st.integers(1, 2**60), st.integers(1, 2**60), st.integers(1, 2**20), delta_st)
def test_zcdp_to_approx_monotone_in_rational_rho(num: int, den: int, step: int, delta: float) -> None:
    """Neighbouring rationals of unrelated denominators (ρ and ρ·(1 + step/2**50))."""
    rho = Fraction(num, den)
    assert acc.zcdp_to_approx(rho, delta) <= acc.zcdp_to_approx(rho * (1 + Fraction(step, 2**50)), delta)


@settings(max_examples=25)
@given(rho_st, st.floats(min_value=0.0, max_value=200.0))
def test_zcdp_delta_against_mpmath(rho: float, eps: float) -> None:
    r, e = mpf(rho), mpf(eps)

    def log_d(u: mpmath.mpf) -> mpmath.mpf:
        a = 1 + mpmath.exp(u)
        return (a - 1) * (a * r - e) - mpmath.log(a - 1) + a * mpmath.log(1 - 1 / a)

    ref = min(mpf(1), mpmath.exp(golden_min(log_d, -40, 40)))
    assert_tight(acc.zcdp_delta(rho, eps), ref, rel=1e-8, abs_=1e-300)


def test_zcdp_reference_values() -> None:
    # accounting_cases.json: 1000 × ε=0.1 as zCDP, and 1000 Gaussians with σ/Δ = 20.
    rho = acc.zcdp_compose([acc.pure_to_zcdp(0.1)] * 1000)
    assert abs(float(acc.zcdp_to_approx(rho, 1e-6)) - 20.55194881404103) < 1e-9
    assert abs(float(acc.zcdp_to_approx(Fraction(1000, 800), 1e-6)) - 8.845889348462379) < 1e-9


curve_st = st.lists(
    st.tuples(st.floats(min_value=1.01, max_value=500.0), st.floats(0.0, 100.0)), min_size=1, max_size=8
)


@given(curve_st, delta_st)
def test_renyi_to_approx_against_mpmath(curve: list[tuple[float, float]], delta: float) -> None:
    alphas, eps = zip(*curve, strict=False)
    ref = max(mpf(0), min(_bbghs(mpf(a), mpf(e), mpf(delta)) for a, e in curve))
    assert_tight(acc.renyi_to_approx(list(alphas), list(eps), delta), ref, abs_=1e-13)


def test_exact_rules() -> None:
    assert acc.zcdp_compose([Fraction(1, 8), 0.25, 1]) == Fraction(11, 8)
    assert acc.pure_to_zcdp(Fraction(1, 10)) == Fraction(1, 200)
    assert acc.group_zcdp(Fraction(1, 8), 4) == 2
    assert acc.zcdp_to_approx(0, 1e-9) == 0


@pytest.mark.parametrize("bad", [math.nan, math.inf, -1.0])
def test_bad_input(bad: float) -> None:
    with pytest.raises(InvalidParameter, match=r"rhos\[0\]"):
        acc.zcdp_compose([bad])
    with pytest.raises(InvalidParameter, match="rho="):
        acc.zcdp_to_approx(bad, 1e-6)
    with pytest.raises(InvalidParameter, match="epsilon="):
        acc.pure_to_zcdp(bad)
    with pytest.raises(InvalidParameter, match=r"alphas\[0\]"):
        acc.renyi_to_approx([bad], [1.0], 1e-6)
    with pytest.raises(InvalidParameter, match="delta="):
        acc.zcdp_to_approx(0.5, bad)


def test_bad_shapes_and_ranges() -> None:
    with pytest.raises(InvalidParameter, match="rhos"):
        acc.zcdp_compose([])
    with pytest.raises(InvalidParameter, match="same length"):
        acc.renyi_to_approx([2, 3], [1.0], 1e-6)
    with pytest.raises(InvalidParameter, match=r"alphas\[0\]"):
        acc.renyi_to_approx([1.0], [1.0], 1e-6)
    with pytest.raises(InvalidParameter, match="delta="):
        acc.zcdp_to_approx(0.5, 0)
    with pytest.raises(InvalidParameter, match="delta="):
        acc.zcdp_to_approx(0.5, 1.0)
    with pytest.raises(InvalidParameter, match="k="):
        acc.group_zcdp(0.5, 0)
