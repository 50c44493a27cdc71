"""make_count_by_categories and make_count_by: exact matching, vectorised paths, and stability maps
checked by brute force over every pair of small datasets."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpcompose as dp
from dpcompose.core._metrics import check_space

SYM, CHG = dp.SymmetricDistance(), dp.ChangeOneDistance()
STRS = dp.VectorDomain(dp.AtomDomain(str))
INTS = dp.VectorDomain(dp.AtomDomain(int))
FLOATS = dp.VectorDomain(dp.AtomDomain(float, nan=True))

# --- brute force ------------------------------------------------------------------------------------

ALPHABET = ["a", "b", "z"]  # "z" is outside the categories ["a", "b"]


def datasets(max_size: int, alphabet: Any = tuple(ALPHABET)) -> list[tuple[str, ...]]:
    """Every multiset of up to ``max_size`` records (order does not change a count)."""
    return [ds for n in range(max_size + 1) for ds in itertools.combinations_with_replacement(alphabet, n)]


def symmetric(x: tuple[str, ...], y: tuple[str, ...]) -> int:
    cx, cy = Counter(x), Counter(y)
    return sum(((cx - cy) + (cy - cx)).values())


def change_one(x: tuple[str, ...], y: tuple[str, ...]) -> int | None:
    if len(x) != len(y):
        return None
    return len(x) - sum((Counter(x) & Counter(y)).values())


def norms(u: Any, v: Any) -> tuple[int, int]:
    diff = [int(a) - int(b) for a, b in zip(u, v, strict=True)]
    return sum(abs(t) for t in diff), sum(t * t for t in diff)


@pytest.mark.parametrize("null_category", [True, False])
@pytest.mark.parametrize("categories", [["a", "b"], ["a"]])
def test_count_by_categories_stability_by_brute_force(null_category: bool, categories: list[str]) -> None:
    """Every pair of datasets of up to 4 records: L1 and L2 output distances within map(d), and the
    maps are attained (tight) wherever the brute force can reach them."""
    built = {
        (metric_name, norm): dp.t.make_count_by_categories(
            STRS, metric, categories, null_category=null_category, norm=norm
        )
        for metric_name, metric in (("sym", SYM), ("chg", CHG))
        for norm in (1, 2)
    }
    data = datasets(4)
    outputs = {x: built["sym", 1](list(x)) for x in data}
    worst: dict[tuple[str, int], tuple[int, int]] = {}
    for x, y in itertools.product(data, repeat=2):
        l1, l2sq = norms(outputs[x], outputs[y])
        for name, d in (("sym", symmetric(x, y)), ("chg", change_one(x, y))):
            if d is None or d == 0:
                continue
            assert Fraction(l1) <= built[name, 1].map(d)
            assert Fraction(l2sq) <= built[name, 2].map(d) ** 2
            a, b = worst.get((name, d), (0, 0))
            worst[name, d] = (max(a, l1), max(b, l2sq))
    buckets = len(categories) + null_category
    for d in (1, 2):
        assert Fraction(worst["sym", d][0]) == built["sym", 1].map(d)  # d equal records
        assert worst["sym", d][1] == d * d == built["sym", 2].map(d) ** 2
        l1, l2sq = worst["chg", d]
        if buckets >= 2:
            assert l1 == 2 * d == built["chg", 1].map(d) and l2sq == 2 * d * d
            root = built["chg", 2].map(d)  # √2·d rounded up: root² just above 2d²
            assert 0 < root**2 - 2 * d * d < Fraction(1, 10**15)
        else:
            assert l1 == d == built["chg", 1].map(d) and l2sq == d * d == built["chg", 2].map(d) ** 2


def l01inf(u: dict[Any, int], v: dict[Any, int]) -> tuple[int, int, int]:
    diffs = [abs(u.get(k, 0) - v.get(k, 0)) for k in set(u) | set(v)]
    diffs = [t for t in diffs if t]
    return len(diffs), sum(diffs), max(diffs, default=0)


def test_count_by_stability_by_brute_force() -> None:
    by_sym, by_chg = dp.t.make_count_by(STRS, SYM), dp.t.make_count_by(STRS, CHG)
    data = datasets(3, "abcd")
    outputs = {x: by_sym(list(x)) for x in data}
    seen: dict[tuple[str, int], tuple[int, int, int]] = {}
    for x, y in itertools.product(data, repeat=2):
        got = l01inf(outputs[x], outputs[y])
        for name, t, d in (("sym", by_sym, symmetric(x, y)), ("chg", by_chg, change_one(x, y))):
            if d is None or d == 0:
                continue
            bound = t.map(d)
            assert all(g <= b for g, b in zip(got, bound, strict=True)), (x, y, got, bound)
            old = seen.get((name, d), (0, 0, 0))
            seen[name, d] = tuple(max(a, b) for a, b in zip(old, got, strict=True))  # type: ignore[assignment]
    for d in (1, 2):
        assert seen["sym", d] == by_sym.map(d) == (d, d, d)
        assert seen["chg", d] == by_chg.map(d) == (2 * d, 2 * d, d)


# --- exact matching and the vectorised paths ----------------------------------------------------------


def test_categories_are_compared_exactly() -> None:
    t = dp.t.make_count_by_categories(INTS, SYM, [3, 2**70, -1])
    assert t([3, 3, 2**70, -1, 5, 2**70 + 1]).tolist() == [2, 1, 1, 2]
    big = dp.t.make_count_by_categories(INTS, SYM, [3, 2**64 - 1])
    assert big(np.array([2**64 - 1, 3, 2**63], dtype=np.uint64)).tolist() == [1, 1, 1]
    assert big(np.array([3, -1], dtype=np.int8)).tolist() == [1, 0, 1]
    f = dp.t.make_count_by_categories(FLOATS, SYM, [0.0, 1.5, 2**60])
    assert f([-0.0, 1.5, math.nan, 2, 2**60, 2**60 + 0.0]).tolist() == [1, 1, 2, 2]
    assert f(np.array([1.5, 1.5000000000000002])).tolist() == [0, 1, 0, 1]
    s = dp.t.make_count_by_categories(STRS, SYM, ["a", "a\x00", "é"])
    assert s(["a", "a\x00", "é", "e", "A"]).tolist() == [1, 1, 1, 2]
    assert s(np.array(["a", "é", "b"])).tolist() == [1, 0, 1, 1]
    b = dp.t.make_count_by_categories(dp.VectorDomain(dp.AtomDomain(bool)), SYM, [True], null_category=False)
    assert b([True, False, True]).tolist() == [2]


@pytest.mark.parametrize(
    ("domain", "categories", "match"),
    [
        (INTS, [1.0], "int"),
        (INTS, [True], "int"),
        (INTS, [1, 1], "distinct"),
        (FLOATS, [0.0, -0.0], "distinct"),
        (FLOATS, [math.nan], "NaN"),
        (FLOATS, [2**53 + 1], "float64"),
        (STRS, [b"a"], "str"),
        (STRS, "ab", "list or tuple"),
        (STRS, {"a", "b"}, "list or tuple"),
        (STRS, [], "empty"),
        (STRS, 3, "list or tuple"),
    ],
)
def test_bad_categories_are_refused(domain: dp.Domain, categories: Any, match: str) -> None:
    with pytest.raises(dp.InvalidParameter, match=match) as info:
        dp.t.make_count_by_categories(domain, SYM, categories)
    assert "categories" in str(info.value)


def test_bad_options_are_refused() -> None:
    with pytest.raises(dp.InvalidParameter, match="norm"):
        dp.t.make_count_by_categories(STRS, SYM, ["a"], norm=3)
    with pytest.raises(dp.InvalidParameter, match="norm"):
        dp.t.make_count_by_categories(STRS, SYM, ["a"], norm=True)
    with pytest.raises(dp.InvalidParameter, match="null_category"):
        dp.t.make_count_by_categories(STRS, SYM, ["a"], null_category="yes")  # type: ignore[arg-type]
    with pytest.raises(dp.DomainMismatch, match="input_domain"):
        dp.t.make_count_by_categories(dp.VectorDomain(dp.AtomDomain(tuple)), SYM, [()])
    with pytest.raises(dp.DomainMismatch, match="input_metric"):
        dp.t.make_count_by_categories(STRS, dp.L1Distance(), ["a"])
    with pytest.raises(dp.DomainMismatch, match="input_domain"):
        dp.t.make_count_by(dp.AtomDomain(int), SYM)


@given(
    st.lists(st.integers(-4, 4), max_size=30),
    st.lists(st.integers(-3, 3), min_size=1, max_size=4, unique=True),
)
def test_vectorised_paths_agree_with_a_python_reference(data: list[int], cats: list[int]) -> None:
    t = dp.t.make_count_by_categories(INTS, SYM, cats)
    expected = [data.count(c) for c in cats] + [sum(x not in cats for x in data)]
    assert t(data).tolist() == expected
    assert t(np.array(data, dtype=np.int16)).tolist() == expected
    words = [str(x) for x in data]
    s = dp.t.make_count_by_categories(STRS, SYM, [str(c) for c in cats])
    assert s(words).tolist() == expected
    if words:
        assert s(np.array(words)).tolist() == expected
    f = dp.t.make_count_by_categories(FLOATS, SYM, [float(c) / 2 for c in cats])
    assert f(np.array(data) / 2).tolist() == expected
    by = dp.t.make_count_by(INTS, SYM)(np.array(data, dtype=np.int64))
    assert by == dict(sorted(Counter(data).items()))
    assert dp.t.make_count_by(STRS, SYM)(words) == dict(sorted(Counter(words).items()))


def test_count_by_keys_are_plain_sorted_and_exact() -> None:
    by = dp.t.make_count_by(INTS, SYM)
    out = by(np.array([5, -1, 5], dtype=np.int32))
    assert out == {-1: 1, 5: 2} and list(out) == [-1, 5] and all(type(k) is int for k in out)
    assert by([2**70, 1, 2**70]) == {1: 1, 2**70: 2}
    assert by(np.array([2**64 - 1], dtype=np.uint64)) == {2**64 - 1: 1}
    fl = dp.t.make_count_by(FLOATS, SYM)([-0.0, 0.0, math.nan, 1.5])
    assert fl == {0.0: 2, 1.5: 1} and math.copysign(1.0, next(iter(fl))) == 1.0
    strs = dp.t.make_count_by(STRS, SYM)
    assert list(strs(["b", "a", "b"])) == ["a", "b"]  # sorted, whatever the row order

    class Shout(str):
        def __eq__(self, other: object) -> bool:
            raise RuntimeError("no")

        __hash__ = str.__hash__

    assert strs([Shout("a"), "a"]) == {"a": 2}  # compared as plain str: never raises
    assert type(next(iter(strs([Shout("a")])))) is str
    assert dp.t.make_count_by(dp.VectorDomain(dp.AtomDomain(bool)), CHG)([True, True]) == {True: 2}
    assert by([]) == {}


def test_output_chains_into_noise() -> None:
    hist = dp.t.make_count_by_categories(STRS, SYM, ["a", "b"])
    noisy = hist >> dp.m.make_discrete_laplace(hist.output_domain, hist.output_metric, scale=1.0)
    out = noisy(["a", "b", "z", "z"])
    assert out.shape == (3,) and noisy.map(1) == 1
    gauss = dp.t.make_count_by_categories(STRS, CHG, ["a", "b"], norm=2)
    assert gauss.output_metric == dp.L2Distance()
    release = gauss >> dp.m.make_gaussian(gauss.output_domain, gauss.output_metric, scale=2.0)
    assert release.map(1) >= Fraction(2, 8)  # (√2)² / (2·2²)


# --- MapDomain and L01InfDistance ------------------------------------------------------------------


def test_map_domain_and_l01inf_distance() -> None:
    counts = dp.MapDomain(dp.AtomDomain(str), dp.AtomDomain(int))
    assert counts.member({"a": 1}) and not counts.member({"a": "1"}) and not counts.member({1: 1})
    assert not counts.member([("a", 1)])
    with pytest.raises(dp.InvalidParameter, match="key_domain"):
        dp.MapDomain(str, dp.AtomDomain(int))  # type: ignore[arg-type]
    metric = dp.L01InfDistance()
    assert metric.validate((2, 0.5, 1)) == (2, Fraction(1, 2), Fraction(1))
    for bad in [1, (1, 1), (-1, 1, 1), (1.5, 1, 1), (1, math.nan, 1), (1, 1, -1)]:
        with pytest.raises(dp.InvalidParameter, match="d_in"):
            metric.validate(bad)
    with pytest.raises(dp.DomainMismatch, match="MapDomain"):
        check_space(INTS, metric)
    by = dp.t.make_count_by(STRS, SYM)
    assert by.output_domain == dp.MapDomain(dp.AtomDomain(str), dp.AtomDomain(int))
    assert by.output_metric == metric


EDGES = [-(2**63), -(2**63) + 1, -1, 0, 1, 2**63 - 2, 2**63 - 1, 70000]
EDGE_CATEGORIES = [
    [2**63 - 2, 2**63 - 1],
    [-(2**63), -(2**63) + 1],
    [1, -1, 0],
    [0, 70000],
    [-(2**63), 2**63 - 1],
]


@given(st.lists(st.sampled_from(EDGES), max_size=20))
def test_int_table_and_search_paths_at_the_int64_edges(data: list[int]) -> None:
    """Narrow categories use a lookup table on the wrapped offset from the least category; wide ones
    use searchsorted. Neither may confuse a record near the other end of int64 with a category."""
    for cats in EDGE_CATEGORIES:
        t = dp.t.make_count_by_categories(INTS, SYM, cats)
        expected = [data.count(c) for c in cats] + [sum(x not in cats for x in data)]
        assert t(np.array(data, dtype=np.int64)).tolist() == expected, cats
        assert t(data).tolist() == expected
