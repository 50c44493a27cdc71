"""Tilted composition: a certified δ(ε) of a long composition whose float error is relative to δ.

Why. The FFT that composes many PLDs (:func:`dpcompose.accounting._pld._compose_many`) has a *normwise*
error bound (Higham 2002, Thm 24.2): about 1e-16·log₂N·‖y‖₂ on the whole composite vector y, which turned
into ℓ₁ over N entries is ≈ 1e-12 in absolute terms. At δ = 1e-9 that is 0.1 % of δ and moves the
certified ε by ~1e-3, far more than the discretisation does.

How. Exponential tilting (the Esscher transform) commutes with convolution: with x̃ⱼ = xⱼe^{θj}/Sₓ and
ỹⱼ = yⱼe^{θj}/S_y, (x ∗ y)_J·e^{θJ}/(SₓS_y) = Σⱼ x̃ⱼỹ_{J−j}. So the composite of kᵢ copies of each side is
m_J = c_J·e^{Λ − θJ} with c the composite of the tilted sides and Λ = Σᵢkᵢ·log Sᵢ, where Sᵢ are any
positive numbers (here the tilted totals, so that ‖c‖₁ ≈ 1). The tilt θ is chosen so that the tilted
composite is centred near the ε asked about: the saddle point of the composite's cumulant generating
function K(θ) = Σᵢkᵢ·log Σⱼ xᵢⱼe^{θj}, whose use for privacy accounting is due to Alghamdi, Gomez, Asoodeh,
Calmon, Kosut, Sankar, "The saddle-point method in differential privacy" (ICML 2023). Then the entries
δ(ε) reads are the bulk of c, and the FFT's error ‖Δc‖₁ (the same bound as in ``_compose_many``), untilted
by e^{Λ − θJ} ≤ e^{Λ − θJ₀} for every J ≥ J₀ (θ ≥ 0), is relative to δ:

    δ(ε) ≤ (1 + R)·Σ_{J₀ ≤ J ≤ S} w_Jc_Je^{Λ−θJ} + m_∞ + e^{Λ−θJ₀}(E_in + (1 + R)‖Δc‖₂·σ)
           + e^{Λ−θ·max(J₀, T+1)}·(1 + R)·τ_top,

with J₀ the first lattice index above ε, S the composite's largest finite index (δ = m_∞ for J₀ > S),
w_J = 1 − e^{ε − Jh}, R the entrywise relative error of the float tilting (products of kᵢ factors within
1 ± relᵢ), E_in the tilted ℓ₁ error the children's own ``err`` carry in, ‖Δc‖₂ the FFT's error in 2-norm,
σ = min(√n, (1 − e^{−2θ})^{−1/2}) its Cauchy–Schwarz weight against e^{−θJ} (n the entries from J₀ on),
and τ_top a Chernoff bound on the tilted mass above the window's top T (as in ``_compose_many``, on the
tilted sides). Mass below the window's bottom B
has loss below ε for every ε ≥ B·h, where it adds nothing to δ(ε); below B·h this bound is not used. The
tilted mass outside the window wraps around the cyclic convolution as extra non-negative mass (only
raising the bound). The product of dominating pairs dominates the composition (Zhu–Dong–Wang 2022, Thm
10), so the bound holds for the mechanisms the sides describe, exactly as the untilted one does.

Exactness: θ (per lattice step) is a dyadic number with few significant bits, so θ·J is exact in double
for every index used; so is every position J·h (:class:`~dpcompose.accounting._pld._Grid`), and ε/h is
read through ``_Grid.steps``, whose floor is exact; Λ is a correctly rounded sum (``math.fsum``) with its
rounding bounded; ``exp`` is assumed within 2**9 units of roundoff (padded as in
:mod:`dpcompose.accounting._pld`).
"""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

import numpy as np
import numpy.typing as npt

from dpcompose._scipy import brentq
from dpcompose.accounting import _common
from dpcompose.accounting import _pld_memory as memory
from dpcompose.accounting._pld import (
    _EXP_REL,
    _U,
    FloatArray,
    _check_window,
    _fourier_power,
    _gamma,
    _Grid,
    _Side,
    _sum_bound,
    _totals,
    _up,
    _window,
    out_of_memory,
)
from dpcompose.accounting._pld import (
    _TINY as _MIN_NORMAL,  # the least normal float
)

if TYPE_CHECKING:
    from dpcompose.accounting._pld import PLD

_R = TypeVar("_R")


class _once(Generic[_R]):
    """``functools.cached_property`` without its lock: computed on first access and kept in the instance's
    ``__dict__``. On Python 3.11 cached_property holds one lock per attribute for *all* instances, so the two
    orders of a subsampled composition, read in two threads, waited for each other on every cached
    attribute of their own recipes and tilted composites (and the one reading the reverse order's children
    held up the other's reading for their whole build). The values here are pure functions of the instance
    (the builds they trigger lock on their own): two threads may both compute one, and the first stored is
    kept."""

    def __init__(self, func: Callable[[Any], _R]) -> None:
        self.func = func
        self.name = func.__name__
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> _once[_R]: ...

    @overload
    def __get__(self, instance: object, owner: type | None = None) -> _R: ...

    def __get__(self, instance: object | None, owner: type | None = None) -> _R | _once[_R]:
        if instance is None:
            return self
        cache = instance.__dict__
        try:
            return cache[self.name]  # type: ignore[no-any-return]
        except KeyError:
            pass
        value = self.func(instance)
        return cache.setdefault(self.name, value)  # type: ignore[no-any-return]


_TILT_TAIL = 1e-13  # tilted mass (of a total ≈ 1) left above the window; it wraps as extra mass, adding at
# most about 1e-13/(the tilted mass near ε) relative to δ
_THETA_BITS = 10  # significant bits of θ: θ·J is then exact for |J| < 2**42
_ERROR_SHARE = 1e-3  # above this share of δ in error terms, the untilted side is tried too
_FINE_SHARE = 1e-9  # ... or this share of a δ above 1e-4
_COARSE = 64  # the model used only to choose θ groups entries d steps from a side's mode d // 64 at a time
_NEAR = 1  # δ(ε) sums the terms with loss below ε + _NEAR one by one, the others from suffix sums
_UNDERFLOW_PAD = 2.0**-1064  # pads every term whose exp may have underflowed (see _Tilted)
_LOG_THETA = (math.log(1e-7), math.log(1e4))  # the range searched for θ in loss units
_T = TypeVar("_T")
_LD_TOL = 1e-10  # an FFT error bound below this share of the tilted total (≈ 1) needs no more long double
# frequencies: relative to δ it is that over the tilted mass near ε (1000 × Laplace(200): 2.6e-11 left by 256
# frequencies took 16 of 30 ms to lower to 2e-13, and moved ε by 3e-11 relative)


@dataclass(frozen=True)
class _Tilted:
    """The tilted composite: ``masses[i]`` ≈ c_J at J = offset + i, with m_J = c_J·e^{Λ − θJ} (module doc).

    ``inf`` bounds the composite's mass at +∞ (from above); ``err`` bounds the tilted ℓ₁ error E_in the
    children carry in (their own ``err``), ``err2`` the 2-norm of the FFT's error ‖Δc‖₂ (Higham 2002, Thm
    24.2; the ℓ₁ bound of ``_compose_many`` is √N times it), and ``rel`` the entrywise relative error of
    the float tilting: the exact composite is at most (c + Δc)(1 + rel) + E_in; ``top_mass`` bounds the
    tilted mass above index ``top_at`` − 1; ``lam_err`` bounds |Λ − fl(Λ)|.

    Underflow: an ``exp`` result in the subnormal range is within 2**9 units of 2**-1074, below 2**-1064 in
    absolute terms (the module's accuracy assumption), so every term that may have underflowed is padded
    by 2**-1064 (found by review: without it, weights that underflowed to 0 gave δ = 0 where it is 1e-385)."""

    theta: float
    offset: int
    masses: FloatArray
    lam: float
    lam_err: float
    inf: float
    err: float
    err2: float
    rel: float
    top_mass: float
    top_at: int
    grid: _Grid
    support_top: int  # the composite's largest finite index: no valid finite mass lies above it

    def _factor_pad(self, arg_abs: float) -> float:
        """Relative error bound of the computed e^{fl(Λ − θJ)} against e^{Λ − θJ} (|Λ − θJ| ≤ arg_abs)."""
        d = self.lam_err + 2 * _U * arg_abs
        return (math.expm1(d) * 1.01 + _EXP_REL) * (1 + 2.0**-20) if d < 1 else math.inf

    def _weight_up(self, j: int) -> float:
        """An upper bound on e^{Λ − θj} (θ·j is rounded here, for j possibly outside the window)."""
        arg = self.lam - self.theta * j
        slack = self.lam_err + 2 * _U * (abs(self.lam) + abs(self.theta * j)) + 1e-300
        if arg + slack > 700:
            return math.inf
        return math.exp(arg + slack) * (1 + _EXP_REL) + _UNDERFLOW_PAD

    def delta_up(self, eps: float) -> float:
        """A certified upper bound on δ(ε) for ε ≥ offset·h, and +∞ below (this bound does not apply)."""
        scaled = self.grid.steps(eps)  # (its floor and comparisons with integers are exact)
        if not math.isfinite(scaled) or scaled < self.offset:
            return math.inf
        j0 = math.floor(scaled) + 1  # the first lattice index J with J·h > ε
        if j0 > self.support_top:  # only the mass at +∞ is above ε
            return _up(self.inf)
        start = j0 - self.offset
        end = self._end
        s = e = 0.0
        pad_f = 0.0
        n_terms = max(0, end - start)
        if start < end:
            if self.lam - self.theta * j0 > 700:  # (the largest factor read)
                return math.inf
            pos, factor, amax = self._factors
            # the near terms (ℓ − ε < 1) one by one; the far ones from suffix sums (:meth:`_far`)
            mid = min(end, start + math.ceil(_NEAR / self.grid.h) + 1) if 0 <= eps < 700 else end
            w = -np.expm1(-(pos[start:mid] - eps))  # pos exact; the subtraction's rounding: relative u (_pld)
            w = np.minimum(w * (1 + _EXP_REL), 1.0)
            t = self.masses[start:mid] * w * factor[start:mid]
            s, e = _sum_bound(t)
            e += 2 * _U * float(np.sum(np.abs(t)))
            if mid < end:
                s_far, e_far = self._far(mid, eps)
                s, e = s + s_far, e + e_far + 2 * _U * (abs(s) + s_far)  # (the sum, rounded)
            pad_f = self._factor_pad(amax)
        body = (s + e) * (1 + pad_f) * (1 + self.rel) + (n_terms + 2) * _UNDERFLOW_PAD
        total = body + self.inf + self.error_terms(eps)
        return _up(total + 4 * _U * total)

    def error_terms(self, eps: float) -> float:
        """The part of :meth:`delta_up` at ε (≥ offset·h) that bounds errors and the mass above the window.

        The FFT's error is weighed by Cauchy–Schwarz against the untilting weights themselves:
        Σ_{J≥J₀} w_J|Δc_J|e^{Λ−θJ} ≤ ‖Δc‖₂·e^{Λ−θJ₀}·(Σ_{i≥0} e^{−2θi})^{1/2}, which is
        ‖Δc‖₂·e^{Λ−θJ₀}/(1 − e^{−2θ})^{1/2}, or with the count n of entries from J₀ on,
        ‖Δc‖₂·e^{Λ−θJ₀}·√n, whichever is smaller."""
        scaled = self.grid.steps(eps)
        j0 = math.floor(scaled) + 1 if math.isfinite(scaled) else self.offset + self.masses.size
        n_above = max(1, self.offset + self.masses.size - j0)
        spread = min(math.sqrt(n_above), 1 / math.sqrt(-math.expm1(-2 * self.theta))) * (1 + 1e-12)
        err = self.err + self.err2 * spread * (1 + self.rel)
        err_term = err * self._weight_up(j0) if err > 0 else 0.0
        top = self.top_mass * (1 + self.rel)
        top_term = top * self._weight_up(max(j0, self.top_at)) if top > 0 else 0.0
        return err_term + top_term

    def guess(self, target: float) -> int:
        """The first lattice index J whose δ(J·h), read (uncertified) from the suffix sums of
        :meth:`_suffix`, is at most ``target``: a bisection, so only to locate the answer, which
        :meth:`delta_up` then certifies. (Entries whose sums overflowed read as above the target.)"""
        s1, s2 = self._suffix
        h = self.grid.h

        def approx(i: int) -> float:  # δ at ε = (offset + i)·h: the terms above i
            if i + 1 >= self._end:
                return self.inf
            eps = (self.offset + i) * h
            far = math.exp(min(eps, 700.0)) * float(s2[i + 1])
            return self.inf + float(s1[i + 1]) - far if math.isfinite(far) else math.inf

        # approx(−1) counts as above the target (below the window), approx(_end) = inf ≤ target is not known
        # (the search in _least_search starts from here and certifies either way)
        return self.offset + _common.bisect(-1, self._end, lambda i: approx(i) <= target)

    @_once
    def _end(self) -> int:
        """One past the last window entry :meth:`delta_up` reads (above the support: wrapped copies only)."""
        return min(self.masses.size, self.support_top - self.offset + 1)

    @_once
    def _suffix(self) -> tuple[FloatArray, FloatArray]:
        """Suffix sums over the read entries i < ``_end`` of Tᵢ = cᵢ·fᵢ and Vᵢ = Tᵢ·e^{−ℓᵢ} (c the masses, f
        the factors e^{fl(Λ − θJ)}, ℓ = J·h); entry i sums i, i + 1, …, ``_end`` − 1 (computed from the top
        down). Entries with ℓ ≤ −700 (e^{−ℓ} may overflow) are never read: :meth:`_far` reads ℓ ≥ 1. Sums
        that overflow are +∞ silently (found by review: the sum's overflow warning escaped the errstate and,
        under ``-W error``, was raised as a raw RuntimeWarning); :meth:`guess` reads them as above the
        target."""
        pos, factor, _ = self._factors
        t = self.masses[: self._end] * factor[: self._end]
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            v = t * np.exp(-pos[: self._end])
            return np.cumsum(t[::-1])[::-1], np.cumsum(v[::-1])[::-1]

    def _far(self, first: int, eps: float) -> tuple[float, float]:
        """``(s, e)``: Σ_{first ≤ i < _end} Tᵢ·(1 − e^{ε−ℓᵢ}) as S₁ − e^ε·S₂ from :meth:`_suffix`, and a
        bound e on its error against the sum of the exact products cᵢfᵢ(1 − e^{ε−ℓᵢ}), for 0 ≤ ε < 700
        and ℓ_first > ε (every term non-negative: c ≥ 0, f > 0).

        The suffix sums are recursive sums of non-negative terms, each within γₙS of the exact one
        (Higham 2002, Lemma 3.1); Tᵢ is within u of cᵢfᵢ and Vᵢ within u + ``_EXP_REL`` of cᵢfᵢe^{−ℓᵢ}
        (exp's accuracy), or below it where it underflowed (which only raises S₁ − e^ε·S₂); e^ε is within
        ``_EXP_REL``; the product and the difference are one rounding each. So |error| ≤ (γₙ + 2u)·S₁ +
        (γₙ + 2·``_EXP_REL`` + 4u)·e^ε·S₂, padded twice over (the subnormal products are covered by
        :meth:`delta_up`'s per-term pad). Where these terms are read (ℓ − ε ≥ 1), e^{ε−ℓ} ≤ 1/e, so the
        difference keeps at least 63 % of S₁: the bound is relative to the result."""
        s1, s2 = self._suffix
        a, b = float(s1[first]), float(s2[first])
        xb = math.exp(eps) * b
        g = _gamma(s1.size + 2)
        err = ((g + 2 * _U) * a + (g + 2 * _EXP_REL + 4 * _U) * xb * (1 + 2 * _EXP_REL)) * 2
        return max(a - xb, 0.0), err

    @_once
    def _factors(self) -> tuple[FloatArray, FloatArray, float]:
        """The lattice positions J·h of the window, e^{fl(Λ − θJ)} there (capped at e^700, where delta_up does
        not read them) and max|Λ − θJ| (for :meth:`_factor_pad`)."""
        idx = np.arange(self.offset, self.offset + self.masses.size, dtype=np.float64)
        arg = self.lam - self.theta * idx  # θ·idx exact (construction); one rounding
        with np.errstate(under="ignore"):
            factor = np.exp(np.minimum(arg, 700.0))
        return idx * self.grid.h, factor, float(np.max(np.abs(arg)))  # (idx·h exact: _Grid)


def _groups(n: int, mode: int) -> npt.NDArray[np.intp]:
    """The first entries of the groups the θ model (``_Recipe._model``) merges a side of ``n`` entries into:
    one entry at a time within ``_COARSE`` of the ``mode``, then groups growing with the distance d from it
    (d // ``_COARSE`` entries), about 2·``_COARSE``·(1 + ln(n/``_COARSE``)) groups in all.

    Why not equal groups: the mass of a subsampled mechanism's step sits on a few entries around the mode
    while its support spans 10⁵ (q = 1e-5); merging those few entries erased the composite's variance, and
    the θ chosen left the answer below the tilted window (error terms 10³⁴ times δ, found measuring)."""
    right = [mode]
    while right[-1] < n:
        d = right[-1] - mode
        right.append(right[-1] + max(1, d // _COARSE))
    left = []
    end = mode  # the group ending just below ``end``
    while end > 0:
        d = mode - end + 1
        end = max(0, end - max(1, d // _COARSE))
        left.append(end)
    return np.array(left[::-1] + right[:-1], dtype=np.intp)


def _dyadic(x: float, bits: int) -> float:
    """x rounded to ``bits`` significant bits (so that products with integers below 2**(53 − bits) are
    exact)."""
    if x <= 0 or not math.isfinite(x):
        return 0.0
    m, e = math.frexp(x)
    return math.ldexp(round(math.ldexp(m, bits)), e - bits)


def _span(items: list[tuple[_Side, int]]) -> tuple[int, int] | None:
    """``(base, full_len)``: the composite's lowest index and support length, or None where an index used
    reaches 2**42 (θ·J is exact only below: see the module docstring)."""
    base = sum(k * sd.offset for sd, k in items)
    full_len = sum(k * (sd.masses.size - 1) for sd, k in items) + 1
    reach = max([abs(base), abs(base + full_len)] + [max(abs(sd.offset), abs(sd.offset + sd.masses.size))
                                                        for sd, _ in items])
    return None if reach >= 2**42 else (base, full_len)


def _tilt(
    items: list[tuple[_Side, int]], theta: float, grid: _Grid, target: float | None = None
) -> _Tilted | None:
    """The tilted composite of ``kᵢ`` copies of each (upper) side at θ per lattice step (module doc), or
    None where tilting does not apply (θ ≤ 0, negative stored masses, no finite mass, or overflow).

    With a ``target`` δ, the window's bottom may be cut far above the Chernoff one, down to 1.5 tilted
    standard deviations below the tilted mean, less the shift of the mean across θ's grid cell (:func:`_fit`):
    every ε read from this composite (whose tilt is θ, :class:`_Recipe`) lies above it, and the tilted mass
    below it wraps to the window's top, where (untilted) it weighs at most e^{−θN} — kept below 1e-12·target
    by the choice of N. (It is extra non-negative mass: it can only raise the bound; where ε lies below the
    window after all, :meth:`_Tilted.delta_up` reads +∞ there, and the untilted side is read.)"""
    if theta <= 0 or not math.isfinite(theta) or _dyadic(theta, _THETA_BITS) != theta:
        return None
    span = _span(items)
    if span is None:
        return None
    base, full_len = span
    inf, err_unt, zero = _totals(items, True)
    if zero:
        return None
    p = _TiltedVectors.of([(sd.masses, sd.offset, sd.err, k) for sd, k in items], theta)
    if p is None:
        return None
    tilted = [(_Side(off, xt, 0.0, 0.0), k) for xt, off, k in p.vectors]
    b_lo, b_hi, top_b, _ = _window(tilted, base, full_len, _TILT_TAIL * math.exp(p.log_n))
    if b_lo > b_hi:
        return None
    b_lo, b_hi, size, top_b = _fit(b_lo, b_hi, top_b, base, full_len, theta, p.mean, p.var, target)
    _check_window(size, grid.bits, len(items))
    c, fft2 = _compose_tilted(p, base, b_lo, size)
    inf_up = _up(inf + err_unt)
    err_in = _up(p.err_in)
    top = base + full_len - 1
    return _Tilted(
        theta, b_lo, c, p.lam, p.lam_err, inf_up, err_in, fft2, p.rel_r, top_b, b_hi + 1, grid, top
    )


@dataclass
class _TiltedVectors:
    """Children's vectors tilted by e^{θj}: ``vectors`` (tilted, offset, count), Λ = Σkᵢ·log Sᵢ (``lam``,
    rounded once, within ``lam_err``), the ℓ₁ bound ``err_in`` between the composites of the valid and of
    the exactly tilted stored vectors (Young, telescoping; each child's own ℓ₁ ``err`` is weighed at its
    top index), the entrywise relative bound ``rel_r`` (the exact composite of the exactly tilted vectors is
    at most (1 + rel_r) times, and at least 1/(1 + rel_r) times, that of the float ones), log Π‖x̃ᵢ‖₁^{kᵢ}
    (``log_n``) and the tilted composite's mean and variance in lattice steps."""

    vectors: list[tuple[FloatArray, int, int]]
    lam: float
    lam_err: float
    err_in: float
    rel_r: float
    log_n: float
    mean: float
    var: float

    @staticmethod
    def of(parts: list[tuple[FloatArray, int, float, int]], theta: float) -> _TiltedVectors | None:
        """Tilt each (masses, offset, err, count); None where a vector is negative, empty or overflows."""
        vectors: list[tuple[FloatArray, int, int]] = []
        lam_terms: list[float] = []
        log_n = log_ne = log_rel = 0.0
        t_mean = t_var = 0.0
        for m, offset, err, k in parts:
            if np.any(m < 0):
                return None
            pos = np.flatnonzero(m > 0)
            if pos.size == 0:
                return None
            j = (pos + offset).astype(np.float64)
            a = theta * j  # exact
            v = np.log(m[pos]) + a
            mx = float(np.max(v))
            lse = mx + math.log(float(np.sum(np.exp(v - mx))))  # any float: it is only a scale
            arg = a - lse  # one rounding: |Δ| ≤ u·|arg|
            xt = np.zeros(m.size)
            xt[pos] = m[pos] * np.exp(arg)
            amax = float(np.max(np.abs(arg)))
            if amax * _U > 1e-6:
                return None
            # every float tilted entry is within a relative ``rel`` of the exact one (exponent's rounding,
            # exp, the product), except results in the subnormal range, which are within 2**-1064 absolutely
            rel = (2 * _U * amax + _EXP_REL + 2 * _U) * (1 + 2.0**-20)
            n1 = float(np.sum(xt)) * (1 + _gamma(m.size + 1)) * (1 + rel)  # ≥ the exact tilted ℓ₁ norm
            if not (n1 > 0 and math.isfinite(n1)):
                return None
            e_t = pos.size * _UNDERFLOW_PAD * (1 + rel)  # (entries whose exp underflowed: absolutely)
            # The stored vector is within err (ℓ₁) of a valid one on the same index range: a valid vector's
            # finite mass outside the range can be moved up to the range's lowest point or to +∞, which only
            # raises δ (upper side) and does not increase the ℓ₁ distance (the stored entries are 0 there).
            if err > 0:
                top_arg = theta * (offset + m.size - 1) - lse
                if top_arg > 700:
                    return None
                e_t += err * math.exp(top_arg + 2 * _U * (abs(top_arg) + abs(lse)) + 1e-300) * (1 + _EXP_REL)
            vectors.append((xt, offset, k))
            mu = float(np.sum(xt[pos] * j)) / float(np.sum(xt[pos]))
            t_mean += k * mu
            t_var += k * float(np.sum(xt[pos] * (j - mu) ** 2)) / float(np.sum(xt[pos]))
            lam_terms.append(k * lse)
            log_n += k * math.log(n1)
            log_ne += k * math.log1p(e_t / n1)
            log_rel += k * math.log1p(rel)
        lam = math.fsum(lam_terms)  # the exact sum of the rounded products, rounded once
        lam_err = (sum(abs(t) for t in lam_terms) + abs(lam)) * _U * 1.01
        if log_n > 700 or log_ne > 700:  # (found by review: expm1 overflowed for a child's large err)
            return None
        err_in = math.exp(log_n) * math.expm1(log_ne) * (1 + 1e-12)
        if not math.isfinite(err_in):
            return None
        # entrywise: products of k non-negative factors each within 1 ± relᵢ, R = Π(1 + relᵢ)^{kᵢ} − 1
        big_r = math.expm1(log_rel) * (1 + 1e-9)
        if big_r >= 0.5:
            return None
        rel_r = big_r / (1 - big_r) * (1 + 1e-9)
        return _TiltedVectors(vectors, lam, lam_err, err_in, rel_r, log_n, t_mean, t_var)


def _fit(
    b_lo: int, b_hi: int, top_b: float, base: int, full_len: int, theta: float, mean: float, var: float,
    target: float | None,
) -> tuple[int, int, int, float]:
    """``(b_lo, b_hi, size, top_b)``: the FFT size for the window, with the bottom cut up to 1.5 tilted
    standard deviations below the tilted mean where e^{−θ·size} < 1e-12·target (see :func:`_tilt`), or
    0.1·θ·var + 0.5 standard deviations where that is more: the ε whose tilt is θ (:func:`_on_grid`, a cell
    of ratio 2**(1/4) around θ) lie near the means of tilts down to θ·2**(−1/8), about (1 − 2**(−1/8))·θ·var
    ≤ 0.09·θ·var below this one's. (Only the time depends on it: where ε lies below the window, the
    untilted side is read.)"""
    size = 1 << max(1, (b_hi - b_lo).bit_length())
    if target is not None and target > 0:
        sd = math.sqrt(var)
        need = b_hi - math.floor(mean - max(1.5 * sd, 0.1 * theta * var + 0.5 * sd)) + 1
        short = 1 << max(1, (need - 1).bit_length())
        while short < size and theta * short < math.log(1e12 / target):
            short *= 2
        if short < size:
            b_lo, size = b_hi - short + 1, short
    if size >= full_len:  # the whole support fits: nothing wraps, nothing is above the window
        b_lo, b_hi, top_b = base, base + full_len - 1, 0.0
    return b_lo, b_hi, size, top_b


def _compose_tilted(p: _TiltedVectors, base: int, b_lo: int, size: int) -> tuple[FloatArray, float]:
    """The tilted composite on [b_lo, b_lo + size) (clipped at 0: the exact values are ≥ 0, so clipping only
    helps) and a bound on the 2-norm of its float error (``_fourier_power``'s bound is √size times it)."""
    c, fft_err = _fourier_power([(xt, k) for xt, _, k in p.vectors], size, _LD_TOL)
    with memory.refuse_out_of_memory(*out_of_memory(size, len(p.vectors))):  # (found by review: bare here)
        c = np.roll(c, (base - b_lo) % size)
        np.maximum(c, 0.0, out=c)
    return c, _up(fft_err / math.sqrt(size) * (1 + 1e-12))


_CACHE_BYTES = 256 << 20  # tilted composites kept in this process (the newest one always stays)


class _Held:
    """Every cached tilted composite of every live recipe, least recently used first, under one lock: the
    budget is process-wide (found by review: per composition, the 256 PLDs the measurements' cache keeps
    held 2.5 GB after four 10⁴-step accountings, and later maps ran out of memory). Recipes are referenced
    weakly: a recipe that is gone takes its composites with it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.order: dict[tuple[int, bool, tuple[float, float | None]], weakref.ref[_Recipe]] = {}

    def used(self, recipe: _Recipe, lower: bool, key: tuple[float, float | None]) -> None:
        with self.lock:
            ref = self.order.pop((id(recipe), lower, key), None)
            if ref is not None and ref() is recipe:
                self.order[(id(recipe), lower, key)] = ref

    def kept(self, recipe: _Recipe, lower: bool, key: tuple[float, float | None]) -> None:
        """Count a composite just cached; then evict the least recently used ones (of any recipe) while all
        of them hold more than ``_CACHE_BYTES`` (never the one just cached)."""
        with self.lock:
            self.order.pop((id(recipe), lower, key), None)  # (the id of a recipe gone may be reused)
            self.order[(id(recipe), lower, key)] = weakref.ref(recipe)
            held = 0
            for entry, ref in list(self.order.items()):  # counted afresh: composites grow when read
                t = _cached(ref(), entry[1], entry[2])
                if t is None:
                    del self.order[entry]  # (its recipe is gone)
                else:
                    held += _nbytes(t)
            while held > _CACHE_BYTES and len(self.order) > 1:
                entry, ref = next(iter(self.order.items()))
                del self.order[entry]
                r = ref()
                if r is not None:
                    held -= _nbytes((r.lower_cache if entry[1] else r.cache).pop(entry[2], None))

    def total(self) -> int:
        """The bytes of the arrays every cached composite holds."""
        with self.lock:
            return sum(_nbytes(_cached(ref(), entry[1], entry[2])) for entry, ref in self.order.items())


def _cached(recipe: _Recipe | None, lower: bool, key: tuple[float, float | None]) -> object:
    """The composite a recipe caches under ``key`` (None if the recipe or the entry is gone)."""
    if recipe is None:
        return None
    return (recipe.lower_cache if lower else recipe.cache).get(key)


_HELD = _Held()


def _nbytes(t: object) -> int:
    """The bytes of the arrays a cached composite holds, with those its cached properties built since (0 for
    None)."""
    if t is None:
        return 0
    total = 0
    for v in list(vars(t).values()):  # (a copy: another thread may cache a property meanwhile: review)
        for a in v if isinstance(v, tuple) else (v,):
            if isinstance(a, np.ndarray):
                total += a.nbytes
    return total


@dataclass
class _Recipe:
    """What a long composition was built from (the children's upper sides and counts), so that δ(ε) and
    ε(δ) can be read from a composite tilted for the question asked.

    Every reading is a function of the composition and the question alone, never of what was read before or
    in another thread. δ(ε) reads the composite of ε's tilt (:meth:`theta_for_epsilon`: the θ that centres
    the composite at ε, rounded to a grid of ratio 2**(1/4)); ε(δ) searches the composite of a grid θ next
    to the saddle point for δ (:meth:`theta_for_delta`; and of the θ of its answer, where that differs),
    and answers the least point found whose δ, read as :meth:`PLD.delta` reads it, is at most δ: so
    δ(ε(δ)) ≤ δ by construction.
    A composite is keyed by θ alone (its window is cut for the δ the model expects at θ,
    :meth:`expected_delta`), cached under one process-wide budget (:class:`_Held`, ``_CACHE_BYTES``: a
    composite of a long composition takes tens of megabytes), built once when several threads ask for it
    at once, and rebuilt identically after eviction."""

    get_items: Callable[[], list[tuple[_Side, int]]]
    grid: _Grid
    get_lower: Callable[[], list[tuple[_Side, int]]]
    cache: dict[tuple[float, float | None], _Tilted | None] = field(default_factory=dict)
    lower_cache: dict[tuple[float, float | None], _TiltedLower | None] = field(default_factory=dict)
    screen: list[PLD | None] = field(default_factory=list)  # [the screening twin, or None] once made
    building: dict[tuple[bool, tuple[float, float | None]], threading.Event] = field(default_factory=dict)
    """The composites being built, each by one thread (the others wait for it)."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    tilts: dict[float, float] = field(default_factory=dict)  # ε → :meth:`theta_for_epsilon` (a memo)

    def cached_bytes(self) -> int:
        """The bytes of the arrays this recipe's caches hold."""
        caches = (self.cache, self.lower_cache)
        return sum(_nbytes(t) for c in caches for t in list(c.values()))

    def _lookup(
        self,
        cache: dict[tuple[float, float | None], _T | None],
        lower: bool,
        key: tuple[float, float | None],
        build: Callable[[], _T | None],
    ) -> _T | None:
        """``cache[key]`` (marked most recently used), or built, cached and counted against the process-wide
        budget (:class:`_Held`; a None, which marks a θ where tilting does not apply, holds nothing). A
        composite another thread is building is waited for, not built twice (the value is the same)."""
        while True:
            try:  # (one lookup: another thread may evict it meanwhile)
                hit = cache[key]
            except KeyError:
                pass
            else:
                _HELD.used(self, lower, key)
                return hit
            with self.lock:
                if key in cache:
                    continue
                running = self.building.get((lower, key))
                if running is None:
                    mine = self.building[(lower, key)] = threading.Event()
            if running is not None:
                running.wait()  # (then read it; if that build failed or it was evicted, build it here)
                continue
            try:
                t = cache[key] = build()
            finally:
                with self.lock:
                    del self.building[(lower, key)]
                mine.set()
            if t is not None:
                _HELD.kept(self, lower, key)
            return t

    @_once
    def items(self) -> list[tuple[_Side, int]]:
        """The children's upper sides and counts (built on first use)."""
        return self.get_items()

    @_once
    def lower_items(self) -> list[tuple[_Side, int]]:
        """The children's lower sides and counts (built on first use)."""
        return self.get_lower()

    @_once
    def upper_totals(self) -> tuple[float, float, bool]:
        """``_totals`` of the upper sides: the composite's mass at +∞, the carried error, no finite mass."""
        return _totals(self.items, True)

    @_once
    def _model(self) -> list[tuple[FloatArray, FloatArray, int]]:
        """Each side grouped (mass, mean index) by :func:`_groups`: only for choosing θ."""
        out = []
        for sd, k in self.items:
            m = np.maximum(sd.masses, 0.0)
            if not np.any(m > 0):
                continue
            starts = _groups(m.size, int(np.argmax(m)))
            w = np.add.reduceat(m, starts)
            idx = np.arange(m.size, dtype=np.float64) + sd.offset
            keep = w > 0
            p = np.add.reduceat(m * idx, starts)[keep] / w[keep]
            out.append((p, w[keep], k))
        return out

    def _cumulants(self, theta: float) -> tuple[float, float, float]:
        """K(θ), K'(θ), K''(θ) of the composite's finite masses (θ per lattice step; the model's)."""
        big_k = k1 = k2 = 0.0
        for p, w, k in self._model:
            v = np.log(w) + theta * p
            mx = float(np.max(v))
            ex = np.exp(v - mx)
            s = float(np.sum(ex))
            mean = float(np.sum(ex * p)) / s
            var = float(np.sum(ex * (p - mean) ** 2)) / s
            big_k += k * (mx + math.log(s))
            k1 += k * mean
            k2 += k * var
        return big_k, k1, k2

    def _root(self, f: Callable[[float], float]) -> float:
        """The θ (per lattice step) where the decreasing f(θ) crosses 0 on the searched range (an end if
        it does not): Brent's method on log θ, to 1e-10 (θ is then rounded to ``_THETA_BITS`` bits)."""
        h = self.grid.h
        lo, hi = _LOG_THETA
        if f(math.exp(lo) * h) <= 0:
            return math.exp(lo) * h
        if f(math.exp(hi) * h) >= 0:
            return math.exp(hi) * h
        return math.exp(float(brentq(lambda x: f(math.exp(x) * h), lo, hi, xtol=1e-10))) * h

    def theta_for_delta(self, target: float, inf: float) -> float:
        """A grid θ (:func:`_grid_tilt`) next to the saddle-point θ for ε(target): log δ ≈ K − θK' −
        log(σ√(2π)·θ(1 + θ)) (θ and σ in loss units), the Gaussian approximation of the tilted composite at
        its mean (Alghamdi et al. 2023); capped at the Chernoff θ, which centres the tilted composite at the
        Chernoff estimate min_θ (K(θ) − log δ)/θ ≥ ε(δ) (the Gaussian approximation fails for few atom-heavy
        mechanisms)."""
        h = self.grid.h
        goal = math.log(max(target - inf, target * 1e-3, 1e-300))

        def f(theta: float) -> float:
            big_k, k1, k2 = self._cumulants(theta)
            t = theta / h
            sigma = math.sqrt(max(k2, 1.0)) * h  # (a lattice's density is at most 1/h)
            return big_k - theta * k1 - math.log(sigma * math.sqrt(2 * math.pi) * t * (1 + t)) - goal

        def slope(theta: float) -> float:  # −θ²·(d/dθ)(K(θ) − log δ)/θ, falling with θ (derivative −θK'')
            big_k, k1, _ = self._cumulants(theta)
            return big_k - goal - theta * k1

        # the Chernoff exponent (K(θ) − log δ)/θ is least where its derivative crosses 0
        raw = min(self._root(f), self._root(slope))
        # of the two grid tilts around it, the one whose mean is nearer the saddle point's (where the mean
        # leaps with θ, as a rare large loss takes over, the nearer tilt in θ may centre far from the answer:
        # 10⁵ steps at q = 1e-4, δ = 1e-6, the grid tilt above the saddle point centres at ε = 95, the one
        # below at 0.04, the answer at 0.25)
        k = math.floor(4 * math.log2(raw))
        below, above = _grid_tilt(k), _grid_tilt(k + 1)
        mean = self._cumulants(raw)[1]
        near_below = mean - self._cumulants(below)[1] <= self._cumulants(above)[1] - mean
        return below if near_below else above

    def theta_for_epsilon(self, eps: float) -> float:
        """ε's tilt: the grid θ (:func:`_on_grid`) nearest the one that centres the tilted composite at ε
        (K'(θ) = ε/h), or 0 if ε is at or below its mean. δ(ε) read at many ε (a plot) shares a few
        composites."""
        theta = self.tilts.get(eps)
        if theta is None:
            scaled = self.grid.steps(eps)  # (only chooses θ)
            if self._cumulants(0.0)[1] >= scaled:
                theta = 0.0
            else:
                theta = _on_grid(self._root(lambda th: scaled - self._cumulants(th)[1]))
            if len(self.tilts) >= 1024:  # (a function of ε: kept only to spare the root search)
                self.tilts.clear()
            self.tilts[eps] = theta
        return theta

    def expected_delta(self, theta: float) -> float:
        """The least δ the model expects to be read from the composite tilted by θ: at the mean of the tilt
        θ·2**(1/8) (the top of θ's grid cell, :func:`_on_grid`), the saddle-point value e^{K − θK'}/(σ√(2π)·
        t(1 + t)) that :meth:`theta_for_delta` solves for, or the Chernoff value e^{K − θK'} where that is
        smaller (where it caps θ). It only cuts the composite's window (:func:`_fit`), which makes the window
        a function of θ alone."""
        h = self.grid.h
        theta *= 2.0**0.125
        big_k, k1, k2 = self._cumulants(theta)
        t = theta / h
        sigma = math.sqrt(max(k2, 1.0)) * h
        chernoff = big_k - theta * k1
        saddle = chernoff - math.log(sigma * math.sqrt(2 * math.pi) * t * (1 + t))
        return math.exp(min(max(min(chernoff, saddle), -745.0), 0.0))

    def tilted(self, theta: float) -> _Tilted | None:
        """The tilted composite at θ (window cut for :meth:`expected_delta`: see :func:`_tilt`), cached under
        (θ, that δ)."""
        target = self.expected_delta(theta)
        build = partial(_tilt, self.items, theta, self.grid, target)
        return self._lookup(self.cache, False, (theta, target), build)

    def tilted_lower(self, theta: float) -> _TiltedLower | None:
        """The tilted lumped pair at θ (window cut as :meth:`tilted`'s), cached."""
        target = self.expected_delta(theta)
        build = partial(_tilt_lower, self.lower_items, theta, self.grid, target)
        return self._lookup(self.lower_cache, True, (theta, target), build)

    def poor(self, t: _Tilted, eps: float, value: float) -> bool:
        """Whether the untilted side is read beside the tilted composite ``t``, whose certified δ at ε is
        ``value``: where ε lies within a step of the window's bottom (the least ε(δ) may lie below it, where
        ``t`` does not apply), where its error terms exceed ``_ERROR_SHARE`` of δ, or ``_FINE_SHARE`` of a δ
        above 1e-4 (the untilted side's absolute error is negligible there, and it is cheap to compare)."""
        share = t.error_terms(eps) / value if value > 0 else 0.0
        at_bottom = eps <= (t.offset + 1) * self.grid.h
        return at_bottom or share > _ERROR_SHARE or (share > _FINE_SHARE and value > 1e-4)

    def delta_up(self, eps: float) -> tuple[float, bool] | None:
        """``(δ, poor)``: the certified δ(ε) of the composite of ε's tilt (:meth:`theta_for_epsilon`) and
        whether the untilted side should be read too (:meth:`poor`); None where no tilted bound applies (ε
        at or below the composite's mean, or tilting does not apply there)."""
        top = sum(k * (sd.offset + sd.masses.size - 1) for sd, k in self.items)  # the largest finite index
        if eps >= top * self.grid.h:  # only the mass at +∞ is above ε (nothing to compose; exact: _Grid)
            inf, err_unt, _ = self.upper_totals
            return _up(inf + err_unt), False
        theta = self.theta_for_epsilon(eps)
        t = self.tilted(theta) if theta > 0 else None
        value = t.delta_up(eps) if t is not None else math.inf
        if t is None or not math.isfinite(value):
            return None
        return value, self.poor(t, eps, value)

    def least_up(self, pld: PLD, target: float, certified: Callable[[float], float]) -> float | None:
        """The least float ε found whose δ as :meth:`PLD.delta` reads it (``certified``) is at most
        ``target``; None where no finite ε is certified.

        Candidates: the least ε certified by the composite at a grid θ next to the saddle point for
        ``target`` (:meth:`theta_for_delta`), then by that of its answer's own tilt where it differs (at most
        three composites: atom-heavy compositions, whose answer lies between atoms far from the saddle
        point), and by the untilted side where a tilted answer is poor (:meth:`poor`) or none is confirmed.
        The least candidate that ``certified`` confirms is returned (an answer found on the composite of
        its own tilt always is: ``certified`` reads that composite there); where none is, the answer is
        searched upward from the largest (:func:`_raise_until`)."""
        h = self.grid.h
        found: list[float] = []
        confirmed: set[float] = set()  # answers found on the composite of their own tilt
        tried: list[float] = []
        plain: list[float | None] = []  # the untilted side's answer, once read

        def read_plain() -> None:
            if not plain:
                plain.append(pld._least_up(target))
                if plain[0] is not None:
                    found.append(plain[0])

        theta = self.theta_for_delta(target, self.upper_totals[0])
        while theta > 0 and theta not in tried and len(tried) < 3:
            tried.append(theta)
            t = self.tilted(theta)
            e = self._least_tilted(pld, t, target) if t is not None else None
            if t is None or e is None:
                break
            found.append(e)
            value = t.delta_up(e)
            if self.poor(t, e, value):
                read_plain()
            theta, own = self.theta_for_epsilon(e), theta
            if theta == own:  # (δ read at e reads this composite, certified at most the target: confirmed)
                confirmed.add(e)
        checked: set[float] = set()
        for _ in range(2):  # (the second round with the untilted answer, if it was not read)
            for e in sorted(set(found) - checked):
                checked.add(e)
                if e in confirmed or certified(e) <= target:
                    return e
            read_plain()
        if not found:
            return None
        top = sum(k * (sd.offset + sd.masses.size - 1) for sd, k in self.items) * h
        return _raise_until(certified, max(found), target, top)

    def _least_tilted(self, pld: PLD, t: _Tilted, target: float) -> float | None:
        """The least float ε whose δ certified by ``t`` is at most ``target`` (None if none is)."""
        e = pld._least_search(target, t.delta_up, t.offset + t.masses.size, partial(t.guess, target))
        top = t.support_top * self.grid.h  # the largest finite loss (exact: _Grid)
        if e is None and t.delta_up(top) <= target:
            e = top  # (δ is only the mass at +∞ there: e.g. δ = 0 without any)
        return e

    def lumped_epsilon(
        self, target: float, stop: float, plain: Callable[[], float | None],
        certifies: Callable[[float], bool],
    ) -> float:
        """The greatest float ε ≤ ``stop`` found whose lower δ as :meth:`PLD.delta_bounds` reads it exceeds
        ``target`` (``certifies``), or 0: the lower end of ε(δ), so that δ's lower end at it stays above δ.

        Candidates, as in :meth:`least_up`: the answers of the tilted lumped pairs at the saddle point's grid
        θ and at their answers' own tilts (:meth:`_lumped_search`), and the untilted lower side's
        (``plain``) where the tilted answer is far below ``stop`` (the upper end) or none is confirmed; the
        greatest confirmed one, else the answer is searched downward from the least (:func:`_lower_until`)."""
        found: list[float] = []
        confirmed: set[float] = set()  # answers found on the composite of their own tilt
        tried: list[float] = []
        theta = self.theta_for_delta(target, self.upper_totals[0])
        while theta > 0 and theta not in tried and len(tried) < 3:
            tried.append(theta)
            t = self.tilted_lower(theta)
            y = self._lumped_search(t, target, stop) if t is not None else None
            if y is None:
                break
            found.append(y)
            theta, own = self.theta_for_epsilon(y), theta
            if theta == own:  # (δ's lower end at y reads this composite, certified above the target)
                confirmed.add(y)
        plain_read = False

        def read_plain() -> None:
            nonlocal plain_read
            if not plain_read:
                plain_read = True
                y = plain()
                if y is not None:
                    found.append(y)

        if not found or max(found) < stop * (1 - _ERROR_SHARE):
            read_plain()
        checked: set[float] = set()
        for _ in range(2):  # (the second round with the untilted answer, if it was not read)
            for y in sorted(set(found) - checked, reverse=True):
                checked.add(y)
                if y in confirmed or certifies(y):
                    return y
            read_plain()
        return _lower_until(certifies, min(found)) if found else 0.0

    def _lumped_search(self, t: _TiltedLower, target: float, stop: float) -> float | None:
        """The greatest float ε ≤ ``stop`` found whose lower δ certified by ``t`` exceeds ``target``, or None:
        searched down from ``stop`` (the upper end, which the answer is close to) by secant steps, or by
        growing steps and bisection (to ~1e-12 relative) if those find none."""
        # secant steps toward δ_lo = target·(1 + 1e-9) (δ_lo is smooth and falls with ε), keeping the
        # greatest point certified above the target; growing steps and bisection if they find none
        f0 = t.delta_lo(stop) - target
        if f0 > 0:
            return stop
        x0, x1 = stop, stop - max(stop, 1.0) * 1e-8
        f1 = t.delta_lo(x1) - target
        best = x1 if f1 > 0 else None
        misses = [stop] if f1 > 0 else [stop, x1]  # points whose certified lower δ is not above the target
        aim = target * 1e-9
        converged = False
        for _ in range(12):
            if best is not None and 0 < f1 <= 100 * aim:
                converged = True
                break
            if f1 == f0:
                break
            x2 = min(max(x1 + (aim - f1) * (x1 - x0) / (f1 - f0), 0.0), stop)
            f2 = t.delta_lo(x2) - target
            if f2 > 0 and (best is None or x2 > best):
                best = x2
            elif f2 <= 0:
                misses.append(x2)
            x0, f0, x1, f1 = x1, f1, x2, f2

        def refine(ok: float, bad: float) -> float:
            """Bisect between a point certified above the target and a greater one not (~1e-12 relative)."""
            while bad - ok > max(ok, 1.0) * 1e-12:
                mid = (ok + bad) / 2
                if t.delta_lo(mid) > target:
                    ok = mid
                else:
                    bad = mid
            return ok

        if best is not None:
            # (found by review: a secant step clamped at 0 certified there, then the steps oscillated, and 0
            # was returned where the answer is 0.02675) without convergence, bisect between the best point
            # and the least failed point above it
            return best if converged else refine(best, min(x for x in misses if x > best))
        x = stop
        failed, step = x, max(stop, 1.0) * 1e-10
        while True:
            x = max(0.0, stop - step)
            if t.delta_lo(x) > target:
                break
            if x == 0.0:
                return None
            failed, step = x, step * 8
        return refine(x, failed)

    def delta_lo(self, eps: float) -> float | None:
        """The certified lower δ(ε) of the tilted lumped pair of ε's tilt (:meth:`theta_for_epsilon`), or None
        where none applies."""
        theta = self.theta_for_epsilon(eps)
        t = self.tilted_lower(theta) if theta > 0 else None
        return None if t is None else t.delta_lo(eps)


def _on_grid(theta: float) -> float:
    """θ rounded to the nearest power of 2**(1/4), then to ``_THETA_BITS`` significant bits (0 for θ ≤ 0):
    the tilts the readings use, shared by δ(ε) and ε(δ) (:class:`_Recipe`)."""
    if not theta > 0:
        return 0.0
    return _grid_tilt(round(4 * math.log2(theta)))


def _grid_tilt(k: int) -> float:
    """The grid tilt 2**(k/4), rounded to ``_THETA_BITS`` significant bits."""
    return _dyadic(2.0 ** (k / 4), _THETA_BITS)


def _raise_until(
    certified: Callable[[float], float], start: float, target: float, top: float
) -> float | None:
    """The least float ε found at or above ``start`` with ``certified(ε)`` ≤ ``target`` (growing steps, then
    bisection to ~1e-12 relative; ``certified`` need not fall monotonically: every answer is checked), or
    None where even ``top`` (the largest finite loss, above which δ is only the mass at +∞) is not."""
    if certified(start) <= target:
        return start
    if certified(top) > target:
        return None
    lo, step = start, max(abs(start), 1.0) * 2.0**-40
    x = start
    while x < top:
        x = min(x + step, top)
        if certified(x) <= target:
            break
        lo, step = x, step * 4
    hi = x
    while hi - lo > max(abs(lo), 1.0) * 1e-12:
        mid = (lo + hi) / 2
        if certified(mid) <= target:
            hi = mid
        else:
            lo = mid
    return hi


def _lower_until(certifies: Callable[[float], bool], start: float) -> float:
    """The greatest float ε found in [0, ``start``] that ``certifies`` (growing steps down, then bisection to
    ~1e-12 relative), or 0 (ε ≥ 0 is always a valid lower end)."""
    if start <= 0:
        return 0.0
    failed, step = start, max(start, 1.0) * 2.0**-40
    x = start
    while True:
        if certifies(x):
            break
        if x == 0.0:
            return 0.0
        failed, x, step = x, max(0.0, x - step), step * 4
    while failed - x > max(x, 1.0) * 1e-12:
        mid = (x + failed) / 2
        if certifies(mid):
            x = mid
        else:
            failed = mid
    return x


# ---------------------------------------------------------------------------------------------------------
# The lower side (the lumped pair), tilted
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _TiltedLower:
    """The lumped pair's composite (``PLD._delta_lumped``) tilted: P(s) ≈ p_J·e^{Λ_P − θJ} and
    N(s) = e^{s}Q(s) ≈ n_J·e^{Λ_N − θJ} at the label s = J·h.

    δ(ε) ≥ Σ_{J≥Jᵢ}(P(J) − e^{ε−Jh}N(J))₊ for any start Jᵢ (a restriction of the lumped pair to fewer
    outcomes, as in ``PLD._delta_lumped``); with P ≥ p/(1 + rel) − |Δp|, N ≤ (n + |Δn|)(1 + rel) and
    (·)₊ 1-Lipschitz, the errors cost at most Σ_{J≥Jᵢ} e^{Λ_P−θJ}|Δp_J| + Σ_{J≥Jᵢ} e^{Λ_N−θJ+ε−Jh}|Δn_J|
    (Δ: the FFT's error, in 2-norm, and the ℓ₁ error E_in of each side's children, ``err_p`` / ``err_n``),
    bounded as on the upper side (ℓ₁ parts at the largest weight, the FFT's 2-norm by Cauchy–Schwarz
    against the weights). The tilted P mass outside a Chernoff window wraps into it (an error, counted in
    ``err_p`` at the largest weight); below a bottom cut higher, it lands at the top with untilted weight
    e^{−θN} (``wrap``); N's wrapped mass only raises N (safe). Arrays start at label ``start_j`` (below it
    the factors could overflow; those labels are dropped, which is again a restriction)."""

    theta: float
    offset: int
    size: int
    start_j: int
    pos: FloatArray  # J·h (exact)
    p_lo: FloatArray  # untilted lower bounds on P(J) (0 where the factor underflows)
    wp: FloatArray  # upper bounds on e^{Λ_P − θJ} (at least 1e-300)
    cn: FloatArray  # the tilted N composite (float)
    arg_n0: FloatArray  # fl(Λ_N − θJ)
    lam_err_n: float
    amax_n0: float  # max |arg_n0|
    rel_n: float
    err_p: float
    err_p2: float
    err_n: float
    err_n2: float
    wrap: float
    inf: float
    grid: _Grid
    reach: FloatArray  # the untilted P mass from each label on (float: only chooses which labels to sum)
    drift: float  # g = ln(ΣN/ΣP) of the composite (uncertified: only chooses the first label summed)

    def delta_lo(self, eps: float) -> float:
        """A certified lower bound on δ(ε) (0 where nothing is certified)."""
        if not (eps >= 0 and math.isfinite(eps)):
            return 0.0
        # labels s ≥ ε + min(g, 0) − 2: where the terms turn positive (labels drift from the merged losses
        # by g, as in PLD._lumped_start; found by review: without g the positive terms could be skipped)
        first = self.grid.steps(eps + min(self.drift, 0.0) - 2.0)  # (any first label gives a valid bound)
        n = self.p_lo.size
        i0 = max(0, math.ceil(first) - self.start_j) if math.isfinite(first) else n  # (∞: no label above ε)
        floor_only = max(0.0, math.nextafter(self.inf - self.wrap, -math.inf))
        if i0 >= n:
            return floor_only
        # Labels whose P mass from there on is below 1e-16 of that above a reference label are not summed
        # (dropping labels restricts the lumped pair: the bound stays valid). The reference is first the
        # label ε + min(g, 0): the mass above it is about P(L > ε) ≥ δ(ε), since labels sit near the merged
        # losses plus g. Where the mass left out is not negligible against the value found (a δ far below
        # P(L > ε): found by review, 1.7e-39 read as 0), the labels up to the cut for the label ε itself
        # are summed too, as before; that cut is far longer where g ≪ 0 (866k labels against 120k at
        # q = 1e-5, 10⁶ steps, g = −46).
        def cut(e: float) -> int:
            ref = min(n - 1, max(i0, math.floor(self.grid.steps(e)) + 1 - self.start_j))
            return min(n, ref + int(np.searchsorted(-self.reach[ref:], -1e-16 * float(self.reach[ref]))) + 1)

        short = cut(eps + min(self.drift, 0.0))
        value = self._delta_lo_upto(eps, i0, short, floor_only)
        left = float(self.reach[short]) if short < n else 0.0  # (an estimate: it only chooses)
        if left > 1e-12 * value:
            full = cut(eps)
            if full > short:
                value = max(value, self._delta_lo_upto(eps, i0, full, floor_only))
        return value

    def _delta_lo_upto(self, eps: float, i0: int, n: int, floor_only: float) -> float:
        """:meth:`delta_lo` summed over the labels from index ``i0`` up to ``n`` (excluded) only."""
        x = self.arg_n0[i0:n] + (eps - self.pos[i0:n])
        # x falls with the label: the labels where e^x may overflow come first, and dropping them is again
        # a restriction
        big = np.flatnonzero(x > 700)
        if big.size:
            if int(big[-1]) + 1 >= n - i0:
                return floor_only
            i0 += int(big[-1]) + 1
            x = x[int(big[-1]) + 1 :]
        far = max(abs(float(self.pos[0])), abs(float(self.pos[-1])))
        slack = self.lam_err_n + 4 * _U * (self.amax_n0 + abs(eps) + far + 4)
        pad_n = math.expm1(slack) * 1.01 + _EXP_REL
        with np.errstate(under="ignore"):
            fn = np.maximum(np.exp(x) * (1 + pad_n), 1e-300)  # ≥ e^{Λ_N − θJ + ε − Jh}
        wn_eps = self.cn[i0:n] * fn * ((1 + 2 * _U) * (1 + self.rel_n))
        p = self.p_lo[i0:n]
        t = np.maximum(p - wn_eps - 4 * _U * (p + wn_eps), 0.0)
        _, e_sum = _sum_bound(t)
        # products in the subnormal range lose their relative accuracy: at most 2**-1074 each, absolutely
        # (p_lo holds no subnormal entries: they are set to 0 at construction)
        e_sum += 2 * (n - i0) * 2.0**-1074
        suffix = np.cumsum(t[::-1])[::-1]
        remaining = (self.offset + self.size - (self.start_j + i0)) - np.arange(n - i0, dtype=np.float64)
        root = np.sqrt(np.maximum(remaining, 1.0))
        sp = np.minimum(root, 1 / math.sqrt(-math.expm1(-2 * self.theta)))
        h = self.grid.h
        sn = np.minimum(root, 1 / math.sqrt(-math.expm1(-2 * (self.theta + h))))
        penalty = self.wp[i0:n] * (self.err_p + self.err_p2 * sp) + fn * (1 + 2 * _U) * (
            self.err_n + self.err_n2 * sn
        )
        value = suffix - penalty * (1 + 1e-12)
        k = int(np.argmax(value))
        total = float(value[k]) if value[k] > 0 else 0.0
        v = total - e_sum - self.wrap + self.inf
        v -= 4 * _U * (abs(total) + float(suffix[0]) + self.inf + self.wrap)
        return max(0.0, math.nextafter(v, -math.inf)) if math.isfinite(v) else 0.0


def _tilt_lower(
    items: list[tuple[_Side, int]], theta: float, grid: _Grid, target: float | None
) -> _TiltedLower | None:
    """The tilted lumped pair of ``kᵢ`` copies of each lower side (see :class:`_TiltedLower`), or None."""
    if theta <= 0 or any(sd.nq is None for sd, _ in items) or _dyadic(theta, _THETA_BITS) != theta:
        return None
    span = _span(items)
    if span is None:
        return None
    base, full_len = span
    inf, err_unt, zero = _totals(items, False)
    if zero:
        return None
    pv = _TiltedVectors.of([(np.maximum(sd.masses, 0.0), sd.offset, sd.err, k) for sd, k in items], theta)
    nv = _TiltedVectors.of([(sd.nq, sd.offset, sd.nq_err, k) for sd, k in items if sd.nq is not None], theta)
    if pv is None or nv is None:
        return None
    tilted = [(_Side(off, xt, 0.0, 0.0), k) for xt, off, k in pv.vectors]
    b_lo, b_hi, top_b, bot_b = _window(tilted, base, full_len, _TILT_TAIL * math.exp(pv.log_n))
    if b_lo > b_hi:
        return None
    chernoff_lo = b_lo
    b_lo, b_hi, size, top_b = _fit(b_lo, b_hi, top_b, base, full_len, theta, pv.mean, pv.var, target)
    _check_window(size, grid.bits, len(items), lower=True)
    cp, p2 = _compose_tilted(pv, base, b_lo, size)
    cn, n2 = _compose_tilted(nv, base, b_lo, size)
    h = grid.h
    idx = np.arange(b_lo, b_lo + size, dtype=np.float64)
    arg_p = pv.lam - theta * idx  # θ·J exact; one rounding
    arg_n0 = nv.lam - theta * idx
    ok = np.flatnonzero((arg_p <= 700) & (arg_n0 <= 690))
    if ok.size == 0:
        return None
    first = int(ok[0])
    idx, arg_p, arg_n0, cp, cn = idx[first:], arg_p[first:], arg_n0[first:], cp[first:], cn[first:]
    pad_p = math.expm1(pv.lam_err + 2 * _U * float(np.max(np.abs(arg_p)))) * 1.01 + _EXP_REL
    amax_n0 = float(np.max(np.abs(arg_n0))) + 2 * _U * float(np.max(np.abs(theta * idx)))
    if pad_p > 1e-3 or amax_n0 * _U > 1e-6:
        return None
    with np.errstate(under="ignore"):
        fp = np.exp(arg_p)
    # lower bounds on P (0 where the factor is below the normal range: a rounded subnormal could be high)
    p_lo = np.where(fp >= 1e-300, cp * fp * ((1 - pad_p) * (1 - 4 * _U) / (1 + pv.rel_r)), 0.0)
    p_lo = np.where(p_lo >= _MIN_NORMAL, p_lo, 0.0)  # (a subnormal product could be rounded up)
    wp = np.maximum(fp * (1 + pad_p) * (1 + 4 * _U), 1e-300)
    # P's mass below the window wraps into it: below a Chernoff bottom its tilted size is at most bot_b (an
    # ℓ₁ error, weighed at the largest weight); below a bottom cut higher (_fit), it lands at the top with
    # untilted weight e^{−θ·size}: at most that times P's untilted total (Π‖Pᵢ‖₁^{kᵢ}, padded)
    wrap = 0.0
    if size >= full_len:
        bot_b = 0.0
    elif b_lo != chernoff_lo:
        log_tot = sum(k * math.log(max(sd.norm1() + sd.err, 1e-300)) for sd, k in items)
        wrap = math.exp(min(log_tot - theta * size, 700.0)) * (1 + pv.rel_r) * (1 + 1e-9)
        bot_b = 0.0
    return _TiltedLower(
        theta, b_lo, size, b_lo + first, idx * h, p_lo, wp, cn, arg_n0, nv.lam_err, amax_n0, nv.rel_r,
        _up(pv.err_in + (top_b + bot_b) * (1 + pv.rel_r)), p2, _up(nv.err_in), _up(n2 * (1 + nv.rel_r)),
        wrap, max(0.0, inf - err_unt), grid, np.cumsum(p_lo[::-1])[::-1], _drift(items),
    )


def _drift(items: list[tuple[_Side, int]]) -> float:
    """g = Σkᵢ·ln(ΣNᵢ/ΣPᵢ) of the lower sides (uncertified; see ``PLD._lumped_drift``)."""
    g = 0.0
    for sd, k in items:
        sp = float(np.sum(np.maximum(sd.masses, 0.0)))
        sn = float(np.sum(sd.nq)) if sd.nq is not None else 0.0
        if sp > 0 and sn > 0:
            g += k * math.log(sn / sp)
    return g
