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
  enough: a composition can mix them, and a mix can exceed both (tests/accounting/pld/
  test_subsample_discrete.py has one; Lebeda–Regehr–Kamath–Steinke 2024 discuss related pitfalls).
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
every output has L ≥ a, each certified with a padded evaluation of L (:func:`mix_loss`). Every cell
carries a certified interval [lo, hi] of its losses (L at its two ends) and its two masses with relative
error bounds. :func:`to_buckets` then puts each cell into the bucket (a, a + h] that contains hi and
records how far below a its lowest loss may lie (the buckets' slack, covered by ``build_pld``'s split);
a cell whose loss interval is not bounded below (a tail) makes its bucket go whole to the top. The
"add" order reads the same cells with losses −L, and the without-replacement pair reads the cells of S
twice (once mirrored) plus the atom c. S = {L > 0} = {y > 0} is decided exactly from the output coordinate
(y's sign is that of 2z − Δ, o − μ/2, …), and the partition is also cut where y changes sign, so every cell
lies in S or outside it; an output with L = 0 exactly (z = Δ/2) must stay out of S, or c can turn negative.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from dpcompose._validation import check_finite_nonnegative, check_finite_positive
from dpcompose.accounting._exact import exact
from dpcompose.accounting._pld.buckets import Buckets
from dpcompose.accounting._pld.concurrency import in_parallel
from dpcompose.accounting._pld.discrete_gaussian import BLOCK, UNDERFLOW
from dpcompose.accounting._pld.distribution import PLD, build_pld, pair_of, sides_pld
from dpcompose.accounting._pld.floats import (
    SAFE,
    gamma_padded,
    libm_err,
    rounding_err,
    rounding_rel,
    roundings_down,
    roundings_up,
)
from dpcompose.accounting._pld.lattice import check_bits, check_points, check_tail
from dpcompose.errors import InvalidParameter

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


Sampling = Literal["poisson", "without_replacement"]


FAR = -1e4  # stands for o = −∞ for the continuous Gaussian (its mass below is bounded by 1e-300)


# ---------------------------------------------------------------------------------------------------------
# The loss and the cells
# ---------------------------------------------------------------------------------------------------------


def mix_loss(y: FloatArray, ey: FloatArray | float, q: float) -> tuple[FloatArray, FloatArray]:
    """``(lo, hi)``: certified bounds on L = ln(1 − q + q·e^{y₀}) for every float y with |y − y₀| ≤ ``ey``.

    L is evaluated as ln((1 − q) + q·e^y) for y < 0 and y + ln(q + (1 − q)·e^{−y}) for y ≥ 0: logs of
    sums of two positive terms, each within a few ulps (exp within ``EXP_REL``), so the log is within
    1.01·(``EXP_REL`` + 3u) + (2u + ``EXP_REL``)·(|L| + |y|) (the log's own error, assumed as exp's, and
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
    pad = 10 * (libm_err(2) + rounding_rel(6) + (rounding_rel(2) + libm_err(1)) * size)
    pad = pad + np.where(fin, 1.01 * np.asarray(ey, dtype=np.float64), 0.0) + 1e-300
    return val - pad, val + pad


def y_of_loss(lams: FloatArray, q: float) -> FloatArray:
    """The y with ln(1 − q + q·e^y) = λ (an estimate, used only to start the certified edge search):
    −∞ for λ ≤ ln(1 − q), +∞ where it overflows."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        small = np.log1p(np.expm1(np.minimum(lams, 700.0)) / q)
        big = lams - math.log(q) + np.log1p(-(1 - q) * np.exp(-np.maximum(lams, 30.0)))
        y = np.where(lams > 30, big, small)
    return np.where(np.isnan(y), -np.inf, y)


@dataclass
class Cells:
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
    losses then lie between two consecutive ones, up to the edges' slack: :func:`thin_cuts`); None: every
    lattice loss in the range."""

    @staticmethod
    def join(parts: Sequence[Cells]) -> Cells:
        fields = ("lo", "hi", "lmix", "lbase", "rel", "pos")
        return Cells(*(np.concatenate([getattr(c, f) for c in parts]) for f in fields))


def cell(lo: float, hi: float, lmix: float, lbase: float, rel: float, pos: bool) -> Cells:
    """One cell (an atom or a tail)."""

    def one(v: float) -> FloatArray:
        return np.array([v], dtype=np.float64)

    return Cells(one(lo), one(hi), one(lmix), one(lbase), one(rel), np.array([pos]))


def bound_only(mass_hi: float) -> tuple[float, float]:
    """``(log m, rel)`` of a mass known only to lie in [0, ``mass_hi``]."""
    if mass_hi <= 0:
        return -math.inf, 0.0
    return math.log(mass_hi / 2), 1.0


Bound = Callable[[FloatArray], tuple[FloatArray, FloatArray]]
"""Certified bounds (lo, hi) on a pair's loss at an array of outputs."""


def bound_at(bound: Bound, z: float) -> tuple[float, float]:
    """``bound`` at one output."""
    lo, hi = bound(np.array([z]))
    return float(lo[0]), float(hi[0])


def sorted_unique(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """The distinct values, ascending, of an array made of sorted runs (a stable sort, a merge sort of the
    runs, orders it in about linear time where the default sort or ``np.unique`` takes far longer). Sorts
    ``values`` in place."""
    values.sort(kind="stable")
    return values[np.concatenate(([True], values[1:] != values[:-1]))]


def mix_logs(
    lbase: FloatArray, rel_base: FloatArray, lp: FloatArray, rel_p: FloatArray, q: float
) -> tuple[FloatArray, FloatArray]:
    """``(log mix, rel)`` with mix = (1 − q)·Q + q·P from the logs of Q and P (relative errors add at most
    the rounding of ln(1 − q), ln q and the log-sum, padded)."""
    with np.errstate(invalid="ignore"):
        lm = np.logaddexp(math.log1p(-q) + lbase, math.log(q) + lp)
    rel = np.maximum(rel_base, rel_p) + rounding_err(8, np.abs(np.where(np.isfinite(lm), lm, 0.0)) + 2)
    return lm, rel + libm_err(4)


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
    of the range lies below (resp. from) it. ``start`` lies in [``lo_lim``, ``hi_lim``] (:func:`partition`
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


def partition(
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
        # blows up, L → ln(1 − q) ≈ −q, and a central difference would overestimate dx/dL up to 30-fold,
        # the overshoot below λ becoming the buckets' slack, ×1.5 … ×11). NaN elsewhere.
        inside = np.isfinite(start) & (start > lo_lim) & (start < hi_lim)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            one_sided = np.abs(np.diff(np.where(inside, start, np.nan)) / np.diff(lams))
            left, right = one_sided[:-1], one_sided[1:]
            agree = np.abs(left - right) <= 0.05 * np.maximum(left, right)
            mid = np.where(agree, np.minimum(left, right), np.nan)
        run = np.concatenate(([np.nan], mid, [np.nan]))
    start = np.clip(np.nan_to_num(start, nan=lo_lim, posinf=hi_lim, neginf=lo_lim), lo_lim, hi_lim)
    for i in range(0, lams.size, BLOCK):  # (each λ's edges are searched on their own)
        sl = slice(i, i + BLOCK)
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
    bnd = sorted_unique(pts)  # the distinct boundaries
    del pts
    first, end = bnd[:-1], bnd[1:]
    if not integer:  # a cell [b, b′) of a continuum is bounded at its two ends: one evaluation per boundary
        lo_b = np.empty(bnd.size)
        hi_b = np.empty(bnd.size)
        for i in range(0, bnd.size, BLOCK):
            sl = slice(i, i + BLOCK)
            lo_b[sl], hi_b[sl] = bound(bnd[sl])
        return first, end, lo_b[:-1], hi_b[1:]
    lo = np.empty(first.size)
    hi = np.empty(first.size)
    for i in range(0, first.size, BLOCK):
        sl = slice(i, i + BLOCK)
        lo[sl] = bound(first[sl])[0]
        hi[sl] = bound(end[sl] - 1)[1]
    return first, end, lo, hi


def check_span(lo: float, hi: float, bits: int) -> None:
    """Refuse, before anything is allocated, a subsampled PLD whose losses span [lo, hi] on too fine a
    lattice: the one lattice budget of every PLD (``check_points``,
    which names the largest step_bits that fits), counting the points of both orders of neighbours (the
    remove and add orders span [lo, hi] and [−hi, −lo]; the without-replacement pair lies in [−hi, hi],
    lo < 0), as a subsampled PLD builds both."""
    scale = math.ldexp(1.0, bits)
    n = math.ceil(hi * scale) - math.floor(lo * scale) + 2
    what = f"this subsampled PLD (both orders of neighbours, losses in [{lo:.4g}, {hi:.4g}])"
    check_points(2 * n, what, bits)


def check_built_span(lo: float, hi: float, q: float, bits: int) -> None:
    """:func:`check_span` for the range :func:`from_cells` will check once the cells of a pair whose
    outputs' losses span [lo, hi] are built: widened to 0 and down to ln(1 − q), where the cell below the
    outputs' range lies, so that the constructor, which builds nothing, refuses a lattice that would be
    refused only after the cells are built (at σ = 1e4, q = 0.5, step_bits = 26 the loss at the output −1e4
    is far above ln(1 − q), and building takes 40 s)."""
    l_min = float(mix_loss(np.array([-np.inf]), 0.0, q)[0][0])
    check_span(min(lo, l_min, 0.0), max(hi, 0.0), bits)


def lattice_points(lo: float, hi: float, bits: int) -> FloatArray:
    """The lattice points j·h covering [lo, hi] (refusing a lattice too fine for the range)."""
    check_span(lo, hi, bits)
    scale = math.ldexp(1.0, bits)
    j0 = math.floor(lo * scale) - 1
    j1 = math.ceil(hi * scale) + 1
    return np.arange(j0, j1 + 1, dtype=np.float64) / scale


# ---------------------------------------------------------------------------------------------------------
# Cells to buckets
# ---------------------------------------------------------------------------------------------------------

Direction = Literal["remove", "add", "sym"]


def _zero_atom(c: Cells) -> Cells:
    """The atom c = 1 − mix(S) − Q(S) at loss 0 of the without-replacement pair (module docstring), S the
    cells in S; its mass is known within the cells' errors (and the float sums'). It is ≥ 0 because every
    base pair here is symmetric (module docstring); a computed lower bound below 0 only widens its error."""
    idx = np.flatnonzero(c.pos)
    err = 0.0
    tot = 0.0
    for i in range(0, idx.size, BLOCK):  # (a sum in blocks: its rounding is bounded as any order's)
        k = idx[i : i + BLOCK]
        with np.errstate(under="ignore"):
            m = np.exp(c.lmix[k]) + np.exp(c.lbase[k])
        lmix = np.where(np.isfinite(c.lmix[k]), c.lmix[k], 0.0)
        err += float(np.sum(m * (c.rel[k] + libm_err(2) + rounding_err(4, np.abs(lmix) + 1))))
        tot += float(np.sum(m))
    err += rounding_err(4, idx.size + 4) * tot + 1e-300 * idx.size
    c_hi = min(1.0, 1.0 - tot + err + rounding_rel(4))
    c_lo = 1.0 - tot - err - rounding_rel(4)
    if c_hi <= 0:
        return cell(0.0, 0.0, -math.inf, -math.inf, 0.0, False)
    if c_lo <= 0:
        lm, rel = bound_only(c_hi)
    else:
        mid = (c_hi + c_lo) / 2
        lm, rel = math.log(mid), (c_hi - c_lo) / (2 * mid) + rounding_rel(4)
    return cell(0.0, 0.0, lm, lm, rel, False)


_Block = tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]


def _blocks(c: Cells, direction: Direction, zero: Cells | None) -> Iterator[_Block]:
    """The ``(lo, hi, lp, lq, rel)`` of the outputs of one order of the pair, ``BLOCK`` cells at a time,
    each cell's loss bounds first clipped at 0 by its exact sign (L > 0 on S, L ≤ 0 off it).

    ``remove``: losses L, P-masses mix, Q-masses Q. ``add``: losses −L, P = Q, Q = mix. ``sym``: the
    without-replacement pair (P*, Q*): the cells of S read both ways, then ``zero``, the atom at 0
    (:func:`_zero_atom`)."""

    def clipped(k: slice | npt.NDArray[np.intp]) -> tuple[FloatArray, FloatArray]:
        pos, lo, hi = c.pos[k], c.lo[k], c.hi[k]
        return np.where(pos, np.maximum(lo, 0.0), lo), np.where(pos, hi, np.minimum(hi, 0.0))

    if direction == "sym":
        idx = np.flatnonzero(c.pos)
        for i in range(0, idx.size, BLOCK):
            k = idx[i : i + BLOCK]
            lo, hi = clipped(k)
            yield lo, hi, c.lmix[k], c.lbase[k], c.rel[k]
            yield -hi, -lo, c.lbase[k], c.lmix[k], c.rel[k]
        assert zero is not None
        yield zero.lo, zero.hi, zero.lmix, zero.lbase, zero.rel
        return
    for i in range(0, c.lo.size, BLOCK):
        sl = slice(i, i + BLOCK)
        lo, hi = clipped(sl)
        if direction == "remove":
            yield lo, hi, c.lmix[sl], c.lbase[sl], c.rel[sl]
        else:
            yield -hi, -lo, c.lbase[sl], c.lmix[sl], c.rel[sl]


def to_buckets(c: Cells, bits: int, direction: Direction, starts: IntArray | None = None) -> Buckets:
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
        kept = np.isfinite(hi) & (lp >= UNDERFLOW)
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
        rel_p = rel + libm_err(1) + rounding_err(2, np.abs(lp) + 1)
        with np.errstate(under="ignore"):
            pm = np.exp(np.maximum(lp, UNDERFLOW))
        tiny = lp < UNDERFLOW
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
            rm = np.exp(np.maximum(lr, UNDERFLOW))
        r_small = lr < UNDERFLOW
        rm = np.where(r_small, 0.0, rm)
        rel_r = rel + libm_err(1) + rounding_err(2, np.abs(np.where(np.isfinite(lr), lr, 0.0)) + 1)
        r_bound = rm * rel_r + np.where(r_small, math.exp(UNDERFLOW), 0.0)
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
    above = roundings_up(above, 4 * (n_side + 2)) + 1e-300 * n_side
    inf_hi = roundings_up(inf_hi, 4 * (n_side + 2))
    inf_lo = roundings_down(inf_lo, 4 * (n_side + 2))
    if empty:
        nil = np.zeros(1)
        return Buckets(-1, nil, nil.copy(), nil.copy(), above_hi=above, inf_hi=inf_hi, inf_lo=inf_lo)
    rel_b = np.zeros(n)
    low_ok = np.empty(n, dtype=np.bool_)
    slack = 0.0
    for i in range(0, n, BLOCK):  # (only the buckets holding a kept cell have mass and an error)
        sl = slice(i, i + BLOCK)
        ok = eta_b[sl] <= h / 1024
        low_ok[sl] = ok
        k = np.flatnonzero(count[sl])
        if k.size == 0:
            continue
        cnt, p_k, r_k = count[sl][k], p[sl][k], r[sl][k]
        g = gamma_padded(cnt + 2)  # the float sums (Higham 2002, Lemma 3.1)
        perr_k = perr[sl][k] * SAFE + g * p_k
        rerr_k = rerr[sl][k] * SAFE + g * r_k
        with np.errstate(divide="ignore", invalid="ignore"):
            rel_k = np.where(p_k > 0, perr_k / p_k, 0.0)
            # (r = 0: no Q-mass known, which build_pld treats safely)
            rel_b[i + k] = np.maximum(rel_k, np.where(r_k > 0, rerr_k / r_k, 0.0))
        used = ok[k] & (p_k > 0)
        if np.any(used):
            slack = max(slack, float(np.max(eta_b[sl][k][used])))
    slack *= SAFE
    edges = None if ends is None else ends - j_lo
    return Buckets(
        j_lo,
        p,
        r,
        rel_b,
        above_hi=above,
        inf_hi=inf_hi,
        inf_lo=inf_lo,
        slack=slack,
        low_ok=low_ok,
        edges=edges,
    )


def _direction_starts(starts: IntArray | None, direction: Direction) -> IntArray | None:
    """The wide buckets' lower ends for one order (:func:`to_buckets`) from the lattice indices the cells
    were cut at (:attr:`Cells.starts`): as they are for the remove order, negated for the add order (losses
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


def check_cells(cells: Cells, bits: int) -> None:
    """The lattice budget on the span of the cells' finite loss bounds (the lattice-based pairs checked
    their range before building it)."""
    ends = np.concatenate([cells.lo[np.isfinite(cells.lo)], cells.hi[np.isfinite(cells.hi)]])
    if ends.size:  # (every finite bound: a cell reaching +∞ has a finite lower end, which can lie beyond
        # the largest finite upper one)
        check_span(min(float(np.min(ends)), 0.0), max(float(np.max(ends)), 0.0), bits)


def order(cells: Cells, bits: int, tail: float, direction: Direction, name: str, sampling: Sampling) -> PLD:
    """One order of the Poisson-subsampled pair ("remove": (mix, Q); "add": (Q, mix)) from its cells, alone
    (no reverse), its lower side built where read (a privacy map reads only the upper one)."""
    b = to_buckets(cells, bits, direction, _direction_starts(cells.starts, direction))
    desc = name if direction == "remove" else f"{name} {direction}"
    built = build_pld(bits, b, tail, desc, lazy_lower=True)
    return replace(built, sampling=sampling)


def symmetric(cells: Cells, bits: int, tail: float, name: str, sampling: Sampling) -> PLD:
    """The without-replacement pair's PLD from its cells.

    The symmetric pair (P*, Q*) only dominates the mechanism (module docstring): a lower bound on its δ need
    not be one on the mechanism's (e.g. 0.3072 where the best attack on real data sets reaches 0.3005).
    The lower side is that of the "remove" pair (mix, Q) instead, which real neighbours attain:
    substitute a record whose query value differs by Δ from the other's, all other records contributing
    nothing, and the two outputs are (1 − q)·Q + q·P and Q; in a composition every mechanism can be asked
    such a query about the same pair of data sets."""
    sym = build_pld(bits, to_buckets(cells, bits, "sym", _direction_starts(cells.starts, "sym")), tail, name)
    attained = build_pld(
        bits,
        to_buckets(cells, bits, "remove", _direction_starts(cells.starts, "remove")),
        tail,
        name + " remove",
    )
    return sides_pld(bits, sym.upper, attained.lower, tail, name, sampling=sampling)


def from_cells(cells: Cells, bits: int, tail: float, sampling: Sampling, name: str) -> PLD:
    """The PLD of the subsampled pair: both orders (Poisson; :func:`order`, in two threads: numpy does most
    of the work, and releases the GIL) or the symmetric pair (without replacement; :func:`symmetric`).
    A cell's loss bounds are first clipped at 0 by its exact sign (L > 0 on S, L ≤ 0 off it;
    :func:`_blocks`)."""
    check_cells(cells, bits)
    if sampling == "poisson":
        fwd, rev = in_parallel(
            lambda: order(cells, bits, tail, "remove", name, sampling),
            lambda: order(cells, bits, tail, "add", name, sampling),
        )
        return pair_of(fwd, rev)
    return symmetric(cells, bits, tail, name, sampling)


# ---------------------------------------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------------------------------------


def check_sampling(sampling: object) -> Sampling:
    if isinstance(sampling, str) and sampling == "poisson":
        return "poisson"
    if isinstance(sampling, str) and sampling == "without_replacement":
        return "without_replacement"
    raise InvalidParameter(f"sampling={sampling!r} must be 'poisson' or 'without_replacement'")


def rate_up(rate: object) -> tuple[Fraction, float]:
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


def sampling_name(sampling: Sampling) -> str:
    return "Poisson" if sampling == "poisson" else "WOR"


def read_args(
    noise: object,
    noise_name: str,
    rate: object,
    sensitivity: object,
    sampling: object,
    step_bits: object,
    tail: object,
) -> tuple[Fraction, Fraction, float, Fraction, Sampling, int, float]:
    """The checked arguments of the continuous constructors (noise, rate and its float, Δ, sampling, bits,
    tail)."""
    value = exact(check_finite_positive(noise, noise_name), noise_name)
    qq, q = rate_up(rate)
    sens = exact(check_finite_positive(sensitivity, "sensitivity"), "sensitivity")
    return value, qq, q, sens, check_sampling(sampling), check_bits(step_bits), check_tail(tail)


def check_small(epsilon: object) -> Fraction:
    eps = exact(check_finite_nonnegative(epsilon, "epsilon"), "epsilon")
    if eps > 700:
        raise InvalidParameter(f"epsilon={epsilon!r} must be at most 700 for a PLD")
    return eps
