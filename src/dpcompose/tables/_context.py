"""The table Context: the data, its schema, the unit of privacy (:func:`unit_of`), the budget and its split
into shares. ``Context.query()`` starts a :class:`~dpcompose.tables._query.Query`; each release is charged
to the Context's privacy filter before its engine job runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose.combinators import make_privacy_filter
from dpcompose.core import (
    ZCDP,
    ApproxDP,
    Measure,
    Measurement,
    Metric,
    PureDP,
    SymmetricDistance,
    SymmetricIdDistance,
)
from dpcompose.core._metrics import validate_count
from dpcompose.errors import DomainMismatch, InvalidParameter
from dpcompose.tables._engines import engine_check
from dpcompose.tables._query import Query
from dpcompose.tables._schema import Column, FrameDomain
from dpcompose.tables._shares import BudgetShares

__all__ = ["Context", "PrivacyUnit", "unit_of"]

_MAX_SHARES = 2**20  # queries per Context


@dataclass(frozen=True)
class PrivacyUnit:
    """Who is protected: all rows of one identifier, with the caps the engine enforces."""

    id: str
    max_rows: int
    max_groups: int | None = None


def _positive_int(v: object, name: str) -> int:
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, bool) or not isinstance(v, int) or v < 1 or v >= 1 << 31:
        raise InvalidParameter(f"{name}={v!r} must be an integer in [1, 2**31)")
    return v


def unit_of(id: str, max_rows: int, max_groups: int | None = None) -> PrivacyUnit:
    """The unit of privacy "all rows of one identifier": neighbouring tables differ in every row of one
    value of column ``id``.

    Args:
        id: the identifier column (declared in the schema).
        max_rows: rows kept per identifier (the rows with the smallest specified hash keys).
        max_groups: groups kept per identifier in a group-by (by hash of identifier and group). With
            known keys it does not lower the noise (``max_rows`` alone bounds it); with unknown keys it is
            the ``l0`` bound of partition selection.

    Raises:
        InvalidParameter: ``id`` not a non-empty str, caps not integers in [1, 2**31).

    Examples:
        >>> unit_of(id="user_id", max_rows=5)
        PrivacyUnit(id='user_id', max_rows=5, max_groups=None)
    """
    if not isinstance(id, str) or not id:
        raise InvalidParameter(f"id={id!r} must be a non-empty column name")
    return PrivacyUnit(
        id,
        _positive_int(max_rows, "max_rows"),
        None if max_groups is None else _positive_int(max_groups, "max_groups"),
    )


class Context:
    """Data, unit of privacy, budget and split: the entry point for private table queries.

    Args:
        data: a Polars DataFrame or LazyFrame, or a pandas DataFrame (converted with
            ``polars.from_pandas``, which needs pyarrow: without it the Context refuses the frame with
            :class:`~dpcompose.errors.EngineUnavailable`; pass ``polars.DataFrame(df.to_dict("list"))``
            instead).
        domain: a :class:`FrameDomain` (or a mapping column -> :class:`Column`) declaring the schema; the
            data's schema is checked against it now (metadata only, no scan).
        privacy_unit: ``dp.unit_of(id=..., max_rows=..., max_groups=...)``, or None for row-level privacy
            (neighbours differ in one row).
        privacy_loss: the total budget in ``measure``'s units (ε, ρ, or (ε, δ)).
        measure: ``dp.PureDP()`` (discrete Laplace noise), ``dp.ZCDP()`` (discrete Gaussian) or
            ``dp.ApproxDP()`` (discrete Laplace queries under an (ε, δ) filter).
        split_evenly_over: the budget is split into this many equal query shares, or
        split_by_weights: into shares proportional to these weights; the i-th release gets share i.
        ledger: a :class:`~dpcompose.MemoryLedger` / :class:`~dpcompose.SQLiteLedger` for the filter.

    The Context holds a privacy filter (``dp.make_privacy_filter``) over the data: each ``release()``
    is charged there before its engine job runs. ``.shares`` is the budget's split
    (:class:`~dpcompose.tables._shares.BudgetShares`; ``len(ctx.shares)`` shares).

    Raises:
        InvalidParameter: a bad budget, split, unit or schema. DomainMismatch: the data's schema does not
            match, or the identifier column is not declared. EngineUnavailable: a pandas DataFrame without
            pyarrow installed (Polars converts it through pyarrow).

    Examples:
        >>> import dpcompose as dp, polars as pl
        >>> df = pl.DataFrame({"user": [1, 1, 2], "age": [30, 31, 40]})
        >>> ctx = dp.Context(df, {"user": dp.Column(int), "age": dp.Column(int, bounds=(0, 100))},
        ...                  privacy_unit=dp.unit_of(id="user", max_rows=2), privacy_loss=1.0,
        ...                  split_evenly_over=2)
        >>> q = ctx.query().agg(dp.tables.count())
        >>> q.measurement.map(1)
        Fraction(1, 2)
    """

    def __init__(
        self,
        data: Any,
        domain: FrameDomain | dict[str, Column],
        *,
        privacy_unit: PrivacyUnit | None = None,
        privacy_loss: Any,
        measure: Measure[Any] | None = None,
        split_evenly_over: int | None = None,
        split_by_weights: Sequence[float] | None = None,
        ledger: Any = None,
    ) -> None:
        if not isinstance(domain, FrameDomain):
            try:
                domain = FrameDomain(domain)
            except InvalidParameter as exc:
                raise InvalidParameter(f"domain: {exc}") from None
        self.domain = domain
        if privacy_unit is not None and not isinstance(privacy_unit, PrivacyUnit):
            raise InvalidParameter(f"privacy_unit={privacy_unit!r} must be dp.unit_of(...) or None")
        self.privacy_unit = privacy_unit
        unit = privacy_unit
        self.metric: Metric = SymmetricDistance() if unit is None else SymmetricIdDistance(unit.id)
        if privacy_unit is not None and privacy_unit.id not in domain.schema:
            raise DomainMismatch(
                f"privacy_unit: the identifier column {privacy_unit.id!r} is not declared in the schema"
            )
        measure = PureDP() if measure is None else measure
        if not isinstance(measure, (PureDP, ZCDP, ApproxDP)):
            raise InvalidParameter(f"measure={measure!r} must be dp.PureDP(), dp.ZCDP() or dp.ApproxDP()")
        self.measure = measure
        budget: Any = measure.parse(privacy_loss, "privacy_loss")
        _check_positive(budget, privacy_loss, "privacy_loss")
        self.privacy_loss = privacy_loss  # the total budget as given (dp.to_json stores it)
        self.split: tuple[str, Any]  # ("even", n) or ("weights", [w, ...]): the split as given, checked
        if (split_evenly_over is None) == (split_by_weights is None):
            raise InvalidParameter("split_evenly_over= or split_by_weights= (exactly one) must be given")
        if split_evenly_over is not None:
            n = validate_count(split_evenly_over, "split_evenly_over")
            if n > _MAX_SHARES:  # a chosen cap on queries per Context (shares are computed when handed out)
                raise InvalidParameter(
                    f"split_evenly_over={split_evenly_over!r}: at most {_MAX_SHARES} queries per context "
                    "(one share each); split the budget between contexts for more"
                )
            if n == 0:
                raise InvalidParameter("split_evenly_over=0 must be at least 1")
            self.shares = BudgetShares.even(measure, budget, n)
            self.split = ("even", n)
        else:
            if isinstance(split_by_weights, (str, bytes)) or not isinstance(split_by_weights, Sequence):
                raise InvalidParameter(f"split_by_weights={split_by_weights!r} must be a list of weights")
            weights = []
            for w in split_by_weights:
                if isinstance(w, bool) or not isinstance(w, (int, float, Fraction)):
                    raise InvalidParameter(
                        f"split_by_weights={split_by_weights!r}: weight {w!r} is a {type(w).__name__}; "
                        "weights must be int, float or Fraction (for numpy scalars, use .item())"
                    )
                if (isinstance(w, float) and not math.isfinite(w)) or not w > 0:
                    raise InvalidParameter(f"split_by_weights={split_by_weights!r}: weights must be > 0")
                weights.append(Fraction(w))
            if not weights:
                raise InvalidParameter("split_by_weights=[] must list at least one weight")
            self.shares = BudgetShares.weighted(measure, budget, weights)
            self.split = ("weights", weights)
        self.kinds = {n: c.kind for n, c in domain.columns}
        filt = make_privacy_filter(domain, self.metric, measure, d_in=1, d_out=privacy_loss, ledger=ledger)
        self._queryable = filt(data)  # checks the data's schema (no scan)
        self._check_engine = engine_check(data)  # the engine's liveness, before each charge (no scan)

    def query(self, privacy_loss: Any = None) -> Query:
        """A new query with the share of the next release (or ``privacy_loss`` in the context's measure).

        Shares go to releases in order: a query built but never released (or refused) takes no share.
        Each share goes to one release, also when threads release at once: ``release()`` takes the share
        next at that moment if it is the size the query was priced at, and is refused otherwise
        (``BudgetExceeded``: nothing is run or spent; build the query again).
        """
        if privacy_loss is not None:
            share = self.measure.parse(privacy_loss, "privacy_loss")
            _check_positive(share, privacy_loss, "privacy_loss")
            return Query(self, share)
        index, share = self.shares.peek()
        return Query(self, share, share=index)

    def charge_and_run(
        self, measurement: Measurement[Any, Any, Any, Any], budget: Any, share: int | None
    ) -> Any:
        """Charge the Context's filter and run ``measurement`` as the next release, which takes the next
        budget share (:meth:`~dpcompose.tables._shares.BudgetShares.hand_out`). The path of
        :meth:`TableQuery.release <dpcompose.tables.TableQuery.release>`; build queries with :meth:`query`.

        Args:
            measurement: the query's measurement (the filter charges its map at ``d_in = 1``).
            budget: what the query was priced at.
            share: the share it was priced from (None: priced with ``query(privacy_loss=...)``).

        Raises:
            EngineUnavailable: the data's engine is dead: nothing is charged and no share is taken.
            BudgetExceeded: the share went to another release, or the filter refuses: nothing runs.
        """
        q = self._queryable
        self._check_engine()  # refused before any share is taken or anything is charged
        return self.shares.hand_out(budget, share, lambda: q(measurement), lambda: q.queries_charged)

    def remaining(self) -> Any:
        """What the Context's filter has left."""
        return self._queryable.remaining()

    def __repr__(self) -> str:
        unit = "row" if self.privacy_unit is None else repr(self.privacy_unit)
        return f"Context({self.domain!r}, unit={unit}, measure={self.measure!r}, shares={len(self.shares)})"


def _check_positive(budget: Any, raw: object, name: str) -> None:
    """A query's noise is scaled by its ε (or ρ): it must be positive."""
    first = budget[0] if isinstance(budget, tuple) else budget
    if first <= 0:
        raise InvalidParameter(f"{name}={raw!r} must be positive (ε > 0, or ρ > 0): noise is scaled by it")
