"""Array-at-a-time row maps and the SSCP, dpcompose beside OpenDP 0.16, plain numpy and Polars, in one run.

Run: ``PYTHONPATH=src /work/venv-opendp/bin/python benchmarks/bench_rowmaps.py`` (``--rows`` and
``--columns`` pick one SSCP shape, else (10⁶ × 10), (10⁵ × 10) and (10⁶ × 3) are run; ``--clock cpu`` times
the SSCP by process CPU time (with ``OPENBLAS_NUM_THREADS=1``) instead of wall time; ``--map-rows`` the
row map's size, ``--repeats`` the number of timed runs; each SSCP figure is the median of them, with the
best beside it, the runs of the libraries alternating; the row map's figures are the best).

* **SSCP** on an ``(n, d)`` float64 array whose rows have L2 norm <= 1 (uniform entries scaled by
  ``1/√d``): OpenDP's ``make_np_sscp`` (``opendp.extras.numpy``; ``arg.T @ arg`` under
  ``idealized-numerics``, no domain check on the call) beside ``dp.t.make_sscp`` timed three ways: its
  function alone (the computation: grid rounding and exact block products), the whole call on
  ``VectorDomain(VectorDomain(AtomDomain(float, bounds=(-1/√d, 1/√d)), size=d))`` (the input check is a
  min/max/NaN scan), and the whole call on ``VectorDomain(NormBallDomain(size=d, norm=1))`` (the check
  decides every row's norm exactly), and the entry-bounds call again with the SSCP's speed devices off
  (one thread, numpy's ``qᵀq`` for every block: ``DPCOMPOSE_SSCP_SPEEDUPS=0``) and with its two threads
  turned on (``DPCOMPOSE_SSCP_THREADS=1``; at widths 8-20 from 2**18 rows).
  ``numpy X.T @ X`` is the floor. The last column compares the results (the grid rounds entries to
  ``2**-20·c``). ``--busy`` keeps one core busy (a spinning process) while the SSCP is timed: what the
  threads cost when the second finds no free core.
* **pipeline**: unbounded rows (standard normal / √d) clipped to L2 norm 1 and then the SSCP, one chained
  call in each library: ``make_clip_l2 >> make_sscp`` beside OpenDP's ``make_np_clamp >> make_np_sscp``
  (the first shape only).
* **row map**: the same map of three float columns, ``[clip(2a + b, -1, 1), clip(|c|, 0, 1),
  when(a > b, a − b, 0)]``, as ``dp.t.make_map_exprs`` (table expressions, vectorised) and as
  ``dp.t.make_map_rows`` with the Python function of one row (today's way), whole calls, on ``--map-rows``
  rows; Polars evaluating the same expressions on a DataFrame for reference. The outputs are compared.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

import dpcompose as dp
from dpcompose.transformations._sscp_speed import sscp_speedups, sscp_threads


def _best(fns: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    best = dict.fromkeys(fns, math.inf)
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


CLOCK = time.perf_counter
"""The SSCP timer: wall time, or the process's CPU time with ``--clock cpu`` (steadier on a shared machine;
run it with ``OPENBLAS_NUM_THREADS=1`` so that a BLAS thread's time is not added to the caller's)."""


def _runs(fns: dict[str, Callable[[], Any]], repeats: int) -> dict[str, list[float]]:
    """Every timed run of each function, the functions alternating within each round."""
    runs: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = CLOCK()
            fn()
            runs[name].append(CLOCK() - start)
    return runs


def _spin() -> None:
    """Keep one core busy until terminated."""
    while True:
        pass


def _devices_off(t: Any, x: Any) -> Any:
    """``t(x)`` with the SSCP's speed devices (two threads, BLAS's general product) off."""
    with sscp_speedups(False):
        return t(x)


def _two_threads(t: Any, x: Any) -> Any:
    """``t(x)`` with the SSCP's two threads turned on (``DPCOMPOSE_SSCP_THREADS=1``)."""
    with sscp_threads(True):
        return t(x)


def bench_sscp(n: int, d: int, repeats: int) -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(-1.0, 1.0, size=(n, d)) / math.sqrt(d)
    a = 1.0 / math.sqrt(d)
    boxed = dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float, bounds=(-a, a)), size=d))
    ball = dp.VectorDomain(dp.NormBallDomain(size=d, norm=1.0))
    ours_box = dp.t.make_sscp(boxed, dp.SymmetricDistance(), max_size=n)
    ours_ball = dp.t.make_sscp(ball, dp.SymmetricDistance(), max_size=n)
    fns: dict[str, Callable[[], Any]] = {
        "numpy X.T @ X": lambda: x.T @ x,
        "dpcompose make_sscp: function": lambda: ours_box.function(x),
        "dpcompose make_sscp: call, entry bounds": lambda: ours_box(x),
        "dpcompose make_sscp: call, norm ball": lambda: ours_ball(x),
        "dpcompose make_sscp: call, entry bounds, off": lambda: _devices_off(ours_box, x),
        "dpcompose make_sscp: call, entry bounds, 2 thr": lambda: _two_threads(ours_box, x),
    }
    try:
        import opendp.prelude as odp
        from opendp.extras.numpy import array2_domain
        from opendp.extras.numpy._make_np_sscp import make_np_sscp

        odp.enable_features("contrib", "honest-but-curious", "idealized-numerics")
        theirs = make_np_sscp(
            array2_domain(norm=1.0, p=2, num_columns=d, T=float, nan=False), odp.symmetric_distance()
        )
        fns["OpenDP make_np_sscp: call"] = lambda: theirs(x)
    except ImportError:
        theirs = None
        print("(OpenDP is not installed: run with /work/venv-opendp/bin/python)")
    runs = _runs(fns, repeats)
    times = {name: statistics.median(r) for name, r in runs.items()}
    exact = x.T @ x
    ours = ours_box(x).reshape(d, d)
    print(f"\nSSCP of a ({n} x {d}) float64 array, rows of L2 norm <= 1 (median and best of {repeats})")
    peer = times.get("OpenDP make_np_sscp: call")
    peer_best = min(runs["OpenDP make_np_sscp: call"]) if peer else None
    for name, t in times.items():
        best = min(runs[name])
        ratio = f"{t / peer:6.2f}x OpenDP (best {best / peer_best:5.2f}x)" if peer and peer_best else ""
        print(f"  {name:46s} {t * 1e3:9.2f} ms (best {best * 1e3:8.2f})  {ratio}")
    print(
        f"  max |ours - X.T@X| = {np.abs(ours - exact).max():.2e} (entries up to {np.abs(exact).max():.3g})"
    )
    if theirs is not None:
        print(f"  max |OpenDP - X.T@X| = {np.abs(np.asarray(theirs(x)) - exact).max():.2e}")
    peer_map = theirs.map(1) if theirs is not None else "-"
    print(f"  sensitivity (one row added or removed): ours {float(ours_box.map(1))!r}, OpenDP {peer_map}")
    print("  (OpenDP's SSCP map is a row count: the norm is applied by the noise step after it)")


def bench_pipeline(n: int, d: int, repeats: int) -> None:
    """The SSCP as a regression builds it: unbounded rows clipped to L2 norm 1, then the SSCP, one chained
    call in each library (each checks its input once, at the chain's entry; OpenDP's clamp has no check)."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(n, d)) / math.sqrt(d)  # about half the rows outside the unit ball
    rows = dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float), size=d))
    clip = dp.t.make_clip_l2(rows, dp.SymmetricDistance(), 1.0)
    ours = clip >> dp.t.make_sscp(clip.output_domain, dp.SymmetricDistance(), max_size=n)
    fns: dict[str, Callable[[], Any]] = {"dpcompose make_clip_l2 >> make_sscp": lambda: ours(x)}
    try:
        import opendp.prelude as odp
        from opendp.extras.numpy import array2_domain
        from opendp.extras.numpy._make_np_clamp import make_np_clamp
        from opendp.extras.numpy._make_np_sscp import make_np_sscp

        odp.enable_features("contrib", "honest-but-curious", "idealized-numerics")
        clamp = make_np_clamp(
            array2_domain(num_columns=d, T=float, nan=False), odp.symmetric_distance(), norm=1.0, p=2
        )
        theirs = clamp >> make_np_sscp(clamp.output_domain, odp.symmetric_distance())
        fns["OpenDP make_np_clamp >> make_np_sscp"] = lambda: theirs(x)
    except ImportError:
        theirs = None
    runs = _runs(fns, repeats)
    times = {name: statistics.median(r) for name, r in runs.items()}
    peer = times.get("OpenDP make_np_clamp >> make_np_sscp")
    print(f"\nClip rows to L2 norm 1, then the SSCP, ({n} x {d}) normal / √d (median and best of {repeats})")
    for name, t in times.items():
        ratio = f"{t / peer:6.2f}x OpenDP" if peer else ""
        print(f"  {name:46s} {t * 1e3:9.2f} ms (best {min(runs[name]) * 1e3:8.2f})  {ratio}")
    if theirs is not None:
        diff = np.abs(np.asarray(ours(x)).reshape(d, d) - np.asarray(theirs(x))).max()
        print(
            f"  max |ours - OpenDP| = {diff:.2e} (ours: a 2**-20 grid, rows clipped 2**-20 inside the ball)"
        )


def bench_row_map(n: int, repeats: int) -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(scale=2.0, size=(n, 3))
    rows = dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float), size=3))
    a, b, c = pl.col("a"), pl.col("b"), pl.col("c")
    exprs = [(2 * a + b).clip(-1.0, 1.0), c.abs().clip(0.0, 1.0), pl.when(a > b).then(a - b).otherwise(0.0)]
    vectorised = dp.t.make_map_exprs(rows, dp.SymmetricDistance(), ["a", "b", "c"], exprs)

    def one_row(r: Any) -> list[float]:
        u, v, w = r
        return [min(max(2 * u + v, -1.0), 1.0), min(abs(w), 1.0), u - v if u > v else 0.0]

    element = dp.VectorDomain(dp.AtomDomain(float), size=3)
    per_row = dp.t.make_map_rows(rows, dp.SymmetricDistance(), one_row, element, default=[0.0, 0.0, 0.0])
    frame = pl.DataFrame({"a": x[:, 0], "b": x[:, 1], "c": x[:, 2]})
    times = _best(
        {
            "dpcompose make_map_rows (Python per row)": lambda: per_row(x),
            "dpcompose make_map_exprs (vectorised)": lambda: vectorised(x),
            "Polars select (reference)": lambda: frame.select(exprs),
        },
        repeats,
    )
    same = np.array_equal(vectorised(x), np.asarray(per_row(x)))
    print(f"\nRow map of ({n} x 3) float64 rows (best of {repeats}); outputs equal: {same}")
    slow = times["dpcompose make_map_rows (Python per row)"]
    for name, t in times.items():
        print(f"  {name:42s} {t * 1e3:9.1f} ms  {slow / t:8.1f}x faster than make_map_rows")
    print(f"  output domain: {vectorised.output_domain!r}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--columns", type=int, default=None)
    parser.add_argument("--map-rows", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    parser.add_argument("--busy", action="store_true", help="keep one core busy during the SSCP timings")
    args = parser.parse_args()
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"SSCP clock: {args.clock} time; load average {load} on {os.cpu_count()} cores (a shared machine)")
    shapes = [(1_000_000, 10), (100_000, 10), (1_000_000, 3)]
    if args.rows is not None or args.columns is not None:
        shapes = [(args.rows or 1_000_000, args.columns or 10)]
    spinner = multiprocessing.Process(target=_spin, daemon=True) if args.busy else None
    if spinner is not None:
        spinner.start()
        print("(one core kept busy by a spinning process during the SSCP timings)")
    try:
        for n, d in shapes:
            bench_sscp(n, d, args.repeats)
        bench_pipeline(shapes[0][0], shapes[0][1], args.repeats)
    finally:
        if spinner is not None:
            spinner.terminate()
            spinner.join()
    bench_row_map(args.map_rows, max(2, args.repeats // 2))


if __name__ == "__main__":
    main()
