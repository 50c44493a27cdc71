"""Concurrent composition of (ε, δ)-DP interactive mechanisms (Vadhan–Wang 2021)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from functools import cmp_to_key

from dpcompose.accounting._common import ONE, ZERO, delta_list, epsilon_list
from dpcompose.accounting._exact import (
    Number,
    exp_up,
    expm1_down,
    expm1_up,
    float_down,
    float_up,
    log_down,
    log_up,
)

__all__ = ["concurrent_vadhan_wang", "vadhan_wang_delta"]


def vadhan_wang_delta(
    epsilons: Sequence[Fraction], deltas: Sequence[Fraction], order: Sequence[int]
) -> Fraction:
    """``Σᵢ e^{Σ_{j<i} ε_σ(j)} δ_σ(i)`` for the order σ, rounded up and capped at 1.

    The exponent is an exact rational sum; each ``e^{…}`` is rounded up. Inputs are assumed validated.
    """
    total = ZERO
    prefix = ZERO
    for i in order:
        if deltas[i]:
            factor = exp_up(prefix)
            if not math.isfinite(factor):
                return ONE
            total += Fraction(factor) * deltas[i]
            if total >= 1:
                return ONE
        prefix += epsilons[i]
    return total


def concurrent_vadhan_wang(
    epsilons: Sequence[Number], deltas: Sequence[Number]
) -> tuple[Fraction, Fraction, tuple[int, ...]]:
    """Concurrent composition of interactive (εᵢ, δᵢ)-DP mechanisms, with the best order.

    The bound is ``(Σ εᵢ, min over orders σ of Σᵢ e^{Σ_{j<i} ε_σ(j)} δ_σ(i))``. The best σ is found by
    sorting, not by searching the k! orders:

    **Claim.** Sorting by the key ``(e^{εᵢ} − 1)/δᵢ`` ascending (``+∞`` when δᵢ = 0) minimises
    ``C(σ) = Σᵢ e^{Sᵢ} δ_σ(i)`` with ``Sᵢ = Σ_{j<i} ε_σ(j)``.

    *Proof (exchange argument).* Let a be immediately followed by b in σ, with S the sum of ε's before
    them, and let σ′ swap them. Every other term of C is unchanged (the terms before see the same prefix;
    the terms after see the prefix S + εa + εb either way). So
    ``C(σ) − C(σ′) = e^S [δa + e^{εa} δb − δb − e^{εb} δa] = e^S [(e^{εa} − 1) δb − (e^{εb} − 1) δa]``,
    which is ≤ 0 exactly when ``(e^{εa} − 1) δb ≤ (e^{εb} − 1) δa``, i.e. when key(a) ≤ key(b) (with
    the convention ``x/0 = +∞``; if δa = δb = 0 both terms vanish). Hence swapping an adjacent pair that
    is out of key order never increases C. Starting from an optimal order, bubble sort by key reaches the
    sorted order through such swaps only, so the sorted order is optimal too (ties in the key give equal
    cost, so any tie-break is optimal). ∎

    The comparison is done on the cross-multiplied form with float bounds on ``e^ε − 1``; where those
    bounds cannot separate two keys the tie-break is by index, which changes the cost by at most the
    float rounding of the key. The returned δ is evaluated exactly for the returned order (with e^x
    rounded up), so it is always a valid bound for that order.

    Source: Vadhan–Wang 2021 (TCC; arXiv 2105.14427), Thm 1.8 (concurrent composition of (ε, δ)-DP).

    Args:
        epsilons: the εᵢ ≥ 0.
        deltas: the δᵢ ∈ [0, 1).

    Returns:
        ``(ε, δ, order)``: ε = Σ εᵢ exactly, δ rounded up and capped at 1, and the order (a tuple of
        indices into the inputs) that attains δ.

    Raises:
        InvalidParameter: bad ε or δ, empty or mismatched lists.

    Examples:
        >>> eps, delta, order = concurrent_vadhan_wang([1.0, 0.5], [1e-6, 1e-6])
        >>> eps, order
        (Fraction(3, 2), (1, 0))
        >>> float(delta)  # 1e-6 + e^0.5 · 1e-6
        2.6487212707...e-06
    """
    eps = epsilon_list(epsilons)
    dels = delta_list(deltas, len(eps))
    gain_lo = [expm1_down(e) for e in eps]
    gain_hi = [expm1_up(e) for e in eps]

    def log_key(i: int) -> tuple[float, float]:
        # bounds on ln((e^ε − 1)/δ); for ε > 709, ln(e^ε − 1) lies in (ε − 2e^{−ε}, ε)
        lg_lo = log_down(gain_lo[i]) if math.isfinite(gain_lo[i]) else float_down(eps[i]) - 1e-300
        lg_hi = log_up(gain_hi[i]) if math.isfinite(gain_hi[i]) else float_up(eps[i])
        return lg_lo - log_up(dels[i]) - 1e-12, lg_hi - log_down(dels[i]) + 1e-12

    def compare(a: int, b: int) -> int:
        # key(a) < key(b)  ⇔  (e^{εa} − 1) δb < (e^{εb} − 1) δa
        da, db = dels[a], dels[b]
        if da == 0 and db == 0:
            return (a > b) - (a < b)
        if da == 0:
            return 1
        if db == 0:
            return -1
        if not all(math.isfinite(gain_hi[i]) for i in (a, b)):  # e^ε overflows: compare logarithms
            (a_lo, a_hi), (b_lo, b_hi) = log_key(a), log_key(b)
            if a_hi < b_lo:
                return -1
            if b_hi < a_lo:
                return 1
            return (a > b) - (a < b)
        if Fraction(gain_hi[a]) * db < Fraction(gain_lo[b]) * da:
            return -1
        if Fraction(gain_hi[b]) * da < Fraction(gain_lo[a]) * db:
            return 1
        return (a > b) - (a < b)

    order = tuple(sorted(range(len(eps)), key=cmp_to_key(compare)))
    return sum(eps, ZERO), vadhan_wang_delta(eps, dels, order), order
