"""The floating-point error model of the PLD engine: unit round-off multiples, γₙ (Higham 2002, Lemma 3.1),
FFT error factors (Higham 2002, Thm. 24.2), subnormal pads."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from dpcompose.accounting._exact import U

FloatArray = npt.NDArray[np.float64]


PAD = 2.0**-44  # relative pad of every stored mass and weight (≫ the assumed libm accuracy)


_FFT_SAFETY = 8.0


def gamma(n: int) -> float:
    """An upper bound on γₙ = n·u/(1 − n·u) (Higham 2002, Lemma 3.1)."""
    nu = n * U
    if nu >= 0.5:
        return math.inf
    return nu / (1 - nu) * (1 + 2.0**-40)


def exp_or_0(x: FloatArray) -> FloatArray:
    """``np.exp(x)``, the same floats, computed only where x ≥ −746: below, e^x < 2**−1076 rounds to 0, and
    numpy's exp takes a slow path for results that underflow (7 times the time per entry; most of a long
    composition's spectrum bound lies there)."""
    out = np.zeros(x.shape)
    live = np.flatnonzero(~(x < -746.0))  # (NaN stays NaN)
    out[live] = np.exp(x[live])
    return out


def sum_bound(x: FloatArray) -> tuple[float, float]:
    """``(s, e)``: the float sum of ``x`` and a bound on its rounding error, γₙ·Σ|x| (any order)."""
    if x.size == 0:
        return 0.0, 0.0
    s = float(np.sum(x))
    return s, gamma(x.size + 1) * float(np.sum(np.abs(x))) * (1 + 2.0**-40) + 5e-324


def few_ulps_up(x: float) -> float:
    """A float above ``x`` by a few ulps (0 stays 0: a float sum of non-negative terms is 0 only if all
    are)."""
    if x == 0:
        return 0.0
    return math.nextafter(x * (1 + 2.0**-50), math.inf) if x > 0 else math.nextafter(x, math.inf)


def fft_relative(n: int) -> float:
    """Relative 2-norm error bound of one length-n FFT (Higham 2002, Thm. 24.2, safety factor 8)."""
    lg = max(1, math.ceil(math.log2(n)))
    g4 = 4 * U / (1 - 4 * U)
    mu = U  # accuracy of the precomputed twiddle factors
    eta = _FFT_SAFETY * (mu + g4 * (math.sqrt(2) + mu))
    return lg * eta / (1 - lg * eta)


def fft_underflow(n: int) -> float:
    """An absolute bound on what underflow adds to any output of a length-``n`` FFT: the componentwise and
    normwise bounds are relative (Higham 2002, ch. 24, assume no underflow), and each of the at most
    4·log₂n roundings an input passes on its way to an output may lose up to 2**-1075 where its result is
    subnormal, for each of the n inputs (a direct DFT of subnormal entries can lose 3e-320 beyond its
    relative bound)."""
    return 4.0 * n * max(1, n.bit_length()) * 5e-324


def fft_componentwise(n: int) -> float:
    """τ with |X̂ⱼ − Xⱼ| ≤ τ·‖x‖₁ for every output of a length-n real FFT or its inverse (times n).

    In the radix-2 algorithm every output is a sum over exactly one path per input through log₂n butterfly
    stages whose coefficients have modulus 1, and each stage has componentwise relative error η = μ +
    γ₄(√2 + μ) (Higham 2002, proof of Thm 24.2, applied componentwise), so |ΔX| ≤ ((1 + η)^t − 1)·|A|·|x|
    with |A| the all-ones matrix; two more stages cover the packing of a real input; safety factor 8."""
    stages = max(1, math.ceil(math.log2(n))) + 2
    g4 = 4 * U / (1 - 4 * U)
    eta = _FFT_SAFETY * (U + g4 * (math.sqrt(2) + U))
    return math.expm1(stages * math.log1p(eta)) * (1 + 2.0**-20)


TINY = 2.0**-1022  # the least normal float; products below it carry an absolute error of 2**-1075


def lift_subnormal(x: FloatArray, rel: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Values below the normal range (absolute error ≤ 2·2**-1075 from two products) raised by 2**-1073,
    with a relative error bound that covers the raise: then x(1 + rel) bounds the exact value above and
    x(1 − rel) ≤ 0 below it is dropped (only on the lower side, which may lose mass)."""
    tiny = x < TINY
    if not np.any(tiny):
        return x, rel
    x = np.where(tiny, x + 2.0**-1073, x)
    rel = np.where(tiny, rel + 2.0**-1072 / x + 1.0, rel)
    return x, rel


SAFE = 1 + 2.0**-20  # a multiplicative safety factor on error bounds


def gamma_padded(n: Any) -> Any:
    """γₙ = n·u/(1 − n·u), padded (Higham 2002, Lemma 3.1), for a float or an array of counts; n·u stays
    far below 1 here."""
    nu = n * U
    return nu / (1 - nu) * SAFE
