"""A table query's noise as ``dp.explain`` shows it: in the result's units."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from dpcompose.accounting import format_up
from dpcompose.core import Measurement, Node
from dpcompose.tables._engine import SumSpec
from dpcompose.tables._fixed import unit_exponent

__all__ = ["shown_in_result_units"]


def shown_in_result_units(
    noise: Measurement[Any, Any, Any, Any], spec: SumSpec | None, scale: Fraction, label: str
) -> Measurement[Any, Any, Any, Any]:
    """``noise`` (the same function, map and loss) with a node that names the released vector ``label``
    and gives its scale in the result's units, for ``dp.explain``.

    A sum is noised in steps of its grid ``2**e`` (:func:`~dpcompose.tables._fixed.unit_exponent` of
    ``spec``): the noise's ``scale`` and ``d_in`` count those steps, so the node shows
    ``result_scale = scale·2**e`` (what ``summarize()`` shows) first, then the step as ``unit`` and the
    scale in steps. Counts (``spec=None``) are in records already. Numbers are rounded up to 6 digits.

    Examples:
        >>> import dpcompose as dp
        >>> ints = dp.VectorDomain(dp.AtomDomain(int))
        >>> noise = dp.m.make_discrete_laplace(ints, dp.L1Distance(), 2**25)
        >>> spec = SumSpec("x", "float", 0.0, 1000.0, 0.0, -20)
        >>> shown = shown_in_result_units(noise, spec, Fraction(2**25), "x_sum")
        >>> shown.node.params[:3]
        (('released', 'x_sum'), ('result_scale', '32'), ('unit', '2**-20 (scale and d_in count these)'))
        >>> shown.map(2**20) == noise.map(2**20)
        True
    """
    exponent = 0 if spec is None else unit_exponent(spec)
    params: list[tuple[str, str]] = [("released", label)]
    if exponent == 0:
        params.append(("scale", format_up(scale)))
    else:
        params += [
            ("result_scale", format_up(scale * Fraction(2) ** exponent)),
            ("unit", f"2**{exponent} (scale and d_in count these)"),
            ("scale", format_up(scale)),
        ]
    return Measurement(
        noise.input_domain,
        noise.input_metric,
        noise.output_measure,
        noise.function,
        noise.privacy_map,
        loss=noise.loss,
        node=Node(noise.node.name, params=tuple(params), source=noise.node.source),
    )
