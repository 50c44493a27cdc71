"""A small engine-neutral expression language for filters and derived columns: ``col``, comparisons, ``&``,
``|``, ``~``, ``is_in``, ``is_null``, and ``+``, ``-``, ``*`` on numbers. Expressions are plain trees,
checked against the schema when a query is built (unknown column, comparing a string with a number, a
non-boolean filter) and translated to each engine.

Semantics (the same in every engine): a comparison involving null is null, and a filter drops rows whose
predicate is null; ``is_in`` is false for null; NaN compares as Polars does (NaN equals NaN and is
greater than every other float). Arithmetic is on floats: operands are converted to IEEE doubles first
(round to nearest), so every engine computes the same bits and never overflows or raises (a double
operation gives ±inf or NaN instead); null propagates. Division is not offered: engines disagree on x/0
(``/``, ``//``, ``%``, ``**`` and unary ``-``, ``+``, ``abs`` raise :class:`~dpcompose.DomainMismatch`
saying what to write instead).

Examples:
    >>> import dpcompose as dp
    >>> e = (dp.col("age") >= 18) & dp.col("state").is_in(["CA", "NY"])
    >>> e
    Expr((col('age') >= 18) & col('state').is_in(['CA', 'NY']))
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np

from dpcompose.errors import DomainMismatch, InvalidParameter

__all__ = ["ARITH", "Expr", "col", "literal_kind"]

_CMP = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
ARITH = ("+", "-", "*")
_OUTSIDE = "compute it in the data before it reaches dp.Context"
_DIVIDE = (
    "engines disagree on division by zero (inf, NaN or null). Multiply by the reciprocal for a constant "
    "divisor (dp.col('x') * 0.5), or release both aggregates and divide the noisy results "
    "(post-processing), or " + _OUTSIDE
)
_INSTEAD = {  # the operators Expr refuses, and what to write instead
    "/": _DIVIDE,
    "//": _DIVIDE,
    "%": _DIVIDE,
    "divmod": _DIVIDE,
    "**": "write a square as dp.col('x') * dp.col('x'), or " + _OUTSIDE,
    "unary -": "write 0 - dp.col('x') (or -1 * dp.col('x'))",
    "unary +": "write the expression without it",
    "abs()": "the arithmetic offered is +, - and *; " + _OUTSIDE,
}


def literal_kind(v: object, name: str) -> str:
    """The kind of a literal (``int``, ``float``, ``str``, ``bool``); InvalidParameter otherwise."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        if not -(1 << 63) <= v < 1 << 63:
            raise InvalidParameter(f"{name}={v!r} must fit int64")
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "str"
    raise InvalidParameter(f"{name}={v!r} must be an int, float, str or bool literal")


def _plain(v: object) -> Any:
    return v.item() if isinstance(v, np.generic) else v


@dataclass(frozen=True, eq=False)
class Expr:
    """A node of an expression tree. Build with :func:`col` and operators, not directly.

    ``op`` is ``"col"``, ``"lit"``, a comparison (``"=="`` …), ``"and"``, ``"or"``, ``"not"``, ``"is_in"``
    or ``"is_null"``; ``args`` its operands (Exprs or, for ``col``/``lit``/``is_in``, plain values).
    """

    op: str
    args: tuple[Any, ...]

    def _cmp(self, op: str, other: object) -> Expr:
        right = other if isinstance(other, Expr) else Expr("lit", (_plain(other),))
        if right.op == "lit":
            literal_kind(right.args[0], f"the right side of {op}")
        return Expr(op, (self, right))

    def __eq__(self, other: object) -> Expr:  # type: ignore[override]
        return self._cmp("==", other)

    def __ne__(self, other: object) -> Expr:  # type: ignore[override]
        return self._cmp("!=", other)

    def __lt__(self, other: object) -> Expr:
        return self._cmp("<", other)

    def __le__(self, other: object) -> Expr:
        return self._cmp("<=", other)

    def __gt__(self, other: object) -> Expr:
        return self._cmp(">", other)

    def __ge__(self, other: object) -> Expr:
        return self._cmp(">=", other)

    def _arith(self, op: str, other: object, reverse: bool = False) -> Expr:
        right = other if isinstance(other, Expr) else Expr("lit", (_plain(other),))
        if right.op == "lit":
            v = right.args[0]
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise InvalidParameter(f"{op} needs a number or an expression, not {other!r}")
            literal_kind(v, f"the operand of {op}")
        return Expr(op, (right, self) if reverse else (self, right))

    def __add__(self, other: object) -> Expr:
        return self._arith("+", other)

    def __radd__(self, other: object) -> Expr:
        return self._arith("+", other, reverse=True)

    def __sub__(self, other: object) -> Expr:
        return self._arith("-", other)

    def __rsub__(self, other: object) -> Expr:
        return self._arith("-", other, reverse=True)

    def __mul__(self, other: object) -> Expr:
        return self._arith("*", other)

    def __rmul__(self, other: object) -> Expr:
        return self._arith("*", other, reverse=True)

    def _not_offered(self, op: str) -> NoReturn:
        raise DomainMismatch(f"{op} is not offered on table expressions: {_INSTEAD[op]}")

    def __truediv__(self, other: object) -> NoReturn:
        self._not_offered("/")

    def __rtruediv__(self, other: object) -> NoReturn:
        self._not_offered("/")

    def __floordiv__(self, other: object) -> NoReturn:
        self._not_offered("//")

    def __rfloordiv__(self, other: object) -> NoReturn:
        self._not_offered("//")

    def __mod__(self, other: object) -> NoReturn:
        self._not_offered("%")

    def __rmod__(self, other: object) -> NoReturn:
        self._not_offered("%")

    def __divmod__(self, other: object) -> NoReturn:
        self._not_offered("divmod")

    def __rdivmod__(self, other: object) -> NoReturn:
        self._not_offered("divmod")

    def __pow__(self, other: object, modulo: object = None) -> NoReturn:
        self._not_offered("**")

    def __rpow__(self, other: object) -> NoReturn:
        self._not_offered("**")

    def __neg__(self) -> NoReturn:
        self._not_offered("unary -")

    def __pos__(self) -> NoReturn:
        self._not_offered("unary +")

    def __abs__(self) -> NoReturn:
        self._not_offered("abs()")

    def __and__(self, other: object) -> Expr:
        if not isinstance(other, Expr):
            raise InvalidParameter(f"& needs two expressions, not {other!r}")
        return Expr("and", (self, other))

    def __or__(self, other: object) -> Expr:
        if not isinstance(other, Expr):
            raise InvalidParameter(f"| needs two expressions, not {other!r}")
        return Expr("or", (self, other))

    def __invert__(self) -> Expr:
        return Expr("not", (self,))

    def __bool__(self) -> bool:
        raise InvalidParameter("an expression has no truth value: combine with &, |, ~ instead of and/or/not")

    __hash__ = None  # type: ignore[assignment]

    def is_in(self, values: Iterable[Any]) -> Expr:
        """Whether the value is one of ``values`` (a list of literals of one kind)."""
        if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            raise InvalidParameter(f"values={values!r} must be a list of literals")
        vals = tuple(_plain(v) for v in values)
        for v in vals:
            literal_kind(v, "values")
        return Expr("is_in", (self, vals))

    def is_null(self) -> Expr:
        """Whether the value is null (missing)."""
        return Expr("is_null", (self,))

    def __repr__(self) -> str:
        return f"Expr({_text(self)})"


def col(name: str) -> Expr:
    """A column of the table, by name (checked against the schema when the query is built).

    Examples:
        >>> col("age") < 30
        Expr(col('age') < 30)
    """
    if not isinstance(name, str) or not name:
        raise InvalidParameter(f"name={name!r} must be a non-empty column name")
    return Expr("col", (name,))


def _text(e: Expr) -> str:
    if e.op == "col":
        return f"col({e.args[0]!r})"
    if e.op == "lit":
        return repr(e.args[0])
    if e.op in _CMP or e.op in ARITH:
        return f"{_wrap(e.args[0])} {e.op} {_wrap(e.args[1])}"
    if e.op in ("and", "or"):
        sym = "&" if e.op == "and" else "|"
        return f"{_wrap(e.args[0])} {sym} {_wrap(e.args[1])}"
    if e.op == "not":
        return f"~{_wrap(e.args[0])}"
    if e.op == "is_in":
        return f"{_wrap(e.args[0])}.is_in({list(e.args[1])!r})"
    return f"{_wrap(e.args[0])}.is_null()"


def _wrap(e: Expr) -> str:
    t = _text(e)
    return f"({t})" if e.op in (*_CMP, *ARITH, "and", "or") else t


def check(e: object, kinds: dict[str, str], what: str = "predicate") -> str:
    """The kind of ``e`` under the schema ``kinds`` (column -> kind); InvalidParameter naming ``what``
    for an unknown column, mismatched kinds, or a non-boolean operand of &, |, ~."""
    if not isinstance(e, Expr):
        raise InvalidParameter(f"{what}={e!r} must be an expression built with dp.col(...)")
    if e.op == "col":
        name = e.args[0]
        if name not in kinds:
            raise InvalidParameter(
                f"{what}: column {name!r} is not in the schema (declared: {', '.join(kinds)})"
            )
        return kinds[name]
    if e.op == "lit":
        return literal_kind(e.args[0], what)
    if e.op in _CMP:
        a, b = check(e.args[0], kinds, what), check(e.args[1], kinds, what)
        numeric = {"int", "float"}
        if not (a == b or (a in numeric and b in numeric)):
            raise InvalidParameter(f"{what}: {_text(e)} compares a {a} with a {b}")
        if e.args[1].op == "lit" and isinstance(e.args[1].args[0], float) and math.isnan(e.args[1].args[0]):
            raise InvalidParameter(f"{what}: {_text(e)} compares with NaN; use a bound or is_null()")
        return "bool"
    if e.op in ARITH:
        for part in e.args:
            k = check(part, kinds, what)
            if k not in ("int", "float"):
                raise InvalidParameter(f"{what}: {_text(e)} needs numbers, not a {k}")
        return "float"
    if e.op in ("and", "or", "not"):
        for part in e.args:
            k = check(part, kinds, what)
            if k != "bool":
                raise InvalidParameter(f"{what}: {_text(e)} needs boolean operands, not a {k}")
        return "bool"
    if e.op == "is_in":
        k = check(e.args[0], kinds, what)
        for v in e.args[1]:
            lk = literal_kind(v, what)
            if lk != k:  # engines disagree on mixed int/float membership (Polars raises, Spark casts)
                mixed = {lk, k} == {"int", "float"}
                hint = " (write 2.0 for a float column, 2 for an int one)" if mixed else ""
                raise InvalidParameter(f"{what}: {_text(e)} holds a {lk} for a {k} expression{hint}")
        return "bool"
    check(e.args[0], kinds, what)
    return "bool"


def columns_of(e: Expr | None) -> set[str]:
    """The column names an expression reads."""
    if e is None:
        return set()
    if e.op == "col":
        return {e.args[0]}
    out: set[str] = set()
    for part in e.args:
        if isinstance(part, Expr):
            out |= columns_of(part)
    return out
