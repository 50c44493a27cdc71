"""A black-box statistical audit: a lower bound on a mechanism's true ε from samples.

:func:`audit` runs a mechanism many times on two adjacent inputs, picks an output event S on the first
half of the samples, and on the second half bounds Pr[M(x0) ∈ S] from below and Pr[M(x1) ∈ S] from
above with exact Clopper–Pearson intervals. Any (ε, δ)-DP mechanism satisfies
Pr[M(x0) ∈ S] ≤ e^ε·Pr[M(x1) ∈ S] + δ for every fixed S, so

    ε ≥ ln((Pr[M(x0) ∈ S] − δ) / Pr[M(x1) ∈ S]),

and plugging in the two one-sided bounds gives a lower bound on the true ε that holds with the stated
confidence (the event is chosen without looking at the second half, and the two bounds share the error
probability by a union bound). If this lower bound exceeds the claimed ε, the claim is contradicted.

The audit can only ever *refute* a claim; passing it is no proof of privacy.

Examples:
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> def laplace(x):   # sensitivity 1, scale 1: a 1-DP mechanism
    ...     return x + rng.laplace(0.0, 1.0)
    >>> res = audit(laplace, 0.0, 1.0, epsilon=0.5, trials=20000, seed=0)
    >>> res.contradicted, res.confidence
    (True, 0.95)
    >>> 0.5 < res.epsilon_lower <= 1.0
    True
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from numbers import Real
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpcompose._progress import progress as show_progress
from dpcompose._scipy import beta_ppf
from dpcompose._validation import (
    check_finite,
    check_finite_nonnegative,
    check_nonnegative_int,
    check_positive_int,
    check_probability,
)
from dpcompose.accounting._display import format_down, format_excess, format_up
from dpcompose.accounting._exact import log_down
from dpcompose.errors import InvalidParameter

__all__ = ["AuditResult", "audit", "clopper_pearson"]

_THRESHOLDS = 199  # candidate thresholds for real-valued outputs (quantiles of the first half)


@dataclass(frozen=True)
class AuditResult:
    """The outcome of :func:`audit`.

    Attributes:
        epsilon_lower: a lower bound on the mechanism's true ε at the claimed δ, valid with probability
            at least ``confidence`` (0 if the samples show nothing).
        claimed_epsilon: the ε that was tested.
        delta: the δ that was tested.
        confidence: the confidence level of ``epsilon_lower``.
        contradicted: ``epsilon_lower > claimed_epsilon``: the claim is refuted at this confidence.
        event: the output event the bound was computed on.
        trials: samples drawn per input (half chose the event, half evaluated it).
        counts: (hits under x0, hits under x1, evaluation samples per input) for the event.
    """

    epsilon_lower: float
    claimed_epsilon: float
    delta: float
    confidence: float
    contradicted: bool
    event: str
    trials: int
    counts: tuple[int, int, int]

    def __repr__(self) -> str:
        verdict = "CONTRADICTED" if self.contradicted else "not contradicted"
        # the lower bound rounds down and the claim up; a contradiction gets the digits that show it
        if self.epsilon_lower > self.claimed_epsilon:
            lower, claimed = format_excess(self.epsilon_lower, self.claimed_epsilon, 4)
        else:
            lower, claimed = format_down(self.epsilon_lower, 4), format_up(self.claimed_epsilon)
        return (
            f"AuditResult(ε ≥ {lower} with {self.confidence:.0%} confidence; "
            f"claimed ε = {claimed}, δ = {format_up(self.delta)}: {verdict}; "
            f"event: {self.event}; {self.trials} trials per input)"
        )


_MAX_TRIALS = 10**7


def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """One-sided exact binomial bounds: (lower, upper), each failing with probability at most ``alpha``.

    Source: Clopper and Pearson, "The use of confidence or fiducial limits illustrated in the case of the
    binomial" (Biometrika, 1934); the beta-quantile form.

    Raises:
        InvalidParameter: ``n`` not an integer ≥ 1, ``k`` not an integer in [0, n], or ``alpha`` not in
            (0, 1).

    Examples:
        >>> lo, hi = clopper_pearson(50, 100, 0.025)
        >>> round(lo, 3), round(hi, 3)
        (0.398, 0.602)
        >>> clopper_pearson(0, 10, 0.05)[0], clopper_pearson(10, 10, 0.05)[1]
        (0.0, 1.0)
    """
    n = check_positive_int(n, "n")
    k = check_nonnegative_int(k, "k")
    if k > n:
        raise InvalidParameter(f"k={k!r} must be at most n={n!r}")
    a = float(check_finite(alpha, "alpha"))
    if not 0 < a < 1:
        raise InvalidParameter(f"alpha={alpha!r} must lie strictly between 0 and 1")
    alpha = a
    lo = 0.0 if k == 0 else beta_ppf(alpha, k, n - k + 1)
    hi = 1.0 if k == n else beta_ppf(1 - alpha, k + 1, n - k)
    return lo, hi


def _bound(k0: int, k1: int, n: int, delta: float, alpha: float) -> float:
    """ln((lower(p0) − δ) / upper(p1)), or 0 if it is not positive."""
    lo0, _ = clopper_pearson(k0, n, alpha)
    _, hi1 = clopper_pearson(k1, n, alpha)
    num = Fraction(lo0) - Fraction(delta)
    if num <= 0 or hi1 <= 0:
        return 0.0
    return max(0.0, log_down(num / Fraction(hi1)))  # rounded down: a lower bound must not overstate


def _is_real(x: object) -> bool:
    return isinstance(x, Real) and not isinstance(x, bool)


def audit(
    measurement: Callable[[Any], object],
    x0: object,
    x1: object,
    epsilon: float,
    delta: float = 0.0,
    trials: int = 50000,
    confidence: float = 0.95,
    seed: int | np.random.Generator | None = None,
    progress: bool = False,
) -> AuditResult:
    """Sample ``measurement`` on adjacent ``x0`` and ``x1`` and test the claim "(ε, δ)-DP".

    Black box: only ``measurement(x0)`` and ``measurement(x1)`` are called, ``trials`` times each, so
    any callable works (a :class:`dpcompose.Measurement` is one). Outputs must be real numbers
    (events: ``output < c`` and ``output > c``, c from 199 quantiles of the first half) or hashable
    values (events: the outcomes whose first-half likelihood ratio is largest, every prefix of that
    order). The event and its direction (x0 against x1 or the reverse) are chosen on the first half by
    the same bound, then evaluated once on the second half.

    Args:
        measurement: the mechanism, called as ``measurement(data)``.
        x0: one input.
        x1: an adjacent input.
        epsilon: the claimed ε.
        delta: the claimed δ.
        trials: samples per input (at least 20).
        confidence: the confidence of the reported lower bound, in (0, 1).
        seed: seed or generator for shuffling the samples before the split (the mechanism's own
            randomness is its business).
        progress: report sampling progress on standard error (tqdm if installed, else plain lines); the
            run can be stopped with Ctrl-C (KeyboardInterrupt), which leaves nothing behind.

    Returns:
        An :class:`AuditResult`.

    Raises:
        InvalidParameter: a bad ε, δ, trials or confidence, or outputs that are neither all real nor
            all hashable.

    Source: the (ε, δ) inequality on one event (Dwork–Roth 2014, Def. 2.4) with Clopper–Pearson bounds,
        as in statistical DP auditing (Ding et al., "Detecting Violations of Differential Privacy",
        CCS 2018; Jagielski, Ullman, Oprea, NeurIPS 2020).
    """
    if not callable(measurement):
        raise InvalidParameter(f"measurement={measurement!r} must be callable")
    eps = float(check_finite_nonnegative(epsilon, "epsilon"))
    dlt = float(check_probability(delta, "delta"))
    n = check_positive_int(trials, "trials")
    if n < 20:
        raise InvalidParameter(f"trials={trials!r} must be at least 20")
    if n > _MAX_TRIALS:
        raise InvalidParameter(
            f"trials={trials!r} is too large: every sample is kept in memory (at most {_MAX_TRIALS})"
        )
    conf = float(check_finite(confidence, "confidence"))
    if not 0 < conf < 1:
        raise InvalidParameter(f"confidence={confidence!r} must lie strictly between 0 and 1")
    alpha = (1 - conf) / 2  # two one-sided bounds on the second half, union bound
    if isinstance(seed, np.random.Generator):
        rng = seed
    elif seed is None:
        rng = np.random.default_rng()
    else:
        rng = np.random.default_rng(check_nonnegative_int(seed, "seed"))

    if not isinstance(progress, bool):
        raise InvalidParameter(f"progress={progress!r} must be True or False")
    samples = [
        [measurement(x) for _ in show_progress(range(n), n, f"samples of {name}", enabled=progress)]
        for name, x in (("x0", x0), ("x1", x1))
    ]
    for s in samples:
        rng.shuffle(s)
    half = n // 2
    first = [s[:half] for s in samples]
    second = [s[half : 2 * half] for s in samples]
    n_eval = half

    if all(_is_real(v) for s in samples for v in s):
        bad = InvalidParameter(
            "measurement(x0) or measurement(x1) returned NaN, infinite or out-of-range outputs; "
            "cannot audit them"
        )
        try:
            with np.errstate(all="ignore"):
                arr_a = [np.sort(np.asarray(s, dtype=np.float64)) for s in first]
                arr_b = [np.asarray(s, dtype=np.float64) for s in second]
        except (OverflowError, TypeError, ValueError):
            raise bad from None
        if not all(np.all(np.isfinite(a)) for a in arr_a + arr_b):
            raise bad
        event, k0, k1 = _real_events(arr_a, arr_b, half, dlt, alpha)
    else:
        try:
            event, k0, k1 = _discrete_events(first, second, half, dlt, alpha)
        except TypeError as exc:
            raise InvalidParameter(
                "the outputs of measurement(x0) and measurement(x1) must be all real numbers or all hashable "
                "values to be audited"
            ) from exc
    lower = _bound(k0, k1, n_eval, dlt, alpha)
    return AuditResult(lower, eps, dlt, conf, lower > eps, event, n, (k0, k1, n_eval))


def _real_events(
    a: list[NDArray[np.float64]], b: list[NDArray[np.float64]], n: int, delta: float, alpha: float
) -> tuple[str, int, int]:
    pooled = np.sort(np.concatenate(a))
    cuts = np.unique(np.quantile(pooled, np.linspace(0, 1, _THRESHOLDS + 2)[1:-1]))
    best: tuple[float, str, float, int] = (-1.0, "<", 0.0, 0)
    for c in cuts:
        below = [int(np.searchsorted(x, c, side="left")) for x in a]  # count of output < c
        above = [n - int(np.searchsorted(x, c, side="right")) for x in a]  # count of output > c
        for side, counts in (("<", below), (">", above)):
            for direction in (0, 1):
                score = _bound(counts[direction], counts[1 - direction], n, delta, alpha)
                if score > best[0]:
                    best = (score, side, float(c), direction)
    _, side, c, direction = best
    hits = [int(np.sum(x < c)) if side == "<" else int(np.sum(x > c)) for x in b]
    who = "x0 vs x1" if direction == 0 else "x1 vs x0"
    return f"output {side} {c:.6g} ({who})", hits[direction], hits[1 - direction]


def _discrete_events(
    a: Sequence[Sequence[object]], b: Sequence[Sequence[object]], n: int, delta: float, alpha: float
) -> tuple[str, int, int]:
    count_a = [Counter(s) for s in a]  # raises TypeError on unhashable outputs
    outcomes: list[Hashable] = list(set(count_a[0]) | set(count_a[1]))
    best: tuple[float, list[Hashable], int] = (-1.0, [], 0)
    for direction in (0, 1):
        ca, cb = count_a[direction], count_a[1 - direction]
        order = sorted(outcomes, key=lambda o: (ca[o] + 1) / (cb[o] + 1), reverse=True)
        k0 = k1 = 0
        for i, o in enumerate(order):
            k0 += ca[o]
            k1 += cb[o]
            score = _bound(k0, k1, n, delta, alpha)
            if score > best[0]:
                best = (score, order[: i + 1], direction)
    _, event, direction = best
    members = set(event)
    hits = [sum(1 for v in s if v in members) for s in b]
    shown = ", ".join(repr(o) for o in event[:5]) + (", …" if len(event) > 5 else "")
    who = "x0 vs x1" if direction == 0 else "x1 vs x0"
    return f"output in {{{shown}}} ({who})", hits[direction], hits[1 - direction]
