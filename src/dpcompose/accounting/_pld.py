"""Privacy loss distributions (PLDs) with certified upper and lower bounds on δ(ε) and ε(δ).

A mechanism M with a *dominating pair* (P, Q) of output distributions (Zhu–Dong–Wang 2022, Def. 7)
is (ε, δ(ε))-DP with δ(ε) = H_{e^ε}(P‖Q) = E_{o∼P}[(1 − e^{ε − L(o)})₊], where L(o) = ln P(o)/Q(o) is the
*privacy loss* (L = +∞ where Q(o) = 0; that mass counts fully). The distribution of L under P is the
PLD (Sommer–Meiser–Mohammadi 2019; Koskela–Jälkö–Honkela 2020). For a sequential (adaptive) composition
the product of the dominating pairs is a dominating pair of the composite (Zhu–Dong–Wang 2022,
Thm. 10), and the privacy loss of a product pair is the *sum* of independent losses, so the composite's
PLD is the convolution of the children's PLDs (Meiser–Mohammadi 2018; Koskela et al. 2020/2021).

Representation. Losses live on the lattice h·Z with h = 2**-m. Every :class:`PLD` carries two sides:

* ``upper``: entrywise upper bounds on the P-masses of a *pessimistic* lattice pair that dominates the
  mechanism's pair — the "connect the dots" discretisation of Doroshenko, Ghazi, Kamath, Kumar, Manurangsi
  2022 (each bucket (a, a+h] of losses is split between its two end points a, a+h so that both the P- and
  the Q-mass are kept; merging the two halves recovers the bucket, so the split pair dominates the original:
  its error in δ is second order in h). Loss mass below the lattice range is put on its lowest point
  (rounding a loss *up* only raises δ), mass above it on +∞.
* ``lower``: a *lumped pair*, which the mechanism's pair dominates. Each bucket of outputs gets a lattice
  label (the point nearest its merged loss ln(P/Q)), and all (composite) outputs with one label are merged
  into one output: a post-processing, so its δ is at most the mechanism's (data processing for the
  hockey-stick divergence). The side stores lower bounds on the label's P-mass and upper bounds on N(s) =
  e^{s}·Q(s); labels add under composition, so both vectors compose by convolution, and δ(ε) ≥ Σₛ(P(s) −
  e^{ε−s}·N(s))₊. Merging loses only where outputs of one label have losses on both sides of ε, so the
  error is second order in h (rounding every loss down, Meiser–Mohammadi 2018 / Koskela et al. 2021, is
  first order: k·h/2 after k compositions).

Each side also stores ``err``, a bound on the ℓ₁ distance between the stored float vector (with its mass at
+∞) and a vector with the property above. Composition convolves the float vectors (directly when one is
short, else by a power-of-two real FFT) and adds a rigorous bound on the floating-point error: for the
direct sum of non-negative products the classical bound γₙ‖x‖₁‖y‖₁, for the FFT the norm-wise bound of
Higham, *Accuracy and Stability of Numerical Algorithms* (2002), Thm. 24.2, ‖ŷ − y‖₂ ≤ log₂N·η/(1 −
log₂N·η)·‖y‖₂ with η = μ + γ₄(√2 + μ), carried through the pointwise product and the inverse transform
and turned into an ℓ₁ bound by Cauchy–Schwarz (taken with a safety factor of 8 on η; the error analysis
of FFT-based PLD composition is also discussed by Gopi–Lee–Wutschitz 2021, Sec. 5). Truncated tails are
never dropped from the upper side: the top tail moves to +∞, the bottom tail up to the lowest kept point.

Long compositions (:func:`_compose_many`) take one real FFT per distinct PLD, raise it to its count and
multiply in the frequency domain, with one inverse FFT per side; the result lives on a window cut by
Chernoff bounds (the mass outside, at most ``tail``, goes to +∞ / the lowest point on the upper side and
into ``err`` on the lower side, since it wraps around). The float error is bounded componentwise for the
forward transforms and powers and normwise for the inverse (Higham 2002, Thm 24.2).

δ(ε) is evaluated at any real ε as Σⱼ mⱼ wⱼ + m_∞ + err with wⱼ = −expm1(ε − ℓⱼ) for ℓⱼ > ε on the upper
side, and as Σₛ(P(s) − e^{ε−s}N(s))₊ + m_∞ − errors on the lower side, every float rounded outward. ε(δ) is
the least float ε whose certified upper δ is at most the target, and the largest one found whose certified
lower δ exceeds it.

Assumptions of the certificate (the same ones the rest of :mod:`dpcompose.accounting` makes): IEEE double
arithmetic with round-to-nearest; numpy's elementwise ``exp``/``expm1`` within 2**-44 relative (2**9 units
of roundoff, 2**8 ulps at worst) and scipy's ``log_ndtr`` within 64 ulps·(1 + |value|) (both padded here far
beyond their documented accuracy); numpy's FFT at least as accurate as the radix-2 analysis above (safety
factor 8).

Examples:
    >>> from dpcompose.accounting import pld_laplace
    >>> pld = pld_laplace(1, 10).self_compose(100)
    >>> lo, hi = pld.epsilon_bounds(1e-6)
    >>> 4.68 < float(lo) <= float(hi) < 4.70
    True
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt

from dpcompose._scipy import log_ndtr
from dpcompose._validation import check_finite_nonnegative, check_finite_positive, check_positive_int
from dpcompose.accounting import _pld_memory as memory
from dpcompose.accounting._common import bisect, probability
from dpcompose.accounting._exact import Number, exact, exp_down, expm1_up, float_down, float_up
from dpcompose.accounting._profile import _LOG_NDTR_PAD, _gaussian_epsilon, _log_ndtr_up, gaussian_delta
from dpcompose.errors import InvalidParameter, UnsupportedComposition

if TYPE_CHECKING:
    from dpcompose.accounting._pld_tilt import _Recipe

__all__ = [
    "PLD",
    "compose_counted",
    "compose_plds",
    "pld_approx",
    "pld_discrete_laplace",
    "pld_gaussian",
    "pld_laplace",
    "pld_randomized_response",
]

FloatArray = npt.NDArray[np.float64]

_U = 2.0**-53
_PAD = 2.0**-44  # relative pad of every stored mass and weight (≫ the assumed libm accuracy)
_EXP_REL = 2.0**-44  # assumed relative accuracy of numpy exp / expm1 (2**9·u, 2**8 ulps at worst), padded
_FFT_SAFETY = 8.0
_DIRECT_LIMIT = 64  # convolve directly when the shorter vector has at most this many entries

_MIXED_SAMPLING = (
    "these pairs mix Poisson sampling (one record added or removed) with sampling without replacement (one "
    "record substituted): neither pair holds under the other neighbouring relation, so no theorem composes "
    "them; use one sampling scheme for the whole run"
)
"""The refusal of a composition that mixes the two subsampling schemes (:func:`compose_plds`,
:meth:`~dpcompose.accounting.PrivacyLoss.compose`)."""

DEFAULT_STEP_BITS = 14
"""The default lattice: h = 2**-14 ≈ 6.1e-5."""

_THIN_MIN_COUNT = 256
"""A PLD composed at least this many times is read through its thin version (:attr:`PLD._thin`): there the
certified interval of the DP-SGD runs moves by a few percent of its width or less, and a step's PLD builds
four times faster."""

_SAFETY_GAP = 1e-3  # a tilted lower end this far (relative) below the upper end: the untilted one is read too

MAX_COUNT = 1 << 44
"""The most copies of one PLD that :meth:`PLD.self_compose` (and :func:`compose_plds`) compose: every stored
mass carries a relative rounding pad of up to 2**-44, and over 2**44 copies the pads alone compound to
(1 + 2**-44)**k ≥ e times the mass, so nothing useful could be certified; the composite's windows reach
2**26 points far earlier for all but the narrowest PLDs."""

DEFAULT_TAIL = 1e-18
"""The default mass cut from each tail after a composition (moved to +∞ / the lowest point, never lost)."""


def _gamma(n: int) -> float:
    """An upper bound on γₙ = n·u/(1 − n·u) (Higham 2002, Lemma 3.1)."""
    nu = n * _U
    if nu >= 0.5:
        return math.inf
    return nu / (1 - nu) * (1 + 2.0**-40)


def _exp_or_0(x: FloatArray) -> FloatArray:
    """``np.exp(x)``, the same floats, computed only where x ≥ −746: below, e^x < 2**−1076 rounds to 0, and
    numpy's exp takes a slow path for results that underflow (7 times the time per entry; most of a long
    composition's spectrum bound lies there)."""
    out = np.zeros(x.shape)
    live = np.flatnonzero(~(x < -746.0))  # (NaN stays NaN)
    out[live] = np.exp(x[live])
    return out


def _sum_bound(x: FloatArray) -> tuple[float, float]:
    """``(s, e)``: the float sum of ``x`` and a bound on its rounding error, γₙ·Σ|x| (any order)."""
    if x.size == 0:
        return 0.0, 0.0
    s = float(np.sum(x))
    return s, _gamma(x.size + 1) * float(np.sum(np.abs(x))) * (1 + 2.0**-40) + 5e-324


def _up(x: float) -> float:
    """A float above ``x`` by a few ulps (0 stays 0: a float sum of non-negative terms is 0 only if all
    are)."""
    if x == 0:
        return 0.0
    return math.nextafter(x * (1 + 2.0**-50), math.inf) if x > 0 else math.nextafter(x, math.inf)


_MULT_BITS = 20  # an aligned lattice's multiplier is below 2**20 (h within 2**-19 relative of its aim)
_EXACT = 2**53  # index·multiplier below this: the position index·h is an exact float
_MIN_ATOM = Fraction(1, 2**50)  # an atom below this keeps the plain lattice (h would leave the normal floats'
# comfortable range: found by the bad-input fuzzer, ε = 5e-324 and Δ/b = 1e-308 overflowed)


@dataclass(frozen=True)
class _Grid:
    """The lattice h·Z with h = ``mult``·2**-``bits`` (``mult`` odd, below 2**``_MULT_BITS``; 1 for the plain
    lattice 2**-bits, others for lattices aligned with a mechanism's atoms).

    Every position J·h computed in this module is an exact float: J·mult stays below 2**53 (the plain
    lattice needs only |J| < 2**53; an aligned one is refused where a composition could reach further, see
    :func:`_check_reach`). Quotients x/h are not exact unless mult = 1: :meth:`steps` gives them in a form
    whose integer comparisons and floor are exact."""

    bits: int
    mult: int = 1

    @property
    def h(self) -> float:
        """The width, an exact float."""
        return math.ldexp(float(self.mult), -self.bits)

    @property
    def exact(self) -> Fraction:
        return Fraction(self.mult, 1 << self.bits)

    def steps(self, x: float) -> float:
        """x/h where mult = 1 (exact; ±∞ where it overflows); otherwise a float s with ⌊s⌋ = ⌊x/h⌋, s an
        integer exactly where x/h is one, and s compared with any integer as x/h is (for |x/h| < 2**52:
        beyond, x/h rounded, which lies past every index a PLD holds)."""
        try:
            if self.mult == 1:
                return math.ldexp(x, self.bits)
            q = math.ldexp(x / self.mult, self.bits)
        except OverflowError:
            return math.copysign(math.inf, x)
        if not math.isfinite(q) or abs(q) >= 2.0**52:
            return q
        j = math.floor(q)  # within one of ⌊x/h⌋ (two roundings); corrected exactly
        xe, he = Fraction(x), self.exact
        while (j + 1) * he <= xe:
            j += 1
        while j * he > xe:
            j -= 1
        return float(j) if j * he == xe else j + 0.5

    def describe(self) -> str:
        return f"2**-{self.bits}" if self.mult == 1 else f"{self.mult}·2**-{self.bits}"


def _aligned_grid(bits: int, atom: Fraction) -> _Grid:
    """The lattice through the loss ``atom`` > 0 (and so, nearly, through its multiples): h ≥ atom/N with
    N = ⌈atom·2**bits⌉, rounded *up* to a multiplier of at most 2**``_MULT_BITS`` (so h ≤ 2**-bits still), so
    that N·h ≥ atom > N·h − atom·2**-19: the connect-the-dots split puts the atom's mass on N·h and one step
    below it, the share below being at most about N·2**-19 (small where N is: 1639 for Δ/b = 0.1 at 2**-14;
    for atoms of a few units and more it is not, and the plain lattice, read beside it by ``PrivacyLoss``, may
    be the tighter). (Rounded to nearest, the sliver could land one step *above* the atom,
    and at a small δ the composite's top points set ε(δ): found by review, 5 × Laplace(b = 1/3) at
    δ = 1e-9 read 15.0000047 where the plain lattice reads 14.9999999680.)"""
    n = max(1, math.ceil(atom * (1 << bits)))
    target = atom / n
    e = bits  # target·2**bits ≤ 1; the finest 2**-e that keeps the multiplier within 2**_MULT_BITS:
    while target * (1 << (e + 1)) < 1 << _MULT_BITS:
        e += 1
    mult = max(1, math.ceil(target * (1 << e)))
    while mult % 2 == 0:
        mult //= 2
        e -= 1
    return _Grid(e, mult)


def _alignment_atom(kind: str, first: Fraction, second: Fraction, bits: int) -> Fraction:
    """The loss the aligned lattice of a mechanism runs through, from its two parameters: Δ/b for
    ``"laplace"`` (Δ, b); for ``"discrete_laplace"`` (Δ, t) 1/t, every loss being a multiple of it, where that
    is at least 2**-bits, else the end atom Δ/t (the losses are closer than the lattice); ε for
    ``"randomized_response"`` (ε, k) and ``"approx"`` (ε, δ)."""
    if kind == "laplace":
        return first / second
    if kind == "discrete_laplace":
        return 1 / second if 1 / second >= Fraction(1, 1 << bits) else first / second
    return first


def _check_aligned(aligned: object) -> bool:
    if not isinstance(aligned, bool):
        raise InvalidParameter(f"aligned={aligned!r} must be True or False")
    return aligned


def _lattice(aligned: object, bits: int, kind: str, first: Fraction, second: Fraction) -> _Grid:
    """The lattice a constructor builds on: with ``aligned`` True, the one through the mechanism's atom
    (:func:`_alignment_atom`, :func:`_aligned_grid`); otherwise, or where that atom is 0 or below
    ``_MIN_ATOM``, the plain 2**-``bits``."""
    if not _check_aligned(aligned):
        return _Grid(bits)
    atom = _alignment_atom(kind, first, second, bits)
    return _aligned_grid(bits, atom) if atom >= _MIN_ATOM else _Grid(bits)


# ---------------------------------------------------------------------------------------------------------
# One side of a PLD and its composition
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Side:
    """P-masses at lattice points ``offset … offset + len(masses) - 1``, mass at +∞, and ``err``, a bound
    on the ℓ₁ distance from (masses, inf) to a vector with the side's defining property (module doc).

    On the lower side, ``nq`` (same offset and length as ``masses``) holds upper bounds on N(s) = e^{s}·Q(s),
    the scaled Q-mass of the *lumped pair* at each lattice label s, and ``masses`` lower bounds on its P(s)
    (see :meth:`PLD._delta_lumped`); ``nq_err`` bounds the ℓ₁ distance of ``nq`` from a vector with that
    property. The upper side has no ``nq``."""

    offset: int
    masses: FloatArray
    inf: float
    err: float
    nq: FloatArray | None = None
    nq_err: float = 0.0

    def norm1(self) -> float:
        """An upper bound on the ℓ₁ norm of the stored vector (masses and +∞)."""
        s = float(np.sum(np.abs(self.masses))) + abs(self.inf)
        return s * (1 + _gamma(self.masses.size + 2))


def _fft_relative(n: int) -> float:
    """Relative 2-norm error bound of one length-n FFT (Higham 2002, Thm. 24.2, safety factor 8)."""
    lg = max(1, math.ceil(math.log2(n)))
    g4 = 4 * _U / (1 - 4 * _U)
    mu = _U  # accuracy of the precomputed twiddle factors
    eta = _FFT_SAFETY * (mu + g4 * (math.sqrt(2) + mu))
    return lg * eta / (1 - lg * eta)


def _convolve(x: FloatArray, y: FloatArray) -> tuple[FloatArray, float]:
    """``(c, e)``: the float convolution of ``x`` and ``y`` and a bound ``e`` on ‖ĉ − x∗y‖₁.

    Short inputs are convolved directly. Otherwise the ``_ATOMS`` largest entries of each vector (the atoms
    of a PLD, e.g. Laplace's end points, which dominate its 2-norm) are convolved directly as shifted
    copies, and only the remainders (of small 2-norm) go through the FFT, whose error bound scales with it.
    """
    n_out = x.size + y.size - 1
    if min(x.size, y.size) <= _DIRECT_LIMIT:
        c = np.convolve(x, y)
        ax, ay = float(np.sum(np.abs(x))), float(np.sum(np.abs(y)))
        # Each entry is a sum of at most min(n) products: error ≤ γ_{min+1} Σ|xᵢ||yⱼ| (any order).
        return c, _gamma(min(x.size, y.size) + 2) * ax * ay * (1 + 2.0**-40) + 5e-324 * n_out
    ix = np.argpartition(np.abs(x), x.size - _ATOMS)[x.size - _ATOMS :]
    iy = np.argpartition(np.abs(y), y.size - _ATOMS)[y.size - _ATOMS :]
    xs, ys = x.copy(), y.copy()
    xs[ix] = 0.0
    ys[iy] = 0.0
    c, err = _fft_convolve(xs, ys, n_out)
    # x∗y = xs∗ys + x_atoms∗y + xs∗y_atoms; each entry of c then receives at most 2·_ATOMS more terms:
    # rounding ≤ γ_{2A+2}·Σ|terms| ≤ γ_{2A+2}(‖ĉ‖₁ + ‖x‖₁‖y‖₁ + ‖xs‖₁‖y‖₁) in ℓ₁.
    for i in ix:
        c[i : i + y.size] += x[i] * y
    for j in iy:
        c[j : j + x.size] += y[j] * xs
    ax, ay, axs = float(np.sum(np.abs(x))), float(np.sum(np.abs(y))), float(np.sum(np.abs(xs)))
    extra = _gamma(2 * _ATOMS + 4) * (float(np.sum(np.abs(c))) + ax * ay + axs * ay) * (1 + 2.0**-40)
    return c, err + extra + 5e-324 * n_out


_ATOMS = 32


def _fft_convolve(x: FloatArray, y: FloatArray, n_out: int) -> tuple[FloatArray, float]:
    """The FFT convolution (first ``n_out`` entries) and a bound on its ℓ₁ error (Higham 2002, Thm 24.2)."""
    size = 1 << max(1, (n_out - 1).bit_length())
    fx = np.fft.rfft(x, size)
    fy = np.fft.rfft(y, size)
    z = fx * fy
    c = np.fft.irfft(z, size)[:n_out]
    r = _fft_relative(size)
    sq = math.sqrt(size)
    n1x, n1y = float(np.sum(np.abs(x))), float(np.sum(np.abs(y)))
    n2x, n2y = float(np.linalg.norm(x)), float(np.linalg.norm(y))
    pad = 1 + 2.0**-30  # covers the rounding of these norms
    # Forward transforms: ‖X̂ − X‖₂ ≤ r‖X‖₂ = r√N‖x‖₂, and ‖X‖∞ ≤ ‖x‖₁.
    dx, dy = r * sq * n2x * pad, r * sq * n2y * pad
    inf_y = n1y * pad + dy
    # Pointwise product (complex multiply, relative error ≤ √2·γ₂ componentwise-norm): ‖Ẑ − Z‖₂.
    dz = dx * inf_y + n1x * pad * dy
    z_norm = float(np.sqrt(np.sum(np.abs(z) ** 2))) * pad * 2  # rfft holds half the spectrum
    dz += 2 * math.sqrt(2) * _gamma(2) * z_norm
    # Inverse: c = F⁻¹Z, ‖F⁻¹v‖₂ = ‖v‖₂/√N; its own rounding is r‖F⁻¹Ẑ‖₂ ≤ r‖Ẑ‖₂/√N.
    e2 = (dz + r * z_norm) / sq * pad
    return c, e2 * math.sqrt(n_out) * pad + 5e-324 * n_out


def _compose_sides(a: _Side, b: _Side, upper: bool, tail: float) -> _Side:
    c, conv_err = _convolve(a.masses, b.masses)
    sa, ea = _sum_bound(a.masses)
    sb, eb = _sum_bound(b.masses)
    # Mass at +∞: anything paired with +∞ is +∞.
    inf = a.inf * (sb + b.inf) + b.inf * sa
    inf_err = (abs(a.inf) * (eb + 4 * _U * (abs(sb) + abs(b.inf))) + abs(b.inf) * (ea + 4 * _U * abs(sa)))
    na, nb = a.norm1(), b.norm1()
    # ‖x∗y − x̂∗ŷ‖₁ ≤ ‖x − x̂‖₁‖y‖₁ + ‖x̂‖₁‖y − ŷ‖₁ (Young), with ‖y‖₁ ≤ ‖ŷ‖₁ + err_y.
    err = a.err * (nb + b.err) + na * b.err + conv_err + inf_err * 2 + 5e-324
    nq: FloatArray | None = None
    nq_err = 0.0
    if a.nq is not None and b.nq is not None:
        nq, n_conv = _convolve(a.nq, b.nq)
        nq = np.maximum(nq, 0.0)
        n_a = float(np.sum(np.abs(a.nq))) * (1 + _gamma(a.nq.size + 1))
        n_b = float(np.sum(np.abs(b.nq))) * (1 + _gamma(b.nq.size + 1))
        nq_err = _up(a.nq_err * (n_b + b.nq_err) + n_a * b.nq_err + n_conv)
    side = _Side(a.offset + b.offset, c, inf, _up(err), nq, nq_err)
    return _truncate(side, upper, tail)


def _truncate(s: _Side, upper: bool, tail: float) -> _Side:
    """Cut both tails whose computed mass is at most ``tail``: on the upper side the top goes to +∞ and the
    bottom up to the lowest kept point; on the lower side both are dropped, from P and N alike (a
    restriction of the lumped pair to fewer outputs, which only lowers δ). The float sums' rounding errors
    are added to ``err``."""
    m = s.masses
    if m.size <= 2:
        return s
    k_top = _tail_count(m[::-1], tail)  # number of top entries whose total ≤ tail
    k_bot = _tail_count(m, tail)
    k_top = min(k_top, m.size - 2)
    k_bot = min(k_bot, m.size - 2 - k_top)
    if k_top == 0 and k_bot == 0:
        return s
    keep = m[k_bot : m.size - k_top].copy()
    t_sum, t_err = _sum_bound(m[m.size - k_top :])
    b_sum, b_err = _sum_bound(m[:k_bot])
    inf = s.inf
    err = s.err + t_err + b_err
    if upper:
        inf = inf + t_sum
        keep[0] = keep[0] + b_sum
    # Lower side: dropping either tail removes non-negative true mass, so δ only falls; what the stored
    # (float, possibly noisy) entries held is covered by err already.
    err += 4 * _U * (abs(inf) + abs(keep[0]) + abs(keep[-1]))
    # the N-vector loses the same labels (a restriction of the lumped pair to fewer outcomes)
    nq = None if s.nq is None else s.nq[k_bot : m.size - k_top].copy()
    return _Side(s.offset + k_bot, keep, inf, _up(err), nq, s.nq_err)


def _tail_count(m: FloatArray, tail: float) -> int:
    """The number of leading entries of ``m`` whose float cumulative sum stays ≤ ``tail`` (growing prefixes
    are summed, so a long vector whose tail is short costs little)."""
    n = 256
    while True:
        cum = np.cumsum(m[:n])
        k = int(np.searchsorted(cum > tail, True))
        if k < cum.size or n >= m.size:
            return k
        n *= 8


# ---------------------------------------------------------------------------------------------------------
# Composition of many PLDs in the Fourier domain
# ---------------------------------------------------------------------------------------------------------

_FOURIER_MIN = 1 << 12  # the Fourier path is used when the result's full support is longer than this
ComplexArray = npt.NDArray[np.complex128]


def _fft_underflow(n: int) -> float:
    """An absolute bound on what underflow adds to any output of a length-``n`` FFT: the componentwise and
    normwise bounds are relative (Higham 2002, ch. 24, assume no underflow), and each of the at most
    4·log₂n roundings an input passes on its way to an output may lose up to 2**-1075 where its result is
    subnormal, for each of the n inputs (found by review: a direct DFT of subnormal entries lost 3e-320
    beyond its relative bound)."""
    return 4.0 * n * max(1, n.bit_length()) * 5e-324


def _fft_componentwise(n: int) -> float:
    """τ with |X̂ⱼ − Xⱼ| ≤ τ·‖x‖₁ for every output of a length-n real FFT or its inverse (times n).

    In the radix-2 algorithm every output is a sum over exactly one path per input through log₂n butterfly
    stages whose coefficients have modulus 1, and each stage has componentwise relative error η = μ +
    γ₄(√2 + μ) (Higham 2002, proof of Thm 24.2, applied componentwise), so |ΔX| ≤ ((1 + η)^t − 1)·|A|·|x|
    with |A| the all-ones matrix; two more stages cover the packing of a real input; safety factor 8."""
    stages = max(1, math.ceil(math.log2(n))) + 2
    g4 = 4 * _U / (1 - 4 * _U)
    eta = _FFT_SAFETY * (_U + g4 * (math.sqrt(2) + _U))
    return math.expm1(stages * math.log1p(eta)) * (1 + 2.0**-20)


def _cpow(x: ComplexArray, k: int) -> ComplexArray:
    """x**k by repeated squaring (relative error ≤ (1 + √2γ₂)^{2k} − 1, Higham 2002 Lemma 3.5)."""
    result: ComplexArray | None = None
    base = x
    while True:
        if k & 1:
            result = base.copy() if result is None else result * base
        k >>= 1
        if not k:
            break
        base = base * base
    assert result is not None
    return result


@dataclass(frozen=True)
class _MgfParts:
    """What :func:`_log_mgfs` reads of a side, found once for every τ a window tries: the number of entries,
    the logs of upper and lower bounds on each block's ℓ₁ mass, the nonzero entries' indices and the logs of
    their absolute values (and the largest of those in absolute value)."""

    n: int
    lw_hi: FloatArray
    lw_lo: FloatArray
    nzi: npt.NDArray[np.intp]
    lm: FloatArray
    big_lm: float

    @staticmethod
    def of(s: _Side) -> _MgfParts:
        a = np.abs(s.masses)
        n = a.size
        nb = -(-n // _MGF_BLOCK)
        padded = np.zeros(nb * _MGF_BLOCK)
        padded[:n] = a
        w = np.sum(padded.reshape(nb, _MGF_BLOCK), axis=1)
        with np.errstate(divide="ignore"):
            lw_hi = np.log(w * (1 + _gamma(_MGF_BLOCK + 1)))  # ≥ log of each block's ℓ₁ (−inf where empty)
            lw_lo = np.log(w * (1 - _gamma(_MGF_BLOCK + 1)))  # ≤ it
        nzi = np.flatnonzero(a)  # (zero entries add nothing: only the others are summed, and exp/log of 0
        lm = np.log(a[nzi])  # and −inf take numpy's slow path: 3.5 times the time on a sparse tail)
        return _MgfParts(n, lw_hi, lw_lo, nzi, lm, float(np.max(np.abs(lm))) if lm.size else 0.0)


def _log_mgfs(s: _Side, center: int, taus: FloatArray, parts: _MgfParts | None = None) -> FloatArray:
    """Upper bounds on log Σⱼ |mⱼ|·e^{τ(offset + j − center)} for each τ (the stored masses; a float entry
    may be negative, and the cyclic convolution wraps its absolute value as much as any other); ``parts``:
    the side's :class:`_MgfParts`, where the caller keeps them.

    The entries are cut into blocks of :data:`_MGF_BLOCK`. For τ > 0 a block's sum lies between its ℓ₁
    mass W times e^{τ·(its first index)} and W·e^{τ·(its last index)} (the other way round for τ < 0).
    Blocks whose upper end is below e^{−60} times the largest lower end are only bounded (their upper ends
    are added: together at most (number of blocks)·e^{−60} of the sum), the others are summed entry by
    entry. On a long side whose mass sits near its mode this sums a few blocks instead of every entry."""
    pt = _MgfParts.of(s) if parts is None else parts
    if pt.nzi.size == 0:
        return np.full(taus.size, -math.inf)
    n, lw_hi, lw_lo, nzi, lm, big_lm = pt.n, pt.lw_hi, pt.lw_lo, pt.nzi, pt.lm, pt.big_lm
    first = np.arange(lw_hi.size, dtype=np.float64) * _MGF_BLOCK + (s.offset - center)  # exact (< 2**53)
    last = np.minimum(first + (_MGF_BLOCK - 1), float(s.offset - center + n - 1))
    idx = nzi.astype(np.float64) + (s.offset - center)
    out = np.empty(taus.size)
    for i, t in enumerate(taus):
        hi_end, lo_end = (last, first) if t > 0 else (first, last)
        cb = lw_hi + t * hi_end  # log of each block's upper end
        floor = float(np.max(lw_lo + t * lo_end)) - _MGF_SKIP  # (rounded: the 60 has room to spare)
        kb = np.flatnonzero(cb >= floor)  # not empty: the block of the largest lower end is in
        # every block from the first to the last of those is summed entry by entry (one slice; a block
        # summed rather than bounded only tightens, and the gaps are empty blocks in a sparse tail)
        b0, b1 = int(kb[0]), int(kb[-1])
        reach = max(abs(float(first[b0])), abs(float(last[b1])))  # |index| of the summed entries
        i0, i1 = np.searchsorted(nzi, (b0 * _MGF_BLOCK, (b1 + 1) * _MGF_BLOCK))
        v = lm[i0:i1] + t * idx[i0:i1]
        rest = np.concatenate((cb[:b0], cb[b1 + 1 :]))
        mx = float(np.max(v))
        # The bounded blocks add at most nb·e^{−60} of the sum, so their own rounding needs no pad. Terms
        # below e^{−700} of the largest one are raised to it (an upper bound, and far below the sum's
        # rounding: the largest term is 1), which keeps numpy's exp off its slow path for results that
        # underflow (7 times the time per entry).
        total = float(np.sum(np.exp(np.maximum(v - mx, -700.0)))) + (
            float(np.sum(np.exp(np.maximum(rest - mx, -700.0)))) if rest.size else 0.0
        )
        # rounding of the products, exps, the sum (γₙ relative) and the log, padded generously: |v| and |mx|
        # are at most big_lm + |τ|·reach
        out[i] = mx + math.log(total) + 1e-9 + 3e-12 * (big_lm + abs(t) * reach)
    return out


def _fourier_power(
    items: Sequence[tuple[FloatArray, int]], size: int, ld_tol: float = 0.0
) -> tuple[FloatArray, float]:
    """:func:`_fourier_power_body`; running out of memory says what to change (found at σ = 0.125, rate
    0.01, 1000 steps: a window of 2**25 points peaked at 2.5 GB, and with less memory numpy's MemoryError
    came after 27 s with no message)."""
    with memory.refuse_out_of_memory(*out_of_memory(size, len(items))):
        return _fourier_power_body(items, size, ld_tol)


def out_of_memory(size: int, distinct: int = 1) -> tuple[str, str]:
    """What ran out of memory and what to change, for ``refuse_out_of_memory``, where a composition's
    FFT window of ``size`` points (of ``distinct`` vectors) did not fit."""
    return (
        f"composing these PLDs in an FFT window of {size} lattice points (about "
        f"{memory.gib(memory.window_bytes(size, distinct))} at its peak)",
        "build the PLDs with a smaller step_bits (one bit fewer halves the window and the memory)",
    )


def _fourier_power_body(
    items: Sequence[tuple[FloatArray, int]], size: int, ld_tol: float
) -> tuple[FloatArray, float]:
    """``(c, e)``: the cyclic convolution (length ``size``, a power of two) of ``kᵢ`` copies of each vector
    ``xᵢ`` — Ẑ = Πᵢ X̂ᵢ^{kᵢ} by one real FFT per vector — and a bound ``e`` on its ℓ₁ float error.

    ``ld_tol``: an error bound below this share of the total mass is small enough; more low frequencies than
    ``_LD_MAX_FREQ`` are not recomputed to lower it (the tilted composites, whose total is about 1 and whose
    error is relative to δ, pass ``_pld_tilt._LD_TOL``).

    The forward transforms are bounded componentwise (:func:`_fft_componentwise`); where Π|Xᵢ|^{kᵢ} is not
    negligible at the low frequencies the spectra and powers are recomputed in long double
    (:func:`_ld_dft`, :func:`_ld_power`); |Πaᵢ − Πbᵢ| ≤ Σᵢ|aᵢ − bᵢ|·Π_{l≠i} max(|aₗ|, |bₗ|) for the powers;
    the inverse transform is bounded normwise (Higham 2002, Thm 24.2) and turned into ℓ₁ by Cauchy–Schwarz:
    ``e`` bounds the 2-norm of the error in the frequency domain, so ``e``/√size bounds its 2-norm in the
    time domain (``_pld_tilt`` uses that) and ``e`` its ℓ₁ norm.
    """
    tau_fft = _fft_componentwise(size)
    half = size // 2 + 1
    # Each vector's spectrum is kept between the two passes below where all of them fit in SPECTRA_BYTES;
    # otherwise it is computed again in the second pass (the same arithmetic, so the same numbers), and
    # the memory held no longer grows with the number of distinct vectors (found measuring: 300 distinct
    # Laplace steps held 12 MB each at a window of 2**20 points, 3,000 ran out of memory).
    keep_spectra = len(items) * half * memory.SPECTRUM_BYTES <= memory.SPECTRA_BYTES
    kept: list[tuple[ComplexArray, FloatArray]] = []

    def folded(g: int) -> tuple[FloatArray, float]:
        """Vector ``g`` folded onto the window (itself where it fits) and the folding's ℓ₁ error."""
        x = items[g][0]
        if x.size <= size:
            return x, 0.0
        buf = np.zeros(size)
        folds = 0
        for st in range(0, x.size, size):
            seg = x[st : st + size]
            buf[: seg.size] += seg
            folds += 1
        return buf, _gamma(folds + 1) * float(np.sum(np.abs(x)))

    def spectrum(g: int) -> tuple[ComplexArray, FloatArray]:
        """``(fx, e)``: vector ``g``'s spectrum and the componentwise error bound of each frequency (fresh
        arrays, except where kept)."""
        if g < len(kept):
            return kept[g]
        x0 = items[g][0]
        x, fold_err = folded(g)
        fx = np.fft.rfft(x, size)
        n1 = float(np.sum(np.abs(x0))) * (1 + _gamma(x0.size + 1))
        e = np.full(half, tau_fft * n1 + fold_err + _fft_underflow(size))
        return fx, e

    def add_bounds(log_b: FloatArray, rel: FloatArray, fx: ComplexArray, e: FloatArray, k: int) -> None:
        """log_b += log(|X̂|(1 + 4u) + e)^k and rel += k·e/(…) on the first ``log_b.size`` frequencies:
        summed over the vectors, log Π(|X̂ᵢ|(1 + 4u) + eᵢ)^{kᵢ} ≥ log|Z| and Σᵢ kᵢeᵢ/(…)."""
        n = log_b.size
        a = np.abs(fx[:n]) * (1 + 4 * _U) + e[:n]
        log_b += k * np.log(a)
        rel += k * e[:n] / a

    def first_pass() -> tuple[FloatArray, FloatArray]:
        log_b, rel = np.zeros(half), np.zeros(half)
        for g, (_, k) in enumerate(items):
            fx, e = spectrum(g)
            add_bounds(log_b, rel, fx, e, k)
            if keep_spectra:
                kept.append((fx, e))
        return log_b, rel

    log_bound, rel_sum = first_pass()
    with np.errstate(over="ignore"):
        b_abs = _exp_or_0(log_bound)  # the bound on |Z| itself
    # Where Π|X|^k is not negligible (the low frequencies, for long compositions), recompute the spectra
    # and their powers directly in extended precision: there the FFT's error bound, amplified k-fold, and
    # the k-fold growth of the rounding of repeated squaring would dominate.
    count = 0
    ld_vals: dict[int, npt.NDArray[np.clongdouble]] = {}
    ld_errs: dict[int, FloatArray] = {}
    # only vectors raised to a power of at least _LD_MIN_POWER are recomputed: the error of a vector used
    # once or a few times is not amplified, and a wide one (a composite) would exhaust the work budget
    chosen = [g for g, (_, k) in enumerate(items) if k >= _LD_MIN_POWER]
    if _LD_OK and chosen:
        with np.errstate(over="ignore", under="ignore"):
            c2 = (b_abs * rel_sum) ** 2
        c2_sum = float(np.sum(c2))
        if c2_sum > 0:
            # the frequencies holding all but 1e-8 of the squared error, or the largest-error low ones
            # (errors fall with frequency for a smooth composite), within a work budget: up to _LD_MAX_FREQ,
            # or up to _LD_WIDE_FREQ where the heads are narrow enough for that to stay cheap (a small
            # sampling rate: a step's mass on a few hundred entries, its spectrum near 1 over thousands of
            # frequencies at 10⁶ steps)
            heads = [_head_range(folded(g)[0], _LD_HEAD) for g in chosen]
            per_freq = max(1, sum(b - a for a, b in heads))
            cap = max(_LD_MAX_FREQ, min(_LD_WIDE_FREQ, _LD_CHEAP_WORK // per_freq))
            # the squared error from each frequency i ≤ cap on (only those can be chosen), falling with i (an
            # infinite total, from overflowing bounds: the suffix sums themselves, which are then infinite)
            if math.isfinite(c2_sum):
                tail_sq = c2_sum - np.concatenate(([0.0], np.cumsum(c2[:cap])))
            else:
                tail_sq = np.cumsum(c2[::-1])[::-1]
            count = min(int(np.searchsorted(-tail_sq, -1e-8 * c2_sum)), cap)
            if count > _LD_MAX_FREQ:
                # ... but only where that lowers the whole error bound: the frequencies not recomputed keep
                # theirs (the powers' rounding, the bound itself where Z is set to 0), which can dominate
                # (1000 × Laplace(100): 3039 frequencies took 39 of 42 ms and lowered the bound by 4%; at q
                # = 1e-5 over 10⁶ steps the wide set lowers it 400-fold and narrows the interval by 0.1%)
                rho_est = math.expm1(
                    sum(2 * k + 1 for _, k in items) * math.log1p(math.sqrt(2) * _gamma(2))
                )
                with np.errstate(over="ignore", under="ignore", invalid="ignore"):
                    d2 = np.where(log_bound > _LOG_NEGLIGIBLE, b_abs * (rel_sum + rho_est), b_abs) ** 2
                    floor = _fft_relative(size) * math.sqrt(2 * float(np.sum(b_abs * b_abs)))
                left = np.sqrt(2 * np.cumsum(d2[::-1])[::-1])  # (the inverse transform's rounding: floor)
                wide = (float(left[count]) if count < half else 0.0) + floor
                narrow = float(left[_LD_MAX_FREQ]) + floor
                if not narrow > _LD_WIDE_GAIN * wide or narrow <= ld_tol * float(b_abs[0]):
                    count = _LD_MAX_FREQ
            work = count * per_freq
            if count <= 0 or work > _LD_MAX_WORK:
                count = 0
            else:
                for g, head in zip(chosen, heads, strict=True):
                    x, fold_err = folded(g)
                    vals, errs = _ld_dft(x, size, count, head)
                    ld_vals[g] = vals
                    ld_errs[g] = errs + fold_err
    z: ComplexArray | None = None
    n_mult = 0
    rho_low = np.zeros(count)
    rho_plain = 0.0  # the double powers' relative error at the low frequencies of the vectors not recomputed
    # Frequencies whose bound on |Z| = Π|Xᵢ|^{kᵢ} is negligible are set to 0 (no power is computed there):
    # the bound then is the error itself, |0 − Z| ≤ Π(|X̂ᵢ|(1 + 4u) + eᵢ)^{kᵢ} (below).
    keep = np.flatnonzero(log_bound > _LOG_NEGLIGIBLE)
    keep = keep[keep >= count]
    # the bounds on the first ``count`` frequencies, with the long double spectra and errors where recomputed
    low_bound, low_rel = np.zeros(count), np.zeros(count)
    for g, (_, k) in enumerate(items):
        fx, e = spectrum(g)
        if count and g in ld_vals:  # (fx and e are this call's own: changed in place)
            fx[:count] = ld_vals[g].astype(np.complex128)
            e[:count] = ld_errs[g]
        if count:
            add_bounds(low_bound, low_rel, fx, e, k)
        pw = np.zeros(half, dtype=np.complex128)
        pw[keep] = _cpow(fx[keep], k)
        if count and g in ld_vals:
            pw[:count], rho_g = _ld_power(ld_vals[g], k)
            rho_low += rho_g
        elif count:
            pw[:count] = _cpow(fx[:count], k)
            rho_plain += math.expm1((2 * k + 1) * math.log1p(math.sqrt(2) * _gamma(2))) * (1 + 2.0**-20)
        z = pw if z is None else z * pw
        n_mult += 2 * k + 1
    if count:
        log_bound[:count], rel_sum[:count] = low_bound, low_rel  # only these changed
        with np.errstate(over="ignore", under="ignore"):
            b_abs[:count] = np.exp(log_bound[:count])
    kept.clear()
    assert z is not None
    dropped = np.ones(half, dtype=bool)
    dropped[keep] = False
    dropped[:count] = False
    rho = math.expm1(n_mult * math.log1p(math.sqrt(2) * _gamma(2))) * (1 + 2.0**-20)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        dz = b_abs * (1 + 1e-10) * (rel_sum * (1 + 1e-10) + rho)
        if count:
            # Π of the long double powers: their relative errors add (to first order; padded), plus the
            # complex128 products of the groups
            g = len(items)
            rho_c = (rho_low + rho_plain) * (1 + 1e-3) + math.expm1(
                g * math.log1p(math.sqrt(2) * _gamma(2))
            ) * 1.01
            rho_c = np.where(rho_low < 1e-3, rho_c, np.inf)
            dz[:count] = b_abs[:count] * (1 + 1e-10) * (rel_sum[:count] * (1 + 1e-10) + rho_c)
        dz = np.where(dropped, b_abs * (1 + 1e-10), dz)
    dz = np.where(np.isnan(dz), np.inf, dz)
    # full spectrum = this half and its conjugate mirror (≤ twice the half's squared norm)
    with np.errstate(over="ignore"):  # (an overflow is an infinite bound: the side then bounds nothing)
        dz2 = math.sqrt(2 * float(np.sum(dz * dz))) * (1 + 1e-10)
        z2 = math.sqrt(2 * float(np.sum(z.real**2 + z.imag**2))) * (1 + 1e-10)
    c = np.fft.irfft(z, size)
    # ‖F⁻¹v‖₂ = ‖v‖₂/√N and ℓ₁ ≤ √N·ℓ₂ on N entries; inverse rounding ≤ r‖Ẑ‖₂/√N (Thm 24.2).
    fft_err = (dz2 + _fft_relative(size) * z2) * (1 + 1e-10)
    return c, fft_err


def _totals(items: Sequence[tuple[_Side, int]], upper: bool) -> tuple[float, float, bool]:
    """``(inf, err_in, zero)`` for the composition of ``kᵢ`` copies of each side: its mass at +∞ (anything
    paired with +∞ is +∞; rounded up on the upper side, down on the lower), the ℓ₁ error the sides' own
    ``err`` carry into it, and whether some side has no finite mass (then all the mass is at +∞)."""
    log_fin = 0.0
    log_all = 0.0  # log Π(sᵢ + infᵢ)^{kᵢ} − log Π sᵢ^{kᵢ} accumulated as Σ k·log1p(inf/s)
    log_norm = 0.0
    log_norm_err = 0.0
    zero_fin = False
    for sd, k in items:
        fs, fe = _sum_bound(sd.masses)
        f = fs + fe if upper else max(0.0, fs - fe)
        if f <= 0:
            zero_fin = True
        else:
            log_fin += k * math.log(f)
            log_all += k * math.log1p(sd.inf / f)
        n1 = sd.norm1()
        log_norm += k * math.log(n1) if n1 > 0 else -math.inf
        log_norm_err += k * math.log1p(sd.err / n1) if n1 > 0 else 0.0
    # (products that overflow are +∞ on the side of upper bounds and 0 on that of lower ones: found by the
    # issue's review, 2**64 copies of a Laplace PLD raised a raw OverflowError here)
    if zero_fin:
        tot = _exp_or_inf(lambda: math.exp(sum(k * math.log(max(sd.norm1(), 5e-324)) for sd, k in items)))
        err = _exp_or_inf(lambda: math.expm1(log_norm_err) * math.exp(log_norm) * (1 + 1e-12))
        return (tot * (1 + 1e-12) if upper else 0.0), (err if math.isfinite(log_norm) else 0.0), True
    if upper:
        inf = _exp_or_inf(lambda: math.exp(log_fin) * math.expm1(log_all) * (1 + 1e-12))
    else:
        inf = _exp_or_inf(lambda: max(0.0, math.exp(log_fin) * math.expm1(log_all) * (1 - 1e-12)), 0.0)
    # ‖Π v^{*k} − Π x̂^{*k}‖₁ ≤ Π(‖x̂‖₁ + err)^k − Π‖x̂‖₁^k (telescoping, Young's inequality).
    err_in = _exp_or_inf(lambda: math.exp(log_norm) * math.expm1(log_norm_err) * (1 + 1e-12))
    return inf, (err_in if math.isfinite(log_norm) else 0.0), False


def _exp_or_inf(value: Callable[[], float], overflow: float = math.inf) -> float:
    """``value()``, or ``overflow`` where it overflows (+∞ for an upper bound, 0 for a lower one)."""
    try:
        return value()
    except OverflowError:
        return overflow


def _moments(m: FloatArray) -> tuple[float, float, float]:
    """``(tot, mu, ss)``: the total of the masses ``m`` (with mass), their mean index and their sum of squared
    deviations from it, ss/tot their variance (only to choose windows and paths)."""
    tot = float(np.sum(m))
    pos = np.arange(m.size, dtype=np.float64)
    mu = float(np.sum(m * pos)) / tot
    return tot, mu, float(np.sum(m * (pos - mu) ** 2))


def _window(
    items: Sequence[tuple[_Side, int]], base: int, full_len: int, tail: float
) -> tuple[int, int, float, float]:
    """``(lo, hi, top, bot)``: a window [lo, hi] of lattice indices for the composition of ``kᵢ`` copies of
    each side (whose full support is [base, base + full_len)), cut by Chernoff bounds P(S ≥ T) ≤
    E[e^{τS}]e^{−τT} on the composed (unnormalised) stored masses, with ``top`` and ``bot`` bounds on
    those masses above ``hi`` and below ``lo`` (0 where nothing is cut), each at most ``tail``."""
    b_lo, b_hi = base, base + full_len - 1
    top_bound = bot_bound = 0.0
    if full_len > _FFT_MAX_DIRECT_WINDOW and tail > 0:
        mean = 0.0
        var = 0.0
        centers = []  # each side's mean, rounded: its τ-bounds are centred there
        for sd, k in items:
            tot, mu, ss = _moments(sd.masses)
            mean += k * (mu + sd.offset)
            var += k * ss / tot
            centers.append(round(sd.offset + mu))
        sd_tot = math.sqrt(max(var, 1.0))
        t0 = math.sqrt(2 * math.log(1 / tail)) / sd_tot
        center = round(mean)

        parts = [_MgfParts.of(sd) for sd, _ in items]

        def log_mgf(taus: FloatArray) -> FloatArray:
            """log E e^{τ(S − center)} = Σ k·log E e^{τ(Sᵢ − cᵢ)} + τ(Σ k cᵢ − center), bounded above."""
            out = -taus * center
            for (sd, k), c_i, pt in zip(items, centers, parts, strict=True):
                out = out + k * _log_mgfs(sd, c_i, taus, pt) + taus * (k * c_i)
            return out

        log_tail = math.log(tail)
        # τ = ±t0·2^{i/2}, i = −20 … 4 (heavy one-sided tails need a small τ): every fourth first, then a
        # step of 2^{±1} and of 2^{±1/2} around the best cut so far, for each sign. Any τ gives a valid cut;
        # this finds the grid's best where the cut is unimodal in τ, with 22 bounds instead of 50.
        coarse = t0 * 2.0 ** np.arange(-10.0, 2.5, 2.0)
        taus = np.concatenate([coarse, -coarse])
        total = log_mgf(taus)
        for step in (1.0, 0.5):
            more = []
            for sign in (1.0, -1.0):
                at = taus * sign > 0
                cuts = (total[at] - log_tail) / np.abs(taus[at])  # the cut's distance from the centre
                best = float(np.abs(taus[at])[int(np.argmin(cuts))])
                grid = math.log2(best / t0)
                more += [sign * best * 2.0**e for e in (-step, step) if -10.0 <= grid + e <= 2.0]
            if more:
                extra = np.array(more)
                taus = np.concatenate([taus, extra])
                total = np.concatenate([total, log_mgf(extra)])
        pos_t = taus > 0
        # top: least T with total − τ(T − center) ≤ log tail
        t_cands = center + np.ceil((total[pos_t] - log_tail) / taus[pos_t])
        i_top = int(np.argmin(t_cands))
        top = min(int(t_cands[i_top]), b_hi)
        b_cands = center + np.floor((total[~pos_t] - log_tail) / taus[~pos_t])
        i_bot = int(np.argmax(b_cands))
        bot = max(int(b_cands[i_bot]), b_lo)
        if top > bot:
            if top < b_hi:
                tau = float(taus[pos_t][i_top])
                top_bound = math.exp(float(total[pos_t][i_top]) - tau * (top - center)) * (1 + 1e-9)
            if bot > b_lo:
                tau = float(taus[~pos_t][i_bot])
                bot_bound = math.exp(float(total[~pos_t][i_bot]) - tau * (bot - center)) * (1 + 1e-9)
            b_lo, b_hi = bot, top
    return b_lo, b_hi, top_bound, bot_bound


def _compose_many(
    items: Sequence[tuple[_Side, int]], upper: bool, tail: float, step_bits: int | None = None
) -> _Side:
    """The composition of ``kᵢ`` copies of each side, by one FFT per distinct side: Ẑ = Πᵢ X̂ᵢ^{kᵢ}.

    The result is computed on a window [B, B + N) of the lattice chosen by Chernoff bounds on the composed
    (unnormalised) masses, P(S ≥ T) ≤ E[e^{τS}]e^{−τT} (τ > 0, and τ < 0 for the bottom), so that the mass
    outside is at most ``tail``; that mass wraps around the cyclic convolution. On the upper side it is
    added once more at +∞ (top) and at the lowest point (bottom): the wrapped copy is extra non-negative
    mass, which only raises δ. On the lower side its ℓ₁ size is added to ``err``. The floating-point error
    is bounded componentwise in the frequency domain (:func:`_fft_componentwise` for the forward
    transforms; |Πaᵢ − Πbᵢ| ≤ Σᵢ|aᵢ − bᵢ|·Π_{l≠i} max(|aₗ|, |bₗ|) for the powers) and normwise for the
    inverse transform (Higham 2002, Thm 24.2), then turned into ℓ₁ by Cauchy–Schwarz.
    """
    base = sum(k * sd.offset for sd, k in items)
    full_len = sum(k * (sd.masses.size - 1) for sd, k in items) + 1
    inf, err_in, zero_fin = _totals(items, upper)
    if zero_fin:  # no finite mass on some side: the product of totals is all at +∞
        return _Side(0, np.zeros(1), inf, _up(err_in), None if upper else np.zeros(1))

    # The window.
    b_lo, b_hi, top_bound, bot_bound = _window(items, base, full_len, tail)
    width = b_hi - b_lo + 1
    size = 1 << max(1, (width - 1).bit_length())
    _check_window(size, step_bits, len(items), not upper)
    if size >= full_len:  # no wrap-around at all: the whole support fits
        b_lo = base
        top_bound = bot_bound = 0.0
    c, fft_err = _fourier_power([(sd.masses, k) for sd, k in items], size)
    c = np.roll(c, (base - b_lo) % size)
    c = np.maximum(c, 0.0)  # true masses are ≥ 0: clipping never moves an entry away from them
    nq: FloatArray | None = None
    nq_err = 0.0
    if not upper and all(sd.nq is not None for sd, _ in items):
        # the lumped pair's N-vector on the same window: its wrapped mass only adds (it is an upper bound)
        n_items = [(sd.nq, k) for sd, k in items if sd.nq is not None]
        nc, n_fft = _fourier_power(n_items, size)
        nq = np.maximum(np.roll(nc, (base - b_lo) % size), 0.0)
        log_n = log_ne = 0.0
        for sd, k in items:
            assert sd.nq is not None
            n1 = float(np.sum(np.abs(sd.nq))) * (1 + _gamma(sd.nq.size + 1))
            log_n += k * math.log(n1) if n1 > 0 else -math.inf
            log_ne += k * math.log1p(sd.nq_err / n1) if n1 > 0 else 0.0
        nq_in = math.exp(log_n) * math.expm1(log_ne) * (1 + 1e-12) if math.isfinite(log_n) else 0.0
        nq_err = _up(nq_in + n_fft)
    err = err_in + fft_err
    if upper:
        inf = inf + top_bound
        c[0] += bot_bound
        err += 4 * _U * (inf + c[0])
    else:
        err += top_bound + bot_bound
    side = _trim(_Side(b_lo, c, _up(inf) if upper else inf, _up(err), nq, nq_err))
    return _truncate(side, upper, tail)


_MGF_BLOCK = 256  # :func:`_log_mgfs` bounds blocks of this many entries
_MGF_SKIP = 60.0  # ... and sums entry by entry only those within e^{60} of the largest block bound
_LOG_NEGLIGIBLE = math.log(1e-40)  # frequencies with |Z| ≤ 1e-40 are dropped (their error is |Z| itself)
_FFT_MAX_DIRECT_WINDOW = 1 << 14  # below this full support length no window is cut
_LD_MIN_POWER = 4  # vectors raised to a smaller power keep their double spectrum
_LD_MAX_FREQ = 256  # at most this many low frequencies are recomputed in extended precision
_LD_WIDE_FREQ = 4096  # ... or this many where that costs at most _LD_CHEAP_WORK (frequencies × head entries)
_LD_CHEAP_WORK = 1_000_000
_LD_WIDE_GAIN = 4.0  # the wide set is used only where the narrow one leaves this many times the floor
_LD_MAX_WORK = 4_000_000  # ... and only if (frequencies × non-zero inputs) is at most this
_LD_U = float(np.finfo(np.longdouble).epsneg)  # unit roundoff of numpy's long double
_LD_OK = _LD_U < 2.0**-60  # extended precision available (x87 80-bit or quad)


_LD_FUNC = 2.0**9 * _LD_U  # assumed relative accuracy of long double cosl/sinl/expl/logl/hypotl/atan2l


def _ld_sum_rows(v: npt.NDArray[Any]) -> tuple[npt.NDArray[Any], int]:
    """Long double sums of the rows of a matrix, each in two levels (blocks of 256, then the block sums),
    and the m of their error bound γ_m·Σ|vᵢ| (Higham 2002, eq. (4.4), for each level in any order)."""
    rows, n = v.shape
    blk = 256
    pad = (-n) % blk
    if pad:
        v = np.concatenate([v, np.zeros((rows, pad), dtype=v.dtype)], axis=1)
    part = v.reshape(rows, -1, blk).sum(axis=2)
    return part.sum(axis=1), blk + part.shape[1]


def _ld_dft(
    x: FloatArray, size: int, count: int, head: tuple[int, int] | None = None
) -> tuple[npt.NDArray[np.clongdouble], FloatArray]:
    """The first ``count`` outputs of the length-``size`` DFT of ``x`` (Σₙ xₙe^{−2πi jn/size}) in long
    double, and bounds on their absolute errors.

    With m = jn mod size (exact integers) split as m = a·B + b, e^{−2πi m/size} is the product of two table
    entries computed by cosl/sinl (assumed within 2^9 ulps) at angles 2π·aB/size and 2π·b/size (relative
    error ≤ 2u_ld each; |d e^{iθ}/dθ| = 1), so each factor has relative error ≤ 2(ε_f + 4πu_ld) + √2γ₂; the
    products and the two-level sum (:func:`_ld_sum_rows`) add the rest (Higham 2002, eq. (4.4), Lemma 3.5).
    (For sizes up to ``_LD_TABLE_MAX`` the products are tabulated once per size: :func:`_ld_unit_roots`.)

    Only the *head* of ``x`` is summed so — the shortest index range outside which the entries' ℓ₁ mass is
    at most ``_LD_HEAD``·‖x‖₁ (``head``, where the caller has it already: :func:`_head_range`). The rest,
    the tails, of small ℓ₁ mass ‖t‖₁, is summed in double: directly where its nonzero entries are few
    (``count`` × their number at most ``size``, cheaper than a transform of the whole window; a thin step's
    tail), with the table's roots rounded to double (within u more) and each output within
    (ρ + 2u + γₙ)·‖t‖₁ per part, ρ the long double roots' bound below; otherwise by the double real FFT,
    whose every output is within τ·‖t‖₁ (:func:`_fft_componentwise`). Either is small because ‖t‖₁ is;
    adding it to the head's sum rounds once more in long double.
    """
    ld = np.longdouble
    a, b = _head_range(x, _LD_HEAD) if head is None else head
    nz = np.flatnonzero(x)
    in_head = (nz >= a) & (nz < b)
    tail_nz = nz[~in_head]
    nz = nz[in_head]
    xl = x[nz].astype(ld)
    roots = _ld_unit_roots(size) if size <= _LD_TABLE_MAX else None
    if roots is None:
        t_hi, t_lo, blk = _ld_root_factors(size)
    out = np.empty(count, dtype=np.clongdouble)
    m_terms = 0
    rows = max(1, (1 << 16) // max(1, nz.size))  # frequencies per pass (a few MB of long doubles)
    for j0 in range(0, count, rows):
        js = np.arange(j0, min(count, j0 + rows), dtype=np.int64)
        m = (js[:, None] * nz[None, :]) % size  # exact: j·n < 2**63
        if roots is None:
            w = t_hi[m // blk] * t_lo[m % blk]
            w_re, w_im = w.real, w.imag
        else:
            w_re, w_im = roots[0][m], roots[1][m]
        re, m1 = _ld_sum_rows(xl * w_re)
        im, m2 = _ld_sum_rows(xl * w_im)
        out[j0 : j0 + js.size] = re + 1j * im
        m_terms = max(m_terms, m1, m2)
    u = _LD_U
    g2 = math.sqrt(2) * 2 * u / (1 - 2 * u)
    per_term = 2 * (_LD_FUNC + 8 * math.pi * u) + g2 + 4 * u
    sum_rel = (m_terms + 2) * u / (1 - (m_terms + 2) * u)
    n1 = float(np.sum(np.abs(x[a:b]))) * (1 + _gamma(b - a + 1))
    errs = np.full(count, n1 * (per_term + sum_rel) * 2 * (1 + 1e-6) + 5e-324)  # (× 2: real and imaginary)
    if tail_nz.size and roots is not None and count * tail_nz.size <= size:
        tv = x[tail_nz]
        t1 = float(np.sum(np.abs(tv))) * (1 + _gamma(tail_nz.size + 1))
        re64, im64 = _unit_roots64(size)
        for j0 in range(0, count, rows):
            js = np.arange(j0, min(count, j0 + rows), dtype=np.int64)
            m = (js[:, None] * tail_nz[None, :]) % size
            out[j0 : j0 + js.size] += (np.sum(tv * re64[m], axis=1).astype(ld)
                                       + 1j * np.sum(tv * im64[m], axis=1).astype(ld))
        # each part: the roots (long double bound, then rounded to double), the product, the double sum
        # (Higham 2002, Lemma 3.1: any order), then the long double addition; a product or partial sum in
        # the subnormal range may lose up to 2**-1075 more (found by review: a tail of 5e-324 entries)
        per_t = per_term + 2 * _U + _gamma(tail_nz.size + 1)
        errs = errs + t1 * per_t * 2 * (1 + 1e-6) + (n1 + t1) * 4 * u + 4 * tail_nz.size * 5e-324
    elif a > 0 or b < x.size:
        t = x.copy()
        t[a:b] = 0.0
        t1 = float(np.sum(np.abs(t))) * (1 + _gamma(x.size + 1))
        spec = np.fft.rfft(t, size)[:count]
        out += spec.real.astype(ld) + 1j * spec.imag.astype(ld)
        # the FFT's componentwise bound (real and imaginary parts within it), the long double addition
        errs = errs + t1 * _fft_componentwise(size) * 2 + (n1 + t1) * 4 * u + _fft_underflow(size)
    return out, errs


@functools.lru_cache(maxsize=3)
def _unit_roots64(size: int) -> tuple[FloatArray, FloatArray]:
    """:func:`_ld_unit_roots` rounded to double (each part within u of the long double one)."""
    re, im = _ld_unit_roots(size)
    re64, im64 = re.astype(np.float64), im.astype(np.float64)
    re64.flags.writeable = False
    im64.flags.writeable = False
    return re64, im64


def _ld_root_factors(size: int) -> tuple[npt.NDArray[np.clongdouble], npt.NDArray[np.clongdouble], int]:
    """``(t_hi, t_lo, B)``: e^{−2πi·aB/size} and e^{−2πi·b/size} in long double (cosl/sinl at the long
    double angle), for a < size/B + 1 and b < B; their products are the size-th roots of unity
    (:func:`_ld_dft`)."""
    ld = np.longdouble
    two_pi_n = np.arctan(ld(1)) * 8 / ld(size)
    blk = 1 << max(1, (size.bit_length() - 1) // 2)
    t_lo = np.exp(-1j * (np.arange(blk).astype(ld) * two_pi_n))
    t_hi = np.exp(-1j * (np.arange(size // blk + 1).astype(ld) * (two_pi_n * blk)))
    return t_hi, t_lo, blk


_LD_TABLE_MAX = 1 << 18  # sizes whose roots of unity are tabulated (8 MB of long doubles at the largest)


@functools.lru_cache(maxsize=3)
def _ld_unit_roots(size: int) -> tuple[npt.NDArray[np.longdouble], npt.NDArray[np.longdouble]]:
    """The real and imaginary parts of e^{−2πi·m/size} for every m < size, each the same long double product
    of :func:`_ld_root_factors`' two entries that :func:`_ld_dft` would form (so the same numbers and error
    bound), computed once per size: like an FFT plan, they depend on nothing but the size (about 10 ms to
    build at 2**18, against 3 ms per later use)."""
    t_hi, t_lo, blk = _ld_root_factors(size)
    m = np.arange(size)
    w = t_hi[m // blk] * t_lo[m % blk]
    re, im = w.real.copy(), w.imag.copy()
    re.flags.writeable = False
    im.flags.writeable = False
    return re, im


_LD_HEAD = 1e-6  # the ℓ₁ share of x left out of the long double head (summed in double instead)


def _head_range(x: FloatArray, share: float) -> tuple[int, int]:
    """``(a, b)``: a short index range with Σ_{i∉[a,b)} |xᵢ| ≤ share·Σ|xᵢ| (up to rounding, which only moves
    the split; every entry is summed on one side or the other)."""
    if x.size < 4096:
        return 0, x.size
    prefix = np.cumsum(np.abs(x))
    tot = float(prefix[-1])
    if not tot > 0:
        return 0, x.size
    cut = share * tot / 2
    a = int(np.searchsorted(prefix, cut, side="right"))
    # the tail from b on, tot − prefix[b − 1], is at most cut from the first b with prefix[b − 1] ≥ tot − cut
    b = int(np.searchsorted(prefix, tot - cut, side="left")) + 1
    return (a, b) if a < b else (0, x.size)


def _ld_power(v: npt.NDArray[np.clongdouble], k: int) -> tuple[ComplexArray, FloatArray]:
    """v**k in polar form in long double (|v|^k = e^{k·log|v|}, angle k·arg v), rounded to complex128,
    and a bound on the relative error of the computation (not of v)."""
    r = np.abs(v)
    th = np.angle(v)
    with np.errstate(divide="ignore", under="ignore", over="ignore"):
        lr = np.log(r)
        big_r = np.exp(k * lr)
    phi = k * th
    out = (big_r * (np.cos(phi) + 1j * np.sin(phi))).astype(np.complex128)
    f, u = _LD_FUNC, _LD_U
    lr_f = np.abs(lr.astype(np.float64))
    th_f = np.abs(th.astype(np.float64))
    d_log = k * (2 * f + f * lr_f) + u * k * lr_f + u  # |Δ(k·log r)|
    d_r = np.expm1(np.minimum(d_log, 1.0)) * (1 + 1e-6) + f
    d_phi = k * (2 * f * th_f + f) + u * k * th_f + 2 * f + 2 * u
    rho = (d_r + d_phi + d_r * d_phi) * (1 + 1e-6) + 2 * _U
    rho = np.where(np.isfinite(rho) & (r > 0), rho, np.inf)
    return out, rho


# ---------------------------------------------------------------------------------------------------------
# The PLD
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class PLD:
    """A privacy loss distribution on the lattice ``step·Z`` with a certified upper and lower side.

    Build one with :func:`pld_laplace`, :func:`pld_discrete_laplace`, :func:`pld_gaussian`,
    :func:`pld_discrete_gaussian`, :func:`pld_randomized_response` or :func:`pld_approx`; compose with
    :meth:`compose`, :meth:`self_compose` or :func:`compose_plds`; read δ(ε) and ε(δ) with
    :meth:`delta_bounds` / :meth:`epsilon_bounds` (or the upper ends :meth:`delta` / :meth:`epsilon`).
    The theory and the certificate are described in the module docstring.

    Attributes:
        step_bits: the lattice width is ``step_mult·2**-step_bits``.
        tail: the tail mass cut after each composition (see :data:`DEFAULT_TAIL`).
        description: what was composed (for display).

    Source: Koskela–Jälkö–Honkela 2020; Koskela–Jälkö–Prediger–Honkela 2021; Meiser–Mohammadi 2018;
    Doroshenko–Ghazi–Kamath–Kumar–Manurangsi 2022 (connect the dots); Zhu–Dong–Wang 2022 Thm 10.

    Examples:
        >>> from dpcompose.accounting import pld_randomized_response
        >>> pld = pld_randomized_response(1.0).self_compose(3)
        >>> lo, hi = pld.delta_bounds(1.0)
        >>> lo <= hi
        True
    """

    step_bits: int
    _upper: _Side | None
    _lower: _Side | None
    tail: float = DEFAULT_TAIL
    description: str = field(default="")
    gaussian: tuple[float, float, float] | None = field(default=None, repr=False)
    """Set only for Gaussian mechanisms and their compositions, to (μ_hi, width, μ_lo) with μ_lo ≤ ‖Δ/σ‖₂ ≤
    μ_hi; used to compose Gaussians exactly (see :func:`compose_plds`) and to read δ and ε from the closed
    form."""
    reverse: PLD | None = field(default=None, repr=False)
    """Set only for an asymmetric mechanism (a subsampled one, say), to the PLD of the other order of
    neighbours. It is composed with the same order of the other PLDs, and δ(ε) is the larger of the two."""
    _cache: dict[int, tuple[_Side, FloatArray]] = field(default_factory=dict, repr=False, compare=False)
    """Per side (keyed by its id, which the side, kept beside, cannot hand to another): its float curve
    (:meth:`_curve`) and, under the negated id, its lumped drift (:meth:`_lumped_drift`)."""
    _lazy: Callable[[], PLD] | None = field(default=None, repr=False, compare=False)
    """Builds the two sides on first use (Gaussian PLDs, which are read from the closed form)."""
    _lazy_lower: Callable[[], _Side] | None = field(default=None, repr=False, compare=False)
    """Builds the lower side on first use (compositions: ε(δ)'s upper end, which privacy maps read, does not
    need it)."""
    _lazy_upper: Callable[[], _Side] | None = field(default=None, repr=False, compare=False)
    """Builds the (untilted) upper side on first use (long compositions, whose δ and ε are read from a
    composite tilted for the question: :mod:`dpcompose.accounting._pld_tilt`)."""
    _recipe: _Recipe | None = field(default=None, repr=False, compare=False)
    """For long compositions: what they were built from, for the tilted reading."""
    sampling: str | None = field(default=None, repr=False)
    """Set for subsampled mechanisms (and compositions with them) to their scheme, ``"poisson"`` (a record
    added or removed) or ``"without_replacement"`` (a record substituted): the pair holds for that
    neighbouring relation only, and :func:`compose_plds` refuses to mix the two."""
    step_mult: int = 1
    """The lattice width's odd multiplier (1 for the plain lattice ``2**-step_bits``, another one for a
    lattice aligned with the mechanism's atoms, ``aligned=True`` in the constructors)."""
    _thin: PLD | None = field(default=None, repr=False, compare=False)
    """A PLD of the same mechanism on the same lattice whose tails are cut into wide buckets (cheaper to
    build, a little looser where a read depends on one step's far tail: the subsampled Gaussian's,
    :func:`~dpcompose.accounting._pld_subsample._thin`). Compositions holding at least ``_THIN_MIN_COUNT``
    copies of this PLD use it in this one's place; this PLD's own sides are built only when read."""
    _key: object = field(default=None, repr=False, compare=False)
    """Where set, what the PLD was built from (its constructor and arguments), standing for its contents in
    :func:`_content_key` so that reading the key does not build the sides."""

    def _build_lazy(self) -> None:
        assert self._lazy is not None
        built = self._lazy()
        object.__setattr__(self, "_upper", built.upper)
        if built._lower is None and built._lazy_lower is not None:  # (built where read, if at all)
            object.__setattr__(self, "_lazy_lower", built._lazy_lower)
        else:
            object.__setattr__(self, "_lower", built.lower)

    @property
    def upper(self) -> _Side:
        """The pessimistic side (upper bounds)."""
        if self._upper is None:
            if self._lazy_upper is not None:
                object.__setattr__(self, "_upper", self._lazy_upper())
            else:
                self._build_lazy()
        assert self._upper is not None
        return self._upper

    @property
    def lower(self) -> _Side:
        """The optimistic side (lower bounds); built alone where it can be (the upper side is not needed)."""
        if self._lower is None:
            if self._lazy_lower is None:
                self._build_lazy()  # (sets the lower side, or how to build it)
            if self._lower is None:
                assert self._lazy_lower is not None
                object.__setattr__(self, "_lower", self._lazy_lower())
        assert self._lower is not None
        return self._lower

    @property
    def grid(self) -> _Grid:
        """The lattice."""
        return _Grid(self.step_bits, self.step_mult)

    @property
    def step(self) -> float:
        """The lattice width h = step_mult·2**-step_bits (an exact float)."""
        return math.ldexp(float(self.step_mult), -self.step_bits)

    def compose(self, other: PLD) -> PLD:
        """The PLD of the composition of the two mechanisms (convolution; Koskela et al. 2020, Sec. 3).

        Raises:
            InvalidParameter: ``other`` is not a PLD or has a different lattice.

        Examples:
            >>> from dpcompose.accounting import pld_laplace
            >>> a = pld_laplace(1, 5)
            >>> a.compose(a).epsilon(1e-3) <= 2 * a.epsilon(0)
            True
        """
        if not isinstance(other, PLD):
            raise InvalidParameter(f"other={other!r} must be a PLD")
        if other.grid != self.grid:
            raise InvalidParameter(
                f"other's lattice h={other.grid.describe()} differs from h={self.grid.describe()}: "
                f"build both PLDs on the same lattice{_ALIGN_HINT}"
            )
        if other is self:
            return _compose_groups([(self, 2)], f"2 × {self.description}")
        return _compose_groups([(self, 1), (other, 1)], f"{self.description} ∘ {other.description}")

    def self_compose(self, count: int) -> PLD:
        """The PLD of ``count`` compositions of this mechanism (repeated squaring).

        Raises:
            InvalidParameter: ``count`` is not a positive integer, or exceeds :data:`MAX_COUNT` (2**44).

        Examples:
            >>> from dpcompose.accounting import pld_laplace
            >>> float(pld_laplace(1, 1).self_compose(2).epsilon(1e-9)) <= 2.0001
            True
        """
        k = check_positive_int(count, "count")
        return _compose_groups([(self, k)], f"{k} × {self.description}")

    # -- reading the curve -------------------------------------------------------------------------------

    def _delta_real(self, side: _Side, eps: float, upper: bool) -> float:
        """Certified δ of one side at the float ε (any sign): Σ_{ℓⱼ>ε} mⱼ(1 − e^{ε−ℓⱼ}) + m_∞ ± err."""
        m = side.masses
        scaled = self.grid.steps(eps)  # ε in lattice steps (floor exact): past every atom once that large
        top = side.offset + m.size
        start = m.size if scaled >= top else max(0, math.floor(scaled) + 1 - side.offset)  # first ℓⱼ > ε
        if start < m.size:
            seg = m[start:]
            pos = (np.arange(start, m.size, dtype=np.float64) + side.offset) * self.step  # exact
            # ℓ − ε is rounded (relative u); since a·e^{−a} ≤ 1 − e^{−a}, w's relative error from it is ≤ u
            w = -np.expm1(-(pos - eps))
            w = w * (1 + _EXP_REL) if upper else w * (1 - _EXP_REL)
            w = np.minimum(w, 1.0)
            t = seg * w
            s, e = _sum_bound(t)
            e += 2 * _U * float(np.sum(np.abs(t)))
        else:
            s, e = 0.0, 0.0
        if upper:
            return _up(s + e + side.inf + side.err + 4 * _U * (abs(s) + abs(side.inf) + side.err))
        v = s - e - side.err + side.inf - 4 * _U * (abs(s) + abs(side.inf) + side.err)
        return max(0.0, math.nextafter(v, -math.inf))

    def _delta_at(self, side: _Side, index: int, upper: bool) -> float:
        """Certified δ at the lattice point ε = index·h."""
        return self._delta_real(side, index * self.step, upper)

    def _curve(self, side: _Side, upper: bool) -> FloatArray:
        """Approximate (float, uncertified) δ of a side at ε = (offset − 1 + i)·h, i = 0 … n; used only to
        locate answers, which are then certified with :meth:`_delta_real`."""
        key = id(side)
        cached = self._cache.get(key)
        if cached is not None and cached[0] is side:
            return cached[1]
        m = side.masses
        h = self.step
        n = m.size
        if n * h <= 600:  # one block: Σ_{j≥i} mⱼe^{−(j−i+1)h} = e^{(i−1)h}·Σ_{j≥i} mⱼe^{−jh}, no overflow
            k = np.arange(n, dtype=np.float64) * h
            s2 = np.cumsum((m * np.exp(-k))[::-1])[::-1]
            curve = np.empty(n + 1)
            curve[:-1] = np.cumsum(m[::-1])[::-1]
            curve[:-1] -= np.exp(k - h) * s2
            curve[-1] = 0.0
            curve += side.inf + (side.err if upper else -side.err)
            self._cache[key] = (side, curve)
            return curve
        r_suffix = np.empty(n)  # Σ_{j≥i} mⱼe^{−(j−i+1)h}, in blocks spanning ≤ 400 loss units
        blk = max(1, int(400 / h))
        carry = 0.0
        for end in range(n, 0, -blk):
            start = max(0, end - blk)
            seg = m[start:end]
            k = np.arange(seg.size, dtype=np.float64) * h
            cs = np.cumsum((seg * np.exp(-(k + h)))[::-1])[::-1]
            r_suffix[start:end] = np.exp(k) * cs + carry * np.exp(-(seg.size - k / h) * h)
            carry = float(r_suffix[start])
        s_suffix = np.cumsum(m[::-1])[::-1]  # Σ_{j≥i} mⱼ
        curve = np.empty(m.size + 1)
        curve[:-1] = s_suffix - r_suffix
        curve[-1] = 0.0
        curve += side.inf + (side.err if upper else -side.err)
        self._cache[key] = (side, curve)
        return curve

    def _least_up(self, target: float) -> float | None:
        """The least float ε ≥ 0 (to ~1e-12) whose certified upper δ is at most ``target``."""
        side = self.upper

        def guess() -> int:  # the first lattice index where the (uncertified) curve is at most the target
            curve = self._curve(side, True)
            ok = np.flatnonzero(curve <= target)
            return side.offset - 1 + (int(ok[0]) if ok.size else curve.size - 1)

        top = side.offset + side.masses.size  # at and above, only inf and err remain
        return self._least_search(target, lambda e: self._delta_real(side, e, True), top, guess)

    def _least_search(
        self, target: float, certified: Callable[[float], float], top: int, guess: Callable[[], int]
    ) -> float | None:
        """The least float ε ≥ 0 (to ~1e-12) with ``certified(ε)`` ≤ ``target``, for a certified δ bound that
        falls with ε and is only its mass at +∞ and error from the lattice index ``top`` on; ``guess()``
        (an approximate answer's lattice index) only locates it."""
        memo: dict[int, float] = {}
        h = self.step

        def at(i: int) -> float:
            v = memo.get(i)
            if v is None:
                v = memo[i] = certified(i * h)
            return v

        if at(top) > target:
            return None
        if certified(0.0) <= target:
            return 0.0
        i = min(max(guess(), 1), top)
        # certify: a lattice index with δ ≤ target (hi) and one below it with δ > target (lo)
        step = 1
        while at(i) > target:
            i = min(i + step, top)
            step *= 2
        lo = i - 1
        step = 1
        while lo > 0 and at(lo) <= target:
            i = lo
            lo = max(lo - step, 0)
            step *= 2
        i = bisect(lo, i, lambda j: at(j) <= target)
        # between the two lattice points δ(ε) = A − e^ε B exactly: solve, then certify (nudging up)
        d_hi, d_lo = at(i), at(i - 1)
        eps_i = i * h
        cand = eps_i
        if d_lo > d_hi:
            cand = eps_i + math.log1p(max((d_hi - target) * -math.expm1(-h) / (d_lo - d_hi), -1 + 1e-300))
        cand = min(max(cand, (i - 1) * h), eps_i)
        nudge = max(abs(cand), h) * 2.0**-44
        while cand < eps_i and certified(cand) > target:
            cand = min(cand + nudge, eps_i)
            nudge *= 4
        return cand

    def _delta_lumped(self, eps: float) -> float | None:
        """A certified lower bound on δ(ε) from the *lumped pair* of the lower side, or None without one.

        Every composite outcome is labelled by the sum s of its parts' lattice labels (each bucket's label is
        the lattice point nearest its merged loss, see :func:`_build`), and all outcomes with one label are
        merged into one: a post-processing, so the merged pair's δ is at most the mechanism's (Dwork–Roth
        2014, Prop. 2.1, in the form of dominating pairs, Zhu–Dong–Wang 2022, Def. 7), and δ of the
        merged pair is Σₛ(P(s) − e^ε·Q(s))₊ (Sommer–Meiser–Mohammadi 2019, Thm 1, for a finite pair). Labels
        add under composition, so P(s) and N(s) = e^{s}·Q(s) of the composite are convolutions of the parts'
        vectors (P lower bounds and N upper bounds entrywise give a lower bound, as (p − e^{ε−s}n)₊ rises
        with p and falls with n; dropping labels restricts to fewer outcomes, which only lowers the sum).
        Only labels with s ≥ s_i are summed, for the i that gives the most once the effect of N's ℓ₁ error,
        e^{ε−s_i}·err, is taken off (every such set gives a valid bound; :meth:`_lumped_start` gives the
        first candidate). Unlike rounding each loss down, merging loses only where outcomes of one label
        straddle ε: the error is second order in the lattice step.
        """
        side = self.lower
        if side.nq is None:
            return None
        m, nq = side.masses, side.nq
        h = self.step
        start = self._lumped_start(eps)
        total, e_sum, n_term = 0.0, 0.0, 0.0
        if start < m.size:
            pos = (np.arange(start, m.size, dtype=np.float64) + side.offset) * h  # exact
            with np.errstate(under="ignore", over="ignore"):
                w = np.exp(eps - pos) * (1 + _EXP_REL) * (1 + 4 * _U)  # ≥ e^{ε−s} (ε − s rounded)
            wn = w * nq[start:]
            t = m[start:] - wn
            t = t - 4 * _U * (m[start:] + wn)  # the product and difference, rounded down
            t = np.maximum(t, 0.0)
            _, e_sum = _sum_bound(t)  # (bounds the rounding of every suffix sum below too)
            # Sum over the labels s ≥ s_i for the best i: |Σ(p − w·n)₊ − Σ(p̂ − w·n̂)₊| ≤ ‖p − p̂‖₁ +
            # w_i·‖n − n̂‖₁ on that set, so a later start trades the terms it drops for a smaller weight.
            suffix = np.cumsum(t[::-1])[::-1]
            with np.errstate(over="ignore", invalid="ignore"):  # (an infinite N error: no start is usable;
                value = suffix - w * (1 + 1e-12) * side.nq_err  # 0·∞ where a weight underflowed counts so)
            value = np.where(np.isnan(value), -np.inf, value)
            i = int(np.argmax(value))
            if value[i] > 0:
                total, n_term = float(suffix[i]), float(w[i]) * (1 + 1e-12) * side.nq_err
        v = total - e_sum - side.err - n_term + side.inf
        v -= 4 * _U * (abs(total) + abs(side.inf) + side.err + n_term)
        if not math.isfinite(v):
            return 0.0
        return max(0.0, math.nextafter(v, -math.inf))

    def _lumped_drift(self) -> float:
        """g = ln(Σn/Σp) of the lower side (uncertified, only a parameter): lumps with label s have n ≈ p·e^g,
        so their terms of :meth:`_delta_lumped` are positive from about s = ε + g on (labels drift from the
        merged losses when rounding has a bias, by up to h/2 per composed mechanism)."""
        side = self.lower
        key = -id(side)
        cached = self._cache.get(key)
        if cached is None or cached[0] is not side:
            assert side.nq is not None
            sp, sn = float(np.sum(side.masses)), float(np.sum(side.nq))
            g = math.log(sn / sp) if sp > 0 and sn > 0 else 0.0
            cached = self._cache[key] = (side, np.array([g]))
        return float(cached[1][0])

    def _lumped_start(self, eps: float) -> int:
        """The index of the first label summed by :meth:`_delta_lumped` at ε: labels s ≥ ε + g − 2 (so the
        weights e^{ε−s} stay ≤ e^{2−g}, which bounds the effect of N's ℓ₁ error)."""
        side = self.lower
        lo_label = eps + self._lumped_drift() - 2.0
        x = lo_label / self.step - side.offset  # (any start gives a valid bound)
        if not x < side.masses.size:
            return side.masses.size
        return max(0, math.ceil(x))

    def _lumped_approx(self) -> Callable[[float], float] | None:
        """A fast float (uncertified) evaluation of :meth:`_delta_lumped`, used only to locate ε; labels
        s ≥ ε + g + 2 (where p > e^{ε−s}n: n ≈ p·e^g, see :meth:`_lumped_drift`) are read from suffix sums of
        p and n·e^{−s}. None when the labels span too much for e^{−s} to stay in floats."""
        side = self.lower
        if side.nq is None:
            return None
        m, nq = side.masses, side.nq
        h = self.step
        s0 = side.offset * h
        span = m.size * h
        if span > 600 or h > 0.5:
            return None
        rel = np.arange(m.size, dtype=np.float64) * h  # s − s0
        sp = np.append(np.cumsum(m[::-1])[::-1], 0.0)
        sn = np.append(np.cumsum((nq * np.exp(-rel))[::-1])[::-1], 0.0)
        one = 1 / h

        g = self._lumped_drift()

        def approx(eps: float) -> float:
            i0 = self._lumped_start(eps)
            x = (eps + g + 2.0) * one - side.offset  # past ε + g + 2 every term is positive
            i1 = min(max(i0, math.ceil(x)), m.size)
            mid = 0.0
            if i1 > i0:
                w = np.exp(eps - s0 - rel[i0:i1])
                mid = float(np.sum(np.maximum(m[i0:i1] - w * nq[i0:i1], 0.0)))
            # the certificate's error terms, as :meth:`_delta_lumped` subtracts them
            # (:meth:`_delta_lumped` picks its start; near s = ε + g its N-error weight is about e^{−g})
            penalty = side.err + math.exp(min(-g, 700.0)) * side.nq_err
            return mid + float(sp[i1]) - math.exp(eps - s0) * float(sn[i1]) + side.inf - penalty

        return approx

    def _lumped_epsilon(self, target: float, stop: float) -> float | None:
        """The greatest float ε in [0, stop] (to ~1e-12 relative) found whose certified lumped lower δ exceeds
        ``target``; None if even ε = 0 does not. The float evaluation locates it by bisection; the answer is
        then certified, and moved down until it is."""
        at0 = self._delta_lumped(0.0)
        if at0 is None or not at0 > target:
            return None
        approx = self._lumped_approx()
        probe = approx if approx is not None else (lambda e: self._delta_lumped(e) or 0.0)
        lo, hi = 0.0, stop
        if probe(hi) > target:
            lo = hi
        while hi - lo > max(abs(lo), 1.0) * 2.0**-42:
            mid = (lo + hi) / 2
            if probe(mid) > target:
                lo = mid
            else:
                hi = mid
        # Certify; where the certified value falls short, step down by the shortfall over the float slope
        # (then geometrically), and bisect back over the last step.
        nudge = max(lo, 1.0) * 2.0**-44
        failed = lo
        value = self._delta_lumped(lo) or 0.0
        first = True
        while lo > 0 and not value > target:
            failed = lo
            step = nudge
            if first:
                d = max(lo, 1.0) * 1e-6
                slope = (probe(max(lo - d, 0.0)) - probe(lo)) / d
                if slope > 0 and math.isfinite(slope):
                    step = max(step, (target - value) / slope * 1.01)
                first = False
            lo = max(0.0, lo - step)
            nudge = max(nudge, step) * 4
            value = self._delta_lumped(lo) or 0.0
        for _ in range(3 if failed > lo else 0):
            mid = (lo + failed) / 2
            if (self._delta_lumped(mid) or 0.0) > target:
                lo = mid
            else:
                failed = mid
        return lo

    def delta_bounds(self, epsilon: Number) -> tuple[Fraction, Fraction]:
        """``(lower, upper)``: certified bounds on δ(ε) of the mechanism this PLD describes.

        Both ends are read at ε itself. The upper end is δ of the connect-the-dots pair, which dominates the
        mechanism's (Doroshenko et al. 2022), δ(ε) = E[(1 − e^{ε−L})₊] (Sommer–Meiser–Mohammadi 2019, Thm 1);
        the lower end is δ of the lumped pair, a post-processing of the mechanism's
        (:meth:`_delta_lumped`).

        Raises:
            InvalidParameter: ε is negative, NaN or infinite.

        Examples:
            >>> from dpcompose.accounting import pld_laplace
            >>> lo, hi = pld_laplace(1, 1).delta_bounds(2)
            >>> (lo, hi)
            (Fraction(0, 1), Fraction(0, 1))
        """
        eps = exact(check_finite_nonnegative(epsilon, "epsilon"), "epsilon")
        with memory.refuse_out_of_memory(_READING, memory.SMALLER_BITS):
            if self.reverse is not None:
                return _both_ways(self, lambda p: p._delta_up(eps), lambda p, hi: p._delta_lower(eps, hi))
            hi = self._delta_up(eps)
            return self._delta_lower(eps, hi), hi

    def _delta_lower(self, eps: Fraction, hi: Fraction) -> Fraction:
        """The lower end of :meth:`delta_bounds` for this order alone, whose upper end is ``hi``."""
        if self.gaussian is not None:  # the closed form, certified both ways
            return min(hi, Fraction(_gaussian_delta_lower(self.gaussian[2], eps)))
        e_up = float(eps)
        if Fraction(e_up) < eps:
            e_up = math.nextafter(e_up, math.inf)
        tilted = self._recipe.delta_lo(e_up) if self._recipe is not None else None
        lumped = tilted or 0.0
        if tilted is None or tilted < float(hi) * (1 - _SAFETY_GAP):  # none, or a poor tilt: the untilted too
            lumped = max(lumped, self._delta_lumped(e_up) or 0.0)
        return min(hi, Fraction(lumped))

    def _delta_up(self, eps: Fraction) -> Fraction:
        """The upper end of :meth:`delta_bounds` alone (the lower side is not built)."""
        if self.reverse is not None:
            return max(_screened_orders(self, lambda w: w._delta_up(eps)))
        if self.gaussian is not None:
            return gaussian_delta(Fraction(self.gaussian[0]) ** 2, eps)
        e_dn = float(eps)
        if Fraction(e_dn) > eps:
            e_dn = math.nextafter(e_dn, -math.inf)
        return Fraction(self._delta_float(e_dn))

    def _delta_float(self, e_dn: float) -> float:
        """:meth:`_delta_up` of this order at the float ε (not a Gaussian one): for a long composition, the
        composite of ε's tilt (:meth:`_Recipe.delta_up`), and the untilted side too where that is poor or
        none applies. A function of the composition and ε alone: not of earlier readings, nor of which sides
        were built (:meth:`_Recipe.least_up` answers only where this reads at most δ)."""
        recipe = self._recipe
        if recipe is None:
            return min(1.0, self._delta_real(self.upper, e_dn, True))
        tilted = recipe.delta_up(e_dn)
        best = math.inf if tilted is None else tilted[0]
        if tilted is None or tilted[1]:
            best = min(best, self._delta_real(self.upper, e_dn, True))
        return min(1.0, best)

    def delta(self, epsilon: Number) -> Fraction:
        """The certified upper bound on δ(ε) (see :meth:`delta_bounds`).

        Examples:
            >>> from dpcompose.accounting import pld_randomized_response
            >>> pld_randomized_response(1.0).delta(0.5) > 0
            True
        """
        eps = exact(check_finite_nonnegative(epsilon, "epsilon"), "epsilon")
        with memory.refuse_out_of_memory(_READING, memory.SMALLER_BITS):
            return self._delta_up(eps)

    def epsilon_bounds(self, delta: Number) -> tuple[Fraction, Fraction]:
        """``(lower, upper)``: certified bounds on the least ε ≥ 0 with δ(ε) ≤ ``delta``.

        The upper end is the least float ε (found on the lattice, then solved exactly between two lattice
        points, where δ(ε) = A − e^ε·B, and checked) whose certified upper δ is at most ``delta``; the lower
        end is the largest ε found whose certified lower δ (the lumped pair's, as in :meth:`delta_bounds`) is
        still above ``delta`` (the true ε is above it).

        Raises:
            InvalidParameter: ``delta`` is outside [0, 1), or no finite ε reaches it (the mass at +∞, plus
                the certificate's error, exceeds it).

        Examples:
            >>> from dpcompose.accounting import pld_approx
            >>> lo, hi = pld_approx(1.0, 1e-3).epsilon_bounds(2e-3)
            >>> 0.99 < float(lo) <= float(hi) < 1.0
            True
        """
        dq = probability(delta, "delta")
        with memory.refuse_out_of_memory(_READING, memory.SMALLER_BITS):
            if self.reverse is not None:
                return _both_ways(
                    self, lambda p: p._epsilon_up(dq, delta), lambda p, hi: p._epsilon_lower(dq, hi)
                )
            e_hi = self._epsilon_up(dq, delta)
            return self._epsilon_lower(dq, e_hi), e_hi

    def _epsilon_lower(self, dq: Fraction, e_hi: Fraction) -> Fraction:
        """The lower end of :meth:`epsilon_bounds` for this order alone, whose upper end is ``e_hi``."""
        if self.gaussian is not None and dq > 0:
            return self._gaussian_epsilon_lower(dq, e_hi)
        d = float(dq)
        d_up = math.nextafter(d, math.inf) if Fraction(d) < dq else d
        stop = float(e_hi)
        recipe = self._recipe
        if recipe is None:
            y = self._lumped_epsilon(d_up, stop)
            return Fraction(max(0.0, min(0.0 if y is None else y, stop)))

        def certifies(y: float) -> bool:  # δ's lower end at y (as delta_bounds reads it) is above d_up
            tilted = recipe.delta_lo(y)
            if tilted is not None and tilted > d_up:  # (then so is δ's lower end: see _delta_lower)
                return True
            at = Fraction(y)
            return self._delta_lower(at, self._delta_up(at)) > d_up

        y = recipe.lumped_epsilon(d_up, stop, lambda: self._lumped_epsilon(d_up, stop), certifies)
        return Fraction(max(0.0, min(y, stop)))

    def _epsilon_up(self, dq: Fraction, shown: object) -> Fraction:
        """The upper end of :meth:`epsilon_bounds` alone (the lower side is not built)."""
        if self.reverse is not None:
            return max(_screened_orders(self, lambda w: w._epsilon_up(dq, shown)))
        if self.gaussian is not None and dq > 0:
            return _gaussian_epsilon(Fraction(self.gaussian[0]) ** 2, dq)
        d = float(dq)
        d_down = math.nextafter(d, -math.inf) if Fraction(d) > dq else d
        if self._recipe is not None:
            e_hi = self._recipe.least_up(self, d_down, self._delta_float)
        else:
            e_hi = self._least_up(d_down)
        if e_hi is None:
            inf, err = self.upper.inf, self.upper.err
            hint = "; most of it is the error bound, which a finer lattice (larger step_bits) lowers"
            hint = hint if err > inf else ""
            raise InvalidParameter(
                f"delta={shown!r} is below this PLD's certified mass at +∞ and error "
                f"({inf + err:.3g}, of which error {err:.3g}): no finite ε is certified{hint}"
            )
        return Fraction(e_hi)

    def _gaussian_epsilon_lower(self, dq: Fraction, upper: Fraction) -> Fraction:
        """The lower end of ε(δ) of a Gaussian PLD from the closed form, given its upper end ``upper`` (from
        :meth:`_epsilon_up`: :func:`gaussian_delta`'s certified root search): the largest float found whose
        certified lower δ exceeds ``dq``."""
        assert self.gaussian is not None
        mu_lo = self.gaussian[2]
        if not _gaussian_delta_lower(mu_lo, Fraction(0)) > dq:
            return Fraction(0)
        # start at the (uncertified) float root, then step down until the certified lower δ exceeds dq
        x = float(upper)
        step = max(x * 2.0**-50, 1e-300)
        while x > 0 and not _gaussian_delta_lower(mu_lo, Fraction(x)) > dq:
            x = max(0.0, x - step)
            step *= 2
        return min(Fraction(x), upper)

    def epsilon(self, delta: Number) -> Fraction:
        """The certified upper bound on ε(δ) (see :meth:`epsilon_bounds`; only the upper side is read).

        Examples:
            >>> from dpcompose.accounting import pld_laplace
            >>> 0.1 <= float(pld_laplace(1, 10).epsilon(0)) < 0.1001
            True
        """
        dq = probability(delta, "delta")
        with memory.refuse_out_of_memory(_READING, memory.SMALLER_BITS):
            return self._epsilon_up(dq, delta)

    def __repr__(self) -> str:
        return (
            f"PLD({self.description or '?'}, h={self.grid.describe()}, "
            f"{self.upper.masses.size} points, inf≤{self.upper.inf + self.upper.err:.3g})"
        )


def compose_plds(plds: Sequence[PLD]) -> PLD:
    """The PLD of the sequential composition of mechanisms with these PLDs.

    Equal objects are grouped and self-composed by repeated squaring, then the groups are convolved.

    Source: Koskela et al. 2020 (convolution of PLDs); Zhu–Dong–Wang 2022 Thm 10 (products of
    dominating pairs dominate adaptive compositions).

    Raises:
        InvalidParameter: the list is empty, holds a non-PLD, or mixes lattices.
        UnsupportedComposition: it mixes Poisson sampling with sampling without replacement (``sampling``):
            their pairs hold under different neighbouring relations.

    Examples:
        >>> from dpcompose.accounting import pld_laplace, pld_randomized_response
        >>> a, b = pld_laplace(1, 10), pld_randomized_response(0.1)
        >>> float(compose_plds([a, b, a]).epsilon(1e-6)) <= 0.3001
        True
    """
    if isinstance(plds, PLD) or not isinstance(plds, Sequence) or len(plds) == 0:
        raise InvalidParameter(f"plds={plds!r} must be a non-empty sequence of PLDs")
    groups: dict[object, tuple[PLD, int]] = {}
    keys: dict[int, object] = {}
    for i, p in enumerate(plds):
        if not isinstance(p, PLD):
            raise InvalidParameter(f"plds[{i}]={p!r} must be a PLD")
        key = keys.get(id(p))
        if key is None:
            key = keys[id(p)] = _content_key(p)  # equal PLDs built separately share one FFT
        prev = groups.get(key)
        groups[key] = (p, 1 if prev is None else prev[1] + 1)
    return _compose_keyed(groups)


def compose_counted(counted: Sequence[tuple[PLD, int]]) -> PLD:
    """:func:`compose_plds` of ``n`` copies of each PLD of ``counted`` (pairs ``(pld, n)``), without a list of
    all the copies.

    Source: as :func:`compose_plds`.

    Raises:
        InvalidParameter: the list is empty, holds a non-PLD or a count below 1, or mixes lattices.
        UnsupportedComposition: it mixes Poisson sampling with sampling without replacement.

    Examples:
        >>> from dpcompose.accounting import pld_laplace
        >>> a = pld_laplace(1, 10)
        >>> compose_counted([(a, 3)]).epsilon(1e-6) == compose_plds([a] * 3).epsilon(1e-6)
        True
    """
    if isinstance(counted, PLD) or not isinstance(counted, Sequence) or len(counted) == 0:
        raise InvalidParameter(f"counted={counted!r} must be a non-empty sequence of (PLD, count) pairs")
    groups: dict[object, tuple[PLD, int]] = {}
    for i, item in enumerate(counted):
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], PLD)):
            raise InvalidParameter(f"counted[{i}]={item!r} must be a (PLD, count) pair")
        p, n = item[0], check_positive_int(item[1], f"counted[{i}] count")
        key = _content_key(p)
        prev = groups.get(key)
        groups[key] = (p, n if prev is None else prev[1] + n)
    return _compose_keyed(groups)


def _compose_keyed(groups: dict[object, tuple[PLD, int]]) -> PLD:
    """:func:`compose_plds` once equal PLDs are grouped (their lattices checked here)."""
    first = next(iter(groups.values()))[0]
    for p, _ in groups.values():
        if p.grid != first.grid:
            raise InvalidParameter(
                f"plds mix the lattices h={first.grid.describe()} and h={p.grid.describe()}: build all PLDs "
                f"on the same lattice{_ALIGN_HINT}"
            )
    desc = " ∘ ".join(f"{n} × {p.description}" if n > 1 else p.description for p, n in groups.values())
    return _compose_groups(list(groups.values()), desc)


def _compose_groups(groups: Sequence[tuple[PLD, int]], description: str, long: bool | None = None) -> PLD:
    """The composition of ``n`` copies of each PLD (same lattice, checked by the callers).

    Gaussians compose exactly to a Gaussian: the product of the pairs (N(0, 1), N(μᵢ, 1)) is, up to a
    rotation, the pair (N(0, 1), N(‖μ‖₂, 1)) (Dong–Roth–Su 2019, Cor. 3.3), so a composition of Gaussian
    PLDs is rebuilt directly from ‖μ‖₂ (rounded up: a larger μ dominates) and read from the closed form at
    any μ. Otherwise: one FFT per distinct PLD when the result is long (:func:`_compose_many`), else
    repeated squaring by direct/FFT convolution. ``long``, where given, says which without reading the PLDs'
    sizes (the reverse order of an asymmetric composition follows its first order: so composing does not
    build the reverse order's sides, which the reading builds where it needs them, in a thread of its own).

    Raises:
        InvalidParameter: a count exceeds :data:`MAX_COUNT`.
    """
    for p, n in groups:
        if n > MAX_COUNT:
            raise InvalidParameter(
                f"count={n} copies of {p.description or 'this PLD'} exceed {MAX_COUNT} (2**44), the most "
                "copies of one PLD composed here: compose fewer (or account the run with zCDP or Rényi DP)"
            )
    schemes = {p.sampling for p, _ in groups} - {None}
    if len(schemes) > 1:
        raise UnsupportedComposition(_MIXED_SAMPLING)
    # a mechanism composed at least _THIN_MIN_COUNT times: its far tail weighs little (by each one's own
    # count, not the total: found by review, one dominant step among 255 negligible ones read through its
    # thin twin moved ε(1e-10) up 15%)
    groups = [(p._thin if p._thin is not None and n >= _THIN_MIN_COUNT else p, n) for p, n in groups]
    sampling = next(iter(schemes), None)
    result = _compose_groups_one_scheme(groups, description, long)
    if sampling is not None:  # (new objects: set once, before they are shared; the reverse order too)
        object.__setattr__(result, "sampling", sampling)
        if result.reverse is not None:
            object.__setattr__(result.reverse, "sampling", sampling)
    return result


def _compose_groups_one_scheme(
    groups: Sequence[tuple[PLD, int]], description: str, long: bool | None = None
) -> PLD:
    """:func:`_compose_groups` once the sampling schemes are checked."""
    if any(p.reverse is not None for p, _ in groups):
        fwd = _compose_groups([(_one_way(p), n) for p, n in groups], description, long)
        rev = _compose_groups(
            [(_one_way(p.reverse or p), n) for p, n in groups], description + " (reverse)",
            fwd._recipe is not None,
        )
        return _view(fwd, description, None, rev)
    tail = min(p.tail for p, _ in groups)
    grid = groups[0][0].grid
    bits = grid.bits
    gs = [(p.gaussian, n) for p, n in groups if p.gaussian is not None]
    if 0 < len(gs) < len(groups) and (len(gs) > 1 or gs[0][1] > 1):
        # compose the Gaussian ones exactly first (composition is associative and commutative)
        g_part = _compose_groups([(p, n) for p, n in groups if p.gaussian is not None], "Gaussians")
        rest = [(p, n) for p, n in groups if p.gaussian is None]
        return _compose_groups([(g_part, 1), *rest], description, long)
    if len(gs) == len(groups):
        # fsum is exactly rounded; the pads cover the products and the square root
        sq = math.fsum(n * g[0] * g[0] for g, n in gs) * (1 + 2.0**-50)
        mu_c = math.sqrt(sq) * (1 + 2.0**-50)
        mu_lo = math.sqrt(math.fsum(n * g[2] * g[2] for g, n in gs) * (1 - 2.0**-50)) * (1 - 2.0**-50)
        width = max(g[1] for g, _ in gs)
        if mu_c <= 30:
            return _gaussian_pld(bits, mu_c, width, tail, description, mu_lo)
        # δ and ε from the closed form at any μ; the lattice of one Gaussian of μ_c would span μ_c²/2 ± 14μ_c
        # (past 2**26 points), so the sides, built only for a composition with a non-Gaussian, are the
        # children's composition
        return PLD(
            bits, None, None, tail, description, (mu_c, width, mu_lo),
            _lazy=lambda: _compose_on_lattice(groups, description, long), step_mult=grid.mult,
        )
    return _compose_on_lattice(groups, description, long)


def _compose_on_lattice(groups: Sequence[tuple[PLD, int]], description: str, long: bool | None) -> PLD:
    """:func:`_compose_groups` on the lattice: one FFT per distinct PLD where the result is long (a
    composition read through its tilted recipe), else repeated squaring by direct/FFT convolution."""
    tail = min(p.tail for p, _ in groups)
    grid = groups[0][0].grid
    bits = grid.bits
    if long is None:
        long = sum(n * (p.upper.masses.size - 1) for p, n in groups) + 1 > _FOURIER_MIN
    _check_reach(grid, groups)
    if long and tail > 0:
        from dpcompose.accounting._pld_tilt import _Recipe

        def items() -> list[tuple[_Side, int]]:
            return [(p.upper, n) for p, n in groups]

        def upper() -> _Side:
            return _compose_many(items(), True, tail, bits)

        def lower_items() -> list[tuple[_Side, int]]:
            return [(p.lower, n) for p, n in groups]

        def lower() -> _Side:
            return _compose_many(lower_items(), False, tail, bits)

        recipe = _Recipe(items, grid, lower_items)
        return PLD(
            bits, None, None, tail, description, _lazy_lower=lower, _lazy_upper=upper, _recipe=recipe,
            step_mult=grid.mult,
        )
    result: PLD | None = None
    for p, n in groups:
        part = _self_compose_direct(p, n)
        result = part if result is None else _compose_direct(result, part)
    assert result is not None
    return PLD(bits, result.upper, result.lower, tail, description, step_mult=grid.mult)


_ALIGN_HINT = (
    " (a PLD built with aligned=True has a lattice of its own: build with aligned=False to compose it with "
    "other mechanisms)"
)


def _reach(groups: Sequence[tuple[PLD, int]]) -> int:
    """A bound on |J| for every index J of the composition of ``n`` copies of each PLD: every index of a
    composite lies between the sums of its parts' extreme indices (the lower side's labels lie at most one
    below the upper side's points, hence the + 1)."""
    return sum(n * (max(abs(p.upper.offset), abs(p.upper.offset + p.upper.masses.size)) + 1)
               for p, n in groups)


def _reach_fits(grid: _Grid, groups: Sequence[tuple[PLD, int]]) -> bool:
    """Whether the composition of ``n`` copies of each PLD keeps every position J·h exact on ``grid``: on an
    aligned lattice (mult > 1) its indices J must stay below 2**52/mult (:class:`_Grid`); the factor 2 covers
    the Fourier windows, whose power-of-two length may run past the support's top by up to its length."""
    return grid.mult == 1 or 2 * _reach(groups) * grid.mult < _EXACT


def _check_reach(grid: _Grid, groups: Sequence[tuple[PLD, int]]) -> None:
    """Refuse a composition that :func:`_reach_fits` does not."""
    if not _reach_fits(grid, groups):
        reach = _reach(groups)
        raise InvalidParameter(
            f"this composition reaches lattice index {reach} on the aligned lattice h={grid.describe()}, "
            f"beyond {_EXACT // 2 // grid.mult} where its positions stay exact: build the PLDs with "
            "aligned=False"
        )


def _content_key(p: PLD) -> object:
    """A key equal for PLDs with equal contents (step, tail, both sides' numbers, reverse)."""

    def side(sd: _Side) -> object:
        digest = hashlib.sha256(np.ascontiguousarray(sd.masses).tobytes()).hexdigest()
        nq = None if sd.nq is None else hashlib.sha256(np.ascontiguousarray(sd.nq).tobytes()).hexdigest()
        return (sd.offset, sd.masses.size, digest, sd.inf, sd.err, nq, sd.nq_err)

    if p.gaussian is not None and p.reverse is None:
        return (p.grid, p.tail, p.gaussian, p.sampling)
    if p._key is not None:
        return ("built from", p._key)
    rev = None if p.reverse is None else _content_key(p.reverse)
    # a lower side built on first use is not built for a key: such PLDs (composites) are grouped by identity,
    # whether it has been built since or not (so that the grouping, and the composite's numbers, do not
    # depend on what was read before)
    low = ("lazy", id(p)) if p._lazy_lower is not None or p._lazy is not None else side(p.lower)
    return (p.grid, p.tail, p.gaussian, side(p.upper), low, rev, p.sampling)


_T = TypeVar("_T")


def _in_parallel(first: Callable[[], _T], second: Callable[[], _T]) -> tuple[_T, _T]:
    """``(first(), second())``, ``second`` in a thread of its own: the two orders of a subsampled
    composition are read independently, and most of their time is spent in numpy (FFTs, exp, cumulative
    sums), which releases the GIL, so on two cores the pair takes about the time of one. Both always run
    to the end (nothing is left computing when this returns or raises); an exception of ``first`` is
    raised before one of ``second``, as in reading them one after the other."""
    out: list[_T] = []
    err: list[BaseException] = []

    def run() -> None:
        try:
            out.append(second())
        except BaseException as e:  # (re-raised in the caller's thread below)
            err.append(e)

    worker = threading.Thread(target=run, name="dpcompose-pld-order", daemon=True)
    worker.start()
    try:
        a = first()
    finally:
        worker.join()
    if err:
        raise err[0]
    return a, out[0]


def _orders_in_parallel(p: PLD) -> bool:
    """Whether the two orders of ``p`` are worth reading in two threads: both are long compositions (read
    through a recipe; a short one takes well under a millisecond, less than starting a thread)."""
    return p.reverse is not None and p._recipe is not None and p.reverse._recipe is not None


_SCREEN_BITS = 4
"""The screening twin of a long composition (:func:`_screened_orders`) is on a lattice 2**4 times coarser."""
_SCREEN_MIN = 1 << 16  # ... made for compositions whose loss spreads over about this many lattice steps


def _coarse_side(s: _Side, d: int, h: float) -> _Side:
    """The upper side ``s`` (lattice h) moved to the lattice 2**d·h: each point's P-mass is split between
    the two coarse points around it so that its Q-mass (P-mass·e^{−loss}) is kept.

    Why it dominates: the split is a mean-preserving spread of e^{−L} under P, and δ(ε) = E_P[(1 −
    e^ε·e^{−L})₊] is convex in e^{−L}; for a composition, e^{−ΣLᵢ} = Πe^{−Lᵢ} with independent factors,
    and conditionally on the others the expectation is convex in each one, so spreading every step's loss
    raises δ(ε) at every ε (the argument of :func:`_build`'s wide buckets). With x = loss − a ∈ (0, w)
    from the lower coarse point a, w = 2**d·h: p_a = p·e^{−x}(1 − e^{−(w−x)})/(1 − e^{−w}) and p_b =
    p·(1 − e^{−x})/(1 − e^{−w}), each bounded above (expm1 and exp within ``_EXP_REL``, the divisor
    rounded down); any larger mass only raises δ. Stored negative entries are clipped to 0, which does not
    move them away from the valid (non-negative) vector, so ``err`` carries over (the split keeps ℓ₁ up to
    its padding)."""
    step = 1 << d
    nz = np.flatnonzero(s.masses > 0)  # (only these move: a thin step's tail is mostly zeros)
    if nz.size == 0:
        return _Side(s.offset >> d, np.zeros(1), s.inf, s.err * (1 + 1e-9))
    m = s.masses[nz]
    j = nz.astype(np.int64) + s.offset
    lo = j >> d  # (floor division by 2**d, negative j too)
    x = j - (lo << d)
    xs = np.arange(step, dtype=np.float64) * h  # (exact: small multiples of h)
    w = step * h
    den = -math.expm1(-w) * (1 - 2 * _EXP_REL) * (1 - 2 * _U)  # ≤ 1 − e^{−w}
    with np.errstate(under="ignore"):
        q_b = -np.expm1(-xs) * (1 + 2 * _EXP_REL) / den * (1 + 4 * _U)
        q_a = np.exp(-xs) * -np.expm1(xs - w) * (1 + 4 * _EXP_REL) / den * (1 + 8 * _U)
    q_a[0], q_b[0] = 1.0, 0.0  # (a point on the coarse lattice stays)
    c0 = int(lo[0])
    size = int(lo[-1]) - c0 + 2
    out = np.bincount(lo - c0, weights=m * q_a[x], minlength=size).astype(np.float64)  # (floats already)
    out += np.bincount(lo - c0 + 1, weights=m * q_b[x], minlength=size)
    # (the products and the sums of at most 2·step non-negative terms round: γ far below 2**-40; a product
    # in the subnormal range may lose up to half a unit, 2**-1075, or round to 0: found by review, 7 masses
    # of 5e-324 moved to one coarse point lost 2e-324 of δ)
    touched = np.zeros(size, dtype=np.bool_)
    touched[lo - c0] = True
    touched[lo[x > 0] - c0 + 1] = True
    out = np.where(touched, out * (1 + 2.0**-40) + 2 * step * 5e-324, 0.0)
    return _trim(_Side(c0, out, s.inf, s.err * (1 + 1e-9)))


def _screen_twin(q: PLD) -> PLD | None:
    """The screening twin of the one-way long composition ``q``: the same composition of its children's
    upper sides moved to a lattice 2**``_SCREEN_BITS`` times coarser (:func:`_coarse_side`), whose δ(ε) is
    at least ``q``'s at every ε, so its certified ε(δ) and δ(ε) bound ``q``'s exact ones from above. None
    where ``q`` is short, or its lattice too coarse already. Made once, kept on the recipe."""
    recipe = q._recipe
    if recipe is None or q.reverse is not None or q.step_bits <= _SCREEN_BITS:
        return None
    if recipe.screen:
        return recipe.screen[0]
    twin: PLD | None = None
    items = recipe.items
    sides = [(_coarse_side(sd, _SCREEN_BITS, q.step), n) for sd, n in items]
    # the composition's variance in coarse steps (a spread variance: at least the fine one's)
    var = 0.0
    for sd, n in sides:
        if np.any(sd.masses > 0):
            tot, _, ss = _moments(sd.masses)
            var += n * ss / tot
    # (the fine read's window spans about 16 standard deviations: 2**_SCREEN_BITS fine steps per coarse one)
    if 16 * math.sqrt(var) * 2**_SCREEN_BITS >= _SCREEN_MIN:
        bits = q.step_bits - _SCREEN_BITS
        empty = _Side(0, np.zeros(1), 0.0, 0.0, np.zeros(1), 0.0)  # (a valid lower side: δ ≥ 0; not read)
        groups = [(PLD(bits, sd, empty, q.tail, "screen", step_mult=q.step_mult), n) for sd, n in sides]
        twin = _compose_groups(groups, f"screen of {q.description}")
    recipe.screen[:] = [twin]
    return twin


def _screened_orders(
    p: PLD, read: Callable[[PLD], Fraction], ways: Sequence[PLD] | None = None
) -> tuple[Fraction, Fraction]:
    """``read`` (an upper end: of ε(δ) or of δ(ε)) of each order of the asymmetric ``p``, except that the
    reverse order's may be replaced by that of its screening twin (:func:`_screen_twin`) where that is at
    most the first order's: the larger of the two, what the callers take, is then the first order's, as it
    is with the reverse order read in full (whose value is at most its twin's: both bound the same exact
    value from above, the twin the larger one; were the full read above its twin's, the twin's would be the
    tighter certified bound of the two).

    The first order is read in one thread while the other makes and reads the reverse order's twin (a
    lattice 16 times coarser: a few milliseconds); the reverse order is read in full only if its twin's
    value is above the first order's (or, where it has no twin, in that thread meanwhile). On DP-SGD the
    reverse (add) order's ε is 10 % below the remove order's, and not reading it saves a fifth of the time
    of ε(δ). In every subsampled composition tried (Gaussian, Laplace, discrete Gaussian; rates 0.01 to
    0.9) the first (remove) order was the larger; where the reverse one is, the two full reads run one
    after the other."""
    assert p.reverse is not None
    one, rev = ways if ways is not None else (_one_way(p), p.reverse)
    if not _orders_in_parallel(p):  # (short compositions: a thread is not worth starting)
        return read(one), read(rev)
    screen: list[Fraction] = []  # the reverse order's screening value, where there is one
    full: list[Fraction] = []  # its full value, where there is no twin (read meanwhile, as before twins)

    def second() -> None:
        # first the children of the first order (built by the other thread, which this waits for): the
        # reverse order's children, built next, then do not compete with them (a subsampled step builds
        # each order when first read)
        assert one._recipe is not None
        one._recipe.items  # noqa: B018
        twin = _screen_twin(rev)
        if twin is None:
            full.append(read(rev))
            return
        with contextlib.suppress(InvalidParameter):  # (no finite ε certified there: read in full)
            screen.append(read(twin))

    first = _in_parallel(lambda: read(one), second)[0]
    assert first is not None
    if full:
        return first, full[0]
    if screen and screen[0] <= first:
        return first, screen[0]
    return first, read(rev)


def _both_ways(
    p: PLD, upper: Callable[[PLD], Fraction], lower: Callable[[PLD, Fraction], Fraction]
) -> tuple[Fraction, Fraction]:
    """``(lower, upper)`` bounds of an asymmetric PLD: the larger of its two orders' at each end, where
    ``upper`` reads an order's upper end and ``lower`` its lower end given that upper end.

    The order with the larger upper end has its lower end read first; the other order's lower end is
    read only if its upper end is above that (otherwise it cannot be the larger one: lower ≤ upper). The
    result is the one both orders' bounds give; at q = 1e-5 this skips the add order's lower side, a
    third of the time of ``epsilon_bounds``."""
    assert p.reverse is not None
    ways = [_one_way(p), p.reverse]
    ups = _screened_orders(p, upper, ways)  # (the same views: the lower ends are read on them below)
    first = 0 if ups[0] >= ups[1] else 1
    lo = lower(ways[first], ups[first])
    if ups[1 - first] > lo:
        lo = max(lo, lower(ways[1 - first], ups[1 - first]))
    return lo, max(ups)


def _one_way(p: PLD) -> PLD:
    """This order of the PLD alone (a symmetric PLD is its own reverse)."""
    if p.reverse is None:
        return p
    return _view(p, p.description, p.gaussian, None)


def _view(p: PLD, description: str, gaussian: tuple[float, float, float] | None, reverse: PLD | None) -> PLD:
    """A PLD with ``p``'s sides (built once, on ``p``, where they are not built yet), tilted reading and
    lattice, under another description, closed form and reverse order."""
    return PLD(
        p.step_bits, p._upper, p._lower, p.tail, description, gaussian, reverse, _lazy=p._lazy,
        _lazy_lower=None if p._lower is not None else (lambda: p.lower),
        _lazy_upper=None if p._upper is not None else (lambda: p.upper), _recipe=p._recipe,
        sampling=p.sampling, step_mult=p.step_mult,
    )


def _compose_direct(a: PLD, b: PLD) -> PLD:
    tail = min(a.tail, b.tail)
    return PLD(
        a.step_bits,
        _compose_sides(a.upper, b.upper, True, tail),
        _compose_sides(a.lower, b.lower, False, tail),
        tail,
        step_mult=a.step_mult,
    )


def _self_compose_direct(p: PLD, k: int) -> PLD:
    result: PLD | None = None
    power = p
    while True:
        if k & 1:
            result = power if result is None else _compose_direct(result, power)
        k >>= 1
        if not k:
            break
        power = _compose_direct(power, power)
    assert result is not None
    return result


# ---------------------------------------------------------------------------------------------------------
# Building a PLD from bucket masses
# ---------------------------------------------------------------------------------------------------------


def _fmt(x: Fraction) -> str:
    """A ratio for an error message (a Fraction too large for a float is shown as such)."""
    return f"{float(x):g}" if abs(x) < 10**300 else "more than 1e300"


def _check_bits(step_bits: object) -> int:
    if isinstance(step_bits, bool) or not isinstance(step_bits, (int, np.integer)):
        raise InvalidParameter(f"step_bits={step_bits!r} must be an integer in [1, 40]")
    if not 1 <= step_bits <= 40:
        raise InvalidParameter(f"step_bits={step_bits!r} must be an integer in [1, 40]")
    return int(step_bits)


_READING = "reading this PLD (its sides are built when first read)"  # (what ran out of memory, if it does)
_MAX_POINTS = 1 << 26
"""The most lattice points a PLD may span (each float64 array of that length takes 512 MiB). The defaults
stay below it: the widest default PLD (Laplace or randomized response at Δ/b = ε = 700, h = 2**-14) spans
2.3e7 points."""

def _check_points(n: int, what: str, step_bits: int) -> None:
    """Refuse, before anything is allocated, a PLD (or a composition) spanning more than :data:`_MAX_POINTS`
    lattice points, or needing more memory than is available (``BUILD_BYTES_PER_POINT`` per point:
    :mod:`~dpcompose.accounting._pld_memory`), naming the step_bits that would fit.

    ``n`` is the number of points ``what`` spans on the lattice ``2**-step_bits``. A span of S loss units
    takes between S·2**b and S·2**b + 3 points at step_bits b, so k fewer bits take at most n/2**k + 3: the
    suggestion is the largest b − k with n/2**k + 3 ≤ :data:`_MAX_POINTS` (and within the memory).

    Raises:
        InvalidParameter: ``n`` exceeds :data:`_MAX_POINTS`.
        ResourceLimit: its memory exceeds what is available.

    Examples:
        >>> _check_points(1000, "a PLD", 14)  # fits: returns None
        >>> try:
        ...     _check_points(2**30, "Laplace(Δ/b=20)", 20)
        ... except InvalidParameter as e:
        ...     print(str(e).split(": ")[-1])
        use step_bits at most 15
    """
    n = int(n)
    if n > _MAX_POINTS:
        k = 1
        while n > (_MAX_POINTS - 3) << k:
            k += 1
        fit = step_bits - k
        hint = f"use step_bits at most {fit}" if fit >= 1 else "no step_bits in [1, 40] fits"
        raise InvalidParameter(
            f"{what} spans {n} lattice points at step_bits={step_bits} (at most {_MAX_POINTS}): {hint}"
        )
    need = n * memory.BUILD_BYTES_PER_POINT
    allowed = memory.over_budget(need)
    if allowed is not None:
        memory.refuse_memory(
            need, allowed, f"{what} ({n} lattice points at step_bits={step_bits})",
            "use " + memory.step_bits_fix(step_bits, need, allowed),
        )


def _check_window(size: int, step_bits: int | None = None, distinct: int = 1, lower: bool = False) -> None:
    """Refuse, before it is allocated, a composition's FFT window of more than :data:`_MAX_POINTS` lattice
    points (the composite of PLDs that fit can still span far more: found by review, two compositions of a
    2**25-point PLD took more than 24 GB before numpy gave up), or one whose memory at its peak
    (``window_bytes`` of :mod:`~dpcompose.accounting._pld_memory`: per point, and the spectra of its
    ``distinct`` vectors kept, of the ``lower`` side or the upper one) exceeds what is available, naming the
    ``step_bits`` that fits where given (a window halves with each bit fewer).

    Raises:
        InvalidParameter: ``size`` exceeds :data:`_MAX_POINTS`.
        ResourceLimit: its memory exceeds what is available.
    """
    if size > _MAX_POINTS:
        raise InvalidParameter(
            f"this composition's window spans {size} lattice points (at most {_MAX_POINTS}): build its PLDs "
            "with a smaller step_bits"
        )
    need = memory.window_bytes(size, distinct, lower)
    allowed = memory.over_budget(need)
    if allowed is not None:
        fix = "build its PLDs with " + (
            memory.step_bits_fix(step_bits, need, allowed)
            if step_bits is not None
            else "a smaller step_bits (one bit fewer halves the window and the memory)"
        )
        memory.refuse_memory(need, allowed, f"this composition's FFT window of {size} lattice points", fix)


def _check_int_sensitivity(sensitivity: object) -> int:
    """A non-negative integer sensitivity (of the discrete mechanisms), or InvalidParameter."""
    if isinstance(sensitivity, bool) or not isinstance(sensitivity, (int, np.integer)) or sensitivity < 0:
        raise InvalidParameter(f"sensitivity={sensitivity!r} must be a non-negative integer")
    return int(sensitivity)


def _check_loss_cap(value: Fraction, name: str) -> None:
    """Refuse a largest finite loss above 700 (e^{−700} is near the smallest normal float: masses of that
    size are the ones the constructors' relative error bounds still cover)."""
    if value > 700:
        raise InvalidParameter(f"{name}={_fmt(value)} must be at most 700 for a PLD")


def _check_tail(tail: object) -> float:
    t = check_finite_nonnegative(tail, "tail")
    if not float(t) < 1e-6:
        raise InvalidParameter(f"tail={tail!r} must be below 1e-6")
    if 0 < float(t) < 1e-300:  # log(1/tail) is then infinite: the truncation window has no finite edge
        raise InvalidParameter(f"tail={tail!r} must be 0 or at least 1e-300")
    return float(t)


@dataclass
class _Buckets:
    """Buckets j = (a_j, a_j + h], a_j = (lo + j)·h, with P-mass ``p`` and ``r`` = e^{a_j}·(Q-mass), both
    known to relative accuracy ``rel`` (per bucket), plus upper bounds on the tail masses (``below_hi``,
    ``above_hi``; the lower side leaves the tails out) and bounds on the P-mass at +∞ (``inf_hi``,
    ``inf_lo``)."""

    lo: int
    p: FloatArray
    r: FloatArray
    rel: FloatArray
    below_hi: float = 0.0
    above_hi: float = 0.0
    inf_hi: float = 0.0
    inf_lo: float = 0.0
    slack: float = 0.0  # losses of a bucket may lie this far below its lower end a_j (float edges)
    low_ok: npt.NDArray[np.bool_] | None = None  # losses in (a − slack, a + h] (None: all); else all at a + h
    edges: npt.NDArray[np.int64] | None = None
    """Wide buckets: bucket j is (a_j, a_{j+1}] with a_j = (lo + edges[j])·h (``edges`` strictly increasing
    from 0, one entry more than ``p``; None: every bucket is one step wide, a_j = (lo + j)·h). ``r`` is then
    e^{a_j}·(Q-mass) at the bucket's own lower end, and ``low_ok`` and ``slack`` are as above."""


def _build(
    bits: int, b: _Buckets, tail: float, description: str, mult: int = 1, lazy_lower: bool = False
) -> PLD:
    """:func:`_build_sides`, where running out of memory names the step_bits to change."""
    with memory.refuse_out_of_memory(f"building {description}", memory.SMALLER_BITS):
        return _build_sides(bits, b, tail, description, mult, lazy_lower)


def _build_sides(
    bits: int, b: _Buckets, tail: float, description: str, mult: int = 1, lazy_lower: bool = False
) -> PLD:
    """Connect-the-dots upper side and lumped-pair lower side from bucket masses (module docstring).

    Upper side: the pessimistic "connect the dots" discretisation of Doroshenko–Ghazi–Kamath–Kumar–
    Manurangsi 2022 (PoPETs 2022(4), its section on the pessimistic estimate; the theorem number is not
    cited here, not having been checked): each bucket's P-mass is split between its two end points so
    that its Q-mass is kept; the domination argument, extended to buckets whose losses may lie ``slack``
    below their lower end, is given in the comments below. Lower side: the lumped pair of the module
    docstring (each bucket's outputs merged into one output at a lattice label: a post-processing, so its
    δ is a lower bound by the data-processing inequality of the hockey-stick divergence).

    Wide buckets (``b.edges``; the subsampled pairs' tails, where little mass lies) are split between their
    own two ends in the same way.

    Only the buckets with P-mass are computed on (a bucket without P-mass puts nothing on either side: its
    split is 0 at both ends and its lower-side label carries nothing), so a PLD of a few atoms on a wide
    lattice costs the span's zeros and little else. The lattice is ``mult``·2**-``bits`` (:class:`_Grid`).
    ``lazy_lower``: the lower side is built on first use (:func:`_lumped_side`; a privacy map reads only
    the upper one)."""
    h = math.ldexp(float(mult), -bits)
    nz = np.flatnonzero(b.p > 0)
    # the buckets with mass, as a slice when they are contiguous (every bucket of a continuous mechanism)
    contiguous = nz.size > 0 and int(nz[-1]) - int(nz[0]) + 1 == nz.size
    sel: slice | npt.NDArray[np.intp] = slice(int(nz[0]), int(nz[-1]) + 1) if contiguous else nz
    p, r = b.p[sel], np.maximum(b.r[sel], 0.0)
    low_ok = None if b.low_ok is None else b.low_ok[sel]
    rel = b.rel[sel] + 8 * _U
    p_hi = p * (1 + rel)
    # Split of bucket (a − η, a + w], w = h (or a wide bucket's width), η = b.slack (losses may lie up to η
    # below a): each loss ℓ keeps its Q-mass when its P-mass is split between a − η and a + w, so p_b =
    # (e^η·P − e^a·Q)/(e^η − e^{−w}) goes to a + w and the rest to a − η, which is then moved up to a
    # (rounding a loss up only raises δ). With η = 0 this is the plain connect-the-dots split of (a, a + w].
    # (The split of one loss between any two points around it is a mean-preserving spread of e^{−L} under
    # P, which raises E_P[(1 − e^{ε}·e^{−L})₊], a convex function of e^{−L}, at every ε: so the split pair
    # dominates for any width.)
    eta = b.slack
    e_eta = 1.0 if eta == 0 else math.exp(eta) * (1 + 2.0**-48)  # upper bound of e^η
    eh = math.exp(h) * (1 + 2.0**-48)
    # each bucket's two ends, as lattice offsets from b.lo, and (wide buckets) a lower bound on e^η − e^{−w}
    # for its width w: a wide bucket (a, a + w] is split between its own two ends, as a narrow one is
    den_b: float | FloatArray
    if b.edges is None:
        at_a, at_b = nz, nz + 1
        width: int | npt.NDArray[np.int64] = 1
        den_b = (math.expm1(eta) - math.expm1(-h)) * (1 - 2.0**-48)  # lower bound of e^η − e^{−h}
    else:
        at_a, at_b = b.edges[nz], b.edges[nz + 1]
        width = at_b - at_a
        w = width.astype(np.float64) * h  # exact (an integer times h, far below 2**53 steps)
        # expm1(η) ≥ 0 and −expm1(−w) > 0, each rounded down (numpy's expm1 within _EXP_REL), then the
        # sum's rounding and the products'
        den_b = (math.expm1(eta) * (1 - 2.0**-48) - np.expm1(-w) * (1 - _EXP_REL)) * (1 - 8 * _U)
    scale = (e_eta * p + eh * r) * (rel + 8 * _U)
    num_b = e_eta * p - r + scale
    hi_b = np.minimum(np.maximum(num_b, 0.0) / den_b * (1 + 4 * _U), p_hi)
    if low_ok is not None:  # a collapsed bucket's losses may lie anywhere below its top: all of it there
        hi_b = np.where(low_ok, hi_b, p_hi)
    # The exact split (p_a, p_b) has p_a + p_b = p ≤ p_hi and p_b ≤ hi_b. Putting the rest, p_hi − hi_b, at
    # a turns it into the stored one by adding mass and moving mass from a up to its top, which only raises
    # δ (and keeps the excess mass at rel·p, where bounding p_a separately would cost rel·p/h).
    hi_a = np.maximum(p_hi - hi_b, 0.0)
    # the upper side on the points first … last (and 0, where the mass below the range goes)
    first = 0 if b.below_hi > 0 or nz.size == 0 else int(at_a[0])
    last = int(at_b[-1]) if nz.size else 0
    up = np.zeros(last - first + 1)
    k_a, k_b = at_a - first, at_b - first
    if contiguous and b.edges is None:
        up[k_a[0] : k_a[0] + k_a.size] += hi_a
        up[k_b[0] : k_b[0] + k_b.size] += hi_b
    else:  # (the ends of distinct buckets are distinct: each assignment adds once per entry)
        up[k_a] += hi_a
        up[k_b] += hi_b
    if b.below_hi > 0:
        up[0] += b.below_hi  # (first is 0 then)
    if 8 * nz.size < up.size:  # few atoms on a wide span: pad only the entries written
        t = np.union1d(k_a, k_b) if b.below_hi == 0 else np.union1d(np.union1d(k_a, k_b), [0])
        t = t[up[t] > 0]
        up[t] = up[t] * (1 + _PAD) + 5e-324
    else:
        up = np.where(up > 0, up * (1 + _PAD) + 5e-324, 0.0)
    upper = _trim(_Side(b.lo + first, up, _up(b.above_hi + b.inf_hi), 0.0))
    lower_args = (h, p, r, rel, at_a, width, b.lo, b.edges is not None, last, b.inf_lo)
    if lazy_lower:  # (a module-level function and arrays: the PLD still pickles)
        return PLD(bits, upper, None, tail, description, step_mult=mult,
                   _lazy_lower=functools.partial(_lumped_side, *lower_args))
    return PLD(bits, upper, _lumped_side(*lower_args), tail, description, step_mult=mult)


def _lumped_side(
    h: float, p: FloatArray, r: FloatArray, rel: FloatArray, at_a: npt.NDArray[np.int64],
    width: int | npt.NDArray[np.int64], lo: int, wide: bool, last: int, inf_lo: float,
) -> _Side:
    """:func:`_lumped_side_body` (built lazily, when read), where running out of memory names the step_bits
    to change."""
    with memory.refuse_out_of_memory(f"building a lower side of {p.size} buckets", memory.SMALLER_BITS):
        return _lumped_side_body(h, p, r, rel, at_a, width, lo, wide, last, inf_lo)


def _lumped_side_body(
    h: float, p: FloatArray, r: FloatArray, rel: FloatArray, at_a: npt.NDArray[np.int64],
    width: int | npt.NDArray[np.int64], lo: int, wide: bool, last: int, inf_lo: float,
) -> _Side:
    """:func:`_build`'s lower side from its buckets with P-mass: masses ``p``, ``r`` (e^{a}·Q-mass) and
    relative accuracy ``rel``, lower ends ``at_a`` and widths ``width`` in steps of ``h`` from ``lo``
    (``wide``: not all one step), the largest upper end ``last`` and the P-mass at +∞ (``inf_lo``)."""
    # Lower side: the lumped pair (PLD._delta_lumped). Bucket j goes to the label nearest its merged loss
    # ℓ_j = a_j + ln(p/r) (computed in floats: any label is valid, the nearest one usually merges the least;
    # the two buckets around loss 0 are the exception, below), among the bucket's points from one step
    # below its lower end to its top, carrying a lower bound on its P-mass and an upper bound on N =
    # e^{label}·Q-mass = r·e^{label − a_j}. Buckets whose merged loss is further away (collapsed edges), or
    # without a usable relative bound (rel ≥ 1: P-lower-bound 0) or Q-mass (r = 0), are dropped (a
    # restriction, which only lowers δ); so is the mass above the last bucket. The mass at +∞ has Q = 0.
    p_lo = p * np.maximum(1 - rel, 0.0) * (1 - _PAD)
    with np.errstate(divide="ignore", invalid="ignore"):
        move = np.rint(np.log(p_lo / r) / h)
    use = (p_lo > 0) & (r > 0) & np.isfinite(move) & (move >= -1) & (move <= width)
    # the buckets on either side of loss 0 keep their own labels (−1 and 0): moved to the nearest label,
    # both land on 0 where their merged losses lie within h/2 of it, and merging the negative losses with
    # the positive ones loses δ near ε = 0 (all of it for a subsampled pair at a rate far below h)
    move = np.where((at_a + lo == 0) | (at_a + lo == -1), 0.0, move)
    mv = np.where(use, move, 0.0).astype(np.int64)
    if not wide:
        e_up = math.exp(h) * (1 + 4 * _U) * (1 + _EXP_REL)
        e_dn = math.exp(-h) * (1 + 4 * _U) * (1 + _EXP_REL)  # (upper bounds of e^{±h})
        factor = np.where(mv > 0, e_up, np.where(mv < 0, e_dn, 1.0))
    else:  # upper bounds of e^{mv·h} (mv·h exact)
        factor = np.where(mv == 0, 1.0, np.exp(mv.astype(np.float64) * h) * (1 + 4 * _U) * (1 + _EXP_REL))
    n_b = np.where(use, r * (1 + rel) * factor * (1 + 8 * _U) * (1 + _PAD), 0.0)
    f_lo = int(at_a[0]) - 1 if at_a.size else -1  # the lowest label a bucket can move to
    at = at_a + mv - f_lo  # index in arrays starting at label lo + f_lo
    # (each label's entries summed in order, as np.add.at would, 5 times faster; the adds round: a label
    # lies within one step of at most three buckets' ranges, so at most three buckets share it; covered by
    # the pads above)
    low = np.bincount(at, weights=np.where(use, p_lo, 0.0), minlength=last - f_lo + 1).astype(np.float64)
    nq = np.bincount(at, weights=n_b, minlength=last - f_lo + 1).astype(np.float64)  # (floats already)
    return _trim(_Side(lo + f_lo, low, max(0.0, inf_lo * (1 - _PAD)), 0.0, nq, 0.0))


def _trim(s: _Side) -> _Side:
    """Drop exact-zero entries at both ends (they carry no P-mass; on the lower side dropping a label is a
    restriction of the lumped pair, which only lowers its δ)."""
    nz = np.flatnonzero(s.masses)
    if nz.size == 0:
        return _Side(0, np.zeros(1), s.inf, s.err, None if s.nq is None else np.zeros(1), s.nq_err)
    a, z = int(nz[0]), int(nz[-1])
    if a == 0 and z == s.masses.size - 1:
        return s
    nq = None if s.nq is None else s.nq[a : z + 1].copy()
    return _Side(s.offset + a, s.masses[a : z + 1].copy(), s.inf, s.err, nq, s.nq_err)


def _bucket_of(loss: Fraction, grid: _Grid) -> int:
    """The j with loss ∈ (j·h, (j+1)·h]."""
    return math.ceil(loss / grid.exact) - 1


class _Lattice:
    """Exact integer arithmetic of a loss that is affine and decreasing in an integer output z, on the lattice
    2**-bits·Z: L(z)·2**bits = (X − D·z)/Y with integers X, D > 0, Y > 0.

    Bucket j = (jh, (j + 1)h] holds the z with ⌈c_{j+1}⌉ ≤ z < ⌈c_j⌉, where c_j = (X − Y·j)/D is the
    output of loss jh. Arrays are int64 where nothing can overflow, else Python ints (object arrays).
    """

    def __init__(self, X: int, D: int, Y: int) -> None:
        self.X, self.D, self.Y = X, D, Y

    @staticmethod
    def _ceil_affine(values: npt.NDArray[Any], coef: int, const: int, den: int) -> npt.NDArray[Any]:
        """⌈(const − coef·values)/den⌉ elementwise, exactly."""
        big = int(np.max(np.abs(values))) if values.size else 0
        if abs(const) + abs(coef) * big < 1 << 62 and den < 1 << 62:
            num = const - coef * values.astype(np.int64)
        else:
            num = const - coef * values.astype(object)
        out: npt.NDArray[Any] = -((-num) // den)
        return out

    def bucket(self, z: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
        """j(z) with L(z) ∈ (j·h, (j + 1)·h] (the buckets fit in int64: their number is bounded)."""
        return np.asarray(self._ceil_affine(z, self.D, self.X, self.Y), dtype=np.int64) - 1

    def bucket_of(self, z: int) -> int:
        return -((self.D * z - self.X) // self.Y) - 1

    def edge_ceil(self, j: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
        """⌈c_j⌉: the integers z with L(z) > j·h are exactly those below it (int64 if they fit)."""
        e = self._ceil_affine(j, self.Y, self.X, self.D)
        if e.dtype == object and e.size and int(np.max(np.abs(e))) < 1 << 62:
            return e.astype(np.int64)
        return e


def _atoms(
    bits: int, atoms: Sequence[tuple[Fraction, float, float]], inf_mass: float, inf_rel: float, tail: float,
    description: str, grid: _Grid | None = None,
) -> PLD:
    """A PLD from finitely many atoms ``(loss, P-mass, log Q-mass)`` known to relative accuracy ``_EXP_REL``
    (masses) and with exact rational losses; ``inf_mass`` is the P-mass at +∞. The lattice is ``grid``
    (default: the plain 2**-``bits``, also the one the size check names)."""
    g = _Grid(bits) if grid is None else grid
    js = [_bucket_of(loss, g) for loss, _, _ in atoms]
    lo, hi = min(js), max(js)
    n = hi - lo + 1
    _check_points(n, description, bits)
    p = np.zeros(n)
    r = np.zeros(n)
    h = g.exact
    for (_loss, pm, log_q), j in zip(atoms, js, strict=True):
        p[j - lo] += pm
        # e^a·Q = exp(a + log Q) with a = j·h: relative error from the exponent's rounding is covered by rel.
        r[j - lo] += math.exp(float(j * h) + log_q) if log_q > -math.inf else 0.0
    rel = np.full(n, 8 * _EXP_REL)
    return _build(
        g.bits,
        _Buckets(lo, p, r, rel, inf_hi=inf_mass * (1 + inf_rel), inf_lo=inf_mass * (1 - inf_rel)),
        tail,
        description,
        g.mult,
    )


# ---------------------------------------------------------------------------------------------------------
# Mechanisms
# ---------------------------------------------------------------------------------------------------------


def pld_randomized_response(
    epsilon: Number,
    k: int = 2,
    *,
    step_bits: int = DEFAULT_STEP_BITS,
    tail: float = DEFAULT_TAIL,
    aligned: bool = False,
) -> PLD:
    """The PLD of k-ary randomized response with parameter ε (the worst pair of inputs x ≠ x').

    Outputs x, x' and the k − 2 others have P-masses e^ε/(e^ε + k − 1), 1/(e^ε + k − 1), (k − 2)/(e^ε +
    k − 1) and losses ε, −ε, 0: a finite pair, whose δ(ε') = E_P[(1 − e^{ε'−L})₊] is exact (module
    docstring); the lattice adds the connect-the-dots / lumped-pair error of :func:`_build`. dpcompose's
    sampler uses a rational E ≤ e^ε in place of e^ε; RR with E is a post-processing of RR with e^ε (mix
    with the uniform distribution), so this PLD dominates it. For k = 2 this is the pair (ε, 0) of
    :func:`pld_approx`, which dominates every ε-DP mechanism (Kairouz–Oh–Viswanath 2015, Thm 2.5).

    Source: Warner 1965 (binary); Kairouz–Oh–Viswanath 2016, JMLR 17 (k-ary randomized response);
    Kairouz–Oh–Viswanath 2015 (ICML), Thm 2.5 (domination); PLDs of discrete-valued mechanisms:
    Koskela–Jälkö–Prediger–Honkela 2021.

    With ``aligned=True`` the lattice runs through ±ε (h = ε/N, N = ⌈ε·2**step_bits⌉, as in
    :func:`pld_laplace`): no atom is split, and the PLD composes only with PLDs on the same lattice.

    Raises:
        InvalidParameter: ε is negative or not finite, or k < 2, ``aligned`` not a bool, or the lattice would
            span more than 2**26 points (:func:`_check_points`).

    Examples:
        >>> lo, hi = pld_randomized_response(1.0).delta_bounds(0)
        >>> float(lo) <= 0.4621171572600098 <= float(hi)
        True
    """
    eps = exact(check_finite_nonnegative(epsilon, "epsilon"), "epsilon")
    kk = check_positive_int(k, "k")
    if kk < 2:
        raise InvalidParameter(f"k={k!r} must be at least 2")
    bits = _check_bits(step_bits)
    t = _check_tail(tail)
    _check_loss_cap(eps, "epsilon")
    e = float(eps)
    # log of the normaliser e^ε + k − 1
    log_z = e + math.log1p((kk - 1) * math.exp(-e))
    grid = _lattice(aligned, bits, "randomized_response", eps, Fraction(kk))
    atoms = [(eps, math.exp(e - log_z), -log_z), (-eps, math.exp(-log_z), e - log_z)]
    if kk > 2:
        atoms.append((Fraction(0), (kk - 2) * math.exp(-log_z), math.log(kk - 2) - log_z))
    return _atoms(bits, atoms, 0.0, 0.0, t, f"RR(ε={float(eps):g}, k={kk})", grid)


def pld_approx(
    epsilon: Number,
    delta: Number,
    *,
    step_bits: int = DEFAULT_STEP_BITS,
    tail: float = DEFAULT_TAIL,
    aligned: bool = False,
) -> PLD:
    """The PLD of the dominating pair of every (ε, δ)-DP mechanism: RR_(ε,δ) of Kairouz–Oh–Viswanath.

    P = (δ, (1−δ)e^ε/(1+e^ε), (1−δ)/(1+e^ε), 0) and Q its reverse: losses +∞ (mass δ), ε and −ε. Its
    privacy region is exactly R(ε, δ), so every (ε, δ)-DP mechanism is dominated by it (is a
    post-processing of it): Kairouz–Oh–Viswanath 2015 (ICML), Thm 2.5, applied to the four-output
    mechanism of their proof of Thm 3.3 (supplement, Sec. 5.1). So composing these PLDs is valid for any
    (ε, δ) children, adaptively (Zhu–Dong–Wang 2022, Thm 10); with ε and δ exact this reproduces the
    optimal composition theorem (Kairouz–Oh–Viswanath 2015, Thm 3.3; heterogeneous: Murtagh–Vadhan 2016)
    up to the lattice.

    Source: Kairouz–Oh–Viswanath 2015 (ICML), Thm 2.5 and Thm 3.3; Murtagh–Vadhan 2016.

    With ``aligned=True`` the lattice runs through ±ε (as in :func:`pld_randomized_response`).

    Raises:
        InvalidParameter: ε negative or not finite, δ outside [0, 1), ``aligned`` not a bool, or the lattice
            would span more than 2**26 points.

    Examples:
        >>> lo, hi = pld_approx(0.5, 1e-6).delta_bounds(0.5)
        >>> float(lo) <= 1e-6 <= float(hi)
        True
    """
    eps = exact(check_finite_nonnegative(epsilon, "epsilon"), "epsilon")
    d = probability(delta, "delta")
    bits = _check_bits(step_bits)
    t = _check_tail(tail)
    _check_loss_cap(eps, "epsilon")
    e = float(eps)
    log1md = math.log1p(-float(d))
    log_z = e + math.log1p(math.exp(-e))
    grid = _lattice(aligned, bits, "approx", eps, d)
    atoms = [
        (eps, math.exp(log1md + e - log_z), log1md - log_z),
        (-eps, math.exp(log1md - log_z), log1md + e - log_z),
    ]
    return _atoms(bits, atoms, float(d), 2 * _U, t, f"RR(ε={e:g}, δ={float(d):g})", grid)


def _laplace_buckets(bits: int, delta_over_b: Fraction, grid: _Grid) -> _Buckets:
    """Buckets of the PLD of the continuous Laplace pair P = Lap(0, 1), Q = Lap(D, 1), D = ``delta_over_b``
    (scale 1 after rescaling; loss |o − D| − |o|), with a relative error bound per bucket: every mass is a
    closed-form difference of exponentials of float edges, each exp/expm1 within ``_EXP_REL`` and each
    float operation within u (Higham 2002, Sec. 2.2, the standard model), the edges' rounding covered by
    the buckets' slack. The lattice is ``grid`` (``bits`` is the one the size check names)."""
    D = delta_over_b
    lo = _bucket_of(-D, grid)
    hi = _bucket_of(D, grid)
    n = hi - lo + 1
    _check_points(n, f"a Laplace PLD with Δ/b={_fmt(D)}", bits)
    p = np.zeros(n)
    r = np.zeros(n)
    Df = float(D)
    # End atoms: o ≤ 0 (loss D, P = 1/2, Q = e^{−D}/2); o ≥ D (loss −D, P = e^{−D}/2, Q = 1/2).
    h = grid.exact
    for loss, pm, log_q in ((D, 0.5, math.log(0.5) - Df), (-D, 0.5 * math.exp(-Df), math.log(0.5))):
        j = _bucket_of(loss, grid)
        p[j - lo] += pm
        r[j - lo] += math.exp(float(j * h) + log_q)
    # Middle: loss D − 2x for x ∈ (0, D) (x = o in loss units); bucket (a, a+h] ↔ x ∈ [(D − a − h)/2,
    # (D − a)/2). Float edges eⱼ ≥ (D − jh)/2 (rounded up), bucket j = [e_{j+1}, eⱼ) ∩ [0, D_dn): every loss
    # in it is ≤ (j+1)h; losses a hair below jh are covered by the slack of the split. The masses are those
    # of these exact float intervals; the sliver [D_dn, D) (≤ u·D/2 of P-mass, losses ≈ −D) is added to the
    # mass below the range (the upper side's lowest point).
    hf = float(h)
    d2 = float_up(D / 2)
    js = np.arange(lo, hi + 2, dtype=np.float64)
    edge = np.nextafter(np.nextafter(d2 - js * (hf / 2), np.inf), np.inf)
    d_dn = float_down(D)
    lo_x = np.clip(edge[1:], 0.0, d_dn)
    hi_x = np.clip(edge[:-1], 0.0, d_dn)
    wid = hi_x - lo_x
    ok = wid > 0
    gm = np.where(ok, -np.expm1(-np.where(ok, wid, 1.0)), 0.0)
    p += 0.5 * np.exp(-lo_x) * gm
    r += np.exp((js[:-1]) * hf) * (0.5 * np.exp(-(Df - hi_x)) * gm)
    rel = np.full(n, 16 * _EXP_REL + 8 * _U * (1 + Df))
    return _Buckets(lo, p, r, rel, below_hi=_U * Df + 5e-324)


_TINY = 2.0**-1022  # the least normal float; products below it carry an absolute error of 2**-1075


def _dlap_buckets(bits: int, delta: int, t: Fraction, grid: _Grid | None = None) -> _Buckets:
    """Buckets of the PLD of the discrete Laplace pair P(z) = c·r^|z|, Q(z) = c·r^|z − Δ| on the integers
    (r = e^{−u}, u = 1/t, c = (1 − r)/(1 + r)), vectorised, with per-bucket relative error bounds.

    The loss L(z) = (Δ − 2z)u is exact on every output and decreasing in z: z ≤ 0 all have loss D = Δu
    (P-mass 1/(1 + r), Q-mass e^{−D}/(1 + r)), z ≥ Δ all have −D (P e^{−D}/(1 + r), Q 1/(1 + r)), and each
    loss bucket (jh, (j+1)h] holds an integer range z ∈ [A, B] ⊂ [1, Δ − 1], found in exact integer
    arithmetic (:class:`_Lattice`), whose masses are geometric sums:
    P = e^{−Au}·g/(1 + r) and e^{a}·Q = e^{a − (Δ − B)u}·g/(1 + r) with g = 1 − e^{−(B − A + 1)u}.
    When there are fewer middle outputs than buckets, the ranges are read off the outputs' buckets;
    otherwise off the bucket edges. The membership is exact, so the buckets need no slack.

    Error of each float (u = 2**-53; exp, expm1 within ``_EXP_REL``): 1/(1 + e^{−u_f}) within
    ``_EXP_REL`` + u·(1.01u_f + 2) (u_f = float(u) is within u·u_f, and 1 + x, 1/x round once); g within
    ``_EXP_REL`` + 3.03u (its argument, a product of two rounded floats, is within 3.03u relative, and
    x ↦ 1 − e^{−x} has relative condition ≤ 1); e^{−Au} within ``_EXP_REL`` + 3.03u·Au (the exponent's two
    factors and product round once each); e^{a − (Δ − B)u} within ``_EXP_REL`` + 3.03u·(Δ − B)u + 1.01u·|a −
    (Δ − B)u| (a = jh is exact); two products, u each. A result below the normal range carries an absolute
    error of 2**-1075 per product and is stored raised by 2**-1073 (its relative error bound grown to match).
    The float model is Higham 2002, Sec. 2.2 (fl(x op y) = (x op y)(1 + θ), |θ| ≤ u, for normal results).
    The lattice is ``grid`` = m·2**-e (default: the plain 2**-``bits``, also the one the size check names), so
    that L(z)/h = (Δ − 2z)·2**e·den(t)/(num(t)·m).
    """
    grid = _Grid(bits) if grid is None else grid
    scale = 1 << grid.bits
    lat = _Lattice(delta * scale * t.denominator, 2 * scale * t.denominator, t.numerator * grid.mult)
    j_hi, j_lo = lat.bucket_of(0), lat.bucket_of(delta)  # the buckets of the losses D and −D
    n = j_hi - j_lo + 1
    _check_points(n, f"a discrete Laplace PLD with Δ={delta}, t={float(t):g}", bits)
    uq = 1 / t
    u_f = float(uq)  # correctly rounded
    Dq = delta * uq
    d_f = float(Dq)
    half = 1.0 / (1.0 + math.exp(-u_f))
    rel_half = _EXP_REL + _U * (1.01 * u_f + 2)
    h = grid.h
    # middle outputs z ∈ [1, Δ − 1]: ranges [A, B] of bucket j
    if delta - 1 <= n:
        z = np.arange(1, delta, dtype=np.int64)
        jz = lat.bucket(z)  # non-increasing in z
        first = np.flatnonzero(np.concatenate(([True], jz[1:] != jz[:-1]))) if z.size else z
        last = np.concatenate((first[1:] - 1, [z.size - 1])) if z.size else z
        jr, A, B = jz[first], z[first], z[last]
    else:
        js = np.arange(j_lo, j_hi + 2, dtype=np.int64)
        edges = lat.edge_ceil(js)  # bucket j holds edges[j + 1] ≤ z < edges[j]
        A_all = np.maximum(edges[1:], 1)
        B_all = np.minimum(edges[:-1] - 1, delta - 1)
        keep = np.flatnonzero(np.asarray(A_all <= B_all, dtype=bool))
        jr, A, B = js[:-1][keep], A_all[keep], B_all[keep]
    a = jr.astype(np.float64) * h  # exact
    xp = np.asarray(A, dtype=np.float64) * u_f
    xq = np.asarray(delta - B, dtype=np.float64) * u_f
    g = -np.expm1(-(np.asarray(B - A + 1, dtype=np.float64) * u_f))
    tq = a - xq
    with np.errstate(under="ignore"):
        pm = np.exp(-xp) * half * g
        rm = np.exp(tq) * half * g
    common = rel_half + (_EXP_REL + 3.03 * _U) + _EXP_REL + 2 * _U
    rel_p = common + 3.03 * _U * xp
    rel_r = common + 3.03 * _U * xq + 1.01 * _U * np.abs(tq)
    pm, rel_p = _lift_subnormal(pm, rel_p)
    rm, rel_r = _lift_subnormal(rm, rel_r)
    p = np.zeros(n)
    r = np.zeros(n)
    rel = np.zeros(n)
    idx = jr - j_lo
    p[idx] = pm
    r[idx] = rm
    rel[idx] = np.maximum(rel_p, rel_r)
    # the two end atoms (their buckets may also hold a range: sums, one more rounding each)
    top_gap = float(j_hi * grid.exact - Dq)  # a − D ∈ [−h, 0), correctly rounded
    ends = (
        (j_hi - j_lo, half, half * math.exp(top_gap), _EXP_REL + 1.01 * _U * abs(top_gap)),
        (0, half * math.exp(-d_f), half * math.exp(j_lo * h), _EXP_REL + 1.01 * _U * d_f),
    )
    for i, pe, re_, rel_e in ends:
        p[i] += pe
        r[i] += re_
        rel[i] = max(rel[i], rel_half + rel_e + _U)
    rel = (rel + 2 * _U) * (1 + 2.0**-20)
    return _Buckets(j_lo, p, r, rel)


def _lift_subnormal(x: FloatArray, rel: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Values below the normal range (absolute error ≤ 2·2**-1075 from two products) raised by 2**-1073,
    with a relative error bound that covers the raise: then x(1 + rel) bounds the exact value above and
    x(1 − rel) ≤ 0 below it is dropped (only on the lower side, which may lose mass)."""
    tiny = x < _TINY
    if not np.any(tiny):
        return x, rel
    x = np.where(tiny, x + 2.0**-1073, x)
    rel = np.where(tiny, rel + 2.0**-1072 / x + 1.0, rel)
    return x, rel


def pld_laplace(
    sensitivity: Number,
    scale: Number,
    *,
    step_bits: int = DEFAULT_STEP_BITS,
    tail: float = DEFAULT_TAIL,
    aligned: bool = False,
) -> PLD:
    """The PLD of the continuous Laplace mechanism with this sensitivity Δ and scale b.

    The worst pair is P = Lap(0, b), Q = Lap(Δ, b) (either order: the PLD is symmetric under o ↦ Δ − o).
    Loss (|o − Δ| − |o|)/b: an atom Δ/b of P-mass 1/2 (o ≤ 0), an atom −Δ/b of mass e^{−Δ/b}/2 (o ≥ Δ) and
    a density on (−Δ/b, Δ/b) whose bucket masses are differences of exponentials. Shifts d < Δ are
    dominated: Laplace noise is log-concave, so its likelihood ratio is monotone, every optimal test is a
    half-line and F(c) − γF(c − d) ≤ F(c) − γF(c − Δ).

    Source: Dwork–McSherry–Nissim–Smith 2006 (mechanism); PLD of a one-dimensional continuous mechanism:
    Koskela–Jälkö–Honkela 2020 (AISTATS; no section number cited: not checked); its discretisation: see
    :func:`_build` (Doroshenko et al. 2022, connect the dots; the lumped pair for the lower side).

    With ``aligned=True`` the lattice runs through the atoms: h = (Δ/b)/N with N = ⌈(Δ/b)·2**step_bits⌉,
    so h ≤ 2**-step_bits (its multiplier of 2**-e rounded up to 20 bits: N·h ≥ Δ/b > N·h − 2**-19·Δ/b).
    The two atoms, which hold all but about Δ/(2b) of the mass, are then not split between two
    lattice points at every step, and a long composition of this mechanism gets a tighter upper end
    (1000 × Laplace(10) at δ = 1e-6: 18.95028741 against 18.95028849 on 2**-14; dp_accounting's default
    gives 18.95028750). Such a PLD composes only with PLDs on the same lattice (the same Δ/b and step_bits).

    Raises:
        InvalidParameter: sensitivity negative or scale not positive (or not finite), ``aligned`` not a
            bool, or the lattice would span more than 2**26 points.

    Examples:
        >>> lo, hi = pld_laplace(1, 1).epsilon_bounds(0)
        >>> float(lo) <= 1.0 <= float(hi)
        True
        >>> aligned = pld_laplace(1, 10, aligned=True)
        >>> aligned
        PLD(Laplace(Δ/b=0.1), h=1048193·2**-34, 3279 points, inf≤0)
        >>> 0 <= 1639 * aligned.step - 0.1 < 0.1 * 2**-19  # the atom Δ/b = 0.1 sits at the 1639th point
        True
    """
    sens = exact(check_finite_nonnegative(sensitivity, "sensitivity"), "sensitivity")
    b = exact(check_finite_positive(scale, "scale"), "scale")
    bits = _check_bits(step_bits)
    t = _check_tail(tail)
    D = sens / b
    _check_loss_cap(D, "sensitivity/scale")
    grid = _lattice(aligned, bits, "laplace", sens, b)
    if D == 0:
        return _atoms(bits, [(Fraction(0), 1.0, 0.0)], 0.0, 0.0, t, "Laplace(Δ=0)")
    name = f"Laplace(Δ/b={float(D):g})"
    with memory.refuse_out_of_memory(f"building {name}", memory.SMALLER_BITS):
        return _build(grid.bits, _laplace_buckets(bits, D, grid), t, name, grid.mult)


def pld_discrete_laplace(
    sensitivity: int,
    scale: Number,
    *,
    step_bits: int = DEFAULT_STEP_BITS,
    tail: float = DEFAULT_TAIL,
    aligned: bool = False,
) -> PLD:
    """The PLD of the discrete Laplace mechanism: integer sensitivity Δ, scale t (P(z) ∝ e^{−|z|/t}).

    This is the noise of dpcompose's secure ``make_laplace`` in grid units: with grid width g the scalar
    mechanism is this one with Δ = Δ_g (the grid-unit sensitivity of its privacy map) and t = scale/g. The
    loss (|z − Δ| − |z|)/t takes the Δ + 1 values (Δ − 2z)/t, z = 0 … Δ, with P-masses 1/(1 + r)
    (z ≤ 0), c·r^z (0 < z < Δ, c = (1 − r)/(1 + r), r = e^{−1/t}) and r^Δ/(1 + r) (z ≥ Δ); bucket masses are
    geometric sums in closed form. The PLD is the same in both orders (z ↦ Δ − z) and shifts d < Δ are
    dominated (the discrete Laplace is log-concave, as in :func:`pld_laplace`).

    The bucket masses are computed by :func:`_dlap_buckets` (exact integer bucket ranges, closed-form
    geometric sums, a proven float error per bucket); the lattice adds the error of :func:`_build`.

    Source: Ghosh–Roughgarden–Sundararajan 2009 (mechanism); PLDs of discrete-valued mechanisms:
    Koskela–Jälkö–Prediger–Honkela 2021 (AISTATS); discretisation: :func:`_build` (Doroshenko et al. 2022).

    With ``aligned=True`` and 1/t ≥ 2**-step_bits the lattice runs through every loss: h = (1/t)/N with
    N = ⌈2**step_bits/t⌉ (its multiplier rounded to 20 bits, as in :func:`pld_laplace`), so each of the
    Δ + 1 atoms sits (within 2**-19 relative) on a lattice point and is not split. Where 1/t < 2**-step_bits
    (dpcompose's own Laplace on a fine grid: Δ in grid units is large) the losses are nearly continuous
    and the lattice runs through the two end atoms ±Δ/t instead, which hold nearly all of the mass, as in
    :func:`pld_laplace`. Such a PLD composes only with PLDs on the same lattice (the same Δ/t, or t, and
    step_bits).

    Raises:
        InvalidParameter: Δ not a non-negative integer, t not positive, ``aligned`` not a bool, or the
            lattice would span more than 2**26 points.

    Examples:
        >>> lo, hi = pld_discrete_laplace(2, 4).epsilon_bounds(0)
        >>> float(lo) <= 0.5 <= float(hi)
        True
    """
    sens = _check_int_sensitivity(sensitivity)
    t_q = exact(check_finite_positive(scale, "scale"), "scale")
    bits = _check_bits(step_bits)
    tl = _check_tail(tail)
    D = sens / t_q
    _check_loss_cap(D, "sensitivity/scale")
    grid = _lattice(aligned, bits, "discrete_laplace", Fraction(sens), t_q)
    if sens == 0:
        return _atoms(bits, [(Fraction(0), 1.0, 0.0)], 0.0, 0.0, tl, "DiscreteLaplace(Δ=0)")
    name = f"DiscreteLaplace(Δ={sens}, t={float(t_q):g})"
    with memory.refuse_out_of_memory(f"building {name}", memory.SMALLER_BITS):
        return _build(grid.bits, _dlap_buckets(bits, sens, t_q, grid), tl, name, grid.mult)


def pld_gaussian(
    sensitivity: Number,
    sigma: Number,
    *,
    step_bits: int = DEFAULT_STEP_BITS,
    tail: float = DEFAULT_TAIL,
    width: float = 14.0,
) -> PLD:
    """The PLD of the Gaussian mechanism: with μ = Δ/σ the loss under P is N(μ²/2, μ²), under Q
    N(−μ²/2, μ²) (symmetric in the two orders).

    Buckets over μ²/2 ± ``width``·μ; bucket masses are differences of Φ computed from
    :func:`scipy.special.log_ndtr` with a relative error bound per bucket; the tail beyond the top goes to
    +∞ (upper side), the bottom tail to the lowest point. As long as only Gaussians are composed, the
    result stays a Gaussian PLD (μ's add in quadrature) and δ(ε), ε(δ) are read from the closed form,
    certified in both directions.

    Source: Balle–Wang 2018, Thm 8 (the closed form δ(ε) from which both ends are read); Dong–Roth–Su
    2022, Cor. 3.3 (Gaussians compose to the Gaussian of μ = ‖μᵢ‖₂, used by :func:`compose_plds`); the
    lattice sides for compositions with other PLDs: Koskela–Jälkö–Honkela 2020 (the Gaussian PLD) and
    :func:`_build` (Doroshenko et al. 2022).

    Raises:
        InvalidParameter: sensitivity negative, σ not positive, or width outside [4, 40]; when the PLD is
            composed with a non-Gaussian one (which builds its lattice), if the lattice would span more than
            2**26 points.

    Examples:
        >>> lo, hi = pld_gaussian(1, 1).delta_bounds(1.0)
        >>> float(lo) <= 0.1269367375066439 <= float(hi)
        True
    """
    sens = exact(check_finite_nonnegative(sensitivity, "sensitivity"), "sensitivity")
    sig = exact(check_finite_positive(sigma, "sigma"), "sigma")
    bits = _check_bits(step_bits)
    tl = _check_tail(tail)
    w = float(check_finite_positive(width, "width"))
    if not 4 <= w <= 40:
        raise InvalidParameter(f"width={width!r} must be in [4, 40]")
    if sens == 0:
        return _atoms(bits, [(Fraction(0), 1.0, 0.0)], 0.0, 0.0, tl, "Gaussian(Δ=0)")
    mu_q = sens / sig
    if mu_q > 30:  # checked exactly first: a huge ratio has no float
        raise InvalidParameter(f"sensitivity/sigma={_fmt(mu_q)} must be in [1e-8, 30] for a Gaussian PLD")
    mu, mu_lo = float_up(mu_q), float_down(mu_q)  # a larger μ dominates; μ_lo bounds the lower δ
    if not 1e-8 <= mu <= 30:
        raise InvalidParameter(f"sensitivity/sigma={mu:g} must be in [1e-8, 30] for a Gaussian PLD")
    return _gaussian_pld(bits, mu, w, tl, f"Gaussian(μ={mu:g})", mu_lo)


def _gaussian_pld(bits: int, mu: float, width: float, tail: float, description: str, mu_lo: float) -> PLD:
    """A Gaussian PLD whose lattice sides are built only when needed (composition with a non-Gaussian)."""

    def build() -> PLD:
        with memory.refuse_out_of_memory(f"building {description}", memory.SMALLER_BITS):
            return _build(bits, _gaussian_buckets(bits, mu, width), tail, description)

    return PLD(bits, None, None, tail, description, (mu, width, mu_lo), _lazy=build)


def _gaussian_delta_lower(mu_lo: float, eps: Fraction) -> float:
    """A lower bound on Balle–Wang's δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) at μ = ``mu_lo`` (δ grows with
    μ), every float rounded so that the result falls: the mirror of
    :func:`~dpcompose.accounting.gaussian_delta` (Balle–Wang 2018, Thm 8)."""
    if mu_lo <= 0:
        return 0.0
    m = Fraction(mu_lo)
    a_dn = float_down(m / 2 - eps / m)
    b_up = float_up(-(m / 2 + eps / m))
    if a_dn < -1e150:
        return 0.0
    la = float(log_ndtr(a_dn))
    la -= _LOG_NDTR_PAD * (1 + abs(la))
    lb = float(log_ndtr(max(b_up, -1e150)))
    lb += _LOG_NDTR_PAD * (1 + abs(lb))
    ef = float_up(eps)
    t = ef + lb - la
    t += 4 * _U * (abs(ef) + abs(lb) + abs(la))
    if t >= 0:
        return 0.0
    w = -expm1_up(t)  # −(e^t − 1) rounded down
    v = exp_down(la) * w * (1 - 4 * _U)
    return max(0.0, math.nextafter(v, -math.inf))


def _phi_up(t: float) -> float:
    """An upper bound on Φ(t) at the float t: scipy's ``log_ndtr`` padded by its assumed error
    ``_LOG_NDTR_PAD``·(1 + |value|) (module docstring), then the exponential by a relative 1e-10 (≫ its
    ulps). A value below the float range comes out 0; the callers' stored masses carry an absolute pad of
    5e-324 (:func:`_build`)."""
    return min(1.0, math.exp(_log_ndtr_up(t)) * (1 + 1e-10))


def _log_phi_diff(hi: FloatArray, lo: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``(log(Φ(hi) − Φ(lo)), rel)`` with ``hi > lo`` elementwise and a relative error bound ``rel`` of the
    difference; uses the upper tail Φ(−lo) − Φ(−hi) where lo > 0 so that both are accurate. The bound
    assumes scipy's ``log_ndtr`` within ``_LOG_NDTR_PAD``·(1 + |value|) (module docstring) and uses
    1 − e^{−x} ≥ x·e^{−x} for the relative error of 1 − e^{d}."""
    flip = lo > 0
    a = np.where(flip, -lo, hi)  # the larger CDF argument
    b = np.where(flip, -hi, lo)
    la = np.asarray(log_ndtr(a), dtype=np.float64)
    lb = np.asarray(log_ndtr(b), dtype=np.float64)
    return _phi_diff_of_logs(la, lb)


def _log_phi_steps(edges: FloatArray) -> tuple[FloatArray, FloatArray]:
    """:func:`_log_phi_diff` of the consecutive cells [edgesᵢ, edgesᵢ₊₁) of non-decreasing ``edges``,
    bitwise the same, with one ``log_ndtr`` per edge instead of two per cell (a cell reads Φ at its ends, or
    Φ(−x) where it lies above 0; an edge x is read the same way by both its cells, x ≤ 0 as Φ(x) and x > 0
    as Φ(−x), except by the one cell with lo ≤ 0 < hi, whose upper end is read as Φ(hi) on its own)."""
    v = np.asarray(log_ndtr(np.where(edges > 0, -edges, edges)), dtype=np.float64)
    lo, hi = edges[:-1], edges[1:]
    flip = lo > 0
    la = np.where(flip, v[:-1], v[1:])
    lb = np.where(flip, v[1:], v[:-1])
    across = np.flatnonzero(~flip & (hi > 0))
    if across.size:
        la[across] = np.asarray(log_ndtr(hi[across]), dtype=np.float64)
    return _phi_diff_of_logs(la, lb)


def _phi_diff_of_logs(la: FloatArray, lb: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``(log(e^{la} − e^{lb}), rel)`` from two ``log_ndtr`` values la ≥ lb (:func:`_log_phi_diff`)."""
    pa = _LOG_NDTR_PAD * (1 + np.abs(la))
    pb = _LOG_NDTR_PAD * (1 + np.abs(lb))
    d = lb - la  # ≤ 0
    with np.errstate(divide="ignore", invalid="ignore"):
        one_minus = -np.expm1(d)
        log_diff = la + np.log(one_minus)
        # error of d: pa + pb + u|d|; relative error of 1 − e^d ≤ err_d/|d| (1 − e^{−x} ≥ x e^{−x}).
        err_d = pa + pb + 2 * _U * np.abs(d)
        rel = np.where(d < 0, err_d / np.abs(d) * np.exp(err_d), np.inf) + pa * 2 + 8 * _EXP_REL
    return log_diff, rel


def _gaussian_buckets(bits: int, mu: float, width: float) -> _Buckets:
    """Buckets of the PLD of the Gaussian pair P = N(0, 1), Q = N(μ, 1): the loss L(o) = μ²/2 − μo is
    N(μ²/2, μ²) under P and N(−μ²/2, μ²) under Q, so each bucket's masses are differences of Φ
    (:func:`_log_phi_diff`, with its certified relative error; the arguments' rounding is covered by a
    padded relative term and the buckets' slack) and the two tails are bounded by :func:`_phi_up`."""
    h = math.ldexp(1.0, -bits)
    m2 = mu * mu
    mean = m2 / 2
    lo = math.floor((mean - width * mu) / h) - 1
    hi = math.ceil((mean + width * mu) / h)
    _check_points(hi - lo, f"a Gaussian PLD with μ={mu:g}, width={width:g}", bits)
    js = np.arange(lo, hi, dtype=np.float64)
    a = js * h
    b = a + h
    # P: L ~ N(μ²/2, μ²); Q: L ~ N(−μ²/2, μ²). Standardised bounds (rounding of these is absorbed: the
    # bucket edges shift by ≤ a few ulps of the argument, covered by the padded relative error).
    pa, pb = (a - mean) / mu, (b - mean) / mu
    qa, qb = (a + mean) / mu, (b + mean) / mu
    lp, rp = _log_phi_diff(pb, pa)
    lq, rq = _log_phi_diff(qb, qa)
    arg_pad = 4 * _U * (np.abs(pa) + np.abs(pb) + np.abs(qa) + np.abs(qb) + 1) * (np.abs(pb) + np.abs(qb) + 1)
    with np.errstate(over="ignore", under="ignore"):
        p = np.exp(lp)
        r = np.exp(a + lq)
    rel = np.maximum(rp, rq) + arg_pad * 4 + 8 * _EXP_REL
    bad = ~np.isfinite(rel) | (rel > 1e-3)
    # Buckets whose relative error is not small: keep the P-mass bound only (all of it to the upper point).
    p = np.where(np.isfinite(p), p, 0.0)
    r = np.where(bad | ~np.isfinite(r), 0.0, r)
    rel = np.where(bad, np.maximum(np.where(np.isfinite(rel), rel, 1.0), 1.0), rel)
    # Tails: P(L ≤ a_0) = Φ((a_0 − μ²/2)/μ) and P(L > b_n) = Φ(−(b_n − μ²/2)/μ), upper bounds. The edges
    # are exact; the float mean is within u·μ²/2 of μ²/2, and the subtraction and the division round once
    # each, so a computed argument x is within 3u(|x| + mean/μ) of the exact one: rounded up by that, then
    # Φ is bounded above by _phi_up (log_ndtr padded by its full stated error).
    def arg_up(x: float) -> float:
        return math.nextafter(x + 3 * _U * (abs(x) + mean / mu), math.inf)

    below = _phi_up(arg_up(float(a[0] - mean) / mu))
    above_hi = _phi_up(arg_up(-(float(b[-1]) - mean) / mu))
    # The standardised edges (a − μ²/2)/μ are rounded, so a bucket's outputs may have losses a few ulps of
    # |a| + μ²/2 outside (a, a + h]: the split of _build allows that much slack (the lower side's lumping is
    # a post-processing wherever the losses lie).
    slack = 16 * _U * (float(np.max(np.abs(a))) + mean + h + 1)
    return _Buckets(lo, p, r, rel, below_hi=below, above_hi=above_hi, slack=slack)
