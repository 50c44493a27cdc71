"""A long-double DFT of the head of the spectrum, for long compositions (a tighter certified bound there)."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import numpy.typing as npt

from dpcompose.accounting._pld.floats import (
    fft_componentwise,
    fft_underflow,
    gamma,
    gamma_up,
    norm1_up,
    rounding_rel,
)

ComplexArray = npt.NDArray[np.complex128]
FloatArray = npt.NDArray[np.float64]


LD_MIN_POWER = 4  # vectors raised to a smaller power keep their double spectrum


LD_MAX_FREQ = 256  # at most this many low frequencies are recomputed in extended precision


LD_WIDE_FREQ = 4096  # ... or this many where that costs at most LD_CHEAP_WORK (frequencies × head entries)


LD_CHEAP_WORK = 1_000_000


LD_WIDE_GAIN = 4.0  # the wide set is used only where the narrow one leaves this many times the floor


LD_MAX_WORK = 4_000_000  # ... and only if (frequencies × non-zero inputs) is at most this


_LD_U = float(np.finfo(np.longdouble).epsneg)  # unit roundoff of numpy's long double


LD_OK = _LD_U < 2.0**-60  # extended precision available (x87 80-bit or quad)


_LD_FUNC = 2.0**9 * _LD_U  # assumed relative accuracy of long double cosl/sinl/expl/logl/hypotl/atan2l


def _ld_sum_rows(v: npt.NDArray[Any]) -> tuple[npt.NDArray[Any], int]:
    """Long double sums of the rows of a matrix, each in two levels (blocks of 256, then the block sums),
    and the m of their error bound γ_m·Σ|vᵢ| (Higham 2002, eq. (4.4), for each level in any order)."""
    rows, n = v.shape
    blk = 256
    pad = (-n) % blk
    if pad:
        v = np.concatenate([v, np.zeros((rows, pad), dtype=v.dtype)], axis=1)
    part = v.reshape(rows, -1, blk).sum(axis=2)
    return part.sum(axis=1), blk + part.shape[1]


def ld_dft(
    x: FloatArray, size: int, count: int, head: tuple[int, int] | None = None
) -> tuple[npt.NDArray[np.clongdouble], FloatArray]:
    """The first ``count`` outputs of the length-``size`` DFT of ``x`` (Σₙ xₙe^{−2πi jn/size}) in long
    double, and bounds on their absolute errors.

    With m = jn mod size (exact integers) split as m = a·B + b, e^{−2πi m/size} is the product of two table
    entries computed by cosl/sinl (assumed within 2^9 ulps) at angles 2π·aB/size and 2π·b/size (relative
    error ≤ 2u_ld each; |d e^{iθ}/dθ| = 1), so each factor has relative error ≤ 2(ε_f + 4πu_ld) + √2γ₂; the
    products and the two-level sum (:func:`_ld_sum_rows`) add the rest (Higham 2002, eq. (4.4), Lemma 3.5).
    (For sizes up to ``_LD_TABLE_MAX`` the products are tabulated once per size: :func:`ld_unit_roots`.)

    Only the *head* of ``x`` is summed so — the shortest index range outside which the entries' ℓ₁ mass is
    at most ``LD_HEAD``·‖x‖₁ (``head``, where the caller has it already: :func:`head_range`). The rest,
    the tails, of small ℓ₁ mass ‖t‖₁, is summed in double: directly where its nonzero entries are few
    (``count`` × their number at most ``size``, cheaper than a transform of the whole window; a thin step's
    tail), with the table's roots rounded to double (within u more) and each output within
    (ρ + 2u + γₙ)·‖t‖₁ per part, ρ the long double roots' bound below; otherwise by the double real FFT,
    whose every output is within τ·‖t‖₁ (:func:`fft_componentwise`). Either is small because ‖t‖₁ is;
    adding it to the head's sum rounds once more in long double.
    """
    ld = np.longdouble
    a, b = head_range(x, LD_HEAD) if head is None else head
    nz = np.flatnonzero(x)
    in_head = (nz >= a) & (nz < b)
    tail_nz = nz[~in_head]
    nz = nz[in_head]
    xl = x[nz].astype(ld)
    roots = ld_unit_roots(size) if size <= _LD_TABLE_MAX else None
    if roots is None:
        t_hi, t_lo, blk = ld_root_factors(size)
    out = np.empty(count, dtype=np.clongdouble)
    m_terms = 0
    rows = max(1, (1 << 16) // max(1, nz.size))  # frequencies per pass (a few MB of long doubles)
    for j0 in range(0, count, rows):
        js = np.arange(j0, min(count, j0 + rows), dtype=np.int64)
        m = (js[:, None] * nz[None, :]) % size  # exact: j·n < 2**63
        if roots is None:
            w = t_hi[m // blk] * t_lo[m % blk]
            w_re, w_im = w.real, w.imag
        else:
            w_re, w_im = roots[0][m], roots[1][m]
        re, m1 = _ld_sum_rows(xl * w_re)
        im, m2 = _ld_sum_rows(xl * w_im)
        out[j0 : j0 + js.size] = re + 1j * im
        m_terms = max(m_terms, m1, m2)
    u = _LD_U
    g2 = math.sqrt(2) * 2 * u / (1 - 2 * u)
    per_term = 2 * (_LD_FUNC + 8 * math.pi * u) + g2 + 4 * u
    sum_rel = (m_terms + 2) * u / (1 - (m_terms + 2) * u)
    n1 = gamma_up(float(np.sum(np.abs(x[a:b]))), b - a + 1)
    errs = np.full(count, n1 * (per_term + sum_rel) * 2 * (1 + 1e-6) + 5e-324)  # (× 2: real and imaginary)
    if tail_nz.size and roots is not None and count * tail_nz.size <= size:
        tv = x[tail_nz]
        t1 = norm1_up(tv)
        re64, im64 = _unit_roots64(size)
        for j0 in range(0, count, rows):
            js = np.arange(j0, min(count, j0 + rows), dtype=np.int64)
            m = (js[:, None] * tail_nz[None, :]) % size
            out[j0 : j0 + js.size] += np.sum(tv * re64[m], axis=1).astype(ld) + 1j * np.sum(
                tv * im64[m], axis=1
            ).astype(ld)
        # each part: the roots (long double bound, then rounded to double), the product, the double sum
        # (Higham 2002, Lemma 3.1: any order), then the long double addition; a product or partial sum in
        # the subnormal range may lose up to 2**-1075 more (as in a tail of 5e-324 entries)
        per_t = per_term + rounding_rel(2) + gamma(tail_nz.size + 1)
        errs = errs + t1 * per_t * 2 * (1 + 1e-6) + (n1 + t1) * 4 * u + 4 * tail_nz.size * 5e-324
    elif a > 0 or b < x.size:
        t = x.copy()
        t[a:b] = 0.0
        t1 = norm1_up(t)
        spec = np.fft.rfft(t, size)[:count]
        out += spec.real.astype(ld) + 1j * spec.imag.astype(ld)
        # the FFT's componentwise bound (real and imaginary parts within it), the long double addition
        errs = errs + t1 * fft_componentwise(size) * 2 + (n1 + t1) * 4 * u + fft_underflow(size)
    return out, errs


@functools.lru_cache(maxsize=3)
def _unit_roots64(size: int) -> tuple[FloatArray, FloatArray]:
    """:func:`ld_unit_roots` rounded to double (each part within u of the long double one)."""
    re, im = ld_unit_roots(size)
    re64, im64 = re.astype(np.float64), im.astype(np.float64)
    re64.flags.writeable = False
    im64.flags.writeable = False
    return re64, im64


def ld_root_factors(size: int) -> tuple[npt.NDArray[np.clongdouble], npt.NDArray[np.clongdouble], int]:
    """``(t_hi, t_lo, B)``: e^{−2πi·aB/size} and e^{−2πi·b/size} in long double (cosl/sinl at the long
    double angle), for a < size/B + 1 and b < B; their products are the size-th roots of unity
    (:func:`ld_dft`)."""
    ld = np.longdouble
    two_pi_n = np.arctan(ld(1)) * 8 / ld(size)
    blk = 1 << max(1, (size.bit_length() - 1) // 2)
    t_lo = np.exp(-1j * (np.arange(blk).astype(ld) * two_pi_n))
    t_hi = np.exp(-1j * (np.arange(size // blk + 1).astype(ld) * (two_pi_n * blk)))
    return t_hi, t_lo, blk


_LD_TABLE_MAX = 1 << 18  # sizes whose roots of unity are tabulated (8 MB of long doubles at the largest)


@functools.lru_cache(maxsize=3)
def ld_unit_roots(size: int) -> tuple[npt.NDArray[np.longdouble], npt.NDArray[np.longdouble]]:
    """The real and imaginary parts of e^{−2πi·m/size} for every m < size, each the same long double product
    of :func:`ld_root_factors`' two entries that :func:`ld_dft` would form (so the same numbers and error
    bound), computed once per size: like an FFT plan, they depend on nothing but the size (about 10 ms to
    build at 2**18, against 3 ms per later use)."""
    t_hi, t_lo, blk = ld_root_factors(size)
    m = np.arange(size)
    w = t_hi[m // blk] * t_lo[m % blk]
    re, im = w.real.copy(), w.imag.copy()
    re.flags.writeable = False
    im.flags.writeable = False
    return re, im


LD_HEAD = 1e-6  # the ℓ₁ share of x left out of the long double head (summed in double instead)


def head_range(x: FloatArray, share: float) -> tuple[int, int]:
    """``(a, b)``: a short index range with Σ_{i∉[a,b)} |xᵢ| ≤ share·Σ|xᵢ| (up to rounding, which only moves
    the split; every entry is summed on one side or the other)."""
    if x.size < 4096:
        return 0, x.size
    prefix = np.cumsum(np.abs(x))
    tot = float(prefix[-1])
    if not tot > 0:
        return 0, x.size
    cut = share * tot / 2
    a = int(np.searchsorted(prefix, cut, side="right"))
    # the tail from b on, tot − prefix[b − 1], is at most cut from the first b with prefix[b − 1] ≥ tot − cut
    b = int(np.searchsorted(prefix, tot - cut, side="left")) + 1
    return (a, b) if a < b else (0, x.size)


def ld_power(v: npt.NDArray[np.clongdouble], k: int) -> tuple[ComplexArray, FloatArray]:
    """v**k in polar form in long double (|v|^k = e^{k·log|v|}, angle k·arg v), rounded to complex128,
    and a bound on the relative error of the computation (not of v)."""
    r = np.abs(v)
    th = np.angle(v)
    with np.errstate(divide="ignore", under="ignore", over="ignore"):
        lr = np.log(r)
        big_r = np.exp(k * lr)
    phi = k * th
    out = (big_r * (np.cos(phi) + 1j * np.sin(phi))).astype(np.complex128)
    f, u = _LD_FUNC, _LD_U
    lr_f = np.abs(lr.astype(np.float64))
    th_f = np.abs(th.astype(np.float64))
    d_log = k * (2 * f + f * lr_f) + u * k * lr_f + u  # |Δ(k·log r)|
    d_r = np.expm1(np.minimum(d_log, 1.0)) * (1 + 1e-6) + f
    d_phi = k * (2 * f * th_f + f) + u * k * th_f + 2 * f + 2 * u
    rho = (d_r + d_phi + d_r * d_phi) * (1 + 1e-6) + rounding_rel(2)
    rho = np.where(np.isfinite(rho) & (r > 0), rho, np.inf)
    return out, rho
