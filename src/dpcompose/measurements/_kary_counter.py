"""The k-ary tree with negative digits: the node layout, coefficients and variances of the online counter's
``estimator="kary"`` (the counter itself is :class:`dpcompose.measurements._counter.KaryCounter`).

After Andersson, Pagh, Steiner, Torkamani 2025, "Count on Your Elders: Laplace vs Gaussian Noise" (FORC
2025, LIPIcs.FORC.2025.10; arXiv 2408.07021), the mechanism of their §3, whose error their Theorem 1 states
(the layout, the proofs and the constants below are this module's own and rest on no statement of the
paper; the tests check them by enumeration): for odd ``k``, a
``k``-ary tree of Laplace-noised interval sums, each prefix written in base ``k`` with the balanced digits
``−h … h``, ``h = (k − 1)/2``; a negative digit *subtracts* nodes, so a prefix needs ``Σ|d_i|`` nodes, on
average about ``k/4`` per level instead of the ``(k − 1)/2`` of the digits ``0 … k − 1``.

Layout. ``T`` steps, ``k ≥ 3`` odd, ``h = (k − 1)/2``, ``c_j = (k**j − 1)/2`` (the largest number whose
balanced representation has ``j`` digits: all ``h``). ``L`` is the least ``L ≥ 1`` with ``c_L ≥ T``
(:func:`kary_levels`); the steps are padded with zeros to ``P = k**L`` leaves, and node ``(i, j)`` of level
``i < L`` covers ``[j·k**i, (j + 1)·k**i)`` (leaves: level 0). A prefix ``[0, n)``, ``1 ≤ n ≤ T``, has the
balanced digits ``n = Σ_{i<L} d_i·k**i``, ``|d_i| ≤ h`` (unique; :func:`balanced_digits`), so that
``d_i = ⌊(n + c_{i+1})/k**i⌋ mod k − h`` (adding ``c_{i+1}`` turns digits ``0 … i`` into the ordinary
digits ``d + h`` with no carry). With ``m_i = Σ_{j≥i} d_j·k**j`` (a multiple of ``k**i``, ``m_L = 0``,
``m_0 = n``), ``[0, n)`` is the signed sum over ``i`` of ``[m_{i+1}, m_i)``: for ``d_i > 0`` the ``d_i``
nodes of level ``i`` starting at ``m_{i+1}`` (coefficient +1), for ``d_i < 0`` minus the ``|d_i|`` nodes
ending at ``m_{i+1}`` (coefficient −1) (:func:`kary_pieces`). So ``Σ_v c_{n,v}·1[s ∈ v] = 1[s < n]`` for
every leaf ``s``; ``0 ≤ m_i ≤ n + c_i < k**L``, so every node lies in the padded tree. A subtracted node
ends after ``n``: it holds steps not yet seen, which cancel exactly (below).

Online (proof). Let ``z_v`` be independent discrete Laplace noises, one per node ``v`` of the set ``V``
of nodes some prefix ``n ≤ T`` uses, and ``y_v = s_v + z_v`` the noisy node sums. The counter answers
step ``t`` (``n = t + 1``) with ``a_n = Σ_v c_{n,v}·y_v = x_0 + … + x_t + Σ_v c_{n,v}·z_v`` — the two are the
same number by the identity above, so it computes the right side: the exact running count of the steps
seen (each ``x_s`` clamped as in the binary counters) plus the noises, each drawn once, when first needed.
It reads no step after ``t``; the noises are drawn without looking at the data.

Privacy (proof). Whatever steps are asked, the transcript is a function of ``(y_v)_{v ∈ V} = R·x + z``
(post-processing; ``V`` depends on ``T`` and ``k`` only), ``R`` the 0/1 matrix of which steps each node
sums. One step ``s`` enters ``Δ_s = #{v ∈ V : s ∈ v}`` of them, one per level at most, so ``R·x`` has L1
sensitivity ``d·Δ``, ``Δ = max_s Δ_s ≤ L``, for input distance ``d`` (triangle inequality), and the loss
is the discrete Laplace mechanism's at that sensitivity: ``ε = d·Δ/scale`` (Ghosh–Roughgarden–
Sundararajan 2009). That argument is for a stream fixed in advance; it holds as well when the analyst
picks each step after seeing the answers before it (adaptive streams), by a coupling: if the two streams
differ at step ``s`` by ``δ`` (``|δ| <= d``), shift the noise of every node ``v ∋ s`` by ``−δ``
(``z'_v = z_v − δ``). Every answer ``a_n = Σ_v c_{n,v}·(s_v + z_v)`` is then unchanged: for ``n <= s``
the shift enters with ``Σ_v c_{n,v}·1[s ∈ v] = 1[s < n] = 0``, so the answers before ``s`` are equal, the
analyst's later choices are equal, and for ``n > s`` the shift cancels the change of ``s_v``. The shift is
a bijection of the noises (it is fixed by ``s`` and ``δ``; the choices it depends on are those before
``s``, which it leaves unchanged), and it moves at most ``Δ`` independent discrete Laplace noises by
``|δ|`` each, so the probability of every transcript changes by a factor of at most
``e^(d·Δ/scale)``. ``Δ = L`` exactly: step 0 lies in node ``(i, 0)`` of every level, which prefix
``n = k**i`` uses for ``i ≤ L − 2`` (``k**i ≤ (k**(L−1) + 1)/2 ≤ T`` as ``c_{L−1} < T``) and prefix
``n = (k**(L−1) + 1)/2 = k**(L−1) − c_{L−1} ≤ T`` uses for ``i = L − 1`` (digits ``1, −h, …, −h``). The
map is ``ε = d·L/scale``, charged in full when the counter is created (noising every node of the ``L``
levels would cost the same: one node per level). The tests check ``Δ = L`` by enumerating, for every
``T ≤ 40`` and every odd ``k`` up to ``2T + 3``, every step and the nodes it enters. (The middle child of
a node, ``j ≡ h mod k``, is never used: a positive digit takes children ``0 … d − 1``, a negative one
children ``k − |d| … k − 1``.)

Accuracy (exact). The answer's error is ``Σ_v c_{n,v}·z_v`` with coefficients ±1 over ``Σ_i |d_i|``
distinct nodes: mean 0 (unbiased), variance ``σ²·w(n)``, ``w(n) = Σ_i |d_i|`` (:func:`kary_weight`,
from the closed form of ``d_i``) and ``σ² = 2q/(1 − q)²``, ``q = e^(−1/scale)``, the discrete Laplace
variance. Over a full period of ``k**L`` consecutive ``n`` each digit takes each value once per ``k``, so
the mean of ``|d_i|`` is ``h(h + 1)/k = (k² − 1)/(4k)``, so the mean squared error at ``scale = L/ε`` is
about ``2·L²/ε²·L·(k² − 1)/(4k)`` (derived here from the digits), against ``2·L₂²/ε²·L₂/2``
(``L₂ = log₂T``) for the binary mechanism: with ``L = log_k T``, ``ln³T/ε²`` times
``(k² − 1)/(2k·ln³k)``, least at ``k = 19`` (the ``k`` the paper uses; ``k = 21`` within 0.03%), a
factor of about 8 below the raw binary mechanism and 4 below Honaker's as ``T → ∞``. At finite ``T`` the
best ``k`` depends on ``T`` through the rounding of ``L``: :func:`best_branching` picks it from the exact sum
:func:`kary_weight_sum`.
"""

from __future__ import annotations

from math import isqrt

from dpcompose.errors import InvalidParameter

__all__ = [
    "balanced_digits",
    "best_branching",
    "kary_levels",
    "kary_pieces",
    "kary_weight",
    "kary_weight_sum",
]


def _check_odd(branching: int) -> None:
    """Refuse a branching factor the balanced digits do not exist for (the loops would not end)."""
    if branching < 3 or branching % 2 == 0:
        raise InvalidParameter(f"branching={branching} must be an odd integer ≥ 3")


def balanced_digits(n: int, branching: int) -> list[int]:
    """The digits ``d_0, d_1, …`` (lowest first, no trailing zeros) of ``n ≥ 0`` in base ``k = branching``
    (odd) with digits ``−h … h``, ``h = (k − 1)/2``: ``n = Σ d_i·k**i``."""
    _check_odd(branching)
    h = (branching - 1) // 2
    digits = []
    while n:
        d = (n + h) % branching - h
        digits.append(d)
        n = (n - d) // branching
    return digits


def kary_levels(length: int, branching: int) -> int:
    """``L``: the least ``L ≥ 1`` with ``(k**L − 1)/2 ≥ T`` — the levels of the tree (every prefix
    ``n ≤ T`` has at most ``L`` balanced digits), and the sensitivity (module docstring)."""
    _check_odd(branching)
    levels, reach = 1, (branching - 1) // 2
    while reach < length:
        levels, reach = levels + 1, reach * branching + (branching - 1) // 2
    return levels


def kary_pieces(n: int, branching: int) -> list[tuple[int, int, int]]:
    """The nodes ``(level, index, coefficient ±1)`` whose signed sum is the prefix ``[0, n)``: per level
    ``i`` (top down), ``d_i`` nodes starting at ``m_{i+1}`` (+1) or ``|d_i|`` nodes ending there (−1)."""
    digits = balanced_digits(n, branching)
    pieces: list[tuple[int, int, int]] = []
    m = 0  # m_{i+1} / k**(i+1)
    for level in range(len(digits) - 1, -1, -1):
        d, base = digits[level], m * branching  # base = m_{i+1} / k**i
        if d > 0:
            pieces += [(level, base + j, 1) for j in range(d)]
        else:
            pieces += [(level, base - 1 - j, -1) for j in range(-d)]
        m = base + d
    return pieces


def kary_weight(n: int, branching: int) -> int:
    """``w(n) = Σ_i |d_i|``, the number of nodes prefix ``[0, n)`` uses (its variance is ``σ²·w(n)``), from
    the closed form ``d_i = ⌊(n + c_{i+1})/k**i⌋ mod k − h``, ``c_j = (k**j − 1)/2``."""
    h, total, power = (branching - 1) // 2, 0, 1
    while (power - 1) // 2 < n:  # the digits up to the least i with c_i ≥ n: the rest are 0
        total += abs((n + (power * branching - 1) // 2) // power % branching - h)
        power *= branching
    return total


def _below(count: int, h: int) -> int:
    """``Σ_{j<count} |j − h|`` for ``0 ≤ count ≤ 2h + 1``."""
    if count <= h:
        return count * h - count * (count - 1) // 2
    return h * (h + 1) // 2 + (count - h - 1) * (count - h) // 2


def kary_weight_sum(length: int, branching: int) -> int:
    """``Σ_{n=1}^{T} w(n)``, exactly, in ``O(L)`` operations: per level ``i``, the sum of
    ``|⌊M/k**i⌋ mod k − h|`` over ``M = n + c_{i+1}``, counted by whole periods of ``k**(i+1)`` (each digit
    value ``k**i`` times) plus a partial one. ``σ²·kary_weight_sum(T, k)/T`` is the mean variance over
    all prefixes."""
    k, h = branching, (branching - 1) // 2

    def upto(stop: int, power: int) -> int:  # Σ_{M<stop} |⌊M/power⌋ mod k − h|
        periods, rest = divmod(stop, power * k)
        whole, part = divmod(rest, power)
        return periods * power * h * (h + 1) + power * _below(whole, h) + part * abs(whole - h)

    total, power = 0, 1
    for _ in range(kary_levels(length, branching)):
        shift = (power * k - 1) // 2  # c_{i+1}
        total += upto(length + shift + 1, power) - upto(shift + 1, power)
        power *= k
    return total


def best_branching(length: int) -> int:
    """The odd ``k ≥ 3`` minimising ``L²·Σ_n w(n)`` (``L = kary_levels(T, k)``): the mean squared error over
    all prefixes at a fixed ε up to a constant (``scale = L/ε``, variance ``≈ 2·scale²`` per node), the
    least such ``k`` on a tie. The candidates run to ``2·⌊√(2T)⌋ + 3`` (past the least ``k`` of two levels,
    beyond which the bottom digits only grow) and ``2T + 1`` (one level: every step noised alone)."""

    def cost(k: int) -> tuple[int, int]:
        return kary_levels(length, k) ** 2 * kary_weight_sum(length, k), k

    candidates: list[int] = [*range(3, 2 * isqrt(2 * length) + 4, 2), 2 * length + 1]
    return min(candidates, key=cost)
