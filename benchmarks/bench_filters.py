"""Per-query time of privacy filters and odometers, dpcompose beside OpenDP, as the query count grows.

Workload: Laplace queries (ε = 1/100 each) on one float, a budget large enough never to stop. For every
accountant the time of each block of 1,000 queries is measured, so a flat per-query cost shows as equal
numbers in the first and last block. Run: ``python benchmarks/bench_filters.py [--n 10000] [--full]``
(``pip install opendp`` for the peer; without ``--full`` OpenDP's filter stops at 3,000 queries, because
its per-query cost grows with the number of queries already answered).

Then the cost of one ledger charge by itself (bind once, then ``charge`` in a loop): ``MemoryLedger``, the
``SQLiteLedger`` of this checkout (hash-chained journal, rollback journal with ``synchronous=FULL``, every
charge in the main file when it returns), and the ``SQLiteLedger`` of the base commit before issue 11 (one
mutable row per key, WAL journal), loaded from git history when this is a git checkout. The SQLite numbers
are dominated by fsync and depend on the disk.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import dpcompose as dp

#: The commit whose ledger design issue 11 replaced (WAL journal, one mutable row per key).
BASE_COMMIT = "0d549ac"
#: What that design measured on the development machine (ext4 on a virtio disk, 2 cores), µs per charge,
#: printed when git history is not available.
BASE_RECORDED_US = 215.0

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


def _base_ledger_class() -> Any:
    """The base commit's SQLiteLedger, loaded from git history (None if unavailable)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        source = subprocess.run(
            ["git", "-C", root, "show", f"{BASE_COMMIT}:src/dpcompose/combinators/_ledger.py"],
            capture_output=True, check=True, text=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None
    spec = importlib.util.spec_from_loader("_dpcompose_base_ledger", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    exec(compile(source, f"{BASE_COMMIT}:_ledger.py", "exec"), module.__dict__)
    return module.SQLiteLedger


def _charge_cost(ledger: Any, n: int) -> float:
    """Seconds per charge of ``ledger`` (bound once), over ``n`` charges."""
    ledger.bind("filter", "bench")

    def update(e: Any) -> Any:
        total = e.state[0] if e.state else Fraction(0)
        return e.replace(rule="basic", state=(total + Fraction(1, 100),), queries=e.queries + 1)

    for _ in range(min(50, n)):  # warm up (connection, page cache)
        ledger.charge(update)
    t0 = time.perf_counter()
    for _ in range(n):
        ledger.charge(update)
    return (time.perf_counter() - t0) / n


def ledger_table(n: int) -> None:
    """Print the cost per charge of each ledger, with ratios."""
    folder = tempfile.mkdtemp()
    memory = _charge_cost(dp.MemoryLedger(), max(n, 10_000))
    rows: list[tuple[str, float, str]] = [("MemoryLedger", memory, "measured")]
    base_cls = _base_ledger_class()
    if base_cls is not None:
        base = base_cls(os.path.join(folder, "base.db"), "bench")
        rows.append((f"SQLiteLedger before ({BASE_COMMIT}, WAL)", _charge_cost(base, n), "measured"))
        base.close()
    else:
        rows.append((f"SQLiteLedger before ({BASE_COMMIT}, WAL)", BASE_RECORDED_US * 1e-6, "recorded"))
    after = dp.SQLiteLedger(os.path.join(folder, "after.db"), "bench")
    rows.append(("SQLiteLedger after (chained, TRUNCATE)", _charge_cost(after, n), "measured"))
    after.close()
    before_s = rows[1][1]
    print()
    print(f"{'ledger':40s} {'charges':>8s} {'µs/charge':>10s} {'× memory':>9s} {'× before':>9s}  source")
    for name, secs, source in rows:
        count = max(n, 10_000) if name == "MemoryLedger" else n
        ratios = f"{secs / memory:9.0f} {secs / before_s:9.2f}"
        print(f"{name:40s} {count:8d} {secs * 1e6:10.1f} {ratios}  {source}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=10_000, help="queries per accountant")
    parser.add_argument("--full", action="store_true", help="run OpenDP's filter for all n queries")
    parser.add_argument("--charges", type=int, default=2_000, help="charges per SQLite ledger")
    parser.add_argument("--ledgers-only", action="store_true", help="only the cost-per-charge table")
    args = parser.parse_args()
    if args.ledgers_only:
        ledger_table(args.charges)
        return
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
    ledger_table(args.charges)


if __name__ == "__main__":
    main()
