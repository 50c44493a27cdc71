"""Budget ledgers: durability (SIGKILL), two processes sharing one file, corrupt/foreign/locked files."""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

import dpcompose as dp

FLOAT = dp.AtomDomain(float)
ABS = dp.AbsoluteDistance()
SRC = str(Path(dp.__file__).resolve().parents[1])


def spy(cost: Fraction, calls: list[Any]) -> dp.Measurement:  # type: ignore[type-arg]
    def run(x: float) -> float:
        calls.append(x)
        return x

    return dp.make_user_measurement(FLOAT, ABS, dp.PureDP(), run, lambda d: cost, trusted=True)


def pure_filter(ledger: Any, budget: float = 1.0) -> Any:
    return dp.make_privacy_filter(FLOAT, ABS, dp.PureDP(), 1, budget, ledger=ledger)


def test_sqlite_ledger_persists_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "budget.db"
    q = pure_filter(dp.SQLiteLedger(path, "k"))(0.0)
    q(spy(Fraction(1, 4), []))
    q(spy(Fraction(1, 4), []))
    q.ledger.close()
    again = pure_filter(dp.SQLiteLedger(path, "k"))(0.0)
    assert again.spent() == {"epsilon": Fraction(1, 2), "delta": 0}
    assert again.queries_charged == 2
    assert again.max_queries_like(spy(Fraction(1, 4), [])) == 2
    # another key in the same file is another budget; adding a key to an existing file is explicit
    other = pure_filter(dp.SQLiteLedger(path, "other", create=True))(0.0)
    assert other.spent() == {"epsilon": 0, "delta": 0}


def test_renyi_filter_state_persists_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "renyi.db"

    def renyi_filter() -> Any:
        budget = dp.RenyiCurve(lambda a: Fraction(a) / 2, "α/2")  # a new lambda each time: same budget
        return dp.make_privacy_filter(
            FLOAT, ABS, dp.RenyiDP(), 1, budget, ledger=dp.SQLiteLedger(path, "k"), orders=[2, 8]
        )

    gauss = dp.m.make_gaussian(FLOAT, ABS, scale=2.0)  # ρ = 1/8
    q = renyi_filter()(0.0)
    q(gauss)
    q.ledger.close()
    again = renyi_filter()(0.0)
    assert again.spent() == {"alpha=2": Fraction(1, 4), "alpha=8": Fraction(1)}
    assert again.max_queries_like(gauss) == 3
    again.ledger.close()


def test_refusal_leaves_the_file_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "budget.db"
    ledger = dp.SQLiteLedger(path, "k")
    q = pure_filter(ledger)(0.0)
    calls: list[Any] = []
    q(spy(Fraction(3, 4), calls))
    before = ledger.read()
    with pytest.raises(dp.BudgetExceeded):
        q(spy(Fraction(1, 2), calls))
    assert ledger.read() == before
    assert calls == [0.0]


def test_mismatched_budget_or_rule_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "budget.db"
    pure_filter(dp.SQLiteLedger(path, "k"), 1.0)(0.0)
    with pytest.raises(dp.LedgerError, match="spec"):
        pure_filter(dp.SQLiteLedger(path, "k"), 2.0)(0.0)
    with pytest.raises(dp.LedgerError, match="odometer"):
        dp.make_odometer(FLOAT, ABS, dp.PureDP(), 1, ledger=dp.SQLiteLedger(path, "k"))(0.0)
    mem = dp.MemoryLedger()
    pure_filter(mem, 1.0)(0.0)
    with pytest.raises(dp.LedgerError):
        pure_filter(mem, 0.5)(0.0)


def test_foreign_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(dp.LedgerError, match="not a dpcompose ledger"):
        pure_filter(dp.SQLiteLedger(path, "k"))(0.0)


def test_corrupt_file_is_refused_not_restarted(tmp_path: Path) -> None:
    path = tmp_path / "budget.db"
    path.write_bytes(b"this is not an SQLite database" * 100)
    with pytest.raises(dp.LedgerError, match="corrupt|not a database|unusable"):
        pure_filter(dp.SQLiteLedger(path, "k"))(0.0)


def test_tampered_row_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "budget.db"
    ledger = dp.SQLiteLedger(path, "k")
    q = pure_filter(ledger)(0.0)
    q(spy(Fraction(1, 2), []))
    conn = sqlite3.connect(path)
    conn.execute(  # someone "resets" the budget in the key's last journal row
        "UPDATE dpcompose_journal SET entry = replace(entry, '1/2', '0/1') "
        "WHERE seq = (SELECT max(seq) FROM dpcompose_journal)"
    )
    assert conn.total_changes == 1
    conn.commit()
    conn.close()
    calls: list[Any] = []
    with pytest.raises(dp.LedgerError, match="corrupt"):
        q(spy(Fraction(1, 2), calls))
    assert calls == []
    with pytest.raises(dp.LedgerError, match="corrupt"):
        pure_filter(dp.SQLiteLedger(path, "k"))(0.0)


def test_locked_file_gives_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "budget.db"
    pure_filter(dp.SQLiteLedger(path, "k"))(0.0)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        # Reading needs no write lock (binding an existing key only reads); the charge waits and refuses.
        q = pure_filter(dp.SQLiteLedger(path, "k", timeout=0.2))(0.0)
        calls: list[Any] = []
        with pytest.raises(dp.LedgerLocked, match="locked"):
            q(spy(Fraction(1, 4), calls))
        assert calls == []
    finally:
        holder.execute("ROLLBACK")
        holder.close()


CRASH_CHILD = textwrap.dedent(
    """
    import sys, time
    from fractions import Fraction
    sys.path.insert(0, {src!r})
    import dpcompose as dp
    floats = dp.AtomDomain(float)

    def slow(x):
        open({marker!r}, "w").close()   # the charge is committed: now hang before releasing anything
        time.sleep(60)
        return x

    m = dp.make_user_measurement(floats, dp.AbsoluteDistance(), dp.PureDP(), slow, lambda d: Fraction(1, 8),
                             trusted=True)
    f = dp.make_privacy_filter(floats, dp.AbsoluteDistance(), dp.PureDP(), 1, 1.0,
                       ledger=dp.SQLiteLedger({path!r}, "crash"))
    print(f(0.0)(m))
    """
)


def reap(children: list[subprocess.Popen[bytes]]) -> None:
    """Kill the children still running, wait for them and close their pipes.

    A test that fails while its children run must not leave them behind: a running child or an open pipe
    is a ResourceWarning (an error here, filterwarnings = error) when its Popen object is collected, which
    happens in whichever later test next runs the garbage collector — test_sqlite_ledger_closes_its_connection
    then failed for test_two_processes_never_overspend_together's sake.
    """
    for child in children:
        if child.poll() is None:
            child.kill()
        child.wait()
        for pipe in (child.stdout, child.stderr):
            if pipe is not None:
                pipe.close()


def test_charge_survives_sigkill(tmp_path: Path) -> None:
    path, marker = str(tmp_path / "budget.db"), str(tmp_path / "charged")
    code = CRASH_CHILD.format(src=SRC, marker=marker, path=path)
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(marker):
            assert child.poll() is None, child.stderr.read().decode() if child.stderr else ""
            assert time.monotonic() < deadline, "child never reached the mechanism"
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
        out, _ = child.communicate(timeout=10)
    finally:
        reap([child])
    assert child.returncode == -signal.SIGKILL
    assert out == b""  # killed before it printed anything
    q = pure_filter(dp.SQLiteLedger(path, "crash"))(0.0)
    assert q.spent() == {"epsilon": Fraction(1, 8), "delta": 0}
    assert q.queries_charged == 1


HAMMER_CHILD = textwrap.dedent(
    """
    import sys
    from fractions import Fraction
    sys.path.insert(0, {src!r})
    import dpcompose as dp
    floats = dp.AtomDomain(float)
    m = dp.make_user_measurement(floats, dp.AbsoluteDistance(), dp.PureDP(), lambda x: x,
                             lambda d: Fraction(1, 50), trusted=True)
    f = dp.make_privacy_filter(floats, dp.AbsoluteDistance(), dp.PureDP(), 1, 1.0,
                       ledger=dp.SQLiteLedger({path!r}, "shared"))
    q = f(0.0)
    answered = 0
    for _ in range(80):
        try:
            q(m)
            answered += 1
        except dp.BudgetExceeded:
            pass
    print(answered)
    """
)


def test_two_processes_never_overspend_together(tmp_path: Path) -> None:
    path = str(tmp_path / "budget.db")
    code = HAMMER_CHILD.format(src=SRC, path=path)
    children = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(2)
    ]
    counts = []
    try:
        for child in children:
            out, err = child.communicate(timeout=120)
            assert child.returncode == 0, err.decode()
            counts.append(int(out))
    finally:
        reap(children)
    assert sum(counts) == 50  # 1.0 / (1/50): exactly the budget, never more
    q = pure_filter(dp.SQLiteLedger(path, "shared"))(0.0)
    assert q.spent() == {"epsilon": 1, "delta": 0}
    assert q.queries_charged == 50


def test_a_new_file_without_keys_takes_the_key_of_a_second_opener(tmp_path: Path) -> None:
    # The window test_two_processes_never_overspend_together fell into under load: process A creates the
    # file, and process B opens it before A's bind has added the key. B was refused ("has no key"), by
    # timing alone: had B looked a moment earlier it would have created the file itself.
    path = tmp_path / "budget.db"
    first = dp.SQLiteLedger(path, "shared")
    assert first.head()[0] == 0  # the file exists now, with no key yet (A between creating and binding)
    second = pure_filter(dp.SQLiteLedger(path, "shared"))(0.0)  # B: no create=True, as in the hammer
    q = pure_filter(first)(0.0)  # A binds the key B has added: one budget
    q(spy(Fraction(1, 2), []))
    second(spy(Fraction(1, 2), []))
    with pytest.raises(dp.BudgetExceeded):
        q(spy(Fraction(1, 100), []))
    assert second.queries_charged == 2
    # a file that holds a key is not new: a key it never had is still added only when asked for
    with pytest.raises(dp.LedgerError, match="no key 'other'.*create=True"):
        pure_filter(dp.SQLiteLedger(path, "other"))(0.0)


def test_a_key_added_between_bind_read_and_write_makes_the_file_not_new(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "budget.db"
    dp.SQLiteLedger(path, "maker").head()  # a file no key was ever added to
    late = dp.SQLiteLedger(path, "late")
    original = late._transaction

    def interleaved(immediate: bool) -> Any:
        if immediate:  # between late's read (file still new) and its write, another process adds a key
            pure_filter(dp.SQLiteLedger(path, "first"))(0.0)
        return original(immediate)

    monkeypatch.setattr(late, "_transaction", interleaved)
    with pytest.raises(dp.LedgerError, match="no key 'late'.*create=True"):
        pure_filter(late)(0.0)
    with pytest.raises(dp.LedgerError, match="no key 'late'"):
        pure_filter(dp.SQLiteLedger(path, "late"))(0.0)  # nothing was added for it


def test_memory_ledger_shared_by_two_runs() -> None:
    ledger = dp.MemoryLedger()
    f = pure_filter(ledger, 1.0)
    a, b = f(1.0), f(2.0)
    a(spy(Fraction(1, 2), []))
    b(spy(Fraction(1, 2), []))
    with pytest.raises(dp.BudgetExceeded):
        a(spy(Fraction(1, 100), []))
    assert ledger.read().queries == 2


def test_sqlite_ledger_closes_its_connection(tmp_path: Path) -> None:
    with dp.SQLiteLedger(tmp_path / "ctx.db", "k") as ledger:
        q = pure_filter(ledger)(0.0)
        q(spy(Fraction(1, 4), []))
        conn = ledger._conn
        assert conn is not None
    with pytest.raises(sqlite3.ProgrammingError):
        conn.execute("SELECT 1")  # closed by the with block
    ledger = dp.SQLiteLedger(tmp_path / "gc.db", "k")
    pure_filter(ledger)(0.0)(spy(Fraction(1, 4), []))
    conn = ledger._conn
    assert conn is not None
    del ledger, q
    gc.collect()
    with pytest.raises(sqlite3.ProgrammingError):
        conn.execute("SELECT 1")  # closed when the ledger was collected


# -- issue 32 item 12: readers ----------------------------------------------------------------------------


def test_a_reader_holding_a_transaction_blocks_charges_and_the_error_says_how_to_read(tmp_path: Path) -> None:
    """A reader that keeps a read transaction open (a DB browser, the sqlite3 shell after BEGIN, a cursor
    not read to the end) holds a shared lock, and in rollback-journal mode no charge can commit meanwhile:
    it fails safe (LedgerLocked, nothing charged or run), and the error names the cause and the safe way
    to read a ledger in use."""
    path = tmp_path / "budget.db"
    pure_filter(dp.SQLiteLedger(path, "k"))(0.0)(spy(Fraction(1, 4), []))
    reader = sqlite3.connect(path, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM dpcompose_journal").fetchall()
    try:
        q = pure_filter(dp.SQLiteLedger(path, "k", timeout=0.2))(0.0)
        calls: list[Any] = []
        advice = "reader.*transaction open.*head\\(\\).*spent\\(\\)"
        with pytest.raises(dp.LedgerLocked, match=advice) as info:
            q(spy(Fraction(1, 4), calls))
        assert "nothing was run or spent" in str(info.value)
        assert calls == []
    finally:
        reader.execute("COMMIT")
        reader.close()
    assert q.spent() == {"epsilon": Fraction(1, 4), "delta": 0}


def monitor(path: str, seconds: float, out: Any) -> None:
    """Read the ledger the documented way, as fast as possible, for ``seconds``; put the count or an error."""
    try:
        ledger = dp.SQLiteLedger(path, "shared")
        f = pure_filter(ledger)
        reads, last, deadline = 0, (-1, Fraction(0)), time.monotonic() + seconds
        while time.monotonic() < deadline:
            now = (ledger.head()[0], f(0.0).spent()["epsilon"])
            if now < last:
                raise AssertionError(f"read {now} after {last}")
            last, reads = now, reads + 1
        out.put(reads)
    except BaseException as exc:  # reported to the test
        out.put(f"{type(exc).__name__}: {exc}")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_the_documented_read_does_not_block_charges(tmp_path: Path) -> None:
    """Another process reading the ledger in a loop the documented way (head(), the filter's spent()) as
    fast as it can: every charge still commits within a 2 s timeout."""
    path = str(tmp_path / "budget.db")
    q = pure_filter(dp.SQLiteLedger(path, "shared", timeout=2))(0.0)
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=monitor, args=(path, 1.0, out), daemon=True)
    child.start()
    try:
        charged = 0
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline and charged < 999:  # (1,000 charges of 1/1000 fill the budget)
            q(spy(Fraction(1, 1000), []))  # a LedgerLocked here fails the test
            charged += 1
        reads = out.get(timeout=60)
    finally:
        child.join(timeout=30)
        if child.is_alive():
            child.kill()
    assert isinstance(reads, int) and reads > 0, reads
    assert charged > 0 and q.queries_charged == charged
