"""The choice of table engine from the data's type, and the liveness check built on it.

:func:`engine_for` and :func:`engine_check` sit above the interface (:mod:`dpcompose.tables._engine`) and
the engines that implement it (:mod:`dpcompose.tables._polars`, :mod:`dpcompose.tables._spark`), so the
interface imports no engine. Polars and Spark are optional dependencies: an engine's module is imported
only when data of its type is seen.
"""

from __future__ import annotations

from collections.abc import Callable

from dpcompose.errors import DomainMismatch, EngineUnavailable
from dpcompose.tables._engine import Engine

__all__ = ["engine_check", "engine_for"]


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


def engine_check(data: object) -> Callable[[], None]:
    """The check a Context runs before every charge: it raises :class:`~dpcompose.EngineUnavailable` when
    the engine of ``data`` cannot run a job (its probe reports why, or fails), so a query on a dead engine
    spends nothing. Built once per Context; it keeps the engine's probe, not ``data``.

    Raises:
        DomainMismatch: ``data`` has no engine (a Context's domain check refuses such data first).

    Examples:
        >>> import polars as pl
        >>> engine_check(pl.DataFrame({"a": [1]}))() is None  # Polars runs in this process: always alive
        True
    """
    engine = engine_for(data)
    if engine is None:
        raise DomainMismatch(f"data of type {type(data).__name__} has no table engine")
    probe, name = engine.probe(data), engine.name

    def check() -> None:
        try:
            reason = probe()
        except Exception:  # a probe that cannot reach the engine: the engine is not usable
            reason = "its liveness probe failed"
        if reason is not None:
            raise EngineUnavailable(
                f"the {name} engine cannot run the query: {reason}. Nothing was run or spent. Start the "
                "engine again and query a Context built on data of the new session (pass the same ledger= "
                "to keep drawing on this budget)"
            )

    return check
