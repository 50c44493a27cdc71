"""Tables: a DataFrame API whose queries are Measurements with exact integer aggregates.

``dp.Context`` holds a table (Polars DataFrame/LazyFrame, pandas DataFrame), its schema
(``dp.FrameDomain``), the unit of privacy (``dp.unit_of`` or row level) and a budget; queries are built
with Polars expressions (``pl.col``, translated into an engine-neutral plan; ``dp.col`` spells the same plan)
and the aggregates :func:`count`, :func:`sum`, :func:`mean` (or ``pl.len()``, ``pl.col(c).sum()`` …).
Engines compute exact integer aggregates on a fixed-point grid; noise is exact discrete noise drawn on the
driver.

Examples:
    >>> import dpcompose as dp
    >>> dp.tables.count().name
    'count'
"""

from __future__ import annotations

from dpcompose.tables import _stored  # noqa: F401  (registers table queries and Contexts with dp.to_json)
from dpcompose.tables._agg import Agg, count, count_distinct, mean, quantile, sum, variance
from dpcompose.tables._context import Context, PrivacyUnit, unit_of
from dpcompose.tables._query import Query
from dpcompose.tables._schema import Column, FrameDomain
from dpcompose.tables._table_query import Summary, TableQuery
from dpcompose.transformations._expr import Expr, col

__all__ = [
    "Agg",
    "Column",
    "Context",
    "Expr",
    "FrameDomain",
    "PrivacyUnit",
    "Query",
    "Summary",
    "TableQuery",
    "col",
    "count",
    "count_distinct",
    "mean",
    "quantile",
    "sum",
    "unit_of",
    "variance",
]
