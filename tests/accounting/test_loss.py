"""PrivacyLoss.deltas: δ(ε) at many ε in one call, the same values as PrivacyLoss.delta point by point."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcompose.accounting import PrivacyLoss
from dpcompose.accounting._pld.concurrency import speedups
from dpcompose.errors import InvalidParameter

SCALES = st.sampled_from([0.5, 1, 3, 10])
PAIRS = st.one_of(
    st.builds(PrivacyLoss.laplace, st.just(1), SCALES),
    st.builds(PrivacyLoss.discrete_laplace, st.integers(1, 4), SCALES),
    st.builds(PrivacyLoss.gaussian, st.just(1), SCALES),
    st.builds(PrivacyLoss.randomized_response, st.sampled_from([0.3, 1.0, 2.0]), st.integers(2, 5)),
    st.builds(PrivacyLoss.approx, st.sampled_from([0, 0.2, 1.0]), st.sampled_from([0, 1e-9, 1e-4])),
)
SHORT = st.lists(st.tuples(PAIRS, st.integers(1, 4)), min_size=1, max_size=3)
"""Short compositions: read on their sides (and a Gaussian one in closed form)."""
LONG = st.lists(st.tuples(PAIRS, st.integers(1, 300)), min_size=1, max_size=3)
"""Up to hundreds of copies: read through tilted composites as well."""
POINTS = st.lists(st.floats(0, 30, allow_nan=False), min_size=1, max_size=12)


def _loss(parts: list[tuple[PrivacyLoss, int]]) -> PrivacyLoss:
    return PrivacyLoss.compose([p.times(n) for p, n in parts])


def _check_same(parts: list[tuple[PrivacyLoss, int]], points: list[float]) -> None:
    loss = _loss(parts)
    curve = loss.deltas(points)
    assert type(curve) is tuple and all(type(d) is Fraction for d in curve)
    assert curve == tuple(loss.delta(e) for e in points)  # bit for bit, repeats and any order included


@settings(max_examples=5)
@given(SHORT, POINTS)
def test_deltas_are_delta_point_by_point(parts: list[tuple[PrivacyLoss, int]], points: list[float]) -> None:
    _check_same(parts, points)


@pytest.mark.slow
@settings(max_examples=40)
@given(LONG, POINTS)
def test_deltas_are_delta_point_by_point_slow(
    parts: list[tuple[PrivacyLoss, int]], points: list[float]
) -> None:
    _check_same(parts, points)


def _check_monotone(parts: list[tuple[PrivacyLoss, int]], points: list[float]) -> None:
    curve = _loss(parts).deltas(sorted(points))
    assert all(a >= b for a, b in itertools.pairwise(curve))


@settings(max_examples=5)
@given(SHORT, POINTS)
def test_deltas_fall_as_epsilon_rises(parts: list[tuple[PrivacyLoss, int]], points: list[float]) -> None:
    _check_monotone(parts, points)


@pytest.mark.slow
@settings(max_examples=40)
@given(SHORT, POINTS)
def test_deltas_fall_as_epsilon_rises_slow(parts: list[tuple[PrivacyLoss, int]], points: list[float]) -> None:
    _check_monotone(parts, points)


def test_a_subsampled_run_reads_both_orders_as_delta_does() -> None:
    """A Poisson-subsampled composition (two orders, a screening twin, tilted composites): with the speed
    devices on and off, the same values as point by point."""
    loss = PrivacyLoss.subsampled(PrivacyLoss.gaussian(1, 1), 0.05).times(300)
    points = [0.0, 0.5, 1.0, 2.5, 1.0, 6.0]
    expected = tuple(loss.delta(e) for e in points)
    assert loss.deltas(points) == expected
    with speedups(False):
        assert loss.deltas(np.array(points)) == expected


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        (1.0, r"epsilons=1\.0 must be a sequence"),
        ("0.5", "epsilons='0.5' must be a sequence"),
        (None, "epsilons=None must be a sequence"),
        ([], "epsilons"),
        ([0.5, -1.0], r"epsilons\[1\]=-1\.0"),
        ([0.5, math.nan], r"epsilons\[1\]=nan"),
        ([math.inf], r"epsilons\[0\]=inf"),
        ([0.5, "1"], r"epsilons\[1\]='1'"),
    ],
)
def test_deltas_refuse_bad_input_before_reading_anything(bad: object, match: str) -> None:
    loss = PrivacyLoss.laplace(1, 10).times(3)
    with pytest.raises(InvalidParameter, match=match):
        loss.deltas(bad)  # type: ignore[arg-type]
