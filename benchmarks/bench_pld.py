"""Certified PLD accounting (dpcompose.accounting._pld) beside dp_accounting's PLD, in one run.

Run: ``python benchmarks/bench_pld.py`` (needs the ``bench`` extra for dp_accounting; without it only
dpcompose's numbers are printed). Prints, per case, dpcompose's certified interval [lower, upper] for
ε(δ), its relative width, the time, dp_accounting's pessimistic PLD ε and time, and the ratio
upper / dp_accounting. The Gaussian case also prints the exact value (Balle–Wang 2018 closed form).
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from dpcompose.accounting import gaussian_profile, pld_gaussian, pld_laplace

DELTA = 1e-6


def ours_laplace(k: int, scale: float, bits: int) -> tuple[float, float, float]:
    t = time.perf_counter()
    lo, hi = pld_laplace(1, scale, step_bits=bits).self_compose(k).epsilon_bounds(DELTA)
    return float(lo), float(hi), time.perf_counter() - t


def ours_gaussian(k: int, sigma: float, bits: int) -> tuple[float, float, float]:
    t = time.perf_counter()
    lo, hi = pld_gaussian(1, sigma, step_bits=bits).self_compose(k).epsilon_bounds(DELTA)
    return float(lo), float(hi), time.perf_counter() - t


def peer(kind: str, k: int, param: float) -> tuple[float, float] | None:
    try:
        from dp_accounting.pld import privacy_loss_distribution as pldlib
    except ImportError:
        return None
    t = time.perf_counter()
    if kind == "laplace":
        p = pldlib.from_laplace_mechanism(param, sensitivity=1, value_discretization_interval=1e-4)
    else:
        p = pldlib.from_gaussian_mechanism(param, sensitivity=1, value_discretization_interval=1e-4)
    eps = p.self_compose(k).get_epsilon_for_delta(DELTA)
    return float(eps), time.perf_counter() - t


def main() -> None:
    rows = []
    for bits in (14, 16):
        lo, hi, s = ours_laplace(1000, 10.0, bits)
        rows.append(("1000 × Laplace(10)", bits, lo, hi, s, peer("laplace", 1000, 10.0), None))
        lo, hi, s = ours_gaussian(1000, 20.0, bits)
        exact = float(gaussian_profile(1, 20.0 / math.sqrt(1000)).epsilon(DELTA))
        rows.append(("1000 × Gaussian(20)", bits, lo, hi, s, peer("gaussian", 1000, 20.0), exact))
    print(f"{'case':22} {'h':>7} {'lower':>10} {'upper':>10} {'width/ε':>9} {'s':>6} "
          f"{'dp_acc':>10} {'s':>6} {'up/dp_acc':>9} {'exact≤':>10}")
    for name, bits, lo, hi, s, pr, ex in rows:
        pe, ps = pr if pr else (math.nan, math.nan)
        print(f"{name:22} 2^-{bits:<4} {lo:10.5f} {hi:10.5f} {(hi - lo) / hi:9.2e} {s:6.2f} "
              f"{pe:10.5f} {ps:6.2f} {hi / pe:9.6f} {ex if ex is not None else float('nan'):10.5f}")


if __name__ == "__main__":
    main()
