"""How a PLD is read: its representation variants, as strategy objects the record holds.

A :class:`~dpcompose.accounting._pld.distribution.PLD` is one of several things, each read its own way. One
order is read from its two sides (:class:`SidesReading`), from the Gaussian closed form
(:class:`GaussianReading`: a Gaussian mechanism or a composition of them), or through composites tilted for
the question (:class:`TiltedReading`: a long composition, through its
:class:`~dpcompose.accounting._pld.recipe.Recipe`). Two record-level variants wrap one of these: an
asymmetric pair of two orders (:class:`PairReading`, read through :mod:`~dpcompose.accounting._pld.orders`)
and a constructor's PLD (:class:`FromConstructor`: the key standing for its contents, its thin twin). The
record holds one and reads through it: the dispatch is a method of the variant, not a test of optional
fields. The readings of the sides themselves (δ at a float ε, the least ε, the lumped lower bound) are the
record's (:class:`Record`); the sides, each built on first use, are a
:class:`~dpcompose.accounting._pld.lazy.Sides`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from dpcompose.accounting._gaussian import gaussian_delta, gaussian_delta_lower, gaussian_epsilon
from dpcompose.accounting._pld.lazy import Sides
from dpcompose.accounting._pld.orders import Orders, both_ways, screened_many, screened_orders
from dpcompose.accounting._pld.recipe import Recipe
from dpcompose.accounting._pld.side import Side
from dpcompose.errors import InvalidParameter

if TYPE_CHECKING:  # annotations only (typing.Self is Python 3.11+)
    from typing_extensions import Self

_SAFETY_GAP = 1e-3  # a tilted lower end this far (relative) below the upper end: the untilted one is read too


class Record(Protocol):
    """What a reading reads of the PLD record that holds it: its sides' certified readings, its own reading
    (for each order of a pair) and its two orders."""

    @property
    def upper(self) -> Side: ...

    @property
    def reading(self) -> OrderReading | PairReading[Self] | FromConstructor[Self]: ...

    def orders(self) -> Orders[Self]: ...

    def delta_real(self, side: Side, eps: float, upper: bool) -> float: ...

    def least_up(self, target: float) -> float | None: ...

    def delta_float(self, e_dn: float) -> float: ...

    def delta_lumped(self, eps: float) -> float | None: ...

    def lumped_epsilon(self, target: float, stop: float) -> float | None: ...

    def epsilon_up(self, dq: Fraction, shown: object) -> Fraction: ...


_P = TypeVar("_P", bound=Record)


class OrderReading:
    """How one order of a PLD is read: the variant of its representation, a strategy object the record
    (:class:`~dpcompose.accounting._pld.distribution.PLD`) holds.

    This base reads the order from its two sides (:attr:`sides`): the upper ends of δ(ε) and ε(δ) from the
    upper side, the lower ends from the lumped pair of the lower side (``PLD.delta_lumped``). Its variants:
    :class:`SidesReading` (that, plain), :class:`GaussianReading` (the closed form) and :class:`TiltedReading`
    (a long composition read through its tilted recipe). The record-level variants, an asymmetric pair of
    two orders and a constructor's PLD, wrap one of these (:class:`PairReading`, :class:`FromConstructor`).
    Each method takes the record ``p`` it reads (its lattice, and its sides' readings).

    Source: as :class:`~dpcompose.accounting._pld.distribution.PLD` (Sommer–Meiser–Mohammadi 2019, Thm 1;
    Doroshenko et al. 2022; Zhu–Dong–Wang 2022, Thm 10)."""

    @property
    def sides(self) -> Sides:
        """The two sides, each built on first use."""
        raise NotImplementedError

    @property
    def gaussian(self) -> tuple[float, float, float] | None:
        """``PLD.gaussian``: None but for the closed form."""
        return None

    @property
    def recipe(self) -> Recipe | None:
        """``PLD.recipe``: None but for a long composition."""
        return None

    @property
    def reverse(self) -> None:
        """``PLD.reverse``: None (one order)."""
        return None

    @property
    def thin(self) -> None:
        """``PLD.thin``: None (only a constructor's PLD has one)."""
        return None

    @property
    def key(self) -> None:
        """What a constructor's PLD was built from: None here."""
        return None

    @property
    def first(self) -> OrderReading:
        """The reading of the first order alone: this one."""
        return self

    def delta_bounds(self, p: Record, eps: Fraction) -> tuple[Fraction, Fraction]:
        """``PLD.delta_bounds`` at the exact ε."""
        hi = self.delta_up(p, eps)
        return self.delta_lower(p, eps, hi), hi

    def epsilon_bounds(self, p: Record, dq: Fraction, shown: object) -> tuple[Fraction, Fraction]:
        """``PLD.epsilon_bounds`` at the exact δ (``shown``: as given, for messages)."""
        e_hi = p.epsilon_up(dq, shown)
        return self.epsilon_lower(p, dq, e_hi), e_hi

    def delta_up(self, p: Record, eps: Fraction) -> Fraction:
        """The upper end of ``PLD.delta_bounds`` at the exact ε alone (the lower side is not built)."""
        e_dn = float(eps)
        if Fraction(e_dn) > eps:
            e_dn = math.nextafter(e_dn, -math.inf)
        return Fraction(p.delta_float(e_dn))

    def deltas_up(self, p: Record, epsilons: Sequence[Fraction]) -> list[Fraction]:
        """:meth:`delta_up` at each of these exact ε (distinct, increasing), the same values
        (``PLD.deltas``)."""
        return [self.delta_up(p, eps) for eps in epsilons]

    def delta_float(self, p: Record, e_dn: float) -> float:
        """``PLD.delta_float``."""
        return min(1.0, p.delta_real(p.upper, e_dn, True))

    def tilted_delta_lo(self, e_up: float) -> float | None:
        """The tilted composite's lower δ at the float ε (:meth:`Recipe.delta_lo`); None without one."""
        return None

    def delta_lower(
        self, p: Record, eps: Fraction, hi: Fraction, tilted_read: tuple[float | None] | None = None
    ) -> Fraction:
        """The lower end of ``PLD.delta_bounds`` for this order alone, whose upper end is ``hi``;
        ``tilted_read`` holds :meth:`Recipe.delta_lo` at the float ε used here where the caller read it
        already (it is not read again: the composite may have been evicted since)."""
        e_up = float(eps)
        if Fraction(e_up) < eps:
            e_up = math.nextafter(e_up, math.inf)
        tilted = tilted_read[0] if tilted_read is not None else self.tilted_delta_lo(e_up)
        lumped = tilted or 0.0
        if tilted is None or tilted < float(hi) * (1 - _SAFETY_GAP):  # none, or a poor tilt: the untilted too
            lumped = max(lumped, p.delta_lumped(e_up) or 0.0)
        return min(hi, Fraction(lumped))

    def least_up(self, p: Record, d_down: float) -> float | None:
        """The least float ε whose certified upper δ is at most ``d_down`` (``PLD.least_up``)."""
        return p.least_up(d_down)

    def epsilon_up(self, p: Record, dq: Fraction, shown: object) -> Fraction:
        """The upper end of ``PLD.epsilon_bounds`` alone (the lower side is not built)."""
        d = float(dq)
        d_down = math.nextafter(d, -math.inf) if Fraction(d) > dq else d
        e_hi = self.least_up(p, d_down)
        if e_hi is None:
            inf, err = p.upper.inf, p.upper.err
            hint = "; most of it is the error bound, which a finer lattice (larger step_bits) lowers"
            hint = hint if err > inf else ""
            raise InvalidParameter(
                f"delta={shown!r} is below this PLD's certified mass at +∞ and error "
                f"({inf + err:.3g}, of which error {err:.3g}): no finite ε is certified{hint}"
            )
        return Fraction(e_hi)

    def epsilon_lower(self, p: Record, dq: Fraction, e_hi: Fraction) -> Fraction:
        """The lower end of ``PLD.epsilon_bounds`` for this order alone, whose upper end is ``e_hi``."""
        d = float(dq)
        d_up = math.nextafter(d, math.inf) if Fraction(d) < dq else d
        stop = float(e_hi)
        y = p.lumped_epsilon(d_up, stop)
        return Fraction(max(0.0, min(0.0 if y is None else y, stop)))


class SidesReading(OrderReading):
    """A PLD read from its two sides alone."""

    def __init__(self, sides: Sides) -> None:
        self._sides = sides

    @property
    def sides(self) -> Sides:
        """The two sides."""
        return self._sides


class GaussianReading(SidesReading):
    """A Gaussian mechanism or a composition of them, read from the closed form (its lattice sides, built
    only where read, serve a composition with a non-Gaussian, and ε(0)): ``gaussian`` is (μ_hi, width,
    μ_lo) with μ_lo ≤ ‖Δ/σ‖₂ ≤ μ_hi (Balle–Wang 2018, Thm 8, through :func:`gaussian_delta`)."""

    def __init__(self, sides: Sides, gaussian: tuple[float, float, float]) -> None:
        super().__init__(sides)
        self._gaussian = gaussian

    @property
    def gaussian(self) -> tuple[float, float, float]:
        """(μ_hi, width, μ_lo)."""
        return self._gaussian

    def delta_up(self, p: Record, eps: Fraction) -> Fraction:
        """δ(ε)'s upper end from the closed form at μ_hi."""
        return gaussian_delta(Fraction(self._gaussian[0]) ** 2, eps)

    def delta_lower(
        self, p: Record, eps: Fraction, hi: Fraction, tilted_read: tuple[float | None] | None = None
    ) -> Fraction:
        """The closed form at μ_lo, certified both ways."""
        return min(hi, Fraction(gaussian_delta_lower(self._gaussian[2], eps)))

    def epsilon_up(self, p: Record, dq: Fraction, shown: object) -> Fraction:
        """ε(δ)'s upper end from the closed form (from the lattice at δ = 0)."""
        if dq > 0:
            return gaussian_epsilon(Fraction(self._gaussian[0]) ** 2, dq)
        return super().epsilon_up(p, dq, shown)

    def epsilon_lower(self, p: Record, dq: Fraction, e_hi: Fraction) -> Fraction:
        """The lower end of ε(δ) from the closed form, given its upper end ``e_hi`` (from :meth:`epsilon_up`:
        :func:`gaussian_delta`'s certified root search): the largest float found whose certified lower δ
        exceeds ``dq`` (from the lattice at δ = 0)."""
        if not dq > 0:
            return super().epsilon_lower(p, dq, e_hi)
        mu_lo = self._gaussian[2]
        if not gaussian_delta_lower(mu_lo, Fraction(0)) > dq:
            return Fraction(0)
        # start at the (uncertified) float root, then step down until the certified lower δ exceeds dq
        x = float(e_hi)
        step = max(x * 2.0**-50, 1e-300)
        while x > 0 and not gaussian_delta_lower(mu_lo, Fraction(x)) > dq:
            x = max(0.0, x - step)
            step *= 2
        return min(Fraction(x), e_hi)


class TiltedReading(SidesReading):
    """A long composition, read through composites tilted for the question (its ``recipe``,
    :mod:`dpcompose.accounting._pld.tilt`), and through its untilted sides where the tilt is poor or none
    applies (those sides are built only then)."""

    def __init__(self, sides: Sides, recipe: Recipe) -> None:
        super().__init__(sides)
        self._recipe = recipe

    @property
    def recipe(self) -> Recipe:
        """What the composition was built from."""
        return self._recipe

    def delta_float(self, p: Record, e_dn: float) -> float:
        """The composite of ε's tilt (:meth:`Recipe.delta_up`), and the untilted side too where that is poor
        or none applies."""
        tilted = self._recipe.delta_up(e_dn)
        best = math.inf if tilted is None else tilted[0]
        if tilted is None or tilted[1]:
            best = min(best, p.delta_real(p.upper, e_dn, True))
        return min(1.0, best)

    def tilted_delta_lo(self, e_up: float) -> float | None:
        """:meth:`Recipe.delta_lo`."""
        return self._recipe.delta_lo(e_up)

    def least_up(self, p: Record, d_down: float) -> float | None:
        """:meth:`Recipe.least_up`, through the tilted composites."""
        return self._recipe.least_up(p.least_up, d_down, p.delta_float)

    def epsilon_lower(self, p: Record, dq: Fraction, e_hi: Fraction) -> Fraction:
        """:meth:`Recipe.lumped_epsilon`: the largest ε found whose lower δ, as ``PLD.delta_bounds``
        reads it, is above δ."""
        d = float(dq)
        d_up = math.nextafter(d, math.inf) if Fraction(d) < dq else d
        stop = float(e_hi)
        recipe = self._recipe

        def certifies(y: float) -> bool:  # δ's lower end at y (as delta_bounds reads it) is above d_up
            tilted = recipe.delta_lo(y)
            if tilted is not None and tilted > d_up:  # (then so is δ's lower end: see delta_lower)
                return True
            at = Fraction(y)  # (float(at) is y: the value read above is the one delta_lower reads)
            return self.delta_lower(p, at, self.delta_up(p, at), (tilted,)) > d_up

        y = recipe.lumped_epsilon(d_up, stop, lambda: p.lumped_epsilon(d_up, stop), certifies)
        return Fraction(max(0.0, min(y, stop)))


# ---------------------------------------------------------------------------------------------------------
# The record-level variants: an asymmetric pair of two orders, a constructor's PLD
# ---------------------------------------------------------------------------------------------------------


class _Delegating(Generic[_P]):
    """A reading that reads as ``inner`` does, except where a subclass says otherwise."""

    def __init__(self, inner: OrderReading | PairReading[_P] | FromConstructor[_P]) -> None:
        self.inner = inner

    @property
    def sides(self) -> Sides:
        return self.inner.sides

    @property
    def gaussian(self) -> tuple[float, float, float] | None:
        return self.inner.gaussian

    @property
    def recipe(self) -> Recipe | None:
        return self.inner.recipe

    @property
    def reverse(self) -> _P | None:
        return self.inner.reverse

    @property
    def thin(self) -> _P | None:
        return self.inner.thin

    @property
    def key(self) -> object:
        return self.inner.key

    @property
    def first(self) -> OrderReading:
        return self.inner.first

    def delta_bounds(self, p: _P, eps: Fraction) -> tuple[Fraction, Fraction]:
        return self.inner.delta_bounds(p, eps)

    def epsilon_bounds(self, p: _P, dq: Fraction, shown: object) -> tuple[Fraction, Fraction]:
        return self.inner.epsilon_bounds(p, dq, shown)

    def delta_up(self, p: _P, eps: Fraction) -> Fraction:
        return self.inner.delta_up(p, eps)

    def deltas_up(self, p: _P, epsilons: Sequence[Fraction]) -> list[Fraction]:
        return self.inner.deltas_up(p, epsilons)

    def delta_float(self, p: _P, e_dn: float) -> float:
        return self.inner.delta_float(p, e_dn)

    def delta_lower(
        self, p: _P, eps: Fraction, hi: Fraction, tilted_read: tuple[float | None] | None = None
    ) -> Fraction:
        return self.inner.delta_lower(p, eps, hi, tilted_read)

    def epsilon_up(self, p: _P, dq: Fraction, shown: object) -> Fraction:
        return self.inner.epsilon_up(p, dq, shown)

    def epsilon_lower(self, p: _P, dq: Fraction, e_hi: Fraction) -> Fraction:
        return self.inner.epsilon_lower(p, dq, e_hi)


class PairReading(_Delegating[_P]):
    """An asymmetric pair (a subsampled mechanism, say): ``first`` reads the first order (the record's own
    sides are its), ``reverse`` is the PLD of the other order of neighbours, composed with the same order of
    the other PLDs; δ(ε) and ε(δ) are the larger of the two orders' (:func:`screened_orders`,
    :func:`both_ways`, on the record's ``orders()``)."""

    def __init__(self, first: OrderReading, reverse: _P) -> None:
        super().__init__(first)
        self._first = first
        self._reverse = reverse

    @property
    def gaussian(self) -> None:
        """None: the pair is read on its lattice."""
        return None

    @property
    def reverse(self) -> _P:
        """The other order."""
        return self._reverse

    @property
    def first(self) -> OrderReading:
        """The first order's reading."""
        return self._first

    def delta_bounds(self, p: _P, eps: Fraction) -> tuple[Fraction, Fraction]:
        """Both orders' bounds, the larger at each end (:func:`both_ways`)."""
        return both_ways(
            p.orders(), lambda w: w.reading.delta_up(w, eps), lambda w, hi: w.reading.delta_lower(w, eps, hi)
        )

    def epsilon_bounds(self, p: _P, dq: Fraction, shown: object) -> tuple[Fraction, Fraction]:
        """Both orders' bounds, the larger at each end (:func:`both_ways`)."""
        return both_ways(
            p.orders(), lambda w: w.epsilon_up(dq, shown), lambda w, hi: w.reading.epsilon_lower(w, dq, hi)
        )

    def delta_up(self, p: _P, eps: Fraction) -> Fraction:
        """The larger of the two orders' (:func:`screened_orders`)."""
        return max(screened_orders(p.orders(), lambda w: w.reading.delta_up(w, eps)))

    def deltas_up(self, p: _P, epsilons: Sequence[Fraction]) -> list[Fraction]:
        """:meth:`delta_up` at each ε (distinct, increasing), the same values: each order's curve read at once
        (:func:`screened_many`)."""
        return screened_many(p.orders(), epsilons, lambda w, es: w.reading.deltas_up(w, es))

    def epsilon_up(self, p: _P, dq: Fraction, shown: object) -> Fraction:
        """The larger of the two orders' (:func:`screened_orders`)."""
        return max(screened_orders(p.orders(), lambda w: w.epsilon_up(dq, shown)))


class FromConstructor(_Delegating[_P]):
    """A constructor's PLD, read as ``inner``: ``key`` (its constructor and arguments) stands for its
    contents in ``composition.content_key`` (so that reading the key does not build the sides), and ``thin``
    (None where there is none) is read in its place by compositions holding at least ``THIN_MIN_COUNT``
    copies of it."""

    def __init__(
        self, inner: OrderReading | PairReading[_P] | FromConstructor[_P], key: object, thin: _P | None
    ) -> None:
        super().__init__(inner)
        self._key, self._thin = key, thin

    @property
    def key(self) -> object:
        """What the PLD was built from."""
        return self._key

    @property
    def thin(self) -> _P | None:
        """The thin twin."""
        return self._thin
