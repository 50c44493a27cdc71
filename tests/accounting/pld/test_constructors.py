"""The PLD constructors (dpcompose.accounting._pld from _check_points on, and _pld_dgauss): lattice budget,
tail and bucket masses against exact references (mpmath, fractions), the content key of a PLD."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcompose.accounting import (
    pld_approx,
    pld_discrete_gaussian,
    pld_discrete_laplace,
    pld_gaussian,
    pld_laplace,
    pld_randomized_response,
)
from dpcompose.errors import InvalidParameter


def m(q: Fraction | int) -> mpmath.mpf:
    q = Fraction(q)
    return mpmath.mpf(q.numerator) / q.denominator


# -- the lattice budget -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "build",
    [
        lambda b: pld_laplace(20, 1, step_bits=b),
        lambda b: pld_discrete_laplace(20, 1, step_bits=b),
        lambda b: pld_randomized_response(20.0, step_bits=b),
        lambda b: pld_randomized_response(20.0, k=5, step_bits=b),
        lambda b: pld_approx(20.0, 1e-6, step_bits=b),
        lambda b: pld_discrete_gaussian(30, 1, step_bits=b),
        # a Gaussian PLD builds its lattice only when composed with a non-Gaussian one
        lambda b: pld_gaussian(1, 1, step_bits=b).compose(pld_randomized_response(0, step_bits=b)),
    ],
)
def test_a_lattice_too_fine_is_refused_by_name_before_allocating(build: Any) -> None:
    """step_bits=40 spans ~1e13 lattice points here: refused (naming a step_bits that fits) instead of an
    attempt to allocate terabytes (MemoryError)."""
    with pytest.raises(InvalidParameter, match=r"lattice points at step_bits=40 .*use step_bits at most \d+"):
        build(40)


def test_the_suggested_step_bits_is_the_largest_that_fits() -> None:
    from dpcompose.accounting._pld.lattice import MAX_POINTS

    # Laplace with Δ/b = 20 spans 40·2**b + 1 points: 2**20 fits, 2**21 does not
    assert 40 * 2**20 + 1 <= MAX_POINTS < 40 * 2**21 + 1
    with pytest.raises(InvalidParameter, match=r"use step_bits at most 20$"):
        pld_laplace(20, 1, step_bits=40)
    with pytest.raises(InvalidParameter, match=r"use step_bits at most 20$"):
        pld_laplace(20, 1, step_bits=21)


@pytest.mark.parametrize("mu", [1e-3, 0.5, 3.0, 30.0])
@pytest.mark.parametrize("width", [4.0, 14.0, 40.0])
def test_gaussian_tails_bound_the_exact_tail_masses(mu: float, width: float) -> None:
    """The Gaussian lattice's tail masses P(L ≤ a₀) and P(L > b_n), L ~ N(μ²/2, μ²), are upper bounds on the
    exact ones (mpmath) that are tight to 1e-9 (out to width 40, where log Φ ≈ −800 and scipy's log_ndtr
    error is padded by 64u·(1 + |log Φ|))."""
    from dpcompose.accounting._pld.buckets import gaussian_buckets

    bits = 6
    b = gaussian_buckets(bits, mu, width)
    h = mpmath.mpf(2) ** -bits
    a0 = b.lo * h
    bn = (b.lo + b.p.size) * h
    m2 = mpmath.mpf(mu) ** 2
    with mpmath.workdps(50):
        below = mpmath.ncdf((a0 - m2 / 2) / mu)
        above = mpmath.ncdf(-(bn - m2 / 2) / mu)
    for ours, exact in ((b.below_hi, below), (b.above_hi, above)):
        if exact < mpmath.mpf(1e-300):
            assert ours >= 0
            continue
        assert exact <= ours <= exact * (1 + mpmath.mpf(1e-9)), (float(exact), ours)


# -- the discrete Laplace buckets -------------------------------------------------------------------------


def dlap_reference(delta: int, t: Fraction, bits: int, j: int) -> tuple[mpmath.mpf, mpmath.mpf]:
    """(P-mass, e^{a}·Q-mass) of loss bucket j = (a, a + h] of the discrete Laplace pair, at 60 digits: the
    integer range of the bucket from exact rational comparisons of L(z) = (Δ − 2z)/t, its masses as geometric
    sums, plus the end atoms (z ≤ 0: loss Δ/t; z ≥ Δ: loss −Δ/t)."""
    h = Fraction(1, 1 << bits)
    a = j * h
    D = delta / t
    with mpmath.workdps(60):
        u = 1 / m(t)
        r = mpmath.exp(-u)
        half = 1 / (1 + r)
        P = Q = mpmath.mpf(0)
        # (Δ − 2z)/t ∈ (a, a + h]  ⇔  (Δ − t(a + h))/2 ≤ z < (Δ − ta)/2
        A = max(math.ceil((delta - t * (a + h)) / 2), 1)
        B = min(math.ceil((delta - t * a) / 2) - 1, delta - 1)
        if A <= B:
            g = 1 - r ** (B - A + 1)
            P += half * r**A * g
            Q += half * r ** (delta - B) * g
        if a < D <= a + h:
            P += half
            Q += half * mpmath.exp(-m(D))
        if a < -D <= a + h:
            P += half * mpmath.exp(-m(D))
            Q += half
        return P, mpmath.exp(m(a)) * Q


DLAP_BUCKET_CASES = [
    (3, Fraction(3, 20), 8),  # Δ/t = 20, two middle outputs: ranges read off the outputs
    (1000, Fraction(50), 8),  # Δ/t = 20, ranges read off the outputs, one per bucket
    (10, Fraction(40), 4),  # ranges read off the outputs, up to two per bucket
    (2**30, Fraction(2**30, 20), 6),  # many outputs per bucket: ranges off the bucket edges (int64)
    (2**30, 10 * 2**30, 10),  # dpcompose's make_laplace sizes, Δ/t = 0.1
    (2**30, Fraction(0.3) * 2**24, 8),  # a float scale: edges beyond int64, in Python ints
    (10**30 + 7, Fraction(10**30, 3), 6),  # outputs beyond int64
    (700, Fraction(1), 4),  # Δ/t = 700: masses down to e^{−700}
    pytest.param(700 * 2**20, Fraction(2**20), 4, marks=pytest.mark.slow),  # (700 at 2**20 scale: ~0.6 s)
]


@pytest.mark.parametrize(("delta", "t", "bits"), DLAP_BUCKET_CASES)
def test_discrete_laplace_buckets_hold_the_exact_masses(delta: int, t: Fraction, bits: int) -> None:
    """Every bucket's P-mass and e^{a}·Q-mass are within their stated relative error of the exact ones
    (60-digit mpmath, integer ranges from exact rationals), and that error is small. (A spread of 1000
    buckets; 3000 in the thorough twin.)"""
    check_dlap_buckets(delta, t, bits, 1000)


@pytest.mark.slow
@pytest.mark.parametrize(("delta", "t", "bits"), DLAP_BUCKET_CASES)
def test_discrete_laplace_buckets_hold_the_exact_masses_thorough(delta: int, t: Fraction, bits: int) -> None:
    check_dlap_buckets(delta, t, bits, 3000)


def check_dlap_buckets(delta: int, t: Fraction, bits: int, spread: int) -> None:
    from dpcompose.accounting._pld.laplace import dlap_buckets

    b = dlap_buckets(bits, delta, t)
    assert b.slack == 0 and b.below_hi == 0 and b.above_hi == 0
    n = b.p.size
    assert n == math.ceil(delta / t * (1 << bits)) - math.ceil(-delta / t * (1 << bits)) + 1
    step = max(1, n // spread)  # the buckets of D and −D, and a spread of the others
    for i in sorted({0, n - 1, *range(0, n, step)}):
        P, R = dlap_reference(delta, t, bits, b.lo + i)
        for ours, exact in ((b.p[i], P), (b.r[i], R)):
            rel = mpmath.mpf(float(b.rel[i]))
            assert abs(mpmath.mpf(float(ours)) - exact) <= rel * exact, (i, float(ours), float(exact))
        if P > 0:
            assert b.rel[i] < 1e-12, (i, b.rel[i])
        else:
            assert b.p[i] == 0 and b.r[i] == 0


def dlap_delta(delta: int, t: Fraction, eps: float) -> mpmath.mpf:
    """δ(ε) of the discrete Laplace pair by summation over its Δ + 1 losses, 40 digits."""
    with mpmath.workdps(40):
        u = 1 / m(t)
        r = mpmath.exp(-u)
        e = mpmath.mpf(eps)
        atoms = [(delta * u, 1 / (1 + r))]
        atoms += [((delta - 2 * z) * u, (1 - r) / (1 + r) * r**z) for z in range(1, delta)]
        atoms.append((-delta * u, r**delta / (1 + r)))
        return mpmath.fsum(p * -mpmath.expm1(e - loss) for loss, p in atoms if loss > e)


@settings(max_examples=25, deadline=None)
@given(
    delta=st.integers(1, 60),
    t=st.fractions(Fraction(1, 8), Fraction(40), max_denominator=16),
    frac=st.floats(0.0, 1.0),
)
def test_discrete_laplace_never_below_exact(delta: int, t: Fraction, frac: float) -> None:
    if delta / t > 30:
        t = Fraction(delta, 30)
    eps = frac * float(delta / t)
    lo, hi = pld_discrete_laplace(delta, t, step_bits=10).delta_bounds(eps)
    ref = dlap_delta(delta, t, eps)
    assert m(lo) <= ref <= m(hi), (delta, t, eps, float(lo), float(ref), float(hi))


@pytest.mark.parametrize(("delta", "t"), [(1000, Fraction(50)), (7, Fraction(7, 20)), (40, Fraction(4))])
def test_discrete_laplace_brackets_exact_and_is_tight(delta: int, t: Fraction) -> None:
    pld = pld_discrete_laplace(delta, t)
    for eps in [0.0, 0.5, 3.0, 9.5]:
        lo, hi = pld.delta_bounds(eps)
        ref = dlap_delta(delta, t, eps)
        assert m(lo) <= ref <= m(hi), (eps, float(lo), float(ref), float(hi))
        assert m(hi) - m(lo) <= ref * mpmath.mpf("1e-3") + mpmath.mpf("1e-12")
