from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import dpcompose as dp


def test_atom_domain_membership() -> None:
    d = dp.AtomDomain(float, bounds=(0.0, 1.0))
    assert d.member(0.0) and d.member(1) and not d.member(1.5)
    assert not d.member(math.nan)
    assert dp.AtomDomain(float, nan=True).member(math.nan)
    assert not dp.AtomDomain(float).member(math.inf)
    assert not dp.AtomDomain(int).member(True)
    assert not dp.AtomDomain(int).member(1.0)
    assert dp.AtomDomain(int).member(np.int64(3))


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"carrier": str, "bounds": (0, 1)}, "numeric carrier"),
        ({"carrier": float, "bounds": (1.0, 0.0)}, "lo <= hi"),
        ({"carrier": float, "bounds": (0.0, math.inf)}, "finite"),
        ({"carrier": int, "nan": True}, "nan=True"),
    ],
)
def test_atom_domain_rejects_bad_parameters(kwargs: dict[str, object], fragment: str) -> None:
    with pytest.raises(dp.InvalidParameter, match=fragment):
        dp.AtomDomain(**kwargs)  # type: ignore[arg-type]


def test_vector_domain_membership_lists_and_arrays() -> None:
    d = dp.VectorDomain(dp.AtomDomain(float, bounds=(0.0, 10.0)))
    assert d.member([1.0, 2.0])
    assert d.member(np.array([1.0, 2.0]))
    assert not d.member(np.array([1.0, 11.0]))
    assert not d.member(np.array([1.0, np.nan]))
    assert not d.member(np.array([[1.0]]))
    assert not d.member("abc")
    assert dp.VectorDomain(dp.AtomDomain(int), size=2).member([1, 2])
    assert not dp.VectorDomain(dp.AtomDomain(int), size=2).member([1, 2, 3])
    assert not dp.VectorDomain(dp.AtomDomain(int)).member(np.array([1.5]))


def test_domains_compare_by_value() -> None:
    assert dp.VectorDomain(dp.AtomDomain(int)) == dp.VectorDomain(dp.AtomDomain(int))
    assert dp.VectorDomain(dp.AtomDomain(int)) != dp.VectorDomain(dp.AtomDomain(float))
    assert dp.SymmetricDistance() == dp.SymmetricDistance()
    assert dp.SymmetricDistance() != dp.ChangeOneDistance()


def test_categorical_domain() -> None:
    d = dp.CategoricalDomain(["a", "b"])
    assert d.member("a") and not d.member("c") and not d.member([1])
    with pytest.raises(dp.InvalidParameter, match="must not be empty"):
        dp.CategoricalDomain([])
    with pytest.raises(dp.InvalidParameter, match="distinct"):
        dp.CategoricalDomain(["a", "a"])


@pytest.mark.parametrize("bad", [-1, 1.5, math.nan, "1", True])
def test_dataset_metric_rejects_bad_distances(bad: object) -> None:
    with pytest.raises(dp.InvalidParameter, match="d_in="):
        dp.SymmetricDistance().validate(bad)


@pytest.mark.parametrize("bad", [-0.5, math.nan, math.inf, -math.inf])
def test_numeric_metric_rejects_bad_distances(bad: float) -> None:
    with pytest.raises(dp.InvalidParameter, match="d_in="):
        dp.L1Distance().validate(bad)


def test_numeric_metric_reads_sensitivity_conservatively() -> None:
    # 0.1 as a float is slightly above 1/10: the larger reading wins.
    assert dp.AbsoluteDistance().validate(0.1) == Fraction(0.1)
    # 0.3 as a float is slightly below 3/10: the decimal reading wins.
    assert dp.AbsoluteDistance().validate(0.3) == Fraction(3, 10)


def test_metric_domain_pairs_are_checked() -> None:
    with pytest.raises(dp.DomainMismatch, match="VectorDomain"):
        dp.SymmetricDistance().check_domain(dp.AtomDomain(int))
    with pytest.raises(dp.DomainMismatch, match="numeric"):
        dp.L2Distance().check_domain(dp.VectorDomain(dp.AtomDomain(str)))


def test_structured_arrays_are_vectors_of_tuples() -> None:
    """A structured array's rows are tuples (``tolist``): members of a vector of tuple atoms, decided
    without a loop; a vector of lists is still checked row by row (and refuses them)."""

    table = np.zeros(4, dtype=[("id", "i8"), ("x", "f8")])
    assert dp.VectorDomain(dp.AtomDomain(tuple)).member(table)
    assert not dp.VectorDomain(dp.AtomDomain(list)).member(table)
    assert not dp.VectorDomain(dp.AtomDomain(tuple), size=3).member(table)
