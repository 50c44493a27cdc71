"""The SSCP's speed devices, two threads and folded blocks, and the one switch that turns them off.

The devices (used by :func:`~dpcompose.transformations.make_sscp`):

* Two threads: a dataset of at least
:data:`PARALLEL_BLOCKS` blocks is cut in two at a block boundary and each part's blocks are rounded onto
the grid, tested and multiplied in a thread of its own (:func:`in_two_threads`); numpy releases the GIL in
these loops and in BLAS, so on two free cores the call takes about half the time. Each part's sum is an
exact integer matrix (in Python integers), and their sum is the sum of every block's, so the release is the
same bits as one thread's, in any order. A part whose block fails the input test runs the domain's full
check, which raises; the other part then stops at its next block and both threads have ended before the
error propagates (nothing is released, nothing is left computing).
* Folded blocks (:func:`block_gram`): for a few narrow widths (:data:`FOLDS`), where OpenBLAS's ``syrk`` is
  slow, a block ``Q`` of m rows (a multiple of g) is read as the ``(m/g) × (g·d)`` matrix ``R`` of g rows
  side by side and ``RᵀR`` is formed; its g diagonal ``d × d`` blocks are the Gram matrices of the rows
  ``i ≡ j (mod g)``, and they add up to ``QᵀQ``. Every partial sum is an integer of magnitude at most
  ``(m/g)·2**40 <= 2**53/g`` and their sum at most ``2**53``: exact, as the unfolded product is.

The switch: the environment variable ``DPCOMPOSE_SSCP_SPEEDUPS=0`` (read once, when this module is
imported; also ``false``, ``off`` or ``no``), or :func:`sscp_speedups` for a block of code, turns it off:
every block runs in the caller's thread, in order, as one ``QᵀQ``. The releases and the refusals are the
same either way, bit for bit.

Examples:
    >>> split_rows(10, 4), split_rows(4 * 8192, 8192), split_rows(5 * 8192 + 1, 8192)
    (None, 16384, 24576)
    >>> with sscp_speedups(False):
    ...     split_rows(10**6, 8192) is None
    True
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
    "block_gram",
    "fold",
    "in_two_threads",
    "split_rows",
    "sscp_speedups",
    "sscp_speedups_on",
]

_T = TypeVar("_T")

SPEEDUPS_ENV = "DPCOMPOSE_SSCP_SPEEDUPS"
"""The environment variable whose value ``0`` (or ``false``, ``off``, ``no``) turns the two threads off."""

_SWITCH = SpeedSwitch(SPEEDUPS_ENV)

PARALLEL_BLOCKS = 4
"""The fewest blocks a dataset is cut in two for (below it a thread's start is not repaid)."""


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
    """Whether the SSCP's blocks run in two threads."""
    return _SWITCH.on()


@contextlib.contextmanager
def sscp_speedups(on: bool) -> Iterator[None]:
    """Turn the two threads on or off (``on``) for the block, then restore the setting found: for tests and
    for profiling. Process-wide: change it only while no other thread runs an SSCP. The releases are the
    same either way."""
    with _SWITCH.turned(on):
        yield


def split_rows(n: int, block_rows: int) -> int | None:
    """Where n rows are cut in two (a multiple of ``block_rows``, the first part holding the extra block
    of an odd count), or None for one thread: fewer than :data:`PARALLEL_BLOCKS` blocks, or the switch
    off."""
    blocks = -(-n // block_rows)
    if blocks < PARALLEL_BLOCKS or not _SWITCH.on():
        return None
    return -(-blocks // 2) * block_rows


def in_two_threads(first: Callable[[], _T], second: Callable[[], _T], stop: threading.Event) -> tuple[_T, _T]:
    """``(first(), second())``, ``second`` in a thread of its own. Both have ended when this returns or
    raises: an exception of ``first`` sets ``stop`` (which both poll between blocks) before the worker is
    joined, and one of ``first`` is raised before one of ``second``, as in running them one after the
    other."""
    out: list[_T] = []
    err: list[BaseException] = []

    def run() -> None:
        try:
            out.append(second())
        except BaseException as e:  # (re-raised in the caller's thread below)
            stop.set()
            err.append(e)

    worker = threading.Thread(target=run, name="dpcompose-sscp-part", daemon=True)
    worker.start()
    try:
        a = first()
    except BaseException:
        stop.set()
        raise
    finally:
        worker.join()
    if err:
        raise err[0]
    return a, out[0]
