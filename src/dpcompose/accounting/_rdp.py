"""Rényi curves of Poisson-subsampled mechanisms (the sampled Gaussian mechanism of DP-SGD and its kin).

A mechanism ``M`` is run on a Poisson subsample (each record kept with probability ``q``) of a dataset;
neighbours differ by one record added or removed. If ``M`` has Rényi divergence at most ``r(j)`` at every
integer order ``j`` ≥ 2 between the outputs of any two neighbours, in both directions (for a ρ-zCDP
mechanism ``r(j) = jρ``), then at every integer order ``α`` ≥ 2 the subsampled mechanism has

* *removal* (``D_α(μ ‖ μ₀)``, μ = (1 − q)μ₀ + qμ₁ the output with the record, μ₀ without):
  ``exp((α − 1)·D) ≤ A_α = Σ_{j=0..α} C(α, j)(1 − q)^{α−j} q^j e^{(j−1)·r(j)}``
  (the j = 0, 1 terms carry no exponential);
* *addition* (``D_α(μ₀ ‖ μ)``):
  ``exp((α − 1)·D) ≤ B_α = 1 + C(α, 2) q² E + max(0, K − C(α, 2) q²)·min(1, E)``,
  with ``E = e^{r(2)} − 1`` and ``K = (1 − q)^{−(α−1)} − 1 − (α − 1)q``;

and the RDP curve is ``ε(α) = min(ln max(A_α, B_α), ln(1 − q + q·e^{(α−1)r(α)})) / (α − 1)``.

Proof. Write F(P, Q) = ∫ P^α Q^{1−α}, so D_α(P ‖ Q) = ln F(P, Q)/(α − 1). For α > 1, F is jointly convex (the
integrand b·(a/b)^α is the perspective of the convex a ↦ a^α). The output on the larger dataset is the
mixture over subsamples S of (1 − q)M(S) + qM(S ∪ {x}), the output on the smaller one the mixture of M(S),
so by joint convexity F of the pair is at most the largest F of the pairs for one S; fix S and write
μ₀ = M(S), μ₁ = M(S ∪ {x}), s = dμ₁/dμ₀ (μ₁ ≪ μ₀ since D_2(μ₁‖μ₀) is finite). Removal: with an integer α
the binomial theorem gives F(μ, μ₀) = E_{μ₀}[(1 − q + qs)^α] = Σ_j C(α, j)(1 − q)^{α−j} q^j E_{μ₀}[s^j], and
E_{μ₀}[s^j] = e^{(j−1)·D_j(μ₁‖μ₀)} ≤ e^{(j−1)·r(j)} for j ≥ 2 (E[s⁰] = E[s¹] = 1). This is the
integer-order expansion of Mironov–Talwar–Zhang 2019 (arXiv:1908.10530, Sec. 3.3, there for the Gaussian
with r(j) = j/(2σ²)); for the sampled Gaussian mechanism it is exact. Addition: F(μ₀, μ) =
E_{μ₀}[(1 + u)^{−(α−1)}] with u = q(s − 1) ≥ −q. Write (1 + u)^{−(α−1)} = 1 − (α−1)u + R(u); by Taylor's
theorem in integral form R(u)/u² = ∫₀¹ (1 − t) g(tu) dt with g(v) = α(α−1)(1 + v)^{−(α+1)} decreasing, so
R(u)/u² decreases with u: it is at most R(0⁺)/0² = C(α, 2) for u > 0, and at most R(−q)/q² = K/q² for
−q ≤ u < 0. With E[u] = 0, E[u²] = q²(E[s²] − 1) ≤ q²E, and E[u²·1{u < 0}] ≤ q² min(1, E) (u² ≤ q² there),
the expectation is largest when the mass of u² below 0 is: B_α. (K − C(α, 2)q² is evaluated directly and
by its Lagrange form C(α + 1, 3)q³(1 − ξ)^{−(α+2)} ≤ C(α + 1, 3)q³(1 − q)^{−(α+2)}, the lesser kept.)
Finally F(μ, μ₀) ≤ (1 − q)F(μ₀, μ₀) + qF(μ₁, μ₀) and F(μ₀, μ) ≤ (1 − q) + qF(μ₀, μ₁) (joint convexity
again), both at most 1 − q + q·e^{(α−1)r(α)} ≤ e^{(α−1)r(α)}: subsampling never costs more than the
mechanism itself. A non-integer order α is read at ⌈α⌉ (D_α does not decrease with α: van Erven–Harremoës
2014, IEEE Trans. Inf. Theory, Thm 3). ∎

*Symmetric bases* (the Gaussian and the discrete Gaussian): where every pair (μ₀, μ₁) above is symmetric —
some measurable bijection maps μ₀ to μ₁ and μ₁ to μ₀, as the reflection z ↦ u − z does for noise symmetric
about 0 and a shift u on a group (ℝᵈ, or ℤᵈ with an integer shift vector) — and the two are mutually
absolutely continuous, the addition direction never exceeds the removal one: B_α ≤ A_α at every real
α ≥ 1, so the curve reads ``min(r(α), ln min(A_α, 1 − q + q·e^{(α−1)r(α)})/(α − 1))``, which for the sampled
Gaussian mechanism is its exact Rényi divergence (Mironov–Talwar–Zhang 2019, arXiv:1908.10530, Sec. 3.3,
where the removal direction is shown to dominate for the Gaussian; Zhu–Wang 2019, "Poisson subsampled Rényi
differential privacy", ICML, Thm 6 is the general bound and their exact formula for the Gaussian). Proof
(for both bases at once). With s = dμ₁/dμ₀, symmetry gives E_{μ₀}[g(s)] = E_{μ₁}[g(1/s)] = E_{μ₀}[s·g(1/s)]
for every g ≥ 0, hence E_{μ₀}[g(s)] = E_{μ₀}[(g(s) + s·g(1/s))/2]. Take a = 1 − q + qs, b = (1 − q)s + q (so
1 − q + q/s = b/s): A_α = E[a^α] and B_α = E[a^{1−α}], and symmetrised it suffices that, pointwise,
G(s) = a^α + s^{1−α}b^α − s^α b^{1−α} − a^{1−α} ≥ 0. As G(1/s) = G(s)/s, take s ≥ 1; then a ≥ 1, and with
r = s/b, ab − s = q(1 − q)(s − 1)² ≥ 0 gives a ≥ r ≥ 1. With φ(x) = x^α − x^{1−α} = 2√x·sinh(c·ln x),
c = α − ½, G(s) = φ(a) − b·φ(r), i.e. G ≥ 0 iff √a·sinh(c·ln a) ≥ √(sb)·sinh(c·ln r). The ratio
sinh(cx)/sinh(cy) (x ≥ y > 0) does not decrease with c (d/dc ln sinh(cx) = x·coth(cx), increasing in x),
and at c = ½ (α = 1) the two sides are equal (a − 1 = q(s − 1) = s − b); so for α ≥ 1 the left side is
the larger (r = 1 leaves the right side 0). ∎ For a Gaussian base, E[s^j] = e^{(j−1)·jΔ²/2σ²} exactly; for
the discrete Gaussian at an integer shift k ≤ Δ, E[s^j] ≤ e^{(j−1)·jΔ²/2σ²} (Canonne–Kamath–Steinke 2020
Thm 4 at order j), and A_α only grows with these moments; joint convexity (above) bounds the mixture over
subsamples by the worst single S. The same holds where every pair (μ₀, μ₁) is one kernel's image of
one symmetric pair (P, Q) — a dominating pair, by Blackwell's theorem: the mixture pair is then that
kernel's image of the mixture of (P, Q), and data processing bounds both directions by those of (P, Q),
to which the lemma applies. (``tests/accounting/test_rdp_subsample.py`` checks G ≥ 0 and B_α ≤ A_α at
50 digits, and the curve against numerical integration of both directions.)

The addition bound is this library's (the published sampled-Gaussian analyses bound the other direction
by the removal one; the monotone remainder was suggested by review); it is tested against numerical
integration of both directions for the continuous Gaussian, exact sums for the discrete one and for
random discrete pairs (``tests/accounting/test_rdp_subsample.py``). For DP-SGD's step (σ = 1, q = 0.01)
it is the larger bound at order 2 only, 0.6% above A_2 − 1, and from order 3 on the curve reads A_α, the
exact removal value. It is looser where the noise is large and αq is not small: at σ = 5, q = 0.1, order
32 it is 2.8 times the removal value, and ε at δ = 1e-5 after 1000 such steps is 3.34 against 2.88 from
the removal side alone — which is what a Gaussian base reads (:func:`subsampled_gaussian_renyi`, and
``PrivacyLoss.renyi`` of a subsampled Gaussian or discrete Gaussian pair), by the symmetric-base lemma.

Examples:
    >>> from fractions import Fraction
    >>> curve = subsampled_zcdp_to_renyi(Fraction(1, 2), Fraction(1, 100), (Fraction(2), Fraction(10)))
    >>> [round(float(e), 6) for e in curve]  # σ = 1 (ρ = 1/2), q = 0.01: DP-SGD's step
    [0.000173, 0.03827]
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable, Sequence
from fractions import Fraction

from dpcompose.accounting._common import nonnegative
from dpcompose.accounting._exact import (
    Number,
    exp_up,
    expm1_up,
    float_up,
    log1p_down,
    log1p_up,
    log_up,
    next_up,
)
from dpcompose.accounting._filters import check_orders
from dpcompose.errors import InvalidParameter

__all__ = ["RUNNER_UP_ORDERS", "subsampled_gaussian_renyi", "subsampled_renyi", "subsampled_zcdp_to_renyi"]

_MAX_ORDER = 4096  # (an order beyond this costs seconds of exact sums; the usual grids stop at 256)

RUNNER_UP_ORDERS: tuple[Fraction, ...] = tuple(
    sorted(
        {Fraction(a) for a in ("1.25", "1.5", "1.75", "2.5")}
        | {Fraction(a) for a in range(2, 65)}
        | {Fraction(a) for a in (72, 80, 96, 112, 128, 160, 192, 224, 256)}
    )
)
"""The orders the Rényi runner-up (the composition policy's ``renyi`` candidate for children with pairs,
and the account command) reads: every integer to 64, then sparser to 256. Subsampled curves are exact
sums at integer orders only (a non-integer order reads the next integer), and the best order of a long
DP-SGD run often falls between the points of ``DEFAULT_ORDERS`` (10⁵ steps at q = 1e-4, σ = 0.8: order
11, ε 1.0695 here against 1.1928 on ``DEFAULT_ORDERS``)."""


def subsampled_renyi(
    base: Callable[[int], Number], q: Number, orders: Sequence[Number], *, symmetric: bool = False
) -> tuple[Fraction, ...]:
    """Upper bounds on the Rényi-DP curve, at each order, of a mechanism run on a Poisson subsample.

    ``base(j)`` must bound the mechanism's own Rényi divergence at integer order ``j`` ≥ 2 in both
    directions between add/remove neighbours; the result at order α is
    ``min(base(α), ln min(max(A_α, B_α), 1 − q + q·e^{(α−1)base(α)})/(α − 1))`` with A_α and B_α of the
    module docstring, α read at ⌈α⌉ where it is not an integer, every irrational step rounded up. With
    ``symmetric=True`` (every pair of the base is symmetric: the Gaussian, the discrete Gaussian at integer
    shifts) B_α is dropped, as B_α ≤ A_α there (the module docstring's lemma): the removal sum alone.

    Source: the module docstring's proof (symmetric bases: its lemma; Mironov–Talwar–Zhang 2019 Sec. 3.3
    for the Gaussian) (the removal sum as in Mironov–Talwar–Zhang 2019, arXiv:1908.10530,
    Sec. 3.3; joint convexity of ∫P^αQ^{1−α}; van Erven–Harremoës 2014 Thm 3 for non-integer orders).

    Raises:
        InvalidParameter: ``base`` is not callable or returns something other than a finite number ≥ 0,
            ``q`` is outside [0, 1], or an order is not above 1, repeats, or exceeds 4096.

    Examples:
        >>> from fractions import Fraction
        >>> pure = lambda j: min(Fraction(1), j * Fraction(1, 2))  # ε = 1: min(ε, jε²/2)
        >>> [float(e) for e in subsampled_renyi(pure, Fraction(1), (Fraction(2), Fraction(3)))]
        [1.0, 1.0]
    """
    if not callable(base):
        raise InvalidParameter(f"base={base!r} must be a function of the integer order j ≥ 2")
    if not isinstance(symmetric, bool):
        raise InvalidParameter(f"symmetric={symmetric!r} must be True or False")
    rate = nonnegative(q, "q")
    if rate > 1:
        raise InvalidParameter(f"q={q!r} must be in [0, 1]")
    alphas = check_orders(orders)
    for i, a in enumerate(alphas):
        if a > _MAX_ORDER:
            raise InvalidParameter(f"orders[{i}]={a} must be at most {_MAX_ORDER}")

    @functools.cache
    def r(j: int) -> Fraction:
        return nonnegative(base(j), f"base({j})")

    out = []
    for a in alphas:
        alpha = math.ceil(a)
        if rate == 0:
            out.append(Fraction(0))
        elif rate == 1:
            out.append(r(alpha))
        else:
            log_f = _log_mixed_cap(r(alpha), rate, alpha)
            removal = _log_removal(r, rate, alpha)
            if removal is not None:  # (None: a moment beyond the float range; the cap decides)
                log_f = min(log_f, removal if symmetric else max(removal, log_addition(r(2), rate, alpha)))
            out.append(_tidy(min(r(alpha), log_f / (alpha - 1))))
    return tuple(out)


def subsampled_zcdp_to_renyi(rho: Number, q: Number, orders: Sequence[Number]) -> tuple[Fraction, ...]:
    """The Rényi curve of a ρ-zCDP mechanism (``D_j ≤ jρ``, Bun–Steinke 2016 Def. 1.1) run on a Poisson
    subsample with rate ``q`` (:func:`subsampled_renyi`). For the Gaussian mechanism (ρ = Δ²/2σ²) the
    removal term is the sampled Gaussian mechanism's exact Rényi divergence (Mironov–Talwar–Zhang 2019).

    Examples:
        >>> from fractions import Fraction
        >>> subsampled_zcdp_to_renyi(Fraction(1, 8), Fraction(1), (Fraction(2),))
        (Fraction(1, 4),)
    """
    value = nonnegative(rho, "rho")
    if value > Fraction(sys.float_info.max) / _MAX_ORDER:
        raise InvalidParameter(
            f"rho={rho!r} is too large: its curve jρ must stay within the double range (±1.8e308) at every "
            f"order up to {_MAX_ORDER}"
        )
    return subsampled_renyi(lambda j: j * value, q, orders)


def subsampled_gaussian_renyi(rho: Number, q: Number, orders: Sequence[Number]) -> tuple[Fraction, ...]:
    """The Rényi curve of the Gaussian (or discrete Gaussian) mechanism with ρ = Δ²/2σ² run on a Poisson
    subsample with rate ``q``, both directions of add/remove: ``min(αρ, ln A_α/(α − 1))`` at integer orders,
    ``A_α = Σ_j C(α, j)(1 − q)^{α−j} q^j e^{(j−1)jρ}`` the removal sum, rounded up. A non-integer α is read
    as the whole value at ⌈α⌉, cap ⌈α⌉ρ included (Rényi divergence grows with the order, so this bounds it;
    it can be far above the value at α itself). Exact (up to that rounding) for the continuous Gaussian at
    integer orders, and for the discrete Gaussian at integer shifts (its moments are exactly e^{j(j−1)ρ}).

    Use it only for a base whose every pair is symmetric — additive Gaussian or discrete Gaussian noise (the
    latter at integer shifts in grid units) with a shift of norm at most Δ; a general ρ-zCDP mechanism needs
    :func:`subsampled_zcdp_to_renyi`.

    Source: the module docstring's lemma (B_α ≤ A_α for symmetric pairs); Mironov–Talwar–Zhang 2019
    (arXiv:1908.10530) Sec. 3.3 (the removal sum, and the removal side dominating for the Gaussian);
    Zhu–Wang 2019 (ICML) Thm 6 (the general bound this is the exact case of); Canonne–Kamath–Steinke 2020
    Thm 4 (the discrete Gaussian's moments).

    Examples:
        >>> from fractions import Fraction
        >>> tight = subsampled_gaussian_renyi(Fraction(1, 10**6), Fraction(1, 10), (Fraction(128),))
        >>> general = subsampled_zcdp_to_renyi(Fraction(1, 10**6), Fraction(1, 10), (Fraction(128),))
        >>> float(tight[0]) < 1.29e-6 < 1.28e-5 < float(general[0])
        True
    """
    value = nonnegative(rho, "rho")
    if value > Fraction(sys.float_info.max) / _MAX_ORDER:
        raise InvalidParameter(
            f"rho={rho!r} is too large: its curve jρ must stay within the double range (±1.8e308) at every "
            f"order up to {_MAX_ORDER}"
        )
    return subsampled_renyi(lambda j: j * value, q, orders, symmetric=True)


def _log_removal(base: Callable[[int], Fraction], q: Fraction, alpha: int) -> Fraction | None:
    """An upper bound on ln A_α (the removal sum), or None where a term's exponent is beyond the float range
    (so that inf − inf cannot give a NaN and the message "q=nan")."""
    return _log_removal_cached(tuple(base(j) for j in range(2, alpha + 1)), q, alpha)


@functools.lru_cache(maxsize=512)
def _log_removal_cached(rs: tuple[Fraction, ...], q: Fraction, alpha: int) -> Fraction | None:
    # A_α − 1 = Σ_{j≥2} C(α, j)(1 − q)^{α−j} q^j (e^{(j−1)r(j)} − 1) (the binomial weights sum to 1), a sum of
    # non-negative terms: summed in logs around its largest term, then ln A_α = ln(1 + (A_α − 1)). This
    # keeps the relative precision of A_α − 1 at any rate (summing A_α itself loses it below q ≈ 1e-8).
    # Floats, each step rounded up: a product or sum rounded to nearest is within half an ulp, so one
    # next_up bounds it (fsum is correctly rounded); the inputs are upper bounds already.
    log_q = log_up(q)
    log_1mq = log1p_up(-q)  # (an upper bound on ln(1 − q) < 0: only multiplied by α − j ≥ 0)
    terms = []
    for j in range(2, alpha + 1):
        x = (j - 1) * rs[j - 2]
        if x <= 0:
            continue
        grown = expm1_up(x)
        log_grown = log_up(grown) if grown < math.inf else float_up(x)  # (e^x − 1 < e^x)
        if log_grown == math.inf:
            return None
        parts = [log_up(math.comb(alpha, j)), next_up((alpha - j) * log_1mq), next_up(j * log_q), log_grown]
        terms.append(next_up(math.fsum(parts)))
    if not terms:
        return Fraction(0)
    top = max(terms)
    total = next_up(math.fsum(exp_up(next_up(t - top)) for t in terms))
    return _log1p_of_exp(Fraction(next_up(top + log_up(total))))


def _log1p_of_exp(log_x: Fraction) -> Fraction:
    """An upper bound on ln(1 + X) from an upper bound ``log_x`` on ln X (ln(1 + X) increases with X)."""
    if log_x > 30:  # ln(1 + X) = ln X + ln(1 + 1/X)
        return log_x + Fraction(log1p_up(exp_up(-log_x)))
    return Fraction(log1p_up(exp_up(log_x)))


def log_addition(r2: Fraction, q: Fraction, alpha: int) -> Fraction:
    """An upper bound on ln B_α, B_α = 1 + C(α, 2)q²E + D·min(1, E) (module docstring), D bounded by the
    lesser of its direct evaluation (1 − q)^{−(α−1)} − 1 − (α−1)q − C(α, 2)q² and its Lagrange form
    C(α + 1, 3)q³(1 − q)^{−(α+2)} (the direct one loses its precision at small αq, the other is loose at
    large αq); each term in logs, ln(1 + X) from an upper bound on ln X."""
    if r2 == 0:
        return Fraction(0)
    spread = expm1_up(r2)
    log_e = Fraction(log_up(spread)) if spread < math.inf else r2  # (e^{r(2)} − 1 < e^{r(2)})
    log_q = Fraction(log_up(q))
    log_1mq = Fraction(log1p_down(-q))  # (a lower bound on ln(1 − q) < 0: only multiplied by negatives)
    c2 = math.comb(alpha, 2)
    log_main = Fraction(log_up(c2)) + 2 * log_q + log_e
    log_d = Fraction(log_up(math.comb(alpha + 1, 3))) + 3 * log_q - (alpha + 2) * log_1mq
    grown = expm1_up(-(alpha - 1) * log_1mq)  # ≥ (1 − q)^{−(α−1)} − 1
    if grown < math.inf:
        direct = Fraction(grown) - (alpha - 1) * q - c2 * q * q
        if direct > 0:
            log_d = min(log_d, Fraction(log_up(direct)))
    else:  # D < K < (1 − q)^{−(α−1)} (q near 1)
        log_d = min(log_d, -(alpha - 1) * log_1mq)
    log_rest = log_d + min(log_e, Fraction(0))
    top, low = max(log_main, log_rest), min(log_main, log_rest)
    # (and the cruder 1 + C(α, 2)q²(1 − q)^{−(α+1)}E, from R(u)/u² ≤ C(α, 2)(1 − q)^{−(α+1)} for every u ≥ −q:
    # never below B_α in exact arithmetic, but its evaluation can be the tighter one)
    crude = _log1p_of_exp(log_main - (alpha + 1) * log_1mq)
    return min(crude, _log1p_of_exp(top + Fraction(log1p_up(exp_up(low - top)))))


def _log_mixed_cap(r_alpha: Fraction, q: Fraction, alpha: int) -> Fraction:
    """An upper bound on ln(1 − q + q·e^{(α−1)r(α)}) = ln(1 + q(e^{(α−1)r(α)} − 1)), the cap of both
    directions by joint convexity (module docstring)."""
    x = (alpha - 1) * r_alpha
    if x == 0:
        return Fraction(0)
    grown = expm1_up(x)
    log_grown = Fraction(log_up(grown)) if grown < math.inf else x
    return _log1p_of_exp(Fraction(log_up(q)) + log_grown)


def _tidy(value: Fraction) -> Fraction:
    """``value``, or 2**-1000 where it is positive and smaller (an upper bound with a short denominator: a
    subnormal float's exact value has a denominator of up to 2**1074, which slows every sum it enters)."""
    return Fraction(1, 2**1000) if 0 < value < Fraction(1, 2**1000) else value
