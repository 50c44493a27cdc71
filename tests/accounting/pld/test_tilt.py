"""The tilted reading of long compositions (dpcompose.accounting._pld_tilt): certified against exact binomial
compositions in mpmath, and as tight as the float error allows (relative to δ, not to the whole vector)."""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dpcompose.accounting import pld_approx, pld_laplace, pld_randomized_response, pld_subsampled_gaussian
from dpcompose.accounting._pld import concurrency as concurrency_mod
from dpcompose.accounting._pld import side as side_mod
from dpcompose.accounting._pld import tilt as tilt_mod
from dpcompose.accounting._pld.recipe import Recipe
from exact_pairs import Atoms, delta, exact_epsilon, mp


def rr_composed(eps0: Fraction, k: int, delta0: float = 0.0) -> tuple[Atoms, mpmath.mpf]:
    """Finite loss atoms of RR_(ε₀, δ₀) composed k times, and the mass at +∞ (Kairouz–Oh–Viswanath 2015:
    with probability δ₀ an output reveals the input; otherwise it is RR_ε₀)."""
    e = mpmath.exp(mpmath.mpf(eps0.numerator) / eps0.denominator)
    p = e / (1 + e)
    keep = (1 - mpmath.mpf(delta0)) ** k
    atoms: Atoms = {
        eps0 * (2 * j - k): keep * mpmath.binomial(k, j) * p**j * (1 - p) ** (k - j) for j in range(k + 1)
    }
    return atoms, 1 - keep


def exact_delta(atoms: Atoms, inf: mpmath.mpf, eps: float) -> mpmath.mpf:
    return delta(atoms, Fraction(eps)) + inf


def _check_small_delta_is_tight(targets: tuple[float, ...]) -> None:
    # RR_{1/2} on a lattice that holds its atoms: the PLD is exact, so only the float error separates the
    # certified ε from the truth. The untilted side's normwise error is absolute (a pure-atom spectrum does
    # not decay: 8e-9 here), so below δ ≈ 1e-8 it has no finite ε at all and at 1e-6 it is 0.023 above the
    # truth; the tilted one's is relative to δ (the certified ε is within 1e-9 relative of the truth).
    with mpmath.workdps(40):
        atoms, inf = rr_composed(Fraction(1, 2), 200)
        for target in targets:
            pld = pld_randomized_response(0.5).self_compose(200)
            up = float(pld.epsilon(target))
            assert exact_delta(atoms, inf, up) <= target
            truth = float(exact_epsilon(atoms, target))
            assert up - truth <= 1e-8 * max(1.0, truth), (target, up, truth)
            lo = float(pld.epsilon_bounds(target)[0])
            assert exact_delta(atoms, inf, lo) > target and truth - lo <= 1e-8 * max(1.0, truth)
            untilted = pld.least_up(target)
            if target <= 1e-9:
                assert untilted is None
            else:
                assert untilted is not None and up <= untilted
                if target == 1e-6:
                    assert untilted - truth > 0.02 and up - truth < 1e-6


def test_small_delta_is_tight_where_the_untilted_side_is_not() -> None:
    # (one δ on each side of the untilted side's floor ≈ 1e-8, the second the measured 0.023 case; the
    # thorough twin adds 1e-12 and 1e-3)
    _check_small_delta_is_tight((1e-9, 1e-6))


@pytest.mark.slow
def test_small_delta_is_tight_where_the_untilted_side_is_not_thorough() -> None:
    _check_small_delta_is_tight((1e-12, 1e-9, 1e-6, 1e-3))


def _check_delta_between_and_at_atoms(epsilons: tuple[float, ...]) -> None:
    with mpmath.workdps(40):
        atoms, inf = rr_composed(Fraction(1, 4), 300)
        pld = pld_randomized_response(0.25).self_compose(300)
        for eps in epsilons:
            hi = mp(pld.delta(eps))
            exact = exact_delta(atoms, inf, eps)
            assert exact <= hi <= exact * (1 + 1e-7), (eps, float(hi), float(exact))  # (measured: 3e-8)
            lo = mp(pld.delta_bounds(eps)[0])
            assert exact * (1 - 1e-7) <= lo <= exact, (eps, float(lo), float(exact))


def test_delta_is_certified_and_tight_between_and_at_atoms() -> None:
    _check_delta_between_and_at_atoms((25.0, 30.125))  # an atom (a multiple of 1/2) and a point between


@pytest.mark.slow
def test_delta_is_certified_and_tight_between_and_at_atoms_thorough() -> None:
    _check_delta_between_and_at_atoms((20.0, 25.0, 30.125, 37.5, 41.0))


def test_mass_at_infinity_is_carried() -> None:
    # RR_(ε, δ) composed: a mass 1 − (1 − δ₀)^k at +∞ beside the binomial atoms
    with mpmath.workdps(40):
        atoms, inf = rr_composed(Fraction(1, 2), 100, 1e-12)
        pld = pld_approx(0.5, 1e-12).self_compose(100)
        for target in (1e-9, 1e-7):
            up = float(pld.epsilon(target))
            assert exact_delta(atoms, inf, up) <= target
            assert up - float(exact_epsilon({**atoms}, target - float(inf))) <= 1e-6


def check_binomial(num: int, den_bits: int, k: int, log_delta: float, delta0: float) -> None:
    """ε(δ) of RR_(ε₀, δ₀) composed k times (ε₀ = num/2**den_bits, on a lattice that holds its atoms): never
    below the exact value, and within 1e-6 relative of it."""
    eps0 = Fraction(num, 2**den_bits)
    target = 10.0**log_delta
    with mpmath.workdps(40):
        atoms, inf = rr_composed(eps0, k, delta0)
        assume(float(inf) < target / 2)
        assume(delta(atoms, mpmath.mpf(0)) + inf > target)  # (else ε = 0, nothing to read)
        one = (
            pld_approx(float(eps0), delta0, step_bits=10)
            if delta0
            else pld_randomized_response(float(eps0), step_bits=10)
        )
        pld = one.self_compose(k)
        up = float(pld.epsilon(target))
        assert exact_delta(atoms, inf, up) <= target
        truth = float(exact_epsilon(atoms, target - float(inf)))
        assert up - truth <= 1e-6 * max(1.0, truth), (up, truth)
        assert pld.delta(up) <= target  # the δ reading agrees with the ε one
        # the certified lower end: δ there is still above the target, and it is close to the truth
        lo, hi = pld.epsilon_bounds(target)
        assert float(hi) == up
        assert lo == 0 or exact_delta(atoms, inf, float(lo)) > target, (float(lo), truth)
        assert truth - float(lo) <= 1e-6 * max(1.0, truth), (float(lo), truth)
        for eps in (float(lo) * 0.9, truth, up + 0.25):
            d_lo, d_hi = pld.delta_bounds(eps)
            exact = exact_delta(atoms, inf, eps)
            assert mp(d_lo) <= exact <= mp(d_hi), (eps, float(d_lo), float(exact), float(d_hi))


BINOMIAL = {
    "num": st.integers(1, 8),
    "den_bits": st.integers(1, 3),
    "k": st.integers(10, 250),
    "log_delta": st.floats(-13.0, -2.0),
    "delta0": st.sampled_from([0.0, 0.0, 1e-15, 1e-13]),
}


@settings(max_examples=5, deadline=None)  # (12 in the thorough twin below; 150 on wider ranges in _slow)
@given(**BINOMIAL)
def test_random_binomial_compositions(
    num: int, den_bits: int, k: int, log_delta: float, delta0: float
) -> None:
    check_binomial(num, den_bits, k, log_delta, delta0)


@pytest.mark.slow
@settings(max_examples=12, deadline=None)
@given(**BINOMIAL)
def test_random_binomial_compositions_thorough(
    num: int, den_bits: int, k: int, log_delta: float, delta0: float
) -> None:
    check_binomial(num, den_bits, k, log_delta, delta0)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(**{**BINOMIAL, "k": st.integers(10, 400), "log_delta": st.floats(-14.0, -1.0)})
def test_random_binomial_compositions_slow(
    num: int, den_bits: int, k: int, log_delta: float, delta0: float
) -> None:
    check_binomial(num, den_bits, k, log_delta, delta0)


def test_theta_choice_and_cache() -> None:
    # one tilted composite per θ (its window cut for the δ the model expects there); a second question at
    # the same δ reuses it, and δ read at the answer reads it too
    pld = pld_laplace(1, 10).self_compose(1000)
    first = pld.epsilon(1e-6)
    recipe = pld.recipe
    assert isinstance(recipe, Recipe)
    assert len(recipe.cache) == 1
    assert pld.epsilon(1e-6) == first and len(recipe.cache) == 1
    assert pld.delta(first) <= 1e-6 and len(recipe.cache) == 1
    (theta, target), tilted = next(iter(recipe.cache.items()))
    assert target == recipe.expected_delta(theta) and tilted is not None
    # θ is the answer's own tilt (the grid θ whose tilted mean is nearer the answer): the tilted mean sits
    # near the answer, within half the shift between grid tilts (0.08·θ·K''), and θ has few significant bits
    assert theta == recipe.theta_for_epsilon(float(first))
    _, k1, k2 = recipe.cumulants(theta)
    assert abs(k1 * pld.step - float(first)) < 0.5 + 0.1 * theta * k2 * pld.step
    assert math.frexp(theta)[0] * 2**10 == int(math.frexp(theta)[0] * 2**10)
    assert pld.upper_if_built is None  # the untilted side was never built


def test_found_by_review_underflow_and_poor_tilts() -> None:
    # (1) the untilting weights underflowed to 0 above the window: ε(0) came out at 2978.39 for 3000 ×
    # RR_1 (true ε(0) = 3000, the largest loss: δ(2978.39) = 4.2e-385 > 0) and δ(2999) as exactly 0
    rr = pld_randomized_response(1.0, step_bits=6).self_compose(3000)
    assert rr.epsilon(0) == 3000 and rr.delta(2999) > 0
    lap = pld_laplace(1, 1, step_bits=8).self_compose(2000)
    assert lap.epsilon(0) == 2000 and lap.delta(1999) > 0
    # (2) δ read from a composite tilted for another question: 1.0 against the truth 0.36658
    approx = pld_approx(0.75, 1e-10, step_bits=10).self_compose(10)
    approx.epsilon(1e-6)
    assert 0.3665 < approx.delta(2.66814) < 0.3666
    # (3) ε read from a tilt centred on a far atom, at a large δ: 3.288876 against 3.288367
    assert float(pld_randomized_response(4.0, step_bits=10).self_compose(1).epsilon(0.5)) < 3.28837


def test_found_by_review_of_the_lower_side() -> None:
    from dpcompose.accounting import compose_plds, pld_gaussian
    from dpcompose.accounting._pld.subsample.continuous import pld_subsampled_rr

    # (F1) a child's large err overflowed expm1 in the tilted error bound: OverflowError at ε ≳ 6100
    one = compose_plds([pld_gaussian(1, 1, step_bits=8), pld_laplace(1, 5, step_bits=8)])
    lo, hi = one.self_compose(3000).delta_bounds(6500.0)
    assert 0 <= lo <= hi < 1e-6
    # (F2) the lower sum started at labels ≥ ε − 2, ignoring the labels' drift g = ln(ΣN/ΣP) ≪ −2, where
    # the positive terms are: 131.388 against 131.5037 (upper end 131.5062)
    lo, hi = pld_subsampled_rr(1.0, 2, 0.3, "poisson", 8, 1e-18).self_compose(2000).epsilon_bounds(1e-3)
    assert 131.5036 < lo <= hi < 131.5063
    # (F3) labels were cut at 1e-16 of the P mass from ε − 2 on, above the part of δ that labels above ε
    # carry at small δ: 2.415304 against 2.415404 (upper end 2.415418)
    lo, hi = pld_laplace(1, 30, step_bits=12).self_compose(100).epsilon_bounds(1e-15)
    assert 2.41540 < lo <= hi < 2.41542


_FAR_TERMS = {"eps": st.floats(0.0, 60.0), "k": st.integers(60, 400)}  # (the test and its thorough twin)


def _test_far_terms_from_suffix_sums_are_certified(eps: float, k: int) -> None:
    """δ(ε) reads the terms with loss ≥ ε + 1 from two suffix sums (S₁ − e^{ε−c}·S₂, ``Tilted.far``): its
    error bound is checked against the exact sum of the same float terms (mpmath), and the whole reading
    against the one that sums every term on its own (within the two bounds' slack)."""
    pld = pld_randomized_response(0.5, step_bits=8).self_compose(k)
    pld.epsilon(1e-9)  # builds a tilted composite
    assert pld.recipe is not None
    tilted = [t for t in pld.recipe.cache.values() if t is not None]
    assert tilted
    t = tilted[0]
    assert t.grid.mult == 1
    j0 = math.floor(math.ldexp(eps, t.grid.bits)) + 1
    first = j0 + (1 << t.grid.bits) - t.offset
    assume(0 <= first < t.end)
    s, e = t.far(first, eps)
    pos, factor, _ = t.factors
    with mpmath.workdps(50):
        rows = zip(t.masses[first : t.end], factor[first : t.end], pos[first : t.end], strict=True)
        exact = mpmath.fsum(mp(c) * mp(f) * -mpmath.expm1(mp(eps) - mp(x)) for c, f, x in rows)
        assert abs(mpmath.mpf(s) - exact) <= e, (s, float(exact), e)
        assert e <= 1e-8 * s + 1e-300  # relative: the terms read this way keep ≥ 63 % of S₁
    # the reading with the far terms, against the one without (every term on its own)
    fast = t.delta_up(eps)
    with pytest.MonkeyPatch.context() as mp_:
        mp_.setattr(tilt_mod, "NEAR", 10**6)
        every = t.delta_up(eps)
    assert fast == every == math.inf or abs(fast - every) <= 1e-8 * every + 1e-300, (fast, every)


@pytest.mark.slow  # (thorough: the README test command stays under 3 minutes)
@settings(max_examples=8, deadline=None)
@given(**_FAR_TERMS)
def test_far_terms_from_suffix_sums_are_certified(eps: float, k: int) -> None:
    _test_far_terms_from_suffix_sums_are_certified(eps=eps, k=k)


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(**_FAR_TERMS)
def test_far_terms_from_suffix_sums_are_certified_thorough(eps: float, k: int) -> None:
    _test_far_terms_from_suffix_sums_are_certified(eps=eps, k=k)


def test_theta_model_resolves_a_small_rate_step() -> None:
    """Found measuring: the θ model merged a side into equal groups of 80 entries, which put the whole mass of
    a Poisson step at q = 1e-5 (a few entries around 0 of a 161,811-entry support) into one group. The
    composite's variance vanished from the model, the θ chosen for the add order centred the tilted window
    above the answer, and its error terms came to 2.6e34 × δ (the untilted side was read instead, twice
    the time). Grouped around the mode, the model keeps the bulk entry by entry."""
    pld = pld_subsampled_gaussian(0.6, 1e-5).self_compose(10**6)
    assert pld.reverse is not None
    add = pld.reverse
    recipe = add.recipe
    assert recipe is not None
    ((side, k),) = recipe.items
    j = side.offset + np.arange(side.masses.size)
    mean = float(np.sum(side.masses * j) / np.sum(side.masses))
    var = float(np.sum(side.masses * (j - mean) ** 2) / np.sum(side.masses))
    assert recipe.cumulants(0.0)[2] == pytest.approx(k * var, rel=1e-3)
    e = recipe.least_up(add.least_up, 1e-6, add.delta_float)
    assert e is not None
    (t,) = [t for t in recipe.cache.values() if t is not None]
    assert t.offset * add.step < e and t.error_terms(e) < 1e-3 * 1e-6  # (_ERROR_SHARE of δ)


def test_lower_labels_cut_relative_to_the_drifted_label_lose_nothing() -> None:
    """The tilted lower side sums labels up to where the P mass left is 1e-16 of the mass above the label
    ε + min(g, 0) (the labels' drift g: −46 here). Cut relative to the label ε itself (1e-147 of mass above
    it), seven times as many labels were summed; the value must be the one every label gives."""
    import dataclasses

    pld = pld_subsampled_gaussian(0.6, 1e-5).self_compose(10**6)
    lo, hi = pld.epsilon_bounds(1e-6)
    recipes = [r for r in (pld.recipe, pld.reverse.recipe if pld.reverse else None) if r is not None]
    lowers = [t for r in recipes for t in r.lower_cache.values() if t is not None]
    assert lowers
    for t in lowers:
        assert t.drift < -40.0  # the case the reference label is for
        every = dataclasses.replace(t, reach=np.ones_like(t.reach))  # nothing is cut
        for eps in (float(lo) * 0.9, float(lo), float(hi)):
            cut, full = t.delta_lo(eps), every.delta_lo(eps)
            # (equal up to the rounding slack, which grows with the number of labels summed)
            assert full > 0 and abs(cut - full) <= 1e-9 * full  # (γₙ for 2M labels: 2.3e-10)


def test_small_rate_composite_is_read_from_its_tilt_alone() -> None:
    """At q = 1e-5 over 10⁶ steps a step's mass sits on ~170 entries and the composite's spectrum stays near 1
    over thousands of frequencies. With 256 of them recomputed in long double the remove order's tilted FFT
    error was 1.8% of δ, so the untilted composite (2M entries) was built and read as well, for a looser
    answer (0.1839180). With up to 4096 where that is cheap, the tilt alone certifies a tighter one."""
    from dpcompose.accounting import pld_subsampled_gaussian
    from dpcompose.accounting._pld import distribution as distribution_mod
    from dpcompose.accounting._pld import fourier as fourier_mod

    built: list[bool] = []
    compose_many = fourier_mod.compose_many

    def spy(items: list[tuple[side_mod.Side, int]], upper: bool, tail: float) -> side_mod.Side:
        built.append(upper)
        return compose_many(items, upper, tail)

    pld = pld_subsampled_gaussian(0.6, 1e-5).self_compose(10**6)
    with pytest.MonkeyPatch.context() as mp_:
        mp_.setattr(distribution_mod, "compose_many", spy)
        e = float(pld.epsilon(1e-6))
    assert e < 0.18384
    assert built == []  # no untilted side (of either order) was needed
    recipe = pld.recipe
    assert recipe is not None
    (t,) = [t for t in recipe.cache.values() if t is not None]
    assert t.error_terms(e) < 1e-3 * 1e-6


def test_found_by_review_of_this_stops_lower_side_speedups() -> None:
    """(1) The label cut made relative to the label ε + g (g = −19 … −46 here) dropped labels that carry a
    certified δ far below P(L > ε): 1.7e-39 read as 0. (2) With tighter tilted composites (the long-double
    budget), the secant search for ε(δ)'s lower end clamped a step at 0, certified there, oscillated, and
    returned 0 (the untilted side then gave 0.02675275 where the tilt gives 0.0267532)."""
    from dpcompose.accounting import pld_subsampled_gaussian

    lo, hi = pld_subsampled_gaussian(1.0, 1e-6).self_compose(10**6).delta_bounds(0.05)
    assert 1.7e-39 < lo <= hi
    lo, hi = pld_subsampled_gaussian(1.0, 1e-5).self_compose(10**6).epsilon_bounds(1e-5)
    assert 0.0267532 < lo <= hi < 0.066746


def test_cache_is_bounded_and_answers_stay_consistent_after_eviction(monkeypatch: pytest.MonkeyPatch) -> None:
    # One tilted composite is built per ε(δ) question (tens of MB for a long composition: 40 questions at
    # 10⁴ DP-SGD steps held 1.4 GB). With a budget of 1 byte only the newest stays; the certified points
    # still give δ(ε(δ)) ≤ δ and δ_lo(ε_lo(δ)) ≥ δ for every δ asked before.
    monkeypatch.setattr(concurrency_mod, "CACHE_BYTES", 1)
    pld = pld_randomized_response(0.25, step_bits=8).self_compose(400)
    targets = [10.0**-x for x in range(3, 12)]
    answers = [pld.epsilon_bounds(d) for d in targets]
    recipe = pld.recipe
    assert isinstance(recipe, Recipe)
    held = [t for c in (recipe.cache, recipe.lower_cache) for t in c.values() if t is not None]
    assert len(held) == 1
    for d, (lo, hi) in zip(targets, answers, strict=True):
        assert pld.delta(hi) <= d
        assert pld.delta_bounds(lo)[0] >= d or lo == 0
    # and the answers match those of a PLD that evicts nothing
    monkeypatch.setattr(concurrency_mod, "CACHE_BYTES", 1 << 40)
    fresh = pld_randomized_response(0.25, step_bits=8).self_compose(400)
    assert [fresh.epsilon_bounds(d) for d in targets] == answers


def test_cached_bytes_count_the_arrays_built_after_a_composite() -> None:
    # a composite's cached properties (suffix sums, factors) are built when it is read: the budget counts them
    pld = pld_laplace(1, 10).self_compose(1000)
    pld.epsilon(1e-6)
    recipe = pld.recipe
    assert isinstance(recipe, Recipe)
    (t,) = [t for t in recipe.cache.values() if t is not None]
    assert recipe.cached_bytes() > t.masses.nbytes


def test_found_by_review_an_untilted_lower_end_is_kept_as_a_point() -> None:
    # ε's lower end came from the untilted lumped pair (the tilted one was poorer) and was not kept; δ's
    # lower end read there used the tilted side alone and gave 0.89999999998 < δ = 0.9
    p = pld_laplace(1, 5, step_bits=7).self_compose(320)
    lo, _ = p.epsilon_bounds(0.9)
    assert p.delta_bounds(lo)[0] >= Fraction(0.9)


def test_found_by_review_an_evicted_answer_does_not_build_the_untilted_side(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # δ(ε(δ)) read from the certified point after eviction left the reading "poor", and the whole untilted
    # composite was built for it
    monkeypatch.setattr(concurrency_mod, "CACHE_BYTES", 1)
    p = pld_laplace(1, 10, step_bits=8).self_compose(3000)
    e1 = p.epsilon(1e-5)
    p.epsilon_bounds(1e-7)  # only its newest composite stays
    assert p.delta(e1) <= 1e-5
    assert p.upper_if_built is None


def test_found_by_review_the_cache_budget_is_process_wide(monkeypatch: pytest.MonkeyPatch) -> None:
    # Per composition, the 256 PLDs the measurements' cache keeps could hold 256 MiB each: four 10⁴-step
    # accountings reached 2.5 GB. Now one budget covers every recipe, least recently used out across them.
    a = pld_laplace(1, 10, step_bits=8).self_compose(2000)
    b = pld_laplace(1, 11, step_bits=8).self_compose(2000)
    a.epsilon(1e-6)
    ra, rb = a.recipe, b.recipe
    assert isinstance(ra, Recipe) and isinstance(rb, Recipe)
    assert ra.cached_bytes() > 0
    one = ra.cached_bytes()
    # room for a's composite, not for b's as well
    monkeypatch.setattr(concurrency_mod, "CACHE_BYTES", one + 1)
    b.epsilon(1e-6)
    assert rb.cached_bytes() > 0 and ra.cached_bytes() == 0  # a's went out: it was the least recently used
    assert concurrency_mod.HELD.total() == rb.cached_bytes()
    first = a.epsilon(1e-6)
    assert a.epsilon(1e-6) == first  # (rebuilt after eviction: the same answer)
    assert a.delta(first) <= 1e-6


def test_suffix_sums_that_overflow_raise_no_warning() -> None:
    """Found by review: the tilted composite's suffix sum of T·e^{−ℓ} overflowed outside ``np.errstate``,
    so under ``-W error`` the reading raised a raw RuntimeWarning; the bound it feeds was +∞ (safe)."""
    import warnings

    from dpcompose.accounting import pld_discrete_laplace

    pld = pld_discrete_laplace(1, 1 / 3.0000000000000004, step_bits=6).self_compose(17)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lo, hi = pld.epsilon_bounds(0)
    assert lo <= hi


def _kary_rr_atoms(eps0: int, k: int, n: int) -> Atoms:
    """The positive loss atoms of k-ary randomized response at ε₀ composed n times (a step's loss is ε₀,
    −ε₀ or 0 with probabilities e^ε₀/z, 1/z, (k − 2)/z, z = e^ε₀ + k − 1): a trinomial sum in mpmath."""
    e = mpmath.exp(eps0)
    z = e + k - 1
    pp, pm, p0 = e / z, 1 / z, (k - 2) / z
    atoms: Atoms = {}
    for m in range(1, n + 1):  # m = (steps at +ε₀) − (steps at −ε₀)
        atoms[Fraction(eps0 * m)] = mpmath.fsum(
            math.factorial(n)
            // (math.factorial(m + b) * math.factorial(b) * math.factorial(n - m - 2 * b))
            * pp ** (m + b)
            * pm**b
            * p0 ** (n - m - 2 * b)
            for b in range((n - m) // 2 + 1)
        )
    return atoms


def test_far_sums_whose_terms_are_subnormal_do_not_under_report() -> None:
    """The far terms' suffix sum of Tᵢ·e^{−ℓᵢ} is read times e^ε (1e228 at ε = 525). Stored unshifted, its
    terms were subnormal where ℓ + ln(1/T) passed ~708, and their absolute rounding (up to 2**-1075, either
    way) times e^ε under-reported δ by up to 1.3e-3 relative: δ(525.67…) read 2.41217e-93 against the exact
    2.41300e-93 (and ε(2.41252e-93) read 525.67144 against 525.67471). Checked against the exact trinomial
    composition (the PLD holds its atoms exactly: ±6 lie on the lattice) on a scan of both ends of
    ``delta_bounds`` and ``epsilon_bounds``."""
    with mpmath.workdps(40):
        atoms = _kary_rr_atoms(6, 20000, 200)
        pld = pld_randomized_response(6, 20000, step_bits=8).self_compose(200)
        e0 = 525.6728122162667
        assert mp(pld.delta(e0)) >= delta(atoms, Fraction(e0))
        d0 = 2.4125197850160453e-93
        assert delta(atoms, Fraction(pld.epsilon(d0))) <= d0
        for e in np.linspace(520.0, 530.0, 41):
            lo, hi = pld.delta_bounds(float(e))
            x = delta(atoms, Fraction(float(e)))
            assert mp(lo) <= x <= mp(hi), (float(e), lo, float(x), hi)
            assert mp(hi) - mp(lo) <= 1e-7 * x  # (and tight: 5.8e-8 at most)
        for d in (1e-91, 2e-92, 5e-93, d0, 1e-93, 3e-94, 5e-95):
            e_lo, e_hi = pld.epsilon_bounds(d)
            assert delta(atoms, Fraction(e_hi)) <= d, (d, e_hi)
            assert e_lo == 0 or delta(atoms, Fraction(e_lo)) > d, (d, e_lo)
            assert e_hi - e_lo <= 1e-6, (d, e_lo, e_hi)


def test_epsilon_tilt_is_the_grid_tilt_whose_mean_is_nearer() -> None:
    """ε's tilt was the grid θ nearest in log scale to the one centring the composite at ε. Where the tilted
    mean leaps with θ (a rare large loss takes over), that θ centred far above ε: 10⁵ DP-SGD steps at
    σ = 0.8, q = 1e-4 read every ε in ~(0.41, 1.6) from the tilt 0.00069, centred at ε ≈ 99, dominated by
    its error terms; δ(ε) fell back to the untilted floor (1.4e-10) and ε(1e-10) read 1.6413 (0.5475 now,
    and its bounds took 32 s, 0.2 s now). The grid tilt whose mean is nearer ε is read instead."""
    pld = pld_subsampled_gaussian(0.8, 1e-4).self_compose(100_000)
    recipe = pld.recipe
    assert isinstance(recipe, Recipe)
    for eps in (0.45, 0.6, 1.0, 1.5):
        theta = recipe.theta_for_epsilon(eps)
        scaled = eps / pld.step
        mean = recipe.cumulants(theta)[1]
        k = round(4 * math.log2(theta))
        for other in (k - 1, k + 1):  # the neighbouring grid tilts centre farther from ε
            neighbour = tilt_mod.dyadic(2.0 ** (other / 4), tilt_mod.THETA_BITS)
            assert abs(mean - scaled) <= abs(recipe.cumulants(neighbour)[1] - scaled)
    assert pld.delta(1.0) < 1e-12
    lo, hi = pld.epsilon_bounds(1e-10)
    assert 0.5 < lo <= hi < 0.56
    # the reading stays a function of the question: a fresh PLD reads the same
    assert pld_subsampled_gaussian(0.8, 1e-4).self_compose(100_000).epsilon(1e-10) == hi


def test_lower_end_of_epsilon_reads_each_lower_composite_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """ε's lower end, checking a point y, read the tilted lumped pair at y, then δ's upper end, then the same
    lumped pair again (evicted meanwhile under a small budget, so built twice); it is read once now."""
    calls: Counter[tuple[int, float]] = Counter()
    orig = Recipe.delta_lo

    def counting(self: Recipe, eps: float) -> float | None:
        calls[(id(self), eps)] += 1
        return orig(self, eps)

    monkeypatch.setattr(Recipe, "delta_lo", counting)
    p = pld_laplace(1, 5, step_bits=7).self_compose(320)
    lo, _ = p.epsilon_bounds(0.9)
    assert calls and max(calls.values()) == 1
    assert p.delta_bounds(lo)[0] >= Fraction(0.9)


def test_a_composite_being_read_is_not_evicted(monkeypatch: pytest.MonkeyPatch) -> None:
    """The budget evicted the least recently used composite even while a reading held it (freeing nothing,
    and making the reading's next lookup build it again); now one in use stays."""
    monkeypatch.setattr(concurrency_mod, "CACHE_BYTES", 1)
    a = pld_laplace(1, 10, step_bits=8).self_compose(2000)
    b = pld_laplace(1, 11, step_bits=8).self_compose(2000)
    a.epsilon(1e-6)
    ra, rb = a.recipe, b.recipe
    assert isinstance(ra, Recipe) and isinstance(rb, Recipe)
    (t,) = [t for t in ra.cache.values() if t is not None]
    with concurrency_mod.HELD.in_use(t):
        b.epsilon(1e-6)
        assert any(x is t for x in ra.cache.values()) and rb.cached_bytes() > 0  # (the newest stays too)
    b.epsilon(1e-12)  # (a new composite) t is not in use any more: evicted
    assert not any(x is t for x in ra.cache.values())
    assert not concurrency_mod.HELD.pinned


def test_children_that_are_long_composites_are_read_from_the_tilt_alone() -> None:
    """A composition of children that are themselves long composites (each with a carried ℓ₁ error ~1e-12)
    tilted each child's error and weighed it at the child's top index (ε ≈ 22 for 100 × Laplace(10)), far
    above the answer (7.56): the tilted error terms were 36 % of δ and more, every tilted reading was poor,
    and the untilted composite was built and read as well (issue 34, the heterogeneous mix). The children's
    error is carried untilted, once (the tilt module's doc): the tilt alone certifies a tighter answer."""
    from dpcompose.accounting import compose_plds, pld_gaussian
    from dpcompose.accounting._pld import distribution as distribution_mod
    from dpcompose.accounting._pld import fourier as fourier_mod

    pld = compose_plds(
        [
            pld_laplace(1, 10, step_bits=10).self_compose(100),
            pld_gaussian(1, 1, step_bits=10),
            pld_subsampled_gaussian(1, 0.01, step_bits=10).self_compose(1000),
        ]
    )
    recipe = pld.recipe
    assert recipe is not None
    assert sum(sd.err > 0 for sd, _ in recipe.items) == 2  # (the two composites carry an error)
    built: list[int] = []
    compose_many = fourier_mod.compose_many

    def spy(items: list[tuple[side_mod.Side, int]], upper: bool, *rest: float) -> side_mod.Side:
        built.append(len(items))
        return compose_many(items, upper, *rest)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as mp_:
        mp_.setattr(distribution_mod, "compose_many", spy)
        e = float(pld.epsilon(1e-6))
        assert 3 not in built  # no untilted composite of the three children
        assert e < 7.5626930  # (with the untilted side read as well: 7.5626933)
        tilts = [t for t in recipe.cache.values() if t is not None]
        assert tilts and all(t.error_terms(e) < 1e-3 * 1e-6 for t in tilts)
        # the lower end likewise: the children's err (and nq_err) tilted made the tilted lumped pair's
        # penalty 2e4, it certified nothing, and the untilted lower side was built and read
        lo, hi = pld.epsilon_bounds(1e-6)
        assert 3 not in built
    assert 7.5619110 < lo <= e == hi  # (with the untilted lower side: 7.5619105)


def test_tilted_lower_bound_at_the_top_atom_is_not_swamped_by_the_noise_below() -> None:
    """RR_{3/8} composed 10 times at δ = 1e-11: ε(δ) ≈ 3.75 − 1.9e-9 lies just below the top atom 10·3/8,
    and ε's own tilt (θ = 2**-5 per step) untilts the FFT's noise at the labels 2 below by up to e^{64}. The
    rounding error of the whole suffix sum (those labels included) was charged to the one sum kept, at the
    top: that tilt read δ there as 0, and the lower end of ε(δ) fell 2.8 steps, to 3.7473 (truth
    3.7499999981). The sum kept is charged only its own terms' rounding."""
    pld = pld_randomized_response(0.375, step_bits=10).self_compose(10)
    with mpmath.workdps(40):
        atoms, inf = rr_composed(Fraction(3, 8), 10)
        truth = float(exact_epsilon(atoms, 1e-11))
        lo, hi = pld.epsilon_bounds(1e-11)
        assert exact_delta(atoms, inf, float(lo)) > 1e-11 and pld.delta_bounds(lo)[0] > 1e-11
        assert truth - float(lo) <= 1e-6 * truth and float(lo) <= truth <= float(hi)  # (measured: 1.4e-8)
        recipe = pld.recipe
        assert recipe is not None and recipe.theta_for_epsilon(truth) == 2.0**-5
        tilted = recipe.tilted_lower(2.0**-5)
        assert tilted is not None
        for eps in (3.749, 3.7499999):  # (the untilted noise at labels ≈ 1.75 is ~5e9: it read 0 at both)
            exact = exact_delta(atoms, inf, eps)
            assert exact * (1 - 1e-3) <= mp(tilted.delta_lo(eps)) <= exact, eps


def test_terms_that_underflowed_are_summed_as_zeros_without_the_arrays() -> None:
    """From ``live_end`` on, every term of ``Tilted.delta_up`` is +0.0 (the mass times its factor
    underflowed), and it takes the sums of zeros without the arrays: the same floats as summing them."""
    checked = 0
    for pld in (
        pld_randomized_response(1.0, step_bits=6).self_compose(3000),
        pld_laplace(1, 1, step_bits=8).self_compose(2000),
    ):
        for eps in (1500.0, 2500.0, 2900.0, 2990.0, 1999.0):
            pld.delta(eps)
        recipe = pld.recipe
        assert isinstance(recipe, Recipe)
        for t in recipe.cache.values():
            if t is None or t.live_end >= t.end:
                continue
            h = pld.step
            for i in sorted({t.live_end, (t.live_end + t.end) // 2, t.end - 1}):
                for eps in ((t.offset + i - 1) * h, (t.offset + i - 0.5) * h):  # first index read: i
                    fast = t.delta_up(eps)
                    t.__dict__["live_end"], kept = t.end, t.live_end  # (the arrays summed)
                    try:
                        assert t.delta_up(eps) == fast
                    finally:
                        t.__dict__["live_end"] = kept
                    checked += 1
    assert checked >= 12
