"""Calibration benchmark: the least σ for DP-SGD against dp_accounting's ``calibrate_dp_mechanism``.

Run:  pip install -e '.[bench]' dp-accounting && python benchmarks/bench_calibrate.py [--repeat 3]

The case (issue 34): T = 10⁴ Poisson-subsampled Gaussian steps, q = 0.01, target (ε, δ) = (1, 1e-5).
Every timing runs in a fresh process (nothing cached between methods), after a warm-up in that process
that reads one unrelated composition (q = 0.02, σ = 2, T = 100), so one-time costs (imports, FFT plans)
are left out for every method alike. Printed: σ, the certified ε at σ (ours) and at the float below it,
the number of readings, seconds, and the ratio of times. Peers are optional: missing shows as "—".
Never imported by the library or the tests.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time

T, Q, EPS, DELTA = 10_000, 0.01, 1.0, 1e-5

METHODS = ("ours_exact", "ours_rtol_1e-4", "ours_accountant", "dp_accounting_pld")


def run_one(method: str) -> dict[str, object]:
    """One timing of ``method`` in this process (called in a child process)."""
    if method == "dp_accounting_pld":
        import dp_accounting  # optional peer
        from dp_accounting.pld import pld_privacy_accountant

        def event(s: float, q: float = Q, t: int = T) -> object:
            return dp_accounting.SelfComposedDpEvent(
                dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(s)), t
            )

        warm = pld_privacy_accountant.PLDAccountant()
        warm.compose(event(2.0, 0.02, 100))
        warm.get_epsilon(DELTA)
        calls = [0]

        def make(s: float) -> object:
            calls[0] += 1
            return event(s)

        t0 = time.perf_counter()
        sigma = dp_accounting.calibrate_dp_mechanism(pld_privacy_accountant.PLDAccountant, make, EPS, DELTA)
        seconds = time.perf_counter() - t0
        return {"sigma": float(sigma), "seconds": seconds, "readings": calls[0]}

    from dpcompose import accounting as acc

    def pair(s: float, q: float = Q, t: int = T) -> acc.PrivacyLoss:
        step = acc.PrivacyLoss.subsampled(acc.PrivacyLoss.gaussian(1, s), q)
        return acc.PrivacyLoss("composed", (), ((step, t),))

    pair(2.0, 0.02, 100).epsilon(DELTA)  # warm-up
    calls = [0]

    def make_loss(s: float) -> acc.PrivacyLoss:
        calls[0] += 1
        return pair(s)

    t0 = time.perf_counter()
    if method == "ours_exact":
        sigma = acc.calibrate_loss(make_loss, EPS, DELTA)
    elif method == "ours_rtol_1e-4":
        sigma = acc.calibrate_loss(make_loss, EPS, DELTA, rtol=1e-4)
    else:
        sigma = acc.PLDAccountant().get_noise_multiplier(
            target_epsilon=EPS, target_delta=DELTA, sample_rate=Q, steps=T
        )
    seconds = time.perf_counter() - t0
    out: dict[str, object] = {
        "sigma": sigma,
        "seconds": seconds,
        "readings": calls[0],
        "eps": float(pair(sigma).epsilon(DELTA)),
    }
    if method != "ours_rtol_1e-4":  # (with a tolerance the float below is not what failed)
        out["eps_below"] = float(pair(math.nextafter(sigma, 0.0)).epsilon(DELTA))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--one", choices=METHODS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one)))
        return
    results: dict[str, list[dict[str, object]]] = {m: [] for m in METHODS}
    for _ in range(args.repeat):
        for m in METHODS:  # interleaved, so the machine's load falls on every method alike
            out = subprocess.run(
                [sys.executable, __file__, "--one", m], capture_output=True, text=True, check=False
            )
            if out.returncode != 0:
                results[m].append({"error": out.stderr.strip().splitlines()[-1:]})
                continue
            results[m].append(json.loads(out.stdout))
    print(f"DP-SGD calibration: T={T}, q={Q}, target (ε, δ) = ({EPS}, {DELTA}); {args.repeat} runs each")
    print(f"{'method':22} {'σ':>20} {'ε(σ)':>18} {'ε(σ⁻)':>18} {'reads':>5} {'median s':>9} {'all s'}")
    medians: dict[str, float] = {}
    for m in METHODS:
        ok = [r for r in results[m] if "error" not in r]
        if not ok:
            print(f"{m:22} —  {results[m][0].get('error') if results[m] else ''}")
            continue
        times = sorted(float(r["seconds"]) for r in ok)  # type: ignore[arg-type]
        medians[m] = times[len(times) // 2]
        r = ok[0]
        eps = f"{r['eps']:.15f}" if "eps" in r else "—"
        below = f"{r['eps_below']:.15f}" if "eps_below" in r else "—"
        print(
            f"{m:22} {r['sigma']!r:>20} {eps:>18} {below:>18} {r['readings']!s:>5} {medians[m]:9.3f} "
            f"{', '.join(f'{t:.3f}' for t in times)}"
        )
    peer = medians.get("dp_accounting_pld")
    if peer:
        for m in METHODS[:-1]:
            if m in medians:
                print(f"  {m}: {peer / medians[m]:.2f}× faster than dp_accounting (median)")


if __name__ == "__main__":
    main()
