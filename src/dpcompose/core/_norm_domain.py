"""Fixed-size float vectors of bounded L1 or L2 norm: the records of a vector sum.

A dataset of such records is ``VectorDomain(NormBallDomain(size=d, norm=c, p=2))``; as data it is a 2-d
numpy array of shape ``(n, d)`` (vectorised) or a list of rows.

Examples:
    >>> import dpcompose as dp
    >>> ball = dp.NormBallDomain(size=2, norm=1.0, p=2)
    >>> ball.member([0.5, 0.5]), ball.member([0.75, 0.75]), ball.member([0.5])
    (True, False, False)

The test is exact: the floats 0.6 and 0.8 are slightly off 3/5 and 4/5, and their squares add up to
slightly more than 1:

    >>> ball.member([0.6, 0.8]), ball.member([0.6, 0.7999999999999999])
    (False, True)
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpcompose._validation import check_finite_positive, check_positive_int
from dpcompose.accounting import exact, float_down, float_up
from dpcompose.core._domains import AtomDomain, VectorDomain
from dpcompose.errors import InvalidParameter

__all__ = [
    "MAX_DIMENSION",
    "MIN_NORM",
    "NormBallDomain",
    "all_within",
    "exact_norm_within",
    "scaled_norms",
]

MAX_DIMENSION = 1 << 20
"""The largest vector size: keeps the float error of a computed norm below 2**-30 relative."""

MIN_NORM = 2.0**-900
"""The least norm bound: below it, rounding to subnormal floats could cost more than the 2**-20 margin."""

FloatRows = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True, repr=False, init=False)
class NormBallDomain(VectorDomain):
    """Float vectors of length ``size`` whose exact Lp norm (``p`` = 1 or 2) is at most ``norm``.

    A ``VectorDomain(AtomDomain(float), size=size)`` (finite floats; ints that are exact floats) with the
    extra condition ``‖x‖_p <= norm``, decided exactly: a vectorised float estimate with a rigorous error
    bound settles every row whose norm is not within a relative 2**-25 of the bound, and the rest are
    decided with exact rationals. The bound is stored as the greatest float at or below the ``norm`` given.

    Args:
        size: the dimension d (1 to 2**20).
        norm: the bound c > 0 (at least 2**-900; a float is read as its exact binary value).
        p: 1 (L1 norm) or 2 (L2 norm).

    Raises:
        InvalidParameter: ``size``, ``norm`` or ``p`` outside the ranges above.

    Examples:
        >>> import numpy as np
        >>> d = NormBallDomain(size=3, norm=1, p=1)
        >>> d, d.member(np.array([0.5, -0.25, 0.25])), d.member([0.5, -0.25, 0.5])
        (NormBallDomain(size=3, norm=1.0, p=1), True, False)
    """

    p: int = 2
    norm: float = 1.0

    def __init__(self, size: int, norm: float | int | Fraction, p: int = 2) -> None:
        d = check_positive_int(size, "size")
        if d > MAX_DIMENSION:
            raise InvalidParameter(f"size={size!r} must be at most 2**20")
        check_finite_positive(norm, "norm")
        bound = float_down(exact(norm, "norm"))
        if bound < MIN_NORM:
            raise InvalidParameter(f"norm={norm!r} must be at least 2**-900")
        order = check_positive_int(p, "p")
        if order not in (1, 2):
            raise InvalidParameter(f"p={p!r} must be 1 or 2")
        object.__setattr__(self, "element_domain", AtomDomain(float))
        object.__setattr__(self, "size", d)
        object.__setattr__(self, "p", order)
        object.__setattr__(self, "norm", bound)

    def member(self, value: object) -> bool:
        if not VectorDomain.member(self, value):
            return False
        assert isinstance(value, (list, tuple, np.ndarray)) or hasattr(value, "__len__")
        try:
            row = np.asarray(value, dtype=np.float64).reshape(1, -1)
        except Exception:  # pragma: no cover - members are sequences of exact floats
            return False
        return bool(np.all(exact_norm_within(row, self.p, self.norm)))

    def member_rows(self, rows: np.ndarray[Any, Any]) -> bool:
        if not VectorDomain.member_rows(self, rows):
            return False
        return all_within(rows.astype(np.float64, copy=False), self.p, self.norm)

    def __repr__(self) -> str:
        return f"NormBallDomain(size={self.size}, norm={self.norm!r}, p={self.p})"


def scaled_norms(rows: FloatRows, p: int) -> tuple[FloatRows, FloatRows, npt.NDArray[np.int64]]:
    """Per row ``x`` of finite floats: ``y = x·2**-E`` (``E`` the frexp exponent of ``max|xᵢ|``, so
    ``max|yᵢ| ∈ [1/2, 1)``) and a float ``s`` with ``|s·2**E − ‖x‖_p| <= 2**-30·‖x‖_p``.

    Error bound (d <= 2**20 entries, unit roundoff u = 2**-53): scaling by a power of two is exact except
    for entries that become subnormal (absolute error <= 2**-1075 each, against ``‖y‖ >= 1/2``); the sum
    of d non-negative terms in any order has relative error <= (d − 1)u/(1 − (d − 1)u) (Higham 2002,
    §4.2); squaring adds u (and an absolute 2**-1075 on underflow), the square root u/2. In all below
    (d + 3)·1.01·u + d·2**-1070 <= 2**-30. The bound applies to the computed ``y`` as well, which is the
    vector the clipping scales. A zero row has ``s = 0`` and ``E = 0``.
    """
    mags = np.abs(rows)
    top = mags.max(axis=1) if rows.shape[1] else np.zeros(rows.shape[0])
    _, exponent = np.frexp(top)
    e = exponent.astype(np.int64)
    with np.errstate(under="ignore"):
        y = np.ldexp(rows, -e[:, None])
        s = np.abs(y).sum(axis=1) if p == 1 else np.sqrt(np.square(y).sum(axis=1))
    return s, y, e


def _threshold(bound: float, e: npt.NDArray[np.int64], factor: float) -> FloatRows:
    """``fl(fl(bound·2**-E)·factor)`` per row; 0 or ∞ where the scaling leaves the float range."""
    mantissa, exponent = math.frexp(bound)
    with np.errstate(over="ignore", under="ignore"):
        scaled = np.ldexp(np.full(e.shape, mantissa), (exponent - e).astype(np.int64))
        out: FloatRows = scaled * factor
    return out


MARGIN = 2.0**-20
"""The clipping margin: rows within this relative distance of the bound are scaled (to just inside it)."""

DECIDE = 2.0**-25
"""The relative band around the bound in which membership is decided exactly, not by the float estimate
(narrower than :data:`MARGIN`, so clipped rows, which end about 2**-20 inside the bound, are settled fast)."""


def certainly_within(
    s: FloatRows, e: npt.NDArray[np.int64], bound: float, margin: float = MARGIN
) -> npt.NDArray[np.bool_]:
    """Rows whose exact norm is certainly <= ``bound``: ``s <= fl(fl(bound·2**-E)·(1 − margin))``, for a
    ``margin`` of at least 2**-28.

    Then ``‖x‖ <= (1 + 2**-30)·s·2**E <= (1 + 2**-30)(1 + u)²(1 − margin)·bound < bound`` (if the
    threshold overflows, ``bound·2**-E > 2**1023 > 2**21 >= s·(1 + 2**-30)``; if it underflows, no nonzero
    row passes, and a zero row has norm 0).
    """
    return s <= _threshold(bound, e, 1.0 - margin)


def certainly_beyond(
    s: FloatRows, e: npt.NDArray[np.int64], bound: float, margin: float = MARGIN
) -> npt.NDArray[np.bool_]:
    """Rows whose exact norm is certainly > ``bound``: ``s >= fl(fl(bound·2**-E)·(1 + margin))`` (by the
    mirror argument of :func:`certainly_within`; an underflowed threshold means ``max|xᵢ| > bound``)."""
    return (s > 0) & (s >= _threshold(bound, e, 1.0 + margin))


_PLAIN_LIMIT = 2.0**400
"""Rows of entries at most this in magnitude, with bounds in ``[2**-400, 2**400]``, are first tried with
plain float sums (:func:`_plain_decisions`): no square overflows, and no threshold is subnormal."""


def _plain_decisions(
    rows: FloatRows, p: int, bound: float
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """Rows certainly inside and certainly beyond the ball, from ``s = Σ xᵢ²`` (p = 2) or ``Σ |xᵢ|``
    (p = 1) in plain floats; for entries of magnitude at most 2**400 (the caller checks) and ``bound`` in
    ``[2**-400, 2**400]``.

    Error bound: each term is exact (``|xᵢ|``) or rounded once (``xᵢ²``: relative u, or absolute 2**-1075
    when subnormal); their sum in any order (BLAS, pairwise, SIMD, FMA) adds a relative γ_(d−1) (Higham
    2002, §4.2). With d <= 2**20, ``|s − S| <= 2**-33·S + 2**-1054`` for the exact S (``‖x‖²`` or
    ``‖x‖₁``). Only rows with ``s >= 2**-790`` are decided, where the absolute term is below 2**-263·S, so
    ``|s − S| <= 2**-32·S``. Against ``T`` (``bound²`` rounded down, or up, to a float, or ``bound``): a row
    is inside if ``s <= fl(T_down·(1 − 2**-30))``, so ``S <= s/(1 − 2**-32) < T_down <= bound^p``; beyond if
    ``s >= fl(T_up·(1 + 2**-30))``, so ``S > T_up``. Every threshold is a normal float (``bound^p`` lies in
    ``[2**-800, 2**800]``), so each is rounded with relative error u, far inside the margin.
    """
    if p == 2:
        s = np.einsum("ij,ij->i", rows, rows)
        target = Fraction(bound) ** 2
        low, high = float_down(target), float_up(target)
    else:
        s = np.abs(rows).sum(axis=1)
        low = high = bound
    decided = s >= 2.0**-790
    inside = decided & (s <= low * (1.0 - 2.0**-30))
    beyond = decided & (s >= high * (1.0 + 2.0**-30))
    return inside, beyond


def exact_norm_within(rows: FloatRows, p: int, bound: float) -> npt.NDArray[np.bool_]:
    """Per row of finite floats: whether ``‖row‖_p <= bound`` exactly (NaN or ±inf entries: ``False``).

    Vectorised for every row the float estimate settles (plain sums where magnitudes allow,
    :func:`_plain_decisions`, else scaled norms); rows within a relative 2**-25 of the bound are decided
    with exact rationals.

    Examples:
        >>> rows = np.array([[0.6, 0.8], [0.0, 1.0], [3.0, 4.0], [1.0, 1e-300], [np.nan, 0.0]])
        >>> exact_norm_within(rows, 2, 1.0).tolist()
        [False, True, False, False, False]
    """
    if rows.size and 2.0**-400 <= bound <= _PLAIN_LIMIT:
        top, bottom = rows.max(), rows.min()  # NaN propagates: both are numbers iff no entry is NaN
        if bottom >= -_PLAIN_LIMIT and top <= _PLAIN_LIMIT:  # false for NaN and ±inf
            inside, beyond = _plain_decisions(rows, p, bound)
            rest = ~(inside | beyond)
            if rest.any():  # near the bound, or tiny: decided below, as every row was before
                inside[rest] = _scaled_norm_within(rows[rest], p, bound)
            return inside
    return _scaled_norm_within(rows, p, bound)


def all_within(rows: FloatRows, p: int, bound: float, scratch: FloatRows | None = None) -> bool:
    """Whether every row of a float64 ``(m, d)`` array has ``‖row‖_p <= bound``, exactly: the answer of
    ``all(exact_norm_within(rows, p, bound))``, faster when every row is clearly inside (one pass).

    For ``bound`` in ``[2**-400, 2**400]``, first ``s = Σ fl(xᵢ²)`` (p = 2) or ``Σ |xᵢ|`` (p = 1) per row
    (into ``scratch``, an array of the shape of ``rows`` if given; the sum by a matrix-vector product, in
    any order) against ``T = fl(float_down(bound**p)·(1 − 2**-30))``. If every ``s <= T``, every row is
    inside: no entry is NaN (``s`` would be NaN) or ±inf (``s`` would not be finite), the terms are
    non-negative so no partial sum exceeds ``s <= T < 2**801`` (no overflow), and, as in
    :func:`_plain_decisions` (Higham 2002, §4.2, d <= 2**20), the exact ``S`` satisfies
    ``S <= (s/(1 − 2**-32) + d·2**-1075)/(1 − u) < bound**p``, the absolute underflow term being below
    ``2**-255·bound**p``. Otherwise (or outside that range of bounds) :func:`exact_norm_within` decides.
    """
    if rows.size and 2.0**-400 <= bound <= _PLAIN_LIMIT:
        terms = np.empty_like(rows) if scratch is None else scratch
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            if p == 2:
                np.square(rows, out=terms)
            else:
                np.abs(rows, out=terms)
            s = terms @ np.ones(rows.shape[1])
        if bool(s.max() <= _inside_threshold(p, bound)):  # a NaN propagates: False
            return True
    return bool(np.all(exact_norm_within(rows, p, bound)))


@functools.lru_cache(maxsize=64)
def _inside_threshold(p: int, bound: float) -> float:
    """``fl(float_down(bound**p)·(1 − 2**-30))`` (see :func:`all_within`)."""
    return float_down(Fraction(bound) ** p) * (1.0 - 2.0**-30)


def _scaled_norm_within(rows: FloatRows, p: int, bound: float) -> npt.NDArray[np.bool_]:
    """:func:`exact_norm_within` by scaled norms (any finite magnitude); exact rationals near the bound."""
    out = np.zeros(rows.shape[0], dtype=bool)
    finite = np.asarray(np.isfinite(rows).all(axis=1), dtype=bool)
    clean = np.where(finite[:, None], rows, 0.0)
    s, _, e = scaled_norms(clean, p)
    inside = certainly_within(s, e, bound, DECIDE)
    undecided = finite & ~inside & ~certainly_beyond(s, e, bound, DECIDE)
    out[finite & inside] = True
    limit = Fraction(bound) if p == 1 else Fraction(bound) ** 2
    for i in np.flatnonzero(undecided).tolist():
        values = [Fraction(v) for v in rows[i].tolist()]
        total = sum(abs(v) for v in values) if p == 1 else sum(v * v for v in values)
        out[i] = total <= limit
    return out
