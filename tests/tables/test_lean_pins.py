"""Pins of released values and privacy maps on fixed seeds: the engines' memory and job layout may change,
their released bits may not. Each query runs on a fixed frame (caps that bite, nulls, NaN, ±0.0, string and
float identifiers); the exact pre-noise aggregates (a digest), the map at d_in = 1 and 3, and the release
with the secure sampler replaced by a seeded one are compared with values recorded before the engines'
lean rewrite (one value since changed by design: a released mean is clipped to its bounds, "known"'s key
ZZ). The same pins hold on Spark."""

from __future__ import annotations

import hashlib
import random
import secrets
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import dpcompose as dp
from dpcompose.measurements._random import SecureSource
from dpcompose.tables._engine import Aggregates, run_job
from dpcompose.tables._engines import engine_for

pl = pytest.importorskip("polars")

STATES = ["CA", "NY", "TX", "é", "WA", "OR"]
SCHEMA = dp.FrameDomain(
    {
        "user": dp.Column(int),
        "name": dp.Column(str),
        "fid": dp.Column(float, nullable=True),
        "state": dp.Column(str, nullable=True),
        "flag": dp.Column(bool),
        "x": dp.Column(float, bounds=(0.0, 100.0), nullable=True, fill=1.5),
        "n": dp.Column(int, bounds=(-50, 50)),
    }
)


def frame(rows: int = 3000, users: int = 400) -> Any:
    """A fixed frame: about 7 rows and several states per user, so both caps bite."""
    rng = np.random.default_rng(20261202)
    user = rng.integers(0, users, rows)
    x = rng.uniform(-10.0, 110.0, rows)
    x[rng.random(rows) < 0.05] = np.nan
    fid_values = np.array([0.0, -0.0, np.nan, 1.5, -2.25, 1e300])
    return pl.DataFrame(
        {
            "user": user,
            "name": [f"u{u % 37}é" if u % 5 else "" for u in user.tolist()],
            "fid": pl.Series(fid_values[rng.integers(0, 6, rows)]).set(
                pl.Series(rng.random(rows) < 0.05), None
            ),
            "state": pl.Series([STATES[i] for i in rng.integers(0, 6, rows)]).set(
                pl.Series(rng.random(rows) < 0.05), None
            ),
            "flag": rng.random(rows) < 0.5,
            "x": pl.Series(x).set(pl.Series(rng.random(rows) < 0.05), None),
            "n": rng.integers(-60, 60, rows),
        }
    )


SPARK_SCHEMA = "user bigint, name string, fid double, state string, flag boolean, x double, n bigint"


def _ctx(df: Any, unit: Any, loss: Any, measure: Any = None) -> Any:
    return dp.Context(df, SCHEMA, privacy_unit=unit, privacy_loss=loss, measure=measure, split_evenly_over=1)


def queries() -> dict[str, Callable[[Any], Any]]:
    """Each pinned query, built on a frame."""
    t = dp.tables
    unit = dp.unit_of(id="user", max_rows=3, max_groups=2)
    return {
        "known": lambda df: (
            _ctx(df, unit, 1.0)
            .query()
            .group_by("state", keys=["CA", "NY", "é", "ZZ"])
            .agg(t.count(), t.sum("x"), t.mean("x"), t.sum("n"))
        ),
        "unknown": lambda df: (
            _ctx(df, unit, (1.0, 1e-6), dp.ApproxDP())
            .query()
            .filter(dp.col("x") > 10.0)
            .group_by("state")
            .agg(t.count(), t.mean("x"))
        ),
        "zcdp": lambda df: (
            _ctx(df, dp.unit_of(id="user", max_rows=4, max_groups=3), 0.5, dp.ZCDP())
            .query()
            .group_by("state", "flag", keys=[("CA", True), ("TX", False), ("OR", True)])
            .agg(t.count(), t.variance("x"), t.count_distinct("name"), t.quantile("n", 0.5, [-20, 0, 20]))
        ),
        "str_id": lambda df: (
            _ctx(df, dp.unit_of(id="name", max_rows=40, max_groups=1), 1.0)
            .query()
            .group_by("flag", keys=[True, False])
            .agg(t.count(), t.mean("x"))
        ),
        "float_id": lambda df: (
            _ctx(df, dp.unit_of(id="fid", max_rows=100), 1.0).query().agg(t.count(), t.sum("n"))
        ),
        "rows": lambda df: _ctx(df, None, 1.0).query().group_by("flag", keys=[True, False]).agg(t.mean("x")),
    }


def digest(agg: Aggregates) -> str:
    """A short digest of an engine's exact aggregates (keys and every int64 vector)."""
    h = hashlib.sha256(repr(agg.keys).encode())
    for v in [agg.counts, *agg.sums, *agg.distincts, *agg.belows]:
        h.update(np.ascontiguousarray(v, dtype=np.int64).tobytes())
    return h.hexdigest()[:24]


def map_digest(q: Any) -> str:
    """A short digest of the query's privacy map at d_in = 1 and 3 (exact Fractions)."""
    return hashlib.sha256(repr([q.measurement.map(d) for d in (1, 3)]).encode()).hexdigest()[:24]


# recorded before the engines' lean rewrite: (digest of the aggregates, of the map, the seeded release)
PINS: dict[str, tuple[str, str, list[tuple[Any, ...]]]] = {
    "float_id": ("83da0b5e432130584169bd48", "81d459da2f7d3c76a8b81768", [(966, -1765)]),
    "known": (
        "e4a6f52f48fd1d649c081fbe",
        "81d459da2f7d3c76a8b81768",
        [
            ("CA", 360, 15946.213014423847, 44.29503615117736, -522),
            ("NY", 312, 15764.678752601147, 50.527816514747265, -1183),
            ("é", 328, 14635.40388149023, 44.62013378503119, -102),
            ("ZZ", -4, -2337.2009964585304, 0.0, 448),  # the mean -2337.2… is clipped to x's bounds
        ],
    ),
    "rows": (
        "b4328035e9fe0327d099c540",
        "81d459da2f7d3c76a8b81768",
        [(True, 44.98589094919543), (False, 46.796239576833)],
    ),
    "str_id": (
        "3939cba0ee67f4e40ef5f701",
        "81d459da2f7d3c76a8b81768",
        [(True, 719, 45.81909649610851), (False, 502, 33.77777867749393)],
    ),
    "unknown": (
        "2ea0caa41143ffcec1c34962",
        "e64c64e56447d70ef109e180",
        [
            ("CA", 188, 58.67271652627498),
            ("NY", 154, 55.96764309104387),
            ("OR", 144, 64.36990649667051),
            ("TX", 164, 45.43884463499232),
            ("WA", 165, 59.618478097698905),
            ("é", 165, 60.69170100255446),
        ],
    ),
    "zcdp": (
        "964cc6b57d35e484c2e9bef7",
        "d2666c3fe7afd53486d263ed",
        [
            ("CA", True, 250, 148.26311173124975, 45, 0),
            ("TX", False, 188, 1157.6211139858908, 50, 0),
            ("OR", True, 236, 1226.2138975900823, 49, 0),
        ],
    ),
}


def check(name: str, df: Any, monkeypatch: pytest.MonkeyPatch, release: bool = True) -> None:
    q = queries()[name](df)
    want_digest, want_map, want_rows = PINS[name]
    assert digest(run_job(engine_for(df), df, q.plan)) == want_digest
    assert map_digest(q) == want_map
    if not release:  # the noise is drawn on the driver from these aggregates: the same on every engine
        return
    r = random.Random(7)
    monkeypatch.setattr(secrets, "randbelow", r.randrange)  # the samplers' secure sources, seeded
    monkeypatch.setattr(secrets, "randbits", r.getrandbits)
    monkeypatch.setattr(SecureSource, "random_bytes", lambda self, n: r.randbytes(n))
    assert q.release().rows() == want_rows


@pytest.mark.parametrize("name", sorted(queries()))
def test_polars_release_is_pinned(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    check(name, frame(), monkeypatch)


@pytest.mark.parametrize("name", ["known", "str_id", "zcdp"])
def test_lazy_and_pandas_releases_are_pinned(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A LazyFrame is evaluated once, filtered (an eager frame is read in place with masks): same bits."""
    check(name, frame().lazy(), monkeypatch)
    if name == "known":
        pytest.importorskip("pandas")
        check(name, frame().to_pandas(), monkeypatch)


@pytest.mark.filterwarnings("ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning")
def test_spark_release_is_pinned(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    df = spark.createDataFrame(frame().rows(), schema=SPARK_SCHEMA).repartition(3).cache()
    for name in sorted(queries()):
        check(name, df, monkeypatch, release=name == "known")
    df.unpersist()


def test_a_filter_that_reads_no_column_keeps_every_row_or_none() -> None:
    """A constant filter on an eager frame with a capped unit selects one value, which holds for every
    row (it raised after the charge: the caps sorted arrays of different lengths)."""
    df = pl.DataFrame({"user": [1, 1, 2, 3], "x": [1.0, 2.0, 3.0, 4.0]})
    dom = dp.FrameDomain({"user": dp.Column(int), "x": dp.Column(float, bounds=(0.0, 10.0))})
    ctx = dp.Context(
        df, dom, privacy_unit=dp.unit_of(id="user", max_rows=1), privacy_loss=1e9, split_evenly_over=3
    )
    kept = ctx.query().filter(pl.lit(True)).agg(dp.tables.count()).release()
    assert kept["count"][0] == 3  # one row per user
    none = ctx.query().filter(pl.lit(1) > 2).agg(dp.tables.count()).release()
    assert none["count"][0] == 0
    by = ctx.query().filter(pl.lit(True)).group_by("user", keys=[1, 2]).agg(dp.tables.count()).release()
    assert by["count"].to_list() == [1, 1]
