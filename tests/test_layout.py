"""The house rules on imports (DESIGN §6), read from the source (and the tests) with ``ast``.

Function-local imports count as edges: a cycle dodged by a local import is still a cycle. Imports under
``if TYPE_CHECKING:`` are left out.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

import dpcompose
from gc_off import collector_off

ROOT = Path(dpcompose.__file__).parent
TESTS = Path(__file__).parent
#: Underscore names that are other libraries' API, not dpcompose's: NamedTuple's methods, pyspark's handle.
NOT_OURS = {"_replace", "_asdict", "_fields", "_make", "_jsc"}
#: Test files still reading underscore names: the ledger tests' fault injection (a connection, a
#: transaction and an anchor of a live SQLiteLedger object).
TESTS_PENDING = (
    "combinators/test_ledger.py",
    "combinators/test_ledger_files.py",
)


@pytest.fixture(autouse=True, scope="module")
def _no_cyclic_collector() -> Iterator[None]:
    """The tests here run with the cyclic garbage collector off: parsing every source and test file makes
    ~1.2 million AST nodes (no cycles among them: reference counting frees what is not cached), and with the
    collector on, the full collections it started while they piled up cost more than the parsing itself
    (~6 s of a worker's time). What the tests read and assert is unchanged."""
    with collector_off():
        yield
    _tree.cache_clear()  # (the parsed files, ~1M objects made after collection's freeze: not kept alive)
    _imports.cache_clear()


def _modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


@cache
def _tree(path: Path) -> ast.Module:
    """The parsed file, read once for all the tests here."""
    return ast.parse(path.read_text(encoding="utf-8"))


def _outside_type_checking(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``node`` (itself included), leaving out each ``if`` whose test names
    ``TYPE_CHECKING`` with everything under it (its test, body and ``else``)."""
    todo = [node]
    while todo:
        here = todo.pop()
        if isinstance(here, ast.If) and "TYPE_CHECKING" in ast.unparse(here.test):
            continue
        yield here
        todo.extend(ast.iter_child_nodes(here))


@cache
def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """``(module, names)`` of each ``from dpcompose.module import names`` and ``import dpcompose.module``."""
    out = []
    for node in _outside_type_checking(_tree(path)):
        module = (node.module or "") if isinstance(node, ast.ImportFrom) else ""
        if isinstance(node, ast.ImportFrom) and node.level == 0 and module.startswith("dpcompose."):
            out.append((module[len("dpcompose.") :], [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out += [(a.name[len("dpcompose.") :], []) for a in node.names if a.name.startswith("dpcompose.")]
    return out


def _edges() -> dict[str, set[str]]:
    modules = _modules()
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for mod, path in modules.items():
        if path.name == "__init__.py":
            continue  # re-exports
        for target, names in _imports(path):
            # a name that is a module (``from dpcompose.tables import _expr``) is an edge to that module
            for t in {f"{target}.{n}" if f"{target}.{n}" in modules else target for n in names or [""]}:
                if t in modules and t != mod and modules[t].name != "__init__.py":
                    edges[mod].add(t)
    return edges


#: The modules a function may import locally: each loads an optional dependency (polars, pyspark) only
#: when data of its kind is seen.
OPTIONAL = {"tables._polars", "tables._spark"}
MAX_LINES = 1000


def test_no_file_over_the_limit() -> None:
    long = {}
    for path in ROOT.rglob("*.py"):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES:
            long[path.relative_to(ROOT).as_posix()] = lines
    assert long == {}


def test_function_local_imports_only_for_optional_dependencies() -> None:
    """A dpcompose import inside a function dodges nothing: only the engines of optional dependencies
    are imported there (DESIGN §6)."""
    found = []
    for mod, path in _modules().items():
        # every node inside a function (a nested function's nodes once, not once per enclosing function)
        todo: list[tuple[ast.AST, bool]] = [(_tree(path), False)]
        while todo:
            node, in_func = todo.pop()
            inner = in_func or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            todo.extend((child, inner) for child in ast.iter_child_nodes(node))
            if inner:
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dpcompose"):
                    targets = [(node.module or "")[len("dpcompose.") :]]
                elif isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                    targets = [n[len("dpcompose.") :] for n in names if n.startswith("dpcompose")]
                else:
                    continue
                found += [f"{mod}:{node.lineno} {t}" for t in targets if t not in OPTIONAL]
    assert found == []


def test_no_import_cycle() -> None:
    edges = _edges()

    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for nxt in edges[todo.pop()] - seen:
                seen.add(nxt)
                todo.append(nxt)
        return seen

    cycles = sorted(m for m in edges if m in reach(m))
    assert cycles == []


def test_no_underscore_name_crosses_a_file() -> None:
    """An underscore name is for its own file (DESIGN §6): no module imports one from another module, in
    its package or another (a private module, ``_pld``, is a name like any other)."""
    modules = _modules()
    found = set()
    for mod, path in modules.items():
        for target, names in _imports(path):
            for n in names:
                if n.startswith("_") and not n.startswith("__") and f"{target}.{n}" not in modules:
                    found.add((mod, f"{target}.{n}"))
    assert found == set()


def _private(name: str, modules: set[str]) -> bool:
    """An underscore name that is neither a dunder, a ``_sunder_`` protocol name nor a module."""
    if not name.startswith("_") or name.endswith("_") or name in NOT_OURS:
        return False
    return name not in modules


def _test_private_reads(path: Path, modules: set[str]) -> list[str]:
    """Underscore names a test file reads: ``from dpcompose.… import _x``, ``anything._x`` (but
    ``self``/``cls``), and ``"_x"`` or ``"dpcompose.…._x"`` given to ``setattr``/``getattr``/``delattr``/
    ``hasattr`` (``monkeypatch.setattr`` included)."""
    found = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dpcompose"):
            parts = (node.module or "").split(".")
            found += [f"{node.module}.{a.name}" for a in node.names if _private(a.name, modules)]
            if any(_private(p, modules) for p in parts):
                found.append(node.module or "")
        elif isinstance(node, ast.Attribute) and _private(node.attr, modules):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append(ast.unparse(node))
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in ("setattr", "getattr", "delattr", "hasattr"):
                found += [
                    arg.value
                    for arg in node.args[:2]
                    if isinstance(arg, ast.Constant)
                    and isinstance(arg.value, str)
                    and any(_private(p, modules) for p in arg.value.split("."))
                ]
    return found


def test_tests_read_no_underscore_name() -> None:
    """Tests use public or package-internal names (DESIGN §6); a private module is fine, its
    underscore names are not."""
    modules = {m.rsplit(".", 1)[-1] for m in _modules() if m}
    found = {}
    for path in sorted(TESTS.rglob("*.py")):
        rel = path.relative_to(TESTS).as_posix()
        if rel.startswith(TESTS_PENDING):
            continue
        reads = _test_private_reads(path, modules)
        if reads:
            found[rel] = reads
    assert found == {}
