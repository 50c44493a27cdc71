"""Exact privacy-loss atoms of small mechanisms, in mpmath, for tests that compare certified bounds with the
truth by enumeration (shared by the composition-policy and profile tests)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np

Atoms = dict[Fraction, mpmath.mpf]
"""Finite loss → P-mass (a mass at +∞, where a test needs one, is kept apart)."""


def mp(x: Fraction | float | mpmath.mpf) -> mpmath.mpf:
    """x as an mpmath number (a Fraction exactly, at the working precision)."""
    if isinstance(x, Fraction):
        return mpmath.mpf(x.numerator) / x.denominator
    return mpmath.mpf(x)


def dlap_atoms(shift: int, scale: Fraction) -> Atoms:
    """Loss atoms of the discrete Laplace(scale) pair at integer shift ``shift`` (outputs z ≤ 0, 0 < z <
    shift, z ≥ shift)."""
    r = mpmath.exp(-1 / mp(scale))
    atoms: Atoms = defaultdict(lambda: mpmath.mpf(0))
    if shift == 0:
        atoms[Fraction(0)] += 1
        return atoms
    atoms[Fraction(shift) / scale] += 1 / (1 + r)
    c = (1 - r) / (1 + r)
    for z in range(1, shift):
        atoms[Fraction(shift - 2 * z) / scale] += c * r**z
    atoms[-Fraction(shift) / scale] += r**shift / (1 + r)
    return atoms


def rr_atoms(eps: Fraction, k: int) -> Atoms:
    """Loss atoms of k-ary randomized response with parameter ε (the worst pair of inputs)."""
    e = mpmath.exp(mp(eps))
    z = e + k - 1
    atoms: Atoms = defaultdict(lambda: mpmath.mpf(0))
    atoms[eps] += e / z
    atoms[-eps] += 1 / z
    if k > 2:
        atoms[Fraction(0)] += (k - 2) / z
    return atoms


def convolve(parts: list[Atoms]) -> Atoms:
    """The loss atoms of the product pair (losses add, masses multiply)."""
    out: Atoms = {Fraction(0): mpmath.mpf(1)}
    for part in parts:
        nxt: Atoms = defaultdict(lambda: mpmath.mpf(0))
        for a, pa in out.items():
            for b, pb in part.items():
                nxt[a + b] += pa * pb
        out = nxt
    return out


def delta(atoms: Atoms, eps: Fraction | mpmath.mpf) -> mpmath.mpf:
    """δ(ε) = Σ_{ℓ > ε} P(ℓ)(1 − e^{ε−ℓ})."""
    e = mp(eps)
    return mpmath.fsum(p * -mpmath.expm1(e - mp(loss)) for loss, p in atoms.items() if mp(loss) > e)


def exact_epsilon(atoms: Atoms, target: float) -> mpmath.mpf:
    """The least ε with δ(ε) ≤ target, by bisection to 60 halvings (returns the upper end)."""
    lo, hi = mpmath.mpf(0), mpmath.mpf(max(float(loss) for loss in atoms) + 1)
    for _ in range(60):
        mid = (lo + hi) / 2
        if delta(atoms, mid) > target:
            lo = mid
        else:
            hi = mid
    return hi


def gaussian_kernel_sum(j: int, sigma: mpmath.mpf) -> mpmath.mpf:
    """Σ_{z ≥ j} exp(−z²/2σ²) over the integers, summed term by term, to about a unit in the last place of
    the working precision (the tail bound is added; the result is rounded to nearest).

    Past z ≥ 0 the ratio of consecutive terms is at most r = exp(−(2z + 1)/2σ²), so what is left after
    the term t(z) is at most t(z)·r/(1 − r); the sum stops once that is below 10^−(dps+5) of the total
    and adds it. (``mpmath.nsum`` stops when a batch changes the sum by less than an *absolute* 10^−dps:
    slow at large σ, and short by up to 1e-13 relatively on tails near 1e-45.)
    """
    with mpmath.extradps(10):
        two_var = 2 * sigma * sigma
        small = mpmath.mpf(10) ** -(mpmath.mp.dps + 5)
        total = mpmath.mpf(0)
        z = j
        while True:
            term = mpmath.exp(-(mpmath.mpf(z) ** 2) / two_var)
            total += term
            if z >= 0:
                r = mpmath.exp(-(2 * z + 1) / two_var)
                rest = term * r / (1 - r)
                if rest <= small * total:
                    total += rest
                    break
            z += 1
    return +total


def discrete_laplace_moments(scale: float) -> tuple[float, float]:
    """(variance, excess kurtosis) of P[z] ∝ exp(−|z|/scale), summed over |z| ≤ 60·scale (the rest < e⁻⁶⁰)."""
    q = math.exp(-1 / scale)
    z = np.arange(-int(60 * scale), int(60 * scale) + 1, dtype=np.float64)
    pmf = (1 - q) / (1 + q) * q ** np.abs(z)
    var = float(np.sum(pmf * z**2))
    assert math.isclose(var, 2 * q / (1 - q) ** 2, rel_tol=1e-12)
    return var, float(np.sum(pmf * z**4)) / var**2 - 3


def check_counter_moments(
    counter: Any, scale: float, length: int, runs: int, variance: Callable[[float, int], float]
) -> None:
    """Seeded simulation of an online counter (a measurement over ``length`` steps, built with a seeded rng
    and discrete Laplace noise of scale ``scale``): over ``runs`` runs on one Poisson stream, step t's error
    has mean 0 and variance ``variance(σ², t)`` (σ² one noise's variance), each within 5 standard errors —
    √(v/N) for the mean and v·√(κ/N + 2/(N − 1)) for the sample variance, κ the discrete Laplace's excess
    kurtosis (a weighted sum of independent copies has excess kurtosis at most κ)."""
    sigma2, kurtosis = discrete_laplace_moments(scale)
    x = np.random.default_rng(1).poisson(4, size=length)
    truth = np.cumsum(x)
    errors = np.empty((runs, length))
    for r in range(runs):
        q = counter(x)
        errors[r] = [q(t) - truth[t] for t in range(length)]
    for t in range(length):
        v = variance(sigma2, t)
        assert abs(errors[:, t].mean()) <= 5 * math.sqrt(v / runs), t
        assert abs(errors[:, t].var(ddof=1) - v) <= 5 * v * math.sqrt(kurtosis / runs + 2 / (runs - 1)), t
