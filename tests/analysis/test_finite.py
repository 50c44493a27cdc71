"""Tests of finite interactive mechanisms and their exact privacy loss."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import dpcompose as dp
from dpcompose.analysis._finite import (
    FiniteInteractiveMechanism,
    History,
    adversary_count,
    compare_concurrent,
    concurrent_composition,
    deterministic_adversaries,
    exp_privacy_loss,
    privacy_loss,
    randomized_response,
    tightest_exp_epsilon,
)
from dpcompose.errors import InvalidParameter

# --- a hand-made 2-round mechanism ----------------------------------------------------------------------
# Round 1: one query "u", a fair coin under both inputs (no information).
# Round 2: query "v" is again a fair coin; query "w" leaks: after a1 = 0 it is RR with e^ε = 3, after
# a1 = 1 RR with e^ε = 2.


def _hand_probs(b: int, h: History, q: object) -> tuple[F, F]:
    if q in ("u", "v"):
        return (F(1, 2), F(1, 2))
    a1 = h[0][1]
    keep = F(3, 4) if a1 == 0 else F(2, 3)
    return (keep, 1 - keep) if b == 0 else (1 - keep, keep)


HAND = FiniteInteractiveMechanism.from_rounds([["u"], ["v", "w"]], [[0, 1], [0, 1]], _hand_probs)


@pytest.mark.parametrize(
    ("delta", "expected"),
    [
        # δ = 0: the largest transcript ratio, 3.
        (F(0), F(3)),
        # The adversary asking "w" twice sees x0: (3/8, 1/8, 1/3, 1/6), x1: (1/8, 3/8, 1/6, 1/3);
        # δ(t) = (3/8 − t/8)+ + (1/3 − t/6)+.
        # δ = 1/16: only the first term, 3/8 − t/8 = 1/16 → t = 5/2.
        (F(1, 16), F(5, 2)),
        # δ = 1/8: t = 2 exactly (the second term vanishes at t = 2).
        (F(1, 8), F(2)),
        # δ = 1/4: both terms, 17/24 − 7t/24 = 1/4 → t = 11/7.
        (F(1, 4), F(11, 7)),
        # The mixed adversary ("w" then "v") only reaches δ(t) = 3/8 − t/8 ≤ 3/8 − 1/8 = 1/4 at t = 1 ...
        # so δ = 3/8 gives t = 1 for it, while "w","w" gives 17/24 − 7t/24 = 3/8 → t = 8/7.
        (F(3, 8), F(8, 7)),
        # δ ≥ δ(1) = 17/24 − 7/24 = 5/12: ε = 0.
        (F(5, 12), F(1)),
    ],
)
def test_hand_made_two_round_mechanism(delta: F, expected: F) -> None:
    assert exp_privacy_loss(HAND, delta) == expected
    assert exp_privacy_loss(HAND, delta, method="enumerate") == expected
    eps = privacy_loss(HAND, delta)
    assert math.log(expected) <= eps <= math.log(expected) * (1 + 1e-9) + 1e-15


def test_hand_made_adversary_count() -> None:
    assert adversary_count(HAND) == 4 == len(list(deterministic_adversaries(HAND)))


# --- randomized response --------------------------------------------------------------------------------

rationals_ge1 = st.fractions(min_value=1, max_value=50, max_denominator=1000)
deltas = st.fractions(min_value=0, max_value=F(9, 10), max_denominator=1000)


@given(rationals_ge1)
def test_rr_pure_is_exactly_epsilon(t: F) -> None:
    rr = randomized_response(t)
    assert exp_privacy_loss(rr, 0) == t
    eps = privacy_loss(rr, 0)
    ref = math.log(t)
    assert ref <= eps <= ref * (1 + 1e-9) + 1e-15


@given(rationals_ge1, deltas.filter(lambda d: d > 0))
def test_rr_approx_at_delta_is_epsilon(t: F, d: F) -> None:
    rr = randomized_response(t, d)
    assert exp_privacy_loss(rr, d) == t
    assert exp_privacy_loss(rr, d, method="enumerate") == t


def test_rr_below_delta_is_infinite() -> None:
    assert exp_privacy_loss(randomized_response(2, F(1, 10)), F(1, 20)) is None
    assert privacy_loss(randomized_response(2, F(1, 10)), F(1, 20)) == math.inf


@given(st.floats(min_value=0.0, max_value=20.0))
def test_rr_float_epsilon(eps: float) -> None:
    p = math.exp(eps) / (1 + math.exp(eps))
    rr = FiniteInteractiveMechanism({(): {"b": {0: (p, 1 - p), 1: (1 - p, p)}}})
    ours = privacy_loss(rr, 0)
    # The mechanism's own ε is ln(p/(1 − p)) for the binary value of p (which is ε up to float error).
    ref = math.log(F(p) / (1 - F(p))) if p < 1 else math.inf
    assert ref <= ours <= ref * (1 + 1e-9) + 1e-15
    assert abs(float(ours) - eps) <= 1e-6


# --- brute force reference ------------------------------------------------------------------------------


def _all_adversaries(m: FiniteInteractiveMechanism) -> list[dict[History, object]]:
    """Every deterministic adversary, without pruning: one query per non-terminal history."""
    hs = m.histories()
    return [dict(zip(hs, choice, strict=True)) for choice in itertools.product(*(m.queries(h) for h in hs))]


def _view(m: FiniteInteractiveMechanism, adv: dict[History, object], b: int) -> list[F]:
    out = []
    for tr in m.transcripts():
        if all(adv[tr[:i]] == tr[i][0] for i in range(len(tr))):
            out.append(m.transcript_probability(b, tr))
    return out


def _delta_at(m: FiniteInteractiveMechanism, t: F) -> F:
    """max over all adversaries and both directions of Σ (P − tQ)+ (no pruning, no tree recursion)."""
    worst = F(0)
    for adv in _all_adversaries(m):
        v0, v1 = _view(m, adv, 0), _view(m, adv, 1)
        for p, q in ((v0, v1), (v1, v0)):
            worst = max(worst, sum((max(pi - t * qi, F(0)) for pi, qi in zip(p, q, strict=True)), F(0)))
    return worst


@st.composite
def small_mechanisms(draw: st.DrawFn, positive: bool = False) -> FiniteInteractiveMechanism:
    rounds = draw(st.integers(1, 2))
    qs = [list(range(draw(st.integers(1, 2)))) for _ in range(rounds)]
    as_ = [list(range(draw(st.integers(2, 3)))) for _ in range(rounds)]
    weights = st.integers(1 if positive else 0, 4)
    cache: dict[tuple[int, History, object], tuple[F, ...]] = {}

    def probs(b: int, h: History, q: object) -> tuple[F, ...]:
        key = (b, h, q)
        if key not in cache:
            n = len(as_[len(h)])
            w = [draw(weights) for _ in range(n)]
            if sum(w) == 0:
                w[0] = 1
            cache[key] = tuple(F(x, sum(w)) for x in w)
        return cache[key]

    return FiniteInteractiveMechanism.from_rounds(qs, as_, probs)


@given(small_mechanisms(), deltas)
def test_privacy_loss_matches_brute_force(m: FiniteInteractiveMechanism, d: F) -> None:
    t = exp_privacy_loss(m, d)
    assert t == exp_privacy_loss(m, d, method="enumerate")
    if t is None:
        # No finite ε: even t → ∞ leaves more than δ (mass where the other input has probability 0).
        assert _delta_at(m, F(10**12)) > d
        return
    assert _delta_at(m, t) <= d  # (ln t, δ)-DP holds ...
    if t > 1:  # ... and nothing smaller works
        assert _delta_at(m, t * (1 - F(1, 10**9))) > d


@given(small_mechanisms())
def test_pure_privacy_loss_is_max_transcript_ratio(m: FiniteInteractiveMechanism) -> None:
    ratios: list[F | None] = []
    for tr in m.transcripts():
        p0, p1 = m.transcript_probability(0, tr), m.transcript_probability(1, tr)
        if (p0 == 0) != (p1 == 0):
            ratios.append(None)
        elif p0 > 0:
            ratios.append(max(p0 / p1, p1 / p0))
    expected = None if None in ratios else max([F(1), *(r for r in ratios if r is not None)])
    assert exp_privacy_loss(m, 0) == expected


# --- cost: the number of adversaries --------------------------------------------------------------------


def test_adversary_count_formula_without_equivalences() -> None:
    # Three rounds, |Q_r| = 2, |A_r| = 2, all probabilities distinct: Π |Q_r|^(|A_1|···|A_(r−1)|) = 2·2²·2⁴.
    counter = itertools.count(1)
    table: dict[tuple[int, History, object], tuple[F, F]] = {}

    def probs(b: int, h: History, q: object) -> tuple[F, F]:
        if (b, h, q) not in table:
            p = F(next(counter), 1000)
            table[(b, h, q)] = (p, 1 - p)
        return table[(b, h, q)]

    m = FiniteInteractiveMechanism.from_rounds([[0, 1]] * 3, [[0, 1]] * 3, probs)
    assert adversary_count(m) == 2 * 2**2 * 2**4 == 128
    assert len(list(deterministic_adversaries(m))) == 128


def test_equivalent_queries_are_pruned() -> None:
    # Two identical queries in each of 2 rounds with 3 answers: 2·2³ = 16 adversaries unpruned, 1 pruned.
    m = FiniteInteractiveMechanism.from_rounds(
        [["a", "b"], ["a", "b"]],
        [[0, 1, 2]] * 2,
        lambda b, h, q: (F(1, 2), F(1, 4), F(1, 4)) if b == 0 else (F(1, 4), F(1, 2), F(1, 4)),
    )
    reachable = {
        tuple(sorted((h, q) for h, q in adv.items() if all(adv[h[:i]] == h[i][0] for i in range(len(h)))))
        for adv in _all_adversaries(m)
    }
    assert len(reachable) == 2 * 2**3
    assert adversary_count(m) == 1
    assert exp_privacy_loss(m, F(1, 10)) == exp_privacy_loss(m, F(1, 10), method="enumerate")


def test_unreachable_histories_are_pruned() -> None:
    # Answer 1 of round 1 has probability 0 under both inputs: the choice after it is irrelevant.
    m = FiniteInteractiveMechanism.from_rounds(
        [["u"], ["v", "w"]],
        [[0, 1], [0, 1]],
        lambda b, h, q: (
            (F(1), F(0))
            if q == "u"
            else ((F(1, 2), F(1, 2)) if q == "v" else ((F(2, 3), F(1, 3)) if b == 0 else (F(1, 3), F(2, 3))))
        ),
    )
    assert adversary_count(m) == 2  # not 1·2² = 4
    assert exp_privacy_loss(m, 0) == 2


# --- tightest ε between two distributions ---------------------------------------------------------------


@given(
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), min_size=1, max_size=6).filter(
        lambda xs: sum(a for a, _ in xs) > 0 and sum(b for _, b in xs) > 0
    ),
    deltas,
)
def test_tightest_exp_epsilon_is_tightest(xs: list[tuple[int, int]], d: F) -> None:
    sp, sq = sum(a for a, _ in xs), sum(b for _, b in xs)
    p = [F(a, sp) for a, _ in xs]
    q = [F(b, sq) for _, b in xs]

    def dlt(t: F) -> F:
        return sum((max(pi - t * qi, F(0)) for pi, qi in zip(p, q, strict=True)), F(0))

    t = tightest_exp_epsilon(p, q, d)
    if t is None:
        assert sum((pi for pi, qi in zip(p, q, strict=True) if qi == 0), F(0)) > d
    else:
        assert t >= 1
        assert dlt(t) <= d
        if t > 1:
            assert dlt(t * (1 - F(1, 10**12))) > d


# --- concurrent composition -----------------------------------------------------------------------------


def test_concurrent_composition_of_pure_rr_multiplies() -> None:
    c = concurrent_composition(randomized_response(3), randomized_response(F(5, 2)))
    assert exp_privacy_loss(c, 0) == F(15, 2)
    # Both orders of the two rounds are available to the adversary.
    assert sorted(map(str, c.queries(()))) == ["(1, 'b')", "(2, 'b')"]
    assert c.rounds == 2
    assert len(c.transcripts()) == 8


def test_concurrent_composition_interleaves() -> None:
    c = concurrent_composition(HAND, randomized_response(2))
    assert c.rounds == 3
    # 3 interleavings of (HAND's 2 rounds, RR's 1 round); every transcript has probability ≤ 1.
    firsts = {str(tr[0][0]) for tr in c.transcripts()}
    assert firsts == {"(1, 'u')", "(2, 'b')"}
    # Every interleaving of the 3 rounds is present: 3 orders × 2·2·2 answers × 1 query each for HAND's
    # round 2 choice of "v"/"w" (2 options) → 3 · 8 · 2 transcripts.
    assert len(c.transcripts()) == 3 * 8 * 2
    assert exp_privacy_loss(c, 0) == 6


# --- validation -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "match"),
    [
        ({(): {"q": {0: (F(1, 2), F(1, 2)), 1: (F(1, 3), F(1, 2))}}}, "sum to"),
        ({(): {"q": {0: (F(3, 2), F(1, 2)), 1: (F(-1, 2), F(1, 2))}}}, r"must lie in \[0, 1\]"),
        ({(): {"q": {0: (float("nan"), 0.5), 1: (0.5, 0.5)}}}, "finite"),
        ({(): {"q": {0: (0.5, 0.5), 1: (0.5, 0.5)}}, (("q", 2),): {"r": {0: (1, 1)}}}, "not reachable"),
        ({(): {}}, "non-empty"),
        ({(): {"q": {}}}, "non-empty"),
        ({("x",): {"q": {0: (1, 1)}}}, r"empty history \(\)"),
        ({(): {"q": {0: (1,)}}}, "pair"),
    ],
)
def test_bad_tables_are_refused(table: object, match: str) -> None:
    with pytest.raises(InvalidParameter, match=match):
        FiniteInteractiveMechanism(table)  # type: ignore[arg-type]


def test_float_rounding_is_renormalised_exactly() -> None:
    m = FiniteInteractiveMechanism({(): {"q": {0: (0.1, 0.7), 1: (0.2, 0.2), 2: (0.7, 0.1)}}})
    assert sum(m.probability(0, (), "q", a) for a in (0, 1, 2)) == 1


@pytest.mark.parametrize("delta", [-0.1, 1.0, float("nan"), float("inf")])
def test_bad_delta(delta: float) -> None:
    with pytest.raises(InvalidParameter, match="delta"):
        privacy_loss(HAND, delta)


def test_bad_method_and_rr() -> None:
    with pytest.raises(InvalidParameter, match="method"):
        exp_privacy_loss(HAND, 0, method="guess")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameter, match="exp_epsilon"):
        randomized_response(F(1, 2))


def test_accessors() -> None:
    assert HAND.rounds == 2
    assert HAND.is_terminal((("u", 0), ("v", 1)))
    assert not HAND.is_terminal(())
    assert HAND.transcript_probability(0, (("u", 0), ("w", 0))) == F(3, 8)
    assert FiniteInteractiveMechanism(HAND.table()) == HAND
    assert "rounds=2" in repr(HAND)
    with pytest.raises(InvalidParameter, match="not offered"):
        HAND.answers((), "zzz")
    with pytest.raises(InvalidParameter, match="b=2"):
        HAND.probability(2, (), "u", 0)


# --- as a Measurement -----------------------------------------------------------------------------------


def test_as_measurement_samples_the_right_distribution() -> None:
    meas = HAND.as_measurement(rng=np.random.default_rng(7))
    counts: dict[tuple[object, object], int] = {}
    n = 4000
    for _ in range(n):
        q = meas(0)
        a1 = q("u")
        a2 = q("w")
        counts[(a1, a2)] = counts.get((a1, a2), 0) + 1
    for (a1, a2), k in counts.items():
        p = float(HAND.transcript_probability(0, (("u", a1), ("w", a2))))
        assert abs(k / n - p) < 4 * math.sqrt(p * (1 - p) / n) + 1e-3


def test_as_measurement_map_and_errors() -> None:
    pure = HAND.as_measurement()
    assert pure.output_measure == dp.PureDP()
    assert pure.map(1) == privacy_loss(HAND, 0)
    approx = HAND.as_measurement(delta=0.125, labels=("alice out", "alice in"))
    assert approx.map(1) == (privacy_loss(HAND, F(1, 8)), F(1, 8))
    assert approx.map(0) == (0, 0)
    q = approx("alice in")
    with pytest.raises(InvalidParameter, match="not offered"):
        q("w")  # round 1 offers only "u"; the refused query spends nothing
    q("u")
    q("v")
    with pytest.raises(dp.SequentialityError, match="over"):
        q("v")
    with pytest.raises(dp.DomainMismatch):
        approx("bob")
    with pytest.raises(InvalidParameter, match="labels"):
        HAND.as_measurement(labels=(1, 1))
    with pytest.raises(InvalidParameter, match="finite"):
        randomized_response(2, F(1, 10)).as_measurement(delta=0)


def test_as_measurement_composes_with_the_combinators() -> None:
    rng = np.random.default_rng(1)
    m1 = randomized_response(3).as_measurement(rng=rng)
    m2 = HAND.as_measurement(rng=rng)
    both = dp.make_concurrent(m1, m2)
    # The combinator's bound (basic composition) is never below the exact concurrent PrivLoss.
    exact_loss = privacy_loss(concurrent_composition(randomized_response(3), HAND), 0)
    assert both.map(1) >= exact_loss
    q1, q2 = both(1)
    q2("u")
    q1("b")  # interleaved
    q2("w")


# --- concurrent composition against Theorem 1.8 and optimal composition ---------------------------------


@settings(max_examples=25)
@given(
    small_mechanisms(positive=True),
    small_mechanisms(positive=True),
    st.fractions(min_value=0, max_value=F(1, 5), max_denominator=100),
    st.fractions(min_value=0, max_value=F(1, 5), max_denominator=100),
)
def test_exact_le_optimal_le_theorem_1_8(
    m1: FiniteInteractiveMechanism, m2: FiniteInteractiveMechanism, d1: F, d2: F
) -> None:
    try:
        c = compare_concurrent(m1, m2, d1, d2)
    except InvalidParameter:  # Theorem 1.8's δ reached 1
        event("skipped: δ_g ≥ 1")
        return
    assert c.exp_exact is not None
    assert c.exp_exact <= c.exp_optimal <= c.exp_theorem_1_8
    assert c.exact <= c.optimal <= c.theorem_1_8


def test_theorem_1_8_loose_and_tight() -> None:
    # Pure: all three agree (e^ε = 3·2).
    pure = compare_concurrent(randomized_response(3), randomized_response(2), 0, 0)
    assert pure.exp_exact == pure.exp_optimal == pure.exp_theorem_1_8 == 6
    # Approximate: Theorem 1.8 asks for e^ε = 9 at δ = 1/5, the truth is 2593/361 ≈ 7.18 (hand check:
    # Q = 0 mass 1 − 0.95² = 0.0975, then the (0, 0) outcome with P = 0.7125², Q = 0.2375²).
    c = compare_concurrent(randomized_response(3, 0.05), randomized_response(3, 0.05), 0.05, 0.05)
    p, q = F(95, 100) ** 2 * F(9, 16), F(95, 100) ** 2 * F(1, 16)
    assert c.exp_exact == (1 - F(95, 100) ** 2 + p - F(1, 5)) / q == F(2593, 361)
    assert c.theorem_1_8 > c.optimal


@settings(max_examples=30)
@given(
    st.fractions(min_value=1, max_value=10, max_denominator=50),
    st.fractions(min_value=1, max_value=10, max_denominator=50),
    st.fractions(min_value=0, max_value=F(1, 20), max_denominator=1000),
    st.fractions(min_value=0, max_value=F(1, 20), max_denominator=1000),
)
def test_compare_concurrent_matches_the_accounting_functions(t1: F, t2: F, d1: F, d2: F) -> None:
    # The accounting layer computes the same two bounds in floating point with outward rounding.
    c = compare_concurrent(randomized_response(t1, d1), randomized_response(t2, d2), d1, d2)
    eps, delta, _ = dp.accounting.concurrent_vadhan_wang([c.eps1, c.eps2], [d1, d2])
    assert eps == c.eps1 + c.eps2 >= c.theorem_1_8 * (1 - F(1, 10**12))
    assert c.delta <= delta <= c.delta * (1 + F(1, 10**9)) + F(1, 10**15)
    opt = dp.accounting.optimal_epsilon([c.eps1, c.eps2], [d1, d2], c.delta)
    assert c.optimal * (1 - F(1, 10**12)) <= opt <= c.optimal + F(1, 10**6)
