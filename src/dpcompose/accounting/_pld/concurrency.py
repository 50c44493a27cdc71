"""The PLD engine's speed machinery beside the accounting, and the one switch that turns it off.

The speed devices: threads for the two orders of an asymmetric pair (:func:`in_parallel`, used by
``orders`` and ``subsample.cells``), the cache of tilted composites of a long composition under one
process-wide least-recently-used budget (:class:`Composites`, ``HELD``), the screening twin of a reverse
order (``orders.screened_orders``) and the lazy two-order builds of subsampled steps (``subsample.build``).

The switch: the environment variable ``DPCOMPOSE_PLD_SPEEDUPS=0`` (read once, when this module is
imported; also ``false``, ``off`` or ``no``), or :func:`speedups` for a block of code, turns them all off:
every reading runs in the caller's thread, in the order of the code (the first order, then the reverse
one); no composite is kept (each reading builds those it reads, rebuilding one it reads twice); both orders
are read in full; a subsampled step builds its orders when it is made. The readings are the same either
way, bit for bit (every reading is a function of the composition and the question alone); only time and
memory change. Left on: once-computed attributes (:class:`once`) and the lazily built sides of a PLD,
which decide what is built at all (building them all would build sides that no reading needs, such as the
untilted composite of a long composition, which may not fit in memory)."""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, Protocol, TypeVar, overload

import numpy as np

from dpcompose._switch import SpeedSwitch

_R = TypeVar("_R")
_T = TypeVar("_T")


SPEEDUPS_ENV = "DPCOMPOSE_PLD_SPEEDUPS"
"""The environment variable whose value ``0`` (or ``false``, ``off``, ``no``) turns the speed devices off."""

_SWITCH = SpeedSwitch(SPEEDUPS_ENV)


def speedups_on() -> bool:
    """Whether the speed devices (threads, the composite cache, screening, lazy subsampled builds) are on."""
    return _SWITCH.on()


@contextlib.contextmanager
def speedups(on: bool) -> Iterator[None]:
    """Turn the speed devices on or off (``on``) for the block, then restore the setting found: for tests
    and for profiling. The setting is process-wide (every thread's readings follow it): change it only
    while no other thread reads a PLD. Readings are the same either way."""
    with _SWITCH.turned(on):
        yield


def in_parallel(first: Callable[[], _T], second: Callable[[], _T]) -> tuple[_T, _T]:
    """``(first(), second())``, ``second`` in a thread of its own: the two orders of a subsampled
    composition are read independently, and most of their time is spent in numpy (FFTs, exp, cumulative
    sums), which releases the GIL, so on two cores the pair takes about the time of one. Both always run
    to the end (nothing is left computing when this returns or raises); an exception of ``first`` is
    raised before one of ``second``, as in reading them one after the other. With the speed devices off
    (:func:`speedups`), one after the other in this thread."""
    if not speedups_on():
        a = first()
        return a, second()
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

Key = tuple[float, float | None]
"""A tilted composite's key: its θ and the δ its window is cut for."""

_U = TypeVar("_U")
_L = TypeVar("_L")


class _Caches(Protocol):
    """What the process-wide budget reads of a recipe's composites (:class:`Composites`): its two caches
    of tilted composites by key, and how to drop one of them."""

    @property
    def cache(self) -> Mapping[Key, object]: ...

    @property
    def lower_cache(self) -> Mapping[Key, object]: ...

    def evict(self, lower: bool, key: Key) -> object: ...


class Composites(Generic[_U, _L]):
    """The tilted composites of one long composition (``_U``: of its upper sides; ``_L``: of its lumped
    pairs) by key, cached under the process-wide budget (``HELD``, ``CACHE_BYTES``: a composite of a long
    composition takes tens of megabytes), each built once when several threads ask for it at once, and
    rebuilt identically after eviction. With the speed devices off (:func:`speedups`) nothing is kept: every
    lookup builds its composite."""

    def __init__(self) -> None:
        self.cache: dict[Key, _U | None] = {}
        self.lower_cache: dict[Key, _L | None] = {}
        self.building: dict[tuple[bool, Key], threading.Event] = {}
        """The composites being built, each by one thread (the others wait for it)."""
        self.lock = threading.Lock()

    def evict(self, lower: bool, key: Key) -> object:
        """Drop the composite cached under ``key`` (from the lower side's cache if ``lower``) and return it
        (None if it is gone already)."""
        return (self.lower_cache if lower else self.cache).pop(key, None)

    def cached_bytes(self) -> int:
        """The bytes of the arrays the two caches hold."""
        return sum(nbytes(t) for t in list(self.cache.values())) + sum(
            nbytes(t) for t in list(self.lower_cache.values())
        )

    def upper(self, key: Key, build: Callable[[], _U | None]) -> _U | None:
        """The composite of the upper sides under ``key`` (:meth:`_lookup`)."""
        return self._lookup(self.cache, False, key, build)

    def lower(self, key: Key, build: Callable[[], _L | None]) -> _L | None:
        """The composite of the lumped pairs under ``key`` (:meth:`_lookup`)."""
        return self._lookup(self.lower_cache, True, key, build)

    def _lookup(
        self, cache: dict[Key, _T | None], lower: bool, key: Key, build: Callable[[], _T | None]
    ) -> _T | None:
        """``cache[key]`` (marked most recently used), or built, cached and counted against the process-wide
        budget (a None, which marks a θ where tilting does not apply, holds nothing). A composite another
        thread is building is waited for, not built twice (the value is the same). Speed devices off: built,
        not kept."""
        if not speedups_on():
            return build()
        while True:
            try:  # (one lookup: another thread may evict it meanwhile)
                hit = cache[key]
            except KeyError:
                pass
            else:
                HELD.used(self, lower, key)
                return hit
            with self.lock:
                if key in cache:
                    continue
                running = self.building.get((lower, key))
                if running is None:
                    mine = self.building[(lower, key)] = threading.Event()
            if running is not None:
                running.wait()  # (then read it; if that build failed or it was evicted, build it here)
                continue
            try:
                t = cache[key] = build()
            finally:
                with self.lock:
                    del self.building[(lower, key)]
                mine.set()
            if t is not None:
                HELD.kept(self, lower, key)
            return t


class _Held:
    """Every cached tilted composite of every live recipe, least recently used first, under one lock: the
    budget is process-wide (per composition, the 256 PLDs the measurements' cache keeps held 2.5 GB after
    four 10⁴-step accountings, and later maps ran out of memory). A recipe's :class:`Composites` are
    referenced weakly: a recipe that is gone takes its composites with it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.order: dict[tuple[int, bool, Key], weakref.ref[_Caches]] = {}
        self.pinned: dict[int, int] = {}  # id of a composite being read → how many readings hold it

    @contextlib.contextmanager
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

    def used(self, recipe: _Caches, lower: bool, key: Key) -> None:
        with self.lock:
            ref = self.order.pop((id(recipe), lower, key), None)
            if ref is not None and ref() is recipe:
                self.order[(id(recipe), lower, key)] = ref

    def kept(self, recipe: _Caches, lower: bool, key: Key) -> None:
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


def _cached(recipe: _Caches | None, lower: bool, key: Key) -> object:
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
    for v in list(vars(t).values()):  # (a copy: another thread may cache a property meanwhile)
        for a in v if isinstance(v, tuple) else (v,):
            if isinstance(a, np.ndarray):
                total += a.nbytes
    return total
