"""Zero-concentrated and Rényi differential privacy: composition, conversions, group privacy.

Conversions to (ε, δ) optimise a free order α in floating point; the bound is then evaluated at the chosen
α (an exact rational) with every irrational step rounded up, so whatever α the optimiser lands on, the
returned ε is a true upper bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction

import numpy as np

from dpcompose._scipy import minimize_scalar
from dpcompose._validation import check_positive_int, check_same_length
from dpcompose.accounting._common import ZERO, as_sequence, nonnegative, positive, probability
from dpcompose.accounting._exact import Number, exact_sum, exp_up, float_up, log_down, log_up, sqrt_up_q
from dpcompose.errors import InvalidParameter

__all__ = [
    "bounded_range_to_zcdp",
    "group_zcdp",
    "pure_to_zcdp",
    "renyi_to_approx",
    "zcdp_compose",
    "zcdp_delta",
    "zcdp_to_approx",
]


def zcdp_compose(rhos: Sequence[Number]) -> Fraction:
    """Composition of zCDP mechanisms: ``ρ = Σ ρᵢ`` (exact; adaptive composition holds).

    Source: Bun–Steinke 2016 Lemma 2.3 (adaptive composition of zCDP).

    Examples:
        >>> zcdp_compose([0.125, 0.25])
        Fraction(3, 8)
    """
    seq = as_sequence(rhos, "rhos")
    return exact_sum(nonnegative(r, f"rhos[{i}]") for i, r in enumerate(seq))


def pure_to_zcdp(epsilon: Number) -> Fraction:
    """An ε-DP mechanism is ``ε²/2``-zCDP (exact).

    The tighter constant ε·tanh(ε/2) is the Kullback–Leibler bound, not a zCDP bound for every order α,
    so it is not used here.

    Source: Bun–Steinke 2016 Prop 1.4 (proved as Prop 3.3).

    Examples:
        >>> pure_to_zcdp(0.5)
        Fraction(1, 8)
    """
    eps = nonnegative(epsilon, "epsilon")
    return eps * eps / 2


def bounded_range_to_zcdp(eta: Number) -> Fraction:
    """An η-bounded-range mechanism (its privacy loss between neighbours always lies in an interval of width
    η, e.g. the exponential mechanism with η = 2Δ/scale) is ``η²/8``-zCDP (exact).

    Proof: the loss ``L`` lies in an interval of width η, so by Hoeffding's lemma
    ``E[e^{λL}] <= exp(λE[L] + λ²η²/8)`` for every real λ; at λ = −1, ``E[e^{−L}] = 1`` gives
    ``E[L] <= η²/8``, and then ``E[e^{(α−1)L}] <= exp((α−1)αη²/8)``: ``D_α <= αη²/8`` at every α > 1.

    Source: Cesar–Rogers 2021 (ALT, "Bounding, Concentrating, and Truncating: Unifying Privacy Loss
    Composition for Data Analytics", arXiv:2004.07223); bounded range: Durfee–Rogers 2019.

    Examples:
        >>> bounded_range_to_zcdp(0.5)
        Fraction(1, 32)
    """
    e = nonnegative(eta, "eta")
    return e * e / 8


def group_zcdp(rho: Number, k: int) -> Fraction:
    """Group privacy for zCDP: a ρ-zCDP mechanism is ``k²ρ``-zCDP for groups of k records (exact).

    Source: Bun–Steinke 2016 Prop 1.9 (group privacy; proved as Prop 5.3).

    Examples:
        >>> group_zcdp(0.5, 3)
        Fraction(9, 2)
    """
    r = nonnegative(rho, "rho")
    k = check_positive_int(k, "k")
    return k * k * r


def _bbghs_epsilon(alpha: Fraction, r: Fraction, log_inv_delta: Fraction) -> Fraction:
    """Upper bound on ``r + ln((α−1)/α) − (ln δ + ln α)/(α − 1)`` for rational α > 1.

    ``log_inv_delta`` must already be an upper bound on ln(1/δ).
    """
    am1 = alpha - 1
    t1 = Fraction(log_up((alpha - 1) / alpha))
    t2 = (log_inv_delta - Fraction(log_down(alpha))) / am1
    return r + t1 + t2


def _optimise_alpha(f: Callable[[float], float], lo: float, hi: float) -> float:
    """Minimise ``f(u)`` with ``u = log(α − 1)`` over [lo, hi], returning α.

    A coarse scan locates the basin (the objectives are unimodal in u, but can be very flat), then
    bounded Brent refines within the neighbouring grid cells.
    """
    grid = np.linspace(lo, hi, 71)
    values = [f(float(u)) for u in grid]
    i = int(np.nanargmin(values))
    a, b = float(grid[max(i - 1, 0)]), float(grid[min(i + 1, len(grid) - 1)])
    res = minimize_scalar(f, bounds=(a, b), method="bounded", options={"xatol": 1e-13, "maxiter": 500})
    u = float(res.x) if float(res.fun) <= values[i] else float(grid[i])
    return 1.0 + math.exp(u)  # > 1 for u ≥ −30


_MODERATE = (1e-150, 1e150)  # ρ, ε in this range keep the float objectives of the α search finite


def _round_bits(q: Fraction, up: bool, bits: int = 41) -> Fraction:
    """``q > 0`` rounded to ``bits`` significant binary digits, up or down: to the grid 2**(E + 1 − bits)
    of its binade 2**E ≤ q < 2**(E + 1).

    Non-decreasing in q. Within a binade it is rounding to one grid. For q₁ < q₂ in binades E₁ < E₂, the
    bounds 2**E₁ and 2**(E₁ + 1) are points of q₁'s grid, so q₁ rounds to at most 2**(E₁ + 1) ≤ 2**E₂, and
    q₂ rounds to at least 2**E₂.
    """
    n, d = q.numerator, q.denominator
    e = n.bit_length() - d.bit_length()  # 2**(e-1) < q < 2**(e+1)
    if (n << max(0, -e)) < (d << max(0, e)):  # q < 2**e: the binade is e − 1
        e -= 1
    scale = Fraction(2) ** (bits - 1 - e)
    scaled = q * scale
    n = -((-scaled.numerator) // scaled.denominator) if up else scaled.numerator // scaled.denominator
    return Fraction(n) / scale


def zcdp_to_approx(rho: Number, delta: Number) -> Fraction:
    """The least ε (over the order α) that ρ-zCDP implies at δ, per Canonne–Kamath–Steinke 2020.

    For every α > 1, ρ-zCDP gives (ε, δ)-DP with
    ``ε = αρ + ln((α−1)/α) − (ln δ + ln α)/(α − 1)``. The order α is optimised numerically and the
    bound evaluated at that α with outward rounding, so the result is valid for any α found. The result
    is never above Bun–Steinke's ``ρ + 2√(ρ ln(1/δ))`` (the smaller is returned) and never below 0.

    Source: Canonne, Kamath, Steinke 2020 Prop 12 / Cor 13 (equivalently Asoodeh et al. 2020, Balle et al.
    2020 Thm 21 with r(α) = αρ); Bun–Steinke 2016 Prop 1.3.

    Args:
        rho: ρ ≥ 0.
        delta: δ ∈ (0, 1).

    Raises:
        InvalidParameter: bad ρ or δ (δ = 0 gives no finite ε unless ρ = 0).

    Examples:
        >>> float(zcdp_to_approx(0.5, 1e-6))
        5.2215344445...
        >>> zcdp_to_approx(0, 1e-6)
        Fraction(0, 1)
    """
    r = nonnegative(rho, "rho")
    d = probability(delta, "delta")
    if r == 0:
        return ZERO
    if d == 0:
        raise InvalidParameter(f"delta={delta!r} must be positive: ρ-zCDP with ρ > 0 gives no (ε, 0) bound")
    # ρ is rounded up and δ down to 41 significant bits (at most 2⁻⁴⁰ relative), each rounding
    # non-decreasing in its input (_round_bits), so inputs within one grid cell give the same answer. Across
    # cells monotonicity is not proven: the bound at a fixed α is increasing in ρ, but α is a float
    # optimiser's, and only its noise staying below the bound's rise between neighbouring cells (ρ moves by
    # at least 2⁻⁴¹ relative) keeps a larger ρ from converting to a smaller ε. Callers must not rely on it:
    # a search over ρ keeps only values it has converted (zcdp_budget).
    r = _round_bits(r, up=True)
    d = _round_bits(d, up=False)
    log_inv = Fraction(-log_down(d))
    bs = r + 2 * sqrt_up_q(r * log_inv)
    rf = float_up(r)
    lf = float(log_inv)
    if not _MODERATE[0] <= rf <= _MODERATE[1]:
        # The float optimiser over α would overflow or underflow; Bun–Steinke's bound is valid at any ρ.
        return bs

    def objective(u: float) -> float:
        am1 = math.exp(u)
        a = 1.0 + am1
        return a * rf + math.log(am1 / a) + (lf - math.log1p(am1)) / am1

    # The optimum is near α ≈ 1 + √(ln(1/δ)/ρ); search log(α − 1) in a wide bracket around it.
    centre = 0.5 * (math.log(lf) - math.log(rf)) if lf > 0 else 0.0
    try:
        alpha = _optimise_alpha(objective, centre - 30.0, centre + 30.0)
        best = min(bs, _bbghs_epsilon(Fraction(alpha), Fraction(alpha) * r, log_inv))
    except (ValueError, OverflowError, ZeroDivisionError):  # a float step failed: any α is optional
        best = bs
    return max(ZERO, best)


def zcdp_delta(rho: Number, epsilon: Number) -> Fraction:
    """The least δ (over α) that ρ-zCDP implies at ε: ``min_α e^{(α−1)(αρ−ε)}/(α−1) · (1 − 1/α)^α``.

    Source: Canonne, Kamath, Steinke 2020 Prop 12 / Cor 13.

    Examples:
        >>> d = zcdp_delta(0.5, zcdp_to_approx(0.5, 1e-6))
        >>> d <= Fraction(1, 10**6) * (1 + Fraction(1, 10**6))
        True
    """
    r = nonnegative(rho, "rho")
    e = nonnegative(epsilon, "epsilon")
    if r == 0:
        return ZERO
    rf, ef = float(r), float(e)

    def log_delta(u: float) -> float:
        am1 = math.exp(u)
        a = 1.0 + am1
        return am1 * (a * rf - ef) - u + a * math.log(am1 / a)

    if _MODERATE[0] <= rf <= _MODERATE[1] and ef <= _MODERATE[1]:
        alpha = Fraction(_optimise_alpha(log_delta, -30.0, 40.0))
    else:
        # Out of the optimiser's float range: the minimiser of the leading term (α−1)(αρ − ε),
        # α = (ε + ρ)/(2ρ) (any α > 1 gives a valid bound; this one is near-optimal for large ε/ρ).
        alpha = max((e + r) / (2 * r), Fraction(1) + Fraction(1, 2**20))
        alpha = _round_bits(alpha, up=True)
    am1 = alpha - 1
    exponent = am1 * (alpha * r - e) - Fraction(log_down(am1)) + alpha * Fraction(log_up(am1 / alpha))
    bound = exp_up(exponent)
    return min(Fraction(1), Fraction(bound)) if math.isfinite(bound) else Fraction(1)


def renyi_to_approx(alphas: Sequence[Number], epsilons: Sequence[Number], delta: Number) -> Fraction:
    """The least ε, over the given orders, that an RDP curve implies at δ.

    ``ε = min_α r(α) + ln((α−1)/α) − (ln δ + ln α)/(α − 1)`` over the pairs (α, r(α)), each α > 1;
    always better than Mironov's ``r(α) + ln(1/δ)/(α−1)``. Rounded up; never below 0.

    Source: Balle, Barthe, Gaboardi, Hsu, Sato 2020 (AISTATS) Thm 21.

    Args:
        alphas: orders α > 1 (finite).
        epsilons: the RDP ε(α) ≥ 0 at each order.
        delta: δ ∈ (0, 1).

    Examples:
        >>> float(renyi_to_approx([2, 8, 32], [1.0, 4.0, 16.0], 1e-6))
        5.5430498954...
    """
    a_seq = as_sequence(alphas, "alphas")
    e_seq = as_sequence(epsilons, "epsilons")
    check_same_length(a_seq, "alphas", e_seq, "epsilons")
    d = probability(delta, "delta")
    if d == 0:
        raise InvalidParameter(f"delta={delta!r} must be positive for a Rényi-DP conversion")
    log_inv = Fraction(-log_down(d))
    best: Fraction | None = None
    for i, (a, e) in enumerate(zip(a_seq, e_seq, strict=False)):
        alpha = positive(a, f"alphas[{i}]")
        if alpha <= 1:
            raise InvalidParameter(f"alphas[{i}]={a!r} must be greater than 1")
        r = nonnegative(e, f"epsilons[{i}]")
        cand = _bbghs_epsilon(alpha, r, log_inv)
        best = cand if best is None or cand < best else best
    assert best is not None
    return max(ZERO, best)
