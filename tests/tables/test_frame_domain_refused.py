"""A FrameDomain (a table) is a VectorDomain, but iterating a DataFrame walks its columns: every constructor
that walks records refuses it, naming the parameter and the fix; the generic records still take it."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import pytest

import dpcompose as dp
from dpcompose.errors import DomainMismatch

FD = dp.FrameDomain({"user": dp.Column(str), "v": dp.Column(int, bounds=(0, 9))})
S, C, U = dp.SymmetricDistance(), dp.ChangeOneDistance(), dp.SymmetricIdDistance("user")


def _frame_measurement() -> Any:
    return dp.make_user_measurement(FD, S, dp.PureDP(), lambda df: 0, lambda d: Fraction(d), trusted=True)


BUILDERS: dict[str, Callable[[Any], Any]] = {
    "bound_contributions": lambda m: dp.t.make_bound_contributions(FD, U, "user", 2),
    "count": lambda m: dp.t.make_count(FD, m),
    "count_distinct": lambda m: dp.t.make_count_distinct(FD, m),
    "groupwise": lambda m: dp.t.make_groupwise(FD, m, len, by=lambda r: r[0], buckets=8, bounds=(0, 5)),
    "groupwise_user": lambda m: dp.t.make_groupwise(FD, U, len, by="user", buckets=8, bounds=(0, 5)),
    "map_rows": lambda m: dp.t.make_map_rows(FD, m, lambda r: 1, dp.AtomDomain(int), 0),
    "marginals": lambda m: dp.t.make_marginals(FD, m, [["user"]], {"user": ["a"]}),
    "partition": lambda m: dp.t.make_partition(FD, m, lambda r: 0, [0, 1]),
    "resize": lambda m: dp.t.make_resize(FD, m, 3, {"user": "a", "v": 0}),
    "select_column": lambda m: dp.t.make_select_column(FD, m, "v", dp.AtomDomain(int), 0),
    "subset_by": lambda m: dp.t.make_subset_by(FD, m, lambda r: True),
    "impute_constant": lambda m: dp.t.make_impute_constant(FD, m, {"user": "a", "v": 0}),
    "drop_null": lambda m: dp.t.make_drop_null(FD, m),
    "sum": lambda m: dp.t.make_sum(FD, m),
    "interactive_laplace": lambda m: dp.m.make_interactive_laplace(FD, m, 1.0, 3),
    "sparse_vector": lambda m: dp.m.make_sparse_vector(FD, m, 1.0, 1.0, 1),
}


def refusal(parameter: str) -> str:
    """The refusal of a table domain, naming the parameter, why, and the fix."""
    return (
        f"{parameter}={FD!r} is a table domain (FrameDomain): this constructor walks the records of a Python "
        "sequence, and iterating a DataFrame walks its columns, not its rows; query a table through "
        "dp.Context, or pass its rows as a list (frame.rows() or frame.iter_rows(named=True)) with a "
        "dp.VectorDomain"
    )


@pytest.mark.parametrize("metric", [S, C], ids=["symmetric", "change_one"])
@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_record_walking_constructors_refuse_a_frame_domain(name: str, metric: Any) -> None:
    with pytest.raises(DomainMismatch) as info:
        BUILDERS[name](metric)
    assert str(info.value) == refusal("input_domain")


def test_subsample_refuses_a_frame_measurement_and_records_still_take_frames() -> None:
    m = _frame_measurement()  # a generic record over a table: allowed (it never walks records itself)
    assert m.input_domain == FD
    with pytest.raises(DomainMismatch) as info:
        dp.make_subsample(m, rate=0.5)
    assert str(info.value) == refusal("m.input_domain")


def test_row_walkers_on_frame_rows_as_a_list_still_work() -> None:
    """The documented fix: the rows of a frame, as a list, in a VectorDomain."""
    pl = pytest.importorskip("polars")
    df = pl.DataFrame({"user": ["a", "b", "a"], "v": [1, 2, 3]})
    rows = dp.VectorDomain(dp.AtomDomain(tuple))
    t = dp.t.make_map_rows(rows, S, lambda r: r[1], dp.AtomDomain(int), 0)
    assert t(df.rows()) == [1, 2, 3] and t.map(1) == 1
