from __future__ import annotations

import itertools
from fractions import Fraction

import mpmath
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpcompose as dp
from dpcompose import accounting

FLOAT = dp.AtomDomain(float)
ABS = dp.AbsoluteDistance()
CAT = dp.CategoricalDomain([0, 1])
DISC = dp.DiscreteDistance()


def rr(eps: float, delta: float) -> dp.Measurement:  # type: ignore[type-arg]
    return dp.m.make_randomized_response_approx(CAT, DISC, epsilon=eps, delta=delta)


def test_auto_picks_least_epsilon_and_explain_shows_runners_up() -> None:
    lap = dp.m.make_laplace(FLOAT, ABS, scale=10.0)
    m = dp.make_concurrent(*[lap] * 100, output_measure=dp.ApproxDP(), delta=1e-6)
    eps, delta = m.map(1)
    assert delta == Fraction(1, 10**6)
    row = dp.explain(m, 1).rows[0]
    names = [n.split(" — ")[0] for n, _ in row.runners_up]
    assert {"basic", "advanced", "optimal", "zcdp"} <= set(names)
    basic_eps = accounting.basic([Fraction(1, 10)] * 100)[0]
    adv_eps = accounting.advanced([Fraction(1, 10)] * 100, [0] * 100, Fraction(1, 10**6))[0]
    assert eps <= basic_eps
    assert eps <= adv_eps


@given(st.lists(st.tuples(st.floats(0, 1), st.sampled_from([0.0, 1e-9, 1e-6, 1e-3])), min_size=1, max_size=5))
def test_forced_theorems_match_accounting_by_hand(pairs: list[tuple[float, float]]) -> None:
    children = [rr(e, d) for e, d in pairs]
    eps = [Fraction(e) for e, _ in pairs]
    dels = [Fraction(d) for _, d in pairs]
    assert dp.make_sequential(*children).map(1) == accounting.basic(eps, dels)
    vw = dp.make_concurrent(*children, theorem="vadhan-wang-2021").map(1)
    assert vw == accounting.concurrent_vadhan_wang(eps, dels)[:2]
    # Vadhan–Wang's δ is never below basic's: the default concurrent bound is the tighter basic one
    assert vw[1] >= dp.make_concurrent(*children).map(1)[1]


def test_vadhan_wang_is_concurrent_only() -> None:
    with pytest.raises(dp.UnsupportedComposition, match="applicable: basic"):
        dp.make_sequential(rr(1.0, 0.01), theorem="vadhan-wang-2021")


def test_forced_theorem_that_does_not_apply_says_why() -> None:
    lap = dp.m.make_laplace(FLOAT, ABS, scale=1.0)
    with pytest.raises(dp.UnsupportedComposition, match="delta="):
        dp.make_sequential(lap, lap, theorem="advanced")
    with pytest.raises(dp.InvalidParameter, match="theorem='best'"):
        dp.make_sequential(lap, theorem="best")
    tight = dp.make_sequential(rr(1.0, 0.01), rr(1.0, 0.01), delta=0.001, output_measure=dp.ApproxDP())
    with pytest.raises(dp.UnsupportedComposition, match="add up to more"):
        tight.map(1)


def test_zcdp_children_into_approx_need_delta() -> None:
    g = dp.m.make_gaussian(FLOAT, ABS, scale=5.0)
    lap = dp.m.make_laplace(FLOAT, ABS, scale=5.0)
    with pytest.raises(dp.UnsupportedComposition, match="delta"):
        dp.make_sequential(g, lap, output_measure=dp.ApproxDP())
    m = dp.make_sequential(g, lap, output_measure=dp.ApproxDP(), delta=1e-6, theorem="zcdp")
    rho = g.map(1) + accounting.pure_to_zcdp(lap.map(1))
    assert m.map(1) == (accounting.zcdp_to_approx(rho, Fraction(1, 10**6)), Fraction(1, 10**6))
    auto = dp.make_sequential(g, lap, output_measure=dp.ApproxDP(), delta=1e-6)
    assert auto.map(1)[0] <= m.map(1)[0]  # auto may take the PLD candidate (both children have pairs)


def test_pure_children_lift_to_zcdp() -> None:
    g = dp.m.make_gaussian(FLOAT, ABS, scale=2.0)
    lap = dp.m.make_laplace(FLOAT, ABS, scale=2.0)
    assert dp.make_concurrent(g, lap, output_measure=dp.ZCDP()).map(1) == Fraction(1, 4)


def test_vw_order_is_brute_force_minimum_small() -> None:
    pairs = [(0.5, 1e-3), (0.1, 1e-2), (1.0, 1e-4)]
    eps = [mpmath.mpf(e) for e, _ in pairs]
    dels = [mpmath.mpf(d) for _, d in pairs]
    with mpmath.workdps(50):
        best = min(
            mpmath.fsum(
                mpmath.exp(mpmath.fsum(eps[i] for i in order[:j])) * dels[k] for j, k in enumerate(order)
            )
            for order in itertools.permutations(range(3))
        )
    ours = dp.make_concurrent(*[rr(e, d) for e, d in pairs], theorem="vadhan-wang-2021").map(1)[1]
    assert best <= mpmath.mpf(ours.numerator) / ours.denominator <= best * (1 + mpmath.mpf(1e-9))


REFERENCE_K100 = 4.774567588107985  # exact optimum, ../shared/reference/accounting_cases.json


def test_optimal_composition_for_pure_children_and_auto_never_above_it() -> None:
    lap = dp.m.make_laplace(FLOAT, ABS, scale=10.0)
    forced = dp.make_sequential(*[lap] * 100, output_measure=dp.ApproxDP(), delta=1e-6, theorem="optimal")
    eps, _ = forced.map(1)
    assert REFERENCE_K100 <= float(eps) <= REFERENCE_K100 * (1 + 1e-9)
    auto = dp.make_sequential(*[lap] * 100, output_measure=dp.ApproxDP(), delta=1e-6)
    assert auto.map(1)[0] <= eps  # auto takes the least candidate (here the Laplace PLD)
    text = str(dp.explain(auto, 1))
    assert "· chosen" in text and "optimal — Kairouz" in text
    assert "laplace(scale=10.0) ×100" in text


def test_explain_interaction_column() -> None:
    ints = dp.VectorDomain(dp.AtomDomain(int))
    sym = dp.SymmetricDistance()
    svt = dp.m.make_sparse_vector(ints, sym, threshold=10.0, scale=2.0, max_positive=1)
    count = dp.t.make_count(ints, sym)
    lap = count >> dp.m.make_laplace(count.output_domain, count.output_metric, scale=10.0)
    rows = dp.explain(dp.make_concurrent(svt, lap), 1).rows
    assert [r.interaction for r in rows] == [
        "interactive, concurrent",
        "interactive",
        "non-interactive",
        "non-interactive",
        "non-interactive",
    ]
