"""Randomized response: pure (k categories) and the approximate RR_(ε,δ) of Kairouz–Oh–Viswanath.

The output probabilities are exact rationals realised with integer draws only, chosen so that the real
likelihood ratio is e^ε′ with ε′ ≤ ε: the privacy map reports the ε asked for and never less than the
loss of what is really sampled.
"""

from __future__ import annotations

from collections.abc import Hashable
from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose._validation import check_finite_nonnegative, check_probability
from dpcompose.accounting import exact
from dpcompose.accounting._exact import exp_down
from dpcompose.core import (
    ApproxDP,
    CategoricalDomain,
    DiscreteDistance,
    Domain,
    Measurement,
    Metric,
    Node,
    PureDP,
)
from dpcompose.errors import DomainMismatch
from dpcompose.measurements import _noise

__all__ = ["make_randomized_response", "make_randomized_response_approx"]


def _check_rr_input(input_domain: Domain, input_metric: Metric) -> tuple[Hashable, ...]:
    if not isinstance(input_domain, CategoricalDomain):
        raise DomainMismatch(f"randomized response needs a CategoricalDomain, not {input_domain!r}")
    if not isinstance(input_metric, DiscreteDistance):
        raise DomainMismatch(f"randomized response needs DiscreteDistance(), not {input_metric!r}")
    return input_domain.categories


def make_randomized_response(
    input_domain: Domain,
    input_metric: Metric,
    epsilon: float,
    *,
    rng: np.random.Generator | None = None,
) -> Measurement[Any, Any, int, Fraction]:
    """k-ary randomized response: report the true category with probability e^ε/(e^ε + k − 1), otherwise
    a uniformly chosen other category.

    The sampled probabilities use a rational lower bound E ≤ e^ε in place of e^ε, so the real loss
    ln E never exceeds the reported ε.

    Args:
        input_domain: ``CategoricalDomain(categories)`` with k ≥ 1 categories (one person's value).
        input_metric: ``DiscreteDistance()``.
        epsilon: ε ≥ 0.
        rng: a numpy Generator for reproducible experiments only (not private); default: :mod:`secrets`.

    Source: Warner 1965; k-ary form and its ε, Kairouz–Oh–Viswanath 2016 ("Discrete distribution
    estimation under local privacy"), the k-RR mechanism.

    Examples:
        >>> import dpcompose as dp
        >>> rr = dp.m.make_randomized_response(
        ...     dp.CategoricalDomain(["a", "b", "c"]), dp.DiscreteDistance(), epsilon=1.0)
        >>> rr.map(1)
        Fraction(1, 1)
        >>> rr("a") in ("a", "b", "c")
        True
    """
    check_finite_nonnegative(epsilon, "epsilon")
    categories = _check_rr_input(input_domain, input_metric)
    eps = exact(epsilon, "epsilon")
    k = len(categories)
    e_low = Fraction(exp_down(eps))
    p_true = e_low / (e_low + k - 1)

    def run(value: Any) -> Any:
        if _noise.bernoulli(p_true, rng):
            return value
        others = [c for c in categories if c != value]
        return others[_noise.uniform_below(len(others), rng)]

    def privacy_map(d_in: int) -> Fraction:
        return eps if d_in >= 1 and k > 1 else Fraction(0)

    return Measurement(
        input_domain,
        input_metric,
        PureDP(),
        run,
        privacy_map,
        node=Node(
            "randomized_response",
            params=(("epsilon", repr(epsilon)), ("k", str(k))),
            source="Warner 1965; Kairouz–Oh–Viswanath 2016 (k-RR)",
        ),
    )


def make_randomized_response_approx(
    input_domain: Domain,
    input_metric: Metric,
    epsilon: float,
    delta: float,
    *,
    rng: np.random.Generator | None = None,
) -> Measurement[Any, Any, int, tuple[Fraction, Fraction]]:
    """RR_(ε,δ) of Kairouz–Oh–Viswanath on a two-category domain {c0, c1}.

    On input b it outputs ``f"Iam{b}"`` with probability δ, b with probability (1 − δ)·e^ε/(1 + e^ε),
    the other category with probability (1 − δ)/(1 + e^ε), and ``f"Iam{other}"`` never. Every (ε, δ)-DP
    mechanism on two inputs is a post-processing of it (KOV 2015 Thm 2.2), which is why Vadhan–Wang use it.
    Here e^ε is replaced by a rational lower bound, so the real loss never exceeds (ε, δ).

    Args:
        input_domain: ``CategoricalDomain`` with exactly two categories (e.g. ``[0, 1]``).
        input_metric: ``DiscreteDistance()``.
        epsilon: ε ≥ 0.
        delta: δ ∈ [0, 1).
        rng: a numpy Generator for reproducible experiments only (not private).

    Source: Kairouz–Oh–Viswanath 2015 ("The composition theorem for differential privacy"), Thm 2.2 and
    the mechanism of its Fig. 1; Vadhan–Wang 2021 §1.3.

    Examples:
        >>> import dpcompose as dp
        >>> rr = dp.m.make_randomized_response_approx(
        ...     dp.CategoricalDomain([0, 1]), dp.DiscreteDistance(), epsilon=1.0, delta=0.25)
        >>> rr.map(1)
        (Fraction(1, 1), Fraction(1, 4))
        >>> rr(0) in (0, 1, "Iam0")
        True
    """
    check_finite_nonnegative(epsilon, "epsilon")
    check_probability(delta, "delta")
    categories = _check_rr_input(input_domain, input_metric)
    if len(categories) != 2:
        raise DomainMismatch(f"RR_(ε,δ) needs exactly two categories, got {list(categories)!r}")
    eps, dlt = exact(epsilon, "epsilon"), exact(delta, "delta")
    e_low = Fraction(exp_down(eps))
    p_keep = e_low / (1 + e_low)

    def run(value: Any) -> Any:
        if _noise.bernoulli(dlt, rng):
            return f"Iam{value}"
        if _noise.bernoulli(p_keep, rng):
            return value
        return categories[1] if value == categories[0] else categories[0]

    def privacy_map(d_in: int) -> tuple[Fraction, Fraction]:
        return (eps, dlt) if d_in >= 1 else (Fraction(0), Fraction(0))

    return Measurement(
        input_domain,
        input_metric,
        ApproxDP(),
        run,
        privacy_map,
        node=Node(
            "randomized_response_approx",
            params=(("epsilon", repr(epsilon)), ("delta", repr(delta))),
            source="Kairouz–Oh–Viswanath 2015 Thm 2.2",
        ),
    )
