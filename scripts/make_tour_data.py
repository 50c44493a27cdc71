"""Regenerate src/dpcompose/data/people.csv, the small synthetic dataset the tour uses.

Every row is invented: 1,000 people drawn from fixed distributions with numpy's seeded generator (seed
20261122), so the file is reproducible byte for byte. No real person is in it.

    python scripts/make_tour_data.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "src" / "dpcompose" / "data" / "people.csv"


def main() -> None:
    rng = np.random.default_rng(20261122)
    n = 1000
    regions = np.array(["north", "south", "east", "west", "centre"])
    region = rng.choice(regions, size=n, p=[0.25, 0.2, 0.2, 0.2, 0.15])
    age = np.clip(np.round(rng.normal(44, 15, size=n)), 18, 95).astype(int)
    income = np.round(np.exp(rng.normal(10.4, 0.6, size=n)) + 150 * (age - 18), -1)
    smoker = np.where(rng.random(n) < 0.18, "yes", "no")
    with OUT.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "age", "income", "region", "smoker"])
        for i in range(n):
            w.writerow([i, int(age[i]), float(income[i]), region[i], smoker[i]])


if __name__ == "__main__":
    main()
