"""PrivacyProfile and the Gaussian profile against mpmath."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcompose import accounting as acc
from dpcompose.accounting import PrivacyProfile, gaussian_profile
from dpcompose.errors import InvalidParameter

from ._reference import assert_tight, mpf


def gauss_delta_ref(mu: mpmath.mpf, eps: mpmath.mpf) -> mpmath.mpf:
    with mpmath.workdps(80):
        return mpmath.ncdf(mu / 2 - eps / mu) - mpmath.exp(eps) * mpmath.ncdf(-mu / 2 - eps / mu)


@given(st.floats(min_value=0.05, max_value=10.0), st.floats(min_value=0.0, max_value=40.0))
def test_gaussian_delta_against_mpmath(mu: float, eps: float) -> None:
    m = mpf(mu)
    ref = gauss_delta_ref(m, mpf(eps))
    ours = acc.gaussian_delta(Fraction(mu) ** 2, eps)
    assert_tight(ours, ref, rel=1e-9, abs_=1e-300)


def test_gaussian_composition_reference_case() -> None:
    p = PrivacyProfile.compose([gaussian_profile(1.0, 20.0)] * 1000)
    assert p.gaussian_mu_sq == Fraction(1000, 400)
    ours = p.epsilon(1e-6)
    exact = 8.306225049954728  # tests/data/accounting_cases.json (a copy of shared/reference)
    assert Fraction(exact) * (1 - Fraction(1, 2**50)) <= ours <= Fraction(exact) * (1 + Fraction(1, 10**9))
    assert p.delta(ours) <= Fraction(1e-6)
    # tighter than the zCDP route (ρ = k/(2σ²)) and the classical Gaussian bound
    assert ours < acc.zcdp_to_approx(Fraction(1000, 800), 1e-6)


@settings(max_examples=25)
@given(st.floats(0.1, 5.0), st.floats(1e-12, 0.5))
def test_gaussian_epsilon_inverts_delta(mu: float, delta: float) -> None:
    p = gaussian_profile(mu, 1.0)
    e = p.epsilon(delta)
    assert p.delta(e) <= Fraction(delta)
    if e > 0:
        assert gauss_delta_ref(mpf(mu), mpf(float(e) * (1 - 1e-9))) > mpf(delta)


def test_pure_and_approx_profiles_use_the_optimal_theorem() -> None:
    eps = [0.1] * 50 + [0.3] * 10
    p = PrivacyProfile.compose([PrivacyProfile.pure(e) for e in eps])
    assert p.epsilon(1e-6) == acc.optimal_epsilon(eps, None, 1e-6)
    q = PrivacyProfile.approx(1.0, 1e-3)
    # one (ε, δ) mechanism: δ(ε′) = δ + (1 − δ)(e^ε − e^{ε′})/(1 + e^ε) for ε′ < ε
    ref = mpf(1e-3) + (1 - mpf(1e-3)) * (mpmath.e - mpmath.exp(mpf(0.5))) / (1 + mpmath.e)
    assert_tight(q.delta(0.5), ref)
    assert q.delta(1.0) == Fraction(1e-3)
    assert q.epsilon(1e-3) == 1


def test_zcdp_profile() -> None:
    p = PrivacyProfile.compose([PrivacyProfile.zcdp(0.25), PrivacyProfile.zcdp(0.25)])
    assert p.rho == Fraction(1, 2)
    assert p.epsilon(1e-6) == acc.zcdp_to_approx(0.5, 1e-6)
    assert p.delta(p.epsilon(1e-6)) <= Fraction(1e-6) * (1 + Fraction(1, 10**6))


@settings(max_examples=10)
@given(
    st.lists(st.floats(0.05, 1.0), min_size=1, max_size=6),
    st.floats(0.2, 2.0),
    st.floats(0.0, 4.0),
)
def test_mixed_composition_never_under_reports(eps: list[float], mu: float, eps_g: float) -> None:
    # exact δ of RR's ⊗ Gaussian: Σ_S P(S) δ_G(ε_g − L_S), with δ_G extended to negative arguments
    p = PrivacyProfile.compose([PrivacyProfile.pure(e) for e in eps] + [gaussian_profile(mu, 1.0)])
    terms = [(mpf(1), mpf(0))]
    for e in eps:
        x = mpf(e)
        q = mpmath.exp(x) / (1 + mpmath.exp(x))
        terms = [(w * q, s + x) for w, s in terms] + [(w * (1 - q), s - x) for w, s in terms]
    exact = mpmath.fsum(w * gauss_delta_ref(mpf(mu), mpf(eps_g) - s) for w, s in terms)
    ours = p.delta(eps_g)
    assert mpf(ours) >= exact
    # and not worse than the crude alternative of giving the whole ε to one side
    pure_part = PrivacyProfile.compose([PrivacyProfile.pure(e) for e in eps])
    g_part = gaussian_profile(mu, 1.0)
    crude = min(
        1 - (1 - pure_part.delta(eps_g)) * (1 - g_part.delta(0)),
        1 - (1 - pure_part.delta(0)) * (1 - g_part.delta(eps_g)),
    )
    assert ours <= crude


def test_mixed_epsilon() -> None:
    p = PrivacyProfile.compose(
        [PrivacyProfile.pure(0.5), gaussian_profile(1.0, 2.0), PrivacyProfile.zcdp(0.01)]
    )
    e = p.epsilon(1e-5)
    assert p.delta(e) <= Fraction(1e-5)
    alone = gaussian_profile(1.0, 2.0).epsilon(1e-5)
    assert alone < e < alone + Fraction(0.5) + acc.zcdp_to_approx(0.01, 1e-6) + 1


def test_value_semantics_and_repr() -> None:
    p = PrivacyProfile.pure(0.5)
    assert p == PrivacyProfile.pure(0.5)
    assert hash(p) == hash(PrivacyProfile.pure(0.5))
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.rho = Fraction(1)  # type: ignore[misc]
    assert "ε=0.5" in repr(p)
    assert "μ²=0.0025" in repr(gaussian_profile(1, 20))
    assert "ρ=0.333334" in repr(PrivacyProfile(rho=Fraction(1, 3)))  # decimals rounded up, not 1/3
    empty = PrivacyProfile.compose([])
    assert empty.delta(0) == 0
    assert empty.epsilon(0) == 0


def test_bad_input() -> None:
    with pytest.raises(InvalidParameter, match="sigma"):
        gaussian_profile(1.0, 0.0)
    with pytest.raises(InvalidParameter, match="sensitivity"):
        gaussian_profile(math.nan, 1.0)
    with pytest.raises(InvalidParameter, match="epsilon"):
        PrivacyProfile.pure(-1.0)
    with pytest.raises(InvalidParameter, match="delta"):
        PrivacyProfile.approx(1.0, 1.0)
    with pytest.raises(InvalidParameter, match="epsilon"):
        PrivacyProfile.pure(1.0).delta(math.inf)
    with pytest.raises(InvalidParameter, match="delta"):
        gaussian_profile(1.0, 1.0).epsilon(0)
    with pytest.raises(InvalidParameter, match="delta"):
        PrivacyProfile.approx(1.0, 1e-3).epsilon(1e-4)
    with pytest.raises(InvalidParameter, match="profiles"):
        PrivacyProfile.compose([PrivacyProfile.pure(1.0), 3])  # type: ignore[list-item]
