"""Tests of the sparse vector technique and the interactive Laplace answerer.

The sparse vector's privacy claim is checked against the exact privacy loss of its released bit vectors:
for integer query values and discrete Laplace noise the probability of an answer vector is a sum over the
threshold noise z of products of closed-form tail probabilities, computed for |z| <= Z with the rest
bounded by the tail mass ``P[|ρ| > Z]`` (every term is at most ``P[ρ = z]``). That gives rigorous lower and
upper bounds on each probability, hence an upper bound on the true loss to compare with the map (and a
lower bound, to see how tight it is). Float rounding in these sums is below 1e-12 relative; a margin of
1e-10 on each probability covers it.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpcompose as dp
from dpcompose.measurements._interactive import (
    LaplaceAnswerer,
    SparseVector,
    SvtPlan,
    grid_index,
)
from dpcompose.measurements._sampling import BytesSource, RecordingSource, SeededSource

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


# ---------------------------------------------------------------------------------------------------------
# Sparse vector: exact privacy loss of the integer algorithm (enumeration with a rigorous tail bound)
# ---------------------------------------------------------------------------------------------------------

REL = 1e-10  # margin for float rounding in the sums below (actual error < 1e-12 relative)
Bounds = dict[tuple[bool, ...], tuple[float, float]]


def answer_vectors(length: int, c: int) -> Iterator[tuple[bool, ...]]:
    """Every answer prefix of up to ``length`` queries allowed by the halting rule (none after c Trues)."""
    for j in range(1, length + 1):
        for a in itertools.product((False, True), repeat=j):
            if sum(a[:-1]) < c:
                yield a


def answer_bounds(values: tuple[int, ...], threshold: int, t1: Fraction, t2: Fraction, c: int) -> Bounds:
    """Lower/upper bounds on P[answers = a] for integer query values (grid units), every allowed a.

    ``P[a] = Σ_z P[ρ = z] Π_i P[ν_i >= T + z - v_i]^{a_i} (1 - …)^{1 - a_i}`` with discrete Laplace pmfs
    ``P[x] = (1 - r)/(1 + r)·r^|x|``, ``r = e^(-1/t)``, and ``P[ν >= s] = r^s/(1 + r)`` for s >= 0,
    ``1 - r^(1-s)/(1 + r)`` for s < 0.
    """
    f1, f2 = float(t1), float(t2)
    zmax = math.ceil(80 * f1)
    z = np.arange(-zmax, zmax + 1)
    r1, r2 = math.exp(-1 / f1), math.exp(-1 / f2)
    weights = (1 - r1) / (1 + r1) * np.exp(-np.abs(z) / f1)
    tail = 2 * math.exp(-(zmax + 1) / f1) / (1 + r1)  # P[|ρ| > zmax]
    above = []
    for v in values:
        s = threshold + z - v
        upper = np.exp(-np.maximum(s, 0) / f2) / (1 + r2)
        lower = 1 - np.exp(-(1 - np.minimum(s, 0)) / f2) / (1 + r2)
        above.append(np.where(s >= 0, upper, lower))
    out: Bounds = {}
    for a in answer_vectors(len(values), c):
        terms = weights.copy()
        for p_above, bit in zip(above, a, strict=False):
            terms *= p_above if bit else 1 - p_above
        total = float(terms.sum())
        out[a] = (total * (1 - REL), (total + tail) * (1 + REL))
    return out


def loss_bounds(
    t1: Fraction, t2: Fraction, c: int, delta: int, length: int, span: int
) -> tuple[float, float]:
    """(upper, lower) bounds on the largest loss over query values in [-span, span]^length, each moved by
    -Δ, 0 or +Δ on the neighbour, and every answer vector (threshold 0)."""
    cache: dict[tuple[int, ...], Bounds] = {}

    def bounds(v: tuple[int, ...]) -> Bounds:
        if v not in cache:
            cache[v] = answer_bounds(v, 0, t1, t2, c)
        return cache[v]

    upper = lower = 0.0
    for v in itertools.product(range(-span, span + 1), repeat=length):
        for shift in itertools.product((-delta, 0, delta), repeat=length):
            here, there = bounds(v), bounds(tuple(x + y for x, y in zip(v, shift, strict=True)))
            for a, (lo, hi) in here.items():
                upper = max(upper, math.log(hi / there[a][0]))
                lower = max(lower, math.log(lo / there[a][1]))
    return upper, lower


def small_plan(t1: Fraction, c: int) -> SvtPlan:
    """The implementation's plan on the grid Z (k = 0) with a small threshold scale, t₂ = 2·c·t₁ as built."""
    return SvtPlan(k=0, threshold=0, threshold_noise=t1, query_noise=2 * c * t1, max_positive=c)


#: Every threshold scale and every (c, Δ) once by default; the other eight points of the 3 × 4 grid in the
#: slow run (~0.2-0.7 s each: 5³ query vectors, each against its 3³ neighbours).
SVT_DEFAULT = {(Fraction(1), 1, 1), (Fraction(1, 2), 1, 2), (Fraction(5, 2), 2, 1), (Fraction(1), 2, 2)}
SVT_GRID = [
    pytest.param(t1, c, delta, marks=() if (t1, c, delta) in SVT_DEFAULT else pytest.mark.slow)
    for c, delta in [(1, 1), (1, 2), (2, 1), (2, 2)]
    for t1 in [Fraction(1), Fraction(1, 2), Fraction(5, 2)]
]


@pytest.mark.parametrize(("t1", "c", "delta"), SVT_GRID)
def test_sparse_vector_map_bounds_the_exact_loss_of_the_integer_algorithm(
    t1: Fraction, c: int, delta: int
) -> None:
    plan = small_plan(t1, c)
    claimed = plan.epsilon(delta)  # Δ grid units = d_in on the grid Z
    assert claimed == 2 * delta / t1
    upper, lower = loss_bounds(plan.threshold_noise, plan.query_noise, c, delta, length=3, span=2)
    assert Fraction(upper) <= claimed
    assert lower >= 0.3 * float(claimed)  # the check is not vacuous: the loss is a sizeable part of ε


def test_exact_loss_check_catches_a_wrong_noise_scale_and_an_understated_sensitivity() -> None:
    """The enumeration can fail: query noise Lap(c·b) (the monotone-query variant used on general queries)
    or a sensitivity one step above the one the map assumes both exceed ε = 2Δ/t₁."""
    t1 = Fraction(1)
    _, lower = loss_bounds(t1, t1, 1, 1, length=3, span=2)
    assert lower > float(small_plan(t1, 1).epsilon(1))
    _, lower = loss_bounds(t1, 2 * t1, 1, 2, length=3, span=2)
    assert lower > float(small_plan(t1, 1).epsilon(1))


@pytest.mark.slow
@pytest.mark.parametrize("t1", [Fraction(1), Fraction(3, 2)])
def test_sparse_vector_exact_loss_longer_runs(t1: Fraction) -> None:
    for c, delta in [(1, 1), (2, 1), (3, 2)]:
        plan = small_plan(t1, c)
        upper, _ = loss_bounds(plan.threshold_noise, plan.query_noise, c, delta, length=4, span=3)
        assert Fraction(upper) <= plan.epsilon(delta)


def constant_query(value: int | float, domain: dp.Domain = INTS, metric: dp.Metric = SYM) -> Any:
    carrier = int if isinstance(value, int) else float
    return dp.make_user_transformation(
        domain,
        dp.AtomDomain(carrier),
        metric,
        dp.AbsoluteDistance(),
        lambda _: value,
        lambda d: Fraction(d),
        trusted=True,
    )


def test_sparse_vector_draws_the_analysed_distribution() -> None:
    """2,000 seeded runs (the slow twin: 6,000); the 5-standard-error bounds derived at that count."""
    _check_sparse_vector_distribution(2000)


@pytest.mark.slow
def test_sparse_vector_draws_the_analysed_distribution_thorough() -> None:
    _check_sparse_vector_distribution(6000)


def _check_sparse_vector_distribution(runs: int) -> None:
    """The queryable's answers follow the enumerated probabilities (seeded, so the verdict is fixed):
    0.5 rounds half up to 1 and -0.5 to 0 on the grid Z."""
    t1, c = Fraction(1), 2
    plan = small_plan(t1, c)
    queries = [constant_query(0.5), constant_query(-1), constant_query(-0.5)]
    expected = answer_bounds((1, -1, 0), 0, plan.threshold_noise, plan.query_noise, c)
    source, seen = SeededSource(11), Counter[tuple[bool, ...]]()
    for _ in range(runs):
        q = SparseVector([0], INTS, SYM, plan, source)
        answers: list[bool] = []
        for query in queries:
            if sum(answers) == c:
                break
            answers.append(q(query))
        seen[tuple(answers)] += 1
    finals = [a for a in expected if len(a) == 3 or sum(a) == c]
    assert sum(seen.values()) == runs and set(seen) <= set(finals)
    assert abs(sum(expected[a][0] for a in finals) - 1) < 1e-9
    for a in finals:
        p = expected[a][0]
        assert abs(seen[a] / runs - p) <= 5 * math.sqrt(p * (1 - p) / runs) + 1e-3, a


# ---------------------------------------------------------------------------------------------------------
# Sparse vector: the privacy map on the real grid, rounding, parameters
# ---------------------------------------------------------------------------------------------------------


@given(
    st.floats(min_value=1e-6, max_value=1e15, allow_nan=False, allow_infinity=False),
    st.integers(min_value=0, max_value=10**6),
    st.integers(min_value=1, max_value=50),
)
def test_sparse_vector_map_is_2_ceil_d_over_g_steps(scale: float, d_in: int, c: int) -> None:
    svt = dp.m.make_sparse_vector(INTS, SYM, threshold=0.0, scale=scale, max_positive=c)
    b = Fraction(scale)
    k = math.floor(math.log2(scale)) - 30
    if Fraction(2) ** (k + 30) > b:  # guard the float log2 at exact powers of two
        k -= 1
    if Fraction(2) ** (k + 31) <= b:
        k += 1
    g = Fraction(2) ** k
    steps = -(-Fraction(d_in) // g)
    assert svt.map(d_in) == 2 * steps * g / b
    assert svt.map(d_in) >= 2 * Fraction(d_in) / b
    if scale < 2.0**31:  # grid width <= 1: rounding costs nothing for integer distances
        assert svt.map(d_in) == 2 * Fraction(d_in) / b


@given(
    st.floats(min_value=-1e12, max_value=1e12, allow_nan=False, allow_infinity=False),
    st.floats(min_value=0, max_value=50, allow_nan=False, allow_infinity=False),
    st.integers(min_value=1, max_value=50),
    st.integers(min_value=-45, max_value=6),
)
def test_rounding_moves_values_m_apart_at_most_ceil_m_over_g_steps(
    a: float, frac: float, m: int, k: int
) -> None:
    """The integer sensitivity the map uses: values within m of each other land at most ⌈m/2**k⌉ apart."""
    b = float(Fraction(a) + Fraction(frac) * m / 50)  # within m of a (up to rounding of the float sum)
    if abs(Fraction(b) - Fraction(a)) > m:
        return
    steps = -(-Fraction(m) // Fraction(2) ** k)
    assert abs(grid_index(a, k) - grid_index(b, k)) <= steps
    ia = int(a)
    assert abs(grid_index(ia, k) - grid_index(ia + m, k)) <= steps


@given(
    st.floats(min_value=-1e9, max_value=1e9, allow_nan=False, allow_infinity=False),
    st.floats(min_value=1e-3, max_value=1e12, allow_nan=False, allow_infinity=False),
    st.integers(min_value=-5, max_value=5),
)
def test_integer_threshold_compares_exactly_like_the_real_one(
    threshold: float, scale: float, offset: int
) -> None:
    plan = SvtPlan.build(Fraction(threshold), Fraction(scale), 3)
    g = Fraction(2) ** plan.k
    s = plan.threshold + offset
    assert (s >= plan.threshold) == (s * g >= Fraction(threshold))
    assert plan.threshold_noise * g == Fraction(scale)
    assert plan.query_noise == 6 * plan.threshold_noise
    assert 2**30 <= plan.threshold_noise < 2**31


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"threshold": float("inf"), "scale": 1.0, "max_positive": 1}, "threshold="),
        ({"threshold": 0.0, "scale": float("nan"), "max_positive": 1}, "scale="),
        ({"threshold": 0.0, "scale": float("inf"), "max_positive": 1}, "scale="),
        ({"threshold": 0.0, "scale": -2.0, "max_positive": 1}, "scale="),
        ({"threshold": 0.0, "scale": 1.0, "max_positive": -1}, "max_positive="),
        ({"threshold": 0.0, "scale": 1.0, "max_positive": 1.5}, "max_positive="),
        ({"threshold": 0.0, "scale": 1.0, "max_positive": 1, "rng": 42}, "rng="),
    ],
)
def test_sparse_vector_more_bad_parameters(kwargs: dict[str, Any], fragment: str) -> None:
    with pytest.raises(dp.InvalidParameter, match=fragment):
        dp.m.make_sparse_vector(INTS, SYM, **kwargs)


def test_sparse_vector_needs_a_dataset_domain() -> None:
    with pytest.raises(dp.DomainMismatch, match="input_metric"):
        dp.m.make_sparse_vector(
            dp.AtomDomain(float), dp.AbsoluteDistance(), threshold=0.0, scale=1.0, max_positive=1
        )
    with pytest.raises(dp.DomainMismatch):
        dp.m.make_sparse_vector(dp.AtomDomain(int), SYM, threshold=0.0, scale=1.0, max_positive=1)


# ---------------------------------------------------------------------------------------------------------
# Sparse vector: no floats on the noise path, replay, refusals
# ---------------------------------------------------------------------------------------------------------


def run_answers(svt: Any, data: Any, queries: list[Any]) -> list[bool | str]:
    q = svt(data)
    out: list[bool | str] = []
    for query in queries:
        try:
            out.append(q(query))
        except dp.BudgetExceeded:
            out.append("halted")
    return out


def test_sparse_vector_answers_are_a_function_of_the_byte_stream() -> None:
    queries = [COUNT] * 12
    rec = RecordingSource(SeededSource(5))
    svt = dp.m.make_sparse_vector(INTS, SYM, threshold=10.0, scale=2.0, max_positive=3, rng=rec)
    first = run_answers(svt, list(range(10)), queries)
    assert {True, False} <= set(first)  # the seed gives a mix, so the replay below is informative
    replay = dp.m.make_sparse_vector(
        INTS, SYM, threshold=10.0, scale=2.0, max_positive=3, rng=BytesSource(rec.stream)
    )
    assert run_answers(replay, list(range(10)), queries) == first


def test_sparse_vector_ignores_bits_below_the_grid() -> None:
    """Query values with the same grid index give identical answers from the same bytes: the low bits of a
    float query value cannot reach the output (the float-noise attack has nothing to read)."""
    x = 10.0
    near = [math.nextafter(x, math.inf), math.nextafter(x, -math.inf), x + 2.0**-40]
    rec = RecordingSource(SeededSource(8))
    make = dp.m.make_sparse_vector
    first = run_answers(
        make(INTS, SYM, threshold=10.0, scale=2.0, max_positive=2, rng=rec), [0], [constant_query(x)] * 10
    )
    assert {True, False} <= set(first)
    for y in near:
        replay = make(INTS, SYM, threshold=10.0, scale=2.0, max_positive=2, rng=BytesSource(rec.stream))
        assert run_answers(replay, [0], [constant_query(y)] * 10) == first


def test_sparse_vector_seeded_generators_reproduce() -> None:
    def answers(seed: int) -> list[bool | str]:
        svt = dp.m.make_sparse_vector(
            INTS, SYM, threshold=10.0, scale=2.0, max_positive=2, rng=np.random.default_rng(seed)
        )
        return run_answers(svt, list(range(10)), [COUNT] * 8)

    assert answers(3) == answers(3)


def test_refused_queries_run_nothing_and_draw_nothing() -> None:
    calls: list[int] = []

    def counted(data: Any) -> int:
        calls.append(1)
        return len(data)

    query: Any = dp.make_user_transformation(
        INTS, dp.AtomDomain(int), SYM, dp.AbsoluteDistance(), counted, lambda d: Fraction(d), trusted=True
    )
    rec = RecordingSource(SeededSource(1))
    svt = dp.m.make_sparse_vector(INTS, SYM, threshold=-1e6, scale=1.0, max_positive=1, rng=rec)
    q = svt(list(range(5)))
    drawn = len(rec.stream)  # the threshold noise
    with pytest.raises(dp.InvalidParameter, match="Transformation"):
        q(len)
    assert len(rec.stream) == drawn and not calls
    assert q(query) is True  # 5 is far above -1e6
    drawn = len(rec.stream)
    with pytest.raises(dp.BudgetExceeded, match="halted after 1"):
        q(query)
    assert len(calls) == 1 and len(rec.stream) == drawn and q.queries_answered == 1


def test_non_finite_query_values_are_refused_before_noise() -> None:
    rec = RecordingSource(SeededSource(2))
    svt = dp.m.make_sparse_vector(INTS, SYM, threshold=0.0, scale=1.0, max_positive=1, rng=rec)
    q = svt([1])
    drawn = len(rec.stream)
    for bad in (float("nan"), float("inf")):
        with pytest.raises(dp.InvalidParameter, match="not a finite number"):
            q(constant_query(bad))
    wrong_type: Any = dp.make_user_transformation(
        INTS, dp.AtomDomain(float), SYM, dp.AbsoluteDistance(), lambda _: "1", lambda d: d, trusted=True
    )
    with pytest.raises(dp.DomainMismatch, match="not an int or float"):
        q(wrong_type)
    assert len(rec.stream) == drawn and q.queries_answered == 0
    assert q(constant_query(1e9)) is True  # the budget (one positive) is intact


def test_queries_must_match_the_domain() -> None:
    svt = dp.m.make_sparse_vector(INTS, SYM, threshold=0.0, scale=1.0, max_positive=1)
    q = svt([1, 2])
    with pytest.raises(dp.DomainMismatch, match="takes"):
        q(dp.t.make_count(INTS, dp.ChangeOneDistance()))
    label: Any = dp.make_user_transformation(
        INTS, dp.AtomDomain(str), SYM, dp.DiscreteDistance(), lambda _: "a", lambda d: d, trusted=True
    )
    with pytest.raises(dp.DomainMismatch, match="must output a number"):
        q(label)


def test_fixed_size_datasets_need_sensitivity_at_one_change() -> None:
    """On a fixed-size domain under SymmetricDistance neighbours are 2 apart, so map(1) <= 1 alone says
    nothing; a query 1-sensitive 'at d_in = 1' but jumping by 10 on one change is refused."""
    sized = dp.VectorDomain(dp.AtomDomain(int), size=5)
    sneaky: Any = dp.make_user_transformation(
        sized,
        dp.AtomDomain(int),
        SYM,
        dp.AbsoluteDistance(),
        sum,
        lambda d: Fraction(0 if d < 2 else 5 * d),
        trusted=True,
    )
    for m in (
        dp.m.make_sparse_vector(sized, SYM, threshold=0.0, scale=1.0, max_positive=1),
        dp.m.make_interactive_laplace(sized, SYM, scale=1.0, max_queries=1),
    ):
        with pytest.raises(dp.InvalidParameter, match="at d_in=2"):
            m([1, 2, 3, 4, 5])(sneaky)
    honest = dp.t.make_count(sized, SYM)
    assert isinstance(
        dp.m.make_sparse_vector(sized, SYM, threshold=0.0, scale=1.0, max_positive=1)([1, 2, 3, 4, 5])(
            honest
        ),
        bool,
    )


# ---------------------------------------------------------------------------------------------------------
# Interactive Laplace
# ---------------------------------------------------------------------------------------------------------


def test_interactive_laplace_releases_integers_without_float_rounding() -> None:
    """float(2**53 + 1) == 2**53: two counts 1 apart would be 2 apart after a float conversion, twice the
    sensitivity the map charges. Integer values go to the integer release untouched."""
    got: list[tuple[str, object]] = []

    def release(kind: str) -> Any:
        def record(value: object) -> float:
            got.append((kind, value))
            return 0.0

        return record

    answerer = LaplaceAnswerer([0], INTS, SYM, release("int"), release("float"), 3)
    answerer(constant_query(2**53 + 1))
    answerer(constant_query(0.25))
    assert got == [("int", 2**53 + 1), ("float", 0.25)]
    m = dp.m.make_interactive_laplace(INTS, SYM, scale=1.0, max_queries=1)
    assert isinstance(m([0])(constant_query(2**60 + 1)), float)


def test_interactive_laplace_charges_before_it_evaluates() -> None:
    """A query is paid for before it touches the data (issue 11, item 6): a value that breaks the query's
    contract (NaN here) is refused, but only after the charge, so what the refusal reveals is paid for."""
    q = dp.m.make_interactive_laplace(INTS, SYM, scale=1.0, max_queries=1)([0])
    with pytest.raises(dp.InvalidParameter, match="not a finite number"):
        q(constant_query(float("nan")))
    with pytest.raises(dp.BudgetExceeded, match="all 1 queries are used"):
        q(COUNT)
