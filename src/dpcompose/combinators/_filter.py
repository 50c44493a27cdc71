"""Privacy filters: interactive measurements that answer adaptively chosen queries until a budget is spent.

``make_privacy_filter`` is the fully adaptive cousin of ``make_adaptive_sequential``: instead of a list
of budgets fixed in advance, it takes any measurement as a query — its privacy parameters chosen after
seeing earlier answers — and answers while the filter's rule (:mod:`dpcompose.accounting._filters`) says
the total stays within ``d_out``. Spending lives in a ledger (:mod:`dpcompose.combinators._ledger`),
charged before the query runs.
"""

from __future__ import annotations

import threading
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from dpcompose.accounting import PrivacyProfile
from dpcompose.accounting._display import Shown, format_down, format_up, shown_down, shown_up
from dpcompose.accounting._filters import (
    DEFAULT_ORDERS,
    BasicFilter,
    Cost,
    FilterRule,
    RenyiFilter,
    RRUVFilter,
    State,
    WhitehouseFilter,
    ZCDPApproxFilter,
    ZCDPFilter,
    check_orders,
    is_free,
)
from dpcompose.accounting._gdp_filter import GDPFilter
from dpcompose.combinators._adaptive import (
    SpawnedChildren,
    check_query,
    map_up_to_d_in,
    run_query,
)
from dpcompose.combinators._ledger import Ledger, LedgerEntry, LedgerError, MemoryLedger, SQLiteLedger
from dpcompose.combinators._query_cost import AnyMeasurement, gdp_budget, query_cost, renyi_at
from dpcompose.core import (
    ZCDP,
    ApproxDP,
    Domain,
    Measure,
    Measurement,
    Metric,
    Node,
    ProfileDP,
    PureDP,
    Queryable,
    RenyiCurve,
    RenyiDP,
)
from dpcompose.core._metrics import check_space, read_d_in
from dpcompose.core._recipe import recorded
from dpcompose.errors import (
    BudgetExceeded,
    InvalidParameter,
    UnsupportedComposition,
)

__all__ = ["FilterQueryable", "make_privacy_filter"]

#: Interleaving queries to interactive children a filter or odometer has spawned: covered for (ε, δ)-DP
#: (δ = 0 included) by Haney, Shoemate, Tian, Vadhan, Vyrros, Xu, Zhang 2023 (CCS; arXiv 2309.05901),
#: who extend every valid filter and odometer for non-interactive mechanisms to concurrent composition.
#: For zCDP no such theorem is cited here, so earlier children are closed (sequential interaction).
CONCURRENT_SOURCE = "Haney–Shoemate–Tian–Vadhan–Vyrros–Xu–Zhang 2023 (concurrent filters and odometers)"


def _fmt_sums(sums: Mapping[str, Fraction], down: bool = False) -> str:
    """Running sums for a message, rounded up (spent) or down (``down=True``: what remains), so that a
    refusal shows a request strictly above what remains (:mod:`dpcompose.accounting._display`)."""
    names = {"epsilon": "ε", "delta": "δ", "rho": "ρ", "sum_eps_sq": "Σε²", "epsilon_bound": "ε-bound"}
    fmt = format_down if down else format_up
    return ", ".join(f"{names.get(k, k)}={fmt(v)}" for k, v in sums.items())


def _restricted_curve(
    budget: RenyiCurve, orders: tuple[Fraction, ...], values: tuple[Fraction, ...]
) -> RenyiCurve:
    """The budget curve at ``orders``, refusing every other order (the filter claims nothing there)."""
    table = dict(zip(orders, values, strict=True))

    def curve(alpha: Any) -> Fraction:
        key = Fraction(alpha)
        if key not in table:
            listed = ", ".join(str(a) for a in orders)
            raise InvalidParameter(
                f"this Rényi filter guarantees its budget at the orders {listed} only, not at α={alpha}"
            )
        return table[key]

    return RenyiCurve(curve, f"{budget.label} at α ∈ {{{', '.join(str(a) for a in orders)}}}")


def check_accountant_args(
    input_domain: Domain, input_metric: Metric, output_measure: object, d_in: Any, ledger: object
) -> Any:
    """Validate the arguments a filter and an odometer share; returns ``d_in`` as the metric reads it."""
    check_space(input_domain, input_metric, allow_identifiers=True, allow_tables=True)  # generic
    if not isinstance(output_measure, Measure):
        raise InvalidParameter(f"output_measure={output_measure!r} must be a Measure")
    d_in_exact = read_d_in(input_domain, input_metric, d_in)
    if ledger is not None and not isinstance(ledger, Ledger):
        raise InvalidParameter(f"ledger={ledger!r} must be a MemoryLedger or SQLiteLedger")
    return d_in_exact


def spend_only_grows(old: LedgerEntry, new: LedgerEntry) -> LedgerEntry:
    """``new`` if it records one more query and no running sum below ``old``'s, else ``LedgerError``.

    The last line of defence of every charge, whatever the rule computed: spending never goes down (a
    refund would let a budget be spent twice). A rule fixed by ``rule="auto"`` starts from an empty state.
    """
    grows = new.queries == old.queries + 1 and (
        not old.state
        or (
            len(new.state) == len(old.state)
            and all(n >= o for n, o in zip(new.state, old.state, strict=True))
        )
    )
    if not grows:
        raise LedgerError(
            f"refusing a charge that would lower the ledger's spending ({old.state} over {old.queries} "
            f"queries -> {new.state} over {new.queries}); nothing was run or spent"
        )
    return new


class Accountant(ABC):
    """The bookkeeping of a filter or odometer: pure functions of a ledger entry (no data, no locks)."""

    kind: str
    measure: Measure[Any]
    spec: str
    sequential: bool
    #: the Rényi orders costs are evaluated at (a Rényi accountant only)
    orders: tuple[Fraction, ...] = ()

    @abstractmethod
    def charge(self, entry: LedgerEntry, cost: Cost, requested: str, label: str) -> LedgerEntry:
        """The entry after charging ``cost``; raises :class:`BudgetExceeded` (changing nothing) if refused."""

    def cost(self, query: AnyMeasurement, d_in: Any) -> tuple[Cost, str]:
        """The query's cost as :meth:`charge` reads it, and as text (:func:`query_cost` by default)."""
        return query_cost(self.measure, query, d_in, self.orders)


class Interaction:
    """How the interactive answers of an accountant's queryables may be queried: concurrently (the default:
    nothing is closed). Subclasses make it sequential; :func:`interaction_for` picks one."""

    def __init__(self, reason: str = "") -> None:
        self.children = SpawnedChildren(False, reason)

    def check(self, query: AnyMeasurement, label: str, who: str) -> None:
        """Refuse ``query`` before anything is charged (the default refuses nothing)."""

    def answer(self, charge: Callable[[], object], query: AnyMeasurement, data: Any) -> Any:
        """Charge, then run the query, closing or remembering the answers it opens."""
        charge()
        return run_query(query, data, self.children)


class LedgerSequential(Interaction):
    """Sequential *per ledger*: every queryable charging one :class:`MemoryLedger` shares one of these, so
    answering through any of them closes the interactive answers opened through any other (two queryables
    of one filter on a shared ledger cannot keep two zCDP children open and interleave them). The lock
    makes charge, closing and answering one step per ledger."""

    def __init__(self, reason: str) -> None:
        self.lock = threading.RLock()
        self.children = SpawnedChildren(True, reason)

    def answer(self, charge: Callable[[], object], query: AnyMeasurement, data: Any) -> Any:
        with self.lock:
            return super().answer(charge, query, data)


class NoInteractiveAnswers(Interaction):
    """Sequential on a ledger other processes may charge (an :class:`SQLiteLedger`), where no process can
    close another's answers: interactive queries are refused, and anything a query opens anyway (one not
    flagged interactive) is closed before it is returned."""

    def __init__(self, reason: str) -> None:
        self.children = SpawnedChildren(True, reason)

    def check(self, query: AnyMeasurement, label: str, who: str) -> None:
        if query.interactive:
            raise UnsupportedComposition(
                f"query {label} is interactive; a {who} is sequential, and on an SQLiteLedger (charged from "
                "other processes too) it cannot close an interactive answer when another process queries; "
                "use a MemoryLedger, or ask the interactive query's questions as separate queries; nothing "
                "was run or spent"
            )

    def answer(self, charge: Callable[[], object], query: AnyMeasurement, data: Any) -> Any:
        answer = super().answer(charge, query, data)
        self.children.before_answer()  # closes what this query opened
        return answer


_SHARED: weakref.WeakKeyDictionary[Ledger, LedgerSequential] = weakref.WeakKeyDictionary()
_SHARED_LOCK = threading.Lock()


def interaction_for(accountant: Accountant, ledger: Ledger) -> Interaction:
    """The :class:`Interaction` of a queryable of ``accountant`` on ``ledger``: concurrent for (ε, δ)
    accountants (Haney et al. 2023); for sequential ones (zCDP, Rényi, Gaussian DP) the one
    :class:`LedgerSequential` of a :class:`MemoryLedger`, or :class:`NoInteractiveAnswers` on a file
    ledger."""
    if not accountant.sequential:
        return Interaction()
    reason = (
        f"a later query was made to a {accountant.kind} on the same ledger (sequential for zCDP, Rényi and "
        "Gaussian DP)"
    )
    if not isinstance(ledger, MemoryLedger):
        return NoInteractiveAnswers(reason)
    with _SHARED_LOCK:
        shared = _SHARED.get(ledger)
        if shared is None:
            shared = _SHARED[ledger] = LedgerSequential(reason)
        return shared


class AccountantQueryable(Queryable[AnyMeasurement, Any]):
    """Shared machinery of filters and odometers: validate, charge the ledger, then run the query."""

    def __init__(
        self,
        data: Any,
        domain: Domain,
        metric: Metric,
        d_in: Any,
        accountant: Accountant,
        ledger: Ledger,
        name: str,
    ) -> None:
        super().__init__(name=name)
        # a file ledger is shared by every process: the filter itself may answer in a forked worker
        self._process_local = not isinstance(ledger, SQLiteLedger)
        self._data = data
        self._domain, self._metric, self._d_in = domain, metric, d_in
        self._accountant = accountant
        self._ledger = ledger
        # sequential accountants close children per ledger, not per queryable (see interaction_for)
        self._interaction = interaction_for(accountant, ledger)
        ledger.bind(accountant.kind, f"domain={domain!r} metric={metric!r} {accountant.spec}")

    def _answer(self, query: AnyMeasurement) -> Any:
        query = check_query(query, self._domain, self._metric, self._accountant.kind)
        cost, requested = self._accountant.cost(query, self._d_in)
        label = query.node.label()
        self._interaction.check(query, label, f"{self._accountant.measure!r} {self._accountant.kind}")

        def charge() -> LedgerEntry:
            # Charged durably before anything is released; a refusal raises inside the transaction.
            return self._ledger.charge(
                lambda e: spend_only_grows(e, self._accountant.charge(e, cost, requested, label))
            )

        return self._interaction.answer(charge, query, self._data)

    def _entry(self) -> LedgerEntry:
        with self._lock:
            return self._ledger.read()

    @property
    def ledger(self) -> Ledger:
        """The ledger this accountant charges."""
        return self._ledger

    @property
    def queries_charged(self) -> int:
        """How many queries the ledger holds (all processes and queryables sharing it)."""
        return self._entry().queries


class _FilterAccountant(Accountant):
    kind = "filter"

    def __init__(
        self,
        measure: Measure[Any],
        budget: Any,
        rule: str | FilterRule,
        d_in: Any,
        orders: Sequence[float | Fraction] | None = None,
    ) -> None:
        self.measure = measure
        self.budget = budget
        self.sequential = isinstance(measure, (ZCDP, RenyiDP, ProfileDP))
        if orders is not None and not isinstance(measure, RenyiDP):
            raise InvalidParameter(f"orders= applies to a RenyiDP filter only, not to {measure!r}")
        self._lock = threading.Lock()
        self._fixed: FilterRule | None = None
        self._candidates: list[FilterRule] | None = None
        if not isinstance(rule, (str, FilterRule)):
            raise InvalidParameter(f"rule={rule!r} must be a rule name or a FilterRule")
        request = rule if isinstance(rule, str) else rule.describe()
        if isinstance(rule, RenyiFilter):
            if orders is not None and check_orders(orders) != rule.orders:
                raise InvalidParameter(f"orders={orders!r} differ from the rule's orders {rule.orders}")
            self._fixed = self._check_rule_object(rule)
        elif isinstance(rule, FilterRule):
            self._fixed = self._check_rule_object(rule)
        elif isinstance(measure, PureDP):
            if rule not in ("auto", "basic"):
                raise InvalidParameter(f"rule={rule!r}: a PureDP filter has the rule 'basic' (or 'auto')")
            self._fixed = BasicFilter(budget, Fraction(0))
        elif isinstance(measure, ZCDP):
            if rule not in ("auto", "basic", "zcdp"):
                raise InvalidParameter(f"rule={rule!r}: a ZCDP filter has the rule 'zcdp' (or 'auto')")
            self._fixed = ZCDPFilter(budget)
        elif isinstance(measure, ApproxDP):
            self._fixed = self._approx_rule(rule, budget)
        elif isinstance(measure, RenyiDP):
            if rule not in ("auto", "renyi"):
                raise InvalidParameter(f"rule={rule!r}: a RenyiDP filter has the rule 'renyi' (or 'auto')")
            alphas = check_orders(DEFAULT_ORDERS if orders is None else orders)
            self._fixed = RenyiFilter(alphas, renyi_at(budget, alphas, "d_out"))
        elif isinstance(measure, ProfileDP):
            if rule not in ("auto", "gdp"):
                raise InvalidParameter(f"rule={rule!r}: a ProfileDP filter has the rule 'gdp' (or 'auto')")
            self._fixed = GDPFilter(gdp_budget(budget))
        else:
            raise UnsupportedComposition(
                f"no filter for {measure!r} here: filters exist for PureDP, ApproxDP, ZCDP, RenyiDP and "
                "ProfileDP with a Gaussian-DP budget"
            )
        if isinstance(self._fixed, RenyiFilter):
            self.orders = self._fixed.orders  # costs are read at the rule's orders
        shown = self._fixed.describe() if isinstance(measure, RenyiDP) and self._fixed else budget
        self.spec = f"{measure!r} budget={shown} d_in={d_in} rule={request}"

    def _check_rule_object(self, rule: FilterRule) -> FilterRule:
        want: dict[str, Any]
        if isinstance(self.measure, RenyiDP) and isinstance(rule, RenyiFilter):
            want = {"budgets": renyi_at(self.budget, rule.orders, "d_out")}
        elif isinstance(self.measure, ApproxDP):
            want = {"epsilon": self.budget[0], "delta": self.budget[1]}
        elif isinstance(self.measure, ZCDP):
            want = {"rho": self.budget}
        elif isinstance(self.measure, ProfileDP):
            want = {"mu_sq": gdp_budget(self.budget)}
        else:
            want = {"epsilon": self.budget, "delta": Fraction(0)}
        allowed = {
            PureDP: (BasicFilter,),
            ApproxDP: (BasicFilter, RRUVFilter, WhitehouseFilter, ZCDPApproxFilter),
            ZCDP: (ZCDPFilter,),
            RenyiDP: (RenyiFilter,),
            ProfileDP: (GDPFilter,),
        }[type(self.measure)]
        if type(rule) not in allowed:  # (a subclass's own admit() would be trusted unchecked)
            if isinstance(rule, allowed):
                base = next(c for c in allowed if isinstance(rule, c)).__name__
                raise InvalidParameter(
                    f"rule {rule!r} is a subclass of {base}; a filter runs only the library's own rules (a "
                    "subclass's admit() would be trusted unchecked): pass one of "
                    f"{', '.join(c.__name__ for c in allowed)} or a rule name"
                )
            raise InvalidParameter(f"rule {rule!r} does not apply to a {self.measure!r} filter")
        for attr, value in want.items():
            if getattr(rule, attr, None) != value:
                raise InvalidParameter(
                    f"rule {rule!r} has {attr}={getattr(rule, attr, None)}, budget {value}"
                )
        return rule

    @staticmethod
    def _approx_rule(rule: str, budget: tuple[Fraction, Fraction]) -> FilterRule | None:
        eps, delta = budget
        if rule == "basic":
            return BasicFilter(eps, delta)
        if rule in ("rruv", "whitehouse", "zcdp") and delta == 0:
            raise InvalidParameter(f"rule={rule!r} needs a budget with δ > 0 (got δ=0); use 'basic'")
        if rule == "rruv":
            return RRUVFilter(eps, delta)
        if rule == "whitehouse":
            return WhitehouseFilter(eps, delta, delta / 2)
        if rule == "zcdp":
            return ZCDPApproxFilter(eps, delta)
        if rule == "auto":
            return BasicFilter(eps, delta) if delta == 0 else None
        raise InvalidParameter(
            f"rule={rule!r} must be one of 'auto', 'basic', 'rruv', 'whitehouse', 'zcdp' or a FilterRule"
        )

    # -- rule resolution (rule="auto") -------------------------------------------------------------

    def candidates(self) -> list[FilterRule]:
        """The rules ``rule="auto"`` chooses among, in order of preference on ties."""
        if self._fixed is not None:
            return [self._fixed]
        with self._lock:
            if self._candidates is None:
                eps, delta = self.budget
                cands: list[FilterRule] = [BasicFilter(eps, delta)]
                if eps > 0:
                    cands.append(ZCDPApproxFilter(eps, delta))
                    cands.extend(WhitehouseFilter(eps, delta, delta * j / 8) for j in range(8, 0, -1))
                    if float(delta) < 0.36:
                        cands.append(RRUVFilter(eps, delta))
                self._candidates = cands
            return self._candidates

    def rule_of(self, entry: LedgerEntry) -> FilterRule | None:
        """The rule in effect for ``entry`` (``None``: auto has not chosen yet)."""
        if self._fixed is not None:
            if entry.rule and entry.rule != self._fixed.describe():
                raise LedgerError(
                    f"ledger entry uses rule {entry.rule!r}, this filter {self._fixed.describe()}"
                )
            return self._fixed
        if not entry.rule:
            return None
        for cand in self.candidates():
            if cand.describe() == entry.rule:
                return cand
        raise LedgerError(f"ledger entry uses rule {entry.rule!r}, which this filter does not know")

    def choose(self, cost: Cost) -> FilterRule:
        """The candidate admitting the most queries like ``cost`` from an empty ledger (first on ties).

        Validity: the choice depends only on the first query with a nonzero cost. Queries before it cost
        (0, 0): their answers are independent of the data, so the choice — like the first query itself —
        is independent of the data, and for each fixed choice the chosen rule is a valid filter; a
        data-independent mixture of (ε_g, δ_g)-DP interactions is (ε_g, δ_g)-DP.
        """
        best: FilterRule | None = None
        best_count = -1
        for cand in self.candidates():
            n = cand.max_queries_like(cand.start(), cost)
            count = (1 << 64) if n is None else n
            if count > best_count:
                best, best_count = cand, count
        assert best is not None
        return best

    # -- charging ----------------------------------------------------------------------------------

    def charge(self, entry: LedgerEntry, cost: Cost, requested: str, label: str) -> LedgerEntry:
        rule = self.rule_of(entry)
        if rule is None and is_free(cost):
            return entry.replace(queries=entry.queries + 1)  # reveals nothing; auto still undecided
        if rule is None:
            rule = self.choose(cost)
        state: State = entry.state if entry.rule else rule.start()
        new = rule.admit(state, cost)
        if new is None:
            raise BudgetExceeded(
                f"query {label} requests {requested}: {rule.why_not(state, cost)}. "
                f"Spent: {_fmt_sums(rule.spent(state))} over {entry.queries} queries; "
                f"remaining: {_fmt_sums(rule.remaining(state), down=True)}; nothing was run or spent"
            )
        return entry.replace(rule=rule.describe(), state=new, queries=entry.queries + 1)


class FilterQueryable(AccountantQueryable):
    """The live queryable of :func:`make_privacy_filter`."""

    _accountant: _FilterAccountant

    def _rule_state(self) -> tuple[FilterRule | None, State, LedgerEntry]:
        entry = self._entry()
        rule = self._accountant.rule_of(entry)
        state: State = entry.state if (rule is not None and entry.rule) else ()
        return rule, state, entry

    def _status(self) -> str:
        try:
            return f"spent {_fmt_sums(self.spent())}, remaining {_fmt_sums(self.remaining(), down=True)}"
        except LedgerError as exc:
            return f"ledger unusable: {exc}"

    @property
    def rule(self) -> str:
        """The rule in effect (``"auto (undecided)"`` until auto has seen a query with a nonzero cost)."""
        rule, _, _ = self._rule_state()
        return rule.describe() if rule is not None else "auto (undecided)"

    def remaining(self) -> dict[str, Shown]:
        """What is left of each quantity the rule limits (e.g. ``{'epsilon': …, 'delta': …}``).

        The values are the exact Fractions, shown rounded down (:class:`~dpcompose.accounting.Shown`;
        ``.exact`` is the plain Fraction)."""
        rule, state, _ = self._rule_state()
        if rule is None:
            left = {"epsilon": self._accountant.budget[0], "delta": self._accountant.budget[1]}
        else:
            left = rule.remaining(state or rule.start())
        return {name: shown_down(value) for name, value in left.items()}

    def spent(self) -> dict[str, Shown]:
        """The rule's running sums (e.g. ``{'epsilon': …, 'delta': …}`` for the basic rule).

        The values are the exact Fractions, shown rounded up (:class:`~dpcompose.accounting.Shown`)."""
        rule, state, _ = self._rule_state()
        if rule is None:
            sums = {"epsilon": Fraction(0), "delta": Fraction(0)}
        else:
            sums = rule.spent(state or rule.start())
        return {name: shown_up(value) for name, value in sums.items()}

    def max_queries_like(self, query: AnyMeasurement) -> int | None:
        """How many more queries like ``query`` would fit (``None``: it costs nothing, no limit).

        Under ``rule="auto"`` before the rule is fixed, the count is for the rule ``query`` would fix.
        """
        query = check_query(query, self._domain, self._metric, "filter")
        cost, _ = query_cost(self._accountant.measure, query, self._d_in, self._accountant.orders)
        rule, state, _ = self._rule_state()
        if rule is None:
            if is_free(cost):
                return None
            rule = self._accountant.choose(cost)
        return rule.max_queries_like(state or rule.start(), cost)


@recorded
def make_privacy_filter(
    input_domain: Domain,
    input_metric: Metric,
    output_measure: Measure[Any],
    d_in: Any,
    d_out: Any,
    rule: str | FilterRule = "auto",
    ledger: Ledger | None = None,
    *,
    orders: Sequence[float | Fraction] | None = None,
) -> AnyMeasurement:
    """A privacy filter: answers any measurement as a query while the rule keeps the total within ``d_out``.

    Each query's cost is its ``map(d_in)``; the analyst may choose every query *and its parameters* after
    seeing earlier answers. A query the rule refuses raises :class:`BudgetExceeded` (stating what was
    spent, what was requested and what remains) before anything runs or is spent; the filter stays usable
    for a cheaper query. An admitted query is charged to the ledger — durably for
    :class:`SQLiteLedger` — before the mechanism runs.

    Rules (``d_out`` is read as the decimal it prints as):

    * PureDP, ``"basic"``: Σεᵢ ≤ ε_g (Rogers–Roth–Ullman–Vadhan 2016 v1 Lemma 3.5).
    * ApproxDP: ``"basic"`` Σεᵢ ≤ ε_g, Σδᵢ ≤ δ_g; ``"rruv"`` RRUV 2016 Thm 5.1; ``"whitehouse"``
      Whitehouse et al. 2023 with δ″ = δ_g/2 (pass a :class:`WhitehouseFilter` for another split);
      ``"zcdp"``: ε-DP queries cost εᵢ²/2 against the largest ρ_g converting to (ε_g, δ_g)
      (Feldman–Zrnic 2021, Canonne–Kamath–Steinke 2020).
      ``"auto"`` (default): the rule is fixed once, at the first query with a nonzero cost, as the one
      admitting the most queries like it (candidates: basic, zcdp, whitehouse with δ″ = jδ_g/8, rruv).
      That choice depends on nothing but that query, which no released answer influenced, so the filter
      stays valid; rules are never combined or switched mid-way.
    * ZCDP, ``"zcdp"``: Σρᵢ ≤ ρ_g (Feldman–Zrnic 2021 Thm 4.3 at every Rényi order).
    * RenyiDP, ``"renyi"``: ``d_out`` is a :class:`RenyiCurve` B; admit while Σεᵢ(α) ≤ B(α) at every
      order α of ``orders`` (default :data:`~dpcompose.accounting._filters.DEFAULT_ORDERS`, 1.25 … 256),
      Feldman–Zrnic 2021 Thm 4.3 at each order. The filter's ``map`` is B at those orders and refuses any
      other order. RenyiDP, ZCDP (αρ) and PureDP (min(ε, αε²/2)) queries are accepted, and a query of
      another measure (a Poisson-subsampled step is ``ProfileDP``) is charged the Rényi curve of its
      dominating pair at ``d_in`` (:meth:`PrivacyLoss.renyi`; the pair dominates the query, so its Rényi
      divergences are at most the pair's); a query with neither is refused by name.
    * ProfileDP, ``"gdp"``: a Gaussian-DP filter. ``d_out`` is a Gaussian profile (``gaussian_profile(1,
      1/μ)``, μ-GDP) or an (ε, δ) budget (read as the largest μ on a fine grid whose GDP curve meets it);
      admit while Σμᵢ² ≤ μ², μᵢ = Δ/σ of each query's Gaussian pair at ``d_in`` (a composition of Gaussians:
      μ's in quadrature), Smith–Thakurta 2022 (arXiv:2210.17520, fully adaptive composition of GDP). The
      filter's ``map`` is the μ-GDP profile, read as (ε, δ) by Dong–Roth–Su 2019 Cor. 2.13. Discrete
      Gaussian steps (the secure ``make_gaussian``: not proven Δ/σ-GDP here), subsampled steps and
      non-Gaussian queries are refused by name. Any other ProfileDP budget is refused: the natural filter
      over general trade-off curves is invalid (arXiv:2602.06756).

    ε-DP queries are accepted by ApproxDP and ZCDP filters (as (ε, 0) and ε²/2). Interactive answers may
    be queried interleaved for PureDP/ApproxDP (Haney et al. 2023 extend every valid filter to concurrent
    composition); for ZCDP, RenyiDP and Gaussian DP interaction is sequential per ledger: an earlier
    interactive answer closes when the filter — or another queryable on the same :class:`MemoryLedger` —
    answers a later query (no concurrent Rényi filter theorem is cited here), and on an
    :class:`SQLiteLedger`, which other processes may charge, interactive queries are refused.

    Args:
        input_domain: the data's domain.
        input_metric: its metric.
        output_measure: ``PureDP()``, ``ApproxDP()``, ``ZCDP()``, ``RenyiDP()`` or ``ProfileDP()`` (the
            Gaussian-DP filter).
        d_in: the input distance the filter protects; queries are charged their ``map(d_in)``.
        d_out: the global budget (ε, (ε, δ), ρ, a :class:`RenyiCurve`, or for ProfileDP a Gaussian
            :class:`PrivacyProfile` or (ε, δ)).
        rule: a rule name (above) or a :class:`~dpcompose.accounting.FilterRule` with this budget.
        ledger: where spending is kept: a new in-memory ledger per run by default; a shared
            :class:`MemoryLedger` or :class:`SQLiteLedger` makes every run draw on one budget.
        orders: the Rényi orders a RenyiDP filter checks (each > 1); only for RenyiDP.

    Returns:
        An interactive Measurement; running it returns a :class:`FilterQueryable` with ``remaining()``,
        ``spent()``, ``max_queries_like(m)`` and ``rule``. Its privacy map gives ``d_out`` for distances up
        to ``d_in``.

    Raises:
        InvalidParameter: a bad budget, ``d_in`` or rule.
        UnsupportedComposition: a measure with no filter here, or a ProfileDP budget that is not
            Gaussian (arXiv:2602.06756).

    Source: per rule, as listed above; see :mod:`dpcompose.accounting._filters` and
    :mod:`dpcompose.accounting._gdp_filter`.

    Examples:
        >>> import dpcompose as dp
        >>> floats = dp.AtomDomain(float)
        >>> f = dp.make_privacy_filter(floats, dp.AbsoluteDistance(), dp.PureDP(), d_in=1, d_out=1.0)
        >>> q = f(3.0)
        >>> lap = dp.m.make_laplace(floats, dp.AbsoluteDistance(), scale=4.0)  # ε = 1/4
        >>> q.max_queries_like(lap)
        4
        >>> _ = q(lap); _ = q(lap); _ = q(lap)
        >>> q.remaining()
        {'epsilon': 0.25, 'delta': 0}
        >>> q(dp.m.make_laplace(floats, dp.AbsoluteDistance(), scale=2.0))
        Traceback (most recent call last):
        ...
        dpcompose.errors.BudgetExceeded: query laplace(scale=2.0) requests ε=0.5: basic rule: Σε would be ...
    """
    d_in_exact = check_accountant_args(input_domain, input_metric, output_measure, d_in, ledger)
    budget: Any
    if isinstance(output_measure, ProfileDP) and isinstance(d_out, PrivacyProfile):
        budget = d_out  # (a Gaussian-DP budget: gdp_budget checks it)
    else:
        budget = output_measure.parse(d_out, "d_out")
    accountant = _FilterAccountant(output_measure, budget, rule, d_in_exact, orders)
    guarantee: Any = budget
    if isinstance(accountant._fixed, RenyiFilter):
        guarantee = _restricted_curve(budget, accountant._fixed.orders, accountant._fixed.budgets)
    if isinstance(accountant._fixed, GDPFilter):  # μ-GDP: its (ε, δ) curve (Dong–Roth–Su 2019 Cor. 2.13)
        guarantee = PrivacyProfile(gaussian_mu_sq=accountant._fixed.mu_sq)
    source = accountant._fixed.source if accountant._fixed is not None else "rule fixed at first query"

    def run(data: Any) -> FilterQueryable:
        return FilterQueryable(
            data,
            input_domain,
            input_metric,
            d_in_exact,
            accountant,
            ledger if ledger is not None else MemoryLedger(),
            name="privacy filter",
        )

    return Measurement(
        input_domain,
        input_metric,
        output_measure,
        run,
        map_up_to_d_in(d_in_exact, guarantee, "filter"),
        interactive=True,
        node=Node(
            "filter",
            params=(("d_out", output_measure.display(budget)), ("rule", accountant.spec.split("rule=")[1])),
            source=source,
            theorem="privacy filter (fully adaptive composition)",
            interaction="fully adaptive" + ("" if accountant.sequential else ", concurrent children"),
        ),
    )
