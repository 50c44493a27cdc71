"""The anchor: a second file holding the high-water mark of every ledger file opened with it."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from functools import partial

from dpcompose.combinators._ledger.base import LedgerError
from dpcompose.combinators._ledger.files import SQL_ERRORS, committed

__all__ = ["Anchor"]


class Anchor:
    """A high-water mark of ledger files kept in another file (``SQLiteLedger(anchor=...)``): for each
    ledger file (by its random file id) the path it was last seen at and the largest verified head
    ``(seq, hash)``. It is written after every commit and read when a ledger file is first verified, so a
    whole-file rollback to an older copy (a smaller sequence, or another hash at the recorded one) and a
    deleted or replaced file (another file, or none, at a recorded path) are LedgerErrors: what the chain
    cannot see from inside the file (found by review: restoring an older copy gave the budget back)."""

    _TABLE = (
        "CREATE TABLE IF NOT EXISTS dpcompose_anchor (file_id BLOB PRIMARY KEY, path TEXT NOT NULL, "
        "seq INTEGER NOT NULL, hash BLOB NOT NULL)"
    )

    def __init__(self, path: str, timeout: float) -> None:
        self.path = path
        self._timeout = timeout

    def _error(self, exc: BaseException, after_commit: bool = False) -> LedgerError:
        done = (
            "the ledger's transaction is committed (a charge in it stands), but nothing was run"
            if after_commit else "nothing was run or spent"
        )
        return LedgerError(
            f"anchor {self.path!r} cannot be used ({type(exc).__name__}: {exc}); {done}. "
            "Check that it and its directory are readable and writable"
        )

    @contextlib.contextmanager
    def _conn(self, after_commit: bool = False) -> Iterator[sqlite3.Connection]:
        fail = partial(self._error, after_commit=after_commit)
        try:
            conn = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None)
        except SQL_ERRORS as exc:
            raise fail(exc) from exc
        try:
            with committed(conn, fail):
                conn.execute("PRAGMA journal_mode = TRUNCATE")
                conn.execute("PRAGMA synchronous = FULL")
                conn.execute("BEGIN IMMEDIATE")
                conn.execute(self._TABLE)
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
