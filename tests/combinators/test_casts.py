from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpcompose as dp
from dpcompose import accounting
from dpcompose.accounting._filters import DEFAULT_ORDERS

FLOAT = dp.AtomDomain(float)
ABS = dp.AbsoluteDistance()


@given(st.floats(0.01, 100), st.integers(0, 5))
def test_pure_to_zcdp_matches_accounting(scale: float, d: int) -> None:
    lap = dp.m.make_laplace(FLOAT, ABS, scale=scale)
    assert dp.make_pure_to_zcdp(lap).map(d) == accounting.pure_to_zcdp(lap.map(d))


def test_zcdp_to_approx_matches_accounting() -> None:
    g = dp.m.make_gaussian(FLOAT, ABS, scale=3.0)
    eps, delta = dp.make_zcdp_to_approx(g, 1e-5).map(2)
    assert delta == Fraction(1, 10**5)
    assert eps == accounting.zcdp_to_approx(g.map(2), Fraction(1, 10**5))
    with pytest.raises(dp.InvalidParameter, match="delta=0"):
        dp.make_zcdp_to_approx(g, 0.0)
    with pytest.raises(dp.DomainMismatch, match="ZCDP"):
        dp.make_zcdp_to_approx(dp.m.make_laplace(FLOAT, ABS, scale=1.0), 1e-6)


def test_casts_let_mixed_children_compose() -> None:
    lap = dp.m.make_laplace(FLOAT, ABS, scale=2.0)
    g = dp.m.make_gaussian(FLOAT, ABS, scale=2.0)
    both = dp.make_sequential(dp.make_pure_to_zcdp(lap), g)
    assert both.map(1) == Fraction(1, 8) + Fraction(1, 8)


def test_group_privacy_from_map_at_one() -> None:
    lap = dp.m.make_laplace(FLOAT, ABS, scale=2.0)
    assert dp.make_group(lap, 4).map(1) == 2
    assert dp.make_group(lap, 4).map(0) == 0
    g = dp.m.make_gaussian(FLOAT, ABS, scale=1.0)
    assert dp.make_group(g, 3).map(1) == Fraction(9, 2)
    rr = dp.m.make_randomized_response_approx(
        dp.CategoricalDomain([0, 1]), dp.DiscreteDistance(), epsilon=0.5, delta=0.01
    )
    assert dp.make_group(rr, 2).map(1) == accounting.group(Fraction(1, 2), Fraction(0.01), 2)
    with pytest.raises(dp.InvalidParameter, match="k="):
        dp.make_group(lap, 0)


def test_interactive_postprocess_rewrites_queries_and_answers() -> None:
    ints = dp.VectorDomain(dp.AtomDomain(int))
    sym = dp.SymmetricDistance()
    lap = dp.m.make_interactive_laplace(ints, sym, scale=1e-9, max_queries=2)
    count = dp.t.make_count(ints, sym)
    by_name = dp.make_postprocess(
        lap, lambda q: dp.wrap_queryable(q, query_map={"count": count}.__getitem__, answer_map=round)
    )
    assert by_name.map(1) == lap.map(1)
    q = by_name([1, 2, 3])
    assert q("count") == 3


def test_binary_search_exact_boundaries() -> None:
    def make(s: float) -> dp.Measurement:  # type: ignore[type-arg]
        return dp.m.make_laplace(FLOAT, ABS, scale=s)

    assert dp.binary_search_param(make, 1, 1 / 15) == 15.0
    assert dp.binary_search_param(make, 1, 0.1) == 10.0
    s = dp.binary_search_param(make, 1, 0.3)
    assert make(s).check(1, 0.3)
    assert not make(float.__sub__(s, s * 2**-52)).check(1, 0.3)

    def rr(eps: float) -> dp.Measurement:  # type: ignore[type-arg]
        return dp.m.make_randomized_response(
            dp.CategoricalDomain(["a", "b"]), dp.DiscreteDistance(), epsilon=eps
        )

    assert dp.binary_search_param(rr, 1, 0.75, bounds=(0.0, 10.0)) == 0.75  # decreasing: largest passing
    with pytest.raises(dp.InvalidParameter, match="both ends"):
        dp.binary_search_param(make, 1, 1.0, bounds=(5.0, 10.0))


def test_binary_search_integer_parameters() -> None:
    ints = dp.VectorDomain(dp.AtomDomain(int))
    sym = dp.SymmetricDistance()

    def make(k: int) -> dp.Measurement:  # type: ignore[type-arg]
        return dp.m.make_interactive_laplace(ints, sym, scale=10.0, max_queries=k)

    assert dp.binary_search_param(make, 1, 1.0, bounds=(1, 1000)) == 10


@given(st.lists(st.integers(1, 100), min_size=1, max_size=10), st.sampled_from([1.0, 0.1, 2.5]))
def test_split_budget_sums_exactly(weights: list[int], budget: float) -> None:
    parts = dp.split_budget(budget, weights)
    assert sum(parts, Fraction(0)) == accounting.decimal(budget)
    lap_parts = [dp.m.make_laplace(FLOAT, ABS, scale=float(1 / p)) for p in parts]
    assert all(p > 0 for p in parts)
    assert len(lap_parts) == len(weights)


def test_split_budget_rejects_bad_weights() -> None:
    with pytest.raises(dp.InvalidParameter, match="all be zero"):
        dp.split_budget(1.0, [0, 0])
    with pytest.raises(dp.InvalidParameter, match="weights"):
        dp.split_budget(1.0, [-1, 2])


def test_profile_casts_and_mixed_composition() -> None:
    lap = dp.m.make_laplace(FLOAT, ABS, scale=10.0)
    g = dp.m.make_gaussian(FLOAT, ABS, scale=10.0)
    mixed = dp.make_sequential(lap, g, output_measure=dp.ProfileDP())
    profile = mixed.map(1)
    by_hand = accounting.PrivacyProfile.compose(
        [accounting.PrivacyProfile.pure(lap.map(1)), accounting.PrivacyProfile.zcdp(g.map(1))]
    )
    # the old profile is still there (the generic route), beside the children's dominating pairs
    assert profile.generic() == by_hand
    pairs = [lap.privacy_loss(1), g.privacy_loss(1)]
    assert profile.loss == accounting.PrivacyLoss.compose([p for p in pairs if p is not None])
    eps = profile.epsilon(Fraction(1, 10**6))
    assert eps < by_hand.epsilon(Fraction(1, 10**6))  # the pairs' PLD is tighter here
    assert mixed.check(1, (float(eps) * (1 + 1e-12), 1e-6))
    fixed = dp.make_fix_delta(mixed, 1e-6)
    assert fixed.map(1) == (eps, Fraction(1, 10**6))
    # the profile route is never looser than adding the parts' guarantees at the same δ
    assert eps <= lap.map(1) + accounting.zcdp_to_approx(g.map(1), Fraction(1, 10**6))


def test_profile_budget_must_be_a_pair() -> None:
    prof = dp.make_pure_to_profile(dp.m.make_laplace(FLOAT, ABS, scale=1.0))
    with pytest.raises(dp.InvalidParameter, match="pair"):
        prof.check(1, 1.0)
    with pytest.raises(dp.DomainMismatch, match="ProfileDP"):
        dp.make_fix_delta(dp.m.make_laplace(FLOAT, ABS, scale=1.0), 1e-6)


@given(st.fractions(min_value=0, max_value=5), st.integers(1, 4))
def test_group_never_below_the_mechanisms_own_map(d: Fraction, k: int) -> None:
    """Group privacy at a fractional d_in must cover ⌈d⌉ steps (it once truncated: 1/2 for a true 3/4)."""
    lap = dp.m.make_laplace(FLOAT, ABS, scale=2.0)
    assert dp.make_group(lap, k).map(d) >= lap.map(k * d)


# --- Rényi casts ----------------------------------------------------------------------------------------
def _mp_renyi_to_approx(alphas: list[Fraction], values: list[Fraction], delta: Fraction) -> object:
    """min over the orders of r + ln((α−1)/α) − (ln δ + ln α)/(α − 1) (BBGHS 2020 Thm 21), at 50 digits."""
    mpmath.mp.dps = 50

    def mp(x: Fraction) -> object:
        return mpmath.mpf(x.numerator) / x.denominator

    d = mp(delta)
    return max(
        mpmath.mpf(0),
        min(
            mp(r) + mpmath.log((mp(a) - 1) / mp(a)) - (mpmath.log(d) + mpmath.log(mp(a))) / (mp(a) - 1)
            for a, r in zip(alphas, values, strict=True)
        ),
    )


@given(st.floats(0.05, 50), st.integers(1, 4))
def test_pure_and_zcdp_to_renyi(scale: float, d: int) -> None:
    lap = dp.m.make_laplace(FLOAT, ABS, scale=scale)
    eps = lap.map(d)
    curve = dp.make_pure_to_renyi(lap).map(d)
    for a in (Fraction(5, 4), Fraction(2), Fraction(64)):
        assert curve(a) == min(eps, a * eps * eps / 2)
    g = dp.m.make_gaussian(FLOAT, ABS, scale=scale)
    assert dp.make_zcdp_to_renyi(g).map(d)(3) == 3 * g.map(d)


@given(st.floats(0.5, 50), st.sampled_from([1e-3, 1e-6, 1e-10]))
def test_renyi_to_approx_is_the_conversion_rounded_up(scale: float, delta: float) -> None:
    g = dp.m.make_gaussian(FLOAT, ABS, scale=scale)
    eps, dq = dp.make_renyi_to_approx(dp.make_zcdp_to_renyi(g), delta).map(1)
    alphas = list(DEFAULT_ORDERS)
    reference = _mp_renyi_to_approx(alphas, [a * g.map(1) for a in alphas], dq)
    ours = mpmath.mpf(eps.numerator) / eps.denominator
    assert reference <= ours <= reference * (1 + 1e-9) + 1e-15  # type: ignore[operator]
    # the grid of orders never beats the conversion of the zCDP guarantee over every order
    assert eps >= accounting.zcdp_to_approx(g.map(1), dq) * (1 - 1e-12)


def test_renyi_filter_to_approx_needs_the_filter_orders() -> None:
    budget = dp.RenyiCurve(lambda a: Fraction(a) / 8, "α/8")
    f = dp.make_privacy_filter(FLOAT, ABS, dp.RenyiDP(), 1, budget, orders=[2, 8, 32])
    with pytest.raises(dp.InvalidParameter, match="orders"):
        dp.make_renyi_to_approx(f, 1e-6).map(1)
    eps, delta = dp.make_renyi_to_approx(f, 1e-6, orders=[2, 8, 32]).map(1)
    assert delta == Fraction(1, 10**6) and 1 < eps < 3
    with pytest.raises(dp.InvalidParameter, match="delta=0"):
        dp.make_renyi_to_approx(f, 0.0)
    with pytest.raises(dp.DomainMismatch, match="RenyiDP"):
        dp.make_renyi_to_approx(dp.m.make_laplace(FLOAT, ABS, scale=1.0), 1e-6)
    with pytest.raises(dp.DomainMismatch, match="PureDP"):
        dp.make_pure_to_renyi(dp.m.make_gaussian(FLOAT, ABS, scale=1.0))
