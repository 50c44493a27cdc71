"""Vadhan–Wang 2021 Thm 1.8: the sorted order equals the brute-force best over all permutations."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcompose import accounting as acc
from dpcompose.errors import InvalidParameter

from ._reference import assert_tight, mpf

pair_st = st.tuples(
    st.floats(min_value=0.0, max_value=3.0),
    st.one_of(st.just(0.0), st.floats(min_value=1e-12, max_value=1e-2)),
)


def _cost(eps: list[float], dels: list[float], order: tuple[int, ...]) -> mpmath.mpf:
    total, prefix = mpf(0), mpf(0)
    for i in order:
        total += mpmath.exp(prefix) * mpf(dels[i])
        prefix += mpf(eps[i])
    return total


def _best_over_orders(eps: list[float], dels: list[float]) -> mpmath.mpf:
    """min over all k! orders, by dynamic programming over the set already placed (exhaustive)."""
    k = len(eps)
    best = {0: mpf(0)}
    for mask in range(1 << k):
        if mask not in best:
            continue
        prefix = mpmath.exp(mpmath.fsum(mpf(eps[j]) for j in range(k) if mask >> j & 1))
        for i in range(k):
            if not mask >> i & 1:
                cand = best[mask] + prefix * mpf(dels[i])
                nxt = mask | 1 << i
                if nxt not in best or cand < best[nxt]:
                    best[nxt] = cand
    return best[(1 << k) - 1]


def _check(pairs: list[tuple[float, float]], brute: bool) -> None:
    eps, dels = (list(x) for x in zip(*pairs, strict=False))
    e, d, order = acc.concurrent_vadhan_wang(eps, dels)
    assert e == sum(Fraction(x) for x in eps)
    assert sorted(order) == list(range(len(eps)))
    if brute:
        best = min(_cost(eps, dels, p) for p in itertools.permutations(range(len(eps))))
    else:
        best = _best_over_orders(eps, dels)
    assert_tight(d, min(best, mpf(1)))
    assert_tight(d, min(_cost(eps, dels, order), mpf(1)))


@settings(max_examples=40)
@given(st.lists(pair_st, min_size=1, max_size=7))
def test_sorted_order_is_the_best_over_all_orders(pairs: list[tuple[float, float]]) -> None:
    _check(pairs, brute=False)


@settings(max_examples=15)
@given(st.lists(pair_st, min_size=1, max_size=5))
def test_sorted_order_is_the_brute_force_best(pairs: list[tuple[float, float]]) -> None:
    _check(pairs, brute=True)


@pytest.mark.slow
@settings(max_examples=200)
@given(st.lists(pair_st, min_size=6, max_size=7))
def test_sorted_order_is_the_brute_force_best_k7(pairs: list[tuple[float, float]]) -> None:
    _check(pairs, brute=True)


def test_example_and_pure() -> None:
    e, d, _order = acc.concurrent_vadhan_wang([1.0, 0.5, 0.2], [0, 0, 0])
    assert (e, d) == (Fraction(1.0) + Fraction(0.5) + Fraction(0.2), 0)
    _, d2, order2 = acc.concurrent_vadhan_wang([2.0, 0.1], [1e-6, 1e-6])
    assert order2 == (1, 0)
    assert d2 <= acc.basic([2.0, 0.1], [1e-6, 1e-6])[1] * math.e**0.1


def test_bad_input() -> None:
    with pytest.raises(InvalidParameter, match=r"deltas\[1\]"):
        acc.concurrent_vadhan_wang([0.1, 0.1], [0.0, 1.0])
    with pytest.raises(InvalidParameter, match="same length"):
        acc.concurrent_vadhan_wang([0.1, 0.1], [0.0])
    with pytest.raises(InvalidParameter, match=r"epsilons\[0\]"):
        acc.concurrent_vadhan_wang([math.nan], [0.0])
    with pytest.raises(InvalidParameter, match="epsilons"):
        acc.concurrent_vadhan_wang([], [])
