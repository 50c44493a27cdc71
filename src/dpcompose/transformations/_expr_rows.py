"""Row maps written in the table expression language, run on numpy columns a whole column at a time.

A row map built from expressions is 1-stable by construction: an expression of the language reads the
columns of one row only (there is no aggregate, window, shift or sort in it), so the library need not
trust a user function to be row-wise; and it runs vectorised (:mod:`dpcompose.transformations.
_expr_numpy`), with the tables' meaning, compared with Polars' evaluation in the tests.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpcompose._validation import check_finite
from dpcompose._validation import short_repr as _short
from dpcompose.accounting import float_down, float_up
from dpcompose.core import AtomDomain, Domain, Metric, Node, NormBallDomain, Transformation, VectorDomain
from dpcompose.core._metrics import check_space
from dpcompose.core._recipe import recorded_as
from dpcompose.errors import DomainMismatch, InvalidParameter
from dpcompose.transformations._clamp import check_dataset_metric
from dpcompose.transformations._expr import Expr, check_tree, columns_of, typed, written_size
from dpcompose.transformations._expr_numpy import Bound, Column, bound_of, evaluate
from dpcompose.transformations._from_polars import from_polars, is_polars_expr

__all__ = ["make_map_exprs"]

Floats = npt.NDArray[np.float64]
_INT64 = (-(2**63), 2**63 - 1)

STORED_NODES = 5_000
"""The most nodes the expressions of a stored ``make_map_exprs`` may hold once written out as trees (a file
has no shared nodes: each ``clip`` writes its operand three times)."""


def _input(input_domain: Domain, names: Sequence[str]) -> tuple[AtomDomain, int | None, Bound]:
    """The atom of one value, the row length (None: 1-d data), and the Bound every column starts from."""
    element = input_domain.element_domain if isinstance(input_domain, VectorDomain) else None
    width: int | None = None
    ball = None
    if isinstance(element, VectorDomain):
        width = element.size
        ball = element if isinstance(element, NormBallDomain) else None
        element = element.element_domain
        if width is None:
            raise DomainMismatch(
                f"input_domain={input_domain!r}: rows need a fixed size (VectorDomain(..., size=d)), one "
                "value per name in columns"
            )
    if not (isinstance(element, AtomDomain) and element.carrier in (int, float)):
        raise DomainMismatch(
            f"make_map_exprs needs numeric columns: input_domain={input_domain!r} must be "
            "VectorDomain(AtomDomain(float|int)) (one column, 1-d data) or "
            "VectorDomain(VectorDomain(AtomDomain(float|int), size=d)) (d columns, an (n, d) array)"
        )
    if len(names) != (1 if width is None else width):
        raise InvalidParameter(
            f"columns={list(names)!r} must name each of the {1 if width is None else width} values of a row"
        )
    kind = "float" if element.carrier is float else "int"
    if element.bounds is not None:
        lo, hi = float_down(element.bounds[0]), float_up(element.bounds[1])
    else:
        lo, hi = -math.inf, math.inf
    if kind == "int" and (
        element.bounds is None or element.bounds[0] < _INT64[0] or element.bounds[1] > _INT64[1]
    ):
        raise DomainMismatch(
            f"input_domain={input_domain!r}: int columns are computed in int64; give the atom bounds "
            "within [-2**63, 2**63 - 1] (AtomDomain(int, bounds=(lo, hi)))"
        )
    if ball is not None:  # each entry of a vector of norm <= c lies in [-c, c]
        lo, hi = max(lo, -ball.norm), min(hi, ball.norm)
    return element, width, Bound(lo, hi, element.nan, False, kind)


def _names(columns: object) -> tuple[str, ...]:
    if isinstance(columns, str) or not isinstance(columns, Sequence):
        raise InvalidParameter(f"columns={_short(columns)} must be a list of column names")
    names = tuple(columns)
    if not names or not all(isinstance(c, str) and c for c in names) or len(set(names)) != len(names):
        raise InvalidParameter(f"columns={_short(columns)} must be distinct non-empty strings")
    return names


def _fill(fill: object) -> float:
    value = check_finite(fill, "fill")
    out = float(value)
    if Fraction(out) != Fraction(value):
        raise InvalidParameter(f"fill={_short(fill)} must be a float (a number a double holds exactly)")
    return out + 0.0


def _output(b: Bound, fill: float | None) -> AtomDomain:
    """The domain of one output value: nulls, NaN and ±inf become NaN (or ``fill``)."""
    empty = b.lo > b.hi
    if fill is None:
        bounds = (b.lo, b.hi) if b.finite and not empty else None
        return AtomDomain(float, bounds=bounds, nan=b.nan or b.null or not b.finite or empty)
    if empty:
        return AtomDomain(float, bounds=(fill, fill))
    return AtomDomain(float, bounds=(min(b.lo, fill), max(b.hi, fill)) if b.finite else None)


def _hull(atoms: list[AtomDomain]) -> AtomDomain:
    nan = any(a.nan for a in atoms)
    if any(a.bounds is None for a in atoms):
        return AtomDomain(float, nan=nan)
    lo = min(a.bounds[0] for a in atoms if a.bounds is not None)
    hi = max(a.bounds[1] for a in atoms if a.bounds is not None)
    return AtomDomain(float, bounds=(lo, hi), nan=nan)


def _finish(column: Column, n: int, fill: float | None) -> Floats:
    """The float64 output of one expression: its doubles, with null, NaN and ±inf as NaN or ``fill``."""
    out: Floats = np.array(np.broadcast_to(column.values, (n,)), dtype=np.float64)
    bad = ~np.isfinite(out)
    if column.null is not None:
        bad |= np.broadcast_to(column.null, (n,))
    if bad.any():
        out[bad] = math.nan if fill is None else fill
    return out


def _stored(arguments: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The arguments a file records for a call of :func:`make_map_exprs`: Polars expressions replaced by
    the engine-neutral trees they translate to (``dp.col`` trees, which a file holds and which build the
    same map); trees too large to write out are a problem, named."""
    exprs = arguments["exprs"]
    many = isinstance(exprs, (list, tuple))
    given = list(exprs) if many else [exprs]
    polars = any(is_polars_expr(e) for e in given)
    trees = [from_polars(e, "exprs") for e in given] if polars else given  # (translated once already)
    nodes = written_size(trees)
    if nodes > STORED_NODES:
        return {}, (
            f"argument 'exprs' would be written as {nodes:,} expression nodes (each clip writes its operand "
            f"three times), more than {STORED_NODES:,}: nest fewer clips, or store the pipeline as code"
        )
    if not polars:
        return {}, ""  # dp.col trees: the call's own arguments
    return {"exprs": trees if many else trees[0]}, ""


@recorded_as(_stored)
def make_map_exprs(
    input_domain: Domain,
    input_metric: Metric,
    columns: Sequence[str],
    exprs: Any,
    *,
    fill: float | None = None,
) -> Transformation[Any, Floats, int, int]:
    """Each row mapped by table expressions (``pl.col(...)`` or ``dp.col(...)``) over its named columns,
    vectorised: one float per expression per row.

    The expressions are those of table queries (:meth:`dpcompose.tables.Query.with_column`: comparisons,
    ``& | ~``, ``is_in``, ``is_null``, ``+ - * /``, ``abs``, ``clip``, ``round``, ``cast``,
    ``when/then/otherwise``, ``fill_null``, …) with the same meaning: arithmetic on doubles, ``x / 0`` null,
    NaN above every float and equal to itself, Kleene logic for nulls. numpy data holds no null (a NaN is a
    NaN, as in Polars); nulls arise inside an expression (``x / 0``, a failed cast, ``when`` without
    ``otherwise``). Each output value is the double of the expression's value (a bool is 0.0 or 1.0), and a
    null, NaN or ±inf result is output as NaN — or as ``fill`` when given.

    The output domain states what the expressions prove: ``clip(lo, hi)``, literals, ``abs``, bounded
    input columns and the arithmetic of bounded operands (rounded outward) give bounds; ``fill`` (or
    ``fill_null`` where no NaN can arise) removes NaN. A later sum or clip then needs no trust.

    Stability: d_in → d_in under ``SymmetricDistance`` and ``ChangeOneDistance``. An expression reads the
    columns of one row and nothing else (the language has no aggregate, window or reference to another
    row: checked when the map is built), so the map sends each record to a record on its own; records
    shared by two datasets map to shared records, and a pairing with d changed pairs to one with at most d
    (see :func:`make_map_rows`). The output has as many rows as the input.

    Args:
        input_domain: ``VectorDomain(AtomDomain(float|int, ...))`` (1-d data, one column) or
            ``VectorDomain(VectorDomain(AtomDomain(float|int, ...), size=d))`` (an ``(n, d)`` array; a
            ``NormBallDomain`` too, whose norm bounds each entry). Int atoms need bounds within int64.
        input_metric: ``SymmetricDistance()`` or ``ChangeOneDistance()``.
        columns: the names of the d values of a row, in order.
        exprs: one expression (the output is 1-d, ``VectorDomain(AtomDomain(float, ...))``) or a list of
            k (the output is an ``(n, k)`` array, ``VectorDomain(VectorDomain(AtomDomain(float, ...),
            size=k))``, whose atom is the hull of the k columns' domains: a vector domain has one atom,
            so a bound per column cannot be stated; for a norm tighter than √k times the hull's, chain
            ``make_clip_l2(norm=√Σ boundⱼ²)``, which changes no row within the columns' bounds).
        fill: a finite float output in place of null, NaN and ±inf (default: NaN); an int or other
            number that a double holds exactly is read as that double.

    Raises:
        DomainMismatch: the domain or metric is not one of the above; an expression outside the language
            (a Polars function that is not offered, a Python function).
        InvalidParameter: ``columns`` do not name the row's values; an expression reads an unknown column,
            mixes kinds, or is not numeric or boolean; ``fill`` not a finite float.

    Source: McSherry 2009 (PINQ, §4 "Select": a record-wise map is 1-stable).

    Examples:
        >>> import numpy as np
        >>> import polars as pl
        >>> import dpcompose as dp
        >>> rows = dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float, nan=True), size=2))
        >>> exprs = [pl.col("age").clip(0, 100), (pl.col("income") / 1000).clip(-5.0, 5.0), pl.lit(1.0)]
        >>> t = dp.t.make_map_exprs(rows, dp.SymmetricDistance(), ["age", "income"], exprs)
        >>> t(np.array([[30.0, 2500.0], [150.0, np.nan], [-1.0, 9e9]])).tolist()
        [[30.0, 2.5, 1.0], [100.0, 5.0, 1.0], [0.0, 5.0, 1.0]]
        >>> t.output_domain, t.map(1)
        (VectorDomain(VectorDomain(AtomDomain(float, bounds=(-5.0, 100.0)), size=3)), 1)
    """
    check_space(input_domain, input_metric)
    check_dataset_metric(input_metric)
    names = _names(columns)
    atom, width, start = _input(input_domain, names)
    filled = None if fill is None else _fill(fill)
    many = isinstance(exprs, (list, tuple))
    given = list(exprs) if many else [exprs]
    if not given:
        raise InvalidParameter("exprs=[] must hold at least one expression")
    kinds = dict.fromkeys(names, start.kind)
    trees: list[Expr] = []
    for e in given:
        neutral = from_polars(e, "exprs")
        if isinstance(neutral, Expr):  # a tree built by hand or read from a file: its shape first
            check_tree(neutral, "exprs")
        unknown = columns_of(neutral) - set(names) if isinstance(neutral, Expr) else set()
        if unknown:
            raise InvalidParameter(
                f"exprs: {e} reads {', '.join(sorted(map(repr, unknown)))}, not among columns={list(names)!r}"
            )
        tree, kind = typed(neutral, kinds, "exprs", limit=None)  # evaluated as the shared tree
        if kind not in ("int", "float", "bool"):
            raise InvalidParameter(f"exprs: {e} is a {kind}; a row map outputs numbers (or booleans as 0/1)")
        trees.append(tree)
    starts = dict.fromkeys(names, start)
    atoms = [_output(bound_of(t, starts), filled) for t in trees]
    dtype = np.float64 if atom.carrier is float else np.int64

    def run(data: Any) -> Floats:
        values = np.asarray(data, dtype=dtype)
        if width is None:
            cols = {names[0]: Column(values.reshape(-1))}
        else:
            values = values.reshape(-1, width)
            cols = {name: Column(values[:, j]) for j, name in enumerate(names)}
        n = values.shape[0]
        outs = [_finish(evaluate(t, cols), n, filled) for t in trees]
        return np.stack(outs, axis=1) if many else outs[0]

    size = input_domain.size if isinstance(input_domain, VectorDomain) else None
    output = VectorDomain(VectorDomain(_hull(atoms), size=len(trees)) if many else atoms[0], size=size)
    params: tuple[tuple[str, str], ...] = (
        ("columns", ", ".join(names)),
        ("exprs", str(len(trees))),  # how many: the label of a node stays one line
    )
    if filled is not None:
        params += (("fill", repr(filled)),)
    return Transformation(
        input_domain,
        output,
        input_metric,
        input_metric,
        run,
        lambda d_in: d_in,
        node=Node("map_exprs", params=params, source="McSherry 2009 §4 (record-wise map, 1-stable)"),
    )
