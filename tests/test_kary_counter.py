"""The online counter's ``estimator="kary"`` (the k-ary tree with negative digits): the privacy map against
a brute-force count of the nodes each step enters, the exact variance, unbiasedness, online-ness, refusals."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import dpcompose as dp
from dpcompose.errors import DomainMismatch, InvalidParameter
from dpcompose.measurements._counter import KaryCounter
from dpcompose.measurements._kary_counter import (
    balanced_digits,
    best_branching,
    kary_levels,
    kary_pieces,
    kary_weight,
    kary_weight_sum,
)
from exact_pairs import check_counter_moments, discrete_laplace_moments

L1 = dp.L1Distance()


def steps(length: int) -> dp.VectorDomain:
    return dp.VectorDomain(dp.AtomDomain(int), size=length)


def span(level: int, index: int, k: int) -> range:
    """The leaves node (level, index) of the k-ary tree sums."""
    return range(index * k**level, (index + 1) * k**level)


class Recorder:
    """A noise function adding seeded integer offsets and recording each draw's input and output."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.draws: list[tuple[int, int]] = []

    def __call__(self, total: int) -> int:
        noisy = int(total) + int(self.rng.integers(-30, 31))
        self.draws.append((int(total), noisy))
        return noisy


def test_digits_and_pieces_tile_every_prefix() -> None:
    """Brute force over every leaf s of the padded tree: Σ_v c_{n,v}·1[s ∈ v] = 1[s < n], for k = 3 … 21
    and n = 1 … 400; the digits are balanced and spell n; the nodes are distinct and inside the tree."""
    for k in range(3, 22, 2):
        h = (k - 1) // 2
        for n in range(1, 401):
            digits = balanced_digits(n, k)
            assert sum(d * k**i for i, d in enumerate(digits)) == n and all(abs(d) <= h for d in digits)
            pieces = kary_pieces(n, k)
            assert len({(lv, j) for lv, j, _ in pieces}) == len(pieces)
            levels = kary_levels(n, k)
            assert len(digits) <= levels
            cover = [0] * k**levels
            for level, index, sign in pieces:
                assert level < levels and index >= 0 and (index + 1) * k**level <= k**levels
                assert index % k != h  # the middle child: never used
                for s in span(level, index, k):
                    cover[s] += sign
            assert cover == [1] * n + [0] * (k**levels - n), (k, n)


def test_privacy_map_is_the_brute_force_sensitivity() -> None:
    """For every T = 1 … 40 and every odd k from 3 to 2T + 3 (past 2T + 1 every k is one level, the same
    tree): run the counter over all steps with recorded noises; the nodes drawn are exactly the union of the
    prefixes' pieces, each drawn once; every answer is the running count plus Σ c_{n,v}·z_v; and the map is
    d·Δ/scale with Δ the most drawn nodes any step lies in (coefficient 1 each in the tree's sums) — found by
    enumerating every step — which is L."""
    for length in range(1, 41):
        x = np.random.default_rng(length).integers(-5, 20, size=length).tolist()
        truth = np.cumsum(x).tolist()
        for k in range(3, 2 * length + 4, 2):
            noise = Recorder(1000 * length + k)
            q = KaryCounter(x, length, noise, k)
            answers = [q(t) for t in range(length)]
            drawn = q.drawn
            assert len(noise.draws) == len(drawn) and all(total == 0 for total, _ in noise.draws)
            z = {node: noisy for node, (_, noisy) in zip(drawn, noise.draws, strict=True)}
            union = {(lv, j) for n in range(1, length + 1) for lv, j, _ in kary_pieces(n, k)}
            assert set(drawn) == union
            for t in range(length):
                assert answers[t] == truth[t] + sum(c * z[lv, j] for lv, j, c in kary_pieces(t + 1, k))
            levels = kary_levels(length, k)
            depth = [0] * k**levels
            for level, index in drawn:
                for s in span(level, index, k):
                    depth[s] += 1
            delta = max(depth[:length])
            assert max(depth) == delta  # no padded leaf lies deeper than a real step
            assert delta == levels
            if k > 2 * length + 1:  # the same one-level tree as 2T + 1: refused by the constructor
                with pytest.raises(InvalidParameter, match=r"branching=\d+ is beyond 2T \+ 1"):
                    dp.m.make_online_counter(steps(length), L1, scale=3.0, estimator="kary", branching=k)
                continue
            counter = dp.m.make_online_counter(steps(length), L1, scale=3.0, estimator="kary", branching=k)
            assert counter.map(1) == Fraction(delta, 3)
            assert counter.map(5) == Fraction(5 * delta, 3)


@pytest.mark.parametrize("length", [1, 2, 4, 5, 12, 13, 14, 40, 1000, 1024, 16384, 1 << 24])
def test_levels_closed_form(length: int) -> None:
    """L is the least L ≥ 1 with (k**L − 1)/2 ≥ T, and the map is d·L/scale (the default k included)."""
    for k in (3, 5, 7, 13, 19, 33, 99):
        levels = kary_levels(length, k)
        assert (k**levels - 1) // 2 >= length and (levels == 1 or (k ** (levels - 1) - 1) // 2 < length)
    k = best_branching(length)
    counter = dp.m.make_online_counter(steps(length), L1, scale=2.0, estimator="kary")
    assert counter.map(1) == Fraction(kary_levels(length, k), 2)


def test_variance_weights_match_the_coefficients() -> None:
    """w(n) (closed-form digits) is Σ c² over the brute-force pieces; the O(L) sum over prefixes is the sum
    of w; and the default k is the least L²·Σw over every odd k (checked exhaustively for T ≤ 300)."""
    for k in range(3, 30, 2):
        for n in range(700):
            assert kary_weight(n, k) == sum(c * c for _, _, c in kary_pieces(n, k)), (k, n)
        running = 0
        for length in range(1, 400):
            running += kary_weight(length, k)
            assert kary_weight_sum(length, k) == running, (k, length)
    for length in range(1, 301):
        every = range(3, 2 * length + 4, 2)
        best = min(every, key=lambda k: (kary_levels(length, k) ** 2 * kary_weight_sum(length, k), k))
        assert best_branching(length) == best, length
    assert (best_branching(1024), best_branching(1 << 14), best_branching(1 << 24)) == (13, 33, 19)


@pytest.mark.parametrize(("length", "k"), [(13, 3), (13, 5), (30, 7)])
def test_unbiased_with_the_stated_variance(length: int, k: int) -> None:
    """Seeded simulation, 600 runs. Step t's error has mean 0 and variance σ²·w(t + 1). Tolerances: 5
    standard errors — √(v/N) for the mean, v·√(κ/N + 2/(N − 1)) for the sample variance (κ the discrete
    Laplace's excess kurtosis; a ±1 sum of independent copies has excess kurtosis at most κ)."""
    counter = dp.m.make_online_counter(
        steps(length), L1, scale=2.0, estimator="kary", branching=k, rng=np.random.default_rng(77)
    )
    check_counter_moments(counter, 2.0, length, 600, lambda sigma2, t: sigma2 * kary_weight(t + 1, k))


def test_online_asked_again_and_out_of_order_refused() -> None:
    """An answer at t is the same for any two streams that agree up to t (same seed), whatever the later
    steps; asking again gives the same int; an out-of-order ask is refused and runs nothing."""
    length = 20
    a = np.random.default_rng(3).poisson(5, size=length).tolist()
    for k in (3, 5, 7, 41):
        make = lambda k=k: dp.m.make_online_counter(  # noqa: E731
            steps(length), L1, scale=2.0, estimator="kary", branching=k, rng=np.random.default_rng(21)
        )
        reference = make()(a)
        full = [reference(t) for t in range(length)]
        for t0 in range(length):
            later = np.random.default_rng(t0).integers(-1000, 1000, size=length - t0 - 1).tolist()
            qb = make()([*a[: t0 + 1], *later])
            assert [qb(t) for t in range(t0 + 1)] == full[: t0 + 1], (k, t0)
        q = make()(a)
        first = [q(t) for t in range(4)]
        assert [q(t) for t in range(4)] == first and all(type(v) is int for v in first)
        for bad in (5, -1, 20, "4", 4.0, True):
            with pytest.raises(InvalidParameter, match="query"):
                q(bad)
        assert [q(t) for t in range(4, length)] == full[4:]


def test_tiny_scale_gives_the_running_counts() -> None:
    x = list(range(1, 12))
    q = dp.m.make_online_counter(steps(11), L1, scale=1e-9, estimator="kary", branching=3)(x)
    assert [q(t) for t in range(11)] == np.cumsum(x).tolist()


def test_refusals() -> None:
    """A bad branching (for "kary": not an odd int ≥ 3; for the binary estimators: anything but None or 2),
    a stream item outside the domain: a DPError naming the parameter; in a filter, nothing spent."""
    for bad in (1, 2, 4, 0, -3, 3.0, "3", True, Fraction(3), np.float64(5), [3]):
        with pytest.raises(InvalidParameter, match="branching="):
            dp.m.make_online_counter(steps(4), L1, scale=1.0, estimator="kary", branching=bad)  # type: ignore[arg-type]
    for estimator in ("raw", "honaker"):
        for bad in (3, 5, 4, 1, True, "2", 2.0):
            with pytest.raises(InvalidParameter, match="branching="):
                dp.m.make_online_counter(steps(4), L1, scale=1.0, estimator=estimator, branching=bad)  # type: ignore[arg-type]
        assert dp.m.make_online_counter(steps(4), L1, scale=1.0, estimator=estimator, branching=2).map(1) == (
            dp.m.make_online_counter(steps(4), L1, scale=1.0, estimator=estimator).map(1)
        )
    counter = dp.m.make_online_counter(steps(4), L1, scale=2.0, estimator="kary", branching=np.int64(3))
    assert counter.map(1) == 1  # (3**2 − 1)/2 = 4 ≥ 4: two levels
    for bad_data in ([1, 2, "a", 0], [1, 2, 3], [1.5, 0, 0, 0], [1, None, 0, 0]):
        with pytest.raises(DomainMismatch, match="data=|data has"):
            counter(bad_data)
    budget = dp.make_privacy_filter(steps(4), L1, dp.PureDP(), d_in=1, d_out=2.0)
    q = budget([1, 0, 2, 1])
    child = q(counter)
    spent = q.spent()
    for bad in (3, 9, 1.5):
        with pytest.raises(InvalidParameter):
            child(bad)
    assert q.spent() == spent
    q(counter)  # the second counter still fits: the refusals charged nothing
    with pytest.raises(dp.BudgetExceeded):
        q(counter)


def test_rmse_at_1024() -> None:
    """ε = 1 with the default k = 13 (L = 3, scale 3): the mean squared error over all prefixes matches
    σ²·mean_n w(n) to within 5 standard errors of 20 seeded runs (≈ 13.0² expected; honaker ≈ 24.1²)."""
    length, runs = 1024, 20
    counter = dp.m.make_online_counter(
        steps(length), L1, scale=3.0, estimator="kary", rng=np.random.default_rng(2026)
    )
    assert counter.map(1) == 1
    sigma2, _ = discrete_laplace_moments(3.0)
    expected = sigma2 * kary_weight_sum(length, 13) / length
    assert 12.9 < math.sqrt(expected) < 13.1
    x = np.random.default_rng(0).poisson(3, size=length)
    truth = np.cumsum(x)
    per_run = []
    for _ in range(runs):
        q = counter(x)
        per_run.append(np.mean((np.array([q(t) for t in range(length)], dtype=np.float64) - truth) ** 2))
    error = float(np.std(per_run, ddof=1) / math.sqrt(runs))
    assert abs(float(np.mean(per_run)) - expected) <= 5 * error


def test_the_internal_helpers_refuse_a_branching_without_balanced_digits() -> None:
    """Found by review: kary_levels(T, 2) and balanced_digits(n, 1) looped forever."""
    for k in (-1, 0, 1, 2, 4):
        with pytest.raises(InvalidParameter, match="branching"):
            kary_levels(10, k)
        with pytest.raises(InvalidParameter, match="branching"):
            balanced_digits(7, k)
