from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import dpcompose as dp

INTS = dp.VectorDomain(dp.AtomDomain(int))
SYM = dp.SymmetricDistance()
COUNT = dp.t.make_count(INTS, SYM)


def test_sparse_vector_answers_and_halts() -> None:
    svt = dp.m.make_sparse_vector(
        INTS, SYM, threshold=50.0, scale=0.5, max_positive=2, rng=np.random.default_rng(0)
    )
    assert svt.map(1) == 4
    assert svt.map(3) == 12
    q = svt(list(range(100)))
    assert q(COUNT) is True  # count 100 vs threshold 50, noise scale tiny
    assert q(COUNT) is True
    with pytest.raises(dp.BudgetExceeded, match="halted after 2"):
        q(COUNT)


def test_sparse_vector_refuses_plain_functions_and_sensitive_queries() -> None:
    svt = dp.m.make_sparse_vector(INTS, SYM, threshold=0.0, scale=1.0, max_positive=1)
    q = svt([1, 2])
    with pytest.raises(dp.InvalidParameter, match="Transformation"):
        q(len)
    big = dp.t.make_sum(dp.VectorDomain(dp.AtomDomain(int, bounds=(0, 5))), SYM)
    clamp = dp.t.make_clamp(INTS, SYM, (0, 5))
    with pytest.raises(dp.InvalidParameter, match="sensitivity 5"):
        q(clamp >> big)
    assert q.queries_answered == 0


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"threshold": float("nan"), "scale": 1.0, "max_positive": 1}, "threshold="),
        ({"threshold": 0.0, "scale": 0.0, "max_positive": 1}, "scale="),
        ({"threshold": 0.0, "scale": 1.0, "max_positive": 0}, "max_positive="),
    ],
)
def test_sparse_vector_bad_parameters(kwargs: dict[str, float], fragment: str) -> None:
    with pytest.raises(dp.InvalidParameter, match=fragment):
        dp.m.make_sparse_vector(INTS, SYM, **kwargs)  # type: ignore[arg-type]


def test_two_sparse_vectors_interleave_under_concurrent() -> None:
    svt = dp.m.make_sparse_vector(INTS, SYM, threshold=1000.0, scale=1.0, max_positive=1)
    both = dp.make_concurrent(svt, svt)
    assert both.map(1) == 4
    q1, q2 = both(list(range(10)))
    assert [q1(COUNT), q2(COUNT), q1(COUNT), q2(COUNT)] == [False] * 4


def test_sequential_closes_first_sparse_vector() -> None:
    svt = dp.m.make_sparse_vector(INTS, SYM, threshold=1000.0, scale=1.0, max_positive=1)
    q1, q2 = dp.make_sequential(svt, svt)(list(range(10)))
    q1(COUNT)
    q2(COUNT)
    with pytest.raises(dp.SequentialityError, match="sparse vector"):
        q1(COUNT)


def test_interactive_laplace_budget() -> None:
    m = dp.m.make_interactive_laplace(INTS, SYM, scale=10.0, max_queries=2)
    assert m.map(2) == Fraction(4, 10)
    q = m([1, 2, 3])
    q(COUNT)
    q(COUNT)
    with pytest.raises(dp.BudgetExceeded, match="all 2 queries"):
        q(COUNT)


def test_interactive_primitives_need_dataset_metric() -> None:
    with pytest.raises(dp.DomainMismatch, match="group privacy"):
        dp.m.make_interactive_laplace(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=1.0, max_queries=1)


@pytest.mark.parametrize("scale", [0.5, 10.0, 2.0**31, 2.0**40])
def test_interactive_laplace_prices_answers_by_the_secure_mechanism(scale: float) -> None:
    """Each answer costs what make_laplace's own map says at distance 1. At scales of 2**31 and above the
    secure grid is wider than 1 and an answer costs more than 1/scale; the old map (k·d_in/scale)
    under-reported there."""
    one = dp.m.make_laplace(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=scale).map(1)
    m = dp.m.make_interactive_laplace(INTS, SYM, scale=scale, max_queries=3)
    assert m.map(2) == 3 * 2 * one
    assert m.map(2) >= Fraction(6) / Fraction(scale)
    answer = m(list(range(10)))(COUNT)
    assert isinstance(answer, float)
