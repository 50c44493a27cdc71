"""A released sample variance is capped at Popoviciu's bound ``(hi − lo)²/4 · n/(n − 1)`` for the noisy
count ``n`` it is computed with (post-processing), and stays at or below its interval's upper end."""

from __future__ import annotations

import random
import secrets
from typing import Any

import polars as pl
import pytest

import dpcompose as dp
from dpcompose.measurements._random import SecureSource

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
    caps = [spread * spread / 4 * m / (m - 1) for m in n]
    variances = out["x_variance"].to_list()
    assert all(0.0 <= v <= c * (1 + 2**-39) for v, c in zip(variances, caps, strict=True)), variances
    assert sum(v >= c for v, c in zip(variances, caps, strict=True)) >= 3  # the noise pushes some up to it
    iv = q.intervals(out)
    assert all(v <= hi for v, hi in zip(variances, iv["x_variance_hi"], strict=True))
