"""Discrete Laplace and discrete Gaussian mechanisms, and the grid that makes float noise secure.

The discrete mechanisms add exact integer noise (:mod:`dpcompose.measurements._sampling`) to integer
data. The float mechanisms ``make_laplace`` / ``make_gaussian`` reuse them through a grid: the input is
rounded to the grid ``g·Z`` (``g = 2**k``), exact discrete noise is added in grid units, and the result is
scaled back by ``g``. Every output is a grid point, so its low bits carry nothing about the input (the
floating-point attack of Mironov, CCS 2012, has nothing to read), and the privacy map accounts for the
rounding with the bounds proven in :func:`grid_sensitivity`.

Examples:
    >>> import dpcompose as dp
    >>> from dpcompose.measurements._discrete import make_discrete_laplace
    >>> m = make_discrete_laplace(dp.AtomDomain(int), dp.AbsoluteDistance(), scale=2)
    >>> m.map(1)
    Fraction(1, 2)
    >>> isinstance(m(10), int)
    True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpcompose._validation import check_finite_positive
from dpcompose.accounting import PrivacyLoss, exact
from dpcompose.accounting._vector_pairs import (
    vector_discrete_gaussian_loss,
    vector_discrete_laplace_loss,
    vector_shift_dims,
)
from dpcompose.core import (
    ZCDP,
    AbsoluteDistance,
    AtomDomain,
    Domain,
    L1Distance,
    L2Distance,
    Measurement,
    Metric,
    Node,
    PureDP,
    VectorDomain,
)
from dpcompose.core._recipe import recorded
from dpcompose.errors import DomainMismatch, InvalidParameter
from dpcompose.measurements import _noise
from dpcompose.measurements._random import GeneratorSource, RandomSource
from dpcompose.measurements._sampling import discrete_gaussian_array, discrete_laplace_array

__all__ = [
    "Grid",
    "grid_points",
    "grid_sensitivity",
    "make_discrete_gaussian",
    "make_discrete_laplace",
    "release_on_grid",
    "secure_float_setup",
]


def rng_source(rng: np.random.Generator | None) -> RandomSource | None:
    """``None`` (the secure default) or the caller's generator as a (not private) bit source."""
    return None if rng is None else GeneratorSource(rng)


def check_generator(rng: object) -> None:
    """Refuse, at construction, an ``rng=`` that is neither ``None`` nor a numpy ``Generator`` (it would
    otherwise fail only when the mechanism runs on data: an exception is an output)."""
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise InvalidParameter(f"rng={rng!r} must be a numpy Generator or None")


def check_numeric_input(
    domain: Domain, metric: Metric, vector_metric: type, carriers: tuple[type, ...] = (int, float)
) -> bool:
    """Whether the input is a vector; DomainMismatch unless it is an atom of one of ``carriers`` with
    ``AbsoluteDistance`` or a ``VectorDomain`` of such atoms with ``vector_metric``."""
    if isinstance(domain, AtomDomain) and domain.carrier in carriers:
        if not isinstance(metric, AbsoluteDistance):
            raise DomainMismatch(f"input_metric={metric!r} must be AbsoluteDistance() for a scalar input")
        return False
    if (
        isinstance(domain, VectorDomain)
        and isinstance(domain.element_domain, AtomDomain)
        and domain.element_domain.carrier in carriers
    ):
        if not isinstance(metric, vector_metric):
            raise DomainMismatch(
                f"input_metric={metric!r} must be {vector_metric.__name__}() for a vector input"
            )
        return True
    names = "|".join(c.__name__ for c in carriers)
    raise DomainMismatch(f"input_domain={domain!r} must be AtomDomain({names}) or a VectorDomain of those")


def add_integer_noise(data: Any, noise: npt.NDArray[np.int64], vector: bool) -> Any:
    """Exact integer sum: a Python int for an atom; for a vector, always an int64 array.

    Vector entries beyond int64 are clamped to it (1-Lipschitz: the map is unchanged) and the sum is
    saturated to the int64 range, ``clip(x + z)`` — a function of the exact noisy value, so
    post-processing. The saturating add is branch-free (wrapping int64 addition; an overflow is exactly a
    sum whose sign differs from both operands' signs), so neither the output's type nor the steps taken
    depend on the data's magnitude.
    """
    if not vector:
        return int(data) + int(noise[0])
    top = (1 << 63) - 1
    if isinstance(data, np.ndarray) and data.dtype.kind == "u":
        values = np.minimum(data.astype(np.uint64), np.uint64(top)).astype(np.int64)
    elif isinstance(data, np.ndarray) and data.dtype.kind == "i":
        values = data.astype(np.int64)
    else:
        values = np.fromiter((min(max(int(v), -top - 1), top) for v in data), dtype=np.int64, count=len(data))
    with np.errstate(over="ignore"):
        total = values + noise  # wraps on overflow
    overflow = ((values ^ total) & (noise ^ total)) < 0
    return np.where(overflow, np.where(noise > 0, np.int64(top), np.int64(-top - 1)), total)


DISCRETE_LAPLACE_MAX_SCALE = 1 << 50
"""The largest discrete Laplace scale the exact samplers take (their samples must fit int64)."""

DISCRETE_GAUSSIAN_MAX_SIGMA2 = 1 << 80
"""The largest discrete Gaussian σ² the exact samplers take."""


@recorded
def make_discrete_laplace(
    input_domain: Domain,
    input_metric: Metric,
    scale: float | int | Fraction,
    *,
    rng: np.random.Generator | None = None,
) -> Measurement[Any, Any, Fraction, Fraction]:
    """The discrete Laplace (geometric) mechanism: add integer noise with ``P[z] ∝ exp(-|z|/scale)``.

    Privacy map: ε = d_in / scale, exact. For integer vectors the loss of each coordinate is
    ``|x_i - x'_i|/scale`` and the coordinates are independent, so the total is ``‖x - x'‖₁/scale``.

    Args:
        input_domain: ``AtomDomain(int)`` or ``VectorDomain(AtomDomain(int))``.
        input_metric: ``AbsoluteDistance()`` (atom) or ``L1Distance()`` (vector).
        scale: the noise scale t > 0 (a float is read as its exact binary value).
        rng: a numpy Generator driving the exact sampler reproducibly, for experiments only: NOT private.
            Default: the operating system's secure source.

    Returns:
        A ``PureDP`` measurement returning an int (atom) or an int64 numpy array (vector; entries and
        noisy sums are saturated to the int64 range).

    Raises:
        InvalidParameter: ``scale`` is not finite and positive, or above ``2**50`` (the exact sampler's
            limit: refused here, before anything runs).
        DomainMismatch: the domain/metric pair is not one of the above.

    Dominating pair (``privacy_loss``): the discrete Laplace with shift ⌊d_in⌋, for a vector too (every
    integer shift of L1 norm ≤ d_in is dominated by the one-dimensional one:
    :func:`~dpcompose.accounting._vector_pairs.vector_discrete_laplace_loss`).

    Source: Ghosh, Roughgarden, Sundararajan 2009 (the geometric mechanism is ε-DP for ε = Δ/t);
    sampler: Canonne, Kamath, Steinke 2020, Algorithm 2; vector pair: ``vector_discrete_laplace_loss``.

    Examples:
        >>> import dpcompose as dp
        >>> vec = dp.VectorDomain(dp.AtomDomain(int))
        >>> m = make_discrete_laplace(vec, dp.L1Distance(), scale=0.5)
        >>> m.map(3)
        Fraction(6, 1)
        >>> m([1, 2, 3]).dtype
        dtype('int64')
    """
    check_finite_positive(scale, "scale")
    scale_q = exact(scale, "scale")
    if scale_q > DISCRETE_LAPLACE_MAX_SCALE:
        raise InvalidParameter(
            f"scale={scale!r} must be at most 2**50: the exact sampler's draws must fit int64"
        )
    vector = check_numeric_input(input_domain, input_metric, L1Distance, (int,))
    check_generator(rng)

    def run(data: Any) -> Any:
        size = len(data) if vector else 1
        return add_integer_noise(data, discrete_laplace_array(scale_q, size, rng_source(rng)), vector)

    def privacy_map(d_in: Fraction) -> Fraction:
        return Fraction(d_in) / scale_q

    def loss(d_in: Fraction) -> PrivacyLoss | None:
        # integer data: inputs d_in apart differ by an integer ≤ ⌊d_in⌋ (larger shifts dominate smaller
        # ones: the discrete Laplace is log-concave). Vectors: integer shifts of L1 norm ≤ d_in, dominated
        # by the one-dimensional shift ⌊d_in⌋ (vector_discrete_laplace_loss).
        if vector:
            return vector_discrete_laplace_loss(Fraction(d_in), scale_q)
        return PrivacyLoss.discrete_laplace(math.floor(d_in), scale_q)

    return Measurement(
        input_domain,
        input_metric,
        PureDP(),
        run,
        privacy_map,
        loss=loss,
        node=Node(
            "discrete_laplace",
            params=(("scale", repr(scale)),),
            source="Ghosh–Roughgarden–Sundararajan 2009; sampler Canonne–Kamath–Steinke 2020 Alg. 2",
        ),
    )


@recorded
def make_discrete_gaussian(
    input_domain: Domain,
    input_metric: Metric,
    scale: float | int | Fraction,
    *,
    rng: np.random.Generator | None = None,
) -> Measurement[Any, Any, Fraction, Fraction]:
    """The discrete Gaussian mechanism: add integer noise with ``P[z] ∝ exp(-z²/(2·scale²))``.

    Privacy map: ρ = (d_in / scale)² / 2 in zCDP, exact. For an integer vector, independent discrete
    Gaussian noise on every coordinate is ρ-zCDP with ``ρ = ‖x - x'‖₂²/(2σ²)`` (the multivariate theorem),
    so ``L2Distance`` is the right input metric.

    Args:
        input_domain: ``AtomDomain(int)`` or ``VectorDomain(AtomDomain(int))``.
        input_metric: ``AbsoluteDistance()`` (atom) or ``L2Distance()`` (vector).
        scale: the parameter σ > 0 (σ² = scale², exact; a float is read as its exact binary value).
        rng: a numpy Generator for reproducible experiments only: NOT private.

    Returns:
        A ``ZCDP`` measurement returning an int (atom) or an int64 numpy array (vector; saturated as in
        :func:`make_discrete_laplace`).

    Raises:
        InvalidParameter: ``scale`` is not finite and positive, or above ``2**40`` (σ² above ``2**80``,
            the exact sampler's limit: refused here, before anything runs).
        DomainMismatch: the domain/metric pair is not one of the above.

    Dominating pair (``privacy_loss``): for a number, the discrete Gaussian with shift ⌊d_in⌋; for a
    vector, ``compose([gaussian(μ′, 1), approx(0, η)])`` with μ′ ≤ (d_in/σ)(1 + 2**-10) and η ≤ 2**-64
    (:func:`~dpcompose.accounting._vector_pairs.vector_gaussian_bound`), or None where σ is too small
    for that (below about 35–55, rising with the number of moved coordinates).

    Source: Canonne, Kamath, Steinke 2020, Theorem 4 (univariate: ½(Δ/σ)²-zCDP) and Theorem 14
    (multivariate, independent coordinates: ½‖Δ‖₂²/σ²-zCDP); sampler: Algorithm 3; vector pair:
    :func:`~dpcompose.accounting._vector_pairs.vector_gaussian_bound`.

    Examples:
        >>> import dpcompose as dp
        >>> m = make_discrete_gaussian(dp.AtomDomain(int), dp.AbsoluteDistance(), scale=2)
        >>> m.map(1)
        Fraction(1, 8)
    """
    check_finite_positive(scale, "scale")
    sigma = exact(scale, "scale")
    if sigma * sigma > DISCRETE_GAUSSIAN_MAX_SIGMA2:
        raise InvalidParameter(
            f"scale={scale!r} must be at most 2**40 (σ² <= 2**80): the exact sampler's draws must fit int64"
        )
    vector = check_numeric_input(input_domain, input_metric, L2Distance, (int,))
    check_generator(rng)

    def run(data: Any) -> Any:
        size = len(data) if vector else 1
        return add_integer_noise(data, discrete_gaussian_array(sigma * sigma, size, rng_source(rng)), vector)

    def privacy_map(d_in: Fraction) -> Fraction:
        ratio = Fraction(d_in) / sigma
        return ratio * ratio / 2

    size = input_domain.size if isinstance(input_domain, VectorDomain) else 1

    def loss(d_in: Fraction) -> PrivacyLoss | None:
        # integer data: shifts are integers ≤ ⌊d_in⌋ (smaller ones dominated: log-concave noise); vectors:
        # integer shifts of L2 norm ≤ d_in, dominated by Gaussian(μ′) ⊗ A(0, η) (vector_gaussian_bound)
        if vector:
            shift = Fraction(d_in)
            return vector_discrete_gaussian_loss(shift, sigma, vector_shift_dims(shift, size))
        return PrivacyLoss.discrete_gaussian(math.floor(d_in), sigma)

    return Measurement(
        input_domain,
        input_metric,
        ZCDP(),
        run,
        privacy_map,
        loss=loss,
        node=Node(
            "discrete_gaussian",
            params=(("scale", repr(scale)),),
            source="Canonne–Kamath–Steinke 2020 Thm 4 / Thm 14; sampler Alg. 3",
        ),
    )


# ---------------------------------------------------------------------------------------------------------
# The grid behind the secure float mechanisms
# ---------------------------------------------------------------------------------------------------------


INT_SATURATION = 1 << 60
"""Integer data are saturated to ``[-2**60, 2**60]`` before the grid (clamping is 1-Lipschitz, so the
privacy map is unchanged); every integer step of the release then fits int64 (see :func:`release_on_grid`)."""

FINEST_INT_K = -50
"""Integer data use the grid ``2**max(k, -50)``: still a divisor of 1 (integers stay on the grid), and the
fractional part of the noise, ``< 2**50`` units, is an exact float."""

EXACT_NOISE = 1 << 53
"""Noise of magnitude below ``2**53`` grid units is an exact float; larger draws take the exact path."""

GRID_K_RANGE = (-1021, 970)
"""Exponents of the float grid: ``2**k`` is a normal float and ``z·2**k`` is exact for ``|z| < 2**53``."""


def _floor_log2(q: Fraction) -> int:
    e = q.numerator.bit_length() - q.denominator.bit_length()
    return e - 1 if Fraction(2) ** e > q else e


@dataclass(frozen=True)
class Grid:
    """A grid ``2**k · Z`` and the noise scale measured in grid units.

    Attributes:
        k: the grid width is ``2**k``.
        units: the noise parameter in grid units: the discrete Laplace scale ``t = b / 2**k`` or the
            discrete Gaussian ``σ / 2**k`` (an integer for the Gaussian).
        integer: the grid serves integer data (``k >= -50``; integers are on it when ``k <= 0``).
    """

    k: int
    units: Fraction
    integer: bool = False

    @property
    def width(self) -> Fraction:
        """The grid width ``2**k`` as an exact rational."""
        return Fraction(2) ** self.k

    @property
    def on_grid(self) -> bool:
        """Integer data on a grid of width ``2**k <= 1``: rounding changes nothing."""
        return self.integer and self.k <= 0

    @classmethod
    def for_laplace(cls, scale: Fraction, integer: bool = False) -> Grid:
        """Width ``2**(⌊log₂ b⌋ - 30)``: ``t = b/2**k ∈ [2**30, 2**31)``, the exact scale ``b`` kept.

        For integer data the exponent is at least -50 (then ``t < 2**31`` still; smaller).
        """
        k = _floor_log2(scale) - 30
        if integer:
            k = max(k, FINEST_INT_K)
        return cls(k, scale / Fraction(2) ** k, integer)

    @classmethod
    def for_gaussian(cls, sigma: Fraction, integer: bool = False) -> Grid:
        """Width ``2**(⌊log₂ σ⌋ - 20)`` and σ in grid units rounded *up* to an integer in [2**20, 2**21].

        The integer keeps the sampler's arithmetic in int64; the mechanism then uses σ' = units·2**k ≥ σ
        (σ' = σ exactly whenever σ/2**k is an integer, e.g. σ with at most 21 significant bits), and its
        map reports the ρ of σ', which is the true one for the noise drawn. For integer data the exponent
        is at least -50 (σ in grid units then ``<= 2**21``, possibly small).
        """
        k = _floor_log2(sigma) - 20
        if integer:
            k = max(k, FINEST_INT_K)
        return cls(k, Fraction(math.ceil(sigma / Fraction(2) ** k)), integer)


def check_grid_scale(scale: Fraction, bits: int, name: str = "scale") -> None:
    """Refuse a scale whose float grid ``2**(⌊log₂ scale⌋ - bits)`` leaves :data:`GRID_K_RANGE`.

    There the grid width would not be a normal float or ``noise·2**k`` would overflow, so the release
    could not be computed exactly; refused at construction, before anything runs.
    """
    k = _floor_log2(scale) - bits
    lo, hi = GRID_K_RANGE
    if not lo <= k <= hi:
        raise InvalidParameter(
            f"{name}={float(scale)!r} is outside the secure grid's range "
            f"[2**{lo + bits}, 2**{hi + bits + 1}): its grid 2**{k} is not a normal float"
        )


def monotone_in_scale(
    value_at: Callable[[Fraction], Fraction], scale: Fraction, bits: int, integer: bool
) -> Fraction:
    """The least non-increasing majorant ``sup_{s >= scale} value_at(s)`` of a grid mechanism's loss.

    ``value_at(s)`` is the loss at scale ``s`` on the grid of ``s`` (``k = ⌊log₂ s⌋ - bits``, at least -50
    for integer data). It is not monotone in ``s``: within a binade ``[2**j, 2**(j+1))`` the grid is fixed
    and the loss falls (the noise in grid units grows, the grid-unit sensitivity is fixed), but at
    ``2**(j+1)`` the grid doubles and the noise in grid units halves, so when ``d_in`` is below the grid
    width (the sensitivity stays one step) the loss jumps up. Reporting the supremum over all larger scales
    keeps the map an upper bound and makes it non-increasing in the scale, which searches over the scale
    (:func:`~dpcompose.analysis.binary_search_param`) rely on.

    The supremum is a maximum of at most three values. Within each binade the maximum is at its start, so
    the supremum over ``s >= scale`` is ``max(value_at(scale), sup_j value_at(2**j))`` over
    ``j >= J = ⌊log₂ scale⌋ + 1``. At ``s = 2**j`` the noise in grid units is ``2**bits`` (for integer data
    below ``k = -50``: ``2**(j+50)``, growing) and the grid-unit sensitivity (``⌈d/g⌉``, ``⌈d/g⌉ + n - 1``,
    ``d/g + s``, or ``d/g`` on the grid) does not grow with ``g``; so the binade starts are non-increasing
    in ``j`` — except for integer data where the grid stops being finer than 1 (``k`` from 0 to 1, i.e.
    ``j = bits + 1``): there the exact ``d/g`` becomes a rounded ``⌈d/g⌉``. Hence the supremum is the
    largest of ``value_at(scale)``, ``value_at(2**J)`` and, for integer data, ``value_at(2**max(J, bits+1))``.

    Tightness: whenever ``d_in`` is a multiple of the grid width at ``2**J`` the majorant equals
    ``value_at(scale)`` (e.g. integer ``d_in`` with a grid width <= 1). Otherwise it exceeds it by at most
    the jump at the next power of two: a factor ``<= 2`` for the Laplace ε (noise ``t ∈ [2**30, 2**31)``
    grid units) and ``<= 4`` for the Gaussian ρ (``σ_g ∈ [2**20, 2**21]``) when ``d_in >= g``; for ``d_in``
    below one grid step it is the loss of one full step at the coarser grid, which the rounding can cost.

    Source: proven here (the argument above).

    Examples:
        >>> f = lambda s: Fraction(1) / (s / Fraction(2) ** (_floor_log2(s) - 30))  # one grid step
        >>> monotone_in_scale(f, Fraction(3 * 2**40), 30, False) == Fraction(1, 2**30)
        True
    """
    power = Fraction(2) ** (_floor_log2(scale) + 1)
    candidates = [value_at(scale), value_at(power)]
    if integer:
        candidates.append(value_at(max(power, Fraction(2) ** (bits + 1))))
    return max(candidates)


def grid_sensitivity(
    d_in: Fraction, grid_width: Fraction, size: int | None, norm: int, on_grid: bool
) -> Fraction:
    """An upper bound on the distance between grid indices of inputs ``d_in`` apart, in grid units.

    With ``D = d_in / g`` and ``r(x) = ⌊x/g + 1/2⌋`` applied to each of ``size`` coordinates:

    * ``on_grid`` (integer data and ``g`` divides 1): ``r(x) = x/g`` exactly, the bound is ``D``.
    * a single value (``size == 1``), L1 or L2: ``|r(a) - r(b)|`` is an integer strictly below
      ``|a - b|/g + 1`` (``r(a) ∈ (a/g - 1/2, a/g + 1/2]``), hence at most ``⌈D⌉``.
    * L1, ``size = d``: each differing coordinate contributes an integer ``< |δᵢ|/g + 1``, i.e. at most
      ``⌈|δᵢ|/g⌉``; with ``m <= d`` differing coordinates the sum is an integer ``< D + m``, so at most
      ``⌈D⌉ + d - 1``. It is attained (``m = d`` tiny differences straddling grid midpoints): the rounding
      can add up to ``d`` grid steps in all.
    * L2, ``size = d``: ``r(x) - r(x') = (x - x')/g + (e - e')`` with rounding errors ``|eᵢ - e'ᵢ| < 1``,
      so by the triangle inequality ``‖r(x) - r(x')‖₂ < D + √d``; we use the rational ``s >= √d`` given by
      ``s = (isqrt(d·2**40 - 1) + 1)/2**20``.

    Integer data are saturated to ``[-2**60, 2**60]`` first; clamping is 1-Lipschitz in every coordinate,
    so these bounds hold for the saturated values too.

    ``size=None`` (unknown length) with off-grid data has no finite bound: refused by the constructors.
    ``d_in = 0`` means identical inputs and gives 0.

    Source: proven here (rounding-to-grid argument as above; cf. OpenDP's integerize/rounding discussion).

    Examples:
        >>> grid_sensitivity(Fraction(1), Fraction(1, 4), 1, 1, False)
        Fraction(4, 1)
        >>> grid_sensitivity(Fraction(1), Fraction(1, 4), 3, 1, False)
        Fraction(6, 1)
    """
    if d_in == 0:
        return Fraction(0)
    d = Fraction(d_in) / grid_width
    if on_grid:
        return d
    if size is None:
        raise DomainMismatch("the grid bound needs a known vector size")
    if size <= 1:
        return Fraction(math.ceil(d))
    if norm == 1:
        return Fraction(math.ceil(d) + size - 1)
    return d + Fraction(math.isqrt(size * (1 << 40) - 1) + 1, 1 << 20)


FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


_TINY = 2.0**-1022  # the least normal float


def grid_points(x: FloatArray, k: int) -> FloatArray:
    """The grid points ``r(x)·2**k``, ``r(x) = ⌊x/2**k + 1/2⌋`` (round half up), exactly, as floats.

    One branch-free computation for every element (no path depends on the magnitude), for
    ``k`` in :data:`GRID_K_RANGE` and finite ``x``:

    * ``|x| >= 2**52·g`` (``g = 2**k``): the spacing of floats there is at least ``g``, so ``x`` is a
      multiple of ``g``, ``r(x) = x/g`` and the grid point is ``x`` itself.
    * ``|x| < 2**52·g``: ``y = x·2**(1-k)`` is exact (a power-of-two scaling; if it underflows then
      ``|x/g| < 1/2`` and every step below gives 0, which is ``r(x)``), ``|y| < 2**53`` so ``⌊y⌋ + 1`` is
      exact, and ``r(x) = ⌊(⌊y⌋ + 1)/2⌋`` (as ``⌊(⌊y⌋ + 1)/2⌋ = ⌊(y + 1)/2⌋``) is an exact float with
      ``|r(x)| <= 2**52``; times ``g`` (a normal power of two) it stays exact.

    Both sides are evaluated for all elements (overflow in the discarded side is ignored).

    Examples:
        >>> grid_points(np.array([0.49, 0.5, -0.5, 2.75, 1e300]), 0).tolist()
        [0.0, 1.0, 0.0, 3.0, 1e+300]
    """
    g = math.ldexp(1.0, k)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        # subnormal data (|x| < 2**-1022 <= g/2 for k >= -1021) lie within half a step of 0: r(x) = 0.
        # Replacing them by 0 first keeps subnormal operands (slow on many CPUs) out of the arithmetic.
        x = np.where(np.abs(x) < _TINY, 0.0, x)
        y = x * math.ldexp(1.0, 1 - k)
        np.floor(y, out=y)
        y += 1.0
        y *= 0.5
        np.floor(y, out=y)
        y *= g
        return np.where(np.abs(x) < math.ldexp(1.0, 52 + k), y, x)


def saturate_ints(data: Any, vector: bool) -> IntArray:
    """Integer data as int64, each value clamped to ``[-2**60, 2**60]`` (:data:`INT_SATURATION`).

    Numpy integer arrays are clamped vectorised; a list or tuple of ints that all fit int64 is converted at
    once and clamped, and otherwise (some int beyond int64) every value is clamped one by one before the
    conversion, so no value, however large, makes the conversion raise. The path taken (and so the time)
    tells whether some value lies beyond int64.
    """
    lim = INT_SATURATION
    if not vector:
        return np.array([min(max(int(data), -lim), lim)], dtype=np.int64)
    if isinstance(data, np.ndarray) and data.dtype.kind == "u":
        capped: IntArray = np.minimum(data.astype(np.uint64), np.uint64(lim)).astype(np.int64)
        return capped
    if isinstance(data, np.ndarray) and data.dtype.kind == "i":
        clipped: IntArray = np.clip(data.astype(np.int64), -lim, lim)
        return clipped
    if isinstance(data, (list, tuple)):
        try:  # every value fits int64 (the common case): one conversion, then clip
            fitted = np.array(data, dtype=np.int64)
        except (OverflowError, TypeError, ValueError):  # some value beyond int64: one by one below
            pass
        else:
            if fitted.ndim == 1:
                clipped_list: IntArray = np.clip(fitted, -lim, lim, out=fitted)
                return clipped_list
    return np.fromiter((min(max(int(v), -lim), lim) for v in data), dtype=np.int64, count=len(data))


def _float_of(q: Fraction | int) -> float:
    """The float nearest to the rational ``q`` (ties to even), ``±inf`` beyond the float range."""
    try:
        return float(q)
    except OverflowError:
        return math.inf if q > 0 else -math.inf


def _release_floats(x: FloatArray, k: int, z: IntArray) -> FloatArray:
    """``fl((r(x) + z)·2**k)`` for float data: the grid point plus ``z·2**k`` in ONE IEEE addition.

    ``r(x)·2**k`` is exact (:func:`grid_points`) and ``z·2**k`` is exact for ``|z| < 2**53`` (an integer of
    at most 53 bits times a normal power of two, below ``2**(53 + 970)``), so the sum is the correctly
    rounded value of the exact grid point ``(r(x) + z)·2**k`` — a function of it alone (post-processing);
    overflow gives ±inf, the correctly rounded value beyond the float range.
    """
    xg = grid_points(x, k)
    zf = z.astype(np.float64)
    zf *= math.ldexp(1.0, k)
    with np.errstate(over="ignore"):
        zf += xg
    return zf


def _release_ints(x: IntArray, k: int, z: IntArray) -> FloatArray:
    """``fl((r(x) + z)·2**k)`` for saturated integer data (``|x| <= 2**60``), ``|z| < 2**53``, exactly.

    * ``k > 0``: ``r(x) = ⌊(⌊x/2**(k-1)⌋ + 1)/2⌋`` by arithmetic shifts (floor division; for
      ``k - 1 >= 62`` both shifted values are 0 or -1 and ``r(x) = 0`` as ``|x/2**k| < 1/2``). ``r + z``
      fits int64, its conversion to float is correctly rounded and scaling by ``2**k`` is exact (or
      overflows to ±inf, the correctly rounded value).
    * ``k = 0``: the value is the integer ``x + z``, converted with correct rounding.
    * ``k = -m < 0`` (``m <= 50``): ``r(x) = x·2**m`` and the value is ``V = x + z·2**k = q + f`` with the
      integer ``q = x + (z >> m)`` (``|q| < 2**61``) and the exact fraction ``f = (z mod 2**m)·2**k`` in
      ``[0, 1)``. If ``|q| <= 2**52``, ``float(q)`` and ``f`` are exact floats and one IEEE addition
      rounds ``V`` correctly. Otherwise ``|V| >= 2**52``, where the float spacing is at least 1 and the
      rounding midpoints are multiples of 1/2: with ``W = 4q + 2⌊2f⌋ + [2f ∉ Z]`` (an int64), either
      ``W = 4V`` or both lie strictly inside the same interval ``(2i, 2i + 2)``, which holds no midpoint
      of ``4·floats``; so ``fl(W)/4 = fl(V)``.

    Every case is a function of ``V`` alone (``q = ⌊V⌋``, ``f = V - ⌊V⌋``), every element takes the same
    vectorised steps, and the result is the correctly rounded ``V``.
    """
    if k > 0:
        r = x >> min(k - 1, 62)
        r += 1
        r >>= 1
        r += z
        out = r.astype(np.float64)
        with np.errstate(over="ignore"):
            out *= math.ldexp(1.0, k)
        return out
    m = -k
    q = x + (z >> m)
    if m == 0:
        return q.astype(np.float64)
    frac = z & ((1 << m) - 1)
    small = q.astype(np.float64)
    small += frac.astype(np.float64) * math.ldexp(1.0, k)
    w = q << 2
    w += (frac >> (m - 1)) << 1
    w += (frac & ((1 << (m - 1)) - 1)) != 0
    big = w.astype(np.float64)
    big *= 0.25
    return np.where(np.abs(q) <= 1 << 52, small, big)


def _release_exact(x: npt.NDArray[Any], grid: Grid, z: IntArray) -> FloatArray:
    """The same values as the fast paths, with exact Python rationals: for noise ``|z| >= 2**53``.

    Reached with probability far below ``2**-1000`` at the grids' noise scales; the branch depends on the
    noise only, never on the data.
    """
    g = grid.width
    out = []
    for v, zi in zip(x.tolist(), z.tolist(), strict=True):
        point: int | Fraction
        if grid.integer and grid.k > 0:
            point = ((int(v) >> (grid.k - 1)) + 1) >> 1
        elif grid.integer:
            point = int(v) << -grid.k
        else:
            point = math.floor(Fraction(v) / g + Fraction(1, 2))  # r(x), round half up
        out.append(_float_of((point + zi) * g))
    return np.array(out, dtype=np.float64)


def release_on_grid(data: Any, vector: bool, grid: Grid, noise: IntArray) -> float | FloatArray:
    """``fl((r(x) + noise)·2**k)``: the grid index of the exact datum plus integer noise, scaled back.

    Float data (the domain admits only ints that are exact floats) are converted exactly and rounded to
    the grid with :func:`grid_points`; integer data are saturated to ``[-2**60, 2**60]`` and handled in
    int64 (:func:`_release_ints`). The result is the correctly rounded float of the exact grid point
    ``(r(x) + noise)·2**k``, a deterministic function of it (post-processing). Noise of ``2**53`` grid
    units or more (practically never) takes an exact rational path.

    Examples:
        >>> g = Grid.for_laplace(Fraction(1), integer=True)  # k = -30
        >>> release_on_grid(2**60 - 1, False, g, np.array([-(2**30)], dtype=np.int64)) == float(2**60 - 2)
        True
    """
    if grid.integer:
        x: npt.NDArray[Any] = saturate_ints(data, vector)
    else:
        x = np.atleast_1d(np.asarray(data, dtype=np.float64))
    if noise.size and int(np.max(np.abs(noise))) >= EXACT_NOISE:
        out = _release_exact(x, grid, noise)
    elif grid.integer:
        out = _release_ints(x, grid.k, noise)
    else:
        out = _release_floats(x, grid.k, noise)
    return out if vector else float(out[0])


def data_is_integer(input_domain: Domain) -> bool:
    """Whether the mechanism's data are integers (``AtomDomain(int)`` or a vector of it)."""
    element = input_domain.element_domain if isinstance(input_domain, VectorDomain) else input_domain
    return isinstance(element, AtomDomain) and element.carrier is int


def grid_runner(
    vector: bool,
    grid: Grid,
    exact_noise: Callable[[int], npt.NDArray[np.int64]],
    float_noise: Callable[[tuple[int, ...], float, np.random.Generator], npt.NDArray[np.float64]],
    scale: float,
    rng: np.random.Generator | None,
) -> Callable[[Any], Any]:
    """The release function shared by the float Laplace and Gaussian mechanisms.

    Secure (``rng is None``): ``exact_noise(n)`` draws n exact integer noise values in grid units, added by
    :func:`release_on_grid`. Seeded fast path (NOT private): ``float_noise(shape, scale, generator)`` added
    to the float input.
    """

    def run(data: Any) -> Any:
        if rng is None:  # secure: exact discrete noise on the grid
            noise = exact_noise(len(data) if vector else 1)
            return release_on_grid(data, vector, grid, noise)
        gen = _noise.resolve_rng(rng)  # seeded fast path: NOT private
        if vector:
            values = np.asarray(data, dtype=np.float64)
            return values + float_noise(values.shape, scale, gen)
        return float(data) + float(float_noise((), scale, gen))

    return run


def secure_float_setup(
    input_domain: Domain, vector: bool, grid: Grid, rng: np.random.Generator | None
) -> int | None:
    """The number of coordinates (1 for an atom) of a float mechanism on ``grid``; refuses unknown-size
    vectors that are not on the grid.

    A vector of unknown size whose entries are rounded has no finite grid bound
    (:func:`grid_sensitivity`), so the secure path refuses it; the seeded path (``rng=``) does not round.
    """
    check_generator(rng)
    size = input_domain.size if isinstance(input_domain, VectorDomain) else 1
    if vector and size is None and not grid.on_grid and rng is None:
        raise DomainMismatch(
            f"input_domain={input_domain!r}: the secure float mechanism rounds each entry to a grid of "
            f"width 2**{grid.k}, which can add one grid step per entry to the sensitivity, so it needs a "
            "known size: use VectorDomain(AtomDomain(float), size=n), or integer data with a scale below "
            "the grid's integer limit"
        )
    return size
