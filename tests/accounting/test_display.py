"""format_up / format_down / format_excess; every display of a privacy number rounds up (issue 11, D.13).

The reference for "the least decimal with d significant digits ≥ q" is Python's :mod:`decimal` division,
which is correctly rounded in the context's rounding mode (here ROUND_CEILING / ROUND_FLOOR).
"""

from __future__ import annotations

import copy
import decimal
import math
import pickle
import re
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpcompose as dp
from dpcompose.accounting import Shown, format_down, format_excess, format_up, shown_down, shown_up

NUMBER = re.compile(r"-?\d+(\.\d+)?(e[+-]\d{2,})?")


def _reference(q: Fraction, digits: int, rounding: str) -> Fraction:
    """The decimal with ``digits`` significant digits nearest ``q`` in the direction ``rounding``."""
    ctx = decimal.Context(prec=digits, rounding=rounding, Emax=10**6, Emin=-(10**6))
    return Fraction(ctx.divide(Decimal(q.numerator), Decimal(q.denominator)))


fractions_st = st.builds(
    lambda n, d, e: Fraction(n, d) * Fraction(10) ** e,
    st.integers(-(10**30), 10**30),
    st.integers(1, 10**30),
    st.integers(-400, 400),
)
floats_st = st.floats(allow_nan=False, allow_infinity=False)
digits_st = st.integers(1, 17)


@given(st.one_of(fractions_st, floats_st.map(Fraction)), digits_st)
def test_format_up_is_the_least_decimal_at_or_above(q: Fraction, digits: int) -> None:
    shown = format_up(q, digits)
    assert NUMBER.fullmatch(shown), shown
    assert Fraction(shown) >= q
    assert Fraction(shown) == _reference(q, digits, decimal.ROUND_CEILING)


@given(st.one_of(fractions_st, floats_st.map(Fraction)), digits_st)
def test_format_down_is_the_greatest_decimal_at_or_below(q: Fraction, digits: int) -> None:
    shown = format_down(q, digits)
    assert NUMBER.fullmatch(shown), shown
    assert Fraction(shown) <= q
    assert Fraction(shown) == _reference(q, digits, decimal.ROUND_FLOOR)


@given(floats_st)
def test_floats_are_read_as_their_exact_value(x: float) -> None:
    assert format_up(x) == format_up(Fraction(x))
    assert Fraction(format_up(x)) >= Fraction(x)


@given(st.floats(min_value=1e-300, max_value=1e300), st.integers(1, 15))
def test_presentation_is_pythons_g(x: float, digits: int) -> None:
    """Same layout as ``format(v, ".{d}g")`` (fixed vs scientific, no trailing zeros) for the value shown."""
    shown = format_up(x, digits)
    assert format(float(Fraction(shown)), f".{digits}g") == shown


@pytest.mark.parametrize(
    ("q", "up", "down"),
    [
        (Fraction(1, 3), "0.333334", "0.333333"),
        (1 + Fraction(6, 10**10), "1.00001", "1"),
        (Fraction(1), "1", "1"),
        (0, "0", "0"),
        (-0.0, "0", "0"),
        (0.1, "0.100001", "0.1"),  # the float 0.1 is 0.1000000000000000055…
        (0.5, "0.5", "0.5"),
        (Fraction(9999995, 10), "1e+06", "999999"),
        (Fraction(10**5000, 3), "3.33334e+4999", "3.33333e+4999"),
        (5e-324, "4.94066e-324", "4.94065e-324"),
        (-Fraction(1, 3), "-0.333333", "-0.333334"),
        (math.inf, "inf", "inf"),
        (math.nan, "nan", "nan"),
        (np.float32(0.3), "0.300001", "0.3"),
        (np.int64(7), "7", "7"),
        (Decimal("0.25"), "0.25", "0.25"),
    ],
)
def test_examples(q: object, up: str, down: str) -> None:
    assert format_up(q, 6) == up  # type: ignore[arg-type]
    assert format_down(q, 6) == down  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["1", None, True, [1], complex(1, 1)])
def test_non_numbers_refused(bad: object) -> None:
    with pytest.raises(dp.InvalidParameter, match="q="):
        format_up(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "6"])
def test_bad_digits_refused(bad: object) -> None:
    with pytest.raises(dp.InvalidParameter, match="digits="):
        format_up(Fraction(1, 3), bad)  # type: ignore[arg-type]


@given(fractions_st, st.one_of(fractions_st, floats_st.map(Fraction)))
def test_format_excess_shows_the_excess(a: Fraction, b: Fraction) -> None:
    if a == b:
        return
    larger, limit = max(a, b), min(a, b)
    shown_larger, shown_limit = format_excess(larger, limit)
    assert larger >= Fraction(shown_larger) > Fraction(shown_limit) >= limit


# --- every display of a privacy number rounds up ------------------------------------------------------

ONE_PLUS = 1 + Fraction(6, 10**10)  # ≈ the cost of a Laplace release at scale 1/(1 + 6e-10)


def _numbers(text: str) -> list[Fraction]:
    return [Fraction(m.group(0)) for m in NUMBER.finditer(text)]


@given(fractions_st.map(abs))
def test_measure_displays_never_show_less(q: Fraction) -> None:
    assert _numbers(dp.PureDP().display(q)) == [Fraction(format_up(q))]
    assert _numbers(dp.ZCDP().display(q)) == [Fraction(format_up(q))]
    small = q / (1 + q)  # a valid δ
    shown = _numbers(dp.ApproxDP().display((q, small)))
    assert shown[0] >= q and shown[1] >= small


def test_measure_displays_of_one_plus_6e_10() -> None:
    assert dp.PureDP().display(ONE_PLUS) == "ε=1.00001"
    assert dp.ZCDP().display(ONE_PLUS) == "ρ=1.00001"
    assert dp.ApproxDP().display((ONE_PLUS, Fraction(1, 3))) == "ε=1.00001, δ=0.333334"


def test_profile_display_rounds_up() -> None:
    profile = dp.accounting.PrivacyProfile(
        approx_parts=((ONE_PLUS, Fraction(1, 3)),), gaussian_mu_sq=Fraction(2, 3), rho=ONE_PLUS
    )
    assert dp.ProfileDP().display(profile) == (
        "PrivacyProfile(approx=[(ε=1.00001, δ=0.333334)], gaussian μ²=0.666667, zcdp ρ=1.00001)"
    )


def _lap_costing_one_plus() -> dp.Measurement:  # type: ignore[type-arg]
    scale = float(1 / ONE_PLUS)
    lap = dp.m.make_laplace(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=scale)
    assert 1 < lap.map(1) < 1 + Fraction(7, 10**10) and not lap.check(1, 1.0)
    return lap


def test_filter_refusal_shows_the_request_rounded_up() -> None:
    """Was: 'query laplace(...) requests ε=1: …', a request the budget of 1 seems to allow."""
    lap = _lap_costing_one_plus()
    filt = dp.make_privacy_filter(dp.AtomDomain(float), dp.AbsoluteDistance(), dp.PureDP(), 1, 1.0)
    queryable = filt(0.5)
    with pytest.raises(dp.BudgetExceeded) as refusal:
        queryable(lap)
    message = str(refusal.value)
    assert "requests ε=1.00001:" in message
    assert "remaining: ε=1," in message


def test_filter_spent_is_rounded_up() -> None:
    lap = _lap_costing_one_plus()
    filt = dp.make_privacy_filter(dp.AtomDomain(float), dp.AbsoluteDistance(), dp.PureDP(), 1, 3.0)
    queryable = filt(0.5)
    queryable(lap)
    queryable(lap)
    with pytest.raises(dp.BudgetExceeded, match=r"Spent: ε=2\.00001, δ=0 over 2 queries"):
        queryable(lap)


# --- a filter rule's refusal shows numbers that make the refusal evident --------------------------------


def _shown_excess(text: str) -> tuple[Fraction, Fraction]:
    match = re.search(r"would be (\S+) > (?:\S+=)?([^\s)]+)", text)
    assert match is not None, text
    return Fraction(match.group(1)), Fraction(match.group(2))


def _sqrt_above(q: Fraction) -> Fraction:
    """A rational a little above √q (so that its square exceeds q by a relative 2e-12)."""
    return Fraction(math.sqrt(float(q))) * (1 + Fraction(1, 10**12))


def _least_refused(rule: dp.accounting.FilterRule) -> Fraction:
    """About the least ε (to 2**-60) that ``rule`` refuses as a first query: the bound just over ε_g."""
    lo, hi = Fraction(0), Fraction(4)
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if rule.admit(rule.start(), (mid, Fraction(0))) is not None else (lo, mid)
    return hi


def _near_limit_refusals() -> list[tuple[dp.accounting.FilterRule, tuple[Fraction, ...], str | None]]:
    tiny = Fraction(1, 10**17)
    zcdp_approx = dp.accounting.ZCDPApproxFilter(1.0, 1e-6)
    whitehouse = dp.accounting.WhitehouseFilter(2.0, 2e-6, 1e-6)
    rruv = dp.accounting.RRUVFilter(1.0, 1e-6)
    return [
        (dp.accounting.BasicFilter(1.0, 1e-6), (ONE_PLUS, Fraction(0)), "Σε would be 1.0000000006 > ε_g=1"),
        (
            dp.accounting.BasicFilter(1.0, 1e-6),
            (Fraction(1, 2), Fraction(1, 10**6) + tiny),
            "Σδ would be 1.00000000001e-06 > δ_g=1e-06",
        ),
        (dp.accounting.ZCDPFilter(0.5), (ONE_PLUS / 2, Fraction(0)), "Σρ would be 0.5000000003 > ρ_g=0.5"),
        (zcdp_approx, (_sqrt_above(2 * zcdp_approx.rho), Fraction(0)), None),
        (rruv, (Fraction(0), Fraction(1, 2 * 10**6) + tiny), "Σδ would be 5.0000000001e-07 > δ_g/2=5e-07"),
        (rruv, (_least_refused(rruv), Fraction(0)), None),
        (whitehouse, (_sqrt_above(whitehouse.vmax), Fraction(0)), None),
        (
            dp.accounting.RenyiFilter((2, 8), (1.0, 2.0)),
            (ONE_PLUS, Fraction(1)),
            "Σε(α) at α=2 would be 1.0000000006 > B(α)=1",
        ),
    ]


@pytest.mark.parametrize(("rule", "cost", "expected"), _near_limit_refusals())
def test_rule_refusals_show_the_excess(
    rule: dp.accounting.FilterRule, cost: tuple[Fraction, ...], expected: str | None
) -> None:
    """Was: 'Σε would be 1 > ε_g=1' (rounded to nearest), a refusal its own numbers do not explain."""
    state = rule.start()
    assert rule.admit(state, cost) is None
    text = rule.why_not(state, cost)
    shown_total, shown_limit = _shown_excess(text)
    assert shown_total > shown_limit, text
    if expected is not None:
        assert expected in text, text


def test_profile_repr_rounds_up() -> None:
    """Was: 'PrivacyProfile(approx=[(ε=1, δ=0.333)])' (nearest), below both numbers."""
    profile = dp.accounting.PrivacyProfile.approx(ONE_PLUS, Fraction(1, 3))
    assert repr(profile) == "PrivacyProfile(approx=[(ε=1.00001, δ=0.333334)])"


def _least_delta_message(call: object) -> Fraction:
    with pytest.raises(dp.InvalidParameter) as refusal:
        call()  # type: ignore[operator]
    match = re.search(r"≤ (\S+?):?(?:\s|$)", str(refusal.value))
    assert match is not None, str(refusal.value)
    return Fraction(match.group(1))


def test_least_delta_in_refusals_rounds_up() -> None:
    """Was: '≈ 0.265306' for 1 − (6/7)² = 13/49 = 0.2653061224…, a δ that is still refused."""
    floor = 1 - Fraction(6, 7) ** 2
    approx = dp.accounting.PrivacyProfile.approx
    profile = dp.accounting.PrivacyProfile.compose(
        [approx(0.5, Fraction(1, 7)), approx(0.5, Fraction(1, 7)), dp.accounting.PrivacyProfile.zcdp(0.1)]
    )
    shown = _least_delta_message(lambda: profile.epsilon(0.2))
    assert shown >= floor and shown == Fraction(format_up(floor))
    shown = _least_delta_message(lambda: dp.accounting.optimal_epsilon([0.5, 0.5], [Fraction(1, 7)] * 2, 0.2))
    assert shown >= floor


def test_digits_are_bounded() -> None:
    """A huge ``digits`` (10**400 in the bad-input sweep) hung in 10**digits; it is refused instead."""
    for bad in (0, 101, 10**400, True, 2.0):
        with pytest.raises(dp.InvalidParameter, match="digits"):
            dp.accounting.format_up(Fraction(1, 3), bad)  # type: ignore[arg-type]
    assert dp.accounting.format_up(Fraction(1, 3), 100) == "0." + "3" * 99 + "4"


@given(st.fractions(min_value=0, max_value=10**6))
def test_a_shown_value_is_the_exact_fraction_and_prints_on_its_safe_side(q: Fraction) -> None:
    down, up = shown_down(q), shown_up(q)
    for v in (down, up):
        assert isinstance(v, Shown) and v == q and hash(v) == hash(q) and type(v.exact) is Fraction
        assert v.exact == q and type(v + 1) is Fraction
        for again in (pickle.loads(pickle.dumps(v)), copy.copy(v), copy.deepcopy(v)):
            assert again == q and repr(again) == repr(v)
    assert Fraction(repr(down)) <= q <= Fraction(repr(up))
    # comparisons with floats and Decimals (Fraction reads them through cls.from_float / from_decimal)
    f = float(q)
    assert (down == f) == (q == f) and (up < f + 1) and (down >= f - 1) and down != math.inf
    assert (down <= Decimal(str(f)) + 1) and up == pytest.approx(f)
    assert repr({"epsilon": down}) == "{'epsilon': " + format_down(q) + "}"


def test_filters_show_remaining_rounded_down_and_spent_rounded_up() -> None:
    """remaining() returned 21-digit Fractions: the values are still the exact Fractions, printed short."""
    ints = dp.VectorDomain(dp.AtomDomain(int))
    count = dp.t.make_count(ints, dp.SymmetricDistance()) >> dp.m.make_laplace(
        dp.AtomDomain(int), dp.AbsoluteDistance(), scale=3.0
    )
    q = dp.make_privacy_filter(ints, dp.SymmetricDistance(), dp.PureDP(), 1, 1.0)([1, 2, 3])
    q(count)
    left, spent = q.remaining()["epsilon"], q.spent()["epsilon"]
    assert left == Fraction(2, 3) and spent == Fraction(1, 3)
    assert repr(left) == "0.666666" and repr(spent) == "0.333334"
    assert left.exact == Fraction(2, 3) and type(left.exact) is Fraction
