"""Casts between measures, group privacy, and post-processing of (interactive) measurements."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

from dpcompose._validation import check_callable, check_positive_int, check_probability
from dpcompose.accounting import (
    PrivacyProfile,
    decimal,
    group,
    group_zcdp,
    pure_to_zcdp,
    renyi_to_approx,
    zcdp_to_approx,
)
from dpcompose.accounting._filters import DEFAULT_ORDERS, check_orders, pure_cost_to_renyi
from dpcompose.combinators._policy import profile_lift, with_pair
from dpcompose.combinators._query_cost import renyi_at
from dpcompose.core import (
    ZCDP,
    ApproxDP,
    Measurement,
    Node,
    ProfileDP,
    PureDP,
    Queryable,
    RenyiCurve,
    RenyiDP,
)
from dpcompose.core._measurement import postprocess
from dpcompose.core._metrics import sized_symmetric
from dpcompose.core._recipe import recorded
from dpcompose.errors import DomainMismatch, InvalidParameter, UnsupportedComposition

__all__ = [
    "make_approx_to_profile",
    "make_fix_delta",
    "make_group",
    "make_loss_to_profile",
    "make_postprocess",
    "make_pure_to_approx",
    "make_pure_to_profile",
    "make_pure_to_renyi",
    "make_pure_to_zcdp",
    "make_renyi_to_approx",
    "make_zcdp_to_approx",
    "make_zcdp_to_profile",
    "make_zcdp_to_renyi",
    "wrap_queryable",
]

AnyMeasurement = Measurement[Any, Any, Any, Any]


def _cast(
    m: AnyMeasurement,
    measure: Any,
    privacy_map: Callable[[Any], Any],
    name: str,
    source: str,
    params: tuple[tuple[str, str], ...] = (),
    *,
    keep_loss: bool = True,
) -> AnyMeasurement:
    """``m`` read in another measure. The mechanism is the same, so its dominating pair at each d_in is
    kept (``keep_loss``), except where the cast changes what d_in counts (group privacy)."""
    return Measurement(
        m.input_domain,
        m.input_metric,
        measure,
        m.function,
        privacy_map,
        interactive=m.interactive,
        loss=m.loss if keep_loss else None,
        node=Node(name, params=params, source=source, theorem="cast", children=(m,)),
    )


def _profile_map(m: AnyMeasurement, lift: Callable[[Any], PrivacyProfile]) -> Callable[[Any], PrivacyProfile]:
    """The map ``d ↦ lift(m.map(d))``, with ``m``'s dominating pair at d attached where it has one (the
    profile then takes the least of both descriptions, so it is never above ``lift(m.map(d))``)."""

    def privacy_map(d: Any) -> PrivacyProfile:
        profile = lift(m.map(d))
        return with_pair(profile, m.loss(d) if m.loss is not None else None)

    return privacy_map


def _require(m: AnyMeasurement, measure_type: type, cast: str) -> None:
    if not isinstance(m, Measurement):
        raise InvalidParameter(f"{cast}: m={m!r} must be a Measurement")
    if not isinstance(m.output_measure, measure_type):
        raise DomainMismatch(
            f"{cast} needs a {measure_type.__name__}() measurement m, not one with {m.output_measure!r}"
        )


@recorded
def make_pure_to_zcdp(m: AnyMeasurement) -> AnyMeasurement:
    """View an ε-DP measurement as (ε²/2)-zCDP.

    Source: Bun–Steinke 2016 Prop. 1.4 (proved as Prop. 3.3).

    Examples:
        >>> import dpcompose as dp
        >>> lap = dp.m.make_laplace(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=2.0)
        >>> dp.make_pure_to_zcdp(lap).map(1)
        Fraction(1, 8)
    """
    _require(m, PureDP, "make_pure_to_zcdp")
    return _cast(m, ZCDP(), lambda d: pure_to_zcdp(m.map(d)), "pure_to_zcdp", "Bun–Steinke 2016 Prop. 1.4")


@recorded
def make_pure_to_approx(m: AnyMeasurement) -> AnyMeasurement:
    """View an ε-DP measurement as (ε, 0)-DP (a definition, no loss).

    Examples:
        >>> import dpcompose as dp
        >>> lap = dp.m.make_laplace(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=2.0)
        >>> dp.make_pure_to_approx(lap).map(1)
        (Fraction(1, 2), Fraction(0, 1))
    """
    _require(m, PureDP, "make_pure_to_approx")
    return _cast(
        m, ApproxDP(), lambda d: (m.map(d), Fraction(0)), "pure_to_approx", "definition: ε-DP is (ε, 0)-DP"
    )


@recorded
def make_zcdp_to_approx(m: AnyMeasurement, delta: float) -> AnyMeasurement:
    """View a ρ-zCDP measurement as (ε, δ)-DP with the least ε of the Canonne–Kamath–Steinke conversion.

    Source: Canonne–Kamath–Steinke 2020 Prop. 12 (never worse than Bun–Steinke 2016 Prop. 1.3).

    Examples:
        >>> import dpcompose as dp
        >>> g = dp.m.make_gaussian(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=4.0)
        >>> eps, delta = dp.make_zcdp_to_approx(g, 1e-6).map(1)
        >>> dp.accounting.format_up(eps), delta
        ('1.14293', Fraction(1, 1000000))
    """
    _require(m, ZCDP, "make_zcdp_to_approx")
    check_probability(delta, "delta")
    dq = decimal(delta, "delta")  # a target the user states: read as the decimal it prints as
    if dq == 0:
        raise InvalidParameter(f"delta={delta!r} must be positive: zCDP implies no finite ε at δ = 0")
    return _cast(
        m,
        ApproxDP(),
        lambda d: (zcdp_to_approx(m.map(d), dq), dq),
        "zcdp_to_approx",
        "Canonne–Kamath–Steinke 2020 Prop. 12",
        (("delta", repr(delta)),),
    )


@recorded
def make_pure_to_renyi(m: AnyMeasurement) -> AnyMeasurement:
    """View an ε-DP measurement as Rényi DP with the curve α ↦ min(ε, αε²/2).

    Source: Bun–Steinke 2016 Prop. 1.4 (ε-DP ⇒ ε²/2-zCDP, i.e. D_α ≤ αε²/2); van Erven–Harremoës 2014
    Thm. 3 (D_α is nondecreasing in α, so D_α ≤ D_∞ ≤ ε).

    Examples:
        >>> import dpcompose as dp
        >>> lap = dp.m.make_laplace(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=2.0)
        >>> curve = dp.make_pure_to_renyi(lap).map(1)
        >>> curve(2), curve(16)
        (Fraction(1, 4), Fraction(1, 2))
    """
    _require(m, PureDP, "make_pure_to_renyi")

    def privacy_map(d: Any) -> RenyiCurve:
        eps = Fraction(m.map(d))
        return RenyiCurve(lambda a: pure_cost_to_renyi(eps, (Fraction(a),))[0], f"min({eps}, α·{eps}²/2)")

    return _cast(m, RenyiDP(), privacy_map, "pure_to_renyi", "Bun–Steinke 2016 Prop. 1.4; D_α ≤ D_∞")


@recorded
def make_zcdp_to_renyi(m: AnyMeasurement) -> AnyMeasurement:
    """View a ρ-zCDP measurement as Rényi DP with the curve α ↦ αρ (the definition of zCDP).

    Source: Bun–Steinke 2016 Def. 1.1.

    Examples:
        >>> import dpcompose as dp
        >>> g = dp.m.make_gaussian(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=2.0)
        >>> dp.make_zcdp_to_renyi(g).map(1)(8)
        Fraction(1, 1)
    """
    _require(m, ZCDP, "make_zcdp_to_renyi")

    def privacy_map(d: Any) -> RenyiCurve:
        rho = Fraction(m.map(d))
        return RenyiCurve(lambda a: Fraction(a) * rho, f"α·{rho}")

    return _cast(m, RenyiDP(), privacy_map, "zcdp_to_renyi", "Bun–Steinke 2016 Def. 1.1")


@recorded
def make_renyi_to_approx(
    m: AnyMeasurement, delta: float, orders: Sequence[float | Fraction] | None = None
) -> AnyMeasurement:
    """View a Rényi-DP measurement as (ε, δ)-DP: the least ε of the conversion over ``orders``.

    The curve is evaluated at each order (default: the Rényi filter's grid 1.25 … 256; a Rényi filter built
    with other ``orders`` needs the same ones here) and the best order is used.

    Source: Balle, Barthe, Gaboardi, Hsu, Sato 2020 (AISTATS) Thm 21, via
    :func:`~dpcompose.accounting.renyi_to_approx`.

    Examples:
        >>> import dpcompose as dp
        >>> g = dp.m.make_gaussian(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=4.0)
        >>> eps, delta = dp.make_renyi_to_approx(dp.make_zcdp_to_renyi(g), 1e-6).map(1)
        >>> dp.accounting.format_up(eps), delta
        ('1.14317', Fraction(1, 1000000))
    """
    _require(m, RenyiDP, "make_renyi_to_approx")
    check_probability(delta, "delta")
    dq = decimal(delta, "delta")
    if dq == 0:
        raise InvalidParameter(
            f"delta={delta!r} must be positive: a Rényi guarantee implies no finite ε at δ = 0"
        )
    alphas = check_orders(DEFAULT_ORDERS if orders is None else orders)

    def privacy_map(d: Any) -> tuple[Fraction, Fraction]:
        curve = m.map(d)
        return renyi_to_approx(alphas, renyi_at(curve, alphas, "the Rényi curve"), dq), dq

    return _cast(
        m,
        ApproxDP(),
        privacy_map,
        "renyi_to_approx",
        "Balle–Barthe–Gaboardi–Hsu–Sato 2020 Thm 21",
        (("delta", repr(delta)),),
    )


@recorded
def make_pure_to_profile(m: AnyMeasurement) -> AnyMeasurement:
    """View an ε-DP measurement through its privacy profile (so it composes optimally with others).

    Where ``m`` reports a dominating pair (``m.privacy_loss(d)``: Laplace, randomized response, …) the
    profile carries it too, and compositions read it by the pairs' privacy loss distribution where that
    is tighter (never looser than the ε-DP profile alone).

    Source: Balle–Wang 2018 (privacy profiles); the ε-DP profile, KOV 2015 Thm 3.3 with k = 1; the pair,
    Zhu–Dong–Wang 2022 Thm 10.

    Examples:
        >>> import dpcompose as dp
        >>> lap = dp.m.make_laplace(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=10.0)
        >>> prof = dp.make_sequential(*[dp.make_pure_to_profile(lap)] * 100)
        >>> dp.accounting.format_up(prof.map(1).epsilon(1e-6))  # the optimal composition gives 4.77457
        '4.69267'
    """
    _require(m, PureDP, "make_pure_to_profile")
    return _cast(
        m,
        ProfileDP(),
        _profile_map(m, PrivacyProfile.pure),
        "pure_to_profile",
        "Balle–Wang 2018; pairs: Zhu–Dong–Wang 2022 Thm 10",
    )


@recorded
def make_approx_to_profile(m: AnyMeasurement) -> AnyMeasurement:
    """View an (ε, δ)-DP measurement through the profile of (ε, δ) randomized response (the worst case).

    Where ``m`` reports a dominating pair, the profile carries it too (as in :func:`make_pure_to_profile`).

    Source: Kairouz–Oh–Viswanath 2015 Thm 2.2/3.3; the pair, Zhu–Dong–Wang 2022 Thm 10.

    Examples:
        >>> import dpcompose as dp
        >>> rr = dp.m.make_randomized_response_approx(
        ...     dp.CategoricalDomain([0, 1]), dp.DiscreteDistance(), epsilon=1.0, delta=0.25)
        >>> dp.make_approx_to_profile(rr).map(1).delta(1)
        Fraction(1, 4)
    """
    _require(m, ApproxDP, "make_approx_to_profile")
    return _cast(
        m,
        ProfileDP(),
        _profile_map(m, lambda d: PrivacyProfile.approx(*d)),
        "approx_to_profile",
        "KOV 2015 Thm 3.3; pairs: Zhu–Dong–Wang 2022 Thm 10",
    )


@recorded
def make_zcdp_to_profile(m: AnyMeasurement) -> AnyMeasurement:
    """View a ρ-zCDP measurement through the profile its ρ implies.

    Where ``m`` reports a dominating pair (the scalar Gaussian mechanisms: the discrete Gaussian noise
    they add), the profile carries it too, and is read by its privacy loss distribution where that is
    tighter than ρ (never looser than the ρ profile alone).

    Source: Canonne–Kamath–Steinke 2020 Prop. 12; the pair, Zhu–Dong–Wang 2022 Thm 10.

    Examples:
        >>> import dpcompose as dp
        >>> g = dp.m.make_gaussian(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=4.0)
        >>> p = dp.make_zcdp_to_profile(g).map(1)
        >>> p
        PrivacyProfile(pairs=[discrete_gaussian(Δ=262144, σ=1048576)] (or zcdp ρ=0.03125))
        >>> p.epsilon(1e-6) < p.generic().epsilon(1e-6)  # the PLD beats ρ → (ε, δ)
        True
        >>> v = dp.m.make_gaussian(dp.VectorDomain(dp.AtomDomain(float), size=3), dp.L2Distance(), scale=4.0)
        >>> dp.make_zcdp_to_profile(v).map(1).loss  # the vector pair: Gaussian(μ′) ⊗ A(0, η)
        PrivacyLoss(approx(ε=0, δ=7.888609052210118e-31) + gaussian(Δ=0.25000165181287337, σ=1))
        >>> ints = dp.VectorDomain(dp.AtomDomain(int), size=3)
        >>> small = dp.m.make_gaussian(ints, dp.L2Distance(), scale=4.0)
        >>> dp.make_zcdp_to_profile(small).map(1)  # integer noise with σ = 4: no pair, ρ only
        PrivacyProfile(zcdp ρ=0.03125)
    """
    _require(m, ZCDP, "make_zcdp_to_profile")
    return _cast(
        m,
        ProfileDP(),
        _profile_map(m, PrivacyProfile.zcdp),
        "zcdp_to_profile",
        "CKS 2020 Prop. 12; pairs: Zhu–Dong–Wang 2022 Thm 10",
    )


@recorded
def make_loss_to_profile(m: AnyMeasurement) -> AnyMeasurement:
    """View any measurement that reports a dominating pair through the profile of that pair.

    At each ``d_in`` the profile is ``PrivacyProfile.from_loss(m.privacy_loss(d_in))``, read by the pair's
    certified privacy loss distribution; where ``m``'s own measure also has a profile (pure, (ε, δ), zCDP,
    or a profile already), that description is kept beside the pair and the least answer is taken (the
    same profile as :func:`make_pure_to_profile`, :func:`make_approx_to_profile`,
    :func:`make_zcdp_to_profile`). The other measures (Rényi DP, …) are read by the pair alone.

    Source: Zhu–Dong–Wang 2022 Def. 7 / Thm 10 (dominating pairs); the PLD's certificate
    (:class:`~dpcompose.accounting.PLD`).

    Raises:
        InvalidParameter: ``m`` is not a measurement.
        UnsupportedComposition: ``m`` reports no dominating pair at all (here), or none at the ``d_in`` its
            map is asked for (when the map is read).

    Examples:
        >>> import dpcompose as dp
        >>> rr = dp.m.make_randomized_response(
        ...     dp.CategoricalDomain([0, 1, 2, 3]), dp.DiscreteDistance(), epsilon=1.0)
        >>> renyi = dp.make_pure_to_renyi(rr)  # a Rényi measurement of the same mechanism
        >>> dp.make_loss_to_profile(renyi).map(1)
        PrivacyProfile(pairs=[randomized_response(ε=1, k=4)])
        >>> import numpy as np
        >>> vec = dp.m.make_laplace(dp.VectorDomain(dp.AtomDomain(float), size=2), dp.L1Distance(), scale=1.0,
        ...                         rng=np.random.default_rng(0))
        >>> dp.make_loss_to_profile(vec).map(1)  # continuous Laplace vectors: no pair
        Traceback (most recent call last):
        ...
        dpcompose.errors.UnsupportedComposition: make_loss_to_profile: m (laplace(...)) has no dominating ...
    """
    if not isinstance(m, Measurement):
        raise InvalidParameter(f"make_loss_to_profile: m={m!r} must be a Measurement")
    loss = m.loss
    if loss is None:
        raise UnsupportedComposition(
            f"make_loss_to_profile: m ({m.node.label()}) reports no dominating pair (privacy_loss is None "
            "at every d_in); use the cast of its measure instead (make_pure_to_profile, "
            "make_approx_to_profile, make_zcdp_to_profile)"
        )
    measure = m.output_measure
    lift: Callable[[Any], PrivacyProfile] | None = profile_lift(measure)

    def privacy_map(d: Any) -> PrivacyProfile:
        pair = loss(d)
        if pair is None:
            raise UnsupportedComposition(
                f"make_loss_to_profile: m ({m.node.label()}) has no dominating pair at d_in={d}"
            )
        if lift is None:
            return PrivacyProfile.from_loss(pair)
        return lift(m.map(d)).with_loss(pair)

    return _cast(
        m, ProfileDP(), privacy_map, "loss_to_profile", "Zhu–Dong–Wang 2022 Thm 10 (dominating pairs)"
    )


@recorded
def make_fix_delta(m: AnyMeasurement, delta: float) -> AnyMeasurement:
    """Fix δ on a profile measurement: (ε(δ), δ)-DP with the profile's least ε at ``delta``.

    ``delta`` is a target you state, read as the decimal it prints as. A profile carrying dominating pairs
    is read by their privacy loss distribution where that is tighter (:class:`PrivacyProfile`). The other
    direction — a profile to zCDP or pure DP — has no theorem and no cast: a profile does not bound ρ or
    a pure ε in general.

    Source: Balle–Wang 2018 (a profile is the family of its (ε, δ(ε)) guarantees).

    Examples:
        >>> import dpcompose as dp
        >>> lap = dp.m.make_laplace(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=10.0)
        >>> many = dp.make_sequential(*[dp.make_pure_to_profile(lap)] * 100)
        >>> eps, delta = dp.make_fix_delta(many, 1e-6).map(1)  # Laplace PLD; optimal composition: 4.77457
        >>> dp.accounting.format_up(eps), delta
        ('4.69267', Fraction(1, 1000000))
    """
    _require(m, ProfileDP, "make_fix_delta")
    check_probability(delta, "delta")
    dq = decimal(delta, "delta")
    return _cast(
        m,
        ApproxDP(),
        lambda d: (m.map(d).epsilon(dq), dq),
        "fix_delta",
        "Balle–Wang 2018",
        (("delta", repr(delta)),),
    )


@recorded
def make_group(m: AnyMeasurement, k: int) -> AnyMeasurement:
    """Group privacy: the guarantee of ``m`` for groups of ``k`` records, from its guarantee at d_in = 1.

    The result's ``d_in`` counts *groups*: ``make_group(m, k).map(d)`` bounds the loss between datasets
    differing in d groups of k records, derived only from ``m.map(1)`` along a path of k·d neighbours
    (use it when a mechanism's map is only proven at d_in = 1).

    Source: Dwork–Roth 2014 Thm 2.2 (pure, kε); Vadhan 2017 Lemma 2.2 ((ε, δ)); Bun–Steinke 2016
    Prop. 1.9 (zCDP, k²ρ).

    Examples:
        >>> import dpcompose as dp
        >>> lap = dp.m.make_laplace(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=2.0)
        >>> dp.make_group(lap, 3).map(1)
        Fraction(3, 2)
    """
    check_positive_int(k, "k")
    if not isinstance(m, Measurement):
        raise InvalidParameter(f"make_group: m={m!r} must be a Measurement")
    if sized_symmetric(m.input_domain, m.input_metric):
        raise DomainMismatch(
            f"make_group: {m.node.label()} takes datasets of one fixed size under SymmetricDistance(), where "
            "one record changed is d_in=2 and map(1) says nothing; build it on ChangeOneDistance() (one "
            "changed record is d_in=1), or ask the measurement itself for map(2·k·d)"
        )
    measure = m.output_measure

    def privacy_map(d: Any) -> Any:
        # ⌈d⌉ neighbouring steps of length ≤ 1 connect inputs d apart (truncating would under-report)
        size = k * math.ceil(d)
        if size == 0:
            return measure.zero()
        one = m.map(1)
        if isinstance(measure, PureDP):
            return size * one
        if isinstance(measure, ApproxDP):
            return group(one[0], one[1], size)
        if isinstance(measure, ZCDP):
            return group_zcdp(one, size)
        raise UnsupportedComposition(f"make_group: no group-privacy theorem is implemented for {measure!r}")

    return _cast(
        m,
        measure,
        privacy_map,
        "group",
        "Dwork–Roth 2014 Thm 2.2; Vadhan 2017 Lemma 2.2; Bun–Steinke 2016 Prop. 1.9",
        (("k", str(k)),),
        keep_loss=False,  # d_in counts groups here, and m's pair is not read along the k·d neighbours
    )


@recorded
def make_postprocess(m: AnyMeasurement, function: Callable[[Any], Any]) -> AnyMeasurement:
    """``m`` followed by a data-independent ``function`` (the same as ``m >> function``); map unchanged.

    For an interactive ``m`` the function receives the live :class:`~dpcompose.Queryable` and may return
    another one that rewrites queries and answers (see :func:`wrap_queryable`): interactive
    post-processing, which preserves every guarantee here.

    Source: Dwork–Roth 2014 Prop. 2.1; interactive: Vadhan–Wang 2021 §2 (interactive post-processing).

    Examples:
        >>> import dpcompose as dp
        >>> lap = dp.m.make_laplace(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=2.0)
        >>> rounded = dp.make_postprocess(lap, round)
        >>> rounded.map(1), isinstance(rounded(1.0), int)
        (Fraction(1, 2), True)
    """
    if not isinstance(m, Measurement):
        raise InvalidParameter(f"make_postprocess: m={m!r} must be a Measurement")
    if not callable(function):
        raise InvalidParameter(f"function={function!r} must be callable")
    return postprocess(m, function)


class _Wrapped(Queryable[Any, Any]):
    def __init__(
        self, inner: Queryable[Any, Any], query_map: Callable[[Any], Any], answer_map: Callable[[Any], Any]
    ) -> None:
        super().__init__(name=f"post-processed {inner.name}")
        self._inner, self._query_map, self._answer_map = inner, query_map, answer_map

    def _answer(self, query: Any) -> Any:
        return self._answer_map(self._inner(self._query_map(query)))


def wrap_queryable(
    inner: Queryable[Any, Any],
    query_map: Callable[[Any], Any] = lambda q: q,
    answer_map: Callable[[Any], Any] = lambda a: a,
) -> Queryable[Any, Any]:
    """A queryable that rewrites each query with ``query_map``, asks ``inner``, and rewrites the answer
    with ``answer_map`` — an interactive post-processing of ``inner`` (neither map sees the data).

    Examples:
        >>> import dpcompose as dp
        >>> ints = dp.VectorDomain(dp.AtomDomain(int))
        >>> svt = dp.m.make_sparse_vector(
        ...     ints, dp.SymmetricDistance(), threshold=1e6, scale=1.0, max_positive=1)
        >>> to_words = lambda a: "above" if a else "below"
        >>> words = dp.make_postprocess(svt, lambda q: dp.wrap_queryable(q, answer_map=to_words))
        >>> words(list(range(5)))(dp.t.make_count(ints, dp.SymmetricDistance()))
        'below'
    """
    if not isinstance(inner, Queryable):
        raise InvalidParameter(f"inner={inner!r} must be a Queryable")
    check_callable(query_map, "query_map")
    check_callable(answer_map, "answer_map")
    return _Wrapped(inner, query_map, answer_map)
