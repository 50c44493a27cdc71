"""Shared test configuration: Hypothesis profiles, and mpmath's working precision per test.

Profiles: ``dev`` (default, quick), ``ci`` (what .ci/run uses), ``thorough`` (for ``-m slow`` runs).
Pick one with ``HYPOTHESIS_PROFILE=thorough python -m pytest -m slow``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import mpmath
import pytest
from hypothesis import HealthCheck, settings

# The default profiles are derandomized so the README's test command gives the same verdict on every
# machine; `thorough` explores new random examples (HYPOTHESIS_PROFILE=thorough python -m pytest -m slow).
settings.register_profile("dev", max_examples=60, deadline=None, derandomize=True)
settings.register_profile(
    "ci", max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("thorough", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture(autouse=True)
def _mpmath_precision(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test runs at its module's ``MP_DPS`` digits (default 50), whatever another module set
    mpmath's global precision to when it was imported (all test modules are imported before any runs)."""
    with mpmath.workdps(getattr(request.module, "MP_DPS", 50)):
        yield


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that uses the ``spark`` fixture carries the ``spark`` mark, so CI can run them on their
    own after installing the ``spark`` extra (``python -m pytest -m spark``); the README's test command
    installs no pyspark and they skip there."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)
