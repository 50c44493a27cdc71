"""ProfileDP with dominating pairs: the casts, composition into ProfileDP and into ApproxDP, explain.

The exact references are dpcompose's own discrete mechanisms (discrete Laplace on integer data, k-ary
randomized response), whose composite δ(ε) is a finite sum computed at 40 digits.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpcompose as dp
from dpcompose.accounting import PrivacyLoss, PrivacyProfile
from exact_pairs import convolve as _convolve
from exact_pairs import delta as _delta
from exact_pairs import dlap_atoms as _dlap_atoms
from exact_pairs import mp as _mp
from exact_pairs import rr_atoms as _rr_atoms

MP_DPS = 40
FLOAT = dp.AtomDomain(float)
INTS = dp.AtomDomain(int)
ABS = dp.AbsoluteDistance()


_SCALES = st.lists(st.sampled_from([Fraction(1, 2), Fraction(3, 4), Fraction(3)]), min_size=1, max_size=3)


def _check_profile_composition(scales: list[Fraction], d_in: int, delta: float) -> None:
    laps = [dp.m.make_laplace(INTS, ABS, scale=float(s)) for s in scales]
    prof = dp.make_sequential(*laps, output_measure=dp.ProfileDP())
    target = Fraction(str(delta))
    eps, d = dp.make_fix_delta(prof, delta).map(d_in)
    assert d == target
    exact = _convolve([_dlap_atoms(d_in, s) for s in scales])
    assert _delta(exact, eps) <= _mp(target) * (1 + mpmath.mpf(10) ** -12)
    # never above the generic profile (the old number)
    basic = dp.make_sequential(*laps, output_measure=dp.ProfileDP(), theorem="basic")
    assert eps <= basic.map(d_in).epsilon(target)


@settings(max_examples=5, deadline=None)
@given(_SCALES, st.integers(1, 2), st.sampled_from([1e-3, 1e-6]))
def test_profile_composition_never_below_the_exact_composition(
    scales: list[Fraction], d_in: int, delta: float
) -> None:
    _check_profile_composition(scales, d_in, delta)


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(_SCALES, st.integers(1, 3), st.sampled_from([1e-2, 1e-4, 1e-7]))
def test_profile_composition_never_below_the_exact_composition_thorough(
    scales: list[Fraction], d_in: int, delta: float
) -> None:
    _check_profile_composition(scales, d_in, delta)


@pytest.mark.parametrize("k", [2, 3, 5])
def test_randomized_response_profile_matches_enumeration(k: int) -> None:
    cats = dp.CategoricalDomain(list(range(k)))
    rr = dp.m.make_randomized_response(cats, dp.DiscreteDistance(), epsilon=0.7)
    prof = dp.make_sequential(*[rr] * 8, output_measure=dp.ProfileDP())
    eps, _ = dp.make_fix_delta(prof, 1e-5).map(1)
    exact = _convolve([_rr_atoms(Fraction(7, 10), k)] * 8)
    assert _delta(exact, eps) <= mpmath.mpf(1e-5)
    old = PrivacyProfile.compose([PrivacyProfile.pure(rr.map(1))] * 8).epsilon(1e-5)
    assert eps <= old
    if k > 2:
        assert eps < old  # k-ary RR's pair is tighter than RR_ε


def test_laplace_profile_composition_before_and_after() -> None:
    lap = dp.m.make_laplace(FLOAT, ABS, scale=10.0)
    auto = dp.make_sequential(*[lap] * 100, output_measure=dp.ProfileDP())
    basic = dp.make_sequential(*[lap] * 100, output_measure=dp.ProfileDP(), theorem="basic")
    old = PrivacyProfile.compose([PrivacyProfile.pure(lap.map(1))] * 100)
    assert basic.map(1) == old  # theorem="basic": the profile rules as before pairs, number for number
    after, before = auto.map(1).epsilon(1e-6), old.epsilon(1e-6)
    assert dp.accounting.format_up(before) == "4.77457"
    assert dp.accounting.format_up(after) == "4.69267"
    # the same as the (ε, δ) composition's pld candidate, and as casting each child first
    approx = dp.make_sequential(*[lap] * 100, output_measure=dp.ApproxDP(), delta=1e-6)
    assert approx.map(1)[0] == after
    cast = dp.make_sequential(*[dp.make_pure_to_profile(lap)] * 100)
    assert cast.map(1) == auto.map(1)
    forced = dp.make_sequential(*[lap] * 100, output_measure=dp.ProfileDP(), theorem="pld")
    assert forced.map(1).loss_fallback is None and forced.map(1).epsilon(1e-6) == after
    text = str(dp.explain(auto, 1))
    assert "auto: least of pld, generic" in text
    assert "pld — the children's privacy loss distributions" in text
    assert "generic — profiles without pairs" in text


def test_profile_composite_reports_its_pair_and_keeps_the_pld_path_outside() -> None:
    lap = dp.m.make_laplace(FLOAT, ABS, scale=10.0)
    inner = dp.make_sequential(*[lap] * 50, output_measure=dp.ProfileDP())
    pair = inner.privacy_loss(1)
    one = lap.privacy_loss(1)
    assert one is not None and pair == PrivacyLoss.compose([one] * 50)
    outer = dp.make_sequential(inner, inner, output_measure=dp.ApproxDP(), delta=1e-6)
    flat = dp.make_sequential(*[lap] * 100, output_measure=dp.ApproxDP(), delta=1e-6)
    assert outer.map(1) == flat.map(1)
    text = str(dp.explain(outer, 1))
    chosen = [line for line in text.splitlines() if "· chosen" in line]
    assert any("pld —" in line for line in chosen)
    # the outer ProfileDP composition of ProfileDP children composes their pairs too
    nested = dp.make_sequential(inner, inner)
    assert nested.map(1).loss == PrivacyLoss.compose([one] * 100)
    assert nested.map(1).epsilon(1e-6) == flat.map(1)[0]


def test_profile_children_into_approx_need_a_delta_and_list_their_theorems() -> None:
    prof = dp.make_pure_to_profile(dp.m.make_laplace(FLOAT, ABS, scale=1.0))
    with pytest.raises(dp.UnsupportedComposition, match="need a target delta"):
        dp.make_sequential(prof, prof, output_measure=dp.ApproxDP())
    with pytest.raises(dp.UnsupportedComposition, match="applicable: pld, profile"):
        dp.make_sequential(prof, prof, output_measure=dp.ApproxDP(), delta=1e-6, theorem="optimal")
    forced = dp.make_sequential(prof, prof, output_measure=dp.ApproxDP(), delta=1e-6, theorem="profile")
    assert forced.map(1) == (PrivacyProfile.compose([prof.map(1)] * 2).epsilon(1e-6), Fraction(1, 10**6))


def test_a_zcdp_child_without_a_pair_keeps_the_hybrid_route() -> None:
    lap = dp.m.make_laplace(FLOAT, ABS, scale=10.0)
    ints = dp.VectorDomain(dp.AtomDomain(int), size=3)
    vec = dp.m.make_gaussian(ints, dp.L2Distance(), scale=35.0)
    # the same input: both read a float; the vector child reads it thrice, rounded (each entry moves by at
    # most d + 1, so L2 ≤ √3·(d + 1) ≤ (7/4)(d + 1)): ρ = 3.5²/(2·35²) = 0.005 at d = 1
    to_vec = dp.make_user_transformation(
        FLOAT,
        ints,
        ABS,
        dp.L2Distance(),
        lambda x: [round(x)] * 3,
        lambda d: (d + 1) * Fraction(7, 4),
        trusted=True,
    )
    assert (to_vec >> vec).privacy_loss(1) is None  # integer noise, σ = 35: too small for the vector pair
    children = [lap] * 100 + [to_vec >> vec]
    prof = dp.make_sequential(*children, output_measure=dp.ProfileDP())
    p = prof.map(1)
    assert p.rho > 0 and p.loss is not None and p.privacy_loss() is None
    assert prof.privacy_loss(1) is None  # a ρ part: no pair for the whole
    generic = p.generic()
    assert generic is not None and p.epsilon(1e-6) < generic.epsilon(1e-6)
    approx = dp.make_sequential(*children, output_measure=dp.ApproxDP(), delta=1e-6)
    names = [name.split(" —")[0] for name, _ in approx.node.alternatives(1)]  # type: ignore[misc]
    assert names == ["zcdp", "renyi", "profile"]  # pld gives no value: a child has no pair
    assert approx.node.theorem == "auto: least ε of zcdp, renyi, pld, profile"
    assert approx.map(1) == (p.epsilon(1e-6), Fraction(1, 10**6))  # the profile wins (5.19 vs zCDP 5.25)
    zcdp = dp.make_sequential(*children, output_measure=dp.ApproxDP(), delta=1e-6, theorem="zcdp")
    assert approx.map(1)[0] < zcdp.map(1)[0]


def test_concurrent_profile_composition_matches_sequential() -> None:
    lap = dp.m.make_laplace(FLOAT, ABS, scale=10.0)
    seq = dp.make_sequential(*[lap] * 20, output_measure=dp.ProfileDP())
    con = dp.make_concurrent(*[lap] * 20, output_measure=dp.ProfileDP())
    assert seq.map(1) == con.map(1)
    assert "Vadhan–Zhang 2023 Thm 1.3" in str(dp.explain(con, 1))


def test_forced_theorems_for_profile_output() -> None:
    vec = dp.m.make_gaussian(dp.VectorDomain(dp.AtomDomain(int), size=3), dp.L2Distance(), scale=2.0)
    with pytest.raises(dp.UnsupportedComposition, match="no child reports a dominating pair"):
        dp.make_sequential(vec, vec, output_measure=dp.ProfileDP(), theorem="pld").map(1)
    with pytest.raises(dp.UnsupportedComposition, match="applicable: auto, basic"):
        dp.make_sequential(vec, vec, output_measure=dp.ProfileDP(), theorem="optimal")
    rr = dp.m.make_randomized_response(dp.CategoricalDomain([0, 1, 2]), dp.DiscreteDistance(), epsilon=1.0)
    only_pair = dp.make_loss_to_profile(dp.make_pure_to_renyi(rr))  # no generic description kept
    with pytest.raises(dp.UnsupportedComposition, match="known only by its dominating pair"):
        dp.make_sequential(only_pair, only_pair, theorem="basic").map(1)
    assert dp.make_sequential(only_pair, only_pair).map(1).loss == PrivacyLoss.compose(
        [PrivacyLoss.randomized_response(1, 3)] * 2
    )


# --- casts ------------------------------------------------------------------------------------------


def test_to_profile_casts_attach_the_pair_and_never_lose_to_the_old_profile() -> None:
    lap = dp.m.make_laplace(FLOAT, ABS, scale=4.0)
    prof = dp.make_pure_to_profile(lap)
    assert prof.privacy_loss(2) == lap.privacy_loss(2)
    p = prof.map(2)
    assert p.generic() == PrivacyProfile.pure(lap.map(2))
    assert p.epsilon(0) == lap.map(2)  # at δ = 0 the ε-DP description answers exactly
    assert p.epsilon(1e-3) < lap.map(2)
    g = dp.m.make_gaussian(FLOAT, ABS, scale=4.0)
    gp = dp.make_zcdp_to_profile(g).map(1)
    assert gp.generic() == PrivacyProfile.zcdp(g.map(1))
    assert gp.epsilon(1e-6) < dp.accounting.zcdp_to_approx(g.map(1), Fraction(1, 10**6))
    rr = dp.m.make_randomized_response_approx(
        dp.CategoricalDomain([0, 1]), dp.DiscreteDistance(), epsilon=1.0, delta=0.25
    )
    ap = dp.make_approx_to_profile(rr).map(1)
    assert ap.loss == PrivacyLoss.approx(1, Fraction(1, 4)) and ap.epsilon(Fraction(1, 4)) == 1
    # a cast keeps the mechanism's pair; group privacy does not (its d_in counts groups)
    assert dp.make_pure_to_approx(lap).privacy_loss(1) == lap.privacy_loss(1)
    assert dp.make_zcdp_to_approx(g, 1e-6).privacy_loss(1) == g.privacy_loss(1)
    assert dp.make_fix_delta(prof, 1e-6).privacy_loss(1) == lap.privacy_loss(1)
    assert dp.make_group(lap, 2).privacy_loss(1) is None


def test_round_trips_through_the_profile() -> None:
    lap = dp.m.make_laplace(FLOAT, ABS, scale=4.0)
    back = dp.make_fix_delta(dp.make_pure_to_profile(lap), 0.0)
    assert back.map(1) == (lap.map(1), Fraction(0))  # pure → profile → (ε, 0): the same ε
    rr = dp.m.make_randomized_response_approx(
        dp.CategoricalDomain([0, 1]), dp.DiscreteDistance(), epsilon=1.0, delta=0.25
    )
    assert dp.make_fix_delta(dp.make_approx_to_profile(rr), 0.25).map(1) == rr.map(1)
    # make_loss_to_profile on a pure measurement is make_pure_to_profile
    assert dp.make_loss_to_profile(lap).map(3) == dp.make_pure_to_profile(lap).map(3)
    g = dp.m.make_gaussian(FLOAT, ABS, scale=4.0)
    assert dp.make_loss_to_profile(g).map(1) == dp.make_zcdp_to_profile(g).map(1)
    prof = dp.make_zcdp_to_profile(g)
    assert dp.make_loss_to_profile(prof).map(1) == prof.map(1)  # the pair is there already


def test_loss_to_profile_reads_any_measure_by_its_pair() -> None:
    rr = dp.m.make_randomized_response(dp.CategoricalDomain([0, 1, 2, 3]), dp.DiscreteDistance(), epsilon=1.0)
    renyi = dp.make_pure_to_renyi(rr)
    p = dp.make_loss_to_profile(renyi).map(1)
    assert p == PrivacyProfile.from_loss(PrivacyLoss.randomized_response(1, 4))
    assert p.epsilon(1e-6) < 1  # 4-ary RR is tighter than its ε at a small δ
    with mpmath.workdps(40):
        exact = _rr_atoms(Fraction(1), 4)
        assert _delta(exact, p.epsilon(1e-6)) <= mpmath.mpf(1e-6)


def test_cast_refusals_name_what_is_missing() -> None:
    with pytest.raises(dp.InvalidParameter, match="make_loss_to_profile: m=3 must be a Measurement"):
        dp.make_loss_to_profile(3)  # type: ignore[arg-type]
    user = dp.make_user_measurement(
        FLOAT, ABS, dp.PureDP(), lambda x: x, lambda d: Fraction(d), trusted=True, name="mine"
    )
    with pytest.raises(dp.UnsupportedComposition, match=r"\(mine \[UNVERIFIED\]\) reports no dominating"):
        dp.make_loss_to_profile(user)
    vec = dp.m.make_laplace(  # continuous Laplace vectors (the seeded path) report no pair
        dp.VectorDomain(FLOAT, size=2), dp.L1Distance(), scale=1.0, rng=np.random.default_rng(0)
    )
    cast = dp.make_loss_to_profile(vec)  # the map says where: this mechanism has no pair at any d_in
    with pytest.raises(dp.UnsupportedComposition, match="no dominating pair at d_in=1"):
        cast.map(1)
    # profile → zCDP / pure: no theorem, so no cast
    prof = dp.make_pure_to_profile(dp.m.make_laplace(FLOAT, ABS, scale=1.0))
    with pytest.raises(dp.DomainMismatch, match="make_pure_to_zcdp needs a PureDP"):
        dp.make_pure_to_zcdp(prof)
    with pytest.raises(dp.DomainMismatch, match="make_zcdp_to_approx needs a ZCDP"):
        dp.make_zcdp_to_approx(prof, 1e-6)
    with pytest.raises(dp.InvalidParameter, match="single"):
        prof.check(1, prof.map(1))  # a profile with pairs is not a budget


# --- the Rényi candidate ----------------------------------------------------------------------------


def test_renyi_candidate_is_the_conversion_of_the_summed_curves() -> None:
    from dpcompose.accounting._filters import DEFAULT_ORDERS, pure_cost_to_renyi

    big = dp.make_pure_to_zcdp(dp.m.make_laplace(FLOAT, ABS, scale=0.5))  # ε = 2 as ρ = 2
    vec = dp.m.make_laplace(dp.VectorDomain(FLOAT, size=2), dp.L1Distance(), scale=0.5)  # ε = 2, no pair
    lap_vec = dp.make_user_transformation(
        FLOAT,
        dp.VectorDomain(FLOAT, size=2),
        ABS,
        dp.L1Distance(),
        lambda x: [x, 0.0],
        lambda d: d,
        trusted=True,
    )
    children = [lap_vec >> vec] * 4 + [big]
    m = dp.make_sequential(*children, output_measure=dp.ApproxDP(), delta=1e-6, theorem="renyi")
    curve = [
        4 * a + b
        for a, b in zip(
            pure_cost_to_renyi(vec.map(1), DEFAULT_ORDERS),
            [a * big.map(1) for a in DEFAULT_ORDERS],
            strict=True,
        )
    ]
    dq = Fraction(1, 10**6)  # the target δ is read as the decimal it prints as
    assert m.map(1) == (dp.accounting.renyi_to_approx(DEFAULT_ORDERS, curve, dq), dq)
    zcdp = dp.make_sequential(*children, output_measure=dp.ApproxDP(), delta=1e-6, theorem="zcdp")
    assert m.map(1)[0] < zcdp.map(1)[0]  # min(ε, αε²/2) beats ε²/2 for large ε
    auto = dp.make_sequential(*children, output_measure=dp.ApproxDP(), delta=1e-6)
    values = [v for _, v in auto.node.alternatives(1)]  # type: ignore[misc]
    assert auto.map(1) == min(values)


def test_a_profile_child_without_a_loss_map_gives_its_pair_through_its_profile() -> None:
    pair = PrivacyLoss.randomized_response(1, 4)
    user = dp.make_user_measurement(
        dp.CategoricalDomain([0, 1, 2, 3]),
        dp.DiscreteDistance(),
        dp.ProfileDP(),
        lambda x: x,
        lambda d: PrivacyProfile.from_loss(pair) if d else PrivacyProfile(),
        trusted=True,
        name="mine",
    )
    assert user.loss is None
    m = dp.make_sequential(user, user, output_measure=dp.ApproxDP(), delta=1e-6, theorem="pld")
    assert m.map(1) == (PrivacyLoss.compose([pair] * 2).epsilon(1e-6), Fraction(1, 10**6))
    assert m.privacy_loss(1) == PrivacyLoss.compose([pair] * 2)
