"""Static types of the public API: ``mypy --strict tests/typing`` checks them (in ``.ci/run``).

``assert_type`` does nothing at run time; under mypy it fails unless the inferred type is exactly the one
written, so a change that silently widens a public signature to ``Any`` breaks CI.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from typing_extensions import assert_type

import dpcompose as dp
from dpcompose.core import Measurement, Transformation


def test_chaining_keeps_the_type_parameters() -> None:
    ints = dp.VectorDomain(dp.AtomDomain(int))
    count = dp.t.make_count(ints, dp.SymmetricDistance())
    assert_type(count, Transformation[Any, int, int, Fraction])
    lap = dp.m.make_laplace(dp.AtomDomain(int), dp.AbsoluteDistance(), scale=10.0)
    assert_type(lap, Measurement[Any, Any, Fraction, Fraction])
    noisy = count >> lap
    assert_type(noisy, Measurement[Any, Any, int, Fraction])
    assert_type(noisy.map(1), Fraction)
    assert noisy.map(1) == Fraction(1, 10)

    def to_int(x: Any) -> int:
        return int(x)

    rounded = noisy >> to_int
    assert_type(rounded, Measurement[Any, int, int, Fraction])
    assert isinstance(rounded([1, 2, 3]), int)


def test_transformation_chains_compose_their_distance_types() -> None:
    ints = dp.VectorDomain(dp.AtomDomain(int))
    clamp = dp.t.make_clamp(ints, dp.SymmetricDistance(), bounds=(0, 10))
    assert_type(clamp, Transformation[Any, Any, int, int])
    summed = clamp >> dp.t.make_sum(clamp.output_domain, clamp.output_metric)
    assert_type(summed, Transformation[Any, Any, int, Fraction])
    assert summed.map(1) == 10


def test_accounting_returns_exact_fractions() -> None:
    assert_type(dp.accounting.basic([0.1] * 10, [0.0] * 10), tuple[Fraction, Fraction])
    assert_type(dp.accounting.zcdp_to_approx(0.5, 1e-6), Fraction)
    assert dp.accounting.zcdp_to_approx(0.5, 1e-6) > 0
