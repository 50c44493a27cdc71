"""Static types of make_clip_l1/l2 and make_vector_sum (issue 15): ``mypy --strict tests/typing``."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
from typing_extensions import assert_type

import dpcompose as dp
from dpcompose.core import Measurement, Transformation


def test_clip_sum_gaussian_chain_with_its_distance_types() -> None:
    rows = dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float), size=2), size=4)
    clip = dp.t.make_clip_l2(rows, dp.SymmetricDistance(), norm=1.0)
    assert_type(clip, Transformation[Any, npt.NDArray[np.float64], int, int])
    clip1 = dp.t.make_clip_l1(rows, dp.ChangeOneDistance(), norm=1.0)
    assert_type(clip1.map(1), int)
    total = dp.t.make_vector_sum(clip.output_domain, clip.output_metric)
    assert_type(total, Transformation[Any, npt.NDArray[np.float64], int, Fraction])
    chain = clip >> total
    assert_type(chain, Transformation[Any, npt.NDArray[np.float64], int, Fraction])
    noisy = chain >> dp.m.make_gaussian(total.output_domain, total.output_metric, scale=1.0)
    assert_type(noisy, Measurement[Any, Any, int, Fraction])
    ball: dp.NormBallDomain = dp.NormBallDomain(size=2, norm=1.0, p=1)
    assert_type(ball.norm, float)
    assert chain(np.zeros((4, 2))).shape == (2,)
    assert noisy.map(2) > 0  # one row changed in the sized domain: d_in = 2
