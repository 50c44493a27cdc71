from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from dpcompose._scipy import brentq, log_ndtr
from dpcompose.accounting._common import ONE, ZERO, nonnegative
from dpcompose.accounting._exact import (
    EXP_REL,
    Number,
    U,
    exp_down,
    exp_up,
    expm1_down,
    expm1_up,
    float_down,
    float_up,
    sqrt_down,
    sqrt_up,
)
from dpcompose.errors import InvalidParameter

FloatArray = npt.NDArray[np.float64]


def gaussian_delta_lower(mu_lo: float, eps: Fraction) -> float:
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
    la -= LOG_NDTR_PAD * (1 + abs(la))
    lb = float(log_ndtr(max(b_up, -1e150)))
    lb += LOG_NDTR_PAD * (1 + abs(lb))
    ef = float_up(eps)
    t = ef + lb - la
    t += 4 * U * (abs(ef) + abs(lb) + abs(la))
    if t >= 0:
        return 0.0
    w = -expm1_up(t)  # −(e^t − 1) rounded down
    v = exp_down(la) * w * (1 - 4 * U)
    return max(0.0, math.nextafter(v, -math.inf))


def phi_up(t: float) -> float:
    """An upper bound on Φ(t) at the float t: scipy's ``log_ndtr`` padded by its assumed error
    ``LOG_NDTR_PAD``·(1 + |value|) (module docstring), then the exponential by a relative 1e-10 (≫ its
    ulps). A value below the float range comes out 0; the callers' stored masses carry an absolute pad of
    5e-324 (:func:`build_pld`)."""
    return min(1.0, math.exp(log_ndtr_up(t)) * (1 + 1e-10))


def log_phi_diff(hi: FloatArray, lo: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``(log(Φ(hi) − Φ(lo)), rel)`` with ``hi > lo`` elementwise and a relative error bound ``rel`` of the
    difference; uses the upper tail Φ(−lo) − Φ(−hi) where lo > 0 so that both are accurate. The bound
    assumes scipy's ``log_ndtr`` within ``LOG_NDTR_PAD``·(1 + |value|) (module docstring) and uses
    1 − e^{−x} ≥ x·e^{−x} for the relative error of 1 − e^{d}."""
    flip = lo > 0
    a = np.where(flip, -lo, hi)  # the larger CDF argument
    b = np.where(flip, -hi, lo)
    la = np.asarray(log_ndtr(a), dtype=np.float64)
    lb = np.asarray(log_ndtr(b), dtype=np.float64)
    return _phi_diff_of_logs(la, lb)


def log_phi_steps(edges: FloatArray) -> tuple[FloatArray, FloatArray]:
    """:func:`log_phi_diff` of the consecutive cells [edgesᵢ, edgesᵢ₊₁) of non-decreasing ``edges``,
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
    """``(log(e^{la} − e^{lb}), rel)`` from two ``log_ndtr`` values la ≥ lb (:func:`log_phi_diff`)."""
    pa = LOG_NDTR_PAD * (1 + np.abs(la))
    pb = LOG_NDTR_PAD * (1 + np.abs(lb))
    d = lb - la  # ≤ 0
    with np.errstate(divide="ignore", invalid="ignore"):
        one_minus = -np.expm1(d)
        log_diff = la + np.log(one_minus)
        # error of d: pa + pb + u|d|; relative error of 1 − e^d ≤ err_d/|d| (1 − e^{−x} ≥ x e^{−x}).
        err_d = pa + pb + 2 * U * np.abs(d)
        rel = np.where(d < 0, err_d / np.abs(d) * np.exp(err_d), np.inf) + pa * 2 + 8 * EXP_REL
    return log_diff, rel


LOG_NDTR_PAD = 64 * U  # assumed accuracy of scipy's log_ndtr (relative, plus the same absolute)


def log_ndtr_up(x: float) -> float:
    v = float(log_ndtr(x))
    return v + LOG_NDTR_PAD * (1 + abs(v))


def _log_ndtr_down(x: float) -> float:
    v = float(log_ndtr(x))
    return v - LOG_NDTR_PAD * (1 + abs(v))


def gaussian_delta(mu_sq: Number, epsilon: Number) -> Fraction:
    """The exact δ(ε) of a μ-GDP (Gaussian) mechanism, rounded up: ``Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ)``.

    μ = Δ/σ is given through ``mu_sq = μ²`` (exact, so compositions ``Σ μᵢ²`` stay exact). Computed as
    ``Φ(a)·(1 − exp(ε + log Φ(b) − log Φ(a)))`` with log-Φ from :func:`scipy.special.log_ndtr`, every
    quantity rounded in the direction that increases δ.

    Source: Balle–Wang 2018 (ICML) Thm 8 (analytic Gaussian mechanism); Dong–Roth–Su 2019 Cor 2.13.

    Examples:
        >>> float(gaussian_delta(1, 1.0))
        0.12693673...
    """
    m2 = nonnegative(mu_sq, "mu_sq")
    eps = nonnegative(epsilon, "epsilon")
    if m2 == 0:
        return ZERO
    mu_up, mu_dn = Fraction(sqrt_up(m2)), Fraction(sqrt_down(m2))
    if mu_dn == 0:
        mu_dn = Fraction(5e-324)
    # Φ is increasing: raising a (to at least −1e150, where log Φ is still finite) only raises the bound.
    a_up = max(float_up(mu_up / 2 - eps / mu_up), -1e150)
    b_dn = float_down(-(mu_up / 2 + eps / mu_dn))
    la = log_ndtr_up(a_up)
    ef = float_down(eps)
    if b_dn < -1e150 or ef > 1e300:  # e^ε Φ(b) is bounded below by 0: the factor w is at most 1
        w_up = 1.0
    else:
        lb = _log_ndtr_down(b_dn)
        t = ef + lb - la
        t_dn = t - 4 * U * (abs(ef) + abs(lb) + abs(la))
        w_up = -expm1_down(min(t_dn, 0.0))
    return min(ONE, Fraction(exp_up(la)) * Fraction(w_up))


def gaussian_epsilon(mu_sq: Fraction, delta: Fraction) -> Fraction:
    if delta == 0:
        raise InvalidParameter("delta=0 must be positive: a Gaussian mechanism has δ(ε) > 0 at every ε")
    mu = math.sqrt(float(mu_sq))

    def rough(e: float) -> float:  # float-only δ(ε) to locate the root; the answer is then certified
        la = float(log_ndtr(mu / 2 - e / mu))
        lb = float(log_ndtr(-mu / 2 - e / mu))
        return math.exp(la) * -math.expm1(min(e + lb - la, 0.0))

    return _least_epsilon(lambda e: gaussian_delta(mu_sq, e), delta, _gaussian_hi(mu_sq, delta), rough)


def _gaussian_hi(mu_sq: Fraction, delta: Fraction) -> Fraction:
    # ε = μ²/2 + μ√(2 ln(1.25/δ)) is enough (classical bound: δ(ε) ≤ Φ(μ/2 − ε/μ)); double it for safety.
    # only the search's starting bracket (it doubles until δ is met); ln(1/δ) from the exact Fraction, as a
    # δ such as 5e-324 or 10**-400 has no float reciprocal
    mu = math.sqrt(float(mu_sq))
    ln_inv = math.log(delta.denominator) - math.log(delta.numerator)
    return Fraction(2 * (mu * mu / 2 + mu * math.sqrt(2 * (math.log(1.25) + ln_inv))) + 1)


def _least_epsilon(
    delta_at: Callable[[Fraction], Fraction],
    target: Fraction,
    hi: Fraction,
    rough: Callable[[float], float] | None = None,
) -> Fraction:
    """Least ε (to ~1e-13 relative) in [0, hi] with delta_at(ε) ≤ target. delta_at is a valid upper
    bound, and the returned ε is checked against it, so the answer always satisfies the target."""
    if delta_at(ZERO) <= target:
        return ZERO
    while delta_at(hi) > target:
        hi *= 2
        if hi > 1e6:
            raise InvalidParameter(f"delta={float(target)!r} is not reached by any ε ≤ 1e6")
    t = float(target)
    hi_f = float_up(hi)

    def f(x: float) -> float:
        return (rough(x) if rough is not None else float(delta_at(Fraction(x)))) - t

    x = float(brentq(f, 0.0, hi_f, xtol=1e-14 * hi_f, rtol=1e-14, maxiter=200))
    # the float root may sit a hair below the certified root: step up, doubling the step each time, so
    # the overshoot stays within twice the gap (fixed tiny steps could give up and return hi)
    step = max(x * 1e-15, 1e-300)
    for _ in range(1100):
        if x >= hi_f:
            break
        if delta_at(Fraction(x)) <= target:
            return min(hi, Fraction(x))
        x = math.nextafter(x + step, math.inf)
        step *= 2
    return hi
