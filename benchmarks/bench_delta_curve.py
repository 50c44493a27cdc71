"""δ(ε) at 201 points, as ``python -m dpcompose account --plot`` reads it: point by point
(``PrivacyLoss.delta``) against one curve (``PrivacyLoss.deltas``), on the same compositions.

Run: ``python benchmarks/bench_delta_curve.py [name-filter] [--rounds N] [--before SRC]``. Each reading runs
in a process of its own (the PLD caches would otherwise serve the second from the first), after the
composition is built and read once at δ = 1e-6 as the command does before it plots; the ways alternate,
``--rounds`` times (default 2), so that their times are comparable on a shared machine. ``--before SRC``
adds the point-by-point reading of another source tree (an earlier commit's ``src``, from ``git archive``).
Prints the seconds per 201-point curve and checks that every way gives the same values.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

SRC = str(Path(__file__).resolve().parent.parent / "src")  # (the children import dpcompose from PYTHONPATH)

CASES: dict[str, list[str]] = {
    "docs: 1000 × laplace(scale=10)": ["laplace:scale=10,count=1000"],
    "100 × gaussian(sigma=20)": ["gaussian:sigma=20,count=100"],
    "100 × gaussian(sigma=20), continuous": ["gaussian:sigma=20,count=100,noise=continuous"],
    "1000 × subsampled gaussian(sigma=1, rate=0.01)": ["gaussian:sigma=1,rate=0.01,count=1000"],
    "50 × laplace(scale=10) + 20 × rr(epsilon=1, k=4)": [
        "laplace:scale=10,count=50",
        "rr:epsilon=1,k=4,count=20",
    ],
    "10 × laplace(scale=2) + 5 × rr(epsilon=0.5) + approx": [
        "laplace:scale=2,count=10",
        "rr:epsilon=0.5,count=5",
        "approx:epsilon=0.1,delta=1e-9,count=3",
    ],
}


def _one(name: str, way: str) -> None:
    """In a child process: build the case, read ε(1e-6), then time the 201-point curve one ``way``."""
    from dpcompose.accounting import PrivacyLoss
    from dpcompose.analysis._account_cli import _mechanism, _parse_mech

    mechs = [_mechanism(_parse_mech(t), f"mechanism {i}") for i, t in enumerate(CASES[name])]
    total = PrivacyLoss.compose(
        [PrivacyLoss("composed", (), ((m.loss, m.count),)) if m.count > 1 else m.loss for m in mechs]
    )
    total.epsilon_bounds(1e-6)
    top = max(total.span(), 1e-3)
    xs = [top * i / 200 for i in range(201)]
    t0 = time.perf_counter()
    ys = [total.delta(x) for x in xs] if way == "point" else list(total.deltas(xs))
    dt = time.perf_counter() - t0
    print(json.dumps({"seconds": dt, "values": [str(y) for y in ys]}))


def main() -> None:
    args = sys.argv[1:]
    if args and args[0] == "--child":
        _one(args[1], args[2])
        return
    options = {"--rounds": "2", "--before": ""}
    for key in options:
        if key in args:
            i = args.index(key)
            options[key] = args[i + 1]
            del args[i : i + 2]
    rounds = int(options["--rounds"])
    ways = {"point": ("point", SRC), "curve": ("curve", SRC)}
    if options["--before"]:
        ways = {"before": ("point", str(Path(options["--before"]).resolve())), **ways}
    pick = args[0] if args else ""
    for name in CASES:
        if pick not in name:
            continue
        times: dict[str, list[float]] = {w: [] for w in ways}
        values: dict[str, list[str]] = {}
        for _ in range(rounds):
            for way, (how, src) in ways.items():
                out = subprocess.run(
                    [sys.executable, __file__, "--child", name, how],
                    check=True,
                    capture_output=True,
                    text=True,
                    env=dict(os.environ, PYTHONPATH=src),
                )
                got = json.loads(out.stdout.strip().splitlines()[-1])
                times[way].append(got["seconds"])
                values.setdefault(way, got["values"])
        same = all(v == values["curve"] for v in values.values())
        shown = "   ".join(f"{w}: " + ", ".join(f"{t:6.2f}" for t in ts) for w, ts in times.items())
        print(f"{name:52s} {shown} s   same values: {same}", flush=True)


if __name__ == "__main__":
    main()
