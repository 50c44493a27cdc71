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
from dpcompose.accounting import exact
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
from dpcompose.errors import DomainMismatch
from dpcompose.measurements import _noise
from dpcompose.measurements._sampling import (
    GeneratorSource,
    RandomSource,
    discrete_gaussian_array,
    discrete_laplace_array,
)

__all__ = [
    "Grid",
    "grid_sensitivity",
    "make_discrete_gaussian",
    "make_discrete_laplace",
    "noisy_on_grid",
    "secure_float_setup",
    "to_grid",
]

_INT64_HALF = 1 << 62


def _source(rng: np.random.Generator | None) -> RandomSource | None:
    """``None`` (the secure default) or the caller's generator as a (not private) bit source."""
    return None if rng is None else GeneratorSource(rng)


def check_numeric_input(
    domain: Domain, metric: Metric, vector_metric: type, carriers: tuple[type, ...] = (int, float)
) -> bool:
    """Whether the input is a vector; DomainMismatch unless it is an atom of one of ``carriers`` with
    ``AbsoluteDistance`` or a ``VectorDomain`` of such atoms with ``vector_metric``."""
    if isinstance(domain, AtomDomain) and domain.carrier in carriers:
        if not isinstance(metric, AbsoluteDistance):
            raise DomainMismatch(f"a scalar input needs AbsoluteDistance(), not {metric!r}")
        return False
    if (
        isinstance(domain, VectorDomain)
        and isinstance(domain.element_domain, AtomDomain)
        and domain.element_domain.carrier in carriers
    ):
        if not isinstance(metric, vector_metric):
            raise DomainMismatch(f"a vector input needs {vector_metric.__name__}(), not {metric!r}")
        return True
    names = "|".join(c.__name__ for c in carriers)
    raise DomainMismatch(f"input_domain={domain!r} must be AtomDomain({names}) or a VectorDomain of those")


def _add_integer_noise(data: Any, noise: npt.NDArray[np.int64], vector: bool) -> Any:
    """Exact integer sum; int64 array for vectors (Python ints if a sum leaves int64), int for atoms."""
    if not vector:
        return int(data) + int(noise[0])
    values = np.asarray(data)
    if values.dtype.kind in "iu" and values.size and int(np.abs(values).max()) < _INT64_HALF:
        return values.astype(np.int64) + noise
    total = np.array([int(v) for v in data], dtype=object) + noise.astype(object)
    try:
        return total.astype(np.int64)
    except OverflowError:
        return total


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
        A ``PureDP`` measurement returning an int (atom) or an int64 numpy array (vector).

    Raises:
        InvalidParameter: ``scale`` is not finite and positive.
        DomainMismatch: the domain/metric pair is not one of the above.

    Source: Ghosh, Roughgarden, Sundararajan 2009 (the geometric mechanism is ε-DP for ε = Δ/t);
    sampler: Canonne, Kamath, Steinke 2020, Algorithm 2.

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
    vector = check_numeric_input(input_domain, input_metric, L1Distance, (int,))

    def run(data: Any) -> Any:
        size = len(data) if vector else 1
        return _add_integer_noise(data, discrete_laplace_array(scale_q, size, _source(rng)), vector)

    def privacy_map(d_in: Fraction) -> Fraction:
        return Fraction(d_in) / scale_q

    return Measurement(
        input_domain,
        input_metric,
        PureDP(),
        run,
        privacy_map,
        node=Node(
            "discrete_laplace",
            params=(("scale", repr(scale)),),
            source="Ghosh–Roughgarden–Sundararajan 2009; sampler Canonne–Kamath–Steinke 2020 Alg. 2",
        ),
    )


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
        A ``ZCDP`` measurement returning an int (atom) or an int64 numpy array (vector).

    Raises:
        InvalidParameter: ``scale`` is not finite and positive.
        DomainMismatch: the domain/metric pair is not one of the above.

    Source: Canonne, Kamath, Steinke 2020, Theorem 4 (univariate: ½(Δ/σ)²-zCDP) and Theorem 14
    (multivariate, independent coordinates: ½‖Δ‖₂²/σ²-zCDP); sampler: Algorithm 3.

    Examples:
        >>> import dpcompose as dp
        >>> m = make_discrete_gaussian(dp.AtomDomain(int), dp.AbsoluteDistance(), scale=2)
        >>> m.map(1)
        Fraction(1, 8)
    """
    check_finite_positive(scale, "scale")
    sigma = exact(scale, "scale")
    vector = check_numeric_input(input_domain, input_metric, L2Distance, (int,))

    def run(data: Any) -> Any:
        size = len(data) if vector else 1
        return _add_integer_noise(data, discrete_gaussian_array(sigma * sigma, size, _source(rng)), vector)

    def privacy_map(d_in: Fraction) -> Fraction:
        ratio = Fraction(d_in) / sigma
        return ratio * ratio / 2

    return Measurement(
        input_domain,
        input_metric,
        ZCDP(),
        run,
        privacy_map,
        node=Node(
            "discrete_gaussian",
            params=(("scale", repr(scale)),),
            source="Canonne–Kamath–Steinke 2020 Thm 4 / Thm 14; sampler Alg. 3",
        ),
    )


# ---------------------------------------------------------------------------------------------------------
# The grid behind the secure float mechanisms
# ---------------------------------------------------------------------------------------------------------


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
    """

    k: int
    units: Fraction

    @property
    def width(self) -> Fraction:
        """The grid width ``2**k`` as an exact rational."""
        return Fraction(2) ** self.k

    @classmethod
    def for_laplace(cls, scale: Fraction) -> Grid:
        """Width ``2**(⌊log₂ b⌋ - 30)``: ``t = b/2**k ∈ [2**30, 2**31)``, the exact scale ``b`` kept."""
        k = _floor_log2(scale) - 30
        return cls(k, scale / Fraction(2) ** k)

    @classmethod
    def for_gaussian(cls, sigma: Fraction) -> Grid:
        """Width ``2**(⌊log₂ σ⌋ - 20)`` and σ in grid units rounded *up* to an integer in [2**20, 2**21].

        The integer keeps the sampler's arithmetic in int64; the mechanism then uses σ' = units·2**k ≥ σ
        (σ' = σ exactly whenever σ/2**k is an integer, e.g. σ with at most 21 significant bits), and its
        map reports the ρ of σ', which is the true one for the noise drawn.
        """
        k = _floor_log2(sigma) - 20
        return cls(k, Fraction(math.ceil(sigma / Fraction(2) ** k)))


def to_grid(values: npt.NDArray[np.float64], k: int) -> npt.NDArray[Any]:
    """The grid index ``r(x) = ⌊x/2**k + 1/2⌋`` of every value, exactly (round half up).

    Computed as ``(⌊x·2**(1-k)⌋ + 1) // 2``, which equals ``⌊x/2**k + 1/2⌋`` because
    ``⌊(⌊y⌋ + 1)/2⌋ = ⌊(y + 1)/2⌋``. Scaling a float by a power of two is exact unless it overflows, and
    ``floor`` of a float is exact, so the int64 result is exact; values out of that range (or ``k > 1``,
    where scaling down could underflow) take the exact rational path (Python ints, ``object`` array).

    Examples:
        >>> to_grid(np.array([0.49, 0.5, -0.5, 2.75]), 0).tolist()
        [0, 1, 0, 3]
    """
    flat = np.asarray(values, dtype=np.float64)
    if k <= 1:
        with np.errstate(over="ignore"):
            # a product with a power of two is exact unless it overflows, like ldexp, and faster
            scaled = flat * _pow2(1 - k) if 1 - k <= _POW2_SAFE else np.ldexp(flat, 1 - k)
        if flat.size == 0 or float(np.max(np.abs(scaled))) < _INT64_HALF:
            index = np.floor(scaled).astype(np.int64)
            index += 1
            index >>= 1  # an arithmetic shift is floor division by 2, negative values included
            return index
    factor = Fraction(2) ** (1 - k)
    return np.array([(math.floor(Fraction(float(v)) * factor) + 1) // 2 for v in flat], dtype=object)


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


def noisy_on_grid(
    data: Any, vector: bool, k: int, noise: npt.NDArray[np.int64], integer: bool = False
) -> float | npt.NDArray[np.float64]:
    """``(r(x) + noise)·2**k`` as float(s): the grid index plus integer noise, scaled back.

    ``integer=True`` (integer data, ``k <= 0``) computes the grid index ``x·2**(-k)`` exactly from the
    Python ints instead of from floats. Converting the exact integer grid point to a float at the end is a
    deterministic function of it (post-processing).
    """
    if integer and k <= 0:
        index = _integer_grid_index(data if vector else [data], -k)
    else:
        index = to_grid(np.atleast_1d(np.asarray(data, dtype=np.float64)), k)
    if index.dtype == object:
        total = index + noise.astype(object)
        out = np.array([math.ldexp(float(v), k) for v in total], dtype=np.float64)
    else:
        total = (index + noise).astype(np.float64)
        with np.errstate(over="ignore", under="ignore"):
            out = total * _pow2(k) if abs(k) <= _POW2_SAFE else np.ldexp(total, k)
    return out if vector else float(out[0])


_POW2_SAFE = 1000
"""Powers of two ``2**j`` with ``|j| <= 1000`` are normal floats, so scaling by them is exact ldexp."""


def _pow2(j: int) -> float:
    return math.ldexp(1.0, j)


def _integer_grid_index(values: Any, shift: int) -> npt.NDArray[Any]:
    """The grid indices ``v·2**shift`` of integer data, exactly: int64 when they fit, Python ints if not."""
    arr = np.asarray(values) if not isinstance(values, np.ndarray) else values
    if arr.dtype.kind == "i" and arr.size:
        top = max(int(arr.max()), -int(arr.min()))
        if top < _INT64_HALF >> shift:
            return arr.astype(np.int64) << shift
    index = np.array([int(v) << shift for v in np.ravel(arr)], dtype=object)
    if all(abs(v) < _INT64_HALF for v in index):
        return index.astype(np.int64)
    return index


def grid_runner(
    vector: bool,
    grid: Grid,
    integer: bool,
    exact_noise: Callable[[int], npt.NDArray[np.int64]],
    float_noise: Callable[[tuple[int, ...], float, np.random.Generator], npt.NDArray[np.float64]],
    scale: float,
    rng: np.random.Generator | None,
) -> Callable[[Any], Any]:
    """The release function shared by the float Laplace and Gaussian mechanisms.

    Secure (``rng is None``): ``exact_noise(n)`` draws n exact integer noise values in grid units, added by
    :func:`noisy_on_grid`. Seeded fast path (NOT private): ``float_noise(shape, scale, generator)`` added to
    the float input.
    """

    def run(data: Any) -> Any:
        if rng is None:  # secure: exact discrete noise on the grid
            noise = exact_noise(len(data) if vector else 1)
            return noisy_on_grid(data, vector, grid.k, noise, integer)
        gen = _noise.resolve_rng(rng)  # seeded fast path: NOT private
        if vector:
            values = np.asarray(data, dtype=np.float64)
            return values + float_noise(values.shape, scale, gen)
        return float(data) + float(float_noise((), scale, gen))

    return run


def secure_float_setup(
    input_domain: Domain, vector: bool, k: int, rng: np.random.Generator | None
) -> tuple[bool, int | None]:
    """``(integer, size)`` for a float mechanism on the grid ``2**k``; refuses unknown-size float vectors.

    ``integer`` says the data are ints on the grid (``k <= 0``), so rounding changes nothing; ``size`` is
    the number of coordinates (1 for an atom). A float vector of unknown size has no finite grid bound
    (:func:`grid_sensitivity`), so the secure path refuses it; the seeded path (``rng=``) does not round.
    """
    element = input_domain.element_domain if isinstance(input_domain, VectorDomain) else input_domain
    integer = isinstance(element, AtomDomain) and element.carrier is int and k <= 0
    size = input_domain.size if isinstance(input_domain, VectorDomain) else 1
    if vector and size is None and not integer and rng is None:
        raise DomainMismatch(
            f"input_domain={input_domain!r}: the secure float mechanism rounds each entry to a grid of "
            f"width 2**{k}, which can add one grid step per entry to the sensitivity, so it needs a known "
            "size: use VectorDomain(AtomDomain(float), size=n), or integer data"
        )
    return integer, size
