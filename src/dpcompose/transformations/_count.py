"""Counting records."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from dpcompose.core import (
    AbsoluteDistance,
    AtomDomain,
    ChangeOneDistance,
    Domain,
    Metric,
    Node,
    Transformation,
    VectorDomain,
)
from dpcompose.core._metrics import refuse_table_domain
from dpcompose.core._recipe import recorded
from dpcompose.errors import DomainMismatch
from dpcompose.transformations._clamp import check_dataset_metric

__all__ = ["make_count"]


@recorded
def make_count(input_domain: Domain, input_metric: Metric) -> Transformation[Any, int, int, Fraction]:
    """The number of records, as an ``int`` under ``AbsoluteDistance``.

    Stability: add/remove of d records changes the count by at most d; changing records never changes it
    (d_out = 0 under ``ChangeOneDistance``).

    Source: Dwork–Roth 2014 §3.3 (counting queries have sensitivity 1).

    Examples:
        >>> import dpcompose as dp
        >>> t = dp.t.make_count(dp.VectorDomain(dp.AtomDomain(str)), dp.SymmetricDistance())
        >>> t(["a", "b"]), t.map(3)
        (2, Fraction(3, 1))
    """
    check_dataset_metric(input_metric)
    refuse_table_domain(input_domain)
    if not isinstance(input_domain, VectorDomain):
        raise DomainMismatch(f"input_domain={input_domain!r} must be a VectorDomain")
    change_one = isinstance(input_metric, ChangeOneDistance)

    def stability(d_in: int) -> Fraction:
        return Fraction(0) if change_one else Fraction(d_in)

    return Transformation(
        input_domain,
        AtomDomain(int),
        input_metric,
        AbsoluteDistance(),
        len,
        stability,
        node=Node("count", source="Dwork–Roth 2014 §3.3"),
    )
