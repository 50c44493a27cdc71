"""A released sample variance is capped at the largest sample variance of ``n`` values in ``[lo, hi]``,
``(hi − lo)²/4 · m/(m − 1)`` with ``m = 2⌈n/2⌉`` (Popoviciu's bound for even ``n``), for the noisy count ``n``
it is computed with (post-processing), and stays at or below its interval's upper end; the cap is checked
against every vertex of the box for small ``n``."""

from __future__ import annotations

import itertools
import math
import random
import secrets
from fractions import Fraction
from typing import Any

import numpy as np
import polars as pl
import pytest

import dpcompose as dp
from dpcompose.measurements._random import SecureSource
from dpcompose.tables._engine import SumSpec
from dpcompose.tables._intervals import variance_cap

KEYS = list(range(40))
FRAME = pl.DataFrame({"k": [0, 0, 1, 2, 2, 2], "x": [0.25, 0.75, 1.0, 0.5, 0.0, 9.0]})
SCHEMA = {"k": dp.Column(int), "x": dp.Column(float, bounds=(-1.0, 3.0))}


def _release(measure: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    ctx = dp.Context(FRAME, SCHEMA, privacy_loss=0.5, measure=measure, split_evenly_over=1)
    q = ctx.query().group_by("k", keys=KEYS).agg(dp.tables.count(), dp.tables.variance("x"))
    r = random.Random(5)
    monkeypatch.setattr(secrets, "randbelow", r.randrange)  # the samplers' secure sources, seeded
    monkeypatch.setattr(secrets, "randbits", r.getrandbits)
    monkeypatch.setattr(SecureSource, "random_bytes", lambda self, n: r.randbytes(n))
    return q.release(), q


@pytest.mark.parametrize("measure", [None, dp.ZCDP()], ids=["laplace", "gaussian"])
def test_a_released_variance_is_at_most_popoviciu_at_its_count(
    measure: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    out, q = _release(measure, monkeypatch)
    spread = 3.0 - (-1.0)
    n = [max(c, 2) for c in out["count"]]
    even = [2 * math.ceil(m / 2) for m in n]
    caps = [spread * spread / 4 * m / (m - 1) for m in even]
    variances = out["x_variance"].to_list()
    assert all(0.0 <= v <= c * (1 + 2**-39) for v, c in zip(variances, caps, strict=True)), variances
    assert sum(v >= c for v, c in zip(variances, caps, strict=True)) >= 3  # the noise pushes some up to it
    iv = q.intervals(out)
    assert all(v <= hi for v, hi in zip(variances, iv["x_variance_hi"], strict=True))


def _sample_variance(xs: tuple[Fraction, ...]) -> Fraction:
    mean = sum(xs, Fraction(0)) / len(xs)
    return sum(((x - mean) ** 2 for x in xs), Fraction(0)) / (len(xs) - 1)


@pytest.mark.parametrize(("lo", "hi"), [(-1, 3), (0, 1), (Fraction(-5, 8), Fraction(7, 16))])
def test_the_cap_is_the_largest_sample_variance_at_every_count(lo: Fraction, hi: Fraction) -> None:
    """The sample variance is convex in the values, so its maximum over [lo, hi]ⁿ is at a vertex: every
    vertex is enumerated, and the cap is that maximum up to its relative padding, for odd and even n; a
    real count is capped as the next whole one (the bound for every whole count at least as large)."""
    spec = SumSpec("x", "float", float(lo), float(hi), 0.0, -20)
    for n in range(2, 11):
        worst = max(_sample_variance(v) for v in itertools.product((Fraction(lo), Fraction(hi)), repeat=n))
        cap = Fraction(float(variance_cap(spec, np.array([float(n)]))[0]))
        assert worst <= cap <= worst * (1 + Fraction(1, 2**38)), n
        between = Fraction(float(variance_cap(spec, np.array([n - 0.5]))[0]))
        assert between == cap  # n − 1/2 is capped as n: ⌈n − 1/2⌉ = n
