"""The numpy evaluation of table expressions against Polars' evaluation of the same typed tree (the tables'
translation, :func:`dpcompose.tables._polars.to_polars`), on random trees and random columns with nulls,
NaN, ±inf and ±0.0; and the interval analysis against the values it bounds."""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from dpcompose.errors import InvalidParameter
from dpcompose.tables._polars import to_polars
from dpcompose.transformations._expr import Expr, col, columns_of, typed
from dpcompose.transformations._expr_numpy import Bound, Column, bound_of, evaluate

KINDS = {"f": "float", "g": "float", "i": "int", "j": "int", "b": "bool"}
FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 1e300, -1e300, math.inf, -math.inf, math.nan, math.nan,
          2.0**53, 2.0**63, -(2.0**63), 1e-310]  # fmt: skip
INTS = [0, 1, -1, 2, 3, 100, 2**53 + 1, -(2**63), 2**63 - 1]

float_lit = st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -3.5, 1e300, math.inf, 2.0**63])
int_lit = st.sampled_from([0, 1, -1, 2, 3, 100, 2**53 + 1])


def _node(op: str) -> Any:
    return lambda parts: Expr(op, tuple(parts))


NUMERIC_LEAVES = st.one_of(
    st.sampled_from([col("f"), col("g"), col("i"), col("j")]),
    float_lit.map(lambda v: Expr("lit", (v,))),
    int_lit.map(lambda v: Expr("lit", (v,))),
)
numeric: st.SearchStrategy[Expr] = st.deferred(
    lambda: st.one_of(
        NUMERIC_LEAVES,
        st.tuples(st.sampled_from(["+", "-", "*", "/"]), NUMERIC_LEAVES, NUMERIC_LEAVES).map(
            lambda t: Expr(t[0], t[1:])
        ),
        st.tuples(st.sampled_from(["+", "-", "*", "/"]), numeric, numeric).map(lambda t: Expr(t[0], t[1:])),
        st.tuples(st.sampled_from(["neg", "abs", "round"]), numeric).map(lambda t: Expr(t[0], t[1:])),
        st.tuples(numeric, st.sampled_from(["int", "float"])).map(_node("cast")),
        boolean.map(lambda b: Expr("cast", (b, "int"))),
        st.tuples(boolean, numeric, numeric).map(_node("when")),
        st.tuples(boolean, numeric).map(lambda t: Expr("when", (t[0], t[1], Expr("lit", (None,))))),
        st.tuples(numeric, float_lit, float_lit).map(lambda t: _clip(t[0], min(t[1:]), max(t[1:]))),
    )
)
boolean: st.SearchStrategy[Expr] = st.deferred(
    lambda: st.one_of(
        st.just(col("b")),
        st.tuples(st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), NUMERIC_LEAVES, NUMERIC_LEAVES).map(
            lambda t: Expr(t[0], t[1:])
        ),
        st.tuples(st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), numeric, numeric).map(
            lambda t: Expr(t[0], t[1:])
        ),
        st.tuples(st.sampled_from(["and", "or"]), boolean, boolean).map(lambda t: Expr(t[0], t[1:])),
        boolean.map(lambda e: Expr("not", (e,))),
        numeric.map(lambda e: Expr("cast", (e, "bool"))),
        numeric.map(lambda e: Expr("is_null", (e,))),
        st.tuples(st.sampled_from([col("f"), col("g")]), st.lists(float_lit, max_size=3)).map(
            lambda t: Expr("is_in", (t[0], tuple(t[1])))
        ),
        st.tuples(st.sampled_from([col("i"), col("j")]), st.lists(int_lit, max_size=3)).map(
            lambda t: Expr("is_in", (t[0], tuple(t[1])))
        ),
    )
)


def _clip(x: Expr, lo: float, hi: float) -> Expr:
    """As the Polars translation writes ``clip`` (dpcompose.transformations._from_polars)."""
    upper = Expr("when", (Expr(">", (x, Expr("lit", (hi,)))), Expr("lit", (hi,)), x))
    return Expr("when", (Expr("<", (x, Expr("lit", (lo,)))), Expr("lit", (lo,)), upper))


@st.composite
def frames(draw: st.DrawFn) -> tuple[dict[str, Column], pl.DataFrame]:
    n = draw(st.integers(1, 40))
    columns: dict[str, Column] = {}
    series = []
    for name, kind in KINDS.items():
        pool: list[Any] = FLOATS if kind == "float" else INTS if kind == "int" else [True, False]
        values = draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n))
        nulls = draw(st.lists(st.booleans(), min_size=n, max_size=n)) if draw(st.booleans()) else [False] * n
        dtype = {"float": np.float64, "int": np.int64, "bool": np.bool_}[kind]
        arr = np.array(values, dtype=dtype)
        columns[name] = Column(arr, np.array(nulls) if any(nulls) else None)
        pl_dtype = {"float": pl.Float64, "int": pl.Int64, "bool": pl.Boolean}[kind]
        series.append(
            pl.Series(name, [None if z else v for v, z in zip(values, nulls, strict=True)], dtype=pl_dtype)
        )
    return columns, pl.DataFrame(series)


def _same(ours: Column, theirs: pl.Series, zero_sign: bool = True) -> None:
    """Equal values and nulls; with ``zero_sign``, equal signs of zero too. (Polars 2.1 folds some
    ``when(…).then(-0.0) + 0.0`` to -0.0 where IEEE gives +0.0; the sign of a zero is seen by no comparison,
    cast or sum, so the random trees compare zeros without it.)"""
    n = len(theirs)
    values = np.broadcast_to(ours.values, (n,))
    null = np.zeros(n, bool) if ours.null is None else np.broadcast_to(ours.null, (n,))
    assert null.tolist() == theirs.is_null().to_list()
    for v, z, t in zip(values.tolist(), null.tolist(), theirs.to_list(), strict=True):
        if z:
            continue
        if isinstance(t, float):
            same_sign = not zero_sign or math.copysign(1, t) == math.copysign(1, v)
            assert math.isnan(t) == math.isnan(v) and (math.isnan(t) or (t == v and same_sign)), (v, t)
        else:
            assert type(v) is type(t) and v == t, (v, t)


def _reciprocal(e: Expr) -> bool:
    """Whether ``e`` divides by a constant: Polars 2.1 computes ``x / c`` as ``x * (1/c)`` (a third of
    the quotients by 3.0 differ from IEEE division in the last bit, and ``x / 1e-310`` is ``x * inf``),
    where the tables' meaning, numpy and Spark divide. Such trees are left out of the comparison."""
    if e.op == "/" and not columns_of(e.args[1]):
        return True
    return any(_reciprocal(a) for a in e.args if isinstance(a, Expr))


def _size(e: Expr) -> int:
    return 1 + sum(_size(a) for a in e.args if isinstance(a, Expr))


def _check(e: Expr, data: tuple[dict[str, Column], pl.DataFrame]) -> None:
    columns, frame = data
    tree, _ = typed(e, KINDS, "expr")
    assume(not _reciprocal(tree) and _size(tree) <= 300)  # nested clips triple a tree: keep examples small
    theirs = (
        frame.with_columns(to_polars(tree).alias("out")).get_column("out")
        if not columns_of(tree)
        else (frame.select(to_polars(tree).alias("out")).get_column("out"))
    )
    assume(len(theirs) == len(frame))  # Polars 2.1 takes some `lit == when(...)` trees for scalars (_many)
    ours = evaluate(tree, columns)
    _same(ours, theirs, zero_sign=False)
    _within(tree, columns, ours)


def _within(tree: Expr, columns: dict[str, Column], ours: Column) -> None:
    """Every value lies in the bound the analysis derives (from the columns' own extremes)."""
    inputs = {}
    for name, c in columns.items():
        v = c.values.astype(np.float64)
        ok = ~np.isnan(v) if c.null is None else ~np.isnan(v) & ~c.null
        lo, hi = (float(v[ok].min()), float(v[ok].max())) if ok.any() else (math.inf, -math.inf)
        nan = bool(np.isnan(v).any())
        inputs[name] = Bound(lo, hi, nan, c.null is not None, KINDS[name])
    b = bound_of(tree, inputs)
    values = np.broadcast_to(ours.values, np.broadcast_shapes(ours.values.shape, (1,))).astype(np.float64)
    null = np.zeros(values.shape, bool) if ours.null is None else np.broadcast_to(ours.null, values.shape)
    if null.any():
        assert b.null
    live = values[~null]
    if np.isnan(live).any():
        assert b.nan
    finite = live[~np.isnan(live)]
    if finite.size:
        assert b.lo <= finite.min() and finite.max() <= b.hi, (b, finite)


def _random_numeric(rng: random.Random, depth: int) -> Expr:
    pick = rng.randrange(10) if depth > 0 else 0
    if pick <= 2:
        r = rng.random()
        if r < 0.6:
            return col(rng.choice("fgij"))
        v: Any = rng.choice([*FLOATS, 0.5, 2.5]) if r < 0.85 else rng.choice(INTS[:7])
        return Expr("lit", (v,))
    if pick <= 4:
        op, right = rng.choice("+-*/"), _random_numeric(rng, depth - 1)
        if op == "/" and not columns_of(right):  # see _reciprocal
            right = Expr("+", (right, col(rng.choice("fgij"))))
        return Expr(op, (_random_numeric(rng, depth - 1), right))
    if pick == 5:
        return Expr(rng.choice(["neg", "abs", "round"]), (_random_numeric(rng, depth - 1),))
    if pick == 6:
        inner = _random_boolean(rng, depth - 1) if rng.random() < 0.3 else _random_numeric(rng, depth - 1)
        return Expr("cast", (inner, rng.choice(["int", "float"])))
    if pick == 7:
        then = _random_numeric(rng, depth - 1)
        other = _random_numeric(rng, depth - 1) if rng.random() < 0.7 else Expr("lit", (None,))
        return Expr("when", (_random_boolean(rng, depth - 1), then, other))
    lo, hi = sorted(rng.choice(FLOATS[:10]) for _ in range(2))
    return _clip(_random_numeric(rng, depth - 1), lo, hi)


def _random_boolean(rng: random.Random, depth: int) -> Expr:
    pick = rng.randrange(8) if depth > 0 else 0
    if pick == 0:
        return col("b")
    if pick <= 3:
        op = rng.choice(["==", "!=", "<", "<=", ">", ">="])
        return Expr(op, (_random_numeric(rng, depth - 1), _random_numeric(rng, depth - 1)))
    if pick == 4:
        op = rng.choice(["and", "or"])
        return Expr(op, (_random_boolean(rng, depth - 1), _random_boolean(rng, depth - 1)))
    if pick == 5:
        return Expr(rng.choice(["not", "is_null"]), (_random_boolean(rng, depth - 1),))
    if pick == 6:
        return Expr("cast", (_random_numeric(rng, depth - 1), "bool"))
    if rng.random() < 0.5:
        return Expr("is_in", (col(rng.choice("fg")), tuple(rng.sample(FLOATS, rng.randrange(4)))))
    return Expr("is_in", (col(rng.choice("ij")), tuple(rng.sample(INTS, rng.randrange(4)))))


BOUNDED = {"f": [0.5, 1.0, 2.5, 3.0], "g": [-3.0, -1.0, 0.0, 1e-310], "i": [1, 2, 100], "j": [-7, 0, 3]}


def _random_data(
    rng: random.Random, n: int, pools: dict[str, list[Any]] | None = None
) -> tuple[dict[str, Column], pl.DataFrame]:
    columns: dict[str, Column] = {}
    series = []
    for name, kind in KINDS.items():
        pool: list[Any] = FLOATS if kind == "float" else INTS if kind == "int" else [True, False]
        pool = (pools or {}).get(name, pool)
        values = [rng.choice(pool) for _ in range(n)]
        nulls = [rng.random() < 0.1 for _ in range(n)] if name != "g" else [False] * n
        dtype = {"float": np.float64, "int": np.int64, "bool": np.bool_}[kind]
        columns[name] = Column(np.array(values, dtype=dtype), np.array(nulls) if any(nulls) else None)
        pl_dtype = {"float": pl.Float64, "int": pl.Int64, "bool": pl.Boolean}[kind]
        series.append(
            pl.Series(name, [None if z else v for v, z in zip(values, nulls, strict=True)], dtype=pl_dtype)
        )
    return columns, pl.DataFrame(series)


def _many(seed: int, count: int, rows: int, depth: int, pools: dict[str, list[Any]] | None = None) -> None:
    """``count`` random trees on one random frame (values from ``pools``), each evaluated by Polars."""
    rng = random.Random(seed)
    columns, frame = _random_data(rng, rows, pools)
    trees = []
    while len(trees) < count:
        e = _random_numeric(rng, depth) if rng.random() < 0.5 else _random_boolean(rng, depth)
        try:
            trees.append(typed(e, KINDS, "expr")[0])
        except InvalidParameter:  # a comparison with a NaN literal: refused by the language
            continue
    skipped = 0
    for tree in trees:
        if not columns_of(tree):  # a constant: broadcast
            theirs = frame.with_columns(to_polars(tree).alias("out")).get_column("out")
        else:
            theirs = frame.select(to_polars(tree).alias("out")).get_column("out")
        if len(theirs) != len(frame):  # Polars 2.1 takes some `lit != when(...)` trees for scalars
            skipped += 1
            continue
        ours = evaluate(tree, columns)
        try:
            _same(ours, theirs, zero_sign=False)
            _within(tree, columns, ours)
        except AssertionError as failure:
            raise AssertionError(f"{tree!r}: {failure}") from None
    assert skipped <= count // 50


def test_random_expressions_match_polars() -> None:
    _many(seed=0, count=150, rows=150, depth=4)


def test_random_expressions_on_bounded_columns() -> None:
    """Finite, lopsided columns: the interval analysis has bounds to derive (and to get wrong)."""
    _many(seed=1, count=150, rows=40, depth=3, pools=BOUNDED)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(1, 41))
def test_random_expressions_match_polars_thoroughly(seed: int) -> None:
    _many(seed=seed, count=500, rows=500, depth=5)


@settings(max_examples=4)
@given(st.one_of(numeric, boolean), frames())
def test_expressions_match_polars(e: Expr, data: tuple[dict[str, Column], pl.DataFrame]) -> None:
    _check(e, data)


@pytest.mark.slow
@settings(max_examples=1500, suppress_health_check=list(HealthCheck))
@given(st.one_of(numeric, boolean), frames())
def test_expressions_match_polars_thoroughly(e: Expr, data: tuple[dict[str, Column], pl.DataFrame]) -> None:
    _check(e, data)


SPECIFIC = [  # (expression, the output on the rows below)
    (col("f") == col("g"), [True, False, None, True, False]),  # NaN == NaN; -0.0 == 0.0
    (col("f") > col("g"), [False, True, None, False, True]),  # NaN above every float
    (col("f") < 1.0, [False, False, None, True, False]),
    ((col("f") > 0.0) & col("b"), [True, None, False, False, None]),  # Kleene: false & null is false
    ((col("f") > 0.0) | col("b"), [True, True, None, False, True]),  # true | null is true
    (~col("b"), [False, None, True, True, None]),
    (col("f").is_in([0.0, 7.0]), [False, False, False, True, False]),  # -0.0 is in [0.0]
    ((col("f") / col("g")).is_null(), [False, False, True, True, True]),  # x/0 null (either sign)
    (Expr("cast", (col("h"), "int")), [None, None, 2, -2, 0]),  # truncated; null for NaN, inf
    (Expr("round", (col("h"),)), [math.nan, math.inf, 2.0, -2.0, 0.0]),  # half to even, a zero is +0.0
]
ROWS = {
    "f": ([math.nan, math.nan, None, -0.0, 3.0], "float"),
    "g": ([math.nan, 1.0, 2.0, 0.0, -0.0], "float"),
    "h": ([math.nan, math.inf, 2.5, -2.5, -0.4], "float"),
    "b": ([True, None, False, False, None], "bool"),
}


@pytest.mark.parametrize(("e", "expected"), SPECIFIC, ids=[repr(e) for e, _ in SPECIFIC])
def test_specific_semantics(e: Expr, expected: list[Any]) -> None:
    columns, series = {}, []
    for name, (values, kind) in ROWS.items():
        null = np.array([v is None for v in values])
        filled = [False if v is None and kind == "bool" else 0.0 if v is None else v for v in values]
        columns[name] = Column(np.array(filled), null if null.any() else None)
        series.append(pl.Series(name, values, dtype=pl.Float64 if kind == "float" else pl.Boolean))
    kinds = {name: kind for name, (_, kind) in ROWS.items()}
    tree, _ = typed(e, kinds, "expr")
    theirs = pl.DataFrame(series).select(to_polars(tree).alias("out")).get_column("out")
    _same(evaluate(tree, columns), theirs)
    _same(evaluate(tree, columns), pl.Series("x", expected, dtype=theirs.dtype))


def test_clip_and_fill_null_give_bounds() -> None:
    x = Bound(-math.inf, math.inf, True, True, "float")
    clipped, _ = typed(_clip(col("f"), 0.0, 1.0), KINDS, "expr")
    assert bound_of(clipped, {"f": x}) == Bound(0.0, 1.0, False, True, "float")
    filled = Expr("when", (Expr("is_null", (clipped,)), Expr("lit", (0.5,)), clipped))
    assert bound_of(typed(filled, KINDS, "expr")[0], {"f": x}) == Bound(0.0, 1.0, False, False, "float")
