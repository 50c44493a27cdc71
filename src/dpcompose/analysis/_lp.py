"""Is an (ε, δ)-DP interactive mechanism an interactive post-processing of RR_(ε, δ)? A linear program.

Section 6 of Vadhan–Wang (2021) asks whether Theorem 5.4 (every ε-DP interactive mechanism is an
interactive post-processing of RR_ε) extends to approximate DP, with the randomized response RR_(ε, δ) of
Kairouz, Oh and Viswanath in place of RR_ε (answers 0, 1, "I am 0", "I am 1"; see
:func:`~dpcompose.analysis._finite.randomized_response`). For a finite mechanism this is a linear
feasibility problem, solved here with SciPy's HiGHS.

The program (our formulation; the paper states it for 2-round, 1-bit mechanisms). An interactive
post-processor T receives RR's output z and then answers the analyst. Describe T_z by its *sequence-form*
(realisation) weights x_z(h) = Pr[T_z gives h's answers to h's queries] for every history h ≠ ().
Then x_z is a valid interactive mechanism iff

    x_z ≥ 0,   Σ_a x_z(h·(q, a)) = x_z(h) for every non-terminal h and query q,   x_z(()) = 1,   (C1)

(its behaviour is T_z(a | h, q) = x_z(h·(q, a)) / x_z(h)). By Lemma 2.2 it suffices to match the views
of deterministic adversaries, and each such view is a set of complete transcripts τ whose probability is
p_b(τ) under M(x_b) and Σ_z RR(z | b)·x_z(τ) under T(RR_(ε, δ)(b)); so T simulates M iff

    Σ_z RR_(ε, δ)(z | b)·x_z(τ) = p_b(τ)   for every complete transcript τ and b ∈ {0, 1}.      (C2)

Both are linear in x. If M is not (ε, δ)-DP the program is infeasible (post-processing preserves
(ε, δ)-DP); the Section 6 experiment finds it feasible at ε = PrivLoss(M, δ) for random mechanisms.

Examples:
    >>> from fractions import Fraction
    >>> from dpcompose.analysis._finite import randomized_response
    >>> from dpcompose.analysis._finite import privacy_loss
    >>> rr = randomized_response(3, Fraction(1, 10))
    >>> res = lp_simulation(rr, privacy_loss(rr, 0.1), 0.1)
    >>> res.feasible, res.max_residual < 1e-9
    (True, True)
    >>> lp_simulation(randomized_response(3, Fraction(1, 10)), 0.5, 0.1).feasible
    False
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from dpcompose._scipy import linprog
from dpcompose._validation import check_finite, check_finite_nonnegative, check_probability
from dpcompose.accounting._exact import Number, decimal, exact, float_up
from dpcompose.analysis._finite import FiniteInteractiveMechanism, History, check_mechanism
from dpcompose.errors import InvalidParameter

__all__ = ["RR_OUTPUTS", "LPSimulation", "lp_simulation", "two_round_mechanism"]

RR_OUTPUTS: tuple[Hashable, ...] = (0, 1, "I am 0", "I am 1")
"""The outputs z of RR_(ε, δ), in the order the post-processor is indexed."""

PostProcessor = dict[Hashable, dict[History, dict[Hashable, dict[Hashable, float]]]]


@dataclass(frozen=True)
class LPSimulation:
    """The result of :func:`lp_simulation`.

    Attributes:
        feasible: whether HiGHS found a post-processor T with T(RR_(ε, δ)(b)) ≡ M(x_b).
        epsilon: the ε used.
        delta: the δ used.
        post_processor: when feasible, ``{z: {history: {query: {answer: probability}}}}``: how T answers
            after RR said z (``None`` otherwise).
        residuals: when feasible, A·x − b for every equality constraint: first the consistency
            constraints (C1), then the matching constraints (C2) (``None`` otherwise).
        max_residual: the largest |residual| or negative weight (``inf`` if infeasible).
        status: HiGHS's status message.
    """

    feasible: bool
    epsilon: float
    delta: float
    post_processor: PostProcessor | None = field(repr=False)
    residuals: NDArray[np.float64] | None = field(repr=False)
    max_residual: float
    status: str


def _rr_matrix(epsilon: float, delta: float) -> NDArray[np.float64]:
    """RR_(ε, δ)(z | b) as a 2 × 4 array (rows b, columns :data:`RR_OUTPUTS`)."""
    keep = (1 - delta) / (1 + math.exp(-epsilon)) if epsilon < 700 else 1 - delta
    flip = (1 - delta) - keep
    return np.array([[keep, flip, delta, 0.0], [flip, keep, 0.0, delta]])


def lp_simulation(mechanism: FiniteInteractiveMechanism, epsilon: Number, delta: Number) -> LPSimulation:
    """Solve the Section 6 linear program: find T with M(x_b) ≡ T(RR_(ε, δ)(b)), or report none exists.

    Floating point (HiGHS, default tolerances ≈ 1e-7): a verdict near the boundary ε ≈ PrivLoss(M, δ)
    reflects the solver's tolerance, so check ``max_residual``. Variables: 4 per history ≠ () of M;
    constraints: 4 per (non-terminal history, query) plus 2 per complete transcript.

    Args:
        mechanism: the finite interactive mechanism M.
        epsilon: ε ≥ 0 of the randomized response.
        delta: δ ∈ [0, 1) of the randomized response (read as the decimal it prints as).

    Returns:
        An :class:`LPSimulation` with the post-processor and the residual of each constraint.

    Raises:
        InvalidParameter: ε negative or not finite, δ ∉ [0, 1).

    Source: Vadhan–Wang, "Concurrent Composition of Differential Privacy" (TCC 2021), Section 6;
        RR_(ε, δ) from Kairouz–Oh–Viswanath (ICML 2015). The LP (C1)–(C2) is derived in this module's
        docstring.
    """
    check_mechanism(mechanism)
    eps = float_up(check_finite_nonnegative(epsilon, "epsilon"))
    check_probability(delta, "delta")
    dlt = float(decimal(delta, "delta"))
    m = mechanism
    nodes: list[History] = []  # every history ≠ (), terminal or not
    for h in m.histories():
        for q in m.queries(h):
            nodes.extend((*h, (q, a)) for a in m.answers(h, q))
    index = {h: i for i, h in enumerate(nodes)}
    n_nodes = len(nodes)
    n_z = len(RR_OUTPUTS)
    n_vars = n_z * n_nodes
    rows: list[NDArray[np.float64]] = []
    rhs: list[float] = []
    for z in range(n_z):
        off = z * n_nodes
        for h in m.histories():
            for q in m.queries(h):
                row = np.zeros(n_vars)
                for a in m.answers(h, q):
                    child = (*h, (q, a))
                    row[off + index[child]] = 1.0
                if h == ():
                    rhs.append(1.0)
                else:
                    row[off + index[h]] = -1.0
                    rhs.append(0.0)
                rows.append(row)
    rr = _rr_matrix(eps, dlt)
    for tau in m.transcripts():
        for b in (0, 1):
            row = np.zeros(n_vars)
            for z in range(n_z):
                row[z * n_nodes + index[tau]] = rr[b, z]
            rows.append(row)
            rhs.append(float(m.transcript_probability(b, tau)))
    a_eq = np.vstack(rows)
    b_eq = np.array(rhs)
    res = linprog(c=np.zeros(n_vars), A_eq=a_eq, b_eq=b_eq, bounds=[(0.0, None)] * n_vars, method="highs")
    if res.status != 0:
        return LPSimulation(False, eps, dlt, None, None, math.inf, str(res.message))
    x = np.asarray(res.x, dtype=np.float64)
    residuals = a_eq @ x - b_eq
    max_res = float(max(np.max(np.abs(residuals)), max(0.0, -float(np.min(x)))))
    post: PostProcessor = {}
    for z_i, z_out in enumerate(RR_OUTPUTS):
        weights = x[z_i * n_nodes : (z_i + 1) * n_nodes]
        beh: dict[History, dict[Hashable, dict[Hashable, float]]] = {}
        for h in m.histories():
            w_h = 1.0 if h == () else float(weights[index[h]])
            beh[h] = {}
            for q in m.queries(h):
                ans = m.answers(h, q)
                kids = [index[_child(h, q, a)] for a in ans]
                if w_h > 0:
                    probs = [max(0.0, float(weights[k])) / w_h for k in kids]
                else:
                    probs = [1.0 / len(ans)] * len(ans)
                beh[h][q] = dict(zip(ans, probs, strict=True))
        post[z_out] = beh
    return LPSimulation(True, eps, dlt, post, residuals, max_res, str(res.message))


def _child(h: History, q: Hashable, a: Hashable) -> History:
    return (*h, (q, a))


def _unit(value: object, name: str) -> Fraction:
    v = exact(check_finite(value, name), name)
    if not 0 <= v <= 1:
        raise InvalidParameter(f"{name}={value!r} must lie in [0, 1]")
    return v


def two_round_mechanism(p: Sequence[Number], p_prime: Sequence[Number]) -> FiniteInteractiveMechanism:
    """The paper's Section 6 family: 2 rounds, 1-bit messages, parameters p0, p00, p01, p10, p11.

    Round 1: the mechanism sends a bit a₁ with Pr[a₁ = 0] = p0 (the analyst's first query is the single
    query ``"start"``). Round 2: the analyst sends a bit q, and the mechanism answers a bit a₂ with
    Pr[a₂ = 0 | a₁ = i, q = j] = p_ij. ``p = (p0, p00, p01, p10, p11)`` describes M(x0) and ``p_prime``
    the primed twins for M(x1). This is our reading of the paper's parametrisation (10 numbers).

    Raises:
        InvalidParameter: not five numbers each, or a number outside [0, 1].

    Examples:
        >>> m = two_round_mechanism([0.5] * 5, [0.5, 0.5, 0.5, 0.5, 0.25])
        >>> m.probability(1, (("start", 1),), 1, 0)
        Fraction(1, 4)
    """
    for name, vals in (("p", p), ("p_prime", p_prime)):
        if (
            isinstance(vals, (str, bytes))
            or not isinstance(vals, (Sequence, np.ndarray))
            or (isinstance(vals, np.ndarray) and vals.ndim != 1)
        ):
            raise InvalidParameter(f"{name}={vals!r} must be a sequence of 5 numbers")
    if len(p) != 5 or len(p_prime) != 5:
        raise InvalidParameter(
            f"p and p_prime must each hold 5 numbers (p0, p00, p01, p10, p11), "
            f"not {len(p)} and {len(p_prime)}"
        )
    params = tuple(
        [_unit(v, f"{name}[{i}]") for i, v in enumerate(vals)]
        for name, vals in (("p", p), ("p_prime", p_prime))
    )

    def probs(b: int, h: History, q: Hashable) -> tuple[Fraction, Fraction]:
        if h == ():
            x = params[b][0]
        else:
            i = h[0][1]
            assert isinstance(i, int)
            assert isinstance(q, int)
            x = params[b][1 + 2 * i + q]
        return (x, 1 - x)

    return FiniteInteractiveMechanism.from_rounds([["start"], [0, 1]], [[0, 1], [0, 1]], probs)
