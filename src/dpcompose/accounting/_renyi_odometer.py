"""The Rényi privacy odometer: an (ε, δ) bound on the privacy loss so far, valid at every moment.

An odometer reports, after any number of adaptively chosen queries, a bound on what has been spent so far,
and that report must hold at a moment the analyst chooses from the answers. Summing the queries' Rényi
curves and reading the sum as a Rényi (or zCDP) guarantee is *not* such a bound (Lécuyer 2021, arXiv
2103.01379, §4: an RDP filter is not an RDP odometer), nor is converting the sum to (ε, δ) at the order
that suits the data best: the odometer must pay for choosing when to read and at which order. The theorem
below pays by splitting δ over a grid of orders fixed in advance; it needs no grid of budgets.

**Theorem.** Let neighbours x, x′ (at the protected distance) be fixed and let an analyst, with its own
coins, issue queries one at a time, the i-th chosen from the view v₍<ᵢ₎ (earlier answers and coins), together
with its Rényi curve cᵢ(·) — so cᵢ is a function of v₍<ᵢ₎ — such that for every order α of a finite set A
(each α > 1), D_α(Pᵢ ‖ P′ᵢ) ≤ cᵢ(α), where Pᵢ, P′ᵢ are the laws of the i-th answer on x and x′ given v₍<ᵢ₎.
Write Sₙ(α) = Σ_{i ≤ n} cᵢ(α), Lₙ = ln (dP_x/dP_x′)(v₍≤ₙ₎) for the privacy loss of the first n answers, and
for δ ∈ (0, 1) fixed in advance

    εₙ = min_{α ∈ A} [ Sₙ(α) + ln(|A|/δ) / (α − 1) ].

Then (i) P_x[∃ n : Lₙ ≥ εₙ] ≤ δ; and (ii) for every stopping time τ (the analyst stops or reads whenever
it likes, from the view) and every event E of the stopped view v₍≤τ₎ on which ε_τ ≤ ε̂,
P_x(E) ≤ e^ε̂ · P_x′(E) + δ. So the reading (ε_τ, δ) is a valid (ε, δ) guarantee for everything released
up to the moment it is read, whenever that moment is.

*Proof.* (i) Fix α ∈ A. Let ℓᵢ = Lᵢ − Lᵢ₋₁ (the analyst's coins have the same law under x and x′ and cancel
from the ratio). Given v₍<ᵢ₎, E_x[e^{(α−1)ℓᵢ}] = ∫ Pᵢ^α P′ᵢ^{1−α} = e^{(α−1)D_α(Pᵢ‖P′ᵢ)} ≤ e^{(α−1)cᵢ(α)},
and cᵢ(α) is known given v₍<ᵢ₎. Hence Mₙ = exp((α − 1)(Lₙ − Sₙ(α))) satisfies E_x[Mₙ | v₍<ₙ₎] ≤ Mₙ₋₁: a
non-negative supermartingale with M₀ = 1 (the martingale of the proof of Feldman–Zrnic 2021, arXiv
2008.11193, Thm 4.3, the Rényi filter). Ville's maximal inequality (Ville 1939): for such a
supermartingale and η > 0, let N be the first n with Mₙ ≥ 1/η; optional stopping at the bounded time
N ∧ m gives P[N ≤ m]/η ≤ E[M_{N∧m}] ≤ M₀ = 1, and m → ∞ gives P[supₙ Mₙ ≥ 1/η] ≤ η. That is,
P_x[∃ n : Lₙ ≥ Sₙ(α) + ln(1/η)/(α − 1)] ≤ η. Take η = δ/|A| for every α ∈ A; the event
{Lₙ ≥ εₙ} is contained in the union over α of {Lₙ ≥ Sₙ(α) + ln(|A|/δ)/(α − 1)}, so the union bound
gives (i). (Where P_x puts mass the x′-law does not, Lₙ = +∞ and that mass lies in this event.)
(ii) Split E on G = {L_τ < ε_τ}: P_x(E ∩ G) = E_x′[1_{E∩G} e^{L_τ}] ≤ e^ε̂ P_x′(E) (the likelihood ratio
of the stopped view is e^{L_τ}, and L_τ < ε_τ ≤ ε̂ on E ∩ G), while P_x(E \\ G) ≤ P_x[∃ n: Lₙ ≥ εₙ] ≤ δ
by (i). ∎

What the odometer pays against a filter with the same final spending: δ is split over the |A| orders
(ln(|A|/δ) instead of ln(1/δ)), and the conversion is the Markov/Ville one, r + ln(1/δ)/(α − 1), not the
sharper Balle–Barthe–Gaboardi–Hsu–Sato 2020 Thm 21 a filter may use (that one bounds a fixed-budget
hockey-stick divergence, not a loss read at a random time). In exchange no budget is fixed in advance.
If every Sₙ is 0 nothing has been revealed (D_α = 0 forces Pᵢ = P′ᵢ: van Erven–Harremoës 2014 Thm 8),
and the reading is ε = 0.

Source: the theorem above, proved here; its supermartingale is that of Feldman–Zrnic 2021 Thm 4.3;
Ville's inequality makes it time-uniform; the odometer notion (a bound valid at every time, the stopping
time chosen by the analyst) is Rogers–Roth–Ullman–Vadhan 2016 (arXiv 1605.08294) §3 and
Whitehouse–Ramdas–Rogers–Wu 2023 (ICML; arXiv 2203.05481); Lécuyer 2021 §4 builds an RDP odometer from a
sequence of Rényi filters with the union cost over that sequence instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from dpcompose.accounting._common import ZERO, as_sequence, nonnegative, probability
from dpcompose.accounting._exact import fraction_up, log_up
from dpcompose.errors import InvalidParameter

__all__ = ["renyi_odometer_epsilon"]


def renyi_odometer_epsilon(orders: Sequence[Fraction], sums: Sequence[Fraction], delta: Fraction) -> Fraction:
    """The Rényi odometer's ε at ``delta``: ``min_α S(α) + ln(|A|/δ)/(α − 1)`` over the orders A, rounded up.

    ``sums`` are the running sums S(α) of the queries' Rényi curves at ``orders`` (each > 1); ``delta``
    must be the δ fixed before the first query. The result is an upper bound on the exact value: ln is
    rounded up (:func:`~dpcompose.accounting._exact.log_up`), the rest is exact rational arithmetic, and the
    minimum is rounded up to the least float ≥ it. 0 when every sum is 0 (nothing revealed).

    Source: the theorem of this module (Feldman–Zrnic 2021 Thm 4.3's supermartingale with Ville's
    inequality and a union bound over the orders), proved in the module docstring.

    Raises:
        InvalidParameter: an order ≤ 1, a negative sum, unequal lengths, no orders, or δ outside (0, 1).

    Examples:
        >>> from fractions import Fraction
        >>> a, s = [Fraction(2), Fraction(8)], [Fraction(1, 4), Fraction(1)]
        >>> e = renyi_odometer_epsilon(a, s, Fraction(1, 10**6))
        >>> 3.0 < float(e) < 3.1   # min(1/4 + ln(2e6), 1 + ln(2e6)/7) = 1 + 14.51/7
        True
    """
    alphas = as_sequence(orders, "orders")
    values = as_sequence(sums, "sums")
    if not alphas or len(alphas) != len(values):
        raise InvalidParameter(
            f"orders has {len(alphas)} values and sums {len(values)}; give one running sum per order (≥ 1)"
        )
    d = probability(delta, "delta")
    if d == 0:
        raise InvalidParameter(
            f"delta={delta!r} must be positive: the odometer's reading is an (ε, δ > 0) bound"
        )
    checked = []
    for i, (a, s) in enumerate(zip(alphas, values, strict=True)):
        alpha = nonnegative(a, f"orders[{i}]")
        if not alpha > 1:
            raise InvalidParameter(f"orders[{i}]={a!r} must be a Rényi order > 1")
        checked.append((alpha, nonnegative(s, f"sums[{i}]")))
    if all(s == 0 for _, s in checked):
        return ZERO
    log_term = Fraction(log_up(Fraction(len(checked)) / d))  # ln(|A|/δ), rounded up
    best = min(s + log_term / (alpha - 1) for alpha, s in checked)
    return fraction_up(best)
