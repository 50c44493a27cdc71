"""Exact column sums of a float matrix, vectorised over the columns: each column's exact sum, clamped and
rounded once to the nearest float, as :func:`~dpcompose.transformations._sum.exact_float_sum` gives it for
one column, without a Python loop over the columns.

Examples:
    >>> import math
    >>> import numpy as np
    >>> rows = np.array([[1e16, 0.1], [1.0, 0.2], [-1e16, -0.3]])
    >>> column_sums(rows, 1 << 1200).tolist() == [1.0, math.fsum([0.1, 0.2, -0.3])] == [1.0, 2**-55]
    True
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from dpcompose.transformations._sum import SUM_SCALE, exact_float_sum

__all__ = ["BLOCK_ENTRIES", "column_sums"]

FloatArray = npt.NDArray[np.float64]

BLOCK_ENTRIES = 1 << 21
"""Rows are read in blocks of about this many entries: two work arrays of that size, whatever the input."""

_U = 2.0**-53  # unit roundoff of float64
_SAFETY = 1.0 + 2.0**-40  # covers the roundings of the few operations that add the error bounds up


def column_sums(rows: FloatArray, saturation: int) -> FloatArray:
    """For each column of the finite (n, d) array ``rows``: its exact sum, clamped to
    ``±saturation·2**-1127`` and rounded once to the nearest double (ties to even) — exactly
    ``exact_float_sum(rows[:, j], saturation)`` for every j.

    Method (Rump–Ogita–Oishi 2008, "Accurate floating-point summation part I", SIAM J. Sci. Comput. 31(1),
    Lemma 3.3, *ExtractScalar*): with 2**k >= n and 2**E > max|x| over a column, σ = 2**(E + k) splits each
    entry exactly as x = q + p, q = fl(fl(σ + x) − σ), p = fl(x − q), where q is a multiple of 2**-53·σ and
    |p| <= 2**-53·σ. (If fl(σ + x) >= σ/2 it is a multiple of 2**-53·σ and the subtraction is exact by
    Sterbenz's lemma, and x − q is the rounding error of σ + x, a float of magnitude at most half an ulp,
    2**-53·σ; otherwise x < −σ/2, σ + x is exact by Sterbenz's lemma and q = x. Underflow only makes the
    additions exact.) The n parts q are multiples of 2**-53·σ of magnitude below 2**-k·σ, so every partial
    sum of them, in any order, is such a multiple of magnitude at most σ: an exact float. The parts p are
    split again with σ' = 2**(k − 53)·σ where n > 2**16 (two levels), and the last parts are summed in
    floating point, within γ_{n−1}·n·2**-53·σ_last of their exact sum (Higham 2002, §4.2, any order). The
    exact level sums and that one are combined by error-free additions (Knuth's TwoSum) into a candidate
    r and a certified bound U on |T − r|; where U is below half the gap from r to its nearer neighbour
    and |r| + U is at most the clamp bound, T rounds to r (and the clamp changes nothing). Every other
    column (an exact sum that close to a rounding boundary, a column whose σ would leave the float range)
    is summed by :func:`exact_float_sum` itself. So the result is that of ``exact_float_sum`` in every
    case; only the time differs (one more pass over such a column).

    Memory: two work arrays of :data:`BLOCK_ENTRIES` entries.
    """
    n, d = rows.shape
    if n == 0 or d == 0:
        return np.zeros(d)
    largest = saturation / SUM_SCALE  # the clamp bound: a float (saturation is its exact value)
    top = np.maximum(rows.max(axis=0), -rows.min(axis=0))
    _, big_e = np.frexp(top)  # top < 2**E (top = 0: E = 0)
    k = max(0, (n - 1).bit_length())
    levels = 1 if k <= 16 else 2
    shifts = big_e.astype(np.int64) + k  # σ = 2**shift for level 1
    last = shifts + (levels - 1) * (k - 53)
    usable = (top > 0) & (shifts <= 1022) & (last >= -1074 + 53)
    sigmas = [np.ldexp(1.0, np.where(usable, shifts + level * (k - 53), 0)) for level in range(levels)]
    exact = [np.zeros(d) for _ in range(levels)]
    rest = np.zeros(d)
    step = max(1, BLOCK_ENTRIES // d)
    q = np.empty((min(step, n), d))
    p = np.empty((min(step, n), d))
    with np.errstate(under="ignore", over="ignore", invalid="ignore"):
        for start in range(0, n, step):
            block = rows[start : start + step]
            qb, pb = q[: block.shape[0]], p[: block.shape[0]]
            source = block
            for level in range(levels):
                np.add(source, sigmas[level], out=qb)
                qb -= sigmas[level]
                exact[level] += qb.sum(axis=0)
                np.subtract(source, qb, out=pb)
                source = pb
            rest += pb.sum(axis=0)
        bound = (n - 1) * _U / (1 - (n - 1) * _U) * n * _U * sigmas[-1]  # |rest − Σ p_last|
        r, inner, last = _combine([*exact, rest])
        m = len(inner)
        gamma = (m - 1) * _U / (1 - (m - 1) * _U) if m > 1 else 0.0
        spread = sum((np.abs(e) for e in inner), np.zeros(d))
        certain = (np.abs(last) + gamma * spread + bound) * _SAFETY  # >= |T − r|
        below, above = r - np.nextafter(r, -np.inf), np.nextafter(r, np.inf) - r  # (exact)
        half_gap = np.minimum(np.abs(below), np.abs(above)) * 0.5
        decided = usable & (certain < half_gap) & ((np.abs(r) + certain) * _SAFETY <= largest)
    out: FloatArray = np.where(top == 0, 0.0, r)
    for j in np.flatnonzero(~decided & (top != 0)).tolist():  # (a NaN column too: as before)
        out[j] = exact_float_sum(np.ascontiguousarray(rows[:, j]), saturation)
    return out


def _two_sum(a: FloatArray, b: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Knuth's TwoSum: s = fl(a + b) and the exact error e = a + b − s (a float; no overflow here)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _combine(parts: list[FloatArray]) -> tuple[FloatArray, list[FloatArray], FloatArray]:
    """``(r, inner, last)`` with Σ parts = r + last + (Σ inner − f) exactly, where f = fl(Σ inner) (summed in
    order, so |Σ inner − f| <= γ_{m−1}·Σ|inner| for m = len(inner), Higham 2002 §4.2): ``inner`` are the
    errors of the TwoSum chain acc ← acc + part, and r, last = TwoSum(acc, f)."""
    acc = parts[0]
    inner: list[FloatArray] = []
    for part in parts[1:]:
        acc, e = _two_sum(acc, part)
        inner.append(e)
    if not inner:
        return acc, [], np.zeros_like(acc)
    folded = inner[0]
    for e in inner[1:]:
        folded = folded + e
    r, last = _two_sum(acc, folded)
    return r, inner, last
