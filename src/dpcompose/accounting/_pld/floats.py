"""The floating-point error model of the PLD engine and the primitives that apply it.

Every certified bound of the engine's vector code is built from the names below, so that each constant of
the model is defined once:

* ``U`` = 2**-53, the unit round-off of binary64, and ``EXP_REL`` = 2**-44, the assumed relative accuracy
  of one numpy or libm ``exp``/``expm1``/``log`` (2**9·u: 2**8 times their documented worst case), both
  from :mod:`dpcompose.accounting._exact`.
* γₙ = n·u/(1 − n·u) (Higham 2002, Lemma 3.1): :func:`gamma` (a scalar, +∞ once n·u ≥ 1/2) and
  :func:`gamma_padded` (scalars or arrays of counts); :func:`gamma_up` / :func:`gamma_down` move a value
  past n roundings, :func:`norm1_up` bounds an ℓ₁ norm.
* Directed factors: :func:`roundings_up` / :func:`roundings_down` (k roundings), :func:`libm_up` /
  :func:`libm_down` (k libm evaluations), :func:`pad_up` / :func:`pad_down` (a safety margin of 2**-bits on
  a bound).
* Error terms: :func:`rounding_err` (k roundings of a quantity of magnitude m), :func:`rounding_rel` (k
  roundings, relative), :func:`libm_err` (k libm evaluations, relative), :func:`sum_err` and
  :func:`sum_bound` (a sum of n terms in any order, Higham 2002, Lemma 3.1 and (3.5)).
* FFT error factors (Higham 2002, Thm 24.2), the subnormal pads (``TINY``, :func:`lift_subnormal`).

Each primitive is one fixed sequence of float operations (left to right as written in its body) and works
on a float or elementwise on a float64 array; the call sites' own error analyses (in their docstrings) say
how many roundings or libm calls a quantity carries. A factor x·(1 + c) rounds once more: for x ≥ 0 in the
normal range the stored result lies in [x(1 + c)(1 − u), x(1 + c)(1 + u)] (Higham 2002, (2.4)), and every
bound built here leaves that last rounding inside its margin.
"""

from __future__ import annotations

import math
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from dpcompose.accounting._exact import EXP_REL, U

FloatArray = npt.NDArray[np.float64]

Real = TypeVar("Real", float, FloatArray)
"""A float or a float64 array: each primitive maps it elementwise and returns the same kind."""

__all__ = [
    "EXP_REL",
    "PAD",
    "SAFE",
    "TINY",
    "FloatArray",
    "U",
    "exp_or_0",
    "few_ulps_up",
    "fft_componentwise",
    "fft_relative",
    "fft_underflow",
    "gamma",
    "gamma_down",
    "gamma_padded",
    "gamma_up",
    "libm_down",
    "libm_err",
    "libm_up",
    "lift_subnormal",
    "norm1_up",
    "pad_down",
    "pad_up",
    "rounding_err",
    "rounding_rel",
    "roundings_down",
    "roundings_up",
    "sum_bound",
    "sum_err",
]


PAD = 2.0**-44  # relative pad of every stored mass and weight (≫ the assumed libm accuracy)

SAFE = 1 + 2.0**-20  # a multiplicative safety factor on error bounds


_FFT_SAFETY = 8.0


def _gamma_core(n: Any) -> Any:
    """n·u/(1 − n·u), two roundings (n·u is exact for n < 2**53)."""
    nu = n * U
    return nu / (1 - nu)


def gamma(n: int) -> float:
    """An upper bound on γₙ = n·u/(1 − n·u), +∞ once n·u ≥ 1/2.

    Error model: the quotient rounds twice (relative ≤ 2u); the pad 1 + 2**-40 covers that and the pad's
    own rounding, so the result is ≥ γₙ. γₙ bounds the relative error of n roundings:
    |∏(1 + δᵢ)^{±1} − 1| ≤ γₙ for |δᵢ| ≤ u, n·u < 1, and so of any float sum of n + 1 terms
    (|fl(Σxᵢ) − Σxᵢ| ≤ γₙ·Σ|xᵢ|).

    Source: Higham 2002, Accuracy and Stability of Numerical Algorithms, Lemma 3.1 and (3.5).
    """
    if n * U >= 0.5:
        return math.inf
    return pad_up(float(_gamma_core(n)), 40)


def gamma_padded(n: Any) -> Any:
    """γₙ = n·u/(1 − n·u) times ``SAFE`` = 1 + 2**-20, for a float or an array of counts (each n·u far
    below 1/2 at the call sites; no +∞ guard, so arrays stay vectorised).

    Error model and source: as :func:`gamma` (Higham 2002, Lemma 3.1); the larger pad also covers the
    second-order terms of the call sites' sums of several γ's.
    """
    return _gamma_core(n) * SAFE


def gamma_up(x: Real, n: int) -> Real:
    """x·(1 + γₙ): ``x`` ≥ 0, the float result of at most n roundings of an exact x* ≥ 0 (for instance
    a float sum of n non-negative terms, n − 1 roundings), moved up: x* ≤ x·(1 + γₙ) (x* = x·∏(1 +
    δᵢ)^{∓1} and such a product of n factors is 1 + θ with |θ| ≤ γₙ); the pad of :func:`gamma` covers
    this product's own rounding. +∞ once n·u ≥ 1/2.

    Source: Higham 2002, Lemma 3.1.
    """
    return x * (1 + gamma(n))


def gamma_down(x: Real, n: int) -> Real:
    """x·(1 − γₙ): the lower counterpart of :func:`gamma_up` (x* ≥ x·(1 − γₙ) for the same x*).

    Source: Higham 2002, Lemma 3.1.
    """
    return x * (1 - gamma(n))


def norm1_up(x: FloatArray) -> float:
    """An upper bound on ‖x‖₁: the float sum of |xᵢ| (n − 1 roundings, any order) times 1 + γ_{n+1}.

    Source: Higham 2002, Lemma 3.1 and (3.5).
    """
    return gamma_up(float(np.sum(np.abs(x))), x.size + 1)


def roundings_up(x: Real, k: int) -> Real:
    """x·(1 + k·u): ``x`` ≥ 0 moved up past the roundings that made it; k even.

    Error model: the factor 1 + k·u is exact for even k < 2**53 (floats above 1 are 2u apart: an odd k
    rounds to a neighbour, k = 1 to 1 itself, so call sites use even k), and the product rounds once, so
    the result is ≥ x·(1 + k·u)(1 − u) = x·(1 + (k − 1)·u − k·u²) in the normal range. Hence if x is the
    float result of r ≤ k − 2 roundings (x = x*·∏(1 + δᵢ)^{±1}, |δᵢ| ≤ u) of an exact x* ≥ 0, the result
    is ≥ x*. Each call site's comment or docstring says what its x carries.

    Source: Higham 2002, (2.4) (the standard model) and Lemma 3.1.
    """
    return x * (1 + k * U)


def roundings_down(x: Real, k: int) -> Real:
    """x·(1 − k·u): ``x`` ≥ 0 moved down past the roundings that made it (1 − k·u is exact for any
    k < 2**52: floats below 1 are u apart).

    Error model: fl(x·(1 − k·u)) ≤ x·(1 − k·u)(1 + u) = x·(1 − (k − 1)·u − k·u²), so a float x that is the
    result of r ≤ k − 2 roundings of an exact x* ≥ 0 gives a result ≤ x* (normal range; a result in the
    subnormal range may round up by 2**-1075, which call sites on lower bounds drop or pad).

    Source: Higham 2002, (2.4) and Lemma 3.1 (as :func:`roundings_up`).
    """
    return x * (1 - k * U)


def libm_up(x: Real, k: int = 1) -> Real:
    """x·(1 + k·``EXP_REL``): ``x`` moved up past k evaluations of exp, expm1 or log (x ≥ 0).

    Error model: each evaluation is within ``EXP_REL`` = 2**-44 relative (2**8 times the worst case of
    numpy's and glibc's exp/expm1/log, < 2 ulps); the margin covers the second-order terms and the
    product's own rounding (u ≪ ``EXP_REL``).

    Source: Higham 2002, (2.4); glibc and numpy document their exp/expm1/log within 1–2 ulps.
    """
    return x * (1 + k * EXP_REL)


def libm_down(x: Real, k: int = 1) -> Real:
    """x·(1 − k·``EXP_REL``): ``x`` moved down past k evaluations of exp, expm1 or log (x ≥ 0); the error
    model of :func:`libm_up`.

    Source: Higham 2002, (2.4).
    """
    return x * (1 - k * EXP_REL)


def pad_up(x: Real, bits: int) -> Real:
    """x·(1 + 2**-bits): a safety margin on a bound x ≥ 0 that covers the few roundings of computing the
    bound itself (each ≤ u = 2**-53 ≪ 2**-bits for bits ≤ 50), including this product's.

    Source: Higham 2002, (2.4).
    """
    return x * (1 + 2.0**-bits)


def pad_down(x: Real, bits: int) -> Real:
    """x·(1 − 2**-bits): the downward margin of :func:`pad_up` on a lower bound x ≥ 0.

    Source: Higham 2002, (2.4).
    """
    return x * (1 - 2.0**-bits)


def rounding_err(k: float, m: Real) -> Real:
    """k·u·m: a bound on the absolute error of k roundings of quantities of magnitude at most m ≥ 0 (each
    rounding to nearest moves a result y by ≤ u·|y|; Higham 2002, (2.4)). Computed as (k·u)·m, k·u exact
    for integer k < 2**53 (a fractional k such as 1.01 pads the count). In the subnormal range a rounding
    may also lose 2**-1075 absolutely: call sites add that where it can occur.

    Source: Higham 2002, (2.4) (the standard model).
    """
    return k * U * m


def rounding_rel(k: float) -> float:
    """k·u: the relative error of k roundings (to first order; the call sites' pads cover the rest).

    Source: Higham 2002, (2.4) and Lemma 3.1.
    """
    return k * U


def libm_err(k: float) -> float:
    """k·``EXP_REL``: the relative error of k evaluations of exp, expm1 or log (see :func:`libm_up`).

    Source: Higham 2002, (2.4); the accuracy assumed in ``EXP_REL``.
    """
    return k * EXP_REL


def sum_err(n: int, *mags: float) -> float:
    """γₙ·m₁·m₂·…·(1 + 2**-40): the rounding error of a float sum whose terms, of absolute sum at most
    m₁·m₂·…, pass through at most n roundings each (a sum of n terms in any order: γ_{n−1}; a sum of
    products xᵢ·yⱼ with Σ|xᵢ| ≤ m₁, Σ|yⱼ| ≤ m₂: one more). The factors are multiplied left to right and
    the pad covers those products' roundings.

    Source: Higham 2002, Lemma 3.1 and (3.5) (|fl(Σxᵢ) − Σxᵢ| ≤ γ_{n−1}·Σ|xᵢ|).
    """
    e = gamma(n)
    for m in mags:
        e = e * m
    return pad_up(e, 40)


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
    return s, sum_err(x.size + 1, float(np.sum(np.abs(x)))) + 5e-324


def few_ulps_up(x: float) -> float:
    """A float above ``x`` by a few ulps (0 stays 0: a float sum of non-negative terms is 0 only if all
    are)."""
    if x == 0:
        return 0.0
    return math.nextafter(x * (1 + 2.0**-50), math.inf) if x > 0 else math.nextafter(x, math.inf)


def fft_relative(n: int) -> float:
    """Relative 2-norm error bound of one length-n FFT (Higham 2002, Thm. 24.2, safety factor 8)."""
    lg = max(1, math.ceil(math.log2(n)))
    g4 = float(_gamma_core(4))
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
    g4 = float(_gamma_core(4))
    eta = _FFT_SAFETY * (U + g4 * (math.sqrt(2) + U))
    return math.expm1(stages * math.log1p(eta)) * SAFE


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
