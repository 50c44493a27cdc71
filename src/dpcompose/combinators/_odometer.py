"""Privacy odometers: answer every query and report the privacy loss so far, valid at every moment."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from dpcompose._validation import check_probability
from dpcompose.accounting._display import Shown, shown_up
from dpcompose.accounting._exact import decimal
from dpcompose.accounting._filters import (
    DEFAULT_ORDERS,
    Cost,
    check_orders,
    settle,
    zcdp_cost_to_renyi,
)
from dpcompose.accounting._renyi_odometer import renyi_odometer_epsilon, renyi_stopping_epsilon
from dpcompose.combinators._filter import Accountant, AccountantQueryable, check_accountant_args
from dpcompose.combinators._ledger import Ledger, LedgerEntry, LedgerError, MemoryLedger
from dpcompose.combinators._query_cost import AnyMeasurement, query_cost
from dpcompose.core import ZCDP, ApproxDP, Domain, Measure, Measurement, Metric, Node, PureDP, RenyiDP
from dpcompose.core._recipe import recorded
from dpcompose.errors import InvalidParameter, UnsupportedComposition

__all__ = ["OdometerQueryable", "make_odometer"]

ODOMETER_SOURCE = (
    "Rogers–Roth–Ullman–Vadhan 2016 (arXiv 1605.08294v1) Lemma 3.5 (basic composition, fully adaptive), "
    "for the view up to the moment of reading"
)
RENYI_ODOMETER_SOURCE = (
    "Rényi odometer: Feldman–Zrnic 2021 (arXiv 2008.11193) Thm 4.3's supermartingale, Ville's inequality, "
    "δ split over the orders (proved in accounting._renyi_odometer, Theorem 1)"
)


def _order_text(alpha: Fraction) -> str:
    """An order as the decimal it is when it has a short one (``1.25``), else as a fraction."""
    shown = format(float(alpha), "g")
    return shown if Fraction(shown) == alpha else str(alpha)


class _OdometerAccountant(Accountant):
    """An odometer's bookkeeping: how a charge changes the entry, and what the entry reads as."""

    kind = "odometer"
    #: the measure of the reading (``privacy_loss()``)
    reading_measure: Measure[Any]

    @abstractmethod
    def reading(self, entry: LedgerEntry) -> Any:
        """The privacy loss so far, in ``reading_measure``."""

    @abstractmethod
    def spent(self, entry: LedgerEntry) -> dict[str, Fraction]:
        """The running sums of the entry, by name."""


class _BasicOdometerAccountant(_OdometerAccountant):
    def __init__(self, measure: Measure[Any], d_in: Any) -> None:
        self.measure = measure
        self.reading_measure = measure
        self.sequential = False
        self.spec = f"{measure!r} d_in={d_in} odometer=basic"

    def charge(self, entry: LedgerEntry, cost: Cost, requested: str, label: str) -> LedgerEntry:
        eps, delta = self.totals(entry)
        new = (settle(eps + cost[0]), settle(delta + cost[1]))
        return entry.replace(rule="basic", state=new, queries=entry.queries + 1)

    def totals(self, entry: LedgerEntry) -> tuple[Fraction, Fraction]:
        """The running totals (Σε, Σδ) of the entry (zeros before the first charge); LedgerError for a state
        that is not a pair (a damaged ledger)."""
        state = entry.state if entry.state else (Fraction(0), Fraction(0))
        if len(state) != 2:
            raise LedgerError(f"ledger state has {len(state)} totals for an odometer's (ε, δ)")
        eps, delta = state
        return eps, delta

    def spent(self, entry: LedgerEntry) -> dict[str, Fraction]:
        eps, delta = self.totals(entry)
        return {"epsilon": eps, "delta": delta}

    def reading(self, entry: LedgerEntry) -> Any:
        eps, delta = self.totals(entry)
        return (eps, delta) if isinstance(self.measure, ApproxDP) else eps


class _RenyiOdometerAccountant(_OdometerAccountant):
    """Running sums S(α) of the queries' Rényi curves at fixed orders; read as (ε, δ) at a δ fixed in
    advance by :func:`~dpcompose.accounting.renyi_odometer_epsilon` (a bound on the loss) and
    :func:`~dpcompose.accounting.renyi_stopping_epsilon` (for the decision to stop)."""

    def __init__(
        self, measure: Measure[Any], d_in: Any, delta: Fraction, orders: tuple[Fraction, ...]
    ) -> None:
        self.measure = measure  # RenyiDP or ZCDP: which queries are accepted (as a filter of it would)
        self.reading_measure = ApproxDP()
        self.sequential = True  # as the Rényi filter: no concurrent Rényi theorem is cited here
        self.delta = delta
        self.orders = orders
        shown = ",".join(str(a) for a in orders)
        self.spec = f"{measure!r} d_in={d_in} odometer=renyi delta={delta} orders={shown}"

    def cost(self, query: AnyMeasurement, d_in: Any) -> tuple[Cost, str]:
        """The query's Rényi values at the orders. A zCDP odometer takes ZCDP queries (αρ) and PureDP ones
        (min(ε, αε²/2) at each order, as the Rényi filter charges them: D_α ≤ ε for ε-DP and
        ε-DP ⇒ ε²/2-zCDP, Bun–Steinke 2016 Prop. 1.4), and refuses every other measure by name."""
        if not isinstance(self.measure, ZCDP):
            return super().cost(query, d_in)
        if isinstance(query.output_measure, PureDP):
            return query_cost(RenyiDP(), query, d_in, self.orders)
        (rho, _), text = query_cost(self.measure, query, d_in)
        return zcdp_cost_to_renyi(rho, self.orders), text

    def charge(self, entry: LedgerEntry, cost: Cost, requested: str, label: str) -> LedgerEntry:
        state = self.sums(entry)
        # (cost comes from :meth:`cost`: one value per order, so zip's strict check never fires)
        new = tuple(settle(s + c) for s, c in zip(state, cost, strict=True))
        return entry.replace(rule="renyi-odometer", state=new, queries=entry.queries + 1)

    def spent(self, entry: LedgerEntry) -> dict[str, Fraction]:
        return {f"alpha={_order_text(a)}": s for a, s in zip(self.orders, self.sums(entry), strict=True)}

    def sums(self, entry: LedgerEntry) -> tuple[Fraction, ...]:
        """The running sums S(α) of the entry, one per order (zeros before the first charge); LedgerError
        for a state of another length (a damaged ledger: the ledger is bound to these orders)."""
        state = entry.state if entry.state else tuple(Fraction(0) for _ in self.orders)
        if len(state) != len(self.orders):
            raise LedgerError(f"ledger state has {len(state)} sums for {len(self.orders)} orders")
        return state

    def reading(self, entry: LedgerEntry) -> tuple[Fraction, Fraction]:
        return renyi_odometer_epsilon(self.orders, self.sums(entry), self.delta), self.delta

    def stopping(self, entry: LedgerEntry) -> Fraction:
        return renyi_stopping_epsilon(self.orders, self.sums(entry), self.delta)


class OdometerQueryable(AccountantQueryable):
    """The live queryable of :func:`make_odometer`."""

    _accountant: _OdometerAccountant

    def _status(self) -> str:
        try:
            return f"privacy loss {self._accountant.reading_measure.display(self.privacy_loss())}"
        except LedgerError as exc:
            return f"ledger unusable: {exc}"

    def privacy_loss(self) -> Any:
        """The privacy loss so far, valid at this moment however it was chosen.

        ε (PureDP) or (ε, δ) (ApproxDP), summed over every charged query; for a RenyiDP or ZCDP odometer
        (ε, δ) at the ``delta`` fixed at construction, ``ε = min_α S(α) + ln(|A|/δ)/(α − 1)`` (rounded up,
        the exact Fraction): with probability ≥ 1 − δ the privacy loss stays at most the reading at every
        moment (Theorem 1 of :mod:`dpcompose.accounting._renyi_odometer`)."""
        return self._accountant.reading(self._entry())

    def stopping_epsilon(self) -> Fraction:
        """RenyiDP/ZCDP odometers: the tighter ε valid for the decision to stop, *not* a bound on the loss.

        ``min_α S(α) + ln((α − 1)/α) + (ln(|A|/δ) − ln α)/(α − 1)`` at the odometer's δ (rounded up): for
        any ε̂ fixed in advance, stopping before this passes ε̂ is an (ε̂, δ) filter (every event of the
        view up to a moment it reads ≤ ε̂ has P_x(E) ≤ e^ε̂ P_x′(E) + δ; Theorem 2 of
        :mod:`dpcompose.accounting._renyi_odometer`). The privacy loss itself may exceed it with
        probability above δ: report :meth:`privacy_loss` as what was spent.

        Raises:
            UnsupportedComposition: a PureDP or ApproxDP odometer (its ``privacy_loss()`` is already exact
                basic composition).
        """
        accountant = self._accountant
        if not isinstance(accountant, _RenyiOdometerAccountant):
            raise UnsupportedComposition(
                "stopping_epsilon() is a RenyiDP/ZCDP odometer's reading; this odometer's privacy_loss() is "
                "the basic-composition total, valid both as a bound and for stopping"
            )
        return accountant.stopping(self._entry())

    def spent(self) -> dict[str, Shown]:
        """The running sums: ``{'epsilon': …, 'delta': …}`` (PureDP, ApproxDP) or the Rényi sums S(α) by
        order (``{'alpha=2': …}``; RenyiDP, ZCDP). Shown rounded up (``.exact`` is the Fraction).

        A Rényi sum is *not* by itself a guarantee (read :meth:`privacy_loss`): reading it as an RDP or zCDP
        bound at a time chosen from the answers is exactly what no theorem allows (Lécuyer 2021)."""
        return {name: shown_up(v) for name, v in self._accountant.spent(self._entry()).items()}


def _accountant(
    measure: Measure[Any], d_in: Any, delta: Any, orders: Sequence[float | Fraction] | None
) -> _OdometerAccountant:
    if isinstance(measure, (PureDP, ApproxDP)):
        for name, value in (("delta", delta), ("orders", orders)):
            if value is not None:
                raise InvalidParameter(
                    f"{name}={value!r} applies to a RenyiDP or ZCDP odometer only; a {measure!r} odometer "
                    f"reads the basic-composition total: drop {name}="
                )
        return _BasicOdometerAccountant(measure, d_in)
    if not isinstance(measure, (RenyiDP, ZCDP)):
        raise UnsupportedComposition(
            f"no odometer for {measure!r} here: odometers exist for PureDP, ApproxDP, and RenyiDP or ZCDP "
            "with delta= (read as (ε, δ))"
        )
    if delta is None:
        raise UnsupportedComposition(
            f"a {measure!r} odometer needs delta=: a zCDP/Rényi sum read at a data-dependent time is not a "
            "valid guarantee by itself (Lécuyer 2021); this odometer reads (ε, δ) at a δ fixed in advance, "
            "e.g. delta=1e-6 (or use make_privacy_filter with a budget fixed in advance)"
        )
    check_probability(delta, "delta")
    dq = decimal(delta, "delta")
    if dq == 0:
        raise InvalidParameter(f"delta={delta!r} must be positive: the Rényi odometer reads (ε, δ > 0)")
    alphas = check_orders(DEFAULT_ORDERS if orders is None else orders)
    return _RenyiOdometerAccountant(measure, d_in, dq, alphas)


@recorded
def make_odometer(
    input_domain: Domain,
    input_metric: Metric,
    output_measure: Measure[Any],
    d_in: Any,
    ledger: Ledger | None = None,
    *,
    delta: float | Fraction | None = None,
    orders: Sequence[float | Fraction] | None = None,
) -> AnyMeasurement:
    """A privacy odometer: answers every query and reports ``privacy_loss()`` so far.

    Unlike a filter it has no budget and never refuses a well-formed query. ``privacy_loss()`` is valid
    when the queries and their parameters are chosen adaptively *and* at whatever moment the analyst
    decides to stop and read it:

    * PureDP / ApproxDP: the basic-composition total (Σεᵢ, or (Σεᵢ, Σδᵢ)) of the queries charged so far:
      for pure DP the privacy loss is bounded by Σεᵢ surely; for approximate DP basic composition is a
      valid odometer (cited below). Interleaved queries to interactive answers are covered by Haney et al.
      2023 (odometers extend to concurrent composition).
    * RenyiDP / ZCDP (``delta`` required): each query is charged its Rényi curve at ``orders`` (as the
      Rényi filter charges it: RenyiDP, ZCDP as αρ, PureDP as min(ε, αε²/2), and a query of another
      measure — a Poisson-subsampled step — the curve of its dominating pair at ``d_in``; a ZCDP odometer
      takes ZCDP and PureDP queries), and ``privacy_loss()`` is (ε, δ) with
      ``ε = min_α S(α) + ln(|A|/δ)/(α − 1)`` — S(α) the running sums, A the orders: with probability
      ≥ 1 − δ the privacy loss stays at most the reading at every moment (Theorem 1 of
      :mod:`dpcompose.accounting._renyi_odometer`: Feldman–Zrnic 2021 Thm 4.3's supermartingale, Ville's
      inequality, δ split over the orders). ``stopping_epsilon()`` is the tighter
      ``min_α S(α) + ln((α − 1)/α) + (ln(|A|/δ) − ln α)/(α − 1)`` (Balle et al. 2020 Thm 21 at δ/|A|),
      valid for the decision to stop — stopping before it passes any ε̂ is an (ε̂, δ) filter (Theorem 2
      there) — but not a bound on the loss. The sums are *not* read as a Rényi or zCDP guarantee (no
      theorem covers that at a data-dependent time, Lécuyer 2021). δ is fixed here, before any query: a
      δ picked after seeing answers would not be covered. Interaction is sequential per ledger: an
      earlier interactive answer closes when the odometer — or another queryable on the same
      :class:`MemoryLedger` — answers a later query; on an :class:`SQLiteLedger` (which other processes
      may charge) interactive queries are refused.

    The measurement has no a-priori privacy bound: its ``map`` raises :class:`UnsupportedComposition`;
    read ``privacy_loss()`` on the queryable instead.

    Args:
        input_domain: the data's domain.
        input_metric: its metric.
        output_measure: ``PureDP()``, ``ApproxDP()``, ``RenyiDP()`` or ``ZCDP()``.
        d_in: the input distance; each query is charged its ``map(d_in)`` (or its pair's Rényi curve).
        ledger: where spending is kept (in memory by default; :class:`SQLiteLedger` to persist it).
        delta: RenyiDP/ZCDP only, required: the δ ∈ (0, 1) of every reading, read as the decimal it
            prints as.
        orders: RenyiDP/ZCDP only: the Rényi orders (each > 1) of the sums, fixed in advance (default
            :data:`~dpcompose.accounting._filters.DEFAULT_ORDERS`, 18 orders 1.25 … 256). More orders cost
            ln(|A|) in the reading; a non-integer order of a subsampled step is read at the next integer.

    Raises:
        UnsupportedComposition: a measure with no odometer here, or RenyiDP/ZCDP without ``delta``.
        InvalidParameter: a bad ``d_in``, ``delta`` outside (0, 1), an order ≤ 1 or repeated, or ``delta``
            / ``orders`` for a PureDP or ApproxDP odometer.

    Source: Rogers, Roth, Ullman, Vadhan 2016 (arXiv 1605.08294v1) Lemma 3.5 (basic composition with
    adaptively chosen parameters), read for the view truncated at the moment ``privacy_loss()`` is read —
    the sense in which OpenDP also uses it (the v2 correction concerns untruncated views); Haney,
    Shoemate, Tian, Vadhan, Vyrros, Xu, Zhang 2023 (CCS; arXiv 2309.05901) Alg. 6 (concurrent). Rényi/zCDP:
    the theorems of :mod:`dpcompose.accounting._renyi_odometer` (proved there from Feldman–Zrnic 2021
    Thm 4.3, Ville's inequality and Balle–Barthe–Gaboardi–Hsu–Sato 2020 Thm 21).

    Examples:
        >>> import dpcompose as dp
        >>> floats = dp.AtomDomain(float)
        >>> odo = dp.make_odometer(floats, dp.AbsoluteDistance(), dp.ApproxDP(), d_in=1)
        >>> q = odo(2.0)
        >>> _ = q(dp.m.make_laplace(floats, dp.AbsoluteDistance(), scale=10.0))
        >>> _ = q(dp.m.make_laplace(floats, dp.AbsoluteDistance(), scale=5.0))
        >>> q.privacy_loss()
        (Fraction(3, 10), Fraction(0, 1))

        A zCDP odometer reads (ε, δ) at the δ given here:

        >>> abs_ = dp.AbsoluteDistance()
        >>> zodo = dp.make_odometer(floats, abs_, dp.ZCDP(), d_in=1, delta=1e-6, orders=[2, 8, 32])
        >>> z = zodo(2.0)
        >>> _ = z(dp.m.make_gaussian(floats, abs_, scale=2.0))   # ρ = 1/8
        >>> eps, delta = z.privacy_loss()
        >>> dp.accounting.format_up(eps, 3), delta   # α = 8: 8ρ + ln(3/δ)/7
        ('3.14', Fraction(1, 1000000))
        >>> dp.accounting.format_up(z.stopping_epsilon(), 3)   # for stopping only: + ln(7/8) − ln 8/7
        '2.7'
    """
    d_in_exact = check_accountant_args(input_domain, input_metric, output_measure, d_in, ledger)
    accountant = _accountant(output_measure, d_in_exact, delta, orders)
    renyi = isinstance(accountant, _RenyiOdometerAccountant)

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

    params: tuple[tuple[str, str], ...] = (("d_in", str(d_in_exact)),)
    if isinstance(accountant, _RenyiOdometerAccountant):
        params += (
            ("delta", str(accountant.delta)),
            ("orders", ",".join(map(_order_text, accountant.orders))),
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
            params=params,
            source=RENYI_ODOMETER_SOURCE if renyi else ODOMETER_SOURCE,
            theorem="privacy odometer ("
            + ("Rényi, (ε, δ) reading" if renyi else "basic composition")
            + ", fully adaptive)",
            interaction="fully adaptive" + ("" if accountant.sequential else ", concurrent children"),
        ),
    )
