"""make_resize, make_mean, make_variance (issue 15): stability maps checked by brute force on small
neighbouring datasets, rounding error against exact rationals, refusals."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpcompose as dp
from dpcompose.measurements._sampling import BytesSource, SeededSource
from dpcompose.transformations._stats import (
    exact_fraction_sum,
    mean_error_bound,
    random_selection,
    variance_error_bound,
)

SYM, CHG = dp.SymmetricDistance(), dp.ChangeOneDistance()

# --- exact couplings --------------------------------------------------------------------------------------

Dist = dict[Hashable, Fraction]


def _max_flow_is_total(p: Dist, q: Dist, close: Callable[[Any, Any], bool]) -> bool:
    """Whether a coupling of p and q exists supported on pairs with ``close(a, b)`` (Strassen): the max
    flow source → a (capacity p[a]) → b (unbounded, when close) → sink (capacity q[b]) is 1. Exact
    Edmonds–Karp on Fractions."""
    left, right = list(p), list(q)
    nodes = ["s", *[("L", a) for a in left], *[("R", b) for b in right], "t"]
    index = {v: i for i, v in enumerate(nodes)}
    size = len(nodes)
    cap = [[Fraction(0)] * size for _ in range(size)]
    big = Fraction(2)
    for a in left:
        cap[index["s"]][index[("L", a)]] = p[a]
        for b in right:
            if close(a, b):
                cap[index[("L", a)]][index[("R", b)]] = big
    for b in right:
        cap[index[("R", b)]][index["t"]] = q[b]
    flow = Fraction(0)
    s, t = index["s"], index["t"]
    while True:
        parent = [-1] * size
        parent[s] = s
        frontier = [s]
        while frontier and parent[t] == -1:
            nxt = []
            for u in frontier:
                for v in range(size):
                    if parent[v] == -1 and cap[u][v] > 0:
                        parent[v] = u
                        nxt.append(v)
            frontier = nxt
        if parent[t] == -1:
            return flow == 1
        push, v = big, t
        while v != s:
            push = min(push, cap[parent[v]][v])
            v = parent[v]
        v = t
        while v != s:
            cap[parent[v]][v] -= push
            cap[v][parent[v]] += push
            v = parent[v]
        flow += push


def _symmetric(a: Sequence[Any], b: Sequence[Any]) -> int:
    ca, cb = Counter(a), Counter(b)
    return sum(((ca - cb) + (cb - ca)).values())


def _hamming(a: Sequence[Any], b: Sequence[Any]) -> int:
    return sum(x != y for x, y in zip(a, b, strict=True))


def _keys_for(ranks: Sequence[int]) -> bytes:
    """Random bytes that give item i the key ``ranks[i] + 1`` (distinct keys: accepted at once)."""
    return np.asarray([r + 1 for r in ranks], dtype="<u8").tobytes()


def _resize_distribution(data: list[int], size: int, metric: dp.Metric) -> Dist:
    """The exact output distribution of make_resize on ``data``: every ordering of the keys of the
    max(len, size) (padded) items is equally likely, and each one is run through the implementation."""
    domain = dp.VectorDomain(dp.AtomDomain(int, bounds=(0, 9)))
    items = max(len(data), size)
    perms = list(itertools.permutations(range(items)))
    out: Counter[tuple[int, ...]] = Counter()
    for perm in perms:
        t = dp.t.make_resize(domain, metric, size=size, constant=9, rng=BytesSource(_keys_for(perm)))
        out[tuple(int(v) for v in t(data))] += 1
    return {k: Fraction(c, len(perms)) for k, c in out.items()}


def _multisets(alphabet: Sequence[int], max_len: int) -> list[list[int]]:
    return [list(c) for m in range(max_len + 1) for c in itertools.combinations_with_replacement(alphabet, m)]


def test_resize_distribution_is_uniform_over_selections() -> None:
    dist = _resize_distribution([0, 1, 2, 3], 2, SYM)
    assert len(dist) == 12 and set(dist.values()) == {Fraction(1, 12)}  # every ordered pair, equally
    padded = _resize_distribution([0, 1], 4, SYM)
    assert all(sorted(k) == [0, 1, 9, 9] for k in padded) and sum(padded.values()) == 1


@pytest.mark.parametrize("size", [0, 1, 2, 3])
def test_resize_symmetric_stability_by_brute_force(size: int) -> None:
    """For every pair of small datasets at symmetric distance 1 or 2, a coupling of the two exact output
    distributions keeps the outputs within map(d_in) (symmetric distance of multisets), and — when both
    datasets are truncated, so that the outputs are in random order — within map(d_in)/2 changed
    positions; the bound is attained. (Padded outputs keep the input's order: the dataset metrics compare
    multisets, so positions are not part of the guarantee.)"""
    t = dp.t.make_resize(dp.VectorDomain(dp.AtomDomain(int, bounds=(0, 9))), SYM, size=size, constant=9)
    datasets = _multisets([0, 1], 3)
    cache = {tuple(x): _resize_distribution(x, size, SYM) for x in datasets}
    tight = False
    for x, y in itertools.product(datasets, repeat=2):
        d_in = _symmetric(x, y)
        if d_in not in (1, 2):
            continue
        p, q = cache[tuple(x)], cache[tuple(y)]
        bound = t.map(d_in)
        assert bound == min(2 * d_in, 2 * size)
        assert _max_flow_is_total(p, q, lambda a, b, limit=bound: _symmetric(a, b) <= limit)
        if len(x) > size and len(y) > size:
            assert _max_flow_is_total(p, q, lambda a, b, limit=bound: 2 * _hamming(a, b) <= limit)
        below = bound - 1
        if bound > 0 and not _max_flow_is_total(p, q, lambda a, b, limit=below: _symmetric(a, b) <= limit):
            tight = True
    assert tight or size == 0


def test_resize_change_one_stability_by_brute_force() -> None:
    domain = dp.VectorDomain(dp.AtomDomain(int, bounds=(0, 9)))
    for size in (1, 2, 3):
        t = dp.t.make_resize(domain, CHG, size=size, constant=9)
        for length in (1, 2, 3, 4):
            for x in itertools.product([0, 1], repeat=length):
                p = _resize_distribution(list(x), size, CHG)  # once per x, not once per changed record
                for i in range(length):
                    y = list(x)
                    y[i] = 2  # one record changed
                    q = _resize_distribution(y, size, CHG)
                    assert t.map(1) == 1
                    assert _max_flow_is_total(p, q, lambda a, b: _hamming(a, b) <= 1)


def test_resize_map_on_sized_input_and_caps() -> None:
    sized = dp.VectorDomain(dp.AtomDomain(float, bounds=(0.0, 1.0)), size=5)
    t = dp.t.make_resize(sized, SYM, size=3, constant=0.0)
    assert [t.map(d) for d in (0, 2, 4, 100)] == [0, 2, 4, 6]
    for odd in (1, 3):  # the sized input holds no two datasets an odd distance apart
        with pytest.raises(dp.InvalidParameter, match="odd"):
            t.map(odd)
    u = dp.t.make_resize(dp.VectorDomain(dp.AtomDomain(float)), SYM, size=3, constant=0.0)
    assert [u.map(d) for d in (0, 1, 2, 5)] == [0, 2, 4, 6]
    c = dp.t.make_resize(dp.VectorDomain(dp.AtomDomain(float)), CHG, size=3, constant=0.0)
    assert [c.map(d) for d in (0, 1, 7)] == [0, 1, 3] and c.output_metric == CHG


def test_resize_outputs() -> None:
    floats = dp.VectorDomain(dp.AtomDomain(float, bounds=(0.0, 1.0)))
    t = dp.t.make_resize(floats, SYM, size=3, constant=0.5)
    out = t(np.array([0.1, 0.2]))
    assert out.dtype == np.float64 and sorted(out.tolist()) == [0.1, 0.2, 0.5]
    assert t.output_domain.member(out) and t.output_domain == dp.VectorDomain(floats.element_domain, size=3)
    big = t(np.linspace(0, 1, 1000))
    assert len(big) == 3 and len(set(big.tolist())) == 3 and t.output_domain.member(big)
    assert len(t([])) == 3
    ints = dp.t.make_resize(dp.VectorDomain(dp.AtomDomain(int)), SYM, size=2, constant=0)
    assert ints(np.array([5], dtype=np.uint8)).dtype == np.int64
    huge = ints([2**70, 2**70])  # beyond int64: exact Python ints in a list
    assert huge == [2**70, 2**70] and ints.output_domain.member(huge)
    assert ints.output_domain.member(ints(np.array([2**64 - 1], dtype=np.uint64)))
    rows = dp.t.make_resize(dp.VectorDomain(dp.AtomDomain(tuple)), SYM, size=2, constant=())
    kept = rows([(1, 2), (3,), (4,)])
    assert isinstance(kept, list) and len(kept) == 2 and set(kept) <= {(1, 2), (3,), (4,)}
    assert sorted(rows([(1, 2)]), key=len) == [(), (1, 2)]
    assert dp.t.make_resize(floats, SYM, size=0, constant=0.0)([0.3]).tolist() == []


def test_resize_rng_is_reproducible_and_validated() -> None:
    floats = dp.VectorDomain(dp.AtomDomain(float, bounds=(0.0, 1.0)))
    data = np.linspace(0, 1, 50)

    def run(rng: Any) -> list[float]:
        out: list[float] = dp.t.make_resize(floats, SYM, size=5, constant=0.0, rng=rng)(data).tolist()
        return out

    assert run(np.random.default_rng(3)) == run(np.random.default_rng(3))
    assert run(SeededSource(4)) == run(SeededSource(4))
    for bad in ("x", 3, SeededSource, np.random.default_rng):
        with pytest.raises(dp.InvalidParameter, match="rng="):
            dp.t.make_resize(floats, SYM, size=5, constant=0.0, rng=bad)


def test_resize_refuses_bad_parameters() -> None:
    floats = dp.VectorDomain(dp.AtomDomain(float, bounds=(0.0, 1.0)))
    with pytest.raises(dp.InvalidParameter, match="constant="):
        dp.t.make_resize(floats, SYM, size=3, constant=2.0)  # outside the bounds
    with pytest.raises(dp.InvalidParameter, match="constant="):
        dp.t.make_resize(floats, SYM, size=3, constant=math.nan)
    with pytest.raises(dp.InvalidParameter, match="size="):
        dp.t.make_resize(floats, SYM, size=-1, constant=0.0)
    with pytest.raises(dp.DomainMismatch, match="input_metric="):
        dp.t.make_resize(floats, dp.L1Distance(), size=3, constant=0.0)


def test_random_selection_is_uniform_and_rejects_ties() -> None:
    src = SeededSource(11)
    counts = Counter(tuple(random_selection(4, 2, src).tolist()) for _ in range(12_000))
    assert len(counts) == 12
    assert all(abs(c - 1000) < 5 * math.sqrt(1000) for c in counts.values()), counts
    # a draw whose chosen keys tie is rejected and redrawn; so is a tie at the boundary
    tied = np.asarray([5, 1, 1, 9], dtype="<u8").tobytes()
    fresh = np.asarray([4, 3, 2, 1], dtype="<u8").tobytes()
    assert random_selection(4, 4, BytesSource(tied + fresh)).tolist() == [3, 2, 1, 0]
    boundary = np.asarray([2, 1, 2, 9], dtype="<u8").tobytes()
    assert random_selection(4, 2, BytesSource(boundary + fresh)).tolist() == [3, 2]
    assert random_selection(4, 2, BytesSource(fresh)).tolist() == [3, 2]


FLOAT_LISTS = st.lists(
    st.one_of(
        st.floats(allow_nan=False, allow_infinity=False),
        st.sampled_from([5e-324, -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, -0.0]),
    ),
    max_size=40,
)
"""Lists of finite floats with the extremes (subnormals, the least normal, the largest, -0.0) mixed in."""


@settings(max_examples=60, deadline=None)
@given(FLOAT_LISTS)
def test_exact_fraction_sum_is_exact(values: list[float]) -> None:
    assert exact_fraction_sum(np.asarray(values, dtype=np.float64)) == sum(map(Fraction, values), Fraction(0))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(FLOAT_LISTS)
def test_exact_fraction_sum_is_exact_thorough(values: list[float]) -> None:
    """test_exact_fraction_sum_is_exact with its full 300 examples."""
    test_exact_fraction_sum_is_exact.hypothesis.inner_test(values)


def test_exact_fraction_sum_over_blocks() -> None:
    values = np.full(3 * 2**20 + 5, 0.1)
    values[::7] = -(2.0**60)
    values[1::11] = 2.0**-1060
    distinct, counts = np.unique(values, return_counts=True)  # the same (value, count) pairs as a Counter
    expected = sum(
        (Fraction(v) * int(c) for v, c in zip(distinct.tolist(), counts, strict=True)), Fraction(0)
    )
    assert exact_fraction_sum(values) == expected


# --- mean ---------------------------------------------------------------------------------------------------


def _exact_mean(x: Sequence[Any]) -> Fraction:
    return sum((Fraction(v) for v in x), Fraction(0)) / len(x)


def _exact_var(x: Sequence[Any], ddof: int) -> Fraction:
    mu = _exact_mean(x)
    return sum(((Fraction(v) - mu) ** 2 for v in x), Fraction(0)) / (len(x) - ddof)


def _pairs_by_changes(grid: Sequence[Any], n: int) -> list[tuple[list[Any], list[Any], int]]:
    """Every ordered pair of size-n multisets over ``grid``, with the number of changed records."""
    sets = [list(c) for c in itertools.combinations_with_replacement(grid, n)]
    out = []
    for x, y in itertools.product(sets, repeat=2):
        common = sum((Counter(x) & Counter(y)).values())
        out.append((x, y, n - common))
    return out


GRIDS: list[tuple[type, tuple[Any, Any], list[Any]]] = [
    (int, (0, 3), [0, 1, 2, 3]),
    (int, (-2, 5), [-2, 0, 5]),
    (float, (-1.0, 0.5), [-1.0, -0.3, 0.1, 0.5]),
    (float, (1e6, 1e6 + 1.0), [1e6, 1e6 + 0.1, 1e6 + 1.0]),
]


@pytest.mark.parametrize(("carrier", "bounds", "grid"), GRIDS)
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_mean_stability_by_brute_force(
    carrier: type, bounds: tuple[Any, Any], grid: list[Any], n: int
) -> None:
    domain = dp.VectorDomain(dp.AtomDomain(carrier, bounds=bounds), size=n)
    t_chg, t_sym = dp.t.make_mean(domain, CHG), dp.t.make_mean(domain, SYM)
    width = Fraction(bounds[1]) - Fraction(bounds[0])
    worst_one = Fraction(0)
    for x, y, k in _pairs_by_changes(grid, n):
        got = abs(Fraction(t_chg(x)) - Fraction(t_chg(y)))
        assert got <= t_chg.map(k) and got <= t_sym.map(2 * k)
        if k == 1:
            worst_one = max(worst_one, abs(_exact_mean(x) - _exact_mean(y)))
    assert worst_one == width / n  # the textbook sensitivity is attained (grids hold both bounds)
    with pytest.raises(dp.InvalidParameter, match="odd"):  # no two members of the sized domain are 1 apart
        t_sym.map(1)
    slack = t_chg.map(1) - width / n
    assert 0 < slack <= 2 * mean_error_bound(carrier, Fraction(bounds[0]), Fraction(bounds[1]))
    assert t_chg.map(0) == 0 and t_chg.map(10 * n) == width + slack  # capped at the range


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_float_mean_rounding_within_bound(data: st.DataObject) -> None:
    lo, hi = data.draw(
        st.sampled_from([(-1.0, 1.0), (1e6, 1e6 + 1.0), (-1e300, 1e300), (0.0, 1e-300), (-3.5, 1e9)])
    )
    n = data.draw(st.integers(1, 30))
    values = data.draw(
        st.lists(
            st.one_of(st.floats(lo, hi), st.sampled_from([lo, hi, 5e-324 if lo <= 5e-324 <= hi else lo])),
            min_size=n,
            max_size=n,
        )
    )
    t = dp.t.make_mean(dp.VectorDomain(dp.AtomDomain(float, bounds=(lo, hi)), size=n), CHG)
    out = t(values)
    assert abs(Fraction(out) - _exact_mean(values)) <= mean_error_bound(float, Fraction(lo), Fraction(hi))


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.data())
def test_float_mean_rounding_within_bound_thorough(data: st.DataObject) -> None:
    """test_float_mean_rounding_within_bound with its full 200 examples."""
    test_float_mean_rounding_within_bound.hypothesis.inner_test(data)


@given(st.lists(st.integers(-(10**30), 10**30), min_size=5, max_size=5))
def test_int_mean_is_correctly_rounded(values: list[int]) -> None:
    t = dp.t.make_mean(dp.VectorDomain(dp.AtomDomain(int, bounds=(-(10**30), 10**30)), size=5), SYM)
    assert t(values) == float(Fraction(sum(values), 5))
    small = dp.t.make_mean(dp.VectorDomain(dp.AtomDomain(int, bounds=(-(2**62), 2**62)), size=5), SYM)
    clipped = [max(-(2**62), min(2**62, v)) for v in values]
    assert small(np.asarray(clipped, dtype=np.int64)) == float(Fraction(sum(clipped), 5))


def test_mean_refusals_point_to_the_fix() -> None:
    bounded = dp.AtomDomain(float, bounds=(0.0, 1.0))
    with pytest.raises(dp.DomainMismatch, match="make_resize"):
        dp.t.make_mean(dp.VectorDomain(bounded), SYM)
    with pytest.raises(dp.DomainMismatch, match="make_clamp"):
        dp.t.make_mean(dp.VectorDomain(dp.AtomDomain(float), size=3), SYM)
    with pytest.raises(dp.DomainMismatch, match="NaN"):
        dp.t.make_mean(dp.VectorDomain(dp.AtomDomain(float, bounds=(0.0, 1.0), nan=True), size=3), SYM)
    with pytest.raises(dp.DomainMismatch, match="size 0"):
        dp.t.make_mean(dp.VectorDomain(bounded, size=0), SYM)
    with pytest.raises(dp.DomainMismatch, match="input_metric"):
        dp.t.make_mean(dp.VectorDomain(bounded, size=3), dp.L1Distance())
    wide = dp.t.make_mean(dp.VectorDomain(dp.AtomDomain(float, bounds=(0.0, 1e308)), size=3), SYM)
    assert wide([1e308] * 3) == 1e308  # the sum is exact, so its overflow is no reason to refuse
    with pytest.raises(dp.InvalidParameter, match="float range"):
        dp.t.make_mean(dp.VectorDomain(dp.AtomDomain(int, bounds=(0, 10**400)), size=3), SYM)


# --- variance -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("carrier", "bounds", "grid"), GRIDS)
@pytest.mark.parametrize(("n", "ddof"), [(1, 0), (2, 0), (2, 1), (3, 0), (3, 1), (4, 1), (4, 2)])
def test_variance_stability_by_brute_force(
    carrier: type, bounds: tuple[Any, Any], grid: list[Any], n: int, ddof: int
) -> None:
    """Over all pairs of size-n datasets on a grid holding both bounds: the computed variances are within
    map(k) for k changes (both metrics); the one-change bound (n-1)/n·w²/(n-ddof) is attained exactly by
    the exact variance, and so is the range cap V_max."""
    domain = dp.VectorDomain(dp.AtomDomain(carrier, bounds=bounds), size=n)
    t_chg = dp.t.make_variance(domain, CHG, ddof=ddof)
    t_sym = dp.t.make_variance(domain, SYM, ddof=ddof)
    w2 = (Fraction(bounds[1]) - Fraction(bounds[0])) ** 2
    worst: dict[int, Fraction] = {}
    # each dataset's computed and exact variance once (the pairs meet every dataset once per partner)
    computed = {tuple(x): Fraction(t_chg(x)) for x in itertools.combinations_with_replacement(grid, n)}
    exact_var = {key: _exact_var(list(key), ddof) for key in computed}
    for x, y, k in _pairs_by_changes(grid, n):
        got = abs(computed[tuple(x)] - computed[tuple(y)])
        assert got <= t_chg.map(k) and got <= t_sym.map(2 * k)
        exact = abs(exact_var[tuple(x)] - exact_var[tuple(y)])
        worst[k] = max(worst.get(k, Fraction(0)), exact)
    one_change = Fraction(n - 1, n) * w2 / (n - ddof)
    v_max = Fraction(n * n // 4, n) * w2 / (n - ddof)
    assert worst.get(1, Fraction(0)) == one_change
    assert max(worst.values()) == v_max
    slack = 2 * variance_error_bound(carrier, Fraction(bounds[0]), Fraction(bounds[1]), n, ddof)
    for k in range(1, n + 1):
        assert t_chg.map(k) == min(k * one_change, v_max) + slack
        assert worst.get(k, Fraction(0)) <= t_chg.map(k) - slack  # the exact bound alone holds too
    assert t_chg.map(0) == 0 and t_sym.map(0) == 0
    with pytest.raises(dp.InvalidParameter, match="odd"):  # no two members of the sized domain are 1 apart
        t_sym.map(1)


def test_variance_sensitivity_formula_by_exhaustive_search() -> None:
    """Independent check of the one-change bound: for n up to 5 on the grid {0, ..., 4}, the largest change
    of SSD by one substitution is exactly (n-1)/n · 16."""
    for n in range(1, 6):
        worst = Fraction(0)
        for x in itertools.combinations_with_replacement(range(5), n):
            base = _exact_var(x, 0) * n
            for i, b in itertools.product(range(n), range(5)):
                y = list(x)
                y[i] = b
                worst = max(worst, abs(_exact_var(y, 0) * n - base))
        assert worst == Fraction(n - 1, n) * 16


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_float_variance_rounding_within_bound(data: st.DataObject) -> None:
    lo, hi = data.draw(
        st.sampled_from([(-1.0, 1.0), (1e6, 1e6 + 1.0), (-1e100, 1e100), (0.0, 1e-300), (-3.5, 1e9)])
    )
    n = data.draw(st.integers(2, 30))
    ddof = data.draw(st.integers(0, 1))
    values = data.draw(
        st.lists(st.one_of(st.floats(lo, hi), st.sampled_from([lo, hi])), min_size=n, max_size=n)
    )
    t = dp.t.make_variance(dp.VectorDomain(dp.AtomDomain(float, bounds=(lo, hi)), size=n), CHG, ddof=ddof)
    out = t(np.asarray(values))
    bound = variance_error_bound(float, Fraction(lo), Fraction(hi), n, ddof)
    assert abs(Fraction(out) - _exact_var(values, ddof)) <= bound


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.data())
def test_float_variance_rounding_within_bound_thorough(data: st.DataObject) -> None:
    """test_float_variance_rounding_within_bound with its full 200 examples."""
    test_float_variance_rounding_within_bound.hypothesis.inner_test(data)


@given(st.lists(st.integers(-(10**20), 10**20), min_size=4, max_size=4), st.integers(0, 3))
def test_int_variance_is_correctly_rounded(values: list[int], ddof: int) -> None:
    t = dp.t.make_variance(dp.VectorDomain(dp.AtomDomain(int, bounds=(-(10**20), 10**20)), size=4), SYM, ddof)
    assert t(values) == float(_exact_var(values, ddof))
    small = dp.t.make_variance(dp.VectorDomain(dp.AtomDomain(int, bounds=(-1000, 1000)), size=4), SYM, ddof)
    clipped = np.clip(np.asarray([v % 2001 - 1000 for v in values]), -1000, 1000)
    assert small(clipped) == float(_exact_var(clipped.tolist(), ddof))


def test_variance_refusals() -> None:
    sized = dp.VectorDomain(dp.AtomDomain(float, bounds=(0.0, 1.0)), size=3)
    with pytest.raises(dp.InvalidParameter, match="ddof="):
        dp.t.make_variance(sized, SYM, ddof=3)
    with pytest.raises(dp.InvalidParameter, match="ddof="):
        dp.t.make_variance(sized, SYM, ddof=-1)
    with pytest.raises(dp.DomainMismatch, match="make_resize"):
        dp.t.make_variance(dp.VectorDomain(dp.AtomDomain(float, bounds=(0.0, 1.0))), SYM)
    with pytest.raises(dp.DomainMismatch, match="make_clamp"):
        dp.t.make_variance(dp.VectorDomain(dp.AtomDomain(int), size=3), SYM)
    with pytest.raises(dp.InvalidParameter, match="float range"):
        dp.t.make_variance(dp.VectorDomain(dp.AtomDomain(float, bounds=(-1e200, 1e200)), size=3), SYM)


# --- pipelines ----------------------------------------------------------------------------------------------


def test_dp_mean_pipeline() -> None:
    """clamp → resize → mean → laplace: one added record costs (hi - lo)/n / scale, plus the rounding slack
    and the grid of the secure Laplace."""
    data = dp.VectorDomain(dp.AtomDomain(float))
    clamp = dp.t.make_clamp(data, SYM, (0.0, 10.0))
    resize = dp.t.make_resize(clamp.output_domain, clamp.output_metric, size=100, constant=5.0)
    mean = dp.t.make_mean(resize.output_domain, resize.output_metric)
    pipeline = clamp >> resize >> mean >> dp.m.make_laplace(mean.output_domain, mean.output_metric, scale=0.5)
    eps = pipeline.map(1)
    assert Fraction(1, 5) < eps < Fraction(1, 5) * (1 + Fraction(1, 10**6))
    released = pipeline(list(np.linspace(-5, 20, 150)))
    assert isinstance(released, float) and math.isfinite(released)
    var = dp.t.make_variance(resize.output_domain, resize.output_metric)
    assert (clamp >> resize >> var).map(1) == var.map(2)


def test_variance_squares_in_blocks_as_in_one_array() -> None:
    """Past one block of squares the variance is still fl(Σ fl(fl(x − m)²) / (n − ddof)), the sum exact."""
    n = (1 << 18) + 3
    values = np.random.default_rng(5).uniform(0.0, 1.0, n)
    values[-1] = 1e-300  # a tiny square in the last block
    var = dp.t.make_variance(
        dp.VectorDomain(dp.AtomDomain(float, bounds=(0.0, 1.0)), size=n), dp.ChangeOneDistance()
    )
    mean = min(max(float(exact_fraction_sum(values) / n), 0.0), 1.0)
    with np.errstate(all="ignore"):
        deviations = values - mean
        squares = deviations * deviations
    assert var(values) == float(exact_fraction_sum(squares) / (n - 1))
