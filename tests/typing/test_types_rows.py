"""Static types of the row transformations (issue 15): ``mypy --strict tests/typing`` checks them."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from typing_extensions import assert_type

import dpcompose as dp
from dpcompose.core import Measurement, Transformation


def test_row_transformations_keep_record_distances() -> None:
    raw = dp.VectorDomain(dp.AtomDomain(float, bounds=(0.0, 10.0), nan=True))
    sym = dp.SymmetricDistance()
    subset = dp.t.make_subset_by(raw, sym, lambda x: x > 1.0)
    assert_type(subset, Transformation[Any, Any, int, int])
    mapped = dp.t.make_map_rows(raw, sym, lambda x: x / 10, dp.AtomDomain(float, bounds=(0.0, 1.0)), 0.0)
    assert_type(mapped, Transformation[Any, Any, int, int])
    impute = dp.t.make_impute_constant(raw, sym, 5.0)
    assert_type(impute, Transformation[Any, Any, int, int])
    dropped = dp.t.make_drop_null(raw, dp.ChangeOneDistance())
    assert_type(dropped, Transformation[Any, Any, int, int])
    assert_type(dropped.map(1), int)
    assert dropped.map(1) == 2
    rows = dp.VectorDomain(dp.AtomDomain(tuple))
    column = dp.t.make_select_column(rows, sym, 0, dp.AtomDomain(int, bounds=(0, 9)), default=0)
    assert_type(column, Transformation[Any, Any, int, int])
    summed = column >> dp.t.make_sum(column.output_domain, column.output_metric)
    assert_type(summed, Transformation[Any, Any, int, Fraction])
    assert summed([(3,), (4, 1), ()]) == 7


def test_count_distinct_chains_into_noise() -> None:
    distinct = dp.t.make_count_distinct(dp.VectorDomain(dp.AtomDomain(str)), dp.SymmetricDistance())
    assert_type(distinct, Transformation[Any, int, int, Fraction])
    noisy = distinct >> dp.m.make_laplace(distinct.output_domain, distinct.output_metric, scale=2.0)
    assert_type(noisy, Measurement[Any, Any, int, Fraction])
    assert noisy.map(1) == Fraction(1, 2)
