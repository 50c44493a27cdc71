"""The Rényi privacy odometer: a bound on the privacy loss so far, valid at every moment with probability
1 − δ, and the tighter reading that is valid for the decision to stop.

An odometer reports, after any number of adaptively chosen queries, a bound on what has been spent so far,
and that report must hold at a moment the analyst chooses from the answers. Summing the queries' Rényi
curves and reading the sum as a Rényi (or zCDP) guarantee is *not* such a bound (Lécuyer 2021, arXiv
2103.01379, §4: an RDP filter is not an RDP odometer), nor is converting the sum to (ε, δ) at the order
that suits the data best: the odometer must pay for choosing when to read and at which order. Both
theorems below pay by splitting δ over a grid of orders fixed in advance; neither needs a grid of budgets.

**Setting.** Let neighbours x, x′ (at the protected distance) be fixed and let an analyst, with its own
coins, issue queries one at a time, the i-th chosen from the view v₍<ᵢ₎ (earlier answers and coins) together
with its Rényi curve cᵢ(·) — so cᵢ is a function of v₍<ᵢ₎ — such that for every order α of a finite set A
(each α > 1, fixed in advance), D_α(Pᵢ ‖ P′ᵢ) ≤ cᵢ(α), where Pᵢ, P′ᵢ are the laws of the i-th answer on x
and x′ given v₍<ᵢ₎. Write Sₙ(α) = Σ_{i ≤ n} cᵢ(α), Lₙ = ln (dP_x/dP_x′)(v₍≤ₙ₎) for the privacy loss of the
first n answers, and let δ ∈ (0, 1) be fixed in advance.

**Theorem 1 (the odometer: a time-uniform bound on the loss).** With

    ε̄ₙ = min_{α ∈ A} [ Sₙ(α) + ln(|A|/δ)/(α − 1) ],

P_x( Lₙ ≤ ε̄ₙ for every n ) ≥ 1 − δ. This is the odometer of Rogers–Roth–Ullman–Vadhan 2016 (arXiv
1605.08294) and Whitehouse–Ramdas–Rogers–Wu 2023 (ICML; arXiv 2203.05481): a high-probability bound on the
privacy loss holding at every time at once, so at any time the analyst reads it.

*Proof.* (a) Fix α ∈ A. Let ℓᵢ = Lᵢ − Lᵢ₋₁ (the analyst's coins have the same law under x and x′ and
cancel from the ratio; cᵢ(α) < ∞ forces Pᵢ ≪ P′ᵢ, so Lᵢ is finite P_x-almost surely). Given v₍<ᵢ₎,
E_x[e^{(α−1)ℓᵢ}] = ∫ Pᵢ^α P′ᵢ^{1−α} = e^{(α−1)D_α(Pᵢ‖P′ᵢ)} ≤ e^{(α−1)cᵢ(α)}, and cᵢ(α) is known given
v₍<ᵢ₎; so M⁽ᵅ⁾ₙ = exp((α − 1)(Lₙ − Sₙ(α))) is a non-negative supermartingale under x with M⁽ᵅ⁾₀ = 1 — the
supermartingale of the proof of Feldman–Zrnic 2021 (arXiv 2008.11193) Thm 4.3, the Rényi filter.
(b) Ville's inequality (Ville 1939; a non-negative supermartingale M with M₀ = 1 has
P(supₙ Mₙ ≥ c) ≤ 1/c) at c = |A|/δ: with P_x-probability at least 1 − δ/|A|, for every n,
(α − 1)(Lₙ − Sₙ(α)) < ln(|A|/δ), i.e. Lₙ < Sₙ(α) + ln(|A|/δ)/(α − 1). (c) A union bound over the |A|
orders: with probability at least 1 − δ this holds for every n and every α ∈ A at once, hence Lₙ ≤ ε̄ₙ for
every n. ∎

It implies the guarantee of Theorem 2 for ε̄ (so stopping before ε̄ passes ε̂ is an (ε̂, δ) filter): for a
stopping time τ and an event E of v₍≤τ₎ on which ε̄_τ ≤ ε̂, let B be the event of probability ≤ δ where
some Lₙ > ε̄ₙ; on E ∖ B, L_τ ≤ ε̂, so P_x(E) ≤ P_x(B) + E_x′[1_{E∖B} e^{L_τ}] ≤ δ + e^ε̂ P_x′(E).

**Theorem 2 (the stopping reading: valid for the decision to stop, not a bound on the loss).** With

    εₙ = min_{α ∈ A} [ Sₙ(α) + ln((α − 1)/α) + (ln(|A|/δ) − ln α)/(α − 1) ],

the conversion of Balle–Barthe–Gaboardi–Hsu–Sato 2020 Thm 21 of the curve Sₙ at δ/|A| (always ≤ ε̄ₙ: the
two extra terms are negative), for every stopping time τ (the analyst stops whenever it likes, from the
view), every ε̂ ≥ 0 and every event E of the stopped view v₍≤τ₎ on which ε_τ ≤ ε̂:

    P_x(E) ≤ e^ε̂ · P_x′(E) + δ.

So every filter "stop before εₙ would pass ε̂" is (ε̂, δ)-DP, whatever ε̂ (take τ the moment it stops:
ε_τ ≤ ε̂ on every run). It is *not* a bound on the loss: Lₙ may exceed εₙ with probability above δ (one
ε = 1 randomized response read at δ = 1/2 over the default orders gives εₙ = 0.972 while L = 1 with
probability 0.73).

*Proof.* (a) as above, and optional stopping at the bounded times τ ∧ m gives E_x[M⁽ᵅ⁾_{τ∧m}] ≤ 1; Fatou's
lemma as m → ∞ gives E_x[M⁽ᵅ⁾_τ; τ < ∞] ≤ 1 (a stop happens at a finite time). (c) For y real,
(1 − e^{−y})₊ ≤ C_α e^{(α−1)y} with C_α = (1/α)(1 − 1/α)^{α−1}: for y ≤ 0 the left side is 0; for y > 0,
(1 − e^{−y}) e^{−(α−1)y} has derivative e^{−(α−1)y}(α e^{−y} − (α − 1)), so its maximum is at
e^{−y} = (α − 1)/α, where it equals C_α. (This is the step behind Thm 21 of Balle et al.)
(d) Let g_α = ln((α − 1)/α) + (ln(|A|/δ) − ln α)/(α − 1), so that C_α e^{−(α−1)g_α} = δ/|A|. Since
P_x′(E) ≥ E_x[1_E e^{−L_τ}] (mass of x′ outside x's support only adds),
P_x(E) − e^ε̂ P_x′(E) ≤ E_x[1_E (1 − e^{ε̂ − L_τ})₊]. On E some α* (depending on the view) has
S_τ(α*) + g_{α*} ≤ ε̂, so by (c), 1_E(1 − e^{ε̂ − L_τ})₊ ≤ (1 − e^{S_τ(α*) + g_{α*} − L_τ})₊ ≤
C_{α*} e^{(α*−1)(L_τ − S_τ(α*) − g_{α*})} ≤ Σ_{α∈A} C_α e^{−(α−1)g_α} M⁽ᵅ⁾_τ (every term is ≥ 0). Taking
expectations with (b): P_x(E) − e^ε̂ P_x′(E) ≤ Σ_{α∈A} δ/|A| = δ. ∎

What the odometer pays against a filter with the same final spending: δ/|A| in place of δ, that is
ln(|A|)/(α − 1) at the order that wins (18 default orders at α = 8: 0.41), and for Theorem 1 also the
terms ln((α − 1)/α) − ln α/(α − 1) of Balle et al.'s conversion. In exchange no budget is fixed in
advance. If every Sₙ is 0 nothing has been revealed (D_α = 0 forces Pᵢ = P′ᵢ: van Erven–Harremoës 2014
Thm 8; L = 0 surely) and both readings are ε = 0.

Source: the theorems above, proved here from Feldman–Zrnic 2021 Thm 4.3's supermartingale, Ville's
inequality (Ville 1939; the tool of Whitehouse et al. 2023's odometers) and the pointwise bound of
Balle–Barthe–Gaboardi–Hsu–Sato 2020 (AISTATS) Thm 21, each with a union over the orders; the odometer
notion (a high-probability bound on the loss at every time) is that of Rogers–Roth–Ullman–Vadhan 2016 (arXiv
1605.08294) and Whitehouse–Ramdas–Rogers–Wu 2023 (ICML; arXiv 2203.05481); Lécuyer 2021 §4 builds an RDP
odometer from a sequence of Rényi filters with a union over that sequence instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from dpcompose.accounting._common import ZERO, as_sequence, nonnegative, probability
from dpcompose.accounting._exact import log_up
from dpcompose.accounting._filters import check_orders
from dpcompose.accounting._zcdp import renyi_to_approx
from dpcompose.errors import InvalidParameter

__all__ = ["renyi_odometer_epsilon", "renyi_stopping_epsilon"]


def _checked(
    orders: Sequence[Fraction], sums: Sequence[Fraction], delta: Fraction
) -> tuple[list[Fraction], list[Fraction], Fraction]:
    """The orders, sums and δ as exact Fractions, each checked (see the functions' Raises)."""
    alphas = as_sequence(orders, "orders")
    values = as_sequence(sums, "sums")
    if len(alphas) != len(values):
        raise InvalidParameter(
            f"orders has {len(alphas)} values and sums {len(values)}; give one running sum per order"
        )
    d = probability(delta, "delta")
    if d == 0:
        raise InvalidParameter(f"delta={delta!r} must be positive: the odometer reads an (ε, δ > 0) bound")
    return list(check_orders(orders)), [nonnegative(s, f"sums[{i}]") for i, s in enumerate(values)], d


def renyi_odometer_epsilon(orders: Sequence[Fraction], sums: Sequence[Fraction], delta: Fraction) -> Fraction:
    """The Rényi odometer's ε at ``delta``: with probability ≥ 1 − δ the privacy loss stays below it at
    every time (Theorem 1 of this module).

    ``sums`` are the running sums S(α) of the queries' Rényi curves at ``orders`` (A, each > 1, fixed in
    advance); ``delta`` must be the δ fixed before the first query. Returns
    ``min_α S(α) + ln(|A|/δ)/(α − 1)``, rounded up; 0 when every sum is 0 (nothing revealed).

    Source: Theorem 1 of this module, proved in its docstring (Feldman–Zrnic 2021 Thm 4.3's
    supermartingale, Ville's inequality, a union over the orders): the odometer of
    Rogers–Roth–Ullman–Vadhan 2016 and Whitehouse–Ramdas–Rogers–Wu 2023.

    Raises:
        InvalidParameter: an order ≤ 1 or repeated, a negative sum, unequal lengths, no orders, or δ
            outside (0, 1).

    Examples:
        >>> from fractions import Fraction
        >>> a, s = [Fraction(2), Fraction(8)], [Fraction(1, 4), Fraction(1)]
        >>> e = renyi_odometer_epsilon(a, s, Fraction(1, 10**6))
        >>> 3.07 < float(e) < 3.08   # α = 8: 1 + ln(2·10⁶)/7
        True
    """
    alphas, values, d = _checked(orders, sums, delta)
    if all(s == 0 for s in values):
        return ZERO
    log_term = Fraction(log_up(len(alphas) / d))  # ≥ ln(|A|/δ)
    return min(s + log_term / (a - 1) for a, s in zip(alphas, values, strict=True))


def renyi_stopping_epsilon(orders: Sequence[Fraction], sums: Sequence[Fraction], delta: Fraction) -> Fraction:
    """The Rényi odometer's stopping ε at ``delta``: valid for the decision to stop (stopping before it
    passes any ε̂ is an (ε̂, δ) filter), *not* a bound on the privacy loss (Theorem 2 of this module).

    Returns ``min_α S(α) + ln((α − 1)/α) + (ln(|A|/δ) − ln α)/(α − 1)``, the Balle et al. conversion of the
    running sums at δ/|A| (:func:`~dpcompose.accounting.renyi_to_approx`), rounded up, never below 0; 0 when
    every sum is 0. Never above :func:`renyi_odometer_epsilon`. Arguments as there.

    Source: Theorem 2 of this module, proved in its docstring (Feldman–Zrnic 2021 Thm 4.3's
    supermartingale stopped, Balle–Barthe–Gaboardi–Hsu–Sato 2020 Thm 21's pointwise bound, a union over
    orders).

    Raises:
        InvalidParameter: as :func:`renyi_odometer_epsilon`.

    Examples:
        >>> from fractions import Fraction
        >>> a, s = [Fraction(2), Fraction(8)], [Fraction(1, 4), Fraction(1)]
        >>> e = renyi_stopping_epsilon(a, s, Fraction(1, 10**6))
        >>> 2.64 < float(e) < 2.65   # α = 8: 1 + ln(7/8) + (ln(2·10⁶) − ln 8)/7
        True
    """
    alphas, values, d = _checked(orders, sums, delta)
    if all(s == 0 for s in values):
        return ZERO
    return renyi_to_approx(alphas, values, d / len(alphas))
