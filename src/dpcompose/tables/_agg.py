"""The aggregates of a table query (:class:`Agg`): ``count``, ``sum``, ``mean``, ``variance``, ``quantile``
and ``count_distinct``, and the threshold counts an engine computes for a quantile (:func:`below_specs`).

Each aggregate is a plain record; the query (:mod:`dpcompose.tables._table_query`) turns it into released
integer vectors with their sensitivities.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose.errors import InvalidParameter
from dpcompose.tables._engine import BelowSpec
from dpcompose.tables._fixed import sum_spec
from dpcompose.tables._schema import Column
from dpcompose.transformations._quantile import QuantileAlpha, quantile_candidates

__all__ = ["Agg", "below_specs", "count", "count_distinct", "mean", "quantile", "sum", "variance"]


@dataclass(frozen=True)
class Agg:
    """An aggregate of a query: ``count``, or ``sum``, ``mean``, ``variance``, ``quantile``,
    ``count_distinct`` of a column (with optional own bounds). Build one with the functions of the same
    names."""

    op: str
    column: str | None = None
    bounds: tuple[Any, Any] | None = None
    alpha: Fraction | None = None  # quantile only
    candidates: tuple[Any, ...] = ()  # quantile only
    alias: str | None = None  # the result column's name, when given (a Polars aggregate's .alias)

    @property
    def name(self) -> str:
        """The output column's name (its alias, else from the operation and the column)."""
        if self.alias is not None:
            return self.alias
        if self.op == "quantile":
            return f"{self.column}_quantile_{float(self.alpha or 0):g}"
        return "count" if self.op == "count" else f"{self.column}_{self.op}"


def count() -> Agg:
    """The number of rows per key (after the filter and the caps).

    Examples:
        >>> count().name
        'count'
    """
    return Agg("count")


def _col_agg(op: str, column: object, bounds: object) -> Agg:
    if not isinstance(column, str) or not column:
        raise InvalidParameter(f"column={column!r} must be a non-empty column name")
    if bounds is not None and (not isinstance(bounds, (tuple, list)) or len(bounds) != 2):
        raise InvalidParameter(f"bounds={bounds!r} must be a pair (lo, hi)")
    return Agg(op, column, None if bounds is None else (bounds[0], bounds[1]))


def sum(column: str, bounds: tuple[Any, Any] | None = None) -> Agg:
    """The sum of a numeric column per key, each value clamped to ``bounds`` (default: the schema's).

    Examples:
        >>> sum("income").name
        'income_sum'
    """
    return _col_agg("sum", column, bounds)


def mean(column: str, bounds: tuple[Any, Any] | None = None) -> Agg:
    """The mean of a numeric column per key: noisy sum / max(noisy count, 1), clipped to the bounds (free
    post-processing: the mean of the clamped values lies within them).

    Examples:
        >>> mean("income", bounds=(0, 1000)).name
        'income_mean'
    """
    return _col_agg("mean", column, bounds)


def variance(column: str, bounds: tuple[Any, Any] | None = None) -> Agg:
    """The sample variance of a numeric column per key, from three noisy vectors (count n, sum S, sum of
    squares Q, each on its exact integer grid): ``max(Q − S²/n, 0) / (n − 1)`` with ``n = max(noisy
    count, 2)``, capped at ``(hi − lo)²/4 · m/(m − 1)`` with ``m = 2⌈n/2⌉`` (the largest sample variance of
    ``n`` values within the bounds, Popoviciu's bound for even ``n``; free post-processing). The budget share
    is split over the three.

    Examples:
        >>> variance("income", bounds=(0, 1000)).name
        'income_variance'
    """
    return _col_agg("variance", column, bounds)


def quantile(
    column: str, alpha: float | Fraction, candidates: Sequence[Any], bounds: tuple[Any, Any] | None = None
) -> Agg:
    """The α-quantile of a numeric column per key, chosen privately among ``candidates``.

    Per key, candidate ``c`` gets the integer score ``|(b − a)·L(c) − a·G(c)|`` with ``α = a/b``,
    ``L(c) = #{x < c}`` and ``G(c) = #{x > c}`` (values read with the column's null/NaN policy and clamped to
    its bounds, compared exactly by the engine), and report-noisy-min with exact discrete Laplace noise
    picks one — as :func:`~dpcompose.measurements.make_private_quantile` does for one vector. One person
    with ``r_k`` rows in key ``k`` moves that key's scores by at most ``r_k·max(a, b − a)`` (L∞); the keys'
    selections are independent, so the costs add over the keys a person touches: ε = 2·R·max(a, b − a) /
    (b·scale) in all, with ``R`` the row cap (Smith 2011; Dwork–Roth 2014 Claim 3.9, re-proved for discrete
    noise in :mod:`dpcompose.measurements._noisy_max`).

    Examples:
        >>> quantile("age", 0.5, [20, 40, 60]).name
        'age_quantile_0.5'
    """
    agg = _col_agg("quantile", column, bounds)
    a = QuantileAlpha(alpha)
    if isinstance(candidates, (str, bytes)) or not isinstance(candidates, (Sequence, np.ndarray)):
        raise InvalidParameter(f"candidates={candidates!r} must be a list of numbers")
    if isinstance(candidates, np.ndarray) and candidates.ndim != 1:
        raise InvalidParameter(f"candidates={candidates!r} must be one-dimensional (a list of numbers)")
    cands = tuple(c.item() if isinstance(c, np.generic) else c for c in candidates)
    if not cands:
        raise InvalidParameter("candidates=[] must not be empty")
    return dataclasses.replace(agg, alpha=a.value, candidates=cands)


def count_distinct(column: str) -> Agg:
    """The number of distinct non-null values of an int, str or bool column per key (after the filter and
    the caps). One person's rows move it by at most their row cap in all keys together, as a count.

    Float columns are refused: engines disagree on whether -0.0 and 0.0, or two NaNs, are one value.

    Examples:
        >>> count_distinct("city").name
        'city_count_distinct'
    """
    return _col_agg("count_distinct", column, None)


def below_specs(agg: Agg, column: Column) -> list[BelowSpec]:
    """The threshold counts of a quantile: ``#{x < c}`` for every candidate, then ``#{x <= c}``."""
    assert agg.column is not None
    spec = sum_spec(agg.column, column, agg.bounds)  # the bounds, fill and kind every aggregate uses
    carrier = int if spec.kind == "int" else float
    cands = quantile_candidates(list(agg.candidates), carrier).tolist()
    out = [BelowSpec(spec.column, spec.kind, spec.lo, spec.hi, spec.fill, c, True) for c in cands]
    out += [BelowSpec(spec.column, spec.kind, spec.lo, spec.hi, spec.fill, c, False) for c in cands]
    return out
