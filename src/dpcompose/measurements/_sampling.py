"""Exact noise samplers drawing from a secure random source (internal module).

Textbook floating-point noise leaks data through the low bits of its output (Mironov, CCS 2012). The
samplers here use **no floating point on the sampling path**: parameters are :class:`fractions.Fraction`
(or ``int``), every probability is an exact rational or ``exp(-rational)``, and every random decision is
an exact comparison of integers drawn from a :class:`RandomSource`. The output distribution is therefore
exactly the stated one, a function of the random byte stream alone.

Algorithms (Canonne, Kamath, Steinke 2020, "The Discrete Gaussian for Differential Privacy", NeurIPS;
arXiv:2004.00010, Section 5):

* ``Bernoulli(n/d)``: a uniform integer below ``d`` (by rejection from random bits) compared with ``n``.
* ``Bernoulli(exp(-γ))``, γ rational: Algorithm 1 (von Neumann's method) for γ ∈ [0, 1]; for γ > 1 the
  product of ⌊γ⌋ draws of ``Bernoulli(exp(-1))`` and one of ``Bernoulli(exp(-(γ - ⌊γ⌋)))``.
* discrete Laplace ``P[x] ∝ exp(-|x|/t)``, t rational: Algorithm 2.
* discrete Gaussian ``P[x] ∝ exp(-x²/(2σ²))``, σ² rational: Algorithm 3.

The array samplers (:func:`discrete_laplace_array`, :func:`discrete_gaussian_array`) have two exact
paths:

* **inversion** (scale <= 2048, σ² <= 2**26, when the request is large enough to pay for a table or
  the table is cached): ``|X| = #{k >= 1: U < P[|X| >= k]}`` for a uniform real ``U``, with a random
  sign. The tail probabilities are bracketed by integer bounds at 31 bits, derived with integer
  arithmetic only (Taylor series with remainder, products rounded outward); one 32-bit random word per
  draw (31 bits of ``U`` and the sign) and a guide-table lookup decide almost every draw, and the rare
  draw whose prefix falls between two bounds (probability about ``2·(entries)·2**-31``) is finished
  exactly by drawing more bits of ``U`` against bounds of higher precision (Devroye 1986, Chapter III;
  guide tables: Chen and Asau 1974). Tables are cached per parameter (at most eight).
* **digit split** (discrete Laplace with scale > 2048, when the request pays for its tables or they are
  cached): ``X = S·G`` with a random sign ``S`` (``-0`` rejected) and ``G`` geometric, split exactly into
  independent parts ``G = 2^D·A + Σ_j 2^(o_j)·B_j``: ``A`` geometric of scale ``t/2^D ∈ [32, 64)`` by
  the inversion above, each binary digit ``B_j`` (a truncated geometric) by rejection from a uniform
  candidate with an int64 bound test and the same exact refinement (see the section "Huge Laplace
  scales"). About 12 random bytes and a dozen numpy passes per draw, at any scale up to 2**50.
* **bucketed envelope** (discrete Gaussian with 2**26 < σ² <= 2**60, when the request pays for its
  tables or they are cached): ``X = S·M`` with ``-0`` rejected, ``M = JW + R`` drawn from the envelope
  ``P[J = j] ∝ exp(-(jW)²/(2σ²))`` (inversion as above) times a uniform offset ``R < W = 2^s``,
  ``W ≈ σ/256``, accepted with probability ``exp(-(M² - (JW)²)/(2σ²)) >= exp(-1/16)`` by an int64 bound
  test and the same exact refinement (see the section "Huge Gaussian variances"). One 64-bit random
  word per draw for σ < 2**29.
* **CKS algorithms on blocks** (the other parameters): every loop of the scalar algorithm becomes a loop
  over *rounds*, each round one vectorised step over the samples still undecided; the undecided set
  shrinks geometrically, so a block takes a few dozen numpy passes. Integer arithmetic is ``int64`` when
  the parameters provably fit, and exact Python integers (``object`` arrays) otherwise.

Outputs are ``int64``.

Examples:
    >>> from fractions import Fraction
    >>> src = SeededSource(7)  # deterministic, NOT private: for tests and experiments only
    >>> x = discrete_laplace_array(Fraction(3, 2), 5, src)
    >>> x.dtype, x.shape
    (dtype('int64'), (5,))
    >>> isinstance(sample_discrete_gaussian(Fraction(4), SeededSource(1)), int)
    True
    >>> sample_discrete_laplace(0.5, src)
    Traceback (most recent call last):
    ...
    dpcompose.errors.InvalidParameter: scale=0.5 must be an int or Fraction ...
"""

from __future__ import annotations

import functools
import math
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from fractions import Fraction
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
    "discrete_gaussian_array",
    "discrete_laplace_array",
    "randbelow",
    "sample_bernoulli",
    "sample_bernoulli_exp",
    "sample_discrete_gaussian",
    "sample_discrete_laplace",
]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
AnyIntArray = npt.NDArray[Any]  # int64 or object (exact Python ints)

# ---------------------------------------------------------------------------------------------------------
# Random sources
# ---------------------------------------------------------------------------------------------------------


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


_DEFAULT_SOURCE = SecureSource()


def _source(source: RandomSource | None) -> RandomSource:
    return _DEFAULT_SOURCE if source is None else source


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


# ---------------------------------------------------------------------------------------------------------
# Parameter checks: Fractions and ints only on the sampling path
# ---------------------------------------------------------------------------------------------------------


def _rational(value: object, name: str) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (int, Fraction)):
        raise InvalidParameter(
            f"{name}={value!r} must be an int or Fraction (floats are refused on the sampling path; "
            "convert with dpcompose.accounting.exact, which keeps the float's exact binary value)"
        )
    return Fraction(value)


def _positive_rational(value: object, name: str) -> Fraction:
    q = _rational(value, name)
    if q <= 0:
        raise InvalidParameter(f"{name}={value!r} must be positive")
    return q


# ---------------------------------------------------------------------------------------------------------
# Scalar samplers (CKS 2020, Algorithms 1-3)
# ---------------------------------------------------------------------------------------------------------


def randbelow(n: int, source: RandomSource | None = None) -> int:
    """A uniform integer in ``[0, n)``, by rejection from ``n.bit_length()`` random bits.

    Examples:
        >>> randbelow(6, SeededSource(0)) in range(6)
        True
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InvalidParameter(f"n={n!r} must be a positive integer")
    src = _source(source)
    k = (n - 1).bit_length()
    while True:
        r = src.randbits(k)
        if r < n:
            return r


def sample_bernoulli(p: Fraction | int, source: RandomSource | None = None) -> bool:
    """One draw of ``Bernoulli(p)`` for a rational ``p`` in [0, 1], exactly.

    Examples:
        >>> sample_bernoulli(Fraction(1), SeededSource(0)), sample_bernoulli(0, SeededSource(0))
        (True, False)
    """
    q = _rational(p, "p")
    if not 0 <= q <= 1:
        raise InvalidParameter(f"p={p!r} must lie in [0, 1]")
    return randbelow(q.denominator, source) < q.numerator


def sample_bernoulli_exp(gamma: Fraction | int, source: RandomSource | None = None) -> bool:
    """One draw of ``Bernoulli(exp(-gamma))`` for a rational ``gamma >= 0``, exactly.

    Source: Canonne, Kamath, Steinke 2020, Algorithm 1 (von Neumann's method) and the remark after it.

    Examples:
        >>> sample_bernoulli_exp(0, SeededSource(0))
        True
    """
    g = _rational(gamma, "gamma")
    if g < 0:
        raise InvalidParameter(f"gamma={gamma!r} must be non-negative")
    src = _source(source)
    whole, frac = divmod(g, 1)
    for _ in range(int(whole)):
        if not _bernoulli_exp_unit(Fraction(1), src):
            return False
    return _bernoulli_exp_unit(Fraction(frac), src)


def _bernoulli_exp_unit(g: Fraction, src: RandomSource) -> bool:
    """Bernoulli(exp(-g)) for g in [0, 1] (CKS Algorithm 1)."""
    k = 1
    while True:
        # Bernoulli(g/k): uniform below denominator*k, compared with the numerator.
        if randbelow(g.denominator * k, src) >= g.numerator:
            break
        k += 1
    return k % 2 == 1


def sample_discrete_laplace(scale: Fraction | int, source: RandomSource | None = None) -> int:
    """One draw ``x`` with ``P[x] ∝ exp(-|x|/scale)`` over the integers, exactly.

    Source: Canonne, Kamath, Steinke 2020, Algorithm 2 (with ``scale = t/s``).

    Examples:
        >>> isinstance(sample_discrete_laplace(Fraction(5, 2), SeededSource(0)), int)
        True
    """
    t = _positive_rational(scale, "scale")
    src = _source(source)
    n, d = t.numerator, t.denominator
    while True:
        u = randbelow(n, src)
        if not _bernoulli_exp_unit(Fraction(u, n), src):
            continue
        v = 0
        while _bernoulli_exp_unit(Fraction(1), src):
            v += 1
        y = (u + n * v) // d
        negative = src.randbits(1) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def sample_discrete_gaussian(sigma2: Fraction | int, source: RandomSource | None = None) -> int:
    """One draw ``x`` with ``P[x] ∝ exp(-x²/(2·sigma2))`` over the integers, exactly.

    Source: Canonne, Kamath, Steinke 2020, Algorithm 3 (``t = ⌊σ⌋ + 1``).

    Examples:
        >>> isinstance(sample_discrete_gaussian(Fraction(9, 4), SeededSource(0)), int)
        True
    """
    s2 = _positive_rational(sigma2, "sigma2")
    src = _source(source)
    t = math.isqrt(s2.numerator // s2.denominator) + 1  # ⌊σ⌋ + 1, as ⌊√⌊σ²⌋⌋ = ⌊σ⌋
    while True:
        y = sample_discrete_laplace(t, src)
        gamma = (abs(y) - s2 / t) ** 2 / (2 * s2)
        if sample_bernoulli_exp(gamma, src):
            return y


# ---------------------------------------------------------------------------------------------------------
# Vectorised building blocks. Arrays are int64 when the bounds are proven to fit, else object (Python int).
# ---------------------------------------------------------------------------------------------------------

_INT64_SAFE = 1 << 62  # values strictly below fit int64 with room for one addition
_SHIFT_SAFE = 1 << 54  # r < 2**54 ⇒ r << 8 fits int64
_BLOCK = 1 << 20  # samples per block, bounds memory


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


def _uniform_below(m: int, count: int, source: RandomSource) -> IntArray:
    """``count`` uniform integers in ``[0, m)`` for an integer ``1 <= m <= 2**62``, by rejection."""
    out = np.zeros(count, dtype=np.int64)
    if m == 1 or count == 0:
        return out
    if m == 2:
        return uniform_words(source, count, 1)
    width = next(w for w in (8, 16, 32, 62) if m <= 1 << w)
    limit = ((1 << width) // m) * m  # accept words below the largest multiple of m
    pending = np.arange(count)
    while pending.size:
        w = uniform_words(source, pending.size, width)
        ok = w < limit
        out[pending[ok]] = w[ok] % m
        pending = pending[~ok]
    return out


def _bern_ratio(num: AnyIntArray, den: AnyIntArray | int, source: RandomSource) -> BoolArray:
    """Independent ``Bernoulli(num/den)`` draws for ``0 <= num <= den``, exactly.

    Compares a uniform real ``U`` with ``num/den`` eight bits at a time: with ``f = ⌊256·num/den⌋`` and a
    random byte ``w``, ``w < f`` means ``U < num/den``, ``w > f`` means ``U > num/den``, and ``w == f``
    (probability 1/256) leaves the question ``U' < (256·num - f·den)/den`` for the remaining bits ``U'``,
    which is the same question again. Works on int64 arrays with ``den < 2**54`` and on object arrays.
    """
    size = num.shape[0]
    result = np.zeros(size, dtype=np.bool_)
    is_object = num.dtype == object
    den_arr = den if isinstance(den, np.ndarray) else None
    den_s: Any = den
    idx = np.arange(size)
    r = num
    while idx.size:
        w: AnyIntArray = uniform_words(source, idx.size, 8)
        if is_object:
            w = w.astype(object)
        shifted = r * 256
        dd = den_s if den_arr is None else den_arr
        f = shifted // dd
        result[idx[w < f]] = True
        tie = w == f
        if not tie.any():
            break
        r = (shifted - f * dd)[tie]
        if den_arr is not None:
            den_arr = den_arr[tie]
        idx = idx[tie]
    return result


def _bern_exp_minus_one(count: int, source: RandomSource) -> BoolArray:
    """``count`` independent ``Bernoulli(exp(-1))`` draws, exactly (CKS Algorithm 1 with γ = 1).

    Algorithm 1 stops at the first ``k`` whose ``Bernoulli(1/k)`` fails and returns ``k`` odd; so
    ``P[K > k] = 1/k!``. With ``u`` uniform on ``[0, 13·7!)`` (16 random bits, rejection 1/4096),
    ``K > k ⇔ u < 13·7!/k!`` for ``k <= 7`` exactly; the rare ``K > 7`` (``u < 13``) continue the loop.
    """
    m = 13 * math.factorial(7)  # 65520 <= 2**16
    u = _uniform_below(m, count, source)
    k = np.ones(count, dtype=np.int64)
    for j in range(1, 8):
        k += u < m // math.factorial(j)
    going = np.flatnonzero(k == 8)
    kk = 8
    while going.size:
        stop = _uniform_below(kk, going.size, source) != 0  # Bernoulli(1/kk) failed
        k[going[stop]] = kk
        going = going[~stop]
        kk += 1
    odd: BoolArray = (k % 2) == 1
    return odd


def _geometric_exp_minus_one(count: int, source: RandomSource) -> IntArray:
    """Number of successes before the first failure of ``Bernoulli(exp(-1))``: ``P[V >= v] = e^(-v)``."""
    v = np.zeros(count, dtype=np.int64)
    going = np.arange(count)
    while going.size:
        ok = _bern_exp_minus_one(going.size, source)
        going = going[ok]
        v[going] += 1
    return v


def _bern_exp_frac(num: AnyIntArray, den: AnyIntArray | int, source: RandomSource) -> BoolArray:
    """``Bernoulli(exp(-num/den))`` for ``0 <= num <= den`` (CKS Algorithm 1, vectorised over rounds)."""
    size = num.shape[0]
    den_arr = den if isinstance(den, np.ndarray) else None
    k = np.ones(size, dtype=np.int64)
    going = np.arange(size)
    kk = 1
    while going.size:
        # A ~ Bernoulli(γ/kk) = Bernoulli(1/kk) AND Bernoulli(γ), drawn independently.
        if kk > 1:
            first = _uniform_below(kk, going.size, source) == 0
            k[going[~first]] = kk
            going = going[first]
        if going.size:
            d: Any = den if den_arr is None else den_arr[going]
            second = _bern_ratio(num[going], d, source)
            k[going[~second]] = kk
            going = going[second]
        kk += 1
    odd: BoolArray = (k % 2) == 1
    return odd


def _bern_exp(num: AnyIntArray, den: AnyIntArray | int, source: RandomSource) -> BoolArray:
    """``Bernoulli(exp(-num/den))`` for ``num >= 0``: ⌊γ⌋ draws of ``exp(-1)`` and one of the fraction."""
    whole = num // den
    result = _bern_exp_frac(num - whole * den, den, source)
    going = np.flatnonzero(result & (whole > 0))
    remaining = whole[going]
    while going.size:
        ok = _bern_exp_minus_one(going.size, source)
        result[going[~ok]] = False
        remaining = remaining[ok] - 1
        going = going[ok]
        more = remaining > 0
        going, remaining = going[more], remaining[more]
    return result


def _as_int64(values: AnyIntArray) -> IntArray:
    if values.dtype == object:
        if values.size and (max(values) >= 1 << 63 or min(values) < -(1 << 63)):
            raise OverflowError("a sample does not fit in int64")
        return values.astype(np.int64)
    return values.astype(np.int64, copy=False)


def _laplace_block(n: int, d: int, count: int, source: RandomSource) -> IntArray:
    """About ``count`` (possibly fewer) exact draws of the discrete Laplace of scale ``n/d`` (CKS Alg. 2)."""
    u = _uniform_below(n, count, source)
    if n > 1:
        num: AnyIntArray = u if n < _SHIFT_SAFE else u.astype(object)
        u = u[_bern_exp_frac(num, n, source)]
    v = _geometric_exp_minus_one(u.shape[0], source)
    if v.size and d < _INT64_SAFE and n * (int(v.max()) + 1) < _INT64_SAFE:
        y: AnyIntArray = (u + n * v) // d
    else:
        y = (u.astype(object) + n * v.astype(object)) // d
    negative = uniform_words(source, y.shape[0], 1) == 1
    keep = ~(negative & (y == 0))
    return _as_int64(np.where(negative, -y, y)[keep])


def _fill(size: int, draw: Any) -> IntArray:
    """Call ``draw(count)`` until ``size`` accepted samples are collected (iid, so surplus is dropped)."""
    out = np.empty(size, dtype=np.int64)
    filled = 0
    while filled < size:
        need = min(size - filled, _BLOCK)
        got: IntArray = draw(need + need // 2 + 16)[:need]
        out[filled : filled + got.shape[0]] = got
        filled += got.shape[0]
    return out


def discrete_laplace_array(scale: Fraction | int, size: int, source: RandomSource | None = None) -> IntArray:
    """``size`` independent exact draws with ``P[x] ∝ exp(-|x|/scale)``, as an int64 array.

    For ``scale <= 2048`` (when ``size`` pays for a table, or one is cached): exact inversion of
    ``P[|X| >= k] = 2q^k/(1 + q)``, ``q = exp(-1/scale)``, with integer bounds and a random sign (see the
    module docstring). For ``scale > 2048`` (likewise when ``size`` pays for the tables, about twice
    their ~15 000 entries, or they are cached): the exact digit split of the geometric ``|X|`` (section
    "Huge Laplace scales" of the source: ``X = S·(2^D·A + Σ_j 2^(o_j)·B_j)`` with independent parts,
    ``-0`` rejected). Otherwise CKS 2020 Algorithm 2 run on whole blocks: ``U`` uniform below the
    numerator ``n`` of ``scale = n/d``, kept with probability ``exp(-U/n)``; ``V`` geometric with
    ``P[V >= v] = e^(-v)``; ``Y = ⌊(U + nV)/d⌋``; a random sign, rejecting ``-0``. Keeping the first
    accepted draws of a block is exact, because the accepted draws are independent of the acceptance
    pattern.

    Source: Canonne, Kamath, Steinke 2020, Algorithm 2; inversion: Devroye 1986, "Non-Uniform Random
    Variate Generation", Chapter III; the digit split is the factorisation
    ``(1 - q)q^(La + b) = (1 - q^L)(q^L)^a · (1 - q)q^b/(1 - q^L)`` (derived in the source comment).

    Args:
        scale: the scale ``t > 0`` (int or Fraction).
        size: the number of samples.
        source: the random source (default: :class:`SecureSource`).

    Raises:
        InvalidParameter: ``scale`` is not a positive int/Fraction (or exceeds 2**50), ``size`` is negative.

    Examples:
        >>> x = discrete_laplace_array(Fraction(1, 3), 10_000, SeededSource(0))
        >>> bool((abs(x) <= 20).all())
        True
    """
    t = _positive_rational(scale, "scale")
    check_nonnegative_int(size, "size")
    if t > 1 << 50:
        raise InvalidParameter(f"scale={scale!r} must be at most 2**50 (samples must fit in int64)")
    src = _source(source)
    n, d = t.numerator, t.denominator
    if t <= _LAPLACE_TABLE_MAX_SCALE and _use_table("laplace", t, size, 22 * (n // d + 1)):
        table = _inverse_table("laplace", t)
        return _fill_exact(size, lambda count: _inverse_block(table, count, src))
    big = size > _SCALAR_BELOW and t > _LAPLACE_TABLE_MAX_SCALE
    if big and (_plan_is_cached(t) or size >= 2 * _plan_entries(t, _top_bits(t))):
        plan = _laplace_plan(t)
        return _fill_exact(size, lambda count: _laplace_digits_block(plan, count, src))
    if n > _INT64_SAFE or size <= _SCALAR_BELOW:
        # uniform draws below n need more than one word, or the block machinery costs more than it saves
        # for a handful of draws (a scalar query): use the scalar algorithm, the same distribution
        return np.array([sample_discrete_laplace(t, src) for _ in range(size)], dtype=np.int64)
    return _fill(size, lambda count: _laplace_block(n, d, count, src))


# ---------------------------------------------------------------------------------------------------------
# Inversion with integer bounds: one 32-bit word per draw (small and moderate parameters)
# ---------------------------------------------------------------------------------------------------------
#
# A symmetric integer distribution is sampled as a random sign times the magnitude M = #{k >= 1: U < T_k},
# where U is uniform on [0, 1) and T_k = P[|X| >= k] (decreasing in k). The tail probabilities are
# irrational, so they are never computed as numbers: integer bounds lo_k <= 2**p·T_k <= hi_k are derived
# with integer arithmetic only (a Taylor series with its alternating-series remainder, then products
# rounded down for the lower and up for the upper bound). With the first 31 bits u of U,
# U ∈ [u/2**31, (u+1)/2**31): ``u + 1 <= lo_k`` proves ``U < T_k``, ``u >= hi_k`` proves ``U >= T_k``;
# when neither holds (probability about 2**-30 per boundary) further bits of U are drawn and compared with
# bounds of ever higher precision, which decides every comparison with probability 1. The magnitude is
# then *exactly* the inverse-CDF value of the uniform real U, so its distribution is exactly the stated
# one. A guide table (Chen and Asau 1974; Devroye 1986, Chapter III) indexed by the top bits of u
# answers most draws with one lookup: a bucket of u values in which no bound changes has one answer.

_U_BITS = 31  # the first bits of U: the top 31 bits of a 32-bit random word; bit 0 is the sign
_REFINE_BITS = 32  # bits of U added per refinement of an undecided comparison
_TAIL_GUARD = 8  # the neglected tail mass is at most 2**-(p + _TAIL_GUARD)
_GAUSS_TABLE_MAX_SIGMA2 = 1 << 26  # inversion tables for σ <= 8192 (at most ~85 000 entries)
_LAPLACE_TABLE_MAX_SCALE = 1 << 11  # and for Laplace scales <= 2048 (at most ~90 000 entries)
_TABLE_CACHE_SIZE = 8  # inversion tables kept per process (each at most a few MB)
_INVERSE_BLOCK = 1 << 16  # draws per block of the inversion sampler (small blocks stay in cache)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _exp_neg_bounds(x: Fraction, w: int) -> tuple[int, int]:
    """Integers ``lo <= 2**w · exp(-x) <= hi`` for a rational ``x >= 0``, by integer arithmetic only.

    ``exp(-y)`` for ``y = x/2**j <= 1/2`` lies between two consecutive partial sums of its alternating
    Taylor series (the terms decrease), which are exact rationals; the bounds are then rounded outward to
    ``w + j + 16`` bits and squared ``j`` times (rounding the lower bound down and the upper bound up).
    """
    if x == 0:
        return 1 << w, 1 << w
    j = 0
    y = Fraction(x)
    while y > Fraction(1, 2):
        y /= 2
        j += 1
    work = w + j + 16
    eps = Fraction(1, 1 << (work + 2))
    partial, term, n = Fraction(1), Fraction(1), 0
    while True:
        n += 1
        term = term * y / n
        following = partial - term if n % 2 else partial + term
        if term < eps:
            break
        partial = following
    low, high = min(partial, following), max(partial, following)
    lo = low.numerator * (1 << work) // low.denominator
    hi = _ceil_div(high.numerator * (1 << work), high.denominator)
    for _ in range(j):
        lo = (lo * lo) >> work
        hi = _ceil_div(hi * hi, 1 << work)
    drop = work - w
    return lo >> drop, _ceil_div(hi, 1 << drop)


def _gauss_tail_bounds(s2: Fraction, prec: int, zero_weight: int = 1) -> tuple[list[int], list[int]]:
    """Bounds ``lo[k-1] <= 2**prec · P[|X| >= k] <= hi[k-1]``, ``k = 1..K+1``, X discrete Gaussian σ² = s2.

    With ``e_m = exp(-m²/(2σ²))``: ``P[|X| >= k] = S_k / S_0`` where ``S_k = Σ_{m>=k} w_m``,
    ``w_0 = zero_weight`` (1: the magnitude of the discrete Gaussian; 2: every ``w_m = 2e_m``, i.e. the
    "half-Gaussian" ``P[M = m] ∝ e_m`` on ``m >= 0``), ``w_m = 2e_m`` for ``m >= 1``. Fixed-point
    (``2**W``) bounds of ``e_m`` come from ``e_{m+1} = e_m · r_m`` and ``r_{m+1} = r_m · exp(-1/σ²)``
    with ``r_0 = exp(-1/(2σ²))``, every product rounded outward. The terms beyond ``K`` are bounded by
    ``e_K · r_K/(1 - r_K)`` (as ``(K+i)² >= K² + (2K+1)i``), and ``K`` is the first index where that
    bound is below ``2**-(prec + 9)``. Beyond the last entry, ``[0, hi[-1]]`` is a valid bound of every
    ``2**prec · P[|X| >= k]`` (the tail probabilities decrease).
    """
    w = prec + _ceil_div(s2.numerator, s2.denominator).bit_length() + 40
    one = 1 << w
    a_lo, a_hi = _exp_neg_bounds(1 / (2 * s2), w)
    b_lo, b_hi = (a_lo * a_lo) >> w, _ceil_div(a_hi * a_hi, one)
    e_lo = e_hi = one
    r_lo, r_hi = a_lo, a_hi
    w_lo, w_hi = [zero_weight * one], [zero_weight * one]
    target = 1 << (w - prec - _TAIL_GUARD - 1)
    while True:
        if r_hi < one:
            tail = _ceil_div(e_hi * r_hi, one - r_hi)
            if len(w_lo) > 1 and 2 * tail <= target:
                break
        e_lo, e_hi = (e_lo * r_lo) >> w, _ceil_div(e_hi * r_hi, one)
        r_lo, r_hi = (r_lo * b_lo) >> w, _ceil_div(r_hi * b_hi, one)
        w_lo.append(2 * e_lo)
        w_hi.append(2 * e_hi)
    size = len(w_lo)  # K + 1 weights, m = 0..K
    s_lo, s_hi = [0] * (size + 1), [2 * tail] * (size + 1)
    for m in range(size - 1, -1, -1):
        s_lo[m] = s_lo[m + 1] + w_lo[m]
        s_hi[m] = s_hi[m + 1] + w_hi[m]
    z_lo, z_hi = s_lo[0], s_hi[0]
    lo = [(s_lo[k] << prec) // z_hi for k in range(1, size + 1)]
    hi = [_ceil_div(s_hi[k] << prec, z_lo) for k in range(1, size + 1)]
    return lo, hi


def _laplace_tail_bounds(t: Fraction, prec: int) -> tuple[list[int], list[int]]:
    """Bounds ``lo[k-1] <= 2**prec · P[|X| >= k] <= hi[k-1]``, ``k = 1..K+1``, X discrete Laplace scale t.

    ``P[|X| >= k] = 2q^k/(1 + q)`` with ``q = exp(-1/t)`` for ``k >= 1``; fixed-point bounds of ``q^k``
    come from repeated products rounded outward. The last entry is the first with ``hi <= 1``.
    """
    w = prec + _ceil_div(t.numerator, t.denominator).bit_length() + 40
    one = 1 << w
    q_lo, q_hi = _exp_neg_bounds(1 / t, w)
    e_lo, e_hi = q_lo, q_hi
    lo: list[int] = []
    hi: list[int] = []
    while True:
        lo.append((2 * e_lo << prec) // (one + q_hi))
        hi.append(_ceil_div(2 * e_hi << prec, one + q_lo))
        if hi[-1] <= 1:
            return lo, hi
        e_lo, e_hi = (e_lo * q_lo) >> w, _ceil_div(e_hi * q_hi, one)


def _geom_tail_bounds(rate: Fraction, prec: int) -> tuple[list[int], list[int]]:
    """Bounds ``lo[k-1] <= 2**prec · exp(-rate·k) <= hi[k-1]``, ``k = 1..K+1`` (a geometric's tails).

    ``P[A >= k] = r^k`` with ``r = exp(-rate)``; fixed-point bounds of ``r^k`` come from repeated products
    rounded outward. The last entry is the first with ``hi <= 1``.
    """
    w = prec + _ceil_div(rate.denominator, rate.numerator).bit_length() + 40
    one = 1 << w
    r_lo, r_hi = _exp_neg_bounds(rate, w)
    e_lo, e_hi = r_lo, r_hi
    lo: list[int] = []
    hi: list[int] = []
    while True:
        lo.append(e_lo >> (w - prec))
        hi.append(_ceil_div(e_hi, 1 << (w - prec)))
        if hi[-1] <= 1:
            return lo, hi
        e_lo, e_hi = (e_lo * r_lo) >> w, _ceil_div(e_hi * r_hi, one)


def _half_gauss_tail_bounds(s2: Fraction, prec: int) -> tuple[list[int], list[int]]:
    """Tail bounds of the half-Gaussian ``P[M = m] ∝ exp(-m²/(2·s2))`` on ``m >= 0`` (see above)."""
    return _gauss_tail_bounds(s2, prec, zero_weight=2)


@functools.lru_cache(maxsize=2 * _TABLE_CACHE_SIZE)
def _tail_bounds(kind: str, param: Fraction, prec: int) -> tuple[Any, Any]:
    """The cached tail bounds of ``kind`` at ``prec`` bits.

    Kinds: "gauss" (σ² = param), "halfgauss" (``P[M = m] ∝ exp(-m²/(2·param))``, ``m >= 0``), "laplace"
    (scale = param), "geom" (``P[A >= k] = exp(-param·k)``).

    Kept as int64 arrays when ``prec <= 62`` (8 bytes an entry), as lists of Python ints above.
    """
    bounds = {
        "gauss": _gauss_tail_bounds,
        "halfgauss": _half_gauss_tail_bounds,
        "laplace": _laplace_tail_bounds,
        "geom": _geom_tail_bounds,
    }
    lo, hi = bounds[kind](param, prec)
    if prec <= 62:
        return np.array(lo, dtype=np.int64), np.array(hi, dtype=np.int64)
    return lo, hi


def _resolve(kind: str, param: Fraction, u: int, count: int, source: RandomSource, slack: int = 0) -> int:
    """The exact magnitude ``#{k >= 1: U < T_k}`` for a draw whose first bits ``u`` left it undecided.

    ``count`` comparisons are already proven (``U < T_k`` for ``k <= count``). Each remaining comparison
    is decided with bounds at the current precision, or, when still undecided, after appending
    ``_REFINE_BITS`` fresh bits to ``U`` and raising the precision: this is the inverse CDF of the uniform
    real ``U`` whose first bits are ``u``, i.e. exactly the conditional law given those bits. ``slack``
    (tests only) widens the first bounds, so that more bits are drawn often.
    """
    value, prec, k = u, _U_BITS, count + 1
    while True:
        lo, hi = _tail_bounds(kind, param, prec)
        low, high = (int(lo[k - 1]), int(hi[k - 1])) if k <= len(lo) else (0, int(hi[-1]))
        if prec == _U_BITS:
            low, high = low - slack, high + slack
        if value + 1 <= low:
            count, k = k, k + 1
        elif value >= high:
            return count
        else:
            value = (value << _REFINE_BITS) | source.randbits(_REFINE_BITS)
            prec += _REFINE_BITS


@dataclass(frozen=True)
class _InverseTable:
    """Vectorised inversion data for one distribution (see :func:`_inverse_table`)."""

    kind: str
    param: Fraction
    lo_desc: IntArray  # lo_desc[i] <= 2**31·T_{i+1}; a final 0 stands for every later k
    hi_desc: IntArray  # hi_desc[i] >= 2**31·T_{i+1}; non-increasing
    lo_asc: IntArray  # lo_desc reversed, for searchsorted
    guide: IntArray  # the magnitude of every u in bucket u >> shift, or -1 if the bucket is undecided
    shift: int
    slack: int  # > 0 only in tests: bounds widened by this much


class _BoundedCache(OrderedDict[Any, Any]):
    """A least-recently-used map of at most ``size`` set-up objects (tables, plans), thread-safe."""

    def __init__(self, size: int = _TABLE_CACHE_SIZE) -> None:
        super().__init__()
        self.size = size

    def recall(self, key: Any) -> Any:
        """The value for ``key`` (now the most recently used), or ``None``."""
        with _TABLES_LOCK:
            value = self.get(key)
            if value is not None:
                self.move_to_end(key)
            return value

    def keep(self, key: Any, value: Any) -> None:
        """Store ``value``, dropping the least recently used entries beyond ``size``."""
        with _TABLES_LOCK:
            self[key] = value
            while len(self) > self.size:
                self.popitem(last=False)

    def holds(self, key: Any) -> bool:
        with _TABLES_LOCK:
            return key in self


_TABLES = _BoundedCache(_TABLE_CACHE_SIZE)  # (kind, param, slack) -> _InverseTable
_TABLES_LOCK = threading.Lock()


def _inverse_table(kind: str, param: Fraction, slack: int = 0) -> _InverseTable:
    """The (cached, at most ``_TABLE_CACHE_SIZE`` kept) inversion table; ``slack`` widens every bound.

    ``slack > 0`` is for tests only: wider bounds are still true bounds, so the sampler stays exact while
    the exact fallback :func:`_resolve` runs often.
    """
    key = (kind, param, slack)
    table: _InverseTable | None = _TABLES.recall(key)
    if table is not None:
        return table
    lo, hi = _tail_bounds(kind, param, _U_BITS)
    top = 1 << _U_BITS
    lo_desc = np.append(np.maximum(lo - slack, 0), 0)
    hi_desc = np.minimum(np.append(hi, hi[-1]) + slack, top)
    lo_asc = lo_desc[::-1].copy()
    hi_asc = hi_desc[::-1].copy()
    g = min(max(lo_desc.size.bit_length() + 4, 8), 18)
    shift = _U_BITS - g
    starts = np.arange(1 << g, dtype=np.int64) << shift
    ends = starts + ((1 << shift) - 1)
    a_end = lo_asc.size - np.searchsorted(lo_asc, ends, side="right")  # proven count at the bucket's end
    b_start = hi_asc.size - np.searchsorted(hi_asc, starts, side="right")  # possible count at its start
    guide = np.where(a_end == b_start, a_end, -1).astype(np.int64)
    table = _InverseTable(kind, param, lo_desc, hi_desc, lo_asc, guide, shift, slack)
    _TABLES.keep(key, table)
    return table


def _table_is_cached(kind: str, param: Fraction) -> bool:
    return _TABLES.holds((kind, param, 0))


def _inverse_block(table: _InverseTable, count: int, source: RandomSource) -> IntArray:
    """``count`` exact draws by inversion: one 32-bit word each (31 bits of ``U``, one sign bit)."""
    words: npt.NDArray[np.uint32] = np.frombuffer(source.random_bytes(4 * count), dtype="<u4")
    mag = _inverse_magnitudes(table, words, source)
    negative = (words & np.uint32(1)) == 1
    out: IntArray = np.where(negative, -mag, mag)
    return out


def _inverse_magnitudes(
    table: _InverseTable, words: npt.NDArray[np.uint32], source: RandomSource
) -> IntArray:
    """The magnitudes ``#{k >= 1: U < T_k}`` of the 31-bit prefixes ``words >> 1`` (bit 0 is ignored)."""
    u: IntArray = np.right_shift(words, np.uint32(32 - _U_BITS)).astype(np.int64)
    return _prefix_magnitudes(table, u, source)


def _prefix_magnitudes(table: _InverseTable, u: IntArray, source: RandomSource) -> IntArray:
    """The magnitudes ``#{k >= 1: U < T_k}`` for the 31-bit prefixes ``u`` (int64) of ``U``."""
    mag: IntArray = table.guide[u >> table.shift]
    dirty = np.flatnonzero(mag < 0)
    if dirty.size:
        ud = u[dirty]
        proven = table.lo_asc.size - np.searchsorted(table.lo_asc, ud, side="right")
        mag[dirty] = proven
        for i in np.flatnonzero(table.hi_desc[proven] > ud):  # some comparison is undecided
            args = (table.kind, table.param, int(ud[i]), int(proven[i]), source, table.slack)
            mag[dirty[i]] = _resolve(*args)
    return mag


def _fill_exact(size: int, draw: Any) -> IntArray:
    """Concatenate ``draw(count)`` over blocks of at most ``_INVERSE_BLOCK`` (every draw is kept)."""
    if size <= _INVERSE_BLOCK:
        first: IntArray = draw(size)
        return first
    out = np.empty(size, dtype=np.int64)
    for start in range(0, size, _INVERSE_BLOCK):
        need = min(size - start, _INVERSE_BLOCK)
        out[start : start + need] = draw(need)
    return out


def _use_table(kind: str, param: Fraction, size: int, entries: int) -> bool:
    """Use an inversion table when it is cached, or build one when ``size`` amortises its set-up cost."""
    return _table_is_cached(kind, param) or (size > _SCALAR_BELOW and size >= 2 * entries)


_SCALAR_BELOW = 8
"""Below this many draws, the batch samplers use the scalar algorithm (about 10× faster for one draw)."""


def _gaussian_centre(s2: Fraction) -> Fraction:
    """The constant ``c = σ²/t`` of the batch path: ``⌊σ⌋`` for σ >= 1 (``t ∈ [σ, 2σ)``), else σ² (t = 1)."""
    root = math.isqrt(s2.numerator // s2.denominator)  # ⌊σ⌋
    return Fraction(root) if root >= 1 else s2


def _gaussian_block(s2: Fraction, count: int, source: RandomSource) -> IntArray:
    a, b = s2.numerator, s2.denominator
    c = _gaussian_centre(s2)
    p, q = c.numerator, c.denominator
    t = s2 / c  # Laplace scale, so that σ²/t = c
    if t > _LAPLACE_TABLE_MAX_SCALE:  # huge σ: the digit split draws the Laplace proposals
        y = _fill_exact(count, lambda n: _laplace_digits_block(_laplace_plan(t), n, source))
    else:
        y = _laplace_block(t.numerator, t.denominator, count, source)
    # γ = (|y| - c)² / (2σ²) = b·(q|y| - p)² / (2a·q²)
    den = 2 * a * q * q
    fits = den < _SHIFT_SAFE and (q * (int(np.abs(y).max()) if y.size else 0) + p) ** 2 * b < _INT64_SAFE
    dist: AnyIntArray = q * np.abs(y) - p if fits else q * np.abs(y).astype(object) - p
    accept = _bern_exp(b * dist * dist, den, source)
    return y[accept]


def discrete_gaussian_array(
    sigma2: Fraction | int, size: int, source: RandomSource | None = None
) -> IntArray:
    """``size`` independent exact draws with ``P[x] ∝ exp(-x²/(2·sigma2))``, as an int64 array.

    For ``sigma2 <= 2**26`` (when ``size`` pays for a table, or one is cached): exact inversion of
    ``P[|X| >= k] = Σ_{m>=k} w_m / Σ_{m>=0} w_m`` (``w_0 = 1``, ``w_m = 2exp(-m²/(2σ²))``) with integer
    bounds and a random sign (see the module docstring). For ``2**26 < sigma2 <= 2**60`` (likewise when
    ``size`` pays for the tables, about twice their ~12 000 entries, or they are cached): the exact
    bucketed envelope (section "Huge Gaussian variances" of the source: ``M = JW + R`` with ``J`` from a
    table of ``P[J = j] ∝ exp(-(jW)²/(2σ²))``, ``R`` uniform below ``W = 2^s``, kept with probability
    ``exp(-(M² - (JW)²)/(2σ²))``, a random sign, ``-0`` rejected). Otherwise
    CKS 2020 Algorithm 3 on whole blocks: a discrete Laplace draw ``Y`` of scale ``t`` kept with
    probability ``exp(-(|Y| - σ²/t)²/(2σ²))``. The algorithm is exact for *every* ``t > 0`` (the kept
    mass is ``∝ exp(-|y|/t - (|y| - σ²/t)²/(2σ²)) = exp(-y²/(2σ²))·const``); for σ >= 1 the batch path
    takes ``t = σ²/c`` with the integer ``c = ⌊σ⌋``, so that ``γ = (|Y| - c)²/(2σ²)`` has denominator
    ``2σ²`` only and stays in int64 for large σ; for σ < 1 it takes the paper's ``t = 1``. When
    ``t > 2048`` the Laplace proposals come from the exact digit split (see
    :func:`discrete_laplace_array`). (The scalar path uses the paper's ``t = ⌊σ⌋ + 1`` throughout.)

    Source: Canonne, Kamath, Steinke 2020, Algorithm 3; inversion and rejection from an envelope:
    Devroye 1986, "Non-Uniform Random Variate Generation", Chapters II and III.

    Args:
        sigma2: the variance parameter ``σ² > 0`` (int or Fraction).
        size: the number of samples.
        source: the random source (default: :class:`SecureSource`).

    Raises:
        InvalidParameter: ``sigma2`` is not a positive int/Fraction (or exceeds 2**80), ``size`` is negative.

    Examples:
        >>> x = discrete_gaussian_array(Fraction(1, 4), 10_000, SeededSource(0))
        >>> bool((abs(x) <= 5).all())
        True
        >>> y = discrete_gaussian_array(Fraction(2**20) ** 2, 30_000, SeededSource(0))  # the envelope
        >>> bool((abs(y) < 12 * 2**20).all()), _gauss_plan_is_cached(Fraction(2**40))
        (True, True)
    """
    s2 = _positive_rational(sigma2, "sigma2")
    check_nonnegative_int(size, "size")
    if s2 > 1 << 80:
        raise InvalidParameter(f"sigma2={sigma2!r} must be at most 2**80 (samples must fit in int64)")
    src = _source(source)
    t = s2 / _gaussian_centre(s2)
    if s2 <= _GAUSS_TABLE_MAX_SIGMA2 and _use_table("gauss", s2, size, 9 * (math.isqrt(int(s2)) + 1)):
        table = _inverse_table("gauss", s2)
        return _fill_exact(size, lambda count: _inverse_block(table, count, src))
    envelope = _BUCKET_MIN_SIGMA2 < s2 <= _BUCKET_MAX_SIGMA2 and size > _SCALAR_BELOW
    if envelope and (_gauss_plan_is_cached(s2) or size >= 2 * _bucket_entries(s2)):
        plan = _gauss_plan(s2)
        return _fill_exact(size, lambda count: _gauss_bucket_block(plan, count, src))
    if size <= _SCALAR_BELOW or (t.numerator > _INT64_SAFE):
        return np.array([sample_discrete_gaussian(s2, src) for _ in range(size)], dtype=np.int64)
    return _fill(size, lambda count: _gaussian_block(s2, count, src))


# ---------------------------------------------------------------------------------------------------------
# Huge Laplace scales: the geometric split into independent binary digits
# ---------------------------------------------------------------------------------------------------------
#
# For scale t, q = exp(-1/t), the discrete Laplace is X = S·G with a uniform sign S and G geometric with
# P[G = g] = (1 - q)·q^g, g >= 0, with the draw (S = -1, G = 0) rejected (CKS 2020, Algorithm 2 does the
# same): every x != 0 then has mass (1 - q)q^|x|/2 and x = 0 has (1 - q)/2, i.e. P[x] ∝ q^|x|.
#
# Digits. For L = 2**D, write G = L·A + B with 0 <= B < L. Then
#     P[A = a, B = b] = (1 - q)·q^(La + b) = [(1 - q^L)·(q^L)^a] · [(1 - q)·q^b/(1 - q^L)],
# a product: A and B are independent, A is geometric with ratio q^L = exp(-L/t), and B is the geometric
# truncated to [0, L), P[B = b] ∝ q^b. Likewise B = Σ_j 2^(o_j)·B_j over disjoint bit ranges
# [o_j, o_j + k_j) of [0, D), as q^b = Π_j (q^(2^o_j))^(b_j): the B_j are independent, each truncated
# geometric on [0, 2^k_j) with ratio ρ_j = exp(-2^o_j/t).
#
# Sampling. A (ratio exp(-2^D/t), D chosen so that t/2^D lies in [32, 64)) is inverted with the table
# machinery above (kind "geom", ~1400 entries) from a 32-bit word whose bit 0 is the sign S. Each B_j is
# drawn by rejection from the uniform: a uniform candidate b on [0, 2^k_j) is accepted with probability
# ρ_j^b (accepted candidates have P[b] ∝ ρ_j^b exactly); ρ_j^b >= exp(-2^D/t) >= exp(-1/32), so more than
# 97% are accepted. The acceptance U < ρ_j^b uses one 64-bit word: the top k_j bits are b, the low 31 bits
# the prefix v of U. With b = b_hi·2^m + b_lo, integer bounds lo <= 2^31·ρ^(b_lo) <= hi and
# lo' <= 2^31·ρ^(b_hi·2^m) <= hi' (tables of 2^m and 2^(k - m) entries, m = ⌈k/2⌉ <= 13) give
# lo·lo' <= 2^62·ρ^b <= hi·hi' in int64: (v + 1)·2^31 <= lo·lo' proves U < ρ^b, v·2^31 >= hi·hi' proves
# U >= ρ^b, and the rare undecided candidate (probability about 2^-29) draws 32 more bits of U at a time
# against bounds of exp(-b·2^o/t) of ever higher precision, which decides it with probability 1.

_DIGIT_MAX_BITS = 26  # bits of one digit B_j (its candidate and the 31-bit prefix share a 64-bit word)
_TOP_SCALE_BITS = 5  # D = ⌊log2 t⌋ - 5, so that the top geometric A has scale t/2^D in [32, 64)
_PLAN_CACHE_SIZE = 8


@dataclass(frozen=True)
class _DigitTable:
    """Acceptance bounds for one digit ``B_j`` (bits ``[offset, offset + bits)`` of ``G``)."""

    offset: int
    bits: int
    low_bits: int  # m: b = b_hi·2^m + b_lo
    rate: Fraction  # ρ = exp(-rate), rate = 2^offset/t
    lo_low: IntArray  # lo_low[i] <= 2^31·ρ^i <= hi_low[i], i < 2^m
    hi_low: IntArray
    lo_high: IntArray  # lo_high[i] <= 2^31·ρ^(i·2^m) <= hi_high[i], i < 2^(bits - m)
    hi_high: IntArray
    slack: int  # > 0 only in tests: the accept/reject tests are widened by this many units of 2^-31


@dataclass(frozen=True)
class _LaplacePlan:
    """Everything :func:`_laplace_digits_block` needs for one scale."""

    scale: Fraction
    top_bits: int  # D
    top: _InverseTable  # A: geometric with rate 2^D/t
    digits: tuple[_DigitTable, ...]


_PLANS = _BoundedCache(_PLAN_CACHE_SIZE)  # (scale, D, slack) -> _LaplacePlan


def _power_bounds(rate: Fraction, count: int, prec: int) -> tuple[IntArray, IntArray]:
    """int64 arrays ``lo[i] <= 2**prec · exp(-rate·i) <= hi[i]`` for ``i < count`` (``prec <= 62``).

    Repeated products of the bounds of ``exp(-rate)`` at ``prec + bitlen(count) + 40`` bits, rounded
    outward, then rounded outward to ``prec`` bits.
    """
    w = prec + count.bit_length() + 40
    one = 1 << w
    r_lo, r_hi = _exp_neg_bounds(rate, w)
    e_lo = e_hi = one
    drop = w - prec
    lo, hi = [0] * count, [0] * count
    for i in range(count):
        lo[i] = e_lo >> drop
        hi[i] = _ceil_div(e_hi, 1 << drop)
        e_lo, e_hi = (e_lo * r_lo) >> w, _ceil_div(e_hi * r_hi, one)
    return np.array(lo, dtype=np.int64), np.array(hi, dtype=np.int64)


def _digit_table(scale: Fraction, offset: int, bits: int, slack: int = 0) -> _DigitTable:
    rate = Fraction(1 << offset) / scale
    m = _ceil_div(bits, 2)
    lo_low, hi_low = _power_bounds(rate, 1 << m, _U_BITS)
    lo_high, hi_high = _power_bounds(rate * (1 << m), 1 << (bits - m), _U_BITS)
    return _DigitTable(offset, bits, m, rate, lo_low, hi_low, lo_high, hi_high, slack)


def _top_bits(scale: Fraction) -> int:
    """``D = max(0, ⌊log2 t⌋ - 5)``."""
    return max(0, (scale.numerator // scale.denominator).bit_length() - 1 - _TOP_SCALE_BITS)


def _digit_split(top_bits: int) -> list[tuple[int, int]]:
    """``(offset, bits)`` of near-equal digits covering ``[0, D)``, each at most ``_DIGIT_MAX_BITS``."""
    if top_bits == 0:
        return []
    parts = _ceil_div(top_bits, _DIGIT_MAX_BITS)
    out, offset = [], 0
    for j in range(parts):
        bits = top_bits // parts + (1 if j < top_bits % parts else 0)
        out.append((offset, bits))
        offset += bits
    return out


def _plan_entries(scale: Fraction, top_bits: int) -> int:
    """Roughly the table entries a plan builds (its set-up cost)."""
    top = 22 * (_ceil_div(scale.numerator, scale.denominator << top_bits) + 1)
    digits = sum((1 << _ceil_div(b, 2)) + (1 << (b // 2)) for _, b in _digit_split(top_bits))
    return top + digits


def _laplace_plan(scale: Fraction, top_bits: int | None = None, slack: int = 0) -> _LaplacePlan:
    """The (cached) plan for scale ``t``; ``top_bits`` (default ``D = ⌊log2 t⌋ - 5``) and ``slack`` for
    tests: any ``D >= 0`` is exact (a small ``D`` only makes the top table longer, a large one rejects
    more candidates), and ``slack`` widens the digit bounds so that the exact refinement runs often."""
    d = _top_bits(scale) if top_bits is None else top_bits
    key = (scale, d, slack)
    plan: _LaplacePlan | None = _PLANS.recall(key)
    if plan is not None:
        return plan
    top = _inverse_table("geom", Fraction(1 << d) / scale)
    digits = tuple(_digit_table(scale, o, b, slack) for o, b in _digit_split(d))
    plan = _LaplacePlan(scale, d, top, digits)
    _PLANS.keep(key, plan)
    return plan


def _plan_is_cached(scale: Fraction) -> bool:
    return _PLANS.holds((scale, _top_bits(scale), 0))


def _accept_exact(rate: Fraction, v: int, source: RandomSource, bits: int = _U_BITS) -> bool:
    """Decide ``U < exp(-rate)`` for a uniform ``U`` whose first ``bits`` bits are ``v``, exactly.

    Appends 32 fresh bits of ``U`` at a time and compares with bounds of ``2**prec · exp(-rate)`` at the
    new precision (at most 2 apart), until a comparison is proven.
    """
    value, prec = v, bits
    while True:
        value = (value << _REFINE_BITS) | source.randbits(_REFINE_BITS)
        prec += _REFINE_BITS
        lo, hi = _exp_neg_bounds(rate, prec)
        if value + 1 <= lo:
            return True
        if value >= hi:
            return False


def _digit_block(table: _DigitTable, count: int, source: RandomSource) -> IntArray:
    """``count`` exact draws of the truncated geometric ``P[b] ∝ ρ^b`` on ``[0, 2^bits)`` (by rejection)."""
    out = np.empty(count, dtype=np.int64)
    pending = np.arange(count)
    low_mask = (1 << table.low_bits) - 1
    v_mask = np.uint64((1 << _U_BITS) - 1)
    while pending.size:
        words: npt.NDArray[np.uint64] = np.frombuffer(source.random_bytes(8 * pending.size), dtype="<u8")
        b = np.right_shift(words, np.uint64(64 - table.bits)).astype(np.int64)
        v = (words & v_mask).astype(np.int64)
        b_hi, b_lo = b >> table.low_bits, b & low_mask
        accept = ((v + (1 + table.slack)) << _U_BITS) <= table.lo_high[b_hi] * table.lo_low[b_lo]
        rest = np.flatnonzero(~accept)
        if rest.size:
            upper = table.hi_high[b_hi[rest]] * table.hi_low[b_lo[rest]]
            undecided = rest[((v[rest] - table.slack) << _U_BITS) < upper]
            for i in undecided:
                accept[i] = _accept_exact(table.rate * int(b[i]), int(v[i]), source)
        out[pending[accept]] = b[accept]
        pending = pending[~accept]
    return out


def _laplace_digits_block(plan: _LaplacePlan, count: int, source: RandomSource) -> IntArray:
    """``count`` exact discrete Laplace draws: ``S·(2^D·A + Σ_j 2^(o_j)·B_j)``, rejecting ``-0``."""
    out = np.empty(count, dtype=np.int64)
    pending = np.arange(count)
    limit = ((1 << 62) >> plan.top_bits) - 1  # 2^D·A + B < 2^62 fits int64
    while pending.size:
        words: npt.NDArray[np.uint32] = np.frombuffer(source.random_bytes(4 * pending.size), dtype="<u4")
        a = _inverse_magnitudes(plan.top, words, source)
        if a.size and int(a.max()) > limit:  # probability far below 2**-1000 for t <= 2**50
            raise OverflowError("a sample does not fit in int64")
        g = a << plan.top_bits
        for table in plan.digits:
            g += _digit_block(table, pending.size, source) << table.offset
        negative = (words & np.uint32(1)) == 1
        keep = ~(negative & (g == 0))
        out[pending[keep]] = np.where(negative, -g, g)[keep]
        pending = pending[~keep]
    return out


# ---------------------------------------------------------------------------------------------------------
# Huge Gaussian variances: a bucketed envelope
# ---------------------------------------------------------------------------------------------------------
#
# With e_m = exp(-m²/(2σ²)), the discrete Gaussian is X = S·M with a uniform sign S, M >= 0 drawn with
# P[M = m] ∝ e_m, and the draw (S = -1, M = 0) rejected: every x != 0 then has mass ∝ e_|x|/2 (one way,
# S = sign(x), M = |x|), and x = 0 has e_0/2 (only S = +1), so P[x] ∝ exp(-x²/(2σ²)).
#
# Envelope. Fix W = 2^s and write m = jW + r, 0 <= r < W (a bijection of m >= 0 with the pairs (j, r)).
# Draw J with P[J = j] ∝ e_(jW) = exp(-j²/(2σ²/W²)) (a "half-Gaussian" of variance σ²/W², inverted with
# the table machinery above, kind "halfgauss") and R uniform on [0, W), independently: the candidate
# M* = JW + R has P[M* = m] ∝ e_(⌊m/W⌋W) >= e_m, as e decreases. Accept it with probability
# e_m / e_(jW) = exp(-N/(2σ²)), N = m² - (jW)² = r·(2jW + r), an integer in [0, W(2jW + W)). Then
#     P[M* = m, accepted] ∝ e_(jW) · e_m / e_(jW) = e_m,
# so an accepted candidate has exactly the law of M; rejected ones (and -0) are redrawn, and the first
# accepted trial of an iid sequence has the conditional law. With W = 2^(⌊log2 σ⌋ - 8), σ/W is in
# [256, 512): the bucket table has at most ~3 800 entries, exp(-N/(2σ²)) >= exp(-1/16) for every bucket
# the table covers, and about 0.1% of the candidates are rejected.
#
# Acceptance test U < exp(-N/(2σ²)) in int64. Let c = 2^h/(2σ²) with h = max(0, bitlen⌊2σ²⌋ - 27), so
# c <= 2^-26 once h > 0, and N' = ⌊N/2^h⌋: N'·2^h <= N < (N' + 1)·2^h, hence, with E(i) = exp(-c·i),
#     E(N' + 1) < exp(-N/(2σ²)) <= E(N')     (and exp(-N/(2σ²)) = E(N') when h = 0).
# E(i) = E(i_lo)·E(i_hi·2^l) for i = i_hi·2^l + i_lo, and the two tables of a _DigitTable with rate c
# bound both factors by 31-bit integers; the products lo·lo' <= 2^62·E(N' + 1) and hi·hi' >= 2^62·E(N')
# fit int64. With the first b bits v of U: (v + 1)·2^(62 - b) <= lo·lo' proves acceptance,
# v·2^(62 - b) >= hi·hi' proves rejection, and otherwise (probability about 2^-b + 2^-25 for one
# candidate) _accept_exact draws more bits of U against bounds of exp(-N/(2σ²)) itself.
#
# Random words. For s <= 20 a candidate takes one 64-bit word: bits 63..33 are the 31-bit prefix of the
# bucket's uniform, bit 32 the sign S, the next s bits R, the low b = 32 - s >= 12 bits the prefix v of
# the acceptance uniform (8 bytes a draw for the float Gaussian's σ in [2^20, 2^21]: s = 12, b = 20).
# For 20 < s <= 33: a 32-bit word (bucket prefix and sign) and a 64-bit word (R in the top s bits,
# b = 31 bits of v in the low bits). Buckets beyond the table (J >= cap, probability below 2^-39) are
# decided in Python integers by _accept_exact. Everything is exact for every s >= 0 (tests force small
# σ and s); N < 2^62 for every bucket below ``cap`` is checked when a plan is built.

_BUCKET_RATIO_BITS = 8  # W = 2^(⌊log2 σ⌋ - 8), so σ/W in [256, 512)
_BUCKET_MIN_SIGMA2 = _GAUSS_TABLE_MAX_SIGMA2  # the envelope serves σ² above the inversion tables' range
_BUCKET_MAX_SIGMA2 = 1 << 60  # ... up to here (N < 2^62 with room); above, CKS Algorithm 3 on blocks
_ACCEPT_RATE_BITS = 26  # c = 2^h/(2σ²) <= 2^-26
_ONE_WORD_MAX_BITS = 20  # one 64-bit word per candidate while the acceptance prefix keeps >= 12 bits


@dataclass(frozen=True)
class _GaussPlan:
    """Everything :func:`_gauss_bucket_block` needs for one σ² (see the section comment)."""

    sigma2: Fraction
    bucket_bits: int  # s, W = 2^s
    buckets: _InverseTable  # J: P[J = j] ∝ exp(-j²W²/(2σ²)), j >= 0
    cap: int  # buckets j < cap take the int64 path
    accept: _DigitTable  # bounds of 2^31·exp(-c·i), c = 2^h/(2σ²), i < 2^accept.bits
    one_word: bool  # one 64-bit word per candidate (s <= 20), else a 32-bit and a 64-bit word
    v_bits: int  # b: bits of the acceptance uniform in the candidate's words
    slack: int  # > 0 only in tests: the acceptance tests are widened by this many units of 2^-b


_GAUSS_PLANS = _BoundedCache(_PLAN_CACHE_SIZE)  # (σ², s, slack) -> _GaussPlan


def _bucket_bits(s2: Fraction) -> int:
    """``s = max(0, ⌊log2 σ⌋ - 8)``, from ``⌊σ⌋ = isqrt(⌊σ²⌋)``."""
    return max(0, math.isqrt(s2.numerator // s2.denominator).bit_length() - 1 - _BUCKET_RATIO_BITS)


def _bucket_entries(s2: Fraction) -> int:
    """Roughly the table entries a plan builds (its set-up cost): buckets plus the acceptance tables."""
    ratio = math.isqrt(s2.numerator // s2.denominator) >> _bucket_bits(s2)  # ~ σ/W
    return 9 * (ratio + 1) + (1 << 13)


def _gauss_plan(s2: Fraction, bucket_bits: int | None = None, slack: int = 0) -> _GaussPlan:
    """The (cached) plan for σ² = ``s2``; ``bucket_bits`` (default :func:`_bucket_bits`) and ``slack``
    for tests: any ``s >= 0`` is exact, and ``slack`` widens the bucket table's bounds and the
    acceptance tests so that the exact refinements run often."""
    s = _bucket_bits(s2) if bucket_bits is None else bucket_bits
    key = (s2, s, slack)
    plan: _GaussPlan | None = _GAUSS_PLANS.recall(key)
    if plan is not None:
        return plan
    if s > 33:
        raise InvalidParameter(f"bucket_bits={s} must be at most 33")
    width = 1 << s
    buckets = _inverse_table("halfgauss", s2 / (width * width), slack)
    cap = int(buckets.lo_desc.size)  # the magnitudes the table's bounds cover: 0..cap-1
    n_max = (width - 1) * (2 * (cap - 1) * width + width - 1)
    if n_max >= 1 << 62:
        raise InvalidParameter(f"sigma2={s2} with bucket_bits={s}: candidates do not fit int64")
    twice = 2 * s2
    shift = max(0, (twice.numerator // twice.denominator).bit_length() - 1 - _ACCEPT_RATE_BITS)
    accept = _digit_table(twice, shift, max(1, ((n_max >> shift) + 1).bit_length()), slack)
    one_word = s <= _ONE_WORD_MAX_BITS
    v_bits = 32 - s if one_word else _U_BITS
    if not 0 <= slack < 1 << (v_bits - 1):
        raise InvalidParameter(f"slack={slack} must lie in [0, 2**{v_bits - 1})")
    plan = _GaussPlan(s2, s, buckets, cap, accept, one_word, v_bits, slack)
    _GAUSS_PLANS.keep(key, plan)
    return plan


def _gauss_plan_is_cached(s2: Fraction) -> bool:
    return _GAUSS_PLANS.holds((s2, _bucket_bits(s2), 0))


def _gauss_bucket_block(plan: _GaussPlan, count: int, source: RandomSource) -> IntArray:
    """``count`` exact discrete Gaussian draws by the bucketed envelope (rejected candidates redrawn).

    Accepted draws fill the output in order; a rejected candidate is replaced by a later one, which is
    exact because the candidates are iid.
    """
    out = np.empty(count, dtype=np.int64)
    filled = 0
    s, acc, slack = plan.bucket_bits, plan.accept, plan.slack
    low_mask = (1 << acc.low_bits) - 1
    v_shift = 62 - plan.v_bits
    two_s2 = 2 * plan.sigma2
    while filled < count:
        size = count - filled
        words: npt.NDArray[np.uint64] = np.frombuffer(source.random_bytes(8 * size), dtype="<u8")
        if plan.one_word:  # bits 63..33: bucket prefix, 32: sign, then s bits of R, then v
            u: IntArray = np.right_shift(words, np.uint64(33)).view(np.int64)
            negative: BoolArray = (words & np.uint64(1 << 32)) != 0
            r: IntArray = (np.right_shift(words, np.uint64(32 - s)) & np.uint64((1 << s) - 1)).view(np.int64)
            v: IntArray = (words & np.uint64((1 << plan.v_bits) - 1)).view(np.int64)
        else:  # a 32-bit word (bucket prefix, sign) and the 64-bit word (R in the top s bits, 31 bits of v)
            top: npt.NDArray[np.uint32] = np.frombuffer(source.random_bytes(4 * size), dtype="<u4")
            u = np.right_shift(top, np.uint32(1)).astype(np.int64)
            negative = (top & np.uint32(1)) == 1
            r = np.right_shift(words, np.uint64(64 - s)).view(np.int64) if s else np.zeros(size, np.int64)
            v = (words & np.uint64((1 << _U_BITS) - 1)).view(np.int64)
        j = _prefix_magnitudes(plan.buckets, u, source)
        far = np.flatnonzero(j >= plan.cap)
        far_j = [int(x) for x in j[far]]
        j[far] = 0  # decided below in Python integers; keeps the int64 arithmetic in range
        mag = j << s  # jW for now
        n = mag << 1
        n += r
        n *= r  # N = r(2jW + r) = (jW + r)² - (jW)² < 2^62
        if acc.offset:
            n >>= acc.offset  # N' = ⌊N/2^h⌋
            up = n + 1
        else:
            up = n  # h = 0: N' = N exactly, so E(N') itself is the acceptance probability
        mag += r  # jW + r
        lower = acc.lo_high[up >> acc.low_bits]
        lower *= acc.lo_low[up & low_mask]  # <= 2^62·E(N' + 1) (or 2^62·E(N') when h = 0)
        test = v + (1 + slack)
        test <<= v_shift
        accept: BoolArray = test <= lower
        accept[far] = True  # not tested here: decided below
        rest = np.flatnonzero(~accept)
        if rest.size:
            nr = n[rest]
            upper = acc.hi_high[nr >> acc.low_bits] * acc.hi_low[nr & low_mask]  # >= 2^62·E(N')
            for i in rest[((v[rest] - slack) << v_shift) < upper]:
                m, ri = int(mag[i]), int(r[i])
                gamma = Fraction(m * m - (m - ri) ** 2) / two_s2
                accept[i] = _accept_exact(gamma, int(v[i]), source, plan.v_bits)
        for i, jf in zip(far, far_j, strict=True):
            jw, ri = jf << s, int(r[i])
            gamma = Fraction(ri * (2 * jw + ri)) / two_s2
            accept[i] = _accept_exact(gamma, int(v[i]), source, plan.v_bits)
            if accept[i] and jw + ri >= 1 << 62:  # probability far below 2**-1000
                raise OverflowError("a sample does not fit in int64")
            mag[i] = jw + ri if accept[i] else 0
        zero = np.flatnonzero(mag == 0)
        accept[zero[negative[zero]]] = False  # -0 rejected
        np.negative(mag, out=mag, where=negative)
        kept = mag[accept]
        out[filled : filled + kept.size] = kept
        filled += kept.size
    return out
