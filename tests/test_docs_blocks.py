"""Every Python example in docs/ runs: pytest runs the `>>>` examples of docs/*.md as doctests, so a plain
```python block (which doctest skips) is allowed only where a named test runs it."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"
RUN_ELSEWHERE = {"tables.md": "tests/tables/test_engines.py (the Spark example)"}


def test_plain_python_blocks_are_run_by_a_test() -> None:
    unrun = []
    for page in sorted(DOCS.glob("*.md")):
        blocks = re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)
        plain = [b for b in blocks if ">>>" not in b]
        if plain and page.name not in RUN_ELSEWHERE:
            unrun.append(f"{page.name}: {plain[0].splitlines()[0]!r}")
    assert not unrun, f"python blocks no test runs (write them as >>> examples): {unrun}"
