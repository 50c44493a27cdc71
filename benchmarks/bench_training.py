"""DP training through the combinators, beside dp_accounting and plain numpy, in one run (issue 34, speed).

Run: ``python benchmarks/bench_training.py`` (``--quick`` for the small sizes only; ``--src PATH`` to time
another checkout's ``src``, e.g. main's, beside this one). dp_accounting is a benchmark-only peer (the
``bench`` extra); without it only our side is printed.

Rows:

* ``sequential T``: the privacy map of ``make_sequential(*[step] * T, output_measure=ApproxDP(), delta=1e-5)``
  for the DP-SGD step ``make_subsample(sum of clipped values >> make_gaussian(scale=1), rate=0.01)``
  (Poisson, σ = 1, q = 0.01), beside dp_accounting's PLD of
  ``from_gaussian_mechanism(1, sampling_prob=0.01).self_compose(T)`` read at the same δ. ``build`` is the
  time of ``make_sequential`` itself, ``map`` that of ``m.map(1)``.
* ``mix``: ``PrivacyLoss.compose`` of 100 × Laplace(b = 10), 100 × Gaussian(σ = 10) and 1,000 × the
  subsampled Gaussian above, ε at δ = 1e-6 (the upper end, as a privacy map reads it, then the certified
  interval), beside dp_accounting's PLD of the same mechanisms.
* ``clip+sum n×d``: ``make_clip_l2(norm=1) >> make_vector_sum(max_size=10**7)`` on a float array, beside
  plain numpy (``np.einsum`` row norms, one scaling multiply, ``sum(axis=0)``), timed alternately in one
  process; ``exact`` is the same chain with the speed switch off (``DPCOMPOSE_VECTOR_SPEEDUPS=0``: the
  rescaling clip and the exact sum), ``map − 1`` what the sum's rounding adds to the map at d_in = 1.
  10,000 × 100,000 (an 8 GB input) only with ``--big``; ``--sizes 10000x50000`` picks other sizes.
  ``MiB ours`` / ``MiB numpy``: the most memory each holds at once beyond the input (tracemalloc, measured
  after the timed runs; numpy's scaled copy is the size of the input, the fused clip+sum a few blocks).

Each number is the best of ``--repeats`` runs, each in a fresh process for the accounting rows (both
libraries cache nothing across processes; the first import and the lazy scipy imports are paid before the
clock starts, by a different, small composition).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
SIGMA, RATE, DELTA = 1.0, 0.01, 1e-5
MIX_DELTA = 1e-6


def _ours(src: str) -> Any:
    sys.path.insert(0, src)
    import dpcompose

    return dpcompose


def _step(dp: Any, sigma: float, rate: float) -> Any:
    clipped = dp.VectorDomain(dp.AtomDomain(float, bounds=(-1.0, 1.0)))
    total = dp.t.make_sum(clipped, dp.SymmetricDistance(), max_size=10**6)
    noise = dp.m.make_gaussian(total.output_domain, total.output_metric, scale=sigma)
    return dp.make_subsample(total >> noise, rate=rate)


def one_sequential(src: str, steps: int) -> dict[str, float]:
    dp = _ours(src)
    dp.make_sequential(*[_step(dp, 1.5, 0.02)] * 10, output_measure=dp.ApproxDP(), delta=DELTA).map(1)
    step = _step(dp, SIGMA, RATE)
    children = [step] * steps
    t0 = time.perf_counter()
    run = dp.make_sequential(*children, output_measure=dp.ApproxDP(), delta=DELTA)
    t1 = time.perf_counter()
    eps = run.map(1)[0]
    t2 = time.perf_counter()
    return {"build": t1 - t0, "map": t2 - t1, "eps": float(eps)}


def one_sequential_peer(steps: int) -> dict[str, float]:
    from dp_accounting.pld import privacy_loss_distribution as pl

    pl.from_gaussian_mechanism(1.5, sampling_prob=0.02).self_compose(10).get_epsilon_for_delta(DELTA)
    t0 = time.perf_counter()
    pld = pl.from_gaussian_mechanism(SIGMA, sampling_prob=RATE).self_compose(steps)
    eps = pld.get_epsilon_for_delta(DELTA)
    return {"map": time.perf_counter() - t0, "eps": float(eps)}


def one_mix(src: str) -> dict[str, float]:
    _ours(src)
    from dpcompose.accounting import PrivacyLoss

    warm = PrivacyLoss.subsampled(PrivacyLoss.gaussian(1, 2), 0.02)
    PrivacyLoss.compose([PrivacyLoss.laplace(1, 3), PrivacyLoss.gaussian(1, 3), warm]).epsilon(1e-3)
    parts = (
        [PrivacyLoss.laplace(1, 10)] * 100
        + [PrivacyLoss.gaussian(1, 10)] * 100
        + [PrivacyLoss.subsampled(PrivacyLoss.gaussian(1, 1), RATE)] * 1000
    )
    t0 = time.perf_counter()
    upper = PrivacyLoss.compose(parts).epsilon(MIX_DELTA)
    t1 = time.perf_counter()
    lo, hi = PrivacyLoss.compose(parts).epsilon_bounds(MIX_DELTA)
    t2 = time.perf_counter()
    assert hi == upper
    return {"map": t1 - t0, "bounds": t2 - t1, "eps": float(upper), "lower": float(lo)}


def one_mix_peer() -> dict[str, float]:
    from dp_accounting.pld import privacy_loss_distribution as pl

    pl.from_laplace_mechanism(3.0).compose(pl.from_gaussian_mechanism(3.0)).get_epsilon_for_delta(1e-3)
    t0 = time.perf_counter()
    p = (
        pl.from_laplace_mechanism(10.0)
        .self_compose(100)
        .compose(pl.from_gaussian_mechanism(10.0).self_compose(100))
        .compose(pl.from_gaussian_mechanism(SIGMA, sampling_prob=RATE).self_compose(1000))
    )
    eps = p.get_epsilon_for_delta(MIX_DELTA)
    return {"map": time.perf_counter() - t0, "eps": float(eps)}


def clip_sum(src: str, n: int, d: int, repeats: int, exact: bool = True) -> dict[str, float]:
    import contextlib

    import numpy as np

    dp = _ours(src)
    vector_speedups: Any = None
    with contextlib.suppress(ImportError):  # (a checkout without the switch, ``--src``: one path only)
        from dpcompose.transformations._vector_speed import vector_speedups
    rng = np.random.default_rng(0)
    x = np.empty((n, d))
    for start in range(0, n, 1000):  # (in blocks: no second full-size array)
        x[start : start + 1000] = rng.standard_normal((min(1000, n - start), d))
    x *= 2.0 / math.sqrt(d)  # about 9 rows in 10 are clipped
    rows = dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float), size=d))
    clip = dp.t.make_clip_l2(rows, dp.SymmetricDistance(), norm=1.0)
    total = clip >> dp.t.make_vector_sum(clip.output_domain, clip.output_metric, max_size=10**7)

    def plain(x: Any) -> Any:
        norms = np.sqrt(np.einsum("ij,ij->i", x, x))
        return (x * np.minimum(1.0, 1.0 / norms)[:, None]).sum(axis=0)

    def switch(on: bool) -> Any:
        return vector_speedups(on) if vector_speedups is not None else contextlib.nullcontext()

    total(x[:4])
    plain(x[:4])
    ours = theirs = slow = math.inf
    a = b = c = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        a = total(x)
        t1 = time.perf_counter()
        b = plain(x)
        t2 = time.perf_counter()
        ours, theirs = min(ours, t1 - t0), min(theirs, t2 - t1)
        del b
        if exact and vector_speedups is not None:
            with switch(False):
                t3 = time.perf_counter()
                c = total(x)
                slow = min(slow, time.perf_counter() - t3)
    b = plain(x)
    ours_peak, numpy_peak = peak_bytes(lambda: total(x)), peak_bytes(lambda: plain(x))
    return {
        "ours": ours,
        "numpy": theirs,
        "ours_peak": ours_peak / 2**20,
        "numpy_peak": numpy_peak / 2**20,
        "exact": slow,
        "diff": float(np.max(np.abs(a - b))),
        "exact_diff": float(np.max(np.abs(a - c))) if c is not None else math.nan,
        "slack": float(total.map(1)) - 1.0,
    }


def peak_bytes(run: Any) -> int:
    """The most memory ``run()`` holds at once beyond what was allocated before it (tracemalloc: numpy
    reports its array buffers to it), its result included."""
    import tracemalloc

    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        result = run()
        peak = tracemalloc.get_traced_memory()[1] - before
        del result
        return peak
    finally:
        tracemalloc.stop()


def _child(args: list[str]) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, str(HERE), "--child", *args], capture_output=True, text=True, check=True
    ).stdout
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


def _best(args: list[str], repeats: int) -> dict[str, float] | None:
    runs = []
    for _ in range(repeats):
        try:
            runs.append(_child(args))
        except subprocess.CalledProcessError as exc:
            if "ModuleNotFoundError" in exc.stderr:
                return None
            raise
    best = dict(runs[0])
    for key in best:
        if key not in ("eps", "lower", "diff"):
            best[key] = min(r[key] for r in runs)
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--src", default=str(HERE.parents[1] / "src"))
    parser.add_argument("--big", action="store_true", help="also clip+sum on 10,000 × 100,000 (8 GB input)")
    parser.add_argument("--sizes", nargs="*", default=None, help="clip+sum sizes, NxD")
    parser.add_argument("--clip-only", action="store_true", help="only the clip+sum rows")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        kind, *rest = args.child
        result = {
            "seq": lambda: one_sequential(args.src, int(rest[0])),
            "seq-peer": lambda: one_sequential_peer(int(rest[0])),
            "mix": lambda: one_mix(args.src),
            "mix-peer": one_mix_peer,
        }[kind]()
        print(json.dumps(result))
        return
    src = ["--src", args.src]
    if not args.clip_only:
        _accounting_rows(args, src)
    print(
        f"\n{'clip+sum n × d':22} {'ours':>10} {'numpy':>9} {'ratio':>7} {'exact':>9} {'ex/numpy':>8} "
        f"{'max |diff|':>10} {'|fast−exact|':>12} {'map − 1':>9} {'MiB ours':>9} {'MiB numpy':>9}"
    )
    sizes = [(100_000, 100), (2_000, 10_000)] if args.quick else [(100_000, 100), (10_000, 10_000)]
    if args.sizes:
        sizes = [(int(a), int(b)) for a, b in (s.lower().split("x") for s in args.sizes)]
    if args.big:
        sizes.append((10_000, 100_000))
    for n, d in sizes:
        big = n * d > 4 * 10**8
        r = clip_sum(args.src, n, d, args.repeats if not big else 1, exact=not big)
        print(
            f"{format(n, ',') + ' × ' + format(d, ','):22} {r['ours']:10.3f} {r['numpy']:9.3f} "
            f"{r['ours'] / r['numpy']:7.2f} {r['exact']:9.3f} {r['exact'] / r['numpy']:8.2f} "
            f"{r['diff']:10.2e} {r['exact_diff']:12.2e} {r['slack']:9.2e} {r['ours_peak']:9.1f} "
            f"{r['numpy_peak']:9.1f}"
        )


def _accounting_rows(args: Any, src: list[str]) -> None:
    steps = (10_000, 100_000) if args.quick else (10_000, 100_000, 1_000_000)
    print(
        f"{'case':22} {'ours build':>10} {'ours map':>9} {'dp_acc':>8} {'map/dp':>7} {'ours ε':>12} "
        f"{'dp_acc ε':>12}"
    )
    for t in steps:
        ours = _best(["seq", str(t), *src], args.repeats)
        peer = _best(["seq-peer", str(t)], args.repeats)
        assert ours is not None
        pm, pe = (peer["map"], peer["eps"]) if peer else (math.nan, math.nan)
        print(
            f"{'sequential ' + format(t, ','):22} {ours['build']:10.3f} {ours['map']:9.3f} {pm:8.3f} "
            f"{ours['map'] / pm:7.2f} {ours['eps']:12.6f} {pe:12.6f}"
        )
    ours = _best(["mix", *src], args.repeats)
    peer = _best(["mix-peer"], args.repeats)
    assert ours is not None
    pm, pe = (peer["map"], peer["eps"]) if peer else (math.nan, math.nan)
    print(
        f"{'mix (upper end)':22} {'':10} {ours['map']:9.3f} {pm:8.3f} {ours['map'] / pm:7.2f} "
        f"{ours['eps']:12.7f} {pe:12.7f}"
    )
    print(
        f"{'mix (interval)':22} {'':10} {ours['bounds']:9.3f} {'':8} {'':7} "
        f"[{ours['lower']:.7f}, {ours['eps']:.7f}]"
    )


if __name__ == "__main__":
    main()
