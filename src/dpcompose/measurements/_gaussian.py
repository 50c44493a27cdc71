"""The Gaussian mechanism, accounted in zero-concentrated DP."""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose._validation import check_finite_positive
from dpcompose.accounting import exact
from dpcompose.core import ZCDP, Domain, L2Distance, Measurement, Metric, Node
from dpcompose.measurements import _noise
from dpcompose.measurements._discrete import (
    Grid,
    check_grid_scale,
    check_numeric_input,
    data_is_integer,
    grid_runner,
    grid_sensitivity,
    monotone_in_scale,
    secure_float_setup,
)
from dpcompose.measurements._sampling import discrete_gaussian_array

__all__ = ["make_gaussian"]


def make_gaussian(
    input_domain: Domain,
    input_metric: Metric,
    scale: float,
    *,
    rng: np.random.Generator | None = None,
) -> Measurement[Any, Any, Fraction, Fraction]:
    """The Gaussian mechanism: add N(0, scale²) noise to a number or to each vector entry.

    Secure by default: the input is rounded to the grid ``g·Z``, ``g = 2**k``, ``k = ⌊log₂ σ⌋ - 20`` (round
    half up; for integer data ``k >= -50``), and exact discrete Gaussian noise of parameter σ_g = ⌈σ/g⌉
    grid units is added from the operating system's secure source; the exact grid point is returned as the
    nearest float. The noise actually used has σ' = σ_g·g ≥ σ (σ' = σ when σ has at most 21 significant
    bits, e.g. 2.0 or 10.0). The grid index is computed from the exact datum (integers saturated to
    ``[-2**60, 2**60]``, which changes no distance upward), by the same steps for every magnitude, as in
    :func:`~dpcompose.measurements.make_laplace`.

    Privacy map (secure path): ρ = Δ_g² / (2σ_g²) with the grid-unit L2 sensitivity Δ_g of
    :func:`~dpcompose.measurements._discrete.grid_sensitivity`: ``⌈d_in/g⌉`` for a number (ρ = (d_in/σ')²/2
    when d_in is a multiple of g), ``d_in/g + s`` with a rational ``s >= √n`` for an n-vector (each entry
    moves by less than one grid step), and d_in/g for integer data on a grid ``g <= 1`` (σ below 2**21).
    Discrete Gaussian zCDP: Canonne, Kamath, Steinke 2020, Thm 4 / Thm 14. Float vectors need a known
    size. Because the grid coarsens at each power of two, that ρ is not monotone in σ when d_in is below a
    grid step (σ = 1e8 gives 2.05e-13 at d_in = 1, σ = 1e10 gives 3.36e-13); the map reports its least
    non-increasing majorant (:func:`~dpcompose.measurements._discrete.monotone_in_scale`: the larger of ρ at
    σ and at the next power of two, at most 4× ρ(σ) when d_in >= g, and equal to it whenever d_in is a
    multiple of the coarser grid's width), so ρ never rises with σ.

    With ``rng=`` (seeded fast path, NOT private): plain float Gaussian noise from the caller's numpy
    Generator; the map then reports the idealised ρ = (d_in/σ)²/2.

    Args:
        input_domain: ``AtomDomain(int|float)`` with ``AbsoluteDistance``, or a ``VectorDomain`` of those
            with ``L2Distance``.
        input_metric: ``AbsoluteDistance()`` or ``L2Distance()``.
        scale: the standard deviation σ > 0.
        rng: a numpy Generator for reproducible experiments only (not private).

    Raises:
        InvalidParameter: ``scale`` is not finite and positive, or (secure path) outside
            ``[2**-1001, 2**991)``, where the grid arithmetic would not be exact.
        DomainMismatch: the domain/metric pair is not one of the above.

    Source: Bun–Steinke 2016, Prop. 1.6 (the Gaussian mechanism is (Δ²/2σ²)-zCDP).

    Examples:
        >>> import dpcompose as dp
        >>> v = dp.VectorDomain(dp.AtomDomain(int))
        >>> dp.m.make_gaussian(v, dp.L2Distance(), scale=2.0).map(1)
        Fraction(1, 8)
    """
    check_finite_positive(scale, "scale")
    scale_q = exact(scale, "scale")
    vector = check_numeric_input(input_domain, input_metric, L2Distance)
    if rng is None:
        check_grid_scale(scale_q, _BITS)
    integer = data_is_integer(input_domain)
    grid = Grid.for_gaussian(scale_q, integer)
    size = secure_float_setup(input_domain, vector, grid, rng)

    def exact_noise(n: int) -> Any:
        return discrete_gaussian_array(grid.units**2, n)

    run = grid_runner(vector, grid, exact_noise, _noise.gaussian, float(scale), rng)

    def privacy_map(d_in: Fraction) -> Fraction:
        if rng is not None:
            ratio = Fraction(d_in) / scale_q
            return ratio * ratio / 2
        return _secure_rho(Fraction(d_in), scale_q, size, integer)

    return Measurement(
        input_domain,
        input_metric,
        ZCDP(),
        run,
        privacy_map,
        node=Node("gaussian", params=(("scale", repr(scale)),), source="Bun–Steinke 2016 Prop. 1.6"),
    )


_BITS = 20
"""σ in grid units lies in ``[2**20, 2**21]``: the grid exponent is ``⌊log₂ σ⌋ - 20``."""


def _grid_rho(d_in: Fraction, sigma: Fraction, size: int | None, integer: bool) -> Fraction:
    grid = Grid.for_gaussian(sigma, integer)
    units = grid_sensitivity(d_in, grid.width, size, 2, grid.on_grid) / grid.units
    return units * units / 2


@functools.lru_cache(maxsize=4096)
def _secure_rho(d_in: Fraction, sigma: Fraction, size: int | None, integer: bool) -> Fraction:
    """ρ of the secure path, made non-increasing in σ (cached like the Laplace ε).

    An integer vector of unknown size exists only on grids finer than 1 (σ < 2**21), where ρ = (d_in/σ')²/2
    with σ' = ⌈σ/g⌉·g non-decreasing in σ: already monotone, and no coarser grid to majorise over.
    """
    if integer and size is None:
        return _grid_rho(d_in, sigma, size, integer)
    return monotone_in_scale(lambda s: _grid_rho(d_in, s, size, integer), sigma, _BITS, integer)
