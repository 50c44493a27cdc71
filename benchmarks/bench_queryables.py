"""Per-query overhead of dpcompose's compositors, beside numpy and OpenDP, on the same queries.

    python benchmarks/bench_queryables.py [--queries 10000]

Rows: 10,000 scalar Laplace queries (scale 10, ε = 0.1 each)
- numpy: ``x + rng.laplace(0, 10)`` (no privacy machinery, not secure);
- dpcompose mechanism alone: ``make_laplace`` called directly (exact discrete noise from os.urandom);
- dpcompose adaptive sequential / adaptive concurrent compositor: the same measurement as a query;
- OpenDP ``make_sequential_composition`` (opendp installed from the ``bench`` extra), its own Laplace.
Overhead = compositor time per query − mechanism-alone time per query. Also: building and mapping
``make_sequential`` of 100,000 children (one repeated child, and 100,000 distinct children).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

import dpcompose as dp


def per_call(fn: Callable[[], object], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=10_000)
    n = parser.parse_args().queries
    floats, absolute = dp.AtomDomain(float), dp.AbsoluteDistance()
    lap = dp.m.make_laplace(floats, absolute, scale=10.0)
    rows: list[tuple[str, float]] = []
    rng = np.random.default_rng()
    rows.append(("numpy rng.laplace (float, not secure)", per_call(lambda: 1.0 + rng.laplace(0, 10.0), n)))
    alone = per_call(lambda: lap(1.0), n)
    rows.append(("dpcompose make_laplace alone (exact, secure)", alone))
    # a measurement whose function does nothing isolates the compositor's own work per query
    free = dp.Measurement(floats, absolute, dp.PureDP(), lambda x: x, lambda d: d / 10)
    for name, make in (
        ("adaptive sequential", dp.make_adaptive_sequential),
        ("adaptive concurrent", dp.make_adaptive_concurrent),
    ):
        q = make(floats, absolute, dp.PureDP(), 1, [0.1] * n)(1.0)
        rows.append((f"dpcompose {name} compositor", per_call(lambda q=q: q(lap), n)))
        q = make(floats, absolute, dp.PureDP(), 1, [0.1] * n)(1.0)
        rows.append((f"dpcompose {name}, no-op query", per_call(lambda q=q: q(free), n)))
    try:
        import opendp.prelude as odp

        odp.enable_features("contrib")
        o_lap = odp.m.make_laplace(
            odp.atom_domain(T=float, nan=False), odp.absolute_distance(T=float), scale=10.0
        )
        rows.append(("OpenDP make_laplace alone", per_call(lambda: o_lap(1.0), n)))
        comp = odp.c.make_adaptive_composition(
            odp.atom_domain(T=float, nan=False),
            odp.absolute_distance(T=float),
            odp.max_divergence(),
            1.0,
            [0.1] * n,
        )
        oq = comp(1.0)
        rows.append(("OpenDP make_adaptive_composition", per_call(lambda: oq(o_lap), n)))
    except ImportError:
        print("(opendp not installed: pip install -e '.[bench]')")

    print(f"\nPer-query time, {n} scalar Laplace queries (µs; lower is better)\n")
    print(f"{'what':<48} {'µs/query':>10} {'vs numpy':>9}")
    base = rows[0][1]
    for name, us in rows:
        print(f"{name:<48} {us:>10.2f} {us / base:>8.1f}×")
    ours = dict(rows)
    for name in ("adaptive sequential", "adaptive concurrent"):
        print(
            f"overhead of the {name} compositor (no-op query): "
            f"{ours[f'dpcompose {name}, no-op query']:.2f} µs/query"
        )
    if "OpenDP make_adaptive_composition" in ours:
        o_over = ours["OpenDP make_adaptive_composition"] - ours["OpenDP make_laplace alone"]
        print(f"overhead of OpenDP's adaptive composition: {o_over:.2f} µs/query")

    print("\nBuilding and mapping make_sequential of 100,000 children")
    for label, children in (
        ("one child repeated", [lap] * 100_000),
        (
            "100,000 distinct children",
            [dp.m.make_laplace(floats, absolute, scale=10.0 + i % 7) for i in range(100_000)],
        ),
    ):
        t0 = time.perf_counter()
        m = dp.make_sequential(*children)
        t1 = time.perf_counter()
        eps = m.map(1)
        t2 = time.perf_counter()
        print(f"  {label:<28} build {t1 - t0:6.3f} s   map {t2 - t1:6.3f} s   ε = {float(eps):.6g}")


if __name__ == "__main__":
    main()
