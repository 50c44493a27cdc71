"""Certified dominating pairs for vectors of discrete noise: the discrete Gaussian under an L2 bound on an
integer shift, and the discrete Laplace under an L1 bound.

Independent discrete Gaussian noise on every coordinate is not rotation invariant, so the worst shift of
L2 norm at most D is not the one-dimensional one and no scalar pair is exact. :func:`vector_gaussian_bound`
proves that the pair is nevertheless dominated by a continuous Gaussian pair with a slightly larger μ,
composed with an (0, η) pair whose η is astronomically small at the scales the library uses, and
:func:`vector_discrete_gaussian_loss` returns that pair as a :class:`~dpcompose.accounting.PrivacyLoss`.
For independent discrete Laplace noise the worst integer shift of L1 norm at most D is the one-dimensional
one (:func:`vector_discrete_laplace_loss`).

Examples:
    >>> from fractions import Fraction
    >>> pair = vector_discrete_gaussian_loss(Fraction(2**20 + 4), Fraction(2**20), 16)
    >>> pair.kind, [p.kind for p, _ in pair.parts]
    ('composed', ['approx', 'gaussian'])
    >>> mu, eta = vector_gaussian_bound(Fraction(2), Fraction(1), 4, Fraction(1))
    >>> 2.828 < float(mu) < 2.829 and 0 < eta < Fraction(1, 10**3)
    True
"""

from __future__ import annotations

import math
from fractions import Fraction

from dpcompose.accounting._exact import exp_up, fraction_up, sqrt_up_q
from dpcompose.accounting._loss import PrivacyLoss
from dpcompose.errors import InvalidParameter

__all__ = [
    "MAX_INFLATION",
    "RIPPLE_TARGETS",
    "vector_discrete_gaussian_loss",
    "vector_discrete_laplace_loss",
    "vector_gaussian_bound",
    "vector_shift_dims",
]

PI2_DOWN = Fraction(98696044010893, 10**13)
"""A rational below π² = 9.869604401089358…"""

RIPPLE_TARGETS = (Fraction(1, 2**100), Fraction(1, 2**80), Fraction(1, 2**64))
"""The η tried, least first, by :func:`vector_discrete_gaussian_loss`: the first whose μ inflation is within
:data:`MAX_INFLATION` is used, and reported as the pair's η (so η depends on the target alone)."""

MAX_INFLATION = Fraction(1, 2**10)
"""The pair is refused (None) when μ′/μ ≈ √(1 + τ²/s²) could exceed 1 + 2**-10: for noise that small in its
own units the zCDP bound is the better statement and the mechanism keeps only it."""


def vector_shift_dims(shift: Fraction, size: int | None) -> int:
    """An upper bound on the number of non-zero coordinates of an integer vector of L2 norm ≤ ``shift``:
    each contributes at least 1 to the squared norm, so at most ``⌊shift²⌋``, and at most ``size``."""
    dims = math.floor(shift * shift)
    return dims if size is None else min(dims, size)


def vector_gaussian_bound(
    shift: Fraction, sigma: Fraction, dims: int, tau2: Fraction
) -> tuple[Fraction, Fraction]:
    """``(μ′, η)``, both rounded up, such that the multivariate discrete Gaussian pair is dominated by
    ``Gaussian(μ′) ⊗ A(0, η)``.

    Setting: P = D_{Z^d}(0, s²I) (independent coordinates, ``P(z) ∝ exp(−z²/2s²)`` on Z, s = ``sigma``) and
    Q = P(· − u) for an integer vector u with ‖u‖₂ ≤ D = ``shift`` and at most d′ = ``dims`` non-zero
    coordinates. A(0, η) is the (0, η)-DP pair (P_A = (η, 1 − η, 0) against Q_A = (0, 1 − η, η) on three
    points; Kairouz–Oh–Viswanath 2015). A pair (P, Q) is dominated by (P′, Q′) when H_α(P‖Q) ≤ H_α(P′‖Q′)
    for every α ≥ 0, with the hockey-stick divergence H_α(P‖Q) = sup_S P(S) − αQ(S) (Zhu–Dong–Wang 2022
    Def. 7); the same bound for (Q, P) follows by applying the proof to −u (both sides are symmetric).

    Claim: with any τ² = ``tau2`` > 0, S² = s² + τ², σ*² = s²τ²/S²,

        μ′ = D·S/s²,   η = 1 − L^{d′},   L = (1 − 2Σ_{j≥1} e^{−2π²j²σ*²}) / (1 + 2Σ_{j≥1} e^{−2π²j²s²}),

    (P, Q) ≼ N(0, 1) vs N(μ′, 1), composed with A(0, η). Proof.

    0. Coordinates with u_i = 0 have the same law under P and Q, independent of the others: dropping them
       leaves every H_α unchanged. At most d′ remain, and ‖u‖₂ ≤ D still.
    1. (More information.) Let w = u·τ²/s² and P̃ = P ⊗ N(0, τ²I), Q̃ = Q ⊗ N(w, τ²I). (P, Q) is the image of
       (P̃, Q̃) under the projection (x, e) ↦ x, so H_α(P‖Q) ≤ H_α(P̃‖Q̃) (data processing).
    2. (Sufficiency.) The normalisers of P and Q agree (u is an integer vector), so
       ln(dP̃/dQ̃)(x, e) = (‖u‖² − 2⟨u, x⟩)/2s² + (‖w‖² − 2⟨w, e⟩)/2τ² = ‖u‖²S²/(2s⁴) − ⟨u, x + e⟩/s²,
       a function of y = x + e alone. A pair whose likelihood ratio factors through a map T has the same
       hockey-stick divergences as the pair of T's image laws (the optimal set S = {dP/dQ > α} is a
       preimage under T), so (P̃, Q̃) ≡ (ν, ν(· − u′)) with ν = D_{Z^d}(0, s²I) ∗ N(0, τ²I) and
       u′ = u + w = u·S²/s².
    3. (Poisson summation.) Per coordinate, ν(y) = Σ_k e^{−k²/2s²}φ_τ(y − k)/Z_s. Completing the square,
       e^{−k²/2s²}φ_τ(y − k) = φ_τ(0)·e^{−y²/2S²}·e^{−(k − m)²/2σ*²} with m = y·s²/S², and by the Poisson
       summation formula Σ_k e^{−(k − m)²/2σ*²} = σ*√(2π)·[1 + 2Σ_{j≥1} e^{−2π²j²σ*²}cos(2πjm)], while
       Z_s = s√(2π)·[1 + 2Σ_{j≥1} e^{−2π²j²s²}]. Hence
       ν(y) = N(0, S²)(y)·[1 + 2Σ_j e^{−2π²j²σ*²}cos(2πjm)] / [1 + 2Σ_j e^{−2π²j²s²}] ≥ L·N(0, S²)(y), and
       the d′-dimensional ν satisfies ν ≥ L^{d′}·N(0, S²I) pointwise (with L > 0, ensured below).
    4. (Flagged mixture.) So for any η ≥ 1 − L^{d′} with η < 1 (the bound computed below is one),
       ν = (1 − η)·N(0, S²I) + η·R for a probability measure R (R ≥ 0 as ν ≥ (1 − η)·N(0, S²I)), and
       ν(· − u′) = (1 − η)·N(u′, S²I) + η·R(· − u′). Revealing which component was drawn is more
       information (step 1 again); the revealed pair's divergence is
       (1 − η)·H_α(N(0, S²I)‖N(u′, S²I)) + η·H_α(R‖R(· − u′)) ≤ (1 − η)·H_α(G) + η = H_α(G ⊗ A(0, η))
       for every α ≥ 0 (any H_α ≤ 1 for α ≥ 0; in G ⊗ A(0, η) the common atom of A carries (1 − η)H_α(G)
       and P_A's own atom η). Here G = (N(0, 1), N(‖u′‖/S, 1)) by rotation invariance of the continuous
       Gaussian, and ‖u′‖/S = ‖u‖·S/s² ≤ μ′; H_α of the Gaussian pair is non-decreasing in the shift.

    The bound computed: Σ_{j≥1} e^{−cj²} ≤ x/(1 − x) with x = e^{−c} (j² ≥ j), and σ* ≤ s, so
    1 − L = (A + B)/(1 + B) ≤ A + B ≤ 4x/(1 − x) with A, B the two sums (c = 2π²σ*²), and
    η = 1 − L^{d′} ≤ d′(1 − L) (Bernoulli). μ′ is rounded up (S through an upper square root), η up
    (π² from below, e^{−c} from above). Checked against exact enumeration of the two- and three-dimensional
    pair in ``tests/accounting/test_vector_pairs.py``.

    Args:
        shift: D ≥ 0, the bound on ‖u‖₂ (grid units).
        sigma: s > 0, the discrete Gaussian's parameter (grid units).
        dims: d′ ≥ 0, a bound on the number of non-zero coordinates of u.
        tau2: τ² > 0, the variance of the auxiliary continuous noise (any value is valid).

    Returns:
        ``(μ′, η)`` as exact rationals; η may be 1 (a vacuous bound) when the ripple is not small.

    Raises:
        InvalidParameter: a parameter is out of range.

    Source: Canonne–Kamath–Steinke 2020 §5 (the multivariate discrete Gaussian and its lack of rotation
    invariance, for context); Zhu–Dong–Wang 2022 Def. 7 (dominating pairs); the Poisson summation formula
    Σ_k f(k) = Σ_j f̂(j) for the Gaussian f (e.g. Stein–Shakarchi, Fourier Analysis, Thm 4.2.4); the
    proof above.
    """
    if shift < 0 or sigma <= 0 or tau2 <= 0 or dims < 0:
        raise InvalidParameter(
            f"shift={shift!r}, sigma={sigma!r}, tau2={tau2!r}, dims={dims!r}: need shift >= 0, sigma > 0, "
            "tau2 > 0 and dims >= 0"
        )
    s2 = sigma * sigma
    big_s2 = s2 + tau2
    mu = fraction_up(shift * sqrt_up_q(big_s2) / s2)
    if dims == 0 or shift == 0:
        return mu, Fraction(0)
    star2 = s2 * tau2 / big_s2
    x = Fraction(exp_up(-2 * PI2_DOWN * star2))
    if x >= Fraction(1, 5):  # 4x/(1 − x) ≥ 1: no ripple bound below 1
        return mu, Fraction(1)
    eta = fraction_up(dims * 4 * x / (1 - x))
    return mu, min(eta, Fraction(1))


def vector_discrete_gaussian_loss(shift: Fraction, sigma: Fraction, dims: int) -> PrivacyLoss | None:
    """The dominating pair ``Gaussian(μ′) ⊗ A(0, η)`` of :func:`vector_gaussian_bound` for a discrete
    Gaussian vector (parameter ``sigma`` in grid units, integer shifts of L2 norm ≤ ``shift``, at most
    ``dims`` non-zero), or None.

    For each η target in :data:`RIPPLE_TARGETS` (least first), τ² is the least value on the grid 2**-10
    with 2π²σ*² ≥ n, n = ln(4·dims/η) + 1 (a double, divided by 2·π²'s lower bound); the first target
    for which n < s² and τ²/s² ≤ (1 + :data:`MAX_INFLATION`)²·(1 − 2**-40) − 1 is used (so μ′ is within a
    factor 1 + MAX_INFLATION of D/s: S = √(s² + τ²) and the two outward roundings of μ′ add less than
    2**-40 relative); at the secure float grid's s ≥ 2**20 that is the first, and μ′/μ − 1 < 1e-11. None
    where none is (s below about 35–55 grid units, rising with the number of moved coordinates): there the
    mechanism reports no pair.

    **The η reported is the target itself**, not the ripple bound of :func:`vector_gaussian_bound` at
    that τ², which is about target/e and is checked to be at most the target (it always is: n is chosen
    so that 4·dims·e^{−2π²σ*²} ≤ target/e; if the check ever failed the next target would be tried).
    Any η above the proven bound is valid (step 4 of the proof holds for every η ≥ 1 − L^{d′}), and this
    choice makes η a function of the target alone, so that **more noise never reports a larger η**: the
    target chosen never rises with s or falls with dims. Proof: n does not depend on s, and rises with
    dims (each of its double steps is monotone; ``tests/accounting/test_vector_pairs.py`` checks the
    targets chosen along s and dims); τ² = ⌈2**10·s²n/(s² − n)⌉/2**10, and s²n/(s² − n) = n/(1 − n/s²)
    falls as s rises (n < s²), so τ² does not rise with s and τ²/s² falls; so a target that passes the
    three tests (n < s², the τ²/s² bound, the ripple check, which always passes) at some s and dims
    passes them at every larger s and smaller dims. On the secure float grid (s in [2**20, 2**21]) the
    first target is chosen at every σ. The ripple bound itself is not monotone in σ: the grid doubles at
    each power of two of σ, so more noise can be fewer grid units (σ = 2 is s = 2**20, σ = 1.1 is
    s ≈ 1.1·2**20), where the bound is larger; reported as η, it made a step with more noise offer
    η = 2.8789783848e-31 against 2.8789783847e-31 declared, which the pair budgets of
    :func:`~dpcompose.make_adaptive_sequential` refused.

    Source: :func:`vector_gaussian_bound` (the theorem and its proof); Zhu–Dong–Wang 2022 Def. 7.
    """
    if shift == 0 or dims == 0:
        return PrivacyLoss.approx(0, 0)
    s2 = sigma * sigma
    widest = (1 + MAX_INFLATION) ** 2 * (1 - Fraction(1, 2**40)) - 1  # the largest τ²/s² used
    for target in RIPPLE_TARGETS:
        need = Fraction((math.log(4 * dims) + math.log(float(1 / target)) + 1) / (2 * float(PI2_DOWN)))
        if need >= s2:
            continue
        raw = s2 * need / (s2 - need)  # τ² with σ*² = need
        tau2 = Fraction(math.ceil(raw * 2**10), 2**10)
        if tau2 > widest * s2:
            continue
        mu, eta = vector_gaussian_bound(shift, sigma, dims, tau2)
        if eta > target:  # (never: η is about target/e)
            continue
        return PrivacyLoss.compose([PrivacyLoss.gaussian(mu, 1), PrivacyLoss.approx(0, target)])
    return None


def vector_discrete_laplace_loss(shift: Fraction, scale: Fraction) -> PrivacyLoss:
    """The pair ``discrete_laplace(⌊D⌋, t)`` of independent discrete Laplace noise of scale t on every
    coordinate, for every integer shift u of L1 norm at most D = ``shift``.

    Claim: P = DL_t^{⊗d} (``P(z) ∝ e^{−|z|/t}`` on Z) against Q = P(· − u), u ∈ Z^d with Σ|u_i| = S, is
    dominated (Zhu–Dong–Wang 2022 Def. 7) by the one-dimensional pair DL_t vs DL_t(· − S); a larger shift
    dominates a smaller one, so the pair with shift ⌊D⌋ covers every ‖u‖₁ ≤ D. Proof.

    1. Reduction to two coordinates. Zero coordinates drop out; a negative u_i is the positive one after
       z_i ↦ −z_i (DL is symmetric). If (DL, DL(a)) ⊗ (DL, DL(c)) ≼ (DL, DL(a + c)) for integers a, c ≥ 1,
       then by induction on d (a product of dominating pairs dominates the product: Zhu–Dong–Wang 2022
       Thm 10) the d-dimensional pair is dominated by the shift S.
    2. Sufficient statistics. With X = min(a, max(z, 0)) the loss of the shift-a pair is
       L = ln(P/Q) = (|z − a| − |z|)/t = (a − 2X)/t. So the shift-D pair's loss is (D − 2S_D)/t and the
       product's is (D − 2T)/t, T = X_a + X_c (independent), D = a + c. With r = e^{−1/t}, p₀ = 1/(1 + r),
       the tails are P(X_a ≥ j) = p₀r^j for 1 ≤ j ≤ a (and 0 above a), so P(X_a = 0) = p₀,
       P(X_a = k) = p₀(1 − r)r^k for 0 < k < a, P(X_a = a) = p₀r^a.
    3. Equal means. E_P[e^{−L}] = E_P[dQ/dP] = 1 for every such pair, so with w = e^{2/t},
       E[w^{S_D}] = e^{D/t} = E[w^{X_a}]·E[w^{X_c}] = E[w^T]. By summation by parts, for X ∈ {0, …, D},
       E[w^X] = 1 + (w − 1)·Σ_{j=1}^{D} w^{j−1}P(X ≥ j); hence Σ_j w^{j−1}Δ(j) = 0 for
       Δ(j) = P(T ≥ j) − P(S_D ≥ j).
    4. Single crossing. Take a ≤ c and write P(T ≥ j) = Σ_k P(X_a = k)P(X_c ≥ j − k); with
       P(S_D ≥ j) = p₀r^j the ratio R(j) = P(T ≥ j)/P(S_D ≥ j) is 1 + p₀(1 + (j − 1)(1 − r)) > 1 for
       j ≤ a; p₀(2 + (a − 1)(1 − r)) ≥ 1 for a < j ≤ c (as a(1 − r) ≥ 0); and p₀(1 + (D − j)(1 − r)),
       decreasing in j, for c < j ≤ D. So Δ(j) ≥ 0 up to some j* and Δ(j) ≤ 0 after it.
    5. Hockey stick. H_α(P‖Q) = E_P[(1 − αe^{−L})₊] = E[h(X)] with h(x) = (1 − βw^x)₊, β = αe^{−D/t},
       for both pairs (Q ≪ P), and E[h(X)] = h(0) − Σ_j (h(j − 1) − h(j))·P(X ≥ j). Here
       h(j − 1) − h(j) = β(w − 1)w^{j−1}θ_j with θ_j ∈ [0, 1] non-increasing in j (1 while 1 − βw^j ≥ 0,
       then one partial step, then 0). So H_α(product) − H_α(shift D) = −β(w − 1)Σ_j θ_jw^{j−1}Δ(j)
       ≤ −β(w − 1)θ_{j*}Σ_j w^{j−1}Δ(j) = 0 (the terms with j ≤ j* are ≥ 0 with θ_j ≥ θ_{j*}, the others
       ≤ 0 with θ_j ≤ θ_{j*}), for every α ≥ 0. The reverse order (Q, P) is the same by the reflection
       z_i ↦ u_i − z_i, which swaps P and Q in both pairs.

    (Steps 3–5 are the Karlin–Novikoff cut criterion for the convex order of w^T and w^{S_D}.) Checked
    against exact enumeration in two and three dimensions in ``tests/accounting/test_vector_pairs.py``.

    Args:
        shift: D ≥ 0, a bound on ‖u‖₁ (integer shifts, in the noise's units).
        scale: t > 0, the discrete Laplace scale.

    Source: Zhu–Dong–Wang 2022 Def. 7 and Thm 10; Karlin–Novikoff 1963 (the cut criterion, proved inline
    above); Ghosh–Roughgarden–Sundararajan 2009 (the mechanism); the proof above.

    Examples:
        >>> vector_discrete_laplace_loss(Fraction(7, 2), Fraction(2))
        PrivacyLoss(discrete_laplace(Δ=3, t=2))
    """
    if shift < 0 or scale <= 0:
        raise InvalidParameter(f"shift={shift!r} and scale={scale!r}: need shift >= 0 and scale > 0")
    return PrivacyLoss.discrete_laplace(math.floor(shift), scale)
