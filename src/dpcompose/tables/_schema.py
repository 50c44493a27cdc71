"""Schema-only domains for tables: :class:`Column` and :class:`FrameDomain` (whose identifier column
``dp.SymmetricIdDistance`` checks through :meth:`FrameDomain.check_identifier`).

A :class:`FrameDomain` is a :class:`~dpcompose.VectorDomain` of rows (a table is a multiset of rows), so
``SymmetricDistance`` (add/remove rows) measures it. Membership checks only the schema — column names and
types — from the engine's metadata: it never scans rows, because a scan is a full engine job whose time
depends on the data. What rows may hold beyond their types (values outside the declared bounds, nulls,
NaN) is handled by one policy inside every aggregate (see :class:`Column`), so every frame with the right
schema is in the domain and no aggregate raises on it.

Examples:
    >>> import dpcompose as dp
    >>> d = dp.FrameDomain({"age": dp.Column(int, bounds=(0, 120)), "state": dp.Column(str)})
    >>> d
    FrameDomain({'age': Column(int, bounds=(0, 120)), 'state': Column(str)})
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose.core import AtomDomain, Domain, TableDomain
from dpcompose.errors import DomainMismatch, InvalidParameter
from dpcompose.tables._engines import engine_for
from dpcompose.transformations._expr import check_utf8

__all__ = ["Column", "FrameDomain", "RowDomain"]

_DTYPES: dict[type, str] = {int: "int", float: "float", str: "str", bool: "bool", datetime.date: "date"}


def _finite_number(v: object, name: str, integer: bool) -> int | float:
    """A bound or fill: a finite real (an int for int columns), as a plain Python number."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, bool) or not isinstance(v, (int, float, Fraction)):
        raise InvalidParameter(f"{name}={v!r} must be a finite number")
    if isinstance(v, float) and not math.isfinite(v):
        raise InvalidParameter(f"{name}={v!r} must be a finite number")
    if integer:
        if v != int(v) or abs(int(v)) >= 1 << 62:
            raise InvalidParameter(f"{name}={v!r} must be an integer with |value| < 2**62 (an int column)")
        return int(v)
    try:
        f = float(v)
    except OverflowError:
        raise InvalidParameter(f"{name}={v!r} must be a finite number within the float range") from None
    if not math.isfinite(f) or Fraction(f) != Fraction(v):
        raise InvalidParameter(f"{name}={v!r} must be exactly a finite float64 (a float column)")
    return f


@dataclass(frozen=True, slots=True, repr=False)
class Column:
    """One column of a table's schema.

    Args:
        dtype: ``int``, ``float``, ``str``, ``bool`` or ``datetime.date``. Engine types map to these: signed
            integers and ``UInt8``–``UInt32`` are ``int``; ``Float32``/``Float64`` are ``float``; ``String``
            is ``str``; ``Boolean`` is ``bool``; Polars ``Date`` and Spark ``DateType`` are ``date`` (read
            by expressions only, through their date parts: not a key or an aggregate).
        bounds: ``(lo, hi)`` for numeric columns: the clamp every sum and mean applies (values are never
            refused, only clamped). Needed to sum the column (an aggregate may also state its own bounds).
        nullable: whether the column may hold nulls. A nullable numeric column must declare ``fill`` to be
            summed; the policy is applied to every frame whatever this flag says (it is not checked
            against the rows, which would mean scanning them).
        fill: the value that stands in for a null — and, in float columns, for NaN — in sums and means,
            before clamping. Default: the clamp of 0 into ``bounds``. Such rows still count in ``count``.

    The NaN/null policy (the same in every engine): ``count`` counts rows whatever their values; ``sum``
    and ``mean`` read a null or NaN as ``fill``, then clamp to ``bounds``; infinities clamp to the nearer
    bound.

    Raises:
        InvalidParameter: an unknown dtype, bounds that are not finite numbers ``lo <= hi`` (integers for an
            int column, exact floats for a float column), bounds on a ``str``/``bool`` column, a ``fill``
            that is not a finite number, or ``nullable`` not a bool.

    Examples:
        >>> Column(float, bounds=(0.0, 1e5), nullable=True, fill=0.0)
        Column(float, bounds=(0.0, 100000.0), nullable=True, fill=0.0)
    """

    dtype: type
    bounds: tuple[Any, Any] | None = None
    nullable: bool = False
    fill: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.dtype, type) or self.dtype not in _DTYPES:
            raise InvalidParameter(
                f"dtype={self.dtype!r} must be one of int, float, str, bool, datetime.date"
            )
        if not isinstance(self.nullable, (bool, np.bool_)):
            raise InvalidParameter(f"nullable={self.nullable!r} must be a bool")
        object.__setattr__(self, "nullable", bool(self.nullable))
        numeric = self.dtype in (int, float)
        integer = self.dtype is int
        if self.bounds is not None:
            if not numeric:
                raise InvalidParameter(
                    f"bounds={self.bounds!r} need an int or float column, not {self.dtype}"
                )
            if not isinstance(self.bounds, (tuple, list)) or len(self.bounds) != 2:
                raise InvalidParameter(f"bounds={self.bounds!r} must be a pair (lo, hi)")
            lo = _finite_number(self.bounds[0], "bounds", integer)
            hi = _finite_number(self.bounds[1], "bounds", integer)
            if lo > hi:
                raise InvalidParameter(f"bounds={self.bounds!r} must satisfy lo <= hi")
            object.__setattr__(self, "bounds", (lo, hi))
        if self.fill is not None:
            if not numeric:
                raise InvalidParameter(
                    f"fill={self.fill!r} applies to int or float columns, not {self.dtype}"
                )
            object.__setattr__(self, "fill", _finite_number(self.fill, "fill", integer))

    @property
    def kind(self) -> str:
        """``"int"``, ``"float"``, ``"str"``, ``"bool"`` or ``"date"``."""
        return _DTYPES[self.dtype]

    def __repr__(self) -> str:
        parts = [self.dtype.__name__]
        if self.bounds is not None:
            parts.append(f"bounds={self.bounds!r}")
        if self.nullable:
            parts.append("nullable=True")
        if self.fill is not None:
            parts.append(f"fill={self.fill!r}")
        return f"Column({', '.join(parts)})"


RESERVED_PREFIX = "__dp"
"""Column names the engines use for their own working columns (row keys, partial sums): refused."""


def check_column_name(name: str, what: str, taken: Iterable[str] = ()) -> None:
    """Refuse a column name some engine would read as something else, before anything runs: one starting
    with ``__dp`` in any case (the engines' working columns), one holding ``.`` or a backtick (a struct
    path or a quote to Spark), ``*`` or ``^…$`` (a wildcard or a regular expression to Polars), or one
    equal ignoring case to a name in ``taken`` (Spark matches column names ignoring case: the other column
    would be replaced, or the reference be ambiguous), or one with no UTF-8 form (:func:`check_utf8`)."""
    check_utf8(name, what)
    if name.casefold().startswith(RESERVED_PREFIX):
        raise InvalidParameter(f"{what} {name!r} starts with {RESERVED_PREFIX!r}, which the engines reserve")
    if "." in name or "`" in name:
        raise InvalidParameter(f"{what} {name!r} must not contain '.' or '`' (Spark reads them as paths)")
    if name == "*" or (name.startswith("^") and name.endswith("$")):
        # Polars reads pl.col('^x$') as a pattern (an undeclared column x would be read), and a column '*'
        # would fail only after the charge
        raise InvalidParameter(
            f"{what} {name!r} is a wildcard or a regular expression to Polars (which would read other "
            "columns): rename it"
        )
    for other in taken:
        if other.casefold() == name.casefold():
            raise InvalidParameter(
                f"{what} {name!r} equals the column {other!r} ignoring case, which Spark does not tell apart"
            )


def _ambiguous(kinds: Mapping[str, str], columns: Iterable[tuple[str, Column]]) -> tuple[str, str] | None:
    """A data column other than a declared one that equals it ignoring case (from the schema only)."""
    declared = {name.casefold(): name for name, _ in columns}
    for name in kinds:
        other = declared.get(name.casefold())
        if other is not None and other != name:
            return other, name
    return None


def _check_schema(schema: object) -> tuple[tuple[str, Column], ...]:
    if not isinstance(schema, Mapping):
        raise InvalidParameter(f"schema={schema!r} must be a mapping of column name -> dp.Column")
    if len(schema) == 0:
        raise InvalidParameter("schema={} must declare at least one column")
    items: list[tuple[str, Column]] = []
    for name, column in schema.items():
        if not isinstance(name, str) or not name:
            raise InvalidParameter(f"schema: column name {name!r} must be a non-empty str")
        check_column_name(name, "schema: column name", (n for n, _ in items))
        if not isinstance(column, Column):
            raise InvalidParameter(f"schema[{name!r}]={column!r} must be a dp.Column")
        items.append((name, column))
    return tuple(items)


@dataclass(frozen=True, slots=True, repr=False)
class RowDomain(Domain):
    """One row of a table, as a mapping from column name to value: the element domain of a FrameDomain.

    A row is a member when it has every declared column with a value of the column's type (or None if
    the column is nullable); bounds are a clamp, not a membership condition.
    """

    columns: tuple[tuple[str, Column], ...]

    def member(self, value: object) -> bool:
        if not isinstance(value, Mapping):
            return False
        try:
            for name, col in self.columns:
                if name not in value:
                    return False
                v = value[name]
                if v is None:
                    if not col.nullable:
                        return False
                    continue
                if isinstance(v, np.generic):
                    v = v.item()
                ok = isinstance(v, col.dtype) and (col.dtype is bool or not isinstance(v, bool))
                if col.dtype is datetime.date:  # a datetime is a date subclass, not a date
                    ok = type(v) is datetime.date
                if col.dtype is float and isinstance(v, int) and not isinstance(v, bool):
                    ok = AtomDomain(float).member(v)
                if not ok:
                    return False
        except Exception:  # a mapping whose lookup fails is not a member
            return False
        return True

    def __repr__(self) -> str:
        return f"RowDomain({dict(self.columns)!r})"


class FrameDomain(TableDomain):
    """Tables (Polars DataFrame/LazyFrame, pandas DataFrame, Spark DataFrame) with the declared columns and
    types.

    Membership reads the engine's schema only: every declared column must be present with a matching
    type (extra columns are allowed and never read). It never scans rows. Being a VectorDomain of
    :class:`RowDomain` rows, a FrameDomain is measured by ``SymmetricDistance`` (rows added or removed) or,
    for a person-level unit, by the identifier metric ``dp.SymmetricIdDistance(id_column)``.

    Args:
        schema: a mapping column name -> :class:`Column`, in a fixed order (row keys hash the columns in
            this order).

    Raises:
        InvalidParameter: ``schema`` is not a non-empty mapping of names to Columns.

    Examples:
        >>> import dpcompose as dp
        >>> import polars as pl
        >>> d = dp.FrameDomain({"x": dp.Column(float, bounds=(0.0, 1.0))})
        >>> d.member(pl.DataFrame({"x": [0.5, 7.0]})), d.member(pl.DataFrame({"x": ["a"]}))
        (True, False)
    """

    __slots__ = ()

    def __init__(self, schema: Mapping[str, Column]) -> None:
        columns = _check_schema(schema)
        super().__init__(RowDomain(columns), None)

    @property
    def columns(self) -> tuple[tuple[str, Column], ...]:
        """The declared columns in order."""
        element = self.element_domain
        assert isinstance(element, RowDomain)
        return element.columns

    @property
    def schema(self) -> dict[str, Column]:
        """The declared columns as a dict."""
        return dict(self.columns)

    def column(self, name: object, what: str = "column") -> Column:
        """The declared column ``name``; :class:`InvalidParameter` naming ``what`` if it is not declared."""
        for n, c in self.columns:
            if n == name:
                return c
        raise InvalidParameter(
            f"{what}={name!r} is not a column of the schema "
            f"(declared: {', '.join(n for n, _ in self.columns)})"
        )

    def member(self, value: object) -> bool:
        engine = engine_for(value)
        if engine is None:
            return False
        try:
            kinds = engine.schema(value)
        except Exception:  # an engine that cannot report a schema: not a member
            return False
        return _ambiguous(kinds, self.columns) is None and all(
            kinds.get(name) == col.kind for name, col in self.columns
        )

    def check(self, value: object, what: str = "data") -> None:
        engine = engine_for(value)
        if engine is None:
            raise DomainMismatch(
                f"{what} is a {type(value).__name__}; a table must be a Polars DataFrame or LazyFrame, a "
                "pandas DataFrame (with polars and pyarrow installed) or a Spark DataFrame (pyspark)"
            )
        kinds = engine.schema(value)
        clash = _ambiguous(kinds, self.columns)
        if clash is not None:
            raise DomainMismatch(
                f"{what} has columns {clash[0]!r} and {clash[1]!r}, equal ignoring case: Spark cannot tell "
                "them apart; rename or drop one"
            )
        for name, col in self.columns:
            if name not in kinds:
                raise DomainMismatch(f"{what} has no column {name!r} declared in {self!r}")
            if kinds[name] != col.kind:
                raise DomainMismatch(
                    f"{what}: column {name!r} has type {kinds[name]}, but the schema declares {col.kind}"
                )

    def check_identifier(self, id_key: object, name: str = "input_domain") -> None:
        """Called by ``dp.SymmetricIdDistance(id_key)``: the identifier must be a declared column.

        Raises:
            DomainMismatch: ``id_key`` is not a column name of this schema.
        """
        if not isinstance(id_key, str) or id_key not in self.schema:
            raise DomainMismatch(
                f"SymmetricIdDistance({id_key!r}): the identifier column {id_key!r} is not declared in "
                f"{name}={self!r}"
            )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FrameDomain) and self.columns == other.columns

    def __hash__(self) -> int:
        return hash(("FrameDomain", self.columns))

    def __repr__(self) -> str:
        return f"FrameDomain({dict(self.columns)!r})"
