"""Random sources for the exact samplers: where every random bit comes from (internal module).

A :class:`RandomSource` hands out uniformly random bits and bytes, and nothing else. :class:`SecureSource`
(the operating system's generator) is the default; :class:`SeededSource` and :class:`GeneratorSource` are
reproducible and **not private** (tests, experiments, a mechanism's ``rng=``); :class:`RecordingSource`
and :class:`BytesSource` record and replay a run (tests). :func:`uniform_words` reads arrays of uniform
integers from a source for the array samplers. :mod:`dpcompose.measurements._sampling` re-exports the
sources with the samplers.
"""

from __future__ import annotations

import os
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from dpcompose._validation import check_nonnegative_int
from dpcompose.errors import InvalidParameter

__all__ = [
    "BytesSource",
    "GeneratorSource",
    "RandomSource",
    "RecordingSource",
    "SecureSource",
    "SeededSource",
    "caller_or_secure_source",
    "caller_source",
]

# The array types of the samplers (_sampling, _inversion, _huge_scales).
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
AnyIntArray = npt.NDArray[Any]  # int64 or object (exact Python ints)


@runtime_checkable
class RandomSource(Protocol):
    """Where the samplers get their randomness: uniformly random bits, and nothing else.

    ``randbits(k)`` returns a uniform integer in ``[0, 2**k)``; ``random_bytes(n)`` returns ``n`` uniform
    bytes (the array samplers read these as little-endian unsigned integers).
    """

    def randbits(self, k: int) -> int:
        """A uniform integer in ``[0, 2**k)``."""
        ...

    def random_bytes(self, n: int) -> bytes:
        """``n`` uniformly random bytes."""
        ...


def _bits_from_bytes(source: RandomSource, k: int) -> int:
    if k < 0:
        raise InvalidParameter(f"k={k!r} must be non-negative")
    nbytes = (k + 7) // 8
    if nbytes == 0:
        return 0
    return int.from_bytes(source.random_bytes(nbytes), "little") >> (8 * nbytes - k)


class SecureSource:
    """The operating system's cryptographically secure generator (``os.urandom``); the default.

    Examples:
        >>> SecureSource().randbits(3) in range(8)
        True
        >>> len(SecureSource().random_bytes(16))
        16
    """

    def randbits(self, k: int) -> int:
        """A uniform integer in ``[0, 2**k)`` from ``os.urandom``."""
        return _bits_from_bytes(self, k)

    def random_bytes(self, n: int) -> bytes:
        """``n`` bytes from ``os.urandom``."""
        return os.urandom(n)

    def __repr__(self) -> str:
        return "SecureSource()"


class SeededSource:
    """A deterministic stream of bits from a seed (numpy's PCG64). **Not private.**

    For reproducible tests and experiments only: anyone who knows or guesses the seed can recompute the
    noise and subtract it. Two sources built with the same seed yield the same stream, so a sampler run on
    them gives the same output.

    Args:
        seed: a non-negative integer.

    Examples:
        >>> SeededSource(3).random_bytes(4) == SeededSource(3).random_bytes(4)
        True
    """

    def __init__(self, seed: int) -> None:
        self.seed = check_nonnegative_int(seed, "seed")
        self._bitgen = np.random.PCG64(seed)

    def randbits(self, k: int) -> int:
        """A uniform integer in ``[0, 2**k)`` (taken from the same stream as :meth:`random_bytes`)."""
        return _bits_from_bytes(self, k)

    def random_bytes(self, n: int) -> bytes:
        """The next ``n`` bytes of the seeded stream."""
        words = self._bitgen.random_raw((n + 7) // 8)
        return np.asarray(words, dtype="<u8").tobytes()[:n]

    def __repr__(self) -> str:
        return f"SeededSource({self.seed})"


class GeneratorSource:
    """Bits from a caller's :class:`numpy.random.Generator` (its bit generator's raw words). **Not private.**

    Lets a mechanism's ``rng=`` argument drive the exact samplers reproducibly; the noise is exact in
    distribution but anyone who knows the generator's state can recompute it.

    Examples:
        >>> a = GeneratorSource(np.random.default_rng(1)).random_bytes(8)
        >>> a == GeneratorSource(np.random.default_rng(1)).random_bytes(8)
        True
    """

    def __init__(self, rng: np.random.Generator) -> None:
        self._bitgen = rng.bit_generator

    def randbits(self, k: int) -> int:
        """A uniform integer in ``[0, 2**k)``."""
        return _bits_from_bytes(self, k)

    def random_bytes(self, n: int) -> bytes:
        """The next ``n`` bytes of the generator's raw 64-bit words."""
        words = self._bitgen.random_raw((n + 7) // 8)
        return np.asarray(words, dtype="<u8").tobytes()[:n]


class RecordingSource:
    """Wraps a source and records every call and every byte it hands out (for tests).

    ``calls`` lists ``("randbits", k, value)`` and ``("random_bytes", n, data)`` in order; ``stream`` is
    the concatenation of all bytes handed out (``randbits`` is served from ``random_bytes`` of the inner
    source, so a :class:`BytesSource` over ``stream`` replays the run exactly).

    Examples:
        >>> from fractions import Fraction
        >>> from dpcompose.measurements._sampling import sample_discrete_laplace
        >>> rec = RecordingSource(SeededSource(0))
        >>> a = sample_discrete_laplace(Fraction(2), rec)
        >>> a == sample_discrete_laplace(Fraction(2), BytesSource(rec.stream))
        True
    """

    def __init__(self, inner: RandomSource) -> None:
        self.inner = inner
        self.calls: list[tuple[str, int, int | bytes]] = []
        self._chunks: list[bytes] = []

    def randbits(self, k: int) -> int:
        """Served from ``random_bytes`` of the inner source, and recorded."""
        if isinstance(k, bool) or not isinstance(k, int):
            raise TypeError(f"randbits needs an int, got {k!r}")
        value = _bits_from_bytes(self._raw(), k)
        self.calls.append(("randbits", k, value))
        return value

    def random_bytes(self, n: int) -> bytes:
        """The inner source's bytes, recorded."""
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"random_bytes needs an int, got {n!r}")
        data = self.inner.random_bytes(n)
        self._chunks.append(data)
        self.calls.append(("random_bytes", n, data))
        return data

    def _raw(self) -> _Recorder:
        return _Recorder(self)

    @property
    def stream(self) -> bytes:
        """Every byte handed out so far, in order."""
        return b"".join(self._chunks)


class _Recorder:
    """Forwards ``random_bytes`` to the recording source's inner source, recording the bytes."""

    def __init__(self, owner: RecordingSource) -> None:
        self._owner = owner

    def randbits(self, k: int) -> int:
        return _bits_from_bytes(self, k)

    def random_bytes(self, n: int) -> bytes:
        data = self._owner.inner.random_bytes(n)
        self._owner._chunks.append(data)
        return data


class BytesSource:
    """Replays a fixed byte string; raises ``EOFError`` when it runs out (for tests).

    Examples:
        >>> BytesSource(bytes([255])).randbits(4)
        15
    """

    def __init__(self, data: bytes) -> None:
        self._data = bytes(data)
        self._pos = 0

    def randbits(self, k: int) -> int:
        """The next ``k`` bits (whole bytes are consumed)."""
        return _bits_from_bytes(self, k)

    def random_bytes(self, n: int) -> bytes:
        """The next ``n`` bytes of the string."""
        if self._pos + n > len(self._data):
            raise EOFError("BytesSource ran out of bytes")
        out = self._data[self._pos : self._pos + n]
        self._pos += n
        return out


def caller_source(rng: object) -> RandomSource | None:
    """A mechanism's ``rng=`` argument as a bit source: ``None`` (the secure default), a numpy
    ``Generator`` (wrapped in :class:`GeneratorSource`) or a :class:`RandomSource` (both reproducible and
    NOT private); anything else is refused at construction, naming ``rng``.

    Examples:
        >>> caller_source(None) is None, type(caller_source(np.random.default_rng(0))).__name__
        (True, 'GeneratorSource')
    """
    if rng is None:
        return None
    if isinstance(rng, np.random.Generator):
        return GeneratorSource(rng)
    if not isinstance(rng, type) and isinstance(rng, RandomSource):
        return rng
    text = repr(rng) if len(repr(rng)) <= 80 else f"<{type(rng).__name__}>"
    raise InvalidParameter(
        f"rng={text} must be a numpy Generator, a RandomSource (e.g. SeededSource) or None"
    )


def caller_or_secure_source(rng: object) -> RandomSource:
    """:func:`caller_source`, with the operating system's secure source for ``None``."""
    source = caller_source(rng)
    return SecureSource() if source is None else source


def uniform_words(source: RandomSource, count: int, width: int) -> IntArray:
    """``count`` uniform integers in ``[0, 2**width)``, width in {1, 8, 16, 32, 62}, as int64."""
    if width == 1:
        bits = np.unpackbits(np.frombuffer(source.random_bytes((count + 7) // 8), dtype=np.uint8))
        return bits[:count].astype(np.int64)
    if width == 62:
        words: npt.NDArray[np.uint64] = np.frombuffer(source.random_bytes(8 * count), dtype="<u8")
        shifted: npt.NDArray[np.uint64] = np.right_shift(words, np.uint64(2))
        return shifted.astype(np.int64)
    dtype = {8: "<u1", 16: "<u2", 32: "<u4"}[width]
    return np.frombuffer(source.random_bytes(width // 8 * count), dtype=dtype).astype(np.int64)
