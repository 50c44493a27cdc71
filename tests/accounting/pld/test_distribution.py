"""Certified PLD bounds against exact references (mpmath enumeration, closed forms)."""

from __future__ import annotations

import copy
import itertools
import math
import pickle
from fractions import Fraction

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcompose.accounting import (
    PLD,
    compose_plds,
    pld_approx,
    pld_discrete_laplace,
    pld_gaussian,
    pld_laplace,
    pld_randomized_response,
    pld_subsampled_gaussian,
)
from dpcompose.errors import InvalidParameter

mpmath.mp.dps = 40


def m(q: Fraction) -> mpmath.mpf:
    return mpmath.mpf(q.numerator) / q.denominator


def exact_delta(
    atoms: list[tuple[mpmath.mpf, mpmath.mpf]], k: int, eps: float, inf_mass: float = 0
) -> mpmath.mpf:
    """δ(ε) of k compositions of a finite PLD given as (loss, P-mass) atoms, by multinomial enumeration."""
    total = mpmath.mpf(0)
    n = len(atoms)
    for counts in itertools.product(range(k + 1), repeat=n - 1):
        last = k - sum(counts)
        if last < 0:
            continue
        cs = (*counts, last)
        coef = mpmath.factorial(k)
        loss = mpmath.mpf(0)
        prob = mpmath.mpf(1)
        for c, (lo, pm) in zip(cs, atoms, strict=True):
            coef /= mpmath.factorial(c)
            prob *= pm**c
            loss += c * lo
        if loss > eps:
            total += coef * prob * (1 - mpmath.exp(eps - loss))
    no_inf = (1 - mpmath.mpf(inf_mass)) ** k
    return total + (1 - no_inf)


def rr_atoms(eps: float) -> list[tuple[mpmath.mpf, mpmath.mpf]]:
    e = mpmath.mpf(eps)
    p = mpmath.exp(e) / (1 + mpmath.exp(e))
    return [(e, p), (-e, 1 - p)]


def dlap_atoms(sens: int, t: float) -> list[tuple[mpmath.mpf, mpmath.mpf]]:
    tt = mpmath.mpf(t)
    r = mpmath.exp(-1 / tt)
    c = (1 - r) / (1 + r)
    atoms = [(sens / tt, 1 / (1 + r))]
    atoms += [((sens - 2 * z) / tt, c * r**z) for z in range(1, sens)]
    atoms.append((-sens / tt, r**sens / (1 + r)))
    return atoms


@pytest.mark.parametrize(
    ("k", "eps0"),
    [(k, e) for k in (1, 2, 5) for e in (0.1, 0.7, 1.3)]
    + [(12, 0.1)]  # (k = 12 at eps0 = 0.7, 1.3: slow; those eps0 stay at k ≤ 5)
    + [pytest.param(12, e, marks=pytest.mark.slow) for e in (0.7, 1.3)],
)
def test_rr_composition_brackets_exact(k: int, eps0: float) -> None:
    pld = pld_randomized_response(eps0).self_compose(k)
    for eps in [0.0, 0.3 * k * eps0, 0.6 * k * eps0]:
        lo, hi = pld.delta_bounds(eps)
        ref = exact_delta(rr_atoms(eps0), k, eps)
        assert m(lo) <= ref <= m(hi), (k, eps0, eps, float(lo), float(ref), float(hi))
        assert float(hi) - float(lo) <= 1e-2 * float(ref) + 1e-12


@pytest.mark.parametrize("k", [1, 3, 8])
def test_discrete_laplace_composition_brackets_exact(k: int) -> None:
    pld = pld_discrete_laplace(3, 2.5).self_compose(k)
    for eps in [0.0, 0.5, 1.5, 3.0]:
        lo, hi = pld.delta_bounds(eps)
        ref = exact_delta(dlap_atoms(3, 2.5), k, eps)
        assert m(lo) <= ref <= m(hi), (k, eps, float(lo), float(ref), float(hi))


def test_heterogeneous_composition_brackets_exact() -> None:
    a, b = pld_randomized_response(0.5), pld_discrete_laplace(2, 3)
    pld = compose_plds([a, b, a, b, b])
    # exact: enumerate both families separately and convolve in mpmath
    ra, da = rr_atoms(0.5), dlap_atoms(2, 3)
    for eps in [0.0, 1.0, 2.0]:
        total = mpmath.mpf(0)
        for combo in itertools.product(ra, ra, da, da, da):
            loss = sum(c[0] for c in combo)
            prob = mpmath.fprod(c[1] for c in combo)
            if loss > eps:
                total += prob * (1 - mpmath.exp(eps - loss))
        lo, hi = pld.delta_bounds(eps)
        assert m(lo) <= total <= m(hi)


def test_approx_pair_carries_delta_and_epsilon() -> None:
    pld = pld_approx(1.0, 1e-3).self_compose(4)
    for eps in [0.0, 1.0, 2.5]:
        lo, hi = pld.delta_bounds(eps)
        keep = (1 - mpmath.mpf(1e-3)) ** 4
        ref = exact_delta(rr_atoms(1.0), 4, eps) * keep + 1 - keep
        assert m(lo) <= ref <= m(hi)
    with pytest.raises(InvalidParameter, match="delta"):
        pld.epsilon_bounds(1e-4)  # below the mass at +∞


def test_laplace_single_closed_form() -> None:
    # Laplace pair: δ(ε) = 1 − exp((ε − Δ/b)/2) for 0 ≤ ε ≤ Δ/b.
    pld = pld_laplace(1, 2)
    for eps in [0.0, 0.1, 0.25, 0.4999]:
        lo, hi = pld.delta_bounds(eps)
        ref = 1 - mpmath.exp((mpmath.mpf(eps) - mpmath.mpf(0.5)) / 2)
        assert m(lo) <= ref <= m(hi)
        assert float(hi - lo) < 1e-3


def gaussian_ref(mu: mpmath.mpf, eps: float) -> mpmath.mpf:
    """Balle–Wang 2018 Thm 8: δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ)."""
    e = mpmath.mpf(eps)
    return mpmath.ncdf(mu / 2 - e / mu) - mpmath.exp(e) * mpmath.ncdf(-mu / 2 - e / mu)


@pytest.mark.parametrize(("sigma", "k"), [(1.0, 1), (2.0, 4), (5.0, 16)])
def test_gaussian_composition_closed_form(sigma: float, k: int) -> None:
    pld = pld_gaussian(1, sigma).self_compose(k)
    mu = mpmath.sqrt(k) / sigma  # k Gaussians of σ compose to one of σ/√k
    for eps in [0.0, 0.5, 1.0, 2.0]:
        lo, hi = pld.delta_bounds(eps)
        ref = gaussian_ref(mu, eps)
        assert m(lo) <= ref <= m(hi), (sigma, k, eps, float(lo), float(ref), float(hi))
        assert float(hi - lo) <= 1e-9 * float(ref)  # read from the closed form (certified both ways)
    e_lo, e_hi = pld.epsilon_bounds(1e-6)
    assert gaussian_ref(mu, float(e_hi)) <= mpmath.mpf(1e-6) < gaussian_ref(mu, float(e_lo))
    assert float(e_hi - e_lo) <= 1e-9 * float(e_hi)


def test_epsilon_bounds_bracket_and_are_monotone() -> None:
    pld = pld_randomized_response(0.3).self_compose(10)
    lo, hi = pld.epsilon_bounds(1e-4)
    assert lo <= hi
    assert pld.delta(hi) <= Fraction(1, 10**4)
    ref_at_lo = exact_delta(rr_atoms(0.3), 10, m(lo))
    assert ref_at_lo > mpmath.mpf(1e-4) or lo == 0


@settings(max_examples=15, deadline=None)
@given(eps0=st.floats(0.01, 2.0), k=st.integers(1, 6), frac=st.floats(0.0, 1.0))
def test_rr_property(eps0: float, k: int, frac: float) -> None:
    pld = pld_randomized_response(eps0, step_bits=10).self_compose(k)
    eps = frac * k * eps0
    lo, hi = pld.delta_bounds(eps)
    ref = exact_delta(rr_atoms(eps0), k, eps)
    assert m(lo) <= ref <= m(hi)


@pytest.mark.slow
def test_laplace_thousand_brackets_dp_accounting_scale() -> None:
    pld = pld_laplace(1, 10).self_compose(1000)
    lo, hi = pld.epsilon_bounds(1e-6)
    assert 18.9 < float(lo) <= float(hi) < 18.96


@pytest.mark.parametrize(
    "call",
    [
        lambda: pld_laplace(-1, 1),
        lambda: pld_laplace(1, 0),
        lambda: pld_gaussian(1, math.nan),
        lambda: pld_randomized_response(1.0, k=1),
        lambda: pld_approx(1.0, 1.0),
        lambda: pld_discrete_laplace(1.5, 2),  # type: ignore[arg-type]
        lambda: pld_laplace(1, 1, step_bits=0),
        lambda: pld_laplace(1, 1).compose(pld_laplace(1, 1, step_bits=12)),
        lambda: compose_plds([]),
        lambda: pld_laplace(1, 1).self_compose(0),
    ],
)
def test_bad_input_raises_invalid_parameter(call: object) -> None:
    with pytest.raises(InvalidParameter):
        call()  # type: ignore[operator]


@pytest.mark.parametrize(("eta_frac", "below_frac"), [(0.5, 0.5), (0.25, 0.9), (1.0, 0.3)])
def test_split_covers_losses_below_the_bucket_by_its_slack(eta_frac: float, below_frac: float) -> None:
    """A bucket (a, a + h] whose losses may lie up to η (the buckets' slack) below a: the connect-the-dots
    split must still dominate. Atoms: P-mass p1 at a − η and p2 at a + h, built into one bucket's (p, e^a Q);
    the certified δ at every lattice point is at least the exact δ of the two atoms (was 0 vs 3e-5)."""
    import numpy as np

    from dpcompose.accounting._pld.buckets import Buckets
    from dpcompose.accounting._pld.distribution import build_pld

    bits = 10
    h = math.ldexp(1.0, -bits)
    j = 5
    a = j * h
    eta = eta_frac * h
    p1, p2 = below_frac, 1 - below_frac
    losses, masses = [a - eta, a + h], [p1, p2]
    # the pair is completed with Q-masses e^{-ℓ}·P; the rest of Q (to make it a distribution) sits where
    # P has no mass, at loss −∞, which changes no δ(ε) for ε ≥ 0
    r = sum(m * math.exp(a - ell) for m, ell in zip(masses, losses, strict=True))
    buckets = Buckets(j, np.array([1.0]), np.array([r]), np.zeros(1), slack=eta)
    pld = build_pld(bits, buckets, 0.0, "test")
    for i in range(2 * j + 3):
        eps = i * h
        exact = sum(m * -math.expm1(eps - ell) for m, ell in zip(masses, losses, strict=True) if ell > eps)
        assert float(pld.delta_bounds(eps)[1]) >= exact, (eps, exact)


def test_extreme_reads_and_tails_are_answered_or_refused_by_name() -> None:
    pld = pld_laplace(1, 1)
    assert pld.delta_bounds(1e308) == (0, 0)  # ε past every atom: only the mass at +∞ (none) remains
    with pytest.raises(InvalidParameter, match="tail"):
        pld_laplace(1, 1, tail=1e-310)


def test_a_composition_too_wide_is_refused_before_it_is_allocated() -> None:
    # found by review: the PLDs fit the 2**26-point budget but their composite's window did not, and the
    # FFT ran out of memory (> 24 GB) instead of refusing; every path that builds a window checks it now
    from dpcompose.accounting import pld_discrete_laplace

    huge = pld_discrete_laplace(1, 1).self_compose(2**40)
    for read in (lambda: huge.epsilon(1e-6), lambda: huge.delta_bounds(1.0), lambda: huge.upper):
        with pytest.raises(InvalidParameter, match="window spans .* smaller step_bits"):
            read()


def test_gaussian_epsilon_at_a_subnormal_delta() -> None:
    """5e-324 has no float reciprocal: the search's starting bracket is computed from the exact δ."""
    from dpcompose.accounting import gaussian_profile, pld_gaussian

    eps = gaussian_profile(1, 1).epsilon(5e-324)
    assert 38 < float(eps) < 40
    assert pld_gaussian(1, 1).epsilon_bounds(5e-324)[1] == eps


def test_no_finite_epsilon_says_whether_the_error_bound_or_the_mass_at_infinity_is_in_the_way() -> None:
    # found by review: "no finite ε" for 2 × Laplace(1) at h = 2**-9 and δ = 1e-15, whose true ε is 2; the
    # refusal is right (the certified error is 4.9e-14), and now it says what helps
    with pytest.raises(InvalidParameter, match=r"of which error .*finer lattice \(larger step_bits\)"):
        pld_laplace(1, 1, step_bits=9).self_compose(2).epsilon_bounds(1e-15)
    assert pld_laplace(1, 1, step_bits=14).self_compose(2).epsilon_bounds(1e-15)[1] == 2
    with pytest.raises(InvalidParameter, match=r"no finite ε is certified$"):  # the mass at +∞: no hint
        pld_approx(1.0, 1e-3).self_compose(2).epsilon_bounds(1e-4)


@pytest.mark.parametrize(("mu", "k"), [(31.0, 1000), (82.0, 1000), (200.0, 1000), (1000.0, 10_000)])
def test_gaussian_composition_past_mu_30_reads_the_closed_form(mu: float, k: int) -> None:
    """Issue 32, item 8(c): a Gaussian composition whose μ passed 30 was composed by FFT instead (one ε(δ) at
    k = 1000, μ = 82 took 19–108 s; μ = 1000 was refused, its window too long). The closed form, certified
    both ways, stays within 2e-10 of the mpmath value from δ = 1e-308 to 1 for μ up to 1000."""
    pld = pld_gaussian(1, math.sqrt(k) / mu).self_compose(k)
    assert pld.gaussian is not None
    mu_hi, _, mu_lo = pld.gaussian
    for a in [-37.5, -30.0, -10.0, -3.0, 0.0, 3.0, mu / 2 - 1e-3]:  # δ ≈ Φ(a): 2e-308 … 1
        eps = mu * (mu / 2 - a)
        lo, hi = pld.delta_bounds(eps)
        ref_hi, ref_lo = gaussian_ref(mpmath.mpf(mu_hi), eps), gaussian_ref(mpmath.mpf(mu_lo), eps)
        assert m(lo) <= ref_lo and ref_hi <= m(hi), (mu, eps)
        assert m(hi) <= ref_hi * (1 + 1e-9) and m(lo) >= ref_lo * (1 - 1e-9), (mu, eps)
    for delta in [0.5, 1e-3, 1e-10, 1e-100, 1e-300]:
        e_lo, e_hi = pld.epsilon_bounds(delta)
        assert gaussian_ref(mpmath.mpf(mu_hi), float(e_hi)) <= delta
        assert gaussian_ref(mpmath.mpf(mu_lo), float(e_lo)) > delta
        assert float(e_hi - e_lo) <= 1e-12 * float(e_hi)
    assert pld.upper_if_built is None  # (no lattice was built)


def test_gaussian_composition_past_mu_30_still_composes_with_other_mechanisms() -> None:
    """Composed with a non-Gaussian, the Gaussian part's lattice is the composition of its children (as
    before): its reading brackets the Gaussian part's own ε and stays below basic composition's sum."""
    g = pld_gaussian(1, 0.2, step_bits=6)  # μ = 5: forty of them compose to μ = √40·5 ≈ 31.6
    both = compose_plds([g] * 40 + [pld_laplace(1, 10, step_bits=6)])
    alone = compose_plds([g] * 40)
    assert alone.gaussian is not None and alone.gaussian[0] > 30
    lap = pld_laplace(1, 10, step_bits=6)
    lo, hi = both.epsilon_bounds(1e-6)
    assert alone.epsilon_bounds(1e-6)[0] <= hi
    assert lo <= alone.epsilon(5e-7) + lap.epsilon(5e-7)


def test_a_count_past_the_limit_is_refused_by_name() -> None:
    """Issue 32, item 9: ``self_compose(2**64)`` raised a raw OverflowError in the totals (2**64 copies of
    Laplace(10)); and 2**12 × 2**44 copies, each count within the limit, overflowed there too."""
    from dpcompose.accounting._pld.distribution import MAX_COUNT

    for count in (2**64, MAX_COUNT + 1):
        for pld in (pld_laplace(1, 10), pld_gaussian(1, 10), pld_randomized_response(1.0)):
            limit = rf"count={count} copies .* exceed {MAX_COUNT} \(2\*\*44\)"
            with pytest.raises(InvalidParameter, match=limit):
                pld.self_compose(count)
    assert pld_gaussian(1, 10).self_compose(MAX_COUNT).epsilon(1e-6) > 0  # (the closed form: any count)
    nested = pld_laplace(1, 10, step_bits=6).self_compose(2**12).self_compose(2**44)
    with pytest.raises(InvalidParameter):
        nested.epsilon(0.5)


@pytest.mark.parametrize(
    ("kind", "orders"),
    [
        ("long", (False, True)),
        ("subsampled", (True,)),  # (the copy of a read original; of an unread one: the thorough twin)
        pytest.param("subsampled", (False, True), marks=pytest.mark.slow, id="subsampled-thorough"),
    ],
)
def test_long_compositions_deepcopy_and_pickle(kind: str, orders: tuple[bool, ...]) -> None:
    """A long composition's recipe holds a lock (and builds in progress): ``copy.deepcopy`` raised
    ``TypeError: cannot pickle '_thread.lock'``, and pickling met its local closures. A copy now carries
    neither the lock nor the caches (it rebuilds what it reads) and reads the same, before and after the
    original was read."""

    def make() -> PLD:
        if kind == "long":
            return pld_laplace(1, 10).self_compose(1000)
        return pld_subsampled_gaussian(1, 1e-3).self_compose(2000)

    fresh = make()
    assert fresh.recipe is not None or (fresh.reverse is not None and fresh.reverse.recipe is not None)
    answer = make().epsilon_bounds(1e-6)
    for read_first in orders:
        p = make()
        if read_first:
            assert p.epsilon_bounds(1e-6) == answer
        for copied in (copy.deepcopy(p), pickle.loads(pickle.dumps(p))):
            assert copied.epsilon_bounds(1e-6) == answer
            assert copied.delta(1.0) == p.delta(1.0)


def test_repr_builds_nothing() -> None:
    """repr of a Gaussian composition past μ = 30 built the children's whole lattice (3.9 s at μ = 31.6) or
    raised "window spans …" (μ = 200); of a long composition, its untilted side. It reads what is held."""
    for p in (
        pld_gaussian(1, 0.2).self_compose(40),  # μ = 31.6
        pld_gaussian(1, 0.2).self_compose(1600),  # μ = 200
        pld_laplace(1, 10).self_compose(1000),
    ):
        text = repr(p)
        assert text.startswith("PLD(") and p.upper_if_built is None and p.lower_if_built is None
    assert "μ≤31.6228" in repr(pld_gaussian(1, 0.2).self_compose(40))
    assert repr(pld_laplace(1, 10, aligned=True)).endswith("3279 points, inf≤0)")


@pytest.mark.slow  # (thorough: the README test command stays under 3 minutes)
def test_lower_end_of_epsilon_at_a_tiny_delta_raises_nothing() -> None:
    """The lumped lower side's float probe overflowed (math.exp of ε − s0 > 709.78) at δ ≤ 1e-305: a raw
    OverflowError from a certified reading. The interval is still ordered."""
    lo, hi = pld_randomized_response(6, 20000).self_compose(200).epsilon_bounds(1e-305)
    assert 0 <= lo <= hi
