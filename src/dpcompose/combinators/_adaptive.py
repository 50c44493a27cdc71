"""Adaptive compositors: queryables that take measurements as queries, within fixed budgets."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

from dpcompose.accounting._display import format_down
from dpcompose.core import ZCDP, ApproxDP, Domain, Measure, Measurement, Metric, Node, PureDP, Queryable
from dpcompose.core._metrics import check_space
from dpcompose.core._queryable import created_queryables
from dpcompose.core._recipe import recorded
from dpcompose.errors import BudgetExceeded, DomainMismatch, DPError, InvalidParameter

__all__ = [
    "check_query",
    "make_adaptive_concurrent",
    "make_adaptive_sequential",
    "map_up_to_d_in",
    "priced_cost",
    "run_query",
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
    try:
        d = query.map(d_in)
    except DPError:
        raise
    except Exception as exc:
        raise InvalidParameter(
            f"query {label}: its privacy map raised {type(exc).__name__}: {exc}; nothing was run or spent"
        ) from exc
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


def map_up_to_d_in(d_in: Any, value: Any, who: str) -> Callable[[Any], Any]:
    """The privacy map of a compositor that prices its queries at ``d_in``: ``value`` for any distance up
    to ``d_in``, and a refusal above it (queries were only checked at ``d_in``)."""

    def privacy_map(d: Any) -> Any:
        if d > d_in:
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
        d_mids: tuple[Any, ...],
        sequential: bool,
    ) -> None:
        super().__init__(name="adaptive " + ("sequential" if sequential else "concurrent") + " compositor")
        self._data = data
        self._domain, self._metric, self._measure = input_domain, input_metric, measure
        self._d_in, self._d_mids = d_in, d_mids
        self._sequential = sequential
        self._children = SpawnedChildren(sequential, "a later query was made to the sequential compositor")
        self._next = 0

    def _answer(self, query: Measurement[Any, Any, Any, Any]) -> Any:
        check_query(query, self._domain, self._metric, "compositor")
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
        self._next += 1  # charged before anything is released
        return run_query(query, self._data, self._children)

    def _status(self) -> str:
        return f"{self._next} of {len(self._d_mids)} budgets used"

    @property
    def budgets_used(self) -> int:
        """How many of the budgets ``d_mids`` have been used."""
        return self._next


def _make_adaptive(
    input_domain: Domain,
    input_metric: Metric,
    output_measure: Measure[Any],
    d_in: Any,
    d_mids: Sequence[Any],
    sequential: bool,
) -> Measurement[Any, Any, Any, Any]:
    kind = "sequential" if sequential else "concurrent"
    check_space(input_domain, input_metric, allow_identifiers=True)  # generic over the metric
    if not isinstance(output_measure, Measure):
        raise InvalidParameter(f"output_measure={output_measure!r} must be a Measure")
    d_in_exact = input_metric.validate(d_in)
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


@recorded
def make_adaptive_sequential(
    input_domain: Domain,
    input_metric: Metric,
    output_measure: Measure[Any],
    d_in: Any,
    d_mids: Sequence[Any],
) -> Measurement[Any, Any, Any, Any]:
    """An interactive compositor that takes measurements as queries, chosen adaptively.

    Query i is run only if its ``map(d_in)`` fits ``d_mids[i]``; otherwise :class:`BudgetExceeded` is
    raised, nothing runs, nothing is spent and the compositor stays usable. Interactive answers are closed
    when a later query is made (sequential interaction). The privacy map at distances up to ``d_in`` is
    the composition of ``d_mids``.

    Source: adaptive composition with fixed budgets — Dwork–Rothblum–Vadhan 2010 (the composition
    experiment lets the adversary choose each mechanism adaptively), via the measure's rule
    (``Measure.compose``).

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
    """
    return _make_adaptive(input_domain, input_metric, output_measure, d_in, d_mids, sequential=True)


@recorded
def make_adaptive_concurrent(
    input_domain: Domain,
    input_metric: Metric,
    output_measure: Measure[Any],
    d_in: Any,
    d_mids: Sequence[Any],
) -> Measurement[Any, Any, Any, Any]:
    """Like :func:`make_adaptive_sequential`, but interactive answers stay open and may interleave.

    Source: concurrent composition — Vadhan–Wang 2021 Thm 3.3 (pure), Vadhan–Zhang 2023 Thm 1.3
    ((ε, δ), f-DP), Lyu 2022 (Rényi, zCDP) — via the measure's rule (``Measure.compose``).

    Examples:
        >>> import dpcompose as dp
        >>> comp = dp.make_adaptive_concurrent(
        ...     dp.AtomDomain(float), dp.AbsoluteDistance(), dp.ZCDP(), 1, [0.125, 0.125])
        >>> comp.map(1)
        Fraction(1, 4)
    """
    return _make_adaptive(input_domain, input_metric, output_measure, d_in, d_mids, sequential=False)
