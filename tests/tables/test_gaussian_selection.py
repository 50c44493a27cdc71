"""group_by(..., keys=None, selection="gaussian"): unknown keys selected by a discrete Gaussian threshold.

Mirrors tests/tables/test_unknown_keys.py (the Laplace path), and checks both paths by brute force over
neighbouring tables: the engine's exact per-key counts of a table and of the table without one user, and
the exact output distributions of the release (each key absent, or released with its noisy count ≥ T),
whose hockey-stick divergence at the map's ε must not exceed the map's δ.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
import pytest

import dpcompose as dp
from dpcompose.accounting import zcdp_delta, zcdp_to_approx
from dpcompose.measurements._threshold import gaussian_tail_up, gaussian_threshold_delta
from dpcompose.tables._engine import run_job
from dpcompose.tables._engines import engine_for
from exact_pairs import gaussian_kernel_sum

pl = pytest.importorskip("polars")

mpmath.mp.dps = 40

SCHEMA = dp.FrameDomain(
    {"user": dp.Column(int), "city": dp.Column(str), "x": dp.Column(float, bounds=(0.0, 1.0))}
)
KEYS_DOMAIN = dp.MapDomain(dp.AtomDomain(str), dp.AtomDomain(int))


def _frame(rare: int = 1) -> Any:
    rng = np.random.default_rng(7)
    n = 6000
    cities = ["a"] * (n // 2) + ["b"] * (n // 3) + ["c"] * (n - n // 2 - n // 3 - rare) + ["rare"] * rare
    return pl.DataFrame({"user": np.arange(n) // 2, "city": cities, "x": rng.random(n)})


def _context(data: Any, **kw: Any) -> dp.Context:
    args: dict[str, Any] = {
        "privacy_unit": dp.unit_of("user", max_rows=2, max_groups=1),
        "privacy_loss": (1.0, 1e-6),
        "measure": dp.ApproxDP(),
        "split_evenly_over": 1,
    }
    args.update(kw)
    return dp.Context(data, SCHEMA, **args)


def _gaussian(ctx: dp.Context) -> Any:
    return ctx.query().group_by("city", keys=None, selection="gaussian")


# --- the Gaussian path, as the Laplace path's tests ------------------------------------------------------


def test_frequent_keys_are_released_and_a_singleton_is_not() -> None:
    q = _gaussian(_context(_frame())).agg(dp.tables.count(), dp.tables.sum("x"))
    out = q.release()
    assert out["city"].to_list() == ["a", "b", "c"]  # sorted; "rare" (one row) is far below the threshold
    assert q.threshold is not None and q.threshold > 2
    counts = dict(zip(out["city"].to_list(), out["count"].to_list(), strict=True))
    assert abs(counts["a"] - 3000) < 200 and abs(counts["b"] - 2000) < 200
    assert [row[1] for row in q.summarize().rows] == ["discrete Gaussian"] * 2


def test_the_map_is_the_converted_rho_plus_the_threshold_delta() -> None:
    q = _gaussian(_context(_frame())).agg(dp.tables.mean("x"))
    eps, delta = q.measurement.map(1)
    assert eps <= 1 and delta <= Fraction(1, 10**6)  # within the share
    assert eps > Fraction(999, 1000)  # and close to it: ρ is zcdp_budget(ε, δ/2) less a 2⁻²⁰ margin
    count, total = q.vectors
    assert [v.label for v in q.vectors] == ["count", "x_sum"]
    half = Fraction(1, 2 * 10**6)
    assert q.threshold is not None
    for d in (1, 2, 3):
        # the ρ's of the two discrete Gaussian vectors (L2 sensitivity R and R·M per unit) add, the sum is
        # converted at δ/2 (CKS 2020 Cor 13), and the threshold adds δ_T at (l0, l1, l∞) = (1, 2, 2)·d
        rho = count.noise.map(d * count.sensitivity) + total.noise.map(d * total.sensitivity)
        at = (d, Fraction(2 * d), Fraction(2 * d))
        delta_t = gaussian_threshold_delta(count.scale, q.threshold, at)
        assert q.measurement.map(d) == (zcdp_to_approx(rho, half), half + delta_t)
        # δ_T is the threshold part of make_gaussian_threshold's own map on the count's σ
        sel = dp.m.make_gaussian_threshold(
            KEYS_DOMAIN, dp.L01InfDistance(), count.scale, q.threshold, noise_delta=half
        )
        assert sel.map(at)[1] == half + delta_t
    # at d = 1, one key of count ≤ 2 in one neighbour only: m = 1, δ_T = P[Z ≥ T − 2] bounded
    assert gaussian_threshold_delta(count.scale, q.threshold, (1, 2, 2)) == gaussian_tail_up(
        count.scale, q.threshold - 2
    )
    assert gaussian_threshold_delta(count.scale, q.threshold, (1, 2, 2)) <= half
    text = str(dp.explain(q.measurement, 1))
    assert "Gaussian" in text and "partition selection" in text and "Cor 13" in text


def test_gaussian_noise_grows_with_the_root_of_the_number_of_vectors() -> None:
    """Four vectors instead of one: each Laplace vector gets ε/4 (its scale ×4); the Gaussian vectors share
    one ρ, so each σ grows by √4 = 2 only."""
    aggs = [dp.tables.count(), dp.tables.variance("x"), dp.tables.count_distinct("user")]
    ctx = _context(_frame(), privacy_loss=(1.0, 1e-6), split_evenly_over=2)
    lap1 = ctx.query().group_by("city", keys=None).agg(dp.tables.count())
    lap4 = ctx.query().group_by("city", keys=None).agg(*aggs)
    gau1 = _gaussian(ctx).agg(dp.tables.count())
    gau4 = _gaussian(ctx).agg(*aggs)
    assert len(lap4.vectors) == len(gau4.vectors) == 4
    for q in (gau1, gau4):
        eps, delta = q.measurement.map(1)
        assert eps <= Fraction(1, 2) and delta <= Fraction(1, 2 * 10**6)  # the share: (1/2, 1e-6/2)
    assert lap4.vectors[0].scale == 4 * lap1.vectors[0].scale
    assert abs(gau4.vectors[0].scale / gau1.vectors[0].scale - 2) < Fraction(1, 10**9)


def test_the_docs_table_of_noise_and_thresholds() -> None:
    """docs/tables.md's comparison at (1, 1e-6), one row per user: count std and threshold per path."""
    columns = {f"x{i}": dp.Column(float, bounds=(0.0, 1.0)) for i in range(11)}
    schema = dp.FrameDomain({"user": dp.Column(int), "city": dp.Column(str), **columns})
    df = pl.DataFrame({"user": [1, 2], "city": ["a", "b"], **{c: [0.5, 0.5] for c in columns}})
    seen = {}
    for k in (1, 4, 12):
        aggs = [dp.tables.count()] + [dp.tables.sum(f"x{i}") for i in range(k - 1)]
        for kind in ("laplace", "gaussian"):
            ctx = dp.Context(
                df, schema, privacy_unit=dp.unit_of("user", max_rows=1), measure=dp.ApproxDP(),
                privacy_loss=(1.0, 1e-6), split_evenly_over=1,
            )  # fmt: skip
            q = ctx.query().group_by("city", keys=None, selection=kind).agg(*aggs)
            scale = float(q.vectors[0].scale)
            std = scale * math.sqrt(2) if kind == "laplace" else scale  # discrete Laplace: ≈ √2·scale
            seen[k, kind] = (round(std, 2 if std < 10 else 1), q.threshold)
    assert seen == {
        (1, "laplace"): (1.41, 15), (1, "gaussian"): (4.67, 25),
        (4, "laplace"): (5.66, 54), (4, "gaussian"): (9.34, 48),
        (12, "laplace"): (17.0, 159), (12, "gaussian"): (16.2, 81),
    }  # fmt: skip


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"measure": None, "privacy_loss": 1.0}, "needs a δ"),
        ({"privacy_loss": (1.0, 0.0)}, "needs a δ"),
        ({"measure": dp.ZCDP(), "privacy_loss": 0.5}, "selection='gaussian'"),
    ],
)
def test_refused_without_a_delta_and_nothing_spent(kw: dict[str, Any], match: str) -> None:
    ctx = _context(_frame(), **kw)
    before = ctx.remaining()
    with pytest.raises(dp.InvalidParameter, match=match):
        _gaussian(ctx).agg(dp.tables.count())
    with pytest.raises(dp.InvalidParameter, match=match):
        ctx.query().group_by("city", keys=None).agg(dp.tables.count())
    assert ctx.remaining() == before


def test_a_zcdp_context_is_refused_by_name() -> None:
    ctx = _context(_frame(), measure=dp.ZCDP(), privacy_loss=0.5)
    with pytest.raises(dp.InvalidParameter) as info:
        ctx.query().group_by("city", keys=None).agg(dp.tables.count())
    text = str(info.value)
    assert "ρ-zCDP" in text and "dp.ApproxDP()" in text and "keys=[...]" in text


@pytest.mark.parametrize("bad", ["Gaussian", "exponential", None, 1])
def test_a_bad_selection_is_refused(bad: Any) -> None:
    ctx = _context(_frame())
    with pytest.raises(dp.InvalidParameter, match="selection="):
        ctx.query().group_by("city", keys=None, selection=bad)


def test_selection_with_known_keys_is_refused() -> None:
    ctx = _context(_frame())
    with pytest.raises(dp.InvalidParameter, match="keys=None"):
        ctx.query().group_by("city", keys=["a"], selection="gaussian")
    q = ctx.query().group_by("city", keys=["a"], selection="laplace").agg(dp.tables.count())
    assert q.measurement.map(1) == (Fraction(1), 0)  # known keys: pure ε, in the Context's (ε, δ)


def test_row_level_unit_and_several_columns() -> None:
    data = pl.DataFrame({"user": [1] * 500 + [2] * 3, "city": ["a"] * 500 + ["z"] * 3, "x": [0.5] * 503})
    ctx = dp.Context(data, SCHEMA, privacy_loss=(1.0, 1e-9), measure=dp.ApproxDP(), split_evenly_over=1)
    q = ctx.query().group_by("city", "user", keys=None, selection="gaussian").agg(dp.tables.count())
    assert q.release().select("city", "user").rows() == [("a", 1)]
    assert q.measurement.map(1)[1] <= Fraction(1, 10**9)


def test_quantile_with_unknown_keys_is_released_for_selected_keys_only() -> None:
    q = _gaussian(_context(_frame())).agg(dp.tables.quantile("x", 0.5, [0.25, 0.5, 0.75]))
    eps, delta = q.measurement.map(1)
    assert Fraction(999, 1000) < eps <= 1 and 0 < delta <= Fraction(1, 10**6)
    out = q.release()
    assert out["city"].to_list() == ["a", "b", "c"]
    assert set(out["x_quantile_0.5"].to_list()) <= {0.25, 0.5, 0.75}


# --- brute force over neighbouring tables, both paths ----------------------------------------------------


class Noise:
    """The exact pmf and tail of the discrete noise (mpmath), with a truncation width beyond which the
    mass is below 1e-30."""

    def __init__(self, kind: str, scale: Fraction) -> None:
        self.kind = kind
        self.s = mpmath.mpf(scale.numerator) / scale.denominator
        if kind == "laplace":
            self.alpha = mpmath.exp(-1 / self.s)
            self.width = math.ceil(70 * float(scale)) + 2
        else:
            self.norm = 1 + 2 * gaussian_kernel_sum(1, self.s)
            self.width = math.ceil(12 * float(scale)) + 2

    def pmf(self, z: int) -> Any:
        if self.kind == "laplace":
            return (1 - self.alpha) / (1 + self.alpha) * self.alpha ** abs(z)
        return mpmath.exp(-(mpmath.mpf(z) ** 2) / (2 * self.s**2)) / self.norm

    def tail(self, j: int) -> Any:
        """P[Z ≥ j]."""
        if self.kind == "laplace":
            a = self.alpha
            return a**j / (1 + a) if j >= 1 else 1 - a ** (1 - j) / (1 + a)
        return gaussian_kernel_sum(j, self.s) / self.norm


def _key_outputs(noise: Noise, count: int, threshold: int) -> tuple[dict[Any, Any], Any]:
    """A key's outputs {None: absent, v: released as v} for v in [T, T + width], and the mass left out."""
    if count <= 0:
        return {None: mpmath.mpf(1)}, mpmath.mpf(0)
    out: dict[Any, Any] = {None: 1 - noise.tail(threshold - count)}
    for v in range(threshold, threshold + noise.width + 1):
        out[v] = noise.pmf(v - count)
    return out, noise.tail(threshold + noise.width + 1 - count)


def hockey_stick(noise: Noise, x: dict[Any, int], y: dict[Any, int], threshold: int, eps: Fraction) -> Any:
    """An upper bound on sup_S P_x[S] − e^ε P_y[S] for the released tables. Keys with equal counts on
    both sides are one and the same independent factor on both, which leaves the divergence unchanged,
    so only the keys whose counts differ are enumerated."""
    keys = sorted(k for k in set(x) | set(y) if x.get(k, 0) != y.get(k, 0))
    px, py, left = [], [], []
    for k in keys:
        dx, tx = _key_outputs(noise, x.get(k, 0), threshold)
        dy, _ = _key_outputs(noise, y.get(k, 0), threshold)
        px.append(dx)
        py.append(dy)
        left.append(tx)
    e = mpmath.exp(mpmath.mpf(eps.numerator) / eps.denominator)
    total = mpmath.mpf(0)
    supports = [list(set(a) | set(b)) for a, b in zip(px, py, strict=True)]
    for outcome in itertools.product(*supports):
        p = mpmath.fprod(d.get(o, 0) for d, o in zip(px, outcome, strict=True))
        q = mpmath.fprod(d.get(o, 0) for d, o in zip(py, outcome, strict=True))
        if p > e * q:
            total += p - e * q
    return total + (1 - mpmath.fprod(1 - t for t in left))


BRUTE_SCHEMA = dp.FrameDomain({"user": dp.Column(int), "key": dp.Column(str)})


def _tables(seed: int) -> list[Any]:
    """Small random tables: 4–6 users with 1–4 rows over the keys a, b, c (caps: 2 rows, 2 groups)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(3):
        users, keys = [], []
        for u in range(int(rng.integers(4, 7))):
            for _ in range(int(rng.integers(1, 5))):
                users.append(u)
                keys.append(str(rng.choice(["a", "b", "c"], p=[0.6, 0.3, 0.1])))
        out.append(pl.DataFrame({"user": users, "key": keys}))
    return out


def _counts(df: Any, plan: Any) -> dict[Any, int]:
    """The engine's exact per-key counts after the caps (what the noise is added to)."""
    engine = engine_for(df)
    assert engine is not None
    found = run_job(engine, df, plan)
    return {k[0]: int(c) for k, c in zip(found.keys, found.counts.tolist(), strict=True) if c > 0}


HUGE = Fraction(40)
BRUTE = [("laplace", (2.5, 0.1)), ("gaussian", (2.5, 0.1)), ("gaussian", (3.0, 0.2))]


def _brute_query(df: Any, kind: str, budget: tuple[float, float]) -> Any:
    ctx = dp.Context(
        df,
        BRUTE_SCHEMA,
        privacy_unit=dp.unit_of("user", max_rows=2, max_groups=2),
        measure=dp.ApproxDP(),
        privacy_loss=budget,
        split_evenly_over=1,
    )
    return ctx.query().group_by("key", keys=None, selection=kind).agg(dp.tables.count())


@pytest.mark.parametrize(("kind", "budget"), BRUTE)
def test_brute_force_privacy_over_neighbouring_tables(kind: str, budget: tuple[float, float]) -> None:
    worst = mpmath.mpf(0)
    for df in _tables(11):
        q = _brute_query(df, kind, budget)
        eps, delta = q.measurement.map(1)
        assert eps <= Fraction(budget[0]) and delta <= Fraction(budget[1])
        noise = Noise(kind, q.vectors[0].scale)
        x = _counts(df, q.plan)
        # the threshold's part alone: at a huge ε only keys one side lacks still count, so the divergence
        # must stay below the map's δ_T (its δ less the conversion's δ/2), plus the zCDP part's own δ there
        rho = q.vectors[0].noise.map(q.vectors[0].sensitivity)
        part = delta - Fraction(budget[1]) / 2 + zcdp_delta(rho, HUGE) if kind == "gaussian" else delta
        for u in df.get_column("user").unique().to_list():  # each neighbour: one user's rows removed
            y = _counts(df.filter(pl.col("user") != u), q.plan)
            assert y != x
            for a, b in ((x, y), (y, x)):
                hs = hockey_stick(noise, a, b, q.threshold, eps)
                assert hs <= mpmath.mpf(delta.numerator) / delta.denominator, (kind, a, b, hs, delta)
                worst = max(worst, hs)
                if kind == "gaussian":
                    hs = hockey_stick(noise, a, b, q.threshold, HUGE)
                    assert hs <= mpmath.mpf(part.numerator) / part.denominator, (a, b, hs, part)
    assert worst > 0


def test_brute_force_check_can_fail() -> None:
    """A user alone behind a key makes it appear with probability P[c + Z ≥ T]: the check sees that much
    δ at the map's ε, so a map reporting δ_T too small (or the conversion's δ without δ_T) would fail."""
    df = pl.DataFrame({"user": [0, 0, 1, 1, 2], "key": ["a", "a", "a", "a", "z"]})
    q = _brute_query(df, "gaussian", (2.5, 0.1))
    eps, delta = q.measurement.map(1)
    noise = Noise("gaussian", q.vectors[0].scale)
    x = _counts(df, q.plan)
    y = _counts(df.filter(pl.col("user") != 2), q.plan)
    assert x == {"a": 4, "z": 1} and y == {"a": 4}
    hs = hockey_stick(noise, x, y, q.threshold, eps)
    assert hs >= noise.tail(q.threshold - 1) * (1 - mpmath.mpf(10) ** -20)  # the singleton's release
    assert hs > 0
    two = pl.DataFrame({"user": [0, 0, 1, 1, 2, 2], "key": ["a", "a", "a", "a", "z", "z"]})
    x2 = _counts(two, q.plan)
    hs2 = hockey_stick(noise, x2, y, q.threshold, eps)  # two rows behind z: l∞ = 2
    delta_t = gaussian_threshold_delta(q.vectors[0].scale, q.threshold, (1, Fraction(2), Fraction(2)))
    assert hs2 > mpmath.mpf(delta_t.numerator) / delta_t.denominator / 2  # δ_T/2 would be caught
    assert hs2 <= mpmath.mpf(delta.numerator) / delta.denominator


# --- Spark: the same selection ----------------------------------------------------------------------------

spark_warnings = pytest.mark.filterwarnings(
    "ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning"
)


@spark_warnings
def test_spark_selects_as_polars(spark: Any) -> None:
    """The same query on Spark: the same map and threshold, the same keys released (the engines' exact
    counts are equal bit for bit, tests/tables/test_engines.py)."""
    df = _frame()
    sdf = spark.createDataFrame(df.rows(), "user bigint, city string, x double").repartition(3)
    pq = _gaussian(_context(df)).agg(dp.tables.count(), dp.tables.mean("x"))
    sq = _gaussian(_context(sdf)).agg(dp.tables.count(), dp.tables.mean("x"))
    assert sq.threshold == pq.threshold and sq.measurement.map(1) == pq.measurement.map(1)
    out = sq.release()
    assert out["city"].to_list() == ["a", "b", "c"] and out.columns == ["city", "count", "x_mean"]
