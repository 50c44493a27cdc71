"""The SSCP's speed devices, folded blocks and two threads, the switch that turns both off and the one that
turns the threads on.

The devices (used by :func:`~dpcompose.transformations.make_sscp`):

* Two threads (off unless turned on, below): for a dataset of at least :data:`PARALLEL_BLOCKS` blocks,
  the caller and a second thread take blocks one at a time from a shared :class:`Blocks` and each rounds,
  tests and multiplies the blocks it takes into sums of its own (:func:`in_two_threads`); numpy releases
  the GIL in these loops and in BLAS, so with two free cores the call can take about half the time, and a
  thread kept off the CPU by other work simply takes fewer blocks. Each thread's sums are exact integer
  matrices (in Python integers), and their sum is the sum of every block's, so the release is the same
  bits as one thread's, however the blocks were shared. A thread whose block fails the input test runs
  the domain's full check, which raises; the blocks not yet taken are then withdrawn
  (:meth:`Blocks.stop`), so the other thread stops after its current block, and both threads have ended
  before the error propagates (nothing is released, nothing is left computing).
* Folded blocks (:func:`block_gram`): for a few narrow widths (:data:`FOLDS`), where OpenBLAS's ``syrk`` is
  slow, a block ``Q`` of m rows (a multiple of g) is read as the ``(m/g) × (g·d)`` matrix ``R`` of g rows
  side by side and ``RᵀR`` is formed; its g diagonal ``d × d`` blocks are the Gram matrices of the rows
  ``i ≡ j (mod g)``, and they add up to ``QᵀQ``. Every partial sum is an integer of magnitude at most
  ``(m/g)·2**40 <= 2**53/g`` and their sum at most ``2**53``: exact, as the unfolded product is.

The switches: the environment variable ``DPCOMPOSE_SSCP_SPEEDUPS=0`` (read once, when this module is
imported; also ``false``, ``off`` or ``no``), or :func:`sscp_speedups` for a block of code, turns both
devices off: every block runs in the caller's thread, in order, as one ``QᵀQ``. The threads run only if
``DPCOMPOSE_SSCP_THREADS=1`` is set as well (or ``on``, ``true``...; or :func:`sscp_threads` for a
block): on a shared 2-core machine the second thread found no free core (two threads of a plain numpy
loop ran no faster than one there) and cost 4-8 % (benchmarks/bench_rowmaps.py prints the call with the
threads beside it). The releases and the refusals are the same in every setting, bit for bit.

Examples:
    >>> with sscp_threads(True):
    ...     two_threads(31 * 8192, 8192), two_threads(31 * 8192 + 1, 8192)
    (False, True)
    >>> with sscp_threads(True), sscp_speedups(False):
    ...     two_threads(10**6, 8192)
    False
    >>> blocks = Blocks(20, 8)
    >>> blocks.take(), blocks.take(), blocks.take(), blocks.take()
    (0, 8, 16, None)
    >>> q = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0], [1.0, 0.0, -1.0]])
    >>> block_gram(q, 4).tolist() == (q.T @ q).tolist() == block_gram(q, 1).tolist()
    True
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from dpcompose._switch import SpeedSwitch

__all__ = [
    "FOLDS",
    "PARALLEL_BLOCKS",
    "SPEEDUPS_ENV",
    "THREADS_ENV",
    "Blocks",
    "block_gram",
    "fold",
    "in_two_threads",
    "sscp_speedups",
    "sscp_speedups_on",
    "sscp_threads",
    "sscp_threads_on",
    "two_threads",
]

_T = TypeVar("_T")

SPEEDUPS_ENV = "DPCOMPOSE_SSCP_SPEEDUPS"
"""The environment variable whose value ``0`` (or ``false``, ``off``, ``no``) turns both devices off."""

THREADS_ENV = "DPCOMPOSE_SSCP_THREADS"
"""The environment variable whose value ``1`` (or any other than ``0``, ``false``, ``off``, ``no``) turns
the two threads on (with :data:`SPEEDUPS_ENV` not off)."""

_SWITCH = SpeedSwitch(SPEEDUPS_ENV)
_THREADS = SpeedSwitch(THREADS_ENV, default=False)

PARALLEL_BLOCKS = 32
"""The fewest blocks (2**18 rows) shared out to two threads: when the second thread finds no free core it
cost 4-8 % at 10**6 × 10 on a loaded 2-core machine, and 11 % at 12 blocks (10**5 rows)."""


FOLDS = {2: 2, 3: 4, 5: 2, 6: 2, 7: 2}
"""Rows folded side by side (g) by width (d): OpenBLAS 0.3's ``syrk`` on 8192 rows takes 15 µs at width
12 and 40 µs at width 3 (22 µs at 6 vs 43 µs unfolded; 48 vs 79 µs at 7); other widths are not folded."""


def fold(d: int) -> int:
    """The rows folded side by side in a block product of width d (1: none; 1 with the switch off)."""
    return FOLDS.get(d, 1) if _SWITCH.on() else 1


def block_gram(q: npt.NDArray[np.float64], g: int) -> npt.NDArray[np.int64]:
    """``qᵀq`` of a block of grid rows (integers of magnitude at most 2**20, at most 2**13 rows), in int64,
    exact: folded g rows side by side when g > 1 divides the row count and ``q`` is C-contiguous."""
    m, d = q.shape
    if g == 1 or m % g or not q.flags.c_contiguous:
        whole: npt.NDArray[np.float64] = q.T @ q
        return whole.astype(np.int64)
    r = q.reshape(m // g, g * d)
    folded: npt.NDArray[np.float64] = (r.T @ r).reshape(g, d, g, d)
    diagonal = np.arange(g)
    gram: npt.NDArray[np.int64] = folded[diagonal, :, diagonal, :].sum(axis=0).astype(np.int64)
    return gram  # exact: g sums of magnitude <= 2**53/g


def sscp_speedups_on() -> bool:
    """Whether the SSCP's speed devices may run (the threads also need :func:`sscp_threads_on`)."""
    return _SWITCH.on()


@contextlib.contextmanager
def sscp_speedups(on: bool) -> Iterator[None]:
    """Turn both devices on or off (``on``) for the block, then restore the setting found: for tests and
    for profiling. Process-wide: change it only while no other thread runs an SSCP. The releases are the
    same either way."""
    with _SWITCH.turned(on):
        yield


def sscp_threads_on() -> bool:
    """Whether the two threads are turned on (they run only if :func:`sscp_speedups_on` too)."""
    return _THREADS.on()


@contextlib.contextmanager
def sscp_threads(on: bool) -> Iterator[None]:
    """Turn the two threads on or off (``on``) for the block, then restore the setting found (process-wide,
    as :func:`sscp_speedups`). The releases are the same either way."""
    with _THREADS.turned(on):
        yield


def two_threads(n: int, block_rows: int) -> bool:
    """Whether n rows are shared out to two threads: at least :data:`PARALLEL_BLOCKS` blocks, both switches
    on."""
    return -(-n // block_rows) >= PARALLEL_BLOCKS and _SWITCH.on() and _THREADS.on()


class Blocks:
    """The first rows of the blocks of n rows, handed out one at a time to whichever thread asks (under a
    lock), until all are taken or :meth:`stop` withdraws the rest."""

    def __init__(self, n: int, block_rows: int) -> None:
        self._starts = iter(range(0, n, block_rows))
        self._lock = threading.Lock()

    def take(self) -> int | None:
        """The first row of the next block, or None when none is left."""
        with self._lock:
            return next(self._starts, None)

    def stop(self) -> None:
        """Withdraw the blocks not yet taken."""
        with self._lock:
            self._starts = iter(())


def in_two_threads(first: Callable[[], _T], second: Callable[[], _T], blocks: Blocks) -> tuple[_T, _T]:
    """``(first(), second())``, ``second`` in a thread of its own, both taking from ``blocks``. Both have
    ended when this returns or raises: an exception of either stops ``blocks`` (the other then ends after
    its current block) and the second thread is joined before anything is raised; one of ``first`` is
    raised before one of ``second``, as in running them one after the other."""
    out: list[_T] = []
    err: list[BaseException] = []

    def run() -> None:
        try:
            out.append(second())
        except BaseException as e:  # (re-raised in the caller's thread below)
            blocks.stop()
            err.append(e)

    worker = threading.Thread(target=run, name="dpcompose-sscp-part", daemon=True)
    worker.start()
    try:
        a = first()
    except BaseException:
        blocks.stop()
        raise
    finally:
        worker.join()
    if err:
        raise err[0]
    return a, out[0]
