"""What every ledger shares: the entry it stores, the interface, its errors and the check on an update."""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from dpcompose.errors import DPError

__all__ = ["Ledger", "LedgerEntry", "LedgerError", "LedgerLocked", "check_update", "continues", "mismatch"]


class LedgerError(DPError):
    """A ledger cannot be trusted or used: corrupt, foreign, locked, read-only, full, or bound elsewhere.

    The accountant using it refuses every query until the problem is fixed; it never starts from zero.
    """


class LedgerLocked(LedgerError):
    """Another process held the ledger file's write lock for longer than the timeout (retry later)."""


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """What a ledger stores for its key.

    Attributes:
        kind: ``"filter"`` or ``"odometer"``.
        spec: everything that gives the budget its meaning (input domain and metric, ``d_in``, measure,
            budget, rule request), as canonical text.
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


def mismatch(current: LedgerEntry, kind: str, spec: str, where: str) -> LedgerError:
    """The error for an accountant binding an entry that belongs to another kind or spec."""
    return LedgerError(
        f"{where} belongs to a {current.kind} with spec {current.spec!r}; this {kind} has spec {spec!r}. "
        "Use another key (or another ledger) for a different budget, rule, domain or metric; nothing was run"
    )


def continues(old: LedgerEntry | None, new: LedgerEntry | None) -> bool:
    """Whether ``new`` may follow ``old`` in a ledger: the same accountant, never fewer queries, and running
    sums that never decrease (the same number of them, each at least as large; an empty state, before a
    rule is fixed, may be followed by any)."""
    if old is None or new is None:
        return new is not None or old is None
    return (
        (new.kind, new.spec) == (old.kind, old.spec)
        and new.queries >= old.queries
        and (
            not old.state
            or (
                len(new.state) == len(old.state)
                and all(n >= o for n, o in zip(new.state, old.state, strict=True))
            )
        )
    )


def check_update(old: LedgerEntry, new: object) -> LedgerEntry:
    """The accountant's new entry, checked so that a bug can never store a smaller or foreign entry."""
    if not isinstance(new, LedgerEntry):
        raise LedgerError(f"a ledger update returned {new!r}, not a LedgerEntry; nothing was stored")
    if (new.kind, new.spec) != (old.kind, old.spec):
        raise LedgerError("a ledger update changed the entry's kind or spec; nothing was stored")
    if isinstance(new.queries, bool) or not isinstance(new.queries, int) or new.queries < old.queries:
        raise LedgerError(
            f"a ledger update set queries={new.queries!r} below {old.queries}; nothing was stored"
        )
    if not isinstance(new.rule, str) or not all(type(q) is Fraction and q >= 0 for q in new.state):
        raise LedgerError(f"a ledger update returned a malformed entry {new!r}; nothing was stored")
    return new
