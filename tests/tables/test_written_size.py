"""An expression whose written-out tree is huge (nested clips share their operand: 3**depth nodes) is refused
when the query is built, before anything is spent: the engines and the files walk it written out."""

from __future__ import annotations

import polars as pl
import pytest

import dpcompose as dp
from dpcompose.transformations._expr import WRITTEN_NODES, written_size


def nested_clips(depth: int) -> pl.Expr:
    e = pl.col("x")
    for i in range(depth):
        e = e.clip(-float(i + 1), float(i + 1))
    return e


def context() -> dp.Context:
    df = pl.DataFrame({"k": [1, 2, 2], "x": [0.5, 0.2, 0.9]})
    schema = {"k": dp.Column(int), "x": dp.Column(float, bounds=(0.0, 1.0))}
    return dp.Context(df, schema, privacy_loss=1.0, split_evenly_over=2)


def test_a_deep_clip_is_refused_at_build_and_nothing_is_spent() -> None:
    ctx = context()
    with pytest.raises(dp.InvalidParameter, match="nodes written out"):
        ctx.query().with_column("y", nested_clips(20), bounds=(-1.0, 1.0))
    with pytest.raises(dp.InvalidParameter, match="nodes written out"):
        ctx.query().filter(nested_clips(20) > 0)
    assert ctx.remaining() == {"epsilon": 1, "delta": 0}
    shallow = ctx.query().with_column("y", nested_clips(3), bounds=(-1.0, 1.0)).agg(dp.tables.sum("y"))
    assert shallow.release().height == 1


def test_written_size_counts_shared_subtrees_at_each_use() -> None:
    x = dp.col("a")
    for _ in range(40):
        x = x + x
    assert written_size([x]) == 2**41 - 1 > WRITTEN_NODES


def test_a_huge_map_exprs_tree_is_not_written_to_a_file() -> None:
    x = dp.col("a")
    for _ in range(40):
        x = x + x
    rows = dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float, bounds=(0.0, 1.0)), size=1))
    t = dp.t.make_map_exprs(rows, dp.SymmetricDistance(), ["a"], x)  # evaluated as the shared tree
    with pytest.raises(dp.SerializationError, match="expression nodes"):
        dp.to_json(t)
