"""Draw docs/composition.png: ε against k for basic, advanced, zCDP and optimal composition.

Run:  pip install -e '.[plot]' && python docs/plot_composition.py
(matplotlib is the ``plot`` extra; this script is not imported by the tests.)
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from dpcompose import accounting as acc

EPS = 0.1
DELTA = 1e-6


def main() -> None:
    ks = sorted({round(10 ** (i / 8)) for i in range(33)})
    curves: dict[str, list[float]] = {
        "basic": [],
        "advanced (best of DRV, KOV)": [],
        "zCDP → CKS": [],
        "optimal": [],
    }
    for k in ks:
        eps = [EPS] * k
        curves["basic"].append(float(acc.basic(eps)[0]))
        curves["advanced (best of DRV, KOV)"].append(float(acc.advanced(eps, None, DELTA)[0]))
        rho = acc.zcdp_compose([acc.pure_to_zcdp(EPS)] * k)
        curves["zCDP → CKS"].append(float(acc.zcdp_to_approx(rho, DELTA)))
        curves["optimal"].append(float(acc.optimal_epsilon(eps, None, DELTA)))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, ys in curves.items():
        ax.plot(ks, ys, label=label, linewidth=1.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("k (number of ε = 0.1 mechanisms composed)")
    ax.set_ylabel(f"total ε at δ = {DELTA:g}")
    ax.set_title("Composition theorems compared (dpcompose.accounting)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    out = Path(__file__).with_name("composition.png")
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
