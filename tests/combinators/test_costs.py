"""Every cost passes one validation before anything is charged (issue 11, item 5).

A negative cost would refund a budget; a float, NaN, string or wrongly typed cost must be refused with
InvalidParameter (not AttributeError) — on every path that charges: filters of each measure, the
odometer, the adaptive compositors — and nothing may run or be spent.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import pytest

import dpcompose as dp
from dpcompose.combinators._filter import spend_only_grows
from dpcompose.combinators._ledger import LedgerEntry

FLOAT = dp.AtomDomain(float)
ABS = dp.AbsoluteDistance()


def query(measure: dp.Measure[Any], cost: object, ran: list[int]) -> Any:
    def run(x: float) -> float:
        ran.append(1)
        return x

    return dp.make_user_measurement(FLOAT, ABS, measure, run, lambda d: cost, trusted=True)


def pure(eps: object) -> tuple[dp.Measure[Any], object]:
    return dp.PureDP(), eps


# (name, factory of a live queryable, the cost read after the attempts, a valid cost, bad costs)
Paths = list[tuple[str, Callable[[], Any], Callable[[Any], object], tuple[dp.Measure[Any], object]]]


def charging_paths() -> Paths:
    half = Fraction(1, 2)
    return [
        (
            "pure filter",
            lambda: dp.make_privacy_filter(FLOAT, ABS, dp.PureDP(), 1, 1.0)(0.0),
            lambda q: q.spent(),
            (dp.PureDP(), half),
        ),
        (
            "approx filter",
            lambda: dp.make_privacy_filter(FLOAT, ABS, dp.ApproxDP(), 1, (1.0, 1e-6), rule="basic")(0.0),
            lambda q: q.spent(),
            (dp.ApproxDP(), (half, Fraction(0))),
        ),
        (
            "zcdp filter",
            lambda: dp.make_privacy_filter(FLOAT, ABS, dp.ZCDP(), 1, 1.0)(0.0),
            lambda q: q.spent(),
            (dp.ZCDP(), half),
        ),
        (
            "odometer",
            lambda: dp.make_odometer(FLOAT, ABS, dp.PureDP(), 1)(0.0),
            lambda q: q.privacy_loss(),
            (dp.PureDP(), half),
        ),
        (
            "adaptive sequential",
            lambda: dp.make_adaptive_sequential(FLOAT, ABS, dp.PureDP(), 1, [1.0, 1.0])(0.0),
            lambda q: q.budgets_used,
            (dp.PureDP(), half),
        ),
        (
            "adaptive concurrent",
            lambda: dp.make_adaptive_concurrent(FLOAT, ABS, dp.PureDP(), 1, [1.0, 1.0])(0.0),
            lambda q: q.budgets_used,
            (dp.PureDP(), half),
        ),
    ]


BAD_SCALARS: list[object] = [Fraction(-1, 2), -1, 0.25, float("nan"), float("inf"), "0.1", None, True]


def bad_costs(measure: dp.Measure[Any]) -> list[object]:
    if isinstance(measure, dp.ApproxDP):
        return [(b, Fraction(0)) for b in BAD_SCALARS] + [
            (Fraction(1, 2), Fraction(-1, 10)),
            (Fraction(1, 2), Fraction(3, 2)),
            Fraction(1, 2),
            [Fraction(1), Fraction(0)],
            (Fraction(1),),
        ]
    return BAD_SCALARS


@pytest.mark.parametrize("path", charging_paths(), ids=lambda p: p[0])
def test_every_charging_path_refuses_bad_costs_and_spends_nothing(path: Any) -> None:
    _, make, spent, (measure, good) = path
    q = make()
    before = spent(q)
    ran: list[int] = []
    for cost in bad_costs(measure):
        with pytest.raises(dp.InvalidParameter):
            q(query(measure, cost, ran))
        assert spent(q) == before, cost
    assert ran == []
    q(query(measure, good, ran))  # still usable, and a valid cost is charged
    assert ran == [1] and spent(q) != before


def test_negative_costs_cannot_refund_a_filter() -> None:
    """The review's case: budget ε = 1 released 22 answers of ε = 1/2 with refunds in between."""
    q = dp.make_privacy_filter(FLOAT, ABS, dp.PureDP(), 1, 1.0)(0.0)
    ran: list[int] = []
    answered = 0
    for i in range(44):
        cost = Fraction(1, 2) if i % 2 == 0 else Fraction(-1, 2)
        try:
            q(query(dp.PureDP(), cost, ran))
            answered += 1
        except (dp.BudgetExceeded, dp.InvalidParameter):
            pass
    assert answered == 2 and len(ran) == 2
    assert q.spent()["epsilon"] == 1


def test_odometer_never_reports_a_negative_loss() -> None:
    q = dp.make_odometer(FLOAT, ABS, dp.PureDP(), 1)(0.0)
    ran: list[int] = []
    q(query(dp.PureDP(), Fraction(1, 2), ran))
    for _ in range(20):
        with pytest.raises(dp.InvalidParameter, match="non-negative"):
            q(query(dp.PureDP(), Fraction(-1, 2), ran))
    assert q.privacy_loss() == Fraction(1, 2)


def test_a_map_raising_a_raw_error_is_refused_clearly() -> None:
    def broken(d: Any) -> Fraction:
        raise AttributeError("no such thing")

    m = dp.make_user_measurement(FLOAT, ABS, dp.PureDP(), lambda x: x, broken, trusted=True)
    q = dp.make_privacy_filter(FLOAT, ABS, dp.PureDP(), 1, 1.0)(0.0)
    with pytest.raises(dp.InvalidParameter, match="AttributeError"):
        q(m)
    assert q.spent()["epsilon"] == 0


def test_the_ledger_refuses_an_entry_that_lowers_spending() -> None:
    """Whatever a rule computes, a charge that lowers a running sum or skips the query count is refused."""
    old = LedgerEntry("filter", "spec", "basic", (Fraction(1, 2), Fraction(0)), 3)
    ok = old.replace(state=(Fraction(3, 4), Fraction(0)), queries=4)
    assert spend_only_grows(old, ok) is ok
    for bad in (
        old.replace(state=(Fraction(1, 4), Fraction(0)), queries=4),
        old.replace(state=(Fraction(3, 4), Fraction(-1)), queries=4),
        old.replace(state=(Fraction(3, 4), Fraction(0)), queries=3),
        old.replace(state=(Fraction(3, 4),), queries=4),
    ):
        with pytest.raises(dp.LedgerError, match="lower"):
            spend_only_grows(old, bad)
    fresh = LedgerEntry("filter", "spec", "", (), 0)  # rule="auto" fixes its rule at the first charge
    assert spend_only_grows(fresh, ok.replace(queries=1)).queries == 1


@pytest.mark.parametrize(
    ("measure", "cost"),
    [
        (dp.PureDP(), Fraction(1, 3)),
        (dp.ZCDP(), 2),
        (dp.ApproxDP(), (Fraction(1), Fraction(1, 10**6))),
    ],
)
def test_check_cost_accepts_exact_costs(measure: dp.Measure[Any], cost: object) -> None:
    assert measure.check_cost(cost) == cost


def test_a_cost_with_delta_one_is_refused_and_not_charged() -> None:
    """Found by review: δ = 1 passed ``check_cost`` (only δ > 1 was refused), so an odometer charged a
    measurement that releases its input exactly, as if (0, 1) were a guarantee."""
    with pytest.raises(dp.InvalidParameter, match="below 1"):
        dp.ApproxDP().check_cost((Fraction(0), Fraction(1)))
    exact_release = dp.make_user_measurement(
        FLOAT, ABS, dp.ApproxDP(), lambda x: x, lambda d_in: (Fraction(0), Fraction(1)), trusted=True
    )
    q = dp.make_odometer(FLOAT, ABS, dp.ApproxDP(), 1)(42.0)
    with pytest.raises(dp.InvalidParameter, match="below 1"):
        q(exact_release)
    assert q.privacy_loss() == (0, 0)
