"""How well one timed release of partition selection tells two neighbouring count mappings apart.

``make_laplace_threshold(scale=20, threshold=600)`` and ``make_gaussian_threshold`` (same parameters) on
``{"a": 2000}`` and ``{"a": 2000, "rare": 1}`` release ``{"a"}`` (practically always), and the privacy map
at their distance ``(1, 1, 1)`` is ε = 0.05, δ ≈ 5e-14 for Laplace. An attacker who sees one release and
its time can tell which mapping it came from with probability at most ``e^ε/(1 + e^ε) + δ`` (51.2 % here)
if the time reveals nothing beyond the release. Without ``max_keys`` the release draws noise for, and
reads, every key, so the second mapping takes longer; with ``max_keys=K`` both take the same steps.

For each mechanism, with and without ``max_keys``, the two mappings are released alternately (their order
swapped every other pair, after a warm-up) ``--runs`` times each, each release timed with
``time.perf_counter_ns`` around the whole call (``m(counts)``: the domain check included). Columns:

* ``AUC``: the Mann–Whitney statistic of the two samples of times, ``P[t(rare) > t(no rare)]`` (ties
  count ½): 0.5 when the times do not tell them apart; the target with ``max_keys`` is 0.45–0.55.
* ``guess``: the best accuracy of one timed run guessing the mapping from a cut on the time, over all
  cuts (the empirical best, so slightly optimistic: about +1 % at 3,000 runs even when nothing differs);
  ``allowed``: ``e^ε/(1 + e^ε) + δ`` from the mechanism's own map.
* ``median µs``: the median release time of each mapping.

Two more rows per mechanism, with the largest ``max_keys``: ``fn`` times ``m.function`` alone (the release
without the domain check that every ``Measurement`` call makes first, which reads each entry, about 1 µs
per entry); ``same`` times ``{"a": 2000}`` against an equal copy of itself, the noise floor of ``AUC`` and
``guess`` on this machine.

Run: ``python benchmarks/bench_selection_timing.py [--runs 3000] [--max-keys 16]``. Timing is noisy on a
shared machine: the AUC of identical work stays within a few hundredths of 0.5 at 3,000 runs.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import dpcompose as dp

COMMON = {"a": 2000}
WITH_RARE = {"a": 2000, "rare": 1}


def auc(slow: Sequence[int], fast: Sequence[int]) -> float:
    """The Mann–Whitney AUC ``P[s > f] + ½·P[s = f]`` of two samples (average ranks for ties)."""
    values = np.concatenate([np.asarray(slow, dtype=np.float64), np.asarray(fast, dtype=np.float64)])
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(values.size, dtype=np.float64)
    ranks[order] = np.arange(1, values.size + 1)
    sorted_values = values[order]
    start = 0
    while start < values.size:  # average the ranks of tied values
        end = start
        while end + 1 < values.size and sorted_values[end + 1] == sorted_values[start]:
            end += 1
        if end > start:
            ranks[order[start : end + 1]] = (start + end + 2) / 2
        start = end + 1
    n1, n2 = len(slow), len(fast)
    u = ranks[:n1].sum() - n1 * (n1 + 1) / 2
    return float(u / (n1 * n2))


def best_guess(a: Sequence[int], b: Sequence[int]) -> float:
    """The best accuracy of guessing the sample from one value by a cut (``≤ c`` says ``b``, or ``a``)."""
    xs = np.sort(np.asarray(a))
    ys = np.sort(np.asarray(b))
    cuts = np.unique(np.concatenate([xs, ys]))
    below_a = np.searchsorted(xs, cuts, side="right") / xs.size
    below_b = np.searchsorted(ys, cuts, side="right") / ys.size
    acc = (below_b + (1 - below_a)) / 2  # ≤ c guesses b, > c guesses a
    return float(max(acc.max(), (1 - acc).max()))


def time_pair(
    release: Callable[[Any], Any], runs: int, other: dict[str, int] = WITH_RARE, warmup: int = 300
) -> tuple[list[int], list[int]]:
    """``runs`` timed releases of ``COMMON`` and of ``other``, alternating, the order swapped every other
    pair."""
    for _ in range(warmup):
        release(COMMON)
        release(other)
    common: list[int] = []
    rare: list[int] = []
    clock = time.perf_counter_ns
    for i in range(runs):
        order = ((COMMON, common), (other, rare)) if i % 2 else ((other, rare), (COMMON, common))
        for counts, out in order:
            t0 = clock()
            release(counts)
            out.append(clock() - t0)
    return common, rare


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--runs", type=int, default=3000, help="timed releases of each mapping")
    parser.add_argument("--max-keys", type=int, nargs="+", default=[16], help="the max_keys to compare")
    parser.add_argument("--scale", type=float, default=20.0)
    parser.add_argument("--threshold", type=int, default=600)
    args = parser.parse_args()

    domain = dp.MapDomain(dp.AtomDomain(str), dp.AtomDomain(int))
    makers = {"laplace": dp.m.make_laplace_threshold, "gaussian": dp.m.make_gaussian_threshold}
    print(f"{args.runs} runs each; {COMMON} vs {WITH_RARE}; scale={args.scale}, threshold={args.threshold}")
    print(f"{'mechanism':<10} {'max_keys':>8} {'AUC':>6} {'guess':>6} {'allowed':>7} {'median µs':>17}")
    for name, make in makers.items():
        rows: list[tuple[int | None, str]] = [(k, "") for k in [None, *args.max_keys]]
        rows += [(max(args.max_keys), "fn"), (max(args.max_keys), "same")]
        for k, variant in rows:
            m = make(domain, dp.L01InfDistance(), scale=args.scale, threshold=args.threshold, max_keys=k)
            assert list(m(COMMON)) == list(m(WITH_RARE)) == ["a"]
            eps, delta = m.map((1, Fraction(1), Fraction(1)))
            allowed = math.exp(float(eps)) / (1 + math.exp(float(eps))) + float(delta)
            release = m.function if variant == "fn" else m
            other = dict(COMMON) if variant == "same" else WITH_RARE
            common, rare = time_pair(release, args.runs, other)
            medians = f"{np.median(common) / 1e3:7.1f} / {np.median(rare) / 1e3:7.1f}"
            label = f"{k} {variant}".strip()
            print(
                f"{name:<10} {label:>8} {auc(rare, common):6.3f} {best_guess(rare, common):6.3f} "
                f"{allowed:7.4f} {medians:>17}",
                flush=True,
            )


if __name__ == "__main__":
    main()
