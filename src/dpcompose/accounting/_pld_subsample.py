"""PLDs of subsampled mechanisms (Poisson sampling; sampling without replacement).

**The pairs.** Let (P, Q) be a dominating pair of a mechanism M (Zhu–Dong–Wang 2022, Def. 7): Q the
output law without the record in question (for additive noise: the noise centred at 0), P the law with it
(centred at the sensitivity Δ). With sampling rate q write mix = (1 − q)·Q + q·P and L = ln(mix/Q) for the
"remove" privacy loss. For every pair used here L(o) = ln(1 − q + q·e^{y(o)}), y = ln(P/Q), is increasing in
the output coordinate o.

* **Poisson sampling**, add/remove neighbours, (P, Q) dominating M for add/remove: (mix, Q) dominates
  M∘S for the neighbours with the record removed and (Q, mix) for those with it added (Zhu–Dong–Wang 2022,
  Thm 11). Which order applies is fixed by which of the two data sets holds the record, so it is the
  same for every mechanism of a composition: each order is composed with the same order of the others
  (Zhu–Dong–Wang 2022, Thm 10) and δ(ε) is the larger of the two (:attr:`PLD.reverse`).
* **Sampling without replacement** of m out of n records (q = m/n), substitute neighbours, (P, Q)
  dominating M for substitution: for every ordered pair of neighbours and α ≥ 1,
  H_α(M∘S(D) ‖ M∘S(D′)) ≤ H_α(mix ‖ Q). (Write M∘S(D) = (1 − q)A + qB and M∘S(D′) = (1 − q)A + qB′,
  B, B′ the runs on subsets holding the substituted record; couple A and B by exchanging one record, as
  in the proof of Balle–Barthe–Gaboardi 2018, Thm 9; then joint convexity, advanced joint convexity
  (ibid., Thm 2) and convexity of H in its second argument give at most (1 − β)·q·H_{α′}(B ‖ A) +
  β·q·H_{α′}(B ‖ B′) ≤ q·H_{α′}(P ‖ Q) = H_α(mix ‖ Q), α′ = 1 + (α − 1)/q, as B, A and B, B′ are substitute
  neighbours. This is the α ≥ 1 part of the two-part bound of Zhu–Dong–Wang 2022, Prop. 30.)
  Substitution is symmetric, so for α < 1, H_α(X ‖ Y) = 1 − α + α·H_{1/α}(Y ‖ X) ≤ H_α(Q ‖ mix).
  Unlike Poisson sampling, the *order* of a substitute pair is not fixed across a composition (which
  record value acts as "added" depends on the query), so composing the two orders separately is not
  enough: a composition can mix them, and a mix can exceed both (tests/accounting/
  test_pld_subsample_discrete.py has one; Lebeda–Regehr–Kamath–Steinke 2024 discuss related pitfalls).
  Instead this module uses one symmetric pair with exactly that two-part profile: with S = {L > 0},
  P* = mix|_S + Q̃|_S + c·δ₀ and Q* = Q|_S + m̃ix|_S + c·δ₀, where Q̃|_S is a mirrored copy of S that
  carries Q's mass under P* and mix's under Q* (losses −L), and c = 1 − mix(S) − Q(S) an atom of loss
  0. Then H_α(P* ‖ Q*) ≥ H_α(mix ‖ Q) for α ≥ 1 (the mirrored part only adds), (P*, Q*) equals its own
  reverse, so the bound holds for α < 1 too, and (P*, Q*) dominates M∘S for all α ≥ 0 as Thm 10 of
  Zhu–Dong–Wang 2022 requires. It is a pair because c ≥ 0: every base pair here is symmetric (P is Q
  composed with a reflection ρ of the outputs, which maps S onto {Q > P}), so P(S) ≤ 1 − Q(S) and
  Q(S) ≤ P(S), hence Q(S) ≤ 1/2 and mix(S) + Q(S) ≤ (2 − 2q)Q(S) + q ≤ 1.

A larger q dominates a smaller one (mixing the output with a fresh sample of Q is a post-processing), so
a rate is rounded up to a float.

**Discretisation.** The outputs are cut into *cells* (intervals of the output coordinate, or integer
ranges) at two points per lattice loss a = j·h: one before which every output has L ≤ a and one from which
every output has L ≥ a, each certified with a padded evaluation of L (:func:`_mix_loss`). Every cell
carries a certified interval [lo, hi] of its losses (L at its two ends) and its two masses with relative
error bounds. :func:`_to_buckets` then puts each cell into the bucket (a, a + h] that contains hi and
records how far below a its lowest loss may lie (the buckets' slack, covered by ``_build``'s split);
a cell whose loss interval is not bounded below (a tail) makes its bucket go whole to the top. The
"add" order reads the same cells with losses −L, and the without-replacement pair reads the cells of S
twice (once mirrored) plus the atom c. S = {L > 0} = {y > 0} is decided exactly from the output coordinate
(y's sign is that of 2z − Δ, o − μ/2, …), and the partition is also cut where y changes sign, so every cell
lies in S or outside it; an output with L = 0 exactly (z = Δ/2) must stay out of S, or c can turn negative.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from dpcompose._scipy import log_ndtr
from dpcompose._validation import check_finite_nonnegative, check_finite_positive
from dpcompose.accounting._exact import Number, exact
from dpcompose.accounting._pld import (
    _EXP_REL,
    _TINY,
    _U,
    DEFAULT_STEP_BITS,
    DEFAULT_TAIL,
    PLD,
    FloatArray,
    _atoms,
    _Buckets,
    _build,
    _check_bits,
    _check_points,
    _check_tail,
    _fmt,
    _in_parallel,
    _log_phi_steps,
)
from dpcompose.accounting._pld_dgauss import _BLOCK, _SAFE, _UNDERFLOW, _gamma
from dpcompose.accounting._profile import _LOG_NDTR_PAD, _log_ndtr_up
from dpcompose.errors import InvalidParameter

__all__ = ["pld_subsampled_gaussian", "pld_subsampled_laplace"]

Sampling = Literal["poisson", "without_replacement"]
IntArray = npt.NDArray[np.int64]

_FAR = -1e4  # stands for o = −∞ for the continuous Gaussian (its mass below is bounded by 1e-300)


# ---------------------------------------------------------------------------------------------------------
# The loss and the cells
# ---------------------------------------------------------------------------------------------------------


def _mix_loss(y: FloatArray, ey: FloatArray | float, q: float) -> tuple[FloatArray, FloatArray]:
    """``(lo, hi)``: certified bounds on L = ln(1 − q + q·e^{y₀}) for every float y with |y − y₀| ≤ ``ey``.

    L is evaluated as ln((1 − q) + q·e^y) for y < 0 and y + ln(q + (1 − q)·e^{−y}) for y ≥ 0: logs of
    sums of two positive terms, each within a few ulps (exp within ``_EXP_REL``), so the log is within
    1.01·(``_EXP_REL`` + 3u) + (2u + ``_EXP_REL``)·(|L| + |y|) (the log's own error, assumed as exp's, and
    the final sum); dL/dy ≤ 1 adds ``ey``. The pad is ten times that. y = −∞ (an output P cannot produce)
    gives ln(1 − q) up to its rounding.
    """
    y = np.asarray(y, dtype=np.float64)
    fin = np.isfinite(y)
    ya = np.where(fin, y, 0.0)
    below = y < 0
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        # t = e^{−|y|} serves both forms (one exp and one log per entry); y = −∞ gives t = 0
        t = np.exp(np.where(fin, -np.abs(ya), np.where(below, -np.inf, 0.0)))
        val = np.where(below, 0.0, ya) + np.log(np.where(below, (1 - q) + q * t, q + (1 - q) * t))
    size = np.abs(np.where(np.isfinite(val), val, 0.0)) + np.abs(ya)
    pad = 10 * (2 * _EXP_REL + 6 * _U + (2 * _U + _EXP_REL) * size)
    pad = pad + np.where(fin, 1.01 * np.asarray(ey, dtype=np.float64), 0.0) + 1e-300
    return val - pad, val + pad


def _y_of_loss(lams: FloatArray, q: float) -> FloatArray:
    """The y with ln(1 − q + q·e^y) = λ (an estimate, used only to start the certified edge search):
    −∞ for λ ≤ ln(1 − q), +∞ where it overflows."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        small = np.log1p(np.expm1(np.minimum(lams, 700.0)) / q)
        big = lams - math.log(q) + np.log1p(-(1 - q) * np.exp(-np.maximum(lams, 30.0)))
        y = np.where(lams > 30, big, small)
    return np.where(np.isnan(y), -np.inf, y)


@dataclass
class _Cells:
    """A partition of a subsampled pair's outputs into cells, in increasing order of the remove loss.

    Per cell: ``lo``/``hi`` certified bounds on L = ln(mix/Q) over the cell (``hi`` may be +∞, ``lo`` −∞);
    ``lmix``/``lbase`` the natural logs of its mix- and Q-masses (−∞: none); ``rel`` a bound on the
    relative error of both masses (a cell with ``rel`` ≥ 1 is known only by the upper bound
    (1 + rel)·mass, as the tails are); ``pos`` whether the cell lies in S = {L > 0} (decided exactly; every
    cell lies in S or outside it).
    """

    lo: FloatArray
    hi: FloatArray
    lmix: FloatArray
    lbase: FloatArray
    rel: FloatArray
    pos: npt.NDArray[np.bool_]
    starts: IntArray | None = None
    """The lattice indices of the losses the cells were cut at, where that is a sparse set (every cell's
    losses then lie between two consecutive ones, up to the edges' slack: :func:`_thin`); None: every
    lattice loss in the range."""

    @staticmethod
    def join(parts: Sequence[_Cells]) -> _Cells:
        fields = ("lo", "hi", "lmix", "lbase", "rel", "pos")
        return _Cells(*(np.concatenate([getattr(c, f) for c in parts]) for f in fields))


def _cell(lo: float, hi: float, lmix: float, lbase: float, rel: float, pos: bool) -> _Cells:
    """One cell (an atom or a tail)."""
    def one(v: float) -> FloatArray:
        return np.array([v], dtype=np.float64)

    return _Cells(one(lo), one(hi), one(lmix), one(lbase), one(rel), np.array([pos]))


def _bound_only(mass_hi: float) -> tuple[float, float]:
    """``(log m, rel)`` of a mass known only to lie in [0, ``mass_hi``]."""
    if mass_hi <= 0:
        return -math.inf, 0.0
    return math.log(mass_hi / 2), 1.0


Bound = Callable[[FloatArray], tuple[FloatArray, FloatArray]]
"""Certified bounds (lo, hi) on a pair's loss at an array of outputs."""


def _at(bound: Bound, z: float) -> tuple[float, float]:
    """``bound`` at one output."""
    lo, hi = bound(np.array([z]))
    return float(lo[0]), float(hi[0])


def _sorted_unique(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """The distinct values, ascending, of an array made of sorted runs (a stable sort, a merge sort of the
    runs, orders it in about linear time where the default sort or ``np.unique`` takes far longer). Sorts
    ``values`` in place."""
    values.sort(kind="stable")
    return values[np.concatenate(([True], values[1:] != values[:-1]))]


def _mix_logs(
    lbase: FloatArray, rel_base: FloatArray, lp: FloatArray, rel_p: FloatArray, q: float
) -> tuple[FloatArray, FloatArray]:
    """``(log mix, rel)`` with mix = (1 − q)·Q + q·P from the logs of Q and P (relative errors add at most
    the rounding of ln(1 − q), ln q and the log-sum, padded)."""
    with np.errstate(invalid="ignore"):
        lm = np.logaddexp(math.log1p(-q) + lbase, math.log(q) + lp)
    rel = np.maximum(rel_base, rel_p) + 8 * _U * (np.abs(np.where(np.isfinite(lm), lm, 0.0)) + 2)
    return lm, rel + 4 * _EXP_REL


def _edges(
    lams: FloatArray,
    start: FloatArray,
    bound: Callable[[FloatArray], tuple[FloatArray, FloatArray]],
    integer: bool,
    lo_lim: float,
    hi_lim: float,
    at_most: bool,
    at_start: tuple[FloatArray, FloatArray] | None = None,
    run: FloatArray | None = None,
) -> FloatArray:
    """Cell boundaries near ``start`` (an estimate of where L crosses each λ), certified by ``bound``:

    ``at_most``: every output below the boundary b has L ≤ λ (checked at the last output below b: b − 1
    for integers, b itself for a continuum, whose cells are half-open [b, b′)); otherwise every output
    from b on has L ≥ λ. The search steps away from the crossing by growing steps (any point further away
    also qualifies, L being increasing); b = ``lo_lim`` (resp. ``hi_lim``) always qualifies: no output
    of the range lies below (resp. from) it. ``start`` lies in [``lo_lim``, ``hi_lim``] (:func:`_partition`
    clips it).

    A continuum may pass ``bound`` at the clipped starts (``at_start``, shared by both edges of a λ) and
    ``run``, an estimate of dx/dL at each start: the first step is then the one that covers the bound's
    excess over λ with a tenth to spare, instead of growing from 2**-46 (both only choose where to look;
    every boundary returned is checked by ``bound``).
    """
    if integer:
        b = np.floor(start)
        step = np.ones(b.shape)
    else:
        b = start.copy()  # (the search moves it in place)
        step = np.maximum(np.abs(b), 1.0) * 2.0**-46
    todo = np.arange(b.size)  # the entries not yet certified (only these are evaluated again)
    for it in range(200):
        bt, lt = b[todo], lams[todo]
        if it == 0 and at_start is not None and not integer:
            lo, hi = at_start
        else:
            lo, hi = bound(bt - 1 if integer and at_most else bt)
        if at_most:
            good = (hi <= lt) | (bt <= lo_lim)
            excess = hi - lt
        else:
            good = (lo >= lt) | (bt >= hi_lim)
            excess = lt - lo
        if it == 0 and run is not None and not integer:
            with np.errstate(invalid="ignore"):
                step = np.fmax(step, 1.1 * excess * run)  # (NaN where unknown: the default step)
        todo = todo[~good]
        if todo.size == 0:
            return b
        b[todo] = np.clip(b[todo] - step[todo] if at_most else b[todo] + step[todo], lo_lim, hi_lim)
        step[todo] *= 2 if integer else 4
    b[todo] = lo_lim if at_most else hi_lim
    return b


def _partition(
    lams: FloatArray,
    start: FloatArray,
    bound: Callable[[FloatArray], tuple[FloatArray, FloatArray]],
    integer: bool,
    lo_lim: float,
    hi_lim: float,
    extra: FloatArray | None = None,
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """``(first, end, lo, hi)``: the cells [first, end) of [lo_lim, hi_lim) cut at both certified edges
    of every λ (and at ``extra``), with certified bounds lo ≤ L ≤ hi over each (L increasing: its values
    at the two ends)."""
    # Two edges per λ, not one: the "remove" order needs cells ending where L ≤ λ is certified, the "add"
    # order (losses −L) cells starting where L ≥ λ is; with the at-most edges alone every "add" bucket
    # collapsed to its top (a draft: ε of 10⁴ DP-SGD steps 6.1877 → 6.53)
    e_at_most = np.empty(lams.size)
    e_at_least = np.empty(lams.size)
    run: FloatArray | None = None
    if not integer and lams.size > 2:
        # dx/dL at each start: the smaller of the two one-sided slopes to the neighbouring λ's starts, only
        # where all three starts lie inside the range (one clipped to an end, where L is flat, would make the
        # first step far too long) and the two slopes agree within 5 % (next to λ = 0 at a tiny rate x(L)
        # blows up, L → ln(1 − q) ≈ −q, and a central difference overestimated dx/dL up to 30-fold: found
        # by review, the overshoot below λ became the buckets' slack, ×1.5 … ×11). NaN elsewhere.
        inside = np.isfinite(start) & (start > lo_lim) & (start < hi_lim)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            one_sided = np.abs(np.diff(np.where(inside, start, np.nan)) / np.diff(lams))
            left, right = one_sided[:-1], one_sided[1:]
            agree = np.abs(left - right) <= 0.05 * np.maximum(left, right)
            mid = np.where(agree, np.minimum(left, right), np.nan)
        run = np.concatenate(([np.nan], mid, [np.nan]))
    start = np.clip(np.nan_to_num(start, nan=lo_lim, posinf=hi_lim, neginf=lo_lim), lo_lim, hi_lim)
    for i in range(0, lams.size, _BLOCK):  # (each λ's edges are searched on their own)
        sl = slice(i, i + _BLOCK)
        args = (lams[sl], start[sl], bound, integer, lo_lim, hi_lim)
        # (both edges of a continuum start by evaluating the same points)
        seen = None if integer else bound(start[sl])
        r = None if run is None else run[sl]
        e_at_most[sl] = _edges(*args, True, seen, r)
        e_at_least[sl] = _edges(*args, False, seen, r)
    # λ's two edges side by side, λ in increasing order: nearly sorted, which a stable sort (a merge sort
    # of the sorted runs) orders in about linear time, where the default sort took longer than the search
    parts = [np.array([lo_lim]), np.column_stack([e_at_most, e_at_least]).ravel(), np.array([hi_lim])]
    if extra is not None:
        parts.append(np.clip(extra, lo_lim, hi_lim))
    pts = np.concatenate(parts)
    del parts, e_at_most, e_at_least
    bnd = _sorted_unique(pts)  # the distinct boundaries
    del pts
    first, end = bnd[:-1], bnd[1:]
    if not integer:  # a cell [b, b′) of a continuum is bounded at its two ends: one evaluation per boundary
        lo_b = np.empty(bnd.size)
        hi_b = np.empty(bnd.size)
        for i in range(0, bnd.size, _BLOCK):
            sl = slice(i, i + _BLOCK)
            lo_b[sl], hi_b[sl] = bound(bnd[sl])
        return first, end, lo_b[:-1], hi_b[1:]
    lo = np.empty(first.size)
    hi = np.empty(first.size)
    for i in range(0, first.size, _BLOCK):
        sl = slice(i, i + _BLOCK)
        lo[sl] = bound(first[sl])[0]
        hi[sl] = bound(end[sl] - 1)[1]
    return first, end, lo, hi


_THIN_SHARE = 3e-5  # lattice losses are skipped only where the P-mass beyond is below this (see _thin)
_THIN_WIDEST = 2.0**-10  # the widest bucket, in loss
_THIN_CORE = 4  # the lattice steps next to loss 0 (on either side) are always kept


def _thin(lams: FloatArray, bits: int, up_at: Callable[[float], float]) -> npt.NDArray[np.bool_]:
    """Which of the lattice losses ``lams`` (consecutive, ascending) to cut a continuous pair's outputs at:
    all of them where the mass lies, every 2**k-th one in the upper tail.

    ``up_at(t)`` is a loss beyond which the P-mass of either order (and of the without-replacement pair) is
    at most about t (an estimate). Beyond the loss of P-mass t_k = ``_THIN_SHARE``·16^{1−k} only the
    multiples of 2**k steps are kept (k = 1, 2, …, up to buckets ``_THIN_WIDEST`` wide), so a bucket of
    width w = 2**k·h holds at most t_k and the wide buckets together carry Σₖ t_k·w² ≤ 6·``_THIN_SHARE``·h²
    of the split's second-order spread, against about h²/8 from the mass at one step. What is skipped only
    changes the tightness: every wide bucket is split between its own two ends
    (:func:`~dpcompose.accounting._pld._build`), which dominates for any width. Negative losses are all
    kept: the loss ln(1 − q + q·e^y) crowds into a few lattice steps above ln(1 − q) as y → −∞, so a wide
    bucket there would hold much of the add order's upper tail (found in the tests: one step's add order
    read 1.3e-3 looser at δ = 1e-10, q = 0.01), and at a small rate there are few of them anyway. The first
    and last loss and those within ``_THIN_CORE`` steps of 0 are always kept (the buckets around 0 are one
    step wide, as the lumped lower side and the without-replacement atom at 0 expect).
    """
    n = lams.size
    keep = np.ones(n, dtype=np.bool_)
    levels = _thin_levels(bits)
    if levels == 0 or n <= 2:
        return keep
    ups = np.array([up_at(_THIN_SHARE * 16.0 ** (1 - k)) for k in range(1, levels + 1)])
    ups = np.sort(np.nan_to_num(ups, nan=np.inf))  # (a NaN estimate counts as no threshold)
    # A loss λ > 0 at or above k of the thresholds keeps only the multiples of 2**k steps. The losses are
    # consecutive lattice points (j0 + i)·h, so the level-k losses are one index range, and its multiples
    # of 2**k a strided slice of it (rather than a level, an index and a remainder per loss).
    j0 = int(np.rint(np.ldexp(lams[0], bits)))  # (exact: lattice points)
    assert np.ldexp(lams[-1], bits) == j0 + n - 1, "_thin reads consecutive lattice losses"
    positive = int(np.searchsorted(lams, 0.0, side="right"))
    ends = [max(int(np.searchsorted(lams, u, side="left")), positive) for u in ups] + [n]
    for k in range(1, levels + 1):
        a, b = ends[k - 1], ends[k]
        if a < b:
            step = 1 << k
            keep[a:b] = False
            keep[a + (-(j0 + a)) % step : b : step] = True
    keep[max(0, -_THIN_CORE - j0) : max(0, _THIN_CORE - j0 + 1)] = True  # |j| ≤ _THIN_CORE
    keep[0] = keep[-1] = True
    return keep


def _check_span(lo: float, hi: float, bits: int) -> None:
    """Refuse, before anything is allocated, a subsampled PLD whose losses span [lo, hi] on too fine a
    lattice: the one lattice budget of every PLD (:func:`~dpcompose.accounting._pld._check_points`,
    which names the largest step_bits that fits), counting the points of both orders of neighbours (the
    remove and add orders span [lo, hi] and [−hi, −lo]; the without-replacement pair lies in [−hi, hi],
    lo < 0), as a subsampled PLD builds both."""
    scale = math.ldexp(1.0, bits)
    n = math.ceil(hi * scale) - math.floor(lo * scale) + 2
    what = f"this subsampled PLD (both orders of neighbours, losses in [{lo:.4g}, {hi:.4g}])"
    _check_points(2 * n, what, bits)


def _check_built_span(lo: float, hi: float, q: float, bits: int) -> None:
    """:func:`_check_span` for the range :func:`_from_cells` will check once the cells of a pair whose
    outputs' losses span [lo, hi] are built: widened to 0 and down to ln(1 − q), where the cell below the
    outputs' range lies (found by review: at σ = 1e4, q = 0.5, step_bits = 26 the loss at the output −1e4 is
    far above ln(1 − q), and a lattice refused only after 40 s of building passed the constructor, which
    builds nothing now)."""
    l_min = float(_mix_loss(np.array([-np.inf]), 0.0, q)[0][0])
    _check_span(min(lo, l_min, 0.0), max(hi, 0.0), bits)


def _thin_levels(bits: int) -> int:
    """The k of :func:`_thin`'s widest buckets, 2**k steps, at most ``_THIN_WIDEST`` (and 30)."""
    levels = 0
    while levels < 30 and math.ldexp(1.0, levels + 1 - bits) <= _THIN_WIDEST:
        levels += 1
    return levels


def _has_thin(bits: int) -> bool:
    """Whether :func:`_thin` can skip any lattice loss at this lattice (its widest bucket, ``_THIN_WIDEST``,
    is at least two steps): below, a thin twin would be the full PLD built twice."""
    return _thin_levels(bits) > 0


def _lattice(lo: float, hi: float, bits: int) -> FloatArray:
    """The lattice points j·h covering [lo, hi] (refusing a lattice too fine for the range)."""
    _check_span(lo, hi, bits)
    scale = math.ldexp(1.0, bits)
    j0 = math.floor(lo * scale) - 1
    j1 = math.ceil(hi * scale) + 1
    return np.arange(j0, j1 + 1, dtype=np.float64) / scale


# ---------------------------------------------------------------------------------------------------------
# Cells to buckets
# ---------------------------------------------------------------------------------------------------------

Direction = Literal["remove", "add", "sym"]


def _zero_atom(c: _Cells) -> _Cells:
    """The atom c = 1 − mix(S) − Q(S) at loss 0 of the without-replacement pair (module docstring), S the
    cells in S; its mass is known within the cells' errors (and the float sums'). It is ≥ 0 because every
    base pair here is symmetric (module docstring); a computed lower bound below 0 only widens its error."""
    idx = np.flatnonzero(c.pos)
    err = 0.0
    tot = 0.0
    for i in range(0, idx.size, _BLOCK):  # (a sum in blocks: its rounding is bounded as any order's)
        k = idx[i : i + _BLOCK]
        with np.errstate(under="ignore"):
            m = np.exp(c.lmix[k]) + np.exp(c.lbase[k])
        lmix = np.where(np.isfinite(c.lmix[k]), c.lmix[k], 0.0)
        err += float(np.sum(m * (c.rel[k] + 2 * _EXP_REL + 4 * _U * (np.abs(lmix) + 1))))
        tot += float(np.sum(m))
    err += 4 * _U * (idx.size + 4) * tot + 1e-300 * idx.size
    c_hi = min(1.0, 1.0 - tot + err + 4 * _U)
    c_lo = 1.0 - tot - err - 4 * _U
    if c_hi <= 0:
        return _cell(0.0, 0.0, -math.inf, -math.inf, 0.0, False)
    if c_lo <= 0:
        lm, rel = _bound_only(c_hi)
    else:
        mid = (c_hi + c_lo) / 2
        lm, rel = math.log(mid), (c_hi - c_lo) / (2 * mid) + 4 * _U
    return _cell(0.0, 0.0, lm, lm, rel, False)


_Block = tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]


def _blocks(c: _Cells, direction: Direction, zero: _Cells | None) -> Iterator[_Block]:
    """The ``(lo, hi, lp, lq, rel)`` of the outputs of one order of the pair, ``_BLOCK`` cells at a time,
    each cell's loss bounds first clipped at 0 by its exact sign (L > 0 on S, L ≤ 0 off it).

    ``remove``: losses L, P-masses mix, Q-masses Q. ``add``: losses −L, P = Q, Q = mix. ``sym``: the
    without-replacement pair (P*, Q*): the cells of S read both ways, then ``zero``, the atom at 0
    (:func:`_zero_atom`)."""
    def clipped(k: slice | npt.NDArray[np.intp]) -> tuple[FloatArray, FloatArray]:
        pos, lo, hi = c.pos[k], c.lo[k], c.hi[k]
        return np.where(pos, np.maximum(lo, 0.0), lo), np.where(pos, hi, np.minimum(hi, 0.0))

    if direction == "sym":
        idx = np.flatnonzero(c.pos)
        for i in range(0, idx.size, _BLOCK):
            k = idx[i : i + _BLOCK]
            lo, hi = clipped(k)
            yield lo, hi, c.lmix[k], c.lbase[k], c.rel[k]
            yield -hi, -lo, c.lbase[k], c.lmix[k], c.rel[k]
        assert zero is not None
        yield zero.lo, zero.hi, zero.lmix, zero.lbase, zero.rel
        return
    for i in range(0, c.lo.size, _BLOCK):
        sl = slice(i, i + _BLOCK)
        lo, hi = clipped(sl)
        if direction == "remove":
            yield lo, hi, c.lmix[sl], c.lbase[sl], c.rel[sl]
        else:
            yield -hi, -lo, c.lbase[sl], c.lmix[sl], c.rel[sl]


def _to_buckets(c: _Cells, bits: int, direction: Direction, starts: IntArray | None = None) -> _Buckets:
    """The buckets of one order of the pair from its cells (module docstring; the orders as in
    :func:`_blocks`).

    ``starts`` (lattice indices, sorted; :func:`_direction_starts`): where the cells were cut at a sparse
    set of lattice losses, the buckets are wide ones, (a_i, a_{i+1}] between consecutive starts (plus the
    first and one past the last bucket the cells reach), and "the bucket (a, a + h]" below reads "the
    bucket (a_i, a_{i+1}]".

    A cell goes to the bucket (a, a + h] holding its ``hi``; its slack is a − lo. Cells with hi = +∞ go
    to +∞ (their true loss is +∞ where their Q-mass is 0: then also on the lower side); masses whose log is
    below −700 go to +∞ as e^{−700} (upper side) and are dropped (lower side). A bucket holding a cell
    with slack above h/1024 (a tail, or an edge the search could not place) is put whole at its top on the
    upper side (``low_ok``; the lumped lower side labels it by its merged loss like any other bucket); the
    others' largest slack is the buckets' ``slack``. The cells are read in blocks (:func:`_blocks`) and
    summed per bucket; every float sum is bounded as a sum of its terms in any order (Higham 2002, Lemma
    3.1), so the blocks change no bound.
    """
    h = math.ldexp(1.0, -bits)
    scale = math.ldexp(1.0, bits)
    zero = _zero_atom(c) if direction == "sym" else None
    # First pass: the range of buckets the kept cells fall in.
    j_lo: int | None = None
    j_hi: int | None = None
    for _lo, hi, lp, _lq, _rel in _blocks(c, direction, zero):
        kept = np.isfinite(hi) & (lp >= _UNDERFLOW)
        if np.any(kept):
            j = np.ceil(hi[kept] * scale) - 1  # hi·2^bits is exact (a power-of-two scaling)
            b0, b1 = int(np.min(j)), int(np.max(j))
            j_lo = b0 if j_lo is None else min(j_lo, b0)
            j_hi = b1 if j_hi is None else max(j_hi, b1)
    empty = j_lo is None or j_hi is None
    n = 1 if j_lo is None or j_hi is None else j_hi - j_lo + 1
    j_lo = -1 if j_lo is None else j_lo
    ends: IntArray | None = None  # the wide buckets' lower ends (and one past the last), as lattice indices
    if starts is not None and not empty:
        inner = starts[(starts > j_lo) & (starts <= j_lo + n - 1)]
        ends = np.concatenate(([j_lo], inner, [j_lo + n])).astype(np.int64)
        n = ends.size - 1
    # (np.zeros leaves untouched pages unallocated: few cells on a wide span cost little)
    count = np.zeros(n)
    p = np.zeros(n)
    r = np.zeros(n)
    perr = np.zeros(n)  # Σ (mass × its relative error), per bucket
    rerr = np.zeros(n)
    eta_b = np.zeros(n)  # the largest slack per bucket, or 0 (a negative slack counts as none below)
    above = inf_hi = inf_lo = 0.0
    n_side = 0
    for lo, hi, lp, lq, rel in _blocks(c, direction, zero):
        has_p = lp > -np.inf
        if not np.all(has_p):
            lo, hi, lp, lq, rel = lo[has_p], hi[has_p], lp[has_p], lq[has_p], rel[has_p]
        rel_p = rel + _EXP_REL + 2 * _U * (np.abs(lp) + 1)
        with np.errstate(under="ignore"):
            pm = np.exp(np.maximum(lp, _UNDERFLOW))
        tiny = lp < _UNDERFLOW
        top = ~np.isfinite(hi)
        side = top | tiny
        if np.any(side):
            p_up = pm[side] * (1 + rel_p[side])
            true_inf = top[side] & (lq[side] == -np.inf) & ~tiny[side]
            above += float(np.sum(p_up[~true_inf]))
            inf_hi += float(np.sum(p_up[true_inf]))
            inf_lo += float(np.sum((pm[side] * np.maximum(1 - rel_p[side], 0.0))[true_inf]))
            n_side += int(np.count_nonzero(side))
            keep = ~side
            lo, hi, lq, rel, pm, rel_p = lo[keep], hi[keep], lq[keep], rel[keep], pm[keep], rel_p[keep]
        if hi.size == 0:
            continue
        j = (np.ceil(hi * scale) - 1).astype(np.int64)
        if ends is None:
            idx = j - j_lo
            a = j.astype(np.float64) * h  # exact
        else:  # the wide bucket holding lattice bucket j
            idx = np.searchsorted(ends, j, side="right") - 1
            a = ends[idx].astype(np.float64) * h  # exact
        with np.errstate(invalid="ignore"):
            eta = a - lo  # how far below a the cell's losses may lie (+∞ for an unbounded tail)
        lr = a + lq
        with np.errstate(under="ignore"):
            rm = np.exp(np.maximum(lr, _UNDERFLOW))
        r_small = lr < _UNDERFLOW
        rm = np.where(r_small, 0.0, rm)
        rel_r = rel + _EXP_REL + 2 * _U * (np.abs(np.where(np.isfinite(lr), lr, 0.0)) + 1)
        r_bound = rm * rel_r + np.where(r_small, math.exp(_UNDERFLOW), 0.0)
        b0 = int(np.min(idx))
        span = int(np.max(idx)) - b0 + 1
        if span <= 4 * idx.size:  # (a block of cells in loss order covers few buckets)
            at: slice | IntArray = slice(b0, b0 + span)
            loc = idx - b0
        else:
            at, loc = np.unique(idx, return_inverse=True)
            span = at.size
        count[at] += np.bincount(loc, minlength=span)
        p[at] += np.bincount(loc, weights=pm, minlength=span)
        r[at] += np.bincount(loc, weights=rm, minlength=span)
        perr[at] += np.bincount(loc, weights=pm * rel_p, minlength=span)
        rerr[at] += np.bincount(loc, weights=r_bound, minlength=span)
        worst = np.zeros(span)
        np.maximum.at(worst, loc, eta)
        eta_b[at] = np.maximum(eta_b[at], worst)
    above = above * (1 + 4 * _U * (n_side + 2)) + 1e-300 * n_side
    inf_hi = inf_hi * (1 + 4 * _U * (n_side + 2))
    inf_lo = inf_lo * (1 - 4 * _U * (n_side + 2))
    if empty:
        nil = np.zeros(1)
        return _Buckets(-1, nil, nil.copy(), nil.copy(), above_hi=above, inf_hi=inf_hi, inf_lo=inf_lo)
    rel_b = np.zeros(n)
    low_ok = np.empty(n, dtype=np.bool_)
    slack = 0.0
    for i in range(0, n, _BLOCK):  # (only the buckets holding a kept cell have mass and an error)
        sl = slice(i, i + _BLOCK)
        ok = eta_b[sl] <= h / 1024
        low_ok[sl] = ok
        k = np.flatnonzero(count[sl])
        if k.size == 0:
            continue
        cnt, p_k, r_k = count[sl][k], p[sl][k], r[sl][k]
        g = _gamma(cnt + 2)  # the float sums (Higham 2002, Lemma 3.1)
        perr_k = perr[sl][k] * _SAFE + g * p_k
        rerr_k = rerr[sl][k] * _SAFE + g * r_k
        with np.errstate(divide="ignore", invalid="ignore"):
            rel_k = np.where(p_k > 0, perr_k / p_k, 0.0)
            # (r = 0: no Q-mass known, which _build treats safely)
            rel_b[i + k] = np.maximum(rel_k, np.where(r_k > 0, rerr_k / r_k, 0.0))
        used = ok[k] & (p_k > 0)
        if np.any(used):
            slack = max(slack, float(np.max(eta_b[sl][k][used])))
    slack *= _SAFE
    edges = None if ends is None else ends - j_lo
    return _Buckets(
        j_lo, p, r, rel_b, above_hi=above, inf_hi=inf_hi, inf_lo=inf_lo, slack=slack, low_ok=low_ok,
        edges=edges,
    )


def _direction_starts(starts: IntArray | None, direction: Direction) -> IntArray | None:
    """The wide buckets' lower ends for one order (:func:`_to_buckets`) from the lattice indices the cells
    were cut at (:attr:`_Cells.starts`): as they are for the remove order, negated for the add order (losses
    −L), and for the without-replacement pair the non-negative ones both ways (its cells lie in S = {L > 0}
    and are read as L and mirrored; its atom at loss 0 lies in (−h, 0], whose ends −1 and 0 are kept)."""
    if starts is None:
        return None
    if direction == "remove":
        return starts
    if direction == "add":
        return np.sort(-starts)
    nonneg = starts[starts >= 0]
    return np.union1d(-nonneg, nonneg)


def _check_cells(cells: _Cells, bits: int) -> None:
    """The lattice budget on the span of the cells' finite loss bounds (the lattice-based pairs checked
    their range before building it)."""
    ends = np.concatenate([cells.lo[np.isfinite(cells.lo)], cells.hi[np.isfinite(cells.hi)]])
    if ends.size:  # (every finite bound: a cell reaching +∞ has a finite lower end, found by review beyond
        # the largest finite upper one)
        _check_span(min(float(np.min(ends)), 0.0), max(float(np.max(ends)), 0.0), bits)


def _order(cells: _Cells, bits: int, tail: float, direction: Direction, name: str, sampling: Sampling) -> PLD:
    """One order of the Poisson-subsampled pair ("remove": (mix, Q); "add": (Q, mix)) from its cells, alone
    (no reverse), its lower side built where read (a privacy map reads only the upper one)."""
    b = _to_buckets(cells, bits, direction, _direction_starts(cells.starts, direction))
    desc = name if direction == "remove" else f"{name} {direction}"
    built = _build(bits, b, tail, desc, lazy_lower=True)
    return PLD(bits, built.upper, None, tail, desc, sampling=sampling, _lazy_lower=built._lazy_lower)


def _symmetric(cells: _Cells, bits: int, tail: float, name: str, sampling: Sampling) -> PLD:
    """The without-replacement pair's PLD from its cells.

    The symmetric pair (P*, Q*) only dominates the mechanism (module docstring): a lower bound on its δ need
    not be one on the mechanism's (found by review: 0.3072 where the best attack on real data sets reaches
    0.3005). The lower side is that of the "remove" pair (mix, Q) instead, which real neighbours attain:
    substitute a record whose query value differs by Δ from the other's, all other records contributing
    nothing, and the two outputs are (1 − q)·Q + q·P and Q; in a composition every mechanism can be asked
    such a query about the same pair of data sets."""
    sym = _build(bits, _to_buckets(cells, bits, "sym", _direction_starts(cells.starts, "sym")), tail, name)
    attained = _build(
        bits, _to_buckets(cells, bits, "remove", _direction_starts(cells.starts, "remove")), tail,
        name + " remove",
    )
    return PLD(bits, sym.upper, attained.lower, tail, name, sampling=sampling)


def _from_cells(
    cells: _Cells, bits: int, tail: float, sampling: Sampling, name: str
) -> PLD:
    """The PLD of the subsampled pair: both orders (Poisson; :func:`_order`, in two threads: numpy does most
    of the work, and releases the GIL) or the symmetric pair (without replacement; :func:`_symmetric`).
    A cell's loss bounds are first clipped at 0 by its exact sign (L > 0 on S, L ≤ 0 off it;
    :func:`_blocks`)."""
    _check_cells(cells, bits)
    if sampling == "poisson":
        fwd, rev = _in_parallel(lambda: _order(cells, bits, tail, "remove", name, sampling),
                                lambda: _order(cells, bits, tail, "add", name, sampling))
        return PLD(bits, fwd.upper, fwd._lower, tail, name, reverse=rev, sampling=sampling,
                   _lazy_lower=fwd._lazy_lower)
    return _symmetric(cells, bits, tail, name, sampling)


class _Build:
    """Builds a subsampled pair's PLD on first use from its cells (``cells(*args)``, a module-level function,
    computed once): the first order (Poisson: "remove") or the symmetric pair (without replacement) when
    called, the reverse ("add") order by :meth:`reverse`, each once, under a lock of its own (the reverse
    order waits only for the cells), whichever thread asks first. A class, not a closure, so that a PLD
    built on first use can still be pickled (found by review: the closures had made
    ``pld_subsampled_gaussian``'s results unpicklable)."""

    def __init__(
        self, cells: Callable[..., _Cells], args: tuple[object, ...], bits: int, tail: float,
        sampling: Sampling, name: str,
    ) -> None:
        self.cells, self.args = cells, args
        self.bits, self.tail, self.sampling, self.name = bits, tail, sampling, name
        self.built: PLD | None = None
        self.reverse_built: PLD | None = None
        self._cells: _Cells | None = None  # (kept until both orders are built)
        self._make_locks()

    def _make_locks(self) -> None:
        self._cells_lock = threading.Lock()
        self._lock = threading.Lock()
        self._rev_lock = threading.Lock()

    def _get_cells(self) -> _Cells:
        with self._cells_lock:
            if self._cells is None:
                cells = self.cells(*self.args)
                _check_cells(cells, self.bits)
                self._cells = cells
            return self._cells

    def _done(self) -> None:
        """Drop the cells once nothing more is built from them."""
        with self._cells_lock:
            if self.built is not None and (self.reverse_built is not None or self.sampling != "poisson"):
                self._cells = None

    def __call__(self) -> PLD:
        with self._lock:
            if self.built is None:
                cells = self._get_cells()
                if self.sampling == "poisson":
                    self.built = _order(cells, self.bits, self.tail, "remove", self.name, self.sampling)
                else:
                    self.built = _symmetric(cells, self.bits, self.tail, self.name, self.sampling)
                self._done()
            return self.built

    def reverse(self) -> PLD:
        """The reverse ("add") order of the Poisson-subsampled pair."""
        with self._rev_lock:
            if self.reverse_built is None:
                cells = self._get_cells()
                self.reverse_built = _order(cells, self.bits, self.tail, "add", self.name, self.sampling)
                self._done()
            return self.reverse_built

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        for lock in ("_cells_lock", "_lock", "_rev_lock"):
            del state[lock]  # (a lock cannot be pickled; fresh ones are made on loading)
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._make_locks()


class _ReverseOf:
    """The reverse order of the PLD a :class:`_Build` builds (picklable, as it is)."""

    def __init__(self, build: _Build) -> None:
        self.build = build

    def __call__(self) -> PLD:
        return self.build.reverse()


def _lazy_pld(build: _Build, key: object, thin: PLD | None = None) -> PLD:
    """The PLD ``build`` returns, built on first use: its sides and, for Poisson sampling, its reverse
    order's (each order built when first read). ``key`` stands for its contents
    (:func:`~dpcompose.accounting._pld._content_key`); ``thin`` is its thin version (:attr:`PLD._thin`)."""
    bits, tail, name, sampling = build.bits, build.tail, build.name, build.sampling
    rev = None
    if sampling == "poisson":
        rev = PLD(bits, None, None, tail, name + " add", sampling=sampling, _lazy=_ReverseOf(build))
    return PLD(
        bits, None, None, tail, name, reverse=rev, sampling=sampling, _lazy=build, _thin=thin, _key=key
    )


def _identity(bits: int, tail: float, name: str) -> PLD:
    """The PLD of a pair of equal distributions (every loss 0, δ(ε) = 0)."""
    return _atoms(bits, [(Fraction(0), 1.0, 0.0)], 0.0, 0.0, tail, name)


# ---------------------------------------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------------------------------------


def _check_sampling(sampling: object) -> Sampling:
    if isinstance(sampling, str) and sampling == "poisson":
        return "poisson"
    if isinstance(sampling, str) and sampling == "without_replacement":
        return "without_replacement"
    raise InvalidParameter(f"sampling={sampling!r} must be 'poisson' or 'without_replacement'")


def _rate_up(rate: object) -> tuple[Fraction, float]:
    """The exact rate (in [0, 1]) and a float q ≥ it (a larger rate dominates). Every rate in [0, 1] is
    accepted by every subsampled PLD: rate 0 is the identity, and a tiny rate is certified like any other
    (where the rate is below the float error of the bounds, δ's upper end is that error, not the rate)."""
    qq = exact(check_finite_nonnegative(rate, "rate"), "rate")
    if qq > 1:
        raise InvalidParameter(f"rate={rate!r} must be in [0, 1]")
    q = float(qq)
    if Fraction(q) < qq:
        q = math.nextafter(q, math.inf)
    return qq, min(q, 1.0)


def _sampling_name(sampling: Sampling) -> str:
    return "Poisson" if sampling == "poisson" else "WOR"


def _read_args(
    noise: object, noise_name: str, rate: object, sensitivity: object, sampling: object, step_bits: object,
    tail: object,
) -> tuple[Fraction, Fraction, float, Fraction, Sampling, int, float]:
    """The checked arguments of the continuous constructors (noise, rate and its float, Δ, sampling, bits,
    tail)."""
    value = exact(check_finite_positive(noise, noise_name), noise_name)
    qq, q = _rate_up(rate)
    sens = exact(check_finite_positive(sensitivity, "sensitivity"), "sensitivity")
    return value, qq, q, sens, _check_sampling(sampling), _check_bits(step_bits), _check_tail(tail)


# ---------------------------------------------------------------------------------------------------------
# Subsampled Gaussian (continuous)
# ---------------------------------------------------------------------------------------------------------


def _gaussian_bound(mu: float, q: float) -> Bound:
    """Certified bounds on the subsampled Gaussian pair's loss at outputs o (standard units)."""
    m2 = mu * mu

    def bound(o: FloatArray) -> tuple[FloatArray, FloatArray]:
        y = mu * o - m2 / 2
        return _mix_loss(y, 4 * _U * (np.abs(mu * o) + m2 + 1), q)

    return bound


def _gaussian_span(mu: float, q: float, width: float) -> tuple[float, float]:
    """The losses the cells of :func:`_gaussian_cells` span: from the output −1e4 to μ + ``width``."""
    bound = _gaussian_bound(mu, q)
    return _at(bound, _FAR)[0], _at(bound, mu + width)[1]


def _gaussian_cells(bits: int, mu: float, q: float, width: float, thin: bool = False) -> _Cells:
    """Cells of the subsampled Gaussian pair in standard units: Q = N(0, 1), P = N(μ, 1), y = μo − μ²/2.

    The range [−1e4, μ + width) is cut at the certified edges; its cells' masses are differences of Φ
    (``_log_phi_steps``, with the rounding of the shifted arguments o − μ bounded by :func:`_shift_rel`).
    Below −1e4 both masses are below 1e-300; above the top they are bounded by Φ(−top) and Φ(μ − top)
    (``log_ndtr``, padded) and the losses are unbounded.
    """
    m2 = mu * mu
    bound = _gaussian_bound(mu, q)
    top = mu + width
    l_far, l_top = _gaussian_span(mu, q, width)
    lams = _lattice(l_far, l_top, bits)
    if thin:  # P-mass of either order above the output o is at most Φ̄(o − μ) (an estimate serves)
        normal = NormalDist()
        lams = lams[_thin(lams, bits, lambda t: _at(bound, mu - normal.inv_cdf(t))[0])]
    start = (_y_of_loss(lams, q) + m2 / 2) / mu
    half = mu / 2  # y = μo − μ²/2 > 0 exactly where o > μ/2 (a float: μ/2 is exact)
    first, end, lo, hi = _partition(lams, start, bound, False, _FAR, top, np.array([half]))
    bnd = np.append(first, end[-1])  # (the cells are consecutive: each ends where the next begins)
    ln, rn = _log_phi_steps(bnd)
    ls, rs = _log_phi_steps(bnd - mu)
    rs = _shift_rel(first - mu, end - mu, ls, rs)
    # Where a Φ-difference has no finite error bound (its two CDFs agree to the last bit), the cell is
    # known only by an upper bound: its mass is at most the smaller of the two tails, Φ(end) or Φ(−first).
    bad = ~(np.isfinite(rn) & np.isfinite(rs) & np.isfinite(ln) & np.isfinite(ls))
    if np.any(bad):
        ub_n = _phi_tail_up(first[bad], end[bad])
        ub_s = _phi_tail_up(first[bad] - mu, end[bad] - mu)
        with np.errstate(divide="ignore"):  # a bound of 0 (below the float range: _build pads) is ln 0
            ln[bad], rn[bad] = np.log(ub_n / 2), 1.0
            ls[bad], rs[bad] = np.log(ub_s / 2), 1.0
    lm, rm = _mix_logs(ln, rn, ls, rs, q)
    mid = _Cells(lo, hi, lm, ln, np.maximum(rm, rn), first >= half)
    # below −1e4 both masses are below 1e-300; every loss is at least ln(1 − q)
    l_min = float(_mix_loss(np.array([-np.inf]), 0.0, q)[0][0])
    lb, rb = _bound_only(1e-300)
    far = _cell(l_min, float(bound(np.array([_FAR]))[1][0]), lb, lb, rb, False)
    qt = math.exp(_log_ndtr_up(-top)) * (1 + 1e-9)
    pt = math.exp(_log_ndtr_up(mu - top)) * (1 + 1e-9)
    l_mix_t, _ = _bound_only((1 - q) * qt + q * pt)
    l_base_t, _ = _bound_only(qt)
    above = _cell(float(bound(np.array([top]))[0][0]), math.inf, l_mix_t, l_base_t, 1.0, True)
    cells = _Cells.join([far, mid, above])
    if thin:
        cells.starts = np.rint(np.ldexp(lams, bits)).astype(np.int64)
    return cells


def _shift_rel(xa: FloatArray, xb: FloatArray, log_mass: FloatArray, rel: FloatArray) -> FloatArray:
    """The relative error of Φ(b) − Φ(a), computed as ``exp(log_mass)`` within ``rel`` at the rounded
    arguments ``xa`` = fl(a), ``xb`` = fl(b) (one rounding each: |x − fl(x)| ≤ η = u|fl(x)|/(1 − u)).

    Moving the ends by η moves at most Δ = Σ η·max φ on [x − η, x + η] ≤ Σ η·φ(x)·e^{|x|η + η²} of mass
    (φ the standard normal density), so with D' the mass at the rounded ends, D' ≥ e^{log_mass}/(1 + rel)
    and the exact mass D ≥ D' − Δ, the result is within (1 + rel)(1 + Δ/(D' − Δ)) − 1 of D. Δ is doubled
    for its own rounding (the exponent −x²/2 − ln√(2π) is within a few ulps of x²: relative error ≤ 1e-7
    for |x| ≤ 1e4), a φ(x) that underflows counts as the least normal float; where Δ is not small against
    D' the bound is infinite (the caller keeps an upper bound only). The weight is the density at each end,
    so a wide cell whose end lies far in a tail (φ(x) ≈ 0) gets none, unlike a bound by the arguments' size
    alone.
    """
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        moved = np.zeros(xa.shape)
        for x in (xa, xb):
            eta = np.abs(x) * (_U / (1 - _U))
            dens = np.exp(-0.5 * x * x - 0.5 * math.log(2 * math.pi)) * (1 + 4 * eta * (np.abs(x) + 1))
            moved = moved + eta * np.maximum(dens, _TINY)  # an underflowed φ(x) is below that
        moved = 2 * moved + 1e-323  # 1e-323: the subnormal products' rounding
        low = np.exp(log_mass) / (1 + rel) * (1 - 8 * _EXP_REL)
        ratio = moved / (low - moved)
        out = rel + ratio + rel * ratio
        return np.where((low > 2 * moved) & np.isfinite(out), out * (1 + 1e-12), np.inf)


def _phi_tail_up(a: FloatArray, b: FloatArray) -> FloatArray:
    """Upper bounds on Φ(b) − Φ(a) (a < b): the smaller of Φ(b) and Φ(−a), from ``log_ndtr`` padded (its
    argument first moved up past the rounding of a and b)."""
    x = np.minimum(b, -a)
    x = x + 4 * _U * (np.abs(x) + 1)
    lv = np.asarray(log_ndtr(x), dtype=np.float64)
    return np.minimum(np.exp(lv + _LOG_NDTR_PAD * (1 + np.abs(lv))) * (1 + 1e-10), 1.0)


def pld_subsampled_gaussian(
    sigma: Number,
    rate: Number,
    sensitivity: Number = 1,
    *,
    sampling: Sampling = "poisson",
    step_bits: int = DEFAULT_STEP_BITS,
    tail: float = DEFAULT_TAIL,
    width: float = 12.0,
) -> PLD:
    """The PLD of the Gaussian mechanism (noise σ, sensitivity Δ) run on a subsample drawn with this rate.

    ``sampling="poisson"``: each record is kept independently with probability ``rate`` (add/remove
    neighbours); both orders of the (asymmetric) pair are kept and composed separately, δ(ε) is the larger.
    ``sampling="without_replacement"``: a fixed-size subset of m = rate·n records, substitute neighbours;
    Δ must then be the sensitivity under substitution, and the PLD is that of the symmetric pair built from
    the two-part bound (module docstring). This is the per-step PLD of DP-SGD. Rate 1 is
    :func:`~dpcompose.accounting.pld_gaussian`, rate 0 the identity (δ = 0).

    The PLD's sides are built on first use. Compositions holding at least 256 copies of it use a thin build
    of the same pair (:func:`_thin`: wide buckets in the upper tail, split between their own ends, so as
    certified and a fifth of the cost), and build this one only if it is read otherwise.

    Source: Zhu–Dong–Wang 2022 (Thm 11, Poisson subsampling; Prop. 30, without replacement; Thm 10,
    composition); Balle–Barthe–Gaboardi 2018 Thms 2, 8 and 9; Koskela–Jälkö–Honkela 2020 (PLD of the
    subsampled Gaussian); Abadi et al. 2016 (DP-SGD).

    Raises:
        InvalidParameter: σ not positive, rate outside [0, 1], sensitivity not positive, Δ/σ outside
            [1e-4, 8], an unknown ``sampling``, ``width`` outside [6, 30], or a lattice too fine for the
            loss range (the points of both orders above 2**26; the message names the step_bits that fits).

    Examples:
        >>> step = pld_subsampled_gaussian(1.0, 0.01)
        >>> lo, hi = step.self_compose(100).epsilon_bounds(1e-5)
        >>> 0 < float(lo) <= float(hi) < 1
        True
    """
    sig, _, q, sens, smp, bits, tl = _read_args(sigma, "sigma", rate, sensitivity, sampling, step_bits, tail)
    w = float(check_finite_positive(width, "width"))
    if not 6 <= w <= 30:
        raise InvalidParameter(f"width={width!r} must be in [6, 30]")
    if q == 0:
        return _identity(bits, tl, "Subsampled(q=0)")
    mu_q = sens / sig
    if not Fraction(1, 10_000) <= mu_q <= 8:  # (exactly: the float 1e-4 is above 1/10000)
        raise InvalidParameter(f"sensitivity/sigma={_fmt(mu_q)} must be in [1e-4, 8] for this PLD")
    mu = float(mu_q)
    if Fraction(mu) < mu_q:
        mu = math.nextafter(mu, math.inf)  # a larger μ dominates
    if q == 1.0:
        from dpcompose.accounting._pld import pld_gaussian

        return pld_gaussian(sens, sig, step_bits=bits, tail=tl)
    name = f"Subsampled{_sampling_name(smp)}Gaussian(μ={mu:g}, q={q:g})"

    def build(thin: bool) -> _Build:
        return _Build(_gaussian_cells, (bits, mu, q, w, thin), bits, tl, smp, name)

    _check_built_span(*_gaussian_span(mu, q, w), q, bits)  # (refused now: the sides are built when used)
    key = ("pld_subsampled_gaussian", mu, q, smp, bits, tl, w)
    thin = _lazy_pld(build(True), (key, "thin")) if _has_thin(bits) else None
    return _lazy_pld(build(False), key, thin)


# ---------------------------------------------------------------------------------------------------------
# Subsampled Laplace (continuous)
# ---------------------------------------------------------------------------------------------------------


def _laplace_cells(bits: int, d: float, q: float) -> _Cells:
    """Cells of the subsampled Laplace pair in units of the scale: Q = Lap(0, 1), P = Lap(D, 1). Outputs
    x ≤ 0 and x ≥ D are two atoms (y = −D, D); in between y = 2x − D, and a cell [x₁, x₂) has masses
    ½e^{−x₁}(1 − e^{−w}) (Q) and ½e^{x₂−D}(1 − e^{−w}) (P), w = x₂ − x₁ (exact for two nearby floats by
    Sterbenz's lemma, else within u·w)."""

    def bound(x: FloatArray) -> tuple[FloatArray, FloatArray]:
        return _mix_loss(2 * x - d, 2 * _U * (2 * np.abs(x) + d), q)

    l0 = float(bound(np.zeros(1))[0][0])
    l1 = float(bound(np.full(1, d))[1][0])
    lams = _lattice(l0, l1, bits)
    start = (_y_of_loss(lams, q) + d) / 2
    half = d / 2  # y = 2x − D > 0 exactly where x > D/2
    first, end, lo, hi = _partition(lams, start, bound, False, 0.0, d, np.array([half]))
    wid = end - first
    lg = np.log(-np.expm1(-wid))
    lq = math.log(0.5) - first + lg
    lp = math.log(0.5) + (end - d) + lg
    rel = np.full(first.size, 16 * _EXP_REL + 16 * _U * (1 + d))
    lm, rm = _mix_logs(lq, rel, lp, rel, q)
    mid = _Cells(lo, hi, lm, lq, rm, first >= half)
    rel_a = 16 * _EXP_REL + 16 * _U * (1 + d)
    atoms = []
    for x, l_base, l_p in ((0.0, math.log(0.5), math.log(0.5) - d), (d, math.log(0.5) - d, math.log(0.5))):
        a_lo, a_hi = bound(np.array([x]))
        lm_a, rm_a = _mix_logs(np.array([l_base]), np.array([rel_a]), np.array([l_p]), np.array([rel_a]), q)
        atoms.append(_cell(float(a_lo[0]), float(a_hi[0]), float(lm_a[0]), l_base, float(rm_a[0]), x > 0))
    return _Cells.join([atoms[0], mid, atoms[1]])


def pld_subsampled_laplace(
    scale: Number,
    rate: Number,
    sensitivity: Number = 1,
    *,
    sampling: Sampling = "poisson",
    step_bits: int = DEFAULT_STEP_BITS,
    tail: float = DEFAULT_TAIL,
) -> PLD:
    """The PLD of the Laplace mechanism (scale b, sensitivity Δ) run on a subsample drawn with this rate.

    The pairs are those of :func:`pld_subsampled_gaussian` with Laplace noise: for Poisson sampling "remove"
    (1 − q)·Lap(0, b) + q·Lap(Δ, b) against Lap(0, b), and "add" the reverse, kept and composed separately
    (δ(ε) is the larger); without replacement the symmetric pair of the module docstring (Δ the
    sensitivity under substitution). Rate 1 is :func:`~dpcompose.accounting.pld_laplace`, rate 0 the
    identity.

    Source: Zhu–Dong–Wang 2022 (Thm 11, Poisson; Prop. 30, without replacement; Thm 10); Balle–Barthe–
    Gaboardi 2018 Thms 2, 8 and 9; Koskela–Jälkö–Honkela 2020 (PLDs of subsampled mechanisms).

    Raises:
        InvalidParameter: scale not positive, rate outside [0, 1], sensitivity not positive, Δ/b above 30,
            an unknown ``sampling``, or a lattice too fine for the loss range (the points of both orders
            above 2**26; the message names the step_bits that fits).

    Examples:
        >>> lo, hi = pld_subsampled_laplace(1.0, 0.1).delta_bounds(0.5)
        >>> 0 <= float(lo) <= float(hi) < 0.01
        True
    """
    b, _, q, sens, smp, bits, tl = _read_args(scale, "scale", rate, sensitivity, sampling, step_bits, tail)
    if q == 0:
        return _identity(bits, tl, "Subsampled(q=0)")
    from dpcompose.accounting._pld import pld_laplace

    d_q = sens / b
    if d_q > 30:
        raise InvalidParameter(f"sensitivity/scale={_fmt(d_q)} must be at most 30 for this PLD")
    d = float(d_q)
    if Fraction(d) < d_q:
        d = math.nextafter(d, math.inf)  # a larger shift dominates (Laplace is log-concave)
    if q >= 1.0:
        return pld_laplace(sens, b, step_bits=bits, tail=tl)
    name = f"Subsampled{_sampling_name(smp)}Laplace(Δ/b={d:g}, q={q:g})"
    return _from_cells(_laplace_cells(bits, d, q), bits, tl, smp, name)


# ---------------------------------------------------------------------------------------------------------
# Subsampled finite pairs: randomized response and RR_(ε, δ)
# ---------------------------------------------------------------------------------------------------------


def _finite_cells(outputs: Sequence[tuple[float, float, float, float]], q: float, rel: float) -> _Cells:
    """Cells of the subsampled pair of a finite base pair: one cell per output ``(y, ey, ln P, ln Q)`` with
    y = ln(P/Q) (±∞ where Q or P is 0) known within ``ey``, both masses within ``rel``."""
    cells = []
    for y, ey, lp, lq in sorted(outputs):
        if y == math.inf:  # Q = 0: the loss is +∞ in the remove order (and the add order never sees it)
            lm, rm = _mix_logs(np.array([lq]), np.array([rel]), np.array([lp]), np.array([rel]), q)
            cells.append(_cell(math.inf, math.inf, float(lm[0]), -math.inf, float(rm[0]), True))
            continue
        lo, hi = _mix_loss(np.array([y]), ey, q)
        lm, rm = _mix_logs(np.array([lq]), np.array([rel]), np.array([lp]), np.array([rel]), q)
        cells.append(_cell(float(lo[0]), float(hi[0]), float(lm[0]), lq, float(rm[0]), y > 0))
    return _Cells.join(cells)


def _check_small(epsilon: object) -> Fraction:
    eps = exact(check_finite_nonnegative(epsilon, "epsilon"), "epsilon")
    if eps > 700:
        raise InvalidParameter(f"epsilon={epsilon!r} must be at most 700 for a PLD")
    return eps


def _pld_subsampled_rr(
    epsilon: Number, k: int, rate: Number, sampling: Sampling, step_bits: int, tail: float
) -> PLD:
    """The subsampled PLD of k-ary randomized response with parameter ε (the pair of
    :func:`~dpcompose.accounting.pld_randomized_response`: P = (e^ε, 1, k − 2)/(e^ε + k − 1), Q its swap).

    The base pair is symmetric and finite, so the subsampled pairs (Zhu–Dong–Wang 2022, Thm 11 / Prop. 30;
    module docstring) are finite: their losses ln(1 − q + q·e^{±ε}) and 0 are bounded by padded floats.
    """
    eps = _check_small(epsilon)
    _, q = _rate_up(rate)
    smp = _check_sampling(sampling)
    bits, tl = _check_bits(step_bits), _check_tail(tail)
    name = f"Subsampled{_sampling_name(smp)}RR(ε={float(eps):g}, k={k}, q={q:g})"
    if q == 0 or eps == 0:
        return _identity(bits, tl, name)
    if q == 1.0:
        from dpcompose.accounting._pld import pld_randomized_response

        return pld_randomized_response(eps, k, step_bits=bits, tail=tl)
    e = float(eps)
    log_z = e + math.log1p((k - 1) * math.exp(-e))  # ln(e^ε + k − 1)
    outs = [(e, _U * e, e - log_z, -log_z), (-e, _U * e, -log_z, e - log_z)]
    if k > 2:
        lk = math.log(k - 2) - log_z
        outs.append((0.0, 0.0, lk, lk))
    rel = 16 * _EXP_REL + 16 * _U * (1 + e + math.log(k))
    return _from_cells(_finite_cells(outs, q, rel), bits, tl, smp, name)


def _pld_subsampled_approx(
    epsilon: Number, delta: Number, rate: Number, sampling: Sampling, step_bits: int, tail: float
) -> PLD:
    """The subsampled PLD of an (ε, δ)-DP mechanism through its dominating pair RR_(ε,δ):
    P = (δ, (1 − δ)e^ε/(1 + e^ε), (1 − δ)/(1 + e^ε), 0) and Q the reverse.

    Every (ε, δ)-DP mechanism is a post-processing of RR_(ε,δ) in both orders (Kairouz–Oh–Viswanath 2015,
    Thm 2.5), so RR_(ε,δ) dominates it for every α ≥ 0 under the relation it is (ε, δ)-DP for; being
    symmetric it is a base pair for Zhu–Dong–Wang 2022, Thm 11 (Poisson, add/remove) and Prop. 30
    (without replacement, substitution). Outputs: loss +∞ (the δ atom of P; P-mass q·δ in the remove order),
    ln(1 − q + q·e^{±ε}), and ln(1 − q) (the δ atom of Q).
    """
    eps = _check_small(epsilon)
    from dpcompose.accounting._common import probability

    d = probability(delta, "delta")
    _, q = _rate_up(rate)
    smp = _check_sampling(sampling)
    bits, tl = _check_bits(step_bits), _check_tail(tail)
    name = f"Subsampled{_sampling_name(smp)}RR(ε={float(eps):g}, δ={float(d):g}, q={q:g})"
    if q == 0 or (eps == 0 and d == 0):
        return _identity(bits, tl, name)
    if q == 1.0:
        from dpcompose.accounting._pld import pld_approx

        return pld_approx(eps, d, step_bits=bits, tail=tl)
    e = float(eps)
    # ln(1 − δ) from the exact fraction n/m = 1 − δ (found by review: log1p(−float(δ)) raised ValueError
    # for a δ < 1 that rounds to the float 1.0): each log within u of its value, the difference rounded once
    one_minus = 1 - d
    log_n, log_m = math.log(one_minus.numerator), math.log(one_minus.denominator)
    log1md = log_n - log_m
    log_z = e + math.log1p(math.exp(-e))  # ln(1 + e^ε)
    outs = [(e, _U * e, log1md + e - log_z, log1md - log_z), (-e, _U * e, log1md - log_z, log1md + e - log_z)]
    if d > 0:
        ld = math.log(float(d))
        outs += [(math.inf, 0.0, ld, -math.inf), (-math.inf, 0.0, -math.inf, ld)]
    # (ln(1 − δ) within u·(|ln n| + |ln m| + |ln(1 − δ)|) of the exact value)
    rel = 16 * _EXP_REL + 16 * _U * (1 + e) + 4 * _U * (1 + abs(log1md) + abs(log_n) + abs(log_m))
    return _from_cells(_finite_cells(outs, q, rel), bits, tl, smp, name)
