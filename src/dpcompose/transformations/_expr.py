"""A small engine-neutral expression language for filters and derived columns: ``col``, comparisons, ``&``,
``|``, ``~``, ``is_in``, ``is_null``, ``+``, ``-``, ``*``, ``/``, unary ``-`` and ``abs`` on numbers, and —
reached from Polars expressions (:mod:`dpcompose.transformations._from_polars`) — ``cast``, ``round``,
``clip``, ``when/then/otherwise`` and the string tests ``starts_with``, ``contains``, ``len_chars``.
Expressions are plain trees, checked against the schema when a query is built (unknown column, comparing a
string with a number, a non-boolean filter) and translated to each engine.

Semantics (the same in every engine): a comparison involving null is null, and a filter drops rows whose
predicate is null; ``is_in`` is false for null; NaN compares as Polars does (NaN equals NaN and is
greater than every other float). Arithmetic is on floats: operands are converted to IEEE doubles first
(round to nearest), so every engine computes the same bits and never overflows or raises (a double
operation gives ±inf or NaN instead); null propagates. ``x / y`` is null when ``y`` is 0 (either sign) or
null — so ``x/0`` and ``0/0`` are null on every engine — and the IEEE quotient otherwise. ``round`` rounds a
double half to even to a whole number (+0.0 for a zero). ``cast``: int or bool to float exactly as the
double conversion; float to int truncates toward zero, null for NaN, ±inf and values outside int64; int or
float to bool is ``x != 0``; bool to int is 0/1. ``when(c, a, b)`` is ``a`` where ``c`` is true, ``b``
where it is false or null; numeric branches of different kinds are both converted to double.
``starts_with``/``contains`` test a literal substring (code points), ``len_chars`` counts code points;
null gives null. ``year``, ``month``, ``day``, ``weekday`` (ISO: Monday 1 … Sunday 7) of a date are
ints. ``//``, ``%`` and ``**`` raise :class:`~dpcompose.DomainMismatch` saying what to write instead.

Examples:
    >>> import dpcompose as dp
    >>> e = (dp.col("age") >= 18) & dp.col("state").is_in(["CA", "NY"])
    >>> e
    Expr((col('age') >= 18) & col('state').is_in(['CA', 'NY']))
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np

from dpcompose.errors import DomainMismatch, InvalidParameter

__all__ = [
    "ARITH", "DATE_PARTS", "FLOAT_OPS", "INT64_LIMIT", "WRITTEN_NODES", "Expr", "check_tree", "check_utf8",
    "col", "columns_of", "literal_kind", "lowered_cast", "typed", "written_size",
]  # fmt: skip

_Typer = Callable[[object], tuple["Expr", str]]  # types one operand (memoised per node)
_CMP = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
ARITH = ("+", "-", "*", "/")
FLOAT_OPS = ("neg", "abs", "round")  # one numeric operand, computed on doubles
_STR_TESTS = ("starts_with", "contains")
DATE_PARTS = ("year", "month", "day", "weekday")  # of a date column, as int64; weekday ISO (Monday 1)
_KINDS = ("int", "float", "bool")  # what cast converts between
_OUTSIDE = "compute it in the data before it reaches dp.Context"
_DIVIDE = (
    "the division offered is / (null for a zero divisor on every engine); floor division and remainders "
    "differ between engines on negative and float operands: " + _OUTSIDE
)
_INSTEAD = {  # the operators Expr refuses, and what to write instead
    "//": _DIVIDE,
    "%": _DIVIDE,
    "divmod": _DIVIDE,
    "**": "write a square as dp.col('x') * dp.col('x'), or " + _OUTSIDE,
    "unary +": "write the expression without it",
}


def check_utf8(text: str, name: str) -> None:
    """Refuse a str that has no UTF-8 form (one holding a lone surrogate, such as ``"\\ud800"``): every
    engine holds strings as UTF-8, so such a key, literal or name would fail inside the engine job, after
    the query's charge. InvalidParameter naming ``name``, the value and the fix.

    Examples:
        >>> check_utf8("café", "keys") is None
        True
        >>> check_utf8("a\\udc80", "keys")
        Traceback (most recent call last):
        ...
        dpcompose.errors.InvalidParameter: keys='a\\udc80' is not valid UTF-8 text: ... U+DC80 at index 1 ...
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidParameter(
            f"{name}={text!r} is not valid UTF-8 text: it holds the lone surrogate "
            f"U+{ord(text[exc.start]):04X} at index {exc.start} (a str decoded from bytes with "
            "errors='surrogateescape' or from broken UTF-16). The engines hold strings as UTF-8 and would "
            "fail on it after the query's charge: pass the text it stands for (decode the source bytes as "
            "UTF-8, or with errors='replace')"
        ) from None


def literal_kind(v: object, name: str) -> str:
    """The kind of a literal (``int``, ``float``, ``str``, ``bool``); InvalidParameter otherwise (also for
    a str with no UTF-8 form, :func:`check_utf8`)."""
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
        check_utf8(v, name)
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

    def __truediv__(self, other: object) -> Expr:
        return self._arith("/", other)

    def __rtruediv__(self, other: object) -> Expr:
        return self._arith("/", other, reverse=True)

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

    def __neg__(self) -> Expr:
        return Expr("neg", (self,))

    def __pos__(self) -> NoReturn:
        self._not_offered("unary +")

    def __abs__(self) -> Expr:
        return Expr("abs", (self,))

    def abs(self) -> Expr:
        """The absolute value (on doubles)."""
        return Expr("abs", (self,))

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


_TEXT_NODES = 200
"""The most nodes an expression's text shows (its repr, an error message); deeper parts are ``…``, so
that a deep tree of shared nodes (nested clips: 3**depth written out) is shown in bounded time."""


def _text(e: Expr, budget: list[int] | None = None) -> str:
    """The text of ``e`` as written, at most :data:`_TEXT_NODES` nodes of it (``budget``: the nodes left)."""
    if budget is None:
        budget = [_TEXT_NODES]
    if budget[0] <= 0:
        return "…"
    budget[0] -= 1
    op, args = e.op, e.args
    if op == "col":
        return f"col({args[0]!r})"
    if op == "lit":
        return repr(args[0])
    if op == "null":
        return "null"
    if op in _CMP or op in ARITH:
        return f"{_wrap(args[0], budget)} {op} {_wrap(args[1], budget)}"
    if op in ("and", "or"):
        sym = "&" if op == "and" else "|"
        return f"{_wrap(args[0], budget)} {sym} {_wrap(args[1], budget)}"
    if op == "not":
        return f"~{_wrap(args[0], budget)}"
    if op == "neg":
        return f"-{_wrap(args[0], budget)}"
    if op == "is_in":
        return f"{_wrap(args[0], budget)}.is_in({list(args[1])!r})"
    if op == "cast":
        return f"{_wrap(args[0], budget)}.cast({args[-1]})"
    if op == "when":
        cond, then, other = (_text(a, budget) for a in args)
        return f"when({cond}).then({then}).otherwise({other})"
    if op in _STR_TESTS:
        return f"{_wrap(args[0], budget)}.str.{op}({args[1].args[0]!r})"
    if op == "len_chars":
        return f"{_wrap(args[0], budget)}.str.len_chars()"
    if op in DATE_PARTS:
        return f"{_wrap(args[0], budget)}.dt.{op}()"
    return f"{_wrap(args[0], budget)}.{op}()"


def _wrap(e: Expr, budget: list[int]) -> str:
    t = _text(e, budget)
    return f"({t})" if e.op in (*_CMP, *ARITH, "and", "or", "neg") else t


def check(e: object, kinds: dict[str, str], what: str = "predicate") -> str:
    """The kind of ``e`` under the schema ``kinds`` (column -> kind); InvalidParameter naming ``what``
    for an unknown column, mismatched kinds, or a non-boolean operand of &, |, ~."""
    return typed(e, kinds, what)[1]


def _numeric(e: Expr, sub: _Typer, what: str, whole: Expr) -> Expr:
    t, k = sub(e)
    if k not in ("int", "float"):
        raise InvalidParameter(f"{what}: {_text(whole)} needs numbers, not a {k}")
    return t


WRITTEN_NODES = 20_000
"""The most nodes an expression may hold written out as a tree (shared subtrees counted at each use):
:func:`typed` refuses a larger one. The engines' translations (Polars, Spark) and the files of
:func:`~dpcompose.to_json` walk the tree written out, so a few nested clips sharing their operand (3**depth
nodes) would otherwise build instantly and then run for an exponential time inside a charged job."""


def written_size(trees: Sequence[object]) -> int:
    """How many nodes ``trees`` hold written out as trees (shared subtrees counted at each use; a value
    that is not an :class:`Expr` counts 0), computed once per distinct node."""
    sizes: dict[int, int] = {}  # by id: every node met stays alive inside ``trees``

    def size(e: object) -> int:
        if not isinstance(e, Expr):
            return 0
        found = sizes.get(id(e))
        if found is None:
            found = sizes[id(e)] = 1 + sum(size(a) for a in e.args)
        return found

    return sum(size(t) for t in trees)


def typed(
    e: object, kinds: dict[str, str], what: str = "predicate", *, limit: int | None = WRITTEN_NODES
) -> tuple[Expr, str]:
    """``e`` checked under the schema ``kinds`` (column -> kind) and its kind; InvalidParameter naming
    ``what`` for an unknown column, mismatched kinds, or a non-boolean operand of &, |, ~. The returned
    tree states every conversion an engine needs: the numeric branches of a ``when`` of mixed kinds are
    cast to float, and a null branch carries its kind (``Expr("null", (kind,))``).

    Each node is typed once: a subtree that occurs several times in ``e`` (``clip`` repeats its operand)
    is one node of the typed tree too, so nested clips stay a chain, not a tree of 3**depth nodes. A tree
    of more than ``limit`` nodes written out (:func:`written_size`) is refused: the engines walk it written
    out (``limit=None``: no limit, for callers that evaluate the shared tree itself)."""
    nodes = 0 if limit is None else written_size([e])
    if limit is not None and nodes > limit:
        raise InvalidParameter(
            f"{what}: the expression is {nodes:,} nodes written out as a tree (a clip repeats its operand "
            f"three times), more than {limit:,}; the engines and the files read it written out, so "
            "it is refused now, before anything is spent: nest fewer clips, or compute it in the data"
        )
    seen: dict[int, tuple[Expr, str]] = {}  # by id: every node met stays alive inside ``e``

    def sub(x: object) -> tuple[Expr, str]:
        found = seen.get(id(x))
        if found is None:
            found = seen[id(x)] = _typed(x, kinds, what, sub)
        return found

    return sub(e)


def _typed(e: object, kinds: dict[str, str], what: str, sub: _Typer) -> tuple[Expr, str]:
    """:func:`typed` of the node ``e``, its operands typed by ``sub``."""
    if not isinstance(e, Expr):
        raise InvalidParameter(f"{what}={e!r} must be an expression built with pl.col(...) or dp.col(...)")
    op, args = e.op, e.args
    if op == "col":
        name = args[0]
        if name not in kinds:
            raise InvalidParameter(
                f"{what}: column {name!r} is not in the schema (declared: {', '.join(kinds)})"
            )
        return e, kinds[name]
    if op == "lit":
        if args[0] is None:
            raise InvalidParameter(
                f"{what}: a null literal is offered only as a branch of when/then/otherwise"
            )
        return e, literal_kind(args[0], what)
    if op == "null":
        return e, args[0]
    if op in _CMP:
        (a, ka), (b, kb) = sub(args[0]), sub(args[1])
        numeric = {"int", "float"}
        if not (ka == kb or (ka in numeric and kb in numeric)):
            raise InvalidParameter(f"{what}: {_text(e)} compares a {ka} with a {kb}")
        for side in (a, b):
            if side.op == "lit" and isinstance(side.args[0], float) and math.isnan(side.args[0]):
                raise InvalidParameter(f"{what}: {_text(e)} compares with NaN; use a bound or is_null()")
        return Expr(op, (a, b)), "bool"
    if op in ARITH:
        return Expr(op, tuple(_numeric(p, sub, what, e) for p in args)), "float"
    if op in FLOAT_OPS:
        return Expr(op, (_numeric(args[0], sub, what, e),)), "float"
    if op in ("and", "or", "not"):
        parts = []
        for part in args:
            t, k = sub(part)
            if k != "bool":
                raise InvalidParameter(f"{what}: {_text(e)} needs boolean operands, not a {k}")
            parts.append(t)
        return Expr(op, tuple(parts)), "bool"
    if op == "is_in":
        t, k = sub(args[0])
        for v in args[1]:
            lk = literal_kind(v, what)
            if lk != k:  # engines disagree on mixed int/float membership (Polars raises, Spark casts)
                mixed = {lk, k} == {"int", "float"}
                hint = " (write 2.0 for a float column, 2 for an int one)" if mixed else ""
                raise InvalidParameter(f"{what}: {_text(e)} holds a {lk} for a {k} expression{hint}")
        return Expr(op, (t, args[1])), "bool"
    if op == "cast":
        t, k = sub(args[0])  # args: (x, to) as written, (x, from, to) once typed
        to = args[-1]
        if k not in _KINDS or to not in _KINDS:
            raise InvalidParameter(
                f"{what}: {_text(e)} casts a {k} to {to}; casts are offered between int, float and bool"
            )
        return (t, k) if k == to else (Expr(op, (t, k, to)), to)
    if op == "when":
        cond, kc = sub(args[0])
        if kc != "bool":
            raise InvalidParameter(f"{what}: {_text(e)} needs a boolean condition, not a {kc}")
        nulls = [isinstance(b, Expr) and b.op == "lit" and b.args[0] is None for b in args[1:]]
        if all(nulls):
            raise InvalidParameter(f"{what}: {_text(e)} has no non-null branch")
        branches = [None if n else sub(b) for b, n in zip(args[1:], nulls, strict=True)]
        ks = {b[1] for b in branches if b is not None}
        if len(ks) > 1 and not ks <= {"int", "float"}:
            raise InvalidParameter(f"{what}: {_text(e)} mixes a {' and a '.join(sorted(ks))}")
        kind = "float" if ks == {"int", "float"} else ks.pop()
        out: list[Expr] = []
        for branch in branches:
            if branch is None:
                out.append(Expr("null", (kind,)))
            elif branch[1] != kind:  # an int branch beside a float one: converted as cast does
                out.append(Expr("cast", (branch[0], branch[1], kind)))
            else:
                out.append(branch[0])
        return Expr(op, (cond, *out)), kind
    if op in DATE_PARTS:
        t, k = sub(args[0])
        if k != "date":
            raise InvalidParameter(f"{what}: {_text(e)} needs a date, not a {k}")
        return Expr(op, (t,)), "int"
    if op in _STR_TESTS or op == "len_chars":
        t, k = sub(args[0])
        if k != "str":
            raise InvalidParameter(f"{what}: {_text(e)} needs a string, not a {k}")
        if op == "len_chars":
            return Expr(op, (t,)), "int"
        pattern = args[1]
        if not (isinstance(pattern, Expr) and pattern.op == "lit" and isinstance(pattern.args[0], str)):
            raise InvalidParameter(f"{what}: {_text(e)} needs a literal string pattern")
        check_utf8(pattern.args[0], f"{what}: the pattern of {op}")
        return Expr(op, (t, pattern)), "bool"
    if op != "is_null":
        raise InvalidParameter(f"{what}: {op!r} is not an operation of table expressions")
    t, _ = sub(args[0])
    return Expr(op, (t,)), "bool"


_ONE = ("neg", "abs", "round", "not", "is_null", "len_chars", *DATE_PARTS)  # ops of one expression
_TWO = (*_CMP, *ARITH, "and", "or", *_STR_TESTS)  # ops of two expressions


def check_tree(e: object, what: str) -> None:
    """Refuse (InvalidParameter naming ``what``) a tree that no builder makes: an unknown operation, the
    wrong number or kind of operands. For trees read from a file (``dp.from_json``); :func:`typed` then
    checks it against the schema. A node met again (a shared subtree) is checked once."""
    seen: set[int] = set()  # by id: every node met stays alive inside ``e``
    todo = [e]
    while todo:
        node = todo.pop()
        if id(node) not in seen:
            seen.add(id(node))
            todo.extend(reversed(_operands(node, what)))  # operands checked in order


def _operands(e: object, what: str) -> tuple[Any, ...]:
    """The expression operands of the node ``e``, once its own shape is checked (:func:`check_tree`)."""
    if not isinstance(e, Expr):
        raise InvalidParameter(f"{what}: {e!r} is not an expression")
    op, args = e.op, e.args
    if not isinstance(args, tuple):
        raise InvalidParameter(f"{what}: the operands of {op!r} must be a tuple, not {args!r}")
    exprs: tuple[Any, ...] = ()
    if op == "col":
        ok = len(args) == 1 and isinstance(args[0], str) and bool(args[0])
    elif op == "lit":
        ok = len(args) == 1 and (args[0] is None or isinstance(args[0], (bool, int, float, str)))
    elif op == "null":
        ok = len(args) == 1 and args[0] in (*_KINDS, "str", "date")
    elif op in _ONE or op in _TWO or op == "when":
        n = 1 if op in _ONE else 2 if op in _TWO else 3
        ok, exprs = len(args) == n, args
    elif op == "is_in":
        ok = len(args) == 2 and isinstance(args[1], tuple)
        exprs = args[:1]
    elif op == "cast":
        ok = len(args) in (2, 3) and all(k in _KINDS for k in args[1:])
        exprs = args[:1]
    else:
        raise InvalidParameter(f"{what}: {op!r} is not an operation of table expressions")
    if not ok:
        raise InvalidParameter(f"{what}: the operands {args!r} do not fit the operation {op!r}")
    return exprs


INT64_LIMIT = 9223372036854775808.0
"""``2**63`` as a double: a float cast to int is null outside ``[-INT64_LIMIT, INT64_LIMIT)``."""


def lowered_cast(e: Expr) -> Expr:
    """A typed ``cast`` node (``Expr("cast", (x, from, to))``, as :func:`typed` writes it) as the
    primitive operations an engine translates, so that the cast's semantics are stated once, here:

    * to float: ``to_float(x)``, the IEEE double conversion (an int rounds to nearest, a bool is 0.0/1.0);
    * to bool: ``x != 0`` (NaN is true, as NaN differs from 0);
    * bool to int: ``to_int(x)``, 0/1;
    * float to int: ``when((x >= −2**63) & (x < 2**63), to_int(x), null)``: ``to_int`` truncates toward
      zero, and NaN, ±inf and values outside int64 fail the test (NaN is above every float), so no engine
      ever converts a double that has no int64 (Spark in ANSI mode would raise).

    ``to_float`` and ``to_int`` exist only here, between this function and an engine's translation: no
    builder makes them and :func:`check_tree` refuses them in a file.

    Examples:
        >>> lowered_cast(Expr("cast", (col("b"), "bool", "int"))).op
        'to_int'
        >>> lowered_cast(Expr("cast", (col("x"), "float", "int"))).op
        'when'
    """
    x, src, to = e.args
    if to == "float":
        return Expr("to_float", (x,))
    if to == "bool":
        return Expr("!=", (x, Expr("lit", (0,))))
    if src == "bool":
        return Expr("to_int", (x,))
    low = Expr(">=", (x, Expr("lit", (-INT64_LIMIT,))))
    high = Expr("<", (x, Expr("lit", (INT64_LIMIT,))))
    return Expr("when", (Expr("and", (low, high)), Expr("to_int", (x,)), Expr("null", ("int",))))


def columns_of(e: Expr | None) -> set[str]:
    """The column names an expression reads (each node visited once, shared subtrees too)."""
    out: set[str] = set()
    seen: set[int] = set()  # by id: every node met stays alive inside ``e``
    todo: list[object] = [e]
    while todo:
        node = todo.pop()
        if not isinstance(node, Expr) or id(node) in seen:
            continue
        seen.add(id(node))
        if node.op == "col":
            out.add(node.args[0])
        else:
            todo.extend(node.args)
    return out
