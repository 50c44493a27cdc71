"""The certified PLD of the discrete Gaussian mechanism (the noise of dpcompose's ``make_gaussian``).

P = N_Z(0, s²) and Q = N_Z(Δ, s²) on the integers, P(z) = f(z)/Z with f(z) = e^{−z²/2s²} and the same
normaliser Z for both (Δ is an integer). The privacy loss at z is L(z) = (Δ² − 2zΔ)/(2s²), decreasing in
z, so the loss bucket (a, a + h] of the lattice is an integer range z ∈ [A, B] and its masses are sums of
f over that range. They are computed one of two ways, each with a relative error bound that goes into
:class:`dpcompose.accounting._pld.distribution.Buckets` (whose connect-the-dots / lumped-pair construction is
described in :mod:`dpcompose.accounting._pld.distribution`):

* **Atoms** (small s, or a bucket holding few integers): every f(z) is evaluated as a float exponential
  (exact integer z, the exponent's rounding bounded) and the atoms of a bucket are summed
  (error γₙ of a sum of n non-negative terms, Higham 2002, Lemma 3.1). The bucket of each atom is
  found in exact integer arithmetic.
* **Euler–Maclaurin** (a bucket holding many integers): with the periodic Bernoulli kernels,
  Σ_{z=A}^{B} f(z) = ∫_A^B f + (f(A) + f(B))/2 + (f′(B) − f′(A))/12 + R, |R| ≤ (1/384)∫_A^B |f⁗|, because
  x²(1 − x)²/24 ≤ 1/384 on [0, 1] (Apostol 1999, "An elementary view of Euler's summation formula";
  DLMF 24.17 / 2.10.1). For the Gaussian f⁗(x) = f(x)·He₄(x/s)/s⁴ with |He₄(t)| ≤ t⁴ + 6t² + 3, so R is a
  relative error of at most (t⁴ + 6t² + 3)/(384 s⁴) of the integral. The integral is taken, per bucket,
  as the better certified one of s√(2π) times a difference of Φ
  (:func:`log_phi_diff`, with its certified relative error plus the rounding
  of the arguments A/s, B/s) and composite Simpson (remainder (B − A)⁵·max|f⁗|/(2880 m⁴)). For the
  narrow buckets of a large s, Simpson's error is that of a few exponentials (~1e-13), where a
  Φ-difference of nearby arguments loses ~1e-11; split by connect-the-dots (which divides by h) this is
  the difference between δ within ~4e-8 and ~2e-6 of the truth at s = 2**20, Δ = s/20, h = 2**-14.
  Each range gets the number of Simpson panels (1 to 16) whose bound is least. Buckets of at most 8
  integers, and those whose bound is above 1e-6 but that are short enough to enumerate, are summed
  directly.

These range sums and the normaliser below are shared with the subsampled discrete Gaussian
(:mod:`dpcompose.accounting._pld.subsample.discrete`): ``range_sums``, ``normaliser``.

The normaliser: Poisson summation gives Z = s√(2π)·(1 + 2Σ_{k≥1} e^{−2π²s²k²}) (the Jacobi theta
transformation; used for the discrete Gaussian's normaliser by Canonne–Kamath–Steinke 2020), so
s√(2π) ≤ Z ≤ s√(2π)·(1 + 2e^{−c}/(1 − e^{−3c})) with c = 2π²s² (k² ≥ 1 + 3(k − 1)). On the atom path Z is
also summed directly (with the tails bounded as below) and the tighter of the two is used.

The outputs −⌈14 s⌉ ≤ z ≤ ⌈14 s⌉ + Δ are enumerated (their buckets span the lattice); for s < 1/14 only
z = 0 is, since every other output then has f(z) ≤ e^{−1/(2s²)} < e^{−98} (the range −1 … 1 + Δ would span
(2 + Δ)Δ/s² loss units for Δ + 3 atoms: 4.4e7 lattice points at Δ = 1, s = 1/30, h = 2**-14).
The outputs above the range (losses above the top bucket) carry Σ_{y≥m} f(y) ≤ f(m) + ∫_m^∞ f =
f(m) + s√(2π)Φ(−m/s) (f decreases on [m, ∞), m ≥ 1), so P-mass at most that over Z ≥ max(1, s√(2π))
(Z ≥ f(0) = 1, and Z ≥ s√(2π) by Poisson summation); it is put at +∞ on the upper side. The outputs
beyond the bottom bucket (z above its last integer, so that their losses are at most the lowest lattice
point) likewise go to the lowest point. Both are dropped on the lower side. Atoms whose P-mass would
underflow (log-mass < −700) are moved to +∞ on the upper side.

Assumptions of the certificate: those of :mod:`dpcompose.accounting._pld.distribution`.

Examples:
    >>> from dpcompose.accounting import pld_discrete_gaussian
    >>> lo, hi = pld_discrete_gaussian(1, 3).delta_bounds(0.1)
    >>> 0 < float(lo) <= float(hi) < 0.1
    True
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from dpcompose._validation import check_finite_positive
from dpcompose.accounting import _pld_memory as memory
from dpcompose.accounting._exact import Number, exact, exp_up, float_down, float_up
from dpcompose.accounting._gaussian import log_phi_diff, phi_up
from dpcompose.accounting._pld.buckets import Buckets
from dpcompose.accounting._pld.distribution import PLD, build_pld
from dpcompose.accounting._pld.floats import (
    SAFE,
    gamma_padded,
    libm_err,
    rounding_err,
    rounding_rel,
    roundings_down,
    roundings_up,
)
from dpcompose.accounting._pld.lattice import (
    DEFAULT_STEP_BITS,
    DEFAULT_TAIL,
    Lattice,
    check_bits,
    check_int_sensitivity,
    check_points,
    check_tail,
)
from dpcompose.errors import InvalidParameter

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


_WIDTH = 14  # outputs |z| ≤ ⌈14 s⌉ (and up to Δ beyond; only 0 if 14s < 1) are enumerated; tails < 2e-44


ATOM_LIMIT = 1 << 20  # every atom is enumerated when there are at most this many


_DIRECT = 8  # on the bucket path, buckets with at most this many integers are summed directly


_CHUNK = 1 << 21  # atoms of short buckets evaluated at a time on the bucket path


_DIRECT_MAX = 1 << 16  # a bucket whose Euler–Maclaurin bound is loose is summed directly if at most this long


UNDERFLOW = -700.0  # atoms with a smaller log-mass are moved to +∞ (upper side) with mass e^{−700}


BLOCK = 1 << 13
"""Entries per vectorised step over buckets, cells, ranges and Simpson nodes (here and in the subsampled
PLDs). Whole-array temporaries on a large lattice (tens of MB each, mapped fresh and page-faulted every
time) made the same arithmetic several times slower and held gigabytes; 64 KiB temporaries are reused
from the heap and stay in cache."""


class _Acc:
    """Per-bucket accumulators: P-masses, e^{a}·Q-masses, relative errors, and P-mass moved to +∞."""

    def __init__(self, n: int) -> None:
        self.p = np.zeros(n)
        self.r = np.zeros(n)
        self.rel = np.zeros(n)
        self.inf = 0.0


def _add_atoms(
    acc: _Acc,
    z: IntArray,
    idx: IntArray,
    a: FloatArray,
    two_s2: float,
    delta: int,
    log_z: float,
    rel_z: float,
) -> None:
    """Add the atoms z (bucket ``idx`` into ``acc``, bucket floor ``a`` = j·h, exact) with P(z) =
    exp(−z²/2s² − log Z) and e^{a}Q(z) = exp(a − (z − Δ)²/2s² − log Z).

    ``two_s2`` is 2s² rounded to nearest (relative error ≤ u); ``log_z`` is log Z up to the relative factor
    (1 ± ``rel_z``) of Z and its own rounding. Exponent errors: z², (z − Δ)² and the quotient each round
    once (≤ 5u·x in all), the sums once more; exp adds ``EXP_REL``.
    """
    zf = z.astype(np.float64)
    xp = zf * zf / two_s2
    zq = (z - delta).astype(np.float64)
    xq = zq * zq / two_s2
    lp = -xp - log_z
    lr = a - xq - log_z
    under = lp < UNDERFLOW
    if np.any(under):
        acc.inf += float(np.count_nonzero(under)) * math.exp(UNDERFLOW) * 1.01
        keep = ~under
        z, idx, a, xp, xq, lp, lr = z[keep], idx[keep], a[keep], xp[keep], xq[keep], lp[keep], lr[keep]
    if z.size == 0:
        return
    with np.errstate(under="ignore"):
        pm = np.exp(lp)
        rm = np.exp(lr)
    # relative, per atom (e^x − 1 ≤ 2x)
    err = rounding_err(8, np.abs(a) + xp + xq + abs(log_z) + 1) + libm_err(2)
    # per touched bucket only (the lattice may be much wider than the atoms: few atoms, far apart)
    buckets, slot = np.unique(idx, return_inverse=True)
    count = np.bincount(slot).astype(np.float64)
    worst = np.zeros(buckets.size)
    np.maximum.at(worst, slot, err)
    acc.p[buckets] += np.bincount(slot, weights=pm)
    acc.r[buckets] += np.bincount(slot, weights=rm)
    # The sum of the bucket's atoms (already there and new ones): at most count + 1 additions.
    acc.rel[buckets] = np.maximum(acc.rel[buckets], worst + gamma_padded(count + 2) + rel_z)


def tail_sum_up(m: int, s: Fraction) -> float:
    """An upper bound on Σ_{y≥m} f(y), f(y) = e^{−y²/2s²}, for an integer m ≥ 1: f decreases on [m, ∞),
    so the sum is at most f(m) + ∫_m^∞ f = f(m) + s√(2π)·Φ(−m/s)."""
    f_m = exp_up(-Fraction(m * m) / (2 * s * s))
    s_up = roundings_up(float_up(s) * math.sqrt(2 * math.pi), 4)
    return roundings_up(f_m + s_up * phi_up(float_up(-m / s)), 4)


def _poisson_rel(s: float) -> float:
    """Z/(s√(2π)) − 1 ≤ 2e^{−c}/(1 − e^{−3c}), c = 2π²s² (Poisson summation; module docstring)."""
    c = 2 * math.pi**2 * s * s
    return 2 * math.exp(-c) / -math.expm1(-3 * c) * (1 + 1e-10) + rounding_rel(4)


def simpson_logs(
    A: FloatArray, B: FloatArray, m: int, s_f: float, two_s2: float, log_n0: float
) -> tuple[FloatArray, FloatArray]:
    """``(log I, rel)``: I = ∫_A^B f/(s√(2π)) by composite Simpson with 2m subintervals, and a bound on its
    relative error: the remainder (B − A)⁵/(2880 m⁴)·max|f⁗| (Atkinson 1989, Sec. 5.1) relative to
    I ≥ (B − A)·min f, with max|f⁗| ≤ max f·(t⁴ + 6t² + 3)/s⁴ and max f/min f ≤ e^{(B − A)·t_max/s}; plus
    the evaluation of the 2m + 1 exponentials (nodes rounded by ≤ 3u|x|, which moves f by ≤ 3u·t² relative)
    and their positive-weighted sum."""
    k = np.arange(2 * m + 1, dtype=np.float64)
    wts = np.where(k % 2 == 1, 4.0, 2.0)
    wts[0] = wts[-1] = 1.0
    hp = (B - A) / (2 * m)
    x = A[:, None] + hp[:, None] * k[None, :]
    e = x * x / two_s2
    emin = np.min(e, axis=1)
    emax = np.max(e, axis=1)
    with np.errstate(under="ignore"):
        total = np.sum(np.exp(-(e - emin[:, None])) * wts[None, :], axis=1)
    log_i = np.log(hp / 3) + np.log(total) - emin - log_n0
    tmax = np.maximum(np.abs(A), np.abs(B)) / s_f
    wdt = (B - A) / s_f
    t2 = tmax * tmax
    with np.errstate(over="ignore", invalid="ignore"):
        rem = (wdt / m) ** 4 / 2880 * (t2 * t2 + 6 * t2 + 3) * np.exp(wdt * tmax * 1.001 + 1e-9)
    rel = (
        rem * SAFE
        + rounding_err(8, emax + 1)
        + rounding_err(4, t2 + 1)
        + libm_err(2)
        + float(gamma_padded(2.0 * m + 6))
        + rounding_err(8, np.abs(log_i) + emin + abs(log_n0) + 1)
    )
    return log_i, np.where(np.isfinite(rel), rel, np.inf)


def em_bucket_logs(
    A: FloatArray, B: FloatArray, s_f: float, two_s2: float, log_n0: float, m: int
) -> tuple[FloatArray, FloatArray]:
    """``(log S, rel)``: S = Σ_{z=A}^{B} f(z)/(s√(2π)) by Euler–Maclaurin (module docstring), B − A ≥ 2,
    and a bound on its relative error. The integral is the better (per bucket) of a Φ-difference and
    composite Simpson with 2m subintervals."""
    ta, tb = A / s_f, B / s_f
    lI, rI = log_phi_diff(tb, ta)
    tmax = np.maximum(np.abs(ta), np.abs(tb))
    # Rounding of the arguments (δ ≤ 3u·|t| each) moves Φ(t) by ≤ δ·φ(t)·e^{|t|δ} ≤ 1.01·δ·φ(t); relative
    # to the computed difference e^{lI} (itself within a factor 1 ± rI of the true one).
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        phi_a = np.exp(-ta * ta / 2 - lI) / math.sqrt(2 * math.pi)
        phi_b = np.exp(-tb * tb / 2 - lI) / math.sqrt(2 * math.pi)
        r_arg = rounding_err(3.01, np.abs(ta) * phi_a + np.abs(tb) * phi_b) * 1.02 / np.maximum(1 - rI, 0.0)
    rI = np.where(np.isfinite(lI) & np.isfinite(r_arg), rI + r_arg, np.inf)
    lS, rS = simpson_logs(A, B, m, s_f, two_s2, log_n0)
    use_s = rS < rI
    lI = np.where(use_s, lS, lI)
    rI = np.where(use_s, rS, rI)
    xa, xb = A * A / two_s2, B * B / two_s2
    # T/N0 = (e^{−x_A} + e^{−x_B})/(2 N0); D/T = (t_A w_A − t_B w_B)/(6 s), w = weights of the two ends.
    lT = np.logaddexp(-xa, -xb) - math.log(2.0) - log_n0
    wa = 1.0 / (1.0 + np.exp(np.minimum(xa - xb, 700.0)))
    wb = 1.0 - wa
    dt = (ta * wa - tb * wb) / (6 * s_f)
    # dt ≤ −1 (a narrow s, one end far steeper than the other): T(1 + D/T) ≤ 0 and this bound does not
    # apply; such ranges get rel = inf below (summed atom by atom). (found by hypothesis: the NaN of
    # log1p(dt < −1) raised a RuntimeWarning at s = 1/2, range [−2, 6])
    applies = dt > -1
    lTD = lT + np.log1p(np.where(applies, dt, 0.0))
    log_s = np.logaddexp(lI, lTD)
    # Shares of I and T in S (S = I + T(1 + D/T) ≥ (I + T)(1 − |D/T|)).
    with np.errstate(under="ignore", over="ignore", invalid="ignore"):
        fi = np.exp(lI - log_s)
        ft = np.exp(lT - log_s)
    t2 = tmax * tmax
    c_r = (t2 * t2 + 6 * t2 + 3) / (384 * s_f**4)
    e_t = rounding_err(8, xa + xb + abs(log_n0) + 1) + libm_err(2)
    num = (rI + c_r) * fi + e_t * ft * (1 + np.abs(dt)) + rounding_err(8, np.abs(dt)) * ft
    rel = num * 1.01 + rounding_err(8, np.abs(log_s) + 1) + libm_err(4)
    rel = np.where(np.isfinite(rel) & np.isfinite(log_s) & applies, rel, np.inf)
    return log_s, rel


def simpson_panels(A: FloatArray, B: FloatArray, s_f: float) -> IntArray:
    """Per range [A, B], the number of Simpson panels m ∈ {1, 2, 4, 8, 16} whose error bound in
    :func:`simpson_logs` is least: its remainder term falls as m⁻⁴ and its rounding term γ_{2m+6} grows
    with m; no other term depends on m. (Any m gives a certified bound; this one gives the tightest.)"""
    wdt = (B - A) / s_f
    tmax = np.maximum(np.abs(A), np.abs(B)) / s_f
    t2 = tmax * tmax
    with np.errstate(over="ignore", invalid="ignore"):
        rem1 = wdt**4 / 2880 * (t2 * t2 + 6 * t2 + 3) * np.exp(wdt * tmax * 1.001 + 1e-9) * SAFE
    best = np.ones(A.shape, dtype=np.int64)
    best_bound = rem1 + float(gamma_padded(8.0))
    for m in (2, 4, 8, 16):
        bound = rem1 / m**4 + float(gamma_padded(2.0 * m + 6))
        better = bound < best_bound  # (NaN, from an infinite remainder, is never better)
        best = np.where(better, m, best)
        best_bound = np.where(better, bound, best_bound)
    return best


def _em_range_logs(
    A: FloatArray, B: FloatArray, s_f: float, two_s2: float, log_n0: float
) -> tuple[FloatArray, FloatArray]:
    """``(log S, rel)`` of S = Σ_{z=A}^{B} f(z)/(s√(2π)) per range (B − A ≥ 2) by Euler–Maclaurin
    (:func:`em_bucket_logs`), each range with its own Simpson panels (:func:`simpson_panels`), evaluated
    ``BLOCK`` nodes at a time."""
    out_l = np.empty(A.size)
    out_r = np.empty(A.size)
    m = simpson_panels(A, B, s_f)
    for mv in np.unique(m):
        g = np.flatnonzero(m == mv)
        step = max(1, BLOCK // (2 * int(mv) + 1))
        for i in range(0, g.size, step):
            gi = g[i : i + step]
            out_l[gi], out_r[gi] = em_bucket_logs(A[gi], B[gi], s_f, two_s2, log_n0, int(mv))
    return out_l, out_r


def em_usable(rel: FloatArray, count: IntArray, what: str) -> npt.NDArray[np.bool_]:
    """Which Euler–Maclaurin range sums to keep: those whose relative bound ``rel`` is below 1e-6, and
    those of ranges too long to sum atom by atom (more than ``_DIRECT_MAX`` integers) whose bound is below
    0.5. The others are summed atom by atom.

    Raises:
        InvalidParameter: a range too long to sum atom by atom has no usable bound (``what`` names the
            mechanism).
    """
    long = count > _DIRECT_MAX
    ok = (rel < 1e-6) | (long & (rel < 0.5))
    if np.any(long & ~ok):
        raise InvalidParameter(
            f"{what}: no certified masses on this lattice (a range of more than {_DIRECT_MAX} outputs "
            "without a usable Euler–Maclaurin bound); try another step_bits"
        )
    return ok


def _direct_sums(
    A: FloatArray, count: IntArray, two_s2: float, log_n0: float
) -> tuple[FloatArray, FloatArray]:
    """``(log S, rel)`` of S = Σ_{z=A}^{A+n−1} f(z)/(s√(2π)) per range (n = ``count`` ≥ 1), summed atom by
    atom: every atom within 8u(x + x₀ + 1) + 2·``EXP_REL`` (x = z²/2s², its exponent shifted by x₀, the least
    x of the range: its largest atom), the positive sum within γ_{n+2} (Higham 2002, Lemma 3.1) and the
    final log within 8u(|log S| + x₀ + |log_n0| + 1). Ranges of at most ``_DIRECT`` integers are taken as
    a matrix per length, longer ones ``_CHUNK`` atoms at a time."""
    out_l = np.empty(A.size)
    out_r = np.empty(A.size)

    def finish(gi: IntArray, s: FloatArray, mx: FloatArray, xmax: FloatArray, n: FloatArray) -> None:
        lv = np.log(s) - mx - log_n0
        out_l[gi] = lv
        err = rounding_err(8, xmax + mx + 1) + libm_err(2)
        out_r[gi] = err + gamma_padded(n + 2) + rounding_err(8, np.abs(lv) + mx + abs(log_n0) + 1)

    short = count <= _DIRECT
    for c in np.unique(count[short]).tolist():
        g = np.flatnonzero(short & (count == c))
        for i in range(0, g.size, BLOCK):
            gi = g[i : i + BLOCK]
            xs = [(A[gi] + k) ** 2 / two_s2 for k in range(c)]
            mx = functools.reduce(np.minimum, xs)  # the largest atom of each range has the least x
            with np.errstate(under="ignore"):
                s = functools.reduce(np.add, [np.exp(mx - x) for x in xs])
            finish(gi, s, mx, functools.reduce(np.maximum, xs), np.full(gi.size, float(c)))
    rest = np.flatnonzero(~short)
    start = 0
    while start < rest.size:
        csum = np.cumsum(count[rest[start:]])
        stop = start + max(1, int(np.searchsorted(csum, _CHUNK, side="right")))
        gi = rest[start:stop]
        c = count[gi]
        offs = np.cumsum(c) - c
        z = np.repeat(A[gi], c) + (np.arange(int(np.sum(c)), dtype=np.float64) - np.repeat(offs, c))
        x = z * z / two_s2
        mx = np.minimum.reduceat(x, offs)
        with np.errstate(under="ignore"):
            s = np.add.reduceat(np.exp(-(x - np.repeat(mx, c))), offs)
        finish(gi, s, mx, np.maximum.reduceat(x, offs), c.astype(np.float64))
        start = stop
    return out_l, out_r


def range_sums(
    A: FloatArray, B: FloatArray, s_f: float, two_s2: float, log_n0: float, what: str
) -> tuple[FloatArray, FloatArray]:
    """``(log S, rel)`` of S = Σ_{z=A}^{B} f(z)/(s√(2π)) per range (A ≤ B integers, as floats), with a
    bound on each relative error: Euler–Maclaurin (:func:`_em_range_logs`) for ranges of more than
    ``_DIRECT`` integers whose bound is usable (:func:`em_usable`), atom by atom (:func:`_direct_sums`)
    otherwise.

    Raises:
        InvalidParameter: a range too long to sum atom by atom has no usable bound.
    """
    count = (B - A + 1).astype(np.int64)
    out_l = np.empty(A.size)
    out_r = np.empty(A.size)
    em = count > _DIRECT
    idx = np.flatnonzero(em)
    if idx.size:
        out_l[idx], out_r[idx] = _em_range_logs(A[idx], B[idx], s_f, two_s2, log_n0)
        em[idx[~em_usable(out_r[idx], count[idx], what)]] = False
    direct = np.flatnonzero(~em)
    if direct.size:
        out_l[direct], out_r[direct] = _direct_sums(A[direct], count[direct], two_s2, log_n0)
    return out_l, out_r


def normaliser(s: Fraction, z_min: int, z_max: int) -> tuple[float, float]:
    """``(log Z, rel)``: the normaliser Z = Σ_z f(z) within the relative factor 1 ± ``rel`` (the float
    log's own rounding is left to the callers' |log Z| terms, as in :func:`_add_atoms`).

    Poisson summation gives s√(2π) ≤ Z ≤ s√(2π)·(1 + 2e^{−c}/(1 − e^{−3c})) (module docstring). If the
    range [z_min, z_max] (z_min ≤ 0 ≤ z_max) holds at most ``ATOM_LIMIT`` integers, Z is also summed
    directly over it plus its two tails (:func:`tail_sum_up`), and the tighter of the two is used."""
    s_f = float(s)
    log_n0 = math.log(s_f) + 0.5 * math.log(2 * math.pi)
    n_atoms = z_max - z_min + 1
    if n_atoms > ATOM_LIMIT:
        return log_n0, _poisson_rel(s_f) + libm_err(1)
    zf = np.arange(z_min, z_max + 1, dtype=np.float64)
    x = zf * zf / (2 * float(s * s))
    ssum = float(np.sum(np.exp(-x)))
    e_s = rounding_err(8, float(np.max(x)) + 1) + libm_err(2) + float(gamma_padded(n_atoms + 1.0))
    tails = roundings_up(tail_sum_up(1 - z_min, s) + tail_sum_up(z_max + 1, s), 2)
    rel_direct = max(e_s + tails / ssum, e_s / (1 - e_s)) * SAFE + rounding_rel(4)
    rel_poisson = _poisson_rel(s_f) + rounding_err(4, abs(log_n0))
    if rel_direct < rel_poisson:
        return math.log(ssum), rel_direct + rounding_err(4, abs(math.log(ssum))) + libm_err(1)
    return log_n0, rel_poisson + libm_err(1)


def pld_discrete_gaussian(
    sensitivity: int,
    sigma_units: Number,
    *,
    step_bits: int = DEFAULT_STEP_BITS,
    tail: float = DEFAULT_TAIL,
) -> PLD:
    """The PLD of the discrete Gaussian mechanism: integer sensitivity Δ, noise parameter s (grid units).

    P(z) ∝ e^{−z²/2s²} on the integers, Q its shift by Δ; the loss (Δ² − 2zΔ)/(2s²) is a lattice in z
    and every loss bucket is an integer range whose masses are summed with a certified error (atoms for
    small s, Euler–Maclaurin with a bounded remainder and Poisson summation for the normaliser for large
    s; see :mod:`discrete_gaussian`). This is the noise of dpcompose's ``make_gaussian``
    in grid units (Δ = the grid-unit L2 sensitivity, s = σ/g) and of ``make_discrete_gaussian`` (s = σ).
    The PLD is the same in both orders (z ↦ Δ − z), and shifts d < Δ are dominated (the discrete Gaussian
    is log-concave, so its likelihood ratio is monotone and every optimal test is a half-line).

    Source: Canonne–Kamath–Steinke 2020 (the discrete Gaussian mechanism; its normaliser by Poisson
    summation); PLDs of discrete-valued mechanisms: Koskela–Jälkö–Prediger–Honkela 2021; the lattice
    sides: :func:`~dpcompose.accounting._pld.buckets.build_sides` (Doroshenko et al. 2022, connect the
    dots); bucket sums:
    the Euler–Maclaurin remainder (Apostol 1999; DLMF 2.10.1), composite Simpson (Atkinson 1989,
    Sec. 5.1), float sums (Higham 2002, Lemma 3.1).

    Raises:
        InvalidParameter: Δ not a non-negative integer, s not positive and finite or above 2**40, Δ/s
            outside [1e-8, 30], or a lattice too fine for the loss range (more than 2**26 points).

    Examples:
        >>> lo, hi = pld_discrete_gaussian(1, 3).epsilon_bounds(1e-6)
        >>> 1.45 < float(lo) <= float(hi) < 1.46
        True
    """
    delta = check_int_sensitivity(sensitivity)
    s = exact(check_finite_positive(sigma_units, "sigma_units"), "sigma_units")
    if s > 1 << 40:
        raise InvalidParameter(f"sigma_units={sigma_units!r} must be at most 2**40 for a discrete Gaussian")
    bits = check_bits(step_bits)
    tl = check_tail(tail)
    h = math.ldexp(1.0, -bits)
    if delta == 0:
        b = Buckets(-1, np.ones(1), np.array([math.exp(-h)]), np.full(1, libm_err(8)))
        return build_pld(bits, b, tl, "DiscreteGaussian(Δ=0)")
    mu = delta / s
    if not Fraction(1, 10**8) <= mu <= 30:
        raise InvalidParameter(
            f"sensitivity={sensitivity!r} / sigma_units={sigma_units!r} must be in [1e-8, 30] for a discrete "
            "Gaussian PLD"
        )
    name = f"DiscreteGaussian(Δ={delta}, s={float(s):g})"
    with memory.refuse_out_of_memory(f"building {name}", memory.SMALLER_BITS):
        return build_pld(bits, _dgauss_buckets(bits, delta, s), tl, name)


def _dgauss_buckets(bits: int, delta: int, s: Fraction) -> Buckets:
    h = math.ldexp(1.0, -bits)
    s2 = s * s
    # L(z)·2**bits = (Δ² − 2zΔ)·2**bits/(2s²); with s² = n/d: X = Δ²·2**bits·d, D = 2Δ·2**bits·d, Y = 2n
    sd = (1 << bits) * s2.denominator
    lat = Lattice(delta * delta * sd, 2 * delta * sd, 2 * s2.numerator)
    s_f = float(s)
    two_s2 = 2 * float(s2)
    log_n0 = math.log(s_f) + 0.5 * math.log(2 * math.pi)
    if _WIDTH * s >= 1:  # the outputs −⌈14s⌉ ≤ z ≤ ⌈14s⌉ + Δ are enumerated (module docstring)
        K = math.ceil(_WIDTH * s)
        z_min, z_top = -K, K + delta
    else:  # every output but 0 has f(z) ≤ e^{−1/(2s²)} < e^{−98}: only z = 0 is enumerated
        z_min, z_top = 0, 0
    j_hi = lat.bucket_of(z_min)
    j_lo = lat.bucket_of(z_top)
    z_max = int(lat.edge_ceil(np.array([j_lo], dtype=np.int64))[0]) - 1  # the last integer of bucket j_lo
    nb = j_hi - j_lo + 1
    check_points(nb, f"a discrete Gaussian PLD with Δ={delta}, s={float(s):g}", bits)
    acc = _Acc(nb)
    # Tails: z < z_min go to +∞, z > z_max to the lowest point (upper bounds on Σf, then on P = Σf/Z with
    # Z ≥ max(1, s√(2π)): Z ≥ f(0) = 1, and Z ≥ s√(2π) by Poisson summation).
    tail_top, tail_bot = tail_sum_up(1 - z_min, s), tail_sum_up(z_max + 1, s)
    z_floor = max(1.0, roundings_down(float_down(s) * math.sqrt(2 * math.pi), 4))
    t_top = roundings_up(tail_top / z_floor, 2)
    t_bot = roundings_up(tail_bot / z_floor, 2)
    log_z, rel_z = normaliser(s, z_min, z_max)
    if z_max - z_min + 1 <= ATOM_LIMIT:
        z = np.arange(z_min, z_max + 1, dtype=np.int64)
        j = lat.bucket(z)  # (at most ATOM_LIMIT atoms: one pass)
        _add_atoms(acc, z, j - j_lo, j.astype(np.float64) * h, two_s2, delta, log_z, rel_z)
    else:
        js = np.arange(j_lo, j_hi + 2, dtype=np.int64)
        edges = lat.edge_ceil(js)
        A = np.maximum(edges[1:], z_min)
        B = np.minimum(edges[:-1] - 1, z_max)
        count = np.maximum(B - A + 1, 0)
        a_all = js[:-1].astype(np.float64) * h
        em = count > _DIRECT
        if np.any(em):
            idx = np.flatnonzero(em)
            Af, Bf = A[idx].astype(np.float64), B[idx].astype(np.float64)
            lsp, relp = _em_range_logs(Af, Bf, s_f, two_s2, log_n0)
            lsq, relq = _em_range_logs(Af - delta, Bf - delta, s_f, two_s2, log_n0)
            a = a_all[idx]
            lp = lsp + (log_n0 - log_z)
            lr = a + lsq + (log_n0 - log_z)
            rel = np.maximum(relp, relq) + rel_z + rounding_err(8, np.abs(a) + np.abs(lsq) + 1) + libm_err(2)
            # Buckets whose bound is loose are summed directly if they are not too long; otherwise the
            # (finite) bound is kept.
            what = f"sigma_units={float(s):g}, sensitivity={delta}, step_bits={bits}"
            ok = em_usable(rel, count[idx], what)
            good = ok & (lp >= UNDERFLOW)
            under = ok & (lp < UNDERFLOW)
            # an underflowing bucket holds at most count atoms each below e^{−700}·(1 + rel)
            acc.inf += float(np.sum(count[idx[under]])) * math.exp(UNDERFLOW) * 1.01
            gi = idx[good]
            acc.p[gi] = np.exp(lp[good])
            acc.r[gi] = np.exp(lr[good])
            acc.rel[gi] = rel[good]
            em[idx[~good & ~under]] = False  # summed directly below
        direct = np.flatnonzero(~em & (count > 0))
        # Enumerate the atoms of the direct buckets in chunks.
        start = 0
        while start < direct.size:
            csum = np.cumsum(count[direct[start:]])
            stop = start + max(1, int(np.searchsorted(csum, _CHUNK, side="right")))
            sel = direct[start:stop]
            cnt = count[sel]
            off = np.repeat(np.cumsum(cnt) - cnt, cnt)
            zc = np.repeat(A[sel], cnt) + (np.arange(int(np.sum(cnt)), dtype=np.int64) - off)
            ic = np.repeat(sel, cnt)
            _add_atoms(acc, zc, ic, np.repeat(a_all[sel], cnt), two_s2, delta, log_z, rel_z)
            start = stop
    return Buckets(
        j_lo, acc.p, acc.r, acc.rel, below_hi=t_bot * (1 + 1e-10), above_hi=t_top * (1 + 1e-10) + acc.inf
    )
