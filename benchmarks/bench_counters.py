"""Running counts at T = 1,024 and T = 2**14: RMSE over all prefixes, OpenDP 0.16's consistent b-ary tree
beside dpcompose's consistent tree, its online binary counter, its online k-ary counter with negative
digits and its matrix-factorisation online counter.

Same data (T = 1,024 per-step counts, Poisson(3), one fixed draw), every mechanism released ``--runs``
times with fresh secure noise; the figure is ``√(mean over runs and steps of (ŝ_t − s_t)²)``, with the
exact RMSE its noise law implies beside it. Rows:

* OpenDP: ``make_b_ary_tree`` → ``then_laplace`` (scale by ``binary_search_param`` at ε = 1) →
  ``make_consistent_b_ary_tree``, prefix sums of the leaves; at b = 2, 4 and at OpenDP's own
  ``choose_branching_factor(1024)``.
* dpcompose: ``make_b_ary_tree`` → ``make_laplace`` (scale L, ε = 1) → ``tree_running_counts``
  (consistent), at the same b's and at b = 4 and 32 (1,024 = 32²: no padding).
* dpcompose ``make_online_counter`` (binary mechanism, ε = 1, pure): the raw sums (scale 11 for its 11
  levels) and ``estimator="honaker"`` (the best linear unbiased online estimate; scale 10, as it never
  reads the root), each with the exact RMSE its variance formula gives beside it.
* dpcompose ``make_online_counter(estimator="kary")`` (the k-ary tree with negative digits, Andersson–
  Pagh–Steiner–Torkamani 2025; ε = 1, pure): the default k for T (the least exact mean squared error),
  scale L for its L levels, with its exact RMSE σ²·mean_n Σ|digits of n| beside it; and the exact RMSE
  of every odd k up to 41 (no simulation), to show which k is best.
* dpcompose ``make_matrix_counter`` at (ε = 1, δ = 1e-6): σ is the least (to 0.1%) whose tight (ε, δ)
  (``make_zcdp_to_profile`` → ``make_fix_delta``, the discrete Gaussian's dominating pair) is within ε = 1
  at δ = 1e-6 — an approximate-DP guarantee, WEAKER than the pure ε = 1 of the other rows — and, for
  reference, at ρ = 1/2 (the zCDP that pure ε = 1 implies, Bun–Steinke 2016 Prop. 1.4).

The second table, at T = 2**14 (Poisson(3) steps, ``--runs-large`` runs): OpenDP's consistent tree at
its own choice of b, dpcompose's consistent tree at b = 4, and the three online estimators (raw: scale 15;
honaker: scale 14; kary: its default k).

Run: ``PYTHONPATH=src /work/venv-opendp/bin/python benchmarks/bench_counters.py [--runs N] [--runs-large N]
[--seed S]`` (``--seed``: the online counters draw from generators seeded alike — reproducible, not
private).
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

import dpcompose as dp
from dpcompose.measurements._kary_counter import best_branching, kary_levels, kary_weight_sum
from dpcompose.measurements._matrix_counter import counter_grid, sqrt_factor_coefficients

T = 1024
LARGE = 1 << 14
L1 = dp.L1Distance()
STEPS = dp.VectorDomain(dp.AtomDomain(int), size=T)

Row = tuple[str, float, str, float]


def steps(length: int) -> dp.VectorDomain:
    return dp.VectorDomain(dp.AtomDomain(int), size=length)


def rmse(estimates: list[np.ndarray], truth: np.ndarray) -> float:
    return math.sqrt(float(np.mean([np.mean((e - truth) ** 2) for e in estimates])))


def opendp_rows(x: np.ndarray, runs: int, branchings: tuple[int, ...] = (2, 4)) -> list[Row]:
    try:
        import opendp.prelude as odp  # optional peer (the OpenDP venv)
    except ImportError:
        print("(opendp not installed: its rows are skipped)")
        return []
    odp.enable_features("contrib")
    rows = []
    length = len(x)
    chosen = odp.t.choose_branching_factor(size_guess=length)
    for b in sorted({*branchings, chosen}):
        tree = odp.t.make_b_ary_tree(
            odp.vector_domain(odp.atom_domain(T=int)),
            odp.l1_distance(T=int),
            leaf_count=length,
            branching_factor=b,
        )
        scale = odp.binary_search_param(lambda s, t=tree: t >> odp.m.then_laplace(scale=s), d_in=1, d_out=1.0)
        meas = tree >> odp.m.then_laplace(scale=scale)
        post = odp.t.make_consistent_b_ary_tree(branching_factor=b)
        data = x.tolist()
        start = time.perf_counter()
        est = [np.cumsum(post(meas(data))) for _ in range(runs)]
        per_run = (time.perf_counter() - start) / runs
        label = f"OpenDP consistent tree, b={b}" + (" (its choice)" if b == chosen else "")
        rows.append((label, rmse(est, np.cumsum(x)), f"ε = {meas.map(1)}", per_run))
    return rows


def tree_row(x: np.ndarray, runs: int, b: int) -> Row:
    length = len(x)
    tree = dp.t.make_b_ary_tree(steps(length), L1, branching=b)
    levels = int(tree.map(1))
    noisy = tree >> dp.m.make_laplace(tree.output_domain, tree.output_metric, scale=float(levels))
    start = time.perf_counter()
    est = [dp.t.tree_running_counts(noisy(x), length, branching=b) for _ in range(runs)]
    per_run = (time.perf_counter() - start) / runs
    return f"dpcompose consistent tree, b={b}", rmse(est, np.cumsum(x)), f"ε = {noisy.map(1)}", per_run


def online_rows(x: np.ndarray, runs: int, counter: Any, label: str, budget: str) -> Row:
    length = len(x)
    start = time.perf_counter()
    est = []
    for _ in range(runs):
        q = counter(x)
        est.append(np.array([q(t) for t in range(length)], dtype=np.float64))
    per_run = (time.perf_counter() - start) / runs
    return label, rmse(est, np.cumsum(x)), budget, per_run


def least_scale(fits: Callable[[float], bool], lo: float, hi: float) -> float:
    """The least scale in [lo, hi] (to 0.1%) with ``fits(scale)``; ``fits`` is monotone."""
    while hi / lo > 1.001:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if fits(mid) else (mid, hi)
    return hi


def mf_expected_rmse(scale: float) -> float:
    grid = counter_grid(Fraction(scale))
    used = float(grid.units * grid.width)
    f2 = np.cumsum([float(f * f) for f in sqrt_factor_coefficients(T)])
    return used * math.sqrt(float(np.mean(f2)))


def laplace_variance(scale: float) -> float:
    """σ² = 2q/(1 − q)², q = e^(−1/scale): the discrete Laplace variance."""
    q = math.exp(-1 / scale)
    return 2 * q / (1 - q) ** 2


def binary_expected_rmse(length: int, scale: float, *, honaker: bool) -> float:
    """√(mean over prefixes [0, n) of the answer's variance): σ² per piece of the dyadic decomposition raw
    (the root for n = T), σ²·2**h/(2**(h+1) − 1) per piece of height h for honaker (heights ≤ ⌈log₂T⌉ − 1:
    [0, T) is its two halves)."""
    top = (length - 1).bit_length() - (1 if honaker else 0)
    total = 0.0
    for n in range(1, length + 1):
        heights = [top] * (n >> top) + [h for h in range(top) if (n >> h) & 1]
        total += sum(2**h / (2 ** (h + 1) - 1) if honaker else 1.0 for h in heights)
    return math.sqrt(laplace_variance(scale) * total / length)


def kary_expected_rmse(length: int, k: int, epsilon: float = 1.0) -> float:
    """√(σ²·mean_n Σ|balanced digits of n|) at scale L/ε (the exact variance of the k-ary counter)."""
    scale = kary_levels(length, k) / epsilon
    return math.sqrt(laplace_variance(scale) * kary_weight_sum(length, k) / length)


def online_counters(
    x: np.ndarray, runs: int, seeded: Callable[[], Any]
) -> tuple[list[Row], dict[str, float]]:
    """raw, honaker and kary (default k) at ε = 1 on ``x``, and their exact RMSEs."""
    length = len(x)
    raw_scale, h_scale = float(length.bit_length()), float(max((length - 1).bit_length(), 1))
    k = best_branching(length)
    k_scale = float(kary_levels(length, k))
    labels = (
        "dpcompose online binary counter",
        "dpcompose online binary counter, honaker",
        f"dpcompose online k-ary counter, k={k} (default)",
    )
    counters = (
        dp.m.make_online_counter(steps(length), L1, scale=raw_scale, rng=seeded()),
        dp.m.make_online_counter(steps(length), L1, scale=h_scale, estimator="honaker", rng=seeded()),
        dp.m.make_online_counter(steps(length), L1, scale=k_scale, estimator="kary", rng=seeded()),
    )
    rows = [
        online_rows(x, runs, c, label, f"ε = {c.map(1)}") for c, label in zip(counters, labels, strict=True)
    ]
    expected = {
        labels[0]: binary_expected_rmse(length, raw_scale, honaker=False),
        labels[1]: binary_expected_rmse(length, h_scale, honaker=True),
        labels[2]: kary_expected_rmse(length, k),
    }
    return rows, expected


def print_table(title: str, rows: list[Row], expected: dict[str, float]) -> None:
    print(title)
    print(f"{'mechanism':52} {'RMSE':>8} {'exact':>8} {'ms/run':>8}  guarantee")
    for label, value, budget, per_run in rows:
        exact = f"{expected[label]:8.2f}" if label in expected else " " * 8
        print(f"{label:52} {value:8.2f} {exact} {per_run * 1e3:8.1f}  {budget}")


def print_k_sweep(length: int) -> None:
    sweep = [(k, kary_levels(length, k), kary_expected_rmse(length, k)) for k in range(3, 42, 2)]
    best = min(sweep, key=lambda row: row[2])
    cells = "  ".join(f"k={k} (L={levels}): {value:.2f}" for k, levels, value in sweep)
    print(f"exact RMSE of the k-ary counter at T = {length}, ε = 1, by k: {cells}")
    print(f"  best odd k ≤ 41: {best[0]}; the default (best over every odd k): {best_branching(length)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--runs-large", type=int, default=20, help="runs at T = 2**14")
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed the online counters alike (default: secure noise)",
    )
    args = parser.parse_args()
    x = np.random.default_rng(36).poisson(3, size=T).astype(np.int64)
    rows = opendp_rows(x, args.runs)
    for b in (2, 4, 32):
        rows.append(tree_row(x, args.runs, b))
    seeded = (lambda: np.random.default_rng(args.seed)) if args.seed is not None else (lambda: None)
    online, expected = online_counters(x, args.runs, seeded)
    rows += online

    def tight_eps(s: float) -> Fraction:
        m = dp.m.make_matrix_counter(STEPS, L1, scale=s)
        return dp.make_fix_delta(dp.make_zcdp_to_profile(m), 1e-6).map(1)[0]

    sigma_ad = least_scale(lambda s: tight_eps(s) <= 1, 0.5, 20.0)
    mf = dp.m.make_matrix_counter(STEPS, L1, scale=sigma_ad)
    eps = float(tight_eps(sigma_ad))
    label = f"dpcompose matrix counter, σ={sigma_ad:.4f}"
    rows.append(online_rows(x, args.runs, mf, label, f"(ε, δ) = ({eps:.4f}, 1e-6)  [weaker than pure ε]"))
    expected[label] = mf_expected_rmse(sigma_ad)
    sigma_rho = least_scale(lambda s: dp.m.make_matrix_counter(STEPS, L1, scale=s).map(1) <= 0.5, 0.5, 20.0)
    mf_rho = dp.m.make_matrix_counter(STEPS, L1, scale=sigma_rho)
    label_rho = f"dpcompose matrix counter, σ={sigma_rho:.4f}"
    rho = float(mf_rho.map(1))
    rows.append(online_rows(x, args.runs, mf_rho, label_rho, f"ρ = {rho:.6f} (zCDP; ε = 1 implies ρ = 0.5)"))
    expected[label_rho] = mf_expected_rmse(sigma_rho)
    total = int(x.sum())
    print_table(
        f"T = {T}, {args.runs} runs each, Poisson(3) steps (total {total}); RMSE over all prefixes",
        rows,
        expected,
    )
    print_k_sweep(T)

    big = np.random.default_rng(37).poisson(3, size=LARGE).astype(np.int64)
    rows = opendp_rows(big, args.runs_large, branchings=())
    rows.append(tree_row(big, args.runs_large, 4))
    online, expected = online_counters(big, args.runs_large, seeded)
    rows += online
    print()
    total = int(big.sum())
    title = (
        f"T = {LARGE}, {args.runs_large} runs each, Poisson(3) steps (total {total}); RMSE over all prefixes"
    )
    print_table(title, rows, expected)
    print_k_sweep(LARGE)


if __name__ == "__main__":
    main()
