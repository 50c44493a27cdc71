"""Column names cannot reach another vector's noise, and queries that cannot run are refused before their
charge (found by review: each test here fails on the code before its fix)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import polars as pl
import pytest

import dpcompose as dp
from dpcompose.errors import DomainMismatch, InvalidParameter

A = dp.tables


def _ctx(df: Any, schema: dict[str, Any], **kw: Any) -> dp.Context:
    kw.setdefault("privacy_loss", 1.0)
    kw.setdefault("split_evenly_over", 1)
    return dp.Context(df, schema, **kw)


def test_a_derived_column_named_like_a_distinct_count_keeps_its_own_noise() -> None:
    """``with_column("distinct:user", …)`` beside ``count_distinct("user")``: the sum (sensitivity 10⁶)
    was released with the distinct count's noise (sensitivity 1), i.e. almost exactly."""
    schema = {"user": dp.Column(int), "salary": dp.Column(float, bounds=(0.0, 1e6))}
    df = pl.DataFrame({"user": list(range(20)), "salary": [0.0] * 20})
    sums = []
    for _ in range(20):
        q = (
            _ctx(df, schema, privacy_unit=dp.unit_of("user", max_rows=1))
            .query()
            .with_column("distinct:user", dp.col("salary") * 1, bounds=(0.0, 1e6))
            .agg(A.sum("distinct:user"), A.count_distinct("user"))
        )
        sums.append(abs(q.release()["distinct:user_sum"][0]))
    assert max(sums) > 1e4  # Laplace noise of scale 2·10⁶: below 10⁴ twenty times has probability < 1e-40


def test_a_value_column_named_count_does_not_select_the_keys() -> None:
    """With unknown keys the noisy *count* is compared with the threshold; a summed column named "count"
    took its place (noise scale 1000 against a threshold made for scale 1): one person's key was
    released in about 2 runs of 3, where the map promises δ = 1e-6."""
    schema = {"user": dp.Column(int), "city": dp.Column(str), "count": dp.Column(int, bounds=(0, 1000))}
    base = pl.DataFrame({"user": list(range(300)), "city": ["Oslo"] * 300, "count": [0] * 300})
    df = pl.concat([base, pl.DataFrame({"user": [300], "city": ["Nuuk"], "count": [1000]})])
    hits = 0
    for _ in range(40):
        ctx = _ctx(
            df,
            schema,
            privacy_unit=dp.unit_of("user", max_rows=1),
            measure=dp.ApproxDP(),
            privacy_loss=(1.0, 1e-6),
        )
        out = ctx.query().group_by("city", keys=None).agg(A.count(), A.sum("count")).release()
        hits += "Nuuk" in out["city"].to_list()
    assert hits == 0


def test_a_column_named_like_squares_is_its_own_sum() -> None:
    schema = {"y": dp.Column(int, bounds=(0, 10)), "y^2": dp.Column(int, bounds=(0, 10))}
    df = pl.DataFrame({"y": [3, 3], "y^2": [1, 1]})
    for aggs in ((A.sum("y^2"), A.variance("y")), (A.variance("y"), A.sum("y^2"))):
        out = _ctx(df, schema, privacy_loss=1e9).query().agg(*aggs).release()
        assert out["y^2_sum"][0] == 2  # (was the sum of y's squares, 18, or an error in the other order)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda q: q.group_by("s", "s", keys=[("a", "a")]), "names a column twice"),
        (lambda q: q.group_by("s", "s", keys=None), "names a column twice"),
        (lambda q: q.group_by("count", keys=["a"]).agg(A.count()), "also a group-by column"),
        (lambda q: q.agg(A.variance("big")), "too wide for a variance"),
        (lambda q: q.group_by(["s", 1], keys=None), "list of column names"),
        (lambda q: q.group_by(["s"], "s", keys=None), "names a column twice"),
    ],
)
def test_refused_before_the_charge(build: Any, message: str) -> None:
    schema = {
        "s": dp.Column(str),
        "count": dp.Column(str),
        "x": dp.Column(int),
        "big": dp.Column(float, bounds=(0.0, 1e200)),
    }
    df = pl.DataFrame({"s": ["a"], "count": ["a"], "x": [1], "big": [1.0]})
    ctx = _ctx(df, schema, measure=dp.ApproxDP(), privacy_loss=(1e-3, 1e-6))
    with pytest.raises(InvalidParameter, match=message):
        build(ctx.query())
    assert ctx.remaining()["epsilon"] == Fraction(1, 1000)  # nothing charged


def test_a_noise_too_wide_for_the_sampler_names_the_column_and_the_remedy() -> None:
    schema = {"user": dp.Column(int), "x": dp.Column(float, bounds=(0.0, 1e6))}
    ctx = _ctx(
        pl.DataFrame({"user": [1], "x": [1.0]}),
        schema,
        privacy_unit=dp.unit_of("user", 1000),
        privacy_loss=1e-4,
    )
    with pytest.raises(InvalidParameter, match="x_sum: .* narrow the bounds of 'x', lower max_rows"):
        ctx.query().agg(A.sum("x"))


def test_group_by_the_identifier_with_max_groups_runs() -> None:
    """The identifier was listed twice in the group cap's pairs: Polars raised after the charge."""
    schema = {"user": dp.Column(int), "b": dp.Column(bool)}
    df = pl.DataFrame({"user": [1, 1, 2], "b": [True, False, True]})
    ctx = _ctx(df, schema, privacy_unit=dp.unit_of("user", 2, max_groups=1), privacy_loss=1e6)
    out = ctx.query().group_by("user", "b", keys=[(1, True), (2, True)]).agg(A.count()).release()
    assert out.height == 2


def test_group_by_takes_a_list_of_columns_as_polars_does() -> None:
    """``group_by(["a", "b"], keys=...)`` (Polars style) raised a bare TypeError (unhashable list)."""
    schema = {"user": dp.Column(int), "b": dp.Column(bool)}
    df = pl.DataFrame({"user": [1, 1, 2], "b": [True, False, True]})
    ctx = _ctx(df, schema, privacy_loss=1e6, split_evenly_over=2)
    keys = [(1, True), (2, True)]
    listed = ctx.query().group_by(["user", "b"], keys=keys).agg(A.count()).release()
    spread = ctx.query().group_by("user", "b", keys=keys).agg(A.count()).release()
    assert listed.columns == spread.columns and listed["user"].to_list() == spread["user"].to_list()


def test_a_failing_lazy_plan_shows_no_private_value() -> None:
    schema = {"user": dp.Column(int), "x": dp.Column(int, bounds=(0, 10))}
    lf = pl.LazyFrame({"user": [1, 2], "x": ["1", "secret-7"]}).with_columns(
        pl.col("x").cast(pl.Int64, strict=True)
    )
    ctx = _ctx(lf, schema, privacy_unit=dp.unit_of("user", 1))
    with pytest.raises(DomainMismatch) as info:
        ctx.query().agg(A.sum("x")).release()
    assert "secret" not in str(info.value) and info.value.__cause__ is None


@pytest.mark.parametrize("name", ["*", "^x$", "^x|y$"])
def test_a_wildcard_or_regex_column_name_is_refused(name: str) -> None:
    """Found by review: Polars reads ``pl.col('^x$')`` as a regular expression, so a declared column ``^x$``
    summed an undeclared column ``x`` (1000 released where the declared column sums to 0), and a column
    ``*`` (declared or derived) failed after its charge."""
    df = pl.DataFrame({name: [0.0], "x": [1000.0]})
    with pytest.raises(InvalidParameter, match="wildcard or a regular expression"):
        _ctx(df, {name: dp.Column(float, bounds=(0.0, 1.0))})
    ctx = _ctx(df.select("x"), {"x": dp.Column(float, bounds=(0.0, 1.0))})
    with pytest.raises(InvalidParameter, match="wildcard or a regular expression"):
        ctx.query().with_column(name, dp.col("x"), bounds=(0.0, 1.0))
    assert ctx.remaining()["epsilon"] == 1


def test_context_arguments_found_by_review() -> None:
    """``split_evenly_over=10**9`` listed 10⁹ shares (24 GB, killed by the kernel); an integer bound past the
    float range raised a bare OverflowError; a numpy weight was refused as if it were not positive."""
    import numpy as np

    df = pl.DataFrame({"x": [0.0]})
    schema = {"x": dp.Column(float, bounds=(0.0, 1.0))}
    with pytest.raises(InvalidParameter, match="at most 1048576 queries"):
        _ctx(df, schema, split_evenly_over=10**9)
    assert len(_ctx(df, schema, split_evenly_over=2**20).shares) == 2**20
    with pytest.raises(InvalidParameter, match="beyond the float range"):
        _ctx(df, schema).query().with_column("y", dp.col("x"), bounds=(0, 2**1100))
    with pytest.raises(InvalidParameter, match=r"float32; .*use \.item\(\)"):
        dp.Context(df, schema, privacy_loss=1.0, split_by_weights=[np.float32(1.0)])
