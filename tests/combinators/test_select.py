"""make_private_selection: the best of a geometric number of runs of uniformly chosen ε-DP candidates is
3ε-DP (Liu–Talwar 2019, Section 3; Papernot–Steinke 2022, Corollary 3 with η = 1)."""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import dpcompose as dp
from dpcompose.measurements._sampling import SeededSource

INTS = dp.VectorDomain(dp.AtomDomain(int))
SYM = dp.SymmetricDistance()


def _noisy_count(scale: int) -> Any:
    count = dp.t.make_count(INTS, SYM)
    return count >> dp.m.make_discrete_laplace(dp.AtomDomain(int), dp.AbsoluteDistance(), scale)


def _scored(scale: int) -> Any:
    """A candidate releasing (score, output): the negated scale as its score, the noisy count as output."""

    def attach(count: int) -> tuple[int, int]:
        return (-scale, count)

    return dp.make_postprocess(_noisy_count(scale), attach)


def _user(function: Any, eps: Fraction = Fraction(1, 2), domain: Any = INTS, measure: Any = None) -> Any:
    """A trusted user candidate with a fixed output (tests only: its map is a statement, not a proof)."""
    return dp.make_user_measurement(
        domain, SYM, measure or dp.PureDP(), function, lambda d: eps * d, trusted=True
    )


def _counting(log: list[int], index: int, score: Any) -> Any:
    def run(data: Any) -> Any:
        log.append(index)
        return (score, f"out{index}")

    return _user(run)


# --- the privacy map against the theorem -------------------------------------------------------------------


def test_map_is_three_times_the_largest_candidate_epsilon() -> None:
    sel = dp.make_private_selection([_scored(1), _scored(2), _scored(4)], 0.1)
    assert sel.output_measure == dp.PureDP()
    # candidates: ε = 1, 1/2, 1/4 at d_in = 1 (discrete Laplace, Δ = 1): 3·max = 3
    assert sel.map(1) == Fraction(3)
    assert sel.map(2) == Fraction(6)
    assert sel.map(0) == 0
    assert dp.make_private_selection([_scored(4)], 0.5).map(1) == Fraction(3, 4)


def test_stop_probability_one_is_one_run_at_the_largest_candidate_epsilon() -> None:
    """γ = 1 is one run of a uniformly chosen candidate: the mixture's max εⱼ, not 3·max εⱼ (the proof is
    in make_private_selection's docstring); a single candidate is then exactly itself."""
    sel = dp.make_private_selection([_scored(1), _scored(2), _scored(4)], 1)
    assert sel.map(1) == Fraction(1) and sel.map(3) == Fraction(3)
    assert dp.make_private_selection([_scored(4)], Fraction(1)).map(1) == Fraction(1, 4)
    assert "one run" in str(dp.explain(sel, 1))
    # just below 1 the geometric theorem applies again
    assert dp.make_private_selection([_scored(4)], 1 - 2.0**-53).map(1) == Fraction(3, 4)


def test_map_does_not_depend_on_stop_probability_below_one_or_number_of_candidates() -> None:
    for gamma in (0.999, 0.5, 1e-3, Fraction(1, 7)):
        for k in (1, 3, 20):
            sel = dp.make_private_selection([_scored(2)] * k, gamma)
            assert sel.map(1) == Fraction(3, 2), (gamma, k)


def test_map_is_exact_for_user_epsilon() -> None:
    cands = [_user(lambda x: (0, 0), Fraction(1, 3)), _user(lambda x: (0, 0), Fraction(2, 7))]
    assert dp.make_private_selection(cands, 0.5).map(3) == 3 * 3 * Fraction(1, 3)


def test_theorem_is_visible_in_explain() -> None:
    text = str(dp.explain(dp.make_private_selection([_scored(1)], 0.5), 1))
    assert "Liu–Talwar 2019" in text and "Papernot–Steinke 2022" in text


# --- the output distribution (seeded simulation) -----------------------------------------------------------


def test_number_of_runs_is_geometric() -> None:
    gamma = Fraction(1, 4)
    log: list[int] = []
    sel = dp.make_private_selection([_counting(log, 0, 0)], gamma, rng=SeededSource(7))
    counts: Counter[int] = Counter()
    trials = 3000
    for _ in range(trials):
        before = len(log)
        sel([1, 2])
        counts[len(log) - before] += 1
    assert min(counts) == 1
    # chi-square of K against P(K = n) = γ(1 − γ)^(n − 1), n = 1..9 and a tail bin
    p = float(gamma)
    probs = [p * (1 - p) ** (n - 1) for n in range(1, 10)]
    probs.append(1 - sum(probs))
    observed = [counts[n] for n in range(1, 10)] + [sum(c for n, c in counts.items() if n >= 10)]
    expected = [trials * q for q in probs]
    _, pvalue = stats.chisquare(observed, expected)
    assert pvalue > 1e-4, (observed, expected)
    mean = sum(n * c for n, c in counts.items()) / trials
    assert abs(mean - 4) < 0.3


def test_stop_probability_one_runs_once() -> None:
    log: list[int] = []
    sel = dp.make_private_selection([_counting(log, 0, 0)], 1, rng=SeededSource(1))
    for _ in range(50):
        sel([1])
    assert len(log) == 50


def test_candidates_are_chosen_uniformly() -> None:
    log: list[int] = []
    cands = [_counting(log, i, 0) for i in range(5)]
    sel = dp.make_private_selection(cands, 1, rng=np.random.default_rng(3))
    for _ in range(5000):
        sel([0])
    counts = Counter(log)
    _, pvalue = stats.chisquare([counts[i] for i in range(5)])
    assert pvalue > 1e-4, counts


def test_the_best_run_is_released_with_its_index() -> None:
    log: list[int] = []
    cands = [_counting(log, i, s) for i, s in enumerate([1, 5, 3])]
    sel = dp.make_private_selection(cands, Fraction(1, 50), rng=SeededSource(11))
    for _ in range(20):
        before = len(log)
        index, score, output = sel([0])
        ran = log[before:]
        best = max(ran, key=lambda i: [1, 5, 3][i])
        assert (index, score, output) == (best, [1, 5, 3][best], f"out{best}")


def test_ties_keep_the_first_best_run() -> None:
    log: list[int] = []
    cands = [_counting(log, i, 2) for i in range(3)]
    sel = dp.make_private_selection(cands, Fraction(1, 5), rng=SeededSource(5))
    for _ in range(20):
        before = len(log)
        index, _, _ = sel([0])
        assert index == log[before]


def test_seeded_runs_reproduce() -> None:
    cands = [_scored(1), _scored(2)]
    a = dp.make_private_selection(cands, 0.3, rng=SeededSource(42))
    b = dp.make_private_selection(cands, 0.3, rng=SeededSource(42))
    # the candidates' own noise is secure; the indices and stopping follow the seed
    assert [a([1, 2, 3])[0] for _ in range(30)] == [b([1, 2, 3])[0] for _ in range(30)]


# --- malformed candidate outputs never raise --------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [None, 3, (1,), (1, 2, 3), ("a", 1), (math.nan, 1), (True, 1), ([1], 2), (np.float64("nan"), 0)],
)
def test_a_malformed_output_ranks_lowest(bad: Any) -> None:
    good = _user(lambda x: (-(10**400), "good"))
    broken = _user(lambda x, bad=bad: bad)
    sel = dp.make_private_selection([good, broken], Fraction(1, 100), rng=SeededSource(2))
    for _ in range(5):
        index, score, output = sel([0])
        assert (index, score, output) == (0, -(10**400), "good")


def test_only_malformed_outputs_release_minus_infinity() -> None:
    sel = dp.make_private_selection([_user(lambda x: "no pair")], 0.5, rng=SeededSource(0))
    assert sel([0]) == (0, -math.inf, None)


@pytest.mark.parametrize(
    "score", [10**400, Fraction(1, 3), np.int64(5), np.float32(2.5), -math.inf, math.inf]
)
def test_scores_of_any_real_type_compare_exactly(score: Any) -> None:
    sel = dp.make_private_selection([_user(lambda x, s=score: (s, "x"))], 0.5, rng=SeededSource(0))
    _, got, out = sel([0])
    assert got == score and out == "x"


# --- bad input: a clear error, nothing run --------------------------------------------------------------


def test_bad_inputs_are_refused_before_anything_runs() -> None:
    log: list[int] = []
    ok = _counting(log, 0, 0)
    with pytest.raises(dp.InvalidParameter, match="candidates"):
        dp.make_private_selection([], 0.5)
    with pytest.raises(dp.InvalidParameter, match="candidates"):
        dp.make_private_selection([ok, "nope"], 0.5)  # type: ignore[list-item]
    with pytest.raises(dp.InvalidParameter, match="candidates"):
        dp.make_private_selection(iter([ok]), 0.5)  # type: ignore[arg-type]
    for gamma in (0, -0.1, 1.5, math.nan, math.inf):
        with pytest.raises(dp.InvalidParameter, match="stop_probability"):
            dp.make_private_selection([ok], gamma)
    with pytest.raises(dp.InvalidParameter, match="rng"):
        dp.make_private_selection([ok], 0.5, rng=42)  # type: ignore[arg-type]
    approx = _user(lambda x: (0, 0), measure=dp.ApproxDP())
    with pytest.raises(dp.UnsupportedComposition, match="PureDP"):
        dp.make_private_selection([ok, approx], 0.5)
    gauss = dp.t.make_count(INTS, SYM) >> dp.m.make_gaussian(dp.AtomDomain(int), dp.AbsoluteDistance(), 1.0)
    with pytest.raises(dp.UnsupportedComposition, match="PureDP.*make_private_selection_renyi"):
        dp.make_private_selection([gauss], 0.5)
    other = _user(lambda x: (0, 0), domain=dp.VectorDomain(dp.AtomDomain(float)))
    with pytest.raises(dp.DomainMismatch, match="input domain"):
        dp.make_private_selection([ok, other], 0.5)
    interactive = dp.m.make_interactive_laplace(INTS, SYM, scale=1.0, max_queries=1)
    with pytest.raises(dp.UnsupportedComposition, match="interactive"):
        dp.make_private_selection([interactive], 0.5)
    assert log == []


def test_three_epsilon_bounds_the_exact_output_law_of_a_binary_candidate() -> None:
    """The theorem's number against an exact computation: a candidate releasing one randomized-response
    bit b ∈ {0, 1} as (score b, output b), with P(b = 1) = e^ε/(1 + e^ε) on one dataset and 1/(1 + e^ε)
    on its neighbour. The best of K ~ Geometric(γ) runs is 0 iff every run gave 0:
    P(0) = E[(1 − p)^K] = γ(1 − p)/(1 − (1 − γ)(1 − p)). Its log-ratios stay within the map (3ε, and ε
    at γ = 1, where the law is the candidate's own and the bound is attained), computed with mpmath at 60
    digits (the 1e-50 allows only for that reference's own rounding)."""
    rr = dp.m.make_randomized_response(dp.CategoricalDomain([0, 1]), dp.DiscreteDistance(), 1.0)
    cand = dp.make_postprocess(rr, lambda b: (b, b))
    with mpmath.workdps(60):
        eps = mpmath.mpf(rr.map(1).numerator) / rr.map(1).denominator
        p, q = mpmath.exp(eps) / (1 + mpmath.exp(eps)), 1 / (1 + mpmath.exp(eps))
        for gamma in (1, 0.5, 0.1, 0.01, 1e-4):
            g = mpmath.mpf(gamma)
            worst = mpmath.mpf(0)
            for a, b in ((p, q), (q, p)):
                zero_a = g * (1 - a) / (1 - (1 - g) * (1 - a))
                zero_b = g * (1 - b) / (1 - (1 - g) * (1 - b))
                worst = max(
                    worst, abs(mpmath.log(zero_a / zero_b)), abs(mpmath.log((1 - zero_a) / (1 - zero_b)))
                )
            bound = dp.make_private_selection([cand], gamma).map(1)  # the library's map
            assert worst <= mpmath.mpf(bound.numerator) / bound.denominator + mpmath.mpf(10) ** -50
            if gamma == 1:
                assert abs(worst - eps) < mpmath.mpf(10) ** -50  # attained: no lower bound holds


@settings(max_examples=40, deadline=None)
@given(data=st.lists(st.integers(-(2**70), 2**70), max_size=20))
def test_no_in_domain_dataset_makes_it_raise(data: list[int]) -> None:
    """The contract of tests/test_contract_no_raise.py (which enumerates dp.t and dp.m) for this
    combinator: any member of the input domain, including a numpy array, gives a release."""
    sel = dp.make_private_selection([_scored(1), _scored(3)], Fraction(1, 3), rng=SeededSource(0))
    small = [x for x in data if abs(x) < 2**62]
    for value in (data, np.array(small, dtype=np.int64)):
        index, score, output = sel(value)
        assert index in (0, 1) and score in (-1, -3) and isinstance(output, int)


def _pair(x: Any) -> tuple[Any, Any]:
    return (x, x)


def test_both_selections_are_stored_and_rebuilt() -> None:
    """The selections are public constructors: a file rebuilds them with the same map."""
    dp.register_function("tests.select.pair", _pair)
    lap = dp.m.make_laplace(dp.AtomDomain(float), dp.AbsoluteDistance(), 1.0)
    pure = dp.make_private_selection([dp.make_postprocess(lap, _pair)], 0.5)
    assert dp.from_json(dp.to_json(pure)).map(1) == pure.map(1) == 3
    gauss = dp.m.make_gaussian(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=4.0)
    renyi = dp.make_private_selection_renyi([dp.make_postprocess(gauss, _pair)], dp.PoissonRuns(3))
    assert dp.from_json(dp.to_json(renyi)).map(1)(4) == renyi.map(1)(4)
