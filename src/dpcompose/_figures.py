"""Figures for the docs: ``python -m dpcompose figures adaptive`` writes docs/adaptive_queries.png,
``python -m dpcompose figures pld`` writes docs/pld_vs_k.png (ε against k, generic theorems vs PLD).

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

import dpcompose as dp
from dpcompose.accounting import gaussian_profile, optimal_epsilon, zcdp_to_approx
from dpcompose.accounting._filters import (
    BasicFilter,
    FilterRule,
    RRUVFilter,
    WhitehouseFilter,
    ZCDPApproxFilter,
)

__all__ = ["adaptive_counts", "main", "pld_curves"]

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


PLD_DELTA = Fraction(1, 10**6)


def pld_curves(ks: list[int]) -> dict[str, list[float]]:
    """ε at δ = 1e-6 of k × make_laplace(scale 10) and k × make_gaussian(σ 20), sensitivity 1: the
    generic theorems (optimal composition; zCDP → Canonne–Kamath–Steinke), the library's composite (the
    least candidate: the PLD), the PLD's certified lower end, and the Gaussian's exact value (Balle–Wang
    2018, continuous noise).

    Examples:
        >>> curves = pld_curves([1, 10])
        >>> curves["Laplace: PLD (dpcompose)"][1] < curves["Laplace: optimal composition"][1]
        True
    """
    floats = dp.AtomDomain(float)
    lap = dp.m.make_laplace(floats, dp.AbsoluteDistance(), scale=10.0)
    gauss = dp.m.make_gaussian(floats, dp.AbsoluteDistance(), scale=20.0)
    out: dict[str, list[float]] = {
        "Laplace: optimal composition": [],
        "Laplace: PLD (dpcompose)": [],
        "Laplace: PLD certified lower end": [],
        "Gaussian: zCDP → CKS 2020": [],
        "Gaussian: PLD (dpcompose)": [],
        "Gaussian: exact (Balle–Wang 2018)": [],
    }
    for k in ks:
        eps_lap = lap.map(Fraction(1))
        out["Laplace: optimal composition"].append(float(optimal_epsilon([eps_lap] * k, None, PLD_DELTA)))
        composite = dp.make_sequential(*[lap] * k, output_measure=dp.ApproxDP(), delta=float(PLD_DELTA))
        out["Laplace: PLD (dpcompose)"].append(float(composite.map(1)[0]))
        loss = composite.privacy_loss(1)
        assert loss is not None
        out["Laplace: PLD certified lower end"].append(float(loss.epsilon_bounds(PLD_DELTA)[0]))
        rho = gauss.map(Fraction(1)) * k
        out["Gaussian: zCDP → CKS 2020"].append(float(zcdp_to_approx(rho, PLD_DELTA)))
        g_comp = dp.make_sequential(*[gauss] * k, output_measure=dp.ApproxDP(), delta=float(PLD_DELTA))
        out["Gaussian: PLD (dpcompose)"].append(float(g_comp.map(1)[0]))
        out["Gaussian: exact (Balle–Wang 2018)"].append(
            float(gaussian_profile(1, 20.0 / k**0.5).epsilon(PLD_DELTA))
        )
    return out


def _pld_figure(plt: Any, out: Path) -> None:
    ks = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]
    curves = pld_curves(ks)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    for ax, which in zip(axes, ("Laplace", "Gaussian"), strict=True):
        names = [n for n in curves if n.startswith(which)]
        ref_name = names[2]  # the PLD's certified lower end (Laplace), the exact value (Gaussian)
        ref = curves[ref_name]
        for name, style in zip(names[:2], ["-o", "-s"], strict=True):
            excess = [max(y / r - 1, 1e-7) for y, r in zip(curves[name], ref, strict=True)]
            ax.plot(ks, excess, style, label=name.split(": ")[1], markersize=3)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("k (compositions)")
        ax.set_ylabel(f"ε / ({ref_name.split(': ')[1]}) − 1")
        ax.set_title(f"k × {which} ({'scale 10' if which == 'Laplace' else 'σ 20'}), δ = 1e-6")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    print(f"wrote {out}")
    for name, ys in curves.items():
        print(f"{name:36s} k=100: {ys[ks.index(100)]:.5f}   k=1000: {ys[-1]:.5f}")


def main(argv: list[str] | None = None) -> int:
    """``figures adaptive|pld [--out PATH]``: draw a docs figure; returns an exit code."""
    parser = argparse.ArgumentParser(prog="python -m dpcompose figures", description="draw the docs figures")
    parser.add_argument("figure", choices=["adaptive", "pld"])
    parser.add_argument("--out", default=None, help="output PNG path")
    args = parser.parse_args(argv)
    try:
        matplotlib = importlib.import_module("matplotlib")
    except ImportError:
        print("figures need matplotlib: pip install 'dpcompose[plot]' (or pip install matplotlib)")
        return 1
    matplotlib.use("Agg")
    plt: Any = importlib.import_module("matplotlib.pyplot")
    if args.figure == "pld":
        _pld_figure(plt, Path(args.out or "docs/pld_vs_k.png"))
        return 0
    args.out = args.out or "docs/adaptive_queries.png"
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
