from __future__ import annotations

import threading

import pytest

import dpcompose as dp


class Counter(dp.Queryable[int, int]):
    def __init__(self) -> None:
        super().__init__(name="counter")
        self.total = 0

    def _answer(self, query: int) -> int:
        # read-modify-write that would race without the base class's lock
        current = self.total
        self.total = current + query
        return self.total


def test_queryable_answers_and_counts() -> None:
    q = Counter()
    assert q(2) == 2
    assert q(3) == 5
    assert q.queries_answered == 2
    assert "2 answered" in repr(q)


def test_closed_queryable_refuses_and_runs_nothing() -> None:
    q = Counter()
    q.close("budget spent")
    with pytest.raises(dp.SequentialityError, match="budget spent"):
        q(1)
    assert q.total == 0 and q.closed


def test_guard_can_refuse_without_running() -> None:
    q = Counter()

    def guard(_: dp.Queryable[int, int]) -> None:
        raise dp.BudgetExceeded("no")

    q.add_guard(guard)
    with pytest.raises(dp.BudgetExceeded):
        q(1)
    assert q.total == 0 and q.queries_answered == 0


def test_queryable_is_thread_safe() -> None:
    q = Counter()

    def work() -> None:
        for _ in range(2000):
            q(1)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert q.total == 16000 == q.queries_answered


@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle"])
def test_a_queryable_cannot_be_copied(how: str) -> None:
    """Found by review: ``copy.copy`` of an adaptive compositor with a budget for one ε = 1 query answered two
    (each copy kept its own spent total), and a copied interactive Laplace answered 20 times."""
    import copy
    import pickle

    floats, metric = dp.AtomDomain(float), dp.AbsoluteDistance()
    q = dp.make_adaptive_sequential(floats, metric, dp.PureDP(), 1, [1])(0.0)
    do = {"copy": copy.copy, "deepcopy": copy.deepcopy, "pickle": pickle.dumps}[how]
    with pytest.raises(dp.SequentialityError, match="cannot be copied"):
        do(q)
    q(dp.m.make_laplace(floats, metric, scale=1.0))
    with pytest.raises(dp.BudgetExceeded):  # the original's one budget is spent
        q(dp.m.make_laplace(floats, metric, scale=1.0))
