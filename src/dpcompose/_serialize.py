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
:mod:`dpcompose.measurements`, :mod:`dpcompose.combinators`, :mod:`dpcompose.core`,
:mod:`dpcompose.tables` (domains and columns), :mod:`dpcompose.algorithms` and the value classes of
:mod:`dpcompose.accounting`: no
``importlib`` of stored names, no ``eval``, no ``pickle``. A user's function (a predicate, a row map, a
post-processor, the parts of ``dp.make_user_measurement``) is stored by the name it was registered under
with :func:`register_function`, in the process that writes and in the process that reads; an unregistered
one is refused.

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
import dataclasses
import datetime
import inspect
import json
import re
import threading
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any, NoReturn

import numpy as np

from dpcompose._validation import short_repr as _short
from dpcompose._version import __version__
from dpcompose.core import make_user_measurement, make_user_transformation
from dpcompose.core._domains import Domain
from dpcompose.core._measurement import Measurement, Transformation
from dpcompose.core._measures import Measure
from dpcompose.core._metrics import Metric
from dpcompose.core._queryable import Queryable
from dpcompose.core._recipe import RECORDED, Call, Chain
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

_CARRIERS: dict[str, type] = {
    "int": int,
    "float": float,
    "bool": bool,
    "str": str,
    "bytes": bytes,
    "Fraction": Fraction,
    "Decimal": Decimal,
    "tuple": tuple,
    "list": list,
    "dict": dict,
    "date": datetime.date,  # a table column's dtype
}
_CARRIER_NAMES = {v: k for k, v in _CARRIERS.items()}
_NUMPY_DTYPES = frozenset(
    [
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "float32",
        "float64",
    ]
)
_PACKAGES = ("transformations", "measurements", "combinators", "core", "accounting", "tables", "algorithms")
_FRACTION = re.compile(r"-?[0-9]+/[0-9]+")
_VERSION = re.compile(r"([0-9]{1,6})\.([0-9]{1,6})")

# ---------------------------------------------------------------------------------------------------------
# Registries


_lock = threading.Lock()
_functions: dict[str, Callable[..., Any]] = {}
_function_names: dict[int, tuple[str, Callable[..., Any]]] = {}
_constructors: dict[str, Callable[..., Any]] = {}
_constructor_names: dict[int, str] = {}


def register_function(name: str, function: Callable[..., Any]) -> None:
    """Let ``dp.to_json`` store ``function`` by ``name``, and ``dp.from_json`` look it up again.

    A file stores names, never code: register each user function (a predicate, a row map, a
    post-processor, the function and map of ``dp.make_user_measurement``) under the same name in the
    process that writes the file and in the process that reads it. The registry belongs to the process.
    Registering the same function under the same name again does nothing; a name already taken by another
    function, or a function already registered under another name, is refused.

    Args:
        name: a non-empty name, e.g. ``"census.is_adult"``.
        function: the callable.

    Raises:
        InvalidParameter: ``name`` is not a non-empty string, ``function`` is not callable, or either is
            already registered with another partner.

    Examples:
        >>> import dpcompose as dp
        >>> def is_adult(row):
        ...     return row >= 18
        >>> dp.register_function("docs.is_adult", is_adult)
        >>> rows = dp.VectorDomain(dp.AtomDomain(int))
        >>> adults = dp.t.make_subset_by(rows, dp.SymmetricDistance(), is_adult)
        >>> dp.from_json(dp.to_json(adults))([10, 20, 30])
        [20, 30]
    """
    if not isinstance(name, str) or not name:
        raise InvalidParameter(f"name={name!r} must be a non-empty string")
    if not callable(function) or isinstance(function, type):
        raise InvalidParameter(f"function={function!r} must be a function")
    with _lock:
        current = _functions.get(name)
        if current is function:
            return
        if current is not None:
            raise InvalidParameter(f"name={name!r} is already registered for another function ({current!r})")
        other = _function_names.get(id(function))
        if other is not None:
            raise InvalidParameter(
                f"name={name!r}: function={function!r} is already registered as {other[0]!r}"
            )
        _functions[name] = function
        _function_names[id(function)] = (name, function)


@dataclasses.dataclass(frozen=True)
class StoredKind:
    """An object stored as named fields rather than as one constructor call (a table query, a Context).

    ``write(obj)`` gives the fields (plain values and library objects, stored as every value is);
    ``read(fields, data, ledger)`` rebuilds the object from the decoded fields against the ``data`` and
    ``ledger`` the loader passes to :func:`from_json` (the file holds neither). The file's root is
    ``{tag: {field: value, ...}}`` with exactly ``fields``.
    """

    tag: str
    cls: type
    fields: tuple[str, ...]
    write: Callable[[Any], dict[str, Any]]
    read: Callable[[dict[str, Any], Any, Any], Any]


_kinds: dict[str, StoredKind] = {}


def register_stored_kind(kind: StoredKind) -> None:
    """Let :func:`to_json` / :func:`from_json` store objects of ``kind.cls`` under ``kind.tag``.

    Called by the library's own packages when they are imported (the table queries and Contexts of
    :mod:`dpcompose.tables`); a file cannot add a kind.

    Raises:
        InvalidParameter: the tag is a value tag or is already taken by another class.
    """
    if kind.tag in _TAGS:
        raise InvalidParameter(f"tag={kind.tag!r} is a value tag")
    with _lock:
        current = _kinds.get(kind.tag)
        if current is not None and current.cls is not kind.cls:
            raise InvalidParameter(f"tag={kind.tag!r} is already registered for {current.cls.__name__}")
        _kinds[kind.tag] = kind


def _library_constructors() -> dict[str, Callable[..., Any]]:
    """Every constructor a file may call, by its public name (built once, from the ``__all__`` lists)."""
    with _lock:
        if _constructors:
            return _constructors
        import importlib

        for package in _PACKAGES:
            # importlib here only imports the fixed library packages above, never a stored name
            module = importlib.import_module(f"dpcompose.{package}")
            for attr in module.__all__:
                obj = getattr(module, attr)
                if not _is_constructor(obj, package):
                    continue
                name = f"dpcompose.{package}.{attr}"
                _constructors[name] = obj
                _constructor_names.setdefault(id(obj), name)
        return _constructors


def _is_constructor(obj: object, package: str) -> bool:
    if obj in RECORDED:
        return True
    if not isinstance(obj, type) or inspect.isabstract(obj):
        return False
    if package in ("accounting", "tables") and dataclasses.is_dataclass(obj):
        return True  # parameter records (RenyiCurve, a table's Column)
    if package == "accounting":
        return False
    return issubclass(obj, (Domain, Metric, Measure)) and obj not in (Domain, Metric, Measure)


def _public_name(obj: object) -> str | None:
    _library_constructors()
    return _constructor_names.get(id(obj))


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
    _library_constructors()  # imports every library package, so that each registered its stored kinds
    kind = next((k for k in _kinds.values() if isinstance(obj, k.cls)), None)
    if kind is None and not isinstance(obj, (Domain, Metric, Measure, Transformation, Measurement)):
        raise SerializationError(
            f"obj={_short(obj)} is not a domain, metric, measure, transformation or measurement, "
            "nor a table query or dp.Context"
        )
    try:
        if kind is not None:
            writer = _Writer(drop_rng)
            fields = kind.write(obj)
            root = {kind.tag: {f: writer.value(fields[f], f"root.{kind.tag}.{f}") for f in kind.fields}}
        else:
            root = _Writer(drop_rng).value(obj, "root")
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


class _Writer:
    def __init__(self, drop_rng: bool) -> None:
        self.drop_rng = drop_rng

    def fail(self, where: str, why: str) -> NoReturn:
        raise SerializationError(f"{where}: {why}")

    def value(self, v: Any, where: str) -> Any:
        if v is None or isinstance(v, (bool, str)) or type(v) is int:
            return v
        if type(v) is float:
            return {"float": v.hex()}
        if type(v) is Fraction:
            return {"fraction": f"{v.numerator}/{v.denominator}"}
        if type(v) is Decimal:
            return {"decimal": str(v)}
        if type(v) is list:
            return [self.value(x, f"{where}[{i}]") for i, x in enumerate(v)]
        if type(v) is tuple:
            return {"tuple": [self.value(x, f"{where}[{i}]") for i, x in enumerate(v)]}
        if type(v) is dict:
            return {
                "dict": [
                    [self.value(k, f"{where} key"), self.value(x, f"{where}[{k!r}]")] for k, x in v.items()
                ]
            }
        if type(v) is frozenset:
            items = [self.value(x, f"{where} element") for x in v]
            return {"frozenset": sorted(items, key=lambda e: json.dumps(e, sort_keys=True))}
        if type(v) is bytes:
            return {"bytes": v.hex()}
        if isinstance(v, np.generic) and v.dtype.name in _NUMPY_DTYPES:
            return {"numpy": v.dtype.name, "value": self.value(v.item(), where)}
        if isinstance(v, np.ndarray) and v.dtype.name in _NUMPY_DTYPES:
            return {"ndarray": v.dtype.name, "shape": list(v.shape), "data": self.value(v.tolist(), where)}
        if isinstance(v, type):
            if v in _CARRIER_NAMES:
                return {"type": _CARRIER_NAMES[v]}
            self.fail(where, f"the type {v!r} cannot be stored (types that can: {', '.join(_CARRIERS)})")
        if isinstance(v, (Transformation, Measurement)):
            return self.record(v, where)
        if isinstance(v, (Domain, Metric, Measure)) or dataclasses.is_dataclass(v):
            return self.instance(v, where)
        if isinstance(v, Queryable):
            self.fail(
                where,
                f"{_short(v)} is a live queryable (state: answers, budget spent), not a "
                "constructor call; store the measurement that made it instead",
            )
        if isinstance(v, np.random.Generator):
            self.fail(
                where,
                "a numpy random Generator cannot be stored (its state is not a constructor "
                "argument); pass drop_rng=True to store None instead",
            )
        if type(v).__name__ in ("MemoryLedger", "SQLiteLedger"):
            self.fail(
                where,
                f"a ledger ({type(v).__name__}) is where a budget's spending lives, not a "
                "constructor argument that can be stored; store the filter or odometer with "
                "ledger=None",
            )
        if callable(v):
            entry = _function_names.get(id(v))
            if entry is not None and entry[1] is v:
                return {"function": entry[0]}
            self.fail(
                where,
                f"the function {_short(v)} is not registered: a file stores names, never code. "
                "Register it under the same name where you write and where you load: "
                "dp.register_function('my_name', function)",
            )
        raise SerializationError(
            f"{where}: a value of type {type(v).__name__} ({_short(v)}) cannot be stored"
        )

    def instance(self, v: Any, where: str) -> Any:
        name = _public_name(type(v))
        if name is None:
            self.fail(where, f"{_short(v)} is not an instance of a public library class")
        kwargs: dict[str, Any] = {}
        # the constructor's own parameters, read back from the attributes of the same name (a subclass
        # such as NormBallDomain may take fewer or other parameters than the fields it inherits)
        for param in list(inspect.signature(type(v)).parameters.values()):
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                self.fail(where, f"{type(v).__name__} takes *args/**kwargs and cannot be stored")
            if not hasattr(v, param.name):
                self.fail(where, f"{type(v).__name__} does not keep its argument {param.name!r}")
            kwargs[param.name] = self.value(getattr(v, param.name), f"{where}.{param.name}")
        return {"call": name, "args": [], "kwargs": kwargs}

    def record(
        self, v: Transformation[Any, Any, Any, Any] | Measurement[Any, Any, Any, Any], where: str
    ) -> Any:
        recipe = v.recipe
        if isinstance(recipe, Chain):
            return {
                "chain": [
                    self.value(recipe.left, f"{where}.chain[0]"),
                    self.value(recipe.right, f"{where}.chain[1]"),
                ]
            }
        if not isinstance(recipe, Call):
            self.fail(
                where,
                f"{_short(v)} was not built by a public library constructor, so there is no call to store",
            )
        name = _public_name(recipe.function)
        if name is None:
            self.fail(
                where,
                f"{_short(v)} was built by {recipe.function.__qualname__}, which is not "
                "listed in a public __all__ of dpcompose",
            )
        short = name.rsplit(".", 1)[1]
        if recipe.problem:
            self.fail(where, f"{short}: {recipe.problem}")
        params = [
            p.name
            for p in inspect.signature(recipe.function).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        args = []
        for i, a in enumerate(recipe.arguments):
            label = params[i] if i < len(params) else f"*args[{i - len(params)}]"
            args.append(self.argument(a, label, f"{where}: argument {label!r} of {short}"))
        kwargs = {
            k: self.argument(a, k, f"{where}: argument {k!r} of {short}") for k, a in recipe.keywords.items()
        }
        return {"call": name, "args": args, "kwargs": kwargs}

    def argument(self, a: Any, name: str, where: str) -> Any:
        if name == "rng" and a is not None:
            if self.drop_rng:
                return None
            self.fail(
                where,
                f"rng={_short(a)} cannot be stored (a random source is state, not a "
                "parameter); pass drop_rng=True to store None, so that the loaded mechanism uses the "
                "default secure source",
            )
        return self.value(a, where)


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
    _library_constructors()  # imports every library package, so that each registered its stored kinds
    raw = doc["root"]
    kind = _kinds.get(next(iter(raw))) if isinstance(raw, dict) and len(raw) == 1 else None
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
        root = _Reader().value(raw, "root")
    except RecursionError:
        raise SerializationError("the file is nested too deeply") from None
    if not isinstance(root, (Domain, Metric, Measure, Transformation, Measurement)):
        raise SerializationError(
            f"root: {_short(root)} is not a domain, metric, measure, transformation or measurement"
        )
    return root


def _read_kind(kind: StoredKind, body: Any, data: Any, ledger: Any) -> Any:
    where = f"root.{kind.tag}"
    if not isinstance(body, dict) or set(body) != set(kind.fields):
        raise SerializationError(f"{where}: must be an object with the keys {', '.join(kind.fields)}")
    if data is None:
        raise InvalidParameter(
            f"data=None: the file stores a {kind.tag.replace('_', ' ')} (its plan, never its data): pass "
            "the frame it runs on, dp.from_json(text, data=frame)"
        )
    reader = _Reader()
    fields = {f: reader.value(body[f], f"{where}.{f}") for f in kind.fields}
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
    tag = next((t for t in _TAGS if t in v), None)
    name = v.get("call")
    if tag == "call" and isinstance(name, str):
        here, short = f"{where}.call", name.rsplit(".", 1)[-1]
        kind = _USER_KINDS.get(_library_constructors().get(name))
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


_TAGS: dict[str, frozenset[str]] = {
    "float": frozenset({"float"}),
    "fraction": frozenset({"fraction"}),
    "decimal": frozenset({"decimal"}),
    "tuple": frozenset({"tuple"}),
    "dict": frozenset({"dict"}),
    "frozenset": frozenset({"frozenset"}),
    "bytes": frozenset({"bytes"}),
    "numpy": frozenset({"numpy", "value"}),
    "ndarray": frozenset({"ndarray", "shape", "data"}),
    "type": frozenset({"type"}),
    "function": frozenset({"function"}),
    "call": frozenset({"call", "args", "kwargs"}),
    "chain": frozenset({"chain"}),
}


class _Reader:
    def fail(self, where: str, why: str) -> NoReturn:
        raise SerializationError(f"{where}: {why}")

    def string(self, v: Any, where: str) -> str:
        if not isinstance(v, str):
            self.fail(where, f"{_short(v)} must be a string")
        return v

    def items(self, v: Any, where: str) -> list[Any]:
        if not isinstance(v, list):
            self.fail(where, f"{_short(v)} must be a list")
        return v

    def value(self, v: Any, where: str) -> Any:
        if v is None or isinstance(v, (bool, str)) or type(v) is int:
            return v
        if isinstance(v, list):
            return [self.value(x, f"{where}[{i}]") for i, x in enumerate(v)]
        if isinstance(v, float):
            self.fail(where, f'the bare number {v!r}: floats are stored exactly, as {{"float": "<hex>"}}')
        if not isinstance(v, dict):  # pragma: no cover - json.loads makes nothing else
            self.fail(where, f"{_short(v)} is not a stored value")
        tag = next((t for t in _TAGS if t in v), None)
        if tag is None or set(v) != _TAGS[tag]:
            shapes = "; ".join(sorted("{" + ", ".join(sorted(k)) + "}" for k in _TAGS.values()))
            self.fail(
                where, f"{_short(v)} is not a stored value: an object must have one of the shapes {shapes}"
            )
        return getattr(self, f"tag_{tag}")(v, f"{where}.{tag}")

    def tag_float(self, v: dict[str, Any], where: str) -> float:
        try:
            return float.fromhex(self.string(v["float"], where))
        except (ValueError, OverflowError):
            self.fail(where, f"{_short(v['float'])} is not a float in hex form (float.hex)")

    def tag_fraction(self, v: dict[str, Any], where: str) -> Fraction:
        s = self.string(v["fraction"], where)
        if _FRACTION.fullmatch(s) is None:
            self.fail(where, f"{_short(s)} must be 'p/q'")
        p, q = s.split("/")
        try:
            num, den = int(p), int(q)
        except ValueError as exc:
            self.fail(where, f"{_short(s)}: {exc}")
        if den == 0:
            self.fail(where, f"{_short(s)} has a zero denominator")
        return Fraction(num, den)

    def tag_decimal(self, v: dict[str, Any], where: str) -> Decimal:
        try:
            return Decimal(self.string(v["decimal"], where))
        except (InvalidOperation, ValueError):
            self.fail(where, f"{_short(v['decimal'])} is not a decimal number")

    def tag_tuple(self, v: dict[str, Any], where: str) -> tuple[Any, ...]:
        return tuple(self.value(x, f"{where}[{i}]") for i, x in enumerate(self.items(v["tuple"], where)))

    def tag_dict(self, v: dict[str, Any], where: str) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for i, pair in enumerate(self.items(v["dict"], where)):
            if not isinstance(pair, list) or len(pair) != 2:
                self.fail(f"{where}[{i}]", f"{_short(pair)} must be a [key, value] pair")
            key = self.value(pair[0], f"{where}[{i}] key")
            value = self.value(pair[1], f"{where}[{i}] value")
            try:
                out[key] = value
            except TypeError:
                self.fail(f"{where}[{i}]", f"the key {_short(key)} is not hashable")
        return out

    def tag_frozenset(self, v: dict[str, Any], where: str) -> frozenset[Any]:
        parts = [self.value(x, f"{where}[{i}]") for i, x in enumerate(self.items(v["frozenset"], where))]
        try:
            return frozenset(parts)
        except TypeError:
            self.fail(where, "an element is not hashable")

    def tag_bytes(self, v: dict[str, Any], where: str) -> bytes:
        try:
            return bytes.fromhex(self.string(v["bytes"], where))
        except ValueError:
            self.fail(where, f"{_short(v['bytes'])} is not hexadecimal")

    def dtype(self, v: Any, where: str) -> Any:
        if v not in _NUMPY_DTYPES:
            self.fail(
                where,
                f"{_short(v)} is not a numpy dtype that can be stored ({', '.join(sorted(_NUMPY_DTYPES))})",
            )
        return np.dtype(v)

    def tag_numpy(self, v: dict[str, Any], where: str) -> Any:
        dtype = self.dtype(v["numpy"], where)
        item = self.value(v["value"], f"{where}.value")
        if not isinstance(item, (bool, int, float)):
            self.fail(where, f"{_short(item)} is not a number")
        try:
            out = dtype.type(item)
        except (OverflowError, ValueError, TypeError):
            self.fail(where, f"{_short(item)} does not fit {dtype.name}")
        if out.item() != item and item == item:
            self.fail(where, f"{_short(item)} is not exactly a {dtype.name}")
        return out

    def tag_ndarray(self, v: dict[str, Any], where: str) -> Any:
        dtype = self.dtype(v["ndarray"], where)
        shape = self.items(v["shape"], f"{where}.shape")
        if not all(type(s) is int and s >= 0 for s in shape):
            self.fail(where, f"shape={_short(shape)} must be non-negative integers")
        data = self.value(v["data"], f"{where}.data")
        try:
            out = np.array(data, dtype=dtype).reshape(shape)
        except (OverflowError, ValueError, TypeError) as exc:
            self.fail(where, f"the data do not form a {dtype.name} array of shape {shape}: {exc}")
        if out.tolist() != data and bool(np.all(out == out)):
            self.fail(where, f"the data are not exactly {dtype.name} values")
        return out

    def tag_type(self, v: dict[str, Any], where: str) -> type:
        name = v["type"]
        if not isinstance(name, str) or name not in _CARRIERS:
            self.fail(where, f"{_short(name)} is not a type that can be stored ({', '.join(_CARRIERS)})")
        return _CARRIERS[name]

    def tag_function(self, v: dict[str, Any], where: str) -> Callable[..., Any]:
        name = self.string(v["function"], where)
        with _lock:
            function = _functions.get(name)
        if function is None:
            self.fail(
                where,
                f"the function {name!r} is not registered in this process: register the same "
                f"function before loading, with dp.register_function({name!r}, function)",
            )
        return function

    def tag_call(self, v: dict[str, Any], where: str) -> Any:
        name = self.string(v["call"], where)
        constructor = _library_constructors().get(name)
        if constructor is None:
            self.fail(
                where,
                f"{_short(name)} is not a public dpcompose constructor (made by another "
                "version, or the file was edited)",
            )
        short = name.rsplit(".", 1)[1]
        raw_kwargs = v["kwargs"]
        if not isinstance(raw_kwargs, dict):
            self.fail(f"{where}.kwargs", f"{_short(raw_kwargs)} must be an object")
        args = [
            self.value(a, f"{where}: {short} args[{i}]") for i, a in enumerate(self.items(v["args"], where))
        ]
        kwargs = {k: self.value(a, f"{where}: {short} argument {k!r}") for k, a in raw_kwargs.items()}
        try:
            inspect.signature(constructor).bind(*args, **kwargs)
        except TypeError as exc:
            self.fail(where, f"the stored arguments do not fit {short}: {exc}")
        try:
            return constructor(*args, **kwargs)
        except DPError as exc:
            raise SerializationError(f"{where}: {short} refused the stored arguments: {exc}") from exc
        except Exception as exc:
            raise SerializationError(
                f"{where}: {short} failed on the stored arguments ({type(exc).__name__}: {exc})"
            ) from exc

    def tag_chain(self, v: dict[str, Any], where: str) -> Any:
        parts = self.items(v["chain"], where)
        if len(parts) != 2:
            self.fail(where, "a chain must have two parts [left, right]")
        left = self.value(parts[0], f"{where}[0]")
        right = self.value(parts[1], f"{where}[1]")
        if not isinstance(left, Transformation) or not isinstance(right, (Transformation, Measurement)):
            self.fail(
                where,
                f"cannot chain {_short(left)} >> {_short(right)}: the left side must be a "
                "transformation, the right side a transformation or measurement",
            )
        try:
            return left >> right
        except DPError as exc:
            raise SerializationError(f"{where}: {exc}") from exc
