"""How a chain ``t1 >> t2`` runs its two functions: one after the other, or fused where the second knows a
faster way to compute exactly what the two compute one after the other.

A transformation's function may be a :class:`Stage`: a callable whose :meth:`Stage.after` returns the
function ``data ↦ self(first(data))`` for a given ``first``. The base class composes plainly
(:class:`Composed`); a stage that recognises ``first`` may return a fused function instead, which must return
the same value (the same bits) for every input in the chain's domain — the chain's stability map is the
composition of the two maps whatever runs, so a fused function is a speed path only, never a different
computation. ``dp.explain``, the recipes (``to_json``) and the maps see the two transformations as before.

:func:`compose` is what ``>>`` uses. It re-associates nested compositions, so ``(a >> b) >> c`` and
``a >> (b >> c)`` both offer ``c`` the function of ``b``.

Examples:
    >>> double, inc = (lambda x: 2 * x), (lambda x: x + 1)
    >>> f = compose(compose(double, inc), double)
    >>> f(3), isinstance(f, Composed)
    (14, True)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["Composed", "Stage", "compose"]

Function = Callable[[Any], Any]


class Composed:
    """``data ↦ second(first(data))``."""

    __slots__ = ("first", "second")

    def __init__(self, first: Function, second: Function) -> None:
        self.first = first
        self.second = second

    def __call__(self, data: Any) -> Any:
        return self.second(self.first(data))


class Stage:
    """A transformation's function that may run fused with the function before it in a chain.

    Subclasses implement ``__call__`` and may override :meth:`after`.
    """

    __slots__ = ()

    def __call__(self, data: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def after(self, first: Function) -> Function:
        """The function ``data ↦ self(first(data))``; a subclass may return a fused one that computes the
        same value for every input."""
        return Composed(first, self)


def compose(first: Function, second: Function) -> Function:
    """The function ``data ↦ second(first(data))``, fused where a :class:`Stage` offers it."""
    if isinstance(second, Composed):  # second(x) = s2(s1(x)): s2 ∘ (s1 ∘ first)
        return Composed(compose(first, second.first), second.second)
    if isinstance(first, Composed):  # second(f2(f1(x))): (second ∘ f2) ∘ f1
        return Composed(first.first, compose(first.second, second))
    if isinstance(second, Stage):
        return second.after(first)
    return Composed(first, second)
