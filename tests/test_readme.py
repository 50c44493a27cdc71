"""The README's code runs, and its quick start is exactly the two commands the project promises."""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_python_blocks_run() -> None:
    blocks = _blocks("python")
    assert blocks, "the README has a python example"
    for code in blocks:
        namespace: dict[str, object] = {}
        exec(compile(code, str(README), "exec"), namespace)
    count = namespace["count"]
    assert count.map(1) == Fraction(1, 10)  # type: ignore[attr-defined]
    assert type(count([34, 51, 27])) is int  # type: ignore[operator]  # counts print as integers


def test_quick_start_is_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Quick start", 1)[1].split("##", 1)[0]
    (block,) = re.findall(r"```\n(.*?)```", section, flags=re.S)
    commands = [line for line in block.splitlines() if line.strip()]
    assert commands == [
        "python -m pip install . && python -m dpcompose tour",
        'python -m pip install -e ".[test]" && python -m pytest -n auto',
    ]
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert any(line.startswith(commands[1]) for line in ci.splitlines()), ".ci/run must run this command"
