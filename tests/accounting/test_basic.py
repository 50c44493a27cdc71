"""basic, group, advanced (DRV and KOV): exact values, mpmath references, the worked example."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpcompose import accounting as acc
from dpcompose.errors import InvalidParameter

from ._reference import assert_tight, mpf

eps_st = st.floats(min_value=0.0, max_value=3.0, allow_nan=False)
pos_eps_st = st.floats(min_value=1e-4, max_value=3.0)
delta_st = st.floats(min_value=0.0, max_value=1e-3)
slack_st = st.floats(min_value=1e-12, max_value=0.5)


@given(st.lists(st.tuples(eps_st, delta_st), min_size=1, max_size=20))
def test_basic_is_the_exact_sum(pairs: list[tuple[float, float]]) -> None:
    eps, dels = zip(*pairs, strict=False)
    e, d = acc.basic(list(eps), list(dels))
    assert e == sum(Fraction(x) for x in eps)
    assert d == min(Fraction(1), sum(Fraction(x) for x in dels))


def test_basic_pure_and_decimal_budget() -> None:
    assert acc.basic([Fraction(1, 10)] * 10) == (Fraction(1), Fraction(0))
    assert acc.basic([0.5] * 4, [0.4] * 4)[1] == 1  # capped: vacuous but true


@given(pos_eps_st, delta_st, st.integers(min_value=1, max_value=30))
def test_group_matches_geometric_sum(eps: float, delta: float, k: int) -> None:
    e, d = acc.group(eps, delta, k)
    assert e == k * Fraction(eps)
    ref = mpmath.fsum(mpmath.exp(i * mpf(eps)) * mpf(delta) for i in range(k))
    assert_tight(d, min(ref, mpf(1)))


@given(eps_st, delta_st, st.integers(min_value=1, max_value=20))
def test_group_monotone_in_k(eps: float, delta: float, k: int) -> None:
    a = acc.group(eps, delta, k)
    b = acc.group(eps, delta, k + 1)
    assert a[0] <= b[0]
    assert a[1] <= b[1]


def test_group_zero_epsilon_and_overflow() -> None:
    assert acc.group(0, Fraction(1, 1000), 4) == (Fraction(0), Fraction(4, 1000))
    assert acc.group(5.0, 1e-6, 1000)[1] == 1


def _drv_ref(eps: list[float], slack: float) -> mpmath.mpf:
    s = mpmath.fsum(mpf(e) ** 2 for e in eps)
    return mpmath.sqrt(2 * s * mpmath.log(1 / mpf(slack))) + mpmath.fsum(
        mpf(e) * mpmath.expm1(mpf(e)) for e in eps
    )


def _kov_ref(eps: list[float], slack: float) -> mpmath.mpf:
    s = mpmath.fsum(mpf(e) ** 2 for e in eps)
    t = mpmath.fsum(mpf(e) * mpmath.tanh(mpf(e) / 2) for e in eps)
    d = mpf(slack)
    return min(
        mpmath.fsum(mpf(e) for e in eps),
        t + mpmath.sqrt(2 * s * mpmath.log(mpmath.e + mpmath.sqrt(s) / d)),
        t + mpmath.sqrt(2 * s * mpmath.log(1 / d)),
    )


def test_worked_example_drv() -> None:
    # The corrected tutorial numbers (the tutorial drops the leading ε and prints 4.690004 / 153.67357).
    e3 = acc.advanced_drv([0.5] * 3, [0] * 3, 0.1)
    e350 = acc.advanced_drv([0.5] * 350, None, 0.1)
    assert f"{float(e3[0]):.13f}".startswith("2.8315430004751")
    assert f"{float(e350[0]):.11f}".startswith("133.59989645760")
    assert e3[1] == Fraction(0.1)
    assert_tight(e3[0], _drv_ref([0.5] * 3, 0.1))
    assert_tight(e350[0], _drv_ref([0.5] * 350, 0.1))
    # What the tutorial prints is what you get without the leading ε: it is not the theorem.
    wrong = math.sqrt(2 * 3 * math.log(10)) + 3 * 0.5 * math.expm1(0.5)
    assert abs(wrong - 4.690004) < 1e-6
    assert abs(float(e3[0]) - wrong) > 1


@given(st.lists(pos_eps_st, min_size=1, max_size=30), st.lists(delta_st, min_size=30, max_size=30), slack_st)
def test_advanced_against_mpmath(eps: list[float], dels: list[float], slack: float) -> None:
    dels = dels[: len(eps)]
    drv = acc.advanced_drv(eps, dels, slack)
    kov = acc.advanced_kov(eps, dels, slack)
    assert_tight(drv[0], _drv_ref(eps, slack))
    assert_tight(kov[0], _kov_ref(eps, slack))
    assert drv[1] == min(1, sum(Fraction(d) for d in dels) + Fraction(slack))
    keep = math.prod((1 - Fraction(d) for d in dels), start=Fraction(1))  # exact
    assert_tight(kov[1], mpf(1 - (1 - Fraction(slack)) * keep))
    best = acc.advanced(eps, dels, slack)
    assert best[0] <= min(drv[0], kov[0]) or best[1] <= min(drv[1], kov[1])
    assert best[0] <= acc.basic(eps, dels)[0]


def test_advanced_heterogeneous_reference_values() -> None:
    eps = [0.01 + 0.19 * (i % 20) / 19 for i in range(1000)]
    assert abs(float(acc.advanced_drv(eps, None, 1e-6)[0]) - 35.42782170226918) < 1e-9
    assert abs(float(acc.advanced_kov(eps, None, 1e-6)[0]) - 27.072426549094175) < 1e-9


BAD = [math.nan, math.inf, -math.inf, -0.5]


@pytest.mark.parametrize("bad", BAD)
def test_bad_epsilons(bad: float) -> None:
    with pytest.raises(InvalidParameter, match=r"epsilons\[1\]"):
        acc.basic([0.1, bad])
    with pytest.raises(InvalidParameter, match=r"epsilons\[0\]"):
        acc.advanced([bad], None, 0.1)
    with pytest.raises(InvalidParameter, match="epsilon="):
        acc.group(bad, 0.0, 2)


@pytest.mark.parametrize("bad", [math.nan, -1e-9, 1.0, 1.5, math.inf])
def test_bad_deltas(bad: float) -> None:
    with pytest.raises(InvalidParameter, match=r"deltas\[0\]"):
        acc.basic([0.1], [bad])
    with pytest.raises(InvalidParameter, match="delta_slack"):
        acc.advanced([0.1], None, bad)
    with pytest.raises(InvalidParameter, match="delta="):
        acc.group(0.1, bad, 2)


def test_bad_shapes() -> None:
    with pytest.raises(InvalidParameter, match="epsilons"):
        acc.basic([])
    with pytest.raises(InvalidParameter, match="same length"):
        acc.basic([0.1, 0.2], [0.0])
    with pytest.raises(InvalidParameter, match="delta_slack"):
        acc.advanced([0.1], None, 0)
    with pytest.raises(InvalidParameter, match="k="):
        acc.group(0.1, 0.0, 0)
    with pytest.raises(InvalidParameter, match="epsilons"):
        acc.basic(0.5)  # type: ignore[arg-type]
