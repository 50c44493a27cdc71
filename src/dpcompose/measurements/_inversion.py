"""Exact inversion with integer bounds: one 32-bit word per draw (internal module of the samplers).

The path the array samplers of :mod:`dpcompose.measurements._sampling` take for small and moderate
parameters, and the tables the paths for huge parameters (:mod:`dpcompose.measurements._huge_scales`)
build on: tail bounds by integer arithmetic only, the cached inversion tables with their guide tables,
and the exact refinement of a draw its first bits leave undecided. No floating point on the sampling
path (see :mod:`dpcompose.measurements._sampling`).
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpcompose.measurements._random import IntArray, RandomSource

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

U_BITS = 31  # the first bits of U: the top 31 bits of a 32-bit random word; bit 0 is the sign
REFINE_BITS = 32  # bits of U added per refinement of an undecided comparison
_TAIL_GUARD = 8  # the neglected tail mass is at most 2**-(p + _TAIL_GUARD)
GAUSS_TABLE_MAX_SIGMA2 = 1 << 26  # inversion tables for σ <= 8192 (at most ~85 000 entries)
LAPLACE_TABLE_MAX_SCALE = 1 << 11  # and for Laplace scales <= 2048 (at most ~90 000 entries)
TABLE_CACHE_SIZE = 8  # inversion tables kept per process (each at most a few MB)
_INVERSE_BLOCK = 1 << 16  # draws per block of the inversion sampler (small blocks stay in cache)


def ceil_div(a: int, b: int) -> int:
    """``⌈a/b⌉`` for integers, exactly."""
    return -(-a // b)


def exp_neg_bounds(x: Fraction, w: int) -> tuple[int, int]:
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
    hi = ceil_div(high.numerator * (1 << work), high.denominator)
    for _ in range(j):
        lo = (lo * lo) >> work
        hi = ceil_div(hi * hi, 1 << work)
    drop = work - w
    return lo >> drop, ceil_div(hi, 1 << drop)


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
    w = prec + ceil_div(s2.numerator, s2.denominator).bit_length() + 40
    one = 1 << w
    a_lo, a_hi = exp_neg_bounds(1 / (2 * s2), w)
    b_lo, b_hi = (a_lo * a_lo) >> w, ceil_div(a_hi * a_hi, one)
    e_lo = e_hi = one
    r_lo, r_hi = a_lo, a_hi
    w_lo, w_hi = [zero_weight * one], [zero_weight * one]
    target = 1 << (w - prec - _TAIL_GUARD - 1)
    while True:
        if r_hi < one:
            tail = ceil_div(e_hi * r_hi, one - r_hi)
            if len(w_lo) > 1 and 2 * tail <= target:
                break
        e_lo, e_hi = (e_lo * r_lo) >> w, ceil_div(e_hi * r_hi, one)
        r_lo, r_hi = (r_lo * b_lo) >> w, ceil_div(r_hi * b_hi, one)
        w_lo.append(2 * e_lo)
        w_hi.append(2 * e_hi)
    size = len(w_lo)  # K + 1 weights, m = 0..K
    s_lo, s_hi = [0] * (size + 1), [2 * tail] * (size + 1)
    for m in range(size - 1, -1, -1):
        s_lo[m] = s_lo[m + 1] + w_lo[m]
        s_hi[m] = s_hi[m + 1] + w_hi[m]
    z_lo, z_hi = s_lo[0], s_hi[0]
    lo = [(s_lo[k] << prec) // z_hi for k in range(1, size + 1)]
    hi = [ceil_div(s_hi[k] << prec, z_lo) for k in range(1, size + 1)]
    return lo, hi


def _laplace_tail_bounds(t: Fraction, prec: int) -> tuple[list[int], list[int]]:
    """Bounds ``lo[k-1] <= 2**prec · P[|X| >= k] <= hi[k-1]``, ``k = 1..K+1``, X discrete Laplace scale t.

    ``P[|X| >= k] = 2q^k/(1 + q)`` with ``q = exp(-1/t)`` for ``k >= 1``; fixed-point bounds of ``q^k``
    come from repeated products rounded outward. The last entry is the first with ``hi <= 1``.
    """
    w = prec + ceil_div(t.numerator, t.denominator).bit_length() + 40
    one = 1 << w
    q_lo, q_hi = exp_neg_bounds(1 / t, w)
    e_lo, e_hi = q_lo, q_hi
    lo: list[int] = []
    hi: list[int] = []
    while True:
        lo.append((2 * e_lo << prec) // (one + q_hi))
        hi.append(ceil_div(2 * e_hi << prec, one + q_lo))
        if hi[-1] <= 1:
            return lo, hi
        e_lo, e_hi = (e_lo * q_lo) >> w, ceil_div(e_hi * q_hi, one)


def _geom_tail_bounds(rate: Fraction, prec: int) -> tuple[list[int], list[int]]:
    """Bounds ``lo[k-1] <= 2**prec · exp(-rate·k) <= hi[k-1]``, ``k = 1..K+1`` (a geometric's tails).

    ``P[A >= k] = r^k`` with ``r = exp(-rate)``; fixed-point bounds of ``r^k`` come from repeated products
    rounded outward. The last entry is the first with ``hi <= 1``.
    """
    w = prec + ceil_div(rate.denominator, rate.numerator).bit_length() + 40
    one = 1 << w
    r_lo, r_hi = exp_neg_bounds(rate, w)
    e_lo, e_hi = r_lo, r_hi
    lo: list[int] = []
    hi: list[int] = []
    while True:
        lo.append(e_lo >> (w - prec))
        hi.append(ceil_div(e_hi, 1 << (w - prec)))
        if hi[-1] <= 1:
            return lo, hi
        e_lo, e_hi = (e_lo * r_lo) >> w, ceil_div(e_hi * r_hi, one)


def _half_gauss_tail_bounds(s2: Fraction, prec: int) -> tuple[list[int], list[int]]:
    """Tail bounds of the half-Gaussian ``P[M = m] ∝ exp(-m²/(2·s2))`` on ``m >= 0`` (see above)."""
    return _gauss_tail_bounds(s2, prec, zero_weight=2)


@functools.lru_cache(maxsize=2 * TABLE_CACHE_SIZE)
def tail_bounds(kind: str, param: Fraction, prec: int) -> tuple[Any, Any]:
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
    ``REFINE_BITS`` fresh bits to ``U`` and raising the precision: this is the inverse CDF of the uniform
    real ``U`` whose first bits are ``u``, i.e. exactly the conditional law given those bits. ``slack``
    (tests only) widens the first bounds, so that more bits are drawn often.
    """
    value, prec, k = u, U_BITS, count + 1
    while True:
        lo, hi = tail_bounds(kind, param, prec)
        low, high = (int(lo[k - 1]), int(hi[k - 1])) if k <= len(lo) else (0, int(hi[-1]))
        if prec == U_BITS:
            low, high = low - slack, high + slack
        if value + 1 <= low:
            count, k = k, k + 1
        elif value >= high:
            return count
        else:
            value = (value << REFINE_BITS) | source.randbits(REFINE_BITS)
            prec += REFINE_BITS


@dataclass(frozen=True)
class InverseTable:
    """Vectorised inversion data for one distribution (see :func:`inverse_table`)."""

    kind: str
    param: Fraction
    lo_desc: IntArray  # lo_desc[i] <= 2**31·T_{i+1}; a final 0 stands for every later k
    hi_desc: IntArray  # hi_desc[i] >= 2**31·T_{i+1}; non-increasing
    lo_asc: IntArray  # lo_desc reversed, for searchsorted
    guide: IntArray  # the magnitude of every u in bucket u >> shift, or -1 if the bucket is undecided
    shift: int
    slack: int  # > 0 only in tests: bounds widened by this much


class BoundedCache(OrderedDict[Any, Any]):
    """A least-recently-used map of at most ``size`` set-up objects (tables, plans), thread-safe."""

    def __init__(self, size: int = TABLE_CACHE_SIZE) -> None:
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


TABLES = BoundedCache(TABLE_CACHE_SIZE)  # (kind, param, slack) -> InverseTable
_TABLES_LOCK = threading.Lock()


def inverse_table(kind: str, param: Fraction, slack: int = 0) -> InverseTable:
    """The (cached, at most ``TABLE_CACHE_SIZE`` kept) inversion table; ``slack`` widens every bound.

    ``slack > 0`` is for tests only: wider bounds are still true bounds, so the sampler stays exact while
    the exact fallback :func:`_resolve` runs often.
    """
    key = (kind, param, slack)
    table: InverseTable | None = TABLES.recall(key)
    if table is not None:
        return table
    lo, hi = tail_bounds(kind, param, U_BITS)
    top = 1 << U_BITS
    lo_desc = np.append(np.maximum(lo - slack, 0), 0)
    hi_desc = np.minimum(np.append(hi, hi[-1]) + slack, top)
    lo_asc = lo_desc[::-1].copy()
    hi_asc = hi_desc[::-1].copy()
    g = min(max(lo_desc.size.bit_length() + 4, 8), 18)
    shift = U_BITS - g
    starts = np.arange(1 << g, dtype=np.int64) << shift
    ends = starts + ((1 << shift) - 1)
    a_end = lo_asc.size - np.searchsorted(lo_asc, ends, side="right")  # proven count at the bucket's end
    b_start = hi_asc.size - np.searchsorted(hi_asc, starts, side="right")  # possible count at its start
    guide = np.where(a_end == b_start, a_end, -1).astype(np.int64)
    table = InverseTable(kind, param, lo_desc, hi_desc, lo_asc, guide, shift, slack)
    TABLES.keep(key, table)
    return table


def table_is_cached(kind: str, param: Fraction) -> bool:
    """Whether the inversion table of ``kind`` at ``param`` (without slack) is cached."""
    return TABLES.holds((kind, param, 0))


def inverse_block(table: InverseTable, count: int, source: RandomSource) -> IntArray:
    """``count`` exact draws by inversion: one 32-bit word each (31 bits of ``U``, one sign bit)."""
    words: npt.NDArray[np.uint32] = np.frombuffer(source.random_bytes(4 * count), dtype="<u4")
    mag = inverse_magnitudes(table, words, source)
    negative = (words & np.uint32(1)) == 1
    out: IntArray = np.where(negative, -mag, mag)
    return out


def inverse_magnitudes(table: InverseTable, words: npt.NDArray[np.uint32], source: RandomSource) -> IntArray:
    """The magnitudes ``#{k >= 1: U < T_k}`` of the 31-bit prefixes ``words >> 1`` (bit 0 is ignored)."""
    u: IntArray = np.right_shift(words, np.uint32(32 - U_BITS)).astype(np.int64)
    return prefix_magnitudes(table, u, source)


def prefix_magnitudes(table: InverseTable, u: IntArray, source: RandomSource) -> IntArray:
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


def fill_exact(size: int, draw: Any) -> IntArray:
    """Concatenate ``draw(count)`` over blocks of at most ``_INVERSE_BLOCK`` (every draw is kept)."""
    if size <= _INVERSE_BLOCK:
        first: IntArray = draw(size)
        return first
    out = np.empty(size, dtype=np.int64)
    for start in range(0, size, _INVERSE_BLOCK):
        need = min(size - start, _INVERSE_BLOCK)
        out[start : start + need] = draw(need)
    return out
