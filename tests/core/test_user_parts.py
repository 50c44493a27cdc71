"""User-written measurements and transformations: trust is explicit and visible (issue 11, item 14)."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import pytest

import dpcompose as dp

INTS = dp.VectorDomain(dp.AtomDomain(int))
SYM = dp.SymmetricDistance()
INT = dp.AtomDomain(int)
ABS = dp.AbsoluteDistance()


def test_raw_construction_is_refused_and_points_to_the_opt_in() -> None:
    with pytest.raises(dp.InvalidParameter, match="make_user_measurement"):
        dp.Measurement(INT, ABS, dp.PureDP(), lambda x: x, lambda d: Fraction(999))
    with pytest.raises(dp.InvalidParameter, match="make_user_transformation"):
        dp.Transformation(INTS, INT, SYM, ABS, len, lambda d: d)


def test_swapping_a_library_map_by_replace_is_refused() -> None:
    lap = dp.m.make_laplace(INT, ABS, scale=1.0)
    with pytest.raises(dp.InvalidParameter, match="make_user_measurement"):
        dataclasses.replace(lap, privacy_map=lambda d: Fraction(0))


@pytest.mark.parametrize("trusted", [False, None, 1, "yes", "True"])
def test_the_opt_in_must_be_exactly_true(trusted: object) -> None:
    with pytest.raises(dp.InvalidParameter, match="trusted"):
        dp.make_user_measurement(INT, ABS, dp.PureDP(), lambda x: x, lambda d: d, trusted=trusted)  # type: ignore[arg-type]
    with pytest.raises(dp.InvalidParameter, match="trusted"):
        dp.make_user_transformation(INTS, INT, SYM, ABS, len, lambda d: d, trusted=trusted)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["oops", -1, Fraction(-1, 3), 0.5, float("nan"), None, True])
def test_a_user_map_output_is_validated_on_every_call(value: object) -> None:
    m = dp.make_user_measurement(INT, ABS, dp.PureDP(), lambda x: x, lambda d: value, trusted=True)
    with pytest.raises(dp.InvalidParameter):
        m.map(1)
    t = dp.make_user_transformation(INTS, INT, SYM, ABS, len, lambda d: value, trusted=True)
    if isinstance(value, float) and value == value:  # a finite float sensitivity is read (rounded up)
        assert t.map(1) >= Fraction(value)
    else:
        with pytest.raises(dp.InvalidParameter):
            t.map(1)


def test_user_approx_maps_are_checked_as_pairs() -> None:
    for value in [(1, 2), (Fraction(1), Fraction(-1, 10)), [1, 0], 1]:
        m = dp.make_user_measurement(INT, ABS, dp.ApproxDP(), lambda x: x, lambda d, v=value: v, trusted=True)
        with pytest.raises(dp.InvalidParameter):
            m.map(1)
    ok = dp.make_user_measurement(
        INT, ABS, dp.ApproxDP(), lambda x: x, lambda d: (Fraction(1), Fraction(1, 10)), trusted=True
    )
    assert ok.map(1) == (1, Fraction(1, 10))


def test_a_raw_error_in_a_user_map_becomes_invalid_parameter() -> None:
    m = dp.make_user_measurement(INT, ABS, dp.PureDP(), lambda x: x, lambda d: 1 / 0, trusted=True)
    with pytest.raises(dp.InvalidParameter, match="ZeroDivisionError"):
        m.map(1)


def test_explain_and_repr_mark_user_parts_unverified() -> None:
    size = dp.make_user_transformation(INTS, INT, SYM, ABS, len, lambda d: d, trusted=True, name="size")
    noisy = size >> dp.m.make_laplace(INT, ABS, scale=1.0)
    text = str(dp.explain(noisy, 1))
    assert "size [UNVERIFIED]" in text
    assert "laplace(scale=1.0)  " in text  # library nodes are not marked
    assert "[UNVERIFIED]" in repr(size)
    assert "[UNVERIFIED]" not in repr(dp.m.make_laplace(INT, ABS, scale=1.0))


def test_user_parts_compose_like_library_parts() -> None:
    m = dp.make_user_measurement(INT, ABS, dp.PureDP(), lambda x: x, lambda d: d / 2, trusted=True)
    assert dp.make_sequential(m, m).map(1) == 1
    assert m(3) == 3


def test_chaining_a_measurement_into_a_transformation_says_what_to_do() -> None:
    count = dp.t.make_count(INTS, SYM)
    lap = dp.m.make_laplace(INT, ABS, scale=1.0)
    with pytest.raises(dp.DomainMismatch, match=r"t >> m"):
        (count >> lap) >> count  # type: ignore[operator]
    with pytest.raises(dp.DomainMismatch, match="make_sequential"):
        (count >> lap) >> (count >> lap)  # type: ignore[operator]


def test_queryable_reprs_are_public_and_informative() -> None:
    svt = dp.m.make_sparse_vector(INTS, SYM, threshold=5.0, scale=1.0, max_positive=2)
    assert repr(svt([1, 2])) == "<sparse vector: open, 0 answered; 0 of 2 positive answers used>"
    f = dp.make_privacy_filter(INTS, SYM, dp.PureDP(), 1, 1.0)([1])
    f(dp.t.make_count(INTS, SYM) >> dp.m.make_laplace(INT, ABS, scale=3.0))
    assert repr(f) == "<privacy filter: open, 1 answered; spent ε=0.333334, δ=0, remaining ε=0.666666, δ=0>"
    assert "_" not in repr(dp.make_odometer(INTS, SYM, dp.PureDP(), 1)([1])).split(":")[0]


def test_cost_checks_cannot_be_fooled_and_cover_renyi_curves() -> None:
    """Review findings: a Fraction subclass overriding < passed as non-negative; a user Rényi curve was
    only type-checked; a cost too large to record escaped as a raw ValueError from the ledger."""

    class Sneaky(Fraction):
        def __lt__(self, other: object) -> bool:
            return False

    neg = dp.make_user_measurement(INT, ABS, dp.PureDP(), lambda x: x, lambda d: Sneaky(-1, 2), trusted=True)
    with pytest.raises(dp.InvalidParameter, match="non-negative"):
        neg.map(1)
    curve = dp.RenyiCurve(lambda a: Fraction(-99))
    renyi = dp.make_user_measurement(INT, ABS, dp.RenyiDP(), lambda x: x, lambda d: curve, trusted=True)
    with pytest.raises(dp.InvalidParameter, match="non-negative"):
        dp.make_sequential(renyi, renyi).map(1)(2)
    huge = dp.make_user_measurement(
        INT, ABS, dp.PureDP(), lambda x: x, lambda d: Fraction(10**5000), trusted=True
    )
    with pytest.raises(dp.InvalidParameter, match="too large"):
        huge.map(1)
