"""ms per DP-SGD step through the Rényi odometer, with the subsampled-Rényi cache on and off, in one run.

The step is docs/training.md's (logistic regression on 3 features, n = 1000, clip 1, σ = 1.1, q = 0.02,
``make_subsample(..., accounting="renyi")``), built afresh at each θ as a user's loop does; the odometer
is ``make_odometer(rows, sym, dp.RenyiDP(), d_in=1, delta=1e-5)`` with no ledger and with an SQLite
ledger. For scale, the same loop through the pair-budget compositor (``make_adaptive_sequential`` with
the step's dominating pair, ``accounting="auto"``). Rows alternate on/off ``--repeats`` times (median
reported), so that both see the same machine load.

    PYTHONPATH=src python benchmarks/bench_rdp_cache.py [--steps 100] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import dpcompose as dp
from dpcompose.accounting import _rdp_cache as rdp_cache

N, D, Q, SIGMA = 1000, 3, 0.02, 1.1
ROWS = dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float), size=D + 1))
SYM = dp.SymmetricDistance()


def data() -> Any:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(N, D))
    y = (rng.random(N) < 1 / (1 + np.exp(-x @ np.array([1.0, -2.0, 0.5])))).astype(float)
    return np.column_stack([x, y])


def step(theta: Any, accounting: str) -> Any:
    def gradient(r: Any) -> Any:
        x, label = np.asarray(r[:-1]), r[-1]
        return (1 / (1 + np.exp(-x @ theta)) - label) * x

    grads = dp.t.make_map_rows(
        ROWS, SYM, gradient, dp.VectorDomain(dp.AtomDomain(float), size=D), default=np.zeros(D)
    )
    clipped = grads >> dp.t.make_clip_l2(grads.output_domain, SYM, norm=1.0)
    total = clipped >> dp.t.make_vector_sum(clipped.output_domain, SYM, max_size=N)
    noisy = total >> dp.m.make_gaussian(total.output_domain, total.output_metric, scale=SIGMA)
    return dp.make_subsample(noisy, Q, accounting=accounting)


def loop(q: Any, steps: int, accounting: str) -> float:
    """ms per step of ``steps`` gradient steps answered by ``q``."""
    theta = np.zeros(D)
    t0 = time.perf_counter()
    for _ in range(steps):
        theta = theta - 0.5 * q(step(theta, accounting)) / (Q * N)
    return (time.perf_counter() - t0) / steps * 1e3


def odometer(rows: Any, steps: int, ledger: Any) -> float:
    return loop(
        dp.make_odometer(ROWS, SYM, dp.RenyiDP(), d_in=1, delta=1e-5, ledger=ledger)(rows), steps, "renyi"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rows = data()
    times: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            for on in (False, True):
                rdp_cache.clear()
                with rdp_cache.SWITCH.turned(on):
                    tag = "on " if on else "off"
                    times.setdefault(f"Rényi odometer, no ledger, cache {tag}", []).append(
                        odometer(rows, args.steps, None)
                    )
                    ledger = dp.SQLiteLedger(str(Path(tmp) / f"l{r}{tag}.db"), "sgd", create=True)
                    times.setdefault(f"Rényi odometer, SQLite ledger, cache {tag}", []).append(
                        odometer(rows, args.steps, ledger)
                    )
                    ledger.close()
            pair = step(np.zeros(D), "auto").privacy_loss(1)
            comp = dp.make_adaptive_sequential(
                ROWS, SYM, dp.ApproxDP(), 1, pair, steps=args.steps, delta=1e-5
            )
            times.setdefault("pair-budget compositor (PLD)", []).append(loop(comp(rows), args.steps, "auto"))
    print(f"{args.steps} steps, median of {args.repeats} runs, ms per step:")
    for name, values in sorted(times.items()):
        print(f"  {name:42s} {statistics.median(values):7.2f}   ({', '.join(f'{v:.2f}' for v in values)})")


if __name__ == "__main__":
    main()
