"""The online counter: the binary mechanism's running counts released one step at a time.

Chan, Shi, Song 2011, "Private and continual release of statistics" (ACM TISSEC 14(3)), §3.4 (the binary
mechanism, Theorem 3.5 for its privacy): the stream's dyadic interval sums (p-sums), each with its own
Laplace noise; the running count after step ``t`` is the sum of the noisy p-sums of the dyadic
decomposition of ``[0, t]``, each drawn the first time it is needed, once.

Layout. The ``T`` steps are padded with zeros to ``P = 2**k`` leaves (``k = ⌈log₂T⌉``); a node of height
``h`` covers ``[i·2**h, (i+1)·2**h)`` (leaves: height 0, the root: height ``k``). Prefix ``[0, n)``,
``n = t + 1``, is the union of one node of height ``h`` for each bit ``h`` set in ``n`` (the root when
``n = P``).

Two estimators of the running count over the binary tree, over two node sets (the third,
``"kary"``, the k-ary tree with negative digits, has its layout and proofs in
:mod:`dpcompose.measurements._kary_counter`; its counter is :class:`KaryCounter` below):

* ``"raw"`` (Chan–Shi–Song): the sum of the noisy nodes of the decomposition. It reads the nodes of
  heights ``0 … k − 1`` and, only when ``T = P``, the root (for ``n = P``): ``L = ⌊log₂T⌋ + 1`` heights
  (``T.bit_length()``). For ``T`` not a power of two that is ``⌈log₂T⌉``, one level fewer than the full
  tree of :mod:`dpcompose.transformations._tree`: the root is never read.
* ``"honaker"``: never the root when ``k ≥ 1`` (prefix ``[0, P)`` is then the two nodes of height
  ``k − 1``), so the nodes of heights ``0 … H``, ``H = max(k − 1, 0)``: ``L = max(⌈log₂T⌉, 1)`` heights.
  A node is *complete* by step ``t`` when its interval ends at or before ``n = t + 1``; at step ``t`` the
  counter draws every node that becomes complete there (the ones ending at ``n``, bottom up) and keeps,
  for each complete node ``v`` of height ``h``, the estimate ``ẑ_v`` of its sum from its own noisy value
  ``y_v`` and its subtree (Honaker 2015, "Efficient use of differentially private binary trees", the
  upward pass; Hay, Rastogi, Miklau, Suciu 2010, Theorem 3, its first pass): ``ẑ_v = y_v`` at a leaf and
  ``ẑ_v = α_h·y_v + (1 − α_h)·(ẑ_left + ẑ_right)``, ``α_h = 2**h/(2**(h+1) − 1)`` — the inverse-variance
  weighting of ``y_v`` (variance ``σ²``) against the children's sum (variance ``2·v_{h−1}σ²``), whose
  variance is ``v_h·σ²`` with ``v_h = 1/(1 + 1/(2·v_{h−1})) = 2**h/(2**(h+1) − 1)`` (``v_0 = 1``; 2/3,
  4/7, 8/15, … → 1/2). The answer is the sum of ``ẑ`` over the decomposition of ``[0, n)``, of variance
  ``σ²·Σ v_h`` over its nodes.

Exactness. ``Z_v = (2**(h+1) − 1)·ẑ_v`` is an integer: ``Z_v = y_v`` at a leaf and
``Z_v = 2**h·y_v + Z_left + Z_right`` (as ``(2**h − 1)·ẑ_child = Z_child``). The counter keeps the ``Z`` of
the maximal complete nodes (a node's children are dropped when it is formed, so at most ``H + 2`` are
held) and answers ``Σ Z_v·(D/(2**(h_v+1) − 1)) / D`` with ``D`` the lcm of the denominators, an integer
division that Python rounds correctly: the answer is the exact rational estimate, rounded once to the
nearest float.

Unbiased and optimal (proof). The noises are independent with mean 0 and the same variance ``σ²``
(symmetric discrete Laplace of one scale), so ``E[y_v] = s_v`` and, by induction on ``h``,
``E[Z_v] = 2**h·s_v + (2**h − 1)·(s_left + s_right) = (2**(h+1) − 1)·s_v``, and
``Var(Z_v) = σ²·(4**h + 2·(2**h − 1)**2·v_{h−1}) = σ²·2**h·(2**(h+1) − 1)``, so ``Var(ẑ_v) = v_h·σ²``.
The complete nodes at step ``t`` are the full subtrees under the maximal ones, which tile ``[0, n)``: no
complete node spans two of them, so the observations split into independent blocks, one full subtree per
maximal node, each with its own leaves as unknowns. In a full binary subtree with equal noise variances
the least-squares (by Gauss–Markov, the minimum-variance linear unbiased) estimate of the root's sum is
the upward pass's ``ẑ`` (Hay et al. 2010, Theorem 3: the consistent root equals ``z`` of the root;
Honaker 2015). The BLUE of a sum of parameters is the sum of their BLUEs, so the answer is the best linear
unbiased estimate of the running count from the noisy nodes complete by step ``t`` — the most a counter
can use that reads no later step (a node not complete by ``t`` sums a step after ``t``). The tests check
it against a least-squares solve in exact rationals.

Privacy (proof). Every answer is a function of the noisy node values the counter reads, and which nodes
it reads depends on ``T`` and the estimator only, not on the data or the answers; so the whole
transcript, whatever steps are asked, is a post-processing of the noisy tree restricted to the ``L``
heights above, ``W·x + Z`` (``Z`` independent discrete Laplace of ``scale`` per node; drawing a node's
noise lazily and reusing it gives the same joint distribution). Every step lies in exactly one node per
height, so the column ``w_t`` of ``W`` has ``‖w_t‖₁ = L`` and ``W·x`` has L1 sensitivity ``d·L`` for input
distance ``d`` (the triangle inequality, as in :mod:`dpcompose.transformations._tree`); the loss is that
of the discrete Laplace mechanism at sensitivity ``d·L``: ``ε = d·L/scale`` (Ghosh–Roughgarden–
Sundararajan 2009). It is charged in full when the counter is created; the steps are asked afterwards
for free. Each step's count is clamped to ``±⌊2**62/P⌋`` first, as in the tree (1-Lipschitz per step, so
the sensitivity holds for every member of the domain).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any, TypeVar

import numpy as np

from dpcompose._validation import check_positive_int, check_str, short_repr
from dpcompose.core import (
    AbsoluteDistance,
    AtomDomain,
    Domain,
    Measurement,
    Metric,
    Node,
    PureDP,
    Queryable,
)
from dpcompose.core._recipe import recorded
from dpcompose.errors import InvalidParameter
from dpcompose.measurements._kary_counter import best_branching, kary_levels, kary_pieces
from dpcompose.measurements._laplace import make_laplace
from dpcompose.transformations._tree import MAX_LEAVES, check_step_counts, clamped_steps, tree_shape

__all__ = ["KaryCounter", "StepCounter", "checked_step", "counter_levels", "make_online_counter"]

A = TypeVar("A")

ESTIMATORS = ("raw", "honaker", "kary")
"""The estimators of :func:`make_online_counter`."""


def checked_step(query: object, answered: int, length: int) -> int:
    """The step index ``query`` of an online counter over ``length`` steps with ``answered`` released: an
    int from 0 to ``answered`` (a released step again, or the next one), below ``length``; anything else is
    refused with :class:`InvalidParameter` before anything runs."""
    if not isinstance(query, (int, np.integer)) or isinstance(query, bool):
        raise InvalidParameter(f"query={query!r} must be a step index, an int")
    step = int(query)
    if not 0 <= step <= min(answered, length - 1):
        raise InvalidParameter(
            f"query={step}: ask the steps in order, 0 … {length - 1}, each at most one past the "
            f"last asked (next: {answered}); nothing was run"
        )
    return step


def counter_levels(length: int, estimator: str) -> int:
    """``L``, the number of tree heights the online counter over ``length`` steps reads (one node of each
    contains any step): ``T.bit_length() = ⌊log₂T⌋ + 1`` for ``"raw"`` (the root only when ``T`` is a
    power of two), ``max(⌈log₂T⌉, 1)`` for ``"honaker"`` (never the root of a tree of two or more leaves).
    The module docstring has the proof."""
    if estimator == "raw":
        return length.bit_length()
    return max((length - 1).bit_length(), 1)


class StepCounter(Queryable[int, A]):
    """A counter over ``length`` steps asked in order: step ``t`` (an int, at most one past the last asked,
    :func:`checked_step`) is released once by :meth:`_release` and the same answer is returned when asked
    again. Subclasses implement :meth:`_release`."""

    def __init__(self, name: str, length: int) -> None:
        super().__init__(name=name)
        self._length = length
        self._answers: list[A] = []

    def _status(self) -> str:
        return f"{len(self._answers)} of {self._length} steps released"

    def _release(self, step: int) -> A:
        """The answer for ``step``, the next step not yet released (called once per step, in order)."""
        raise NotImplementedError

    def _answer(self, query: int) -> A:
        step = checked_step(query, len(self._answers), self._length)
        if step < len(self._answers):
            return self._answers[step]  # the same release again: no new noise
        answer = self._release(step)
        self._answers.append(answer)
        return answer


class OnlineCounter(StepCounter[int]):
    """Answers step ``t`` (at most one past the last asked) with the noisy running count through ``t``."""

    def __init__(self, data: Any, length: int, noise: Any) -> None:
        super().__init__("online counter", length)
        self._padded, self._levels = tree_shape(length)
        self._values: list[int] = clamped_steps(data, self._padded).tolist()
        self._noise = noise
        self._nodes: dict[tuple[int, int], int] = {}

    def _node(self, level: int, index: int) -> int:
        """The noisy p-sum of node ``index`` of ``level`` (drawn once, on first use)."""
        key = (level, index)
        if key not in self._nodes:
            size = self._padded >> level
            total = sum(self._values[index * size : (index + 1) * size])
            self._nodes[key] = int(self._noise(total))
        return self._nodes[key]

    def _release(self, step: int) -> int:
        n, total = step + 1, 0
        for level in range(self._levels):
            shift = self._levels - 1 - level  # node size 2**shift
            if (n >> shift) & 1:
                total += self._node(level, (n >> shift) - 1)
        return total


class HonakerCounter(StepCounter[float]):
    """Answers step ``t`` (at most one past the last asked) with the best linear unbiased estimate of the
    running count through ``t`` from the noisy nodes complete by then (module docstring)."""

    def __init__(self, data: Any, length: int, noise: Any) -> None:
        super().__init__("online counter (honaker)", length)
        padded, _ = tree_shape(length)
        self._values: list[int] = clamped_steps(data, padded).tolist()
        self._top = counter_levels(length, "honaker") - 1  # the greatest height read
        self._noise = noise
        denominators = [(2 << h) - 1 for h in range(self._top + 1)]
        self._common = math.lcm(*denominators)
        self._factors = [self._common // d for d in denominators]
        self._held: dict[tuple[int, int], int] = {}  # (height, index) ↦ Z of each maximal complete node

    def _release(self, step: int) -> float:
        n, held = step + 1, self._held
        for h in range(self._top + 1):  # the nodes ending at n, bottom up: heights 0 … (trailing zeros of n)
            if n % (1 << h):
                break
            i = (n >> h) - 1
            y = int(self._noise(sum(self._values[i << h : (i + 1) << h])))
            held[h, i] = y if h == 0 else (y << h) + held.pop((h - 1, 2 * i)) + held.pop((h - 1, 2 * i + 1))
        return sum(z * self._factors[h] for (h, _), z in held.items()) / self._common  # rounded once


class KaryCounter(StepCounter[int]):
    """Answers step ``t`` (at most one past the last asked) with the running count through ``t`` plus the
    signed noises of the nodes of the ``k``-ary tree with negative digits that make up ``[0, t]``
    (:mod:`dpcompose.measurements._kary_counter`: the same number as the signed sum of their noisy sums)."""

    def __init__(self, data: Any, length: int, noise: Any, branching: int) -> None:
        super().__init__(f"online counter (kary, k={branching})", length)
        padded, _ = tree_shape(length)  # the binary counters' clamp: the same steps for every estimator
        self._values: list[int] = clamped_steps(data, padded).tolist()
        self._noise = noise
        self._branching = branching
        self._running = 0
        self._nodes: dict[tuple[int, int], int] = {}  # (level, index) ↦ its noise, drawn on first use

    @property
    def drawn(self) -> tuple[tuple[int, int], ...]:
        """The nodes ``(level, index)`` whose noise has been drawn, in the order drawn."""
        return tuple(self._nodes)

    def _release(self, step: int) -> int:
        self._running += self._values[step]  # the only step read: the next one
        total = self._running
        for level, index, sign in kary_pieces(step + 1, self._branching):
            if (level, index) not in self._nodes:
                self._nodes[level, index] = int(self._noise(0))  # z_v: the noisy sum minus the sum
            total += sign * self._nodes[level, index]
        return total


def counter_branching(estimator: str, branching: object, length: int) -> int:
    """The tree's branching factor: 2 for ``"raw"`` and ``"honaker"`` (``branching`` must be None or 2);
    for ``"kary"`` an odd int ≥ 3, or :func:`best_branching` of ``T`` when None. Refused with
    :class:`InvalidParameter` otherwise."""
    if estimator != "kary":
        if branching is not None and not (isinstance(branching, (int, np.integer)) and branching == 2):
            raise InvalidParameter(
                f"branching={short_repr(branching)}: estimator={estimator!r} reads the binary tree; "
                'pass branching=None (or 2), or estimator="kary" for a k-ary tree'
            )
        return 2
    if branching is None:
        return best_branching(length)
    k = check_positive_int(branching, "branching")
    if k < 3 or k % 2 == 0:
        raise InvalidParameter(
            f"branching={short_repr(branching)} must be an odd integer ≥ 3 (the balanced digits −(k−1)/2 … "
            "(k−1)/2), or None for the best for T"
        )
    if k > 2 * length + 1:
        raise InvalidParameter(
            f"branching={short_repr(branching)} is beyond 2T + 1 = {2 * length + 1}: every such k gives "
            f"the same one-level tree (each step noised alone); pass at most {2 * length + 1}, or None for "
            "the best for T"
        )
    return k


@recorded
def make_online_counter(
    input_domain: Domain,
    input_metric: Metric,
    scale: float,
    *,
    estimator: str = "raw",
    branching: int | None = None,
    rng: np.random.Generator | None = None,
) -> Measurement[Any, Any, Any, Fraction]:
    """An online counter (the binary mechanism, or a k-ary tree): a queryable releasing the running count
    after each step.

    Ask the steps in order: ``counter(t)`` returns an estimate of ``x_0 + … + x_t`` from discrete Laplace
    noised interval sums (p-sums), each noised once, when first needed, reading no step after ``t``.
    Asking a step again returns the same answer; asking one more than one step ahead is refused (nothing
    is run). Three estimators (proofs in the module docstrings):

    * ``estimator="raw"`` (default; Chan–Shi–Song): the exact running count plus the sum of the noises of
      the at most ``L`` dyadic p-sums that make up ``[0, t]``. Each answer is an ``int``; its variance is at
      most ``L·2·scale²``.
    * ``estimator="honaker"``: the best linear unbiased estimate from every dyadic p-sum complete by step
      ``t`` (Honaker 2015's upward pass: each p-sum's estimate weighs its own noisy value against its two
      halves' estimates by inverse variance, then the dyadic pieces of ``[0, t]`` are added). Each answer
      is a ``float``, the exact rational estimate rounded once. It uses one level fewer when ``T`` is a
      power of two (``[0, T)`` is its two halves), and its variance is ``σ²·Σ 2**h/(2**(h+1) − 1)`` over
      the pieces (``h`` the piece's height, ``σ²`` one noise's variance): at ``T = 1,024``, ε = 1, the
      root-mean-square error over all prefixes is about 24, against about 35 raw.
    * ``estimator="kary"`` (after Andersson–Pagh–Steiner–Torkamani 2025): a ``k``-ary tree,
      ``k = branching`` odd, with the prefix ``t + 1`` written in base ``k`` with the digits
      ``−(k−1)/2 … (k−1)/2``; a negative digit subtracts p-sums, so ``[0, t]`` takes ``Σ|digits|``
      p-sums, about ``k/4`` per level. The subtracted p-sums end after ``t``, but their steps cancel: the
      answer is the exact running count plus the signed noises (an ``int``), of variance ``σ²·Σ|digits|``.
      ``branching=None`` (default) takes the odd ``k`` with the least mean squared error over all prefixes
      at a fixed ε for this ``T`` when each noise's variance is about ``2·scale²`` (13 at ``T = 1,024``, 33
      at ``2**14``, 19 at ``2**24``): that holds within 8 % for ``scale >= 1``, the usual regime (ε up to
      a few at ``T >= 1,000``); at a smaller scale a larger ``k`` can have less error (pass it). At
      ``T = 1,024``, ε = 1 (``L = 3``, scale 3), the root-mean-square error over all prefixes is about 13.
      A step costs ``Σ|digits| <= L·(k − 1)/2`` operations; ``k`` is at most ``2T + 1`` (every larger
      ``k`` gives the same one-level tree).

    Privacy map (charged at construction; proofs in the module docstrings): ``ε = d_in·L/scale`` under
    ``L1Distance`` on the per-step counts, ``L`` the most noised p-sums one step enters (one per tree
    level): ``⌊log₂T⌋ + 1`` raw, ``max(⌈log₂T⌉, 1)`` for ``"honaker"`` (the same when ``T`` is not a power
    of two; one fewer when it is), and for ``"kary"`` the least ``L`` with ``(k**L − 1)/2 ≥ T``.
    Event-level neighbours: an event of weight at most ``c`` is ``d_in = c``. ``scale = L/ε`` costs ε per
    unit of ``d_in``.

    Args:
        input_domain: ``VectorDomain(AtomDomain(int), size=T)`` — the count at each step, ``1 ≤ T ≤ 2**24``.
        input_metric: ``L1Distance()``.
        scale: the discrete Laplace scale of each p-sum's noise (positive, finite, at most 2**50).
        estimator: ``"raw"`` (default), ``"honaker"`` or ``"kary"``.
        branching: ``"kary"`` only: the tree's ``k``, an odd int ≥ 3, or None (default) for the best for
            ``T``. ``"raw"`` and ``"honaker"`` read the binary tree: None or 2.
        rng: a seeded numpy Generator for reproducible, NOT private, noise (default: the secure source).

    Raises:
        DomainMismatch: the domain is not a sized vector of ``int``, or the metric is not ``L1Distance()``.
        InvalidParameter: ``scale`` not positive and finite; ``T`` above 2**24; ``estimator`` not ``"raw"``,
            ``"honaker"`` or ``"kary"``; ``branching`` not an odd int ≥ 3 (``"kary"``) or not None or 2
            (the others); (when asked) a step out of order.

    Source: Chan, Shi, Song 2011, "Private and continual release of statistics", §3.4, Theorem 3.5 (the
    binary mechanism); Dwork, Naor, Pitassi, Rothblum 2010 §4; Honaker 2015, "Efficient use of
    differentially private binary trees" (the upward pass); Hay, Rastogi, Miklau, Suciu 2010, Theorem 3;
    Andersson, Pagh, Steiner, Torkamani 2025, "Count on Your Elders: Laplace vs Gaussian Noise" (FORC
    2025), the k-ary tree with negative digits (the construction; its privacy and variance are proved in
    :mod:`~dpcompose.measurements._kary_counter`); Ghosh–Roughgarden–Sundararajan 2009 (the discrete
    Laplace mechanism's ε = Δ/scale).

    Examples:
        >>> import dpcompose as dp
        >>> steps = dp.VectorDomain(dp.AtomDomain(int), size=8)
        >>> counter = dp.m.make_online_counter(steps, dp.L1Distance(), scale=4.0)
        >>> counter.map(1)       # 4 levels over scale 4: ε = 1 for all 8 running counts
        Fraction(1, 1)
        >>> q = counter([5, 0, 2, 7, 1, 1, 0, 3])
        >>> [type(q(t)).__name__ for t in range(3)]
        ['int', 'int', 'int']
        >>> better = dp.m.make_online_counter(steps, dp.L1Distance(), scale=3.0, estimator="honaker")
        >>> better.map(1)        # 3 levels (no root) over scale 3
        Fraction(1, 1)
        >>> q = better([5, 0, 2, 7, 1, 1, 0, 3])
        >>> [type(q(t)).__name__ for t in range(3)]
        ['float', 'float', 'float']
        >>> kary = dp.m.make_online_counter(steps, dp.L1Distance(), scale=2.0, estimator="kary", branching=5)
        >>> kary.map(1)          # 2 levels of a 5-ary tree ((5**2 − 1)/2 = 12 ≥ 8) over scale 2
        Fraction(1, 1)
        >>> q = kary([5, 0, 2, 7, 1, 1, 0, 3])
        >>> [type(q(t)).__name__ for t in range(3)]
        ['int', 'int', 'int']
    """
    length = check_step_counts(input_domain, input_metric)
    if not 1 <= length <= MAX_LEAVES:
        raise InvalidParameter(f"input_domain has size {length}: the stream length must be 1 … 2**24")
    chosen = check_str(estimator, "estimator", ESTIMATORS)
    k = counter_branching(chosen, branching, length)
    noise = make_laplace(AtomDomain(int), AbsoluteDistance(), scale, rng=rng)
    levels = kary_levels(length, k) if chosen == "kary" else counter_levels(length, chosen)

    f = noise.function
    binary = "Chan–Shi–Song 2011 §3.4 Thm 3.5 (binary mechanism)"
    run: Callable[[Any], StepCounter[Any]]
    if chosen == "raw":
        run, source = (lambda data: OnlineCounter(data, length, f)), binary
    elif chosen == "honaker":
        run, source = (lambda data: HonakerCounter(data, length, f)), binary + "; Honaker 2015 (upward pass)"
    else:
        run = lambda data: KaryCounter(data, length, f, k)  # noqa: E731
        source = "Andersson–Pagh–Steiner–Torkamani 2025 (k-ary tree, negative digits; proofs: _kary_counter)"
    return Measurement(
        input_domain,
        input_metric,
        PureDP(),
        run,
        lambda d_in: noise.map(Fraction(d_in) * levels),
        interactive=True,
        node=Node(
            "online_counter",
            params=(
                ("T", str(length)),
                ("levels", str(levels)),
                ("scale", repr(scale)),
                ("estimator", chosen),
                *((("branching", str(k)),) if chosen == "kary" else ()),
            ),
            source=source,
            interaction="interactive",
        ),
    )
