"""make_clip_l1, make_clip_l2, make_vector_sum (issue 15): exact norms of clipped rows (Fractions),
stability by brute force on small neighbouring datasets, saturation, refusals."""

from __future__ import annotations

import itertools
import math
import sys
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpcompose as dp
from dpcompose.core._norm_domain import exact_norm_within
from dpcompose.transformations._vectors import clip_rows

SYM, CHG = dp.SymmetricDistance(), dp.ChangeOneDistance()


def rows_domain(d: int, nan: bool = False, size: int | None = None) -> dp.VectorDomain:
    return dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float, nan=nan), size=d), size=size)


def exact_norm(row: Any, p: int) -> Fraction:
    """‖row‖_1, or ‖row‖_2 squared, exactly."""
    values = [Fraction(v) for v in np.asarray(row, dtype=np.float64).tolist()]
    return sum((abs(v) for v in values), Fraction(0)) if p == 1 else sum((v * v for v in values), Fraction(0))


def within(row: Any, p: int, bound: float) -> bool:
    limit = Fraction(bound) if p == 1 else Fraction(bound) ** 2
    return exact_norm(row, p) <= limit


# --- clipping: the exact norm never exceeds the bound ----------------------------------------------------

any_float = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([sys.float_info.max, -sys.float_info.max, 5e-324, -0.0, 2.2250738585072014e-308, 1.0]),
    st.floats(-10.0, 10.0),
)
bounds = st.one_of(
    st.sampled_from([1.0, 0.1, 2.0**-900, sys.float_info.max, 3.0, 1e300, 1e-270]),
    st.floats(2.0**-900, sys.float_info.max),
)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 6).flatmap(
        lambda d: st.lists(st.lists(any_float, min_size=d, max_size=d), min_size=1, max_size=5)
    ),
    bounds,
    st.sampled_from([1, 2]),
)
def test_clipped_rows_are_exactly_inside_the_ball(rows: list[list[float]], bound: float, p: int) -> None:
    clip = (dp.t.make_clip_l1 if p == 1 else dp.t.make_clip_l2)(rows_domain(len(rows[0])), SYM, bound)
    out = clip(rows)
    assert out.shape == (len(rows), len(rows[0])) and out.dtype == np.float64
    for before, after in zip(rows, out, strict=True):
        assert np.isfinite(after).all()
        assert within(after, p, bound)
        limit = Fraction(bound) if p == 1 else Fraction(bound) ** 2
        norm = exact_norm(before, p)
        shrink = Fraction(1 - 2**-19) if p == 1 else Fraction(1 - 2**-19) ** 2
        if norm <= limit * shrink:
            assert after.tolist() == list(before)  # well inside: unchanged
        if norm > limit and bound > 1e-290:
            # clipped rows end on the sphere, up to the 2**-20 margin (and the float grid)
            assert exact_norm(after, p) >= limit * (
                Fraction(1 - 2**-18) if p == 1 else Fraction(1 - 2**-18) ** 2
            )
            # direction kept: the result is a non-negative multiple of the row, entrywise in sign
            assert all((a == 0) or (a > 0) == (b > 0) for a, b in zip(after.tolist(), before, strict=True))
    assert clip.output_domain.member(out)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 6).flatmap(
        lambda d: st.lists(st.lists(any_float, min_size=d, max_size=d), min_size=1, max_size=5)
    ),
    bounds,
    st.sampled_from([1, 2]),
)
def test_clipped_rows_are_exactly_inside_the_ball_thorough(
    rows: list[list[float]], bound: float, p: int
) -> None:
    """test_clipped_rows_are_exactly_inside_the_ball with its full 300 examples."""
    test_clipped_rows_are_exactly_inside_the_ball.hypothesis.inner_test(rows, bound, p)


def test_adversarial_rows_on_the_boundary() -> None:
    """Rows whose float norm rounds to the bound but whose exact norm exceeds it, and near-ties."""
    rows = np.array(
        [
            [0.6, 0.8],
            [0.8, 0.6],
            [1.0, 0.0],
            [0.7071067811865476, 0.7071067811865476],
            [0.7071067811865475, 0.7071067811865475],
            [1e-320, 1.0],
            [1.0000000000000002, 0.0],
        ]
    )
    for p, bound in ((2, 1.0), (1, 1.4)):
        out = clip_rows(rows, p, bound)
        for row in out:
            assert within(row, p, bound)
    # rows in the band within 2**-20 of the bound may be shrunk by that much; rows below it are kept
    edge = clip_rows(np.array([[1.0, 0.0], [0.5, 0.5], [0.999, 0.0]]), 1, 1.0)
    assert edge[:2].tolist() == [[1.0 - 2**-20, 0.0], [0.5 - 2**-21, 0.5 - 2**-21]]
    assert edge[2].tolist() == [0.999, 0.0]


def test_many_random_rows_in_every_binade() -> None:
    rng = np.random.default_rng(5)
    d = 17
    x = rng.standard_normal((3000, d)) * np.ldexp(1.0, rng.integers(-1070, 1020, size=(3000, 1)))
    for p in (1, 2):
        for bound in (1.0, 1e-250, 1e250, 3.3):
            out = clip_rows(x, p, bound)
            assert exact_norm_within(out, p, bound).all()
            # the vectorised check agrees with the exact one on a sample
            for row in out[:50]:
                assert within(row, p, bound)


def test_nan_rows_become_zero_and_nothing_raises() -> None:
    clip = dp.t.make_clip_l2(rows_domain(3, nan=True), CHG, 2.0)
    out = clip([[math.nan, 1.0, 1.0], [1.0, 2.0, 2.0], [0.0, 0.0, 0.0]])
    assert out[0].tolist() == [0.0, 0.0, 0.0]
    assert out[2].tolist() == [0.0, 0.0, 0.0]
    assert within(out[1], 2, 2.0)
    assert clip([]).shape == (0, 3)
    assert clip(np.zeros((0, 3))).shape == (0, 3)


def test_inputs_of_every_shape_give_the_same_result() -> None:
    clip = dp.t.make_clip_l1(rows_domain(2), SYM, 1.0)
    rows = [[3.0, 1.0], [0.25, 0.25]]
    expected = clip(np.array(rows)).tolist()
    assert clip(rows).tolist() == expected
    assert clip([tuple(r) for r in rows]).tolist() == expected
    assert clip([np.array(r, dtype=np.float32) for r in rows]).tolist() == expected
    obj = np.empty(2, dtype=object)
    obj[0], obj[1] = np.array(rows[0]), [0.25, 0.25]
    assert clip(obj).tolist() == expected
    assert clip([[3, 1], [0.25, 0.25]]).tolist() == expected  # ints that are exact floats


def test_clip_is_one_stable_and_row_wise() -> None:
    """Brute force: on neighbouring datasets (add/remove one row) the outputs differ by one row."""
    pool = [[3.0, 4.0], [0.1, 0.2], [-5.0, 0.0], [0.0, 0.0]]
    clip = dp.t.make_clip_l2(rows_domain(2), SYM, 1.0)
    assert clip.map(1) == 1 and clip.map(3) == 3
    for n in range(4):
        for data in itertools.product(pool, repeat=n):
            base = [tuple(r) for r in clip(list(data)).tolist()] if data else []
            for extra in pool:
                bigger = [tuple(r) for r in clip([*data, extra]).tolist()]
                assert bigger[:n] == base  # the other rows are untouched
    chg = dp.t.make_clip_l1(rows_domain(2, size=2), CHG, 0.5)
    assert chg.map(2) == 2 and chg.output_domain == dp.VectorDomain(dp.NormBallDomain(2, 0.5, 1), size=2)


# --- vector sums ---------------------------------------------------------------------------------------


def _distance(a: Any, b: Any, p: int) -> Fraction:
    """‖a − b‖_p exactly (for p = 2: its square)."""
    diff = [Fraction(x) - Fraction(y) for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    return sum((abs(v) for v in diff), Fraction(0)) if p == 1 else sum((v * v for v in diff), Fraction(0))


POOL = [[1.0, 0.0], [0.6, -0.7999999999999999], [-0.3, 0.1], [0.0, 0.0], [1e-300, -1.0]]


@pytest.mark.parametrize("p", [1, 2])
def test_vector_sum_stability_by_brute_force(p: int) -> None:
    """Every pair of neighbouring datasets from a pool (add/remove one row; change one row), all sizes up
    to 3: the exact distance between outputs is within the map."""
    ball = dp.NormBallDomain(size=2, norm=1.0, p=p)
    pool = [r for r in POOL if within(r, p, 1.0)]
    add = dp.t.make_vector_sum(dp.VectorDomain(ball), SYM, max_size=4)
    change = dp.t.make_vector_sum(dp.VectorDomain(ball), CHG, max_size=4)
    bound_add, bound_change = add.map(1), change.map(1)
    assert bound_add > 1 and bound_change > 2  # the rounding slack is there
    assert bound_add < 1 + Fraction(1, 2**48) and bound_change < 2 + Fraction(1, 2**48)
    worst_add = worst_change = Fraction(0)
    for n in range(4):
        for data in itertools.product(pool, repeat=n):
            out = add(list(data))
            assert out.tolist() == [math.fsum(r[j] for r in data) for j in range(2)]
            for extra in pool:
                worst_add = max(worst_add, _distance(out, add([*data, extra]), p))
            base = change(list(data))  # once per dataset, not once per changed row
            for i, other in itertools.product(range(n), pool):
                changed = [*data[:i], other, *data[i + 1 :]]
                worst_change = max(worst_change, _distance(base, change(changed), p))
    power = 1 if p == 1 else 2
    assert worst_add <= bound_add**power
    assert worst_change <= bound_change**power
    assert worst_change > 1  # the brute force reaches beyond one row's norm: the factor 2 is needed


def test_vector_sum_slack_covers_rounding() -> None:
    """Adding a row moves the rounded sum by more than the row's norm: the slack is needed."""
    ball = dp.NormBallDomain(size=1, norm=1.0, p=1)
    s = dp.t.make_vector_sum(dp.VectorDomain(ball), SYM, max_size=2**53)
    base = [[1.0], [2.0**-53]]  # 1 + 2**-53 rounds (ties to even) to 1
    a, b = s(base), s([*base, [2.0**-53]])  # 1 + 2**-52 is a float
    moved = abs(Fraction(b[0]) - Fraction(a[0]))
    assert moved == Fraction(2**-52) > Fraction(2**-53)  # rounding doubled the move of 2**-53
    assert moved <= s.map(1)


def test_vector_sum_saturates_oversize_data() -> None:
    ball = dp.NormBallDomain(size=2, norm=1.0, p=2)
    s = dp.t.make_vector_sum(dp.VectorDomain(ball), SYM, max_size=3)
    out = s(np.tile([[1.0, 0.0]], (10, 1)))
    assert out.tolist() == [3.0, 0.0]
    sized = dp.t.make_vector_sum(dp.VectorDomain(ball, size=2), CHG)
    assert sized.map(1) > 2
    big = dp.NormBallDomain(size=3, norm=sys.float_info.max, p=1)
    huge = dp.t.make_vector_sum(dp.VectorDomain(big), SYM, max_size=1)
    top = sys.float_info.max
    assert huge(np.tile([[top, 0.0, 0.0]], (4, 1))).tolist() == [top, 0.0, 0.0]
    assert huge(np.tile([[-top, 0.0, 0.0]], (4, 1))).tolist() == [-top, 0.0, 0.0]


def test_vector_mean_pipeline_with_gaussian_noise() -> None:
    n, d = 50, 3
    rng = np.random.default_rng(1)
    data = rng.standard_normal((n, d))
    domain = rows_domain(d, size=n)
    clip = dp.t.make_clip_l2(domain, SYM, 2.0)
    total = clip >> dp.t.make_vector_sum(clip.output_domain, SYM)
    noisy = total >> dp.m.make_gaussian(total.output_domain, total.output_metric, 1.0)
    release = noisy(data)
    assert release.shape == (d,)
    assert noisy.map(2) >= Fraction(4) ** 2 / 2  # one row changed (d_in = 2): at least (Δ/σ)²/2, Δ = 2·2
    exact = clip(data).sum(axis=0)
    assert np.abs(release - exact).max() < 10


def test_refusals() -> None:
    with pytest.raises(dp.DomainMismatch, match="make_clip_l2"):
        dp.t.make_clip_l2(dp.VectorDomain(dp.AtomDomain(float)), SYM, 1.0)
    with pytest.raises(dp.DomainMismatch, match="fixed size"):
        dp.t.make_clip_l1(dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float))), SYM, 1.0)
    with pytest.raises(dp.DomainMismatch, match="fixed size"):
        dp.t.make_clip_l1(dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(int), size=2)), SYM, 1.0)
    with pytest.raises(dp.InvalidParameter, match="norm"):
        dp.t.make_clip_l2(rows_domain(2), SYM, 0.0)
    with pytest.raises(dp.InvalidParameter, match="norm"):
        dp.t.make_clip_l2(rows_domain(2), SYM, 1e-300)
    with pytest.raises(dp.DomainMismatch, match="input_metric"):
        dp.t.make_clip_l2(rows_domain(2), dp.L2Distance(), 1.0)
    with pytest.raises(dp.DomainMismatch, match="make_clip"):
        dp.t.make_vector_sum(rows_domain(2), SYM, max_size=3)
    ball = dp.VectorDomain(dp.NormBallDomain(size=2, norm=1.0))
    with pytest.raises(dp.InvalidParameter, match="max_size"):
        dp.t.make_vector_sum(ball, SYM)
    with pytest.raises(dp.InvalidParameter, match="max_size"):
        dp.t.make_vector_sum(dp.VectorDomain(dp.NormBallDomain(size=2, norm=1e300)), SYM, max_size=10**10)
    for bad, name in (
        ({"size": 0}, "size"),
        ({"p": 3}, "p="),
        ({"size": 2**21}, "size"),
        ({"norm": -1}, "norm"),
    ):
        with pytest.raises(dp.InvalidParameter, match=name):
            dp.NormBallDomain(**{"size": 2, "norm": 1.0, **bad})


def test_domain_membership_of_row_arrays() -> None:
    rows = rows_domain(2, size=2)
    assert rows.member(np.zeros((2, 2))) and rows.member([[0.0, 1.0], (2.0, 3.0)])
    assert not rows.member(np.zeros((3, 2))) and not rows.member(np.zeros((2, 3)))
    assert not rows.member(np.array([[0.0, math.nan], [0.0, 0.0]]))
    assert not dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float))).member(np.zeros((2, 2)))
    assert not dp.VectorDomain(dp.AtomDomain(float)).member(np.zeros((2, 2)))
    ball = dp.VectorDomain(dp.NormBallDomain(size=2, norm=1.0, p=2))
    assert ball.member(np.array([[0.0, 1.0], [0.5, 0.5]]))
    assert not ball.member(np.array([[0.0, 1.0], [0.6, 0.8]]))  # exact: 0.6² + 0.8² > 1 in binary
    assert ball.member(np.zeros((0, 2)))
    # the bound kept is the greatest float at or below the one given (0.1 is above 1/10 in binary)
    assert dp.NormBallDomain(size=2, norm=0.1).norm == 0.1
    assert dp.NormBallDomain(size=2, norm=Fraction(1, 10)).norm == math.nextafter(0.1, 0)
    assert dp.NormBallDomain(size=2, norm=1) == dp.NormBallDomain(size=2, norm=1.0)


NEAR_SPHERE = (
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=5),
    st.sampled_from([0.0, 2.0**-60, -(2.0**-60), 2.0**-26, -(2.0**-26), 2.0**-24, -(2.0**-24), 2.0**-19]),
    st.sampled_from([1, 2]),
    st.sampled_from([1.0, 3.7, 1e-200, 1e200]),
)
"""A row, a relative offset from the sphere (both sides of the exact-decision band), p and the bound."""


@settings(max_examples=60, deadline=None)
@given(*NEAR_SPHERE)
def test_membership_agrees_with_exact_rationals_near_the_boundary(
    row: list[float], offset: float, p: int, bound: float
) -> None:
    """Rows placed within ±2**-19 of the sphere (both sides of the exact-decision band): the vectorised
    membership equals the exact rational answer."""
    x = np.array(row)
    norm = float(np.abs(x).sum()) if p == 1 else float(np.sqrt(np.square(x).sum()))
    if norm == 0:
        return
    scaled = x * (bound / norm) * (1 + offset)
    if not np.isfinite(scaled).all():
        return
    got = bool(exact_norm_within(scaled.reshape(1, -1), p, bound)[0])
    assert got == within(scaled, p, bound)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(*NEAR_SPHERE)
def test_membership_agrees_with_exact_rationals_near_the_boundary_thorough(
    row: list[float], offset: float, p: int, bound: float
) -> None:
    """test_membership_agrees_with_exact_rationals_near_the_boundary with its full 200 examples."""
    test_membership_agrees_with_exact_rationals_near_the_boundary.hypothesis.inner_test(row, offset, p, bound)
