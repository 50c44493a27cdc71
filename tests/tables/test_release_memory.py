"""A query released again and again holds only what its caller still holds: the noisy vectors behind
``intervals(result)`` live as long as ``result`` does, no longer."""

from __future__ import annotations

import gc
import tracemalloc
import weakref
from typing import Any

import polars as pl

import dpcompose as dp

K = 256  # keys: each release makes two int64 vectors of K entries (4 KB) behind its frame


def _query() -> Any:
    df = pl.DataFrame({"k": list(range(K)) * 2, "x": [0.5] * (2 * K)})
    schema = {"k": dp.Column(int), "x": dp.Column(float, bounds=(0.0, 1.0))}
    ctx = dp.Context(df, schema, privacy_loss=1e6, split_evenly_over=1)
    return (
        ctx.query(privacy_loss=1.0)
        .group_by("k", keys=list(range(K)))
        .agg(dp.tables.count(), dp.tables.mean("x"))
    )


def test_a_released_frame_the_caller_dropped_is_not_kept_alive_by_its_query() -> None:
    q = _query()
    kept = q.release()
    dropped = [weakref.ref(q.release()) for _ in range(2)]
    gc.collect()
    assert [r() for r in dropped] == [None, None]
    assert q.intervals(kept).height == K  # a frame still held keeps its intervals


def test_reusing_a_query_does_not_grow_memory() -> None:
    q = _query()
    q.release()
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for _ in range(6):
            q.release()
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert grown < 2 * K * 8  # less than one release's vectors (6 releases held them all)
