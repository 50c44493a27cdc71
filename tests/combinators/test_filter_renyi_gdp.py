"""The Rényi filter with subsampled steps (their pair's Rényi curve is the cost), the Gaussian-DP filter
(Σμᵢ² ≤ μ², Smith–Thakurta 2022) and the refusal of filters over general profiles (arXiv:2602.06756)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpcompose as dp
from dpcompose.accounting import GDPFilter, PrivacyLoss, PrivacyProfile, gaussian_profile

INTS = dp.VectorDomain(dp.AtomDomain(int))
SYM = dp.SymmetricDistance()
FLOAT = dp.AtomDomain(float)
ABS = dp.AbsoluteDistance()
ORDERS = (2, 4, 8, 16)


class Spy:
    """A counting transformation that records every run (so a refusal can be seen to run nothing)."""

    def __init__(self) -> None:
        self.runs = 0

    def count(self) -> Any:
        def f(xs: Any) -> int:
            self.runs += 1
            return len(xs)

        return dp.make_user_transformation(INTS, dp.AtomDomain(int), SYM, ABS, f, lambda d: d, trusted=True)


def sgd_step(spy: Spy, sigma: float, q: float, method: str = "poisson", n: int | None = None) -> Any:
    noise = dp.m.make_gaussian(dp.AtomDomain(int), ABS, sigma)
    if method == "poisson":
        return dp.make_subsample(spy.count() >> noise, q, rng=np.random.default_rng(0))
    sized = dp.make_user_transformation(
        dp.VectorDomain(dp.AtomDomain(int), size=int(q * n)),
        dp.AtomDomain(int),
        dp.ChangeOneDistance(),
        ABS,
        len,
        lambda d: d,
        trusted=True,
    )
    return dp.make_subsample(sized >> noise, q, method, dataset_size=n, rng=np.random.default_rng(0))


def renyi_filter(budget: Fraction) -> Any:
    curve = dp.RenyiCurve(lambda a: Fraction(a) * budget, f"{budget}·α")
    return dp.make_privacy_filter(INTS, SYM, dp.RenyiDP(), d_in=1, d_out=curve, orders=ORDERS)


# --- the Rényi filter takes subsampled steps -----------------------------------------------------------


def test_renyi_filter_charges_a_subsampled_step_its_pairs_curve() -> None:
    spy = Spy()
    step = sgd_step(spy, 1.0, 0.01)
    assert step.output_measure == dp.ProfileDP()
    q = renyi_filter(Fraction(1, 2))(np.arange(1000))
    q(step)
    curve = step.privacy_loss(1).renyi(ORDERS)
    assert curve is not None
    assert q.spent() == {f"alpha={a}": c for a, c in zip(ORDERS, curve, strict=True)}
    assert spy.runs == 1


@settings(max_examples=10, deadline=None)
@given(sigmas=st.lists(st.sampled_from([0.8, 1.0, 1.5, 2.0, 4.0]), min_size=1, max_size=30))
def test_adaptive_sigmas_admitted_while_every_order_fits(sigmas: list[float]) -> None:
    # the analyst picks each σ as it goes; the filter admits exactly while Σεᵢ(α) ≤ B(α) at every order
    spy = Spy()
    budget = Fraction(1, 20)
    q = renyi_filter(budget)(np.arange(200))
    totals = [Fraction(0)] * len(ORDERS)
    for sigma in sigmas:
        step = sgd_step(spy, sigma, 0.05)
        curve = step.privacy_loss(1).renyi(ORDERS)
        after = [t + c for t, c in zip(totals, curve, strict=True)]
        fits = all(a <= Fraction(o) * budget for a, o in zip(after, ORDERS, strict=True))
        runs_before = spy.runs
        if fits:
            q(step)
            totals = after
            assert spy.runs == runs_before + 1
        else:
            spent = q.spent()
            with pytest.raises(dp.BudgetExceeded, match="nothing was run or spent"):
                q(step)
            assert q.spent() == spent and spy.runs == runs_before  # nothing spent, nothing run


def test_renyi_filter_takes_the_pairless_subsampled_renyi_step() -> None:
    user = dp.make_user_measurement(INTS, SYM, dp.ZCDP(), len, lambda d: Fraction(d, 8), trusted=True)
    step = dp.make_subsample(user, Fraction(1, 10), rng=np.random.default_rng(0))
    assert step.output_measure == dp.RenyiDP()
    q = renyi_filter(Fraction(1))(np.arange(100))
    q(step)
    assert q.spent()["alpha=8"] == step.map(1)(8)


def test_renyi_filter_refuses_steps_without_a_curve_by_name() -> None:
    spy = Spy()
    wor = sgd_step(spy, 1.0, 0.1, "without_replacement", 100)
    curve = dp.RenyiCurve(lambda a: Fraction(a), "α")
    sized = dp.VectorDomain(dp.AtomDomain(int), size=100)
    f = dp.make_privacy_filter(sized, dp.ChangeOneDistance(), dp.RenyiDP(), 1, curve, orders=ORDERS)
    qw = f(np.arange(100))
    with pytest.raises(dp.DomainMismatch, match=r"sampling without replacement.*method='poisson'"):
        qw(wor)
    assert qw.queries_charged == 0
    q = renyi_filter(Fraction(1))(np.arange(100))
    user = dp.make_user_measurement(
        INTS, SYM, dp.ApproxDP(), len, lambda d: (Fraction(d), Fraction(d, 10**6)), trusted=True
    )
    with pytest.raises(dp.DomainMismatch, match="no dominating pair"):
        q(user)
    assert spy.runs == 0 and q.queries_charged == 0
    # an (ε, δ) query that keeps its Gaussian pair is charged the pair's curve (αΔ²/2σ²)
    approx = dp.make_zcdp_to_approx(spy.count() >> dp.m.make_gaussian(dp.AtomDomain(int), ABS, 2.0), 1e-6)
    q(approx)
    assert q.spent()["alpha=4"] == Fraction(4, 8) and spy.runs == 1


def test_odometer_still_refuses_renyi() -> None:
    with pytest.raises(dp.UnsupportedComposition, match="Lécuyer"):
        dp.make_odometer(INTS, SYM, dp.RenyiDP(), d_in=1)


# --- the Gaussian-DP filter ------------------------------------------------------------------------------


def seeded_gaussian(sigma: float, seed: int = 0) -> Any:
    """The seeded Gaussian adds float N(0, σ²) noise: its pair is the continuous Gaussian (μ = Δ/σ)."""
    return dp.m.make_gaussian(FLOAT, ABS, sigma, rng=np.random.default_rng(seed))


def gdp_filter(mu: float) -> Any:
    return dp.make_privacy_filter(FLOAT, ABS, dp.ProfileDP(), d_in=1, d_out=gaussian_profile(1, 1 / mu))


def mp(x: Fraction) -> mpmath.mpf:
    return mpmath.mpf(x.numerator) / x.denominator


def gdp_delta(mu_sq: Fraction, eps: Fraction) -> mpmath.mpf:
    """δ(ε) of μ-GDP, Dong–Roth–Su 2019 Cor. 2.13, at 50 digits."""
    mu, e = mpmath.sqrt(mp(mu_sq)), mp(eps)
    return mpmath.ncdf(-e / mu + mu / 2) - mpmath.exp(e) * mpmath.ncdf(-e / mu - mu / 2)


@settings(max_examples=25, deadline=None)
@given(sigmas=st.lists(st.sampled_from([0.5, 1.0, 2.0, 3.0, 8.0]), min_size=1, max_size=20))
def test_gdp_filter_admits_while_the_squares_fit(sigmas: list[float]) -> None:
    q = gdp_filter(1.0)(3.0)
    total = Fraction(0)
    for i, sigma in enumerate(sigmas):
        step = seeded_gaussian(sigma, i)
        mu_sq = 1 / Fraction(sigma) ** 2
        if total + mu_sq <= 1:
            assert isinstance(q(step), float)
            total += mu_sq
        else:
            with pytest.raises(dp.BudgetExceeded, match=r"gdp rule: Σμ² would be"):
                q(step)
        assert q.spent() == {"mu_sq": total}


def test_gdp_filter_reads_epsilon_by_the_gdp_curve() -> None:
    f = gdp_filter(0.5)
    profile = f.map(1)
    assert profile == PrivacyProfile(gaussian_mu_sq=Fraction(1, 4))
    eps = profile.epsilon(1e-6)
    with mpmath.workdps(50):
        assert gdp_delta(Fraction(1, 4), eps) <= mpmath.mpf(1e-6)
        assert gdp_delta(Fraction(1, 4), eps * Fraction(999, 1000)) > mpmath.mpf(1e-6)  # near-tight
    # an (ε, δ) budget: the largest μ (on a fine grid) whose curve meets it
    g = dp.make_privacy_filter(FLOAT, ABS, dp.ProfileDP(), d_in=1, d_out=(1.0, 1e-6))
    mu_sq = g.map(1).gaussian_mu_sq
    with mpmath.workdps(50):
        assert gdp_delta(mu_sq, Fraction(1)) <= mpmath.mpf(1e-6)
        assert gdp_delta(mu_sq * (1 + Fraction(1, 10**9)), Fraction(1)) > mpmath.mpf(1e-6) * (1 - 1e-9)
    assert g.check(1, (1.0, 1e-6))


def test_gdp_filter_composed_gaussian_query() -> None:
    step = dp.make_sequential(seeded_gaussian(2.0), seeded_gaussian(2.0, 1))
    q = gdp_filter(1.0)(3.0)
    q(step)
    assert q.spent() == {"mu_sq": Fraction(1, 2)}


def test_gdp_filter_refusals_name_the_step_and_spend_nothing() -> None:
    spy = Spy()
    fl = dp.make_user_transformation(
        INTS, FLOAT, SYM, ABS, lambda xs: (spy.count())(xs) * 1.0, lambda d: d, trusted=True
    )
    secure = fl >> dp.m.make_gaussian(FLOAT, ABS, 2.0)  # discrete noise on a grid
    f = dp.make_privacy_filter(INTS, SYM, dp.ProfileDP(), d_in=1, d_out=gaussian_profile(1, 1))
    q = f(np.arange(10))
    with pytest.raises(dp.DomainMismatch, match=r"discrete Gaussian.*not proven Δ/σ-GDP.*RenyiDP filter"):
        q(secure)
    with pytest.raises(dp.DomainMismatch, match=r"subsampled step.*RenyiDP filter"):
        q(sgd_step(spy, 1.0, 0.01))
    lap = spy.count() >> dp.m.make_discrete_laplace(dp.AtomDomain(int), ABS, 2)
    with pytest.raises(dp.DomainMismatch, match="not a Gaussian"):
        q(lap)
    user = dp.make_user_measurement(INTS, SYM, dp.ZCDP(), len, lambda d: Fraction(d), trusted=True)
    with pytest.raises(dp.DomainMismatch, match="no dominating pair"):
        q(user)
    assert spy.runs == 0 and q.queries_charged == 0 and q.spent() == {"mu_sq": 0}


def test_filters_over_general_profiles_are_refused() -> None:
    for budget in (
        PrivacyProfile.from_loss(PrivacyLoss.laplace(1, 1)),
        PrivacyProfile.from_loss(PrivacyLoss.subsampled(PrivacyLoss.gaussian(1, 1), Fraction(1, 100))),
        PrivacyProfile.compose([gaussian_profile(1, 1), PrivacyProfile.zcdp(Fraction(1, 10))]),
        # a pair with a fallback is the smaller of two curves: μ² = 100 from the pair alone would admit
        # ε ≈ 96.7 at δ = 1e-6 under a budget of ε ≈ 0.001
        PrivacyProfile.pure(Fraction(1, 1000)).with_loss(PrivacyLoss.gaussian(1, Fraction(1, 10))),
    ):
        with pytest.raises(dp.UnsupportedComposition, match=r"arXiv:2602\.06756"):
            dp.make_privacy_filter(FLOAT, ABS, dp.ProfileDP(), d_in=1, d_out=budget)
    with pytest.raises(dp.InvalidParameter, match="δ > 0"):
        dp.make_privacy_filter(FLOAT, ABS, dp.ProfileDP(), d_in=1, d_out=(1.0, 0.0))
    with pytest.raises(dp.InvalidParameter, match="'gdp'"):
        dp.make_privacy_filter(FLOAT, ABS, dp.ProfileDP(), d_in=1, d_out=gaussian_profile(1, 1), rule="basic")
    # a rule object must carry the budget's μ²
    half = gaussian_profile(1, 2)  # μ = 1/2
    ok = dp.make_privacy_filter(FLOAT, ABS, dp.ProfileDP(), 1, half, rule=GDPFilter(Fraction(1, 4)))
    assert ok.map(1).gaussian_mu_sq == Fraction(1, 4)
    with pytest.raises(dp.InvalidParameter, match="mu_sq"):
        dp.make_privacy_filter(FLOAT, ABS, dp.ProfileDP(), 1, half, rule=GDPFilter(Fraction(1)))
