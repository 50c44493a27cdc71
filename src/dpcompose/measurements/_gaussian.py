"""The Gaussian mechanism, accounted in zero-concentrated DP."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose._validation import check_finite_positive
from dpcompose.accounting import exact
from dpcompose.core import ZCDP, Domain, L2Distance, Measurement, Metric, Node
from dpcompose.measurements import _noise
from dpcompose.measurements._laplace import _check_numeric

__all__ = ["make_gaussian"]


def make_gaussian(
    input_domain: Domain,
    input_metric: Metric,
    scale: float,
    *,
    rng: np.random.Generator | None = None,
) -> Measurement[Any, Any, Fraction, Fraction]:
    """The Gaussian mechanism: add N(0, ``scale``²) noise to a number or to each vector entry.

    Privacy map: ρ = (d_in / scale)² / 2, exact (zCDP).

    Args:
        input_domain: ``AtomDomain(int|float)`` with ``AbsoluteDistance``, or a ``VectorDomain`` of those
            with ``L2Distance``.
        input_metric: ``AbsoluteDistance()`` or ``L2Distance()``.
        scale: the standard deviation σ > 0.
        rng: a numpy Generator for reproducible experiments only (not private).

    Raises:
        InvalidParameter: ``scale`` is not finite and positive.
        DomainMismatch: the domain/metric pair is not one of the above.

    Source: Bun–Steinke 2016, Prop. 1.6 (the Gaussian mechanism is (Δ²/2σ²)-zCDP).

    Examples:
        >>> import dpcompose as dp
        >>> v = dp.VectorDomain(dp.AtomDomain(float))
        >>> dp.m.make_gaussian(v, dp.L2Distance(), scale=2.0).map(1)
        Fraction(1, 8)
    """
    check_finite_positive(scale, "scale")
    scale_q = exact(scale, "scale")
    vector = _check_numeric(input_domain, input_metric, L2Distance)
    fscale = float(scale)

    def run(data: Any) -> Any:
        gen = _noise.resolve_rng(rng)
        if vector:
            values = np.asarray(data, dtype=np.float64)
            return values + _noise.gaussian(values.shape, fscale, gen)
        return float(data) + float(_noise.gaussian((), fscale, gen))

    def privacy_map(d_in: Fraction) -> Fraction:
        ratio = Fraction(d_in) / scale_q
        return ratio * ratio / 2

    return Measurement(
        input_domain,
        input_metric,
        ZCDP(),
        run,
        privacy_map,
        node=Node("gaussian", params=(("scale", repr(scale)),), source="Bun–Steinke 2016 Prop. 1.6"),
    )
