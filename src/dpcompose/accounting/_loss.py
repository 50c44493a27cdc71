"""A mechanism's privacy loss at one input distance, described by name and exact parameters.

A :class:`PrivacyLoss` names a *dominating pair* (Zhu–Dong–Wang 2022, Def. 7) of a mechanism at a
given ``d_in``: "discrete Laplace with integer shift Δ and scale t", "randomized response with ε", "any
(ε, δ)-DP mechanism" (the pair RR_(ε,δ)), such a mechanism run on a random subsample, or the composition of
such pairs. It is a value (frozen,
hashable, exact), so a privacy map can return it cheaply and the expensive part — the privacy loss
distribution (:class:`~dpcompose.accounting.PLD`) and its ε(δ) — is computed once per distinct
description and cached.

Composition: the product of dominating pairs dominates the adaptive composition (Zhu–Dong–Wang
2022, Thm 10), and for interactive mechanisms composed concurrently every f-DP composition theorem holds
(Vadhan–Zhang 2023, Thm 1.3), so the PLD of the product bounds both.

Examples:
    >>> from dpcompose.accounting import PrivacyLoss
    >>> one = PrivacyLoss.discrete_laplace(2**30, 10 * 2**30)  # make_laplace(scale=10) at d_in = 1
    >>> many = PrivacyLoss.compose([one] * 100)
    >>> many
    PrivacyLoss(100 × discrete_laplace(Δ=1073741824, t=10737418240))
    >>> 4.69 < float(many.epsilon(1e-6)) < 4.70  # optimal composition of 100 × ε = 0.1: 4.7746
    True
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, TypeVar

import numpy as np

from dpcompose.accounting._common import epsilon_list, probability
from dpcompose.accounting._exact import Number, exact
from dpcompose.accounting._filters import DEFAULT_ORDERS, add_renyi_curves, check_orders
from dpcompose.accounting._pld import (
    DEFAULT_STEP_BITS,
    DEFAULT_TAIL,
    MIXED_SAMPLING,
    PLD,
    THIN_MIN_COUNT,
    check_aligned,
    check_sampling,
    compose_counted,
    compose_plds,
    constructor_grid,
    identity,
    pld_approx,
    pld_discrete_gaussian,
    pld_discrete_laplace,
    pld_gaussian,
    pld_laplace,
    pld_randomized_response,
    pld_subsampled_approx,
    pld_subsampled_discrete_gaussian,
    pld_subsampled_discrete_laplace,
    pld_subsampled_gaussian,
    pld_subsampled_laplace,
    pld_subsampled_rr,
    reach_fits,
)
from dpcompose.accounting._rdp import subsampled_renyi
from dpcompose.errors import InvalidParameter, ResourceLimit, UnsupportedComposition

__all__ = ["GROUP_OVER", "MAX_DISTINCT", "PrivacyLoss", "flagged_pair", "rounded_pair"]

_KINDS = (
    "discrete_laplace",
    "laplace",
    "discrete_gaussian",
    "gaussian",
    "randomized_response",
    "approx",
    "subsampled",
    "composed",
)
_SOURCES = {
    "discrete_laplace": "Ghosh–Roughgarden–Sundararajan 2009 (mechanism); PLD: Koskela et al. 2021",
    "laplace": "Dwork–McSherry–Nissim–Smith 2006 (mechanism); PLD: Koskela et al. 2020",
    "gaussian": "Balle–Wang 2018 Thm 8; PLD: Koskela et al. 2020",
    "discrete_gaussian": "Canonne–Kamath–Steinke 2020 (mechanism); PLD: Koskela et al. 2020",
    "randomized_response": "Warner 1965; Kairouz–Oh–Viswanath 2016",
    "approx": "Kairouz–Oh–Viswanath 2015 Thm 2.5 (every (ε, δ) mechanism is a post-processing of RR_(ε,δ))",
    "subsampled": "Zhu–Dong–Wang 2022 Thm 11 (Poisson subsampling) and Prop. 30 (without replacement); "
    "Balle–Barthe–Gaboardi 2018 Thms 2, 8 and 9",
}
_SAMPLINGS = ("poisson", "without_replacement")


def _show(x: object) -> str:
    if isinstance(x, Fraction):
        if x.denominator == 1:
            return str(x.numerator)
        f = _float(x)
        return repr(f) if math.isfinite(f) and Fraction(f) == x else f"{f:.6g}…"
    return repr(x)


@dataclass(frozen=True)
class PrivacyLoss:
    """A named dominating pair of a mechanism at one ``d_in`` (see the module docstring).

    Build one with the class methods (:meth:`discrete_laplace`, :meth:`laplace`, :meth:`gaussian`,
    :meth:`discrete_gaussian`, :meth:`randomized_response`, :meth:`approx`, :meth:`subsampled`,
    :meth:`compose`); read it with :meth:`pld`, :meth:`epsilon` (certified upper bound on ε(δ)) and
    :meth:`epsilon_bounds`.

    Attributes:
        kind: one of ``discrete_laplace``, ``laplace``, ``gaussian``, ``discrete_gaussian``,
            ``randomized_response``, ``approx``, ``subsampled``, ``composed``.
        params: the exact parameters (empty for ``composed``; ``(rate, sampling)`` for ``subsampled``).
        parts: for ``composed``, the pairs ``(part, count)`` in a canonical order; for ``subsampled``,
            ``((child, 1),)``; otherwise empty.

    Examples:
        >>> PrivacyLoss.randomized_response(1.0)
        PrivacyLoss(randomized_response(ε=1, k=2))
    """

    kind: str
    params: tuple[Fraction | int | str, ...] = ()
    parts: tuple[tuple[PrivacyLoss, int], ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str) or self.kind not in _KINDS:
            raise InvalidParameter(f"kind={self.kind!r} must be one of {', '.join(_KINDS)}")
        if not isinstance(self.params, tuple) or not isinstance(self.parts, tuple):
            raise InvalidParameter(f"params={self.params!r} and parts={self.parts!r} must be tuples")
        if self.kind == "composed":
            ok = (
                self.params == ()
                and len(self.parts) > 0
                and all(
                    isinstance(pc, tuple)
                    and len(pc) == 2
                    and isinstance(pc[0], PrivacyLoss)
                    and pc[0].kind != "composed"
                    and _is_int(pc[1])
                    and pc[1] >= 1
                    for pc in self.parts
                )
            )
            if not ok:
                raise InvalidParameter(
                    f"parts={self.parts!r} must be non-empty (PrivacyLoss, count >= 1) pairs; "
                    "build compositions with PrivacyLoss.compose"
                )
            return
        if self.kind == "subsampled":
            p, parts = self.params, self.parts
            ok = (
                len(p) == 2
                and isinstance(p[0], Fraction)
                and 0 <= p[0] <= 1
                and type(p[1]) is str
                and p[1] in _SAMPLINGS
                and len(parts) == 1
                and isinstance(parts[0], tuple)
                and len(parts[0]) == 2
                and isinstance(parts[0][0], PrivacyLoss)
                and parts[0][0].kind not in ("composed", "subsampled")
                and type(parts[0][1]) is int
                and parts[0][1] == 1
            )
            if not ok:
                raise InvalidParameter(
                    f"params={self.params!r} and parts={self.parts!r} are not valid for kind='subsampled': "
                    "build it with PrivacyLoss.subsampled(child, rate, sampling)"
                )
            return
        shape = {
            "discrete_laplace": (_is_int, _is_positive),
            "discrete_gaussian": (_is_int, _is_positive),
            "laplace": (_is_nonnegative, _is_positive),
            "gaussian": (_is_nonnegative, _is_positive),
            "randomized_response": (_is_nonnegative, lambda k: _is_int(k) and k >= 2),
            "approx": (_is_nonnegative, lambda d: isinstance(d, Fraction) and 0 <= d < 1),
        }[self.kind]
        valid = len(self.params) == 2 and all(f(v) for f, v in zip(shape, self.params, strict=True))
        if self.parts or not valid:
            raise InvalidParameter(
                f"params={self.params!r} (parts={self.parts!r}) are not valid for kind={self.kind!r}: "
                f"build it with PrivacyLoss.{self.kind}(...), which reads and checks the numbers"
            )

    # -- constructors -------------------------------------------------------------------------------------

    @classmethod
    def discrete_laplace(cls, sensitivity: int, scale: Number) -> PrivacyLoss:
        """Discrete Laplace noise P(z) ∝ e^{−|z|/t} on the integers, shift Δ (an integer)."""
        if isinstance(sensitivity, bool) or not isinstance(sensitivity, int) or sensitivity < 0:
            raise InvalidParameter(f"sensitivity={sensitivity!r} must be a non-negative integer")
        return cls("discrete_laplace", (int(sensitivity), _positive(scale, "scale")))

    @classmethod
    def discrete_gaussian(cls, sensitivity: int, sigma: Number) -> PrivacyLoss:
        """Discrete Gaussian noise P(z) ∝ e^{−z²/2σ²} on the integers, shift Δ (an integer)."""
        if isinstance(sensitivity, bool) or not isinstance(sensitivity, int) or sensitivity < 0:
            raise InvalidParameter(f"sensitivity={sensitivity!r} must be a non-negative integer")
        return cls("discrete_gaussian", (int(sensitivity), _positive(sigma, "sigma")))

    @classmethod
    def laplace(cls, sensitivity: Number, scale: Number) -> PrivacyLoss:
        """Continuous Laplace noise of scale b, shift Δ."""
        return cls("laplace", (_nonnegative(sensitivity, "sensitivity"), _positive(scale, "scale")))

    @classmethod
    def gaussian(cls, sensitivity: Number, sigma: Number) -> PrivacyLoss:
        """Continuous Gaussian noise N(0, σ²), shift Δ."""
        return cls("gaussian", (_nonnegative(sensitivity, "sensitivity"), _positive(sigma, "sigma")))

    @classmethod
    def randomized_response(cls, epsilon: Number, k: int = 2) -> PrivacyLoss:
        """k-ary randomized response with parameter ε (the worst pair of inputs)."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 2:
            raise InvalidParameter(f"k={k!r} must be an integer >= 2")
        return cls("randomized_response", (_nonnegative(epsilon, "epsilon"), int(k)))

    @classmethod
    def approx(cls, epsilon: Number, delta: Number) -> PrivacyLoss:
        """Any (ε, δ)-DP mechanism: the pair RR_(ε,δ) (pure ε: δ = 0)."""
        return cls("approx", (_nonnegative(epsilon, "epsilon"), probability(delta, "delta")))

    @classmethod
    def subsampled(cls, child: PrivacyLoss, rate: Number, sampling: str = "poisson") -> PrivacyLoss:
        """The mechanism ``child`` describes, run on a random subsample drawn with this rate.

        ``sampling="poisson"``: every record is kept independently with probability ``rate``, and
        ``child`` must be the pair for one record added or removed. ``sampling="without_replacement"``: a
        subset of fixed size m = rate·n, and ``child`` must be the pair for one record substituted. The
        PLD (:meth:`pld`) is that of the subsampled dominating pair: for Poisson sampling both orders
        ((1 − q)Q + qP against Q, and the reverse), composed separately; without replacement one
        symmetric pair (see ``_pld.subsample.cells``). Rate 1 is ``child`` itself, rate 0
        the identity (δ = 0).

        Only a single mechanism's pair can be subsampled here: the subsampled pair of a composition is
        not the product of the subsampled pairs, and no theorem used here gives it, so a ``composed``
        (or an already ``subsampled``) child is refused; account such a mechanism by its (ε, δ) amplified
        by subsampling instead. The one exception is a *flagged* pair: a composition of one pair X
        (count 1) with (0, η_i) pairs (``approx(0, η_i)``, as the vector Gaussian reports:
        :func:`~dpcompose.accounting._vector_pairs.vector_gaussian_bound`) is subsampled as
        ``compose([subsampled(X), approx(0, η)])`` with η = Σ n_i·η_i (refused if that is not below 1).

        Why (the flagged-mixture lemma). The (0, η_i) parts compose to A(0, 1 − ∏(1 − η_i)^{n_i}) (with
        that probability one of them shows an outcome only one side can produce; otherwise all are
        identical), dominated by A(0, η) as H_α(A(0, δ)) = max(δ, 1 − α + αδ) is non-decreasing in δ. So
        the child is (a pair dominated by) Y = X ⊗ A(0, η), a labelled mixture: with probability 1 − η
        the label "main" and the pair X = (P₁, Q₁); with probability η the label "flag" and
        (P₁ ⊗ δ_a, Q₁ ⊗ δ_b), the same under both sides. Every subsampled pair used here (Poisson, both
        orders: ((1 − q)Q + qP, Q) and (Q, (1 − q)Q + qP); without replacement: the bound by
        H_α((1 − q)Q + qP ‖ Q) for α ≥ 1 and H_α(Q ‖ (1 − q)Q + qP) for α < 1 — see
        ``_pld.subsample.cells``) is built from affine mixtures of the two sides with the same weights on
        both labels, so applied to Y it is again a labelled mixture: (1 − η)·[the subsampled X] +
        η·[a subsampled flag part], whose hockey-stick divergence at every α ≥ 0 is
        (1 − η)·H_α(subsampled X) + η·H_α(flag part) ≤ (1 − η)·H_α(subsampled X) + η (any H_α ≤ 1 for
        α ≥ 0), which is H_α(subsampled X ⊗ A(0, η)). The subsampling theorems hold for every dominating
        pair of the mechanism, Y included, so ``compose([subsampled(X), approx(0, η)])`` dominates the
        subsampled mechanism in each order (and A(0, η) is its own reverse).

        Source: Zhu–Dong–Wang 2022 Thm 11 (Poisson) and Prop. 30 (without replacement); Balle–Barthe–
        Gaboardi 2018 Thms 2, 8 and 9; Kairouz–Oh–Viswanath 2015 (the (0, η) pair); the flagged-mixture
        lemma above (proved here).

        Raises:
            InvalidParameter: ``child`` is not a PrivacyLoss, ``rate`` is not in [0, 1], or ``sampling`` is
                neither ``"poisson"`` nor ``"without_replacement"``.
            UnsupportedComposition: ``child`` is ``subsampled``, or ``composed`` other than one pair
                with (0, η) pairs.

        Examples:
            >>> step = PrivacyLoss.subsampled(PrivacyLoss.discrete_gaussian(2**30, 2**30), 0.01)
            >>> step
            PrivacyLoss(subsampled(discrete_gaussian(Δ=1073741824, σ=1073741824), q=0.01, poisson))
            >>> 0.19 < float(step.epsilon(1e-5)) < 0.21
            True
        """
        if not isinstance(child, PrivacyLoss):
            raise InvalidParameter(f"child={child!r} must be a PrivacyLoss")
        flagged = flagged_pair(child)
        if flagged is not None:
            pair, eta = flagged
            return cls.compose([cls.subsampled(pair, rate, sampling), cls.approx(0, eta)])
        if child.kind in ("composed", "subsampled"):
            raise UnsupportedComposition(
                f"child={child!r}: the subsampled pair of a {child.kind} mechanism is not a product of "
                "subsampled pairs and no theorem used here gives it (only one pair composed with (0, η) "
                "pairs is taken); subsample each mechanism on its own, or account the subsampled "
                "composition by its (ε, δ)"
            )
        q = _nonnegative(rate, "rate")
        if q > 1:
            raise InvalidParameter(f"rate={rate!r} must be in [0, 1]")
        return cls("subsampled", (q, check_sampling(sampling)), ((child, 1),))

    @classmethod
    def compose(cls, parts: Iterable[PrivacyLoss]) -> PrivacyLoss:
        """The composition of these mechanisms (nested compositions are flattened; equal parts counted).

        All parts must be pairs for one neighbouring relation: a Poisson-subsampled pair holds for one
        record added or removed (Zhu–Dong–Wang 2022 Thm 11), a pair subsampled without replacement for one
        record substituted (Prop. 30), and neither dominates the mechanism under the other relation (under
        substitution a Poisson-subsampled Gaussian's worst pair is (qP + (1 − q)Q, qP′ + (1 − q)Q), P, P′ the
        two substituted values' laws: Lebeda–Regehr–Kamath–Steinke 2024). So parts that mix the two
        samplings (at rates strictly between 0 and 1) are refused.

        Source: Zhu–Dong–Wang 2022 Thm 10 (adaptive, product of dominating pairs); Vadhan–Zhang 2023
        Thm 1.3 (the same bound for concurrent composition of interactive mechanisms).

        Raises:
            InvalidParameter: ``parts`` is empty or holds something other than a PrivacyLoss.
            UnsupportedComposition: the parts mix Poisson sampling with sampling without replacement.

        Examples:
            >>> g = PrivacyLoss.gaussian(1, 1)
            >>> PrivacyLoss.compose([g, g]).count()
            2
            >>> PrivacyLoss.compose([PrivacyLoss.subsampled(g, 0.1),
            ...                      PrivacyLoss.subsampled(g, 0.1, "without_replacement")])
            Traceback (most recent call last):
            ...
            dpcompose.errors.UnsupportedComposition: ...
        """

        def problem() -> str:  # (formatted only when raised: the repr of 10⁶ parts on every call would
            return f"parts={parts!r} must be an iterable of PrivacyLoss values"  # take 62% of the time)

        if isinstance(parts, (PrivacyLoss, str, bytes)) or not isinstance(parts, Iterable):
            raise InvalidParameter(problem())
        try:
            items = list(parts)
        except TypeError:  # e.g. a 0-d numpy array
            raise InvalidParameter(problem()) from None
        # one object repeated (a training run's steps) is counted by identity first: hashing a pair hashes
        # its exact parameters, and 10⁶ of them took seconds
        same = Counter(map(id, items))
        objects = dict(zip(map(id, items), items, strict=True))
        counts: Counter[PrivacyLoss] = Counter()
        for key, times in same.items():
            part = objects[key]
            if not isinstance(part, PrivacyLoss):
                i = next(i for i, p in enumerate(items) if p is part)
                raise InvalidParameter(f"parts[{i}]={part!r} must be a PrivacyLoss")
            if part.kind == "composed":
                for inner, n in part.parts:
                    counts[inner] += n * times
            else:
                counts[part] += times
        if not counts:
            raise InvalidParameter(f"parts={parts!r}: compose needs at least one PrivacyLoss")
        return cls._from_counts(counts)

    def times(self, n: int) -> PrivacyLoss:
        """``n`` runs of this mechanism composed: equal to ``PrivacyLoss.compose([self] * n)``, without the
        list (a training run of 10⁶ steps of one pair).

        Source: as :meth:`compose` (Zhu–Dong–Wang 2022 Thm 10).

        Raises:
            InvalidParameter: ``n`` is not a positive integer.

        Examples:
            >>> g = PrivacyLoss.gaussian(1, 1)
            >>> g.times(3) == PrivacyLoss.compose([g] * 3), g.times(1) is g
            (True, True)
        """
        if not _is_int(n) or n < 1:
            raise InvalidParameter(f"n={n!r} must be a positive integer")
        if n == 1:
            return self
        counts: Counter[PrivacyLoss] = Counter()
        for part, m in self.parts if self.kind == "composed" else ((self, 1),):
            counts[part] += m * n
        return self._from_counts(counts)

    @classmethod
    def _from_counts(cls, counts: Counter[PrivacyLoss]) -> PrivacyLoss:
        """The composition of ``counts[p]`` copies of each (non-composed) pair p, in the canonical order."""
        if len({p._sampling() for p in counts} - {None}) > 1:
            raise UnsupportedComposition(MIXED_SAMPLING)
        ordered = tuple(sorted(counts.items(), key=lambda pc: (pc[0].kind, repr(pc[0].params), repr(pc[0]))))
        if len(ordered) == 1 and ordered[0][1] == 1:
            return ordered[0][0]
        return cls("composed", (), ordered)

    # -- reading ------------------------------------------------------------------------------------------

    @property
    def source(self) -> str:
        """The papers behind this pair and its PLD."""
        if self.kind == "composed":
            srcs = dict.fromkeys(p.source for p, _ in sorted(self.parts, key=lambda pc: pc[0].kind))
            return "; ".join(srcs) + "; composition: Zhu–Dong–Wang 2022 Thm 10"
        if self.kind == "subsampled":
            return f"{_SOURCES['subsampled']}; {self.parts[0][0].source}"
        return _SOURCES[self.kind]

    def pld(self, step_bits: int = DEFAULT_STEP_BITS, *, aligned: bool = False) -> PLD:
        """The certified privacy loss distribution on the lattice ``2**-step_bits``.

        With ``aligned=True``, a mechanism whose losses are atoms (Laplace, discrete Laplace, randomized
        response, an (ε, δ) pair), or n copies of one, is built on the lattice through its atoms (see
        :func:`~dpcompose.accounting.pld_laplace`): 1000 × Laplace(10) at δ = 1e-6 gives 18.95028741
        against 18.95028849 on 2**-14. Such a PLD composes only with PLDs on its own lattice. Other pairs,
        mixtures of kinds, and compositions too long for the aligned lattice's exact positions get the plain
        lattice. :meth:`epsilon_bounds`, :meth:`epsilon` and :meth:`delta` read both lattices and keep the
        tighter bound at each end (neither is the tighter at every δ).

        A composition of more than :data:`GROUP_OVER` distinct pairs gets the PLD of its Laplace pairs
        rounded to dominating ones (:func:`_rounded_groups`): its upper readings bound the mechanisms, its
        lower readings only the rounded pairs (:meth:`epsilon_bounds` reads its lower end from pairs
        rounded down instead).

        Raises:
            InvalidParameter: the parameters are outside what the PLD constructors support (for example
                Δ/t above 700), or ``aligned`` is not a bool.
        """
        return _pld_aligned(self, step_bits) if check_aligned(aligned) else _pld(self, step_bits)

    def epsilon_bounds(self, delta: Number) -> tuple[Fraction, Fraction]:
        """Certified ``(lower, upper)`` bounds on the least ε with δ(ε) ≤ ``delta`` (cached).

        The lattice is ``2**-step_bits`` with :meth:`step_bits`: the default, coarsened where the composed
        losses span so many lattice points that the work would be large (the bounds stay certified; the
        interval widens by about one lattice step per unit of ε).
        """
        return _epsilon_bounds(self, probability(delta, "delta"))

    def span(self) -> float:
        """An upper bound on the largest finite privacy loss (for the Gaussian: μ²/2 + 14μ, the PLD's
        range), summed over a composition."""
        if self.kind == "composed":
            return sum(p.span() * n for p, n in self.parts)
        if self.kind == "subsampled":
            # the losses ln(1 − q + q·e^{±ℓ}) of a child loss ℓ ∈ [−S, S]
            s, q = self.parts[0][0].span(), float(Fraction(self.params[0]))
            if q == 0:
                return 0.0
            if not s <= 700:
                return s
            return max(math.log1p(q * math.expm1(s)), -math.log1p(q * math.expm1(-s)))
        if self.kind in ("discrete_laplace", "laplace"):
            return _float(Fraction(self.params[0]) / Fraction(self.params[1]))
        if self.kind in ("gaussian", "discrete_gaussian"):
            mu = _float(Fraction(self.params[0]) / Fraction(self.params[1]))
            return mu * mu / 2 + 14 * mu if mu < 1e150 else math.inf
        return _float(Fraction(self.params[0]))

    def step_bits(self) -> int:
        """The lattice used by :meth:`epsilon_bounds`: ``DEFAULT_STEP_BITS`` unless the composed losses span
        more than ``2**22`` lattice points or one part more than ``2**18``; then the finest lattice within
        those (at least 2**-4)."""
        parts = self.parts if self.kind == "composed" else ((self, 1),)
        widest = max(p.span() for p, _ in parts)
        bits = DEFAULT_STEP_BITS
        while bits > 4 and widest * 2.0**bits > 2.0**18:
            bits -= 1
        total = sum(_extent(p, n, bits) for p, n in parts)
        while bits > 4 and total * 2.0**bits > 2.0**22:
            bits -= 1
        return bits

    def epsilon(self, delta: Number) -> Fraction:
        """The certified upper bound on ε(δ): never below the mechanism's true ε at this δ.

        Examples:
            >>> float(PrivacyLoss.approx(1.0, 0).epsilon(0)) >= 1.0
            True
        """
        return _epsilon_upper(self, probability(delta, "delta"))

    def delta(self, epsilon: Number) -> Fraction:
        """The certified upper bound on δ(ε) (the least of the plain and the aligned lattice's, as in
        :meth:`epsilon_bounds`)."""
        return min(_each(self, lambda p: p.delta(epsilon)))

    def deltas(self, epsilons: Sequence[Number]) -> tuple[Fraction, ...]:
        """:meth:`delta` at each ε of ``epsilons`` (a privacy profile to plot), the same values: certified
        upper bounds on δ(ε) = E[(1 − e^{ε − L})₊] (Sommer–Meiser–Mohammadi 2019, Thm 1; Zhu–Dong–Wang 2022,
        Thm 10), each PLD (:func:`_reading_plds`) built and read once for all ε (:meth:`PLD.deltas`). Not
        always non-increasing in ε, as the true δ(ε) is: a long composition reads each ε on a composite
        tilted for it (or on its untilted side where that does not apply), whose error terms differ (1000
        DP-SGD steps, σ = 1, q = 0.01: 7.8e-44 at ε = 49, 1.2e-12 at 2473).

        Raises:
            InvalidParameter: ``epsilons`` is not a non-empty sequence, or ``epsilons[i]`` is negative, NaN or
                infinite (nothing is read).

        Examples:
            >>> rr = PrivacyLoss.randomized_response(1)
            >>> run = PrivacyLoss.compose([PrivacyLoss.laplace(1, 2).times(5), rr])
            >>> curve = run.deltas([0, 1, 2, 3])
            >>> curve == tuple(run.delta(e) for e in [0, 1, 2, 3]), [f"{float(d):.4f}" for d in curve]
            (True, ['0.5403', '0.3022', '0.1062', '0.0156'])
        """
        eps = epsilon_list(epsilons)
        plds = _reading_plds(self)
        try:
            return tuple(map(min, zip(*(p.deltas(eps) for p in plds), strict=True)))
        except InvalidParameter:  # a PLD refused somewhere: point by point, the least of those that answer
            return tuple(self.delta(e) for e in eps)

    def renyi(self, orders: Sequence[Number] | None = None) -> tuple[Fraction, ...] | None:
        """Upper bounds on the Rényi-DP curve ε(α) of the mechanism this pair names, at each order (default
        :data:`~dpcompose.accounting._filters.DEFAULT_ORDERS`, 1.25 … 256), or None where no theorem used
        here gives one (an (ε, δ) pair with δ > 0, sampling without replacement).

        The curves: Gaussian noise with a shift of at most Δ, ``αΔ²/2σ²`` (Bun–Steinke 2016 Prop. 1.6; on
        the integers Canonne–Kamath–Steinke 2020 Thm 4); Laplace, discrete Laplace, randomized response and
        pure (ε, 0) pairs are ε-DP, ``min(ε, αε²/2)`` (Bun–Steinke 2016 Prop. 1.4); Poisson subsampling of
        any of these, :func:`~dpcompose.accounting._rdp.subsampled_renyi` (removal as in Mironov–Talwar–
        Zhang 2019, addition by the lemma proved there; for the Gaussian and discrete Gaussian the removal
        sum alone, exact for the Gaussian, as their pairs are symmetric: the symmetric-base lemma there);
        compositions add (Mironov 2017 Prop. 1). The
        measurements that report these pairs add exactly the named noise to a value that moves by at most
        Δ, or report the (ε, 0) pair of an ε-DP guarantee, so the curve is the mechanism's own.

        Raises:
            InvalidParameter: an order is not above 1, repeats, or exceeds 4096 where a subsampled part
                needs it at an integer; or a part's curve leaves the double range (ε or Δ/σ beyond about
                1e150), named with the pair.

        Examples:
            >>> step = PrivacyLoss.subsampled(PrivacyLoss.gaussian(1, 1), 0.01)
            >>> [round(float(e), 6) for e in step.renyi([2, 10])]
            [0.000172, 0.03827]
            >>> PrivacyLoss.approx(1, 1e-6).renyi() is None
            True
        """
        alphas = DEFAULT_ORDERS if orders is None else check_orders(orders)
        try:
            return _curve(self, alphas)
        except InvalidParameter as exc:  # (a subsampled part's curve beyond the double range names base(j))
            raise InvalidParameter(f"{self!r}: no Rényi curve within the double range: {exc}") from None

    def order_sensitive(self) -> bool:
        """Whether this pair depends on which neighbour holds the record: a Poisson-subsampled pair (rate
        strictly between 0 and 1), or a composition holding one. Such pairs are composed order by order
        (every mechanism of a composition sees the same order: Zhu–Dong–Wang 2022 Thm 10 with Thm 11),
        which holds only where every mechanism reads the data through maps that keep D ⊆ D′ as
        T(D) ⊆ T(D′); a chain through a user-written transformation drops such a pair (see
        :func:`dpcompose.core._measurement._chain_tm`).

        Examples:
            >>> step = PrivacyLoss.subsampled(PrivacyLoss.gaussian(1, 1), 0.01)
            >>> step.order_sensitive(), PrivacyLoss.gaussian(1, 1).order_sensitive()
            (True, False)
        """
        if self.kind == "composed":
            return any(p.order_sensitive() for p, _ in self.parts)
        return self._sampling() == "poisson"

    def _sampling(self) -> str | None:
        """The sampling scheme of a subsampled pair at a rate strictly between 0 and 1 (which holds for one
        neighbouring relation only: :meth:`compose`), else None (rates 0 and 1 sample nothing)."""
        if self.kind != "subsampled" or self.params[0] in (0, 1):
            return None
        sampling = self.params[1]
        assert isinstance(sampling, str)
        return sampling

    def count(self) -> int:
        """How many mechanisms this describes (1 unless composed)."""
        if self.kind == "composed":
            return sum(n for _, n in self.parts)
        return 1

    def label(self) -> str:
        """A short text: ``discrete_laplace(Δ=1, t=10)``, ``1000 × …``, ``a + b``."""
        if self.kind == "composed":
            return " + ".join(f"{n} × {p.label()}" if n > 1 else p.label() for p, n in self.parts)
        if self.kind == "subsampled":
            return f"subsampled({self.parts[0][0].label()}, q={_show(self.params[0])}, {self.params[1]})"
        names = {
            "discrete_laplace": ("Δ", "t"),
            "laplace": ("Δ", "b"),
            "gaussian": ("Δ", "σ"),
            "discrete_gaussian": ("Δ", "σ"),
            "randomized_response": ("ε", "k"),
            "approx": ("ε", "δ"),
        }[self.kind]
        return f"{self.kind}({', '.join(f'{n}={_show(v)}' for n, v in zip(names, self.params, strict=True))})"

    def __repr__(self) -> str:
        return f"PrivacyLoss({self.label()})"


def flagged_pair(loss: PrivacyLoss) -> tuple[PrivacyLoss, Fraction] | None:
    """``(X, η)`` for a composition of one pair X (count 1, neither composed nor subsampled) with (0, η_i)
    pairs, η = Σ n_i·η_i < 1 (:meth:`PrivacyLoss.subsampled` proves that X ⊗ A(0, η) dominates it and how
    it subsamples); None for anything else (including η ≥ 1).

    Examples:
        >>> g = PrivacyLoss.gaussian(1, 1)
        >>> flagged_pair(PrivacyLoss.compose([g, PrivacyLoss.approx(0, Fraction(1, 10**9))]))
        (PrivacyLoss(gaussian(Δ=1, σ=1)), Fraction(1, 1000000000))
        >>> flagged_pair(PrivacyLoss.compose([g, g])) is None
        True
    """
    if loss.kind != "composed":
        return None
    flags = [(p, n) for p, n in loss.parts if p.kind == "approx" and p.params[0] == 0]
    rest = [(p, n) for p, n in loss.parts if not (p.kind == "approx" and p.params[0] == 0)]
    if len(rest) != 1 or rest[0][1] != 1 or rest[0][0].kind == "subsampled":
        return None
    eta = sum((Fraction(p.params[1]) * n for p, n in flags), Fraction(0))
    return (rest[0][0], eta) if eta < 1 else None


def _own_curve(loss: PrivacyLoss, alpha: Fraction) -> Fraction | None:
    """The Rényi curve at ``alpha`` of a pair that is neither composed nor subsampled (PrivacyLoss.renyi)."""
    a, b = (Fraction(v) for v in loss.params)
    if loss.kind in ("gaussian", "discrete_gaussian"):
        return alpha * (a / b) ** 2 / 2
    if loss.kind == "approx" and b != 0:
        return None
    eps = a / b if loss.kind in ("laplace", "discrete_laplace") else a
    return min(eps, alpha * eps * eps / 2)


@functools.lru_cache(maxsize=256)
def _curve(loss: PrivacyLoss, alphas: tuple[Fraction, ...]) -> tuple[Fraction, ...] | None:
    """PrivacyLoss.renyi at validated orders (cached: a training run asks once per step, for one pair)."""
    if loss.kind == "composed":
        curves = [(_curve(part, alphas), n) for part, n in loss.parts]
        if any(c is None for c, _ in curves):
            return None
        return tuple(add_renyi_curves(((c, n) for c, n in curves if c is not None), len(alphas)))
    if loss.kind == "subsampled":
        child, (q, sampling) = loss.parts[0][0], loss.params
        assert isinstance(q, Fraction)
        own = _curve(child, alphas)  # (the child's curve at the orders themselves: never exceeded)
        if own is None or (sampling != "poisson" and 0 < q < 1):
            return None  # (no Rényi theorem for sampling without replacement is used here)
        if q in (0, 1):
            return own if q == 1 else tuple(Fraction(0) for _ in alphas)
        # (Gaussian children: every pair is symmetric, so the removal sum alone bounds both directions)
        symmetric = child.kind in ("gaussian", "discrete_gaussian")
        sub = subsampled_renyi(
            lambda j: _checked(_own_curve(child, Fraction(j))), q, alphas, symmetric=symmetric
        )
        return tuple(min(a, b) for a, b in zip(sub, own, strict=True))
    values = [_own_curve(loss, a) for a in alphas]
    return None if any(c is None for c in values) else tuple(c for c in values if c is not None)


def _checked(value: Fraction | None) -> Fraction:
    assert value is not None  # (the caller checked that the child has a curve)
    return value


def _extent(part: PrivacyLoss, n: int, bits: int) -> float:
    """How far ``n`` compositions of ``part`` spread on the loss axis, for choosing the lattice: n times its
    span, or for a subsampled pair (whose losses concentrate near 0 however large the span) its span plus
    n·|mean| + 12·sd·√n of its PLD in either order (the Chernoff window of the composition is of that
    order). Only the work depends on this, never the certificate."""
    span = part.span() * n
    if part.kind != "subsampled" or n == 1 or not math.isfinite(span):
        return span
    pld = part.pld(bits)
    if n >= THIN_MIN_COUNT and pld.thin is not None:  # (the same spread: the PLD the composition reads)
        pld = pld.thin
    widest = 0.0
    for side in (pld.upper, pld.reverse.upper if pld.reverse is not None else pld.upper):
        m = side.masses
        tot = float(np.sum(m))
        if tot <= 0:
            continue
        x = (np.arange(m.size, dtype=np.float64) + side.offset) * pld.step
        mean = float(np.sum(m * x)) / tot
        var = float(np.sum(m * (x - mean) ** 2)) / tot
        widest = max(widest, n * abs(mean) + 12 * math.sqrt(n * var))
    return min(span, part.span() + widest)


def _float(x: Fraction) -> float:
    """x as a float, or +inf where it is too large for one."""
    return float(x) if x < 10**300 else math.inf


def _is_int(x: object) -> bool:
    return type(x) is int


def _is_positive(x: object) -> bool:
    return isinstance(x, Fraction) and x > 0


def _is_nonnegative(x: object) -> bool:
    return isinstance(x, Fraction) and x >= 0


def _positive(x: Number, name: str) -> Fraction:
    q = exact(x, name)
    if not q > 0:
        raise InvalidParameter(f"{name}={x!r} must be positive")
    return q


def _nonnegative(x: Number, name: str) -> Fraction:
    q = exact(x, name)
    if q < 0:
        raise InvalidParameter(f"{name}={x!r} must be non-negative")
    return q


_BUILDERS: dict[str, Callable[..., PLD]] = {
    "discrete_laplace": pld_discrete_laplace,
    "laplace": pld_laplace,
    "gaussian": pld_gaussian,
    "discrete_gaussian": pld_discrete_gaussian,
    "randomized_response": pld_randomized_response,
    "approx": pld_approx,
}


def _subsampled_pld(child: PrivacyLoss, rate: Fraction, sampling: Any, bits: int) -> PLD:
    """The PLD of ``child``'s pair subsampled at ``rate`` (each kind's subsampled constructor)."""
    if rate == 1:
        return _pld(child, bits)
    params: tuple[Any, ...] = child.params
    a, b = params
    noise = ("laplace", "gaussian", "discrete_laplace", "discrete_gaussian")
    if rate == 0 or (child.kind in noise and a == 0):
        return identity(bits, DEFAULT_TAIL, f"subsampled {child.label()}: identity")
    if child.kind == "discrete_laplace":
        return pld_subsampled_discrete_laplace(a, b, rate, sampling=sampling, step_bits=bits)
    if child.kind == "discrete_gaussian":
        return pld_subsampled_discrete_gaussian(a, b, rate, sampling=sampling, step_bits=bits)
    if child.kind == "laplace":
        return pld_subsampled_laplace(b, rate, a, sampling=sampling, step_bits=bits)
    if child.kind == "gaussian":
        sigma = min(Fraction(b), Fraction(a) * 10**4)  # a larger Δ/σ dominates (their PLD starts at 1e-4)
        return pld_subsampled_gaussian(sigma, rate, a, sampling=sampling, step_bits=bits)
    if child.kind == "randomized_response":
        return pld_subsampled_rr(a, b, rate, sampling, bits, DEFAULT_TAIL)
    assert child.kind == "approx"
    return pld_subsampled_approx(a, b, rate, sampling, bits, DEFAULT_TAIL)


@functools.lru_cache(maxsize=256)
def _pld(loss: PrivacyLoss, bits: int) -> PLD:
    p: tuple[Any, ...] = loss.params
    if loss.kind == "subsampled":
        return _subsampled_pld(loss.parts[0][0], p[0], p[1], bits)
    build = _BUILDERS.get(loss.kind)  # each refuses what it cannot certify (InvalidParameter, named)
    if build is not None:
        return build(p[0], p[1], step_bits=bits)
    groups = _rounded_groups(loss, up=True)  # many distinct pairs: rounded to fewer dominating ones
    if groups is not None:
        return compose_counted([(_pld(part, bits), n) for part, n in groups])
    plds = [_pld(part, bits).self_compose(n) for part, n in loss.parts]
    return compose_plds(plds) if len(plds) > 1 else plds[0]


GROUP_OVER = 256
"""A composition of more distinct pairs than this is composed from fewer: its Laplace and discrete Laplace
pairs are rounded to dominating ones for its upper readings, and to dominated ones for its lower readings
(:func:`_rounded_groups`), and the PLD refuses it (:class:`~dpcompose.errors.ResourceLimit`) if more than
:data:`MAX_DISTINCT` remain. A PLD composition costs one FFT of its window per distinct pair, and each pair's
PLD is built: 3,000 distinct Laplace steps took minutes, 20,000 did not finish."""

MAX_DISTINCT = 512
"""The most distinct pairs (after rounding) whose PLDs one composition builds and composes."""

_ROUNDABLE = ("laplace", "discrete_laplace")
_FINEST = 4096  # the finest rounding tried: each ε moves by less than 1/4096 of itself


def _rounded_groups(loss: PrivacyLoss, up: bool) -> tuple[tuple[PrivacyLoss, int], ...] | None:
    """The parts of a composition of more than :data:`GROUP_OVER` distinct pairs with each Laplace and
    discrete Laplace pair rounded (:func:`_rounding_steps`) ``up`` to a pair that dominates it, or down to
    one it dominates, equal pairs merged, the others unchanged; None where nothing is rounded (fewer
    distinct pairs, or none of these kinds).

    Soundness: the product of dominating pairs dominates the composition (Zhu–Dong–Wang 2022 Thm 10), and
    domination is transitive, so the PLD of the pairs rounded up gives upper bounds for the mechanisms; the
    mechanisms' pairs dominate the pairs rounded down, whose PLD so gives lower bounds.

    Raises:
        ResourceLimit: more than :data:`MAX_DISTINCT` distinct pairs remain (those of other kinds are not
            rounded).
    """
    if loss.kind != "composed" or len(loss.parts) <= GROUP_OVER:
        return None
    return _groups_of(loss.parts, up)


@functools.lru_cache(maxsize=64)
def _groups_of(
    parts: tuple[tuple[PrivacyLoss, int], ...], up: bool
) -> tuple[tuple[PrivacyLoss, int], ...] | None:
    """:func:`_rounded_groups` of these parts (cached: both ends of every reading ask)."""
    roundable = [(p, n) for p, n in parts if p.kind in _ROUNDABLE and p.params[0] != 0]
    if not roundable:
        others = len(parts)
        out: tuple[tuple[PrivacyLoss, int], ...] | None = None
    else:
        others = len(parts) - len(roundable)
        steps = _steps_of(parts)
        groups: Counter[PrivacyLoss] = Counter()
        for p, n in roundable:
            groups[rounded_pair(p, steps, up)] += n
        kept = [(p, n) for p, n in parts if not (p.kind in _ROUNDABLE and p.params[0] != 0)]
        out = (*kept, *sorted(groups.items(), key=lambda pc: (pc[0].kind, repr(pc[0].params))))
    distinct = len(parts) if out is None else len(out)
    if distinct > MAX_DISTINCT:
        how = (
            f"after rounding its Laplace ones to dominating ones ({others} of other kinds, which are not "
            "rounded)"
            if roundable
            else "(only Laplace and discrete Laplace pairs are rounded to fewer)"
        )
        raise ResourceLimit(
            f"this composition has {distinct} distinct pairs {how}, more than the {MAX_DISTINCT} whose PLDs "
            "one composition builds and composes (MAX_DISTINCT: one FFT of the whole window each): compose "
            "fewer distinct mechanisms, or account them by a theorem that reads their ε or ρ"
        )
    return out


@functools.lru_cache(maxsize=64)
def _steps_of(parts: tuple[tuple[PrivacyLoss, int], ...]) -> int:
    """:func:`_rounding_steps` of these parts' roundable pairs (the same for both directions: cached)."""
    roundable = [(p, n) for p, n in parts if p.kind in _ROUNDABLE and p.params[0] != 0]
    return _rounding_steps(roundable, max(1, GROUP_OVER - (len(parts) - len(roundable))))


def _rounding_steps(roundable: list[tuple[PrivacyLoss, int]], budget: int) -> int:
    """The number of grid steps s per doubling of ε: the largest of 4096, 3072, 2304, … (down to 1) for which
    the pairs rounded up (:func:`rounded_pair`) are at most ``budget`` distinct."""
    steps = _FINEST
    while steps > 1 and len({rounded_pair(p, steps, True) for p, _ in roundable}) > budget:
        steps = max(1, steps * 3 // 4)
    return steps


def rounded_pair(pair: PrivacyLoss, steps: int, up: bool) -> PrivacyLoss:
    """A Laplace or discrete Laplace ``pair`` (Δ > 0) whose ε = Δ/b is rounded ``up`` (or down) to the grid
    2^e·m/s, m = s … 2s, s = ``steps``, for ε in [2^e, 2^{e+1}): the rounded ε′ is within a factor 1 + 1/s of
    ε. A Laplace pair becomes Laplace(Δ = ε′, b = 1); a discrete Laplace pair (integer Δ, scale t) the one
    with the same Δ and scale t′ = Δ/ε′.

    Why ε′ ≥ ε gives a dominating pair (and ε′ ≤ ε a dominated one, by the same argument with the two pairs'
    roles swapped). Laplace noise of scale b is Laplace noise of any smaller scale b′ plus an independent W:
    the characteristic functions satisfy 1/(1 + b²ω²) = [1/(1 + b′²ω²)]·[(b′/b)² + (1 − (b′/b)²)/(1 + b²ω²)],
    and the second factor is that of W = 0 with probability (b′/b)², else W ~ Laplace(b). So the pair
    (Lap(0, b), Lap(Δ, b)) is the pair (Lap(0, b′), Lap(Δ, b′)) with the same W added to both sides: a
    post-processing, whose hockey-stick divergences are at most the original's at every order (the data
    processing inequality), i.e. the (Δ, b′) pair dominates the (Δ, b) pair (Zhu–Dong–Wang 2022 Def. 7).
    Its privacy loss distribution depends on Δ/b′ = ε′ alone (z ↦ z/b′ is a bijection), hence Laplace(ε′,
    1). On the integers, with r = e^{−1/t} and r′ = e^{−1/t′} ≤ r (t′ ≤ t), the discrete Laplace
    characteristic function φ_t(ω) = (1 − r)²/(1 − 2r·cos ω + r²) equals φ_{t′}(ω)·(a + b·φ_t(ω)) with
    a = (1 − r)²r′/((1 − r′)²r) ≥ 0 and b = (1 − r′/r)(1 − rr′)/(1 − r′)² ≥ 0 (expand 1 − 2r′c + r′² =
    (r′/r)(1 − 2rc + r²) + (1 − r′/r)(1 − rr′)), and a + b = 1 (ω = 0): W = 0 with probability a, else
    discrete Laplace of scale t, an integer, so the shift Δ is kept and the same argument applies.
    """
    delta, scale = (Fraction(v) for v in pair.params)
    eps = delta / scale
    e = eps.numerator.bit_length() - eps.denominator.bit_length() - 1  # 2^e < ε < 2^{e+2}
    if Fraction(2) ** (e + 1) <= eps:
        e += 1  # now 2^e ≤ ε < 2^{e+1}
    unit = Fraction(2) ** e / steps
    grid = eps / unit  # ≥ steps
    moved = (math.ceil(grid) if up else math.floor(grid)) * unit  # |moved − ε| < unit ≤ ε/steps; > 0
    if pair.kind == "laplace":
        return PrivacyLoss.laplace(moved, 1)
    return PrivacyLoss.discrete_laplace(int(delta), delta / moved)


_ALIGNABLE = ("laplace", "discrete_laplace", "randomized_response", "approx")  # their losses are atoms


@functools.lru_cache(maxsize=256)
def _pld_aligned(loss: PrivacyLoss, bits: int) -> PLD:
    """:meth:`PrivacyLoss.pld` with ``aligned=True``: one mechanism of the kinds ``_ALIGNABLE``, or n copies
    of one, on the lattice through its atoms where the composition's positions stay exact there
    (:func:`reach_fits`); otherwise the plain lattice (the same object as
    :func:`_pld`'s)."""
    part, n = loss.parts[0] if loss.kind == "composed" and len(loss.parts) == 1 else (loss, 1)
    if part.kind not in _ALIGNABLE:
        return _pld(loss, bits)
    grid = constructor_grid(True, bits, part.kind, Fraction(part.params[0]), Fraction(part.params[1]))
    if grid.mult == 1:  # a dyadic atom (or one below _MIN_ATOM): the plain lattice already
        return _pld(loss, bits)
    try:
        one = _BUILDERS[part.kind](part.params[0], part.params[1], step_bits=bits, aligned=True)
    except InvalidParameter:  # (its window a few points over the limit: the plain one may still fit)
        return _pld(loss, bits)
    if not reach_fits(grid, [(one, n)]):
        return _pld(loss, bits)
    return one.self_compose(n) if n > 1 else one


def _reading_plds(loss: PrivacyLoss) -> tuple[PLD, ...]:
    """The PLDs that :meth:`PrivacyLoss.epsilon_bounds`, ``epsilon`` and ``delta`` read: the plain lattice's,
    and the aligned lattice's where there is one (:func:`_pld_aligned`). Both are certified, so their
    intervals are intersected: neither lattice is the tighter at every δ (e.g. 5 × Laplace(1/3),
    whose atom 3 + 2e-16 lies just above a plain lattice point, reads [14.9999999678, 14.9999999680] plain
    and [14.9999999633, 15.0000047276] aligned at δ = 1e-9, but 15.0000610352 plain and 15.0000047623
    aligned at δ = 1e-14). Reading both costs about twice the time of one."""
    bits = loss.step_bits()
    plain = _pld(loss, bits)
    aligned = _pld_aligned(loss, bits)
    return (plain,) if aligned is plain else (plain, aligned)


_T = TypeVar("_T")


def _each(loss: PrivacyLoss, read: Callable[[PLD], _T]) -> list[_T]:
    """``read`` of every PLD of :func:`_reading_plds` that answers; the first refusal (InvalidParameter) if
    none does."""
    out: list[_T] = []
    first: InvalidParameter | None = None
    for p in _reading_plds(loss):
        try:
            out.append(read(p))
        except InvalidParameter as exc:
            first = first or exc
    if not out:
        assert first is not None
        raise first
    return out


def intersect(bounds: list[tuple[Fraction, Fraction]]) -> tuple[Fraction, Fraction]:
    """The intersection of certified intervals (each contains the truth, so their intersection does).

    Disjoint intervals would mean one of them is wrong, and nothing here says which: then the hull is
    returned, which contains the truth if either does (clipping to the least upper end could report a
    wrong upper end)."""
    lo, hi = max(b[0] for b in bounds), min(b[1] for b in bounds)
    if lo > hi:
        return min(b[0] for b in bounds), max(b[1] for b in bounds)
    return lo, hi


def delta_bounds(loss: PrivacyLoss, epsilon: Number) -> tuple[Fraction, Fraction]:
    """Certified ``(lower, upper)`` bounds on δ(ε), intersected over :func:`_reading_plds` (a composition
    whose pairs are rounded, :func:`_rounded_groups`: the upper end of the pairs rounded up, the lower end
    of those rounded down)."""
    below = _pld_below(loss)
    if below is not None:
        hi = min(_each(loss, lambda p: p.delta(epsilon)))
        return min(below.delta_bounds(epsilon)[0], hi), hi
    return intersect(_each(loss, lambda p: p.delta_bounds(epsilon)))


def _pld_below(loss: PrivacyLoss) -> PLD | None:
    """The PLD of a composition's pairs rounded down (:func:`_rounded_groups`), whose lower readings are lower
    bounds for the composition; None where its pairs are not rounded."""
    groups = _rounded_groups(loss, up=False)
    return None if groups is None else _composed_below(groups, loss.step_bits())


@functools.lru_cache(maxsize=8)
def _composed_below(groups: tuple[tuple[PrivacyLoss, int], ...], bits: int) -> PLD:
    """:func:`_pld_below`'s composition (cached)."""
    return compose_counted([(_pld(part, bits), n) for part, n in groups])


@functools.lru_cache(maxsize=1024)
def _epsilon_bounds(loss: PrivacyLoss, delta: Fraction) -> tuple[Fraction, Fraction]:
    below = _pld_below(loss)
    if below is not None:  # the upper end of the pairs rounded up, the lower end of those rounded down
        hi = _epsilon_upper(loss, delta)
        try:
            lo = below.epsilon_bounds(delta)[0]
        except InvalidParameter:  # (δ below what the rounded-down pairs certify: 0 is a lower bound)
            lo = Fraction(0)
        return min(lo, hi), hi
    if loss.kind == "approx" and delta >= Fraction(loss.params[1]):
        eps = loss.params[0]  # the pair is (ε, δ)-DP exactly: no lattice rounding needed above it
        assert isinstance(eps, Fraction)
        try:
            lo, hi = intersect(_each(loss, lambda p: p.epsilon_bounds(delta)))
        except InvalidParameter:  # δ at the pair's own δ, below the lattice's certified mass at +∞:
            return (eps if delta == loss.params[1] else Fraction(0)), eps  # ε(δ) is ε exactly there
        hi = min(hi, eps)
        return min(lo, hi), hi
    return intersect(_each(loss, lambda p: p.epsilon_bounds(delta)))


@functools.lru_cache(maxsize=1024)
def _epsilon_upper(loss: PrivacyLoss, delta: Fraction) -> Fraction:
    """The upper end of :func:`_epsilon_bounds` alone: the PLDs' lower sides are not built (privacy maps
    read only this end)."""
    if loss.kind == "approx" and delta >= Fraction(loss.params[1]):
        eps = loss.params[0]
        assert isinstance(eps, Fraction)
        try:
            return min(min(_each(loss, lambda p: p.epsilon(delta))), eps)
        except InvalidParameter:  # below the lattice's certified mass at +∞: ε exactly (see above)
            return eps
    return min(_each(loss, lambda p: p.epsilon(delta)))
