"""PLDs of randomized response and of an (ε, δ) pair (Kairouz–Oh–Viswanath 2015)."""

from __future__ import annotations

import math
from fractions import Fraction

from dpcompose._validation import check_finite_nonnegative, check_positive_int
from dpcompose.accounting._common import probability
from dpcompose.accounting._exact import Number, exact
from dpcompose.accounting._pld.distribution import PLD, pld_of_atoms
from dpcompose.accounting._pld.floats import rounding_rel
from dpcompose.accounting._pld.lattice import (
    DEFAULT_STEP_BITS,
    DEFAULT_TAIL,
    check_bits,
    check_loss_cap,
    check_tail,
    constructor_grid,
)
from dpcompose.errors import InvalidParameter

# ---------------------------------------------------------------------------------------------------------
# Mechanisms
# ---------------------------------------------------------------------------------------------------------


def pld_randomized_response(
    epsilon: Number,
    k: int = 2,
    *,
    step_bits: int = DEFAULT_STEP_BITS,
    tail: float = DEFAULT_TAIL,
    aligned: bool = False,
) -> PLD:
    """The PLD of k-ary randomized response with parameter ε (the worst pair of inputs x ≠ x').

    Outputs x, x' and the k − 2 others have P-masses e^ε/(e^ε + k − 1), 1/(e^ε + k − 1), (k − 2)/(e^ε +
    k − 1) and losses ε, −ε, 0: a finite pair, whose δ(ε') = E_P[(1 − e^{ε'−L})₊] is exact (module
    docstring); the lattice adds the connect-the-dots / lumped-pair error of ``build_pld``. dpcompose's
    sampler uses a rational E ≤ e^ε in place of e^ε; RR with E is a post-processing of RR with e^ε (mix
    with the uniform distribution), so this PLD dominates it. For k = 2 this is the pair (ε, 0) of
    :func:`pld_approx`, which dominates every ε-DP mechanism (Kairouz–Oh–Viswanath 2015, Thm 2.5).

    Source: Warner 1965 (binary); Kairouz–Oh–Viswanath 2016, JMLR 17 (k-ary randomized response);
    Kairouz–Oh–Viswanath 2015 (ICML), Thm 2.5 (domination); PLDs of discrete-valued mechanisms:
    Koskela–Jälkö–Prediger–Honkela 2021.

    With ``aligned=True`` the lattice runs through ±ε (h = ε/N, N = ⌈ε·2**step_bits⌉, as in
    :func:`pld_laplace`): no atom is split, and the PLD composes only with PLDs on the same lattice.

    Raises:
        InvalidParameter: ε is negative or not finite, or k < 2, ``aligned`` not a bool, or the lattice would
            span more than 2**26 points (``check_points``).

    Examples:
        >>> lo, hi = pld_randomized_response(1.0).delta_bounds(0)
        >>> float(lo) <= 0.4621171572600098 <= float(hi)
        True
    """
    eps = exact(check_finite_nonnegative(epsilon, "epsilon"), "epsilon")
    kk = check_positive_int(k, "k")
    if kk < 2:
        raise InvalidParameter(f"k={k!r} must be at least 2")
    bits = check_bits(step_bits)
    t = check_tail(tail)
    check_loss_cap(eps, "epsilon")
    e = float(eps)
    # log of the normaliser e^ε + k − 1
    log_z = e + math.log1p((kk - 1) * math.exp(-e))
    grid = constructor_grid(aligned, bits, "randomized_response", eps, Fraction(kk))
    atoms = [(eps, math.exp(e - log_z), -log_z), (-eps, math.exp(-log_z), e - log_z)]
    if kk > 2:
        atoms.append((Fraction(0), (kk - 2) * math.exp(-log_z), math.log(kk - 2) - log_z))
    return pld_of_atoms(bits, atoms, 0.0, 0.0, t, f"RR(ε={float(eps):g}, k={kk})", grid)


def pld_approx(
    epsilon: Number,
    delta: Number,
    *,
    step_bits: int = DEFAULT_STEP_BITS,
    tail: float = DEFAULT_TAIL,
    aligned: bool = False,
) -> PLD:
    """The PLD of the dominating pair of every (ε, δ)-DP mechanism: RR_(ε,δ) of Kairouz–Oh–Viswanath.

    P = (δ, (1−δ)e^ε/(1+e^ε), (1−δ)/(1+e^ε), 0) and Q its reverse: losses +∞ (mass δ), ε and −ε. Its
    privacy region is exactly R(ε, δ), so every (ε, δ)-DP mechanism is dominated by it (is a
    post-processing of it): Kairouz–Oh–Viswanath 2015 (ICML), Thm 2.5, applied to the four-output
    mechanism of their proof of Thm 3.3 (supplement, Sec. 5.1). So composing these PLDs is valid for any
    (ε, δ) children, adaptively (Zhu–Dong–Wang 2022, Thm 10); with ε and δ exact this reproduces the
    optimal composition theorem (Kairouz–Oh–Viswanath 2015, Thm 3.3; heterogeneous: Murtagh–Vadhan 2016)
    up to the lattice.

    Source: Kairouz–Oh–Viswanath 2015 (ICML), Thm 2.5 and Thm 3.3; Murtagh–Vadhan 2016.

    With ``aligned=True`` the lattice runs through ±ε (as in :func:`pld_randomized_response`).

    Raises:
        InvalidParameter: ε negative or not finite, δ outside [0, 1), ``aligned`` not a bool, or the lattice
            would span more than 2**26 points.

    Examples:
        >>> lo, hi = pld_approx(0.5, 1e-6).delta_bounds(0.5)
        >>> float(lo) <= 1e-6 <= float(hi)
        True
    """
    eps = exact(check_finite_nonnegative(epsilon, "epsilon"), "epsilon")
    d = probability(delta, "delta")
    bits = check_bits(step_bits)
    t = check_tail(tail)
    check_loss_cap(eps, "epsilon")
    e = float(eps)
    log1md = math.log1p(-float(d))
    log_z = e + math.log1p(math.exp(-e))
    grid = constructor_grid(aligned, bits, "approx", eps, d)
    atoms = [
        (eps, math.exp(log1md + e - log_z), log1md - log_z),
        (-eps, math.exp(log1md - log_z), log1md + e - log_z),
    ]
    return pld_of_atoms(bits, atoms, float(d), rounding_rel(2), t, f"RR(ε={e:g}, δ={float(d):g})", grid)
