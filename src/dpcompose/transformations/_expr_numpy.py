"""The table expression language (:mod:`dpcompose.transformations._expr`) evaluated on numpy columns, a
whole column at a time, with the tables' meaning, and the bounds its results provably lie in.

Values. Every sub-expression evaluates to a :class:`Column`: a numpy array (``int64``, ``float64`` or
``bool``; a 0-d array for a literal, broadcast when combined) and a null mask (``None`` where nothing is
null). The semantics are those stated in :mod:`dpcompose.transformations._expr` and computed by the Polars
and Spark engines:

* a comparison of a float with anything compares doubles in Polars' total order (NaN equals NaN and is
  greater than every other float; ``-0.0 == 0.0``); int with int compares exactly; null gives null;
* ``&`` and ``|`` are Kleene's three-valued logic (``false & null`` is false, ``true | null`` true);
  ``~null`` is null; ``is_in`` is false for null and compares as ``==`` does; ``is_null`` is never null;
* ``+ - * /``, unary ``-``, ``abs`` and ``round`` are on doubles (ints converted to the nearest double
  first); ``x / y`` is null where ``y`` is 0 or null; ``round`` is half to even with a zero result
  ``+0.0``;
* ``cast``: to float as the double conversion; to bool ``x != 0``; bool to int 0/1; float to int truncates
  toward zero, null for NaN, ±inf and values outside int64;
* ``when(c, a, b)`` is ``a`` where ``c`` is true, ``b`` where it is false or null.

The tests compare this evaluation with Polars' (through the tables' translation) on random expressions and
random data, nulls, NaN, ±inf and ±0.0 included.

Bounds. :func:`bound_of` is an interval analysis of a typed tree: a :class:`Bound` ``[lo, hi]`` that the
double of every non-null, non-NaN value of the expression lies in (an int's double is its nearest double,
the conversion the arithmetic and the output make) (``±inf`` ends: no bound), with whether NaN and null may
occur. Float steps round outward (one ulp on each computed end). A ``when`` refines the interval of the
expression its condition compares with a literal (``x < lo``, ``x > hi``, …) in each branch, and of the
expression ``is_null`` tests, so ``clip(lo, hi)`` (translated to two ``when``) gives ``[lo, hi]`` and
``fill_null(v)`` no null.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from dpcompose.transformations._expr import ARITH, Expr

__all__ = ["Bound", "Column", "bound_of", "evaluate"]

Array = npt.NDArray[Any]
_INT64_LIMIT = 9223372036854775808.0  # 2**63
_CMP = ("==", "!=", "<", "<=", ">", ">=")
_DTYPES: dict[str, type[np.generic]] = {"int": np.int64, "float": np.float64, "bool": np.bool_}


@dataclass(frozen=True)
class Column:
    """Values (a numpy array, 0-d for a literal) and a null mask (``None``: no null)."""

    values: Array
    null: Array | None = None


def _or(a: Array | None, b: Array | None) -> Array | None:
    if a is None:
        return b
    if b is None:
        return a
    return a | b


def _is_float(v: Array) -> bool:
    return v.dtype.kind == "f"


def _compare(op: str, a: Array, b: Array) -> Array:
    """``a op b`` in Polars' order: exact for ints and bools, the total order of doubles (NaN equal to NaN,
    above every other float) as soon as one side is a float."""
    if not (_is_float(a) or _is_float(b)):
        out: Array = {
            "==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal, ">": np.greater,
            ">=": np.greater_equal,
        }[op](a, b)  # fmt: skip
        return out
    a, b = a.astype(np.float64, copy=False), b.astype(np.float64, copy=False)
    an, bn = np.isnan(a), np.isnan(b)
    if op in ("==", "!="):
        eq: Array = (a == b) | (an & bn)
        return eq if op == "==" else ~eq
    if op == "<":
        return (a < b) | (~an & bn)
    if op == "<=":
        return (a <= b) | bn
    if op == ">":
        return (a > b) | (an & ~bn)
    return (a >= b) | an


def _truth(c: Column) -> tuple[Array, Array]:
    """Where ``c`` is true and where it is false (neither: null)."""
    if c.null is None:
        return c.values, ~c.values
    known = ~c.null
    return c.values & known, ~c.values & known


def _as_float(v: Array) -> Array:
    return v.astype(np.float64, copy=False)


class _Interner:
    """Small integer ids of trees by structure (equal subtrees, equal ids), computed once per node."""

    def __init__(self) -> None:
        self._by_node: dict[int, int] = {}
        self._by_shape: dict[tuple[Any, ...], int] = {}
        self._nodes: list[Expr] = []  # kept alive, so that no id() is reused during one evaluation

    def __call__(self, e: Expr) -> int:
        found = self._by_node.get(id(e))
        if found is not None:
            return found
        shape = (e.op, tuple(self(a) if isinstance(a, Expr) else (type(a).__name__, repr(a)) for a in e.args))
        k = self._by_shape.setdefault(shape, len(self._by_shape))
        self._by_node[id(e)] = k
        self._nodes.append(e)
        return k


def evaluate(e: Expr, columns: Mapping[str, Column]) -> Column:
    """The column of the typed expression ``e`` (:func:`~dpcompose.transformations._expr.typed`) over
    ``columns``; never raises on data (module docstring: the meaning of each operation)."""
    memo: dict[int, Column] = {}
    ids = _Interner()

    def sub(x: Expr) -> Column:
        k = ids(x)
        found = memo.get(k)
        if found is None:  # a subtree met again (clip repeats its operand) is computed once
            found = memo[k] = _eval(x, columns, sub)
        return found

    with np.errstate(all="ignore"):
        return sub(e)


def _eval(e: Expr, columns: Mapping[str, Column], sub: Callable[[Expr], Column]) -> Column:
    op, args = e.op, e.args
    if op == "col":
        return columns[args[0]]
    if op == "lit":
        v = args[0]
        kind = "bool" if isinstance(v, bool) else "int" if isinstance(v, int) else "float"
        return Column(np.asarray(v, dtype=_DTYPES[kind]))
    if op == "null":
        return Column(np.zeros((), dtype=_DTYPES[args[0]]), np.ones((), dtype=bool))
    if op in _CMP:
        a, b = sub(args[0]), sub(args[1])
        return Column(_compare(op, a.values, b.values), _or(a.null, b.null))
    if op in ("and", "or"):
        (at, af), (bt, bf) = _truth(sub(args[0])), _truth(sub(args[1]))
        true, false = (at & bt, af | bf) if op == "and" else (at | bt, af & bf)
        return Column(true, ~(true | false))
    if op == "not":
        a = sub(args[0])
        return Column(~a.values, a.null)
    if op == "is_null":
        a = sub(args[0])
        return Column(np.zeros(a.values.shape, dtype=bool) if a.null is None else a.null.copy())
    if op == "is_in":
        a = sub(args[0])
        hit = np.zeros(a.values.shape, dtype=bool)
        for v in args[1]:
            hit = hit | _compare("==", a.values, sub(Expr("lit", (v,))).values)
        return Column(hit if a.null is None else hit & ~a.null)
    if op in ARITH:
        a, b = sub(args[0]), sub(args[1])
        x, y = _as_float(a.values), _as_float(b.values)
        null = _or(a.null, b.null)
        if op == "/":
            return Column(x / y, _or(null, y == 0))
        return Column(x + y if op == "+" else x - y if op == "-" else x * y, null)
    if op in ("neg", "abs", "round"):
        a = sub(args[0])
        x = _as_float(a.values)
        if op == "neg":
            return Column(-x, a.null)
        if op == "abs":
            return Column(np.abs(x), a.null)
        r = np.round(x)  # half to even
        return Column(np.where(r == 0, 0.0, r), a.null)
    if op == "cast":
        a = sub(args[0])
        src, to = args[1], args[2]
        if to == "float":
            return Column(_as_float(a.values), a.null)
        if to == "bool":
            return Column(a.values != 0, a.null)
        if src == "bool":
            return Column(a.values.astype(np.int64), a.null)
        x = _as_float(a.values)
        fits = (x >= -_INT64_LIMIT) & (x < _INT64_LIMIT)  # false for NaN
        return Column(np.where(fits, np.trunc(x), 0.0).astype(np.int64), _or(a.null, ~fits))
    if op == "when":
        cond = sub(args[0])
        a, b = sub(args[1]), sub(args[2])
        true, _ = _truth(cond)
        values = np.where(true, a.values, b.values)
        if a.null is None and b.null is None:
            return Column(values)
        an = np.zeros((), dtype=bool) if a.null is None else a.null
        bn = np.zeros((), dtype=bool) if b.null is None else b.null
        return Column(values, np.where(true, an, bn))
    raise AssertionError(f"{op!r} is refused when the row map is built")  # pragma: no cover


@dataclass(frozen=True)
class Bound:
    """The double of every non-null, non-NaN value lies in ``[lo, hi]`` (``lo > hi``: there is none; ``±inf``:
    no bound on that side, and ±inf may occur); ``nan``/``null``: whether NaN / null may occur. ``kind`` is
    the expression's kind (``int``, ``float``, ``bool``)."""

    lo: float
    hi: float
    nan: bool
    null: bool
    kind: str

    @property
    def finite(self) -> bool:
        """Whether the values are proven finite (an empty interval is)."""
        return self.lo > self.hi or (-math.inf < self.lo and self.hi < math.inf)


_ANY = (-math.inf, math.inf)


def _down(x: float) -> float:
    return math.nextafter(x, -math.inf) if math.isfinite(x) else x


def _up(x: float) -> float:
    return math.nextafter(x, math.inf) if math.isfinite(x) else x


def _empty(b: Bound) -> bool:
    return b.lo > b.hi


def _union(a: Bound, b: Bound, kind: str) -> Bound:
    return Bound(min(a.lo, b.lo), max(a.hi, b.hi), a.nan or b.nan, a.null or b.null, kind)


class _Env:
    """What one branch of a ``when`` knows: ``facts``, the refined bounds of sub-expressions (by structural
    id), and ``memo``, the bounds already computed under those facts (a sub-expression met again under the
    same facts is not analysed again)."""

    def __init__(self, facts: dict[int, Bound]) -> None:
        self.facts = facts
        self.memo: dict[int, Bound] = {}

    def refine(self, key: int, bound: Bound) -> _Env:
        """A new branch: these facts and ``key`` refined to ``bound`` (its memo starts empty)."""
        facts = dict(self.facts)
        facts[key] = bound
        return _Env(facts)


def bound_of(e: Expr, inputs: Mapping[str, Bound]) -> Bound:
    """The :class:`Bound` of the typed expression ``e`` given those of its columns (module docstring).

    Each node is analysed once per set of facts (the branches of the ``when`` above it): ``clip`` reads its
    operand three times and refines it, so nested clips cost a constant per level, not 3**depth."""
    return _bound(e, inputs, _Env({}), _Interner())


def _bool(null: bool) -> Bound:
    return Bound(0.0, 1.0, False, null, "bool")


def _bound(e: Expr, inputs: Mapping[str, Bound], env: _Env, ids: _Interner) -> Bound:
    k = ids(e)
    found = env.facts.get(k)
    if found is None:
        found = env.memo.get(k)
    if found is None:
        found = env.memo[k] = _bound_node(e, inputs, env, ids)
    return found


def _bound_node(e: Expr, inputs: Mapping[str, Bound], env: _Env, ids: _Interner) -> Bound:
    op, args = e.op, e.args
    if op == "col":
        return inputs[args[0]]
    if op == "lit":
        v = args[0]
        kind = "bool" if isinstance(v, bool) else "int" if isinstance(v, int) else "float"
        if kind == "float" and math.isnan(v):
            return Bound(math.inf, -math.inf, True, False, kind)
        return Bound(float(v), float(v), False, False, kind)
    if op == "null":
        return Bound(math.inf, -math.inf, False, True, args[0])
    if op in _CMP:
        a, b = _bound(args[0], inputs, env, ids), _bound(args[1], inputs, env, ids)
        return _bool(a.null or b.null)
    if op in ("and", "or", "not"):
        return _bool(any(_bound(p, inputs, env, ids).null for p in args))
    if op in ("is_in", "is_null"):
        return _bool(False)
    if op in ARITH:
        return _arith(op, _bound(args[0], inputs, env, ids), _bound(args[1], inputs, env, ids))
    if op in ("neg", "abs", "round"):
        a = _bound(args[0], inputs, env, ids)
        if _empty(a):
            return replace(a, kind="float")
        if op == "neg":
            return Bound(-a.hi, -a.lo, a.nan, a.null, "float")
        if op == "abs":
            low = 0.0 if a.lo <= 0.0 <= a.hi else min(abs(a.lo), abs(a.hi))
            return Bound(low, max(abs(a.lo), abs(a.hi)), a.nan, a.null, "float")
        return Bound(float(np.round(a.lo)), float(np.round(a.hi)), a.nan, a.null, "float")
    if op == "cast":
        a = _bound(args[0], inputs, env, ids)
        to = args[2]
        if to == "float":
            return replace(a, kind="float")
        if to == "bool":
            return _bool(a.null)
        if args[1] == "bool":
            return replace(a, kind="int")
        inside = a.lo >= -_INT64_LIMIT and a.hi < _INT64_LIMIT
        null = a.null or a.nan or not inside
        if _empty(a):
            return Bound(a.lo, a.hi, False, null, "int")
        lo, hi = (math.trunc(a.lo), math.trunc(a.hi)) if inside else _ANY
        return Bound(float(lo), float(hi), False, null, "int")
    if op == "when":
        cond = args[0]
        then = _bound(args[1], inputs, _refined(cond, True, inputs, env, ids), ids)
        other = _bound(args[2], inputs, _refined(cond, False, inputs, env, ids), ids)
        return _union(then, other, then.kind if not _empty(then) or then.null else other.kind)
    raise AssertionError(f"{op!r} is refused when the row map is built")  # pragma: no cover


def _arith(op: str, a: Bound, b: Bound) -> Bound:
    null = a.null or b.null
    if op == "/" and (b.lo <= 0.0 <= b.hi or b.nan):
        null = True  # a zero divisor gives null (NaN divisors are nonzero: kept below)
    if _empty(a) or _empty(b):
        return Bound(math.inf, -math.inf, a.nan or b.nan, null, "float")
    if not (a.finite and b.finite) or (op == "/" and b.lo <= 0.0 <= b.hi):
        return Bound(-math.inf, math.inf, True, null, "float")  # inf − inf, 0·inf, x/tiny: anything
    if op == "+":
        corners = [a.lo + b.lo, a.hi + b.hi]
    elif op == "-":
        corners = [a.lo - b.hi, a.hi - b.lo]
    elif op == "*":
        corners = [a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi]
    else:
        corners = [a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi]
    lo, hi = _down(min(corners)), _up(max(corners))  # each corner is rounded once: one ulp covers it
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return Bound(-math.inf, math.inf, True, null, "float")
    return Bound(lo, hi, a.nan or b.nan, null, "float")


_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _refined(cond: Expr, holds: bool, inputs: Mapping[str, Bound], env: _Env, ids: _Interner) -> _Env:
    """``env`` with what the branch of a ``when`` knows: the condition true (``holds``), or false or null.

    ``x op h`` with a literal ``h`` (either side): in the true branch ``x`` is not null, and ``x < h``
    excludes NaN (NaN is above every float) and ``x > h`` admits it; in the other branch the opposite
    comparison holds or ``x`` is null. ``is_null(x)``: ``x`` is null in the true branch, not null in the
    other. ``a & b`` true: both hold. Bounds are on the doubles of the values, and the double of an int is
    monotone in it, so an int compared with an int (exactly) or with a float (as doubles) refines the
    interval to ``float(h)`` exactly.
    """
    op, args = cond.op, cond.args
    if op == "and" and holds:
        return _refined(args[1], True, inputs, _refined(args[0], True, inputs, env, ids), ids)
    if op == "is_null":
        x = _bound(args[0], inputs, env, ids)
        if holds:
            return env.refine(ids(args[0]), Bound(math.inf, -math.inf, False, True, x.kind))
        return env.refine(ids(args[0]), replace(x, null=False))
    if op not in _FLIP:
        return env
    left, right = args
    if right.op == "lit" and left.op != "lit":
        x_expr, h_expr = left, right
    elif left.op == "lit" and right.op != "lit":
        x_expr, h_expr, op = right, left, _FLIP[op]
    else:
        return env
    h = h_expr.args[0]
    if isinstance(h, bool) or (isinstance(h, float) and math.isnan(h)):
        return env
    x = _bound(x_expr, inputs, env, ids)
    low = high = float(h)  # the comparison is of doubles (or of ints: the double is monotone in it)
    above = op in (">", ">=")  # what the true branch says: x above h (or NaN) / x below h (not NaN)
    if holds:
        new = (
            Bound(max(x.lo, low), x.hi, x.nan, False, x.kind)
            if above
            else Bound(x.lo, min(x.hi, high), False, False, x.kind)
        )
    else:
        new = (
            Bound(x.lo, min(x.hi, high), False, x.null, x.kind)
            if above
            else Bound(max(x.lo, low), x.hi, x.nan, x.null, x.kind)
        )
    return env.refine(ids(x_expr), new)
