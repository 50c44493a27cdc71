"""The memory of PLD builds, compositions and readings: estimated from their sizes before the large arrays
are allocated, and refused by name where the estimate exceeds what is available.

One limit, :data:`MEMORY_LIMIT`, read together with the memory free for the process at each check
(:func:`memory_available`). The per-point figures are measured peaks (padded), so the estimates are
upper estimates of what numpy will allocate; where numpy still runs out of memory (memory taken meanwhile
by another thread or process), :func:`refuse_out_of_memory` raises the same error. Every refusal is a
:class:`~dpcompose.errors.ResourceLimit` (an :class:`~dpcompose.errors.InvalidParameter`, so a composition
policy moves on to its other candidates) naming the parameter to change.

This module changes no number: it only decides whether a computation runs.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

from dpcompose.errors import ResourceLimit

if sys.platform != "win32":
    import resource

__all__ = [
    "BUILD_BYTES_PER_POINT",
    "CHECK_FLOOR",
    "LOWER_WINDOW_BYTES_PER_POINT",
    "MEMORY_LIMIT",
    "SMALLER_BITS",
    "SPECTRA_BYTES",
    "SPECTRUM_BYTES",
    "WINDOW_BYTES_PER_POINT",
    "gib",
    "memory_available",
    "over_budget",
    "refuse_memory",
    "refuse_out_of_memory",
    "step_bits_fix",
    "window_bytes",
]

MEMORY_LIMIT = 8 << 30
"""The most memory, in bytes, that one PLD build, composition or reading may take at its peak. The peak is
estimated from the sizes before the large arrays are allocated (:data:`BUILD_BYTES_PER_POINT`,
:data:`WINDOW_BYTES_PER_POINT`) and compared with the least of this limit and the memory free for the process
(:func:`memory_available`); a larger one is refused with :class:`~dpcompose.errors.ResourceLimit`, naming
the ``step_bits`` that would fit."""

BUILD_BYTES_PER_POINT = 320
"""Bytes per lattice point that a constructor takes at its peak, with its first reading (measured: 209 for
Laplace and discrete Laplace, 213 for the Gaussian, 114 for randomized response, 113 for the discrete
Gaussian, 154 per point of both orders for the subsampled Gaussian; padded)."""

WINDOW_BYTES_PER_POINT = 80
"""Bytes per point of a composition's FFT window that composing the upper side and reading it take at their
peak, besides the spectra kept (:data:`SPECTRA_BYTES`) and the children's own sides (measured: 57 for 3000 ×
Laplace(10) at step_bits=18 tilted for ε(δ) on 2**24 points, 56 for 10⁵ × Gaussian(μ = 0.82) on 2**26, 65
untilted for δ(ε) on 2**25, 67 for 10⁴ DP-SGD steps; padded). The lower side (the lumped pair: two FFTs, P
and N) takes :data:`LOWER_WINDOW_BYTES_PER_POINT`."""

LOWER_WINDOW_BYTES_PER_POINT = 128
"""As :data:`WINDOW_BYTES_PER_POINT` for the lower side (measured: 92 tilted, 57 untilted; padded)."""

SPECTRUM_BYTES = 24
"""A kept spectrum's bytes per frequency: the complex128 values and their float64 error bounds."""

SPECTRA_BYTES = 64 << 20
"""The most bytes of spectra one composition keeps between its two passes
(:func:`~dpcompose.accounting._pld._fourier_power_body`); past it each spectrum is computed again (one more
real FFT per distinct PLD) instead of kept, so the memory does not grow with the number of distinct PLDs."""

CHECK_FLOOR = 64 << 20
"""Estimates below this (and within :data:`MEMORY_LIMIT`) pass without reading the system's figures."""

SMALLER_BITS = "use a smaller step_bits (one bit fewer halves the lattice points and the memory)"
"""What to change where a build ran out of memory."""


def _free_memory() -> int | None:
    """The bytes this process can still allocate, where the system says (Linux: MemAvailable, and the
    address space left under RLIMIT_AS), else None."""
    free = _proc_kib("/proc/meminfo", "MemAvailable:")
    if sys.platform != "win32":
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY:
            left = soft - (_proc_kib("/proc/self/status", "VmSize:") or 0)
            free = left if free is None else min(free, left)
    return None if free is None else max(0, free)


def _proc_kib(path: str, key: str) -> int | None:
    """The bytes of the ``key`` line (in kB) of a /proc file, or None where there is none."""
    try:
        with open(path, encoding="ascii") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def memory_available() -> int:
    """The bytes one PLD computation may take now: :data:`MEMORY_LIMIT`, or the memory free for the process
    where that is less."""
    free = _free_memory()
    return MEMORY_LIMIT if free is None else min(MEMORY_LIMIT, free)


def over_budget(need: float) -> int | None:
    """The bytes available (:func:`memory_available`) where an estimate of ``need`` bytes exceeds them,
    else None."""
    if need <= min(CHECK_FLOOR, MEMORY_LIMIT):
        return None
    allowed = memory_available()
    return allowed if need > allowed else None


def gib(n: float) -> str:
    """Bytes as GiB for a message, with three significant digits (0.0391 GiB, not 0.0).

    Examples:
        >>> gib(0.04 * 2**30), gib(5 * 2**30)
        ('0.04 GiB', '5 GiB')
    """
    return f"{n / 2**30:.3g} GiB"


def step_bits_fix(step_bits: int, need: float, allowed: float) -> str:
    """The hint of a refusal whose memory halves with each bit of step_bits fewer: the step_bits at which
    ``need`` bytes at ``step_bits`` fit in ``allowed``."""
    k = 0
    while need > allowed * 2.0**k and k < 64:
        k += 1
    fit = step_bits - k
    return f"step_bits at most {fit}" if fit >= 1 else "no step_bits in [1, 40] fits (compose fewer steps)"


def refuse_memory(need: float, allowed: float, what: str, fix: str) -> None:
    """Refuse, before it is allocated, a computation estimated to take ``need`` bytes at its peak where only
    ``allowed`` are available.

    Raises:
        ResourceLimit: always; the message says ``what`` needs it, how much is available, and ``fix``.
    """
    raise ResourceLimit(
        f"{what} needs about {gib(need)} of memory at its peak, more than the {gib(allowed)} available "
        f"to it (the least of MEMORY_LIMIT, {gib(MEMORY_LIMIT)}, and the memory free): {fix}"
    )


@contextlib.contextmanager
def refuse_out_of_memory(what: str, fix: str) -> Iterator[None]:
    """Turn numpy's MemoryError inside the block into :class:`~dpcompose.errors.ResourceLimit` naming ``fix``
    (a last resort, after the estimate let the computation run: memory taken meanwhile)."""
    try:
        yield
    except MemoryError as e:
        left = gib(memory_available())
        raise ResourceLimit(f"{what} ran out of memory ({left} available now): {fix}") from e


def window_bytes(size: int, distinct: int = 1, lower: bool = False) -> int:
    """The estimated peak bytes of composing one side (the ``lower`` one, or the upper) of ``distinct``
    vectors on an FFT window of ``size`` points, with its reading: :data:`WINDOW_BYTES_PER_POINT` or
    :data:`LOWER_WINDOW_BYTES_PER_POINT` per point, and the spectra kept (:data:`SPECTRA_BYTES`)."""
    spectra = distinct * (size // 2 + 1) * SPECTRUM_BYTES
    per_point = LOWER_WINDOW_BYTES_PER_POINT if lower else WINDOW_BYTES_PER_POINT
    return size * per_point + (spectra if spectra <= SPECTRA_BYTES else 0)
