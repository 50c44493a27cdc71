"""Quantile scores: how far each candidate is from being the α-quantile of the data, as exact integers.

Examples:
    >>> import dpcompose as dp
    >>> data = dp.VectorDomain(dp.AtomDomain(int))
    >>> t = dp.t.make_quantile_score_candidates(data, dp.SymmetricDistance(), [0, 5, 10], alpha=0.5)
    >>> t([1, 2, 3, 6, 7]).tolist()
    [5, 1, 5]
    >>> t.map(1)
    Fraction(1, 1)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose._validation import short_repr as _short
from dpcompose.accounting import decimal, format_up
from dpcompose.core import AtomDomain, ChangeOneDistance, Domain, Metric, Node, Transformation, VectorDomain
from dpcompose.core._metrics import LInfDistance, check_space
from dpcompose.core._recipe import recorded
from dpcompose.errors import DomainMismatch, InvalidParameter
from dpcompose.measurements._discrete import saturate_ints
from dpcompose.transformations._clamp import check_dataset_metric

__all__ = ["make_quantile_score_candidates"]

_MAX_ALPHA_DENOMINATOR = 1 << 20
"""α's denominator is at most ``2**20``: scores are at most ``2**20·n``, which fits int64 for any
dataset that fits in memory (``n < 2**43``)."""

_INT_CANDIDATE_LIMIT = 1 << 60
"""Int candidates lie strictly inside ``±2**60``: data are saturated to ``±2**60`` (int64) first, which
keeps every comparison with such a candidate."""


class QuantileAlpha:
    """α = a/b, read as the decimal it prints as (``0.3`` is 3/10), with ``0 <= a <= b <= 2**20``."""

    def __init__(self, alpha: object) -> None:
        value = decimal(alpha, "alpha")
        if not 0 <= value <= 1:
            raise InvalidParameter(f"alpha={_short(alpha)} must be in [0, 1]")
        if value.denominator > _MAX_ALPHA_DENOMINATOR:
            raise InvalidParameter(
                f"alpha={_short(alpha)} must have a denominator of at most 2**20 as a fraction "
                f"(it is {value.denominator}): scores are integers scaled by it; round alpha"
            )
        self.value = value
        self.num = value.numerator
        self.den = value.denominator

    def sensitivity(self, metric: Metric) -> int:
        """L∞ change of the scores per changed record (see :func:`make_quantile_score_candidates`)."""
        if isinstance(metric, ChangeOneDistance):
            return self.den
        return max(self.num, self.den - self.num)


def quantile_candidates(candidates: object, carrier: type) -> np.ndarray[Any, Any]:
    """A quantile's ``candidates`` checked for data of ``carrier`` (``int`` or ``float``), as an array.

    Raises:
        InvalidParameter: not a non-empty one-dimensional sequence of numbers of the carrier's kind
            (ints strictly inside ±2**60; floats finite and exact), or not strictly increasing.
    """
    if isinstance(candidates, (str, bytes, bytearray, set, frozenset, dict)) or not isinstance(
        candidates, (Sequence, np.ndarray)
    ):
        raise InvalidParameter(f"candidates={_short(candidates)} must be a list or tuple of numbers")
    if isinstance(candidates, np.ndarray) and candidates.ndim != 1:
        raise InvalidParameter(f"candidates={_short(candidates)} must be one-dimensional")
    raw = list(candidates)
    if not raw:
        raise InvalidParameter("candidates=[] must not be empty")
    out: list[Any] = []
    for i, c in enumerate(raw):
        if isinstance(c, np.generic):
            c = c.item()
        where = f"candidates[{i}]={_short(c)}"
        if isinstance(c, bool) or not isinstance(c, (int, float)):
            raise InvalidParameter(f"{where} must be {'an int' if carrier is int else 'a float'}")
        if carrier is int:
            if not isinstance(c, int):
                raise InvalidParameter(f"{where} must be an int for int data (comparisons are exact)")
            if not -_INT_CANDIDATE_LIMIT < c < _INT_CANDIDATE_LIMIT:
                raise InvalidParameter(f"{where} must lie strictly between -2**60 and 2**60")
            out.append(int(c))
        else:
            if isinstance(c, int):
                try:
                    ok = float(c) == c
                except OverflowError:
                    ok = False
                if not ok:
                    raise InvalidParameter(f"{where} is not exactly a float64")
            if not math.isfinite(c):
                raise InvalidParameter(f"{where} must be finite")
            out.append(float(c))
    for i in range(1, len(out)):
        if not out[i - 1] < out[i]:
            raise InvalidParameter(
                f"candidates={_short(raw)} must be strictly increasing: candidates[{i - 1}]={out[i - 1]!r} "
                f"and candidates[{i}]={out[i]!r}"
            )
    return np.array(out, dtype=np.int64 if carrier is int else np.float64)


def quantile_setup(
    input_domain: Domain, input_metric: Metric, candidates: object, alpha: object
) -> tuple[type, np.ndarray[Any, Any], QuantileAlpha]:
    """Check the arguments of the quantile constructors: the data's carrier, the candidates as an array,
    and α."""
    check_space(input_domain, input_metric)
    check_dataset_metric(input_metric)
    assert isinstance(input_domain, VectorDomain)
    element = input_domain.element_domain
    if not (isinstance(element, AtomDomain) and element.carrier in (int, float)):
        raise DomainMismatch(f"input_domain={input_domain!r} must be a VectorDomain of int or float atoms")
    if element.nan:
        raise DomainMismatch(
            f"input_domain={input_domain!r} admits NaN, which has no rank: drop or impute it first "
            "(make_drop_null / make_impute_constant)"
        )
    cands = quantile_candidates(candidates, element.carrier)
    return element.carrier, cands, QuantileAlpha(alpha)


@recorded
def make_quantile_score_candidates(
    input_domain: Domain, input_metric: Metric, candidates: Sequence[Any], alpha: float | Fraction
) -> Transformation[Any, Any, int, Fraction]:
    """Score each candidate by how far it is from the α-quantile of the data (lower is better).

    With ``α = a/b`` in lowest terms, ``L(c) = #{x < c}`` and ``G(c) = #{x > c}``, the score of candidate
    ``c`` is the integer ``|(b - a)·L(c) - a·G(c)|`` (``b`` times ``|(1 - α)·L - α·G|``): zero when the
    records below ``c`` and above it are in the ratio ``α : 1 - α``. Computed on the sorted data with
    ``np.searchsorted`` (``O((n + m) log n)``), no per-record Python loop for numpy input.

    Stability (L∞ over the score vector). Adding one record changes, for each candidate, either ``L`` by 1
    (a record below ``c``), or ``G`` by 1 (above), or neither (equal to ``c``); so ``(b - a)·L - a·G``
    moves by ``b - a``, ``a`` or 0 and its absolute value by at most ``max(a, b - a)``. Changing one
    record is one removal and one addition of a record on a possibly different side: the inner value moves
    by at most ``(b - a) + a = b`` (a record moving from below ``c`` to above it moves it by exactly
    ``-b``). By the triangle inequality over ``d_in`` steps:

    * ``SymmetricDistance``: ``d_out = d_in·max(a, b - a)``;
    * ``ChangeOneDistance``: ``d_out = d_in·b``.

    The scores are not monotonic (an added record moves some scores up and others down), so the output
    metric is ``LInfDistance()``.

    Args:
        input_domain: ``VectorDomain(AtomDomain(int|float))`` (no NaN; any size).
        input_metric: ``SymmetricDistance()`` or ``ChangeOneDistance()``.
        candidates: strictly increasing numbers of the data's type (ints strictly inside ``±2**60``;
            finite floats).
        alpha: the quantile in ``[0, 1]``, read as the decimal it prints as (``0.3`` is 3/10; a Fraction
            exactly); its denominator must be at most ``2**20``.

    Returns:
        A transformation to ``VectorDomain(AtomDomain(int), size=len(candidates))`` (an int64 array)
        under ``LInfDistance()``, to minimise (``make_report_noisy_max(..., optimize="min")``).

    Raises:
        InvalidParameter: bad candidates or alpha (named).
        DomainMismatch: the domain is not a vector of int/float atoms without NaN, or the metric does not
            count records.

    Source: the rank-based quantile score of the exponential-mechanism quantile (Smith 2011, "Privacy-
    preserving statistical estimation with optimal convergence rates"), in the integer form and with the
    sensitivities proven above.

    Examples:
        >>> import dpcompose as dp
        >>> data = dp.VectorDomain(dp.AtomDomain(float))
        >>> t = dp.t.make_quantile_score_candidates(data, dp.ChangeOneDistance(), [0.0, 0.5, 1.0], 0.25)
        >>> t([0.1, 0.2, 0.6, 0.7, 0.9]).tolist()
        [5, 3, 15]
        >>> t.map(1)
        Fraction(4, 1)
    """
    carrier, cands, a = quantile_setup(input_domain, input_metric, candidates, alpha)
    weight_below = a.den - a.num
    weight_above = a.num
    per_record = a.sensitivity(input_metric)

    def run(data: Any) -> np.ndarray[Any, np.dtype[np.int64]]:
        if carrier is int:
            values: np.ndarray[Any, Any] = saturate_ints(data, True)
        else:
            values = np.asarray(data, dtype=np.float64)
        values = np.sort(values)
        n = values.shape[0]
        below = np.searchsorted(values, cands, side="left").astype(np.int64)
        above = n - np.searchsorted(values, cands, side="right").astype(np.int64)
        scores: np.ndarray[Any, np.dtype[np.int64]] = np.abs(weight_below * below - weight_above * above)
        return scores

    def stability(d_in: int) -> Fraction:
        return Fraction(d_in * per_record)

    return Transformation(
        input_domain,
        VectorDomain(AtomDomain(int), size=len(cands)),
        input_metric,
        LInfDistance(),
        run,
        stability,
        node=Node(
            "quantile_score_candidates",
            params=(("candidates", str(len(cands))), ("alpha", format_up(a.value))),
            source="Smith 2011 (quantile score); integer form and sensitivity proven in the docstring",
        ),
    )
