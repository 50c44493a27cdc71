"""SQLite plumbing shared by the ledger file and its anchor: the errors an sqlite3 call raises, committing
or rolling back a transaction, and making a new directory entry durable."""

from __future__ import annotations

import contextlib
import os
import secrets
import sqlite3
from collections.abc import Callable, Iterator

from dpcompose.combinators._ledger.base import LedgerError

__all__ = ["SQL_ERRORS", "committed", "create_file", "fsync_dir", "is_locked", "sqlite_primary"]

#: What an sqlite3 call can raise on a damaged file: the module decodes SQLite's error text as UTF-8, so a
#: damaged schema can surface as UnicodeDecodeError.
SQL_ERRORS = (sqlite3.Error, UnicodeDecodeError)


def sqlite_primary(exc: BaseException) -> int | None:
    """SQLite's primary result code of an sqlite3 error (``SQLITE_BUSY`` = 5, …), None if it has none."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def is_locked(exc: BaseException) -> bool:
    """Whether an sqlite3 error says another connection holds the file (SQLITE_BUSY or SQLITE_LOCKED; by its
    text where the error carries no code)."""
    primary = sqlite_primary(exc)
    low = str(exc).lower()
    return primary in (5, 6) or (primary is None and ("locked" in low or "busy" in low))


def fsync_dir(directory: str) -> None:
    """Make a new name in ``directory`` durable (POSIX; elsewhere a no-op)."""
    if os.name != "posix":  # pragma: no cover - directories cannot be opened for fsync elsewhere
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def create_file(path: str, build: Callable[[sqlite3.Connection], None]) -> bool:
    """Make a new SQLite file at ``path`` atomically: ``build`` fills it (in one committed transaction)
    under a temporary name, which is fsynced and hard-linked into place, so no process ever sees a
    half-made file there. An existing file at ``path`` is never replaced.

    Returns:
        Whether this call put the file in place (False: another process created ``path`` first).

    Raises:
        sqlite3.Error, UnicodeDecodeError, OSError: the file could not be made (the caller diagnoses).
    """
    target = os.path.abspath(path)
    directory, name = os.path.split(target)
    tmp = os.path.join(directory, f".{name}.{os.getpid()}.{secrets.token_hex(8)}.new")
    try:
        os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))  # OSError names the cause
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode = TRUNCATE")
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("BEGIN IMMEDIATE")
            build(conn)
            conn.execute("COMMIT")
        finally:
            conn.close()
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, target)  # fails if the path exists: never replaces a file
        except FileExistsError:
            return False
        fsync_dir(directory)
        return True
    finally:
        for leftover in (tmp, tmp + "-journal"):
            with contextlib.suppress(OSError):
                os.unlink(leftover)


def _rollback(conn: sqlite3.Connection) -> None:
    with contextlib.suppress(sqlite3.Error):
        conn.execute("ROLLBACK")


@contextlib.contextmanager
def committed(conn: sqlite3.Connection, fail: Callable[[BaseException], LedgerError]) -> Iterator[None]:
    """COMMIT after the body; on any exception ROLLBACK, an sqlite3 error raised as ``fail(exc)``."""
    try:
        yield
        conn.execute("COMMIT")
    except SQL_ERRORS as exc:
        _rollback(conn)
        raise fail(exc) from exc
    except BaseException:
        _rollback(conn)
        raise
