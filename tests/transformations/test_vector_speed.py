"""The fast paths of L2 clipping and vector sums (issue 34, speed): the clip's exact norms stay inside the
ball, rows are clipped on their own at every memory alignment, the float sum's map covers what it computes
(neighbours from hypothesis and adversarial rows, exact rationals), and the switch. (Speed is measured in
benchmarks/bench_training.py, not here.)"""

from __future__ import annotations

import importlib
import math
import sys
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpcompose as dp
import dpcompose.transformations._vector_speed as speed_module
from dpcompose.accounting._exact import gamma_q
from dpcompose.transformations._column_sums import column_sums
from dpcompose.transformations._sum import SUM_SCALE
from dpcompose.transformations._vector_speed import (
    BLOCK_ENTRIES,
    LEAST_BOUND,
    fast_clip_l2,
    float_column_sums,
    row_square_sums,
    tree_depth,
    vector_speedups,
    vector_speedups_on,
)
from dpcompose.transformations._vectors import clip_rows

SYM, CHG = dp.SymmetricDistance(), dp.ChangeOneDistance()


def _square_norm(row: Any) -> Fraction:
    return sum((Fraction(v) ** 2 for v in np.asarray(row, dtype=np.float64).tolist()), Fraction(0))


def _distance(a: Any, b: Any, p: int) -> Fraction:
    """‖a − b‖_p exactly (p = 2: its square)."""
    diff = [
        Fraction(x) - Fraction(y) for x, y in zip(np.asarray(a).tolist(), np.asarray(b).tolist(), strict=True)
    ]
    return sum((abs(v) for v in diff), Fraction(0)) if p == 1 else sum((v * v for v in diff), Fraction(0))


# --- the clip -------------------------------------------------------------------------------------------


def _binade_rows(seed: int, n: int, d: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)) * np.ldexp(1.0, rng.integers(-1074, 960, size=(n, 1)))
    x[: n // 4] *= np.ldexp(1.0, rng.integers(-60, 60, size=(n // 4, d)))  # mixed magnitudes in a row
    x[1], x[2], x[3] = 0.0, 5e-324, sys.float_info.max / 2**11
    x[4, 0] = np.nan
    return x


@pytest.mark.parametrize("bound", [1.0, 1e-250, 2.0**-479, sys.float_info.max])
def test_fast_clip_keeps_every_row_inside_the_ball(bound: float) -> None:
    x = _binade_rows(11, 240, 9)
    out, rest = fast_clip_l2(x, bound)
    if bound < LEAST_BOUND:  # every row is left to the rescaling path
        assert rest.all()
        return
    assert rest[4] and rest[3]  # the NaN row and a norm beyond 2**511 are left to the rescaling path
    limit = Fraction(bound) ** 2
    done = np.flatnonzero(~rest)
    assert done.size > 150
    for i in done.tolist():
        assert _square_norm(out[i]) <= limit, (i, x[i])
        if _square_norm(x[i]) <= limit * Fraction(1 - 2**-19) ** 2:
            assert out[i].tolist() == x[i].tolist()  # well inside: unchanged
        elif _square_norm(x[i]) > limit:  # clipped: on the sphere up to the margin, direction kept
            assert _square_norm(out[i]) >= limit * Fraction(1 - 2**-18) ** 2
    # the chain completes the rest with the rescaling path
    clip = dp.t.make_clip_l2(
        dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float, nan=True), size=9)), SYM, bound
    )
    full = clip(x)
    assert np.array_equal(full[rest], clip_rows(x[rest], 2, bound))
    assert np.array_equal(full[~rest], out[~rest])
    assert clip.output_domain.member(full)


def test_fast_clip_on_the_sphere_and_in_the_margin() -> None:
    rows = np.array(
        [
            [0.6, 0.8],
            [0.8, 0.6],
            [1.0, 0.0],
            [0.7071067811865476, 0.7071067811865476],
            [0.7071067811865475, 0.7071067811865475],
            [1e-320, 1.0],
            [1.0000000000000002, 0.0],
            [1.0 - 2.0**-21, 0.0],
            [2.0**-500, 2.0**-520],
        ]
    )
    out, rest = fast_clip_l2(rows, 1.0)
    assert not rest.any()
    for row in out:
        assert _square_norm(row) <= 1
    assert out[-1].tolist() == rows[-1].tolist()  # a tiny row is kept as it is
    # below the least bound of the fast path the chain rescales every row
    small = dp.t.make_clip_l2(dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float), size=2)), SYM, 2.0**-480)
    assert LEAST_BOUND > 2.0**-480
    assert np.array_equal(small(rows), clip_rows(rows, 2, 2.0**-480))


_FAST_CLIP_CASES = given(
    st.integers(1, 5).flatmap(
        lambda d: st.lists(
            st.lists(
                st.one_of(
                    st.floats(allow_nan=False, allow_infinity=False),
                    st.floats(-1e-150, 1e-150),
                    st.sampled_from([5e-324, -2.2250738585072014e-308, 1e154, -1e-162, 0.6, 0.8]),
                ),
                min_size=d,
                max_size=d,
            ),
            min_size=1,
            max_size=4,
        )
    ),
    st.one_of(st.sampled_from([1.0, 2.0**-479, 1e-200, 1e300]), st.floats(1e-300, 1e300)),
)


def _check_fast_clip(rows: list[list[float]], bound: float) -> None:
    out, rest = fast_clip_l2(np.array(rows), bound)
    assert rest.all() or bound >= LEAST_BOUND  # (below it, every row is left to the rescaling path)
    for row, flagged in zip(out, rest, strict=True):
        if not flagged:
            assert _square_norm(row) <= Fraction(bound) ** 2


@settings(max_examples=15, deadline=None)
@_FAST_CLIP_CASES
def test_fast_clip_exact_norms_by_hypothesis(rows: list[list[float]], bound: float) -> None:
    _check_fast_clip(rows, bound)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None)
@_FAST_CLIP_CASES
def test_fast_clip_exact_norms_by_hypothesis_thoroughly(rows: list[list[float]], bound: float) -> None:
    _check_fast_clip(rows, bound)


def test_fast_clip_is_row_wise_at_every_alignment() -> None:
    """A row's result is the same wherever it sits in memory (a sum whose order depended on alignment
    would clip equal rows differently, and the clip would not be 1-stable)."""
    rng = np.random.default_rng(4)
    for d in (1, 3, 7, 8, 9, 31, 64, 129, 1001, 8193):
        row = rng.standard_normal(d) * rng.choice([1e-3, 1.0, 1e3], size=d)
        row *= 1.5 / math.sqrt(float(np.sum(row * row)))  # clipped at bound 1
        results: set[tuple[float, ...]] = set()
        for offset in range(8):
            raw = np.zeros(8 * 5 * d + 128, dtype=np.uint8)
            start = offset * 8 + (-raw.ctypes.data) % 64
            block = raw[start : start + 8 * 5 * d].view(np.float64).reshape(5, d)
            block[:] = row
            out, _ = fast_clip_l2(block, 1.0)
            results.update(tuple(r) for r in out.tolist())
        assert len(results) == 1, d


def _numpy_pairwise_sum(a: list[float], lo: int, n: int) -> float:
    """numpy's DOUBLE_pairwise_sum (numpy/_core/src/umath/loops_utils.h.src) in Python floats."""
    if n < 8:
        res = -0.0
        for i in range(n):
            res += a[lo + i]
        return res
    if n <= 128:
        r = a[lo : lo + 8]
        i = 8
        while i < n - n % 8:
            for k in range(8):
                r[k] += a[lo + i + k]
            i += 8
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for j in range(i, n):
            res += a[lo + j]
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return _numpy_pairwise_sum(a, lo, n2) + _numpy_pairwise_sum(a, lo + n2, n - n2)


def test_row_square_sums_follow_numpy_pairwise_order_whole_rows() -> None:
    """The premise of the clip's row-wise determinism: each row's sum of squares is numpy's pairwise sum of
    the whole row (the inner loop is never cut by the iterator's buffer, whatever its size), whatever the
    layout of the input and the row's position."""
    rng = np.random.default_rng(9)
    before = np.getbufsize()
    try:
        for bufsize in (16, 8192):
            np.setbufsize(bufsize)
            for d in (1, 7, 8, 9, 100, 129, 1001, 8193, 20000):
                n = 3 if d > 1000 else 9
                x = rng.standard_normal((n, d)) * rng.choice([1e-8, 1.0, 1e8], size=(n, d))
                for layout in (x, np.asfortranarray(x)):
                    q = np.empty(n)
                    row_square_sums(layout, np.empty((n, d)), q)
                    squares = (x * x).tolist()
                    assert q.tolist() == [0.0 + _numpy_pairwise_sum(r, 0, d) for r in squares], (bufsize, d)
    finally:
        np.setbufsize(before)


def test_clip_gives_a_row_the_same_result_in_every_dataset() -> None:
    """Equal rows clip to equal bits whatever the array they are in: its size, its position, its layout
    (C or Fortran order, a strided view), and a list."""
    rng = np.random.default_rng(6)
    for d in (1, 2, 5, 33, 300):
        rows_domain = dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float), size=d))
        clip = dp.t.make_clip_l2(rows_domain, SYM, 1.0)
        x = rng.standard_normal((9, d)) * rng.choice([1e-3, 1.0, 1e3], size=(9, d)) * 3.0 / math.sqrt(d)
        want = clip(x)
        assert np.array_equal(clip(np.asfortranarray(x)), want)
        assert np.array_equal(clip(np.repeat(x, 2, axis=0)[::2]), want)  # a strided view
        assert np.array_equal(clip(x.tolist()), want)
        lead = BLOCK_ENTRIES // d - 4  # (x's rows straddle the fast clip's first block boundary)
        assert np.array_equal(clip(np.vstack([rng.standard_normal((lead, d)), x]))[lead:], want)
        for i in range(9):
            assert np.array_equal(clip(x[i : i + 1]), want[i : i + 1])
            assert np.array_equal(clip(np.asfortranarray(np.vstack([x[i], x[0]])))[0], want[i])


# --- the float sum ---------------------------------------------------------------------------------------


def test_tree_depth_and_float_sums() -> None:
    assert [tree_depth(n) for n in (0, 1, 2, 64, 65, 4096, 4097)] == [0, 0, 1, 63, 64, 126, 127]
    assert all(tree_depth(n) <= tree_depth(n + 1) for n in range(1, 5000))
    rng = np.random.default_rng(8)
    for n, d in [(1, 3), (63, 2), (64, 5), (65, 1), (5000, 3), (4097, 4)]:
        x = rng.standard_normal((n, d)) * rng.choice([1e-300, 1.0, 1e300], size=(1, d))
        got = float_column_sums(x, sys.float_info.max)
        exact = [math.fsum(x[:, j]) for j in range(d)]
        bound = float(gamma_q(tree_depth(n))) * 1.01 * np.abs(x).sum(axis=0)
        assert (np.abs(got - exact) <= bound + 0.5 * np.spacing(np.abs(exact))).all()
        other = float_column_sums(np.asfortranarray(x), sys.float_info.max)  # (own order within a node)
        assert (np.abs(other - exact) <= bound + 0.5 * np.spacing(np.abs(exact))).all()


def _rows(p: int, scale: float) -> st.SearchStrategy[list[float]]:
    """Rows of norm <= ``scale`` in dimension 2, with large, tiny, mixed-sign and cancelling entries."""
    values = st.one_of(
        st.sampled_from([1.0, -1.0, 0.5, -0.5, 2.0**-53, -(2.0**-53), 1e-300, 5e-324, 0.0, 0.7, -0.7]),
        st.floats(-1.0, 1.0),
    )

    def fit(row: list[float]) -> list[float]:
        norm = math.fsum(abs(v) for v in row) if p == 1 else math.sqrt(math.fsum(v * v for v in row))
        fitted = row if norm <= 0.999 else [v / (norm * 1.001) for v in row]
        return [v * scale for v in fitted]

    return st.lists(values, min_size=2, max_size=2).map(fit)


@pytest.mark.parametrize(
    ("p", "scale", "examples"),
    [
        (1, 1.0, 10),
        (2, 1.0, 10),
        (2, 1e300, 4),  # huge rows (the sum's partial sums near the float range)
        (1, 2.0**-900, 4),  # tiny rows: subnormal entries and sums
        pytest.param(1, 1.0, 500, marks=pytest.mark.slow),
        pytest.param(2, 1.0, 500, marks=pytest.mark.slow),
        pytest.param(2, 1e300, 200, marks=pytest.mark.slow),
        pytest.param(2, 2.0**-900, 200, marks=pytest.mark.slow),
    ],
)
def test_float_sum_map_covers_neighbours_by_hypothesis(p: int, scale: float, examples: int) -> None:
    ball = dp.NormBallDomain(size=2, norm=scale, p=p)
    add = dp.t.make_vector_sum(dp.VectorDomain(ball), SYM, max_size=200)
    change = dp.t.make_vector_sum(dp.VectorDomain(ball), CHG, max_size=200)
    power = 1 if p == 1 else 2
    assert add.map(0) > 0  # the float sum is used (its term is in the map)

    rows = _rows(p, scale)

    @settings(max_examples=examples, deadline=None)
    @given(st.lists(rows, min_size=0, max_size=199), rows, st.randoms(use_true_random=False))
    def check(data: list[list[float]], extra: list[float], rnd: Any) -> None:
        data = [r for r in data if ball.member(r)]
        if not ball.member(extra):
            return
        out = add(data)
        shuffled = list(data)
        rnd.shuffle(shuffled)
        assert _distance(out, add(shuffled), p) <= add.map(0) ** power  # reordering: d_in = 0
        assert _distance(out, add([*shuffled, extra]), p) <= add.map(1) ** power
        if data:
            i = rnd.randrange(len(data))
            changed = [*data[:i], extra, *data[i + 1 :]]
            rnd.shuffle(changed)
            assert _distance(change(data), change(changed), p) <= change.map(1) ** power

    check()


def test_float_sum_map_covers_adversarial_cancellations() -> None:
    """Rows built to make the float sum lose the most: a large value and many tiny ones of both signs,
    in orders that round every tiny one away or keep them all."""
    ball = dp.NormBallDomain(size=2, norm=1.0, p=2)
    s = dp.t.make_vector_sum(dp.VectorDomain(ball), SYM, max_size=1000)
    tiny = 2.0**-54
    big = [[0.6, -0.7999999999999999]] + [[tiny, tiny]] * 900
    cases = [
        (big, list(reversed(big))),  # the tiny ones absorbed one by one, or summed first
        (big, [*big, [-0.6, 0.7999999999999999]]),
        ([[0.75, 0.5]] * 450 + [[-0.75, -0.5]] * 450, [[0.75, 0.5], [-0.75, -0.5]] * 450),
        ([[1.0, 0.0]] + [[3 * tiny / 4, 0.0]] * 900, [[3 * tiny / 4, 0.0]] * 900 + [[1.0, 0.0]]),
    ]
    moved = Fraction(0)
    for a, b in cases:
        d_in = abs(len(a) - len(b))  # (reorderings have d_in = 0)
        gap = _distance(s(np.array(a)), s(np.array(b)), 2)
        assert gap <= s.map(d_in) ** 2
        if d_in == 0:
            moved = max(moved, gap)
    assert moved > 0  # a reordering alone moves the float sum: the map's term at d_in = 0 is needed


def test_switch_keeps_the_maps_and_gives_the_exact_paths() -> None:
    x = np.random.default_rng(3).standard_normal((395, 5))
    rows = dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float), size=5))
    clip = dp.t.make_clip_l2(rows, SYM, 1.0)
    total = clip >> dp.t.make_vector_sum(clip.output_domain, SYM, max_size=1000)
    assert vector_speedups_on()
    fast, fast_map = total(x), total.map(1)
    with vector_speedups(False):
        assert not vector_speedups_on()
        slow, slow_map = total(x), total.map(1)
        assert np.array_equal(clip(x), clip_rows(x, 2, 1.0))
    assert vector_speedups_on() and fast_map == slow_map
    clipped = clip_rows(x, 2, 1.0)
    assert np.array_equal(slow, column_sums(clipped, 1000 * SUM_SCALE))
    assert _distance(fast, slow, 2) <= (fast_map - 1) ** 2  # both within the float term of each other


@pytest.mark.parametrize(
    ("value", "on"), [("0", False), ("off", False), (" No ", False), ("1", True), ("", True)]
)
def test_the_environment_variable_sets_the_switch(monkeypatch: Any, value: str, on: bool) -> None:
    monkeypatch.setenv(speed_module.SPEEDUPS_ENV, value)
    try:
        importlib.reload(speed_module)  # (the variable is read once, at import)
        assert vector_speedups_on() is on  # (the function imported before reads the same module state)
    finally:
        monkeypatch.delenv(speed_module.SPEEDUPS_ENV)
        importlib.reload(speed_module)
    assert vector_speedups_on()
