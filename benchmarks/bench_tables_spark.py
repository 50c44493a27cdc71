"""Spark scaling curve: the bench_tables.py query (per-user caps of 4 groups and 5 rows, group by ``state``
over 50 public keys, count and mean of ``x`` in [0, 100], ε = 1) through ``dp.Context`` on a local[2]
Spark session pinned to 127.0.0.1, for growing row counts, with the time per row.

The data are generated inside Spark from ``spark.range(n)`` (no driver-side copy), cached and counted
before the clock starts, so the time is the query's: the engine job (filter, caps by the specified hash,
grid, sums) plus the driver's noise. Each size runs in its own Spark session (its own JVM).

    python benchmarks/bench_tables_spark.py [--sizes 1000000 10000000] [--with-1e8] [--repeat 2]

10**8 rows is behind ``--with-1e8`` (tens of minutes on two cores, several GB of cache).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KEYS = [f"S{i:02d}" for i in range(50)]


def one(n: int, repeat: int, memory: str) -> None:
    sys.path.insert(0, str(ROOT / "src"))
    from pyspark.sql import functions as F

    import dpcompose as dp
    from dpcompose.tables._spark import local_session

    spark = local_session("dpcompose-bench", cores=2, shuffle_partitions=8, memory=memory)
    spark.sparkContext.setLogLevel("ERROR")
    ids = spark.range(n)
    users = max(1, n // 5)
    h1 = F.xxhash64(F.col("id"), F.lit(1))
    h2 = F.xxhash64(F.col("id"), F.lit(2))
    df = ids.select(
        F.pmod(h1, F.lit(users)).alias("user"),
        F.concat(F.lit("S"), F.lpad(F.pmod(h2, F.lit(50)).cast("string"), 2, "0")).alias("state"),
        (F.pmod(F.xxhash64(F.col("id"), F.lit(3)), F.lit(1 << 24)) * F.lit(100.0 / (1 << 24))).alias("x"),
    ).cache()
    t = time.perf_counter()
    assert df.count() == n
    load = time.perf_counter() - t
    schema = dp.FrameDomain(
        {"user": dp.Column(int), "state": dp.Column(str), "x": dp.Column(float, bounds=(0.0, 100.0))}
    )
    times = []
    for _ in range(repeat):
        ctx = dp.Context(
            df,
            schema,
            privacy_unit=dp.unit_of(id="user", max_rows=5, max_groups=4),
            privacy_loss=1.0,
            split_evenly_over=1,
        )
        q = ctx.query().group_by("state", keys=KEYS).agg(dp.tables.count(), dp.tables.mean("x"))
        t = time.perf_counter()
        out = q.release()
        times.append(time.perf_counter() - t)
        assert out.height == len(KEYS)
    spark.stop()
    best = min(times)
    print(json.dumps({"n": n, "best_s": best, "ns_per_row": best / n * 1e9, "load_s": load, "runs": times}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="*", default=[1_000_000, 3_000_000, 10_000_000])
    parser.add_argument("--with-1e8", action="store_true", help="also run 10**8 rows (slow, needs RAM)")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--memory", default="6g", help="driver JVM memory (local mode runs tasks there)")
    parser.add_argument("--one", type=int)
    args = parser.parse_args()
    if args.one:
        one(args.one, args.repeat, args.memory)
        return
    sizes = [*args.sizes, *([100_000_000] if args.with_1e8 else [])]
    print(f"{'rows':>11} {'best s':>8} {'ns/row':>8} {'load s':>8}")
    for n in sizes:
        cmd = [sys.executable, __file__, "--one", str(n), "--repeat", str(args.repeat), "--memory"]
        proc = subprocess.run([*cmd, args.memory], capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"{n:>11} FAILED: {proc.stderr.strip().splitlines()[-1:]}")
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        print(f"{n:>11} {r['best_s']:>8.2f} {r['ns_per_row']:>8.0f} {r['load_s']:>8.2f}")


if __name__ == "__main__":
    main()
