"""Bounded sums, with sensitivity that accounts for floating-point rounding."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose._validation import check_nonnegative_int
from dpcompose.accounting import exact, float_up
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
from dpcompose.errors import DomainMismatch, InvalidParameter
from dpcompose.transformations._clamp import check_dataset_metric, numeric_vector_carrier

__all__ = ["make_sum"]


def make_sum(
    input_domain: Domain, input_metric: Metric, *, max_size: int | None = None
) -> Transformation[Any, Any, int, Fraction]:
    """The sum of bounded records, under ``AbsoluteDistance``.

    Sensitivity for records in [lo, hi]: add/remove of d records moves the sum by at most
    d·max(|lo|, |hi|); changing d records moves it by at most d·(hi − lo).

    Integers are summed exactly. Floats are summed with :func:`math.fsum` (the correctly rounded exact
    sum), and the sensitivity grows by one ulp of the largest possible |sum| to cover the two roundings —
    so float sums need a known bound n on the number of records: the domain's ``size`` or ``max_size=``.
    The sum is then *saturated* to ``[-L, L]`` with ``L`` the least float ≥ n·max(|lo|, |hi|), the
    largest |sum| n records can have: a dataset with more than n records is summed and clamped, never
    refused, because a refusal would reveal its size (an exception is an output too). Clamping is
    1-Lipschitz and every rounding happens at magnitudes ≤ L, so the map is unchanged. A bound with
    n·max(|lo|, |hi|) beyond the float range is refused at construction.
    Naive float summation can exceed the textbook sensitivity (Casacuberta et al. 2022, "Widespread
    underestimation of sensitivity in differentially private libraries").

    Args:
        input_domain: ``VectorDomain(AtomDomain(int|float, bounds=(lo, hi)))``.
        input_metric: ``SymmetricDistance()`` or ``ChangeOneDistance()``.
        max_size: for floats without a domain ``size``: the most records a dataset may hold.

    Source: Dwork–Roth 2014 §3.3 (sensitivity of bounded sums); rounding slack per Casacuberta et al. 2022.

    Examples:
        >>> import dpcompose as dp
        >>> ints = dp.VectorDomain(dp.AtomDomain(int, bounds=(0, 10)))
        >>> s = dp.t.make_sum(ints, dp.SymmetricDistance())
        >>> s([1, 2, 3]), s.map(1)
        (6, Fraction(10, 1))
        >>> s1 = dp.t.make_sum(ints, dp.ChangeOneDistance())
        >>> s1.map(1)
        Fraction(10, 1)
    """
    check_dataset_metric(input_metric)
    carrier = numeric_vector_carrier(input_domain)
    assert isinstance(input_domain, VectorDomain)
    element = input_domain.element_domain
    assert isinstance(element, AtomDomain)
    if element.bounds is None:
        raise DomainMismatch(
            f"make_sum needs bounded records, but {input_domain!r} has no bounds: chain make_clamp first"
        )
    lo, hi = exact(element.bounds[0], "lo"), exact(element.bounds[1], "hi")
    per_record = (hi - lo) if isinstance(input_metric, ChangeOneDistance) else max(abs(lo), abs(hi))
    slack = Fraction(0)
    limit: int | None = None
    if carrier is float:
        if max_size is not None:
            limit = check_nonnegative_int(max_size, "max_size")
        elif input_domain.size is not None:
            limit = input_domain.size
        else:
            raise InvalidParameter(
                "a float sum needs a bound on the number of records to bound its rounding error: "
                "give the VectorDomain a size or pass max_size="
            )
        largest = float_up(limit * max(abs(lo), abs(hi)))
        if largest == math.inf:
            raise InvalidParameter(
                f"max_size={limit} records of at most {float(max(abs(lo), abs(hi))):g} in magnitude can sum "
                "beyond the float range: lower max_size or the bounds"
            )
        slack = Fraction(math.ulp(largest))
        limit_q = Fraction(largest)

    def run(data: Any) -> Any:
        if carrier is int:
            return sum(int(x) for x in data)
        values = np.asarray(data, dtype=np.float64).tolist()
        try:
            total = math.fsum(values)
        except OverflowError:
            # a running partial sum overflowed (possible only with more than max_size records); the exact
            # total may still be small, so clamp the EXACT sum and round it once
            exact_total = sum((Fraction(v) for v in values), Fraction(0))
            total = float(min(max(exact_total, -limit_q), limit_q))
        return min(max(total, -largest), largest)

    def stability(d_in: int) -> Fraction:
        return d_in * per_record + (slack if d_in > 0 else 0)

    params = [("bounds", repr(element.bounds))]
    if limit is not None:
        params.append(("max_size", str(limit)))
    return Transformation(
        input_domain,
        AtomDomain(carrier),
        input_metric,
        AbsoluteDistance(),
        run,
        stability,
        node=Node("sum", params=tuple(params), source="Dwork–Roth 2014 §3.3; Casacuberta et al. 2022"),
    )
