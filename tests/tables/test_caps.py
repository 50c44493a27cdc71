"""The caps by sorting (dpcompose.tables._caps) against a brute-force reference: the row cap keeps per
identifier the rows with the smallest keys, the group cap the rows of the groups with the smallest keys,
and never more than the cap, also when keys collide (keys drawn from a tiny range, so most do)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

import dpcompose
from dpcompose.tables._caps import first_groups_per_identifier, first_per_identifier


def _draw(seed: int, n: int, key_range: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 6, n)
    nulls = rng.random(n) < 0.2  # a second identity array: (code, null) pairs, as for a nullable column
    groups = rng.integers(0, 5, n).astype(np.uint32)
    keys = rng.integers(0, key_range, n, dtype=np.uint64, endpoint=True)
    return ids, nulls, groups, keys


@pytest.mark.parametrize("seed", range(12))
def test_row_cap_is_the_smallest_keys_per_identifier(seed: int) -> None:
    ids, nulls, _, keys = _draw(seed, 300, 2**64 - 1 if seed % 2 else 6)
    limit = 1 + seed % 4
    keep = first_per_identifier([ids, nulls], keys, limit)
    rows: dict[tuple[int, bool], list[int]] = defaultdict(list)
    for i, who in enumerate(zip(ids.tolist(), nulls.tolist(), strict=True)):
        rows[who].append(i)
    for members in rows.values():
        kept = [i for i in members if keep[i]]
        assert len(kept) == min(limit, len(members))
        cut = sorted(int(keys[i]) for i in members)[: len(kept)]
        assert sorted(int(keys[i]) for i in kept) == cut  # ties: any of the equal keys, never a larger one


@pytest.mark.parametrize("seed", range(12))
def test_group_cap_keeps_whole_groups_with_the_smallest_keys(seed: int) -> None:
    ids, nulls, groups, _ = _draw(seed, 300, 0)
    rng = random.Random(seed)
    collide = seed % 2 == 0  # group keys from a tiny range: distinct groups of one identifier share keys
    gkey = {(i, g): rng.randrange(3 if collide else 2**64) for i in range(6) for g in range(5)}
    keys = np.array([gkey[(i, g)] for i, g in zip(ids.tolist(), groups.tolist(), strict=True)], np.uint64)
    limit = 1 + seed % 3
    keep = first_groups_per_identifier([ids, nulls], [groups], keys, limit)
    by_id: dict[tuple[int, bool], dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    for r, (i, n, g) in enumerate(zip(ids.tolist(), nulls.tolist(), groups.tolist(), strict=True)):
        by_id[(i, n)][g].append(r)
    for who, found in by_id.items():
        kept = {g for g, rows in found.items() if keep[rows[0]]}
        for g, rows in found.items():
            assert all(keep[r] == (g in kept) for r in rows)  # whole groups
        assert len(kept) == min(limit, len(found))  # never more than the cap, also with collisions
        order = sorted(gkey[(who[0], g)] for g in found)
        assert sorted(gkey[(who[0], g)] for g in kept) == order[: len(kept)]


def test_empty() -> None:
    empty = np.zeros(0, dtype=np.uint64)
    assert first_per_identifier([empty], empty, 3).tolist() == []
    assert first_groups_per_identifier([empty], [empty], empty, 3).tolist() == []


MEMORY_PROBE = """
import gc, sys, numpy as np, polars as pl, dpcompose as dp
def make(n):
    rng = np.random.default_rng(12345)
    keys = np.array([f"S{i:02d}" for i in range(50)])
    return pl.DataFrame({"user": rng.integers(0, n // 5, n), "state": keys[rng.integers(0, 50, n)],
                         "x": rng.uniform(0.0, 100.0, n)})
def run(df):
    schema = dp.FrameDomain({"user": dp.Column(int), "state": dp.Column(str),
                             "x": dp.Column(float, bounds=(0.0, 100.0))})
    ctx = dp.Context(df, schema, privacy_unit=dp.unit_of(id="user", max_rows=5, max_groups=4),
                     privacy_loss=1.0, split_evenly_over=1)
    t = dp.tables
    keys = [f"S{i:02d}" for i in range(50)]
    return ctx.query().group_by("state", keys=keys).agg(t.count(), t.sum("x"), t.mean("x")).release()
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
run(make(1000))
df = make(1_000_000)
gc.collect()
open("/proc/self/clear_refs", "w").write("5")
base = rss()
run(df)
peak = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM")) / 1024
print((peak - base) / (df.estimated_size() / 2**20))
"""


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc for the peak RSS")
def test_query_peak_memory_is_within_four_frames() -> None:
    """Issue 35 item 7: a capped group-by query's peak RSS above the loaded frame is at most 4× the frame
    (10**6 rows, 2·10**5 users; benchmarks/bench_tables_lean.py measures it beside OpenDP)."""
    src = str(Path(dpcompose.__file__).resolve().parents[1])  # the dpcompose under test, not an installed one
    env = {**os.environ, "PYTHONPATH": src}
    out = subprocess.run(
        [sys.executable, "-c", MEMORY_PROBE], capture_output=True, text=True, check=True, env=env
    )
    assert float(out.stdout.strip().splitlines()[-1]) <= 4.0
