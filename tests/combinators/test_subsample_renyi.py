"""make_subsample of zCDP and Rényi children without a pair of one mechanism: a RenyiDP measurement whose
curve is the subsampled Rényi curve, checked against numerical integration of both directions."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpcompose as dp
from dpcompose.accounting import subsampled_gaussian_renyi, subsampled_renyi, subsampled_zcdp_to_renyi

INTS = dp.VectorDomain(dp.AtomDomain(int))
SYM = dp.SymmetricDistance()


def count_then(noise: dp.Measurement) -> dp.Measurement:  # type: ignore[type-arg]
    return dp.t.make_count(INTS, SYM) >> noise


def pairless(measure: object, cost: object, size: int | None = None) -> dp.Measurement:  # type: ignore[type-arg]
    """A measurement with no dominating pair (say, a user's own mechanism) reporting ``cost`` at one
    step; it returns the size of its input."""
    return dp.make_user_measurement(
        dp.VectorDomain(dp.AtomDomain(int), size=size),
        SYM if size is None else dp.ChangeOneDistance(),
        measure,  # type: ignore[arg-type]
        len,
        lambda d_in: cost if d_in else measure.zero(),  # type: ignore[attr-defined]
        trusted=True,
    )


def two_gaussians(sigma: float) -> dp.Measurement:  # type: ignore[type-arg]
    g = count_then(dp.m.make_gaussian(dp.AtomDomain(int), dp.AbsoluteDistance(), sigma))
    return dp.make_sequential(g, g)


def mp(x: Fraction) -> mpmath.mpf:
    return mpmath.mpf(x.numerator) / x.denominator


def test_zcdp_child_without_a_pair_gives_a_renyi_measurement() -> None:
    child = pairless(dp.ZCDP(), Fraction(1, 32))
    sub = dp.make_subsample(child, Fraction(1, 10), rng=np.random.default_rng(0))
    assert sub.output_measure == dp.RenyiDP()
    curve = sub.map(1)
    rho = Fraction(child.map(1))
    for alpha in (2, 5, 64):
        assert curve(alpha) == subsampled_zcdp_to_renyi(rho, Fraction(1, 10), [alpha])[0]
    assert curve(Fraction(3, 2)) <= Fraction(3, 2) * rho  # never above the child's own curve at α
    assert sub.map(0)(8) == 0
    assert isinstance(sub(np.arange(50)), int)
    # a composition with a non-Gaussian part keeps the general (addition-lemma) curve
    lap = dp.make_pure_to_zcdp(
        count_then(dp.m.make_discrete_laplace(dp.AtomDomain(int), dp.AbsoluteDistance(), 4))
    )
    mixed = dp.make_subsample(dp.make_sequential(lap, lap), Fraction(1, 10))
    assert mixed.output_measure == dp.RenyiDP()
    assert mixed.map(1)(64) == subsampled_zcdp_to_renyi(Fraction(1, 16), Fraction(1, 10), [64])[0]


def test_composed_gaussians_read_the_symmetric_curve() -> None:
    child = two_gaussians(4.0)  # two discrete Gaussians Δ = 1, σ = 4: ρ = 1/16, a product of symmetric pairs
    q = Fraction(1, 10)
    sub = dp.make_subsample(child, q, rng=np.random.default_rng(0))
    assert sub.output_measure == dp.RenyiDP()
    rho = Fraction(child.map(1))
    assert rho == Fraction(1, 16)
    curve = sub.map(1)
    for alpha in (2, 16, 128):
        assert curve(alpha) == subsampled_gaussian_renyi(rho, q, [alpha])[0]
        assert curve(alpha) <= subsampled_zcdp_to_renyi(rho, q, [alpha])[0]


@pytest.mark.parametrize(("q", "alpha"), [(Fraction(1, 10), 8), (Fraction(1, 100), 2)])
def test_composed_gaussians_against_integration_both_orders(q: Fraction, alpha: int) -> None:
    check_against_integration(q, alpha)


@pytest.mark.slow
@settings(max_examples=20, deadline=None)
@given(q=st.fractions(Fraction(1, 1000), Fraction(1, 2)), alpha=st.integers(2, 40))
def test_composed_gaussians_against_integration_thorough(q: Fraction, alpha: int) -> None:
    check_against_integration(q, alpha)


def check_against_integration(q: Fraction, alpha: int) -> None:
    # 2 × continuous-equivalent Gaussian, Δ = 1, σ = 4 each: one Gaussian with μ² = 1/8 (ρ = 1/16); its
    # subsampled divergences both ways by numerical integration, against the measurement's curve
    sub = dp.make_subsample(two_gaussians(4.0), q, rng=np.random.default_rng(0))
    ours = sub.map(1)(alpha)
    with mpmath.workdps(30):
        s = mpmath.sqrt(8)  # σ/‖Δ‖ of the product pair
        qq = mp(q)

        def moment(power: int) -> mpmath.mpf:
            def f(x: mpmath.mpf) -> mpmath.mpf:
                return mpmath.npdf(x, 0, s) * (1 - qq + qq * mpmath.exp((2 * x - 1) / (2 * s * s))) ** power

            return mpmath.quad(f, [-mpmath.inf, -40 * s, 0, 1, 40 * s, power, mpmath.inf])

        removal = mpmath.log(moment(alpha)) / (alpha - 1)
        addition = mpmath.log(moment(1 - alpha)) / (alpha - 1)
        assert mp(ours) >= max(removal, addition)
        assert mp(ours) <= removal * (1 + mpmath.mpf(10) ** -10)  # tight (float padding only)


def test_renyi_child() -> None:
    eps = Fraction(1, 2)
    pure = dp.RenyiCurve(lambda a: min(eps, Fraction(a) * eps * eps / 2), "pure ε=1/2")
    child = pairless(dp.RenyiDP(), pure)
    assert child.output_measure == dp.RenyiDP()
    q = Fraction(1, 100)
    sub = dp.make_subsample(child, q, rng=np.random.default_rng(0))
    assert sub.output_measure == dp.RenyiDP()
    own = child.map(1)
    expected = subsampled_renyi(lambda j: own(j), q, [2, 32])
    assert (sub.map(1)(2), sub.map(1)(32)) == expected
    assert sub.map(1)(32) < own(32)


def test_refusals_spend_nothing_and_name_the_fix() -> None:
    child = pairless(dp.ZCDP(), Fraction(1, 32))
    sub = dp.make_subsample(child, Fraction(1, 10))
    with pytest.raises(dp.UnsupportedComposition, match="d_in=2"):
        sub.map(2)
    sized = pairless(dp.ZCDP(), Fraction(1, 32), size=5)
    with pytest.raises(dp.UnsupportedComposition, match="method='poisson'"):
        dp.make_subsample(sized, 0.5, "without_replacement", dataset_size=10)
    with pytest.raises(dp.InvalidParameter, match="4096"):
        sub.map(1)(5000)


def test_accounting_renyi_gives_a_renyi_step_a_renyi_filter_takes() -> None:
    """The vector Gaussian's flagged pair has no finite Rényi curve, so a Rényi filter refused the DP-SGD
    step; accounting='renyi' takes the Rényi route of its ρ instead (Poisson only)."""
    rows = dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float), size=3))
    sym = dp.SymmetricDistance()
    clipped = dp.t.make_clip_l2(rows, sym, norm=1.0)
    total = clipped >> dp.t.make_vector_sum(clipped.output_domain, sym, max_size=100)
    noisy = total >> dp.m.make_gaussian(total.output_domain, total.output_metric, scale=2.0)
    auto = dp.make_subsample(noisy, 0.05)
    step = dp.make_subsample(noisy, 0.05, accounting="renyi")
    assert auto.output_measure == dp.ProfileDP() and step.output_measure == dp.RenyiDP()
    rho = noisy.map(1)
    expected = dp.accounting.subsampled_zcdp_to_renyi(rho, Fraction(0.05), [2, 8])  # (q: the float 0.05)
    capped = [min(e, a * rho) for e, a in zip(expected, (2, 8), strict=True)]
    assert [step.map(1)(a) for a in (2, 8)] == capped
    budget = dp.RenyiCurve(lambda a: Fraction(a) / 10, "α/10")
    f = dp.make_privacy_filter(rows, sym, dp.RenyiDP(), d_in=1, d_out=budget, orders=[2, 4, 8])
    q = f(np.zeros((50, 3)))
    with pytest.raises(dp.DomainMismatch, match="no Rényi curve"):
        q(auto)
    q(step)
    assert q.queries_charged == 1
    with pytest.raises(dp.UnsupportedComposition, match="accounting='renyi'"):
        dp.make_subsample(noisy, 0.5, "without_replacement", dataset_size=100, accounting="renyi")
    lap = dp.t.make_count(dp.VectorDomain(dp.AtomDomain(int)), sym) >> dp.m.make_laplace(
        dp.AtomDomain(int), dp.AbsoluteDistance(), scale=1.0
    )
    with pytest.raises(dp.UnsupportedComposition, match="accounting='renyi'"):
        dp.make_subsample(lap, 0.5, accounting="renyi")
    with pytest.raises(dp.InvalidParameter, match="accounting"):
        dp.make_subsample(noisy, 0.5, accounting="pld")
