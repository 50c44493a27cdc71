"""One side of a PLD (masses on the lattice, mass at +∞, ℓ₁ error) and its certified convolution, direct or
by FFT (Higham 2002, Thm. 24.2), truncation and trimming."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from dpcompose.accounting._common import bisect
from dpcompose.accounting._exact import exp_up, expm1_down, log1p_up, log_up
from dpcompose.accounting._pld.floats import (
    few_ulps_up,
    fft_relative,
    gamma,
    gamma_up,
    libm_down,
    libm_up,
    norm1_up,
    pad_up,
    rounding_err,
    roundings_down,
    roundings_up,
    sum_bound,
    sum_err,
)

FloatArray = npt.NDArray[np.float64]


_DIRECT_LIMIT = 64  # convolve directly when the shorter vector has at most this many entries


# ---------------------------------------------------------------------------------------------------------
# One side of a PLD and its composition
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Side:
    """P-masses at lattice points ``offset … offset + len(masses) - 1``, mass at +∞, and ``err``, a bound
    on the ℓ₁ distance from (masses, inf) to a vector with the side's defining property (module doc).

    On the lower side, ``nq`` (same offset and length as ``masses``) holds upper bounds on N(s) = e^{s}·Q(s),
    the scaled Q-mass of the *lumped pair* at each lattice label s, and ``masses`` lower bounds on its P(s)
    (see :meth:`PLD.delta_lumped`); ``nq_err`` bounds the ℓ₁ distance of ``nq`` from a vector with that
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
        return gamma_up(s, self.masses.size + 2)


def composed_nq_err(items: Sequence[tuple[Side, int]]) -> float:
    """E_N, an upper bound on the ℓ₁ error that the lower sides' ``nq_err`` carry into the composite of
    their N vectors (``kᵢ`` copies of each), rounded up; every side has an ``nq``.

    Claim: with ``nᵢ = norm1_up(nqᵢ) ≥ ‖nqᵢ‖₁`` and ``eᵢ = nq_errᵢ`` (``‖ñᵢ − nqᵢ‖₁ ≤ eᵢ`` for a vector
    ``ñᵢ`` with the property of ``nq``), ``‖∗ᵢñᵢ^{∗kᵢ} − ∗ᵢnqᵢ^{∗kᵢ}‖₁ ≤ E := Πᵢ(nᵢ + eᵢ)^{kᵢ} − Πᵢnᵢ^{kᵢ}``.

    Proof: list the factors with multiplicity as ``a₁ … a_m`` (true) and ``b₁ … b_m`` (stored). Telescoping,
    ``a₁∗…∗a_m − b₁∗…∗b_m = Σⱼ b₁∗…∗b_{j−1}∗(aⱼ − bⱼ)∗a_{j+1}∗…∗a_m``; by Young's inequality
    ``‖x∗y‖₁ ≤ ‖x‖₁‖y‖₁`` with ``‖bⱼ‖₁ ≤ nⱼ``, ``‖aⱼ‖₁ ≤ nⱼ + eⱼ`` and ``‖aⱼ − bⱼ‖₁ ≤ eⱼ``, the ℓ₁ norm is at
    most ``Σⱼ Π_{i<j}nᵢ · eⱼ · Π_{i>j}(nᵢ + eᵢ)``, a sum that telescopes to ``Π(nᵢ + eᵢ) − Πnᵢ``. (The
    bound is non-decreasing in each ``nⱼ``, so upper bounds on the norms may stand in for them.)

    Evaluation, outward, in logarithms: ``E = e^{L_B + ln(1 − e^{−L_E})}`` with ``L_B = Σkᵢ ln(nᵢ + eᵢ)`` and
    ``L_E = Σkᵢ ln(1 + eᵢ/nᵢ)`` (``= L_B − ln Πnᵢ^{kᵢ}``). Upper bounds throughout: ``ln(nᵢ + eᵢ)`` by
    ``log_up`` of the exact rational; ``ln(1 + xᵢ)``, ``xᵢ = eᵢ/nᵢ`` exact, by ``min(xᵢ, log1p_up(xᵢ))``
    (``ln(1 + x) ≤ x``; the first keeps a ratio below the float range from rounding up to 2**-1074); the
    sums exact (rationals); ``1 − e^{−L_E}`` (increasing in ``L_E``, so the rounded-up ``L_E`` only raises
    it) by ``min(L_E, −expm1_down(−L_E))`` (``1 − e^{−x} ≤ x``), its logarithm by ``log_up``; and the
    exponential by ``exp_up`` (+∞ past the float range, a positive float below it). So the result is
    ``≥ E``, and one exponential of the whole exponent is taken: neither an overflow nor an underflow of
    ``Πnᵢ^{kᵢ}`` or ``Π(nᵢ + eᵢ)^{kᵢ}`` loses ``E`` while it is a float (the product form
    ``e^{ln Πnᵢ^{kᵢ}}·(e^{L_E} − 1)`` reads 0 for ``E > 0`` when its first factor underflows, and
    overflows where ``E`` need not).

    Edge cases: every ``eᵢ = 0``: ``E = 0``. A side with ``nⱼ = 0``: ``Πnᵢ^{kᵢ} = 0``, so
    ``E = Π(nᵢ + eᵢ)^{kᵢ} = e^{L_B}`` (the factor is 1), and ``E = 0`` when also ``eⱼ = 0`` (both vectors of
    that side are 0, hence both composites). A non-finite ``nᵢ`` or ``eᵢ`` otherwise: +∞.

    Source: Young's convolution inequality ``‖x∗y‖₁ ≤ ‖x‖₁‖y‖₁`` and the telescoping above; the rounding
    primitives of :mod:`dpcompose.accounting._exact`.
    """
    norms: list[tuple[float, float, int]] = []
    for sd, k in items:
        assert sd.nq is not None  # (callers compose lower sides that all carry an nq)
        norms.append((norm1_up(sd.nq), sd.nq_err, k))
    if any(n == 0 and e == 0 for n, e, _ in norms):
        return 0.0  # a zero factor on both sides: both composites are exactly 0
    if all(e == 0 for _, e, _ in norms):
        return 0.0
    if not all(math.isfinite(n) and math.isfinite(e) for n, e, _ in norms):
        return math.inf
    log_b = sum((k * Fraction(log_up(Fraction(n) + Fraction(e))) for n, e, k in norms), Fraction(0))
    log_factor = Fraction(0)  # a side with nᵢ = 0: Πnᵢ^{kᵢ} = 0 and E = e^{L_B}
    if all(n > 0 for n, _, _ in norms):
        ratios = [(Fraction(e) / Fraction(n), k) for n, e, k in norms]
        log_e = sum((k * min(x, Fraction(log1p_up(x))) for x, k in ratios), Fraction(0))
        factor = min(log_e, Fraction(-expm1_down(-log_e)))  # ≥ 1 − e^{−L_E} > 0
        log_factor = Fraction(log_up(factor))
    return exp_up(log_b + log_factor)


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
        return c, sum_err(min(x.size, y.size) + 2, ax, ay) + 5e-324 * n_out
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
    extra = sum_err(2 * _ATOMS + 4, float(np.sum(np.abs(c))) + ax * ay + axs * ay)
    return c, err + extra + 5e-324 * n_out


_ATOMS = 32


def _fft_convolve(x: FloatArray, y: FloatArray, n_out: int) -> tuple[FloatArray, float]:
    """The FFT convolution (first ``n_out`` entries) and a bound on its ℓ₁ error (Higham 2002, Thm 24.2)."""
    size = 1 << max(1, (n_out - 1).bit_length())
    fx = np.fft.rfft(x, size)
    fy = np.fft.rfft(y, size)
    z = fx * fy
    c = np.fft.irfft(z, size)[:n_out]
    r = fft_relative(size)
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
    dz += 2 * math.sqrt(2) * gamma(2) * z_norm
    # Inverse: c = F⁻¹Z, ‖F⁻¹v‖₂ = ‖v‖₂/√N; its own rounding is r‖F⁻¹Ẑ‖₂ ≤ r‖Ẑ‖₂/√N.
    e2 = (dz + r * z_norm) / sq * pad
    return c, e2 * math.sqrt(n_out) * pad + 5e-324 * n_out


def compose_sides(a: Side, b: Side, upper: bool, tail: float) -> Side:
    """The side of the composition of two mechanisms' sides (their convolution), truncated at ``tail``.

    The P-masses' error: ``‖x∗y − x̂∗ŷ‖₁ ≤ ‖x − x̂‖₁‖y‖₁ + ‖x̂‖₁‖y − ŷ‖₁`` (Young) plus the convolution's and
    the +∞ mass's roundings. The N vectors' error (lower sides): the children's ``nq_err`` carried into the
    composite, :func:`composed_nq_err` of the pair (one copy each, the bound proven and rounded outward
    there), plus the float convolution's error bound; the two non-negative terms are added once in floats
    and the sum padded by :func:`few_ulps_up` (a correctly rounded sum is below the true one by at most a
    relative ``2**-53``, which the pad's relative ``2**-50`` and one ulp cover; in the subnormal range the
    sum is exact).

    Source: Young's convolution inequality; Higham 2002, Thm 24.2 (the FFT's error).
    """
    c, conv_err = _convolve(a.masses, b.masses)
    sa, ea = sum_bound(a.masses)
    sb, eb = sum_bound(b.masses)
    # Mass at +∞: anything paired with +∞ is +∞.
    inf = a.inf * (sb + b.inf) + b.inf * sa
    inf_err = abs(a.inf) * (eb + rounding_err(4, abs(sb) + abs(b.inf))) + abs(b.inf) * (
        ea + rounding_err(4, abs(sa))
    )
    na, nb = a.norm1(), b.norm1()
    # ‖x∗y − x̂∗ŷ‖₁ ≤ ‖x − x̂‖₁‖y‖₁ + ‖x̂‖₁‖y − ŷ‖₁ (Young), with ‖y‖₁ ≤ ‖ŷ‖₁ + err_y.
    err = a.err * (nb + b.err) + na * b.err + conv_err + inf_err * 2 + 5e-324
    nq: FloatArray | None = None
    nq_err = 0.0
    if a.nq is not None and b.nq is not None:
        nq, n_conv = _convolve(a.nq, b.nq)
        nq = np.maximum(nq, 0.0)
        nq_err = few_ulps_up(composed_nq_err([(a, 1), (b, 1)]) + n_conv)
    side = Side(a.offset + b.offset, c, inf, few_ulps_up(err), nq, nq_err)
    return truncate(side, upper, tail)


def truncate(s: Side, upper: bool, tail: float) -> Side:
    """Cut both tails whose computed mass is at most ``tail``: on the upper side the top goes to +∞ and the
    bottom up to the lowest kept point; on the lower side both are dropped, from P and N alike (a
    restriction of the lumped pair to fewer outputs, which only lowers δ). The float sums' rounding errors
    are added to ``err``."""
    m = s.masses
    if m.size <= 2:
        return s
    k_top = tail_count(m[::-1], tail)  # number of top entries whose total ≤ tail
    k_bot = tail_count(m, tail)
    k_top = min(k_top, m.size - 2)
    k_bot = min(k_bot, m.size - 2 - k_top)
    if k_top == 0 and k_bot == 0:
        return s
    keep = m[k_bot : m.size - k_top].copy()
    t_sum, t_err = sum_bound(m[m.size - k_top :])
    b_sum, b_err = sum_bound(m[:k_bot])
    inf = s.inf
    err = s.err + t_err + b_err
    if upper:
        inf = inf + t_sum
        keep[0] = keep[0] + b_sum
    # Lower side: dropping either tail removes non-negative true mass, so δ only falls; what the stored
    # (float, possibly noisy) entries held is covered by err already.
    err += rounding_err(4, abs(inf) + abs(keep[0]) + abs(keep[-1]))
    # the N-vector loses the same labels (a restriction of the lumped pair to fewer outcomes)
    nq = None if s.nq is None else s.nq[k_bot : m.size - k_top].copy()
    return Side(s.offset + k_bot, keep, inf, few_ulps_up(err), nq, s.nq_err)


def tail_count(m: FloatArray, tail: float) -> int:
    """The number of leading entries of ``m`` whose float cumulative sum stays ≤ ``tail`` (growing prefixes
    are summed, so a long vector whose tail is short costs little)."""
    n = 256
    while True:
        cum = np.cumsum(m[:n])
        k = int(np.searchsorted(cum > tail, True))
        if k < cum.size or n >= m.size:
            return k
        n *= 8


SCREEN_BITS = 4
"""The screening twin of a long composition (:func:`screened_orders`) is on a lattice 2**4 times coarser."""


def coarse_side(s: Side, d: int, h: float) -> Side:
    """The upper side ``s`` (lattice h) moved to the lattice 2**d·h: each point's P-mass is split between
    the two coarse points around it so that its Q-mass (P-mass·e^{−loss}) is kept.

    Why it dominates: the split is a mean-preserving spread of e^{−L} under P, and δ(ε) = E_P[(1 −
    e^ε·e^{−L})₊] is convex in e^{−L}; for a composition, e^{−ΣLᵢ} = Πe^{−Lᵢ} with independent factors,
    and conditionally on the others the expectation is convex in each one, so spreading every step's loss
    raises δ(ε) at every ε (the argument of ``build_pld``'s wide buckets). With x = loss − a ∈ (0, w)
    from the lower coarse point a, w = 2**d·h: p_a = p·e^{−x}(1 − e^{−(w−x)})/(1 − e^{−w}) and p_b =
    p·(1 − e^{−x})/(1 − e^{−w}), each bounded above (expm1 and exp within ``EXP_REL``, the divisor
    rounded down); any larger mass only raises δ. Stored negative entries are clipped to 0, which does not
    move them away from the valid (non-negative) vector, so ``err`` carries over (the split keeps ℓ₁ up to
    its padding)."""
    step = 1 << d
    nz = np.flatnonzero(s.masses > 0)  # (only these move: a thin step's tail is mostly zeros)
    if nz.size == 0:
        return Side(s.offset >> d, np.zeros(1), s.inf, s.err * (1 + 1e-9))
    m = s.masses[nz]
    j = nz.astype(np.int64) + s.offset
    lo = j >> d  # (floor division by 2**d, negative j too)
    x = j - (lo << d)
    xs = np.arange(step, dtype=np.float64) * h  # (exact: small multiples of h)
    w = step * h
    den = roundings_down(libm_down(-math.expm1(-w), 2), 2)  # ≤ 1 − e^{−w}
    with np.errstate(under="ignore"):
        q_b = roundings_up(libm_up(-np.expm1(-xs), 2) / den, 4)
        q_a = roundings_up(libm_up(np.exp(-xs) * -np.expm1(xs - w), 4) / den, 8)
    q_a[0], q_b[0] = 1.0, 0.0  # (a point on the coarse lattice stays)
    c0 = int(lo[0])
    size = int(lo[-1]) - c0 + 2
    out = np.bincount(lo - c0, weights=m * q_a[x], minlength=size).astype(np.float64)  # (floats already)
    out += np.bincount(lo - c0 + 1, weights=m * q_b[x], minlength=size)
    # (the products and the sums of at most 2·step non-negative terms round: γ far below 2**-40; a product
    # in the subnormal range may lose up to half a unit, 2**-1075, or round to 0, so the 2·step·5e-324 added
    # keeps such masses from losing δ, e.g. 7 masses of 5e-324 moved to one coarse point would lose 2e-324)
    touched = np.zeros(size, dtype=np.bool_)
    touched[lo - c0] = True
    touched[lo[x > 0] - c0 + 1] = True
    out = np.where(touched, pad_up(out, 40) + 2 * step * 5e-324, 0.0)
    return trim(Side(c0, out, s.inf, s.err * (1 + 1e-9)))


def trim(s: Side) -> Side:
    """Drop exact-zero entries at both ends (they carry no P-mass; on the lower side dropping a label is a
    restriction of the lumped pair, which only lowers its δ)."""
    nz = np.flatnonzero(s.masses)
    if nz.size == 0:
        return Side(0, np.zeros(1), s.inf, s.err, None if s.nq is None else np.zeros(1), s.nq_err)
    a, z = int(nz[0]), int(nz[-1])
    if a == 0 and z == s.masses.size - 1:
        return s
    nq = None if s.nq is None else s.nq[a : z + 1].copy()
    return Side(s.offset + a, s.masses[a : z + 1].copy(), s.inf, s.err, nq, s.nq_err)


def least_search(
    target: float, certified: Callable[[float], float], top: int, guess: Callable[[], int], h: float
) -> float | None:
    """The least float ε ≥ 0 (to ~1e-12) with ``certified(ε)`` ≤ ``target``, for a certified δ bound that
    falls with ε and is only its mass at +∞ and error from the lattice index ``top`` on (of the lattice
    h·Z); ``guess()`` (an approximate answer's lattice index) only locates it."""
    memo: dict[int, float] = {}

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
