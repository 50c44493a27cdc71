"""Budget ledgers: where a filter or an odometer keeps what it has spent.

A ledger holds one *entry*: which kind of accountant owns it and with which budget and rule (``spec``),
the rule actually in effect, the rule's running sums (``state``) and the number of queries charged.
:meth:`Ledger.charge` is atomic: it reads the entry, lets the accountant compute the new one (or refuse by
raising), and stores it — durably, for :class:`SQLiteLedger` — *before* the caller releases anything.

* :class:`MemoryLedger` — in memory, for one process (the default of ``make_privacy_filter``).
* :class:`SQLiteLedger` — a file (standard library :mod:`sqlite3`, WAL journal, ``synchronous=FULL``),
  shared by every process that opens it with the same key. Each charge runs in a ``BEGIN IMMEDIATE``
  transaction, so two processes are serialised and can never overspend together; a process killed right
  after a charge loses nothing. A corrupt, locked, foreign or mismatched file raises :class:`LedgerError`
  and the accountant refuses to answer rather than starting from zero.

Examples:
    >>> from fractions import Fraction
    >>> ledger = MemoryLedger()
    >>> ledger.bind("filter", "PureDP budget=1 rule=basic")
    LedgerEntry(kind='filter', spec='PureDP budget=1 rule=basic', rule='', state=(), queries=0)
    >>> entry = ledger.charge(lambda e: e.replace(state=(Fraction(1, 2),), queries=e.queries + 1))
    >>> ledger.read().state
    (Fraction(1, 2),)
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import sqlite3
import threading
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from dpcompose.errors import DPError

__all__ = ["Ledger", "LedgerEntry", "LedgerError", "LedgerLocked", "MemoryLedger", "SQLiteLedger"]

_APPLICATION_ID = 0x4450_4C47  # "DPLG"
_SCHEMA_VERSION = 1
_TABLE = "dpcompose_ledger"


class LedgerError(DPError):
    """A ledger cannot be trusted or used: corrupt, foreign, locked, or bound to another budget.

    The accountant using it refuses every query until the problem is fixed; it never starts from zero.
    """


class LedgerLocked(LedgerError):
    """Another process held the ledger file's write lock for longer than the timeout (retry later)."""


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """What a ledger stores for its key.

    Attributes:
        kind: ``"filter"`` or ``"odometer"``.
        spec: the accountant's measure, budget and rule request, as canonical text.
        rule: the rule in effect (``""`` until a ``rule="auto"`` filter fixes it at its first charge).
        state: the rule's running sums.
        queries: how many queries have been charged.
    """

    kind: str
    spec: str
    rule: str
    state: tuple[Fraction, ...]
    queries: int

    def replace(self, **changes: object) -> LedgerEntry:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


class Ledger(ABC):
    """Where an accountant keeps its spending; see the module docstring."""

    @abstractmethod
    def bind(self, kind: str, spec: str) -> LedgerEntry:
        """Attach an accountant: create the entry if there is none, else check it has the same spec.

        Raises:
            LedgerError: the entry belongs to another kind of accountant or another budget/rule, or the
                store is unusable.
        """

    @abstractmethod
    def read(self) -> LedgerEntry:
        """The current entry (after :meth:`bind`)."""

    @abstractmethod
    def charge(self, update: Callable[[LedgerEntry], LedgerEntry]) -> LedgerEntry:
        """Atomically replace the entry with ``update(entry)`` and return it.

        If ``update`` raises, nothing is stored and the exception propagates. When this returns, the new
        entry is stored (durably, for a file ledger).
        """


def _mismatch(current: LedgerEntry, kind: str, spec: str, where: str) -> LedgerError:
    return LedgerError(
        f"{where} belongs to a {current.kind} with spec {current.spec!r}; this {kind} has spec {spec!r}. "
        "Use another key (or another ledger) for a different budget or rule; nothing was run"
    )


class MemoryLedger(Ledger):
    """A ledger in memory, private to this process (the default).

    Share one instance between several filters built with the same budget to make them draw on a single
    budget; an instance bound to one spec refuses another.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entry: LedgerEntry | None = None

    def bind(self, kind: str, spec: str) -> LedgerEntry:
        with self._lock:
            if self._entry is None:
                self._entry = LedgerEntry(kind, spec, "", (), 0)
            elif (self._entry.kind, self._entry.spec) != (kind, spec):
                raise _mismatch(self._entry, kind, spec, "this MemoryLedger")
            return self._entry

    def read(self) -> LedgerEntry:
        with self._lock:
            if self._entry is None:
                raise LedgerError("this MemoryLedger is not bound to an accountant yet")
            return self._entry

    def charge(self, update: Callable[[LedgerEntry], LedgerEntry]) -> LedgerEntry:
        with self._lock:
            if self._entry is None:
                raise LedgerError("this MemoryLedger is not bound to an accountant yet")
            new = update(self._entry)
            self._entry = new
            return new

    def __repr__(self) -> str:
        return f"MemoryLedger({self._entry!r})"


def _encode_state(state: tuple[Fraction, ...]) -> str:
    return ",".join(f"{q.numerator}/{q.denominator}" for q in state)


def _decode_state(text: str) -> tuple[Fraction, ...]:
    if not text:
        return ()
    out = []
    for part in text.split(","):
        num, _, den = part.partition("/")
        q = Fraction(int(num), int(den))
        if q < 0:
            raise ValueError(f"negative running sum {q}")
        out.append(q)
    return tuple(out)


def _checksum(key: str, kind: str, spec: str, rule: str, state: str, queries: int) -> str:
    h = hashlib.sha256()
    for part in (key, kind, spec, rule, state, str(queries)):
        h.update(part.encode())
        h.update(b"\x00")
    return h.hexdigest()


class SQLiteLedger(Ledger):
    """A ledger in an SQLite file, shared by every process that opens it with the same ``key``.

    Durability: WAL journal with ``synchronous=FULL``, so a committed charge survives a crash of the
    process (and of the machine, as far as the disk honours fsync). Every charge is one
    ``BEGIN IMMEDIATE`` transaction: read the entry, check the budget, write, commit — processes and
    threads sharing the file are serialised, so together they never overspend. Each row carries a
    SHA-256 checksum of its contents; a row that fails it, a file that is not a database, a database
    that is not a dpcompose ledger, or a lock held longer than ``timeout`` seconds raise
    :class:`LedgerError` (:class:`LedgerLocked` for the lock).

    Args:
        path: the file (created if missing).
        key: which budget in the file this ledger is (one file can hold many keys).
        timeout: seconds to wait for another process's write lock.

    Examples:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "budget.db")
        >>> ledger = SQLiteLedger(path, "analyst-1")
        >>> ledger.bind("filter", "demo").queries
        0
        >>> ledger.close()
    """

    def __init__(self, path: str | os.PathLike[str], key: str, *, timeout: float = 30.0) -> None:
        if not isinstance(key, str) or not key:
            raise LedgerError(f"key={key!r} must be a non-empty string")
        self.path = os.fspath(path)
        self.key = key
        self._timeout = float(timeout)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._bound: tuple[str, str] | None = None

    # -- connection and error handling -------------------------------------------------------------

    def _fail(self, exc: sqlite3.Error) -> LedgerError:
        text = str(exc)
        if isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
            return LedgerLocked(
                f"ledger {self.path!r} stayed locked by another process for {self._timeout} s: {text}; "
                "nothing was run or spent"
            )
        return LedgerError(
            f"ledger {self.path!r} is unusable ({type(exc).__name__}: {text}); it may be corrupt or not a "
            "dpcompose ledger. Refusing rather than starting from zero; nothing was run or spent"
        )

    def _connect(self) -> sqlite3.Connection:
        if self._conn is not None:
            return self._conn
        try:
            conn = sqlite3.connect(
                self.path, timeout=self._timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise self._fail(exc) from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self._timeout * 1000)}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
            if mode is None or str(mode[0]).lower() != "wal":
                raise LedgerError(f"ledger {self.path!r}: could not switch to WAL journal (got {mode!r})")
            conn.execute("PRAGMA synchronous = FULL")
            self._check_or_init(conn)
        except sqlite3.Error as exc:
            conn.close()
            raise self._fail(exc) from exc
        except LedgerError:
            conn.close()
            raise
        self._conn = conn
        # Close the connection when the ledger is garbage-collected (newer Pythons warn about unclosed
        # sqlite3 connections); ``close()`` or ``with ledger:`` close it earlier.
        weakref.finalize(self, conn.close)
        return conn

    def _check_or_init(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            app = conn.execute("PRAGMA application_id").fetchone()[0]
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if app == 0 and not tables:
                conn.execute(f"PRAGMA application_id = {_APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")
                conn.execute(
                    f"CREATE TABLE {_TABLE} (key TEXT PRIMARY KEY, kind TEXT NOT NULL, spec TEXT NOT NULL, "
                    "rule TEXT NOT NULL, state TEXT NOT NULL, queries INTEGER NOT NULL, "
                    "checksum TEXT NOT NULL)"
                )
            elif app != _APPLICATION_ID or _TABLE not in tables:
                raise LedgerError(
                    f"{self.path!r} is an SQLite database but not a dpcompose ledger (application_id={app}, "
                    f"tables={sorted(tables)}); refusing to use it"
                )
            else:
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                if version != _SCHEMA_VERSION:
                    raise LedgerError(
                        f"ledger {self.path!r} has schema version {version}; this dpcompose reads version "
                        f"{_SCHEMA_VERSION}"
                    )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _row(self, conn: sqlite3.Connection) -> LedgerEntry | None:
        row = conn.execute(
            f"SELECT kind, spec, rule, state, queries, checksum FROM {_TABLE} WHERE key = ?", (self.key,)
        ).fetchone()
        if row is None:
            return None
        kind, spec, rule, state, queries, checksum = row
        try:
            if checksum != _checksum(self.key, kind, spec, rule, state, int(queries)):
                raise ValueError("checksum mismatch")
            return LedgerEntry(kind, spec, rule, _decode_state(state), int(queries))
        except (ValueError, TypeError, ZeroDivisionError) as exc:
            raise LedgerError(
                f"ledger {self.path!r} key {self.key!r} is corrupt ({exc}); refusing rather than starting "
                "from zero"
            ) from exc

    def _write(self, conn: sqlite3.Connection, e: LedgerEntry) -> None:
        state = _encode_state(e.state)
        conn.execute(
            f"INSERT OR REPLACE INTO {_TABLE} (key, kind, spec, rule, state, queries, checksum) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (self.key, e.kind, e.spec, e.rule, state, e.queries,
             _checksum(self.key, e.kind, e.spec, e.rule, state, e.queries)),
        )  # fmt: skip

    def _transaction(self, body: Callable[[sqlite3.Connection], LedgerEntry]) -> LedgerEntry:
        with self._lock:
            conn = self._connect()
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise self._fail(exc) from exc
            try:
                result = body(conn)
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                _rollback(conn)
                raise self._fail(exc) from exc
            except BaseException:
                _rollback(conn)
                raise
            return result

    # -- the Ledger interface ----------------------------------------------------------------------

    def bind(self, kind: str, spec: str) -> LedgerEntry:
        def body(conn: sqlite3.Connection) -> LedgerEntry:
            current = self._row(conn)
            if current is None:
                current = LedgerEntry(kind, spec, "", (), 0)
                self._write(conn, current)
            elif (current.kind, current.spec) != (kind, spec):
                raise _mismatch(current, kind, spec, f"ledger {self.path!r} key {self.key!r}")
            return current

        entry = self._transaction(body)
        self._bound = (kind, spec)
        return entry

    def read(self) -> LedgerEntry:
        def body(conn: sqlite3.Connection) -> LedgerEntry:
            return self._checked(conn)

        return self._transaction(body)

    def _checked(self, conn: sqlite3.Connection) -> LedgerEntry:
        current = self._row(conn)
        if self._bound is None:
            raise LedgerError(f"ledger {self.path!r} key {self.key!r} is not bound to an accountant yet")
        if current is None:
            raise LedgerError(
                f"ledger {self.path!r} lost key {self.key!r} after it was bound; refusing rather than "
                "starting from zero"
            )
        if (current.kind, current.spec) != self._bound:
            raise _mismatch(current, *self._bound, f"ledger {self.path!r} key {self.key!r}")
        return current

    def charge(self, update: Callable[[LedgerEntry], LedgerEntry]) -> LedgerEntry:
        def body(conn: sqlite3.Connection) -> LedgerEntry:
            new = update(self._checked(conn))
            self._write(conn, new)
            return new

        return self._transaction(body)

    def close(self) -> None:
        """Close the connection (it is reopened on next use)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> SQLiteLedger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SQLiteLedger({self.path!r}, {self.key!r})"


def _rollback(conn: sqlite3.Connection) -> None:
    with contextlib.suppress(sqlite3.Error):
        conn.execute("ROLLBACK")
