"""Static types of the table API (issue 12): ``mypy --strict tests/typing``."""

from __future__ import annotations

from typing import Any

from typing_extensions import assert_type

import dpcompose as dp
from dpcompose.core import Measurement


def test_context_query_types() -> None:
    import polars as pl

    df = pl.DataFrame({"user": [1, 2], "x": [0.5, 1.0]})
    schema = dp.FrameDomain({"user": dp.Column(int), "x": dp.Column(float, bounds=(0.0, 1.0))})
    assert_type(schema, dp.FrameDomain)
    ctx = dp.Context(df, schema, privacy_unit=dp.unit_of("user", 1), privacy_loss=1.0, split_evenly_over=1)
    assert_type(ctx, dp.Context)
    query = ctx.query().filter(dp.col("x") > 0.25).agg(dp.tables.count(), dp.tables.mean("x"))
    assert_type(query, dp.tables.TableQuery)
    assert_type(query.measurement, Measurement[Any, Any, Any, Any])
    assert_type(query.summarize(), dp.tables.Summary)
    assert query.release().height == 1


def test_count_distinct_type() -> None:
    assert_type(dp.tables.count_distinct("city"), dp.tables.Agg)


def test_variance_type() -> None:
    assert_type(dp.tables.variance("x", bounds=(0.0, 1.0)), dp.tables.Agg)


def test_quantile_type() -> None:
    assert_type(dp.tables.quantile("x", 0.5, [0.0, 0.5, 1.0]), dp.tables.Agg)


def test_with_column_and_select_types() -> None:
    import polars as pl

    schema = dp.FrameDomain({"a": dp.Column(float, bounds=(0.0, 1.0))})
    ctx = dp.Context(pl.DataFrame({"a": [0.5]}), schema, privacy_loss=1.0, split_evenly_over=1)
    q = ctx.query().with_column("b", dp.col("a") * 2 + 1, bounds=(0.0, 3.0)).select("b")
    assert_type(q, dp.tables.Query)
