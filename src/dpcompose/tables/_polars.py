"""The Polars engine: eager DataFrames, LazyFrames, and pandas DataFrames (converted once with
``polars.from_pandas``). Imported only when such data is seen, so ``import dpcompose`` needs no Polars.

Exactness of the integer sums: every grid value has ``|v| <= 2**31`` (:mod:`dpcompose.tables._fixed`);
each value is split into ``u = v + 2**31 = hi·2**16 + lo`` with ``0 <= lo < 2**16`` and
``0 <= hi <= 2**16``, and ``hi`` and ``lo`` are summed separately in int64, so both sums are exact for
fewer than ``2**47`` rows per group — far beyond a Polars frame (Polars indexes rows with a u32, or a u64
in its big-index build). The driver recombines ``(Σhi − n·2**15)·2**16 + Σlo`` exactly, column by column in
int64 (:func:`~dpcompose.tables._engine.combine_halves`: exact for counts below ``2**32``, and in Python
integers beyond).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from dpcompose.errors import EngineUnavailable
from dpcompose.tables._caps import first_groups_per_identifier, first_per_identifier
from dpcompose.tables._engine import Aggregates, BelowSpec, Plan, SumSpec, collect_columns
from dpcompose.tables._engine import scalings as _scalings
from dpcompose.transformations._expr import ARITH, DATE_PARTS, FLOAT_OPS, Expr, lowered_cast
from dpcompose.transformations._hash import NULL_CODE, ROW_SEED, fold_row_key, value_codes

__all__ = [
    "PolarsEngine",
    "codes_and_identity",
    "collect_frame",
    "in_known_keys",
    "is_polars_data",
    "series_codes",
]

_INDEX = "__dp_index"


def is_polars_data(data: object) -> bool:
    """Whether ``data`` is a Polars DataFrame/LazyFrame or a pandas DataFrame (with polars installed; it is
    converted with ``polars.from_pandas``, which needs pyarrow)."""
    try:
        import polars as pl
    except ImportError:  # pragma: no cover - polars missing
        return False
    if isinstance(data, (pl.DataFrame, pl.LazyFrame)):
        return True
    return type(data).__name__ == "DataFrame" and type(data).__module__.startswith("pandas")


def _kind(dtype: Any) -> str:
    import polars as pl

    if dtype in (pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.UInt8, pl.UInt16, pl.UInt32):
        return "int"
    if dtype in (pl.Float32, pl.Float64):
        return "float"
    if dtype == pl.String:
        return "str"
    if dtype == pl.Boolean:
        return "bool"
    if dtype == pl.Date:
        return "date"
    return str(dtype)


def _from_pandas(data: Any) -> Any:
    """``polars.from_pandas(data)``, with a missing pyarrow (which Polars needs to convert most pandas
    frames) refused as :class:`EngineUnavailable` saying what to do, before anything is charged."""
    import polars as pl

    try:
        return pl.from_pandas(data)
    except ImportError as exc:  # (ModuleNotFoundError: pyarrow, or pandas itself)
        raise EngineUnavailable(
            f"a pandas DataFrame is read through polars.from_pandas, which needs a module missing here "
            f"({exc}): install pyarrow (pip install pyarrow), or pass a Polars DataFrame instead, e.g. "
            "polars.DataFrame(df.to_dict('list')). Nothing ran and nothing was spent"
        ) from None


def _lazy(data: Any) -> Any:
    import polars as pl

    if isinstance(data, pl.LazyFrame):
        return data
    if isinstance(data, pl.DataFrame):
        return data.lazy()
    return _from_pandas(data).lazy()


def _divide(columns: Any) -> Any:
    """The IEEE quotient of two Float64 Series (null where either is null), computed by numpy."""
    import polars as pl

    num, den = (c.fill_null(1.0).to_numpy() for c in columns)
    with np.errstate(all="ignore"):  # a zero divisor's row is null in the result (see to_polars)
        q = np.divide(num, den)
    return pl.Series(q).set(columns[0].is_null() | columns[1].is_null(), None)


def _ieee_quotient(a: Any, b: Any) -> Any:
    """``a / b`` per IEEE 754, on every Polars version and engine.

    Polars divides by a scalar divisor (a literal, a constant subtree, or a column Polars holds as one
    value) as multiplication by its reciprocal: ``x / 3.0`` is off in the last bit for about a third of
    values, and ``x / 1e-310`` is ``x * inf``. Whether a divisor is held as a scalar is Polars' choice
    (its optimizer folds constants and broadcasts a ``when`` whose condition is all true), so the quotient
    is taken by numpy, whose division is IEEE for arrays and scalars alike: elementwise, so the streaming
    engine runs it batch by batch."""
    import polars as pl

    return pl.map_batches([a, b], _divide, return_dtype=pl.Float64, is_elementwise=True)


def to_polars(e: Expr) -> Any:
    """The Polars expression for an engine-neutral one (already
    :func:`~dpcompose.transformations._expr.typed`)."""
    import polars as pl

    op = e.op
    if op in ARITH:  # on doubles, as every engine does (see dpcompose.transformations._expr)
        a, b = (to_polars(x).cast(pl.Float64) for x in e.args)
        if op == "/":  # null for a zero (or null) divisor
            return pl.when(b != 0).then(_ieee_quotient(a, b))
        return a + b if op == "+" else a - b if op == "-" else a * b
    if op in FLOAT_OPS:
        x = to_polars(e.args[0]).cast(pl.Float64)
        if op == "neg":
            return -x
        if op == "abs":
            return x.abs()
        r = x.round(0, mode="half_to_even")
        return pl.when(r == 0).then(0.0).otherwise(r)  # a zero result is +0.0, as on Spark
    if op == "cast":  # its semantics, in primitive operations
        return to_polars(lowered_cast(e))
    if op == "to_float":
        return to_polars(e.args[0]).cast(pl.Float64)
    if op == "to_int":  # a bool, or a double lowered_cast has checked to be within int64
        return to_polars(e.args[0]).cast(pl.Int64, strict=False)
    if op == "when":
        cond, then, other = (to_polars(x) for x in e.args)
        return pl.when(cond).then(then).otherwise(other)
    if op == "null":
        return pl.lit(
            None,
            dtype={
                "int": pl.Int64,
                "float": pl.Float64,
                "str": pl.String,
                "bool": pl.Boolean,
                "date": pl.Date,
            }[e.args[0]],
        )
    if op == "starts_with":
        return to_polars(e.args[0]).str.starts_with(e.args[1].args[0])
    if op == "contains":
        return to_polars(e.args[0]).str.contains(e.args[1].args[0], literal=True)
    if op == "len_chars":
        return to_polars(e.args[0]).str.len_chars().cast(pl.Int64)
    if op in DATE_PARTS:  # Int64; weekday is ISO (Monday 1 … Sunday 7)
        d = to_polars(e.args[0]).dt
        return {"year": d.year, "month": d.month, "day": d.day, "weekday": d.weekday}[op]().cast(pl.Int64)
    if op == "col":
        return pl.col(e.args[0])
    if op == "lit":
        return pl.lit(e.args[0])
    if op in ("and", "or"):
        a, b = to_polars(e.args[0]), to_polars(e.args[1])
        return a & b if op == "and" else a | b
    if op == "not":
        return ~to_polars(e.args[0])
    if op == "is_in":
        return to_polars(e.args[0]).is_in(list(e.args[1])).fill_null(False)
    if op == "is_null":
        return to_polars(e.args[0]).is_null()
    a, b = to_polars(e.args[0]), to_polars(e.args[1])
    return {
        "==": lambda: a == b,
        "!=": lambda: a != b,
        "<": lambda: a < b,
        "<=": lambda: a <= b,
        ">": lambda: a > b,
        ">=": lambda: a >= b,
    }[op]()


def series_codes(series: Any) -> npt.NDArray[np.uint64]:
    """The specified 64-bit code of every value of a Polars Series
    (:mod:`dpcompose.transformations._hash`)."""
    return codes_and_identity(series)[0]


def codes_and_identity(series: Any) -> tuple[npt.NDArray[np.uint64], list[npt.NDArray[Any]]]:
    """A Series' codes (:func:`series_codes`) and its identity (:mod:`dpcompose.tables._caps`): for a
    string column, one index per distinct value (null: the number of distinct values), else the codes and,
    when there are nulls, the null mask."""
    import polars as pl

    if series.dtype == pl.String:  # hashed once per distinct value, mapped back through its index
        distinct = series.drop_nulls().unique().sort()
        n = len(distinct)
        # every value is among the sorted distinct ones: its binary-search position is its index (a
        # search allocates only the result, where a hash join or replace allocates ten times the column)
        index = distinct.search_sorted(series).to_numpy().astype(np.uint32, copy=False)
        nulls = series.is_null().to_numpy()
        if nulls.any():
            index = np.where(nulls, np.uint32(n), index)
        table = np.append(value_codes(distinct.to_numpy().astype(object)), NULL_CODE).astype(np.uint64)
        return table[index], [index]
    nulls = series.is_null().to_numpy()
    if series.dtype == pl.Boolean:
        values = series.fill_null(False).to_numpy()
    elif series.dtype in (pl.Float32, pl.Float64):
        values = series.cast(pl.Float64).fill_null(0.0).to_numpy()
    else:
        values = series.cast(pl.Int64).fill_null(0).to_numpy()
    if not nulls.any():
        codes = value_codes(values)
        return codes, [codes]
    codes = value_codes(values, nulls)
    return codes, [codes, nulls]


def _grid_expr(spec: SumSpec) -> Any:
    """The summed values (Int64): the grid values, or ⌊g²/2**shift⌋ of them for a ``square`` spec."""
    g = _grid_values(spec)
    return (g * g) // (1 << spec.shift) if spec.square else g  # g² <= 2**62: no overflow


def _policy_values(spec: BelowSpec) -> Any:
    """The column's values under the NaN/null policy: fill, then clamp (no grid)."""
    import polars as pl

    c = pl.col(spec.column)
    if spec.kind == "float":
        c = c.cast(pl.Float64).fill_nan(float(spec.fill)).fill_null(float(spec.fill))
        return c.clip(float(spec.lo), float(spec.hi))
    return c.cast(pl.Int64).fill_null(int(spec.fill)).clip(int(spec.lo), int(spec.hi))


def _grid_values(spec: SumSpec) -> Any:
    """The column's grid values (Int64): fill nulls (and NaN), clamp, scale by 2**-k, round half to even."""
    import polars as pl

    c = pl.col(spec.column)
    if spec.kind == "float":
        c = c.cast(pl.Float64).fill_nan(float(spec.fill)).fill_null(float(spec.fill))
        c = c.clip(float(spec.lo), float(spec.hi))
        for factor in _scalings(spec.k):
            c = c * factor  # exact: |x·2**-k| <= 2**31, power-of-two scalings
        return c.round(0, mode="half_to_even").cast(pl.Int64)
    c = c.cast(pl.Int64).fill_null(int(spec.fill)).clip(int(spec.lo), int(spec.hi))
    if spec.k <= 0:
        return c
    step = 1 << spec.k
    q = c // step  # floor division
    r = c - q * step
    half = step >> 1
    up = (r > half) | ((r == half) & (q % 2 == 1))
    return q + up.cast(pl.Int64)


def _keys_frame(plan: Plan, schema: Any) -> Any:
    """The known keys as a frame with the ``by`` columns' dtypes of ``schema``."""
    import polars as pl

    assert plan.keys is not None  # called for known keys only
    columns = {}
    for j, name in enumerate(plan.by):
        columns[name] = pl.Series(name, [k[j] for k in plan.keys], dtype=schema[name])
    return pl.DataFrame(columns)


def collect_frame(out: Any, plan: Plan) -> Aggregates:
    """:class:`Aggregates` from the engine's result frame (the ``by`` columns, then the aggregates in the
    order of :func:`~dpcompose.tables._engine.collect_rows`), column by column: the same result as
    ``collect_rows(out.iter_rows(), plan)`` without a Python object per row and value.

    Known keys are aligned by a left join of the keys (nulls equal) onto the result, absent keys reading 0;
    unknown keys are sorted by Polars with nulls last, which is :func:`~dpcompose.tables._engine.key_order`
    (ints by value, ``False < True``, strings by their UTF-8 bytes, that is by code point); the aggregates
    are read as int64 arrays and the halves recombined in int64
    (:func:`~dpcompose.tables._engine.combine_halves` states why that is exact)."""
    import polars as pl

    by = list(plan.by)
    values = [c for c in out.columns if c not in by]  # the count first
    if not by:  # one row: the total (count 0 on an empty frame: zeros, see collect_columns)
        keys: tuple[tuple[Any, ...], ...] = ((),)
    elif plan.keys is None:  # only the keys present (a group has count >= 1; a count 0 would be absent)
        out = out.filter(pl.col(values[0]) != 0).sort(by, nulls_last=True)
        keys = tuple(out.select(by).rows())
    else:
        keys = plan.keys
        frame = _keys_frame(plan, out.schema).with_row_index(_INDEX)
        out = frame.join(out, on=by, how="left", nulls_equal=True).sort(_INDEX)
    out = out.select(pl.col(values).fill_null(0).cast(pl.Int64))
    columns = [np.array(out.get_column(c).to_numpy(), dtype=np.int64) for c in values]
    return collect_columns(keys, columns[0], columns[1:], plan)


def _alive() -> str | None:
    return None


def _valid_rows(df: Any, plan: Plan) -> npt.NDArray[np.bool_] | None:
    """The rows of ``df`` that pass the filter and are in the known keys (None: every row), as a mask."""

    valid = None
    if plan.predicate is not None:  # a null predicate drops the row, as a filter does
        valid = _per_row(df.select(to_polars(plan.predicate).fill_null(False)).to_series().to_numpy(), df)
    if plan.by and plan.keys is not None:
        known = _per_row(df.select(in_known_keys(plan, df.schema)).to_series().to_numpy(), df)
        valid = known if valid is None else valid & known
    return valid


def _per_row(mask: npt.NDArray[Any], df: Any) -> npt.NDArray[np.bool_]:
    """``mask`` as one bool per row of ``df``: an expression that reads no column (``pl.lit(True)``)
    selects a single value, which holds for every row."""
    out = np.asarray(mask, dtype=bool)
    if out.shape != (df.height,):
        out = np.broadcast_to(out.reshape(-1)[:1], (df.height,)).copy()
    return out


def in_known_keys(plan: Plan, schema: Any) -> Any:
    """Whether a row's ``by`` values are one of the plan's known keys (nulls equal), as a Polars
    expression: the rows a semi-join with the keys keeps, without the join's copy of the frame."""
    import polars as pl

    keys = _keys_frame(plan, schema)
    if len(plan.by) == 1:
        return pl.col(plan.by[0]).is_in(keys.to_series().implode(), nulls_equal=True)
    listed = keys.select(pl.struct(list(plan.by))).to_series().implode()
    return pl.struct(list(plan.by)).is_in(listed, nulls_equal=True)


def _kept(df: Any, plan: Plan, valid: npt.NDArray[np.bool_] | None) -> npt.NDArray[np.bool_]:
    """The rows the caps keep (:mod:`dpcompose.tables._caps`) among the ``valid`` rows (None: all): the
    ``max_groups`` groups per identifier with the smallest keys ``row_keys([h(id), h(by_1), …])`` over
    :attr:`Plan.group_pair`, then among their rows the ``max_rows`` rows per identifier with the smallest
    row keys over ``plan.columns``. Rows that are not valid form identifiers of their own (the validity is
    part of the identity) and are dropped at the end. Row keys are folded in one column at a time, so the
    frame's codes are never all held at once."""
    assert plan.id is not None
    n = df.height
    codes: dict[str, npt.NDArray[np.uint64]] = {}
    identity: dict[str, list[npt.NDArray[Any]]] = {}

    def read(name: str) -> npt.NDArray[np.uint64]:
        if name not in codes:
            codes[name], identity[name] = codes_and_identity(df.get_column(name))
            if name == plan.id and valid is not None:
                identity[name] = [valid, *identity[name]]
        return codes[name]

    keep: npt.NDArray[np.bool_] | None = None
    if plan.max_groups is not None and plan.by:
        pair = plan.group_pair
        gkey = np.full(n, ROW_SEED, dtype=np.uint64)
        for c in pair:
            fold_row_key(gkey, read(c))
        groups = [a for c in pair[1:] for a in identity[c]]
        keep = first_groups_per_identifier(identity[plan.id], groups, gkey, plan.max_groups)
        del gkey, groups
    if plan.max_rows is None:
        assert keep is not None
        return keep if valid is None else keep & valid
    key = np.full(n, ROW_SEED, dtype=np.uint64)
    for c in plan.columns:
        fold_row_key(key, read(c) if c in codes or c == plan.id else series_codes(df.get_column(c)))
    ident = identity[plan.id]
    if keep is None:
        keep = first_per_identifier(ident, key, plan.max_rows)
    else:  # the rows the group cap dropped form identifiers of their own, dropped again below
        keep &= first_per_identifier([keep, *ident], key, plan.max_rows)
    if valid is not None:
        keep &= valid
    return keep


class PolarsEngine:
    """The Polars implementation of :class:`~dpcompose.tables._engine.Engine`."""

    name = "polars"

    def schema(self, data: Any) -> Mapping[str, str]:
        import polars as pl

        if isinstance(data, pl.LazyFrame):
            schema = data.collect_schema()
        elif isinstance(data, pl.DataFrame):
            schema = data.schema
        else:  # pandas: converted once (the conversion reads metadata and shares buffers where it can)
            schema = _from_pandas(data).schema
        return {name: _kind(dtype) for name, dtype in schema.items()}

    def probe(self, data: Any) -> Callable[[], str | None]:
        """Always alive: Polars runs in this process, with no session that could stop."""
        return _alive

    def aggregate(self, data: Any, plan: Plan) -> Aggregates:
        import polars as pl

        lazy = _lazy(data)  # a pandas frame is converted once
        kinds = {name: _kind(dtype) for name, dtype in lazy.collect_schema().items()}
        wide = {"int": pl.Int64, "float": pl.Float64}
        # a query reading no column (a bare count) keeps the frame: selecting no column leaves no rows
        lf = (
            lazy.select(
                [pl.col(c).cast(wide[kinds[c]]) if kinds[c] in wide else pl.col(c) for c in plan.columns]
            )
            if plan.columns
            else lazy
        )
        for name, e in plan.derived:  # derived columns (row-wise, in order: one may read an earlier one),
            # before the filter that may read them; always double, as declared (a bare int column too)
            lf = lf.with_columns(to_polars(e).cast(pl.Float64).alias(name))
        by = list(plan.by)
        capped = plan.id is not None and (plan.max_rows is not None or plan.max_groups is not None)
        if capped and isinstance(data, pl.DataFrame):
            # an eager frame's own columns are read in place (the projection shares their buffers): the
            # filter and the known keys become a mask, and the capped frame is never copied whole
            df = lf.collect()
            keep = _kept(df, plan, _valid_rows(df, plan))
            lf = df.lazy().filter(pl.Series(keep))
        else:
            if plan.predicate is not None:
                lf = lf.filter(to_polars(plan.predicate))
            if by and plan.keys is not None:
                lf = lf.filter(in_known_keys(plan, lf.collect_schema()))
            if capped:  # a lazy plan is evaluated once, filtered: its rows are read once
                df = lf.collect()
                lf = df.lazy().filter(pl.Series(_kept(df, plan, None)))
        aggs = [pl.len().cast(pl.Int64).alias("__dp_n")]
        for i, spec in enumerate(plan.sums):
            u = _grid_expr(spec) + (1 << 31)
            aggs.append((u // 65536).sum().cast(pl.Int64).alias(f"__dp_hi{i}"))
            aggs.append((u % 65536).sum().cast(pl.Int64).alias(f"__dp_lo{i}"))
        for i, c in enumerate(plan.distinct):  # exact values (int, str, bool), nulls not counted
            aggs.append(pl.col(c).drop_nulls().n_unique().cast(pl.Int64).alias(f"__dp_d{i}"))
        for i, b in enumerate(plan.below):
            v = _policy_values(b)
            hit = v < b.value if b.strict else v <= b.value
            aggs.append(hit.cast(pl.Int64).sum().alias(f"__dp_b{i}"))
        # the streaming engine aggregates in batches (exact integer sums: the same totals in any order)
        out = (lf.group_by(by).agg(aggs) if by else lf.select(aggs)).collect(engine="streaming")
        return collect_frame(out, plan)
