"""Privacy filters and odometers: stopping rules valid when each query's *parameters* are chosen adaptively.

A privacy filter is a stopping rule: before each query it decides, from the running totals of the
parameters already spent and the parameters of the next query, whether the whole interaction stays within
a global budget fixed in advance. The composition theorems of :mod:`dpcompose.accounting._basic` assume
the parameters are fixed before the interaction starts; the rules here stay valid when the analyst picks
each query's ε (and δ, ρ) after seeing earlier answers (*fully adaptive composition*).

Each rule is a small immutable object with running sums as its state (a tuple of exact
:class:`~fractions.Fraction`), so each query costs O(1) arithmetic:

* :class:`BasicFilter` — Σεᵢ ≤ ε_g and Σδᵢ ≤ δ_g (pure and approximate DP);
* :class:`RRUVFilter` — Rogers–Roth–Ullman–Vadhan 2016 Thm 5.1 (approximate DP, advanced);
* :class:`WhitehouseFilter` — Whitehouse–Ramdas–Rogers–Wu 2023 (approximate DP, advanced);
* :class:`ZCDPFilter` — Σρᵢ ≤ ρ_g (Feldman–Zrnic 2021), also usable for an (ε_g, δ_g) budget
  through the largest ρ_g that converts to it (:func:`zcdp_budget`);
* :class:`RenyiFilter` — Σεᵢ(α) ≤ B(α) at each order α of a finite set (Feldman–Zrnic 2021).

Costs are pairs ``(ε, δ)`` for every rule (a zCDP rule reads ``(ρ, 0)``). Running sums that would grow
an unbounded denominator are rounded *up* to a multiple of 2^-128 (:func:`settle`), which keeps every
admitted sequence within the cited bound while keeping the arithmetic per query constant.

Examples:
    >>> from fractions import Fraction
    >>> rule = BasicFilter(Fraction(1), Fraction(0))
    >>> state = rule.start()
    >>> for _ in range(10):
    ...     state = rule.admit(state, (Fraction(1, 10), Fraction(0)))
    >>> rule.admit(state, (Fraction(1, 10), Fraction(0))) is None
    True
    >>> rule.spent(state)
    {'epsilon': Fraction(1, 1), 'delta': Fraction(0, 1)}
"""

from __future__ import annotations

import functools
import itertools
import math
from abc import ABC, abstractmethod
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import ClassVar

from dpcompose.accounting._common import ZERO, as_sequence, bisect, nonnegative, probability
from dpcompose.accounting._display import format_excess, format_up
from dpcompose.accounting._exact import (
    Number,
    exact_sum,
    expm1_up,
    float_down,
    float_up,
    log1p_up,
    log_down,
    log_up,
    sqrt_down,
    sqrt_up,
    sqrt_up_q,
)
from dpcompose.accounting._zcdp import pure_to_zcdp, renyi_to_approx, zcdp_to_approx
from dpcompose.errors import InvalidParameter, UnsupportedComposition

__all__ = [
    "DEFAULT_ORDERS",
    "BasicFilter",
    "FilterRule",
    "RRUVFilter",
    "RenyiFilter",
    "WhitehouseFilter",
    "ZCDPApproxFilter",
    "ZCDPFilter",
    "check_orders",
    "is_free",
    "pure_cost_to_renyi",
    "pure_cost_to_zcdp",
    "rruv_filter_epsilon",
    "settle",
    "settle_down",
    "whitehouse_filter_epsilon",
    "zcdp_budget",
    "zcdp_cost_to_renyi",
]

Cost = tuple[Fraction, ...]
"""A query's cost as a rule reads it: ``(ε, δ)``, ``(ρ, 0)``, or one Rényi ε per order."""
State = tuple[Fraction, ...]

_SETTLE_BITS = 128


def settle(x: Fraction) -> Fraction:
    """``x`` itself if its denominator is small, else the least multiple of 2^-128 that is ≥ ``x``.

    Keeps running sums of heterogeneous exact costs at bounded size (O(1) per query) while only ever
    rounding *up*, so a rule never admits more than its exact sums would.

    Examples:
        >>> settle(Fraction(1, 10))
        Fraction(1, 10)
        >>> x = Fraction(1, 3**200)
        >>> settle(x) >= x and settle(x).denominator == 2**128
        True
    """
    if x.denominator.bit_length() <= 2 * _SETTLE_BITS:
        return x
    scaled = -((-x.numerator << _SETTLE_BITS) // x.denominator)  # ceil(x · 2^128)
    return Fraction(scaled, 1 << _SETTLE_BITS)


def _f(x: float) -> Fraction:
    return Fraction(x)


@dataclass(frozen=True)
class FilterRule(ABC):
    """A privacy-filter stopping rule over running sums (see the module docstring).

    Subclasses implement :meth:`start`, :meth:`admit`, :meth:`why_not`, :meth:`remaining` and
    :meth:`spent`; :meth:`max_queries_like` has a generic O(log k) implementation.
    """

    #: short name used by ``make_privacy_filter(rule=...)``
    name: ClassVar[str] = "rule"
    #: the theorem this rule applies
    source: ClassVar[str] = ""

    @abstractmethod
    def start(self) -> State:
        """The state before any query: all running sums zero."""

    @abstractmethod
    def admit(self, state: State, cost: Cost) -> State | None:
        """The state after charging ``cost``, or ``None`` if the rule must halt before this query."""

    @abstractmethod
    def why_not(self, state: State, cost: Cost) -> str:
        """Which condition ``cost`` would break, for a refusal message."""

    @abstractmethod
    def remaining(self, state: State) -> dict[str, Fraction]:
        """What is left of each quantity the rule limits (name → headroom, never negative)."""

    @abstractmethod
    def spent(self, state: State) -> dict[str, Fraction]:
        """The running sums, by name."""

    def describe(self) -> str:
        """A canonical text form of the rule and its budget (stored in ledgers to detect mismatches)."""
        return self.name

    def accepts(self, cost: Cost) -> bool:
        """Whether this rule can ever admit a query of this kind (e.g. a zCDP rule needs δ = 0)."""
        return True

    def max_queries_like(self, state: State, cost: Cost) -> int | None:
        """How many more queries of ``cost`` the rule admits from ``state`` (``None``: unlimited).

        Every rule here is monotone (a longer sequence of the same cost is refused once a shorter one
        is), so the count is found by doubling and bisection: O(log k) calls of :meth:`admit`'s test.
        """
        if not self.accepts(cost):
            return 0
        if is_free(cost):
            return None if self.admit(state, cost) is not None else 0

        def fits(k: int) -> bool:
            return self._admit_k(state, cost, k) is not None

        if not fits(1):
            return 0
        lo, hi = 1, 2
        while fits(hi):
            lo, hi = hi, hi * 2
            if hi > 1 << 62:
                return None
        return bisect(lo, hi, lambda m: not fits(m)) - 1  # fits(lo), not fits(hi): the last that fits

    def _admit_k(self, state: State, cost: Cost, k: int) -> State | None:
        """``k`` copies of ``cost`` charged at once (rules whose sums are additive override nothing)."""
        return self.admit(state, cost if k == 1 else self._scaled(cost, k))

    def _scaled(self, cost: Cost, k: int) -> Cost:  # pragma: no cover - overridden where used
        raise NotImplementedError


def is_free(cost: Cost) -> bool:
    """Whether a cost is zero in every coordinate (the query reveals nothing about the data)."""
    return all(c == 0 for c in cost)


def _check_budget(epsilon: Number, delta: Number) -> tuple[Fraction, Fraction]:
    return nonnegative(epsilon, "epsilon"), probability(delta, "delta")


@dataclass(frozen=True)
class BasicFilter(FilterRule):
    """Basic composition as a filter: admit while Σεᵢ ≤ ε_g and Σδᵢ ≤ δ_g.

    Valid for pure DP (δ = 0) and approximate DP with adaptively chosen parameters and number of queries.

    Source: Rogers, Roth, Ullman, Vadhan 2016 (arXiv 1605.08294v1) Lemma 3.5: basic composition remains a
    valid privacy filter when the parameters are chosen adaptively. For pure DP it is also immediate: each
    step's privacy loss is at most its εᵢ given the past, so the total is at most Σεᵢ ≤ ε_g surely.

    Examples:
        >>> from fractions import Fraction
        >>> r = BasicFilter(Fraction(1), Fraction(1, 10**6))
        >>> r.max_queries_like(r.start(), (Fraction(1, 4), Fraction(1, 10**7)))
        4
    """

    name: ClassVar[str] = "basic"
    source: ClassVar[str] = (
        "Rogers–Roth–Ullman–Vadhan 2016 (arXiv 1605.08294v1) Lemma 3.5 (basic composition filter)"
    )

    epsilon: Fraction
    delta: Fraction

    def __post_init__(self) -> None:
        e, d = _check_budget(self.epsilon, self.delta)
        object.__setattr__(self, "epsilon", e)
        object.__setattr__(self, "delta", d)

    def start(self) -> State:
        return (ZERO, ZERO)

    def admit(self, state: State, cost: Cost) -> State | None:
        e, d = settle(state[0] + cost[0]), settle(state[1] + cost[1])
        if e > self.epsilon or d > self.delta:
            return None
        return (e, d)

    def _scaled(self, cost: Cost, k: int) -> Cost:
        return (k * cost[0], k * cost[1])

    def why_not(self, state: State, cost: Cost) -> str:
        return (
            "basic rule: Σε would be {} > ε_g={}".format(*_excess(state[0] + cost[0], self.epsilon))
            if settle(state[0] + cost[0]) > self.epsilon
            else "basic rule: Σδ would be {} > δ_g={}".format(*_excess(state[1] + cost[1], self.delta))
        )

    def remaining(self, state: State) -> dict[str, Fraction]:
        return {"epsilon": max(ZERO, self.epsilon - state[0]), "delta": max(ZERO, self.delta - state[1])}

    def spent(self, state: State) -> dict[str, Fraction]:
        return {"epsilon": state[0], "delta": state[1]}

    def describe(self) -> str:
        return f"basic(epsilon={_text(self.epsilon)}, delta={_text(self.delta)})"


@dataclass(frozen=True)
class ZCDPFilter(FilterRule):
    """Rényi/zCDP filter: admit while Σρᵢ ≤ ρ_g; the whole interaction is then ρ_g-zCDP.

    Costs are ``(ρ, 0)``. A ρ-zCDP guarantee is a Rényi-DP guarantee αρ at every order α, and the
    stopping rule Σρᵢ ≤ ρ_g is the same at every order, so the Rényi filter applies at each α at once.

    Source: Feldman, Zrnic 2021 (NeurIPS, "Individual privacy accounting via a Rényi filter"; arXiv
    2008.11193) Thm 4.3 (Rényi filter with adaptively chosen parameters) and Remark 4.4 (the zCDP form).

    Examples:
        >>> from fractions import Fraction
        >>> r = ZCDPFilter(Fraction(1, 2))
        >>> r.max_queries_like(r.start(), (Fraction(1, 8), Fraction(0)))
        4
    """

    name: ClassVar[str] = "zcdp"
    source: ClassVar[str] = "Feldman–Zrnic 2021 Thm 4.3 (Rényi filter), at every order"

    rho: Fraction

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", nonnegative(self.rho, "rho"))

    def start(self) -> State:
        return (ZERO,)

    def accepts(self, cost: Cost) -> bool:
        return cost[1] == 0

    def admit(self, state: State, cost: Cost) -> State | None:
        if cost[1] != 0:
            return None
        r = settle(state[0] + cost[0])
        return None if r > self.rho else (r,)

    def _scaled(self, cost: Cost, k: int) -> Cost:
        return (k * cost[0], k * cost[1])

    def why_not(self, state: State, cost: Cost) -> str:
        if cost[1] != 0:
            return "zcdp rule: a query with δ > 0 has no zCDP guarantee"
        return "zcdp rule: Σρ would be {} > ρ_g={}".format(*_excess(state[0] + cost[0], self.rho))

    def remaining(self, state: State) -> dict[str, Fraction]:
        return {"rho": max(ZERO, self.rho - state[0])}

    def spent(self, state: State) -> dict[str, Fraction]:
        return {"rho": state[0]}

    def describe(self) -> str:
        return f"zcdp(rho={_text(self.rho)})"


@dataclass(frozen=True)
class ZCDPApproxFilter(FilterRule):
    """A zCDP filter for an (ε_g, δ_g) budget: ε-DP queries cost ρᵢ = εᵢ²/2; admit while Σρᵢ ≤ ρ_g.

    ρ_g is the largest ρ whose zCDP guarantee converts to (ε_g, δ_g)-DP (:func:`zcdp_budget`). Every
    admitted interaction is ρ_g-zCDP (Rényi filter at every order), hence (ε_g, δ_g)-DP. Queries with
    δᵢ > 0 have no zCDP guarantee and are refused by this rule.

    Source: Bun–Steinke 2016 Prop 1.4 (ε-DP ⇒ ε²/2-zCDP); Feldman–Zrnic 2021 Thm 4.3 (Rényi filter);
    Canonne–Kamath–Steinke 2020 Prop 12 / Cor 13 (zCDP ⇒ (ε, δ)-DP).

    Examples:
        >>> from fractions import Fraction
        >>> r = ZCDPApproxFilter(Fraction(1), Fraction(1, 10**6))
        >>> r.max_queries_like(r.start(), (Fraction(1, 10), Fraction(0)))
        4
    """

    name: ClassVar[str] = "zcdp"
    source: ClassVar[str] = "Feldman–Zrnic 2021 Thm 4.3 + Canonne–Kamath–Steinke 2020 conversion"

    epsilon: Fraction
    delta: Fraction
    _rho: Fraction = field(init=False, repr=False, compare=False, default=ZERO)

    def __post_init__(self) -> None:
        e, d = _check_budget(self.epsilon, self.delta)
        if d == 0:
            raise InvalidParameter(f"delta={self.delta!r} must be positive for the zcdp rule of (ε, δ)")
        object.__setattr__(self, "epsilon", e)
        object.__setattr__(self, "delta", d)
        object.__setattr__(self, "_rho", zcdp_budget(e, d))

    @property
    def rho(self) -> Fraction:
        """ρ_g, the zCDP budget that converts to (ε_g, δ_g)."""
        return self._rho

    def start(self) -> State:
        return (ZERO,)

    def accepts(self, cost: Cost) -> bool:
        return cost[1] == 0

    def admit(self, state: State, cost: Cost) -> State | None:
        if cost[1] != 0:
            return None
        r = settle(state[0] + pure_to_zcdp(cost[0]))
        return None if r > self._rho else (r,)

    def _admit_k(self, state: State, cost: Cost, k: int) -> State | None:
        if cost[1] != 0:
            return None
        r = state[0] + k * pure_to_zcdp(cost[0])
        return None if r > self._rho else (r,)

    def why_not(self, state: State, cost: Cost) -> str:
        if cost[1] != 0:
            return "zcdp rule: a query with δ > 0 has no zCDP guarantee"
        r = state[0] + pure_to_zcdp(cost[0])
        return "zcdp rule: Σεᵢ²/2 would be {} > ρ_g={}".format(*_excess(r, self._rho))

    def remaining(self, state: State) -> dict[str, Fraction]:
        return {"rho": max(ZERO, self._rho - state[0])}

    def spent(self, state: State) -> dict[str, Fraction]:
        return {"rho": state[0]}

    def describe(self) -> str:
        return f"zcdp(epsilon={_text(self.epsilon)}, delta={_text(self.delta)})"


def zcdp_budget(epsilon: Number, delta: Number) -> Fraction:
    """The largest ρ (to 2^-60 relative precision, rounded down) whose zCDP guarantee gives (ε, δ)-DP.

    Bisection on the Canonne–Kamath–Steinke conversion :func:`~dpcompose.accounting.zcdp_to_approx`
    (itself an upper bound), so ``zcdp_to_approx(zcdp_budget(ε, δ), δ) ≤ ε`` always holds.

    Source: Canonne, Kamath, Steinke 2020 Prop 12 / Cor 13 (the conversion, the tightest proven one for
    zCDP); used as the ρ_g of a zCDP filter for an (ε_g, δ_g) budget (Feldman–Zrnic 2021 Thm 4.3).

    Args:
        epsilon: ε_g ≥ 0.
        delta: δ_g ∈ (0, 1).

    Examples:
        >>> rho = zcdp_budget(1.0, 1e-6)
        >>> float(rho)
        0.02435597...
        >>> zcdp_to_approx(rho, 1e-6) <= 1
        True
    """
    e = nonnegative(epsilon, "epsilon")
    d = probability(delta, "delta")
    if d == 0:
        raise InvalidParameter(f"delta={delta!r} must be positive to convert an (ε, δ) budget to zCDP")
    return _zcdp_budget(e, d)


@functools.lru_cache(maxsize=256)
def _zcdp_budget(e: Fraction, d: Fraction) -> Fraction:
    if e == 0:
        return ZERO
    lo, hi = ZERO, e  # zcdp_to_approx(ρ) ≥ ρ (its Bun–Steinke term is ρ + 2√(ρ ln(1/δ))), so ρ ≤ ε
    while zcdp_to_approx(hi, d) <= e:  # pragma: no cover - hi is already above the answer
        hi *= 2
    for _ in range(64):
        mid = Fraction(float_down((lo + hi) / 2))
        if mid <= lo or mid >= hi:
            break
        if zcdp_to_approx(mid, d) <= e:
            lo = mid
        else:
            hi = mid
    return lo


def _text(q: Fraction) -> str:
    """``str(q)``, or a hexadecimal form when a part has more digits than Python prints (a ``longdouble``
    subnormal has a 4,951-digit denominator)."""
    if q.numerator.bit_length() < 10_000 and q.denominator.bit_length() < 10_000:
        return str(q)
    return f"0x{q.numerator:x}/0x{q.denominator:x}"


def _excess(total: Fraction, limit: Fraction) -> tuple[str, str]:
    """A refused running sum (settled up, as :meth:`FilterRule.admit` compares it) and its limit, with
    enough digits that the shown numbers themselves exceed one another (:func:`format_excess`)."""
    return format_excess(settle(total), limit)


def _order(q: Fraction) -> str:
    """A Rényi order α as a short label (an order is not a privacy quantity: nothing to round safely)."""
    if q.denominator == 1:
        return str(q.numerator)
    return f"{float(q):.6g}"


def _rruv_bound_up(s: Fraction, drift: Fraction, h_lo: Fraction, h_hi: Fraction, log2d: Fraction) -> float:
    """An upper bound on √(2(S + H)(1 + ½ ln(S/H + 1)) ln(2/δ_g)) + drift, for any H in [h_lo, h_hi]."""
    inner = (s + h_hi) * (1 + Fraction(log1p_up(s / h_lo)) / 2) * 2 * log2d
    root = sqrt_up(inner)
    return float_up(Fraction(root) + drift) if math.isfinite(root) else math.inf


@dataclass(frozen=True)
class RRUVFilter(FilterRule):
    """The advanced-composition filter of Rogers–Roth–Ullman–Vadhan 2016, Theorem 5.1.

    Admit while Σδᵢ ≤ δ_g/2 and

    ``√(2(Σεᵢ² + H)(1 + ½ ln(Σεᵢ²/H + 1)) ln(2/δ_g)) + Σ εᵢ(e^{εᵢ} − 1)/2 ≤ ε_g``,
    ``H = ε_g² / (28.04 ln(1/δ_g))``, for δ_g ∈ (0, 1/e).

    State: (Σεᵢ², Σεᵢ(e^{εᵢ}−1)/2 rounded up, Σδᵢ). The left side is evaluated with every irrational
    step rounded up (and H bracketed from both sides), so an admitted sequence always satisfies the
    theorem's condition.

    Source: Rogers, Roth, Ullman, Vadhan 2016 (NeurIPS; arXiv 1605.08294) Thm 5.1.

    Examples:
        >>> from fractions import Fraction
        >>> r = RRUVFilter(Fraction(3), Fraction(1, 10**6))
        >>> r.max_queries_like(r.start(), (Fraction(1, 10), Fraction(0)))
        12
    """

    name: ClassVar[str] = "rruv"
    source: ClassVar[str] = "Rogers–Roth–Ullman–Vadhan 2016 Thm 5.1"

    epsilon: Fraction
    delta: Fraction
    _h_lo: Fraction = field(init=False, repr=False, compare=False, default=ZERO)
    _h_hi: Fraction = field(init=False, repr=False, compare=False, default=ZERO)
    _log2d: Fraction = field(init=False, repr=False, compare=False, default=ZERO)

    def __post_init__(self) -> None:
        e, d = _check_budget(self.epsilon, self.delta)
        if d == 0 or not float(d) < math.exp(-1) * (1 - 1e-12):
            raise InvalidParameter(f"delta={self.delta!r} must lie in (0, 1/e) for the RRUV filter (Thm 5.1)")
        if e == 0:
            raise InvalidParameter(f"epsilon={self.epsilon!r} must be positive for the RRUV filter")
        object.__setattr__(self, "epsilon", e)
        object.__setattr__(self, "delta", d)
        c = Fraction(2804, 100)
        object.__setattr__(self, "_h_lo", e * e / (c * Fraction(-log_down(d))))
        object.__setattr__(self, "_h_hi", e * e / (c * Fraction(-log_up(d))))
        object.__setattr__(self, "_log2d", Fraction(log_up(2 / d)))

    def start(self) -> State:
        return (ZERO, ZERO, ZERO)

    @staticmethod
    def _drift(eps: Fraction) -> Fraction | None:
        """εᵢ(e^{εᵢ} − 1)/2 rounded up; ``None`` when e^{εᵢ} overflows (no ε_g admits such a query)."""
        if not eps:
            return ZERO
        gain = expm1_up(eps)
        return settle(eps * Fraction(gain) / 2) if math.isfinite(gain) else None

    def _admit_sums(self, s: Fraction, drift: Fraction, dsum: Fraction) -> bool:
        if dsum > self.delta / 2:
            return False
        bound = _rruv_bound_up(s, drift, self._h_lo, self._h_hi, self._log2d)
        return math.isfinite(bound) and Fraction(bound) <= self.epsilon

    def admit(self, state: State, cost: Cost) -> State | None:
        step = self._drift(cost[0])
        if step is None:
            return None
        s = settle(state[0] + cost[0] * cost[0])
        drift = settle(state[1] + step)
        dsum = settle(state[2] + cost[1])
        return (s, drift, dsum) if self._admit_sums(s, drift, dsum) else None

    def _admit_k(self, state: State, cost: Cost, k: int) -> State | None:
        step = self._drift(cost[0])
        if step is None:
            return None
        s = settle(state[0] + k * cost[0] * cost[0])
        drift = settle(state[1] + k * step)
        dsum = settle(state[2] + k * cost[1])
        return (s, drift, dsum) if self._admit_sums(s, drift, dsum) else None

    def why_not(self, state: State, cost: Cost) -> str:
        if state[2] + cost[1] > self.delta / 2:
            shown = _excess(state[2] + cost[1], self.delta / 2)
            return "rruv rule: Σδ would be {} > δ_g/2={}".format(*shown)
        s = state[0] + cost[0] * cost[0]
        step = self._drift(cost[0])
        if step is None:
            return f"rruv rule (Thm 5.1): ε={format_up(cost[0])} is too large (e^ε overflows) for any budget"
        b = _rruv_bound_up(s, state[1] + step, self._h_lo, self._h_hi, self._log2d)
        return "rruv rule (Thm 5.1): the bound would be {} > ε_g={}".format(*format_excess(b, self.epsilon))

    def remaining(self, state: State) -> dict[str, Fraction]:
        b = Fraction(_rruv_bound_up(state[0], state[1], self._h_lo, self._h_hi, self._log2d))
        return {
            "epsilon_bound": max(ZERO, self.epsilon - b),
            "delta": max(ZERO, self.delta / 2 - state[2]),
        }

    def spent(self, state: State) -> dict[str, Fraction]:
        b = Fraction(_rruv_bound_up(state[0], state[1], self._h_lo, self._h_hi, self._log2d))
        return {"sum_eps_sq": state[0], "epsilon_bound": b, "delta": state[2]}

    def describe(self) -> str:
        return f"rruv(epsilon={_text(self.epsilon)}, delta={_text(self.delta)})"


def _whitehouse_vmax(epsilon: Fraction, delta_slack: Fraction) -> Fraction:
    """The largest V (rounded down) with √(2 ln(1/δ″) V) + V/2 ≤ ε, checked with upward rounding."""
    a_up = Fraction(-log_down(delta_slack))
    # Solve s²/2 + √(2a)·s = ε for s = √V: s = √(2a + 2ε) − √(2a).
    s = sqrt_down(2 * a_up + 2 * epsilon) - sqrt_up(2 * a_up)
    v = Fraction(max(0.0, s)) ** 2

    def ok(x: Fraction) -> bool:
        return sqrt_up_q(2 * a_up * x) + x / 2 <= epsilon

    step = Fraction(1, 10**12) * (v if v > 0 else Fraction(1))
    while v > 0 and not ok(v):
        v = max(ZERO, v - step)
        step *= 2
    return settle_down(v)


def settle_down(x: Fraction) -> Fraction:
    """``x`` rounded *down* to a multiple of 2^-128 if its denominator is large (for limits)."""
    if x.denominator.bit_length() <= 2 * _SETTLE_BITS:
        return x
    return Fraction((x.numerator << _SETTLE_BITS) // x.denominator, 1 << _SETTLE_BITS)


@dataclass(frozen=True)
class WhitehouseFilter(FilterRule):
    """The approximate-DP filter of Whitehouse, Ramdas, Rogers, Wu 2023.

    With δ_g = δ′ + δ″ split in advance (``delta_slack`` = δ″ > 0), admit while Σδᵢ ≤ δ′ and

    ``√(2 ln(1/δ″) Σεᵢ²) + ½ Σεᵢ² ≤ ε_g``.

    The left side increases in V = Σεᵢ², so the rule is Σεᵢ² ≤ V_max, with V_max computed once (rounded
    down and checked with outward rounding): each query is then one exact comparison.

    Source: Whitehouse, Ramdas, Rogers, Wu 2023 (ICML; arXiv 2203.05481), the privacy filter for
    approximate DP (their Theorem 1, as OpenDP cites it), which matches advanced composition including
    constants. The formula above is the one the project's reference values were computed with.

    Examples:
        >>> from fractions import Fraction
        >>> r = WhitehouseFilter(Fraction(2), Fraction(1, 10**6), Fraction(1, 10**6))
        >>> r.max_queries_like(r.start(), (Fraction(1, 10), Fraction(0)))
        13
    """

    name: ClassVar[str] = "whitehouse"
    source: ClassVar[str] = "Whitehouse–Ramdas–Rogers–Wu 2023 §3 (approximate-DP filter)"

    epsilon: Fraction
    delta: Fraction
    delta_slack: Fraction
    _vmax: Fraction = field(init=False, repr=False, compare=False, default=ZERO)

    def __post_init__(self) -> None:
        e, d = _check_budget(self.epsilon, self.delta)
        slack = probability(self.delta_slack, "delta_slack")
        if not 0 < slack <= d:
            raise InvalidParameter(
                f"delta_slack={self.delta_slack!r} must lie in (0, delta={self.delta!r}] (δ″ of the split)"
            )
        object.__setattr__(self, "epsilon", e)
        object.__setattr__(self, "delta", d)
        object.__setattr__(self, "delta_slack", slack)
        object.__setattr__(self, "_vmax", _whitehouse_vmax(e, slack))

    @property
    def delta_queries(self) -> Fraction:
        """δ′ = δ_g − δ″, the part of δ_g the queries' own δᵢ may use."""
        return self.delta - self.delta_slack

    @property
    def vmax(self) -> Fraction:
        """The largest Σεᵢ² the rule admits."""
        return self._vmax

    def start(self) -> State:
        return (ZERO, ZERO)

    def admit(self, state: State, cost: Cost) -> State | None:
        v = settle(state[0] + cost[0] * cost[0])
        d = settle(state[1] + cost[1])
        if v > self._vmax or d > self.delta_queries:
            return None
        return (v, d)

    def _admit_k(self, state: State, cost: Cost, k: int) -> State | None:
        v = state[0] + k * cost[0] * cost[0]
        d = state[1] + k * cost[1]
        return None if v > self._vmax or d > self.delta_queries else (v, d)

    def why_not(self, state: State, cost: Cost) -> str:
        if state[1] + cost[1] > self.delta_queries:
            return "whitehouse rule: Σδ would be {} > δ′={}".format(
                *_excess(state[1] + cost[1], self.delta_queries)
            )
        total, vmax = _excess(state[0] + cost[0] ** 2, self._vmax)
        return (
            f"whitehouse rule: Σε² would be {total} > {vmax} "
            f"(the most that keeps √(2 ln(1/δ″)Σε²) + Σε²/2 ≤ ε_g={format_up(self.epsilon)})"
        )

    def remaining(self, state: State) -> dict[str, Fraction]:
        return {
            "sum_eps_sq": max(ZERO, self._vmax - state[0]),
            "delta": max(ZERO, self.delta_queries - state[1]),
        }

    def spent(self, state: State) -> dict[str, Fraction]:
        return {"sum_eps_sq": state[0], "delta": state[1]}

    def describe(self) -> str:
        return (
            f"whitehouse(epsilon={_text(self.epsilon)}, delta={_text(self.delta)}, "
            f"delta_slack={_text(self.delta_slack)})"
        )


def rruv_filter_epsilon(epsilons: Sequence[Number], epsilon_g: Number, delta_g: Number) -> Fraction:
    """The left side of the RRUV Thm 5.1 condition for the sequence ``epsilons``, rounded up.

    The filter with budget (ε_g, δ_g) admits the sequence (all δᵢ = 0) iff this is ≤ ε_g.

    Source: Rogers, Roth, Ullman, Vadhan 2016 Thm 5.1.

    Examples:
        >>> b = rruv_filter_epsilon([0.1] * 10, 2.6306683894319134 * (1 + 1e-9), 1e-6)
        >>> float(b) <= 2.6306683894319134 * (1 + 1e-9)
        True
    """
    e_g, d_g = nonnegative(epsilon_g, "epsilon_g"), probability(delta_g, "delta_g")
    if e_g == 0:
        raise InvalidParameter(f"epsilon_g={epsilon_g!r} must be positive for the RRUV filter")
    if d_g == 0 or not float(d_g) < math.exp(-1) * (1 - 1e-12):
        raise InvalidParameter(f"delta_g={delta_g!r} must lie in (0, 1/e) for the RRUV filter (Thm 5.1)")
    rule = RRUVFilter(e_g, d_g)
    eps = [nonnegative(e, f"epsilons[{i}]") for i, e in enumerate(as_sequence(epsilons, "epsilons"))]
    s = sum((e * e for e in eps), ZERO)
    drift = ZERO
    for i, e in enumerate(eps):
        step = rule._drift(e)
        if step is None:
            raise InvalidParameter(
                f"epsilons[{i}]={format_up(e)} is too large for the RRUV bound (e^ε exceeds every float): "
                "no budget admits it"
            )
        drift += step
    return Fraction(_rruv_bound_up(s, drift, rule._h_lo, rule._h_hi, rule._log2d))


def whitehouse_filter_epsilon(epsilons: Sequence[Number], delta_slack: Number) -> Fraction:
    """``√(2 ln(1/δ″) Σεᵢ²) + ½ Σεᵢ²``, rounded up: the ε the Whitehouse et al. filter charges.

    Source: Whitehouse, Ramdas, Rogers, Wu 2023 §3 (approximate-DP filter).

    Examples:
        >>> float(whitehouse_filter_epsilon([0.1] * 10, 1e-6))
        1.71225813626911...
    """
    eps = [nonnegative(e, f"epsilons[{i}]") for i, e in enumerate(as_sequence(epsilons, "epsilons"))]
    slack = probability(delta_slack, "delta_slack")
    if slack == 0:
        raise InvalidParameter(f"delta_slack={delta_slack!r} must be positive")
    v = sum((e * e for e in eps), ZERO)
    return sqrt_up_q(2 * Fraction(-log_down(slack)) * v) + v / 2


def pure_cost_to_zcdp(cost: Cost) -> Cost:
    """An (ε, 0) cost as a zCDP cost (ε²/2, 0); a δ > 0 cost has none.

    Source: Bun–Steinke 2016 Prop 1.4.

    Raises:
        UnsupportedComposition: δ > 0.
    """
    if cost[1] != 0:
        raise UnsupportedComposition("an (ε, δ) guarantee with δ > 0 implies no zCDP guarantee")
    return (pure_to_zcdp(cost[0]), ZERO)


DEFAULT_ORDERS: tuple[Fraction, ...] = tuple(
    Fraction(a)
    for a in (
        "1.25",
        "1.5",
        "1.75",
        "2",
        "2.5",
        "3",
        "4",
        "5",
        "6",
        "8",
        "10",
        "12",
        "16",
        "20",
        "32",
        "64",
        "128",
        "256",
    )
)
"""The Rényi orders a :class:`RenyiFilter` checks when none are given (the grid common in RDP accountants)."""


def check_orders(orders: Sequence[Number]) -> tuple[Fraction, ...]:
    """Rényi orders as exact Fractions, each > 1 and none repeated; raises InvalidParameter otherwise."""
    seq = as_sequence(orders, "orders")
    out = []
    for i, a in enumerate(seq):
        alpha = nonnegative(a, f"orders[{i}]")
        if not alpha > 1:
            raise InvalidParameter(f"orders[{i}]={a!r} must be a Rényi order > 1")
        out.append(alpha)
    if len(set(out)) != len(out):
        raise InvalidParameter(f"orders={list(orders)!r} must not repeat an order")
    return tuple(out)


@dataclass(frozen=True)
class RenyiFilter(FilterRule):
    """The Rényi filter at a finite set of orders: admit while Σᵢ εᵢ(α) ≤ B(α) at *every* order α.

    A cost is one Rényi ε per order, in the order of ``orders``. Fix an order α. Halting as soon as any
    order would exceed its budget keeps Σᵢ εᵢ(α) ≤ B(α) on every run, with each εᵢ(α) chosen after
    seeing earlier answers; that is exactly the hypothesis of the Rényi filter theorem, so the whole
    interaction is (α, B(α))-RDP. This holds for each order of the set separately, so the guarantee is
    the budget curve at every listed order (and nothing is claimed at other orders).

    Source: Feldman, Zrnic 2021 (NeurIPS; arXiv 2008.11193) Thm 4.3, the Rényi filter with adaptively
    chosen parameters, applied at each order.

    Examples:
        >>> from fractions import Fraction
        >>> r = RenyiFilter((Fraction(2), Fraction(8)), (Fraction(1), Fraction(2)))
        >>> # a 1/8-zCDP query costs αρ: 1/4 at α = 2 and 1 at α = 8
        >>> r.max_queries_like(r.start(), (Fraction(1, 4), Fraction(1)))
        2
    """

    name: ClassVar[str] = "renyi"
    source: ClassVar[str] = "Feldman–Zrnic 2021 Thm 4.3 (Rényi filter), at each listed order"

    orders: tuple[Fraction, ...]
    budgets: tuple[Fraction, ...]

    def __post_init__(self) -> None:
        orders = check_orders(self.orders)
        budgets = tuple(
            nonnegative(b, f"budgets[{i}]") for i, b in enumerate(as_sequence(self.budgets, "budgets"))
        )
        if len(budgets) != len(orders):
            raise InvalidParameter(
                f"budgets has {len(budgets)} values for {len(orders)} orders; give one budget per order"
            )
        object.__setattr__(self, "orders", orders)
        object.__setattr__(self, "budgets", budgets)

    def start(self) -> State:
        return tuple(ZERO for _ in self.orders)

    def accepts(self, cost: Cost) -> bool:
        return len(cost) == len(self.orders)

    def _check_cost(self, cost: Cost) -> None:
        if len(cost) != len(self.orders):
            raise InvalidParameter(
                f"a Rényi cost needs {len(self.orders)} values (one per order), got {len(cost)}"
            )

    def admit(self, state: State, cost: Cost) -> State | None:
        self._check_cost(cost)
        new = tuple(settle(s + c) for s, c in zip(state, cost, strict=True))
        return None if any(s > b for s, b in zip(new, self.budgets, strict=True)) else new

    def _scaled(self, cost: Cost, k: int) -> Cost:
        return tuple(k * c for c in cost)

    def why_not(self, state: State, cost: Cost) -> str:
        self._check_cost(cost)
        for alpha, s, c, b in zip(self.orders, state, cost, self.budgets, strict=True):
            if s + c > b:
                total, limit = _excess(s + c, b)
                return f"renyi rule: Σε(α) at α={_order(alpha)} would be {total} > B(α)={limit}"
        return "renyi rule: within budget"  # pragma: no cover - only called after a refusal

    def remaining(self, state: State) -> dict[str, Fraction]:
        return {
            f"alpha={_order(a)}": max(ZERO, b - s)
            for a, s, b in zip(self.orders, state, self.budgets, strict=True)
        }

    def spent(self, state: State) -> dict[str, Fraction]:
        return {f"alpha={_order(a)}": s for a, s in zip(self.orders, state, strict=True)}

    def describe(self) -> str:
        pairs = ", ".join(f"{_text(a)}:{_text(b)}" for a, b in zip(self.orders, self.budgets, strict=True))
        return f"renyi({pairs})"


def zcdp_cost_to_renyi(rho: Fraction, orders: Sequence[Fraction]) -> Cost:
    """A ρ-zCDP cost as Rényi costs ``α·ρ`` at each order.

    Source: Bun, Steinke 2016 (TCC; arXiv 1605.02065) Def. 1.1: ρ-zCDP means D_α ≤ αρ for every α > 1.

    Examples:
        >>> zcdp_cost_to_renyi(Fraction(1, 8), (Fraction(2), Fraction(8)))
        (Fraction(1, 4), Fraction(1, 1))
    """
    return tuple(a * rho for a in orders)


def pure_cost_to_renyi(epsilon: Fraction, orders: Sequence[Fraction]) -> Cost:
    """An ε-DP cost as Rényi costs ``min(ε, α·ε²/2)`` at each order.

    ε-DP implies ε²/2-zCDP, so D_α ≤ αε²/2; and D_α ≤ D_∞ ≤ ε because Rényi divergence does not decrease
    with the order.

    Source: Bun, Steinke 2016 Prop. 1.4 (ε-DP ⇒ ε²/2-zCDP); van Erven, Harremoës 2014 (IEEE Trans. Inf.
    Theory) Thm. 3 (D_α is nondecreasing in α), with D_∞ ≤ ε the definition of ε-DP.

    Examples:
        >>> pure_cost_to_renyi(Fraction(1, 2), (Fraction(2), Fraction(8)))
        (Fraction(1, 4), Fraction(1, 2))
    """
    half_sq = pure_to_zcdp(epsilon)
    return tuple(min(epsilon, a * half_sq) for a in orders)


def renyi_compose_epsilon(
    parts: Sequence[tuple[bool, Fraction, int]], delta: Fraction, orders: Sequence[Fraction] = DEFAULT_ORDERS
) -> Fraction:
    """ε at ``delta`` of a composition of ``count`` copies of each part ``(pure, value, count)``: an ε-DP
    part (``pure``, value ε) as the Rényi curve α ↦ min(ε, αε²/2) (:func:`pure_cost_to_renyi`), a ρ-zCDP
    part as α ↦ αρ; the curves add and are converted at ``delta`` on ``orders`` (checked orders > 1;
    default :data:`DEFAULT_ORDERS`).

    Source: Mironov 2017 Prop. 1 (Rényi curves add; concurrently Lyu 2022 Thm 2); Balle–Barthe–Gaboardi–
    Hsu–Sato 2020 Thm 21 (Rényi DP ⇒ (ε, δ)).

    Examples:
        >>> 3 < renyi_compose_epsilon([(True, Fraction(1, 10), 100)], Fraction(1, 10**6)) < 6
        True
    """
    # Σ n·min(ε, αε²/2) over the pure parts is (α/2)·Σ_{αε ≤ 2} n·ε² + Σ_{αε > 2} n·ε: with the ε sorted,
    # sums of a few runs (one per distinct cut 2/α) instead of a curve per part (the same exact sums: 20,000
    # distinct parts took 13 s on 76 orders)
    pure = sorted((v, n) for is_pure, v, n in parts if is_pure)
    values = [v for v, _ in pure]
    rho = exact_sum(n * v for is_pure, v, n in parts if not is_pure)
    cuts = [bisect_right(values, 2 / a) for a in orders]  # the parts with αε ≤ 2 come first
    ends = sorted(set(cuts) | {0, len(pure)})
    sq_runs = [exact_sum(n * v * v for v, n in pure[a:b]) for a, b in itertools.pairwise(ends)]
    lin_runs = [exact_sum(n * v for v, n in pure[a:b]) for a, b in itertools.pairwise(ends)]
    sq_upto = dict(zip(ends, itertools.accumulate([ZERO, *sq_runs]), strict=True))
    lin_from = dict(zip(ends, list(itertools.accumulate([ZERO, *lin_runs[::-1]]))[::-1], strict=True))
    totals = [a / 2 * sq_upto[k] + lin_from[k] + a * rho for a, k in zip(orders, cuts, strict=True)]
    return renyi_to_approx(orders, totals, delta)


def add_renyi_curves(parts: Iterable[tuple[Sequence[Fraction], int]], length: int) -> list[Fraction]:
    """Σ count·curve order by order, over ``(curve, count)`` parts whose curves hold ``length`` orders:
    the Rényi curve of their composition (Mironov 2017 Prop. 1; concurrently Lyu 2022 Thm 2).

    Examples:
        >>> add_renyi_curves([((Fraction(1), Fraction(2)), 3), ((Fraction(1, 2), Fraction(1)), 2)], 2)
        [Fraction(4, 1), Fraction(8, 1)]
    """
    columns: list[list[Fraction]] = [[] for _ in range(length)]
    for curve, count in parts:
        if len(curve) != length:
            raise ValueError(f"a curve of {len(curve)} orders among curves of {length}")
        for column, c in zip(columns, curve, strict=True):
            column.append(count * c)
    return [exact_sum(column) for column in columns]  # (exact: the same sums, by denominator)
