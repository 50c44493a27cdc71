"""The Laplace mechanism."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose._validation import check_finite_positive
from dpcompose.accounting import exact
from dpcompose.core import (
    AbsoluteDistance,
    AtomDomain,
    Domain,
    L1Distance,
    Measurement,
    Metric,
    Node,
    PureDP,
    VectorDomain,
)
from dpcompose.errors import DomainMismatch
from dpcompose.measurements import _noise

__all__ = ["make_laplace"]

_NUMERIC = (int, float)


def make_laplace(
    input_domain: Domain,
    input_metric: Metric,
    scale: float,
    *,
    rng: np.random.Generator | None = None,
) -> Measurement[Any, Any, Fraction, Fraction]:
    """The Laplace mechanism: add Laplace(0, ``scale``) noise to a number or to each vector entry.

    Privacy map: ε = d_in / scale, exact (``scale`` is read as its exact binary value, the number the
    sampler really uses).

    Args:
        input_domain: ``AtomDomain(int|float)`` with ``AbsoluteDistance``, or ``VectorDomain`` of those
            with ``L1Distance``.
        input_metric: ``AbsoluteDistance()`` or ``L1Distance()``.
        scale: the noise scale b > 0.
        rng: a numpy Generator for reproducible experiments only (not private); default: seeded from
            :mod:`secrets`.

    Returns:
        A ``PureDP`` measurement returning a float (scalar input) or a float numpy array (vector input).

    Raises:
        InvalidParameter: ``scale`` is not finite and positive.
        DomainMismatch: the domain/metric pair is not one of the above.

    Source: Dwork, McSherry, Nissim, Smith 2006, Prop. 1 (Laplace mechanism).

    Examples:
        >>> import dpcompose as dp
        >>> m = dp.m.make_laplace(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=10.0)
        >>> m.map(1)
        Fraction(1, 10)
        >>> isinstance(m(3.0), float)
        True
    """
    check_finite_positive(scale, "scale")
    scale_q = exact(scale, "scale")
    vector = _check_numeric(input_domain, input_metric)
    fscale = float(scale)

    def run(data: Any) -> Any:
        gen = _noise.resolve_rng(rng)
        if vector:
            values = np.asarray(data, dtype=np.float64)
            return values + _noise.laplace(values.shape, fscale, gen)
        return float(data) + float(_noise.laplace((), fscale, gen))

    def privacy_map(d_in: Fraction) -> Fraction:
        return Fraction(d_in) / scale_q

    return Measurement(
        input_domain,
        input_metric,
        PureDP(),
        run,
        privacy_map,
        node=Node("laplace", params=(("scale", repr(scale)),), source="Dwork–McSherry–Nissim–Smith 2006"),
    )


def _check_numeric(input_domain: Domain, input_metric: Metric, vector_metric: type = L1Distance) -> bool:
    """Return whether the input is a vector; raise DomainMismatch for unsupported pairs."""
    if isinstance(input_domain, AtomDomain) and input_domain.carrier in _NUMERIC:
        if not isinstance(input_metric, AbsoluteDistance):
            raise DomainMismatch(f"a scalar input needs AbsoluteDistance(), not {input_metric!r}")
        return False
    if (
        isinstance(input_domain, VectorDomain)
        and isinstance(input_domain.element_domain, AtomDomain)
        and input_domain.element_domain.carrier in _NUMERIC
    ):
        if not isinstance(input_metric, vector_metric):
            raise DomainMismatch(f"a vector input needs {vector_metric.__name__}(), not {input_metric!r}")
        return True
    raise DomainMismatch(
        f"input_domain={input_domain!r} must be AtomDomain(int|float) or a VectorDomain of those"
    )
