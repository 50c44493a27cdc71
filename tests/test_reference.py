"""The Markdown API reference in docs/reference/ is current with the docstrings: the pages are regenerated
in memory by scripts/make_reference.py and compared with the committed ones."""

from __future__ import annotations

import functools
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "reference"
SCRIPT = ROOT / "scripts" / "make_reference.py"


@functools.cache
def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_reference", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look the module up by name
    spec.loader.exec_module(module)
    return module


@functools.cache
def _pages() -> dict[str, str]:
    """The reference as generated now (once per session: it imports every public name)."""
    pages: dict[str, str] = _script().generate()
    return pages


def test_reference_pages_are_current() -> None:
    script = _script()
    pages = _pages()
    committed = {p.name: p.read_text(encoding="utf-8") for p in REFERENCE.glob("*.md")}
    stale = sorted(name for name in set(pages) | set(committed) if pages.get(name) != committed.get(name))
    assert not stale, (
        f"docs/reference/ is not current with the docstrings ({', '.join(stale)} differ); "
        f"regenerate it with `{script.COMMAND}` and commit the result"
    )


def test_every_public_name_has_an_entry() -> None:
    """Each name in each ``__all__`` (a subpackage aside: it has its own page) has a heading on the page of
    the namespace that defines it."""
    script = _script()
    pages = _pages()
    files = {page.module: page.file for page in script.PAGES}
    missing = []
    for page in script.PAGES:
        for name in script.public_names(page.module):
            if script.kind_of(getattr(sys.modules[page.module], name)) == "module":
                continue
            text = pages[files[script.home(page.module, name)]]
            if not re.search(rf"^### {re.escape(name)}$", text, flags=re.M):
                missing.append(f"{page.module}.{name}")
    assert missing == []


def test_every_public_name_has_a_docstring() -> None:
    """A public class, function or constant without a docstring shows as "(no docstring)": none may (a
    constant's docstring is the string literal right after its assignment)."""
    pages = _pages()
    bare = [
        f"{file}: {heading}"
        for file, text in pages.items()
        for heading, body in re.findall(r"^#+ (.+)\n((?:(?!#).*\n)*)", text, flags=re.M)
        if "*(no docstring)*" in body
    ]
    assert bare == []


def test_index_links_resolve() -> None:
    """Every ``page.md#anchor`` link in the reference points at a page and heading that exist."""
    script = _script()
    pages = _pages()
    headings = {file: re.findall(r"^#+ (.+)$", text, flags=re.M) for file, text in pages.items()}
    anchors = {file: {script.anchor(h) for h in found} for file, found in headings.items()}
    broken = []
    for file, text in pages.items():
        for target in re.findall(r"\]\(([^)\s]*)\)", text):
            if target.startswith(("http", "../", "sphinx/")):
                continue
            page, _, frag = target.partition("#")
            page = page or file
            if page not in pages or (frag and frag not in anchors[page]):
                broken.append(f"{file}: {target}")
    assert broken == []
