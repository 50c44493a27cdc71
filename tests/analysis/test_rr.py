"""Tests of the randomized-response simulator (Vadhan–Wang 2021, Theorem 1.10 / 5.4)."""

from __future__ import annotations

from fractions import Fraction as F

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpcompose.analysis._finite import (
    FiniteInteractiveMechanism,
    History,
    concurrent_composition,
    exp_privacy_loss,
    randomized_response,
)
from dpcompose.analysis._rr import rr_simulator
from dpcompose.errors import InvalidParameter


@st.composite
def pure_mechanisms(draw: st.DrawFn) -> FiniteInteractiveMechanism:
    """Random finite mechanisms with all probabilities positive (so they are ε-DP for some finite ε)."""
    rounds = draw(st.integers(1, 3))
    qs = [list(range(draw(st.integers(1, 2)))) for _ in range(rounds)]
    as_ = [list(range(draw(st.integers(2, 3 if rounds < 3 else 2)))) for _ in range(rounds)]
    cache: dict[tuple[int, History, object], tuple[F, ...]] = {}

    def probs(b: int, h: History, q: object) -> tuple[F, ...]:
        if (b, h, q) not in cache:
            w = [draw(st.integers(1, 9)) for _ in as_[len(h)]]
            cache[(b, h, q)] = tuple(F(x, sum(w)) for x in w)
        return cache[(b, h, q)]

    return FiniteInteractiveMechanism.from_rounds(qs, as_, probs)


def _independent_view_check(m: FiniteInteractiveMechanism, post: FiniteInteractiveMechanism, t: F) -> None:
    """Recompute Pr[τ] under T(RR_ε(b)) from scratch for every transcript τ and compare with M(x_b)."""
    keep, flip = t / (1 + t), 1 / (1 + t)
    for tau in m.transcripts():
        for b in (0, 1):
            t_prob = [F(1), F(1)]
            for i, (q, a) in enumerate(tau):
                for c in (0, 1):
                    t_prob[c] *= post.probability(c, tau[:i], q, a)
            mixed = keep * t_prob[b] + flip * t_prob[1 - b]
            assert mixed == m.transcript_probability(b, tau)


@given(pure_mechanisms(), st.fractions(min_value=0, max_value=3, max_denominator=50))
def test_views_agree_exactly_on_random_pure_mechanisms(m: FiniteInteractiveMechanism, slack: F) -> None:
    t = exp_privacy_loss(m, 0)
    assert t is not None
    for tt in (t, t + slack):
        sim = rr_simulator(m, tt)
        assert sim.exp_epsilon == tt
        assert sim.adversaries_checked >= 1
        assert sim.transcripts_checked == len(m.transcripts())
        _independent_view_check(m, sim.post_processor, tt)


@given(pure_mechanisms())
def test_fails_clearly_when_not_epsilon_dp(m: FiniteInteractiveMechanism) -> None:
    t = exp_privacy_loss(m, 0)
    assert t is not None
    if t > 1:
        with pytest.raises(InvalidParameter, match=r"is not ln\(.*\)-DP: transcript"):
            rr_simulator(m, 1 + (t - 1) * F(999, 1000))


def test_zero_epsilon_mechanism() -> None:
    m = FiniteInteractiveMechanism({(): {"q": {0: (F(1, 3), F(1, 3)), 1: (F(2, 3), F(2, 3))}}})
    sim = rr_simulator(m, 1)
    _independent_view_check(m, sim.post_processor, F(1))


def test_rr_of_rr_is_rr_at_the_same_epsilon() -> None:
    # Simulating RR_ε by RR_ε: T is the identity.
    sim = rr_simulator(randomized_response(4), 4)
    assert sim.post_processor.probability(0, (), "b", 0) == 1
    assert sim.post_processor.probability(1, (), "b", 1) == 1


def test_concurrent_composition_is_simulated() -> None:
    c = concurrent_composition(randomized_response(2), randomized_response(F(3, 2)))
    sim = rr_simulator(c, 3)
    _independent_view_check(c, sim.post_processor, F(3))
    assert "views equal" in repr(sim)


def test_unreachable_prefix_and_bad_epsilon() -> None:
    # A transcript of probability 0 under both inputs: T may answer anything there.
    m = FiniteInteractiveMechanism.from_rounds(
        [["u"], ["v"]],
        [[0, 1], [0, 1]],
        lambda b, h, q: (F(1), F(0)) if q == "u" else ((F(2, 3), F(1, 3)) if b == 0 else (F(1, 3), F(2, 3))),
    )
    _independent_view_check(m, rr_simulator(m, 2).post_processor, F(2))
    with pytest.raises(InvalidParameter, match="exp_epsilon"):
        rr_simulator(m, F(1, 2))
    with pytest.raises(InvalidParameter, match="exp_epsilon"):
        rr_simulator(m, float("nan"))
