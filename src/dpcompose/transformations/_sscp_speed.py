"""The SSCP's speed devices, BLAS's general product for the blocks and two threads, the switch that turns
both off and the one that turns the threads on.

The devices (used by :func:`~dpcompose.transformations.make_sscp`):

* The general product (:func:`block_gram`): numpy computes ``qᵀq`` with BLAS's symmetric rank-k update
  (``syrk``), which OpenBLAS 0.3 runs slowly for narrow blocks; for the widths of :func:`uses_gemm` the
  block ``q`` (C-contiguous, so ``qᵀ`` is a column-major matrix and nothing is copied) is multiplied by
  SciPy's ``dgemm`` as ``qᵀ·(qᵀ)ᵀ`` instead: on 8192 rows 47 µs against 79 µs at width 10, 19 against
  50 µs at width 3 (the row-folding device this replaced took 29 µs there); from width 12 on numpy's
  product stays (``dgemm`` computes the whole matrix, ``syrk`` half of it). Both compute each entry as a
  sum of the products ``q_ri·q_rj`` (the classical product, as every mainstream BLAS does: no
  Strassen-type recombination), every partial sum an integer of magnitude at most ``2**53``, so both are
  exact in any summation order, with or without fused multiply-adds, and give the same integers.
* Two threads (off unless turned on, below): for a dataset of at least :data:`PARALLEL_BLOCKS` blocks of a
  width in :data:`THREAD_WIDTHS`, the caller and a second thread take blocks one at a time from a shared
  :class:`Blocks` and each rounds, tests and multiplies the blocks it takes into sums of its own
  (:func:`in_two_threads`). numpy releases the GIL in its loops and in ``np.dot``, but SciPy's ``dgemm`` holds
  it, and so did numpy's ``@`` at these widths (two threads of either ran no faster than one): so the second
  thread uses ``np.dot`` and the caller its usual product (:func:`block_product`), and a second thread kept
  off the CPU by other work simply takes fewer blocks. Each thread's sums are exact integer matrices (in
  Python integers), and their sum is the sum of every block's, so the release is the same bits as one
  thread's, however the blocks were shared. A thread whose block fails the input test runs the domain's full
  check, which raises; the blocks not yet taken are then withdrawn (:meth:`Blocks.stop`), so the other thread
  stops after its current block, and both threads have ended before the error propagates (nothing is released,
  nothing is left computing).

The switches: the environment variable ``DPCOMPOSE_SSCP_SPEEDUPS=0`` (read once, when this module is
imported; also ``false``, ``off`` or ``no``), or :func:`sscp_speedups` for a block of code, turns both
devices off: every block runs in the caller's thread, in order, multiplied as numpy's ``qᵀq``. The
threads run only if ``DPCOMPOSE_SSCP_THREADS=1`` is set as well (or ``on``, ``true``...; or
:func:`sscp_threads` for a block): on this project's 2-core virtual machines their gain
came and went from one run to the next (the call took 0.75-0.97 of one thread's time in some runs,
1.15-1.3 in others, the machine otherwise idle; 1.1-1.4 with the other core kept busy:
benchmarks/bench_rowmaps.py, with ``--busy``). The releases and the refusals are the same in every
setting, bit for bit.

Examples:
    >>> with sscp_threads(True):
    ...     [two_threads(n, d, 8192) for n, d in [(31 * 8192, 10), (31 * 8192 + 1, 10), (10**6, 3)]]
    [False, True, False]
    >>> with sscp_threads(True), sscp_speedups(False):
    ...     two_threads(10**6, 10, 8192)
    False
    >>> blocks = Blocks(20, 8)
    >>> blocks.take(), blocks.take(), blocks.take(), blocks.take()
    (0, 8, 16, None)
    >>> q = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0], [1.0, 0.0, -1.0]])
    >>> block_product(3)(q).tolist() == (q.T @ q).tolist() == block_gram(q, None).tolist()
    True
    >>> uses_gemm(10), uses_gemm(16), uses_gemm(1), uses_gemm(64)
    (True, False, False, False)
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from dpcompose._scipy import blas_dgemm
from dpcompose._switch import SpeedSwitch

__all__ = [
    "PARALLEL_BLOCKS",
    "SPEEDUPS_ENV",
    "THREADS_ENV",
    "THREAD_WIDTHS",
    "Blocks",
    "Floats",
    "Product",
    "block_gram",
    "block_product",
    "in_two_threads",
    "sscp_speedups",
    "sscp_speedups_on",
    "sscp_threads",
    "sscp_threads_on",
    "two_threads",
    "uses_gemm",
]

_T = TypeVar("_T")
Floats = npt.NDArray[np.float64]
Product = Callable[[Floats], npt.NDArray[np.int64]]
"""A block's exact ``qᵀq`` in int64 (:func:`block_product`)."""

SPEEDUPS_ENV = "DPCOMPOSE_SSCP_SPEEDUPS"
"""The environment variable whose value ``0`` (or ``false``, ``off``, ``no``) turns both devices off."""

THREADS_ENV = "DPCOMPOSE_SSCP_THREADS"
"""The environment variable whose value ``1`` (or any other than ``0``, ``false``, ``off``, ``no``) turns
the two threads on (with :data:`SPEEDUPS_ENV` not off)."""

_SWITCH = SpeedSwitch(SPEEDUPS_ENV)
_THREADS = SpeedSwitch(THREADS_ENV, default=False)

PARALLEL_BLOCKS = 32
"""The fewest blocks (2**18 rows) shared out to two threads: at 12 blocks (10**5 rows) the second thread
gained nothing."""

THREAD_WIDTHS = range(8, 21)
"""The widths whose blocks may be shared out to two threads. In the runs where threads gained at all (10**6
rows, idle 2-core machine; the call with the threads over the call without): 0.8-0.84 at widths 8 and 10,
0.56 at 12, 0.53 at 16; at widths up to 7, the second thread's ``np.dot`` (``syrk``) is so much slower
than ``dgemm`` that two threads took 1.0-1.4 of one, and from about width 33 OpenBLAS runs one product
in two threads already."""


def uses_gemm(d: int) -> bool:
    """Whether the block products of width d run as SciPy's ``dgemm`` (:func:`block_gram`): widths 2 to 11,
    where it took 0.25-0.63 of numpy's ``qᵀq`` on 8192 rows (OpenBLAS 0.3); not width 1 (numpy's 2 µs
    against 10), nor 12 to 20 (within 10 % either way), nor wider, where ``syrk`` computes half the product
    (and OpenBLAS runs it in two threads from about width 33): ``dgemm`` took 0.5-1.3 of its time from 21 to
    64 depending on the run, 1.2-1.8 from 256; never with the switch off."""
    return _SWITCH.on() and 2 <= d <= 11


def block_product(d: int, threads: bool = False) -> Product:
    """:func:`block_gram` for blocks of width d, with its choice made once: for the second of two
    ``threads``, numpy's ``np.dot`` (it releases the GIL); else SciPy's ``dgemm`` where :func:`uses_gemm`
    (looked up once), or numpy's ``np.dot``."""
    if threads or not uses_gemm(d):
        return lambda q: block_gram(q, None)
    dgemm = blas_dgemm()
    return lambda q: block_gram(q, dgemm)


def block_gram(q: Floats, dgemm: Callable[..., Any] | None) -> npt.NDArray[np.int64]:
    """``qᵀq`` of a block of grid rows (integers of magnitude at most 2**20, at most 2**13 rows), in int64,
    exact: by SciPy's ``dgemm`` (given) on ``qᵀ`` (no copy when ``q`` is C-contiguous), else (None) by
    numpy's ``np.dot`` (BLAS's ``syrk``)."""
    if dgemm is not None:
        t = q.T
        general: Floats = dgemm(1.0, t, t, trans_b=1)
        return general.astype(np.int64)  # exact: partial sums of magnitude <= 2**53
    whole: Floats = np.dot(q.T, q)
    return whole.astype(np.int64)


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


def two_threads(n: int, d: int, block_rows: int) -> bool:
    """Whether n rows of width d are shared out to two threads: at least :data:`PARALLEL_BLOCKS` blocks, d
    in :data:`THREAD_WIDTHS`, both switches on."""
    return -(-n // block_rows) >= PARALLEL_BLOCKS and d in THREAD_WIDTHS and _SWITCH.on() and _THREADS.on()


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
