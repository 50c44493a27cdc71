"""calibrate_noise: the least σ whose whole planned Measurement passes its check (issue 34 item 5)."""

from __future__ import annotations

import math
from typing import Any

import pytest

import dpcompose as dp

FLOAT = dp.AtomDomain(float)
ABS = dp.AbsoluteDistance()


def test_pure_dp_composition_is_exact() -> None:
    def make(b: float) -> Any:
        return dp.make_sequential(*[dp.m.make_laplace(FLOAT, ABS, scale=b)] * 10)

    assert dp.calibrate_noise(make, 1, 1.0) == 10.0
    assert dp.calibrate_noise(make, 3, 0.5) == 60.0


@pytest.mark.parametrize("d_out", [(1.0, 1e-6), (0.3, 1e-9)])
def test_approx_dp_matches_binary_search_with_fewer_checks(d_out: tuple[float, float]) -> None:
    calls = {"calibrate": 0, "bisect": 0}

    def counted(key: str) -> Any:
        def make(s: float) -> Any:
            calls[key] += 1
            return dp.make_zcdp_to_approx(dp.m.make_gaussian(FLOAT, ABS, scale=s), d_out[1])

        return make

    sigma = dp.calibrate_noise(counted("calibrate"), 1, d_out)
    make = counted("bisect")
    assert make(sigma).check(1, d_out)
    assert not make(math.nextafter(sigma, 0.0)).check(1, d_out)
    assert sigma == dp.binary_search_param(counted("bisect"), 1, d_out)
    assert calls["calibrate"] < calls["bisect"]  # (the map of noise on a grid reads in steps of σ)


def test_zcdp_target() -> None:
    def make(s: float) -> Any:
        return dp.m.make_gaussian(FLOAT, ABS, scale=s)

    sigma = dp.calibrate_noise(make, 1, 0.125)
    assert make(sigma).check(1, 0.125) and not make(math.nextafter(sigma, 0.0)).check(1, 0.125)
    assert sigma == pytest.approx(2.0, rel=1e-5)  # ρ = 1/2σ², read for the noise on its grid


def test_rtol_stops_within_the_tolerance() -> None:
    def make(b: float) -> Any:
        return dp.m.make_laplace(FLOAT, ABS, scale=b)

    rough = dp.calibrate_noise(make, 1, 1 / 15, rtol=1e-3)
    assert 15.0 <= rough <= 15.0 * (1 + 1e-3)


def test_no_solution_and_bad_inputs_are_refused_naming_them() -> None:
    def make(b: float) -> Any:
        return dp.m.make_laplace(FLOAT, ABS, scale=b)

    with pytest.raises(dp.InvalidParameter, match=r"bounds\[1\]=10.0 does not meet the target.*d_out=0.01"):
        dp.calibrate_noise(make, 1, 0.01, bounds=(1.0, 10.0))
    with pytest.raises(dp.InvalidParameter, match="make="):
        dp.calibrate_noise(3, 1, 0.5)  # type: ignore[arg-type]
    with pytest.raises(dp.InvalidParameter, match="not a Measurement"):
        dp.calibrate_noise(lambda s: 1.0, 1, 0.5, bounds=(1.0, 10.0))  # type: ignore[arg-type,return-value]
    with pytest.raises(dp.InvalidParameter, match="d_out"):
        dp.calibrate_noise(make, 1, -1.0, bounds=(1.0, 10.0))
    with pytest.raises(dp.InvalidParameter, match="rtol"):
        dp.calibrate_noise(make, 1, 0.5, rtol=-1.0)
    with pytest.raises(dp.InvalidParameter, match="start"):
        dp.calibrate_noise(make, 1, 0.5, start=math.nan)


def test_an_exact_map_rising_where_the_grid_coarsens_gets_the_least_sigma() -> None:
    """A pure-DP map is exact: at σ = 8 the grid coarsens and ε rises, so a target met just below 8 fails
    at 8; the least σ lies below (it was 8.0000000015, the rise accepted within the 1e-9 slack)."""
    data = dp.VectorDomain(dp.AtomDomain(float, bounds=(0.0, 10.0)))
    total = dp.t.make_sum(data, dp.SymmetricDistance(), max_size=1000)

    def make(b: float) -> Any:
        return total >> dp.m.make_laplace(total.output_domain, total.output_metric, scale=b)

    target = 1.25 + 7e-10
    assert make(math.nextafter(8.0, 0.0)).check(1, target) and not make(8.0).check(1, target)
    sigma = dp.calibrate_noise(make, 1, target)
    assert sigma == 7.999999998500233
    assert make(sigma).check(1, target) and not make(math.nextafter(sigma, 0.0)).check(1, target)
