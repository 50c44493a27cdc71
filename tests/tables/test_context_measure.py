"""A Context's queries report in the Context's own measure: in an ApproxDP Context every query maps to an
(ε, δ) pair, whether its keys are known (pure ε, as (ε, 0)) or selected (ε, δ > 0), with the same ε."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import polars as pl
import pytest

import dpcompose as dp

SCHEMA = dp.FrameDomain({"grp": dp.Column(str), "k": dp.Column(int, bounds=(0, 9))})
FRAME = pl.DataFrame({"grp": ["a", "b"] * 10, "k": [1, 2] * 10})


def test_an_approx_context_reports_every_query_as_an_epsilon_delta_pair() -> None:
    ctx = dp.Context(FRAME, SCHEMA, privacy_loss=(1.0, 1e-6), measure=dp.ApproxDP(), split_evenly_over=4)
    known = ctx.query().group_by("grp", keys=["a", "b"]).agg(pl.len())
    unknown = ctx.query().group_by("grp", keys=None).agg(pl.len())
    assert known.measurement.output_measure == dp.ApproxDP() == unknown.measurement.output_measure
    eps, delta = known.measurement.map(1)
    assert (eps, delta) == (Fraction(1, 4), 0)
    assert unknown.measurement.map(1)[0] == eps and unknown.measurement.map(1)[1] > 0
    assert set(known.release().to_dict(as_series=False)["grp"]) == {"a", "b"}
    left = ctx.remaining()
    assert Fraction(left["epsilon"].exact) == Fraction(3, 4) and Fraction(left["delta"].exact) > 0


def test_a_pure_context_still_reports_epsilon() -> None:
    ctx = dp.Context(FRAME, SCHEMA, privacy_loss=1.0, split_evenly_over=2)
    assert ctx.query().group_by("grp", keys=["a", "b"]).agg(pl.len()).measurement.map(1) == Fraction(1, 2)


def test_a_pandas_frame_without_pyarrow_is_refused_saying_what_to_do(monkeypatch: Any) -> None:
    """polars.from_pandas needs pyarrow for most pandas frames; its ModuleNotFoundError escaped bare."""
    frame_type = type("DataFrame", (), {"__module__": "pandas.core.frame"})  # a pandas frame, by its type

    def no_pyarrow(data: Any) -> Any:
        raise ModuleNotFoundError("No module named 'pyarrow'", name="pyarrow")

    monkeypatch.setattr(pl, "from_pandas", no_pyarrow)
    with pytest.raises(dp.EngineUnavailable, match=r"pyarrow.*polars\.DataFrame\(df\.to_dict\('list'\)\)"):
        dp.Context(frame_type(), SCHEMA, privacy_loss=1.0, split_evenly_over=1)
