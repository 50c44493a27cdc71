"""Budget ledgers: where a filter or an odometer keeps what it has spent.

A ledger holds one *entry*: which kind of accountant owns it and with which budget and rule (``spec``),
the rule actually in effect, the rule's running sums (``state``) and the number of queries charged.
:meth:`Ledger.charge` is atomic: it reads the entry, lets the accountant compute the new one (or refuse by
raising), and stores it — durably, for :class:`SQLiteLedger` — *before* the caller releases anything.

* :class:`MemoryLedger` — in memory, private to the process that made it (the default of
  ``make_privacy_filter``). A forked child refuses to use it: a copy of an in-memory budget in every
  worker would multiply the budget.
* :class:`SQLiteLedger` — a file (standard library :mod:`sqlite3`), shared by every process that opens it
  with the same key. It never silently forgets: every charge is appended to a hash-chained journal that
  is verified when the file is opened, and every failure is a :class:`LedgerError` — the accountant then
  refuses to answer rather than starting from zero. See its docstring for the durability and threat
  model.

Examples:
    >>> from fractions import Fraction
    >>> ledger = MemoryLedger()
    >>> ledger.bind("filter", "PureDP budget=1 rule=basic")
    LedgerEntry(kind='filter', spec='PureDP budget=1 rule=basic', rule='', state=(), queries=0)
    >>> entry = ledger.charge(lambda e: e.replace(state=(Fraction(1, 2),), queries=e.queries + 1))
    >>> ledger.read().state
    (Fraction(1, 2),)
"""

from dpcompose.combinators._ledger.base import Ledger, LedgerEntry, LedgerError, LedgerLocked
from dpcompose.combinators._ledger.memory import MemoryLedger
from dpcompose.combinators._ledger.sqlite import SQLiteLedger

__all__ = ["Ledger", "LedgerEntry", "LedgerError", "LedgerLocked", "MemoryLedger", "SQLiteLedger"]
