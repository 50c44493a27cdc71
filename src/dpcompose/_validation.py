"""Private validation helpers: every public entry point checks its parameters with these first.

Each helper raises :class:`~dpcompose.errors.InvalidParameter` with a message of the form
``"{name}={value!r} must be …"`` so the user sees the offending value, and returns the value so it can be
used inline.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from numbers import Real

from dpcompose.errors import InvalidParameter

__all__ = [
    "check_finite",
    "check_finite_nonnegative",
    "check_finite_positive",
    "check_nonempty",
    "check_nonnegative_int",
    "check_positive_int",
    "check_probability",
    "check_same_length",
]


def _as_real(value: object, name: str) -> float | Fraction | int:
    if isinstance(value, bool) or not isinstance(value, (Real, Fraction)):
        raise InvalidParameter(f"{name}={value!r} must be a real number (int, float or Fraction)")
    if isinstance(value, (int, Fraction)):
        return value
    return float(value)  # numpy floating etc.


def check_finite(value: object, name: str) -> float | Fraction | int:
    """Return ``value`` if it is a finite real number, else raise ``InvalidParameter``."""
    v = _as_real(value, name)
    if isinstance(v, float) and not math.isfinite(v):
        raise InvalidParameter(f"{name}={value!r} must be finite (not NaN or ±inf)")
    return v


def check_finite_nonnegative(value: object, name: str) -> float | Fraction | int:
    """Return ``value`` if it is finite and ≥ 0, else raise ``InvalidParameter``."""
    v = check_finite(value, name)
    if v < 0:
        raise InvalidParameter(f"{name}={value!r} must be non-negative")
    return v


def check_finite_positive(value: object, name: str) -> float | Fraction | int:
    """Return ``value`` if it is finite and > 0, else raise ``InvalidParameter``."""
    v = check_finite(value, name)
    if v <= 0:
        raise InvalidParameter(f"{name}={value!r} must be positive")
    return v


def check_probability(value: object, name: str) -> float | Fraction | int:
    """Return ``value`` if it lies in [0, 1), the valid range of a δ, else raise ``InvalidParameter``."""
    v = check_finite(value, name)
    if not 0 <= v < 1:
        raise InvalidParameter(f"{name}={value!r} must lie in [0, 1)")
    return v


def check_positive_int(value: object, name: str) -> int:
    """Return ``value`` if it is an integer ≥ 1, else raise ``InvalidParameter``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidParameter(f"{name}={value!r} must be an integer")
    if value < 1:
        raise InvalidParameter(f"{name}={value!r} must be at least 1")
    return value


def check_nonnegative_int(value: object, name: str) -> int:
    """Return ``value`` if it is an integer ≥ 0, else raise ``InvalidParameter``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidParameter(f"{name}={value!r} must be an integer")
    if value < 0:
        raise InvalidParameter(f"{name}={value!r} must be non-negative")
    return value


def check_nonempty(values: Sequence[object], name: str) -> None:
    """Raise ``InvalidParameter`` if ``values`` is empty."""
    if len(values) == 0:
        raise InvalidParameter(f"{name}={list(values)!r} must not be empty")


def check_same_length(a: Sequence[object], a_name: str, b: Sequence[object], b_name: str) -> None:
    """Raise ``InvalidParameter`` unless ``a`` and ``b`` have the same length."""
    if len(a) != len(b):
        raise InvalidParameter(
            f"{a_name} has {len(a)} entries but {b_name} has {len(b)}: they must have the same length"
        )
