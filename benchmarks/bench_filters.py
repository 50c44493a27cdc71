"""Per-query time of privacy filters and odometers, dpcompose beside OpenDP, as the query count grows.

Workload: Laplace queries (ε = 1/100 each) on one float, a budget large enough never to stop. For every
accountant the time of each block of 1,000 queries is measured, so a flat per-query cost shows as equal
numbers in the first and last block. Run: ``python benchmarks/bench_filters.py [--n 10000] [--full]``
(``pip install opendp`` for the peer; without ``--full`` OpenDP's filter stops at 3,000 queries, because
its per-query cost grows with the number of queries already answered).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

import dpcompose as dp

BLOCK = 1000


def _blocks(step: Callable[[], Any], n: int) -> list[float]:
    """Seconds per query in each block of BLOCK queries."""
    out = []
    for _ in range(n // BLOCK):
        t0 = time.perf_counter()
        for _ in range(BLOCK):
            step()
        out.append((time.perf_counter() - t0) / BLOCK)
    return out


def ours(kind: str, store: str, n: int) -> list[float]:
    floats = dp.AtomDomain(float)
    lap = dp.m.make_laplace(floats, dp.AbsoluteDistance(), scale=100.0)
    ledger: Any = None
    if store == "sqlite":
        ledger = dp.SQLiteLedger(os.path.join(tempfile.mkdtemp(), "bench.db"), "bench")
    if kind == "filter":
        m = dp.make_privacy_filter(floats, dp.AbsoluteDistance(), dp.PureDP(), 1, 1e9, ledger=ledger)
    else:
        m = dp.make_odometer(floats, dp.AbsoluteDistance(), dp.PureDP(), 1, ledger=ledger)
    q = m(1.0)
    return _blocks(lambda: q(lap), n)


def opendp_peer(kind: str, n: int) -> list[float] | None:
    try:
        import opendp.prelude as odp  # benchmark-only peer
    except ImportError:
        return None
    odp.enable_features("contrib")
    dom, met = odp.atom_domain(T=float, nan=False), odp.absolute_distance(T=float)
    odo = odp.c.make_fully_adaptive_composition(dom, met, odp.max_divergence())
    meas = odp.c.make_privacy_filter(odo, d_in=1.0, d_out=1e9) if kind == "filter" else odo
    q = meas(1.0)
    lap = odp.m.make_laplace(dom, met, scale=100.0)
    return _blocks(lambda: q(lap), n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=10_000, help="queries per accountant")
    parser.add_argument("--full", action="store_true", help="run OpenDP's filter for all n queries")
    args = parser.parse_args()
    n = args.n
    rows: list[tuple[str, list[float] | None]] = [
        ("dpcompose filter, memory", ours("filter", "memory", n)),
        ("dpcompose filter, SQLite", ours("filter", "sqlite", n)),
        ("dpcompose odometer, memory", ours("odometer", "memory", n)),
        ("dpcompose odometer, SQLite", ours("odometer", "sqlite", n)),
        ("OpenDP privacy filter", opendp_peer("filter", n if args.full else min(n, 3 * BLOCK))),
        ("OpenDP fully adaptive odometer", opendp_peer("odometer", n)),
    ]
    base = rows[0][1]
    assert base is not None
    base_mean = sum(base) / len(base)
    print(f"{'accountant':34s} {'queries':>8s} {'µs/query first 1k':>18s} {'µs/query last 1k':>17s} "
          f"{'mean µs':>9s} {'× ours (memory)':>15s}")  # fmt: skip
    for name, blocks in rows:
        if blocks is None:
            print(f"{name:34s} (not installed: pip install opendp)")
            continue
        mean = sum(blocks) / len(blocks)
        print(
            f"{name:34s} {len(blocks) * BLOCK:8d} {blocks[0] * 1e6:18.1f} {blocks[-1] * 1e6:17.1f} "
            f"{mean * 1e6:9.1f} {mean / base_mean:15.2f}"
        )


if __name__ == "__main__":
    main()
