"""Tilted composition: a certified δ(ε) of a long composition whose float error is relative to δ.

Why. The FFT that composes many PLDs (:func:`dpcompose.accounting._pld.fourier.compose_many`) has a *normwise*
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

    δ(ε) ≤ (1 + R)·Σ_{J₀ ≤ J ≤ S} w_Jc_Je^{Λ−θJ} + m_∞ + E + e^{Λ−θJ₀}(E_t + (1 + R)‖Δc‖₂·σ)
           + e^{Λ−θ·max(J₀, T+1)}·(1 + R)·τ_top,

with J₀ the first lattice index above ε, S the composite's largest finite index (δ = m_∞ for J₀ > S),
w_J = 1 − e^{ε − Jh}, R the entrywise relative error of the float tilting (products of kᵢ factors within
1 ± relᵢ), m_∞ the stored composite's mass at +∞, E the untilted ℓ₁ error the children's own ``err``
carry in (:func:`dpcompose.accounting._pld.fourier.totals`), E_t the tilted ℓ₁ error of the tilted
entries that underflowed (each within 2**-1064 absolutely), ‖Δc‖₂ the FFT's error in 2-norm,
σ = min(√n, (1 − e^{−2θ})^{−1/2}) its Cauchy–Schwarz weight against e^{−θJ} (n the entries from J₀ on),
and τ_top a Chernoff bound on the tilted mass above the window's top T (as in ``_compose_many``, on the
tilted sides). Mass below the window's bottom B
has loss below ε for every ε ≥ B·h, where it adds nothing to δ(ε); below B·h this bound is not used.

The carried error E: the children's valid vectors vᵢ (finite masses and the mass at +∞) lie within ℓ₁
``errᵢ`` of the stored ones x̂ᵢ, so the composite V of the valid ones lies within ℓ₁
E = Π(‖x̂ᵢ‖₁ + errᵢ)^{kᵢ} − Π‖x̂ᵢ‖₁^{kᵢ} of the composite X of the stored ones (telescoping and Young's
inequality on the lattice with +∞ adjoined). As 0 ≤ w_J ≤ 1, δ_V(ε) = Σ_J w_JV_J + V_∞ ≤ δ_X(ε) + ‖V − X‖₁
≤ δ_X(ε) + E for every ε: one untilted E covers the finite masses and the mass at +∞ together, as in
the untilted composite (``compose_many``). (A tilted bound on the finite masses' part, each child's
error weighed at its top index, could only be added to E, which the mass at +∞ needs anyway; for a child
that is itself a long composite, whose top lies far above the ε asked, that term reaches 10⁶ times δ.) The
tilted mass outside the window wraps around the cyclic convolution as extra non-negative mass (only
raising the bound). The product of dominating pairs dominates the composition (Zhu–Dong–Wang 2022, Thm
10), so the bound holds for the mechanisms the sides describe, exactly as the untilted one does.

Exactness: θ (per lattice step) is a dyadic number with few significant bits, so θ·J is exact in double
for every index used; so is every position J·h (:class:`Grid`), and ε/h is
read through ``Grid.steps``, whose floor is exact; Λ is a correctly rounded sum (``math.fsum``) with its
rounding bounded; ``exp`` is assumed within 2**9 units of roundoff (padded as in
:mod:`dpcompose.accounting._pld.distribution`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dpcompose.accounting import _common
from dpcompose.accounting import _pld_memory as memory
from dpcompose.accounting._exact import EXP_REL, U
from dpcompose.accounting._pld.concurrency import once
from dpcompose.accounting._pld.floats import TINY as _MIN_NORMAL
from dpcompose.accounting._pld.floats import (
    few_ulps_up,
    gamma,
    gamma_up,
    libm_err,
    libm_up,
    pad_up,
    rounding_err,
    rounding_rel,
    roundings_down,
    roundings_up,
    sum_bound,
)
from dpcompose.accounting._pld.fourier import fourier_power, out_of_memory, totals, window
from dpcompose.accounting._pld.lattice import Grid, check_window
from dpcompose.accounting._pld.side import Side, composed_nq_err

FloatArray = npt.NDArray[np.float64]


_TILT_TAIL = 1e-13  # tilted mass (of a total ≈ 1) left above the window; it wraps as extra mass, adding at


# most about 1e-13/(the tilted mass near ε) relative to δ
THETA_BITS = 10  # significant bits of θ: θ·J is then exact for |J| < 2**42


ERROR_SHARE = 1e-3  # above this share of δ in error terms, the untilted side is tried too


FINE_SHARE = 1e-9  # ... or this share of a δ above 1e-4


_COARSE = 64  # the model used only to choose θ groups entries d steps from a side's mode d // 64 at a time


NEAR = 1  # δ(ε) sums the terms with loss below ε + NEAR one by one, the others from suffix sums


_UNDERFLOW_PAD = 2.0**-1064  # pads every term whose exp may have underflowed (see Tilted)


V_SHIFT = 700.0  # the suffix sums of Tᵢ·e^{−ℓᵢ} are stored times e^{V_SHIFT} (see Tilted.far)


# exp's extra relative error from rounding V_SHIFT − ℓ or ε − V_SHIFT
_SHIFT_REL = rounding_err(1.01, V_SHIFT + 710)


LOG_THETA = (math.log(1e-7), math.log(1e4))  # the range searched for θ in loss units


LD_TOL = 1e-10  # an FFT error bound below this share of the tilted total (≈ 1) needs no more long double


# frequencies: relative to δ it is that over the tilted mass near ε (1000 × Laplace(200): 2.6e-11 left by 256
# frequencies took 16 of 30 ms to lower to 2e-13, and moved ε by 3e-11 relative)


@dataclass(frozen=True)
class Tilted:
    """The tilted composite: ``masses[i]`` ≈ c_J at J = offset + i, with m_J = c_J·e^{Λ − θJ} (module doc).

    ``inf`` bounds the composite's mass at +∞ plus the ℓ₁ error E the children carry in (their own
    ``err``; module doc), ``err`` the tilted ℓ₁ error E_t of the float tilting's entries that underflowed,
    ``err2`` the 2-norm of the FFT's error ‖Δc‖₂ (Higham 2002, Thm 24.2; the ℓ₁ bound of ``_compose_many``
    is √N times it), and ``rel`` the entrywise relative error of the float tilting: the exact composite of
    the stored vectors is at most (c + Δc)(1 + rel) + E_t; ``top_mass`` bounds the
    tilted mass above index ``top_at`` − 1; ``lam_err`` bounds |Λ − fl(Λ)|.

    Underflow: an ``exp`` result in the subnormal range is within 2**9 units of 2**-1074, below 2**-1064 in
    absolute terms (the module's accuracy assumption), and a product there within 2**-1075, so every term
    that may have underflowed is padded by 2**-1064 (weights that underflowed to 0 would otherwise read
    δ = 0 where it is 1e-385). The pad covers only errors that enter δ unscaled: no stored value whose
    absolute rounding is multiplied by a large factor may fall in the subnormal range, which is why the
    suffix sums that :meth:`far` multiplies by e^ε are stored shifted (see there)."""

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
    grid: Grid
    support_top: int  # the composite's largest finite index: no valid finite mass lies above it

    def _factor_pad(self, arg_abs: float) -> float:
        """Relative error bound of the computed e^{fl(Λ − θJ)} against e^{Λ − θJ} (|Λ − θJ| ≤ arg_abs)."""
        d = self.lam_err + rounding_err(2, arg_abs)
        return pad_up(math.expm1(d) * 1.01 + libm_err(1), 20) if d < 1 else math.inf

    def _weight_up(self, j: int) -> float:
        """An upper bound on e^{Λ − θj} (θ·j is rounded here, for j possibly outside the window)."""
        arg = self.lam - self.theta * j
        slack = self.lam_err + rounding_err(2, abs(self.lam) + abs(self.theta * j)) + 1e-300
        if arg + slack > 700:
            return math.inf
        return libm_up(math.exp(arg + slack)) + _UNDERFLOW_PAD

    def delta_up(self, eps: float) -> float:
        """A certified upper bound on δ(ε) for ε ≥ offset·h, and +∞ below (this bound does not apply)."""
        scaled = self.grid.steps(eps)  # (its floor and comparisons with integers are exact)
        if not math.isfinite(scaled) or scaled < self.offset:
            return math.inf
        j0 = math.floor(scaled) + 1  # the first lattice index J with J·h > ε
        if j0 > self.support_top:  # only the mass at +∞ is above ε
            return few_ulps_up(self.inf)
        start = j0 - self.offset
        end = self.end
        s = e = 0.0
        pad_f = 0.0
        n_terms = max(0, end - start)
        if start < end:
            if self.lam - self.theta * j0 > 700:  # (the largest factor read)
                return math.inf
            pos, factor, amax = self.factors
            # the near terms (ℓ − ε < 1) one by one; the far ones from suffix sums (:meth:`far`)
            mid = min(end, start + math.ceil(NEAR / self.grid.h) + 1) if 0 <= eps < 700 else end
            if start >= self.live_end:  # every term is +0.0 (see live_end): the same sums, of zeros
                s, e = sum_bound(np.zeros(mid - start))  # (sum_bound's own certificate, of zeros)
                e += rounding_err(2, 0.0)
            else:
                w = -np.expm1(-(pos[start:mid] - eps))  # pos exact; the subtraction's rounding: relative u
                w = np.minimum(libm_up(w), 1.0)
                t = self.masses[start:mid] * w * factor[start:mid]
                s, e = sum_bound(t)
                e += rounding_err(2, float(np.sum(np.abs(t))))
            if mid < end:
                s_far, e_far = self.far(mid, eps)
                s, e = s + s_far, e + e_far + rounding_err(2, abs(s) + s_far)  # (the sum, rounded)
            pad_f = self._factor_pad(amax)
        body = (s + e) * (1 + pad_f) * (1 + self.rel) + (n_terms + 2) * _UNDERFLOW_PAD
        total = body + self.inf + self.error_terms(eps)
        return few_ulps_up(total + rounding_err(4, total))

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
            if i + 1 >= self.end:
                return self.inf
            eps = (self.offset + i) * h
            far = math.exp(min(eps, 700.0) - V_SHIFT) * float(s2[i + 1])
            return self.inf + float(s1[i + 1]) - far if math.isfinite(far) else math.inf

        # approx(−1) counts as above the target (below the window), approx(_end) = inf ≤ target is not known
        # (the search in least_search starts from here and certifies either way)
        return self.offset + _common.bisect(-1, self.end, lambda i: approx(i) <= target)

    @once
    def end(self) -> int:
        """One past the last window entry :meth:`delta_up` reads (above the support: wrapped copies only)."""
        return min(self.masses.size, self.support_top - self.offset + 1)

    @once
    def live_end(self) -> int:
        """One past the last window entry i < ``end`` whose float product cᵢ·fᵢ (mass times factor) is not 0.

        From here on every term :meth:`delta_up` sums, cᵢ·wᵢ·fᵢ with 0 < wᵢ ≤ 1, is +0.0 as computed: cᵢ ≥ 0
        and fᵢ ≥ 0 are finite, fl(cᵢ·wᵢ) ≤ cᵢ, and rounding is monotone, so fl(fl(cᵢ·wᵢ)·fᵢ) ≤ fl(cᵢ·fᵢ) = 0.
        :meth:`delta_up` then skips the arrays and takes the sums of zeros ``sum_bound`` would return, the
        same floats (far above a long composition's answers, a composite of 3·10⁷ entries took 0.3 s per ε
        to add its zeros)."""
        _, factor, _ = self.factors
        live = np.flatnonzero(self.masses[: self.end] * factor[: self.end])
        return int(live[-1]) + 1 if live.size else 0

    @once
    def _suffix(self) -> tuple[FloatArray, FloatArray]:
        """Suffix sums over the read entries i < ``end`` of Tᵢ = cᵢ·fᵢ and Vᵢ = Tᵢ·e^{c−ℓᵢ} (c the masses, f
        the factors e^{fl(Λ − θJ)}, ℓ = J·h, c = ``V_SHIFT``); entry i sums i, i + 1, …, ``end`` − 1
        (computed from the top down). Where e^{c−ℓᵢ} is below the normal range, Vᵢ is stored as 0, below
        its exact value (see :meth:`far`). Entries with ℓ < c − 709 (e^{c−ℓ} may overflow) are never read:
        :meth:`far` reads ℓ ≥ 1. Sums that overflow are +∞ silently (the sum's overflow warning must not
        escape the errstate: under ``-W error`` it would be raised as a raw RuntimeWarning); :meth:`guess`
        reads them as above the target."""
        pos, factor, _ = self.factors
        t = self.masses[: self.end] * factor[: self.end]
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            shifted = np.exp(V_SHIFT - pos[: self.end])
            v = np.where(shifted >= _MIN_NORMAL, t * shifted, 0.0)
            return np.cumsum(t[::-1])[::-1], np.cumsum(v[::-1])[::-1]

    def far(self, first: int, eps: float) -> tuple[float, float]:
        """``(s, e)``: Σ_{first ≤ i < _end} Tᵢ·(1 − e^{ε−ℓᵢ}) as S₁ − e^{ε−c}·S₂ from :meth:`_suffix`
        (c = ``V_SHIFT``), and a bound e on its error against the sum of the exact products
        cᵢfᵢ(1 − e^{ε−ℓᵢ}), less at most the stored Tᵢ's own absolute rounding (which :meth:`delta_up`'s
        per-term pad covers), for 0 ≤ ε < 700 and ℓ_first > ε (every term non-negative: c ≥ 0, f > 0).

        Why the shift: V is read multiplied by e^{ε−c} ≤ 1. Unshifted, Tᵢ·e^{−ℓᵢ} falls in the subnormal
        range wherever ℓᵢ + ln(1/Tᵢ) passes ~708, where round-to-nearest has an absolute error of up to
        2**-1075 in either direction; multiplied by e^ε (1e228 at ε = 525) such an error rounded up lowered
        the result by far more than δ itself (an under-report by 1e-3 relative). Shifted, an absolute
        error of 2**-1075 in a Vᵢ moves the result by at most 2**-1075, within the per-term pad.

        The suffix sums are recursive sums of non-negative terms, each within γₙS of the exact one
        (Higham 2002, Lemma 3.1; sums in the subnormal range are exact); Tᵢ is within u of cᵢfᵢ (or
        absolutely within 2**-1075 in the subnormal range: only raising or lowering the term, which is
        increasing in Tᵢ, by at most that); Vᵢ is within 2u + ``EXP_REL`` + |fl(c − ℓᵢ) − (c − ℓᵢ)| of
        Tᵢe^{c−ℓᵢ} (exp's accuracy, the product; |c − ℓᵢ| ≤ 710 where stored, so the last is within
        ``_SHIFT_REL``), or absolutely within 2**-1075 where the product is subnormal, or 0 where e^{c−ℓᵢ}
        is (below its exact value: a smaller S₂ only raises S₁ − e^{ε−c}·S₂, the safe direction for this
        upper bound); e^{ε−c} is within ``EXP_REL`` + ``_SHIFT_REL``; the product and the difference are one
        rounding each. So |error| ≤ (γₙ + 2u)·S₁ + (γₙ + 2·``EXP_REL`` + 2·``_SHIFT_REL`` + 4u)·e^{ε−c}·S₂,
        padded twice over, plus 2**-1075 per subnormal Vᵢ (covered by :meth:`delta_up`'s per-term pad).
        Where these terms are read (ℓ − ε ≥ 1), e^{ε−ℓ} ≤ 1/e, so the difference keeps at least 63 % of
        S₁: the bound is relative to the result."""
        s1, s2 = self._suffix
        a, b = float(s1[first]), float(s2[first])
        xb = math.exp(eps - V_SHIFT) * b
        g = gamma(s1.size + 2)
        rel_v = g + libm_err(2) + 2 * _SHIFT_REL + rounding_rel(4)
        err = ((g + rounding_rel(2)) * a + rel_v * xb * (1 + 2 * (EXP_REL + _SHIFT_REL))) * 2
        return max(a - xb, 0.0), err

    @once
    def factors(self) -> tuple[FloatArray, FloatArray, float]:
        """The lattice positions J·h of the window, e^{fl(Λ − θJ)} there (capped at e^700, where delta_up does
        not read them) and max|Λ − θJ| (for :meth:`_factor_pad`)."""
        idx = np.arange(self.offset, self.offset + self.masses.size, dtype=np.float64)
        arg = self.lam - self.theta * idx  # θ·idx exact (construction); one rounding
        with np.errstate(under="ignore"):
            factor = np.exp(np.minimum(arg, 700.0))
        return idx * self.grid.h, factor, float(np.max(np.abs(arg)))  # (idx·h exact: Grid)


def groups(n: int, mode: int) -> npt.NDArray[np.intp]:
    """The first entries of the groups the θ model (``Recipe._model``) merges a side of ``n`` entries into:
    one entry at a time within ``_COARSE`` of the ``mode``, then groups growing with the distance d from it
    (d // ``_COARSE`` entries), about 2·``_COARSE``·(1 + ln(n/``_COARSE``)) groups in all.

    Why not equal groups: the mass of a subsampled mechanism's step sits on a few entries around the mode
    while its support spans 10⁵ (q = 1e-5); merging those few entries erased the composite's variance, and
    the θ chosen would leave the answer below the tilted window (error terms 10³⁴ times δ)."""
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


def dyadic(x: float, bits: int) -> float:
    """x rounded to ``bits`` significant bits (so that products with integers below 2**(53 − bits) are
    exact)."""
    if x <= 0 or not math.isfinite(x):
        return 0.0
    m, e = math.frexp(x)
    return math.ldexp(round(math.ldexp(m, bits)), e - bits)


def _span(items: list[tuple[Side, int]]) -> tuple[int, int] | None:
    """``(base, full_len)``: the composite's lowest index and support length, or None where an index used
    reaches 2**42 (θ·J is exact only below: see the module docstring)."""
    base = sum(k * sd.offset for sd, k in items)
    full_len = sum(k * (sd.masses.size - 1) for sd, k in items) + 1
    reach = max(
        [abs(base), abs(base + full_len)]
        + [max(abs(sd.offset), abs(sd.offset + sd.masses.size)) for sd, _ in items]
    )
    return None if reach >= 2**42 else (base, full_len)


def tilt(
    items: list[tuple[Side, int]], theta: float, grid: Grid, target: float | None = None
) -> Tilted | None:
    """The tilted composite of ``kᵢ`` copies of each (upper) side at θ per lattice step (module doc), or
    None where tilting does not apply (θ ≤ 0, negative stored masses, no finite mass, or overflow).

    With a ``target`` δ, the window's bottom may be cut far above the Chernoff one, down to 1.5 tilted
    standard deviations below the tilted mean, less the shift of the mean across θ's grid cell (:func:`_fit`):
    every ε read from this composite (whose tilt is θ, :class:`Recipe`) lies above it, and the tilted mass
    below it wraps to the window's top, where (untilted) it weighs at most e^{−θN} — kept below 1e-12·target
    by the choice of N. (It is extra non-negative mass: it can only raise the bound; where ε lies below the
    window after all, :meth:`Tilted.delta_up` reads +∞ there, and the untilted side is read.)"""
    if theta <= 0 or not math.isfinite(theta) or dyadic(theta, THETA_BITS) != theta:
        return None
    span = _span(items)
    if span is None:
        return None
    base, full_len = span
    inf, err_unt, zero = totals(items, True)
    if zero:
        return None
    # the children's own err is carried untilted, in ``inf_up`` (module doc): not tilted here
    p = _TiltedVectors.of([(sd.masses, sd.offset, 0.0, k) for sd, k in items], theta)
    if p is None:
        return None
    tilted = [(Side(off, xt, 0.0, 0.0), k) for xt, off, k in p.vectors]
    b_lo, b_hi, top_b, _ = window(tilted, base, full_len, _TILT_TAIL * math.exp(p.log_n))
    if b_lo > b_hi:
        return None
    b_lo, b_hi, size, top_b = _fit(b_lo, b_hi, top_b, base, full_len, theta, p.mean, p.var, target)
    check_window(size, grid.bits, len(items))
    c, fft2 = _compose_tilted(p, base, b_lo, size)
    inf_up = few_ulps_up(inf + err_unt)  # (m_∞ + E: module doc)
    err_in = few_ulps_up(p.err_in)  # (only the tilting's underflow: the children's err is in inf_up)
    top = base + full_len - 1
    return Tilted(theta, b_lo, c, p.lam, p.lam_err, inf_up, err_in, fft2, p.rel_r, top_b, b_hi + 1, grid, top)


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
            if amax * U > 1e-6:
                return None
            # every float tilted entry is within a relative ``rel`` of the exact one (exponent's rounding,
            # exp, the product), except results in the subnormal range, which are within 2**-1064 absolutely
            rel = pad_up(rounding_err(2, amax) + libm_err(1) + rounding_rel(2), 20)
            n1 = gamma_up(float(np.sum(xt)), m.size + 1) * (1 + rel)  # ≥ the exact tilted ℓ₁ norm
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
                e_t += libm_up(err * math.exp(top_arg + rounding_err(2, abs(top_arg) + abs(lse)) + 1e-300))
            vectors.append((xt, offset, k))
            mu = float(np.sum(xt[pos] * j)) / float(np.sum(xt[pos]))
            t_mean += k * mu
            t_var += k * float(np.sum(xt[pos] * (j - mu) ** 2)) / float(np.sum(xt[pos]))
            lam_terms.append(k * lse)
            log_n += k * math.log(n1)
            log_ne += k * math.log1p(e_t / n1)
            log_rel += k * math.log1p(rel)
        lam = math.fsum(lam_terms)  # the exact sum of the rounded products, rounded once
        lam_err = rounding_err(1, sum(abs(t) for t in lam_terms) + abs(lam)) * 1.01
        if log_n > 700 or log_ne > 700:  # (expm1 would overflow for a child's large err)
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
    b_lo: int,
    b_hi: int,
    top_b: float,
    base: int,
    full_len: int,
    theta: float,
    mean: float,
    var: float,
    target: float | None,
) -> tuple[int, int, int, float]:
    """``(b_lo, b_hi, size, top_b)``: the FFT size for the window, with the bottom cut up to 1.5 tilted
    standard deviations below the tilted mean where e^{−θ·size} < 1e-12·target (see :func:`tilt`), or
    0.1·θ·var + 0.5 standard deviations where that is more: the ε whose tilt is θ (``Recipe.
    theta_for_epsilon``: of the grid tilts, ratio 2**(1/4), the one whose mean is nearer ε) lie above the
    midpoint between this tilt's mean and the one of the grid tilt below, where the mean is smooth in θ about
    (1 − 2**(−1/4))·θ·var/2 ≤ 0.08·θ·var below this one's. (Only the time depends on it: where ε lies below
    the window, the untilted side is read.)"""
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
    helps) and a bound on the 2-norm of its float error (``fourier_power``'s bound is √size times it)."""
    c, fft_err = fourier_power([(xt, k) for xt, _, k in p.vectors], size, LD_TOL)
    with memory.refuse_out_of_memory(*out_of_memory(size, len(p.vectors))):  # (a DPError, not MemoryError)
        c = np.roll(c, (base - b_lo) % size)
        np.maximum(c, 0.0, out=c)
    return c, few_ulps_up(fft_err / math.sqrt(size) * (1 + 1e-12))


# ---------------------------------------------------------------------------------------------------------
# The lower side (the lumped pair), tilted
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TiltedLower:
    """The lumped pair's composite (``PLD.delta_lumped``) tilted: P(s) ≈ p_J·e^{Λ_P − θJ} and
    N(s) = e^{s}Q(s) ≈ n_J·e^{Λ_N − θJ} at the label s = J·h.

    δ(ε) ≥ Σ_{J≥Jᵢ}(P(J) − e^{ε−Jh}N(J))₊ for any start Jᵢ (a restriction of the lumped pair to fewer
    outcomes, as in ``PLD.delta_lumped``); with P ≥ p/(1 + rel) − |Δp|, N ≤ (n + |Δn|)(1 + rel) and
    (·)₊ 1-Lipschitz, the errors cost at most Σ_{J≥Jᵢ} e^{Λ_P−θJ}|Δp_J| + Σ_{J≥Jᵢ} e^{Λ_N−θJ+ε−Jh}|Δn_J|
    (Δ: the FFT's error, in 2-norm, and the tilting's underflow, ``err_p`` / ``err_n``), bounded as on the
    upper side (ℓ₁ parts at the largest weight, the FFT's 2-norm by Cauchy–Schwarz against the weights).
    The children's own ℓ₁ errors enter untilted, as on the upper side (module doc): the composite of the
    valid P vectors (finite and +∞) lies within ℓ₁ E_P of that of the stored ones, so the P part of the
    bound, +∞ included, falls by at most E_P, which ``inf`` (the stored mass at +∞ less E_P, possibly
    negative) subtracts once; the composite of the valid N vectors lies within ℓ₁ E_N (``err_n_unt``) of the
    stored one, so Σ_{J≥Jᵢ} e^{ε−Jh}|ΔN_J| ≤ e^{ε−Jᵢh}·E_N (Young and telescoping, as in ``totals``).
    The tilted P mass outside a Chernoff window wraps into it (an error, counted in
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
    inf: float  # the stored mass at +∞ less E_P (one rounding: in delta_lo's final rounding term)
    grid: Grid
    reach: FloatArray  # the untilted P mass from each label on (float: only chooses which labels to sum)
    drift: float  # g = ln(ΣN/ΣP) of the composite (uncertified: only chooses the first label summed)
    err_n_unt: float  # E_N: the ℓ₁ error the children's nq_err carry into the N composite (untilted)

    def delta_lo(self, eps: float) -> float:
        """A certified lower bound on δ(ε) (0 where nothing is certified)."""
        if not (eps >= 0 and math.isfinite(eps)):
            return 0.0
        # labels s ≥ ε + min(g, 0) − 2: where the terms turn positive (labels drift from the merged losses
        # by g, as in PLD._lumped_start; without g the positive terms could be skipped)
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
        # P(L > ε), e.g. 1.7e-39, which the first cut alone reads as 0), the labels up to the cut for the
        # label ε itself are summed too; that cut is far longer where g ≪ 0 (866k labels against 120k at
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
        slack = self.lam_err_n + rounding_err(4, self.amax_n0 + abs(eps) + far + 4)
        pad_n = math.expm1(slack) * 1.01 + libm_err(1)
        with np.errstate(under="ignore"):
            fn = np.maximum(np.exp(x) * (1 + pad_n), 1e-300)  # ≥ e^{Λ_N − θJ + ε − Jh}
        wn_eps = self.cn[i0:n] * fn * roundings_up(1 + self.rel_n, 2)
        p = self.p_lo[i0:n]
        t = np.maximum(p - wn_eps - rounding_err(4, p + wn_eps), 0.0)
        suffix = np.cumsum(t[::-1])[::-1]
        remaining = (self.offset + self.size - (self.start_j + i0)) - np.arange(n - i0, dtype=np.float64)
        root = np.sqrt(np.maximum(remaining, 1.0))
        sp = np.minimum(root, 1 / math.sqrt(-math.expm1(-2 * self.theta)))
        h = self.grid.h
        sn = np.minimum(root, 1 / math.sqrt(-math.expm1(-2 * (self.theta + h))))
        penalty = self.wp[i0:n] * (self.err_p + self.err_p2 * sp) + roundings_up(fn, 2) * (
            self.err_n + self.err_n2 * sn
        )
        if self.err_n_unt > 0:  # e^{ε − Jᵢh}·E_N, the exponent's rounding and exp padded as for fn
            pad_u = math.expm1(rounding_err(2, abs(eps) + far)) * 1.01 + libm_err(1)
            with np.errstate(over="ignore"):
                gu = np.exp(eps - self.pos[i0:n]) * (1 + pad_u)
            penalty = penalty + roundings_up(gu * self.err_n_unt, 4)
        value = suffix - penalty * (1 + 1e-12)
        k = int(np.argmax(value))
        total = float(value[k]) if value[k] > 0 else 0.0
        # the one suffix sum kept, suffix[k], is a float sum of t[k:] alone: its rounding error is bounded by
        # those terms (the terms below k, which may be large where the untilting factor multiplies the FFT's
        # noise, do not enter it: counting them read the top atom of RR composed as δ = 0)
        _, e_sum = sum_bound(t[k:])
        # products in the subnormal range lose their relative accuracy: at most 2**-1074 each, absolutely
        # (p_lo holds no subnormal entries: they are set to 0 at construction); so may the few products of
        # the penalty subtracted from the one suffix sum kept (2**-1070 covers them)
        e_sum += 2 * (n - i0) * 2.0**-1074 + 2.0**-1070
        v = total - e_sum - self.wrap + self.inf
        v -= rounding_err(4, abs(total) + float(suffix[k]) + e_sum + abs(self.inf) + self.wrap)
        return max(0.0, math.nextafter(v, -math.inf)) if math.isfinite(v) else 0.0


def tilt_lower(
    items: list[tuple[Side, int]], theta: float, grid: Grid, target: float | None
) -> TiltedLower | None:
    """The tilted lumped pair of ``kᵢ`` copies of each lower side (see :class:`TiltedLower`), or None."""
    if theta <= 0 or any(sd.nq is None for sd, _ in items) or dyadic(theta, THETA_BITS) != theta:
        return None
    span = _span(items)
    if span is None:
        return None
    base, full_len = span
    inf, err_unt, zero = totals(items, False)
    if zero:
        return None
    # the children's own err and nq_err are carried untilted (TiltedLower): not tilted here
    pv = _TiltedVectors.of([(np.maximum(sd.masses, 0.0), sd.offset, 0.0, k) for sd, k in items], theta)
    nv = _TiltedVectors.of([(sd.nq, sd.offset, 0.0, k) for sd, k in items if sd.nq is not None], theta)
    if pv is None or nv is None:
        return None
    tilted = [(Side(off, xt, 0.0, 0.0), k) for xt, off, k in pv.vectors]
    b_lo, b_hi, top_b, bot_b = window(tilted, base, full_len, _TILT_TAIL * math.exp(pv.log_n))
    if b_lo > b_hi:
        return None
    chernoff_lo = b_lo
    b_lo, b_hi, size, top_b = _fit(b_lo, b_hi, top_b, base, full_len, theta, pv.mean, pv.var, target)
    check_window(size, grid.bits, len(items), lower=True)
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
    pad_p = math.expm1(pv.lam_err + rounding_err(2, float(np.max(np.abs(arg_p))))) * 1.01 + libm_err(1)
    amax_n0 = float(np.max(np.abs(arg_n0))) + rounding_err(2, float(np.max(np.abs(theta * idx))))
    if pad_p > 1e-3 or amax_n0 * U > 1e-6:
        return None
    with np.errstate(under="ignore"):
        fp = np.exp(arg_p)
    # lower bounds on P (0 where the factor is below the normal range: a rounded subnormal could be high)
    p_lo = np.where(fp >= 1e-300, cp * fp * (roundings_down(1 - pad_p, 4) / (1 + pv.rel_r)), 0.0)
    p_lo = np.where(p_lo >= _MIN_NORMAL, p_lo, 0.0)  # (a subnormal product could be rounded up)
    wp = np.maximum(roundings_up(fp * (1 + pad_p), 4), 1e-300)
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
    return TiltedLower(
        theta,
        b_lo,
        size,
        b_lo + first,
        idx * h,
        p_lo,
        wp,
        cn,
        arg_n0,
        nv.lam_err,
        amax_n0,
        nv.rel_r,
        few_ulps_up(pv.err_in + (top_b + bot_b) * (1 + pv.rel_r)),
        p2,
        few_ulps_up(nv.err_in),
        few_ulps_up(n2 * (1 + nv.rel_r)),
        wrap,
        inf - err_unt,
        grid,
        np.cumsum(p_lo[::-1])[::-1],
        _drift(items),
        composed_nq_err(items),
    )


def _drift(items: list[tuple[Side, int]]) -> float:
    """g = Σkᵢ·ln(ΣNᵢ/ΣPᵢ) of the lower sides (uncertified; see ``PLD._lumped_drift``)."""
    g = 0.0
    for sd, k in items:
        sp = float(np.sum(np.maximum(sd.masses, 0.0)))
        sn = float(np.sum(sd.nq)) if sd.nq is not None else 0.0
        if sp > 0 and sn > 0:
            g += k * math.log(sn / sp)
    return g
