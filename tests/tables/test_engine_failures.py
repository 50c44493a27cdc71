"""A dead engine spends nothing, and a failing charged job shows none of its text (issue 32, items 3 and 9).

* Before each charge a Context checks that its engine can run a job (the engine's own state, never the
  data): with Spark stopped, releases were charged and then failed as the data's fault (a budget of 4/5
  went to 0 with no answer); now each raises ``EngineUnavailable`` and spends nothing.
* A charged job that fails raises a fixed text only: an ``Exception`` as ``DomainMismatch`` (its
  ``__context__`` held the engine's message, with the private value), a ``BaseException``
  (``SystemExit``, ``KeyboardInterrupt``, Polars' ``PanicException``) as the same type.
* ``quantile(candidates=np.array(1.0))`` and ``/``, ``//``, ``%``, ``**`` on expressions raised raw
  ``TypeError``s.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import traceback
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.exceptions import PanicException

import dpcompose as dp
from dpcompose.tables._engine import JOB_FAILED, Aggregates, Plan, run_job
from dpcompose.tables._engines import engine_check
from dpcompose.tables._polars import PolarsEngine

A = dp.tables
SCHEMA = {"u": dp.Column(int), "x": dp.Column(int, bounds=(0, 10))}
SECRET = "secret-4242"


def _ctx(data: Any, shares: int = 5) -> dp.Context:
    return dp.Context(
        data, SCHEMA, privacy_unit=dp.unit_of("u", 1), privacy_loss=1.0, split_evenly_over=shares
    )


def _counting_frame(scans: list[int]) -> pl.LazyFrame:
    """A lazy frame that records every time its plan runs."""

    def seen(df: pl.DataFrame) -> pl.DataFrame:
        scans.append(1)
        return df

    return pl.LazyFrame({"u": [1, 2, 3], "x": [1, 2, 3]}).map_batches(seen)


def _raising_frame(exc: Callable[[str], BaseException]) -> pl.LazyFrame:
    """A lazy frame whose own plan raises ``exc`` with a private value in its message."""

    def fail(df: pl.DataFrame) -> pl.DataFrame:
        raise exc(f"row 7 holds {SECRET}")

    return pl.LazyFrame({"u": [1, 2], "x": [1, 2]}).map_batches(fail)


# --- the liveness check, on a fake dead engine (no Spark needed) -------------------------------------


@pytest.mark.parametrize("how", ["reports", "raises"])
def test_a_dead_engine_is_refused_before_the_charge(monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """The engine's probe reports it down (or cannot reach it): five releases raise EngineUnavailable, run
    nothing and spend nothing; once it is back, the next release gets the next share."""
    down = [False]

    def probe(self: PolarsEngine, data: Any) -> Callable[[], str | None]:
        def alive() -> str | None:
            if down[0] and how == "raises":
                raise ConnectionRefusedError(111, "refused")
            return "its driver is gone" if down[0] else None

        return alive

    monkeypatch.setattr(PolarsEngine, "probe", probe)
    scans: list[int] = []
    ctx = _ctx(_counting_frame(scans))
    ctx.query().agg(A.count()).release()
    assert ctx.remaining()["epsilon"] == Fraction(4, 5) and len(scans) == 1
    down[0] = True
    for _ in range(5):
        with pytest.raises(dp.EngineUnavailable, match="Nothing was run or spent") as info:
            ctx.query().agg(A.count(), A.sum("x")).release()
        assert isinstance(info.value, dp.DPError)
    assert ctx.remaining()["epsilon"] == Fraction(4, 5)  # before: 0 (each failed release was charged)
    assert len(scans) == 1  # nothing ran
    down[0] = False
    ctx.query().agg(A.count()).release()  # the second share, as if the refused releases never happened
    assert ctx.remaining()["epsilon"] == Fraction(3, 5) and len(scans) == 2


def test_the_liveness_check_reads_no_data() -> None:
    """The check is built from the engine, not the rows: a lazy frame whose plan raises is not run by it
    (a probe reading the data would raise, and its time would depend on the data)."""
    check = engine_check(_raising_frame(RuntimeError))
    assert check() is None
    assert PolarsEngine().probe(_raising_frame(RuntimeError))() is None


# --- a charged job that fails shows none of its text --------------------------------------------------


def test_a_failing_lazy_plan_keeps_its_message_out_of_the_context() -> None:
    """The DomainMismatch had no ``__cause__`` but its ``__context__`` was the engine's error, quoting the
    private value ('conversion from `str` to `i64` failed … ["secret-4242"]')."""
    lf = pl.LazyFrame({"u": [1, 2], "x": ["1", SECRET]}).with_columns(pl.col("x").cast(pl.Int64, strict=True))
    ctx = _ctx(lf)
    with pytest.raises(dp.DomainMismatch) as info:
        ctx.query().agg(A.sum("x")).release()
    assert str(info.value) == JOB_FAILED
    assert info.value.__cause__ is None and info.value.__context__ is None
    assert ctx.remaining()["epsilon"] == Fraction(4, 5)  # charged: the job ran


@pytest.mark.parametrize("exc", [SystemExit, KeyboardInterrupt, PanicException])
def test_a_base_exception_from_the_lazy_plan_is_raised_again_without_its_text(
    exc: Callable[[str], BaseException],
) -> None:
    """A SystemExit, KeyboardInterrupt or PanicException raised by the frame's own plan escaped with its
    message ('row 7 holds secret-4242') after the charge: it is raised again, same type, fixed text."""
    ctx = _ctx(_raising_frame(exc))
    with pytest.raises(BaseException) as info:  # the type is checked exactly below
        ctx.query().agg(A.count()).release()
    err = info.value
    assert type(err) is exc
    assert err.args == (JOB_FAILED,) and SECRET not in str(err) and SECRET not in repr(err)
    assert err.__cause__ is None and err.__context__ is None
    if isinstance(err, SystemExit):
        assert err.code == JOB_FAILED  # a failure status (and the fixed text) if it ends the program
    assert ctx.remaining()["epsilon"] == Fraction(4, 5)  # the charge stands


class _Picky(SystemExit):
    """A BaseException whose constructor refuses a single string."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class _FailingEngine:
    """An engine whose job raises ``error``."""

    name = "failing"

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def schema(self, data: Any) -> dict[str, str]:
        return {}

    def aggregate(self, data: Any, plan: Plan) -> Aggregates:
        raise self.error

    def probe(self, data: Any) -> Callable[[], str | None]:
        return lambda: None


def test_a_base_exception_whose_constructor_refuses_a_message_is_rebuilt() -> None:
    plan = Plan(
        columns=(), predicate=None, by=(), keys=((),), id=None, max_rows=None, max_groups=None, sums=()
    )
    original = _Picky(SECRET, 3)
    original.add_note(SECRET)
    with pytest.raises(_Picky) as info:
        run_job(_FailingEngine(original), None, plan)
    err = info.value
    assert err is not original and type(err) is _Picky
    assert err.args == (JOB_FAILED,) and err.code == JOB_FAILED and not hasattr(err, "__notes__")
    assert err.__context__ is None and err.__cause__ is None


@pytest.mark.skipif(sys.version_info < (3, 11), reason="exception groups are Python 3.11+")
def test_an_exception_group_from_the_job_is_rebuilt_with_no_member_text() -> None:
    """A BaseExceptionGroup kept its message and its members (a KeyboardInterrupt quoting a private value)
    when its type's constructor refused one string: the group and every member are rebuilt."""
    plan = Plan(
        columns=(), predicate=None, by=(), keys=((),), id=None, max_rows=None, max_groups=None, sums=()
    )
    original = BaseExceptionGroup(  # noqa: F821  (Python >= 3.11)
        f"tasks failed at {SECRET}", [KeyboardInterrupt(f"row 7 holds {SECRET}"), ValueError(SECRET)]
    )
    with pytest.raises(BaseExceptionGroup) as info:  # noqa: F821
        run_job(_FailingEngine(original), None, plan)
    err = info.value
    assert err is not original and SECRET not in "".join(traceback.format_exception(err))
    assert [type(e) for e in err.exceptions] == [KeyboardInterrupt, ValueError]
    assert all(e.args == (JOB_FAILED,) for e in err.exceptions)


# --- bad inputs: clear errors at build time -----------------------------------------------------------


@pytest.mark.parametrize("candidates", [np.array(1.0), np.array([[1.0, 2.0]]), np.zeros((0, 2))])
def test_quantile_candidates_must_be_one_dimensional(candidates: Any) -> None:
    """``np.array(1.0)`` raised TypeError('iteration over a 0-d array') from quantile()."""
    ctx = _ctx(pl.DataFrame({"u": [1], "x": [1]}))
    with pytest.raises(dp.InvalidParameter, match="candidates=.*one-dimensional"):
        A.quantile("x", 0.5, candidates=candidates)
    assert ctx.remaining()["epsilon"] == 1


OFFERED: dict[str, Callable[[], Any]] = {  # null for a zero divisor on every engine (transformations/_expr)
    "col / col": lambda: dp.col("a") / dp.col("b"),
    "col / 2": lambda: dp.col("a") / 2,
    "2 / col": lambda: 2 / dp.col("a"),
    "np.float64 / col": lambda: np.float64(2.0) / dp.col("a"),
    "-col": lambda: -dp.col("a"),
    "abs(col)": lambda: abs(dp.col("a")),
}


@pytest.mark.parametrize("case", list(OFFERED))
def test_division_negation_and_abs_build_expressions(case: str) -> None:
    """``/`` between ``dp.col``s raised Python's raw TypeError; unary ``-`` and ``abs`` were refused."""
    assert isinstance(OFFERED[case](), dp.tables.Expr)


EXPRESSIONS: dict[str, Callable[[], Any]] = {
    "col // 2": lambda: dp.col("a") // 2,
    "2 // col": lambda: 2 // dp.col("a"),
    "col % col": lambda: dp.col("a") % dp.col("b"),
    "2 % col": lambda: 2 % dp.col("a"),
    "divmod(col, 2)": lambda: divmod(dp.col("a"), 2),
    "divmod(2, col)": lambda: divmod(2, dp.col("a")),
    "col ** 2": lambda: dp.col("a") ** 2,
    "2 ** col": lambda: 2 ** dp.col("a"),
    "+col": lambda: +dp.col("a"),
}
OPERATOR = {"divmod": "divmod", "**": "**", "+col": "unary +"}


@pytest.mark.parametrize("case", list(EXPRESSIONS))
def test_operators_not_offered_say_so(case: str) -> None:
    """Each raised Python's raw TypeError ('unsupported operand type(s) for //: 'Expr' and 'int'')."""
    op = next((v for k, v in OPERATOR.items() if k in case), None) or case.split()[1]
    with pytest.raises(
        dp.DomainMismatch, match=f"^{re.escape(op)} is not offered on table expressions"
    ) as info:
        EXPRESSIONS[case]()
    assert isinstance(info.value, TypeError)  # existing `except TypeError` handlers still catch it
    assert "write" in str(info.value) or "compute it in the data" in str(info.value)  # what to do instead


# --- Spark: a stopped session, a JVM that is gone ---------------------------------------------------


@pytest.fixture
def own_spark() -> Iterator[Any]:
    """A session of this test alone (it is stopped by the test)."""
    pytest.importorskip("pyspark")
    from dpcompose.tables._spark import SparkUnavailable, local_session

    try:
        session = local_session("dpcompose-engine-failures")
    except SparkUnavailable as exc:
        pytest.skip(str(exc))
    session.sparkContext.setLogLevel("OFF")
    yield session
    session.stop()


@pytest.mark.filterwarnings("ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning")
def test_spark_stopped_spends_nothing(own_spark: Any) -> None:
    """Stopped in the JVM, then from Python: before, each release was charged and failed as 'the data's own
    lazy plan failed' (1 → 0 in five releases); now every one raises EngineUnavailable and spends nothing.
    The probe runs no Spark job, even on a frame whose plan would raise. (A release on a live session, the
    check passing, is in every Spark test of test_engines.py; no job here, as a cold first job takes 15 s.)"""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    spark = own_spark
    frame = spark.createDataFrame([(1, 3), (2, 4)], "u long, x long")
    ctx = _ctx(frame)

    def explode(v: int) -> int:
        raise RuntimeError(SECRET)

    raising = frame.withColumn("x", F.udf(explode, T.LongType())(F.col("x")))
    tracker = spark.sparkContext.statusTracker()
    jobs = tracker.getJobIdsForGroup()
    engine_check(raising)()  # alive, and no job ran: the probe reads the session only
    assert tracker.getJobIdsForGroup() == jobs

    spark.sparkContext._jsc.sc().stop()  # stopped in the JVM: Python's handle is still set
    for _ in range(5):
        with pytest.raises(dp.EngineUnavailable, match="SparkContext is stopped"):
            ctx.query().agg(A.count(), A.sum("x")).release()
    assert ctx.remaining()["epsilon"] == 1
    spark.stop()  # stopped from Python: pyspark drops its handle
    with pytest.raises(dp.EngineUnavailable, match="SparkContext is stopped"):
        ctx.query().agg(A.count()).release()
    assert ctx.remaining()["epsilon"] == 1


_KILL_SCRIPT = """
import json, os, signal
import dpcompose as dp
from pyspark import SparkContext
from dpcompose.tables._spark import local_session
spark = local_session("dpcompose-jvm-killed")
spark.sparkContext.setLogLevel("OFF")
ctx = dp.Context(spark.createDataFrame([(1, 3), (2, 4)], "u long, x long"),
                 {"u": dp.Column(int), "x": dp.Column(int, bounds=(0, 10))},
                 privacy_unit=dp.unit_of("u", 1), privacy_loss=1.0, split_evenly_over=5)
ctx.query().agg(dp.tables.count()).release()
proc = SparkContext._gateway.proc
os.kill(proc.pid, signal.SIGKILL)
proc.wait()
raised = []
for _ in range(5):
    try:
        ctx.query().agg(dp.tables.count()).release()
        raised.append("none")
    except Exception as exc:
        raised.append(type(exc).__name__ + ": " + str(exc)[:80])
print(json.dumps({"raised": raised, "remaining": str(ctx.remaining()["epsilon"].exact)}))
"""


@pytest.mark.slow
def test_spark_jvm_killed_spends_nothing() -> None:
    """The driver's JVM killed (in a child process: it would take this process's Spark with it): the probe's
    Py4J call fails, so each release raises EngineUnavailable and the budget stays 4/5."""
    pytest.importorskip("pyspark")
    from dpcompose.tables._spark import SparkUnavailable, check_java

    try:
        check_java()
    except SparkUnavailable as exc:
        pytest.skip(str(exc))
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": src}
    run = subprocess.run(
        [sys.executable, "-c", _KILL_SCRIPT], capture_output=True, text=True, timeout=300, env=env, check=True
    )
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["remaining"] == "4/5", result
    assert all(
        r.startswith("EngineUnavailable: the spark engine cannot run the query: the JVM")
        for r in result["raised"]
    )
