"""Partition selection in a table query (``group_by(..., keys=None)``): which noise selects the keys, what
each needs of the Context's budget, and the accounting of the Gaussian route.

``selection="laplace"`` (the default) is the discrete Laplace threshold of ``make_laplace_threshold``: every
released vector gets discrete Laplace noise and the ε's add (its map is in
:mod:`dpcompose.tables._table_query`). ``selection="gaussian"`` is the discrete Gaussian threshold of
``make_gaussian_threshold``, extended to every vector the query releases:

* the Context's ``(ε, δ)`` share is split as ``δ/2`` for the zCDP-to-(ε, δ) conversion (``noise_delta``)
  and ``δ/2`` for the threshold; ``ρ = zcdp_budget(ε, δ/2)`` is the largest ρ whose conversion at ``δ/2``
  is at most ε (Canonne–Kamath–Steinke 2020 Prop 12 / Cor 13), shared evenly by the released vectors
  (discrete Gaussian, L2 sensitivity ``R`` or ``R·M`` per unit, as in a ``ZCDP`` Context) and the
  quantiles (report-noisy-min with discrete Laplace noise at ``ε_q = √(2ρ_q)``, which is
  ``ε_q²/2 = ρ_q``-zCDP, Bun–Steinke 2016 Prop 1.4);
* the threshold ``T`` is the least with ``δ_T ≤ δ/2`` at ``(l0, l1, l∞)`` (``partition_threshold(...,
  noise="gaussian")``).

Privacy map at ``d_in = d``: keys counted in both neighbours release all their noisy vectors, a
post-processing (the threshold reads the noisy count) of the multivariate discrete Gaussian mechanism
(Canonne–Kamath–Steinke 2020 Thm 14) composed with the quantiles in zCDP (Bun–Steinke 2016 Lemma 2.3):
``ρ(d) = Σ ρ_i(d)``, converted to ``(zcdp_to_approx(ρ(d), δ/2), δ/2)``; keys counted in one neighbour only
are released with probability at most ``δ_T(d) = min(l0, l1)·d·P[Z ≥ T − l∞·d]``
(:func:`~dpcompose.measurements._threshold.gaussian_threshold_delta`, the threshold part of
``make_gaussian_threshold``'s map; Korolova et al. 2009, Wilson et al. 2020). The two parts add as in
``make_gaussian_threshold``: ``(ε(d), δ/2 + δ_T(d))``.

A ``ZCDP`` Context cannot select keys: the threshold's δ has no ρ (a key only the differing person holds
appears with a probability no Rényi divergence bounds), and this library has no approximate-zCDP measure
for a filter to charge. It is refused, naming ``dp.ApproxDP()`` with ``selection="gaussian"`` instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dpcompose.accounting import format_up, zcdp_budget, zcdp_to_approx
from dpcompose.core import ZCDP, ApproxDP, Measure
from dpcompose.errors import InvalidParameter

__all__ = ["SELECTIONS", "GaussianSelection", "check_selection", "read_selection"]

SELECTIONS = ("laplace", "gaussian")
_MARGIN = Fraction(1, 2**20)  # ρ is taken this much (relative) below zcdp_budget's: see GaussianSelection.of


def read_selection(selection: object) -> str:
    """``selection`` checked: ``"laplace"`` or ``"gaussian"``."""
    if not isinstance(selection, str) or selection not in SELECTIONS:
        raise InvalidParameter(
            f"selection={selection!r} must be 'laplace' (discrete Laplace threshold) or 'gaussian' (discrete "
            "Gaussian threshold)"
        )
    return selection


def check_selection(measure: Measure[Any], budget: Any) -> None:
    """Unknown keys need a δ: refuse other budgets before anything is built or spent."""
    if isinstance(measure, ZCDP):
        raise InvalidParameter(
            "group_by(..., keys=None) selects the keys privately (partition selection), which needs a δ that "
            "ρ-zCDP cannot express (there is no approximate-zCDP measure here): use Context(..., "
            "measure=dp.ApproxDP(), privacy_loss=(ε, δ)) with group_by(..., keys=None, "
            "selection='gaussian') for discrete Gaussian noise, or pass keys=[...]"
        )
    if not isinstance(measure, ApproxDP) or budget[1] <= 0:
        raise InvalidParameter(
            "group_by(..., keys=None) selects the keys privately (partition selection), which needs a δ: "
            "use Context(..., measure=dp.ApproxDP(), privacy_loss=(ε, δ)) with δ > 0, or pass keys=[...]"
        )


@dataclass(frozen=True)
class GaussianSelection:
    """The Gaussian route's split of an ``(ε, δ)`` share: ``rho`` for the noise of the whole query,
    ``noise_delta`` for its conversion to (ε, δ), ``threshold_delta`` the threshold's target δ."""

    rho: Fraction
    noise_delta: Fraction
    threshold_delta: Fraction

    @classmethod
    def of(cls, budget: tuple[Fraction, Fraction]) -> GaussianSelection:
        """Split ``(ε, δ)``: ``δ/2`` each, ``ρ = zcdp_budget(ε, δ/2)·(1 − 2⁻²⁰)`` (so that
        ``zcdp_to_approx(ρ, δ/2) ≤ ε``, Canonne–Kamath–Steinke 2020 Cor 13). The margin: the conversion is
        not proven monotone in ρ (its order α is a float optimiser's), so ρ is kept 2⁻²⁰ below the one
        ``zcdp_budget`` converted, far more than the optimiser's noise can move ε. :meth:`check` verifies
        the built query's cost against the budget all the same."""
        eps, delta = Fraction(budget[0]), Fraction(budget[1])
        half = delta / 2
        rho = zcdp_budget(eps, half) * (1 - _MARGIN)
        if rho <= 0:
            raise InvalidParameter(
                f"privacy_loss=({format_up(eps)}, {format_up(delta)}): no ρ > 0 converts to this ε at δ/2; "
                "give the query a larger ε"
            )
        return cls(rho, half, half)

    def cost(self, rhos: Sequence[Fraction], delta_t: Fraction) -> tuple[Fraction, Fraction]:
        """``(ε, δ)`` of the whole release: the vectors' and quantiles' ρ's added (Bun–Steinke 2016
        Lemma 2.3), converted at ``noise_delta`` (Canonne–Kamath–Steinke 2020 Cor 13), plus the threshold's
        ``delta_t`` (basic composition of the two parts, Dwork–Roth 2014 Thm 3.16, as in
        ``make_gaussian_threshold``). ``noise_delta`` is not spent when ρ = 0."""
        rho = sum(rhos, Fraction(0))
        if rho == 0:
            return Fraction(0), delta_t
        total = self.noise_delta + delta_t
        if total >= 1:
            raise InvalidParameter(
                f"the δ of this release would be {format_up(total)} ≥ 1, no guarantee at all; lower d_in"
            )
        return zcdp_to_approx(rho, self.noise_delta), total

    @staticmethod
    def check(cost: tuple[Fraction, Fraction], budget: tuple[Fraction, Fraction]) -> None:
        """Refuse (before anything is spent) a built query whose cost at ``d_in = 1`` exceeds its budget."""
        if cost[0] > budget[0] or cost[1] > budget[1]:
            raise InvalidParameter(
                f"selection='gaussian': the query would cost (ε={format_up(cost[0])}, "
                f"δ={format_up(cost[1])}), above its budget (ε={format_up(budget[0])}, "
                f"δ={format_up(budget[1])}); use selection='laplace' or a larger share"
            )
