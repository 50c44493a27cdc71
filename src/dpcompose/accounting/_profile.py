"""Privacy profiles: the curve δ(ε) of a mechanism, and their composition.

A :class:`PrivacyProfile` records *what is composed* — (εᵢ, δᵢ) guarantees, Gaussian mechanisms (as
Σ μᵢ², μᵢ = Δᵢ/σᵢ) and zCDP guarantees (as Σ ρᵢ) — and answers ``.delta(ε)`` and ``.epsilon(δ)`` with
the tightest proven rule for that mix. Every answer is an upper bound (never under-reports).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

from dpcompose._scipy import brentq, log_ndtr
from dpcompose.accounting._common import ONE, ZERO, nonnegative, positive, probability
from dpcompose.accounting._display import format_up
from dpcompose.accounting._exact import (
    Number,
    exp_up,
    expm1_down,
    float_down,
    float_up,
    sqrt_down,
    sqrt_up,
)
from dpcompose.accounting._optimal import _lost_bounds, optimal_delta, optimal_epsilon
from dpcompose.accounting._zcdp import zcdp_delta, zcdp_to_approx
from dpcompose.errors import InvalidParameter

__all__ = ["PrivacyProfile", "gaussian_delta", "gaussian_profile"]

_U = 2.0**-53
_LOG_NDTR_PAD = 64 * _U  # assumed accuracy of scipy's log_ndtr (relative, plus the same absolute)


def _log_ndtr_up(x: float) -> float:
    v = float(log_ndtr(x))
    return v + _LOG_NDTR_PAD * (1 + abs(v))


def _log_ndtr_down(x: float) -> float:
    v = float(log_ndtr(x))
    return v - _LOG_NDTR_PAD * (1 + abs(v))


def gaussian_delta(mu_sq: Number, epsilon: Number) -> Fraction:
    """The exact δ(ε) of a μ-GDP (Gaussian) mechanism, rounded up: ``Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ)``.

    μ = Δ/σ is given through ``mu_sq = μ²`` (exact, so compositions ``Σ μᵢ²`` stay exact). Computed as
    ``Φ(a)·(1 − exp(ε + log Φ(b) − log Φ(a)))`` with log-Φ from :func:`scipy.special.log_ndtr`, every
    quantity rounded in the direction that increases δ.

    Source: Balle–Wang 2018 (ICML) Thm 8 (analytic Gaussian mechanism); Dong–Roth–Su 2019 Cor 2.13.

    Examples:
        >>> float(gaussian_delta(1, 1.0))
        0.12693673...
    """
    m2 = nonnegative(mu_sq, "mu_sq")
    eps = nonnegative(epsilon, "epsilon")
    if m2 == 0:
        return ZERO
    mu_up, mu_dn = Fraction(sqrt_up(m2)), Fraction(sqrt_down(m2))
    if mu_dn == 0:
        mu_dn = Fraction(5e-324)
    # Φ is increasing: raising a (to at least −1e150, where log Φ is still finite) only raises the bound.
    a_up = max(float_up(mu_up / 2 - eps / mu_up), -1e150)
    b_dn = float_down(-(mu_up / 2 + eps / mu_dn))
    la = _log_ndtr_up(a_up)
    ef = float_down(eps)
    if b_dn < -1e150 or ef > 1e300:  # e^ε Φ(b) is bounded below by 0: the factor w is at most 1
        w_up = 1.0
    else:
        lb = _log_ndtr_down(b_dn)
        t = ef + lb - la
        t_dn = t - 4 * _U * (abs(ef) + abs(lb) + abs(la))
        w_up = -expm1_down(min(t_dn, 0.0))
    return min(ONE, Fraction(exp_up(la)) * Fraction(w_up))


def _gaussian_epsilon(mu_sq: Fraction, delta: Fraction) -> Fraction:
    if delta == 0:
        raise InvalidParameter("delta=0 must be positive: a Gaussian mechanism has δ(ε) > 0 at every ε")
    mu = math.sqrt(float(mu_sq))

    def rough(e: float) -> float:  # float-only δ(ε) to locate the root; the answer is then certified
        la = float(log_ndtr(mu / 2 - e / mu))
        lb = float(log_ndtr(-mu / 2 - e / mu))
        return math.exp(la) * -math.expm1(min(e + lb - la, 0.0))

    return _least_epsilon(lambda e: gaussian_delta(mu_sq, e), delta, _gaussian_hi(mu_sq, delta), rough)


def _gaussian_hi(mu_sq: Fraction, delta: Fraction) -> Fraction:
    # ε = μ²/2 + μ√(2 ln(1.25/δ)) is enough (classical bound: δ(ε) ≤ Φ(μ/2 − ε/μ)); double it for safety.
    # only the search's starting bracket (it doubles until δ is met); ln(1/δ) from the exact Fraction, as a
    # δ such as 5e-324 or 10**-400 has no float reciprocal
    mu = math.sqrt(float(mu_sq))
    ln_inv = math.log(delta.denominator) - math.log(delta.numerator)
    return Fraction(2 * (mu * mu / 2 + mu * math.sqrt(2 * (math.log(1.25) + ln_inv))) + 1)


def _least_epsilon(
    delta_at: Callable[[Fraction], Fraction],
    target: Fraction,
    hi: Fraction,
    rough: Callable[[float], float] | None = None,
) -> Fraction:
    """Least ε (to ~1e-13 relative) in [0, hi] with delta_at(ε) ≤ target. delta_at is a valid upper
    bound, and the returned ε is checked against it, so the answer always satisfies the target."""
    if delta_at(ZERO) <= target:
        return ZERO
    while delta_at(hi) > target:
        hi *= 2
        if hi > 1e6:
            raise InvalidParameter(f"delta={float(target)!r} is not reached by any ε ≤ 1e6")
    t = float(target)
    hi_f = float_up(hi)

    def f(x: float) -> float:
        return (rough(x) if rough is not None else float(delta_at(Fraction(x)))) - t

    x = float(brentq(f, 0.0, hi_f, xtol=1e-14 * hi_f, rtol=1e-14, maxiter=200))
    # the float root may sit a hair below the certified root: step up, doubling the step each time, so
    # the overshoot stays within twice the gap (fixed tiny steps could give up and return hi)
    step = max(x * 1e-15, 1e-300)
    for _ in range(1100):
        if x >= hi_f:
            break
        if delta_at(Fraction(x)) <= target:
            return min(hi, Fraction(x))
        x = math.nextafter(x + step, math.inf)
        step *= 2
    return hi


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
      2020 Prop 12.

    When several kinds are present, each kind is composed as above and the parts are combined by
    sequential composition of their profiles: each part j is (εⱼ, δⱼ(εⱼ))-DP for every εⱼ, so the whole
    is ``(Σ εⱼ, 1 − Π(1 − δⱼ(εⱼ)))``-DP (the optimal composition theorem at ε_g = Σ εⱼ, KOV 2015 Thm 3.3);
    ``delta(ε)`` minimises this over splits of ε (any split is valid, so a numerical minimiser cannot
    under-report).

    Examples:
        >>> p = PrivacyProfile.compose([PrivacyProfile.pure(0.1)] * 100)
        >>> float(p.epsilon(1e-6))
        4.774567588...
        >>> p.delta(11)
        Fraction(0, 1)
    """

    approx_parts: tuple[tuple[Fraction, Fraction], ...] = ()
    gaussian_mu_sq: Fraction = ZERO
    rho: Fraction = ZERO

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
    def compose(cls, profiles: Sequence[PrivacyProfile]) -> PrivacyProfile:
        """The profile of the (adaptive) composition of mechanisms with these profiles.

        Source: KOV 2015 Thm 3.3 / Murtagh–Vadhan 2016 Thm 1.5 ((ε, δ) parts); Dong–Roth–Su 2019 Cor 3.3
        (Gaussian parts); Bun–Steinke 2016 Lemma 2.3 (zCDP parts).
        """
        if isinstance(profiles, PrivacyProfile) or not isinstance(profiles, Sequence):
            raise InvalidParameter(f"profiles={profiles!r} must be a sequence of PrivacyProfile")
        for i, p in enumerate(profiles):
            if not isinstance(p, PrivacyProfile):
                raise InvalidParameter(f"profiles[{i}]={p!r} must be a PrivacyProfile")
        return cls(
            approx_parts=tuple(pair for p in profiles for pair in p.approx_parts),
            gaussian_mu_sq=sum((p.gaussian_mu_sq for p in profiles), ZERO),
            rho=sum((p.rho for p in profiles), ZERO),
        )

    # queries -----------------------------------------------------------------------------------
    def _parts(self) -> list[tuple[Callable[[Fraction], Fraction], Callable[[Fraction], Fraction], Fraction]]:
        """(delta_at, epsilon_at, least reachable δ) for each kind present."""
        parts: list[tuple[Callable[[Fraction], Fraction], Callable[[Fraction], Fraction], Fraction]] = []
        if self.approx_parts:
            eps = [e for e, _ in self.approx_parts]
            dels = [d for _, d in self.approx_parts]
            floor = _lost_bounds(dels)[1]
            parts.append(
                (lambda x: optimal_delta(eps, dels, x), lambda d: optimal_epsilon(eps, dels, d), floor)
            )
        if self.gaussian_mu_sq:
            m2 = self.gaussian_mu_sq
            parts.append((lambda x: gaussian_delta(m2, x), lambda d: _gaussian_epsilon(m2, d), ZERO))
        if self.rho:
            r = self.rho
            parts.append((lambda x: zcdp_delta(r, x), lambda d: zcdp_to_approx(r, d), ZERO))
        return parts

    def delta(self, epsilon: Number) -> Fraction:
        """An upper bound on δ at ``epsilon`` (≥ 0)."""
        eps = nonnegative(epsilon, "epsilon")
        parts = self._parts()
        if not parts:
            return ZERO
        knots = [sum((e for e, _ in self.approx_parts), ZERO)] if self.approx_parts else []
        return _split_delta([p[0] for p in parts], eps, knots)

    def epsilon(self, delta: Number) -> Fraction:
        """An upper bound on the least ε with δ(ε) ≤ ``delta``.

        Raises:
            InvalidParameter: ``delta`` is not in [0, 1), or is below the least δ the profile reaches.
        """
        target = probability(delta, "delta")
        parts = self._parts()
        if not parts:
            return ZERO
        if len(parts) == 1:
            _, epsilon_at, _ = parts[0]
            return epsilon_at(target)
        floor = parts[0][2]  # only the (ε, δ) part has a floor, and it comes first
        if target <= floor:
            raise InvalidParameter(
                f"delta={delta!r} must exceed the least δ the profile reaches, 1 − Π(1 − δᵢ) ≤ "
                f"{format_up(floor)}"
            )
        # Give each part a share of the spare δ (1 − Π(1 − δⱼ) ≤ Σ δⱼ, so every split is valid) and
        # take the best split on a grid of the simplex with step 1/8. A share may be 0 where the part's
        # ε stays finite at its least δ (the (ε, δ) part), so the grid contains "all spare δ to one part".
        spare = target - floor
        m = len(parts)
        cache: dict[tuple[int, int], Fraction | None] = {}

        def eps_part(j: int, share: int) -> Fraction | None:
            if (j, share) not in cache:
                base = floor if j == 0 else ZERO
                d = base + spare * Fraction(share, 8)
                cache[(j, share)] = parts[j][1](d) if (d > 0 or j == 0) else None
            return cache[(j, share)]

        best: Fraction | None = None
        for split in _compositions(8, m):
            values = [eps_part(j, w) for j, w in enumerate(split)]
            if any(v is None for v in values):
                continue
            cand = sum((v for v in values if v is not None), ZERO)
            best = cand if best is None or cand < best else best
        assert best is not None
        return best

    def __repr__(self) -> str:
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
        return "PrivacyProfile(" + ", ".join(bits) + ")"


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
