"""The same query suite on every engine: exact pre-noise aggregates equal a plain-Python reference of the
plan (filter with null/NaN semantics, caps by the specified hash, NaN/null policy, fixed-point grid), and
equal bit for bit between Polars and Spark; known and unknown keys; identical privacy maps."""

from __future__ import annotations

import dataclasses
import math
import random
from dataclasses import replace
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import dpcompose as dp
from dpcompose.tables._engine import Aggregates, BelowSpec, Plan, SumSpec, key_order
from dpcompose.tables._fixed import square_spec, sum_spec
from dpcompose.tables._polars import PolarsEngine
from dpcompose.transformations._hash import NULL_CODE, row_keys, string_code, value_codes

pl = pytest.importorskip("polars")

SCHEMA = dp.FrameDomain(
    {
        "user": dp.Column(int),
        "name": dp.Column(str),
        "state": dp.Column(str, nullable=True),
        "flag": dp.Column(bool, nullable=True),
        "code": dp.Column(int, nullable=True),
        "income": dp.Column(float, bounds=(-5.5, 100.0), nullable=True, fill=1.25),
        "big": dp.Column(int, bounds=(-(2**40), 2**40 + 3), nullable=True, fill=7),
    }
)
KINDS = {n: c.kind for n, c in SCHEMA.columns}
STATES = ["CA", "NY", "TX", "é", "WA"]
SPECIAL = [None, math.nan, math.inf, -math.inf, 1e300, -1e300, -0.0, 0.0, 2.5, 0.5, 5e-324, 100.0, -5.5]


def make_rows(seed: int, n_users: int = 6, max_rows: int = 6) -> list[dict[str, Any]]:
    """Several rows per user, with nulls, NaN, ±inf, -0.0, subnormals, duplicates."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for u in range(n_users):
        name = rng.choice(["ann", "bob", "", "zoë", "x" * 40])
        for _ in range(rng.randint(1, max_rows)):
            row = {
                "user": u * 7919 - 3,
                "name": name,
                "state": rng.choice([*STATES, None]),
                "flag": rng.choice([True, False, None]),
                "code": rng.choice([-1, 0, 3, 2**40, -(2**62), None]),
                "income": rng.choice(SPECIAL) if rng.random() < 0.4 else rng.uniform(-10, 120),
                "big": rng.choice([None, 2**41, -(2**41), 1536, 512, -512, rng.randint(-(2**40), 2**40)]),
            }
            rows.append(row)
            if rng.random() < 0.15:
                rows.append(dict(row))  # an exact duplicate row
    return rows


POLARS_TYPES = {
    "user": pl.Int64,
    "name": pl.String,
    "state": pl.String,
    "flag": pl.Boolean,
    "code": pl.Int64,
    "income": pl.Float64,
    "big": pl.Int64,
}


def polars_frame(rows: list[dict[str, Any]]) -> Any:
    return pl.DataFrame({c: [r[c] for r in rows] for c in POLARS_TYPES}, schema=POLARS_TYPES)


# --- the plans ----------------------------------------------------------------------------------------

INCOME = sum_spec("income", SCHEMA.column("income"), None)
BIG = sum_spec("big", SCHEMA.column("big"), None)  # k = 10: integer rounding half to even
INCOME_NARROW = sum_spec("income", SCHEMA.column("income"), (0.0, 3.0))
INCOME_TINY = sum_spec("income", SCHEMA.column("income"), (-1e-310, 5e-324))  # k = -1060: 2**1060 overflows
INCOME_SQ = square_spec(INCOME)
BELOW = tuple(
    BelowSpec(s.column, s.kind, s.lo, s.hi, s.fill, v, strict)
    for s, v in [(INCOME, 2.5), (INCOME, -0.0), (INCOME, 119.99999999999999), (BIG, 512), (BIG, -(2**41))]
    for strict in (True, False)
)
BIG_SQ = square_spec(BIG)
TINY_SQ = square_spec(INCOME_TINY)
ALL = tuple(n for n, _ in SCHEMA.columns)


def _cols(*names: str) -> tuple[str, ...]:
    return tuple(n for n in ALL if n in names)


def _plan(
    columns: tuple[str, ...],
    predicate: Any = None,
    by: tuple[str, ...] = (),
    keys: tuple[tuple[Any, ...], ...] | None = ((),),
    id: str | None = "user",
    max_rows: int | None = 2,
    max_groups: int | None = None,
    sums: tuple[SumSpec, ...] = (),
    distinct: tuple[str, ...] = (),
    below: tuple[BelowSpec, ...] = (),
    derived: tuple[tuple[str, Any], ...] = (),
) -> Plan:
    return Plan(columns, predicate, by, keys, id, max_rows, max_groups, sums, distinct, below, derived)


col = dp.col
DX = ("dx", col("income") * 2.0 - col("big"))
DY = ("dy", 0.5 + col("code") * col("code"))
DX_SUM = SumSpec("dx", "float", -1e6, 1e6, 0.0, sum_spec("x", dp.Column(float, bounds=(-1e6, 1e6)), None).k)
DY_SUM = SumSpec("dy", "float", 0.0, 100.0, 0.0, sum_spec("y", dp.Column(float, bounds=(0.0, 100.0)), None).k)
PLANS: dict[str, Plan] = {
    "derived_columns": _plan(
        _cols("user", "state", "code", "income", "big"),
        predicate=(col("dx") > -5.0) | col("dy").is_null(),
        by=("state",),
        keys=None,
        max_rows=3,
        sums=(DX_SUM, DY_SUM, dataclasses.replace(DX_SUM, column="dz")),
        below=(BelowSpec("dx", "float", -1e6, 1e6, 0.0, 7.5, True),),
        derived=(DX, DY, ("dz", col("dx") * col("dy") + 1.0)),  # dz reads the derived dx and dy
    ),
    "total_count_rows": _plan(_cols("user", "flag"), id=None, max_rows=None, distinct=("flag",)),
    # a bare count reads no column (Polars selected none, which left no rows: the count was 0)
    "total_count_no_column": _plan((), id=None, max_rows=None),
    "total_sums_capped": _plan(
        _cols("user", "income", "big"), sums=(INCOME, BIG, INCOME_TINY, INCOME_SQ, BIG_SQ, TINY_SQ)
    ),
    "known_str_keys": _plan(
        _cols("user", "state", "income", "big"),
        by=("state",),
        keys=(("CA",), ("NY",), ("absent",), (None,), ("é",)),
        max_rows=3,
        sums=(INCOME, INCOME_SQ),
        below=BELOW,
    ),
    "unknown_str_keys_groups_capped": _plan(
        _cols("user", "name", "state", "code", "income", "big"),
        by=("state",),
        keys=None,
        max_rows=3,
        max_groups=2,
        sums=(INCOME, BIG),
        distinct=("name", "code"),
        below=BELOW,
    ),
    "unknown_bool_int_keys": _plan(
        _cols("user", "flag", "code", "income"),
        predicate=(col("income") > 0.5) | col("flag").is_null(),
        by=("flag", "code"),
        keys=None,
        max_rows=4,
        max_groups=3,
        sums=(INCOME_NARROW,),
    ),
    "by_the_identifier_groups_capped": _plan(  # (both engines listed the identifier twice, and raised)
        _cols("user", "flag", "income"),
        by=("user", "flag"),
        keys=None,
        max_rows=3,
        max_groups=1,
        sums=(INCOME,),
    ),
    "known_bool_int_keys": _plan(
        _cols("user", "flag", "code"),
        predicate=~col("code").is_in([3, 2**40]),
        by=("flag", "code"),
        keys=((True, -1), (False, 0), (None, None), (True, -(2**62))),
        max_rows=1,
        max_groups=1,
    ),
    "filters_nan_null": _plan(
        _cols("user", "name", "state", "income"),
        predicate=((col("income") >= 2.5) & (col("state") != "TX"))
        | (col("name") == "zoë")
        | ~(col("income") < 1e300),
        by=("name",),
        keys=None,
        max_rows=2,
        sums=(INCOME,),
    ),
    "filters_str_order_row_level": _plan(
        _cols("name", "state", "big"),
        predicate=(col("state") > "NY") & col("state").is_in(["TX", "é"]),
        by=("state",),
        keys=None,
        id=None,
        max_rows=None,
        sums=(BIG,),
        distinct=("name",),
    ),
    "string_identifier": _plan(
        _cols("name", "state", "income"),
        by=("state",),
        keys=None,
        id="name",
        max_rows=2,
        max_groups=2,
        sums=(INCOME,),
    ),
}


# --- a plain-Python reference of a plan ------------------------------------------------------------------


def _code(v: Any, kind: str) -> int:
    if v is None:
        return int(NULL_CODE)
    if kind == "str":
        return string_code(v)
    arr = np.array([v], dtype=np.float64 if kind == "float" else np.int64)
    return int(value_codes(arr)[0])


def _key(row: dict[str, Any], columns: tuple[str, ...]) -> int:
    codes = [np.array([_code(row[c], KINDS[c])], dtype=np.uint64) for c in columns]
    return int(row_keys(codes)[0])


def _ord(v: Any) -> Any:
    return (1, 0.0) if isinstance(v, float) and math.isnan(v) else (0, v)  # NaN above every float


def _eval(e: Any, row: dict[str, Any]) -> Any:
    """Three-valued logic: comparisons with null are null; NaN equals NaN and is above every float."""
    op = e.op
    if op == "col":
        return row[e.args[0]]
    if op == "lit":
        return e.args[0]
    if op == "and":
        a, b = _eval(e.args[0], row), _eval(e.args[1], row)
        return False if a is False or b is False else (None if a is None or b is None else True)
    if op == "or":
        a, b = _eval(e.args[0], row), _eval(e.args[1], row)
        return True if a is True or b is True else (None if a is None or b is None else False)
    if op == "not":
        a = _eval(e.args[0], row)
        return None if a is None else not a
    if op == "is_null":
        return _eval(e.args[0], row) is None
    if op in ("+", "-", "*"):  # on IEEE doubles (Python floats), null propagates
        a, b = _eval(e.args[0], row), _eval(e.args[1], row)
        if a is None or b is None:
            return None
        x, y = float(a), float(b)
        return x + y if op == "+" else x - y if op == "-" else x * y
    if op == "is_in":
        a = _eval(e.args[0], row)
        return a is not None and any(_ord(a) == _ord(v) for v in e.args[1])
    a, b = _eval(e.args[0], row), _eval(e.args[1], row)
    if a is None or b is None:
        return None
    x, y = _ord(a), _ord(b)
    return {"==": x == y, "!=": x != y, "<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op]


def _grid(v: Any, spec: SumSpec) -> int:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        v = spec.fill
    v = min(max(v, spec.lo), spec.hi)
    g = round(Fraction(v) / Fraction(2) ** spec.k)  # half to even
    return g * g // 2**spec.shift if spec.square else g  # a variance's sum of squares: ⌊g²/2**shift⌋


def reference(rows: list[dict[str, Any]], plan: Plan) -> Aggregates:
    if plan.derived:
        rows = [dict(r) for r in rows]
        for r in rows:
            for name, e in plan.derived:
                r[name] = _eval(e, r)
    rows = [r for r in rows if plan.predicate is None or _eval(plan.predicate, r) is True]
    by = plan.by
    if by and plan.keys is not None:
        rows = [r for r in rows if tuple(r[c] for c in by) in plan.keys]
    if plan.id is not None and plan.max_groups is not None and by:
        pair_cols = plan.group_pair  # the identifier once
        groups: dict[Any, set[tuple[Any, ...]]] = {}
        for r in rows:
            groups.setdefault(r[plan.id], set()).add(tuple(r[c] for c in pair_cols))
        kept = set()
        for pairs in groups.values():
            ranked = sorted(pairs, key=lambda p: _key(dict(zip(pair_cols, p, strict=True)), pair_cols))
            kept |= set(ranked[: plan.max_groups])
        rows = [r for r in rows if tuple(r[c] for c in pair_cols) in kept]
    if plan.id is not None and plan.max_rows is not None:
        per: dict[Any, list[dict[str, Any]]] = {}
        for r in rows:
            per.setdefault(r[plan.id], []).append(r)
        rows = [
            r
            for lst in per.values()
            for r in sorted(lst, key=lambda r: _key(r, plan.columns))[: plan.max_rows]
        ]
    found: dict[tuple[Any, ...], list[Any]] = {}
    for r in rows:
        entry = found.setdefault(
            tuple(r[c] for c in by),
            [0, [0] * len(plan.sums), [set() for _ in plan.distinct], [0] * len(plan.below)],
        )
        entry[0] += 1
        for i, spec in enumerate(plan.sums):
            entry[1][i] += _grid(r[spec.column], spec)
        for j, c in enumerate(plan.distinct):
            if r[c] is not None:  # distinct non-null values, compared exactly (int, str, bool)
                entry[2][j].add((type(r[c]), r[c]))
        for j, b in enumerate(plan.below):
            v = r[b.column]
            if v is None or (isinstance(v, float) and math.isnan(v)):
                v = b.fill
            v = min(max(v, b.lo), b.hi)
            entry[3][j] += int(v < b.value if b.strict else v <= b.value)
    if not by:
        keys: tuple[tuple[Any, ...], ...] = ((),)
    elif plan.keys is None:
        keys = tuple(sorted(found, key=key_order))
    else:
        keys = plan.keys
    counts = np.array([found.get(k, [0])[0] for k in keys], dtype=np.int64)
    sums = [
        np.array([found[k][1][i] if k in found else 0 for k in keys], dtype=np.int64)
        for i in range(len(plan.sums))
    ]
    distincts = [
        np.array([len(found[k][2][j]) if k in found else 0 for k in keys], dtype=np.int64)
        for j in range(len(plan.distinct))
    ]
    belows = [
        np.array([found[k][3][j] if k in found else 0 for k in keys], dtype=np.int64)
        for j in range(len(plan.below))
    ]
    return Aggregates(keys, counts, sums, distincts, belows)


def same(a: Aggregates, b: Aggregates) -> None:
    """Bit-identical: the same keys in the same order, the same int64 arrays."""
    assert a.keys == b.keys
    assert a.counts.dtype == b.counts.dtype == np.int64
    assert a.counts.tolist() == b.counts.tolist()
    assert (len(a.sums), len(a.distincts), len(a.belows)) == (len(b.sums), len(b.distincts), len(b.belows))
    for x, y in zip(a.sums + a.distincts + a.belows, b.sums + b.distincts + b.belows, strict=True):
        assert x.dtype == y.dtype == np.int64
        assert x.tolist() == y.tolist()


# --- Polars ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PLANS))
@pytest.mark.parametrize("seed", range(3))
def test_polars_equals_the_reference(name: str, seed: int) -> None:
    rows = make_rows(seed)
    plan = PLANS[name]
    same(PolarsEngine().aggregate(polars_frame(rows), plan), reference(rows, plan))


def test_reference_is_not_trivial() -> None:
    """The suite's data reach the cases it claims: caps bind, unknown keys include null, NaN is kept."""
    rows = make_rows(0)
    capped = reference(rows, PLANS["unknown_str_keys_groups_capped"])
    uncapped = reference(
        rows, replace(PLANS["unknown_str_keys_groups_capped"], max_rows=None, max_groups=None)
    )
    assert int(capped.counts.sum()) < int(uncapped.counts.sum())
    assert (None,) in uncapped.keys and uncapped.keys[-1] == (None,)
    assert any(isinstance(r["income"], float) and math.isnan(r["income"]) for r in rows)


@pytest.mark.parametrize("seed", range(3))
def test_unknown_keys_are_sorted_and_independent_of_row_order(seed: int) -> None:
    rows = make_rows(seed)
    plan = PLANS["unknown_str_keys_groups_capped"]
    first = PolarsEngine().aggregate(polars_frame(rows), plan)
    assert list(first.keys) == sorted(first.keys, key=key_order)
    assert all(int(c) > 0 for c in first.counts)  # only keys present after the caps
    shuffled = rows[:]
    random.Random(seed).shuffle(shuffled)
    same(PolarsEngine().aggregate(polars_frame(shuffled).lazy(), plan), first)


def test_unknown_keys_on_empty_data() -> None:
    plan = PLANS["unknown_bool_int_keys"]
    out = PolarsEngine().aggregate(polars_frame([]), plan)
    assert out.keys == () and out.counts.tolist() == [] and [s.tolist() for s in out.sums] == [[]]
    total = PolarsEngine().aggregate(polars_frame([]), PLANS["total_sums_capped"])
    assert total.keys == ((),) and total.counts.tolist() == [0]


# --- Spark: the same suite, bit-identical to Polars ---------------------------------------------------------

# PySpark leaves py4j sockets to the garbage collector; under filterwarnings=error that would fail the test
# that happens to collect them.
spark_warnings = pytest.mark.filterwarnings(
    "ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning"
)
SPARK_SCHEMA = "user bigint, name string, state string, flag boolean, code bigint, income double, big bigint"


def spark_frame(spark: Any, rows: list[dict[str, Any]], partitions: int = 2) -> Any:
    data = [tuple(r[c] for c in POLARS_TYPES) for r in rows]
    return spark.createDataFrame(data, SPARK_SCHEMA).repartition(partitions)


@spark_warnings
@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow)])
def test_spark_equals_polars_and_the_reference(spark: Any, seed: int) -> None:
    from dpcompose.tables._spark import SparkEngine

    rows = make_rows(seed)
    sdf = spark_frame(spark, rows).cache()
    for name, plan in sorted(PLANS.items()):
        expected = reference(rows, plan)
        same(PolarsEngine().aggregate(polars_frame(rows), plan), expected)
        try:
            same(SparkEngine().aggregate(sdf, plan), expected)
        except AssertionError as exc:
            raise AssertionError(f"plan {name}: {exc}") from exc
    sdf.unpersist()


@spark_warnings
def test_spark_is_independent_of_partitioning_and_ansi_mode(spark: Any) -> None:
    from dpcompose.tables._spark import SparkEngine

    rows = make_rows(7, n_users=8)
    plans = [PLANS["unknown_str_keys_groups_capped"], PLANS["filters_nan_null"]]
    expected = [reference(rows, p) for p in plans]
    shuffled = rows[::-1]
    for partitions in (1, 3):
        for plan, exp in zip(plans, expected, strict=True):
            same(SparkEngine().aggregate(spark_frame(spark, shuffled, partitions), plan), exp)
    spark.conf.set("spark.sql.ansi.enabled", "true")  # a wrapping bigint product would raise here
    try:
        same(SparkEngine().aggregate(spark_frame(spark, rows), plans[0]), expected[0])
    finally:
        spark.conf.set("spark.sql.ansi.enabled", "false")


@spark_warnings
def test_spark_hash_is_the_specified_hash(spark: Any) -> None:
    """SplitMix64 in limb arithmetic and the float/string codes against numpy, on edge values."""
    from dpcompose.tables._spark import (
        SelectSteps,
        row_key_column,
        signed_int64,
        splitmix_columns,
        string_code_table,
    )
    from dpcompose.transformations._hash import splitmix64

    rng = np.random.default_rng(3)
    ints = [0, 1, -1, 2**63 - 1, -(2**63), 2**32 - 1, 2**32, 2**31, -(2**31) - 1]
    ints += [int(v) for v in rng.integers(-(2**63), 2**63 - 1, 200, dtype=np.int64)]
    from pyspark.sql import functions as F

    steps = SelectSteps(spark.createDataFrame([(v,) for v in ints], "x bigint").coalesce(1))
    (out,) = splitmix_columns(steps, [F.col("x")])
    got = [r[0] for r in steps.df.select(out).collect()]
    want = [signed_int64(int(u)) for u in splitmix64(np.array(ints, dtype=np.int64).view(np.uint64))]
    assert got == want
    floats = [0.0, -0.0, math.nan, -math.nan, math.inf, -math.inf, 5e-324, -1e300, None, 2.5, -1.0]
    strings = ["a", None, "é", "", "zoë", "a", None, "q", "\u20ac" * 9, "s", "t"]
    frame = spark.createDataFrame(list(zip(floats, strings, strict=True)), "f double, s string").coalesce(1)
    kinds = {"f": "float", "s": "str"}
    tables = {"s": string_code_table(frame, "s")}
    keys = [r["k"] for r in row_key_column(frame, ["f", "s"], kinds, "k", tables).collect()]
    want_f = value_codes(
        np.array([0.0 if v is None else v for v in floats]), np.array([v is None for v in floats])
    )
    want_s = value_codes(
        np.array(["" if v is None else v for v in strings], dtype=object),
        np.array([v is None for v in strings]),
    )
    assert keys == [signed_int64(int(k) ^ (1 << 63)) for k in row_keys([want_f, want_s])]


@spark_warnings
def test_spark_narrow_types_and_engine_choice(spark: Any) -> None:
    """int32/int16/float32/bool columns read as int/float/bool; engine_for picks Spark from the type."""
    from dpcompose.tables._engines import engine_for
    from dpcompose.tables._spark import SparkEngine

    rows = [(1, 2, 0.5, True), (1, -3, float("nan"), None), (2, None, -2.25, False), (2, 7, None, True)] * 3
    sdf = spark.createDataFrame(rows, "u int, c smallint, x float, b boolean")
    pdf = pl.DataFrame(
        {k: [r[i] for r in rows] for i, k in enumerate("ucxb")},
        schema={"u": pl.Int32, "c": pl.Int16, "x": pl.Float32, "b": pl.Boolean},
    )
    engine = engine_for(sdf)
    assert isinstance(engine, SparkEngine)
    assert dict(engine.schema(sdf)) == {"u": "int", "c": "int", "x": "float", "b": "bool"}
    spec = sum_spec("x", dp.Column(float, bounds=(-1.0, 1.0), nullable=True, fill=0.25), None)
    cspec = sum_spec("c", dp.Column(int, bounds=(-2, 5), nullable=True, fill=1), None)
    plan = Plan(("u", "c", "x", "b"), col("x") < 1.0, ("b",), None, "u", 2, 2, (spec, cspec))
    same(engine.aggregate(sdf, plan), PolarsEngine().aggregate(pdf, plan))
    known = replace(plan, keys=((True,), (None,), (False,)))
    same(engine.aggregate(sdf, known), PolarsEngine().aggregate(pdf, known))


def _context(data: Any, **kw: Any) -> dp.Context:
    return dp.Context(
        data,
        SCHEMA,
        privacy_unit=dp.unit_of(id="user", max_rows=2, max_groups=2),
        privacy_loss=1.0,
        split_evenly_over=2,
        **kw,
    )


@spark_warnings
def test_spark_context_same_maps_and_release(spark: Any) -> None:
    rows = make_rows(11)
    on_polars, on_spark = _context(polars_frame(rows)), _context(spark_frame(spark, rows))
    queries = []
    for ctx in (on_polars, on_spark):
        q = (
            ctx.query()
            .filter(col("income") > 0.0)
            .group_by("state", keys=["CA", "NY", "é"])
            .agg(dp.tables.count(), dp.tables.sum("big"), dp.tables.mean("income"))
        )
        queries.append(q)
    a, b = queries
    assert (a.plan.columns, a.plan.keys, a.plan.sums) == (b.plan.columns, b.plan.keys, b.plan.sums)
    for d in (1, 2, 5):
        assert a.measurement.map(d) == b.measurement.map(d)
    out = b.release()
    assert out.columns == ["state", "count", "big_sum", "income_mean"]
    assert out.get_column("state").to_list() == ["CA", "NY", "é"]
    assert on_spark.remaining()["epsilon"] == Fraction(1, 2)  # charged once, to the Spark context only
    assert on_polars.remaining()["epsilon"] == Fraction(1)


@spark_warnings
def test_spark_bad_input_refused_before_any_job(spark: Any) -> None:
    rows = make_rows(12)
    sdf = spark_frame(spark, rows)
    with pytest.raises(dp.DomainMismatch, match="income"):
        _context(sdf.withColumn("income", sdf["income"].cast("string")))
    with pytest.raises(dp.DomainMismatch, match="big"):
        _context(sdf.drop("big"))
    ctx = _context(sdf)
    before = ctx.remaining()
    with pytest.raises(dp.InvalidParameter, match="salary"):
        ctx.query().filter(col("salary") > 3)
    with pytest.raises(dp.BudgetExceeded):
        ctx.query(privacy_loss=5.0).agg(dp.tables.count()).release()
    assert ctx.remaining() == before


def test_missing_java_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    from dpcompose.tables._spark import SparkUnavailable, check_java

    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(SparkUnavailable, match="Java runtime"):
        check_java()
    assert issubclass(SparkUnavailable, dp.DPError)


@pytest.mark.spark
def test_string_udf_runs_without_dpcompose_on_the_executors(tmp_path: Any) -> None:
    """The blake2b UDF is shipped by value: it unpickles and runs where dpcompose cannot be imported."""
    pytest.importorskip("pyspark")
    import subprocess
    import sys

    from pyspark import cloudpickle

    from dpcompose.tables._spark import signed_int64, string_code_udf

    path = tmp_path / "udf.pkl"
    path.write_bytes(cloudpickle.dumps(string_code_udf().func))
    code = (
        "import sys, pickle\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'dpcompose': raise ImportError('blocked')\n"
        "sys.meta_path.insert(0, Block())\n"
        f"f = pickle.load(open({str(path)!r}, 'rb'))\n"
        "print(f('zoë'), f(None), 'dpcompose' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == [str(signed_int64(string_code("zoë"))), "None", "False"]


@spark_warnings
def test_spark_docs_example_runs(spark: Any) -> None:
    """The "Running on Spark" example of docs/tables.md (a plain block the doctest runner skips)."""
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "tables.md").read_text(encoding="utf-8")
    marker = "<!-- spark-example:"
    assert page.count(marker) == 1
    after = page[page.index(marker) :]
    start = after.index("```python\n") + len("```python\n")
    code = after[start : after.index("```", start)]
    assert ">>>" not in code and "local[2]" in code and "127.0.0.1" in code
    exec(compile(code, "docs/tables.md (spark example)", "exec"), {"__name__": "docs_spark_example"})


@spark_warnings
def test_spark_many_distinct_strings_use_the_executor_udf(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Beyond FEW_STRINGS distinct values the blake2b codes come from the Python UDF on the executors: same
    bits."""
    import dpcompose.tables._spark as sp

    monkeypatch.setattr(sp, "FEW_STRINGS", 1)
    rows = make_rows(5)
    sdf = spark_frame(spark, rows)
    for name in ("string_identifier", "unknown_str_keys_groups_capped"):
        same(sp.SparkEngine().aggregate(sdf, PLANS[name]), reference(rows, PLANS[name]))


@spark_warnings
def test_spark_frame_with_a_column_twice_is_refused_before_the_charge(spark: Any) -> None:
    """Found by review: after a join a Spark frame held ``x`` twice; its schema, read into a dict, kept one,
    so the frame passed the domain check, the query was charged, and then Spark failed (ambiguous)."""
    left = spark.createDataFrame([(1, 2.0)], "u long, x double")
    frame = left.join(spark.createDataFrame([(1, 5.0)], "u long, x double"), on="u")
    schema = {"u": dp.Column(int), "x": dp.Column(float, bounds=(0.0, 10.0))}
    assert not dp.FrameDomain(schema).member(frame)
    with pytest.raises(dp.DomainMismatch, match="'x' more than once"):
        dp.Context(frame, schema, privacy_unit=dp.unit_of("u", 1), privacy_loss=1.0, split_evenly_over=2)
