"""Shared parameter checks for the accounting functions (private).

Every public accounting function validates its inputs with these before computing anything, so a NaN,
an infinity, a negative ε, a δ outside [0, 1), an empty list or two lists of different lengths raise
:class:`~dpcompose.errors.InvalidParameter` naming the argument (and the index) and the value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction

from dpcompose._validation import (
    check_finite_nonnegative,
    check_finite_positive,
    check_nonempty,
    check_probability,
    check_same_length,
)
from dpcompose.accounting._exact import exact
from dpcompose.errors import InvalidParameter

__all__ = [
    "ONE",
    "ZERO",
    "as_sequence",
    "delta_list",
    "epsilon_list",
    "nonnegative",
    "positive",
    "probability",
]

ZERO = Fraction(0)
ONE = Fraction(1)


def as_sequence(values: object, name: str) -> Sequence[object]:
    """``values`` as a non-empty sequence (a bare number or a string is refused)."""
    if isinstance(values, (str, bytes)):  # (list() would read it as a sequence of one-character strings)
        raise InvalidParameter(f"{name}={values!r} must be a sequence of numbers")
    if not isinstance(values, Sequence):
        try:
            values = list(values)  # type: ignore[call-overload]
        except TypeError:
            raise InvalidParameter(f"{name}={values!r} must be a sequence of numbers") from None
    assert isinstance(values, Sequence)
    check_nonempty(values, name)
    return values


def _in_range(x: Fraction) -> bool:
    """A cheap sufficient test that ``|x|`` is within the double range (the slow path checks exactly)."""
    return x.numerator.bit_length() - x.denominator.bit_length() < 1023


def nonnegative(x: object, name: str) -> Fraction:
    """The exact value of a finite, non-negative number."""
    if type(x) is Fraction and x >= 0 and _in_range(x):  # fast path: already exact
        return x
    return exact(check_finite_nonnegative(x, name), name)


def positive(x: object, name: str) -> Fraction:
    """The exact value of a finite, positive number."""
    return exact(check_finite_positive(x, name), name)


def probability(x: object, name: str) -> Fraction:
    """The exact value of a δ in [0, 1)."""
    if type(x) is Fraction and 0 <= x < 1:  # fast path: already exact
        return x
    return exact(check_probability(x, name), name)


def epsilon_list(epsilons: object, name: str = "epsilons") -> list[Fraction]:
    """Exact values of a non-empty sequence of finite, non-negative ε's."""
    seq = as_sequence(epsilons, name)
    return [nonnegative(e, f"{name}[{i}]") for i, e in enumerate(seq)]


def delta_list(deltas: object, n: int, name: str = "deltas", other: str = "epsilons") -> list[Fraction]:
    """Exact values of a sequence of δ's in [0, 1), of length ``n`` (``None`` means all zero)."""
    if deltas is None:
        return [Fraction(0)] * n
    seq = as_sequence(deltas, name)
    check_same_length(list(range(n)), other, seq, name)
    return [probability(d, f"{name}[{i}]") for i, d in enumerate(seq)]


def bisect(lo: int, hi: int, ok: Callable[[int], bool]) -> int:
    """For ``ok`` false up to some index and true from there on: the first index in (lo, hi] where it
    holds (hi where it holds nowhere below), by bisection (about log₂(hi − lo) evaluations, none at lo or
    hi, so neither end needs to be valid)."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi
