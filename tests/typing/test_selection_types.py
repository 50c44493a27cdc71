"""Static types of the selection primitives (issue 15): ``mypy --strict tests/typing``."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from typing_extensions import assert_type

import dpcompose as dp
from dpcompose.core import Measurement, Transformation


def test_selection_types() -> None:
    scores = dp.VectorDomain(dp.AtomDomain(int), size=3)
    rnm = dp.m.make_report_noisy_max(scores, dp.LInfDistance(), scale=1.0, optimize="min")
    assert_type(rnm, Measurement[Any, int, Fraction, Fraction])
    assert_type(rnm([1, 2, 3]), int)
    top = dp.m.make_noisy_top_k(scores, dp.LInfDistance(monotonic=True), scale=1.0, k=2)
    assert_type(top, Measurement[Any, tuple[int, ...], Fraction, Fraction])
    assert_type(top.map(Fraction(1)), Fraction)

    data = dp.VectorDomain(dp.AtomDomain(float))
    score = dp.t.make_quantile_score_candidates(data, dp.SymmetricDistance(), [0.0, 1.0], alpha=0.5)
    assert_type(score, Transformation[Any, Any, int, Fraction])
    chained = score >> dp.m.make_report_noisy_max(score.output_domain, score.output_metric, 2.0, "min")
    assert_type(chained, Measurement[Any, int, int, Fraction])
    median = dp.m.make_private_quantile(data, dp.SymmetricDistance(), [0.0, 1.0], alpha=0.5, scale=1.0)
    assert_type(median, Measurement[Any, Any, int, Fraction])
    assert_type(median.map(1), Fraction)
    assert median([0.2, 0.4]) in (0.0, 1.0)
