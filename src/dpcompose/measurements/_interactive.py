"""Interactive primitives: the sparse vector technique (AboveThreshold) and a Laplace query-answerer.

Both take *queries* that are :class:`~dpcompose.Transformation` objects from the dataset to a number,
checked to have sensitivity at most 1 (``query.map(1) <= 1``) before they run; a plain function is refused
because its sensitivity cannot be checked.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose._validation import check_finite, check_finite_positive, check_positive_int
from dpcompose.accounting import exact
from dpcompose.core import (
    AbsoluteDistance,
    AtomDomain,
    ChangeOneDistance,
    Domain,
    Measurement,
    Metric,
    Node,
    PureDP,
    Queryable,
    SymmetricDistance,
    Transformation,
)
from dpcompose.errors import BudgetExceeded, DomainMismatch, InvalidParameter
from dpcompose.measurements import _noise
from dpcompose.measurements._laplace import make_laplace

__all__ = ["make_interactive_laplace", "make_sparse_vector"]


def _check_dataset_input(input_domain: Domain, input_metric: Metric) -> None:
    if not isinstance(input_metric, (SymmetricDistance, ChangeOneDistance)):
        raise DomainMismatch(
            f"input_metric={input_metric!r} must be SymmetricDistance() or ChangeOneDistance(): the privacy "
            "map at d_in = k uses group privacy along a path of k neighbouring datasets"
        )
    input_metric.check_domain(input_domain)


def _check_query(
    query: object, input_domain: Domain, input_metric: Metric
) -> Transformation[Any, Any, Any, Any]:
    """Validate a query before anything runs: a 1-sensitive Transformation to a number."""
    if not isinstance(query, Transformation):
        raise InvalidParameter(
            f"query {query!r} must be a Transformation (its sensitivity is checked); wrap a function with a "
            "stability map, e.g. make_count or make_clamp >> make_sum"
        )
    if query.input_domain != input_domain or query.input_metric != input_metric:
        raise DomainMismatch(
            f"query {query.node.label()} takes {query.input_domain!r} under {query.input_metric!r}, but the "
            f"mechanism holds {input_domain!r} under {input_metric!r}"
        )
    out = query.output_domain
    if not (
        isinstance(out, AtomDomain)
        and out.carrier in (int, float)
        and isinstance(query.output_metric, AbsoluteDistance)
    ):
        raise DomainMismatch(f"query {query.node.label()} must output a number under AbsoluteDistance()")
    sensitivity = query.map(1)
    if sensitivity > 1:
        raise InvalidParameter(
            f"query {query.node.label()} has sensitivity {float(sensitivity):.6g} at d_in=1; "
            "at most 1 is allowed"
        )
    return query


class _SparseVector(Queryable[Transformation[Any, Any, Any, Any], bool]):
    def __init__(
        self,
        data: Any,
        input_domain: Domain,
        input_metric: Metric,
        threshold: float,
        scale: float,
        max_positive: int,
        rng: np.random.Generator,
    ) -> None:
        super().__init__(name="sparse vector")
        self._data, self._domain, self._metric = data, input_domain, input_metric
        self._scale, self._max_positive, self._rng = scale, max_positive, rng
        self._noisy_threshold = threshold + float(_noise.laplace((), scale, rng))
        self._positives = 0

    def _answer(self, query: Transformation[Any, Any, Any, Any]) -> bool:
        q = _check_query(query, self._domain, self._metric)
        if self._positives >= self._max_positive:
            raise BudgetExceeded(f"sparse vector halted after {self._max_positive} positive answers")
        value = float(q.function(self._data))
        noise = float(_noise.laplace((), 2 * self._max_positive * self._scale, self._rng))
        above = value + noise >= self._noisy_threshold
        if above:
            self._positives += 1
        return above


def make_sparse_vector(
    input_domain: Domain,
    input_metric: Metric,
    threshold: float,
    scale: float,
    max_positive: int,
    *,
    rng: np.random.Generator | None = None,
) -> Measurement[Any, Any, int, Fraction]:
    """The sparse vector technique (AboveThreshold with up to ``max_positive`` positive answers).

    The queryable draws a noisy threshold T̂ = T + Lap(b) once; for each query q (a 1-sensitive
    Transformation) it answers ``True`` if q(x) + Lap(2·c·b) ≥ T̂, else ``False``, and halts after
    c = ``max_positive`` positive answers. With b = ``scale`` this is Algorithm 1 of Lyu–Su–Li with
    ε₁ = Δ/b and ε₂ = Δ/b, so it is (2/b)-DP for neighbouring datasets; at d_in = k, group privacy gives
    ε = 2k/b. Any number of negative answers is free.

    Several published variants are *not* private (they add no noise to the queries, reuse query noise,
    or report noisy values); Lyu–Su–Li §3 catalogues them. This is their Algorithm 1, with its proof (their
    Theorem 2).

    Args:
        input_domain, input_metric: the dataset domain, with ``SymmetricDistance`` or ``ChangeOneDistance``.
        threshold: the public threshold T (finite).
        scale: b > 0, the threshold noise scale.
        max_positive: c ≥ 1.
        rng: a numpy Generator for reproducible experiments only (not private).

    Source: Lyu, Su, Li 2017, "Understanding the Sparse Vector Technique for Differential Privacy"
    (PVLDB 10(6)), Algorithm 1 and Theorem 2; Dwork–Roth 2014 Thm 2.2 (group privacy).

    Examples:
        >>> import dpcompose as dp
        >>> ints = dp.VectorDomain(dp.AtomDomain(int))
        >>> svt = dp.m.make_sparse_vector(ints, dp.SymmetricDistance(), threshold=100.0, scale=2.0,
        ...                               max_positive=1)
        >>> svt.map(1)
        Fraction(1, 1)
        >>> q = svt(list(range(10)))
        >>> q(dp.t.make_count(ints, dp.SymmetricDistance()))  # 10 is far below 100
        False
    """
    _check_dataset_input(input_domain, input_metric)
    t = float(check_finite(threshold, "threshold"))
    check_finite_positive(scale, "scale")
    c = check_positive_int(max_positive, "max_positive")
    scale_q = exact(scale, "scale")

    def run(data: Any) -> _SparseVector:
        return _SparseVector(data, input_domain, input_metric, t, float(scale), c, _noise.resolve_rng(rng))

    return Measurement(
        input_domain,
        input_metric,
        PureDP(),
        run,
        lambda d_in: 2 * Fraction(d_in) / scale_q,
        interactive=True,
        node=Node(
            "sparse_vector",
            params=(("threshold", repr(threshold)), ("scale", repr(scale)), ("max_positive", str(c))),
            source="Lyu–Su–Li 2017 Alg. 1 / Thm 2",
            interaction="interactive",
        ),
    )


class _LaplaceAnswerer(Queryable[Transformation[Any, Any, Any, Any], float]):
    def __init__(
        self,
        data: Any,
        input_domain: Domain,
        input_metric: Metric,
        release: Callable[[float], float],
        max_queries: int,
    ) -> None:
        super().__init__(name="interactive laplace")
        self._data, self._domain, self._metric = data, input_domain, input_metric
        self._release, self._max_queries = release, max_queries
        self._used = 0

    def _answer(self, query: Transformation[Any, Any, Any, Any]) -> float:
        q = _check_query(query, self._domain, self._metric)
        if self._used >= self._max_queries:
            raise BudgetExceeded(f"all {self._max_queries} queries are used; nothing was run")
        self._used += 1  # charged before release
        return self._release(float(q.function(self._data)))


def make_interactive_laplace(
    input_domain: Domain,
    input_metric: Metric,
    scale: float,
    max_queries: int,
    *,
    rng: np.random.Generator | None = None,
) -> Measurement[Any, Any, int, Fraction]:
    """An interactive Laplace answerer: up to ``max_queries`` adaptively chosen 1-sensitive queries, each
    answered with Laplace(``scale``) noise.

    Each answer is released by :func:`make_laplace` on the query's value (exact discrete noise from the
    secure source by default; ``rng=`` takes its seeded, not private, path).

    Privacy map: ε = max_queries · d_in · ε₁, where ε₁ = ``make_laplace(...).map(1)`` is the loss of one
    answer for values at most 1 apart (1/scale whenever 1 is a multiple of its grid width) — adaptive
    composition adds the answers, and group privacy scales by d_in.

    Source: Dwork–McSherry–Nissim–Smith 2006 (Laplace); Dwork–Rothblum–Vadhan 2010 (adaptive basic
    composition); Dwork–Roth 2014 Thm 2.2 (group privacy).

    Examples:
        >>> import dpcompose as dp
        >>> ints = dp.VectorDomain(dp.AtomDomain(int))
        >>> lap = dp.m.make_interactive_laplace(ints, dp.SymmetricDistance(), scale=10.0, max_queries=3)
        >>> lap.map(1)
        Fraction(3, 10)
    """
    _check_dataset_input(input_domain, input_metric)
    check_finite_positive(scale, "scale")
    k = check_positive_int(max_queries, "max_queries")
    inner = make_laplace(AtomDomain(float), AbsoluteDistance(), scale=scale, rng=rng)
    per_answer = inner.map(Fraction(1))

    def run(data: Any) -> _LaplaceAnswerer:
        return _LaplaceAnswerer(data, input_domain, input_metric, inner.function, k)

    return Measurement(
        input_domain,
        input_metric,
        PureDP(),
        run,
        lambda d_in: k * Fraction(d_in) * per_answer,
        interactive=True,
        node=Node(
            "interactive_laplace",
            params=(("scale", repr(scale)), ("max_queries", str(k))),
            source="Dwork–McSherry–Nissim–Smith 2006; Dwork–Roth 2014 Thm 2.2",
            interaction="interactive",
        ),
    )
