"""Static types of make_subsample and dp.accuracy (``mypy --strict tests/typing`` checks them)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
from typing_extensions import assert_type

import dpcompose as dp
from dpcompose.core import Measurement


def test_subsample_types() -> None:
    ints = dp.VectorDomain(dp.AtomDomain(int))
    noisy = dp.t.make_count(ints, dp.SymmetricDistance()) >> dp.m.make_discrete_laplace(
        dp.AtomDomain(int), dp.AbsoluteDistance(), 1
    )
    sub = dp.make_subsample(noisy, 0.5, "poisson", rng=np.random.default_rng(0))
    assert_type(sub, Measurement[Any, Any, Any, Any])
    assert sub.map(1) == dp.combinators.make_subsample(noisy, Fraction(1, 2)).map(1)
    wor = dp.make_subsample(noisy, 0.5, "without_replacement", dataset_size=10)
    assert isinstance(wor(list(range(10))), int)


def test_accuracy_types() -> None:
    assert_type(dp.accuracy.laplace_scale_to_accuracy(1.0, 0.05), float)
    assert_type(dp.accuracy.accuracy_to_laplace_scale(3.0, 0.05), float)
    assert_type(dp.accuracy.gaussian_scale_to_accuracy(1.0, 0.05), float)
    assert_type(dp.accuracy.accuracy_to_gaussian_scale(2.0, 0.05), float)
    assert_type(dp.accuracy.discrete_laplace_scale_to_accuracy(1, 0.05), int)
    assert_type(dp.accuracy.accuracy_to_discrete_laplace_scale(3, 0.05), float)
    assert_type(dp.accuracy.discrete_gaussian_scale_to_accuracy(Fraction(3, 2), 0.05), int)
    assert_type(dp.accuracy.accuracy_to_discrete_gaussian_scale(3, 0.05), float)
    lo, hi = dp.accuracy.confidence_interval(5, 1, 0.05, mechanism="discrete_laplace")
    assert (lo, hi) == (2, 8)
