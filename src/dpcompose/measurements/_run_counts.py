"""Exact samplers for a random number of runs: the truncated negative binomial and the Poisson law.

Every draw is made of exact Bernoulli coins with rational probabilities (:func:`sample_bernoulli`), so
the law sampled is the law the accounting assumes, with no float inversion.
"""

from __future__ import annotations

import math
from fractions import Fraction

from dpcompose.accounting._selection import check_poisson_mean, check_tnb_parameters
from dpcompose.measurements._random import RandomSource
from dpcompose.measurements._sampling import sample_bernoulli

__all__ = ["sample_poisson", "sample_truncated_negative_binomial"]


def sample_truncated_negative_binomial(eta: Fraction, gamma: Fraction, source: RandomSource) -> int:
    """One draw of ``K ~ D_{η,γ}`` on ``{1, 2, …}``: ``P(K = k) ∝ (1 − γ)^k Γ(k + η) / k!``, exactly.

    Rejection from the truncated negative binomial with the integer parameter ``r = max(1, ⌈η⌉)``: with
    ``w_k = Π_{i=1}^{k−1} (i + η)/(i + r) ≤ 1`` (each factor is, as ``η ≤ r``), ``D_{η,γ}(k) ∝
    D_{r,γ}(k) · w_k``, so a proposal ``k`` is kept with probability ``w_k`` — ``k − 1`` exact coins.
    For ``r = 1`` the proposal is geometric, built one step at a time (stop with probability ``γ``), and an
    attempt ends at its first failed coin (the coins are independent, so their order does not matter).
    For ``r ≥ 2`` the proposal is the number of failures before the ``r``-th success of ``γ``-coins,
    redrawn while it is 0. ``η = 1`` is the geometric law (no rejection), ``η = 0`` the logarithmic.

    Examples:
        >>> from dpcompose.measurements._random import SeededSource
        >>> sample_truncated_negative_binomial(Fraction(1), Fraction(1, 2), SeededSource(0)) >= 1
        True
    """
    eta, gamma = check_tnb_parameters(eta, gamma)
    r = max(1, math.ceil(eta))
    if r == 1:
        while True:
            k = 1
            while True:
                if sample_bernoulli(gamma, source):
                    return k
                keep = (k + eta) / (k + 1)
                if keep < 1 and not sample_bernoulli(keep, source):
                    break  # rejected: start again (η = 1 keeps every k: no coin)
                k += 1
    while True:
        k, successes = 0, 0
        while successes < r:
            if sample_bernoulli(gamma, source):
                successes += 1
            else:
                k += 1
        if k == 0:
            continue
        if all(sample_bernoulli((i + eta) / (i + r), source) for i in range(1, k)):
            return k


def _poisson_small(p: Fraction, source: RandomSource) -> int:
    """``Poisson(p)`` for rational ``p ∈ (0, 1/2]``: propose ``k`` with probability ``(1 − p) p^k``
    (``p``-coins until one fails), keep it with probability ``1/k!`` (coins ``1/i``, ``i = 2..k``);
    the kept ``k`` has probability ∝ ``p^k / k!``."""
    while True:
        k = 0
        while sample_bernoulli(p, source):
            k += 1
        if all(sample_bernoulli(Fraction(1, i), source) for i in range(2, k + 1)):
            return k


def sample_poisson(mu: Fraction, source: RandomSource) -> int:
    """One draw of ``Poisson(μ)`` for a rational ``μ > 0``, exactly: the sum of ``n = ⌈2μ⌉`` independent
    ``Poisson(μ/n)`` draws (each ``μ/n ≤ 1/2``).

    Examples:
        >>> from dpcompose.measurements._random import SeededSource
        >>> sample_poisson(Fraction(3), SeededSource(0)) >= 0
        True
    """
    mu = check_poisson_mean(mu, "mu")
    n = max(1, math.ceil(2 * mu))
    p = mu / n
    return sum(_poisson_small(p, source) for _ in range(n))
