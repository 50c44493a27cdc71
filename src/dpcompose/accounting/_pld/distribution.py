"""Privacy loss distributions (PLDs) with certified upper and lower bounds on δ(ε) and ε(δ).

A mechanism M with a *dominating pair* (P, Q) of output distributions (Zhu–Dong–Wang 2022, Def. 7)
is (ε, δ(ε))-DP with δ(ε) = H_{e^ε}(P‖Q) = E_{o∼P}[(1 − e^{ε − L(o)})₊], where L(o) = ln P(o)/Q(o) is the
*privacy loss* (L = +∞ where Q(o) = 0; that mass counts fully). The distribution of L under P is the
PLD (Sommer–Meiser–Mohammadi 2019; Koskela–Jälkö–Honkela 2020). For a sequential (adaptive) composition
the product of the dominating pairs is a dominating pair of the composite (Zhu–Dong–Wang 2022,
Thm. 10), and the privacy loss of a product pair is the *sum* of independent losses, so the composite's
PLD is the convolution of the children's PLDs (Meiser–Mohammadi 2018; Koskela et al. 2020/2021).

Representation. Losses live on the lattice h·Z with h = 2**-m. Every :class:`PLD` carries two sides:

* ``upper``: entrywise upper bounds on the P-masses of a *pessimistic* lattice pair that dominates the
  mechanism's pair — the "connect the dots" discretisation of Doroshenko, Ghazi, Kamath, Kumar, Manurangsi
  2022 (each bucket (a, a+h] of losses is split between its two end points a, a+h so that both the P- and
  the Q-mass are kept; merging the two halves recovers the bucket, so the split pair dominates the original:
  its error in δ is second order in h). Loss mass below the lattice range is put on its lowest point
  (rounding a loss *up* only raises δ), mass above it on +∞.
* ``lower``: a *lumped pair*, which the mechanism's pair dominates. Each bucket of outputs gets a lattice
  label (the point nearest its merged loss ln(P/Q)), and all (composite) outputs with one label are merged
  into one output: a post-processing, so its δ is at most the mechanism's (data processing for the
  hockey-stick divergence). The side stores lower bounds on the label's P-mass and upper bounds on N(s) =
  e^{s}·Q(s); labels add under composition, so both vectors compose by convolution, and δ(ε) ≥ Σₛ(P(s) −
  e^{ε−s}·N(s))₊. Merging loses only where outputs of one label have losses on both sides of ε, so the
  error is second order in h (rounding every loss down, Meiser–Mohammadi 2018 / Koskela et al. 2021, is
  first order: k·h/2 after k compositions).

Each side also stores ``err``, a bound on the ℓ₁ distance between the stored float vector (with its mass at
+∞) and a vector with the property above. Composition convolves the float vectors (directly when one is
short, else by a power-of-two real FFT) and adds a rigorous bound on the floating-point error: for the
direct sum of non-negative products the classical bound γₙ‖x‖₁‖y‖₁, for the FFT the norm-wise bound of
Higham, *Accuracy and Stability of Numerical Algorithms* (2002), Thm. 24.2, ‖ŷ − y‖₂ ≤ log₂N·η/(1 −
log₂N·η)·‖y‖₂ with η = μ + γ₄(√2 + μ), carried through the pointwise product and the inverse transform
and turned into an ℓ₁ bound by Cauchy–Schwarz (taken with a safety factor of 8 on η; the error analysis
of FFT-based PLD composition is also discussed by Gopi–Lee–Wutschitz 2021, Sec. 5). Truncated tails are
never dropped from the upper side: the top tail moves to +∞, the bottom tail up to the lowest kept point.

Long compositions (:func:`compose_many`) take one real FFT per distinct PLD, raise it to its count and
multiply in the frequency domain, with one inverse FFT per side; the result lives on a window cut by
Chernoff bounds (the mass outside, at most ``tail``, goes to +∞ / the lowest point on the upper side and
into ``err`` on the lower side, since it wraps around). The float error is bounded componentwise for the
forward transforms and powers and normwise for the inverse (Higham 2002, Thm 24.2).

δ(ε) is evaluated at any real ε as Σⱼ mⱼ wⱼ + m_∞ + err with wⱼ = −expm1(ε − ℓⱼ) for ℓⱼ > ε on the upper
side, and as Σₛ(P(s) − e^{ε−s}N(s))₊ + m_∞ − errors on the lower side, every float rounded outward. ε(δ) is
the least float ε whose certified upper δ is at most the target, and the largest one found whose certified
lower δ exceeds it.

Assumptions of the certificate (the same ones the rest of :mod:`dpcompose.accounting` makes): IEEE double
arithmetic with round-to-nearest; numpy's elementwise ``exp``/``expm1`` within 2**-44 relative (2**9 units
of roundoff, 2**8 ulps at worst) and scipy's ``log_ndtr`` within 64 ulps·(1 + |value|) (both padded here far
beyond their documented accuracy); numpy's FFT at least as accurate as the radix-2 analysis above (safety
factor 8).

Examples:
    >>> from dpcompose.accounting import pld_laplace
    >>> pld = pld_laplace(1, 10).self_compose(100)
    >>> lo, hi = pld.epsilon_bounds(1e-6)
    >>> 4.68 < float(lo) <= float(hi) < 4.70
    True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from functools import partial

import numpy as np
import numpy.typing as npt

from dpcompose._validation import check_finite_nonnegative, check_positive_int
from dpcompose.accounting import _pld_memory as memory
from dpcompose.accounting._common import epsilon_list, probability
from dpcompose.accounting._exact import Number, exact
from dpcompose.accounting._pld.buckets import Buckets, bucket_of, build_sides, gaussian_buckets
from dpcompose.accounting._pld.floats import (
    few_ulps_up,
    libm_down,
    libm_err,
    libm_up,
    rounding_err,
    roundings_up,
    sum_bound,
)
from dpcompose.accounting._pld.fourier import FOURIER_MIN, compose_many
from dpcompose.accounting._pld.lattice import ALIGN_HINT, DEFAULT_TAIL, EXACT, Grid, check_points
from dpcompose.accounting._pld.lazy import Sides
from dpcompose.accounting._pld.orders import Orders, screen_sides
from dpcompose.accounting._pld.reading import (
    FromConstructor,
    GaussianReading,
    OrderReading,
    PairReading,
    SidesReading,
    TiltedReading,
)
from dpcompose.accounting._pld.recipe import Recipe
from dpcompose.accounting._pld.side import SCREEN_BITS, Side, compose_sides, least_search
from dpcompose.errors import InvalidParameter, UnsupportedComposition

FloatArray = npt.NDArray[np.float64]


MIXED_SAMPLING = (
    "these pairs mix Poisson sampling (one record added or removed) with sampling without replacement (one "
    "record substituted): neither pair holds under the other neighbouring relation, so no theorem composes "
    "them; use one sampling scheme for the whole run"
)
"""The refusal of a composition that mixes the two subsampling schemes (:func:`compose_plds`,
:meth:`~dpcompose.accounting.PrivacyLoss.compose`)."""


THIN_MIN_COUNT = 256
"""A PLD composed at least this many times is read through its thin version (:attr:`PLD.thin`): there the
certified interval of the DP-SGD runs moves by a few percent of its width or less, and a step's PLD builds
four times faster."""


MAX_COUNT = 1 << 44
"""The most copies of one PLD that :meth:`PLD.self_compose` (and :func:`compose_plds`) compose: every stored
mass carries a relative rounding pad of up to 2**-44, and over 2**44 copies the pads alone compound to
(1 + 2**-44)**k ≥ e times the mass, so nothing useful could be certified; the composite's windows reach
2**26 points far earlier for all but the narrowest PLDs."""


# ---------------------------------------------------------------------------------------------------------
# The PLD
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class PLD:
    """A privacy loss distribution on the lattice ``step·Z`` with a certified upper and lower side.

    Build one with :func:`pld_laplace`, :func:`pld_discrete_laplace`, :func:`pld_gaussian`,
    :func:`pld_discrete_gaussian`, :func:`pld_randomized_response` or :func:`pld_approx`; compose with
    :meth:`compose`, :meth:`self_compose` or :func:`compose_plds`; read δ(ε) and ε(δ) with
    :meth:`delta_bounds` / :meth:`epsilon_bounds` (or the upper ends :meth:`delta` / :meth:`epsilon`).
    The theory and the certificate are described in the module docstring.

    Attributes:
        step_bits: the lattice width is ``step_mult·2**-step_bits``.
        reading: how it is read, its representation variant (:mod:`~dpcompose.accounting._pld.reading`:
            ``SidesReading``, ``GaussianReading``, ``TiltedReading``, ``PairReading``, or a constructor's
            ``FromConstructor``), which holds its sides (:class:`~dpcompose.accounting._pld.lazy.Sides`,
            built on first use).
        tail: the tail mass cut after each composition (see :data:`DEFAULT_TAIL`).
        description: what was composed (for display).

    Source: Koskela–Jälkö–Honkela 2020; Koskela–Jälkö–Prediger–Honkela 2021; Meiser–Mohammadi 2018;
    Doroshenko–Ghazi–Kamath–Kumar–Manurangsi 2022 (connect the dots); Zhu–Dong–Wang 2022 Thm 10.

    Examples:
        >>> from dpcompose.accounting import pld_randomized_response
        >>> pld = pld_randomized_response(1.0).self_compose(3)
        >>> lo, hi = pld.delta_bounds(1.0)
        >>> lo <= hi
        True
    """

    step_bits: int
    reading: OrderReading | PairReading[PLD] | FromConstructor[PLD]
    tail: float = DEFAULT_TAIL
    description: str = field(default="")
    sampling: str | None = field(default=None, repr=False)
    """Set for subsampled mechanisms (and compositions with them) to their scheme, ``"poisson"`` (a record
    added or removed) or ``"without_replacement"`` (a record substituted): the pair holds for that
    neighbouring relation only, and :func:`compose_plds` refuses to mix the two."""
    step_mult: int = 1
    """The lattice width's odd multiplier (1 for the plain lattice ``2**-step_bits``, another one for a
    lattice aligned with the mechanism's atoms, ``aligned=True`` in the constructors)."""

    @property
    def gaussian(self) -> tuple[float, float, float] | None:
        """Set only for Gaussian mechanisms and their compositions, to (μ_hi, width, μ_lo) with μ_lo ≤ ‖Δ/σ‖₂
        ≤ μ_hi; used to compose Gaussians exactly (see :func:`compose_plds`) and to read δ and ε from the
        closed form."""
        return self.reading.gaussian

    @property
    def reverse(self) -> PLD | None:
        """Set only for an asymmetric mechanism (a subsampled one, say), to the PLD of the other order of
        neighbours. It is composed with the same order of the other PLDs, and δ(ε) is the larger of the
        two."""
        return self.reading.reverse

    @property
    def recipe(self) -> Recipe | None:
        """What a long composition was built from, for the tilted reading (None for a short one)."""
        return self.reading.recipe

    @property
    def thin(self) -> PLD | None:
        """The thin twin read in this PLD's place by compositions holding at least ``THIN_MIN_COUNT`` copies
        of it (None where there is none): a PLD of the same mechanism on the same lattice whose tails are cut
        into wide buckets (cheaper to build, a little looser where a read depends on one step's far tail:
        the subsampled Gaussian's, ``thin_cuts``)."""
        return self.reading.thin

    @property
    def upper_if_built(self) -> Side | None:
        """The upper side if it is built already, else None (reading :attr:`upper` builds it)."""
        return self.reading.sides.upper_if_built

    @property
    def lower_if_built(self) -> Side | None:
        """The lower side if it is built already, else None (reading :attr:`lower` builds it)."""
        return self.reading.sides.lower_if_built

    def orders(self) -> Orders[PLD]:
        """This asymmetric PLD's two orders, for the two-order readings (``both_ways``)."""
        assert self.reverse is not None
        return Orders(one_way(self), self.reverse, lambda p: p.recipe, _screen_twin)

    @property
    def upper(self) -> Side:
        """The pessimistic side (upper bounds)."""
        return self.reading.sides.upper

    @property
    def lower(self) -> Side:
        """The optimistic side (lower bounds); built alone where it can be (the upper side is not needed)."""
        return self.reading.sides.lower

    @property
    def grid(self) -> Grid:
        """The lattice."""
        return Grid(self.step_bits, self.step_mult)

    @property
    def step(self) -> float:
        """The lattice width h = step_mult·2**-step_bits (an exact float)."""
        return math.ldexp(float(self.step_mult), -self.step_bits)

    def compose(self, other: PLD) -> PLD:
        """The PLD of the composition of the two mechanisms (convolution; Koskela et al. 2020, Sec. 3).

        Raises:
            InvalidParameter: ``other`` is not a PLD or has a different lattice.

        Examples:
            >>> from dpcompose.accounting import pld_laplace
            >>> a = pld_laplace(1, 5)
            >>> a.compose(a).epsilon(1e-3) <= 2 * a.epsilon(0)
            True
        """
        if not isinstance(other, PLD):
            raise InvalidParameter(f"other={other!r} must be a PLD")
        if other.grid != self.grid:
            raise InvalidParameter(
                f"other's lattice h={other.grid.describe()} differs from h={self.grid.describe()}: "
                f"build both PLDs on the same lattice{ALIGN_HINT}"
            )
        if other is self:
            return compose_groups([(self, 2)], f"2 × {self.description}")
        return compose_groups([(self, 1), (other, 1)], f"{self.description} ∘ {other.description}")

    def self_compose(self, count: int) -> PLD:
        """The PLD of ``count`` compositions of this mechanism (repeated squaring).

        Raises:
            InvalidParameter: ``count`` is not a positive integer, or exceeds :data:`MAX_COUNT` (2**44).

        Examples:
            >>> from dpcompose.accounting import pld_laplace
            >>> float(pld_laplace(1, 1).self_compose(2).epsilon(1e-9)) <= 2.0001
            True
        """
        k = check_positive_int(count, "count")
        return compose_groups([(self, k)], f"{k} × {self.description}")

    # -- reading the curve -------------------------------------------------------------------------------

    def delta_real(self, side: Side, eps: float, upper: bool) -> float:
        """Certified δ of one side at the float ε (any sign): Σ_{ℓⱼ>ε} mⱼ(1 − e^{ε−ℓⱼ}) + m_∞ ± err."""
        m = side.masses
        scaled = self.grid.steps(eps)  # ε in lattice steps (floor exact): past every atom once that large
        top = side.offset + m.size
        start = m.size if scaled >= top else max(0, math.floor(scaled) + 1 - side.offset)  # first ℓⱼ > ε
        if start < m.size:
            seg = m[start:]
            pos = (np.arange(start, m.size, dtype=np.float64) + side.offset) * self.step  # exact
            # ℓ − ε is rounded (relative u); since a·e^{−a} ≤ 1 − e^{−a}, w's relative error from it is ≤ u
            w = -np.expm1(-(pos - eps))
            w = libm_up(w) if upper else libm_down(w)
            w = np.minimum(w, 1.0)
            t = seg * w
            s, e = sum_bound(t)
            e += rounding_err(2, float(np.sum(np.abs(t))))
        else:
            s, e = 0.0, 0.0
        if upper:
            rnd = rounding_err(4, abs(s) + abs(side.inf) + side.err)
            return few_ulps_up(s + e + side.inf + side.err + rnd)
        v = s - e - side.err + side.inf - rounding_err(4, abs(s) + abs(side.inf) + side.err)
        return max(0.0, math.nextafter(v, -math.inf))

    def _delta_at(self, side: Side, index: int, upper: bool) -> float:
        """Certified δ at the lattice point ε = index·h."""
        return self.delta_real(side, index * self.step, upper)

    def _curve(self, side: Side, upper: bool) -> FloatArray:
        """Approximate (float, uncertified) δ of a side at ε = (offset − 1 + i)·h, i = 0 … n; used only to
        locate answers, which are then certified with :meth:`delta_real`."""
        key = id(side)
        cached = self.reading.sides.memo.get(key)
        if cached is not None and cached[0] is side:
            return cached[1]
        m = side.masses
        h = self.step
        n = m.size
        if n * h <= 600:  # one block: Σ_{j≥i} mⱼe^{−(j−i+1)h} = e^{(i−1)h}·Σ_{j≥i} mⱼe^{−jh}, no overflow
            k = np.arange(n, dtype=np.float64) * h
            s2 = np.cumsum((m * np.exp(-k))[::-1])[::-1]
            curve = np.empty(n + 1)
            curve[:-1] = np.cumsum(m[::-1])[::-1]
            curve[:-1] -= np.exp(k - h) * s2
            curve[-1] = 0.0
            curve += side.inf + (side.err if upper else -side.err)
            self.reading.sides.memo[key] = (side, curve)
            return curve
        r_suffix = np.empty(n)  # Σ_{j≥i} mⱼe^{−(j−i+1)h}, in blocks spanning ≤ 400 loss units
        blk = max(1, int(400 / h))
        carry = 0.0
        for end in range(n, 0, -blk):
            start = max(0, end - blk)
            seg = m[start:end]
            k = np.arange(seg.size, dtype=np.float64) * h
            cs = np.cumsum((seg * np.exp(-(k + h)))[::-1])[::-1]
            r_suffix[start:end] = np.exp(k) * cs + carry * np.exp(-(seg.size - k / h) * h)
            carry = float(r_suffix[start])
        s_suffix = np.cumsum(m[::-1])[::-1]  # Σ_{j≥i} mⱼ
        curve = np.empty(m.size + 1)
        curve[:-1] = s_suffix - r_suffix
        curve[-1] = 0.0
        curve += side.inf + (side.err if upper else -side.err)
        self.reading.sides.memo[key] = (side, curve)
        return curve

    def least_up(self, target: float) -> float | None:
        """The least float ε ≥ 0 (to ~1e-12) whose certified upper δ is at most ``target``."""
        side = self.upper

        def guess() -> int:  # the first lattice index where the (uncertified) curve is at most the target
            curve = self._curve(side, True)
            ok = np.flatnonzero(curve <= target)
            return side.offset - 1 + (int(ok[0]) if ok.size else curve.size - 1)

        top = side.offset + side.masses.size  # at and above, only inf and err remain
        return least_search(target, lambda e: self.delta_real(side, e, True), top, guess, self.step)

    def delta_lumped(self, eps: float) -> float | None:
        """A certified lower bound on δ(ε) from the *lumped pair* of the lower side, or None without one.

        Every composite outcome is labelled by the sum s of its parts' lattice labels (each bucket's label is
        the lattice point nearest its merged loss, see ``build_pld``), and all outcomes with one label are
        merged into one: a post-processing, so the merged pair's δ is at most the mechanism's (Dwork–Roth
        2014, Prop. 2.1, in the form of dominating pairs, Zhu–Dong–Wang 2022, Def. 7), and δ of the
        merged pair is Σₛ(P(s) − e^ε·Q(s))₊ (Sommer–Meiser–Mohammadi 2019, Thm 1, for a finite pair). Labels
        add under composition, so P(s) and N(s) = e^{s}·Q(s) of the composite are convolutions of the parts'
        vectors (P lower bounds and N upper bounds entrywise give a lower bound, as (p − e^{ε−s}n)₊ rises
        with p and falls with n; dropping labels restricts to fewer outcomes, which only lowers the sum).
        Only labels with s ≥ s_i are summed, for the i that gives the most once the effect of N's ℓ₁ error,
        e^{ε−s_i}·err, is taken off (every such set gives a valid bound; :meth:`_lumped_start` gives the
        first candidate). Unlike rounding each loss down, merging loses only where outcomes of one label
        straddle ε: the error is second order in the lattice step.
        """
        side = self.lower
        if side.nq is None:
            return None
        m, nq = side.masses, side.nq
        h = self.step
        start = self._lumped_start(eps)
        total, e_sum, n_term = 0.0, 0.0, 0.0
        if start < m.size:
            pos = (np.arange(start, m.size, dtype=np.float64) + side.offset) * h  # exact
            with np.errstate(under="ignore", over="ignore"):
                w = roundings_up(libm_up(np.exp(eps - pos)), 4)  # ≥ e^{ε−s} (ε − s rounded)
            wn = w * nq[start:]
            t = m[start:] - wn
            t = t - rounding_err(4, m[start:] + wn)  # the product and difference, rounded down
            t = np.maximum(t, 0.0)
            _, e_sum = sum_bound(t)  # (bounds the rounding of every suffix sum below too)
            # Sum over the labels s ≥ s_i for the best i: |Σ(p − w·n)₊ − Σ(p̂ − w·n̂)₊| ≤ ‖p − p̂‖₁ +
            # w_i·‖n − n̂‖₁ on that set, so a later start trades the terms it drops for a smaller weight.
            suffix = np.cumsum(t[::-1])[::-1]
            with np.errstate(over="ignore", invalid="ignore"):  # (an infinite N error: no start is usable;
                value = suffix - w * (1 + 1e-12) * side.nq_err  # 0·∞ where a weight underflowed counts so)
            value = np.where(np.isnan(value), -np.inf, value)
            i = int(np.argmax(value))
            if value[i] > 0:
                total, n_term = float(suffix[i]), float(w[i]) * (1 + 1e-12) * side.nq_err
        v = total - e_sum - side.err - n_term + side.inf
        v -= rounding_err(4, abs(total) + abs(side.inf) + side.err + n_term)
        if not math.isfinite(v):
            return 0.0
        return max(0.0, math.nextafter(v, -math.inf))

    def _lumped_drift(self) -> float:
        """g = ln(Σn/Σp) of the lower side (uncertified, only a parameter): lumps with label s have n ≈ p·e^g,
        so their terms of :meth:`delta_lumped` are positive from about s = ε + g on (labels drift from the
        merged losses when rounding has a bias, by up to h/2 per composed mechanism)."""
        side = self.lower
        key = -id(side)
        cached = self.reading.sides.memo.get(key)
        if cached is None or cached[0] is not side:
            assert side.nq is not None
            sp, sn = float(np.sum(side.masses)), float(np.sum(side.nq))
            g = math.log(sn / sp) if sp > 0 and sn > 0 else 0.0
            cached = self.reading.sides.memo[key] = (side, np.array([g]))
        return float(cached[1][0])

    def _lumped_start(self, eps: float) -> int:
        """The index of the first label summed by :meth:`delta_lumped` at ε: labels s ≥ ε + g − 2 (so the
        weights e^{ε−s} stay ≤ e^{2−g}, which bounds the effect of N's ℓ₁ error)."""
        side = self.lower
        lo_label = eps + self._lumped_drift() - 2.0
        x = lo_label / self.step - side.offset  # (any start gives a valid bound)
        if not x < side.masses.size:
            return side.masses.size
        return max(0, math.ceil(x))

    def _lumped_approx(self) -> Callable[[float], float] | None:
        """A fast float (uncertified) evaluation of :meth:`delta_lumped`, used only to locate ε; labels
        s ≥ ε + g + 2 (where p > e^{ε−s}n: n ≈ p·e^g, see :meth:`_lumped_drift`) are read from suffix sums of
        p and n·e^{−s}. None when the labels span too much for e^{−s} to stay in floats."""
        side = self.lower
        if side.nq is None:
            return None
        m, nq = side.masses, side.nq
        h = self.step
        s0 = side.offset * h
        span = m.size * h
        if span > 600 or h > 0.5:
            return None
        rel = np.arange(m.size, dtype=np.float64) * h  # s − s0
        sp = np.append(np.cumsum(m[::-1])[::-1], 0.0)
        sn = np.append(np.cumsum((nq * np.exp(-rel))[::-1])[::-1], 0.0)
        one = 1 / h

        g = self._lumped_drift()

        def approx(eps: float) -> float:
            i0 = self._lumped_start(eps)
            x = (eps + g + 2.0) * one - side.offset  # past ε + g + 2 every term is positive
            i1 = min(max(i0, math.ceil(x)), m.size)
            mid = 0.0
            if i1 > i0:
                # (capped at e^709, where a float ends: this probe only guides the search)
                w = np.exp(np.minimum(eps - s0 - rel[i0:i1], 709.0))
                mid = float(np.sum(np.maximum(m[i0:i1] - w * nq[i0:i1], 0.0)))
            # the certificate's error terms, as :meth:`delta_lumped` subtracts them
            # (:meth:`delta_lumped` picks its start; near s = ε + g its N-error weight is about e^{−g})
            penalty = side.err + math.exp(min(-g, 700.0)) * side.nq_err
            tail = float(sn[i1])
            # past e^709 the float overflows: the probe then reads "below any target" (only where it looks)
            weighted = tail and (math.inf if eps - s0 > 709.0 else math.exp(eps - s0) * tail)
            return mid + float(sp[i1]) - weighted + side.inf - penalty

        return approx

    def lumped_epsilon(self, target: float, stop: float) -> float | None:
        """The greatest float ε in [0, stop] (to ~1e-12 relative) found whose certified lumped lower δ exceeds
        ``target``; None if even ε = 0 does not. The float evaluation locates it by bisection; the answer is
        then certified, and moved down until it is."""
        at0 = self.delta_lumped(0.0)
        if at0 is None or not at0 > target:
            return None
        approx = self._lumped_approx()
        probe = approx if approx is not None else (lambda e: self.delta_lumped(e) or 0.0)
        lo, hi = 0.0, stop
        if probe(hi) > target:
            lo = hi
        while hi - lo > max(abs(lo), 1.0) * 2.0**-42:
            mid = (lo + hi) / 2
            if probe(mid) > target:
                lo = mid
            else:
                hi = mid
        # Certify; where the certified value falls short, step down by the shortfall over the float slope
        # (then geometrically), and bisect back over the last step.
        nudge = max(lo, 1.0) * 2.0**-44
        failed = lo
        value = self.delta_lumped(lo) or 0.0
        first = True
        while lo > 0 and not value > target:
            failed = lo
            step = nudge
            if first:
                d = max(lo, 1.0) * 1e-6
                slope = (probe(max(lo - d, 0.0)) - probe(lo)) / d
                if slope > 0 and math.isfinite(slope):
                    step = max(step, (target - value) / slope * 1.01)
                first = False
            lo = max(0.0, lo - step)
            nudge = max(nudge, step) * 4
            value = self.delta_lumped(lo) or 0.0
        for _ in range(3 if failed > lo else 0):
            mid = (lo + failed) / 2
            if (self.delta_lumped(mid) or 0.0) > target:
                lo = mid
            else:
                failed = mid
        return lo

    def delta_bounds(self, epsilon: Number) -> tuple[Fraction, Fraction]:
        """``(lower, upper)``: certified bounds on δ(ε) of the mechanism this PLD describes.

        Both ends are read at ε itself. The upper end is δ of the connect-the-dots pair, which dominates the
        mechanism's (Doroshenko et al. 2022), δ(ε) = E[(1 − e^{ε−L})₊] (Sommer–Meiser–Mohammadi 2019, Thm 1);
        the lower end is δ of the lumped pair, a post-processing of the mechanism's
        (:meth:`delta_lumped`).

        Raises:
            InvalidParameter: ε is negative, NaN or infinite.

        Examples:
            >>> from dpcompose.accounting import pld_laplace
            >>> lo, hi = pld_laplace(1, 1).delta_bounds(2)
            >>> (lo, hi)
            (Fraction(0, 1), Fraction(0, 1))
        """
        eps = exact(check_finite_nonnegative(epsilon, "epsilon"), "epsilon")
        with memory.refuse_out_of_memory(_READING, memory.SMALLER_BITS):
            return self.reading.delta_bounds(self, eps)

    def delta_float(self, e_dn: float) -> float:
        """The upper end of :meth:`delta_bounds` of this order at the float ε (not a Gaussian one): for a long
        composition, the composite of ε's tilt (:meth:`Recipe.delta_up`), and the untilted side too where that
        is poor or none applies. A function of the composition and ε alone: not of earlier readings, nor of
        which sides were built (:meth:`Recipe.least_up` answers only where this reads at most δ)."""
        return self.reading.delta_float(self, e_dn)

    def delta(self, epsilon: Number) -> Fraction:
        """The certified upper bound on δ(ε) (see :meth:`delta_bounds`).

        Examples:
            >>> from dpcompose.accounting import pld_randomized_response
            >>> pld_randomized_response(1.0).delta(0.5) > 0
            True
        """
        eps = exact(check_finite_nonnegative(epsilon, "epsilon"), "epsilon")
        with memory.refuse_out_of_memory(_READING, memory.SMALLER_BITS):
            return self.reading.delta_up(self, eps)

    def deltas(self, epsilons: Sequence[Number]) -> tuple[Fraction, ...]:
        """:meth:`delta` at each ε of ``epsilons``, the same values, read as one curve: each distinct ε once,
        in increasing order (a long composition reads the ε that share a tilted composite one after the
        other), and an asymmetric pair reads each order's curve at once (``orders.screened_many``). The
        bounds are :meth:`delta`'s (Sommer–Meiser–Mohammadi 2019, Thm 1, on the pessimistic pair of
        Doroshenko et al. 2022; Zhu–Dong–Wang 2022, Thm 10).

        Raises:
            InvalidParameter: ``epsilons`` is not a non-empty sequence, or an ε is negative, NaN or
                infinite (``epsilons[i]`` named; nothing is read).

        Examples:
            >>> from dpcompose.accounting import pld_laplace
            >>> pld = pld_laplace(1, 10).self_compose(100)
            >>> pld.deltas([1, 2, 1]) == (pld.delta(1), pld.delta(2), pld.delta(1))
            True
        """
        eps = epsilon_list(epsilons)
        points = sorted(set(eps))
        with memory.refuse_out_of_memory(_READING, memory.SMALLER_BITS):
            read = dict(zip(points, self.reading.deltas_up(self, points), strict=True))
        return tuple(read[e] for e in eps)

    def epsilon_bounds(self, delta: Number) -> tuple[Fraction, Fraction]:
        """``(lower, upper)``: certified bounds on the least ε ≥ 0 with δ(ε) ≤ ``delta``.

        The upper end is the least float ε (found on the lattice, then solved exactly between two lattice
        points, where δ(ε) = A − e^ε·B, and checked) whose certified upper δ is at most ``delta``; the lower
        end is the largest ε found whose certified lower δ (the lumped pair's, as in :meth:`delta_bounds`) is
        still above ``delta`` (the true ε is above it).

        Raises:
            InvalidParameter: ``delta`` is outside [0, 1), or no finite ε reaches it (the mass at +∞, plus
                the certificate's error, exceeds it).

        Examples:
            >>> from dpcompose.accounting import pld_approx
            >>> lo, hi = pld_approx(1.0, 1e-3).epsilon_bounds(2e-3)
            >>> 0.99 < float(lo) <= float(hi) < 1.0
            True
        """
        dq = probability(delta, "delta")
        with memory.refuse_out_of_memory(_READING, memory.SMALLER_BITS):
            return self.reading.epsilon_bounds(self, dq, delta)

    def epsilon_up(self, dq: Fraction, shown: object) -> Fraction:
        """The upper end of :meth:`epsilon_bounds` alone (the lower side is not built)."""
        return self.reading.epsilon_up(self, dq, shown)

    def epsilon(self, delta: Number) -> Fraction:
        """The certified upper bound on ε(δ) (see :meth:`epsilon_bounds`; only the upper side is read).

        Examples:
            >>> from dpcompose.accounting import pld_laplace
            >>> 0.1 <= float(pld_laplace(1, 10).epsilon(0)) < 0.1001
            True
        """
        dq = probability(delta, "delta")
        with memory.refuse_out_of_memory(_READING, memory.SMALLER_BITS):
            return self.epsilon_up(dq, delta)

    def __repr__(self) -> str:
        """What the PLD is, from what it holds already: building a side (a long composition's, or the
        lattice of a Gaussian composition past μ = 30) can take seconds or be refused, so repr builds none."""
        side = self.upper_if_built
        if side is not None:
            held = f"{side.masses.size} points, inf≤{side.inf + side.err:.3g}"
        elif self.gaussian is not None:
            held = f"Gaussian μ≤{self.gaussian[0]:.6g}, read in closed form"
        else:
            held = "sides not built"
        return f"PLD({self.description or '?'}, h={self.grid.describe()}, {held})"


def compose_groups(groups: Sequence[tuple[PLD, int]], description: str, long: bool | None = None) -> PLD:
    """The composition of ``n`` copies of each PLD (same lattice, checked by the callers).

    Gaussians compose exactly to a Gaussian: the product of the pairs (N(0, 1), N(μᵢ, 1)) is, up to a
    rotation, the pair (N(0, 1), N(‖μ‖₂, 1)) (Dong–Roth–Su 2019, Cor. 3.3), so a composition of Gaussian
    PLDs is rebuilt directly from ‖μ‖₂ (rounded up: a larger μ dominates) and read from the closed form at
    any μ. Otherwise: one FFT per distinct PLD when the result is long (:func:`compose_many`), else
    repeated squaring by direct/FFT convolution. ``long``, where given, says which without reading the PLDs'
    sizes (the reverse order of an asymmetric composition follows its first order: so composing does not
    build the reverse order's sides, which the reading builds where it needs them, in a thread of its own).

    Raises:
        InvalidParameter: a count exceeds :data:`MAX_COUNT`.
    """
    for p, n in groups:
        if n > MAX_COUNT:
            raise InvalidParameter(
                f"count={n} copies of {p.description or 'this PLD'} exceed {MAX_COUNT} (2**44), the most "
                "copies of one PLD composed here: compose fewer (or account the run with zCDP or Rényi DP)"
            )
    schemes = {p.sampling for p, _ in groups} - {None}
    if len(schemes) > 1:
        raise UnsupportedComposition(MIXED_SAMPLING)
    # a mechanism composed at least THIN_MIN_COUNT times: its far tail weighs little (by each one's own
    # count, not the total, so that one dominant step among 255 negligible ones is not read through its
    # thin twin, which moves ε(1e-10) up 15%)
    groups = [(p.thin if p.thin is not None and n >= THIN_MIN_COUNT else p, n) for p, n in groups]
    sampling = next(iter(schemes), None)
    result = _compose_groups_one_scheme(groups, description, long)
    return result if sampling is None else _with_sampling(result, sampling)


def _with_sampling(p: PLD, sampling: str) -> PLD:
    """``p`` (both its orders) marked with the subsampling scheme ``sampling``."""
    rev = p.reverse
    if p.sampling == sampling and (rev is None or rev.sampling == sampling):
        return p
    if rev is None:
        return replace(p, sampling=sampling)
    return pair_of(_with_sampling(one_way(p), sampling), _with_sampling(rev, sampling))


def _compose_groups_one_scheme(
    groups: Sequence[tuple[PLD, int]], description: str, long: bool | None = None
) -> PLD:
    """:func:`compose_groups` once the sampling schemes are checked."""
    if any(p.reverse is not None for p, _ in groups):
        fwd = compose_groups([(one_way(p), n) for p, n in groups], description, long)
        rev = compose_groups(
            [(one_way(p.reverse or p), n) for p, n in groups],
            description + " (reverse)",
            fwd.recipe is not None,
        )
        return pair_of(fwd, rev)
    tail = min(p.tail for p, _ in groups)
    grid = groups[0][0].grid
    bits = grid.bits
    gs = [(p.gaussian, n) for p, n in groups if p.gaussian is not None]
    if 0 < len(gs) < len(groups) and (len(gs) > 1 or gs[0][1] > 1):
        # compose the Gaussian ones exactly first (composition is associative and commutative)
        g_part = compose_groups([(p, n) for p, n in groups if p.gaussian is not None], "Gaussians")
        rest = [(p, n) for p, n in groups if p.gaussian is None]
        return compose_groups([(g_part, 1), *rest], description, long)
    if len(gs) == len(groups):
        # fsum is exactly rounded; the pads cover the products and the square root
        sq = math.fsum(n * g[0] * g[0] for g, n in gs) * (1 + 2.0**-50)
        mu_c = math.sqrt(sq) * (1 + 2.0**-50)
        mu_lo = math.sqrt(math.fsum(n * g[2] * g[2] for g, n in gs) * (1 - 2.0**-50)) * (1 - 2.0**-50)
        width = max(g[1] for g, _ in gs)
        if mu_c <= 30:
            return gaussian_pld(bits, mu_c, width, tail, description, mu_lo)
        # δ and ε from the closed form at any μ; the lattice of one Gaussian of μ_c would span μ_c²/2 ± 14μ_c
        # (past 2**26 points), so the sides, built only for a composition with a non-Gaussian, are the
        # children's composition
        make = partial(sides_of, partial(_compose_on_lattice, groups, description, long))
        return PLD(
            bits,
            GaussianReading(Sides(make=make), (mu_c, width, mu_lo)),
            tail,
            description,
            step_mult=grid.mult,
        )
    return _compose_on_lattice(groups, description, long)


def _compose_on_lattice(groups: Sequence[tuple[PLD, int]], description: str, long: bool | None) -> PLD:
    """:func:`compose_groups` on the lattice: one FFT per distinct PLD where the result is long (a
    composition read through its tilted recipe), else repeated squaring by direct/FFT convolution."""
    tail = min(p.tail for p, _ in groups)
    grid = groups[0][0].grid
    bits = grid.bits
    if long is None:
        long = sum(n * (p.upper.masses.size - 1) for p, n in groups) + 1 > FOURIER_MIN
    _check_reach(grid, groups)
    if long and tail > 0:  # (partials of module functions, not closures: a copy or a pickle carries them)
        recipe = Recipe(partial(_sides, groups, True), grid, partial(_sides, groups, False))
        sides = Sides(
            make_upper=partial(_composed, groups, True, tail, bits),
            make_lower=partial(_composed, groups, False, tail, bits),
        )
        return PLD(bits, TiltedReading(sides, recipe), tail, description, step_mult=grid.mult)
    result: PLD | None = None
    for p, n in groups:
        part = _self_compose_direct(p, n)
        result = part if result is None else _compose_direct(result, part)
    assert result is not None
    return sides_pld(bits, result.upper, result.lower, tail, description, grid.mult)


def _sides(groups: Sequence[tuple[PLD, int]], upper: bool) -> list[tuple[Side, int]]:
    """Each PLD's upper (or lower) side with its count."""
    return [(p.upper if upper else p.lower, n) for p, n in groups]


def _composed(groups: Sequence[tuple[PLD, int]], upper: bool, tail: float, bits: int) -> Side:
    """The composite upper (or lower) side of ``n`` copies of each PLD (:func:`compose_many`)."""
    return compose_many(_sides(groups, upper), upper, tail, bits)


def _reach(groups: Sequence[tuple[PLD, int]]) -> int:
    """A bound on |J| for every index J of the composition of ``n`` copies of each PLD: every index of a
    composite lies between the sums of its parts' extreme indices (the lower side's labels lie at most one
    below the upper side's points, hence the + 1)."""
    return sum(
        n * (max(abs(p.upper.offset), abs(p.upper.offset + p.upper.masses.size)) + 1) for p, n in groups
    )


def reach_fits(grid: Grid, groups: Sequence[tuple[PLD, int]]) -> bool:
    """Whether the composition of ``n`` copies of each PLD keeps every position J·h exact on ``grid``: on an
    aligned lattice (mult > 1) its indices J must stay below 2**52/mult (:class:`Grid`); the factor 2 covers
    the Fourier windows, whose power-of-two length may run past the support's top by up to its length."""
    return grid.mult == 1 or 2 * _reach(groups) * grid.mult < EXACT


def _check_reach(grid: Grid, groups: Sequence[tuple[PLD, int]]) -> None:
    """Refuse a composition that :func:`reach_fits` does not."""
    if not reach_fits(grid, groups):
        reach = _reach(groups)
        raise InvalidParameter(
            f"this composition reaches lattice index {reach} on the aligned lattice h={grid.describe()}, "
            f"beyond {EXACT // 2 // grid.mult} where its positions stay exact: build the PLDs with "
            "aligned=False"
        )


def _screen_twin(q: PLD) -> PLD | None:
    """The screening twin of the one-way long composition ``q``: the same composition of its children's
    upper sides moved to a lattice 2**``SCREEN_BITS`` times coarser (:func:`coarse_side`), whose δ(ε) is
    at least ``q``'s at every ε, so its certified ε(δ) and δ(ε) bound ``q``'s exact ones from above. None
    where ``q`` is short, or its lattice too coarse already. Made once, kept on the recipe."""
    recipe = q.recipe
    if recipe is None or q.reverse is not None or q.step_bits <= SCREEN_BITS:
        return None
    if recipe.screen:
        kept = recipe.screen[0]
        return kept if isinstance(kept, PLD) else None
    twin: PLD | None = None
    sides = screen_sides(recipe, q.step)
    if sides is not None:
        bits = q.step_bits - SCREEN_BITS
        empty = Side(0, np.zeros(1), 0.0, 0.0, np.zeros(1), 0.0)  # (a valid lower side: δ ≥ 0; not read)
        groups = [(sides_pld(bits, sd, empty, q.tail, "screen", q.step_mult), n) for sd, n in sides]
        twin = compose_groups(groups, f"screen of {q.description}")
    recipe.screen[:] = [twin]
    return twin


def one_way(p: PLD) -> PLD:
    """This order of the PLD alone (a symmetric PLD is its own reverse): its sides (shared: built once),
    tilted reading and lattice, without the reverse order."""
    if p.reverse is None:
        return p
    return replace(p, reading=p.reading.first)


def pair_of(first: PLD, reverse: PLD) -> PLD:
    """The PLD of an asymmetric pair: ``first`` (one order alone, whose description, lattice and sampling the
    pair takes) and ``reverse``, the PLD of the other order of neighbours."""
    return replace(first, reading=PairReading(first.reading.first, reverse))


def sides_pld(
    bits: int,
    upper: Side,
    lower: Side,
    tail: float,
    description: str,
    mult: int = 1,
    sampling: str | None = None,
) -> PLD:
    """The PLD with these two sides, built, on the lattice ``mult``·2**-``bits``."""
    return PLD(bits, SidesReading(Sides(upper, lower)), tail, description, sampling, mult)


def sides_of(make: Callable[[], PLD]) -> Sides:
    """The sides of the PLD ``make`` builds (a module-level function: a partial of it still pickles)."""
    return make().reading.sides


def built_on_first_use(
    bits: int, make: Callable[[], PLD], tail: float, description: str, sampling: str | None = None
) -> PLD:
    """A PLD whose sides are those of the one-order PLD ``make`` builds, built when first read."""
    return PLD(bits, SidesReading(Sides(make=partial(sides_of, make))), tail, description, sampling)


def from_constructor(p: PLD, key: object, thin: PLD | None) -> PLD:
    """``p``, with ``key`` (what it was built from: its constructor and arguments) standing for its contents
    in ``content_key``, and ``thin`` read in its place by compositions holding at least ``THIN_MIN_COUNT``
    copies of it."""
    return replace(p, reading=FromConstructor(p.reading, key, thin))


def _compose_direct(a: PLD, b: PLD) -> PLD:
    tail = min(a.tail, b.tail)
    return sides_pld(
        a.step_bits,
        compose_sides(a.upper, b.upper, True, tail),
        compose_sides(a.lower, b.lower, False, tail),
        tail,
        "",
        a.step_mult,
    )


def _self_compose_direct(p: PLD, k: int) -> PLD:
    result: PLD | None = None
    power = p
    while True:
        if k & 1:
            result = power if result is None else _compose_direct(result, power)
        k >>= 1
        if not k:
            break
        power = _compose_direct(power, power)
    assert result is not None
    return result


_READING = "reading this PLD (its sides are built when first read)"  # (what ran out of memory, if it does)


def build_pld(
    bits: int, b: Buckets, tail: float, description: str, mult: int = 1, lazy_lower: bool = False
) -> PLD:
    """The PLD of the two sides :func:`build_sides` makes from bucket masses (the connect-the-dots upper
    side, Doroshenko et al. 2022, and the lumped lower side) on the lattice ``mult``·2**-``bits``, where
    running out of memory names the step_bits to change."""
    with memory.refuse_out_of_memory(f"building {description}", memory.SMALLER_BITS):
        upper, lower = build_sides(bits, b, mult, lazy_lower)
        if not isinstance(lower, Side):  # (a module-level function and arrays: the PLD still pickles)
            return PLD(bits, SidesReading(Sides(upper, make_lower=lower)), tail, description, step_mult=mult)
        return sides_pld(bits, upper, lower, tail, description, mult)


def pld_of_atoms(
    bits: int,
    atoms: Sequence[tuple[Fraction, float, float]],
    inf_mass: float,
    inf_rel: float,
    tail: float,
    description: str,
    grid: Grid | None = None,
) -> PLD:
    """A PLD from finitely many atoms ``(loss, P-mass, log Q-mass)`` known to relative accuracy ``EXP_REL``
    (masses) and with exact rational losses; ``inf_mass`` is the P-mass at +∞. The lattice is ``grid``
    (default: the plain 2**-``bits``, also the one the size check names)."""
    g = Grid(bits) if grid is None else grid
    js = [bucket_of(loss, g) for loss, _, _ in atoms]
    lo, hi = min(js), max(js)
    n = hi - lo + 1
    check_points(n, description, bits)
    p = np.zeros(n)
    r = np.zeros(n)
    h = g.exact
    for (_loss, pm, log_q), j in zip(atoms, js, strict=True):
        p[j - lo] += pm
        # e^a·Q = exp(a + log Q) with a = j·h: relative error from the exponent's rounding is covered by rel.
        r[j - lo] += math.exp(float(j * h) + log_q) if log_q > -math.inf else 0.0
    rel = np.full(n, libm_err(8))
    return build_pld(
        g.bits,
        Buckets(lo, p, r, rel, inf_hi=inf_mass * (1 + inf_rel), inf_lo=inf_mass * (1 - inf_rel)),
        tail,
        description,
        g.mult,
    )


def gaussian_pld(bits: int, mu: float, width: float, tail: float, description: str, mu_lo: float) -> PLD:
    """A Gaussian PLD whose lattice sides are built only when needed (composition with a non-Gaussian)."""
    make = partial(sides_of, partial(_gaussian_lattice, bits, mu, width, tail, description))
    return PLD(bits, GaussianReading(Sides(make=make), (mu, width, mu_lo)), tail, description)


def _gaussian_lattice(bits: int, mu: float, width: float, tail: float, description: str) -> PLD:
    """The lattice sides of a Gaussian PLD (:func:`gaussian_pld`)."""
    with memory.refuse_out_of_memory(f"building {description}", memory.SMALLER_BITS):
        return build_pld(bits, gaussian_buckets(bits, mu, width), tail, description)
