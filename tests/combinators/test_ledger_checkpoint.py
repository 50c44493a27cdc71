"""SQLiteLedger checkpoints (issue 32 item 10): the journal is folded so that the file stays bounded, and the
chain stays verifiable from the checkpoint — truncation, rollback and damage, the checkpoint's own
included, are still refused, also with an anchor.

Most tests fold every few rows (``folds``: KEEP_ROWS=3, FOLD_EVERY=4) to exercise folding in a few dozen
charges; test_ledger_files runs the real thresholds (under slow).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

import dpcompose as dp
from dpcompose.combinators._ledger import LedgerEntry, journal
from dpcompose.combinators._ledger.chain import decode_checkpoint, encode_checkpoint, genesis, link

KIND, SPEC = "filter", "checkpoint spec"
KEEP, EVERY = 3, 4


def add(q: Fraction) -> Any:
    def update(e: LedgerEntry) -> LedgerEntry:
        total = e.state[0] if e.state else Fraction(0)
        return e.replace(rule="basic", state=(total + q,), queries=e.queries + 1)

    return update


@pytest.fixture
def folds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journal, "KEEP_ROWS", KEEP)
    monkeypatch.setattr(journal, "FOLD_EVERY", EVERY)


def ledger_at(path: Path, key: str = "k", **kwargs: Any) -> dp.SQLiteLedger:
    ledger = dp.SQLiteLedger(path, key, create=True, **kwargs)
    ledger.bind(KIND, SPEC)
    return ledger


def charged(path: Path, times: int, key: str = "k", **kwargs: Any) -> LedgerEntry:
    with ledger_at(path, key, **kwargs) as ledger:
        entry = ledger.read()
        for _ in range(times):
            entry = ledger.charge(add(Fraction(1, 1000)))
        return entry


def read(path: Path, key: str = "k", **kwargs: Any) -> LedgerEntry:
    with dp.SQLiteLedger(path, key, **kwargs) as ledger:
        ledger.bind(KIND, SPEC)
        return ledger.read()


def sql(path: Path, *statements: str, args: tuple[Any, ...] = ()) -> list[Any]:
    """Run statements on the file outside the ledger (autocommit); the last one's rows."""
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as conn:
        rows: list[Any] = []
        for statement in statements:
            rows = conn.execute(statement, args if statement == statements[-1] else ()).fetchall()
        return rows


def layout(path: Path) -> tuple[int, int, int]:
    """(rows in the journal, its first row, checkpoints)."""
    count, first, checkpoints = sql(
        path, "SELECT count(*), min(seq), coalesce(sum(length(key) = 0), 0) FROM dpcompose_journal"
    )[0]
    return count, first, checkpoints


def checkpoint_row(path: Path) -> tuple[int, bytes, bytes]:
    ((seq, raw, digest),) = sql(path, "SELECT seq, entry, hash FROM dpcompose_journal WHERE length(key) = 0")
    return seq, raw, digest


# -- bounded -----------------------------------------------------------------------------------------------


def test_folds_keep_the_file_bounded(tmp_path: Path, folds: None) -> None:
    """The journal was append-only: ~210-250 bytes per charge for ever. Folded, the rows stay at most
    2 KEEP_ROWS + FOLD_EVERY (+ the checkpoint and the row being added), and so does the file's size."""
    path = tmp_path / "l.db"
    most, sizes = 0, {}
    with ledger_at(path) as ledger:
        for i in range(1, 41):
            committed = ledger.charge(add(Fraction(1, 1000)))
            most = max(most, layout(path)[0])
            sizes[i] = path.stat().st_size
    assert most <= 2 * KEEP + EVERY + 2
    assert max(sizes[i] for i in range(21, 41)) <= max(sizes[i] for i in range(1, 21))
    assert layout(path)[2] == 1 and layout(path)[1] > 1  # one checkpoint; the first rows are folded
    assert sql(path, "PRAGMA user_version") == [(4,)]
    assert read(path) == committed and committed.queries == 40
    assert committed.state == (Fraction(40, 1000),)


def test_every_key_survives_folds(tmp_path: Path, folds: None) -> None:
    """Keys whose last rows were folded live in the checkpoint: read back, charged again, still existing
    (no create=True needed); a key the file never had still needs it."""
    path = tmp_path / "l.db"
    quiet = charged(path, 2, key="quiet")
    busy = charged(path, 16, key="busy")
    assert layout(path)[1] > 3  # quiet's rows are folded
    assert read(path, "quiet") == quiet and read(path, "busy") == busy
    with dp.SQLiteLedger(path, "quiet") as ledger:  # no create=True: the key exists, in the checkpoint
        ledger.bind(KIND, SPEC)
        assert ledger.charge(add(Fraction(1, 2))).queries == 3
    with pytest.raises(dp.LedgerError, match="no key 'new'.*create=True"):
        read(path, "new")
    with pytest.raises(dp.LedgerError, match="belongs to a filter"), dp.SQLiteLedger(path, "busy") as ledger:
        ledger.bind("odometer", SPEC)


def test_a_ledger_that_was_idle_follows_the_folds_of_others(tmp_path: Path, folds: None) -> None:
    """A ledger object whose last verified row was folded by another process re-verifies from the
    checkpoint and carries on (its key's entry must continue the one it saw)."""
    path = tmp_path / "l.db"
    idle, busy = ledger_at(path), ledger_at(path)
    idle.charge(add(Fraction(1, 2)))
    seen = idle.head()[0]
    for _ in range(16):
        busy.charge(add(Fraction(1, 1000)))
    assert layout(path)[1] > seen + 1  # the rows after idle's were folded
    assert idle.read() == busy.read()
    assert idle.charge(add(Fraction(1, 2))).state == (Fraction(1, 2) + Fraction(16, 1000) + Fraction(1, 2),)
    idle.close(), busy.close()


def test_a_rollback_while_open_is_still_detected_with_folds(tmp_path: Path, folds: None) -> None:
    path = tmp_path / "l.db"
    charged(path, 8)
    shutil.copy(path, tmp_path / "old.db")
    with ledger_at(path) as ledger:
        for _ in range(8):
            ledger.charge(add(Fraction(1, 1000)))
        shutil.copy(tmp_path / "old.db", path)
        with pytest.raises(dp.LedgerError, match="went back"):
            ledger.read()


def as_version(path: Path, version: int) -> None:
    """Rewrite a ledger file as a dpcompose of schema ``version`` (2 or 3) wrote it: rows without a nonce,
    chained again, and the head without its anchor column."""
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("BEGIN IMMEDIATE")
        (file_id,) = conn.execute("SELECT file_id FROM dpcompose_head").fetchone()
        rows = conn.execute("SELECT seq, key, entry FROM dpcompose_journal ORDER BY seq").fetchall()
        checkpoints = [raw for _, key, raw in rows if not key]
        prev = decode_checkpoint(checkpoints[0]).prev if checkpoints else genesis(file_id)
        for seq, key, raw in rows:
            doc = json.loads(raw)
            del doc["nonce"]
            old = json.dumps(doc, sort_keys=True, ensure_ascii=True, separators=(",", ":")).encode("ascii")
            prev = link(prev, seq, key, old)
            conn.execute("UPDATE dpcompose_journal SET entry = ?, hash = ? WHERE seq = ?", (old, prev, seq))
        conn.execute("UPDATE dpcompose_head SET hash = ?", (prev,))
        conn.execute("ALTER TABLE dpcompose_head DROP COLUMN anchor")
        conn.execute(f"PRAGMA user_version = {version}")
        conn.execute("COMMIT")


@pytest.mark.parametrize("version", [2, 3])
def test_an_older_file_is_read_and_marked_version_4_by_its_first_write(
    tmp_path: Path, folds: None, version: int
) -> None:
    """A file of schema version 2 (no checkpoint) or 3 (rows without a nonce, a head without an anchor
    column) is read as it is, also with an anchor; the first row appended marks it version 4 (which a
    dpcompose reading versions 2 and 3 only refuses by its version), and it reads on."""
    path, anchor = tmp_path / "l.db", tmp_path / "anchor.db"
    charged(path, 1 if version == 2 else 12)
    as_version(path, version)
    assert layout(path)[2] == (version == 3)
    queries = read(path).queries
    assert read(path, anchor=anchor).queries == queries  # read, not written: still the older version
    assert sql(path, "PRAGMA user_version") == [(version,)]
    charged(path, 10, anchor=anchor)
    assert sql(path, "PRAGMA user_version") == [(4,)] and layout(path)[2] == 1
    assert read(path, anchor=anchor).queries == queries + 10


# -- the checkpoint damaged ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def folded_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, bytes, LedgerEntry]:
    """A ledger folded twice or more, a copy of it after its first fold, and the entry."""
    path = tmp_path_factory.mktemp("folded") / "l.db"
    with pytest.MonkeyPatch.context() as patch, ledger_at(path) as ledger:
        patch.setattr(journal, "KEEP_ROWS", KEEP)
        patch.setattr(journal, "FOLD_EVERY", EVERY)
        while layout(path)[2] == 0:
            ledger.charge(add(Fraction(1, 1000)))
        old = path.read_bytes()
        first = checkpoint_row(path)[0]
        while checkpoint_row(path)[0] < first + 2 * (KEEP + EVERY):
            committed = ledger.charge(add(Fraction(1, 1000)))
    return path.read_bytes(), old, committed


@pytest.fixture
def folded(
    tmp_path: Path, folds: None, folded_files: tuple[bytes, bytes, LedgerEntry]
) -> tuple[Path, LedgerEntry]:
    """``folded_files`` at ``l.db`` and ``old.db``; the entry."""
    data, old, committed = folded_files
    (tmp_path / "l.db").write_bytes(data)
    (tmp_path / "old.db").write_bytes(old)
    return tmp_path / "l.db", committed


def old_checkpoint(path: Path) -> tuple[int, bytes, bytes]:
    return checkpoint_row(path.with_name("old.db"))


def lowered(raw: bytes) -> bytes:
    """The checkpoint with key 'k''s spending set to zero."""
    cp = decode_checkpoint(raw)
    entries = dict(cp.entries)
    entries[b"k"] = entries[b"k"].replace(state=(Fraction(0),), queries=0)
    return encode_checkpoint(cp._replace(entries=entries))


def recorded_hash(raw: bytes, new: bytes) -> bytes:
    """The checkpoint with another hash recorded for the row it folds up to."""
    return encode_checkpoint(decode_checkpoint(raw)._replace(prev=new))


def damage(path: Path, how: str) -> None:
    seq, raw, _ = checkpoint_row(path)
    before = sql(path, "SELECT hash FROM dpcompose_journal WHERE seq = ?", args=(seq - 1,))[0][0]
    set_entry = "UPDATE dpcompose_journal SET entry = ? WHERE length(key) = 0"
    if how == "spending lowered":
        sql(path, set_entry, args=(lowered(raw),))
    elif how == "spending lowered, its hash recomputed":
        new = lowered(raw)
        sql(path, "UPDATE dpcompose_journal SET entry = ?, hash = ? WHERE length(key) = 0",
            args=(new, link(before, seq, b"", new)))  # fmt: skip
    elif how == "recorded hash changed, its hash recomputed":
        new = recorded_hash(raw, bytes(32))
        sql(path, "UPDATE dpcompose_journal SET entry = ?, hash = ? WHERE length(key) = 0",
            args=(new, link(before, seq, b"", new)))  # fmt: skip
    elif how == "hash zeroed":
        sql(path, "UPDATE dpcompose_journal SET hash = zeroblob(32) WHERE length(key) = 0")
    elif how == "deleted":
        sql(path, "DELETE FROM dpcompose_journal WHERE length(key) = 0")
    elif how == "turned into a row of key 'k'":
        sql(path, "UPDATE dpcompose_journal SET key = CAST('k' AS BLOB) WHERE length(key) = 0")
    elif how == "an older checkpoint copied over it":
        sql(path, set_entry, args=(old_checkpoint(path)[1],))
    elif how == "an older checkpoint put back beside it":
        old_seq, old_raw, old_digest = old_checkpoint(path)
        sql(path, "INSERT INTO dpcompose_journal VALUES (?, x'', ?, ?)", args=(old_seq, old_raw, old_digest))
    elif how == "a folded row put back":
        row = sql(path.with_name("old.db"), "SELECT * FROM dpcompose_journal WHERE length(key) > 0 "
                  "ORDER BY seq DESC LIMIT 1")[0]  # fmt: skip
        sql(path, "INSERT INTO dpcompose_journal VALUES (?, ?, ?, ?)", args=tuple(row))
    elif how == "a kept row before it edited":
        sql(path, "UPDATE dpcompose_journal SET entry = replace(entry, '\"queries\":', '\"queries\":1') "
            "WHERE seq = (SELECT min(seq) FROM dpcompose_journal)")  # fmt: skip
    elif how == "made to belong to another file":
        cp = decode_checkpoint(raw)
        sql(path, set_entry, args=(encode_checkpoint(cp._replace(file_id=bytes(16))),))
    else:
        raise AssertionError(how)


HOW = [
    "spending lowered",
    "spending lowered, its hash recomputed",
    "recorded hash changed, its hash recomputed",
    "hash zeroed",
    "deleted",
    "turned into a row of key 'k'",
    "an older checkpoint copied over it",
    "an older checkpoint put back beside it",
    "a folded row put back",
    "a kept row before it edited",
    "made to belong to another file",
]


@pytest.mark.parametrize("how", HOW)
def test_a_damaged_checkpoint_is_refused(folded: tuple[Path, LedgerEntry], how: str) -> None:
    path, committed = folded
    assert read(path) == committed
    damage(path, how)
    with pytest.raises(dp.LedgerError, match="corrupt"):
        read(path)


@pytest.mark.parametrize("how", ["spending lowered", "deleted", "a folded row put back"])
def test_a_checkpoint_damaged_while_open_is_refused_by_the_next_fold(
    folded: tuple[Path, LedgerEntry], how: str
) -> None:
    """A fold verifies the whole journal again: it never folds in what was damaged after it was read."""
    path, _ = folded
    with ledger_at(path) as ledger:
        damage(path, how)
        refused = ""
        for _ in range(KEEP + EVERY + 1):  # the next fold comes within these charges
            try:
                ledger.charge(add(Fraction(1, 1000)))
            except dp.LedgerError as exc:
                refused = str(exc)
                break
    assert "corrupt" in refused
    with pytest.raises(dp.LedgerError, match="corrupt"):
        read(path)  # still refused: nothing was folded in


def rewritten_under(ledger: dp.SQLiteLedger, path: Path, charges: int) -> None:
    """Put the file back to what ``ledger`` saw, after ``ledger`` charged once more, and write it again
    differently (``charges`` charges by a ledger without an anchor)."""
    shutil.copy(path, path.with_name("seen.db"))
    ledger.charge(add(Fraction(1, 1000)))
    shutil.copy(path.with_name("seen.db"), path)
    with dp.SQLiteLedger(path, "k") as other:
        other.bind(KIND, SPEC)
        for _ in range(charges):
            other.charge(add(Fraction(1, 3)))


def test_a_file_rewritten_after_the_rows_a_ledger_verified_is_refused(
    folded: tuple[Path, LedgerEntry],
) -> None:
    path, _ = folded
    with ledger_at(path) as ledger:
        rewritten_under(ledger, path, 2)
        with pytest.raises(dp.LedgerError, match="corrupt"):
            ledger.head()


def test_an_anchored_ledger_refuses_a_rewrite_folded_past_what_it_saw(tmp_path: Path, folds: None) -> None:
    """Folded past the rows it verified, a ledger can compare only sequences (test_ledger_checkpoint's
    idle ledger follows such folds); with an anchor its record is checked, and a rewrite is refused."""
    path, anchor = tmp_path / "l.db", tmp_path / "anchor.db"
    with ledger_at(path, anchor=anchor) as ledger:
        rewritten_under(ledger, path, 2 * (KEEP + EVERY))
        with pytest.raises(dp.LedgerError, match="cannot be checked against its anchor"):
            ledger.charge(add(Fraction(1, 1000)))


# -- with an anchor ------------------------------------------------------------------------------------------


def test_anchored_folds_reopen_and_a_rollback_is_refused(tmp_path: Path, folds: None) -> None:
    path, anchor = tmp_path / "l.db", tmp_path / "anchor.db"
    charged(path, 4, anchor=anchor)
    shutil.copy(path, tmp_path / "old.db")
    committed = charged(path, 12, anchor=anchor)  # folds
    assert read(path, anchor=anchor) == committed
    shutil.copy(tmp_path / "old.db", path)
    with pytest.raises(dp.LedgerError, match="rolled back"):
        read(path, anchor=anchor)


def test_an_anchor_record_folded_by_a_process_without_it_is_refused(tmp_path: Path, folds: None) -> None:
    """A rollback written over again and folded past the anchor's record by a process without the anchor:
    the record's hash is gone, so the anchor cannot tell, and refuses (before folds it compared the hash
    at its record; that stays so while the record is among the kept rows: test_ledger_files)."""
    path, anchor = tmp_path / "l.db", tmp_path / "anchor.db"
    charged(path, 2, anchor=anchor)
    shutil.copy(path, tmp_path / "old.db")
    charged(path, 3, anchor=anchor)
    shutil.copy(tmp_path / "old.db", path)  # rolled back
    charged(path, 16)  # written again past the record and folded, without the anchor
    with pytest.raises(dp.LedgerError, match="cannot be checked against its anchor"):
        read(path, anchor=anchor)


def test_an_anchor_pins_the_checkpoint(tmp_path: Path, folds: None) -> None:
    """The checkpoint is a row of the chain: lowering its spending and recomputing every hash after it
    (what an unkeyed chain cannot stop) changes the head, which an anchor's record refuses."""
    path, anchor = tmp_path / "l.db", tmp_path / "anchor.db"
    charged(path, 12, anchor=anchor)
    seq, raw, _ = checkpoint_row(path)
    rows = sql(path, "SELECT seq, key, entry, hash FROM dpcompose_journal WHERE seq >= ? ORDER BY seq",
               args=(seq - 1,))  # fmt: skip
    prev = rows[0][3]
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as conn:
        for row_seq, key, entry, _ in rows[1:]:
            entry = lowered(raw) if row_seq == seq else entry
            prev = link(prev, row_seq, key, entry)
            update = "UPDATE dpcompose_journal SET entry = ?, hash = ? WHERE seq = ?"
            conn.execute(update, (entry, prev, row_seq))
        conn.execute("UPDATE dpcompose_head SET hash = ?", (prev,))
    assert read(path).queries > 0  # without the anchor: the key's later rows still count (its rows
    with pytest.raises(dp.LedgerError, match="rolled back"):  # after the checkpoint), but the head moved
        read(path, anchor=anchor)


@pytest.mark.parametrize("right", [True, False])
def test_an_anchor_record_at_the_folded_row_is_compared_with_the_checkpoint(
    tmp_path: Path, folds: None, right: bool
) -> None:
    path, anchor = tmp_path / "l.db", tmp_path / "anchor.db"
    charged(path, 12)
    cp = decode_checkpoint(checkpoint_row(path)[1])
    recorded = cp.prev if right else bytes(32)
    read(path, anchor=anchor)  # recorded at the head
    sql(anchor, "UPDATE dpcompose_anchor SET seq = ?, hash = ?", args=(cp.seq, recorded))
    if right:
        assert read(path, anchor=anchor).queries == 12
    else:
        with pytest.raises(dp.LedgerError, match=f"rolled back .*row {cp.seq} differs"):
            read(path, anchor=anchor)


def test_two_keys_charging_in_turn_stay_bounded(tmp_path: Path, folds: None) -> None:
    """Two keys (two ledger objects, each following the other's rows and folds) charging in turn."""
    path = tmp_path / "l.db"
    a, b = ledger_at(path, "a"), ledger_at(path, "b")
    sizes = []
    for _ in range(20):
        a.charge(add(Fraction(1, 1000)))
        b.charge(add(Fraction(1, 1000)))
        sizes.append(path.stat().st_size)
    assert max(sizes[10:]) <= max(sizes[:10])
    assert a.read().queries == b.read().queries == 20
    a.close(), b.close()
    assert read(path, "a").queries == read(path, "b").queries == 20
