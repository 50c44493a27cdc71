"""The online counter (binary mechanism): privacy map, answers in order, lazily read steps, RMSE."""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import dpcompose as dp
from dpcompose.errors import DomainMismatch, InvalidParameter
from dpcompose.measurements._counter import HonakerCounter, OnlineCounter, counter_levels
from exact_pairs import check_counter_moments, discrete_laplace_moments

L1 = dp.L1Distance()


def steps(length: int) -> dp.VectorDomain:
    return dp.VectorDomain(dp.AtomDomain(int), size=length)


@pytest.mark.parametrize("length", [1, 2, 3, 8, 9, 1000, 1024, 1025])
def test_privacy_map_is_levels_read_over_scale(length: int) -> None:
    """Raw: ⌊log₂T⌋ + 1 levels (the root only when T is a power of two: the full tree's ⌈log₂T⌉ + 1 then,
    one fewer otherwise); honaker: max(⌈log₂T⌉, 1), never the root of two or more leaves."""
    k = math.ceil(math.log2(length))
    raw = dp.m.make_online_counter(steps(length), L1, scale=4.0)
    honaker = dp.m.make_online_counter(steps(length), L1, scale=4.0, estimator="honaker")
    tree = dp.t.make_b_ary_tree(steps(length), L1)
    offline = tree >> dp.m.make_laplace(tree.output_domain, tree.output_metric, scale=4.0)
    power = length & (length - 1) == 0
    assert raw.map(1) == Fraction(k + 1 if power else k, 4)
    assert raw.map(3) == 3 * raw.map(1)
    assert honaker.map(1) == Fraction(max(k, 1), 4)
    assert honaker.map(3) == 3 * honaker.map(1)
    assert (raw.map(2) == offline.map(2)) if power else (raw.map(2) == offline.map(2) - Fraction(2, 4))
    # the same tree (and map) for both estimators unless T ≥ 2 is a power of two
    assert (
        (honaker.map(1) == raw.map(1) - Fraction(1, 4))
        if power and length > 1
        else (honaker.map(1) == raw.map(1))
    )


def test_answers_are_running_counts_plus_dyadic_noise() -> None:
    length = 11
    x = np.arange(1, length + 1)
    q = dp.m.make_online_counter(steps(length), L1, scale=1e-9)(x)  # (tiny scale: noise 0 w.p. ≈ 1)
    assert [q(t) for t in range(length)] == np.cumsum(x).tolist()


def test_asked_again_the_same_and_out_of_order_refused() -> None:
    q = dp.m.make_online_counter(steps(8), L1, scale=3.0, rng=np.random.default_rng(5))([1] * 8)
    first = [q(t) for t in range(4)]
    assert [q(t) for t in range(4)] == first
    with pytest.raises(InvalidParameter, match="in order"):
        q(5)
    with pytest.raises(InvalidParameter, match="in order"):
        q(-1)
    with pytest.raises(InvalidParameter, match="step index"):
        q("4")
    assert q(4) == q(4)


def test_an_answer_reads_only_the_steps_up_to_it() -> None:
    """Changing future steps leaves every earlier answer unchanged (same seed): the counter is online."""
    a = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3]
    b = [*a[:6], 100, 0, 7, 7]
    qa = dp.m.make_online_counter(steps(10), L1, scale=2.0, rng=np.random.default_rng(9))(a)
    qb = dp.m.make_online_counter(steps(10), L1, scale=2.0, rng=np.random.default_rng(9))(b)
    assert [qa(t) for t in range(6)] == [qb(t) for t in range(6)]


def test_rmse_at_1024() -> None:
    """ε = 1 (scale = 11 for 11 levels), seeded noise (a measurement, not a private release)."""
    length = 1024
    counter = dp.m.make_online_counter(steps(length), L1, scale=11.0, rng=np.random.default_rng(2026))
    assert counter.map(1) == 1
    x = np.random.default_rng(0).poisson(3, size=length)
    truth = np.cumsum(x)
    errs = []
    for _ in range(5):
        q = counter(x)
        errs.append(np.mean((np.array([q(t) for t in range(length)]) - truth) ** 2))
    assert 28 < math.sqrt(np.mean(errs)) < 42  # the raw binary mechanism: ≈ 35


def test_bad_inputs() -> None:
    with pytest.raises(DomainMismatch, match="input_metric"):
        dp.m.make_online_counter(steps(4), dp.SymmetricDistance(), scale=1.0)
    with pytest.raises(DomainMismatch, match="size=T"):
        dp.m.make_online_counter(dp.VectorDomain(dp.AtomDomain(int)), L1, scale=1.0)
    with pytest.raises(InvalidParameter, match="scale"):
        dp.m.make_online_counter(steps(4), L1, scale=-1.0)
    for bad in ("Honaker", "least_squares", "", None, 1, b"raw", ["raw"]):
        with pytest.raises(InvalidParameter, match="estimator="):
            dp.m.make_online_counter(steps(4), L1, scale=1.0, estimator=bad)  # type: ignore[arg-type]


# --- the honaker estimator (and the nodes each estimator reads) ----------------------------------------


def honaker_top(length: int) -> int:
    """H, the greatest height the honaker counter reads: k − 1 for T ≥ 2 (k = ⌈log₂T⌉), 0 for T = 1."""
    return max(math.ceil(math.log2(length)) - 1, 0) if length > 1 else 0


def complete_nodes(length: int, n: int) -> list[tuple[int, int]]:
    """Brute force: the dyadic intervals [a, b) of height ≤ H inside [0, n) (complete by step n − 1)."""
    top = honaker_top(length)
    return [(i << h, (i + 1) << h) for h in range(top + 1) for i in range(n >> h) if (i + 1) << h <= n]


def decomposition_heights(length: int, n: int) -> list[int]:
    """The heights of the maximal complete nodes tiling [0, n): n >> H nodes of height H, then bit h of n."""
    top = honaker_top(length)
    return [top] * (n >> top) + [h for h in range(top) if (n >> h) & 1]


class Recorder:
    """A noise function adding seeded integer offsets; records (step being answered, true sum, noisy)."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.step = -1
        self.draws: list[tuple[int, int, int]] = []

    def __call__(self, total: int) -> int:
        noisy = int(total) + int(self.rng.integers(-30, 31))
        self.draws.append((self.step, int(total), noisy))
        return noisy


def interval(total: int) -> tuple[int, int]:
    """[a, b) from the sum 2**b − 2**a of steps x_s = 2**s over it."""
    assert total > 0, "a node holding no step was read"
    a = (total & -total).bit_length() - 1
    b = total.bit_length()
    assert total == (1 << b) - (1 << a)
    return a, b


def run_recorded(estimator: str, length: int, seed: int) -> tuple[list[Any], Recorder]:
    noise = Recorder(seed)
    data = [1 << s for s in range(length)]  # every interval's sum is distinct: the sum names the node
    q = OnlineCounter(data, length, noise) if estimator == "raw" else HonakerCounter(data, length, noise)
    answers = []
    for t in range(length):
        noise.step = t
        answers.append(q(t))
    return answers, noise


@pytest.mark.parametrize("estimator", ["raw", "honaker"])
def test_nodes_read_brute_force(estimator: str) -> None:
    """Every node read is a dyadic interval complete when read, each read once; no step lies in more than L
    of them (L = the map's level count, attained) — the sensitivity d·L of the tree the counter reads."""
    for length in range(1, 41):
        _, noise = run_recorded(estimator, length, seed=length)
        read = [(step, interval(total)) for step, total, _ in noise.draws]
        spans = [span for _, span in read]
        assert len(set(spans)) == len(spans)
        for step, (a, b) in read:
            size = b - a
            assert size & (size - 1) == 0 and a % size == 0 and b <= step + 1
        depth = max(sum(a <= s < b for a, b in spans) for s in range(length))
        counter = dp.m.make_online_counter(steps(length), L1, scale=1.0, estimator=estimator)
        assert depth == counter_levels(length, estimator) == counter.map(1)
        if estimator == "honaker":  # every complete node of height ≤ H, drawn at the step it completes
            expected = {(node, node[1] - 1) for node in complete_nodes(length, length)}
            assert {((a, b), step) for step, (a, b) in read} == expected


def solve_exact(matrix: list[list[Fraction]], rhs: list[Fraction]) -> list[Fraction]:
    """Gauss–Jordan elimination in rationals (the matrix is invertible)."""
    size = len(rhs)
    rows = [[*row, value] for row, value in zip(matrix, rhs, strict=True)]
    for col in range(size):
        pivot = next(r for r in range(col, size) if rows[r][col] != 0)
        rows[col], rows[pivot] = rows[pivot], rows[col]
        lead = rows[col][col]
        rows[col] = [v / lead for v in rows[col]]
        for r in range(size):
            if r != col and rows[r][col] != 0:
                factor = rows[r][col]
                rows[r] = [v - factor * w for v, w in zip(rows[r], rows[col], strict=True)]
    return [row[-1] for row in rows]


def test_honaker_is_the_least_squares_estimate_from_the_complete_nodes() -> None:
    """T = 1 … 16, every step: the answer is the exact least-squares (equal variances: best linear unbiased)
    estimate of x_0 + … + x_t from all the noisy nodes complete by t, rounded once to a float."""
    for length in range(1, 17):
        answers, noise = run_recorded("honaker", length, seed=100 + length)
        noisy = {total: value for _, total, value in noise.draws}
        for t in range(length):
            nodes = tuple(complete_nodes(length, t + 1))
            y = [Fraction(noisy[(1 << b) - (1 << a)]) for a, b in nodes]
            estimate = sum(
                (w * v for w, v in zip(_least_squares_weights(nodes), y, strict=True)), Fraction(0)
            )
            assert isinstance(answers[t], float)
            assert answers[t] == float(estimate), (length, t)


@functools.cache
def _least_squares_weights(nodes: tuple[tuple[int, int], ...]) -> list[Fraction]:
    """w with 1ᵀ·G⁻¹·Dᵀ·y = w·y for the design D of ``nodes`` over steps 0 … t and G = DᵀD (symmetric), so
    w = D·G⁻¹·1: the exact least-squares estimate of x_0 + … + x_t is w·y, whatever the noisy values y.
    One exact solve per set of nodes (136 (T, t) cases share 19 sets), not one per case."""
    size = max(b for _, b in nodes)  # t + 1: the last node ends at t + 1
    design = [[Fraction(int(a <= s < b)) for s in range(size)] for a, b in nodes]
    gram = [[sum((row[i] * row[j] for row in design), Fraction(0)) for j in range(size)] for i in range(size)]
    g_inv_one = solve_exact(gram, [Fraction(1)] * size)
    return [sum((r * g for r, g in zip(row, g_inv_one, strict=True)), Fraction(0)) for row in design]


@pytest.mark.parametrize("length", [13, 8])
def test_honaker_unbiased_with_the_stated_variance(length: int) -> None:
    """Seeded simulation at N = 600 runs (the slow twin runs 3,000); tolerances derived at that N."""
    _check_honaker_unbiased(length, 600)


@pytest.mark.slow
@pytest.mark.parametrize("length", [13, 8])
def test_honaker_unbiased_with_the_stated_variance_thorough(length: int) -> None:
    _check_honaker_unbiased(length, 3000)


def _check_honaker_unbiased(length: int, runs: int) -> None:
    """Seeded simulation. Step t's error has mean 0 and variance σ²·Σ 2**h/(2**(h+1) − 1) over the heights of
    [0, t]'s pieces. Tolerances: 5 standard errors from that variance — √(v/N) for the mean and
    v·√(κ/N + 2/(N − 1)) for the sample variance, κ the discrete Laplace's excess kurtosis (a weighted sum
    of independent copies has excess kurtosis at most κ)."""
    counter = dp.m.make_online_counter(
        steps(length), L1, scale=2.0, estimator="honaker", rng=np.random.default_rng(77)
    )

    def variance(sigma2: float, t: int) -> float:
        return float(
            sigma2 * sum(Fraction(2**h, 2 ** (h + 1) - 1) for h in decomposition_heights(length, t + 1))
        )

    check_counter_moments(counter, 2.0, length, runs, variance)


def test_honaker_online_asked_again_and_refusals() -> None:
    """An answer at t is the same for any two streams that agree up to t (same seed); asking again gives
    the same float; an out-of-order ask is refused and runs nothing (the next answer is unchanged)."""
    length = 13
    a = np.random.default_rng(3).poisson(5, size=length).tolist()
    make = lambda: dp.m.make_online_counter(  # noqa: E731
        steps(length), L1, scale=2.0, estimator="honaker", rng=np.random.default_rng(21)
    )
    reference = make()(a)
    full = [reference(t) for t in range(length)]
    for t0 in range(length):
        b = [*a[: t0 + 1], *(np.random.default_rng(t0).integers(0, 1000, size=length - t0 - 1).tolist())]
        qb = make()(b)
        assert [qb(t) for t in range(t0 + 1)] == full[: t0 + 1]
    q = make()(a)
    first = [q(t) for t in range(4)]
    assert [q(t) for t in range(4)] == first and all(isinstance(v, float) for v in first)
    for bad in (5, -1, 13, "4", 4.0, True):
        with pytest.raises(InvalidParameter, match="query"):
            q(bad)
    assert [q(t) for t in range(4, length)] == full[4:]


def rmse_and_error(counter: Any, x: np.ndarray, runs: int) -> tuple[float, float]:
    truth = np.cumsum(x)
    per_run = []
    for _ in range(runs):
        q = counter(x)
        per_run.append(np.mean((np.array([q(t) for t in range(len(x))], dtype=np.float64) - truth) ** 2))
    return float(np.mean(per_run)), float(np.std(per_run, ddof=1) / math.sqrt(runs))


def test_honaker_rmse_at_1024() -> None:
    """ε = 1: scale 10 for its 10 levels (raw: 11). The mean squared error over all prefixes matches
    σ²·mean_t Σ v_h to within 5 standard errors of the runs' mean (≈ 24.1² expected, raw ≈ 34.8²)."""
    length, runs = 1024, 20
    counter = dp.m.make_online_counter(
        steps(length), L1, scale=10.0, estimator="honaker", rng=np.random.default_rng(2026)
    )
    assert counter.map(1) == 1
    sigma2, _ = discrete_laplace_moments(10.0)
    expected = sigma2 * float(
        sum(
            sum(Fraction(2**h, 2 ** (h + 1) - 1) for h in decomposition_heights(length, n))
            for n in range(1, length + 1)
        )
        / length
    )
    assert 23.5 < math.sqrt(expected) < 24.5
    mse, error = rmse_and_error(counter, np.random.default_rng(0).poisson(3, size=length), runs)
    assert abs(mse - expected) <= 5 * error
