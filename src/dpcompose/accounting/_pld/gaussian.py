"""The PLD of the Gaussian mechanism (Balle–Wang 2018, Thm. 8, for its closed form)."""

from __future__ import annotations

from fractions import Fraction

from dpcompose._validation import check_finite_nonnegative, check_finite_positive
from dpcompose.accounting._exact import Number, exact, float_down, float_up
from dpcompose.accounting._pld.distribution import PLD, gaussian_pld, pld_of_atoms
from dpcompose.accounting._pld.lattice import DEFAULT_STEP_BITS, DEFAULT_TAIL, check_bits, check_tail, fmt
from dpcompose.errors import InvalidParameter


def pld_gaussian(
    sensitivity: Number,
    sigma: Number,
    *,
    step_bits: int = DEFAULT_STEP_BITS,
    tail: float = DEFAULT_TAIL,
    width: float = 14.0,
) -> PLD:
    """The PLD of the Gaussian mechanism: with μ = Δ/σ the loss under P is N(μ²/2, μ²), under Q
    N(−μ²/2, μ²) (symmetric in the two orders).

    Buckets over μ²/2 ± ``width``·μ; bucket masses are differences of Φ computed from
    :func:`scipy.special.log_ndtr` with a relative error bound per bucket; the tail beyond the top goes to
    +∞ (upper side), the bottom tail to the lowest point. As long as only Gaussians are composed, the
    result stays a Gaussian PLD (μ's add in quadrature) and δ(ε), ε(δ) are read from the closed form,
    certified in both directions.

    Source: Balle–Wang 2018, Thm 8 (the closed form δ(ε) from which both ends are read); Dong–Roth–Su
    2022, Cor. 3.3 (Gaussians compose to the Gaussian of μ = ‖μᵢ‖₂, used by :func:`compose_plds`); the
    lattice sides for compositions with other PLDs: Koskela–Jälkö–Honkela 2020 (the Gaussian PLD) and
    ``build_pld`` (Doroshenko et al. 2022).

    Raises:
        InvalidParameter: sensitivity negative, σ not positive, or width outside [4, 40]; when the PLD is
            composed with a non-Gaussian one (which builds its lattice), if the lattice would span more than
            2**26 points.

    Examples:
        >>> lo, hi = pld_gaussian(1, 1).delta_bounds(1.0)
        >>> float(lo) <= 0.1269367375066439 <= float(hi)
        True
    """
    sens = exact(check_finite_nonnegative(sensitivity, "sensitivity"), "sensitivity")
    sig = exact(check_finite_positive(sigma, "sigma"), "sigma")
    bits = check_bits(step_bits)
    tl = check_tail(tail)
    w = float(check_finite_positive(width, "width"))
    if not 4 <= w <= 40:
        raise InvalidParameter(f"width={width!r} must be in [4, 40]")
    if sens == 0:
        return pld_of_atoms(bits, [(Fraction(0), 1.0, 0.0)], 0.0, 0.0, tl, "Gaussian(Δ=0)")
    mu_q = sens / sig
    if mu_q > 30:  # checked exactly first: a huge ratio has no float
        raise InvalidParameter(f"sensitivity/sigma={fmt(mu_q)} must be in [1e-8, 30] for a Gaussian PLD")
    mu, mu_lo = float_up(mu_q), float_down(mu_q)  # a larger μ dominates; μ_lo bounds the lower δ
    if not 1e-8 <= mu <= 30:
        raise InvalidParameter(f"sensitivity/sigma={mu:g} must be in [1e-8, 30] for a Gaussian PLD")
    return gaussian_pld(bits, mu, w, tl, f"Gaussian(μ={mu:g})", mu_lo)
