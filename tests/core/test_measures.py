from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpcompose as dp


def test_budget_is_read_as_printed_decimal() -> None:
    assert dp.PureDP().parse(0.1) == Fraction(1, 10)
    assert dp.ZCDP().parse(0.5) == Fraction(1, 2)
    assert dp.ApproxDP().parse((1.0, 1e-6)) == (Fraction(1), Fraction(1, 10**6))


@pytest.mark.parametrize("bad", [math.nan, math.inf, -0.1, "x", None])
def test_pure_budget_rejects_bad_values(bad: object) -> None:
    with pytest.raises(dp.InvalidParameter, match="d_out="):
        dp.PureDP().parse(bad)


@pytest.mark.parametrize("bad", [(1.0, 1.0), (1.0, -1e-9), (1.0, math.nan), (-1.0, 0.0), (1.0,), 1.0])
def test_approx_budget_rejects_bad_values(bad: object) -> None:
    with pytest.raises(dp.InvalidParameter, match="d_out"):
        dp.ApproxDP().parse(bad)


@given(st.lists(st.fractions(min_value=0, max_value=10), max_size=20))
def test_pure_compose_is_exact_sum(eps: list[Fraction]) -> None:
    assert dp.PureDP().compose(eps) == sum(eps, Fraction(0))


@given(st.lists(st.tuples(st.fractions(0, 5), st.fractions(0, Fraction(1, 100))), max_size=20))
def test_approx_compose_is_exact_sum(pairs: list[tuple[Fraction, Fraction]]) -> None:
    e, d = dp.ApproxDP().compose(pairs)
    assert e == sum((p[0] for p in pairs), Fraction(0))
    assert d == sum((p[1] for p in pairs), Fraction(0))


def test_compose_of_nothing_is_zero() -> None:
    assert dp.PureDP().compose([]) == 0
    assert dp.ApproxDP().compose([]) == (0, 0)
    assert dp.ZCDP().compose([]) == 0
    assert dp.RenyiDP().compose([])(2) == 0


def test_renyi_curves_add() -> None:
    c = dp.RenyiCurve(lambda a: Fraction(a) / 4, "α/4")
    total = dp.RenyiDP().compose([c, c, c])
    assert total(2) == Fraction(3, 2)
    with pytest.raises(dp.InvalidParameter, match="alpha"):
        total(1)


def test_measures_equal_by_type() -> None:
    assert dp.PureDP() == dp.PureDP()
    assert dp.PureDP() != dp.ZCDP()
    assert repr(dp.ApproxDP()) == "ApproxDP()"
