"""Compositors, filters and odometers do O(1) bookkeeping per query and keep no finished answer alive
(issue 11, item 15). Counted, not timed: speed itself is measured in benchmarks/bench_scaling.py."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest

import dpcompose as dp
from dpcompose.core import Queryable

INTS = dp.VectorDomain(dp.AtomDomain(int))
SYM = dp.SymmetricDistance()


def svt() -> Any:
    return dp.m.make_sparse_vector(INTS, SYM, threshold=1e9, scale=1.0, max_positive=1)


def make(kind: str) -> Any:
    if kind == "pure filter":
        return dp.make_privacy_filter(INTS, SYM, dp.PureDP(), 1, 10**6)
    if kind == "zcdp filter":
        return dp.make_privacy_filter(INTS, SYM, dp.ZCDP(), 1, 10**9)
    if kind == "odometer":
        return dp.make_odometer(INTS, SYM, dp.PureDP(), 1)
    if kind == "adaptive sequential":
        return dp.make_adaptive_sequential(INTS, SYM, dp.PureDP(), 1, [100] * 300)
    return dp.make_adaptive_concurrent(INTS, SYM, dp.PureDP(), 1, [100] * 300)


KINDS = ["pure filter", "zcdp filter", "odometer", "adaptive sequential", "adaptive concurrent"]


@pytest.mark.parametrize("kind", KINDS)
def test_finished_interactive_answers_are_not_kept_alive(kind: str) -> None:
    q = make(kind)([1, 2, 3])
    query = svt()
    if kind == "zcdp filter":
        query = dp.make_pure_to_zcdp(query)
    refs = []
    for _ in range(200):
        refs.append(weakref.ref(q(query)))  # the analyst drops each answer at once
    gc.collect()
    assert sum(r() is not None for r in refs) == 0


@pytest.mark.parametrize("kind", ["zcdp filter", "adaptive sequential"])
def test_sequential_closing_is_constant_work_per_query(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    closes: list[int] = []
    original = Queryable.close

    def counting(self: Queryable[Any, Any], reason: str = "closed") -> None:
        closes.append(1)
        original(self, reason)

    monkeypatch.setattr(Queryable, "close", counting)
    q = make(kind)([1, 2, 3])
    query = svt() if kind != "zcdp filter" else dp.make_pure_to_zcdp(svt())
    kept = [q(query) for _ in range(300)]  # the analyst keeps every answer
    assert len(closes) == 299  # each query closes exactly the one open child: O(1), not O(n)
    assert all(a.closed for a in kept[:-1]) and not kept[-1].closed
