"""Per-step overhead of the adaptive compositors with pair budgets (DP-SGD's shape).

    python benchmarks/bench_pair_budget.py [--steps 10000] [--records 100]

Overhead (µs per step, median of 3 runs of ``--steps`` steps): the query is binary randomized response
(ε = 1), whose own work is small, so that the compositor's share can be read off:
- the query alone (``rr(1)``);
- the query through ``make_adaptive_sequential`` / ``make_adaptive_concurrent`` declared with its pair
  (``rr.privacy_loss(1)``, ``steps=``), the same query object every step (its pair is asked once);
- the same with a new, equal query object every step (its loss hook runs every step: that is the query's
  own work, counted in its own row);
- a dominated query (ε = 1/2 under the declared ε = 1): the dominance check, cached per pair of pairs;
- for comparison, the compositor with budgets in the measure's units (PureDP, ε = 1 per step).
Overhead = compositor time − query alone (− its loss hook where it runs every step); target ≤ 50 µs.

DP-SGD's shape: each step Poisson-subsamples ``--records`` floats at q = 0.01, clamps them to [0, 1], sums
them and adds Gaussian noise σ = 1 (``make_subsample(clamp >> sum >> gaussian)``); the compositor is
declared with that step's pair. Rows: the step alone, and as a query (one step object, whose pair the
compositor asks once; two alternating, whose loss hook runs every step: the subsampled pair is built
once per step object, so that is a cached read). Also the time to build the
compositor and read its map (the PLD of ``--steps`` declared pairs at δ = 1e-5).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import dpcompose as dp


def per_call(fn: Callable[[int], object], n: int) -> float:
    """Median over 3 runs of µs per call of ``fn(i)``, i = 0 … n − 1."""
    runs = []
    for _ in range(3):
        start = time.perf_counter()
        for i in range(n):
            fn(i)
        runs.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--records", type=int, default=100)
    args = parser.parse_args()
    n, records = args.steps, args.records
    rows: list[tuple[str, float]] = []

    cats, discrete = dp.CategoricalDomain([0, 1]), dp.DiscreteDistance()

    def rr_with(eps: float) -> dp.Measurement:  # type: ignore[type-arg]
        return dp.m.make_randomized_response(cats, discrete, epsilon=eps)

    rr = rr_with(1.0)
    pair = rr.privacy_loss(1)
    assert pair is not None
    alone = per_call(lambda i: rr(1), n)
    hook = per_call(lambda i: rr.privacy_loss(1), n)
    rows.append(("randomized response alone (the query's own work)", alone))
    rows.append(("its loss hook, rr.privacy_loss(1)", hook))
    fresh = [rr_with(1.0) for _ in range(64)]  # equal but distinct objects, as a loop building each step
    half = rr_with(0.5)
    makers = (("sequential", dp.make_adaptive_sequential), ("concurrent", dp.make_adaptive_concurrent))
    for name, make in makers:
        cases: list[tuple[str, Callable[[int], dp.Measurement], float]] = [  # type: ignore[type-arg]
            ("same query object", lambda i: rr, alone),
            ("a new equal query each step", lambda i: fresh[i % len(fresh)], alone + hook),
            ("dominated query (ε = 1/2 under 1)", lambda i: half, per_call(lambda i: half(1), n)),
        ]
        for label, query, own in cases:
            q = make(cats, discrete, dp.ApproxDP(), 1, pair, steps=3 * n, delta=1e-6)(1)
            t = per_call(lambda i, q=q, query=query: q(query(i)), n)  # type: ignore[misc]
            rows.append((f"pair budgets, adaptive {name}, {label}", t))
            rows.append(("  compositor overhead (minus the query's own work)", t - own))
        q = make(cats, discrete, dp.PureDP(), 1, [1.0] * (3 * n))(1)
        t = per_call(lambda i, q=q: q(rr), n)  # type: ignore[misc]
        rows.append((f"PureDP budgets, adaptive {name}, same query object", t))
        rows.append(("  compositor overhead (minus the query's own work)", t - alone))

    vec = dp.VectorDomain(dp.AtomDomain(float))
    sym = dp.SymmetricDistance()
    clamp = dp.t.make_clamp(vec, sym, (0.0, 1.0))
    total = clamp >> dp.t.make_sum(clamp.output_domain, clamp.output_metric, max_size=10**6)
    step = dp.make_subsample(total >> dp.m.make_gaussian(total.output_domain, total.output_metric, 1.0), 0.01)
    declared = step.privacy_loss(1)
    assert declared is not None
    data = [0.5] * records
    rows.append(("DP-SGD-shaped step alone", per_call(lambda i: step(data), n)))
    q = dp.make_adaptive_sequential(vec, sym, dp.ProfileDP(), 1, declared, steps=3 * n)(data)
    rows.append(("DP-SGD-shaped step through adaptive sequential", per_call(lambda i: q(step), n)))
    twin = dp.make_subsample(total >> dp.m.make_gaussian(total.output_domain, total.output_metric, 1.0), 0.01)
    steps = (step, twin)
    q = dp.make_adaptive_sequential(vec, sym, dp.ProfileDP(), 1, declared, steps=3 * n)(data)
    rows.append(("  two equal step objects alternating", per_call(lambda i: q(steps[i % 2]), n)))
    start = time.perf_counter()
    comp = dp.make_adaptive_sequential(vec, sym, dp.ApproxDP(), 1, declared, steps=n, delta=1e-5)
    built = time.perf_counter() - start
    print(f"DP-SGD: {n} steps of {declared!r}")
    eps = float(comp.map(1)[0])
    print(f"build + map (PLD of {n} declared pairs at δ = 1e-5): {built:.2f} s, ε = {eps:.6f}")
    width = max(len(r[0]) for r in rows)
    for label, us in rows:
        print(f"{label:<{width}}  {us:8.1f} µs/step")


if __name__ == "__main__":
    main()
