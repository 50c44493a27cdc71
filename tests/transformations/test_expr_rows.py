"""make_map_exprs: row maps written as table expressions, vectorised, with the tables' meaning and the
bounds the expressions prove; and make_sscp, the exact-on-a-grid sum of outer products."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import polars as pl
import pytest

import dpcompose as dp
from dpcompose.core._norm_domain import exact_norm_within
from dpcompose.tables._polars import to_polars
from dpcompose.transformations import _expr_numpy
from dpcompose.transformations._expr import Expr, typed
from dpcompose.transformations._from_polars import from_polars
from dpcompose.transformations._sscp import BLOCK_ROWS

SYM, CHG = dp.SymmetricDistance(), dp.ChangeOneDistance()
ROWS3 = dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float, nan=True), size=3))
a, b, c = pl.col("a"), pl.col("b"), pl.col("c")
EXPRS = [
    (a * 2 + b).clip(-1.0, 1.0),
    a / b,  # null for b = 0: NaN in the output
    pl.when(a > b).then(a - b).otherwise(c.abs()),
    (a > 0) & (b < c),
    c.round(),
    (a / b).fill_null(-3.0).clip(-10.0, 10.0),
    a.cast(pl.Int64),  # null beyond int64 and for NaN
    c.is_between(-1.0, 1.0),
]


def _data(seed: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3)) * rng.choice([0.5, 3.0, 1e300], size=(n, 3))
    x[rng.random((n, 3)) < 0.1] = np.nan
    x[rng.random((n, 3)) < 0.1] = 0.0
    x[rng.random((n, 3)) < 0.03] = -0.0
    return x


@pytest.mark.parametrize("seed", [0, *(pytest.param(k, marks=pytest.mark.slow) for k in range(1, 20))])
def test_outputs_are_polars_outputs_with_null_as_nan(seed: int) -> None:
    x = _data(seed, 300)
    t = dp.t.make_map_exprs(ROWS3, SYM, ["a", "b", "c"], EXPRS)
    ours = t(x)
    frame = pl.DataFrame({"a": x[:, 0], "b": x[:, 1], "c": x[:, 2]})
    kinds = {"a": "float", "b": "float", "c": "float"}
    for j, e in enumerate(EXPRS):
        tree, _ = typed(from_polars(e, "e"), kinds)
        theirs = frame.select(to_polars(tree).cast(pl.Float64).fill_null(math.nan).alias("o")).to_series()
        expected = theirs.to_numpy().copy()
        expected[~np.isfinite(expected)] = math.nan
        np.testing.assert_array_equal(ours[:, j], expected)
    assert t.output_domain.member(ours)
    assert t.map(3) == 3


def test_single_expression_gives_one_dimensional_output_with_bounds() -> None:
    col = dp.VectorDomain(dp.AtomDomain(float, nan=True), size=4)
    t = dp.t.make_map_exprs(col, CHG, ["x"], (pl.col("x") * 3).clip(0, 10), fill=-1.0)
    assert t(np.array([1.0, np.nan, -5.0, 7.0])).tolist() == [3.0, 10.0, 0.0, 10.0]
    assert t.output_domain == dp.VectorDomain(dp.AtomDomain(float, bounds=(-1.0, 10.0)), size=4)
    assert t.output_metric == CHG


def _nested_clips(depth: int) -> pl.Expr:
    e = pl.col("x")
    for i in range(depth):
        e = e.clip(-float(i + 1), float(i + 1))
    return e


def test_nested_clips_cost_a_constant_per_level(monkeypatch: pytest.MonkeyPatch) -> None:
    # clip(lo, hi) reads its operand three times: walking the tree instead of the DAG (typing, bound
    # analysis, evaluation) costs 3**depth; each level must add the same work
    made: list[int] = []

    class Counted(_expr_numpy.Bound):
        def __init__(self, *args: object, **kwargs: object) -> None:
            made.append(1)
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_expr_numpy, "Bound", Counted)
    col = dp.VectorDomain(dp.AtomDomain(float, nan=True))
    counts = []
    for depth in range(1, 8):
        made.clear()
        dp.t.make_map_exprs(col, SYM, ["x"], _nested_clips(depth))
        counts.append(len(made))
    steps = {b - a for a, b in itertools.pairwise(counts)}
    assert len(steps) == 1, counts  # linear in the depth
    t = dp.t.make_map_exprs(col, SYM, ["x"], _nested_clips(30), fill=0.0)
    x = np.array([-50.0, -0.5, 0.25, 2.0, np.nan])
    expected = np.array([-1.0, -0.5, 0.25, 1.0, 1.0])  # NaN clips to the upper bound
    np.testing.assert_array_equal(t(x), expected)
    atom = t.output_domain.element_domain  # type: ignore[attr-defined]
    assert isinstance(atom, dp.AtomDomain) and atom.bounds is not None
    lo, hi = atom.bounds
    assert lo <= -1.0 and hi >= 1.0 and math.isfinite(lo) and math.isfinite(hi)
    assert t.map(2) == 2


def test_polars_expressions_are_stored_as_their_trees_and_rebuild_the_same_map() -> None:
    t = dp.t.make_map_exprs(ROWS3, CHG, ["a", "b", "c"], EXPRS, fill=-7.0)
    back = dp.from_json(dp.to_json(t))
    assert back.output_domain == t.output_domain and back.input_metric == CHG
    assert [back.map(d) for d in (0, 1, 5)] == [t.map(d) for d in (0, 1, 5)] == [0, 1, 5]
    x = _data(3, 500)
    np.testing.assert_array_equal(back(x), t(x))
    one = dp.t.make_map_exprs(ROWS3, SYM, ["a", "b", "c"], (a / b).clip(-1.0, 1.0))
    np.testing.assert_array_equal(dp.from_json(dp.to_json(one))(x), one(x))


def test_stored_trees_are_bounded_and_read_trees_are_checked() -> None:
    col = dp.VectorDomain(dp.AtomDomain(float, nan=True))
    deep = dp.t.make_map_exprs(col, SYM, ["x"], _nested_clips(30))
    with pytest.raises(dp.SerializationError, match="exprs.*nodes"):
        dp.to_json(deep)  # written out, 30 nested clips would be 3**30 nodes
    shallow = dp.t.make_map_exprs(col, SYM, ["x"], _nested_clips(3))
    assert dp.from_json(dp.to_json(shallow)).output_domain == shallow.output_domain
    for bad in (Expr("when", (dp.col("a") > 1, dp.col("a"))), Expr("+", (dp.col("a"),))):
        with pytest.raises(dp.InvalidParameter, match="do not fit the operation"):
            dp.t.make_map_exprs(ROWS3, SYM, ["a", "b", "c"], bad)  # a tree no builder makes (a file's)


def test_deep_shared_trees_are_shown_in_bounded_time() -> None:
    # the text of 12 nested clips written out is 3**12 operands long: an error message or repr shows a
    # bounded prefix of it
    tree = from_polars(_nested_clips(12), "exprs")
    assert isinstance(tree, Expr)
    shown = repr(tree)
    assert shown.startswith("Expr(when(when(when(") and "…" in shown and len(shown) < 5000
    col = dp.VectorDomain(dp.AtomDomain(float, nan=True))
    with pytest.raises(dp.InvalidParameter, match="needs numbers, not a bool"):
        dp.t.make_map_exprs(col, SYM, ["x"], (_nested_clips(30) > 0) + 1)


def test_bounds_from_input_domain_and_arithmetic() -> None:
    rows = dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float, bounds=(-2.0, 3.0)), size=2))
    t = dp.t.make_map_exprs(rows, SYM, ["u", "v"], [pl.col("u") * pl.col("v"), pl.col("u").abs() + 1])
    (lo, hi), nan = t.output_domain.element_domain.element_domain.bounds, False
    assert lo <= -6.0 and hi >= 9.0 and hi - 9.0 < 1e-14 and -6.0 - lo < 1e-14
    assert not t.output_domain.element_domain.element_domain.nan and not nan
    unbounded = dp.t.make_map_exprs(rows, SYM, ["u", "v"], pl.col("u") / pl.col("v"))
    assert unbounded.output_domain.element_domain == dp.AtomDomain(float, nan=True)
    x = np.array([[1.0, 0.0], [-2.0, 3.0]])
    assert np.isnan(unbounded(x)[0]) and unbounded(x)[1] == -2.0 / 3.0


def test_int_columns_and_dp_col() -> None:
    ints = dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(int, bounds=(0, 2**62)), size=2))
    t = dp.t.make_map_exprs(
        ints, SYM, ["i", "j"], [dp.col("i") + dp.col("j"), (pl.col("i") > 5).cast(pl.Int64)]
    )
    out = t(np.array([[1, 2], [2**62, 7]]))
    assert out.tolist() == [[3.0, 0.0], [float(2**62 + 7), 1.0]]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"exprs": pl.col("zz")}, dp.InvalidParameter, "not among columns"),
        ({"exprs": pl.col("a").map_elements(abs)}, dp.DomainMismatch, "not a plain Polars|not offered"),
        ({"exprs": pl.col("a").sum()}, dp.DomainMismatch, "not offered"),
        ({"exprs": pl.col("a").shift(1)}, dp.DomainMismatch, "not offered"),
        ({"exprs": pl.lit("x")}, dp.InvalidParameter, "outputs numbers"),
        ({"exprs": []}, dp.InvalidParameter, "at least one"),
        ({"columns": ["a", "b"]}, dp.InvalidParameter, "name each"),
        ({"columns": ["a", "a", "b"]}, dp.InvalidParameter, "distinct"),
        ({"fill": math.nan}, dp.InvalidParameter, "finite"),
        (
            {"input_domain": dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(int), size=3))},
            dp.DomainMismatch,
            "int64",
        ),
        ({"input_domain": dp.VectorDomain(dp.AtomDomain(str))}, dp.DomainMismatch, "numeric"),
        ({"input_metric": dp.SymmetricIdDistance(0)}, dp.DomainMismatch, "make_bound_contributions"),
    ],
)
def test_refusals(kwargs: dict[str, object], error: type[Exception], match: str) -> None:
    base: dict[str, object] = {"input_domain": ROWS3, "input_metric": SYM, "columns": ["a", "b", "c"]}
    base["exprs"] = pl.col("a")
    base.update(kwargs)
    with pytest.raises(error, match=match):
        dp.t.make_map_exprs(**base)  # type: ignore[arg-type]


# --- make_sscp --------------------------------------------------------------------------------------


def _exact_sscp(x: np.ndarray, intercept: bool) -> list[Fraction]:
    rows = [[Fraction(v) for v in r] + ([Fraction(1)] if intercept else []) for r in x.tolist()]
    width = len(rows[0])
    return [sum((r[i] * r[j] for r in rows), Fraction(0)) for i in range(width) for j in range(width)]


@pytest.mark.parametrize("intercept", [False, True])
def test_sscp_is_exact_on_grid_data(intercept: bool) -> None:
    rng = np.random.default_rng(5)
    x = np.round(rng.uniform(-1, 1, size=(200, 3)) * 1024) / 1024 / 2  # multiples of 2**-11, |x|_inf <= 1/2
    rows = dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float, bounds=(-0.5, 0.5)), size=3), size=200)
    t = dp.t.make_sscp(rows, SYM, intercept=intercept)
    assert t(x).tolist() == [float(v) for v in _exact_sscp(x, intercept)]


def test_sscp_over_blocks_and_beyond_max_size() -> None:
    x = np.full((BLOCK_ROWS + 3, 2), 0.5)
    rows = dp.VectorDomain(dp.NormBallDomain(size=2, norm=1.0))
    t = dp.t.make_sscp(rows, SYM, max_size=10)  # 65,539 rows: computed, each entry clamped to L ≈ 10·s
    out = t(x)
    assert out.min() >= 10.0
    assert out.max() <= 10.001
    full = dp.t.make_sscp(rows, SYM, max_size=BLOCK_ROWS + 3)
    assert full(x).tolist() == [0.25 * (BLOCK_ROWS + 3)] * 4


@pytest.mark.parametrize("metric", [SYM, CHG])
def test_sscp_neighbours_within_the_map(metric: dp.Metric) -> None:
    """Rows on the sphere (the worst case), neighbours by adding or changing one row."""
    rng = np.random.default_rng(7)
    d, c = 4, 3.0
    x = rng.normal(size=(100, d))
    x *= c / np.linalg.norm(x, axis=1, keepdims=True) * (1 - 1e-12)
    rows = dp.VectorDomain(dp.NormBallDomain(size=d, norm=c))
    t = dp.t.make_sscp(rows, metric, intercept=True, max_size=1000)
    bound = float(t.map(1))
    base = t(x)
    worst = 0.0
    for k in range(8):
        other = x.copy()
        if metric == SYM:
            other = np.vstack([x, np.eye(d)[k % d] * c * (1 - 1e-12)])
        else:
            other[k] = -x[k] if k % 2 else np.eye(d)[k % d] * c * (1 - 1e-12)
        worst = max(worst, float(np.linalg.norm(t(other) - base)))
    assert worst <= bound
    exact = (c * c + 1) * (math.sqrt(2) if metric == CHG else 1)
    assert exact <= bound <= exact * (1 + 1e-4)


def test_sscp_refusals() -> None:
    unbounded = dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float), size=2))
    with pytest.raises(dp.DomainMismatch, match="bounded norm"):
        dp.t.make_sscp(unbounded, SYM, max_size=10)
    nan = dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float, bounds=(0.0, 1.0), nan=True), size=2))
    with pytest.raises(dp.DomainMismatch, match="without NaN"):
        dp.t.make_sscp(nan, SYM, max_size=10)
    ball = dp.VectorDomain(dp.NormBallDomain(size=2, norm=1.0))
    with pytest.raises(dp.InvalidParameter, match="max_size"):
        dp.t.make_sscp(ball, SYM)
    with pytest.raises(dp.InvalidParameter, match="intercept"):
        dp.t.make_sscp(ball, SYM, intercept=1, max_size=3)  # type: ignore[arg-type]


def test_regression_by_sufficient_statistics_end_to_end() -> None:
    """Row map (clip; NaN clips to the upper bound) >> SSCP with an intercept >> Gaussian noise >> solve."""
    rng = np.random.default_rng(11)
    n = 20_000
    x = rng.uniform(-1, 1, size=(n, 2))
    y = 0.5 * x[:, 0] - 0.25 * x[:, 1] + 0.1 + rng.normal(scale=0.05, size=n)
    data = np.column_stack([x, y])
    raw = dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float, nan=True), size=3), size=n)
    clipped = [pl.col(name).clip(-1.0, 1.0) for name in ("x1", "x2", "y")]
    rows = dp.t.make_map_exprs(raw, CHG, ["x1", "x2", "y"], clipped)
    sscp = rows >> dp.t.make_sscp(rows.output_domain, CHG, intercept=True)
    noisy = sscp >> dp.m.make_gaussian(
        sscp.output_domain, sscp.output_metric, scale=50.0, rng=np.random.default_rng(3)
    )  # seeded: the solve's tolerance is a few noise standard deviations, not a sure bound
    m = noisy.map(1)
    assert m < 0.01
    v = noisy(data).reshape(4, 4)
    v = (v + v.T) / 2
    order = [0, 1, 3]  # x1, x2, intercept; y is column 2
    beta = np.linalg.solve(v[np.ix_(order, order)], v[order, 2])
    np.testing.assert_allclose(beta, [0.5, -0.25, 0.1], atol=0.02)


def _exactly_within(row: np.ndarray, p: int, bound: float) -> bool:
    if not np.isfinite(row).all():
        return False
    values = [Fraction(v) for v in row.tolist()]
    total = sum(abs(v) for v in values) if p == 1 else sum(v * v for v in values)
    return total <= (Fraction(bound) if p == 1 else Fraction(bound) ** 2)


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("bound", [1.0, 3.7, 2.0**-399, 2.0**399, 1e-200, 1e200])
def test_norm_ball_membership_of_mixed_rows_is_exact(p: int, bound: float) -> None:
    """One array mixing rows the plain sums decide, rows near the sphere and tiny rows (then non-finite
    ones): each row's answer is the exact rational one."""
    rng = np.random.default_rng(p)
    d = 4
    x = rng.normal(size=(100, d))
    norms = np.abs(x).sum(axis=1) if p == 1 else np.sqrt(np.square(x).sum(axis=1))
    offsets = rng.choice(
        [-(2.0**-20), -(2.0**-27), -(2.0**-50), 0.0, 2.0**-52, 2.0**-27, 0.5, -0.5], size=100
    )
    with np.errstate(over="ignore", under="ignore"):
        x = x * (bound / norms * (1 + offsets))[:, None]
    x[::25] *= 2.0**-600  # tiny rows: left to the scaled path
    expected = [_exactly_within(r, p, bound) for r in x]
    got = exact_norm_within(x, p, bound)
    assert got.tolist() == expected
    assert 0 < got.sum() < len(got)
    x[7, 1], x[8, 0] = math.nan, math.inf  # a non-finite entry anywhere: every row by scaled norms
    assert exact_norm_within(x, p, bound).tolist() == [*expected[:7], False, False, *expected[9:]]
