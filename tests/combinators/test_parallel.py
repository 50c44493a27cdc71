from __future__ import annotations

import itertools
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpcompose as dp
from dpcompose.combinators._parallel import EXACT_LIMIT, worst_allocation

ROWS = dp.VectorDomain(dp.AtomDomain(str))
SYM, CHG = dp.SymmetricDistance(), dp.ChangeOneDistance()


def _laplace_count(scale: float) -> dp.Measurement:  # type: ignore[type-arg]
    return dp.t.make_count(ROWS, SYM) >> dp.m.make_laplace(
        dp.AtomDomain(int), dp.AbsoluteDistance(), scale=scale
    )


def _gaussian_count(scale: float) -> dp.Measurement:  # type: ignore[type-arg]
    return dp.t.make_count(ROWS, SYM) >> dp.m.make_gaussian(
        dp.AtomDomain(int), dp.AbsoluteDistance(), scale=scale
    )


def brute_force(children: list[dp.Measurement], total: int) -> Fraction:  # type: ignore[type-arg]
    """Max over every way ``total`` changed records can fall into the parts."""
    best = Fraction(0)
    for alloc in itertools.product(range(total + 1), repeat=len(children)):
        if sum(alloc) == total:
            best = max(best, sum((c.map(k) for c, k in zip(children, alloc, strict=True)), Fraction(0)))
    return best


@given(
    st.lists(st.sampled_from([1.0, 2.0, 4.0, 0.5]), min_size=1, max_size=4),
    st.integers(0, 4),
    st.booleans(),
    st.booleans(),
)
def test_parallel_map_is_brute_force_worst_case(
    scales: list[float], d_in: int, change_one: bool, gaussian: bool
) -> None:
    metric = CHG if change_one else SYM
    part = dp.t.make_partition(ROWS, metric, by=lambda r: r[:1], keys="abcd"[: len(scales)])
    children = [(_gaussian_count if gaussian else _laplace_count)(s) for s in scales]
    total = d_in * (2 if change_one else 1)
    assert dp.make_parallel(part, children).map(d_in) == brute_force(children, total)


def test_add_remove_one_is_max_and_change_one_composes_two_largest() -> None:
    part_sym = dp.t.make_partition(ROWS, SYM, by=0, keys="abc")
    part_chg = dp.t.make_partition(ROWS, CHG, by=0, keys="abc")
    children = [_laplace_count(s) for s in (1.0, 2.0, 4.0)]
    assert dp.make_parallel(part_sym, children).map(1) == 1  # max
    assert dp.make_parallel(part_chg, children).map(1) == 2  # part a at distance 2 beats 1 + 1/2


def test_zcdp_children_are_not_linear() -> None:
    part = dp.t.make_partition(ROWS, SYM, by=0, keys="ab")
    g = _gaussian_count(1.0)
    # three records in one part cost (3)²/2 = 9/2, more than 3 × 1/2: linear scaling would under-report
    assert dp.make_parallel(part, [g, g]).map(3) == Fraction(9, 2)


def test_parallel_runs_each_child_on_its_part() -> None:
    part = dp.t.make_partition(ROWS, SYM, by=0, keys="ab")
    count = dp.t.make_count(ROWS, SYM)
    exact_counts = dp.make_user_measurement(
        ROWS, SYM, dp.PureDP(), count.function, lambda d: Fraction(0), trusted=True
    )
    out = dp.make_parallel(part, [exact_counts, exact_counts])(["apple", "avocado", "banana", "cherry"])
    assert out == (2, 1)


def test_parallel_rejects_bad_shapes() -> None:
    part = dp.t.make_partition(ROWS, SYM, by=0, keys="ab")
    with pytest.raises(dp.InvalidParameter, match="2 parts but 1"):
        dp.make_parallel(part, [_laplace_count(1.0)])
    with pytest.raises(dp.UnsupportedComposition):
        dp.make_parallel(part, [_laplace_count(1.0), _gaussian_count(1.0)])
    with pytest.raises(dp.InvalidParameter, match="make_partition"):
        dp.make_parallel(dp.t.make_count(ROWS, SYM), [_laplace_count(1.0)])


def test_partition_rejects_bad_keys() -> None:
    with pytest.raises(dp.InvalidParameter, match="distinct"):
        dp.t.make_partition(ROWS, SYM, by=0, keys="aa")
    with pytest.raises(dp.InvalidParameter, match="empty"):
        dp.t.make_partition(ROWS, SYM, by=0, keys=[])
    nan = float("nan")  # (found by review: [nan, nan] passed as two distinct keys, matched by identity)
    for keys in ([nan, 1.0], [nan, nan]):
        with pytest.raises(dp.InvalidParameter, match="NaN"):
            dp.t.make_partition(ROWS, SYM, by=0, keys=keys)
    # a signaling NaN raises on comparison: it escaped as decimal.InvalidOperation (found by the fuzzer)
    from decimal import Decimal

    with pytest.raises(dp.InvalidParameter, match="NaN"):
        dp.t.make_partition(ROWS, SYM, by=0, keys=[Decimal("sNaN"), "b"])


def test_worst_allocation_small_cases() -> None:
    assert worst_allocation([lambda k: Fraction(k)], 0) == 0
    assert worst_allocation([lambda k: Fraction(k * k), lambda k: Fraction(3 * k)], 2) == 6


def _brute_worst(tables: list[list[Fraction]], total: int) -> Fraction:
    best = Fraction(0)
    for alloc in itertools.product(range(total + 1), repeat=len(tables)):
        if sum(alloc) <= total:
            best = max(best, sum((t[k] for t, k in zip(tables, alloc, strict=True)), Fraction(0)))
    return best


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 6), min_size=4, max_size=4), min_size=1, max_size=3),
    st.sampled_from(["convex", "concave", "any"]),
    st.integers(0, 4),
    st.integers(1, 3),
)
def test_worst_allocation_matches_brute_force(
    raw: list[list[int]], shape: str, total: int, repeat: int
) -> None:
    """Convex, concave and arbitrary maps (as cumulative sums of sorted or unsorted increments), some
    repeated (the same function object), against enumeration of every allocation."""
    tables = []
    for increments in raw:
        steps = sorted(increments) if shape == "convex" else sorted(increments, reverse=True)
        steps = increments if shape == "any" else steps
        tables.append([Fraction(sum(steps[:k])) for k in range(5)])
    maps = [(lambda k, t=t: t[k]) for t in tables]
    repeated = [f for f in maps for _ in range(repeat)]
    assert worst_allocation(repeated, total) == _brute_worst(
        [t for t in tables for _ in range(repeat)], total
    )


def test_parallel_map_is_fast_at_large_d_in() -> None:
    """Regression (issue 11 item 15): 3,000 changed records took 11 s (O(m·d²)); linear maps now take
    one evaluation per k. Not a timing assertion: it counts map evaluations."""
    calls: list[int] = []

    def linear(k: int) -> Fraction:
        calls.append(k)
        return Fraction(k, 2)

    assert worst_allocation([linear] * 50, 3000) == 1500
    assert len(calls) == 3000


# --- issue 32 item 9: the map at a large d_in, in closed form -----------------------------------------

FLOATS = dp.VectorDomain(dp.AtomDomain(float))


def _float_sum_laplace(scale: float) -> dp.Measurement:  # type: ignore[type-arg]
    """A bounded float sum: its map is affine in d_in (a constant rounding term), not linear."""
    clamp = dp.t.make_clamp(FLOATS, SYM, (0.0, 10.0))
    total = clamp >> dp.t.make_sum(clamp.output_domain, clamp.output_metric, max_size=1000)
    return total >> dp.m.make_laplace(total.output_domain, total.output_metric, scale=scale)


def _gaussian_approx(scale: float) -> dp.Measurement:  # type: ignore[type-arg]
    return dp.make_zcdp_to_approx(_gaussian_count(scale), delta=1e-6)


def _threshold(scale: float) -> dp.Measurement:  # type: ignore[type-arg]
    counts = dp.t.make_count_by(ROWS, SYM)
    return counts >> dp.m.make_laplace_threshold(
        counts.output_domain, counts.output_metric, scale=scale, threshold=80.0
    )


def _coordinate(child: dp.Measurement, i: int) -> Callable[[int], Fraction]:  # type: ignore[type-arg]
    return lambda k: child.map(k)[i]


def _old_map(children: list[dp.Measurement], total: int) -> Any:  # type: ignore[type-arg]
    """The exact worst case over allocations of the children's own maps (the computation before the
    closed form, as make_parallel ran it for every d_in)."""
    if isinstance(children[0].output_measure, dp.ApproxDP):
        return tuple(worst_allocation([_coordinate(c, i) for c in children], total) for i in (0, 1))
    return worst_allocation([c.map for c in children], total)


CHILD_SETS = {
    "laplace": lambda: [_laplace_count(s) for s in (1.0, 2.0, 0.5)],
    "laplace-repeated": lambda: [_laplace_count(2.0)] * 3,
    "gaussian": lambda: [_gaussian_count(s) for s in (1.0, 2.0, 4.0)],
    "gaussian-approx": lambda: [_gaussian_approx(s) for s in (1.0, 3.0, 3.0)],
}


@pytest.mark.parametrize("children", CHILD_SETS, ids=list(CHILD_SETS))
@pytest.mark.parametrize("metric", [SYM, CHG], ids=["add-remove", "change-one"])
def test_map_equals_the_exact_worst_case_for_small_d_in(children: str, metric: dp.Metric) -> None:
    parts = CHILD_SETS[children]()
    part = dp.t.make_partition(ROWS, metric, by=0, keys="abc")
    parallel = dp.make_parallel(part, parts)
    for d_in in range(13):
        total = part.map(d_in)
        assert parallel.map(d_in) == _old_map(parts, total), (children, d_in)


@pytest.mark.parametrize("metric", [SYM, CHG], ids=["add-remove", "change-one"])
def test_affine_children_map_equals_the_exact_worst_case(metric: dp.Metric) -> None:
    """Float sums (affine maps: the closed form does not decide) take the exact worst case."""
    part = dp.t.make_partition(FLOATS, metric, by=lambda x: x > 5, keys=[True, False])
    parts = [_float_sum_laplace(5.0), _float_sum_laplace(2.0)]
    parallel = dp.make_parallel(part, parts)
    for d_in in range(13):
        assert parallel.map(d_in) == _old_map(parts, part.map(d_in)), d_in


@pytest.mark.parametrize("metric", [SYM, CHG], ids=["add-remove", "change-one"])
def test_large_d_in_takes_two_evaluations_per_child(metric: dp.Metric) -> None:
    """d_in = 10⁶ and 10¹² records: the closed form evaluates each distinct child's map twice (the
    exact worst case evaluated it at every k ≤ total: over 8 s at 10⁶). It counts calls, not time."""
    calls: list[int] = []

    def linear(d: int) -> Fraction:
        calls.append(d)
        if len(calls) > 100:
            raise AssertionError(f"the child's map was evaluated {len(calls)} times")
        return Fraction(d, 4)

    count = dp.t.make_count(ROWS, SYM)
    child = dp.make_user_measurement(ROWS, SYM, dp.PureDP(), count.function, linear, trusted=True)
    part = dp.t.make_partition(ROWS, metric, by=0, keys="abcd")
    factor = 2 if metric == CHG else 1
    assert dp.make_parallel(part, [child] * 4).map(10**6) == Fraction(factor * 10**6, 4)
    assert len(calls) <= 2
    laplace = dp.make_parallel(part, [_laplace_count(2.0), _laplace_count(4.0)] * 2)
    gaussian = dp.make_parallel(part, [_gaussian_count(2.0), _gaussian_count(1.0)] * 2)
    for d_in in (10**6, 10**12):
        total = factor * d_in
        assert laplace.map(d_in) == Fraction(total, 2)
        assert gaussian.map(d_in) == Fraction(total * total, 2)


def test_a_map_above_group_privacy_is_bounded_by_group_privacy() -> None:
    """A child whose own map exceeds group privacy at k records (k² for a pure ε at one record): the
    closed form returns the group-privacy bound k·ε, valid and below the worst case of its own maps."""
    count = dp.t.make_count(ROWS, SYM)
    square: dp.Measurement = dp.make_user_measurement(  # type: ignore[type-arg]
        ROWS, SYM, dp.PureDP(), count.function, lambda d: Fraction(d * d), trusted=True
    )
    part = dp.t.make_partition(ROWS, SYM, by=0, keys="ab")
    parallel = dp.make_parallel(part, [square, square])
    assert parallel.map(3) == 3 < _old_map([square, square], 3) == 9
    # (ε, δ): the threshold mechanism's δ at k records exceeds δ·Σ_{j<k} e^{jε}
    thresholds = [_threshold(2.0), _threshold(4.0)]
    approx = dp.make_parallel(part, thresholds)
    for d_in in range(2, 6):
        eps, delta = approx.map(d_in)
        one = [t.map(1) for t in thresholds]
        assert (eps, delta) == (
            max(dp.accounting.group(e, d, d_in)[0] for e, d in one),
            max(dp.accounting.group(e, d, d_in)[1] for e, d in one),
        )
        old_eps, old_delta = _old_map(thresholds, d_in)
        assert eps <= old_eps and delta <= old_delta


def test_beyond_the_exact_limit_without_a_closed_form_is_refused() -> None:
    part = dp.t.make_partition(FLOATS, SYM, by=lambda x: x > 5, keys=[True, False])
    parallel = dp.make_parallel(part, [_float_sum_laplace(5.0), _float_sum_laplace(2.0)])
    with pytest.raises(dp.InvalidParameter, match=r"d_in=1000000: .*EXACT_LIMIT.*make_group"):
        parallel.map(10**6)
    with pytest.raises(dp.InvalidParameter, match="EXACT_LIMIT"):
        parallel.map(EXACT_LIMIT // 2 + 1)  # two distinct children: just above the limit
    assert parallel.map(100) > 0  # below it: the exact worst case (compared above)
