"""The anchor: a second file holding the high-water mark of every ledger file opened with it."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from functools import partial
from pathlib import Path

from dpcompose.combinators._ledger.base import LedgerError
from dpcompose.combinators._ledger.files import SQL_ERRORS, committed, create_file

__all__ = ["Anchor"]

_APPLICATION_ID = 0x4450_414E  # "DPAN"
_VERSION = 1
_TABLE = (
    "CREATE TABLE dpcompose_anchor (file_id BLOB PRIMARY KEY, path TEXT NOT NULL, seq INTEGER NOT NULL, "
    "hash BLOB NOT NULL)"
)
#: What an anchor's sqlite_master holds: the table and the index of its primary key.
_OBJECTS = {
    ("table", "dpcompose_anchor", _TABLE),
    ("index", "sqlite_autoindex_dpcompose_anchor_1", None),
}


class Anchor:
    """A high-water mark of ledger files kept in another file (``SQLiteLedger(anchor=...)``): for each
    ledger file (by its random file id) the path it was last seen at and the largest verified head
    ``(seq, hash)``. It is written after every commit and read when a ledger file is first verified, so a
    whole-file rollback to an older copy (a smaller sequence, or another hash at the recorded one) and a
    deleted or replaced file (another file, or none, at a recorded path) are LedgerErrors: what the chain
    cannot see from inside the file.

    The anchor follows the ledger's own rule: a missing anchor file is created (atomically, like a ledger
    file), and a file that exists is never initialised. An empty file (an emptied anchor), another SQLite
    database or a file that is not one is a LedgerError: starting it afresh would forget every mark it
    holds and let through the rollback it exists to catch. An anchor written before anchors carried an
    application id (application id 0, the same single table) is read as an anchor.
    """

    def __init__(self, path: str, timeout: float) -> None:
        self.path = path
        self._timeout = timeout

    def _error(self, exc: BaseException, after_commit: bool = False) -> LedgerError:
        code = getattr(exc, "sqlite_errorcode", None)
        if isinstance(code, int) and code & 0xFF in (11, 26):  # SQLITE_CORRUPT, SQLITE_NOTADB
            return self._refuse(f"is not a dpcompose anchor, or is damaged ({type(exc).__name__}: {exc})",
                                after_commit)  # fmt: skip
        done = (
            "the ledger's transaction is committed (a charge in it stands), but nothing was run"
            if after_commit else "nothing was run or spent"
        )
        return LedgerError(
            f"anchor {self.path!r} cannot be used ({type(exc).__name__}: {exc}); {done}. "
            "Check that it and its directory are readable and writable"
        )

    def _refuse(self, why: str, after_commit: bool) -> LedgerError:
        done = (
            "the ledger's transaction is committed (a charge in it stands), but nothing was run"
            if after_commit else "nothing was run or spent"
        )
        return LedgerError(
            f"anchor {self.path!r} {why}. An anchor file that exists is never initialised: that would forget "
            f"the high-water marks it holds and let a rolled-back ledger through. Refusing; {done}. Restore "
            "the anchor from a copy, or point anchor= at the right file (a path that does not exist is "
            "created as a new, empty anchor)"
        )

    @staticmethod
    def _build(conn: sqlite3.Connection) -> None:
        conn.execute(f"PRAGMA application_id = {_APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {_VERSION}")
        conn.execute(_TABLE)

    def _check(self, conn: sqlite3.Connection, after_commit: bool) -> None:
        """The open file is an anchor (checked inside the transaction, before anything is read or written)."""
        app = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        objects = set(conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall())
        if app == 0 and version == 0 and not objects:
            raise self._refuse("exists but is an empty database (an emptied anchor?)", after_commit)
        if (app, version) not in ((_APPLICATION_ID, _VERSION), (0, 0)) or objects != _OBJECTS:
            raise self._refuse(
                f"is not a dpcompose anchor (application_id={app!r}, user_version={version!r}, "
                f"{len(objects)} schema objects)",
                after_commit,
            )

    @contextlib.contextmanager
    def _conn(self, after_commit: bool = False) -> Iterator[sqlite3.Connection]:
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
                conn.execute("BEGIN IMMEDIATE")
                self._check(conn, after_commit)
                yield conn
        finally:
            conn.close()

    def read(
        self, ledger_path: str, file_id: bytes | None = None
    ) -> tuple[tuple[int, bytes] | None, list[bytes]]:
        """``(mark, at_path)``: the recorded ``(seq, hash)`` of the ledger file ``file_id`` (None if there is
        none, or no ``file_id``), and the file ids recorded at ``ledger_path``; one read of the anchor."""
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT file_id, path, seq, hash FROM dpcompose_anchor WHERE file_id = ? OR path = ?",
                (file_id, ledger_path),
            ).fetchall()
        mark, at_path = None, []
        for fid, path, seq, digest in rows:
            types = (type(fid), type(path), type(seq), type(digest))
            if types != (bytes, str, int, bytes):
                raise self._error(ValueError("a malformed row"))
            if fid == file_id:
                mark = (seq, digest)
            if path == ledger_path:
                at_path.append(fid)
        return mark, at_path

    def record(self, file_id: bytes, ledger_path: str, seq: int, digest: bytes) -> None:
        """Raise the mark of this file to ``(seq, digest)`` (never lower it) and note its path (after the
        ledger's own commit: a failure here says the charge stands)."""
        with self._conn(after_commit=True) as conn:
            conn.execute(
                "INSERT INTO dpcompose_anchor (file_id, path, seq, hash) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (file_id) DO UPDATE SET path = excluded.path, seq = max(seq, excluded.seq), "
                "hash = CASE WHEN excluded.seq > seq THEN excluded.hash ELSE hash END",
                (file_id, ledger_path, seq, digest),
            )
