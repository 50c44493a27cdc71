"""How user numbers are read (issue 11, items A.4 and D.10): one reader for every numeric type, budgets as
the decimal they print as in their own type, costs and sensitivities never below their exact value, and
accounting functions that stay correct (or refuse) at huge and tiny inputs.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpcompose as dp
from dpcompose._validation import read_real
from dpcompose.accounting import decimal, exact
from dpcompose.accounting._exact import log1p_up, log_down, log_up, sqrt_up_q

FLOAT_DTYPES = [np.float16, np.float32, np.float64, np.longdouble]
INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def _printed(x: np.floating[Any]) -> Fraction:
    """The shortest decimal that round-trips in x's own type, as numpy prints it."""
    return Fraction(np.format_float_scientific(x, unique=True))


def _bits(x: np.floating[Any]) -> Fraction:
    num, den = x.as_integer_ratio()
    return Fraction(num, den)


@st.composite
def float_of_some_dtype(draw: st.DrawFn) -> np.floating[Any]:
    dtype = draw(st.sampled_from(FLOAT_DTYPES))
    if dtype is np.longdouble:
        # a double plus a few more low bits, so that longdouble values need their extra precision
        base = np.longdouble(draw(st.floats(0, 1e300, allow_nan=False, allow_infinity=False)))
        value = base * (1 + np.longdouble(draw(st.integers(0, 2**10))) * np.finfo(np.longdouble).eps)
        return np.longdouble(value)
    width = np.finfo(dtype).bits
    f = draw(st.floats(0, float(np.finfo(dtype).max), width=width if width in (16, 32, 64) else 64))
    return dtype(f)


# --- the A.4 defect -------------------------------------------------------------------------------------


def test_float32_budget_admits_no_more_than_it_prints() -> None:
    """np.float32(0.3) prints as 0.3: a filter with that budget refuses the third RR query of ε = 0.1
    exactly as a budget of 0.3 does (before the fix it was read as 0.30000001192… and admitted it)."""
    bits = dp.CategoricalDomain([0, 1])
    rr = dp.m.make_randomized_response(bits, dp.DiscreteDistance(), epsilon=0.1)
    assert rr.map(1) == Fraction(0.1) > Fraction(1, 10)  # the cost is the binary value of 0.1
    for budget in (0.3, np.float32(0.3), np.float16(0.3), np.longdouble("0.3"), Decimal("0.3")):
        f = dp.make_privacy_filter(bits, dp.DiscreteDistance(), dp.PureDP(), 1, budget)
        q = f(0)
        q(rr)
        q(rr)
        with pytest.raises(dp.BudgetExceeded):
            q(rr)


@given(float_of_some_dtype())
def test_budget_is_read_as_printed_in_its_own_type(x: np.floating[Any]) -> None:
    assert decimal(x) == _printed(x)
    assert x.dtype.type(np.format_float_scientific(x, unique=True)) == x  # the printed form round-trips
    assert dp.PureDP().parse(x) == _printed(x)


@given(float_of_some_dtype())
def test_cost_and_sensitivity_never_read_below_the_exact_value(x: np.floating[Any]) -> None:
    assert exact(x) == _bits(x)  # all bits, longdouble included (never rounded to a double first)
    sens = dp.L1Distance().validate(x)
    assert sens >= _bits(x) and sens >= _printed(x)
    assert sens == max(_bits(x), _printed(x))


def test_longdouble_sensitivity_rounds_up() -> None:
    third = np.longdouble(1) / np.longdouble(3)
    if _bits(third) == Fraction(float(third)):  # pragma: no cover - platforms where longdouble is double
        pytest.skip("longdouble is a double on this platform")
    assert Fraction(float(third)) < _bits(third)  # rounding to a double would read it too small
    assert dp.AbsoluteDistance().validate(third) >= _bits(third)
    lap = dp.m.make_laplace(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=1.0)
    assert lap.map(third) >= _bits(third)


@given(st.sampled_from(INT_DTYPES), st.integers(0, 2**64 - 1))
def test_numpy_integers_are_read_exactly(dtype: Any, n: int) -> None:
    info = np.iinfo(dtype)
    value = dtype(n % (int(info.max) + 1))
    assert read_real(value, "x") == int(value)
    assert dp.SymmetricDistance().validate(value) == int(value)
    assert dp.accounting.group_zcdp(1, value if int(value) > 0 else 1) >= 1


def test_reader_accepts_and_refuses() -> None:
    assert read_real(np.array(0.25), "x") == 0.25  # 0-d arrays are read as their scalar
    assert read_real(Decimal("0.1"), "x") == Fraction(1, 10)  # a Decimal's exact value
    assert str(read_real(-0.0, "x")) == "0.0"
    assert read_real(5e-324, "x") == 5e-324
    assert read_real(np.float32(0.5), "x") == 0.5
    for bad in (
        True,
        np.bool_(False),
        1j,
        np.complex128(1),
        "1",
        None,
        math.nan,
        np.float32("nan"),
        np.float16("inf"),
        Decimal("NaN"),
        Decimal("sNaN"),
        Decimal("Infinity"),
        10**400,
        Fraction(10**400, 3),
        Decimal("1e400"),
        np.array([1.0]),
        np.array([[1.0]]),
        np.array([1.0], dtype=object),
        Decimal("1e-5000"),
    ):
        with pytest.raises(dp.InvalidParameter, match="^x="):
            read_real(bad, "x")
    if np.finfo(np.longdouble).max > 1e400:
        with pytest.raises(dp.InvalidParameter, match="too large"):
            read_real(np.longdouble("1e400"), "x")


def test_numbers_beyond_doubles_are_refused_as_too_large() -> None:
    for call in (
        lambda: dp.m.make_laplace(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=10**400),
        lambda: dp.t.make_sum(
            dp.VectorDomain(dp.AtomDomain(float, bounds=(0.0, 1.0))), dp.SymmetricDistance(), max_size=10**400
        ),
        lambda: dp.accounting.optimal_delta([0.1], None, 0.05, tolerance=Fraction(10**400, 3)),
    ):
        with pytest.raises(dp.InvalidParameter, match="too large"):
            call()


# --- helpers that stay finite on every positive rational ------------------------------------------------


@given(st.integers(1, 10**500), st.integers(1, 10**500))
def test_log_bounds_bracket_mpmath_at_any_magnitude(n: int, d: int) -> None:
    q = Fraction(n, d)
    with mpmath.workdps(60):
        ref = mpmath.log(n) - mpmath.log(d)
        assert log_down(q) <= ref <= log_up(q)
        assert math.isfinite(log_down(q)) and math.isfinite(log_up(q))
        assert log1p_up(q) >= mpmath.log(1 + mpmath.mpf(n) / d)


@given(st.integers(0, 10**900), st.integers(1, 10**300))
def test_sqrt_up_q_is_an_upper_bound(n: int, d: int) -> None:
    q = Fraction(n, d)
    root = sqrt_up_q(q)
    assert root * root >= q


# --- accounting at huge and tiny inputs: a valid answer or a refusal, never a raw error ----------------


def test_concurrent_vadhan_wang_at_huge_epsilon() -> None:
    eps, delta, order = dp.accounting.concurrent_vadhan_wang([800, 0.5, 1000], [1e-6, 1e-6, 1e-7])
    assert eps == Fraction(3601, 2)
    e = [800, 0.5, 1000]
    dl = [Fraction(1e-6), Fraction(1e-6), Fraction(1e-7)]
    with mpmath.workdps(50):
        prefix = mpmath.mpf(0)
        ref = mpmath.mpf(0)
        for i in order:
            ref += mpmath.exp(prefix) * mpmath.mpf(dl[i].numerator) / dl[i].denominator
            prefix += e[i]
        assert mpmath.mpf(delta.numerator) / delta.denominator >= min(ref, 1)
    # the best order puts the small ε first: its δ is paid at e^0 and e^0.5, the rest at once
    assert order[0] == 1


def test_advanced_at_huge_epsilon_falls_back_to_kov() -> None:
    eps, _ = dp.accounting.advanced([1e308, 0.1], None, 1e-6)
    assert eps <= Fraction(1e308) + Fraction(0.1)  # never above basic composition
    assert eps >= Fraction(1e308)  # nor below the largest single ε
    with pytest.raises(dp.InvalidParameter, match=r"epsilons\[0\]"):
        dp.accounting.advanced_drv([1e308], None, 1e-6)
    with pytest.raises(dp.InvalidParameter, match=r"epsilons\[0\]"):
        dp.accounting.rruv_filter_epsilon([1e3], 2.0, 1e-6)


def test_optimal_at_huge_epsilon_returns_the_trivial_valid_bounds() -> None:
    assert dp.accounting.optimal_epsilon([1000, 0.5], None, 1e-6) == Fraction(2001, 2)
    lo, hi = dp.accounting.optimal_delta_bounds([1000, 0.5], [1e-6, 0], 10)
    assert hi == 1 and lo == Fraction(1e-6)
    assert dp.accounting.PrivacyProfile.pure(1e308).delta(1) == 1


def test_conversions_at_tiny_delta() -> None:
    tiny = 5e-324
    eps = dp.accounting.zcdp_to_approx(0.5, tiny)
    with mpmath.workdps(50):
        # Bun–Steinke: ρ + 2√(ρ ln(1/δ)) is an upper bound the answer never exceeds; CKS at its best α is
        # at least ρ + ... — check the answer lies between ρ and Bun–Steinke.
        bs = 0.5 + 2 * mpmath.sqrt(0.5 * -mpmath.log(mpmath.mpf(tiny)))
        assert Fraction(1, 2) <= eps <= Fraction(str(bs)) * (1 + Fraction(1, 10**12))
    assert dp.accounting.zcdp_to_approx(0.5, Fraction(1, 10**400)) > 0
    assert dp.accounting.advanced([0.1] * 10, None, Fraction(1, 10**400))[0] > 0
    assert dp.accounting.zcdp_budget(1.0, tiny) > 0
    g = dp.m.make_gaussian(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=4.0)
    assert dp.make_zcdp_to_approx(g, tiny).map(1)[0] > 0


def test_gaussian_delta_at_extreme_arguments_never_under_reports() -> None:
    with mpmath.workdps(60):

        def ref(mu_sq: Fraction, e: float) -> mpmath.mpf:
            mu = mpmath.sqrt(mpmath.mpf(mu_sq.numerator) / mu_sq.denominator)
            return mpmath.ncdf(mu / 2 - e / mu) - mpmath.exp(e) * mpmath.ncdf(-mu / 2 - e / mu)

        for mu_sq, e in ((Fraction(1, 10**40), 1.0), (Fraction(1), 700.0), (Fraction(10**6), 1.0)):
            ours = dp.accounting.gaussian_delta(mu_sq, e)
            assert mpmath.mpf(ours.numerator) / ours.denominator >= max(ref(mu_sq, e), 0)
        # μ = 2.2e-162 at ε = 1: the true δ is below e^(−1/(2μ²)) = 0 in every float; the bound is tiny
        assert 0 <= dp.accounting.gaussian_delta(5e-324, 1.0) <= Fraction(1, 10**300)
        assert 0 <= dp.accounting.gaussian_delta(1, 1e308) <= Fraction(1, 10**300)


def test_zcdp_at_huge_and_tiny_rho() -> None:
    assert dp.accounting.zcdp_to_approx(1e308, 1e-6) >= Fraction(1e308)
    assert dp.accounting.zcdp_to_approx(Fraction(1, 10**300), 1e-6) > 0
    assert dp.accounting.zcdp_delta(1e308, 1.0) == 1
    d = dp.accounting.zcdp_delta(0.5, 1e300)
    assert 0 <= d <= Fraction(1, 10**300)


def test_intersect_keeps_the_hull_of_disjoint_intervals() -> None:
    # Two certified intervals always overlap; if a bug ever made them disjoint, the least upper end could be
    # the wrong one (an under-report), so the hull is returned instead of clipping to it.
    from dpcompose.accounting._loss import intersect

    one, two = (Fraction(1), Fraction(2)), (Fraction(3, 2), Fraction(5, 2))
    assert intersect([one, two]) == (Fraction(3, 2), Fraction(2))
    assert intersect([one, (Fraction(3), Fraction(4))]) == (Fraction(1), Fraction(4))
