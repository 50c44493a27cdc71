"""Resizing to a known size, and the mean and variance of bounded data of known size.

The fixed-size statistics (:func:`make_mean`, :func:`make_variance`) use the size ``n`` of their input
domain in their sensitivity, so they need data whose size is public; :func:`make_resize` turns data of
unknown size into data of a known size (truncating at random or padding with a constant), so that they
compose with add/remove neighbours.

Floating point: sums of floats are exact (:func:`exact_fraction_sum`, vectorised) and rounded once; every
float result is computed by a fixed sequence of correctly rounded operations (those rounded sums and
IEEE-754 ``-``, ``*``, ``/``) whose rounding error is bounded in the standard model: a correctly rounded
result ``fl(y)`` satisfies ``|fl(y) - y| <= u|y| + η`` with ``u = 2**-53`` and ``η = 2**-1075`` (half the
smallest subnormal), and a sum or difference that is subnormal is exact. The stability maps add twice the
per-dataset error bound (one error per dataset), so they bound the distance between the *computed*
outputs, not only between the exact statistics.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpcompose._validation import check_nonnegative_int
from dpcompose._validation import short_repr as _short
from dpcompose.accounting import exact, float_down, float_up
from dpcompose.core import (
    AbsoluteDistance,
    AtomDomain,
    ChangeOneDistance,
    Domain,
    Metric,
    Node,
    SymmetricDistance,
    Transformation,
    VectorDomain,
)
from dpcompose.core._metrics import check_space
from dpcompose.core._recipe import recorded
from dpcompose.errors import DomainMismatch, InvalidParameter
from dpcompose.measurements._random import RandomSource, caller_or_secure_source
from dpcompose.transformations._clamp import check_dataset_metric, numeric_vector_carrier
from dpcompose.transformations._sum import exact_float_total, int_sum

__all__ = ["make_mean", "make_resize", "make_variance"]

_U = Fraction(1, 2**53)
"""Unit roundoff of float64 (round to nearest)."""
_ETA = Fraction(1, 2**1075)
"""Half the smallest subnormal: the absolute error of rounding a result in the subnormal range."""
_MAX_FLOAT = Fraction(sys.float_info.max)
_INT64_MAX = 2**63 - 1
_MAX_EXACT_COUNT = 2**53  # counts up to here are exact floats, so ``x / n`` is one correct rounding


# ---------------------------------------------------------------------------------------------------------
# Randomness for make_resize
# ---------------------------------------------------------------------------------------------------------


def random_selection(count: int, take: int, source: RandomSource) -> npt.NDArray[np.intp]:
    """``take`` distinct indices of ``range(count)`` in random order; every such sequence is equally likely.

    Exact and vectorised: each item gets an independent uniform 64-bit key (``8·count`` bytes from
    ``source``), and the indices of the ``take`` smallest keys are returned in increasing key order. A draw
    in which the ``take`` smallest keys are not distinct, or the largest of them ties with a key outside,
    is rejected and redrawn (probability below ``count²/2**64``). The accepted event is invariant under
    relabelling the items and the keys are i.i.d., so conditional on acceptance the output is exchangeable:
    uniform over the ``count!/(count - take)!`` ordered selections, with no bias from ties.

    Examples:
        >>> from dpcompose.measurements._random import SeededSource
        >>> sorted(random_selection(5, 5, SeededSource(0)).tolist())
        [0, 1, 2, 3, 4]
        >>> len(set(random_selection(10, 3, SeededSource(1)).tolist()))
        3
    """
    if take <= 0 or count <= 0:
        return np.empty(0, dtype=np.intp)
    while True:
        keys = np.frombuffer(source.random_bytes(8 * count), dtype="<u8")
        if take < count:
            part = np.argpartition(keys, take - 1)[:take]
            chosen = keys[part]
            order = np.argsort(chosen)
            selection = part[order]
        else:
            selection = np.argsort(keys)
        ranked = keys[selection]
        if take > 1 and bool(np.any(ranked[1:] == ranked[:-1])):
            continue  # a tie among the chosen keys: their order would not be uniform
        if take < count and int(np.count_nonzero(keys <= ranked[-1])) != take:
            continue  # a tie at the boundary: the chosen set would not be uniform
        return selection


# ---------------------------------------------------------------------------------------------------------
# Reading numeric data
# ---------------------------------------------------------------------------------------------------------


def _int64_values(data: Any) -> npt.NDArray[np.int64] | None:
    """Integer data as an int64 array, or None when some value does not fit int64 (or is not an int)."""
    if isinstance(data, np.ndarray):
        if data.dtype.kind == "i":
            return data.astype(np.int64, copy=False)
        if data.dtype.kind == "u" and (data.size == 0 or int(data.max()) <= _INT64_MAX):
            return data.astype(np.int64)
        return None
    try:
        return np.asarray(data, dtype=np.int64)
    except (OverflowError, TypeError, ValueError):
        return None


_SQUARES_BLOCK = 1 << 18
"""make_variance squares the deviations this many at a time into one reused buffer (no array of n squares)."""


def _float_values(data: Any) -> npt.NDArray[np.float64]:
    """Float data as a float64 array (exact: a float domain admits only values that are float64s)."""
    return np.asarray(data, dtype=np.float64)


def exact_fraction_sum(values: npt.NDArray[np.float64]) -> Fraction:
    """The exact sum of finite float64 values, as a Fraction, vectorised (no Python loop over records):
    :func:`~dpcompose.transformations._sum.exact_float_total` over the common denominator 2**1127.

    Examples:
        >>> exact_fraction_sum(np.array([0.1, 0.2, -0.3])) == Fraction(0.1) + Fraction(0.2) - Fraction(0.3)
        True
        >>> float(exact_fraction_sum(np.array([1e308, 1e308, -1e308])))  # fsum overflows here
        1e+308
    """
    return Fraction(exact_float_total(values), 1 << 1127)


# ---------------------------------------------------------------------------------------------------------
# make_resize
# ---------------------------------------------------------------------------------------------------------


@recorded
def make_resize(
    input_domain: Domain,
    input_metric: Metric,
    size: int,
    constant: Any,
    *,
    rng: np.random.Generator | RandomSource | None = None,
) -> Transformation[Any, Any, int, int]:
    """Resize a dataset of any length to exactly ``size`` records (a public, known size).

    A dataset with more than ``size`` records keeps a uniformly random subset of ``size`` of them, in
    uniformly random order; one with at most ``size`` records is kept as it is, in its own order, and padded
    at the end with copies of ``constant`` (no randomness is drawn: ``SymmetricDistance`` and
    ``ChangeOneDistance`` compare datasets as multisets, so an order changes no distance, and every
    consumer of a dataset metric must be order-invariant anyway; OpenDP's ``make_resize`` pads the same
    way). The random choice is exact (:func:`random_selection`: independent uniform 64-bit keys, ties
    rejected) and draws from the operating system's secure source; ``rng=`` (a numpy ``Generator`` or a
    ``RandomSource``) makes runs reproducible and is **not private**. Numeric data (int/float atoms) is
    handled as numpy arrays and returned as an ``int64``/``float64`` array (integers beyond int64 as a
    list); other records are returned as a list.

    Stability. Resize is randomised, so its stability is a *coupling* statement: for inputs ``d_in``
    apart there is a joint distribution of the two outputs under which they are always at most ``d_out``
    apart. That suffices for every downstream measurement: for an event S,
    ``P[M(T(x)) ∈ S] = E_(y,y')[P[M(y) ∈ S]] <= E[e^ε P[M(y') ∈ S] + δ] = e^ε P[M(T(x')) ∈ S] + δ``, and
    Rényi/zCDP bounds carry over by the joint convexity of ``exp((α-1)D_α)``.

    * ``SymmetricDistance`` → ``SymmetricDistance`` on the sized output: ``d_out = min(2·d_in, 2·size)``.
      Proof for one added record r (``x' = x + r``, ``|x| = N``): if ``N + 1 <= size`` both are padded and
      ``x'``'s output has r where ``x``'s has one more ``constant``: one record changed, distance 2. If
      ``N >= size``, draw ``x'``'s selection; when it omits r use the same selection for ``x``, when it
      holds r replace r by a uniform unselected record of ``x``. The construction commutes with
      relabelling ``x``'s records, so ``x``'s selection is uniform, and the outputs differ in at most one
      record (distance ≤ 2). If ``N = size``, ``x`` is kept whole and ``x'`` loses one uniform record:
      the same coupling, as multisets. Inputs d_in apart are joined
      by d_in single additions/removals; gluing the couplings along the path and the triangle inequality
      give 2·d_in. Two outputs of ``size`` records are never more than ``2·size`` apart. Tight: padding
      ``x`` and ``x`` plus d_in records gives exactly 2·d_in.
      If the input domain is itself sized, neighbours are ``⌊d_in/2⌋`` changes apart and
      ``d_out = min(2·⌊d_in/2⌋, 2·size)`` (as for ``ChangeOneDistance``).
    * ``ChangeOneDistance`` → ``ChangeOneDistance``: ``d_out = min(d_in, size)``. Equal-size inputs with
      d_in changed records, aligned so that the unchanged records share positions, get the same random
      selection and order: the outputs differ exactly where the selected positions were changed.

    Args:
        input_domain: a ``VectorDomain`` of any records (no size needed).
        input_metric: ``SymmetricDistance()`` or ``ChangeOneDistance()``.
        size: the output size, an integer ≥ 0.
        constant: the padding record, a member of the element domain (e.g. within the bounds).
        rng: a numpy ``Generator`` or ``RandomSource`` for reproducible runs only: NOT private. Default
            (``None``): the operating system's secure source.

    Returns:
        A transformation onto ``VectorDomain(element_domain, size=size)`` with the same metric.

    Raises:
        DomainMismatch: the domain/metric pair is not a dataset with ``SymmetricDistance`` or
            ``ChangeOneDistance``.
        InvalidParameter: ``size`` is not a non-negative integer, ``constant`` is not a member of the
            element domain, ``rng`` is not a generator or random source.

    Source: OpenDP ``make_resize`` (same construction); coupling proofs of privacy: Barthe, Gaboardi,
    Grégoire, Hsu, Strub 2016 ("Proving differential privacy via probabilistic couplings", LICS).

    Examples:
        >>> import dpcompose as dp
        >>> ages = dp.VectorDomain(dp.AtomDomain(int, bounds=(0, 120)))
        >>> r = dp.t.make_resize(ages, dp.SymmetricDistance(), size=4, constant=40)
        >>> sorted(r([30, 50]).tolist())
        [30, 40, 40, 50]
        >>> len(r([1, 2, 3, 4, 5, 6])), r.map(1)
        (4, 2)
        >>> r.output_domain
        VectorDomain(AtomDomain(int, bounds=(0, 120)), size=4)
    """
    check_space(input_domain, input_metric)
    check_dataset_metric(input_metric)
    assert isinstance(input_domain, VectorDomain)
    n = check_nonnegative_int(size, "size")
    element = input_domain.element_domain
    try:
        is_member = bool(element.member(constant))
    except Exception:  # a membership test that fails on an odd object: not a member
        is_member = False
    if not is_member:
        raise InvalidParameter(
            f"constant={_short(constant)} must be a member of the element domain {element!r}"
        )
    source = caller_or_secure_source(rng)
    carrier = element.carrier if isinstance(element, AtomDomain) else None
    if carrier is int and -_INT64_MAX - 1 <= int(constant) <= _INT64_MAX:
        numeric: str | None = "int"
    elif carrier is float:
        numeric = "float"
    else:
        numeric = None

    def run(data: Any) -> Any:
        values: npt.NDArray[Any] | None = None
        if numeric == "int":
            values = _int64_values(data)
        elif numeric == "float":
            values = _float_values(data)
        if values is not None:
            if len(values) <= n:  # kept whole, padded: nothing random to draw
                pad = np.full(n - len(values), constant, dtype=values.dtype)
                return np.concatenate([values, pad])
            return values[random_selection(len(values), n, source)]
        items = data.tolist() if isinstance(data, np.ndarray) else list(data)
        if len(items) <= n:
            return items + [constant] * (n - len(items))
        return [items[i] for i in random_selection(len(items), n, source).tolist()]

    change_one = isinstance(input_metric, ChangeOneDistance)
    sized_input = input_domain.size is not None

    def stability(d_in: int) -> int:
        if change_one:
            return min(d_in, n)
        if sized_input:
            return min(2 * (d_in // 2), 2 * n)
        return min(2 * d_in, 2 * n)

    return Transformation(
        input_domain,
        VectorDomain(element, size=n),
        input_metric,
        ChangeOneDistance() if change_one else SymmetricDistance(),
        run,
        stability,
        node=Node(
            "resize",
            params=(("size", str(n)), ("constant", _short(constant))),
            source="random truncation/padding, coupling proof (OpenDP make_resize)",
        ),
    )


# ---------------------------------------------------------------------------------------------------------
# make_mean and make_variance
# ---------------------------------------------------------------------------------------------------------


def _sized_bounded(
    input_domain: Domain, input_metric: Metric, who: str
) -> tuple[type, Fraction, Fraction, int]:
    """(carrier, lo, hi, n) of a sized, bounded numeric vector domain; refuse anything else, pointing to
    the transformation that makes the data fit."""
    check_space(input_domain, input_metric)
    check_dataset_metric(input_metric)
    carrier = numeric_vector_carrier(input_domain)
    assert isinstance(input_domain, VectorDomain)
    element = input_domain.element_domain
    assert isinstance(element, AtomDomain)
    if element.bounds is None:
        raise DomainMismatch(
            f"input_domain={input_domain!r} has no bounds: {who} needs bounded records, chain make_clamp "
            "first"
        )
    if input_domain.size is None:
        raise DomainMismatch(
            f"input_domain={input_domain!r} has no size: {who} needs a known number of records, chain "
            "make_resize first"
        )
    if element.nan:
        raise DomainMismatch(f"input_domain={input_domain!r} admits NaN: {who} needs NaN-free records")
    n = input_domain.size
    if n == 0:
        raise DomainMismatch(f"input_domain={input_domain!r} has size 0: {who} needs at least one record")
    if n > _MAX_EXACT_COUNT:
        raise DomainMismatch(
            f"input_domain={input_domain!r} is too large: {who} supports up to 2**53 records"
        )
    try:
        lo, hi = exact(element.bounds[0], "lo"), exact(element.bounds[1], "hi")
    except InvalidParameter:
        raise InvalidParameter(
            f"input_domain={input_domain!r}: the bounds exceed the float range; lower the bounds"
        ) from None
    return carrier, lo, hi, n


def _changes(d_in: int, change_one: bool) -> int:
    """The number of changed records between two datasets of the same known size ``d_in`` apart: ``d_in``
    under ``ChangeOneDistance``; under ``SymmetricDistance`` a change is one removal plus one addition, so
    ``⌊d_in/2⌋``."""
    return d_in if change_one else d_in // 2


def mean_error_bound(carrier: type, lo: Fraction, hi: Fraction) -> Fraction:
    """A bound on ``|computed mean - exact mean|`` for one dataset of records in ``[lo, hi]``.

    The sum S is exact (integers: int64 blocks added as Python ints; floats: :func:`exact_fraction_sum`), so
    the result is the mean μ = S/n rounded once, and ``|μ| <= M = max(|lo|, |hi|)``: the error is at most
    ``u·M + η``. (``carrier`` is kept for callers: the bound is the same for both.) Clamping the result to
    ``[lo, hi]`` rounded outward only moves it toward μ.
    """
    del carrier
    return _U * max(abs(lo), abs(hi)) + _ETA


@recorded
def make_mean(input_domain: Domain, input_metric: Metric) -> Transformation[Any, float, int, Fraction]:
    """The mean of bounded records of a known number n, as a ``float`` under ``AbsoluteDistance``.

    Stability. Datasets of the same size n with k records changed: the mean moves by at most
    ``k·(hi - lo)/n`` (each change moves the sum by at most hi − lo, and n is public), and never by more
    than ``hi - lo``. Under ``SymmetricDistance`` on sized data neighbours are one change apart, i.e. at
    symmetric distance 2 (one removal, one addition), so k = ⌊d_in/2⌋; under ``ChangeOneDistance`` k =
    d_in. With the rounding slack ``2·e`` of :func:`mean_error_bound` (the two computed means each lie
    within e of the exact ones):
    ``d_out = min(k, n)·(hi - lo)/n + 2·e`` for k ≥ 1, and 0 for k = 0 (equal multisets give equal outputs:
    the sum is exact, so independent of order).

    The sum is exact (integers in int64 blocks, floats by :func:`exact_fraction_sum`) and the mean S/n is
    rounded once to a float; the result lies in ``[lo, hi]``.

    Args:
        input_domain: ``VectorDomain(AtomDomain(int|float, bounds=(lo, hi)), size=n)`` with n ≥ 1 — use
            ``make_clamp`` for the bounds and ``make_resize`` for the size.
        input_metric: ``SymmetricDistance()`` or ``ChangeOneDistance()``.

    Raises:
        DomainMismatch: the domain has no bounds (chain ``make_clamp``), no size (chain ``make_resize``),
            size 0, admits NaN, or the metric is not a dataset metric.
        InvalidParameter: bounds beyond the float range.

    Source: Dwork–Roth 2014 §3.3 (sensitivity of bounded queries; the mean of n known records is the sum
    over public n); rounding per the standard model (Higham 2002, §2.2) and Casacuberta et al. 2022.

    Examples:
        >>> import dpcompose as dp
        >>> sized = dp.VectorDomain(dp.AtomDomain(int, bounds=(0, 10)), size=4)
        >>> mean = dp.t.make_mean(sized, dp.SymmetricDistance())
        >>> mean([1, 2, 3, 10])
        4.0
        >>> dp.accounting.format_up(mean.map(2))  # (hi - lo)/n = 10/4, plus the rounding slack
        '2.50001'
        >>> dp.t.make_mean(dp.VectorDomain(dp.AtomDomain(int, bounds=(0, 10))), dp.SymmetricDistance())
        Traceback (most recent call last):
        ...
        dpcompose.errors.DomainMismatch: input_domain=... has no size: ... chain make_resize first
    """
    carrier, lo, hi, n = _sized_bounded(input_domain, input_metric, "make_mean")
    assert isinstance(input_domain, VectorDomain)
    assert isinstance(input_domain.element_domain, AtomDomain)
    bounds_text = repr(input_domain.element_domain.bounds)
    big = max(abs(lo), abs(hi))
    if float_up(big) == math.inf:
        raise InvalidParameter(f"input_domain={input_domain!r}: the bounds exceed the float range")
    lo_f, hi_f = float_down(lo), float_up(hi)
    slack = 2 * mean_error_bound(carrier, lo, hi)
    change_one = isinstance(input_metric, ChangeOneDistance)
    if carrier is float:

        def run(data: Any) -> float:
            mean = float(exact_fraction_sum(_float_values(data)) / n)  # one correct rounding of S/n
            return min(max(mean, lo_f), hi_f)

    else:
        int64_ok = big <= _INT64_MAX
        bound = min(math.floor(big), _INT64_MAX)
        int_total: Callable[[Any], int] = int_sum(bound, -bound, bound)  # exact, chosen from the bounds

        def run(data: Any) -> float:
            values = _int64_values(data) if int64_ok else None
            total = int_total(values) if values is not None else sum(int(v) for v in data)
            return min(max(total / n, lo_f), hi_f)  # int / int: one correct rounding

    width = hi - lo

    def stability(d_in: int) -> Fraction:
        k = min(_changes(d_in, change_one), n)
        return Fraction(0) if k == 0 else k * width / n + slack

    return Transformation(
        input_domain,
        AtomDomain(float),
        input_metric,
        AbsoluteDistance(),
        run,
        stability,
        node=Node(
            "mean",
            params=(("bounds", bounds_text), ("size", str(n))),
            source="Dwork–Roth 2014 §3.3; rounding slack per the standard model",
        ),
    )


def variance_error_bound(carrier: type, lo: Fraction, hi: Fraction, n: int, ddof: int) -> Fraction:
    """A bound on ``|computed variance - exact variance|`` for one dataset of n records in ``[lo, hi]``.

    Integers: S = Σx and Q = Σx² are exact, ``V = (nQ - S²)/(n(n - ddof))`` is rounded once: error ≤
    ``u·V_max + η``.

    Floats (two passes): m = the computed mean (error ``e_m`` of :func:`mean_error_bound`), ``d_i =
    fl(x_i - m) = (x_i - m)(1 + ε_i)`` (a subnormal difference is exact), ``q_i = fl(d_i²) = d_i²(1 + ε'_i)
    + η_i``, and ``V̂ = fl(Σq/k)`` with k = n − ddof and Σq summed exactly (:func:`exact_fraction_sum`),
    clamped to ``[0, V_max]``. With ``D = Σ(x_i - m)² = SSD + n(μ - m)²`` (so ``SSD <= D <= D_max =
    SSD_max + n·e_m²``) and ``γ = (1 + u)³ - 1``: ``|Σq - D| <= γ·D_max + nη`` and ``|Σq| <= A = (1 + u)³·
    D_max + nη``, so ``|V̂ - SSD/k| <= (γ·D_max + nη + n·e_m²)/k + u·A/k + η``.
    """
    width = hi - lo
    k = n - ddof
    ssd_max = Fraction((n * n) // 4, n) * width * width
    if carrier is int:
        return _U * ssd_max / k + _ETA
    e_m = mean_error_bound(carrier, lo, hi)
    d_max = ssd_max + n * e_m * e_m
    gamma = (1 + _U) ** 3 - 1
    a = (1 + _U) ** 3 * d_max + n * _ETA
    return (gamma * d_max + n * _ETA + n * e_m * e_m) / k + _U * a / k + _ETA


@recorded
def make_variance(
    input_domain: Domain, input_metric: Metric, ddof: int = 1
) -> Transformation[Any, float, int, Fraction]:
    """The variance ``Σ(x_i - x̄)²/(n - ddof)`` of bounded records of a known number n, as a ``float``.

    Stability (proof). Let SSD(x) = Σ(x_i − x̄)² and change one record a → b, the other n − 1 having sum
    S and mean m = S/(n − 1) ∈ [lo, hi]. Since SSD(x) = Σx_i² − (Σx_i)²/n,
    ``ΔSSD = (b² − a²) − (b − a)(2S + a + b)/n = (b − a)·(n − 1)/n·((a − m) + (b − m))``.
    For a, b, m in [lo, hi] with w = hi − lo: if a <= b, ``(b − a)(a + b − 2m)`` lies between
    ``-((hi − a)² − (hi − b)²) >= -w²`` and ``(b − lo)² − (a − lo)² <= w²``, so
    ``|ΔSSD| <= (n − 1)/n·w²``, attained by a = lo, b = hi with the others at lo. Dividing by n − ddof, one
    change moves the variance by at most ``(n − 1)·w²/(n(n − ddof))``. Also 0 ≤ SSD ≤ ⌊n²/4⌋·w²/n
    (SSD is a convex quadratic, so its maximum over the box [lo, hi]^n is at a vertex; j records at hi and
    n − j at lo give j(n − j)w²/n), so no two datasets' variances differ by more than
    ``V_max = ⌊n²/4⌋·w²/(n(n − ddof))``. For k changes (k = d_in under ``ChangeOneDistance``, ⌊d_in/2⌋
    under ``SymmetricDistance`` on sized data, where one change is symmetric distance 2):
    ``d_out = min(k·(n − 1)/n, ⌊n²/4⌋/n)·w²/(n − ddof) + 2·e`` for k ≥ 1 (0 for k = 0), with e the
    rounding bound of :func:`variance_error_bound`. This is the known-n bound of D'Orazio, Honaker, King
    (2015) and OpenDP's ``make_variance``, ``(n − 1)/n·w²/(n − ddof)``, with the range cap added.

    Integers are computed exactly (``(nΣx² − (Σx)²)/(n(n − ddof))`` in integers, rounded once); floats
    by two vectorised passes (the exactly summed mean, then the exact sum of the rounded squared
    deviations, divided with one rounding).

    Args:
        input_domain: ``VectorDomain(AtomDomain(int|float, bounds=(lo, hi)), size=n)`` with n > ddof —
            use ``make_clamp`` for the bounds and ``make_resize`` for the size.
        input_metric: ``SymmetricDistance()`` or ``ChangeOneDistance()``.
        ddof: delta degrees of freedom, 0 ≤ ddof < n (1: the sample variance; 0: the population variance).

    Raises:
        DomainMismatch: the domain has no bounds (chain ``make_clamp``), no size (chain ``make_resize``),
            admits NaN, or the metric is not a dataset metric.
        InvalidParameter: ``ddof`` is not an integer in [0, n); bounds too wide for the float range.

    Source: D'Orazio, Honaker, King 2015 ("Differential Privacy for Social Science Inference"), the known-n
    variance sensitivity (derived above); Dwork–Roth 2014 §3.3; rounding per the standard model (Higham
    2002, §2.2).

    Examples:
        >>> import dpcompose as dp
        >>> sized = dp.VectorDomain(dp.AtomDomain(int, bounds=(0, 4)), size=4)
        >>> var = dp.t.make_variance(sized, dp.ChangeOneDistance())
        >>> var([0, 0, 4, 4])
        5.333333333333333
        >>> dp.accounting.format_up(var.map(1))  # (n - 1)/n · 4² / (n - 1) = 4, plus the rounding slack
        '4.00001'
        >>> dp.t.make_variance(dp.VectorDomain(dp.AtomDomain(float), size=4), dp.ChangeOneDistance())
        Traceback (most recent call last):
        ...
        dpcompose.errors.DomainMismatch: input_domain=... has no bounds: ... chain make_clamp first
    """
    carrier, lo, hi, n = _sized_bounded(input_domain, input_metric, "make_variance")
    assert isinstance(input_domain, VectorDomain)
    assert isinstance(input_domain.element_domain, AtomDomain)
    bounds_text = repr(input_domain.element_domain.bounds)
    q = check_nonnegative_int(ddof, "ddof")
    if q >= n:
        raise InvalidParameter(f"ddof={ddof!r} must be below the number of records n={n}")
    width = hi - lo
    k = n - q
    v_max = Fraction((n * n) // 4, n) * width * width / k
    big = max(abs(lo), abs(hi))
    v_max_f = float_up(v_max)
    if v_max_f == math.inf or float_up(big) == math.inf:
        raise InvalidParameter(
            f"input_domain={input_domain!r}: the variance of records in these bounds can exceed the float "
            "range; lower the bounds"
        )
    change_one = isinstance(input_metric, ChangeOneDistance)
    slack = 2 * variance_error_bound(carrier, lo, hi, n, q)
    if carrier is float:
        lo_f, hi_f = float_down(lo), float_up(hi)
        w_f = Fraction(float_up(Fraction(hi_f) - Fraction(lo_f)))
        if 2 * n * w_f * w_f > _MAX_FLOAT:
            raise InvalidParameter(
                f"input_domain={input_domain!r}: {n} records in these bounds can have sums of squares beyond "
                "the float range; lower the bounds"
            )

        def run(data: Any) -> float:
            values = _float_values(data)
            mean = min(max(float(exact_fraction_sum(values) / n), lo_f), hi_f)
            total = 0  # Σ fl(fl(x - mean)²) exactly, in units of 2**-1127, a block at a time
            block = np.empty(min(values.size, _SQUARES_BLOCK), dtype=np.float64)
            with np.errstate(all="ignore"):  # underflow of tiny squares is within the bound
                for start in range(0, values.size, _SQUARES_BLOCK):
                    part = values[start : start + _SQUARES_BLOCK]
                    squares = block[: part.size]
                    np.subtract(part, mean, out=squares)
                    squares *= squares
                    total += exact_float_total(squares)
            return min(max(float(Fraction(total, 1 << 1127) / k), 0.0), v_max_f)  # one rounding

    else:
        int64_ok = big <= _INT64_MAX
        squares_ok = big * big <= _INT64_MAX
        bound = min(math.floor(big), _INT64_MAX)
        int_total: Callable[[Any], int] = int_sum(bound, -bound, bound)
        square_total: Callable[[Any], int] = (
            int_sum(bound * bound, 0, bound * bound) if squares_ok else int_total
        )

        def run(data: Any) -> float:
            values = _int64_values(data) if int64_ok else None
            if values is not None:
                total = int_total(values)
                squares = square_total(values * values) if squares_ok else sum(v * v for v in values.tolist())
            else:
                ints = [int(v) for v in data]
                total, squares = sum(ints), sum(v * v for v in ints)
            numerator = n * squares - total * total  # n·SSD, exactly
            return min(max(numerator / (n * k), 0.0), v_max_f)  # int / int: one correct rounding

    def stability(d_in: int) -> Fraction:
        c = _changes(d_in, change_one)
        if c == 0:
            return Fraction(0)
        return min(Fraction(c * (n - 1), n), Fraction((n * n) // 4, n)) * width * width / k + slack

    return Transformation(
        input_domain,
        AtomDomain(float),
        input_metric,
        AbsoluteDistance(),
        run,
        stability,
        node=Node(
            "variance",
            params=(
                ("bounds", bounds_text),
                ("size", str(n)),
                ("ddof", str(q)),
            ),
            source="D'Orazio–Honaker–King 2015 (known-n variance); rounding slack per the standard model",
        ),
    )
