"""Measures: how far apart two output distributions are, and how their distances compose.

Each measure owns its composition rule (STYLE §3): :meth:`Measure.compose` is the basic rule that is
proven for every interaction pattern the library offers — sequential, adaptive and concurrent — and
delegates to a pure function of :mod:`dpcompose.accounting`. Combinators may apply tighter theorems on top.

A distance the *user states* (a ``d_out`` bound) is parsed with :meth:`Measure.parse`, which reads a float
as the decimal it prints as (``0.1`` is ``1/10``; see docs/concepts.md).

Examples:
    >>> import dpcompose as dp
    >>> from fractions import Fraction
    >>> dp.PureDP().compose([Fraction(1, 10)] * 10)
    Fraction(1, 1)
    >>> dp.ApproxDP().parse((1.0, 1e-6))
    (Fraction(1, 1), Fraction(1, 1000000))
"""

from __future__ import annotations

import enum
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Generic, TypeVar

from dpcompose._validation import check_finite_nonnegative, check_probability
from dpcompose.accounting import PrivacyProfile, basic, decimal, format_up, zcdp_compose
from dpcompose.errors import InvalidParameter

__all__ = [
    "ZCDP",
    "ApproxDP",
    "Composability",
    "Measure",
    "ProfileDP",
    "PureDP",
    "RenyiCurve",
    "RenyiDP",
]

D = TypeVar("D")


class Composability(enum.Enum):
    """Which interaction patterns a measure's composition rule is proven for."""

    SEQUENTIAL = "sequential"
    CONCURRENT = "concurrent"


class Measure(Generic[D]):
    """Base of all measures. ``D`` is the type of a distance (ε, (ε, δ), ρ, a curve, …)."""

    __slots__ = ()

    #: The theorem behind :meth:`compose`, printed by ``dp.explain``.
    compose_source: str = ""

    def parse(self, d: object, name: str = "d_out") -> D:  # pragma: no cover - abstract
        """Validate a user-stated distance (a budget) and return it in exact form."""
        raise NotImplementedError

    def less_equal(self, a: D, b: D) -> bool:  # pragma: no cover - abstract
        """Whether a guarantee of ``a`` implies a guarantee of ``b``."""
        raise NotImplementedError

    def zero(self) -> D:  # pragma: no cover - abstract
        """The distance of a mechanism that reveals nothing."""
        raise NotImplementedError

    def compose(self, d_mids: Sequence[D]) -> D:  # pragma: no cover - abstract
        """Compose the guarantees of several mechanisms (valid sequentially and concurrently)."""
        raise NotImplementedError

    def composability(self) -> Composability:
        """Every measure here composes concurrently with the rule of :meth:`compose`.

        Source: pure DP, Vadhan–Wang 2021 Thm 3.3; approximate DP and f-DP, Vadhan–Zhang 2023
        (arXiv 2207.08335) Thm 1.3; Rényi DP and zCDP, Lyu 2022 (NeurIPS; arXiv 2207.09397) Thm 2 / Cor 1.
        """
        return Composability.CONCURRENT

    def display(self, d: D) -> str:
        """A short human-readable form of a distance; every number in it is rounded up
        (:func:`~dpcompose.accounting.format_up`), so it never shows less than the cost."""
        return repr(d)

    def check_cost(self, d: object, what: str = "cost") -> D:  # pragma: no cover - abstract
        """Validate a distance a privacy map *returned* (a cost about to be charged or composed).

        The one check every charging path applies before a budget or ledger records anything: the cost
        must be this measure's type, exact, finite and non-negative. Raises :class:`InvalidParameter`
        naming ``what`` otherwise (a negative cost would refund a budget; a float is not exact).
        """
        raise InvalidParameter(f"{what}: {self!r} has no cost validation, so it cannot be charged")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))


def _fmt(q: Fraction) -> str:
    """A privacy number for people: rounded up to 6 significant digits (docs/concepts.md)."""
    return format_up(q)


class _ScalarMeasure(Measure[Fraction]):
    """A measure whose distances are single exact numbers ≥ 0, ordered as numbers (ε, ρ)."""

    __slots__ = ()

    def parse(self, d: object, name: str = "d_out") -> Fraction:
        check_finite_nonnegative(d, name)
        return decimal(d, name)

    def less_equal(self, a: Fraction, b: Fraction) -> bool:
        return a <= b

    def zero(self) -> Fraction:
        return Fraction(0)

    def check_cost(self, d: object, what: str = "cost") -> Fraction:
        return exact_cost(d, what)


def exact_cost(d: object, what: str) -> Fraction:
    """``d`` as a Fraction if it is an exact number ≥ 0 (int or Fraction), else ``InvalidParameter``.

    Floats are refused: a privacy map returns exact values (``Fraction``), and a float cost would have
    to be rounded by someone who does not know which way is safe.
    """
    if isinstance(d, bool) or not isinstance(d, (numbers.Integral, Fraction)):
        raise InvalidParameter(
            f"{what}={d!r} must be an exact number ≥ 0 (int or fractions.Fraction), not "
            f"{type(d).__name__}; a privacy map must return exact values (see dpcompose.accounting.exact)"
        )
    # a plain Fraction first: a subclass could override the comparison below
    if isinstance(d, numbers.Integral):
        q = Fraction(int(d))
    else:
        q = Fraction(int(d.numerator), int(d.denominator))
    if q < 0:
        raise InvalidParameter(f"{what}={q} must be non-negative: a negative cost would refund a budget")
    if max(q.numerator.bit_length(), q.denominator.bit_length()) > _MAX_COST_BITS:
        raise InvalidParameter(
            f"{what} has a numerator or denominator of more than {_MAX_COST_BITS} bits: too large to charge "
            "or record (round it up to a simpler fraction)"
        )
    return q


_MAX_COST_BITS = 10_000


class PureDP(_ScalarMeasure):
    """ε-differential privacy. Distances are exact ε ≥ 0.

    Source: Dwork, McSherry, Nissim, Smith 2006 (definition and sequential composition, Σεᵢ).
    """

    __slots__ = ()
    compose_source = "Dwork–McSherry–Nissim–Smith 2006 (basic); Vadhan–Wang 2021 Thm 3.3 (concurrent)"

    def compose(self, d_mids: Sequence[Fraction]) -> Fraction:
        return basic(list(d_mids))[0] if d_mids else Fraction(0)

    def display(self, d: Fraction) -> str:
        return f"ε={_fmt(d)}"


class ApproxDP(Measure[tuple[Fraction, Fraction]]):
    """(ε, δ)-differential privacy. Distances are exact pairs (ε, δ) with ε ≥ 0 and 0 ≤ δ < 1.

    Source: Dwork, Kenthapadi, McSherry, Mironov, Naor 2006.
    """

    __slots__ = ()
    compose_source = (
        "Dwork–Kenthapadi–McSherry–Mironov–Naor 2006 (basic); Vadhan–Zhang 2023 Thm 1.3 (concurrent)"
    )

    def parse(self, d: object, name: str = "d_out") -> tuple[Fraction, Fraction]:
        if not isinstance(d, (tuple, list)) or len(d) != 2:
            raise InvalidParameter(f"{name}={d!r} must be a pair (epsilon, delta)")
        eps, delta = d
        check_finite_nonnegative(eps, f"{name} epsilon")
        check_probability(delta, f"{name} delta")
        return decimal(eps, name), decimal(delta, name)

    def less_equal(self, a: tuple[Fraction, Fraction], b: tuple[Fraction, Fraction]) -> bool:
        return a[0] <= b[0] and a[1] <= b[1]

    def zero(self) -> tuple[Fraction, Fraction]:
        return Fraction(0), Fraction(0)

    def compose(self, d_mids: Sequence[tuple[Fraction, Fraction]]) -> tuple[Fraction, Fraction]:
        if not d_mids:
            return self.zero()
        return basic([e for e, _ in d_mids], [d for _, d in d_mids])

    def check_cost(self, d: object, what: str = "cost") -> tuple[Fraction, Fraction]:
        if not isinstance(d, tuple) or len(d) != 2:
            raise InvalidParameter(f"{what}={d!r} must be a pair (epsilon, delta) of exact numbers")
        eps, delta = exact_cost(d[0], f"{what} epsilon"), exact_cost(d[1], f"{what} delta")
        if delta >= 1:  # (δ = 1 promises nothing, so it is never charged)
            raise InvalidParameter(f"{what} delta={delta} must be below 1 (δ = 1 is no privacy guarantee)")
        return eps, delta

    def display(self, d: tuple[Fraction, Fraction]) -> str:
        return f"ε={_fmt(d[0])}, δ={_fmt(d[1])}"


class ZCDP(_ScalarMeasure):
    """ρ-zero-concentrated differential privacy. Distances are exact ρ ≥ 0.

    Source: Bun–Steinke 2016 (definition; composition Σρᵢ, Lemma 2.3).
    """

    __slots__ = ()
    compose_source = "Bun–Steinke 2016 Lemma 2.3; Lyu 2022 Cor 1 (concurrent)"

    def compose(self, d_mids: Sequence[Fraction]) -> Fraction:
        return zcdp_compose(list(d_mids)) if d_mids else Fraction(0)

    def display(self, d: Fraction) -> str:
        return f"ρ={_fmt(d)}"


@dataclass(frozen=True, slots=True)
class RenyiCurve:
    """A Rényi-DP guarantee: the curve α ↦ ε(α) for orders α > 1, evaluated on demand.

    Adding two curves composes them (Mironov 2017 Prop. 1).

    Examples:
        >>> from fractions import Fraction
        >>> c = RenyiCurve(lambda a: Fraction(a) / 2, "α/2")  # the curve of ρ = 1/2 zCDP
        >>> (c + c)(3)
        Fraction(3, 1)
    """

    curve: Callable[[Any], Fraction]
    label: str = "curve"

    def __post_init__(self) -> None:
        if not callable(self.curve):
            raise InvalidParameter(f"curve={self.curve!r} must be a function of the order α")

    def __call__(self, alpha: float | Fraction) -> Fraction:
        if not alpha > 1:
            raise InvalidParameter(f"alpha={alpha!r} must be > 1")
        return self.curve(alpha)

    def __add__(self, other: RenyiCurve) -> RenyiCurve:
        a, b = self.curve, other.curve
        return RenyiCurve(lambda alpha: a(alpha) + b(alpha), f"({self.label} + {other.label})")


class RenyiDP(Measure[RenyiCurve]):
    """Rényi differential privacy: distances are curves α ↦ ε(α).

    Source: Mironov 2017 (definition; composition adds curves, Prop. 1).
    """

    __slots__ = ()
    compose_source = "Mironov 2017 Prop. 1; Lyu 2022 Thm 2 (concurrent)"

    def parse(self, d: object, name: str = "d_out") -> RenyiCurve:
        if not isinstance(d, RenyiCurve):
            raise InvalidParameter(f"{name}={d!r} must be a RenyiCurve")
        return d

    def less_equal(self, a: RenyiCurve, b: RenyiCurve) -> bool:
        raise InvalidParameter(
            "two Rényi curves cannot be compared everywhere; compare at chosen orders, or convert "
            "with accounting.renyi_to_approx"
        )

    def zero(self) -> RenyiCurve:
        return RenyiCurve(lambda alpha: Fraction(0), "0")

    def check_cost(self, d: object, what: str = "cost") -> RenyiCurve:
        """The curve, with every value it gives checked as an exact cost ≥ 0 when it is evaluated."""
        if not isinstance(d, RenyiCurve):
            raise InvalidParameter(f"{what}={d!r} must be a RenyiCurve")
        curve = d.curve

        def checked(alpha: Any) -> Fraction:
            return exact_cost(curve(alpha), f"{what} at α={alpha}")

        return RenyiCurve(checked, d.label)

    def compose(self, d_mids: Sequence[RenyiCurve]) -> RenyiCurve:
        total = self.zero()
        for c in d_mids:
            total = total + c
        return total

    def display(self, d: RenyiCurve) -> str:
        return f"ε(α)={d.label}"


class ProfileDP(Measure[PrivacyProfile]):
    """Privacy profiles: distances are curves δ(ε) (:class:`~dpcompose.accounting.PrivacyProfile`).

    A budget is an (ε, δ) pair: ``m.check(d_in, (ε, δ))`` holds when the profile's δ at ε is at most δ.

    A profile may carry the dominating pairs of the mechanisms that have one
    (:class:`~dpcompose.accounting.PrivacyLoss`); it is then read by their privacy loss distribution where
    that is tighter (see :class:`~dpcompose.accounting.PrivacyProfile`). There is no cast from ProfileDP to
    zCDP or pure DP: a profile implies no ρ and no pure ε in general (no theorem gives one), so such casts
    are refused; ``make_fix_delta`` gives (ε(δ), δ).

    Source: Balle–Wang 2018 (privacy profiles); composition as in ``PrivacyProfile.compose`` (KOV 2015,
    Murtagh–Vadhan 2016, Dong–Roth–Su 2019, Bun–Steinke 2016, Zhu–Dong–Wang 2022 Thm 10 for pairs),
    concurrent by Vadhan–Zhang 2023 Thm 1.3 (Lyu 2022 Cor 1 for ρ).

    Examples:
        >>> import dpcompose as dp
        >>> profile = dp.accounting.PrivacyProfile.compose([dp.accounting.PrivacyProfile.pure(0.1)] * 100)
        >>> dp.ProfileDP().less_equal(profile, dp.ProfileDP().parse((4.78, 1e-6)))
        True
    """

    __slots__ = ()
    compose_source = (
        "KOV 2015 / Murtagh–Vadhan 2016 ((ε, δ) parts), Dong–Roth–Su 2019 (Gaussian), Bun–Steinke 2016 "
        "(zCDP), Zhu–Dong–Wang 2022 Thm 10 (dominating pairs); Vadhan–Zhang 2023 Thm 1.3 (concurrent)"
    )

    def parse(self, d: object, name: str = "d_out") -> PrivacyProfile:
        if isinstance(d, PrivacyProfile):
            if len(d.approx_parts) == 1 and not d.gaussian_mu_sq and not d.rho and d.loss is None:
                return d
            raise InvalidParameter(f"{name}={d!r} must be a single (ε, δ) budget, not a composed profile")
        eps, delta = ApproxDP().parse(d, name)
        return PrivacyProfile.approx(eps, delta)

    def less_equal(self, a: PrivacyProfile, b: PrivacyProfile) -> bool:
        """Whether the profile ``a`` meets the single (ε, δ) budget ``b`` (made by :meth:`parse`)."""
        ((eps, delta),) = self.parse(b, "budget").approx_parts
        return a.delta(eps) <= delta

    def zero(self) -> PrivacyProfile:
        return PrivacyProfile()

    def compose(self, d_mids: Sequence[PrivacyProfile]) -> PrivacyProfile:
        return PrivacyProfile.compose(list(d_mids))

    def check_cost(self, d: object, what: str = "cost") -> PrivacyProfile:
        if not isinstance(d, PrivacyProfile):
            raise InvalidParameter(f"{what}={d!r} must be a PrivacyProfile")
        return d

    def display(self, d: PrivacyProfile) -> str:
        return repr(d)  # every number in it rounded up (format_up); pairs shown by their exact parameters
