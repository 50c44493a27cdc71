from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

from dpcompose.accounting._common import ONE, ZERO, nonnegative, positive, probability
from dpcompose.accounting._display import format_up
from dpcompose.accounting._exact import Number, sqrt_up_q
from dpcompose.accounting._gaussian import gaussian_delta, gaussian_epsilon
from dpcompose.accounting._loss import PrivacyLoss
from dpcompose.accounting._optimal import lost_bounds, optimal_delta, optimal_epsilon
from dpcompose.accounting._zcdp import zcdp_delta, zcdp_to_approx
from dpcompose.errors import InvalidParameter


def gaussian_profile(sensitivity: Number, sigma: Number) -> PrivacyProfile:
    """The exact privacy profile of the Gaussian mechanism N(0, σ²) on a query of L2-sensitivity Δ.

    Source: Balle–Wang 2018 Thm 8; composition by Dong–Roth–Su 2019 Cor 3.3 (μ's add in quadrature).

    Examples:
        >>> p = gaussian_profile(1.0, 20.0)
        >>> p
        PrivacyProfile(gaussian μ²=0.0025)
        >>> big = PrivacyProfile.compose([p] * 1000)
        >>> float(big.epsilon(1e-6))
        8.3062250...
    """
    d = nonnegative(sensitivity, "sensitivity")
    s = positive(sigma, "sigma")
    return PrivacyProfile(gaussian_mu_sq=(d / s) ** 2)


def _combine(d1: Fraction, d2: Fraction) -> Fraction:
    return min(ONE, 1 - (1 - d1) * (1 - d2))


# (delta_at, epsilon_at, least reachable δ, whether ε is finite at that least δ) of one part of a route
_Part = tuple[Callable[[Fraction], Fraction], Callable[[Fraction], Fraction], Fraction, bool]


_FAR_EPSILON = Fraction(10**9)  # past every finite privacy loss a PLD here holds: δ there is its mass at +∞


def _loss_type() -> type[PrivacyLoss]:
    """:class:`~dpcompose.accounting.PrivacyLoss`, imported on first use.

    ``_loss`` imports ``_pld``, which imports this module for the Gaussian formula, so this module cannot
    import ``_loss`` when it is loaded (the layering fix is to move the Gaussian formula into a module of
    its own, which ``_pld`` would import instead).
    """

    return PrivacyLoss


@dataclass(frozen=True)
class PrivacyProfile:
    """The curve δ(ε) of a (composed) mechanism; immutable and hashable.

    Components and how they compose (each proven for adaptive composition):

    * ``approx_parts``: (εᵢ, δᵢ) guarantees (pure when δᵢ = 0) — the optimal composition theorem
      (Kairouz–Oh–Viswanath 2015 Thm 3.3; Murtagh–Vadhan 2016 Thm 1.5), via
      :func:`~dpcompose.accounting.optimal_delta`;
    * ``gaussian_mu_sq``: Σ μᵢ² of Gaussian mechanisms — exactly μ-GDP with μ = √Σμᵢ² (Dong–Roth–Su 2019
      Cor 3.3), whose δ(ε) is Balle–Wang's formula;
    * ``rho``: Σ ρᵢ of zCDP guarantees (Bun–Steinke 2016 Lemma 2.3) — δ(ε) by Canonne–Kamath–Steinke
      2020 Prop 12;
    * ``loss``: the dominating pair (:class:`~dpcompose.accounting.PrivacyLoss`) of the mechanisms that
      have one, composed — the product of dominating pairs dominates the adaptive composition
      (Zhu–Dong–Wang 2022 Thm 10); ``loss_fallback``, when known, is another valid profile of those
      same mechanisms (their (ε, δ), Gaussian or zCDP description, which the pair refines).

    Without ``loss``, when several kinds are present, each kind is composed as above and the parts are
    combined by sequential composition of their profiles: each part j is (εⱼ, δⱼ(εⱼ))-DP for every εⱼ, so
    the whole is ``(Σ εⱼ, 1 − Π(1 − δⱼ(εⱼ)))``-DP (the optimal composition theorem at ε_g = Σ εⱼ, KOV
    2015 Thm 3.3); ``delta(ε)`` minimises this over splits of ε (any split is valid, so a numerical
    minimiser cannot under-report).

    With ``loss``, two routes are valid and the least answer is taken:

    * *pld*: the (ε, δ) parts join the pair as RR_(ε,δ) (every (ε, δ)-DP mechanism is a post-processing of
      it: Kairouz–Oh–Viswanath 2015 Thm 2.5) and the Gaussian part as the Gaussian pair with μ = √Σμᵢ²
      (rounded up; Dong–Roth–Su 2019 Cor 3.3), all composed into one certified PLD (upper end); the ρ part,
      which has no dominating pair, is combined with it by the ε-split above;
    * *generic*: the mechanisms with a pair are described by ``loss_fallback`` instead, and the whole is
      read as a profile without pairs (only when every such mechanism has a fallback).

    Every route is an upper bound, so their minimum is one too; when a pair is added to a profile that
    already answered (:meth:`with_loss`), the answer is never above the old one.

    Concurrent composition of interactive mechanisms: the same rules hold (Vadhan–Zhang 2023 Thm 1.3 for
    f-DP, (ε, δ) and the pairs; Lyu 2022 Cor 1 for ρ).

    Examples:
        >>> p = PrivacyProfile.compose([PrivacyProfile.pure(0.1)] * 100)
        >>> float(p.epsilon(1e-6))
        4.774567588...
        >>> p.delta(11)
        Fraction(0, 1)
        >>> from dpcompose.accounting import PrivacyLoss
        >>> lap = PrivacyProfile.pure(0.1).with_loss(PrivacyLoss.laplace(1, 10))  # Laplace(b = 10), Δ = 1
        >>> many = PrivacyProfile.compose([lap] * 100)
        >>> 4.69 < float(many.epsilon(1e-6)) < 4.70  # the PLD, below the optimal composition's 4.77457
        True
    """

    approx_parts: tuple[tuple[Fraction, Fraction], ...] = ()
    gaussian_mu_sq: Fraction = ZERO
    rho: Fraction = ZERO
    loss: PrivacyLoss | None = None
    loss_fallback: PrivacyProfile | None = None

    def __post_init__(self) -> None:
        if self.loss is not None and not isinstance(self.loss, _loss_type()):
            raise InvalidParameter(f"loss={self.loss!r} must be a PrivacyLoss or None")
        if self.loss_fallback is not None:
            if not isinstance(self.loss_fallback, PrivacyProfile):
                raise InvalidParameter(
                    f"loss_fallback={self.loss_fallback!r} must be a PrivacyProfile or None"
                )
            if self.loss is None:
                raise InvalidParameter(
                    f"loss_fallback={self.loss_fallback!r} describes the mechanisms of loss, which is None"
                )

    # constructors ------------------------------------------------------------------------------
    @classmethod
    def pure(cls, epsilon: Number) -> PrivacyProfile:
        """The profile of an ε-DP mechanism (Source: Dwork–McSherry–Nissim–Smith 2006)."""
        return cls(approx_parts=((nonnegative(epsilon, "epsilon"), ZERO),))

    @classmethod
    def approx(cls, epsilon: Number, delta: Number) -> PrivacyProfile:
        """The profile of an (ε, δ)-DP mechanism: ``δ(ε′) = δ + (1 − δ)(e^ε − e^{ε′})₊/(1 + e^ε)``.

        Source: Kairouz–Oh–Viswanath 2015 Thm 3.3 with k = 1 (the (ε, δ) randomized response is the
        worst case).
        """
        return cls(approx_parts=((nonnegative(epsilon, "epsilon"), probability(delta, "delta")),))

    @classmethod
    def zcdp(cls, rho: Number) -> PrivacyProfile:
        """The profile implied by ρ-zCDP (Canonne–Kamath–Steinke 2020 Prop 12)."""
        return cls(rho=nonnegative(rho, "rho"))

    @classmethod
    def from_loss(cls, loss: PrivacyLoss) -> PrivacyProfile:
        """The profile of a mechanism dominated by the pair ``loss``: δ(ε) and ε(δ) are the upper ends of
        its certified privacy loss distribution (:meth:`PrivacyLoss.delta`, :meth:`PrivacyLoss.epsilon`).

        Source: Zhu–Dong–Wang 2022 Def. 7 / Thm 10 (dominating pairs and their composition); the PLD's
        certificate, :class:`~dpcompose.accounting.PLD`.

        Examples:
            >>> from dpcompose.accounting import PrivacyLoss
            >>> p = PrivacyProfile.from_loss(PrivacyLoss.randomized_response(1.0, k=4))
            >>> p
            PrivacyProfile(pairs=[randomized_response(ε=1, k=4)])
            >>> p.delta(1)
            Fraction(0, 1)
        """
        if not isinstance(loss, _loss_type()):
            raise InvalidParameter(f"loss={loss!r} must be a PrivacyLoss")
        return cls(loss=loss)

    def with_loss(self, loss: PrivacyLoss) -> PrivacyProfile:
        """This profile's mechanism, known also to be dominated by the pair ``loss``: answers take the least
        of this profile and the pair's PLD (each a valid bound), so they are never above this profile's.

        Source: as :meth:`from_loss`; a minimum of valid upper bounds is a valid upper bound.

        Examples:
            >>> from dpcompose.accounting import PrivacyLoss
            >>> p = PrivacyProfile.pure(1.0).with_loss(PrivacyLoss.randomized_response(1.0, k=3))
            >>> p.epsilon(0)  # the pair is no better at δ = 0: the (ε, δ) description answers exactly
            Fraction(1, 1)
        """
        if not isinstance(loss, _loss_type()):
            raise InvalidParameter(f"loss={loss!r} must be a PrivacyLoss")
        if self.loss == loss and not (self.approx_parts or self.gaussian_mu_sq or self.rho):
            return self  # already exactly this pair (perhaps with a fallback)
        return PrivacyProfile(loss=loss, loss_fallback=self)

    def times(self, n: int) -> PrivacyProfile:
        """``n`` runs of this profile's mechanism composed: equal to ``PrivacyProfile.compose([self] * n)``
        (each part repeated ``n`` times, or multiplied by ``n`` where it is a sum), without the list.

        Source: as :meth:`compose`.

        Raises:
            InvalidParameter: ``n`` is not a positive integer.

        Examples:
            >>> p = PrivacyProfile.zcdp(0.5)
            >>> p.times(4) == PrivacyProfile.compose([p] * 4)
            True
        """
        if type(n) is not int or n < 1:
            raise InvalidParameter(f"n={n!r} must be a positive integer")
        if n == 1:
            return self
        return PrivacyProfile(
            approx_parts=self.approx_parts * n,
            gaussian_mu_sq=self.gaussian_mu_sq * n,
            rho=self.rho * n,
            loss=None if self.loss is None else self.loss.times(n),
            loss_fallback=None if self.loss_fallback is None else self.loss_fallback.times(n),
        )

    @classmethod
    def compose(cls, profiles: Sequence[PrivacyProfile]) -> PrivacyProfile:
        """The profile of the (adaptive) composition of mechanisms with these profiles.

        Source: KOV 2015 Thm 3.3 / Murtagh–Vadhan 2016 Thm 1.5 ((ε, δ) parts); Dong–Roth–Su 2019 Cor 3.3
        (Gaussian parts); Bun–Steinke 2016 Lemma 2.3 (zCDP parts); Zhu–Dong–Wang 2022 Thm 10 (pairs).
        """
        if isinstance(profiles, PrivacyProfile) or not isinstance(profiles, Sequence):
            raise InvalidParameter(f"profiles={profiles!r} must be a sequence of PrivacyProfile")
        for i, p in enumerate(profiles):
            if not isinstance(p, PrivacyProfile):
                raise InvalidParameter(f"profiles[{i}]={p!r} must be a PrivacyProfile")
        paired = [p for p in profiles if p.loss is not None]
        loss = _loss_type().compose([p.loss for p in paired if p.loss is not None]) if paired else None
        fallbacks = [p.loss_fallback for p in paired]
        fallback = (
            cls.compose([f for f in fallbacks if f is not None])
            if paired and all(f is not None for f in fallbacks)
            else None
        )
        return cls(
            approx_parts=tuple(pair for p in profiles for pair in p.approx_parts),
            gaussian_mu_sq=sum((p.gaussian_mu_sq for p in profiles), ZERO),
            rho=sum((p.rho for p in profiles), ZERO),
            loss=loss,
            loss_fallback=fallback,
        )

    # views -------------------------------------------------------------------------------------
    def privacy_loss(self) -> PrivacyLoss | None:
        """A dominating pair of the whole mechanism, or None where it has a ρ part (zCDP has none).

        The pairs, the (ε, δ) parts as RR_(ε,δ) (KOV 2015 Thm 2.5) and the Gaussian part as the Gaussian
        pair with μ = √Σμᵢ² rounded up (Dong–Roth–Su 2019 Cor 3.3), composed (Zhu–Dong–Wang 2022
        Thm 10); the empty profile has the pair RR_(0,0) (two equal distributions).

        Examples:
            >>> PrivacyProfile.compose([PrivacyProfile.pure(0.5)] * 2).privacy_loss()
            PrivacyLoss(2 × approx(ε=0.5, δ=0))
            >>> PrivacyProfile.zcdp(0.1).privacy_loss() is None
            True
        """
        if self.rho:
            return None
        return self._joined()

    def _joined(self) -> PrivacyLoss:
        """The pairs composed with the (ε, δ) and Gaussian parts' pairs (the ρ part left out)."""
        loss_type = _loss_type()
        pieces = [] if self.loss is None else [self.loss]
        pieces += [loss_type.approx(e, d) for e, d in self.approx_parts]
        if self.gaussian_mu_sq:
            pieces.append(loss_type.gaussian(_sqrt_up_exact(self.gaussian_mu_sq), 1))
        return loss_type.compose(pieces) if pieces else loss_type.approx(0, 0)

    def generic(self) -> PrivacyProfile | None:
        """The same mechanism described without pairs (each paired mechanism by its fallback), or None
        where a paired mechanism has no other description.

        Examples:
            >>> from dpcompose.accounting import PrivacyLoss
            >>> PrivacyProfile.pure(0.5).with_loss(PrivacyLoss.laplace(1, 2)).generic()
            PrivacyProfile(approx=[(ε=0.5, δ=0)])
        """
        if self.loss is None:
            return self
        whole = self._fallback_whole
        return None if whole is None else whole.generic()

    def pairs_only(self) -> PrivacyProfile:
        """The same mechanism read only by the *pld* route (the pairs' PLD, ρ by the ε-split); for a profile
        without pairs, the profile itself."""
        return self if self.loss is None else dataclasses.replace(self, loss_fallback=None)

    @functools.cached_property
    def _fallback_whole(self) -> PrivacyProfile | None:
        """The *generic* route: the paired mechanisms described by their fallback (None if unknown)."""
        if self.loss_fallback is None:
            return None
        rest = dataclasses.replace(self, loss=None, loss_fallback=None)
        return PrivacyProfile.compose([rest, self.loss_fallback])

    # queries -----------------------------------------------------------------------------------
    def _parts(self) -> list[_Part]:
        """The parts of the profile without pairs: (delta_at, epsilon_at, least δ, finite there)."""
        parts: list[_Part] = []
        if self.approx_parts:
            eps = [e for e, _ in self.approx_parts]
            dels = [d for _, d in self.approx_parts]
            floor = lost_bounds(dels)[1]
            parts.append(
                (lambda x: optimal_delta(eps, dels, x), lambda d: optimal_epsilon(eps, dels, d), floor, True)
            )
        if self.gaussian_mu_sq:
            m2 = self.gaussian_mu_sq
            parts.append((lambda x: gaussian_delta(m2, x), lambda d: gaussian_epsilon(m2, d), ZERO, False))
        parts.extend(self._rho_part())
        return parts

    def _rho_part(self) -> list[_Part]:
        if not self.rho:
            return []
        r = self.rho
        return [(lambda x: zcdp_delta(r, x), lambda d: zcdp_to_approx(r, d), ZERO, False)]

    def _pair_parts(self) -> list[_Part]:
        """The *pld* route: one part for the joined pairs, and the ρ part."""
        joined = self._joined()
        if not self.rho:
            return [(joined.delta, joined.epsilon, ZERO, True)]
        floor = joined.delta(_FAR_EPSILON)  # its mass at +∞ (and the certificate's error)
        return [(joined.delta, joined.epsilon, floor, True), *self._rho_part()]

    def _routes(self) -> list[Callable[[], PrivacyProfile | list[_Part]]]:
        """The routes, each built on demand inside :func:`_least` (building the pld route reads the PLD,
        which may be refused; the generic route must still answer then)."""
        routes: list[Callable[[], PrivacyProfile | list[_Part]]] = [self._pair_parts]
        fallback = self._fallback_whole
        if fallback is not None:
            routes.append(lambda: fallback)
        return routes

    def delta(self, epsilon: Number) -> Fraction:
        """An upper bound on δ at ``epsilon`` (≥ 0)."""
        eps = nonnegative(epsilon, "epsilon")
        if self.loss is None:
            parts = self._parts()
            if not parts:
                return ZERO
            knots = [sum((e for e, _ in self.approx_parts), ZERO)] if self.approx_parts else []
            return _split_delta([p[0] for p in parts], eps, knots)
        return _least([functools.partial(_route_delta, route, eps) for route in self._routes()])

    def epsilon(self, delta: Number) -> Fraction:
        """An upper bound on the least ε with δ(ε) ≤ ``delta``.

        Raises:
            InvalidParameter: ``delta`` is not in [0, 1), or is below the least δ the profile reaches.
        """
        target = probability(delta, "delta")
        if self.loss is None:
            return _split_epsilon(self._parts(), target, delta)
        return _least([functools.partial(_route_epsilon, route, target, delta) for route in self._routes()])

    def routes(self) -> tuple[tuple[str, PrivacyProfile], ...]:
        """The routes this profile takes the least of, each as a profile read only that way:
        ``(("pld", …), ("generic", …))`` (the second only where every pair has a fallback); a profile
        without pairs has the one route ``("generic", self)``.

        Examples:
            >>> from dpcompose.accounting import PrivacyLoss
            >>> p = PrivacyProfile.pure(0.5).with_loss(PrivacyLoss.laplace(1, 2))
            >>> [name for name, _ in p.routes()]
            ['pld', 'generic']
        """
        if self.loss is None:
            return (("generic", self),)
        out: list[tuple[str, PrivacyProfile]] = [("pld", self.pairs_only())]
        generic = self.generic()
        if generic is not None:
            out.append(("generic", generic))
        return tuple(out)

    def __repr__(self) -> str:
        return "PrivacyProfile(" + ", ".join(self._bits()) + ")"

    def _bits(self) -> list[str]:
        bits: list[str] = []
        if self.approx_parts:
            counts: dict[tuple[Fraction, Fraction], int] = {}
            for pair in self.approx_parts:
                counts[pair] = counts.get(pair, 0) + 1
            shown = [
                f"(ε={format_up(e)}, δ={format_up(d)})" + (f"×{c}" if c > 1 else "")
                for (e, d), c in list(counts.items())[:4]
            ]
            more = ", …" if len(counts) > 4 else ""
            bits.append("approx=[" + ", ".join(shown) + more + "]")
        if self.gaussian_mu_sq:
            bits.append(f"gaussian μ²={format_up(self.gaussian_mu_sq)}")
        if self.rho:
            bits.append(f"zcdp ρ={format_up(self.rho)}")
        if self.loss is not None:
            text = f"pairs=[{_short_label(self.loss)}]"
            if self.loss_fallback is not None:
                text += " (or " + ", ".join(self.loss_fallback._bits()) + ")"
            bits.append(text)
        return bits


def _sqrt_up_exact(x: Fraction) -> Fraction:
    """√x exactly where x is the square of a rational, else an upper bound (a float rounded up)."""
    rn, rd = math.isqrt(x.numerator), math.isqrt(x.denominator)
    if rn * rn == x.numerator and rd * rd == x.denominator:
        return Fraction(rn, rd)
    return sqrt_up_q(x)


def _short_label(loss: PrivacyLoss) -> str:
    """The pair's label, with at most four distinct parts shown."""
    if loss.kind != "composed" or len(loss.parts) <= 4:
        return loss.label()
    shown = " + ".join(f"{n} × {p.label()}" if n > 1 else p.label() for p, n in loss.parts[:4])
    return f"{shown} + … ({loss.count()} mechanisms)"


def _route_delta(build: Callable[[], PrivacyProfile | list[_Part]], eps: Fraction) -> Fraction:
    route = build()
    if isinstance(route, PrivacyProfile):
        return route.delta(eps)
    return _split_delta([p[0] for p in route], eps)


def _route_epsilon(
    build: Callable[[], PrivacyProfile | list[_Part]], target: Fraction, delta: object
) -> Fraction:
    route = build()
    if isinstance(route, PrivacyProfile):
        return route.epsilon(target)
    return _split_epsilon(route, target, delta)


def _least(answers: Sequence[Callable[[], Fraction]]) -> Fraction:
    """The least of the valid bounds; a route that cannot answer (InvalidParameter: δ below what it
    reaches, a PLD outside its constructors' range) is skipped, and if none answers the first error is
    raised."""
    best: Fraction | None = None
    first: InvalidParameter | None = None
    for answer in answers:
        try:
            value = answer()
        except InvalidParameter as exc:
            first = first or exc
            continue
        best = value if best is None or value < best else best
    if best is None:
        assert first is not None
        raise first
    return best


def _split_epsilon(parts: Sequence[_Part], target: Fraction, delta: object) -> Fraction:
    """The least Σ εⱼ over splits of ``target`` into shares δⱼ ≥ least δⱼ, one per part (a grid of the
    simplex with step 1/8; 1 − Π(1 − δⱼ) ≤ Σ δⱼ, so every split is valid)."""
    if not parts:
        return ZERO
    if len(parts) == 1:
        return parts[0][1](target)
    floor = sum((p[2] for p in parts), ZERO)
    if target <= floor:
        raise InvalidParameter(
            f"delta={delta!r} must exceed the least δ the profile reaches, 1 − Π(1 − δᵢ) ≤ {format_up(floor)}"
        )
    # Give each part a share of the spare δ and take the best split on the grid. A share may be 0 where
    # the part's ε stays finite at its least δ (the (ε, δ) part), so the grid contains "all spare δ to one
    # part"; a part that cannot answer at its share (InvalidParameter) leaves that split out.
    spare = target - floor
    m = len(parts)
    cache: dict[tuple[int, int], Fraction | None] = {}

    def eps_part(j: int, share: int) -> Fraction | None:
        if (j, share) not in cache:
            _, epsilon_at, base, finite_at_floor = parts[j]
            d = base + spare * Fraction(share, 8)
            value: Fraction | None = None
            if d > base or finite_at_floor:
                try:
                    value = epsilon_at(d)
                except InvalidParameter:
                    value = None
            cache[(j, share)] = value
        return cache[(j, share)]

    best: Fraction | None = None
    for split in _compositions(8, m):
        values = [eps_part(j, w) for j, w in enumerate(split)]
        if any(v is None for v in values):
            continue
        cand = sum((v for v in values if v is not None), ZERO)
        best = cand if best is None or cand < best else best
    if best is None:
        raise InvalidParameter(f"delta={delta!r}: no split of it between the profile's parts is reachable")
    return best


def _compositions(total: int, parts: int) -> list[tuple[int, ...]]:
    """All ways to write ``total`` as an ordered sum of ``parts`` non-negative integers."""
    if parts == 1:
        return [(total,)]
    return [(i, *rest) for i in range(total + 1) for rest in _compositions(total - i, parts - 1)]


def _split_delta(
    parts: Sequence[Callable[[Fraction], Fraction]], eps: Fraction, knots: Sequence[Fraction] = ()
) -> Fraction:
    """min over splits Σ εⱼ = ε of 1 − Π(1 − δⱼ(εⱼ)) (every evaluated split is a valid bound).

    ``knots`` are extra candidate values of the first part's ε (e.g. Σεᵢ of the (ε, δ) part, where its δ
    reaches its floor), so a split that :meth:`PrivacyProfile.epsilon` uses is always tried.
    """
    first = parts[0]
    if len(parts) == 1:
        return first(eps)
    rest = parts[1:]

    def at(s: Fraction) -> Fraction:
        return _combine(first(s), _split_delta(rest, eps - s))

    grid = [eps * Fraction(i, 8) for i in range(9)]
    values = [at(s) for s in grid]
    best_i = min(range(len(grid)), key=lambda i: values[i])
    best = values[best_i]
    for knot in knots:
        if 0 <= knot <= eps:
            best = min(best, at(knot))
    lo = grid[max(best_i - 1, 0)]
    hi = grid[min(best_i + 1, 8)]
    g = Fraction(math.sqrt(5) - 1) / 2  # golden section on [lo, hi]; rational points, exact bounds
    g = Fraction(float(g)).limit_denominator(10**6)
    c, d = hi - g * (hi - lo), lo + g * (hi - lo)
    fc, fd = at(c), at(d)
    for _ in range(12):
        if fc < fd:
            hi, d, fd = d, c, fc
            c = hi - g * (hi - lo)
            c = Fraction(float(c))
            fc = at(c)
        else:
            lo, c, fc = c, d, fd
            d = lo + g * (hi - lo)
            d = Fraction(float(d))
            fd = at(d)
    return min(best, fc, fd)
