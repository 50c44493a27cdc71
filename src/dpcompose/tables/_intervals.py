"""Certified intervals for the statistics a table query releases, from the noisy integer vectors and their
noise scales alone (post-processing: no data is read).

Each released vector ``v`` (count, sum, sum of squares, distinct count) is an exact integer aggregate plus
discrete noise ``Z``; :func:`component_half_width` gives an integer ``a`` with ``P(|Z| > a) <= β``. A
statistic built from several vectors gets its interval from a **union bound**: its ``c`` components are
each given ``β = α/c``, so with probability at least ``1 − α`` every true aggregate lies in its box
``[v − a, v + a]`` at once, and the statistic's interval is its extreme values over that box (and over
what the clamp allows), rounded outward.

* **mean** ``μ = S/n`` (``c = 2``): over ``n ∈ [ñ − a_n, ñ + a_n] ∩ [1, ∞)`` and ``S ∈ [S̃ − a_S, S̃ + a_S]``,
  ``S/n`` is monotone in each of ``S`` and ``n`` (for a fixed sign of ``S``), so its extremes are at
  corners; then intersected with the clamp ``[lo, hi]`` (a mean of clamped values lies there) and
  widened by half a grid step (the engine sums values rounded to the grid ``2**k``: each is within
  ``2**k/2`` of the clamped value; no widening for int columns on the unit grid, which are exact).
* **variance** ``V = (Q − S²/n)/(n − 1)`` (``c = 3``): for fixed ``n ≥ 2`` it increases with ``Q`` and
  decreases with ``S²``, so the maximum over the box takes ``Q`` at its top and ``S`` nearest 0, the
  minimum ``Q`` at its bottom and ``S`` farthest from 0; what is left is a function of ``n`` alone,
  ``h(n) = (q − s²/n)/(n − 1)``, whose extremes over ``[n₁, n₂]`` lie at the ends or at the roots of
  ``h'``: ``q·n² − 2s²·n + s² = 0``. The squares are summed as ``⌊g²/2**shift⌋``, so the true ``Σg²`` lies
  in ``[2**shift·Q, 2**shift·Q + n·(2**shift − 1)]``; the grid rounding moves the sample standard deviation
  by at most ``2**k·√(n/(n−1))/2 <= 2**k`` (triangle inequality for ``‖x − x̄‖``); and the clamp bounds the
  variance by Popoviciu's inequality, ``V <= (hi − lo)²/4 · m/(m − 1)`` with ``m = 2⌈n/2⌉`` (n rounded up
  to even: :func:`variance_cap`).
* **quantile** (report-noisy-min over ``m`` candidates): with probability ``>= 1 − α`` all ``m`` noises are
  within ``a`` (``β = α/m``), so the chosen candidate's score is within ``2a`` of the least score. In
  records (scores are ``b·|(1 − q)L − qG|`` for ``q = a/b``): ``|(1 − q)·L(c) − q·G(c)| <= s* + 2a/b``
  where ``s*`` is the best candidate's, hence ``L(c) <= q·n + s* + 2a/b`` values lie below the chosen
  ``c`` and ``G(c) <= (1 − q)·n + s* + 2a/b`` above it. A rank statement: where the values lie in between
  the candidates is not something the noisy release can certify.

The float arithmetic is padded outward by a relative ``2**-40`` of the magnitudes involved (far more than
the few roundings each step makes).

Source: the union bound (Boole's inequality); Popoviciu 1935 (variance of a bounded variable); the noise
tails are :mod:`dpcompose.accuracy`'s (discrete Laplace: exact; discrete Gaussian (Canonne–Kamath–Steinke
2020): its exact tail bounded by sums and integrals rounded outward).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from dpcompose.accounting._exact import next_down
from dpcompose.accuracy import discrete_gaussian_scale_to_accuracy, discrete_laplace_scale_to_accuracy
from dpcompose.errors import InvalidParameter
from dpcompose.tables._engine import SumSpec
from dpcompose.tables._fixed import grid_bound

__all__ = [
    "PAD",
    "check_level",
    "component_half_width",
    "mean_bounds",
    "mean_half_width_at",
    "split_alpha",
    "variance_bounds",
    "variance_cap",
    "variance_half_width_at",
]

Floats = npt.NDArray[np.float64]

PAD = 2.0**-40  # relative outward padding of the float steps


def check_level(alpha: object) -> None:
    """Refuse an interval's ``alpha`` (the probability it may miss) outside (0, 1): InvalidParameter.

    Examples:
        >>> check_level(0.05) is None
        True
    """
    if not isinstance(alpha, float | int) or isinstance(alpha, bool) or not 0 < alpha < 1:
        raise InvalidParameter(f"alpha={alpha!r} must be in (0, 1)")


def split_alpha(alpha: float, parts: int) -> float:
    """``alpha/parts`` rounded down, so that ``parts`` of it sum to at most ``alpha`` (the union bound)."""
    return next_down(alpha / parts) if parts > 1 else alpha


def component_half_width(scale: Fraction, gaussian: bool, alpha: float) -> int:
    """An integer ``a`` with ``P(|Z| > a) <= alpha`` for the noise ``Z`` of one released vector entry.

    The least ``a`` that :mod:`dpcompose.accuracy` certifies for the sampler that runs: discrete Laplace of
    scale ``t`` (:func:`~dpcompose.accuracy.discrete_laplace_scale_to_accuracy`, the exact tail) or
    discrete Gaussian with ``σ² = scale²`` (:func:`~dpcompose.accuracy.discrete_gaussian_scale_to_accuracy`:
    the exact tail ``2·Σ_{z>a} f(z) / Σ_z f(z)``, ``f(z) = e^{−z²/(2σ²)}``, bounded above by explicit
    sums and integrals rounded outward).

    Source: Ghosh–Roughgarden–Sundararajan 2009 (the discrete Laplace tail); Canonne–Kamath–Steinke 2020
    (the discrete Gaussian; its sum/integral tail bounds are proven in :mod:`dpcompose.accuracy`).

    Examples:
        >>> component_half_width(Fraction(2), False, 0.05), component_half_width(Fraction(10), True, 0.05)
        (6, 20)
    """
    if gaussian:
        return discrete_gaussian_scale_to_accuracy(scale, alpha)
    return discrete_laplace_scale_to_accuracy(scale, alpha)


def _exact_grid(spec: SumSpec) -> bool:
    """Whether every clamped value is exactly on the grid (int columns with ``k = 0``)."""
    return spec.kind == "int" and spec.k == 0


def mean_bounds(count: Floats, total: Floats, a_n: int, a_s: int, spec: SumSpec) -> tuple[Floats, Floats]:
    """Per key, the interval for the true mean of the clamped values (keys with at least one row), from the
    noisy count ``count`` and noisy grid sum ``total`` (both whole numbers, as float64) and their half-widths
    at ``α/2`` each: it holds with probability at least ``1 − α`` (module docstring)."""
    n1 = np.maximum(count - a_n, 1.0)
    n2 = np.maximum(count + a_n, 1.0)
    s1, s2 = total - a_s, total + a_s
    with np.errstate(over="ignore", invalid="ignore"):
        top = np.where(s2 >= 0, s2 / n1, s2 / n2)
        bottom = np.where(s1 >= 0, s1 / n2, s1 / n1)
    return _finish_mean(bottom, top, spec)


def _finish_mean(bottom: Floats, top: Floats, spec: SumSpec) -> tuple[Floats, Floats]:
    unit = math.ldexp(1.0, spec.k)
    slack = 0.0 if _exact_grid(spec) else 0.5
    lo, hi = float(spec.lo), float(spec.hi)
    with np.errstate(over="ignore", invalid="ignore"):
        low = bottom * unit - (np.abs(bottom * unit) * PAD + slack * unit)
        high = top * unit + (np.abs(top * unit) * PAD + slack * unit)
    low = np.clip(low, lo, hi)
    high = np.clip(high, lo, hi)
    return np.minimum(low, high), high


def _h(q: Floats, s: Floats, n: Floats) -> tuple[Floats, Floats]:
    """``(q − s²/n)/(n − 1)`` and the magnitude its float error is relative to."""
    with np.errstate(over="ignore", invalid="ignore"):
        sq = s * s / n
        return (q - sq) / (n - 1), (np.abs(q) + sq) / (n - 1)


def _box_extreme(q: Floats, s: Floats, n1: Floats, n2: Floats, upper: bool) -> Floats:
    """The max (``upper``) or min of ``h(n) = (q − s²/n)/(n − 1)`` over ``n ∈ [n1, n2]`` (``n1 >= 2``),
    padded outward: at the ends and at the roots of ``q·n² − 2s²·n + s² = 0`` inside."""
    s2 = s * s
    candidates = [n1, n2]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        disc = s2 * s2 - q * s2
        root = np.sqrt(np.maximum(disc, 0.0))
        for sign in (1.0, -1.0):
            r = (s2 + sign * root) / q
            ok = (disc >= 0) & (q != 0) & np.isfinite(r)
            candidates.append(np.where(ok, np.clip(r, n1, n2), n1))
    values = []
    for n in candidates:
        v, mag = _h(q, s, n)
        values.append(v + mag * PAD if upper else v - mag * PAD)
    stacked = np.stack(values)
    out: Floats = stacked.max(axis=0) if upper else stacked.min(axis=0)
    return out


def variance_cap(spec: SumSpec, n: Floats) -> Floats:
    """Per ``n >= 2``, the largest sample variance of ``n`` values in ``[lo, hi]``, for every whole count
    of at least ``n``: ``(hi − lo)²/4 · m/(m − 1)`` with ``m = 2⌈n/2⌉``, padded up by the relative ``PAD``
    (more than the few roundings of its float steps; ``n/2``, the ceiling, ``2·`` and ``m − 1`` are exact).

    Proof. The sample variance is a convex function of the values, so its maximum over the box
    ``[lo, hi]ⁿ`` is at a vertex: ``j`` values at ``hi`` and ``n − j`` at ``lo``, with sample variance
    ``(hi − lo)²·j(n − j)/(n(n − 1))``. ``j(n − j)`` is largest at ``j = ⌊n/2⌋``: ``n²/4`` for even ``n``,
    giving ``(hi − lo)²/4 · n/(n − 1)`` (Popoviciu's bound on the population variance, ``(hi − lo)²/4``,
    times ``n/(n − 1)``), and ``(n² − 1)/4`` for odd ``n``, giving ``(hi − lo)²/4 · (n + 1)/n``. Both are
    ``(hi − lo)²/4 · m/(m − 1)`` with ``m = 2⌈n/2⌉`` (n rounded up to even). That falls (weakly) as ``n``
    rises, so for a real ``n`` it bounds every whole count of at least ``n`` (``⌈n⌉`` has the same ``m``),
    and its float value falls with it (each step correctly rounded and monotone).
    ``tests/tables/test_variance_clip.py`` checks the maximum by enumerating every vertex for n <= 10.

    Source: Popoviciu 1935 (variance of a bounded variable); the odd case by the vertex count above.
    """
    spread = float(spec.hi) - float(spec.lo)
    even = 2.0 * np.ceil(np.asarray(n, dtype=np.float64) / 2.0)
    cap: Floats = spread * spread / 4 * (even / (even - 1)) * (1 + PAD)
    return cap


def _variance_box(
    n1: Floats, n2: Floats, s1: Floats, s2: Floats, q1: Floats, q2: Floats, spec: SumSpec, grid: bool = True
) -> tuple[Floats, Floats]:
    """The interval of the clamped values' sample variance over a box of (n, S, Q) in grid units
    (``n1 >= 2``), with the grid's and the clamp's corrections (module docstring)."""
    near = np.clip(0.0, s1, s2)
    far = np.maximum(np.abs(s1), np.abs(s2))
    top = _box_extreme(q2, near, n1, n2, upper=True)
    bottom = _box_extreme(q1, far, n1, n2, upper=False)
    unit = math.ldexp(1.0, spec.k)
    with np.errstate(over="ignore", invalid="ignore"):
        top = top * unit * unit
        bottom = bottom * unit * unit
        if grid and not _exact_grid(
            spec
        ):  # the sd of the clamped values is within 2**k of the grid values' sd
            top = (np.sqrt(np.maximum(top, 0.0)) * (1 + PAD) + unit) ** 2 * (1 + PAD)
            root = np.sqrt(np.maximum(bottom, 0.0)) * (1 - PAD) - unit
            bottom = np.where(root > 0, root * root * (1 - PAD), 0.0)
        cap = variance_cap(spec, n1)  # at the least n
    high = np.clip(top, 0.0, cap)
    low = np.clip(bottom, 0.0, cap)
    return np.minimum(low, high), high


def _square_box(q: Floats, a_q: int, n2: Floats, shift: int) -> tuple[Floats, Floats]:
    """The true ``Σg²`` from the noisy ``Σ⌊g²/2**shift⌋`` and its half-width, in grid units squared."""
    f = float(2**shift)
    return f * (q - a_q), f * (q + a_q) + n2 * (f - 1)


def variance_bounds(
    count: Floats,
    total: Floats,
    squares: Floats,
    a_n: int,
    a_s: int,
    a_q: int,
    spec: SumSpec,
    square: SumSpec,
) -> tuple[Floats, Floats]:
    """Per key, the interval for the true sample variance of the clamped values (keys with at least two
    rows), from the noisy count, grid sum and shifted sum of squares and their half-widths at ``α/3``
    each: it holds with probability at least ``1 − α`` (module docstring). A key whose count may be below
    two gets ``[0, (hi − lo)²/2]`` or tighter."""
    n1 = np.maximum(count - a_n, 2.0)
    n2 = np.maximum(count + a_n, 2.0)
    q1, q2 = _square_box(squares, a_q, n2, square.shift)
    return _variance_box(n1, n2, total - a_s, total + a_s, q1, q2, spec)


def _grid(spec: SumSpec) -> tuple[float, float]:
    """The clamp bounds in grid units (the grid values lie between them)."""
    scale = math.ldexp(1.0, -spec.k)
    bound = float(grid_bound(spec))
    return max(-bound, float(spec.lo) * scale - 1), min(bound, float(spec.hi) * scale + 1)


def mean_half_width_at(n: int, a_n: int, a_s: int, spec: SumSpec) -> float:
    """Half the width, at most, of the interval :func:`mean_bounds` gives for a key of ``n`` rows, on the
    event that both noises are within their half-widths (probability ``>= 1 − α``), whatever the values.

    On that event the released box lies in the box of twice the half-widths around the truth, so the
    interval lies in that box's interval; its width is piecewise linear in the true sum, largest at the
    ends of the sum's range or at a kink (where a corner's sign or the clamp switches), which are all
    tried (with and without the grid's half step), plus a dense grid of sums.
    """
    g_lo, g_hi = _grid(spec)
    n1, n2 = max(n - 2 * a_n, 1), n + 2 * a_n
    scale = math.ldexp(1.0, -spec.k)
    kinks = [-2.0 * a_s, 2.0 * a_s]
    for half in (-0.5, 0.0, 0.5):  # where a corner meets the clamp, with or without the grid's half step
        for m in (n1, n2):
            kinks += [
                (float(spec.hi) * scale + half) * m - 2 * a_s,
                (float(spec.lo) * scale + half) * m + 2 * a_s,
            ]
    sums = np.concatenate([np.linspace(n * g_lo, n * g_hi, 1025), np.clip(kinks, n * g_lo, n * g_hi)])
    s1, s2 = sums - 2 * a_s, sums + 2 * a_s
    top = np.where(s2 >= 0, s2 / n1, s2 / n2)
    bottom = np.where(s1 >= 0, s1 / n2, s1 / n1)
    low, high = _finish_mean(bottom, top, spec)
    magnitude = max(abs(float(spec.lo)), abs(float(spec.hi)))
    return float((high - low).max()) / 2 + 4 * PAD * magnitude


def variance_half_width_at(
    n: int, a_n: int, a_s: int, a_q: int, spec: SumSpec, square: SumSpec, cells: int = 4096
) -> float:
    """Half the width, at most, of the interval :func:`variance_bounds` gives for a key of ``n`` rows, on
    the event that the three noises are within their half-widths (probability ``>= 1 − α``), whatever the
    values.

    On that event the released box lies in the box of twice the half-widths around the true (n, S, Q).
    The true sums are covered by ``cells`` cells of ``[n·lo, n·hi]``; per cell, the interval over the
    box around the whole cell is taken, as a function of the true Q (between ``S²/n`` and
    ``(lo + hi)·S − n·lo·hi``). Its two ends both increase with Q, the upper one convex and the lower one
    concave before the clamp ``[0, cap]``, so the width rises, then is convex or constant, then falls: its
    maximum is at the ends of Q's range or where an end meets the clamp (the lower one reaches 0 at
    ``Q = dq + s_far²/n₁``, the upper one reaches ``cap`` at ``Q = min over n' of cap·(n'−1) + s_near²/n' −
    dq'``, a convex minimum at ``n' = s_near/√cap``), the four points tried. The grid's correction of
    the standard deviation adds at most ``4·2**k·√cap + 2·4**k`` to the width.
    """
    spread = float(spec.hi) - float(spec.lo)
    if n < 2:
        return spread * spread / 4
    g_lo, g_hi = _grid(spec)
    edges = np.linspace(n * g_lo, n * g_hi, cells + 1)
    sa, sb = edges[:-1], edges[1:]
    q_min = np.where((sa <= 0) & (sb >= 0), 0.0, np.minimum(sa * sa, sb * sb) / n)
    q_max = np.maximum((g_lo + g_hi) * sa, (g_lo + g_hi) * sb) - n * g_lo * g_hi
    q_max = np.maximum(q_max, q_min)
    s1, s2 = sa - 2 * a_s, sb + 2 * a_s
    near = np.clip(0.0, s1, s2)
    far = np.maximum(np.abs(s1), np.abs(s2))
    f = float(2**square.shift)
    n1v, n2v = float(max(n - 2 * a_n, 2)), float(max(n + 2 * a_n, 2))
    n1, n2 = np.full_like(sa, n1v), np.full_like(sa, n2v)
    down = n * (f - 1) + 2 * f * a_q  # the released Σ⌊g²/2**shift⌋ box lies in [Q − down, Q + up]
    up = 2 * f * a_q + n2v * (f - 1)
    unit = math.ldexp(1.0, spec.k)
    cap = spread * spread / 4 * (n1v / (n1v - 1)) / (unit * unit)  # in grid units squared
    q_zero = down + far * far / n1v
    best = np.clip(near / math.sqrt(cap), n1v, n2v) if cap > 0 else n1
    q_cap = np.minimum.reduce([cap * (m - 1) + near * near / m for m in (best, n1, n2)]) - up
    widest = np.zeros_like(sa)
    for q in (q_min, q_max, np.clip(q_zero, q_min, q_max), np.clip(q_cap, q_min, q_max)):
        low, high = _variance_box(n1, n2, s1, s2, q * (1 - PAD) - down, q * (1 + PAD) + up, spec, grid=False)
        widest = np.maximum(widest, high - low)
    full_cap = spread * spread / 4 * (n1v / (n1v - 1))
    extra = 0.0 if _exact_grid(spec) else 4 * unit * math.sqrt(full_cap) + 2 * unit * unit
    return float(widest.max()) / 2 * (1 + PAD) + extra / 2 + 4 * PAD * full_cap
