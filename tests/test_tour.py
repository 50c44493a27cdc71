"""``python -m dpcompose tour`` (the README's main command) runs to the end whatever the noise says."""

from __future__ import annotations

from typing import Any

import pytest

import dpcompose as dp
from dpcompose._tour import run_tour


def test_tour_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_tour() == 0
    assert "Total spent" in capsys.readouterr().out


def test_a_monitor_that_halts_is_not_asked_again(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sparse-vector monitor with max_positive=1 halts after its first positive answer; asking it again
    would raise BudgetExceeded (it did, rarely, when the noise put a region above the threshold)."""
    real = dp.m.make_sparse_vector

    def always_above(*args: Any, **kwargs: Any) -> Any:
        kwargs["threshold"] = -1e6  # every answer is positive
        return real(*args, **kwargs)

    monkeypatch.setattr(dp.m, "make_sparse_vector", always_above)
    assert run_tour() == 0
    out = capsys.readouterr().out
    assert "north above, south (halted), east (halted)" in out
