"""make_sequential and make_concurrent: one code path for every measure (STYLE §3)."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence
from functools import partial
from itertools import pairwise
from typing import Any

import numpy as np

from dpcompose.accounting import PrivacyLoss
from dpcompose.combinators._policy import Losses, Plan, child_losses, plan_composition
from dpcompose.core import ApproxDP, Measure, Measurement, Node, ProfileDP, PureDP, Queryable
from dpcompose.core._queryable import created_queryables
from dpcompose.core._recipe import recorded
from dpcompose.errors import DomainMismatch, InvalidParameter, SequentialityError

__all__ = ["make_concurrent", "make_sequential"]

AnyMeasurement = Measurement[Any, Any, Any, Any]


def _check_children(runs: Sequence[tuple[Any, int]], who: str) -> None:
    """Every child is a Measurement on the first one's input domain and metric (``runs``: the children as
    :func:`_runs`; an error names the child's index)."""
    start = 0
    starts = []
    for _, n in runs:
        starts.append(start)
        start += n
    for i, (child, _) in zip(starts, runs, strict=True):
        if not isinstance(child, Measurement):
            raise InvalidParameter(f"{who}: measurements[{i}]={child!r} is not a Measurement")
    first = runs[0][0]
    for i, (child, _) in zip(starts, runs, strict=True):
        if child is first:
            continue
        if child.input_domain != first.input_domain or child.input_metric != first.input_metric:
            raise DomainMismatch(
                f"{who}: child 0 ({first.node.label()}) takes {first.input_domain!r} under "
                f"{first.input_metric!r}, but child {i} ({child.node.label()}) takes "
                f"{child.input_domain!r} under {child.input_metric!r}"
            )


Run = tuple[AnyMeasurement, int]


def _runs(children: Sequence[Any]) -> tuple[tuple[Any, int], ...]:
    """The children as runs ``(child, n)`` of one object repeated n times in a row (``[step] * T`` is one
    run): the plan reads each run once, as n copies (:func:`plan_composition`'s ``counts``). (Found by
    comparing the objects' ids with numpy: 10⁶ children in milliseconds.)"""
    n = len(children)
    ids = np.fromiter(map(id, children), dtype=np.uint64, count=n)
    bounds = [0, *(np.flatnonzero(ids[1:] != ids[:-1]) + 1).tolist(), n]
    return tuple((children[a], b - a) for a, b in pairwise(bounds))


def _compose_map(runs: Sequence[Run], plan: Plan) -> Callable[[Any], Any]:
    def privacy_map(d_in: Any) -> Any:
        # d_in is already validated by the outer Measurement.map, and every child shares its input
        # metric; a child repeated many times is evaluated once.
        return plan.compose(*_evaluate(runs, d_in, plan.needs_losses))

    return privacy_map


def _evaluate(runs: Sequence[Run], d_in: Any, with_losses: bool = True) -> tuple[list[Any], Losses]:
    """Each run's child's d_out and, if ``with_losses``, dominating pair (None where it has none or none is
    asked for) at ``d_in``; a child in several runs is evaluated once."""
    seen: dict[int, tuple[Any, PrivacyLoss | None]] = {}
    outs: list[Any] = []
    losses: Losses = []
    for child, _ in runs:
        key = id(child)
        if key not in seen:
            pair = child.loss(d_in) if with_losses and child.loss is not None else None
            seen[key] = (child.privacy_map(d_in), pair)
        outs.append(seen[key][0])
        losses.append(seen[key][1])
    return outs, losses


def _composite_loss(runs: Sequence[Run]) -> Callable[[Any], PrivacyLoss | None] | None:
    """The composite's dominating pair: the product of the children's (Zhu–Dong–Wang 2022 Thm 10;
    concurrently, Vadhan–Zhang 2023 Thm 1.3), where every child has one or is (ε, δ)/pure, or a profile
    (whose pair is read from its d_out, :meth:`PrivacyProfile.privacy_loss`)."""
    children = [c for c, _ in runs]
    measures = [c.output_measure for c in children]
    if not all(
        c.loss is not None or isinstance(c.output_measure, (PureDP, ApproxDP, ProfileDP)) for c in children
    ):
        return None

    def loss(d_in: Any) -> PrivacyLoss | None:
        # a child's d_out is read only where it has no pair of its own (evaluating both for every child
        # made a nested composite evaluate its leaves 2**depth times)
        seen: dict[int, tuple[Any, PrivacyLoss | None]] = {}
        for child in children:
            if id(child) not in seen:
                pair = child.loss(d_in) if child.loss is not None else None
                seen[id(child)] = (child.privacy_map(d_in) if pair is None else None, pair)
        outs = [seen[id(c)][0] for c in children]
        losses: Losses = [seen[id(c)][1] for c in children]
        pairs = child_losses(measures, outs, losses)
        if any(p is None for p in pairs):
            return None
        counted = [p.times(n) for p, (_, n) in zip(pairs, runs, strict=True) if p is not None]
        return PrivacyLoss.compose(counted)

    return loss


@recorded
def make_sequential(
    *measurements: AnyMeasurement,
    theorem: str = "auto",
    output_measure: Measure[Any] | None = None,
    delta: float | None = None,
) -> AnyMeasurement:
    """Sequential composition: run every child on the same data; interactive children are queried one
    after another.

    Output: the tuple of the children's outputs — values for non-interactive children, a live
    :class:`~dpcompose.Queryable` for each interactive child. Once the analyst queries an interactive
    child, every child queried before it is closed for good (:class:`SequentialityError` names it).
    Privacy map: the measure's composition rule applied to the children's maps.

    Source: the output measure's rule (``Measure.compose``): Dwork–McSherry–Nissim–Smith 2006 (ε),
    Dwork et al. 2006 ((ε, δ)), Bun–Steinke 2016 Lemma 2.3 (ρ), Mironov 2017 Prop. 1 (Rényi).

    Examples:
        >>> import dpcompose as dp
        >>> lap = dp.m.make_laplace(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=10.0)
        >>> ten = dp.make_sequential(*[lap] * 10)
        >>> ten.map(1), ten.check(1, 1.0)
        (Fraction(1, 1), True)
    """
    return _composite(measurements, theorem, output_measure, delta, sequential=True)


@recorded
def make_concurrent(
    *measurements: AnyMeasurement,
    theorem: str = "auto",
    output_measure: Measure[Any] | None = None,
    delta: float | None = None,
) -> AnyMeasurement:
    """Concurrent composition: every interactive child stays open and queries may interleave freely.

    Privacy map: the measure's composition rule, which holds concurrently for every measure offered here.

    Source: pure DP, Vadhan–Wang 2021 Thm 3.3; approximate DP, Vadhan–Zhang 2023 (arXiv 2207.08335)
    Thm 1.3 (every non-interactive composition theorem of (ε, δ)/f-DP holds concurrently); Rényi DP and
    zCDP, Lyu 2022 (arXiv 2207.09397) Thm 2 (Rényi) / Cor 1 (zCDP).

    Examples:
        >>> import dpcompose as dp
        >>> lap = dp.m.make_laplace(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=2.0)
        >>> dp.make_concurrent(lap, lap).map(1)
        Fraction(1, 1)
    """
    return _composite(measurements, theorem, output_measure, delta, sequential=False)


def _composite(
    measurements: Sequence[AnyMeasurement],
    theorem: str,
    output_measure: Measure[Any] | None,
    delta: float | None,
    *,
    sequential: bool,
) -> AnyMeasurement:
    who = "make_sequential" if sequential else "make_concurrent"
    if len(measurements) == 0:
        raise InvalidParameter(f"{who} needs at least one measurement (got none in measurements)")
    runs = _runs(measurements)
    _check_children(runs, who)
    plan = plan_composition(
        [m.output_measure for m, _ in runs],
        output_measure=output_measure,
        theorem=theorem,
        delta=delta,
        concurrent=not sequential,
        counts=[n for _, n in runs],
    )
    return _build(measurements, runs, plan, sequential=sequential)


def _build(
    measurements: Sequence[AnyMeasurement], runs: Sequence[Run], plan: Plan, *, sequential: bool
) -> AnyMeasurement:
    children = tuple(measurements)
    interactive = any(child.interactive for child, _ in runs)
    kind = "sequential" if sequential else "concurrent"

    def run(data: Any) -> tuple[Any, ...]:
        if not (sequential and interactive):
            return tuple(child.function(data) for child in children)
        outputs: list[Any] = []
        groups: list[list[weakref.ReferenceType[Any]]] = []
        for child in children:
            with created_queryables() as created:
                outputs.append(child.function(data))
            groups.append(created)
        _SequentialGroups(groups)
        return tuple(outputs)

    return Measurement(
        children[0].input_domain,
        children[0].input_metric,
        plan.measure,
        run,
        _compose_map(runs, plan),
        interactive=interactive,
        loss=_composite_loss(runs),
        node=Node(
            kind,
            params=(("children", str(len(children))),),
            source=plan.source,
            theorem=plan.theorem,
            alternatives=_alternatives(plan, runs),
            interaction=kind,
            children=children,
        ),
    )


def _alternatives(plan: Plan, runs: Sequence[Run]) -> Callable[[Any], Any]:
    metric = runs[0][0].input_metric
    return lambda d: plan.runners_up(*_evaluate(runs, metric.validate(d), plan.needs_losses))


class _SequentialGroups:
    """Sequential interaction among the children of a ``make_sequential`` run: each child's group is every
    queryable its function created (however its output holds them: a tuple, a post-processing, an object).
    A guard on each of them makes the first query to a group close the group queried before it; a closed
    queryable closes everything created through it in turn (``Queryable.close``).

    Threads: which group is current, and which are closed for good, is decided under this object's lock
    alone, which puts queries made at once to different children in one order; a query to a group closed
    in that order is refused (it runs and spends nothing). The closing itself runs after that lock is
    released and outside every queryable's lock (the guard runs before the queried one's lock is taken),
    so no two threads can each hold a lock the other waits for. Until a closed group's queryables are all
    closed, every query admitted to a later group closes them too before it runs; ``close`` waits for an
    answer in progress, so every answer of an earlier group is finished before any answer of a later
    group starts."""

    def __init__(self, groups: list[list[weakref.ReferenceType[Any]]]) -> None:
        self._lock = threading.Lock()
        self._groups = groups
        self._current: int | None = None
        self._closed: dict[int, str] = {}  # group -> why it is closed for good
        self._closing: list[int] = []  # closed groups whose queryables may not all be closed yet
        for g, refs in enumerate(groups):
            for ref in refs:
                q = ref()
                if q is not None:
                    q.add_guard(partial(self._enter, g))

    def _enter(self, g: int, queried: Queryable[Any, Any]) -> None:
        """The guard of group ``g``'s queryables (run before the queried one takes its lock): refuse if the
        group is closed; on a switch of group, close the group queried before (the groups before that are
        closed already)."""
        with self._lock:  # nothing else is taken under it: no lock cycle
            refused = self._closed.get(g)
            if refused is None and self._current not in (None, g):
                self._closed[self._current] = (
                    f"a later sibling ({queried.name}) was queried (sequential composition)"
                )
                self._closing.append(self._current)
            if refused is None:
                self._current = g
            closing = tuple(self._closing)
        if refused is not None:
            raise SequentialityError(f"{queried.name} is closed: {refused}")
        if not closing:
            return
        for previous in closing:
            for ref in self._groups[previous]:
                q = ref()
                if q is not None:
                    q.close(self._closed[previous])  # (waits for an answer in progress)
        with self._lock:
            self._closing = [c for c in self._closing if c not in closing]
