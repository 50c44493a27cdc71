"""Cold import time of dpcompose beside OpenDP's (each in a fresh interpreter, 5 runs, median).

Run: ``python benchmarks/bench_import.py`` (OpenDP is measured when installed: ``pip install opendp``).
The base design imported scipy.stats and scipy.optimize at import (about 0.6 s on this machine); SciPy is
now imported on first use (``dpcompose._scipy``).
"""

from __future__ import annotations

import importlib.util
import statistics
import subprocess
import sys

RUNS = 5


def cold_import_seconds(module: str) -> float:
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    times = []
    for _ in range(RUNS):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        times.append(float(out.stdout.strip()))
    return statistics.median(times)


def main() -> None:
    rows = [
        ("dpcompose", cold_import_seconds("dpcompose")),
        ("numpy (a floor)", cold_import_seconds("numpy")),
    ]
    if importlib.util.find_spec("opendp") is not None:
        rows.append(("opendp", cold_import_seconds("opendp.prelude")))
    ours = rows[0][1]
    print(f"{'module':18} {'median s':>9} {'ratio to dpcompose':>19}")
    for name, t in rows:
        print(f"{name:18} {t:>9.3f} {t / ours:>19.2f}")


if __name__ == "__main__":
    main()
