"""Which composition theorem a combinator applies: the tightest *proven* one for its situation.

The policy is data, not code paths: for the children's measures, the target measure and the interaction
(sequential or concurrent) it lists the candidate theorems that are proven to apply; ``theorem="auto"``
takes the one with the smallest result, and the others are kept as runners-up for ``dp.explain``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
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
from dpcompose.core import ZCDP, ApproxDP, Measure, ProfileDP, PureDP, RenyiDP
from dpcompose.errors import InvalidParameter, UnsupportedComposition

__all__ = ["THEOREMS", "Plan", "plan_composition"]

THEOREMS = ("auto", "basic", "vadhan-wang-2021", "advanced", "optimal", "zcdp", "pld")

_SOURCES = {
    "basic": "Dwork–McSherry–Nissim–Smith 2006; Dwork et al. 2006",
    "vadhan-wang-2021": "Vadhan–Wang 2021 Thm 1.8 (optimal order)",
    "advanced": "Dwork–Rothblum–Vadhan 2010; Kairouz–Oh–Viswanath 2015 Thm 3.4/3.5",
    "optimal": "Kairouz–Oh–Viswanath 2015; Murtagh–Vadhan 2016",
    "zcdp": "Bun–Steinke 2016 Prop. 1.4 + Lemma 2.3; Canonne–Kamath–Steinke 2020",
    "pld": "the children's privacy loss distributions, composed (Zhu–Dullerud–Wang 2022 Thm 10)",
}
_CONCURRENT_SOURCES = {
    "basic": "Vadhan–Wang 2021 Thm 3.3 (pure); Vadhan–Zhang 2023 Thm 1.3 ((ε, δ))",
    "advanced": "Vadhan–Zhang 2023 Thm 1.3 (non-interactive theorems hold concurrently)",
    "optimal": "Vadhan–Zhang 2023 Thm 1.3 with Kairouz–Oh–Viswanath 2015 / Murtagh–Vadhan 2016",
    "zcdp": "Lyu 2022 Cor 1; Canonne–Kamath–Steinke 2020",
    "pld": "the children's privacy loss distributions, composed; concurrently: Vadhan–Zhang 2023 Thm 1.3",
}

Losses = list[PrivacyLoss | None]


@dataclass(frozen=True)
class Plan:
    """The chosen composition: target measure, theorem name and source, and the function from the
    children's d_out list and their dominating pairs (:class:`PrivacyLoss`, or None) to the composite's
    d_out; ``runners_up`` evaluates every applicable theorem."""

    measure: Measure[Any]
    theorem: str
    source: str
    compose: Callable[[list[Any], Losses], Any]
    runners_up: Callable[[list[Any], Losses], tuple[tuple[str, Any], ...]]
    needs_losses: bool = False  # whether compose/runners_up read the children's pairs (the PLD candidate)


def _lift(child: Measure[Any], target: Measure[Any]) -> Callable[[Any], Any]:
    if child == target:
        return lambda d: d
    if isinstance(child, PureDP) and isinstance(target, ApproxDP):
        return lambda d: (d, Fraction(0))
    if isinstance(child, PureDP) and isinstance(target, ZCDP):
        return pure_to_zcdp
    if isinstance(target, ProfileDP):
        if isinstance(child, PureDP):
            return PrivacyProfile.pure
        if isinstance(child, ApproxDP):
            return lambda d: PrivacyProfile.approx(*d)
        if isinstance(child, ZCDP):
            return PrivacyProfile.zcdp
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
) -> Plan:
    """Choose the theorem for composing children with these measures.

    Raises:
        InvalidParameter: an unknown theorem name, or a bad ``delta``.
        UnsupportedComposition: no proven theorem covers the case, or the forced one does not apply.
    """
    if not isinstance(theorem, str) or theorem not in THEOREMS:
        raise InvalidParameter(f"theorem={theorem!r} must be one of {', '.join(THEOREMS)}")
    if output_measure is not None and not isinstance(output_measure, Measure):
        raise InvalidParameter(f"output_measure={output_measure!r} must be a Measure or None")
    first = measures[0]
    if output_measure is None:
        for i, m in enumerate(measures):
            if m != first:
                raise UnsupportedComposition(
                    f"child 0 is {first!r} but child {i} is {m!r}; lift the children to one measure "
                    "(make_pure_to_zcdp, make_zcdp_to_approx, make_pure_to_profile, make_zcdp_to_profile) "
                    "or pass output_measure="
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
        delta_q = ApproxDP().parse((0, delta), "delta")[1]
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

    if isinstance(target, ApproxDP):
        zcdp_children = [m for m in measures if isinstance(m, ZCDP)]
        candidates: dict[str, Callable[[list[Any], Losses], tuple[Fraction, Fraction] | None]]
        if zcdp_children:
            if delta_q is None or delta_q == 0:
                raise UnsupportedComposition(
                    "zCDP children composed into ApproxDP need a positive target delta= (zCDP has no finite "
                    "ε at δ = 0)"
                )
            zlifts = [_lift(m, ZCDP()) for m in measures]
            dq = delta_q

            def via_zcdp(ds: list[Any], _losses: Losses) -> tuple[Fraction, Fraction]:
                rho = zcdp_compose([f(d) for f, d in zip(zlifts, ds, strict=True)])
                return zcdp_to_approx(rho, dq), dq

            candidates = {"zcdp": via_zcdp, "pld": _pld_candidate(measures, dq)}
        else:
            lifts = [_lift(m, target) for m in measures]
            all_pure = all(isinstance(m, PureDP) for m in measures)
            plain = _approx_candidates(concurrent, delta_q, all_pure)
            candidates = {n: _on_lifted(f, lifts) for n, f in plain.items()}
            if delta_q is not None:
                candidates["pld"] = _pld_candidate(measures, delta_q)

        if theorem != "auto" and theorem not in candidates:
            raise UnsupportedComposition(
                f"theorem={theorem!r} does not apply to {kind} composition of "
                f"{'zCDP' if zcdp_children else '(ε, δ)'} children"
                + (" without a target delta=" if delta_q is None else "")
                + f"; applicable: {', '.join(candidates)}"
            )
        names = list(candidates) if theorem == "auto" else [theorem]

        def evaluate(ds: list[Any], losses: Losses) -> list[tuple[str, tuple[Fraction, Fraction]]]:
            results = []
            for name in candidates:
                value = candidates[name](ds, losses)
                if value is not None:
                    results.append((name, value))
            return results

        def compose(ds: list[Any], losses: Losses) -> tuple[Fraction, Fraction]:
            results = [(n, v) for n, v in evaluate(ds, losses) if n in names]
            if not results:
                raise UnsupportedComposition(
                    f"no applicable theorem ({', '.join(names)}) fits the target delta={delta}: "
                    + (
                        "a child has no privacy loss distribution"
                        if names == ["pld"]
                        else "the children's δ already add up to more"
                    )
                )
            return min(results, key=lambda nv: (nv[1][0], nv[1][1]))[1]

        def runners_up(ds: list[Any], losses: Losses) -> tuple[tuple[str, Any], ...]:
            return tuple((f"{n} — {sources.get(n, _SOURCES[n])}", v) for n, v in evaluate(ds, losses))

        label = "auto: least ε of " + ", ".join(names) if theorem == "auto" else theorem
        source = (
            "each candidate's source is listed below"
            if theorem == "auto"
            else sources.get(theorem, _SOURCES[theorem])
        )
        return Plan(target, label, source, compose, runners_up, needs_losses="pld" in candidates)

    lifts = [_lift(m, target) for m in measures]

    def lifted(ds: list[Any]) -> list[Any]:
        return [f(d) for f, d in zip(lifts, ds, strict=True)]

    if isinstance(target, PureDP):
        name = "vadhan-wang-2021" if theorem == "vadhan-wang-2021" and concurrent else "basic"
        return single(name, lambda ds: target.compose(lifted(ds)))
    if isinstance(target, (ZCDP, RenyiDP)):
        plan = single("basic", lambda ds: target.compose(lifted(ds)))
        return dataclasses.replace(plan, source=target.compose_source)  # ρ and Rényi curves add
    return single("basic", lambda ds: target.compose(lifted(ds)))


def _on_lifted(
    f: Callable[[list[tuple[Fraction, Fraction]]], tuple[Fraction, Fraction] | None],
    lifts: Sequence[Callable[[Any], Any]],
) -> Callable[[list[Any], Losses], tuple[Fraction, Fraction] | None]:
    """An (ε, δ) candidate on the children's d_out lifted to (ε, δ) (it does not read their pairs)."""
    return lambda ds, _losses: f([lift(d) for lift, d in zip(lifts, ds, strict=True)])


def child_losses(measures: Sequence[Measure[Any]], ds: list[Any], losses: Losses) -> Losses:
    """Each child's dominating pair: its own (``losses[i]``), else RR_(ε,δ) from its (ε, δ) or pure ε
    (Kairouz–Oh–Viswanath 2015 Thm 2.1: every (ε, δ)-DP mechanism is a post-processing of it), else None."""
    out: Losses = []
    for m, d, loss in zip(measures, ds, losses, strict=True):
        if loss is None and isinstance(m, PureDP):
            loss = PrivacyLoss.approx(d, 0)
        elif loss is None and isinstance(m, ApproxDP):
            loss = PrivacyLoss.approx(*d)
        out.append(loss)
    return out


def _pld_candidate(
    measures: Sequence[Measure[Any]], delta: Fraction
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
            eps = PrivacyLoss.compose([p for p in pairs if p is not None]).epsilon(delta)
        except InvalidParameter:  # outside the PLD constructors' range (e.g. ε above 700), or δ too small
            return None
        return eps, delta

    return use_pld
