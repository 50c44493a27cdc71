"""Contract: a transformation or mechanism never raises on data inside its input domain.

An exception is an output no privacy map accounts for (issue 11, item 6): it can reveal a dataset's
size, a record's magnitude, or anything else the code branches on. This test enumerates every public
constructor of ``dp.t`` and ``dp.m`` (a constructor it does not know makes it fail, so new ones get a
case), builds each in several configurations, and feeds it hypothesis-generated members of its input
domain — extreme magnitudes, subnormals, −0.0, huge integers, empty and oversize datasets, numpy arrays.
Interactive mechanisms are also asked a query.
"""

from __future__ import annotations

import copy
import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpcompose as dp

SYM = dp.SymmetricDistance()
CHG = dp.ChangeOneDistance()
ABS = dp.AbsoluteDistance()
L1 = dp.L1Distance()
L2 = dp.L2Distance()


def atoms(domain: dp.AtomDomain) -> st.SearchStrategy[Any]:
    """Members of an atom domain, biased toward the extremes."""
    if domain.carrier is int:
        if domain.bounds is not None:
            lo, hi = domain.bounds
            return st.one_of(st.integers(lo, hi), st.sampled_from([lo, hi]))
        return st.one_of(
            st.integers(),
            st.integers(-(2**70), 2**70),
            st.sampled_from([2**53 + 1, 2**60 + 129, 2**63 - 1, -(2**63), 2**64, 2**1024 + 1, -(2**1100)]),
        )
    if domain.carrier is str:
        return st.one_of(st.text(max_size=4), st.sampled_from(["a", "b", "a\x00", "é", ""]))
    if domain.carrier is bool:
        return st.booleans()
    assert domain.carrier is float
    if domain.bounds is not None:
        lo, hi = (float(b) for b in domain.bounds)
        floats = st.floats(lo, hi, allow_nan=False)
        edges = st.sampled_from([lo, hi, 0.0, -0.0 if lo <= 0 <= hi else lo])
    else:
        floats = st.floats(allow_nan=False, allow_infinity=False)
        edges = st.sampled_from([sys.float_info.max, -sys.float_info.max, 5e-324, -0.0, 1.3e300, 2.0**61])
    out = st.one_of(floats, edges)
    if domain.nan:
        out = st.one_of(out, st.just(math.nan))
    return out.filter(domain.member)


def members(domain: dp.Domain) -> st.SearchStrategy[Any]:
    if isinstance(domain, dp.AtomDomain) and domain.carrier is tuple:
        return st.lists(st.integers(0, 2), max_size=3).map(tuple)
    if isinstance(domain, dp.AtomDomain) and domain.carrier is dict:
        values = st.one_of(st.integers(), st.floats(), st.text(max_size=2), st.none())
        return st.dictionaries(st.sampled_from(["a", "b", 0]), values, max_size=3)
    if isinstance(domain, dp.AtomDomain) and domain.carrier is str:
        return st.text(max_size=4)
    if isinstance(domain, dp.AtomDomain):
        return atoms(domain)
    if isinstance(domain, dp.CategoricalDomain):
        return st.sampled_from(domain.categories)
    assert isinstance(domain, dp.VectorDomain)
    inner = domain.element_domain
    if isinstance(inner, dp.VectorDomain) and inner.size is not None and domain.size is None:
        # datasets of fixed-size rows: also as one (n, d) array
        row_lists = st.lists(members(inner), max_size=6)
        as_array = row_lists.map(lambda rows, d=inner.size: np.array(rows, dtype=np.float64).reshape(-1, d))
        return st.one_of(row_lists, as_array.filter(domain.member))
    element = members(domain.element_domain)
    if domain.size is not None:
        lists = st.lists(element, min_size=domain.size, max_size=domain.size)
    else:
        lists = st.lists(element, max_size=40)
    if isinstance(domain.element_domain, dp.AtomDomain) and domain.element_domain.carrier in (int, float):
        dtype = np.int64 if domain.element_domain.carrier is int else np.float64
        arrays = lists.filter(lambda xs: _fits(xs, dtype)).map(lambda xs: np.asarray(xs, dtype=dtype))
        return st.one_of(lists, arrays).filter(domain.member)
    if isinstance(domain.element_domain, dp.AtomDomain) and domain.element_domain.carrier in (str, bool):
        return st.one_of(lists, lists.map(np.array).filter(domain.member))
    return lists


def _fits(xs: list[Any], dtype: type) -> bool:
    if dtype is np.int64:
        return all(-(2**63) <= x < 2**63 for x in xs)
    return True


INT = dp.AtomDomain(int)
FLOAT = dp.AtomDomain(float)
INTS = dp.VectorDomain(INT)
FLOATS = dp.VectorDomain(FLOAT)
BOUNDED_INTS = dp.VectorDomain(dp.AtomDomain(int, bounds=(-(10**12), 10**12)))
BOUNDED_FLOATS = dp.VectorDomain(dp.AtomDomain(float, bounds=(-1e300, 1e300)))
UNIT_FLOATS = dp.VectorDomain(dp.AtomDomain(float, bounds=(-1.0, 1.0)))
FLOATS_NAN = dp.VectorDomain(dp.AtomDomain(float, nan=True))
UNIT_FLOAT = dp.AtomDomain(float, bounds=(0.0, 1.0))
SIZED_UNIT_NAN = dp.VectorDomain(dp.AtomDomain(float, bounds=(0.0, 1.0), nan=True), size=3)
TUPLES = dp.VectorDomain(dp.AtomDomain(tuple))
DICTS = dp.VectorDomain(dp.AtomDomain(dict))
STRS = dp.VectorDomain(dp.AtomDomain(str))
CATEGORIES = dp.CategoricalDomain([0, "a", (1, 2)])
BOOLS = dp.VectorDomain(dp.AtomDomain(bool))
INT_SCORES = dp.VectorDomain(INT, size=3)
FLOAT_SCORES = dp.VectorDomain(FLOAT, size=3)


def _rows(d: int, nan: bool = False) -> dp.VectorDomain:
    """Datasets of float rows of size d."""
    return dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float, nan=nan), size=d))


def _clipped_sum(p: int, norm: float, max_size: int) -> Any:
    clip = (dp.t.make_clip_l1 if p == 1 else dp.t.make_clip_l2)(_rows(3), SYM, norm)
    return clip >> dp.t.make_vector_sum(clip.output_domain, SYM, max_size=max_size)


def _count_query(domain: dp.Domain) -> Any:
    return dp.t.make_count(domain, SYM)


def _sum_query(domain: dp.Domain) -> Any:
    return dp.t.make_clamp(domain, SYM, (0, 1)) >> dp.t.make_sum(
        dp.VectorDomain(dp.AtomDomain(int, bounds=(0, 1))), SYM
    )


Case = tuple[str, Callable[[], Any], list[Callable[[dp.Domain], Any]]]

CASES: dict[str, list[Case]] = {
    "make_clamp": [
        ("int", lambda: dp.t.make_clamp(INTS, SYM, (0, 10)), []),
        ("float", lambda: dp.t.make_clamp(FLOATS, SYM, (-1.5, 2.5)), []),
        ("float nan", lambda: dp.t.make_clamp(dp.VectorDomain(FLOAT), CHG, (0.0, 1.0)), []),
    ],
    "make_count": [
        ("int", lambda: dp.t.make_count(INTS, SYM), []),
        ("float", lambda: dp.t.make_count(FLOATS, CHG), []),
    ],
    "make_count_by_categories": [
        ("str", lambda: dp.t.make_count_by_categories(STRS, SYM, ["a", "a\x00", "é"]), []),
        ("int huge", lambda: dp.t.make_count_by_categories(INTS, CHG, [0, 2**70, -(2**63)], norm=2), []),
        ("float", lambda: dp.t.make_count_by_categories(FLOATS_NAN, SYM, [0.0, 5e-324], False), []),
        ("bool", lambda: dp.t.make_count_by_categories(BOOLS, CHG, [True], null_category=False), []),
    ],
    "make_count_by": [
        ("str", lambda: dp.t.make_count_by(STRS, SYM), []),
        ("int", lambda: dp.t.make_count_by(INTS, CHG), []),
        ("float", lambda: dp.t.make_count_by(FLOATS_NAN, SYM), []),
        ("bool", lambda: dp.t.make_count_by(BOOLS, SYM), []),
    ],
    "make_workload": [
        ("matrix", lambda: dp.t.make_workload(dp.VectorDomain(CATEGORIES), SYM, [[1, 0, 1], [1, 1, 1]]), []),
        (
            "predicates on categories",
            lambda: dp.t.make_workload(
                dp.VectorDomain(CATEGORIES), CHG, [lambda c: c + 1 > 0, lambda c: len(c) == 2], metric=L2
            ),
            [],
        ),
        (
            "predicates on ints",
            lambda: dp.t.make_workload(INTS, SYM, [lambda x: 2**64 // x > 3, lambda x: x % 2], metric=L2),
            [],
        ),
        ("predicates on rows", lambda: dp.t.make_workload(TUPLES, CHG, [lambda r: r[1] == 1]), []),
    ],
    "make_workload_error": [
        ("ints", lambda: dp.t.make_workload_error(INT_SCORES, L1, [0, -(2**70), 2**63 - 1]), []),
    ],
    "make_b_ary_tree": [
        ("binary L1", lambda: dp.t.make_b_ary_tree(INT_SCORES, L1), []),
        ("ternary L2", lambda: dp.t.make_b_ary_tree(INT_SCORES, L1, branching=3, metric=L2), []),
        ("one step", lambda: dp.t.make_b_ary_tree(dp.VectorDomain(INT, size=1), L1), []),
    ],
    "make_marginals": [
        ("tuples", lambda: dp.t.make_marginals(TUPLES, SYM, [(0,), (0, 2)], {0: [0, 1], 2: [2, 1]}), []),
        (
            "dicts",
            lambda: dp.t.make_marginals(
                DICTS, CHG, [("a", 0), ("b",)], {"a": [0, "x", None], 0: [1, 2], "b": [""]}, metric=L2
            ),
            [],
        ),
    ],
    "make_groupwise": [
        (
            "keys, change one, failing function",
            lambda: dp.t.make_groupwise(
                TUPLES,
                CHG,
                lambda part: 1.0 / (len(part) - 2),
                by=lambda r: r[0],
                keys=[0, "a", None],
                bounds=(-1.0, 1.0),
            ),
            [],
        ),
        (
            "vector: histograms per part",
            lambda: dp.t.make_groupwise(
                TUPLES,
                SYM,
                dp.t.make_map_rows(TUPLES, SYM, len, dp.AtomDomain(int), 0)
                >> dp.t.make_count_by_categories(dp.VectorDomain(dp.AtomDomain(int)), SYM, [0, 1, 2]),
                by=lambda r: r[0],
                buckets=3,
                bounds=(0, 5),
                metric=L1,
            ),
            [],
        ),
        (
            "user level, resized mean",
            lambda: dp.t.make_groupwise(
                TUPLES,
                dp.SymmetricIdDistance(0),
                _tuple_mean(),
                by=0,
                buckets=3,
                bounds=(0.0, 1.0),
                metric=L2,
            ),
            [],
        ),
    ],
    "make_marginal_errors": [
        (
            "tuples",
            lambda: dp.t.make_marginal_errors(
                TUPLES,
                SYM,
                [(0,), (0, 2)],
                {0: [0, 1], 2: [2, 1]},
                [[3, -(2**53)], [[1, 0], [0, 2**53]]],
                weights=[2**20, 1],
                offsets=[-(2**62), 2**62],
            ),
            [],
        ),
    ],
    "make_category_codes": [
        ("dicts", lambda: dp.t.make_category_codes(DICTS, CHG, {"a": [0, "x", None], 0: [1, 2]}), []),
    ],
    "make_partition": [
        ("mod", lambda: dp.t.make_partition(INTS, SYM, by=lambda r: r % 3, keys=[0, 1, 2]), []),
        ("failing by", lambda: dp.t.make_partition(INTS, SYM, by=lambda r: 1 // (r % 3), keys=[0, 1]), []),
        ("unhashable", lambda: dp.t.make_partition(INTS, SYM, by=lambda r: [r], keys=[0]), []),
        (
            "column",
            lambda: dp.t.make_partition(dp.VectorDomain(dp.AtomDomain(tuple)), SYM, by=1, keys=[0]),
            [],
        ),
    ],
    "make_sum": [
        ("int", lambda: dp.t.make_sum(BOUNDED_INTS, SYM), []),
        ("float max_size", lambda: dp.t.make_sum(UNIT_FLOATS, SYM, max_size=5), []),
        ("huge float", lambda: dp.t.make_sum(BOUNDED_FLOATS, CHG, max_size=3), []),
        (
            "sized",
            lambda: dp.t.make_sum(dp.VectorDomain(dp.AtomDomain(float, bounds=(0.0, 1.0)), size=4), SYM),
            [],
        ),
    ],
    "make_subset_by": [
        ("float failing", lambda: dp.t.make_subset_by(FLOATS_NAN, SYM, lambda x: 1 / x > 0.5), []),
        ("int non-bool", lambda: dp.t.make_subset_by(INTS, CHG, lambda x: x % 3), []),
        ("bounded", lambda: dp.t.make_subset_by(BOUNDED_INTS, SYM, lambda x: 2**64 // x > 3), []),
        ("rows", lambda: dp.t.make_subset_by(TUPLES, CHG, lambda r: r[1] == 1), []),
    ],
    "make_map_exprs": [
        (
            "float rows with NaN",
            lambda: dp.t.make_map_exprs(
                _rows(2, nan=True),
                CHG,
                ["a", "b"],
                [
                    dp.col("a") / dp.col("b"),
                    (dp.col("a") * dp.col("b") - 1e308).abs(),
                    (dp.col("a") > dp.col("b")) | (dp.col("b") == 0.0),
                ],
            ),
            [],
        ),
        (
            "int rows",
            lambda: dp.t.make_map_exprs(
                dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(int, bounds=(-(2**63), 2**63 - 1)), size=2)),
                SYM,
                ["i", "j"],
                [dp.col("i") - dp.col("j"), dp.col("i") / dp.col("j"), dp.col("i").is_in([0, 2**62])],
            ),
            [],
        ),
    ],
    "make_map_rows": [
        (
            "float",
            lambda: dp.t.make_map_rows(
                FLOATS_NAN, SYM, lambda x: x * 1e300, dp.AtomDomain(float, bounds=(-1.0, 1.0)), 0.0
            ),
            [],
        ),
        ("int", lambda: dp.t.make_map_rows(INTS, CHG, lambda x: 2**70 // x, dp.AtomDomain(int), -1), []),
        ("to float", lambda: dp.t.make_map_rows(INTS, SYM, lambda x: x / 7, FLOAT, 0.0), []),
        ("rows", lambda: dp.t.make_map_rows(TUPLES, SYM, lambda r: r[0] - r[2], dp.AtomDomain(int), 0), []),
        ("str", lambda: dp.t.make_map_rows(STRS, SYM, float, FLOAT, 0.0), []),
    ],
    "make_select_column": [
        ("tuple", lambda: dp.t.make_select_column(TUPLES, SYM, 1, dp.AtomDomain(int, bounds=(0, 1)), 0), []),
        ("dict", lambda: dp.t.make_select_column(DICTS, CHG, "a", UNIT_FLOAT, 0.0), []),
        ("dict int key", lambda: dp.t.make_select_column(DICTS, SYM, 0, dp.AtomDomain(str), ""), []),
    ],
    "make_impute_constant": [
        ("float", lambda: dp.t.make_impute_constant(FLOATS_NAN, SYM, 0.0), []),
        ("bounded sized", lambda: dp.t.make_impute_constant(SIZED_UNIT_NAN, CHG, 1.0), []),
    ],
    "make_drop_null": [
        ("float", lambda: dp.t.make_drop_null(FLOATS_NAN, SYM), []),
        ("bounded sized", lambda: dp.t.make_drop_null(SIZED_UNIT_NAN, CHG), []),
    ],
    "make_count_distinct": [
        ("float", lambda: dp.t.make_count_distinct(FLOATS_NAN, SYM), []),
        ("int", lambda: dp.t.make_count_distinct(INTS, CHG), []),
        ("bounded int", lambda: dp.t.make_count_distinct(BOUNDED_INTS, SYM), []),
        ("rows", lambda: dp.t.make_count_distinct(TUPLES, SYM), []),
        ("dicts", lambda: dp.t.make_count_distinct(DICTS, CHG), []),
        ("str", lambda: dp.t.make_count_distinct(STRS, SYM), []),
        ("categories", lambda: dp.t.make_count_distinct(dp.VectorDomain(CATEGORIES), SYM), []),
    ],
    "make_resize": [
        ("int grow", lambda: dp.t.make_resize(INTS, SYM, size=7, constant=0), []),
        ("int huge constant", lambda: dp.t.make_resize(INTS, CHG, size=3, constant=2**70), []),
        ("float shrink", lambda: dp.t.make_resize(BOUNDED_FLOATS, SYM, size=2, constant=-1e300), []),
        (
            "float nan",
            lambda: dp.t.make_resize(dp.VectorDomain(dp.AtomDomain(float, nan=True)), SYM, 3, 0.0),
            [],
        ),
        ("tuples", lambda: dp.t.make_resize(dp.VectorDomain(dp.AtomDomain(tuple)), SYM, 4, ()), []),
        ("empty", lambda: dp.t.make_resize(UNIT_FLOATS, SYM, size=0, constant=0.0), []),
    ],
    "make_mean": [
        (f"{name} n={n} {m!r}", (lambda d=d, n=n, m=m: dp.t.make_mean(dp.VectorDomain(d, size=n), m)), [])
        for name, d in [
            ("int", dp.AtomDomain(int, bounds=(-(2**62), 2**62))),
            ("bigint", dp.AtomDomain(int, bounds=(-(10**30), 10**30))),
            ("float", dp.AtomDomain(float, bounds=(-1e300, 1e300))),
            ("unit", dp.AtomDomain(float, bounds=(-1.0, 1.0))),
        ]
        for n in (1, 5)
        for m in (SYM, CHG)
    ],
    "make_variance": [
        (
            f"{name} n={n} ddof={q}",
            (lambda d=d, n=n, q=q: dp.t.make_variance(dp.VectorDomain(d, size=n), CHG, q)),
            [],
        )
        for name, d in [
            ("int", dp.AtomDomain(int, bounds=(-(2**40), 2**40))),
            ("bigint", dp.AtomDomain(int, bounds=(-(10**30), 10**30))),
            ("float", dp.AtomDomain(float, bounds=(-1e100, 1e100))),
            ("tiny", dp.AtomDomain(float, bounds=(-1e-300, 1e-300))),
        ]
        for n, q in ((1, 0), (5, 1))
    ],
    "make_laplace": [
        (f"{name} scale={scale}", (lambda d=d, m=m, scale=scale: dp.m.make_laplace(d, m, scale=scale)), [])
        for name, d, m in [
            ("int", INT, ABS),
            ("float", FLOAT, ABS),
            ("ints3", dp.VectorDomain(INT, size=3), L1),
            ("floats3", dp.VectorDomain(FLOAT, size=3), L1),
        ]
        for scale in (1.0, 2.0**31, 1e-5, 1e12)
    ]
    + [
        # integer vectors of unknown size: only on grids that integers fill (larger scales are refused)
        (f"ints scale={scale}", (lambda scale=scale: dp.m.make_laplace(INTS, L1, scale=scale)), [])
        for scale in (1.0, 1e-5)
    ],
    "make_gaussian": [
        (f"{name} scale={scale}", (lambda d=d, m=m, scale=scale: dp.m.make_gaussian(d, m, scale=scale)), [])
        for name, d, m in [
            ("int", INT, ABS),
            ("float", FLOAT, ABS),
            ("ints3", dp.VectorDomain(INT, size=3), L2),
            ("floats3", dp.VectorDomain(FLOAT, size=3), L2),
        ]
        for scale in (1.0, 2.0**21, 1e-5, 1e10)
    ]
    + [
        (f"ints scale={scale}", (lambda scale=scale: dp.m.make_gaussian(INTS, L2, scale=scale)), [])
        for scale in (1.0, 1e-5)
    ],
    "make_discrete_laplace": [
        (f"{name}", (lambda d=d, m=m: dp.m.make_discrete_laplace(d, m, scale=3)), [])
        for name, d, m in [("int", INT, ABS), ("ints", INTS, L1)]
    ]
    + [
        # a scale whose denominator exceeds int64 (1e-5 = n/2**69): the block sampler divided by it in int64
        ("ints scale=1e-05", lambda: dp.m.make_discrete_laplace(INTS, L1, scale=1e-5), []),
    ],
    "make_discrete_gaussian": [
        (f"{name}", (lambda d=d, m=m: dp.m.make_discrete_gaussian(d, m, scale=3)), [])
        for name, d, m in [("int", INT, ABS), ("ints", INTS, L2)]
    ],
    "make_bound_contributions": [
        ("tuple id", lambda: dp.t.make_bound_contributions(TUPLES, dp.SymmetricIdDistance(0), 0, 2), []),
        ("tuple last", lambda: dp.t.make_bound_contributions(TUPLES, dp.SymmetricIdDistance(-1), -1, 1), []),
        ("dict id", lambda: dp.t.make_bound_contributions(DICTS, dp.SymmetricIdDistance("a"), "a", 1), []),
        (
            "dict groups",
            lambda: dp.t.make_bound_contributions(DICTS, dp.SymmetricIdDistance("a"), "a", 1, 2, by=0),
            [],
        ),
        (
            "tuple groups",
            lambda: dp.t.make_bound_contributions(TUPLES, dp.SymmetricIdDistance(0), 0, 2, 1, by=1),
            [],
        ),
    ],
    "make_clip_l1": [
        (f"d={d} norm={c}", (lambda d=d, c=c: dp.t.make_clip_l1(_rows(d), SYM, c)), [])
        for d, c in ((1, 1.0), (3, 2.0**-900), (2, 1.7976931348623157e308))
    ],
    "make_sscp": [
        (
            "bounded rows, intercept, oversize",
            lambda: dp.t.make_sscp(
                dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float, bounds=(-1e150, 1e150)), size=3)),
                SYM,
                intercept=True,
                max_size=5,
            ),
            [],
        ),
        (
            "tiny rows",
            lambda: dp.t.make_sscp(
                dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float, bounds=(-1e-250, 1e-250)), size=2)),
                CHG,
                max_size=3,
            ),
            [],
        ),
    ],
    "make_clip_l2": [
        (f"d={d} norm={c}", (lambda d=d, c=c: dp.t.make_clip_l2(_rows(d, nan=True), CHG, c)), [])
        for d, c in ((1, 1.0), (3, 1e-270), (2, 1e300))
    ],
    "make_vector_sum": [
        (
            f"p={p} norm={c} max_size={n}",
            (lambda p=p, c=c, n=n: _clipped_sum(p, c, n)),
            [],
        )
        for p, c, n in ((1, 1.0, 3), (2, 1.7976931348623157e308, 1), (2, 2.0**-900, 0))
    ],
    "make_randomized_response": [
        (
            "abc",
            lambda: dp.m.make_randomized_response(
                dp.CategoricalDomain(["a", "b", "c"]), dp.DiscreteDistance(), 1.0
            ),
            [],
        ),
        (
            "ints",
            lambda: dp.m.make_randomized_response(
                dp.CategoricalDomain([0, 1, 2]), dp.DiscreteDistance(), 0.0
            ),
            [],
        ),
    ],
    "make_randomized_response_approx": [
        (
            "01",
            lambda: dp.m.make_randomized_response_approx(
                dp.CategoricalDomain([0, 1]), dp.DiscreteDistance(), 1.0, 0.1
            ),
            [],
        ),
    ],
    "make_sparse_vector": [
        (
            "ints",
            lambda: dp.m.make_sparse_vector(INTS, SYM, threshold=3.0, scale=2.0, max_positive=2),
            [_count_query, _sum_query],
        ),
    ],
    "make_report_noisy_max": [
        ("int max", lambda: dp.m.make_report_noisy_max(INT_SCORES, dp.LInfDistance(), 1.0), []),
        (
            "float min monotonic",
            lambda: dp.m.make_report_noisy_max(FLOAT_SCORES, dp.LInfDistance(monotonic=True), 1e-9, "min"),
            [],
        ),
        ("int huge scale", lambda: dp.m.make_report_noisy_max(INT_SCORES, dp.LInfDistance(), 2.0**50), []),
    ],
    "make_exponential_mechanism": [
        ("int max", lambda: dp.m.make_exponential_mechanism(INT_SCORES, dp.LInfDistance(), 1.0), []),
        (
            "float min monotonic zcdp",
            lambda: dp.m.make_exponential_mechanism(
                FLOAT_SCORES, dp.LInfDistance(monotonic=True), 1e-9, "min", output_measure=dp.ZCDP()
            ),
            [],
        ),
        (
            "int huge scale",
            lambda: dp.m.make_exponential_mechanism(INT_SCORES, dp.LInfDistance(), 2.0**50),
            [],
        ),
    ],
    "make_noisy_top_k": [
        ("int k=2", lambda: dp.m.make_noisy_top_k(INT_SCORES, dp.LInfDistance(), 1.0, 2), []),
        ("float k=all", lambda: dp.m.make_noisy_top_k(FLOAT_SCORES, dp.LInfDistance(), 3.0, 3, "min"), []),
    ],
    "make_quantile_score_candidates": [
        ("int", lambda: dp.t.make_quantile_score_candidates(INTS, SYM, [-(2**59), 0, 5, 2**59], 0.5), []),
        ("float", lambda: dp.t.make_quantile_score_candidates(FLOATS, CHG, [-1e300, 0.0, 1e300], 0.1), []),
    ],
    "make_private_quantile": [
        ("int median", lambda: dp.m.make_private_quantile(INTS, SYM, [0, 10, 20], 0.5, 1.0), []),
        ("float q0", lambda: dp.m.make_private_quantile(FLOATS, CHG, [-1.0, 1.0], 0.0, 1e-9), []),
        ("float q1", lambda: dp.m.make_private_quantile(FLOATS, SYM, [5e-324, 1e308], 1.0, 3.0), []),
    ],
    "make_laplace_threshold": [
        (
            f"{name}",
            (
                lambda d=d, m=m: (
                    dp.t.make_count_by(d, m)
                    >> dp.m.make_laplace_threshold(
                        dp.t.make_count_by(d, m).output_domain, dp.L01InfDistance(), scale=1.0, threshold=3
                    )
                )
            ),
            [],
        )
        for name, d, m in [
            ("str", STRS, SYM),
            ("int", INTS, CHG),
            ("float", FLOATS_NAN, SYM),
            ("bool", BOOLS, SYM),
        ]
    ]
    + [
        (
            f"{name} max_keys={k}",
            (
                lambda d=d, m=m, k=k: (
                    dp.t.make_count_by(d, m)
                    >> dp.m.make_laplace_threshold(
                        dp.t.make_count_by(d, m).output_domain,
                        dp.L01InfDistance(),
                        scale=1.0,
                        threshold=3,
                        max_keys=k,
                    )
                )
            ),
            [],
        )
        for name, d, m, k in [("str", STRS, SYM, 1), ("float", FLOATS_NAN, SYM, 4), ("bool", BOOLS, CHG, 3)]
    ],
    "make_gaussian_threshold": [
        (
            f"{name}",
            (
                lambda d=d, m=m: (
                    dp.t.make_count_by(d, m)
                    >> dp.m.make_gaussian_threshold(
                        dp.t.make_count_by(d, m).output_domain, dp.L01InfDistance(), scale=0.5, threshold=2
                    )
                )
            ),
            [],
        )
        for name, d, m in [("str", STRS, CHG), ("int", INTS, SYM), ("float", FLOATS_NAN, SYM)]
    ]
    + [
        (
            "int max_keys=5",
            lambda: (
                dp.t.make_count_by(INTS, SYM)
                >> dp.m.make_gaussian_threshold(
                    dp.t.make_count_by(INTS, SYM).output_domain,
                    dp.L01InfDistance(),
                    scale=0.5,
                    threshold=2,
                    max_keys=5,
                )
            ),
            [],
        )
    ],
    "make_interactive_laplace": [
        (
            "ints",
            lambda: dp.m.make_interactive_laplace(INTS, SYM, scale=2.0, max_queries=3),
            [_count_query, _sum_query],
        ),
    ],
    "make_online_counter": [
        (
            "three steps",
            lambda: dp.m.make_online_counter(INT_SCORES, L1, scale=2.0),
            [lambda _: 0, lambda _: 1, lambda _: 1, lambda _: 2],
        ),
        (
            "one step",
            lambda: dp.m.make_online_counter(dp.VectorDomain(INT, size=1), L1, scale=0.5),
            [lambda _: 0],
        ),
        (
            "three steps, honaker",
            lambda: dp.m.make_online_counter(INT_SCORES, L1, scale=2.0, estimator="honaker"),
            [lambda _: 0, lambda _: 1, lambda _: 1, lambda _: 2],
        ),
        (
            "three steps, kary",
            lambda: dp.m.make_online_counter(INT_SCORES, L1, scale=2.0, estimator="kary", branching=5),
            [lambda _: 0, lambda _: 1, lambda _: 1, lambda _: 2],
        ),
    ],
    "make_matrix_counter": [
        (
            "three steps",
            lambda: dp.m.make_matrix_counter(INT_SCORES, L1, scale=2.0),
            [lambda _: 0, lambda _: 1, lambda _: 1, lambda _: 2],
        ),
        (
            "one step",
            lambda: dp.m.make_matrix_counter(dp.VectorDomain(INT, size=1), L1, scale=0.5),
            [lambda _: 0],
        ),
    ],
}


def _tuple_mean() -> Any:
    """Column 1 of tuple rows as a float in [0, 1], resized to 3 rows (pad 0.5), averaged."""
    col = dp.t.make_select_column(TUPLES, SYM, 1, dp.AtomDomain(float), 0.5)
    clamped = col >> dp.t.make_clamp(col.output_domain, SYM, (0.0, 1.0))
    sized = clamped >> dp.t.make_resize(clamped.output_domain, SYM, size=3, constant=0.5)
    return sized >> dp.t.make_mean(sized.output_domain, SYM)


def test_every_public_constructor_has_a_contract_case() -> None:
    public = {name for name in (*dp.t.__all__, *dp.m.__all__) if name.startswith("make_")}
    assert public == set(CASES), f"add contract cases for {sorted(public - set(CASES))}"


#: Cases that still raise on in-domain data, with the reason; strict xfail, so a fix makes them fail
#: until they are removed from here. Empty: keep it that way.
KNOWN_RAISES: dict[str, str] = {}


def _param(ctor: str, name: str, build: Callable[[], Any], queries: list[Any]) -> Any:
    case_id = f"{ctor}[{name}]"
    marks = []
    if case_id in KNOWN_RAISES:
        marks.append(pytest.mark.xfail(reason=KNOWN_RAISES[case_id], strict=True))
    return pytest.param(ctor, name, build, queries, id=case_id, marks=marks)


ALL = [_param(ctor, name, build, queries) for ctor, cases in CASES.items() for name, build, queries in cases]


#: Hypothesis examples per input domain: 44 distinct domains serve the 181 cases, and the draws (not the
#: calls) were most of this file's time, so the default run draws each domain's members once per process
#: and feeds them, copied, to every case on that domain.
_EXAMPLES: dict[str, list[Any]] = {}
EXAMPLES_PER_DOMAIN = 40


def _domain_examples(domain: dp.Domain) -> list[Any]:
    key = f"{type(domain).__name__}:{domain!r}"
    if key not in _EXAMPLES:
        found: list[Any] = []

        @settings(max_examples=EXAMPLES_PER_DOMAIN, deadline=None, suppress_health_check=list(HealthCheck))
        @given(members(domain))
        def collect(data: Any) -> None:
            found.append(copy.deepcopy(data))

        collect()
        assert found, domain
        _EXAMPLES[key] = found
    return _EXAMPLES[key]


def _check_case(part: Any, queries: list[Callable[[dp.Domain], Any]], data: Any) -> None:
    assert part.input_domain.member(data)
    out = part(data)
    for make_query in queries:
        out(make_query(part.input_domain))


@pytest.mark.parametrize(("ctor", "name", "build", "queries"), ALL)
def test_no_in_domain_datum_makes_it_raise(
    ctor: str, name: str, build: Callable[[], Any], queries: list[Callable[[dp.Domain], Any]]
) -> None:
    part = build()
    for data in _domain_examples(part.input_domain):
        _check_case(part, queries, copy.deepcopy(data))  # a fresh copy: a case must not see another's edits


@pytest.mark.slow
@pytest.mark.parametrize(("ctor", "name", "build", "queries"), ALL)
def test_no_in_domain_datum_makes_it_raise_fresh_draws(
    ctor: str, name: str, build: Callable[[], Any], queries: list[Callable[[dp.Domain], Any]]
) -> None:
    """As above, with Hypothesis drawing (and, on a failure, shrinking) each case's data on its own."""
    part = build()

    @settings(max_examples=EXAMPLES_PER_DOMAIN, deadline=None, suppress_health_check=list(HealthCheck))
    @given(members(part.input_domain))
    def check(data: Any) -> None:
        _check_case(part, queries, data)

    check()
