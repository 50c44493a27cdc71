"""PrivacyProfile with dominating pairs (``loss`` parts), against exact enumeration at 40 digits.

The pairs are finite (k-ary randomized response, discrete Laplace at an integer shift, RR_(ε,δ)), so the
composite's exact δ(ε) is a finite sum; a Gaussian part adds its closed form at every atom, and a ρ part is
checked against one ρ-zCDP mechanism, the Gaussian with μ² = 2ρ (the profile must hold for every ρ-zCDP
mechanism, so in particular for it). Every answer must be at least the exact value, and, where the profile
also knows the old description of the same mechanisms (``with_loss``), at most the old answer.
"""

from __future__ import annotations

import math
from collections import defaultdict
from fractions import Fraction

import mpmath
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dpcompose.accounting import PrivacyLoss, PrivacyProfile, gaussian_profile
from dpcompose.errors import InvalidParameter, UnsupportedComposition
from exact_pairs import dlap_atoms as _dlap_atoms
from exact_pairs import rr_atoms as _rr_atoms

MP_DPS = 40

Atoms = dict[Fraction, mpmath.mpf]  # finite loss -> P-mass; the mass at +∞ is kept apart


def _mp(x: Fraction | float | mpmath.mpf) -> mpmath.mpf:
    if isinstance(x, Fraction):
        return mpmath.mpf(x.numerator) / x.denominator
    return mpmath.mpf(x)


def _approx_atoms(eps: Fraction, delta: Fraction) -> tuple[Atoms, mpmath.mpf]:
    """RR_(ε,δ): P puts δ on an output Q never gives (loss +∞), the rest as RR_ε."""
    rest = _rr_atoms(eps, 2)
    keep = 1 - _mp(delta)
    return {a: p * keep for a, p in rest.items()}, _mp(delta)


def _convolve(parts: list[tuple[Atoms, mpmath.mpf]]) -> tuple[Atoms, mpmath.mpf]:
    out: Atoms = {Fraction(0): mpmath.mpf(1)}
    finite = mpmath.mpf(1)  # P-mass of "no part at +∞"
    for atoms, inf in parts:
        nxt: Atoms = defaultdict(lambda: mpmath.mpf(0))
        for a, pa in out.items():
            for b, pb in atoms.items():
                nxt[a + b] += pa * pb
        out = nxt
        finite *= 1 - inf
    return out, 1 - finite


def _gauss_delta(mu_sq: mpmath.mpf, x: mpmath.mpf) -> mpmath.mpf:
    """δ of the Gaussian pair with μ² = mu_sq at any real x (negative too); μ = 0: (1 − e^x)₊."""
    if mu_sq == 0:
        return max(mpmath.mpf(0), -mpmath.expm1(x))
    mu = mpmath.sqrt(mu_sq)
    return mpmath.ncdf(mu / 2 - x / mu) - mpmath.exp(x) * mpmath.ncdf(-mu / 2 - x / mu)


def _exact_delta(atoms: Atoms, inf: mpmath.mpf, mu_sq: mpmath.mpf, eps: Fraction | mpmath.mpf) -> mpmath.mpf:
    """δ(ε) = P(+∞) + Σ_a P(a)·δ_G(ε − a) (the atoms' masses already exclude the mass at +∞)."""
    e = _mp(eps)
    return inf + mpmath.fsum(p * _gauss_delta(mu_sq, e - _mp(a)) for a, p in atoms.items())


_PAIR = st.one_of(
    st.tuples(
        st.just("rr"),
        st.sampled_from([Fraction(3, 10), Fraction(7, 10), Fraction(6, 5)]),
        st.sampled_from([2, 3, 5]),
    ),
    st.tuples(
        st.just("dlap"), st.sampled_from([Fraction(1, 2), Fraction(3, 4), Fraction(3)]), st.integers(1, 2)
    ),
)


def _pair(spec: tuple[str, Fraction, int]) -> tuple[PrivacyLoss, PrivacyProfile, Atoms]:
    """(the pair, the mechanism's ε-DP profile, the pair's loss atoms)."""
    kind, x, n = spec
    if kind == "rr":
        return PrivacyLoss.randomized_response(x, n), PrivacyProfile.pure(x), _rr_atoms(x, n)
    return PrivacyLoss.discrete_laplace(n, x), PrivacyProfile.pure(n / x), _dlap_atoms(n, x)


def _check(
    specs: list[tuple[str, Fraction, int]],
    approx: tuple[Fraction, Fraction] | None,
    mu_sq: Fraction,
    rho: Fraction,
    delta: float,
) -> None:
    pairs = [_pair(s) for s in specs]
    extra: list[PrivacyProfile] = []
    parts: list[tuple[Atoms, mpmath.mpf]] = [(atoms, mpmath.mpf(0)) for _, _, atoms in pairs]
    if approx is not None:
        extra.append(PrivacyProfile.approx(*approx))
        parts.append(_approx_atoms(*approx))
    if mu_sq:
        extra.append(PrivacyProfile(gaussian_mu_sq=mu_sq))
    if rho:
        extra.append(PrivacyProfile.zcdp(rho))
    ours = PrivacyProfile.compose([old.with_loss(loss) for loss, old, _ in pairs] + extra)
    pairs_only = PrivacyProfile.compose([PrivacyProfile.from_loss(loss) for loss, _, _ in pairs] + extra)
    old = PrivacyProfile.compose([o for _, o, _ in pairs] + extra)
    generic = ours.generic()  # the old description, its (ε, δ) parts perhaps in another order
    assert generic is not None and sorted(generic.approx_parts) == sorted(old.approx_parts)
    assert (generic.gaussian_mu_sq, generic.rho, generic.loss) == (old.gaussian_mu_sq, old.rho, None)
    atoms, inf = _convolve(parts)
    g = _mp(mu_sq) + 2 * _mp(rho)  # the Gaussian part, and the Gaussian that is exactly ρ-zCDP
    target = Fraction(str(delta))
    for profile in (ours, pairs_only):
        eps = profile.epsilon(target)
        assert _exact_delta(atoms, inf, g, eps) <= _mp(target) * (1 + mpmath.mpf(10) ** -12)
        for at in (Fraction(1, 2), Fraction(2), eps):
            assert _mp(profile.delta(at)) >= _exact_delta(atoms, inf, g, at) * (1 - mpmath.mpf(10) ** -12)
    # never above the old description of the same mechanisms
    try:
        old_eps = old.epsilon(target)
    except InvalidParameter:
        old_eps = None
    if old_eps is not None:
        assert ours.epsilon(target) <= old_eps
    for at in (Fraction(1, 2), Fraction(2)):
        assert ours.delta(at) <= old.delta(at)


_SOME_APPROX = (Fraction(1, 2), Fraction(1, 10**8))
_APPROX = st.one_of(st.none(), st.just(_SOME_APPROX))
_MU_SQ = st.sampled_from([Fraction(0), Fraction(1, 4)])
_RHO = st.sampled_from([Fraction(0), Fraction(1, 20)])


@pytest.mark.slow  # (thorough: the README test command stays under 3 minutes)
@settings(max_examples=8, deadline=None)
@given(st.lists(_PAIR, min_size=1, max_size=3), _APPROX, _MU_SQ, _RHO, st.sampled_from([1e-3, 1e-6]))
@example([("dlap", Fraction(3, 4), 2), ("rr", Fraction(7, 10), 3)], None, Fraction(0), Fraction(1, 20), 1e-3)
@example([("rr", Fraction(6, 5), 5)], _SOME_APPROX, Fraction(1, 4), Fraction(1, 20), 1e-6)
def test_pairs_never_below_exact_and_never_above_the_old_profile(
    specs: list[tuple[str, Fraction, int]],
    approx: tuple[Fraction, Fraction] | None,
    mu_sq: Fraction,
    rho: Fraction,
    delta: float,
) -> None:
    _check(specs, approx, mu_sq, rho, delta)


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(st.lists(_PAIR, min_size=1, max_size=4), _APPROX, _MU_SQ, _RHO, st.sampled_from([1e-2, 1e-4, 1e-7]))
def test_pairs_never_below_exact_and_never_above_the_old_profile_thorough(
    specs: list[tuple[str, Fraction, int]],
    approx: tuple[Fraction, Fraction] | None,
    mu_sq: Fraction,
    rho: Fraction,
    delta: float,
) -> None:
    _check(specs, approx, mu_sq, rho, delta)


def _exact_epsilon(atoms: Atoms, delta: float) -> mpmath.mpf:
    lo, hi = mpmath.mpf(0), mpmath.mpf(max(float(a) for a in atoms) + 1)
    for _ in range(60):
        mid = (lo + hi) / 2
        if _exact_delta(atoms, mpmath.mpf(0), mpmath.mpf(0), mid) > delta:
            lo = mid
        else:
            hi = mid
    return hi


def test_pairs_only_is_tight_against_enumeration() -> None:
    specs = [("rr", Fraction(7, 10), 3)] * 6 + [("dlap", Fraction(3, 4), 2)] * 3
    pairs = [_pair(s) for s in specs]
    p = PrivacyProfile.compose([old.with_loss(loss) for loss, old, _ in pairs])
    atoms, _ = _convolve([(a, mpmath.mpf(0)) for _, _, a in pairs])
    eps = p.epsilon(1e-6)
    exact = _exact_epsilon(atoms, 1e-6)
    assert exact <= _mp(eps) <= exact + 8 * len(specs) * 2.0**-14  # a few lattice steps per mechanism
    old = PrivacyProfile.compose([o for _, o, _ in pairs])
    assert eps < old.epsilon(1e-6)  # k-ary RR and discrete Laplace are tighter than their ε


def test_laplace_composition_before_and_after() -> None:
    one = PrivacyProfile.pure(Fraction(1, 10)).with_loss(PrivacyLoss.laplace(1, 10))
    many = PrivacyProfile.compose([one] * 100)
    old = PrivacyProfile.compose([PrivacyProfile.pure(Fraction(1, 10))] * 100)
    assert many.generic() == old
    after, before = many.epsilon(1e-6), old.epsilon(1e-6)
    assert 4.69 < after < 4.70 < 4.77 < before < 4.78
    assert many.epsilon(1e-6) == PrivacyLoss.compose([PrivacyLoss.laplace(1, 10)] * 100).epsilon(1e-6)


def test_at_delta_zero_the_old_description_wins() -> None:
    # one Laplace at δ = 0: the pair's PLD reads ε on a lattice, the ε-DP profile exactly
    p = PrivacyProfile.pure(Fraction(1, 3)).with_loss(PrivacyLoss.laplace(1, 3))
    assert p.epsilon(0) == Fraction(1, 3)
    assert PrivacyProfile.from_loss(PrivacyLoss.laplace(1, 3)).epsilon(0) >= Fraction(1, 3)


def test_gaussian_and_rho_parts_without_pairs_now_answer() -> None:
    # a Gaussian part and a ρ part (no (ε, δ) part) used to raise: the split gave the Gaussian a δ of 0
    p = PrivacyProfile.compose([gaussian_profile(1, 2), PrivacyProfile.zcdp(Fraction(1, 100))])
    eps = p.epsilon(1e-5)
    assert p.delta(eps) <= Fraction(1, 10**5)
    with mpmath.workdps(40):  # the ρ part as the Gaussian with μ² = 2ρ: μ² = 1/4 + 1/50 in all
        assert _exact_delta({Fraction(0): mpmath.mpf(1)}, mpmath.mpf(0), _mp(Fraction(27, 100)), eps) <= 1e-5
    assert eps < gaussian_profile(1, 2).epsilon(5e-6) + PrivacyProfile.zcdp(Fraction(1, 100)).epsilon(5e-6)


def test_a_pair_the_pld_cannot_build_falls_back_or_refuses() -> None:
    huge = PrivacyLoss.discrete_laplace(1000, 1)  # Δ/t = 1000: beyond the PLD constructors' range
    with pytest.raises(InvalidParameter):
        PrivacyProfile.from_loss(huge).epsilon(1e-6)
    p = PrivacyProfile.pure(1000).with_loss(huge)
    assert p.epsilon(1e-6) == PrivacyProfile.pure(1000).epsilon(1e-6)
    # with a ρ part too: building the pld route is refused, and the generic route still answers
    q = PrivacyProfile.compose([p, PrivacyProfile.zcdp(Fraction(1, 100))])
    generic = q.generic()
    assert generic is not None
    assert q.epsilon(1e-6) == generic.epsilon(1e-6)
    assert q.delta(1001) == generic.delta(1001)


def test_privacy_loss_views_and_repr() -> None:
    lap = PrivacyLoss.laplace(1, 10)
    p = PrivacyProfile.compose(
        [PrivacyProfile.pure(Fraction(1, 10)).with_loss(lap)] * 3
        + [PrivacyProfile.approx(1, Fraction(1, 10**6)), gaussian_profile(1, 4)]
    )
    whole = p.privacy_loss()
    assert whole == PrivacyLoss.compose(
        [lap] * 3 + [PrivacyLoss.approx(1, Fraction(1, 10**6)), PrivacyLoss.gaussian(Fraction(1, 4), 1)]
    )
    assert PrivacyProfile.compose([p, PrivacyProfile.zcdp(1)]).privacy_loss() is None
    assert PrivacyProfile().privacy_loss() == PrivacyLoss.approx(0, 0)
    assert [name for name, _ in p.routes()] == ["pld", "generic"]
    assert p.pairs_only().loss_fallback is None and p.pairs_only().loss == p.loss
    assert PrivacyProfile.from_loss(lap).generic() is None
    assert [name for name, _ in PrivacyProfile.from_loss(lap).routes()] == ["pld"]
    assert PrivacyProfile.pure(1).routes() == (("generic", PrivacyProfile.pure(1)),)
    text = repr(p)
    assert "pairs=[3 × laplace(Δ=1, b=10)]" in text and "(or approx=[(ε=0.1, δ=0)×3])" in text
    assert hash(p) == hash(PrivacyProfile.compose([p]))  # value semantics survive the new fields
    many = PrivacyProfile.compose([PrivacyProfile.from_loss(PrivacyLoss.laplace(1, k)) for k in range(1, 8)])
    assert "… (7 mechanisms)" in repr(many)
    # a pair already present is not attached twice
    q = PrivacyProfile.from_loss(lap)
    assert q.with_loss(lap) is q
    # a composition where one paired part has no fallback has no generic route
    mixed = PrivacyProfile.compose([PrivacyProfile.pure(1).with_loss(lap), PrivacyProfile.from_loss(lap)])
    assert mixed.loss_fallback is None and mixed.generic() is None


def test_bad_input() -> None:
    with pytest.raises(InvalidParameter, match="loss"):
        PrivacyProfile.from_loss(0.5)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameter, match="loss"):
        PrivacyProfile.pure(1).with_loss("laplace")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameter, match="loss="):
        PrivacyProfile(loss=1.0)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameter, match="loss_fallback"):
        PrivacyProfile(loss_fallback=PrivacyProfile.pure(1))
    with pytest.raises(InvalidParameter, match="loss_fallback"):
        PrivacyProfile(loss=PrivacyLoss.laplace(1, 1), loss_fallback=3)  # type: ignore[arg-type]
    p = PrivacyProfile.from_loss(PrivacyLoss.approx(1, Fraction(1, 1000)))
    with pytest.raises(InvalidParameter, match="delta"):
        p.epsilon(1e-4)  # below the pair's mass at +∞
    with pytest.raises(InvalidParameter, match="epsilon"):
        p.delta(math.nan)


def test_poisson_and_without_replacement_pairs_do_not_compose() -> None:
    """The two samplings' pairs hold for different neighbouring relations (add/remove, substitution), so a
    composition holding both is refused, nested or not (found by review through the account CLI); rates 0
    and 1 assume no relation of their own and compose with either."""
    g = PrivacyLoss.gaussian(1, 1)
    poisson = PrivacyLoss.subsampled(g, Fraction(1, 5))
    wor = PrivacyLoss.subsampled(g, Fraction(1, 100), "without_replacement")
    for parts in ([poisson, wor], [PrivacyLoss.compose([poisson, g]), wor], [g, wor, g, poisson]):
        with pytest.raises(UnsupportedComposition, match="mix Poisson sampling"):
            PrivacyLoss.compose(parts)
    for other in (
        PrivacyLoss.subsampled(g, 1, "without_replacement"),
        PrivacyLoss.subsampled(g, 0, "without_replacement"),
        g,
        poisson,
    ):
        assert PrivacyLoss.compose([poisson, other]).count() == 2
    assert PrivacyLoss.compose([wor, PrivacyLoss.subsampled(g, 1), wor]).count() == 3
