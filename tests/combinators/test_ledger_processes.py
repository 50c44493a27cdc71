"""Ledgers across processes (issue 11 B.7, B.8, C.9): forked workers, units, kills at random moments."""

from __future__ import annotations

import multiprocessing
import os
import random
import shutil
import signal
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

import dpcompose as dp
from dpcompose.combinators._ledger import journal

FLOAT = dp.AtomDomain(float)
ABS = dp.AbsoluteDistance()
LAP = dp.m.make_laplace(FLOAT, ABS, scale=50.0)  # ε = 1/50: a budget of 1 admits 50 queries

# -- B.7: forked workers ------------------------------------------------------------------------------------

QUERYABLE: Any = None  # a module-level privacy filter, inherited by forked pool workers


def ask(_: int) -> str:
    try:
        QUERYABLE(LAP)
    except dp.BudgetExceeded:
        return "refused: budget"
    except (dp.LedgerError, dp.SequentialityError) as exc:  # the queryable or its ledger refuses
        return f"refused: {exc}"
    return "answered"


def run_pool(queryable: Any, tasks: int = 200) -> list[str]:
    global QUERYABLE
    QUERYABLE = queryable
    try:
        with multiprocessing.get_context("fork").Pool(2) as pool:
            return pool.map(ask, range(tasks), chunksize=5)
    finally:
        QUERYABLE = None


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_workers_cannot_multiply_a_memory_ledger_budget() -> None:
    q = dp.make_privacy_filter(FLOAT, ABS, dp.PureDP(), 1, 1.0)(0.0)  # MemoryLedger by default
    results = run_pool(q)
    assert results.count("answered") == 0
    assert all(r.startswith("refused: ") and "SQLiteLedger" in r for r in results), set(results)
    assert q.queries_charged == 0
    assert q.spent() == {"epsilon": 0, "delta": 0}
    q(LAP)  # the parent's own budget is intact and usable
    assert q.queries_charged == 1


@pytest.fixture(params=["journal", "folds"])
def folding(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test on the journal as it is, and folded every few rows (forked children inherit it)."""
    if request.param == "folds":
        monkeypatch.setattr(journal, "KEEP_ROWS", 2)
        monkeypatch.setattr(journal, "FOLD_EVERY", 1)
    return str(request.param)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_workers_share_an_sqlite_ledger_budget(tmp_path: Path, folding: str) -> None:
    ledger = dp.SQLiteLedger(tmp_path / "budget.db", "pool")
    q = dp.make_privacy_filter(FLOAT, ABS, dp.PureDP(), 1, 1.0, ledger=ledger)(0.0)
    q(LAP)  # the parent has an open connection when it forks
    results = run_pool(q)
    assert results.count("answered") == 49  # never more than the budget, across all workers
    assert results.count("refused: budget") == 151
    assert q.queries_charged == 50
    assert q.spent() == {"epsilon": 1, "delta": 0}


# -- B.8: units -------------------------------------------------------------------------------------------


def dataset_filter(metric: Any, ledger: Any) -> Any:
    domain = dp.VectorDomain(dp.AtomDomain(int))
    return dp.make_privacy_filter(domain, metric, dp.PureDP(), 1, 1.0, ledger=ledger)


@pytest.mark.parametrize("store", ["memory", "sqlite"])
def test_change_one_and_add_remove_filters_cannot_share_a_budget(tmp_path: Path, store: str) -> None:
    def ledger() -> Any:
        return dp.MemoryLedger() if store == "memory" else dp.SQLiteLedger(tmp_path / "b.db", "k")

    shared = ledger()
    q = dataset_filter(dp.ChangeOneDistance(), shared)([1, 2, 3])
    count = dp.t.make_count(dp.VectorDomain(dp.AtomDomain(int)), dp.ChangeOneDistance())
    q(count >> dp.m.make_laplace(dp.AtomDomain(int), ABS, scale=4.0))
    other = shared if store == "memory" else ledger()
    with pytest.raises(dp.LedgerError, match="SymmetricDistance"):
        dataset_filter(dp.SymmetricDistance(), other)([1, 2, 3])
    assert shared.read().queries == 1  # nothing run, nothing charged


def test_the_bound_spec_names_domain_and_metric() -> None:
    ledger = dp.MemoryLedger()
    dataset_filter(dp.SymmetricDistance(), ledger)([1])
    spec = ledger.read().spec
    assert "VectorDomain(AtomDomain(int))" in spec and "SymmetricDistance()" in spec
    assert "budget=1" in spec and "d_in=1" in spec and "rule=auto" in spec and "PureDP" in spec


# -- C.9: kills at random moments, then the journal deleted or the .db copied alone -------------------------


def hammer(path: str, returned: str, ready: str) -> None:
    """Charge in a loop; note each charge that returned (the mechanism runs only after it)."""
    fd = os.open(returned, os.O_WRONLY | os.O_APPEND | os.O_CREAT)

    def note(x: float) -> float:
        os.write(fd, b".")
        return x

    m = dp.make_user_measurement(FLOAT, ABS, dp.PureDP(), note, lambda d: Fraction(1, 10**6), trusted=True)
    ledger = dp.SQLiteLedger(path, "k", create=True)
    q = dp.make_privacy_filter(FLOAT, ABS, dp.PureDP(), 1, 1.0, ledger=ledger)(0.0)
    open(ready, "w").close()
    while True:
        q(m)


def kill_while_charging(tmp: Path, rng: random.Random, i: int) -> tuple[Path, int]:
    """A forked process charging in a loop, SIGKILLed at a random moment; its file and charges returned."""
    path, returned, ready = tmp / f"k{i}.db", tmp / f"returned{i}", tmp / f"ready{i}"
    child = multiprocessing.get_context("fork").Process(
        target=hammer, args=(str(path), str(returned), str(ready)), daemon=True
    )
    child.start()
    try:
        deadline = time.monotonic() + 60
        # From the first returned charge (``returned`` exists before ``ready``): on a loaded disk the first
        # charge could take longer than the shortest wait, and the round killed a child that had none.
        while not (ready.exists() and returned.stat().st_size):
            assert child.is_alive(), f"child exited with {child.exitcode}"
            assert time.monotonic() < deadline
            time.sleep(0.005)
        time.sleep(rng.uniform(0.02, 0.3))
        assert child.pid is not None
        os.kill(child.pid, signal.SIGKILL)
        child.join(timeout=30)
    finally:
        if child.is_alive():
            child.kill()
    assert child.exitcode == -signal.SIGKILL
    return path, len(returned.read_bytes())


def reopened_queries(path: Path) -> int | None:
    """Queries in the reopened ledger, or None if it refuses (LedgerError)."""
    try:
        f = dp.make_privacy_filter(FLOAT, ABS, dp.PureDP(), 1, 1.0, ledger=dp.SQLiteLedger(path, "k"))
        return int(f(0.0).queries_charged)
    except dp.LedgerError:
        return None


def crash_rounds(tmp: Path, rounds: int) -> None:
    rng = random.Random(2024)
    refused = 0
    for i in range(rounds):
        path, returned = kill_while_charging(tmp, rng, i)
        assert returned > 0
        alone = tmp / f"alone{i}" / "k.db"
        alone.parent.mkdir()
        shutil.copy(path, alone)  # the .db copied alone, right after the kill
        journal = Path(str(path) + "-journal")
        journal.unlink(missing_ok=True)  # the journal deleted
        for p in (path, alone):
            got = reopened_queries(p)
            if got is None:
                refused += 1
            else:
                assert got >= returned, f"round {i}: {p.name} lost charges: {got} < {returned}"
    assert refused <= rounds  # a torn in-flight transaction may be refused; a returned charge is never lost


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_kill_then_delete_journal_or_copy_db_alone_loses_no_charge(tmp_path: Path, folding: str) -> None:
    crash_rounds(tmp_path, 5)


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_many_kills_lose_no_charge(tmp_path: Path, folding: str) -> None:
    crash_rounds(tmp_path, 60)


# -- issue 32 item 6: processes opening a fresh path with one anchor at once ---------------------------------


def open_fresh_paths(tmp: str, rounds: int, barrier: Any, results: Any, seed: int) -> None:
    """In each round, open that round's fresh path with anchor= as the other workers do (a fresh anchor
    every other round, else the previous round's)."""
    rng = random.Random(seed)
    for i in range(rounds):
        path, anchor = os.path.join(tmp, f"fresh{i}.db"), os.path.join(tmp, f"anchor{i // 2}.db")
        barrier.wait()
        time.sleep(rng.uniform(0, 0.004))  # spread the workers over the window between stat and anchor
        try:
            with dp.SQLiteLedger(path, "k", anchor=anchor) as ledger:
                ledger.bind("filter", "fresh")
            results.put("bound")
        except Exception as exc:  # every outcome is reported; the test says which are wrong
            results.put(f"{type(exc).__name__}: {exc}")


def fresh_path_rounds(tmp: Path, rounds: int, workers: int = 4) -> None:
    ctx = multiprocessing.get_context("fork")
    barrier, results = ctx.Barrier(workers), ctx.Queue()
    procs = [
        ctx.Process(target=open_fresh_paths, args=(str(tmp), rounds, barrier, results, seed), daemon=True)
        for seed in range(workers)
    ]
    for p in procs:
        p.start()
    try:
        outcomes = [results.get(timeout=120) for _ in range(rounds * workers)]
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    refused = [o for o in outcomes if o != "bound"]
    assert not refused, f"{len(refused)} of {len(outcomes)} refused: {refused[:3]}"
    for i in range(rounds):  # one file per path, its key added once: every worker bound the same budget
        with dp.SQLiteLedger(tmp / f"fresh{i}.db", "k", anchor=tmp / f"anchor{i // 2}.db") as ledger:
            assert ledger.head()[0] == 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_processes_opening_a_fresh_path_with_an_anchor_all_bind(tmp_path: Path) -> None:
    """docs/adaptive.md promises that processes starting together on a fresh path all bind; with anchor=,
    4-6 of 60 were refused ("does not exist, but anchor records a ledger at this path"): another process
    created the file and recorded it in the anchor between this one's look at the path and at the anchor."""
    fresh_path_rounds(tmp_path, 16)


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_many_processes_opening_fresh_paths_with_an_anchor_all_bind(tmp_path: Path) -> None:
    fresh_path_rounds(tmp_path, 250)
