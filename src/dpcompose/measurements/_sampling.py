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
  guide tables: Chen and Asau 1974). Tables are cached per parameter (at most eight); "or cached" holds
  for the secure source only — a seeded source picks the algorithm by the request alone, so a seed gives
  the same draws whatever tables the process built before. The tables and
  the refinement are in :mod:`dpcompose.measurements._inversion`.
* **digit split** (discrete Laplace with scale > 2048, when the request pays for its tables or they are
  cached): ``X = S·G`` with a random sign ``S`` (``-0`` rejected) and ``G`` geometric, split exactly into
  independent parts ``G = 2^D·A + Σ_j 2^(o_j)·B_j``: ``A`` geometric of scale ``t/2^D ∈ [32, 64)`` by
  the inversion above, each binary digit ``B_j`` (a truncated geometric) by rejection from a uniform
  candidate with an int64 bound test and the same exact refinement (see the section "Huge Laplace
  scales" of :mod:`dpcompose.measurements._huge_scales`). About 12 random bytes and a dozen numpy passes
  per draw, at any scale up to 2**50.
* **bucketed envelope** (discrete Gaussian with 2**26 < σ² <= 2**60, when the request pays for its
  tables or they are cached): ``X = S·M`` with ``-0`` rejected, ``M = JW + R`` drawn from the envelope
  ``P[J = j] ∝ exp(-(jW)²/(2σ²))`` (inversion as above) times a uniform offset ``R < W = 2^s``,
  ``W ≈ σ/256``, accepted with probability ``exp(-(M² - (JW)²)/(2σ²)) >= exp(-1/16)`` by an int64 bound
  test and the same exact refinement (see the section "Huge Gaussian variances" of
  :mod:`dpcompose.measurements._huge_scales`). One 64-bit random word per draw for σ < 2**29.
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

import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose._validation import check_nonnegative_int
from dpcompose.errors import InvalidParameter
from dpcompose.measurements._huge_scales import (
    BUCKET_MAX_SIGMA2,
    BUCKET_MIN_SIGMA2,
    bucket_entries,
    gauss_bucket_block,
    gauss_plan,
    gauss_plan_is_cached,
    laplace_digits_block,
    laplace_plan,
    laplace_top_bits,
    plan_entries,
    plan_is_cached,
)
from dpcompose.measurements._inversion import (
    GAUSS_TABLE_MAX_SIGMA2,
    LAPLACE_TABLE_MAX_SCALE,
    fill_exact,
    inverse_block,
    inverse_table,
    table_is_cached,
)
from dpcompose.measurements._random import (
    AnyIntArray,
    BoolArray,
    BytesSource,
    GeneratorSource,
    IntArray,
    RandomSource,
    RecordingSource,
    SecureSource,
    SeededSource,
    caller_or_secure_source,
    caller_source,
    uniform_words,
)

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

_DEFAULT_SOURCE = SecureSource()


def _source(source: RandomSource | None) -> RandomSource:
    return _DEFAULT_SOURCE if source is None else source


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


def uniform_below(m: int, count: int, source: RandomSource) -> IntArray:
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


def bern_ratio(num: AnyIntArray, den: AnyIntArray | int, source: RandomSource) -> BoolArray:
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


def bern_exp_minus_one(count: int, source: RandomSource) -> BoolArray:
    """``count`` independent ``Bernoulli(exp(-1))`` draws, exactly (CKS Algorithm 1 with γ = 1).

    Algorithm 1 stops at the first ``k`` whose ``Bernoulli(1/k)`` fails and returns ``k`` odd; so
    ``P[K > k] = 1/k!``. With ``u`` uniform on ``[0, 13·7!)`` (16 random bits, rejection 1/4096),
    ``K > k ⇔ u < 13·7!/k!`` for ``k <= 7`` exactly; the rare ``K > 7`` (``u < 13``) continue the loop.
    """
    m = 13 * math.factorial(7)  # 65520 <= 2**16
    u = uniform_below(m, count, source)
    k = np.ones(count, dtype=np.int64)
    for j in range(1, 8):
        k += u < m // math.factorial(j)
    going = np.flatnonzero(k == 8)
    kk = 8
    while going.size:
        stop = uniform_below(kk, going.size, source) != 0  # Bernoulli(1/kk) failed
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
        ok = bern_exp_minus_one(going.size, source)
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
            first = uniform_below(kk, going.size, source) == 0
            k[going[~first]] = kk
            going = going[first]
        if going.size:
            d: Any = den if den_arr is None else den_arr[going]
            second = bern_ratio(num[going], d, source)
            k[going[~second]] = kk
            going = going[second]
        kk += 1
    odd: BoolArray = (k % 2) == 1
    return odd


def bern_exp(num: AnyIntArray, den: AnyIntArray | int, source: RandomSource) -> BoolArray:
    """``Bernoulli(exp(-num/den))`` for ``num >= 0``: ⌊γ⌋ draws of ``exp(-1)`` and one of the fraction."""
    whole = num // den
    result = _bern_exp_frac(num - whole * den, den, source)
    going = np.flatnonzero(result & (whole > 0))
    remaining = whole[going]
    while going.size:
        ok = bern_exp_minus_one(going.size, source)
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


def laplace_block(n: int, d: int, count: int, source: RandomSource) -> IntArray:
    """About ``count`` (possibly fewer) exact draws of the discrete Laplace of scale ``n/d`` (CKS Alg. 2)."""
    u = uniform_below(n, count, source)
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


def fill(size: int, draw: Any) -> IntArray:
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
    "Huge Laplace scales" of :mod:`dpcompose.measurements._huge_scales`:
    ``X = S·(2^D·A + Σ_j 2^(o_j)·B_j)`` with independent parts, ``-0`` rejected). Otherwise CKS 2020
    Algorithm 2 run on whole blocks: ``U`` uniform below the numerator ``n`` of ``scale = n/d``, kept with
    probability ``exp(-U/n)``; ``V`` geometric with ``P[V >= v] = e^(-v)``; ``Y = ⌊(U + nV)/d⌋``; a random
    sign, rejecting ``-0``. Keeping the first accepted draws of a block is exact, because the accepted
    draws are independent of the acceptance pattern.

    Source: Canonne, Kamath, Steinke 2020, Algorithm 2; inversion: Devroye 1986, "Non-Uniform Random
    Variate Generation", Chapter III; the digit split is the factorisation
    ``(1 - q)q^(La + b) = (1 - q^L)(q^L)^a · (1 - q)q^b/(1 - q^L)`` (derived in that section).

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
    cached = isinstance(src, SecureSource)  # (a seeded source decides by size alone: see _use_table)
    if t <= LAPLACE_TABLE_MAX_SCALE and _use_table("laplace", t, size, 22 * (n // d + 1), cached):
        table = inverse_table("laplace", t)
        return fill_exact(size, lambda count: inverse_block(table, count, src))
    big = size > _SCALAR_BELOW and t > LAPLACE_TABLE_MAX_SCALE
    if big and ((cached and plan_is_cached(t)) or size >= 2 * plan_entries(t, laplace_top_bits(t))):
        plan = laplace_plan(t)
        return fill_exact(size, lambda count: laplace_digits_block(plan, count, src))
    if n > _INT64_SAFE or size <= _SCALAR_BELOW:
        # uniform draws below n need more than one word, or the block machinery costs more than it saves
        # for a handful of draws (a scalar query): use the scalar algorithm, the same distribution
        return np.array([sample_discrete_laplace(t, src) for _ in range(size)], dtype=np.int64)
    return fill(size, lambda count: laplace_block(n, d, count, src))


def _use_table(kind: str, param: Fraction, size: int, entries: int, cached: bool) -> bool:
    """Use an inversion table when it is cached (and ``cached`` allows it), or build one when ``size``
    amortises its set-up cost. A seeded source passes ``cached=False``: which algorithm draws (and so which
    numbers a seed gives) then depends on the call alone, not on the tables earlier calls in the process
    happened to build — the same seed gives the same draws in any process."""
    return (cached and table_is_cached(kind, param)) or (size > _SCALAR_BELOW and size >= 2 * entries)


_SCALAR_BELOW = 8
"""Below this many draws, the batch samplers use the scalar algorithm (about 10× faster for one draw)."""


def _gaussian_centre(s2: Fraction) -> Fraction:
    """The constant ``c = σ²/t`` of the batch path: ``⌊σ⌋`` for σ >= 1 (``t ∈ [σ, 2σ)``), else σ² (t = 1)."""
    root = math.isqrt(s2.numerator // s2.denominator)  # ⌊σ⌋
    return Fraction(root) if root >= 1 else s2


def gaussian_block(s2: Fraction, count: int, source: RandomSource) -> IntArray:
    """About ``count`` (possibly fewer) exact discrete Gaussian draws of variance ``s2`` (CKS Alg. 3 on a
    block): discrete Laplace proposals of scale ``s2/c`` (:func:`_gaussian_centre`), each kept with
    probability ``exp(-(|y| - c)²/(2·s2))``."""
    a, b = s2.numerator, s2.denominator
    c = _gaussian_centre(s2)
    p, q = c.numerator, c.denominator
    t = s2 / c  # Laplace scale, so that σ²/t = c
    if t > LAPLACE_TABLE_MAX_SCALE:  # huge σ: the digit split draws the Laplace proposals
        y = fill_exact(count, lambda n: laplace_digits_block(laplace_plan(t), n, source))
    else:
        y = laplace_block(t.numerator, t.denominator, count, source)
    # γ = (|y| - c)² / (2σ²) = b·(q|y| - p)² / (2a·q²)
    den = 2 * a * q * q
    fits = den < _SHIFT_SAFE and (q * (int(np.abs(y).max()) if y.size else 0) + p) ** 2 * b < _INT64_SAFE
    dist: AnyIntArray = q * np.abs(y) - p if fits else q * np.abs(y).astype(object) - p
    accept = bern_exp(b * dist * dist, den, source)
    return y[accept]


def discrete_gaussian_array(
    sigma2: Fraction | int, size: int, source: RandomSource | None = None
) -> IntArray:
    """``size`` independent exact draws with ``P[x] ∝ exp(-x²/(2·sigma2))``, as an int64 array.

    For ``sigma2 <= 2**26`` (when ``size`` pays for a table, or one is cached): exact inversion of
    ``P[|X| >= k] = Σ_{m>=k} w_m / Σ_{m>=0} w_m`` (``w_0 = 1``, ``w_m = 2exp(-m²/(2σ²))``) with integer
    bounds and a random sign (see the module docstring). For ``2**26 < sigma2 <= 2**60`` (likewise when
    ``size`` pays for the tables, about twice their ~12 000 entries, or they are cached): the exact
    bucketed envelope (section "Huge Gaussian variances" of :mod:`dpcompose.measurements._huge_scales`:
    ``M = JW + R`` with ``J`` from a table of ``P[J = j] ∝ exp(-(jW)²/(2σ²))``, ``R`` uniform below
    ``W = 2^s``, kept with probability ``exp(-(M² - (JW)²)/(2σ²))``, a random sign, ``-0`` rejected).
    Otherwise CKS 2020 Algorithm 3 on whole blocks: a discrete Laplace draw ``Y`` of scale ``t`` kept with
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
        >>> bool((abs(y) < 12 * 2**20).all()), gauss_plan_is_cached(Fraction(2**40))
        (True, True)
    """
    s2 = _positive_rational(sigma2, "sigma2")
    check_nonnegative_int(size, "size")
    if s2 > 1 << 80:
        raise InvalidParameter(f"sigma2={sigma2!r} must be at most 2**80 (samples must fit in int64)")
    src = _source(source)
    t = s2 / _gaussian_centre(s2)
    cached = isinstance(src, SecureSource)  # (a seeded source decides by size alone: see _use_table)
    if s2 <= GAUSS_TABLE_MAX_SIGMA2 and _use_table("gauss", s2, size, 9 * (math.isqrt(int(s2)) + 1), cached):
        table = inverse_table("gauss", s2)
        return fill_exact(size, lambda count: inverse_block(table, count, src))
    envelope = BUCKET_MIN_SIGMA2 < s2 <= BUCKET_MAX_SIGMA2 and size > _SCALAR_BELOW
    if envelope and ((cached and gauss_plan_is_cached(s2)) or size >= 2 * bucket_entries(s2)):
        plan = gauss_plan(s2)
        return fill_exact(size, lambda count: gauss_bucket_block(plan, count, src))
    if size <= _SCALAR_BELOW or (t.numerator > _INT64_SAFE):
        return np.array([sample_discrete_gaussian(s2, src) for _ in range(size)], dtype=np.int64)
    return fill(size, lambda count: gaussian_block(s2, count, src))
