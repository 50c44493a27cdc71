"""Static types of partition selection (issue 15): ``mypy --strict tests/typing`` checks them."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from typing_extensions import assert_type

import dpcompose as dp
from dpcompose.core import Measurement


def test_threshold_measurements_types() -> None:
    by = dp.t.make_count_by(dp.VectorDomain(dp.AtomDomain(str)), dp.SymmetricDistance())
    lap = dp.m.make_laplace_threshold(by.output_domain, by.output_metric, scale=1.0, threshold=20)
    assert_type(
        lap,
        Measurement[Any, dict[Any, int], tuple[int, Fraction, Fraction], tuple[Fraction, Fraction]],
    )
    assert_type(lap.map((1, Fraction(1), Fraction(1))), tuple[Fraction, Fraction])
    gauss = dp.m.make_gaussian_threshold(
        by.output_domain, by.output_metric, scale=2.0, threshold=30, noise_delta=Fraction(1, 10**9)
    )
    assert_type(gauss({"a": 100}), dict[Any, int])
    chained = by >> lap
    assert_type(chained.map(1), tuple[Fraction, Fraction])
    threshold = dp.m.partition_threshold(1.0, 1e-6, by.map(1), noise="gaussian")
    assert_type(threshold, int)
    assert isinstance(chained(["a"] * 50), dict) and threshold > 2
