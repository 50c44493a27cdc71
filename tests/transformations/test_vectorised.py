"""make_clamp, make_sum and make_count on numpy data: vectorised, exact, and never a per-record Python loop.

The exactness tests compare against Python's exact integers and Fractions; the "no Python loop" tests
feed an array whose ``__iter__`` raises (a per-record loop over it would fail), and the memory test
bounds the peak traced allocation of a float sum (a Python list of the records would take 4× the array).
"""

from __future__ import annotations

import contextlib
import math
import tracemalloc
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpcompose as dp
from dpcompose.transformations import _sum
from dpcompose.transformations._sum import exact_float_sum

SYM, CHG = dp.SymmetricDistance(), dp.ChangeOneDistance()


class NoIter(np.ndarray):
    """An array that refuses Python iteration: only vectorised code can read it."""

    def __iter__(self) -> Any:
        raise AssertionError("iterated record by record in Python")


def no_iter(values: Any, dtype: Any) -> Any:
    return np.asarray(values, dtype=dtype).view(NoIter)


# --- clamp -------------------------------------------------------------------------------------------


def test_int_clamp_is_an_int64_array_for_every_integer_input() -> None:
    t = dp.t.make_clamp(dp.VectorDomain(dp.AtomDomain(int)), SYM, (-5, 9))
    cases: list[tuple[Any, list[int]]] = [
        ([-3, 12, 2**70, -(2**80), 4], [-3, 9, 9, -5, 4]),
        (np.array([2**64 - 1, 3, 2**63], dtype=np.uint64), [9, 3, 9]),
        (np.array([-100, 3, 127], dtype=np.int8), [-5, 3, 9]),
        (np.array([-(2**63), 2**63 - 1], dtype=np.int64), [-5, 9]),
        (np.array([250], dtype=np.uint8), [9]),
        ([], []),
    ]
    for data, expected in cases:
        out = t(data)
        assert isinstance(out, np.ndarray) and out.dtype == np.int64, (data, out)
        assert out.tolist() == expected
    negative = dp.t.make_clamp(dp.VectorDomain(dp.AtomDomain(int)), SYM, (-9, -2))
    assert negative(np.array([0, 2**64 - 1], dtype=np.uint64)).tolist() == [-2, -2]
    assert t(no_iter([1, 20], np.int64)).tolist() == [1, 9]


def test_int_clamp_beyond_int64_bounds_stays_exact() -> None:
    t = dp.t.make_clamp(dp.VectorDomain(dp.AtomDomain(int)), SYM, (-(2**70), 2**70))
    assert t([2**80, -(2**90), 3]) == [2**70, -(2**70), 3]
    assert t(np.array([1, -9], dtype=np.int64)) == [1, -9]


@given(st.lists(st.integers(-(2**64), 2**64), max_size=20), st.integers(-50, 50), st.integers(0, 60))
def test_int_clamp_matches_python(data: list[int], lo: int, width: int) -> None:
    t = dp.t.make_clamp(dp.VectorDomain(dp.AtomDomain(int)), SYM, (lo, lo + width))
    assert t(data).tolist() == [min(max(x, lo), lo + width) for x in data]


# --- integer sums ------------------------------------------------------------------------------------


def test_int_sum_does_not_loop_in_python() -> None:
    dom = dp.VectorDomain(dp.AtomDomain(int, bounds=(0, 10)))
    assert dp.t.make_sum(dom, SYM)(no_iter(np.arange(11), np.int64)) == 55


@given(st.lists(st.integers(-(2**62), 2**62), max_size=40))
def test_int_sum_split_path_is_exact(data: list[int]) -> None:
    """Bounds of 2**62 leave fewer than 2**16 records per int64 np.sum: the 32-bit halves path."""
    dom = dp.VectorDomain(dp.AtomDomain(int, bounds=(-(2**62), 2**62)))
    s = dp.t.make_sum(dom, SYM)
    assert s(np.array(data, dtype=np.int64)) == sum(data) == s(data)


def test_int_sum_paths_are_exact_across_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(7)
    # chunked np.sum: 2**47 allows exactly 2**16 records per chunk; 3 chunks' worth of maximal records
    top = 2**47
    dom = dp.VectorDomain(dp.AtomDomain(int, bounds=(-top, top)))
    data = np.full(3 * 2**16 + 5, top, dtype=np.int64)
    data[::3] = -top + rng.integers(0, 1000, data[::3].size)
    assert dp.t.make_sum(dom, SYM)(data) == sum(data.tolist())
    # the split path over several chunks (chunk size lowered so the test stays small)
    monkeypatch.setattr(_sum, "SPLIT_CHUNK", 7)
    big = 2**63 - 1
    dom = dp.VectorDomain(dp.AtomDomain(int, bounds=(-big, big)))
    data = rng.integers(-big, big, 50, dtype=np.int64, endpoint=True)
    data[:5] = big
    assert dp.t.make_sum(dom, SYM)(data) == sum(data.tolist())


def test_int_sum_beyond_int64_bounds_is_exact() -> None:
    dom = dp.VectorDomain(dp.AtomDomain(int, bounds=(0, 2**70)))
    s = dp.t.make_sum(dom, SYM)
    assert s([2**70, 2**70, 1]) == 2**71 + 1
    assert s(np.array([2**63 - 1, 2**63 - 1], dtype=np.int64)) == 2**64 - 2
    assert s(np.array([2**64 - 1], dtype=np.uint64)) == 2**64 - 1


def test_unsigned_and_narrow_int_arrays_sum_exactly() -> None:
    dom = dp.VectorDomain(dp.AtomDomain(int, bounds=(0, 2**63 - 1)))
    s = dp.t.make_sum(dom, SYM)
    assert s(np.array([2**63 - 1] * 3, dtype=np.uint64)) == 3 * (2**63 - 1)
    assert s(np.array([200, 100], dtype=np.uint8)) == 300


# --- float sums --------------------------------------------------------------------------------------

finite = st.floats(allow_nan=False, allow_infinity=False)
edges = st.sampled_from([5e-324, -5e-324, 2.2250738585072014e-308, 1e308, -1e308, 0.1, -0.0, 2.0**-1074])


@given(st.lists(st.one_of(finite, edges), max_size=30))
def test_exact_float_sum_is_the_correctly_rounded_exact_sum(values: list[float]) -> None:
    exact = sum((Fraction(v) for v in values), Fraction(0))
    limit = Fraction(1.7e308)
    clamped = min(max(exact, -limit), limit)
    got = exact_float_sum(np.array(values, dtype=np.float64), int(limit * 2**1127))
    assert got == float(clamped)  # float(Fraction) rounds to nearest, ties to even
    if abs(exact) < limit:
        with contextlib.suppress(OverflowError):  # fsum overflows on some in-range sums; ours does not
            assert got == math.fsum(values)


def test_exact_float_sum_has_no_intermediate_overflow() -> None:
    values = [1e308, 1e308, -1e308]
    with pytest.raises(OverflowError):
        math.fsum(values)
    assert exact_float_sum(np.array(values), 1 << 2200) == 1e308


def test_exact_float_sum_across_chunks_and_folds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_sum, "FLOAT_CHUNK", 5)
    monkeypatch.setattr(_sum, "FOLD_EVERY", 3)
    rng = np.random.default_rng(3)
    values = rng.normal(size=101) * np.exp2(rng.integers(-1070, 1000, 101))
    expected = float(sum((Fraction(v) for v in values.tolist()), Fraction(0)))
    assert exact_float_sum(values, 1 << 2200) == expected == math.fsum(values.tolist())


def test_the_bins_are_folded_even_when_the_fold_falls_on_window_only_chunks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Chunks alternate between one with tail values and one inside its window: the int64 bins must still
    be folded after every FOLD_EVERY chunks that added to them (else they grow without bound)."""
    monkeypatch.setattr(_sum, "FLOAT_CHUNK", 4)
    monkeypatch.setattr(_sum, "FOLD_EVERY", 2)
    folds: list[int] = []
    real_fold = _sum.fold_bins

    def counting_fold(high: Any, low: Any) -> int:
        folds.append(1)
        return real_fold(high, low)

    monkeypatch.setattr(_sum, "fold_bins", counting_fold)
    tail_chunk, window_chunk = [1.0, 2.0**-40, 2.0**-41, 3.0], [1.0, 1.5, 1.25, 1.75]
    values = np.array((tail_chunk + window_chunk) * 50)
    expected = sum((Fraction(v) for v in values.tolist()), Fraction(0))
    assert Fraction(_sum.exact_float_total(values), 2**1127) == expected
    assert len(folds) >= 50 // 2  # 50 chunks added to the bins: a fold after every second one


@st.composite
def _window_chunks(draw: Any) -> np.ndarray[Any, Any]:
    """Values whose exponents sit at, just inside and just outside a chunk's window (16 below its top),
    with full 53-bit mantissas, both signs, subnormals and zeros."""
    top = draw(st.integers(-1074, 1023))
    offsets = st.sampled_from([0, 1, 15, 16, 17, 18, 40, 60, 2000])
    values = []
    for _ in range(draw(st.integers(1, 24))):
        mantissa = draw(st.integers(2**52, 2**53 - 1)) * draw(st.sampled_from([1, -1]))
        exponent = max(top - draw(offsets), -1074 - 52)
        values.append(math.ldexp(mantissa, exponent - 52) if exponent + 52 > -1126 else 0.0)
    values += draw(st.lists(st.sampled_from([0.0, -0.0, 5e-324, -(2.0**-1060)]), max_size=3))
    with np.errstate(over="ignore"):
        array = np.array(values, dtype=np.float64)
    return array[np.isfinite(array)]


@settings(max_examples=50, deadline=None)
@given(_window_chunks(), st.sampled_from([1, 3, 1 << 16]))
def test_exact_float_total_in_and_out_of_the_window(values: np.ndarray[Any, Any], chunk: int) -> None:
    """The window (aligned integer halves) and the tail (exponent bins) give the exact total together."""
    total = _sum.exact_float_total(values)
    assert Fraction(total, _sum.SUM_SCALE) == sum((Fraction(v) for v in values.tolist()), Fraction(0))
    original = _sum.FLOAT_CHUNK
    try:
        _sum.FLOAT_CHUNK = chunk
        assert _sum.exact_float_total(values) == total
    finally:
        _sum.FLOAT_CHUNK = original


def test_float_sum_accepts_every_member_representation() -> None:
    dom = dp.VectorDomain(dp.AtomDomain(float, bounds=(-(2.0**60), 2.0**60)))
    s = dp.t.make_sum(dom, SYM, max_size=10)
    assert s([2**60, 1, 0.5]) == s(np.array([2**60, 1, 0.5])) == 2.0**60 + 1.5
    assert s(np.array([3, 4], dtype=np.int64)) == 7.0
    assert s(np.array([0.5, 0.25], dtype=np.float32)) == 0.75
    assert s([]) == 0.0


def test_float_sum_builds_no_python_list() -> None:
    """A list of 10**6 Python floats takes about 32 MB (4× the 8 MB array); the exact sum works in
    chunks, so its peak traced memory stays far below the array itself."""
    n = 10**6
    data = np.random.default_rng(0).uniform(-1.0, 1.0, n)
    s = dp.t.make_sum(dp.VectorDomain(dp.AtomDomain(float, bounds=(-1.0, 1.0))), SYM, max_size=n)
    tracemalloc.start()
    try:
        total = s.function(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total == math.fsum(data.tolist())
    assert peak < data.nbytes, peak


def test_float_sum_refuses_a_nan_domain() -> None:
    """A NaN record would make the sum NaN, at no bounded distance from a number: refused when built."""
    dom = dp.VectorDomain(dp.AtomDomain(float, bounds=(0.0, 1.0), nan=True))
    with pytest.raises(dp.DomainMismatch, match="NaN"):
        dp.t.make_sum(dom, SYM, max_size=3)


@given(
    st.lists(st.floats(-1e300, 1e300), min_size=1, max_size=12),
    st.integers(0, 11),
    st.floats(-1e300, 1e300),
)
def test_saturated_huge_float_sum_keeps_its_sensitivity(data: list[float], i: int, new: float) -> None:
    dom = dp.VectorDomain(dp.AtomDomain(float, bounds=(-1e300, 1e300)))
    s = dp.t.make_sum(dom, CHG, max_size=5)
    other = list(data)
    other[i % len(data)] = new
    assert abs(Fraction(s(data)) - Fraction(s(other))) <= s.map(1)


def test_count_reads_no_record() -> None:
    count = dp.t.make_count(dp.VectorDomain(dp.AtomDomain(int)), SYM)
    assert count(no_iter(np.arange(5), np.int64)) == 5
