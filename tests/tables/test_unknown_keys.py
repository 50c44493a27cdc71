"""group_by(..., keys=None): keys selected privately (partition selection) in a table query."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import dpcompose as dp
from dpcompose.measurements._threshold import laplace_tail_up

pl = pytest.importorskip("polars")

SCHEMA = dp.FrameDomain(
    {"user": dp.Column(int), "city": dp.Column(str), "x": dp.Column(float, bounds=(0.0, 1.0))}
)


def _frame(rare: int = 1) -> object:
    rng = np.random.default_rng(7)
    n = 6000
    cities = ["a"] * (n // 2) + ["b"] * (n // 3) + ["c"] * (n - n // 2 - n // 3 - rare) + ["rare"] * rare
    return pl.DataFrame({"user": np.arange(n) // 2, "city": cities, "x": rng.random(n)})


def _context(data: object, **kw: object) -> dp.Context:
    args: dict[str, object] = {
        "privacy_unit": dp.unit_of("user", max_rows=2, max_groups=1),
        "privacy_loss": (1.0, 1e-6),
        "measure": dp.ApproxDP(),
        "split_evenly_over": 1,
    }
    args.update(kw)
    return dp.Context(data, SCHEMA, **args)  # type: ignore[arg-type]


def test_frequent_keys_are_released_and_a_singleton_is_not() -> None:
    q = _context(_frame()).query().group_by("city").agg(dp.tables.count(), dp.tables.sum("x"))
    out = q.release()
    assert out["city"].to_list() == ["a", "b", "c"]  # sorted by value; "rare" (one row) is below threshold
    assert q.threshold is not None and q.threshold > 2
    counts = dict(zip(out["city"].to_list(), out["count"].to_list(), strict=True))
    assert abs(counts["a"] - 3000) < 200 and abs(counts["b"] - 2000) < 200


def test_the_map_is_the_threshold_delta_plus_the_noise_epsilon() -> None:
    q = _context(_frame()).query().group_by("city").agg(dp.tables.mean("x"))
    eps, delta = q.measurement.map(1)
    assert eps == Fraction(1)  # the whole ε share: count and sum, each half
    assert 0 < delta <= Fraction(1, 10**6)
    # one person: l0 = max_groups = 1 key, at most max_rows = 2 rows there; a key only they have is released
    # with probability P[c + Z ≥ T] ≤ P[Z ≥ T − 2] (exact discrete Laplace tail), which is the δ
    count_scale = Fraction(2) / Fraction(1, 2)  # sensitivity max_rows / the count's ε share
    assert q.threshold is not None
    assert delta == laplace_tail_up(count_scale, q.threshold - 2)
    # two people: twice the keys, and the bound is the threshold measurement's own map
    sel = dp.m.make_laplace_threshold(
        dp.MapDomain(dp.AtomDomain(str), dp.AtomDomain(int)), dp.L01InfDistance(), count_scale, q.threshold
    )
    assert q.measurement.map(2) == (Fraction(2), sel.map((2, Fraction(4), Fraction(4)))[1])
    text = str(dp.explain(q.measurement, 1))
    assert "threshold" in text and "partition selection" in text


@pytest.mark.parametrize(
    "kw",
    [
        {"measure": None, "privacy_loss": 1.0},
        {"measure": dp.ZCDP(), "privacy_loss": 0.5},
        {"privacy_loss": (1.0, 0.0)},
    ],
)
def test_refused_without_a_delta_and_nothing_spent(kw: dict[str, object]) -> None:
    ctx = _context(_frame(), **kw)
    before = ctx.remaining()
    with pytest.raises(dp.InvalidParameter, match="needs a δ"):
        ctx.query().group_by("city").agg(dp.tables.count())
    assert ctx.remaining() == before


def test_row_level_unit_and_several_columns() -> None:
    data = pl.DataFrame({"user": [1] * 500 + [2] * 3, "city": ["a"] * 500 + ["z"] * 3, "x": [0.5] * 503})
    ctx = dp.Context(data, SCHEMA, privacy_loss=(1.0, 1e-9), measure=dp.ApproxDP(), split_evenly_over=1)
    out = ctx.query().group_by("city", "user").agg(dp.tables.count()).release()
    assert out.select("city", "user").rows() == [("a", 1)]


def test_quantile_with_unknown_keys_is_released_for_selected_keys_only() -> None:
    q = _context(_frame()).query().group_by("city").agg(dp.tables.quantile("x", 0.5, [0.25, 0.5, 0.75]))
    eps, delta = q.measurement.map(1)
    assert eps == Fraction(1) and 0 < delta <= Fraction(1, 10**6)
    out = q.release()
    assert out["city"].to_list() == ["a", "b", "c"]
    assert set(out["x_quantile_0.5"].to_list()) <= {0.25, 0.5, 0.75}
