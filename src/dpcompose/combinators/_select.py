"""Private selection from private candidates: run randomly chosen candidates a random number of times and
release only the best.

Hyperparameter choice among ``k`` ε-DP candidates (a clipping bound, a regularisation strength) costs
``3ε`` in total — not ``kε`` — when the number of runs ``K`` is geometric and each run picks its candidate
uniformly at random (Liu–Talwar 2019, "Private selection from private candidates", STOC;
arXiv:1811.07971, Section 3, the random-stopping algorithm that releases the best of the runs; the same
3ε is Papernot–Steinke 2022, "Hyperparameter tuning with Rényi differential privacy", ICLR;
arXiv:2110.03620v2, Corollary 3 with η = 1: a truncated negative binomial ``K`` with η = 1 is geometric,
and the tuned mechanism is ``((2 + η)ε, 0)``-DP — their Theorem 2 as both Rényi orders grow). With
stopping probability 1 there is exactly one run, and the cost is the candidates' largest ε
(:func:`make_private_selection` proves it).
Candidates with a zCDP or Rényi bound: :func:`~dpcompose.make_private_selection_renyi`.

Examples:
    >>> import dpcompose as dp
    >>> import numpy as np
    >>> ints = dp.VectorDomain(dp.AtomDomain(int))
    >>> count = dp.t.make_count(ints, dp.SymmetricDistance())
    >>> def scored(scale):
    ...     noisy = count >> dp.m.make_discrete_laplace(dp.AtomDomain(int), dp.AbsoluteDistance(), scale)
    ...     return dp.make_postprocess(noisy, lambda c, s=scale: (-s, c))  # (score, output)
    >>> best = dp.make_private_selection([scored(1), scored(2)], 0.25, rng=np.random.default_rng(0))
    >>> best.map(1)  # 3 × the largest candidate ε (1), whatever the number of runs
    Fraction(3, 1)
    >>> index, score, output = best(np.arange(100))
    >>> index in (0, 1), isinstance(output, int)
    (True, True)
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose._validation import check_finite
from dpcompose.accounting._exact import exact
from dpcompose.core import Measurement, Node, PureDP
from dpcompose.core._recipe import recorded
from dpcompose.errors import DomainMismatch, InvalidParameter, UnsupportedComposition
from dpcompose.measurements._random import RandomSource, caller_or_secure_source
from dpcompose.measurements._sampling import randbelow, sample_bernoulli

__all__ = ["better_score", "checked_candidates", "make_private_selection", "ranked_run", "selection_epsilon"]

#: The factor on the candidates' ε for a geometric number of runs (Liu–Talwar 2019, Section 3;
#: Papernot–Steinke 2022, Corollary 3 with η = 1: (2 + η)ε).
FACTOR = 3


def selection_epsilon(epsilon: Fraction) -> Fraction:
    """The ε of the best of a geometric number of runs of ε-DP candidates: ``3ε``, exactly.

    Source: Liu–Talwar 2019 (STOC; arXiv:1811.07971), Section 3, random stopping releasing the best run;
    Papernot–Steinke 2022 (ICLR; arXiv:2110.03620v2), Corollary 3 (``((2 + η)ε, 0)``-DP for a truncated
    negative binomial number of runs; η = 1 is the geometric distribution).

    Examples:
        >>> selection_epsilon(Fraction(1, 10))
        Fraction(3, 10)
    """
    return FACTOR * Fraction(epsilon)


def ranked_run(result: Any) -> tuple[float | Fraction, Any]:
    """A run's output as ``(score, output)`` for ranking: a pair whose score is a real number (not NaN,
    not a bool) keeps it; anything else — a malformed output, a NaN score — ranks as ``-inf`` with output
    ``None``. A deterministic function of the run's output only (post-processing), so it never raises."""
    try:
        if isinstance(result, tuple) and len(result) == 2:
            score = result[0]
            if isinstance(score, numbers.Real) and not isinstance(score, (bool, np.bool_)):
                value: float | Fraction
                if isinstance(score, Fraction):
                    value = score
                elif isinstance(score, numbers.Integral):
                    value = Fraction(int(score))
                else:
                    value = float(score)
                if not (isinstance(value, float) and math.isnan(value)):
                    return value, result[1]
    except (TypeError, ValueError, OverflowError):
        pass
    return -math.inf, None


def better_score(score: float | Fraction, best: float | Fraction) -> bool:
    """``score > best`` exactly (a float and a Fraction compare exactly in Python; ±inf as floats)."""
    return bool(score > best)


def checked_candidates(
    candidates: Any, name: str, measures: tuple[type, ...], refusal: str
) -> tuple[Measurement[Any, Any, Any, Any], ...]:
    """The candidate measurements of a private selection ``name``: one measurement or a non-empty list of
    them, each non-interactive, of one of ``measures`` (else ``UnsupportedComposition`` with ``refusal``
    appended to the candidate's measure), all on the first one's input domain and metric."""
    if isinstance(candidates, Measurement):
        children: tuple[Measurement[Any, Any, Any, Any], ...] = (candidates,)
    elif isinstance(candidates, (list, tuple)):
        children = tuple(candidates)
    else:
        raise InvalidParameter(
            f"candidates={type(candidates).__name__}: pass a list of measurements (or one measurement)"
        )
    if not children:
        raise InvalidParameter("candidates=[]: pass at least one candidate measurement")
    for i, child in enumerate(children):
        if not isinstance(child, Measurement):
            raise InvalidParameter(f"candidates[{i}]={type(child).__name__} must be a Measurement")
    first = children[0]
    for i, child in enumerate(children):
        if not isinstance(child.output_measure, measures):
            raise UnsupportedComposition(
                f"{name}: candidates[{i}] ({child.node.label()}) is {child.output_measure!r}{refusal}"
            )
        if child.interactive:
            raise UnsupportedComposition(
                f"{name}: candidates[{i}] is interactive; the selection theorems cover non-interactive runs"
            )
        if child.input_domain != first.input_domain or child.input_metric != first.input_metric:
            raise DomainMismatch(
                f"{name}: candidates[{i}] takes {child.input_domain!r} under {child.input_metric!r}, "
                f"candidates[0] {first.input_domain!r} under {first.input_metric!r}: all candidates must "
                "share the input domain and metric"
            )
    return children


@recorded
def make_private_selection(
    candidates: Sequence[Measurement[Any, Any, Any, Any]] | Measurement[Any, Any, Any, Any],
    stop_probability: float | Fraction,
    *,
    rng: np.random.Generator | RandomSource | None = None,
) -> Measurement[Any, Any, Any, Any]:
    """Choose among ε-DP candidates privately: the best of a random number of runs, at ``3ε`` in total
    (``ε`` with ``stop_probability=1``: one run).

    Each candidate is a pure-DP measurement whose output is a ``(score, output)`` pair (higher score is
    better; wrap a mechanism with :func:`~dpcompose.make_postprocess` to attach its score).

    **Warning: the ``(score, output)`` shape cannot be checked before the run.** A measurement declares no
    output domain, so a candidate that returns anything else (a bare noisy value, a triple, a NaN score)
    is only found when it runs: that run ranks lowest, and if every run does, the release is
    ``(j, -inf, None)`` — after the selection's cost has been charged by whatever holds the budget. Try a
    candidate's post-processing on a public value first (``score, output = f(value)``).

    The result
    runs: pick a candidate index ``j`` uniformly at random, run candidate ``j`` on the data, then stop with
    probability ``γ = stop_probability`` — repeating until it stops, so the number of runs ``K`` is
    geometric on ``{1, 2, …}`` with ``P(K = n) = γ(1 − γ)^(n−1)`` (mean ``1/γ``). It releases
    ``(j, score, output)`` of the highest-scoring run (the first one on ties); ``K`` and every other run
    are not released — but the release takes about ``K`` runs' time, and the guarantee assumes ``K`` is
    hidden: run it where its duration cannot be observed (``docs/security.md``). Every draw (``j``, the
    stopping coin) is exact (:func:`randbelow`, :func:`sample_bernoulli`; ``γ`` read as its exact binary
    value) from the secure source by default.

    A run whose output is not a pair with a real, non-NaN score ranks lowest (score ``-inf``, output
    ``None``): a function of that run's output alone, so it is post-processing and is never raised. If
    every run ranks so, the release is ``(j, -inf, None)`` for the first run's ``j``. A candidate that
    raises breaks its own contract (a measurement never raises on data in its domain); the exception
    propagates as in every combinator.

    Privacy map: ``d_in ↦ 3·max_j candidate_j.map(d_in)`` for ``γ < 1``, and ``max_j
    candidate_j.map(d_in)`` for ``γ = 1``, exact. The mixture "run a uniformly chosen candidate" is
    ``max_j ε_j``-DP, and the best of a geometric number of runs of an ε-DP mechanism is ``3ε``-DP
    whatever ``γ ∈ (0, 1]`` is (Liu–Talwar 2019, Section 3; Papernot–Steinke 2022, Corollary 3 with
    η = 1). The expected number of runs ``1/γ`` sets utility and running time; only ``γ = 1`` changes the
    bound.

    *Proof for γ = 1.* The stopping coin then always stops, so ``K = 1``: the release is ``(j, s, o)`` with
    ``j`` uniform on ``{0, …, k−1}`` (independent of the data) and ``(s, o) = ranked(M_j(x))``, where
    ``ranked`` (:func:`ranked_run`) is a fixed function of one run's output. For any set ``S`` of
    releases and ``x, x'`` at distance ``d_in``, with ``S_j = {(s, o) : (j, s, o) ∈ S}``,
    ``P[A(x) ∈ S] = (1/k)·Σ_j P[ranked(M_j(x)) ∈ S_j] ≤ (1/k)·Σ_j e^{ε_j}·P[ranked(M_j(x')) ∈ S_j]
    ≤ e^{max_j ε_j}·P[A(x') ∈ S]``, by each candidate's ``ε_j = M_j.map(d_in)`` and post-processing
    (Dwork–Roth 2014 Prop. 2.1). So ``A`` is ``max_j ε_j``-DP; no bound can be lower in general, as a
    single candidate (``k = 1``) is released as it is. (Papernot–Steinke 2022 Theorem 2 agrees: at
    ``γ = 1`` its ``ln(1/γ)`` and ``ln E[K]`` terms vanish.)

    Args:
        candidates: the candidate measurements (a list, or one measurement to repeat): same input domain
            and metric, ``PureDP``, non-interactive, each releasing ``(score, output)``.
        stop_probability: ``γ ∈ (0, 1]``, the probability of stopping after each run.
        rng: a numpy Generator (or a ``RandomSource`` such as ``SeededSource``) driving the choice of
            candidates and the stopping reproducibly, for experiments only: NOT private. Default: the
            operating system's secure source. (Candidates draw their own noise as they were built.)

    Returns:
        A ``PureDP`` measurement on the candidates' input domain and metric releasing
        ``(index, score, output)``.

    Raises:
        InvalidParameter: no candidates, a candidate that is not a measurement, or ``stop_probability``
            outside ``(0, 1]``.
        DomainMismatch: candidates with different input domains or metrics.
        UnsupportedComposition: a candidate that is not ``PureDP`` (a zCDP or Rényi-DP one: use
            :func:`~dpcompose.make_private_selection_renyi`; an (ε, δ)-only one is not covered) or is
            interactive.

    Source: Liu–Talwar 2019 (STOC; arXiv:1811.07971), Section 3 (random stopping, best of the runs: 3ε);
    Papernot–Steinke 2022 (ICLR; arXiv:2110.03620v2), Corollary 3 (η = 1) and their hypotheses (§3.3):
    random number of runs, each run's candidate uniformly random, a uniform bound over the candidates,
    only the best released; ``γ = 1``: proven above (one run of a uniformly chosen candidate).

    Examples:
        >>> import dpcompose as dp
        >>> lap = dp.m.make_laplace(dp.AtomDomain(float), dp.AbsoluteDistance(), 1.0)
        >>> run = dp.make_postprocess(lap, lambda x: (x, x))
        >>> dp.make_private_selection([run], 0.1).map(1)  # ε = 1 for the Laplace run
        Fraction(3, 1)
        >>> dp.make_private_selection([run], 1).map(1)  # γ = 1: one run, the candidate's own ε
        Fraction(1, 1)
    """
    children = checked_candidates(
        candidates,
        "make_private_selection",
        (PureDP,),
        "; the 3ε theorem used here is for PureDP candidates (a ZCDP or RenyiDP candidate: use "
        "make_private_selection_renyi; otherwise use a pure mechanism, e.g. Laplace noise)",
    )
    gamma_v = check_finite(stop_probability, "stop_probability")
    if not 0 < gamma_v <= 1:
        raise InvalidParameter(
            f"stop_probability={stop_probability!r} must lie in (0, 1] (the chance of stopping after a run)"
        )
    gamma = exact(stop_probability, "stop_probability")
    first = children[0]
    source = caller_or_secure_source(rng)
    k = len(children)

    def function(data: Any) -> tuple[int, float | Fraction, Any]:
        best: tuple[int, float | Fraction, Any] | None = None
        while True:
            j = randbelow(k, source)
            score, output = ranked_run(children[j].function(data))
            if best is None or better_score(score, best[1]):
                best = (j, score, output)
            if sample_bernoulli(gamma, source):
                return best

    once = gamma == 1  # K = 1: one run of a uniformly chosen candidate (proof in the docstring)

    def privacy_map(d_in: Any) -> Fraction:
        epsilon = max(Fraction(child.map(d_in)) for child in children)
        return epsilon if once else selection_epsilon(epsilon)

    return Measurement(
        first.input_domain,
        first.input_metric,
        PureDP(),
        function,
        privacy_map,
        node=Node(
            "private_selection",
            params=(("candidates", str(k)), ("stop_probability", repr(stop_probability))),
            source="Liu–Talwar 2019 Sec. 3; Papernot–Steinke 2022 Cor. 3 (η = 1)"
            + ("; γ = 1: one run, proven in make_private_selection" if once else ""),
            theorem="private selection (one run of a uniformly chosen candidate: max ε)"
            if once
            else "private selection (best of a geometric number of runs: 3ε)",
            children=children,
        ),
    )
