"""A private quantile in one call: quantile scores chained into report noisy min."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose._validation import check_finite_positive
from dpcompose.accounting import exact, format_up
from dpcompose.core import Domain, Measurement, Metric, Node
from dpcompose.core._measurement import postprocess
from dpcompose.core._recipe import recorded
from dpcompose.errors import InvalidParameter
from dpcompose.measurements._discrete import DISCRETE_LAPLACE_MAX_SCALE
from dpcompose.measurements._noisy_max import make_report_noisy_max
from dpcompose.measurements._random import RandomSource
from dpcompose.transformations._quantile import make_quantile_score_candidates, quantile_setup

__all__ = ["make_private_quantile"]


@recorded
def make_private_quantile(
    input_domain: Domain,
    input_metric: Metric,
    candidates: Sequence[Any],
    alpha: float | Fraction,
    scale: float | int | Fraction,
    *,
    rng: np.random.Generator | RandomSource | None = None,
) -> Measurement[Any, Any, int, Fraction]:
    """The α-quantile of the data, chosen privately among ``candidates``.

    :func:`~dpcompose.transformations.make_quantile_score_candidates` scores every candidate with the
    integer ``|(b - a)·#{x < c} - a·#{x > c}|`` (``α = a/b``), and
    :func:`~dpcompose.measurements.make_report_noisy_max` with ``optimize="min"`` picks the candidate with
    the smallest noisy score; the candidate itself (not its index) is released.

    ``scale`` is in units of records: the scores are ``b`` times a count-like quantity, so the noise added
    to them has scale ``b·scale`` (exact). Then ``scale`` means the same for every α.

    Privacy map: ε = 2·d_in·max(α, 1 - α)/scale under ``SymmetricDistance`` and ε = 2·d_in/scale under
    ``ChangeOneDistance`` (the score's L∞ stability ``d_in·max(a, b - a)`` or ``d_in·b``, divided by the
    noise scale ``b·scale``, times 2 for non-monotonic scores). For the median, ε = d_in/scale
    (add/remove).

    Args:
        input_domain: ``VectorDomain(AtomDomain(int|float))`` (no NaN).
        input_metric: ``SymmetricDistance()`` or ``ChangeOneDistance()``.
        candidates: strictly increasing numbers of the data's type.
        alpha: the quantile in ``[0, 1]`` (``0.5`` for the median), read as the decimal it prints as.
        scale: the noise scale in records, > 0, with ``b·scale <= 2**50``.
        rng: a numpy Generator or RandomSource for reproducible experiments only: NOT private.

    Returns:
        A ``PureDP`` measurement returning one of ``candidates`` (as a Python int or float).

    Raises:
        InvalidParameter: bad candidates, alpha, scale or rng (named).
        DomainMismatch: as :func:`~dpcompose.transformations.make_quantile_score_candidates`.

    Source: Smith 2011 (exponential-mechanism quantiles); report noisy max: Dwork–Roth 2014 Claim 3.9
    (with the discrete-noise proof of :mod:`dpcompose.measurements._noisy_max`); chaining: Dwork–Roth
    2014 Prop. 2.1 (post-processing).

    Examples:
        >>> import dpcompose as dp
        >>> ages = dp.VectorDomain(dp.AtomDomain(int, bounds=(0, 120)))
        >>> median = dp.m.make_private_quantile(
        ...     ages, dp.SymmetricDistance(), candidates=list(range(0, 121, 10)), alpha=0.5, scale=1.0
        ... )
        >>> median.map(1)
        Fraction(1, 1)
        >>> median([23, 35, 41, 44, 60] * 40)
        40
    """
    _, cands, a = quantile_setup(input_domain, input_metric, candidates, alpha)
    check_finite_positive(scale, "scale")
    noise_scale = exact(scale, "scale") * a.den
    if noise_scale > DISCRETE_LAPLACE_MAX_SCALE:
        raise InvalidParameter(
            f"scale={scale!r} must be at most 2**50/{a.den} (alpha's denominator): the noise on the "
            "integer scores must fit the exact sampler"
        )
    score = make_quantile_score_candidates(input_domain, input_metric, candidates, alpha)
    select = make_report_noisy_max(
        score.output_domain, score.output_metric, noise_scale, optimize="min", rng=rng
    )
    values: list[Any] = cands.tolist()

    def candidate(index: int) -> Any:
        return values[index]

    chained = postprocess(score >> select, candidate)
    return Measurement(
        chained.input_domain,
        chained.input_metric,
        chained.output_measure,
        chained.function,
        chained.privacy_map,
        node=Node(
            "private_quantile",
            params=(("alpha", format_up(a.value)), ("candidates", str(len(values))), ("scale", repr(scale))),
            source="Smith 2011; Dwork–Roth 2014 Claim 3.9 (discrete-noise proof in _noisy_max)",
            children=(chained,),
        ),
    )
