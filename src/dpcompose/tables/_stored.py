"""Table work as data: ``dp.to_json`` of a built table query or a ``dp.Context``, and ``dp.from_json``
rebuilding it against the frame the loader passes.

A file stores configuration, never data or spending:

* a Context (``{"table_context": {...}}``): its schema (``FrameDomain``), unit of privacy, measure, total
  budget and split (``split_evenly_over`` or ``split_by_weights``). A loaded Context starts with its whole
  budget: what was spent lives in a ledger (pass the same ledger to ``dp.from_json(..., ledger=)``).
* a table query (``{"table_query": {...}}``): the Context's configuration, the query's budget (its value,
  and ``share``, the index of the Context's budget share it was priced from, when it was: absent for
  ``query(privacy_loss=...)``), the builder calls before ``agg`` (``select``, ``with_column``, ``filter``,
  ``group_by``) with their expressions as engine-neutral trees, and the aggregates.

A query priced from a share loads priced from that share, as it was built: its ``release()`` takes the
Context's next share if that share is the same size and is refused otherwise (``BudgetExceeded``,
nothing run or spent), exactly as before it was stored, so every share a Context hands out is spent at
its own value. (Loaded at the value alone, it would take the next share's turn at another share's price:
with weights, a share would go unspent or a later one be refused by the filter.) Its Context must have
that share at that value (the stored budget and split), else the file is refused.

Loading replays the builder calls through the public builders, so every check a query gets when it is
written by hand runs again (schema, kinds, bounds, keys, aggregates), and the rebuilt query has the same
plan and the same privacy map. Expression trees and aggregates read from the file are checked for shape
first (:func:`~dpcompose.transformations._expr.check_tree`), and the unit of privacy is rebuilt by
``unit_of``.
Nothing in a table file is user-written code, so ``allow_unverified`` has nothing to allow here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from dpcompose._serialize import StoredKind, register_stored_kind
from dpcompose.core import Measure
from dpcompose.errors import DPError, InvalidParameter, SerializationError
from dpcompose.tables import _agg
from dpcompose.tables._context import Context, PrivacyUnit, unit_of
from dpcompose.tables._query import Query
from dpcompose.tables._schema import FrameDomain
from dpcompose.tables._table_query import TableQuery
from dpcompose.transformations._expr import check_tree

__all__ = ["CONTEXT_FIELDS", "QUERY_FIELDS", "read_context", "read_query"]

CONTEXT_FIELDS = (
    "domain", "privacy_unit", "measure", "privacy_loss", "split_evenly_over", "split_by_weights",
)  # fmt: skip
QUERY_FIELDS = ("context", "privacy_loss", "steps", "aggs", "share")
_BUILDERS: dict[str, Callable[..., _agg.Agg]] = {
    "count": _agg.count,
    "sum": _agg.sum,
    "mean": _agg.mean,
    "variance": _agg.variance,
    "count_distinct": _agg.count_distinct,
}


def _write_context(ctx: Context) -> dict[str, Any]:
    kind, split = ctx.split
    return {
        "domain": ctx.domain,
        "privacy_unit": ctx.privacy_unit,
        "measure": ctx.measure,
        "privacy_loss": ctx.privacy_loss,
        "split_evenly_over": split if kind == "even" else None,
        "split_by_weights": list(split) if kind == "weights" else None,
    }


def _write_query(q: TableQuery) -> dict[str, Any]:
    return {
        "context": _write_context(q.context),
        "privacy_loss": q.budget,
        "steps": [list(step) for step in q.steps],
        "aggs": list(q.aggs),
        "share": q.share,  # written only for a query priced from a share (an optional field)
    }


def _fail(where: str, why: str) -> SerializationError:
    return SerializationError(f"{where}: {why}")


def _unit(v: object, where: str) -> PrivacyUnit | None:
    if v is None:
        return None
    if not isinstance(v, PrivacyUnit):
        raise _fail(where, f"{v!r} must be a PrivacyUnit (dp.unit_of) or null")
    return unit_of(v.id, v.max_rows, v.max_groups)  # the checks unit_of makes, which the record skips


def read_context(fields: dict[str, Any], data: Any, ledger: Any) -> Context:
    """A Context over ``data`` with the stored configuration (``fields``: :data:`CONTEXT_FIELDS`) and a
    fresh privacy filter on ``ledger``.

    Raises:
        SerializationError: a field of the wrong type. InvalidParameter, DomainMismatch: as
            ``dp.Context`` (a refused budget or split, or ``data`` not of the stored schema).
    """
    where = "root.table_context"
    if not isinstance(fields, dict) or set(fields) != set(CONTEXT_FIELDS):
        raise _fail(where, f"must be an object with the keys {', '.join(CONTEXT_FIELDS)}")
    domain, measure = fields["domain"], fields["measure"]
    if not isinstance(domain, FrameDomain):
        raise _fail(f"{where}.domain", f"{domain!r} must be a FrameDomain")
    if not isinstance(measure, Measure):
        raise _fail(f"{where}.measure", f"{measure!r} must be a privacy measure")
    weights = fields["split_by_weights"]
    if weights is not None and not isinstance(weights, list):
        raise _fail(f"{where}.split_by_weights", f"{weights!r} must be a list of weights or null")
    return Context(
        data,
        domain,
        privacy_unit=_unit(fields["privacy_unit"], f"{where}.privacy_unit"),
        privacy_loss=fields["privacy_loss"],
        measure=measure,
        split_evenly_over=fields["split_evenly_over"],
        split_by_weights=weights,
        ledger=ledger,
    )


def _agg_of(a: object, where: str) -> _agg.Agg:
    """The aggregate ``a`` rebuilt by its public builder (the record itself skips the builders' checks)."""
    if not isinstance(a, _agg.Agg):
        raise _fail(where, f"{a!r} must be an aggregate (dp.tables.count, sum, ...)")
    if a.alias is not None and (not isinstance(a.alias, str) or not a.alias):
        raise _fail(where, f"alias={a.alias!r} must be a non-empty name or null")
    if a.op == "quantile":
        if a.alpha is None or not isinstance(a.candidates, tuple):
            raise _fail(where, "a quantile needs alpha and a tuple of candidates")
        built = _agg.quantile(a.column, a.alpha, a.candidates, a.bounds)  # type: ignore[arg-type]
    elif a.op in _BUILDERS:
        if a.alpha is not None or a.candidates != ():
            raise _fail(where, f"{a.op} takes no alpha or candidates")
        if a.op == "count":
            if a.column is not None or a.bounds is not None:
                raise _fail(where, "count takes no column or bounds")
            built = _agg.count()
        elif a.op == "count_distinct":
            if a.bounds is not None:
                raise _fail(where, "count_distinct takes no bounds")
            built = _agg.count_distinct(a.column)  # type: ignore[arg-type]
        else:
            built = _BUILDERS[a.op](a.column, a.bounds)
    else:
        raise _fail(where, f"{a.op!r} is not an aggregate ({', '.join([*_BUILDERS, 'quantile'])})")
    return dataclasses.replace(built, alias=a.alias)


def _replay(q: Query, step: object, where: str) -> Query:
    if not isinstance(step, list) or not step or not isinstance(step[0], str):
        raise _fail(where, f"{step!r} must be a list [builder, arguments...]")
    name, args = step[0], step[1:]
    if name == "select" and len(args) == 1 and isinstance(args[0], list):
        return q.select(*args[0])
    if name == "filter" and len(args) == 1:
        check_tree(args[0], f"{where}: filter")
        return q.filter(args[0])
    if name == "with_column" and len(args) == 4 and isinstance(args[2], list):
        check_tree(args[1], f"{where}: with_column")
        bounds = args[2]
        if len(bounds) != 2:
            raise _fail(where, f"bounds={bounds!r} must be [lo, hi]")
        return q.with_column(args[0], args[1], bounds=(bounds[0], bounds[1]), fill=args[3])
    if name == "group_by" and len(args) == 3 and isinstance(args[0], list):
        keys = args[1]
        if keys is not None and not isinstance(keys, list):
            raise _fail(where, f"keys={keys!r} must be a list or null")
        return q.group_by(*args[0], keys=keys, selection=args[2])
    raise _fail(
        where,
        f"{step!r} is not a stored builder call (select [columns], filter expr, with_column name expr "
        "[lo, hi] fill, group_by [by] keys selection)",
    )


def _priced(ctx: Context, budget: object, share: object, where: str) -> Query:
    """A new query of ``ctx`` priced as the stored one: at the stored ``budget``, from budget share
    ``share`` when it names one (which must be that value in ``ctx``)."""
    if share is None:
        return ctx.query(privacy_loss=budget)
    if isinstance(share, bool) or not isinstance(share, int) or not 0 <= share < len(ctx.shares):
        raise _fail(
            f"{where}.share",
            f"{share!r} must be the index of one of the Context's {len(ctx.shares)} budget shares",
        )
    value = ctx.shares.value(share)
    measure: Measure[Any] = ctx.measure
    stored = measure.parse(budget, "privacy_loss")
    if stored != value:
        show = measure.display
        raise _fail(
            where,
            f"the query was priced at budget share {share} ({show(stored)}), which is "
            f"{show(value)} in the given Context: load it into a Context with the stored budget and split",
        )
    return Query(ctx, value, share=share)


def read_query(fields: dict[str, Any], data: Any, ledger: Any) -> TableQuery:
    """The stored table query rebuilt in ``data`` — a ``dp.Context`` with the stored schema, unit and
    measure, or a frame (then in a new Context with the stored configuration, on ``ledger``) — by replaying
    its builder calls through the public builders, at the stored budget (from the stored budget share, when
    it names one: the module docstring says why).

    Raises:
        SerializationError: a step, expression or aggregate the builders do not make, or a Context that
            does not match. InvalidParameter, DomainMismatch: what the builders refuse.
    """
    where = "root.table_query"
    stored = fields["context"]
    if not isinstance(stored, dict):
        raise _fail(f"{where}.context", "must be the stored Context's configuration")
    if isinstance(data, Context):
        if ledger is not None:
            raise InvalidParameter("ledger= is for a new Context: the given Context has its own filter")
        ctx = data
        unit = _unit(stored.get("privacy_unit"), f"{where}.context.privacy_unit")
        for label, mine, theirs in (
            ("schema", ctx.domain, stored.get("domain")),
            ("unit of privacy", ctx.privacy_unit, unit),
            ("measure", ctx.measure, stored.get("measure")),
        ):
            if mine != theirs:
                raise _fail(
                    where,
                    f"the query was built for the {label} {theirs!r}, the given Context has {mine!r}: load "
                    "it into a Context of the same configuration, or pass the frame",
                )
    else:
        ctx = read_context(stored, data, ledger)
    steps, aggs = fields["steps"], fields["aggs"]
    if not isinstance(steps, list) or not isinstance(aggs, list):
        raise _fail(where, "steps and aggs must be lists")
    try:
        q = _priced(ctx, fields["privacy_loss"], fields["share"], where)
        for i, step in enumerate(steps):
            q = _replay(q, step, f"{where}.steps[{i}]")
        return q.agg(*(_agg_of(a, f"{where}.aggs[{i}]") for i, a in enumerate(aggs)))
    except DPError:
        raise
    except Exception as exc:  # a stored value of the wrong shape that a builder does not name
        why = f"the stored query does not fit the builders ({type(exc).__name__}: {exc})"
        raise _fail(where, why) from exc


register_stored_kind(StoredKind("table_context", Context, CONTEXT_FIELDS, _write_context, read_context))
register_stored_kind(
    StoredKind("table_query", TableQuery, QUERY_FIELDS, _write_query, read_query, optional=("share",))
)
