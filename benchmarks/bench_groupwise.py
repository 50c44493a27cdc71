"""Median of means at user level: dpcompose's make_groupwise against a hand-written step, same run.

The task (issue 36, item 3): people with several visits each, the mean visit length per visit, ε = 1 per
person. Median of means: hash the people into k buckets, take each bucket's mean visit length, release
the median of the k means with a private quantile (exponential mechanism over candidates). One person
moves one bucket mean.

* dpcompose: ``make_groupwise(SymmetricIdDistance, buckets=k)`` with a resized mean per part, chained into
  ``make_private_quantile`` — one checked pipeline, ``m.map(1)`` is the library's.
* OpenDP 0.16 has no groupwise step: the bucket means are computed by hand in numpy (outside any checked
  pipeline: the step issue 36 found hand-written), then OpenDP's ``make_private_quantile`` over the k means,
  its scale set for ε = 1 at one changed mean (symmetric distance 2 on the sized vector).
* numpy: the same hand-written bucket means alone, for the time of the step.
* the bucket step alone: ``make_groupwise`` with ``make_count`` per part (routing each visit to its
  person's bucket, nothing else) against numpy's ``bincount`` of the hand-made buckets.

Run: ``PYTHONPATH=src /work/venv-opendp/bin/python benchmarks/bench_groupwise.py``.
"""

from __future__ import annotations

import time
from fractions import Fraction
from typing import Any

import numpy as np
import opendp.prelude as odp

import dpcompose as dp
from dpcompose.transformations._groupwise import worst_spread

odp.enable_features("contrib")

N_ROWS = 100_000
N_PEOPLE = 20_000
K = 256
PART_SIZE = 300  # each part resized to this many visits (about 390 per part here)
HI = 60.0
CANDIDATES = [c / 4 for c in range(int(HI * 4) + 1)]
REPEATS = 10


def data(seed: int) -> tuple[list[tuple[int, float]], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    people = rng.integers(0, N_PEOPLE, N_ROWS)
    minutes = np.minimum(rng.exponential(20.0, N_ROWS), HI)
    return list(zip(people.tolist(), minutes.tolist(), strict=True)), people, minutes


def dpcompose_pipeline() -> Any:
    sym = dp.SymmetricDistance()
    visits = dp.VectorDomain(dp.AtomDomain(tuple))
    col = dp.t.make_select_column(visits, sym, 1, dp.AtomDomain(float), 0.0)
    clamped = col >> dp.t.make_clamp(col.output_domain, sym, (0.0, HI))
    sized = clamped >> dp.t.make_resize(clamped.output_domain, sym, size=PART_SIZE, constant=HI / 2)
    part_mean = sized >> dp.t.make_mean(sized.output_domain, sym)
    means = dp.t.make_groupwise(
        visits, dp.SymmetricIdDistance(0), part_mean, by=0, buckets=K, bounds=(0.0, HI)
    )
    mom = means >> dp.m.make_private_quantile(
        means.output_domain, means.output_metric, CANDIDATES, alpha=0.5, scale=2.0
    )
    return means, mom


def bucket_counts() -> Any:
    visits = dp.VectorDomain(dp.AtomDomain(tuple))
    count = dp.t.make_count(visits, dp.SymmetricDistance())
    return dp.t.make_groupwise(visits, dp.SymmetricIdDistance(0), count, by=0, buckets=K, bounds=(0, N_ROWS))


def numpy_bucket_means(people: np.ndarray, minutes: np.ndarray) -> np.ndarray:
    buckets = people % K  # by hand: any fixed function of the person
    sums = np.bincount(buckets, weights=minutes, minlength=K)
    counts = np.bincount(buckets, minlength=K)
    return np.where(counts > 0, sums / np.maximum(counts, 1), HI / 2)


def opendp_quantile() -> Any:
    domain = odp.vector_domain(odp.atom_domain(T=float, nan=False), size=K)
    for scale in (1.0, 2.0, 4.0, 8.0):
        m = odp.m.make_private_quantile(
            domain, odp.symmetric_distance(), odp.max_divergence(), CANDIDATES, 0.5, scale
        )
        if m.map(2) <= 1.0:  # one changed mean: symmetric distance 2
            return m
    raise RuntimeError("no scale found")


def main() -> None:
    means, mom = dpcompose_pipeline()
    counts = bucket_counts()
    peer = opendp_quantile()
    print(f"median of means, user level: {N_ROWS:,} visits of {N_PEOPLE:,} people, k = {K}, ε = 1 per person")
    print(f"dpcompose map(1) = {mom.map(1)}; OpenDP quantile map(2) = {peer.map(2)}")
    t_gw, t_np, t_dp, t_od, t_cnt, t_bin = [], [], [], [], [], []
    err_dp, err_od = [], []
    for r in range(REPEATS):
        rows, people, minutes = data(r)
        truth = float(minutes.mean())
        t = time.perf_counter()
        means(rows)
        t_gw.append(time.perf_counter() - t)
        t = time.perf_counter()
        hand = numpy_bucket_means(people, minutes)
        t_np.append(time.perf_counter() - t)
        t = time.perf_counter()
        counts(rows)
        t_cnt.append(time.perf_counter() - t)
        t = time.perf_counter()
        np.bincount(people % K, minlength=K)
        t_bin.append(time.perf_counter() - t)
        t = time.perf_counter()
        release = mom(rows)
        t_dp.append(time.perf_counter() - t)
        t = time.perf_counter()
        peer_release = peer(hand.tolist())
        t_od.append(time.perf_counter() - t)
        err_dp.append(release - truth)
        err_od.append(peer_release - truth)
    rmse = lambda e: float(np.sqrt(np.mean(np.square(e))))  # noqa: E731
    print(f"{'':34}{'dpcompose':>12}{'OpenDP + numpy':>16}{'numpy step':>12}")
    print(f"{'bucket-means step, median s':34}{np.median(t_gw):12.3f}{'':>16}{np.median(t_np):12.4f}")
    print(f"{'bucket step alone (counts), s':34}{np.median(t_cnt):12.4f}{'':>16}{np.median(t_bin):12.4f}")
    print(f"{'whole release, median s':34}{np.median(t_dp):12.3f}{np.median(t_np) + np.median(t_od):16.4f}")
    print(f"{'RMSE vs true mean (minutes)':34}{rmse(err_dp):12.3f}{rmse(err_od):16.3f}")
    print(f"{'checked end to end':34}{'yes':>12}{'no (step by hand)':>18}")
    # the stability map's dynamic programme on a general g with large denominators (T = 256, 16 parts)
    rng = np.random.default_rng(2)
    wide = [Fraction(0)] + [
        Fraction(int(v), (int(v) % 97) * 2**50 + 1) for v in rng.integers(1, 2**40, size=256)
    ]
    t = time.perf_counter()
    worst_spread(wide, 16)
    print(f"{'worst_spread(T = 256, 16 parts), s':34}{time.perf_counter() - t:12.3f}")


if __name__ == "__main__":
    main()
