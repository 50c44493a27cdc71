"""Tests of the discrete mechanisms and of the grid behind the secure float Laplace/Gaussian.

"Exact ε" of a pair of inputs: the secure float mechanism releases ``(r(x) + Z)·g`` with integer noise
``Z``; its privacy loss between x and x' is exactly the loss of discrete noise shifted by
``r(x) - r(x')`` grid steps: ``‖r(x) - r(x')‖₁/t`` for the discrete Laplace (pure DP, attained), and at
most ``‖r(x) - r(x')‖₂²/(2σ_g²)`` for the discrete Gaussian (CKS 2020). The maps must never be below these.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats

import dpcompose as dp
from dpcompose.measurements._discrete import (
    INT_SATURATION,
    Grid,
    grid_points,
    grid_sensitivity,
    make_discrete_gaussian,
    make_discrete_laplace,
    release_on_grid,
    saturate_ints,
)

INT = dp.AtomDomain(int)
ABS = dp.AbsoluteDistance()
ALPHA = 1e-6

floats = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
scales = st.floats(min_value=1e-3, max_value=1e4, allow_nan=False, allow_infinity=False)


def l1(a: list[float], b: list[float]) -> Fraction:
    return sum((abs(Fraction(x) - Fraction(y)) for x, y in zip(a, b, strict=True)), Fraction(0))


def grid_index(values: list[float], k: int) -> list[int]:
    """Reference rounding ``⌊x/2**k + 1/2⌋`` in exact rationals."""
    return [math.floor(Fraction(v) / Fraction(2) ** k + Fraction(1, 2)) for v in values]


@given(st.lists(floats, min_size=1, max_size=8), st.integers(-60, 1))
def test_grid_points_are_exact_round_half_up(values: list[float], k: int) -> None:
    expected = [float(i * Fraction(2) ** k) for i in grid_index(values, k)]
    assert grid_points(np.array(values), k).tolist() == expected


@given(
    st.lists(st.integers(-(2**59), 2**59), min_size=1, max_size=8),
    st.integers(-50, 0),
    st.sampled_from(["list", "int64"]),
)
def test_integer_data_are_on_the_grid_exactly(values: list[int], k: int, kind: str) -> None:
    data: object = values if kind == "list" else np.array(values, dtype=np.int64)
    grid = Grid(k, Fraction(1), integer=True)
    out = release_on_grid(data, True, grid, np.zeros(len(values), dtype=np.int64))
    assert out.tolist() == [float(v) for v in values]  # type: ignore[union-attr]


@given(st.lists(floats, min_size=1, max_size=8), st.integers(-60, 1), st.integers(-1000, 1000))
def test_release_is_the_grid_point(values: list[float], k: int, noise: int) -> None:
    out = release_on_grid(values, True, Grid(k, Fraction(1)), np.full(len(values), noise, dtype=np.int64))
    expected = [float((i + noise) * Fraction(2) ** k) for i in grid_index(values, k)]
    assert out.tolist() == expected  # type: ignore[union-attr]


def test_huge_values_are_rounded_exactly() -> None:
    values = [1e300, -3.5e20, 0.5]
    for k in (-30, 5):
        expected = [float(i * Fraction(2) ** k) for i in grid_index(values, k)]
        assert grid_points(np.array(values), k).tolist() == expected


@st.composite
def neighbours(draw: st.DrawFn) -> tuple[list[float], list[float], float]:
    """Two float vectors, near grid midpoints half the time (the worst case for rounding)."""
    n = draw(st.integers(1, 6))
    scale = draw(scales)
    k = Grid.for_laplace(Fraction(scale)).k
    g = 2.0**k
    x = draw(st.lists(floats, min_size=n, max_size=n))
    if draw(st.booleans()):  # put x on midpoints and x' just across them
        x = [(math.floor(v / g) + 0.5) * g for v in x]
        y = [v + draw(st.sampled_from([0.0, g * 1e-3, g, 3 * g])) for v in x]
    else:
        y = draw(st.lists(floats, min_size=n, max_size=n))
    return x, y, scale


@given(neighbours())
def test_laplace_map_never_below_exact_epsilon(case: tuple[list[float], list[float], float]) -> None:
    x, y, scale = case
    n = len(x)
    d_in = l1(x, y)
    grid = Grid.for_laplace(Fraction(scale))
    true_eps = (
        sum(abs(a - b) for a, b in zip(grid_index(x, grid.k), grid_index(y, grid.k), strict=True))
        / grid.units
    )
    for dom, metric in [(dp.VectorDomain(dp.AtomDomain(float), size=n), dp.L1Distance())] + (
        [(dp.AtomDomain(float), ABS)] if n == 1 else []
    ):
        m = dp.m.make_laplace(dom, metric, scale=scale)
        assert m.map(d_in) >= true_eps
        assert m.map(d_in) >= d_in / Fraction(scale)  # never below the idealised continuous ε either
        assert m.map(d_in) <= (d_in + n * grid.width) / Fraction(scale)


@given(neighbours())
def test_gaussian_map_never_below_exact_rho(case: tuple[list[float], list[float], float]) -> None:
    x, y, scale = case
    n = len(x)
    grid = Grid.for_gaussian(Fraction(scale))
    d2 = sum((Fraction(a) - Fraction(b)) ** 2 for a, b in zip(x, y, strict=True))
    # d_in: a rational upper bound on the L2 distance (as a caller would state it)
    d_in = Fraction(math.isqrt(math.ceil(d2 * 2**40)) + 1, 2**20)
    assume(d_in**2 >= d2)
    steps = [a - b for a, b in zip(grid_index(x, grid.k), grid_index(y, grid.k), strict=True)]
    true_rho = Fraction(sum(s * s for s in steps)) / (2 * grid.units**2)
    m = dp.m.make_gaussian(dp.VectorDomain(dp.AtomDomain(float), size=n), dp.L2Distance(), scale=scale)
    assert m.map(d_in) >= true_rho


def test_worst_case_rounding_is_attained_in_l1() -> None:
    g = Fraction(1, 4)
    # three coordinates just below/above a midpoint: each rounds one full step apart
    assert grid_sensitivity(Fraction(3, 1000), g, 3, 1, False) == 3
    x = [0.125 - 1e-6] * 3
    y = [0.125 + 1e-6] * 3
    steps = sum(abs(a - b) for a, b in zip(grid_index(x, -2), grid_index(y, -2), strict=True))
    assert steps == 3


def test_integer_data_are_exact_and_need_no_size() -> None:
    vec = dp.VectorDomain(dp.AtomDomain(int))
    lap = dp.m.make_laplace(vec, dp.L1Distance(), scale=3.0)
    assert lap.map(2) == Fraction(2, 3)
    gauss = dp.m.make_gaussian(vec, dp.L2Distance(), scale=2.0)
    assert gauss.map(1) == Fraction(1, 8)
    out = lap([1, 2, 3])
    assert out.dtype == np.int64 and out.shape == (3,)  # integers stay integers (issue 15)


def test_float_vector_of_unknown_size_is_refused_on_the_secure_path() -> None:
    vec = dp.VectorDomain(dp.AtomDomain(float))
    with pytest.raises(dp.DomainMismatch, match="size"):
        dp.m.make_laplace(vec, dp.L1Distance(), scale=1.0)
    with pytest.raises(dp.DomainMismatch, match="size"):
        dp.m.make_gaussian(vec, dp.L2Distance(), scale=1.0)
    # the seeded, not-private fast path does not round and accepts it
    fast = dp.m.make_laplace(vec, dp.L1Distance(), scale=1.0, rng=np.random.default_rng(0))
    assert fast.map(1) == 1


def test_secure_outputs_lie_on_the_grid_and_look_laplace() -> None:
    scale = 0.7
    grid = Grid.for_laplace(Fraction(scale))
    n = 20_000
    m = dp.m.make_laplace(dp.VectorDomain(dp.AtomDomain(float), size=n), dp.L1Distance(), scale=scale)
    out = m(np.full(n, 0.3))
    steps = out / float(grid.width)
    assert np.all(steps == np.round(steps))  # every output is a grid point
    noise = out - float(Fraction(grid_index([0.3], grid.k)[0]) * grid.width)
    assert stats.kstest(noise, stats.laplace(scale=scale).cdf).pvalue >= ALPHA


def test_secure_gaussian_scalar_looks_normal() -> None:
    m = dp.m.make_gaussian(dp.VectorDomain(dp.AtomDomain(float), size=20_000), dp.L2Distance(), scale=3.0)
    out = m(np.zeros(20_000))
    assert stats.kstest(out, stats.norm(scale=3.0).cdf).pvalue >= ALPHA
    one = dp.m.make_gaussian(dp.AtomDomain(float), ABS, scale=3.0)
    assert isinstance(one(1.5), float)
    assert one.map(1) == Fraction(1, 18)  # 3.0 has few bits: σ' = σ, and 1 is on the grid


# ---------------------------------------------------------------------------------------------------------
# make_discrete_laplace / make_discrete_gaussian
# ---------------------------------------------------------------------------------------------------------


@given(st.fractions(min_value=Fraction(1, 100), max_value=100), st.fractions(min_value=0, max_value=50))
def test_discrete_maps_exact(scale: Fraction, d_in: Fraction) -> None:
    assert make_discrete_laplace(INT, ABS, scale).map(d_in) == d_in / scale
    assert make_discrete_gaussian(INT, ABS, scale).map(d_in) == (d_in / scale) ** 2 / 2


def test_discrete_outputs_and_types() -> None:
    vec = dp.VectorDomain(dp.AtomDomain(int))
    lap = make_discrete_laplace(vec, dp.L1Distance(), scale=2.5)
    out = lap(np.arange(1000))
    assert out.dtype == np.int64 and out.shape == (1000,)
    assert isinstance(make_discrete_gaussian(INT, ABS, 1.5)(7), int)
    big = make_discrete_laplace(vec, dp.L1Distance(), scale=1)([2**63 - 1, 0])
    assert int(big[0]) >= 2**63 - 40  # values beyond int64 stay exact Python ints


def test_discrete_seeded_is_reproducible_and_matches_pmf() -> None:
    vec = dp.VectorDomain(dp.AtomDomain(int))
    a = make_discrete_gaussian(vec, dp.L2Distance(), 2, rng=np.random.default_rng(3))(np.zeros(50_000, int))
    b = make_discrete_gaussian(vec, dp.L2Distance(), 2, rng=np.random.default_rng(3))(np.zeros(50_000, int))
    np.testing.assert_array_equal(a, b)
    support = np.arange(-12, 13)
    pmf = np.exp(-(support**2) / 8.0)
    pmf /= pmf.sum()
    observed = np.array([np.sum(a == s) for s in support], dtype=float)
    assert stats.chisquare(observed, pmf * observed.sum()).pvalue >= ALPHA


def test_discrete_bad_inputs() -> None:
    with pytest.raises(dp.InvalidParameter, match="scale="):
        make_discrete_laplace(INT, ABS, 0)
    with pytest.raises(dp.InvalidParameter, match="scale="):
        make_discrete_gaussian(INT, ABS, float("nan"))
    with pytest.raises(dp.DomainMismatch):
        make_discrete_laplace(dp.AtomDomain(float), ABS, 1)
    with pytest.raises(dp.DomainMismatch):
        make_discrete_gaussian(dp.VectorDomain(INT), dp.L1Distance(), 1)
    with pytest.raises(dp.DomainMismatch):
        make_discrete_laplace(INT, dp.L1Distance(), 1)


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.integers(-(2**62), 2**62)
        | st.sampled_from(
            [2**63 - 1, -(2**63), 2**63, 2**64, -(2**70), True, np.int64(-7), np.uint64(2**64 - 1)]
        ),
        max_size=12,
    )
)
def test_saturate_ints_of_a_list_is_the_value_by_value_clamp(values: list[Any]) -> None:
    """A list of ints is converted in one numpy call when every value fits int64, else value by value:
    the same clamped int64 array either way (tuples too)."""
    lim = INT_SATURATION
    expected = [min(max(int(v), -lim), lim) for v in values]
    for data in (values, tuple(values)):
        out = saturate_ints(data, True)
        assert out.dtype == np.int64 and out.tolist() == expected
