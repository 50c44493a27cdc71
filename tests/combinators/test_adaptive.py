from __future__ import annotations

import contextlib
import threading
from fractions import Fraction
from typing import Any

import pytest

import dpcompose as dp

FLOAT = dp.AtomDomain(float)
ABS = dp.AbsoluteDistance()


def spy_measurement(eps: Fraction, calls: list[Any]) -> dp.Measurement:  # type: ignore[type-arg]
    def run(x: float) -> float:
        calls.append(x)
        return x

    return dp.make_user_measurement(FLOAT, ABS, dp.PureDP(), run, lambda d: d * eps, trusted=True)


def test_refused_query_runs_nothing_and_spends_nothing() -> None:
    comp = dp.make_adaptive_sequential(FLOAT, ABS, dp.PureDP(), 1, [0.25, 0.5])
    q = comp(1.0)
    calls: list[Any] = []
    with pytest.raises(dp.BudgetExceeded, match="query 0"):
        q(spy_measurement(Fraction(1, 2), calls))
    assert calls == []
    assert q.budgets_used == 0
    assert q(spy_measurement(Fraction(1, 4), calls)) == 1.0  # still usable, same slot
    assert q(spy_measurement(Fraction(1, 2), calls)) == 1.0
    with pytest.raises(dp.BudgetExceeded, match="all 2 budgets"):
        q(spy_measurement(Fraction(0), calls))
    assert len(calls) == 2


def test_adaptive_map_is_composition_of_budgets() -> None:
    comp = dp.make_adaptive_concurrent(FLOAT, ABS, dp.ApproxDP(), 1, [(0.5, 1e-6), (0.25, 0)])
    assert comp.map(1) == (Fraction(3, 4), Fraction(1, 10**6))
    with pytest.raises(dp.InvalidParameter, match="d_in=2"):
        comp.map(2)


def test_wrong_query_types_refused() -> None:
    q = dp.make_adaptive_sequential(FLOAT, ABS, dp.PureDP(), 1, [1.0])(0.0)
    with pytest.raises(dp.InvalidParameter, match="Measurement"):
        q(lambda x: x)
    with pytest.raises(dp.DomainMismatch, match="ZCDP"):
        q(dp.m.make_gaussian(FLOAT, ABS, scale=1.0))
    with pytest.raises(dp.DomainMismatch):
        q(dp.m.make_laplace(dp.AtomDomain(int), ABS, scale=1.0))


def test_adaptive_sequential_closes_spawned_interactive_answers() -> None:
    ints = dp.VectorDomain(dp.AtomDomain(int))
    sym = dp.SymmetricDistance()
    comp = dp.make_adaptive_sequential(ints, sym, dp.PureDP(), 1, [1.0, 1.0])
    q = comp([1, 2, 3])
    first = q(dp.m.make_interactive_laplace(ints, sym, scale=10.0, max_queries=2))
    first(dp.t.make_count(ints, sym))
    q(dp.m.make_interactive_laplace(ints, sym, scale=10.0, max_queries=2))
    with pytest.raises(dp.SequentialityError):
        first(dp.t.make_count(ints, sym))


def test_nesting_adaptive_compositors_in_sequential() -> None:
    a = dp.make_adaptive_sequential(FLOAT, ABS, dp.PureDP(), 1, [0.5])
    b = dp.make_adaptive_concurrent(FLOAT, ABS, dp.PureDP(), 1, [0.25, 0.25])
    both = dp.make_sequential(a, b)
    assert both.map(1) == 1
    qa, qb = both(2.0)
    assert isinstance(qa, dp.Queryable) and isinstance(qb, dp.Queryable)


def test_eight_threads_never_exceed_budget() -> None:
    budgets = 100
    comp = dp.make_adaptive_concurrent(FLOAT, ABS, dp.PureDP(), 1, [0.01] * budgets)
    q = comp(0.0)
    releases: list[Any] = []
    query = spy_measurement(Fraction(1, 100), releases)

    def work() -> None:
        for _ in range(1000):
            with contextlib.suppress(dp.BudgetExceeded):
                q(query)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(releases) == budgets
    assert q.budgets_used == budgets
