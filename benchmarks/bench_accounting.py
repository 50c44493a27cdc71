"""Accounting benchmark: dpcompose's exact composition against peer accountants, same inputs, same run.

Run:  pip install -e '.[bench]' && python benchmarks/bench_accounting.py

Prints one table: our ε and time; dp_accounting's PLD accountant (default discretisation 1e-4,
pessimistic) ε and time; its RDP accountant; prv_accountant (eps_error=0.01, upper bound); the exact ε
from tests/data/accounting_cases.json (a copy of shared/reference) where available; and the ratios.
Peers are optional: a
missing peer shows as "—". Never imported by the library or the tests.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from dpcompose import accounting as acc
from dpcompose.accounting import _optimal  # only to clear its caches so every timing starts cold

REFERENCE = Path(__file__).resolve().parent.parent / "tests" / "data" / "accounting_cases.json"

Case = tuple[str, str, list[float], list[float] | None, float]  # name, kind, eps (or σ's), deltas, δ_g


def cases() -> list[Case]:
    out: list[Case] = []
    for k in (10, 100, 1000, 10000):
        out.append((f"homog eps=0.1 k={k}", "pure", [0.1] * k, None, 1e-6))
    for k in (10, 100):
        out.append((f"homog eps=1.0 k={k}", "pure", [1.0] * k, None, 1e-6))
    out.append(
        (
            "hetero k=1000 eps_i=0.01+0.19(i%20)/19",
            "pure",
            [0.01 + 0.19 * (i % 20) / 19 for i in range(1000)],
            None,
            1e-6,
        )
    )
    out.append(
        ("hetero k=100 eps_i=0.05(1+i%5)", "pure", [0.05 * (1 + i % 5) for i in range(100)], None, 1e-6)
    )
    for k in (100, 300, 1000):  # unrelated εᵢ: the general grid (mixture upper bound)
        rng = random.Random(1)
        unrelated = [rng.uniform(0.01, 0.2) for _ in range(k)]
        out.append((f"unrelated k={k} eps_i~U(0.01,0.2) seed 1", "pure", unrelated, None, 1e-6))
    out.append(("approx k=100 (0.1,1e-8) dg=1e-5", "approx", [0.1] * 100, [1e-8] * 100, 1e-5))
    out.append(("Gaussian k=1000 sigma=20", "gauss", [20.0] * 1000, None, 1e-6))
    return out


def timed(f: Callable[[], float]) -> tuple[float, float]:
    t = time.perf_counter()
    try:
        v = f()
    except Exception:  # a peer that fails on an input is reported, not fatal
        v = math.nan
    return v, time.perf_counter() - t


def ours(case: Case) -> float:
    _optimal._cached_plans.cache_clear()
    _optimal._cached_grid.cache_clear()
    _, kind, eps, dels, dg = case
    if kind == "gauss":
        profile = acc.PrivacyProfile.compose([acc.gaussian_profile(1.0, s) for s in eps])
        return float(acc.float_up(profile.epsilon(dg)))
    return acc.float_up(acc.optimal_epsilon(eps, dels, dg))


def pld(case: Case) -> float:
    from dp_accounting.pld import common
    from dp_accounting.pld import privacy_loss_distribution as pl

    _, kind, eps, dels, dg = case
    if kind == "gauss":
        counts = Counter(eps)
        total = None
        for s, c in counts.items():
            part = pl.from_gaussian_mechanism(s, value_discretization_interval=1e-4).self_compose(c)
            total = part if total is None else total.compose(part)
    else:
        counts2 = Counter(zip(eps, dels or [0.0] * len(eps), strict=True))
        total = None
        for (e, d), c in counts2.items():
            params = common.DifferentialPrivacyParameters(e, d)
            part = pl.from_privacy_parameters(params, value_discretization_interval=1e-4).self_compose(c)
            total = part if total is None else total.compose(part)
    assert total is not None
    return float(total.get_epsilon_for_delta(dg))


def rdp(case: Case) -> float:
    import dp_accounting
    from dp_accounting.rdp import RdpAccountant

    _, kind, eps, _, dg = case
    if kind == "approx":
        return math.nan  # no (ε, δ) event in RDP
    a = RdpAccountant(neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    for v, c in Counter(eps).items():
        if kind == "gauss":
            ev: dp_accounting.DpEvent = dp_accounting.GaussianDpEvent(v)
        else:  # ε-DP worst case: binary randomized response with ε = ln((2 − p)/p)
            ev = dp_accounting.RandomizedResponseDpEvent(2 / (1 + math.exp(v)), 2)
        a.compose(ev, c)
    return float(a.get_epsilon(dg))


def prv(case: Case) -> float:
    import prv_accountant as pa

    _, kind, eps, dels, dg = case
    counts = Counter(zip(eps, dels or [0.0] * len(eps), strict=True))
    prvs = []
    for e, d in counts:
        if kind == "gauss":
            prvs.append(pa.GaussianMechanism(noise_multiplier=e))
        elif d:
            prvs.append(pa.ApproximateDPMechanism(epsilon=e, delta=d))
        else:
            prvs.append(pa.PureDPMechanism(eps=e))
    acct = pa.PRVAccountant(
        prvs=prvs, eps_error=0.01, delta_error=dg / 1000, max_self_compositions=list(counts.values())
    )
    return float(acct.compute_epsilon(delta=dg, num_self_compositions=list(counts.values()))[2])


def main() -> None:
    exact: dict[str, float] = {}
    if REFERENCE.exists():
        exact = {c["name"]: c["exact_eps"] for c in json.loads(REFERENCE.read_text())["cases"]}
    head = (
        f"{'case':40} {'exact ε':>12} {'ours ε':>14} {'ours/exact-1':>12} {'ours s':>8} "
        f"{'PLD ε':>12} {'PLD s':>7} {'PLD/ours':>9} {'speedup':>8} {'RDP ε':>10} {'PRV ε':>10} {'PRV s':>7}"
    )
    print(head)
    print("-" * len(head))
    for case in cases():
        name = case[0]
        o, to = timed(lambda c=case: ours(c))
        p, tp = timed(lambda c=case: pld(c))
        r, _ = timed(lambda c=case: rdp(c))
        v, tv = timed(lambda c=case: prv(c))
        ex = exact.get(name, math.nan)
        print(
            f"{name:40} {ex:12.9f} {o:14.10f} {o / ex - 1:12.2e} {to:8.4f} "
            f"{p:12.8f} {tp:7.3f} {p / o:9.6f} {tp / to:7.1f}x {r:10.5f} {v:10.5f} {tv:7.2f}"
        )


if __name__ == "__main__":
    main()
