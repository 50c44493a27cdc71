"""Randomized response: pure (k categories) and the approximate RR_(ε,δ) of Kairouz–Oh–Viswanath.

Both work on the *index* of the input's category in its :class:`~dpcompose.CategoricalDomain`: the input
is located once (exactly one category, by exact membership), the output index is chosen with integer
arithmetic on uniform integer draws, and the output is the domain's own category object (or a label
made from it). So no output depends on the caller's representation of the value (``1`` vs ``1.0`` vs
``np.int64(1)``), and equality quirks such as NaN's cannot change the probabilities.

The probabilities are exact rationals built from a rational E with **1 ≤ E ≤ e^ε** (:func:`_exp_floor`)
in place of e^ε, so the real likelihood ratio E never exceeds the e^ε the map reports.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose._validation import check_finite_nonnegative, check_probability
from dpcompose.accounting import PrivacyLoss, exact, format_up
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
from dpcompose.core._recipe import recorded
from dpcompose.errors import DomainMismatch, InvalidParameter
from dpcompose.measurements import _noise

__all__ = ["make_randomized_response", "make_randomized_response_approx"]

#: ε above this is sampled with E = (a lower bound on) e^709, the largest power of e a float holds: the
#: probability of anything but the truth is then below 10^-307, and the real loss ln E ≤ 709 < ε.
_EPS_CAP = Fraction(709)


def _exp_floor(eps: Fraction) -> Fraction:
    """The rational E the samplers use in place of e^ε: **1 ≤ E ≤ e^ε**, for every ε ≥ 0.

    E = max(1, exp_down(min(ε, 709))). Proof: ``exp_down(x)`` is a lower bound on e^x (libm's exp is
    within one ulp and exp_down moves two ulps down), and x = min(ε, 709) ≤ ε with exp increasing, so
    exp_down(x) ≤ e^ε; and 1 = e^0 ≤ e^ε because ε ≥ 0. Hence both terms of the max are ≤ e^ε. The lower
    bound 1 matters: for ε below about 2.2e-16 (ε = 0 included), exp_down(ε) is a float just below 1,
    and E < 1 would make the *other* outputs more likely than the truth, a real loss ln(1/E) ≈ 2.2e-16
    while the map says ε. The cap keeps the float finite (e^709.8 overflows).
    """
    return max(Fraction(1), Fraction(exp_down(min(eps, _EPS_CAP))))


def _param_text(x: object) -> str:
    """A parameter as text for the node: its repr, or (an int or Fraction too long for ``repr``) its
    value rounded up."""
    try:
        return repr(x)
    except ValueError:  # Python refuses to print integers of more than 4300 digits
        return format_up(x)  # type: ignore[arg-type]


def _check_rr_input(input_domain: Domain, input_metric: Metric) -> CategoricalDomain:
    if not isinstance(input_domain, CategoricalDomain):
        raise DomainMismatch(
            f"input_domain={input_domain!r} must be a CategoricalDomain: randomized response releases "
            "one of its categories"
        )
    if not isinstance(input_metric, DiscreteDistance):
        raise DomainMismatch(
            f"input_metric={input_metric!r} must be DiscreteDistance() for randomized response"
        )
    return input_domain


@dataclass(frozen=True, slots=True)
class _KaryRR:
    """The sampler of k-RR with E = keep/other: one draw u uniform in [0, keep + (k − 1)·other).

    u < keep releases the input's own category; otherwise j = (u − keep) // other ∈ [0, k − 1) numbers
    the *other* categories in order, skipping the input's index. So Pr[own] = keep/total and every other
    category has Pr = other/total, exactly.
    """

    domain: CategoricalDomain
    keep: int
    other: int
    rng: np.random.Generator | None

    @property
    def total(self) -> int:
        return self.keep + (len(self.domain.categories) - 1) * self.other

    def __call__(self, value: Any) -> Hashable:
        i = self.domain.index(value)
        u = _noise.uniform_below(self.total, self.rng)
        if u < self.keep:
            return self.domain.categories[i]
        j = (u - self.keep) // self.other
        return self.domain.categories[j + (j >= i)]

    def distribution(self, i: int) -> dict[Hashable, Fraction]:
        """The exact output distribution on input index ``i`` (for audits and tests)."""
        cats = self.domain.categories
        return {c: Fraction(self.keep if j == i else self.other, self.total) for j, c in enumerate(cats)}


@dataclass(frozen=True, slots=True)
class _ApproxRR:
    """The sampler of RR_(ε,δ) on two categories with E = keep/other and δ = ``delta``.

    A first draw releases the label ``labels[i]`` with probability δ; otherwise a second draw u uniform
    in [0, keep + other) releases category i when u < keep and the other category when not.
    """

    domain: CategoricalDomain
    labels: tuple[str, str]
    delta: Fraction
    keep: int
    other: int
    rng: np.random.Generator | None

    def __call__(self, value: Any) -> Hashable:
        i = self.domain.index(value)
        if _noise.bernoulli(self.delta, self.rng):
            return self.labels[i]
        if _noise.uniform_below(self.keep + self.other, self.rng) < self.keep:
            return self.domain.categories[i]
        return self.domain.categories[1 - i]

    def distribution(self, i: int) -> dict[Hashable, Fraction]:
        """The exact output distribution on input index ``i`` (outputs that coincide are merged)."""
        rest, n = 1 - self.delta, self.keep + self.other
        out: dict[Hashable, Fraction] = {}
        for obj, p in (
            (self.labels[i], self.delta),
            (self.labels[1 - i], Fraction(0)),
            (self.domain.categories[i], rest * Fraction(self.keep, n)),
            (self.domain.categories[1 - i], rest * Fraction(self.other, n)),
        ):
            out[obj] = out.get(obj, Fraction(0)) + p
        return out


@recorded
def make_randomized_response(
    input_domain: Domain,
    input_metric: Metric,
    epsilon: float,
    *,
    rng: np.random.Generator | None = None,
) -> Measurement[Any, Any, int, Fraction]:
    """k-ary randomized response: report the true category with probability e^ε/(e^ε + k − 1), otherwise
    a uniformly chosen other category.

    The sampler uses a rational E with 1 ≤ E ≤ e^ε in place of e^ε (:func:`_exp_floor`; E < e^ε only by
    float rounding, or for ε > 709 where E ≈ e^709). On input category i it releases i with probability
    E/(E + k − 1) and each other category with probability 1/(E + k − 1), exactly (one integer draw).
    For two inputs i ≠ i′ the ratio of the probabilities of any output is E (output i), 1/E (output i′)
    or 1 (any other), so the real privacy loss is max(ln E, −ln E) = ln E ≤ ε, because E ≥ 1.

    The input is matched to exactly one category by :meth:`CategoricalDomain.index` (exact membership:
    ``1.0`` and ``True`` are not the category ``1``), and the output is always one of the domain's own
    category objects.

    Args:
        input_domain: ``CategoricalDomain(categories)`` with k ≥ 1 categories (one person's value).
        input_metric: ``DiscreteDistance()``.
        epsilon: ε ≥ 0 (any finite real: int, float, Fraction, numpy scalar; huge values are fine).
        rng: a numpy Generator for reproducible experiments only (not private); default: :mod:`secrets`.

    Raises:
        InvalidParameter: ε is negative, NaN, infinite, or not a real number (bool, str, None, Decimal).
        DomainMismatch: the domain is not a ``CategoricalDomain`` or the metric not ``DiscreteDistance``.

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
        >>> type(dp.m.make_randomized_response(
        ...     dp.CategoricalDomain([0, 1]), dp.DiscreteDistance(), epsilon=1.0)(1))
        <class 'int'>
    """
    check_finite_nonnegative(epsilon, "epsilon")
    domain = _check_rr_input(input_domain, input_metric)
    eps = exact(epsilon, "epsilon")
    k = len(domain.categories)
    e_low = _exp_floor(eps)
    sampler = _KaryRR(domain, e_low.numerator, e_low.denominator, rng)

    def privacy_map(d_in: int) -> Fraction:
        return eps if d_in >= 1 and k > 1 else Fraction(0)

    def loss(d_in: int) -> PrivacyLoss:
        if d_in >= 1 and k > 1:
            return PrivacyLoss.randomized_response(eps, k)  # E ≤ e^ε: a post-processing of RR with e^ε
        return PrivacyLoss.approx(0, 0)

    return Measurement(
        input_domain,
        input_metric,
        PureDP(),
        sampler,
        privacy_map,
        loss=loss,
        node=Node(
            "randomized_response",
            params=(("epsilon", _param_text(epsilon)), ("k", str(k))),
            source="Warner 1965; Kairouz–Oh–Viswanath 2016 (k-RR)",
        ),
    )


@recorded
def make_randomized_response_approx(
    input_domain: Domain,
    input_metric: Metric,
    epsilon: float,
    delta: float,
    *,
    rng: np.random.Generator | None = None,
) -> Measurement[Any, Any, int, tuple[Fraction, Fraction]]:
    """RR_(ε,δ) of Kairouz–Oh–Viswanath on a two-category domain {c0, c1}.

    On input category b it outputs the label ``f"Iam{c_b}"`` with probability δ, c_b with probability
    (1 − δ)·e^ε/(1 + e^ε), the other category with probability (1 − δ)/(1 + e^ε), and the other label
    never. Every (ε, δ)-DP mechanism on two inputs is a post-processing of it (KOV 2015 Thm 2.2), which
    is why Vadhan–Wang use it. The labels are made once from the *domain's* categories (``str`` of
    ``c0`` and ``c1``), so they do not depend on how the caller wrote the value.

    As in :func:`make_randomized_response`, e^ε is replaced by a rational E with 1 ≤ E ≤ e^ε. For the
    two inputs, any set S of outputs has Pr[S | b] ≤ E·Pr[S | b′] + δ: the label of b carries δ and
    probability 0 under b′, and the two categories have ratios E and 1/E ≤ E (E ≥ 1). So the mechanism
    is (ln E, δ)-DP with ln E ≤ ε, and δ is sampled exactly as reported. (If the two labels coincide —
    categories such as ``1`` and ``"1"`` — outputs merge, a post-processing, which only lowers the loss.)

    Args:
        input_domain: ``CategoricalDomain`` with exactly two categories (e.g. ``[0, 1]``).
        input_metric: ``DiscreteDistance()``.
        epsilon: ε ≥ 0.
        delta: δ ∈ [0, 1), read as its exact binary value (the probability really sampled).
        rng: a numpy Generator for reproducible experiments only (not private).

    Raises:
        InvalidParameter: a bad ε or δ (negative, NaN, infinite, δ ≥ 1, not a real number).
        DomainMismatch: not a two-category ``CategoricalDomain`` with ``DiscreteDistance()``.

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
    domain = _check_rr_input(input_domain, input_metric)
    categories = domain.categories
    if len(categories) != 2:
        raise DomainMismatch(f"RR_(ε,δ) needs exactly two categories, got {list(categories)!r}")
    eps, dlt = exact(epsilon, "epsilon"), exact(delta, "delta")
    e_low = _exp_floor(eps)
    try:
        labels = (f"Iam{categories[0]}", f"Iam{categories[1]}")
    except Exception as exc:
        raise InvalidParameter(
            f"the categories {list(categories)!r} cannot be made into labels: {exc}"
        ) from None
    sampler = _ApproxRR(domain, labels, dlt, e_low.numerator, e_low.denominator, rng)

    def privacy_map(d_in: int) -> tuple[Fraction, Fraction]:
        return (eps, dlt) if d_in >= 1 else (Fraction(0), Fraction(0))

    return Measurement(
        input_domain,
        input_metric,
        ApproxDP(),
        sampler,
        privacy_map,
        loss=lambda d_in: PrivacyLoss.approx(*privacy_map(d_in)),  # the pair RR_(ε,δ) itself (KOV 2015)
        node=Node(
            "randomized_response_approx",
            params=(("epsilon", _param_text(epsilon)), ("delta", _param_text(delta))),
            source="Kairouz–Oh–Viswanath 2015 Thm 2.2",
        ),
    )
