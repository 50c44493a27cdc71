"""CategoricalDomain: refused categories, exact membership that never raises (issue 11, A.3, D.10, D.11)."""

from __future__ import annotations

import math
import pickle
from collections.abc import Hashable
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpcompose as dp


class NeverEqual:
    """An object whose equality is not reflexive (x != x), like NaN."""

    def __eq__(self, other: object) -> bool:
        return False

    def __hash__(self) -> int:
        return 7


class ArrayEqual:
    """An object whose == returns something that is not a bool."""

    def __eq__(self, other: object) -> object:
        return np.array([True, True])

    def __hash__(self) -> int:
        return 8


@pytest.mark.parametrize(
    "bad",
    [
        5,
        None,
        3.5,
        object(),
        np.array(3),  # 0-d
        "ab",  # would iterate characters
        b"ab",
        {"a", "b"},  # order changes between runs
        [],
        (),
        [[1], [2]],  # unhashable
        [{"a": 1}],
        [np.array([1, 2])],
        np.array([[1, 2], [3, 4]]),  # rows are arrays
        [math.nan, 1.0],
        [float("nan")],
        [np.float64("nan"), 1.0],
        [np.float32("nan")],
        [Decimal("NaN")],
        [Decimal("sNaN")],
        [complex(math.nan, 0)],
        [(math.nan, 1)],  # NaN inside a tuple: (nan,) == (nan,) only by identity
        [frozenset([math.nan])],
        [NeverEqual()],
        [ArrayEqual()],
        [1, 1.0],  # equal across types
        [1, True],
        [0, False, 2],
        [0.0, -0.0],
        ["a", "a"],
        [Fraction(1, 2), 0.5],
    ],
)
def test_bad_categories_refused_naming_the_parameter(bad: object) -> None:
    with pytest.raises(dp.InvalidParameter, match="categories="):
        dp.CategoricalDomain(bad)  # type: ignore[arg-type]


def test_iterator_that_fails_is_refused() -> None:
    def broken() -> object:
        yield 1
        raise RuntimeError("disk gone")

    with pytest.raises(dp.InvalidParameter, match="categories=.*disk gone"):
        dp.CategoricalDomain(broken())  # type: ignore[arg-type]


def test_refusal_messages_say_why() -> None:
    with pytest.raises(dp.InvalidParameter, match="not a single string"):
        dp.CategoricalDomain("yes")
    with pytest.raises(dp.InvalidParameter, match="not equal to itself"):
        dp.CategoricalDomain([math.nan, 1.0])
    with pytest.raises(dp.InvalidParameter, match="1 and True are equal"):
        dp.CategoricalDomain([1, True])
    with pytest.raises(dp.InvalidParameter, match="not hashable"):
        dp.CategoricalDomain([[1]])


@pytest.mark.parametrize(
    "good",
    [
        ["yes", "no"],
        (0, 1),
        range(5),
        [0, "0", (0,), b"0"],
        [None, 0],
        [1.5, 2.5, math.inf],
        [Fraction(1, 3), Decimal("0.5")],
        [np.int64(1), np.int64(2)],
        np.array(["a", "b"]),
        {"x": 1, "y": 2},  # a dict's keys, in insertion order
        [(1, "a"), (2, "b")],
        [False, True],
    ],
)
def test_good_categories_accepted_in_order(good: object) -> None:
    domain = dp.CategoricalDomain(good)  # type: ignore[arg-type]
    assert domain.categories == tuple(good)  # type: ignore[call-overload]
    for i, c in enumerate(domain.categories):
        assert domain.member(c) and domain.index(c) == i


@pytest.mark.parametrize(
    "value",
    [True, 1.0, np.int64(1), np.float32(1), np.bool_(True), Fraction(1), Decimal(1), "1", (1,)],
)
def test_membership_is_exact(value: object) -> None:
    """Values equal to the category 1 in another representation are not members (they were)."""
    domain = dp.CategoricalDomain([0, 1])
    assert not domain.member(value)
    with pytest.raises(dp.DomainMismatch):
        domain.index(value)


def test_mismatch_message_explains_exactness() -> None:
    with pytest.raises(dp.DomainMismatch, match="equals the category 1 but its type is float"):
        dp.CategoricalDomain([0, 1]).check(1.0)


class Exploding:
    def __eq__(self, other: object) -> bool:
        raise RuntimeError("boom")

    def __hash__(self) -> int:
        return hash(1)


@pytest.mark.parametrize(
    "value",
    [[1], {1: 2}, np.array([1, 0]), np.array(1), Exploding(), NeverEqual(), ArrayEqual(), math.nan, None],
)
def test_membership_never_raises(value: object) -> None:
    domain = dp.CategoricalDomain([0, 1, 7, 8, math.inf])
    assert domain.member(value) is False


def test_nan_value_is_not_a_member_of_float_categories() -> None:
    domain = dp.CategoricalDomain([0.0, 1.0])
    assert not domain.member(math.nan) and not domain.member(np.float64("nan"))
    assert domain.member(-0.0) and domain.index(-0.0) == 0


def test_equality_and_hash_respect_types() -> None:
    ints, floats = dp.CategoricalDomain([0, 1]), dp.CategoricalDomain([0.0, 1.0])
    assert ints != floats  # different members, so different domains
    assert ints == dp.CategoricalDomain((0, 1)) and hash(ints) == hash(dp.CategoricalDomain(range(2)))
    assert pickle.loads(pickle.dumps(ints)) == ints


@given(st.lists(st.one_of(st.integers(), st.text(max_size=3), st.floats(allow_nan=False)), unique=True))
def test_lists_of_distinct_values(values: list[Hashable]) -> None:
    equal_pair = len(set(values)) != len(values)
    if not values or equal_pair:
        with pytest.raises(dp.InvalidParameter, match="categories="):
            dp.CategoricalDomain(values)
        return
    domain = dp.CategoricalDomain(values)
    for i, v in enumerate(values):
        assert domain.index(v) == i
