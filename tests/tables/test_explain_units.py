"""dp.explain of a table query shows each released vector's noise in the result's units (issue 35 item 3)."""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

import pytest

import dpcompose as dp

pl = pytest.importorskip("polars")

SCHEMA = {
    "user": dp.Column(int),
    "state": dp.Column(str),
    "income": dp.Column(float, bounds=(0.0, 1e6)),
    "age": dp.Column(int, bounds=(0, 120)),
}


def _frame() -> Any:
    return pl.DataFrame(
        {
            "user": [1, 1, 2, 3],
            "state": ["CA", "NY", "CA", "TX"],
            "income": [5e4, 7e4, 1e5, 3e4],
            "age": [30, 30, 40, 50],
        }
    )


def _query(measure: Any, loss: Any) -> dp.tables.TableQuery:
    ctx = dp.Context(
        _frame(),
        SCHEMA,
        privacy_unit=dp.unit_of(id="user", max_rows=2),
        privacy_loss=loss,
        measure=measure,
        split_evenly_over=1,
    )
    return (
        ctx.query()
        .group_by("state", keys=["CA", "NY", "TX"])
        .agg(dp.tables.count(), dp.tables.sum("income"), dp.tables.variance("age"))
    )


def _shown(text: str, key: str) -> float:
    found = re.search(rf"(?:\(|, ){key}=([0-9.e+-]+)", text)
    assert found, text
    return float(found[1])


@pytest.mark.parametrize(("measure", "loss"), [(dp.PureDP(), 1.0), (dp.ZCDP(), 0.5)])
def test_explain_shows_the_summarized_scale_in_result_units(measure: Any, loss: Any) -> None:
    q = _query(measure, loss)
    explained = dp.explain(q.measurement, 1)
    noise_rows = [r for r in explained.rows if r.depth == 1 and "released=" in r.label]
    assert len(noise_rows) == len(q.summarize().rows) == 4  # count, income_sum, age_sum, age_sum_of_squares
    for row, (what, _, scale, _) in zip(noise_rows, q.summarize().rows, strict=True):
        assert f"released={what}" in row.label
        key = "result_scale" if "result_scale=" in row.label else "scale"
        assert _shown(row.label, key) == pytest.approx(scale, rel=1e-5)  # what summarize() says
    income = next(r for r in noise_rows if "released=income_sum" in r.label)
    assert "unit=2**" in income.label  # the grid the internal scale and d_in count
    # the internal scale stays shown after the unit, and the result-unit scale is that times the unit
    exponent = int(re.search(r"unit=2\*\*(-?\d+)", income.label)[1])  # type: ignore[index]
    assert _shown(income.label, "result_scale") == pytest.approx(
        _shown(income.label, "scale") * 2.0**exponent, rel=1e-5
    )
    assert _shown(income.label, "result_scale") < 1e7  # not grid units (about 1e6/ε here)


def test_the_shown_children_keep_the_noise_maps() -> None:
    q = _query(dp.PureDP(), 1.0)
    node = q.measurement.node
    for child, rel in zip(node.children, q.vectors, strict=True):
        assert child.map(rel.sensitivity) == rel.noise.map(rel.sensitivity)
    assert sum(
        (child.map(d) for child, d in zip(node.children, node.inputs_for_children(1), strict=True)),
        Fraction(0),
    ) == (q.measurement.map(1))
