"""Certified PLDs of subsampled *discrete* noise: the discrete Laplace and the discrete Gaussian.

These are the noises dpcompose's own ``make_laplace`` and ``make_gaussian`` add, in grid units (their pair
at ``d_in`` is ``PrivacyLoss.discrete_laplace(⌈Δ/g⌉, t/g)`` / ``discrete_gaussian(⌈Δ/g⌉, σ/g)``), so these
PLDs are what a subsampled dpcompose mechanism (DP-SGD with ``make_gaussian``) really releases. The pairs
and the discretisation are those of :mod:`dpcompose.accounting._pld.subsample.cells`: with Q the noise centred
at 0, P centred at the integer Δ and mix = (1 − q)·Q + q·P, the remove loss L(z) = ln(1 − q + q·e^{y(z)})
is increasing in the integer output z, so every cell of outputs is an integer range and its masses are
sums of the pmf over it:

* **discrete Laplace** (Q(z) = c·r^|z|, r = e^{−1/t}, c = (1 − r)/(1 + r)): y = −Δ/t for z ≤ 0 (one
  atom: Q-mass 1/(1 + r), P-mass r^Δ/(1 + r)), y = Δ/t for z ≥ Δ (the mirror atom) and y = (2z − Δ)/t in
  between, where a range [A, B] of n integers has the geometric sums Q = r^A(1 − r^n)/(1 + r) and
  P = r^{Δ−B}(1 − r^n)/(1 + r), each evaluated as a few exponentials of exactly known arguments (the
  float 1/t within u) with a relative error bound;
* **discrete Gaussian** (Q(z) = e^{−z²/2s²}/Z): y = Δ(2z − Δ)/(2s²); a range's sums and Z are taken by
  the functions :func:`~dpcompose.accounting.pld_discrete_gaussian` uses
  (:mod:`discrete_gaussian`: ``range_sums``, ``normaliser``), where their error bounds
  are: atom by atom for short ranges, Euler–Maclaurin with its bounded remainder (the integral a certified
  Φ-difference or Simpson's rule) for long ones, Z by Poisson summation or, for small s, summed directly;
  the outputs beyond ±⌈14s⌉ (and Δ) are tails bounded by Φ (Z ≥ s√(2π)) whose losses are bounded by L at
  the range's ends (below) or unbounded (above).

Every loss edge is certified with a padded float evaluation of L at an integer (the integers up to 2**53
are exact floats), so the work grows with the number of lattice points the loss range spans, not with
Δ or s: Δ = 2**30 grid units and s = 10·2**30 cost the same as Δ = 1, s = 10. Where the integer outputs
lie further apart in loss than the lattice step, each is its own cell (``_integer_cells``), so there the
work is the number of outputs: Δ = 20, s = 1, q = 0.9 has 49 outputs over 7.9 million lattice points.

Assumptions of the certificate: those of :mod:`dpcompose.accounting._pld.distribution`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

from dpcompose._validation import check_finite_positive
from dpcompose.accounting._exact import Number, exact
from dpcompose.accounting._gaussian import phi_up
from dpcompose.accounting._pld.discrete_gaussian import BLOCK, normaliser, pld_discrete_gaussian, range_sums
from dpcompose.accounting._pld.distribution import PLD
from dpcompose.accounting._pld.floats import libm_err, rounding_err
from dpcompose.accounting._pld.laplace import pld_discrete_laplace
from dpcompose.accounting._pld.lattice import (
    DEFAULT_STEP_BITS,
    DEFAULT_TAIL,
    check_bits,
    check_int_sensitivity,
    check_tail,
    fmt,
)
from dpcompose.accounting._pld.subsample.build import (
    THIN_CORE,
    Build,
    has_thin,
    identity,
    lazy_pld,
    thin_cuts,
)
from dpcompose.accounting._pld.subsample.cells import (
    Bound,
    Cells,
    Sampling,
    bound_at,
    bound_only,
    cell,
    check_built_span,
    check_sampling,
    check_span,
    from_cells,
    lattice_points,
    mix_logs,
    mix_loss,
    partition,
    rate_up,
    sampling_name,
    sorted_unique,
    y_of_loss,
)
from dpcompose.errors import InvalidParameter

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


_MAX_INT = 2**50  # outputs and shifts stay far inside the exact float integers


def _int_sensitivity(sensitivity: object) -> int:
    """_pld._check_int_sensitivity, and at most 2**50."""
    sensitivity = check_int_sensitivity(sensitivity)
    if sensitivity > _MAX_INT:
        raise InvalidParameter(f"sensitivity={sensitivity!r} must be at most 2**50")
    return int(sensitivity)


def sparse_from(bits: int, q: float, dy: float, y0: float, z_lo: int, z_hi: int) -> int:
    """The least output z_s in [z_lo, z_hi] from which L′(y)·dy ≥ h (see :func:`_integer_cells`), estimated
    in floats: y_s = ln(ρ/(1 − ρ)) + ln((1 − q)/q) with ρ = h/dy solves qe^y/(1 − q + qe^y) = ρ."""
    rho = math.ldexp(1.0, -bits) / dy
    if rho >= 1:
        return z_hi
    y_s = math.log(rho) - math.log1p(-rho) + math.log1p(-q) - math.log(q)
    return min(z_hi, max(z_lo, math.ceil((y_s - y0) / dy)))


def _integer_cells(
    bits: int,
    q: float,
    dy: float,
    y0: float,
    z_lo: int,
    z_hi: int,
    bound: Bound,
    cuts: FloatArray,
    thin: Callable[[float], float] | None = None,
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, IntArray | None]:
    """``(first, end, lo, hi)``: cells [first, end) of the integer outputs z_lo ≤ z < z_hi of a pair with
    y = y0 + dy·z (dy > 0), each with certified bounds lo ≤ L ≤ hi (``bound``), cut at ``cuts`` and at the
    certified edges of the lattice losses (:func:`~dpcompose.accounting._pld.subsample.cells.partition`).

    L = ln(1 − q + q·e^y) is convex in y, so consecutive integers' losses are at least L′(y)·dy apart, and
    from the output z_s where L′(y)·dy = h on (L′(y) = qe^y/(1 − q + qe^y)) at least a lattice step: there
    the lattice edges cut no coarser than the integers themselves, and each integer is taken as its own
    cell instead. The work is then the number of lattice points below z_s plus the number of integers from
    it, not the number of lattice points the whole range spans (49 integers against 7.9 million lattice
    points at Δ = 20, σ = 1, q = 0.9, h = 2**-14). z_s is a float estimate: it decides where the work goes,
    never the certificate (any partition into integer ranges with certified loss bounds is valid).

    ``thin``: cut at the lattice losses :func:`thin_cuts` keeps, ``thin``
    being its ``up_at``; the last item is then those losses' lattice indices (``Cells.starts``: every cell
    lies between two consecutive ones, the single integers from z_s on having one loss each), else None
    (also where thinning skipped no lattice loss: the cells are then the full build's).
    """
    z_s = sparse_from(bits, q, dy, y0, z_lo, z_hi)
    parts: list[tuple[FloatArray, FloatArray, FloatArray, FloatArray]] = []
    # the lattice steps next to loss 0 are always cut, as thin_cuts keeps them: where every integer near 0
    # lies past z_s, the without-replacement pair's atom at loss 0 would otherwise share one wide bucket with
    # the first losses on either side (making 1000 steps 2.8% looser, one step 22%)
    cut_at: list[IntArray] = [np.arange(-THIN_CORE, THIN_CORE + 1, dtype=np.int64)]
    skipped = False  # whether thinning skipped any lattice loss (if not, the thin build is the full one)
    if z_s > z_lo:
        lams = lattice_points(bound_at(bound, z_lo)[0], bound_at(bound, z_s - 1)[1], bits)
        if thin is not None:
            keep = thin_cuts(lams, bits, thin)
            skipped = not bool(np.all(keep))
            lams = lams[keep]
            cut_at.append(np.rint(np.ldexp(lams, bits)).astype(np.int64))
        start = np.empty(lams.size)
        for i in range(0, lams.size, BLOCK):
            start[i : i + BLOCK] = (y_of_loss(lams[i : i + BLOCK], q) - y0) / dy + 1
        parts.append(partition(lams, start, bound, True, float(z_lo), float(z_s), cuts))
    if z_s < z_hi:
        z = np.arange(z_s, z_hi, dtype=np.float64)
        lo = np.empty(z.size)
        hi = np.empty(z.size)
        for i in range(0, z.size, BLOCK):
            lo[i : i + BLOCK], hi[i : i + BLOCK] = bound(z[i : i + BLOCK])
        parts.append((z, z + 1, lo, hi))
        if skipped:
            # each integer's losses lie within a lattice step or two (lo ≈ hi): its lattice bucket and the
            # ones on either side are narrow buckets in either order (the add order reads −L), the gaps
            # between the integers empty ones. (j rises with z, so the triples are nearly sorted runs:
            # sorted_unique is about linear, where union1d takes 8 of 12 s on 10⁷ integers.)
            j = np.ceil(np.ldexp(hi[np.isfinite(hi)], bits)).astype(np.int64) - 1
            cut_at.append(np.column_stack((j - 1, j, j + 1)).ravel())
    # (nothing thinned: the full build's cells, read as they are)
    starts = sorted_unique(np.concatenate(cut_at)) if skipped else None
    if len(parts) == 1:
        return (*parts[0], starts)
    first, end, lo, hi = (np.concatenate(f) for f in zip(*parts, strict=True))
    return first, end, lo, hi, starts


# ---------------------------------------------------------------------------------------------------------
# Discrete Laplace
# ---------------------------------------------------------------------------------------------------------


def _dlap_cells(bits: int, delta: int, t: Fraction, q: float) -> Cells:
    ut = float(1 / t)  # 1/t within u (relative); every y below is (an exact integer)·ut
    t_f = float(t)
    d = float(delta * ut)

    def bound(z: FloatArray) -> tuple[FloatArray, FloatArray]:
        y = (2 * z - delta) * ut
        return mix_loss(y, rounding_err(2.01, np.abs(y)), q)

    l1r = math.log1p(math.exp(-ut))  # ln(1 + r)
    # every log-mass below is a sum of ≤ 4 terms, each within (2u·(argument) + EXP_REL): padded
    rel_c = libm_err(16) + rounding_err(16, 1 + d)
    parts: list[Cells] = []
    for z, lq_a, lp_a in ((0, -l1r, -delta * ut - l1r), (delta, -delta * ut - l1r, -l1r)):
        lo_a, hi_a = bound(np.array([float(z)]))
        rel_a = np.array([rel_c + rounding_err(4, abs(lq_a) + abs(lp_a))])
        lm_a, rm_a = mix_logs(np.array([lq_a]), rel_a, np.array([lp_a]), rel_a, q)
        parts.append(cell(float(lo_a[0]), float(hi_a[0]), float(lm_a[0]), lq_a, float(rm_a[0]), z > 0))
    check_span(bound_at(bound, 0)[0], bound_at(bound, delta)[1], bits)
    if delta >= 2:
        # the integers 1 … Δ − 1 (cells [first, end)); y > 0 exactly where 2z > Δ: cut there too, so that
        # every cell lies on one side
        first, end, lo, hi, _ = _integer_cells(
            bits, q, 2 / t_f, -delta / t_f, 1, delta, bound, np.array([delta // 2 + 1.0])
        )
        lm = np.empty(first.size)
        lq = np.empty(first.size)
        rm = np.empty(first.size)
        for i in range(0, first.size, BLOCK):
            sl = slice(i, i + BLOCK)
            n = end[sl] - first[sl]
            with np.errstate(divide="ignore"):
                lg = np.log(-np.expm1(-n * ut))  # ln(1 − r^n)
            lq[sl] = -first[sl] * ut + lg - l1r
            lp = -(delta - (end[sl] - 1)) * ut + lg - l1r
            rel = rel_c + rounding_err(4, np.abs(lq[sl]) + np.abs(lp))
            lm[sl], rm[sl] = mix_logs(lq[sl], rel, lp, rel, q)
        parts.insert(1, Cells(lo, hi, lm, lq, rm, 2 * first > delta))
    return Cells.join(parts)


def pld_subsampled_discrete_laplace(
    sensitivity: int,
    scale: Number,
    rate: Number,
    *,
    sampling: Sampling = "poisson",
    step_bits: int = DEFAULT_STEP_BITS,
    tail: float = DEFAULT_TAIL,
) -> PLD:
    """The PLD of the discrete Laplace mechanism (integer sensitivity Δ, scale t: P(z) ∝ e^{−|z|/t}) run
    on a subsample drawn with this rate.

    This is dpcompose's ``make_laplace`` in grid units (Δ = its grid-unit sensitivity, t = scale/g; see
    :meth:`PrivacyLoss.discrete_laplace <dpcompose.accounting.PrivacyLoss.discrete_laplace>`).
    ``sampling="poisson"``: each record kept independently with probability ``rate``, add/remove neighbours;
    the "remove" pair ((1 − q)Q + qP, Q) and the "add" pair (Q, (1 − q)Q + qP) are kept and composed
    separately, and δ(ε) is the larger. ``sampling="without_replacement"``: a fixed-size subset (rate =
    m/n), substitute neighbours, Δ the sensitivity under substitution; the PLD is that of the symmetric
    pair built from the two-part bound (:mod:`dpcompose.accounting._pld.subsample.cells`). Rate 1 is the
    mechanism itself (:func:`pld_discrete_laplace`), rate 0 or Δ = 0 the identity (δ = 0).

    Source: Zhu–Dong–Wang 2022 (Thm 11, Poisson subsampling; Prop. 30, without replacement; Thm 10,
    composition); Balle–Barthe–Gaboardi 2018 Thms 2, 8 and 9; Ghosh–Roughgarden–Sundararajan 2009
    (the mechanism); discretisation: Doroshenko et al. 2022 (connect the dots).

    Raises:
        InvalidParameter: Δ not an integer in [0, 2**50], t not positive, rate outside [0, 1], Δ/t above
            30 (for a rate below 1), an unknown ``sampling``, or a lattice too fine for the loss range (the
            points of both orders above 2**26; the message names the step_bits that fits).

    Examples:
        >>> from dpcompose.accounting import pld_subsampled_discrete_laplace
        >>> step = pld_subsampled_discrete_laplace(2**30, 10 * 2**30, 0.01)  # make_laplace(scale=10)
        >>> lo, hi = step.self_compose(100).epsilon_bounds(1e-6)
        >>> 0.03 < float(lo) <= float(hi) < 0.034
        True
    """
    delta = _int_sensitivity(sensitivity)
    t = exact(check_finite_positive(scale, "scale"), "scale")
    _, q = rate_up(rate)
    smp = check_sampling(sampling)
    bits = check_bits(step_bits)
    tl = check_tail(tail)
    if delta == 0 or q == 0:
        return identity(bits, tl, "DiscreteLaplace(Δ=0)" if delta == 0 else "Subsampled(q=0)")
    if q == 1.0:
        return pld_discrete_laplace(delta, t, step_bits=bits, tail=tl)
    if delta / t > 30:
        raise InvalidParameter(f"sensitivity/scale={fmt(delta / t)} must be at most 30 for this PLD")
    name = f"Subsampled{sampling_name(smp)}DiscreteLaplace(Δ={delta}, t={float(t):g}, q={q:g})"
    return from_cells(_dlap_cells(bits, delta, t, q), bits, tl, smp, name)


# ---------------------------------------------------------------------------------------------------------
# Discrete Gaussian
# ---------------------------------------------------------------------------------------------------------


def _dgauss_bound(delta: int, s: Fraction, q: float) -> Bound:
    """Certified bounds on the subsampled discrete Gaussian pair's loss at integer outputs z."""
    c_y = float(Fraction(delta) / (2 * s * s))  # y = (2z − Δ)·c_y, c_y within u

    def bound(z: FloatArray) -> tuple[FloatArray, FloatArray]:
        y = (2 * z - delta) * c_y
        return mix_loss(y, rounding_err(2.01, np.abs(y)), q)

    return bound


def dgauss_cells(bits: int, delta: int, s: Fraction, q: float, thin: bool = False) -> Cells:
    """Cells of the subsampled discrete Gaussian pair (Q centred at 0, P at Δ, on the integers); ``thin``:
    cut at the lattice losses :func:`~dpcompose.accounting._pld.subsample.build.thin_cuts` keeps
    (``Cells.starts``)."""
    s2 = s * s
    s_f = float(s)
    two_s2 = float(2 * s2)
    c_y = float(Fraction(delta) / (2 * s2))  # y = (2z − Δ)·c_y, c_y within u
    log_n0 = math.log(s_f) + 0.5 * math.log(2 * math.pi)
    K = max(1, math.ceil(14 * s))
    z_min, z_max = -K, K + delta
    bound = _dgauss_bound(delta, s, q)

    check_span(bound_at(bound, z_min)[0], bound_at(bound, z_max)[1], bits)
    grid = np.arange(z_min, z_max + 1, max(1, math.floor(s_f / 8)), dtype=np.float64)  # cells ≤ s/8 wide
    cuts = np.append(grid, delta // 2 + 1.0)  # y > 0 exactly where 2z > Δ: every cell on one side
    up_at = None
    if thin:  # (an estimate) P-mass of either order from the output z on is at most about Φ̄((z − Δ)/s)
        normal = NormalDist()

        def up_at(t: float) -> float:
            return bound_at(bound, delta - s_f * normal.inv_cdf(t))[0]

    first, end, lo, hi, starts = _integer_cells(
        bits, q, 2 * c_y, -delta * c_y, z_min, z_max + 1, bound, cuts, up_at
    )
    # Tails, as masses over s√(2π) ≤ Z: Σ_{y>k} f(y) ≤ ∫_k^∞ f = s√(2π)·Φ(−k/s) for k ≥ 0.
    phi_k = phi_up(math.nextafter(float(Fraction(-K) / s), math.inf))
    phi_kd = phi_up(math.nextafter(float(Fraction(-K - delta) / s), math.inf))
    log_z, rel_z = normaliser(s, z_min, z_max)
    shift = log_n0 - log_z
    what = f"sigma={s_f:g}, sensitivity={delta}, step_bits={bits} (subsampled)"
    # the cells: the tail below, the range's cells (written in place, BLOCK at a time), the tail above
    m = first.size
    cells = Cells(
        np.empty(m + 2),
        np.empty(m + 2),
        np.empty(m + 2),
        np.empty(m + 2),
        np.empty(m + 2),
        np.empty(m + 2, dtype=np.bool_),
    )
    cells.lo[1 : m + 1], cells.hi[1 : m + 1] = lo, hi
    del lo, hi
    for i in range(0, m, BLOCK):
        sl = slice(i, min(i + BLOCK, m))
        out = slice(sl.start + 1, sl.stop + 1)
        A, B = first[sl], end[sl] - 1
        lqb, rq = range_sums(A, B, s_f, two_s2, log_n0, what)
        lpb, rp = range_sums(A - delta, B - delta, s_f, two_s2, log_n0, what)
        rq = rq + rel_z + rounding_err(8, np.abs(lqb) + abs(log_n0) + abs(log_z) + 1)
        rp = rp + rel_z + rounding_err(8, np.abs(lpb) + abs(log_n0) + abs(log_z) + 1)
        cells.lbase[out] = lqb + shift
        cells.lmix[out], rm = mix_logs(lqb + shift, rq, lpb + shift, rp, q)
        cells.rel[out] = np.maximum(rm, rq)
        cells.pos[out] = delta < 2 * A  # (y > 0: in S)
    # below z_min: Q-mass ≤ Φ(−K/s), P-mass (shifted by Δ further out) ≤ Φ(−(K + Δ)/s); losses ≥ ln(1 − q)
    l_mix_b, _ = bound_only((1 - q) * phi_k + q * phi_kd)
    l_base_b, _ = bound_only(phi_k)
    l_min = float(mix_loss(np.array([-np.inf]), 0.0, q)[0][0])
    # above z_max = K + Δ: Q-mass ≤ Φ(−(K + Δ)/s), P-mass ≤ Φ(−K/s); losses unbounded above
    l_mix_a, _ = bound_only((1 - q) * phi_kd + q * phi_k)
    l_base_a, _ = bound_only(phi_kd)
    for k, row in (
        (0, (l_min, bound_at(bound, z_min - 1)[1], l_mix_b, l_base_b, 1.0, False)),
        (m + 1, (bound_at(bound, z_max + 1)[0], math.inf, l_mix_a, l_base_a, 1.0, True)),
    ):
        cells.lo[k], cells.hi[k], cells.lmix[k], cells.lbase[k], cells.rel[k], cells.pos[k] = row
    cells.starts = starts
    return cells


def pld_subsampled_discrete_gaussian(
    sensitivity: int,
    sigma: Number,
    rate: Number,
    *,
    sampling: Sampling = "poisson",
    step_bits: int = DEFAULT_STEP_BITS,
    tail: float = DEFAULT_TAIL,
) -> PLD:
    """The PLD of the discrete Gaussian mechanism (integer sensitivity Δ, noise parameter σ: P(z) ∝
    e^{−z²/2σ²} on the integers) run on a subsample drawn with this rate: the per-step PLD of DP-SGD with
    dpcompose's ``make_gaussian``, in grid units (Δ = its grid-unit L2 sensitivity, σ = σ/g).

    ``sampling`` as in :func:`pld_subsampled_discrete_laplace`: Poisson (both orders kept, δ(ε) the larger)
    or without replacement (the symmetric pair of the two-part bound; Δ the sensitivity under
    substitution). Rate 1 is :func:`pld_discrete_gaussian`, rate 0 or Δ = 0 the identity.

    The PLD's sides are built on first use; compositions holding at least 256 copies of it use a thin build
    (as :func:`~dpcompose.accounting.pld_subsampled_gaussian`'s).

    Source: Zhu–Dong–Wang 2022 (Thm 11, Poisson subsampling; Prop. 30, without replacement; Thm 10,
    composition); Balle–Barthe–Gaboardi 2018 Thms 2, 8 and 9; Canonne–Kamath–Steinke 2020 (the discrete
    Gaussian, Poisson summation for its normaliser); Euler–Maclaurin remainder: Apostol 1999.

    Raises:
        InvalidParameter: Δ not an integer in [0, 2**50], σ not positive or above 2**40, rate outside
            [0, 1], Δ/σ outside [1e-8, 30], an unknown ``sampling``, or a lattice too fine for the loss
            range (the points of both orders above 2**26; the message names the step_bits that fits).

    Examples:
        >>> from dpcompose.accounting import pld_subsampled_discrete_gaussian
        >>> step = pld_subsampled_discrete_gaussian(2**30, 2**30, 0.01)  # σ = 1 in sensitivity units
        >>> lo, hi = step.self_compose(100).epsilon_bounds(1e-5)
        >>> 0.2 < float(lo) <= float(hi) < 1
        True
    """
    delta = _int_sensitivity(sensitivity)
    s = exact(check_finite_positive(sigma, "sigma"), "sigma")
    if s > 1 << 40:
        raise InvalidParameter(f"sigma={sigma!r} must be at most 2**40 for a discrete Gaussian")
    _, q = rate_up(rate)
    smp = check_sampling(sampling)
    bits = check_bits(step_bits)
    tl = check_tail(tail)
    if delta == 0 or q == 0:
        return identity(bits, tl, "DiscreteGaussian(Δ=0)" if delta == 0 else "Subsampled(q=0)")
    if q == 1.0:
        return pld_discrete_gaussian(delta, s, step_bits=bits, tail=tl)
    if not Fraction(1, 10**8) <= delta / s <= 30:
        raise InvalidParameter(
            f"sensitivity={sensitivity!r} / sigma={sigma!r} must be in [1e-8, 30] for this PLD"
        )
    name = f"Subsampled{sampling_name(smp)}DiscreteGaussian(Δ={delta}, σ={float(s):g}, q={q:g})"

    def build(thin: bool) -> Build:
        return Build(dgauss_cells, (bits, delta, s, q, thin), bits, tl, smp, name)

    k_max = max(1, math.ceil(14 * s))
    bound = _dgauss_bound(delta, s, q)
    # (refused now: the sides are built when used)
    check_built_span(bound_at(bound, -k_max)[0], bound_at(bound, k_max + delta)[1], q, bits)
    key = ("pld_subsampled_discrete_gaussian", delta, s, q, smp, bits, tl)
    thin = lazy_pld(build(True), (key, "thin")) if has_thin(bits) else None
    return lazy_pld(build(False), key, thin)
