"""Adaptive compositors with per-step budgets given as dominating pairs (issue 34, item 3)."""

from __future__ import annotations

import contextlib
import itertools
import math
import re
import threading
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import dpcompose as dp
from dpcompose.accounting import PrivacyLoss
from dpcompose.combinators._pair_budget import domination_gap

FLOAT = dp.AtomDomain(float)
ABS = dp.AbsoluteDistance()
VEC = dp.VectorDomain(dp.AtomDomain(float))
SYM = dp.SymmetricDistance()
CATS = dp.CategoricalDomain([0, 1])
DISCRETE = dp.DiscreteDistance()

G = PrivacyLoss.gaussian
DG = PrivacyLoss.discrete_gaussian
L = PrivacyLoss.laplace
DL = PrivacyLoss.discrete_laplace
RR = PrivacyLoss.randomized_response
A = PrivacyLoss.approx
S = PrivacyLoss.subsampled
C = PrivacyLoss.compose

ADMITTED = [
    (G(1, 2), G(1, 1)),
    (G(1, 2), G(2, 3)),  # Δ/σ = 1/2 ≤ 2/3
    (G(0, 1), L(1, 1)),  # the identity pair is dominated by anything
    (L(1, 3), L(2, 4)),
    (DL(1, 4), DL(2, 3)),
    (DL(2, 3), DL(2, 3)),
    (DG(1, 2), DG(3, 2)),
    (RR(Fraction(1, 2), 3), RR(1, 2)),
    (A(Fraction(1, 2), 1e-7), A(1, 1e-6)),
    (L(1, 2), A(Fraction(1, 2), 0)),  # an ε-DP pair under an (ε, δ) one
    (RR(1, 4), A(1, 1e-9)),
    (DL(1, 2), A(1, 0)),
    (S(G(1, 2), 0.01), S(G(1, 1), 0.02)),
    (S(DG(1, 3), 0.01, "without_replacement"), S(DG(2, 3), 0.01, "without_replacement")),
    (S(L(1, 1), 0), S(G(1, 1), 0.5)),  # rate 0: the identity
    (C([G(1, 2), L(1, 2)]), C([L(1, 1), G(1, 1)])),
    (C([G(1, 2)] * 3), C([G(1, 1)] * 2 + [G(1, 2)] * 2)),
    (G(1, 2), C([L(1, 1), G(1, 1)])),  # one part of a product: its marginal
    (C([G(1, 1), G(1, 2)]), C([G(2, 3), G(1, 1)])),  # needs the matching, not the first fit
]

REFUSED = [
    (G(1, 1), G(1, 2)),
    (G(1, 1), L(1, 1)),  # different families
    (L(1, 1), G(10, 1)),
    (DL(3, 4), DL(2, 3)),  # Δ larger
    (DL(2, 2), DL(2, 3)),  # scale smaller
    (DG(1, Fraction(48, 100)), DG(1, Fraction(43, 100))),  # larger σ: not dominated (see below)
    (DG(1, 3), DG(1, 2)),  # larger σ: refused by the rule (no proof covers it)
    (DG(3, 2), DG(2, 2)),
    (RR(1, 2), RR(1, 3)),  # k smaller
    (RR(2, 2), RR(1, 2)),
    (A(1, 1e-6), A(1, 1e-7)),
    (G(1, 10), A(1, 1e-6)),  # a Gaussian pair is not ε-DP
    (S(G(1, 2), 0.02), S(G(1, 1), 0.01)),  # rate larger
    (S(G(1, 2), 0.01), S(G(1, 2), 0.01, "without_replacement")),  # different relation
    (S(G(1, 1), 0.01), S(G(1, 2), 0.01)),
    (S(G(1, 1), 0.01), G(1, 1)),  # subsampled against plain: not compared
    (C([G(1, 1)] * 3), C([G(1, 1)] * 2)),  # more mechanisms than declared
    (C([G(1, 1), G(1, 1)]), C([G(1, 1), G(1, 2)])),
]


@pytest.mark.parametrize(("offered", "declared"), ADMITTED, ids=[f"{o!r}<={d!r}" for o, d in ADMITTED])
def test_dominated_pairs_are_admitted_and_the_engine_agrees(
    offered: PrivacyLoss, declared: PrivacyLoss
) -> None:
    assert domination_gap(offered, declared) is None
    for delta in (1e-2, 1e-5):  # the certified lower end of the offered ε(δ) never exceeds the declared upper
        lo = offered.epsilon_bounds(delta)[0]
        assert lo <= declared.epsilon(delta), (delta, float(lo), float(declared.epsilon(delta)))


@pytest.mark.parametrize(("offered", "declared"), REFUSED, ids=[f"{o!r}!<={d!r}" for o, d in REFUSED])
def test_other_pairs_are_refused_with_a_reason(offered: PrivacyLoss, declared: PrivacyLoss) -> None:
    gap = domination_gap(offered, declared)
    assert isinstance(gap, str) and gap


def test_a_larger_discrete_gaussian_sigma_is_not_dominated() -> None:
    """Why the rule admits a discrete Gaussian only at the declared σ: with Δ = 1, σ = 0.48 has a larger
    δ(ε = 3) than σ = 0.43 (exact sums over the integers, and the PLD engine's certified bounds)."""
    sums = []
    for sigma in (0.43, 0.48):
        x = np.arange(-60, 61, dtype=np.float64)
        p = np.exp(-(x**2) / (2 * sigma**2))
        p /= p.sum()
        q = np.exp(-((x - 1) ** 2) / (2 * sigma**2))
        q /= q.sum()
        sums.append(float(np.maximum(q - math.exp(3) * p, 0).sum()))
    assert sums[0] < 0.06 < 0.09 < sums[1]
    small, large = DG(1, Fraction(43, 100)), DG(1, Fraction(48, 100))
    assert large.epsilon_bounds(0.07)[0] > 3 > small.epsilon(0.07)  # the engine: larger σ, larger ε(δ)
    assert domination_gap(large, small) is not None


def test_discrete_gaussian_shift_monotone_numerically() -> None:
    """The shift part of the rule (same σ, smaller integer Δ), checked by exact sums at small σ, where the
    σ direction fails."""
    for sigma in (0.3, 0.45, 0.8, 2.0):
        x = np.arange(-80, 81, dtype=np.float64)
        p = np.exp(-(x**2) / (2 * sigma**2))
        p /= p.sum()
        for gamma in np.exp(np.linspace(-4, 6, 41)):
            hs = [float(np.maximum(np.roll(p, d) - gamma * p, 0).sum()) for d in (1, 2, 3, 4)]
            assert all(a <= b + 1e-15 for a, b in itertools.pairwise(hs)), (sigma, gamma, hs)


def pair_of(m: Any) -> PrivacyLoss:
    """``m``'s pair at d_in = 1 (which it must report)."""
    pair = m.privacy_loss(1)
    assert isinstance(pair, PrivacyLoss)
    return pair


def rr(eps: float) -> dp.Measurement:  # type: ignore[type-arg]
    return dp.m.make_randomized_response(CATS, DISCRETE, epsilon=eps)


def spy(eps: Fraction, calls: list[Any]) -> dp.Measurement:  # type: ignore[type-arg]
    """A pure-ε query (its pair: RR_(ε,0)) that records every run."""

    def run(x: float) -> float:
        calls.append(x)
        return x

    return dp.make_user_measurement(FLOAT, ABS, dp.PureDP(), run, lambda d: d * eps, trusted=True)


def test_refused_query_runs_nothing_and_spends_nothing() -> None:
    comp = dp.make_adaptive_sequential(FLOAT, ABS, dp.ApproxDP(), 1, [A(0.5, 0), A(1, 0)], delta=1e-6)
    q = comp(1.0)
    calls: list[Any] = []
    with pytest.raises(
        dp.BudgetExceeded,
        match=r"query 0 offers the pair approx\(ε=1, δ=0\).*declared pair "
        r"approx\(ε=0.5, δ=0\).*nothing was run or spent",
    ):
        q(spy(Fraction(1), calls))
    assert calls == [] and q.budgets_used == 0
    assert q(spy(Fraction(1, 2), calls)) == 1.0  # the same step, still open
    assert q(spy(Fraction(1), calls)) == 1.0
    with pytest.raises(dp.BudgetExceeded, match="all 2 declared pairs are used"):
        q(spy(Fraction(0), calls))
    assert len(calls) == 2


def test_library_query_refused_keeps_its_step() -> None:
    comp = dp.make_adaptive_concurrent(CATS, DISCRETE, dp.ProfileDP(), 1, pair_of(rr(1.0)), steps=2)
    q = comp(1)
    with pytest.raises(dp.BudgetExceeded, match=r"randomized_response\(ε=2, k=2\).*randomized_response\(ε=1"):
        q(rr(2.0))
    assert q.budgets_used == 0
    q(rr(0.5))
    q(rr(1.0))
    assert q.budgets_used == 2
    with pytest.raises(dp.BudgetExceeded):
        q(rr(0.1))


def test_query_without_pair_is_refused() -> None:
    gauss = dp.m.make_gaussian(FLOAT, ABS, scale=1.0)  # a zCDP measurement that reports its pair
    query: Any = dp.make_user_measurement(  # a zCDP guarantee alone names no pair
        FLOAT, ABS, dp.ZCDP(), lambda x: x, lambda d: Fraction(d), trusted=True
    )
    comp = dp.make_adaptive_sequential(FLOAT, ABS, dp.ProfileDP(), 1, pair_of(gauss), steps=3)
    q = comp(0.0)
    with pytest.raises(dp.BudgetExceeded, match="reports no dominating pair"):
        q(query)
    q(gauss)  # the Gaussian itself: its own pair, whatever its measure
    assert q.budgets_used == 1


@pytest.mark.parametrize("make", [dp.make_adaptive_sequential, dp.make_adaptive_concurrent])
def test_map_is_the_pld_of_the_declared_pairs(make: Any) -> None:
    pairs = [G(1, 2), L(1, 3), G(1, 2), RR(Fraction(1, 2))]
    comp = make(FLOAT, ABS, dp.ApproxDP(), 1, pairs, delta=1e-6)
    composed = C(pairs)
    assert comp.map(1) == (composed.epsilon(1e-6), Fraction(1, 10**6))
    assert comp.map(Fraction(1, 2)) == comp.map(1)
    assert comp.privacy_loss(1) == composed
    with pytest.raises(dp.InvalidParameter, match="larger d_in"):
        comp.map(2)
    profile = make(FLOAT, ABS, dp.ProfileDP(), 1, pairs).map(1)
    assert profile.epsilon(1e-6) == composed.epsilon(1e-6)
    # one pair with steps= is the same as the list
    many = make(FLOAT, ABS, dp.ApproxDP(), 1, G(1, 2), steps=1000, delta=1e-6)
    assert many.map(1) == (C([G(1, 2)] * 1000).epsilon(1e-6), Fraction(1, 10**6))
    assert many.privacy_loss(1) == C([G(1, 2)] * 1000)


def test_in_make_sequential_the_compositor_reports_its_pair() -> None:
    inner = dp.make_adaptive_sequential(FLOAT, ABS, dp.ProfileDP(), 1, G(1, 2), steps=10)
    lap = dp.m.make_laplace(FLOAT, ABS, scale=2.0)
    both = dp.make_sequential(inner, lap, output_measure=dp.ApproxDP(), delta=1e-6)
    expected = C([G(1, 2)] * 10 + [pair_of(lap)]).epsilon(1e-6)
    assert both.map(1)[0] <= expected


def test_dp_sgd_shaped_adaptive_run() -> None:
    """Logistic regression on a scalar feature: θₜ chosen from the earlier noisy gradients, each step a
    new Poisson-subsampled Gaussian query on the per-example gradients, clipped to [−1, 1]."""
    rng = np.random.default_rng(0)
    features = rng.normal(size=400)
    labels = (features + 0.3 * rng.normal(size=400) > 0).astype(float)
    data = [float(2 * y - 1) * float(x) for x, y in zip(features, labels, strict=True)]  # y·x, y ∈ ±1
    clamp = dp.t.make_clamp(VEC, SYM, (-1.0, 1.0))

    def step(theta: float, calls: list[int], rate: float = 0.05) -> dp.Measurement:  # type: ignore[type-arg]
        def grads(rows: list[float]) -> list[float]:  # −d/dθ log σ(θ·y·x) per example
            calls.append(len(rows))
            return [-r / (1 + math.exp(theta * r)) for r in rows]

        per_example: Any = dp.make_user_transformation(VEC, VEC, SYM, SYM, grads, lambda d: d, trusted=True)
        summed = dp.t.make_sum(clamp.output_domain, clamp.output_metric, max_size=10**4)
        total = per_example >> clamp >> summed
        noisy = total >> dp.m.make_gaussian(total.output_domain, total.output_metric, 1.0)
        return dp.make_subsample(noisy, rate)

    calls: list[int] = []
    declared = pair_of(step(0.0, []))
    assert declared.kind == "subsampled"
    comp = dp.make_adaptive_sequential(VEC, SYM, dp.ApproxDP(), 1, declared, steps=20, delta=1e-5)
    q = comp(data)
    theta = 0.0
    for _ in range(20):
        noisy = q(step(theta, calls))
        theta -= 0.5 * noisy / (0.05 * len(data))
    assert len(calls) == 20 and theta > 0  # it learned the sign
    assert comp.map(1) == (C([declared] * 20).epsilon(1e-5), Fraction(1, 10**5))
    with pytest.raises(dp.BudgetExceeded, match="all 20 declared pairs"):
        q(step(theta, calls))
    # a step sampled at a higher rate is refused before it touches the data
    comp = dp.make_adaptive_sequential(VEC, SYM, dp.ApproxDP(), 1, declared, steps=1, delta=1e-5)
    q = comp(data)
    refused: list[int] = []
    with pytest.raises(dp.BudgetExceeded, match="sampling rate q = 0.1 is larger than the declared q = 0.05"):
        q(step(theta, refused, rate=0.1))
    assert refused == [] and q.budgets_used == 0
    q(step(theta, refused, rate=0.01))  # a lower rate is dominated
    assert len(refused) == 1


def _vector_step(sigma: float, q: float = 0.02, clip: float = 1.0) -> Any:
    """docs/training.md's DP-SGD step on 3 features (the gradient at θ = 0): a float vector sum, so its
    pair carries the (0, η) flag of vector_gaussian_bound beside the subsampled Gaussian."""
    d = 3
    rows = dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float), size=d + 1))

    def gradient(r: Any) -> Any:
        x, label = np.asarray(r[:-1]), r[-1]
        return (0.5 - label) * x

    grads = dp.t.make_map_rows(
        rows, SYM, gradient, dp.VectorDomain(dp.AtomDomain(float), size=d), default=np.zeros(d)
    )
    clipped = grads >> dp.t.make_clip_l2(grads.output_domain, SYM, norm=clip)
    total = clipped >> dp.t.make_vector_sum(clipped.output_domain, SYM, max_size=1000)
    noisy = total >> dp.m.make_gaussian(total.output_domain, total.output_metric, scale=sigma * clip)
    return dp.make_subsample(noisy, q)


def test_a_vector_step_with_more_noise_is_admitted() -> None:
    """The user audit's scan: declared at σ = 1.1, every σ from 1.1 to 4.05 is admitted (σ = 2.0–2.15 and
    4.0–4.05 were refused when the step's η was the raw ripple bound, not monotone in σ); less noise and a
    higher rate are refused, the message naming the part and the field."""
    declared = _vector_step(1.1).privacy_loss(1)
    assert {p.kind for p, _ in declared.parts} == {"approx", "subsampled"}
    for i in range(60):
        sigma = round(1.1 + 0.05 * i, 2)
        offered = _vector_step(sigma).privacy_loss(1)
        assert domination_gap(offered, declared) is None, sigma
    rows = dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float), size=4))
    data = np.column_stack([np.ones((50, 3)), np.zeros(50)])
    comp = dp.make_adaptive_sequential(rows, SYM, dp.ApproxDP(), 1, declared, steps=3, delta=1e-5)
    q = comp(data)
    q(_vector_step(2.0))
    less = (
        re.escape("its part subsampled(gaussian(Δ=1.0")
        + r".*"
        + re.escape("is dominated by no declared part")
    )
    with pytest.raises(dp.BudgetExceeded, match=less + r".*its Δ/scale = 1\.0.* is larger than the declared"):
        q(_vector_step(1.0))
    with pytest.raises(
        dp.BudgetExceeded, match=r"its sampling rate q = 0\.05 is larger than the declared q = 0\.02"
    ):
        q(_vector_step(1.1, q=0.05))
    assert q.budgets_used == 1


def test_refusals_name_the_part_and_the_field() -> None:
    assert domination_gap(A(1, 1e-6), A(1, 1e-7)) == "its δ = 1e-06 is larger than the declared δ = 1e-07"
    assert domination_gap(A(2, 0), A(1, 1e-7)) == "its ε = 2.0 is larger than the declared ε = 1.0"
    assert domination_gap(DL(2, 2), DL(2, 3)) == "its scale t = 2.0 is smaller than the declared t = 3.0"
    assert domination_gap(RR(1, 2), RR(1, 3)) == "its k = 2.0 is smaller than the declared k = 3.0"
    gap = domination_gap(C([G(1, 2), A(0, 1e-9)]), C([G(1, 2), A(0, 1e-10)]))
    assert gap is not None and gap.startswith(
        "its part approx(ε=0, δ=1e-09) is dominated by no declared part"
    )
    assert "against approx(ε=0, δ=1e-10): its δ = 1e-09 is larger than the declared δ = 1e-10" in gap
    gap = domination_gap(C([G(1, 2)] * 2), C([G(1, 2), G(1, 1)]))
    assert gap is None
    gap = domination_gap(C([G(1, 1)] * 2), C([G(1, 1), G(1, 2)]))
    assert (
        gap is not None
        and "(× 2, 1 of them unmatched) is dominated only by declared parts (1 × gaussian" in gap
    )


def test_same_query_object_asks_its_pair_once() -> None:
    asked: list[int] = []
    lap = dp.m.make_laplace(FLOAT, ABS, scale=2.0)
    comp = dp.make_adaptive_sequential(FLOAT, ABS, dp.ProfileDP(), 1, pair_of(lap), steps=5)
    q = comp(0.0)

    def cost(d: Fraction) -> Fraction:
        asked.append(1)
        return Fraction(1, 2)

    counting: dp.Measurement = dp.make_user_measurement(  # type: ignore[type-arg]
        FLOAT, ABS, dp.PureDP(), lambda x: x, cost, trusted=True
    )
    for _ in range(3):
        with pytest.raises(dp.BudgetExceeded):  # approx(1/2, 0) is not compared with a Laplace pair
            q(counting)
    assert len(asked) == 1
    for _ in range(5):
        q(lap)
    assert q.budgets_used == 5


def test_eight_threads_never_exceed_the_declared_steps() -> None:
    steps = 60
    comp = dp.make_adaptive_concurrent(FLOAT, ABS, dp.ProfileDP(), 1, A(Fraction(1, 100), 0), steps=steps)
    q = comp(0.0)
    releases: list[Any] = []
    refused: list[Any] = []
    ok, too_big = spy(Fraction(1, 100), releases), spy(Fraction(1, 50), refused)

    def work(i: int) -> None:
        for n in range(200):
            with contextlib.suppress(dp.BudgetExceeded):
                q(too_big if (n + i) % 3 == 0 else ok)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(releases) == steps and q.budgets_used == steps
    assert refused == []


def test_existing_budgets_unchanged() -> None:
    comp = dp.make_adaptive_sequential(FLOAT, ABS, dp.PureDP(), 1, [0.5, 0.5])
    assert comp.map(1) == 1
    assert comp.privacy_loss(1) is None


BAD = [
    ({"d_mids": G(1, 1)}, dp.InvalidParameter, "pass steps=N"),
    ({"d_mids": G(1, 1), "steps": 0}, dp.InvalidParameter, "steps=0 must be a positive int"),
    ({"d_mids": G(1, 1), "steps": 2.0}, dp.InvalidParameter, "steps=2.0 must be a positive int"),
    ({"d_mids": G(1, 1), "steps": True}, dp.InvalidParameter, "steps=True"),
    ({"d_mids": [G(1, 1)], "steps": 3}, dp.InvalidParameter, "goes with a single PrivacyLoss"),
    ({"d_mids": [G(1, 1), (0.5, 0)]}, dp.InvalidParameter, r"d_mids\[1\]=\(0.5, 0\) is not a PrivacyLoss"),
    ({"d_mids": [G(1, 1)], "delta": None}, dp.InvalidParameter, "need delta="),
    ({"d_mids": [(0.5, 0)], "delta": 1e-6}, dp.InvalidParameter, "goes with pair budgets"),
    ({"d_mids": [G(1, 1)], "delta": 2}, dp.InvalidParameter, "delta"),
    ({"d_mids": [G(1, 1)], "output_measure": dp.PureDP()}, dp.InvalidParameter, "ApproxDP.*or dp.ProfileDP"),
    (
        {"d_mids": [G(1, 1)], "output_measure": dp.ProfileDP(), "delta": 1e-6},
        dp.InvalidParameter,
        "goes with ApproxDP",
    ),
    (
        {"d_mids": [S(G(1, 1), 0.1), S(G(1, 1), 0.1, "without_replacement")]},
        dp.UnsupportedComposition,
        "sampl",
    ),
]


@pytest.mark.parametrize(("change", "error", "message"), BAD)
@pytest.mark.parametrize("make", [dp.make_adaptive_sequential, dp.make_adaptive_concurrent])
def test_bad_pair_budgets_refused(
    make: Any, change: dict[str, Any], error: type[Exception], message: str
) -> None:
    kwargs: dict[str, Any] = {
        "input_domain": FLOAT,
        "input_metric": ABS,
        "output_measure": dp.ApproxDP(),
        "d_in": 1,
        "delta": 1e-6,
        **change,
    }
    with pytest.raises(error, match=message):
        make(**kwargs)


def test_composition_matching_agrees_with_brute_force() -> None:
    """Case 8 (a one-to-one matching of parts, by maximum flow) against trying every assignment."""
    rng = np.random.default_rng(1)

    def parts(p: PrivacyLoss) -> list[PrivacyLoss]:
        return [q for q, n in (p.parts if p.kind == "composed" else ((p, 1),)) for _ in range(n)]

    def brute(offered: PrivacyLoss, declared: PrivacyLoss) -> bool:
        o, d = parts(offered), parts(declared)
        return any(
            all(domination_gap(o[i], d[j]) is None for i, j in enumerate(perm))
            for perm in itertools.permutations(range(len(d)), len(o))
        )

    def one() -> PrivacyLoss:
        return G(1, int(rng.integers(1, 5))) if rng.random() < 0.7 else L(1, int(rng.integers(1, 4)))

    for _ in range(300):
        offered = C([one() for _ in range(int(rng.integers(1, 4)))])
        declared = C([one() for _ in range(int(rng.integers(1, 5)))])
        assert (domination_gap(offered, declared) is None) == brute(offered, declared), (offered, declared)


def test_a_triple_distance_is_within_d_in_only_componentwise() -> None:
    """(l0, l1, l∞) distances compared lexicographically let (1, 50, 50) pass under d_in = (2, 2, 1): the
    compositor (and its pair) claimed its guarantee at an l1 and l∞ 50 times larger than it priced."""
    dom = dp.MapDomain(dp.AtomDomain(str), dp.AtomDomain(int))
    metric = dp.L01InfDistance()
    for comp in (
        dp.make_adaptive_sequential(
            dom, metric, dp.ApproxDP(), (2, 2, 1), PrivacyLoss.gaussian(1, 1), steps=3, delta=1e-6
        ),
        dp.make_adaptive_sequential(dom, metric, dp.PureDP(), (2, 2, 1), [0.5, 0.5]),
    ):
        comp.map((2, 2, 1))
        comp.map((1, 2, 1))
        for above in ((1, 50, 50), (2, 3, 1), (3, 0, 0), (2, 2, 2)):
            with pytest.raises(dp.InvalidParameter, match="makes no claim"):
                comp.map(above)
        if comp.privacy_loss((2, 2, 1)) is not None:
            with pytest.raises(dp.InvalidParameter, match="makes no claim"):
                comp.privacy_loss((1, 50, 50))


def test_a_query_made_from_inside_another_querys_pricing_is_refused() -> None:
    """A trusted user measurement whose privacy map queried the same compositor got both queries admitted
    against step 0 (2 budgets used of 1 declared)."""
    floats = dp.AtomDomain(float)
    lap = dp.m.make_laplace(floats, dp.AbsoluteDistance(), scale=2.0)
    for comp in (
        dp.make_adaptive_sequential(
            floats,
            dp.AbsoluteDistance(),
            dp.ApproxDP(),
            1,
            PrivacyLoss.approx(Fraction(1, 2), 0),
            steps=1,
            delta=1e-6,
        ),
        dp.make_adaptive_sequential(floats, dp.AbsoluteDistance(), dp.PureDP(), 1, [Fraction(1, 2)]),
    ):
        q = comp(3.0)
        inner: list[Any] = []

        def sneaky_map(d: Any, q: Any = q, inner: list[Any] = inner) -> Fraction:
            if not inner:
                inner.append(q(lap))  # re-enters the compositor while the outer query is being priced
            return Fraction(1, 2)

        outer = dp.make_user_measurement(
            floats, dp.AbsoluteDistance(), dp.PureDP(), lap.function, sneaky_map, trusted=True
        )
        with pytest.raises(dp.SequentialityError, match="from inside its own answer"):
            q(outer)
        assert q.budgets_used == 0 and not inner
        q(lap)  # the step is still open
        assert q.budgets_used == 1


@pytest.mark.parametrize("hook", ["loss", "privacy_map"])
def test_a_query_whose_map_raises_is_refused_by_name_and_spends_nothing(hook: str) -> None:
    """A loss hook (read against pair budgets: offered_pair) or a map (read against budgets in the measure's
    units: priced_cost) that raises something other than a DPError: InvalidParameter naming the query."""
    rr = dp.m.make_randomized_response(CATS, DISCRETE, epsilon=1.0)
    bad = dp.m.make_randomized_response(CATS, DISCRETE, epsilon=1.0)

    def boom(d_in: Any) -> Any:
        raise ZeroDivisionError("boom")

    object.__setattr__(bad, hook, boom)
    if hook == "loss":
        pair = rr.privacy_loss(1)
        q = dp.make_adaptive_sequential(CATS, DISCRETE, dp.ProfileDP(), 1, pair, steps=2)(1)
    else:
        q = dp.make_adaptive_sequential(CATS, DISCRETE, dp.PureDP(), 1, [1.0, 1.0])(1)
    said = f"query {bad.node.label()}: its privacy map raised ZeroDivisionError: boom; nothing was run"
    with pytest.raises(dp.InvalidParameter, match=re.escape(said)):
        q(bad)
    assert q.budgets_used == 0
    q(rr)
    assert q.budgets_used == 1


def test_a_refusal_beyond_the_double_range_names_the_values() -> None:
    """Found by review: Δ/scale = 10**600 made the message's float conversion raise OverflowError."""
    huge = PrivacyLoss.gaussian(10**300, Fraction(1, 10**300))
    gap = domination_gap(huge, PrivacyLoss.gaussian(1, 1))
    assert gap is not None and gap.startswith("its Δ/scale = 1e+600 ") and "declared Δ/scale = 1.0" in gap
