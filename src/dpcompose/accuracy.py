"""Accuracy of the noise mechanisms: from a noise scale to an error bound, back, and confidence intervals.

**Definition.** The *accuracy* of a release at level ``alpha`` is a number ``a`` with

    P[ |release − true value| > a ] <= alpha,

so the closed interval ``[release − a, release + a]`` contains the true value with probability at least
``1 − alpha`` (for a vector release: each coordinate separately). The ``*_scale_to_accuracy`` functions
return the least such ``a`` that the bounds below certify (an ``int`` for the integer mechanisms); the
``accuracy_to_*_scale`` functions return the largest float scale whose accuracy is at most the given one.

**Honest for what the mechanisms release.** ``make_laplace`` and ``make_gaussian`` do not add continuous
noise: they round the datum to a grid ``g·Z`` and add exact *discrete* noise in grid units
(:mod:`dpcompose.measurements._discrete`). The accuracy here is computed for that release: the grid
noise's exact tail plus half a grid step of rounding, for the grids of float and of integer data, and at
least the continuous value (the seeded ``rng=`` path), whichever is largest. It bounds
the distance between the true value and the *exact* grid point; the released float is that point rounded
to the nearest float, which can add half a unit in the last place of the release:
:func:`confidence_interval` adds it, so its interval has coverage at least ``1 − alpha`` for the actual
sampler.

**How the tails are bounded** (all rounding outward, :mod:`dpcompose.accounting._exact`):

* discrete Laplace of scale ``t``: ``P[|Z| > k] = 2e^{−(k+1)/t}/(1 + e^{−1/t})`` (closed form, a geometric
  series), evaluated in the log domain;
* discrete Gaussian of parameter ``σ²``: ``P[|Z| > k] = 2N(k+1)/D`` with ``N(m) = Σ_{z>=m} f(z)``,
  ``D = Σ_z f(z)``, ``f(z) = e^{−z²/(2σ²)}``. As ``f`` decreases on ``[0, ∞)``,
  ``∫_c^∞ f <= Σ_{z>=c} f(z) <= f(c) + ∫_c^∞ f`` with ``∫_c^∞ f = σ√(π/2)·erfc(c/(σ√2))``; so
  ``N(m) <= Σ_{m<=z<m+L} f(z) + f(m+L) + ∫_{m+L}^∞ f`` and ``D >= 1 + 2Σ_{1<=z<=L} f(z) + 2∫_{L+1}^∞ f``
  with ``L = ⌈12σ⌉ + 64`` terms summed explicitly when ``σ < 1024`` (the rest is below ``e^{−72}``), and
  ``L = 0`` above, where the integral bounds are within a relative ``1/σ`` of the sums. ``math.erfc`` is
  accurate to a few units in the last place; each value is padded by a relative ``2**-40`` and an
  absolute ``1e-320``.
* continuous Laplace ``e^{−a/b}`` and Gaussian ``erfc(a/(σ√2))`` for the seeded float path.

Source: discrete Laplace tail: Ghosh, Roughgarden, Sundararajan 2009 (the geometric distribution); discrete
Gaussian: Canonne, Kamath, Steinke 2020 (definition; the sum/integral bounds are proven above); the
accuracy/confidence-interval convention follows OpenDP's ``laplacian_scale_to_accuracy``.

Examples:
    >>> import dpcompose as dp
    >>> dp.accuracy.discrete_laplace_scale_to_accuracy(1, 0.05)  # P[|Z| > 3] <= 0.05 for DLap(1)
    3
    >>> a = dp.accuracy.laplace_scale_to_accuracy(1.0, 0.05)
    >>> 2.9957 < a < 2.9958  # ln(1/0.05) = 2.99573...
    True
    >>> dp.accuracy.confidence_interval(10, 1, 0.05, mechanism="discrete_laplace")
    (7, 13)
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpcompose._validation import check_finite, check_finite_nonnegative, check_finite_positive, check_str
from dpcompose.accounting._common import bisect
from dpcompose.accounting._exact import (
    exact,
    exp_down,
    exp_up,
    float_down,
    float_up,
    log1p_down,
    log_down,
    log_up,
    next_down,
    next_up,
    sqrt_down,
    sqrt_up,
)
from dpcompose.core import Measurement
from dpcompose.errors import InvalidParameter
from dpcompose.measurements._discrete import (
    DISCRETE_GAUSSIAN_MAX_SIGMA2,
    DISCRETE_LAPLACE_MAX_SCALE,
    Grid,
    check_grid_scale,
)

__all__ = [
    "accuracy_to_discrete_gaussian_scale",
    "accuracy_to_discrete_laplace_scale",
    "accuracy_to_gaussian_scale",
    "accuracy_to_laplace_scale",
    "confidence_interval",
    "discrete_gaussian_scale_to_accuracy",
    "discrete_laplace_scale_to_accuracy",
    "gaussian_scale_to_accuracy",
    "laplace_scale_to_accuracy",
]


def __dir__() -> list[str]:
    """The public names only (PEP 562): ``dir(dp.accuracy)`` lists what users call, not the imports."""
    return sorted(__all__)


MECHANISMS = ("laplace", "gaussian", "discrete_laplace", "discrete_gaussian")
MIN_ALPHA = Fraction(1, 10**300)
"""The smallest level accepted: the tail bounds carry an absolute padding near ``1e-320``."""
_LAPLACE_BITS = 30  # make_laplace's grid: t = scale/g in [2**30, 2**31)
_GAUSS_BITS = 20  # make_gaussian's grid: σ/g in [2**20, 2**21]
_LOG2_UP = next_up(math.log(2.0), 2)
_PI_DOWN = math.pi  # the double nearest π is below π
_PI_UP = next_up(math.pi)
_EXPLICIT_TERMS = 64


# --- reading the arguments ----------------------------------------------------------------------------------


def _alpha(alpha: object) -> Fraction:
    a = check_finite(alpha, "alpha")
    if not 0 < a < 1:
        raise InvalidParameter(f"alpha={alpha!r} must lie in (0, 1)")
    q = exact(alpha, "alpha")
    if q < MIN_ALPHA:
        raise InvalidParameter(
            f"alpha={alpha!r} must be at least 1e-300: smaller tail probabilities are not certified here"
        )
    return q


def _scale(scale: object, name: str = "scale") -> Fraction:
    check_finite_positive(scale, name)
    return exact(scale, name)


def _log_over(c: int, alpha: Fraction) -> float:
    """``ln(c/alpha)`` (an estimate for starting points; finite for every positive ``alpha``)."""
    return math.log(c) - log_down(alpha)


# --- discrete Laplace ---------------------------------------------------------------------------------------


def _dlap_log_tail_up(t: Fraction, k: int) -> float:
    """An upper bound on ``ln P[|Z| > k] = ln 2 − (k+1)/t − ln(1 + e^{−1/t})`` for ``Z ~ DLap(t)``."""
    v = next_up(_LOG2_UP - float_down(Fraction(k + 1) / t))
    return next_up(v - log1p_down(exp_down(-1 / t)))


def _dlap_accuracy(t: Fraction, alpha: Fraction) -> int:
    """The least ``k >= 0`` whose certified tail ``P[|Z| > k]`` is at most ``alpha``, ``Z ~ DLap(t)``."""
    limit = log_down(alpha)

    def ok(k: int) -> bool:
        return _dlap_log_tail_up(t, k) <= limit

    # closed form: k + 1 >= t·(ln 2 − ln α − ln(1 + e^{−1/t})); start there and step to the least passing k
    r = math.exp(-float(1 / t)) if t > Fraction(1, 700) else 0.0
    guess = float(t) * (math.log(2.0) - float(limit) - math.log1p(r)) - 1
    k = max(0, math.ceil(guess) if math.isfinite(guess) else 0)
    step = 1
    if ok(k):
        hi, lo = k, k - 1
        while lo >= 0 and ok(lo):
            hi, lo = lo, lo - step
            step *= 2
        lo = max(lo, -1)
    else:
        lo, hi = k, k + 1
        while not ok(hi):
            lo, hi = hi, hi + step
            step *= 2
    return bisect(lo, hi, ok)  # ok(hi), not ok(lo) (lo = -1 stands for "below 0")


def discrete_laplace_scale_to_accuracy(scale: float | int | Fraction, alpha: float) -> int:
    """The accuracy of ``make_discrete_laplace(scale)``: the least integer ``k`` with ``P[|Z| > k] <= alpha``.

    ``P[|Z| > k] = 2e^{−(k+1)/t}/(1 + e^{−1/t})`` for ``Z ~ DLap(t)``, ``t = scale`` (exact binary value).

    Args:
        scale: the discrete Laplace scale ``t > 0``.
        alpha: the level, in (0, 1).

    Returns:
        ``k``: the release is within ``k`` of the true integer with probability at least ``1 − alpha``.

    Raises:
        InvalidParameter: ``scale`` not finite and positive, or ``alpha`` outside (0, 1).

    Source: the geometric mechanism's tail (Ghosh, Roughgarden, Sundararajan 2009); summed here.

    Examples:
        >>> discrete_laplace_scale_to_accuracy(2, 0.05), discrete_laplace_scale_to_accuracy(0.5, 0.5)
        (6, 0)
    """
    t = _scale(scale)
    if t > DISCRETE_LAPLACE_MAX_SCALE:
        raise InvalidParameter(f"scale={scale!r} must be at most 2**50, as in make_discrete_laplace")
    return _dlap_accuracy(t, _alpha(alpha))


def accuracy_to_discrete_laplace_scale(accuracy: float | int, alpha: float) -> float:
    """The largest float scale ``t`` with ``P[|Z| > ⌊accuracy⌋] <= alpha`` for ``Z ~ DLap(t)``.

    Args:
        accuracy: the half-width ``a >= 0`` (integer releases: ``⌊a⌋`` is what counts).
        alpha: the level, in (0, 1).

    Returns:
        A scale for ``make_discrete_laplace`` whose accuracy is at most ``accuracy`` (at most ``2**50``,
        the sampler's limit).

    Raises:
        InvalidParameter: ``accuracy`` negative or not finite, or ``alpha`` outside (0, 1).

    Source: the inverse of :func:`discrete_laplace_scale_to_accuracy` (the tail grows with ``t``).

    Examples:
        >>> t = accuracy_to_discrete_laplace_scale(6, 0.05)
        >>> discrete_laplace_scale_to_accuracy(t, 0.05), discrete_laplace_scale_to_accuracy(t * 1.001, 0.05)
        (6, 7)
    """
    check_finite_nonnegative(accuracy, "accuracy")
    k = math.floor(exact(accuracy, "accuracy"))
    a = _alpha(alpha)
    limit = log_down(a)

    def ok(t: float) -> bool:
        return _dlap_log_tail_up(Fraction(t), k) <= limit

    guess = (k + 1) / _log_over(2, a)  # 2r^(k+1) <= α suffices
    return _largest_passing(ok, guess, float(1 << 50), f"accuracy={accuracy!r}, alpha={alpha!r}")


# --- discrete Gaussian --------------------------------------------------------------------------------------


def _erfc_up(x: float) -> float:
    return next_up(math.erfc(x) * (1 + 2.0**-40)) + 1e-320


def _erfc_down(x: float) -> float:
    return max(0.0, next_down(math.erfc(x) * (1 - 2.0**-40)) - 1e-320)


class _DGaussTail:
    """Certified bounds for the discrete Gaussian of parameter ``σ² = s2`` (see the module docstring).

    For ``σ < 1024`` the terms ``f(z)``, ``0 <= z <= Z = ⌈12σ⌉ + 64``, are evaluated once (numpy ``exp``,
    padded by a relative ``2**-40`` and an absolute ``1e-320`` outward) and summed from the top (a running
    sum of at most ``12352`` positive terms errs by a relative ``12352·2**-53 < 2**-39``, covered by a
    further ``2**-30`` pad); beyond ``Z`` the integral bounds take over (``f(Z) < e^{-72}``). Above, only
    the integral bounds are used.
    """

    def __init__(self, s2: Fraction) -> None:
        self.s2 = s2
        self.two_s2 = 2 * s2
        self.root_up = sqrt_up(self.two_s2)  # σ√2
        self.root_down = sqrt_down(self.two_s2)
        self.half_area_up = next_up(sqrt_up(s2 * Fraction(_PI_UP) / 2), 1)  # σ√(π/2)
        self.half_area_down = next_down(sqrt_down(s2 * Fraction(_PI_DOWN) / 2), 1)
        sigma_up = sqrt_up(s2)
        if sigma_up < 1024:
            self.top = math.ceil(12 * sigma_up) + _EXPLICIT_TERMS
            z = np.arange(self.top + 1, dtype=np.float64)
            # z²/(2σ²) rounded outward: the float product/quotient err by half an ulp each
            inv_up, inv_down = float_up(1 / self.two_s2), float_down(1 / self.two_s2)
            with np.errstate(under="ignore", over="ignore", invalid="ignore"):
                expo_up = np.nextafter(np.nextafter(z * z, np.inf) * inv_up, np.inf)
                expo_down = np.nextafter(np.nextafter(z * z, -np.inf) * inv_down, -np.inf)
                expo_up[0] = expo_down[0] = 0.0  # f(0) = 1 (0·inf is NaN for a tiny σ)
                f_up = np.exp(-expo_down) * (1 + 2.0**-40) + 1e-320
                f_down = np.maximum(np.exp(-expo_up) * (1 - 2.0**-40) - 1e-320, 0.0)
            pad_up, pad_down = 1 + 2.0**-30, 1 - 2.0**-30
            # suffix sums: above[m] >= Σ_{m<=z<=top} f(z), below[m] <= the same
            self.above = np.cumsum(f_up[::-1])[::-1] * pad_up
            below = np.cumsum(f_down[::-1])[::-1] * pad_down
            rest_down = self._integral_down(self.top + 1)
            self.rest_up = next_up(self._f_up(self.top + 1) + self._integral_up(self.top + 1))
            self.denominator_down = next_down(1 + 2 * next_down(float(below[1]) + rest_down))
        else:
            self.top = -1
            self.denominator_down = next_down(1 + 2 * self._integral_down(1))

    def _f_up(self, z: int) -> float:
        return exp_up(-Fraction(z * z) / self.two_s2)

    def _integral_up(self, c: int) -> float:
        x = float_down(Fraction(c) / Fraction(self.root_up))
        return next_up(self.half_area_up * _erfc_up(x))

    def _integral_down(self, c: int) -> float:
        if self.root_down == 0:
            return 0.0
        x = float_up(Fraction(c) / Fraction(self.root_down))
        return max(0.0, next_down(self.half_area_down * _erfc_down(x)))

    def tail_up(self, k: int) -> float:
        """An upper bound on ``P[|Z| > k]``."""
        m = k + 1
        if m <= self.top:
            numerator = next_up(float(self.above[m]) + self.rest_up)
        else:
            numerator = next_up(self._f_up(m) + self._integral_up(m))
        return next_up(2 * numerator / self.denominator_down, 2)

    def accuracy(self, alpha: Fraction) -> int:
        """The least ``k >= 0`` whose certified tail is at most ``alpha``."""

        def ok(k: int) -> bool:
            return Fraction(self.tail_up(k)) <= alpha

        sigma = sqrt_up(self.s2)
        hi = math.ceil(sigma * math.sqrt(2 * _log_over(4, alpha))) + 2
        while not ok(hi):
            hi *= 2
        return bisect(-1, hi, ok)


def discrete_gaussian_scale_to_accuracy(scale: float | int | Fraction, alpha: float) -> int:
    """The accuracy of ``make_discrete_gaussian(scale)``: the least integer ``k``, ``P[|Z| > k] <= alpha``.

    ``Z`` is the discrete Gaussian with ``σ² = scale²`` (exact); its tail is bounded by sums and integrals
    as in the module docstring (certified, and within a relative ``1/σ`` of the exact tail).

    Args:
        scale: σ > 0.
        alpha: the level, in (0, 1).

    Returns:
        ``k``: the release is within ``k`` of the true integer with probability at least ``1 − alpha``.

    Raises:
        InvalidParameter: ``scale`` not finite and positive, or ``alpha`` outside (0, 1).

    Source: Canonne, Kamath, Steinke 2020 (the discrete Gaussian); tail bounds proven in this module.

    Examples:
        >>> discrete_gaussian_scale_to_accuracy(1, 0.05), discrete_gaussian_scale_to_accuracy(10, 0.05)
        (2, 20)
    """
    sigma = _scale(scale)
    if sigma * sigma > DISCRETE_GAUSSIAN_MAX_SIGMA2:
        raise InvalidParameter(f"scale={scale!r} must be at most 2**40, as in make_discrete_gaussian")
    return _DGaussTail(sigma * sigma).accuracy(_alpha(alpha))


def accuracy_to_discrete_gaussian_scale(accuracy: float | int, alpha: float) -> float:
    """The largest float σ with ``P[|Z| > ⌊accuracy⌋] <= alpha`` for the discrete Gaussian of ``σ² = σ·σ``.

    Args:
        accuracy: the half-width ``a >= 0`` (``⌊a⌋`` is what counts for integers).
        alpha: the level, in (0, 1).

    Returns:
        A scale for ``make_discrete_gaussian`` whose accuracy is at most ``accuracy`` (at most ``2**40``).

    Raises:
        InvalidParameter: ``accuracy`` negative or not finite, or ``alpha`` outside (0, 1).

    Source: the inverse of :func:`discrete_gaussian_scale_to_accuracy`.

    Examples:
        >>> s = accuracy_to_discrete_gaussian_scale(20, 0.05)
        >>> discrete_gaussian_scale_to_accuracy(s, 0.05) <= 20
        True
    """
    check_finite_nonnegative(accuracy, "accuracy")
    k = math.floor(exact(accuracy, "accuracy"))
    a = _alpha(alpha)

    def ok(sigma: float) -> bool:
        return Fraction(_DGaussTail(Fraction(sigma) ** 2).tail_up(k)) <= a

    guess = (k + 1) / math.sqrt(2 * _log_over(4, a))
    return _largest_passing(ok, guess, float(1 << 40), f"accuracy={accuracy!r}, alpha={alpha!r}")


# --- the grid mechanisms ------------------------------------------------------------------------------------


def _largest_passing(ok: Callable[[float], bool], guess: float, cap: float, what: str) -> float:
    """The largest float ``x`` in ``(0, cap]`` found by bisection with ``ok(x)``, starting near ``guess``
    (``ok`` is assumed to hold for small ``x``); the result always satisfies ``ok``."""
    lo = min(max(guess, 2.0**-900), cap)
    while not ok(lo):
        lo /= 2
        if lo < 2.0**-1000:
            raise InvalidParameter(
                f"{what}: no float scale reaches that accuracy (the certified tails stop near 1e-300)"
            )
    if ok(cap):
        return cap
    hi = min(cap, lo * 2)
    while ok(hi):
        lo, hi = hi, min(cap, hi * 2)
    for _ in range(200):
        mid = lo + (hi - lo) / 2
        if mid in (lo, hi):
            break
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


def _data_kind(data: object) -> str:
    return check_str(data, "data", ("float", "int", "any"))


def _laplace_accuracy(scale: Fraction, alpha: Fraction, data: str = "float") -> Fraction:
    candidates: list[Fraction] = []
    if data != "int":
        candidates.append(Fraction(float_up(scale * Fraction(log_up(1 / alpha)))))  # seeded path: e^{−a/b}
        grid = Grid.for_laplace(scale, False)  # float data: the secure grid release
        half = Fraction(0) if grid.on_grid else Fraction(1, 2)
        candidates.append((_dlap_accuracy(grid.units, alpha) + half) * grid.width)
    if data != "float" and scale <= 2**50:  # integer data: exact discrete Laplace noise (refused above 2**50)
        candidates.append(Fraction(_dlap_accuracy(scale, alpha)))
    return max(candidates)


def laplace_scale_to_accuracy(scale: float | int | Fraction, alpha: float, *, data: str = "float") -> float:
    """The accuracy of ``make_laplace(scale)``: ``a`` with ``P[|release − x| > a] <= alpha`` (see the module
    docstring for the release's last-place rounding).

    Float data: the secure release is ``(r(x) + Z)·g`` with ``r(x)`` the grid index of ``x`` (within
    half a step) and ``Z`` discrete Laplace of ``scale/g`` grid units, so ``a = (k + 1/2)·g`` with ``k``
    the discrete accuracy in grid units; the result is the larger of that and the continuous
    ``scale·ln(1/alpha)`` (the seeded ``rng=`` path). Integer data: ``make_laplace`` adds exact discrete
    Laplace noise of ``scale`` (:func:`discrete_laplace_scale_to_accuracy`, a whole number). ``data=``
    says which release to cover: ``"float"`` (the default, as OpenDP's ``laplacian_scale_to_accuracy``),
    ``"int"``, or ``"any"`` (the larger, valid for both). Rounded up to a float; per coordinate for a
    vector release.

    Args:
        scale: the Laplace scale ``b > 0`` (within the secure grid's range, as ``make_laplace`` requires).
        alpha: the level, in (0, 1).
        data: ``"float"`` (default), ``"int"`` or ``"any"``: the data type ``make_laplace`` was built on.

    Returns:
        The half-width ``a`` (a float).

    Raises:
        InvalidParameter: ``scale`` not finite and positive or outside the grid's range, or ``alpha``
            outside (0, 1).

    Source: the discrete Laplace tail on make_laplace's grid (this module); continuous Laplace tail
    ``P[|L| > a] = e^{−a/b}`` (Dwork–Roth 2014, Fact 3.7).

    Examples:
        >>> a = laplace_scale_to_accuracy(10.0, 0.05)
        >>> 29.957 < a < 29.958
        True
        >>> laplace_scale_to_accuracy(10.0, 0.05, data="int")  # integer data: discrete noise
        30.0
    """
    s = _scale(scale)
    check_grid_scale(s, _LAPLACE_BITS)
    return float_up(_laplace_accuracy(s, _alpha(alpha), _data_kind(data)))


def accuracy_to_laplace_scale(accuracy: float, alpha: float) -> float:
    """The largest float scale whose :func:`laplace_scale_to_accuracy` is at most ``accuracy``.

    Args:
        accuracy: the half-width ``a > 0``.
        alpha: the level, in (0, 1).

    Returns:
        A scale for ``make_laplace`` (close to ``accuracy / ln(1/alpha)``).

    Raises:
        InvalidParameter: ``accuracy`` not finite and positive, or ``alpha`` outside (0, 1).

    Source: the inverse of :func:`laplace_scale_to_accuracy` (by bisection; the result is checked).

    Examples:
        >>> b = accuracy_to_laplace_scale(30.0, 0.05)
        >>> 10.01 < b < 10.02 and laplace_scale_to_accuracy(b, 0.05) <= 30.0
        True
    """
    target = _scale(accuracy, "accuracy")
    a = _alpha(alpha)

    def ok(b: float) -> bool:
        q = Fraction(b)
        lo_k, hi_k = -1021 + _LAPLACE_BITS, 970 + _LAPLACE_BITS
        if not 2.0**lo_k <= b < 2.0 ** (hi_k + 1):
            return False
        return _laplace_accuracy(q, a) <= target

    guess = float(target) / _log_over(1, a)
    return _largest_passing(ok, guess, 2.0**990, f"accuracy={accuracy!r}, alpha={alpha!r}")


def _gauss_continuous_accuracy(sigma: Fraction, alpha: Fraction) -> Fraction:
    """The least float ``a`` (by bisection) with a certified ``erfc(a/(σ√2)) <= alpha``."""
    root = sigma * Fraction(sqrt_up(2))  # >= σ√2, never 0

    def ok(a: float) -> bool:
        return Fraction(_erfc_up(float_down(Fraction(a) / root))) <= alpha

    hi = float(sigma) * math.sqrt(2 * _log_over(2, alpha)) + float(sigma)
    while not ok(hi):
        hi *= 2
    lo = 0.0
    for _ in range(200):
        mid = lo + (hi - lo) / 2
        if mid in (lo, hi):
            break
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return Fraction(hi)


def _gaussian_accuracy(sigma: Fraction, alpha: Fraction, data: str = "float") -> Fraction:
    candidates: list[Fraction] = []
    if data != "int":
        candidates.append(_gauss_continuous_accuracy(sigma, alpha))  # the seeded path
        grid = Grid.for_gaussian(sigma, False)  # float data: the secure grid release
        half = Fraction(0) if grid.on_grid else Fraction(1, 2)
        candidates.append((_DGaussTail(grid.units * grid.units).accuracy(alpha) + half) * grid.width)
    if data != "float" and sigma <= 2**40:  # integer data: exact discrete Gaussian (refused above 2**40)
        candidates.append(Fraction(_DGaussTail(sigma * sigma).accuracy(alpha)))
    return max(candidates)


def gaussian_scale_to_accuracy(scale: float | int | Fraction, alpha: float, *, data: str = "float") -> float:
    """The accuracy of ``make_gaussian(scale)``: ``a`` with ``P[|release − x| > a] <= alpha``.

    Float data: the secure release adds discrete Gaussian noise of ``σ_g = ⌈σ/g⌉`` grid units to the
    grid index ``r(x)``, so ``a = (k + 1/2)·g`` with ``k`` the discrete accuracy in grid units; the result
    is the larger of that and the continuous Gaussian's ``σ·√2·erfc⁻¹(alpha)`` (the seeded path).
    Integer data: exact discrete Gaussian noise of σ (:func:`discrete_gaussian_scale_to_accuracy`).
    ``data=`` as for :func:`laplace_scale_to_accuracy` (default ``"float"``). Rounded up; per coordinate
    for a vector release.

    Args:
        scale: σ > 0 (within the secure grid's range, as ``make_gaussian`` requires).
        alpha: the level, in (0, 1).
        data: ``"float"`` (default), ``"int"`` or ``"any"``: the data type ``make_gaussian`` was built on.

    Returns:
        The half-width ``a`` (a float).

    Raises:
        InvalidParameter: ``scale`` not finite and positive or outside the grid's range, or ``alpha``
            outside (0, 1).

    Source: the discrete Gaussian tail bounds of this module on make_gaussian's grid; the normal tail
    ``P[|N(0, σ²)| > a] = erfc(a/(σ√2))``.

    Examples:
        >>> a = gaussian_scale_to_accuracy(1.0, 0.05)
        >>> 1.959 < a < 1.961  # the normal quantile 1.95996...
        True
        >>> gaussian_scale_to_accuracy(1.0, 0.05, data="int")  # integer data: discrete noise
        2.0
    """
    s = _scale(scale)
    check_grid_scale(s, _GAUSS_BITS)
    return float_up(_gaussian_accuracy(s, _alpha(alpha), _data_kind(data)))


def accuracy_to_gaussian_scale(accuracy: float, alpha: float) -> float:
    """The largest float σ whose :func:`gaussian_scale_to_accuracy` is at most ``accuracy``.

    Args:
        accuracy: the half-width ``a > 0``.
        alpha: the level, in (0, 1).

    Returns:
        A scale for ``make_gaussian``.

    Raises:
        InvalidParameter: ``accuracy`` not finite and positive, or ``alpha`` outside (0, 1).

    Source: the inverse of :func:`gaussian_scale_to_accuracy` (by bisection; the result is checked).

    Examples:
        >>> s = accuracy_to_gaussian_scale(1.96, 0.05)
        >>> 1.0 < s < 1.0001 and gaussian_scale_to_accuracy(s, 0.05) <= 1.96
        True
    """
    target = _scale(accuracy, "accuracy")
    a = _alpha(alpha)

    def ok(sigma: float) -> bool:
        if not 2.0 ** (-1021 + _GAUSS_BITS) <= sigma < 2.0 ** (970 + _GAUSS_BITS + 1):
            return False
        return _gaussian_accuracy(Fraction(sigma), a) <= target

    guess = float(target) / math.sqrt(2 * _log_over(2, a))
    return _largest_passing(ok, guess, 2.0**980, f"accuracy={accuracy!r}, alpha={alpha!r}")


# --- confidence intervals -----------------------------------------------------------------------------------


def confidence_interval(
    value: Any,
    scale: float | int | Fraction | None = None,
    alpha: float | None = None,
    mechanism: str | None = None,
    *,
    measurement: Measurement[Any, Any, Any, Any] | None = None,
) -> tuple[Any, Any]:
    """A ``1 − alpha`` confidence interval for the true value behind a release of ``mechanism``.

    Pass the measurement that made the release (``measurement=m``) and the mechanism and scale are read
    from it: ``m`` is one of the noise constructors below, or a chain ending in one (``t >> noise``: the
    interval is then for the transformation's exact output). Or pass ``scale`` and ``mechanism`` by hand.

    ``mechanism`` names the constructor that released ``value`` with noise ``scale``: ``"laplace"``
    (``make_laplace``), ``"gaussian"`` (``make_gaussian``), ``"discrete_laplace"`` or
    ``"discrete_gaussian"``. The interval is ``[value − a, value + a]`` with ``a`` the mechanism's accuracy
    (above); for the float mechanisms it is widened by half a unit in the last place of ``value`` (the
    release is the exact grid point rounded to the nearest float) and its ends are rounded outward, so
    ``P[lo <= true value <= hi] >= 1 − alpha``. An infinite release (an overflowed float) gives
    ``(-inf, inf)``. A numpy array (a vector release) gives arrays, coordinate by coordinate.
    ``make_laplace``/``make_gaussian`` built on integer data release ints with exact discrete noise of the
    same scale, so for those mechanisms an int release (or an integer array) gets the discrete interval.

    Args:
        value: the released number (int or float) or a 1-d array of them.
        scale: the noise scale the release used (not with ``measurement``).
        alpha: the level, in (0, 1).
        mechanism: one of ``"laplace"`` (the default), ``"gaussian"``, ``"discrete_laplace"``,
            ``"discrete_gaussian"`` (not with ``measurement``).
        measurement: the measurement that released ``value``: a noise constructor's, or a chain ending in
            one.

    Returns:
        ``(lo, hi)``: ints for an int release, floats otherwise (arrays for arrays).

    Raises:
        InvalidParameter: a bad ``scale``, ``alpha``, ``mechanism`` or ``value`` (NaN, not a number); both
            or neither of ``scale`` and ``measurement``; a measurement whose last step is not one of the
            four noise constructors (a post-processing after the noise, a composition, …).

    Source: the accuracy functions of this module.

    Examples:
        >>> confidence_interval(100.0, 10.0, 0.05)  # make_laplace(scale=10): ± 29.957...
        (70.04267..., 129.95732...)
        >>> confidence_interval(7, 2, 0.05, mechanism="discrete_gaussian")
        (3, 11)
        >>> import dpcompose as dp
        >>> count = dp.t.make_count(dp.VectorDomain(dp.AtomDomain(int)), dp.SymmetricDistance()) >> (
        ...     dp.m.make_laplace(dp.AtomDomain(int), dp.AbsoluteDistance(), scale=10.0))
        >>> confidence_interval(120, measurement=count, alpha=0.05)  # read from the measurement
        (90, 150)
    """
    if alpha is None:
        raise InvalidParameter("alpha is required: the level of the interval, in (0, 1), e.g. alpha=0.05")
    if measurement is not None:
        if scale is not None or mechanism is not None:
            raise InvalidParameter(
                f"pass either measurement= or scale=/mechanism=, not both (scale={scale!r}, "
                f"mechanism={mechanism!r}): the measurement says which noise it adds"
            )
        mechanism, scale = noise_of(measurement)
    elif scale is None:
        raise InvalidParameter(
            "scale is required (or pass measurement=m, the measurement that made the release, to read it)"
        )
    mechanism = "laplace" if mechanism is None else mechanism
    check_str(mechanism, "mechanism", MECHANISMS)
    # make_laplace/make_gaussian release an int exactly when they were built on integer data (exact discrete
    # noise of the same scale), and a float otherwise: the release's type says which noise it carries
    integer_release = isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    if isinstance(value, np.ndarray):
        integer_release = value.dtype.kind in "iu"
    if mechanism == "laplace":
        half: Fraction | int = (
            discrete_laplace_scale_to_accuracy(scale, alpha)
            if integer_release
            else Fraction(laplace_scale_to_accuracy(scale, alpha, data="float"))
        )
    elif mechanism == "gaussian":
        half = (
            discrete_gaussian_scale_to_accuracy(scale, alpha)
            if integer_release
            else Fraction(gaussian_scale_to_accuracy(scale, alpha, data="float"))
        )
    elif mechanism == "discrete_laplace":
        half = discrete_laplace_scale_to_accuracy(scale, alpha)
    else:
        half = discrete_gaussian_scale_to_accuracy(scale, alpha)
    if isinstance(value, (np.ndarray, list, tuple)):
        return _array_interval(value, half)
    return _scalar_interval(value, half)


def _scalar_interval(value: object, half: Fraction | int) -> tuple[Any, Any]:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidParameter(f"value={value!r} must be a released number (int or float)")
    if isinstance(value, (int, np.integer)) and isinstance(half, int):
        return int(value) - half, int(value) + half
    try:  # a float mechanism releases floats: an int is read as the float it stands for
        v = float(value)
    except OverflowError:
        v = math.inf
    if math.isnan(v):
        raise InvalidParameter("value=nan must be a released number, not NaN")
    if math.isinf(v):
        return -math.inf, math.inf
    # half an ulp for the release's rounding; a full one if an int stood for the float (read rounded)
    ulps = Fraction(1) if isinstance(value, (int, np.integer)) else Fraction(1, 2)
    slack = Fraction(half) + Fraction(math.ulp(v)) * ulps
    return float_down(Fraction(v) - slack), float_up(Fraction(v) + slack)


def _array_interval(value: Any, half: Fraction | int) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    arr = np.asarray(value)
    if arr.ndim != 1 or arr.dtype.kind not in "iuf":
        raise InvalidParameter(f"value={value!r} must be a 1-d array of released numbers")
    if arr.dtype.kind in "iu" and isinstance(half, int):
        ints = arr.astype(object)
        return np.array(ints - half, dtype=object), np.array(ints + half, dtype=object)
    floats = arr.astype(np.float64)
    if np.isnan(floats).any():
        raise InvalidParameter("value must not contain NaN")
    # lo = v − (a + ulp(v)); each float operation errs by at most half an ulp of its result, and one step
    # toward the outside covers it (the extra half ulp of the release is inside the full ulp added)
    width = np.nextafter(float_up(Fraction(half)) + np.spacing(np.abs(floats)), np.inf)
    with np.errstate(over="ignore", invalid="ignore"):
        lo = np.nextafter(floats - width, -np.inf)
        hi = np.nextafter(floats + width, np.inf)
    infinite = np.isinf(floats)
    lo[infinite], hi[infinite] = -np.inf, np.inf
    return lo, hi


_FRACTION_TEXT = re.compile(r"Fraction\((-?\d+), (\d+)\)")


def noise_of(measurement: object) -> tuple[str, Fraction]:
    """The noise constructor and scale that ``measurement`` adds last: ``(mechanism, scale)``.

    ``measurement`` is one of :data:`MECHANISMS`' constructors (``make_laplace``, ``make_gaussian``,
    ``make_discrete_laplace``, ``make_discrete_gaussian``), or a chain whose last step is one.

    Raises:
        InvalidParameter: anything else (say which step is last and what to pass instead).
    """
    if not isinstance(measurement, Measurement):
        raise InvalidParameter(f"measurement={measurement!r} must be a Measurement (the one that released)")
    node = measurement.node
    while node.name == "chain" and node.children and isinstance(node.children[-1], Measurement):
        node = node.children[-1].node
    if node.name not in MECHANISMS:
        raise InvalidParameter(
            f"measurement={measurement!r}: its last step is {node.label()!r}, not one of the noise "
            f"constructors {', '.join(MECHANISMS)}; an interval after a post-processing or for a "
            "composition is not read from the measurement: pass scale= and mechanism= for the noisy value"
        )
    text = dict(node.params).get("scale", "")
    found = _FRACTION_TEXT.fullmatch(text)
    try:
        scale = Fraction(int(found[1]), int(found[2])) if found else Fraction(text)
    except (ValueError, ZeroDivisionError):
        raise InvalidParameter(
            f"measurement={measurement!r}: its scale {text!r} could not be read; pass scale= and mechanism="
        ) from None
    return node.name, scale
