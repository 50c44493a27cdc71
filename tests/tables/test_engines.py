"""The same query suite on every engine: exact pre-noise aggregates equal a plain-Python reference of the
plan (filter with null/NaN semantics, caps by the specified hash, NaN/null policy, fixed-point grid), and
equal bit for bit between Polars and Spark; known and unknown keys; identical privacy maps."""

from __future__ import annotations

import math
import random
from dataclasses import replace
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import dpcompose as dp
from dpcompose.tables._engine import Aggregates, Plan, SumSpec, key_order
from dpcompose.tables._hash import NULL_CODE, row_keys, string_code, value_codes
from dpcompose.tables._polars import PolarsEngine
from dpcompose.tables._query import sum_spec

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
) -> Plan:
    return Plan(columns, predicate, by, keys, id, max_rows, max_groups, sums)


col = dp.col
PLANS: dict[str, Plan] = {
    "total_count_rows": _plan(_cols("user"), id=None, max_rows=None),
    "total_sums_capped": _plan(_cols("user", "income", "big"), sums=(INCOME, BIG)),
    "known_str_keys": _plan(
        _cols("user", "state", "income"),
        by=("state",),
        keys=(("CA",), ("NY",), ("absent",), (None,), ("é",)),
        max_rows=3,
        sums=(INCOME,),
    ),
    "unknown_str_keys_groups_capped": _plan(
        _cols("user", "state", "income", "big"),
        by=("state",),
        keys=None,
        max_rows=3,
        max_groups=2,
        sums=(INCOME, BIG),
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
    return round(Fraction(v) / Fraction(2) ** spec.k)  # half to even


def reference(rows: list[dict[str, Any]], plan: Plan) -> Aggregates:
    rows = [r for r in rows if plan.predicate is None or _eval(plan.predicate, r) is True]
    by = plan.by
    if by and plan.keys is not None:
        rows = [r for r in rows if tuple(r[c] for c in by) in plan.keys]
    if plan.id is not None and plan.max_groups is not None and by:
        groups: dict[Any, set[tuple[Any, ...]]] = {}
        for r in rows:
            groups.setdefault(r[plan.id], set()).add(tuple(r[c] for c in (plan.id, *by)))
        kept = set()
        for pairs in groups.values():
            ranked = sorted(
                pairs, key=lambda p: _key(dict(zip((plan.id, *by), p, strict=True)), (plan.id, *by))
            )
            kept |= set(ranked[: plan.max_groups])
        rows = [r for r in rows if tuple(r[c] for c in (plan.id, *by)) in kept]
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
        entry = found.setdefault(tuple(r[c] for c in by), [0, [0] * len(plan.sums)])
        entry[0] += 1
        for i, spec in enumerate(plan.sums):
            entry[1][i] += _grid(r[spec.column], spec)
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
    return Aggregates(keys, counts, sums)


def same(a: Aggregates, b: Aggregates) -> None:
    """Bit-identical: the same keys in the same order, the same int64 arrays."""
    assert a.keys == b.keys
    assert a.counts.dtype == b.counts.dtype == np.int64
    assert a.counts.tolist() == b.counts.tolist()
    assert len(a.sums) == len(b.sums)
    for x, y in zip(a.sums, b.sums, strict=True):
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
