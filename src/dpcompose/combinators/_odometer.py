"""Privacy odometers: answer every query and report the privacy loss so far, valid at every moment."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from dpcompose.accounting._filters import Cost, settle
from dpcompose.combinators._filter import (
    Accountant,
    AccountantQueryable,
    AnyMeasurement,
    check_accountant_args,
)
from dpcompose.combinators._ledger import Ledger, LedgerEntry, LedgerError, MemoryLedger
from dpcompose.core import ApproxDP, Domain, Measure, Measurement, Metric, Node, PureDP
from dpcompose.core._recipe import recorded
from dpcompose.errors import UnsupportedComposition

__all__ = ["OdometerQueryable", "make_odometer"]

ODOMETER_SOURCE = (
    "Rogers–Roth–Ullman–Vadhan 2016 (arXiv 1605.08294v1) Lemma 3.5 (basic composition, fully adaptive), "
    "for the view up to the moment of reading"
)


class _OdometerAccountant(Accountant):
    kind = "odometer"

    def __init__(self, measure: Measure[Any], d_in: Any) -> None:
        if not isinstance(measure, (PureDP, ApproxDP)):
            raise UnsupportedComposition(
                f"no odometer for {measure!r} here: the basic odometer is proven for PureDP and ApproxDP. "
                "A zCDP/Rényi sum reported at a data-dependent time is not a valid guarantee by itself "
                "(Lécuyer 2021); use make_privacy_filter with a ρ budget instead"
            )
        self.measure = measure
        self.sequential = False
        self.spec = f"{measure!r} d_in={d_in} odometer=basic"

    def charge(self, entry: LedgerEntry, cost: Cost, requested: str, label: str) -> LedgerEntry:
        eps, delta = entry.state if entry.state else (Fraction(0), Fraction(0))
        new = (settle(eps + cost[0]), settle(delta + cost[1]))
        return entry.replace(rule="basic", state=new, queries=entry.queries + 1)


class OdometerQueryable(AccountantQueryable):
    """The live queryable of :func:`make_odometer`."""

    def _status(self) -> str:
        try:
            return f"privacy loss {self._accountant.measure.display(self.privacy_loss())}"
        except LedgerError as exc:
            return f"ledger unusable: {exc}"

    def privacy_loss(self) -> Any:
        """The privacy loss so far: ε (PureDP) or (ε, δ) (ApproxDP), summed over every charged query."""
        entry = self._entry()
        eps, delta = entry.state if entry.state else (Fraction(0), Fraction(0))
        return (eps, delta) if isinstance(self._accountant.measure, ApproxDP) else eps


@recorded
def make_odometer(
    input_domain: Domain,
    input_metric: Metric,
    output_measure: Measure[Any],
    d_in: Any,
    ledger: Ledger | None = None,
) -> AnyMeasurement:
    """A privacy odometer: answers every query and reports ``privacy_loss()`` so far.

    Unlike a filter it has no budget and never refuses a well-formed query; ``privacy_loss()`` is the
    basic-composition total (Σεᵢ, or (Σεᵢ, Σδᵢ)) of the queries charged so far. It is valid when the
    queries and their parameters are chosen adaptively *and* at whatever moment the analyst decides to
    stop and read it: for pure DP the privacy loss is bounded by Σεᵢ surely; for approximate DP basic
    composition is a valid odometer (cited below). Interleaved queries to interactive answers are covered
    by Haney et al. 2023 (odometers extend to concurrent composition).

    The measurement has no a-priori privacy bound: its ``map`` raises :class:`UnsupportedComposition`;
    read ``privacy_loss()`` on the queryable instead.

    Args:
        input_domain: the data's domain.
        input_metric: its metric.
        output_measure: ``PureDP()`` or ``ApproxDP()``.
        d_in: the input distance; each query is charged its ``map(d_in)``.
        ledger: where spending is kept (in memory by default; :class:`SQLiteLedger` to persist it).

    Raises:
        UnsupportedComposition: a measure with no odometer here (zCDP, Rényi).

    Source: Rogers, Roth, Ullman, Vadhan 2016 (arXiv 1605.08294v1) Lemma 3.5 (basic composition with
    adaptively chosen parameters), read for the view truncated at the moment ``privacy_loss()`` is read —
    the sense in which OpenDP also uses it (the v2 correction concerns untruncated views); Haney,
    Shoemate, Tian, Vadhan, Vyrros, Xu, Zhang 2023 (CCS; arXiv 2309.05901) Alg. 6 (concurrent).

    Examples:
        >>> import dpcompose as dp
        >>> floats = dp.AtomDomain(float)
        >>> odo = dp.make_odometer(floats, dp.AbsoluteDistance(), dp.ApproxDP(), d_in=1)
        >>> q = odo(2.0)
        >>> _ = q(dp.m.make_laplace(floats, dp.AbsoluteDistance(), scale=10.0))
        >>> _ = q(dp.m.make_laplace(floats, dp.AbsoluteDistance(), scale=5.0))
        >>> q.privacy_loss()
        (Fraction(3, 10), Fraction(0, 1))
    """
    d_in_exact = check_accountant_args(input_domain, input_metric, output_measure, d_in, ledger)
    accountant = _OdometerAccountant(output_measure, d_in_exact)

    def run(data: Any) -> OdometerQueryable:
        return OdometerQueryable(
            data,
            input_domain,
            input_metric,
            d_in_exact,
            accountant,
            ledger if ledger is not None else MemoryLedger(),
            name="privacy odometer",
        )

    def privacy_map(d: Any) -> Any:
        raise UnsupportedComposition(
            "an odometer has no privacy bound before it runs; read privacy_loss() on its queryable, or use "
            "make_privacy_filter for a budget fixed in advance"
        )

    return Measurement(
        input_domain,
        input_metric,
        output_measure,
        run,
        privacy_map,
        interactive=True,
        node=Node(
            "odometer",
            params=(("d_in", str(d_in_exact)),),
            source=ODOMETER_SOURCE,
            theorem="privacy odometer (basic composition, fully adaptive)",
            interaction="fully adaptive, concurrent children",
        ),
    )
