"""Build times of the PLD constructors (dpcompose.accounting._pld, _pld_dgauss) at hard parameters.

Run: ``python benchmarks/bench_pld_constructors.py [name-filter]``. Prints, per case, the time to build the
lattice sides (a Gaussian PLD is built lazily: it is composed with a trivial PLD to force it) and the
certified upper δ at ε = 0 and 1 as a check that the numbers stay put.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from dpcompose.accounting import (
    PLD,
    PrivacyLoss,
    pld_discrete_gaussian,
    pld_discrete_laplace,
    pld_gaussian,
    pld_laplace,
    pld_randomized_response,
)

CASES: list[tuple[str, Callable[[], PLD]]] = [
    ("discrete Laplace Δ=2**30, Δ/t=0.1", lambda: pld_discrete_laplace(2**30, 10 * 2**30)),
    ("discrete Laplace Δ=2**30, Δ/t=1", lambda: pld_discrete_laplace(2**30, 2**30)),
    ("discrete Laplace Δ=2**30, Δ/t=20", lambda: pld_discrete_laplace(2**30, Fraction(2**30, 20))),
    ("discrete Laplace Δ=1000, Δ/t=20", lambda: pld_discrete_laplace(1000, 50)),
    ("discrete Laplace Δ=3, Δ/t=20", lambda: pld_discrete_laplace(3, Fraction(3, 20))),
    (
        "PrivacyLoss.discrete_laplace(2**30, 10·2**30).pld()",
        lambda: PrivacyLoss.discrete_laplace(2**30, 10 * 2**30).pld(),
    ),
    ("discrete Gaussian Δ=1, s=1/30", lambda: pld_discrete_gaussian(1, Fraction(1, 30))),
    ("discrete Gaussian Δ=30, s=1", lambda: pld_discrete_gaussian(30, 1)),
    ("discrete Gaussian Δ=1, s=3", lambda: pld_discrete_gaussian(1, 3)),
    ("discrete Gaussian Δ=2**20/20, s=2**20", lambda: pld_discrete_gaussian(2**20 // 20, 2**20)),
    ("Laplace Δ/b=20", lambda: pld_laplace(20, 1)),
    ("Laplace Δ/b=700", lambda: pld_laplace(700, 1)),
    ("randomized response ε=700", lambda: pld_randomized_response(700)),
    ("Gaussian μ=30 (lattice)", lambda: pld_gaussian(30, 1).compose(pld_randomized_response(0))),
]


def main() -> None:
    pick = sys.argv[1] if len(sys.argv) > 1 else ""
    for name, build in CASES:
        if pick not in name:
            continue
        t0 = time.perf_counter()
        pld = build()
        pld.upper  # noqa: B018 - builds a lazy (Gaussian) PLD's lattice
        dt = time.perf_counter() - t0
        d0, d1 = (float(pld.delta(e)) for e in (0, 1))
        print(f"{name:55s} {dt:8.3f} s   δ(0) ≤ {d0:.12g}   δ(1) ≤ {d1:.12g}", flush=True)


if __name__ == "__main__":
    main()
