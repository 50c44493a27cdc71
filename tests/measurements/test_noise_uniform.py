"""The seeded path of ``uniform_below`` beyond numpy's int64 range (seeded RR at large ε failed with
``ValueError: high is out of bounds for int64``)."""

from __future__ import annotations

from collections import Counter

import numpy as np

import dpcompose as dp
from dpcompose.measurements._noise import uniform_below


def test_uniform_below_beyond_int64_is_in_range_and_uniform() -> None:
    rng = np.random.default_rng(7)
    n = 3 * 2**64 + 5
    draws = [uniform_below(n, rng) for _ in range(3000)]
    assert all(0 <= v < n for v in draws)
    thirds = Counter(v * 3 // n for v in draws)  # each third of [0, n) gets about 1000 draws
    assert all(850 < thirds[i] < 1150 for i in range(3))


def test_seeded_randomized_response_at_large_epsilon_releases() -> None:
    cats = dp.CategoricalDomain(["a", "b"])
    rr = dp.m.make_randomized_response(cats, dp.DiscreteDistance(), 50.0, rng=np.random.default_rng(2))
    assert rr("a") in ("a", "b")
    approx = dp.m.make_randomized_response_approx(
        dp.CategoricalDomain([0, 1]), dp.DiscreteDistance(), 1.0, 1e-6, rng=np.random.default_rng(3)
    )
    assert approx(0) in (0, 1, "Iam0")
