"""Static types of selection (issue 15): report noisy max, top-k and quantiles under mypy --strict."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from typing_extensions import assert_type

import dpcompose as dp
from dpcompose.core import Measurement, Transformation


def test_selection_types() -> None:
    scores = dp.VectorDomain(dp.AtomDomain(int), size=3)
    best = dp.m.make_report_noisy_max(scores, dp.LInfDistance(), scale=2.0)
    assert_type(best, Measurement[Any, int, Fraction, Fraction])
    assert_type(best.map(Fraction(1)), Fraction)  # an L∞ sensitivity is a Fraction
    top = dp.m.make_noisy_top_k(scores, dp.LInfDistance(monotonic=True), scale=2.0, k=2, optimize="min")
    assert_type(top([1, 2, 3]), tuple[int, ...])
    data = dp.VectorDomain(dp.AtomDomain(float))
    score = dp.t.make_quantile_score_candidates(data, dp.SymmetricDistance(), [0.0, 0.5, 1.0], 0.5)
    assert_type(score, Transformation[Any, Any, int, Fraction])
    median = dp.m.make_private_quantile(data, dp.SymmetricDistance(), [0.0, 0.5, 1.0], 0.5, scale=1.0)
    assert_type(median, Measurement[Any, Any, int, Fraction])
    chained = score >> dp.m.make_report_noisy_max(score.output_domain, score.output_metric, 2.0, "min")
    assert_type(chained.map(1), Fraction)
    assert best([1, 50, 2]) == 1 and median([0.4, 0.5, 0.6] * 30) in (0.0, 0.5, 1.0)
