"""The secure Gaussian's ρ never rises with σ (issue 11, D.12), and stays an upper bound of the grid's ρ."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import example, given
from hypothesis import strategies as st

import dpcompose as dp
from dpcompose.measurements._gaussian import grid_gaussian, grid_rho

ABS = dp.AbsoluteDistance()
sigmas = st.floats(min_value=1e-3, max_value=1e15, allow_nan=False, allow_infinity=False)
d_ins = st.fractions(min_value=0, max_value=10**6) | st.sampled_from([Fraction(1), Fraction(1, 10**9)])
CASES = [
    (dp.AtomDomain(float), ABS, 1),
    (dp.VectorDomain(dp.AtomDomain(float), size=3), dp.L2Distance(), 3),
    (dp.AtomDomain(int), ABS, 1),
    (dp.VectorDomain(dp.AtomDomain(int), size=4), dp.L2Distance(), 4),
]


def test_reported_case() -> None:
    m = {s: dp.m.make_gaussian(dp.AtomDomain(float), ABS, scale=s).map(1) for s in (1e8, 1e10)}
    assert m[1e8] >= m[1e10]  # was 2.05e-13 < 3.36e-13


@given(sigmas, sigmas, d_ins)
@example(1e8, 1e10, Fraction(1))
@example(2.0**21 - 1, 2.0**21, Fraction(1))
@example(1.9e6, 2.1e6, Fraction(1, 2))
def test_rho_is_non_increasing_in_sigma_and_bounds_the_grid(a: float, b: float, d_in: Fraction) -> None:
    lo, hi = sorted((a, b))
    for domain, metric, size in CASES:
        integer = size == 4 or domain == dp.AtomDomain(int)
        if integer:
            # integer data get the exact discrete Gaussian (issue 15): ρ = (d_in/σ)²/2 exactly, for σ up to
            # 2**40 (larger scales are refused for integers)
            lo_i, hi_i = min(lo, 2.0**40), min(hi, 2.0**40)
            small = dp.m.make_gaussian(domain, metric, scale=lo_i)
            large = dp.m.make_gaussian(domain, metric, scale=hi_i)
            assert small.map(d_in) >= large.map(d_in)
            assert small.map(d_in) == (d_in / Fraction(lo_i)) ** 2 / 2
        # the grid release (floats; integers kept on the grid by grid_gaussian) keeps its guarantees
        make = grid_gaussian if integer else dp.m.make_gaussian
        small = make(domain, metric, scale=lo)
        large = make(domain, metric, scale=hi)
        assert small.map(d_in) >= large.map(d_in)
        assert small.map(d_in) >= grid_rho(d_in, Fraction(lo), size, integer)  # never below the truth


@given(sigmas, sigmas, st.integers(0, 10**6))
def test_unknown_size_integer_vectors_are_monotone(a: float, b: float, d_in: int) -> None:
    lo, hi = sorted((min(a, 2.0**21 - 1), min(b, 2.0**21 - 1)))
    vec = dp.VectorDomain(dp.AtomDomain(int))
    assert grid_gaussian(vec, dp.L2Distance(), scale=lo).map(d_in) >= grid_gaussian(
        vec, dp.L2Distance(), scale=hi
    ).map(d_in)
    assert dp.m.make_gaussian(vec, dp.L2Distance(), scale=lo).map(d_in) >= dp.m.make_gaussian(
        vec, dp.L2Distance(), scale=hi
    ).map(d_in)


@given(sigmas, d_ins)
def test_majorant_is_tight_for_multiples_of_the_grid(sigma: float, d_in: Fraction) -> None:
    """Where d_in is a multiple of the coarser grid's width the majorant changes nothing; elsewhere it is
    at most the jump of one binade (≤ 4× when d_in is at least a grid step)."""
    m = dp.m.make_gaussian(dp.AtomDomain(float), ABS, scale=sigma)
    here = grid_rho(d_in, Fraction(sigma), 1, False)
    k = Fraction(sigma).numerator.bit_length() - Fraction(sigma).denominator.bit_length() - 19  # ≥ next grid
    if (d_in / Fraction(2) ** (k + 1)).denominator == 1:
        assert m.map(d_in) == here
    g = Fraction(2) ** (k + 1)
    if d_in >= g:
        assert m.map(d_in) <= 4 * here
