"""SQLiteLedger anchors (issue 34): a process that has the file open checks the anchor in every
transaction, a rewrite after a rollback never reproduces a recorded hash, every path a file was seen at is
kept, a deleted anchor is not started afresh, and the errors say whether a charge stands."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

import dpcompose as dp
from dpcompose.combinators._ledger import LedgerEntry, journal
from dpcompose.combinators._ledger.base import continues
from dpcompose.combinators._ledger.chain import link

KIND, SPEC = "filter", "anchor spec"


def add(q: Fraction = Fraction(1, 10)) -> Any:
    def update(e: LedgerEntry) -> LedgerEntry:
        total = e.state[0] if e.state else Fraction(0)
        return e.replace(rule="basic", state=(total + q,), queries=e.queries + 1)

    return update


def opened(path: Path, key: str = "k", **kwargs: Any) -> dp.SQLiteLedger:
    ledger = dp.SQLiteLedger(path, key, create=True, **kwargs)
    ledger.bind(KIND, SPEC)
    return ledger


def charged(path: Path, times: int, key: str = "k", q: Fraction = Fraction(1, 10), **kwargs: Any) -> None:
    with opened(path, key, **kwargs) as ledger:
        for _ in range(times):
            ledger.charge(add(q))


def read(path: Path, key: str = "k", **kwargs: Any) -> LedgerEntry:
    with dp.SQLiteLedger(path, key, **kwargs) as ledger:
        ledger.bind(KIND, SPEC)
        return ledger.read()


def sql(path: Path, statement: str, args: tuple[Any, ...] = ()) -> list[Any]:
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as conn:
        return conn.execute(statement, args).fetchall()


@pytest.fixture
def folds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journal, "KEEP_ROWS", 3)
    monkeypatch.setattr(journal, "FOLD_EVERY", 4)


# -- item 1: a process that has the file open -----------------------------------------------------------


@pytest.mark.parametrize("rewrite", ["none", "fewer rows", "past the mark"])
def test_an_open_anchored_ledger_refuses_a_rollback(tmp_path: Path, rewrite: str) -> None:
    """A process had the file open (at sequence 3) while another spent to 8 under the same anchor; the file
    is put back to a copy at 3 (and written again by a process without the anchor). The open process
    compared only its own sequence: it kept charging on the rolled-back file, and a rewrite past the
    anchor's record was accepted for good."""
    path, anchor = tmp_path / "l.db", tmp_path / "anchor.db"
    a = opened(path, "a", anchor=anchor)
    a.charge(add())
    shutil.copy(path, tmp_path / "old.db")
    charged(path, 5, "b", anchor=anchor)
    shutil.copyfile(tmp_path / "old.db", path)  # the same inode: the open connection sees the old rows
    if rewrite != "none":
        charged(path, 2 if rewrite == "fewer rows" else 7, "b", q=Fraction(1, 3))
    before = path.read_bytes()
    with pytest.raises(dp.LedgerError, match="rolled back"):
        a.charge(add())
    with pytest.raises(dp.LedgerError, match="rolled back"):
        a.read()
    assert path.read_bytes() == before  # nothing was charged
    a.close()
    with pytest.raises(dp.LedgerError, match="rolled back"):
        read(path, "a", anchor=anchor)


# -- item 2: a rewrite with the same charges ------------------------------------------------------------


def test_two_equal_charges_write_different_rows(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    charged(path, 1)
    shutil.copy(path, tmp_path / "old.db")
    charged(path, 1)
    shutil.copyfile(tmp_path / "old.db", path)
    first = sql(path, "SELECT hash FROM dpcompose_head")
    charged(tmp_path / "old.db", 1)
    charged(path, 1)
    assert sql(path, "SELECT hash FROM dpcompose_head") != first
    row = "SELECT entry FROM dpcompose_journal WHERE seq = 3"  # the second charge, written twice
    assert sql(path, row) != sql(tmp_path / "old.db", row)


@pytest.mark.parametrize("extra", [0, 2])
def test_a_rollback_written_again_with_the_same_charges_is_refused(
    tmp_path: Path, folds: None, extra: int
) -> None:
    """Rolled back, then the lost charges repeated (same key, same ε) by a process without the anchor: the
    rows were byte-identical, so the hash at the anchor's record matched and the file was accepted."""
    path, anchor = tmp_path / "l.db", tmp_path / "anchor.db"
    charged(path, 2, anchor=anchor)
    shutil.copy(path, tmp_path / "old.db")
    charged(path, 5, anchor=anchor)
    shutil.copyfile(tmp_path / "old.db", path)
    charged(path, 5 + extra)
    with pytest.raises(dp.LedgerError, match="rolled back .*differs"):
        read(path, anchor=anchor)


# -- item 3: the errors when the anchor cannot be used ---------------------------------------------------


def test_a_fold_whose_anchor_cannot_be_written_says_nothing_was_spent(tmp_path: Path, folds: None) -> None:
    """A charge that folds must raise the anchor's record first (here it is behind: a process without the
    anchor charged since). With the anchor locked, the error said the charge stands, but the transaction
    was rolled back; and a locked anchor was a plain LedgerError, not LedgerLocked."""
    path, anchor = tmp_path / "l.db", tmp_path / "anchor.db"
    ledger = opened(path, anchor=anchor, timeout=0.05)
    while not journal.fold_due(ledger.head()[0] + 1, 0, 1):
        ledger.charge(add())
    charged(path, 1)  # the head is now past the anchor's record, and the next charge folds
    queries, before = read(path).queries, path.read_bytes()
    holder = sqlite3.connect(anchor, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(dp.LedgerLocked, match="nothing was run or spent") as info:
            ledger.charge(add())
        assert "stands" not in str(info.value)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert path.read_bytes() == before and read(path).queries == queries
    assert ledger.charge(add()).queries == queries + 1
    assert sql(path, "SELECT count(*) FROM dpcompose_journal WHERE length(key) = 0") == [(1,)]
    ledger.close()


# -- item 4: every path a file was seen at ----------------------------------------------------------------


def test_a_deleted_file_behind_a_re_pointed_symlinked_directory_is_refused(tmp_path: Path) -> None:
    anchor = tmp_path / "anchor.db"
    (tmp_path / "v1").mkdir()
    (tmp_path / "v2").mkdir()
    os.symlink(tmp_path / "v1", tmp_path / "cur")
    path = tmp_path / "cur" / "l.db"
    charged(path, 5, anchor=anchor)
    os.unlink(tmp_path / "cur")
    os.symlink(tmp_path / "v2", tmp_path / "cur")  # the path now resolves into an empty directory
    with pytest.raises(dp.LedgerError, match="does not exist, but anchor"):
        read(path, anchor=anchor)
    assert not path.exists()


def test_a_copy_opened_with_the_anchor_keeps_the_original_path_recorded(tmp_path: Path) -> None:
    path, anchor = tmp_path / "l.db", tmp_path / "anchor.db"
    charged(path, 5, anchor=anchor)
    shutil.copy(path, tmp_path / "copy.db")
    assert read(tmp_path / "copy.db", anchor=anchor).queries == 5
    path.unlink()
    with pytest.raises(dp.LedgerError, match="does not exist, but anchor"):
        read(path, anchor=anchor)
    assert not path.exists()


# -- item 5: a deleted or another anchor -------------------------------------------------------------------


def test_a_deleted_anchor_is_not_started_afresh(tmp_path: Path) -> None:
    path, anchor = tmp_path / "l.db", tmp_path / "anchor.db"
    charged(path, 1, anchor=anchor)
    shutil.copy(path, tmp_path / "old.db")
    charged(path, 5, anchor=anchor)
    shutil.copyfile(tmp_path / "old.db", path)
    anchor.unlink()
    with pytest.raises(dp.LedgerError, match="recorded by an anchor, but anchor .* does not exist"):
        read(path, anchor=anchor)
    assert not anchor.exists()  # not created
    other = tmp_path / "other.db"  # another anchor (in use for another file): no record of this one
    charged(tmp_path / "elsewhere.db", 1, anchor=other)
    with pytest.raises(dp.LedgerError, match="has no record of it .*reanchor=True"):
        read(path, anchor=other)
    # deliberately: recorded in the new anchor, which guards it from now on
    assert read(path, anchor=other, reanchor=True).queries == 1
    assert read(path, anchor=other).queries == 1
    charged(path, 1, anchor=other)
    shutil.copyfile(tmp_path / "old.db", path)
    with pytest.raises(dp.LedgerError, match="rolled back"):
        read(path, anchor=other)


def test_an_unanchored_file_is_anchored_by_its_first_anchor(tmp_path: Path) -> None:
    path, anchor = tmp_path / "l.db", tmp_path / "anchor.db"
    charged(path, 2)
    assert sql(path, "SELECT anchor FROM dpcompose_head") == [(None,)]
    assert read(path, anchor=anchor).queries == 2  # a read records it in the anchor
    charged(path, 1, anchor=anchor)  # the first write stores the anchor's id in the file
    (stored,) = sql(path, "SELECT anchor FROM dpcompose_head")[0]
    assert stored == sql(anchor, "SELECT anchor_id FROM dpcompose_anchor_id")[0][0]
    with pytest.raises(dp.InvalidParameter, match="reanchor"):
        dp.SQLiteLedger(path, "k", anchor=anchor, reanchor=1)  # type: ignore[arg-type]
    with pytest.raises(dp.InvalidParameter, match="reanchor=True needs anchor"):
        dp.SQLiteLedger(path, "k", reanchor=True)


# -- item 7: running sums never go down -------------------------------------------------------------------


def test_continues_requires_running_sums_that_never_decrease() -> None:
    old = LedgerEntry(KIND, SPEC, "basic", (Fraction(1, 2),), 3)
    assert continues(old, old.replace(state=(Fraction(1, 2),), queries=4))
    assert not continues(old, old.replace(state=(Fraction(0),)))
    assert not continues(old, old.replace(state=(Fraction(0),), queries=4))
    assert not continues(old, old.replace(state=(Fraction(1), Fraction(1))))
    assert continues(old.replace(rule="", state=()), old)


def test_a_chained_row_that_lowers_the_spending_is_refused(tmp_path: Path) -> None:
    """Someone appends a correctly chained row with the same query count and nothing spent (forging needs
    write access, which the threat model excludes; still, the ledger never reads a smaller spend)."""
    path = tmp_path / "l.db"
    charged(path, 3)
    ((seq, digest),) = sql(path, "SELECT seq, hash FROM dpcompose_head")
    ((raw,),) = sql(path, "SELECT entry FROM dpcompose_journal WHERE seq = ?", (seq,))
    forged = raw.replace(b'"3/10"', b'"0/1"')
    assert forged != raw
    new = link(digest, seq + 1, b"k", forged)
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as conn:
        row = (seq + 1, forged, new)
        conn.execute("INSERT INTO dpcompose_journal VALUES (?, CAST('k' AS BLOB), ?, ?)", row)
        conn.execute("UPDATE dpcompose_head SET seq = ?, hash = ?", (seq + 1, new))
    with pytest.raises(dp.LedgerError, match="does not continue"):
        read(path)
