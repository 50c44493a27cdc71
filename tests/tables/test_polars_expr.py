"""Polars expressions in table queries: translated into the engine-neutral plan, the same bits on Polars and
Spark, and everything outside the offered subset refused before anything is spent."""

from __future__ import annotations

import datetime
import math
import struct
from typing import Any

import numpy as np
import polars as pl
import pytest

import dpcompose as dp
from dpcompose.tables._polars import to_polars
from dpcompose.transformations._expr import typed
from dpcompose.transformations._from_polars import from_polars, from_tree

NAN, INF = float("nan"), float("inf")
ROWS: dict[str, list[Any]] = {
    "a": [1, 0, None, 4, -3, 0, 7, -8, 2, 9_007_199_254_740_993],
    "x": [1.5, 0.0, NAN, None, -2.5, -0.0, INF, -INF, 0.5, 1e300],
    "y": [2.0, 0.0, 0.0, 1.0, -0.0, 0.0, INF, 3.0, None, -1e-300],
    "s": ["ab", "b", None, "abc", "ä", "", "aä", "B", "ba", "äb"],
    "b": [True, False, None, True, False, True, None, False, True, False],
    "d": [datetime.date(2024, 2, 29), datetime.date(1969, 12, 31), None, datetime.date(2023, 1, 1),
          datetime.date(1, 1, 1), datetime.date(9999, 12, 31), datetime.date(1970, 1, 1),
          datetime.date(2000, 3, 5), datetime.date(1900, 3, 1), datetime.date(2024, 12, 30)],
}  # fmt: skip
KINDS = {"a": "int", "x": "float", "y": "float", "s": "str", "b": "bool", "d": "date"}
POLARS_TYPES = {
    "a": pl.Int64,
    "x": pl.Float64,
    "y": pl.Float64,
    "s": pl.String,
    "b": pl.Boolean,
    "d": pl.Date,
}
SPARK_SCHEMA = "a bigint, x double, y double, s string, b boolean, d date"

# every offered operation, as a Polars user writes it
OFFERED: list[Any] = [
    pl.col("a") > 0,
    pl.col("x") >= 0.5,
    (pl.col("x") < pl.col("y")) & (pl.col("a") != 0),
    (pl.col("a") == 0) | ~pl.col("b"),
    pl.col("b").not_(),
    pl.col("s").is_in(["b", "ä", ""]),
    ~pl.col("a").is_in([0, 4]),
    pl.col("x").is_null(),
    pl.col("s").is_not_null(),
    pl.col("b") == pl.lit(True),
    pl.col("a") + pl.col("x"),
    pl.col("a") - 2.5,
    pl.col("x") * pl.col("y"),
    pl.col("x") / pl.col("y"),
    pl.col("a") / 0,
    pl.lit(0) / pl.col("a"),
    pl.col("a") / pl.col("a"),
    -pl.col("x"),
    pl.col("x").abs(),
    pl.col("a").abs(),
    pl.col("x").clip(-1.0, 1.0),
    pl.col("a").clip(0, 5),
    pl.col("x").clip(0.0),
    (pl.col("x") * 2.5).round(),
    pl.col("x").round(),
    (pl.col("x") * 1e19).cast(pl.Int64),
    pl.col("x").cast(pl.Int64),
    pl.col("a").cast(pl.Float64),
    pl.col("x").cast(pl.Boolean),
    pl.col("a").cast(pl.Boolean),
    pl.col("b").cast(pl.Int64),
    pl.col("b").cast(pl.Float64),
    pl.when(pl.col("a") > 0).then(pl.col("x")).otherwise(pl.col("a")),
    pl.when(pl.col("b")).then(1),
    pl.when(pl.col("x") > 0).then(None).otherwise(pl.col("s")),
    pl.when(pl.col("a") > 1).then(pl.lit("big")).otherwise(pl.lit("small")) == "big",
    pl.col("s") == "b",
    pl.col("s") < "b",
    pl.col("s").str.starts_with("a"),
    pl.col("s").str.contains("ä", literal=True),
    pl.col("s").str.len_chars(),
    pl.col("x").fill_null(0.5),
    pl.col("a").fill_null(pl.col("x")) > 0,
    pl.col("a").is_between(0, 4),
    pl.col("x").is_between(-1.0, 1.0, closed="none"),
    pl.col("s").is_between(pl.lit("a"), pl.lit("b"), closed="left"),
    pl.col("d").dt.year(),
    pl.col("d").dt.month(),
    pl.col("d").dt.day(),
    pl.col("d").dt.weekday(),
    pl.col("d").is_null(),
]


def _frame() -> pl.DataFrame:
    return pl.DataFrame({c: pl.Series(c, v, dtype=POLARS_TYPES[c]) for c, v in ROWS.items()})


def _bits(v: Any) -> Any:
    """A value's exact identity: a float by its bit pattern (NaN as one token), others as they are."""
    if isinstance(v, float):
        return "nan" if math.isnan(v) else struct.pack("<d", v).hex()
    return v


def _plan(e: Any) -> Any:
    return typed(from_polars(e, "e"), KINDS, "e")


def polars_values(e: Any) -> list[Any]:
    t, _ = _plan(e)
    return [_bits(v) for v in _frame().select(to_polars(t).alias("r"))["r"].to_list()]


def values(e: Any) -> list[Any]:
    t, _ = _plan(e)
    out: list[Any] = _frame().select(to_polars(t).alias("r"))["r"].to_list()
    return out


def _signless_zero(values: list[Any]) -> list[Any]:
    return [_bits(0.0) if v == _bits(-0.0) else v for v in values]


#: Where the offered semantics (:mod:`dpcompose.transformations._expr`) differ from Polars' own on ROWS:
#: the expression as offered, and Polars' own terms for what it computes (an expression Polars evaluates,
#: or a change to Polars' own values).
DIFFERENT: list[tuple[Any, Any]] = [
    # a zero divisor gives null, not ±inf or NaN
    (pl.col("x") / pl.col("y"), pl.when(pl.col("y") != 0).then(pl.col("x") / pl.col("y"))),
    (pl.col("a") / 0, pl.when(pl.lit(0) != 0).then(pl.col("a") / 0)),
    (pl.lit(0) / pl.col("a"), pl.when(pl.col("a") != 0).then(pl.lit(0) / pl.col("a"))),
    (pl.col("a") / pl.col("a"), pl.when(pl.col("a") != 0).then(pl.col("a") / pl.col("a"))),
    (pl.col("a").abs(), pl.col("a").cast(pl.Float64).abs()),  # on doubles
    (pl.col("x").clip(-1.0, 1.0), pl.col("x").clip(-1.0, 1.0).fill_nan(1.0)),  # NaN is above every float
    ((pl.col("x") * 2.5).round(), _signless_zero),  # a zero result is +0.0
    (pl.col("x").round(), _signless_zero),
    # null where the value has no int64 (NaN, ±inf, out of range): Polars' strict cast raises instead
    ((pl.col("x") * 1e19).cast(pl.Int64), (pl.col("x") * 1e19).cast(pl.Int64, strict=False)),
    (pl.col("x").cast(pl.Int64), pl.col("x").cast(pl.Int64, strict=False)),
]


def test_every_offered_expression_computes_what_polars_computes() -> None:
    """Each offered expression, translated and run, gives bit for bit the values Polars' own evaluation
    gives, but for the documented differences of :data:`DIFFERENT`, checked against Polars' own terms."""
    twins = {str(e): twin for e, twin in DIFFERENT}
    assert set(twins) <= {str(e) for e in OFFERED}
    frame = _frame()
    for e in OFFERED:
        twin = twins.get(str(e), e)
        own = e if callable(twin) and not isinstance(twin, pl.Expr) else twin
        want = [_bits(v) for v in frame.select(own.alias("r"))["r"].to_list()]
        if callable(twin) and not isinstance(twin, pl.Expr):
            want = twin(want)
        assert polars_values(e) == want, e


def test_division_by_zero_is_null_and_otherwise_ieee() -> None:
    assert values(pl.col("a") / 0) == [None] * 10
    assert values(pl.lit(0) / pl.col("a"))[:2] == [0.0, None]  # 0/1 = 0, 0/0 null
    q = values(pl.col("x") / pl.col("y"))
    assert q[0] == 0.75 and q[1] is None and q[4] is None and q[5] is None  # x/0, x/-0.0: null
    assert math.isnan(q[6])  # inf/inf
    assert q[9] == -INF  # 1e300 / -1e-300 overflows to -inf
    assert values(pl.col("a") / pl.col("a"))[:3] == [1.0, None, None]


# divisors Polars would turn into a multiplication by the reciprocal (about a third of quotients off in the
# last bit; x / 1e-310 is x * inf), among them a column Polars holds as one value
DIVISORS: list[Any] = [3.0, 10.0, 1e-310, 0.1, -7.0, 0.0, -0.0, 3, -7, 5e-324, pl.col("c"), pl.col("c") * 7]


def _random_quotients() -> tuple[np.ndarray[Any, Any], pl.DataFrame]:
    rng = np.random.default_rng(7)
    x = rng.standard_normal(2000) * 10.0 ** rng.integers(-300, 300, 2000)
    x[:9] = [0.0, -0.0, NAN, INF, -INF, 5e-324, -1e308, 1.0, 3.0]
    return x, pl.DataFrame({"x": x}).with_columns(c=pl.lit(3.0))  # c: a column of one repeated value


def _ieee(x: np.ndarray[Any, Any], d: Any) -> list[Any]:
    """numpy's IEEE quotient as the plan defines it: null for a zero divisor."""
    if not isinstance(d, (int, float)):
        d = 3.0 if str(d) == str(pl.col("c")) else 21.0
    if d == 0:
        return [None] * len(x)
    with np.errstate(over="ignore"):
        return [_bits(float(v)) for v in x / np.float64(d)]


@pytest.mark.parametrize("engine", ["in-memory", "streaming"])
def test_division_by_a_literal_is_the_ieee_quotient(engine: Any) -> None:
    x, frame = _random_quotients()
    for d in DIVISORS:
        for e in (pl.col("x") / d, (pl.col("x") / d).alias("q")):
            t, _ = typed(from_polars(e, "e"), {"x": "float", "c": "float"}, "e")
            got = frame.lazy().select(to_polars(t).alias("r")).collect(engine=engine)["r"].to_list()
            assert [_bits(v) for v in got] == _ieee(x, d), (engine, str(d))
        # after a filter that reads it, as a query runs it (the predicate and the values both quotients)
        t, _ = typed(from_polars(pl.col("x") / d, "e"), {"x": "float", "c": "float"}, "e")
        kept = frame.lazy().filter(to_polars(t).is_not_null()).select(to_polars(t).alias("r"))
        want = [b for b in _ieee(x, d) if b is not None]
        assert [_bits(v) for v in kept.collect(engine=engine)["r"].to_list()] == want, (engine, str(d))


def test_a_constant_quotient_and_a_null_numerator() -> None:
    frame = pl.DataFrame({"x": [1.0, None, -0.0]})
    for e, want in [
        (pl.lit(1.0) / 3.0 + pl.col("x") * 0, [1.0 / 3.0, None, 1.0 / 3.0]),
        (pl.lit(1.0) / 1e-310 + pl.col("x") * 0, [1.0 / 1e-310, None, 1.0 / 1e-310]),
        (pl.col("x") / 3.0, [1.0 / 3.0, None, -0.0]),
        (pl.col("x") / pl.col("x"), [1.0, None, None]),
    ]:
        t, _ = typed(from_polars(e, "e"), {"x": "float"}, "e")
        got = frame.lazy().select(to_polars(t).alias("r")).collect(engine="streaming")["r"].to_list()
        assert [_bits(v) for v in got] == [_bits(v) for v in want], str(e)


def test_dp_col_division_builds_the_same_plan() -> None:
    native = _plan(dp.col("a") / dp.col("x"))[0]
    assert repr(native) == repr(_plan(pl.col("a") / pl.col("x"))[0])
    assert repr(_plan(-dp.col("x"))[0]) == repr(_plan(-pl.col("x"))[0])
    assert repr(_plan(abs(dp.col("x")))[0]) == repr(_plan(pl.col("x").abs())[0])
    with pytest.raises(dp.DomainMismatch, match="//"):
        dp.col("a") // 2
    with pytest.raises(TypeError):  # DomainMismatch is a TypeError too
        dp.col("a") % 2


def test_round_cast_clip_when_and_is_in_semantics() -> None:
    half = pl.DataFrame({"x": [0.5, 1.5, 2.5, -0.5, -2.5, 0.49999999999999994, 4503599627370495.5]})
    t, _ = typed(from_polars(pl.col("x").round(), "e"), {"x": "float"})
    got = half.select(to_polars(t).alias("r"))["r"].to_list()
    assert [_bits(v) for v in got] == [_bits(v) for v in [0.0, 2.0, 2.0, 0.0, -2.0, 0.0, 4503599627370496.0]]
    big = [None, 0, None, None, None, 0, None, None, 5 * 10**18, None]  # 0.5e19 fits int64, 1.5e19 not
    assert values((pl.col("x") * 1e19).cast(pl.Int64)) == big
    assert values(pl.col("x").cast(pl.Int64))[:6] == [1, 0, None, None, -2, 0]
    assert values(pl.col("x").cast(pl.Boolean))[:6] == [True, False, True, None, True, False]
    assert values(pl.col("x").clip(-1.0, 1.0))[:8] == [1.0, 0.0, 1.0, None, -1.0, -0.0, 1.0, -1.0]  # NaN: hi
    assert values(pl.when(pl.col("b")).then(1)) == [1, None, None, 1, None, 1, None, None, 1, None]
    # is_in as in Polars: null for a null value, so ~is_in keeps it null (dropped by a filter)
    assert values(~pl.col("s").is_in(["b"]))[:3] == [True, False, None]
    assert values(pl.col("s").str.len_chars())[:6] == [2, 1, None, 3, 1, 0]
    filled = values(pl.col("x").fill_null(0.5))
    assert math.isnan(filled[2]) and filled[3] == 0.5  # NaN stays, as in Polars
    assert values(pl.col("a").is_between(0, 4))[:5] == [True, True, None, True, False]
    assert values(pl.col("a").is_between(0, 4, closed="right"))[:5] == [True, False, None, True, False]
    assert values(pl.col("d").dt.weekday())[:4] == [4, 3, None, 7]  # ISO: Thursday, Wednesday, Sunday
    assert values(pl.col("d").dt.year())[:5] == [2024, 1969, None, 2023, 1]


@pytest.mark.parametrize(
    "tree",
    [
        {"BinaryExpr": {"left": {"Column": "a"}}},  # no op
        {"Function": {"input": [], "function": "Abs"}},  # no operand
        {"Cast": {"expr": {"Column": "a"}}},  # no dtype
        {"Function": {"input": [{"Column": "a"}], "function": {"Boolean": ["IsIn"]}}},
        {"BinaryExpr": {"left": {"Column": "a"}, "op": "Eq", "right": {"Literal": {"Scalar": {"Nope": 1}}}}},
    ],
)
def test_a_tree_of_an_unknown_form_is_refused_not_guessed(tree: Any) -> None:
    with pytest.raises(dp.DomainMismatch, match="cannot read|not offered"):
        from_tree(tree, "predicate", "col('a')")


REFUSED = [
    pl.col("a") // 2,
    pl.col("a") % 2,
    pl.col("x") ** 2,
    pl.col("x").sqrt(),
    pl.col("x").round(2),
    pl.col("x").fill_null(strategy="forward"),
    pl.col("a").cast(pl.Int32),
    pl.col("s").cast(pl.Int64),
    pl.col("a").is_nan(),
    pl.col("d").dt.hour() > 1,
    pl.col("d") > pl.date(2020, 1, 1),
    pl.col("s").str.contains("a."),
    pl.col("s").str.to_uppercase() == "A",
    pl.col("x").sum() > 1,
    pl.col("a").is_in([1, None]),
    pl.col("x").map_elements(lambda v: v, return_dtype=pl.Float64) > 0,
]


def _context(data: Any = None, **kw: Any) -> dp.Context:
    schema = dp.FrameDomain({
        "a": dp.Column(int, bounds=(-10, 10), nullable=True, fill=0),
        "x": dp.Column(float, bounds=(-5.0, 5.0), nullable=True, fill=0.0),
        "y": dp.Column(float, nullable=True),
        "s": dp.Column(str, nullable=True),
        "b": dp.Column(bool, nullable=True),
        "d": dp.Column(datetime.date, nullable=True),
    })  # fmt: skip
    return dp.Context(_frame() if data is None else data, schema, privacy_loss=1e9, split_evenly_over=4, **kw)


@pytest.mark.parametrize("expr", REFUSED, ids=[str(e)[:40] for e in REFUSED])
def test_outside_the_subset_is_refused_naming_it_and_spending_nothing(expr: Any) -> None:
    ctx = _context()
    before = ctx.remaining()["epsilon"]
    with pytest.raises(dp.DPError) as info:
        ctx.query().filter(expr)
    assert str(expr)[:12] in str(info.value) or "cast" in str(info.value)
    with pytest.raises(dp.DPError):
        ctx.query().with_column("z", expr, bounds=(0.0, 1.0))
    assert ctx.remaining()["epsilon"] == before


def test_filter_with_columns_and_agg_run_through_the_context() -> None:
    ctx = _context()
    rows = list(zip(*ROWS.values(), strict=True))
    got = ctx.query().filter((pl.col("a") > 0) & pl.col("s").str.starts_with("a")).agg(pl.len()).release()
    want = sum(
        1 for a, _, _, s, _, _ in rows if a is not None and a > 0 and s is not None and s.startswith("a")
    )
    assert got["count"].to_list() == [want]  # noise at ε = 1e9/4 is 0
    q = (
        ctx.query()
        .with_columns((pl.col("x") / pl.col("y")).alias("ratio"), bounds={"ratio": (-10.0, 10.0)})
        .filter(pl.col("ratio").is_not_null())
        .agg(pl.len(), pl.col("ratio").sum())
    )
    out = q.release()
    ratios = [x / y for _, x, y, _, _, _ in rows if x is not None and y is not None and y != 0]
    assert out["count"].to_list() == [len(ratios)]
    clamped = [min(max(0.0 if math.isnan(r) else r, -10.0), 10.0) for r in ratios]
    assert out["ratio_sum"][0] == pytest.approx(sum(clamped), abs=1e-6)
    assert [a.name for a in (dp.tables.count(), dp.tables.mean("x"))] == ["count", "x_mean"]
    with pytest.raises(dp.DomainMismatch, match="fill_null"):
        ctx.query().agg(pl.col("x").fill_null(0).sum())
    q = ctx.query().agg(pl.len().alias("n"), pl.col("x").mean().alias("avg"), pl.col("a").n_unique())
    assert [a.name for a in q.aggs] == ["n", "avg", "a_count_distinct"]
    with pytest.raises(dp.InvalidParameter, match="listed twice"):
        ctx.query().agg(pl.len(), pl.col("x").sum().alias("count"))
    with pytest.raises(dp.InvalidParameter, match="bounds"):
        ctx.query().with_columns((pl.col("x") * 2).alias("x2"))
    assert float(ctx.remaining()["epsilon"]) == 5e8  # two releases of the four shares


def test_polars_sign_of_zero_rewrites_change_no_released_bit() -> None:
    """Polars folds ``x + 0.0`` to ``x`` and ``0.0 - x`` to ``-x`` (a zero keeps the wrong sign, where Spark
    follows IEEE); the released aggregates are those of the unfoldable spelling ``x + z`` (``z = 0.0``)."""
    from dpcompose.tables._polars import PolarsEngine

    frame = pl.DataFrame({"u": [1, 1, 2, 2, 3], "x": [-0.0, 0.0, -0.0, 1.5, -0.0], "z": [0.0] * 5})
    schema = dp.FrameDomain({"u": dp.Column(int), "x": dp.Column(float), "z": dp.Column(float)})
    ctx = dp.Context(frame, schema, privacy_unit=dp.unit_of(id="u", max_rows=1), privacy_loss=1.0,
                     split_evenly_over=1)  # fmt: skip
    t, _ = typed(from_polars(pl.col("x") + 0.0, "e"), {"x": "float"}, "e")
    assert _bits(frame.select(to_polars(t))["x"][0]) == _bits(-0.0)  # the rewrite, as Polars does it today
    out = []
    for zero in (pl.lit(0.0), pl.col("z")):
        q = ctx.query().with_columns(m=(pl.col("x") + zero, (-2.0, 2.0)), n=(zero - pl.col("x"), (-2.0, 2.0)))
        q = q.filter((pl.col("m") >= 0) & (pl.col("m").cast(pl.Int64) == 0) & ~pl.col("n").cast(pl.Boolean))
        agg = PolarsEngine().aggregate(frame, q.agg(pl.len(), pl.col("m").sum(), pl.col("n").sum()).plan)
        out.append((agg.keys, agg.counts.tolist(), [v.tolist() for v in agg.sums]))
    assert out[0] == out[1] and out[0][1] == [3]  # one row per person passes


# --- Spark: the same bits ---------------------------------------------------------------------------------

spark_warnings = pytest.mark.filterwarnings(
    "ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning"
)


@spark_warnings
def test_spark_computes_the_same_bits(spark: Any) -> None:
    from dpcompose.tables._spark import to_spark

    data = list(zip(*ROWS.values(), strict=True))
    sdf = spark.createDataFrame(data, SPARK_SCHEMA).coalesce(1).cache()
    plans = [_plan(e)[0] for e in OFFERED]
    for ansi in ("false", "true"):  # a division by zero or an overflowing cast would raise in ANSI mode
        spark.conf.set("spark.sql.ansi.enabled", ansi)
        try:
            got = sdf.select([to_spark(t).alias(f"r{i}") for i, t in enumerate(plans)]).collect()
        finally:
            spark.conf.set("spark.sql.ansi.enabled", "false")
        for i, e in enumerate(OFFERED):
            assert [_bits(row[f"r{i}"]) for row in got] == polars_values(e), (ansi, str(e))
    half = [0.5, 1.5, 2.5, -0.5, -2.5, 0.49999999999999994, 4503599627370495.5, -0.0, 1e300]
    t, _ = typed(from_polars(pl.col("x").round(), "e"), {"x": "float"})
    srows = spark.createDataFrame([(v,) for v in half], "x double").select(to_spark(t).alias("r")).collect()
    prows = pl.DataFrame({"x": half}).select(to_polars(t).alias("r"))["r"].to_list()
    assert [_bits(r["r"]) for r in srows] == [_bits(v) for v in prows]
    sdf.unpersist()


@spark_warnings
def test_spark_divides_by_literals_as_numpy_does(spark: Any) -> None:
    from dpcompose.tables._spark import to_spark

    x, _ = _random_quotients()
    sdf = spark.createDataFrame([(float(v), 3.0) for v in x], "x double, c double").coalesce(1)
    plans = [typed(from_polars(pl.col("x") / d, "e"), {"x": "float", "c": "float"}, "e")[0] for d in DIVISORS]
    got = sdf.select([to_spark(t).alias(f"r{i}") for i, t in enumerate(plans)]).collect()
    for i, d in enumerate(DIVISORS):
        assert [_bits(row[f"r{i}"]) for row in got] == _ieee(x, d), str(d)


def _queries(ctx: dp.Context) -> list[Any]:
    """Three queries through the whole engine path: filter, derived columns (int and float kinds), aggs."""
    return [
        ctx.query()
        .filter((pl.col("a") > 0) | pl.col("s").is_in(["b", "ä"]))
        .group_by("b", keys=[True, False, None])
        .agg(pl.len()),
        ctx.query()
        .with_columns((pl.col("x") / pl.col("y")).alias("ratio"), bounds={"ratio": (-10.0, 10.0)})
        .with_columns(
            pl.when(pl.col("s").str.starts_with("a"))
            .then(pl.col("s").str.len_chars())
            .otherwise(0)
            .alias("n"),
            bounds={"n": (0, 5)},
        )
        .filter(pl.col("ratio").is_not_null() | (pl.col("x").round().cast(pl.Int64) != 0))
        .agg(pl.len(), pl.col("ratio").sum(), pl.col("n").sum()),
        ctx.query()
        .with_columns(z=((pl.col("x").clip(-1.0, 1.0) - pl.col("a").cast(pl.Float64)).abs(), (0.0, 20.0)))
        .agg(pl.col("z").sum(), pl.col("z").mean()),
        ctx.query()
        .filter((pl.col("d").dt.year() < 2024) & (pl.col("d").dt.weekday() != 7))
        .with_columns(m=(pl.col("d").dt.month() + pl.col("d").dt.day() / 100, (1.0, 13.0)))
        .group_by("b", keys=[True, False, None])
        .agg(pl.len(), pl.col("m").sum()),
    ]


@spark_warnings
def test_spark_context_queries_have_the_same_exact_aggregates(spark: Any) -> None:
    from dpcompose.tables._polars import PolarsEngine
    from dpcompose.tables._spark import SparkEngine

    data = list(zip(*ROWS.values(), strict=True))
    sdf = spark.createDataFrame(data, SPARK_SCHEMA).repartition(2)
    capped = _context(privacy_unit=dp.unit_of(id="b", max_rows=2))  # the caps hash every column read (d too)
    for q in _queries(_context()) + _queries(capped):
        p, s = PolarsEngine().aggregate(_frame(), q.plan), SparkEngine().aggregate(sdf, q.plan)
        assert p.keys == s.keys and p.counts.tolist() == s.counts.tolist(), q.plan
        assert [v.tolist() for v in p.sums] == [v.tolist() for v in s.sums], q.plan
        assert any(v.any() for v in p.sums) or p.counts.any()


@spark_warnings
def test_spark_hashes_dates_as_polars_does(spark: Any) -> None:
    """The caps keep the rows with the smallest keys of the specified hash over every column read, a date
    column included (its days since 1970-01-01): with many rows per person a different code keeps others."""
    from dpcompose.tables._polars import PolarsEngine
    from dpcompose.tables._spark import SparkEngine

    start = datetime.date(1950, 1, 1)
    days = [start + datetime.timedelta(days=37 * i) for i in range(120)]
    ids = [i % 4 for i in range(120)]
    frame = pl.DataFrame({"u": ids, "d": days})
    schema = dp.FrameDomain({"u": dp.Column(int), "d": dp.Column(datetime.date)})
    ctx = dp.Context(frame, schema, privacy_unit=dp.unit_of(id="u", max_rows=3), privacy_loss=1.0,
                     split_evenly_over=1)  # fmt: skip
    q = ctx.query().with_columns(m=(pl.col("d").dt.day() * 1.0, (1.0, 31.0))).agg(pl.len(), pl.col("m").sum())
    sdf = spark.createDataFrame(list(zip(ids, days, strict=True)), "u bigint, d date").repartition(3)
    p, s = PolarsEngine().aggregate(frame, q.plan), SparkEngine().aggregate(sdf, q.plan)
    assert p.counts.tolist() == s.counts.tolist() == [12]
    assert [v.tolist() for v in p.sums] == [v.tolist() for v in s.sums]
