"""Privacy odometers: running totals, no refusals, unsupported measures, persistence."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpcompose as dp

FLOAT = dp.AtomDomain(float)
ABS = dp.AbsoluteDistance()


def spy(measure: dp.Measure, cost: Any, calls: list[Any]) -> dp.Measurement:  # type: ignore[type-arg]
    def run(x: float) -> float:
        calls.append(x)
        return x

    return dp.make_user_measurement(FLOAT, ABS, measure, run, lambda d: cost, trusted=True)


@given(
    st.lists(
        st.tuples(st.floats(min_value=0, max_value=3, allow_nan=False), st.sampled_from([0.0, 1e-9, 1e-6])),
        max_size=30,
    )
)
def test_odometer_reports_the_exact_basic_total(costs: list[tuple[float, float]]) -> None:
    q = dp.make_odometer(FLOAT, ABS, dp.ApproxDP(), 1)(0.0)
    calls: list[Any] = []
    for e, d in costs:
        q(spy(dp.ApproxDP(), (Fraction(e), Fraction(d)), calls))
    assert len(calls) == len(costs)  # never refuses
    eps = sum((Fraction(e) for e, _ in costs), Fraction(0))
    delta = sum((Fraction(d) for _, d in costs), Fraction(0))
    # exact, except that a sum with a huge denominator is rounded up to a multiple of 2^-128 (O(1) per query)
    slack = Fraction(len(costs), 2**128)
    got_eps, got_delta = q.privacy_loss()
    assert eps <= got_eps <= eps + slack
    assert delta <= got_delta <= delta + slack


def test_pure_odometer_and_mixed_queries() -> None:
    q = dp.make_odometer(FLOAT, ABS, dp.PureDP(), 1)(0.0)
    assert q.privacy_loss() == 0
    q(dp.m.make_laplace(FLOAT, ABS, scale=4.0))
    q(dp.m.make_laplace(FLOAT, ABS, scale=4.0))
    assert q.privacy_loss() == Fraction(1, 2)
    with pytest.raises(dp.DomainMismatch):
        q(dp.m.make_gaussian(FLOAT, ABS, scale=1.0))
    assert q.privacy_loss() == Fraction(1, 2)


def test_odometer_has_no_a_priori_bound_and_refuses_zcdp() -> None:
    odo = dp.make_odometer(FLOAT, ABS, dp.PureDP(), 1)
    with pytest.raises(dp.UnsupportedComposition, match="privacy_loss"):
        odo.map(1)
    with pytest.raises(dp.UnsupportedComposition, match="zCDP"):
        dp.make_odometer(FLOAT, ABS, dp.ZCDP(), 1)


def test_odometer_persists_in_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "odo.db"
    q = dp.make_odometer(FLOAT, ABS, dp.ApproxDP(), 1, ledger=dp.SQLiteLedger(path, "o"))(0.0)
    q(spy(dp.ApproxDP(), (Fraction(1, 3), Fraction(1, 10**6)), []))
    again = dp.make_odometer(FLOAT, ABS, dp.ApproxDP(), 1, ledger=dp.SQLiteLedger(path, "o"))(0.0)
    assert again.privacy_loss() == (Fraction(1, 3), Fraction(1, 10**6))
    assert again.queries_charged == 1


def test_odometer_children_may_interleave() -> None:
    ints = dp.VectorDomain(dp.AtomDomain(int))
    sym = dp.SymmetricDistance()
    inner = dp.make_adaptive_concurrent(ints, sym, dp.PureDP(), 1, [0.5])
    q = dp.make_odometer(ints, sym, dp.PureDP(), 1)([1, 2])
    a, b = q(inner), q(inner)
    count = dp.t.make_count(ints, sym)
    lap = count >> dp.m.make_laplace(count.output_domain, count.output_metric, scale=2.0)
    b(lap)
    a(lap)
    assert q.privacy_loss() == 1
