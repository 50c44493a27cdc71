"""The matrix-factorisation online counter: exact factorisation and sensitivity, the noise variance of each
answer, answers in order, refusals that spend nothing, and composition as an interactive child."""

from __future__ import annotations

import functools
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

import dpcompose as dp
from dpcompose.errors import DomainMismatch, InvalidParameter
from dpcompose.measurements._matrix_counter import column_norm_bound, counter_grid, sqrt_factor_coefficients

L1 = dp.L1Distance()


def steps(length: int) -> dp.VectorDomain:
    return dp.VectorDomain(dp.AtomDomain(int), size=length)


@functools.lru_cache(maxsize=8)
def exact_square_norm(length: int) -> Fraction:
    """Σ_{k<T} (binom(2k, k)/4**k)², from the binomials themselves (not the library's recurrence)."""
    return Fraction(
        sum(math.comb(2 * k, k) ** 2 * 16 ** (length - 1 - k) for k in range(length)), 16 ** (length - 1)
    )


def test_coefficients_square_to_the_prefix_sum_matrix() -> None:
    f = sqrt_factor_coefficients(40)
    assert all(f[k] == Fraction(math.comb(2 * k, k), 4**k) for k in range(40))
    # B·C = A: the Toeplitz product's diagonal k is Σ_{j ≤ k} f_j·f_{k−j}, which must be exactly 1
    assert all(sum(f[j] * f[k - j] for j in range(k + 1)) == 1 for k in range(40))


@pytest.mark.parametrize("length", [1, 2, 3, 17, 1024])
def test_column_norm_bound_is_the_exact_norm_rounded_up(length: int) -> None:
    s2 = exact_square_norm(length)
    bound = column_norm_bound(length)
    assert bound * bound >= s2  # an upper bound on S …
    below = bound - Fraction(1, 2**64)
    assert below < 0 or below * below < s2  # … the least multiple of 2**-64 above it


@pytest.mark.parametrize("length", [1, 8, 1024])
@pytest.mark.parametrize("scale", [4.0, 1.0 / 3.0, 25.5, 1e6])
def test_privacy_map_bounds_the_gaussian_on_the_column_norm(length: int, scale: float) -> None:
    counter = dp.m.make_matrix_counter(steps(length), L1, scale=scale)
    sigma = Fraction(scale)
    grid = counter_grid(sigma)
    used = grid.units * grid.width  # σ' ≥ σ, the noise actually drawn
    s2 = exact_square_norm(length)
    for d in (1, 3):
        rho = counter.map(d)
        assert rho >= d * d * s2 / (2 * used * used)  # never below the exact Gaussian ρ at σ'
        assert rho <= d * d * s2 / (2 * sigma * sigma) * Fraction(10001, 10000)  # within 1e-4 of it at σ
    assert counter.map(0) == 0
    assert counter.map(2) > counter.map(1)


def test_privacy_map_never_rises_with_the_scale() -> None:
    """Across the powers of two, where the grid coarsens, ρ(σ) is non-increasing (searches rely on it)."""
    scales = [2.0**j * m for j in (1, 2, 20) for m in (0.999999, 1.0, 1.000001, 1.5)]
    rhos = [dp.m.make_matrix_counter(steps(64), L1, scale=s).map(1) for s in sorted(scales)]
    assert all(a >= b for a, b in itertools.pairwise(rhos))


def test_extreme_items_are_clamped_and_exact() -> None:
    """Items at the clamp bound ±⌊2**62/T⌋ (and beyond, clamped) give exact running counts of the clamped
    stream: the offset added for constant-size arithmetic is removed exactly."""
    bound = (1 << 62) // 5
    x = [bound, -bound, 10**30, -(10**30), 7]
    q = dp.m.make_matrix_counter(steps(5), L1, scale=1e-3)(x)
    clamped = np.cumsum([bound, -bound, bound, -bound, 7]).astype(float)
    got = np.array([q(t) for t in range(5)])
    assert np.all(np.abs(got - clamped) <= 1e-9 * bound + 0.1)


def test_variance_of_each_answer_is_sigma_squared_times_the_partial_square_sum() -> None:
    """On the zero stream the answer is exactly g·(B·z)_t: its variance is σ'²·Σ_{k ≤ t} f_k²."""
    length, scale, runs = 16, 3.0, 800  # σ = 3 has 2 significant bits: σ' = σ exactly
    counter = dp.m.make_matrix_counter(steps(length), L1, scale=scale, rng=np.random.default_rng(36))
    zeros = [0] * length
    answers = np.array([[q(t) for t in range(length)] for q in (counter(zeros) for _ in range(runs))])
    f2 = np.cumsum([float(f * f) for f in sqrt_factor_coefficients(length)])
    for t in (0, 3, 15):
        expected = scale**2 * f2[t]
        # the sample variance of 800 Gaussians has relative sd √(2/800) = 5%: 0.3 is 6 sd
        assert abs(np.var(answers[:, t]) / expected - 1) < 0.3, t
        assert abs(np.mean(answers[:, t])) < 6 * math.sqrt(expected / runs)


def test_answers_are_running_counts_plus_noise() -> None:
    x = [3, 0, 7, 1, 1, 4, 0, 0, 2, 9, 5]
    q = dp.m.make_matrix_counter(steps(len(x)), L1, scale=1e-9)(x)  # noise ~1e-9
    assert np.allclose([q(t) for t in range(len(x))], np.cumsum(x), atol=1e-6)


def test_an_answer_reads_only_the_steps_up_to_it_and_repeats() -> None:
    a = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3]
    b = [*a[:6], 100, 0, 7, 7]
    qa = dp.m.make_matrix_counter(steps(10), L1, scale=2.0, rng=np.random.default_rng(9))(a)
    qb = dp.m.make_matrix_counter(steps(10), L1, scale=2.0, rng=np.random.default_rng(9))(b)
    first = [qa(t) for t in range(6)]
    assert first == [qb(t) for t in range(6)]
    assert [qa(t) for t in range(6)] == first  # asked again: the same release
    assert all(type(v) is float for v in first)


def test_refused_steps_run_nothing_and_change_nothing() -> None:
    q = dp.m.make_matrix_counter(steps(4), L1, scale=3.0, rng=np.random.default_rng(5))([1, 2, 3, 4])
    first = q(0)
    for bad, match in (
        (2, "in order"),
        (-1, "in order"),
        ("1", "step index"),
        (True, "step index"),
        (1.0, "step index"),
    ):
        with pytest.raises(InvalidParameter, match=match):
            q(bad)
    assert q.queries_answered == 1
    assert [q(t) for t in range(4)][:1] == [first]
    with pytest.raises(InvalidParameter, match=r"0 … 3"):
        q(4)  # past T


def test_refused_step_spends_nothing_in_a_filter() -> None:
    counter = dp.m.make_matrix_counter(steps(4), L1, scale=4.0)
    rho = counter.map(1)
    budget = dp.make_privacy_filter(steps(4), L1, dp.ZCDP(), d_in=1, d_out=2 * float(rho) * 1.001)
    q = budget([1, 0, 2, 1])
    child = q(counter)
    spent = q.spent()
    assert spent["rho"] > 0
    with pytest.raises(InvalidParameter):
        child(3)  # out of order
    with pytest.raises(InvalidParameter):
        child(9)  # past T
    with pytest.raises(InvalidParameter):
        child(1.5)  # not a step
    assert q.spent() == spent
    q(counter)  # the second counter still fits: the refusals charged nothing
    with pytest.raises(dp.BudgetExceeded):
        q(counter)


def test_bad_construction_and_bad_data() -> None:
    with pytest.raises(DomainMismatch, match="input_metric"):
        dp.m.make_matrix_counter(steps(4), dp.SymmetricDistance(), scale=1.0)
    with pytest.raises(DomainMismatch, match="size=T"):
        dp.m.make_matrix_counter(dp.VectorDomain(dp.AtomDomain(int)), L1, scale=1.0)
    with pytest.raises(InvalidParameter, match="scale"):
        dp.m.make_matrix_counter(steps(4), L1, scale=-1.0)
    with pytest.raises(InvalidParameter, match="scale"):
        dp.m.make_matrix_counter(steps(4), L1, scale=float("inf"))
    with pytest.raises(InvalidParameter, match="2\\*\\*16"):
        dp.m.make_matrix_counter(steps(2**16 + 1), L1, scale=1.0)
    counter = dp.m.make_matrix_counter(steps(3), L1, scale=1.0)
    with pytest.raises(DomainMismatch):
        counter([1, 2])  # an item missing: refused before a queryable exists
    with pytest.raises(DomainMismatch):
        counter([1, 2.5, 3])  # an item outside the integer domain


def test_concurrent_and_sequential_children() -> None:
    counter = dp.m.make_matrix_counter(steps(6), L1, scale=5.0, rng=np.random.default_rng(1))
    rho = float(counter.map(1)) * 1.001
    x = [2, 0, 1, 3, 0, 1]
    comp = dp.make_adaptive_concurrent(steps(6), L1, dp.ZCDP(), 1, [rho, rho])
    q = comp(x)
    a, b = q(counter), q(counter)
    interleaved = [(a(t), b(t)) for t in range(6)]  # concurrent children answer in any interleaving
    assert len(interleaved) == 6
    seq = dp.make_adaptive_sequential(steps(6), L1, dp.ZCDP(), 1, [rho, rho])(x)
    first = seq(counter)
    first(0)
    seq(counter)(0)
    with pytest.raises(dp.SequentialityError):
        first(1)


def test_approx_dp_by_the_cks_cast() -> None:
    counter = dp.m.make_matrix_counter(steps(64), L1, scale=8.0)
    eps, delta = dp.make_zcdp_to_approx(counter, 1e-6).map(1)
    assert delta == Fraction(1, 10**6)
    rho = counter.map(1)
    assert eps >= rho  # CKS Prop. 12 never reports below ρ itself


@pytest.mark.slow
def test_approx_dp_by_the_discrete_gaussian_pair() -> None:
    counter = dp.m.make_matrix_counter(steps(64), L1, scale=8.0)
    eps_cks, _ = dp.make_zcdp_to_approx(counter, 1e-6).map(1)
    eps_pld, delta = dp.make_fix_delta(dp.make_zcdp_to_profile(counter), 1e-6).map(1)
    assert delta == Fraction(1, 10**6)
    assert eps_pld <= eps_cks


@pytest.mark.slow
def test_rmse_at_1024_matches_the_formula() -> None:
    length, scale, runs = 1024, 4.0, 40
    counter = dp.m.make_matrix_counter(steps(length), L1, scale=scale, rng=np.random.default_rng(2026))
    x = np.random.default_rng(0).poisson(3, size=length)
    truth = np.cumsum(x)
    mse = np.mean(
        [
            np.mean((np.array([q(t) for t in range(length)]) - truth) ** 2)
            for q in (counter(x) for _ in range(runs))
        ]
    )
    expected = scale**2 * np.mean(np.cumsum([float(f * f) for f in sqrt_factor_coefficients(length)]))
    assert abs(mse / expected - 1) < 0.25


def test_the_smallest_scale_releases_the_largest_items_and_a_smaller_one_is_refused() -> None:
    """At 2**-900 the largest clamped items still convert to floats exactly enough (never an exception on data
    inside the domain); below it the counter is refused at construction, before anything runs."""
    steps = dp.VectorDomain(dp.AtomDomain(int), size=2)
    counter = dp.m.make_matrix_counter(steps, dp.L1Distance(), scale=2.0**-900)
    q = counter([2**70, -(2**70)])
    top = float(2**61)  # the clamp ±⌊2**62/T⌋ at T = 2
    assert q(0) == pytest.approx(top, rel=1e-12)
    assert abs(q(1)) <= 1e-250
    with pytest.raises(InvalidParameter, match="below 2\\*\\*-900"):
        dp.m.make_matrix_counter(steps, dp.L1Distance(), scale=2.0**-950)
