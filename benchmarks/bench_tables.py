"""Group-by count and mean with contribution bounding: dpcompose tables beside OpenDP's Polars Context.

Same data (generated from one seed in every run), same machine, same run; each (library, size) runs in
its own subprocess so its peak memory (max RSS) is its own. The query: per-user caps (4 groups, 5 rows),
group by ``state`` over 50 public keys, count and mean of ``x`` in [0, 100], ε = 1.

OpenDP 0.16 needs polars 1.36 (its plans are serialised for that version): run this script with a Python
where both are installed, e.g. a venv with ``pip install opendp==0.16 polars==1.36.1 pyarrow``. OpenDP's
``truncate_num_groups`` is run with ``keep="first"`` (its default ``"sample"`` failed on this Polars).

    python benchmarks/bench_tables.py [--sizes 1000000 10000000] [--repeat 3]
    python benchmarks/bench_tables.py --spark [--sizes 1000000 3000000 10000000] [--with-1e8]

``--spark`` runs the Spark scaling curve instead (benchmarks/bench_tables_spark.py: the same query through
``dp.Context`` on a local[2] session pinned to 127.0.0.1, time per row; 10**8 rows only with ``--with-1e8``).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

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
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
    import dpcompose as dp

    schema = dp.FrameDomain(
        {"user": dp.Column(int), "state": dp.Column(str), "x": dp.Column(float, bounds=(0.0, 100.0))}
    )
    ctx = dp.Context(
        df, schema, privacy_unit=dp.unit_of(id="user", max_rows=5, max_groups=4), privacy_loss=1.0,
        split_evenly_over=1,
    )
    q = ctx.query().group_by("state", keys=KEYS).agg(dp.tables.count(), dp.tables.mean("x"))
    return q.release()


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
    q = (
        ctx.query()
        .truncate_num_groups(4, by=["state"], keep="first")
        .truncate_per_group(5, by=["state"])
        .group_by("state")
        .agg(dp.len(), pl.col("x").fill_null(0).dp.mean((0.0, 100.0)))
        .with_keys(pl.LazyFrame({"state": KEYS}))
    )
    return q.release().collect()


def one(lib: str, n: int, repeat: int) -> None:
    df = make_data(n)
    run = run_dpcompose if lib == "dpcompose" else run_opendp
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = run(df)
        times.append(time.perf_counter() - t)
    assert out.height == len(KEYS)
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"lib": lib, "n": n, "best_s": min(times), "peak_mb": rss_kb / 1024}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="*", default=[1_000_000, 10_000_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--one", nargs=2, metavar=("LIB", "N"))
    parser.add_argument("--spark", action="store_true", help="the Spark scaling curve (local[2])")
    parser.add_argument("--with-1e8", action="store_true", help="with --spark: also 10**8 rows")
    args = parser.parse_args()
    if args.spark:
        script = Path(__file__).resolve().parent / "bench_tables_spark.py"
        sizes = [str(n) for n in args.sizes] if args.sizes != [1_000_000, 10_000_000] else []
        extra = ["--with-1e8"] if args.with_1e8 else []
        cmd = [sys.executable, str(script), *(["--sizes", *sizes] if sizes else []), *extra]
        subprocess.run([*cmd, "--repeat", str(min(args.repeat, 2))], check=True)
        return
    if args.one:
        one(args.one[0], int(args.one[1]), args.repeat)
        return
    print(f"{'rows':>10} {'library':>10} {'best s':>8} {'peak MB':>8} {'ratio':>6}")
    for n in args.sizes:
        results = {}
        for lib in ("dpcompose", "opendp"):
            proc = subprocess.run(
                [sys.executable, __file__, "--one", lib, str(n), "--repeat", str(args.repeat)],
                capture_output=True, text=True,
            )
            if proc.returncode != 0:
                print(f"{n:>10} {lib:>10} FAILED: {proc.stderr.strip().splitlines()[-1:]}")
                continue
            results[lib] = json.loads(proc.stdout.strip().splitlines()[-1])
        base = results.get("opendp", {}).get("best_s")
        for lib, r in results.items():
            ratio = f"{r['best_s'] / base:.2f}" if base else "-"
            print(f"{n:>10} {lib:>10} {r['best_s']:>8.2f} {r['peak_mb']:>8.0f} {ratio:>6}")


if __name__ == "__main__":
    main()
