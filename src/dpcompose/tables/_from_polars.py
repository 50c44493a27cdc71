"""Polars aggregates in table queries: ``pl.len()``, ``pl.col(c).sum()``, ``.mean()``, ``.var()``,
``.n_unique()``, and their ``.alias(name)``, read as :class:`~dpcompose.tables._agg.Agg` records. Polars
row expressions (filters, derived columns) are translated by :mod:`dpcompose.transformations._from_polars`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from dpcompose.errors import DomainMismatch
from dpcompose.tables._agg import Agg, count, count_distinct, mean, sum, variance
from dpcompose.transformations._from_polars import is_polars_expr, polars_tree

__all__ = ["agg_from_polars"]

_AGGS = {"Sum": sum, "Mean": mean, "NUnique": count_distinct}


def agg_from_polars(e: object) -> object:
    """The :class:`Agg` of a Polars aggregate (``pl.len()``, ``pl.col(c).sum()``, ``.mean()``, ``.var()``,
    ``.n_unique()``, each optionally with ``.alias(name)``, the result column's name); anything else is
    returned as it is (or refused, for another Polars expression). Bounds and null fills come from the
    schema (the privacy part of the query)."""
    if not is_polars_expr(e):
        return e
    tree = polars_tree(e, "aggs")
    if isinstance(tree, dict) and "Alias" in tree and isinstance(tree["Alias"][1], str):
        found = _agg(tree["Alias"][0], e)
        return dataclasses.replace(found, alias=tree["Alias"][1])
    return _agg(tree, e)


def _agg(tree: Any, e: Any) -> Agg:
    if tree == "Len":
        return count()
    if isinstance(tree, dict) and isinstance(tree.get("Agg"), dict) and len(tree["Agg"]) == 1:
        ((name, arg),) = tree["Agg"].items()
        if name == "Var" and isinstance(arg, list) and arg[1:] == [1]:
            name, arg = "Variance", arg[0]
        if isinstance(arg, dict) and set(arg) == {"Column"}:
            column = arg["Column"]
            if name == "Variance":
                return variance(column)
            if name in _AGGS:
                agg: Agg = _AGGS[name](column)
                return agg
    raise DomainMismatch(
        f"aggs: {e} is not offered; write pl.len(), pl.col(c).sum(), .mean(), .var() or .n_unique() of a "
        "plain column (bounds and null fills are declared in the schema or with_column), or "
        "dp.tables.quantile(...) for a quantile"
    )
