"""A Context's budget shares: computed when handed out (the same exact values), each handed out once, also
to threads releasing at once."""

from __future__ import annotations

import sys
import threading
from fractions import Fraction
from typing import Any

import polars as pl
import pytest

import dpcompose as dp
from dpcompose.tables._shares import BudgetShares

SCHEMA = {"x": dp.Column(float, bounds=(0.0, 10.0))}
DF = pl.DataFrame({"x": [1.0, 2.0, 3.0]})


def _eager(budget: Any, weights: list[Fraction]) -> list[Any]:
    """The shares as the Context listed them up front: ``budget·w/Σw``, exact."""
    total = Fraction(0)
    for w in weights:
        total += w
    if isinstance(budget, tuple):
        return [(budget[0] * w / total, budget[1] * w / total) for w in weights]
    return [budget * w / total for w in weights]


@pytest.mark.parametrize(
    ("measure", "loss", "budget"),
    [
        (dp.PureDP(), 1.3, Fraction(13, 10)),  # (floats are read as the decimals they print as)
        (dp.ZCDP(), Fraction(1, 7), Fraction(1, 7)),
        (dp.ApproxDP(), (0.7, 1e-6), (Fraction(7, 10), Fraction(1, 10**6))),
    ],
)
@pytest.mark.parametrize("weights", [None, [1, 2.5, Fraction(1, 3), 0.1, 7]])
def test_shares_handed_out_equal_the_eager_ones(measure: Any, loss: Any, budget: Any, weights: Any) -> None:
    split: dict[str, Any] = {"split_evenly_over": 5} if weights is None else {"split_by_weights": weights}
    ctx = dp.Context(DF, SCHEMA, privacy_loss=loss, measure=measure, **split)
    expected = _eager(budget, [Fraction(1)] * 5 if weights is None else [Fraction(w) for w in weights])
    got = []
    for _ in range(5):
        q = ctx.query().agg(dp.tables.count())
        q.release()
        got.append(q.budget)
    assert got == expected
    flat = [x for v in got for x in (v if isinstance(v, tuple) else (v,))]
    assert all(type(x) is Fraction for x in flat)
    with pytest.raises(dp.BudgetExceeded, match="all 5 budget shares"):
        ctx.query()


def test_a_context_with_the_most_shares_is_built_at_once() -> None:
    """2²⁰ shares were listed up front (a list of 2²⁰ Fractions and their sum: ~5–17 s)."""
    ctx = dp.Context(DF, SCHEMA, privacy_loss=1.0, split_evenly_over=2**20)
    assert "shares=1048576" in repr(ctx)
    assert ctx.query().agg(dp.tables.count()).budget == Fraction(1, 2**20)
    shares = BudgetShares.even(dp.PureDP(), Fraction(1), 2**20)  # nothing of the shares' size is held
    held = [v for v in vars(shares).values() if isinstance(v, (list, tuple, dict, set))]
    assert len(shares) == 2**20 and all(len(v) < 2**10 for v in held)


def test_many_threads_releasing_at_once_get_each_share_once() -> None:
    """16 threads building and releasing at once from 20 weighted shares: several read the same next share
    and released at it (31–34 releases for 20 shares; the filter still capped the total). Each thread tries
    until every share is given out (with a fixed number of tries, lost races could use them all up first);
    trials repeat until one has a lost race (on a loaded machine the threads may not overlap at all), and
    every trial must hand each share out once."""
    weights = list(range(1, 21))
    shares = _eager(Fraction(1), [Fraction(w) for w in weights])
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    raced = False
    try:
        for _ in range(20):
            ctx = dp.Context(DF, SCHEMA, privacy_loss=1.0, split_by_weights=weights)
            released: list[Any] = []
            refused: list[str] = []
            barrier = threading.Barrier(16)

            def work(
                ctx: dp.Context = ctx,
                released: list[Any] = released,
                refused: list[str] = refused,
                start: threading.Barrier = barrier,
            ) -> None:
                start.wait()
                for _ in range(400):
                    try:
                        q = ctx.query().agg(dp.tables.count())
                        q.release()
                    except dp.BudgetExceeded as exc:
                        refused.append(str(exc))
                        if "given out" in str(exc):
                            return
                        continue
                    released.append(q.budget)

            threads = [threading.Thread(target=work, daemon=True) for _ in range(16)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)
            assert not any(t.is_alive() for t in threads)
            assert sorted(released) == shares  # each share once, at its own value
            assert ctx.remaining()["epsilon"] == 0  # (so no refused release spent anything)
            raced = raced or any("which another release took" in r for r in refused)
            if raced:
                break
        assert raced, "no trial had two threads price a query at the same share"
    finally:
        sys.setswitchinterval(old)


def test_a_query_priced_at_a_share_already_taken_is_refused_and_spends_nothing() -> None:
    """Two queries built before either is released are priced at the same share; the second was released
    at share 0's ε = 1/4 as the second release, whose share is 3/4."""
    ctx = dp.Context(DF, SCHEMA, privacy_loss=1.0, split_by_weights=[1, 3])
    a = ctx.query().agg(dp.tables.count())
    b = ctx.query().agg(dp.tables.sum("x"))
    a.release()
    before = ctx.remaining()
    with pytest.raises(dp.BudgetExceeded, match=r"priced at share 0 \(ε=0\.25\).*share, 1, is ε=0\.75"):
        b.release()
    assert ctx.remaining() == before
    again = ctx.query().agg(dp.tables.sum("x"))
    assert again.budget == Fraction(3, 4)
    again.release()
    assert ctx.remaining()["epsilon"] == 0


def test_equal_shares_go_to_queries_built_before_their_turn() -> None:
    """With equal shares a query built early is priced at the share it gets: it is released as before."""
    ctx = dp.Context(DF, SCHEMA, privacy_loss=1.0, split_evenly_over=2)
    a, b = ctx.query().agg(dp.tables.count()), ctx.query().agg(dp.tables.count())
    b.release()
    a.release()
    assert ctx.remaining()["epsilon"] == 0


def test_an_explicit_release_takes_the_next_turn() -> None:
    ctx = dp.Context(DF, SCHEMA, privacy_loss=1.0, split_by_weights=[1, 1, 2])
    ctx.query(privacy_loss=0.25).agg(dp.tables.count()).release()
    assert ctx.query().agg(dp.tables.count()).budget == Fraction(1, 4)  # share 1
    q = ctx.query().agg(dp.tables.count())
    ctx.query(privacy_loss=0.25).agg(dp.tables.count()).release()  # took share 1's turn
    with pytest.raises(dp.BudgetExceeded, match="which another release took"):
        q.release()  # (share 2 is 1/2: q was priced at 1/4)


def test_a_release_charged_and_then_failed_takes_its_share() -> None:
    """A lazy frame whose own plan fails when the query reads it fails after the charge: its share is
    spent, and the next query gets the next share (it was priced at the same share again)."""
    lazy = pl.LazyFrame({"x": ["a"]}).with_columns(pl.col("x").cast(pl.Float64, strict=True))
    ctx = dp.Context(lazy, SCHEMA, privacy_loss=1.0, split_by_weights=[1, 3])
    with pytest.raises(dp.DPError):
        ctx.query().agg(dp.tables.sum("x")).release()
    assert ctx.remaining()["epsilon"] == Fraction(3, 4)
    assert ctx.query().agg(dp.tables.count()).budget == Fraction(3, 4)
