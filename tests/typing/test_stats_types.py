"""Static types of make_resize, make_mean and make_variance (issue 15): ``mypy --strict tests/typing``."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from typing_extensions import assert_type

import dpcompose as dp
from dpcompose.core import Measurement, Transformation


def test_resize_mean_variance_chain_with_their_distance_types() -> None:
    data = dp.VectorDomain(dp.AtomDomain(float))
    clamp = dp.t.make_clamp(data, dp.SymmetricDistance(), bounds=(0.0, 1.0))
    resize = dp.t.make_resize(clamp.output_domain, clamp.output_metric, size=10, constant=0.5)
    assert_type(resize, Transformation[Any, Any, int, int])
    mean = dp.t.make_mean(resize.output_domain, resize.output_metric)
    assert_type(mean, Transformation[Any, float, int, Fraction])
    variance = dp.t.make_variance(resize.output_domain, resize.output_metric, ddof=1)
    assert_type(variance, Transformation[Any, float, int, Fraction])
    sized_mean = clamp >> resize >> mean
    assert_type(sized_mean, Transformation[Any, float, int, Fraction])
    lap = dp.m.make_laplace(mean.output_domain, mean.output_metric, scale=1.0)
    released = sized_mean >> lap
    assert_type(released, Measurement[Any, Any, int, Fraction])
    assert_type(released.map(1), Fraction)
    assert isinstance(mean([0.5] * 10), float)
    assert (clamp >> resize >> variance).map(1) > 0
