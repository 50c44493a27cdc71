"""The budget shares of a table Context: each computed when it is handed out, each handed out once."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, TypeVar

from dpcompose.core import ApproxDP, Measure
from dpcompose.errors import BudgetExceeded

__all__ = ["BudgetShares"]

T = TypeVar("T")


class BudgetShares:
    """A Context's budget split into shares ``budget·wᵢ/Σw`` (exact), handed to its releases in order.

    Share ``i`` is computed when it is asked for, the same exact value every time, so a split into 2²⁰
    shares costs nothing up front. :meth:`hand_out` gives the next share to one release at a time: under
    a lock it checks that the query was priced at that share's value, runs the release (which charges the
    Context's filter) and moves on to the next share. So threads releasing at once never get one share
    twice, and a release refused before its charge (here or by the filter) takes no share and spends
    nothing.

    Build with :meth:`even` or :meth:`weighted`.
    """

    def __init__(
        self,
        measure: Measure[Any],
        budget: Any,
        count: int,
        weight: Callable[[int], Fraction],
        total: Fraction,
    ) -> None:
        self._measure, self._budget = measure, budget
        self._count, self._weight, self._total = count, weight, total
        self._lock = threading.Lock()
        self._next = 0  # the share the next release gets

    @classmethod
    def even(cls, measure: Measure[Any], budget: Any, n: int) -> BudgetShares:
        """``n`` equal shares (``n >= 1``)."""
        return cls(measure, budget, n, lambda _: Fraction(1), Fraction(n))

    @classmethod
    def weighted(cls, measure: Measure[Any], budget: Any, weights: Sequence[Fraction]) -> BudgetShares:
        """Shares proportional to ``weights`` (positive, at least one)."""
        kept = tuple(weights)
        total = sum(kept, Fraction(0))
        return cls(measure, budget, len(kept), kept.__getitem__, total)

    def __len__(self) -> int:
        return self._count

    def value(self, i: int) -> Any:
        """Share ``i``: ``budget·wᵢ/Σw`` (for (ε, δ), each of ε and δ so)."""
        if not 0 <= i < self._count:
            raise IndexError(f"share {i} of {self._count}")
        w, total, budget = self._weight(i), self._total, self._budget
        if isinstance(self._measure, ApproxDP):
            return (budget[0] * w / total, budget[1] * w / total)
        return budget * w / total

    def peek(self) -> tuple[int, Any]:
        """The next share's index and value, to price a query (the share is taken only by its release).

        Raises:
            BudgetExceeded: every share is given out.
        """
        i = self._next
        if i >= self._count:
            raise BudgetExceeded(
                f"all {self._count} budget shares of this Context are given out; pass "
                "query(privacy_loss=...) to spend what remains"
            )
        return i, self.value(i)

    def hand_out(
        self, budget: Any, share: int | None, release: Callable[[], T], charges: Callable[[], int]
    ) -> T:
        """Run ``release`` as the next release and give it the next share.

        Args:
            budget: what the query was priced at.
            share: the share it was priced from (``None``: priced explicitly; it takes the next share's turn
                without its value, as every release does).
            release: charges the filter, then runs the query.
            charges: counts the filter's charges, so that a release charged and then failed still takes its
                share (where other filters charge the same ledger meanwhile, a refused release may take one
                too: a share is never handed out twice).

        Raises:
            BudgetExceeded: the query was priced at a share another release took (or every share is
                taken): nothing was run or spent; build it again with ``ctx.query()`` for the next share.
        """
        with self._lock:
            i = self._next
            if share is not None:
                if i >= self._count:
                    raise BudgetExceeded(
                        f"all {self._count} budget shares of this Context are given out (another release "
                        "took the last); nothing was run or spent. Pass query(privacy_loss=...) to spend "
                        "what remains"
                    )
                current = self.value(i)
                if current != budget:
                    show = self._measure.display
                    raise BudgetExceeded(
                        f"this query was priced at share {share} ({show(budget)}), which another release "
                        f"took; the next share, {i}, is {show(current)}: build the query again with "
                        "ctx.query(); nothing was run or spent"
                    )
            before = charges()
            try:
                out = release()
            except BaseException:
                try:
                    charged = charges() != before
                except Exception:
                    charged = True  # cannot tell: better a share lost than one handed out twice
                if charged:
                    self._next = i + 1
                raise
            self._next = i + 1
            return out
