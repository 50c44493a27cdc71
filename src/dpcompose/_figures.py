"""Figures for the docs: ``python -m dpcompose figures adaptive`` writes docs/adaptive_queries.png.

The adaptive-composition experiment: a global budget (ε, δ) = (0.2, 2·10⁻³⁰), repeated Laplace queries
with one per-query ε from 0.002 to 0.2, and the number of queries each filter rule answers before the
budget runs out. matplotlib is an optional extra (``pip install dpcompose[plot]``), imported here only.
"""

from __future__ import annotations

import argparse
import importlib
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from dpcompose.accounting._filters import (
    BasicFilter,
    FilterRule,
    RRUVFilter,
    WhitehouseFilter,
    ZCDPApproxFilter,
)

__all__ = ["adaptive_counts", "main"]

GLOBAL_BUDGET = (Fraction(1, 5), Fraction(2, 10**30))


def _rules(epsilon: Fraction, delta: Fraction) -> dict[str, FilterRule]:
    return {
        "basic (Σε ≤ ε_g)": BasicFilter(epsilon, delta),
        "RRUV 2016 Thm 5.1": RRUVFilter(epsilon, delta),
        "Whitehouse et al. 2023 (δ″ = δ_g)": WhitehouseFilter(epsilon, delta, delta),
        "zCDP filter + CKS20": ZCDPApproxFilter(epsilon, delta),
    }


def adaptive_counts(per_query: list[float]) -> dict[str, list[int]]:
    """Number of ε-DP queries of each per-query ε that each rule answers within (0.2, 2e-30).

    Examples:
        >>> adaptive_counts([0.002, 0.2])["basic (Σε ≤ ε_g)"]
        [100, 1]
    """
    rules = _rules(*GLOBAL_BUDGET)
    out: dict[str, list[int]] = {name: [] for name in rules}
    for eps in per_query:
        cost = (Fraction(repr(eps)), Fraction(0))
        for name, rule in rules.items():
            n = rule.max_queries_like(rule.start(), cost)
            out[name].append(-1 if n is None else n)
    return out


def main(argv: list[str] | None = None) -> int:
    """``figures adaptive [--out PATH]``: draw the adaptive-composition figure; returns an exit code."""
    parser = argparse.ArgumentParser(prog="python -m dpcompose figures", description="draw the docs figures")
    parser.add_argument("figure", choices=["adaptive"])
    parser.add_argument("--out", default="docs/adaptive_queries.png", help="output PNG path")
    args = parser.parse_args(argv)
    try:
        matplotlib = importlib.import_module("matplotlib")
    except ImportError:
        print("figures need matplotlib: pip install 'dpcompose[plot]' (or pip install matplotlib)")
        return 1
    matplotlib.use("Agg")
    plt: Any = importlib.import_module("matplotlib.pyplot")
    grid = [float(x) for x in np.round(np.geomspace(0.002, 0.2, 41), 6)]
    counts = adaptive_counts(grid)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for (name, ys), style in zip(counts.items(), ["-o", "-s", "-^", "-d"], strict=True):
        ax.plot(grid, ys, style, label=name, markersize=3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("per-query ε (Laplace)")
    ax.set_ylabel("queries answered before the budget runs out")
    ax.set_title("Privacy filters, global budget (ε, δ) = (0.2, 2·10⁻³⁰)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    print(f"wrote {out}")
    for name, ys in counts.items():
        print(f"{name:36s} ε=0.002: {ys[0]:4d}   ε=0.02: {ys[len(grid) // 2]:3d}   ε=0.2: {ys[-1]}")
    return 0
