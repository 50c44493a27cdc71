"""Transformations: deterministic, stable maps on datasets."""

from __future__ import annotations

from dpcompose.transformations._clamp import make_clamp
from dpcompose.transformations._count import make_count
from dpcompose.transformations._count_by import make_count_by, make_count_by_categories
from dpcompose.transformations._partition import make_partition
from dpcompose.transformations._sum import make_sum

__all__ = [
    "make_clamp",
    "make_count",
    "make_count_by",
    "make_count_by_categories",
    "make_partition",
    "make_sum",
]
