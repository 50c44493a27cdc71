"""Static types of the privacy unit (issue 15): ``mypy --strict tests/typing`` checks them."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from typing_extensions import assert_type

import dpcompose as dp
from dpcompose.core import Measurement, Transformation


def test_bound_contributions_maps_people_to_rows() -> None:
    rows = dp.VectorDomain(dp.AtomDomain(dict))
    unit = dp.SymmetricIdDistance("user")
    assert_type(unit, dp.SymmetricIdDistance)
    assert_type(unit.id_key, int | str)
    bound = dp.t.make_bound_contributions(rows, unit, "user", 3)
    assert_type(bound, Transformation[Any, Any, int, int])  # a list, or a structured array for one
    assert_type(bound.map(1), int)
    grouped = dp.t.make_bound_contributions(rows, unit, "user", 2, max_groups=2, by="page")
    assert grouped.map(1) == 4
    count = bound >> dp.t.make_count(bound.output_domain, bound.output_metric)
    noisy = count >> dp.m.make_laplace(count.output_domain, count.output_metric, scale=6.0)
    assert_type(noisy, Measurement[Any, Any, int, Fraction])
    assert noisy.map(2) == 1
