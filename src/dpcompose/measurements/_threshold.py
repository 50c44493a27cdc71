"""Partition selection for unknown keys: noisy counts per key, released only above a threshold.

``make_count_by`` turns a dataset into a mapping key → count whose *keys* are data. Adding noise to the
counts is not enough to release it: a key held by one person alone would appear in the output exactly when
that person is in the data. The mechanisms here add exact discrete noise to every count and release only
the keys whose noisy count reaches a threshold; a key that exists in one neighbour only is then released
with a small probability, which is the δ of an (ε, δ) guarantee.

The analysis (proven in :func:`make_laplace_threshold`) splits the keys of two neighbouring count mappings
into keys counted in both, whose noisy counts are an ordinary noise mechanism (the ε part), and keys counted
in one of them only, which the other never releases (the δ part: the probability that such a key passes the
threshold). The noise is exact (:mod:`dpcompose.measurements._sampling`), so integer counts stay integers and
the probabilities in the map are those of the noise actually drawn.

Examples:
    >>> import dpcompose as dp
    >>> by = dp.t.make_count_by(dp.VectorDomain(dp.AtomDomain(str)), dp.SymmetricDistance())
    >>> m = by >> dp.m.make_laplace_threshold(by.output_domain, by.output_metric, scale=1.0, threshold=20)
    >>> eps, delta = m.map(1)
    >>> eps, delta < 1e-8
    (Fraction(1, 1), True)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from fractions import Fraction
from operator import itemgetter
from typing import Any

import numpy as np

from dpcompose._validation import check_finite, check_finite_positive, check_positive_int, check_str
from dpcompose.accounting import decimal, exact, format_up, zcdp_to_approx
from dpcompose.accounting._exact import exp_down, exp_up, float_up, sqrt_down
from dpcompose.accounting._gaussian import log_ndtr_up
from dpcompose.core import ApproxDP, AtomDomain, Domain, MapDomain, Measurement, Metric, Node
from dpcompose.core._metrics import L01InfDistance, check_space
from dpcompose.core._recipe import recorded
from dpcompose.errors import DomainMismatch, InvalidParameter
from dpcompose.measurements._discrete import (
    DISCRETE_GAUSSIAN_MAX_SIGMA2,
    DISCRETE_LAPLACE_MAX_SCALE,
    add_integer_noise,
    check_generator,
    rng_source,
)
from dpcompose.measurements._sampling import discrete_gaussian_array, discrete_laplace_array

__all__ = [
    "gaussian_threshold_delta",
    "make_gaussian_threshold",
    "make_laplace_threshold",
    "partition_threshold",
]

_KEY_CARRIERS = (int, float, str, bool)
L01Inf = tuple[int, Fraction, Fraction]
"""A distance ``(l0, l1, l∞)`` of :class:`~dpcompose.L01InfDistance` (the map receives it validated)."""
_MAX_THRESHOLD = 1 << 62
"""Thresholds above this are refused: counts are clamped to ``[0, 2**62]`` and noisy counts are int64."""
_COUNT_CAP = 1 << 62
MAX_KEYS_LIMIT = 1 << 20
"""The largest ``max_keys``: a padded release allocates all of its slots (a key, a count, a draw each)."""
_PAD_KEYS: dict[type, Any] = {str: "", int: 0, float: 0.0, bool: False}
"""The key of a dummy entry, per carrier: a plain value, so it takes the same normalisation as a real key."""
_PI_DOWN = Fraction(math.pi)  # math.pi = 3.14159265358979311… < π
_SQRT_2PI_DOWN = Fraction(sqrt_down(2 * _PI_DOWN))  # a rational ≤ √(2π)


# --- the input space --------------------------------------------------------------------------------------


def _check_counts_space(input_domain: Domain, input_metric: Metric, ctor: str) -> type:
    """The key carrier of a count mapping space (``make_count_by``'s output); DomainMismatch otherwise."""
    check_space(input_domain, input_metric)
    if not isinstance(input_metric, L01InfDistance):
        raise DomainMismatch(
            f"input_metric={input_metric!r} must be L01InfDistance() (the output metric of make_count_by)"
        )
    assert isinstance(input_domain, MapDomain)  # L01InfDistance measures MapDomains only (check_space)
    value, key = input_domain.value_domain, input_domain.key_domain
    if not (isinstance(value, AtomDomain) and value.carrier is int):
        raise DomainMismatch(
            f"input_domain={input_domain!r}: {ctor} needs integer counts, MapDomain(..., AtomDomain(int)) "
            "(the output of make_count_by)"
        )
    if not (isinstance(key, AtomDomain) and key.carrier in _KEY_CARRIERS):
        raise DomainMismatch(
            f"input_domain={input_domain!r}: {ctor} needs keys in AtomDomain(int | float | str | bool), so "
            "that the released keys can be put in a data-independent (sorted) order"
        )
    return key.carrier


def _read_threshold(threshold: object) -> int:
    """The least integer ≥ ``threshold`` (noisy counts are integers, so ``c ≥ T ⟺ c ≥ ⌈T⌉``), in
    [2, 2**62]."""
    value = exact(check_finite(threshold, "threshold"), "threshold")
    t = math.ceil(value)
    if t < 2:
        raise InvalidParameter(
            f"threshold={threshold!r} must be above 1: a key held by a single record would pass it at "
            "least half of the time (δ ≥ 1/2)"
        )
    if t > _MAX_THRESHOLD:
        raise InvalidParameter(f"threshold={threshold!r} must be at most 2**62")
    return t


def _read_max_keys(max_keys: object) -> int | None:
    """``max_keys`` as an int in ``[1, 2**20]``, or None (no padding)."""
    if max_keys is None:
        return None
    k = check_positive_int(max_keys, "max_keys")
    if k > MAX_KEYS_LIMIT:
        raise InvalidParameter(
            f"max_keys={max_keys!r} must be at most 2**20: every release allocates and draws noise for "
            "max_keys slots"
        )
    return k


def _max_keys_param(max_keys: int | None) -> list[tuple[str, str]]:
    """The node parameter naming ``max_keys`` (none without it)."""
    return [] if max_keys is None else [("max_keys", str(max_keys))]


def _rng_source(rng: object) -> Any:
    """The caller's generator as a (not private) bit source, or None (the secure default)."""
    check_generator(rng)
    assert rng is None or isinstance(rng, np.random.Generator)
    return rng_source(rng)


def _normal_key(key: Any, carrier: type) -> Any:
    """A key as a plain value of its carrier (so the output depends on the key's value only), or None for
    a float NaN (a NaN key equals nothing; dropping it is a per-key map to "absent", a contraction)."""
    if carrier is str:
        return str.__str__(key)
    if carrier is bool:
        return bool(key)
    if carrier is int:
        return int(key)
    f = float(key)
    return None if f != f else f + 0.0  # -0.0 + 0.0 is 0.0


def _positive_counts(counts: Mapping[Any, Any], carrier: type) -> tuple[list[Any], np.ndarray[Any, Any]]:
    """The keys whose count is positive, sorted, and their counts clamped to ``[1, 2**62]`` (int64).

    Replacing each count ``c`` by ``min(max(c, 0), 2**62)`` and dropping the zeros (a key absent from a
    mapping counts 0 in :class:`~dpcompose.L01InfDistance`) is a per-key 1-Lipschitz map: it never increases
    any of ``l0``, ``l1``, ``l∞`` between two mappings, so the privacy map is unchanged. Keys that are
    distinct in the mapping but equal once normalised (a ``str`` subclass with its own hash beside the
    plain string, say) keep the largest count: max is 1-Lipschitz in each argument, so merging them by it
    does not increase those distances either, and the result does not depend on the mapping's order (found
    by review: the last one sorted was kept, so two equal mappings built in different orders gave
    different outputs).
    """
    merged: dict[Any, int] = {}
    for k, v in counts.items():
        key = _normal_key(k, carrier)
        c = int(v)
        if key is not None and c > 0:
            merged[key] = max(merged.get(key, 0), min(c, _COUNT_CAP))
    pairs = sorted(merged.items(), key=lambda kv: kv[0])
    keys = [k for k, _ in pairs]
    values = np.fromiter((c for _, c in pairs), dtype=np.int64, count=len(pairs))
    return keys, values


Draw = Callable[[int], np.ndarray[Any, np.dtype[np.int64]]]
Release = Callable[[Mapping[Any, Any]], dict[Any, int]]


def _runner(carrier: type, threshold: int, draw: Draw) -> Release:
    def run(counts: Mapping[Any, Any]) -> dict[Any, int]:
        keys, values = _positive_counts(counts, carrier)
        noisy = add_integer_noise(values, draw(len(keys)), True)  # saturated to int64: monotone
        passed = np.flatnonzero(noisy >= threshold)
        return {keys[i]: int(noisy[i]) for i in passed.tolist()}

    return run


def _padded_runner(carrier: type, threshold: int, draw: Draw, max_keys: int) -> Release:
    """The release padded to ``max_keys`` slots: the same steps, as many times, whatever the counts.

    A mapping of ``n ≤ max_keys`` entries is read into exactly ``max_keys`` slots: its entries, then
    ``max_keys − n`` dummy entries (the carrier's zero key with count 0), each taken through the same
    loop body (normalise the key, clamp the count, one dictionary update), so the slot table always holds
    ``max_keys`` entries (fewer only when two entries of the mapping are one key once normalised). Noise
    is drawn for all ``max_keys`` slots in one call, added and compared with the threshold as one
    vector; a slot is released when its noisy count reaches the threshold, it holds a key of the mapping
    (not a dummy, not NaN) and its count is positive. Only then does the work depend on what is released:
    the released keys are sorted and put in a dict. The slot of a dummy or NaN entry is ``(1, i)`` and
    that of a key ``(0, key)``, so no key of the data can collide with a dummy.

    A mapping of more than ``max_keys`` entries is read whole, one slot per entry, as without
    ``max_keys`` (see :func:`make_laplace_threshold` for why no truncation or refusal is sound).

    The output is that of :func:`_runner` in distribution: each positive count gets one independent
    draw, and the dummies' draws are never released (noise is assigned in the mapping's iteration
    order, not sorted: the draws are iid, so the distribution is the same).
    """
    pad = (_PAD_KEYS[carrier], 0)

    def run(counts: Mapping[Any, Any]) -> dict[Any, int]:
        entries = list(counts.items())
        n = len(entries)
        size = max(n, max_keys)
        entries += [pad] * (size - n)
        slots: dict[tuple[int, Any], int] = {}
        for i, (k, v) in enumerate(entries):
            key = _normal_key(k, carrier)
            live = (i < n) & (key is not None)
            slot = (0, key) if live else (1, i)
            slots[slot] = max(slots.get(slot, 0), min(max(int(v), 0), _COUNT_CAP))
        filled = len(slots)
        values = np.zeros(size, dtype=np.int64)
        values[:filled] = np.fromiter(slots.values(), dtype=np.int64, count=filled)
        dummy = np.ones(size, dtype=np.int64)
        dummy[:filled] = np.fromiter((s[0] for s in slots), dtype=np.int64, count=filled)
        noisy = add_integer_noise(values, draw(size), True)  # saturated to int64: monotone
        passed = np.flatnonzero((noisy >= threshold) & (dummy == 0) & (values > 0)).tolist()
        keys = list(slots)
        released = sorted(((keys[i][1], int(noisy[i])) for i in passed), key=itemgetter(0))
        return dict(released)

    return run


def _release(carrier: type, threshold: int, draw: Draw, max_keys: int | None) -> Release:
    """The release function: padded to ``max_keys`` slots when it is given."""
    if max_keys is None:
        return _runner(carrier, threshold, draw)
    return _padded_runner(carrier, threshold, draw, max_keys)


# --- the distance and the tails ---------------------------------------------------------------------------


def _reduce(d_in: L01Inf) -> tuple[int, int, int, int]:
    """``(l0, l1, l∞, m)`` as integers: counts are integers, so every difference is an integer and the
    bounds may be floored; ``l∞ ≤ l1``; ``m = min(l0, l1)`` bounds the number of keys counted (positive)
    in one neighbour only (each such key differs by at least 1). All zero if nothing can differ."""
    l0, l1, li = d_in[0], math.floor(d_in[1]), math.floor(d_in[2])
    li = min(li, l1)
    if l0 == 0 or li == 0:
        return 0, 0, 0, 0
    return l0, l1, li, min(l0, l1)


def _read_positive(value: object, name: str) -> Fraction:
    """``value`` as an exact positive Fraction; InvalidParameter naming ``name`` otherwise (a σ or scale of
    0 would divide by zero, and a negative one would give a tail below the true one)."""
    if isinstance(value, Fraction) and value > 0:  # the mechanisms' maps pass validated Fractions
        return value
    return exact(check_finite_positive(value, name), name)


def laplace_tail_up(scale: Fraction, k: int) -> Fraction:
    """An upper bound on ``P[Z ≥ k]`` for discrete Laplace noise ``P[Z = z] ∝ exp(−|z|/scale)``, k ≥ 1.

    Exactly ``α**k / (1 + α)`` with ``α = exp(−1/scale)``: the mass is ``(1 − α)/(1 + α)·α**|z|`` and
    ``Σ_{z≥k} α**z = α**k/(1 − α)``. Evaluated as ``exp_up(−k/scale) / (1 + exp_down(−1/scale))``
    (numerator rounded up, denominator down).

    Raises:
        InvalidParameter: ``scale`` is not a finite positive number.

    Source: the geometric mechanism's distribution, Ghosh–Roughgarden–Sundararajan 2009 (as in
    Canonne–Kamath–Steinke 2020 Def. 27).
    """
    scale = _read_positive(scale, "scale")
    return Fraction(exp_up(-Fraction(k) / scale)) / (1 + Fraction(exp_down(-1 / scale)))


def gaussian_tail_up(sigma: Fraction, k: int) -> Fraction:
    """An upper bound on ``P[Z ≥ k]`` for the discrete Gaussian ``P[Z = z] ∝ exp(−z²/(2σ²))``, k ≥ 1.

    With ``f(x) = exp(−x²/(2σ²))``, decreasing on ``[0, ∞)``: ``Σ_{z≥k} f(z) ≤ f(k) + ∫_k^∞ f`` and, by
    Poisson summation, ``Σ_{z∈ℤ} f(z) = σ√(2π)·Σ_{n∈ℤ} exp(−2π²σ²n²) ≥ σ√(2π)`` (Canonne–Kamath–Steinke
    2020 §2, the normalising constant). Hence ``P[Z ≥ k] ≤ Φ(−k/σ) + f(k)/(σ√(2π))`` — the continuous
    Gaussian's tail plus one point's density. Evaluated with log Φ rounded up (as
    :func:`~dpcompose.accounting.gaussian_delta`), ``exp`` rounded up and ``σ√(2π)`` rounded down; capped
    at 1.

    Raises:
        InvalidParameter: ``sigma`` is not a finite positive number.
    """
    sigma = _read_positive(sigma, "sigma")
    x_up = float_up(-Fraction(k) / sigma)  # Φ is increasing: a larger argument bounds it from above
    normal_tail = Fraction(exp_up(log_ndtr_up(max(x_up, -1e150))))
    point = Fraction(exp_up(-Fraction(k * k) / (2 * sigma * sigma))) / (sigma * _SQRT_2PI_DOWN)
    return min(Fraction(1), normal_tail + point)


def _threshold_delta(
    tail: Callable[[int], Fraction], threshold: int, reduced: tuple[int, int, int, int], d_in: object
) -> Fraction:
    """``m · P[l∞ + Z ≥ threshold]``: at most ``m`` keys are counted in one neighbour only, each with a
    count ≤ l∞ there; InvalidParameter when the threshold does not exceed l∞ (δ ≥ 1/2 per key)."""
    _, _, li, m = reduced
    if m == 0:
        return Fraction(0)
    if threshold - li < 1:
        raise InvalidParameter(
            f"threshold={threshold} must exceed the l∞ distance {li} of d_in={d_in!r}: a key that only the "
            "differing records hold would pass it at least half of the time (δ ≥ 1/2); raise the threshold "
            "(see dp.m.partition_threshold)"
        )
    return m * tail(threshold - li)


def _refuse_large_delta(delta: Fraction, threshold: int, d_in: object) -> None:
    if delta >= 1:
        raise InvalidParameter(
            f"threshold={threshold}: the δ for d_in={d_in!r} would be {format_up(delta)} ≥ 1, no guarantee "
            "at all; raise the threshold (see dp.m.partition_threshold)"
        )


def gaussian_threshold_delta(
    sigma: float | int | Fraction, threshold: int, d_in: tuple[int, Any, Any]
) -> Fraction:
    """The threshold part ``δ_T`` of :func:`make_gaussian_threshold`'s map at ``d_in = (l0, l1, l∞)``:
    ``min(l0, l1)·P[Z ≥ T − l∞]`` for the discrete Gaussian ``Z`` with ``σ = sigma``, bounded by
    :func:`gaussian_tail_up` (rounded up) — the probability that a key counted in one neighbour only
    passes the threshold ``T``, summed over the at most ``min(l0, l1)`` such keys.

    For a composite release whose keys are selected by a Gaussian-noised count (the table engine's
    ``group_by(..., keys=None, selection="gaussian")``), which composes the zCDP part itself.

    Args:
        sigma: σ > 0 of the count's discrete Gaussian noise.
        threshold: the integer threshold ``T ≥ 2``.
        d_in: an ``(l0, l1, l∞)`` distance (validated here).

    Raises:
        InvalidParameter: ``sigma`` is not a finite positive number, ``T ≤ l∞`` (δ ≥ 1/2 per key) or
            ``δ_T ≥ 1``.

    Source: Korolova et al. 2009; Wilson et al. 2020 (the threshold's δ as a union over the ``l0``
    partitions), with the discrete Gaussian tail of Canonne–Kamath–Steinke 2020 §2 (:func:`gaussian_tail_up`).
    """
    s = _read_positive(sigma, "sigma")
    reduced = _reduce(L01InfDistance().validate(d_in, "d_in"))
    t = _read_threshold(threshold)
    delta = _threshold_delta(lambda j: gaussian_tail_up(s, j), t, reduced, d_in)
    _refuse_large_delta(delta, t, d_in)
    return delta


# --- the mechanisms ---------------------------------------------------------------------------------------


@recorded
def make_laplace_threshold(
    input_domain: Domain,
    input_metric: Metric,
    scale: float | int | Fraction,
    threshold: float | int | Fraction,
    *,
    max_keys: int | None = None,
    rng: np.random.Generator | None = None,
) -> Measurement[Any, dict[Any, int], L01Inf, tuple[Fraction, Fraction]]:
    """Partition selection with discrete Laplace noise: release ``{key: c + Z}`` for the keys whose noisy
    count ``c + Z`` reaches ``threshold``, with ``Z`` exact discrete Laplace noise of ``scale`` per key.

    The input is ``make_count_by``'s output (counts per key read from the data). Keys with a count ≤ 0 are
    treated as absent (never released; absent keys count 0 in the metric). The output is a ``dict`` with the
    released keys in sorted order (so the order reveals nothing about the input's order) and ``int`` noisy
    counts. Output measure: ``ApproxDP``.

    Privacy map, for ``d_in = (l0, l1, l∞)`` (floored to integers, as counts are; ``l∞ ≤ l1``):
    ``ε = min(l1, l0·l∞) / scale`` and ``δ = min(l0, l1) · α**(T − l∞) / (1 + α)`` with ``α = e^(−1/scale)``
    and ``T = ⌈threshold⌉``, rounded up; refused (``InvalidParameter``) when ``T ≤ l∞`` or ``δ ≥ 1``.

    Proof. Fix two count mappings ``x, x'`` at distance ≤ ``d_in``. The keys are released independently
    (one noise draw each), so the output is a product of per-key mechanisms ``M_k``, and by the basic
    composition theorem (Dwork–Roth 2014 Thm 3.16, which holds for a fixed pair of inputs) the pair
    ``M(x), M(x')`` is ``(Σ ε_k, Σ δ_k)``-indistinguishable if each ``M_k(x_k), M_k(x'_k)`` is
    ``(ε_k, δ_k)``-indistinguishable. Three kinds of keys:

    * counted (positive) in both: ``M_k`` is a post-processing of ``c_k + Z``, the discrete Laplace
      mechanism, so ``ε_k = |c_k − c'_k| / scale``, ``δ_k = 0`` (Ghosh–Roughgarden–Sundararajan 2009).
      Summed: ``ε ≤ Σ|c_k − c'_k| / scale ≤ min(l1, l0·l∞) / scale``.
    * counted in ``x`` only (or ``x'`` only, symmetrically): ``M_k(x')`` is always "absent", ``M_k(x)`` is
      released with probability ``p = P[c_k + Z ≥ T]``; the hockey-stick divergence is ``p`` in both
      directions for every ``ε_k ≥ 0``, so ``ε_k = 0``, ``δ_k = p ≤ P[Z ≥ T − l∞]`` as ``c_k ≤ l∞``.
      There are at most ``min(l0, l1)`` such keys (each differs by at least 1).
    * all others: the same distribution on both sides.

    ``P[Z ≥ j] = α**j / (1 + α)`` for ``j ≥ 1`` (:func:`laplace_tail_up`). The bound is attained for one
    person contributing ``l∞`` to each of ``l0`` new keys (``l1 = l0·l∞``), e.g. ``(1, 1, 1)``.

    Time. Without ``max_keys`` the release's time grows with the number of entries of the mapping (one
    noise draw, and the reading and sorting, per positive count). That number counts the keys below the
    threshold too, which is exactly what partition selection hides: whoever can time a release learns
    it (``{"a": 2000}`` and ``{"a": 2000, "rare": 1}`` both release ``{"a"}``, but the second takes
    longer; ``benchmarks/bench_selection_timing.py`` measures how well one timed run tells them apart).

    ``max_keys=K`` pads the release: a mapping of ``n ≤ K`` entries is read into exactly ``K`` slots (its
    entries, then ``K − n`` dummy entries, each through the same loop body), noise is drawn for all ``K``
    slots in one call, and it is added and compared with the threshold as one vector; only then does the
    work depend on the data, through the released keys alone (sorted, put in the dict). What remains
    depends on ``n`` at about a microsecond per entry: reading the mapping (here, and in the domain
    check every ``Measurement`` call makes) and the interpreter's cost of one key (a long string's hash,
    a huge count's conversion); see docs/security.md. The privacy map is the same with and without
    ``max_keys``: each positive count still gets one independent draw and is released exactly when
    ``c + Z ≥ T``, a dummy (or NaN) slot is never released, and the draws are iid, so which draw goes to
    which key (the mapping's order when padded, the sorted order otherwise) does not change the output's
    distribution, the one analysed above.

    A mapping of more than ``K`` entries is released as without ``max_keys``: every entry read, nothing
    dropped, nothing raised, and its time again grows with the number of entries, which it therefore
    reveals beyond ``K``. Choose ``K`` as a public bound on the number of distinct keys (the number of
    rows of a dataset of public size bounds it, say). Neither of the other ways to handle more keys is
    sound:

    * A truncation to ``K`` keys. Let ``R`` keep at most ``K`` keys of any mapping and every key of a
      mapping of at most ``K`` (as it must, to change nothing there). Take ``K + 1`` keys of count ``C``:
      ``R`` drops one of them, ``j``; pick another, ``i``. Start from the ``K`` keys other than ``i`` (all
      kept) and add ``i``'s records one at a time up to ``C``: each step is a pair of neighbours at
      ``(1, 1, 1)``, ``j``'s count is ``C`` throughout, and ``j`` is kept at the start and dropped at the
      end. At some step it is kept on one side and dropped on the other: released with probability
      ``P[C + Z ≥ T]`` against 0, a δ that tends to 1 as ``C`` grows, whatever the rule (an order of the
      keys, a hash, the largest counts). A random ``K``-subset fares no better: for ``K`` keys of count
      ``C`` and one more of count 1, each of the ``K`` is dropped with probability ``1/(K + 1)`` on one
      side only, so the event "this key is not released" has probability ``1 − P[C + Z ≥ T] → 0``
      against at least ``1/(K + 1)``: δ ≥ ``1/(K + 1)`` at every ε as ``C`` grows.
    * A refusal. The mapping is computed inside the chain (``make_count_by >> ...``), where no domain is
      checked, and the dataset's domain cannot state how many distinct values it holds; refusing during
      the release is an exception that depends on the data, and it reveals "more than ``K`` keys" just
      as the time does, without the release.

    Args:
        input_domain: ``MapDomain(AtomDomain(int | float | str | bool), AtomDomain(int))``, as from
            ``make_count_by``.
        input_metric: ``L01InfDistance()``.
        scale: the discrete Laplace scale, ``0 < scale ≤ 2**50`` (a float is read as its exact value).
        threshold: release a key when its noisy count is at least this (``⌈threshold⌉`` in ``[2, 2**62]``);
            choose it from a target δ with :func:`partition_threshold`.
        max_keys: pad every release to this many keys, an int in ``[1, 2**20]``, so that its time does not
            reveal how many keys a mapping of at most ``max_keys`` entries holds (see "Time" above);
            default: no padding.
        rng: a numpy Generator for reproducible experiments only: NOT private.

    Raises:
        InvalidParameter: a bad ``scale``, ``threshold`` or ``max_keys``; from the map, a ``d_in`` whose
            l∞ is not below the threshold or whose δ would be ≥ 1.
        DomainMismatch: not a count mapping space.

    Source: Korolova–Kenthapadi–Mishra–Ntoulas 2009 (Laplace noise then a threshold, for keys read from the
    data); Wilson et al. 2020 (PoPETs, "Differentially private SQL with bounded user contribution": the
    same with l0 partitions per user, δ a union over them); Desfontaines–Voss–Gipson–Mandayam 2022
    (partition selection). The δ is derived above for the discrete noise actually drawn.

    Examples:
        >>> import dpcompose as dp
        >>> by = dp.t.make_count_by(dp.VectorDomain(dp.AtomDomain(str)), dp.SymmetricDistance())
        >>> sel = dp.m.make_laplace_threshold(by.output_domain, by.output_metric, scale=2.0, threshold=30)
        >>> eps, delta = sel.map((1, 1, 1))
        >>> eps, float(delta) < 1e-6
        (Fraction(1, 2), True)
        >>> sorted((by >> sel)(["a"] * 100 + ["b"]))  # "b" (one record) is almost never released
        ['a']
        >>> padded = dp.m.make_laplace_threshold(
        ...     by.output_domain, by.output_metric, scale=2.0, threshold=30, max_keys=1000)
        >>> padded.map((1, 1, 1)) == sel.map((1, 1, 1))  # the same map; the time depends on 1000 only
        True
        >>> list((by >> padded)(["a"] * 100 + ["b"]))
        ['a']
    """
    check_finite_positive(scale, "scale")
    scale_q = exact(scale, "scale")
    if scale_q > DISCRETE_LAPLACE_MAX_SCALE:
        raise InvalidParameter(
            f"scale={scale!r} must be at most 2**50: the exact sampler's draws must fit int64"
        )
    t = _read_threshold(threshold)
    k = _read_max_keys(max_keys)
    carrier = _check_counts_space(input_domain, input_metric, "make_laplace_threshold")
    source = _rng_source(rng)

    def draw(n: int) -> np.ndarray[Any, np.dtype[np.int64]]:
        return discrete_laplace_array(scale_q, n, source)

    def tail(j: int) -> Fraction:
        return laplace_tail_up(scale_q, j)

    def privacy_map(d_in: L01Inf) -> tuple[Fraction, Fraction]:
        reduced = _reduce(d_in)
        l0, l1, li, _ = reduced
        delta = _threshold_delta(tail, t, reduced, d_in)
        _refuse_large_delta(delta, t, d_in)
        return Fraction(min(l1, l0 * li)) / scale_q, delta

    return Measurement(
        input_domain,
        input_metric,
        ApproxDP(),
        _release(carrier, t, draw, k),
        privacy_map,
        node=Node(
            "laplace_threshold",
            params=(("scale", repr(scale)), ("threshold", str(t)), *_max_keys_param(k)),
            source="Korolova et al. 2009; Wilson et al. 2020; discrete Laplace tail (exact)",
        ),
    )


@recorded
def make_gaussian_threshold(
    input_domain: Domain,
    input_metric: Metric,
    scale: float | int | Fraction,
    threshold: float | int | Fraction,
    *,
    noise_delta: float | Fraction | None = None,
    max_keys: int | None = None,
    rng: np.random.Generator | None = None,
) -> Measurement[Any, dict[Any, int], L01Inf, tuple[Fraction, Fraction]]:
    """Partition selection with discrete Gaussian noise: release ``{key: c + Z}`` for the keys whose noisy
    count reaches ``threshold``, ``Z`` exact discrete Gaussian noise with ``σ = scale`` per key.

    As :func:`make_laplace_threshold` (same input, output and treatment of keys), with Gaussian noise: its
    tail is lighter, so for many keys per person (large ``l0``) the noise on the counts grows with
    ``√l0`` instead of ``l0``. Output measure: ``ApproxDP``.

    Privacy map, for ``d_in = (l0, l1, l∞)`` (floored, ``l∞ ≤ l1``), ``T = ⌈threshold⌉``:

    * the keys counted in both neighbours are the multivariate discrete Gaussian mechanism, ρ-zCDP with
      ``ρ = Δ₂²/(2σ²)``, ``Δ₂² = min(l0·l∞², l1·l∞) ≥ Σ(c_k − c'_k)²`` (Canonne–Kamath–Steinke 2020
      Thm 14), converted to ``(ε, noise_delta)`` by CKS 2020 Cor 13
      (:func:`~dpcompose.accounting.zcdp_to_approx`);
    * the keys counted in one neighbour only add ``δ_T = min(l0, l1)·P[Z ≥ T − l∞]``, bounded by
      :func:`gaussian_tail_up` (``Φ(−j/σ) + e^(−j²/2σ²)/(σ√(2π))``, rounded up);
    * composed per key as in :func:`make_laplace_threshold` (basic composition for a fixed pair, Dwork–Roth
      2014 Thm 3.16): ``(ε, noise_delta + δ_T)``.

    ``noise_delta`` defaults to ``δ_T`` (so the total δ is ``2·δ_T``); it is not spent when ``ρ = 0``.
    Refused (``InvalidParameter``) when ``T ≤ l∞`` or the total δ would be ≥ 1.

    Time, as for :func:`make_laplace_threshold` (proofs there): without ``max_keys`` the release's time
    grows with the number of entries of the mapping, the keys below the threshold included, so it reveals
    that number; with ``max_keys=K`` a mapping of at most ``K`` entries is padded to ``K`` slots and takes
    the same steps whatever its counts, with the same privacy map; a larger mapping is released whole, its
    time growing with its size beyond ``K``.

    Args:
        input_domain: ``MapDomain(AtomDomain(int | float | str | bool), AtomDomain(int))``.
        input_metric: ``L01InfDistance()``.
        scale: σ of the discrete Gaussian, ``0 < σ ≤ 2**40`` (a float is read as its exact value).
        threshold: release a key when its noisy count is at least this (``⌈threshold⌉`` in ``[2, 2**62]``).
        noise_delta: the δ at which the zCDP guarantee of the counts becomes ``(ε, δ)``, in ``(0, 1)``
            (read as its exact binary value); default: the threshold's δ.
        max_keys: pad every release to this many keys, an int in ``[1, 2**20]``; default: no padding.
        rng: a numpy Generator for reproducible experiments only: NOT private.

    Raises:
        InvalidParameter: a bad ``scale``, ``threshold``, ``noise_delta`` or ``max_keys``; from the map, a
            ``d_in`` whose l∞ is not below the threshold or whose δ would be ≥ 1.
        DomainMismatch: not a count mapping space.

    Source: Canonne–Kamath–Steinke 2020 Thm 14 (multivariate discrete Gaussian zCDP) and Cor 13 (zCDP to
    (ε, δ)); the threshold's δ as in Korolova et al. 2009 / Wilson et al. 2020, derived for the discrete
    Gaussian above.

    Examples:
        >>> import dpcompose as dp
        >>> by = dp.t.make_count_by(dp.VectorDomain(dp.AtomDomain(int)), dp.SymmetricDistance())
        >>> sel = dp.m.make_gaussian_threshold(
        ...     by.output_domain, by.output_metric, scale=4.0, threshold=25, noise_delta=1e-6)
        >>> eps, delta = sel.map((1, 1, 1))
        >>> round(float(eps), 2), float(delta) < 1.01e-6
        (1.14, True)
    """
    check_finite_positive(scale, "scale")
    sigma = exact(scale, "scale")
    if sigma * sigma > DISCRETE_GAUSSIAN_MAX_SIGMA2:
        raise InvalidParameter(
            f"scale={scale!r} must be at most 2**40 (σ² <= 2**80): the exact sampler's draws must fit int64"
        )
    t = _read_threshold(threshold)
    fixed_delta: Fraction | None = None
    if noise_delta is not None:
        v = exact(check_finite(noise_delta, "noise_delta"), "noise_delta")
        if not 0 < v < 1:
            raise InvalidParameter(f"noise_delta={noise_delta!r} must lie in (0, 1)")
        fixed_delta = v
    k = _read_max_keys(max_keys)
    carrier = _check_counts_space(input_domain, input_metric, "make_gaussian_threshold")
    source = _rng_source(rng)
    sigma2 = sigma * sigma

    def draw(n: int) -> np.ndarray[Any, np.dtype[np.int64]]:
        return discrete_gaussian_array(sigma2, n, source)

    def tail(j: int) -> Fraction:
        return gaussian_tail_up(sigma, j)

    def privacy_map(d_in: L01Inf) -> tuple[Fraction, Fraction]:
        reduced = _reduce(d_in)
        l0, l1, li, _ = reduced
        delta_t = _threshold_delta(tail, t, reduced, d_in)
        rho = Fraction(min(l0 * li * li, l1 * li)) / (2 * sigma2)
        if rho == 0:
            _refuse_large_delta(delta_t, t, d_in)
            return Fraction(0), delta_t
        nd = delta_t if fixed_delta is None else fixed_delta
        total = delta_t + nd
        _refuse_large_delta(total, t, d_in)
        return zcdp_to_approx(rho, nd), total

    params = [("scale", repr(scale)), ("threshold", str(t))]
    if fixed_delta is not None:
        params.append(("noise_delta", format_up(fixed_delta)))
    params += _max_keys_param(k)
    return Measurement(
        input_domain,
        input_metric,
        ApproxDP(),
        _release(carrier, t, draw, k),
        privacy_map,
        node=Node(
            "gaussian_threshold",
            params=tuple(params),
            source="Canonne–Kamath–Steinke 2020 Thm 14 + Cor 13; threshold δ (Korolova et al. 2009; Wilson "
            "et al. 2020), discrete Gaussian tail bounded",
        ),
    )


def partition_threshold(
    scale: float | int | Fraction,
    delta: float | Fraction,
    d_in: tuple[int, Any, Any] = (1, 1, 1),
    noise: str = "laplace",
) -> int:
    """The least integer threshold whose partition-selection δ at ``d_in`` is at most ``delta``.

    The δ is the one the privacy map of :func:`make_laplace_threshold` (``noise="laplace"``) or the
    threshold part ``δ_T`` of :func:`make_gaussian_threshold` (``noise="gaussian"``; its total δ adds
    ``noise_delta``) reports, computed by the same bounds, so the mechanism built with the result reports
    a δ of at most ``delta``. Found by bisection over integers (the bound falls as the threshold rises).

    Args:
        scale: the noise scale (Laplace) or σ (Gaussian).
        delta: the target δ in (0, 1), read as the decimal it prints as (a budget).
        d_in: the ``(l0, l1, l∞)`` distance, e.g. ``make_count_by(...).map(1)``; default one record
            added or removed. On a fixed-size dataset under ``SymmetricDistance`` one changed record is
            ``make_count_by(...).map(2)`` (``(2, 2, 2)`` for counts): pass that.
        noise: ``"laplace"`` or ``"gaussian"``.

    Raises:
        InvalidParameter: a bad argument, or a δ no threshold up to ``2**62`` reaches.

    Source: the δ of :func:`make_laplace_threshold` / :func:`make_gaussian_threshold` (Korolova et al.
    2009; Wilson et al. 2020), inverted.

    Examples:
        >>> import dpcompose as dp
        >>> dp.m.partition_threshold(scale=1.0, delta=1e-6)
        15
        >>> dp.m.partition_threshold(scale=1.0, delta=1e-6, d_in=(3, 3, 1))
        16
    """
    kind = check_str(noise, "noise", ("laplace", "gaussian"))
    check_finite_positive(scale, "scale")
    s = exact(scale, "scale")
    target = decimal(check_finite(delta, "delta"), "delta")
    if not 0 < target < 1:
        raise InvalidParameter(f"delta={delta!r} must lie in (0, 1)")
    reduced = _reduce(L01InfDistance().validate(d_in, "d_in"))
    _, _, li, m = reduced
    if m == 0:
        return 2

    def delta_at(t: int) -> Fraction:
        j = t - li
        return m * (laplace_tail_up(s, j) if kind == "laplace" else gaussian_tail_up(s, j))

    lo, hi = max(2, li + 1), _MAX_THRESHOLD
    if delta_at(hi) > target:
        raise InvalidParameter(
            f"delta={delta!r} is below what any threshold up to 2**62 reaches at scale={scale!r} (the bound "
            "cannot go below the smallest float); use a larger delta"
        )
    while lo < hi:  # invariant: delta_at(hi) <= target
        mid = (lo + hi) // 2
        if delta_at(mid) <= target:
            hi = mid
        else:
            lo = mid + 1
    return hi
