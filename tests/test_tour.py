"""``python -m dpcompose tour`` (the README's main command) runs to the end whatever the noise says."""

from __future__ import annotations

import builtins
import inspect
from typing import Any

import pytest

import dpcompose as dp
import dpcompose._tour
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


def test_the_tour_uses_the_catalogue_mean_and_points_to_recipes_algorithms_and_tables(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run_tour() == 0
    out = capsys.readouterr().out
    assert "make_mean" in out and "resize" in out
    after = out.split("Next:")[1]
    assert "docs/recipes.md" in after and "docs/algorithms.md" in after and "docs/tables.md" in after


def test_the_tour_builds_its_steps_from_the_catalogue() -> None:
    """No hand-built Transformation or Measurement (or make_user_*) where a catalogue constructor does the
    step: the monitors' filtered counts are make_subset_by >> make_count."""
    source = inspect.getsource(dpcompose._tour)
    for raw in ("dp.Transformation(", "dp.Measurement(", "make_user_"):
        assert raw not in source, raw
    assert "make_subset_by" in source


def test_the_tour_shows_tables_with_polars_and_says_how_to_get_them_without(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("polars")
    assert run_tour() == 0
    assert "6. Tables: a dp.Context over a Polars frame" in capsys.readouterr().out
    real_import = builtins.__import__

    def no_polars(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "polars":
            raise ImportError("no polars here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_polars)
    assert run_tour() == 0
    assert 'install the polars extra (pip install "dpcompose[polars]")' in capsys.readouterr().out
