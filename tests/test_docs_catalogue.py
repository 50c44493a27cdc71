"""docs/measurements.md lists every constructor of ``dp.t`` and ``dp.m`` in a table row."""

from __future__ import annotations

from pathlib import Path

import pytest

import dpcompose as dp

PAGE = Path(__file__).resolve().parents[1] / "docs" / "measurements.md"


def _table_rows() -> list[str]:
    return [line for line in PAGE.read_text(encoding="utf-8").splitlines() if line.startswith("| `")]


@pytest.mark.parametrize("name", sorted(set(dp.t.__all__) | set(dp.m.__all__)))
def test_every_constructor_has_a_table_row(name: str) -> None:
    rows = [row for row in _table_rows() if row.startswith(f"| `{name}(")]
    assert rows, f"docs/measurements.md has no table row for {name}: add one (constructor, input, output, …)"
