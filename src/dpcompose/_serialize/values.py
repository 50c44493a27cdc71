"""The values of a dpcompose file, both ways (the package's ``to_json`` and ``from_json`` read and write
the file around them).

The value tags (``{"float": "0x1.8p+0"}``, ``{"call": ..., "args": [...], "kwargs": {...}}``, …; listed in
:data:`TAGS`), the registries a file's names are looked up in (user functions: :func:`register_function`;
the library's constructors: :func:`library_constructors`; stored kinds: :func:`register_stored_kind`), the
:class:`Writer` that turns a library object into tagged JSON values and the :class:`Reader` that rebuilds
it by calling only registered functions and public library constructors.
"""

from __future__ import annotations

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
from dpcompose.core._domains import Domain
from dpcompose.core._measurement import Measurement, Transformation
from dpcompose.core._measures import Measure
from dpcompose.core._metrics import Metric
from dpcompose.core._queryable import Queryable
from dpcompose.core._recipe import RECORDED, Call, Chain
from dpcompose.errors import DPError, InvalidParameter, SerializationError

__all__ = [
    "STORED_KINDS", "TAGS", "Reader", "StoredKind", "Writer", "library_constructors", "register_function",
    "register_stored_kind",
]  # fmt: skip

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

#: Each value tag, with the keys of an object so tagged (a stored kind may not take a value tag).
TAGS: dict[str, frozenset[str]] = {
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
    ``{tag: {field: value, ...}}`` with exactly ``fields``, but for the ``optional`` ones among them: such a
    field is written only when its value is not None, and a file without it is read with None (so files
    written before the field existed still load).
    """

    tag: str
    cls: type
    fields: tuple[str, ...]
    write: Callable[[Any], dict[str, Any]]
    read: Callable[[dict[str, Any], Any, Any], Any]
    optional: tuple[str, ...] = ()


#: The registered stored kinds by tag (written by :func:`register_stored_kind` only).
STORED_KINDS: dict[str, StoredKind] = {}


def register_stored_kind(kind: StoredKind) -> None:
    """Let :func:`to_json` / :func:`from_json` store objects of ``kind.cls`` under ``kind.tag``.

    Called by the library's own packages when they are imported (the table queries and Contexts of
    :mod:`dpcompose.tables`); a file cannot add a kind.

    Raises:
        InvalidParameter: the tag is a value tag or is already taken by another class.
    """
    if kind.tag in TAGS:
        raise InvalidParameter(f"tag={kind.tag!r} is a value tag")
    with _lock:
        current = STORED_KINDS.get(kind.tag)
        if current is not None and current.cls is not kind.cls:
            raise InvalidParameter(f"tag={kind.tag!r} is already registered for {current.cls.__name__}")
        STORED_KINDS[kind.tag] = kind


def library_constructors() -> dict[str, Callable[..., Any]]:
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
    if package in ("accounting", "tables", "combinators") and dataclasses.is_dataclass(obj):
        return True  # parameter records (RenyiCurve, a table's Column, a selection's law of runs)
    if package == "accounting":
        return False
    return issubclass(obj, (Domain, Metric, Measure)) and obj not in (Domain, Metric, Measure)


def _public_name(obj: object) -> str | None:
    library_constructors()
    return _constructor_names.get(id(obj))


# ---------------------------------------------------------------------------------------------------------
# Writing values


class Writer:
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
# Reading values


class Reader:
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
        tag = next((t for t in TAGS if t in v), None)
        if tag is None or set(v) != TAGS[tag]:
            shapes = "; ".join(sorted("{" + ", ".join(sorted(k)) + "}" for k in TAGS.values()))
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
        constructor = library_constructors().get(name)
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
