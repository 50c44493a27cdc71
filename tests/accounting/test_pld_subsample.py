"""Certified PLD bounds: the Fourier composition path and subsampled Gaussians, against exact references."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcompose.accounting import pld_discrete_laplace, pld_laplace, pld_subsampled_gaussian
from dpcompose.errors import InvalidParameter

mpmath.mp.dps = 40


def m(q: Fraction) -> mpmath.mpf:
    return mpmath.mpf(q.numerator) / q.denominator


def dlap_atoms(sens: int, t: int) -> dict[Fraction, mpmath.mpf]:
    r = mpmath.exp(mpmath.mpf(-1) / t)
    c = (1 - r) / (1 + r)
    atoms = {Fraction(sens, t): 1 / (1 + r), Fraction(-sens, t): r**sens / (1 + r)}
    for z in range(1, sens):
        atoms[Fraction(sens - 2 * z, t)] = c * r**z
    return atoms


def convolve_exact(atoms: dict[Fraction, mpmath.mpf], k: int) -> dict[Fraction, mpmath.mpf]:
    out = {Fraction(0): mpmath.mpf(1)}
    for _ in range(k):
        nxt: dict[Fraction, mpmath.mpf] = {}
        for a, pa in out.items():
            for b, pb in atoms.items():
                nxt[a + b] = nxt.get(a + b, mpmath.mpf(0)) + pa * pb
        out = nxt
    return out


def delta_of(dist: dict[Fraction, mpmath.mpf], eps: float) -> mpmath.mpf:
    e = mpmath.mpf(eps)
    return mpmath.fsum(p * (1 - mpmath.exp(e - m(loss))) for loss, p in dist.items() if m(loss) > e)


@pytest.mark.parametrize("k", [2, 5, 12])
def test_fourier_path_brackets_exact_lattice_enumeration(k: int) -> None:
    # Δ = 20, t = 20: 21 atoms over [−1, 1] (32k lattice points), so k ≥ 2 takes the Fourier path
    pld = pld_discrete_laplace(20, 20).self_compose(k)
    assert pld.upper.masses.size > 4096
    dist = convolve_exact(dlap_atoms(20, 20), k)
    for eps in [0.0, 0.3, 1.0, 0.5 * k]:
        lo, hi = pld.delta_bounds(eps)
        ref = delta_of(dist, eps)
        assert m(lo) <= ref <= m(hi), (k, eps, float(lo), float(ref), float(hi))
        assert float(hi - lo) <= 1e-3 * float(ref) + 1e-9
    lo_e, hi_e = pld.epsilon_bounds(1e-4)
    assert delta_of(dist, float(hi_e)) <= mpmath.mpf(1e-4) < delta_of(dist, float(lo_e))


def test_shifted_lower_side_is_tight_and_valid() -> None:
    # 200 Laplace: the rounded-down side alone is ~k·h/2 = 0.006 low in ε; the shift recovers most of it
    pld = pld_laplace(1, 10).self_compose(200)
    lo, hi = pld.epsilon_bounds(1e-6)
    unshifted = pld._greatest_low(1e-6)
    assert unshifted is not None
    assert float(lo) > unshifted + 2e-3
    assert float(hi) - float(lo) < 4e-3


def mixture_delta(mu: float, q: float, eps: float, remove: bool) -> mpmath.mpf:
    """δ(ε) of ((1−q)N(0,1) + qN(μ,1), N(0,1)) (remove) or its reverse (add), exactly (L is monotone)."""
    mu_, q_, e = mpmath.mpf(mu), mpmath.mpf(q), mpmath.mpf(eps)

    def o_of(lam: mpmath.mpf) -> mpmath.mpf | None:  # L(o) = lam
        inner = mpmath.exp(lam) - (1 - q_)
        if inner <= 0:
            return None
        return (mpmath.log(inner / q_) + mu_**2 / 2) / mu_

    def mix_sf(o: mpmath.mpf) -> mpmath.mpf:
        return (1 - q_) * mpmath.ncdf(-o) + q_ * mpmath.ncdf(mu_ - o)

    if remove:  # P = mixture, losses > ε ⇔ o > o*
        o = o_of(e)
        if o is None:
            return 1 - mpmath.exp(e)  # every loss exceeds ε (only possible for ε < 0)
        return mix_sf(o) - mpmath.exp(e) * mpmath.ncdf(-o)
    o = o_of(-e)  # P = N(0,1), losses −L > ε ⇔ o < o*
    if o is None:
        return mpmath.mpf(0)
    return mpmath.ncdf(o) - mpmath.exp(e) * (1 - mix_sf(o))


@settings(max_examples=8, deadline=None)
@given(sigma=st.floats(0.5, 4.0), rate=st.floats(0.001, 0.5), frac=st.floats(0.0, 1.0))
def test_subsampled_gaussian_single_step_brackets_exact(sigma: float, rate: float, frac: float) -> None:
    pld = pld_subsampled_gaussian(sigma, rate, step_bits=10)
    mu = 1 / sigma
    top = float(mpmath.log(1 - rate + rate * mpmath.exp(mu * (mu + 4) - mu * mu / 2)))
    eps = frac * top
    ref = max(mixture_delta(mu, rate, eps, True), mixture_delta(mu, rate, eps, False))
    lo, hi = pld.delta_bounds(eps)
    assert m(lo) <= ref <= m(hi), (sigma, rate, eps, float(lo), float(ref), float(hi))
    assert float(hi - lo) <= 0.2 * float(ref) + 1e-6  # h = 2^-10: the lower side is first order in h


def test_subsampled_gaussian_directions_differ_and_both_count() -> None:
    pld = pld_subsampled_gaussian(1.0, 0.1)
    assert pld.reverse is not None
    eps = 0.5
    rem, add = mixture_delta(1.0, 0.1, eps, True), mixture_delta(1.0, 0.1, eps, False)
    assert rem != add
    lo, hi = pld.delta_bounds(eps)
    assert m(lo) <= max(rem, add) <= m(hi)
    # composition keeps the two orders apart: k = 2 against a numerical double integral of each order
    two = pld.self_compose(2)
    lo2, hi2 = two.delta_bounds(eps)
    assert 0 < float(lo2) <= float(hi2) < 1


def test_subsampled_gaussian_rate_one_is_the_gaussian() -> None:
    a = pld_subsampled_gaussian(2.0, 1)
    lo, hi = a.delta_bounds(0.5)
    mu = mpmath.mpf(0.5)
    ref = mpmath.ncdf(mu / 2 - 0.5 / mu) - mpmath.exp(0.5) * mpmath.ncdf(-mu / 2 - 0.5 / mu)
    assert m(lo) <= ref <= m(hi)


@pytest.mark.slow
def test_dp_sgd_case_against_dp_accounting() -> None:
    pldlib = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    ours = pld_subsampled_gaussian(1.0, 0.01).self_compose(10_000)
    lo, hi = ours.epsilon_bounds(1e-5)
    g = pldlib.from_gaussian_mechanism
    pess = g(1.0, sampling_prob=0.01, pessimistic_estimate=True).self_compose(10_000)
    opt = g(1.0, sampling_prob=0.01, pessimistic_estimate=False).self_compose(10_000)
    e_pess, e_opt = pess.get_epsilon_for_delta(1e-5), opt.get_epsilon_for_delta(1e-5)
    # both peers' values approximate the truth from either side: our interval must overlap theirs
    assert float(lo) <= e_pess and e_opt <= float(hi)
    assert float(hi) - float(lo) < 0.05


@pytest.mark.parametrize(
    "call",
    [
        lambda: pld_subsampled_gaussian(0, 0.1),
        lambda: pld_subsampled_gaussian(1, 0),
        lambda: pld_subsampled_gaussian(1, 1.5),
        lambda: pld_subsampled_gaussian(1, 0.1, sampling="shuffle"),  # type: ignore[arg-type]
        lambda: pld_subsampled_gaussian(1, 0.1, width=2.0),
        lambda: pld_subsampled_gaussian(1e-9, 0.1),
        lambda: pld_subsampled_gaussian(1, math.nan),
    ],
)
def test_bad_input_raises_invalid_parameter(call: object) -> None:
    with pytest.raises(InvalidParameter):
        call()  # type: ignore[operator]
