"""A released mean is clipped to its column's bounds (post-processing: the mean of the clamped values lies
there), on every engine, and its certified interval still contains it."""

from __future__ import annotations

import random
import secrets
from typing import Any

import polars as pl
import pytest

import dpcompose as dp
from dpcompose.measurements._random import SecureSource

KEYS = list(range(12))
FRAME = pl.DataFrame({"k": [0, 0, 1, 2, 2, 2], "x": [0.25, 0.75, 1.0, 0.5, 0.0, 9.0]})
SCHEMA = {"k": dp.Column(int), "x": dp.Column(float, bounds=(0.0, 1.0))}


def _seeded(monkeypatch: pytest.MonkeyPatch) -> None:
    r = random.Random(11)
    monkeypatch.setattr(secrets, "randbelow", r.randrange)  # the samplers' secure sources, seeded
    monkeypatch.setattr(secrets, "randbits", r.getrandbits)
    monkeypatch.setattr(SecureSource, "random_bytes", lambda self, n: r.randbytes(n))


def _release(data: Any, monkeypatch: pytest.MonkeyPatch, measure: Any = None) -> tuple[Any, Any]:
    ctx = dp.Context(data, SCHEMA, privacy_loss=0.05, measure=measure, split_evenly_over=1)
    q = ctx.query().group_by("k", keys=KEYS).agg(dp.tables.count(), dp.tables.mean("x"))
    _seeded(monkeypatch)
    return q.release(), q


@pytest.mark.parametrize("measure", [None, dp.ZCDP()], ids=["laplace", "gaussian"])
def test_a_released_mean_lies_within_its_bounds_and_its_interval(
    measure: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    out, q = _release(FRAME, monkeypatch, measure)
    means = out["x_mean"].to_list()
    assert all(0.0 <= m <= 1.0 for m in means), means
    assert {0.0, 1.0} <= set(means)  # at ε = 0.05 the noise pushes many of them onto a bound
    iv = q.intervals(out)
    assert all(lo <= m <= hi for lo, m, hi in zip(iv["x_mean_lo"], means, iv["x_mean_hi"], strict=True))


@pytest.mark.filterwarnings("ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning")
def test_spark_clips_a_released_mean_with_the_same_bits(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    polars_out, _ = _release(FRAME, monkeypatch)
    spark_out, _ = _release(spark.createDataFrame(FRAME.rows(), "k bigint, x double"), monkeypatch)
    assert spark_out.rows() == polars_out.rows()
    assert all(0.0 <= m <= 1.0 for m in spark_out["x_mean"])
