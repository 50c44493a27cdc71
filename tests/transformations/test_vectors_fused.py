"""``make_clip_l2 >> make_vector_sum`` fused (issue 34, speed and memory): the chain clips block by block
into a reused buffer and adds each block into the summation tree. Its result must be the same bits as the
clip's output summed by the sum, for every input, with the speed switch on or off; it holds no full-size
temporary, and neither does the domain check before it."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpcompose as dp
from dpcompose.core._stages import Composed
from dpcompose.transformations import _vector_speed
from dpcompose.transformations._vector_speed import sum_block_rows, vector_speedups
from dpcompose.transformations._vectors import ClippedSum

KINDS = {  # row scales: clipped, kept, zero, subnormal, squares underflow, beyond 2**511 (rescaled), NaN
    "normal": 1.0,
    "small": 1e-3,
    "zero": 0.0,
    "subnormal": 1e-310,
    "underflow": 1e-200,
    "huge": 1e300,
    "max": 1.7e308,
    "nan": np.nan,
}


def _data(n: int, d: int, kinds: list[str], seed: int, layout: str) -> np.ndarray:
    rng = np.random.default_rng(seed)
    scale = np.array([KINDS[kinds[i % len(kinds)]] for i in range(n)]).reshape(n, 1)
    x = rng.uniform(-1.0, 1.0, (n, d if layout != "strided" else 2 * d)) * (scale if n else 1.0)
    if layout == "strided":
        x = x[:, ::2]
    elif layout == "fortran":
        x = np.asfortranarray(x)
    x[np.isnan(x).any(axis=1) & (rng.random(n) < 0.5)] = np.nan  # NaN rows, some partly
    if n > 2 and kinds[0] in ("normal", "small"):  # a row on the unit sphere, up to rounding
        x[1] = x[0] / np.sqrt((x[0] ** 2).sum())
    return x


def _chain(d: int, p: int, norm: float, max_size: int) -> tuple[Any, Any, Any]:
    rows = dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float, nan=True), size=d))
    make = dp.t.make_clip_l2 if p == 2 else dp.t.make_clip_l1
    clip = make(rows, dp.SymmetricDistance(), norm=norm)
    total = dp.t.make_vector_sum(clip.output_domain, clip.output_metric, max_size=max_size)
    return clip, total, clip >> total


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _check_fused(
    n: int, d: int, kinds: list[str], seed: int, layout: str, p: int, norm: float, max_size: int, rows: int
) -> None:
    x = _data(n, d, kinds, seed, layout)
    clip, total, chain = _chain(d, p, norm, max_size)
    assert isinstance(chain.function, ClippedSum)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_vector_speed, "SUM_BLOCK_ENTRIES", rows * 64 * d)  # blocks of 64·rows rows
        for on in (True, False):
            with vector_speedups(on):
                fused, unfused = chain(x), total(clip(x))
            assert _same_bits(fused, unfused), (on, fused, unfused)


shapes = st.tuples(st.integers(0, 400), st.integers(1, 24))


@settings(max_examples=40)
@given(
    shape=shapes,
    kinds=st.lists(st.sampled_from(sorted(KINDS)), min_size=1, max_size=4),
    seed=st.integers(0, 2**32 - 1),
    layout=st.sampled_from(["c", "fortran", "strided"]),
    p=st.sampled_from([1, 2]),
    norm=st.sampled_from([1.0, 3.5, 2.0**-600, 1e300]),
    max_size=st.sampled_from([10**6, 100]),
    rows=st.integers(1, 3),
)
def test_fused_equals_unfused_bit_for_bit(
    shape: tuple[int, int],
    kinds: list[str],
    seed: int,
    layout: str,
    p: int,
    norm: float,
    max_size: int,
    rows: int,
) -> None:
    """Fused against unfused against the speed switch off, over shapes crossing block boundaries (blocks of
    64–192 rows), rows the fast clip leaves to the rescaling path (NaN, 1e300, 1.7e308), zero, subnormal
    and underflowing rows, a row exactly on the bound, bounds below 2**-479 (every row rescaled), L1, and
    more rows than the sum's bound (the exact sum)."""
    n, d = shape
    _check_fused(n, d, kinds, seed, layout, p, norm, max_size, rows)


@pytest.mark.parametrize(
    ("n", "d", "rows"),
    [(64 * 3, 5, 1), (64 * 3 + 1, 5, 1), (64 * 3 - 1, 5, 1), (1, 3, 1), (65, 1, 1), (640, 2, 2)],
)
def test_fused_at_block_boundaries(n: int, d: int, rows: int) -> None:
    _check_fused(n, d, ["normal", "huge", "zero", "nan"], n, "c", 2, 1.0, 10**6, rows)


@pytest.mark.slow
@settings(max_examples=1000)
@given(
    shape=st.tuples(st.integers(0, 3000), st.integers(1, 200)),
    kinds=st.lists(st.sampled_from(sorted(KINDS)), min_size=1, max_size=6),
    seed=st.integers(0, 2**32 - 1),
    layout=st.sampled_from(["c", "fortran", "strided"]),
    p=st.sampled_from([1, 2]),
    norm=st.sampled_from([1.0, 0.1, 2.0**-600, 1e300]),
    rows=st.integers(1, 5),
)
def test_fused_equals_unfused_thorough(
    shape: tuple[int, int], kinds: list[str], seed: int, layout: str, p: int, norm: float, rows: int
) -> None:
    _check_fused(*shape, kinds, seed, layout, p, norm, 10**6, rows)


def test_fused_default_blocks() -> None:
    """With the default block size: a dataset of several blocks (sum_block_rows(300) = 832 rows)."""
    x = _data(2000, 300, ["normal", "small", "huge"], 3, "c")
    clip, total, chain = _chain(300, 2, 1.0, 10**6)
    assert sum_block_rows(300) < 2000
    assert _same_bits(chain(x), total(clip(x)))


def _peak(run: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        run()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def test_fused_holds_no_full_size_array() -> None:
    """The chain's peak memory beyond its input is a few blocks (here under 1/4 of the input; the
    unfused chain holds a clipped copy of the input), and the domain check copies nothing: a NaN entry or
    a Fortran-ordered array does not make it build full-size masks or a C-ordered copy."""
    x = np.random.default_rng(0).standard_normal((4096, 512))
    rows = dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float, nan=True), size=512))
    clip = dp.t.make_clip_l2(rows, dp.SymmetricDistance(), norm=1.0)
    chain = clip >> dp.t.make_vector_sum(clip.output_domain, clip.output_metric, max_size=10**6)
    assert _peak(lambda: chain(x)) < x.nbytes / 4
    x[5, 7] = np.nan
    assert _peak(lambda: rows.check(x)) < x.nbytes / 8
    f = np.asfortranarray(x)
    assert _peak(lambda: rows.check(f)) < x.nbytes / 8
    assert not dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float), size=512)).member(f)


def test_nested_chains_fuse_and_explain_and_json_are_unchanged() -> None:
    """``(a >> clip) >> sum`` and ``clip >> (sum >> noise)`` fuse too; the records, explain and JSON are
    those of the parts."""
    d = 4
    rows = dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float), size=d))
    sym = dp.SymmetricDistance()
    pre = dp.t.make_map_rows(
        rows, sym, lambda r: np.asarray(r) * 2.0, rows.element_domain, default=np.zeros(d)
    )
    clip = dp.t.make_clip_l2(pre.output_domain, sym, norm=1.0)
    total = dp.t.make_vector_sum(clip.output_domain, sym, max_size=1000)
    left = (pre >> clip) >> total
    assert isinstance(left.function, Composed) and isinstance(left.function.parts[-1], ClippedSum)
    x = np.random.default_rng(1).standard_normal((200, d))
    assert _same_bits(left(x), total(clip(pre(x))))
    noisy = total >> dp.m.make_gaussian(total.output_domain, total.output_metric, scale=1.0)
    right = dp.t.make_clip_l2(rows, sym, norm=1.0) >> noisy
    assert isinstance(right.function, Composed) and isinstance(right.function.parts[0], ClippedSum)
    plain = dp.t.make_clip_l2(rows, sym, norm=1.0) >> total
    assert dp.from_json(dp.to_json(plain)).map(1) == plain.map(1)
    assert isinstance(dp.from_json(dp.to_json(plain)).function, ClippedSum)
    assert "clip_l2" in str(dp.explain(plain, 1)) and "vector_sum" in str(dp.explain(plain, 1))
