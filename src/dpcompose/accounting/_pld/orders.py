from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Generic, TypeVar

import numpy as np

from dpcompose.accounting._pld.concurrency import in_parallel, speedups_on
from dpcompose.accounting._pld.fourier import moments
from dpcompose.accounting._pld.recipe import Recipe
from dpcompose.accounting._pld.side import SCREEN_BITS, Side, coarse_side
from dpcompose.errors import InvalidParameter

_W = TypeVar("_W")
_X = TypeVar("_X")


def orders_in_parallel(one: Recipe | None, rev: Recipe | None) -> bool:
    """Whether two orders with these recipes are worth reading in two threads: both are long compositions
    (read through a recipe; a short one takes well under a millisecond, less than starting a thread)."""
    return one is not None and rev is not None


_SCREEN_MIN = 1 << 16  # ... made for compositions whose loss spreads over about this many lattice steps


def screen_sides(recipe: Recipe, step: float) -> list[tuple[Side, int]] | None:
    """The children of a long composition (``recipe``, on the lattice ``step``) for its screening twin:
    their upper sides moved to a lattice 2**``SCREEN_BITS`` times coarser (:func:`coarse_side`), or None
    where the composition's loss spreads over too few lattice steps for a twin to pay."""
    sides = [(coarse_side(sd, SCREEN_BITS, step), n) for sd, n in recipe.items]
    # the composition's variance in coarse steps (a spread variance: at least the fine one's)
    var = 0.0
    for sd, n in sides:
        if np.any(sd.masses > 0):
            tot, _, ss = moments(sd.masses)
            var += n * ss / tot
    # (the fine read's window spans about 16 standard deviations: 2**SCREEN_BITS fine steps per coarse one)
    return sides if 16 * math.sqrt(var) * 2**SCREEN_BITS >= _SCREEN_MIN else None


@dataclass(frozen=True)
class Orders(Generic[_W]):
    """The two orders of an asymmetric pair as :func:`screened_orders` and :func:`both_ways` read them:
    ``one`` (the first order alone) and ``rev`` (the reverse order), with how to find an order's recipe
    (None where it is a short composition) and how to make an order's screening twin (None where it has
    none: the record's own screening twin, a coarser composition)."""

    one: _W
    rev: _W
    recipe_of: Callable[[_W], Recipe | None]
    twin: Callable[[_W], _W | None]


def screened_orders(orders: Orders[_W], read: Callable[[_W], Fraction]) -> tuple[Fraction, Fraction]:
    """``read`` (an upper end: of ε(δ) or of δ(ε)) of each of the two ``orders`` of an asymmetric pair, except
    that the reverse order's may be replaced by that of its screening twin (``orders.twin``) where that is at
    most the first order's: the larger of the two, what the callers take, is then the first order's, as it
    is with the reverse order read in full (whose value is at most its twin's: both bound the same exact
    value from above, the twin the larger one; were the full read above its twin's, the twin's would be the
    tighter certified bound of the two).

    The first order is read in one thread while the other makes and reads the reverse order's twin (a
    lattice 16 times coarser: a few milliseconds); the reverse order is read in full only if its twin's
    value is above the first order's (or, where it has no twin, in that thread meanwhile). On DP-SGD the
    reverse (add) order's ε is 10 % below the remove order's, and not reading it saves a fifth of the time
    of ε(δ). In every subsampled composition tried (Gaussian, Laplace, discrete Gaussian; rates 0.01 to
    0.9) the first (remove) order was the larger; where the reverse one is, the two full reads run one
    after the other. With the speed devices off (:func:`~dpcompose.accounting._pld.concurrency.speedups`),
    both orders are read in full, one after the other."""
    one, rev = orders.one, orders.rev
    one_recipe = orders.recipe_of(one)
    if not speedups_on() or not orders_in_parallel(one_recipe, orders.recipe_of(rev)):
        return read(one), read(rev)  # (off, or short: a thread is not worth starting)
    screen: list[Fraction] = []  # the reverse order's screening value, where there is one
    full: list[Fraction] = []  # its full value, where there is no twin (read meanwhile, in full)

    def second() -> None:
        # first the children of the first order (built by the other thread, which this waits for): the
        # reverse order's children, built next, then do not compete with them (a subsampled step builds
        # each order when first read)
        assert one_recipe is not None
        one_recipe.items  # noqa: B018
        twin = orders.twin(rev)
        if twin is None:
            full.append(read(rev))
            return
        with contextlib.suppress(InvalidParameter):  # (no finite ε certified there: read in full)
            screen.append(read(twin))

    first = in_parallel(lambda: read(one), second)[0]
    assert first is not None
    if full:
        return first, full[0]
    if screen and screen[0] <= first:
        return first, screen[0]
    return first, read(rev)


def screened_many(
    orders: Orders[_W], points: Sequence[_X], read: Callable[[_W, Sequence[_X]], list[Fraction]]
) -> list[Fraction]:
    """``max(screened_orders(orders, lambda w: read(w, [x])[0]))`` at each of the ``points``, the same values,
    with each order's curve read in one call (``read``: an order's upper ends at the points given).

    As :func:`screened_orders` does at one point: the first order is read in this thread while the other
    reads the reverse order's screening twin, point by point where the twin refuses one (its value is then
    not used there), or reads the reverse order in full where it has no twin; the reverse order is read in
    full only at the points where its twin's value is above the first order's, or where the twin refused.
    With the speed devices off, or for short compositions, both orders at every point, one after the
    other."""
    one, rev = orders.one, orders.rev
    one_recipe = orders.recipe_of(one)
    if not speedups_on() or not orders_in_parallel(one_recipe, orders.recipe_of(rev)):
        return [max(a, b) for a, b in zip(read(one, points), read(rev, points), strict=True)]
    screen: list[Fraction | None] = []  # the twin's value at each point (None: refused there)

    def second() -> list[Fraction]:  # the reverse order's values where it has no twin, else [] (screen)
        assert one_recipe is not None
        one_recipe.items  # noqa: B018  (the first order's children first: see screened_orders)
        twin = orders.twin(rev)
        if twin is None:
            return read(rev, points)
        try:
            screen.extend(read(twin, points))
        except InvalidParameter:  # (refused somewhere: point by point, as screened_orders reads it)
            for x in points:
                try:
                    screen.append(read(twin, [x])[0])
                except InvalidParameter:
                    screen.append(None)
        return []

    first, full = in_parallel(lambda: read(one, points), second)
    if full:
        return [max(a, b) for a, b in zip(first, full, strict=True)]
    out = list(first)
    need = [i for i, (a, s) in enumerate(zip(first, screen, strict=True)) if s is None or s > a]
    if need:
        again = read(rev, [points[i] for i in need])
        for i, b in zip(need, again, strict=True):
            out[i] = max(out[i], b)
    return out


def both_ways(
    orders: Orders[_W], upper: Callable[[_W], Fraction], lower: Callable[[_W, Fraction], Fraction]
) -> tuple[Fraction, Fraction]:
    """``(lower, upper)`` bounds of an asymmetric pair: the larger of its two ``orders``' at each end, where
    ``upper`` reads an order's upper end and ``lower`` its lower end given that upper end.

    The order with the larger upper end has its lower end read first; the other order's lower end is
    read only if its upper end is above that (otherwise it cannot be the larger one: lower ≤ upper). The
    result is the one both orders' bounds give; at q = 1e-5 this skips the add order's lower side, a
    third of the time of ``epsilon_bounds``."""
    ways = [orders.one, orders.rev]
    ups = screened_orders(orders, upper)  # (the same views: the lower ends are read on them below)
    first = 0 if ups[0] >= ups[1] else 1
    lo = lower(ways[first], ups[first])
    if ups[1 - first] > lo:
        lo = max(lo, lower(ways[1 - first], ups[1 - first]))
    return lo, max(ups)
