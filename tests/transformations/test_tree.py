"""The binary tree of dyadic sums: node sums, exact sensitivities against brute force, the consistent
least-squares post-processing against a generic least-squares solver, and the running counts' RMSE."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpcompose as dp
from dpcompose.errors import DomainMismatch, InvalidParameter
from dpcompose.transformations._tree import clamp_bound, clamped_steps, tree_shape

L1 = dp.L1Distance()
L2 = dp.L2Distance()


def steps(length: int) -> dp.VectorDomain:
    return dp.VectorDomain(dp.AtomDomain(int), size=length)


def tree_matrix(length: int, b: int = 2) -> np.ndarray:
    """The 0/1 node-by-step matrix, built from the definition (node ⊇ step), in heap order."""
    padded, levels = tree_shape(length, b)
    rows = []
    for j in range(levels):
        size = padded // b**j
        for i in range(b**j):
            rows.append([1 if i * size <= t < (i + 1) * size else 0 for t in range(length)])
    return np.array(rows, dtype=np.int64)


@pytest.mark.parametrize("b", [2, 3, 4, 7])
@pytest.mark.parametrize("length", [1, 2, 3, 5, 8, 13, 64, 100])
def test_node_sums_match_the_definition(length: int, b: int) -> None:
    rng = np.random.default_rng(length)
    x = rng.integers(-50, 50, size=length)
    tree = dp.t.make_b_ary_tree(steps(length), L1, branching=b)
    assert tree(x).tolist() == (tree_matrix(length, b) @ x).tolist()
    assert tree(x.tolist()).tolist() == (tree_matrix(length, b) @ x).tolist()
    assert tree.output_domain.size == tree_matrix(length, b).shape[0]


@pytest.mark.parametrize("length", [1, 2, 3, 4, 5, 7, 9, 16, 17, 1024, 1025])
def test_levels_are_ceil_log2_plus_one(length: int) -> None:
    levels = math.ceil(math.log2(length)) + 1
    assert dp.t.make_b_ary_tree(steps(length), L1).map(1) == levels
    l2 = dp.t.make_b_ary_tree(steps(length), L1, metric=L2).map(1)
    assert l2 > 0 and l2 * l2 >= levels and l2 - Fraction(math.isqrt(levels << 128), 1 << 64) < 2**-60


@settings(max_examples=60, deadline=None)
@given(length=st.integers(1, 40), b=st.integers(2, 6), data=st.data())
def test_sensitivity_is_the_brute_force_maximum(length: int, b: int, data: st.DataObject) -> None:
    """Over one-step changes of size ≤ d (the L1 neighbours that attain the max), the observed output
    distance never exceeds the map and equals it (exact sensitivity)."""
    d = data.draw(st.integers(1, 5))
    x = np.array(data.draw(st.lists(st.integers(-100, 100), min_size=length, max_size=length)))
    t1 = dp.t.make_b_ary_tree(steps(length), L1, branching=b)
    t2 = dp.t.make_b_ary_tree(steps(length), L1, branching=b, metric=L2)
    base1, best1, best2 = t1(x), 0, 0
    for step in range(length):
        for delta in (-d, d):
            y = x.copy()
            y[step] += delta
            diff = t1(y) - base1
            best1 = max(best1, int(np.abs(diff).sum()))
            best2 = max(best2, int((diff * diff).sum()))
    assert best1 == t1.map(d)
    assert best2 == d * d * tree_shape(length, b)[1]
    assert t2.map(d) ** 2 >= best2 and t2.map(d) ** 2 - best2 < Fraction(1, 2**50)
    # a split change (L1 mass spread over several steps) never exceeds the map either
    split = data.draw(st.lists(st.integers(-d, d), min_size=length, max_size=length))
    while sum(abs(v) for v in split) > d:
        split[split.index(max(split, key=abs))] -= int(np.sign(max(split, key=abs)))
    diff = t1(x + np.array(split)) - base1
    assert int(np.abs(diff).sum()) <= t1.map(d)
    assert int((diff * diff).sum()) <= t2.map(d) ** 2


def test_huge_values_are_clamped_and_stay_inside_the_domain() -> None:
    """Steps are clamped to ±2**62/P (here P = 4): every node sum fits int64, and the sensitivity holds."""
    tree = dp.t.make_b_ary_tree(steps(3), L1)
    out = tree([2**70, -(2**70), 5])
    assert out.dtype == np.int64
    assert out.tolist() == [5, 0, 5, 2**60, -(2**60), 5, 0]
    big = tree([2**62, 2**62, 2**62])
    assert big.tolist() == [3 * 2**60, 2**61, 2**60, 2**60, 2**60, 2**60, 0]
    moved = tree([2**62, 2**62, 2**62 + 1]) - big  # a change of 1 beyond the clamp moves nothing
    assert not moved.any()


class _NoPythonLoop(np.ndarray):
    """An array that refuses to be walked value by value (the clamp must be numpy's, whole-array)."""

    def tolist(self) -> list[int]:  # type: ignore[override]
        raise AssertionError("clamped in a Python loop")

    def __iter__(self) -> object:  # type: ignore[override]
        raise AssertionError("clamped in a Python loop")


def _clamp_by_hand(values: list[int], padded: int) -> list[int]:
    bound = clamp_bound(padded)
    return [min(max(int(v), -bound), bound) for v in values]


def test_clamp_is_vectorised_and_bit_identical_to_the_clamp_of_each_int() -> None:
    big = [2**70, -(2**70), 2**62, -(2**62) - 1, 2**63 - 1, -(2**63), 0, 5, -5]
    for padded in (1, 4, 1 << 24):
        bound = clamp_bound(padded)
        cases: list[object] = [
            big,  # beyond int64: read one Python int at a time
            [2**63, 2**64 - 1, 3],  # uint64 exactly
            [bound - 1, bound, bound + 1, -bound - 1, -bound, 7, 0],
            np.array([2**63 - 1, -(2**63), bound + 1, -bound, 1], dtype=np.int64),
            np.array([2**64 - 1, bound, 0], dtype=np.uint64),
            np.array([-128, 127, 3], dtype=np.int8),
            (1, -2, 3),
        ]
        for data in cases:
            plain = data.tolist() if isinstance(data, np.ndarray) else list(data)  # type: ignore[call-overload]
            out = clamped_steps(data, padded)
            assert out.dtype == np.int64 and out.tolist() == _clamp_by_hand(plain, padded), (padded, data)
    walked = np.array([2**62, -(2**62), 9], dtype=np.int64).view(_NoPythonLoop)
    assert clamped_steps(walked, 4).tolist() == [2**60, -(2**60), 9]


@pytest.mark.parametrize("b", [2, 3, 4])
@pytest.mark.parametrize("length", [1, 2, 3, 8, 11, 32])
def test_consistency_is_the_least_squares_estimate(length: int, b: int) -> None:
    """Hay et al.'s two passes equal the generic least-squares fit of the leaves to every noisy node."""
    padded, _ = tree_shape(length, b)
    matrix = tree_matrix(padded, b).astype(float)
    noisy = np.random.default_rng(7).normal(0, 5, size=matrix.shape[0])
    leaves, *_ = np.linalg.lstsq(matrix, noisy, rcond=None)
    got = dp.t.tree_running_counts(noisy, length, branching=b)
    np.testing.assert_allclose(got, np.cumsum(leaves)[:length], atol=1e-9)


def test_raw_prefix_sums_use_the_dyadic_decomposition() -> None:
    length = 11
    x = np.arange(1, length + 1)
    exact = dp.t.make_b_ary_tree(steps(length), L1)(x)
    assert dp.t.tree_running_counts(exact, length, consistent=False).tolist() == np.cumsum(x).tolist()
    assert np.allclose(dp.t.tree_running_counts(exact, length), np.cumsum(x))
    # padded to 16 leaves; level 3 holds the size-2 nodes, node 2 of it is [4, 6) at heap position 7 + 2:
    # only the prefixes [0, 6) = [0,4)+[4,6) and [0, 7) = [0,4)+[4,6)+[6,7) go through it
    bumped = exact.astype(float)
    bumped[(1 << 3) - 1 + 2] += 100.0
    moved = dp.t.tree_running_counts(bumped, length, consistent=False) - np.cumsum(x)
    assert np.flatnonzero(moved).tolist() == [5, 6]


@pytest.mark.parametrize("b", [3, 4, 5])
def test_raw_prefix_sums_are_exact_without_noise(b: int) -> None:
    for length in (1, 2, 7, 26, 30):
        x = np.arange(length) % 5 + 1
        exact = dp.t.make_b_ary_tree(steps(length), L1, branching=b)(x)
        assert (
            dp.t.tree_running_counts(exact, length, branching=b, consistent=False).tolist()
            == np.cumsum(x).tolist()
        )
        assert np.allclose(dp.t.tree_running_counts(exact, length, branching=b), np.cumsum(x))


def rmse_at_epsilon_one(length: int, trials: int, seed: int, b: int = 2) -> tuple[float, float]:
    """RMSE of all running counts, raw and consistent, with Laplace noise at ε = 1 (seeded `rng`: a
    measurement of accuracy, not a private release)."""
    tree = dp.t.make_b_ary_tree(steps(length), L1, branching=b)
    rng = np.random.default_rng(seed)
    counts = rng.poisson(3, size=length)
    truth = np.cumsum(counts)
    levels = tree_shape(length, b)[1]
    noisy = tree >> dp.m.make_laplace(tree.output_domain, tree.output_metric, scale=float(levels), rng=rng)
    assert noisy.map(1) == 1
    raw, consistent = [], []
    for _ in range(trials):
        release = noisy(counts)
        raw.append(
            np.mean((dp.t.tree_running_counts(release, length, branching=b, consistent=False) - truth) ** 2)
        )
        consistent.append(np.mean((dp.t.tree_running_counts(release, length, branching=b) - truth) ** 2))
    return float(np.sqrt(np.mean(raw))), float(np.sqrt(np.mean(consistent)))


def test_rmse_at_1024_before_and_after_consistency() -> None:
    """Issue 36: 35–39 without consistency; OpenDP's consistent tree 14.5–15.2 (same T, ε)."""
    raw, consistent = rmse_at_epsilon_one(1024, trials=20, seed=2026)
    assert 32 < raw < 40
    assert consistent < 19 and consistent < raw / 1.8  # binary: consistency halves the error
    raw4, consistent4 = rmse_at_epsilon_one(1024, trials=20, seed=2026, b=4)
    assert raw4 < 24
    assert consistent4 < 14.5  # below OpenDP's consistent tree


def test_bad_inputs() -> None:
    with pytest.raises(DomainMismatch, match="input_metric"):
        dp.t.make_b_ary_tree(steps(4), dp.SymmetricDistance())
    with pytest.raises(DomainMismatch, match="size=T"):
        dp.t.make_b_ary_tree(dp.VectorDomain(dp.AtomDomain(int)), L1)
    with pytest.raises(DomainMismatch, match="size=T"):
        dp.t.make_b_ary_tree(dp.VectorDomain(dp.AtomDomain(float), size=4), L1)
    with pytest.raises(InvalidParameter, match="metric"):
        dp.t.make_b_ary_tree(steps(4), L1, metric=dp.LInfDistance())
    with pytest.raises(InvalidParameter, match="release"):
        dp.t.tree_running_counts([1, 2, 3], 4)
    with pytest.raises(InvalidParameter, match="release"):
        dp.t.tree_running_counts([1, 2, float("nan")], 2)
    with pytest.raises(InvalidParameter, match="length"):
        dp.t.tree_running_counts([1, 2, 3], 0)
    with pytest.raises(InvalidParameter, match="length"):
        dp.t.tree_running_counts([1, 2, 3], True)
    with pytest.raises(InvalidParameter, match="branching"):
        dp.t.make_b_ary_tree(steps(4), L1, branching=1)
    with pytest.raises(InvalidParameter, match="branching"):
        dp.t.tree_running_counts([1, 2, 3], 2, branching=2.0)
    with pytest.raises(InvalidParameter, match="consistent"):
        dp.t.tree_running_counts([1, 2, 3], 2, consistent="yes")


def test_l2_tree_chains_into_the_gaussian_mechanism() -> None:
    """metric=L2Distance(): ρ = (√L/scale)²/2, with √L rounded up, never below the exact value."""
    tree = dp.t.make_b_ary_tree(steps(1024), L1, branching=4, metric=L2)  # L = 6 levels
    noisy = tree >> dp.m.make_gaussian(tree.output_domain, tree.output_metric, scale=5.0)
    rho = noisy.map(1)
    assert rho >= Fraction(6, 2 * 25) and rho - Fraction(6, 50) < Fraction(1, 2**55)
    out = dp.t.tree_running_counts(noisy(np.ones(1024, dtype=np.int64)), 1024, branching=4)
    assert out.shape == (1024,) and np.isfinite(out).all()


def test_the_clamp_reads_a_one_pass_iterable_once() -> None:
    assert clamped_steps(iter([2**70, 1]), 4).tolist() == clamped_steps([2**70, 1], 4).tolist()
    assert len(clamped_steps(iter([2**70, 1]), 4)) == 2
