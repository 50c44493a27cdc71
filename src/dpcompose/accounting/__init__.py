"""The composition theorems as pure functions of numbers.

Every function here takes numbers and returns numbers (or a :class:`PrivacyProfile`); none sees data,
a domain or a queryable. Results never under-report: rational results are exact
:class:`fractions.Fraction`, irrational steps are rounded outward (see :mod:`dpcompose.accounting._exact`).
Each function's docstring names its source.
"""

from __future__ import annotations

from dpcompose.accounting._basic import basic, zcdp_compose
from dpcompose.accounting._exact import (
    Number,
    decimal,
    exact,
    float_down,
    float_up,
)

__all__ = [
    "Number",
    "basic",
    "decimal",
    "exact",
    "float_down",
    "float_up",
    "zcdp_compose",
]
