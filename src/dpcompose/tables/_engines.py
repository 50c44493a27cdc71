"""The choice of table engine from the data's type.

:func:`engine_for` sits above the interface (:mod:`dpcompose.tables._engine`) and the engines that
implement it (:mod:`dpcompose.tables._polars`, :mod:`dpcompose.tables._spark`), so the interface imports
no engine. Polars and Spark are optional dependencies: an engine's module is imported only when data of
its type is seen.
"""

from __future__ import annotations

from dpcompose.tables._engine import Engine

__all__ = ["engine_for"]


def engine_for(data: object) -> Engine | None:
    """The engine for ``data``, chosen from its type (Polars DataFrame/LazyFrame, pandas DataFrame, Spark
    DataFrame), or None. Engine modules are imported only when data of their type is seen.

    Examples:
        >>> engine_for([1, 2]) is None
        True
    """
    module = type(data).__module__.split(".")[0]
    if module in ("polars", "pandas"):
        # optional dependency (polars): the Polars engine is imported only for Polars or pandas data
        from dpcompose.tables._polars import PolarsEngine, is_polars_data

        if is_polars_data(data):
            return PolarsEngine()
    if module == "pyspark":
        # optional dependency (pyspark): the Spark engine is imported only for Spark data
        from dpcompose.tables._spark import SparkEngine, is_spark_data

        if is_spark_data(data):
            return SparkEngine()
    return None
