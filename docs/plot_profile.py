"""Draw docs/privacy_curve.png with ``dp.plot_profile``: the certified ε(δ) of three measurements.

Run:  pip install -e '.[plot]' && python docs/plot_profile.py
(matplotlib is the ``plot`` extra; tests/analysis/test_curve.py runs this script when it is installed.)
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import dpcompose as dp

DELTAS = [10.0**-k for k in range(12, 0, -1)]


def main(out: Path) -> None:
    ints = dp.VectorDomain(dp.AtomDomain(int))
    count = dp.t.make_count(ints, dp.SymmetricDistance())
    gauss = count >> dp.m.make_gaussian(count.output_domain, count.output_metric, scale=4.0)
    laplace = count >> dp.m.make_laplace(count.output_domain, count.output_metric, scale=2.0)
    ten = dp.make_sequential(*[gauss] * 10)
    fig, ax = plt.subplots(figsize=(6.5, 4))
    dp.plot_profile(laplace, 1, DELTAS, ax=ax, label="count + Laplace(scale 2): ε = 0.5 for every δ")
    dp.plot_profile(gauss, 1, DELTAS, ax=ax, label="count + Gaussian(σ 4)")
    dp.plot_profile(ten, 1, DELTAS, ax=ax, label="10 × count + Gaussian(σ 4), sequential")
    ax.set_title("Certified ε(δ), d_in = 1 (dp.plot_profile)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("privacy_curve.png"))
