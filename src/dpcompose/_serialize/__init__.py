"""Pipelines as data: ``dp.to_json`` / ``dp.from_json`` write and rebuild library objects.

A file records constructor *calls*, never code::

    {"dpcompose": "1.0", "library": "0.1.0",
     "root": {"call": "dpcompose.measurements.make_laplace", "args": [...], "kwargs": {...}}}

A transformation or measurement built by a public library constructor remembers the call
(:mod:`dpcompose.core._recipe`); ``left >> right`` is stored as ``{"chain": [left, right]}``; domains,
metrics, measures and the filter rules of :mod:`dpcompose.accounting` are stored as calls of their class
with their fields. Values are tagged so that they come back exactly: ``{"float": "0x1.8p+0"}`` (the
float's hex form), ``{"fraction": "1/3"}``, ``{"decimal": "0.1"}``, ``{"tuple": [...]}``,
``{"dict": [[key, value], ...]}``, ``{"frozenset": [...]}``, ``{"bytes": "00ff"}``, numpy scalars and
arrays tagged with their dtype, and the carrier types ``{"type": "int"}``. Plain JSON lists, integers of
any size, strings, booleans and ``null`` are themselves.

Loading calls only the constructors listed in the public ``__all__`` of :mod:`dpcompose.transformations`,
:mod:`dpcompose.measurements`, :mod:`dpcompose.combinators`, :mod:`dpcompose.core`, :mod:`dpcompose.tables`
(domains and columns), :mod:`dpcompose.algorithms` and the value classes of :mod:`dpcompose.accounting`: no
``importlib`` of stored names, no ``eval``, no ``pickle``. A user's function (a predicate, a row map, a
post-processor, the parts of ``dp.make_user_measurement``) is stored by the name it was registered under with
:func:`register_function`, in the process that writes and in the process that reads; an unregistered one is
refused.

A file cannot assert trust. ``dp.make_user_measurement`` and ``dp.make_user_transformation`` take
``trusted=True``, the builder's statement that a map the library cannot check is proven; a file that
builds one would make that statement for whoever loads it, wiring the loader's registered functions as it
likes (an identity as a "mechanism" releases the datum). So :func:`from_json` refuses a file with
user-written parts, naming each, before it builds anything, unless the loader passes
``allow_unverified=True``. Unpickling a transformation or measurement goes through :func:`from_json`
without that flag, so a pickled user-written part is refused when it is loaded: pickle carries no act
of trust (see docs/serialization.md).

A table query or ``dp.Context`` is stored as named fields, ``{"table_query": {...}}`` or
``{"table_context": {...}}`` (a :class:`StoredKind` its package registers): its configuration and plan,
never its data or spending. :func:`from_json` rebuilds it against the ``data`` (and ``ledger``) the
loader passes, through the public builders (:mod:`dpcompose.tables._stored`).

Examples:
    >>> import dpcompose as dp
    >>> ages = dp.VectorDomain(dp.AtomDomain(int, bounds=(0, 120)))
    >>> count = dp.t.make_count(ages, dp.SymmetricDistance())
    >>> release = count >> dp.m.make_laplace(count.output_domain, count.output_metric, scale=2.0)
    >>> text = dp.to_json(release)
    >>> loaded = dp.from_json(text)
    >>> loaded.map(1) == release.map(1), dp.to_json(loaded) == text
    (True, True)
"""

from __future__ import annotations

import copyreg
import json
import re
from collections.abc import Callable
from typing import Any, NoReturn

from dpcompose._serialize.values import (
    STORED_KINDS,
    TAGS,
    Reader,
    StoredKind,
    Writer,
    library_constructors,
    register_function,
    register_stored_kind,
)
from dpcompose._validation import short_repr as _short
from dpcompose._version import __version__
from dpcompose.core import make_user_measurement, make_user_transformation
from dpcompose.core._domains import Domain
from dpcompose.core._measurement import Measurement, Transformation
from dpcompose.core._measures import Measure
from dpcompose.core._metrics import Metric
from dpcompose.errors import (
    DomainMismatch,
    DPError,
    InvalidParameter,
    SerializationError,
    UnverifiedPartError,
)

__all__ = [
    "FORMAT_VERSION", "StoredKind", "from_json", "register_function", "register_stored_kind", "to_json",
]  # fmt: skip

#: The version of the file format this library writes. A file whose major version is higher is refused;
#: a higher minor version is read (a minor version only adds tags, and an unknown tag is refused).
FORMAT_VERSION = "1.0"
_MAJOR = 1

_VERSION = re.compile(r"([0-9]{1,6})\.([0-9]{1,6})")


# ---------------------------------------------------------------------------------------------------------
# Writing


def to_json(obj: object, *, drop_rng: bool = False) -> str:
    """The JSON text that rebuilds ``obj``: a domain, metric, measure, transformation or measurement, or
    a table query or ``dp.Context`` (their configuration and plan, never their data or spending).

    The text records the library constructor calls that built ``obj`` (see the module docstring), so
    :func:`from_json` rebuilds an object with the same domains, metrics and maps.

    Args:
        obj: a library object built with public constructors and ``>>``, a built table query
            (``ctx.query()...agg(...)``) or a ``dp.Context``.
        drop_rng: a mechanism built with ``rng=`` (a seeded generator, for tests) cannot be stored: its
            state is not a constructor argument. With ``drop_rng=True`` such arguments are stored as
            ``None``, so the loaded mechanism draws from the library's default secure source.

    Raises:
        SerializationError: a part of ``obj`` cannot be stored: an unregistered user function (see
            :func:`register_function`), an ``rng`` (unless ``drop_rng``), a ledger or queryable (live
            state), an object not built by a public constructor; the message names the argument.
        InvalidParameter: ``drop_rng`` is not a bool.

    Examples:
        >>> import dpcompose as dp
        >>> print(dp.to_json(dp.AtomDomain(float, bounds=(0.0, 1.5))))
        {
          "dpcompose": "1.0",
          "library": "0.1.0",
          "root": {
            "call": "dpcompose.core.AtomDomain",
            "args": [],
            "kwargs": {
              "carrier": {
                "type": "float"
              },
              "bounds": {
                "tuple": [
                  {
                    "float": "0x0.0p+0"
                  },
                  {
                    "float": "0x1.8000000000000p+0"
                  }
                ]
              },
              "nan": false
            }
          }
        }
    """
    if not isinstance(drop_rng, bool):
        raise InvalidParameter(f"drop_rng={drop_rng!r} must be a bool")
    library_constructors()  # imports every library package, so that each registered its stored kinds
    kind = next((k for k in STORED_KINDS.values() if isinstance(obj, k.cls)), None)
    if kind is None and not isinstance(obj, (Domain, Metric, Measure, Transformation, Measurement)):
        raise SerializationError(
            f"obj={_short(obj)} is not a domain, metric, measure, transformation or measurement, "
            "nor a table query or dp.Context"
        )
    try:
        if kind is not None:
            writer = Writer(drop_rng)
            fields = kind.write(obj)
            kept = [f for f in kind.fields if f not in kind.optional or fields[f] is not None]
            root = {kind.tag: {f: writer.value(fields[f], f"root.{kind.tag}.{f}") for f in kept}}
        else:
            root = Writer(drop_rng).value(obj, "root")
    except RecursionError:
        raise SerializationError("obj is nested too deeply to store") from None
    return json.dumps({"dpcompose": FORMAT_VERSION, "library": __version__, "root": root}, indent=2)


def _reduce(
    obj: Transformation[Any, Any, Any, Any] | Measurement[Any, Any, Any, Any],
) -> tuple[Callable[[str], Any], tuple[str]]:
    """Pickle a transformation or measurement as its JSON recipe: no code is pickled.

    Registered for both classes with :func:`copyreg.pickle` below, so the core never imports this module.
    """
    return (from_json, (to_json(obj),))


copyreg.pickle(Transformation, _reduce)
copyreg.pickle(Measurement, _reduce)


# ---------------------------------------------------------------------------------------------------------
# Reading


def from_json(
    text: str | bytes, *, allow_unverified: bool = False, data: Any = None, ledger: Any = None
) -> Any:
    """Rebuild the object that :func:`to_json` wrote, by calling the library constructors it records.

    Only public library constructors are called (never code from the file); user functions are looked
    up by the names registered with :func:`register_function` in this process.

    A user-written part (``dp.make_user_measurement`` / ``dp.make_user_transformation``, shown as
    ``[UNVERIFIED]``) carries a map the library cannot check, and the file says how the registered
    functions are wired into it. Trusting it is the loader's act, not the file's: by default such a file
    is refused before anything is built, with every such part named.

    Args:
        text: the JSON text (``str``, or UTF-8 ``bytes``).
        allow_unverified: ``True`` to build the user-written parts of the file, after you have reviewed
            them: your statement, as with ``trusted=True`` when building one, that their maps are proven.
        data: for a stored table query or ``dp.Context`` (and only for those): the frame it runs on (a
            file never holds data), or, for a table query, a ``dp.Context`` with the stored schema, unit
            and measure to build the query in.
        ledger: for a stored ``dp.Context`` (or a query loaded with a frame): the ledger of its privacy
            filter (a file never holds spending).

    Returns:
        The domain, metric, measure, transformation or measurement; a table query or ``dp.Context``.

    Raises:
        UnverifiedPartError: the file builds user-written parts and ``allow_unverified`` is not
            ``True``; the message names each (where in the file, its name and registered functions).
            Nothing was built.
        SerializationError: the text is not valid JSON or not a dpcompose file; it comes from an
            incompatible (future) format version; it names a constructor or function that is unknown
            here; or a constructor refuses the stored arguments (a tampered file). The message says
            where in the file.
        InvalidParameter: ``allow_unverified`` is not a bool; ``data`` is missing for a table file or
            given for another file.

    Examples:
        >>> import dpcompose as dp
        >>> dp.from_json(dp.to_json(dp.VectorDomain(dp.AtomDomain(int), size=3)))
        VectorDomain(AtomDomain(int), size=3)
        >>> dp.from_json('{"dpcompose": "2.0", "library": "9.0", "root": null}')
        Traceback (most recent call last):
        ...
        dpcompose.errors.SerializationError: the file has format version 2.0, written by a newer ...
    """
    if not isinstance(allow_unverified, bool):
        raise InvalidParameter(
            f"allow_unverified={allow_unverified!r} must be a bool: True to build the file's user-written "
            "parts after reviewing them"
        )
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SerializationError(f"text is not UTF-8: {exc}") from None
    if not isinstance(text, str):
        raise SerializationError(f"text={_short(text)} must be a str (the JSON written by dp.to_json)")
    try:
        doc = json.loads(text, object_pairs_hook=unique_keys, parse_constant=_no_constant)
    except SerializationError:
        raise
    except (ValueError, RecursionError) as exc:
        raise SerializationError(f"text is not valid JSON: {exc}") from None
    if not isinstance(doc, dict) or set(doc) != {"dpcompose", "library", "root"}:
        raise SerializationError(
            "text is not a dpcompose file: expected an object with the keys 'dpcompose' (format version), "
            "'library' and 'root'"
        )
    version, library = doc["dpcompose"], doc["library"]
    if not isinstance(library, str):
        raise SerializationError(f"'library'={_short(library)} must be a version string")
    match = _VERSION.fullmatch(version) if isinstance(version, str) else None
    if match is None:
        raise SerializationError(
            f"'dpcompose'={_short(version)} must be a format version like {FORMAT_VERSION!r}"
        )
    major = int(match.group(1))
    if major > _MAJOR:
        raise SerializationError(
            f"the file has format version {version}, written by a newer dpcompose ({library}); this library "
            f"reads format {_MAJOR}.x: upgrade dpcompose to load it"
        )
    if major < _MAJOR:
        raise SerializationError(f"the file has format version {version}, which this library does not read")
    library_constructors()  # imports every library package, so that each registered its stored kinds
    raw = doc["root"]
    kind = STORED_KINDS.get(next(iter(raw))) if isinstance(raw, dict) and len(raw) == 1 else None
    if kind is None and (data is not None or ledger is not None):
        raise InvalidParameter(
            "data= and ledger= are for a stored table query or dp.Context; this file stores neither: "
            "load it with dp.from_json(text)"
        )
    try:
        if not allow_unverified:
            _refuse_user_parts(raw)
        if kind is not None:
            return _read_kind(kind, raw[kind.tag], data, ledger)
        root = Reader().value(raw, "root")
    except RecursionError:
        raise SerializationError("the file is nested too deeply") from None
    if not isinstance(root, (Domain, Metric, Measure, Transformation, Measurement)):
        raise SerializationError(
            f"root: {_short(root)} is not a domain, metric, measure, transformation or measurement"
        )
    return root


def _read_kind(kind: StoredKind, body: Any, data: Any, ledger: Any) -> Any:
    where = f"root.{kind.tag}"
    required = set(kind.fields) - set(kind.optional)
    if not isinstance(body, dict) or not required <= set(body) <= set(kind.fields):
        keys = ", ".join(f for f in kind.fields if f in required)
        extra = f" (and optionally {', '.join(kind.optional)})" if kind.optional else ""
        raise SerializationError(f"{where}: must be an object with the keys {keys}{extra}")
    if data is None:
        raise InvalidParameter(
            f"data=None: the file stores a {kind.tag.replace('_', ' ')} (its plan, never its data): pass "
            "the frame it runs on, dp.from_json(text, data=frame)"
        )
    reader = Reader()
    fields = {f: reader.value(body[f], f"{where}.{f}") if f in body else None for f in kind.fields}
    try:
        return kind.read(fields, data, ledger)
    except (SerializationError, DomainMismatch):  # DomainMismatch: the loader's frame is not of the schema
        raise
    except DPError as exc:
        what = kind.tag.replace("_", " ")
        raise SerializationError(f"{where}: the stored {what} is refused: {exc}") from exc


_USER_KINDS: dict[object, str] = {
    make_user_measurement: "measurement",
    make_user_transformation: "transformation",
}


def _refuse_user_parts(root: Any) -> None:
    """Raise :class:`UnverifiedPartError` naming every user-written part the file would build.

    Reads the parsed JSON only (no constructor is called) and looks into every object and list, so it
    sees each call the reader would make, at the place the reader's messages name.
    """
    found: list[str] = []
    _find_user_parts(root, "root", found)
    if found:
        listed = "; ".join(found)
        raise UnverifiedPartError(
            f"the file builds {len(found)} user-written part{'s' if len(found) > 1 else ''} ({listed}). "
            "A user-written map is a claim the library cannot check, and the file decides how this "
            "process's registered functions are wired into it, so a file cannot assert that trust: "
            "nothing was built. If you have reviewed these parts and trust them, load the file with "
            "dp.from_json(text, allow_unverified=True) (unpickling never asserts that trust: move such "
            "a pipeline with dp.to_json, not pickle)"
        )


def _find_user_parts(v: Any, where: str, found: list[str]) -> None:
    if isinstance(v, list):
        for i, x in enumerate(v):
            _find_user_parts(x, f"{where}[{i}]", found)
        return
    if not isinstance(v, dict):
        return
    tag = next((t for t in TAGS if t in v), None)
    name = v.get("call")
    if tag == "call" and isinstance(name, str):
        here, short = f"{where}.call", name.rsplit(".", 1)[-1]
        kind = _USER_KINDS.get(library_constructors().get(name))
        if kind is not None:
            found.append(f"{here}: {_describe_user_part(v, kind)}")
        for key, x in v.items():
            if key == "args" and isinstance(x, list):
                for i, a in enumerate(x):
                    _find_user_parts(a, f"{here}: {short} args[{i}]", found)
            elif key == "kwargs" and isinstance(x, dict):
                for k, a in x.items():
                    _find_user_parts(a, f"{here}: {short} argument {k!r}", found)
            elif key != "call":
                _find_user_parts(x, f"{here}.{key}", found)
        return
    label = where if tag is None else f"{where}.{tag}"
    for key, x in v.items():
        _find_user_parts(x, label if key == tag else f"{label}.{key}", found)


def _describe_user_part(call: dict[str, Any], kind: str) -> str:
    """``a user-written measurement 'name' (functions 'a', 'b')``, from the stored call."""
    kwargs = call.get("kwargs")
    name = kwargs.get("name", f"user_{kind}") if isinstance(kwargs, dict) else f"user_{kind}"
    functions: list[str] = []
    _function_names_in(call.get("args"), functions)
    _function_names_in(kwargs, functions)
    text = f"a user-written {kind} {_short(name)} (dp.make_user_{kind}"
    return text + (f", registered functions {', '.join(functions)})" if functions else ")")


def _function_names_in(v: Any, out: list[str]) -> None:
    if isinstance(v, list):
        for x in v:
            _function_names_in(x, out)
    elif isinstance(v, dict):
        if set(v) == {"function"}:
            out.append(_short(v["function"]))
        elif "call" not in v:
            for x in v.values():
                _function_names_in(x, out)


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object as a dict, for ``json.loads(..., object_pairs_hook=unique_keys)``.

    Raises:
        SerializationError: a key occurs twice in one object (plain ``json`` would keep the last).
    """
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise SerializationError(f"text has the key {k!r} twice in one object")
        out[k] = v
    return out


def _no_constant(name: str) -> NoReturn:
    raise SerializationError(f"text holds the bare constant {name}; numbers are stored as tagged values")
