"""Sphinx configuration for the dpcompose API reference (see README.md beside this file).

The pages are generated from the ``__all__`` lists: each namespace page holds one
``.. dpcompose-namespace:: MODULE`` directive, which expands, at build time, into an autodoc entry for
every name in that module's ``__all__`` (a name defined in another namespace links to its home entry
instead of being documented twice). A new public constructor therefore appears without editing a page,
and ``check_every_public_name`` turns any name in any ``__all__`` that did not end up documented, or any
public subpackage without a page, into a warning (an error under ``sphinx-build -W``).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import sys
import types
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.addnodes import pending_xref
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.pycode import ModuleAnalyzer
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "src"))

import dpcompose  # noqa: E402

project = "dpcompose"
author = "dpcompose developers"
release = version = dpcompose.__version__
copyright = "dpcompose developers"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.autosummary",

]

root_doc = "index"
exclude_patterns = ["_build", "README.md"]
html_theme = "alabaster"
html_static_path: list[str] = []

# Google-style docstrings (STYLE.md): napoleon, with no NumPy-style parsing.
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
napoleon_custom_sections = [("Source", "params_style"), ("Sources", "params_style")]

autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "signature"
autodoc_class_signature = "mixed"
autodoc_preserve_defaults = True
autosummary_generate = False

nitpicky = True
# No network in CI, so no intersphinx inventories: references into the standard library and the two
# third-party packages that appear in signatures (numpy, scipy) cannot be linked and are shown as plain
# names. Only these modules are exempt; every reference into dpcompose must resolve (see resolve_public).
EXTERNAL_MODULES = ["abc", "collections", "decimal", "enum", "fractions", "math", "numbers", "os", "pathlib",
                    "secrets",
                    "sqlite3", "threading", "types", "typing", "numpy", "scipy"]
nitpick_ignore_regex = [(r"py:.*", rf"{mod}(\..*)?") for mod in EXTERNAL_MODULES]
# TableQuery's signature names the engine's internal Plan as a string: its module imports Context only for
# type checking (the Context module imports it), so autodoc cannot evaluate the annotations to place Plan.
nitpick_ignore = [("py:class", "Plan")]

logger = logging.getLogger("dpcompose.reference")

# The namespaces with a page, in the order a name's home is looked for; the top-level package is last so
# that a re-exported name is documented where it is defined.
NAMESPACES = [
    "dpcompose.core",
    "dpcompose.measurements",
    "dpcompose.transformations",
    "dpcompose.combinators",
    "dpcompose.accounting",
    "dpcompose.accuracy",
    "dpcompose.analysis",
    "dpcompose.algorithms",
    "dpcompose.errors",
    "dpcompose.tables",
    "dpcompose",
]


def public_names(modname: str) -> list[str]:
    """The names in ``modname.__all__`` (a namespace without ``__all__`` is an error)."""
    module = importlib.import_module(modname)
    names = getattr(module, "__all__", None)
    if names is None:
        raise RuntimeError(f"{modname} has no __all__; the reference is generated from __all__")
    return list(names)


def _defining_namespace(obj: object) -> str | None:
    """The namespace whose subpackage defines ``obj`` (from ``__module__``), if any."""
    modname = getattr(obj, "__module__", None)
    if not isinstance(modname, str):
        return None
    for ns in NAMESPACES[:-1]:
        if modname == ns or modname.startswith(ns + "."):
            return ns
    return None


def home(modname: str, name: str) -> str:
    """The fully qualified name under which ``modname.name`` is documented."""
    obj = getattr(importlib.import_module(modname), name)
    if isinstance(obj, types.ModuleType):
        return obj.__name__
    holders = [ns for ns in NAMESPACES if name in public_names(ns)
               and getattr(importlib.import_module(ns), name) is obj]
    defining = _defining_namespace(obj)
    ns = defining if defining in holders else holders[0]
    return f"{ns}.{name}"


def _kind(obj: object) -> str:
    if isinstance(obj, types.ModuleType):
        return "module"
    if inspect.isclass(obj):
        return "exception" if issubclass(obj, BaseException) else "class"
    if callable(obj) and not _is_alias(obj):
        return "function"
    return "data"


def _is_alias(obj: object) -> bool:
    return isinstance(obj, types.UnionType) or type(obj).__module__ == "typing"


def data_entry(modname: str, name: str) -> list[str]:
    """A ``py:data`` entry for ``modname.name``, with the attribute docstring (the string literal after the
    assignment) from whichever module under ``modname`` assigns it: autodoc's own lookup only reads the
    namespace's ``__init__`` and would show the docstring of the value's type instead."""
    obj = getattr(importlib.import_module(modname), name)
    doc: list[str] = []
    for source in [m for m in list(sys.modules) if m == modname or m.startswith(modname + ".")]:
        if vars(sys.modules[source]).get(name) is not obj:
            continue
        found = ModuleAnalyzer.for_module(source).find_attr_docs().get(("", name))
        if found:
            doc = list(found)
            break
    if not doc:
        logger.warning("public name %s.%s has no docstring (put a string literal after its assignment)",
                       modname, name)
    value = obj if _is_alias(obj) else repr(obj)
    head = [f".. py:data:: {name}", f"   :module: {modname}", f"   :value: {value}", ""]
    return head + [f"   {d}" for d in doc] + [""]


class NamespaceDirective(SphinxDirective):
    """``.. dpcompose-namespace:: dpcompose.core``: the module docstring, a summary table, and an entry for
    every name in the module's ``__all__`` that is at home there (the others link to their home)."""

    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        modname = self.arguments[0]
        module = importlib.import_module(modname)
        own: dict[str, list[str]] = {"class": [], "exception": [], "function": [], "data": []}
        elsewhere: list[tuple[str, str, str]] = []  # (name, kind, where it is documented)
        for name in public_names(modname):
            obj = getattr(module, name)
            kind, where = _kind(obj), home(modname, name)
            if kind != "module" and where == f"{modname}.{name}":
                own[kind].append(name)
            else:
                elsewhere.append((name, kind, where))
        lines = [f".. automodule:: {modname}", "   :no-members:", "", f".. currentmodule:: {modname}", ""]
        documented = [n for names in own.values() for n in names]
        if documented:
            lines += [".. autosummary::", "   :nosignatures:", ""]
            lines += [f"   {n}" for n in documented] + [""]
        titles = {"class": "Classes", "exception": "Exceptions", "function": "Functions", "data": "Data"}
        directive = {"class": "autoclass", "exception": "autoexception", "function": "autofunction"}
        for kind, names in own.items():
            if not names:
                continue
            lines += [f".. rubric:: {titles[kind]}", ""]
            for n in names:
                if kind == "data":
                    lines += data_entry(modname, n)
                    continue
                lines += [f".. {directive[kind]}:: {modname}.{n}"]
                if kind in ("class", "exception"):
                    lines += ["   :members:", "   :show-inheritance:"]
                lines += [""]
        if elsewhere:
            lines += [".. rubric:: Also available here", "",
                      f"These names in ``{modname}.__all__`` are documented where they are defined "
                      f"(``{modname}.X`` is the same object).", ""]
            role = {"module": "mod", "class": "class", "exception": "exc", "function": "func", "data": "data"}
            lines += [".. list-table::", "   :header-rows: 1", "", "   * - name", "     - documented as"]
            for name, kind, where in elsewhere:
                lines += [f"   * - ``{name}``", f"     - :{role[kind]}:`{where}`"]
            lines += [""]
        self.state_machine.insert_input(StringList(lines, source=f"<dpcompose-namespace {modname}>"),
                                        f"<dpcompose-namespace {modname}>")
        self.env.note_dependency(inspect.getfile(module))
        return []


def public_subpackages() -> list[str]:
    """Every public module directly under ``dpcompose`` (a new one needs a page)."""
    return sorted(f"dpcompose.{info.name}" for info in pkgutil.iter_modules(dpcompose.__path__)
                  if not info.name.startswith("_"))


def check_every_public_name(app: Sphinx, env: BuildEnvironment) -> None:
    """Warn (an error under -W) about any name in any ``__all__`` that has no entry in the reference."""
    objects = env.get_domain("py").objects  # type: ignore[attr-defined]
    for sub in public_subpackages():
        if sub not in NAMESPACES:
            logger.warning("public module %s has no page in docs/reference (add it to NAMESPACES and "
                           "give it a page)", sub)
    missing = [f"{ns}.{name} (documented as {home(ns, name)})" for ns in NAMESPACES
               for name in public_names(ns) if home(ns, name) not in objects]
    for entry in missing:
        logger.warning("public name %s is not in the API reference", entry)
    if not missing:
        count = sum(len(public_names(ns)) for ns in NAMESPACES)
        logger.info("dpcompose reference: all %d names in %d __all__ lists are documented",
                    count, len(NAMESPACES))


_LITERAL = re.compile(r"(``.+?``|`[^`]+`)")


def escape_bars(app: Sphinx, what: str, name: str, obj: object, options: object, lines: list[str]) -> None:
    """Docstrings write absolute values and conditionals as plain text (``|x − x′|``, ``Pr[S | b]``);
    dpcompose uses no reST substitutions or line blocks, so every ``|`` outside inline literals, doctest
    blocks and literal blocks is escaped rather than read as a substitution reference."""
    in_doctest = False
    literal_above: int | None = None  # the indent of the ``::`` paragraph a literal block follows
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if not stripped:
            in_doctest = False
            continue
        if literal_above is not None:
            if indent > literal_above:
                continue
            literal_above = None
        in_doctest = in_doctest or stripped.startswith(">>>")
        if in_doctest or stripped.startswith((":type ", ":rtype:")):
            continue
        parts = _LITERAL.split(line)
        lines[i] = "".join(p if k % 2 else p.replace("|", r"\|") for k, p in enumerate(parts))
        if line.rstrip().endswith("::"):
            literal_above = indent


class _Public:
    """Every public object (by identity) and the name it is documented under."""

    def __init__(self) -> None:
        self.by_id: dict[int, str] = {}
        self.by_name: dict[str, set[str]] = {}
        for ns in NAMESPACES:
            module = importlib.import_module(ns)
            for name in public_names(ns):
                obj, where = getattr(module, name), home(ns, name)
                if inspect.isclass(obj) or inspect.isfunction(obj) or isinstance(obj, types.ModuleType):
                    self.by_id.setdefault(id(obj), where)
                self.by_name.setdefault(name, set()).add(where)


_public: _Public | None = None


def _lookup(path: str) -> tuple[bool, str | None]:
    """Whether ``path`` names an existing object under dpcompose, and its documented name if it is public
    (or an attribute of a public object)."""
    parts = path.split(".")
    if parts[0] != "dpcompose":
        return False, None
    assert _public is not None
    for i in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        trail = [".".join(parts[:i])]
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False, None
            obj = getattr(obj, attr)
            trail.append(attr)
        # the longest prefix that is a public object gives the documented name
        walk: object = importlib.import_module(".".join(parts[:i]))
        best: str | None = _public.by_id.get(id(walk))
        best_at = 0
        for k, attr in enumerate(parts[i:], start=1):
            walk = getattr(walk, attr)
            if id(walk) in _public.by_id:
                best, best_at = _public.by_id[id(walk)], k
        if best is None:
            return True, None
        return True, ".".join([best, *parts[i + best_at:]])
    return False, None


def _docstring_scope(node: pending_xref) -> list[str]:
    """The dotted path where the docstring holding ``node`` was written (its module and class), from the
    node's source for an entry, or from the row's item name for a line of a summary table."""
    documented = re.search(r"docstring of ([\w.]+)", str(node.source or ""))
    if documented:
        return documented.group(1).split(".")
    row = node.parent
    while row is not None and not isinstance(row, nodes.row):
        row = row.parent
    modname = node.get("py:module")
    if row is None or not modname:
        return []
    item = row.children[0].astext().strip()
    obj = getattr(importlib.import_module(modname), item, None)
    defined_in = getattr(obj, "__module__", None)
    return [*defined_in.split("."), item] if isinstance(defined_in, str) else []


def resolve_public(app: Sphinx, env: BuildEnvironment, node: pending_xref, contnode: nodes.Element
                   ) -> nodes.Element | None:
    """Resolve a dpcompose reference that Sphinx could not: a name spelled through its private module
    (``dpcompose.core._measurement.Measurement``, as type hints give it) or re-exported elsewhere
    (``dpcompose.Queryable``), or a bare public name from another namespace (``DomainMismatch``), links to
    the public entry. A reference to an existing but non-public object (a type variable, a private helper)
    is shown as plain code. Anything else stays unresolved and is reported."""
    global _public
    if node.get("refdomain") != "py":
        return None
    if _public is None:
        _public = _Public()
    target = node["reftarget"].lstrip(".~")
    modname, clsname = node.get("py:module"), node.get("py:class")
    candidates = [target]
    if modname:
        if clsname:
            candidates.append(f"{modname}.{clsname}.{target}")
        candidates.append(f"{modname}.{target}")
    # the module (and class) the docstring was written in, for names it uses without importing them
    scope = _docstring_scope(node)
    candidates += [".".join([*scope[:k], target]) for k in range(len(scope) - 1, 1, -1)]
    head, _, rest = target.partition(".")
    homes = _public.by_name.get(head, set())
    if len(homes) == 1:
        candidates.append(".".join(filter(None, [next(iter(homes)), rest])))
    py = env.get_domain("py")
    exists_privately = False
    for candidate in candidates:
        exists, public = _lookup(candidate)
        exists_privately |= exists and public is None
        if public is not None:
            found = py.resolve_xref(env, node["refdoc"], app.builder, "obj", public, node, contnode)
            if found is not None:
                return found
            exists_privately = True
    return contnode if exists_privately else None


def public_bases(app: Sphinx, name: str, obj: object, options: object, bases: list[type]) -> None:
    """Show a private base class (``_DatasetMetric``) as the public classes it derives from."""
    out: list[type] = []
    pending = list(bases)
    while pending:
        base = pending.pop(0)
        if base.__name__.startswith("_"):
            pending[:0] = [b for b in base.__bases__ if b is not object]
        elif base not in out:
            out.append(base)
    bases[:] = out or [object]


def require_docstring(app: Sphinx, what: str, name: str, obj: object, options: object, lines: list[str]
                      ) -> None:
    """Warn about a public class or function (a name in an ``__all__``) with no docstring."""
    global _public
    if _public is None:
        _public = _Public()
    empty = not any(line.strip() for line in lines)
    if empty and name in _public.by_id.values() and name not in _undocumented:
        _undocumented.add(name)
        logger.warning("public name %s has no docstring", name)


_undocumented: set[str] = set()


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("dpcompose-namespace", NamespaceDirective)
    app.connect("autodoc-process-docstring", require_docstring, priority=400)
    app.connect("autodoc-process-docstring", escape_bars, priority=600)
    app.connect("autodoc-process-bases", public_bases)
    app.connect("missing-reference", resolve_public)
    app.connect("env-check-consistency", check_every_public_name)
    return {"parallel_read_safe": True}
