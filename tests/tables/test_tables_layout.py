"""The house rules (DESIGN §6) for the tables package and its tests, read from the source with ``ast``: no
file over 1,000 lines, no underscore name imported from another tables file, and tests that use
package-internal names only (no ``._private`` import or attribute). (Imports across packages are the
business of the layout test of the whole source.)"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import dpcompose.tables

TABLES = Path(dpcompose.tables.__file__).parent
TESTS = Path(__file__).parent
#: Private attributes the tests read of objects that are not dpcompose's (pyspark's own handles).
FOREIGN = {"spark.sparkContext._jsc"}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


@functools.cache
def _trees(folder: Path) -> dict[str, ast.Module]:
    return {p.name: ast.parse(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.py"))}


def _underscore_imports(tree: ast.Module, package: str = "dpcompose") -> list[str]:
    """``module.name`` of each underscore name imported from a module of ``package`` (a module itself, such
    as ``from dpcompose.tables import _expr``, is not a name: module names keep their underscore)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(package):
            for alias in node.names:
                target = TABLES.parent.joinpath(*(node.module or "").split(".")[1:], alias.name)
                is_module = target.with_suffix(".py").exists() or target.is_dir()
                if _private(alias.name) and not is_module:
                    found.append(f"{node.module}.{alias.name}")
    return found


def test_no_tables_file_over_1000_lines() -> None:
    lengths = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in TABLES.glob("*.py")}
    assert {name: n for name, n in lengths.items() if n > 1000} == {}


def test_no_underscore_name_crosses_a_tables_file() -> None:
    found = {name: _underscore_imports(tree, "dpcompose.tables") for name, tree in _trees(TABLES).items()}
    assert {name: names for name, names in found.items() if names} == {}


def test_tables_tests_use_no_private_names() -> None:
    found = []
    for name, tree in _trees(TESTS).items():
        found += [f"{name}: import {n}" for n in _underscore_imports(tree)]
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr) and ast.unparse(node) not in FOREIGN:
                found.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
            if (
                isinstance(node, ast.Call)
                and ast.unparse(node.func).endswith("setattr")
                and len(node.args) > 1
                and isinstance(node.args[1], ast.Constant)
                and _private(str(node.args[1].value))
            ):
                found.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
    assert found == []


def test_each_rule_is_written_once() -> None:
    """The int64 range of a float-to-int cast is stated once (``transformations._expr.INT64_LIMIT``, with
    the cast's semantics in ``lowered_cast``), not in each engine; an interval's ``alpha`` is checked in
    one place (``_intervals.check_level``)."""
    limits, levels = [], []
    for name, tree in _trees(TABLES).items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value == 2.0**63 and isinstance(node.value, float):
                limits.append(f"{name}:{node.lineno}")
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and "must be in (0, 1)" in node.value
            ):
                levels.append(f"{name}:{node.lineno}")
            if isinstance(node, ast.FunctionDef) and node.name == "_cast":
                limits.append(f"{name}:{node.lineno}: def _cast")
    assert limits == []
    assert [where.split(":")[0] for where in levels] == ["_intervals.py"]
