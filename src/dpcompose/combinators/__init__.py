"""Combinators: composite measurements whose privacy maps apply the composition theorems."""

from __future__ import annotations

from dpcompose.combinators._adaptive import make_adaptive_concurrent, make_adaptive_sequential
from dpcompose.combinators._casts import (
    make_group,
    make_postprocess,
    make_pure_to_approx,
    make_pure_to_zcdp,
    make_zcdp_to_approx,
    wrap_queryable,
)
from dpcompose.combinators._compose import make_concurrent, make_sequential
from dpcompose.combinators._parallel import make_parallel

__all__ = [
    "make_adaptive_concurrent",
    "make_adaptive_sequential",
    "make_concurrent",
    "make_group",
    "make_parallel",
    "make_postprocess",
    "make_pure_to_approx",
    "make_pure_to_zcdp",
    "make_sequential",
    "make_zcdp_to_approx",
    "wrap_queryable",
]
