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
    check_numeric_input,
    grid_runner,
    grid_sensitivity,
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
    """The Gaussian mechanism: add N(0, ``scale``²) noise to a number or to each vector entry.

    Secure by default: the input is rounded to the grid ``g·Z``, ``g = 2**k``, ``k = ⌊log₂ σ⌋ - 20`` (round
    half up), and exact discrete Gaussian noise of parameter σ_g = ⌈σ/g⌉ grid units is added from the
    operating system's secure source; the grid point is returned as a float. The noise actually used has
    σ' = σ_g·g ≥ σ (σ' = σ when σ has at most 21 significant bits, e.g. 2.0 or 10.0).

    Privacy map (secure path): ρ = Δ_g² / (2σ_g²) with the grid-unit L2 sensitivity Δ_g of
    :func:`~dpcompose.measurements._discrete.grid_sensitivity`: ``⌈d_in/g⌉`` for a number (ρ = (d_in/σ')²/2
    when d_in is a multiple of g), ``d_in/g + s`` with a rational ``s >= √n`` for an n-vector (each entry
    moves by less than one grid step), and d_in/g for integer data. Discrete Gaussian zCDP: Canonne,
    Kamath, Steinke 2020, Thm 4 / Thm 14. Float vectors need a known size.

    With ``rng=`` (seeded fast path, NOT private): plain float Gaussian noise from the caller's numpy
    Generator; the map then reports the idealised ρ = (d_in/σ)²/2.

    Args:
        input_domain: ``AtomDomain(int|float)`` with ``AbsoluteDistance``, or a ``VectorDomain`` of those
            with ``L2Distance``.
        input_metric: ``AbsoluteDistance()`` or ``L2Distance()``.
        scale: the standard deviation σ > 0.
        rng: a numpy Generator for reproducible experiments only (not private).

    Raises:
        InvalidParameter: ``scale`` is not finite and positive.
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
    grid = Grid.for_gaussian(scale_q)
    integer, size = secure_float_setup(input_domain, vector, grid.k, rng)

    def exact_noise(n: int) -> Any:
        return discrete_gaussian_array(grid.units**2, n)

    run = grid_runner(vector, grid, integer, exact_noise, _noise.gaussian, float(scale), rng)

    def privacy_map(d_in: Fraction) -> Fraction:
        if rng is not None:
            ratio = Fraction(d_in) / scale_q
            return ratio * ratio / 2
        return _secure_rho(d_in, grid, size, integer)

    return Measurement(
        input_domain,
        input_metric,
        ZCDP(),
        run,
        privacy_map,
        node=Node("gaussian", params=(("scale", repr(scale)),), source="Bun–Steinke 2016 Prop. 1.6"),
    )


@functools.lru_cache(maxsize=4096)
def _secure_rho(d_in: Fraction, grid: Grid, size: int | None, integer: bool) -> Fraction:
    """ρ of the secure path (pure function of exact, hashable values; cached like the Laplace ε)."""
    units = grid_sensitivity(d_in, grid.width, size, 2, integer) / grid.units
    return units * units / 2
