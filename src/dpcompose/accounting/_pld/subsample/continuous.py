"""Subsampled PLDs of the Gaussian, Laplace, randomized-response and (ε, δ) mechanisms
(Zhu–Dong–Wang 2022, Thm. 10)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

from dpcompose._scipy import log_ndtr
from dpcompose._validation import check_finite_positive
from dpcompose.accounting._common import probability
from dpcompose.accounting._exact import Number, U
from dpcompose.accounting._gaussian import LOG_NDTR_PAD, log_ndtr_up, log_phi_steps
from dpcompose.accounting._pld.distribution import PLD
from dpcompose.accounting._pld.floats import TINY, libm_down, libm_err, rounding_err
from dpcompose.accounting._pld.gaussian import pld_gaussian
from dpcompose.accounting._pld.laplace import pld_laplace
from dpcompose.accounting._pld.lattice import DEFAULT_STEP_BITS, DEFAULT_TAIL, check_bits, check_tail, fmt
from dpcompose.accounting._pld.rr import pld_approx, pld_randomized_response
from dpcompose.accounting._pld.subsample.build import Build, has_thin, identity, lazy_pld, thin_cuts
from dpcompose.accounting._pld.subsample.cells import (
    FAR,
    Bound,
    Cells,
    Sampling,
    bound_at,
    bound_only,
    cell,
    check_built_span,
    check_sampling,
    check_small,
    from_cells,
    lattice_points,
    mix_logs,
    mix_loss,
    partition,
    rate_up,
    read_args,
    sampling_name,
    y_of_loss,
)
from dpcompose.errors import InvalidParameter

FloatArray = npt.NDArray[np.float64]


# ---------------------------------------------------------------------------------------------------------
# Subsampled Gaussian (continuous)
# ---------------------------------------------------------------------------------------------------------


def _gaussian_bound(mu: float, q: float) -> Bound:
    """Certified bounds on the subsampled Gaussian pair's loss at outputs o (standard units)."""
    m2 = mu * mu

    def bound(o: FloatArray) -> tuple[FloatArray, FloatArray]:
        y = mu * o - m2 / 2
        return mix_loss(y, rounding_err(4, np.abs(mu * o) + m2 + 1), q)

    return bound


def _gaussian_span(mu: float, q: float, width: float) -> tuple[float, float]:
    """The losses the cells of :func:`gaussian_cells` span: from the output −1e4 to μ + ``width``."""
    bound = _gaussian_bound(mu, q)
    return bound_at(bound, FAR)[0], bound_at(bound, mu + width)[1]


def gaussian_cells(bits: int, mu: float, q: float, width: float, thin: bool = False) -> Cells:
    """Cells of the subsampled Gaussian pair in standard units: Q = N(0, 1), P = N(μ, 1), y = μo − μ²/2.

    The range [−1e4, μ + width) is cut at the certified edges; its cells' masses are differences of Φ
    (``log_phi_steps``, with the rounding of the shifted arguments o − μ bounded by :func:`shift_rel`).
    Below −1e4 both masses are below 1e-300; above the top they are bounded by Φ(−top) and Φ(μ − top)
    (``log_ndtr``, padded) and the losses are unbounded.
    """
    m2 = mu * mu
    bound = _gaussian_bound(mu, q)
    top = mu + width
    l_far, l_top = _gaussian_span(mu, q, width)
    lams = lattice_points(l_far, l_top, bits)
    if thin:  # P-mass of either order above the output o is at most Φ̄(o − μ) (an estimate serves)
        normal = NormalDist()
        lams = lams[thin_cuts(lams, bits, lambda t: bound_at(bound, mu - normal.inv_cdf(t))[0])]
    start = (y_of_loss(lams, q) + m2 / 2) / mu
    half = mu / 2  # y = μo − μ²/2 > 0 exactly where o > μ/2 (a float: μ/2 is exact)
    first, end, lo, hi = partition(lams, start, bound, False, FAR, top, np.array([half]))
    bnd = np.append(first, end[-1])  # (the cells are consecutive: each ends where the next begins)
    ln, rn = log_phi_steps(bnd)
    ls, rs = log_phi_steps(bnd - mu)
    rs = shift_rel(first - mu, end - mu, ls, rs)
    # Where a Φ-difference has no finite error bound (its two CDFs agree to the last bit), the cell is
    # known only by an upper bound: its mass is at most the smaller of the two tails, Φ(end) or Φ(−first).
    bad = ~(np.isfinite(rn) & np.isfinite(rs) & np.isfinite(ln) & np.isfinite(ls))
    if np.any(bad):
        ub_n = _phi_tail_up(first[bad], end[bad])
        ub_s = _phi_tail_up(first[bad] - mu, end[bad] - mu)
        with np.errstate(divide="ignore"):  # a bound of 0 (below the float range: build_pld pads) is ln 0
            ln[bad], rn[bad] = np.log(ub_n / 2), 1.0
            ls[bad], rs[bad] = np.log(ub_s / 2), 1.0
    lm, rm = mix_logs(ln, rn, ls, rs, q)
    mid = Cells(lo, hi, lm, ln, np.maximum(rm, rn), first >= half)
    # below −1e4 both masses are below 1e-300; every loss is at least ln(1 − q)
    l_min = float(mix_loss(np.array([-np.inf]), 0.0, q)[0][0])
    lb, rb = bound_only(1e-300)
    far = cell(l_min, float(bound(np.array([FAR]))[1][0]), lb, lb, rb, False)
    qt = math.exp(log_ndtr_up(-top)) * (1 + 1e-9)
    pt = math.exp(log_ndtr_up(mu - top)) * (1 + 1e-9)
    l_mix_t, _ = bound_only((1 - q) * qt + q * pt)
    l_base_t, _ = bound_only(qt)
    above = cell(float(bound(np.array([top]))[0][0]), math.inf, l_mix_t, l_base_t, 1.0, True)
    cells = Cells.join([far, mid, above])
    if thin:
        cells.starts = np.rint(np.ldexp(lams, bits)).astype(np.int64)
    return cells


def shift_rel(xa: FloatArray, xb: FloatArray, log_mass: FloatArray, rel: FloatArray) -> FloatArray:
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
            eta = np.abs(x) * (U / (1 - U))
            dens = np.exp(-0.5 * x * x - 0.5 * math.log(2 * math.pi)) * (1 + 4 * eta * (np.abs(x) + 1))
            moved = moved + eta * np.maximum(dens, TINY)  # an underflowed φ(x) is below that
        moved = 2 * moved + 1e-323  # 1e-323: the subnormal products' rounding
        low = libm_down(np.exp(log_mass) / (1 + rel), 8)
        ratio = moved / (low - moved)
        out = rel + ratio + rel * ratio
        return np.where((low > 2 * moved) & np.isfinite(out), out * (1 + 1e-12), np.inf)


def _phi_tail_up(a: FloatArray, b: FloatArray) -> FloatArray:
    """Upper bounds on Φ(b) − Φ(a) (a < b): the smaller of Φ(b) and Φ(−a), from ``log_ndtr`` padded (its
    argument first moved up past the rounding of a and b)."""
    x = np.minimum(b, -a)
    x = x + rounding_err(4, np.abs(x) + 1)
    lv = np.asarray(log_ndtr(x), dtype=np.float64)
    return np.minimum(np.exp(lv + LOG_NDTR_PAD * (1 + np.abs(lv))) * (1 + 1e-10), 1.0)


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
    of the same pair (:func:`thin_cuts`: wide buckets in the upper tail, split between their own ends, so as
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
    sig, _, q, sens, smp, bits, tl = read_args(sigma, "sigma", rate, sensitivity, sampling, step_bits, tail)
    w = float(check_finite_positive(width, "width"))
    if not 6 <= w <= 30:
        raise InvalidParameter(f"width={width!r} must be in [6, 30]")
    if q == 0:
        return identity(bits, tl, "Subsampled(q=0)")
    mu_q = sens / sig
    if not Fraction(1, 10_000) <= mu_q <= 8:  # (exactly: the float 1e-4 is above 1/10000)
        raise InvalidParameter(f"sensitivity/sigma={fmt(mu_q)} must be in [1e-4, 8] for this PLD")
    mu = float(mu_q)
    if Fraction(mu) < mu_q:
        mu = math.nextafter(mu, math.inf)  # a larger μ dominates
    if q == 1.0:
        return pld_gaussian(sens, sig, step_bits=bits, tail=tl)
    name = f"Subsampled{sampling_name(smp)}Gaussian(μ={mu:g}, q={q:g})"

    def build(thin: bool) -> Build:
        return Build(gaussian_cells, (bits, mu, q, w, thin), bits, tl, smp, name)

    check_built_span(*_gaussian_span(mu, q, w), q, bits)  # (refused now: the sides are built when used)
    key = ("pld_subsampled_gaussian", mu, q, smp, bits, tl, w)
    thin = lazy_pld(build(True), (key, "thin")) if has_thin(bits) else None
    return lazy_pld(build(False), key, thin)


# ---------------------------------------------------------------------------------------------------------
# Subsampled Laplace (continuous)
# ---------------------------------------------------------------------------------------------------------


def laplace_cells(bits: int, d: float, q: float) -> Cells:
    """Cells of the subsampled Laplace pair in units of the scale: Q = Lap(0, 1), P = Lap(D, 1). Outputs
    x ≤ 0 and x ≥ D are two atoms (y = −D, D); in between y = 2x − D, and a cell [x₁, x₂) has masses
    ½e^{−x₁}(1 − e^{−w}) (Q) and ½e^{x₂−D}(1 − e^{−w}) (P), w = x₂ − x₁ (exact for two nearby floats by
    Sterbenz's lemma, else within u·w)."""

    def bound(x: FloatArray) -> tuple[FloatArray, FloatArray]:
        return mix_loss(2 * x - d, rounding_err(2, 2 * np.abs(x) + d), q)

    l0 = float(bound(np.zeros(1))[0][0])
    l1 = float(bound(np.full(1, d))[1][0])
    lams = lattice_points(l0, l1, bits)
    start = (y_of_loss(lams, q) + d) / 2
    half = d / 2  # y = 2x − D > 0 exactly where x > D/2
    first, end, lo, hi = partition(lams, start, bound, False, 0.0, d, np.array([half]))
    wid = end - first
    lg = np.log(-np.expm1(-wid))
    lq = math.log(0.5) - first + lg
    lp = math.log(0.5) + (end - d) + lg
    rel = np.full(first.size, libm_err(16) + rounding_err(16, 1 + d))
    lm, rm = mix_logs(lq, rel, lp, rel, q)
    mid = Cells(lo, hi, lm, lq, rm, first >= half)
    rel_a = libm_err(16) + rounding_err(16, 1 + d)
    atoms = []
    for x, l_base, l_p in ((0.0, math.log(0.5), math.log(0.5) - d), (d, math.log(0.5) - d, math.log(0.5))):
        a_lo, a_hi = bound(np.array([x]))
        lm_a, rm_a = mix_logs(np.array([l_base]), np.array([rel_a]), np.array([l_p]), np.array([rel_a]), q)
        atoms.append(cell(float(a_lo[0]), float(a_hi[0]), float(lm_a[0]), l_base, float(rm_a[0]), x > 0))
    return Cells.join([atoms[0], mid, atoms[1]])


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
    b, _, q, sens, smp, bits, tl = read_args(scale, "scale", rate, sensitivity, sampling, step_bits, tail)
    if q == 0:
        return identity(bits, tl, "Subsampled(q=0)")

    d_q = sens / b
    if d_q > 30:
        raise InvalidParameter(f"sensitivity/scale={fmt(d_q)} must be at most 30 for this PLD")
    d = float(d_q)
    if Fraction(d) < d_q:
        d = math.nextafter(d, math.inf)  # a larger shift dominates (Laplace is log-concave)
    if q >= 1.0:
        return pld_laplace(sens, b, step_bits=bits, tail=tl)
    name = f"Subsampled{sampling_name(smp)}Laplace(Δ/b={d:g}, q={q:g})"
    return from_cells(laplace_cells(bits, d, q), bits, tl, smp, name)


# ---------------------------------------------------------------------------------------------------------
# Subsampled finite pairs: randomized response and RR_(ε, δ)
# ---------------------------------------------------------------------------------------------------------


def finite_cells(outputs: Sequence[tuple[float, float, float, float]], q: float, rel: float) -> Cells:
    """Cells of the subsampled pair of a finite base pair: one cell per output ``(y, ey, ln P, ln Q)`` with
    y = ln(P/Q) (±∞ where Q or P is 0) known within ``ey``, both masses within ``rel``."""
    cells = []
    for y, ey, lp, lq in sorted(outputs):
        if y == math.inf:  # Q = 0: the loss is +∞ in the remove order (and the add order never sees it)
            lm, rm = mix_logs(np.array([lq]), np.array([rel]), np.array([lp]), np.array([rel]), q)
            cells.append(cell(math.inf, math.inf, float(lm[0]), -math.inf, float(rm[0]), True))
            continue
        lo, hi = mix_loss(np.array([y]), ey, q)
        lm, rm = mix_logs(np.array([lq]), np.array([rel]), np.array([lp]), np.array([rel]), q)
        cells.append(cell(float(lo[0]), float(hi[0]), float(lm[0]), lq, float(rm[0]), y > 0))
    return Cells.join(cells)


def pld_subsampled_rr(
    epsilon: Number, k: int, rate: Number, sampling: Sampling, step_bits: int, tail: float
) -> PLD:
    """The subsampled PLD of k-ary randomized response with parameter ε (the pair of
    :func:`~dpcompose.accounting.pld_randomized_response`: P = (e^ε, 1, k − 2)/(e^ε + k − 1), Q its swap).

    The base pair is symmetric and finite, so the subsampled pairs (Zhu–Dong–Wang 2022, Thm 11 / Prop. 30;
    module docstring) are finite: their losses ln(1 − q + q·e^{±ε}) and 0 are bounded by padded floats.
    """
    eps = check_small(epsilon)
    _, q = rate_up(rate)
    smp = check_sampling(sampling)
    bits, tl = check_bits(step_bits), check_tail(tail)
    name = f"Subsampled{sampling_name(smp)}RR(ε={float(eps):g}, k={k}, q={q:g})"
    if q == 0 or eps == 0:
        return identity(bits, tl, name)
    if q == 1.0:
        return pld_randomized_response(eps, k, step_bits=bits, tail=tl)
    e = float(eps)
    log_z = e + math.log1p((k - 1) * math.exp(-e))  # ln(e^ε + k − 1)
    outs = [(e, rounding_err(1, e), e - log_z, -log_z), (-e, rounding_err(1, e), -log_z, e - log_z)]
    if k > 2:
        lk = math.log(k - 2) - log_z
        outs.append((0.0, 0.0, lk, lk))
    rel = libm_err(16) + rounding_err(16, 1 + e + math.log(k))
    return from_cells(finite_cells(outs, q, rel), bits, tl, smp, name)


def pld_subsampled_approx(
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
    eps = check_small(epsilon)

    d = probability(delta, "delta")
    _, q = rate_up(rate)
    smp = check_sampling(sampling)
    bits, tl = check_bits(step_bits), check_tail(tail)
    name = f"Subsampled{sampling_name(smp)}RR(ε={float(eps):g}, δ={float(d):g}, q={q:g})"
    if q == 0 or (eps == 0 and d == 0):
        return identity(bits, tl, name)
    if q == 1.0:
        return pld_approx(eps, d, step_bits=bits, tail=tl)
    e = float(eps)
    # ln(1 − δ) from the exact fraction n/m = 1 − δ (log1p(−float(δ)) would raise ValueError for a δ < 1
    # that rounds to the float 1.0): each log within u of its value, the difference rounded once
    one_minus = 1 - d
    log_n, log_m = math.log(one_minus.numerator), math.log(one_minus.denominator)
    log1md = log_n - log_m
    log_z = e + math.log1p(math.exp(-e))  # ln(1 + e^ε)
    err_e = rounding_err(1, e)
    outs = [(e, err_e, log1md + e - log_z, log1md - log_z), (-e, err_e, log1md - log_z, log1md + e - log_z)]
    if d > 0:
        ld = math.log(float(d))
        outs += [(math.inf, 0.0, ld, -math.inf), (-math.inf, 0.0, -math.inf, ld)]
    # (ln(1 − δ) within u·(|ln n| + |ln m| + |ln(1 − δ)|) of the exact value)
    rel = libm_err(16) + rounding_err(16, 1 + e) + rounding_err(4, 1 + abs(log1md) + abs(log_n) + abs(log_m))
    return from_cells(finite_cells(outs, q, rel), bits, tl, smp, name)
