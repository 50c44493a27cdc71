"""A str with no UTF-8 form (a lone surrogate) given as a key, a literal or a name is refused when the query
is built, naming it and the fix, with nothing spent: every engine holds strings as UTF-8 and would fail on
it inside the charged job."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import polars as pl
import pytest

import dpcompose as dp

FRAME = pl.DataFrame({"s": ["a", "b", "a"], "t": ["x", "y", "x"], "v": [1, 2, 3]})
SCHEMA = {"s": dp.Column(str), "t": dp.Column(str), "v": dp.Column(int, bounds=(0, 9))}
BAD = "\ud800"
T = dp.tables


def _refused(words: str) -> str:
    return (
        rf"{words}='\\ud800' is not valid UTF-8 text: it holds the lone surrogate U\+D800 at index 0 .*"
        r"would fail on it after the query's charge: pass the text it stands for"
    )


BUILDS: dict[str, tuple[Callable[[Any], Any], str]] = {
    "known key": (lambda q: q.group_by("s", keys=["a", BAD]).agg(T.count()), "keys"),
    "known key of two columns": (
        lambda q: q.group_by("s", "t", keys=[("a", "x"), ("b", BAD)]).agg(T.count()),
        "keys",
    ),
    "is_in": (lambda q: q.filter(dp.col("s").is_in(["a", BAD])).agg(T.count()), "values"),
    "comparison": (lambda q: q.filter(dp.col("s") != BAD).agg(T.count()), "the right side of !="),
    "derived column name": (
        lambda q: q.with_column(BAD, dp.col("v") * 2, bounds=(0.0, 18.0)).agg(T.count()),
        "name",
    ),
    "result column name": (
        lambda q: q.agg(dataclasses.replace(T.count(), alias=BAD)),  # as a file may hold it
        "aggs: the result column",
    ),
}


def _context(data: Any) -> dp.Context:
    return dp.Context(data, SCHEMA, privacy_loss=1e9, split_evenly_over=2)


@pytest.mark.parametrize("name", list(BUILDS))
def test_a_lone_surrogate_is_refused_at_build_and_nothing_is_spent(name: str) -> None:
    build, words = BUILDS[name]
    ctx = _context(FRAME)
    before = ctx.remaining()
    with pytest.raises(dp.InvalidParameter, match=_refused(words)):
        build(ctx.query())
    assert ctx.remaining() == before
    out = ctx.query().group_by("s", keys=["a", "b"]).agg(T.count()).release()  # it took no share
    assert out["count"].to_list() == [2, 1] and len(ctx.shares) == 2


def test_a_lone_surrogate_in_a_schema_column_name_is_refused() -> None:
    with pytest.raises(dp.InvalidParameter, match=_refused("schema: column name")):
        dp.FrameDomain({BAD: dp.Column(int)})


def test_a_lone_surrogate_in_a_stored_key_is_refused_when_loaded() -> None:
    text = dp.to_json(_context(FRAME).query().group_by("s", keys=["a", "zz"]).agg(T.count()))
    ctx = _context(FRAME)
    with pytest.raises(dp.SerializationError, match=r"keys='\\ud800' is not valid UTF-8"):
        dp.from_json(text.replace('"zz"', '"\\ud800"'), data=ctx)
    assert ctx.remaining() == _context(FRAME).remaining()


@pytest.mark.filterwarnings("ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_lone_surrogate_key_is_refused_on_spark_and_nothing_is_spent(spark: Any) -> None:
    df = spark.createDataFrame(FRAME.rows(), "s string, t string, v bigint")
    ctx = _context(df)
    before = ctx.remaining()
    for name in ("known key", "known key of two columns", "is_in"):
        build, words = BUILDS[name]
        with pytest.raises(dp.InvalidParameter, match=_refused(words)):
            build(ctx.query())
    assert ctx.remaining() == before
    out = ctx.query().group_by("s", keys=["a", "b"]).agg(T.count()).release()
    assert out["count"].to_list() == [2, 1]
