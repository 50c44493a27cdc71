"""Private validation helpers: every public entry point checks its parameters with these first.

Each helper raises :class:`~dpcompose.errors.InvalidParameter` with a message of the form
``"{name}={value!r} must be …"`` so the user sees the offending value, and returns the value so it can be
used inline.

Reading numbers (the one place where a user's number becomes a number the library computes with):
:func:`read_real` accepts every real type a user may pass and returns its **exact** value as an ``int``,
a ``float`` (when the value is exactly a double) or a :class:`~fractions.Fraction`:

* Python ``int``, ``float`` and :class:`~fractions.Fraction`; any other :class:`numbers.Rational`
  (read through its numerator and denominator);
* numpy integers of every width (``int8`` … ``uint64``) and numpy floats (``float16``, ``float32``,
  ``float64``, ``longdouble``): a float is read exactly through ``as_integer_ratio``, so a ``longdouble``
  keeps its extra bits (it is never rounded to a double first);
* :class:`decimal.Decimal`: its exact value;
* a 0-d numpy array of a real dtype is read as the scalar it holds (numpy functions return them where a
  scalar is meant); any other array is refused.

Refused with ``InvalidParameter``: ``bool`` and ``numpy.bool_`` (a flag is not a number), complex numbers,
strings, ``None`` and every other type; NaN and ±inf (any type, ``Decimal('NaN')`` included); and numbers
whose magnitude exceeds the largest double (about 1.8e308, e.g. ``10**400`` or ``Decimal('1e400')``),
which no computation downstream could carry — they are refused as too large rather than overflowing later;
likewise a rational whose denominator exceeds 2**10000 (a ``longdouble`` subnormal near 1e-4950,
``Decimal('1e-5000')``), which is refused as too small to use exactly. ``-0.0`` is read as ``0``; double
subnormals such as ``5e-324`` are read exactly.

Which number a budget or a cost *means* (its binary value or the decimal it prints as) is decided in
:mod:`dpcompose.accounting._exact` (``exact`` and ``decimal``), on top of this reading.
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction

import numpy as np

from dpcompose.errors import InvalidParameter

__all__ = [
    "check_callable",
    "check_finite",
    "check_finite_nonnegative",
    "check_finite_positive",
    "check_nonempty",
    "check_nonnegative_int",
    "check_positive_int",
    "check_probability",
    "check_same_length",
    "check_str",
    "read_real",
    "real_scalar",
]

_FLOAT_MAX = Fraction(sys.float_info.max)
_TYPES = "an int, float, Fraction, Decimal or numpy number"


def short_repr(value: object) -> str:
    """A short ``repr`` for messages: cut to 80 characters, and never an exception of its own (a number too
    long for Python to print, an int or Fraction of more than 4,300 digits, is described instead; so is a
    user's object whose ``repr`` raises). The one such helper of the library: an error message that raised
    while being written would replace the library's error (a ``DomainMismatch`` for data outside the domain,
    say) with a raw ``ValueError``."""
    try:
        try:
            text = str.__str__(repr(value))  # (a plain str, whatever subclass a __repr__ returned)
        except ValueError:  # an int or Fraction with more than 4,300 digits
            text = f"<{type(value).__name__} with thousands of digits>"
        except Exception:  # a user object whose repr fails
            text = f"<{type(value).__name__}>"
    except Exception:  # (a type whose __name__ fails)
        text = "<object>"
    return text if len(text) <= 80 else text[:77] + "..."


def real_scalar(value: object) -> object:
    """``value`` itself, or the scalar a 0-d numpy array of a real dtype holds (other arrays refused)."""
    if isinstance(value, np.ndarray):
        if value.ndim == 0 and value.dtype.kind in "iuf":
            return value[()]
        return None  # refused by the caller as not a real number
    return value


def _too_large(value: object, name: str) -> InvalidParameter:
    return InvalidParameter(
        f"{name}={short_repr(value)} is too large: numbers beyond ±1.8e308 (the range of a double) are not "
        "supported"
    )


_MIN_EXPONENT = 3000
_MAX_DENOMINATOR_BITS = 10_000  # 2**-10000 ≈ 1e-3010: far below the smallest double, 5e-324


def _too_small(value: object, name: str) -> InvalidParameter:
    return InvalidParameter(
        f"{name}={short_repr(value)} is too small (or too finely divided) to be used exactly: numbers need a "
        "denominator below 2**10000 (any double, and any decimal down to 1e-3000, qualifies)"
    )


def read_real(value: object, name: str) -> float | Fraction | int:
    """The exact value of a finite real number of any supported type (see the module docstring).

    Returns an ``int`` for integers, a ``float`` when the value is exactly a double (``-0.0`` becomes
    ``0.0``), else a :class:`~fractions.Fraction` (a ``longdouble`` with more bits than a double, a
    ``Decimal``, a ``Fraction``).

    Raises:
        InvalidParameter: not a real number (bool, complex, str, None, an array, …), NaN or ±inf, or
            beyond the range of a double.

    Examples:
        >>> import numpy as np
        >>> from decimal import Decimal
        >>> read_real(np.float32(0.5), "x"), read_real(np.int8(-3), "x"), read_real(Decimal("0.1"), "x")
        (0.5, -3, Fraction(1, 10))
        >>> read_real(True, "x")
        Traceback (most recent call last):
        ...
        dpcompose.errors.InvalidParameter: x=True must be a real number (an int, float, Fraction, ...
    """
    v = real_scalar(value)
    out: float | Fraction | int
    if isinstance(value, np.ndarray) and v is None:
        raise InvalidParameter(f"{name}={short_repr(value)} must be a real number ({_TYPES}), not an array")
    if isinstance(v, (bool, np.bool_)):
        raise InvalidParameter(f"{name}={short_repr(value)} must be a real number ({_TYPES}), not a bool")
    if isinstance(v, float):  # Python floats and numpy.float64
        f = float(v)
        if not math.isfinite(f):
            raise InvalidParameter(f"{name}={short_repr(value)} must be finite (not NaN or ±inf)")
        return f + 0.0  # -0.0 -> 0.0
    if isinstance(v, int):
        out = int(v)
        if out.bit_length() >= 1024 and abs(out) > _FLOAT_MAX:
            raise _too_large(value, name)
        return out
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        if not np.isfinite(v):
            raise InvalidParameter(f"{name}={short_repr(value)} must be finite (not NaN or ±inf)")
        num, den = v.as_integer_ratio()
        out = Fraction(num, den)
    elif isinstance(v, Fraction):
        out = v
    elif isinstance(v, Decimal):
        if not v.is_finite():
            raise InvalidParameter(f"{name}={short_repr(value)} must be finite (not NaN or ±inf)")
        if v.adjusted() > 400:  # far beyond the double range: refuse before building a huge integer
            raise _too_large(value, name)
        if v.adjusted() < -_MIN_EXPONENT and v != 0:  # refuse before building a huge integer
            raise _too_small(value, name)
        out = Fraction(v)
    elif isinstance(v, numbers.Rational):
        out = Fraction(int(v.numerator), int(v.denominator))
    else:
        raise InvalidParameter(f"{name}={short_repr(value)} must be a real number ({_TYPES})")
    if abs(out) > _FLOAT_MAX:
        raise _too_large(value, name)
    if out.denominator.bit_length() > _MAX_DENOMINATOR_BITS:
        raise _too_small(value, name)
    if out.denominator & (out.denominator - 1) == 0 and out.denominator.bit_length() <= 1075:
        f = float(out)
        if Fraction(f) == out:
            return f + 0.0
    return out


def _as_real(value: object, name: str) -> float | Fraction | int:
    return read_real(value, name)


def check_finite(value: object, name: str) -> float | Fraction | int:
    """The exact value of a finite real number (:func:`read_real`), else raise ``InvalidParameter``."""
    return read_real(value, name)


def check_finite_nonnegative(value: object, name: str) -> float | Fraction | int:
    """Return ``value`` if it is finite and ≥ 0, else raise ``InvalidParameter``."""
    v = check_finite(value, name)
    if v < 0:
        raise InvalidParameter(f"{name}={short_repr(value)} must be non-negative")
    return v


def check_finite_positive(value: object, name: str) -> float | Fraction | int:
    """Return ``value`` if it is finite and > 0, else raise ``InvalidParameter``."""
    v = check_finite(value, name)
    if v <= 0:
        raise InvalidParameter(f"{name}={short_repr(value)} must be positive")
    return v


def check_probability(value: object, name: str) -> float | Fraction | int:
    """Return ``value`` if it lies in [0, 1), the valid range of a δ, else raise ``InvalidParameter``."""
    v = check_finite(value, name)
    if not 0 <= v < 1:
        raise InvalidParameter(f"{name}={short_repr(value)} must lie in [0, 1)")
    return v


def _read_int(value: object, name: str) -> int:
    v = real_scalar(value)
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise InvalidParameter(f"{name}={short_repr(value)} must be an integer")
    out = int(v)
    if out.bit_length() >= 1024 and abs(out) > _FLOAT_MAX:
        raise _too_large(value, name)
    return out


def check_positive_int(value: object, name: str) -> int:
    """The value of an integer ≥ 1 (a Python or numpy integer, at most the double range), else raise
    ``InvalidParameter``."""
    v = _read_int(value, name)
    if v < 1:
        raise InvalidParameter(f"{name}={short_repr(value)} must be at least 1")
    return v


def check_nonnegative_int(value: object, name: str) -> int:
    """The value of an integer ≥ 0 (a Python or numpy integer, at most the double range), else raise
    ``InvalidParameter``."""
    v = _read_int(value, name)
    if v < 0:
        raise InvalidParameter(f"{name}={short_repr(value)} must be non-negative")
    return v


def check_callable(value: object, name: str) -> None:
    """Raise ``InvalidParameter`` unless ``value`` is callable."""
    if not callable(value):
        raise InvalidParameter(f"{name}={short_repr(value)} must be callable")


def check_str(value: object, name: str, choices: Sequence[str] | None = None) -> str:
    """The value of a string (one of ``choices`` if given), else raise ``InvalidParameter``."""
    if not isinstance(value, str):
        raise InvalidParameter(f"{name}={short_repr(value)} must be a string")
    if choices is not None and value not in choices:
        raise InvalidParameter(f"{name}={value!r} must be one of {', '.join(map(repr, choices))}")
    return value


def check_nonempty(values: Sequence[object], name: str) -> None:
    """Raise ``InvalidParameter`` if ``values`` is empty (or not a sized collection)."""
    try:
        size = len(values)
    except TypeError:
        raise InvalidParameter(f"{name}={short_repr(values)} must be a sequence") from None
    if size == 0:
        raise InvalidParameter(f"{name}={list(values)!r} must not be empty")


def check_same_length(a: Sequence[object], a_name: str, b: Sequence[object], b_name: str) -> None:
    """Raise ``InvalidParameter`` unless ``a`` and ``b`` have the same length."""
    if len(a) != len(b):
        raise InvalidParameter(
            f"{a_name} has {len(a)} entries but {b_name} has {len(b)}: they must have the same length"
        )
