"""SQLiteLedger files (issue 11 C.9, D.10): creation is explicit, nothing is silently forgotten, every
failure is a LedgerError with the right diagnosis, and its parameters are validated."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dpcompose as dp
from dpcompose.combinators._ledger import LedgerEntry
from dpcompose.combinators._ledger.anchor import Anchor

KIND, SPEC = "filter", "test spec"


def add(q: Fraction) -> Any:
    def update(e: LedgerEntry) -> LedgerEntry:
        total = e.state[0] if e.state else Fraction(0)
        return e.replace(rule="basic", state=(total + q,), queries=e.queries + 1)

    return update


def make_ledger(path: Path, charges: int = 3, key: str = "k") -> LedgerEntry:
    ledger = dp.SQLiteLedger(path, key, create=True)
    ledger.bind(KIND, SPEC)
    entry = ledger.read()
    for i in range(charges):
        entry = ledger.charge(add(Fraction(1, 4 + i)))
    ledger.close()
    return entry


def charge_repeatedly(ledger: dp.SQLiteLedger, q: Fraction, times: int) -> None:
    for _ in range(times):
        ledger.charge(add(q))


def read(path: Path, key: str = "k", create: bool = False) -> LedgerEntry:
    ledger = dp.SQLiteLedger(path, key, create=create)
    try:
        ledger.bind(KIND, SPEC)
        return ledger.read()
    finally:
        ledger.close()


# -- creation ---------------------------------------------------------------------------------------------


def test_a_missing_path_is_created_and_reopened(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    committed = make_ledger(path)
    assert read(path) == committed
    assert sorted(os.listdir(tmp_path)) == ["new.db", "new.db-journal"]  # no temporary file left


def test_an_empty_file_is_never_initialised(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    path.write_bytes(b"")
    for create in (False, True):
        with pytest.raises(dp.LedgerError, match="empty"):
            read(path, create=create)
    assert path.read_bytes() == b""  # untouched


@pytest.mark.parametrize("size", [1, 99, 100, 512])
def test_a_truncated_ledger_is_refused(tmp_path: Path, size: int) -> None:
    path = tmp_path / "t.db"
    make_ledger(path)
    with open(path, "r+b") as f:
        f.truncate(size)
    with pytest.raises(dp.LedgerError):
        read(path, create=True)


def test_a_new_key_in_an_existing_file_needs_create(tmp_path: Path) -> None:
    path = tmp_path / "b.db"
    make_ledger(path)
    with pytest.raises(dp.LedgerError, match="no key 'other'.*create=True"):
        read(path, "other")
    assert read(path, "other", create=True).queries == 0
    assert read(path, "other").queries == 0  # exists now


def test_a_deleted_key_is_detected_even_with_create(tmp_path: Path) -> None:
    path = tmp_path / "d.db"
    make_ledger(path, key="k")
    make_ledger(path, key="other")
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("DELETE FROM dpcompose_journal WHERE key = CAST('k' AS BLOB)")
        conn.commit()
    for create in (False, True):
        with pytest.raises(dp.LedgerError, match="corrupt"):
            read(path, "k", create=create)


def test_deleting_the_last_charge_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "d.db"
    make_ledger(path)
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("DELETE FROM dpcompose_journal WHERE seq = (SELECT max(seq) FROM dpcompose_journal)")
        conn.commit()
    with pytest.raises(dp.LedgerError, match="head"):
        read(path)


def test_an_older_row_copied_back_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    make_ledger(path, charges=4)
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute(
            "UPDATE dpcompose_journal SET (entry, hash) = (SELECT entry, hash FROM dpcompose_journal "
            "WHERE seq = 2) WHERE seq = (SELECT max(seq) FROM dpcompose_journal)"
        )
        conn.commit()
    with pytest.raises(dp.LedgerError, match="chained checksum"):
        read(path)


def test_a_rollback_while_open_is_detected_and_head_shows_it(tmp_path: Path) -> None:
    path = tmp_path / "w.db"
    make_ledger(path, charges=1)
    shutil.copy(path, tmp_path / "old.db")
    ledger = dp.SQLiteLedger(path, "k")
    ledger.bind(KIND, SPEC)
    ledger.charge(add(Fraction(1, 2)))
    mark = ledger.head()  # an external high-water mark
    ledger.close()
    shutil.copy(tmp_path / "old.db", path)  # the whole file rolled back to an older copy
    with pytest.raises(dp.LedgerError, match="went back"):
        ledger.read()
    fresh = dp.SQLiteLedger(path, "k")
    assert fresh.head()[0] < mark[0]  # undetectable from inside the file, visible against the mark
    fresh.close()


@pytest.mark.parametrize("how", ["replaced", "deleted"])
def test_a_file_replaced_or_deleted_while_open_is_detected(tmp_path: Path, how: str) -> None:
    path = tmp_path / "w.db"
    make_ledger(path, charges=1)
    shutil.copy(path, tmp_path / "old.db")
    ledger = dp.SQLiteLedger(path, "k")
    ledger.bind(KIND, SPEC)
    ledger.charge(add(Fraction(1, 2)))
    if how == "replaced":
        os.replace(tmp_path / "old.db", path)  # the open connection still holds the newer inode
    else:
        path.unlink()
    with pytest.raises(dp.LedgerError, match=how):
        ledger.charge(add(Fraction(1, 2)))  # not into an orphaned file that nobody will read again
    ledger.close()


def test_an_old_schema_file_is_refused_not_migrated(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    with contextlib.closing(sqlite3.connect(path)) as conn:  # the layout dpcompose wrote before issue 11
        conn.execute(f"PRAGMA application_id = {0x44504C47}")
        conn.execute("PRAGMA user_version = 1")
        conn.execute(
            "CREATE TABLE dpcompose_ledger (key TEXT PRIMARY KEY, kind TEXT NOT NULL, spec TEXT NOT NULL, "
            "rule TEXT NOT NULL, state TEXT NOT NULL, queries INTEGER NOT NULL, checksum TEXT NOT NULL)"
        )
        conn.commit()
    before = path.read_bytes()
    with pytest.raises(dp.LedgerError, match="schema version 1"):
        read(path, create=True)
    assert path.read_bytes() == before


def test_invalid_utf8_is_a_ledger_error(tmp_path: Path) -> None:
    path = tmp_path / "u.db"
    make_ledger(path)
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute(
            "UPDATE dpcompose_journal SET entry = CAST(x'7bff22' AS TEXT) "
            "WHERE seq = (SELECT max(seq) FROM dpcompose_journal)"
        )
        conn.commit()
    with pytest.raises(dp.LedgerError, match="corrupt"):
        read(path)


def test_a_trigger_or_extra_table_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    make_ledger(path)
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute(
            "CREATE TRIGGER t AFTER INSERT ON dpcompose_journal BEGIN "
            "DELETE FROM dpcompose_journal WHERE seq < new.seq; END"
        )
        conn.commit()
    with pytest.raises(dp.LedgerError, match="schema"):
        read(path)


# -- diagnosis --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def read_only(*paths: Path) -> Iterator[None]:
    """Make files/directories read-only, also for root (chattr +i), or skip."""
    if os.geteuid() != 0:
        modes = [p.stat().st_mode for p in paths]
        for p in paths:
            p.chmod(0o555 if p.is_dir() else 0o444)
        try:
            yield
        finally:
            for p, m in zip(paths, modes, strict=True):
                p.chmod(m)
        return
    if shutil.which("chattr") is None:
        pytest.skip("root without chattr: cannot make a file read-only")
    done = []
    try:
        for p in paths:
            if subprocess.run(["chattr", "+i", str(p)], capture_output=True).returncode != 0:
                pytest.skip("chattr +i is not supported here")
            done.append(p)
        yield
    finally:
        for p in done:
            subprocess.run(["chattr", "-i", str(p)], check=True)


def test_a_read_only_file_is_reported_as_read_only(tmp_path: Path) -> None:
    path = tmp_path / "ro.db"
    committed = make_ledger(path)
    with read_only(path):
        ledger = dp.SQLiteLedger(path, "k")
        assert ledger.bind(KIND, SPEC) == committed  # reading works
        with pytest.raises(dp.LedgerError, match="read-only") as info:
            ledger.charge(add(Fraction(1)))
        assert "corrupt" not in str(info.value)
        ledger.close()
    assert read(path) == committed


def test_a_read_only_directory_is_reported_as_read_only(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    with read_only(folder):
        with pytest.raises(dp.LedgerError, match="read-only") as info:
            read(folder / "new.db")
        assert "corrupt" not in str(info.value)


def test_a_full_disk_is_reported_as_disk_full(tmp_path: Path) -> None:
    path = tmp_path / "full.db"
    committed = make_ledger(path)
    ledger = dp.SQLiteLedger(path, "k")
    ledger.bind(KIND, SPEC)
    conn = ledger._conn
    assert conn is not None
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")  # SQLite reports SQLITE_FULL past this size
    big = Fraction(1, 3**4000)  # an entry that does not fit in the free space of the last page
    with pytest.raises(dp.LedgerError, match="disk full") as info:
        charge_repeatedly(ledger, big, 20)
    assert "corrupt" not in str(info.value)
    ledger.close()
    entry = read(path)
    assert entry.queries >= committed.queries  # what was committed before the disk filled stays


def test_a_full_file_system_is_reported_as_disk_full(tmp_path: Path) -> None:
    mount = tmp_path / "small"
    mount.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], capture_output=True
        ).returncode
    ):
        pytest.skip("cannot mount a small tmpfs here")
    try:
        path = mount / "budget.db"
        make_ledger(path, charges=1)
        filler = mount / "filler"
        with open(filler, "wb", buffering=0) as f, contextlib.suppress(OSError):
            while True:
                f.write(b"\0" * 1024)
        ledger = dp.SQLiteLedger(path, "k")
        ledger.bind(KIND, SPEC)
        with pytest.raises(dp.LedgerError, match="disk full") as info:
            charge_repeatedly(ledger, Fraction(1, 3**300), 200)
        assert "corrupt" not in str(info.value)
        ledger.close()
        filler.unlink()
        assert read(path).queries >= 1
    finally:
        subprocess.run(["umount", str(mount)], check=True)


# -- backup -----------------------------------------------------------------------------------------------


def test_backup_is_a_verified_consistent_copy(tmp_path: Path) -> None:
    path = tmp_path / "live.db"
    committed = make_ledger(path)
    ledger = dp.SQLiteLedger(path, "k")
    ledger.backup(tmp_path / "copy.db")
    assert read(tmp_path / "copy.db") == committed
    with pytest.raises(dp.LedgerError, match="exists"):
        ledger.backup(tmp_path / "copy.db")
    with pytest.raises(dp.InvalidParameter, match="dest"):
        ledger.backup(3)  # type: ignore[arg-type]
    ledger.close()


# -- size (issue 32 item 10) ------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_file_stays_bounded_at_the_real_thresholds(tmp_path: Path) -> None:
    """The journal grew by one row (~210-250 bytes) per charge for ever; folded into checkpoints, it holds
    at most about 100 rows and the file stops growing (test_ledger_checkpoint folds every few rows)."""
    path = tmp_path / "l.db"
    ledger = dp.SQLiteLedger(path, "k")
    ledger.bind(KIND, SPEC)
    most, sizes = 0, []
    for _ in range(600):
        committed = ledger.charge(add(Fraction(1, 1000)))
        with contextlib.closing(sqlite3.connect(path)) as conn:
            most = max(most, conn.execute("SELECT count(*) FROM dpcompose_journal").fetchone()[0])
        sizes.append(path.stat().st_size)
    ledger.close()
    assert most <= 100
    assert max(sizes[300:]) <= max(sizes[:300]) <= 64 * 1024
    assert read(path) == committed and committed.queries == 600


# -- parameters (D.10) ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "timeout", [float("nan"), float("inf"), -1, -0.5, True, False, "3", None, np.float64("nan"), 10**400]
)
def test_timeout_is_validated(tmp_path: Path, timeout: Any) -> None:
    with pytest.raises(dp.InvalidParameter, match="timeout"):
        dp.SQLiteLedger(tmp_path / "t.db", "k", timeout=timeout)


@pytest.mark.parametrize("timeout", [0, 0.0, 2.5, Fraction(1, 2), np.float32(1.5), 1e308])
def test_valid_timeouts_work(tmp_path: Path, timeout: Any) -> None:
    ledger = dp.SQLiteLedger(tmp_path / "t.db", "k", timeout=timeout)
    assert ledger.bind(KIND, SPEC).queries == 0
    ledger.close()


@pytest.mark.parametrize("key", ["", 3, None, b"k", "\udc80"])
def test_key_is_validated(tmp_path: Path, key: Any) -> None:
    with pytest.raises(dp.InvalidParameter, match="key"):
        dp.SQLiteLedger(tmp_path / "k.db", key)


@pytest.mark.parametrize("path", [3, None, b"/tmp/x.db", ""])
def test_path_is_validated(path: Any) -> None:
    with pytest.raises(dp.InvalidParameter, match="path"):
        dp.SQLiteLedger(path, "k")


@pytest.mark.parametrize("create", [1, "yes", None])
def test_create_is_validated(tmp_path: Path, create: Any) -> None:
    with pytest.raises(dp.InvalidParameter, match="create"):
        dp.SQLiteLedger(tmp_path / "c.db", "k", create=create)


# -- anchors: what the file cannot see from inside (found by review: an older copy gave the budget back) --


def anchored(path: Path, anchor: Path, key: str = "k") -> dp.SQLiteLedger:
    ledger = dp.SQLiteLedger(path, key, create=True, anchor=anchor)
    ledger.bind(KIND, SPEC)
    return ledger


def test_anchor_refuses_an_older_copy_and_a_deleted_file(tmp_path: Path) -> None:
    path, anchor = tmp_path / "l.db", tmp_path / "safe" / "anchor.db"
    anchor.parent.mkdir()
    with anchored(path, anchor) as ledger:
        ledger.charge(add(Fraction(1, 2)))
    shutil.copy(path, tmp_path / "old.db")
    with anchored(path, anchor) as ledger:  # a new session continues where the anchor says
        assert ledger.charge(add(Fraction(1, 4))).state == (Fraction(3, 4),)
    shutil.copy(tmp_path / "old.db", path)  # the whole file rolled back between sessions
    with pytest.raises(dp.LedgerError, match="rolled back .*recorded it at 3"):
        anchored(path, anchor)
    # rolled back and written again past the recorded sequence: another hash at the recorded row
    with dp.SQLiteLedger(path, "k") as plain:
        plain.bind(KIND, SPEC)
        plain.charge(add(Fraction(1, 8)))
        plain.charge(add(Fraction(1, 8)))
    with pytest.raises(dp.LedgerError, match="rolled back .*journal row 3 differs"):
        anchored(path, anchor)
    os.unlink(path)
    with pytest.raises(dp.LedgerError, match="does not exist, but anchor"):
        anchored(path, anchor)
    assert not path.exists()  # nothing was created
    make_ledger(path)  # another ledger put at the recorded path (without the anchor)
    with pytest.raises(dp.LedgerError, match="another ledger file at this path"):
        anchored(path, anchor)


def test_anchor_follows_a_moved_file_and_keeps_up_to_date_copies(tmp_path: Path) -> None:
    path, anchor = tmp_path / "l.db", tmp_path / "anchor.db"
    with anchored(path, anchor) as ledger:
        ledger.charge(add(Fraction(1, 2)))
        ledger.backup(tmp_path / "backup.db")
    shutil.copy(tmp_path / "backup.db", path)  # a backup as new as the anchor's record is the same ledger
    moved = tmp_path / "moved.db"
    os.replace(path, moved)
    with anchored(moved, anchor) as ledger:
        assert ledger.read().state == (Fraction(1, 2),)
    # the old path stays recorded: a file missing there is refused, never a fresh budget
    with pytest.raises(dp.LedgerError, match="does not exist, but anchor"):
        anchored(path, anchor)
    assert not path.exists()
    with pytest.raises(dp.InvalidParameter, match="other than the ledger"):
        dp.SQLiteLedger(path, "k", anchor=path)
    with pytest.raises(dp.InvalidParameter, match="anchor"):
        dp.SQLiteLedger(path, "k", anchor=3)  # type: ignore[arg-type]


def test_anchor_is_never_lowered_by_a_process_behind(tmp_path: Path) -> None:
    """Two ledger objects on one file: the anchor keeps the larger head whichever writes last."""
    path, anchor = tmp_path / "l.db", tmp_path / "anchor.db"
    a, b = anchored(path, anchor), anchored(path, anchor)
    for _ in range(3):
        a.charge(add(Fraction(1, 10)))
    b.read()  # b verifies the newer head and records it (no lower value is ever written)
    a.close(), b.close()
    rows = sqlite3.connect(anchor).execute("SELECT seq FROM dpcompose_anchor").fetchall()
    assert rows == [(4,)]
    # a record of an older head after its commit (a process that committed sequence 2 and records late,
    # after others committed more) keeps 4 and its hash
    mark = Anchor(str(anchor), 5.0)
    paths = [os.path.realpath(path)]
    file_id = sqlite3.connect(anchor).execute("SELECT file_id FROM dpcompose_anchor").fetchone()[0]
    before = mark.look(paths, file_id).mark
    mark.record(file_id, paths, 2, b"\0" * 32)
    assert mark.look(paths, file_id).mark == before and before is not None and before[0] == 4
    # another hash at the recorded sequence: rolled back and written again since that commit
    with pytest.raises(dp.LedgerError, match="another row at sequence 4.*a charge in it stands"):
        mark.record(file_id, paths, 4, b"\0" * 32)


@pytest.mark.parametrize(
    "damage",
    [
        "UPDATE dpcompose_anchor SET seq = 'text'",
        "UPDATE dpcompose_anchor_paths SET file_id = 'text'",
        "UPDATE dpcompose_anchor_id SET anchor_id = 'text'",
    ],
)
def test_a_malformed_anchor_is_a_ledger_error(tmp_path: Path, damage: str) -> None:
    """An anchor row of the wrong types (a damaged anchor) is a LedgerError, also where the ledger file is
    missing (it was a TypeError there)."""
    path, anchor = tmp_path / "l.db", tmp_path / "anchor.db"
    anchored(path, anchor).close()
    with contextlib.closing(sqlite3.connect(anchor)) as conn:
        conn.execute(damage)
        conn.commit()
    with pytest.raises(dp.LedgerError, match="malformed"):
        anchored(path, anchor)
    os.unlink(path)
    with pytest.raises(dp.LedgerError, match="malformed"):
        anchored(path, anchor)
    assert not path.exists()


def test_an_anchor_that_cannot_be_written_after_a_charge_says_the_charge_stands(tmp_path: Path) -> None:
    """The anchor is read before the ledger's commit and written after it: if the write fails (here, a
    reader holds a transaction open on the anchor), the error must not say that nothing was spent; if the
    read fails (a process holds it exclusively), nothing is spent. Both are LedgerLocked (retry)."""
    path, anchor = tmp_path / "l.db", tmp_path / "anchor.db"
    ledger = dp.SQLiteLedger(path, "k", create=True, anchor=anchor, timeout=0)
    ledger.bind(KIND, SPEC)
    ledger.read()  # first verification: reads the anchor
    holder = sqlite3.connect(anchor, isolation_level=None)
    holder.execute("BEGIN")
    holder.execute("SELECT * FROM dpcompose_anchor").fetchall()
    try:
        with pytest.raises(dp.LedgerLocked, match="a charge in it stands") as info:
            ledger.charge(add(Fraction(1, 2)))
        assert "nothing was run or spent" not in str(info.value)
    finally:
        holder.execute("ROLLBACK")
    assert ledger.read().state == (Fraction(1, 2),)  # it was spent
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(dp.LedgerLocked, match="nothing was run or spent") as info:
            ledger.charge(add(Fraction(1, 2)))
        assert "stands" not in str(info.value)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert ledger.read().state == (Fraction(1, 2),)  # it was not spent
    ledger.close()


def rolled_back_under(path: Path, anchor: Path) -> None:
    """A ledger spent under ``anchor`` (1 → 3), then its file put back to an older copy (sequence 2)."""
    with anchored(path, anchor) as ledger:
        ledger.charge(add(Fraction(1, 2)))
    shutil.copy(path, path.with_name("old.db"))
    with anchored(path, anchor) as ledger:
        ledger.charge(add(Fraction(1, 2)))
    shutil.copy(path.with_name("old.db"), path)


@pytest.mark.parametrize("damage", ["emptied", "foreign database", "not a database", "other schema"])
def test_an_emptied_or_foreign_anchor_is_refused_not_started_afresh(tmp_path: Path, damage: str) -> None:
    """An anchor file that exists is never initialised: a 0-byte anchor started afresh let the rollback it
    exists to catch through (spent 1 → 0)."""
    path, anchor = tmp_path / "l.db", tmp_path / "anchor.db"
    rolled_back_under(path, anchor)
    with pytest.raises(dp.LedgerError, match="rolled back"):
        anchored(path, anchor)
    anchor.unlink()
    if damage == "emptied":
        anchor.write_bytes(b"")
    elif damage == "not a database":
        anchor.write_bytes(b"high-water marks" * 100)
    else:
        with contextlib.closing(sqlite3.connect(anchor)) as conn:
            table = "users (name TEXT)" if damage == "foreign database" else "dpcompose_anchor (file_id BLOB)"
            conn.execute(f"CREATE TABLE {table}")
            conn.commit()
    before = anchor.read_bytes()
    refused = f"anchor {re.escape(repr(str(anchor)))}.*(empty|not a dpcompose anchor)"
    with pytest.raises(dp.LedgerError, match=refused) as info:
        anchored(path, anchor)
    assert "nothing was run or spent" in str(info.value)
    assert anchor.read_bytes() == before  # untouched
    with pytest.raises(dp.LedgerError, match="anchor"):
        dp.SQLiteLedger(tmp_path / "other.db", "k", anchor=anchor).bind(KIND, SPEC)  # a fresh ledger too
    assert not (tmp_path / "other.db").exists() and anchor.read_bytes() == before


@pytest.mark.parametrize("header", [(0, 0), (0x4450_414E, 1)])
def test_a_missing_anchor_is_created_and_an_older_anchor_is_read(
    tmp_path: Path, header: tuple[int, int]
) -> None:
    """A missing anchor file is created (atomically: no temporary file is left); an anchor of version 1, or
    one written before anchors had an application id (one table), is still read, its marks kept."""
    path, anchor = tmp_path / "l.db", tmp_path / "safe" / "anchor.db"
    anchor.parent.mkdir()
    anchored(path, anchor).close()
    assert sorted(os.listdir(anchor.parent)) == ["anchor.db", "anchor.db-journal"]
    rolled_back_under(tmp_path / "m.db", anchor)
    with contextlib.closing(sqlite3.connect(anchor)) as conn:  # as an older dpcompose left it
        conn.execute("DROP TABLE dpcompose_anchor_paths")
        conn.execute("DROP TABLE dpcompose_anchor_id")
        conn.execute(f"PRAGMA application_id = {header[0]}")
        conn.execute(f"PRAGMA user_version = {header[1]}")
        conn.commit()
    with pytest.raises(dp.LedgerError, match="rolled back"):
        anchored(tmp_path / "m.db", anchor)
    os.unlink(path)  # the path the older anchor recorded is kept
    with pytest.raises(dp.LedgerError, match="does not exist, but anchor"):
        anchored(path, anchor)
    with contextlib.closing(sqlite3.connect(anchor)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (2,)


def test_a_fresh_path_another_process_creates_while_this_one_reads_the_anchor_is_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race of issue 32 item 6, forced: this ledger finds no file, and before it reads the anchor
    another process creates the ledger and records it there. It must open that ledger, not refuse with
    "does not exist, but anchor records a ledger at this path" (a deleted ledger is still refused: above)."""
    path, anchor = tmp_path / "l.db", tmp_path / "anchor.db"
    late = dp.SQLiteLedger(path, "k", anchor=anchor)
    assert late._anchor is not None
    original = late._anchor.look

    def interleaved(*args: Any) -> Any:
        if not path.exists():
            with dp.SQLiteLedger(path, "k", anchor=anchor) as first:
                first.bind(KIND, SPEC)
                first.charge(add(Fraction(1, 2)))
        return original(*args)

    monkeypatch.setattr(late._anchor, "look", interleaved)
    assert late.bind(KIND, SPEC).queries == 1  # the other process's budget: one ledger at the path
    assert late.charge(add(Fraction(1, 4))).state == (Fraction(3, 4),)
    late.close()
