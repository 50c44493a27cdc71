"""Tables on Polars: exact aggregates, capping by the specified hash, privacy maps, bad input."""

from __future__ import annotations

import math
import random
import subprocess
import sys
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import dpcompose as dp
from dpcompose.tables._engine import Plan
from dpcompose.tables._fixed import grid_bound, sum_spec
from dpcompose.tables._polars import PolarsEngine
from dpcompose.transformations._hash import row_keys, string_code, value_codes

pl = pytest.importorskip("polars")

SCHEMA = {
    "user": dp.Column(int),
    "state": dp.Column(str),
    "income": dp.Column(float, bounds=(-5.5, 100.0)),
    "age": dp.Column(int, bounds=(0, 120)),
}
STATES = ["CA", "NY", "TX"]


def _frame(rng: random.Random, n_users: int = 4, max_rows: int = 4) -> Any:
    rows: dict[str, list[Any]] = {"user": [], "state": [], "income": [], "age": []}
    specials = [None, math.nan, math.inf, -math.inf, 1e300, -0.0, 2.5, 0.5]
    for u in range(n_users):
        for _ in range(rng.randint(1, max_rows)):
            rows["user"].append(u)
            rows["state"].append(rng.choice([*STATES, "WA"]))
            rows["income"].append(rng.choice(specials) if rng.random() < 0.3 else rng.uniform(-10, 120))
            rows["age"].append(rng.randint(-5, 130))
    return pl.DataFrame(
        rows, schema={"user": pl.Int64, "state": pl.String, "income": pl.Float64, "age": pl.Int32}
    )


def _ctx(df: Any, **kw: Any) -> dp.Context:
    args: dict[str, Any] = {
        "privacy_unit": dp.unit_of(id="user", max_rows=2),
        "privacy_loss": 1.0,
        "split_evenly_over": 3,
    }
    args.update(kw)
    return dp.Context(df, SCHEMA, **args)


def _query(ctx: dp.Context) -> dp.tables.TableQuery:
    return (
        ctx.query()
        .filter(dp.col("age") >= 18)
        .group_by("state", keys=STATES)
        .agg(dp.tables.count(), dp.tables.sum("income"), dp.tables.mean("income"))
    )


def _exact(df: Any, plan: Plan) -> tuple[np.ndarray, list[np.ndarray]]:
    found = PolarsEngine().aggregate(df, plan)
    return found.counts, found.sums


# --- a reference implementation in plain Python ------------------------------------------------------


def _code(v: Any, kind: str) -> int:
    if v is None:
        return int(value_codes(np.array([0]), np.array([True]))[0])
    if kind == "str":
        return string_code(v)
    arr = np.array([v], dtype=np.float64 if kind == "float" else np.int64)
    return int(value_codes(arr)[0])


def _reference(df: Any, plan: Plan, kinds: dict[str, str]) -> tuple[list[int], list[list[int]]]:
    """The plan evaluated row by row with Fractions: filter, keys, caps (hash spec), policy, grid."""
    rows = [r for r in df.iter_rows(named=True) if r["age"] is not None and r["age"] >= 18]
    rows = [r for r in rows if (r["state"],) in plan.keys]
    if plan.max_rows is not None:
        by_user: dict[Any, list[tuple[int, dict[str, Any]]]] = {}
        for r in rows:
            codes = [np.array([_code(r[c], kinds[c])], dtype=np.uint64) for c in plan.columns]
            by_user.setdefault(r["user"], []).append((int(row_keys(codes)[0]), r))
        rows = [r for lst in by_user.values() for _, r in sorted(lst, key=lambda t: t[0])[: plan.max_rows]]
    counts = [0] * len(plan.keys)
    sums = [[0] * len(plan.keys) for _ in plan.sums]
    for r in rows:
        i = plan.keys.index((r["state"],))
        counts[i] += 1
        for j, spec in enumerate(plan.sums):
            v = r[spec.column]
            if v is None or (isinstance(v, float) and math.isnan(v)):
                v = spec.fill
            v = min(max(v, spec.lo), spec.hi)
            sums[j][i] += round(Fraction(v) / Fraction(2) ** spec.k)
    return counts, sums


@pytest.mark.parametrize("seed", range(8))
def test_aggregates_equal_the_reference(seed: int) -> None:
    df = _frame(random.Random(seed))
    ctx = _ctx(df)
    q = _query(ctx)
    kinds = {n: c.kind for n, c in ctx.domain.columns}
    counts, sums = _exact(df, q.plan)
    ref_counts, ref_sums = _reference(df, q.plan, kinds)
    assert counts.tolist() == ref_counts
    assert [s.tolist() for s in sums] == ref_sums


@pytest.mark.parametrize("seed", range(6))
def test_capping_is_order_independent(seed: int) -> None:
    df = _frame(random.Random(seed), n_users=5, max_rows=6)
    plan = _query(_ctx(df, privacy_unit=dp.unit_of(id="user", max_rows=2, max_groups=1))).plan
    first = _exact(df, plan)
    for s in range(4):
        shuffled = df.sample(fraction=1.0, shuffle=True, seed=s)
        again = _exact(shuffled, plan)
        assert again[0].tolist() == first[0].tolist()
        assert [a.tolist() for a in again[1]] == [a.tolist() for a in first[1]]
    lazy = _exact(df.lazy(), plan)
    assert lazy[0].tolist() == first[0].tolist()


@pytest.mark.parametrize(
    "unit", [None, dp.unit_of(id="user", max_rows=2), dp.unit_of("user", 3, max_groups=1)]
)
@pytest.mark.parametrize("seed", range(6))
def test_removing_one_identifier_moves_aggregates_within_the_map(unit: Any, seed: int) -> None:
    """Brute force over neighbours: remove all rows of one user (or, at row level, one row)."""
    df = _frame(random.Random(100 + seed), n_users=4, max_rows=5)
    q = _query(_ctx(df, privacy_unit=unit))
    counts, sums = _exact(df, q.plan)
    r = 1 if unit is None else unit.max_rows
    if unit is None:
        neighbours = [df.slice(0, i).vstack(df.slice(i + 1)) for i in range(df.height)]
    else:
        neighbours = [df.filter(pl.col("user") != u) for u in df.get_column("user").unique().to_list()]
    for nb in neighbours:
        c2, s2 = _exact(nb, q.plan)
        assert int(np.abs(counts - c2).sum()) <= r  # L1 (hence L2) of the count vector
        for spec, a, b in zip(q.plan.sums, sums, s2, strict=True):
            assert int(np.abs(a - b).sum()) <= r * grid_bound(spec)
    # the map is what the noise measurements give at those sensitivities
    eps = q.measurement.map(1)
    assert eps == Fraction(1, 3)
    assert q.measurement.map(2) == 2 * eps


def test_breaking_the_cap_breaks_the_privacy_test() -> None:
    """The brute-force test can fail: without the row cap one user moves the count by more than R."""
    df = pl.DataFrame({"user": [1, 1, 1, 2], "state": ["CA"] * 4, "income": [1.0] * 4, "age": [30] * 4})
    q = _query(_ctx(df))
    plan = q.plan
    uncapped = Plan(plan.columns, plan.predicate, plan.by, plan.keys, plan.id, None, None, plan.sums)
    c1, _ = _exact(df, uncapped)
    c2, _ = _exact(df.filter(pl.col("user") != 1), uncapped)
    assert int(np.abs(c1 - c2).sum()) > 2
    c1, _ = _exact(df, plan)
    c2, _ = _exact(df.filter(pl.col("user") != 1), plan)
    assert int(np.abs(c1 - c2).sum()) <= 2


def test_fixed_point_grid() -> None:
    spec = sum_spec("x", dp.Column(float, bounds=(-1e6, 3.0)), None)
    assert spec.k == math.frexp(1e6)[1] - 1 - 30
    assert grid_bound(spec) <= 2**31
    big = sum_spec("n", dp.Column(int, bounds=(0, 2**40 + 3)), None)
    assert big.k == 10
    df = pl.DataFrame({"n": [2**40 + 3, 1536, 512, 2560, -7]})
    plan = Plan(("n",), None, (), ((),), None, None, None, (big,))
    (total,) = PolarsEngine().aggregate(df, plan).sums
    expected = sum(round(Fraction(min(max(v, 0), 2**40 + 3), 2**10)) for v in df.get_column("n").to_list())
    assert int(total[0]) == expected  # half to even: 1536/1024 -> 2, 512/1024 -> 0, 2560/1024 -> 2
    halves = sum_spec("h", dp.Column(float, bounds=(-(2.0**30), 2.0**30)), None)
    assert halves.k == 0
    df = pl.DataFrame({"h": [0.5, 1.5, 2.5, -0.5, -2.5]})
    plan = Plan(("h",), None, (), ((),), None, None, None, (halves,))
    (total,) = PolarsEngine().aggregate(df, plan).sums
    assert int(total[0]) == 0 + 2 + 2 + 0 - 2


def test_large_groups_sum_exactly() -> None:
    n = 300_000
    df = pl.DataFrame({"x": np.full(n, 1e9)})
    spec = sum_spec("x", dp.Column(float, bounds=(-1e9, 1e9)), None)
    plan = Plan(("x",), None, (), ((),), None, None, None, (spec,))
    found = PolarsEngine().aggregate(df, plan)
    count, (total,) = found.counts, found.sums
    assert int(count[0]) == n
    assert int(total[0]) == n * round(Fraction(10**9) / Fraction(2) ** spec.k)


def test_release_returns_noisy_frame_and_charges() -> None:
    df = _frame(random.Random(1))
    ctx = _ctx(df)
    q = _query(ctx)
    out = q.release()
    assert out.columns == ["state", "count", "income_sum", "income_mean"]
    assert out.get_column("state").to_list() == STATES
    assert ctx.remaining()["epsilon"] == Fraction(2, 3)
    text = repr(q.summarize())
    assert "discrete Laplace" in text and "ε=" in text


def test_summarize_names_the_vectors_as_the_user_knows_them() -> None:
    """No internal keys ("age^2", "distinct:state"): each released vector is named by the aggregate it
    serves, and the table stays aligned for long names and the quantile's noise."""
    ctx = _ctx(_frame(random.Random(4)), privacy_loss=6.0, split_evenly_over=1)
    q = (
        ctx.query()
        .group_by("state", keys=STATES)
        .agg(
            dp.tables.mean("income"),
            dp.tables.variance("age"),
            dp.tables.count_distinct("user"),
            dp.tables.quantile("age", 0.5, [20, 40, 60]),
        )
    )
    summary = q.summarize()
    names = [r[0] for r in summary.rows]
    assert names == [
        "count", "income_sum", "age_sum", "age_sum_of_squares", "user_count_distinct", "age_quantile_0.5"
    ]  # fmt: skip
    assert len(names) == len(q.vectors) + 1  # every vector and the quantile, once each
    text = repr(summary)
    assert "^" not in text and "distinct:" not in text
    table = text.splitlines()
    lines = table[1 : table.index(next(t for t in table if t.startswith("(accuracy")))]  # header and rows
    assert len({len(line) for line in lines}) == 1
    assert {line.index(" discrete Laplace") for line in lines[1:-1]} == {lines[0].index(" noise")}
    released = set(q.release().columns)
    assert {"user_count_distinct", "age_quantile_0.5"} <= released  # the same names as the result's


def test_zcdp_context() -> None:
    df = _frame(random.Random(2))
    ctx = _ctx(df, measure=dp.ZCDP(), privacy_loss=0.5, split_evenly_over=1)
    q = _query(ctx)
    assert q.measurement.map(1) <= Fraction(1, 2)
    assert q.measurement.map(1) > Fraction(1, 2) * Fraction(999, 1000)
    q.release()
    assert "discrete Gaussian" in repr(q.summarize())


def test_split_by_weights_and_explain() -> None:
    df = _frame(random.Random(3))
    ctx = _ctx(df, split_evenly_over=None, split_by_weights=[1, 3])
    a = ctx.query().agg(dp.tables.count())
    a.release()
    b = ctx.query().agg(dp.tables.count())
    assert (a.measurement.map(1), b.measurement.map(1)) == (Fraction(1, 4), Fraction(3, 4))
    assert "table_query" in str(dp.explain(b.measurement, 1))
    b.release()
    with pytest.raises(dp.BudgetExceeded):
        ctx.query()


def test_pandas_and_lazy_are_the_same_engine() -> None:
    df = _frame(random.Random(4))
    q = _query(_ctx(df))
    assert _exact(df.lazy(), q.plan)[0].tolist() == _exact(df, q.plan)[0].tolist()


# --- bad input: clear DPError before any engine job, nothing spent -----------------------------------


def test_bad_input_is_refused_before_anything_runs() -> None:
    df = _frame(random.Random(5))
    ctx = _ctx(df)
    before = ctx.remaining()
    with pytest.raises(dp.InvalidParameter, match="salary"):
        ctx.query().filter(dp.col("salary") > 3)
    with pytest.raises(dp.InvalidParameter, match="compares a str with a int"):
        ctx.query().filter(dp.col("state") > 3)
    with pytest.raises(dp.InvalidParameter, match="keys"):
        ctx.query().group_by("state", keys=["CA", 3])
    with pytest.raises(dp.InvalidParameter, match="not nullable"):
        ctx.query().group_by("state", keys=["CA", None])
    with pytest.raises(dp.InvalidParameter, match="partition selection"):  # a PureDP Context has no δ
        ctx.query().group_by("state").agg(dp.tables.count())
    with pytest.raises(dp.InvalidParameter, match="no bounds"):
        ctx.query().agg(dp.tables.sum("user"))
    with pytest.raises(dp.InvalidParameter, match="str column"):
        ctx.query().agg(dp.tables.sum("state"))
    with pytest.raises(dp.DomainMismatch, match="nope"):
        _ctx(df, privacy_unit=dp.unit_of(id="nope", max_rows=1))
    with pytest.raises(dp.DomainMismatch, match="income"):
        _ctx(df.with_columns(pl.col("income").cast(pl.String)))
    with pytest.raises(dp.DomainMismatch, match="age"):
        _ctx(df.drop("age"))
    with pytest.raises(dp.DomainMismatch, match="table"):
        _ctx([1, 2, 3])
    nullable = dict(SCHEMA, income=dp.Column(float, bounds=(0.0, 1.0), nullable=True))
    c2 = dp.Context(df, nullable, privacy_loss=1.0, split_evenly_over=1)
    with pytest.raises(dp.InvalidParameter, match="nullable"):
        c2.query().agg(dp.tables.mean("income"))
    big = ctx.query(privacy_loss=5.0).agg(dp.tables.count())
    with pytest.raises(dp.BudgetExceeded):
        big.release()
    assert ctx.remaining() == before


def test_schema_membership_never_scans() -> None:
    d = dp.FrameDomain(SCHEMA)
    lazy = pl.LazyFrame({"user": [1], "state": ["a"], "income": [1.0], "age": [3]}).map_batches(
        lambda _: (_ for _ in ()).throw(RuntimeError("scanned"))
    )
    assert d.member(lazy.select(pl.col("*")))  # schema only: the failing batch function never runs


@pytest.mark.parametrize("seed", range(10))
def test_in_domain_data_never_raises(seed: int) -> None:
    rng = random.Random(seed)
    df = _frame(rng, n_users=rng.randint(1, 5))
    if seed % 3 == 0:
        df = df.head(0)  # empty
    for unit in (None, dp.unit_of(id="user", max_rows=1, max_groups=1)):
        ctx = _ctx(df, privacy_unit=unit, split_evenly_over=2)
        out = _query(ctx).release()
        assert out.height == len(STATES)
        total = ctx.query().agg(dp.tables.count(), dp.tables.mean("age")).release()
        assert total.height == 1


def test_import_does_not_load_polars() -> None:
    code = "import sys, dpcompose; assert 'polars' not in sys.modules, 'polars imported'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd="src")


def test_engine_codes_follow_the_specified_hash() -> None:
    from dpcompose.tables._polars import series_codes
    from dpcompose.transformations._hash import NULL_CODE

    strings = pl.Series(["b", None, "a", "b", "é"])
    expected = [string_code("b"), int(NULL_CODE), string_code("a"), string_code("b"), string_code("é")]
    assert series_codes(strings).tolist() == expected
    floats = pl.Series([0.0, -0.0, None, float("nan")])
    codes = series_codes(floats).tolist()
    assert codes[0] == codes[1] and codes[2] == int(NULL_CODE)
    assert codes[3] == int(value_codes(np.array([-math.nan]))[0])
    ints = pl.Series([1, None, -1], dtype=pl.Int8)
    assert series_codes(ints).tolist() == [_code(1, "int"), int(NULL_CODE), _code(-1, "int")]


def test_person_level_unit_is_the_catalogue_identifier_metric() -> None:
    schema = dp.FrameDomain({"user": dp.Column(int), "x": dp.Column(float, bounds=(0.0, 1.0))})
    df = pl.DataFrame({"user": [1, 1, 2], "x": [0.5, 0.25, 1.0]})
    ctx = dp.Context(df, schema, privacy_unit=dp.unit_of("user", 2), privacy_loss=1.0, split_evenly_over=1)
    query = ctx.query().agg(dp.tables.count())
    assert query.measurement.input_metric == dp.SymmetricIdDistance("user")
    dp.SymmetricIdDistance("user").check_domain(schema)
    with pytest.raises(dp.DomainMismatch, match="not declared"):
        dp.SymmetricIdDistance("visits").check_domain(schema)
    with pytest.raises(dp.DomainMismatch, match="not declared"):
        dp.SymmetricIdDistance(0).check_domain(schema)


def test_count_distinct_costs_like_a_count_and_refuses_floats() -> None:
    df = pl.DataFrame(
        {
            "user": [1, 1, 2, 3, 3, 3],
            "city": ["a", "a", "a", "b", "b", "b"],
            "shop": ["x", "y", "x", "z", None, "w"],
            "x": [0.5] * 6,
        }
    )
    schema = dp.FrameDomain(
        {
            "user": dp.Column(int),
            "city": dp.Column(str),
            "shop": dp.Column(str, nullable=True),
            "x": dp.Column(float, bounds=(0.0, 1.0)),
        }
    )
    ctx = dp.Context(
        df, schema, privacy_unit=dp.unit_of("user", max_rows=3), privacy_loss=1e6, split_evenly_over=2
    )
    q = ctx.query().group_by("city", keys=["a", "b"]).agg(dp.tables.count_distinct("shop"))
    assert q.measurement.map(1) == Fraction(5 * 10**5)  # one released vector, the whole share
    assert [r.sensitivity for r in q.vectors] == [3]  # a person moves it by at most their row cap
    out = q.release()
    assert out["shop_count_distinct"].to_list() == [2, 2]  # nulls are not a value; noise is tiny at ε = 5e5
    with pytest.raises(dp.InvalidParameter, match="float column"):
        ctx.query().agg(dp.tables.count_distinct("x"))


def test_variance_releases_three_vectors_and_is_accurate() -> None:
    rng = np.random.default_rng(3)
    n = 50_000
    x = rng.normal(40.0, 12.0, n)
    df = pl.DataFrame({"user": np.arange(n) // 2, "x": x})
    schema = dp.FrameDomain({"user": dp.Column(int), "x": dp.Column(float, bounds=(0.0, 100.0))})
    ctx = dp.Context(
        df, schema, privacy_unit=dp.unit_of("user", max_rows=2), privacy_loss=30.0, split_evenly_over=1
    )
    q = ctx.query().agg(dp.tables.variance("x"))
    assert q.measurement.map(1) == Fraction(30)
    released = {r.what: r for r in q.vectors}
    assert set(released) == {("count",), ("sum", "x", False), ("sum", "x", True)}
    m = released[("sum", "x", False)].sensitivity // 2  # R = 2 rows per person
    assert released[("sum", "x", True)].sensitivity == 2 * ((m * m) >> 31)  # ⌊M²/2**31⌋ per row
    got = q.release()["x_variance"][0]
    assert abs(got - np.var(np.clip(x, 0.0, 100.0), ddof=1)) < 2.0


@pytest.mark.parametrize(
    "unit", [None, dp.unit_of(id="user", max_rows=2), dp.unit_of("user", 3, max_groups=1)]
)
@pytest.mark.parametrize("seed", range(4))
def test_variance_and_distinct_vectors_move_within_the_map(unit: Any, seed: int) -> None:
    """Brute force over neighbours, as above, for the sum of squares and the distinct counts."""
    df = _frame(random.Random(200 + seed), n_users=4, max_rows=5)
    q = (
        _ctx(df, privacy_unit=unit)
        .query()
        .filter(dp.col("age") >= 18)
        .group_by("state", keys=STATES)
        .agg(dp.tables.variance("income"), dp.tables.count_distinct("age"))
    )
    engine = PolarsEngine()
    base = engine.aggregate(df, q.plan)
    r = 1 if unit is None else unit.max_rows
    sensitivity = {rel.what: rel.sensitivity for rel in q.vectors}
    assert sensitivity[("distinct", "age")] == r
    if unit is None:
        neighbours = [df.slice(0, i).vstack(df.slice(i + 1)) for i in range(df.height)]
    else:
        neighbours = [df.filter(pl.col("user") != u) for u in df.get_column("user").unique().to_list()]
    for nb in neighbours:
        other = engine.aggregate(nb, q.plan)
        for spec, a, b in zip(q.plan.sums, base.sums, other.sums, strict=True):
            assert int(np.abs(a - b).sum()) <= sensitivity[spec.key] == r * grid_bound(spec)
        assert int(np.abs(base.distincts[0] - other.distincts[0]).sum()) <= r


def _scores(found: Any, plan: Plan, alpha: Fraction) -> list[np.ndarray]:
    """Per key, the quantile's integer scores |(b − a)·L − a·G| from the engine's threshold counts."""
    m = len(plan.below) // 2
    less = np.stack(found.belows[:m], axis=1)
    greater = found.counts[:, None] - np.stack(found.belows[m:], axis=1)
    a, b = alpha.numerator, alpha.denominator
    return list(np.abs((b - a) * less - a * greater))


@pytest.mark.parametrize("alpha", [Fraction(1, 2), Fraction(1, 4)])
@pytest.mark.parametrize("unit", [None, dp.unit_of("user", 3), dp.unit_of("user", 3, max_groups=1)])
@pytest.mark.parametrize("seed", range(3))
def test_quantile_scores_move_within_the_map(alpha: Fraction, unit: Any, seed: int) -> None:
    """Brute force over neighbours: the L∞ moves of the keys' score vectors add up to at most
    R·max(a, b − a), the sensitivity the noisy-min selections are scaled to (their costs add over keys)."""
    df = _frame(random.Random(300 + seed), n_users=4, max_rows=5)
    q = (
        _ctx(df, privacy_unit=unit)
        .query()
        .group_by("state", keys=STATES)
        .agg(dp.tables.quantile("income", alpha, [0.0, 10.0, 30.0, 55.5, 90.0]))
    )
    engine = PolarsEngine()
    base = _scores(engine.aggregate(df, q.plan), q.plan, alpha)
    r = 1 if unit is None else unit.max_rows
    bound = r * max(alpha.numerator, alpha.denominator - alpha.numerator)
    assert [q_[2] for q_ in q.quantiles] == [bound]
    if unit is None:
        neighbours = [df.slice(0, i).vstack(df.slice(i + 1)) for i in range(df.height)]
    else:
        neighbours = [df.filter(pl.col("user") != u) for u in df.get_column("user").unique().to_list()]
    for nb in neighbours:
        other = _scores(engine.aggregate(nb, q.plan), q.plan, alpha)
        moved = sum(int(np.abs(x - y).max()) for x, y in zip(base, other, strict=True))
        assert moved <= bound
    assert q.measurement.map(1) == Fraction(1, 3)  # the whole share (ε = 1 over 3 releases)
    assert q.measurement.map(2) == Fraction(2, 3)


def test_quantile_is_accurate_and_checks_its_arguments() -> None:
    rng = np.random.default_rng(11)
    n = 40_000
    df = pl.DataFrame({"user": np.arange(n), "g": rng.choice(["a", "b"], n), "age": rng.integers(0, 101, n)})
    schema = dp.FrameDomain(
        {"user": dp.Column(int), "g": dp.Column(str), "age": dp.Column(int, bounds=(0, 120))}
    )
    ctx = dp.Context(df, schema, privacy_loss=1.0, measure=dp.ZCDP(), split_evenly_over=2)
    q = ctx.query().group_by("g", keys=["a", "b"]).agg(dp.tables.quantile("age", 0.5, list(range(0, 121, 5))))
    assert q.measurement.map(1) <= Fraction(1, 2)  # ε²/2 within the ρ share (half the budget)
    rows = {r[0]: r for r in q.summarize().rows}
    loose = {r[0]: r for r in q.summarize(alpha=0.2).rows}
    assert rows["age_quantile_0.5"][1].startswith("noisy min")
    assert rows["age_quantile_0.5"][3] > loose["age_quantile_0.5"][3] > 0  # stricter level, wider
    assert all(abs(v - 50) <= 5 for v in q.release()["age_quantile_0.5"].to_list())
    with pytest.raises(dp.InvalidParameter, match="int"):
        ctx.query().agg(dp.tables.quantile("age", 0.5, [1.5, 2.5]))
    with pytest.raises(dp.InvalidParameter, match="increasing"):
        ctx.query().agg(dp.tables.quantile("age", 0.5, [3, 2]))
    with pytest.raises(dp.InvalidParameter, match="alpha"):
        dp.tables.quantile("age", 1.5, [1, 2])
    with pytest.raises(dp.InvalidParameter, match="str column"):
        ctx.query().agg(dp.tables.quantile("g", 0.5, [1, 2]))


def test_with_column_and_select() -> None:
    df = pl.DataFrame(
        {"user": [1, 2, 3], "state": ["CA", "CA", "NY"], "income": [10.0, 20.0, None], "age": [30, 40, 50]}
    )
    schema = dp.FrameDomain(
        {
            "user": dp.Column(int),
            "state": dp.Column(str),
            "income": dp.Column(float, bounds=(0.0, 100.0), nullable=True, fill=0.0),
            "age": dp.Column(int, bounds=(0, 120)),
        }
    )
    ctx = dp.Context(df, schema, privacy_loss=1e9, split_evenly_over=3)
    q = ctx.query().with_column("per_year", dp.col("income") * 0.5 + dp.col("age"), bounds=(0.0, 200.0))
    out = q.filter(dp.col("per_year") > 30.0).agg(dp.tables.sum("per_year"), dp.tables.count()).release()
    assert out["per_year_sum"][0] == pytest.approx(35.0 + 50.0)  # null income: null per_year, filtered out
    assert out["count"][0] == 2
    with pytest.raises(dp.InvalidParameter, match="already a column"):
        q.with_column("age", dp.col("age") * 2, bounds=(0.0, 1.0))
    with pytest.raises(dp.InvalidParameter, match="reserve"):  # would collide with an engine's row key
        q.with_column("__dp_key", dp.col("age") * 2, bounds=(0.0, 1.0))
    with pytest.raises(dp.InvalidParameter, match="reserve"):
        dp.FrameDomain({"__dp_n": dp.Column(int)})
    with pytest.raises(dp.InvalidParameter, match="needs numbers"):
        q.with_column("bad", dp.col("state") * 2, bounds=(0.0, 1.0))
    with pytest.raises(dp.InvalidParameter, match="bounds"):
        q.with_column("bad", dp.col("age") * 2, bounds=(1.0, 0.0))
    with pytest.raises(dp.InvalidParameter, match="a number or an expression"):
        dp.col("age") * "2"
    narrowed = ctx.query().select("state", "age")
    with pytest.raises(dp.InvalidParameter, match="not among the selected"):
        narrowed.agg(dp.tables.sum("income"))
    assert narrowed.group_by("state", keys=["CA"]).agg(dp.tables.sum("age")).release()["age_sum"][0] == 70


def test_string_codes_keep_trailing_nuls_and_do_not_pad() -> None:
    """The specified code of a string is that of the exact str: "a\\x00" is not "a" (numpy's fixed-width
    str dtype drops trailing NULs), and one long string does not make every other one as long."""
    from dpcompose.tables._polars import series_codes
    from dpcompose.transformations._hash import NULL_CODE

    series = pl.Series("s", ["a", "a\x00", None, "x" * 100_000, "a"])
    assert series_codes(series).tolist() == [
        string_code("a"),
        string_code("a\x00"),
        int(NULL_CODE),
        string_code("x" * 100_000),
        string_code("a"),
    ]


def test_names_spark_would_confuse_are_refused_before_anything_runs() -> None:
    """Spark matches column names ignoring case and reads '.' as a struct path: a derived 'USER' would
    replace the identifier 'user' (and undo the caps), so such names never reach an engine."""
    schema = dp.FrameDomain({"user": dp.Column(int), "amount": dp.Column(float, bounds=(0.0, 1.0))})
    df = pl.DataFrame({"user": [1] * 50, "amount": [0.5] * 50})
    ctx = dp.Context(
        df, schema, privacy_unit=dp.unit_of("user", max_rows=1), privacy_loss=1.0, split_evenly_over=1
    )
    before = ctx.remaining()
    with pytest.raises(dp.InvalidParameter, match="ignoring case"):
        ctx.query().with_column("USER", dp.col("amount") * 1.0, bounds=(0.0, 1.0))
    for bad in (
        {"a": dp.Column(int), "A": dp.Column(int)},
        {"a.b": dp.Column(int)},
        {"__DP_key": dp.Column(int)},
    ):
        with pytest.raises(dp.InvalidParameter):
            dp.FrameDomain(bad)
    clash = pl.DataFrame({"user": [1], "USER": [2], "amount": [0.5]})
    assert not schema.member(clash)
    with pytest.raises(dp.DomainMismatch, match="ignoring case"):
        dp.Context(clash, schema, privacy_loss=1.0, split_evenly_over=1)
    assert ctx.remaining() == before


def test_is_in_with_mixed_numbers_is_refused_before_anything_runs() -> None:
    """Polars raises on is_in([1.5]) over an int column (after the charge, had it run); Spark casts."""
    df = _frame(random.Random(1))
    ctx = _ctx(df)
    before = ctx.remaining()
    with pytest.raises(dp.InvalidParameter, match="write 2.0"):
        ctx.query().filter(dp.col("age").is_in([18, 21.5]))
    with pytest.raises(dp.InvalidParameter, match="float"):
        ctx.query().filter(dp.col("income").is_in([1, 2]))
    assert ctx.query().filter(dp.col("income").is_in([1.0, 2.0])) is not None
    assert ctx.remaining() == before


def test_select_keeps_computing_the_derived_columns_a_kept_one_reads() -> None:
    """with_columns(b=…, c=col("b")+1).select("c"): b is hidden, not dropped (dropping it made the engine
    raise ColumnNotFoundError when the query ran, after the charge)."""
    schema = dp.FrameDomain({"a": dp.Column(float, bounds=(0.0, 1.0))})
    ctx = dp.Context(pl.DataFrame({"a": [0.5, 0.25]}), schema, privacy_loss=1e9, split_evenly_over=1)
    q = ctx.query().with_columns(b=(dp.col("a") * 2, (0.0, 2.0)), c=(dp.col("b") + 1, (1.0, 3.0)))
    q = q.select("c")
    with pytest.raises(dp.InvalidParameter, match="not among the selected"):
        q.agg(dp.tables.sum("b"))
    assert round(q.agg(dp.tables.sum("c")).release()["c_sum"][0], 3) == 3.5


def test_derived_columns_do_not_raise_after_the_charge() -> None:
    # found by review: a quantile of a derived column raised KeyError after the charge, and a derived column
    # that is a bare int column stayed Int64 in the engine, so a float is_in filter raised after the charge
    df = pl.DataFrame({"age": [30, 40, 50, 60]})
    schema = dp.FrameDomain({"age": dp.Column(int, bounds=(0, 120))})
    ctx = dp.Context(df, schema, privacy_loss=1e9, split_evenly_over=2)
    q = ctx.query().with_column("f", dp.col("age") * 1.0, bounds=(0.0, 120.0))
    out = q.agg(dp.tables.quantile("f", 0.5, [10.0, 45.0, 100.0])).release()
    assert out["f_quantile_0.5"].dtype == pl.Float64 and out["f_quantile_0.5"][0] == 45.0
    bare = ctx.query().with_column("g", dp.col("age"), bounds=(0.0, 120.0))
    out = bare.filter(dp.col("g").is_in([40.0, 50.0])).agg(dp.tables.count()).release()
    assert out["count"][0] == 2


def test_variance_of_a_small_int_column() -> None:
    # found by review: the squares were ⌊g²/2**31⌋ whatever the bounds, so ages (g < 46341) squared to 0
    ages = [20, 35, 50, 65, 80, 95]
    df = pl.DataFrame({"age": ages})
    schema = dp.FrameDomain({"age": dp.Column(int, bounds=(0, 100))})
    ctx = dp.Context(df, schema, privacy_loss=1e9, split_evenly_over=1)
    out = ctx.query().agg(dp.tables.variance("age")).release()
    assert out["age_variance"][0] == pytest.approx(float(np.var(ages, ddof=1)), rel=1e-3)


@pytest.mark.parametrize("lazy", [False, True])
def test_a_bare_row_level_count_counts_the_rows(lazy: bool) -> None:
    """``ctx.query().agg(count())`` at row level reads no column: Polars selected none, which left no
    rows, and released 0 plus noise (Spark counted 100)."""
    df = pl.DataFrame({"x": list(range(100))})
    data = df.lazy() if lazy else df
    ctx = dp.Context(data, {"x": dp.Column(int, bounds=(0, 10))}, privacy_loss=1e9, split_evenly_over=1)
    assert ctx.query().agg(dp.tables.count()).release()["count"].to_list() == [100]  # noise ~1e-9: 0
