"""The two sides of one order of a PLD, each built on first use, and the memo of what is read off them.

A PLD record (:class:`~dpcompose.accounting._pld.distribution.PLD`) holds its content; how and when its
sides are built, and the float curves read off them to locate answers, live here, beside it: a
:class:`Sides` is given its sides built, or how to build them (each alone, or both from one build), and
builds each at most once where it is read. Building decides what is built at all (the untilted composite of
a long composition, which its tilted reading never needs, may not fit in memory), so it stays on with the
speed devices off (:func:`~dpcompose.accounting._pld.concurrency.speedups`), like the once-computed
attributes. The values are pure functions of what was composed: two threads may both build a side, and
either one's is kept.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from dpcompose.accounting._pld.side import Side

FloatArray = npt.NDArray[np.float64]


class Sides:
    """The upper and lower side of one order of a PLD: given built (``upper``, ``lower``), or built on first
    use, each alone (``make_upper``, ``make_lower``) or both from one build (``make``, which returns the
    :class:`Sides` of another PLD: its upper side is taken when either is read, its lower side read from it
    where needed). Module-level functions and partials of them keep a PLD picklable.

    ``memo`` holds, per side (keyed by its id, which the side, kept beside, cannot hand to another), the
    float curve and lumped drift its reading computes once
    (:meth:`~dpcompose.accounting._pld.distribution.PLD.least_up`)."""

    def __init__(
        self,
        upper: Side | None = None,
        lower: Side | None = None,
        *,
        make_upper: Callable[[], Side] | None = None,
        make_lower: Callable[[], Side] | None = None,
        make: Callable[[], Sides] | None = None,
    ) -> None:
        assert upper is not None or make_upper is not None or make is not None, "no upper side"
        assert lower is not None or make_lower is not None or make is not None, "no lower side"
        self._upper, self._lower = upper, lower
        self._make_upper, self._make_lower, self._make = make_upper, make_lower, make
        self._made: Sides | None = None  # (the Sides ``make`` returned: the lower side is read from it)
        self.lazy_lower = lower is None
        """Whether the lower side is built on first use (rather than given built)."""
        self.memo: dict[int, tuple[Side, FloatArray]] = {}

    def _from_make(self) -> Sides:
        if self._made is None:
            assert self._make is not None
            made = self._make()
            self._upper = made.upper
            self._made = made
        return self._made

    @property
    def upper(self) -> Side:
        """The pessimistic side (upper bounds), built where it is not yet."""
        up = self._upper
        if up is None:
            up = self._make_upper() if self._make_upper is not None else self._from_make().upper
            self._upper = up
        return up

    @property
    def lower(self) -> Side:
        """The optimistic side (lower bounds), built where it is not yet (alone where it can be: the upper
        side is not needed)."""
        low = self._lower
        if low is None:
            low = self._make_lower() if self._make_lower is not None else self._from_make().lower
            self._lower = low
        return low

    @property
    def upper_if_built(self) -> Side | None:
        """The upper side if it is built already, else None."""
        return self._upper

    @property
    def lower_if_built(self) -> Side | None:
        """The lower side if it is built already (here, or on the sides it is read from), else None."""
        if self._lower is None and self._made is not None:
            return self._made.lower_if_built
        return self._lower
