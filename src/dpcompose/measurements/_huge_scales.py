"""Exact array samplers for huge parameters (internal module of the samplers).

* discrete Laplace with scale > 2048: the geometric split into independent binary digits;
* discrete Gaussian with 2**26 < σ² <= 2**60: a bucketed envelope.

Both build on the inversion tables of :mod:`dpcompose.measurements._inversion` and decide every
comparison exactly, with no floating point on the sampling path (the two section comments below give
the derivations; :mod:`dpcompose.measurements._sampling` chooses the path).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from dpcompose.errors import InvalidParameter
from dpcompose.measurements._inversion import (
    GAUSS_TABLE_MAX_SIGMA2,
    REFINE_BITS,
    U_BITS,
    BoundedCache,
    InverseTable,
    ceil_div,
    exp_neg_bounds,
    inverse_magnitudes,
    inverse_table,
    prefix_magnitudes,
)
from dpcompose.measurements._random import BoolArray, IntArray, RandomSource

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
# Sampling. A (ratio exp(-2^D/t), D chosen so that t/2^D lies in [32, 64)) is inverted with the tables
# of _inversion (kind "geom", ~1400 entries) from a 32-bit word whose bit 0 is the sign S. Each B_j is
# drawn by rejection from the uniform: a uniform candidate b on [0, 2^k_j) is accepted with probability
# ρ_j^b (accepted candidates have P[b] ∝ ρ_j^b exactly); ρ_j^b >= exp(-2^D/t) >= exp(-1/32), so more than
# 97% are accepted. The acceptance U < ρ_j^b uses one 64-bit word: the top k_j bits are b, the low 31 bits
# the prefix v of U. With b = b_hi·2^m + b_lo, integer bounds lo <= 2^31·ρ^(b_lo) <= hi and
# lo' <= 2^31·ρ^(b_hi·2^m) <= hi' (tables of 2^m and 2^(k - m) entries, m = ⌈k/2⌉ <= 13) give
# lo·lo' <= 2^62·ρ^b <= hi·hi' in int64: (v + 1)·2^31 <= lo·lo' proves U < ρ^b, v·2^31 >= hi·hi' proves
# U >= ρ^b, and the rare undecided candidate (probability about 2^-29) draws 32 more bits of U at a time
# against bounds of exp(-b·2^o/t) of ever higher precision, which decides it with probability 1.

DIGIT_MAX_BITS = 26  # bits of one digit B_j (its candidate and the 31-bit prefix share a 64-bit word)
_TOP_SCALE_BITS = 5  # D = ⌊log2 t⌋ - 5, so that the top geometric A has scale t/2^D in [32, 64)
_PLAN_CACHE_SIZE = 8


@dataclass(frozen=True)
class DigitTable:
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
class LaplacePlan:
    """Everything :func:`laplace_digits_block` needs for one scale."""

    scale: Fraction
    top_bits: int  # D
    top: InverseTable  # A: geometric with rate 2^D/t
    digits: tuple[DigitTable, ...]


PLANS = BoundedCache(_PLAN_CACHE_SIZE)  # (scale, D, slack) -> LaplacePlan


def power_bounds(rate: Fraction, count: int, prec: int) -> tuple[IntArray, IntArray]:
    """int64 arrays ``lo[i] <= 2**prec · exp(-rate·i) <= hi[i]`` for ``i < count`` (``prec <= 62``).

    Repeated products of the bounds of ``exp(-rate)`` at ``prec + bitlen(count) + 40`` bits, rounded
    outward, then rounded outward to ``prec`` bits.
    """
    w = prec + count.bit_length() + 40
    one = 1 << w
    r_lo, r_hi = exp_neg_bounds(rate, w)
    e_lo = e_hi = one
    drop = w - prec
    lo, hi = [0] * count, [0] * count
    for i in range(count):
        lo[i] = e_lo >> drop
        hi[i] = ceil_div(e_hi, 1 << drop)
        e_lo, e_hi = (e_lo * r_lo) >> w, ceil_div(e_hi * r_hi, one)
    return np.array(lo, dtype=np.int64), np.array(hi, dtype=np.int64)


def digit_table(scale: Fraction, offset: int, bits: int, slack: int = 0) -> DigitTable:
    """The acceptance bounds of the digit on bits ``[offset, offset + bits)`` of ``G`` at scale ``scale``
    (``slack > 0``, for tests, widens its accept/reject tests)."""
    rate = Fraction(1 << offset) / scale
    m = ceil_div(bits, 2)
    lo_low, hi_low = power_bounds(rate, 1 << m, U_BITS)
    lo_high, hi_high = power_bounds(rate * (1 << m), 1 << (bits - m), U_BITS)
    return DigitTable(offset, bits, m, rate, lo_low, hi_low, lo_high, hi_high, slack)


def laplace_top_bits(scale: Fraction) -> int:
    """``D = max(0, ⌊log2 t⌋ - 5)``."""
    return max(0, (scale.numerator // scale.denominator).bit_length() - 1 - _TOP_SCALE_BITS)


def _digit_split(top_bits: int) -> list[tuple[int, int]]:
    """``(offset, bits)`` of near-equal digits covering ``[0, D)``, each at most ``DIGIT_MAX_BITS``."""
    if top_bits == 0:
        return []
    parts = ceil_div(top_bits, DIGIT_MAX_BITS)
    out, offset = [], 0
    for j in range(parts):
        bits = top_bits // parts + (1 if j < top_bits % parts else 0)
        out.append((offset, bits))
        offset += bits
    return out


def plan_entries(scale: Fraction, top_bits: int) -> int:
    """Roughly the table entries a plan builds (its set-up cost)."""
    top = 22 * (ceil_div(scale.numerator, scale.denominator << top_bits) + 1)
    digits = sum((1 << ceil_div(b, 2)) + (1 << (b // 2)) for _, b in _digit_split(top_bits))
    return top + digits


def laplace_plan(scale: Fraction, top_bits: int | None = None, slack: int = 0) -> LaplacePlan:
    """The (cached) plan for scale ``t``; ``top_bits`` (default ``D = ⌊log2 t⌋ - 5``) and ``slack`` for
    tests: any ``D >= 0`` is exact (a small ``D`` only makes the top table longer, a large one rejects
    more candidates), and ``slack`` widens the digit bounds so that the exact refinement runs often."""
    d = laplace_top_bits(scale) if top_bits is None else top_bits
    key = (scale, d, slack)
    plan: LaplacePlan | None = PLANS.recall(key)
    if plan is not None:
        return plan
    top = inverse_table("geom", Fraction(1 << d) / scale)
    digits = tuple(digit_table(scale, o, b, slack) for o, b in _digit_split(d))
    plan = LaplacePlan(scale, d, top, digits)
    PLANS.keep(key, plan)
    return plan


def plan_is_cached(scale: Fraction) -> bool:
    """Whether the default plan of :func:`laplace_plan` for ``scale`` is cached."""
    return PLANS.holds((scale, laplace_top_bits(scale), 0))


def _accept_exact(rate: Fraction, v: int, source: RandomSource, bits: int = U_BITS) -> bool:
    """Decide ``U < exp(-rate)`` for a uniform ``U`` whose first ``bits`` bits are ``v``, exactly.

    Appends 32 fresh bits of ``U`` at a time and compares with bounds of ``2**prec · exp(-rate)`` at the
    new precision (at most 2 apart), until a comparison is proven.
    """
    value, prec = v, bits
    while True:
        value = (value << REFINE_BITS) | source.randbits(REFINE_BITS)
        prec += REFINE_BITS
        lo, hi = exp_neg_bounds(rate, prec)
        if value + 1 <= lo:
            return True
        if value >= hi:
            return False


def digit_block(table: DigitTable, count: int, source: RandomSource) -> IntArray:
    """``count`` exact draws of the truncated geometric ``P[b] ∝ ρ^b`` on ``[0, 2^bits)`` (by rejection)."""
    out = np.empty(count, dtype=np.int64)
    pending = np.arange(count)
    low_mask = (1 << table.low_bits) - 1
    v_mask = np.uint64((1 << U_BITS) - 1)
    while pending.size:
        words: npt.NDArray[np.uint64] = np.frombuffer(source.random_bytes(8 * pending.size), dtype="<u8")
        b = np.right_shift(words, np.uint64(64 - table.bits)).astype(np.int64)
        v = (words & v_mask).astype(np.int64)
        b_hi, b_lo = b >> table.low_bits, b & low_mask
        accept = ((v + (1 + table.slack)) << U_BITS) <= table.lo_high[b_hi] * table.lo_low[b_lo]
        rest = np.flatnonzero(~accept)
        if rest.size:
            upper = table.hi_high[b_hi[rest]] * table.hi_low[b_lo[rest]]
            undecided = rest[((v[rest] - table.slack) << U_BITS) < upper]
            for i in undecided:
                accept[i] = _accept_exact(table.rate * int(b[i]), int(v[i]), source)
        out[pending[accept]] = b[accept]
        pending = pending[~accept]
    return out


def laplace_digits_block(plan: LaplacePlan, count: int, source: RandomSource) -> IntArray:
    """``count`` exact discrete Laplace draws: ``S·(2^D·A + Σ_j 2^(o_j)·B_j)``, rejecting ``-0``."""
    out = np.empty(count, dtype=np.int64)
    pending = np.arange(count)
    limit = ((1 << 62) >> plan.top_bits) - 1  # 2^D·A + B < 2^62 fits int64
    while pending.size:
        words: npt.NDArray[np.uint32] = np.frombuffer(source.random_bytes(4 * pending.size), dtype="<u4")
        a = inverse_magnitudes(plan.top, words, source)
        if a.size and int(a.max()) > limit:  # probability far below 2**-1000 for t <= 2**50
            raise OverflowError("a sample does not fit in int64")
        g = a << plan.top_bits
        for table in plan.digits:
            g += digit_block(table, pending.size, source) << table.offset
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
# the tables of _inversion, kind "halfgauss") and R uniform on [0, W), independently: the candidate
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
# E(i) = E(i_lo)·E(i_hi·2^l) for i = i_hi·2^l + i_lo, and the two tables of a DigitTable with rate c
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
BUCKET_MIN_SIGMA2 = GAUSS_TABLE_MAX_SIGMA2  # the envelope serves σ² above the inversion tables' range
BUCKET_MAX_SIGMA2 = 1 << 60  # ... up to here (N < 2^62 with room); above, CKS Algorithm 3 on blocks
_ACCEPT_RATE_BITS = 26  # c = 2^h/(2σ²) <= 2^-26
ONE_WORD_MAX_BITS = 20  # one 64-bit word per candidate while the acceptance prefix keeps >= 12 bits


@dataclass(frozen=True)
class GaussPlan:
    """Everything :func:`gauss_bucket_block` needs for one σ² (see the section comment)."""

    sigma2: Fraction
    bucket_bits: int  # s, W = 2^s
    buckets: InverseTable  # J: P[J = j] ∝ exp(-j²W²/(2σ²)), j >= 0
    cap: int  # buckets j < cap take the int64 path
    accept: DigitTable  # bounds of 2^31·exp(-c·i), c = 2^h/(2σ²), i < 2^accept.bits
    one_word: bool  # one 64-bit word per candidate (s <= 20), else a 32-bit and a 64-bit word
    v_bits: int  # b: bits of the acceptance uniform in the candidate's words
    slack: int  # > 0 only in tests: the acceptance tests are widened by this many units of 2^-b


GAUSS_PLANS = BoundedCache(_PLAN_CACHE_SIZE)  # (σ², s, slack) -> GaussPlan


def _bucket_bits(s2: Fraction) -> int:
    """``s = max(0, ⌊log2 σ⌋ - 8)``, from ``⌊σ⌋ = isqrt(⌊σ²⌋)``."""
    return max(0, math.isqrt(s2.numerator // s2.denominator).bit_length() - 1 - _BUCKET_RATIO_BITS)


def bucket_entries(s2: Fraction) -> int:
    """Roughly the table entries a plan builds (its set-up cost): buckets plus the acceptance tables."""
    ratio = math.isqrt(s2.numerator // s2.denominator) >> _bucket_bits(s2)  # ~ σ/W
    return 9 * (ratio + 1) + (1 << 13)


def gauss_plan(s2: Fraction, bucket_bits: int | None = None, slack: int = 0) -> GaussPlan:
    """The (cached) plan for σ² = ``s2``; ``bucket_bits`` (default :func:`_bucket_bits`) and ``slack``
    for tests: any ``s >= 0`` is exact, and ``slack`` widens the bucket table's bounds and the
    acceptance tests so that the exact refinements run often."""
    s = _bucket_bits(s2) if bucket_bits is None else bucket_bits
    key = (s2, s, slack)
    plan: GaussPlan | None = GAUSS_PLANS.recall(key)
    if plan is not None:
        return plan
    if s > 33:
        raise InvalidParameter(f"bucket_bits={s} must be at most 33")
    width = 1 << s
    buckets = inverse_table("halfgauss", s2 / (width * width), slack)
    cap = int(buckets.lo_desc.size)  # the magnitudes the table's bounds cover: 0..cap-1
    n_max = (width - 1) * (2 * (cap - 1) * width + width - 1)
    if n_max >= 1 << 62:
        raise InvalidParameter(f"sigma2={s2} with bucket_bits={s}: candidates do not fit int64")
    twice = 2 * s2
    shift = max(0, (twice.numerator // twice.denominator).bit_length() - 1 - _ACCEPT_RATE_BITS)
    accept = digit_table(twice, shift, max(1, ((n_max >> shift) + 1).bit_length()), slack)
    one_word = s <= ONE_WORD_MAX_BITS
    v_bits = 32 - s if one_word else U_BITS
    if not 0 <= slack < 1 << (v_bits - 1):
        raise InvalidParameter(f"slack={slack} must lie in [0, 2**{v_bits - 1})")
    plan = GaussPlan(s2, s, buckets, cap, accept, one_word, v_bits, slack)
    GAUSS_PLANS.keep(key, plan)
    return plan


def gauss_plan_is_cached(s2: Fraction) -> bool:
    """Whether the default plan of :func:`gauss_plan` for σ² = ``s2`` is cached."""
    return GAUSS_PLANS.holds((s2, _bucket_bits(s2), 0))


def gauss_bucket_block(plan: GaussPlan, count: int, source: RandomSource) -> IntArray:
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
            v = (words & np.uint64((1 << U_BITS) - 1)).view(np.int64)
        j = prefix_magnitudes(plan.buckets, u, source)
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
