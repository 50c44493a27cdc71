"""The online counter (binary mechanism): privacy map, answers in order, lazily read steps, RMSE."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import dpcompose as dp
from dpcompose.errors import DomainMismatch, InvalidParameter

L1 = dp.L1Distance()


def steps(length: int) -> dp.VectorDomain:
    return dp.VectorDomain(dp.AtomDomain(int), size=length)


@pytest.mark.parametrize("length", [1, 2, 3, 8, 9, 1024, 1025])
def test_privacy_map_is_levels_over_scale(length: int) -> None:
    levels = math.ceil(math.log2(length)) + 1
    counter = dp.m.make_online_counter(steps(length), L1, scale=4.0)
    assert counter.map(1) == Fraction(levels, 4)
    assert counter.map(3) == Fraction(3 * levels, 4)
    # the same as the offline tree with Laplace noise of the same scale
    tree = dp.t.make_b_ary_tree(steps(length), L1)
    offline = tree >> dp.m.make_laplace(tree.output_domain, tree.output_metric, scale=4.0)
    assert counter.map(2) == offline.map(2)


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
