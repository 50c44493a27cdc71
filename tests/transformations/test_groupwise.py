"""make_groupwise: the parts, the defined values, the stability maps against brute force, refusals."""

from __future__ import annotations

import math
from collections import Counter, namedtuple
from collections.abc import Callable
from datetime import date
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpcompose as dp
from dpcompose.errors import DomainMismatch, InvalidParameter
from dpcompose.measurements._random import SeededSource
from dpcompose.transformations._contributions import safe_class
from dpcompose.transformations._groupwise import bucket_of, worst_spread

ROWS = dp.VectorDomain(dp.AtomDomain(tuple))  # (key, value)
SYM = dp.SymmetricDistance()
CHG = dp.ChangeOneDistance()
USER = dp.SymmetricIdDistance(0)


def int_sum(lo: int = 0, hi: int = 3) -> Any:
    """The per-part statistic: sum of column 1 clamped to [lo, hi] (map j ↦ j·max(|lo|, |hi|))."""
    col = dp.t.make_select_column(ROWS, SYM, 1, dp.AtomDomain(int), 0)
    clamped = col >> dp.t.make_clamp(col.output_domain, col.output_metric, (lo, hi))
    return clamped >> dp.t.make_sum(clamped.output_domain, clamped.output_metric)


def float_mean(size: int = 2) -> Any:
    """Resize to ``size`` (pad 0.5) then the mean of column 1 in [0, 1]: an empty part gives 0.5."""
    col = dp.t.make_select_column(ROWS, SYM, 1, dp.AtomDomain(float), 0.0)
    clamped = col >> dp.t.make_clamp(col.output_domain, col.output_metric, (0.0, 1.0))
    sized = clamped >> dp.t.make_resize(clamped.output_domain, SYM, size=size, constant=0.5)
    return sized >> dp.t.make_mean(sized.output_domain, sized.output_metric)


def test_parts_by_keys_and_buckets() -> None:
    t = dp.t.make_groupwise(ROWS, SYM, int_sum(), by=0, keys=["a", "b", 1], bounds=(0, 10))
    out = t([("a", 1), ("b", 2), ("a", 3), ("z", 3), (1.0, 2), ()])  # 1.0 is the key 1; () has no key
    assert out.dtype == np.int64 and out.tolist() == [4, 2, 2]
    h = dp.t.make_groupwise(ROWS, USER, int_sum(), by=0, buckets=4, bounds=(0, 10))
    data = [(u, 1) for u in ["ann", "bob", "cy", "dee", "ann"]]
    expected = [0, 0, 0, 0]
    for u, _ in data:
        expected[bucket_of(safe_class(u), 4)] += 1
    assert h(data).tolist() == expected
    assert (
        bucket_of(safe_class(7), 5) == bucket_of(safe_class(np.int64(7)), 5) == bucket_of(safe_class(7.0), 5)
    )


def test_plain_and_other_keys_go_to_the_same_part() -> None:
    """Plain keys (int, str in tuples, lists, dicts) are routed by value once; others by their class."""
    Row = namedtuple("Row", ["user", "value"])
    named = dp.VectorDomain(dp.AtomDomain(Row))
    col = dp.t.make_select_column(named, SYM, "value", dp.AtomDomain(int, bounds=(0, 99)), 0)
    stat = col >> dp.t.make_sum(col.output_domain, SYM)
    users = [3, "ann", 3, "bob", 7, "ann"]
    t_named = dp.t.make_groupwise(named, SYM, stat, by="user", buckets=5, bounds=(0, 99))
    t_plain = dp.t.make_groupwise(ROWS, SYM, int_sum(0, 99), by=0, buckets=5, bounds=(0, 99))
    t_numpy = dp.t.make_groupwise(ROWS, SYM, int_sum(0, 99), by=lambda r: r[0], buckets=5, bounds=(0, 99))
    expected = t_named([Row(u, i) for i, u in enumerate(users)]).tolist()
    assert t_plain([(u, i) for i, u in enumerate(users)]).tolist() == expected
    odd = [(np.int64(u) if isinstance(u, int) else np.str_(u), i) for i, u in enumerate(users)]
    assert t_numpy(odd).tolist() == expected
    dicts = dp.VectorDomain(dp.AtomDomain(dict))
    dcol = dp.t.make_select_column(dicts, SYM, "v", dp.AtomDomain(int, bounds=(0, 99)), 0)
    dstat = dcol >> dp.t.make_sum(dcol.output_domain, SYM)
    t_dict = dp.t.make_groupwise(dicts, SYM, dstat, by="u", buckets=5, bounds=(0, 99))
    rows = [{"u": u, "v": i} for i, u in enumerate(users)] + [{"v": 50}]  # no "u": the key "missing"
    out = t_dict(rows).tolist()
    assert sum(out) == sum(expected) + 50  # the row without a key is in some part, by the class "missing"
    assert t_dict(rows[:-1]).tolist() == expected


def test_empty_part_and_failing_statistic_get_defined_values() -> None:
    t = dp.t.make_groupwise(ROWS, SYM, float_mean(), by=0, keys=["a", "b"], bounds=(0.0, 1.0))
    assert t([("a", 1.0), ("a", 1.0)]).tolist() == [1.0, 0.5]  # empty part b: the resize constant
    assert t([]).tolist() == [0.5, 0.5]

    def fails(part: list[Any]) -> float:
        return 1.0 / (len(part) - 1)

    f = dp.t.make_groupwise(ROWS, SYM, fails, by=0, keys=["a", "b"], bounds=(-1.0, 2.0))
    assert f([("a", 0), ("a", 0), ("a", 0)]).tolist() == [0.5, -1.0]  # b has 0 records: 1/(0 - 1)
    assert f([("a", 0), ("b", 0)]).tolist() == [-1.0, -1.0]  # 1/0 raises → lo

    nan = dp.t.make_groupwise(ROWS, SYM, lambda part: math.nan, by=0, buckets=2, bounds=(0, 1))
    assert nan([("a", 1)]).tolist() == [0, 0]


def test_function_statistic_sees_the_multiset() -> None:
    def first(part: list[Any]) -> int:
        return int(part[0][1]) if part else 0

    t = dp.t.make_groupwise(ROWS, SYM, first, by=0, keys=["a"], bounds=(0, 9))
    assert t([("a", 5), ("a", 2)]).tolist() == t([("a", 2), ("a", 5)]).tolist()


def test_function_statistic_sees_ties_it_cannot_order_in_random_order() -> None:
    """Records the encoding cannot tell apart (dates, user objects) are shuffled, not left in input
    order: the distribution of what the function sees does not depend on the order of the dataset."""
    rows = ROWS

    def first(part: list[Any]) -> int:
        return part[0][1].month if part else 0

    x = [("u", date(2020, 1, 1)), ("u", date(2020, 5, 1)), ("v", date(2020, 2, 1)), ("v", date(2020, 9, 1))]
    t = dp.t.make_groupwise(rows, SYM, first, by=0, keys=["u", "v"], bounds=(0, 12))  # the secure source
    for order in (x, x[::-1]):
        seen = Counter(tuple(t(order).tolist()) for _ in range(120))
        assert set(seen) == {(1, 2), (1, 9), (5, 2), (5, 9)}  # each 1/4, whatever the input order
        assert all(8 <= c <= 52 for c in seen.values()), seen  # binomial(120, 1/4): ±4.7 sd
    seeded = dp.t.make_groupwise(rows, SYM, first, by=0, keys=["u", "v"], bounds=(0, 12), rng=SeededSource(3))
    runs = [seeded(x).tolist() for _ in range(8)]
    again = dp.t.make_groupwise(rows, SYM, first, by=0, keys=["u", "v"], bounds=(0, 12), rng=SeededSource(3))
    assert [again(x).tolist() for _ in range(8)] == runs  # reproducible with a seeded source


def test_function_statistic_cannot_change_the_callers_records() -> None:
    lists = dp.VectorDomain(dp.AtomDomain(list))

    def grab(part: list[Any]) -> int:
        for record in part:
            record.append(0)
            record[1] = 99
        part.clear()
        return 1

    data = [["a", 1], ["b", 2], ["a", 3]]
    t = dp.t.make_groupwise(lists, SYM, grab, by=0, buckets=2, bounds=(0, 5))
    t(data)
    assert data == [["a", 1], ["b", 2], ["a", 3]]


# --- stability against brute force ---------------------------------------------------------------------

FEW, MANY = 12, 1000  # hypothesis examples: the default run (cheap), the slow run (thorough)


def _property(strategies: dict[str, Any], body: Callable[..., None], examples: int) -> Any:
    """``body`` as a hypothesis test drawing its arguments from ``strategies``, ``examples`` times."""
    return settings(max_examples=examples, deadline=None)(given(**strategies)(body))


METRICS = [dp.ChangeOneDistance(), dp.LInfDistance(), dp.L1Distance(), dp.L2Distance()]


def distance(metric: Any, a: np.ndarray, b: np.ndarray) -> Fraction:
    diff = [abs(Fraction(x) - Fraction(y)) for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    if isinstance(metric, dp.ChangeOneDistance):
        return Fraction(sum(1 for d in diff if d))
    if isinstance(metric, dp.LInfDistance):
        return max(diff)
    if isinstance(metric, dp.L1Distance):
        return sum(diff, Fraction(0))
    return Fraction(math.sqrt(sum(d * d for d in diff)))  # compared with a margin below


records = st.tuples(st.sampled_from(["a", "b", "c", 1, 2.0]), st.integers(-2, 5))


ROW_LEVEL: dict[str, st.SearchStrategy[Any]] = {
    "base": st.lists(records, max_size=8),
    "extra": st.lists(records, min_size=1, max_size=3),
    "drop": st.integers(0, 3),
    "metric": st.sampled_from(METRICS),
    "kind": st.sampled_from(["keys", "buckets"]),
}


def _row_level(base: list[Any], extra: list[Any], drop: int, metric: Any, kind: str) -> None:
    where = {"keys": ["a", "b", 1]} if kind == "keys" else {"buckets": 2}
    t = dp.t.make_groupwise(ROWS, SYM, int_sum(), by=0, bounds=(0, 7), metric=metric, **where)
    kept = base[drop:]
    neighbour = kept + extra  # base → neighbour: drop removed, extra added
    d_in = min(drop, len(base)) + len(extra)
    got = distance(metric, t(base), t(neighbour))
    bound = Fraction(t.map(d_in))
    assert got <= bound * (1 + Fraction(1, 10**9))


test_row_level_map_bounds_brute_force = _property(ROW_LEVEL, _row_level, FEW)
test_row_level_map_bounds_brute_force_thorough = pytest.mark.slow(_property(ROW_LEVEL, _row_level, MANY))


CHANGE_ONE: dict[str, st.SearchStrategy[Any]] = {
    "base": st.lists(records, min_size=1, max_size=8),
    "changes": st.lists(st.tuples(st.integers(0, 7), records), min_size=1, max_size=3),
    "metric": st.sampled_from(METRICS),
}


def _change_one(base: list[Any], changes: list[Any], metric: Any) -> None:
    t = dp.t.make_groupwise(ROWS, CHG, int_sum(), by=0, buckets=3, bounds=(0, 7), metric=metric)
    changed = list(base)
    positions = set()
    for i, r in changes:
        changed[i % len(base)] = r
        positions.add(i % len(base))
    got = distance(metric, t(base), t(changed))
    assert got <= Fraction(t.map(len(positions))) * (1 + Fraction(1, 10**9))


test_change_one_map_bounds_brute_force = _property(CHANGE_ONE, _change_one, FEW)
test_change_one_map_bounds_brute_force_thorough = pytest.mark.slow(_property(CHANGE_ONE, _change_one, MANY))


USER_LEVEL: dict[str, st.SearchStrategy[Any]] = {
    "base": st.lists(st.tuples(st.sampled_from(["u", "v", "w", "x", 3]), st.integers(0, 9)), max_size=10),
    "person": st.sampled_from(["u", "v", "w", "x", 3, "new"]),
    "rows": st.lists(st.integers(0, 9), max_size=5),
    "metric": st.sampled_from(METRICS),
}


def _user_level(base: list[Any], person: Any, rows: list[int], metric: Any) -> None:
    t = dp.t.make_groupwise(ROWS, USER, int_sum(0, 9), by=0, buckets=3, bounds=(0, 20), metric=metric)
    others = [r for r in base if r[0] != person]
    mine = [(person, v) for v in rows]
    had = any(r[0] == person for r in base)
    neighbour = others + mine  # the person's rows replaced (or added, or removed)
    d_in = 0 if sorted(map(repr, base)) == sorted(map(repr, neighbour)) else (2 if had and mine else 1)
    got = distance(metric, t(base), t(neighbour))
    assert got <= Fraction(t.map(d_in)) * (1 + Fraction(1, 10**9))


test_user_level_map_bounds_brute_force = _property(USER_LEVEL, _user_level, FEW)
test_user_level_map_bounds_brute_force_thorough = pytest.mark.slow(_property(USER_LEVEL, _user_level, MANY))


WORDS = dp.VectorDomain(dp.AtomDomain(str))
words = st.lists(st.sampled_from(["ax", "ay", "bx", "by", "cz", "a", "b"]), max_size=8)


VECTOR: dict[str, st.SearchStrategy[Any]] = {
    "base": words,
    "extra": words,
    "drop": st.integers(0, 3),
    "norm": st.sampled_from([1, 2]),
    "flat": st.booleans(),
}


def _vector(base: list[str], extra: list[str], drop: int, norm: int, flat: bool) -> None:
    hist = dp.t.make_count_by_categories(WORDS, SYM, ["ax", "ay", "bx"], norm=norm)  # 4 counts per part
    metric = hist.output_metric if flat else dp.ChangeOneDistance()
    t = dp.t.make_groupwise(WORDS, SYM, hist, by=lambda w: w[0], buckets=2, bounds=(0, 3), metric=metric)
    neighbour = base[drop:] + extra
    a, b = t(base), t(neighbour)
    assert a.shape == ((8,) if flat else (2, 4))
    if flat:
        diff = np.abs(a - b).astype(float)
        got = float(diff.sum()) if norm == 1 else float(np.sqrt((diff * diff).sum()))
    else:
        got = float(np.any(a != b, axis=1).sum())
    assert got <= float(t.map(min(drop, len(base)) + len(extra))) * (1 + 1e-12)


test_vector_statistic_map_bounds_brute_force = _property(VECTOR, _vector, FEW)
test_vector_statistic_map_bounds_brute_force_thorough = pytest.mark.slow(_property(VECTOR, _vector, MANY))


def test_vector_statistic_parts_and_range() -> None:
    hist = dp.t.make_count_by_categories(WORDS, SYM, ["ax", "ay", "bx"])  # L1, one record moves 1
    t = dp.t.make_groupwise(
        WORDS, SYM, hist, by=lambda w: w[0], keys=["a", "b"], bounds=(0, 2), metric=dp.L1Distance()
    )
    assert t(["ax", "ax", "ax", "ay", "bx", "zz"]).tolist() == [2, 1, 0, 0, 0, 0, 1, 0]  # clamped to 2
    assert t.map(1) == 1 and t.map(5) == 5 and t.map(100) == 16  # 2 parts × 4 counts × 2
    user_rows = dp.VectorDomain(dp.AtomDomain(tuple))
    sel = dp.t.make_select_column(user_rows, SYM, 1, dp.AtomDomain(str), "")
    user_hist = sel >> dp.t.make_count_by_categories(sel.output_domain, SYM, ["x", "y"], norm=2)
    u = dp.t.make_groupwise(
        user_rows, USER, user_hist, by=0, buckets=3, bounds=(0, 4), metric=dp.L2Distance()
    )
    assert 12 <= u.map(3) <= 12 * (1 + 1e-12)  # √3 parts · √3 counts · 4
    with pytest.raises(InvalidParameter, match="own L2Distance"):
        dp.t.make_groupwise(
            user_rows, USER, user_hist, by=0, buckets=3, bounds=(0, 4), metric=dp.L1Distance()
        )


def test_maps_are_exact_where_attained() -> None:
    stat = int_sum(0, 3)  # one record moves a part by at most 3
    kw: dict[str, Any] = {"by": 0, "buckets": 4, "bounds": (0, 5)}
    assert dp.t.make_groupwise(ROWS, SYM, stat, metric=dp.ChangeOneDistance(), **kw).map(3) == 3
    assert dp.t.make_groupwise(ROWS, SYM, stat, metric=dp.ChangeOneDistance(), **kw).map(9) == 4
    assert dp.t.make_groupwise(ROWS, CHG, stat, metric=dp.ChangeOneDistance(), **kw).map(1) == 2
    assert dp.t.make_groupwise(ROWS, SYM, stat, metric=dp.LInfDistance(), **kw).map(1) == 3
    assert dp.t.make_groupwise(ROWS, SYM, stat, metric=dp.LInfDistance(), **kw).map(2) == 5  # capped at R
    assert dp.t.make_groupwise(ROWS, SYM, stat, metric=dp.L1Distance(), **kw).map(2) == 6  # two parts, 3 each
    assert dp.t.make_groupwise(ROWS, SYM, stat, metric=dp.L1Distance(), **kw).map(9) == 20  # 4 parts × R
    l2 = dp.t.make_groupwise(ROWS, SYM, stat, metric=dp.L2Distance(), **kw).map(2)
    assert 5 <= l2 <= 5 * (1 + 1e-12)  # both records in one part (5² > 3² + 3²)
    user = dp.t.make_groupwise(ROWS, USER, stat, metric=dp.L1Distance(), **kw)
    assert user.map(0) == 0 and user.map(1) == 5 and user.map(2) == 10 and user.map(100) == 20
    # attained: one record with value 3 added to an empty part
    t = dp.t.make_groupwise(ROWS, SYM, stat, metric=dp.LInfDistance(), **kw)
    assert max(abs(t([("a", 3)]) - t([]))) == 3


def best_allocation(g: list[Fraction], parts: int, left: int) -> Fraction:
    """The most Σ g(jᵢ) over at most ``parts`` parts with Σ jᵢ ≤ ``left``, by enumeration."""
    if parts == 0 or left == 0:
        return Fraction(0)
    return max(Fraction(0), *(g[j] + best_allocation(g, parts - 1, left - j) for j in range(1, left + 1)))


def test_worst_spread_matches_enumeration() -> None:
    rng = np.random.default_rng(1)
    for _ in range(30):
        total, parts = int(rng.integers(1, 6)), int(rng.integers(1, 4))
        g = [Fraction(0)] + [Fraction(int(v)) for v in rng.integers(0, 6, size=total)]
        assert worst_spread(g, parts) == best_allocation(g, parts, total)


def test_worst_spread_with_large_denominators_is_fast_and_never_below_the_truth() -> None:
    """g of rationals whose common denominator does not fit int64: the programme rounds g up, so its
    answer is at least the exact maximum and above it by less than parts²·max g·2**-60."""
    rng = np.random.default_rng(2)
    for _ in range(20):
        total, parts = int(rng.integers(2, 6)), int(rng.integers(1, 4))
        g = [Fraction(0)] + [
            Fraction(int(rng.integers(1, 2**62)), int(rng.integers(2**40, 2**62)) | 1) for _ in range(total)
        ]
        got, truth = worst_spread(g, parts), best_allocation(g, parts, total)
        assert truth <= got <= truth + Fraction(min(parts, total) ** 2) * max(g) / 2**60
    small = [Fraction(0), Fraction(1, 3), Fraction(1, 3), Fraction(5, 7)]  # fits: exact
    assert worst_spread(small, 2) == best_allocation(small, 2, 3) == Fraction(5, 7)
    assert worst_spread(small, 3) == best_allocation(small, 3, 3) == 1
    wide = [Fraction(0)] + [
        Fraction(int(v), (int(v) % 97) * 2**50 + 1) for v in rng.integers(1, 2**40, size=256)
    ]
    got = worst_spread(wide, 16)  # a general g, T = 256, 16 parts (its time: benchmarks/bench_groupwise.py)
    even = 16 * wide[16]  # 16 changes in each of the 16 parts: one feasible spread
    assert max(wide[256], even) <= got <= 16 * max(wide) * (1 + Fraction(1, 2**40))


# --- recipes -------------------------------------------------------------------------------------------


def test_median_of_means_recipe_is_the_library_map() -> None:
    parts = dp.t.make_groupwise(ROWS, USER, float_mean(4), by=0, buckets=8, bounds=(0.0, 1.0))
    median = parts >> dp.m.make_private_quantile(
        parts.output_domain, parts.output_metric, [i / 10 for i in range(11)], alpha=0.5, scale=4.0
    )
    assert median.map(1) == Fraction(1, 2)  # one person: one part changed; ε = 2·1/4
    assert "[UNVERIFIED]" not in str(dp.explain(median, 1))
    rng = np.random.default_rng(0)
    data = [
        (int(u), float(v))
        for u, v in zip(rng.integers(0, 400, 4000), rng.uniform(0.6, 0.8, 4000), strict=True)
    ]
    assert 0.0 <= median(data) <= 1.0


def test_vote_recipe_is_the_library_map() -> None:
    def teacher(part: list[Any]) -> int:  # the majority label of the part (labels 0, 1, 2)
        counts = np.bincount([r[1] for r in part], minlength=3)
        return int(np.argmax(counts))

    votes = dp.t.make_groupwise(ROWS, SYM, teacher, by=0, buckets=10, bounds=(0, 2))
    hist = votes >> dp.t.make_count_by_categories(votes.output_domain, votes.output_metric, [0, 1, 2], False)
    noisy = hist >> dp.m.make_laplace(hist.output_domain, hist.output_metric, scale=4.0)
    label = noisy >> (lambda h: int(np.argmax(h)))
    assert label.map(1) == Fraction(1, 2)  # one record: one vote moves, L1 2, ε = 2/4
    assert "[UNVERIFIED]" not in str(dp.explain(label, 1))
    assert label([(i, 1) for i in range(300)]) in (0, 1, 2)


# --- refusals: clear errors, nothing built -------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"keys": ["a"], "buckets": 2}, InvalidParameter, "exactly one of keys"),
        ({}, InvalidParameter, "exactly one of keys"),
        ({"keys": []}, InvalidParameter, "must not be empty"),
        ({"keys": ["a", "a"]}, InvalidParameter, "distinct"),
        ({"keys": [1, 1.0]}, InvalidParameter, "distinct"),
        ({"keys": ["a", date(2020, 1, 1)]}, InvalidParameter, r"keys\[1\]=.*date.*not compared by value"),
        ({"keys": [1j]}, InvalidParameter, "not compared by value"),
        ({"keys": [type("S", (str,), {})("a")]}, InvalidParameter, "not compared by value"),
        ({"keys": [object()]}, InvalidParameter, "not compared by value"),
        ({"buckets": 2, "rng": 7}, InvalidParameter, "rng="),
        ({"buckets": 0}, InvalidParameter, "buckets"),
        ({"buckets": 2, "by": 2.5}, InvalidParameter, "by="),
        ({"buckets": 2, "bounds": (3, 1)}, InvalidParameter, "lo <= hi"),
        ({"buckets": 2, "bounds": (0, math.inf)}, InvalidParameter, "bounds"),
        ({"buckets": 2, "metric": dp.LInfDistance(monotonic=True)}, InvalidParameter, "monotonic"),
        ({"buckets": 2, "metric": dp.SymmetricDistance()}, InvalidParameter, "metric="),
        ({"buckets": 2, "statistic": 3}, InvalidParameter, "statistic="),
        ({"buckets": 2, "statistic": len, "bounds": None}, InvalidParameter, "bounds"),
    ],
)
def test_bad_arguments_are_refused(kwargs: dict[str, Any], error: type, words: str) -> None:
    args: dict[str, Any] = {"input_domain": ROWS, "input_metric": SYM, "statistic": int_sum(), "by": 0}
    args.update({"bounds": (0, 5)} | kwargs)
    with pytest.raises(error, match=words):
        dp.t.make_groupwise(**args)


def test_bad_statistics_and_domains_are_refused() -> None:
    ints = dp.VectorDomain(dp.AtomDomain(int))
    mean = float_mean()
    with pytest.raises(DomainMismatch, match="no bounds"):
        dp.t.make_groupwise(ROWS, SYM, mean, by=0, buckets=2)
    sized = dp.t.make_mean(dp.VectorDomain(dp.AtomDomain(int, bounds=(0, 1)), size=3), SYM)
    with pytest.raises(DomainMismatch, match="input_domain"):
        dp.t.make_groupwise(ints, SYM, sized, by=lambda r: r, buckets=2, bounds=(0, 1))
    counts = dp.t.make_select_column(ROWS, SYM, 1, dp.AtomDomain(int), 0)  # rows, not a number
    with pytest.raises(DomainMismatch, match="output_metric"):
        dp.t.make_groupwise(ROWS, SYM, counts, by=0, buckets=2, bounds=(0, 1))
    strings = dp.t.make_map_rows(ROWS, SYM, str, dp.AtomDomain(str), "")
    counted = strings >> dp.t.make_count_by_categories(strings.output_domain, SYM, ["a"])
    unsized = dp.t.make_groupwise(ROWS, SYM, counted, by=0, buckets=2, bounds=(0, 1))  # a sized vector: fine
    assert unsized.output_domain == dp.VectorDomain(
        dp.VectorDomain(dp.AtomDomain(int, bounds=(0, 1)), size=2), size=2
    )
    change = dp.t.make_count(ROWS, CHG)
    with pytest.raises(DomainMismatch, match="SymmetricDistance"):
        dp.t.make_groupwise(ROWS, SYM, change, by=0, buckets=2, bounds=(0, 1))
    with pytest.raises(InvalidParameter, match="identifier column"):
        dp.t.make_groupwise(ROWS, USER, int_sum(), by=1, buckets=2, bounds=(0, 1))
    with pytest.raises(InvalidParameter, match="identifier column"):
        dp.t.make_groupwise(ROWS, USER, int_sum(), by=lambda r: r[0], buckets=2, bounds=(0, 1))
    with pytest.raises(DomainMismatch):
        dp.t.make_groupwise(ints, USER, int_sum(), by=0, buckets=2, bounds=(0, 1))


def test_a_refused_groupwise_query_spends_nothing() -> None:
    """The refusal happens while the query is built, before the budget is touched; the recipe then runs
    under the filter and is charged the library's map."""
    budget = dp.make_privacy_filter(ROWS, USER, dp.PureDP(), d_in=1, d_out=1.0)
    q = budget([("ann", 0.5), ("bob", 0.7)])
    with pytest.raises(InvalidParameter, match="identifier column"):
        q(dp.t.make_groupwise(ROWS, USER, float_mean(), by=1, buckets=4, bounds=(0.0, 1.0)))
    assert q.remaining() == {"epsilon": 1, "delta": 0}
    parts = dp.t.make_groupwise(ROWS, USER, float_mean(), by=0, buckets=4, bounds=(0.0, 1.0))
    median = parts >> dp.m.make_private_quantile(
        parts.output_domain, parts.output_metric, [0.0, 0.5, 1.0], 0.5, 4.0
    )
    assert q(median) in (0.0, 0.5, 1.0)
    assert q.remaining() == {"epsilon": Fraction(1, 2), "delta": 0}


def test_a_transformation_statistic_that_raises_is_not_replaced_by_lo() -> None:
    """A trusted statistic whose own map bounds its part (10·d) but which raises on 3 rows: a ``lo`` in its
    place moved the part by 40 at one record while the map said 10. The failure now propagates (a
    Transformation's contract is not to raise on its domain); it is not read as a value within the map."""
    ints = dp.VectorDomain(dp.AtomDomain(int, bounds=(0, 10)))

    def total(rows: list[int]) -> int:
        if len(rows) == 3:
            raise ValueError("three rows")
        return sum(rows)

    stat = dp.make_user_transformation(
        ints,
        dp.AtomDomain(int, bounds=(0, 100)),
        dp.SymmetricDistance(),
        dp.AbsoluteDistance(),
        total,
        lambda d: 10 * d,
        trusted=True,
    )
    g = dp.t.make_groupwise(
        ints,
        dp.SymmetricDistance(),
        stat,
        by=lambda r: 0,
        buckets=1,
        bounds=(0, 100),
        metric=dp.LInfDistance(),
    )
    assert g([10, 10, 10, 10]).tolist() == [40] and g.map(1) == 10
    with pytest.raises(ValueError, match="three rows"):
        g([10, 10, 10])
