"""Rényi curves of Poisson-subsampled mechanisms (the sampled Gaussian mechanism of DP-SGD and its kin).

A mechanism ``M`` is run on a Poisson subsample (each record kept with probability ``q``) of a dataset;
neighbours differ by one record added or removed. If ``M`` has Rényi divergence at most ``r(j)`` at every
integer order ``j`` ≥ 2 between the outputs of any two neighbours, in both directions (for a ρ-zCDP
mechanism ``r(j) = jρ``), then at every integer order ``α`` ≥ 2 the subsampled mechanism has

* *removal* (``D_α(μ ‖ μ₀)``, μ = (1 − q)μ₀ + qμ₁ the output with the record, μ₀ without):
  ``exp((α − 1)·D) ≤ A_α = Σ_{j=0..α} C(α, j)(1 − q)^{α−j} q^j e^{(j−1)·r(j)}``
  (the j = 0, 1 terms carry no exponential);
* *addition* (``D_α(μ₀ ‖ μ)``): ``exp((α − 1)·D) ≤ B_α``, the lesser of
  ``1 + C(α, 2) q² (1 − q)^{−(α+1)} E`` and ``1 + C(α, 2) q² E + C(α + 1, 3) q³ (1 − q)^{−(α+2)} min(1, E)``,
  with ``E = e^{r(2)} − 1``;

and the RDP curve is ``ε(α) = min(r(α), ln max(A_α, B_α) / (α − 1))``.

Proof. Write F(P, Q) = ∫ P^α Q^{1−α}, so D_α(P ‖ Q) = ln F(P, Q)/(α − 1). For α > 1, F is jointly convex (the
integrand b·(a/b)^α is the perspective of the convex a ↦ a^α). The output on the larger dataset is the
mixture over subsamples S of (1 − q)M(S) + qM(S ∪ {x}), the output on the smaller one the mixture of M(S),
so by joint convexity F of the pair is at most the largest F of the pairs for one S; fix S and write
μ₀ = M(S), μ₁ = M(S ∪ {x}), s = dμ₁/dμ₀ (μ₁ ≪ μ₀ since D_2(μ₁‖μ₀) is finite). Removal: with an integer α
the binomial theorem gives F(μ, μ₀) = E_{μ₀}[(1 − q + qs)^α] = Σ_j C(α, j)(1 − q)^{α−j} q^j E_{μ₀}[s^j], and
E_{μ₀}[s^j] = e^{(j−1)·D_j(μ₁‖μ₀)} ≤ e^{(j−1)·r(j)} for j ≥ 2 (E[s⁰] = E[s¹] = 1). This is the
integer-order expansion of Mironov–Talwar–Zhang 2019 (arXiv:1908.10530, Sec. 3.3, there for the Gaussian
with r(j) = j/(2σ²)); for the sampled Gaussian mechanism it is exact. Addition: F(μ₀, μ) =
E_{μ₀}[(1 + u)^{−(α−1)}] with u = q(s − 1) > −q. Taylor's theorem with the Lagrange remainder gives
(1 + u)^{−(α−1)} = 1 − (α−1)u + C(α, 2)(1 + ξ)^{−(α+1)} u² for some ξ between 0 and u, and
(1 + ξ)^{−(α+1)} ≤ (1 − q)^{−(α+1)}; E[u] = 0 and E[u²] = q²(E[s²] − 1) ≤ q²E give the first bound. One
order further, (1 + u)^{−(α−1)} = 1 − (α−1)u + C(α, 2)u² − C(α + 1, 3)(1 + ξ)^{−(α+2)} u³: the last term
is negative for u > 0, and for −q < u < 0 it is at most C(α + 1, 3)(1 − q)^{−(α+2)} q u² (|u| < q); and
E[u²·1{u < 0}] ≤ q² min(1, E) (u² < q² there), which gives the second.
Finally F(μ, μ₀) ≤ (1 − q)F(μ₀, μ₀) + qF(μ₁, μ₀) and F(μ₀, μ) ≤ (1 − q) + qF(μ₀, μ₁) (joint convexity
again), both at most e^{(α−1)r(α)}: subsampling never costs more than the mechanism itself. A non-integer
order α is read at ⌈α⌉ (D_α does not decrease with α: van Erven–Harremoës 2014, IEEE Trans. Inf. Theory,
Thm 3). ∎

The addition bound is this library's (the published sampled-Gaussian analyses bound the other direction
by the removal one); it is tested against numerical integration of both directions for the continuous
Gaussian (``tests/accounting/test_rdp_subsample.py``). For DP-SGD's step (σ = 1, q = 0.01) it is the
larger bound at order 2 only, 0.6% above A_2 − 1, and from order 3 on the curve reads A_α, the exact
removal value.

Examples:
    >>> from fractions import Fraction
    >>> curve = subsampled_zcdp_to_renyi(Fraction(1, 2), Fraction(1, 100), (Fraction(2), Fraction(10)))
    >>> [round(float(e), 6) for e in curve]  # σ = 1 (ρ = 1/2), q = 0.01: DP-SGD's step
    [0.000173, 0.03827]
"""

from __future__ import annotations

import functools
import math
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

__all__ = ["RUNNER_UP_ORDERS", "subsampled_renyi", "subsampled_zcdp_to_renyi"]

_MAX_ORDER = 4096  # (an order beyond this costs seconds of exact sums; the usual grids stop at 256)

RUNNER_UP_ORDERS: tuple[Fraction, ...] = tuple(
    sorted({Fraction(a) for a in ("1.25", "1.5", "1.75", "2.5")} | {Fraction(a) for a in range(2, 65)}
           | {Fraction(a) for a in (72, 80, 96, 112, 128, 160, 192, 224, 256)})
)
"""The orders the Rényi runner-up (the composition policy's ``renyi`` candidate for children with pairs,
and the account command) reads: every integer to 64, then sparser to 256. Subsampled curves are exact
sums at integer orders only (a non-integer order reads the next integer), and the best order of a long
DP-SGD run often falls between the points of ``DEFAULT_ORDERS`` (10⁵ steps at q = 1e-4, σ = 0.8: order
11, ε 1.0695 here against 1.1928 on ``DEFAULT_ORDERS``)."""


def subsampled_renyi(
    base: Callable[[int], Number], q: Number, orders: Sequence[Number]
) -> tuple[Fraction, ...]:
    """Upper bounds on the Rényi-DP curve, at each order, of a mechanism run on a Poisson subsample.

    ``base(j)`` must bound the mechanism's own Rényi divergence at integer order ``j`` ≥ 2 in both
    directions between add/remove neighbours; the result at order α is ``min(base(α) (read at ⌈α⌉ where
    α is not an integer), ln max(A_α, B_α)/(α − 1))`` with A_α and B_α of the module docstring, every
    irrational step rounded up.

    Source: the module docstring's proof (the removal sum as in Mironov–Talwar–Zhang 2019, arXiv:1908.10530,
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
    rate = nonnegative(q, "q")
    if rate > 1:
        raise InvalidParameter(f"q={q!r} must be in [0, 1]")
    alphas = check_orders(orders)
    for i, a in enumerate(alphas):
        if a > _MAX_ORDER:
            raise InvalidParameter(f"orders[{i}]={orders[i]!r} must be at most {_MAX_ORDER}")

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
            log_f = max(_log_removal(r, rate, alpha), _log_addition(r(2), rate, alpha))
            out.append(min(r(alpha), log_f / (alpha - 1)))
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
    return subsampled_renyi(lambda j: j * value, q, orders)


def _log_removal(base: Callable[[int], Fraction], q: Fraction, alpha: int) -> Fraction:
    """An upper bound on ln A_α (the removal sum)."""
    return _log_removal_cached(tuple(base(j) for j in range(2, alpha + 1)), q, alpha)


@functools.lru_cache(maxsize=512)
def _log_removal_cached(rs: tuple[Fraction, ...], q: Fraction, alpha: int) -> Fraction:
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


def _log_addition(r2: Fraction, q: Fraction, alpha: int) -> Fraction:
    """An upper bound on ln B_α (the lesser of the module docstring's two addition bounds), each as
    ln(1 + X) from an upper bound on ln X (e^{r(2)} − 1 < e^{r(2)} where the former overflows)."""
    if r2 == 0:
        return Fraction(0)
    spread = expm1_up(r2)
    log_e = Fraction(log_up(spread)) if spread < math.inf else r2
    log_q = Fraction(log_up(q))
    log_1mq = Fraction(log1p_down(-q))  # (a lower bound on ln(1 − q): only multiplied by −(α + 1) < 0)
    second = Fraction(log_up(math.comb(alpha, 2))) + 2 * log_q + log_e
    first = second - (alpha + 1) * log_1mq
    third = Fraction(log_up(math.comb(alpha + 1, 3))) + 3 * log_q - (alpha + 2) * log_1mq
    third += min(log_e, Fraction(0))
    top = max(second, third)  # ln(e^a + e^b) = top + ln(1 + e^{low − top})
    refined = top + Fraction(log1p_up(exp_up(min(second, third) - top)))
    return min(_log1p_of_exp(first), _log1p_of_exp(refined))
