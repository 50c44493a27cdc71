"""Discretisation: a mechanism's loss buckets to the two sides (connect-the-dots upper, Doroshenko et al.
2022; lumped lower)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from dpcompose.accounting import _pld_memory as memory
from dpcompose.accounting._gaussian import log_phi_diff, phi_up
from dpcompose.accounting._pld.floats import (
    PAD,
    few_ulps_up,
    libm_down,
    libm_err,
    libm_up,
    pad_down,
    pad_up,
    rounding_err,
    rounding_rel,
    roundings_down,
    roundings_up,
)
from dpcompose.accounting._pld.lattice import Grid, check_points
from dpcompose.accounting._pld.side import Side, trim

FloatArray = npt.NDArray[np.float64]


@dataclass
class Buckets:
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


def build_sides(
    bits: int, b: Buckets, mult: int = 1, lazy_lower: bool = False
) -> tuple[Side, Side | Callable[[], Side]]:
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
    lattice costs the span's zeros and little else. The lattice is ``mult``·2**-``bits`` (:class:`Grid`).
    ``lazy_lower``: the lower side is returned as a function that builds it (:func:`_lumped_side`; a privacy
    map reads only the upper one)."""
    h = math.ldexp(float(mult), -bits)
    nz = np.flatnonzero(b.p > 0)
    # the buckets with mass, as a slice when they are contiguous (every bucket of a continuous mechanism)
    contiguous = nz.size > 0 and int(nz[-1]) - int(nz[0]) + 1 == nz.size
    sel: slice | npt.NDArray[np.intp] = slice(int(nz[0]), int(nz[-1]) + 1) if contiguous else nz
    p, r = b.p[sel], np.maximum(b.r[sel], 0.0)
    low_ok = None if b.low_ok is None else b.low_ok[sel]
    rel = b.rel[sel] + rounding_rel(8)
    p_hi = p * (1 + rel)
    # Split of bucket (a − η, a + w], w = h (or a wide bucket's width), η = b.slack (losses may lie up to η
    # below a): each loss ℓ keeps its Q-mass when its P-mass is split between a − η and a + w, so p_b =
    # (e^η·P − e^a·Q)/(e^η − e^{−w}) goes to a + w and the rest to a − η, which is then moved up to a
    # (rounding a loss up only raises δ). With η = 0 this is the plain connect-the-dots split of (a, a + w].
    # (The split of one loss between any two points around it is a mean-preserving spread of e^{−L} under
    # P, which raises E_P[(1 − e^{ε}·e^{−L})₊], a convex function of e^{−L}, at every ε: so the split pair
    # dominates for any width.)
    eta = b.slack
    e_eta = 1.0 if eta == 0 else pad_up(math.exp(eta), 48)  # upper bound of e^η
    eh = pad_up(math.exp(h), 48)
    # each bucket's two ends, as lattice offsets from b.lo, and (wide buckets) a lower bound on e^η − e^{−w}
    # for its width w: a wide bucket (a, a + w] is split between its own two ends, as a narrow one is
    den_b: float | FloatArray
    if b.edges is None:
        at_a, at_b = nz, nz + 1
        width: int | npt.NDArray[np.int64] = 1
        den_b = pad_down(math.expm1(eta) - math.expm1(-h), 48)  # lower bound of e^η − e^{−h}
    else:
        at_a, at_b = b.edges[nz], b.edges[nz + 1]
        width = at_b - at_a
        w = width.astype(np.float64) * h  # exact (an integer times h, far below 2**53 steps)
        # expm1(η) ≥ 0 and −expm1(−w) > 0, each rounded down (numpy's expm1 within EXP_REL), then the
        # sum's rounding and the products'
        den_b = roundings_down(pad_down(math.expm1(eta), 48) + libm_down(-np.expm1(-w)), 8)
    scale = (e_eta * p + eh * r) * (rel + rounding_rel(8))
    num_b = e_eta * p - r + scale
    hi_b = np.minimum(roundings_up(np.maximum(num_b, 0.0) / den_b, 4), p_hi)
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
        up[t] = up[t] * (1 + PAD) + 5e-324
    else:
        up = np.where(up > 0, up * (1 + PAD) + 5e-324, 0.0)
    upper = trim(Side(b.lo + first, up, few_ulps_up(b.above_hi + b.inf_hi), 0.0))
    lower_args = (h, p, r, rel, at_a, width, b.lo, b.edges is not None, last, b.inf_lo)
    if lazy_lower:  # (a module-level function and arrays: the PLD still pickles)
        return upper, functools.partial(_lumped_side, *lower_args)
    return upper, _lumped_side(*lower_args)


def _lumped_side(
    h: float,
    p: FloatArray,
    r: FloatArray,
    rel: FloatArray,
    at_a: npt.NDArray[np.int64],
    width: int | npt.NDArray[np.int64],
    lo: int,
    wide: bool,
    last: int,
    inf_lo: float,
) -> Side:
    """``build_pld``'s lower side from its buckets with P-mass: masses ``p``, ``r`` (e^{a}·Q-mass) and
    relative accuracy ``rel``, lower ends ``at_a`` and widths ``width`` in steps of ``h`` from ``lo``
    (``wide``: not all one step), the largest upper end ``last`` and the P-mass at +∞ (``inf_lo``).
    Running out of memory names the step_bits to change."""
    # Lower side: the lumped pair (PLD.delta_lumped). Bucket j goes to the label nearest its merged loss
    # ℓ_j = a_j + ln(p/r) (computed in floats: any label is valid, the nearest one usually merges the least;
    # the two buckets around loss 0 are the exception, below), among the bucket's points from one step
    # below its lower end to its top, carrying a lower bound on its P-mass and an upper bound on N =
    # e^{label}·Q-mass = r·e^{label − a_j}. Buckets whose merged loss is further away (collapsed edges), or
    # without a usable relative bound (rel ≥ 1: P-lower-bound 0) or Q-mass (r = 0), are dropped (a
    # restriction, which only lowers δ); so is the mass above the last bucket. The mass at +∞ has Q = 0.
    with memory.refuse_out_of_memory(f"building a lower side of {p.size} buckets", memory.SMALLER_BITS):
        p_lo = p * np.maximum(1 - rel, 0.0) * (1 - PAD)
        with np.errstate(divide="ignore", invalid="ignore"):
            move = np.rint(np.log(p_lo / r) / h)
        use = (p_lo > 0) & (r > 0) & np.isfinite(move) & (move >= -1) & (move <= width)
        # the buckets on either side of loss 0 keep their own labels (−1 and 0): moved to the nearest label,
        # both land on 0 where their merged losses lie within h/2 of it, and merging the negative losses with
        # the positive ones loses δ near ε = 0 (all of it for a subsampled pair at a rate far below h)
        move = np.where((at_a + lo == 0) | (at_a + lo == -1), 0.0, move)
        mv = np.where(use, move, 0.0).astype(np.int64)
        if not wide:
            e_up = libm_up(roundings_up(math.exp(h), 4))
            e_dn = libm_up(roundings_up(math.exp(-h), 4))  # (upper bounds of e^{±h})
            factor = np.where(mv > 0, e_up, np.where(mv < 0, e_dn, 1.0))
        else:  # upper bounds of e^{mv·h} (mv·h exact)
            factor = np.where(mv == 0, 1.0, libm_up(roundings_up(np.exp(mv.astype(np.float64) * h), 4)))
        n_b = np.where(use, roundings_up(r * (1 + rel) * factor, 8) * (1 + PAD), 0.0)
        f_lo = int(at_a[0]) - 1 if at_a.size else -1  # the lowest label a bucket can move to
        at = at_a + mv - f_lo  # index in arrays starting at label lo + f_lo
        # (each label's entries summed in order, as np.add.at would, 5 times faster; the adds round: a label
        # lies within one step of at most three buckets' ranges, so at most three buckets share it; covered by
        # the pads above)
        low = np.bincount(at, weights=np.where(use, p_lo, 0.0), minlength=last - f_lo + 1).astype(np.float64)
        nq = np.bincount(at, weights=n_b, minlength=last - f_lo + 1).astype(np.float64)  # (floats already)
        return trim(Side(lo + f_lo, low, max(0.0, inf_lo * (1 - PAD)), 0.0, nq, 0.0))


def bucket_of(loss: Fraction, grid: Grid) -> int:
    """The j with loss ∈ (j·h, (j+1)·h]."""
    return math.ceil(loss / grid.exact) - 1


def gaussian_buckets(bits: int, mu: float, width: float) -> Buckets:
    """Buckets of the PLD of the Gaussian pair P = N(0, 1), Q = N(μ, 1): the loss L(o) = μ²/2 − μo is
    N(μ²/2, μ²) under P and N(−μ²/2, μ²) under Q, so each bucket's masses are differences of Φ
    (:func:`log_phi_diff`, with its certified relative error; the arguments' rounding is covered by a
    padded relative term and the buckets' slack) and the two tails are bounded by :func:`phi_up`."""
    h = math.ldexp(1.0, -bits)
    m2 = mu * mu
    mean = m2 / 2
    lo = math.floor((mean - width * mu) / h) - 1
    hi = math.ceil((mean + width * mu) / h)
    check_points(hi - lo, f"a Gaussian PLD with μ={mu:g}, width={width:g}", bits)
    js = np.arange(lo, hi, dtype=np.float64)
    a = js * h
    b = a + h
    # P: L ~ N(μ²/2, μ²); Q: L ~ N(−μ²/2, μ²). Standardised bounds (rounding of these is absorbed: the
    # bucket edges shift by ≤ a few ulps of the argument, covered by the padded relative error).
    pa, pb = (a - mean) / mu, (b - mean) / mu
    qa, qb = (a + mean) / mu, (b + mean) / mu
    lp, rp = log_phi_diff(pb, pa)
    lq, rq = log_phi_diff(qb, qa)
    arg_pad = rounding_err(4, np.abs(pa) + np.abs(pb) + np.abs(qa) + np.abs(qb) + 1) * (
        np.abs(pb) + np.abs(qb) + 1
    )
    with np.errstate(over="ignore", under="ignore"):
        p = np.exp(lp)
        r = np.exp(a + lq)
    rel = np.maximum(rp, rq) + arg_pad * 4 + libm_err(8)
    bad = ~np.isfinite(rel) | (rel > 1e-3)
    # Buckets whose relative error is not small: keep the P-mass bound only (all of it to the upper point).
    p = np.where(np.isfinite(p), p, 0.0)
    r = np.where(bad | ~np.isfinite(r), 0.0, r)
    rel = np.where(bad, np.maximum(np.where(np.isfinite(rel), rel, 1.0), 1.0), rel)

    # Tails: P(L ≤ a_0) = Φ((a_0 − μ²/2)/μ) and P(L > b_n) = Φ(−(b_n − μ²/2)/μ), upper bounds. The edges
    # are exact; the float mean is within u·μ²/2 of μ²/2, and the subtraction and the division round once
    # each, so a computed argument x is within 3u(|x| + mean/μ) of the exact one: rounded up by that, then
    # Φ is bounded above by phi_up (log_ndtr padded by its full stated error).
    def arg_up(x: float) -> float:
        return math.nextafter(x + rounding_err(3, abs(x) + mean / mu), math.inf)

    below = phi_up(arg_up(float(a[0] - mean) / mu))
    above_hi = phi_up(arg_up(-(float(b[-1]) - mean) / mu))
    # The standardised edges (a − μ²/2)/μ are rounded, so a bucket's outputs may have losses a few ulps of
    # |a| + μ²/2 outside (a, a + h]: the split of build_sides allows that much slack (the lower side's
    # lumping is a post-processing wherever the losses lie).
    slack = rounding_err(16, float(np.max(np.abs(a))) + mean + h + 1)
    return Buckets(lo, p, r, rel, below_hi=below, above_hi=above_hi, slack=slack)
