"""Tests of the Section 6 linear program (Vadhan–Wang 2021)."""

from __future__ import annotations

import math
from fractions import Fraction as F

import numpy as np
import pytest

from dpcompose.analysis._finite import (
    FiniteInteractiveMechanism,
    History,
    concurrent_composition,
    privacy_loss,
    randomized_response,
)
from dpcompose.analysis._lp import RR_OUTPUTS, LPSimulation, lp_simulation, two_round_mechanism
from dpcompose.errors import InvalidParameter


def _hand_probs(b: int, h: History, q: object) -> tuple[F, F]:
    if q in ("u", "v"):
        return (F(1, 2), F(1, 2))
    keep = F(3, 4) if h[0][1] == 0 else F(2, 3)
    return (keep, 1 - keep) if b == 0 else (1 - keep, keep)


HAND = FiniteInteractiveMechanism.from_rounds([["u"], ["v", "w"]], [[0, 1], [0, 1]], _hand_probs)

FIXED = [
    ("RR(3, 1/10)", randomized_response(3, F(1, 10)), F(1, 10)),
    ("RR(3, 1/10) at δ = 1/5", randomized_response(3, F(1, 10)), F(1, 5)),
    ("hand-made, δ = 0", HAND, F(0)),
    ("hand-made, δ = 1/8", HAND, F(1, 8)),
    ("hand-made, δ = 1/4", HAND, F(1, 4)),
    ("two-round", two_round_mechanism([0.3, 0.6, 0.2, 0.9, 0.5], [0.4, 0.5, 0.35, 0.7, 0.55]), F(1, 100)),
    (
        "two-round δ=0.1",
        two_round_mechanism([0.3, 0.6, 0.2, 0.9, 0.5], [0.4, 0.5, 0.35, 0.7, 0.55]),
        F(1, 10),
    ),
    ("RR ∥ RR", concurrent_composition(randomized_response(2, F(1, 20)), randomized_response(3)), F(1, 20)),
]


def _check_simulation(m: FiniteInteractiveMechanism, res: LPSimulation) -> None:
    """Independently recompute Pr[τ] under T(RR_(ε, δ)(b)) from the returned behaviour and compare."""
    assert res.post_processor is not None
    eps, d = res.epsilon, res.delta
    keep = (1 - d) * math.exp(eps) / (1 + math.exp(eps))
    rr = {0: [keep, 1 - d - keep, d, 0.0], 1: [1 - d - keep, keep, 0.0, d]}
    for z in RR_OUTPUTS:
        beh = res.post_processor[z]
        for h, node in beh.items():
            for answers in node.values():
                assert all(p >= 0 for p in answers.values())
                assert math.isclose(sum(answers.values()), 1.0, abs_tol=1e-9), h
    for tau in m.transcripts():
        for b in (0, 1):
            total = 0.0
            for z_i, z in enumerate(RR_OUTPUTS):
                pr = 1.0
                for i, (q, a) in enumerate(tau):
                    pr *= res.post_processor[z][tau[:i]][q][a]
                total += rr[b][z_i] * pr
            assert math.isclose(total, float(m.transcript_probability(b, tau)), abs_tol=1e-7)


@pytest.mark.parametrize(("name", "mech", "delta"), FIXED, ids=[f[0] for f in FIXED])
def test_feasible_at_privacy_loss(name: str, mech: FiniteInteractiveMechanism, delta: F) -> None:
    eps = privacy_loss(mech, delta)
    res = lp_simulation(mech, eps, delta)
    assert res.feasible, (name, res.status)
    assert res.residuals is not None
    assert res.max_residual < 1e-7
    assert np.max(np.abs(res.residuals)) < 1e-7
    _check_simulation(mech, res)
    # A larger ε is feasible too.
    assert lp_simulation(mech, float(eps) + 0.5, delta).feasible


@pytest.mark.parametrize(("name", "mech", "delta"), FIXED, ids=[f[0] for f in FIXED])
def test_infeasible_below_privacy_loss(name: str, mech: FiniteInteractiveMechanism, delta: F) -> None:
    eps = privacy_loss(mech, delta)
    if eps == 0:
        pytest.skip("PrivLoss is 0")
    for below in (float(eps) * 0.5, float(eps) - 0.05):
        if below < 0:
            continue
        res = lp_simulation(mech, below, delta)
        assert not res.feasible, (name, below)
        assert res.post_processor is None
        assert res.max_residual == math.inf


def test_infeasible_with_smaller_delta() -> None:
    rr = randomized_response(3, F(1, 10))
    assert not lp_simulation(rr, privacy_loss(rr, F(1, 10)), F(1, 20)).feasible


def test_bad_parameters() -> None:
    with pytest.raises(InvalidParameter, match="epsilon"):
        lp_simulation(HAND, -1.0, 0)
    with pytest.raises(InvalidParameter, match="delta"):
        lp_simulation(HAND, 1.0, 1.0)
    with pytest.raises(InvalidParameter, match="5 numbers"):
        two_round_mechanism([0.5] * 4, [0.5] * 5)
    with pytest.raises(InvalidParameter, match=r"p_prime\[1\]"):
        two_round_mechanism([0.5] * 5, [0.5, 1.5, 0.5, 0.5, 0.5])


def test_two_round_mechanism_layout() -> None:
    m = two_round_mechanism([F(1, 2), F(1, 3), F(1, 4), F(1, 5), F(1, 6)], [F(1, 7)] * 5)
    assert m.probability(0, (), "start", 0) == F(1, 2)
    assert m.probability(0, (("start", 0),), 0, 0) == F(1, 3)  # p00
    assert m.probability(0, (("start", 0),), 1, 0) == F(1, 4)  # p01
    assert m.probability(0, (("start", 1),), 0, 0) == F(1, 5)  # p10
    assert m.probability(0, (("start", 1),), 1, 1) == F(5, 6)  # 1 − p11
    assert m.probability(1, (("start", 1),), 1, 0) == F(1, 7)
