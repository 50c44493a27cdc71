"""The in-memory ledger: private to the process that made it (the default of ``make_privacy_filter``)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

from dpcompose.combinators._ledger.base import Ledger, LedgerEntry, LedgerError, check_update, mismatch

__all__ = ["MemoryLedger"]


class MemoryLedger(Ledger):
    """A ledger in memory, private to the process that created it (the default).

    Share one instance between several filters built with the same budget to make them draw on a single
    budget; an instance bound to one spec refuses another. A forked child process (``multiprocessing``
    with the ``fork`` start method, ``os.fork``) inherits a *copy* of the instance; spending in the copy
    would not be seen by the parent or by the other children, so every method raises
    :class:`LedgerError` in a process other than the one that created it. Use :class:`SQLiteLedger` to
    share one budget across processes.

    Examples:
        >>> ledger = MemoryLedger()
        >>> ledger.bind("odometer", "demo").queries
        0
    """

    def __init__(self) -> None:
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._entry: LedgerEntry | None = None

    def _check_process(self) -> None:
        # Checked before taking the lock: a lock held by another thread at fork time stays held forever
        # in the child.
        pid = os.getpid()
        if pid != self._pid:
            raise LedgerError(
                f"this MemoryLedger belongs to process {self._pid}; process {pid} (a forked child) holds "
                "only a copy of it, and spending from the copy would multiply the budget. Refusing; "
                "nothing was run or spent. To share one budget across processes use "
                "SQLiteLedger(path, key)"
            )

    def bind(self, kind: str, spec: str) -> LedgerEntry:
        self._check_process()
        with self._lock:
            if self._entry is None:
                self._entry = LedgerEntry(kind, spec, "", (), 0)
            elif (self._entry.kind, self._entry.spec) != (kind, spec):
                raise mismatch(self._entry, kind, spec, "this MemoryLedger")
            return self._entry

    def read(self) -> LedgerEntry:
        self._check_process()
        with self._lock:
            if self._entry is None:
                raise LedgerError("this MemoryLedger is not bound to an accountant yet")
            return self._entry

    def charge(self, update: Callable[[LedgerEntry], LedgerEntry]) -> LedgerEntry:
        self._check_process()
        with self._lock:
            if self._entry is None:
                raise LedgerError("this MemoryLedger is not bound to an accountant yet")
            new = check_update(self._entry, update(self._entry))
            self._entry = new
            return new

    def __repr__(self) -> str:
        return f"MemoryLedger({self._entry!r})"
