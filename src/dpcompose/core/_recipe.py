"""Recipes: how a transformation or measurement was built, kept so that it can be rebuilt from a file.

A library constructor decorated with :func:`recorded` attaches to the record it returns a :class:`Call`
(the constructor and its bound arguments, defaults applied); ``left >> right`` typed by a user attaches
a :class:`Chain`. :mod:`dpcompose._serialize` turns these into JSON and back. Only the outermost call
records: what a constructor builds internally is rebuilt by calling the constructor again, so a record a
constructor receives and returns unchanged keeps its own recipe.

Examples:
    >>> import dpcompose as dp
    >>> count = dp.t.make_count(dp.VectorDomain(dp.AtomDomain(int)), dp.SymmetricDistance())
    >>> count.recipe.function.__name__, count.recipe.arguments[1]
    ('make_count', SymmetricDistance())
"""

from __future__ import annotations

import contextvars
import functools
import inspect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

import numpy as np

__all__ = ["Call", "Chain", "Stored", "building", "record_chain", "recorded", "recorded_as"]

P = ParamSpec("P")
R = TypeVar("R")

#: Every constructor decorated with :func:`recorded` (dp.to_json accepts calls of these only).
RECORDED: set[Callable[..., Any]] = set()

# Depth of library constructor calls in progress in this thread/context: only depth 0 records.
_DEPTH: contextvars.ContextVar[int] = contextvars.ContextVar("dpcompose_recipe_depth", default=0)


@dataclass(frozen=True, slots=True)
class Call:
    """A call of a public library constructor: ``function(*arguments, **keywords)``.

    ``arguments`` and ``keywords`` are the values bound by :func:`inspect.signature` with defaults
    applied; lists, dicts and arrays are copied when recorded. ``problem`` says why the call cannot be
    stored (a one-shot iterator argument), or is ``""``.
    """

    function: Callable[..., Any]
    arguments: tuple[Any, ...]
    keywords: Mapping[str, Any]
    problem: str = ""


@dataclass(frozen=True, slots=True)
class Chain:
    """``left >> right`` as the user wrote it."""

    left: Any
    right: Any


def building() -> bool:
    """Whether a library constructor is running (its inner records are not recorded)."""
    return _DEPTH.get() > 0


_PLAIN: set[type] = set()  # types seen to be no container and no iterator: kept as they are


def _snapshot(value: Any, problems: list[str], name: str) -> Any:
    """A copy of the containers in ``value`` (so later mutation by the caller changes no recipe)."""
    if type(value) in _PLAIN:  # (a composition of 10⁶ children: one look-up each, not six type checks)
        return value
    if isinstance(value, list):
        return [_snapshot(v, problems, name) for v in value]
    if isinstance(value, tuple) and type(value) is tuple:
        return tuple(_snapshot(v, problems, name) for v in value)
    if isinstance(value, dict):
        return {k: _snapshot(v, problems, name) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return type(value)(value) if isinstance(value, set) else value
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, Iterator):
        problems.append(f"argument {name!r} was a one-shot iterator ({type(value).__name__}); pass a list")
    else:
        _PLAIN.add(type(value))
    return value


def _contains(container: Any, obj: object) -> bool:
    if container is obj:
        return True
    if isinstance(container, (list, tuple)):
        if id(obj) in set(map(id, container)):  # (no Python loop: 10⁶ children of a composition)
            return True
        if not any(issubclass(t, (list, tuple, dict)) for t in set(map(type, container))):
            return False
        return any(_contains(c, obj) for c in container if isinstance(c, (list, tuple, dict)))
    if isinstance(container, dict):
        return any(_contains(c, obj) for c in container.values())
    return False


def _attach(result: object, recipe: Call | Chain) -> None:
    """Store ``recipe`` on a record that declares a ``recipe`` field (Transformation, Measurement).

    Anything else a constructor returns is left alone.
    """
    if "recipe" in getattr(type(result), "__dataclass_fields__", ()):
        object.__setattr__(result, "recipe", recipe)


def recorded(function: Callable[P, R]) -> Callable[P, R]:
    """Decorate a public constructor so that the record it returns remembers the call.

    Apply it to every public ``make_*`` constructor that returns a Transformation or Measurement; that
    one line (and the name in its package's ``__all__``) makes the constructor serializable by
    ``dp.to_json``. The signature, docstring and module are kept (:func:`functools.wraps`).
    """
    return _record(function, None)


Stored = Callable[[dict[str, Any]], tuple[dict[str, Any], str]]
"""Maps a call's bound arguments (by name) to the arguments to record in their place and a problem
(``""``: none; else why the call cannot be stored)."""


def recorded_as(stored: Stored) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """:func:`recorded`, with the arguments recorded in the form ``stored`` gives them: for a constructor
    that accepts an argument in a form a file cannot hold (a Polars expression) and an equivalent one it
    can (the engine-neutral tree it is translated to). ``stored`` runs after the constructor succeeded, on
    the bound arguments; calling the constructor with what it returns must build the same record."""

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        return _record(function, stored)

    return decorate


def _record(function: Callable[P, R], stored: Stored | None) -> Callable[P, R]:
    signature = inspect.signature(function)

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        if _DEPTH.get():
            return function(*args, **kwargs)
        token = _DEPTH.set(1)
        try:
            result = function(*args, **kwargs)
        finally:
            _DEPTH.reset(token)
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        if _contains(bound.args, result) or _contains(bound.kwargs, result):
            return result  # an argument returned unchanged keeps its own recipe
        problems: list[str] = []
        if stored is not None:
            replaced, problem = stored(dict(bound.arguments))
            bound.arguments.update(replaced)
            if problem:
                problems.append(problem)
        kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        positional = [p.name for p in signature.parameters.values() if p.kind in kinds]
        if set(map(type, bound.args)) <= _PLAIN:  # (nothing to copy: 10⁶ children without a loop)
            arguments = tuple(bound.args)
        else:
            arguments = tuple(
                _snapshot(v, problems, positional[i] if i < len(positional) else "*args")
                for i, v in enumerate(bound.args)
            )
        keywords = {k: _snapshot(v, problems, k) for k, v in bound.kwargs.items()}
        _attach(result, Call(wrapper, arguments, keywords, "; ".join(problems)))
        return result

    RECORDED.add(wrapper)
    return wrapper


def record_chain(result: object, left: object, right: object) -> None:
    """Attach ``left >> right`` to ``result`` unless a library constructor is building it."""
    if not _DEPTH.get():
        _attach(result, Chain(left, right))
