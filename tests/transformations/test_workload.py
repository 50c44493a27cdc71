"""Workloads of counting queries and marginals: answers, and sensitivities equal to brute force over every
pair of neighbouring small datasets."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpcompose as dp
from dpcompose.errors import DomainMismatch, InvalidParameter

SYM = dp.SymmetricDistance()
CHG = dp.ChangeOneDistance()
METRICS = {"L1": dp.L1Distance(), "L2": dp.L2Distance(), "Linf": dp.LInfDistance()}


def multisets(universe: Sequence[Any], max_size: int) -> list[list[Any]]:
    return [
        list(c) for n in range(max_size + 1) for c in itertools.combinations_with_replacement(universe, n)
    ]


def observed(
    datasets: list[list[Any]],
    run: Callable[[list[Any]], Any],
    metric: str,
    change_one: bool,
    d: int,
) -> Fraction:
    """The largest output distance (squared for L2) over all pairs of datasets exactly d apart."""
    keyed = [(np.asarray(run(x), dtype=np.int64), _counter(x)) for x in datasets]
    best = 0
    for (a, ca), (b, cb) in itertools.combinations(keyed, 2):
        added = sum((cb - ca).values())  # records of b not in a (Counter subtraction keeps positives)
        removed = sum((ca - cb).values())
        if change_one:
            if sum(ca.values()) != sum(cb.values()) or added != d:
                continue
        elif added + removed != d:
            continue
        diff = (a - b).astype(object)
        if metric == "L1":
            value = sum(abs(v) for v in diff)
        elif metric == "L2":
            value = sum(v * v for v in diff)
        else:
            value = max((abs(v) for v in diff), default=0)
        best = max(best, int(value))
    return Fraction(best)


def _counter(x: list[Any]) -> Counter[str]:
    return Counter(map(repr, x))


def assert_exact(map_value: Fraction, worst: Fraction, metric: str) -> None:
    """The map equals the brute-force worst case (L2: the least 2**-64 multiple at or above its root)."""
    if metric != "L2":
        assert map_value == worst
        return
    assert map_value * map_value >= worst
    assert map_value == 0 or (map_value - Fraction(1, 1 << 64)) ** 2 < worst
    root = math.isqrt(int(worst))
    if root * root == worst:
        assert map_value == root


def assert_upper(map_value: Fraction, worst: Fraction, metric: str) -> None:
    assert (map_value * map_value if metric == "L2" else map_value) >= worst


CATS = ["a", "b", "c"]
CATEGORICAL = dp.VectorDomain(dp.CategoricalDomain(CATS))
DATASETS = multisets(CATS, 3)

matrices = st.integers(1, 3).flatmap(
    lambda k: st.lists(st.lists(st.integers(0, 1), min_size=3, max_size=3), min_size=k, max_size=k)
)


@settings(max_examples=25, deadline=None)
@given(matrix=matrices, metric=st.sampled_from(sorted(METRICS)), change_one=st.booleans())
def test_workload_matrix_sensitivity_is_exact(matrix: list[list[int]], metric: str, change_one: bool) -> None:
    w = dp.t.make_workload(CATEGORICAL, CHG if change_one else SYM, matrix, metric=METRICS[metric])
    for d in (1, 2):
        worst = observed(DATASETS, w, metric, change_one, d)
        assert_exact(w.map(d), worst, metric)
    assert w.map(0) == 0


def test_workload_answers_and_the_example_figures() -> None:
    a = np.array([[1, 1, 0], [0, 1, 1], [1, 1, 1]])
    w = dp.t.make_workload(CATEGORICAL, SYM, a)
    data = ["a", "c", "b", "b", "c"]
    hist = np.array([data.count(c) for c in CATS])
    assert w(data).tolist() == (a @ hist).tolist()
    assert w(np.array(data, dtype=object)).tolist() == (a @ hist).tolist()
    # columns a = (1,0,1), b = (1,1,1), c = (0,1,1): c = 3; a and c differ in two queries: s = 2
    assert w.map(2) == 6
    l2 = dp.t.make_workload(CATEGORICAL, SYM, a, metric=dp.L2Distance())
    assert l2.map(2) == Fraction(math.isqrt(12 << 128) + 1, 1 << 64)  # a rational just above 2·√3
    assert l2.map(2) ** 2 > 12 > (l2.map(2) - Fraction(1, 1 << 64)) ** 2
    assert dp.t.make_workload(CATEGORICAL, CHG, a).map(1) == 2
    assert dp.t.make_workload(CATEGORICAL, CHG, a, metric=dp.L2Distance()).map(2) == Fraction(
        math.isqrt(8 << 128) + 1, 1 << 64
    )
    assert dp.t.make_workload(CATEGORICAL, CHG, [[1, 1, 1]]).map(5) == 0  # every record counted alike


def test_predicates_on_categories_equal_their_matrix_and_failures_count_zero() -> None:
    preds = [lambda c: c != "a", lambda c: 1 / 0, lambda c: "yes", lambda c: np.bool_(c == "b")]
    w = dp.t.make_workload(CATEGORICAL, CHG, preds, metric=dp.L2Distance())
    m = dp.t.make_workload(
        CATEGORICAL, CHG, [[0, 1, 1], [0, 0, 0], [1, 1, 1], [0, 1, 0]], metric=dp.L2Distance()
    )
    for x in DATASETS[:30]:
        assert w(x).tolist() == m(x).tolist()
    assert w.map(3) == m.map(3)


def test_predicates_count_by_truthiness_on_every_domain() -> None:
    # a truthy answer that is not a bool (1, numpy ints, numpy.True_) counts, as Python's `if` reads it;
    # an answer without a truth value (an array of two) counts 0, never an exception
    preds = [
        lambda r: 1 if r != "a" else 0,
        lambda r: np.int64(r == "b"),
        lambda r: np.True_,
        lambda r: np.array([True, True]),
        lambda r: None,
    ]
    data = ["a", "b", "c", "b"]
    expected = [3, 2, 4, 0, 0]
    assert dp.t.make_workload(CATEGORICAL, SYM, preds)(data).tolist() == expected
    records = dp.VectorDomain(dp.AtomDomain(str))
    assert dp.t.make_workload(records, SYM, preds)(data).tolist() == expected
    kept = dp.t.make_subset_by(records, SYM, preds[0])(data)
    assert list(kept) == ["b", "c", "b"]


@settings(max_examples=10, deadline=None)
@given(change_one=st.booleans(), metric=st.sampled_from(sorted(METRICS)))
def test_predicates_on_other_domains_are_bounded_by_k(change_one: bool, metric: str) -> None:
    preds = [lambda x: x > 0, lambda x: 10 // x > 3, lambda x: x % 2 == 0]
    ints = dp.VectorDomain(dp.AtomDomain(int))
    w = dp.t.make_workload(ints, CHG if change_one else SYM, preds, metric=METRICS[metric])
    data = multisets([-2, 0, 1, 2, 7], 3)
    for d in (1, 2):
        assert_upper(w.map(d), observed(data, w, metric, change_one, d), metric)
    assert w([0, 1, 2, 7, -2]).tolist() == [3, 2, 3]
    assert w(np.array([0, 1], dtype=np.int64)).tolist() == [1, 1, 1]


def test_workload_chains_onto_noise_and_selection() -> None:
    w1 = dp.t.make_workload(CATEGORICAL, SYM, [[1, 1, 0], [0, 1, 1]])
    lap = w1 >> dp.m.make_laplace(w1.output_domain, w1.output_metric, scale=4.0)
    assert lap.map(1) == Fraction(1, 2)
    w2 = dp.t.make_workload(CATEGORICAL, SYM, [[1, 0, 0], [0, 1, 1]], metric=dp.L2Distance())
    gauss = w2 >> dp.m.make_gaussian(w2.output_domain, w2.output_metric, scale=2.0)
    assert gauss.map(1) > 0
    wi = dp.t.make_workload(CATEGORICAL, SYM, [[1, 0, 0], [0, 1, 1]], metric=dp.LInfDistance())
    err = wi >> dp.t.make_workload_error(wi.output_domain, wi.output_metric, [10, 0])
    assert err(["a", "b"]).tolist() == [9, 1]
    pick = err >> dp.m.make_report_noisy_max(err.output_domain, err.output_metric, scale=2.0)
    assert pick.map(1) == 1
    assert pick(["b"] * 1000) == 1


def test_workload_error_is_one_lipschitz() -> None:
    dom = dp.VectorDomain(dp.AtomDomain(int), size=2)
    err = dp.t.make_workload_error(dom, dp.L1Distance(), [3, -(2**70)])
    assert err([2**63 - 1, 0]).tolist() == [2**63 - 4, 2**63 - 1]  # saturated, never an overflow
    rng = np.random.default_rng(1)
    for _ in range(200):
        a, b = rng.integers(-20, 20, size=2), rng.integers(-20, 20, size=2)
        assert np.abs(err(a) - err(b)).sum() <= np.abs(a - b).sum()


RECORD_UNIVERSE = [(u, v) for u in (0, 1, 9) for v in ("x", "y", "z")]
MARGINAL_CATS = {0: [0, 1], 1: ["x", "y"]}
ALL_MARGINALS = [(0,), (1,), (0, 1), (1, 0)]


@settings(max_examples=20, deadline=None)
@given(
    chosen=st.lists(st.sampled_from(ALL_MARGINALS), min_size=1, max_size=3, unique=True),
    metric=st.sampled_from(sorted(METRICS)),
    change_one=st.booleans(),
)
def test_marginals_sensitivity_is_exact(chosen: list[tuple[int, ...]], metric: str, change_one: bool) -> None:
    rows = dp.VectorDomain(dp.AtomDomain(tuple))
    marg = dp.t.make_marginals(
        rows, CHG if change_one else SYM, chosen, MARGINAL_CATS, metric=METRICS[metric]
    )
    data = multisets(RECORD_UNIVERSE, 2)
    for d in (1, 2):
        worst = observed(data, marg, metric, change_one, d)
        assert_exact(marg.map(d), worst, metric)
    t = len(chosen)
    expected_l1 = 2 * t if change_one else t
    if metric == "L1":
        assert marg.map(1) == expected_l1


def test_marginals_counts_and_tables() -> None:
    rows = dp.VectorDomain(dp.AtomDomain(dict))
    cats = {"a": ["x", "y"], "b": [0, 1, 2]}
    marg = dp.t.make_marginals(rows, SYM, [("a",), ("a", "b")], cats)
    data = [{"a": "x", "b": 2}, {"a": "y", "b": True}, {"b": 0}, {"a": "y", "b": 1}]
    out = marg(data)
    assert out.tolist() == [1, 2, 0, 0, 1, 0, 1, 0]
    tables = dp.t.marginal_tables(out, [("a",), ("a", "b")], cats)
    assert tables[("a", "b")].tolist() == [[0, 0, 1], [0, 1, 0]]
    assert marg.output_domain == dp.VectorDomain(dp.AtomDomain(int), size=8)


def test_marginals_per_user_through_contribution_bounds() -> None:
    rows = dp.VectorDomain(dp.AtomDomain(tuple))
    bound = dp.t.make_bound_contributions(rows, dp.SymmetricIdDistance(0), id_key=0, max_rows=3)
    marg = bound >> dp.t.make_marginals(
        bound.output_domain,
        bound.output_metric,
        [(1,), (1, 2)],
        {1: ["x", "y"], 2: [0, 1]},
        metric=dp.L2Distance(),
    )
    assert marg.map(1) == 3 * Fraction(math.isqrt(2 << 128) + 1, 1 << 64)
    # one person with many identical rows: 3 kept, each counted once in both tables
    worst = np.abs(marg([("u", "x", 0)] * 10) - marg([])).astype(np.int64)
    assert int((worst * worst).sum()) == 18 and Fraction(18) <= marg.map(1) ** 2


@pytest.mark.parametrize(
    ("call", "error", "text"),
    [
        (lambda: dp.t.make_workload(CATEGORICAL, SYM, [[1, 2, 0]]), InvalidParameter, "0 and 1"),
        (lambda: dp.t.make_workload(CATEGORICAL, SYM, [[1.0, 0, 0]]), InvalidParameter, "0 and 1"),
        (lambda: dp.t.make_workload(CATEGORICAL, SYM, [[1, 0]]), InvalidParameter, "columns"),
        (lambda: dp.t.make_workload(CATEGORICAL, SYM, []), InvalidParameter, "queries"),
        (lambda: dp.t.make_workload(CATEGORICAL, SYM, [abs, 3]), InvalidParameter, "mixes"),
        (
            lambda: dp.t.make_workload(dp.VectorDomain(dp.AtomDomain(int)), SYM, [[1]]),
            DomainMismatch,
            "CategoricalDomain",
        ),
        (
            lambda: dp.t.make_workload(CATEGORICAL, SYM, [[1, 0, 0]], metric=dp.LInfDistance(monotonic=True)),
            InvalidParameter,
            "monotonic",
        ),
        (
            lambda: dp.t.make_workload(CATEGORICAL, dp.L1Distance(), [[1, 0, 0]]),
            DomainMismatch,
            "input_metric",
        ),
        (
            lambda: dp.t.make_marginals(dp.VectorDomain(dp.AtomDomain(tuple)), SYM, [(0,)], {0: [0.5, 1.5]}),
            InvalidParameter,
            "float",
        ),
        (
            lambda: dp.t.make_marginals(dp.VectorDomain(dp.AtomDomain(float)), SYM, [(0,)], {0: [0, 1]}),
            DomainMismatch,
            "records with columns",
        ),
        (
            lambda: dp.t.make_marginals(dp.VectorDomain(dp.AtomDomain(tuple)), SYM, [0], {0: [0, 1]}),  # type: ignore[list-item]
            InvalidParameter,
            "columns[0]",
        ),
        (
            lambda: dp.t.make_marginals(dp.VectorDomain(dp.AtomDomain(tuple)), SYM, [(0, 1)], {0: [0, 1]}),
            InvalidParameter,
            "column 1",
        ),
        (lambda: dp.t.marginal_tables([1, 2, 3], [(0,)], {0: [0, 1]}), InvalidParameter, "release"),
        (
            lambda: dp.t.make_workload_error(
                dp.VectorDomain(dp.AtomDomain(int), size=2),
                dp.L1Distance(),
                [1.5, 0],  # type: ignore[list-item]
            ),
            InvalidParameter,
            "reference",
        ),
    ],
)
def test_bad_inputs_are_refused_clearly(call: Callable[[], Any], error: type[Exception], text: str) -> None:
    with pytest.raises(error, match=None) as info:
        call()
    assert text in str(info.value)


def test_spread_is_exact_by_blocks_and_bounded_beyond_the_exact_limit() -> None:
    rng = np.random.default_rng(3)
    matrix = rng.integers(0, 2, size=(14, 700))
    cats = dp.VectorDomain(dp.CategoricalDomain(list(range(700))))
    w = dp.t.make_workload(cats, CHG, matrix)
    diffs = (matrix[:, :, None] != matrix[:, None, :]).sum(axis=0)
    assert w.map(1) == int(diffs.max())  # exact over 700 columns, in blocks of 256
    wide = np.array([[(j >> i) & 1 for j in range(1 << 13)] for i in range(13)])  # 8192 distinct columns
    big = dp.t.make_workload(dp.VectorDomain(dp.CategoricalDomain(list(range(1 << 13)))), CHG, wide)
    assert big.map(1) == 13  # min(2c, k): here also the truth (column 0 vs column 2**13 − 1)


def test_the_error_of_monotone_answers_is_not_monotone() -> None:
    """|v − r| turned a monotonic L∞ input into errors moving both ways ([4, 5] → [5, 6] against [5, 5]:
    errors [1, 0] → [0, 1]), yet kept LInfDistance(monotonic=True): report noisy max then reported ε = 1
    where the truth is 2."""
    answers = dp.VectorDomain(dp.AtomDomain(int), size=2)
    err = dp.t.make_workload_error(answers, dp.LInfDistance(monotonic=True), [5, 5])
    assert err.output_metric == dp.LInfDistance()
    assert err([4, 5]).tolist() == [1, 0] and err([5, 6]).tolist() == [0, 1]
    pick = err >> dp.m.make_report_noisy_max(err.output_domain, err.output_metric, scale=1.0)
    assert pick.map(1) == 2


def _marginal_errors_worst_case(
    chosen: list[tuple[int, ...]], weights: list[int], change_one: bool, ds: tuple[int, ...]
) -> None:
    """The L∞ map of the weighted marginal errors is the brute-force worst case over every pair of
    neighbouring datasets of up to 2 records, under references that let it be attained (a change moves a
    unit from an over-estimated cell to an under-estimated one)."""
    rows = dp.VectorDomain(dp.AtomDomain(tuple))
    shapes = [tuple(2 for _ in m) for m in chosen]  # every MARGINAL_CATS column has 2 categories
    w = weights[: len(chosen)]
    metric = CHG if change_one else SYM
    data = multisets(RECORD_UNIVERSE, 2)
    worst = dict.fromkeys(ds, Fraction(0))
    for pattern in (0, 1, 2):
        reference = [
            (np.indices(s).sum(axis=0) % 2 == pattern % 2).astype(np.int64) * 4 * (pattern > 0)
            for s in shapes
        ]
        err = dp.t.make_marginal_errors(
            rows, metric, chosen, MARGINAL_CATS, reference, weights=w, offsets=[5] * len(chosen)
        )
        for d in ds:
            worst[d] = max(worst[d], observed(data, err, "Linf", change_one, d))
    for d in ds:
        assert err.map(d) == worst[d]
    marg = dp.t.make_marginals(rows, SYM, chosen, MARGINAL_CATS)
    for x in data[:20]:
        tables = dp.t.marginal_tables(marg(x), chosen, MARGINAL_CATS)
        expected = [
            wi * int(np.abs(tables[m] - ref.reshape(tables[m].shape)).sum()) - 5
            for m, wi, ref in zip(chosen, w, reference, strict=True)
        ]
        assert err(x).tolist() == expected


@pytest.mark.parametrize("change_one", [False, True])
def test_marginal_errors_sensitivity_is_exact(change_one: bool) -> None:
    _marginal_errors_worst_case([(1,), (0, 1)], [2, 3], change_one, (1,))


@pytest.mark.slow
@settings(max_examples=20, deadline=None)
@given(
    chosen=st.lists(st.sampled_from(ALL_MARGINALS), min_size=1, max_size=3, unique=True),
    weights=st.lists(st.integers(1, 3), min_size=3, max_size=3),
    change_one=st.booleans(),
)
def test_marginal_errors_sensitivity_is_exact_thoroughly(
    chosen: list[tuple[int, ...]], weights: list[int], change_one: bool
) -> None:
    _marginal_errors_worst_case(chosen, weights, change_one, (1, 2))


def test_marginal_errors_refuse_malformed_references() -> None:
    rows = dp.VectorDomain(dp.AtomDomain(tuple))
    cols, cats = [(0,), (0, 1)], MARGINAL_CATS
    ok = [np.zeros(2, dtype=np.int64), np.zeros((2, 2), dtype=np.int64)]
    with pytest.raises(InvalidParameter, match="round a float estimate"):
        dp.t.make_marginal_errors(rows, SYM, cols, cats, [np.zeros(2), ok[1]])
    with pytest.raises(InvalidParameter, match="shape"):
        dp.t.make_marginal_errors(rows, SYM, cols, cats, [ok[0], np.zeros((4, 1), dtype=np.int64)])
    with pytest.raises(InvalidParameter, match="2 tables"):
        dp.t.make_marginal_errors(rows, SYM, cols, cats, ok[:1])
    with pytest.raises(InvalidParameter, match="weights"):
        dp.t.make_marginal_errors(rows, SYM, cols, cats, ok, weights=[0, 1])
    bad_offsets: Any = [1.5, 0]
    with pytest.raises(InvalidParameter, match="offsets"):
        dp.t.make_marginal_errors(rows, SYM, cols, cats, ok, offsets=bad_offsets)
    with pytest.raises(InvalidParameter, match="2\\*\\*53"):
        dp.t.make_marginal_errors(rows, SYM, cols, cats, [np.array([2**60, 0]), ok[1]])


def test_category_codes_give_the_records_marginals_vectorised() -> None:
    """Marginals of the codes equal the marginals of the records (missing, undeclared and ``True`` for
    ``1`` all code to -1), and the integer-array path equals the per-record path on its ``tolist()``."""
    rng = np.random.default_rng(3)
    cats = {"a": [0, 1, 2], "b": ["x", "y"], "c": [1, -7, 2**40]}
    values: dict[str, list[Any]] = {
        "a": [0, 1, 2, 3, True, None],
        "b": ["x", "y", "z", 0],
        "c": [1, -7, 2**40, 5, 1.0],
    }
    records: list[dict[str, Any]] = []
    for _ in range(300):
        record = {k: v[int(rng.integers(len(v)))] for k, v in values.items()}
        if rng.random() < 0.1:
            del record["b"]
        records.append(record)
    rows = dp.VectorDomain(dp.AtomDomain(dict))
    codes = dp.t.make_category_codes(rows, SYM, cats)
    assert codes.map(3) == 3 and dp.t.make_category_codes(rows, CHG, cats).map(2) == 2
    coded = codes(records)
    assert coded.shape == (300, 3) and coded.dtype == np.int64
    cols = [("a",), ("b", "c"), ("a", "b", "c")]
    by_index = {0: [0, 1, 2], 1: [0, 1], 2: [0, 1, 2]}
    index_cols = [(0,), (1, 2), (0, 1, 2)]
    direct = dp.t.make_marginals(rows, SYM, cols, cats)(records)
    via_codes = dp.t.make_marginals(codes.output_domain, SYM, index_cols, by_index)
    assert via_codes(coded).tolist() == direct.tolist()
    lists = dp.t.make_marginals(dp.VectorDomain(dp.AtomDomain(list)), SYM, index_cols, by_index)
    assert lists(coded.tolist()).tolist() == direct.tolist()
    assert codes([]).shape == (0, 3)
    # int arrays: negative positions, bools, huge and out-of-range categories agree with the lists
    matrix = rng.integers(-3, 4, size=(50, 3))
    odd = {-1: [0, 1, -3, 2**70], 0: [True, 2, 3], 5: [0]}
    spec = [(-1,), (0,), (5,), (0, -1)]
    arrays = dp.t.make_marginals(dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(int), size=3)), SYM, spec, odd)
    assert (
        arrays(matrix).tolist()
        == dp.t.make_marginals(dp.VectorDomain(dp.AtomDomain(list)), SYM, spec, odd)(matrix.tolist()).tolist()
    )
