"""The PLD engine's speed machinery that touches threads: a once-computed attribute, threads for two
readings, and the process-wide least-recently-used budget of cached tilted composites."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Generic, Protocol, TypeVar, overload

import numpy as np

_R = TypeVar("_R")
_T = TypeVar("_T")


def in_parallel(first: Callable[[], _T], second: Callable[[], _T]) -> tuple[_T, _T]:
    """``(first(), second())``, ``second`` in a thread of its own: the two orders of a subsampled
    composition are read independently, and most of their time is spent in numpy (FFTs, exp, cumulative
    sums), which releases the GIL, so on two cores the pair takes about the time of one. Both always run
    to the end (nothing is left computing when this returns or raises); an exception of ``first`` is
    raised before one of ``second``, as in reading them one after the other."""
    out: list[_T] = []
    err: list[BaseException] = []

    def run() -> None:
        try:
            out.append(second())
        except BaseException as e:  # (re-raised in the caller's thread below)
            err.append(e)

    worker = threading.Thread(target=run, name="dpcompose-pld-order", daemon=True)
    worker.start()
    try:
        a = first()
    finally:
        worker.join()
    if err:
        raise err[0]
    return a, out[0]


class once(Generic[_R]):
    """``functools.cached_property`` without its lock: computed on first access and kept in the instance's
    ``__dict__``. On Python 3.11 cached_property holds one lock per attribute for *all* instances, so the two
    orders of a subsampled composition, read in two threads, waited for each other on every cached
    attribute of their own recipes and tilted composites (and the one reading the reverse order's children
    held up the other's reading for their whole build). The values here are pure functions of the instance
    (the builds they trigger lock on their own): two threads may both compute one, and the first stored is
    kept."""

    def __init__(self, func: Callable[[Any], _R]) -> None:
        self.func = func
        self.name = func.__name__
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> once[_R]: ...

    @overload
    def __get__(self, instance: object, owner: type | None = None) -> _R: ...

    def __get__(self, instance: object | None, owner: type | None = None) -> _R | once[_R]:
        if instance is None:
            return self
        cache = instance.__dict__
        try:
            return cache[self.name]  # type: ignore[no-any-return]
        except KeyError:
            pass
        value = self.func(instance)
        return cache.setdefault(self.name, value)  # type: ignore[no-any-return]


CACHE_BYTES = 256 << 20  # tilted composites kept in this process (the newest one, and those being read, stay)


class _Caches(Protocol):
    """What the process-wide budget reads of a recipe (:class:`Recipe`, in a module above): its two caches
    of tilted composites by key, and how to drop one of them."""

    @property
    def cache(self) -> Mapping[tuple[float, float | None], object]: ...

    @property
    def lower_cache(self) -> Mapping[tuple[float, float | None], object]: ...

    def evict(self, lower: bool, key: tuple[float, float | None]) -> object: ...


class _Held:
    """Every cached tilted composite of every live recipe, least recently used first, under one lock: the
    budget is process-wide (found by review: per composition, the 256 PLDs the measurements' cache keeps
    held 2.5 GB after four 10⁴-step accountings, and later maps ran out of memory). Recipes are referenced
    weakly: a recipe that is gone takes its composites with it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.order: dict[tuple[int, bool, tuple[float, float | None]], weakref.ref[_Caches]] = {}
        self.pinned: dict[int, int] = {}  # id of a composite being read → how many readings hold it

    @contextmanager
    def in_use(self, t: object) -> Iterator[None]:
        """While this runs, the composite ``t`` (None: nothing) is not evicted: a reading holds it, so
        dropping it from the cache would free nothing and only make the next lookup build it again."""
        if t is None:
            yield
            return
        with self.lock:
            self.pinned[id(t)] = self.pinned.get(id(t), 0) + 1
        try:
            yield
        finally:
            with self.lock:
                left = self.pinned.pop(id(t)) - 1
                if left:
                    self.pinned[id(t)] = left

    def used(self, recipe: _Caches, lower: bool, key: tuple[float, float | None]) -> None:
        with self.lock:
            ref = self.order.pop((id(recipe), lower, key), None)
            if ref is not None and ref() is recipe:
                self.order[(id(recipe), lower, key)] = ref

    def kept(self, recipe: _Caches, lower: bool, key: tuple[float, float | None]) -> None:
        """Count a composite just cached; then evict the least recently used ones (of any recipe) while all
        of them hold more than ``CACHE_BYTES`` (never the one just cached, nor one a reading holds:
        :meth:`in_use`)."""
        with self.lock:
            mine = (id(recipe), lower, key)
            self.order.pop(mine, None)  # (the id of a recipe gone may be reused)
            self.order[mine] = weakref.ref(recipe)
            held = 0
            candidates = []
            for entry, ref in list(self.order.items()):  # counted afresh: composites grow when read
                t = _cached(ref(), entry[1], entry[2])
                if t is None:
                    del self.order[entry]  # (its recipe is gone)
                else:
                    held += nbytes(t)
                    if entry != mine and id(t) not in self.pinned:
                        candidates.append((entry, ref))
            for entry, ref in candidates:  # (least recently used first)
                if held <= CACHE_BYTES:
                    break
                del self.order[entry]
                r = ref()
                if r is not None:
                    held -= nbytes(r.evict(entry[1], entry[2]))

    def total(self) -> int:
        """The bytes of the arrays every cached composite holds."""
        with self.lock:
            return sum(nbytes(_cached(ref(), entry[1], entry[2])) for entry, ref in self.order.items())


def _cached(recipe: _Caches | None, lower: bool, key: tuple[float, float | None]) -> object:
    """The composite a recipe caches under ``key`` (None if the recipe or the entry is gone)."""
    if recipe is None:
        return None
    return (recipe.lower_cache if lower else recipe.cache).get(key)


HELD = _Held()


def nbytes(t: object) -> int:
    """The bytes of the arrays a cached composite holds, with those its cached properties built since (0 for
    None)."""
    if t is None:
        return 0
    total = 0
    for v in list(vars(t).values()):  # (a copy: another thread may cache a property meanwhile: review)
        for a in v if isinstance(v, tuple) else (v,):
            if isinstance(a, np.ndarray):
                total += a.nbytes
    return total
