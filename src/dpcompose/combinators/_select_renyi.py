"""Private selection under Rényi DP: the best of a random number of runs of zCDP or Rényi-DP candidates.

The number of runs ``K`` is drawn from a law given as a type — :class:`TruncatedNegativeBinomialRuns`
(``η = 0`` logarithmic, ``η = 1`` geometric, any ``η > −1``) or :class:`PoissonRuns` — each with its own
exact sampler and its own theorem (Papernot–Steinke 2022, "Hyperparameter tuning with Rényi differential
privacy", ICLR; arXiv:2110.03620v2: Theorem 2 and the Poisson theorem; see
:mod:`dpcompose.accounting._selection`).

Examples:
    >>> import dpcompose as dp
    >>> import numpy as np
    >>> g = dp.m.make_gaussian(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=4.0)  # ρ = 1/32
    >>> run = dp.make_postprocess(g, lambda y: (y, y))  # (score, output)
    >>> best = dp.make_private_selection_renyi(
    ...     [run], dp.TruncatedNegativeBinomialRuns(eta=0, stop_probability=0.1),
    ...     rng=np.random.default_rng(0))
    >>> curve = best.map(1)
    >>> round(float(curve(8)), 3)  # ε'(8): the candidate's ε(8) = 1/4, plus the selection's cost
    0.951
    >>> index, score, output = best(3.0)
    >>> index
    0
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose.accounting._exact import exact, log_down
from dpcompose.accounting._selection import (
    check_poisson_mean,
    check_tnb_parameters,
    renyi_delta_at,
    selection_renyi_poisson,
    tnb_log_mean_up,
    tnb_selection_bound,
)
from dpcompose.combinators._select import better_score, checked_candidates, ranked_run
from dpcompose.core import ZCDP, Measurement, Node, RenyiCurve, RenyiDP
from dpcompose.core._recipe import recorded
from dpcompose.errors import InvalidParameter
from dpcompose.measurements._random import RandomSource, caller_or_secure_source
from dpcompose.measurements._run_counts import sample_poisson, sample_truncated_negative_binomial
from dpcompose.measurements._sampling import randbelow

__all__ = ["PoissonRuns", "TruncatedNegativeBinomialRuns", "make_private_selection_renyi"]

#: The second orders λ̂ tried in Theorem 2 (the least bound over them is used), and the orders at which a
#: candidate's curve is converted to (ε̂, δ̂) for the Poisson theorem.
HAT_ORDERS: tuple[Fraction, ...] = (
    *(Fraction(a) for a in ("1", "5/4", "3/2")),
    *(Fraction(a) for a in (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 128, 256, 512, 1024)),
)

Curve = Callable[[Fraction], Fraction]


def _values_at(curve: Curve, orders: Sequence[Fraction]) -> list[tuple[Fraction, Fraction]]:
    """``(α, curve(α))`` at every order the curve answers (a curve may guarantee some orders only)."""
    out = []
    for a in orders:
        try:
            out.append((a, curve(a)))
        except InvalidParameter:
            continue
    return out


@dataclass(frozen=True)
class TruncatedNegativeBinomialRuns:
    """``K ~ D_{η,γ}`` on ``{1, 2, …}``: ``P(K = k) ∝ (1 − γ)^k Γ(k + η)/k!``.

    ``η = 0`` is the logarithmic law (mean ``(1 − γ)/(γ ln(1/γ))``), ``η = 1`` the geometric law (mean
    ``1/γ``). Smaller ``η`` costs less privacy for a heavier tail.

    Args:
        eta: ``η > −1`` (read as its exact binary value).
        stop_probability: ``γ ∈ (0, 1)``.
    """

    eta: float | Fraction
    stop_probability: float | Fraction

    def __post_init__(self) -> None:
        self.law()

    def law(self) -> tuple[Fraction, Fraction]:
        """``(η, γ)`` as exact rationals (:func:`~dpcompose.accounting._selection.check_tnb_parameters`)."""
        return check_tnb_parameters(self.eta, self.stop_probability, "stop_probability")

    def sample(self, source: RandomSource) -> int:
        """One exact draw of ``K``."""
        return sample_truncated_negative_binomial(*self.law(), source)

    def curve(self, candidate: Curve) -> RenyiCurve:
        """Theorem 2 of Papernot–Steinke 2022 at each order λ, with the least bound over ``HAT_ORDERS``."""
        eta, gamma = self.law()
        hats = [(Fraction(1), Fraction(0)), *_values_at(candidate, HAT_ORDERS[1:])]
        log_mean = tnb_log_mean_up(eta, gamma)
        bound = tnb_selection_bound(eta, gamma)

        def at(alpha: Any) -> Fraction:
            lam = exact(alpha, "alpha")
            return bound(lam, candidate(lam), hats)

        return RenyiCurve(
            at, f"PS22 Thm 2 (η={float(eta):g}, γ={float(gamma):g}, ln E[K] ≤ {float(log_mean):.4g})"
        )

    def label(self) -> str:
        return f"truncated negative binomial (η={self.eta}, γ={self.stop_probability})"


@dataclass(frozen=True)
class PoissonRuns:
    """``K ~ Poisson(μ)``; when ``K = 0`` nothing is run and the release is ``None``.

    Args:
        mean: ``μ > 0`` (read as its exact binary value).
    """

    mean: float | Fraction

    def __post_init__(self) -> None:
        check_poisson_mean(self.mean)

    def sample(self, source: RandomSource) -> int:
        """One exact draw of ``K``."""
        return sample_poisson(check_poisson_mean(self.mean), source)

    def curve(self, candidate: Curve) -> RenyiCurve:
        """The Poisson theorem at each order λ: ``ε̂ = ln(λ/(λ−1))`` rounded down and the candidate's δ̂ there
        from its own curve (Balle et al. 2020 Thm 21 over ``HAT_ORDERS``)."""
        mu = check_poisson_mean(self.mean)
        table = _values_at(candidate, HAT_ORDERS[1:])
        orders = [a for a, _ in table]
        values = [v for _, v in table]

        def at(alpha: Any) -> Fraction:
            lam = exact(alpha, "alpha")
            # e^ε̂ ≤ 1 + 1/(λ − 1); ε̂ = 0 meets it too (log_down may round below 0 at huge λ)
            eps_hat = max(Fraction(0), Fraction(log_down(lam / (lam - 1))))
            # (a curve that answers none of those orders gives δ̂ = 1, true of any mechanism)
            delta_hat = renyi_delta_at(eps_hat, orders, values) if orders else Fraction(1)
            return selection_renyi_poisson(lam, candidate(lam), delta_hat, mu)

        return RenyiCurve(at, f"PS22 Thm 6, K = 0 kept (μ={float(mu):g})")

    def label(self) -> str:
        return f"Poisson (μ={self.mean})"


Runs = TruncatedNegativeBinomialRuns | PoissonRuns


def _linear(rho: Fraction) -> Curve:
    """The Rényi curve ``α ↦ αρ`` of ρ-zCDP (Bun–Steinke 2016 Def. 1.1)."""

    def curve(alpha: Fraction) -> Fraction:
        return Fraction(alpha) * rho

    return curve


def _candidate_curve(children: Sequence[Measurement[Any, Any, Any, Any]], d_in: Any) -> Curve:
    """The pointwise largest of the candidates' Rényi curves at ``d_in`` (ρ-zCDP is the curve ``αρ``): the
    uniform mixture of the candidates is bounded by it, order by order (Rényi divergence is jointly
    quasi-convex, van Erven–Harremoës 2014 Thm 13)."""
    curves: list[Curve] = []
    for child in children:
        d = child.map(d_in)
        if isinstance(child.output_measure, ZCDP):
            rho = Fraction(d)
            curves.append(_linear(rho))
        else:
            curves.append(RenyiDP().parse(d))

    def worst(alpha: Fraction) -> Fraction:
        return max(Fraction(c(alpha)) for c in curves)

    return worst


@recorded
def make_private_selection_renyi(
    candidates: Sequence[Measurement[Any, Any, Any, Any]] | Measurement[Any, Any, Any, Any],
    runs: TruncatedNegativeBinomialRuns | PoissonRuns,
    *,
    rng: np.random.Generator | RandomSource | None = None,
) -> Measurement[Any, Any, Any, Any]:
    """Choose among zCDP or Rényi-DP candidates privately: the best of a random number of runs, as Rényi DP.

    Each candidate releases a ``(score, output)`` pair (higher is better). The result draws ``K`` from
    ``runs`` (exactly), then ``K`` times picks a candidate index ``j`` uniformly at random and runs it, and
    releases ``(j, score, output)`` of the highest-scoring run (the first on ties); ``K`` and the other runs
    are not released — but the release takes about ``K`` runs' time, and the guarantee assumes ``K`` is
    hidden: run it where its duration cannot be observed (``docs/security.md``). With :class:`PoissonRuns`,
    ``K = 0`` releases ``None``. A run whose output is not a pair with a real, non-NaN score ranks lowest
    (post-processing, never raised), as in :func:`~dpcompose.make_private_selection`. A candidate that
    raises breaks its own contract (a measurement never raises on data in its domain); the exception
    propagates, and its traceback holds the unreleased runs: keep candidates total.

    Privacy map: ``d_in ↦`` the curve ``λ ↦ ε'(λ)`` where ``ε(α) = max_j ε_j(α)`` is the largest candidate
    curve at ``d_in`` (``αρ`` for a ρ-zCDP candidate):

    * :class:`TruncatedNegativeBinomialRuns` (Papernot–Steinke 2022, Theorem 2):
      ``ε'(λ) = min_λ̂ [ε(λ) + (1 + η)(1 − 1/λ̂) ε(λ̂) + (1 + η) ln(1/γ)/λ̂] + ln E[K]/(λ − 1)`` over
      ``λ̂ ∈ HAT_ORDERS`` (1, 5/4, …, 1024; the orders the candidate's curve answers);
    * :class:`PoissonRuns` (their Poisson theorem, with the ``K = 0`` outcome kept):
      ``ε'(λ) = ln(e^(−μ) + μ e^((λ−1)(ε(λ) + μδ̂)))/(λ − 1)``, where ``δ̂`` is the candidate's δ at
      ``ε̂ = ln(λ/(λ−1))`` (rounded down, so ``e^ε̂ ≤ 1 + 1/(λ−1)`` as the theorem requires), computed from
      the candidate's own curve by the RDP → DP conversion of Balle et al. 2020 Thm 21 at ``HAT_ORDERS``.

    Every step is rounded up. The (ε, δ) of the result is :func:`~dpcompose.make_renyi_to_approx` of it
    (Papernot–Steinke's own route to approximate DP); candidates that are only (ε, δ)-DP are refused.

    Args:
        candidates: the candidate measurements (a list, or one measurement to repeat): same input domain
            and metric, ``ZCDP`` or ``RenyiDP``, non-interactive, each releasing ``(score, output)``.
        runs: the law of the number of runs: ``TruncatedNegativeBinomialRuns(eta, stop_probability)`` or
            ``PoissonRuns(mean)``.
        rng: a numpy Generator (or a ``RandomSource``) driving ``K`` and the choice of candidates
            reproducibly, for experiments only: NOT private. Default: the operating system's secure source.

    Returns:
        A ``RenyiDP`` measurement on the candidates' input domain and metric releasing
        ``(index, score, output)`` (or ``None`` when a Poisson ``K`` is 0).

    Raises:
        InvalidParameter: no candidates, a candidate that is not a measurement, or ``runs`` of another type
            (``eta ≤ −1``, ``stop_probability`` outside (0, 1) or ``mean ≤ 0`` are refused when the law
            is built).
        DomainMismatch: candidates with different input domains or metrics.
        UnsupportedComposition: a candidate that is not ``ZCDP`` or ``RenyiDP`` (a ``PureDP`` one: use
            :func:`~dpcompose.make_private_selection`, or cast it with
            :func:`~dpcompose.make_pure_to_renyi`; an ``ApproxDP`` one has no Rényi bound to use) or is
            interactive.

    Source: Papernot–Steinke 2022 (ICLR; arXiv:2110.03620v2), Theorem 2 (truncated negative binomial) and
    the Poisson theorem (Theorem 6 there; its ``K = 0`` term restored here); the mixture over candidates by
    joint quasi-convexity (van Erven–Harremoës 2014 Thm 13).

    Examples:
        >>> import dpcompose as dp
        >>> g = dp.m.make_gaussian(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=4.0)
        >>> run = dp.make_postprocess(g, lambda y: (y, y))
        >>> sel = dp.make_private_selection_renyi([run], dp.PoissonRuns(mean=5))
        >>> 0 < float(sel.map(1)(4)) < 2
        True
    """
    children = checked_candidates(
        candidates,
        "make_private_selection_renyi",
        (ZCDP, RenyiDP),
        ", with no Rényi bound to use: the Papernot–Steinke theorems need ZCDP or RenyiDP candidates (a "
        "PureDP one: use make_private_selection, or make_pure_to_renyi; an (ε, δ)-only candidate is not "
        "covered)",
    )
    if not isinstance(runs, (TruncatedNegativeBinomialRuns, PoissonRuns)):
        raise InvalidParameter(
            f"runs={runs!r}: pass dp.TruncatedNegativeBinomialRuns(eta, stop_probability) or "
            "dp.PoissonRuns(mean)"
        )
    first = children[0]
    source = caller_or_secure_source(rng)
    k = len(children)

    def function(data: Any) -> tuple[int, float | Fraction, Any] | None:
        count = runs.sample(source)
        best: tuple[int, float | Fraction, Any] | None = None
        for _ in range(count):
            j = randbelow(k, source)
            score, output = ranked_run(children[j].function(data))
            if best is None or better_score(score, best[1]):
                best = (j, score, output)
        return best

    def privacy_map(d_in: Any) -> RenyiCurve:
        return runs.curve(_candidate_curve(children, d_in))

    return Measurement(
        first.input_domain,
        first.input_metric,
        RenyiDP(),
        function,
        privacy_map,
        node=Node(
            "private_selection_renyi",
            params=(("candidates", str(k)), ("runs", runs.label())),
            source="Papernot–Steinke 2022 Thm 2 (TNB) / Poisson theorem (K = 0 kept)",
            theorem="private selection under Rényi DP (best of a random number of runs)",
            children=children,
        ),
    )
