"""dp.m.scale_for: the least scale meeting a budget on the mechanism's grid (issue 35 item 3)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

import dpcompose as dp

FLOATS = dp.AtomDomain(float)


def _sum(lo: float, hi: float, n: int) -> dp.Transformation:  # type: ignore[type-arg]
    data = dp.VectorDomain(dp.AtomDomain(float, bounds=(lo, hi)))
    return dp.t.make_sum(data, dp.SymmetricDistance(), max_size=n)


def _next_down(x: float) -> float:
    return math.nextafter(x, 0.0)


@pytest.mark.parametrize(("lo", "hi", "n"), [(0.0, 10.0, 1000), (0.0, 1.0, 100), (-5.0, 5.0, 10**6)])
@pytest.mark.parametrize("eps", [1.0, 0.5, 0.1])
def test_laplace_after_a_float_sum_is_the_least_passing_scale(
    lo: float, hi: float, n: int, eps: float
) -> None:
    total = _sum(lo, hi, n)
    textbook = max(abs(lo), abs(hi)) / eps

    def at(scale: float) -> dp.Measurement:  # type: ignore[type-arg]
        return total >> dp.m.make_laplace(total.output_domain, total.output_metric, scale=scale)

    assert not at(textbook).check(1, eps)  # the sum's rounding slack: Δ/ε costs more than ε
    b = dp.m.scale_for(total, eps)
    assert at(b).check(1, eps)
    assert not at(_next_down(b)).check(1, eps)  # the least float scale
    assert b / textbook - 1 < 1e-8  # within the slack: one grid step


@pytest.mark.parametrize("rho", [0.5, 0.125])
def test_gaussian_after_a_float_sum(rho: float) -> None:
    total = _sum(0.0, 10.0, 1000)

    def at(scale: float) -> dp.Measurement:  # type: ignore[type-arg]
        return total >> dp.m.make_gaussian(total.output_domain, total.output_metric, scale=scale)

    assert not at(10.0 / math.sqrt(2 * rho)).check(1, rho)
    s = dp.m.scale_for(total, rho, mechanism=dp.m.make_gaussian)
    assert at(s).check(1, rho)
    assert not at(_next_down(s)).check(1, rho)


def test_a_function_of_the_scale_and_d_in() -> None:
    def make(scale: float) -> dp.Measurement:  # type: ignore[type-arg]
        return dp.m.make_laplace(FLOATS, dp.AbsoluteDistance(), scale=scale)

    assert dp.m.scale_for(make, 0.5, d_in=3) == 6.0  # on the grid: the textbook scale exactly
    assert dp.m.scale_for(make, Fraction(1, 15)) == 15.0
    # d_in = 1 below the grid step: the float grid keeps the noise under 2**31 steps of the grid, so no
    # scale reaches ε = 1e-10 at d_in = 1 (ε >= 2**-31 at every scale); refused with the reason
    with pytest.raises(dp.errors.InvalidParameter, match="no scale"):
        dp.m.scale_for(make, 1e-10)


def test_approx_dp_reads_the_epsilon() -> None:
    def make(scale: float) -> dp.Measurement:  # type: ignore[type-arg]
        return dp.make_pure_to_approx(dp.m.make_laplace(FLOATS, dp.AbsoluteDistance(), scale=scale))

    b = dp.m.scale_for(make, (0.25, 0.0), d_in=1)
    assert b == 4.0


def test_bad_input_is_refused() -> None:
    with pytest.raises(dp.errors.InvalidParameter, match="make="):
        dp.m.scale_for(3, 1.0)  # type: ignore[arg-type]
    with pytest.raises(dp.errors.InvalidParameter, match="mechanism="):
        dp.m.scale_for(_sum(0.0, 1.0, 10), 1.0, mechanism=3)  # type: ignore[arg-type]
    with pytest.raises(dp.errors.InvalidParameter, match="scale_for"):
        dp.m.scale_for(lambda s: dp.m.make_laplace(FLOATS, dp.AbsoluteDistance(), scale=s), -1.0)


def test_a_rise_where_the_grid_coarsens_is_crossed_to_the_least_scale() -> None:
    """At 8.0 the grid coarsens and the exact map rises: a target just above ε(8 − ulp) passes just below
    8 and fails at 8, and the least passing scale lies below 8 (it was 8.0000000015, a rise within the
    1e-9 slack accepted)."""
    total = _sum(0.0, 10.0, 1000)

    def at(scale: float) -> dp.Measurement:  # type: ignore[type-arg]
        return total >> dp.m.make_laplace(total.output_domain, total.output_metric, scale=scale)

    for target in (at(_next_down(8.0)).map(1), 1.25 + 7e-10):  # the second: a reviewer's example
        assert at(_next_down(8.0)).check(1, target) and not at(8.0).check(1, target)
        b = dp.m.scale_for(total, target)
        assert b < 8.0 and at(b).check(1, target) and not at(_next_down(b)).check(1, target)
        assert not at(_next_down(4.0)).check(1, target)  # the binade below has no passing scale
    assert dp.m.scale_for(total, 1.25 + 7e-10) == 7.999999998500233
