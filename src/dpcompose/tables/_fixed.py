"""The fixed-point grid of a summed column (a :class:`~dpcompose.tables._engine.SumSpec`): the engines sum
the exact integers ``round(x / 2**k)`` of the clamped values, and the driver scales a noisy sum back by
``2**k`` (post-processing).

Exactness: every grid value has magnitude at most ``2**31`` (:func:`sum_spec`), and a variance's squares
are shifted right until each is within ``2**31`` too (:func:`square_spec`).

Examples:
    >>> from dpcompose.tables._schema import Column
    >>> spec = sum_spec("x", Column(float, bounds=(0.0, 1000.0)), None)
    >>> spec.k, grid_bound(spec)  # 1000 = 1000·2**21 grid units of 2**-21
    (-21, 2097152000)
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import Any

from dpcompose.errors import InvalidParameter
from dpcompose.tables._engine import SumSpec
from dpcompose.tables._schema import Column

__all__ = ["grid_bound", "square_spec", "sum_spec", "unit_exponent"]


def _floor_log2(x: int | float) -> int:
    return math.frexp(x)[1] - 1


def sum_spec(name: str, column: Column, bounds: tuple[Any, Any] | None) -> SumSpec:
    """The grid of a summed column: ``k = ⌊log₂ max(|lo|, |hi|)⌋ - 30`` so every grid value has magnitude at
    most ``2**31`` (ints with ``max(|lo|, |hi|) < 2**31`` stay exact, ``k = 0``)."""
    if column.kind not in ("int", "float"):
        raise InvalidParameter(f"column={name!r} is a {column.kind} column; sum and mean need int or float")
    use = Column(column.dtype, bounds=bounds if bounds is not None else column.bounds, fill=column.fill)
    if use.bounds is None:
        raise InvalidParameter(
            f"column={name!r} has no bounds: declare Column(..., bounds=(lo, hi)) or pass bounds= to the "
            "aggregate"
        )
    if column.nullable and column.fill is None:
        raise InvalidParameter(
            f"column={name!r} is nullable: declare Column(..., fill=v), the value a null stands for in sums"
        )
    lo, hi = use.bounds
    fill = use.fill if use.fill is not None else min(max(0, lo), hi)
    big = max(abs(lo), abs(hi))
    k = 0 if big == 0 or (column.kind == "int" and big < 1 << 31) else _floor_log2(big) - 30
    return SumSpec(name, column.kind, lo, hi, fill, k)


def _to_grid(x: int | float, spec: SumSpec) -> int:
    """The grid value of a (clamped) number, exactly as the engines compute it (round half to even)."""
    q = Fraction(x) / Fraction(2) ** spec.k
    return round(q)  # Python's round of a Fraction is half to even


def square_spec(spec: SumSpec) -> SumSpec:
    """The sum of squares of ``spec``'s grid values for a variance: ``⌊g²/2**shift⌋`` with shift =
    max(0, 2·bitlen(M) − 31) for the grid bound M, so every summed value stays within 2**31."""
    return dataclasses.replace(spec, square=True, shift=max(0, 2 * grid_bound(spec).bit_length() - 31))


def grid_bound(spec: SumSpec) -> int:
    """``M = max(|lo_g|, |hi_g|)``: the most one row moves a sum, in grid units (for a ``square`` spec,
    ``⌊M²/2**shift⌋``, the largest summed value; they are all ≥ 0)."""
    m = max(abs(_to_grid(spec.lo, spec)), abs(_to_grid(spec.hi, spec)))
    return (m * m) >> spec.shift if spec.square else m


def unit_exponent(spec: SumSpec) -> int:
    """A summed value's unit is ``2**e``: the grid ``2**k``, or ``2**(2k + shift)`` for squares."""
    return 2 * spec.k + spec.shift if spec.square else spec.k
