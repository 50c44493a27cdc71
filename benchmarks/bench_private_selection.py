"""Private selection among k Gaussian candidates: what it costs next to composition, and how fast it runs.

Privacy (one table): k candidates, each a Gaussian release with ρ = 1/8 (scale 2, sensitivity 1), and
the (ε, δ = 1e-6) of keeping the best of them:

* ``opendp compose``: OpenDP 0.16 ``make_composition`` of the k candidates, then ``make_zCDP_to_approxDP``
  (the peer's route: OpenDP 0.16 has no Rényi or zCDP private selection);
* ``dpc compose``: dpcompose's sequential composition, then ``make_zcdp_to_approx`` (each library's best
  zCDP → (ε, δ) conversion);
* ``dpc TNB η=0`` / ``η=1`` / ``Poisson``: ``make_private_selection_renyi`` with ``E[K] ≈ k`` runs
  (γ solved for the mean; Poisson μ = k), then ``make_renyi_to_approx``.

Speed (second table): one release of the best of a random number of runs of a trivial candidate, mean
number of runs 10, median over ``--reps`` releases: OpenDP 0.16 ``make_select_private_candidate`` (a
threshold the score never reaches, so it runs its whole geometric number of runs) against dpcompose's
``make_private_selection`` (geometric, pure) and ``make_private_selection_renyi`` (η = 0, η = 1, Poisson).

Run: ``PYTHONPATH=src /work/venv-opendp/bin/python benchmarks/bench_private_selection.py [--reps 300]``.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import opendp.prelude as odp

import dpcompose as dp

DELTA = 1e-6
RHO_SCALE = 2.0  # Gaussian scale 2 at sensitivity 1: ρ = 1/8


def _gamma_for_mean(eta: float, mean: float) -> float:
    """γ with E[K] = mean for the truncated negative binomial (bisection on the closed form)."""

    def mean_of(g: float) -> float:
        if eta == 0:
            return (1 - g) / (g * math.log(1 / g))
        return eta * (1 - g) / (g * (1 - g**eta))

    lo, hi = 1e-12, 1 - 1e-12
    for _ in range(200):
        mid = (lo + hi) / 2
        if mean_of(mid) > mean:
            lo = mid
        else:
            hi = mid
    return float(Fraction(hi).limit_denominator(10**9))


def privacy_table(ks: list[int]) -> None:
    odp.enable_features("contrib")
    space = odp.atom_domain(T=float, nan=False), odp.absolute_distance(T=float)
    peer = space >> odp.m.then_gaussian(RHO_SCALE)
    g = dp.m.make_gaussian(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=RHO_SCALE)
    cand = dp.make_postprocess(g, lambda y: (y, y))
    print(f"(ε, δ={DELTA:g}) of choosing the best of k Gaussian candidates (ρ = 1/8 each), E[K] ≈ k")
    print(
        f"{'k':>4} {'opendp compose':>15} {'dpc compose':>12} {'dpc TNB η=0':>12} {'dpc TNB η=1':>12} "
        f"{'dpc Poisson':>12}"
    )
    for k in ks:
        peer_eps = odp.c.make_zCDP_to_approxDP(odp.c.make_composition([peer] * k)).map(1.0).epsilon(DELTA)
        ours_compose = float(dp.make_zcdp_to_approx(dp.make_sequential(*([g] * k)), DELTA).map(1)[0])
        row = []
        for runs in (
            dp.TruncatedNegativeBinomialRuns(0, _gamma_for_mean(0, k)),
            dp.TruncatedNegativeBinomialRuns(1, _gamma_for_mean(1, k)),
            dp.PoissonRuns(k),
        ):
            sel = dp.make_private_selection_renyi([cand] * k, runs)
            row.append(float(dp.make_renyi_to_approx(sel, DELTA).map(1)[0]))
        print(
            f"{k:>4} {peer_eps:>15.3f} {ours_compose:>12.3f} {row[0]:>12.3f} {row[1]:>12.3f} {row[2]:>12.3f}"
        )


def _median_us(release: Callable[[], Any], reps: int) -> float:
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        release()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e6


def speed_table(reps: int) -> None:
    odp.enable_features("contrib", "honest-but-curious")
    space = odp.atom_domain(T=float, nan=False), odp.absolute_distance(T=float)
    trivial = odp.m.make_user_measurement(
        *space,
        odp.max_divergence(),
        function=lambda x: (float(x), "a"),
        privacy_map=lambda d: d,
        TO=odp.RuntimeType.parse("(f64, ExtrinsicObject)"),
    )
    peer = odp.c.make_select_private_candidate(trivial, stop_probability=0.1, threshold=1e300)
    pure = dp.make_user_measurement(
        dp.AtomDomain(float),
        dp.AbsoluteDistance(),
        dp.PureDP(),
        lambda x: (x, "a"),
        lambda d: d,
        trusted=True,
    )
    zcdp = dp.make_user_measurement(
        dp.AtomDomain(float),
        dp.AbsoluteDistance(),
        dp.ZCDP(),
        lambda x: (x, "a"),
        lambda d: d,
        trusted=True,
    )
    sel_pure = dp.make_private_selection(pure, 0.1)
    rows: list[tuple[str, Callable[[], Any]]] = [
        ("opendp select_private_candidate (geometric, γ=0.1)", lambda: peer(1.0)),
        ("dpc make_private_selection (geometric, γ=0.1)", lambda: sel_pure.function(1.0)),
    ]
    for label, runs in (
        ("dpc renyi TNB η=1 (γ=0.1)", dp.TruncatedNegativeBinomialRuns(1, 0.1)),
        ("dpc renyi TNB η=0 (E[K]=10)", dp.TruncatedNegativeBinomialRuns(0, _gamma_for_mean(0, 10))),
        ("dpc renyi TNB η=-0.5 (E[K]=10)", dp.TruncatedNegativeBinomialRuns(-0.5, _gamma_for_mean(-0.5, 10))),
        ("dpc renyi Poisson (μ=10)", dp.PoissonRuns(10)),
    ):
        sel = dp.make_private_selection_renyi(zcdp, runs)
        rows.append((label, lambda sel=sel: sel.function(1.0)))
    print(f"\none release, mean 10 runs of a trivial candidate: median µs over {reps} releases")
    for label, release in rows:
        print(f"{label:<52} {_median_us(release, reps):>10.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=300)
    args = parser.parse_args()
    privacy_table([4, 16, 64])
    speed_table(args.reps)


if __name__ == "__main__":
    main()
