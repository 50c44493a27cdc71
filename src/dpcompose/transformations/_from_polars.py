"""Polars expressions in table queries: ``pl.col(...)``/``pl.lit(...)`` trees translated into the
engine-neutral plan (:mod:`dpcompose.transformations._expr`, the tree ``dp.col`` builds too), for the
subset whose meaning every engine computes bit for bit. Anything else is refused when the query is
built, naming the expression, before anything runs or is spent.

The tree is read from ``expr.meta.serialize(format="json")``. Offered:

* columns, literals (int, float, str, bool; null as a ``when`` branch), ``alias`` (the derived column's
  name in ``with_columns``);
* ``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=`` (strings too), ``&``, ``|``, ``~``/``not_()``, ``is_in``
  (a list of literals; null for a null value, as in Polars), ``is_null``, ``is_not_null``,
  ``is_between`` (as its two comparisons), ``fill_null(value)`` (nulls only, NaN stays, as in Polars);
* ``+``, ``-``, ``*``, ``/``, unary ``-``, ``abs``, ``clip`` (literal bounds), ``round()`` (to a whole
  number, half to even), ``cast`` to ``pl.Int64``, ``pl.Float64`` or ``pl.Boolean`` from int, float or
  bool;
* ``pl.when(...).then(...).otherwise(...)`` (one condition; no ``otherwise`` gives null);
* ``str.starts_with``, ``str.contains(..., literal=True)``, ``str.len_chars``;
* ``dt.year()``, ``dt.month()``, ``dt.day()``, ``dt.weekday()`` of a date column (no date literals);
* (aggregates, ``pl.len()``, ``pl.col(c).sum()`` …, are read by :mod:`dpcompose.tables._from_polars`).

The plan's meaning is stated in :mod:`dpcompose.transformations._expr`; where it differs from what
Polars itself would compute (arithmetic on doubles, ``x/0`` null instead of ±inf or NaN, a cast to int
null instead of raising, ``clip`` taking NaN to the upper bound), the plan's meaning is the one every engine
computes.
"""

from __future__ import annotations

import io
import json
from typing import Any

from dpcompose.errors import DomainMismatch
from dpcompose.transformations._expr import Expr

__all__ = ["from_polars", "from_tree", "is_polars_expr", "output_name", "polars_tree"]

_BINARY = {
    "Eq": "==", "NotEq": "!=", "Lt": "<", "LtEq": "<=", "Gt": ">", "GtEq": ">=",
    "And": "and", "Or": "or", "Plus": "+", "Minus": "-", "Multiply": "*", "TrueDivide": "/",
}  # fmt: skip
_CASTS = {"Int64": "int", "Float64": "float", "Boolean": "bool"}


def is_polars_expr(e: object) -> bool:
    """Whether ``e`` is a Polars expression (``when/then`` chains too), without importing Polars."""
    return type(e).__module__.startswith("polars.") and hasattr(e, "meta") and hasattr(e, "alias")


class _Refused(Exception):
    """A part of the tree outside the offered subset (its description)."""


def polars_tree(e: Any, what: str) -> Any:
    """The serialized (JSON) tree of the Polars expression ``e``; DomainMismatch naming ``what`` if Polars
    cannot serialize it."""
    try:
        return json.loads(e.meta.serialize(format="json"))
    except Exception:  # an expression Polars cannot serialize (a Python UDF) is outside the subset
        raise DomainMismatch(f"{what}: {e} cannot be read (it is not a plain Polars expression)") from None


def _refuse(what: str, e: Any, part: str) -> DomainMismatch:
    return DomainMismatch(
        f"{what}: {e} uses {part}, which is not offered on table expressions (engines would not compute "
        "the same bits); offered: comparisons, &, |, ~, is_in, is_null, + - * /, abs, clip, round(), "
        "cast between Int64/Float64/Boolean, when/then/otherwise, str.starts_with/contains/len_chars "
        "(see docs/tables.md); compute anything else in the data before it reaches dp.Context"
    )


def from_polars(e: object, what: str) -> object:
    """The engine-neutral tree of a Polars expression ``e`` (anything else is returned as it is, for the
    schema check to judge). Raises DomainMismatch naming ``what`` and the expression for a part outside the
    offered subset."""
    if not is_polars_expr(e):
        return e
    return from_tree(polars_tree(e, what), what, e)


def from_tree(tree: Any, what: str, e: object) -> Expr:
    """The engine-neutral tree of the serialized Polars tree ``tree`` (of the expression ``e``, named in
    errors); DomainMismatch naming ``what`` and ``e`` for a node outside the offered subset or of a form it
    does not read."""
    if isinstance(tree, dict) and "Alias" in tree:
        tree = tree["Alias"][0]
    try:
        return _node(tree)
    except _Refused as part:
        raise _refuse(what, e, str(part)) from None
    except (KeyError, TypeError, IndexError, ValueError, AttributeError, RecursionError):
        # a node of a shape this translator does not read (another Polars version's form, or a tree too
        # deep): refused as a whole rather than guessed at
        raise _refuse(what, e, "a form of expression this version of dpcompose cannot read") from None


def output_name(e: Any, what: str) -> str:
    """The name Polars gives the expression's result (its alias, else its first column)."""
    try:
        name = e.meta.output_name()
    except Exception:
        raise DomainMismatch(f"{what}: {e} has no output name; name it with .alias(...)") from None
    return str(name)


def _literal(node: Any) -> Any:
    """A literal's Python value (a list for a list or Series literal), read back by Polars itself."""
    body = node["Literal"]
    dyn = body.get("Dyn") if isinstance(body, dict) else None
    if isinstance(dyn, dict) and len(dyn) == 1 and set(dyn) <= {"Int", "Float"}:
        return next(iter(dyn.values()))
    import polars as pl  # optional dependency (polars): only reached with a Polars expression

    try:  # a literal Polars cannot read back alone (an object or nested value) is outside the subset
        expr = pl.Expr.deserialize(io.StringIO(json.dumps(node)), format="json")
        series = pl.select(expr).to_series()
    except Exception:
        raise _Refused("a literal of a type the plan does not hold") from None
    if isinstance(series.dtype, pl.List):
        return series.to_list()[0]
    if isinstance(body, dict) and "Series" in body:
        return series.to_list()
    if len(series) != 1:
        raise _Refused(f"the literal {series.to_list()!r}")
    value = series.to_list()[0]
    if value is not None and not isinstance(value, (bool, int, float, str)):
        raise _Refused(f"a {series.dtype} literal")
    return value


def _lit_value(node: Any, part: str) -> Any:
    if not (isinstance(node, dict) and "Literal" in node):
        raise _Refused(f"{part} that is not a literal")
    return _literal(node)


def _node(node: Any) -> Expr:
    if not isinstance(node, dict) or len(node) != 1:
        raise _Refused(repr(node) if not isinstance(node, str) else node)
    ((kind, body),) = node.items()
    if kind == "Column" and isinstance(body, str):
        return Expr("col", (body,))
    if kind == "Literal":
        value = _literal(node)
        if isinstance(value, list):
            raise _Refused("a list literal outside is_in")
        return Expr("lit", (value,))
    if kind == "BinaryExpr":
        op = _BINARY.get(body["op"])
        if op is None:
            raise _Refused(f"the operator {body['op']}")
        return Expr(op, (_node(body["left"]), _node(body["right"])))
    if kind == "Cast":
        dtype = body["dtype"]
        to = _CASTS.get(str(dtype.get("Literal") if isinstance(dtype, dict) else dtype))
        if to is None:
            raise _Refused(f"a cast to {dtype}")
        return Expr("cast", (_node(body["expr"]), to))
    if kind == "Ternary":
        return Expr("when", (_node(body["predicate"]), _node(body["truthy"]), _node(body["falsy"])))
    if kind == "Function":
        return _function(body["function"], body["input"])
    raise _Refused(f"{kind}")


def _options(fn: Any, name: str) -> Any:
    """The options of a function node (``{}`` when it is written as a bare name)."""
    return fn.get(name) or {} if isinstance(fn, dict) else {}


_DATE_PARTS = {"Year": "year", "Month": "month", "Day": "day", "WeekDay": "weekday"}
_BETWEEN = {"Both": (">=", "<="), "Left": (">=", "<"), "Right": (">", "<="), "None": (">", "<")}


def _function(fn: Any, inputs: list[Any]) -> Expr:
    name = fn if isinstance(fn, str) else next(iter(fn)) if isinstance(fn, dict) and len(fn) == 1 else None
    if name == "FillNull" and len(inputs) == 2:  # nulls only (NaN stays), as Polars
        x = _node(inputs[0])
        return Expr("when", (Expr("is_null", (x,)), _node(inputs[1]), x))
    if name == "Negate":
        return Expr("neg", (_node(inputs[0]),))
    if name == "Abs":
        return Expr("abs", (_node(inputs[0]),))
    if name == "Round":
        opts = _options(fn, "Round")
        if opts.get("decimals") != 0 or opts.get("mode") != "HalfToEven":
            raise _Refused(f"round with {opts} (offered: round() to a whole number, half to even)")
        return Expr("round", (_node(inputs[0]),))
    if name == "Clip":
        return _clip(_options(fn, "Clip"), inputs)
    if name == "Boolean":
        inner = fn["Boolean"]
        sub = inner if isinstance(inner, str) else next(iter(inner))
        x = _node(inputs[0])
        if sub == "Not":
            return Expr("not", (x,))
        if sub == "IsNull":
            return Expr("is_null", (x,))
        if sub == "IsNotNull":
            return Expr("not", (Expr("is_null", (x,)),))
        if sub == "IsBetween":
            closed = str(_options(inner, "IsBetween").get("closed"))
            if closed not in _BETWEEN:
                raise _Refused(f"is_between with closed={closed}")
            low, high = _BETWEEN[closed]
            lo, hi = (Expr(low, (x, _node(inputs[1]))), Expr(high, (x, _node(inputs[2]))))
            return Expr("and", (lo, hi))
        if sub == "IsIn" and not _options(inner, "IsIn").get("nulls_equal"):
            values = _lit_value(inputs[1], "is_in with values")
            values = values if isinstance(values, list) else [values]
            if any(v is None for v in values):
                raise _Refused("is_in with a null among the values")
            # Polars: null for a null value; the neutral is_in is false there
            return Expr(
                "when", (Expr("is_null", (x,)), Expr("lit", (None,)), Expr("is_in", (x, tuple(values))))
            )
        raise _Refused(f"the boolean function {sub}")
    if name == "TemporalExpr":
        part = _DATE_PARTS.get(str(fn["TemporalExpr"]))
        if part is None:
            raise _Refused(f"the date function {fn['TemporalExpr']}")
        return Expr(part, (_node(inputs[0]),))
    if name == "StringExpr":
        inner = fn["StringExpr"]
        sub = inner if isinstance(inner, str) else next(iter(inner))
        x = _node(inputs[0])
        if sub == "LenChars":
            return Expr("len_chars", (x,))
        if sub == "StartsWith" or (sub == "Contains" and _options(inner, "Contains").get("literal")):
            pattern = _lit_value(inputs[1], f"str.{sub} with a pattern")
            if not isinstance(pattern, str):
                raise _Refused(f"str.{sub} with the pattern {pattern!r}")
            return Expr("starts_with" if sub == "StartsWith" else "contains", (x, Expr("lit", (pattern,))))
        hint = " without literal=True (a regular expression)" if sub == "Contains" else ""
        raise _Refused(f"the string function {sub}{hint}")
    raise _Refused(f"the function {name or fn}")


def _clip(opts: Any, inputs: list[Any]) -> Expr:
    x = _node(inputs[0])
    rest = inputs[1:]
    lo = _lit_value(rest.pop(0), "clip with a bound") if opts.get("has_min") else None
    hi = _lit_value(rest.pop(0), "clip with a bound") if opts.get("has_max") else None
    for b in (lo, hi):
        if b is not None and (isinstance(b, bool) or not isinstance(b, (int, float))):
            raise _Refused(f"clip with the bound {b!r}")
    out = x
    if hi is not None:  # NaN is above every float (the plan's order), so it clips to hi
        out = Expr("when", (Expr(">", (x, Expr("lit", (hi,)))), Expr("lit", (hi,)), out))
    if lo is not None:
        out = Expr("when", (Expr("<", (x, Expr("lit", (lo,)))), Expr("lit", (lo,)), out))
    return out
