"""Optimal composition (KOV 2015 / Murtagh–Vadhan 2016) against brute force over all 2^k subsets."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcompose import accounting as acc
from dpcompose.accounting import _optimal
from dpcompose.errors import InvalidParameter

from ._reference import assert_tight, mpf

REFERENCE = Path(__file__).resolve().parent.parent / "data" / "accounting_cases.json"


def brute_delta(eps: list[float], dels: list[float], eps_g: float | Fraction) -> mpmath.mpf:
    """δ_g by the Murtagh–Vadhan sum over all 2^k subsets, at 50 digits."""
    terms = [(mpf(1), mpf(0))]  # (probability under P, privacy loss)
    for e in eps:
        x = mpf(e)
        p = mpmath.exp(x) / (1 + mpmath.exp(x))
        terms = [(w * p, s + x) for w, s in terms] + [(w * (1 - p), s - x) for w, s in terms]
    g = mpf(eps_g)
    a = mpmath.fsum(w * -mpmath.expm1(g - s) for w, s in terms if s > g)
    lost = 1 - math.prod((1 - Fraction(d) for d in dels), start=Fraction(1))  # exact
    return a + (1 - a) * mpf(lost)  # = 1 − (1 − a)Π(1 − δᵢ), without cancellation


eps_st = st.floats(min_value=0.0, max_value=2.0)
delta_st = st.one_of(st.just(0.0), st.floats(min_value=1e-10, max_value=1e-3))


def _case(k_max: int) -> st.SearchStrategy[tuple[list[float], list[float], float]]:
    pairs = st.lists(st.tuples(eps_st, delta_st), min_size=1, max_size=k_max)
    return st.tuples(pairs, st.floats(min_value=0.0, max_value=1.0)).map(
        lambda t: ([e for e, _ in t[0]], [d for _, d in t[0]], t[1] * sum(e for e, _ in t[0]))
    )


def _check_delta(case: tuple[list[float], list[float], float]) -> None:
    eps, dels, eps_g = case
    ours = acc.optimal_delta(eps, dels, eps_g)
    # δ_g = D + A·(1 − D), D = 1 − Π(1 − δᵢ) exact. "Never below" is checked on the A part alone, against
    # its own 50-digit reference: on the sum, an A far below D (ε ≈ 1e-46 beside δ ≈ 1e-4) is lost to the
    # reference's rounding, and an exact over-report of 1e-61 looked like an under-report.
    lost = 1 - math.prod((1 - Fraction(d) for d in dels), start=Fraction(1))
    assert ours >= lost, "under-reports: δ_g below 1 − Π(1 − δᵢ)"
    a_ref = brute_delta(eps, [0.0] * len(eps), eps_g)
    assert mpf(ours - lost) >= a_ref * (1 - mpf(lost)), "under-reports the ε part of δ_g"
    # tightness on the whole: the 1e-9 relative rule, plus the float rounding of D
    ref = brute_delta(eps, dels, eps_g)
    assert mpf(ours) <= ref * (1 + mpf(1e-9)) + mpf(1e-15), f"too loose: {float(ours)} vs {ref}"


@settings(max_examples=40)
@given(_case(8))
def test_optimal_delta_equals_brute_force(case: tuple[list[float], list[float], float]) -> None:
    _check_delta(case)


@pytest.mark.slow
@settings(max_examples=300)
@given(_case(14))
def test_optimal_delta_equals_brute_force_k14(case: tuple[list[float], list[float], float]) -> None:
    _check_delta(case)


def _check_epsilon(eps: list[float], dels: list[float], target: float) -> None:
    lost = 1 - math.prod(1 - Fraction(d) for d in dels)
    if lost > Fraction(target):
        with pytest.raises(InvalidParameter, match="delta="):
            acc.optimal_epsilon(eps, dels, target)
        return
    ours = acc.optimal_epsilon(eps, dels, target)
    assert ours <= sum(Fraction(e) for e in eps)
    # never below: the exact δ at our ε meets the target …
    assert brute_delta(eps, dels, ours) <= mpf(target) * (1 + mpf(1e-30))
    # … and we are not above the least such ε by more than 1e-9 relative
    if ours > 0:
        below = float(ours) * (1 - 1e-9) - 1e-15
        if below > 0:
            assert brute_delta(eps, dels, below) > mpf(target)


@settings(max_examples=40)
@given(
    st.lists(st.tuples(st.floats(0.01, 2.0), delta_st), min_size=1, max_size=8),
    st.floats(min_value=1e-9, max_value=0.5),
)
def test_optimal_epsilon_inverts_optimal_delta(pairs: list[tuple[float, float]], target: float) -> None:
    _check_epsilon([e for e, _ in pairs], [d for _, d in pairs], target)


@pytest.mark.parametrize(
    ("eps", "k", "eps_g"),
    [
        (0.1, 10_000, 50.0),  # (large k, small ε; k = 10⁵ at ε = 0.01 runs with -m slow)
        (1.0, 1000, 400.0),
        # (~2 s: 6,000 binomial terms of k = 10⁵ at 50 digits)
        pytest.param(0.01, 100_000, 5.0, marks=pytest.mark.slow),
        (2.0, 500, 990.0),
        (0.3, 7, 0.9),
    ],
)
def test_homogeneous_large_k_against_mpmath(eps: float, k: int, eps_g: float) -> None:
    # binomial form at 50 digits, in log space (terms are tiny or huge)
    x, g = mpf(eps), mpf(eps_g)
    log_norm = k * mpmath.log1p(mpmath.exp(x))
    j0 = max(0, math.floor((float(g / x) + k) / 2) + 1)
    acc_terms = []
    for j in range(j0, k + 1):
        loss = x * (2 * j - k)
        if loss <= g:
            continue
        lt = mpmath.log(mpmath.binomial(k, j)) + j * x - log_norm + mpmath.log(-mpmath.expm1(g - loss))
        if lt < -800:
            break
        acc_terms.append(mpmath.exp(lt))
    ref = mpmath.fsum(acc_terms)
    assert_tight(acc.optimal_delta([eps] * k, None, eps_g), ref, rel=1e-9, abs_=1e-300)


def _reference_cases() -> list[tuple[str, list[float], list[float] | None, float, float]]:
    if not REFERENCE.exists():
        return []
    inputs: dict[str, tuple[list[float], list[float] | None]] = {
        "homog eps=0.1 k=10": ([0.1] * 10, None),
        "homog eps=0.1 k=100": ([0.1] * 100, None),
        "homog eps=0.1 k=1000": ([0.1] * 1000, None),
        "homog eps=0.1 k=10000": ([0.1] * 10000, None),
        "homog eps=1.0 k=10": ([1.0] * 10, None),
        "homog eps=1.0 k=100": ([1.0] * 100, None),
        "hetero k=1000 eps_i=0.01+0.19(i%20)/19": ([0.01 + 0.19 * (i % 20) / 19 for i in range(1000)], None),
        "hetero k=100 eps_i=0.05(1+i%5)": ([0.05 * (1 + i % 5) for i in range(100)], None),
        "approx k=100 (0.1,1e-8) dg=1e-5": ([0.1] * 100, [1e-8] * 100),
    }
    out = []
    for case in json.loads(REFERENCE.read_text())["cases"]:
        if case["name"] in inputs:
            eps, dels = inputs[case["name"]]
            out.append((case["name"], eps, dels, case["delta_g"], case["exact_eps"]))
    return out


@pytest.mark.parametrize(("name", "eps", "dels", "delta_g", "exact_eps"), _reference_cases())
def test_reference_cases(
    name: str, eps: list[float], dels: list[float] | None, delta_g: float, exact_eps: float
) -> None:
    ours = acc.optimal_epsilon(eps, dels, delta_g)
    # the recorded exact value is a float; ours is never below it (beyond its last bit), within 1e-9
    assert ours >= Fraction(exact_eps) * (1 - Fraction(1, 2**51)), name
    assert ours <= Fraction(exact_eps) * (1 + Fraction(1, 10**9)), name
    # and never above the other valid bounds in this module
    assert ours <= acc.basic(eps, dels)[0]
    k = len(eps)
    slack = delta_g - sum(dels or [0.0])
    if slack > 0:
        assert ours <= acc.advanced(eps, dels, slack)[0]
    if dels is None:
        assert ours <= acc.zcdp_to_approx(sum(acc.pure_to_zcdp(e) for e in eps), delta_g)
    assert k > 0


@settings(max_examples=15)
@given(
    st.lists(st.floats(0.001, 1.5), min_size=1, max_size=20),
    st.floats(min_value=1e-12, max_value=0.1),
    st.floats(min_value=0.0, max_value=1e-3),
)
def test_optimal_is_never_above_other_bounds(eps: list[float], target: float, each_delta: float) -> None:
    dels = [each_delta / len(eps)] * len(eps)
    for theorem in (acc.advanced, acc.advanced_drv, acc.advanced_kov):
        e_adv, d_adv = theorem(eps, dels, target)
        if d_adv < 1:
            assert acc.optimal_epsilon(eps, dels, d_adv) <= e_adv
    e_basic, d_basic = acc.basic(eps, dels)
    if d_basic < 1:
        assert acc.optimal_epsilon(eps, dels, d_basic) <= e_basic
    pure = acc.optimal_epsilon(eps, None, target)
    assert pure <= acc.zcdp_to_approx(acc.zcdp_compose([acc.pure_to_zcdp(e) for e in eps]), target)


def test_grid_method_brackets_the_exact_value() -> None:
    # 21 incommensurable ε's: the support has 2^21 atoms, so the general grid is used; the exact value
    # comes from enumerating all 2^21 subsets in float64 (accurate to ~1e-12 here).
    rng = np.random.default_rng(7)
    eps = list(rng.uniform(0.05, 0.6, size=21))
    eps_g = 3.0
    loss = np.zeros(1)
    prob = np.ones(1)
    for e in eps:
        p = math.exp(e) / (1 + math.exp(e))
        loss = np.concatenate([loss + e, loss - e])
        prob = np.concatenate([prob * p, prob * (1 - p)])
    mask = loss > eps_g
    exact = math.fsum(prob[mask] * -np.expm1(eps_g - loss[mask]))
    lo, hi = acc.optimal_delta_bounds(eps, None, eps_g, tolerance=1e-4)
    assert float(lo) <= exact * (1 + 1e-10)
    assert exact * (1 - 1e-10) <= float(hi)
    assert float(hi - lo) <= 1e-4 * float(hi)
    assert acc.optimal_delta(eps, None, eps_g, tolerance=1e-4) == hi


def test_edges() -> None:
    assert acc.optimal_epsilon([0.5, 0.25], None, 0) == Fraction(3, 4)
    assert acc.optimal_delta([0.5, 0.25], [0.1, 0.0], 10) == Fraction(0.1)
    assert acc.optimal_delta([0.0, 0.0], None, 0) == 0
    assert acc.optimal_epsilon([0.0], [0.0], 1e-9) == 0
    # δ_g at ε_g = 0 is the total variation bound; monotone decreasing in ε_g
    ds = [acc.optimal_delta([0.3] * 9 + [0.7], None, x) for x in (0.0, 0.5, 1.0, 2.0, 3.0)]
    assert ds == sorted(ds, reverse=True)


def test_bad_input() -> None:
    with pytest.raises(InvalidParameter, match=r"epsilons\[1\]"):
        acc.optimal_delta([0.1, math.nan], None, 1.0)
    with pytest.raises(InvalidParameter, match="epsilon="):
        acc.optimal_delta([0.1], None, -1.0)
    with pytest.raises(InvalidParameter, match=r"deltas\[0\]"):
        acc.optimal_epsilon([0.1], [1.0], 1e-6)
    with pytest.raises(InvalidParameter, match="delta="):
        acc.optimal_epsilon([0.1], None, 1.0)
    with pytest.raises(InvalidParameter, match="delta="):
        acc.optimal_epsilon([0.1, 0.1], [1e-3, 1e-3], 1e-4)
    with pytest.raises(InvalidParameter, match="same length"):
        acc.optimal_epsilon([0.1, 0.1], [0.0], 1e-4)
    with pytest.raises(InvalidParameter, match="epsilons"):
        acc.optimal_delta([], None, 1.0)
    with pytest.raises(InvalidParameter, match="tolerance"):
        acc.optimal_delta([0.1], None, 1.0, tolerance=0)


# --- the general grid's upper bound: public-coin mixtures of the grid neighbours -----------------------


def _profile(x: mpmath.mpf, y: mpmath.mpf) -> mpmath.mpf:
    """δ_x(y) = Σ[P − yQ]₊ for RR_x (x ≥ 0), at 50 digits."""
    ex = mpmath.exp(x)
    return max(mpf(0), (ex - y) / (1 + ex)) + max(mpf(0), (1 - y * ex) / (1 + ex))


def _check_weight(eps: float, step: float, ys: list[float]) -> None:
    # 50 digits here, whatever another test module set mpmath's global precision to at import
    with mpmath.workdps(50):
        _check_weight_50(eps, step, ys)


def _check_weight_50(eps: float, step: float, ys: list[float]) -> None:
    n, lam = _optimal.mixture_weight(Fraction(eps), step)
    h, e = mpf(step), mpf(eps)
    a, b = n * h, (n + 1) * h
    assert a <= e < b
    assert 0 <= lam <= 1 and lam * 2**53 == int(lam * 2**53)
    lm = mpf(lam)

    def slack(y: mpmath.mpf) -> mpmath.mpf:
        return lm * _profile(a, y) + (1 - lm) * _profile(b, y) - _profile(e, y)

    kinks = [mpmath.exp(s * x) for x in (a, e, b) for s in (1, -1)]
    for y in kinks + [mpf(v) for v in ys]:  # ≥ 0 up to the 50-digit cancellation where D is exactly 0
        assert slack(y) >= -(mpf(10) ** -45), (eps, step, y)
    # tight: λ is within float rounding of λ* = (p_b − p_ε)/(p_b − p_a), where both binding kinks
    # e^{±a} are exactly tight (so the module's closed form for the two constraints is right)
    if a == e:
        assert lam == 1
        return
    p = [mpmath.exp(x) / (1 + mpmath.exp(x)) for x in (a, e, b)]
    star = (p[2] - p[1]) / (p[2] - p[0])
    assert star - lm <= mpf(2) ** -48
    for y in (mpmath.exp(a), mpmath.exp(-a)):
        tight = star * _profile(a, y) + (1 - star) * _profile(b, y) - _profile(e, y)
        assert abs(tight) <= mpf(10) ** -40


@settings(max_examples=60)
@given(
    st.floats(min_value=1e-4, max_value=5.0),
    st.floats(min_value=1e-4, max_value=1.0),
    st.lists(st.floats(min_value=-12.0, max_value=12.0), min_size=1, max_size=8),
)
def test_mixture_weight_dominates(eps: float, step: float, log_ys: list[float]) -> None:
    _check_weight(eps, step, [math.exp(t) for t in log_ys])


def test_mixture_weight_edges() -> None:
    _check_weight(0.5, 0.25, [0.3, 1.0, 2.0])  # ε on the grid: λ = 1
    _check_weight(0.01, 0.25, [0.5, 1.0, 1.5])  # a = 0: a mixture with the trivial mechanism
    _check_weight(0.25 - 2**-40, 0.25, [1.0])  # ε just below b: λ ≈ 0
    _check_weight(2**-40, 0.25, [1.0])  # ε just above a = 0: λ ≈ 1


def _grid_distributions(eps: list[float], step: float) -> tuple[_optimal.Loss, _optimal.Loss]:
    groups = _optimal.group([Fraction(e) for e in eps])
    mix = _optimal.mixture(step, _optimal.mixture_children(groups, step))
    old = _optimal.lattice(step, _optimal.rounded_groups(groups, step, up=True))
    return mix, old


@settings(max_examples=40)
@given(
    st.lists(st.floats(min_value=0.01, max_value=1.5), min_size=1, max_size=8),
    st.floats(min_value=0.005, max_value=0.3),
    st.floats(min_value=0.0, max_value=1.0),
)
def test_mixture_upper_bound_against_brute_force(eps: list[float], step: float, where: float) -> None:
    eps_g = where * sum(eps)
    mix, old = _grid_distributions(eps, step)
    exact = brute_delta(eps, [0.0] * len(eps), eps_g)
    ours = _optimal.a_up(mix, eps_g)
    rounded_up = _optimal.a_up(old, eps_g)
    assert exact <= mpf(ours)
    # the mixture is dominated by RR_b itself, so it never loses to rounding up (up to the float bounds)
    assert ours <= rounded_up * (1 + 1e-9) + 1e-300


def _exact_a(eps: list[float], eps_g: float) -> float:
    """A(ε_g) by enumerating all 2^k subsets in float64 (accurate to ~1e-12 for k ≈ 20)."""
    loss = np.zeros(1)
    prob = np.ones(1)
    for e in eps:
        p = math.exp(e) / (1 + math.exp(e))
        loss = np.concatenate([loss + e, loss - e])
        prob = np.concatenate([prob * p, prob * (1 - p)])
    mask = loss > eps_g
    return math.fsum(prob[mask] * -np.expm1(eps_g - loss[mask]))


def test_mixture_is_far_tighter_than_rounding_up() -> None:
    eps = list(np.random.default_rng(7).uniform(0.05, 0.6, size=21))
    exact = _exact_a(eps, 3.0)
    for step in (0.05, 0.01, 0.002):
        mix, old = _grid_distributions(eps, step)
        ours, rounded_up = _optimal.a_up(mix, 3.0), _optimal.a_up(old, 3.0)
        assert exact * (1 - 1e-10) <= ours <= rounded_up
        # first-order rounding error cancels: the excess is a small fraction of rounding up's
        assert ours - exact <= 0.05 * (rounded_up - exact)


@pytest.mark.parametrize("budget", [1e6, 1e5])
def test_grid_budget_fallbacks(monkeypatch: pytest.MonkeyPatch, budget: float) -> None:
    # 1e6: the mixture fits at level 0 only (finer levels build no upper bound);
    # 1e5: it never fits, and every εᵢ is rounded up instead
    eps = list(np.random.default_rng(7).uniform(0.05, 0.6, size=21))
    exact = _exact_a(eps, 3.0)
    _optimal.cached_grid.cache_clear()
    monkeypatch.setattr(_optimal, "MIX_WORK_MAX", budget)
    try:
        levels = [
            _optimal.cached_grid(tuple(_optimal.group([Fraction(e) for e in eps])), lv) for lv in (0, 1)
        ]
        assert levels[0] is not None and levels[0].upper is not None
        assert levels[1] is not None
        assert (levels[1].upper is None) == (budget == 1e6)
        assert (levels[0].upper.loss.size > 4096 * 2) == (budget == 1e6)  # mixture lattice is twice as fine
        lo, hi = acc.optimal_delta_bounds(eps, None, 3.0, tolerance=1e-3)
        assert float(lo) <= exact * (1 + 1e-10) and exact * (1 - 1e-10) <= float(hi)
        e_lo, e_hi = acc.optimal_epsilon_bounds(eps, None, float(hi), tolerance=1e-3)
        assert e_lo <= 3.0 * (1 + 1e-12) and e_hi >= e_lo
    finally:
        _optimal.cached_grid.cache_clear()
        _optimal.cached_plans.cache_clear()


@settings(max_examples=10)
@given(
    st.lists(st.floats(min_value=0.01, max_value=1.5), min_size=1, max_size=6),
    st.floats(min_value=0.05, max_value=0.3),
)
def test_mixture_float_error_bound(eps: list[float], step: float) -> None:
    # the float distribution is within its stated relative error of the 50-digit one (same λ's)
    children = _optimal.mixture_children(_optimal.group([Fraction(e) for e in eps]), step)
    dist = _optimal.mixture(step, children)
    ref = [mpf(1)]
    h = mpf(step)
    for n, lam, c in children:
        a, b, lm = n * h, (n + 1) * h, mpf(lam)
        pa, pb = mpmath.exp(a) / (1 + mpmath.exp(a)), mpmath.exp(b) / (1 + mpmath.exp(b))
        atoms = [
            (0, (1 - lm) * (1 - pb)),
            (1, lm * (1 - pa)),
            (2 * n + 1, lm * pa),
            (2 * n + 2, (1 - lm) * pb),
        ]
        for _ in range(c):
            new = [mpf(0)] * (len(ref) + 2 * n + 2)
            for off, w in atoms:
                for i, r in enumerate(ref):
                    new[off + i] += w * r
            ref = new
    assert len(ref) == dist.prob.size
    for got, want in zip(dist.prob, ref, strict=True):
        assert abs(mpf(float(got)) - want) <= mpf(dist.rel_err) * want + mpf(2.0**-1000)
    assert dist.rel_err < 1e-12
