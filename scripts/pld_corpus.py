"""Record or check a corpus of certified PLD readings, bit for bit.

A restructuring of the PLD engine (``dpcompose.accounting``) must leave every reading unchanged. This
script reads ε(δ), δ(ε) and both intervals of a fixed set of compositions, each on a fresh object (so no
reading depends on an earlier one), and writes them as ``float.hex`` strings::

    python scripts/pld_corpus.py record corpus.json   # at the commit before the change
    python scripts/pld_corpus.py check corpus.json    # after it: exit 1 and a list if anything moved

The corpus is not part of the test suite: bit-identity holds on one machine and numpy build, not across
them (FFT implementations differ), so it is a tool for a change, not a contract.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from dpcompose.accounting import (
    PLD,
    compose_plds,
    pld_approx,
    pld_discrete_gaussian,
    pld_discrete_laplace,
    pld_gaussian,
    pld_laplace,
    pld_randomized_response,
    pld_subsampled_discrete_gaussian,
    pld_subsampled_gaussian,
    pld_subsampled_laplace,
)


def _mixed() -> PLD:
    parts = []
    for i in range(60):
        if i % 3 == 0:
            parts.append(pld_laplace(1, 10 + i % 7))
        elif i % 3 == 1:
            parts.append(pld_gaussian(1, 8 + i % 5))
        else:
            parts.append(pld_randomized_response(0.05 + 0.01 * (i % 4)))
    return compose_plds(parts)


CASES: dict[str, tuple[Callable[[], PLD], float, float]] = {
    # name: (build, δ for ε(δ), ε for δ(ε))
    "laplace 1000 aligned": (lambda: pld_laplace(1, 10.0, aligned=True).self_compose(1000), 1e-6, 1.0),
    "laplace 300 plain": (lambda: pld_laplace(1, 10.0).self_compose(300), 1e-6, 1.0),
    "gaussian 1000": (lambda: pld_gaussian(1, 20.0).self_compose(1000), 1e-6, 1.0),
    "laplace+rr (issue 32 item 7)": (
        lambda: compose_plds([pld_laplace(1, 10)] * 50 + [pld_randomized_response(0.5)] * 5),
        1e-6,
        1.0,
    ),
    "mixed 60": (_mixed, 1e-6, 0.5),
    "approx + dlap": (
        lambda: compose_plds([pld_approx(0.1, 1e-7)] * 10 + [pld_discrete_laplace(1, 8)] * 20),
        1e-5,
        1.0,
    ),
    "discrete gaussian 100": (lambda: pld_discrete_gaussian(1, 5).self_compose(100), 1e-6, 1.0),
    "subsampled gaussian 1e4": (lambda: pld_subsampled_gaussian(1.0, 0.01).self_compose(10_000), 1e-5, 5.0),
    "subsampled gaussian wor 500": (
        lambda: pld_subsampled_gaussian(1.0, 0.05, sampling="without_replacement").self_compose(500),
        1e-5,
        2.0,
    ),
    "subsampled laplace 200": (lambda: pld_subsampled_laplace(2.0, 0.1).self_compose(200), 1e-6, 1.0),
    "subsampled dgauss 1e3": (
        lambda: pld_subsampled_discrete_gaussian(4, 4.0, 0.02).self_compose(1000),
        1e-5,
        1.0,
    ),
}


def readings() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name, (build, delta, eps) in CASES.items():
        values = [
            build().epsilon(delta),
            build().delta(eps),
            *build().epsilon_bounds(delta),
            *build().delta_bounds(eps),
        ]
        out[name] = [float(v).hex() for v in values]
        print(name, [float(v) for v in values], flush=True)
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] not in ("record", "check"):
        print(__doc__)
        return 2
    path = Path(argv[2])
    now = readings()
    if argv[1] == "record":
        path.write_text(json.dumps(now, indent=1) + "\n")
        return 0
    old = json.loads(path.read_text())
    moved = [(k, old.get(k), v) for k, v in now.items() if old.get(k) != v]
    for k, a, b in moved:
        print(f"MOVED {k}: {a} -> {b}")
    print("bit-identical" if not moved else f"{len(moved)} case(s) moved")
    return 1 if moved else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
