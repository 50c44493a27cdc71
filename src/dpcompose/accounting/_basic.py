"""Basic, advanced and group composition.

All results are :class:`fractions.Fraction`; sums stay exact (in advanced composition, terms with more than
256 distinct denominators are each rounded up to a float first) and every irrational step is rounded up
(see :mod:`dpcompose.accounting._exact`). A δ that would reach 1 or more is reported as 1: the vacuous
guarantee, which is still true.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

from dpcompose._validation import check_positive_int
from dpcompose.accounting._common import ONE, ZERO, delta_list, epsilon_list, nonnegative, probability
from dpcompose.accounting._display import format_up
from dpcompose.accounting._exact import (
    EXACT_DISTINCT,
    Number,
    exact_sum,
    expm1_down,
    expm1_up,
    fraction_up,
    log1p_down,
    log_down,
    log_up,
    sqrt_up_q,
)
from dpcompose.errors import InvalidParameter

__all__ = ["EXACT_DENOMINATORS", "advanced", "advanced_drv", "advanced_kov", "basic", "group"]


def _cap(delta: Fraction) -> Fraction:
    return min(delta, ONE)


def basic(epsilons: Sequence[Number], deltas: Sequence[Number] | None = None) -> tuple[Fraction, Fraction]:
    """Basic sequential composition: ``(Σ εᵢ, Σ δᵢ)``, exact.

    Holds for adaptive sequential composition, and (Vadhan–Wang 2021 Thm 3.3 for pure, their Thm 1.8
    bound is never below this one's ε) for the ε part of concurrent composition.

    Source: Dwork, McSherry, Nissim, Smith 2006 (pure ε); Dwork, Kenthapadi, McSherry, Mironov, Naor
    2006 (approximate (ε, δ)); see Dwork–Roth 2014 Thm 3.16.

    Args:
        epsilons: the εᵢ ≥ 0 of the composed mechanisms.
        deltas: their δᵢ ∈ [0, 1) (``None``: all zero).

    Returns:
        ``(ε, δ)`` with δ capped at 1.

    Raises:
        InvalidParameter: a bad ε or δ, an empty list, or lists of different lengths.

    Examples:
        >>> basic([0.5, 0.25])
        (Fraction(3, 4), Fraction(0, 1))
        >>> from fractions import Fraction
        >>> basic([Fraction(1, 10)] * 10, [Fraction(1, 10**6)] * 10)
        (Fraction(1, 1), Fraction(1, 100000))
    """
    eps = epsilon_list(epsilons)
    dels = delta_list(deltas, len(eps))
    return exact_sum(eps), _cap(exact_sum(dels))


def group(epsilon: Number, delta: Number, k: int) -> tuple[Fraction, Fraction]:
    """Group privacy: an (ε, δ)-DP mechanism is ``(kε, δ·(e^{kε} − 1)/(e^ε − 1))``-DP for groups of k.

    The δ is ``Σ_{i<k} e^{iε} δ`` (``kδ`` when ε = 0), obtained by applying the (ε, δ) guarantee along a
    path of k neighbouring datasets.

    Source: Dwork–Roth 2014 Thm 2.2 (pure ``kε``); Vadhan–Wang 2021 §1.4 / Vadhan 2017 Lemma 2.2 for the
    approximate δ.

    Args:
        epsilon: ε ≥ 0 of the mechanism for one record.
        delta: its δ ∈ [0, 1).
        k: the group size, an integer ≥ 1.

    Returns:
        ``(kε, δ_k)``; δ_k is rounded up, and capped at 1.

    Raises:
        InvalidParameter: a bad ε, δ or k.

    Examples:
        >>> group(0.5, 0, 3)
        (Fraction(3, 2), Fraction(0, 1))
        >>> group(0, 0.001, 4)[1] == 4 * Fraction(0.001)
        True
        >>> float(group(1.0, 1e-6, 2)[1])  # δ(1 + e)
        3.718281828...e-06
    """
    eps = nonnegative(epsilon, "epsilon")
    dlt = probability(delta, "delta")
    k = check_positive_int(k, "k")
    if dlt == 0:
        return k * eps, ZERO
    if eps == 0:
        return ZERO, _cap(k * dlt)
    num = expm1_up(k * eps)
    den = expm1_down(eps)
    if not math.isfinite(num) or den <= 0:
        return k * eps, ONE
    return k * eps, _cap(dlt * Fraction(num) / Fraction(den))


def _advanced_inputs(
    epsilons: Sequence[Number], deltas: Sequence[Number] | None, delta_slack: Number
) -> tuple[list[Fraction], list[Fraction], Fraction]:
    eps = epsilon_list(epsilons)
    dels = delta_list(deltas, len(eps))
    slack = probability(delta_slack, "delta_slack")
    if slack == 0:
        raise InvalidParameter(f"delta_slack={delta_slack!r} must be positive (the bound has ln(1/δ′))")
    return eps, dels, slack


def advanced_drv(
    epsilons: Sequence[Number], deltas: Sequence[Number] | None, delta_slack: Number
) -> tuple[Fraction, Fraction]:
    """The Dwork–Rothblum–Vadhan advanced composition theorem (heterogeneous form).

    ``ε′ = √(2 Σ εᵢ² ln(1/δ′)) + Σ εᵢ(e^{εᵢ} − 1)`` and ``δ = Σ δᵢ + δ′``; for k equal εᵢ = ε the first
    term is ``ε√(2k ln(1/δ′))``. :func:`advanced` returns the best of this and KOV; this one is kept so
    the classical numbers can be reproduced.

    Source: Dwork, Rothblum, Vadhan 2010 Thm III.3 (Dwork–Roth 2014 Thm 3.20); the heterogeneous form is
    Kairouz–Oh–Viswanath 2015 §3.3 / Murtagh–Vadhan 2016.

    Examples:
        >>> eps, delta = advanced_drv([0.5] * 3, None, 0.1)
        >>> float(eps)
        2.83154300047...
        >>> float(advanced_drv([0.5] * 350, None, 0.1)[0])
        133.5998964576...
    """
    eps, dels, slack = _advanced_inputs(epsilons, deltas, delta_slack)
    for i, e in enumerate(eps):
        if not math.isfinite(expm1_up(e)):
            raise InvalidParameter(
                f"epsilons[{i}]={format_up(e)} is too large for the DRV bound (its term ε(e^ε − 1) exceeds "
                "every float); use advanced() or basic()"
            )
    sum_sq = _sum_up([e * e for e in eps])
    log_inv = Fraction(-log_down(slack))
    root = sqrt_up_q(2 * sum_sq * log_inv)
    drift = _sum_up([e * Fraction(expm1_up(e)) for e in eps if e])
    return root + drift, _cap(exact_sum(dels) + slack)


EXACT_DENOMINATORS = EXACT_DISTINCT
"""Sums of terms with up to this many distinct denominators are exact (:func:`_sum_up`)."""


def _sum_up(terms: list[Fraction]) -> Fraction:
    """Σ terms (non-negative), exactly where they have at most :data:`EXACT_DENOMINATORS` distinct
    denominators; past that, the exact sum of each term rounded up to the least float at or above it (kept
    exact where that is infinite): an upper bound, where the exact sum of thousands of distinct fractions
    has a denominator of millions of digits (advanced composition of 20,000 distinct ε took 177 s). Every
    bound of this module only rises with these sums, so they stay valid."""
    if len({t.denominator for t in terms}) > EXACT_DENOMINATORS:
        terms = [fraction_up(t) for t in terms]
    return exact_sum(terms)


def _tanh_half_up(e: Fraction) -> Fraction:
    # tanh(e/2) = (e^e − 1)/(e^e + 1) = expm1(e)/(expm1(e) + 2): increasing in expm1(e).
    m = expm1_up(e)
    if not math.isfinite(m):
        return ONE
    fm = Fraction(m)
    return min(ONE, fm / (fm + 2))


def advanced_kov(
    epsilons: Sequence[Number], deltas: Sequence[Number] | None, delta_slack: Number
) -> tuple[Fraction, Fraction]:
    """The Kairouz–Oh–Viswanath closed-form composition bound (Thm 3.4, heterogeneous Thm 3.5).

    With ``S = Σ εᵢ²`` and ``T = Σ εᵢ tanh(εᵢ/2)`` (``tanh(ε/2) = (e^ε − 1)/(e^ε + 1)``)::

        ε′ = min(Σ εᵢ,  T + √(2S ln(e + √S/δ′)),  T + √(2S ln(1/δ′)))
        δ  = 1 − (1 − δ′) Π (1 − δᵢ)

    Source: Kairouz, Oh, Viswanath 2015 (ICML; IEEE Trans. IT 2017) Thm 3.4 (homogeneous) and Thm 3.5
    (heterogeneous).

    Examples:
        >>> float(advanced_kov([0.1] * 100, None, 1e-6)[0])
        5.75610551933...
    """
    eps, dels, slack = _advanced_inputs(epsilons, deltas, delta_slack)
    total = _sum_up(eps)
    sum_sq = _sum_up([e * e for e in eps])
    drift = _sum_up([e * _tanh_half_up(e) for e in eps if e])
    log_inv = Fraction(-log_down(slack))
    third = drift + sqrt_up_q(2 * sum_sq * log_inv)
    inner = Fraction(math.nextafter(math.e, math.inf)) + sqrt_up_q(sum_sq) / slack
    second = drift + sqrt_up_q(2 * sum_sq * Fraction(log_up(inner)))
    eps_out = min(total, second, third)
    # δ = 1 − (1 − δ′)Π(1 − δᵢ), rounded up: Π(1 − δᵢ) is bounded below through Σ ln(1 − δᵢ).
    if all(d == 0 for d in dels):
        return eps_out, slack
    log_keep = math.fsum(log1p_down(-d) for d in dels)
    log_keep = math.nextafter(log_keep, -math.inf) if log_keep else log_keep
    lost = Fraction(-expm1_down(log_keep))  # ≥ 1 − Π(1 − δᵢ)
    return eps_out, _cap(1 - (1 - slack) * (1 - lost))


def advanced(
    epsilons: Sequence[Number], deltas: Sequence[Number] | None, delta_slack: Number
) -> tuple[Fraction, Fraction]:
    """Advanced composition: the better of Dwork–Rothblum–Vadhan 2010 and Kairouz–Oh–Viswanath 2015.

    Both bounds hold for k-fold *adaptive* composition of (εᵢ, δᵢ)-DP mechanisms with slack δ′. KOV's
    ε′ is never above DRV's (``tanh(ε/2) ≤ e^ε − 1``) and its δ is never above DRV's
    (``1 − (1−δ′)Π(1−δᵢ) ≤ Σδᵢ + δ′``), so in practice the KOV pair is returned; DRV is compared anyway
    and is available alone as :func:`advanced_drv`. For the least possible ε use
    :func:`~dpcompose.accounting.optimal_epsilon`.

    Source: Dwork, Rothblum, Vadhan 2010 Thm III.3; Kairouz, Oh, Viswanath 2015 Thm 3.4 / 3.5.

    Args:
        epsilons: the εᵢ ≥ 0.
        deltas: the δᵢ ∈ [0, 1) (``None``: all zero).
        delta_slack: δ′ ∈ (0, 1).

    Returns:
        ``(ε′, δ)``, rounded up.

    Raises:
        InvalidParameter: bad ε, δ or δ′, empty or mismatched lists.

    Examples:
        >>> eps, delta = advanced([0.5] * 3, None, 0.1)
        >>> eps  # for k = 3 the KOV bound's first term, Σ εᵢ, is the smallest
        Fraction(3, 2)
        >>> float(advanced([0.1] * 1000, None, 1e-6)[0])
        21.61841885...
    """
    kov = advanced_kov(epsilons, deltas, delta_slack)
    if any(not math.isfinite(expm1_up(e)) for e in epsilon_list(epsilons)):
        return kov  # DRV's drift term is beyond every float there, so KOV (never above it) is the answer
    drv = advanced_drv(epsilons, deltas, delta_slack)
    if kov[0] <= drv[0] and kov[1] <= drv[1]:
        return kov
    if drv[0] <= kov[0] and drv[1] <= kov[1]:
        return drv
    return kov if kov[0] <= drv[0] else drv
