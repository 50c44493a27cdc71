"""A Gaussian-DP filter: admit μᵢ-GDP queries, each μᵢ chosen after seeing earlier answers, while
Σμᵢ² ≤ μ²; the whole interaction is then μ-GDP.

μ-GDP (Dong–Roth–Su 2019, Def. 2.6) means a trade-off curve at least G_μ, the one of N(0, 1) against
N(μ, 1); as (ε, δ) it is the curve ``δ(ε) = Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2)`` for every ε ≥ 0
(Dong–Roth–Su 2019 Cor. 2.13), the Gaussian mechanism's exact profile (Balle–Wang 2018 Thm 8). With fixed
parameters, μᵢ-GDP mechanisms compose to √(Σμᵢ²)-GDP (Dong–Roth–Su 2019 Cor. 3.3); Smith–Thakurta 2022
("Fully adaptive composition for Gaussian differential privacy", arXiv:2210.17520) prove the same for a
fully adaptive analyst, who picks each mechanism *and its μᵢ* from the earlier answers: stopping once the
next query would take Σμᵢ² above μ² is a valid μ-GDP filter (their main theorem).

What is *not* here: a filter over general trade-off curves or privacy loss distributions. Composing the
queries' curves and stopping when the composite would cross the budget's curve — the natural f-DP filter —
is not valid in general (arXiv:2602.06756, "f-Differential privacy filters: validity and approximate
solutions"); only the Gaussian family, closed under composition in this one-parameter way, has the
theorem above. A Poisson-subsampled Gaussian is not μ-GDP for a μ near its real loss either; its filter is
the Rényi one (Feldman–Zrnic 2021) through its Rényi curve.

Costs are ``(μᵢ²,)``: exact rationals (μᵢ = Δ/σ of a Gaussian pair, squared), so the sum is exact, and
settled upward (:func:`~dpcompose.accounting._filters.settle`) only where a denominator grows.

Examples:
    >>> from fractions import Fraction
    >>> rule = GDPFilter(Fraction(1))  # μ = 1
    >>> rule.max_queries_like(rule.start(), (Fraction(1, 16),))  # σ = 4 per query: μᵢ² = 1/16
    16
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

from dpcompose.accounting._common import nonnegative
from dpcompose.accounting._display import format_excess
from dpcompose.accounting._filters import Cost, FilterRule, State, settle

__all__ = ["GDP_FILTER_SOURCE", "GDPFilter"]

GDP_FILTER_SOURCE = (
    "Smith–Thakurta 2022 (arXiv:2210.17520; fully adaptive composition of GDP: Σμᵢ² ≤ μ² is a μ-GDP "
    "filter); Dong–Roth–Su 2019 Cor. 2.13 (the (ε, δ) curve of μ-GDP)"
)


@dataclass(frozen=True)
class GDPFilter(FilterRule):
    """The Gaussian-DP filter: admit while Σμᵢ² ≤ μ² (``mu_sq`` = μ²); costs are ``(μᵢ²,)``.

    Source: Smith–Thakurta 2022 (arXiv:2210.17520), the fully adaptive composition theorem for GDP (the
    filter Σμᵢ² ≤ μ², the same parameters as non-adaptive composition, Dong–Roth–Su 2019 Cor. 3.3).

    Examples:
        >>> from fractions import Fraction
        >>> r = GDPFilter(Fraction(1, 2))
        >>> r.admit(r.start(), (Fraction(1, 4),)), r.admit((Fraction(1, 4),), (Fraction(1, 3),))
        ((Fraction(1, 4),), None)
    """

    name: ClassVar[str] = "gdp"
    source: ClassVar[str] = GDP_FILTER_SOURCE

    mu_sq: Fraction

    def __post_init__(self) -> None:
        object.__setattr__(self, "mu_sq", nonnegative(self.mu_sq, "mu_sq"))

    def start(self) -> State:
        return (Fraction(0),)

    def admit(self, state: State, cost: Cost) -> State | None:
        total = settle(state[0] + cost[0])
        return None if total > self.mu_sq else (total,)

    def _scaled(self, cost: Cost, k: int) -> Cost:
        return (k * cost[0],)

    def why_not(self, state: State, cost: Cost) -> str:
        total = settle(state[0] + cost[0])
        return "gdp rule: Σμ² would be {} > μ_g²={}".format(*format_excess(total, self.mu_sq))

    def remaining(self, state: State) -> dict[str, Fraction]:
        return {"mu_sq": max(Fraction(0), self.mu_sq - state[0])}

    def spent(self, state: State) -> dict[str, Fraction]:
        return {"mu_sq": state[0]}

    def describe(self) -> str:
        return f"gdp(mu_sq={self.mu_sq})"
