"""PLDs of subsampled Gaussian mechanisms (Poisson sampling; sampling without replacement).

With sampling rate q, a Gaussian mechanism of noise σ and sensitivity Δ (μ = Δ/σ) run on a Poisson subsample
has, for add/remove neighbours, the dominating pairs (Zhu–Dullerud–Wang 2022, Sec. 5, subsampling; Koskela–
Jälkö–Honkela 2020, Sec. 5):

* "remove": P = (1 − q)·N(0, 1) + q·N(μ, 1) against Q = N(0, 1), loss L(o) = log(1 − q + q·e^{μo − μ²/2});
* "add": P = N(0, 1) against Q = (1 − q)·N(0, 1) + q·N(μ, 1), loss −L(o).

The PLD is not symmetric, so both directions are kept: every composition composes each direction with the
same direction of the others (the product of dominating pairs for one ordered relation dominates the
composite for that relation, Zhu–Dullerud–Wang 2022, Thm 10), and δ(ε) is the larger of the two
(:attr:`PLD.reverse`). Sampling a fixed-size subset of m out of n without replacement, with substitute
neighbours, has the dominating pair ((1 − q)·Q + q·P, Q) with q = m/n (Zhu–Dullerud–Wang 2022, Sec. 5;
Balle–Barthe–Gaboardi 2018, Thm 9 for the (ε, δ) form); both orders are kept here too, so the same two PLDs
are used (the relation differs, the numbers do not).

Discretisation. Each lattice bucket (a, a + h] of losses is an interval of outputs o, because L is increasing
in o; its P- and Q-masses are differences of Φ computed from ``log_ndtr`` with a relative error bound, as in
:func:`~dpcompose.accounting.pld_gaussian`. The interval's end points are floats chosen (and checked with a
padded evaluation of L) so that every loss inside the interval is at most a + h; how far losses may lie
below a is the buckets' slack, which the connect-the-dots split of ``_build`` accounts for.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Literal

import numpy as np

from dpcompose._validation import check_finite_positive
from dpcompose.accounting._exact import Number, exact
from dpcompose.accounting._pld import (
    _EXP_REL,
    _U,
    DEFAULT_STEP_BITS,
    DEFAULT_TAIL,
    PLD,
    FloatArray,
    _Buckets,
    _build,
    _check_bits,
    _check_tail,
    _fmt,
    _log_phi_diff,
)
from dpcompose.errors import InvalidParameter

__all__ = ["pld_subsampled_gaussian", "pld_subsampled_laplace"]

_FAR = -1e4  # stands for o = −∞ (Φ(−1e4) is 0 in floats; its mass is bounded by 1e-300 below)


def _loss(o: FloatArray, mu: float, q: float) -> tuple[FloatArray, FloatArray]:
    """``(L, pad)``: L(o) = log(1 − q + q·e^{μo − μ²/2}) = log1p(q·expm1(x)) in floats and a bound on its
    error (x's rounding ≤ 4u(|μo| + μ²), dL/dx ≤ 1; expm1 relative ``_EXP_REL``; padded tenfold)."""
    x = mu * o - mu * mu / 2
    with np.errstate(over="ignore"):
        em = np.expm1(x)
        val = np.log1p(q * em)
    pad = 10 * (4 * _U * (np.abs(mu * o) + mu * mu + 1) + 4 * _EXP_REL * (1 + np.abs(val)))
    return val, pad


def _edges(lams: FloatArray, mu: float, q: float, at_most: bool) -> FloatArray:
    """Float outputs ô with L(ô) ≤ λ (``at_most``) or L(ô) ≥ λ, certified by the padded L; where that
    cannot be certified the edge is left to the caller (returned as NaN)."""
    lmin = math.log1p(-q)
    with np.errstate(divide="ignore", invalid="ignore"):
        inner = np.expm1(lams) + q
        o = (np.log(inner) - math.log(q) + mu * mu / 2) / mu
    o = np.where((lams <= lmin) | ~(inner > 0), _FAR, o)
    o = np.maximum(o, _FAR)
    step = np.maximum(np.abs(o), 1.0) * 2.0**-46
    out = np.full(o.shape, np.nan)
    todo = np.ones(o.shape, dtype=bool)
    for _ in range(40):
        val, pad = _loss(o, mu, q)
        good = todo & ((val + pad <= lams) if at_most else (val - pad >= lams))
        out[good] = o[good]
        todo &= ~good
        if not np.any(todo):
            break
        o = np.where(todo, o - step if at_most else o + step, o)
        o = np.maximum(o, _FAR)
        step *= 4
    return out


_Masses = tuple[FloatArray, FloatArray, FloatArray, FloatArray]


def _mix_masses(lo: FloatArray, hi: FloatArray, mu: float, q: float) -> _Masses:
    """``(log N, rel N, log M, rel M)``: the N(0, 1)- and mixture-masses of [lo, hi) with relative bounds."""
    ln, rn = _log_phi_diff(hi, lo)
    lo2, hi2 = lo - mu, hi - mu
    ls, rs = _log_phi_diff(hi2, lo2)
    # rounding of o − μ moves each argument by ≤ u(|o| + μ): relative effect ≤ that × the density ratio,
    # bounded (as in pld_gaussian) by a padded multiple of the arguments' size
    arg = 4 * _U * (np.abs(lo) + np.abs(hi) + 2 * mu + 1) * (np.abs(lo2) + np.abs(hi2) + 1)
    rs = rs + 4 * arg
    with np.errstate(divide="ignore", invalid="ignore"):
        a = math.log1p(-q) + ln
        b = math.log(q) + ls
        mx = np.maximum(a, b)
        lm = mx + np.log(np.exp(a - mx) + np.exp(b - mx))
    lm = np.where(np.isfinite(mx), lm, -np.inf)
    rm = np.maximum(rn, rs) + 8 * _U
    return ln, rn, lm, rm


def _buckets(bits: int, mu: float, q: float, remove: bool, width: float) -> _Buckets:
    h = math.ldexp(1.0, -bits)
    lmin = math.log1p(-q)
    o_top = mu + width
    l_top = float(_loss(np.array([o_top]), mu, q)[0][0])
    if remove:
        j0 = math.floor(lmin / h)
        j1 = math.ceil(l_top / h) + 1
        lams = np.arange(j0, j1 + 1, dtype=np.float64) * h  # edges a_j, j = j0 … j1
        e = _edges(lams, mu, q, at_most=True)
        e[0] = _FAR
        good = ~np.isnan(e)
        idx = np.maximum.accumulate(np.where(good, np.arange(e.size), 0))
        e = e[idx]  # an uncertifiable edge collapses its bucket into the next one (its losses go lower:
        # the bucket is left out of low_ok, and _build puts all its mass at the bucket's top)
        lo_o, hi_o = e[:-1], e[1:]
        # lower side: bucket j's losses are ≥ L(e_j) ≥ val − pad, at most η = a_j − (val − pad) below a_j;
        # a bucket whose lower edge was collapsed is left out of the lower side
        val, pad = _loss(lo_o, mu, q)
        eta = np.arange(j0, j1, dtype=np.float64) * h - (val - pad)
        low_ok = good[:-1]
        ln, rn, lm, rm = _mix_masses(lo_o, hi_o, mu, q)
        lp, rp, lq, rq = lm, rm, ln, rn
        first = j0
        top_o = float(e[-1])
        # log of (1 − q)Φ(−top) + qΦ(−(top − μ)), in log space: both terms underflow to 0 for a far top
        above_log = float(
            np.logaddexp(math.log1p(-q) + _ndtr_log(-top_o), math.log(q) + _ndtr_log(-(top_o - mu)))
        )
        above_hi = math.exp(above_log) * (1 + 1e-9) + 1e-300
        below_hi = 1e-300
    else:
        # bucket j ↔ o ∈ [G_{j+1}, G_j) with G_t the edge of λ = −t·h (L(G) ≥ λ certified)
        t0 = math.floor(-l_top / h) - 1  # losses −L(o) ≥ −l_top on the kept range
        t1 = math.ceil(-lmin / h) + 1
        ts = np.arange(t0, t1 + 1, dtype=np.float64)
        g = _edges(-ts * h, mu, q, at_most=False)
        g[0] = o_top if np.isnan(g[0]) else g[0]
        # ts ascending ↔ λ descending ↔ o descending; an uncertifiable edge takes the next higher o
        good = ~np.isnan(g)
        idx = np.maximum.accumulate(np.where(good, np.arange(g.size), 0))
        g = g[idx]
        g[-1] = _FAR
        # bucket j = t for t = t0 … t1 − 1: o ∈ [g[t − t0 + 1], g[t − t0])
        lo_o, hi_o = g[1:], g[:-1]
        hi_o = np.maximum(hi_o, lo_o)
        # lower side: bucket j's losses −L(o) are ≥ −L(G_j) ≥ −(val + pad), at most η = a_j + val + pad
        # below a_j; a bucket whose upper o-edge was collapsed is left out of the lower side
        val, pad = _loss(hi_o, mu, q)
        eta = np.arange(t0, t1, dtype=np.float64) * h + (val + pad)
        low_ok = good[:-1]
        ln, rn, lm, rm = _mix_masses(lo_o, hi_o, mu, q)
        lp, rp, lq, rq = ln, rn, lm, rm
        first = int(t0)
        top_o = float(g[0])
        # P = N(0, 1) mass above the top edge: losses below the lowest bucket (goes to its lowest point)
        below_hi = math.exp(_ndtr_log(-top_o)) * (1 + 1e-9) + 1e-300
        above_hi = 1e-300
    a = (np.arange(lp.size, dtype=np.float64) + first) * h
    with np.errstate(over="ignore", under="ignore"):
        p = np.exp(lp)
        r = np.exp(a + lq)
    rel = np.maximum(rp, rq) + 16 * _EXP_REL
    bad = ~np.isfinite(rel) | (rel > 1e-3)
    p = np.where(np.isfinite(p), p, 0.0)
    r = np.where(bad | ~np.isfinite(r), 0.0, r)
    rel = np.where(bad, np.maximum(np.where(np.isfinite(rel), rel, 1.0), 1.0), rel)
    low_ok = low_ok & (hi_o > lo_o)  # (empty buckets carry no mass, whatever their edges)
    eta_ok = np.where(low_ok & np.isfinite(eta), eta, 0.0)
    slack = max(0.0, float(np.max(eta_ok))) * (1 + 1e-9) if eta_ok.size else 0.0
    low_ok = low_ok & np.isfinite(eta) & (eta <= max(slack, 0.0))
    return _Buckets(first, p, r, rel, below_hi=below_hi, above_hi=above_hi, slack=slack, low_ok=low_ok)


def _ndtr_log(x: float) -> float:
    from dpcompose._scipy import log_ndtr

    v = float(log_ndtr(x))
    return v + 64 * _U * (1 + abs(v))


def _read_args(
    noise: object, noise_name: str, rate: object, sensitivity: object, sampling: object, step_bits: object,
    tail: object,
) -> tuple[Fraction, Fraction, Fraction, int, float]:
    """The checked, exact arguments shared by the subsampled constructors (noise, rate, Δ, bits, tail)."""
    value = exact(check_finite_positive(noise, noise_name), noise_name)
    qq = exact(check_finite_positive(rate, "rate"), "rate")
    if qq > 1:
        raise InvalidParameter(f"rate={rate!r} must be in (0, 1]")
    if qq < Fraction(1, 2**40):
        raise InvalidParameter(f"rate={rate!r} must be at least 2**-40 (about 9.1e-13) for this PLD")
    sens = exact(check_finite_positive(sensitivity, "sensitivity"), "sensitivity")
    if not isinstance(sampling, str) or sampling not in ("poisson", "without_replacement"):
        raise InvalidParameter(f"sampling={sampling!r} must be 'poisson' or 'without_replacement'")
    return value, qq, sens, _check_bits(step_bits), _check_tail(tail)


def pld_subsampled_gaussian(
    sigma: Number,
    rate: Number,
    sensitivity: Number = 1,
    *,
    sampling: Literal["poisson", "without_replacement"] = "poisson",
    step_bits: int = DEFAULT_STEP_BITS,
    tail: float = DEFAULT_TAIL,
    width: float = 12.0,
) -> PLD:
    """The PLD of the Gaussian mechanism (noise σ, sensitivity Δ) run on a subsample drawn with this rate.

    ``sampling="poisson"``: each record is kept independently with probability ``rate`` (add/remove
    neighbours). ``sampling="without_replacement"``: a fixed-size subset of m = rate·n records (substitute
    neighbours). Both directions of the (asymmetric) pair are kept and composed separately; δ(ε) is the larger
    (module docstring). This is the per-step PLD of DP-SGD.

    Source: Zhu–Dullerud–Wang 2022 (Sec. 5, dominating pairs of subsampled mechanisms; Thm 10, composition);
    Koskela–Jälkö–Honkela 2020 (PLD of the subsampled Gaussian); Abadi et al. 2016 (DP-SGD).

    Raises:
        InvalidParameter: σ not positive, rate not in (0, 1], sensitivity not positive, Δ/σ outside
            [1e-4, 8], an unknown ``sampling``, or ``width`` outside [6, 30].

    Examples:
        >>> step = pld_subsampled_gaussian(1.0, 0.01)
        >>> lo, hi = step.self_compose(100).epsilon_bounds(1e-5)
        >>> 0 < float(lo) <= float(hi) < 1
        True
    """
    sig, qq, sens, bits, tl = _read_args(sigma, "sigma", rate, sensitivity, sampling, step_bits, tail)
    w = float(check_finite_positive(width, "width"))
    if not 6 <= w <= 30:
        raise InvalidParameter(f"width={width!r} must be in [6, 30]")
    mu_q = sens / sig
    if not 1e-4 <= mu_q <= 8:
        raise InvalidParameter(f"sensitivity/sigma={_fmt(mu_q)} must be in [1e-4, 8] for this PLD")

    mu = float(mu_q)
    if Fraction(mu) < mu_q:
        mu = math.nextafter(mu, math.inf)  # a larger μ dominates
    q = float(qq)
    if Fraction(q) < qq:
        q = math.nextafter(q, math.inf)  # so does a larger rate (the mixture moves towards N(μ, 1))
    q = min(q, 1.0)
    name = f"Subsampled{'Poisson' if sampling == 'poisson' else 'WOR'}Gaussian(μ={mu:g}, q={q:g})"
    if q == 1.0:
        from dpcompose.accounting._pld import pld_gaussian

        return pld_gaussian(sens, sig, step_bits=bits, tail=tl)
    fwd = _build(bits, _buckets(bits, mu, q, True, w), tl, name + " remove")
    rev = _build(bits, _buckets(bits, mu, q, False, w), tl, name + " add")
    return PLD(bits, fwd.upper, fwd.lower, tl, name, reverse=rev)


# ---------------------------------------------------------------------------------------------------------
# Subsampled Laplace
# ---------------------------------------------------------------------------------------------------------


def _lap_loss(x: FloatArray, d: float, q: float) -> tuple[FloatArray, FloatArray]:
    """``(L, pad)``: L(x) = log(1 − q + q·e^{2x − D}) for 0 ≤ x ≤ D (the "remove" loss of the subsampled
    Laplace pair, scale 1), and a bound on its float error (as in :func:`_loss`, padded tenfold)."""
    y = 2 * x - d
    val = np.log1p(q * np.expm1(y))
    pad = 10 * (4 * _U * (2 * np.abs(x) + d + 1) + 4 * _EXP_REL * (1 + np.abs(val)))
    return val, pad


def _lap_edges(lams: FloatArray, d: float, q: float, at_most: bool) -> FloatArray:
    """Floats x̂ in [0, D] with L(x̂) ≤ λ (``at_most``) or ≥ λ, certified; NaN where that fails."""
    with np.errstate(divide="ignore", invalid="ignore"):
        x = (d + np.log1p(np.expm1(lams) / q)) / 2
    x = np.clip(np.where(np.isfinite(x), x, np.where(lams > 0, d, 0.0)), 0.0, d)
    step = np.maximum(np.abs(x), 1e-3) * 2.0**-46
    out = np.full(x.shape, np.nan)
    todo = np.ones(x.shape, dtype=bool)
    for _ in range(40):
        val, pad = _lap_loss(x, d, q)
        good = todo & ((val + pad <= lams) if at_most else (val - pad >= lams))
        out[good] = x[good]
        todo &= ~good
        if not np.any(todo):
            break
        x = np.clip(np.where(todo, x - step if at_most else x + step, x), 0.0, d)
        step *= 4
    return out


def _lap_buckets(bits: int, d: float, q: float, remove: bool) -> _Buckets:
    """Buckets of the Poisson-subsampled Laplace pair (scale 1, shift D = Δ/b, rate q): P = (1 − q)·Lap(0)
    + q·Lap(D) against Q = Lap(0) ("remove"), or the reverse ("add"). Outputs o ≤ 0 and o ≥ D are two
    atoms; in between, the loss is log(1 − q + q·e^{2o − D}) (negated for "add"), increasing in o."""
    h = math.ldexp(1.0, -bits)
    zero = np.zeros(1)
    lam_m_v, lam_m_p = _lap_loss(zero, d, q)  # o ≤ 0
    lam_p_v, lam_p_p = _lap_loss(np.array([d]), d, q)  # o ≥ D
    lam_m, pad_m, lam_p, pad_p = float(lam_m_v[0]), float(lam_m_p[0]), float(lam_p_v[0]), float(lam_p_p[0])
    ed = math.exp(-d)
    # atoms: (loss value, its pad, P-mass, Q-mass) in this direction
    mix_m, mix_p = (1 - q) / 2 + q * ed / 2, (1 - q) * ed / 2 + q / 2  # mixture masses of o ≤ 0, o ≥ D
    if remove:
        atoms = [(lam_m, pad_m, mix_m, 0.5), (lam_p, pad_p, mix_p, ed / 2)]
        lo_l, hi_l = lam_m - pad_m, lam_p + pad_p
    else:
        atoms = [(-lam_m, pad_m, 0.5, mix_m), (-lam_p, pad_p, ed / 2, mix_p)]
        lo_l, hi_l = -lam_p - pad_p, -lam_m + pad_m
    j0 = math.floor(lo_l / h) - 1
    j1 = math.ceil(hi_l / h) + 1
    n = j1 - j0
    js = np.arange(j0, j1 + 1, dtype=np.float64)
    if remove:  # bucket j ↔ x ∈ [e_j, e_{j+1}), L(e) ≤ a certified
        e = _lap_edges(js * h, d, q, at_most=True)
        e[0] = 0.0
        e[-1] = d
        good = ~np.isnan(e)
        e = e[np.maximum.accumulate(np.where(good, np.arange(e.size), 0))]
        lo_x, hi_x = e[:-1], e[1:]
        val, pad = _lap_loss(lo_x, d, q)
        eta = js[:-1] * h - (val - pad)
        low_ok = good[:-1]
    else:  # bucket j ↔ x ∈ [G_{j+1}, G_j), G_t: L(G_t) ≥ −t·h certified; G ascending in −t
        g = _lap_edges(-js * h, d, q, at_most=False)
        g[0] = d
        g[-1] = 0.0
        good = ~np.isnan(g)
        g = g[np.maximum.accumulate(np.where(good, np.arange(g.size), 0))]
        lo_x, hi_x = g[1:], g[:-1]
        hi_x = np.maximum(hi_x, lo_x)
        val, pad = _lap_loss(hi_x, d, q)
        eta = js[:-1] * h + (val + pad)
        low_ok = good[:-1]
    width = hi_x - lo_x
    ok = width > 0
    gm = np.where(ok, -np.expm1(-np.where(ok, width, 1.0)), 0.0)
    m0 = 0.5 * np.exp(-lo_x) * gm  # Lap(0)-mass of [x1, x2)
    md = 0.5 * np.exp(hi_x - d) * gm  # Lap(D)-mass
    mix = (1 - q) * m0 + q * md
    pm, qm = (mix, m0) if remove else (m0, mix)
    a = js[:-1] * h
    p = pm.copy()
    r = np.exp(a) * qm
    for loss, pad_a, pa, qa in atoms:
        j = math.ceil((loss + pad_a) / h) - 1  # the bucket whose top is above the atom's loss
        p[j - j0] += pa
        r[j - j0] += math.exp(j * h) * qa
        eta_a = j * h - (loss - pad_a)
        eta[j - j0] = max(float(eta[j - j0]) if ok[j - j0] else -math.inf, eta_a)
        ok[j - j0] = True
    low_ok = low_ok & ok
    eta_ok = np.where(low_ok & np.isfinite(eta), eta, 0.0)
    slack = max(0.0, float(np.max(eta_ok))) * (1 + 1e-9)
    low_ok = low_ok & np.isfinite(eta)
    rel = np.full(n, 16 * _EXP_REL + 16 * _U * (1 + d))
    # the sliver [D_dn, D) of outputs lost to rounding D: P-mass ≤ u·D, losses at the top (remove) or the
    # bottom (add) of the range
    sliver = 2 * _U * d + 5e-324
    if remove:
        return _Buckets(j0, p, r, rel, above_hi=sliver, slack=slack, low_ok=low_ok)
    return _Buckets(j0, p, r, rel, below_hi=sliver, slack=slack, low_ok=low_ok)


def pld_subsampled_laplace(
    scale: Number,
    rate: Number,
    sensitivity: Number = 1,
    *,
    sampling: Literal["poisson", "without_replacement"] = "poisson",
    step_bits: int = DEFAULT_STEP_BITS,
    tail: float = DEFAULT_TAIL,
) -> PLD:
    """The PLD of the Laplace mechanism (scale b, sensitivity Δ) run on a subsample drawn with this rate.

    The pairs are those of :func:`pld_subsampled_gaussian` with Laplace noise: "remove" (1 − q)·Lap(0, b) +
    q·Lap(Δ, b) against Lap(0, b), and "add" the reverse; both are kept and composed separately, δ(ε) is
    the larger. ``sampling`` as in :func:`pld_subsampled_gaussian`.

    Source: Zhu–Dullerud–Wang 2022 (Sec. 5, dominating pairs of subsampled mechanisms; Thm 10);
    Koskela–Jälkö–Honkela 2020 (PLDs of subsampled mechanisms).

    Raises:
        InvalidParameter: scale not positive, rate not in (0, 1], sensitivity not positive, Δ/b above 30,
            or an unknown ``sampling``.

    Examples:
        >>> lo, hi = pld_subsampled_laplace(1.0, 0.1).delta_bounds(0.5)
        >>> 0 <= float(lo) <= float(hi) < 0.01
        True
    """
    b, qq, sens, bits, tl = _read_args(scale, "scale", rate, sensitivity, sampling, step_bits, tail)
    from dpcompose.accounting._pld import pld_laplace

    d_q = sens / b
    if d_q > 30:
        raise InvalidParameter(f"sensitivity/scale={_fmt(d_q)} must be at most 30 for this PLD")
    d = float(d_q)
    if Fraction(d) < d_q:
        d = math.nextafter(d, math.inf)  # a larger shift dominates (Laplace is log-concave)
    q = float(qq)
    if Fraction(q) < qq:
        q = math.nextafter(q, math.inf)
    if q >= 1.0:
        return pld_laplace(sens, b, step_bits=bits, tail=tl)
    name = f"Subsampled{'Poisson' if sampling == 'poisson' else 'WOR'}Laplace(Δ/b={d:g}, q={q:g})"
    fwd = _build(bits, _lap_buckets(bits, d, q, True), tl, name + " remove")
    rev = _build(bits, _lap_buckets(bits, d, q, False), tl, name + " add")
    return PLD(bits, fwd.upper, fwd.lower, tl, name, reverse=rev)
