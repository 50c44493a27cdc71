"""Adaptive compositors: queryables that take measurements as queries, within fixed budgets."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

from dpcompose.accounting import PrivacyLoss, PrivacyProfile
from dpcompose.accounting._display import format_down
from dpcompose.combinators._map_errors import map_errors
from dpcompose.combinators._pair_budget import PairSchedule, domination_gap, offered_pair
from dpcompose.core import (
    ZCDP,
    ApproxDP,
    Domain,
    Measure,
    Measurement,
    Metric,
    Node,
    ProfileDP,
    PureDP,
    Queryable,
)
from dpcompose.core._metrics import check_space, read_d_in
from dpcompose.core._queryable import created_queryables
from dpcompose.core._recipe import recorded
from dpcompose.errors import BudgetExceeded, DomainMismatch, InvalidParameter

__all__ = [
    "check_query",
    "make_adaptive_concurrent",
    "make_adaptive_sequential",
    "map_up_to_d_in",
    "priced_cost",
    "run_query",
    "within",
]


def check_query(query: object, domain: Domain, metric: Metric, who: str) -> Measurement[Any, Any, Any, Any]:
    """A measurement query to a compositor, filter or odometer: a Measurement on the same domain and
    metric. Raises before anything runs."""
    if not isinstance(query, Measurement):
        raise InvalidParameter(f"a query must be a Measurement, not {query!r}")
    if query.input_domain != domain or query.input_metric != metric:
        raise DomainMismatch(
            f"query {query.node.label()} takes {query.input_domain!r} under {query.input_metric!r}, "
            f"but this {who} holds {domain!r} under {metric!r}"
        )
    return query


def priced_cost(query: Measurement[Any, Any, Any, Any], d_in: Any) -> Any:
    """``query.map(d_in)``, validated by the query's measure (:meth:`Measure.check_cost`).

    The one cost check of every path that charges a budget (adaptive compositors, filters, odometers):
    a negative, non-finite, float, or wrongly typed cost — or a map that raises something other than a
    :class:`DPError` — is refused with :class:`InvalidParameter` before anything is charged or run.
    """
    label = query.node.label()
    with map_errors(label):
        d = query.map(d_in)
    return query.output_measure.check_cost(d, f"query {label}'s cost at d_in={d_in}")


def _display_down(measure: Measure[Any], budget: Any) -> str:
    """A budget for a refusal message, rounded *down* (costs are shown rounded up), so the message itself
    shows the cost above the budget."""
    if isinstance(measure, ApproxDP):
        return f"ε={format_down(budget[0])}, δ={format_down(budget[1])}"
    if isinstance(measure, PureDP):
        return f"ε={format_down(budget)}"
    if isinstance(measure, ZCDP):
        return f"ρ={format_down(budget)}"
    return measure.display(budget)


class SpawnedChildren:
    """The interactive answers a compositor, filter or odometer has spawned, kept only as far as needed.

    Sequential interaction closes every child an earlier query created when a later query is answered.
    The children are found structurally: every :class:`Queryable` constructed while a query runs is
    recorded (:func:`~dpcompose.core._queryable.created_queryables`), so a child wrapped in a list, a
    post-processing or a composite is closed too. Only the latest query's children are kept, by weak
    reference (a child the analyst has dropped needs no closing); concurrent interaction keeps nothing.
    So each query costs O(its own children) and finished answers are not kept alive.
    """

    __slots__ = ("_last", "_reason", "_sequential")

    def __init__(self, sequential: bool, reason: str) -> None:
        self._sequential, self._reason = sequential, reason
        self._last: list[weakref.ReferenceType[Any]] = []

    def before_answer(self) -> None:
        """Close the open children (sequential only); call after the charge, before the query runs."""
        for ref in self._last:
            child = ref()
            if child is not None:
                child.close(self._reason)
        self._last = []

    def after_answer(self, created: list[weakref.ReferenceType[Any]]) -> None:
        """Remember the queryables the query created, if a later query must close them."""
        if self._sequential:
            self._last = created


def run_query(query: Measurement[Any, Any, Any, Any], data: Any, children: SpawnedChildren) -> Any:
    """Run an admitted (already charged) query on ``data``, closing or remembering spawned children."""
    children.before_answer()
    with created_queryables() as created:
        answer = query.function(data)
    children.after_answer(created)
    return answer


def within(d: Any, d_in: Any) -> bool:
    """``d`` is at most ``d_in``: for a distance tuple (``L01InfDistance``'s (l0, l1, l∞)) each component is
    at most its bound — tuples compare lexicographically in Python, which would let (1, 50, 50) pass under
    (2, 2, 1)."""
    if isinstance(d_in, (tuple, list)):
        if not isinstance(d, (tuple, list)) or len(d) != len(d_in):
            return False
        return all(a <= b for a, b in zip(d, d_in, strict=True))
    return bool(d <= d_in)


def map_up_to_d_in(d_in: Any, value: Any, who: str) -> Callable[[Any], Any]:
    """The privacy map of a compositor that prices its queries at ``d_in``: ``value`` for any distance up
    to ``d_in``, and a refusal above it (queries were only checked at ``d_in``)."""

    def privacy_map(d: Any) -> Any:
        if not within(d, d_in):
            raise InvalidParameter(
                f"this {who} prices its queries at d_in={d_in}; it makes no claim at d_in={d} "
                "(build it with the larger d_in)"
            )
        return value

    return privacy_map


class AdaptiveQueryable(Queryable[Measurement[Any, Any, Any, Any], Any]):
    """Answers measurement queries in order; query i must fit budget ``d_mids[i]``.

    Everything is checked before anything runs: a refused query raises, runs nothing, spends nothing,
    and the queryable stays usable for a query that fits.
    """

    def __init__(
        self,
        data: Any,
        input_domain: Domain,
        input_metric: Metric,
        measure: Measure[Any],
        d_in: Any,
        d_mids: Sequence[Any],
        sequential: bool,
    ) -> None:
        super().__init__(name="adaptive " + ("sequential" if sequential else "concurrent") + " compositor")
        self._data = data
        self._domain, self._metric, self._measure = input_domain, input_metric, measure
        self._d_in, self._d_mids = d_in, d_mids
        self._pairs = isinstance(d_mids, PairSchedule)
        # the last query's pair at d_in, kept with the query itself (so its id is not reused): a loop that
        # submits the same measurement every step asks its loss hook once
        self._last: tuple[Measurement[Any, Any, Any, Any], PrivacyLoss | None] | None = None
        self._sequential = sequential
        self._children = SpawnedChildren(sequential, "a later query was made to the sequential compositor")
        self._next = 0

    def _answer(self, query: Measurement[Any, Any, Any, Any]) -> Any:
        check_query(query, self._domain, self._metric, "compositor")
        if self._pairs:
            self._admit_pair(query)
        else:
            self._admit_cost(query)
        self._next += 1  # charged before anything is released
        return run_query(query, self._data, self._children)

    def _admit_cost(self, query: Measurement[Any, Any, Any, Any]) -> None:
        if query.output_measure != self._measure:
            raise DomainMismatch(f"query is {query.output_measure!r}, this compositor is {self._measure!r}")
        if self._next >= len(self._d_mids):
            raise BudgetExceeded(f"all {len(self._d_mids)} budgets are used; nothing was run")
        budget = self._d_mids[self._next]
        cost = priced_cost(query, self._d_in)
        if not self._measure.less_equal(cost, budget):
            raise BudgetExceeded(
                f"query {self._next} costs {self._measure.display(cost)} at d_in={self._d_in}, over its "
                f"budget {_display_down(self._measure, budget)}; nothing was run or spent"
            )

    def _admit_pair(self, query: Measurement[Any, Any, Any, Any]) -> None:
        """Admit ``query`` iff its own pair at d_in is dominated by this step's declared pair
        (:func:`~dpcompose.combinators._pair_budget.domination_gap`, cached per pair of pairs)."""
        if self._next >= len(self._d_mids):
            raise BudgetExceeded(f"all {len(self._d_mids)} declared pairs are used; nothing was run")
        declared = self._d_mids[self._next]
        last = self._last
        if last is not None and last[0] is query:
            offered = last[1]
        else:
            offered = offered_pair(query, self._d_in)
            self._last = (query, offered)
        if offered is None:
            raise BudgetExceeded(
                f"query {self._next} ({query.node.label()}) reports no dominating pair at "
                f"d_in={self._d_in}, so it cannot be compared with its declared pair {declared.label()}; "
                "nothing was run or spent"
            )
        gap = None if offered is declared else domination_gap(offered, declared)
        if gap is not None:
            raise BudgetExceeded(
                f"query {self._next} offers the pair {offered.label()} at d_in={self._d_in}, not dominated "
                f"by its declared pair {declared.label()}: {gap}; nothing was run or spent"
            )

    def _status(self) -> str:
        return f"{self._next} of {len(self._d_mids)} budgets used"

    @property
    def budgets_used(self) -> int:
        """How many of the budgets ``d_mids`` (or declared pairs) have been used."""
        return self._next


def _make_adaptive(
    input_domain: Domain,
    input_metric: Metric,
    output_measure: Measure[Any],
    d_in: Any,
    d_mids: Any,
    sequential: bool,
    steps: Any = None,
    delta: Any = None,
) -> Measurement[Any, Any, Any, Any]:
    kind = "sequential" if sequential else "concurrent"
    check_space(input_domain, input_metric, allow_identifiers=True, allow_tables=True)  # generic
    if not isinstance(output_measure, Measure):
        raise InvalidParameter(f"output_measure={output_measure!r} must be a Measure")
    d_in_exact = read_d_in(input_domain, input_metric, d_in)
    schedule = PairSchedule.read(d_mids, steps)
    if schedule is not None:
        return _make_pair_adaptive(
            input_domain, input_metric, output_measure, d_in_exact, schedule, kind, delta
        )
    if delta is not None:
        raise InvalidParameter(
            f"delta={delta!r} reads the composed declared pairs at δ: it goes with pair budgets (PrivacyLoss "
            "values in d_mids) and ApproxDP output; budgets in the measure's units compose as they are"
        )
    if isinstance(d_mids, (str, bytes)) or not isinstance(d_mids, Sequence):
        raise InvalidParameter(f"d_mids={d_mids!r} must be a sequence of budgets, one per query")
    budgets = tuple(output_measure.parse(d, f"d_mids[{i}]") for i, d in enumerate(d_mids))
    if not budgets:
        raise InvalidParameter("d_mids must hold at least one budget")
    total = output_measure.compose(list(budgets))

    def run(data: Any) -> AdaptiveQueryable:
        return AdaptiveQueryable(
            data, input_domain, input_metric, output_measure, d_in_exact, budgets, sequential
        )

    return Measurement(
        input_domain,
        input_metric,
        output_measure,
        run,
        map_up_to_d_in(d_in_exact, total, "compositor"),
        interactive=True,
        node=Node(
            f"adaptive_{kind}",
            params=(("budgets", str(len(budgets))), ("d_in", str(d_in_exact))),
            source=output_measure.compose_source,
            theorem="basic composition of the fixed budgets d_mids",
            interaction=f"adaptive {kind}",
        ),
    )


_PAIR_SOURCES = {
    "sequential": "Zhu–Dong–Wang 2022 Thm 10 (the product of per-step dominating pairs dominates the "
    "adaptive composition)",
    "concurrent": "Vadhan–Zhang 2023 Thm 1.3 (f-DP composition holds concurrently: the product of the "
    "declared pairs)",
}


def _make_pair_adaptive(
    input_domain: Domain,
    input_metric: Metric,
    output_measure: Measure[Any],
    d_in: Any,
    schedule: PairSchedule,
    kind: str,
    delta: Any,
) -> Measurement[Any, Any, Any, Any]:
    """An adaptive compositor whose per-step budgets are declared dominating pairs (see
    :func:`make_adaptive_sequential`). The privacy map is the PLD of the product of the declared pairs."""
    total = schedule.total()  # (refuses pairs that mix Poisson sampling with sampling without replacement)
    value: Any
    if isinstance(output_measure, ApproxDP):
        if delta is None:
            raise InvalidParameter(
                "pair budgets composed into ApproxDP need delta= (the composite is read as ε(δ) of the "
                "declared pairs' privacy loss distribution), or pass output_measure=dp.ProfileDP()"
            )
        delta_q = output_measure.parse((0, delta), "target delta=")[1]
        value = (total.epsilon(delta_q), delta_q)
    elif isinstance(output_measure, ProfileDP):
        if delta is not None:
            raise InvalidParameter(
                f"delta={delta!r} goes with ApproxDP output; a ProfileDP compositor reports the whole curve"
            )
        value = PrivacyProfile.from_loss(total)
    else:
        raise InvalidParameter(
            f"pair budgets need output_measure=dp.ApproxDP() (with delta=) or dp.ProfileDP(), not "
            f"{output_measure!r}: a dominating pair is read as a privacy profile"
        )
    privacy_map = map_up_to_d_in(d_in, value, "compositor")

    def loss(d: Any) -> PrivacyLoss:
        privacy_map(d)  # (refuses d above d_in)
        return total

    def run(data: Any) -> AdaptiveQueryable:
        return AdaptiveQueryable(
            data, input_domain, input_metric, output_measure, d_in, schedule, kind == "sequential"
        )

    return Measurement(
        input_domain,
        input_metric,
        output_measure,
        run,
        privacy_map,
        interactive=True,
        loss=loss,
        node=Node(
            f"adaptive_{kind}",
            params=(("pairs", schedule.label()), ("d_in", str(d_in))),
            source=_PAIR_SOURCES[kind],
            theorem="the privacy loss distribution of the declared pairs; a query is admitted iff its pair "
            "at d_in is dominated by its step's (combinators._pair_budget.domination_gap)",
            interaction=f"adaptive {kind}",
        ),
    )


@recorded
def make_adaptive_sequential(
    input_domain: Domain,
    input_metric: Metric,
    output_measure: Measure[Any],
    d_in: Any,
    d_mids: Sequence[Any] | PrivacyLoss,
    *,
    steps: int | None = None,
    delta: float | None = None,
) -> Measurement[Any, Any, Any, Any]:
    """An interactive compositor that takes measurements as queries, chosen adaptively.

    Budgets in the measure's units (``d_mids`` a list of ε, (ε, δ), ρ, …): query i is run only if its
    ``map(d_in)`` fits ``d_mids[i]``; the privacy map at distances up to ``d_in`` is the composition of
    ``d_mids`` (Dwork–Rothblum–Vadhan 2010: the composition experiment lets the adversary choose each
    mechanism adaptively, via the measure's rule ``Measure.compose``).

    Budgets as dominating pairs (``d_mids`` a list of :class:`~dpcompose.accounting.PrivacyLoss` values,
    one per step, or one ``PrivacyLoss`` with ``steps=N`` for N steps of it): query i is run only if its
    own pair at ``d_in`` (its ``privacy_loss(d_in)``; for an (ε, δ), pure or profile guarantee without
    one, the pair RR_(ε,δ) or the profile's) is dominated by the declared pair i — same family and
    neighbouring relation, parameters ordered: Gaussian Δ/σ ≤, Laplace Δ/b ≤, discrete Laplace Δ ≤ and
    t ≥, discrete Gaussian Δ ≤ at the same σ, randomized response ε ≤ and k ≥, (ε, δ) pairs ε ≤ and δ ≤
    (an ε-DP pair under an (ε, δ) one), subsampled the same sampling with rate ≤ and child dominated, a
    composition part by part; the rule and its proof are in
    :func:`~dpcompose.combinators._pair_budget.domination_gap`. The check is cached per (offered,
    declared) pair, so a step costs O(1). The privacy map is the privacy loss distribution of the declared
    pairs' product (Zhu–Dong–Wang 2022 Thm 10: a fixed pair per step that dominates whatever mechanism is
    chosen at that step, adaptively), read at ``delta=`` for ``output_measure=dp.ApproxDP()`` or as a
    whole profile for ``dp.ProfileDP()``; the compositor also reports that product as its own pair. This
    is DP-SGD's shape: θₜ chosen from earlier outputs, noise and sampling declared in advance.

    Either way a refused query raises :class:`BudgetExceeded` naming both sides (for pairs also the
    offered part no declared part dominates, and the field that is larger, with both values); it runs
    nothing, spends nothing, and the compositor stays usable. Interactive answers are closed when a later
    query is made (sequential interaction).

    Args:
        d_mids: the budgets, one per step, in the output measure's units or as PrivacyLoss values; or one
            PrivacyLoss for ``steps`` steps.
        steps: with a single PrivacyLoss in ``d_mids``, the number of steps.
        delta: with pair budgets and ApproxDP output, the δ at which the declared pairs are read.

    Raises:
        InvalidParameter: malformed budgets (pairs mixed with other budgets, a pair without ``steps``),
            ``delta`` where it does not apply or missing where it does, an output measure other than
            ApproxDP or ProfileDP with pair budgets.
        UnsupportedComposition: declared pairs mixing Poisson sampling with sampling without replacement.

    Examples:
        >>> import dpcompose as dp
        >>> floats = dp.AtomDomain(float)
        >>> comp = dp.make_adaptive_sequential(floats, dp.AbsoluteDistance(), dp.PureDP(), 1, [0.5, 0.5])
        >>> comp.map(1)
        Fraction(1, 1)
        >>> q = comp(3.0)
        >>> answer = q(dp.m.make_laplace(floats, dp.AbsoluteDistance(), scale=2.0))
        >>> q(dp.m.make_laplace(floats, dp.AbsoluteDistance(), scale=1.0))
        Traceback (most recent call last):
        ...
        dpcompose.errors.BudgetExceeded: query 1 costs ε=1 at d_in=1, over its budget ε=0.5; ...

        With a pair budget: ten steps of the Laplace mechanism of scale 2 (its pair at d_in = 1):

        >>> lap = dp.m.make_laplace(floats, dp.AbsoluteDistance(), scale=2.0)
        >>> comp = dp.make_adaptive_sequential(floats, dp.AbsoluteDistance(), dp.ApproxDP(), 1,
        ...                                    lap.privacy_loss(1), steps=10, delta=1e-6)
        >>> q = comp(3.0)
        >>> answer = q(dp.m.make_laplace(floats, dp.AbsoluteDistance(), scale=4.0))  # dominated: admitted
        >>> q(dp.m.make_laplace(floats, dp.AbsoluteDistance(), scale=1.0))
        Traceback (most recent call last):
        ...
        dpcompose.errors.BudgetExceeded: query 1 offers the pair discrete_laplace(...) at d_in=1, ...
    """
    return _make_adaptive(
        input_domain, input_metric, output_measure, d_in, d_mids, True, steps=steps, delta=delta
    )


@recorded
def make_adaptive_concurrent(
    input_domain: Domain,
    input_metric: Metric,
    output_measure: Measure[Any],
    d_in: Any,
    d_mids: Sequence[Any] | PrivacyLoss,
    *,
    steps: int | None = None,
    delta: float | None = None,
) -> Measurement[Any, Any, Any, Any]:
    """Like :func:`make_adaptive_sequential` (the same budgets, pair budgets included), but interactive
    answers stay open and may interleave.

    Source: concurrent composition — Vadhan–Wang 2021 Thm 3.3 (pure), Vadhan–Zhang 2023 Thm 1.3
    ((ε, δ), f-DP; for pair budgets, the declared pairs' product), Lyu 2022 (Rényi, zCDP) — via the
    measure's rule (``Measure.compose``).

    Examples:
        >>> import dpcompose as dp
        >>> comp = dp.make_adaptive_concurrent(
        ...     dp.AtomDomain(float), dp.AbsoluteDistance(), dp.ZCDP(), 1, [0.125, 0.125])
        >>> comp.map(1)
        Fraction(1, 4)
    """
    return _make_adaptive(
        input_domain, input_metric, output_measure, d_in, d_mids, False, steps=steps, delta=delta
    )
