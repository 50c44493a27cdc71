"""Static types of the counting transformations (``mypy --strict tests/typing`` checks them)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from typing_extensions import assert_type

import dpcompose as dp
from dpcompose.core import Transformation


def test_count_by_categories_types() -> None:
    words = dp.VectorDomain(dp.AtomDomain(str))
    sym = dp.SymmetricDistance()
    hist = dp.t.make_count_by_categories(words, sym, ["a", "b"], null_category=True, norm=2)
    assert_type(hist, Transformation[Any, Any, int, Fraction])
    assert_type(hist.map(1), Fraction)
    noisy = hist >> dp.m.make_gaussian(hist.output_domain, hist.output_metric, scale=2.0)
    assert_type(noisy.map(1), Fraction)
    assert hist(["a", "z"]).tolist() == [1, 0, 1]


def test_count_by_types() -> None:
    by = dp.t.make_count_by(dp.VectorDomain(dp.AtomDomain(int)), dp.ChangeOneDistance())
    assert_type(by, Transformation[Any, dict[Any, int], int, tuple[int, Fraction, Fraction]])
    assert_type(by([1, 1, 2]), dict[Any, int])
    assert_type(by.map(1), tuple[int, Fraction, Fraction])
    assert by.map(1) == (2, Fraction(2), Fraction(1))
    metric: dp.Metric = by.output_metric
    assert isinstance(metric, dp.L01InfDistance)
    assert isinstance(by.output_domain, dp.MapDomain)


def test_vectorised_clamp_and_sum_types() -> None:
    floats = dp.VectorDomain(dp.AtomDomain(float))
    clamp = dp.t.make_clamp(floats, dp.SymmetricDistance(), (0.0, 1.0))
    total = clamp >> dp.t.make_sum(clamp.output_domain, clamp.output_metric, max_size=10)
    assert_type(total, Transformation[Any, Any, int, Fraction])
    assert total([0.5, 2.0]) == 1.5
