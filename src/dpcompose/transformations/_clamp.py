"""Clamping: force every record into declared bounds."""

from __future__ import annotations

from typing import Any

import numpy as np

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
from dpcompose.errors import DomainMismatch, InvalidParameter

__all__ = ["make_clamp"]

_DATASET_METRICS = (SymmetricDistance, ChangeOneDistance)


def check_dataset_metric(input_metric: Metric) -> None:
    """Raise DomainMismatch unless ``input_metric`` counts changed records."""
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


def make_clamp(
    input_domain: Domain, input_metric: Metric, bounds: tuple[Any, Any]
) -> Transformation[Any, Any, int, int]:
    """Clamp each record into ``bounds = (lo, hi)``; stability d_out = d_in (record-wise map).

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
    """
    check_dataset_metric(input_metric)
    carrier = numeric_vector_carrier(input_domain)
    assert isinstance(input_domain, VectorDomain)
    if input_domain.element_domain.member(float("nan")) if carrier is float else False:
        raise DomainMismatch("make_clamp cannot clamp NaN: use an AtomDomain(float) with nan=False")
    if not isinstance(bounds, tuple) or len(bounds) != 2:
        raise InvalidParameter(f"bounds={bounds!r} must be a pair (lo, hi)")
    lo, hi = bounds
    if carrier is int and not all(isinstance(b, int) and not isinstance(b, bool) for b in bounds):
        raise InvalidParameter(f"bounds={bounds!r} must be integers for an int domain")
    output_domain = VectorDomain(AtomDomain(carrier, bounds=(lo, hi)), size=input_domain.size)
    dtype = np.int64 if carrier is int else np.float64

    def run(data: Any) -> Any:
        if carrier is int:
            return [min(max(int(x), lo), hi) for x in data]
        return np.clip(np.asarray(data, dtype=dtype), lo, hi)

    return Transformation(
        input_domain,
        output_domain,
        input_metric,
        input_metric,
        run,
        lambda d_in: d_in,
        node=Node("clamp", params=(("bounds", repr(bounds)),), source="record-wise map (1-stable)"),
    )
