"""Every Python example in docs/ runs: pytest runs the `>>>` examples of docs/*.md as doctests, so a plain
```python block (which doctest skips) is allowed only where a named test runs it."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"
# blocks a named test runs, by the marker comment right above them (found by review: exempting the whole page
# let any new plain block in tables.md through)
RUN_ELSEWHERE = {"<!-- spark-example:": "tests/tables/test_engines.py (the Spark example of tables.md)"}


def test_plain_python_blocks_are_run_by_a_test() -> None:
    unrun = []
    for page in sorted(DOCS.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for match in re.finditer(r"```python\n(.*?)```", text, flags=re.S):
            if ">>>" in match.group(1):
                continue
            before = text[: match.start()].rstrip().splitlines()[-1:] or [""]
            if not any(before[0].startswith(marker) for marker in RUN_ELSEWHERE):
                unrun.append(f"{page.name}: {match.group(1).splitlines()[0]!r}")
    assert not unrun, f"python blocks no test runs (write them as >>> examples): {unrun}"


# pages that teach user-written parts (and the refusal of raw ones): the only places examples build them
TEACHES_USER_PARTS = {"security.md", "serialization.md"}


def _code(page: Path) -> str:
    text = page.read_text(encoding="utf-8")
    return "\n".join(m.group(1) for m in re.finditer(r"```python\n(.*?)```", text, flags=re.S))


def test_examples_build_steps_from_the_catalogue() -> None:
    """A docs example builds a step from raw parts (``make_user_*``, ``dp.Transformation(...)``,
    ``dp.Measurement(...)``) only on a page that teaches user-written parts, and takes a catalogue
    constructor from its public namespace (``dp.m`` / ``dp.t``), not from a private module."""
    raw = re.compile(r"make_user_(transformation|measurement)\(|\bdp\.(Transformation|Measurement)\(")
    private = re.compile(r"from dpcompose\.[\w.]*\._\w+ import [^\n]*\bmake_")
    found = []
    for page in sorted(DOCS.glob("*.md")):
        code = _code(page)
        hit = raw.search(code)
        if hit is not None and page.name not in TEACHES_USER_PARTS:
            found.append(f"{page.name}: {hit.group(0)}")
        found += [f"{page.name}: {m.group(0)}" for m in private.finditer(code)]
    assert not found, f"use the catalogue constructor (dp.t.make_* / dp.m.make_*): {found}"
