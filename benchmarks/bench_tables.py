"""Group-by count and mean with contribution bounding: dpcompose tables beside OpenDP's Polars Context.

Same data (generated from one seed in every run), same machine, same run; each (library, size) runs in
its own subprocess so its peak memory (max RSS) is its own. The query: per-user caps (4 groups, 5 rows),
group by ``state`` over 50 public keys, count and mean of ``x`` in [0, 100], ε = 1.

OpenDP 0.16 needs polars 1.36 (its plans are serialised for that version): run this script with a Python
where both are installed, e.g. a venv with ``pip install opendp==0.16 polars==1.36.1 pyarrow``. OpenDP's
``truncate_num_groups`` is run with ``keep="first"`` (its default ``"sample"`` failed on this Polars).

    python benchmarks/bench_tables.py [--sizes 1000000 10000000] [--repeat 3]
    python benchmarks/bench_tables.py --spark [--sizes 1000000 3000000 10000000] [--with-1e8]

``--collect`` times collecting an engine result with many keys instead (10**5 and 10**6 distinct keys, known
and unknown, int and str): the former per-row loop (before), ``collect_rows`` (the transposing row path Spark
uses) and ``collect_frame`` (the columnar Polars path, after), and the whole Polars aggregate job.

    python benchmarks/bench_tables.py --collect [--sizes 100000 1000000]

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
        df,
        schema,
        privacy_unit=dp.unit_of(id="user", max_rows=5, max_groups=4),
        privacy_loss=1.0,
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


def row_loop(rows, plan):  # type: ignore[no-untyped-def]
    """The per-row collection the Polars engine used before the columnar path (a copy, for the "before")."""
    import numpy as np

    from dpcompose.tables._engine import Aggregates, key_order

    nb, n_sums = len(plan.by), len(plan.sums)
    found = {}
    for row in rows:
        n = int(row[nb])
        if n == 0:
            continue
        parts = [int(v) for v in row[nb + 1 :]]
        sums = [parts[2 * i] * 65536 + parts[2 * i + 1] - n * (1 << 31) for i in range(n_sums)]
        found[tuple(row[:nb])] = (n, sums + parts[2 * n_sums :])
    keys = ((),) if not plan.by else tuple(sorted(found, key=key_order)) if plan.keys is None else plan.keys
    empty = (0, [0] * (n_sums + len(plan.distinct) + len(plan.below)))
    got = [found.get(k, empty) for k in keys]
    columns = [np.array([r[1][i] for r in got], dtype=np.int64) for i in range(len(empty[1]))]
    counts = np.array([r[0] for r in got], dtype=np.int64)
    return Aggregates(keys, counts, columns[:n_sums], columns[n_sums : n_sums + len(plan.distinct)])


def bench_collect(sizes: list[int], repeat: int) -> None:
    """Collecting a result of ``n`` keys (two rows per key): before (per-row loop), row path, columnar."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
    import numpy as np
    import polars as pl

    from dpcompose.tables._engine import Plan, SumSpec, collect_rows
    from dpcompose.tables._polars import PolarsEngine, collect_frame

    def best(f):  # type: ignore[no-untyped-def]
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            out = f()
            times.append(time.perf_counter() - t)
        return min(times), out

    spec = SumSpec("x", "float", 0.0, 100.0, 0.0, -24)
    print(f"{'keys':>8} {'by':>4} {'keys':>8} {'loop s':>8} {'rows s':>8} {'columns s':>9} {'speed-up':>8} "
          f"{'job s':>7}")  # fmt: skip
    for n in sizes:
        rng = np.random.default_rng(7)
        ids = np.concatenate([rng.permutation(n), rng.permutation(n)]).astype(np.int64)
        x = rng.uniform(0, 100, 2 * n)
        df = pl.DataFrame({"k": ids, "s": np.char.add("key", ids.astype(str)), "x": x})
        u = pl.col("x").mul(2.0**24).round(0, mode="half_to_even").cast(pl.Int64) + (1 << 31)
        halves = [(u // 65536).sum().alias("__dp_hi0"), (u % 65536).sum().alias("__dp_lo0")]
        for by in ("k", "s"):
            out = df.group_by(by).agg(pl.len().cast(pl.Int64).alias("__dp_n"), *halves)  # the engine's result
            unknown = Plan((by, "x"), None, (by,), None, None, None, None, (spec,))
            absent = tuple((f"absent{i}" if by == "s" else -1 - i,) for i in range(n // 2))
            listed = tuple(out.select(by).rows())[::2] + absent  # half present, half absent
            known = Plan((by, "x"), None, (by,), listed, None, None, None, (spec,))
            for label, plan in (("unknown", unknown), ("known", known)):
                t_loop, a = best(lambda: row_loop(out.iter_rows(), plan))  # noqa: B023
                t_rows, b = best(lambda: collect_rows(out.iter_rows(), plan))  # noqa: B023
                t_cols, c = best(lambda: collect_frame(out, plan))  # noqa: B023
                t_job, _ = best(lambda: PolarsEngine().aggregate(df, plan))  # noqa: B023
                assert a.keys == b.keys == c.keys
                assert a.counts.tolist() == b.counts.tolist() == c.counts.tolist()
                assert a.sums[0].tolist() == b.sums[0].tolist() == c.sums[0].tolist()
                print(f"{n:>8} {by:>4} {label:>8} {t_loop:>8.2f} {t_rows:>8.2f} {t_cols:>9.3f} "
                      f"{t_loop / t_cols:>7.0f}x {t_job:>7.2f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="*", default=[1_000_000, 10_000_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--one", nargs=2, metavar=("LIB", "N"))
    parser.add_argument("--spark", action="store_true", help="the Spark scaling curve (local[2])")
    parser.add_argument("--collect", action="store_true", help="collecting results with many keys")
    parser.add_argument("--with-1e8", action="store_true", help="with --spark: also 10**8 rows")
    args = parser.parse_args()
    if args.spark:
        script = Path(__file__).resolve().parent / "bench_tables_spark.py"
        sizes = [str(n) for n in args.sizes] if args.sizes != [1_000_000, 10_000_000] else []
        extra = ["--with-1e8"] if args.with_1e8 else []
        cmd = [sys.executable, str(script), *(["--sizes", *sizes] if sizes else []), *extra]
        subprocess.run([*cmd, "--repeat", str(min(args.repeat, 2))], check=True)
        return
    if args.collect:
        sizes = args.sizes if args.sizes != [1_000_000, 10_000_000] else [100_000, 1_000_000]
        bench_collect(sizes, args.repeat)
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
                capture_output=True,
                text=True,
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
