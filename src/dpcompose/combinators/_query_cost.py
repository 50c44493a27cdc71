"""What a query costs a filter or an odometer: its privacy parameters at ``d_in`` as the tuple the rules
read (:mod:`dpcompose.accounting._filters`), from its map or its dominating pair, and the GDP budget's μ².

Shared by :func:`~dpcompose.make_privacy_filter` and :func:`~dpcompose.make_odometer` (and the Rényi
casts' :func:`renyi_at`); nothing here runs a query or touches a ledger.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from dpcompose.accounting import PrivacyLoss, PrivacyProfile
from dpcompose.accounting._display import format_down, format_up
from dpcompose.accounting._filters import Cost, pure_cost_to_renyi, zcdp_cost_to_renyi
from dpcompose.accounting._zcdp import pure_to_zcdp
from dpcompose.combinators._adaptive import priced_cost
from dpcompose.core import ZCDP, ApproxDP, Measure, Measurement, ProfileDP, PureDP, RenyiCurve, RenyiDP
from dpcompose.errors import DomainMismatch, DPError, InvalidParameter, UnsupportedComposition

__all__ = ["AnyMeasurement", "gdp_budget", "largest_gdp_mu_sq", "query_cost", "renyi_at"]

AnyMeasurement = Measurement[Any, Any, Any, Any]


def query_cost(
    filter_measure: Measure[Any], query: AnyMeasurement, d_in: Any, orders: tuple[Fraction, ...] = ()
) -> tuple[Cost, str]:
    """A query's cost at ``d_in`` as the tuple the rules read, and as text in the query's own measure.

    A query must have the filter's measure, except that ε-DP queries are accepted everywhere: as (ε, 0)
    by an approximate-DP accountant (a definition) and as ε²/2 by a zCDP one (Bun–Steinke 2016 Prop 1.4);
    a Rényi accountant (``orders`` given) also takes zCDP queries, as αρ at each order (:mod:`its rules
    <dpcompose.accounting._filters>` cite why).
    """
    qm = query.output_measure
    renyi = isinstance(filter_measure, RenyiDP)
    if isinstance(filter_measure, ProfileDP):
        return gdp_cost(query, d_in)
    if renyi and not isinstance(qm, (RenyiDP, ZCDP, PureDP)):
        return pair_renyi_cost(query, d_in, orders)
    if not (
        qm == filter_measure
        or (isinstance(qm, PureDP) and isinstance(filter_measure, (ApproxDP, ZCDP, RenyiDP)))
        or (isinstance(qm, ZCDP) and renyi)
    ):
        also = "PureDP or ZCDP ones" if renyi else "PureDP ones"
        raise DomainMismatch(
            f"query {query.node.label()} is {qm!r}; this accountant takes {filter_measure!r} queries "
            f"(or {also}); cast it first (e.g. make_pure_to_approx, make_zcdp_to_approx)"
        )
    d = priced_cost(query, d_in)
    text = qm.display(d)
    if renyi:
        if isinstance(qm, PureDP):
            return pure_cost_to_renyi(Fraction(d), orders), text
        if isinstance(qm, ZCDP):
            return zcdp_cost_to_renyi(Fraction(d), orders), text
        return renyi_at(d, orders, f"query {query.node.label()}'s Rényi curve"), text
    if isinstance(qm, ApproxDP):
        return (d[0], d[1]), text
    if isinstance(filter_measure, ZCDP) and isinstance(qm, PureDP):
        return (pure_to_zcdp(d), Fraction(0)), text
    return (Fraction(d), Fraction(0)), text


def query_pair(query: AnyMeasurement, d_in: Any) -> PrivacyLoss | None:
    """The query's dominating pair at ``d_in`` (None: it reports none); a pair function that raises
    something other than a DPError is refused like a failing map (nothing run or spent)."""
    if query.loss is None:
        return None
    try:
        return query.privacy_loss(d_in)
    except DPError:
        raise
    except Exception as exc:
        raise InvalidParameter(
            f"query {query.node.label()}: its dominating pair raised {type(exc).__name__}: {exc}; "
            "nothing was run or spent"
        ) from exc


def pair_renyi_cost(query: AnyMeasurement, d_in: Any, orders: tuple[Fraction, ...]) -> tuple[Cost, str]:
    """A Rényi filter's cost for a query of another measure (a Poisson-subsampled step is ``ProfileDP``):
    the Rényi curve of its dominating pair at ``d_in`` at the filter's orders (:meth:`PrivacyLoss.renyi`).

    Valid: the pair dominates the query at ``d_in`` (its trade-off curve is at most the query's), so by
    data processing every Rényi divergence of the query is at most the pair's; with that curve as the
    query's (adaptively chosen) Rényi parameters, the Rényi filter theorem applies (Feldman–Zrnic 2021,
    arXiv:2008.11193, as :class:`~dpcompose.accounting.RenyiFilter`).
    """
    label = query.node.label()
    pair = query_pair(query, d_in)
    curve = pair.renyi(orders) if pair is not None else None  # (cached per pair by PrivacyLoss.renyi)
    if pair is None or curve is None:
        why, fix = _no_curve(pair, d_in)
        raise DomainMismatch(
            f"query {label} is {query.output_measure!r} and {why}; a Rényi filter or odometer takes RenyiDP "
            "queries (or PureDP or ZCDP ones), and queries whose pair has a Rényi curve (Gaussian, "
            "Laplace, randomized response, their Poisson-subsampled steps and compositions): "
            f"{fix}; nothing was run or spent"
        )
    return curve, f"the Rényi curve of {pair.label()}"


def _no_curve(pair: PrivacyLoss | None, d_in: Any) -> tuple[str, str]:
    """Why a query's pair gives no Rényi curve, and the fix for that case: sampling without replacement
    (subsample with Poisson sampling); an (ε, δ) part with δ > 0 beside a Poisson-subsampled step (the
    (0, η) flag of the secure vector Gaussian: build the step with ``accounting="renyi"``, its curve from
    the child's ρ); another (ε, δ) part (cast a zCDP or pure query to RenyiDP); no pair at all."""
    cast = "cast the query (e.g. make_pure_to_renyi, make_zcdp_to_renyi)"
    if pair is None:
        return f"reports no dominating pair at d_in={d_in}", f"{cast}, or subsample with method='poisson'"
    samplings = {str(p.params[1]) for p in _parts_of(pair) if p.kind == "subsampled"}
    flagged = any(p.kind == "approx" and Fraction(p.params[1]) > 0 for p in _parts_of(pair))
    if samplings - {"poisson"}:
        return (
            f"its pair {pair.label()} has no Rényi curve here (sampling without replacement)",
            f"subsample with method='poisson', or {cast}",
        )
    if flagged and samplings:
        return (
            f"its pair {pair.label()} has no Rényi curve here (its (ε, δ) part with δ > 0, such as the "
            "(0, η) flag of the Gaussian on a float vector)",
            "build the Poisson-subsampled step with dp.make_subsample(..., accounting='renyi'), whose "
            "RenyiDP map is the subsampled Rényi curve of its zCDP or Rényi mechanism (the Gaussian's ρ)",
        )
    return f"its pair {pair.label()} has no Rényi curve here (an (ε, δ) part with δ > 0)", cast


def _parts_of(pair: PrivacyLoss) -> list[PrivacyLoss]:
    """The pair and every part inside it, at any depth."""
    out = [pair]
    for part, _ in pair.parts:
        out.extend(_parts_of(part))
    return out


def _gdp_mu_sq(pair: PrivacyLoss) -> Fraction | None:
    """μ² of a pair that is a Gaussian or a composition of Gaussians (Dong–Roth–Su 2019 Cor. 3.3: μ's add
    in quadrature), else None."""
    if pair.kind == "gaussian":
        delta, sigma = (Fraction(v) for v in pair.params)
        return (delta / sigma) ** 2
    if pair.kind == "composed":
        total = Fraction(0)
        for part, n in pair.parts:
            mu_sq = _gdp_mu_sq(part)
            if mu_sq is None:
                return None
            total += n * mu_sq
        return total
    return None


def _has_kind(pair: PrivacyLoss, kind: str) -> bool:
    return any(part.kind == kind for part in _parts_of(pair))


def largest_gdp_mu_sq(epsilon: Fraction, delta: Fraction) -> Fraction:
    """The largest μ² on a dyadic grid (48 halvings) whose μ-GDP curve meets (ε, δ): δ_μ(ε) ≤ δ, read from
    the certified upper bound of the Gaussian profile (Balle–Wang 2018 Thm 8 = Dong–Roth–Su 2019 Cor. 2.13),
    so the μ returned meets the budget; 0 where none does (δ = 0)."""

    def meets(mu_sq: Fraction) -> bool:
        return PrivacyProfile(gaussian_mu_sq=mu_sq).delta(epsilon) <= delta

    lo, hi = Fraction(0), Fraction(1)
    while meets(hi):
        lo, hi = hi, hi * 2
        if hi > 2**40:
            return lo
    for _ in range(48):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if meets(mid) else (lo, mid)
    return lo


def gdp_budget(budget: PrivacyProfile) -> Fraction:
    """μ² of a GDP filter's budget: a profile of Gaussian mechanisms only (``gaussian_profile``, or
    ``PrivacyProfile(gaussian_mu_sq=μ²)``, or the profile of a Gaussian pair), or an (ε, δ) budget read as
    the largest μ whose curve meets it (:func:`largest_gdp_mu_sq`); any other profile is refused (a filter
    over general trade-off curves is not valid: arXiv:2602.06756)."""
    if len(budget.approx_parts) == 1 and budget == PrivacyProfile(approx_parts=budget.approx_parts):
        ((eps, delta),) = budget.approx_parts
        found = largest_gdp_mu_sq(eps, delta)
        if found == 0:
            raise InvalidParameter(
                f"d_out=(ε={format_down(eps)}, δ={format_down(delta)}): no μ-GDP guarantee meets it (δ = 0 "
                "needs μ = 0); give δ > 0"
            )
        return found
    # (a profile with a pair and a fallback means the smaller of the two curves: a μ read from the pair alone
    # could exceed what the budget allows, so such budgets are refused)
    only_gaussian = not budget.approx_parts and budget.rho == 0 and budget.loss_fallback is None
    mu_sq: Fraction | None = budget.gaussian_mu_sq
    if budget.loss is not None:
        from_pair = _gdp_mu_sq(budget.loss)
        mu_sq = None if from_pair is None else budget.gaussian_mu_sq + from_pair
    if not only_gaussian or mu_sq is None:
        raise UnsupportedComposition(
            f"d_out={budget!r}: a ProfileDP filter exists here only for a Gaussian-DP budget (μ-GDP, "
            "Smith–Thakurta 2022); a filter over general privacy profiles or PLDs — composing the queries' "
            "curves and stopping when the budget's would be crossed — is not a valid filter "
            "(arXiv:2602.06756). Pass d_out=dp.accounting.gaussian_profile(1, 1/μ) for a μ-GDP filter, or "
            "use a RenyiDP filter (its curve at chosen orders) or an ApproxDP one"
        )
    return mu_sq


def gdp_cost(query: AnyMeasurement, d_in: Any) -> tuple[Cost, str]:
    """A GDP filter's cost: μᵢ² of the query at ``d_in``, from its dominating pair (a Gaussian, or a
    composition of Gaussians: μ = Δ/σ, Dong–Roth–Su 2019 Cor. 3.3), or from a ``ProfileDP`` map that is a
    Gaussian profile alone. The pair dominates the query, so the query is μᵢ-GDP (a trade-off curve at
    least G_μᵢ). The discrete Gaussian is refused: Smith–Thakurta's theorem is for μ-GDP mechanisms, and
    the discrete Gaussian's trade-off curve is not proven to be at least G_{Δ/σ} here."""
    label = query.node.label()
    pair = query_pair(query, d_in)
    mu_sq = _gdp_mu_sq(pair) if pair is not None else None
    if mu_sq is None and pair is None and isinstance(query.output_measure, ProfileDP):
        profile = priced_cost(query, d_in)
        if not profile.approx_parts and profile.rho == 0 and profile.loss is None:
            mu_sq = profile.gaussian_mu_sq
    if mu_sq is None:
        if pair is not None and _has_kind(pair, "subsampled"):
            why = (
                f"its pair {pair.label()} is a subsampled step, which is not μ-GDP for a useful μ; use a "
                "RenyiDP filter, which charges its subsampled Rényi curve (Feldman–Zrnic 2021)"
            )
        elif pair is not None and _has_kind(pair, "discrete_gaussian"):
            why = (
                f"its pair {pair.label()} is a discrete Gaussian: Smith–Thakurta 2022 cover μ-GDP "
                "mechanisms, and the discrete Gaussian is not proven Δ/σ-GDP here. Use a RenyiDP filter "
                "(its Rényi curve αΔ²/2σ² is proven: Canonne–Kamath–Steinke 2020 Thm 4) or a ZCDP one"
            )
        elif pair is not None:
            why = f"its pair {pair.label()} is not a Gaussian: the GDP filter admits Gaussian steps only"
        else:
            why = (
                f"it reports no dominating pair at d_in={d_in}: the GDP filter admits Gaussian steps "
                "(a pair N(0, σ²) vs N(Δ, σ²)) only"
            )
        raise DomainMismatch(f"query {label}: {why}; nothing was run or spent")
    return (mu_sq,), f"μ²={format_up(mu_sq)}"


def renyi_at(curve: RenyiCurve, orders: tuple[Fraction, ...], what: str) -> tuple[Fraction, ...]:
    """A Rényi curve's values at ``orders``, each checked to be an exact finite number ≥ 0."""
    values = []
    for alpha in orders:
        v = curve(alpha)
        if not isinstance(v, (Fraction, int)) or isinstance(v, bool) or v < 0:
            raise InvalidParameter(
                f"{what} gave {v!r} at α={alpha}; a Rényi curve must return an exact Fraction ≥ 0"
            )
        values.append(Fraction(v))
    return tuple(values)
