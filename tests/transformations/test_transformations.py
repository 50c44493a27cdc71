from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpcompose as dp

SYM, CHG = dp.SymmetricDistance(), dp.ChangeOneDistance()


def test_clamp() -> None:
    t = dp.t.make_clamp(dp.VectorDomain(dp.AtomDomain(int)), SYM, (0, 5))
    out = t([-3, 2, 9])
    assert isinstance(out, np.ndarray) and out.dtype == np.int64 and out.tolist() == [0, 2, 5]
    assert t.map(4) == 4
    with pytest.raises(dp.InvalidParameter, match="integers"):
        dp.t.make_clamp(dp.VectorDomain(dp.AtomDomain(int)), SYM, (0.5, 5))
    with pytest.raises(dp.DomainMismatch):
        dp.t.make_clamp(dp.VectorDomain(dp.AtomDomain(int)), dp.L1Distance(), (0, 5))


@given(st.integers(0, 50), st.integers(-20, 0), st.integers(0, 20))
def test_int_sum_sensitivity_both_metrics(d: int, lo: int, hi: int) -> None:
    dom = dp.VectorDomain(dp.AtomDomain(int, bounds=(lo, hi)))
    assert dp.t.make_sum(dom, SYM).map(d) == d * max(-lo, hi)
    assert dp.t.make_sum(dom, CHG).map(d) == d * (hi - lo)


def test_int_sum_is_exact_without_overflow() -> None:
    dom = dp.VectorDomain(dp.AtomDomain(int, bounds=(0, 2**62)))
    assert dp.t.make_sum(dom, SYM)(np.array([2**62, 2**62], dtype=np.int64)) == 2**63


def test_float_sum_needs_size_bound() -> None:
    dom = dp.VectorDomain(dp.AtomDomain(float, bounds=(0.0, 1.0)))
    with pytest.raises(dp.InvalidParameter, match="max_size"):
        dp.t.make_sum(dom, SYM)
    s = dp.t.make_sum(dom, SYM, max_size=3)
    assert s([0.1, 0.2, 0.3]) == math.fsum([0.1, 0.2, 0.3])


def test_oversize_float_sum_saturates_instead_of_raising() -> None:
    """An exception on in-domain data would reveal the dataset's size (issue 11, item 6): more records
    than max_size are summed and clamped to the largest |sum| max_size records can have."""
    dom = dp.VectorDomain(dp.AtomDomain(float, bounds=(-1.0, 1.0)))
    s = dp.t.make_sum(dom, SYM, max_size=3)
    assert s([1.0] * 4) == 3.0 and s([0.5] * 4) == 2.0 and s([-1.0] * 37) == -3.0
    assert s([1.0, -1.0] * 20) == 0.0  # within range: the exact sum, whatever the count
    huge = dp.VectorDomain(dp.AtomDomain(float, bounds=(-1e308, 1e308)))
    top = dp.t.make_sum(huge, SYM, max_size=1)
    assert top([1e308] * 3) == 1e308 and top([-1e308] * 3) == -1e308  # fsum would overflow
    with pytest.raises(dp.InvalidParameter, match="max_size"):
        dp.t.make_sum(huge, SYM, max_size=2)  # 2e308 is beyond the float range: refused when built


@given(st.lists(st.floats(-1.0, 1.0), min_size=0, max_size=12), st.floats(-1.0, 1.0))
def test_saturated_float_sum_keeps_its_sensitivity(data: list[float], extra: float) -> None:
    """Brute force over datasets larger than max_size: adding one record moves the sum by at most map(1)."""
    dom = dp.VectorDomain(dp.AtomDomain(float, bounds=(-1.0, 1.0)))
    s = dp.t.make_sum(dom, SYM, max_size=4)
    assert abs(Fraction(s(data)) - Fraction(s([*data, extra]))) <= s.map(1)


@given(
    st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=30),
    st.integers(0, 29),
    st.floats(-1e6, 1e6),
)
def test_float_sum_sensitivity_covers_rounding(data: list[float], i: int, replacement: float) -> None:
    """Brute force: changing one record never moves the released sum by more than the map says."""
    dom = dp.VectorDomain(dp.AtomDomain(float, bounds=(-1e6, 1e6)))
    s = dp.t.make_sum(dom, CHG, max_size=30)
    other = list(data)
    other[i % len(data)] = replacement
    assert abs(Fraction(s(data)) - Fraction(s(other))) <= s.map(1)


def test_sum_needs_bounds() -> None:
    with pytest.raises(dp.DomainMismatch, match="make_clamp"):
        dp.t.make_sum(dp.VectorDomain(dp.AtomDomain(int)), SYM)


def test_count() -> None:
    t = dp.t.make_count(dp.VectorDomain(dp.AtomDomain(str)), SYM)
    assert t(["a", "b", "c"]) == 3
    assert t.map(2) == 2
    assert dp.t.make_count(dp.VectorDomain(dp.AtomDomain(str)), CHG).map(2) == 0


def test_oversize_float_sum_with_intermediate_overflow_clamps_the_exact_sum() -> None:
    """Review finding: fsum raises OverflowError when a running partial sum overflows even though the
    exact total is small; the fallback must clamp the exact sum, not jump to ±L (an under-report)."""
    dom = dp.VectorDomain(dp.AtomDomain(float, bounds=(-1e307, 1e307)))
    s = dp.t.make_sum(dom, SYM, max_size=10)
    a = [1e307] * 20 + [-1e307] * 20
    b = [1e307] * 20 + [-1e307] * 19  # one record removed
    assert s(a) == 0.0 and s(b) == 1e307
    assert abs(Fraction(s(a)) - Fraction(s(b))) <= s.map(1)


@pytest.mark.parametrize(
    "bounds", [(0, 2**53 + 3), (0.0, Fraction(1, 10)), (Fraction(-1, 3), 1.0), (0.0, True)]
)
def test_float_clamp_bounds_must_be_floats(bounds: tuple[object, object]) -> None:
    """np.clip rounds a bound to the nearest float, possibly outside it: 2**53 + 3 clamped to 2**53 + 4, out
    of the declared domain, and clamp >> sum under-reported by 1 (found by review); a Fraction bound gave
    an object array of Fractions. Exact floats (and ints that are floats) are accepted."""
    floats = dp.VectorDomain(dp.AtomDomain(float))
    with pytest.raises(dp.InvalidParameter, match="bounds"):
        dp.t.make_clamp(floats, SYM, bounds)  # type: ignore[arg-type]
    assert dp.t.make_clamp(floats, SYM, (0, 2**53 + 4))([1e300]).tolist() == [2.0**53 + 4]
    assert dp.t.make_clamp(floats, SYM, (Fraction(1, 4), 1))([0.0]).tolist() == [0.25]


@pytest.mark.parametrize(
    # (10**5000 is past Python's 4300-digit int-to-str limit: its repr raised ValueError, found by review)
    "bound",
    [10**400, -(10**400), 2**1024, Fraction(10**400, 3), 10**5000, Fraction(-(10**5000), 3)],
    ids=["1e400", "-1e400", "2^1024", "1e400/3", "1e5000", "-1e5000/3"],
)
def test_float_clamp_bound_beyond_the_float_range_is_named_briefly(bound: int | Fraction) -> None:
    """A bound beyond ±1.8e308 was printed in full (401 digits, twice) and the message suggested ``inf``,
    which the domain refuses; now it is cut to its first digits and a finite float is suggested."""
    floats = dp.VectorDomain(dp.AtomDomain(float))
    with pytest.raises(dp.InvalidParameter, match="beyond the float64 range") as info:
        dp.t.make_clamp(floats, SYM, (0.0, bound) if bound > 0 else (bound, 0.0))
    message = str(info.value)
    assert len(message) < 300 and "inf" not in message.replace("finite", "")
    suggested = float(message.rsplit("such as ", 1)[1])
    assert math.isfinite(suggested) and (suggested > 0) == (bound > 0)
    dp.t.make_clamp(floats, SYM, (0.0, suggested) if suggested > 0 else (suggested, 0.0))  # the advice works


def test_float_array_membership_compares_bounds_exactly() -> None:
    """A numpy array was compared with the bound rounded to a float (2**53 + 3 → 2**53 + 4), so it passed
    where the same values as a list did not."""
    dom = dp.VectorDomain(dp.AtomDomain(float, bounds=(-(2**53) - 3, 2**53 + 3)))
    for bad in ([2.0**53 + 4], [-(2.0**53) - 4]):
        assert not dom.member(bad) and not dom.member(np.array(bad))
    ok = [2.0**53 + 2, -(2.0**53) - 2]
    assert dom.member(ok) and dom.member(np.array(ok))
