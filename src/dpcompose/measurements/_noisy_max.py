"""Selection: report noisy max and noisy top-k over a vector of scores, with exact discrete noise.

The scores are turned into integers first — integer scores as they are, float scores by rounding each to
the grid ``2**k·Z`` that ``make_laplace`` uses (:mod:`dpcompose.measurements._discrete`) — then exact
discrete Laplace noise (:func:`~dpcompose.measurements._sampling.discrete_laplace_array`) is added in grid
units and the index of the largest noisy score is released, the lowest index winning ties. Every step is
integer arithmetic on exact values, so the released index is a function of the exact noisy integers and
the privacy map below is exact (no floating point touches the noise or the comparison).

Why the map holds for discrete noise (the continuous proof of Dwork–Roth 2014, Claim 3.9, redone on the
integers). Let ``s`` and ``s'`` be integer score vectors with ``|sⱼ - s'ⱼ| <= Δ`` and fix the noise ``Z₋ᵢ``
of every other candidate. With lowest-index tie-breaking, candidate ``i`` wins exactly when
``sᵢ + Zᵢ >= T``, where ``T = max(max_{j<i}(sⱼ + Zⱼ) + 1, max_{j>i}(sⱼ + Zⱼ))`` is an integer, i.e. when
``Zᵢ >= c = T - sᵢ``. Moving from ``s`` to ``s'`` changes ``T`` by at most ``Δ`` and ``sᵢ`` by at most
``Δ``, so ``c' <= c + 2Δ``. The discrete Laplace law ``p(z) ∝ exp(-|z|/t)`` has
``p(z + m) >= e^{-m/t}·p(z)`` for ``m >= 0`` (``|z + m| <= |z| + m``), hence
``P[Z >= c + m] >= e^{-m/t}·P[Z >= c]``, and ``P'[i | Z₋ᵢ] >= e^{-2Δ/t}·P[i | Z₋ᵢ]``; averaging over
``Z₋ᵢ`` (independent of ``Zᵢ``) and swapping the roles gives ``ε = 2Δ/t``. If the scores are
*monotonic* (``s <= s'`` in every coordinate, or ``>=``), then ``T`` and ``sᵢ`` move in the same
direction, ``c' - c`` lies in ``[-Δ, Δ]``, and ``ε = Δ/t``. (For ``Δ`` not an integer, the integer
differences are at most ``⌊Δ⌋ <= Δ``.)

Float scores: rounding ``r(x) = ⌊x/g + 1/2⌋`` is non-decreasing (monotonic scores stay monotonic) and
moves two values ``D·g`` apart to integers at most ``⌈D⌉`` apart
(:func:`~dpcompose.measurements._discrete.grid_sensitivity`), so the map uses ``Δ = ⌈d_in/g⌉`` grid units
with noise ``t = scale/g ∈ [2**30, 2**31)``. Scores are first clamped to ``±2**60·g`` (integers: to
``±2**60``); clamping is non-decreasing and 1-Lipschitz in every coordinate, so neither the L∞ distance
nor monotonicity grows, and every grid index fits int64.

Examples:
    >>> import dpcompose as dp
    >>> scores = dp.VectorDomain(dp.AtomDomain(int), size=3)
    >>> m = dp.m.make_report_noisy_max(scores, dp.LInfDistance(), scale=2.0)
    >>> m.map(1)
    Fraction(1, 1)
    >>> m([10, 500, 20])
    1
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpcompose._validation import check_finite_positive, check_positive_int, check_str
from dpcompose.accounting import exact, format_up
from dpcompose.core import AtomDomain, Domain, Measurement, Metric, Node, PureDP, VectorDomain
from dpcompose.core._metrics import LInfDistance, check_space
from dpcompose.core._recipe import recorded
from dpcompose.errors import DomainMismatch, InvalidParameter
from dpcompose.measurements._discrete import (
    DISCRETE_LAPLACE_MAX_SCALE,
    Grid,
    check_grid_scale,
    grid_points,
    grid_sensitivity,
    monotone_in_scale,
    saturate_ints,
)
from dpcompose.measurements._random import RandomSource, caller_source
from dpcompose.measurements._sampling import discrete_laplace_array

__all__ = ["Scores", "make_noisy_top_k", "make_report_noisy_max", "noisy_argmax", "show_param"]

IntArray = npt.NDArray[np.int64]

_BITS = 30
"""Float scores use the grid ``2**(⌊log₂ scale⌋ - 30)``: noise ``t ∈ [2**30, 2**31)`` grid units."""

_SAFE_NOISE = 1 << 62
"""Grid indices are within ``±(2**60 + 1)``; noise below ``2**62`` in magnitude keeps sums in int64."""

_SOURCE = "Dwork–Roth 2014 Claim 3.9 (report noisy max), proof redone for discrete Laplace noise"


def show_param(value: object) -> str:
    """A parameter for a node label: a Fraction as its decimal (rounded up), anything else as its repr."""
    return format_up(value) if isinstance(value, Fraction) else repr(value)


class Scores:
    """How a score vector becomes integer grid indices, and how much that costs in grid units."""

    def __init__(self, input_domain: Domain, input_metric: Metric, scale: object, optimize: object) -> None:
        check_space(input_domain, input_metric)
        if not isinstance(input_metric, LInfDistance):
            raise DomainMismatch(
                f"input_metric={input_metric!r} must be LInfDistance() (or LInfDistance(monotonic=True)): "
                "report noisy max needs a bound on how far each score can move"
            )
        assert isinstance(input_domain, VectorDomain)
        element = input_domain.element_domain
        if not (isinstance(element, AtomDomain) and element.carrier in (int, float)):
            raise DomainMismatch(
                f"input_domain={input_domain!r} must be a VectorDomain of int or float scores"
            )
        if element.nan:
            raise DomainMismatch(
                f"input_domain={input_domain!r} admits NaN scores, which have no order: drop or impute them "
                "first (make_drop_null / make_impute_constant), or build the scores without NaN"
            )
        if input_domain.size is None or input_domain.size < 1:
            raise DomainMismatch(
                f"input_domain={input_domain!r} must have a known size of at least 1 (the number of "
                "candidates, e.g. VectorDomain(AtomDomain(float), size=3))"
            )
        self.size: int = input_domain.size
        self.sign = 1 if check_str(optimize, "optimize", ("max", "min")) == "max" else -1
        self.factor = 1 if input_metric.monotonic else 2
        check_finite_positive(scale, "scale")
        self.scale = exact(scale, "scale")
        self.integer = element.carrier is int
        if self.integer:
            if self.scale > DISCRETE_LAPLACE_MAX_SCALE:
                raise InvalidParameter(
                    f"scale={scale!r} must be at most 2**50 for integer scores: the exact sampler's draws "
                    "must fit int64"
                )
            self.k = 0
            self.units = self.scale
        else:
            check_grid_scale(self.scale, _BITS)
            grid = Grid.for_laplace(self.scale)
            self.k = grid.k
            self.units = grid.units

    def indices(self, data: Any) -> IntArray:
        """The grid indices of the (clamped) scores, negated when minimising: int64 within ±(2**60 + 1).

        Every element takes the same vectorised steps, whatever its magnitude.
        """
        if self.integer:
            r = saturate_ints(data, True)
        else:
            x = np.asarray(data, dtype=np.float64)
            bound = math.ldexp(1.0, min(self.k + 60, 1023))
            x = np.clip(x, -bound, bound)
            r = (grid_points(x, self.k) * math.ldexp(1.0, -self.k)).astype(np.int64)
        return r if self.sign > 0 else -r

    def epsilon(self, d_in: Fraction) -> Fraction:
        """ε of one noisy argmax over scores ``d_in`` apart in L∞ (see the module docstring)."""
        if d_in == 0:
            return Fraction(0)
        if self.integer:
            return self.factor * Fraction(d_in) / self.scale

        def at(s: Fraction) -> Fraction:
            grid = Grid.for_laplace(s)
            return self.factor * grid_sensitivity(Fraction(d_in), grid.width, 1, 1, False) / grid.units

        return monotone_in_scale(at, self.scale, _BITS, False)


def noisy_argmax(r: IntArray, units: Fraction, source: RandomSource | None) -> int:
    """The index of the largest ``r[i] + Z[i]`` (exact discrete Laplace ``Z`` of scale ``units``), the
    lowest index on ties. ``|r| <= 2**60 + 1``; noise of ``2**62`` or more (practically never; the branch
    depends on the noise only) is added in exact Python integers."""
    z = discrete_laplace_array(units, r.shape[0], source)
    if bool(((z >= _SAFE_NOISE) | (z <= -_SAFE_NOISE)).any()):
        values = [int(a) + int(b) for a, b in zip(r.tolist(), z.tolist(), strict=True)]
        return max(range(len(values)), key=values.__getitem__)  # max keeps the first maximum
    return int(np.argmax(r + z))


@recorded
def make_report_noisy_max(
    input_domain: Domain,
    input_metric: Metric,
    scale: float | int | Fraction,
    optimize: str = "max",
    *,
    rng: np.random.Generator | RandomSource | None = None,
) -> Measurement[Any, int, Fraction, Fraction]:
    """Report noisy max: the index of the best score after exact discrete Laplace noise.

    Integer scores get discrete Laplace noise of scale ``scale``; float scores are rounded to the grid of
    ``make_laplace`` (width ``g = 2**(⌊log₂ scale⌋ - 30)``) and get noise of ``scale/g`` grid units. The
    index of the largest noisy score (``optimize="max"``) or the smallest (``"min"``) is released; ties
    go to the lowest index. No float arithmetic touches the noise or the comparison.

    Privacy map: ε = 2·d_in/scale for scores ``d_in`` apart in ``LInfDistance()``, and ε = d_in/scale
    for ``LInfDistance(monotonic=True)`` (all scores move in the same direction). For float scores
    ``d_in`` is replaced by the rounded ``⌈d_in/g⌉·g`` (equal whenever ``d_in`` is a multiple of ``g``,
    e.g. any integer for a scale below ``2**30``), and the map reports the least value non-increasing in
    ``scale`` (:func:`~dpcompose.measurements._discrete.monotone_in_scale`). The proof, redone for discrete
    noise and ties, is in the module docstring.

    Args:
        input_domain: ``VectorDomain(AtomDomain(int|float), size=m)``, ``m >= 1`` candidates' scores (no
            NaN).
        input_metric: ``LInfDistance()`` or ``LInfDistance(monotonic=True)``.
        scale: the noise scale > 0 (read as its exact binary value). At most ``2**50`` for int scores;
            within ``[2**-991, 2**1001)`` for float scores.
        optimize: ``"max"`` (default) to select the largest score, ``"min"`` for the smallest.
        rng: a numpy Generator or RandomSource driving the exact sampler reproducibly, for experiments
            only: NOT private. Default: the operating system's secure source.

    Returns:
        A ``PureDP`` measurement returning the selected index (a Python int in ``[0, m)``).

    Raises:
        InvalidParameter: ``scale`` not finite and positive or out of range; ``optimize`` not
            ``"max"``/``"min"``; ``rng`` not a Generator or RandomSource.
        DomainMismatch: the domain is not a sized vector of int/float scores without NaN, or the metric
            is not ``LInfDistance``.

    Source: Dwork–Roth 2014, Claim 3.9 (report noisy max with Laplace noise; ε = Δ/t for monotonic,
    2Δ/t for general scores), the proof redone here for discrete Laplace noise with lowest-index ties.

    Examples:
        >>> import dpcompose as dp
        >>> scores = dp.VectorDomain(dp.AtomDomain(float), size=3)
        >>> m = dp.m.make_report_noisy_max(scores, dp.LInfDistance(monotonic=True), scale=1.0)
        >>> m.map(1)
        Fraction(1, 1)
        >>> m([0.0, 100.0, 3.5])
        1
        >>> dp.m.make_report_noisy_max(scores, dp.LInfDistance(), 1.0, optimize="min")([0.0, 100.0, 30.0])
        0
    """
    plan = Scores(input_domain, input_metric, scale, optimize)
    source = caller_source(rng)

    def run(data: Any) -> int:
        return noisy_argmax(plan.indices(data), plan.units, source)

    def privacy_map(d_in: Fraction) -> Fraction:
        return plan.epsilon(d_in)

    return Measurement(
        input_domain,
        input_metric,
        PureDP(),
        run,
        privacy_map,
        node=Node(
            "report_noisy_max",
            params=(("scale", show_param(scale)), ("optimize", str(optimize))),
            source=_SOURCE,
        ),
    )


@recorded
def make_noisy_top_k(
    input_domain: Domain,
    input_metric: Metric,
    scale: float | int | Fraction,
    k: int,
    optimize: str = "max",
    *,
    rng: np.random.Generator | RandomSource | None = None,
) -> Measurement[Any, tuple[int, ...], Fraction, Fraction]:
    """Noisy top-k by peeling: ``k`` rounds of report noisy max, each with fresh noise, each round
    removing the previous winners; the ``k`` indices are released best first.

    Each round is :func:`make_report_noisy_max` on the scores not yet selected (a sub-vector: its L∞
    distance and monotonicity are those of the whole vector), so the rounds are ``k`` adaptively chosen
    ε₁-DP mechanisms and their sequential composition is ``k·ε₁``-DP.

    Privacy map: ε = k·ε₁ with ε₁ the map of :func:`make_report_noisy_max` at the same scale (2·d_in/scale
    in general, d_in/scale for monotonic scores, rounded as there for float scores). No one-shot
    analysis is used: the tighter one-shot bounds (e.g. Qiao–Su–Zhang 2021) are approximate-DP and are
    not claimed here.

    Args:
        input_domain: ``VectorDomain(AtomDomain(int|float), size=m)`` with ``m >= k`` (no NaN).
        input_metric: ``LInfDistance()`` or ``LInfDistance(monotonic=True)``.
        scale: the noise scale of each round (> 0; limits as in :func:`make_report_noisy_max`).
        k: how many indices to select, ``1 <= k <= m``.
        optimize: ``"max"`` (default) or ``"min"``.
        rng: a numpy Generator or RandomSource for reproducible experiments only: NOT private.

    Returns:
        A ``PureDP`` measurement returning a tuple of ``k`` distinct indices, best first.

    Raises:
        InvalidParameter: ``k`` not a positive integer or above the number of candidates, and the cases of
            :func:`make_report_noisy_max`.
        DomainMismatch: as :func:`make_report_noisy_max`.

    Source: Dwork–Roth 2014, Claim 3.9 (each round) and Theorem 3.16 (composition; adaptive choices
    of the remaining candidates: Dwork–Rothblum–Vadhan 2010); peeling as in Durfee–Rogers 2019.

    Examples:
        >>> import dpcompose as dp
        >>> scores = dp.VectorDomain(dp.AtomDomain(int), size=4)
        >>> m = dp.m.make_noisy_top_k(scores, dp.LInfDistance(), scale=1.0, k=2)
        >>> m.map(1)
        Fraction(4, 1)
        >>> m([1000, 0, 5000, 10])
        (2, 0)
    """
    plan = Scores(input_domain, input_metric, scale, optimize)
    k_ = check_positive_int(k, "k")
    if k_ > plan.size:
        raise InvalidParameter(f"k={k!r} must be at most the number of candidates ({plan.size})")
    source = caller_source(rng)

    def run(data: Any) -> tuple[int, ...]:
        r = plan.indices(data)
        remaining = np.arange(plan.size)
        chosen: list[int] = []
        for _ in range(k_):
            j = noisy_argmax(r[remaining], plan.units, source)
            chosen.append(int(remaining[j]))
            remaining = np.delete(remaining, j)
        return tuple(chosen)

    def privacy_map(d_in: Fraction) -> Fraction:
        return k_ * plan.epsilon(d_in)

    return Measurement(
        input_domain,
        input_metric,
        PureDP(),
        run,
        privacy_map,
        node=Node(
            "noisy_top_k",
            params=(("scale", show_param(scale)), ("k", str(k_)), ("optimize", str(optimize))),
            source="Dwork–Roth 2014 Claim 3.9 + Thm 3.16 (k rounds of peeling)",
            theorem="basic composition",
        ),
    )
