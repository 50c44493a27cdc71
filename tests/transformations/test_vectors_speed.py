"""Clipping and vector sums in blocks (issue 34, speed and memory): the same bits as the row-by-row
formulas, no full-size temporaries beyond the output, and exact column sums vectorised over the columns."""

from __future__ import annotations

import math
import tracemalloc
from fractions import Fraction

import numpy as np
import pytest

import dpcompose as dp
from dpcompose.accounting import float_up
from dpcompose.core._norm_domain import MARGIN, certainly_within, scaled_norms
from dpcompose.transformations._column_sums import column_sums
from dpcompose.transformations._sum import SUM_SCALE, exact_float_sum
from dpcompose.transformations._vector_speed import tree_depth, vector_speedups
from dpcompose.transformations._vectors import clip_rows


def _reference_clip(rows: np.ndarray, p: int, bound: float) -> np.ndarray:
    """clip_rows' formula on the whole array at once (ldexp, full-size temporaries)."""
    nan_rows = np.isnan(rows).any(axis=1)
    x = np.where(nan_rows[:, None], 0.0, rows)
    s, y, e = scaled_norms(x, p)
    keep = certainly_within(s, e, bound)
    mantissa, exponent = math.frexp(bound)
    with np.errstate(under="ignore", over="ignore", divide="ignore", invalid="ignore"):
        h = mantissa / np.where(keep, 1.0, s)
        h *= 1.0 - MARGIN
        scaled = np.ldexp(y * h[:, None], exponent)
    return np.where(keep[:, None], x, scaled)


def _cases() -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    out = []
    for n, d in [(1000, 7), (300, 1), (40, 3000), (0, 3), (5, 600_000)]:
        scale = rng.choice([1e-310, 1e-200, 1e-5, 1.0, 1e5, 1e200, 1e300], size=(n, 1))
        x = rng.standard_normal((n, d)) * scale
        if n > 10:
            x[rng.integers(0, n, 5), rng.integers(0, d, 5)] = np.nan
            x[3], x[4] = 0.0, -0.0
        out.append(x)
    return out


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("bound", [1.0, 2.0**-900, 3.7, 1e300, 1.7976931348623157e308])
def test_clip_rows_gives_the_bits_of_the_whole_array_formula(p: int, bound: float) -> None:
    for x in _cases():
        got, want = clip_rows(x, p, bound), _reference_clip(x, p, bound)
        assert got.shape == want.shape and np.array_equal(got.view(np.int64), want.view(np.int64))


def test_clip_rows_keeps_no_full_size_temporary() -> None:
    # before, |x|, x·2**-E, its squares, y·h, ldexp and the final where were each a full-size array
    x = np.random.default_rng(1).standard_normal((2000, 2000)) * 0.05
    tracemalloc.start()
    try:
        clip_rows(x, 2, 1.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1.6 * x.nbytes  # the output, one block of work space and small per-row arrays


def _exact(x: np.ndarray, saturation: int) -> np.ndarray:
    return np.array([exact_float_sum(np.ascontiguousarray(x[:, j]), saturation) for j in range(x.shape[1])])


def test_column_sums_are_the_exact_sums_rounded_once() -> None:
    rng = np.random.default_rng(3)
    for trial in range(120):
        n = int(rng.choice([1, 2, 3, 17, 1000, 70_000 if trial % 20 == 0 else 900]))
        d = int(rng.integers(1, 12))
        x = rng.standard_normal((n, d)) * rng.choice([1e-310, 1e-300, 1e-8, 1.0, 1e150, 1e300], size=(1, d))
        kind = trial % 6
        if kind == 1:
            x[:, 0] = 0.0
        elif kind == 2:
            x = np.round(x * 8) / 8
        elif kind == 3:
            x = np.concatenate([x, -x[::-1]])  # sums exactly 0
        elif kind == 4 and n > 1:
            x[0], x[-1] = 1e16, -1e16
        elif kind == 5:
            x = rng.choice([0.1, -0.1, 0.3, -0.2, 5e-324], size=x.shape)
        top = float(np.abs(x).max()) or 1.0
        saturation = int(Fraction(float_up(Fraction(x.shape[0]) * Fraction(top))) * SUM_SCALE)
        for sat in (saturation, saturation // 3 + 1):  # (the second clamps some columns)
            got, want = column_sums(x, sat), _exact(x, sat)
            assert np.array_equal(got.view(np.int64), want.view(np.int64)), (trial, got, want)


def test_column_sums_outside_the_domain_read_as_before() -> None:
    # NaN and ±inf are no ball's members; such columns still get what exact_float_sum gives them
    x = np.array([[1.0, np.nan, np.inf, 0.0, -np.inf], [2.0, 1.0, 1.0, 0.0, 3.0]])
    with np.errstate(invalid="ignore"):
        got, want = column_sums(x, 1 << 1200), _exact(x, 1 << 1200)
    assert np.array_equal(got.view(np.int64), want.view(np.int64))


def test_column_sums_of_nothing_and_of_ties() -> None:
    assert column_sums(np.zeros((0, 4)), 1 << 1200).tolist() == [0.0] * 4
    # 2**53 + 1 is a tie between two floats: ties to even, as exact_float_sum
    x = np.array([[2.0**53, 2.0**53 + 2], [1.0, 1.0]])
    assert column_sums(x, 1 << 1200).tolist() == _exact(x, 1 << 1200).tolist() == [2.0**53, 2.0**53 + 4]


def test_vector_sum_keeps_no_transposed_copy() -> None:
    # before, the rows were transposed into a full-size copy and summed one column at a time
    x = np.random.default_rng(2).standard_normal((4000, 2000)) * 1e-3
    rows = dp.VectorDomain(dp.NormBallDomain(size=2000, norm=1.0, p=2))
    total = dp.t.make_vector_sum(rows, dp.SymmetricDistance(), max_size=10**6)
    want = _exact(x, int(Fraction(float_up(Fraction(10**6))) * SUM_SCALE))
    for fast in (False, True):
        with vector_speedups(fast):
            tracemalloc.start()
            try:
                got = total.function(x)
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
        assert peak < 0.6 * x.nbytes
        if not fast:  # the exact sum, rounded once
            assert np.array_equal(got, want)
        else:  # the float sum: within γ_t·Σ|x| of the exact sum, per column (t = tree_depth(n))
            err = np.abs(got - want) - 0.5 * np.spacing(np.abs(want))  # (want is the exact sum rounded)
            allowed = float(tree_depth(4000)) * 2.0**-52 * np.abs(x).sum(axis=0)
            assert (err <= allowed).all()
