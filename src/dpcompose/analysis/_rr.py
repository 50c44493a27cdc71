"""Every pure-DP interactive mechanism is an interactive post-processing of randomized response.

Vadhan and Wang (2021, Theorem 1.10 / 5.4) show that an ε-DP interactive mechanism M on adjacent inputs
x0, x1 can be simulated as T(RR_ε(b)): randomized response on the bit b, followed by an interactive
mechanism T that sees only RR's output and answers the analyst. :func:`rr_simulator` builds T exactly for
a :class:`~dpcompose.analysis._finite.FiniteInteractiveMechanism` and checks, in exact rational
arithmetic, that the analyst's view is the same for every deterministic adversary.

The construction (derived and proved here; it is the finite form of the paper's equations 6–9). Write
t = e^ε and, for a history h = ((q_1, a_1), …, (q_k, a_k)), p_b(h) = Π_i Pr[a_i | (q, a)_<i, q_i; x_b],
the probability that M(x_b) gives h's answers to h's queries. RR_ε outputs c = b with probability
t/(1 + t) and c = 1 − b with probability 1/(1 + t). Define, for c ∈ {0, 1},

    Q_c(h) = (t·p_c(h) − p_(1−c)(h)) / (t − 1),                                        (1)

and let T(c) answer query q after history h with answer a with probability

    T_c(a | h, q) = Q_c(h·(q, a)) / Q_c(h)          (any fixed distribution if Q_c(h) = 0).   (2)

Claim: if M is ε-DP then (i) T_c is a valid interactive mechanism and (ii) for every adversary A and
b ∈ {0, 1}, View⟨A, M(x_b)⟩ = View⟨A, T(RR_ε(b))⟩.

Proof. (i) M is ε-DP iff p_0(τ) ≤ t·p_1(τ) and p_1(τ) ≤ t·p_0(τ) for every complete transcript τ
(each τ is the view of the deterministic adversary that asks τ's queries, and pure DP of a finite view is
a pointwise ratio bound). Hence Q_c(τ) ≥ 0 on complete transcripts. For any history h and query q,
Σ_a p_b(h·(q, a)) = p_b(h), so Σ_a Q_c(h·(q, a)) = Q_c(h) by linearity; by induction from the leaves
Q_c(h) ≥ 0 everywhere, and (2) sums to 1. With Q_c(()) = (t − 1)/(t − 1) = 1, the probability that T_c
produces the answers of h to h's queries telescopes to Q_c(h). (ii) By Lemma 2.2 it suffices to take A
deterministic; then A's view is the answer sequence, and the view equals transcript τ with probability
p_b(τ) under M(x_b) and, under T(RR_ε(b)), with probability
    (t·Q_b(τ) + Q_(1−b)(τ)) / (1 + t)
      = (t²·p_b − t·p_(1−b) + t·p_(1−b) − p_b) / ((t − 1)(t + 1)) = p_b(τ).
For t = 1 (ε = 0), p_0 = p_1 and T_c = M(x_0) for both c. ∎

Examples:
    >>> from fractions import Fraction
    >>> from dpcompose.analysis._finite import randomized_response
    >>> sim = rr_simulator(randomized_response(Fraction(3, 2)), 3)
    >>> sim
    RRSimulation(exp_epsilon=3, epsilon≈1.09862, views equal for 1 adversaries and 2 transcripts)
    >>> sim.post_processor.probability(0, (), "b", 0)   # T(0) says 0 with probability (3·3/5 − 2/5)/2
    Fraction(7, 10)
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from fractions import Fraction

from dpcompose._validation import check_finite
from dpcompose.accounting._display import format_up
from dpcompose.accounting._exact import Number, exact, log_up
from dpcompose.analysis._finite import (
    FiniteInteractiveMechanism,
    History,
    check_mechanism,
    deterministic_adversaries,
)
from dpcompose.errors import InvalidParameter

__all__ = ["RRSimulation", "rr_simulator"]


@dataclass(frozen=True)
class RRSimulation:
    """The result of :func:`rr_simulator`: T, and what was checked.

    Attributes:
        exp_epsilon: e^ε of the randomized response RR_ε that T post-processes.
        post_processor: T as a finite interactive mechanism whose "input x_c" is RR's output c.
        adversaries_checked: deterministic adversaries (pruned) whose views were compared exactly.
        transcripts_checked: complete transcripts compared exactly (every adversary's view is made of
            these, so this check covers all adversaries, pruned or not).
    """

    exp_epsilon: Fraction
    post_processor: FiniteInteractiveMechanism
    adversaries_checked: int
    transcripts_checked: int

    def __repr__(self) -> str:
        return (
            f"RRSimulation(exp_epsilon={self.exp_epsilon}, epsilon≈{format_up(log_up(self.exp_epsilon))}, "
            f"views equal for {self.adversaries_checked} adversaries and "
            f"{self.transcripts_checked} transcripts)"
        )


def _rr_mix(t: Fraction, b: int, q_b: Fraction, q_other: Fraction) -> Fraction:
    """Pr[view] under T(RR(b)) given T(b)'s and T(1 − b)'s probabilities of that view."""
    return (t * q_b + q_other) / (1 + t)


def rr_simulator(mechanism: FiniteInteractiveMechanism, exp_epsilon: Number) -> RRSimulation:
    """Build T with M(x_b) ≡ T(RR_ε(b)) for a pure ε-DP finite mechanism, and check it exactly.

    Args:
        mechanism: the finite interactive mechanism M.
        exp_epsilon: e^ε, exact (a rational such as ``Fraction(3)``; a float is read as its binary
            value). :func:`~dpcompose.analysis._finite.exp_privacy_loss` ``(M, 0)`` gives the least one.

    Returns:
        The post-processor T and the counts of what was checked.

    Raises:
        InvalidParameter: ``exp_epsilon < 1`` or not finite, or M is not ln(exp_epsilon)-DP (the error
            names a transcript whose probability ratio exceeds e^ε).
        AssertionError: a view differs (would mean a bug in this module; never observed).

    Source: Vadhan–Wang, "Concurrent Composition of Differential Privacy" (TCC 2021), Theorem 1.10 /
        Theorem 5.4 and equations 6–9; the finite construction and its proof are in this module's
        docstring.

    Examples:
        >>> from fractions import Fraction
        >>> from dpcompose.analysis._finite import randomized_response
        >>> rr_simulator(randomized_response(3), 2)
        Traceback (most recent call last):
        ...
        dpcompose.errors.InvalidParameter: mechanism is not ln(2)-DP: transcript ... has probabilities ...
    """
    m = check_mechanism(mechanism)
    t = exact(check_finite(exp_epsilon, "exp_epsilon"), "exp_epsilon")
    if t < 1:
        raise InvalidParameter(f"exp_epsilon={exp_epsilon!r} must be at least 1 (ε ≥ 0)")
    for tau in m.transcripts():
        p0, p1 = m.transcript_probability(0, tau), m.transcript_probability(1, tau)
        if p0 > t * p1 or p1 > t * p0:
            raise InvalidParameter(
                f"mechanism is not ln({t})-DP: transcript {tau!r} has probabilities {p0} under x0 and "
                f"{p1} under x1, a ratio above e^ε = exp_epsilon = {t}"
            )

    def big_q(c: int, p0: Fraction, p1: Fraction) -> Fraction:
        if t == 1:
            return p0
        pc, po = (p0, p1) if c == 0 else (p1, p0)
        return (t * pc - po) / (t - 1)

    table: dict[History, dict[Hashable, dict[Hashable, tuple[object, object]]]] = {}
    stack: list[tuple[History, Fraction, Fraction]] = [((), Fraction(1), Fraction(1))]
    while stack:
        h, p0, p1 = stack.pop()
        if m.is_terminal(h):
            continue
        qh = (big_q(0, p0, p1), big_q(1, p0, p1))
        node: dict[Hashable, dict[Hashable, tuple[object, object]]] = {}
        for q in m.queries(h):
            answers: dict[Hashable, tuple[object, object]] = {}
            for a in m.answers(h, q):
                a0, a1 = m.probability(0, h, q, a), m.probability(1, h, q, a)
                c0, c1 = p0 * a0, p1 * a1
                cond = []
                for c in (0, 1):
                    if qh[c] > 0:
                        cond.append(big_q(c, c0, c1) / qh[c])
                    else:  # T_c never reaches h: any distribution will do; use M(x0)'s
                        cond.append(a0)
                answers[a] = (cond[0], cond[1])
                stack.append(((*h, (q, a)), c0, c1))
            node[q] = answers
        table[h] = node
    post = FiniteInteractiveMechanism(table)

    # Check 1: every complete transcript (covers every adversary's view).
    for tau in m.transcripts():
        tq = (post.transcript_probability(0, tau), post.transcript_probability(1, tau))
        for b in (0, 1):
            mixed = _rr_mix(t, b, tq[b], tq[1 - b])
            assert mixed == m.transcript_probability(b, tau), f"view differs on {tau!r}"
    # Check 2: every (pruned) deterministic adversary's whole view, walked through T's own conditionals.
    count = 0
    for adv in deterministic_adversaries(m):
        count += 1
        _check_adversary(m, post, adv, t)
    return RRSimulation(t, post, count, len(m.transcripts()))


def _check_adversary(
    m: FiniteInteractiveMechanism,
    post: FiniteInteractiveMechanism,
    adv: dict[History, Hashable],
    t: Fraction,
) -> None:
    stack: list[tuple[History, tuple[Fraction, Fraction], tuple[Fraction, Fraction]]] = [
        ((), (Fraction(1), Fraction(1)), (Fraction(1), Fraction(1)))
    ]
    total = [Fraction(0), Fraction(0)]
    while stack:
        h, pm, pt = stack.pop()
        if m.is_terminal(h):
            for b in (0, 1):
                mixed = _rr_mix(t, b, pt[b], pt[1 - b])
                assert mixed == pm[b], f"view of adversary {adv!r} differs at {h!r}"
                total[b] += mixed
            continue
        q = adv.get(h, m.queries(h)[0])
        for a in m.answers(h, q):
            stack.append(
                (
                    (*h, (q, a)),
                    (pm[0] * m.probability(0, h, q, a), pm[1] * m.probability(1, h, q, a)),
                    (pt[0] * post.probability(0, h, q, a), pt[1] * post.probability(1, h, q, a)),
                )
            )
    assert total == [1, 1], "views must be probability distributions"
