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
    """``data ↦ parts[-1](…(parts[0](data)))``: the functions of a chain, run one after the other in a loop
    (a chain of any length costs one stack frame, not one per link)."""

    __slots__ = ("parts",)

    def __init__(self, *parts: Function) -> None:
        self.parts = parts

    def __call__(self, data: Any) -> Any:
        for part in self.parts:
            data = part(data)
        return data


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
    """The function ``data ↦ second(first(data))``, fused where a :class:`Stage` offers it.

    Both sides are flattened into their parts, so ``(a >> b) >> c`` and ``a >> (b >> c)`` both offer ``c``
    the function of ``b``: the last part of ``first`` meets the first part of ``second``, and a fused
    function replaces the two where that part is a :class:`Stage` that recognises its predecessor.
    """
    head = first.parts if isinstance(first, Composed) else (first,)
    tail = second.parts if isinstance(second, Composed) else (second,)
    joined = tail[0].after(head[-1]) if isinstance(tail[0], Stage) else None
    if joined is None or isinstance(joined, Composed):  # not fused: the parts one after the other
        return Composed(*head, *tail)
    return Composed(*head[:-1], joined, *tail[1:]) if len(head) + len(tail) > 2 else joined
