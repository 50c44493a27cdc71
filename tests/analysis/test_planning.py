"""binary_search_param never leaks a raw error and refuses clearly when no parameter fits (issue 11, D.12)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import dpcompose as dp

FLOAT = dp.AtomDomain(float)
ABS = dp.AbsoluteDistance()


def gauss_approx(scale: float) -> Any:
    return dp.make_zcdp_to_approx(dp.m.make_gaussian(FLOAT, ABS, scale=scale), 1e-6)


@pytest.mark.parametrize("d_out", [(1.0, 1e-6), (0.5, 1e-6), (1e-3, 1e-6)])
def test_gaussian_through_zcdp_to_approx_with_default_bounds(d_out: tuple[float, float]) -> None:
    """Crashed with ValueError: math domain error (a conversion at an extreme scale)."""
    sigma = dp.binary_search_param(gauss_approx, 1, d_out)
    assert isinstance(sigma, float)
    assert gauss_approx(sigma).check(1, d_out)
    assert not gauss_approx(math.nextafter(sigma, 0)).check(1, d_out)


@pytest.mark.parametrize(
    "bounds",
    [
        ("a", 1.0),
        (float("nan"), 1.0),
        (0.0, float("inf")),
        (True, 5),
        (0.0, 10**400),
        (1.0,),
        None,
        (5.0, 1.0),
        (3, 3),
        (1.0, 2.0, 3.0),
        "ab",
        (None, 1.0),
    ],
)
def test_bad_bounds_are_refused(bounds: Any) -> None:
    with pytest.raises(dp.InvalidParameter, match="bounds="):
        dp.binary_search_param(gauss_approx, 1, (1.0, 1e-6), bounds=bounds)


def test_numpy_and_huge_integer_bounds_work() -> None:
    make = lambda s: dp.m.make_laplace(FLOAT, ABS, scale=s)  # noqa: E731
    assert dp.binary_search_param(make, 1, 1 / 15, bounds=(np.float64(0.0), np.float64(100.0))) == 15.0
    count = lambda n: dp.m.make_laplace(FLOAT, ABS, scale=n)  # noqa: E731
    assert dp.binary_search_param(count, 1, 1 / 15, bounds=(np.int64(1), 10**30)) == 15


def test_raw_errors_inside_make_count_as_failing_and_never_escape() -> None:
    def make(p: float) -> Any:
        if p < 1.0:
            raise ValueError("math domain error")
        if p > 1e6:
            raise OverflowError("too big")
        return dp.m.make_laplace(FLOAT, ABS, scale=p)

    assert dp.binary_search_param(make, 1, 1 / 15, bounds=(0.0, 100.0)) == 15.0

    def broken(p: float) -> Any:
        raise ValueError("math domain error")

    with pytest.raises(dp.InvalidParameter, match="ValueError: math domain error"):
        dp.binary_search_param(broken, 1, 1.0)
    with pytest.raises(dp.InvalidParameter, match="Measurement"):
        dp.binary_search_param(lambda p: 3, 1, 1.0)
    with pytest.raises(dp.InvalidParameter, match="make="):
        dp.binary_search_param(None, 1, 1.0)  # type: ignore[arg-type]


def test_no_parameter_meets_the_target() -> None:
    """ρ of the secure grid never falls below 2**-41 at d_in = 1 for floats (one grid step of σ_g ≤ 2**21)."""
    make = lambda s: dp.m.make_gaussian(FLOAT, ABS, scale=s)  # noqa: E731
    with pytest.raises(dp.InvalidParameter, match="fails at both ends"):
        dp.binary_search_param(make, 1, 1e-14)
