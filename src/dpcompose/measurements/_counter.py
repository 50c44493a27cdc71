"""The online counter: the binary mechanism's running counts released one step at a time.

Chan, Shi, Song 2011, "Private and continual release of statistics" (ACM TISSEC 14(3)), §3.4 (the binary
mechanism, Theorem 3.5 for its privacy): the stream's dyadic interval sums (p-sums), each with its own
Laplace noise; the running count after step ``t`` is the sum of the at most ``⌈log₂T⌉ + 1`` noisy p-sums of
the dyadic decomposition of ``[0, t]``, each drawn the first time it is needed, once.

Privacy (proof). Every answer is a function of the noisy p-sums, so the whole transcript, whatever steps are
asked, is a post-processing of the full noisy tree ``W·x + Z`` (``Z`` independent discrete Laplace of
``scale`` per node; drawing a node's noise lazily and reusing it gives the same joint distribution). ``W·x``
has L1 sensitivity ``d·L`` for input distance ``d`` (``L = ⌈log₂T⌉ + 1``; the proof is in
:mod:`dpcompose.transformations._tree`), so the loss is that of the discrete Laplace mechanism at
sensitivity ``d·L``: ``ε = d·L/scale`` (Ghosh–Roughgarden–Sundararajan 2009). It is charged in full when
the counter is created; the steps are asked afterwards for free. Each step's count is clamped to
``±⌊2**62/P⌋`` first, as in the tree (1-Lipschitz per step, so the sensitivity holds for every member of
the domain).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

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
from dpcompose.measurements._laplace import make_laplace
from dpcompose.transformations._tree import MAX_LEAVES, check_step_counts, clamped_steps, tree_shape

__all__ = ["checked_step", "make_online_counter"]


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


class OnlineCounter(Queryable[int, int]):
    """Answers step ``t`` (at most one past the last asked) with the noisy running count through ``t``."""

    def __init__(self, data: Any, length: int, noise: Any) -> None:
        super().__init__(name="online counter")
        self._length = length
        self._padded, self._levels = tree_shape(length)
        self._values: list[int] = clamped_steps(data, self._padded).tolist()
        self._noise = noise
        self._nodes: dict[tuple[int, int], int] = {}
        self._answers: list[int] = []

    def _status(self) -> str:
        return f"{len(self._answers)} of {self._length} steps released"

    def _node(self, level: int, index: int) -> int:
        """The noisy p-sum of node ``index`` of ``level`` (drawn once, on first use)."""
        key = (level, index)
        if key not in self._nodes:
            size = self._padded >> level
            total = sum(self._values[index * size : (index + 1) * size])
            self._nodes[key] = int(self._noise(total))
        return self._nodes[key]

    def _answer(self, query: int) -> int:
        step = checked_step(query, len(self._answers), self._length)
        if step < len(self._answers):
            return self._answers[step]  # the same release again: no new noise
        n, total = step + 1, 0
        for level in range(self._levels):
            shift = self._levels - 1 - level  # node size 2**shift
            if (n >> shift) & 1:
                total += self._node(level, (n >> shift) - 1)
        self._answers.append(total)
        return total


@recorded
def make_online_counter(
    input_domain: Domain,
    input_metric: Metric,
    scale: float,
    *,
    rng: np.random.Generator | None = None,
) -> Measurement[Any, Any, Any, Fraction]:
    """An online counter (the binary mechanism): a queryable releasing the running count after each step.

    Ask the steps in order: ``counter(t)`` returns ``x_0 + … + x_t`` plus the sum of the discrete Laplace
    noises of the at most ``L = ⌈log₂T⌉ + 1`` dyadic p-sums that make up ``[0, t]``, each p-sum noised once,
    when first needed, and reading only the steps it covers. Asking a step again returns the same answer;
    asking one more than one step ahead is refused (nothing is run). Each answer is an ``int``.

    Privacy map (charged at construction; proof in the module docstring): ``ε = d_in·L/scale`` under
    ``L1Distance`` on the per-step counts — event-level neighbours: an event of weight at most ``c`` is
    ``d_in = c``. Each answer sums at most ``L`` noises of variance ``2·scale²``, so its standard
    deviation is at most ``scale·√(2L)``; ``scale = L/ε`` costs ε per unit of ``d_in``.

    Args:
        input_domain: ``VectorDomain(AtomDomain(int), size=T)`` — the count at each step, ``1 ≤ T ≤ 2**24``.
        input_metric: ``L1Distance()``.
        scale: the discrete Laplace scale of each p-sum's noise (positive, finite, at most 2**50).
        rng: a seeded numpy Generator for reproducible, NOT private, noise (default: the secure source).

    Raises:
        DomainMismatch: the domain is not a sized vector of ``int``, or the metric is not ``L1Distance()``.
        InvalidParameter: ``scale`` not positive and finite; ``T`` above 2**24; (when asked) a step out of
            order.

    Source: Chan, Shi, Song 2011, "Private and continual release of statistics", §3.4, Theorem 3.5 (the
    binary mechanism); Dwork, Naor, Pitassi, Rothblum 2010 §4; Ghosh–Roughgarden–Sundararajan 2009 (the
    discrete Laplace mechanism's ε = Δ/scale).

    Examples:
        >>> import dpcompose as dp
        >>> steps = dp.VectorDomain(dp.AtomDomain(int), size=8)
        >>> counter = dp.m.make_online_counter(steps, dp.L1Distance(), scale=4.0)
        >>> counter.map(1)       # 4 levels over scale 4: ε = 1 for all 8 running counts
        Fraction(1, 1)
        >>> q = counter([5, 0, 2, 7, 1, 1, 0, 3])
        >>> [type(q(t)).__name__ for t in range(3)]
        ['int', 'int', 'int']
    """
    length = check_step_counts(input_domain, input_metric)
    if not 1 <= length <= MAX_LEAVES:
        raise InvalidParameter(f"input_domain has size {length}: the stream length must be 1 … 2**24")
    noise = make_laplace(AtomDomain(int), AbsoluteDistance(), scale, rng=rng)
    _, levels = tree_shape(length)

    def run(data: Any) -> OnlineCounter:
        return OnlineCounter(data, length, noise.function)

    return Measurement(
        input_domain,
        input_metric,
        PureDP(),
        run,
        lambda d_in: noise.map(Fraction(d_in) * levels),
        interactive=True,
        node=Node(
            "online_counter",
            params=(("T", str(length)), ("levels", str(levels)), ("scale", repr(scale))),
            source="Chan–Shi–Song 2011 §3.4 Thm 3.5 (binary mechanism)",
            interaction="interactive",
        ),
    )
