"""PLDs on lattices aligned with a mechanism's atoms (h = mult·2**-bits, ``aligned=True``): the exact index
arithmetic they rely on, their bounds against exact references, and where they are refused."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dpcompose.accounting import (
    PrivacyLoss,
    compose_plds,
    pld_approx,
    pld_discrete_laplace,
    pld_gaussian,
    pld_laplace,
    pld_randomized_response,
)
from dpcompose.accounting._pld import lattice as lattice_mod
from dpcompose.accounting._pld import tilt as tilt_mod
from dpcompose.accounting._pld.lattice import Grid, aligned_grid
from dpcompose.errors import InvalidParameter

from .test_distribution import dlap_atoms, exact_delta, m, rr_atoms

grids = st.builds(Grid, st.integers(1, 45), st.integers(0, 2**19 - 1).map(lambda k: 2 * k + 1))


def _floor_exact(x: float, g: Grid) -> int:
    return math.floor(Fraction(x) / g.exact)


@settings(max_examples=60, deadline=None)  # (300: the thorough twin)
@given(g=grids, j=st.integers(-(2**33), 2**33), frac=st.sampled_from([0, 1e-300, 1e-12, 0.25, 0.5, 0.999999]))
def test_steps_floor_is_exact_near_lattice_points(g: Grid, j: int, frac: float) -> None:
    """``Grid.steps``: ⌊s⌋ = ⌊x/h⌋ exactly and s is an integer exactly where x/h is one, at and just off
    the lattice points, where the rounded quotient x/h would land on the wrong side."""
    for x in (j * g.h + frac * g.h, math.nextafter(j * g.h, -math.inf), math.nextafter(j * g.h, math.inf)):
        assume(math.isfinite(x) and abs(Fraction(x) / g.exact) < 2**52)
        s = g.steps(x)
        q = Fraction(x) / g.exact
        assert math.floor(s) == _floor_exact(x, g)
        assert (s == int(s)) == (q.denominator == 1)
        for n in (math.floor(q) - 1, math.floor(q), math.floor(q) + 1):
            assert (s < n) == (q < n) and (s >= n) == (q >= n)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(g=grids, j=st.integers(-(2**33), 2**33), frac=st.sampled_from([0, 1e-300, 1e-12, 0.25, 0.5, 0.999999]))
def test_steps_floor_is_exact_near_lattice_points_thorough(g: Grid, j: int, frac: float) -> None:
    test_steps_floor_is_exact_near_lattice_points.hypothesis.inner_test(g=g, j=j, frac=frac)


@settings(max_examples=60, deadline=None)  # (200: the thorough twin)
@given(g=grids, x=st.floats(allow_nan=False, allow_infinity=False))
def test_steps_floor_is_exact_anywhere(g: Grid, x: float) -> None:
    s = g.steps(x)
    q = Fraction(x) / g.exact
    if abs(q) < 2**52:
        assert math.floor(s) == math.floor(q)
    else:  # far past every index a PLD holds: only the side matters
        assert math.copysign(1.0, s) == math.copysign(1.0, x) and abs(s) >= 2.0**51


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(g=grids, x=st.floats(allow_nan=False, allow_infinity=False))
def test_steps_floor_is_exact_anywhere_thorough(g: Grid, x: float) -> None:
    test_steps_floor_is_exact_anywhere.hypothesis.inner_test(g=g, x=x)


def test_steps_of_infinite_and_huge_values() -> None:
    g = Grid(27, 8189)
    assert g.steps(math.inf) == math.inf and g.steps(-math.inf) == -math.inf
    assert g.steps(1e308) == math.inf and g.steps(-1e308) == -math.inf
    assert Grid(14).steps(1e308) == math.inf


@settings(max_examples=60, deadline=None)  # (200: the thorough twin)
@given(
    atom=st.fractions(Fraction(1, 10**6), Fraction(50)).filter(lambda a: a > 0),
    bits=st.integers(1, 20),
)
def test_aligned_grid_runs_through_the_atom(atom: Fraction, bits: int) -> None:
    g = aligned_grid(bits, atom)
    assert g.mult % 2 == 1 and g.mult < 2**lattice_mod.MULT_BITS
    assert g.exact <= Fraction(1, 2**bits)
    n = max(1, math.ceil(atom * 2**bits))  # the atom's index: at most atom·2**-19 below n·h
    assert 0 <= n * g.exact - atom < atom * Fraction(1, 2**19)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(
    atom=st.fractions(Fraction(1, 10**6), Fraction(50)).filter(lambda a: a > 0),
    bits=st.integers(1, 20),
)
def test_aligned_grid_runs_through_the_atom_thorough(atom: Fraction, bits: int) -> None:
    test_aligned_grid_runs_through_the_atom.hypothesis.inner_test(atom=atom, bits=bits)


@pytest.mark.parametrize(
    ("k", "eps0"),
    [(k, e) for k in (1, 2, 5) for e in (0.1, 0.7, 1.3)]
    + [(12, 0.1)]
    + [pytest.param(12, e, marks=pytest.mark.slow) for e in (0.7, 1.3)],  # (~0.3 s each)
)
def test_aligned_rr_brackets_exact_and_is_tighter_on_atoms(k: int, eps0: float) -> None:
    aligned = pld_randomized_response(eps0, aligned=True).self_compose(k)
    plain = pld_randomized_response(eps0).self_compose(k)
    assert aligned.step_mult > 1
    for eps in [0.0, 0.3 * k * eps0, 0.6 * k * eps0]:
        lo, hi = aligned.delta_bounds(eps)
        ref = exact_delta(rr_atoms(eps0), k, eps)
        assert m(lo) <= ref <= m(hi), (k, eps0, eps, float(lo), float(ref), float(hi))
        # each atom lies within 2**-19 relative of a lattice point, so the split moves little mass: its
        # effect is largest where ε sits on a composite atom (measured: at most 2.7e-6 relative, at eps0 =
        # 1.3, k = 5, ε = 3.9, where the plain lattice is 3.4e-5 above)
        assert float(hi) <= float(ref) * (1 + 1e-5) + 1e-15
        # never looser than the plain lattice beyond the FFT's float error bound, which is larger where the
        # masses stay on few points (measured: at most 2.4e-9 relative above the plain upper end)
        hi_plain = plain.delta_bounds(eps)[1]
        assert hi <= hi_plain * (1 + Fraction(1, 10**8))
        if k == 2 and eps == 0:  # ε on the composite atom 0, which the plain lattice splits at every step
            # (measured: 1e3 times closer at eps0 = 0.1, 21 times at 1.3)
            assert float(hi) - float(ref) < 0.1 * (float(hi_plain) - float(ref))


@settings(max_examples=5, deadline=None)  # (15: the thorough twin)
@given(eps0=st.floats(0.01, 2.0), k=st.integers(1, 8), frac=st.floats(0.0, 1.0), bits=st.integers(6, 16))
def test_aligned_rr_property(eps0: float, k: int, frac: float, bits: int) -> None:
    pld = pld_randomized_response(eps0, step_bits=bits, aligned=True).self_compose(k)
    eps = frac * k * eps0
    lo, hi = pld.delta_bounds(eps)
    ref = exact_delta(rr_atoms(eps0), k, eps)
    assert m(lo) <= ref <= m(hi)


@pytest.mark.slow
@settings(max_examples=15, deadline=None)
@given(eps0=st.floats(0.01, 2.0), k=st.integers(1, 8), frac=st.floats(0.0, 1.0), bits=st.integers(6, 16))
def test_aligned_rr_property_thorough(eps0: float, k: int, frac: float, bits: int) -> None:
    test_aligned_rr_property.hypothesis.inner_test(eps0=eps0, k=k, frac=frac, bits=bits)


@settings(max_examples=10, deadline=None)
@given(sens=st.integers(1, 4), t=st.floats(0.3, 9.0), k=st.integers(1, 5), frac=st.floats(0.0, 1.0))
def test_aligned_discrete_laplace_brackets_exact(sens: int, t: float, k: int, frac: float) -> None:
    pld = pld_discrete_laplace(sens, t, aligned=True).self_compose(k)
    eps = frac * k * sens / t
    lo, hi = pld.delta_bounds(eps)
    ref = exact_delta(dlap_atoms(sens, t), k, eps)
    assert m(lo) <= ref <= m(hi), (sens, t, k, eps, float(lo), float(ref), float(hi))


def test_aligned_approx_carries_delta_and_epsilon() -> None:
    pld = pld_approx(0.7, 1e-3, aligned=True).self_compose(4)
    for eps in [0.0, 0.7, 2.1]:
        lo, hi = pld.delta_bounds(eps)
        keep = (1 - mpmath.mpf(1e-3)) ** 4
        ref = exact_delta(rr_atoms(0.7), 4, eps) * keep + 1 - keep
        assert m(lo) <= ref <= m(hi)
        assert hi <= pld_approx(0.7, 1e-3).self_compose(4).delta_bounds(eps)[1] * (1 + Fraction(1, 10**8))


@pytest.mark.parametrize("b", [0.7, 2.0, 10.0, 37.5])
def test_aligned_laplace_single_closed_form(b: float) -> None:
    # δ(ε) = 1 − exp((ε − Δ/b)/2) for 0 ≤ ε ≤ Δ/b
    pld = pld_laplace(1, b, aligned=True)
    d = mpmath.mpf(1) / mpmath.mpf(b)
    for frac in (0.0, 0.2, 0.5, 0.9):
        eps = float(frac * d)
        lo, hi = pld.delta_bounds(eps)
        ref = 1 - mpmath.exp((mpmath.mpf(eps) - d) / 2)
        assert m(lo) <= ref <= m(hi), (b, eps)


@settings(max_examples=3, deadline=None)  # (8: the thorough twin)
@given(b=st.floats(3.0, 500.0), k=st.sampled_from([3, 40, 300]), delta=st.sampled_from([1e-3, 1e-6, 1e-9]))
def test_aligned_and_plain_laplace_intervals_overlap(b: float, k: int, delta: float) -> None:
    """Both intervals contain the truth, so they must overlap (neither is the narrower at every δ)."""
    lo_a, hi_a = pld_laplace(1, b, aligned=True).self_compose(k).epsilon_bounds(delta)
    lo_p, hi_p = pld_laplace(1, b).self_compose(k).epsilon_bounds(delta)
    assert max(lo_a, lo_p) <= min(hi_a, hi_p)


@pytest.mark.slow
@settings(max_examples=8, deadline=None)
@given(b=st.floats(3.0, 500.0), k=st.sampled_from([3, 40, 300]), delta=st.sampled_from([1e-3, 1e-6, 1e-9]))
def test_aligned_and_plain_laplace_intervals_overlap_thorough(b: float, k: int, delta: float) -> None:
    test_aligned_and_plain_laplace_intervals_overlap.hypothesis.inner_test(b=b, k=k, delta=delta)


def test_aligned_laplace_is_below_the_plain_lattice_where_its_atoms_are_split() -> None:
    # Δ/b = 1/400 is 40.96 steps of 2**-14: every plain step splits both atoms; the aligned upper end is
    # 8.7e-6 relative lower (measured against dp_accounting's 0.3081909448 and the truth ≈ 0.30819090620)
    lo, hi = pld_laplace(1, 400, aligned=True).self_compose(1000).epsilon_bounds(1e-6)
    _, hi_plain = pld_laplace(1, 400).self_compose(1000).epsilon_bounds(1e-6)
    assert float(lo) <= 0.30819090620 <= float(hi) < 0.3081909448 < float(hi_plain)


def test_a_tiny_atom_keeps_the_plain_lattice() -> None:
    """Found by the bad-input fuzzer: ε = 5e-324 and Δ/b = 1e-308 built lattices of width ~1e-308, which
    overflowed (a raw RuntimeWarning and OverflowError); atoms below 2**-50 keep the plain lattice."""
    assert pld_approx(5e-324, 0, aligned=True).grid == Grid(14)
    assert pld_laplace(1, 1e308, aligned=True).grid == Grid(14)
    assert PrivacyLoss.approx(5e-324, 0).epsilon(1e-6) >= 0
    assert PrivacyLoss.laplace(1, 1e308).epsilon_bounds(1e-6)[1] >= 0
    assert pld_randomized_response(2.0**-50, aligned=True).grid == Grid(50)  # the least atom aligned: h = it


def test_a_dyadic_atom_keeps_the_plain_lattice() -> None:
    assert pld_laplace(1, 8, aligned=True).grid == Grid(14)
    assert pld_randomized_response(0.5, aligned=True).grid == Grid(14)
    assert pld_laplace(0, 3, aligned=True).grid == Grid(14)  # no atom but 0


def test_lattices_that_differ_are_refused_with_advice() -> None:
    a = pld_laplace(1, 10, aligned=True)
    for other in (pld_laplace(1, 10), pld_laplace(1, 7, aligned=True), pld_gaussian(1, 3)):
        with pytest.raises(InvalidParameter, match="aligned=False"):
            a.compose(other)
        with pytest.raises(InvalidParameter, match="aligned=False"):
            compose_plds([a, other])
    assert "h=1048193·2**-34" in repr(a)


def test_a_composition_too_long_for_exact_positions_is_refused() -> None:
    a = pld_laplace(1, 10, aligned=True)
    limit = lattice_mod.EXACT // 2 // a.step_mult // (a.upper.offset + a.upper.masses.size + 1)
    with pytest.raises(InvalidParameter, match="aligned=False"):
        a.self_compose(limit + 1)
    # the PrivacyLoss path falls back to the plain lattice instead (n copies as one part: no list of n)
    loss = PrivacyLoss("composed", (), ((PrivacyLoss.laplace(1, 10), limit + 1),))
    assert loss.pld(14, aligned=True).grid == Grid(14)
    fits = PrivacyLoss("composed", (), ((PrivacyLoss.laplace(1, 10), limit // 4),))
    assert fits.pld(14, aligned=True).grid == a.grid


@pytest.mark.parametrize("bad", [1, 0, None, "yes", 1.0])
def test_aligned_must_be_a_bool(bad: object) -> None:
    for call in (
        lambda: pld_laplace(1, 10, aligned=bad),  # type: ignore[arg-type]
        lambda: pld_discrete_laplace(1, 10, aligned=bad),  # type: ignore[arg-type]
        lambda: pld_randomized_response(0.1, aligned=bad),  # type: ignore[arg-type]
        lambda: pld_approx(0.1, 0, aligned=bad),  # type: ignore[arg-type]
        lambda: PrivacyLoss.laplace(1, 10).pld(aligned=bad),  # type: ignore[arg-type]
    ):
        with pytest.raises(InvalidParameter, match="aligned"):
            call()


def test_privacy_loss_reads_the_aligned_lattice_beside_the_plain_one() -> None:
    lap = PrivacyLoss.compose([PrivacyLoss.laplace(1, 10)] * 50)
    assert lap.pld(lap.step_bits(), aligned=True).step_mult > 1
    assert lap.epsilon(1e-6) == pld_laplace(1, 10, aligned=True).self_compose(50).epsilon(1e-6)
    rr = PrivacyLoss.compose([PrivacyLoss.randomized_response(1.3, 2)] * 12)
    direct = pld_randomized_response(1.3, aligned=True).self_compose(12)
    assert rr.epsilon(1e-6) == direct.epsilon(1e-6)
    assert rr.epsilon(1e-6) < pld_randomized_response(1.3).self_compose(12).epsilon(1e-6)  # 15.59999 < 15.6
    own = PrivacyLoss.discrete_laplace(2**27, 2**27 * 10)  # make_laplace's pair on a fine grid: end atoms
    assert own.pld(14, aligned=True).grid == pld_laplace(1, 10, aligned=True).grid
    mixed = PrivacyLoss.compose([PrivacyLoss.laplace(1, 10), PrivacyLoss.laplace(1, 7)])
    assert mixed.pld(mixed.step_bits(), aligned=True).step_mult == 1
    assert lap.pld(lap.step_bits()).step_mult == 1  # the public default stays plain


@pytest.mark.parametrize(
    ("one", "n", "delta"),
    [
        (PrivacyLoss.laplace(1, 1 / 3), 5, 1e-9),  # Δ/b = 3 + 2e-16: on the plain lattice, nearly
        (PrivacyLoss.randomized_response(math.nextafter(1.0, 2), 2), 12, 1e-12),
        (PrivacyLoss.randomized_response(0.25000001, 2), 8, 1e-9),  # 1.6e-4 of a step off the plain lattice
        (PrivacyLoss.laplace(1, 0.7), 3, 1e-12),
        (PrivacyLoss.discrete_laplace(1, 2.34626951163582), 1, 1e-12),  # (the second review's cases)
        (PrivacyLoss.randomized_response(0.27978515896916956, 2), 5, 1e-12),
    ],
)
def test_privacy_loss_keeps_the_tighter_end_of_both_lattices(one: PrivacyLoss, n: int, delta: float) -> None:
    """Found by two reviews: PrivacyLoss read the aligned lattice alone (5 × Laplace(1/3), δ = 1e-9:
    15.0000047 against 14.9999999680 on the plain lattice), then the lattice that split the atom less, which
    is not the tighter at every δ either (the same case at δ = 1e-14: plain 15.0000610, aligned 15.0000048).
    Both are certified, so it now intersects their intervals."""
    loss = PrivacyLoss.compose([one] * n)
    for d in (delta, delta * 1e-4):
        lo, hi = loss.epsilon_bounds(d)
        plain = loss.pld(loss.step_bits()).epsilon_bounds(d)
        aligned = loss.pld(loss.step_bits(), aligned=True).epsilon_bounds(d)
        assert hi == min(plain[1], aligned[1]) and lo == max(plain[0], aligned[0])
        assert loss.epsilon(d) == hi and loss.delta(hi) <= Fraction(d)


def test_an_aligned_atom_sits_below_its_lattice_point() -> None:
    """3 × Laplace(b = 0.7) at δ = 1e-12 (ε(δ) near the top atom 3Δ/b = 4.2857142857): rounded to nearest, h
    left a sliver one step above the atom and read 4.2858355 (the plain lattice 4.2857666); rounded up,
    4.2857176."""
    lo, hi = pld_laplace(1, 0.7, aligned=True).self_compose(3).epsilon_bounds(1e-12)
    _, hi_plain = pld_laplace(1, 0.7).self_compose(3).epsilon_bounds(1e-12)
    assert float(lo) <= 3 / 0.7 <= float(hi) < 4.28572 < float(hi_plain)


def test_tilted_reading_on_an_aligned_lattice_is_consistent() -> None:
    """ε(δ) through the tilted composites, then δ at that ε: at most δ (the answer's certified point), and
    the tilted composite's far terms (read from suffix sums past ε + 1) agree with reading every term."""
    pld = pld_laplace(1, 10, aligned=True).self_compose(300)
    for delta in (1e-3, 1e-6, 1e-10):
        lo, hi = pld.epsilon_bounds(delta)
        assert pld.delta(hi) <= Fraction(delta)
        dlo, _ = pld.delta_bounds(lo)
        assert dlo >= Fraction(delta) * (1 - Fraction(1, 10**6)) or lo == 0
    assert pld.recipe is not None
    tilted = [t for t in pld.recipe.cache.values() if t is not None]
    assert tilted and all(t.grid == pld.grid for t in tilted)
    t = tilted[0]
    eps = float(hi)
    fast = t.delta_up(eps)
    with pytest.MonkeyPatch.context() as mp_:
        mp_.setattr(tilt_mod, "NEAR", 10**6)
        every = t.delta_up(eps)
    assert abs(fast - every) <= 1e-8 * every + 1e-300, (fast, every)
