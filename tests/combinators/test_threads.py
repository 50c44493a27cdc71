"""Threads querying the children of sequential, adaptive, filter and odometer compositors at once: nothing
deadlocks, and the sequential order holds (a child answers nothing once a later child has started).

Every hammering runs in daemon threads under ``sys.setswitchinterval(1e-5)`` and must finish within a
deadline, so a deadlock fails the test instead of hanging the suite."""

from __future__ import annotations

import itertools
import random
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from fractions import Fraction
from functools import partial
from typing import Any

import pytest

import dpcompose as dp

FLOAT = dp.AtomDomain(float)
ABS = dp.AbsoluteDistance()
DEADLINE = 8.0  # seconds for all the hammering of one test (a clean run takes well under 3)

Event = tuple[str, int]  # ("new" | "start" | "end", recorder id)


class Recorder(dp.Queryable[Any, Any]):
    """An interactive answer that logs its creation and the start and end of every answer."""

    def __init__(self, log: list[Event], ids: Iterator[int]) -> None:
        self.id = next(ids)  # (ids are drawn where creation is serialised: see each test)
        super().__init__(name=f"R{self.id}")
        self._log = log
        log.append(("new", self.id))

    def _answer(self, query: Any) -> Any:
        self._log.append(("start", self.id))
        time.sleep(0)  # let another thread in mid-answer
        self._log.append(("end", self.id))
        return query


def recorder(log: list[Event], ids: Iterator[int]) -> dp.Measurement:  # type: ignore[type-arg]
    return dp.make_user_measurement(
        FLOAT,
        ABS,
        dp.PureDP(),
        lambda _: Recorder(log, ids),
        lambda d: d / 1000,
        interactive=True,
        trusted=True,
    )


@contextmanager
def fast_switching() -> Iterator[None]:
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def hammer(works: Sequence[Callable[[], None]], deadline: float) -> None:
    """Run each work in its own daemon thread, all released at once; fail if one is still running at
    ``deadline`` (time.monotonic()) or raised."""
    start = threading.Barrier(len(works))
    errors: list[BaseException] = []

    def run(work: Callable[[], None]) -> None:
        try:
            start.wait()
            work()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(w,), daemon=True) for w in works]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    hung = sum(t.is_alive() for t in threads)
    assert hung == 0, f"{hung} of {len(threads)} threads still running at the deadline: a deadlock"
    assert not errors, errors


def in_one_order(log: Sequence[Event], group: Callable[[int], int]) -> None:
    """The recorders' answers ran one ``group(id)`` after another: no answer of a group starts while
    another group's answer runs, or once a later group has started; a recorder's creation ("new") starts
    its group like an answer does (pass the log without "new" events where creation orders nothing)."""
    done: set[int] = set()
    current: int | None = None
    running = 0
    for kind, rid in log:
        g = group(rid)
        if kind == "end":
            running -= 1
            continue
        if g != current:
            assert g not in done, f"group {g} went on after group {current} started: {kind} of R{rid}"
            assert running == 0, f"group {g} started while group {current} was answering"
            if current is not None:
                done.add(current)
            current = g
        running += kind == "start"


def without_creation(log: Sequence[Event]) -> list[Event]:
    return [e for e in log if e[0] != "new"]


def answered(log: Sequence[Event]) -> set[int]:
    return {rid for kind, rid in log if kind == "start"}


def test_sequential_siblings_queried_at_once_by_eight_threads() -> None:
    """Eight threads alternate between two children of ``make_sequential`` (every pair of three, fresh
    children per round): each child's guard closed its sibling while holding its own lock, so two
    threads querying the two children each waited for the other's lock forever (about half the rounds
    hung before the fix)."""
    pairs = list(itertools.combinations(range(3), 2))
    deadline = time.monotonic() + DEADLINE
    with fast_switching():
        for trial in range(30):
            log: list[Event] = []
            ids = itertools.count()  # the children are created one after another by make_sequential
            kids = dp.make_sequential(*[recorder(log, ids)] * 3)(0.0)
            i, j = pairs[trial % len(pairs)]

            def work(first: int, i: int = i, j: int = j, kids: Any = kids) -> None:
                for n in range(30):
                    with suppress(dp.SequentialityError):
                        kids[(i, j)[(first + n) % 2]](n)

            hammer([partial(work, f) for f in (0, 1) * 4], deadline)
            in_one_order(without_creation(log), group=lambda rid: rid)
            assert answered(log) <= {i, j} and answered(log)
            last = next(rid for kind, rid in reversed(log) if kind == "start")
            for k in {i, j} - {last}:  # the child answered first is closed for good
                assert kids[k].closed
                with pytest.raises(dp.SequentialityError, match="later sibling"):
                    kids[k](0)
            assert not kids[last].closed


def test_sequential_filters_refused_at_once_charge_nothing() -> None:
    """The same with filters as the children: every charge is an answer (a refused query spent nothing)."""
    lap = dp.m.make_laplace(FLOAT, ABS, scale=1000.0)
    child = dp.make_privacy_filter(FLOAT, ABS, dp.PureDP(), 1, 1.0)
    deadline = time.monotonic() + DEADLINE
    with fast_switching():
        for _ in range(10):
            kids = dp.make_sequential(child, child, dp.make_odometer(FLOAT, ABS, dp.PureDP(), 1))(0.0)

            def work(first: int, kids: Any = kids) -> None:
                for n in range(20):
                    with suppress(dp.SequentialityError):
                        kids[(first + n) % 3](lap)

            hammer([partial(work, f) for f in (0, 1, 2) * 3], deadline)
            assert sum(not k.closed for k in kids) == 1
            for k in kids:
                assert k.queries_charged == k.queries_answered


@pytest.mark.parametrize("pairs", [False, True], ids=["eps-budgets", "pair-budgets"])
@pytest.mark.parametrize("sequential", [True, False])
def test_children_of_adaptive_compositors_queried_with_the_compositor(sequential: bool, pairs: bool) -> None:
    """Threads querying an adaptive compositor (each query opens a ``make_sequential`` pair of interactive
    children) and, at once, any of the children opened so far (pairs of siblings, and children of
    different queries); budgets in ε, or declared as dominating pairs (the query's RR_(ε,0) pairs)."""
    make = dp.make_adaptive_sequential if sequential else dp.make_adaptive_concurrent
    deadline = time.monotonic() + DEADLINE
    with fast_switching():
        for trial in range(6):
            log: list[Event] = []
            ids = itertools.count()  # drawn under the compositor's lock: query k opens R(2k) and R(2k + 1)
            pair = dp.make_sequential(recorder(log, ids), recorder(log, ids))
            if pairs:
                declared = pair.privacy_loss(1)
                assert declared is not None
                comp = make(FLOAT, ABS, dp.ProfileDP(), 1, declared, steps=12)(0.0)
            else:
                comp = make(FLOAT, ABS, dp.PureDP(), 1, [Fraction(1, 500)] * 12)(0.0)
            opened: list[Any] = list(comp(pair))
            opening = threading.Lock()  # the test's own: ``opened`` lists the pairs in the order opened

            def work(
                seed: int,
                comp: Any = comp,
                opened: list[Any] = opened,
                pair: Any = pair,
                opening: Any = opening,
            ) -> None:
                rng = random.Random(seed)
                for n in range(40):
                    try:
                        if rng.random() < 0.1:
                            with opening:
                                opened.extend(comp(pair))
                        else:
                            opened[rng.randrange(len(opened))](n)
                    except (dp.SequentialityError, dp.BudgetExceeded):
                        pass

            hammer([partial(work, 100 * trial + s) for s in range(8)], deadline)
            for k in range(len(opened) // 2):  # each pair is sequential
                in_one_order([e for e in without_creation(log) if e[1] // 2 == k], group=lambda rid: rid)
            if sequential:  # ... and each query closes the pairs before it
                in_one_order(log, group=lambda rid: rid // 2)
                assert all(q.closed for q in opened[:-2])
            else:
                assert sum(q.closed for q in opened) <= len(opened) // 2  # at most one of each pair


@pytest.mark.parametrize("kind", ["zCDP filter", "odometer"])
def test_children_of_filters_and_odometers_queried_with_them(kind: str) -> None:
    """A filter (sequential for zCDP) or an odometer (concurrent) whose queries open sequential pairs."""
    deadline = time.monotonic() + DEADLINE
    with fast_switching():
        for trial in range(6):
            log: list[Event] = []
            ids = itertools.count()
            pair = dp.make_sequential(recorder(log, ids), recorder(log, ids))
            if kind == "zCDP filter":
                pair = dp.make_pure_to_zcdp(pair)
                parent = dp.make_privacy_filter(FLOAT, ABS, dp.ZCDP(), 1, 1.0)(0.0)
            else:
                parent = dp.make_odometer(FLOAT, ABS, dp.PureDP(), 1)(0.0)
            opened: list[Any] = list(parent(pair))

            def work(seed: int, parent: Any = parent, opened: list[Any] = opened, pair: Any = pair) -> None:
                rng = random.Random(seed)
                for n in range(40):
                    try:
                        if rng.random() < 0.1:
                            opened.extend(parent(pair))
                        else:
                            opened[rng.randrange(len(opened))](n)
                    except (dp.SequentialityError, dp.BudgetExceeded):
                        pass

            hammer([partial(work, 100 * trial + s) for s in range(8)], deadline)
            for k in range(len(opened) // 2):
                in_one_order([e for e in without_creation(log) if e[1] // 2 == k], group=lambda rid: rid)
            if kind == "zCDP filter":
                in_one_order(log, group=lambda rid: rid // 2)
            assert parent.queries_charged == parent.queries_answered == len(opened) // 2


class _Blocking(dp.Queryable[Any, Any]):
    """An interactive answer whose query "block" waits (mid-answer) until ``release`` is set."""

    def __init__(self, started: threading.Event, release: threading.Event) -> None:
        super().__init__(name="blocking")
        self.started, self.release = started, release

    def _answer(self, query: Any) -> Any:
        if query == "block":
            self.started.set()
            self.release.wait(DEADLINE)
        return query


def test_a_second_switch_waits_for_the_earlier_childs_answer_in_progress() -> None:
    """Thread A is mid-answer in an answer of the first child; thread B switches to the second child and
    waits for it; a third query to the second child must wait too (and so does the closing it relies on):
    when it returns, every answer of the first child is closed, so none answers after the second child."""
    started, release = threading.Event(), threading.Event()

    def spawn() -> dp.Measurement:  # type: ignore[type-arg]
        return dp.make_user_measurement(
            FLOAT,
            ABS,
            dp.PureDP(),
            lambda _: _Blocking(started, release),
            lambda d: d / 100,
            interactive=True,
            trusted=True,
        )

    filt = dp.make_privacy_filter(FLOAT, ABS, dp.PureDP(), 1, 1.0)
    first, second = dp.make_sequential(filt, filt)(0.0)
    busy, idle = first(spawn()), first(spawn())
    a = threading.Thread(target=busy, args=("block",), daemon=True)
    a.start()
    assert started.wait(DEADLINE)
    b = threading.Thread(target=second, args=(spawn(),), daemon=True)
    b.start()
    time.sleep(0.05)  # B is waiting for the busy answer to end
    c_done = threading.Event()
    c = threading.Thread(target=lambda: (second(spawn()), c_done.set()), daemon=True)
    c.start()
    assert not c_done.wait(0.2), "the second child answered while an answer of the first was in progress"
    release.set()
    for t in (a, b, c):
        t.join(DEADLINE)
    assert c_done.is_set()
    assert idle.closed
    with pytest.raises(dp.SequentialityError):
        idle("late")
