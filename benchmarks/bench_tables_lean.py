"""Leaner table queries (issue 35 item 7): a query's peak memory beside the frame's size and OpenDP's, and the
Spark engine's time beside a raw Spark job with the same per-user caps — each pair from the same run.

The query (the issue's kind of table): 10**6 rows, about 2·10**5 users (``user`` in [0, n/5)), 50 states,
``x`` uniform in [0, 100]; per-user caps of 4 groups and 5 rows; group by ``state`` over the 50 public keys;
count, sum and mean of ``x``; ε = 1.

``memory``: each library runs in a fresh subprocess: the frame is built, a 1,000-row query warms the
imports up, then the peak RSS is reset (``/proc/self/clear_refs``) and the query runs; the figure is the
peak RSS (``VmHWM``) minus the RSS just before the query — Polars allocates outside ``tracemalloc``, so
RSS it is. The frame's size is Polars' ``estimated_size``. OpenDP 0.16's Context runs the same query
(``truncate_num_groups(4)``, ``truncate_per_group(5)``, ``keep="first"``).

``spark``: one ``local[2]`` session pinned to 127.0.0.1; the data generated in Spark from ``spark.range``
and cached before the clock starts; dpcompose's ``release()`` and the raw job alternate, best of
``--repeat``. The raw job is what one would write by hand: keep the known keys, ``dense_rank`` of the
user's groups by ``xxhash64(user, state)`` (≤ 4) and ``row_number`` of its rows by
``xxhash64(user, state, x)`` (≤ 5) over one window partitioned by user, then ``groupBy(state)`` count and
sum, collected — the same caps, none of dpcompose's exactness (specified hash, integer grid, noise).

    PYTHONPATH=src /work/venv-opendp/bin/python benchmarks/bench_tables_lean.py memory [--sizes 1000000]
    PYTHONPATH=src /work/venv-opendp/bin/python benchmarks/bench_tables_lean.py spark [--sizes 1000000]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = Path(os.environ.get("DPCOMPOSE_SRC", HERE.parent / "src"))  # another checkout's src: its "before"
KEYS = [f"S{i:02d}" for i in range(50)]


def make_data(n: int):  # type: ignore[no-untyped-def]
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(12345)
    return pl.DataFrame(
        {
            "user": rng.integers(0, max(1, n // 5), n),
            "state": np.array(KEYS)[rng.integers(0, len(KEYS), n)],
            "x": rng.uniform(0.0, 100.0, n),
        }
    )


def run_dpcompose(df):  # type: ignore[no-untyped-def]
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
    t = dp.tables
    return ctx.query().group_by("state", keys=KEYS).agg(t.count(), t.sum("x"), t.mean("x")).release()


def run_opendp(df):  # type: ignore[no-untyped-def]
    import opendp.prelude as dp
    import polars as pl

    dp.enable_features("contrib")
    ctx = dp.Context.compositor(
        data=df.lazy(),
        privacy_unit=dp.unit_of(contributions=1, identifier=pl.col("user")),
        privacy_loss=dp.loss_of(epsilon=1.0),
        split_evenly_over=1,
        margins=[dp.polars.Margin(by=["state"], invariant="keys", max_length=df.height, max_groups=4)],
    )
    x = pl.col("x").fill_null(0)
    q = (
        ctx.query()
        .truncate_num_groups(4, by=["state"], keep="first")
        .truncate_per_group(5, by=["state"])
        .group_by("state")
        .agg(dp.len(), x.dp.sum((0.0, 100.0)).alias("x_sum"), x.dp.mean((0.0, 100.0)).alias("x_mean"))
        .with_keys(pl.LazyFrame({"state": KEYS}))
    )
    return q.release().collect()


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _hwm_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM")) / 1024


def memory_one(lib: str, n: int) -> None:
    import warnings

    warnings.simplefilter("ignore")
    sys.path.insert(0, str(SRC))
    run = run_dpcompose if lib == "dpcompose" else run_opendp
    run(make_data(1000))  # imports and first-call set-up, outside the measured peak
    df = make_data(n)
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current RSS
    base = _rss_mb()
    t = time.perf_counter()
    out = run(df)
    seconds = time.perf_counter() - t
    assert out.height == len(KEYS)
    frame = df.estimated_size() / 2**20
    print(json.dumps({"lib": lib, "n": n, "frame_mb": frame, "extra_mb": _hwm_mb() - base, "s": seconds}))


def memory(sizes: list[int]) -> None:
    print(f"{'rows':>9} {'library':>10} {'frame MB':>9} {'peak above MB':>14} {'× frame':>8} {'s':>6}")
    for n in sizes:
        for lib in ("dpcompose", "opendp"):
            proc = subprocess.run(
                [sys.executable, __file__, "memory-one", lib, str(n)], capture_output=True, text=True
            )
            if proc.returncode != 0:
                print(f"{n:>9} {lib:>10} FAILED: {proc.stderr.strip().splitlines()[-1:]}")
                continue
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            print(f"{n:>9} {lib:>10} {r['frame_mb']:>9.1f} {r['extra_mb']:>14.1f} "
                  f"{r['extra_mb'] / r['frame_mb']:>8.1f} {r['s']:>6.2f}")  # fmt: skip


def raw_capped_groupby(df):  # type: ignore[no-untyped-def]
    """The hand-written Spark job with the same caps (see the module docstring)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    d = df.where(F.col("state").isin(KEYS))
    w = Window.partitionBy("user").orderBy(F.xxhash64("user", "state"), "state")
    d = d.withColumn("g", F.dense_rank().over(w)).where(F.col("g") <= 4)
    w2 = Window.partitionBy("user").orderBy(F.xxhash64("user", "state", "x"))
    d = d.withColumn("r", F.row_number().over(w2)).where(F.col("r") <= 5)
    return d.groupBy("state").agg(F.count(F.lit(1)).alias("n"), F.sum("x").alias("x_sum")).collect()


def spark_one(n: int, repeat: int) -> None:
    sys.path.insert(0, str(SRC))
    from pyspark.sql import functions as F

    from dpcompose.tables._spark import local_session

    spark = local_session("dpcompose-bench", cores=2, shuffle_partitions=8, memory="4g")
    spark.sparkContext.setLogLevel("ERROR")
    users = max(1, n // 5)
    ids = spark.range(n)
    state = F.lpad(F.pmod(F.xxhash64(F.col("id"), F.lit(2)), F.lit(50)).cast("string"), 2, "0")
    df = ids.select(
        F.pmod(F.xxhash64(F.col("id"), F.lit(1)), F.lit(users)).alias("user"),
        F.concat(F.lit("S"), state).alias("state"),
        (F.pmod(F.xxhash64(F.col("id"), F.lit(3)), F.lit(1 << 24)) * F.lit(100.0 / (1 << 24))).alias("x"),
    ).cache()
    assert df.count() == n
    run_dpcompose(df.limit(1000))  # the first job's set-up (JIT, broadcast), outside the clock
    raw_capped_groupby(df.limit(1000))
    times: dict[str, list[float]] = {"dpcompose": [], "raw": []}
    for _ in range(repeat):
        for name, run in (("dpcompose", run_dpcompose), ("raw", raw_capped_groupby)):
            t = time.perf_counter()
            run(df)
            times[name].append(time.perf_counter() - t)
    spark.stop()
    print(json.dumps({"n": n, **{k: min(v) for k, v in times.items()}}))


def spark_curve(sizes: list[int], repeat: int) -> None:
    print(f"{'rows':>9} {'dpcompose s':>12} {'raw Spark s':>12} {'ratio':>6}")
    for n in sizes:
        cmd = [sys.executable, __file__, "spark-one", str(n), "--repeat", str(repeat)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"{n:>9} FAILED: {proc.stderr.strip().splitlines()[-1:]}")
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        print(f"{n:>9} {r['dpcompose']:>12.2f} {r['raw']:>12.2f} {r['dpcompose'] / r['raw']:>6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["memory", "spark", "memory-one", "spark-one"])
    parser.add_argument("args", nargs="*")
    parser.add_argument("--sizes", type=int, nargs="*", default=[1_000_000])
    parser.add_argument("--repeat", type=int, default=3)
    a = parser.parse_args()
    if a.what == "memory-one":
        memory_one(a.args[0], int(a.args[1]))
    elif a.what == "spark-one":
        spark_one(int(a.args[0]), a.repeat)
    elif a.what == "memory":
        memory(a.sizes)
    else:
        spark_curve(a.sizes, a.repeat)


if __name__ == "__main__":
    main()
