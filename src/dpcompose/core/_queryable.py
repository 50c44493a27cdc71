"""Queryable: a live interactive mechanism that answers one query at a time.

The base class owns the parts that must never vary (STYLE §8): the lock, the closed state, the owning
process and the call sequence. A subclass implements only :meth:`Queryable._answer`. Inside ``_answer``
the lock is held, so a subclass can validate a query, charge its budget and only then release an answer
without races.

A queryable's budget state lives in its process's memory, so a forked copy would spend it again: a
queryable answers only in the process that created it (a subclass whose state is shared across
processes, such as a filter on an ``SQLiteLedger``, opts out with ``_process_local = False``).
:func:`created_queryables` lets a compositor learn every queryable that running a query created, however
deeply it is wrapped, so that sequential interaction can close them all.
"""

from __future__ import annotations

import contextvars
import html
import os
import threading
import weakref
from collections.abc import Callable
from typing import Any, Generic, NoReturn, SupportsIndex, TypeVar

from dpcompose.errors import InvalidParameter, SequentialityError

__all__ = ["Queryable", "created_queryables"]

_CREATED: contextvars.ContextVar[list[weakref.ReferenceType[Any]] | None] = contextvars.ContextVar(
    "dpcompose_created_queryables", default=None
)


class created_queryables:  # (lower case: used as ``with created_queryables() as created``)
    """Collect (weak references to) every Queryable constructed in this context, nested ones included (an
    enclosing collector receives them too when this one ends). A class rather than a generator-based
    context manager: every query enters one (``Queryable.__call__``), and this costs a third as much."""

    __slots__ = ("_created", "_token")

    def __enter__(self) -> list[weakref.ReferenceType[Any]]:
        self._created: list[weakref.ReferenceType[Any]] = []
        self._token = _CREATED.set(self._created)
        return self._created

    def __exit__(self, *exc: object) -> None:
        _CREATED.reset(self._token)
        outer = _CREATED.get()
        if outer is not None and self._created:
            outer.extend(self._created)


Q = TypeVar("Q")
A = TypeVar("A")


class Queryable(Generic[Q, A]):
    """A state machine answering queries; thread-safe.

    ``q(query)``: refuses if closed, runs the guards (which may refuse, spending nothing), then takes the
    lock, refuses if closed by then, and calls ``_answer``. The guards run outside the lock: a guard may
    close other queryables (sequential composition closes a sibling), and closing one waits for its
    lock, so a guard run under its own queryable's lock would let two siblings, queried at once, each
    wait for the other forever. A queryable closed while a query waits for the lock refuses it; one
    answering when it is closed finishes that answer first (``close`` waits for the lock).

    Args:
        lock: a lock to share with sibling queryables (a compositor passes one lock to all its
            children so that queries to them are serialised in a single order); by default a new one.
        name: used in error messages and ``repr``.

    Examples:
        >>> class Echo(Queryable[int, int]):
        ...     def _answer(self, query: int) -> int:
        ...         return query
        >>> q = Echo(name="echo")
        >>> q(3)
        3
        >>> q
        <echo: open, 1 answered>
        >>> q.close("done")
        >>> q(4)
        Traceback (most recent call last):
        ...
        dpcompose.errors.SequentialityError: echo is closed: done
    """

    #: Whether the budget state is in this process's memory (then a forked copy refuses to answer).
    _process_local: bool = True

    def __init__(self, *, lock: threading.RLock | None = None, name: str | None = None) -> None:
        self._lock = lock if lock is not None else threading.RLock()
        self._answering = False
        self._closed_reason: str | None = None
        self._guards: list[Callable[[Queryable[Q, A]], None]] = []
        self._queries = 0
        self._pid = os.getpid()
        self._spawned: list[weakref.ReferenceType[Any]] = []  # created while answering: closed with this
        self._spawned_kept = 0  # live entries at the last pruning of dead ones
        registry = _CREATED.get()
        if registry is not None:
            registry.append(weakref.ref(self))
        if name is not None and not isinstance(name, str):
            raise InvalidParameter(f"name={name!r} must be a str or None")
        self.name = name or type(self).__name__

    def __call__(self, query: Q) -> A:
        self._refuse_if_closed()
        if self._process_local and os.getpid() != self._pid:
            raise SequentialityError(
                f"{self.name} was created in process {self._pid} and keeps its budget in that process's "
                f"memory; this process ({os.getpid()}) is a fork of it and would spend the budget again. "
                "To share a budget across processes use make_privacy_filter with an SQLiteLedger"
            )
        for guard in tuple(self._guards):  # outside the lock (see the class docstring)
            guard(self)
        with self._lock:
            self._refuse_if_closed()
            if self._answering:  # (only this thread can see it set: the lock is held while it is)
                raise SequentialityError(
                    f"{self.name} was queried from inside its own answer (a query's function or privacy "
                    "map called it back): such a query would be priced against the step being answered, "
                    "so it is refused; nothing was run or spent for it"
                )
            self._answering = True
            try:
                with created_queryables() as created:
                    try:
                        answer = self._answer(query)
                    finally:
                        self._remember(created)
            finally:
                self._answering = False
            self._queries += 1
            return answer

    def _refuse_if_closed(self) -> None:
        reason = self._closed_reason
        if reason is not None:
            raise SequentialityError(f"{self.name} is closed: {reason}")

    def _remember(self, created: list[weakref.ReferenceType[Any]]) -> None:
        """Keep the queryables an answer created, to close them with this one (dead ones pruned at times)."""
        if not created:
            return
        self._spawned.extend(created)
        if len(self._spawned) > 2 * self._spawned_kept + 16:
            self._spawned = [r for r in self._spawned if r() is not None]
            self._spawned_kept = len(self._spawned)

    # a copy (copy.copy, pickle) would hold its own budget state, so the two could answer twice the budget
    def _no_copy(self) -> NoReturn:
        raise SequentialityError(
            f"{self.name} cannot be copied or pickled: the copy would hold a second copy of its budget "
            "state. Pass the queryable itself; to share a budget across processes use make_privacy_filter "
            "with an SQLiteLedger"
        )

    def __copy__(self) -> NoReturn:
        self._no_copy()

    def __deepcopy__(self, memo: object) -> NoReturn:
        self._no_copy()

    def __reduce_ex__(self, protocol: SupportsIndex) -> NoReturn:
        self._no_copy()

    def _answer(self, query: Q) -> A:  # pragma: no cover - abstract
        """Answer one query. Called with the lock held, after the closed check and guards."""
        raise NotImplementedError

    def add_guard(self, guard: Callable[[Queryable[Q, A]], None]) -> None:
        """Run ``guard(self)`` before every answer; if it raises, the query is refused.

        The guard runs before the queryable's lock is taken (it may close other queryables, see the class
        docstring), so it must be thread-safe itself; a query it admits is still refused if this queryable
        is closed before the answer starts."""
        with self._lock:
            self._guards.append(guard)

    def close(self, reason: str = "closed") -> None:
        """Close for good: every later query raises :class:`SequentialityError` with ``reason``.

        Every queryable created while this one answered (an interactive answer, and anything created
        through that in turn) is closed with it, and ``close`` returns only when each of them has finished
        the answer it may be giving: so a second caller of ``close`` (another thread switching to a later
        sibling) also waits for them, rather than returning while one is still answering."""
        with self._lock:
            if self._closed_reason is None:
                self._closed_reason = reason
            spawned = tuple(self._spawned)
        for ref in spawned:
            child = ref()
            if child is not None:
                child.close(f"{self.name}, which it was created through, is closed: {reason}")

    @property
    def closed(self) -> bool:
        """Whether this queryable refuses all further queries."""
        return self._closed_reason is not None

    @property
    def queries_answered(self) -> int:
        """How many queries this queryable has answered."""
        return self._queries

    def _status(self) -> str:
        """What a subclass adds to ``repr``: the budget used or left (``""`` by default)."""
        return ""

    def _repr_html_(self) -> str:
        """The ``repr`` for Jupyter, escaped."""
        return f"<code>{html.escape(repr(self))}</code>"

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        status = self._status()
        return f"<{self.name}: {state}, {self._queries} answered{'; ' + status if status else ''}>"
