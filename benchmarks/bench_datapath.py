"""The data path's slow spots beside plain numpy and OpenDP, in one run: contribution bounding, the
private quantile and the variance.

Run: ``PYTHONPATH=src python benchmarks/bench_datapath.py`` (``--sizes 1000000 10000000``, ``--repeats 5``,
``--no-memory`` to skip the subprocess memory runs, ``--no-opendp``). OpenDP 0.16 is an optional,
benchmark-only peer (the ``bench`` extra); its Polars plan needs ``polars``.

* **bound contributions**: ``n`` rows ``(id, value)``, ids uniform on ``n/10`` people (10 rows each on
  average), values uniform on 0…99, at most 5 rows kept per id.

  - ``numpy cap``: the plain numpy group-cap a user would write — shuffle, stable ``argsort`` by id, keep
    rank < 5 (a boolean mask; no hash, not reproducible);
  - ``numpy hash cap``: the same with the tables' specified hash as the order (``row_keys`` then
    ``np.lexsort``): a reproducible numpy cap;
  - ``dpcompose``: ``make_bound_contributions(..., max_rows=5)`` called on a numpy structured array
    (``id`` int64, ``value`` int64; the whole call: domain check, selection, the kept rows as a list of
    tuples), and on the same rows as a Python list of tuples;
  - ``OpenDP plan``: the Polars expression OpenDP 0.16's ``truncate_per_group(5)`` adds to the plan
    (``pl.int_range(pl.len()).shuffle().over("id") < 5``), collected on a ``LazyFrame``;
  - ``OpenDP release``: the whole OpenDP context query ``truncate_per_group(5).select(dp.len())`` with an
    identifier privacy unit, ``release().collect()`` (building the measurement, truncating, a noisy count).

  ``peak/input``: the step's peak memory over the input's (16 bytes per row: the two int64 columns, or the
  structured array). ``RSS`` columns run each step once in a fresh subprocess and read the peak resident
  set (``VmHWM``, reset through ``/proc/self/clear_refs`` after the data is built) minus the resident set
  before the call; ``traced`` is ``tracemalloc``'s peak for the code that allocates through Python and
  numpy (not OpenDP's Rust). The list input's figures are over the same 16 bytes per row.

* **quantile**: ``make_private_quantile`` (candidates 0, 1, …, 100; α = 0.5; scale 1) on floats uniform on
  [0, 100) and ints uniform on 0…99 (numpy arrays, and Python lists at the first size), beside OpenDP's
  ``make_private_quantile`` (``max_divergence``, the same candidates, α and scale).
* **variance**: ``make_variance`` on floats uniform on [0, 1) in a sized, bounded domain [0, 1], beside
  OpenDP's ``make_variance`` on ``vector_domain(atom_domain(bounds=(0., 1.), nan=False), size=n)``.

Times are the best of ``--repeats`` calls, the two libraries alternating so that both see the same
machine load; ``ratio`` is dpcompose's time over the peer's.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CAP = 5


def _dpcompose() -> Any:
    sys.path.insert(0, str(ROOT / "src"))
    import dpcompose

    return dpcompose


def _opendp() -> Any:
    try:
        import opendp.prelude as odp
    except ImportError:
        return None
    odp.enable_features("contrib")
    return odp


# --- the data ---------------------------------------------------------------------------------------


def rows_data(n: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    rng = np.random.default_rng(0)
    return rng.integers(0, max(n // 10, 1), n), rng.integers(0, 100, n)


def structured(ids: np.ndarray[Any, Any], values: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    table = np.empty(len(ids), dtype=[("id", "i8"), ("value", "i8")])
    table["id"], table["value"] = ids, values
    return table


# --- the bounding steps -----------------------------------------------------------------------------


def numpy_cap(ids: np.ndarray[Any, Any], k: int = CAP) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """Shuffle, stable sort by id, keep the first k of each id: a boolean mask over the rows."""
    n = len(ids)
    perm = np.random.default_rng(1).permutation(n)
    order = perm[np.argsort(ids[perm], kind="stable")]
    sorted_ids = ids[order]
    fresh = np.r_[True, sorted_ids[1:] != sorted_ids[:-1]]
    start = np.where(fresh, np.arange(n), 0)
    np.maximum.accumulate(start, out=start)
    keep = np.zeros(n, dtype=bool)
    keep[order[np.arange(n) - start < k]] = True
    return keep


def numpy_hash_cap(
    ids: np.ndarray[Any, Any], values: np.ndarray[Any, Any], k: int = CAP
) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """The same with the tables' specified hash as the order (reproducible)."""
    from dpcompose.transformations._hash import row_keys, value_codes

    n = len(ids)
    order = np.lexsort((row_keys([value_codes(ids), value_codes(values)]), ids))
    sorted_ids = ids[order]
    fresh = np.r_[True, sorted_ids[1:] != sorted_ids[:-1]]
    start = np.where(fresh, np.arange(n), 0)
    np.maximum.accumulate(start, out=start)
    keep = np.zeros(n, dtype=bool)
    keep[order[np.arange(n) - start < k]] = True
    return keep


def bound_steps(dp: Any, odp: Any, n: int) -> dict[str, tuple[Callable[[], Any], Any]]:
    """Each bounding step as a zero-argument call, and the rows it keeps (a count, to check)."""
    ids, values = rows_data(n)
    table = structured(ids, values)
    t = dp.t.make_bound_contributions(
        dp.VectorDomain(dp.AtomDomain(tuple)), dp.SymmetricIdDistance(0), id_key=0, max_rows=CAP
    )
    steps: dict[str, tuple[Callable[[], Any], Any]] = {
        "numpy cap": (lambda: numpy_cap(ids), None),
        "numpy hash cap": (lambda: numpy_hash_cap(ids, values), None),
        "dpcompose (array)": (lambda: t(table), None),
    }
    if odp is not None:
        import polars as pl

        frame = pl.LazyFrame({"id": ids, "value": values})
        plan = frame.filter(pl.int_range(pl.len()).shuffle().over("id") < CAP)
        steps["OpenDP plan"] = (lambda: plan.collect(), None)

        def release() -> Any:
            context = odp.Context.compositor(
                data=frame,
                privacy_unit=odp.unit_of(contributions=1, identifier=pl.col("id")),
                privacy_loss=odp.loss_of(epsilon=1.0),
                split_evenly_over=1,
            )
            return context.query().truncate_per_group(CAP).select(odp.len()).release().collect()

        steps["OpenDP release"] = (release, None)
    return steps


def kept_count(result: Any) -> int | None:
    if isinstance(result, np.ndarray) and result.dtype == bool:
        return int(result.sum())
    if isinstance(result, list) or (isinstance(result, np.ndarray) and result.dtype.names):
        return len(result)
    height = getattr(result, "height", None)
    return int(height) if height is not None and height > 1 else None


def best_time(func: Callable[[], Any], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - start)
    return best


def traced_peak(func: Callable[[], Any]) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        func()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# --- peak RSS in a fresh process ----------------------------------------------------------------------


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def child(name: str, n: int) -> None:
    """Run one step once after building its data; print the peak resident set the call added."""
    dp = _dpcompose()
    odp = _opendp() if name.startswith("OpenDP") else None
    if name == "dpcompose (list)":
        ids, values = rows_data(n)
        rows = list(zip(ids.tolist(), values.tolist(), strict=True))
        del ids, values
        t = dp.t.make_bound_contributions(
            dp.VectorDomain(dp.AtomDomain(tuple)), dp.SymmetricIdDistance(0), id_key=0, max_rows=CAP
        )
        func: Callable[[], Any] = lambda: t(rows)  # noqa: E731
    else:
        func = bound_steps(dp, odp, n)[name][0]
    gc.collect()
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak resident set to the current one
    before = _status("VmRSS")
    func()
    print(json.dumps({"rss": _status("VmHWM") - before}))


def rss_peak(name: str, n: int) -> int | None:
    out = subprocess.run(
        [sys.executable, __file__, "--child", name, str(n)], capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        print(f"  ({name}: the memory run failed: {out.stderr.strip().splitlines()[-1:]})")
        return None
    return int(json.loads(out.stdout.strip().splitlines()[-1])["rss"])


# --- the tables -------------------------------------------------------------------------------------


def bench_bound(dp: Any, odp: Any, sizes: list[int], repeats: int, memory: bool, lists: bool) -> None:
    print("\nbound contributions: n rows (id, value), about 10 rows per id, at most 5 kept per id")
    header = (
        f"{'step':<20} {'n':>9} {'time':>10} {'÷ numpy cap':>12} {'kept':>9} {'RSS/input':>10} "
        f"{'traced/input':>13}"
    )
    print(header)
    print("-" * len(header))
    for n in sizes:
        steps = bound_steps(dp, odp, n)
        if lists and n <= 10**6:
            ids, values = rows_data(n)
            rows = list(zip(ids.tolist(), values.tolist(), strict=True))
            t = dp.t.make_bound_contributions(
                dp.VectorDomain(dp.AtomDomain(tuple)), dp.SymmetricIdDistance(0), id_key=0, max_rows=CAP
            )
            steps["dpcompose (list)"] = (lambda t=t, rows=rows: t(rows), None)
        times = {name: float("inf") for name in steps}
        for _ in range(repeats):  # alternate the steps, so that each sees the same load
            for name, (func, _) in steps.items():
                times[name] = min(times[name], best_time(func, 1))
        input_bytes = 16 * n
        for name, (func, _) in steps.items():
            rss = rss_peak(name, n) if memory else None
            python_only = not name.startswith("OpenDP") and name != "dpcompose (list)"
            traced = traced_peak(func) if memory and python_only else None
            kept = kept_count(func()) if name != "OpenDP release" else None
            print(
                f"{name:<20} {n:>9} {times[name] * 1e3:8.1f}ms {times[name] / times['numpy cap']:12.2f} "
                f"{'' if kept is None else kept:>9} {'' if rss is None else f'{rss / input_bytes:.2f}':>10} "
                f"{'' if traced is None else f'{traced / input_bytes:.2f}':>13}",
                flush=True,
            )
        del steps


def bench_quantile_variance(dp: Any, odp: Any, sizes: list[int], repeats: int, lists: bool) -> None:
    print("\nquantile (candidates 0…100, α = 0.5, scale 1) and variance (floats in [0, 1], sized)")
    header = f"{'step':<22} {'input':<6} {'n':>9} {'dpcompose':>11} {'opendp':>11} {'ratio':>7}"
    print(header)
    print("-" * len(header))
    sym = dp.SymmetricDistance()
    for n in sizes:
        rng = np.random.default_rng(2)
        floats, ints, unit = rng.uniform(0, 100, n), rng.integers(0, 100, n), rng.uniform(0, 1, n)
        fcands, icands = [float(c) for c in range(101)], list(range(101))
        cases: list[tuple[str, Any, Any, Any]] = [
            (
                "quantile float",
                dp.m.make_private_quantile(dp.VectorDomain(dp.AtomDomain(float)), sym, fcands, 0.5, 1.0),
                None
                if odp is None
                else odp.m.make_private_quantile(
                    odp.vector_domain(odp.atom_domain(T=float, nan=False)),
                    odp.symmetric_distance(),
                    odp.max_divergence(),
                    fcands,
                    0.5,
                    1.0,
                ),
                floats,
            ),
            (
                "quantile int",
                dp.m.make_private_quantile(dp.VectorDomain(dp.AtomDomain(int)), sym, icands, 0.5, 1.0),
                None
                if odp is None
                else odp.m.make_private_quantile(
                    odp.vector_domain(odp.atom_domain(T="i64")),
                    odp.symmetric_distance(),
                    odp.max_divergence(),
                    icands,
                    0.5,
                    1.0,
                ),
                ints,
            ),
            (
                "variance float",
                dp.t.make_variance(dp.VectorDomain(dp.AtomDomain(float, bounds=(0.0, 1.0)), size=n), sym),
                None
                if odp is None
                else odp.t.make_variance(
                    odp.vector_domain(odp.atom_domain(bounds=(0.0, 1.0), nan=False), size=n),
                    odp.symmetric_distance(),
                ),
                unit,
            ),
        ]
        for name, ours, theirs, array in cases:
            inputs = [("numpy", array)] + ([("list", array.tolist())] if lists and n <= 10**6 else [])
            for kind, data in inputs:
                t_ours = t_theirs = float("inf")
                for _ in range(repeats):
                    t_ours = min(t_ours, best_time(lambda f=ours, x=data: f(x), 1))
                    if theirs is not None:
                        t_theirs = min(t_theirs, best_time(lambda f=theirs, x=data: f(x), 1))
                if name.startswith("variance") and theirs is not None:
                    a, b = ours(data), theirs(data)
                    assert abs(a - b) <= 1e-9 * max(1.0, abs(b)), (a, b)
                other = "" if theirs is None else f"{t_theirs * 1e3:9.2f}ms"
                ratio = "" if theirs is None else f"{t_ours / t_theirs:7.2f}"
                print(f"{name:<22} {kind:<6} {n:>9} {t_ours * 1e3:9.2f}ms {other:>11} {ratio:>7}", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10**6, 10**7])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--no-opendp", action="store_true")
    parser.add_argument("--no-lists", action="store_true")
    parser.add_argument("--only", choices=["bound", "stats"], help="one of the two tables")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child[0], int(args.child[1]))
        return
    dp = _dpcompose()
    odp = None if args.no_opendp else _opendp()
    if odp is None and not args.no_opendp:
        print("OpenDP is not installed (pip install opendp[polars], or the bench extra): no peer columns")
    print(f"dpcompose from {Path(dp.__file__).parent}")
    if args.only in (None, "bound"):
        bench_bound(dp, odp, args.sizes, args.repeats, not args.no_memory, not args.no_lists)
    if args.only in (None, "stats"):
        bench_quantile_variance(dp, odp, args.sizes, args.repeats, not args.no_lists)


if __name__ == "__main__":
    main()
