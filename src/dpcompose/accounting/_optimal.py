"""Optimal composition of (εᵢ, δᵢ)-DP mechanisms (Kairouz–Oh–Viswanath 2015, Murtagh–Vadhan 2016).

The least δ_g at ε_g is ``δ_g = 1 − (1 − A(ε_g)) Π(1 − δᵢ)`` with
``A(ε_g) = E[(1 − e^{ε_g − L})₊]``, ``L = Σ εᵢ sᵢ``, ``sᵢ = +1`` with probability ``e^{εᵢ}/(1 + e^{εᵢ})``
and −1 otherwise (the privacy loss of composed randomized responses).

How A is computed (all sums are of non-negative terms, so they keep their relative accuracy in the tail
where δ lives; no FFT):

* **few atoms** (``Π (cᵥ + 1) ≤ 2²⁰`` over the distinct values v with multiplicities cᵥ): the exact
  distribution of L, as a product of binomials;
* **homogeneous** (one distinct value): the binomial, O(k), each term scaled to the mode so nothing
  overflows at kε = 1000 or k = 10⁵;
* **commensurable** values (all close to multiples of a common step): the exact lattice distribution,
  grouped binomials convolved directly;
* **otherwise** a grid of step h: the upper bound replaces each RR_ε by a public-coin *mixture* of its
  grid neighbours (below), the lower bound rounds every εᵢ *down* to a multiple of h (a lower bound on
  the exact optimum, since RR_ε′ is a post-processing of RR_ε for ε′ ≤ ε); h is halved until the two
  agree to ``tolerance`` or the work budget is spent. When even the coarsest mixture is over budget,
  every εᵢ is rounded *up* instead (RR_ε is a post-processing of RR_ε′ for ε′ ≥ ε).

The mixture upper bound. Let a = nh ≤ ε < b = a + h and p_x = e^x/(1 + e^x). The mechanism M_λ tosses a
coin with bias λ (independent of the data, and published), then runs RR_a on heads and RR_b on tails.
Its privacy profile (hockey-stick divergence Σ[P − yQ]₊ at y = e^{ε_g}, any ε_g ∈ ℝ) is the mixture
λδ_a(y) + (1 − λ)δ_b(y) of those of RR_a and RR_b (the coin splits the outputs into two disjoint parts),
where δ_x(y) = 1 − y for y ≤ e^{−x}, (e^x − y)/(1 + e^x) for e^{−x} ≤ y ≤ e^x, and 0 beyond (δ_0(y) =
(1 − y)₊). So D(y) = λδ_a + (1 − λ)δ_b − δ_ε is piecewise linear with kinks only at e^{±a}, e^{±ε},
e^{±b}, and D = 0 for y ≤ e^{−b} (all three are 1 − y there) and for y ≥ e^b (all 0): D ≥ 0 on
(0, ∞) iff it is ≥ 0 at the kinks. At e^{−ε}, δ_a = δ_ε, so D = (1 − λ)(δ_b − δ_ε) ≥ 0 (δ_b ≥ δ_ε as
RR_ε is a post-processing of RR_b); at e^{ε}, δ_ε = 0, so D ≥ 0. At y = e^{−a} and y = e^{a} the
condition D ≥ 0 reads λ(δ_b − δ_a) ≤ δ_b − δ_ε, and both sides work out to the same bound

    λ ≤ λ* = (p_b − p_ε)/(p_b − p_a) = expm1(b − ε)/expm1(h) · (1 + e^{−a})/(1 + e^{−ε})

(at y = e^{a}: δ_a = 0, δ_b = (e^b − e^a)/(1 + e^b), δ_b − δ_ε = (e^b − e^ε)(1 + e^a)/((1 + e^b)(1 + e^ε));
at y = e^{−a}: δ_b − δ_a = expm1(h)/(1 + e^b) and δ_b − δ_ε = (e^b − e^ε)(1 + e^{−a})/((1 + e^b)(1 + e^ε))),
i.e. M_λ* outputs + with exactly RR_ε's probability p_ε; a = 0 is covered, the two kinks coinciding at
y = 1. D is decreasing in λ, so every λ ∈ [0, λ*] works; we use a float λ ≤ λ* (numerator rounded down,
denominator up, then λ rounded down to a multiple of 2⁻⁵³ so that 1 − λ is exact too), and the
mechanism analysed is exactly M_λ with that λ. Profile dominance at every y > 0 means, by the
primal–dual characterisation of f-DP (Dong, Roth, Su 2019, Prop. 2.12), that every ε-DP mechanism — which
is T(RR_ε)-DP (ibid. Prop. 2.5; Kairouz, Oh, Viswanath 2015 Thm 2.5) — is T(M_λ)-DP; by the composition
theorem (ibid. Thm 3.2, adaptive) the composition is ⊗ᵢ T(M_λᵢ)-DP, whose δ at ε_g is E[(1 − e^{ε_g − L})₊]
with L the sum of the independent mixture losses (atoms ±a w.p. λ(p_a, 1 − p_a), ±b w.p.
(1 − λ)(p_b, 1 − p_b)). An (εᵢ, δᵢ) mechanism is dominated by the coin "reveal with probability δᵢ, else
M_λᵢ" in the same way, which gives the same 1 − (1 − A)Π(1 − δᵢ) form. The rounding error of the
mixture is second order in h (its loss matches RR_ε's sign probabilities exactly), against first order
when rounding up, so the upper bound is far tighter at the same h; the lower bound is unchanged.

Floating-point error is bounded explicitly: each probability carries a relative-error bound (a few units
in the last place per multiplication, IEEE-754 round-to-nearest and libm exp/expm1 within 1 ulp), each
loss value an absolute-error bound, and A is inflated by those bounds before being returned as a
:class:`~fractions.Fraction`. The result is never below the exact optimum.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property, lru_cache

import numpy as np
import numpy.typing as npt

from dpcompose._scipy import brentq, expit
from dpcompose.accounting._common import ONE, ZERO, delta_list, epsilon_list, nonnegative, probability
from dpcompose.accounting._display import format_up
from dpcompose.accounting._exact import (
    Number,
    exp_down,
    exp_up,
    expm1_down,
    expm1_up,
    float_down,
    float_up,
    log1p_down,
    log1p_up,
)
from dpcompose.errors import InvalidParameter

__all__ = [
    "optimal_delta",
    "optimal_delta_bounds",
    "optimal_epsilon",
    "optimal_epsilon_bounds",
]

Array = npt.NDArray[np.float64]

_U = 2.0**-53  # unit round-off
_ATOMS_MAX = 1 << 20  # exact enumeration when the support has at most this many atoms
_LATTICE_MAX = 1 << 22  # largest lattice (number of grid points) we build
_WORK_MAX = 3e8  # multiply-adds allowed for one grid convolution
MIX_WORK_MAX = 6e8  # bound 8·k·X on the element operations of one mixture convolution (4 per atom)
_COMMENSURABLE_REL = 1e-12  # how close to a common step the values must be to count as commensurable
_STRETCH = 4e-12  # relative widening of a commensurable step: rounding up then costs ≤ 4e-12 relative
_TINY = 2.0**-1000  # absolute slack per atom for probabilities lost to underflow


@dataclass(frozen=True)
class Loss:
    """A privacy-loss distribution: sorted float losses with error bounds (private)."""

    loss: Array  # ascending
    prob: Array
    loss_err: float  # |computed loss − true loss| ≤ loss_err for every atom
    rel_err: float  # |computed prob − true prob| ≤ rel_err · true prob (+ _TINY per atom)
    top: float  # an upper bound on the largest loss (A = 0 at ε_g ≥ top)
    # the exact loss of atom i (as sorted), where known: atoms near ε_g are then weighed exactly
    exact: Callable[[int], Fraction] | None = None


def _binomial(c: int, e: float) -> tuple[Array, float]:
    """pmf of the number of +1's among c RR_e's, and its relative-error bound."""
    if c == 0:
        return np.ones(1), 0.0
    odds = math.exp(e)  # P(+1)/P(−1)
    p = float(expit(e))
    mode = min(c, int((c + 1) * p))
    j = np.arange(c + 1, dtype=np.float64)
    out = np.empty(c + 1)
    out[mode] = 1.0
    if mode < c:  # r_{j+1}/r_j = (c − j)/(j + 1) · odds
        up = (c - j[mode:c]) / (j[mode:c] + 1) * odds
        out[mode + 1 :] = np.cumprod(up)
    if mode > 0:  # r_{j−1}/r_j = j/(c − j + 1) / odds
        down = j[mode:0:-1] / (c - j[mode:0:-1] + 1) / odds
        out[mode - 1 :: -1] = np.cumprod(down)
    out /= out.sum()
    return out, (c * (8.0 + 2.0 * e) + 8.0) * _U


def group(eps: Sequence[Fraction]) -> list[tuple[Fraction, int]]:
    """Distinct non-zero values with multiplicities, largest first (ε = 0 contributes nothing)."""
    counts = Counter(e for e in eps if e > 0)
    return sorted(counts.items(), reverse=True)


def _from_atoms(groups: Sequence[tuple[Fraction, int]]) -> Loss:
    prob = np.ones(1)
    loss = np.zeros(1)
    rel = 0.0
    total = 0.0
    for value, c in groups:
        e = float(value)
        b, err = _binomial(c, e)
        offs = e * (2.0 * np.arange(c + 1) - c)
        prob = np.multiply.outer(prob, b).ravel()
        loss = np.add.outer(loss, offs).ravel()
        rel += err + 2 * _U + e * c * _U  # product rounding; p evaluated at float(e)
        total += float_up(value) * c
    order = np.argsort(loss, kind="stable")
    n_groups = len(groups) + 1
    radices = [c + 1 for _, c in groups]

    def exact(i: int) -> Fraction:
        k = int(order[i])  # raveled index of the outer products: the first group is the most significant
        out = Fraction(0)
        for (value, c), r in zip(reversed(groups), reversed(radices), strict=True):
            k, j = divmod(k, r)
            out += value * (2 * j - c)
        return out

    return Loss(
        loss[order], prob[order], 2 * n_groups * _U * total + 4 * _U * total, rel * 1.01, total, exact
    )


def lattice(step: float, groups: Sequence[tuple[int, int]]) -> Loss:
    """The exact distribution of Σ over groups (n, c) of c independent RR_{n·step} losses."""
    x_max = sum(n * c for n, c in groups)
    dist = np.ones(1)
    rel = 0.0
    for n, c in groups:
        e = n * step
        b, err = _binomial(c, e)
        new = np.zeros(dist.size + n * c)
        if dist.size == 1:  # first group: just place the binomial on its stride
            new[::n][: c + 1] = b * dist[0]
            dist = new
            rel += err + 3 * _U + e * c * _U
            continue
        for j in np.nonzero(b)[0]:
            start = int(j) * n
            new[start : start + dist.size] += b[j] * dist
        dist = new
        rel += err + (c + 3) * _U + e * c * _U
    y = np.arange(dist.size, dtype=np.float64)
    loss = step * (2.0 * y - x_max)
    top = step * x_max
    step_q = Fraction(step)  # every atom's loss is exactly step·(2y − x_max)
    return Loss(
        loss, dist, 4 * _U * abs(top), rel * 1.01, top * (1 + 4 * _U), lambda i: step_q * (2 * i - x_max)
    )


_NEAR = 1e-4  # atoms within this of ε_g are weighed with their exact loss (when the plan knows it)
_NEAR_MAX = 4096  # … unless there are more of them than this


def a_up(dist: Loss, eps_g: float) -> float:
    """An upper bound on A(ε_g) = E[(1 − e^{ε_g − L})₊].

    Each atom's weight is bounded with the loss slack (float error of the stored losses and of L − ε_g),
    which is far above the true weight for atoms within a few ulps of ε_g. Where the plan knows the exact
    losses, atoms within ``_NEAR`` of ε_g are weighed exactly instead: w = 1 − e^{−(L − ε_g)}, from the
    exact difference rounded up; the others keep the slack, now small beside their weight.
    """
    slack = dist.loss_err + 2 * _U * (abs(eps_g) + abs(dist.top))
    i = int(np.searchsorted(dist.loss, eps_g - slack, side="right"))
    if i >= dist.loss.size:
        return 0.0
    near = 0.0
    if dist.exact is not None:
        band = max(_NEAR, 2 * slack)
        j = int(np.searchsorted(dist.loss, eps_g + band, side="right"))
        start = int(np.searchsorted(dist.loss, eps_g - band - slack, side="right"))
        if j - start <= _NEAR_MAX:
            g = Fraction(eps_g)
            for a in range(start, j):
                d = dist.exact(a) - g
                if d > 0:
                    w_a = -math.expm1(-float_up(d)) * (1 + 4 * _U)
                    near += float(dist.prob[a]) * w_a * (1 + 4 * _U)
            near = near * (1 + dist.rel_err + (j - start + 8) * _U) + (j - start) * _TINY
            i = max(i, j)
            if i >= dist.loss.size:
                return near
    t = dist.loss[i:] - eps_g + slack
    w = -np.expm1(-t)
    s = float(np.dot(dist.prob[i:], w))
    n = dist.loss.size - i
    return near + s * (1 + dist.rel_err + (n + 8) * _U) + n * _TINY


def _a_low(dist: Loss, eps_g: float) -> float:
    """A lower bound on A(ε_g) for the same distribution."""
    slack = dist.loss_err + 2 * _U * (abs(eps_g) + abs(dist.top))
    i = int(np.searchsorted(dist.loss, eps_g + slack, side="right"))
    if i >= dist.loss.size:
        return 0.0
    t = dist.loss[i:] - eps_g - slack
    w = np.maximum(-np.expm1(-t), 0.0)
    s = float(np.dot(dist.prob[i:], w))
    n = dist.loss.size - i
    return max(0.0, s * (1 - dist.rel_err - (n + 8) * _U))


def _commensurable_step(groups: Sequence[tuple[Fraction, int]]) -> tuple[float, list[int]] | None:
    """A step h with every value within 1e-12 relative of a multiple of h, on a lattice of ≤ _LATTICE_MAX."""
    values = np.array([float(v) for v, _ in groups])
    counts = np.array([c for _, c in groups], dtype=np.float64)
    vmax = float(values.max())
    ratios = values / vmax
    for q in range(1, 4097):
        r = ratios * q
        m = np.rint(r)
        if np.all(m >= 1) and np.all(np.abs(r - m) <= _COMMENSURABLE_REL * np.maximum(m, 1.0)):
            if float(np.dot(m, counts)) > _LATTICE_MAX:
                return None
            return vmax / q, [int(x) for x in m]
        if float(np.dot(r, counts)) > _LATTICE_MAX:
            return None
    return None


def rounded_groups(groups: Sequence[tuple[Fraction, int]], step: float, up: bool) -> list[tuple[int, int]]:
    """Multiples n of ``step`` (exact rational comparison) with n·step ≥ ε (up) or ≤ ε (down)."""
    h = Fraction(step)
    out: Counter[int] = Counter()
    for value, c in groups:
        q = value / h
        n = math.ceil(q) if up else math.floor(q)
        if n > 0:
            out[n] += c
    return sorted(out.items(), reverse=True)


def _floor_ratio(value: Fraction, step: float) -> tuple[int, int, int]:
    """(n, num, den) with n = ⌊value/step⌋ and value − n·step = num/den, in exact integer arithmetic."""
    r, s = step.as_integer_ratio()
    num, den = value.numerator * s, value.denominator * r  # value/step = num/den
    n = num // den
    return n, num - n * den, value.denominator * s


def mixture_weight(value: Fraction, step: float) -> tuple[int, float]:
    """n = ⌊ε/h⌋ and a float λ ≤ λ*, a multiple of 2⁻⁵³, for ε = ``value``, h = ``step`` (exactly).

    With a = n·h ≤ ε < b = a + h, λ* = (p_b − p_ε)/(p_b − p_a); M_λ (RR_a with probability λ, else RR_b,
    public coin) then dominates RR_ε: see the module docstring. Evaluated in floats with outward
    rounding: b − ε is an exact rational rounded down, the arguments of exp are rounded outward, exp and
    expm1 are padded (``_exact``), and the five remaining float operations (≤ 2⁻⁵³ relative each) are
    covered by the final factor 1 − 2⁻⁵⁰ (the computed ratio is ≤ (1 + 2⁻⁵³)⁶ times the padded one).
    """
    n, rem_num, rem_den = _floor_ratio(value, step)
    if rem_num == 0:
        return n, 1.0  # ε = a: M_1 = RR_a = RR_ε
    r = step.as_integer_ratio()[0]
    # b − ε = h − (ε − a) = (q·r − rem_num)/(q·s) with rem_den = q·s: one correctly rounded division
    gap = math.nextafter((value.denominator * r - rem_num) / rem_den, 0.0)
    a_hi = math.nextafter(n * step, math.inf)  # ≥ a
    eps_lo = math.nextafter(float(value), 0.0)  # ≤ ε (float(Fraction) is correctly rounded)
    num = expm1_down(gap) * (1.0 + exp_down(-a_hi))
    den = expm1_up(step) * (1.0 + exp_up(-eps_lo))
    lam = min(1.0, max(0.0, num / den * (1.0 - 2.0**-50)))
    return n, math.floor(lam * 2.0**53) / 2.0**53


def mixture_children(groups: Sequence[tuple[Fraction, int]], step: float) -> list[tuple[int, float, int]]:
    """(n, λ, count) per distinct value: its mixture of RR_{n·h} and RR_{(n+1)·h}, h = ``step`` exactly."""
    return [(*mixture_weight(value, step), c) for value, c in groups]


def _mixture_size(children: Sequence[tuple[int, float, int]]) -> int:
    """X = Σ c·(n + 1): the mixture lattice has 2X + 1 points."""
    return sum((n + 1) * c for n, _, c in children)


def mixture(step: float, children: Sequence[tuple[int, float, int]]) -> Loss:
    """The distribution of Σ of independent M_λ losses, one per child (n, λ, c) repeated c times.

    The loss lives on the lattice h·(y − X), y = 0 … 2X; a child puts its four atoms at offsets
    0, 1, 2n + 1, 2n + 2 (losses −b, −a, a, b). Float error: each atom weight λ·p is a product of the
    exact λ (or the exact 1 − λ) and p = expit(±x̃) with x̃ = fl(x) (|x̃ − x| ≤ x·u, and |d ln p/dx| ≤ 1,
    so p is off by ≤ 1.01·x·u relative besides expit's own ≤ 4u): ≤ (5 + 1.01·b)u for the weight; each
    output of one convolution step is a sum of ≤ 4 non-negative products (≤ 4u more). Relative errors
    compound as Π(1 + rᵢ) ≤ exp(Σrᵢ), which we inflate by 1 % for the float evaluation of the bound.
    """
    x_tot = _mixture_size(children)
    cap = 2 * x_tot + 1
    cur, nxt, tmp = np.zeros(cap), np.zeros(cap), np.empty(cap)
    cur[0] = 1.0
    size = 1
    rel = 0.0
    for n, lam, c in children:
        mu = 1.0 - lam  # exact: λ is a multiple of 2⁻⁵³ in [0, 1]
        a, b = n * step, (n + 1) * step
        weights = [
            (0, mu * float(expit(-b))),
            (1, lam * float(expit(-a))),
            (2 * n + 1, lam * float(expit(a))),
            (2 * n + 2, mu * float(expit(b))),
        ]
        terms = [(off, w) for off, w in weights if w != 0.0]
        child_rel = (9.0 + 1.01 * b) * _U
        for _ in range(c):
            new_size = size + 2 * n + 2
            nxt[:new_size] = 0.0
            for off, w in terms:
                np.multiply(cur[:size], w, out=tmp[:size])
                nxt[off : off + size] += tmp[:size]
            cur, nxt = nxt, cur
            size = new_size
            rel += child_rel
    assert size == cap
    y = np.arange(cap, dtype=np.float64) - x_tot  # exact integers
    top = step * x_tot
    return Loss(step * y, cur, 4 * _U * abs(top), math.expm1(rel) * 1.01, top * (1 + 4 * _U))


@dataclass(frozen=True)
class _Plan:
    upper: Loss
    lower_builder: Callable[[], Loss] | None  # None when ``upper`` is exact up to float error

    @cached_property
    def lower(self) -> Loss | None:
        """The rounded-down distribution (built on first use: only the certified bounds need it)."""
        return None if self.lower_builder is None else self.lower_builder()


def _plans(eps_key: tuple[tuple[Fraction, int], ...]) -> list[_Plan]:
    """The upper distribution (and how to build the lower one); [] when the general grid is needed."""
    groups = list(eps_key)
    if len(groups) == 1:
        value, c = groups[0]
        step = float_up(value)
        if Fraction(step) == value:
            return [_Plan(lattice(step, [(1, c)]), None)]
        return [_Plan(lattice(step, [(1, c)]), lambda: lattice(float_down(value), [(1, c)]))]
    atoms = math.prod(c + 1 for _, c in groups)
    if atoms <= _ATOMS_MAX:
        return [_Plan(_from_atoms(groups), None)]
    found = _commensurable_step(groups)
    if found is not None:
        h_up, h_dn = found[0] * (1 + _STRETCH), found[0] * (1 - _STRETCH)
        up = lattice(h_up, rounded_groups(groups, h_up, up=True))
        return [_Plan(up, lambda: lattice(h_dn, rounded_groups(groups, h_dn, up=False)))]
    return []  # general grid: built lazily by _grid_plan


@dataclass(frozen=True)
class _GridLevel:
    upper: Loss | None  # None when this level's upper bound is not worth building (see _grid_plan)
    lower: Loss


def _grid_step(groups: Sequence[tuple[Fraction, int]], level: int) -> float:
    total = sum(float(v) * c for v, c in groups)  # the lower bound's grid: the total ε over 4096 · 2^level
    return float(total / (4096.0 * 2**level))


def _mixture_affordable(groups: Sequence[tuple[Fraction, int]], step: float) -> bool:
    k = sum(c for _, c in groups)
    x_tot = sum((_floor_ratio(v, step)[0] + 1) * c for v, c in groups)
    return 2 * x_tot + 1 <= _LATTICE_MAX and 8.0 * k * x_tot <= MIX_WORK_MAX


def _grid_plan(groups: Sequence[tuple[Fraction, int]], level: int) -> _GridLevel | None:
    """The general grid at refinement ``level`` (the step halves per level); None once over budget.

    The upper bound is the mixture lattice while that fits its budget; past it, no upper bound is built
    (a coarser mixture is far tighter than rounding up at this step) unless the mixture never fit, in
    which case every εᵢ is rounded up.
    """
    k = sum(c for _, c in groups)
    x_max = 4096.0 * 2**level
    if level > 0 and (x_max > _LATTICE_MAX or (k + len(groups)) * x_max > _WORK_MAX):
        return None
    step = _grid_step(groups, level)
    lower = lattice(step, rounded_groups(groups, step, up=False))
    upper: Loss | None
    if _mixture_affordable(groups, step):
        upper = mixture(step, mixture_children(groups, step))
    elif level == 0 or not _mixture_affordable(groups, _grid_step(groups, 0)):
        upper = lattice(step, rounded_groups(groups, step, up=True))
    else:
        upper = None
    return _GridLevel(upper, lower)


@lru_cache(maxsize=64)
def cached_plans(eps_key: tuple[tuple[Fraction, int], ...]) -> tuple[_Plan, ...]:
    """The plans of :func:`_plans` for the grouped values ``eps_key``, cached."""
    return tuple(_plans(eps_key))


@lru_cache(maxsize=64)
def cached_grid(eps_key: tuple[tuple[Fraction, int], ...], level: int) -> _GridLevel | None:
    """The grid distributions of refinement ``level`` for the grouped values ``eps_key``, cached."""
    return _grid_plan(list(eps_key), level)


def lost_bounds(dels: Sequence[Fraction]) -> tuple[Fraction, Fraction]:
    """Lower and upper bounds on D = 1 − Π(1 − δᵢ) (exactly 0 when all δᵢ = 0)."""
    counts = Counter(d for d in dels if d)
    if not counts:
        return ZERO, ZERO
    size = sum(c * (d.denominator.bit_length() + 1) for d, c in counts.items())
    if size <= 1 << 18:  # small enough to do exactly
        keep = ONE
        for d, c in counts.items():
            keep *= (1 - d) ** c
        return 1 - keep, 1 - keep
    pad = 1 + Fraction(len(counts) + 2, 2**52)  # fsum and the products c·log1p, rounded outward
    s_dn = math.fsum(c * log1p_down(-d) for d, c in counts.items())
    s_up = math.fsum(c * log1p_up(-d) for d, c in counts.items())
    lost_up = min(ONE, Fraction(-expm1_down(float_down(Fraction(s_dn) * pad))))
    lost_dn = max(ZERO, Fraction(-expm1_up(float_up(Fraction(s_up) / pad))))
    return lost_dn, lost_up


def _combine(a: float, lost: Fraction) -> Fraction:
    """δ = 1 − (1 − A)(1 − D), exact in A and D, capped at 1."""
    fa = min(ONE, Fraction(a))
    return min(ONE, 1 - (1 - fa) * (1 - lost))


def _inputs(
    epsilons: Sequence[Number], deltas: Sequence[Number] | None
) -> tuple[tuple[tuple[Fraction, int], ...], Fraction, Fraction, Fraction]:
    eps = epsilon_list(epsilons)
    dels = delta_list(deltas, len(eps))
    lost_dn, lost_up = lost_bounds(dels)
    return tuple(group(eps)), sum(eps, ZERO), lost_dn, lost_up


def _tighter(
    best: tuple[Fraction, Fraction] | None, lo: Fraction, hi: Fraction | None
) -> tuple[Fraction, Fraction]:
    """The intersection of the interval so far with this level's (level 0 always has an upper bound)."""
    if best is None:
        assert hi is not None
        return lo, hi
    return max(lo, best[0]), best[1] if hi is None else min(hi, best[1])


def _interval(
    key: tuple[tuple[Fraction, int], ...],
    tol: float,
    upper: Callable[[Loss], Fraction],
    lower: Callable[[Loss], Fraction],
    need_lower: bool = True,
) -> tuple[Fraction, Fraction]:
    """The certified (lower, upper) interval of a quantity read off the composed loss distribution.

    ``upper(dist)`` bounds it from above on an upper-bounding distribution, ``lower(dist)`` from below on
    a lower-bounding one. Exact plans (few atoms, one value, commensurable values) give one interval
    (``need_lower=False``: the upper end only, returned twice); otherwise the general grid is refined,
    intersecting the intervals of successive levels, until they agree to ``tol`` (relative) or the work
    budget is spent (the grid always needs both ends: the lower one decides when to stop).
    """
    plans = cached_plans(key)
    if plans:
        plan = plans[0]
        hi = upper(plan.upper)
        if not need_lower:
            return hi, hi
        lo = lower(plan.lower if plan.lower is not None else plan.upper)
        return min(lo, hi), hi
    best: tuple[Fraction, Fraction] | None = None
    level = 0
    while True:
        grid = cached_grid(key, level)
        if grid is None:
            break
        best = _tighter(best, lower(grid.lower), None if grid.upper is None else upper(grid.upper))
        if best[1] - best[0] <= Fraction(tol) * best[1]:
            break
        level += 1
    if best is None:  # pragma: no cover - level 0 is always within budget
        raise InvalidParameter("the composition is too large for the grid method")
    return min(best), best[1]


_EPS_FLOAT_MAX = 700  # e^ε of a larger εᵢ overflows the float loss distributions


def _beyond_floats(key: tuple[tuple[Fraction, int], ...]) -> bool:
    """Whether some εᵢ is too large for the float loss distributions (e^εᵢ would overflow).

    Then only the trivial certified bounds are returned: δ_g ∈ [1 − Π(1 − δᵢ), 1] below Σεᵢ, and
    ε_g ∈ [0, Σεᵢ] (basic composition, valid at every δ_g ≥ 1 − Π(1 − δᵢ)). Never under-reports.
    """
    return any(value > _EPS_FLOAT_MAX for value, _ in key)


def _top_atom(key: tuple[tuple[Fraction, int], ...], gap: Fraction) -> tuple[float, float]:
    """Bounds on A(ε_g) when only the all-"+" atom has loss above ε_g (``gap = Σεᵢ − ε_g`` in
    ``[0, 2·min εᵢ]``): A = Πᵢ (e^{εᵢ}/(1 + e^{εᵢ}))^{cᵢ} · (1 − e^{−gap}), in closed form.

    Every other atom's loss is at most Σεᵢ − 2·min εᵢ ≤ ε_g, so contributes nothing; the closed form avoids
    the grid's loss slack, which near the top would be far above the true A.
    """
    if gap <= 0:
        return 0.0, 0.0
    log_p = 0.0
    err = 0.0
    for value, c in key:
        v = float(value)
        lp = -math.log1p(math.exp(-v))  # log(e^v/(1 + e^v))
        log_p += c * lp
        # |float(value) − value| ≤ u·v moves lp by ≤ u·v/2; exp and log1p add ≤ 4u·(|lp| + u) each
        err += c * (_U * v + 8 * _U * (abs(lp) + _U))
    err += 8 * _U * abs(log_p)
    p_hi = math.exp(log_p + err) * (1 + 4 * _U)
    p_lo = math.exp(log_p - err) * (1 - 4 * _U)
    w_hi = -math.expm1(-float_up(gap)) * (1 + 4 * _U)
    w_lo = -math.expm1(-float_down(gap)) * (1 - 4 * _U)
    # _TINY: absolute slack for products that fall into the subnormal range (ε near 1e-308)
    return max(0.0, p_lo * w_lo * (1 - 4 * _U) - _TINY), min(1.0, p_hi * w_hi * (1 + 4 * _U) + _TINY)


def _check_tolerance(tolerance: Number) -> float:
    tol = float(nonnegative(tolerance, "tolerance"))
    if tol <= 0:
        raise InvalidParameter(f"tolerance={tolerance!r} must be positive")
    return tol


def optimal_delta_bounds(
    epsilons: Sequence[Number],
    deltas: Sequence[Number] | None,
    epsilon: Number,
    *,
    tolerance: Number = 1e-9,
) -> tuple[Fraction, Fraction]:
    """Certified ``(lower, upper)`` bounds on the optimal δ_g at ε_g (see :func:`optimal_delta`).

    ``lower`` is a lower bound on the exact optimum up to floating-point error (used to measure the grid's
    accuracy); ``upper`` is the value :func:`optimal_delta` returns.

    Source: Kairouz–Oh–Viswanath 2015 Thm 3.3; Murtagh–Vadhan 2016 Thm 1.5.

    Examples:
        >>> lo, hi = optimal_delta_bounds([0.1] * 10, None, 0.5)
        >>> lo <= hi <= lo * (1 + Fraction(1, 10**9))
        True
    """
    key, total, lost_dn, lost = _inputs(epsilons, deltas)
    eps_g = nonnegative(epsilon, "epsilon")
    tol = _check_tolerance(tolerance)
    if eps_g >= total or not key:
        return _combine(0.0, lost_dn), _combine(0.0, lost)
    if _beyond_floats(key):
        return _combine(0.0, lost_dn), ONE
    if eps_g >= total - 2 * min(v for v, _ in key):
        a_lo, a_hi = _top_atom(key, total - eps_g)
        return _combine(a_lo, lost_dn), _combine(a_hi, lost)
    e_dn, e_up = float_down(eps_g), float_up(eps_g)
    return _interval(
        key,
        tol,
        lambda dist: _combine(a_up(dist, e_dn), lost),
        lambda dist: _combine(_a_low(dist, e_up), lost_dn),
    )


def optimal_delta(
    epsilons: Sequence[Number],
    deltas: Sequence[Number] | None,
    epsilon: Number,
    *,
    tolerance: Number = 1e-9,
) -> Fraction:
    """The least δ_g such that k-fold adaptive composition of (εᵢ, δᵢ)-DP mechanisms is (ε_g, δ_g)-DP.

    ``δ_g = 1 − (1 − A) Π(1 − δᵢ)`` with
    ``A = (1/Π(1 + e^{εᵢ})) Σ_S max(e^{Σ_{i∈S} εᵢ} − e^{ε_g} e^{Σ_{i∉S} εᵢ}, 0)``.
    Exact (to within a few units in the last place, rounded up) for one distinct ε (the binomial form,
    O(k)), for few distinct values, and for commensurable values; otherwise an upper bound from a grid
    whose gap to the exact optimum is driven below ``tolerance`` (relative) while the work stays within
    budget — :func:`optimal_delta_bounds` reports the certified interval.

    Source: Kairouz, Oh, Viswanath 2015 Thm 3.3 (homogeneous); Murtagh, Vadhan 2016 Thm 1.5
    (heterogeneous).

    Args:
        epsilons: the εᵢ ≥ 0.
        deltas: the δᵢ ∈ [0, 1) (``None``: all zero).
        epsilon: the target ε_g ≥ 0.
        tolerance: target relative gap for the grid method (keyword only).

    Returns:
        δ_g, never below the exact optimum.

    Raises:
        InvalidParameter: bad inputs.

    Examples:
        >>> float(optimal_delta([0.1] * 100, None, 4.774567588107985))
        1.00000000000...e-06
        >>> optimal_delta([0.5, 0.25], None, 0.75)  # at ε_g = Σ εᵢ nothing is left
        Fraction(0, 1)
    """
    return optimal_delta_bounds(epsilons, deltas, epsilon, tolerance=tolerance)[1]


def _least_eps(dist: Loss, lost: Fraction, target: Fraction, upper: bool) -> float:
    """Least float ε with δ(ε) ≤ target for ``dist`` (upper) or with the lower δ ≤ target (lower)."""
    t = float(target)
    lf = float(lost)

    def delta_at(x: float) -> float:
        a = a_up(dist, x) if upper else _a_low(dist, x)
        return a + lf * (1 - a)  # = 1 − (1 − a)(1 − lf), without cancellation

    hi = max(dist.top, 0.0) * (1 + 1e-15) + 1e-300
    if delta_at(0.0) <= t:
        return 0.0
    if delta_at(hi) > t:  # pragma: no cover - A(top) = 0, so only D could exceed t (checked by callers)
        return hi
    root = float(brentq(lambda x: delta_at(x) - t, 0.0, hi, xtol=1e-15 * hi, rtol=1e-15, maxiter=300))
    # brentq's answer is within 1e-15 relative: step to the correct side of the threshold
    x = root
    for _ in range(400):
        ok = delta_at(x) <= t
        if upper and ok:
            return x
        if not upper and not ok:
            return x
        step = max(abs(x) * 1e-15, 1e-300)
        x = min(hi, x + step) if upper else max(0.0, x - step)
        if not upper and x == 0.0:
            return 0.0
    return hi if upper else 0.0


def _certify(dist: Loss, lost: Fraction, target: Fraction, x: float) -> Fraction:
    """Move ``x`` up until the rigorous δ bound at x is ≤ target; return it exactly."""
    for _ in range(200):
        if _combine(a_up(dist, x), lost) <= target:
            return Fraction(x)
        x = math.nextafter(x, math.inf) if x else 5e-324
        x = x * (1 + 1e-13)
    raise AssertionError("could not certify the root")  # pragma: no cover


def optimal_epsilon_bounds(
    epsilons: Sequence[Number],
    deltas: Sequence[Number] | None,
    delta: Number,
    *,
    tolerance: Number = 1e-9,
) -> tuple[Fraction, Fraction]:
    """Certified ``(lower, upper)`` bounds on the least ε_g at δ_g (see :func:`optimal_epsilon`).

    Source: Kairouz–Oh–Viswanath 2015 Thm 3.3; Murtagh–Vadhan 2016 Thm 1.5.

    Examples:
        >>> lo, hi = optimal_epsilon_bounds([0.1] * 100, None, 1e-6)
        >>> float(lo) <= 4.774567588107985 <= float(hi)
        True
    """
    return _epsilon_bounds(epsilons, deltas, delta, tolerance, need_lower=True)


def _epsilon_bounds(
    epsilons: Sequence[Number],
    deltas: Sequence[Number] | None,
    delta: Number,
    tolerance: Number,
    need_lower: bool,
) -> tuple[Fraction, Fraction]:
    key, total, lost_dn, lost = _inputs(epsilons, deltas)
    target = probability(delta, "delta")
    tol = _check_tolerance(tolerance)
    if lost > target:
        raise InvalidParameter(
            f"delta={delta!r} must be at least 1 − Π(1 − deltas[i]) ≤ {format_up(lost)}: "
            "no ε_g reaches a smaller δ_g"
        )
    if not key:
        return ZERO, ZERO
    if _beyond_floats(key):
        return ZERO, total

    def upper(dist: Loss) -> Fraction:
        return min(total, _certify(dist, lost, target, _least_eps(dist, lost, target, True)))

    def lower(dist: Loss) -> Fraction:
        return Fraction(_least_eps(dist, lost_dn, target, False))

    return _interval(key, tol, upper, lower, need_lower)


def optimal_epsilon(
    epsilons: Sequence[Number],
    deltas: Sequence[Number] | None,
    delta: Number,
    *,
    tolerance: Number = 1e-9,
) -> Fraction:
    """The least ε_g such that the composition of (εᵢ, δᵢ)-DP mechanisms is (ε_g, δ_g)-DP.

    Root-finds ε_g in :func:`optimal_delta`'s bound (bisection to float resolution, then the root is
    certified with the rigorous bound), and never returns more than Σ εᵢ. The result ε satisfies
    ``optimal_delta(…, ε) ≤ δ_g``, so it is never below the exact optimum.

    Source: Kairouz, Oh, Viswanath 2015 Thm 3.3 (homogeneous); Murtagh, Vadhan 2016 Thm 1.5
    (heterogeneous).

    Args:
        epsilons: the εᵢ ≥ 0.
        deltas: the δᵢ ∈ [0, 1) (``None``: all zero).
        delta: the target δ_g ∈ [0, 1); it must be at least ``1 − Π(1 − δᵢ)``.
        tolerance: target relative gap for the grid method (keyword only).

    Raises:
        InvalidParameter: bad inputs, or δ_g below ``1 − Π(1 − δᵢ)``.

    Examples:
        >>> float(optimal_epsilon([0.1] * 100, None, 1e-6))
        4.7745675881...
        >>> optimal_epsilon([0.5, 0.25], None, 0)
        Fraction(3, 4)
    """
    return _epsilon_bounds(epsilons, deltas, delta, tolerance, need_lower=False)[1]
