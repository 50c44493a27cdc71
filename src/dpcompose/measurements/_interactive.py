"""Interactive primitives: the sparse vector technique (AboveThreshold) and a Laplace query-answerer.

Both take *queries* that are :class:`~dpcompose.Transformation` objects from the dataset to a number,
checked to have sensitivity at most 1 (``query.map(1) <= 1``) before they run; a plain function is refused
because its sensitivity cannot be checked.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose._validation import check_finite, check_finite_positive, check_positive_int
from dpcompose.accounting import exact, format_up
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
from dpcompose.core._metrics import check_space, refuse_identifier_metric, sized_symmetric
from dpcompose.core._recipe import recorded
from dpcompose.errors import BudgetExceeded, DomainMismatch, InvalidParameter
from dpcompose.measurements._discrete import Grid, grid_sensitivity
from dpcompose.measurements._laplace import grid_laplace
from dpcompose.measurements._random import GeneratorSource, RandomSource
from dpcompose.measurements._sampling import sample_discrete_laplace

__all__ = ["make_interactive_laplace", "make_sparse_vector"]


def _check_dataset_input(input_domain: Domain, input_metric: Metric) -> None:
    refuse_identifier_metric(input_metric)
    if not isinstance(input_metric, (SymmetricDistance, ChangeOneDistance)):
        raise DomainMismatch(
            f"input_metric={input_metric!r} must be SymmetricDistance() or ChangeOneDistance(): the privacy "
            "map at d_in = k uses group privacy along a path of k neighbouring datasets"
        )
    check_space(input_domain, input_metric)


def _check_query(
    query: object, input_domain: Domain, input_metric: Metric
) -> Transformation[Any, Any, Any, Any]:
    """Validate a query before anything runs: a 1-sensitive Transformation to a number.

    The privacy maps need ``|q(x) - q(x')| <= m`` for datasets ``m`` apart. ``q.map(1) <= 1`` gives it along
    a path of ``m`` neighbours, which stays in the domain for ``ChangeOneDistance`` and for
    ``SymmetricDistance`` on datasets of any size. On a *fixed-size* domain under ``SymmetricDistance``,
    neighbours are 2 apart (one record changed), ``map(1)`` is refused (it would speak only of identical
    datasets: :func:`~dpcompose.core._metrics.refuse_odd_sized`), and ``q.map(2) <= 2`` is required instead
    (every two members are an even ``m`` apart: a path of ``m/2`` changes then gives ``<= m``).
    """
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
    d = 2 if sized_symmetric(input_domain, input_metric) else 1
    sensitivity = query.map(d)
    if sensitivity > d:
        raise InvalidParameter(
            f"query {query.node.label()} has sensitivity {format_up(sensitivity)} at d_in={d}; "
            f"at most {d} is allowed"
        )
    return query


def _query_value(query: Transformation[Any, Any, Any, Any], value: object) -> int | float:
    """The query's output as an exact Python int or float; a non-number or ±inf/NaN breaks the query's
    own contract (a finite number within its sensitivity) and is refused before any noise is drawn."""
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.float64, np.float32, np.float16)):
        v = float(value)  # exact for these widths
        if not math.isfinite(v):
            raise InvalidParameter(f"query {query.node.label()} returned {value!r}: not a finite number")
        return v
    raise DomainMismatch(f"query {query.node.label()} returned {value!r}, not an int or float")


def grid_index(value: int | float, k: int) -> int:
    """``r(v) = ⌊v/2**k + 1/2⌋`` exactly from the exact value: round half up, the definition of
    :func:`~dpcompose.measurements._discrete.grid_points` (floats) and of the integer release of
    ``grid_laplace`` (ints, which are never rounded to a float first: an int is shifted, exactly, at
    every ``k``; the sparse vector compares Python integers, so no saturation is needed here).

    Examples:
        >>> [grid_index(v, 0) for v in (0.49, 0.5, -0.5, 2.75, 7)]
        [0, 1, 0, 3, 7]
        >>> grid_index(3, -2), grid_index(0.3, -2)  # 0.3·4 = 1.2 rounds to 1
        (12, 1)
        >>> grid_index(2**60 + 129, 1), grid_index(-3, 1)  # exact at any magnitude; -1.5 rounds up
        (576460752303423553, -1)
    """
    if isinstance(value, int):
        if k <= 0:
            return value << -k  # on the grid already: no rounding
        return ((value >> (k - 1)) + 1) >> 1  # ⌊(⌊v/2**(k-1)⌋ + 1)/2⌋ = ⌊v/2**k + 1/2⌋
    return math.floor(Fraction(value) / Fraction(2) ** k + Fraction(1, 2))


def _resolve_source(rng: np.random.Generator | RandomSource | None) -> RandomSource | None:
    """``None`` (the secure default: the operating system's generator) or the caller's bits (NOT private)."""
    if rng is None:
        return None
    if isinstance(rng, np.random.Generator):
        return GeneratorSource(rng)
    if callable(getattr(rng, "randbits", None)) and callable(getattr(rng, "random_bytes", None)):
        return rng
    raise InvalidParameter(
        f"rng={rng!r} must be a numpy Generator, a RandomSource (e.g. SeededSource) or None"
    )


@dataclass(frozen=True)
class SvtPlan:
    """The sparse vector technique in grid units (everything exact).

    Attributes:
        k: the grid width is ``g = 2**k``.
        threshold: ``⌈T/g⌉``: for an integer ``s``, ``s >= T/g`` iff ``s >= ⌈T/g⌉``.
        threshold_noise: the discrete Laplace scale ``t₁ = b/g`` of the threshold noise ρ.
        query_noise: the discrete Laplace scale ``t₂ = 2·c·t₁`` of each query's noise ν.
        max_positive: c.
    """

    k: int
    threshold: int
    threshold_noise: Fraction
    query_noise: Fraction
    max_positive: int

    @classmethod
    def build(cls, threshold: Fraction, scale: Fraction, max_positive: int) -> SvtPlan:
        """The grid of :meth:`Grid.for_laplace` for the threshold scale b (``t₁ ∈ [2**30, 2**31)``)."""
        grid = Grid.for_laplace(scale)
        return cls(
            k=grid.k,
            threshold=math.ceil(threshold / grid.width),
            threshold_noise=grid.units,
            query_noise=2 * max_positive * grid.units,
            max_positive=max_positive,
        )

    def epsilon(self, d_in: int) -> Fraction:
        """ε at dataset distance ``d_in``: ``Δ/t₁ + c·(2Δ/t₂)`` with ``Δ = ⌈d_in/g⌉`` grid units."""
        return _svt_epsilon(Fraction(d_in), self)


@functools.lru_cache(maxsize=1024)
def _svt_epsilon(d_in: Fraction, plan: SvtPlan) -> Fraction:
    delta = grid_sensitivity(d_in, Fraction(2) ** plan.k, 1, 1, False)  # ⌈d_in/g⌉ (0 at d_in = 0)
    return delta / plan.threshold_noise + plan.max_positive * (2 * delta / plan.query_noise)


class SparseVector(Queryable[Transformation[Any, Any, Any, Any], bool]):
    """The sparse vector queryable of :class:`SvtPlan`: one noisy threshold, a noisy comparison per query."""

    def __init__(
        self,
        data: Any,
        input_domain: Domain,
        input_metric: Metric,
        plan: SvtPlan,
        source: RandomSource | None,
    ) -> None:
        super().__init__(name="sparse vector")
        self._data, self._domain, self._metric = data, input_domain, input_metric
        self._plan, self._source = plan, source
        # T + ρ in grid units: an exact integer, drawn once
        self._noisy_threshold = plan.threshold + sample_discrete_laplace(plan.threshold_noise, source)
        self._positives = 0

    def _status(self) -> str:
        return f"{self._positives} of {self._plan.max_positive} positive answers used"

    def _answer(self, query: Transformation[Any, Any, Any, Any]) -> bool:
        q = _check_query(query, self._domain, self._metric)
        if self._positives >= self._plan.max_positive:
            raise BudgetExceeded(f"sparse vector halted after {self._plan.max_positive} positive answers")
        index = grid_index(_query_value(q, q.function(self._data)), self._plan.k)
        noise = sample_discrete_laplace(self._plan.query_noise, self._source)
        above = index + noise >= self._noisy_threshold  # integers: exact
        if above:
            self._positives += 1
        return above


@recorded
def make_sparse_vector(
    input_domain: Domain,
    input_metric: Metric,
    threshold: float,
    scale: float,
    max_positive: int,
    *,
    rng: np.random.Generator | RandomSource | None = None,
) -> Measurement[Any, Any, int, Fraction]:
    """The sparse vector technique (AboveThreshold with up to ``max_positive`` positive answers).

    The queryable draws a noisy threshold once; for each query q (a 1-sensitive Transformation) it answers
    ``True`` if q(x) plus fresh noise reaches the noisy threshold, else ``False``, and halts after
    c = ``max_positive`` positive answers. This is Algorithm 1 of Lyu–Su–Li with threshold noise of scale
    b = ``scale`` (ε₁ = Δ/b) and query noise of scale 2·c·b (ε₂ = Δ/b). Any number of negative answers is
    free. Several published variants are *not* private (no query noise, reused noise, released noisy
    values); Lyu–Su–Li §3 catalogues them.

    **Secure by default, in integers.** Query values and the threshold are put on the grid ``g·Z``,
    ``g = 2**k`` with ``k = ⌊log₂ b⌋ - 30`` (the grid of :func:`grid_laplace`), and every step is exact
    integer arithmetic in grid units: the query's index ``u = ⌊q(x)/g + 1/2⌋`` (round half up; an integer
    query with ``g <= 1`` is already on the grid), the threshold ``T_g = ⌈T/g⌉``, the noises
    ρ ~ DLap(t₁), νᵢ ~ DLap(t₂) with the exact rational scales ``t₁ = b/g ∈ [2**30, 2**31)`` and
    ``t₂ = 2·c·t₁`` drawn from the operating system's secure source, and the answer is the integer comparison
    ``u + νᵢ >= T_g + ρ`` (equivalently ``g·(u + νᵢ - ρ) >= T`` exactly). No float touches the noise,
    so the answers carry nothing from the low bits of a float computation (Mironov 2012).

    **Privacy map:** ``ε = 2·Δ·g/b`` with ``Δ = ⌈d_in/g⌉``. For ``b < 2**31`` (so ``g <= 1``) every integer
    d_in is a multiple of g and ε = 2·d_in/b exactly; for coarser grids ε >= 2·d_in/b. Proof:

    1. *Integer sensitivity.* For datasets ``m = d_in`` apart, a 1-sensitive query moves by at most m (a
       path of m neighbours; see the query check for fixed-size domains). Round half up puts ``r(v)`` in
       ``(v/g - 1/2, v/g + 1/2]``, so ``|u - u'|`` is an integer ``< m/g + 1``, i.e. at most ``Δ = ⌈m/g⌉``
       (:func:`~dpcompose.measurements._discrete.grid_sensitivity`).
    2. *Lyu–Su–Li's proof carries over to Z.* The answers are exactly those of their Algorithm 1 run on
       the integer queries ``u`` with integer sensitivity Δ, threshold ``T_g`` and discrete Laplace noise
       (pmf ∝ ``exp(-|z|/t)``). Their proof of Theorem 2 fixes an output vector and writes its
       probability as a sum (their integral) over the threshold noise z; it uses only (a)
       ``P[ρ = z] <= e^(Δ/t₁)·P[ρ = z + Δ]``, true for the discrete pmf since ``|z + Δ| - |z| <= Δ``;
       (b) for a ``False`` answer, ``u + ν < T_g + z`` implies ``u' + ν < T_g + z + Δ`` (free); (c) for a
       ``True`` answer, ``P[u + ν >= T_g + z] <= P[ν + 2Δ >= T_g + z + Δ - u'] <= e^(2Δ/t₂)·
       P[u' + ν >= T_g + z + Δ]``, since ``w ↦ w - 2Δ`` is a bijection of Z changing the pmf by at most
       ``e^(2Δ/t₂)``; (d) re-indexing the sum by ``z ↦ z + Δ``, a bijection of Z because Δ is an integer
       (their change of variable). With at most c ``True`` answers: ``ε = Δ/t₁ + c·2Δ/t₂ = 2Δ/t₁``. An
       adaptive analyst is covered as in their proof: each output prefix fixes the queries asked.

    **Seeded path (``rng=``), NOT private:** the same exact integer algorithm, driven by the caller's
    numpy Generator (through :class:`~dpcompose.measurements._random.GeneratorSource`) or by a
    ``RandomSource`` (e.g. ``SeededSource``, or ``RecordingSource``/``BytesSource`` to record and replay
    a run). The answers are then reproducible, and anyone who knows the seed can recompute the noise;
    for tests and experiments only. The map is the same (the distribution is the same).

    Args:
        input_domain, input_metric: the dataset domain, with ``SymmetricDistance`` or ``ChangeOneDistance``.
        threshold: the public threshold T (finite; read as its exact binary value).
        scale: b > 0, the threshold noise scale (read as its exact binary value).
        max_positive: c >= 1.
        rng: ``None`` (secure, the default) or a seeded Generator/RandomSource (not private).

    Returns:
        An interactive ``PureDP`` measurement whose queryable answers ``True``/``False``.

    Raises:
        InvalidParameter: a parameter is not finite / positive, or ``rng`` is not a generator or source.
        DomainMismatch: the input is not a dataset domain under a dataset metric.

    Source: Lyu, Su, Li 2017, "Understanding the Sparse Vector Technique for Differential Privacy"
    (PVLDB 10(6)), Algorithm 1 and Theorem 2 (carried to discrete noise on integers as above);
    Dwork–Roth 2014 Thm 3.23 (AboveThreshold); sampler: Canonne–Kamath–Steinke 2020 Alg. 2.

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
        >>> huge = dp.m.make_sparse_vector(ints, dp.SymmetricDistance(), threshold=0.0, scale=2.0**32,
        ...                                max_positive=1)
        >>> huge.map(1) * 2**32  # grid width 4: one record can move a count by one grid step (4 units)
        Fraction(8, 1)
    """
    _check_dataset_input(input_domain, input_metric)
    t = exact(check_finite(threshold, "threshold"), "threshold")
    check_finite_positive(scale, "scale")
    c = check_positive_int(max_positive, "max_positive")
    plan = SvtPlan.build(t, exact(scale, "scale"), c)
    source = _resolve_source(rng)

    def run(data: Any) -> SparseVector:
        return SparseVector(data, input_domain, input_metric, plan, source)

    return Measurement(
        input_domain,
        input_metric,
        PureDP(),
        run,
        plan.epsilon,
        interactive=True,
        node=Node(
            "sparse_vector",
            params=(
                ("threshold", repr(threshold)),
                ("scale", repr(scale)),
                ("max_positive", str(c)),
                ("grid", f"2**{plan.k}"),
            ),
            source="Lyu–Su–Li 2017 Alg. 1 / Thm 2 (discrete Laplace on a grid)",
            interaction="interactive",
        ),
    )


class LaplaceAnswerer(Queryable[Transformation[Any, Any, Any, Any], float]):
    """The interactive Laplace queryable: each query's value released with its own noise, up to
    ``max_queries``."""

    def __init__(
        self,
        data: Any,
        input_domain: Domain,
        input_metric: Metric,
        release_int: Callable[[int], float],
        release_float: Callable[[float], float],
        max_queries: int,
    ) -> None:
        super().__init__(name="interactive laplace")
        self._data, self._domain, self._metric = data, input_domain, input_metric
        self._release_int, self._release_float = release_int, release_float
        self._max_queries = max_queries
        self._used = 0

    def _status(self) -> str:
        return f"{self._used} of {self._max_queries} queries used"

    def _answer(self, query: Transformation[Any, Any, Any, Any]) -> float:
        q = _check_query(query, self._domain, self._metric)
        if self._used >= self._max_queries:
            raise BudgetExceeded(f"all {self._max_queries} queries are used; nothing was run")
        self._used += 1  # charged before the query touches the data: whatever happens next is paid for
        value = _query_value(q, q.function(self._data))
        if isinstance(value, int):
            return self._release_int(value)  # exact: no int -> float rounding before the grid
        return self._release_float(value)


@recorded
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

    Each answer is released as a float by :func:`~dpcompose.measurements._laplace.grid_laplace` (the float
    path of ``make_laplace``: exact discrete noise on a grid, from the secure source by default; ``rng=``
    takes its seeded, not private, path), for integer values too, so that an answer's type never depends
    on the value. An integer value goes to ``grid_laplace`` on ``AtomDomain(int)``, which puts it on the
    grid exactly; converting it to a float
    first would round integers above 2**53, which can move two values 1 apart by 2.

    Privacy map: ε = max_queries · d_in · ε₁, where ε₁ = ``grid_laplace(...).map(1)`` is the loss of one
    answer for values at most 1 apart (1/scale whenever 1 is a multiple of its grid width; the same for
    integer and float values) — adaptive composition adds the answers, and group privacy scales by d_in.

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
    # both kinds of value are released as floats on the secure grid (grid_laplace), so that an answer's
    # type never depends on the value (make_laplace would release an int for an int)
    for_ints = grid_laplace(AtomDomain(int), AbsoluteDistance(), scale=scale, rng=rng)
    for_floats = grid_laplace(AtomDomain(float), AbsoluteDistance(), scale=scale, rng=rng)
    per_answer = max(for_ints.map(Fraction(1)), for_floats.map(Fraction(1)))

    def run(data: Any) -> LaplaceAnswerer:
        return LaplaceAnswerer(data, input_domain, input_metric, for_ints.function, for_floats.function, k)

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
