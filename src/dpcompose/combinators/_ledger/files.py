"""SQLite plumbing shared by the ledger file and its anchor: the errors an sqlite3 call raises, committing
or rolling back a transaction, and making a new directory entry durable."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Iterator

from dpcompose.combinators._ledger.base import LedgerError

__all__ = ["SQL_ERRORS", "committed", "fsync_dir"]

#: What an sqlite3 call can raise on a damaged file: the module decodes SQLite's error text as UTF-8, so a
#: damaged schema can surface as UnicodeDecodeError.
SQL_ERRORS = (sqlite3.Error, UnicodeDecodeError)


def fsync_dir(directory: str) -> None:
    """Make a new name in ``directory`` durable (POSIX; elsewhere a no-op)."""
    if os.name != "posix":  # pragma: no cover - directories cannot be opened for fsync elsewhere
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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
