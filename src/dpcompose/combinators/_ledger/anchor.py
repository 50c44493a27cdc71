"""The anchor: a second file holding the high-water mark of every ledger file opened with it."""

from __future__ import annotations

import contextlib
import os
import secrets
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import NamedTuple, TypeVar

from dpcompose.combinators._ledger.base import LedgerError, LedgerLocked
from dpcompose.combinators._ledger.chain import Corrupt, RolledBack, Unanchored, Unverifiable
from dpcompose.combinators._ledger.files import SQL_ERRORS, committed, create_file, is_locked, sqlite_primary

__all__ = ["Anchor", "Look"]

_APPLICATION_ID = 0x4450_414E  # "DPAN"
#: 1: one table of marks (with each file's last path); 2: every path a file was seen at, and an anchor id.
_VERSION = 2
_TABLE = (
    "CREATE TABLE dpcompose_anchor (file_id BLOB PRIMARY KEY, path TEXT NOT NULL, seq INTEGER NOT NULL, "
    "hash BLOB NOT NULL)"
)
_PATHS = (
    "CREATE TABLE dpcompose_anchor_paths (path TEXT NOT NULL, file_id BLOB NOT NULL, "
    "PRIMARY KEY (path, file_id))"
)
_ID = "CREATE TABLE dpcompose_anchor_id (id INTEGER PRIMARY KEY CHECK (id = 1), anchor_id BLOB NOT NULL)"
#: What a version 1 anchor's sqlite_master holds (also one of before anchors had an application id).
_OBJECTS_V1 = {
    ("table", "dpcompose_anchor", _TABLE),
    ("index", "sqlite_autoindex_dpcompose_anchor_1", None),
}
_OBJECTS = _OBJECTS_V1 | {
    ("table", "dpcompose_anchor_paths", _PATHS),
    ("index", "sqlite_autoindex_dpcompose_anchor_paths_1", None),
    ("table", "dpcompose_anchor_id", _ID),
}
_COMMITTED = "the ledger's transaction is committed (a charge in it stands), but nothing was run"
_NOTHING = "nothing was run or spent"
_T = TypeVar("_T")


class Look(NamedTuple):
    """What an anchor holds about one ledger file: the anchor's id (None: no anchor file), the file's mark
    ``(seq, hash)`` (None: no record) and the ids of the files recorded at the paths asked about."""

    anchor_id: bytes | None
    mark: tuple[int, bytes] | None
    at_paths: set[bytes]


class Anchor:
    """A high-water mark of ledger files kept in another file (``SQLiteLedger(anchor=...)``): for each
    ledger file (by its random file id) every path it was seen at (as given, made absolute, and resolved)
    and the largest verified head ``(seq, hash)``; and a random id of the anchor itself, which the ledger
    file stores the first time it is written under the anchor. Every transaction of an anchored ledger
    compares the file with its mark before it commits (:meth:`sync`), and raises the mark after a commit
    (:meth:`record`), so a rollback to an older copy (a smaller sequence, or another hash at the recorded
    one), a deleted or replaced file (another file, or none, at a recorded path) and an anchored file
    opened with an anchor that has no record of it (deleted, emptied of rows, another one) are
    LedgerErrors: what the chain cannot see from inside the file.

    The anchor follows the ledger's rule: a missing anchor file is created (atomically, like a ledger
    file), and a file that exists is never initialised. An empty file (an emptied anchor), another SQLite
    database or a file that is not one is a LedgerError: starting it afresh would forget every mark it
    holds and let through the rollback it exists to catch. An anchor of version 1, or one written before
    anchors carried an application id (application id 0, the same single table), is read and made
    version 2 in place (its marks and paths kept) by its first use.
    """

    def __init__(self, path: str, timeout: float) -> None:
        self.path = path
        self._timeout = timeout

    def _error(self, exc: BaseException, after_commit: bool = False) -> LedgerError:
        primary = sqlite_primary(exc)
        done = _COMMITTED if after_commit else _NOTHING
        if primary in (11, 26):  # SQLITE_CORRUPT, SQLITE_NOTADB
            return self._refuse(f"is not a dpcompose anchor, or is damaged ({type(exc).__name__}: {exc})",
                                after_commit)  # fmt: skip
        if is_locked(exc):
            return LedgerLocked(
                f"anchor {self.path!r} stayed locked by another process for {self._timeout} s ({exc}): a "
                "process recording to it, or a reader holding a transaction open on it; "
                f"{done}. Retry later"
            )
        return LedgerError(
            f"anchor {self.path!r} cannot be used ({type(exc).__name__}: {exc}); {done}. "
            "Check that it and its directory are readable and writable"
        )

    def _refuse(self, why: str, after_commit: bool) -> LedgerError:
        done = _COMMITTED if after_commit else _NOTHING
        return LedgerError(
            f"anchor {self.path!r} {why}. An anchor file that exists is never initialised: that would forget "
            f"the high-water marks it holds and let a rolled-back ledger through. Refusing; {done}. Restore "
            "the anchor from a copy, or point anchor= at the right file (a path that does not exist is "
            "created as a new, empty anchor)"
        )

    @staticmethod
    def _build(conn: sqlite3.Connection) -> None:
        conn.execute(_TABLE)
        Anchor._upgrade(conn)

    @staticmethod
    def _upgrade(conn: sqlite3.Connection) -> None:
        """Version 1 (or 0) to 2: every recorded path kept, a new anchor id (in the caller's transaction)."""
        conn.execute(_PATHS)
        conn.execute(_ID)
        conn.execute(
            "INSERT INTO dpcompose_anchor_paths (path, file_id) SELECT path, file_id FROM dpcompose_anchor"
        )
        new_id = (secrets.token_bytes(16),)
        conn.execute("INSERT INTO dpcompose_anchor_id (id, anchor_id) VALUES (1, ?)", new_id)
        conn.execute(f"PRAGMA application_id = {_APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {_VERSION}")

    def _check(self, conn: sqlite3.Connection, after_commit: bool, write: bool) -> bytes | None:
        """The open file is an anchor (checked inside the transaction, before anything is read or written);
        returns its id (None: a version 1 anchor in a read transaction, which cannot make it version 2)."""
        app = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        objects = set(conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall())
        if app == 0 and version == 0 and not objects:
            raise self._refuse("exists but is an empty database (an emptied anchor?)", after_commit)
        if (app, version) in ((_APPLICATION_ID, 1), (0, 0)) and objects == _OBJECTS_V1:
            if not write:
                return None
            self._upgrade(conn)
        elif (app, version) != (_APPLICATION_ID, _VERSION) or objects != _OBJECTS:
            raise self._refuse(
                f"is not a dpcompose anchor (application_id={app!r}, user_version={version!r}, "
                f"{len(objects)} schema objects)",
                after_commit,
            )
        ids = conn.execute("SELECT id, anchor_id FROM dpcompose_anchor_id").fetchall()
        if len(ids) != 1 or type(ids[0][1]) is not bytes or len(ids[0][1]) != 16:
            raise self._error(ValueError("a malformed anchor id"), after_commit)
        anchor_id: bytes = ids[0][1]
        return anchor_id

    @contextlib.contextmanager
    def _conn(self, after_commit: bool, write: bool) -> Iterator[tuple[sqlite3.Connection, bytes | None]]:
        """A transaction on the anchor (created if missing): a write transaction, or a read one (which a
        reader elsewhere does not block, and which takes no write lock: a transaction that took one cannot
        commit while another connection reads, even if it wrote nothing)."""
        fail = partial(self._error, after_commit=after_commit)
        try:
            if not os.path.lexists(self.path):
                create_file(self.path, self._build)  # False: another process created it first
            uri = Path(self.path).as_uri() + "?mode=rw"  # never creates a file
            conn = sqlite3.connect(uri, uri=True, timeout=self._timeout, isolation_level=None)
        except (*SQL_ERRORS, OSError) as exc:
            raise fail(exc) from exc
        try:
            with committed(conn, fail):
                conn.execute("PRAGMA journal_mode = TRUNCATE")
                conn.execute("PRAGMA synchronous = FULL")
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                yield conn, self._check(conn, after_commit, write)
        finally:
            conn.close()

    def _read(
        self, conn: sqlite3.Connection, paths: Sequence[str], file_id: bytes | None, after_commit: bool
    ) -> tuple[tuple[int, bytes] | None, set[tuple[str, bytes]]]:
        """The mark of ``file_id`` and the ``(path, file id)`` pairs recorded at ``paths``, inside an anchor
        transaction."""
        mark = None
        row = conn.execute("SELECT seq, hash FROM dpcompose_anchor WHERE file_id = ?", (file_id,)).fetchone()
        if row is not None:
            if (type(row[0]), type(row[1])) != (int, bytes):
                raise self._error(ValueError("a malformed row"), after_commit)
            mark = (row[0], row[1])
        marks = ",".join("?" * len(paths))
        pairs = set()
        for path, fid in conn.execute(
            f"SELECT path, file_id FROM dpcompose_anchor_paths WHERE path IN ({marks})", tuple(paths)
        ).fetchall():
            if (type(path), type(fid)) != (str, bytes):
                raise self._error(ValueError("a malformed row"), after_commit)
            pairs.add((path, fid))
        return mark, pairs

    @staticmethod
    def _write(
        conn: sqlite3.Connection,
        file_id: bytes,
        paths: Sequence[str],
        mark: tuple[int, bytes] | None,
        pairs: set[tuple[str, bytes]],
    ) -> None:
        """Set the mark of ``file_id`` (None: leave it; the caller compared it) and add the paths not among
        the recorded ``pairs`` (never removing one)."""
        if mark is not None:
            conn.execute(
                "INSERT INTO dpcompose_anchor (file_id, path, seq, hash) VALUES (?, ?, ?, ?) ON CONFLICT "
                "(file_id) DO UPDATE SET path = excluded.path, seq = excluded.seq, hash = excluded.hash",
                (file_id, paths[-1], *mark),
            )
        new = [(p, file_id) for p in dict.fromkeys(paths) if (p, file_id) not in pairs]
        conn.executemany("INSERT OR IGNORE INTO dpcompose_anchor_paths (path, file_id) VALUES (?, ?)", new)

    def _run(self, body: Callable[[sqlite3.Connection, bytes, bool], _T | None], after_commit: bool) -> _T:
        """``body(conn, anchor_id, write)`` in a read transaction; if it returns None (it needs to write, or
        the anchor must first be made version 2), again in a write transaction."""
        with self._conn(after_commit, write=False) as (conn, anchor_id):
            result = None if anchor_id is None else body(conn, anchor_id, False)
        if result is not None:
            return result
        with self._conn(after_commit, write=True) as (conn, anchor_id):
            assert anchor_id is not None  # a write transaction makes the anchor version 2
            result = body(conn, anchor_id, True)
        assert result is not None  # a body returns a result when it may write
        return result

    def look(self, paths: Sequence[str], file_id: bytes | None = None) -> Look:
        """What the anchor records about ``file_id`` and at ``paths``; a missing anchor file records
        nothing (and is not created)."""
        if not os.path.lexists(self.path):
            return Look(None, None, set())

        def body(conn: sqlite3.Connection, anchor_id: bytes, write: bool) -> Look:
            mark, pairs = self._read(conn, paths, file_id, False)
            return Look(anchor_id, mark, {fid for _, fid in pairs})

        return self._run(body, after_commit=False)

    def sync(
        self,
        file_id: bytes,
        paths: Sequence[str],
        head: tuple[int, bytes],
        hash_at: Callable[[int], bytes | None],
        anchored_by: bytes | None,
        reanchor: bool,
    ) -> bytes:
        """Check a verified ledger file against its mark and raise the mark to its ``head``, in one anchor
        transaction, inside the ledger's (which keeps its head from moving meanwhile); returns the anchor's
        id. ``hash_at(n)`` is the file's hash after row ``n`` (None: folded away); ``anchored_by`` the id of
        the anchor the file records (None: never anchored).

        Raises:
            RolledBack: the file is behind its mark, or has another hash at the recorded row.
            Unverifiable: the recorded row was folded away by a process without the anchor.
            Unanchored: the file was anchored and this anchor has no record of it (and not ``reanchor``).
            Corrupt: the anchor records another file at one of ``paths``.
            LedgerError: the anchor cannot be used.
        """
        if anchored_by is not None and not reanchor and not os.path.lexists(self.path):
            raise Unanchored(f"anchor {self.path!r} does not exist")

        def body(conn: sqlite3.Connection, anchor_id: bytes, write: bool) -> bytes | None:
            mark, pairs = self._read(conn, paths, file_id, False)
            if any(fid != file_id for _, fid in pairs):
                raise Corrupt(
                    f"anchor {self.path!r} records another ledger file at this path: this one replaced it "
                    "(the earlier file was deleted, moved or overwritten)"
                )
            if mark is None:
                if anchored_by is not None and not reanchor:
                    other = "is the one" if anchored_by == anchor_id else "is not the one"
                    raise Unanchored(
                        f"anchor {self.path!r} has no record of it (and {other} that recorded it)"
                    )
            else:
                self._compare(mark, head, hash_at)
            raise_mark = mark is None or mark[0] < head[0]
            if not write and (raise_mark or any((p, file_id) not in pairs for p in paths)):
                return None
            self._write(conn, file_id, paths, head if raise_mark else None, pairs)
            return anchor_id

        return self._run(body, after_commit=False)

    def _compare(
        self, mark: tuple[int, bytes], head: tuple[int, bytes], hash_at: Callable[[int], bytes | None]
    ) -> None:
        seq, digest = mark
        if seq > head[0]:
            raise RolledBack(
                f"the ledger is at sequence {head[0]} but anchor {self.path!r} recorded it at {seq}: the "
                "file was rolled back to an older copy"
            )
        found = head[1] if seq == head[0] else hash_at(seq)
        if found is None:
            raise Unverifiable(
                f"anchor {self.path!r} records it at sequence {seq}, inside the rows a checkpoint has "
                "folded: a process that did not record to this anchor wrote and compacted the file since, "
                "and the hash at that sequence is gone"
            )
        if found != digest:
            if seq == 0:
                raise Corrupt(f"the chain's start differs from the one anchor {self.path!r} records")
            raise RolledBack(
                f"journal row {seq} differs from the one anchor {self.path!r} records (the file was rolled "
                "back and written again)"
            )

    def record(self, file_id: bytes, paths: Sequence[str], seq: int, digest: bytes) -> None:
        """Raise the mark of this file to ``(seq, digest)`` after the ledger committed that head (a failure
        here says the charge stands). A larger mark is kept (another process committed after this one);
        another hash at the same sequence is a rollback written over again since the commit."""
        with self._conn(after_commit=True, write=True) as (conn, _):
            mark, pairs = self._read(conn, paths, file_id, True)
            if mark is not None and mark[0] == seq and mark[1] != digest:
                raise LedgerError(
                    f"anchor {self.path!r} records another row at sequence {seq} than the one just committed "
                    f"to the ledger: the file was rolled back and written again meanwhile. {_COMMITTED}. "
                    "Refusing to use the file; start a new budget at a new path"
                )
            self._write(conn, file_id, paths, (seq, digest) if mark is None or mark[0] < seq else None, pairs)
