"""Collecting an engine's result: the columnar paths (Polars' ``collect_frame``, the transposing
``collect_rows`` of Spark) give exactly what the former per-row loop gave, on random result frames — null
keys, int/str/bool keys, known keys absent from the data, unknown keys in ``key_order``, empty frames,
counts up to ``2**32 − 1`` with extreme 16-bit halves, and totals of count 0 whose sums are null."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpcompose.tables._engine import (
    Aggregates,
    BelowSpec,
    Plan,
    SumSpec,
    collect_rows,
    combine_halves,
    key_order,
)

pl = pytest.importorskip("polars")
from dpcompose.tables._polars import collect_frame  # noqa: E402  (after the importorskip)

DTYPES = {"int": pl.Int64, "str": pl.String, "bool": pl.Boolean}
VALUES = {
    "int": st.integers(-(2**63), 2**63 - 1) | st.integers(-3, 3),
    "str": st.text(st.characters(exclude_categories=("Cs",)), max_size=3),  # Polars holds no lone surrogate
    "bool": st.booleans(),
}
MAX_COUNT = 2**32 - 1  # the largest count combine_halves recombines in int64


def row_path(rows: Iterable[Sequence[Any]], plan: Plan) -> Aggregates:
    """The former ``collect_rows`` (a Python loop over the rows, Python integers), kept as the reference."""
    nb, n_sums = len(plan.by), len(plan.sums)
    found: dict[tuple[Any, ...], tuple[int, list[int]]] = {}
    for row in rows:
        n = int(row[nb])
        if n == 0:
            continue
        parts = [int(v) for v in row[nb + 1 :]]
        sums = [parts[2 * i] * 65536 + parts[2 * i + 1] - n * (1 << 31) for i in range(n_sums)]
        found[tuple(row[:nb])] = (n, sums + parts[2 * n_sums :])
    if not plan.by:
        keys: tuple[tuple[Any, ...], ...] = ((),)
    elif plan.keys is None:
        keys = tuple(sorted(found, key=key_order))
    else:
        keys = plan.keys
    n_dist = len(plan.distinct)
    empty = (0, [0] * (n_sums + n_dist + len(plan.below)))
    got = [found.get(k, empty) for k in keys]
    counts = np.array([r[0] for r in got], dtype=np.int64)
    columns = [np.array([r[1][i] for r in got], dtype=np.int64) for i in range(len(empty[1]))]
    return Aggregates(
        keys, counts, columns[:n_sums], columns[n_sums : n_sums + n_dist], columns[n_sums + n_dist :]
    )


def same(a: Aggregates, b: Aggregates) -> None:
    """The same keys (values and their Python types) in the same order, the same int64 arrays."""
    assert a.keys == b.keys
    assert [[type(v) for v in k] for k in a.keys] == [[type(v) for v in k] for k in b.keys]
    assert (len(a.sums), len(a.distincts), len(a.belows)) == (len(b.sums), len(b.distincts), len(b.belows))
    left, right = [a.counts, *a.sums, *a.distincts, *a.belows], [b.counts, *b.sums, *b.distincts, *b.belows]
    for x, y in zip(left, right, strict=True):
        assert x.dtype == y.dtype == np.int64
        assert x.tolist() == y.tolist()


@st.composite
def results(draw: st.DrawFn) -> tuple[Plan, list[str], Any]:
    """A plan and an engine result frame for it: the by columns, ``__dp_n``, the halves, the rest."""
    kinds = draw(st.lists(st.sampled_from(sorted(DTYPES)), max_size=2))
    by = tuple(f"k{j}" for j in range(len(kinds)))
    n_sums, n_dist, n_below = draw(st.integers(0, 2)), draw(st.integers(0, 1)), draw(st.integers(0, 2))
    key = st.tuples(*[st.none() | VALUES[k] for k in kinds])
    # without by, the result is one row (the total, count 0 on an empty frame)
    found = draw(st.lists(key, max_size=12, unique=True)) if by else [()]
    spec = SumSpec("x", "int", 0, 1, 0, 0)
    below = BelowSpec("x", "int", 0, 1, 0, 1, True)
    keys: tuple[tuple[Any, ...], ...] | None
    if draw(st.booleans()):  # unknown keys (for no by, None means the one total, as ((),) does)
        keys = None
    elif by:
        extra = draw(st.lists(key, max_size=4, unique=True))  # listed keys absent from the data
        listed = list(dict.fromkeys([*draw(st.permutations(found)), *extra])) or [tuple(None for _ in by)]
        keys = tuple(listed[: draw(st.integers(1, len(listed)))])  # a present key may be left out too
    else:
        keys = ((),)
    plan = Plan(
        ("x",), None, by, keys, None, None, None, (spec,) * n_sums, ("x",) * n_dist, (below,) * n_below
    )
    columns: dict[str, list[Any]] = {name: [k[j] for k in found] for j, name in enumerate(by)}
    names = ["__dp_n", *[f"__dp_{h}{i}" for i in range(n_sums) for h in ("hi", "lo")]]
    names += [f"__dp_d{i}" for i in range(n_dist)] + [f"__dp_b{i}" for i in range(n_below)]
    for name in names:
        columns[name] = []
    for _ in found:
        n = draw(st.sampled_from([0, 1, 2, MAX_COUNT]) | st.integers(0, MAX_COUNT))  # 0: skipped
        columns["__dp_n"].append(n)
        for i in range(n_sums):  # totals an engine can report: per row u = hi·2**16 + lo in [0, 2**32]
            hi = draw(st.integers(0, n * 2**16) | st.sampled_from([0, n * 2**16]))
            full = max(0, hi - n * (2**16 - 1))  # rows that must have hi = 2**16, so lo = 0 (u = 2**32)
            columns[f"__dp_hi{i}"].append(hi)
            columns[f"__dp_lo{i}"].append(draw(st.integers(0, (n - full) * (2**16 - 1)) | st.just(0)))
        for name in names[1 + 2 * n_sums :]:
            columns[name].append(draw(st.integers(0, n)))
        if n == 0:  # skipped whatever it holds: an empty total's sums may be null (Spark), or anything
            garbage = st.none() | st.integers(0, 2**40)
            for name in names[1:]:
                columns[name][-1] = draw(garbage)
    schema = {
        **{name: DTYPES[k] for name, k in zip(by, kinds, strict=True)},
        **dict.fromkeys(names, pl.Int64),
    }
    return plan, names, pl.DataFrame(columns, schema=schema)


@given(results())
def test_columnar_paths_equal_the_row_path(case: tuple[Plan, list[str], Any]) -> None:
    plan, _, out = case
    expected = row_path(out.iter_rows(), plan)
    same(collect_frame(out, plan), expected)
    same(collect_rows(out.iter_rows(), plan), expected)
    shuffled = out.sample(fraction=1.0, shuffle=True, seed=0)  # the engine's row order does not matter
    same(collect_frame(shuffled, plan), expected)
    same(collect_rows(shuffled.iter_rows(), plan), expected)


def test_the_strategy_reaches_its_cases() -> None:
    """Null keys, absent known keys, strings beyond the BMP, the largest counts and skipped count-0 rows are
    generated."""
    from hypothesis import Phase, find, settings

    def reached(condition: Any) -> None:
        find(
            results(), condition, settings=settings(max_examples=2000, phases=[Phase.generate], database=None)
        )

    reached(lambda c: c[0].keys is None and len(c[2]) > 2 and c[2].null_count().row(0)[0] > 0)
    reached(lambda c: c[0].keys is not None and c[0].by != ()
            and c[0].keys[-1] not in c[2].select(c[0].by).rows())  # fmt: skip
    reached(lambda c: "k0" in c[2].columns and c[2].schema["k0"] == pl.String
            and any(v is not None and any(ord(ch) > 0xFFFF for ch in v) for v in c[2]["k0"]))  # fmt: skip
    reached(lambda c: c[0].sums != () and MAX_COUNT in c[2]["__dp_n"].to_list())
    for known in (False, True):  # a key with count 0 (and null sums) is skipped, as if absent
        reached(lambda c, known=known: c[0].by != () and (c[0].keys is not None) == known
                and 0 in c[2]["__dp_n"].to_list() and c[2].null_count().row(0)[-1] > 0)  # fmt: skip


def test_empty_results() -> None:
    spec = SumSpec("x", "int", 0, 1, 0, 0)
    for keys in (None, (("a",), (None,))):
        plan = Plan(("x",), None, ("k",), keys, None, None, None, (spec,))
        out = pl.DataFrame(
            {"k": [], "__dp_n": [], "__dp_hi0": [], "__dp_lo0": []},
            schema={"k": pl.String, "__dp_n": pl.Int64, "__dp_hi0": pl.Int64, "__dp_lo0": pl.Int64},
        )
        expected = row_path([], plan)
        assert len(expected.keys) == (0 if keys is None else 2)
        same(collect_frame(out, plan), expected)
        same(collect_rows([], plan), expected)


def test_combine_halves_at_the_int64_edge_and_beyond() -> None:
    """Every value 2**31 (or −2**31) in a group of 2**32 − 1 rows: the sums ±(2**32 − 1)·2**31, exact in
    int64; a count of 2**32 or more is recombined in Python integers, exactly when the sum fits and
    saturated to the int64 range when it does not."""
    n = MAX_COUNT
    counts = np.array([n, n, 3, 0], dtype=np.int64)
    hi = np.array([n * 2**16, 0, 3 * 2**15, 0], dtype=np.int64)
    lo = np.array([0, 0, 5, 0], dtype=np.int64)
    assert combine_halves(counts, hi, lo).tolist() == [n * 2**31, -n * 2**31, 5, 0]
    big = np.array([2**32, 2**40], dtype=np.int64)
    half = np.array([2**47, 2**55], dtype=np.int64)  # Σv = 0 for both
    assert combine_halves(big, half, np.zeros(2, dtype=np.int64)).tolist() == [0, 0]
    assert combine_halves(big, half + 1, np.array([7, 0], dtype=np.int64)).tolist() == [65543, 65536]
    # 2**33 values of ±2**31: the sums ±2**64 fit no int64. They saturate (no wrap to 0, and no exception
    # after the query has charged: an exception would be a data-dependent output)
    plan = Plan(("x",), None, (), ((),), None, None, None, (SumSpec("x", "int", 0, 2**31, 0, 0),))
    for row, total in (((2**33, 2**49, 0), 2**63 - 1), ((2**33, 0, 0), -(2**63))):
        assert combine_halves(np.array(row[:1]), np.array(row[1:2]), np.array(row[2:])).tolist() == [total]
        assert collect_rows([row], plan).sums[0].tolist() == [total]


@pytest.mark.parametrize(
    ("kinds", "values"),
    [
        (("int",), [10, 2, -3, -20, None, 0, 2**63 - 1, -(2**63)]),  # by value, not by text
        (("str",), ["b", "a", "", None, "\uffff", "\U00010000", "é", "e\u0301", "A", "a\x00"]),  # code points
        (("bool", "int"), [(True, 1), (False, None), (None, -1), (False, -5), (True, None), (None, None)]),
        (("str", "bool"), [("x", True), ("x", None), (None, False), ("", False), ("x", False)]),
    ],
)
def test_unknown_keys_come_in_key_order(kinds: tuple[str, ...], values: list[Any]) -> None:
    """Ints by value (not by their text), strings by code point (``\\U00010000`` after ``\\uffff``, unlike
    UTF-16), nulls last, column by column: both paths sort as ``sorted(keys, key=key_order)``."""
    keys = [v if isinstance(v, tuple) else (v,) for v in values]
    by = tuple(f"k{j}" for j in range(len(kinds)))
    spec = SumSpec("x", "int", 0, 1, 0, 0)
    plan = Plan(("x",), None, by, None, None, None, None, (spec,))
    columns: dict[str, Any] = {name: [k[j] for k in keys] for j, name in enumerate(by)}
    columns |= {
        "__dp_n": list(range(1, len(keys) + 1)),
        "__dp_hi0": [2**15] * len(keys),
        "__dp_lo0": [0] * len(keys),
    }
    schema = {
        **{n: DTYPES[k] for n, k in zip(by, kinds, strict=True)},
        **dict.fromkeys(list(columns)[len(by) :], pl.Int64),
    }
    out = pl.DataFrame(columns, schema=schema)
    expected = sorted(keys, key=key_order)
    assert expected != keys
    for got in (collect_frame(out, plan), collect_rows(out.iter_rows(), plan)):
        assert list(got.keys) == expected
        assert got.counts.tolist() == [keys.index(k) + 1 for k in expected]
