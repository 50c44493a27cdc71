"""The PLD candidate of the composition policy, against exact enumeration of the composed privacy loss.

The mechanisms are dpcompose's own: discrete Laplace on integer data (``make_laplace`` on ints) and k-ary
randomized response. Their dominating pairs are finite, so the composite's exact δ(ε) is a finite sum,
computed here at 40 digits; the composite's reported ε at the target δ must have exact δ(ε) ≤ target.
"""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpcompose as dp
from dpcompose.accounting import PrivacyLoss, gaussian_profile
from dpcompose.accounting._rdp import RUNNER_UP_ORDERS
from dpcompose.accounting._zcdp import renyi_to_approx
from dpcompose.errors import UnsupportedComposition
from exact_pairs import convolve as _convolve
from exact_pairs import delta as _delta
from exact_pairs import dlap_atoms as _dlap_atoms
from exact_pairs import exact_epsilon as _exact_epsilon
from exact_pairs import rr_atoms as _rr_atoms

INTS = dp.AtomDomain(int)
ABS = dp.AbsoluteDistance()
mp = mpmath.mp


_SCALES = st.lists(
    st.sampled_from([Fraction(1, 2), Fraction(3, 4), Fraction(5, 4), Fraction(3)]), min_size=2, max_size=4
)


@settings(max_examples=6, deadline=None)
@given(_SCALES, st.integers(1, 3), st.sampled_from([1e-3, 1e-6]))
def test_pld_epsilon_never_below_the_exact_composition(
    scales: list[Fraction], d_in: int, delta: float
) -> None:
    _check_against_enumeration(scales, d_in, delta)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(_SCALES, st.integers(1, 3), st.sampled_from([1e-2, 1e-3, 1e-6, 1e-9]))
def test_pld_epsilon_never_below_the_exact_composition_thorough(
    scales: list[Fraction], d_in: int, delta: float
) -> None:
    _check_against_enumeration(scales, d_in, delta)


def _check_against_enumeration(scales: list[Fraction], d_in: int, delta: float) -> None:
    with mpmath.workdps(40):
        mechs = [dp.m.make_laplace(INTS, ABS, scale=float(s)) for s in scales]
        m = dp.make_sequential(*mechs, output_measure=dp.ApproxDP(), delta=delta, theorem="pld")
        eps, d = m.map(d_in)
        assert d == Fraction(str(delta))  # δ is read as the decimal it prints as
        exact = _convolve([_dlap_atoms(d_in, s) for s in scales])
        assert _delta(exact, eps) <= mpmath.mpf(delta) * (1 + mpmath.mpf(10) ** -12)
        # tight: within a few lattice steps (2**-14 each) per child of the exact ε
        slack = 8 * len(mechs) * 2.0**-14
        assert mpmath.mpf(eps.numerator) / eps.denominator <= _exact_epsilon(exact, delta) + slack


@pytest.mark.parametrize("k", [2, 3, 5])
def test_randomized_response_composition_matches_enumeration(k: int) -> None:
    with mpmath.workdps(40):
        rr = dp.m.make_randomized_response(
            dp.CategoricalDomain(list(range(k))), dp.DiscreteDistance(), epsilon=0.7
        )
        m = dp.make_sequential(*[rr] * 8, output_measure=dp.ApproxDP(), delta=1e-5, theorem="pld")
        eps, _ = m.map(1)
        exact = _convolve([_rr_atoms(Fraction(7, 10), k)] * 8)
        assert _delta(exact, eps) <= mpmath.mpf(1e-5)
        assert float(eps) <= float(_exact_epsilon(exact, 1e-5)) + 8 * 8 * 2.0**-14
        if k > 2:  # k-ary RR's pair is not RR_ε: the PLD is below the generic optimal composition
            auto = dp.make_sequential(*[rr] * 8, output_measure=dp.ApproxDP(), delta=1e-5)
            forced = dp.make_sequential(
                *[rr] * 8, output_measure=dp.ApproxDP(), delta=1e-5, theorem="optimal"
            )
            assert auto.map(1)[0] == eps < forced.map(1)[0]


def test_laplace_pld_beats_optimal_and_auto_takes_the_least() -> None:
    floats = dp.AtomDomain(float)
    lap = dp.m.make_laplace(floats, ABS, scale=10.0)
    auto = dp.make_sequential(*[lap] * 100, output_measure=dp.ApproxDP(), delta=1e-6)
    optimal = dp.make_sequential(*[lap] * 100, output_measure=dp.ApproxDP(), delta=1e-6, theorem="optimal")
    assert auto.map(1)[0] < optimal.map(1)[0]
    values = [v for _, v in auto.node.alternatives(1)]  # type: ignore[misc]
    assert auto.map(1) == min(values)


def test_privacy_loss_follows_chains_postprocessing_and_nesting() -> None:
    vec = dp.VectorDomain(INTS)
    count = dp.t.make_count(vec, dp.SymmetricDistance())
    lap = count >> dp.m.make_laplace(count.output_domain, count.output_metric, scale=2.0)
    assert lap.privacy_loss(3) == PrivacyLoss.discrete_laplace(3, 2)  # chain: the stability map first
    post = lap >> (lambda v: v + 1)
    assert post.privacy_loss(3) == lap.privacy_loss(3)
    inner = dp.make_sequential(lap, lap)
    outer = dp.make_sequential(inner, post, output_measure=dp.ApproxDP(), delta=1e-6)
    loss = outer.privacy_loss(1)
    assert loss == PrivacyLoss.compose([PrivacyLoss.discrete_laplace(1, 2)] * 3)
    assert loss is not None and loss.count() == 3


def test_children_without_a_pair_fall_back_or_refuse() -> None:
    vec_lap = dp.m.make_laplace(
        dp.VectorDomain(dp.AtomDomain(float), size=3), dp.L1Distance(), 1.0, rng=np.random.default_rng(0)
    )
    assert vec_lap.privacy_loss(1) is None  # continuous Laplace vectors: the L1 ball's pair is proven for
    # discrete noise only (the secure path's: test_subsample_vector)
    # a pure child without a pair is read as RR_ε: the composite still has one
    mixed = dp.make_sequential(vec_lap, vec_lap)
    assert mixed.privacy_loss(1) == PrivacyLoss.compose([PrivacyLoss.approx(vec_lap.map(1), 0)] * 2)
    gauss = dp.m.make_gaussian(dp.VectorDomain(dp.AtomDomain(int), size=3), dp.L2Distance(), scale=3.0)
    assert gauss.privacy_loss(1) is None  # zCDP, and σ = 3 is too small for the vector pair
    with pytest.raises(UnsupportedComposition, match="privacy loss distribution"):
        dp.make_sequential(gauss, gauss, output_measure=dp.ApproxDP(), delta=1e-6, theorem="pld").map(1)
    # auto still answers, by zCDP
    auto = dp.make_sequential(gauss, gauss, output_measure=dp.ApproxDP(), delta=1e-6)
    assert auto.map(1)[0] > 0


def test_concurrent_composition_uses_the_pld_too() -> None:
    lap = dp.m.make_laplace(dp.AtomDomain(float), ABS, scale=10.0)
    seq = dp.make_sequential(*[lap] * 50, output_measure=dp.ApproxDP(), delta=1e-6)
    con = dp.make_concurrent(*[lap] * 50, output_measure=dp.ApproxDP(), delta=1e-6)
    assert seq.map(1) == con.map(1)
    assert "Vadhan–Zhang 2023 Thm 1.3" in str(dp.explain(con, 1))


def test_seeded_laplace_reports_the_continuous_pair() -> None:
    import numpy as np

    lap = dp.m.make_laplace(dp.AtomDomain(float), ABS, scale=4.0, rng=np.random.default_rng(1))
    assert lap.privacy_loss(1) == PrivacyLoss.laplace(1, 4)


def test_seeded_vector_gaussian_reports_the_scalar_pair() -> None:
    """Float Gaussian noise N(0, σ²I) is rotation invariant: a shift of L2 norm Δ is the scalar pair, and
    k of them compose to the Gaussian pair with μ = √k·Δ/σ, read at its closed form (Balle–Wang 2018)."""
    import numpy as np

    vec = dp.VectorDomain(dp.AtomDomain(float), size=3)
    gauss = dp.m.make_gaussian(vec, dp.L2Distance(), scale=3.0, rng=np.random.default_rng(1))
    assert gauss.privacy_loss(2) == PrivacyLoss.gaussian(2, 3)
    run = dp.make_sequential(*[gauss] * 16, output_measure=dp.ApproxDP(), delta=1e-6)
    eps = run.map(1)[0]
    exact = gaussian_profile(1, Fraction(3, 4)).epsilon(1e-6)  # μ = √16/3: σ_total = 3/4 at Δ = 1
    assert exact <= eps <= exact * (1 + 1e-9)
    secure = dp.m.make_gaussian(vec, dp.L2Distance(), scale=3.0)
    pair = secure.privacy_loss(1)  # the discrete Gaussian: Gaussian(μ′) ⊗ A(0, η) (vector_gaussian_bound)
    assert pair is not None and {p.kind for p, _ in pair.parts} == {"gaussian", "approx"}


def _dgauss_atoms(shift: int, sigma: int) -> dict[Fraction, mpmath.mpf]:
    """Loss atoms of the discrete Gaussian N_Z(0, σ²) at integer shift (outputs within ±30σ: the rest
    has mass below e^{-450}, far under the tolerance)."""
    zs = range(-30 * sigma - shift, 30 * sigma + shift + 1)
    weights = {z: mpmath.exp(-mpmath.mpf(z * z) / (2 * sigma * sigma)) for z in zs}
    total = mpmath.fsum(weights.values())
    atoms: dict[Fraction, mpmath.mpf] = defaultdict(lambda: mpmath.mpf(0))
    for z, w in weights.items():
        atoms[Fraction(shift * shift - 2 * z * shift, 2 * sigma * sigma)] += w / total
    return atoms


@pytest.mark.parametrize(("sigma", "d_in", "count"), [(1, 1, 3), (2, 2, 2), (3, 1, 2)])
def test_discrete_gaussian_composition_never_below_enumeration(sigma: int, d_in: int, count: int) -> None:
    with mpmath.workdps(40):
        g = dp.m.make_gaussian(INTS, ABS, scale=float(sigma))
        m = dp.make_sequential(*[g] * count, output_measure=dp.ApproxDP(), delta=1e-6)
        eps, _ = m.map(d_in)
        assert "pld" in str(dp.explain(m, d_in)).split("· chosen")[1].split("\n")[0]
        exact = _convolve([_dgauss_atoms(d_in, sigma)] * count)
        assert _delta(exact, eps) <= mpmath.mpf(1e-6) * (1 + mpmath.mpf(10) ** -12)
        assert float(eps) <= float(_exact_epsilon(exact, 1e-6)) + 8 * count * 2.0**-14


def test_gaussian_1000_fold_matches_the_closed_form() -> None:
    g = dp.m.make_gaussian(dp.AtomDomain(float), ABS, scale=20.0)
    eps, _ = dp.make_sequential(*[g] * 1000, output_measure=dp.ApproxDP(), delta=1e-6).map(1)
    exact = float(dp.accounting.gaussian_profile(1, 20.0 / 1000**0.5).epsilon(1e-6))  # Balle–Wang 2018
    assert exact <= float(eps) <= exact + 1e-3  # zCDP → CKS gave 8.8459


def test_found_by_review_a_refusal_names_why_each_candidate_could_not_certify() -> None:
    # 10⁵ Poisson-subsampled Gaussian steps at q = 1e-9, σ = 0.3: the PLD window (3.4e10 lattice points) is
    # too large; the error said "the children's profiles do not reach it"
    counts = dp.t.make_count(dp.VectorDomain(dp.AtomDomain(int)), dp.SymmetricDistance())
    gauss = counts >> dp.m.make_gaussian(dp.AtomDomain(int), dp.AbsoluteDistance(), 0.3)
    step = dp.make_subsample(gauss, 1e-9)
    m = dp.make_sequential(*[step] * 100_000, output_measure=dp.ApproxDP(), delta=1e-6, theorem="pld")
    with pytest.raises(dp.UnsupportedComposition, match=r"pld: this composition's window spans \d+ lattice"):
        m.map(1)
    # (auto now answers it: the children's Rényi curves certify where the PLD cannot)
    auto = dp.make_sequential(*[step] * 100_000, output_measure=dp.ApproxDP(), delta=1e-6)
    eps, _ = auto.map(1)
    pair = step.privacy_loss(1)
    assert pair is not None
    curve = pair.renyi(RUNNER_UP_ORDERS)
    assert curve is not None
    assert eps == renyi_to_approx(RUNNER_UP_ORDERS, [100_000 * e for e in curve], Fraction(1, 10**6))
    assert auto.node.alternatives(1)[0][0].startswith("renyi")


@pytest.mark.parametrize("combinator", [dp.make_sequential, dp.make_concurrent])
def test_zcdp_and_approx_children_compose_by_their_pairs(combinator: object) -> None:
    # An (ε, δ) child beside zCDP ones has no ρ: the policy raised "cannot lift a ApproxDP() child to ZCDP()"
    # although every child has a dominating pair (its own, or RR_(ε,δ)) and a profile. It now offers
    # those two, and the result is the certified upper end of the pairs composed directly.
    gauss = dp.m.make_gaussian(INTS, ABS, 2.0)
    mine = dp.make_user_measurement(
        INTS,
        ABS,
        dp.ApproxDP(),
        lambda x: x,
        lambda d: (Fraction(1, 2) * d, Fraction(1, 10**7) * d),
        trusted=True,
        name="mine",
    )
    assert callable(combinator)
    m = combinator(gauss, mine, gauss, output_measure=dp.ApproxDP(), delta=1e-6)
    eps, delta = m.map(1)
    assert delta == Fraction(1, 10**6)
    rr = PrivacyLoss.approx(Fraction(1, 2), Fraction(1, 10**7))
    pairs = [gauss.privacy_loss(1), rr, gauss.privacy_loss(1)]
    lo, hi = PrivacyLoss.compose(pairs).epsilon_bounds(1e-6)
    assert lo <= eps <= hi
    assert [name.split(" —")[0] for name, _ in m.node.alternatives(1)] == ["pld", "profile"]
    with pytest.raises(UnsupportedComposition, match=r"zCDP and \(ε, δ\) children; applicable: pld, profile"):
        combinator(gauss, mine, output_measure=dp.ApproxDP(), delta=1e-6, theorem="zcdp")
    with pytest.raises(UnsupportedComposition, match="positive target delta"):
        combinator(gauss, mine, output_measure=dp.ApproxDP())


@pytest.mark.parametrize("combinator", [dp.make_sequential, dp.make_concurrent])
def test_subsampled_gaussian_children_have_a_renyi_runner_up(combinator: object) -> None:
    # DP-SGD: the issue asks for the Rényi runner-up beside the PLD; before, profile children offered pld
    # and profile only. The Rényi value is the children's curves added and converted at δ, and the PLD
    # stays the chosen (least) bound.
    counts = dp.t.make_count(dp.VectorDomain(dp.AtomDomain(int)), dp.SymmetricDistance())
    step = dp.make_subsample(counts >> dp.m.make_gaussian(dp.AtomDomain(int), ABS, 1.0), 0.01)
    assert callable(combinator)
    m = combinator(*[step] * 1000, output_measure=dp.ApproxDP(), delta=1e-5)
    eps, _ = m.map(1)
    found = {name.split(" —")[0]: value for name, value in m.node.alternatives(1)}
    assert list(found) == ["pld", "profile", "renyi"]
    pair = step.privacy_loss(1)
    assert pair is not None
    curve = pair.renyi(RUNNER_UP_ORDERS)
    assert curve is not None
    expected = renyi_to_approx(RUNNER_UP_ORDERS, [1000 * e for e in curve], Fraction(1, 10**5))
    assert found["renyi"] == (expected, Fraction(1, 10**5))
    assert eps == min(v[0] for v in found.values()) < expected
    # a child without a Rényi curve (an (ε, δ) child with δ > 0, subsampled) leaves the candidate out of
    # the choice; the runners-up list it last, without a value, saying why
    mine = dp.make_user_measurement(
        dp.VectorDomain(dp.AtomDomain(int)),
        dp.SymmetricDistance(),
        dp.ApproxDP(),
        len,
        lambda d: (Fraction(1, 2) * d, Fraction(1, 10**8) * d),
        trusted=True,
        name="mine",
    )
    mixed = combinator(step, dp.make_subsample(mine, 0.01), output_measure=dp.ApproxDP(), delta=1e-5)
    listed = mixed.node.alternatives(1)
    assert [name.split(" —")[0] for name, _ in listed] == ["pld", "profile", "renyi"]
    assert listed[2][1] is None and "not used: child 1 " in listed[2][0]
    assert "has no Rényi curve" in listed[2][0]
    assert all(value is not None for _, value in listed[:2])
    # forced, it says why (found by review: it said "the children's δ already add up to more")
    forced = combinator(
        step, dp.make_subsample(mine, 0.01), output_measure=dp.ApproxDP(), delta=1e-5, theorem="renyi"
    )
    with pytest.raises(UnsupportedComposition, match="child 1 .* has no Rényi curve"):
        forced.map(1)
