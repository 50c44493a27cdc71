"""The Rényi/zCDP odometer beside OpenDP's zCDP odometer and beside the filter route, in one run.

Workload A (zCDP): T Gaussian queries on one float, σ chosen from each answer (σ = 2 after a large answer,
else 4), δ fixed in advance. Printed, at a few moments:

* OpenDP's ``make_fully_adaptive_composition(..., zero_concentrated_divergence())``: its ``privacy_loss`` is
  Σρ; read at δ by the zCDP conversion (Canonne–Kamath–Steinke 2020) that number is what a *filter* with
  that ρ fixed in advance would certify — not a bound covered by a theorem when the moment of reading (or
  the budget) is chosen from the answers (Lécuyer 2021);
* dpcompose's ZCDP odometer (``delta=`` fixed in advance): ``privacy_loss()``, with probability ≥ 1 − δ a
  bound on the privacy loss at every moment (Ville's inequality), and ``stopping_epsilon()``, the tighter
  figure valid only for the decision to stop (stopping before it passes ε̂ is an (ε̂, δ) filter);
* the filter route: how many of the same adaptive queries a zCDP filter with a budget fixed in advance
  (the largest ρ converting to the target ε at δ) admits, against the odometer stopped just before its
  stopping ε would pass the same target.

Workload B (DP-SGD): T Poisson-subsampled Gaussian steps (q = 0.01), σ ∈ {1, 2} chosen from each answer,
δ = 1e-5: dpcompose's Rényi odometer readings (loss bound, stopping ε) against the Rényi-filter
conversion of the same sums at the full δ (valid only for a budget fixed in advance) and the certified PLD
of the σ sequence that ran (valid only had that sequence been fixed in advance). OpenDP 0.16 has no
subsampled-Gaussian measurement with a Rényi or zCDP map to put in its odometer, so there is no peer
column there.

Per-query times of both odometers are printed too. Run: ``PYTHONPATH=src python
benchmarks/bench_renyi_odometer.py [--steps 1000]`` (``pip install opendp`` for the peer).
"""

from __future__ import annotations

import argparse
import time
from fractions import Fraction
from typing import Any

import numpy as np

import dpcompose as dp
from dpcompose.accounting import renyi_stopping_epsilon, renyi_to_approx, zcdp_budget, zcdp_to_approx
from dpcompose.accounting._filters import DEFAULT_ORDERS


def opendp_zcdp(sigmas: list[float], reads: list[int]) -> tuple[dict[int, float], float] | None:
    """OpenDP's zCDP odometer given the σ sequence dpcompose's run chose: Σρ at each read, s per query."""
    try:
        import opendp.prelude as odp  # benchmark-only peer
    except ImportError:
        return None
    odp.enable_features("contrib")
    dom, met = odp.atom_domain(T=float, nan=False), odp.absolute_distance(T=float)
    q = odp.c.make_fully_adaptive_composition(dom, met, odp.zero_concentrated_divergence())(1.0)
    gauss = {s: odp.m.make_gaussian(dom, met, scale=s) for s in set(sigmas)}
    out, elapsed = {}, 0.0
    for t, sigma in enumerate(sigmas, start=1):
        t0 = time.perf_counter()
        q(gauss[sigma])
        elapsed += time.perf_counter() - t0
        if t in reads:
            out[t] = float(q.privacy_loss(1.0))
    return out, elapsed / len(sigmas)


def ours_zcdp(steps: int, reads: list[int], delta: float) -> tuple[dict[int, Any], float, list[float]]:
    """dpcompose's zCDP odometer, σ chosen from each answer: (loss-bound ε, stopping ε, Σρ) at each read, s
    per query, the σs."""
    floats, ab = dp.AtomDomain(float), dp.AbsoluteDistance()
    q = dp.make_odometer(floats, ab, dp.ZCDP(), 1, delta=delta)(1.0)
    rng = np.random.default_rng(1)
    gauss = {s: dp.m.make_gaussian(floats, ab, s, rng=rng) for s in SIGMAS}
    out, answer, elapsed, sigmas = {}, 0.0, 0.0, []
    for t in range(1, steps + 1):
        sigma = sigma_for(answer)
        sigmas.append(sigma)
        t0 = time.perf_counter()
        answer = q(gauss[sigma])
        elapsed += time.perf_counter() - t0
        if t in reads:
            out[t] = (q.privacy_loss()[0], q.stopping_epsilon(), q.spent()["alpha=2"].exact / 2)
    return out, elapsed / steps, sigmas


SIGMAS = (20.0, 40.0)


def sigma_for(answer: float) -> float:
    """The analyst's rule: less noise after a large answer."""
    return SIGMAS[0] if abs(answer) > 20 else SIGMAS[1]


def admitted_by_target(target: float, delta: float, seed: int = 3) -> tuple[int, int]:
    """Queries admitted before the target (ε, δ) is reached: a zCDP filter with ρ fixed in advance, and the
    odometer stopped just before its stopping ε would pass the target (same adaptive σ rule, same seed, so
    both see the same answers as long as both run)."""
    floats, ab = dp.AtomDomain(float), dp.AbsoluteDistance()

    def gauss(rng: Any) -> dict[float, Any]:
        return {s: dp.m.make_gaussian(floats, ab, s, rng=rng) for s in SIGMAS}

    g = gauss(np.random.default_rng(seed))
    fq = dp.make_privacy_filter(floats, ab, dp.ZCDP(), 1, zcdp_budget(target, delta))(1.0)
    answer, n_filter = 0.0, 0
    while True:
        try:
            answer = fq(g[sigma_for(answer)])
        except dp.BudgetExceeded:
            break
        n_filter += 1
    g = gauss(np.random.default_rng(seed))
    oq = dp.make_odometer(floats, ab, dp.ZCDP(), 1, delta=delta)(1.0)
    answer, n_odo, orders = 0.0, 0, dp_orders()
    while True:  # the odometer as a filter: stop before the reading after the next query passes the target
        rho = 1 / (2 * Fraction(sigma_for(answer)) ** 2)
        sums = [s.exact + a * rho for a, s in zip(orders, oq.spent().values(), strict=True)]
        if renyi_stopping_epsilon(orders, sums, Fraction(delta)) > Fraction(target):
            break
        answer = oq(g[sigma_for(answer)])
        n_odo += 1
    return n_filter, n_odo


def dp_orders() -> tuple[Fraction, ...]:
    """The odometer's default orders."""
    return DEFAULT_ORDERS


def ours_sgd(steps: int, reads: list[int], delta: float) -> tuple[dict[int, tuple[Any, ...]], float]:
    ints = dp.VectorDomain(dp.AtomDomain(int))
    count = dp.t.make_count(ints, dp.SymmetricDistance())
    rng = np.random.default_rng(2026)
    steps_by_sigma = {
        s: dp.make_subsample(
            count >> dp.m.make_gaussian(dp.AtomDomain(int), dp.AbsoluteDistance(), s, rng=rng), 0.01, rng=rng
        )
        for s in (1.0, 2.0)
    }
    q = dp.make_odometer(ints, dp.SymmetricDistance(), dp.RenyiDP(), 1, delta=delta)(np.arange(10_000))
    orders = dp_orders()
    out: dict[int, tuple[Any, ...]] = {}
    sigma, elapsed, ran = 1.0, 0.0, {1.0: 0, 2.0: 0}
    for t in range(1, steps + 1):
        t0 = time.perf_counter()
        noisy = q(steps_by_sigma[sigma])
        elapsed += time.perf_counter() - t0
        ran[sigma] += 1
        sigma = 1.0 if noisy > 100 else 2.0
        if t in reads:
            eps = q.privacy_loss()[0]
            sums = [s.exact for s in q.spent().values()]
            filt = renyi_to_approx(orders, sums, Fraction(delta))
            pld = static_pld_epsilon(ran, delta)
            out[t] = (eps, q.stopping_epsilon(), filt, pld)
    return out, elapsed / steps


def static_pld_epsilon(ran: dict[float, int], delta: float) -> float:
    """The certified PLD ε of the σ counts that ran, as if fixed in advance (the non-adaptive optimum)."""
    loss = dp.accounting.PrivacyLoss
    parts = [loss.subsampled(loss.discrete_gaussian(1, s), 0.01).times(n) for s, n in ran.items() if n]
    return float(loss.compose(parts).epsilon(delta))


def renyi_filter_time(steps: int) -> float:
    """Seconds per step of the same DP-SGD steps through a Rényi filter with a budget never reached."""
    ints = dp.VectorDomain(dp.AtomDomain(int))
    count = dp.t.make_count(ints, dp.SymmetricDistance())
    rng = np.random.default_rng(2026)
    step = dp.make_subsample(
        count >> dp.m.make_gaussian(dp.AtomDomain(int), dp.AbsoluteDistance(), 1.0, rng=rng), 0.01, rng=rng
    )
    budget = dp.RenyiCurve(lambda a: Fraction(10**9), "10⁹")
    q = dp.make_privacy_filter(ints, dp.SymmetricDistance(), dp.RenyiDP(), 1, budget)(np.arange(10_000))
    t0 = time.perf_counter()
    for _ in range(steps):
        q(step)
    return (time.perf_counter() - t0) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    args = parser.parse_args()
    steps, delta = args.steps, 1e-6
    reads = sorted({steps // 10, steps // 4, steps // 2, steps})

    print(f"A. zCDP: {steps} Gaussian queries, σ ∈ {set(SIGMAS)} chosen from each answer, δ = {delta:g}")
    ours, ours_t, sigmas = ours_zcdp(steps, reads, delta)
    peer = opendp_zcdp(sigmas, reads)
    print("   (OpenDP replays the σ sequence dpcompose's run chose, so Σρ is the same)")
    print(f"{'t':>6} {'OpenDP Σρ':>10} {'Σρ→ε (CKS)':>11} {'dpcompose loss ε':>17} {'stopping ε':>11}")
    for t in reads:
        eps, stop, rho = ours[t]
        p = f"{peer[0][t]:10.4f} {float(zcdp_to_approx(peer[0][t], delta)):11.4f}" if peer else f"{'n/a':>22}"
        print(f"{t:>6} {p} {float(eps):17.4f} {float(stop):11.4f}   (our Σρ {float(rho):.4f})")
    if peer:
        print(f"per query: OpenDP {peer[1] * 1e6:.1f} µs, dpcompose {ours_t * 1e6:.1f} µs")
    else:
        print(f"per query: dpcompose {ours_t * 1e6:.1f} µs (OpenDP not installed)")
    print(
        "   (Σρ→ε is a filter's number: valid for a ρ fixed in advance, not for a reading taken from answers)"
    )
    for target in (1.0, 4.0):
        nf, no = admitted_by_target(target, delta)
        print(
            f"target (ε={target:g}, δ={delta:g}): zCDP filter (ρ fixed in advance) admits {nf} queries, "
            f"odometer-as-filter {no}"
        )

    print(
        f"\nB. DP-SGD: {steps} subsampled Gaussian steps (q = 0.01), σ ∈ {{1, 2}} from each answer, δ = 1e-5"
    )
    sgd, sgd_t = ours_sgd(steps, reads, 1e-5)
    print("   (OpenDP 0.16: no subsampled-Gaussian step with a Rényi/zCDP map, so no peer column)")
    print(f"{'t':>6} {'loss ε':>9} {'stopping ε':>11} {'filter conv.':>13} {'static PLD':>11}")
    for t in reads:
        eps, stop, filt, pld = sgd[t]
        print(f"{t:>6} {float(eps):9.4f} {float(stop):11.4f} {float(filt):13.4f} {pld:11.4f}")
    print(
        f"per step: odometer {sgd_t * 1e6:.1f} µs, Rényi filter {renyi_filter_time(steps) * 1e6:.1f} µs "
        "(charge + subsample + noise)"
    )


if __name__ == "__main__":
    main()
