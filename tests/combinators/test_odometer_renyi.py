"""The Rényi and zCDP odometers: both readings (the loss bound and the stopping ε) against their theorems
recomputed in mpmath for adaptive sequences, the loss bound against exact loss distributions, refusals that
spend nothing, the cost of adaptivity, ledgers, threads and sequential children per ledger."""

from __future__ import annotations

import threading
from fractions import Fraction
from pathlib import Path
from typing import Any

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpcompose as dp
from dpcompose.accounting import renyi_to_approx
from dpcompose.accounting._filters import DEFAULT_ORDERS
from dpcompose.accounting._renyi_odometer import renyi_odometer_epsilon, renyi_stopping_epsilon

INTS = dp.VectorDomain(dp.AtomDomain(int))
SYM = dp.SymmetricDistance()
FLOAT = dp.AtomDomain(float)
ABS = dp.AbsoluteDistance()
ORDERS = (2, 3, 4, 6, 8, 16, 32, 64)
DELTA = Fraction(1, 10**5)


class Spy:
    """A counting transformation to float that records every run (a refusal must run nothing)."""

    def __init__(self) -> None:
        self.runs = 0

    def count(self) -> Any:
        def f(xs: Any) -> float:
            self.runs += 1
            return float(len(xs))

        return dp.make_user_transformation(INTS, FLOAT, SYM, ABS, f, lambda d: d, trusted=True)


def gaussian(spy: Spy, sigma: float, seed: int) -> Any:
    """A seeded (float, continuous-pair) Gaussian on the count: ZCDP, ρ = 1/(2σ²)."""
    return spy.count() >> dp.m.make_gaussian(FLOAT, ABS, sigma, rng=np.random.default_rng(seed))


def sgd_step(spy: Spy, sigma: float, q: float, seed: int) -> Any:
    """A Poisson-subsampled continuous Gaussian: ProfileDP, charged its pair's Rényi curve."""
    return dp.make_subsample(gaussian(spy, sigma, seed), q, rng=np.random.default_rng(seed))


def laplace(spy: Spy, scale: float, seed: int) -> Any:
    return spy.count() >> dp.m.make_laplace(FLOAT, ABS, scale, rng=np.random.default_rng(seed))


def odometer(measure: Any = None, **kw: Any) -> Any:
    kw.setdefault("delta", DELTA)
    kw.setdefault("orders", ORDERS)
    return dp.make_odometer(INTS, SYM, measure or dp.RenyiDP(), 1, **kw)


# --- exact Rényi divergences of what runs, in mpmath ----------------------------------------------------

mpmath.mp.dps = 40


def sampled_gaussian_rdp(alpha: int, q: Any, sigma: Any) -> Any:
    """D_α of the Poisson-sampled Gaussian (Δ = 1) at an integer order: ln(Σ_j C(α,j)(1−q)^{α−j} q^j
    e^{(j²−j)/2σ²})/(α−1), exact for the continuous Gaussian (Mironov–Talwar–Zhang 2019 §3.3)."""
    total = mpmath.fsum(
        mpmath.binomial(alpha, j) * (1 - q) ** (alpha - j) * q**j * mpmath.exp((j * j - j) / (2 * sigma**2))
        for j in range(alpha + 1)
    )
    return mpmath.log(total) / (alpha - 1)


def laplace_rdp(alpha: int, scale: Any) -> Any:
    """D_α of Laplace(Δ = 1, b): ln(α/(2α−1)·e^{(α−1)/b} + (α−1)/(2α−1)·e^{−α/b})/(α−1) (Mironov 2017
    Prop. 6)."""
    a = mpmath.mpf(alpha)
    inner = a / (2 * a - 1) * mpmath.exp((a - 1) / scale) + (a - 1) / (2 * a - 1) * mpmath.exp(-a / scale)
    return mpmath.log(inner) / (a - 1)


def theorem_epsilon(curves: list[list[Any]], orders: tuple[int, ...], delta: Fraction) -> Any:
    """min_α Σᵢ cᵢ(α) + ln(|A|/δ)/(α − 1), in mpmath (Theorem 1 of accounting._renyi_odometer: Ville's
    inequality at δ/|A|, the loss bound ``privacy_loss()`` reads)."""
    log_term = mpmath.log(mpmath.mpf(len(orders)) * delta.denominator / delta.numerator)
    return min(mpmath.fsum(c[k] for c in curves) + log_term / (a - 1) for k, a in enumerate(orders))


def stopping_theorem_epsilon(curves: list[list[Any]], orders: tuple[int, ...], delta: Fraction) -> Any:
    """min_α Σᵢ cᵢ(α) + ln((α − 1)/α) + (ln(|A|/δ) − ln α)/(α − 1), in mpmath (Theorem 2 of
    accounting._renyi_odometer: Balle et al. 2020 Thm 21 at δ/|A|, ``stopping_epsilon()``)."""
    log_term = mpmath.log(mpmath.mpf(len(orders)) * delta.denominator / delta.numerator)
    return min(
        mpmath.fsum(c[k] for c in curves)
        + mpmath.log(mpmath.mpf(a - 1) / a)
        + (log_term - mpmath.log(a)) / (a - 1)
        for k, a in enumerate(orders)
    )


def mp(x: Fraction) -> Any:
    return mpmath.mpf(x.numerator) / x.denominator


STEP = st.tuples(
    st.sampled_from(["gaussian", "sgd", "laplace"]),
    st.sampled_from([0.8, 1.0, 2.0, 5.0]),  # σ (or Laplace scale) if the last answer was large
    st.sampled_from([0.6, 1.5, 4.0]),  # … and if it was small
    st.sampled_from([0.01, 0.1, 0.5]),  # q of a subsampled step
)


def check_adaptive_run(steps: list[tuple[str, float, float, float]], read_every: int) -> None:
    """Run ``steps`` through a Rényi odometer, reading every ``read_every`` queries."""
    # the analyst picks each query's kind and noise from the last answer, and reads as it goes
    spy = Spy()
    q = odometer()(np.arange(50))
    curves: list[list[Any]] = []  # the exact Rényi divergences of what ran, per query
    last = 0.0
    for i, (kind, big, small, rate) in enumerate(steps):
        sigma = big if last > 25 else small
        if kind == "gaussian":
            query = gaussian(spy, sigma, i)
            exact = [mpmath.mpf(a) / (2 * mpmath.mpf(sigma) ** 2) for a in ORDERS]
        elif kind == "sgd":
            query = sgd_step(spy, sigma, rate, i)
            exact = [sampled_gaussian_rdp(a, mpmath.mpf(rate), mpmath.mpf(sigma)) for a in ORDERS]
        else:
            query = laplace(spy, sigma, i)
            exact = [laplace_rdp(a, mpmath.mpf(sigma)) for a in ORDERS]
        last = float(q(query))
        curves.append(exact)
        if (i + 1) % read_every == 0 or i == len(steps) - 1:
            eps, delta = q.privacy_loss()
            stop = q.stopping_epsilon()
            assert delta == DELTA and stop <= eps
            sums = [mp(s.exact) for s in q.spent().values()]
            for got, theorem in ((eps, theorem_epsilon), (stop, stopping_theorem_epsilon)):
                assert mp(got) >= theorem(curves, ORDERS, DELTA)
                # and no looser than the theorem on the curves the library charged, bar outward rounding
                ref = theorem([sums], ORDERS, DELTA)
                assert ref <= mp(got) <= ref * (1 + mpmath.mpf(2) ** -40)
    assert spy.runs == len(steps) == q.queries_charged


@settings(max_examples=8, deadline=None)
@given(steps=st.lists(STEP, min_size=1, max_size=10), read_every=st.integers(1, 4))
def test_reading_covers_the_theorem_recomputed_in_mpmath(
    steps: list[tuple[str, float, float, float]], read_every: int
) -> None:
    check_adaptive_run(steps, read_every)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(steps=st.lists(STEP, min_size=1, max_size=40), read_every=st.integers(1, 6))
def test_reading_covers_the_theorem_thoroughly(
    steps: list[tuple[str, float, float, float]], read_every: int
) -> None:
    check_adaptive_run(steps, read_every)


def test_the_odometer_pays_for_adaptivity_over_the_filter_conversion() -> None:
    # the same spending read by a filter fixed in advance (Balle et al. 2020 Thm 21 at the full δ) is lower:
    # the odometer converts at δ/|A|, and a sum read at the best order for the data at the full δ is not
    # covered by any theorem at a data-dependent time
    spy = Spy()
    q = odometer()(np.arange(100))
    for i in range(20):
        q(sgd_step(spy, 1.0, 0.05, i))
    sums = [s.exact for s in q.spent().values()]
    eps, _ = q.privacy_loss()
    stop = q.stopping_epsilon()
    assert renyi_to_approx(ORDERS, sums, DELTA) < stop < eps
    assert stop == renyi_to_approx(ORDERS, sums, DELTA / len(ORDERS))
    assert stop == renyi_stopping_epsilon(tuple(Fraction(a) for a in ORDERS), tuple(sums), DELTA)
    assert eps == renyi_odometer_epsilon(tuple(Fraction(a) for a in ORDERS), tuple(sums), DELTA)


def test_nothing_charged_reads_zero_and_status_shows_the_reading() -> None:
    q = odometer()(np.arange(10))
    assert q.privacy_loss() == (0, DELTA)
    assert "privacy loss ε=0" in repr(q)
    spy = Spy()
    q(gaussian(spy, 2.0, 0))
    eps, _ = q.privacy_loss()
    assert eps > 0 and "privacy loss ε=" in repr(q)


def test_zcdp_odometer_reads_alpha_rho_and_refuses_subsampled_steps() -> None:
    spy = Spy()
    q = odometer(dp.ZCDP())(np.arange(10))
    q(gaussian(spy, 2.0, 0))  # ρ = 1/8: α/8
    q(laplace(spy, 2.0, 1))  # ε = 1/2: min(ε, αε²/2) = min(1/2, α/8) at each order
    assert q.spent()["alpha=2"] == Fraction(2, 8) + Fraction(2, 8)
    assert q.spent()["alpha=8"] == 1 + Fraction(1, 2)
    eps, _ = q.privacy_loss()
    curve = [[mpmath.mpf(a) / 8 + min(mpmath.mpf(1) / 2, mpmath.mpf(a) / 8) for a in ORDERS]]
    expect = theorem_epsilon(curve, ORDERS, DELTA)
    assert expect <= mp(eps) <= expect * (1 + mpmath.mpf(2) ** -40)
    runs, charged = spy.runs, q.queries_charged
    with pytest.raises(dp.DomainMismatch, match="ZCDP"):
        q(sgd_step(spy, 1.0, 0.1, 2))
    assert spy.runs == runs and q.queries_charged == charged


# --- bad input: refused by name, nothing run, nothing spent ---------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "names"),
    [
        ({"measure": dp.ProfileDP()}, dp.UnsupportedComposition, "no odometer for ProfileDP"),
        ({"delta": None}, dp.UnsupportedComposition, "needs delta="),
        ({"delta": 0}, dp.InvalidParameter, "delta=0"),
        ({"delta": 1.0}, dp.InvalidParameter, "delta=1.0"),
        ({"delta": -1e-6}, dp.InvalidParameter, "delta="),
        ({"delta": float("nan")}, dp.InvalidParameter, "delta="),
        ({"orders": [0.5, 2]}, dp.InvalidParameter, r"orders\[0\]=0.5 must be a Rényi order > 1"),
        ({"orders": [2, 1]}, dp.InvalidParameter, r"orders\[1\]=1 must be a Rényi order > 1"),
        ({"orders": [2, 2]}, dp.InvalidParameter, "must not repeat"),
        ({"orders": []}, dp.InvalidParameter, "orders"),
    ],
)
def test_bad_arguments_are_refused_by_name(kwargs: dict[str, Any], error: type, names: str) -> None:
    measure = kwargs.pop("measure", None)
    with pytest.raises(error, match=names):
        odometer(measure, **kwargs)


@pytest.mark.parametrize("name", ["delta", "orders"])
def test_basic_odometers_refuse_renyi_arguments(name: str) -> None:
    value: Any = 1e-6 if name == "delta" else [2, 4]
    with pytest.raises(dp.InvalidParameter, match=f"{name}=.*RenyiDP or ZCDP odometer only"):
        dp.make_odometer(INTS, SYM, dp.ApproxDP(), 1, **{name: value})


def test_queries_without_a_renyi_curve_are_refused_and_charge_nothing() -> None:
    spy = Spy()
    q = odometer()(np.arange(100))
    q(gaussian(spy, 2.0, 0))
    spent, runs = q.spent(), spy.runs
    approx = dp.make_user_measurement(
        INTS, SYM, dp.ApproxDP(), len, lambda d: (Fraction(d), Fraction(d, 10**6)), trusted=True
    )
    with pytest.raises(dp.DomainMismatch, match="no dominating pair.*nothing was run or spent"):
        q(approx)
    sized = dp.VectorDomain(dp.AtomDomain(int), size=100)
    wor_child = dp.make_user_transformation(
        sized, FLOAT, dp.ChangeOneDistance(), ABS, lambda xs: float(len(xs)), lambda d: d, trusted=True
    ) >> dp.m.make_gaussian(FLOAT, ABS, 1.0, rng=np.random.default_rng(0))
    wor = dp.make_subsample(wor_child, 0.1, "without_replacement", dataset_size=1000)
    population = dp.VectorDomain(dp.AtomDomain(int), size=1000)
    q_wor = dp.make_odometer(population, dp.ChangeOneDistance(), dp.RenyiDP(), 1, delta=DELTA)(
        np.arange(1000)
    )
    with pytest.raises(dp.DomainMismatch, match="without replacement"):
        q_wor(wor)
    assert q_wor.queries_charged == 0 and q_wor.privacy_loss() == (0, DELTA)
    with pytest.raises(dp.DomainMismatch):  # a query on another space
        q(dp.m.make_laplace(FLOAT, ABS, 1.0))
    assert q.spent() == spent and spy.runs == runs and q.queries_charged == 1


def test_a_refused_step_is_told_the_fix_for_its_case() -> None:
    """The documented DP-SGD step (a float vector Gaussian, Poisson-subsampled) at accounting="auto" is a
    ProfileDP query whose pair carries the (0, η) flag: the fix is accounting="renyi", not Poisson
    sampling (it is Poisson already); a flagged pair without subsampling is told to cast."""
    rows = dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float), size=3))
    clipped = dp.t.make_clip_l2(rows, SYM, norm=1.0)
    total = clipped >> dp.t.make_vector_sum(clipped.output_domain, SYM, max_size=100)
    noisy = total >> dp.m.make_gaussian(total.output_domain, total.output_metric, scale=2.0)
    q = dp.make_odometer(rows, SYM, dp.RenyiDP(), d_in=1, delta=DELTA)(np.ones((20, 3)))
    with pytest.raises(dp.DomainMismatch, match=r"\(0, η\) flag.*accounting='renyi'") as info:
        q(dp.make_subsample(noisy, 0.05))
    assert "method='poisson'" not in str(info.value)
    with pytest.raises(dp.DomainMismatch, match=r"make_zcdp_to_renyi") as info:
        q(dp.make_zcdp_to_profile(noisy))
    assert "accounting='renyi'" not in str(info.value)
    assert q.queries_charged == 0
    q(dp.make_subsample(noisy, 0.05, accounting="renyi"))  # the fix named
    assert q.queries_charged == 1


def test_a_failing_map_charges_nothing() -> None:
    def bad_map(d: Any) -> Any:
        raise ValueError("boom")

    user = dp.make_user_measurement(INTS, SYM, dp.RenyiDP(), len, bad_map, trusted=True)
    q = odometer()(np.arange(10))
    with pytest.raises(dp.DPError):
        q(user)
    assert q.queries_charged == 0 and q.privacy_loss() == (0, DELTA)


# --- ledgers and threads -------------------------------------------------------------------------------


def test_renyi_odometer_persists_and_a_ledger_is_bound_to_its_delta_and_orders(tmp_path: Path) -> None:
    path = tmp_path / "odo.db"
    spy = Spy()
    q = odometer(ledger=dp.SQLiteLedger(path, "o"))(np.arange(10))
    q(sgd_step(spy, 1.0, 0.1, 0))
    again = odometer(ledger=dp.SQLiteLedger(path, "o"))(np.arange(10))
    assert again.privacy_loss() == q.privacy_loss() and again.queries_charged == 1
    for other in ({"delta": 1e-6}, {"orders": (2, 4)}):
        with pytest.raises(dp.LedgerError):
            odometer(ledger=dp.SQLiteLedger(path, "o"), **other)(np.arange(10))
    with pytest.raises(dp.LedgerError):
        dp.make_odometer(INTS, SYM, dp.ApproxDP(), 1, ledger=dp.SQLiteLedger(path, "o"))(np.arange(10))


def test_eight_threads_charge_every_query_exactly_once() -> None:
    rho = Fraction(1, 1000)
    user = dp.make_user_measurement(INTS, SYM, dp.ZCDP(), len, lambda d: rho * d, trusted=True)
    q = odometer()(np.arange(10))
    answered = [0] * 8

    def worker(i: int) -> None:
        for _ in range(50):
            q(user)
            answered[i] += 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(answered) == 400 == q.queries_charged
    sums = [s.exact for s in q.spent().values()]
    assert sums == [400 * rho * a for a in ORDERS]
    assert q.privacy_loss() == (renyi_odometer_epsilon([Fraction(a) for a in ORDERS], sums, DELTA), DELTA)


def test_an_earlier_interactive_answer_closes_when_a_later_query_is_answered() -> None:
    inner = dp.make_privacy_filter(INTS, SYM, dp.ZCDP(), 1, 0.5)
    q = odometer()(np.arange(10))
    first = q(inner)
    q(inner)
    count = dp.t.make_count(INTS, SYM)
    with pytest.raises(dp.SequentialityError):
        first(count >> dp.m.make_gaussian(count.output_domain, count.output_metric, 4.0))


# --- the theorem itself, by exact enumeration of an adaptive analyst ------------------------------------


def rr_renyi(eps: Any, alpha: int) -> Any:
    """D_α of randomized response with parameter ε (either direction, it is symmetric), in mpmath."""
    p = mpmath.exp(eps) / (1 + mpmath.exp(eps))
    q = 1 - p
    return mpmath.log(p**alpha * q ** (1 - alpha) + q**alpha * p ** (1 - alpha)) / (alpha - 1)


def up(x: Any) -> Fraction:
    """An mpmath value rounded up to a Fraction (the odometer is given upper bounds on each curve)."""
    return Fraction(str(mpmath.nstr(x, 30))) + Fraction(1, 10**25)


ENUM_ORDERS = (2, 4, 8)


def worst_gap(reader: Any, delta: Fraction) -> Any:
    """The largest P_x(E) − e^ε̂ P_x'(E) over ε̂ and events E inside {reading ≤ ε̂}, both directions, for an
    analyst running randomized response on one bit (x: 1, x': 0) that picks each ε from the answers so far
    (2 after a 1, else 1/2) and stops at three 1s or six answers; ``reader(sums, delta)`` is the reading."""
    views = []

    def walk(prob: tuple[Any, Any], sums: list[Fraction], ones: int, depth: int, last: int) -> None:
        if ones >= 3 or depth == 6:
            views.append((prob[0], prob[1], reader(sums, delta)))
            return
        eps = mpmath.mpf(2) if last == 1 else mpmath.mpf(1) / 2
        p = mpmath.exp(eps) / (1 + mpmath.exp(eps))
        new_sums = [s + up(rr_renyi(eps, a)) for s, a in zip(sums, ENUM_ORDERS, strict=True)]
        for bit in (0, 1):
            px, py = (p, 1 - p) if bit == 1 else (1 - p, p)  # RR reports the true bit with probability p
            walk((prob[0] * px, prob[1] * py), new_sums, ones + bit, depth + 1, bit)

    walk((mpmath.mpf(1), mpmath.mpf(1)), [Fraction(0)] * len(ENUM_ORDERS), 0, 0, 0)
    assert abs(mpmath.fsum(v[0] for v in views) - 1) < 1e-30
    worst = mpmath.mpf(0)
    for eps_hat in sorted({r for _, _, r in views}):
        e = mpmath.exp(mp(eps_hat))
        for a, b in ((0, 1), (1, 0)):
            worst = max(worst, mpmath.fsum(max(0, v[a] - e * v[b]) for v in views if v[2] <= eps_hat))
    return worst


@pytest.mark.parametrize("reading", [renyi_odometer_epsilon, renyi_stopping_epsilon])
@pytest.mark.parametrize("delta", [Fraction(1, 5), Fraction(1, 100)])
def test_no_event_below_a_reading_breaks_the_guarantee_exact_enumeration(
    delta: Fraction, reading: Any
) -> None:
    orders = tuple(Fraction(a) for a in ENUM_ORDERS)
    assert worst_gap(lambda sums, d: reading(orders, sums, d), delta) <= mp(delta)


def loss_escape(reader: Any, delta: Fraction) -> Any:
    """The largest, over the two directions, P_x(some Lₙ > readingₙ) for the analyst of :func:`worst_gap`:
    the probability that the privacy loss ever passes the reading (an odometer allows at most δ)."""

    def escaped(d: int, prob: tuple[Any, Any], sums: list[Fraction], ones: int, depth: int, last: int) -> Any:
        # d = 0: x is the bit 1 (the loss is ln P₁/P₀); d = 1: the other way round
        if depth > 0 and mpmath.log(prob[d] / prob[1 - d]) > mp(reader(sums, delta)):
            return prob[d]
        if ones >= 3 or depth == 6:
            return mpmath.mpf(0)
        eps = mpmath.mpf(2) if last == 1 else mpmath.mpf(1) / 2
        p = mpmath.exp(eps) / (1 + mpmath.exp(eps))
        new_sums = [s + up(rr_renyi(eps, a)) for s, a in zip(sums, ENUM_ORDERS, strict=True)]
        total = mpmath.mpf(0)
        for bit in (0, 1):
            px, py = (p, 1 - p) if bit == 1 else (1 - p, p)
            total += escaped(d, (prob[0] * px, prob[1] * py), new_sums, ones + bit, depth + 1, bit)
        return total

    start = (mpmath.mpf(1), mpmath.mpf(1))
    return max(escaped(d, start, [Fraction(0)] * len(ENUM_ORDERS), 0, 0, 0) for d in (0, 1))


@pytest.mark.parametrize("delta", [Fraction(1, 5), Fraction(1, 100)])
def test_the_loss_stays_below_the_reading_at_every_time_exact_enumeration(delta: Fraction) -> None:
    orders = tuple(Fraction(a) for a in ENUM_ORDERS)
    assert loss_escape(lambda sums, d: renyi_odometer_epsilon(orders, sums, d), delta) <= mp(delta)


def test_the_enumeration_has_teeth() -> None:
    # reading the Rényi sums themselves as ε (the trap) breaks the guarantee on the same runs (0.196 > 0.01)
    assert worst_gap(lambda sums, d: min(sums), Fraction(1, 100)) > Fraction(1, 100)


def test_the_loss_enumeration_has_teeth() -> None:
    # the stopping reading is not a loss bound on the same runs
    orders = tuple(Fraction(a) for a in ENUM_ORDERS)
    delta = Fraction(1, 5)
    assert loss_escape(lambda sums, d: renyi_stopping_epsilon(orders, sums, d), delta) > delta


# --- the loss bound against exact loss distributions (the reproducers of the stopping reading) -----------


def test_250_randomized_responses_loss_stays_below_the_reading_with_probability_1_minus_delta() -> None:
    # 250 randomized responses with ε₀ = 3, each charged its exact Rényi curve (rounded up) at the default
    # orders, δ = 1e-6, read after every step. The loss is Lₙ = 3(2k − n) with k ~ Bin(n, p) the truthful
    # answers; P_x(some Lₙ > readingₙ) is computed exactly along the paths.
    eps0, delta, steps = mpmath.mpf(3), Fraction(1, 10**6), 250
    # (each value rounded up to a multiple of 2⁻⁴⁰: short Fractions keep 500 readings fast)
    table = {
        a: Fraction(int(mpmath.ceil(rr_renyi(eps0, mpmath.mpf(a.numerator) / a.denominator) * 2**40)), 2**40)
        for a in DEFAULT_ORDERS
    }
    curve = dp.RenyiCurve(lambda a: table[Fraction(a)], "RR(ε=3)")
    rr = dp.make_user_measurement(INTS, SYM, dp.RenyiDP(), len, lambda d: curve, trusted=True)
    p = float(mpmath.exp(eps0) / (1 + mpmath.exp(eps0)))  # (floats: the masses compared are ≥ 1e-7)
    q = dp.make_odometer(INTS, SYM, dp.RenyiDP(), 1, delta=delta)(np.arange(3))
    alive = [1.0]  # by k, the mass of paths whose loss has not passed the reading yet
    escaped = 0.0
    for n in range(1, steps + 1):
        q(rr)
        eps, _ = q.privacy_loss()
        alive = [
            (alive[k] * (1 - p) if k < n else 0.0) + (alive[k - 1] * p if k > 0 else 0.0)
            for k in range(n + 1)
        ]
        for k in range(n + 1):
            if 3 * (2 * k - n) > eps:
                escaped += alive[k]
                alive[k] = 0.0
    assert escaped <= delta
    # the stopping reading, 749.99 after 250 steps, is no loss bound: L = 750 with probability p²⁵⁰ = 5.3e-6
    assert q.stopping_epsilon() < 750 and p**250 > 5 * delta


@pytest.mark.parametrize(("delta", "orders"), [(0.5, None), (1e-6, [2, 10**9])])
def test_one_pure_query_reads_at_least_its_epsilon(delta: float, orders: Any) -> None:
    # one ε = 1 query may be randomized response, whose loss is 1 with probability e/(1 + e) = 0.73 > δ:
    # the reading must be ≥ 1 (the stopping reading is 0.972, resp. 0.99999999)
    pure = dp.make_user_measurement(INTS, SYM, dp.PureDP(), len, lambda d: Fraction(d), trusted=True)
    q = dp.make_odometer(INTS, SYM, dp.RenyiDP(), 1, delta=delta, orders=orders)(np.arange(3))
    q(pure)
    assert q.privacy_loss()[0] >= 1 > q.stopping_epsilon()


def test_zcdp_odometer_charges_pure_queries_as_the_renyi_odometer_does() -> None:
    pure = dp.make_user_measurement(INTS, SYM, dp.PureDP(), len, lambda d: Fraction(d), trusted=True)
    readings = []
    for measure in (dp.ZCDP(), dp.RenyiDP()):
        q = dp.make_odometer(INTS, SYM, measure, 1, delta=1e-6)(np.arange(3))
        for _ in range(3):
            q(pure)
        readings.append((q.privacy_loss(), q.stopping_epsilon()))
    assert readings[0] == readings[1]
    assert 3 < readings[0][0][0] < 3.07  # charged 3αε²/2 at every order it read 10.82


@pytest.mark.parametrize("measure", [dp.RenyiDP(), dp.ZCDP()])
def test_renyi_odometer_sums_and_readings_are_the_hand_computed_ones(measure: Any) -> None:
    rho = Fraction(1, 50)
    zcdp: Any = dp.make_user_measurement(INTS, SYM, dp.ZCDP(), len, lambda d: rho * d, trusted=True)
    quarter = Fraction(1, 4)
    pure: Any = dp.make_user_measurement(INTS, SYM, dp.PureDP(), len, lambda d: quarter * d, trusted=True)
    orders = tuple(Fraction(a) for a in (2, Fraction(5, 2), 8))
    q = dp.make_odometer(INTS, SYM, measure, 1, delta=DELTA, orders=orders)(np.arange(4))
    zero = renyi_odometer_epsilon(orders, [Fraction(0)] * 3, DELTA)
    assert q.privacy_loss() == (zero, DELTA) and [s.exact for s in q.spent().values()] == [0, 0, 0]
    q(zcdp)
    q(pure)
    q(zcdp)
    # αρ per zCDP query (Bun–Steinke 2016 Prop. 1.3), min(ε, αε²/2) per ε-DP query (Prop. 1.4)
    sums = [2 * a * rho + min(Fraction(1, 4), a * Fraction(1, 32)) for a in orders]
    assert list(q.spent()) == ["alpha=2", "alpha=2.5", "alpha=8"]
    assert [s.exact for s in q.spent().values()] == sums
    assert q.privacy_loss() == (renyi_odometer_epsilon(orders, sums, DELTA), DELTA)
    assert q.stopping_epsilon() == renyi_stopping_epsilon(orders, sums, DELTA)
    assert q.queries_charged == 3


def test_basic_odometer_totals_are_the_hand_computed_ones() -> None:
    step: Any = dp.make_user_measurement(
        INTS, SYM, dp.ApproxDP(), len, lambda d: (Fraction(1, 3) * d, Fraction(1, 10**7)), trusted=True
    )
    q = dp.make_odometer(INTS, SYM, dp.ApproxDP(), 1)(np.arange(4))
    assert q.privacy_loss() == (0, 0)
    q(step)
    q(step)
    assert q.privacy_loss() == (Fraction(2, 3), Fraction(2, 10**7))
    spent = {k: v.exact for k, v in q.spent().items()}
    assert spent == {"epsilon": Fraction(2, 3), "delta": Fraction(2, 10**7)}


@pytest.mark.parametrize("measure", [dp.RenyiDP(), dp.ApproxDP()])
def test_a_damaged_odometer_state_is_a_ledger_error_for_every_reader(measure: Any) -> None:
    ledger = dp.MemoryLedger()
    kw: dict[str, Any] = {"delta": DELTA, "orders": (2, 3)} if isinstance(measure, dp.RenyiDP) else {}
    q = dp.make_odometer(INTS, SYM, measure, 1, ledger=ledger, **kw)(np.arange(4))
    ledger.charge(lambda e: e.replace(state=(Fraction(1), Fraction(2), Fraction(3))))  # 3 sums: damaged
    readers = [q.spent, q.privacy_loss]
    if isinstance(measure, dp.RenyiDP):
        readers.append(q.stopping_epsilon)
    for read in readers:
        with pytest.raises(dp.LedgerError, match="ledger state has 3"):
            read()
    assert "ledger unusable" in str(q)


def test_stopping_epsilon_is_for_renyi_odometers_only() -> None:
    q = dp.make_odometer(INTS, SYM, dp.PureDP(), 1)(np.arange(3))
    with pytest.raises(dp.UnsupportedComposition, match="stopping_epsilon"):
        q.stopping_epsilon()


# --- sequential children per ledger ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["odometer", "filter"])
def test_two_queryables_on_one_memory_ledger_cannot_interleave_zcdp_children(kind: str) -> None:
    ledger = dp.MemoryLedger()
    if kind == "odometer":
        parent = dp.make_odometer(INTS, SYM, dp.ZCDP(), 1, ledger=ledger, delta=1e-6)
    else:
        parent = dp.make_privacy_filter(INTS, SYM, dp.ZCDP(), 1, 1.0, ledger=ledger)
    inner = dp.make_privacy_filter(INTS, SYM, dp.ZCDP(), 1, 0.25)
    q1, q2 = parent(np.arange(10)), parent(np.arange(10))
    first = q1(inner)
    second = q2(inner)
    count = dp.t.make_count(INTS, SYM)
    step = count >> dp.m.make_gaussian(count.output_domain, count.output_metric, 4.0)
    second(step)
    with pytest.raises(dp.SequentialityError, match="same ledger"):
        first(step)
    second(step)  # the latest child stays open


def test_a_renyi_accountant_on_an_sqlite_ledger_refuses_interactive_queries(tmp_path: Path) -> None:
    inner = dp.make_privacy_filter(INTS, SYM, dp.ZCDP(), 1, 0.25)
    for parent in (
        odometer(dp.ZCDP(), ledger=dp.SQLiteLedger(tmp_path / "o.db", "o")),
        dp.make_privacy_filter(INTS, SYM, dp.ZCDP(), 1, 1.0, ledger=dp.SQLiteLedger(tmp_path / "f.db", "f")),
    ):
        q = parent(np.arange(10))
        with pytest.raises(dp.UnsupportedComposition, match="interactive.*nothing was run or spent"):
            q(inner)
        assert q.queries_charged == 0
        q.ledger.close()
    # a query not flagged interactive that opens a queryable anyway: it is closed before it is returned
    sneaky = dp.make_user_measurement(
        INTS, SYM, dp.ZCDP(), inner.function, lambda d: Fraction(1, 4) * d, trusted=True
    )
    q = odometer(dp.ZCDP(), ledger=dp.SQLiteLedger(tmp_path / "s.db", "s"))(np.arange(10))
    child = q(sneaky)
    assert child.closed and q.queries_charged == 1
    q.ledger.close()
