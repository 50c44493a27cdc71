"""make_private_selection_renyi: the best of a random number of runs of zCDP / Rényi-DP candidates
(Papernot–Steinke 2022, arXiv:2110.03620v2: Theorem 2 for the truncated negative binomial, the Poisson
theorem with its K = 0 outcome kept)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import dpcompose as dp
import dpcompose.accounting._selection as selection_module
from dpcompose.accounting import selection_renyi_poisson, selection_renyi_tnb, tnb_log_mean_up
from dpcompose.combinators._select_renyi import HAT_ORDERS
from dpcompose.measurements._random import SeededSource
from dpcompose.measurements._run_counts import sample_poisson, sample_truncated_negative_binomial
from dpcompose.measurements._sampling import randbelow

mpmath.mp.dps = 50

BITS = dp.AtomDomain(int)


def _mp(x: Any) -> mpmath.mpf:
    q = Fraction(x)
    return mpmath.mpf(q.numerator) / q.denominator


def _frac_up(v: mpmath.mpf) -> Fraction:
    """A rational just above the mpmath value (a margin far above its 50-digit error)."""
    return Fraction(mpmath.nstr(v + abs(v) * mpmath.mpf("1e-30") + mpmath.mpf("1e-40"), 45))


def _renyi(p: list[mpmath.mpf], q: list[mpmath.mpf], lam: mpmath.mpf) -> mpmath.mpf:
    total = mpmath.fsum(a**lam * b ** (1 - lam) for a, b in zip(p, q, strict=True) if a > 0)
    return mpmath.log(total) / (lam - 1)


# --- a tiny candidate with an exact Rényi curve --------------------------------------------------------

P0 = [Fraction(1, 2), Fraction(3, 10), Fraction(1, 5)]  # the score's law on input 0; input 1: reversed


def _law(x: int) -> list[Fraction]:
    return P0 if x == 0 else P0[::-1]


def _exact_curve(alpha: Any) -> Fraction:
    lam = _mp(alpha)
    p = [_mp(v) for v in P0]
    q = p[::-1]
    return _frac_up(max(_renyi(p, q, lam), _renyi(q, p, lam)))


def _tiny_candidate() -> Any:
    """Releases (score, score), score ∈ {0, 1, 2} drawn from P0 (input 0) or reversed (input 1)."""
    src = SeededSource(3)

    def run(x: int) -> tuple[int, int]:
        u = randbelow(10, src)
        law = _law(x)
        cut = 0
        for s, w in enumerate(law):
            cut += int(w * 10)
            if u < cut:
                return (s, s)
        return (2, 2)

    return dp.make_user_measurement(
        BITS,
        dp.DiscreteDistance(),
        dp.RenyiDP(),
        run,
        lambda d: dp.RenyiCurve(_exact_curve, "exact 3-point RR"),
        trusted=True,
    )


def _pgf_tnb(x: mpmath.mpf, eta: mpmath.mpf, gamma: mpmath.mpf) -> mpmath.mpf:
    if eta == 0:
        return mpmath.log(1 - (1 - gamma) * x) / mpmath.log(gamma)
    return ((1 - (1 - gamma) * x) ** (-eta) - 1) / (gamma ** (-eta) - 1)


def _best_law(law: list[Fraction], pgf: Any) -> list[mpmath.mpf]:
    """The exact law of the best of K runs: P(best ≤ s) = f(F(s)); the first entry is 'nothing' (K = 0)."""
    cdf = [mpmath.mpf(0)]
    for w in law:
        cdf.append(cdf[-1] + _mp(w))
    g = [pgf(c) for c in cdf]
    return [g[0], *(g[i + 1] - g[i] for i in range(len(law)))]


ORDERS = [Fraction(3, 2), Fraction(2), Fraction(4), Fraction(16), Fraction(64)]


@pytest.mark.parametrize(
    ("eta", "gamma"),
    [
        (0, Fraction(1, 10)),
        (1, Fraction(1, 10)),
        (Fraction(-1, 2), Fraction(1, 20)),
        (Fraction(5, 2), Fraction(1, 4)),
    ],
)
def test_tnb_bound_is_above_the_exact_divergence_of_a_tiny_selection(eta: Fraction, gamma: Fraction) -> None:
    sel = dp.make_private_selection_renyi(_tiny_candidate(), dp.TruncatedNegativeBinomialRuns(eta, gamma))
    curve = sel.map(1)
    e, g = _mp(eta), _mp(gamma)
    a = _best_law(P0, lambda x: _pgf_tnb(x, e, g))
    b = _best_law(P0[::-1], lambda x: _pgf_tnb(x, e, g))
    assert abs(a[0]) < 1e-40 and abs(mpmath.fsum(a) - 1) < 1e-40  # K ≥ 1: nothing is never released
    for lam in ORDERS:
        exact = max(_renyi(a[1:], b[1:], _mp(lam)), _renyi(b[1:], a[1:], _mp(lam)))
        assert _mp(curve(lam)) >= exact, (lam, float(curve(lam)), float(exact))


@pytest.mark.parametrize("mu", [Fraction(1, 2), Fraction(3), Fraction(10)])
def test_poisson_bound_is_above_the_exact_divergence_of_a_tiny_selection(mu: Fraction) -> None:
    sel = dp.make_private_selection_renyi(_tiny_candidate(), dp.PoissonRuns(mu))
    curve = sel.map(1)
    m = _mp(mu)
    a = _best_law(P0, lambda x: mpmath.exp(m * (x - 1)))
    b = _best_law(P0[::-1], lambda x: mpmath.exp(m * (x - 1)))
    for lam in ORDERS:
        exact = max(_renyi(a, b, _mp(lam)), _renyi(b, a, _mp(lam)))
        assert _mp(curve(lam)) >= exact, (lam, float(curve(lam)), float(exact))


def test_the_printed_poisson_form_without_k_zero_under_reports() -> None:
    """ε + μδ̂ + ln(μ)/(λ − 1), the form printed for the Poisson theorem, is below the exact divergence of
    this selection at μ = 1/2 (it is even negative): the K = 0 outcome must be kept, as it is here."""
    m, lam = mpmath.mpf(1) / 2, mpmath.mpf(2)
    a = _best_law(P0, lambda x: mpmath.exp(m * (x - 1)))
    b = _best_law(P0[::-1], lambda x: mpmath.exp(m * (x - 1)))
    exact = max(_renyi(a, b, lam), _renyi(b, a, lam))
    eps = _mp(_exact_curve(2))
    # the least δ̂ the theorem allows at ε̂ = ln(λ/(λ−1)) = ln 2: the exact hockey-stick divergence
    p = [_mp(v) for v in P0]
    delta_hat = max(
        mpmath.fsum(max(0, x - 2 * y) for x, y in zip(p, p[::-1], strict=True)),
        mpmath.fsum(max(0, y - 2 * x) for x, y in zip(p, p[::-1], strict=True)),
    )
    printed_upper = eps + m * delta_hat + mpmath.log(m) / (lam - 1)
    assert printed_upper < 0 < exact
    ours = dp.make_private_selection_renyi(_tiny_candidate(), dp.PoissonRuns(Fraction(1, 2))).map(1)(2)
    assert _mp(ours) >= exact


# --- the formulas against mpmath ------------------------------------------------------------------------

FRACS = st.fractions(min_value=0, max_value=5, max_denominator=1000)


TNB_ARGS = {
    "lam": st.fractions(min_value=Fraction(11, 10), max_value=64, max_denominator=100),
    "lam_hat": st.fractions(min_value=1, max_value=256, max_denominator=100),
    "eps": FRACS,
    "eps_hat": FRACS,
    "eta": st.fractions(min_value=Fraction(-99, 100), max_value=4, max_denominator=100),
    "gamma": st.fractions(min_value=Fraction(1, 10**6), max_value=Fraction(999, 1000), max_denominator=10**6),
}


def _check_tnb_formula(
    lam: Fraction, lam_hat: Fraction, eps: Fraction, eps_hat: Fraction, eta: Fraction, gamma: Fraction
) -> None:
    got = selection_renyi_tnb(lam, eps, lam_hat, eps_hat, eta, gamma)
    e, g = _mp(eta), _mp(gamma)
    mean = (1 - g) / (g * mpmath.log(1 / g)) if eta == 0 else e * (1 - g) / (g * (1 - g**e))
    want = (
        _mp(eps)
        + (1 + e) * (1 - 1 / _mp(lam_hat)) * _mp(eps_hat)
        + (1 + e) * mpmath.log(1 / g) / _mp(lam_hat)
        + mpmath.log(mean) / (_mp(lam) - 1)
    )
    assert _mp(got) >= want
    assert _mp(got) - want <= mpmath.mpf("1e-9") * (1 + abs(want))
    assert _mp(tnb_log_mean_up(eta, gamma)) >= mpmath.log(mean)


@settings(max_examples=6, deadline=None)
@given(**TNB_ARGS)
def test_tnb_formula_matches_theorem_2_in_mpmath(**kw: Fraction) -> None:
    _check_tnb_formula(**kw)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(**TNB_ARGS)
def test_tnb_formula_matches_theorem_2_in_mpmath_thoroughly(**kw: Fraction) -> None:
    _check_tnb_formula(**kw)


def test_tnb_mean_is_the_mean_of_the_law() -> None:
    """ln E[K] against the law's own mean, summed with a tail bound: the terms after k = n are at most
    (1 − γ)^n·max(1, n^η)/(γ·Z) ≪ 1e-30 here."""
    for eta, gamma in [
        (Fraction(0), Fraction(1, 5)),
        (Fraction(1, 2), Fraction(1, 5)),
        (Fraction(-1, 2), Fraction(1, 3)),
    ]:
        e, g = _mp(eta), _mp(gamma)
        n = 300
        weights = [
            mpmath.gamma(k + e) / mpmath.factorial(k) * (1 - g) ** k if e != 0 else (1 - g) ** k / k
            for k in range(1, n)
        ]
        z = mpmath.fsum(weights)
        mean = mpmath.fsum(k * w for k, w in zip(range(1, n), weights, strict=True)) / z
        got = _mp(tnb_log_mean_up(eta, gamma))
        assert got >= mpmath.log(mean) and got - mpmath.log(mean) < 1e-12


POISSON_ARGS = {
    "lam": st.fractions(min_value=Fraction(11, 10), max_value=64, max_denominator=100),
    "eps": FRACS,
    "delta": st.fractions(min_value=0, max_value=1, max_denominator=10**6),
    "mu": st.fractions(min_value=Fraction(1, 100), max_value=100, max_denominator=100),
}


def _check_poisson_formula(lam: Fraction, eps: Fraction, delta: Fraction, mu: Fraction) -> None:
    got = selection_renyi_poisson(lam, eps, delta, mu)
    m, l1 = _mp(mu), _mp(lam) - 1
    want = mpmath.log(mpmath.exp(-m) + m * mpmath.exp(l1 * (_mp(eps) + m * _mp(delta)))) / l1
    assert _mp(got) >= want
    assert _mp(got) - want <= mpmath.mpf("1e-9") * (1 + abs(want))
    # never below the printed form (which drops the K = 0 term)
    assert _mp(got) >= _mp(eps) + m * _mp(delta) + mpmath.log(m) / l1


@settings(max_examples=8, deadline=None)
@given(**POISSON_ARGS)
def test_poisson_formula_matches_in_mpmath(**kw: Fraction) -> None:
    _check_poisson_formula(**kw)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(**POISSON_ARGS)
def test_poisson_formula_matches_in_mpmath_thoroughly(**kw: Fraction) -> None:
    _check_poisson_formula(**kw)


# --- the samplers that run are the laws accounted ------------------------------------------------------


def _tnb_pmf(k: int, eta: Fraction, gamma: Fraction) -> float:
    e, g = _mp(eta), _mp(gamma)
    if eta == 0:
        return float((1 - g) ** k / (k * mpmath.log(1 / g)))
    return float(
        mpmath.gamma(k + e) / (mpmath.gamma(e) * mpmath.factorial(k)) * (1 - g) ** k / (g ** (-e) - 1)
    )


def _chi2_pvalue(counts: Counter[int], pmf: Any, n: int, kmax: int) -> float:
    probs = [pmf(k) for k in range(kmax)]
    probs.append(max(0.0, 1 - sum(probs)))
    observed = [counts.get(k, 0) for k in range(kmax)] + [sum(v for k, v in counts.items() if k >= kmax)]
    keep = [i for i, p in enumerate(probs) if p * n >= 5]
    rest = [i for i in range(len(probs)) if i not in keep]
    exp = [probs[i] * n for i in keep] + [sum(probs[i] for i in rest) * n]
    obs = [observed[i] for i in keep] + [sum(observed[i] for i in rest)]
    if exp[-1] == 0:
        exp, obs = exp[:-1], obs[:-1]
    return float(stats.chisquare(obs, exp).pvalue)


@pytest.mark.parametrize(
    ("eta", "gamma"),
    [
        (Fraction(0), Fraction(1, 5)),
        (Fraction(1), Fraction(1, 4)),
        (Fraction(-1, 2), Fraction(1, 10)),
        (Fraction(5, 2), Fraction(1, 2)),
    ],
)
@pytest.mark.slow
def test_tnb_sampler_draws_the_law(eta: Fraction, gamma: Fraction) -> None:
    _check_tnb_sampler(eta, gamma, 5000)


def test_tnb_sampler_draws_the_law_quickly() -> None:
    _check_tnb_sampler(Fraction(-1, 2), Fraction(1, 4), 600)
    _check_tnb_sampler(Fraction(0), Fraction(1, 3), 600)


def _check_tnb_sampler(eta: Fraction, gamma: Fraction, n: int) -> None:
    src = SeededSource(11)
    counts = Counter(sample_truncated_negative_binomial(eta, gamma, src) for _ in range(n))
    assert min(counts) >= 1
    assert _chi2_pvalue(counts, lambda k: 0.0 if k == 0 else _tnb_pmf(k, eta, gamma), n, 25) > 1e-4


@pytest.mark.slow
def test_poisson_sampler_draws_the_law() -> None:
    _check_poisson_sampler((Fraction(1, 3), Fraction(7, 2), Fraction(12)), 5000)


def test_poisson_sampler_draws_the_law_quickly() -> None:
    _check_poisson_sampler((Fraction(3, 2),), 600)


def _check_poisson_sampler(mus: tuple[Fraction, ...], n: int) -> None:
    src = SeededSource(5)
    for mu in mus:
        counts = Counter(sample_poisson(mu, src) for _ in range(n))
        pmf = lambda k, m=float(mu): math.exp(-m) * m**k / math.factorial(k)  # noqa: E731
        assert _chi2_pvalue(counts, pmf, n, 20) > 1e-4


def test_the_measurement_runs_k_from_its_law() -> None:
    """The number of candidate runs per release follows the accounted law (geometric, mean 1/γ = 4)."""
    calls: list[int] = []

    def run(x: Any) -> tuple[int, int]:
        calls.append(1)
        return (len(calls), 0)

    cand: Any = dp.make_user_measurement(
        BITS, dp.DiscreteDistance(), dp.ZCDP(), run, lambda d: Fraction(1, 8), trusted=True
    )
    sel = dp.make_private_selection_renyi(
        cand, dp.TruncatedNegativeBinomialRuns(1, Fraction(1, 4)), rng=SeededSource(9)
    )
    ks: Counter[int] = Counter()
    for _ in range(600):
        before = len(calls)
        sel(0)
        ks[len(calls) - before] += 1
    assert _chi2_pvalue(ks, lambda k: 0.0 if k == 0 else 0.25 * 0.75 ** (k - 1), 600, 20) > 1e-4


# --- behaviour ------------------------------------------------------------------------------------------


def test_releases_the_best_run_and_poisson_zero_releases_none() -> None:
    sel = dp.make_private_selection_renyi(
        _tiny_candidate(), dp.TruncatedNegativeBinomialRuns(0, Fraction(1, 10)), rng=SeededSource(1)
    )
    index, score, output = sel(0)
    assert index == 0 and score == output and score in (0, 1, 2)
    sel0 = dp.make_private_selection_renyi(
        _tiny_candidate(), dp.PoissonRuns(Fraction(1, 10**6)), rng=SeededSource(2)
    )
    assert sel0(0) is None


def test_zcdp_candidates_use_the_curve_alpha_rho_and_the_largest_candidate() -> None:
    g1 = dp.m.make_gaussian(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=4.0)
    g2 = dp.m.make_gaussian(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=2.0)
    runs = dp.TruncatedNegativeBinomialRuns(1, Fraction(1, 10))
    one = dp.make_private_selection_renyi([dp.make_postprocess(g2, lambda y: (y, y))], runs).map(1)
    both = dp.make_private_selection_renyi(
        [dp.make_postprocess(g, lambda y: (y, y)) for g in (g1, g2)], runs
    ).map(1)
    rho = Fraction(1, 8)  # scale 2: ρ = 1/(2·4)
    for lam in (2, 8):
        assert both(lam) == one(lam)
        want = min(
            selection_renyi_tnb(lam, lam * rho, a, a * rho, 1, Fraction(1, 10))
            for a in (2, 3, 4, 6, 8, 12, 16, 24, 32)
        )
        assert one(lam) <= want
        assert one(lam) >= lam * rho + tnb_log_mean_up(1, Fraction(1, 10)) / (lam - 1)


def test_tnb_curve_reads_the_law_once_and_equals_the_least_over_the_hat_orders(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[int] = []
    real = selection_module.tnb_log_mean_up

    def counted(eta: Any, gamma: Any) -> Fraction:
        calls.append(1)
        return real(eta, gamma)

    monkeypatch.setattr(selection_module, "tnb_log_mean_up", counted)
    g = dp.m.make_gaussian(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=4.0)
    eta, gamma = Fraction(1, 2), Fraction(1, 100)
    curve = dp.make_private_selection_renyi(
        dp.make_postprocess(g, lambda y: (y, y)), dp.TruncatedNegativeBinomialRuns(eta, gamma)
    ).map(1)
    calls.clear()
    rho = Fraction(1, 32)  # scale 4: ρ = 1/(2·16)
    hats = [(Fraction(1), Fraction(0)), *((a, a * rho) for a in HAT_ORDERS[1:])]
    lams = [Fraction(3, 2), Fraction(2), Fraction(9), Fraction(100)]
    readings = [curve(lam) for lam in lams]
    assert calls == []  # ln E[K] is computed with the curve, not per order λ̂ of every reading
    monkeypatch.undo()
    for lam, got in zip(lams, readings, strict=True):
        assert got == min(selection_renyi_tnb(lam, lam * rho, a, e, eta, gamma) for a, e in hats)


def test_explain_names_the_theorem() -> None:
    g = dp.m.make_gaussian(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=4.0)
    sel = dp.make_private_selection_renyi(dp.make_postprocess(g, lambda y: (y, y)), dp.PoissonRuns(3))
    assert "Papernot–Steinke" in str(dp.explain(sel, 1))


# --- bad input: refused, naming the parameter, nothing run -------------------------------------------


@pytest.mark.parametrize(
    ("eta", "gamma"),
    [
        (Fraction(-1), Fraction(1, 2)),
        (Fraction(-3, 2), Fraction(1, 2)),
        (Fraction(0), Fraction(0)),
        (Fraction(0), Fraction(1)),
        (Fraction(1), Fraction(3, 2)),
    ],
)
def test_the_tnb_law_is_checked_by_one_definition(eta: Fraction, gamma: Fraction) -> None:
    # the accounting, the sampler and the runs type refuse the same (η, γ) with the same message
    calls: list[Callable[[], object]] = [
        lambda: selection_renyi_tnb(2, 0, 1, 0, eta, gamma),
        lambda: tnb_log_mean_up(eta, gamma),
        lambda: sample_truncated_negative_binomial(eta, gamma, SeededSource(0)),
        lambda: dp.TruncatedNegativeBinomialRuns(eta, gamma),
    ]
    texts = set()
    for call in calls:
        with pytest.raises(dp.InvalidParameter) as info:
            call()
        texts.add(str(info.value).replace("stop_probability=", "gamma="))
    assert len(texts) == 1, texts
    assert ("eta=" in texts.pop()) == (eta <= -1)  # only the offending parameter is named


@pytest.mark.parametrize("mean", [Fraction(0), Fraction(-1, 3)])
def test_the_poisson_mean_is_checked_by_one_definition(mean: Fraction) -> None:
    """One check (check_poisson_mean) with one message, naming each caller's own parameter."""
    calls: list[tuple[str, Callable[[], object]]] = [
        ("mu", lambda: selection_renyi_poisson(2, 0, 0, mean)),
        ("mu", lambda: sample_poisson(mean, SeededSource(0))),
        ("mean", lambda: dp.PoissonRuns(mean)),
    ]
    texts = set()
    for name, call in calls:
        with pytest.raises(dp.InvalidParameter, match=f"^{name}=") as info:
            call()
        texts.add(str(info.value).removeprefix(f"{name}="))
    assert len(texts) == 1, texts


def test_bad_input_is_refused_by_name_and_runs_nothing() -> None:
    calls: list[int] = []

    def run(x: Any) -> tuple[int, int]:
        calls.append(1)
        return (0, 0)

    def user(measure: Any, cost: Any) -> Any:
        return dp.make_user_measurement(
            BITS, dp.DiscreteDistance(), measure, run, lambda d: cost, trusted=True
        )

    ok = user(dp.ZCDP(), Fraction(1, 8))
    runs = dp.PoissonRuns(2)
    for eta in (-1, -2, math.nan, math.inf):
        with pytest.raises(dp.InvalidParameter, match="eta"):
            dp.TruncatedNegativeBinomialRuns(eta, 0.5)
    for gamma in (0, 1, 1.5, -0.1, math.nan):
        with pytest.raises(dp.InvalidParameter, match="stop_probability"):
            dp.TruncatedNegativeBinomialRuns(0, gamma)
    for mean in (0, -1, math.inf, math.nan):
        with pytest.raises(dp.InvalidParameter, match="mean"):
            dp.PoissonRuns(mean)
    with pytest.raises(dp.InvalidParameter, match="runs"):
        dp.make_private_selection_renyi([ok], 0.5)  # type: ignore[arg-type]
    with pytest.raises(dp.InvalidParameter, match="candidates"):
        dp.make_private_selection_renyi([], runs)
    with pytest.raises(dp.UnsupportedComposition, match=r"candidates\[1\].*no Rényi bound"):
        dp.make_private_selection_renyi([ok, user(dp.PureDP(), Fraction(1))], runs)
    with pytest.raises(dp.UnsupportedComposition, match=r"candidates\[0\].*no Rényi bound"):
        dp.make_private_selection_renyi([user(dp.ApproxDP(), (Fraction(1), Fraction(1, 10**6)))], runs)
    other = dp.make_user_measurement(
        dp.AtomDomain(float), dp.AbsoluteDistance(), dp.ZCDP(), run, lambda d: d, trusted=True
    )
    with pytest.raises(dp.DomainMismatch, match=r"candidates\[1\]"):
        dp.make_private_selection_renyi([ok, other], runs)
    assert calls == []


def test_extreme_laws_and_orders_give_a_curve_not_an_exception() -> None:
    """γ so small that |η|·ln(1/γ) passes a double's exp range, and λ so large that ln(λ/(λ − 1)) rounds
    below 0: the maps still return a (valid, outward) number."""
    run = _tiny_candidate()
    tnb = dp.make_private_selection_renyi(
        run, dp.TruncatedNegativeBinomialRuns(Fraction(-9, 10), Fraction(1, 10**400))
    )
    assert tnb.map(1)(2) > 0
    poisson = dp.make_private_selection_renyi(run, dp.PoissonRuns(3))
    assert poisson.map(1)(2**53) > 0


def test_a_candidate_curve_answering_none_of_the_hat_orders_reads_delta_hat_one() -> None:
    """A candidate whose curve answers only α = 7: the Poisson map reads δ̂ = 1 (true of any mechanism)
    instead of raising on an empty table."""

    def only_seven(alpha: Any) -> Fraction:
        if Fraction(alpha) != 7:
            raise dp.InvalidParameter(f"alpha={alpha!r}: only order 7 is guaranteed")
        return Fraction(1, 10)

    run = dp.make_user_measurement(
        dp.AtomDomain(float),
        dp.AbsoluteDistance(),
        dp.RenyiDP(),
        lambda x: (x, x),
        lambda d: dp.RenyiCurve(only_seven, "order 7 only"),
        trusted=True,
    )
    sel = dp.make_private_selection_renyi([run], dp.PoissonRuns(3))
    expected = selection_renyi_poisson(Fraction(7), Fraction(1, 10), Fraction(1), Fraction(3))
    assert sel.map(1)(7) == expected
