"""Rényi curves of Poisson-subsampled mechanisms against high-precision integrals and sums (both ways)."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcompose.accounting import PrivacyLoss
from dpcompose.accounting._rdp import subsampled_gaussian_renyi, subsampled_renyi, subsampled_zcdp_to_renyi
from dpcompose.errors import InvalidParameter

from ._reference import mpf

mp = mpmath.mp


def _gauss_moment(q: Fraction, sigma: Fraction, power: int) -> mpmath.mpf:
    """E_{N(0,σ²)}[(1 − q + q·e^{(2x−1)/2σ²})^power] by numerical integration (the sampled Gaussian's
    likelihood ratio μ/μ₀ for a shift of 1, raised to ``power``)."""
    qq, s = mpf(q), mpf(sigma)

    def f(x: mpmath.mpf) -> mpmath.mpf:
        return mpmath.npdf(x, 0, s) * (1 - qq + qq * mpmath.exp((2 * x - 1) / (2 * s * s))) ** power

    # the integrand of positive powers peaks near x = power·(1/2 … 1): split there too
    cuts = sorted({-40 * s, -8 * s, mpf(0), mpf(1) / 2, mpf(1), 8 * s, 40 * s, mpf(power) / 2, mpf(power)})
    return mpmath.quad(f, [-mpmath.inf, *cuts, mpmath.inf])


def _removal_sum(q: Fraction, rho: Fraction, alpha: int) -> mpmath.mpf:
    qq, r = mpf(q), mpf(rho)
    return mpmath.fsum(
        mpmath.binomial(alpha, j) * (1 - qq) ** (alpha - j) * qq**j * mpmath.exp((j - 1) * j * r)
        for j in range(alpha + 1)
    )


def _lemma(q: Fraction, rho: Fraction, alpha: int) -> mpmath.mpf:
    """The addition bound B_α = 1 + C(α, 2) q² E + max(0, K − C(α, 2) q²)·min(1, E), E = e^{2ρ} − 1,
    K = (1 − q)^{−(α−1)} − 1 − (α − 1)q."""
    qq, e = mpf(q), mpmath.expm1(2 * mpf(rho))
    c2 = mpmath.binomial(alpha, 2) * qq**2
    k = (1 - qq) ** (-(alpha - 1)) - 1 - (alpha - 1) * qq
    return 1 + c2 * e + max(0, k - c2) * min(1, e)


def _true_sgm(q: Fraction, sigma: Fraction, alpha: int) -> tuple[mpmath.mpf, mpmath.mpf]:
    """The sampled Gaussian mechanism's Rényi divergences (removal, addition) at integer order α."""
    removal = mpmath.log(_removal_sum(q, 1 / (2 * sigma * sigma), alpha)) / (alpha - 1)
    addition = mpmath.log(_gauss_moment(q, sigma, 1 - alpha)) / (alpha - 1)
    return removal, addition


@pytest.mark.parametrize(
    ("q", "sigma", "alpha"),
    [
        (Fraction(1, 100), Fraction(1), 2),
        (Fraction(1, 100), Fraction(1), 10),
        (Fraction(1, 10), Fraction(2), 5),
        (Fraction(1, 2), Fraction(3), 8),
        (Fraction(1, 1000), Fraction(1, 2), 6),
    ],
)
def test_removal_sum_is_the_integral(q: Fraction, sigma: Fraction, alpha: int) -> None:
    # the binomial expansion is an identity for the Gaussian: the reference removal values are exact
    with mp.workdps(40):
        integral = _gauss_moment(q, sigma, alpha)
        expansion = _removal_sum(q, 1 / (2 * sigma * sigma), alpha)
        assert abs(integral - expansion) <= mpmath.mpf(10) ** -30 * expansion


_BOTH_DIRECTIONS = {  # (the default test and its thorough twin draw alike)
    "q": st.fractions(Fraction(1, 10**6), Fraction(999, 1000)),
    "sigma": st.fractions(Fraction(2, 5), Fraction(30)),
    "alpha": st.integers(2, 64),
}


def _test_curve_bounds_both_directions(q: Fraction, sigma: Fraction, alpha: int) -> None:
    rho = 1 / (2 * sigma * sigma)
    if alpha * (alpha - 1) * rho > 200:  # (an astronomically large moment: the cap αρ is read there)
        alpha = max(2, int((200 / rho) ** 0.5))
    (ours,) = subsampled_zcdp_to_renyi(rho, q, (Fraction(alpha),))
    with mp.workdps(40):
        removal, addition = _true_sgm(q, sigma, alpha)
        assert mpf(ours) >= removal
        assert mpf(ours) >= addition  # the addition lemma (this library's; see the module docstring)
        assert ours <= alpha * rho  # never above the mechanism's own curve
        # tight where the removal term is the larger bound: within float padding of the exact value
        bound_b = mpmath.log(_lemma(q, rho, alpha)) / (alpha - 1)
        if removal >= bound_b and removal < alpha * mpf(rho):
            assert mpf(ours) <= removal * (1 + mpf(10) ** -12) + mpf(10) ** -300


@settings(max_examples=10, deadline=None)  # (~0.18 s each: a 40-digit integral; 200 in the twin)
@given(**_BOTH_DIRECTIONS)
def test_curve_bounds_both_directions(q: Fraction, sigma: Fraction, alpha: int) -> None:
    _test_curve_bounds_both_directions(q=q, sigma=sigma, alpha=alpha)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(**_BOTH_DIRECTIONS)
def test_curve_bounds_both_directions_thorough(q: Fraction, sigma: Fraction, alpha: int) -> None:
    _test_curve_bounds_both_directions(q=q, sigma=sigma, alpha=alpha)


_LEMMA_CASES = {
    "q": st.fractions(Fraction(1, 10**4), Fraction(1, 2)),
    "sigma": st.fractions(Fraction(1, 2), Fraction(8)),
    "alpha": st.integers(2, 40),
}


@settings(max_examples=8, deadline=None)  # (~0.16 s each: a 40-digit integral; 150 in the twin)
@given(**_LEMMA_CASES)
def test_addition_lemma(q: Fraction, sigma: Fraction, alpha: int) -> None:
    _check_addition_lemma(q, sigma, alpha)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(**_LEMMA_CASES)
def test_addition_lemma_thorough(q: Fraction, sigma: Fraction, alpha: int) -> None:
    _check_addition_lemma(q, sigma, alpha)


def _check_addition_lemma(q: Fraction, sigma: Fraction, alpha: int) -> None:
    # B_α = E_{μ₀}[(μ₀/μ)^{α−1}] ≤ both addition bounds (_lemma: their minimum), checked by integration
    rho = 1 / (2 * sigma * sigma)
    with mp.workdps(40):
        moment = _gauss_moment(q, sigma, 1 - alpha)
        assert moment <= _lemma(q, rho, alpha)


def _dgauss_pair(sigma: int) -> tuple[list[int], list[mpmath.mpf]]:
    zs = list(range(-30 * sigma - 10, 30 * sigma + 11))
    w = [mpmath.exp(-mpf(z * z) / (2 * sigma * sigma)) for z in zs]
    total = mpmath.fsum(w)
    return zs, [x / total for x in w]


@pytest.mark.parametrize(
    ("q", "sigma", "alpha"),
    [
        (Fraction(1, 100), 1, 2),
        (Fraction(1, 100), 1, 12),
        (Fraction(1, 10), 2, 6),
        (Fraction(1, 3), 3, 16),
        (Fraction(1, 1000), 1, 32),
    ],
)
def test_discrete_gaussian_both_directions(q: Fraction, sigma: int, alpha: int) -> None:
    # dpcompose's Gaussian releases discrete noise: the curve of ρ = Δ²/2σ² (Canonne–Kamath–Steinke 2020
    # Thm 4) must bound the subsampled discrete Gaussian's divergences, summed here over the integers
    with mp.workdps(40):
        zs, p0 = _dgauss_pair(sigma)
        index = {z: i for i, z in enumerate(zs)}
        p1 = [p0[index[z - 1]] if z - 1 in index else mpf(0) for z in zs]  # shift Δ = 1
        qq = mpf(q)
        mix = [(1 - qq) * a + qq * b for a, b in zip(p0, p1, strict=True)]
        removal = mpmath.log(mpmath.fsum(m**alpha * a ** (1 - alpha) for m, a in zip(mix, p0, strict=True)))
        addition = mpmath.log(mpmath.fsum(a**alpha * m ** (1 - alpha) for m, a in zip(mix, p0, strict=True)))
        (ours,) = subsampled_zcdp_to_renyi(Fraction(1, 2 * sigma * sigma), q, (Fraction(alpha),))
        assert mpf(ours) >= removal / (alpha - 1)
        assert mpf(ours) >= addition / (alpha - 1)


def test_edges_and_fractional_orders() -> None:
    rho = Fraction(1, 2)
    orders = (Fraction(5, 4), Fraction(2), Fraction(5, 2), Fraction(3))
    assert subsampled_zcdp_to_renyi(rho, Fraction(0), orders) == (Fraction(0),) * 4
    assert subsampled_zcdp_to_renyi(rho, Fraction(1), orders) == (2 * rho, 2 * rho, 3 * rho, 3 * rho)
    c = subsampled_zcdp_to_renyi(rho, Fraction(1, 100), orders)
    assert c[0] == c[1] and c[2] == c[3]  # a non-integer order reads the next integer one
    assert 0 < c[1] < c[3]
    # a pure base caps every order at ε, subsampled or not
    eps = Fraction(1, 10)
    pure = subsampled_renyi(lambda j: min(eps, j * eps * eps / 2), Fraction(1, 2), (Fraction(256),))
    assert 0 < pure[0] <= eps


def test_refusals() -> None:
    with pytest.raises(InvalidParameter, match="q="):
        subsampled_zcdp_to_renyi(Fraction(1), Fraction(3, 2), (Fraction(2),))
    with pytest.raises(InvalidParameter, match="orders"):
        subsampled_zcdp_to_renyi(Fraction(1), Fraction(1, 2), (Fraction(1),))
    with pytest.raises(InvalidParameter, match="rho="):
        subsampled_zcdp_to_renyi(Fraction(-1), Fraction(1, 2), (Fraction(2),))


def test_large_rho_and_tiny_rate() -> None:
    # huge moments stay in logs, and the result never exceeds αρ
    (big,) = subsampled_zcdp_to_renyi(Fraction(500), Fraction(1, 2), (Fraction(256),))
    assert big <= 256 * 500
    (tiny,) = subsampled_zcdp_to_renyi(Fraction(1, 2), Fraction(1, 10**30), (Fraction(8),))
    with mp.workdps(120):  # (A_α − 1 ≈ 5e-59: 1 + it needs more than 60 digits)
        exact = mpmath.log(_removal_sum(Fraction(1, 10**30), Fraction(1, 2), 8)) / 7
        assert mpf(tiny) >= exact
        assert mpf(tiny) <= exact * (1 + mpf(10) ** -9) + mpf(10) ** -70


def _rr_divergences(eps: Fraction, q: Fraction, alpha: int) -> tuple[mpmath.mpf, mpmath.mpf]:
    """Binary randomized response run on a Poisson subsample: D_α both ways, summed exactly."""
    p = mpmath.exp(mpf(eps)) / (1 + mpmath.exp(mpf(eps)))
    mu0 = [p, 1 - p]
    mu = [(1 - mpf(q)) * a + mpf(q) * b for a, b in zip(mu0, [1 - p, p], strict=True)]
    removal = mpmath.fsum(a**alpha * b ** (1 - alpha) for a, b in zip(mu, mu0, strict=True))
    addition = mpmath.fsum(b**alpha * a ** (1 - alpha) for a, b in zip(mu, mu0, strict=True))
    return mpmath.log(removal) / (alpha - 1), mpmath.log(addition) / (alpha - 1)


@settings(max_examples=60, deadline=None)
@given(
    eps=st.fractions(Fraction(1, 100), Fraction(5)),
    q=st.fractions(Fraction(1, 10**5), Fraction(1)),
    alpha=st.integers(2, 256),
)
def test_pure_base_against_subsampled_randomized_response(eps: Fraction, q: Fraction, alpha: int) -> None:
    step = PrivacyLoss.subsampled(PrivacyLoss.randomized_response(eps), q)
    curve = step.renyi([alpha])
    assert curve is not None
    with mp.workdps(60):
        removal, addition = _rr_divergences(eps, q, alpha)
        assert mpf(curve[0]) >= removal
        assert mpf(curve[0]) >= addition
    assert curve[0] <= eps  # never above the pure cap


def test_privacy_loss_curves_by_kind() -> None:
    a = (Fraction(2), Fraction(8))
    g, dg = PrivacyLoss.gaussian(1, 2), PrivacyLoss.discrete_gaussian(3, 6)
    assert g.renyi(a) == dg.renyi(a) == (Fraction(1, 4), Fraction(1))  # αΔ²/2σ²
    assert PrivacyLoss.laplace(1, 2).renyi(a) == (Fraction(1, 4), Fraction(1, 2))  # min(ε, αε²/2)
    assert PrivacyLoss.discrete_laplace(2, 4).renyi(a) == (Fraction(1, 4), Fraction(1, 2))
    assert PrivacyLoss.approx(Fraction(1, 2), 0).renyi(a) == (Fraction(1, 4), Fraction(1, 2))
    assert PrivacyLoss.approx(Fraction(1, 2), Fraction(1, 10**9)).renyi(a) is None  # δ > 0: no curve
    both = PrivacyLoss.compose([g, g, PrivacyLoss.laplace(1, 2)])
    assert both.renyi(a) == (Fraction(3, 4), Fraction(5, 2))  # curves add
    assert PrivacyLoss.compose([g, PrivacyLoss.approx(1, Fraction(1, 10**9))]).renyi(a) is None
    sub = PrivacyLoss.subsampled(g, Fraction(1, 100))
    assert sub.renyi(a) == subsampled_gaussian_renyi(Fraction(1, 8), Fraction(1, 100), a)  # symmetric pair
    assert PrivacyLoss.subsampled(g, Fraction(1, 100), "without_replacement").renyi(a) is None
    assert PrivacyLoss.subsampled(g, 1, "without_replacement").renyi(a) == g.renyi(a)  # rate 1: g itself
    default = sub.renyi()
    assert default is not None and len(default) == 18  # DEFAULT_ORDERS, 1.25 … 256
    with pytest.raises(InvalidParameter, match="orders"):
        g.renyi([1])


@pytest.mark.slow
def test_removal_sum_rounding_sweep() -> None:
    # the float path of the removal sum (each step rounded up) against the sum at 80 digits, at rates from
    # 1e-300 to 1 − 1e-15: never below, and within 1e-12 relative wherever the value is a normal float
    import random

    rng = random.Random(7)
    checked = 0
    with mp.workdps(80):
        while checked < 1500:
            q = Fraction(
                rng.choice([rng.uniform(0, 1), 10 ** rng.uniform(-300, 0), 1 - 10 ** rng.uniform(-15, -1)])
            ).limit_denominator(10**300)
            rho = Fraction(10 ** rng.uniform(-6, 2)).limit_denominator(10**12)
            alpha = rng.choice([*range(2, 65), 72, 80, 96, 128, 256])
            if not 0 < q < 1 or alpha * (alpha - 1) * rho > 5000:
                continue
            (ours,) = subsampled_renyi(lambda j, r=rho: j * r, q, (Fraction(alpha),))
            qq, r = mpf(q), mpf(rho)
            excess = mpmath.fsum(
                mpmath.binomial(alpha, j) * (1 - qq) ** (alpha - j) * qq**j * mpmath.expm1((j - 1) * j * r)
                for j in range(2, alpha + 1)
            )
            exact = mpmath.log1p(excess) / (alpha - 1)
            assert mpf(ours) >= exact
            # the removal sum's own rounding: where it is clearly the larger side (the addition side is
            # evaluated with an upper bound on its cubic part, checked by the lemma tests)
            addition = mpmath.log(_lemma(q, rho, alpha)) / (alpha - 1)
            if exact > 1e-290 and ours < alpha * rho and exact > addition * (1 + mpf(10) ** -9):
                assert mpf(ours) <= exact * (1 + mpf(10) ** -12)
            checked += 1


def test_addition_bound_on_random_discrete_pairs() -> None:
    # The addition lemma uses nothing of the Gaussian: for any pair μ₀, μ₁ (μ₁ ≪ μ₀) it bounds
    # F(μ₀, (1 − q)μ₀ + qμ₁) from D_2(μ₁‖μ₀) alone. Checked exactly on random pairs on 2 … 6 points, skewed
    # likelihood ratios included, rates from 1e-6 to 1 − 1e-6.
    import random

    from dpcompose.accounting._rdp import log_addition

    rng = random.Random(3)
    with mp.workdps(50):
        for _ in range(400):
            k = rng.randint(2, 6)
            p0 = [mpf(rng.random()) + mpf(10) ** -rng.randint(0, 8) for _ in range(k)]
            p1 = [
                mpf(rng.random()) ** rng.choice([1, 3, 10]) + mpf(10) ** -rng.randint(0, 12) for _ in range(k)
            ]
            z0, z1 = mpmath.fsum(p0), mpmath.fsum(p1)
            p0, p1 = [x / z0 for x in p0], [x / z1 for x in p1]
            q = Fraction(rng.choice([rng.random(), 10 ** rng.uniform(-6, 0), 1 - 10 ** rng.uniform(-6, -1)]))
            q = q.limit_denominator(10**15)
            alpha = rng.randint(2, 40)
            mix = [(1 - mpf(q)) * a + mpf(q) * b for a, b in zip(p0, p1, strict=True)]
            moment = mpmath.fsum(a**alpha * m ** (1 - alpha) for a, m in zip(p0, mix, strict=True))
            d2 = mpmath.log(mpmath.fsum(b * b / a for a, b in zip(p0, p1, strict=True)))
            r2 = Fraction(mpmath.nstr(d2 * (1 + mpf(10) ** -30) + mpf(10) ** -40, 40))  # just above D_2
            if not 0 < q < 1 or r2 > 600:
                continue
            assert mpf(log_addition(r2, q, alpha)) >= mpmath.log(moment)


def test_found_by_review_huge_curves_and_exact_orders() -> None:
    # A moment beyond the float range gave inf − inf = NaN inside the removal sum and the message "q=nan";
    # the cap now decides there. A huge Gaussian's refusal names the pair, not an internal base(2).
    (value,) = subsampled_zcdp_to_renyi(Fraction(10**302), Fraction(1, 2), (Fraction(4096),))
    assert 0 < value <= 4096 * 10**302
    (value,) = subsampled_renyi(lambda j: Fraction(10**308), Fraction(1, 2), (Fraction(2),))
    assert 0 < value <= 10**308
    with pytest.raises(InvalidParameter, match=r"subsampled\(gaussian"):
        PrivacyLoss.subsampled(PrivacyLoss.gaussian(1, Fraction(1, 10**200)), Fraction(1, 2)).renyi()
    # at rate 1 (and as a cap at every rate) the child's own curve is read at the order itself, not at ⌈α⌉
    g = PrivacyLoss.gaussian(1, 1)
    assert PrivacyLoss.subsampled(g, 1).renyi([1.5]) == g.renyi([1.5]) == (Fraction(3, 4),)
    sub = PrivacyLoss.subsampled(g, Fraction(9, 10)).renyi([1.5])
    assert sub is not None and sub[0] <= Fraction(3, 4)
