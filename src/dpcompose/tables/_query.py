"""The query builder of a table Context (:class:`Query`): ``with_column(s)``, ``select``, ``filter``,
``group_by`` and ``agg``, each checked against the schema when it is called. ``agg`` returns the built
query, a :class:`~dpcompose.tables._table_query.TableQuery` (its map is stated there).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from dpcompose.errors import InvalidParameter
from dpcompose.tables._agg import Agg, below_specs
from dpcompose.tables._engine import BelowSpec, Plan, SumSpec
from dpcompose.tables._fixed import square_spec, sum_spec, unit_exponent
from dpcompose.tables._from_polars import agg_from_polars
from dpcompose.tables._schema import Column, check_column_name
from dpcompose.tables._selection import read_selection
from dpcompose.tables._table_query import TableQuery
from dpcompose.transformations import _expr
from dpcompose.transformations._from_polars import from_polars, is_polars_expr, output_name

if TYPE_CHECKING:  # annotations only: the Context module imports this one
    from dpcompose.tables._context import Context

__all__ = ["Query"]


def _column_names(part: object) -> tuple[str, ...]:
    """One argument of ``group_by``: a column name, or (as Polars takes it) a list or tuple of names."""
    if isinstance(part, str):
        return (part,)
    if isinstance(part, (list, tuple)) and all(isinstance(name, str) for name in part):
        return tuple(part)
    raise InvalidParameter(
        f"by={part!r} must be a column name or a list of column names, e.g. group_by('a', 'b') or "
        "group_by(['a', 'b'])"
    )


class Query:
    """An immutable query builder: ``with_column(s)``, ``select``, ``filter``, ``group_by(..., keys=...)``,
    ``agg(...)``."""

    def __init__(
        self,
        ctx: Context,
        budget: Any,
        predicate: _expr.Expr | None = None,
        by: tuple[str, ...] = (),
        keys: tuple[tuple[Any, ...], ...] | None = None,
        derived: tuple[tuple[str, _expr.Expr, Column], ...] = (),
        visible: tuple[str, ...] | None = None,
        share: int | None = None,
        selection: str = "laplace",
        steps: tuple[tuple[Any, ...], ...] = (),
    ) -> None:
        self._ctx, self._budget, self._predicate = ctx, budget, predicate
        self._steps = steps  # the builder calls so far, as stored by dp.to_json (dpcompose.tables._stored)
        self._share = share
        self._selection = selection  # how keys=None selects the keys (dpcompose.tables._selection)
        self._by, self._keys = by, keys
        self._derived, self._visible = derived, visible

    def _copy(self, **changes: Any) -> Query:
        fields: dict[str, Any] = {
            "predicate": self._predicate, "by": self._by, "keys": self._keys, "derived": self._derived,
            "visible": self._visible, "selection": self._selection, "steps": self._steps,
        }  # fmt: skip
        fields.update(changes)
        return Query(self._ctx, self._budget, share=self._share, **fields)

    def _column(self, name: object, what: str = "column") -> Column:
        """A column of this query's view: a declared or derived one that ``select`` kept (all by default)."""
        if self._visible is not None and name not in self._visible:
            raise InvalidParameter(
                f"{what}={name!r} is not among the selected columns ({', '.join(self._visible)})"
            )
        for n, _, column in self._derived:
            if n == name:
                return column
        return self._ctx.domain.column(name, what)

    def _kinds(self) -> dict[str, str]:
        kinds = {**self._ctx.kinds, **{n: column.kind for n, _, column in self._derived}}
        return {n: k for n, k in kinds.items() if self._visible is None or n in self._visible}

    def select(self, *columns: str) -> Query:
        """Keep only these columns (declared or derived) visible to the rest of the query.

        Examples:
            >>> import dpcompose as dp
            >>> import polars as pl
            >>> schema = dp.FrameDomain({"a": dp.Column(int), "b": dp.Column(str)})
            >>> ctx = dp.Context(pl.DataFrame({"a": [1], "b": ["x"]}), schema, privacy_loss=1.0,
            ...                  split_evenly_over=1)
            >>> ctx.query().select("a").filter(dp.col("b") == "x")
            Traceback (most recent call last):
            ...
            dpcompose.errors.InvalidParameter: predicate: column 'b' is not in the schema (declared: a)
        """
        if not columns:
            raise InvalidParameter("select() needs at least one column name")
        for name in columns:
            self._column(name, "select")
        # only the view narrows: every derived column is still computed, as a kept one may read a dropped one
        return self._copy(visible=tuple(columns), steps=(*self._steps, ("select", list(columns))))

    def with_column(
        self, name: str, expr: Any, *, bounds: tuple[float, float], fill: float | None = None
    ) -> Query:
        """A new float column computed row by row from ``expr`` (a numeric Polars or ``dp.col`` expression
        of the offered subset, :mod:`dpcompose.transformations._from_polars`; on IEEE doubles in every
        engine), with declared ``bounds`` (the clamp its sums, means and quantiles apply) and ``fill``
        (what a null or NaN result stands for; default: 0 clamped into the bounds). A row-wise map: one
        person's rows stay their rows, so every map is unchanged.

        Examples:
            >>> import dpcompose as dp
            >>> import polars as pl
            >>> schema = dp.FrameDomain({"price": dp.Column(float, bounds=(0.0, 100.0)),
            ...                          "qty": dp.Column(int, bounds=(0, 10))})
            >>> ctx = dp.Context(pl.DataFrame({"price": [2.5], "qty": [4]}), schema, privacy_loss=1e9,
            ...                  split_evenly_over=1)
            >>> q = ctx.query().with_column("total", dp.col("price") * dp.col("qty"), bounds=(0.0, 1000.0))
            >>> round(q.agg(dp.tables.sum("total")).release()["total_sum"][0], 3)  # noise at ε = 1e9: ~1e-6
            10.0
        """
        if not isinstance(name, str) or not name:
            raise InvalidParameter(f"name={name!r} must be a non-empty column name")
        taken = [*self._ctx.domain.schema, *(n for n, _, _ in self._derived)]
        if name in taken:
            raise InvalidParameter(f"name={name!r} is already a column; pick a new name")
        check_column_name(name, "name", taken)
        given = from_polars(expr, "expr")
        expr, kind = _expr.typed(given, self._kinds(), "expr")
        if kind not in ("int", "float"):
            raise InvalidParameter(f"expr={expr!r} must be numeric, not a {kind}")
        if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
            raise InvalidParameter(f"bounds={bounds!r} must be a pair (lo, hi)")
        try:
            lo, hi = (float(b) if isinstance(b, int) and not isinstance(b, bool) else b for b in bounds)
        except OverflowError:
            raise InvalidParameter("bounds: an integer bound is beyond the float range (1.8e308)") from None
        checked = Column(float, bounds=(lo, hi))  # refuses bounds that are not finite floats lo <= hi
        assert checked.bounds is not None
        lo, hi = checked.bounds
        default = min(max(0.0, lo), hi)
        column = Column(float, bounds=(lo, hi), nullable=True, fill=default if fill is None else fill)
        visible = None if self._visible is None else (*self._visible, name)
        step = ("with_column", name, given, [lo, hi], fill)
        return self._copy(
            derived=(*self._derived, (name, expr, column)), visible=visible, steps=(*self._steps, step)
        )

    def with_columns(
        self, *exprs: Any, bounds: Any = None, **columns: tuple[Any, tuple[float, float]]
    ) -> Query:
        """Several :meth:`with_column` at once: ``with_columns(name=(expr, (lo, hi)), ...)``, in order (a
        later one may read an earlier one). Polars expressions may also come positionally, named by their
        alias, with their bounds in ``bounds={name: (lo, hi)}``:
        ``with_columns(pl.col("a") * 2, bounds={"a": (0.0, 2.0)})`` (replacing a declared column is refused:
        give it a new name with ``.alias``).

        Examples:
            >>> import dpcompose as dp
            >>> import polars as pl
            >>> schema = dp.FrameDomain({"a": dp.Column(float, bounds=(0.0, 1.0))})
            >>> ctx = dp.Context(pl.DataFrame({"a": [0.5]}), schema, privacy_loss=1e9, split_evenly_over=1)
            >>> q = ctx.query().with_columns(b=(dp.col("a") * 2, (0.0, 2.0)), c=(dp.col("b") + 1, (1.0, 3.0)))
            >>> round(q.agg(dp.tables.sum("c")).release()["c_sum"][0], 3)  # 0.5·2 + 1
            2.0
        """
        query = self
        given = {} if bounds is None else bounds
        if not isinstance(given, dict):
            raise InvalidParameter(f"bounds={bounds!r} must be a dict {{name: (lo, hi)}}")
        for e in exprs:
            if not is_polars_expr(e):
                raise InvalidParameter(
                    f"with_columns: {e!r} must be a Polars expression named by .alias(...), or pass "
                    "name=(expr, (lo, hi))"
                )
            name = output_name(e, "with_columns")
            if name not in given:
                raise InvalidParameter(
                    f"with_columns: {name!r} needs its bounds: bounds={{{name!r}: (lo, hi)}}"
                )
            query = query.with_column(name, e, bounds=given[name])
        for name, spec in columns.items():
            if not isinstance(spec, tuple) or len(spec) != 2:
                raise InvalidParameter(f"{name}={spec!r} must be a pair (expression, (lo, hi))")
            query = query.with_column(name, spec[0], bounds=spec[1])
        return query

    def filter(self, predicate: Any) -> Query:
        """Keep the rows where ``predicate`` (a Polars or ``dp.col`` expression of the offered subset,
        :mod:`dpcompose.transformations._from_polars`) is true, checked against the schema now."""
        given = from_polars(predicate, "predicate")
        predicate, kind = _expr.typed(given, self._kinds(), "predicate")
        if kind != "bool":
            raise InvalidParameter(f"predicate={predicate!r} must be a boolean expression")
        combined = predicate if self._predicate is None else self._predicate & predicate
        return self._copy(predicate=combined, steps=(*self._steps, ("filter", given)))

    def group_by(
        self, *by: str | Sequence[str], keys: Sequence[Any] | None = None, selection: str = "laplace"
    ) -> Query:
        """Group by the columns ``by`` with the public list ``keys`` (a value per key for one column, a
        tuple per key for several). Rows with other keys are dropped; every listed key gets a row. The
        columns are separate arguments or, as in Polars, lists of names: ``group_by("a", "b")`` is
        ``group_by(["a", "b"])``.

        ``keys=None`` (unknown keys): every key present after the filter and the caps is a candidate, and
        a key is released only when its noisy count reaches a threshold chosen from the query's δ
        (partition selection): needs an ``ApproxDP`` Context with δ > 0. ``selection="laplace"`` (default)
        noises every released vector with discrete Laplace noise and thresholds as ``make_laplace_threshold``;
        ``selection="gaussian"`` uses discrete Gaussian noise and thresholds as ``make_gaussian_threshold``
        (half of δ converts the query's ρ to ε, half is the threshold's; :mod:`dpcompose.tables._selection`).
        A ``ZCDP`` Context is refused (no approximate-zCDP measure to charge the threshold's δ to).
        With unknown keys the count is always computed and noised (it selects the keys; its cost is part
        of the query's), and released keys come sorted by value.
        """
        selection = read_selection(selection)
        by = tuple(name for part in by for name in _column_names(part))
        if not by:
            raise InvalidParameter("by=() must name at least one column")
        if len(set(by)) != len(by):
            raise InvalidParameter(f"by={by!r} names a column twice")
        for name in by:
            col = self._column(name, "by")
            if col.kind in ("float", "date"):
                raise InvalidParameter(
                    f"by={name!r} is a {col.kind} column; group by int, str or bool columns"
                )
        if keys is None:  # unknown keys: selected privately at release (partition selection)
            step: tuple[Any, ...] = ("group_by", list(by), None, selection)
            return self._copy(by=tuple(by), keys=None, selection=selection, steps=(*self._steps, step))
        if selection != "laplace":
            raise InvalidParameter(
                f"selection={selection!r} chooses how unknown keys are selected: pass keys=None, or leave "
                "selection out with keys=[...]"
            )
        if isinstance(keys, (str, bytes)) or not isinstance(keys, Sequence) or len(keys) == 0:
            raise InvalidParameter(f"keys={keys!r} must be a non-empty list of keys")
        rows: list[tuple[Any, ...]] = []
        for key in keys:
            parts = tuple(key) if len(by) > 1 and isinstance(key, (tuple, list)) else (key,)
            if len(parts) != len(by):
                raise InvalidParameter(f"keys: {key!r} must have one value per column of by={by!r}")
            clean = []
            for name, v in zip(by, parts, strict=True):
                v = v.item() if isinstance(v, np.generic) else v
                col = self._column(name, "by")
                if v is None:
                    if not col.nullable:
                        raise InvalidParameter(f"keys: None for column {name!r}, which is not nullable")
                elif _expr.literal_kind(v, "keys") != col.kind:
                    raise InvalidParameter(f"keys: {v!r} is not a {col.kind} (column {name!r})")
                clean.append(v)
            rows.append(tuple(clean))
        if len(set(rows)) != len(rows):
            raise InvalidParameter(f"keys={keys!r} must be distinct")
        stored = [r[0] for r in rows] if len(by) == 1 else list(rows)
        step = ("group_by", list(by), stored, selection)
        return self._copy(by=tuple(by), keys=tuple(rows), steps=(*self._steps, step))

    def agg(self, *aggs: Any) -> TableQuery:
        """The aggregates to release (``count()``, ``sum(c)``, ``mean(c)``, ``variance(c)``,
        ``quantile(c, alpha, candidates)``, ``count_distinct(c)``, or the Polars ``pl.len()``,
        ``pl.col(c).sum()``, ``.mean()``, ``.var()``, ``.n_unique()``), as one query."""
        aggs = tuple(agg_from_polars(a) for a in aggs)
        if not aggs:
            raise InvalidParameter("aggs=() must list at least one aggregate")
        ctx = self._ctx
        specs: dict[tuple[str, str, bool], SumSpec] = {}
        distinct: list[str] = []
        below: list[BelowSpec] = []
        for a in aggs:
            if not isinstance(a, Agg):
                raise InvalidParameter(
                    f"aggs: {a!r} must be built by dp.tables.count, sum, mean, variance, quantile or "
                    "count_distinct"
                )
            if a.column is None:
                continue
            if a.op == "quantile":
                below.extend(below_specs(a, self._column(a.column, "column")))
                continue
            if a.op == "count_distinct":
                kind = self._column(a.column, "column").kind
                if kind not in ("int", "str", "bool"):
                    raise InvalidParameter(
                        f"count_distinct({a.column!r}): a {kind} column; distinct values are counted for "
                        "int, str or bool columns (engines disagree on -0.0 vs 0.0 and on NaN)"
                    )
                distinct.append(a.column)
                continue
            spec = sum_spec(a.column, self._column(a.column, "column"), a.bounds)
            if spec.key in specs and specs[spec.key] != spec:
                raise InvalidParameter(f"column={a.column!r} is aggregated with two different bounds")
            specs[spec.key] = spec
            if a.op == "variance":
                squares = square_spec(spec)
                if unit_exponent(squares) + 63 > 1023:  # a noisy int64 times the unit must be a finite float
                    raise InvalidParameter(
                        f"variance({a.column!r}): bounds {a.bounds or 'of the column'} are too wide for a "
                        "variance (its squares' unit exceeds the float range); narrow them below 2**480"
                    )
                specs[squares.key] = squares
        for a in aggs:  # a result column's name (an alias may come from a file): the result frame holds it
            _expr.check_utf8(a.name, "aggs: the result column")
        if len({a.name for a in aggs}) != len(aggs):
            raise InvalidParameter("aggs: an aggregate is listed twice")
        clash = sorted({a.name for a in aggs} & set(self._by))
        if clash:
            raise InvalidParameter(
                f"aggs: the result column {clash[0]!r} is also a group-by column (the result would hold it "
                "twice); group by a copy of the column under another name (with_column), or rename it"
            )
        unit = ctx.privacy_unit
        read = set(self._by) | _expr.columns_of(self._predicate) | {s.column for s in specs.values()}
        read |= set(distinct)
        read |= {b.column for b in below}
        for _, expr, _ in self._derived:  # every derived column is computed from its declared columns
            read |= _expr.columns_of(expr)
        if unit is not None:
            read.add(unit.id)
        columns = tuple(n for n, _ in ctx.domain.columns if n in read)
        plan = Plan(
            columns=columns,
            predicate=self._predicate,
            by=self._by,
            keys=self._keys if self._keys is not None or self._by else ((),),  # None: unknown keys
            id=None if unit is None else unit.id,
            max_rows=None if unit is None else unit.max_rows,
            max_groups=None if unit is None else unit.max_groups,
            sums=tuple(specs.values()),
            distinct=tuple(distinct),
            below=tuple(below),
            derived=tuple((name, expr) for name, expr, _ in self._derived),
        )
        return TableQuery(
            ctx, plan, tuple(aggs), self._budget, self._kinds(), self._share, self._selection, self._steps
        )
