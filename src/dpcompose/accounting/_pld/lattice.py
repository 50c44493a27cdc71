"""The loss lattice h·Z (and aligned lattices) and the checks of the PLD constructors' parameters."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpcompose._validation import check_finite_nonnegative
from dpcompose.accounting import _pld_memory as memory
from dpcompose.errors import InvalidParameter

DEFAULT_STEP_BITS = 14
"""The default lattice: h = 2**-14 ≈ 6.1e-5."""


DEFAULT_TAIL = 1e-18
"""The default mass cut from each tail after a composition (moved to +∞ / the lowest point, never lost)."""


MULT_BITS = 20  # an aligned lattice's multiplier is below 2**20 (h within 2**-19 relative of its aim)


EXACT = 2**53  # index·multiplier below this: the position index·h is an exact float


_MIN_ATOM = Fraction(1, 2**50)  # an atom below this keeps the plain lattice (h would leave the normal floats'


# comfortable range: found by the bad-input fuzzer, ε = 5e-324 and Δ/b = 1e-308 overflowed)


@dataclass(frozen=True)
class Grid:
    """The lattice h·Z with h = ``mult``·2**-``bits`` (``mult`` odd, below 2**``MULT_BITS``; 1 for the plain
    lattice 2**-bits, others for lattices aligned with a mechanism's atoms).

    Every position J·h computed in this module is an exact float: J·mult stays below 2**53 (the plain
    lattice needs only |J| < 2**53; an aligned one is refused where a composition could reach further, see
    :func:`_check_reach`). Quotients x/h are not exact unless mult = 1: :meth:`steps` gives them in a form
    whose integer comparisons and floor are exact."""

    bits: int
    mult: int = 1

    @property
    def h(self) -> float:
        """The width, an exact float."""
        return math.ldexp(float(self.mult), -self.bits)

    @property
    def exact(self) -> Fraction:
        return Fraction(self.mult, 1 << self.bits)

    def steps(self, x: float) -> float:
        """x/h where mult = 1 (exact; ±∞ where it overflows); otherwise a float s with ⌊s⌋ = ⌊x/h⌋, s an
        integer exactly where x/h is one, and s compared with any integer as x/h is (for |x/h| < 2**52:
        beyond, x/h rounded, which lies past every index a PLD holds)."""
        try:
            if self.mult == 1:
                return math.ldexp(x, self.bits)
            q = math.ldexp(x / self.mult, self.bits)
        except OverflowError:
            return math.copysign(math.inf, x)
        if not math.isfinite(q) or abs(q) >= 2.0**52:
            return q
        j = math.floor(q)  # within one of ⌊x/h⌋ (two roundings); corrected exactly
        xe, he = Fraction(x), self.exact
        while (j + 1) * he <= xe:
            j += 1
        while j * he > xe:
            j -= 1
        return float(j) if j * he == xe else j + 0.5

    def describe(self) -> str:
        return f"2**-{self.bits}" if self.mult == 1 else f"{self.mult}·2**-{self.bits}"


def aligned_grid(bits: int, atom: Fraction) -> Grid:
    """The lattice through the loss ``atom`` > 0 (and so, nearly, through its multiples): h ≥ atom/N with
    N = ⌈atom·2**bits⌉, rounded *up* to a multiplier of at most 2**``MULT_BITS`` (so h ≤ 2**-bits still), so
    that N·h ≥ atom > N·h − atom·2**-19: the connect-the-dots split puts the atom's mass on N·h and one step
    below it, the share below being at most about N·2**-19 (small where N is: 1639 for Δ/b = 0.1 at 2**-14;
    for atoms of a few units and more it is not, and the plain lattice, read beside it by ``PrivacyLoss``, may
    be the tighter). (Rounded to nearest, the sliver could land one step *above* the atom,
    and at a small δ the composite's top points set ε(δ): 5 × Laplace(b = 1/3) at δ = 1e-9 would read
    15.0000047 where the plain lattice reads 14.9999999680.)"""
    n = max(1, math.ceil(atom * (1 << bits)))
    target = atom / n
    e = bits  # target·2**bits ≤ 1; the finest 2**-e that keeps the multiplier within 2**MULT_BITS:
    while target * (1 << (e + 1)) < 1 << MULT_BITS:
        e += 1
    mult = max(1, math.ceil(target * (1 << e)))
    while mult % 2 == 0:
        mult //= 2
        e -= 1
    return Grid(e, mult)


def _alignment_atom(kind: str, first: Fraction, second: Fraction, bits: int) -> Fraction:
    """The loss the aligned lattice of a mechanism runs through, from its two parameters: Δ/b for
    ``"laplace"`` (Δ, b); for ``"discrete_laplace"`` (Δ, t) 1/t, every loss being a multiple of it, where that
    is at least 2**-bits, else the end atom Δ/t (the losses are closer than the lattice); ε for
    ``"randomized_response"`` (ε, k) and ``"approx"`` (ε, δ)."""
    if kind == "laplace":
        return first / second
    if kind == "discrete_laplace":
        return 1 / second if 1 / second >= Fraction(1, 1 << bits) else first / second
    return first


def check_aligned(aligned: object) -> bool:
    if not isinstance(aligned, bool):
        raise InvalidParameter(f"aligned={aligned!r} must be True or False")
    return aligned


def constructor_grid(aligned: object, bits: int, kind: str, first: Fraction, second: Fraction) -> Grid:
    """The lattice a constructor builds on: with ``aligned`` True, the one through the mechanism's atom
    (:func:`_alignment_atom`, :func:`aligned_grid`); otherwise, or where that atom is 0 or below
    ``_MIN_ATOM``, the plain 2**-``bits``."""
    if not check_aligned(aligned):
        return Grid(bits)
    atom = _alignment_atom(kind, first, second, bits)
    return aligned_grid(bits, atom) if atom >= _MIN_ATOM else Grid(bits)


ALIGN_HINT = (
    " (a PLD built with aligned=True has a lattice of its own: build with aligned=False to compose it with "
    "other mechanisms)"
)


# ---------------------------------------------------------------------------------------------------------
# Building a PLD from bucket masses
# ---------------------------------------------------------------------------------------------------------


def fmt(x: Fraction) -> str:
    """A ratio for an error message (a Fraction too large for a float is shown as such)."""
    return f"{float(x):g}" if abs(x) < 10**300 else "more than 1e300"


def check_bits(step_bits: object) -> int:
    if isinstance(step_bits, bool) or not isinstance(step_bits, (int, np.integer)):
        raise InvalidParameter(f"step_bits={step_bits!r} must be an integer in [1, 40]")
    if not 1 <= step_bits <= 40:
        raise InvalidParameter(f"step_bits={step_bits!r} must be an integer in [1, 40]")
    return int(step_bits)


MAX_POINTS = 1 << 26
"""The most lattice points a PLD may span (each float64 array of that length takes 512 MiB). The defaults
stay below it: the widest default PLD (Laplace or randomized response at Δ/b = ε = 700, h = 2**-14) spans
2.3e7 points."""


def check_points(n: int, what: str, step_bits: int) -> None:
    """Refuse, before anything is allocated, a PLD (or a composition) spanning more than :data:`MAX_POINTS`
    lattice points, or needing more memory than is available (``BUILD_BYTES_PER_POINT`` per point:
    :mod:`~dpcompose.accounting._pld_memory`), naming the step_bits that would fit.

    ``n`` is the number of points ``what`` spans on the lattice ``2**-step_bits``. A span of S loss units
    takes between S·2**b and S·2**b + 3 points at step_bits b, so k fewer bits take at most n/2**k + 3: the
    suggestion is the largest b − k with n/2**k + 3 ≤ :data:`MAX_POINTS` (and within the memory).

    Raises:
        InvalidParameter: ``n`` exceeds :data:`MAX_POINTS`.
        ResourceLimit: its memory exceeds what is available.

    Examples:
        >>> check_points(1000, "a PLD", 14)  # fits: returns None
        >>> try:
        ...     check_points(2**30, "Laplace(Δ/b=20)", 20)
        ... except InvalidParameter as e:
        ...     print(str(e).split(": ")[-1])
        use step_bits at most 15
    """
    n = int(n)
    if n > MAX_POINTS:
        k = 1
        while n > (MAX_POINTS - 3) << k:
            k += 1
        fit = step_bits - k
        hint = f"use step_bits at most {fit}" if fit >= 1 else "no step_bits in [1, 40] fits"
        raise InvalidParameter(
            f"{what} spans {n} lattice points at step_bits={step_bits} (at most {MAX_POINTS}): {hint}"
        )
    need = n * memory.BUILD_BYTES_PER_POINT
    allowed = memory.over_budget(need)
    if allowed is not None:
        memory.refuse_memory(
            need,
            allowed,
            f"{what} ({n} lattice points at step_bits={step_bits})",
            "use " + memory.step_bits_fix(step_bits, need, allowed),
        )


def check_window(size: int, step_bits: int | None = None, distinct: int = 1, lower: bool = False) -> None:
    """Refuse, before it is allocated, a composition's FFT window of more than :data:`MAX_POINTS` lattice
    points (the composite of PLDs that fit can still span far more: two compositions of a 2**25-point PLD
    take more than 24 GB unrefused, until numpy gives up), or one whose memory at its peak
    (``window_bytes`` of :mod:`~dpcompose.accounting._pld_memory`: per point, and the spectra of its
    ``distinct`` vectors kept, of the ``lower`` side or the upper one) exceeds what is available, naming the
    ``step_bits`` that fits where given (a window halves with each bit fewer).

    Raises:
        InvalidParameter: ``size`` exceeds :data:`MAX_POINTS`.
        ResourceLimit: its memory exceeds what is available.
    """
    if size > MAX_POINTS:
        raise InvalidParameter(
            f"this composition's window spans {size} lattice points (at most {MAX_POINTS}): build its PLDs "
            "with a smaller step_bits"
        )
    need = memory.window_bytes(size, distinct, lower)
    allowed = memory.over_budget(need)
    if allowed is not None:
        fix = "build its PLDs with " + (
            memory.step_bits_fix(step_bits, need, allowed)
            if step_bits is not None
            else "a smaller step_bits (one bit fewer halves the window and the memory)"
        )
        memory.refuse_memory(need, allowed, f"this composition's FFT window of {size} lattice points", fix)


def check_int_sensitivity(sensitivity: object) -> int:
    """A non-negative integer sensitivity (of the discrete mechanisms), or InvalidParameter."""
    if isinstance(sensitivity, bool) or not isinstance(sensitivity, (int, np.integer)) or sensitivity < 0:
        raise InvalidParameter(f"sensitivity={sensitivity!r} must be a non-negative integer")
    return int(sensitivity)


def check_loss_cap(value: Fraction, name: str) -> None:
    """Refuse a largest finite loss above 700 (e^{−700} is near the smallest normal float: masses of that
    size are the ones the constructors' relative error bounds still cover)."""
    if value > 700:
        raise InvalidParameter(f"{name}={fmt(value)} must be at most 700 for a PLD")


def check_tail(tail: object) -> float:
    t = check_finite_nonnegative(tail, "tail")
    if not float(t) < 1e-6:
        raise InvalidParameter(f"tail={tail!r} must be below 1e-6")
    if 0 < float(t) < 1e-300:  # log(1/tail) is then infinite: the truncation window has no finite edge
        raise InvalidParameter(f"tail={tail!r} must be 0 or at least 1e-300")
    return float(t)


class Lattice:
    """Exact integer arithmetic of a loss that is affine and decreasing in an integer output z, on the lattice
    2**-bits·Z: L(z)·2**bits = (X − D·z)/Y with integers X, D > 0, Y > 0.

    Bucket j = (jh, (j + 1)h] holds the z with ⌈c_{j+1}⌉ ≤ z < ⌈c_j⌉, where c_j = (X − Y·j)/D is the
    output of loss jh. Arrays are int64 where nothing can overflow, else Python ints (object arrays).
    """

    def __init__(self, X: int, D: int, Y: int) -> None:
        self.X, self.D, self.Y = X, D, Y

    @staticmethod
    def _ceil_affine(values: npt.NDArray[Any], coef: int, const: int, den: int) -> npt.NDArray[Any]:
        """⌈(const − coef·values)/den⌉ elementwise, exactly."""
        big = int(np.max(np.abs(values))) if values.size else 0
        if abs(const) + abs(coef) * big < 1 << 62 and den < 1 << 62:
            num = const - coef * values.astype(np.int64)
        else:
            num = const - coef * values.astype(object)
        out: npt.NDArray[Any] = -((-num) // den)
        return out

    def bucket(self, z: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
        """j(z) with L(z) ∈ (j·h, (j + 1)·h] (the buckets fit in int64: their number is bounded)."""
        return np.asarray(self._ceil_affine(z, self.D, self.X, self.Y), dtype=np.int64) - 1

    def bucket_of(self, z: int) -> int:
        return -((self.D * z - self.X) // self.Y) - 1

    def edge_ceil(self, j: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
        """⌈c_j⌉: the integers z with L(z) > j·h are exactly those below it (int64 if they fit)."""
        e = self._ceil_affine(j, self.Y, self.X, self.D)
        if e.dtype == object and e.size and int(np.max(np.abs(e))) < 1 << 62:
            return e.astype(np.int64)
        return e
