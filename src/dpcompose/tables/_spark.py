"""The Spark engine: the :class:`~dpcompose.tables._engine.Plan` on a ``pyspark.sql.DataFrame``, bit-identical
to the Polars engine. Imported only when a Spark DataFrame is seen, so ``import dpcompose`` needs no Spark.

How the specified hash (:mod:`dpcompose.transformations._hash`) runs inside Spark:

* int and bool values: their int64 bit pattern, then SplitMix64 written in Spark SQL ``bigint``
  operations. The two wrapping steps (``+`` and ``*`` modulo ``2**64``) are one native operation where
  Spark's ``bigint`` arithmetic wraps (``spark.sql.ansi.enabled`` off, read from the expressions Spark
  builds: :func:`wrapping_arithmetic`), else built from 16- and 32-bit limbs whose partial products stay
  below ``2**50``, so no operation overflows where a wrapping ``bigint`` product raises (ANSI mode); the
  bits are the same either way. Everything else is ``^``, ``&``, ``|``, ``shiftleft`` and
  ``shiftrightunsigned``, which never overflow.
* float values: the IEEE-754 bit pattern by ``java.lang.Double.doubleToLongBits`` (via Spark's
  ``reflect``), which maps every NaN to ``0x7FF8000000000000`` as the spec does; ``-0.0`` is read as
  ``0.0`` first.
* strings: blake2b has no Spark SQL function, so the 8-byte blake2b code is computed once per distinct
  value — on the driver and broadcast when there are at most 65536, else by a Python UDF on the
  executors — and joined back to the rows. The UDF is defined inside a function (cloudpickle ships it by
  value) and needs only ``hashlib`` on the executors, not dpcompose.
* ordering: a key's unsigned order is the signed order of ``key ^ 2**63``, so ``row_number`` over that
  column keeps the rows with the smallest unsigned keys, as the Polars engine's ordinal rank does.

The grid (clamp, scale by ``2**-k``, round half to even) is integer and exact-float arithmetic, and the
sums add 16-bit halves in ``bigint`` exactly as the Polars engine does; the driver recombines them.

Examples:
    >>> signed_int64(0xFFFFFFFFFFFFFFFF), signed_int64(5)
    (-1, 5)
"""

from __future__ import annotations

import os
import shutil
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from dpcompose.errors import DomainMismatch, EngineUnavailable
from dpcompose.tables._engine import Aggregates, BelowSpec, Plan, SumSpec, collect_rows
from dpcompose.tables._engine import scalings as _scalings
from dpcompose.transformations._expr import ARITH, DATE_PARTS, FLOAT_OPS, Expr, lowered_cast
from dpcompose.transformations._hash import (
    NULL_CODE,
    ROW_SEED,
    SPLITMIX_GAMMA,
    SPLITMIX_M1,
    SPLITMIX_M2,
    string_code,
)

__all__ = [
    "FEW_STRINGS",
    "SelectSteps",
    "SparkEngine",
    "SparkUnavailable",
    "check_java",
    "code_columns",
    "fold_key",
    "is_spark_data",
    "local_session",
    "row_key_column",
    "signed_int64",
    "splitmix_columns",
    "string_code_frame",
    "string_code_table",
    "string_code_udf",
    "wrapping_arithmetic",
]

_M32 = 0xFFFFFFFF
_M16 = 0xFFFF
_SIGN = -(1 << 63)  # the bit pattern 0x8000000000000000 as a signed bigint


class SparkUnavailable(EngineUnavailable):
    """Spark cannot start here: pyspark is not installed, or no Java runtime is found."""


def signed_int64(u: int) -> int:
    """The signed int64 with the bit pattern of the unsigned 64-bit ``u``."""
    return u - (1 << 64) if u >= 1 << 63 else u


def is_spark_data(data: object) -> bool:
    """Whether ``data`` is a ``pyspark.sql.DataFrame`` (pyspark imported only if the type's module is)."""
    if type(data).__module__.split(".")[0] != "pyspark":
        return False
    from pyspark.sql import DataFrame

    return isinstance(data, DataFrame)


def check_java() -> str:
    """The ``java`` executable Spark will start (``$JAVA_HOME/bin/java``, else ``java`` on PATH).

    Raises:
        SparkUnavailable: no Java runtime found, with how to install one.
    """
    home = os.environ.get("JAVA_HOME")
    if home:
        exe = os.path.join(home, "bin", "java")
        if os.access(exe, os.X_OK):
            return exe
    found = shutil.which("java")
    if found is None:
        raise SparkUnavailable(
            "Spark needs a Java runtime (JDK 8, 11 or 17 for Spark 3.5): none found "
            f"(JAVA_HOME={home!r}, no 'java' on PATH). Install one (e.g. apt-get install "
            "openjdk-17-jre-headless) or set JAVA_HOME"
        )
    return found


def local_session(
    app_name: str = "dpcompose", cores: int = 2, shuffle_partitions: int = 4, memory: str = "1g"
) -> Any:
    """A local Spark session pinned to the loopback interface (``local[cores]``, UI off, few shuffle
    partitions, ``memory`` for the driver JVM, which in local mode runs the tasks too): for tests, docs and
    one-machine runs. On a cluster, build your own session instead.

    Raises:
        SparkUnavailable: pyspark is not installed, or no Java runtime is found.
    """
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise SparkUnavailable("pyspark is not installed: pip install 'dpcompose[spark]'") from None
    check_java()
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    return (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(app_name)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.default.parallelism", str(cores))
        .config("spark.driver.memory", memory)
        .getOrCreate()
    )


def _kind(dtype: Any) -> str:
    from pyspark.sql import types as T

    if isinstance(dtype, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return "int"
    if isinstance(dtype, (T.FloatType, T.DoubleType)):
        return "float"
    if isinstance(dtype, T.StringType):
        return "str"
    if isinstance(dtype, T.BooleanType):
        return "bool"
    if isinstance(dtype, T.DateType):
        return "date"
    return str(dtype.simpleString())


_SPARK_TYPES = {"int": "bigint", "float": "double", "str": "string", "bool": "boolean", "date": "date"}


def to_spark(e: Expr) -> Any:
    """The Spark Column for an engine-neutral expression (already
    :func:`~dpcompose.transformations._expr.typed`; Spark's null and NaN semantics are those of
    :mod:`dpcompose.transformations._expr`: null propagates, NaN equals NaN and is above every other
    float)."""
    from pyspark.sql import functions as F

    op = e.op
    if op in ARITH:  # on doubles, as every engine does (see dpcompose.transformations._expr)
        a, b = (to_spark(x).cast("double") for x in e.args)
        if op == "/":  # a zero divisor becomes null first: no division by zero, also in ANSI mode
            return a / F.when(b != F.lit(0.0), b)
        return a + b if op == "+" else a - b if op == "-" else a * b
    if op in FLOAT_OPS:
        x = to_spark(e.args[0]).cast("double")
        if op == "neg":
            return -x
        if op == "abs":
            return F.abs(x)
        r = F.bround(x, 0)  # half to even on the double's value
        return F.when(r == F.lit(0.0), F.lit(0.0)).otherwise(r)  # a zero result is +0.0, as on Polars
    if op == "cast":  # its semantics, in primitive operations
        return to_spark(lowered_cast(e))
    if op == "to_float":
        return to_spark(e.args[0]).cast("double")
    if op == "to_int":  # a bool, or a double lowered_cast has checked to be within int64 (ANSI mode too)
        return to_spark(e.args[0]).cast("bigint")
    if op == "when":
        cond, then, other = (to_spark(x) for x in e.args)
        return F.when(cond, then).otherwise(other)
    if op == "null":
        return F.lit(None).cast(_SPARK_TYPES[e.args[0]])
    if op == "starts_with":
        return to_spark(e.args[0]).startswith(F.lit(e.args[1].args[0]))
    if op == "contains":
        return to_spark(e.args[0]).contains(F.lit(e.args[1].args[0]))
    if op == "len_chars":
        return F.length(to_spark(e.args[0])).cast("bigint")
    if op in DATE_PARTS:  # bigint; weekday is ISO (Monday 1 … Sunday 7): Spark's dayofweek is Sunday 1
        d = to_spark(e.args[0])
        if op == "weekday":
            return ((F.dayofweek(d) + F.lit(5)) % F.lit(7) + F.lit(1)).cast("bigint")
        return {"year": F.year, "month": F.month, "day": F.dayofmonth}[op](d).cast("bigint")
    if op == "col":
        return F.col(e.args[0])
    if op == "lit":
        return F.lit(e.args[0])
    if op in ("and", "or"):
        a, b = to_spark(e.args[0]), to_spark(e.args[1])
        return a & b if op == "and" else a | b
    if op == "not":
        return ~to_spark(e.args[0])
    if op == "is_in":
        values = list(e.args[1])
        if not values:
            return F.lit(False)
        return F.coalesce(to_spark(e.args[0]).isin(values), F.lit(False))
    if op == "is_null":
        return to_spark(e.args[0]).isNull()
    a, b = to_spark(e.args[0]), to_spark(e.args[1])
    return {
        "==": lambda: a == b,
        "!=": lambda: a != b,
        "<": lambda: a < b,
        "<=": lambda: a <= b,
        ">": lambda: a > b,
        ">=": lambda: a >= b,
    }[op]()


# --- SplitMix64 in bigint operations that never overflow ------------------------------------------------


class SelectSteps:
    """A chain of ``select``s. An expression that uses a value several times is written over a
    materialised column (a plain reference, cheap to repeat), so expressions stay small; one ``select``
    per step computes that step for every column at once, and drops the previous step's columns."""

    def __init__(self, df: Any) -> None:
        self.df, self.base, self.n = df, list(df.columns), 0
        self.wraps = wrapping_arithmetic()  # bigint + and * wrap here: SplitMix64 in native operations

    def step(self, exprs: list[Any], keep: bool = False) -> list[Any]:
        """Materialise ``exprs`` (dropping the previous step's columns, unless kept); references to the new
        columns. ``keep``: carry the new columns through every later step."""
        from pyspark.sql import functions as F

        names = [f"__dp_t{self.n}_{i}" for i in range(len(exprs))]
        self.n += 1
        new = [e.alias(n) for e, n in zip(exprs, names, strict=True)]
        self.df = self.df.select(*[F.col(c) for c in self.base], *new)
        if keep:
            self.base = [*self.base, *names]
        return [F.col(n) for n in names]


def wrapping_arithmetic() -> bool:
    """Whether the ``bigint`` ``+`` and ``*`` that PySpark builds now wrap modulo ``2**64`` (Spark's legacy
    evaluation, ``spark.sql.ansi.enabled`` off), read from the evaluation mode bound into a probe of each:
    Spark binds it when it builds an expression, so expressions built next in this thread wrap too, even
    if the setting changes before their job runs. Anything unexpected (another Spark version's
    internals) answers False, and the limb arithmetic that never overflows is used."""
    from pyspark.sql import functions as F

    try:
        probes = (F.lit(1) + F.lit(1), F.lit(1) * F.lit(1))
        return all(str(p._jc.expr().evalMode().toString()) == "LEGACY" for p in probes)
    except Exception:  # no evalMode on this version, or a Spark Connect column: the safe path
        return False


def _add(c: Any, g: int, wraps: bool = False) -> Any:
    """``c + g`` modulo ``2**64`` (``c`` a bigint column reference, ``g`` an unsigned 64-bit constant): one
    addition when ``wraps`` (:func:`wrapping_arithmetic`), else in 32-bit limbs: no intermediate reaches
    ``2**34``."""
    from pyspark.sql import functions as F

    if wraps:
        return c + F.lit(signed_int64(g))
    lo = c.bitwiseAND(F.lit(_M32)) + F.lit(g & _M32)
    hi = (F.shiftrightunsigned(c, 32) + F.lit(g >> 32) + F.shiftright(lo, 32)).bitwiseAND(F.lit(_M32))
    return F.shiftleft(hi, 32).bitwiseOR(lo.bitwiseAND(F.lit(_M32)))


def _mul(x: Any, m: int, wraps: bool = False) -> Any:
    """``x * m`` modulo ``2**64``: one product when ``wraps`` (:func:`wrapping_arithmetic`), else with
    ``x = a·2**32 + b`` and ``m = c·2**32 + d`` the low word is that of ``b·d`` and the high word is
    ``hi(b·d) + a·d + b·c`` modulo ``2**32``; ``d`` and ``c`` are split into 16-bit halves so every partial
    product is below ``2**48`` and every sum below ``2**51``."""
    from pyspark.sql import functions as F

    if wraps:
        return x * F.lit(signed_int64(m))
    c, d = m >> 32, m & _M32
    d1, d0, c1, c0 = d >> 16, d & _M16, c >> 16, c & _M16
    a = F.shiftrightunsigned(x, 32)
    b = x.bitwiseAND(F.lit(_M32))
    t1 = b * F.lit(d1)
    low = b * F.lit(d0) + t1.bitwiseAND(F.lit(_M16)) * F.lit(1 << 16)  # b·d mod 2**48, < 2**49
    ad = a * F.lit(d0) + (a * F.lit(d1)).bitwiseAND(F.lit(_M16)) * F.lit(1 << 16)
    bc = b * F.lit(c0) + (b * F.lit(c1)).bitwiseAND(F.lit(_M16)) * F.lit(1 << 16)
    hi = (F.shiftright(t1, 16) + F.shiftright(low, 32) + ad + bc).bitwiseAND(F.lit(_M32))
    return F.shiftleft(hi, 32).bitwiseOR(low.bitwiseAND(F.lit(_M32)))


def _xorshift(c: Any, r: int) -> Any:
    from pyspark.sql import functions as F

    return c.bitwiseXOR(F.shiftrightunsigned(c, r))


def splitmix_columns(s: SelectSteps, xs: list[Any]) -> list[Any]:
    """SplitMix64's output function (the spec of :mod:`dpcompose.transformations._hash`) on each expression of
    ``xs`` (each used twice, so keep them small), in three ``select``s; the last xorshift is returned
    unmaterialised, for the next step to use."""
    w = s.wraps
    z0 = s.step([_add(x, int(SPLITMIX_GAMMA), w) for x in xs])
    z2 = s.step([_mul(_xorshift(z, 30), int(SPLITMIX_M1), w) for z in z0])
    z4 = s.step([_mul(_xorshift(z, 27), int(SPLITMIX_M2), w) for z in z2])
    return [_xorshift(z, 31) for z in z4]


def string_code_udf() -> Any:
    """The Spark UDF of a string's code (:func:`~dpcompose.transformations._hash.string_code` as a signed
    bigint; null for null), shipped to the executors by value: it needs only ``hashlib`` there."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    def code(v: str | None) -> int | None:  # shipped by value: needs hashlib only
        import hashlib

        if v is None:
            return None
        digest = hashlib.blake2b(v.encode("utf-8", "surrogatepass"), digest_size=8).digest()
        u = int.from_bytes(digest, "little")
        return u - (1 << 64) if u >= 1 << 63 else u

    return F.udf(code, T.LongType())


def _raw(name: str, kind: str) -> Any:
    """The value's 64-bit input to SplitMix64 (bigint bits; 0 for null)."""
    from pyspark.sql import functions as F

    c = F.col(name)
    if kind == "float":
        d = c.cast("double")
        d = F.when(d.isNull() | (d == F.lit(0.0)), F.lit(0.0)).otherwise(d)  # null (coded later), -0.0 -> 0.0
        bits = F.call_function("reflect", F.lit("java.lang.Double"), F.lit("doubleToLongBits"), d)
        return F.coalesce(bits.cast("bigint"), F.lit(0).cast("bigint"))
    if kind == "date":  # its days since 1970-01-01, as the Polars engine reads a Date (its int64 value)
        return F.coalesce(F.unix_date(c).cast("bigint"), F.lit(0).cast("bigint"))
    return F.coalesce(c.cast("bigint"), F.lit(0).cast("bigint"))


FEW_STRINGS = 1 << 16  # distinct strings up to this many are coded on the driver and broadcast


def string_code_table(df: Any, name: str) -> Any:
    """A frame ``(__dp_sv, __dp_sc)``: every non-null value of string column ``name`` of ``df`` and its
    blake2b code. Up to ``FEW_STRINGS`` distinct values are collected and coded on the driver (one small
    job) and the frame is broadcast; beyond, the UDF runs once per distinct value on the executors —
    either way far less than a Python call per row. Coding the values of the unfiltered column covers every
    value a filtered, capped subset holds."""
    from pyspark.sql import functions as F

    distinct = df.select(F.col(name).alias("__dp_sv")).where(F.col("__dp_sv").isNotNull()).distinct()
    few = distinct.limit(FEW_STRINGS + 1).collect()
    if len(few) <= FEW_STRINGS:
        return string_code_frame(df.sparkSession, [r[0] for r in few])
    return distinct.select(F.col("__dp_sv"), string_code_udf()(F.col("__dp_sv")).alias("__dp_sc"))


def string_code_frame(spark: Any, values: list[str]) -> Any:
    """The broadcast frame ``(__dp_sv, __dp_sc)`` of ``values`` (public strings, coded on the driver)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    schema = T.StructType([T.StructField("__dp_sv", T.StringType()), T.StructField("__dp_sc", T.LongType())])
    return F.broadcast(spark.createDataFrame([(v, signed_int64(string_code(v))) for v in values], schema))


def row_key_column(
    df: Any, columns: list[str], kinds: Mapping[str, str], out: str, tables: Mapping[str, Any]
) -> Any:
    """``df`` with the column ``out``: the row key over ``columns`` (spec order), as ``key ^ 2**63`` so
    that the signed order of ``out`` is the unsigned order of the key. ``tables``: for each string
    column, its :func:`string_code_table` frame."""
    from pyspark.sql import functions as F

    original = list(df.columns)
    s, codes = code_columns(df, columns, kinds, tables)
    key = fold_key(s, [codes[c] for c in columns])
    return s.df.select(*[F.col(c) for c in original], key.alias(out))


def code_columns(
    df: Any, columns: list[str], kinds: Mapping[str, str], tables: Mapping[str, Any]
) -> tuple[SelectSteps, dict[str, Any]]:
    """The specified code of each of ``columns`` (:mod:`dpcompose.transformations._hash`, as a signed
    bigint), as materialised columns carried through every later step of the returned
    :class:`SelectSteps`, and references to them. ``tables``: for each string column, its
    :func:`string_code_table` frame (joined once)."""
    from pyspark.sql import functions as F

    strings = {c: f"__dp_sc{i}" for i, c in enumerate(columns) if kinds[c] == "str"}
    for c, code_col in strings.items():
        table = tables[c].select(F.col("__dp_sv").alias(f"{code_col}_v"), F.col("__dp_sc").alias(code_col))
        df = df.join(table, F.col(c) == F.col(f"{code_col}_v"), "left").drop(f"{code_col}_v")
    s = SelectSteps(df)
    numeric = [c for c in columns if c not in strings]
    raw = s.step([_raw(c, kinds[c]) for c in numeric]) if numeric else []
    mixed = dict(zip(numeric, splitmix_columns(s, raw), strict=True)) if numeric else {}
    null = F.lit(signed_int64(int(NULL_CODE)))
    codes = []
    for c in columns:
        code = F.col(strings[c]) if c in strings else mixed[c]
        codes.append(F.when(F.col(c).isNull(), null).otherwise(code))
    return s, dict(zip(columns, s.step(codes, keep=True), strict=True))


def fold_key(s: SelectSteps, codes: list[Any]) -> Any:
    """The key ``acc = splitmix64(acc ^ code)`` from :data:`~dpcompose.transformations._hash.ROW_SEED` over
    the code columns ``codes`` (in order), as ``key ^ 2**63`` (its signed order is the key's unsigned order);
    unmaterialised, for the caller's next step."""
    from pyspark.sql import functions as F

    acc: Any = F.lit(signed_int64(int(ROW_SEED)))
    for code in codes:
        acc = splitmix_columns(s, [acc.bitwiseXOR(code)])[0]
    return acc.bitwiseXOR(F.lit(_SIGN))


def _grid_col(spec: SumSpec) -> Any:
    """The summed values (bigint): the grid values, or ⌊g²/2**shift⌋ of them for a ``square`` spec."""
    from pyspark.sql import functions as F

    g = _grid_values(spec)
    return F.shiftright(g * g, spec.shift) if spec.square else g  # g² <= 2**62: no overflow, ANSI mode too


def _policy_values(spec: BelowSpec) -> Any:
    """The column's values under the NaN/null policy: fill, then clamp (no grid)."""
    from pyspark.sql import functions as F

    c = F.col(spec.column)
    if spec.kind == "float":
        d = c.cast("double")
        d = F.when(d.isNull() | F.isnan(d), F.lit(float(spec.fill))).otherwise(d)
        return F.least(F.greatest(d, F.lit(float(spec.lo))), F.lit(float(spec.hi)))
    v = F.coalesce(c.cast("bigint"), F.lit(int(spec.fill)).cast("bigint"))
    return F.least(F.greatest(v, F.lit(int(spec.lo)).cast("bigint")), F.lit(int(spec.hi)).cast("bigint"))


def _grid_values(spec: SumSpec) -> Any:
    """The column's grid values (bigint): fill nulls (and NaN), clamp, scale by 2**-k, round half to even."""
    from pyspark.sql import functions as F

    c = F.col(spec.column)
    if spec.kind == "float":
        d = c.cast("double")
        fill = F.lit(float(spec.fill))
        d = F.when(d.isNull() | F.isnan(d), fill).otherwise(d)
        d = F.least(F.greatest(d, F.lit(float(spec.lo))), F.lit(float(spec.hi)))
        for factor in _scalings(spec.k):
            d = d * F.lit(factor)  # exact: power-of-two scalings of |x| <= 2**31·2**k
        f = F.floor(d)  # bigint; d - f is exact (|d| <= 2**31)
        r = d - f.cast("double")
        up = (r > F.lit(0.5)) | ((r == F.lit(0.5)) & (f.bitwiseAND(F.lit(1)) == F.lit(1)))
        return f + up.cast("bigint")
    v = F.coalesce(c.cast("bigint"), F.lit(int(spec.fill)).cast("bigint"))
    v = F.least(F.greatest(v, F.lit(int(spec.lo)).cast("bigint")), F.lit(int(spec.hi)).cast("bigint"))
    if spec.k <= 0:
        return v
    step = 1 << spec.k
    q = F.shiftright(v, spec.k)  # floor division by 2**k
    r = v.bitwiseAND(F.lit(step - 1))
    half = step >> 1
    up = (r > F.lit(half)) | ((r == F.lit(half)) & (q.bitwiseAND(F.lit(1)) == F.lit(1)))
    return q + up.cast("bigint")


class SparkEngine:
    """The Spark implementation of :class:`~dpcompose.tables._engine.Engine`."""

    name = "spark"

    def schema(self, data: Any) -> Mapping[str, str]:
        twice = sorted(n for n, c in Counter(f.name for f in data.schema.fields).items() if c > 1)
        if twice:  # a dict would keep one of them, and the query would fail after its charge
            raise DomainMismatch(
                f"the Spark DataFrame has column(s) {', '.join(map(repr, twice))} more than once (a join "
                "keeps both sides' columns): rename or drop the copies"
            )
        return {f.name: _kind(f.dataType) for f in data.schema.fields}

    def probe(self, data: Any) -> Callable[[], str | None]:
        """The session's own state, read on the driver: stopped from Python (pyspark drops its handle to
        the JVM context), stopped in the JVM (``SparkContext.isStopped``, one Py4J call of a few
        milliseconds), or a JVM that does not answer. No job runs and no row is read."""
        session = data.sparkSession  # the probe keeps the session, not the DataFrame

        def alive() -> str | None:
            jsc = session.sparkContext._jsc  # pyspark sets it to None when the context is stopped
            if jsc is None:
                return "its SparkContext is stopped"
            try:
                stopped = jsc.sc().isStopped()
            except Exception:  # Py4J cannot reach the JVM
                return "the JVM of its SparkContext does not answer (the driver process is gone)"
            return "its SparkContext is stopped" if stopped else None

        return alive

    def aggregate(self, data: Any, plan: Plan) -> Aggregates:
        from pyspark.sql import functions as F

        kinds = self.schema(data)
        wide = {"int": "bigint", "float": "double"}
        df = data.select(
            *[F.col(c).cast(wide[kinds[c]]).alias(c) if kinds[c] in wide else F.col(c) for c in plan.columns]
        )
        for name, e in plan.derived:  # derived columns (row-wise), before the filter that may read them;
            df = df.withColumn(name, to_spark(e).cast("double"))  # always double, as declared
        if plan.predicate is not None:
            df = df.filter(to_spark(plan.predicate))
        by = list(plan.by)
        capped = plan.id is not None and (plan.max_rows is not None or plan.max_groups is not None)
        if by and plan.keys is not None:
            keys = F.broadcast(self._keys_frame(data.sparkSession, plan, df.schema))  # public, small
            cond = [df[c].eqNullSafe(keys[f"__dp_k_{c}"]) for c in by]
            df = df.join(keys, on=cond, how="left_semi")
        if capped:
            df = self._capped(df, plan, kinds)
        aggs = [F.count(F.lit(1)).alias("__dp_n")]
        for i, spec in enumerate(plan.sums):
            u = _grid_col(spec) + F.lit(1 << 31)  # in [0, 2**32]
            aggs.append(F.sum(F.shiftright(u, 16)).alias(f"__dp_hi{i}"))
            aggs.append(F.sum(u.bitwiseAND(F.lit(_M16))).alias(f"__dp_lo{i}"))
        for i, c in enumerate(plan.distinct):  # exact values (int, str, bool); countDistinct skips nulls
            aggs.append(F.countDistinct(F.col(c)).alias(f"__dp_d{i}"))
        for i, b in enumerate(plan.below):
            v = _policy_values(b)
            hit = v < F.lit(b.value) if b.strict else v <= F.lit(b.value)
            aggs.append(F.sum(hit.cast("bigint")).alias(f"__dp_b{i}"))
        return collect_rows(df.groupBy(*by).agg(*aggs).collect(), plan)

    @staticmethod
    def _capped(df: Any, plan: Plan, kinds: Mapping[str, str]) -> Any:
        """``df`` after the caps, in one window partitioned by the identifier: the rows of the
        identifier's ``max_groups`` groups with the smallest group keys (``dense_rank`` by the key, then by
        the group's values: distinct groups get distinct ranks, so a 64-bit collision never lets more
        than ``max_groups`` through), then its ``max_rows`` rows with the smallest row keys
        (``row_number``; equal keys are identical rows). Both keys are computed once per row, over one set
        of code columns; the second window reuses the first one's partitioning (no second shuffle)."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        assert plan.id is not None
        original = list(df.columns)
        tables: dict[str, Any] = {}
        for c in plan.columns:
            if kinds[c] != "str":
                continue
            if c in plan.by and plan.keys is not None:  # the rows hold only the keys' values: no job
                values = sorted({k[plan.by.index(c)] for k in plan.keys} - {None})
                tables[c] = string_code_frame(df.sparkSession, values)
            else:
                tables[c] = string_code_table(df, c)
        s, codes = code_columns(df, list(plan.columns), kinds, tables)
        max_groups = plan.max_groups if plan.by else None  # without a group-by, no group cap
        keys = []  # each materialised before the next is folded (a fold's steps drop unkept columns)
        if max_groups is not None:
            keys += s.step([fold_key(s, [codes[c] for c in plan.group_pair])], keep=True)
        if plan.max_rows is not None:
            keys += s.step([fold_key(s, [codes[c] for c in plan.columns])], keep=True)
        df = s.df.select(*[F.col(c) for c in original], *keys)  # the code columns are not shuffled
        if max_groups is not None:
            w = Window.partitionBy(plan.id).orderBy(keys[0], *[F.col(c) for c in plan.group_pair[1:]])
            df = df.withColumn("__dp_g", F.dense_rank().over(w)).filter(F.col("__dp_g") <= max_groups)
        if plan.max_rows is not None:
            w = Window.partitionBy(plan.id).orderBy(keys[-1])
            df = df.withColumn("__dp_r", F.row_number().over(w)).filter(F.col("__dp_r") <= plan.max_rows)
        return df.select(*[F.col(c) for c in original])

    @staticmethod
    def _keys_frame(spark: Any, plan: Plan, schema: Any) -> Any:
        from pyspark.sql import types as T

        assert plan.keys is not None
        fields = [T.StructField(f"__dp_k_{c}", schema[c].dataType, True) for c in plan.by]
        return spark.createDataFrame([tuple(k) for k in plan.keys], T.StructType(fields))
