"""Every queryable keeps its budget in its own process: a forked copy refuses to answer (review finding
on issue 11 item 7), and sequential compositors close every child a query created, however wrapped."""

from __future__ import annotations

import multiprocessing
import os
from typing import Any

import pytest

import dpcompose as dp
from dpcompose.combinators._adaptive import AdaptiveQueryable

INTS = dp.VectorDomain(dp.AtomDomain(int))
SYM = dp.SymmetricDistance()
COUNT = dp.t.make_count(INTS, SYM)
SHARED: Any = None


def _ask(_: int) -> str:
    try:
        SHARED(COUNT if not isinstance(SHARED, AdaptiveQueryable) else LAP_COUNT)
    except dp.SequentialityError as exc:
        return "refused" if "SQLiteLedger" in str(exc) else f"other: {exc}"
    except dp.DPError as exc:
        return f"other: {exc}"
    return "answered"


LAP_COUNT = COUNT >> dp.m.make_laplace(dp.AtomDomain(int), dp.AbsoluteDistance(), scale=1.0)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.parametrize(
    "make",
    [
        lambda: dp.m.make_interactive_laplace(INTS, SYM, scale=1.0, max_queries=2)([1, 2]),
        lambda: dp.m.make_sparse_vector(INTS, SYM, threshold=-1e9, scale=1.0, max_positive=2)([1, 2]),
        lambda: dp.make_adaptive_sequential(INTS, SYM, dp.PureDP(), 1, [1.0, 1.0])([1, 2]),
    ],
    ids=["interactive laplace", "sparse vector", "adaptive sequential"],
)
def test_forked_copies_of_a_queryable_refuse(make: Any) -> None:
    global SHARED
    SHARED = make()
    try:
        with multiprocessing.get_context("fork").Pool(2) as pool:
            results = pool.map(_ask, range(8))
    finally:
        q, SHARED = SHARED, None
    assert results == ["refused"] * 8
    assert q.queries_answered == 0


def test_sequential_filters_close_children_however_wrapped() -> None:
    """A query whose answer wraps its interactive child (here in a list) still has the child closed by
    the next query to a zCDP filter (sequential interaction)."""
    svt = dp.make_pure_to_zcdp(dp.m.make_sparse_vector(INTS, SYM, threshold=1e9, scale=1.0, max_positive=1))
    boxed = dp.make_postprocess(svt, lambda q: [q])
    f = dp.make_privacy_filter(INTS, SYM, dp.ZCDP(), 1, 100.0)([1, 2])
    (first,) = f(boxed)
    (second,) = f(boxed)
    assert first.closed and not second.closed
    with pytest.raises(dp.SequentialityError, match="later query"):
        first(COUNT)
    assert second(COUNT) is False
