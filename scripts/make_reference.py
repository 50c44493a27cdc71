"""Regenerate the Markdown API reference in docs/reference/ from the docstrings.

One page per public namespace (``dp``, ``dp.core``, ``dp.m``, ``dp.t``, ...), listing every name in the
namespace's ``__all__`` with its signature and docstring; ``docs/reference/README.md`` is the index, with
the first sentence of each docstring. A name re-exported by several namespaces (everything in
``dpcompose.__all__``) is documented once, where it is defined, and linked from the others.

    python scripts/make_reference.py

Plain Python (``inspect`` and ``ast``), no dependency beyond dpcompose itself; the output depends only on
the source, so ``tests/test_reference.py`` regenerates it in memory and compares it with the committed
pages.
"""

from __future__ import annotations

import ast
import enum
import importlib
import inspect
import itertools
import re
import sys
import types
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "reference"
COMMAND = "python scripts/make_reference.py"
sys.path.insert(0, str(ROOT / "src"))


@dataclass(frozen=True)
class Page:
    """A namespace and the page it is documented on."""

    module: str
    short: str  # how a user spells it after ``import dpcompose as dp``
    file: str
    title: str


#: The pages, in the order a name's home is looked for: a re-exported name is documented in the first
#: namespace that defines it (by ``__module__``), the top-level package last.
PAGES = [
    Page("dpcompose.core", "dp.core", "core.md", "core vocabulary: domains, metrics, measures, Measurement"),
    Page("dpcompose.measurements", "dp.m", "measurements.md", "measurements (noise mechanisms)"),
    Page("dpcompose.transformations", "dp.t", "transformations.md", "transformations (stable maps)"),
    Page("dpcompose.combinators", "dp.combinators", "combinators.md", "composition, adaptivity, ledgers"),
    Page("dpcompose.tables", "dp.tables", "tables.md", "DataFrame queries"),
    Page("dpcompose.accounting", "dp.accounting", "accounting.md", "privacy accounting, with sources"),
    Page("dpcompose.accuracy", "dp.accuracy", "accuracy.md", "accuracy and confidence intervals"),
    Page("dpcompose.analysis", "dp.analysis", "analysis.md", "verification and auditing"),
    Page("dpcompose.algorithms", "dp.algorithms", "algorithms.md", "synthetic data (AIM, MST)"),
    Page("dpcompose.errors", "dp.errors", "errors.md", "the errors dpcompose raises"),
    Page("dpcompose", "dp", "dp.md", "the top-level namespace"),
]
KINDS = {"class": "Classes", "exception": "Exceptions", "function": "Functions", "data": "Data"}


def public_names(modname: str) -> list[str]:
    """The names in ``modname.__all__``."""
    names = getattr(importlib.import_module(modname), "__all__", None)
    if names is None:
        raise RuntimeError(f"{modname} has no __all__; the reference is generated from __all__")
    return list(names)


def kind_of(obj: object) -> str:
    """``module``, ``exception``, ``class``, ``function`` or ``data``."""
    if isinstance(obj, types.ModuleType):
        return "module"
    if inspect.isclass(obj):
        return "exception" if issubclass(obj, BaseException) else "class"
    if callable(obj) and not is_alias(obj):
        return "function"
    return "data"


def is_alias(obj: object) -> bool:
    """A type alias (``int | float``, ``Union[...]``) rather than a value."""
    return isinstance(obj, types.UnionType) or type(obj).__module__ == "typing"


def home(modname: str, name: str) -> str:
    """The page module under which ``modname.name`` is documented."""
    obj = getattr(importlib.import_module(modname), name)
    holders = [
        p.module
        for p in PAGES
        if name in public_names(p.module) and getattr(importlib.import_module(p.module), name) is obj
    ]
    defined_in = getattr(obj, "__module__", None)
    if isinstance(defined_in, str):
        for p in PAGES[:-1]:
            if p.module in holders and (defined_in == p.module or defined_in.startswith(p.module + ".")):
                return p.module
    return holders[0]


# ---------------------------------------------------------------------------------------------- linking


class Links:
    """Where each public name is documented: ``dpcompose.measurements.make_laplace`` →
    ``measurements.md#make_laplace``, with a class's documented members too."""

    def __init__(self) -> None:
        self.by_path: dict[str, str] = {}  # documented dotted path -> file#anchor
        self.by_id: dict[int, str] = {}  # id of a public object -> documented dotted path
        self.by_name: dict[str, set[str]] = {}  # bare name -> documented dotted paths
        for page in PAGES:
            module = importlib.import_module(page.module)
            for name in public_names(page.module):
                obj = getattr(module, name)
                if isinstance(obj, types.ModuleType):
                    target = next((p for p in PAGES if p.module == obj.__name__), None)
                    if target is not None:
                        self.by_path[obj.__name__] = target.file
                        self.by_id.setdefault(id(obj), obj.__name__)
                    continue
                where = home(page.module, name)
                path = f"{where}.{name}"
                file = next(p.file for p in PAGES if p.module == where)
                self.by_path[path] = f"{file}#{anchor(name)}"
                if inspect.isclass(obj) or inspect.isfunction(obj):
                    self.by_id.setdefault(id(obj), path)
                self.by_name.setdefault(name, set()).add(path)
                if inspect.isclass(obj):
                    for member, _ in class_members(obj):
                        self.by_path[f"{path}.{member}"] = f"{file}#{anchor(f'{name}.{member}')}"
                        self.by_name.setdefault(f"{name}.{member}", set()).add(f"{path}.{member}")
        self.page = ""  # the file being written: links into it keep only the anchor

    def resolve(self, target: str, scope: str) -> str | None:
        """The link for a reference ``target`` written in a docstring of ``scope`` (a dotted path), or
        None when it names nothing public."""
        candidates = [target]
        parts = scope.split(".")
        candidates += [".".join([*parts[:k], target]) for k in range(len(parts), 0, -1)]
        for candidate in candidates:
            link = self.by_path.get(candidate) or self.by_path.get(self.public_path(candidate) or "")
            if link:
                return link
        head, _, rest = target.rpartition(".")
        for name in (target, rest if not head else None, target.split(".", 1)[-1]):
            homes = self.by_name.get(name or "", set())
            if len(homes) == 1:
                return self.by_path[next(iter(homes))]
        return None

    def public_path(self, path: str) -> str | None:
        """The documented path of an object spelled through a private module or a re-export."""
        parts = path.split(".")
        if parts[0] != "dpcompose":
            return None
        for i in range(len(parts), 0, -1):
            try:
                obj: object = importlib.import_module(".".join(parts[:i]))
            except ImportError:
                continue
            rest = parts[i:]
            for k, attr in enumerate(rest):
                obj = getattr(obj, attr, None)
                if obj is None:
                    return None
                if id(obj) in self.by_id:
                    return ".".join([self.by_id[id(obj)], *rest[k + 1 :]])
            return None
        return None

    def href(self, link: str) -> str:
        file, _, frag = link.partition("#")
        return f"#{frag}" if file == self.page and frag else link


def anchor(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation but ``-``/``_`` dropped."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


# ---------------------------------------------------------------------------------------- docstrings

_ROLE = re.compile(r":(?:py:)?(\w+):`(~?)([^`<]+?)(?:\s*<([^>]+)>)?`")
_INLINE = re.compile(r"(``.+?``|`[^`]+`)")
SECTIONS = {
    "Args",
    "Arguments",
    "Attributes",
    "Raises",
    "Returns",
    "Yields",
    "Examples",
    "Example",
    "Note",
    "Notes",
    "Warning",
    "Stability",
    "Source",
    "Sources",
    "See Also",
    "References",
}
ITEM_SECTIONS = {"Args", "Arguments", "Attributes", "Raises"}


def code(text: str) -> str:
    """``text`` as a Markdown code span."""
    ticks = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def inline(text: str, links: Links, scope: str) -> str:
    """reST inline markup as Markdown: roles become links (or code when the target is not public),
    ````literal```` becomes `literal`, and a ``<`` that would open an HTML tag is escaped."""

    def role(m: re.Match[str]) -> str:
        _, tilde, shown, explicit = m.groups()
        target = (explicit or shown).strip().lstrip("~.")
        label = target.rsplit(".", 1)[-1] if tilde else (shown.strip() if explicit else target)
        label = label + "()" if m.group(1) in ("func", "meth") and not label.endswith(")") else label
        link = links.resolve(target, scope)
        return f"[{code(label)}]({links.href(link)})" if link else code(label)

    # links and code spans are kept aside while the rest is escaped: a tag-like ``<`` would open HTML
    kept: list[str] = []

    def keep(rendered: str) -> str:
        kept.append(rendered)
        return f"\0{len(kept) - 1}\0"

    text = _ROLE.sub(lambda m: keep(role(m)), text)
    text = _INLINE.sub(
        lambda m: keep(code(m.group(0)[2:-2] if m.group(0).startswith("``") else m.group(0)[1:-1])), text
    )
    text = re.sub(r"<(?=[A-Za-z/!])", r"\\<", text)
    return re.sub(r"\0(\d+)\0", lambda m: kept[int(m.group(1))], text)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _dedent(lines: list[str]) -> list[str]:
    indents = [len(line) - len(line.lstrip()) for line in lines if line.strip()]
    cut = min(indents, default=0)
    return [line[cut:] for line in lines]


def _section(lines: list[str], i: int) -> tuple[str, str, int] | None:
    """``(name, inline text, body start)`` if line ``i`` opens a Google-style section."""
    m = re.match(r"^([A-Z][a-z]+(?: [A-Z][a-z]+)?):(?:\s+(.*))?$", lines[i])
    if not m or m.group(1) not in SECTIONS:
        return None
    return m.group(1), m.group(2) or "", i + 1


def render_doc(doc: str, links: Links, scope: str) -> list[str]:
    """A Google-style docstring as Markdown lines."""
    lines = doc.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        found = _section(lines, i)
        if found is None:
            j = i
            while j < len(lines) and _section(lines, j) is None:
                j += 1
            out += [*render_body(lines[i:j], links, scope), ""]
            i = j
            continue
        name, text, j = found
        body_end = j
        while body_end < len(lines) and (not lines[body_end].strip() or lines[body_end].startswith(" ")):
            body_end += 1
        body = lines[j:body_end]
        while body and not body[-1].strip():
            body.pop()
        if text or not body:  # ``Source: Dwork 2006 ...``, wrapped onto unindented lines
            k = j
            while k < len(lines) and lines[k].strip() and _section(lines, k) is None:
                k += 1
            joined = " ".join(s.strip() for s in [text, *lines[j:k]] if s.strip())
            out += [f"**{name}:** {inline(joined, links, scope)}", ""]
            i = k
            continue
        out += [f"**{name}:**", ""]
        body = _dedent(body)
        if name in ITEM_SECTIONS:
            out += render_items(body, links, scope)
        else:
            out += [*render_body(body, links, scope), ""]
        i = body_end
    while out and not out[-1]:
        out.pop()
    return out


def render_items(body: list[str], links: Links, scope: str) -> list[str]:
    """``name (type): text`` entries (continuation lines indented) as a bulleted list."""
    items: list[list[str]] = []
    for line in body:
        if line.strip() and not line.startswith(" "):
            items.append([line.strip()])
        elif line.strip() and items:
            items[-1].append(line.strip())
    out = []
    for item in items:
        text = " ".join(item)
        m = re.match(r"^([\w.*]+(?:\s*\([^)]*\))?)\s*:\s*(.*)$", text)
        if m:
            head, rest = m.groups()
            name = head.split("(")[0].strip()
            link = links.resolve(name, scope) if name[:1].isupper() else None
            shown = f"[{code(name)}]({links.href(link)})" if link else code(name)
            extra = head[len(name) :].strip()
            out.append(
                f"- {shown}{' ' + inline(extra, links, scope) if extra else ''}: {inline(rest, links, scope)}"
            )
        else:
            out.append(f"- {inline(text, links, scope)}")
    return [*out, ""]


def _open_backtick(line: str) -> bool:
    """Whether ``line`` leaves a literal (````x````) or a role or code span (```x```) open."""
    return line.count("``") % 2 == 1 or line.replace("``", "").count("`") % 2 == 1


def render_body(lines: list[str], links: Links, scope: str) -> list[str]:
    """Paragraphs, lists, doctest blocks (fenced as ``pycon``) and ``::`` literal blocks (fenced)."""
    out: list[str] = []
    i = 0
    literal_next = False
    list_indent: int | None = None
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if not stripped:
            out.append("")
            i += 1
            continue
        if stripped.startswith(">>>"):
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i])
                i += 1
            out += ["```pycon", *_dedent(block), "```"]
            literal_next = False
            continue
        if literal_next and indent > 0:
            block = []
            while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) >= indent):
                block.append(lines[i])
                i += 1
            while block and not block[-1].strip():
                block.pop()
            out += ["```text", *_dedent(block), "```"]
            literal_next = False
            continue
        if re.match(r"^([-*+]|\d+\.)\s", stripped):
            list_indent = indent
        elif list_indent is None or indent <= list_indent:
            list_indent = None
        # a literal or a role wrapped onto the next line is read whole
        while (
            _open_backtick(stripped)
            and i + 1 < len(lines)
            and lines[i + 1].strip()
            and not lines[i + 1].strip().startswith(">>>")
        ):
            i += 1
            stripped = f"{stripped} {lines[i].strip()}"
        text = inline(stripped, links, scope)
        if stripped.endswith("::"):
            literal_next = True
            text = text[:-2].rstrip() + (":" if stripped != "::" else "")
        if text.startswith("#"):
            text = "\\" + text
        # keep a list item's nesting; other indented prose is flush left (4 spaces would make code)
        prefix = " " * min(indent, (list_indent or 0) + 2) if list_indent is not None else ""
        out.append(prefix + text if text else "")
        i += 1
    return out


# ----------------------------------------------------------------------------------------- signatures


def _annotation(ann: object) -> str:
    if isinstance(ann, str):
        return ann
    return inspect.formatannotation(ann)


def _default(value: object) -> str:
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    text = repr(value)
    if re.search(r" at 0x[0-9a-f]+", text):  # an address changes from run to run
        return getattr(value, "__qualname__", None) or type(value).__name__ + "(...)"
    return text


def signature(name: str, obj: object, method: bool = False) -> str | None:
    """``name(params) -> return`` as Python would write it, one parameter a line when long (a method
    without its ``self``/``cls``, a class without ``-> None``)."""
    try:
        sig = inspect.signature(obj)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if inspect.isclass(obj):
        sig = sig.replace(return_annotation=sig.empty)
    params = []
    previous = None
    values = list(sig.parameters.values())
    if method and values and values[0].name in ("self", "cls"):
        values = values[1:]
    for p in values:
        if p.kind is p.KEYWORD_ONLY and previous not in (p.KEYWORD_ONLY, p.VAR_POSITIONAL):
            params.append("*")
        if previous is p.POSITIONAL_ONLY and p.kind is not p.POSITIONAL_ONLY:
            params.append("/")
        star = "*" if p.kind is p.VAR_POSITIONAL else "**" if p.kind is p.VAR_KEYWORD else ""
        text = star + p.name
        if p.annotation is not p.empty:
            text += f": {_annotation(p.annotation)}"
        if p.default is not p.empty:
            text += f" = {_default(p.default)}" if p.annotation is not p.empty else f"={_default(p.default)}"
        params.append(text)
        previous = p.kind
    if previous is inspect.Parameter.POSITIONAL_ONLY:
        params.append("/")
    ret = "" if sig.return_annotation is sig.empty else f" -> {_annotation(sig.return_annotation)}"
    flat = f"{name}({', '.join(params)}){ret}"
    if len(flat) <= 100:
        return flat
    return f"{name}(\n" + "".join(f"    {p},\n" for p in params) + f"){ret}"


def class_members(cls: type) -> list[tuple[str, object]]:
    """The public methods and properties a class defines itself, with a docstring, in source order."""
    out = []
    for name, attr in vars(cls).items():
        if name.startswith("_"):
            continue
        func = attr.__func__ if isinstance(attr, (classmethod, staticmethod)) else attr
        documented = inspect.getdoc(attr if isinstance(attr, property) else func)
        if (isinstance(attr, property) or inspect.isfunction(func)) and documented:
            out.append((name, attr))
    return out


# --------------------------------------------------------------------------------------------- entries


def attribute_doc(modname: str, name: str, obj: object) -> str:
    """The attribute docstring (the string literal after the assignment) of a public constant."""
    for source in sorted(m for m in sys.modules if m == modname or m.startswith(modname + ".")):
        module = sys.modules[source]
        if vars(module).get(name) is not obj or not getattr(module, "__file__", None):
            continue
        tree = ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8"))
        body = tree.body
        for node, after in itertools.pairwise(body):
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AnnAssign)
                else []
            )
            if (
                any(isinstance(t, ast.Name) and t.id == name for t in targets)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                return inspect.cleandoc(after.value.value)
    return ""


def doc_of(modname: str, name: str, obj: object) -> str:
    if kind_of(obj) == "data":
        return attribute_doc(modname, name, obj)
    return inspect.getdoc(obj) or ""


def summary(doc: str, links: Links, scope: str) -> str:
    """The first sentence of a docstring's first paragraph, on one line."""
    para = " ".join(line.strip() for line in doc.strip().split("\n\n", 1)[0].splitlines())
    m = re.match(r"^(.+?[.!?])(?=\s+[A-Z(`*]|$)", para)
    return inline(m.group(1) if m else para, links, scope)


def entry(page: Page, name: str, obj: object, links: Links) -> list[str]:
    path = f"{page.module}.{name}"
    kind = kind_of(obj)
    out = [f"### {name}", ""]
    if kind == "data":
        value = str(obj) if is_alias(obj) else _default(obj)
        if len(value) > 100:  # the docstring says what it is; the first words show the value
            value = value[:80] + "…  # " + f"{type(obj).__name__} of {len(value):,} characters, cut here"
        out += ["```python", f"{name} = {value}", "```", ""]
    else:
        sig = signature(name, obj)
        if sig:
            prefix = "class " if inspect.isclass(obj) else ""
            out += ["```python", prefix + sig, "```", ""]
    if inspect.isclass(obj):
        bases = [b for b in public_bases(obj) if b is not object]
        if bases:
            shown = []
            for b in bases:
                link = links.by_path.get(links.by_id.get(id(b), ""))
                label = code(b.__name__)
                shown.append(f"[{label}]({links.href(link)})" if link else label)
            out += [f"Bases: {', '.join(shown)}", ""]
    doc = doc_of(page.module, name, obj)
    out += [*render_doc(doc, links, path), ""] if doc else ["*(no docstring)*", ""]
    if inspect.isclass(obj) and not issubclass(obj, enum.Enum):
        for member, attr in class_members(obj):
            out += [f"#### {name}.{member}", ""]
            if isinstance(attr, property):
                ret = inspect.signature(attr.fget).return_annotation if attr.fget else inspect.Signature.empty
                typ = "" if ret is inspect.Signature.empty else f": {_annotation(ret)}"
                out += ["```python", f"{name}.{member}{typ}  # property", "```", ""]
                doc = inspect.getdoc(attr) or ""
            else:
                func = attr.__func__ if isinstance(attr, (classmethod, staticmethod)) else attr
                sig = signature(f"{name}.{member}", func, method=not isinstance(attr, staticmethod))
                deco = (
                    "@classmethod\n"
                    if isinstance(attr, classmethod)
                    else "@staticmethod\n"
                    if isinstance(attr, staticmethod)
                    else ""
                )
                if sig:
                    out += ["```python", deco + sig, "```", ""]
                doc = inspect.getdoc(func) or ""
            out += [*render_doc(doc, links, f"{path}.{member}"), ""]
    if inspect.isclass(obj) and issubclass(obj, enum.Enum):
        out += ["Members: " + ", ".join(code(f"{name}.{m.name}") for m in obj), ""]
    return out


def public_bases(cls: type) -> list[type]:
    """A class's bases, a private base replaced by the public classes it derives from."""
    out: list[type] = []
    pending = list(cls.__bases__)
    while pending:
        base = pending.pop(0)
        if base.__name__.startswith("_") or (base.__module__ == "typing" and base.__name__ == "Generic"):
            pending[:0] = [b for b in base.__bases__ if b is not object]
        elif base not in out:
            out.append(base)
    return out


# ----------------------------------------------------------------------------------------------- pages


def page_text(page: Page, links: Links) -> str:
    links.page = page.file
    module = importlib.import_module(page.module)
    own: dict[str, list[str]] = {k: [] for k in KINDS}
    elsewhere: list[str] = []
    for name in public_names(page.module):
        obj = getattr(module, name)
        kind = kind_of(obj)
        if kind != "module" and home(page.module, name) == page.module:
            own[kind].append(name)
        else:
            elsewhere.append(name)
    out = [
        f"# `{page.short}`: {page.title}",
        "",
        f"`{page.short}` is `{page.module}`. Generated from the docstrings by `{COMMAND}`; do not edit by "
        "hand. [Index](README.md)",
        "",
    ]
    out += [*render_doc(inspect.getdoc(module) or "", links, page.module), ""]
    toc = [f"[{n}](#{anchor(n)})" for names in own.values() for n in names]
    if toc:
        out += ["**On this page:** " + " · ".join(toc), ""]
    for kind, names in own.items():
        if names:
            out += [f"## {KINDS[kind]}", ""]
            for n in names:
                out += entry(page, n, getattr(module, n), links)
    if elsewhere:
        out += [
            "## Also available here",
            "",
            f"These names in `{page.module}.__all__` are documented where they are defined "
            f"(`{page.short}.X` is the same object).",
            "",
            "| name | documented in | summary |",
            "| --- | --- | --- |",
        ]
        for n in elsewhere:
            obj = getattr(module, n)
            if isinstance(obj, types.ModuleType):
                target = next((p for p in PAGES if p.module == obj.__name__), None)
                where = f"[{target.short}]({target.file})" if target else code(obj.__name__)
                first = summary(inspect.getdoc(obj) or "", links, obj.__name__)
            else:
                hm = home(page.module, n)
                target = next(p for p in PAGES if p.module == hm)
                where = f"[{target.short}.{n}]({target.file}#{anchor(n)})"
                first = summary(doc_of(hm, n, obj), links, f"{hm}.{n}")
            out.append(f"| {code(n)} | {where} | {first.replace('|', '&#124;')} |")
        out.append("")
    return "\n".join(_squeeze(out)).rstrip() + "\n"


def index_text(links: Links) -> str:
    links.page = "README.md"
    out = [
        "# dpcompose API reference",
        "",
        "Every name in the public `__all__` lists, with its signature and docstring, one page per "
        "namespace. `import dpcompose as dp` gives the names on the [`dp`](dp.md) page; `dp.m` is "
        "`dpcompose.measurements` and `dp.t` is `dpcompose.transformations`. A name re-exported by "
        "several namespaces is documented where it is defined and linked from the others. The guides "
        "(concepts, composition, accounting, tables) are the pages in [docs/](../index.md).",
        "",
        f"Generated from the docstrings by `{COMMAND}` (plain Python, no dependency); "
        "`tests/test_reference.py` fails when a page is not current. The same docstrings also build "
        "as HTML with Sphinx: see [sphinx/README.md](sphinx/README.md).",
        "",
        "| page | namespace | names |",
        "| --- | --- | --- |",
    ]
    for page in PAGES:
        out.append(
            f"| [{page.short}]({page.file}) | `{page.module}`: {page.title} | "
            f"{len(public_names(page.module))} |"
        )
    out.append("")
    for page in PAGES:
        module = importlib.import_module(page.module)
        own = [
            n
            for n in public_names(page.module)
            if kind_of(getattr(module, n)) != "module" and home(page.module, n) == page.module
        ]
        if not own:
            continue
        out += [f"## [{page.short}]({page.file}): {page.title}", ""]
        for n in own:
            first = summary(doc_of(page.module, n, getattr(module, n)), links, f"{page.module}.{n}")
            out.append(f"- [{code(n)}]({page.file}#{anchor(n)}): {first}")
        out.append("")
    return "\n".join(_squeeze(out)).rstrip() + "\n"


def _squeeze(lines: list[str]) -> list[str]:
    """No trailing spaces, no runs of blank lines."""
    out: list[str] = []
    for line in lines:
        line = line.rstrip()
        if line or (out and out[-1]):
            out.append(line)
    return out


def generate() -> dict[str, str]:
    """Every page of the reference: file name (under docs/reference/) → Markdown text."""
    links = Links()
    pages = {page.file: page_text(page, links) for page in PAGES}
    pages["README.md"] = index_text(links)
    return pages


def main() -> None:
    pages = generate()
    for stale in sorted({p.name for p in OUT.glob("*.md")} - set(pages)):
        (OUT / stale).unlink()
        print(f"removed docs/reference/{stale}")
    for file, text in pages.items():
        path = OUT / file
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print(f"wrote docs/reference/{file} ({len(text.encode()):,} bytes)")


if __name__ == "__main__":
    main()
