"""Shared test configuration: Hypothesis profiles.

Profiles: ``dev`` (default, quick), ``ci`` (what .ci/run uses), ``thorough`` (for ``-m slow`` runs).
Pick one with ``HYPOTHESIS_PROFILE=thorough python -m pytest -m slow``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# The default profiles are derandomized so the README's test command gives the same verdict on every
# machine; `thorough` explores new random examples (HYPOTHESIS_PROFILE=thorough python -m pytest -m slow).
settings.register_profile("dev", max_examples=60, deadline=None, derandomize=True)
settings.register_profile(
    "ci", max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("thorough", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
