"""Long compositions in the frequency domain: MGFs, the Chernoff window and the certified Fourier power
(Koskela et al. 2020/2021; Higham 2002, Thm. 24.2)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dpcompose.accounting import _pld_memory as memory
from dpcompose.accounting._pld.floats import (
    exp_or_0,
    few_ulps_up,
    fft_componentwise,
    fft_relative,
    fft_underflow,
    gamma,
    gamma_down,
    gamma_up,
    norm1_up,
    pad_up,
    rounding_err,
    roundings_up,
    sum_bound,
)
from dpcompose.accounting._pld.lattice import check_window
from dpcompose.accounting._pld.longdouble import (
    LD_CHEAP_WORK,
    LD_HEAD,
    LD_MAX_FREQ,
    LD_MAX_WORK,
    LD_MIN_POWER,
    LD_OK,
    LD_WIDE_FREQ,
    LD_WIDE_GAIN,
    head_range,
    ld_dft,
    ld_power,
)
from dpcompose.accounting._pld.side import Side, composed_nq_err, trim, truncate

ComplexArray = npt.NDArray[np.complex128]
FloatArray = npt.NDArray[np.float64]


# ---------------------------------------------------------------------------------------------------------
# Composition of many PLDs in the Fourier domain
# ---------------------------------------------------------------------------------------------------------

FOURIER_MIN = 1 << 12  # the Fourier path is used when the result's full support is longer than this


def _cpow(x: ComplexArray, k: int) -> ComplexArray:
    """x**k by repeated squaring (relative error ≤ (1 + √2γ₂)^{2k} − 1, Higham 2002 Lemma 3.5)."""
    result: ComplexArray | None = None
    base = x
    while True:
        if k & 1:
            result = base.copy() if result is None else result * base
        k >>= 1
        if not k:
            break
        base = base * base
    assert result is not None
    return result


@dataclass(frozen=True)
class _MgfParts:
    """What :func:`log_mgfs` reads of a side, found once for every τ a window tries: the number of entries,
    the logs of upper and lower bounds on each block's ℓ₁ mass, the nonzero entries' indices and the logs of
    their absolute values (and the largest of those in absolute value)."""

    n: int
    lw_hi: FloatArray
    lw_lo: FloatArray
    nzi: npt.NDArray[np.intp]
    lm: FloatArray
    big_lm: float

    @staticmethod
    def of(s: Side) -> _MgfParts:
        a = np.abs(s.masses)
        n = a.size
        nb = -(-n // _MGF_BLOCK)
        padded = np.zeros(nb * _MGF_BLOCK)
        padded[:n] = a
        w = np.sum(padded.reshape(nb, _MGF_BLOCK), axis=1)
        with np.errstate(divide="ignore"):
            lw_hi = np.log(gamma_up(w, _MGF_BLOCK + 1))  # ≥ log of each block's ℓ₁ (−inf where empty)
            lw_lo = np.log(gamma_down(w, _MGF_BLOCK + 1))  # ≤ it
        nzi = np.flatnonzero(a)  # (zero entries add nothing: only the others are summed, and exp/log of 0
        lm = np.log(a[nzi])  # and −inf take numpy's slow path: 3.5 times the time on a sparse tail)
        return _MgfParts(n, lw_hi, lw_lo, nzi, lm, float(np.max(np.abs(lm))) if lm.size else 0.0)


def log_mgfs(s: Side, center: int, taus: FloatArray, parts: _MgfParts | None = None) -> FloatArray:
    """Upper bounds on log Σⱼ |mⱼ|·e^{τ(offset + j − center)} for each τ (the stored masses; a float entry
    may be negative, and the cyclic convolution wraps its absolute value as much as any other); ``parts``:
    the side's :class:`_MgfParts`, where the caller keeps them.

    The entries are cut into blocks of :data:`_MGF_BLOCK`. For τ > 0 a block's sum lies between its ℓ₁
    mass W times e^{τ·(its first index)} and W·e^{τ·(its last index)} (the other way round for τ < 0).
    Blocks whose upper end is below e^{−60} times the largest lower end are only bounded (their upper ends
    are added: together at most (number of blocks)·e^{−60} of the sum), the others are summed entry by
    entry. On a long side whose mass sits near its mode this sums a few blocks instead of every entry."""
    pt = _MgfParts.of(s) if parts is None else parts
    if pt.nzi.size == 0:
        return np.full(taus.size, -math.inf)
    n, lw_hi, lw_lo, nzi, lm, big_lm = pt.n, pt.lw_hi, pt.lw_lo, pt.nzi, pt.lm, pt.big_lm
    first = np.arange(lw_hi.size, dtype=np.float64) * _MGF_BLOCK + (s.offset - center)  # exact (< 2**53)
    last = np.minimum(first + (_MGF_BLOCK - 1), float(s.offset - center + n - 1))
    idx = nzi.astype(np.float64) + (s.offset - center)
    out = np.empty(taus.size)
    for i, t in enumerate(taus):
        hi_end, lo_end = (last, first) if t > 0 else (first, last)
        cb = lw_hi + t * hi_end  # log of each block's upper end
        floor = float(np.max(lw_lo + t * lo_end)) - _MGF_SKIP  # (rounded: the 60 has room to spare)
        kb = np.flatnonzero(cb >= floor)  # not empty: the block of the largest lower end is in
        # every block from the first to the last of those is summed entry by entry (one slice; a block
        # summed rather than bounded only tightens, and the gaps are empty blocks in a sparse tail)
        b0, b1 = int(kb[0]), int(kb[-1])
        reach = max(abs(float(first[b0])), abs(float(last[b1])))  # |index| of the summed entries
        i0, i1 = np.searchsorted(nzi, (b0 * _MGF_BLOCK, (b1 + 1) * _MGF_BLOCK))
        v = lm[i0:i1] + t * idx[i0:i1]
        rest = np.concatenate((cb[:b0], cb[b1 + 1 :]))
        mx = float(np.max(v))
        # The bounded blocks add at most nb·e^{−60} of the sum, so their own rounding needs no pad. Terms
        # below e^{−700} of the largest one are raised to it (an upper bound, and far below the sum's
        # rounding: the largest term is 1), which keeps numpy's exp off its slow path for results that
        # underflow (7 times the time per entry).
        total = float(np.sum(np.exp(np.maximum(v - mx, -700.0)))) + (
            float(np.sum(np.exp(np.maximum(rest - mx, -700.0)))) if rest.size else 0.0
        )
        # rounding of the products, exps, the sum (γₙ relative) and the log, padded generously: |v| and |mx|
        # are at most big_lm + |τ|·reach
        out[i] = mx + math.log(total) + 1e-9 + 3e-12 * (big_lm + abs(t) * reach)
    return out


def fourier_power(
    items: Sequence[tuple[FloatArray, int]], size: int, ld_tol: float = 0.0
) -> tuple[FloatArray, float]:
    """:func:`_fourier_power_body`; running out of memory says what to change (found at σ = 0.125, rate
    0.01, 1000 steps: a window of 2**25 points peaked at 2.5 GB, and with less memory numpy's MemoryError
    came after 27 s with no message)."""
    with memory.refuse_out_of_memory(*out_of_memory(size, len(items))):
        return _fourier_power_body(items, size, ld_tol)


def out_of_memory(size: int, distinct: int = 1) -> tuple[str, str]:
    """What ran out of memory and what to change, for ``refuse_out_of_memory``, where a composition's
    FFT window of ``size`` points (of ``distinct`` vectors) did not fit."""
    return (
        f"composing these PLDs in an FFT window of {size} lattice points (about "
        f"{memory.gib(memory.window_bytes(size, distinct))} at its peak)",
        "build the PLDs with a smaller step_bits (one bit fewer halves the window and the memory)",
    )


def _fourier_power_body(
    items: Sequence[tuple[FloatArray, int]], size: int, ld_tol: float
) -> tuple[FloatArray, float]:
    """``(c, e)``: the cyclic convolution (length ``size``, a power of two) of ``kᵢ`` copies of each vector
    ``xᵢ`` — Ẑ = Πᵢ X̂ᵢ^{kᵢ} by one real FFT per vector — and a bound ``e`` on its ℓ₁ float error.

    ``ld_tol``: an error bound below this share of the total mass is small enough; more low frequencies than
    ``LD_MAX_FREQ`` are not recomputed to lower it (the tilted composites, whose total is about 1 and whose
    error is relative to δ, pass ``_pld_tilt._LD_TOL``).

    The forward transforms are bounded componentwise (:func:`fft_componentwise`); where Π|Xᵢ|^{kᵢ} is not
    negligible at the low frequencies the spectra and powers are recomputed in long double
    (:func:`ld_dft`, :func:`ld_power`); |Πaᵢ − Πbᵢ| ≤ Σᵢ|aᵢ − bᵢ|·Π_{l≠i} max(|aₗ|, |bₗ|) for the powers;
    the inverse transform is bounded normwise (Higham 2002, Thm 24.2) and turned into ℓ₁ by Cauchy–Schwarz:
    ``e`` bounds the 2-norm of the error in the frequency domain, so ``e``/√size bounds its 2-norm in the
    time domain (``_pld_tilt`` uses that) and ``e`` its ℓ₁ norm.
    """
    tau_fft = fft_componentwise(size)
    half = size // 2 + 1
    # Each vector's spectrum is kept between the two passes below where all of them fit in SPECTRA_BYTES;
    # otherwise it is computed again in the second pass (the same arithmetic, so the same numbers), and
    # the memory held does not grow with the number of distinct vectors (kept, 300 distinct Laplace steps
    # would hold 12 MB each at a window of 2**20 points, and 3,000 would run out of memory).
    keep_spectra = len(items) * half * memory.SPECTRUM_BYTES <= memory.SPECTRA_BYTES
    kept: list[tuple[ComplexArray, FloatArray]] = []

    def folded(g: int) -> tuple[FloatArray, float]:
        """Vector ``g`` folded onto the window (itself where it fits) and the folding's ℓ₁ error."""
        x = items[g][0]
        if x.size <= size:
            return x, 0.0
        buf = np.zeros(size)
        folds = 0
        for st in range(0, x.size, size):
            seg = x[st : st + size]
            buf[: seg.size] += seg
            folds += 1
        return buf, gamma(folds + 1) * float(np.sum(np.abs(x)))

    def spectrum(g: int) -> tuple[ComplexArray, FloatArray]:
        """``(fx, e)``: vector ``g``'s spectrum and the componentwise error bound of each frequency (fresh
        arrays, except where kept)."""
        if g < len(kept):
            return kept[g]
        x0 = items[g][0]
        x, fold_err = folded(g)
        fx = np.fft.rfft(x, size)
        n1 = norm1_up(x0)
        e = np.full(half, tau_fft * n1 + fold_err + fft_underflow(size))
        return fx, e

    def add_bounds(log_b: FloatArray, rel: FloatArray, fx: ComplexArray, e: FloatArray, k: int) -> None:
        """log_b += log(|X̂|(1 + 4u) + e)^k and rel += k·e/(…) on the first ``log_b.size`` frequencies:
        summed over the vectors, log Π(|X̂ᵢ|(1 + 4u) + eᵢ)^{kᵢ} ≥ log|Z| and Σᵢ kᵢeᵢ/(…)."""
        n = log_b.size
        a = roundings_up(np.abs(fx[:n]), 4) + e[:n]
        log_b += k * np.log(a)
        rel += k * e[:n] / a

    def first_pass() -> tuple[FloatArray, FloatArray]:
        log_b, rel = np.zeros(half), np.zeros(half)
        for g, (_, k) in enumerate(items):
            fx, e = spectrum(g)
            add_bounds(log_b, rel, fx, e, k)
            if keep_spectra:
                kept.append((fx, e))
        return log_b, rel

    log_bound, rel_sum = first_pass()
    with np.errstate(over="ignore"):
        b_abs = exp_or_0(log_bound)  # the bound on |Z| itself
    # Where Π|X|^k is not negligible (the low frequencies, for long compositions), recompute the spectra
    # and their powers directly in extended precision: there the FFT's error bound, amplified k-fold, and
    # the k-fold growth of the rounding of repeated squaring would dominate.
    count = 0
    ld_vals: dict[int, npt.NDArray[np.clongdouble]] = {}
    ld_errs: dict[int, FloatArray] = {}
    # only vectors raised to a power of at least LD_MIN_POWER are recomputed: the error of a vector used
    # once or a few times is not amplified, and a wide one (a composite) would exhaust the work budget
    chosen = [g for g, (_, k) in enumerate(items) if k >= LD_MIN_POWER]
    if LD_OK and chosen:
        with np.errstate(over="ignore", under="ignore"):
            c2 = (b_abs * rel_sum) ** 2
        c2_sum = float(np.sum(c2))
        if c2_sum > 0:
            # the frequencies holding all but 1e-8 of the squared error, or the largest-error low ones
            # (errors fall with frequency for a smooth composite), within a work budget: up to LD_MAX_FREQ,
            # or up to LD_WIDE_FREQ where the heads are narrow enough for that to stay cheap (a small
            # sampling rate: a step's mass on a few hundred entries, its spectrum near 1 over thousands of
            # frequencies at 10⁶ steps)
            heads = [head_range(folded(g)[0], LD_HEAD) for g in chosen]
            per_freq = max(1, sum(b - a for a, b in heads))
            cap = max(LD_MAX_FREQ, min(LD_WIDE_FREQ, LD_CHEAP_WORK // per_freq))
            # the squared error from each frequency i ≤ cap on (only those can be chosen), falling with i (an
            # infinite total, from overflowing bounds: the suffix sums themselves, which are then infinite)
            if math.isfinite(c2_sum):
                tail_sq = c2_sum - np.concatenate(([0.0], np.cumsum(c2[:cap])))
            else:
                tail_sq = np.cumsum(c2[::-1])[::-1]
            count = min(int(np.searchsorted(-tail_sq, -1e-8 * c2_sum)), cap)
            if count > LD_MAX_FREQ:
                # ... but only where that lowers the whole error bound: the frequencies not recomputed keep
                # theirs (the powers' rounding, the bound itself where Z is set to 0), which can dominate
                # (1000 × Laplace(100): 3039 frequencies took 39 of 42 ms and lowered the bound by 4%; at q
                # = 1e-5 over 10⁶ steps the wide set lowers it 400-fold and narrows the interval by 0.1%)
                rho_est = math.expm1(sum(2 * k + 1 for _, k in items) * math.log1p(math.sqrt(2) * gamma(2)))
                with np.errstate(over="ignore", under="ignore", invalid="ignore"):
                    d2 = np.where(log_bound > _LOG_NEGLIGIBLE, b_abs * (rel_sum + rho_est), b_abs) ** 2
                    floor = fft_relative(size) * math.sqrt(2 * float(np.sum(b_abs * b_abs)))
                left = np.sqrt(2 * np.cumsum(d2[::-1])[::-1])  # (the inverse transform's rounding: floor)
                wide = (float(left[count]) if count < half else 0.0) + floor
                narrow = float(left[LD_MAX_FREQ]) + floor
                if not narrow > LD_WIDE_GAIN * wide or narrow <= ld_tol * float(b_abs[0]):
                    count = LD_MAX_FREQ
            work = count * per_freq
            if count <= 0 or work > LD_MAX_WORK:
                count = 0
            else:
                for g, head in zip(chosen, heads, strict=True):
                    x, fold_err = folded(g)
                    vals, errs = ld_dft(x, size, count, head)
                    ld_vals[g] = vals
                    ld_errs[g] = errs + fold_err
    z: ComplexArray | None = None
    n_mult = 0
    rho_low = np.zeros(count)
    rho_plain = 0.0  # the double powers' relative error at the low frequencies of the vectors not recomputed
    # Frequencies whose bound on |Z| = Π|Xᵢ|^{kᵢ} is negligible are set to 0 (no power is computed there):
    # the bound then is the error itself, |0 − Z| ≤ Π(|X̂ᵢ|(1 + 4u) + eᵢ)^{kᵢ} (below).
    keep = np.flatnonzero(log_bound > _LOG_NEGLIGIBLE)
    keep = keep[keep >= count]
    # the bounds on the first ``count`` frequencies, with the long double spectra and errors where recomputed
    low_bound, low_rel = np.zeros(count), np.zeros(count)
    for g, (_, k) in enumerate(items):
        fx, e = spectrum(g)
        if count and g in ld_vals:  # (fx and e are this call's own: changed in place)
            fx[:count] = ld_vals[g].astype(np.complex128)
            e[:count] = ld_errs[g]
        if count:
            add_bounds(low_bound, low_rel, fx, e, k)
        pw = np.zeros(half, dtype=np.complex128)
        pw[keep] = _cpow(fx[keep], k)
        if count and g in ld_vals:
            pw[:count], rho_g = ld_power(ld_vals[g], k)
            rho_low += rho_g
        elif count:
            pw[:count] = _cpow(fx[:count], k)
            rho_plain += pad_up(math.expm1((2 * k + 1) * math.log1p(math.sqrt(2) * gamma(2))), 20)
        z = pw if z is None else z * pw
        n_mult += 2 * k + 1
    if count:
        log_bound[:count], rel_sum[:count] = low_bound, low_rel  # only these changed
        with np.errstate(over="ignore", under="ignore"):
            b_abs[:count] = np.exp(log_bound[:count])
    kept.clear()
    assert z is not None
    dropped = np.ones(half, dtype=bool)
    dropped[keep] = False
    dropped[:count] = False
    rho = pad_up(math.expm1(n_mult * math.log1p(math.sqrt(2) * gamma(2))), 20)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        dz = b_abs * (1 + 1e-10) * (rel_sum * (1 + 1e-10) + rho)
        if count:
            # Π of the long double powers: their relative errors add (to first order; padded), plus the
            # complex128 products of the groups
            g = len(items)
            rho_c = (rho_low + rho_plain) * (1 + 1e-3) + math.expm1(
                g * math.log1p(math.sqrt(2) * gamma(2))
            ) * 1.01
            rho_c = np.where(rho_low < 1e-3, rho_c, np.inf)
            dz[:count] = b_abs[:count] * (1 + 1e-10) * (rel_sum[:count] * (1 + 1e-10) + rho_c)
        dz = np.where(dropped, b_abs * (1 + 1e-10), dz)
    dz = np.where(np.isnan(dz), np.inf, dz)
    # full spectrum = this half and its conjugate mirror (≤ twice the half's squared norm)
    with np.errstate(over="ignore"):  # (an overflow is an infinite bound: the side then bounds nothing)
        dz2 = math.sqrt(2 * float(np.sum(dz * dz))) * (1 + 1e-10)
        z2 = math.sqrt(2 * float(np.sum(z.real**2 + z.imag**2))) * (1 + 1e-10)
    c = np.fft.irfft(z, size)
    # ‖F⁻¹v‖₂ = ‖v‖₂/√N and ℓ₁ ≤ √N·ℓ₂ on N entries; inverse rounding ≤ r‖Ẑ‖₂/√N (Thm 24.2).
    fft_err = (dz2 + fft_relative(size) * z2) * (1 + 1e-10)
    return c, fft_err


def totals(items: Sequence[tuple[Side, int]], upper: bool) -> tuple[float, float, bool]:
    """``(inf, err_in, zero)`` for the composition of ``kᵢ`` copies of each side: its mass at +∞ (anything
    paired with +∞ is +∞; rounded up on the upper side, down on the lower), the ℓ₁ error the sides' own
    ``err`` carry into it, and whether some side has no finite mass (then all the mass is at +∞)."""
    log_fin = 0.0
    log_all = 0.0  # log Π(sᵢ + infᵢ)^{kᵢ} − log Π sᵢ^{kᵢ} accumulated as Σ k·log1p(inf/s)
    log_norm = 0.0
    log_norm_err = 0.0
    zero_fin = False
    for sd, k in items:
        fs, fe = sum_bound(sd.masses)
        f = fs + fe if upper else max(0.0, fs - fe)
        if f <= 0:
            zero_fin = True
        else:
            log_fin += k * math.log(f)
            log_all += k * math.log1p(sd.inf / f)
        n1 = sd.norm1()
        log_norm += k * math.log(n1) if n1 > 0 else -math.inf
        log_norm_err += k * math.log1p(sd.err / n1) if n1 > 0 else 0.0
    # (products that overflow are +∞ on the side of upper bounds and 0 on that of lower ones, so that e.g.
    # 2**64 copies of a Laplace PLD raise no raw OverflowError here)
    if zero_fin:
        tot = _exp_or_inf(lambda: math.exp(sum(k * math.log(max(sd.norm1(), 5e-324)) for sd, k in items)))
        err = _exp_or_inf(lambda: math.expm1(log_norm_err) * math.exp(log_norm) * (1 + 1e-12))
        return (tot * (1 + 1e-12) if upper else 0.0), (err if math.isfinite(log_norm) else 0.0), True
    if upper:
        inf = _exp_or_inf(lambda: math.exp(log_fin) * math.expm1(log_all) * (1 + 1e-12))
    else:
        inf = _exp_or_inf(lambda: max(0.0, math.exp(log_fin) * math.expm1(log_all) * (1 - 1e-12)), 0.0)
    # ‖Π v^{*k} − Π x̂^{*k}‖₁ ≤ Π(‖x̂‖₁ + err)^k − Π‖x̂‖₁^k (telescoping, Young's inequality).
    err_in = _exp_or_inf(lambda: math.exp(log_norm) * math.expm1(log_norm_err) * (1 + 1e-12))
    return inf, (err_in if math.isfinite(log_norm) else 0.0), False


def _exp_or_inf(value: Callable[[], float], overflow: float = math.inf) -> float:
    """``value()``, or ``overflow`` where it overflows (+∞ for an upper bound, 0 for a lower one)."""
    try:
        return value()
    except OverflowError:
        return overflow


def moments(m: FloatArray) -> tuple[float, float, float]:
    """``(tot, mu, ss)``: the total of the masses ``m`` (with mass), their mean index and their sum of squared
    deviations from it, ss/tot their variance (only to choose windows and paths)."""
    tot = float(np.sum(m))
    pos = np.arange(m.size, dtype=np.float64)
    mu = float(np.sum(m * pos)) / tot
    return tot, mu, float(np.sum(m * (pos - mu) ** 2))


def window(
    items: Sequence[tuple[Side, int]], base: int, full_len: int, tail: float
) -> tuple[int, int, float, float]:
    """``(lo, hi, top, bot)``: a window [lo, hi] of lattice indices for the composition of ``kᵢ`` copies of
    each side (whose full support is [base, base + full_len)), cut by Chernoff bounds P(S ≥ T) ≤
    E[e^{τS}]e^{−τT} on the composed (unnormalised) stored masses, with ``top`` and ``bot`` bounds on
    those masses above ``hi`` and below ``lo`` (0 where nothing is cut), each at most ``tail``."""
    b_lo, b_hi = base, base + full_len - 1
    top_bound = bot_bound = 0.0
    if full_len > _FFT_MAX_DIRECT_WINDOW and tail > 0:
        mean = 0.0
        var = 0.0
        centers = []  # each side's mean, rounded: its τ-bounds are centred there
        for sd, k in items:
            tot, mu, ss = moments(sd.masses)
            mean += k * (mu + sd.offset)
            var += k * ss / tot
            centers.append(round(sd.offset + mu))
        sd_tot = math.sqrt(max(var, 1.0))
        t0 = math.sqrt(2 * math.log(1 / tail)) / sd_tot
        center = round(mean)

        parts = [_MgfParts.of(sd) for sd, _ in items]

        def log_mgf(taus: FloatArray) -> FloatArray:
            """log E e^{τ(S − center)} = Σ k·log E e^{τ(Sᵢ − cᵢ)} + τ(Σ k cᵢ − center), bounded above."""
            out = -taus * center
            for (sd, k), c_i, pt in zip(items, centers, parts, strict=True):
                out = out + k * log_mgfs(sd, c_i, taus, pt) + taus * (k * c_i)
            return out

        log_tail = math.log(tail)
        # τ = ±t0·2^{i/2}, i = −20 … 4 (heavy one-sided tails need a small τ): every fourth first, then a
        # step of 2^{±1} and of 2^{±1/2} around the best cut so far, for each sign. Any τ gives a valid cut;
        # this finds the grid's best where the cut is unimodal in τ, with 22 bounds instead of 50.
        coarse = t0 * 2.0 ** np.arange(-10.0, 2.5, 2.0)
        taus = np.concatenate([coarse, -coarse])
        total = log_mgf(taus)
        for step in (1.0, 0.5):
            more = []
            for sign in (1.0, -1.0):
                at = taus * sign > 0
                cuts = (total[at] - log_tail) / np.abs(taus[at])  # the cut's distance from the centre
                best = float(np.abs(taus[at])[int(np.argmin(cuts))])
                grid = math.log2(best / t0)
                more += [sign * best * 2.0**e for e in (-step, step) if -10.0 <= grid + e <= 2.0]
            if more:
                extra = np.array(more)
                taus = np.concatenate([taus, extra])
                total = np.concatenate([total, log_mgf(extra)])
        pos_t = taus > 0
        # top: least T with total − τ(T − center) ≤ log tail
        t_cands = center + np.ceil((total[pos_t] - log_tail) / taus[pos_t])
        i_top = int(np.argmin(t_cands))
        top = min(int(t_cands[i_top]), b_hi)
        b_cands = center + np.floor((total[~pos_t] - log_tail) / taus[~pos_t])
        i_bot = int(np.argmax(b_cands))
        bot = max(int(b_cands[i_bot]), b_lo)
        if top > bot:
            if top < b_hi:
                tau = float(taus[pos_t][i_top])
                top_bound = math.exp(float(total[pos_t][i_top]) - tau * (top - center)) * (1 + 1e-9)
            if bot > b_lo:
                tau = float(taus[~pos_t][i_bot])
                bot_bound = math.exp(float(total[~pos_t][i_bot]) - tau * (bot - center)) * (1 + 1e-9)
            b_lo, b_hi = bot, top
    return b_lo, b_hi, top_bound, bot_bound


def compose_many(
    items: Sequence[tuple[Side, int]], upper: bool, tail: float, step_bits: int | None = None
) -> Side:
    """The composition of ``kᵢ`` copies of each side, by one FFT per distinct side: Ẑ = Πᵢ X̂ᵢ^{kᵢ}.

    The result is computed on a window [B, B + N) of the lattice chosen by Chernoff bounds on the composed
    (unnormalised) masses, P(S ≥ T) ≤ E[e^{τS}]e^{−τT} (τ > 0, and τ < 0 for the bottom), so that the mass
    outside is at most ``tail``; that mass wraps around the cyclic convolution. On the upper side it is
    added once more at +∞ (top) and at the lowest point (bottom): the wrapped copy is extra non-negative
    mass, which only raises δ. On the lower side its ℓ₁ size is added to ``err``. The floating-point error
    is bounded componentwise in the frequency domain (:func:`fft_componentwise` for the forward
    transforms; |Πaᵢ − Πbᵢ| ≤ Σᵢ|aᵢ − bᵢ|·Π_{l≠i} max(|aₗ|, |bₗ|) for the powers) and normwise for the
    inverse transform (Higham 2002, Thm 24.2), then turned into ℓ₁ by Cauchy–Schwarz.
    """
    base = sum(k * sd.offset for sd, k in items)
    full_len = sum(k * (sd.masses.size - 1) for sd, k in items) + 1
    inf, err_in, zero_fin = totals(items, upper)
    if zero_fin:  # no finite mass on some side: the product of totals is all at +∞
        return Side(0, np.zeros(1), inf, few_ulps_up(err_in), None if upper else np.zeros(1))

    # The window.
    b_lo, b_hi, top_bound, bot_bound = window(items, base, full_len, tail)
    width = b_hi - b_lo + 1
    size = 1 << max(1, (width - 1).bit_length())
    check_window(size, step_bits, len(items), not upper)
    if size >= full_len:  # no wrap-around at all: the whole support fits
        b_lo = base
        top_bound = bot_bound = 0.0
    c, fft_err = fourier_power([(sd.masses, k) for sd, k in items], size)
    c = np.roll(c, (base - b_lo) % size)
    c = np.maximum(c, 0.0)  # true masses are ≥ 0: clipping never moves an entry away from them
    nq: FloatArray | None = None
    nq_err = 0.0
    if not upper and all(sd.nq is not None for sd, _ in items):
        # the lumped pair's N-vector on the same window: its wrapped mass only adds (it is an upper bound)
        n_items = [(sd.nq, k) for sd, k in items if sd.nq is not None]
        nc, n_fft = fourier_power(n_items, size)
        nq = np.maximum(np.roll(nc, (base - b_lo) % size), 0.0)
        nq_in = composed_nq_err(items)  # the children's N errors, carried through the composition
        nq_err = few_ulps_up(nq_in + n_fft)
    err = err_in + fft_err
    if upper:
        inf = inf + top_bound
        c[0] += bot_bound
        err += rounding_err(4, inf + c[0])
    else:
        err += top_bound + bot_bound
    side = trim(Side(b_lo, c, few_ulps_up(inf) if upper else inf, few_ulps_up(err), nq, nq_err))
    return truncate(side, upper, tail)


_MGF_BLOCK = 256  # :func:`log_mgfs` bounds blocks of this many entries


_MGF_SKIP = 60.0  # ... and sums entry by entry only those within e^{60} of the largest block bound


_LOG_NEGLIGIBLE = math.log(1e-40)  # frequencies with |Z| ≤ 1e-40 are dropped (their error is |Z| itself)


_FFT_MAX_DIRECT_WINDOW = 1 << 14  # below this full support length no window is cut
