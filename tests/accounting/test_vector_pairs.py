"""The vector discrete Gaussian's dominating pair (accounting/_vector_pairs.py), against exact enumeration.

The true pair is P = D_{Z^d}(0, s²I) against Q = P(· − u) for an integer shift u. Its privacy loss is
(‖u‖² − 2⟨u, z⟩)/2s², a function of the integer T = ⟨u, z⟩, so δ(ε) = E_P[(1 − e^{ε − L})₊] is a sum over the
law of T (a convolution of the coordinates' laws of u_i·z_i), computed at 40 digits on a box around the
mass; the P-mass outside the box is added, so the value used is an upper bound on the true δ(ε). The
certified δ of the reported pair (PrivacyLoss.delta, an upper bound) must never be below it. Small s are
used on purpose: there the ripple η is large (up to 0.4) and the enumeration shows it is needed.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from fractions import Fraction

import mpmath
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dpcompose.accounting import PrivacyLoss
from dpcompose.accounting._exact import sqrt_up_q
from dpcompose.accounting._vector_pairs import (
    MAX_INFLATION,
    PI2_DOWN,
    RIPPLE_TARGETS,
    vector_discrete_gaussian_loss,
    vector_discrete_laplace_loss,
    vector_gaussian_bound,
    vector_shift_dims,
)
from dpcompose.errors import UnsupportedComposition

MP_DPS = 40

EPSILONS = (Fraction(0), Fraction(1, 4), Fraction(1, 2), Fraction(1), Fraction(2), Fraction(3))


def _mp(x: Fraction) -> mpmath.mpf:
    return mpmath.mpf(x.numerator) / x.denominator


def _pmf(s: Fraction, k: int) -> dict[int, mpmath.mpf]:
    """D_{Z, s} on [−k, k] (exact normaliser: Jacobi θ₃)."""
    q = mpmath.exp(-1 / (2 * _mp(s) ** 2))
    z = mpmath.jtheta(3, 0, q)
    return {j: q ** (j * j) / z for j in range(-k, k + 1)}


def _law_of_t(u: tuple[int, ...], s: Fraction) -> tuple[dict[int, mpmath.mpf], mpmath.mpf]:
    """The law of T = ⟨u, z⟩ under P on the box |z_i| ≤ k, and the P-mass outside the box."""
    k = math.ceil(12 * s) + 4
    one = _pmf(s, k)
    inside = mpmath.fsum(one.values())
    law: dict[int, mpmath.mpf] = {0: mpmath.mpf(1)}
    outside = mpmath.mpf(0)
    for ui in u:
        if ui == 0:
            continue
        outside += 1 - inside
        nxt: dict[int, mpmath.mpf] = defaultdict(lambda: mpmath.mpf(0))
        for t, pt in law.items():
            for j, pj in one.items():
                nxt[t + ui * j] += pt * pj
        law = nxt
    return law, outside


def _true_delta(
    u: tuple[int, ...], s: Fraction, eps: Fraction, sub: tuple[Fraction, bool] | None = None
) -> mpmath.mpf:
    """An upper bound (box mass added) on δ(ε) of (P, Q); with ``sub = (q, reverse)`` of the Poisson-
    subsampled pair ((1 − q)Q + qP, Q), or its reverse (Q, (1 − q)Q + qP)."""
    law, outside = _law_of_t(u, s)
    n2 = sum(x * x for x in u)
    s2 = _mp(s) ** 2
    e = mpmath.exp(_mp(eps))
    total = mpmath.mpf(0)
    for t, p in law.items():
        qmass = p * mpmath.exp((2 * t - n2) / (2 * s2))  # Q(z) = P(z)·e^{−L}, L = (‖u‖² − 2t)/2s²
        if sub is None:
            a, b = p, qmass
        else:
            rate, reverse = _mp(sub[0]), sub[1]
            mix = (1 - rate) * qmass + rate * p
            a, b = (qmass, mix) if reverse else (mix, qmass)
        total += max(mpmath.mpf(0), a - e * b)
    return total + (1 + e) * outside  # the box misses at most this much of either term


def _certified(mu: Fraction, eta: Fraction, eps: Fraction, rate: Fraction | None = None) -> Fraction:
    pair = PrivacyLoss.compose([PrivacyLoss.gaussian(mu, 1), PrivacyLoss.approx(0, eta)])
    if rate is not None:
        pair = PrivacyLoss.subsampled(pair, rate)
    return pair.delta(eps)


shifts_2d = st.tuples(st.integers(-3, 3), st.integers(-3, 3)).filter(any)
shifts_3d = st.tuples(st.integers(-2, 2), st.integers(-2, 2), st.integers(-2, 2)).filter(any)
small_s = st.sampled_from([Fraction(1, 2), Fraction(3, 4), Fraction(1), Fraction(3, 2)])
tau_factor = st.sampled_from([Fraction(1, 4), Fraction(1, 2), Fraction(1), Fraction(2)])


def _bound(u: tuple[int, ...], s: Fraction, factor: Fraction) -> tuple[Fraction, Fraction]:
    shift = sqrt_up_q(sum(x * x for x in u))
    return vector_gaussian_bound(shift, s, vector_shift_dims(shift, len(u)), factor * s * s)


def _check(u: tuple[int, ...], s: Fraction, factor: Fraction, epsilons: tuple[Fraction, ...]) -> None:
    mu, eta = _bound(u, s, factor)
    assume(eta < 1)  # (η = 1 is a vacuous bound: no pair)
    for eps in epsilons:
        assert _true_delta(u, s, eps) <= _mp(_certified(mu, eta, eps)), (u, s, factor, eps)


@settings(max_examples=6)
@given(u=shifts_2d, s=small_s, factor=tau_factor)
def test_two_dimensions_never_exceed_the_certified_pair(
    u: tuple[int, int], s: Fraction, factor: Fraction
) -> None:
    _check(u, s, factor, EPSILONS[::2])


@settings(max_examples=3)
@given(u=shifts_3d, s=st.sampled_from([Fraction(1, 2), Fraction(1)]), factor=tau_factor)
def test_three_dimensions_never_exceed_the_certified_pair(
    u: tuple[int, int, int], s: Fraction, factor: Fraction
) -> None:
    _check(u, s, factor, EPSILONS[1::2])


@pytest.mark.slow
@settings(max_examples=80)
@given(u=st.one_of(shifts_2d, shifts_3d), s=small_s, factor=tau_factor)
def test_many_shifts_never_exceed_the_certified_pair(
    u: tuple[int, ...], s: Fraction, factor: Fraction
) -> None:
    _check(u, s, factor, EPSILONS)


def test_the_enumeration_can_fail() -> None:
    """At s = 1/2 the discrete pair is less private than the Gaussian with μ = D/s (the scalar reading a
    rotation-invariant noise would give), and at ε = 0 than the Gaussian part μ′ alone: only η covers it."""
    s = Fraction(1, 2)
    naive = PrivacyLoss.gaussian(sqrt_up_q(2) / s, 1)
    assert _true_delta((1, 1), s, Fraction(1)) > _mp(naive.delta(1))
    mu, eta = _bound((1, 0), s, Fraction(1, 2))
    true = _true_delta((1, 0), s, Fraction(0))
    assert true > _mp(PrivacyLoss.gaussian(mu, 1).delta(0))
    assert true <= _mp(_certified(mu, eta, Fraction(0)))


@pytest.mark.parametrize(("s", "tau2"), [(Fraction(1, 2), Fraction(1, 4)), (Fraction(1), Fraction(3))])
def test_poisson_summation_and_the_ripple_bound(s: Fraction, tau2: Fraction) -> None:
    """ν = D_{Z,s} ∗ N(0, τ²) equals N(0, S²)·(1 + 2Σ e^{−2π²j²σ*²}cos(2πjy s²/S²))/(1 + 2Σ e^{−2π²j²s²})
    (step 3 of the proof), and ν/N(0, S²) ≥ 1 − η(d′ = 1) everywhere (the bound the code computes)."""
    s_, t_ = _mp(s), _mp(tau2)
    big = s_**2 + t_
    star = s_**2 * t_ / big
    _, eta = vector_gaussian_bound(Fraction(1), s, 1, tau2)
    zs = mpmath.jtheta(3, 0, mpmath.exp(-1 / (2 * s_**2)))
    den = 1 + 2 * mpmath.nsum(lambda j: mpmath.exp(-2 * mpmath.pi**2 * j**2 * s_**2), [1, mpmath.inf])
    for y in mpmath.linspace(-4 * mpmath.sqrt(big), 4 * mpmath.sqrt(big), 17):
        direct = (
            mpmath.nsum(
                lambda k, y=y: mpmath.exp(-(k**2) / (2 * s_**2)) * mpmath.npdf(y, k, mpmath.sqrt(t_)),
                [-mpmath.inf, mpmath.inf],
            )
            / zs
        )
        num = 1 + 2 * mpmath.nsum(
            lambda j, y=y: (
                mpmath.exp(-2 * mpmath.pi**2 * j**2 * star) * mpmath.cos(2 * mpmath.pi * j * y * s_**2 / big)
            ),
            [1, mpmath.inf],
        )
        normal = mpmath.npdf(y, 0, mpmath.sqrt(big))
        assert abs(direct - normal * num / den) <= mpmath.mpf(10) ** -30 * normal
        assert direct / normal >= 1 - _mp(eta)


def test_the_chosen_pair_at_the_float_grids_scale() -> None:
    """At s = 2**20 grid units (σ on the secure float grid) μ′ exceeds D/s by less than 1e-11 and η is
    below 2**-100 for a million coordinates; a small s is refused (None)."""
    s = Fraction(2**20)
    shift = Fraction(2**20) + 1000
    pair = vector_discrete_gaussian_loss(shift, s, 10**6)
    assert pair is not None
    parts = {p.kind: p for p, _ in pair.parts}
    mu = parts["gaussian"].params[0]
    assert isinstance(mu, Fraction)
    assert shift / s <= mu < shift / s * (1 + Fraction(1, 10**11))
    eta = parts["approx"].params[1]
    assert isinstance(eta, Fraction) and 0 < eta <= RIPPLE_TARGETS[0]
    assert vector_discrete_gaussian_loss(Fraction(3), Fraction(10), 9) is None
    assert vector_discrete_gaussian_loss(Fraction(0), Fraction(10), 9) == PrivacyLoss.approx(0, 0)
    small = vector_discrete_gaussian_loss(Fraction(3), Fraction(60), 9)  # a larger η target fits here
    assert small is not None
    small_mu = {p.kind: p for p, _ in small.parts}["gaussian"].params[0]
    assert isinstance(small_mu, Fraction) and small_mu <= Fraction(3, 60) * (1 + MAX_INFLATION)


def _parts(pair: PrivacyLoss | None) -> tuple[Fraction, Fraction] | None:
    """(μ′, η) of a reported vector pair, or None."""
    if pair is None:
        return None
    kinds = {p.kind: p for p, _ in pair.parts}
    mu, eta = kinds["gaussian"].params[0], kinds["approx"].params[1]
    assert isinstance(mu, Fraction) and isinstance(eta, Fraction)
    return mu, eta


def _ripple(shift: Fraction, s: Fraction, dims: int, target: Fraction) -> Fraction:
    """The proven ripple bound at the τ² that vector_discrete_gaussian_loss uses for ``target``."""
    need = Fraction((math.log(4 * dims) + math.log(float(1 / target)) + 1) / (2 * float(PI2_DOWN)))
    tau2 = Fraction(math.ceil(s * s * need / (s * s - need) * 2**10), 2**10)
    return vector_gaussian_bound(shift, s, dims, tau2)[1]


def test_the_reported_eta_is_the_target_and_bounds_the_ripple() -> None:
    """η is the first target that fits, never below the proven ripple bound at the τ² used (which is
    about target/e), and μ′ stays within MAX_INFLATION of D/s."""
    for s, dims in [(Fraction(2**20), 3), (Fraction(2**20 + 12345), 10**6), (Fraction(60), 9)]:
        shift = 3 * s / 2
        got = _parts(vector_discrete_gaussian_loss(shift, s, dims))
        assert got is not None
        mu, eta = got
        assert eta in RIPPLE_TARGETS
        assert _ripple(shift, s, dims, eta) <= eta
        assert shift / s <= mu <= shift / s * (1 + MAX_INFLATION)
    ripple = _ripple(Fraction(2**20), Fraction(2**20), 3, RIPPLE_TARGETS[0])
    assert RIPPLE_TARGETS[0] / 3 < ripple <= RIPPLE_TARGETS[0]  # about target/e


def test_more_noise_never_reports_a_larger_eta() -> None:
    """The pair of a step with more noise never has a larger η: the pair budgets of
    make_adaptive_sequential compare η part by part. In grid units (σ_g = ⌈σ/g⌉, the grid g doubling at
    each power of two of σ) more noise can mean a *smaller* s — σ = 2 is s = 2**20, σ = 1.1 is
    s ≈ 1.1·2**20 — and the ripple bound is then larger (2.8789783848e-31 against 2.8789783847e-31 at
    three coordinates), which is why the target is reported; the target is the same at every s on the float
    grid, and where it moves (small s) it never rises with s nor falls as dims rises."""
    shift = Fraction(2**21)
    assert _ripple(shift, Fraction(2**20), 3, RIPPLE_TARGETS[0]) > _ripple(
        shift, Fraction(math.ceil(1.1 * 2**20)), 3, RIPPLE_TARGETS[0]
    )
    for s in [Fraction(2**20 + k * 26_171) for k in range(41)]:  # the float grid's s, 2**20 to 2**21
        got = _parts(vector_discrete_gaussian_loss(shift, s, 3))
        assert got is not None and got[1] == RIPPLE_TARGETS[0]
    for dims in (1, 4, 9, 30):
        etas = [
            _parts(vector_discrete_gaussian_loss(Fraction(3), Fraction(s, 4), dims)) for s in range(80, 400)
        ]
        seen = [e[1] if e is not None else Fraction(2) for e in etas]  # (None: no pair, above every η)
        assert all(b <= a for a, b in itertools.pairwise(seen)), dims
        assert len(set(seen)) >= 3, dims  # the scan crosses the targets
    for s in (Fraction(40), Fraction(55), Fraction(90)):
        by_dims = [_parts(vector_discrete_gaussian_loss(Fraction(3), s, d)) for d in range(1, 60)]
        seen = [e[1] if e is not None else Fraction(2) for e in by_dims]
        assert all(b >= a for a, b in itertools.pairwise(seen)), s


def test_the_number_of_moved_coordinates() -> None:
    assert vector_shift_dims(Fraction(3, 2), None) == 2
    assert vector_shift_dims(Fraction(10), 5) == 5
    assert vector_shift_dims(Fraction(99, 100), None) == 0


# -- subsampling a flagged pair (PrivacyLoss.subsampled of compose([X, approx(0, η)])) -------------------


def test_subsampled_flagged_pair_is_the_subsampled_pair_with_the_flag() -> None:
    g = PrivacyLoss.gaussian(Fraction(3, 2), 1)
    flag = PrivacyLoss.approx(0, Fraction(1, 10**6))
    child = PrivacyLoss.compose([g, flag, flag])
    for sampling in ("poisson", "without_replacement"):
        got = PrivacyLoss.subsampled(child, Fraction(1, 10), sampling)
        want = PrivacyLoss.compose(
            [PrivacyLoss.subsampled(g, Fraction(1, 10), sampling), PrivacyLoss.approx(0, Fraction(2, 10**6))]
        )
        assert got == want
    with pytest.raises(UnsupportedComposition):
        PrivacyLoss.subsampled(PrivacyLoss.compose([g, g]), Fraction(1, 10))
    with pytest.raises(UnsupportedComposition):  # η summed to 1 or more: no pair
        PrivacyLoss.subsampled(PrivacyLoss.compose([g, PrivacyLoss.approx(0, Fraction(1, 2))] * 2), 0.5)
    with pytest.raises(UnsupportedComposition):  # two pairs besides the flags
        PrivacyLoss.subsampled(PrivacyLoss.compose([g, PrivacyLoss.laplace(1, 1), flag]), 0.5)


def _check_subsampled(u: tuple[int, ...], s: Fraction, factor: Fraction, rate: Fraction) -> None:
    mu, eta = _bound(u, s, factor)
    if not (eta < 1 and mu <= 8):  # (the subsampled Gaussian PLD takes μ ≤ 8)
        assume(False)
    child = PrivacyLoss.compose([PrivacyLoss.gaussian(mu, 1), PrivacyLoss.approx(0, eta)])
    poisson = PrivacyLoss.subsampled(child, rate)
    wor = PrivacyLoss.subsampled(child, rate, "without_replacement")
    for eps in (Fraction(0), Fraction(1, 2), Fraction(3, 2)):
        forward = _true_delta(u, s, eps, (rate, False))  # one record removed
        backward = _true_delta(u, s, eps, (rate, True))  # one record added
        assert max(forward, backward) <= _mp(poisson.delta(eps)), (u, s, factor, rate, eps)
        assert forward <= _mp(wor.delta(eps)), (u, s, factor, rate, eps)  # the α ≥ 1 bound (Prop. 30)


def test_subsampled_enumeration_can_fail() -> None:
    """Subsampled at q = 1/2, the s = 1/2 pair exceeds the subsampled Gaussian part alone at ε = 0 (so
    the flag must be carried through the subsampling), and not the reported pair."""
    u, s, rate = (1, 0), Fraction(1, 2), Fraction(1, 2)
    mu, eta = _bound(u, s, Fraction(1, 2))
    true = max(_true_delta(u, s, Fraction(0), (rate, False)), _true_delta(u, s, Fraction(0), (rate, True)))
    assert true > _mp(PrivacyLoss.subsampled(PrivacyLoss.gaussian(mu, 1), rate).delta(0))
    assert eta < 1 and mu <= 8
    _check_subsampled(u, s, Fraction(1, 2), rate)


@settings(max_examples=2)
@given(u=shifts_2d, s=small_s, factor=tau_factor, rate=st.sampled_from([Fraction(1, 10), Fraction(1, 2)]))
def test_subsampled_two_dimensions_never_exceed_the_certified_pair(
    u: tuple[int, int], s: Fraction, factor: Fraction, rate: Fraction
) -> None:
    _check_subsampled(u, s, factor, rate)


@pytest.mark.slow
@settings(max_examples=60)
@given(
    u=st.one_of(shifts_2d, shifts_3d),
    s=small_s,
    factor=tau_factor,
    rate=st.sampled_from([Fraction(1, 100), Fraction(1, 10), Fraction(1, 2), Fraction(9, 10)]),
)
def test_subsampled_many_shifts_never_exceed_the_certified_pair(
    u: tuple[int, ...], s: Fraction, factor: Fraction, rate: Fraction
) -> None:
    _check_subsampled(u, s, factor, rate)


# -- the discrete Laplace under an L1 bound ----------------------------------------------------------------


def _dlap_delta(u: tuple[int, ...], t: Fraction, eps: Fraction) -> mpmath.mpf:
    """An upper bound (box mass added) on δ(ε) of DL_t^{⊗d} against its shift by u, exactly: the loss is
    Σ(|z_i − u_i| − |z_i|)/t, grouped by its integer numerator."""
    r = mpmath.exp(-1 / _mp(t))
    c = (1 - r) / (1 + r)
    k = math.ceil(60 * t) + 8
    law: dict[int, mpmath.mpf] = {0: mpmath.mpf(1)}
    outside = mpmath.mpf(0)
    for ui in u:
        if ui == 0:
            continue
        span = range(-k, k + abs(ui) + 1)
        inside = mpmath.mpf(0)
        nxt: dict[int, mpmath.mpf] = defaultdict(lambda: mpmath.mpf(0))
        for z in span:
            pz = c * r ** abs(z)
            inside += pz
            step = abs(z - abs(ui)) - abs(z)
            for s, ps in law.items():
                nxt[s + step] += ps * pz
        law = nxt
        outside += 1 - inside
    e = mpmath.exp(_mp(eps))
    total = mpmath.fsum(  # (a loss at or below ε contributes exactly 0: decided in rationals)
        p * (1 - e * mpmath.exp(-s / _mp(t))) for s, p in law.items() if Fraction(s) / t > eps
    )
    if eps >= sum(abs(x) for x in u) / t:
        return total  # (0: no loss exceeds Σ|u_i|/t, in the box or outside it)
    return total + outside  # δ = E_P[(1 − e^{ε − L})₊]: the outside adds at most its P-mass


LAPLACE_EPSILONS = (Fraction(0), Fraction(1, 3), Fraction(1), Fraction(2), Fraction(4))
scales = st.sampled_from([Fraction(1, 2), Fraction(1), Fraction(3, 2), Fraction(3)])


def _check_laplace(u: tuple[int, ...], t: Fraction) -> None:
    shift = sum(abs(x) for x in u)
    pair = vector_discrete_laplace_loss(Fraction(shift), t)
    assert pair == PrivacyLoss.discrete_laplace(shift, t)
    for eps in LAPLACE_EPSILONS:
        assert _dlap_delta(u, t, eps) <= _mp(pair.delta(eps)), (u, t, eps)


@settings(max_examples=8)
@given(u=st.one_of(shifts_2d, shifts_3d), t=scales)
def test_discrete_laplace_vectors_never_exceed_the_one_dimensional_pair(
    u: tuple[int, ...], t: Fraction
) -> None:
    _check_laplace(u, t)


@pytest.mark.slow
@settings(max_examples=100)
@given(
    u=st.lists(st.integers(-4, 4), min_size=2, max_size=4).map(tuple).filter(any),
    t=st.sampled_from([Fraction(1, 4), Fraction(1, 2), Fraction(1), Fraction(2), Fraction(5)]),
)
def test_many_discrete_laplace_vectors(u: tuple[int, ...], t: Fraction) -> None:
    _check_laplace(u, t)


def test_the_laplace_enumeration_can_fail() -> None:
    """A shift smaller than Σ|u_i| is exceeded (so the enumeration can fail): (2, 1) at t = 1 has
    δ(2) = 0.3378 where the shift-2 pair has 0, and the shift-3 pair 0.4621."""
    t = Fraction(1)
    true = _dlap_delta((2, 1), t, Fraction(2))
    assert true > _mp(PrivacyLoss.discrete_laplace(2, t).delta(2))
    assert true <= _mp(PrivacyLoss.discrete_laplace(3, t).delta(2))


@pytest.mark.parametrize(("a", "c"), [(1, 1), (1, 3), (2, 2), (2, 5), (3, 4)])
@pytest.mark.parametrize("t", [Fraction(1, 3), Fraction(2)])
def test_the_laplace_tail_ratio(a: int, c: int, t: Fraction) -> None:
    """Step 4: R(j) = P(X_a + X_c ≥ j)/P(S_D ≥ j) has the closed forms of the proof (a ≤ c)."""
    r = mpmath.exp(-1 / _mp(t))
    p0 = 1 / (1 + r)

    def law(n: int) -> dict[int, mpmath.mpf]:
        return {k: (p0 if k == 0 else p0 * r**n if k == n else p0 * (1 - r) * r**k) for k in range(n + 1)}

    la, lc = law(a), law(c)
    d = a + c
    for j in range(1, d + 1):
        tail = mpmath.fsum(pa * pc for ka, pa in la.items() for kc, pc in lc.items() if ka + kc >= j)
        ratio = tail / (p0 * r**j)
        if j <= a:
            want = 1 + p0 * (1 + (j - 1) * (1 - r))
        elif j <= c:
            want = p0 * (2 + (a - 1) * (1 - r))
        else:
            want = p0 * (1 + (d - j) * (1 - r))
        assert abs(ratio - want) < mpmath.mpf(10) ** -30
