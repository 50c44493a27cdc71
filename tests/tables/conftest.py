"""Fixtures for the table tests: one local Spark session per test module (pinned to loopback)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """A ``local[2]`` Spark session on 127.0.0.1 (UI off, 4 shuffle partitions); the tests using it skip
    when pyspark is not installed or no Java runtime is found."""
    pytest.importorskip(
        "pyspark", reason="pyspark is not installed: the Spark engine tests need the [spark] extra"
    )
    from dpcompose.tables._spark import SparkUnavailable, local_session

    try:
        session = local_session("dpcompose-tests")
    except SparkUnavailable as exc:
        pytest.skip(str(exc))
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
