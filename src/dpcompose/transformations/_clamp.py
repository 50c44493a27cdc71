"""Clamping: force every record into declared bounds."""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose.accounting import float_down, float_up
from dpcompose.core import (
    AtomDomain,
    ChangeOneDistance,
    Domain,
    Metric,
    Node,
    SymmetricDistance,
    Transformation,
    VectorDomain,
)
from dpcompose.core._metrics import check_space, refuse_identifier_metric
from dpcompose.core._recipe import recorded
from dpcompose.errors import DomainMismatch, InvalidParameter

__all__ = ["make_clamp"]

_DATASET_METRICS = (SymmetricDistance, ChangeOneDistance)


def check_dataset_metric(input_metric: Metric) -> None:
    """Raise DomainMismatch unless ``input_metric`` counts changed records (a user-level metric is
    refused with a message naming ``make_bound_contributions``)."""
    refuse_identifier_metric(input_metric)
    if not isinstance(input_metric, _DATASET_METRICS):
        raise DomainMismatch(
            f"input_metric={input_metric!r} must be SymmetricDistance() or ChangeOneDistance()"
        )


def numeric_vector_carrier(input_domain: Domain) -> type:
    """The element type of a VectorDomain of int/float atoms; DomainMismatch otherwise."""
    if (
        isinstance(input_domain, VectorDomain)
        and isinstance(input_domain.element_domain, AtomDomain)
        and input_domain.element_domain.carrier in (int, float)
    ):
        return input_domain.element_domain.carrier
    raise DomainMismatch(f"input_domain={input_domain!r} must be a VectorDomain of int or float atoms")


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def int64_array(data: Any) -> np.ndarray[Any, np.dtype[np.int64]]:
    """The members of an int vector domain whose values all fit in int64, as one int64 array.

    Numpy integer arrays are converted in C (exact: the caller guarantees the values fit); a Python list is
    converted once (``np.asarray``), with a per-element fallback for lists whose elements numpy cannot
    convert in one go (a mixture of numpy scalar types, say). Never used on values outside int64.
    """
    if isinstance(data, np.ndarray):
        return data.astype(np.int64, copy=False)
    try:
        return np.asarray(data, dtype=np.int64)
    except (OverflowError, TypeError, ValueError):  # pragma: no cover - defensive, values fit
        return np.fromiter((int(x) for x in data), dtype=np.int64, count=len(data))


def _clamp_int64(data: Any, lo: int, hi: int) -> np.ndarray[Any, np.dtype[np.int64]]:
    """Clamp an int dataset (any member of an int vector domain) into ``[lo, hi]`` ⊂ int64, vectorised.

    Signed arrays are widened to int64 and clipped; unsigned arrays are first capped at ``max(hi, 0)``
    in their own type (so values ≥ 2**63 never reach int64); a list is converted once, and a list holding
    a value beyond int64 (a Python int such as 2**70) is clamped element by element in Python first —
    exact either way, and the result is the same array.
    """
    if isinstance(data, np.ndarray):
        if data.dtype.kind == "u":
            data = np.minimum(data, np.uint64(max(hi, 0)))
        arr = data.astype(np.int64, copy=False)
    else:
        try:
            arr = np.asarray(data, dtype=np.int64)
        except (OverflowError, TypeError, ValueError):  # a value beyond int64: clamp it exactly first
            arr = np.fromiter((min(max(int(x), lo), hi) for x in data), dtype=np.int64, count=len(data))
    out: np.ndarray[Any, np.dtype[np.int64]] = np.clip(arr, lo, hi)
    return out


def _check_float_bounds(bounds: tuple[Any, Any]) -> None:
    """Float clamping bounds must be float64 values exactly: ``np.clip`` rounds a bound to the nearest
    float, which can lie outside it (2**53 + 3 becomes 2**53 + 4; a Fraction bound made an object array),
    and the output would leave the declared domain (so that clamp >> sum cannot under-report)."""
    for b in bounds:
        if isinstance(b, bool) or not isinstance(b, int | float | Fraction):
            raise InvalidParameter(f"bounds={bounds!r} must be numbers for a float domain")
        if isinstance(b, float):
            continue  # (a float is one; NaN and ±inf are refused by the domain, naming the bounds)
        below, above = float_down(b), float_up(b)
        if below != above:
            shown = _short(bounds[0]), _short(bounds[1])
            if math.isinf(below) or math.isinf(above):  # beyond the float range: only a finite bound will do
                raise InvalidParameter(
                    f"bounds=({shown[0]}, {shown[1]}): {_short(b)} is beyond the float64 range "
                    f"(±{_MAX_FLOAT!r}), and a float domain is clamped to finite floats; use a float bound "
                    f"such as {math.copysign(_MAX_FLOAT, below)!r}"
                )
            raise InvalidParameter(
                f"bounds=({shown[0]}, {shown[1]}): {_short(b)} is not a float64 value, and a float domain is "
                f"clamped to floats; use a float bound ({below!r} or {above!r}, whichever side you want)"
            )


_MAX_FLOAT = sys.float_info.max


def _short(b: object) -> str:
    """``repr(b)``, cut to its start (with an integer's number of digits) beyond 40 characters: a bound like
    10**400 would otherwise fill the message."""
    try:
        text = repr(b)
    except ValueError:  # beyond Python's 4300-digit int-to-str limit, repr raises
        if isinstance(b, int):
            return f"an integer of about {int(abs(b).bit_length() * math.log10(2)) + 1} digits"
        return f"a {type(b).__name__} too long to print"
    if len(text) <= 40:
        return text
    if isinstance(b, int):
        return f"{text[:12]}… ({len(text.lstrip('-'))} digits)"
    return f"{text[:30]}…"


@recorded
def make_clamp(
    input_domain: Domain, input_metric: Metric, bounds: tuple[Any, Any]
) -> Transformation[Any, Any, int, int]:
    """Clamp each record into ``bounds = (lo, hi)``; stability d_out = d_in (record-wise map).

    Vectorised: the result is a numpy array — ``float64`` for floats, ``int64`` for ints whose bounds lie
    in the int64 range. Integer bounds beyond int64 (which only Python ints can reach) give a list of
    Python ints, clamped exactly; which of the two is decided by the public bounds, never by the data.

    Args:
        input_domain: a ``VectorDomain`` of int or float atoms (NaN is not allowed for floats).
        input_metric: ``SymmetricDistance()`` or ``ChangeOneDistance()``.
        bounds: closed interval, finite, lo ≤ hi, of the element type.

    Source: a record-wise map changes at most the records it is given (McSherry 2009, §2.2 stability).

    Examples:
        >>> import dpcompose as dp
        >>> t = dp.t.make_clamp(dp.VectorDomain(dp.AtomDomain(float)), dp.SymmetricDistance(), (0.0, 1.0))
        >>> t([-1.0, 0.5, 3.0]).tolist()
        [0.0, 0.5, 1.0]
        >>> t.output_domain
        VectorDomain(AtomDomain(float, bounds=(0.0, 1.0)))
        >>> dp.t.make_clamp(dp.VectorDomain(dp.AtomDomain(int)), dp.SymmetricDistance(), (0, 9))([-3, 12])
        array([0, 9])
    """
    check_dataset_metric(input_metric)
    check_space(input_domain, input_metric)
    carrier = numeric_vector_carrier(input_domain)
    assert isinstance(input_domain, VectorDomain)
    if input_domain.element_domain.member(float("nan")) if carrier is float else False:
        raise DomainMismatch("make_clamp cannot clamp NaN: use an AtomDomain(float) with nan=False")
    if not isinstance(bounds, tuple) or len(bounds) != 2:
        raise InvalidParameter(f"bounds={bounds!r} must be a pair (lo, hi)")
    if carrier is int and not all(isinstance(b, int) and not isinstance(b, bool) for b in bounds):
        raise InvalidParameter(f"bounds={bounds!r} must be integers for an int domain")
    if carrier is float:
        _check_float_bounds(bounds)
    output_domain = VectorDomain(AtomDomain(carrier, bounds=bounds), size=input_domain.size)
    lo, hi = output_domain.element_domain.bounds  # type: ignore[attr-defined]
    int64_bounds = carrier is int and lo >= INT64_MIN and hi <= INT64_MAX

    def run(data: Any) -> Any:
        if carrier is float:
            return np.clip(np.asarray(data, dtype=np.float64), lo, hi)
        if int64_bounds:
            return _clamp_int64(data, lo, hi)
        values = data.tolist() if isinstance(data, np.ndarray) else data
        return [min(max(int(x), lo), hi) for x in values]  # bounds beyond int64: exact Python ints

    return Transformation(
        input_domain,
        output_domain,
        input_metric,
        input_metric,
        run,
        lambda d_in: d_in,
        node=Node("clamp", params=(("bounds", repr(bounds)),), source="record-wise map (1-stable)"),
    )
