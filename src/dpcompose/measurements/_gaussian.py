"""The Gaussian mechanism, accounted in zero-concentrated DP."""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose._validation import check_finite_positive
from dpcompose.accounting import PrivacyLoss, exact
from dpcompose.accounting._vector_pairs import vector_discrete_gaussian_loss, vector_shift_dims
from dpcompose.core import ZCDP, Domain, L2Distance, Measurement, Metric, Node
from dpcompose.core._recipe import recorded
from dpcompose.errors import InvalidParameter
from dpcompose.measurements import _noise
from dpcompose.measurements._discrete import (
    DISCRETE_GAUSSIAN_MAX_SIGMA2,
    Grid,
    check_grid_scale,
    check_numeric_input,
    data_is_integer,
    grid_runner,
    grid_sensitivity,
    make_discrete_gaussian,
    monotone_in_scale,
    secure_float_setup,
)
from dpcompose.measurements._sampling import discrete_gaussian_array

__all__ = ["grid_gaussian", "make_gaussian"]


@recorded
def make_gaussian(
    input_domain: Domain,
    input_metric: Metric,
    scale: float,
    *,
    rng: np.random.Generator | None = None,
) -> Measurement[Any, Any, Fraction, Fraction]:
    """The Gaussian mechanism: add N(0, scale²) noise to a number or to each vector entry.

    **Integer data stay integers.** On ``AtomDomain(int)`` (or a vector of it) the noise is the exact
    discrete Gaussian ``P[z] ∝ exp(-z²/(2σ²))`` with σ = ``scale`` exactly, and the release is an ``int``
    (an int64 numpy array for a vector, saturated to the int64 range): this is
    :func:`~dpcompose.measurements.make_discrete_gaussian`. Privacy map: ρ = (d_in/σ)²/2 exactly
    (Canonne–Kamath–Steinke 2020 Thm 4, and Thm 14 for vectors under L2), non-increasing in σ, for σ up
    to 2**40 (larger scales are refused for integer data: the exact sampler's draws must fit int64; use a
    float domain for them). No vector size is needed.

    **Float data**: secure by default: the input is rounded to the grid ``g·Z``, ``g = 2**k``,
    ``k = ⌊log₂ σ⌋ - 20`` (round half up), and exact discrete Gaussian noise of parameter σ_g = ⌈σ/g⌉ grid
    units is added from the operating system's secure source; the exact grid point is returned as the
    nearest float. The noise actually used has σ' = σ_g·g ≥ σ (σ' = σ when σ has at most 21 significant
    bits, e.g. 2.0 or 10.0).

    Privacy map (float data, secure path): ρ = Δ_g² / (2σ_g²) with the grid-unit L2 sensitivity Δ_g of
    :func:`~dpcompose.measurements._discrete.grid_sensitivity`: ``⌈d_in/g⌉`` for a number,
    ``d_in/g + s`` with a rational ``s >= √n`` for an n-vector (each entry moves by less than one grid
    step). Float vectors need a known size. Because the grid coarsens at each power of two, that ρ is not
    monotone in σ when d_in is below a grid step; the map reports its least non-increasing majorant
    (:func:`~dpcompose.measurements._discrete.monotone_in_scale`), so ρ never rises with σ.

    **The textbook σ.** ``σ = d_in/√(2ρ)`` costs at most ρ when d_in is a multiple of the grid width and σ'
    rounds up; after a float :func:`~dpcompose.transformations.make_sum` it costs more, at every grid: the
    sum's sensitivity is Δ + ulp(L) (its result is a rounded float), one more grid step, about 2e-6
    relative in ρ. :func:`~dpcompose.measurements.scale_for` (``mechanism=make_gaussian``) returns the
    least σ meeting ρ by this map.

    With ``rng=`` (seeded, NOT private): float data get plain float Gaussian noise and the map reports the
    idealised ρ = (d_in/σ)²/2; integer data get the exact discrete sampler driven by the Generator (same
    map).

    Args:
        input_domain: ``AtomDomain(int|float)`` with ``AbsoluteDistance``, or a ``VectorDomain`` of those
            with ``L2Distance``.
        input_metric: ``AbsoluteDistance()`` or ``L2Distance()``.
        scale: the standard deviation σ > 0.
        rng: a numpy Generator for reproducible experiments only (not private).

    Returns:
        A ``ZCDP`` measurement returning an int or an int64 array (integer data), or a float or a float
        numpy array (float data).

    Raises:
        InvalidParameter: ``scale`` is not finite and positive; for integer data above 2**40; for float
            data (secure path) outside ``[2**-1001, 2**991)``, where the grid arithmetic would not be exact.
        DomainMismatch: the domain/metric pair is not one of the above.

    Source: Bun–Steinke 2016, Prop. 1.6 (the Gaussian mechanism is (Δ²/2σ²)-zCDP); integers: Canonne,
    Kamath, Steinke 2020, Theorems 4 and 14 (discrete Gaussian).

    Examples:
        >>> import dpcompose as dp
        >>> v = dp.VectorDomain(dp.AtomDomain(int))
        >>> m = dp.m.make_gaussian(v, dp.L2Distance(), scale=2.0)
        >>> m.map(1), m([10, 20, 30]).dtype
        (Fraction(1, 8), dtype('int64'))
        >>> dp.m.make_gaussian(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=2.0).map(1)
        Fraction(1, 8)
    """
    check_finite_positive(scale, "scale")
    scale_q = exact(scale, "scale")
    check_numeric_input(input_domain, input_metric, L2Distance)
    if data_is_integer(input_domain):  # integers stay integers: exact discrete Gaussian noise
        if scale_q * scale_q > DISCRETE_GAUSSIAN_MAX_SIGMA2:
            raise InvalidParameter(
                f"scale={scale!r} must be at most 2**40 for integer data, whose noise is exact integer noise "
                "(its draws must fit int64); for a larger scale use a float domain"
            )
        discrete = make_discrete_gaussian(input_domain, input_metric, scale_q, rng=rng)
        return Measurement(
            input_domain,
            input_metric,
            ZCDP(),
            discrete.function,
            discrete.privacy_map,
            loss=discrete.loss,
            node=Node(
                "gaussian",
                params=(("scale", repr(scale)),),
                source="Canonne–Kamath–Steinke 2020 Thm 4 / Thm 14",
            ),
        )
    return grid_gaussian(input_domain, input_metric, scale, rng=rng)


def grid_gaussian(
    input_domain: Domain,
    input_metric: Metric,
    scale: float,
    *,
    rng: np.random.Generator | None = None,
) -> Measurement[Any, Any, Fraction, Fraction]:
    """The Gaussian mechanism on the secure float grid, for int or float data, always releasing floats.

    :func:`make_gaussian` runs this for float data; integer data there get exact discrete Gaussian noise
    and stay integers.

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

    Dominating pair (``privacy_loss``), secure path: for a number, the discrete Gaussian in grid units
    with shift ⌈Δ_g⌉; for a vector (whose noise is not rotation invariant) the pair
    ``compose([gaussian(μ′, 1), approx(0, η)])`` of
    :func:`~dpcompose.accounting._vector_pairs.vector_gaussian_bound`, proven there for every integer
    shift of L2 norm ≤ Δ_g: μ′ = Δ_g·√(σ_g² + τ²)/σ_g², within a factor 1 + 1e-11 of Δ_g/σ_g on this grid,
    and η ≤ 2**-100 (for integer data on a grid so fine that σ_g is below about 35–55 units, no pair: None).

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

    Source: Bun–Steinke 2016, Prop. 1.6 (the Gaussian mechanism is (Δ²/2σ²)-zCDP); vector pair:
    :func:`~dpcompose.accounting._vector_pairs.vector_gaussian_bound` (Poisson summation; Zhu–Dong–Wang
    2022 Def. 7).

    Examples:
        >>> import dpcompose as dp
        >>> v = dp.VectorDomain(dp.AtomDomain(int))
        >>> grid_gaussian(v, dp.L2Distance(), scale=2.0).map(1)
        Fraction(1, 8)
    """
    check_finite_positive(scale, "scale")
    scale_q = exact(scale, "scale")
    vector = check_numeric_input(input_domain, input_metric, L2Distance)
    integer = data_is_integer(input_domain)
    if rng is None:
        check_grid_scale(scale_q, _BITS)
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

    def loss(d_in: Fraction) -> PrivacyLoss | None:
        if rng is not None:
            # the seeded path adds float Gaussian noise N(0, σ²I): it is rotation invariant, so a shift of
            # L2 norm Δ has the scalar pair N(0, σ²) vs N(Δ, σ²), for vectors too (Balle–Wang 2018 Thm 8)
            return PrivacyLoss.gaussian(d_in, scale_q)
        units = grid_sensitivity(Fraction(d_in), grid.width, size, 2, grid.on_grid)
        if vector:  # integer shifts of L2 norm ≤ Δ_g: Gaussian(μ′) ⊗ A(0, η) (None for a tiny s)
            return vector_discrete_gaussian_loss(units, grid.units, vector_shift_dims(units, size))
        # secure path: the discrete Gaussian in grid units (s = σ/g), shift ⌈Δ_g⌉
        return PrivacyLoss.discrete_gaussian(math.ceil(units), grid.units)

    return Measurement(
        input_domain,
        input_metric,
        ZCDP(),
        run,
        privacy_map,
        loss=loss,
        node=Node("gaussian", params=(("scale", repr(scale)),), source="Bun–Steinke 2016 Prop. 1.6"),
    )


_BITS = 20
"""σ in grid units lies in ``[2**20, 2**21]``: the grid exponent is ``⌊log₂ σ⌋ - 20``."""


def grid_rho(d_in: Fraction, sigma: Fraction, size: int | None, integer: bool) -> Fraction:
    """ρ = (Δ/σ)²/2 of the release on σ's grid, Δ and σ in grid units (Δ: the grid sensitivity of
    ``d_in``); :func:`_secure_rho` is the monotone version the map reports."""
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
        return grid_rho(d_in, sigma, size, integer)
    return monotone_in_scale(lambda s: grid_rho(d_in, s, size, integer), sigma, _BITS, integer)
