"""PLDs of the Laplace and discrete Laplace mechanisms (Koskela et al. 2021; Ghazi et al. 2022)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dpcompose._validation import check_finite_nonnegative, check_finite_positive
from dpcompose.accounting import _pld_memory as memory
from dpcompose.accounting._exact import Number, exact, float_down, float_up
from dpcompose.accounting._pld.buckets import Buckets, bucket_of
from dpcompose.accounting._pld.distribution import PLD, build_pld, pld_of_atoms
from dpcompose.accounting._pld.floats import libm_err, lift_subnormal, pad_up, rounding_err, rounding_rel
from dpcompose.accounting._pld.lattice import (
    DEFAULT_STEP_BITS,
    DEFAULT_TAIL,
    Grid,
    Lattice,
    check_bits,
    check_int_sensitivity,
    check_loss_cap,
    check_points,
    check_tail,
    constructor_grid,
    fmt,
)


def _laplace_buckets(bits: int, delta_over_b: Fraction, grid: Grid) -> Buckets:
    """Buckets of the PLD of the continuous Laplace pair P = Lap(0, 1), Q = Lap(D, 1), D = ``delta_over_b``
    (scale 1 after rescaling; loss |o − D| − |o|), with a relative error bound per bucket: every mass is a
    closed-form difference of exponentials of float edges, each exp/expm1 within ``EXP_REL`` and each
    float operation within u (Higham 2002, Sec. 2.2, the standard model), the edges' rounding covered by
    the buckets' slack. The lattice is ``grid`` (``bits`` is the one the size check names)."""
    D = delta_over_b
    lo = bucket_of(-D, grid)
    hi = bucket_of(D, grid)
    n = hi - lo + 1
    check_points(n, f"a Laplace PLD with Δ/b={fmt(D)}", bits)
    p = np.zeros(n)
    r = np.zeros(n)
    Df = float(D)
    # End atoms: o ≤ 0 (loss D, P = 1/2, Q = e^{−D}/2); o ≥ D (loss −D, P = e^{−D}/2, Q = 1/2).
    h = grid.exact
    for loss, pm, log_q in ((D, 0.5, math.log(0.5) - Df), (-D, 0.5 * math.exp(-Df), math.log(0.5))):
        j = bucket_of(loss, grid)
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
    rel = np.full(n, libm_err(16) + rounding_err(8, 1 + Df))
    return Buckets(lo, p, r, rel, below_hi=rounding_err(1, Df) + 5e-324)


def dlap_buckets(bits: int, delta: int, t: Fraction, grid: Grid | None = None) -> Buckets:
    """Buckets of the PLD of the discrete Laplace pair P(z) = c·r^|z|, Q(z) = c·r^|z − Δ| on the integers
    (r = e^{−u}, u = 1/t, c = (1 − r)/(1 + r)), vectorised, with per-bucket relative error bounds.

    The loss L(z) = (Δ − 2z)u is exact on every output and decreasing in z: z ≤ 0 all have loss D = Δu
    (P-mass 1/(1 + r), Q-mass e^{−D}/(1 + r)), z ≥ Δ all have −D (P e^{−D}/(1 + r), Q 1/(1 + r)), and each
    loss bucket (jh, (j+1)h] holds an integer range z ∈ [A, B] ⊂ [1, Δ − 1], found in exact integer
    arithmetic (:class:`Lattice`), whose masses are geometric sums:
    P = e^{−Au}·g/(1 + r) and e^{a}·Q = e^{a − (Δ − B)u}·g/(1 + r) with g = 1 − e^{−(B − A + 1)u}.
    When there are fewer middle outputs than buckets, the ranges are read off the outputs' buckets;
    otherwise off the bucket edges. The membership is exact, so the buckets need no slack.

    Error of each float (u = 2**-53; exp, expm1 within ``EXP_REL``): 1/(1 + e^{−u_f}) within
    ``EXP_REL`` + u·(1.01u_f + 2) (u_f = float(u) is within u·u_f, and 1 + x, 1/x round once); g within
    ``EXP_REL`` + 3.03u (its argument, a product of two rounded floats, is within 3.03u relative, and
    x ↦ 1 − e^{−x} has relative condition ≤ 1); e^{−Au} within ``EXP_REL`` + 3.03u·Au (the exponent's two
    factors and product round once each); e^{a − (Δ − B)u} within ``EXP_REL`` + 3.03u·(Δ − B)u + 1.01u·|a −
    (Δ − B)u| (a = jh is exact); two products, u each. A result below the normal range carries an absolute
    error of 2**-1075 per product and is stored raised by 2**-1073 (its relative error bound grown to match).
    The float model is Higham 2002, Sec. 2.2 (fl(x op y) = (x op y)(1 + θ), |θ| ≤ u, for normal results).
    The lattice is ``grid`` = m·2**-e (default: the plain 2**-``bits``, also the one the size check names), so
    that L(z)/h = (Δ − 2z)·2**e·den(t)/(num(t)·m).
    """
    grid = Grid(bits) if grid is None else grid
    scale = 1 << grid.bits
    lat = Lattice(delta * scale * t.denominator, 2 * scale * t.denominator, t.numerator * grid.mult)
    j_hi, j_lo = lat.bucket_of(0), lat.bucket_of(delta)  # the buckets of the losses D and −D
    n = j_hi - j_lo + 1
    check_points(n, f"a discrete Laplace PLD with Δ={delta}, t={float(t):g}", bits)
    uq = 1 / t
    u_f = float(uq)  # correctly rounded
    Dq = delta * uq
    d_f = float(Dq)
    half = 1.0 / (1.0 + math.exp(-u_f))
    rel_half = libm_err(1) + rounding_err(1, 1.01 * u_f + 2)
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
    common = rel_half + (libm_err(1) + rounding_rel(3.03)) + libm_err(1) + rounding_rel(2)
    rel_p = common + rounding_err(3.03, xp)
    rel_r = common + rounding_err(3.03, xq) + rounding_err(1.01, np.abs(tq))
    pm, rel_p = lift_subnormal(pm, rel_p)
    rm, rel_r = lift_subnormal(rm, rel_r)
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
        (j_hi - j_lo, half, half * math.exp(top_gap), libm_err(1) + rounding_err(1.01, abs(top_gap))),
        (0, half * math.exp(-d_f), half * math.exp(j_lo * h), libm_err(1) + rounding_err(1.01, d_f)),
    )
    for i, pe, re_, rel_e in ends:
        p[i] += pe
        r[i] += re_
        rel[i] = max(rel[i], rel_half + rel_e + rounding_rel(1))
    rel = pad_up(rel + rounding_rel(2), 20)
    return Buckets(j_lo, p, r, rel)


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
    ``build_pld`` (Doroshenko et al. 2022, connect the dots; the lumped pair for the lower side).

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
    bits = check_bits(step_bits)
    t = check_tail(tail)
    D = sens / b
    check_loss_cap(D, "sensitivity/scale")
    grid = constructor_grid(aligned, bits, "laplace", sens, b)
    if D == 0:
        return pld_of_atoms(bits, [(Fraction(0), 1.0, 0.0)], 0.0, 0.0, t, "Laplace(Δ=0)")
    name = f"Laplace(Δ/b={float(D):g})"
    with memory.refuse_out_of_memory(f"building {name}", memory.SMALLER_BITS):
        return build_pld(grid.bits, _laplace_buckets(bits, D, grid), t, name, grid.mult)


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

    The bucket masses are computed by :func:`dlap_buckets` (exact integer bucket ranges, closed-form
    geometric sums, a proven float error per bucket); the lattice adds the error of ``build_pld``.

    Source: Ghosh–Roughgarden–Sundararajan 2009 (mechanism); PLDs of discrete-valued mechanisms:
    Koskela–Jälkö–Prediger–Honkela 2021 (AISTATS); discretisation: ``build_pld`` (Doroshenko et al. 2022).

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
    sens = check_int_sensitivity(sensitivity)
    t_q = exact(check_finite_positive(scale, "scale"), "scale")
    bits = check_bits(step_bits)
    tl = check_tail(tail)
    D = sens / t_q
    check_loss_cap(D, "sensitivity/scale")
    grid = constructor_grid(aligned, bits, "discrete_laplace", Fraction(sens), t_q)
    if sens == 0:
        return pld_of_atoms(bits, [(Fraction(0), 1.0, 0.0)], 0.0, 0.0, tl, "DiscreteLaplace(Δ=0)")
    name = f"DiscreteLaplace(Δ={sens}, t={float(t_q):g})"
    with memory.refuse_out_of_memory(f"building {name}", memory.SMALLER_BITS):
        return build_pld(grid.bits, dlap_buckets(bits, sens, t_q, grid), tl, name, grid.mult)
