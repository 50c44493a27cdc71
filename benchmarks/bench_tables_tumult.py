"""dpcompose tables on Spark beside Tumult Analytics (tmlt.analytics) on Spark: same data, same query.

The query of bench_tables.py: per-user caps (4 groups, 5 rows per user), group by ``state`` over 50 public
keys, count and mean of ``x`` in [0, 100], ε = 1 in all. The data are generated inside Spark from
``spark.range(n)`` by the same hash formula for both libraries (no driver-side copy), cached and counted
before the clock starts. Each (library, size) runs in its own process and Spark session (local[2],
pinned to 127.0.0.1). Tumult needs its own venv (it pins its pyspark):

    python -m venv /tmp/tmltvenv && /tmp/tmltvenv/bin/pip install tmlt.analytics
    python benchmarks/bench_tables_tumult.py --tumult-python /tmp/tmltvenv/bin/python [--sizes 1000000]

Tumult's query: ``enforce(MaxRowsPerID(5))``, ``enforce(MaxGroupsPerID("state", 4))``, then a grouped
count and a grouped average (two queries of ε = 0.5 each; dpcompose splits its ε = 1 over its two noisy
vectors the same way).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KEYS = [f"S{i:02d}" for i in range(50)]


def _session():  # type: ignore[no-untyped-def]
    from pyspark.sql import SparkSession

    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable  # executors need this venv's packages
    return (
        SparkSession.builder.master("local[2]")
        .appName("bench-tumult")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.driver.memory", "6g")
        .getOrCreate()
    )


def _data(spark, n: int):  # type: ignore[no-untyped-def]
    from pyspark.sql import functions as F

    ids = spark.range(n)
    users = max(1, n // 5)
    h1 = F.xxhash64(F.col("id"), F.lit(1))
    h2 = F.xxhash64(F.col("id"), F.lit(2))
    return ids.select(
        F.pmod(h1, F.lit(users)).alias("user"),
        F.concat(F.lit("S"), F.lpad(F.pmod(h2, F.lit(50)).cast("string"), 2, "0")).alias("state"),
        (F.pmod(F.xxhash64(F.col("id"), F.lit(3)), F.lit(1 << 24)) * F.lit(100.0 / (1 << 24))).alias("x"),
    ).cache()


def run_dpcompose(df) -> int:  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(ROOT / "src"))
    import dpcompose as dp

    schema = dp.FrameDomain(
        {"user": dp.Column(int), "state": dp.Column(str), "x": dp.Column(float, bounds=(0.0, 100.0))}
    )
    ctx = dp.Context(
        df,
        schema,
        privacy_unit=dp.unit_of(id="user", max_rows=5, max_groups=4),
        privacy_loss=1.0,
        split_evenly_over=1,
    )
    out = ctx.query().group_by("state", keys=KEYS).agg(dp.tables.count(), dp.tables.mean("x")).release()
    return int(out.height)


def run_tumult(df) -> int:  # type: ignore[no-untyped-def]
    from tmlt.analytics import (
        AddRowsWithID,
        KeySet,
        MaxGroupsPerID,
        MaxRowsPerID,
        PureDPBudget,
        QueryBuilder,
        Session,
    )

    session = Session.from_dataframe(PureDPBudget(1.0), "data", df, AddRowsWithID("user"))
    keys = KeySet.from_dict({"state": KEYS})
    base = QueryBuilder("data").enforce(MaxRowsPerID(5)).enforce(MaxGroupsPerID("state", 4))
    count = session.evaluate(base.groupby(keys).count(), PureDPBudget(0.5)).collect()
    base = QueryBuilder("data").enforce(MaxRowsPerID(5)).enforce(MaxGroupsPerID("state", 4))
    mean = session.evaluate(base.groupby(keys).average("x", 0.0, 100.0), PureDPBudget(0.5)).collect()
    assert len(count) == len(mean)
    return len(count)


def one(lib: str, n: int, repeat: int) -> None:
    spark = _session()
    spark.sparkContext.setLogLevel("ERROR")
    df = _data(spark, n)
    assert df.count() == n
    run = run_dpcompose if lib == "dpcompose" else run_tumult
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        rows = run(df)
        times.append(time.perf_counter() - t)
        assert rows == len(KEYS)
    spark.stop()
    print(json.dumps({"lib": lib, "n": n, "best_s": min(times), "runs": times}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="*", default=[1_000_000])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--tumult-python", default=sys.executable, help="a Python with tmlt.analytics")
    parser.add_argument("--one", nargs=2, metavar=("LIB", "N"))
    args = parser.parse_args()
    if args.one:
        one(args.one[0], int(args.one[1]), args.repeat)
        return
    print(f"{'rows':>10} {'library':>10} {'best s':>8} {'ratio':>6}")
    for n in args.sizes:
        results = {}
        for lib, python in (("dpcompose", sys.executable), ("tumult", args.tumult_python)):
            cmd = [python, __file__, "--one", lib, str(n), "--repeat", str(args.repeat)]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
            if proc.returncode != 0 or not lines:
                print(f"{n:>10} {lib:>10} failed: {proc.stderr.strip().splitlines()[-1:]}")
                continue
            results[lib] = json.loads(lines[-1])["best_s"]
        for lib, s in results.items():
            ratio = s / results["tumult"] if "tumult" in results else float("nan")
            print(f"{n:>10} {lib:>10} {s:>8.2f} {ratio:>6.2f}")


if __name__ == "__main__":
    main()
