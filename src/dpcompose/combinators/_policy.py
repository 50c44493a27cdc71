"""Which composition theorem a combinator applies: the tightest *proven* one for its situation.

The policy is data, not code paths: for the children's measures, the target measure and the interaction
(sequential or concurrent) it lists the candidate theorems that are proven to apply; ``theorem="auto"``
takes the one with the smallest result, and the others are kept as runners-up for ``dp.explain``.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import chain, repeat
from typing import Any

from dpcompose.accounting import (
    PrivacyLoss,
    PrivacyProfile,
    advanced,
    basic,
    concurrent_vadhan_wang,
    optimal_epsilon,
    pure_to_zcdp,
    zcdp_compose,
    zcdp_to_approx,
)
from dpcompose.accounting._exact import EXACT_DISTINCT, fraction_up
from dpcompose.accounting._filters import (
    add_renyi_curves,
    pure_cost_to_renyi,
    renyi_compose_epsilon,
    zcdp_cost_to_renyi,
)
from dpcompose.accounting._rdp import RUNNER_UP_ORDERS
from dpcompose.accounting._zcdp import renyi_to_approx
from dpcompose.core import ZCDP, ApproxDP, Measure, ProfileDP, PureDP, RenyiDP
from dpcompose.errors import InvalidParameter, UnsupportedComposition

__all__ = [
    "EXACT_DISTINCT",
    "THEOREMS",
    "Plan",
    "child_losses",
    "expand",
    "plan_composition",
    "profile_lift",
    "rounded_costs",
    "with_pair",
]

THEOREMS = ("auto", "basic", "vadhan-wang-2021", "advanced", "optimal", "zcdp", "renyi", "pld", "profile")

_SOURCES = {
    "basic": "Dwork–McSherry–Nissim–Smith 2006; Dwork et al. 2006",
    "vadhan-wang-2021": "Vadhan–Wang 2021 Thm 1.8 (optimal order)",
    "advanced": "Dwork–Rothblum–Vadhan 2010; Kairouz–Oh–Viswanath 2015 Thm 3.4/3.5",
    "optimal": "Kairouz–Oh–Viswanath 2015; Murtagh–Vadhan 2016",
    "zcdp": "Bun–Steinke 2016 Prop. 1.4 + Lemma 2.3; Canonne–Kamath–Steinke 2020",
    "renyi": "Mironov 2017 Prop. 1; Bun–Steinke 2016 Prop. 1.4; Balle–Barthe–Gaboardi–Hsu–Sato 2020 Thm 21",
    "pld": "the children's privacy loss distributions, composed (Zhu–Dong–Wang 2022 Thm 10)",
    "profile": "the children's privacy profiles composed (PrivacyProfile: pairs by Zhu–Dong–Wang 2022 "
    "Thm 10; KOV 2015 / Murtagh–Vadhan 2016, Dong–Roth–Su 2019, Bun–Steinke 2016 for the rest)",
    "generic": "profiles without pairs: KOV 2015 / Murtagh–Vadhan 2016 ((ε, δ)), Dong–Roth–Su 2019 "
    "(Gaussian), Bun–Steinke 2016 + Canonne–Kamath–Steinke 2020 (ρ), combined by the ε-split",
}
_CONCURRENT_SOURCES = {
    "basic": "Vadhan–Wang 2021 Thm 3.3 (pure); Vadhan–Zhang 2023 Thm 1.3 ((ε, δ))",
    "advanced": "Vadhan–Zhang 2023 Thm 1.3 (non-interactive theorems hold concurrently)",
    "optimal": "Vadhan–Zhang 2023 Thm 1.3 with Kairouz–Oh–Viswanath 2015 / Murtagh–Vadhan 2016",
    "zcdp": "Lyu 2022 Cor 1; Canonne–Kamath–Steinke 2020",
    "renyi": "Lyu 2022 Thm 2 (Rényi curves add concurrently); Balle–Barthe–Gaboardi–Hsu–Sato 2020 Thm 21",
    "pld": "the children's privacy loss distributions, composed; concurrently: Vadhan–Zhang 2023 Thm 1.3",
    "profile": "the children's privacy profiles composed; concurrently: Vadhan–Zhang 2023 Thm 1.3 (pairs, "
    "(ε, δ), Gaussian), Lyu 2022 Cor 1 (ρ)",
    "generic": "profiles without pairs; concurrently: Vadhan–Zhang 2023 Thm 1.3, Lyu 2022 Cor 1",
}

_PAIR_CURVES = "; pairs' curves: PrivacyLoss.renyi (subsampled: Mironov–Talwar–Zhang 2019 and a lemma)"

Losses = list[PrivacyLoss | None]


def expand(values: Sequence[Any], counts: Sequence[int]) -> list[Any]:
    """``values[i]`` repeated ``counts[i]`` times, in order (the children's list from their runs)."""
    return list(chain.from_iterable(map(repeat, values, counts)))


@dataclass(frozen=True)
class Plan:
    """The chosen composition: target measure, theorem name and source, and the function from the
    children's d_out list and their dominating pairs (:class:`PrivacyLoss`, or None) to the composite's
    d_out; ``runners_up`` evaluates every applicable theorem. Both take one entry per *run* of children
    (``counts``, given to :func:`plan_composition`: a run of n equal children is read once, as n copies)."""

    measure: Measure[Any]
    theorem: str
    source: str
    compose: Callable[[list[Any], Losses], Any]
    runners_up: Callable[[list[Any], Losses], tuple[tuple[str, Any], ...]]
    needs_losses: bool = False  # whether compose/runners_up read the children's pairs (the PLD candidate)


def profile_lift(measure: Measure[Any]) -> Callable[[Any], PrivacyProfile] | None:
    """How a distance of ``measure`` reads as a privacy profile, or None where no theorem gives one.

    Source: the ε-DP and (ε, δ)-DP profiles, Kairouz–Oh–Viswanath 2015 Thm 3.3 with k = 1; ρ-zCDP,
    Canonne–Kamath–Steinke 2020 Prop. 12.
    """
    if isinstance(measure, ProfileDP):
        return lambda d: d
    if isinstance(measure, PureDP):
        return PrivacyProfile.pure
    if isinstance(measure, ApproxDP):
        return lambda d: PrivacyProfile.approx(*d)
    if isinstance(measure, ZCDP):
        return PrivacyProfile.zcdp
    return None


def with_pair(profile: PrivacyProfile, pair: PrivacyLoss | None) -> PrivacyProfile:
    """``profile`` with the same mechanism's dominating pair attached (unchanged when ``pair`` is None)."""
    return profile if pair is None else profile.with_loss(pair)


def _lift(child: Measure[Any], target: Measure[Any]) -> Callable[[Any], Any]:
    if child == target:
        return lambda d: d
    if isinstance(child, PureDP) and isinstance(target, ApproxDP):
        return lambda d: (d, Fraction(0))
    if isinstance(child, PureDP) and isinstance(target, ZCDP):
        return pure_to_zcdp
    if isinstance(target, ProfileDP):
        lift = profile_lift(child)
        if lift is not None:
            return lift
    if isinstance(child, RenyiDP):
        if isinstance(target, (ZCDP, PureDP)):  # (a Rényi curve bounds no ρ and no pure ε in general)
            raise UnsupportedComposition(
                f"cannot lift a {child!r} child to {target!r}: no theorem turns a Rényi curve into "
                f"{'a ρ' if isinstance(target, ZCDP) else 'a pure ε'}; compose into ApproxDP instead: "
                "compose the RenyiDP children by themselves (their curves add: make_sequential without "
                "output_measure) and cast the result with make_renyi_to_approx(m, delta)"
            )
        raise UnsupportedComposition(
            f"cannot lift a {child!r} child to {target!r}: compose the RenyiDP children by themselves "
            "(their curves add: make_sequential without output_measure) and cast the result with "
            "make_renyi_to_approx(m, delta), or cast each child"
        )
    raise UnsupportedComposition(
        f"cannot lift a {child!r} child to {target!r}: use make_pure_to_zcdp, make_zcdp_to_approx, "
        "make_pure_to_profile or make_zcdp_to_profile on the children first"
    )


def _approx_candidates(
    concurrent: bool, delta: Fraction | None, all_pure: bool
) -> dict[str, Callable[[list[tuple[Fraction, Fraction]]], tuple[Fraction, Fraction] | None]]:
    """(ε, δ) candidates on lifted (ε, δ) children; each returns None where it does not apply."""

    def eps_deltas(ds: list[tuple[Fraction, Fraction]]) -> tuple[list[Fraction], list[Fraction]]:
        return [d[0] for d in ds], [d[1] for d in ds]

    def use_basic(ds: list[tuple[Fraction, Fraction]]) -> tuple[Fraction, Fraction] | None:
        e, d = basic(*eps_deltas(ds))
        if delta is None:
            return e, d
        return (e, delta) if d <= delta else None

    def use_vw(ds: list[tuple[Fraction, Fraction]]) -> tuple[Fraction, Fraction] | None:
        e, d, _ = concurrent_vadhan_wang(*eps_deltas(ds))
        if delta is None:
            return e, d
        return (e, delta) if d <= delta else None

    out: dict[str, Callable[[list[tuple[Fraction, Fraction]]], tuple[Fraction, Fraction] | None]] = {
        "basic": use_basic
    }
    if concurrent:
        out["vadhan-wang-2021"] = use_vw
    if delta is not None:

        def use_advanced(ds: list[tuple[Fraction, Fraction]]) -> tuple[Fraction, Fraction] | None:
            eps, dels = eps_deltas(ds)
            slack = delta - sum(dels, Fraction(0))
            if slack <= 0:
                return None
            e, _ = advanced(eps, dels, slack)
            return e, delta

        out["advanced"] = use_advanced

        def use_optimal(ds: list[tuple[Fraction, Fraction]]) -> tuple[Fraction, Fraction] | None:
            eps, dels = eps_deltas(ds)
            lost = 1 - _product(1 - d for d in dels)
            if lost > delta:
                return None
            return optimal_epsilon(eps, dels, delta), delta

        out["optimal"] = use_optimal
        if all_pure:

            def use_zcdp(ds: list[tuple[Fraction, Fraction]]) -> tuple[Fraction, Fraction] | None:
                if delta == 0:
                    return None
                rho = zcdp_compose([pure_to_zcdp(e) for e, _ in ds])
                return zcdp_to_approx(rho, delta), delta

            out["zcdp"] = use_zcdp
    return out


def rounded_costs(measures: Sequence[Measure[Any]], ds: list[Any]) -> list[Any]:
    """``ds`` (the children's d_out), each ε, δ and ρ of a pure, (ε, δ) or zCDP child rounded up to the least
    float at or above it, where more than :data:`EXACT_DISTINCT` of them are distinct; else ``ds`` itself.

    Why: exact sums of thousands of distinct fractions carry denominators of millions of digits (20,000
    Laplace scales 1 + i/1000: 177 s for advanced composition, over 700 s for the Rényi candidate); sums
    of floats' dyadic values stay short. Sound: an ε-DP mechanism is ε′-DP for every ε′ ≥ ε, an (ε, δ) one
    (ε′, δ′) for ε′ ≥ ε and δ′ ≥ δ, a ρ-zCDP one ρ′-zCDP for ρ′ ≥ ρ (each definition bounds the divergences
    by its parameter: Dwork–Roth 2014 Def. 2.4; Bun–Steinke 2016 Def. 1.1), so every theorem applied to the
    rounded costs bounds the composition of the children (never below its value on the exact ones).
    Costs beyond the float range, and a δ that would round to 1, are kept exact.
    """
    try:
        distinct = len(set(ds))
    except TypeError:  # (an unhashable d_out: a profile child's)
        return ds
    if distinct <= EXACT_DISTINCT:
        return ds
    return [_cost_up(m, d) for m, d in zip(measures, ds, strict=True)]


def _cost_up(measure: Measure[Any], d: Any) -> Any:
    """One child's cost rounded up to floats (:func:`rounded_costs`); other measures' unchanged."""
    if isinstance(measure, (PureDP, ZCDP)) and isinstance(d, Fraction):
        return fraction_up(d)
    if isinstance(measure, ApproxDP) and isinstance(d, tuple) and len(d) == 2:
        return fraction_up(d[0]), fraction_up(d[1], 1.0)
    return d


def _product(values: Iterable[Fraction]) -> Fraction:
    out = Fraction(1)
    for v in values:
        out *= v
    return out


def plan_composition(
    measures: Sequence[Measure[Any]],
    *,
    output_measure: Measure[Any] | None,
    theorem: str,
    delta: Any,
    concurrent: bool,
    counts: Sequence[int] | None = None,
) -> Plan:
    """Choose the theorem for composing children with these measures.

    ``counts``: the children come in runs, ``counts[i]`` equal children of ``measures[i]`` (default: one
    each); the plan's functions then take one d_out and one pair per run. Every theorem reads the same
    numbers as for the children listed one by one: lists are expanded where a theorem reads them, pairs and
    profiles composed as n copies (:meth:`PrivacyLoss.times`, :meth:`PrivacyProfile.times`).

    Raises:
        InvalidParameter: an unknown theorem name, or a bad ``delta``.
        UnsupportedComposition: no proven theorem covers the case, or the forced one does not apply.
    """
    if not isinstance(theorem, str) or theorem not in THEOREMS:
        raise InvalidParameter(f"theorem={theorem!r} must be one of {', '.join(THEOREMS)}")
    if output_measure is not None and not isinstance(output_measure, Measure):
        raise InvalidParameter(f"output_measure={output_measure!r} must be a Measure or None")
    runs = [1] * len(measures) if counts is None else list(counts)
    first = measures[0]
    if output_measure is None:
        for i, m in enumerate(measures):
            if m != first:
                raise UnsupportedComposition(
                    f"child 0 is {first!r} but child {sum(runs[:i])} is {m!r}; lift the children to one "
                    "measure (make_pure_to_zcdp, make_zcdp_to_approx, make_pure_to_profile, "
                    "make_zcdp_to_profile) or pass output_measure="
                )
        target = first
    else:
        target = output_measure
    delta_q: Fraction | None = None
    if delta is not None:
        if not isinstance(target, ApproxDP):
            raise InvalidParameter(
                f"delta= is a target for ApproxDP output, not for output_measure={target!r}"
            )
        delta_q = ApproxDP().parse((0, delta), "target")[1]  # (its message names "target delta=")
    sources = _CONCURRENT_SOURCES if concurrent else _SOURCES
    kind = "concurrent" if concurrent else "sequential"

    def single(name: str, fn: Callable[[list[Any]], Any]) -> Plan:
        if theorem not in ("auto", name):
            raise UnsupportedComposition(
                f"theorem={theorem!r} does not apply to {kind} composition of {target!r} children: "
                f"it needs ApproxDP output with a target delta= (pass output_measure=dp.ApproxDP(), delta=…)"
                if theorem in ("advanced", "optimal", "zcdp", "pld")
                else f"theorem={theorem!r} does not apply to {kind} composition of {target!r} children"
            )
        source = sources.get(name, _SOURCES.get(name, ""))
        return Plan(target, name, source, lambda ds, _losses: fn(ds), lambda ds, _losses: ())

    if isinstance(target, ProfileDP):
        return _profile_plan(measures, theorem, sources, kind, runs)

    if isinstance(target, ApproxDP):
        zcdp_children = [m for m in measures if isinstance(m, ZCDP)]
        profile_children = any(isinstance(m, ProfileDP) for m in measures)
        candidates: dict[str, Callable[[list[Any], Losses], tuple[Fraction, Fraction] | None]]
        if profile_children:
            if delta_q is None:
                raise UnsupportedComposition(
                    "ProfileDP children composed into ApproxDP need a target delta= (a profile is a curve "
                    "δ(ε); the composite is read at that δ)"
                )
            profile_lifts = [_lift(m, ProfileDP()) for m in measures]
            candidates = {
                "pld": _pld_candidate(measures, delta_q, runs),
                "profile": _profile_candidate(profile_lifts, delta_q, runs),
            }
            if delta_q > 0:  # (where every child has a Rényi curve: DP-SGD's subsampled Gaussians)
                candidates["renyi"] = _renyi_curves_candidate(measures, delta_q, runs)
                sources = {**sources, "renyi": sources.get("renyi", _SOURCES["renyi"]) + _PAIR_CURVES}
        elif zcdp_children:
            if delta_q is None or delta_q == 0:
                raise UnsupportedComposition(
                    "zCDP children composed into ApproxDP need a positive target delta= (zCDP has no finite "
                    "ε at δ = 0)"
                )
            dq = delta_q
            if not all(isinstance(m, (PureDP, ZCDP)) for m in measures):
                # an (ε, δ) child beside zCDP ones: no ρ and no Rényi curve for it (δ > 0 has none), but
                # every child has a profile, and a pair (its own, or RR_(ε,δ) for the (ε, δ) children)
                candidates = {
                    "pld": _pld_candidate(measures, dq, runs),
                    "profile": _profile_candidate([_lift(m, ProfileDP()) for m in measures], dq, runs),
                }
            else:
                candidates = _zcdp_candidates(measures, dq, runs)
        else:
            lifts = [_lift(m, target) for m in measures]
            all_pure = all(isinstance(m, PureDP) for m in measures)
            plain = _approx_candidates(concurrent, delta_q, all_pure)
            candidates = {n: _on_lifted(f, lifts, runs) for n, f in plain.items()}
            if all_pure and delta_q is not None and delta_q > 0:
                candidates["renyi"] = _renyi_candidate(measures, delta_q, runs)
            if delta_q is not None:
                candidates["pld"] = _pld_candidate(measures, delta_q, runs)

        if theorem != "auto" and theorem not in candidates:
            raise UnsupportedComposition(
                f"theorem={theorem!r} does not apply to {kind} composition of "
                f"{_children_kind(measures)} children"
                + (" without a target delta=" if delta_q is None else "")
                + f"; applicable: {', '.join(candidates)}"
            )
        names = list(candidates) if theorem == "auto" else [theorem]

        def run(
            chosen: list[str], ds: list[Any], losses: Losses, refusals: list[tuple[str, str]] | None = None
        ) -> list[tuple[str, tuple[Fraction, Fraction]]]:
            results = []
            ds = rounded_costs(measures, ds)
            for name in chosen:
                try:
                    value = candidates[name](ds, losses)
                except _Refused as exc:  # (a candidate that applies but cannot certify: why, for the error)
                    value = None
                    if refusals is not None:
                        refusals.append((name, str(exc)))
                if value is not None:
                    results.append((name, value))
            return results

        def evaluate(
            ds: list[Any], losses: Losses, refusals: list[tuple[str, str]]
        ) -> list[tuple[str, tuple[Fraction, Fraction]]]:
            return run(list(candidates), ds, losses, refusals)

        def compose(ds: list[Any], losses: Losses) -> tuple[Fraction, Fraction]:
            refusals: list[tuple[str, str]] = []
            results = run(names, ds, losses, refusals)
            if not results:
                why = (
                    "a child has no privacy loss distribution"
                    if names == ["pld"]
                    else "the children's profiles do not reach it"
                    if "profile" in names
                    else "the children's δ already add up to more"
                )
                raise UnsupportedComposition(
                    f"no applicable theorem ({', '.join(names)}) fits the target delta={delta}: "
                    # (each theorem's own reason, so that a PLD window too large for memory does not read
                    # as "profiles do not reach it")
                    + ("; ".join(f"{n}: {why}" for n, why in refusals) if refusals else why)
                )
            return min(results, key=lambda nv: (nv[1][0], nv[1][1]))[1]

        def runners_up(ds: list[Any], losses: Losses) -> tuple[tuple[str, Any], ...]:
            refusals: list[tuple[str, str]] = []
            done = [(f"{n} — {sources.get(n, _SOURCES[n])}", v) for n, v in evaluate(ds, losses, refusals)]
            # a candidate that applies but could not certify this case (a PLD too large for memory or time,
            # a child without a Rényi curve): shown with why, and no value
            return (*done, *((f"{n} — not used: {why}", None) for n, why in refusals))

        label = "auto: least ε of " + ", ".join(names) if theorem == "auto" else theorem
        source = (
            "each candidate's source is listed below"
            if theorem == "auto"
            else sources.get(theorem, _SOURCES[theorem])
        )
        needs = "pld" in candidates or "profile" in candidates
        return Plan(target, label, source, compose, runners_up, needs_losses=needs)

    lifts = [_lift(m, target) for m in measures]

    def lifted(ds: list[Any]) -> list[Any]:
        return expand([f(d) for f, d in zip(lifts, ds, strict=True)], runs)

    if isinstance(target, PureDP):
        name = "vadhan-wang-2021" if theorem == "vadhan-wang-2021" and concurrent else "basic"
        return single(name, lambda ds: target.compose(lifted(ds)))
    if isinstance(target, (ZCDP, RenyiDP)):
        plan = single("basic", lambda ds: target.compose(lifted(ds)))
        return dataclasses.replace(plan, source=target.compose_source)  # ρ and Rényi curves add
    return single("basic", lambda ds: target.compose(lifted(ds)))


def _zcdp_candidates(
    measures: Sequence[Measure[Any]], delta: Fraction, runs: Sequence[int]
) -> dict[str, Callable[[list[Any], Losses], tuple[Fraction, Fraction] | None]]:
    """The candidates for pure and zCDP children composed into ApproxDP at ``delta`` > 0: their ρ added
    (pure ones as ε²/2), the Rényi curves added, the PLD, and the profile (the children with a pair by
    their PLD, the ρ of the others beside it: the ε-split)."""
    zlifts = [_lift(m, ZCDP()) for m in measures]

    def via_zcdp(ds: list[Any], _losses: Losses) -> tuple[Fraction, Fraction]:
        rho = zcdp_compose(expand([f(d) for f, d in zip(zlifts, ds, strict=True)], runs))
        return zcdp_to_approx(rho, delta), delta

    return {
        "zcdp": via_zcdp,
        "renyi": _renyi_candidate(measures, delta, runs),
        "pld": _pld_candidate(measures, delta, runs),
        "profile": _profile_candidate([_lift(m, ProfileDP()) for m in measures], delta, runs),
    }


def _on_lifted(
    f: Callable[[list[tuple[Fraction, Fraction]]], tuple[Fraction, Fraction] | None],
    lifts: Sequence[Callable[[Any], Any]],
    runs: Sequence[int],
) -> Callable[[list[Any], Losses], tuple[Fraction, Fraction] | None]:
    """An (ε, δ) candidate on the children's d_out lifted to (ε, δ) (it does not read their pairs)."""
    return lambda ds, _losses: f(expand([lift(d) for lift, d in zip(lifts, ds, strict=True)], runs))


def child_losses(measures: Sequence[Measure[Any]], ds: list[Any], losses: Losses) -> Losses:
    """Each child's dominating pair: its own (``losses[i]``), else RR_(ε,δ) from its (ε, δ) or pure ε
    (Kairouz–Oh–Viswanath 2015 Thm 2.5: every (ε, δ)-DP mechanism is a post-processing of it), else for a
    profile the pair of the whole profile (:meth:`PrivacyProfile.privacy_loss`), else None."""
    out: Losses = []
    for m, d, loss in zip(measures, ds, losses, strict=True):
        if loss is None and isinstance(m, PureDP):
            loss = PrivacyLoss.approx(d, 0)
        elif loss is None and isinstance(m, ApproxDP):
            loss = PrivacyLoss.approx(*d)
        elif loss is None and isinstance(m, ProfileDP):
            loss = d.privacy_loss()  # its pairs with its (ε, δ) and Gaussian parts; None where it has ρ
        out.append(loss)
    return out


class _Refused(Exception):
    """A candidate theorem applies to the children but cannot certify this case (its reason is the
    message); the policy then tries the others, and names the reasons if none is left."""


def _pld_candidate(
    measures: Sequence[Measure[Any]], delta: Fraction, runs: Sequence[int]
) -> Callable[[list[Any], Losses], tuple[Fraction, Fraction] | None]:
    """The PLD candidate: ε(δ) of the composed dominating pairs (from the children's own d_out and pairs),
    where every child has one."""

    def use_pld(ds: list[Any], losses: Losses) -> tuple[Fraction, Fraction] | None:
        pairs = child_losses(measures, ds, losses)
        if any(p is None for p in pairs):
            return None
        if all(p is not None and p.kind == "approx" for p in pairs):
            return None  # RR_(ε,δ) pairs only: "optimal" is this exactly, without a lattice
        try:
            eps = PrivacyLoss.compose(
                [p.times(n) for p, n in zip(pairs, runs, strict=True) if p is not None]
            ).epsilon(delta)
        except InvalidParameter as exc:  # outside the PLD constructors' range (ε above 700), δ too small, …
            raise _Refused(str(exc)) from None
        return eps, delta

    return use_pld


def _children_kind(measures: Sequence[Measure[Any]]) -> str:
    if any(isinstance(m, ProfileDP) for m in measures):
        return "ProfileDP"
    if any(isinstance(m, ZCDP) for m in measures):
        return "zCDP and (ε, δ)" if any(isinstance(m, ApproxDP) for m in measures) else "zCDP"
    return "(ε, δ)"


def _child_profiles(
    lifts: Sequence[Callable[[Any], PrivacyProfile]], ds: list[Any], losses: Losses, runs: Sequence[int]
) -> PrivacyProfile:
    """The children's profiles, each with the child's dominating pair attached where it reports one,
    composed (PrivacyProfile.compose: Zhu–Dong–Wang 2022 Thm 10 for the pairs, KOV 2015 / Dong–Roth–Su
    2019 / Bun–Steinke 2016 for the rest); a run of n equal children as n copies."""
    return PrivacyProfile.compose(
        [with_pair(f(d), loss).times(n) for f, d, loss, n in zip(lifts, ds, losses, runs, strict=True)]
    )


def _profile_candidate(
    lifts: Sequence[Callable[[Any], PrivacyProfile]], delta: Fraction, runs: Sequence[int]
) -> Callable[[list[Any], Losses], tuple[Fraction, Fraction] | None]:
    """The profile candidate: ε(δ) of the children's composed profiles (pairs attached), refused (with the
    profile's reason) where it does not reach δ."""

    def use_profile(ds: list[Any], losses: Losses) -> tuple[Fraction, Fraction] | None:
        try:
            return _child_profiles(lifts, ds, losses, runs).epsilon(delta), delta
        except InvalidParameter as exc:
            raise _Refused(str(exc)) from None

    return use_profile


def _renyi_candidate(
    measures: Sequence[Measure[Any]], delta: Fraction, runs: Sequence[int]
) -> Callable[[list[Any], Losses], tuple[Fraction, Fraction] | None]:
    """The Rényi candidate for pure and zCDP children: the curves α ↦ min(ε, αε²/2) (pure) and α ↦ αρ
    (zCDP) add (Mironov 2017 Prop. 1; concurrently Lyu 2022 Thm 2), converted at ``delta`` on
    ``RUNNER_UP_ORDERS`` (Balle–Barthe–Gaboardi–Hsu–Sato 2020 Thm 21)."""

    def use_renyi(ds: list[Any], _losses: Losses) -> tuple[Fraction, Fraction] | None:
        if delta == 0:
            return None
        counts: Counter[tuple[bool, Fraction]] = Counter()
        for m, d, n in zip(measures, ds, runs, strict=True):
            counts[isinstance(m, PureDP), Fraction(d)] += n
        parts = [(pure, d, n) for (pure, d), n in counts.items()]
        return renyi_compose_epsilon(parts, delta, RUNNER_UP_ORDERS), delta

    return use_renyi


def _renyi_curves_candidate(
    measures: Sequence[Measure[Any]], delta: Fraction, runs: Sequence[int]
) -> Callable[[list[Any], Losses], tuple[Fraction, Fraction] | None]:
    """The Rényi candidate for children with profiles: each child's Rényi curve (pure ε and zCDP ρ from
    their d_out, the others from their dominating pair: :meth:`PrivacyLoss.renyi`, which covers Poisson-
    subsampled Gaussian and Laplace mechanisms) on ``RUNNER_UP_ORDERS``, added (Mironov 2017 Prop. 1;
    concurrently Lyu 2022 Thm 2) and converted at ``delta`` (Balle–Barthe–Gaboardi–Hsu–Sato 2020 Thm 21);
    refused (:class:`_Refused`, naming the child) where a child has no curve."""

    def use_curves(ds: list[Any], losses: Losses) -> tuple[Fraction, Fraction] | None:
        curves: dict[int, tuple[tuple[Fraction, ...], int]] = {}  # (equal pairs share one cached curve)
        of_pair: dict[int, tuple[PrivacyLoss, tuple[Fraction, ...] | None]] = {}  # (a run's steps share one)
        pairs = child_losses(measures, ds, losses)
        for i, (m, d, pair, n) in enumerate(zip(measures, ds, pairs, runs, strict=True)):
            if isinstance(m, PureDP):
                curve: tuple[Fraction, ...] | None = pure_cost_to_renyi(Fraction(d), RUNNER_UP_ORDERS)
            elif isinstance(m, ZCDP):
                curve = zcdp_cost_to_renyi(Fraction(d), RUNNER_UP_ORDERS)
            elif pair is None:
                curve = None
            else:
                if id(pair) not in of_pair:
                    of_pair[id(pair)] = (pair, pair.renyi(RUNNER_UP_ORDERS))  # (the pair kept alive)
                curve = of_pair[id(pair)][1]
            if curve is None:  # (auto drops it, and explain lists it as not used; forced, the error says why)
                raise _Refused(
                    f"child {sum(runs[:i])} ({m!r}) has no Rényi curve: an (ε, δ) guarantee with δ > 0, "
                    "sampling without replacement, or no dominating pair"
                )
            seen = curves.get(id(curve))
            curves[id(curve)] = (curve, n if seen is None else seen[1] + n)
        totals = add_renyi_curves(curves.values(), len(RUNNER_UP_ORDERS))
        return renyi_to_approx(RUNNER_UP_ORDERS, totals, delta), delta

    return use_curves


def _profile_plan(
    measures: Sequence[Measure[Any]], theorem: str, sources: dict[str, str], kind: str, runs: Sequence[int]
) -> Plan:
    """Composition into ProfileDP: the children's profiles (their pairs attached) compose; the result is
    read by the least of its routes (``auto``), by the pairs' PLD only (``pld``) or without pairs
    (``basic``: the profile rules without pairs, KOV 2015 / Dong–Roth–Su 2019 / Bun–Steinke 2016)."""
    if theorem not in ("auto", "basic", "pld"):
        raise UnsupportedComposition(
            f"theorem={theorem!r} does not apply to {kind} composition into ProfileDP; applicable: auto, "
            "basic (profiles without pairs), pld (the pairs' privacy loss distribution)"
        )
    lifts = [_lift(m, ProfileDP()) for m in measures]

    def generic_of(p: PrivacyProfile) -> PrivacyProfile:
        g = p.generic()
        if g is None:
            raise UnsupportedComposition(
                "theorem='basic': a child's profile is known only by its dominating pair (no (ε, δ), "
                "Gaussian or zCDP description of it), so it has no profile without pairs; use "
                "theorem='auto' or 'pld'"
            )
        return g

    def compose(ds: list[Any], losses: Losses) -> PrivacyProfile:
        whole = _child_profiles(lifts, ds, losses, runs)
        if theorem == "basic":
            return generic_of(whole)
        if theorem == "pld":
            if whole.loss is None:
                raise UnsupportedComposition(
                    "theorem='pld': no child reports a dominating pair, so there is no privacy loss "
                    "distribution to read; use theorem='auto'"
                )
            return whole.pairs_only()
        return whole

    def runners_up(ds: list[Any], losses: Losses) -> tuple[tuple[str, Any], ...]:
        whole = _child_profiles(lifts, ds, losses, runs)
        out: list[tuple[str, Any]] = []
        if whole.loss is not None:
            out.append(("auto — the least of the routes below, at every ε and δ", whole))
        for name, route in whole.routes():
            out.append((f"{name} — {sources[name]}", route))
        return tuple(out)

    label = {
        "auto": "auto: least of pld, generic",
        "basic": "generic (profiles without pairs)",
        "pld": "pld",
    }[theorem]
    source = sources["profile"] if theorem == "auto" else sources["generic" if theorem == "basic" else "pld"]
    return Plan(ProfileDP(), label, source, compose, runners_up, needs_losses=True)
