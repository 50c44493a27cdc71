"""Shared test configuration: Hypothesis profiles, mpmath's working precision per test, and the cyclic
garbage collector kept off the objects collection leaves behind.

Profiles: ``dev`` (default, quick), ``ci`` (what .ci/run uses), ``thorough`` (for ``-m slow`` runs).
Pick one with ``HYPOTHESIS_PROFILE=thorough python -m pytest -m slow``.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Generator, Iterator

import mpmath
import pytest
from hypothesis import HealthCheck, settings

from gc_off import collector_off

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


# (an old-style wrapper: the new-style ``wrapper=True`` needs a newer pluggy than pytest 7.4 requires)
@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, None]:
    """Collection without the cyclic garbage collector, then everything it left alive frozen out of it.

    Collecting imports every test module, rewrites its asserts and builds every item: millions of short-lived
    AST nodes and ~250,000 lasting objects (modules, items, strategies, tables). With the collector on, each
    xdist worker spent ~7 s of its ~15 s collection in it, and every later full collection during the tests
    walked those lasting objects again (~40% of the collector's time in the tests). Reference counting still
    frees everything acyclic during collection; one ``gc.collect()`` at the end frees the cycles, and
    ``gc.freeze()`` moves the survivors, which live until the session ends, to the permanent generation.
    Objects the tests create are collected as before (the tests that check that something is not kept
    alive use objects made inside them)."""
    with collector_off():
        yield
    gc.collect()
    gc.freeze()
