"""Tests of the black-box auditor."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from dpcompose.analysis._audit import AuditResult, audit, clopper_pearson
from dpcompose.errors import InvalidParameter


def _laplace(scale: float, seed: int) -> Callable[[float], float]:
    rng = np.random.default_rng(seed)

    def m(x: float) -> float:
        return float(x + rng.laplace(0.0, scale))

    return m


#: Seeds of the two Laplace audits (20,000 trials each, ~0.35 s): seed 0 by default, all three with -m slow.
SEEDS = [0, pytest.param(1, marks=pytest.mark.slow), pytest.param(2, marks=pytest.mark.slow)]


@pytest.mark.parametrize("seed", SEEDS)
def test_catches_laplace_claimed_twice_too_small(seed: int) -> None:
    # Laplace with sensitivity 1 and scale 1 is exactly 1-DP; the map claims ε = 1/2.
    res = audit(_laplace(1.0, seed), 0.0, 1.0, epsilon=0.5, trials=20000, seed=seed)
    assert res.contradicted
    assert 0.5 < res.epsilon_lower <= 1.0  # a lower bound on the true ε = 1
    assert "CONTRADICTED" in repr(res)


@pytest.mark.parametrize("seed", SEEDS)
def test_does_not_flag_a_correct_laplace(seed: int) -> None:
    res = audit(_laplace(1.0, seed), 0.0, 1.0, epsilon=1.0, trials=20000, seed=seed)
    assert not res.contradicted
    assert res.epsilon_lower <= 1.0
    assert "not contradicted" in repr(res)


def test_randomized_response_discrete_outputs() -> None:
    rng = np.random.default_rng(3)
    keep = math.exp(2) / (1 + math.exp(2))  # RR with ε = 2

    def rr(bit: int) -> str:
        return ("yes" if bit else "no") if rng.random() < keep else ("no" if bit else "yes")

    caught = audit(rr, 0, 1, epsilon=1.0, trials=20000, seed=0)
    assert caught.contradicted
    assert 1.0 < caught.epsilon_lower <= 2.0
    assert "output in" in caught.event
    fine = audit(rr, 0, 1, epsilon=2.0, trials=20000, seed=0)
    assert not fine.contradicted


def test_delta_is_taken_into_account() -> None:
    # A mechanism that reveals its input with probability 0.05 and is otherwise silent: (0, 0.05)-DP.
    rng = np.random.default_rng(4)

    def leaky(x: int) -> int:
        return x if rng.random() < 0.05 else -1

    # Pure DP fails: with 10000 evaluation samples the bound reaches about ln(0.05 · 10000 / 3) ≈ 5.
    assert audit(leaky, 0, 1, epsilon=3.0, delta=0.0, trials=20000, seed=0).contradicted
    assert not audit(leaky, 0, 1, epsilon=0.0, delta=0.05, trials=20000, seed=0).contradicted


@settings(max_examples=20)
@given(st.integers(0, 60), st.integers(60, 200), st.sampled_from([0.01, 0.05, 0.2]))
def test_clopper_pearson_coverage(k: int, n: int, alpha: float) -> None:
    lo, hi = clopper_pearson(min(k, n), n, alpha)
    k = min(k, n)
    assert 0 <= lo <= k / n <= hi <= 1
    # Exactness of the beta form: at p = lo, Pr[X ≥ k] = α (k > 0); at p = hi, Pr[X ≤ k] = α (k < n).
    if k > 0:
        assert math.isclose(binom.sf(k - 1, n, lo), alpha, rel_tol=1e-6)
    if k < n:
        assert math.isclose(binom.cdf(k, n, hi), alpha, rel_tol=1e-6)


def test_bad_input() -> None:
    m = _laplace(1.0, 0)
    with pytest.raises(InvalidParameter, match="epsilon"):
        audit(m, 0.0, 1.0, epsilon=-1.0)
    with pytest.raises(InvalidParameter, match="delta"):
        audit(m, 0.0, 1.0, epsilon=1.0, delta=1.0)
    with pytest.raises(InvalidParameter, match="trials"):
        audit(m, 0.0, 1.0, epsilon=1.0, trials=10)
    with pytest.raises(InvalidParameter, match="confidence"):
        audit(m, 0.0, 1.0, epsilon=1.0, confidence=1.0)
    with pytest.raises(InvalidParameter, match="hashable"):
        audit(lambda x: [x], 0, 1, epsilon=1.0, trials=20)
    with pytest.raises(InvalidParameter, match="NaN"):
        audit(lambda x: float("nan"), 0, 1, epsilon=1.0, trials=20)


def test_result_record() -> None:
    res = audit(_laplace(1.0, 5), 0.0, 1.0, epsilon=0.5, trials=2000, seed=1)
    assert isinstance(res, AuditResult)
    assert res.trials == 2000
    assert res.counts[2] == 1000
    assert res.confidence == 0.95


def test_repr_rounds_the_lower_bound_down_and_shows_a_contradiction() -> None:
    """Was: 'ε ≥ 1' for a lower bound of 0.99996 (above it), and 'ε ≥ 1 … claimed ε = 1: CONTRADICTED'."""
    below = AuditResult(0.99996, 1.0, 0.0, 0.95, False, "e", 10, (1, 2, 3))
    assert repr(below).startswith("AuditResult(ε ≥ 0.9999 with 95% confidence; claimed ε = 1, δ = 0:")
    above = AuditResult(1.00004, 1.0, 0.0, 0.95, True, "e", 10, (1, 2, 3))
    text = repr(above)
    lower, claimed = re.search(r"ε ≥ (\S+) .* claimed ε = (\S+),", text).groups()  # type: ignore[union-attr]
    assert Fraction(lower) > Fraction(claimed) and Fraction(lower) <= Fraction(1.00004), text
