"""Finite interactive mechanisms and their exact privacy loss.

A *finite interactive mechanism* on two adjacent inputs ``x0`` and ``x1`` is a finite game tree: at every
history (the sequence of ``(query, answer)`` pairs so far) the analyst picks one of finitely many queries,
and the mechanism answers with one of finitely many answers, with probabilities that depend on whether
the data is ``x0`` or ``x1``. This module stores such a tree exactly (:class:`fractions.Fraction`
probabilities) and computes its exact privacy loss

    PrivLoss(M, δ) = inf{ε ≥ 0 : M is (ε, δ)-DP on (x0, x1)}

against every adaptive adversary. By Lemma 2.2 of Vadhan–Wang (2021) deterministic adversaries suffice,
and a deterministic adversary's view is its answer sequence, so each adversary gives one pair of finite
distributions, compared exactly.

Examples:
    >>> from fractions import Fraction
    >>> rr = randomized_response(Fraction(3))        # RR_ε with e^ε = 3
    >>> exp_privacy_loss(rr, 0)
    Fraction(3, 1)
    >>> import math
    >>> math.isclose(privacy_loss(rr, 0), math.log(3))
    True
"""

from __future__ import annotations

import itertools
import math
import secrets
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from dpcompose._validation import check_finite, check_probability, check_same_length
from dpcompose.accounting._exact import Number, decimal, exact, log_up
from dpcompose.core import ApproxDP, CategoricalDomain, DiscreteDistance, Measurement, Node, PureDP, Queryable
from dpcompose.errors import InvalidParameter, SequentialityError

__all__ = [
    "ConcurrentComparison",
    "FiniteInteractiveMechanism",
    "History",
    "adversary_count",
    "compare_concurrent",
    "concurrent_composition",
    "deterministic_adversaries",
    "exp_privacy_loss",
    "privacy_loss",
    "randomized_response",
    "tightest_exp_epsilon",
]

Query = Hashable
Answer = Hashable
History = tuple[tuple[Hashable, Hashable], ...]
"""A history: the ``(query, answer)`` pairs exchanged so far, oldest first."""

Adversary = dict[History, Hashable]
"""A deterministic adversary: the query it asks at each history it can reach."""

_FLOAT_SUM_TOLERANCE = 1e-9


def _stated_delta(value: object, name: str) -> Fraction:
    """A δ the user states, in [0, 1), read as the decimal it prints as in its own type."""
    check_probability(value, name)
    return decimal(value, name)


def check_mechanism(value: object, name: str = "mechanism") -> FiniteInteractiveMechanism:
    """``value`` if it is a :class:`FiniteInteractiveMechanism`, else ``InvalidParameter`` naming it."""
    if not isinstance(value, FiniteInteractiveMechanism):
        raise InvalidParameter(f"{name}={value!r} must be a FiniteInteractiveMechanism")
    return value


def _probability(value: object, name: str) -> tuple[Fraction, bool]:
    """``value`` as an exact Fraction in [0, 1], and whether it was given as a float."""
    v = check_finite(value, name)
    if not 0 <= v <= 1:
        raise InvalidParameter(f"{name}={value!r} must lie in [0, 1]")
    return exact(v, name), isinstance(v, float)


class FiniteInteractiveMechanism:
    """An interactive mechanism with finitely many rounds, queries and answers, on inputs ``x0``, ``x1``.

    The mechanism is pure data: for every non-terminal history ``h`` it lists the queries the analyst may
    ask there, and for every query the answers with their probabilities under ``x0`` and under ``x1``.
    A history whose ``(query, answer)`` extensions are absent from the table is terminal. The rounds,
    alphabets and probabilities may differ from history to history (the concurrent composition of two
    mechanisms needs this), so the tree need not be uniform.

    Probabilities are stored as exact :class:`~fractions.Fraction`. A float is read as its exact binary
    value; if some entries at a node are floats and the node's probabilities sum to 1 only up to
    floating-point error (within 1e-9), the node is renormalised exactly by dividing by the exact sum, so
    the stored mechanism is a valid one, within 1e-9 of the input. Exact inputs (int, Fraction) must sum
    to exactly 1.

    Args:
        table: ``{history: {query: {answer: (p_x0, p_x1)}}}``; must contain the empty history ``()``,
            and every other history must extend a listed history by a listed ``(query, answer)`` pair.

    Raises:
        InvalidParameter: a probability is not a number in [0, 1], a node's probabilities do not sum to
            1, a node has no queries or a query no answers, or a history is not reachable from ``()``.

    Examples:
        >>> from fractions import Fraction as F
        >>> m = FiniteInteractiveMechanism({(): {"q": {0: (F(3, 4), F(1, 4)), 1: (F(1, 4), F(3, 4))}}})
        >>> m.rounds, m.queries(()), m.answers((), "q")
        (1, ('q',), (0, 1))
        >>> m.probability(1, (), "q", 0)
        Fraction(1, 4)
        >>> FiniteInteractiveMechanism({(): {"q": {0: (0.5, 0.5), 1: (0.6, 0.5)}}})
        Traceback (most recent call last):
        ...
        dpcompose.errors.InvalidParameter: probabilities under x0 at history=(), query='q' sum to 1.1, not 1
    """

    __slots__ = ("_leaf_probs", "_rounds", "_table", "_transcripts")

    def __init__(self, table: Mapping[History, Mapping[Query, Mapping[Answer, tuple[object, object]]]]):
        if not isinstance(table, Mapping):
            raise InvalidParameter(f"table={table!r} must be a mapping from histories to query tables")
        if () not in table:
            raise InvalidParameter("table must contain the empty history () (the first round)")
        clean: dict[History, dict[Query, dict[Answer, tuple[Fraction, Fraction]]]] = {}
        for h, node in table.items():
            if not isinstance(h, tuple):
                raise InvalidParameter(f"history={h!r} must be a tuple of (query, answer) pairs")
            if not isinstance(node, Mapping) or len(node) == 0:
                raise InvalidParameter(f"history={h!r} must map to a non-empty {{query: answers}} table")
            clean_node: dict[Query, dict[Answer, tuple[Fraction, Fraction]]] = {}
            for q, answers in node.items():
                if not isinstance(answers, Mapping) or len(answers) == 0:
                    raise InvalidParameter(
                        f"history={h!r}, query={q!r} must map to a non-empty {{answer: (p_x0, p_x1)}} table"
                    )
                clean_node[q] = self._clean_answers(h, q, answers)
            clean[h] = clean_node
        for h in clean:
            if h == ():
                continue
            parent, (q, a) = h[:-1], h[-1]
            if parent not in clean or q not in clean[parent] or a not in clean[parent][q]:
                raise InvalidParameter(
                    f"history={h!r} is not reachable: its prefix {parent!r} does not offer query {q!r} "
                    f"with answer {a!r}"
                )
        self._table = clean
        transcripts: list[History] = []
        leaf_probs: list[tuple[Fraction, Fraction]] = []
        rounds = 0
        stack: list[tuple[History, Fraction, Fraction]] = [((), Fraction(1), Fraction(1))]
        while stack:
            h, p0, p1 = stack.pop()
            node_ = clean.get(h)
            if node_ is None:
                transcripts.append(h)
                leaf_probs.append((p0, p1))
                rounds = max(rounds, len(h))
                continue
            for q, answers_ in node_.items():
                for a, (a0, a1) in answers_.items():
                    stack.append(((*h, (q, a)), p0 * a0, p1 * a1))
        self._transcripts = tuple(transcripts)
        self._leaf_probs = dict(zip(transcripts, leaf_probs, strict=True))
        self._rounds = rounds

    @staticmethod
    def _clean_answers(
        h: History, q: Query, answers: Mapping[Answer, tuple[object, object]]
    ) -> dict[Answer, tuple[Fraction, Fraction]]:
        cols: list[list[Fraction]] = [[], []]
        used_float = False
        for a, pair in answers.items():
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise InvalidParameter(
                    f"history={h!r}, query={q!r}, answer={a!r}: entry {pair!r} must be a pair (p_x0, p_x1)"
                )
            for b in (0, 1):
                p, was_float = _probability(pair[b], f"probability of answer {a!r} under x{b}")
                cols[b].append(p)
                used_float = used_float or was_float
        for b in (0, 1):
            s = sum(cols[b], Fraction(0))
            if s != 1:
                if used_float and abs(s - 1) <= _FLOAT_SUM_TOLERANCE:
                    cols[b] = [p / s for p in cols[b]]
                else:
                    raise InvalidParameter(
                        f"probabilities under x{b} at history={h!r}, query={q!r} sum to {float(s)!r}, not 1"
                    )
        return {a: (cols[0][i], cols[1][i]) for i, a in enumerate(answers)}

    @classmethod
    def from_rounds(
        cls,
        query_alphabets: Sequence[Sequence[Query]],
        answer_alphabets: Sequence[Sequence[Answer]],
        probabilities: Callable[[int, History, Query], Sequence[object]],
    ) -> FiniteInteractiveMechanism:
        """A uniform tree: round ``r`` offers ``query_alphabets[r]`` and answers ``answer_alphabets[r]``.

        Args:
            query_alphabets: the queries of each round (one sequence per round).
            answer_alphabets: the answers of each round.
            probabilities: ``probabilities(b, history, query)`` returns the probabilities of the answers
                of the current round (in alphabet order) under ``x_b``.

        Raises:
            InvalidParameter: no rounds, mismatched lengths, an empty alphabet, or bad probabilities.

        Examples:
            >>> from fractions import Fraction as F
            >>> m = FiniteInteractiveMechanism.from_rounds(
            ...     [["q"], [0, 1]], [[0, 1], [0, 1]],
            ...     lambda b, h, q: (F(1, 2), F(1, 2)) if b == 0 else (F(1, 3), F(2, 3)))
            >>> m.rounds, len(m.transcripts())
            (2, 8)
        """
        if len(query_alphabets) == 0:
            raise InvalidParameter("query_alphabets=[] must not be empty")
        if len(query_alphabets) != len(answer_alphabets):
            raise InvalidParameter(
                f"query_alphabets has {len(query_alphabets)} rounds but answer_alphabets has "
                f"{len(answer_alphabets)}: they must have the same length"
            )
        for r, (qs, as_) in enumerate(zip(query_alphabets, answer_alphabets, strict=True)):
            if len(qs) == 0 or len(as_) == 0:
                raise InvalidParameter(f"round {r} has an empty query or answer alphabet")
        table: dict[History, dict[Query, dict[Answer, tuple[object, object]]]] = {}
        frontier: list[History] = [()]
        for qs, as_ in zip(query_alphabets, answer_alphabets, strict=True):
            nxt: list[History] = []
            for h in frontier:
                node: dict[Query, dict[Answer, tuple[object, object]]] = {}
                for q in qs:
                    p0 = list(probabilities(0, h, q))
                    p1 = list(probabilities(1, h, q))
                    if len(p0) != len(as_) or len(p1) != len(as_):
                        raise InvalidParameter(
                            f"probabilities(b, {h!r}, {q!r}) must give {len(as_)} values (one per answer)"
                        )
                    node[q] = {a: (p0[i], p1[i]) for i, a in enumerate(as_)}
                    nxt.extend((*h, (q, a)) for a in as_)
                table[h] = node
            frontier = nxt
        return cls(table)

    # --- read access -------------------------------------------------------------------------------------

    @property
    def rounds(self) -> int:
        """The largest number of rounds in any transcript."""
        return self._rounds

    def histories(self) -> tuple[History, ...]:
        """The non-terminal histories (those where the analyst asks another query)."""
        return tuple(self._table)

    def is_terminal(self, history: History) -> bool:
        """Whether the interaction is over after ``history``."""
        return history not in self._table

    def queries(self, history: History) -> tuple[Query, ...]:
        """The queries the analyst may ask after ``history``."""
        return tuple(self._node(history))

    def answers(self, history: History, query: Query) -> tuple[Answer, ...]:
        """The possible answers to ``query`` after ``history``."""
        return tuple(self._answers(history, query))

    def probability(self, b: int, history: History, query: Query, answer: Answer) -> Fraction:
        """Pr[answer | history, query] when the data is ``x_b``."""
        if b not in (0, 1):
            raise InvalidParameter(f"b={b!r} must be 0 or 1")
        ans = self._answers(history, query)
        if answer not in ans:
            raise InvalidParameter(f"answer={answer!r} is not an answer to query={query!r} at {history!r}")
        return ans[answer][b]

    def transcripts(self) -> tuple[History, ...]:
        """All complete transcripts (terminal histories)."""
        return self._transcripts

    def transcript_probability(self, b: int, transcript: History) -> Fraction:
        """Pr[the answers in ``transcript`` | its queries] under ``x_b``: the product of the conditionals."""
        if b not in (0, 1):
            raise InvalidParameter(f"b={b!r} must be 0 or 1")
        pair = self._leaf_probs.get(transcript)
        if pair is None:
            raise InvalidParameter(f"transcript={transcript!r} is not a complete transcript")
        return pair[b]

    def table(self) -> dict[History, dict[Query, dict[Answer, tuple[Fraction, Fraction]]]]:
        """A copy of the exact probability table, in the form the constructor takes."""
        return {h: {q: dict(ans) for q, ans in node.items()} for h, node in self._table.items()}

    def as_measurement(
        self,
        delta: Number = 0,
        labels: tuple[Hashable, Hashable] = (0, 1),
        *,
        rng: np.random.Generator | None = None,
    ) -> Measurement[Any, Any, int, Any]:
        """This mechanism as an interactive :class:`~dpcompose.Measurement` on the two inputs ``labels``.

        The input domain is ``CategoricalDomain(labels)`` (``labels[b]`` stands for ``x_b``) with
        ``DiscreteDistance()``. The function returns a :class:`~dpcompose.Queryable` that answers one
        query per round, sampling each answer exactly (integer draws against the exact probabilities)
        and closes after the last round. The privacy map is exact: ``PureDP`` ε = PrivLoss(M, 0) when
        ``delta == 0``, else ``ApproxDP`` (PrivLoss(M, δ), δ), both rounded up.

        Args:
            delta: the δ at which the map reports ε (read as the decimal it prints as).
            labels: the two input values standing for x0 and x1.
            rng: a numpy Generator for reproducible experiments only (not private); default
                :mod:`secrets`.

        Raises:
            InvalidParameter: bad δ or labels, or PrivLoss(M, δ) is infinite (no finite map exists).

        Source: Vadhan–Wang 2021 (TCC), Definition 1.6 (interactive mechanisms); the map is
            :func:`privacy_loss`.

        Examples:
            >>> from fractions import Fraction
            >>> import numpy as np
            >>> meas = randomized_response(3).as_measurement(rng=np.random.default_rng(0))
            >>> meas.interactive, meas.map(1) == privacy_loss(randomized_response(3), 0), meas.map(0)
            (True, True, Fraction(0, 1))
            >>> q = meas(1)
            >>> q("b") in (0, 1)
            True
            >>> q("b")
            Traceback (most recent call last):
            ...
            dpcompose.errors.SequentialityError: finite_interactive is closed: the interaction is over ...
        """
        d = _stated_delta(delta, "delta")
        if not isinstance(labels, tuple) or len(labels) != 2 or labels[0] == labels[1]:
            raise InvalidParameter(f"labels={labels!r} must be a pair of two different values")
        eps = privacy_loss(self, d)
        if not isinstance(eps, Fraction):
            raise InvalidParameter(f"the mechanism is not (ε, δ)-DP for any finite ε at delta={delta!r}")
        mech = self

        def run(value: Any) -> Queryable[Hashable, Hashable]:
            return _FiniteQueryable(mech, labels.index(value), rng)

        measure: Any
        privacy_map: Callable[[int], Any]
        if d == 0:
            measure = PureDP()

            def privacy_map(d_in: int) -> Any:
                return eps if d_in >= 1 else Fraction(0)

        else:
            measure = ApproxDP()

            def privacy_map(d_in: int) -> Any:
                return (eps, d) if d_in >= 1 else (Fraction(0), Fraction(0))

        return Measurement(
            CategoricalDomain(labels),
            DiscreteDistance(),
            measure,
            run,
            privacy_map,
            interactive=True,
            node=Node(
                "finite_interactive",
                params=(("rounds", str(self._rounds)), ("delta", str(d))),
                source="Vadhan–Wang 2021 Lemma 2.2 (exact PrivLoss over deterministic adversaries)",
                interaction="interactive",
            ),
        )

    def _node(self, history: History) -> dict[Query, dict[Answer, tuple[Fraction, Fraction]]]:
        node = self._table.get(history)
        if node is None:
            raise InvalidParameter(f"history={history!r} is terminal or not a history of this mechanism")
        return node

    def _answers(self, history: History, query: Query) -> dict[Answer, tuple[Fraction, Fraction]]:
        node = self._node(history)
        if query not in node:
            raise InvalidParameter(f"query={query!r} is not offered at history={history!r}")
        return node[query]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FiniteInteractiveMechanism):
            return NotImplemented
        return self._table == other._table

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"FiniteInteractiveMechanism(rounds={self._rounds}, histories={len(self._table)}, "
            f"transcripts={len(self._transcripts)})"
        )


# --- constructors of standard mechanisms -------------------------------------------------------------


def randomized_response(exp_epsilon: Number, delta: Number = 0) -> FiniteInteractiveMechanism:
    """The one-round randomized response RR_(ε, δ) of Kairouz, Oh and Viswanath, given e^ε exactly.

    With ``δ = 0`` the answers are ``0`` and ``1``: ``b`` with probability e^ε/(1 + e^ε), else ``1 − b``.
    With ``δ > 0`` there are two more answers, ``"I am 0"`` and ``"I am 1"``: on input ``b`` the mechanism
    says ``"I am b"`` with probability δ, ``b`` with probability (1 − δ)e^ε/(1 + e^ε) and ``1 − b`` with
    probability (1 − δ)/(1 + e^ε). Input ``x_b`` is bit ``b``. ``e^ε`` is taken exactly (a float is
    read as its binary value), so a rational e^ε gives an exact mechanism; δ is read as the decimal it
    prints as.

    Source: Kairouz, Oh, Viswanath, "The Composition Theorem for Differential Privacy" (ICML 2015), the
    mechanism of their Theorem 3.3 proof; Vadhan–Wang 2021, Section 6.

    Raises:
        InvalidParameter: ``exp_epsilon < 1`` or not finite, or δ ∉ [0, 1).

    Examples:
        >>> randomized_response(3).probability(0, (), "b", 0)
        Fraction(3, 4)
        >>> randomized_response(3, 0.1).answers((), "b")
        (0, 1, 'I am 0', 'I am 1')
    """
    t = exact(check_finite(exp_epsilon, "exp_epsilon"), "exp_epsilon")
    if t < 1:
        raise InvalidParameter(f"exp_epsilon={exp_epsilon!r} must be at least 1 (ε ≥ 0)")
    d = _stated_delta(delta, "delta")
    keep, flip = (1 - d) * t / (1 + t), (1 - d) / (1 + t)
    answers: dict[Answer, tuple[object, object]] = {0: (keep, flip), 1: (flip, keep)}
    if d > 0:
        answers["I am 0"] = (d, Fraction(0))
        answers["I am 1"] = (Fraction(0), d)
    return FiniteInteractiveMechanism({(): {"b": answers}})


# --- the tightest ε between two finite distributions --------------------------------------------------


def _unit_list(values: object, name: str) -> list[Fraction]:
    if (
        isinstance(values, (str, bytes))
        or not isinstance(values, (Sequence, np.ndarray))
        or (isinstance(values, np.ndarray) and values.ndim != 1)
    ):
        raise InvalidParameter(f"{name}={values!r} must be a sequence of probabilities")
    out = []
    for i, v in enumerate(values):
        x = exact(check_finite(v, f"{name}[{i}]"), f"{name}[{i}]")
        if not 0 <= x <= 1:
            raise InvalidParameter(f"{name}[{i}]={v!r} must lie in [0, 1]")
        out.append(x)
    return out


def tightest_exp_epsilon(p: Sequence[Fraction], q: Sequence[Fraction], delta: Fraction) -> Fraction | None:
    """The least t = e^ε ≥ 1 with Σ_ω max(P(ω) − t·Q(ω), 0) ≤ δ, exactly; ``None`` if there is none.

    δ(t) = Σ max(P − tQ, 0) is continuous, convex, piecewise linear and non-increasing in t, with
    breakpoints at the ratios P(ω)/Q(ω). On the segment between two consecutive breakpoints the set
    S = {ω : P(ω)/Q(ω) > t} is fixed and δ(t) = P(S) − t·Q(S), so the crossing δ(t) = δ is the rational
    t = (P(S) − δ)/Q(S). We walk the breakpoints from the largest ratio down and solve on the first
    segment whose lower end has δ(t) > δ. If the outcomes with Q = 0 already carry more than δ of P's
    mass, no finite ε works. One direction only (P against Q); PrivLoss takes the larger of both.

    Cost: O(n log n) exact operations for n outcomes.

    Source: the (ε, δ) condition for finite distributions (Dwork–Roth 2014, Def. 2.4; the "privacy
    profile" δ(ε) = Σ max(P − e^ε Q, 0) of Balle, Barthe, Gaboardi 2018, Thm 1).

    Args:
        p: probabilities of the outcomes under the first distribution.
        q: probabilities of the same outcomes under the second.
        delta: the δ allowed, exact.

    Examples:
        >>> from fractions import Fraction as F
        >>> tightest_exp_epsilon([F(3, 4), F(1, 4)], [F(1, 4), F(3, 4)], F(0))
        Fraction(3, 1)
        >>> tightest_exp_epsilon([F(1, 2), F(1, 2)], [F(1), F(0)], F(1, 4)) is None
        True
    """
    ps = _unit_list(p, "p")
    qs = _unit_list(q, "q")
    check_same_length(ps, "p", qs, "q")
    delta = exact(check_probability(delta, "delta"), "delta")
    p, q = ps, qs
    inf_mass = Fraction(0)
    finite: list[tuple[Fraction, Fraction, Fraction]] = []  # (ratio, P, Q) with ratio > 1
    for pi, qi in zip(p, q, strict=True):
        if pi == 0:
            continue
        if qi == 0:
            inf_mass += pi
        elif pi > qi:
            finite.append((pi / qi, pi, qi))
    if inf_mass > delta:
        return None
    finite.sort(key=lambda e: e[0], reverse=True)
    # Group equal ratios; walk segments [r_k, r_{k-1}] from the top.
    p_s, q_s = inf_mass, Fraction(0)  # P(S), Q(S) for S = outcomes with ratio > current segment
    i = 0
    n = len(finite)
    while i < n:
        r = finite[i][0]
        # δ at t = r, with S = outcomes of ratio > r (those of ratio r contribute 0)
        if p_s - r * q_s > delta:
            # crossing lies in (r, previous ratio]: solve p_s − t·q_s = δ (q_s > 0 by continuity)
            return (p_s - delta) / q_s
        while i < n and finite[i][0] == r:
            p_s += finite[i][1]
            q_s += finite[i][2]
            i += 1
    if p_s - q_s > delta:  # δ(1) > δ: the crossing lies in (1, smallest ratio]
        return (p_s - delta) / q_s
    return Fraction(1)


# --- adversaries -------------------------------------------------------------------------------------


def _signatures(m: FiniteInteractiveMechanism) -> dict[tuple[History, Query], int]:
    """Intern the subtree under each (history, query): equal ids ⇔ equivalent queries.

    Two queries at a history are equivalent when the subtrees below them are equal up to relabelling the
    answers: every adversary using one has a twin using the other whose view is the same pair of
    distributions up to a bijection of outcomes, which leaves δ(ε) unchanged.
    """
    ids: dict[object, int] = {}
    node_sig: dict[History, int] = {}
    query_sig: dict[tuple[History, Query], int] = {}

    def intern(key: object) -> int:
        if key not in ids:
            ids[key] = len(ids)
        return ids[key]

    def visit(h: History) -> int:
        if h in node_sig:
            return node_sig[h]
        if m.is_terminal(h):
            node_sig[h] = intern(("leaf",))
            return node_sig[h]
        qsigs = []
        for q in m.queries(h):
            parts = sorted((pa[0], pa[1], visit((*h, (q, a)))) for a, pa in m._answers(h, q).items())
            query_sig[(h, q)] = intern(("query", tuple(parts)))
            qsigs.append(query_sig[(h, q)])
        node_sig[h] = intern(("node", tuple(sorted(set(qsigs)))))
        return node_sig[h]

    visit(())
    return query_sig


def _pruned_queries(m: FiniteInteractiveMechanism) -> dict[History, tuple[Query, ...]]:
    """At each history, one representative query per equivalence class."""
    sig = _signatures(m)
    out: dict[History, tuple[Query, ...]] = {}
    for h in m.histories():
        seen: set[int] = set()
        reps: list[Query] = []
        for q in m.queries(h):
            s = sig[(h, q)]
            if s not in seen:
                seen.add(s)
                reps.append(q)
        out[h] = tuple(reps)
    return out


def deterministic_adversaries(mechanism: FiniteInteractiveMechanism) -> Iterator[Adversary]:
    """Every deterministic adversary, up to equivalence, as ``{history: query}`` on the histories it reaches.

    Pruning: (1) histories of probability 0 under both ``x0`` and ``x1`` are never part of a view, so
    the adversary's choice there is fixed to the first query; (2) queries whose subtrees are equal up to
    relabelling answers are interchangeable, so one per class is kept. Without equivalences, a uniform
    mechanism with query alphabets Q_1..Q_r and answer alphabets A_1..A_r has
    Π_r |Q_r|^(|A_1|···|A_(r−1)|) adversaries (the count grows doubly exponentially in the rounds).

    Source: Vadhan–Wang 2021, Lemma 2.2 (deterministic adversaries suffice for privacy).

    Examples:
        >>> m = randomized_response(3)
        >>> list(deterministic_adversaries(m))
        [{(): 'b'}]
    """
    check_mechanism(mechanism)
    reps = _pruned_queries(mechanism)

    def expand(h: History, p0: Fraction, p1: Fraction) -> Iterator[Adversary]:
        if mechanism.is_terminal(h):
            yield {}
            return
        choices = reps[h] if (p0 > 0 or p1 > 0) else reps[h][:1]
        for q in choices:
            kids = [
                list(expand((*h, (q, a)), p0 * a0, p1 * a1))
                for a, (a0, a1) in mechanism._answers(h, q).items()
            ]
            for combo in itertools.product(*kids):
                adv: Adversary = {h: q}
                for part in combo:
                    adv.update(part)
                yield adv

    yield from expand((), Fraction(1), Fraction(1))


def adversary_count(mechanism: FiniteInteractiveMechanism) -> int:
    """How many adversaries :func:`deterministic_adversaries` yields, computed without listing them.

    Examples:
        >>> m = FiniteInteractiveMechanism.from_rounds(
        ...     [["u"], ["v", "w"]], [[0, 1], [0, 1]],
        ...     lambda b, h, q: (0.5, 0.5) if q != "w" else ((0.25, 0.75) if b else (0.75, 0.25)))
        >>> adversary_count(m)  # 1 · 2^2
        4
    """
    check_mechanism(mechanism)
    reps = _pruned_queries(mechanism)

    def count(h: History, p0: Fraction, p1: Fraction) -> int:
        if mechanism.is_terminal(h):
            return 1
        choices = reps[h] if (p0 > 0 or p1 > 0) else reps[h][:1]
        total = 0
        for q in choices:
            prod = 1
            for a, (a0, a1) in mechanism._answers(h, q).items():
                prod *= count((*h, (q, a)), p0 * a0, p1 * a1)
            total += prod
        return total

    return count((), Fraction(1), Fraction(1))


def _view(
    m: FiniteInteractiveMechanism, adversary: Mapping[History, Query]
) -> tuple[list[Fraction], list[Fraction]]:
    """The adversary's view under x0 and x1: probabilities of its reachable transcripts."""
    v0: list[Fraction] = []
    v1: list[Fraction] = []
    stack: list[tuple[History, Fraction, Fraction]] = [((), Fraction(1), Fraction(1))]
    while stack:
        h, p0, p1 = stack.pop()
        if m.is_terminal(h):
            v0.append(p0)
            v1.append(p1)
            continue
        q = adversary[h] if h in adversary else m.queries(h)[0]
        for a, (a0, a1) in m._answers(h, q).items():
            stack.append(((*h, (q, a)), p0 * a0, p1 * a1))
    return v0, v1


def _best_response(m: FiniteInteractiveMechanism, t: Fraction, direction: int) -> tuple[Fraction, Adversary]:
    """max over deterministic adversaries of Σ_views max(P − t·Q, 0), by backward induction.

    ``direction`` 0 compares x0 against x1, 1 compares x1 against x0. The sum over an adversary's leaves
    splits over the tree, so the best query at each history is the one whose subtree sum is largest.
    """
    adv: Adversary = {}

    def value(h: History, p0: Fraction, p1: Fraction) -> Fraction:
        if m.is_terminal(h):
            p, q = (p0, p1) if direction == 0 else (p1, p0)
            d = p - t * q
            return d if d > 0 else Fraction(0)
        if p0 == 0 and p1 == 0:
            return Fraction(0)
        best: Fraction | None = None
        best_q: Query = None
        for q_ in m.queries(h):
            s = Fraction(0)
            for a, (a0, a1) in m._answers(h, q_).items():
                s += value((*h, (q_, a)), p0 * a0, p1 * a1)
            if best is None or s > best:
                best, best_q = s, q_
        adv[h] = best_q
        assert best is not None
        return best

    return value((), Fraction(1), Fraction(1)), adv


def _exp_loss_one_direction(m: FiniteInteractiveMechanism, d: Fraction, direction: int) -> Fraction | None:
    t = Fraction(1)
    for _ in range(10**9):  # terminates: each pass finds a new adversary (see exp_privacy_loss)
        value, adv = _best_response(m, t, direction)
        if value <= d:
            return t
        v0, v1 = _view(m, adv)
        p, q = (v0, v1) if direction == 0 else (v1, v0)
        t_new = tightest_exp_epsilon(p, q, d)
        if t_new is None:
            return None
        assert t_new > t
        t = t_new
    raise AssertionError("unreachable")  # pragma: no cover


def exp_privacy_loss(
    mechanism: FiniteInteractiveMechanism,
    delta: Number,
    method: Literal["best-response", "enumerate"] = "best-response",
) -> Fraction | None:
    """e^PrivLoss(M, δ), exactly: the least t = e^ε ≥ 1 such that M is (ln t, δ)-DP; ``None`` if none.

    For an adversary A let δ_A(t) = Σ_views max(P_A − t·Q_A, 0) (both directions); M is (ln t, δ)-DP
    iff D(t) = max_A δ_A(t) ≤ δ. Two exact methods:

    * ``"enumerate"`` lists the deterministic adversaries (:func:`deterministic_adversaries`, pruned)
      and takes the largest tightest t over their views. Cost: N_adv · L exact operations, with
      N_adv ≤ Π_r |Q_r|^(|A_1|···|A_(r−1)|) adversaries and L = |A_1|···|A_r| leaves per view.
    * ``"best-response"`` (default) never lists them. Start at t₀ = 1. While D(tᵢ) > δ, take an
      adversary Aᵢ attaining D(tᵢ) (found by backward induction over the tree, cost O(T) for T tree
      nodes, T ≤ Σ_r Π_(s≤r) |Q_s||A_s|) and let t_(i+1) be the least t with δ_(Aᵢ)(t) ≤ δ. Then
      t_(i+1) > tᵢ (since δ_(Aᵢ)(tᵢ) > δ), t_(i+1) ≤ t* (since D ≥ δ_(Aᵢ)), and Aᵢ differs from every
      earlier A_j (δ_(A_j)(t_(i)) ≤ δ_(A_j)(t_(j+1)) ≤ δ). So the loop ends, after at most N_adv passes
      and usually two or three, at tᵢ = t* exactly.

    Source: Vadhan–Wang, "Concurrent Composition of Differential Privacy" (TCC 2021), Definition of
    interactive (ε, δ)-DP and Lemma 2.2 (deterministic adversaries suffice).

    Args:
        mechanism: the mechanism.
        delta: δ ∈ [0, 1), read as the decimal it prints as.
        method: ``"best-response"`` or ``"enumerate"``; both are exact and agree.

    Raises:
        InvalidParameter: δ ∉ [0, 1) or an unknown method.

    Examples:
        >>> exp_privacy_loss(randomized_response(3, 0.125), 0.125)
        Fraction(3, 1)
        >>> exp_privacy_loss(randomized_response(3, 0.125), 0) is None
        True
    """
    check_mechanism(mechanism)
    d = _stated_delta(delta, "delta")
    if not isinstance(method, str) or method not in ("best-response", "enumerate"):
        raise InvalidParameter(f"method={method!r} must be 'best-response' or 'enumerate'")
    if method == "best-response":
        results = [_exp_loss_one_direction(mechanism, d, direction) for direction in (0, 1)]
    elif method == "enumerate":
        results = []
        for direction in (0, 1):
            worst: Fraction | None = Fraction(1)
            for adv in deterministic_adversaries(mechanism):
                v0, v1 = _view(mechanism, adv)
                p, q = (v0, v1) if direction == 0 else (v1, v0)
                t = tightest_exp_epsilon(p, q, d)
                if t is None:
                    worst = None
                    break
                assert worst is not None
                worst = max(worst, t)
            results.append(worst)
    else:
        raise InvalidParameter(f"method={method!r} must be 'best-response' or 'enumerate'")
    if any(r is None for r in results):
        return None
    return max(r for r in results if r is not None)


def privacy_loss(
    mechanism: FiniteInteractiveMechanism,
    delta: Number,
    method: Literal["best-response", "enumerate"] = "best-response",
) -> Fraction | float:
    """PrivLoss(M, δ) = inf{ε ≥ 0 : M is (ε, δ)-DP}, rounded up to a Fraction; ``math.inf`` if none.

    Computes e^PrivLoss exactly with :func:`exp_privacy_loss` and returns an upper bound on its natural
    logarithm within a few ulps (outward rounding); use :func:`exp_privacy_loss` for the exact value.

    Source: Vadhan–Wang 2021 (TCC), interactive (ε, δ)-DP and Lemma 2.2; see :func:`exp_privacy_loss`.

    Examples:
        >>> import math
        >>> from fractions import Fraction
        >>> eps = privacy_loss(randomized_response(Fraction(3, 2)), 0)
        >>> math.log(1.5) <= eps <= math.log(1.5) * (1 + 1e-12)
        True
        >>> privacy_loss(randomized_response(3, 0.25), 0)
        inf
    """
    t = exp_privacy_loss(mechanism, delta, method)
    if t is None:
        return math.inf
    if t == 1:
        return Fraction(0)
    return max(Fraction(0), Fraction(log_up(t)))


# --- concurrent composition ---------------------------------------------------------------------------


def concurrent_composition(
    first: FiniteInteractiveMechanism, second: FiniteInteractiveMechanism
) -> FiniteInteractiveMechanism:
    """The concurrent composition of two finite mechanisms: the analyst interleaves queries at will.

    At each step the analyst sends ``(1, q)`` to ask the first mechanism ``q`` (if it is not finished)
    or ``(2, q)`` to ask the second; the answer is the addressed mechanism's answer. Both mechanisms run
    on the same side (``x0`` for both, or ``x1`` for both) with independent coins. The interaction ends
    when both are finished, so every order of the two mechanisms' rounds is available to the adversary
    (Vadhan–Wang 2021, Definition 1.6 and Figure 2).

    Source: Vadhan–Wang 2021 (TCC), Definition 1.6 (concurrent composition).

    Examples:
        >>> c = concurrent_composition(randomized_response(3), randomized_response(2))
        >>> c.rounds, sorted(c.queries(()))
        (2, [(1, 'b'), (2, 'b')])
        >>> exp_privacy_loss(c, 0)
        Fraction(6, 1)
    """
    table: dict[History, dict[Query, dict[Answer, tuple[object, object]]]] = {}

    def build(h: History, h1: History, h2: History) -> None:
        node: dict[Query, dict[Answer, tuple[object, object]]] = {}
        entries: list[tuple[int, Query, tuple[Answer, ...]]] = []
        for idx, (mech, sub) in enumerate(((first, h1), (second, h2)), start=1):
            if mech.is_terminal(sub):
                continue
            for q in mech.queries(sub):
                node[(idx, q)] = dict(mech._answers(sub, q))
                entries.append((idx, q, mech.answers(sub, q)))
        if not node:
            return
        table[h] = node
        for idx, q, answers in entries:
            for a in answers:
                if idx == 1:
                    build((*h, ((idx, q), a)), (*h1, (q, a)), h2)
                else:
                    build((*h, ((idx, q), a)), h1, (*h2, (q, a)))

    check_mechanism(first, "first")
    check_mechanism(second, "second")
    build((), (), ())
    return FiniteInteractiveMechanism(table)


@dataclass(frozen=True)
class ConcurrentComparison:
    """Exact PrivLoss of a concurrent composition beside the bounds a combinator may claim.

    All ε are upper bounds rounded outward from exact values of e^ε (``exp_*`` fields, exact).

    Attributes:
        eps1: PrivLoss(M1, δ1).
        eps2: PrivLoss(M2, δ2).
        delta: δ_g of Theorem 1.8 with the better of the two orders, min(δ1 + e^ε1·δ2, δ2 + e^ε2·δ1).
        exact: PrivLoss(M1 ∥ M2, δ_g), the true loss of the concurrent composition.
        optimal: the optimal (ε, δ) composition of (ε1, δ1) and (ε2, δ2) at δ_g.
        theorem_1_8: ε1 + ε2, Theorem 1.8's ε at δ_g.
        exp_exact: e^exact, exact (``None`` if infinite).
        exp_optimal: e^optimal, exact.
        exp_theorem_1_8: e^(ε1 + ε2), exact.
    """

    eps1: Fraction
    eps2: Fraction
    delta: Fraction
    exact: Fraction | float
    optimal: Fraction
    theorem_1_8: Fraction
    exp_exact: Fraction | None
    exp_optimal: Fraction
    exp_theorem_1_8: Fraction


def _log_up_exact(t: Fraction) -> Fraction:
    return Fraction(0) if t == 1 else max(Fraction(0), Fraction(log_up(t)))


def compare_concurrent(
    first: FiniteInteractiveMechanism,
    second: FiniteInteractiveMechanism,
    delta1: Number,
    delta2: Number,
) -> ConcurrentComparison:
    """PrivLoss of the concurrent composition M1 ∥ M2 beside Theorem 1.8 and optimal composition.

    With ε_i = PrivLoss(M_i, δ_i) (exact e^ε_i), Theorem 1.8 of Vadhan–Wang gives
    (ε1 + ε2, δ_g) for δ_g = min over the two orders of δ_σ(1) + e^ε_σ(1)·δ_σ(2); the optimal composition
    theorem (valid concurrently by Vadhan–Zhang 2023 / Lyu 2022) gives the least ε with the composition
    of RR_(ε1, δ1) and RR_(ε2, δ2) being (ε, δ_g)-DP — computed here exactly, as the PrivLoss of that
    product of two finite mechanisms (it dominates every pair of (ε_i, δ_i)-DP mechanisms: Kairouz–Oh–
    Viswanath 2015, Thm 3.3). Always exact ≤ optimal ≤ Theorem 1.8.

    Source: Vadhan–Wang 2021 (TCC) Thm 1.8 / 4.1; Kairouz–Oh–Viswanath 2015 Thm 3.3 and Murtagh–Vadhan
        2016 (optimal composition); Vadhan–Zhang 2023 Thm 1.3 (it holds concurrently).

    Raises:
        InvalidParameter: a bad δ, or some PrivLoss(M_i, δ_i) is infinite.

    Examples:
        >>> c = compare_concurrent(randomized_response(3, 0.05), randomized_response(3, 0.05), 0.05, 0.05)
        >>> c.delta, c.exp_theorem_1_8, c.exp_optimal, c.exp_exact
        (Fraction(1, 5), Fraction(9, 1), Fraction(2593, 361), Fraction(2593, 361))
    """
    check_mechanism(first, "first")
    check_mechanism(second, "second")
    d1 = _stated_delta(delta1, "delta1")
    d2 = _stated_delta(delta2, "delta2")
    t1 = exp_privacy_loss(first, d1)
    t2 = exp_privacy_loss(second, d2)
    if t1 is None or t2 is None:
        raise InvalidParameter(
            f"PrivLoss is infinite for a mechanism at its δ (delta1={delta1!r}, delta2={delta2!r})"
        )
    dg = min(d1 + t1 * d2, d2 + t2 * d1)
    if dg >= 1:
        raise InvalidParameter(f"Theorem 1.8's δ = {dg} is not below 1; nothing to compare")
    t_exact = exp_privacy_loss(concurrent_composition(first, second), dg)
    t_opt = exp_privacy_loss(
        concurrent_composition(randomized_response(t1, d1), randomized_response(t2, d2)), dg
    )
    assert t_opt is not None
    return ConcurrentComparison(
        eps1=_log_up_exact(t1),
        eps2=_log_up_exact(t2),
        delta=dg,
        exact=math.inf if t_exact is None else _log_up_exact(t_exact),
        optimal=_log_up_exact(t_opt),
        theorem_1_8=_log_up_exact(t1 * t2),
        exp_exact=t_exact,
        exp_optimal=t_opt,
        exp_theorem_1_8=t1 * t2,
    )


def _uniform_below(n: int, rng: np.random.Generator | None) -> int:
    """A uniform integer in [0, n), exactly, for any n ≥ 1 (rejection sampling on 32-bit chunks)."""
    if rng is None:
        return secrets.randbelow(n)
    bits = max(1, (n - 1).bit_length())
    while True:
        x = 0
        for _ in range((bits + 31) // 32):
            x = (x << 32) | int(rng.integers(0, 2**32))
        x >>= (-bits) % 32
        if x < n:
            return x


class _FiniteQueryable(Queryable[Hashable, Hashable]):
    """A live run of a finite interactive mechanism on input x_b."""

    def __init__(self, mech: FiniteInteractiveMechanism, b: int, rng: np.random.Generator | None) -> None:
        super().__init__(name="finite_interactive")
        self._mech = mech
        self._b = b
        self._rng = rng
        self._history: History = ()

    def _answer(self, query: Hashable) -> Hashable:
        node = self._mech._table.get(self._history)
        if node is None:  # pragma: no cover - closed after the last round
            raise SequentialityError("the mechanism's rounds are used up")
        if query not in node:
            raise InvalidParameter(
                f"query={query!r} is not offered after history={self._history!r}; offered: {list(node)!r}"
            )
        answers = node[query]
        probs = [pair[self._b] for pair in answers.values()]
        den = math.lcm(*(p.denominator for p in probs))
        draw = _uniform_below(den, self._rng)
        acc = 0
        chosen: Hashable = next(iter(answers))
        for a, p in zip(answers, probs, strict=True):
            acc += p.numerator * (den // p.denominator)
            if draw < acc:
                chosen = a
                break
        self._history = (*self._history, (query, chosen))
        if self._mech.is_terminal(self._history):
            self.close(f"the interaction is over after {len(self._history)} rounds")
        return chosen
