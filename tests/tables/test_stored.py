"""Table work as data: dp.to_json of a table query or a Context stores the plan and configuration (never
the data), and dp.from_json(text, data=frame) rebuilds the same plan and the same privacy map; a tampered
file is refused with a DPError before anything is built or spent."""

from __future__ import annotations

import dataclasses
import datetime
import json
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import polars as pl
import pytest

import dpcompose as dp
from dpcompose.tables import count, count_distinct, mean, quantile, sum, variance
from dpcompose.transformations._expr import Expr, typed

SECRET = "zq-secret-name"
FRAME = pl.DataFrame(
    {
        "user": [987654321, 987654321, 2, 3, 4],
        "age": [31, 47, 22, 68, 39],
        "state": ["CA", SECRET, "CA", "TX", "NY"],
        "income": [1234.5678, 50.25, None, 777.125, 10.0],
        "member": [True, False, True, None, False],
        "day": [datetime.date(2024, 2, 29)] * 5,
    }
)
SCHEMA = {
    "user": dp.Column(int),
    "age": dp.Column(int, bounds=(0, 100)),
    "state": dp.Column(str),
    "income": dp.Column(float, bounds=(0.0, 2000.0), nullable=True, fill=0.0),
    "member": dp.Column(bool, nullable=True),
    "day": dp.Column(datetime.date),
}


def _ctx(measure: Any = None, loss: Any = 1.0, **kw: Any) -> dp.Context:
    kw.setdefault("split_evenly_over", 3)
    return dp.Context(
        FRAME, SCHEMA, privacy_unit=dp.unit_of(id="user", max_rows=2, max_groups=2), privacy_loss=loss,
        measure=measure, **kw,
    )  # fmt: skip


def _spent_a_third() -> Any:
    """What a fresh Context has left after a release of a third of its budget."""
    ref = _ctx()
    ref.query().agg(count()).release()
    return ref.remaining()


def _plan(q: Any) -> tuple[Any, ...]:
    return dataclasses.astuple(q.plan)  # Expr overloads ==: compare the trees as plain tuples


QUERIES: dict[str, Callable[[], Any]] = {
    "dp.col filter, every aggregate, known keys": lambda: (
        _ctx().query()
        .filter((dp.col("age") >= 18) & dp.col("state").is_in(["CA", "NY", "TX"]))
        .group_by("state", keys=["CA", "NY", "TX"])
        .agg(count(), sum("income"), mean("age", bounds=(0, 90)), variance("income"),
             quantile("age", 0.25, [20, 40, 60]), count_distinct("user"))
    ),
    "Polars filter and derived columns, Polars aggregates": lambda: (
        _ctx().query()
        .with_columns(
            (pl.col("income") / pl.col("age")).alias("per_year"),
            pl.when(pl.col("member")).then(pl.col("income").clip(0.0, 500.0)).otherwise(0.0).alias("kept"),
            bounds={"per_year": (0.0, 100.0), "kept": (0.0, 500.0)},
        )
        .with_column("rounded", (pl.col("age").cast(pl.Float64) / 10).round(), bounds=(0.0, 10.0), fill=1.0)
        .filter(pl.col("state").str.starts_with("C") | (pl.col("day").dt.year() == 2024))
        .filter(pl.col("income").is_not_null() & ~pl.col("member").is_null())
        .agg(pl.len(), pl.col("per_year").sum(), pl.col("kept").mean().alias("avg_kept"),
             pl.col("rounded").var(), pl.col("state").n_unique())
    ),
    "two group-by columns, select": lambda: (
        _ctx(split_by_weights=[1, 3], split_evenly_over=None).query()
        .select("state", "member", "age", "user")
        .group_by("state", "member", keys=[("CA", True), ("CA", False), ("NY", None)])
        .agg(count(), sum("age"))
    ),
    "zCDP": lambda: (
        _ctx(dp.ZCDP(), 0.5).query().group_by("member", keys=[True, False]).agg(mean("income"))
    ),
    "unknown keys, Laplace": lambda: (
        _ctx(dp.ApproxDP(), (1.0, 1e-6)).query().filter(pl.col("age") > 30).group_by("state", keys=None)
        .agg(count(), sum("age"))
    ),
    "unknown keys, Gaussian": lambda: (
        _ctx(dp.ApproxDP(), (1.0, 1e-6)).query()
        .group_by("state", keys=None, selection="gaussian").agg(count())
    ),
    "explicit budget": lambda: _ctx().query(privacy_loss=0.125).agg(sum("income", bounds=(0.0, 100.0))),
}  # fmt: skip


@pytest.mark.parametrize("name", list(QUERIES))
def test_a_query_round_trips_to_the_same_plan_and_map(name: str) -> None:
    q = QUERIES[name]()
    text = dp.to_json(q)
    back = dp.from_json(text, data=FRAME)
    assert isinstance(back, dp.tables.TableQuery)
    assert _plan(back) == _plan(q)
    assert back.aggs == q.aggs and back.budget == q.budget
    for d in (1, 2, 5):
        assert back.measurement.map(d) == q.measurement.map(d)
    assert dp.to_json(back) == text  # stable
    assert back.context is not q.context and back.context.remaining() == q.context.remaining()


@pytest.mark.parametrize("name", list(QUERIES))
def test_the_file_holds_no_data(name: str) -> None:
    text = dp.to_json(QUERIES[name]())
    for value in (SECRET, "987654321", "1234.5678", "0x1.34a4", "777.125", "2024-02-29"):
        assert value not in text


def test_a_loaded_query_releases_and_is_charged_to_its_context() -> None:
    q = QUERIES["dp.col filter, every aggregate, known keys"]()
    back = dp.from_json(dp.to_json(q), data=FRAME)
    out = back.release()
    assert out["state"].to_list() == ["CA", "NY", "TX"]
    assert back.context.remaining() == _spent_a_third() != _ctx().remaining()


def _weighted() -> dp.Context:
    return _ctx(split_by_weights=[1, 3], split_evenly_over=None)  # shares of 1/4 and 3/4


def test_a_query_priced_from_a_share_keeps_its_share_when_loaded() -> None:
    """Loaded out of turn, a share-priced query is refused (nothing spent) as it would be unstored, and the
    Context's shares stay in step with its spending."""
    first = dp.to_json(_weighted().query().agg(count()))  # priced at share 0: 1/4
    ctx = _weighted()
    ctx.query().agg(count()).release()  # share 0 goes to another release
    left = ctx.remaining()
    back = dp.from_json(first, data=ctx)
    with pytest.raises(dp.BudgetExceeded, match="priced at share 0"):
        back.release()
    assert ctx.remaining() == left
    assert ctx.query().agg(count()).budget == Fraction(3, 4)  # share 1 is still there, at its value
    ctx.query().agg(count()).release()
    assert ctx.remaining()["epsilon"] == 0
    assert back.share == 0 and back.budget == Fraction(1, 4)
    assert json.loads(first)["root"]["table_query"]["share"] == 0


def test_a_query_priced_from_a_later_share_releases_in_its_turn() -> None:
    ref = _weighted()
    ref.query().agg(count()).release()
    second = dp.to_json(ref.query().agg(sum("age")))  # priced at share 1: 3/4
    ctx = _weighted()
    back = dp.from_json(second, data=ctx)
    with pytest.raises(dp.BudgetExceeded, match="priced at share 1"):
        back.release()  # share 0 (1/4) is next: not its price
    ctx.query().agg(count()).release()
    back.release()
    assert ctx.remaining()["epsilon"] == 0


def test_a_share_priced_query_needs_its_share_in_the_context_it_loads_into() -> None:
    text = dp.to_json(_weighted().query().agg(count()))
    for other in (_ctx(), _ctx(split_evenly_over=1)):  # share 0 is 1/3, or 1
        with pytest.raises(dp.SerializationError, match=r"priced at budget share 0 \(ε=0.25\)"):
            dp.from_json(text, data=other)
    bad = _tampered(text, lambda r: r["table_query"].__setitem__("share", 2))
    with pytest.raises(dp.SerializationError, match="share: 2 must be the index of one of the Context's 2"):
        dp.from_json(bad, data=_weighted())


def test_an_explicitly_priced_query_is_stored_without_a_share() -> None:
    text = dp.to_json(QUERIES["explicit budget"]())
    assert "share" not in json.loads(text)["root"]["table_query"]
    back = dp.from_json(text, data=FRAME)
    assert back.share is None and back.budget == Fraction(1, 8)
    old = _tampered(dp.to_json(_weighted().query().agg(count())), lambda r: r["table_query"].pop("share"))
    assert dp.from_json(old, data=FRAME).share is None  # a file written before shares were stored


def test_a_query_loads_into_a_given_context_of_the_same_configuration() -> None:
    q = QUERIES["dp.col filter, every aggregate, known keys"]()
    ctx = _ctx()
    back = dp.from_json(dp.to_json(q), data=ctx)
    assert back.context is ctx and _plan(back) == _plan(q)
    back.release()
    assert ctx.remaining() == _spent_a_third()
    other = dp.Context(FRAME, SCHEMA, privacy_loss=1.0, split_evenly_over=3)  # row level
    with pytest.raises(dp.SerializationError, match="unit of privacy"):
        dp.from_json(dp.to_json(q), data=other)


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"measure": dp.ZCDP(), "loss": 0.5, "split_evenly_over": 7},
        {"measure": dp.ApproxDP(), "loss": (1.0, 1e-6), "split_by_weights": [1, 2.5, Fraction(1, 3)],
         "split_evenly_over": None},
    ],
)  # fmt: skip
def test_a_context_round_trips_its_configuration_with_its_full_budget(kw: dict[str, Any]) -> None:
    ctx = _ctx(kw.pop("measure", None), kw.pop("loss", 1.0), **kw)
    ctx.query().agg(count()).release()  # spending is not stored
    text = dp.to_json(ctx)
    back = dp.from_json(text, data=FRAME)
    assert isinstance(back, dp.Context)
    assert (back.domain, back.privacy_unit, back.measure) == (ctx.domain, ctx.privacy_unit, ctx.measure)
    assert len(back.shares) == len(ctx.shares)
    assert [back.shares.value(i) for i in range(len(back.shares))] == [
        ctx.shares.value(i) for i in range(len(ctx.shares))
    ]
    fresh = _ctx(ctx.measure, ctx.privacy_loss, **kw)
    assert back.remaining() == fresh.remaining() != ctx.remaining()
    assert dp.to_json(back) == text
    assert SECRET not in text


def test_a_context_loads_on_a_ledger() -> None:
    ledger = dp.MemoryLedger()
    back = dp.from_json(dp.to_json(_ctx()), data=FRAME, ledger=ledger)
    back.query().agg(count()).release()
    again = dp.from_json(dp.to_json(_ctx()), data=FRAME, ledger=ledger)
    assert again.remaining() == _spent_a_third()  # the ledger holds the spending


def _tampered(text: str, change: Callable[[Any], None]) -> str:
    doc = json.loads(text)
    change(doc["root"])
    return json.dumps(doc)


def _expr_call(op: str, *args: Any) -> dict[str, Any]:
    return {"call": "dpcompose.tables.Expr", "args": [], "kwargs": {"op": op, "args": {"tuple": list(args)}}}


def _steps(root: Any) -> list[Any]:
    steps: list[Any] = root["table_query"]["steps"]
    return steps


def _aggs(root: Any) -> list[Any]:
    aggs: list[Any] = root["table_query"]["aggs"]
    return aggs


def _set_unit(root: Any, max_rows: int) -> None:
    ctx = dict(root["table_query"]["context"]["dict"])
    ctx["privacy_unit"]["kwargs"]["max_rows"] = max_rows
    root["table_query"]["context"]["dict"] = [[k, v] for k, v in ctx.items()]


TAMPERED: dict[str, tuple[Callable[[Any], None], str]] = {
    "unknown expression op": (
        lambda r: _steps(r)[0].__setitem__(1, _expr_call("exec", _expr_call("col", "age"))),
        "'exec' is not an operation",
    ),
    "wrong arity": (
        lambda r: _steps(r)[0].__setitem__(1, _expr_call(">=", _expr_call("col", "age"))),
        "do not fit the operation",
    ),
    "unknown column": (
        lambda r: _steps(r)[0].__setitem__(
            1, _expr_call(">=", _expr_call("col", "salary"), _expr_call("lit", 3))
        ),
        "'salary' is not in the schema",
    ),
    "unknown builder": (lambda r: _steps(r).append(["drop_caps"]), "not a stored builder call"),
    "unknown aggregate": (
        lambda r: _aggs(r)[0]["kwargs"].__setitem__("op", "raw_rows"),
        "'raw_rows' is not an aggregate",
    ),
    "count with a column": (
        lambda r: _aggs(r)[0]["kwargs"].__setitem__("column", "age"),
        "count takes no column",
    ),
    "a zero row cap": (lambda r: _set_unit(r, 0), "max_rows=0"),
    "a missing field": (lambda r: r["table_query"].pop("aggs"), "with the keys"),
    "a bad budget": (
        lambda r: r["table_query"].__setitem__("privacy_loss", {"fraction": "-1/3"}),
        "privacy_loss",
    ),
    "steps not a list": (lambda r: r["table_query"].__setitem__("steps", "filter"), "must be lists"),
    "a non-library call": (
        lambda r: _steps(r)[0].__setitem__(1, {"call": "os.system", "args": ["ls"], "kwargs": {}}),
        "not a public dpcompose constructor",
    ),
}


@pytest.mark.parametrize("name", list(TAMPERED))
def test_a_tampered_query_file_is_refused_with_a_clear_error(name: str) -> None:
    change, message = TAMPERED[name]
    text = dp.to_json(QUERIES["dp.col filter, every aggregate, known keys"]())
    ctx = _ctx()
    with pytest.raises(dp.SerializationError, match=message):
        dp.from_json(_tampered(text, change), data=ctx)
    assert ctx.remaining() == _ctx().remaining()  # nothing spent


def test_a_user_written_part_in_a_table_file_is_refused_without_allow_unverified() -> None:
    def f(x: Any) -> Any:
        return x

    dp.register_function("tests.stored.identity", f)
    part = {
        "call": "dpcompose.core.make_user_transformation",
        "args": [],
        "kwargs": {"function": {"function": "tests.stored.identity"}, "name": "sneaky"},
    }
    text = _tampered(dp.to_json(QUERIES["explicit budget"]()), lambda r: _steps(r).append(["filter", part]))
    with pytest.raises(dp.UnverifiedPartError, match="sneaky"):
        dp.from_json(text, data=FRAME)
    with pytest.raises(dp.SerializationError):  # trusted or not, it is not a table expression
        dp.from_json(text, data=FRAME, allow_unverified=True)


def test_data_must_be_passed_for_table_files_only() -> None:
    text = dp.to_json(QUERIES["explicit budget"]())
    with pytest.raises(dp.InvalidParameter, match=r"data=frame"):
        dp.from_json(text)
    with pytest.raises(dp.InvalidParameter, match="data= and ledger="):
        dp.from_json(dp.to_json(dp.AtomDomain(int)), data=FRAME)
    with pytest.raises(dp.DomainMismatch):  # the frame is not of the stored schema
        dp.from_json(text, data=FRAME.drop("income"))
    with pytest.raises(dp.SerializationError, match="ledger= is for a new Context"):
        dp.from_json(text, data=_ctx(), ledger=dp.MemoryLedger())


def test_typed_refuses_an_operation_it_does_not_know() -> None:
    with pytest.raises(dp.InvalidParameter, match="'exec' is not an operation"):
        typed(Expr("exec", (dp.col("age"),)), {"age": "int"}, "predicate")
