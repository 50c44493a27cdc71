"""Rényi bounds for private selection: the best of a random number ``K`` of runs of one candidate mechanism.

Two laws for ``K`` are covered (Papernot–Steinke 2022, "Hyperparameter tuning with Rényi differential
privacy", ICLR; arXiv:2110.03620):

* the truncated negative binomial ``D_{η,γ}`` on ``{1, 2, …}``, ``η ∈ (−1, ∞)``, ``γ ∈ (0, 1)``:
  ``P(K = k) = (1 − γ)^k · Γ(k + η) / (Γ(η) k!) / (γ^(−η) − 1)`` (``η = 0``: the logarithmic law
  ``P(K = k) = (1 − γ)^k / (k ln(1/γ))``; ``η = 1``: the geometric law ``γ(1 − γ)^(k−1)``);
  :func:`selection_renyi_tnb` is their Theorem 2;
* the Poisson law with mean ``μ`` (``K = 0`` releases nothing); :func:`selection_renyi_poisson` is their
  Poisson theorem with the ``K = 0`` outcome kept (see its docstring).

The proof both rest on (their Lemma for a general law with probability generating function ``f``): the best
of ``K`` runs of ``Q`` has density ``Q(y) f'(F(y))`` at ``y`` (``F`` the CDF of ``Q``; ties broken uniformly,
which "the first run on ties" of i.i.d. runs is), so
``e^{(λ−1) D_λ(A(x)‖A(x'))} ≤ e^{(λ−1) D_λ(Q(x)‖Q(x'))} · sup_y f'(F(y))^λ f'(F'(y))^(1−λ)``, and the sup is
bounded through the tails ``u = P[Q(x) > y]``, ``u' = P[Q(x') > y]`` with a second guarantee of ``Q``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction

from dpcompose._validation import check_same_length, short_repr
from dpcompose.accounting._common import as_sequence, nonnegative, positive
from dpcompose.accounting._exact import (
    Number,
    exact,
    exp_up,
    expm1_down,
    expm1_up,
    log1p_up,
    log_down,
    log_up,
)
from dpcompose.errors import InvalidParameter

__all__ = [
    "check_poisson_mean",
    "check_tnb_parameters",
    "renyi_delta_at",
    "selection_renyi_poisson",
    "selection_renyi_tnb",
    "tnb_log_mean_up",
    "tnb_selection_bound",
]


def check_tnb_parameters(eta: Number, gamma: Number, gamma_name: str = "gamma") -> tuple[Fraction, Fraction]:
    """``(η, γ)`` of the truncated negative binomial law ``D_{η,γ}`` as exact rationals: ``η > −1`` and
    ``γ ∈ (0, 1)``, the range on which the law exists (Papernot–Steinke 2022, arXiv:2110.03620v2,
    Section 2). The one check of these parameters, shared by the accounting, the sampler and
    :class:`~dpcompose.TruncatedNegativeBinomialRuns` (which names γ ``stop_probability``).

    Raises:
        InvalidParameter: naming ``eta`` or ``gamma_name``, when a value is not a finite real number or lies
            outside its range.

    Examples:
        >>> check_tnb_parameters(0, 0.5)
        (Fraction(0, 1), Fraction(1, 2))
    """
    e = exact(eta, "eta")
    g = exact(gamma, gamma_name)
    if not e > -1:
        raise InvalidParameter(
            f"eta={short_repr(eta)} must be greater than −1 (0: logarithmic, 1: geometric)"
        )
    if not 0 < g < 1:
        raise InvalidParameter(
            f"{gamma_name}={short_repr(gamma)} (the stop probability γ) must lie strictly between 0 and 1"
        )
    return e, g


def check_poisson_mean(mu: Number, name: str = "mean") -> Fraction:
    """The mean ``μ > 0`` of a Poisson number of runs as an exact rational (Papernot–Steinke 2022,
    arXiv:2110.03620v2, the Poisson theorem's law). The one check of it, shared by the accounting, the
    sampler and :class:`~dpcompose.PoissonRuns`.

    Raises:
        InvalidParameter: naming ``name``, when ``mu`` is not a finite real number or not positive.

    Examples:
        >>> check_poisson_mean(2)
        Fraction(2, 1)
    """
    m = exact(mu, name)
    if not m > 0:
        raise InvalidParameter(f"{name}={short_repr(mu)} must be positive (the expected number of runs)")
    return m


def _order(alpha: Number, name: str = "alpha") -> Fraction:
    a = exact(alpha, name)
    if not a > 1:
        raise InvalidParameter(f"{name}={alpha!r} must be greater than 1")
    return a


def tnb_log_mean_up(eta: Number, gamma: Number) -> Fraction:
    """An upper bound on ``ln E[K]`` for ``K`` truncated negative binomial ``D_{η,γ}``.

    ``E[K] = η(1 − γ) / (γ(1 − γ^η))`` for ``η ≠ 0`` and ``(1 − γ) / (γ ln(1/γ))`` for ``η = 0``
    (Papernot–Steinke 2022, arXiv:2110.03620v2, Section 2 / Appendix, the mean of ``D_{η,γ}``). ``γ^η`` is
    ``e^t`` with ``t = η ln γ`` bounded on the side that raises the mean; rounded up.

    Examples:
        >>> float(tnb_log_mean_up(1, Fraction(1, 10)))  # geometric: E[K] = 10
        2.302585092994...
    """
    e, g = check_tnb_parameters(eta, gamma)
    # ln γ < 0 rounded up (towards 0); ln γ ≤ γ − 1 keeps it negative when γ is within rounding of 1.
    log_g_up = min(Fraction(log_up(g)), g - 1)
    if e == 0:
        mean = (1 - g) / (g * -log_g_up)  # γ ln(1/γ) rounded down
    elif e > 0:
        # 1 − γ^η = 1 − e^t with t = η ln γ < 0; at the upper t it is smallest. Two lower bounds:
        # −expm1 rounded, and −t/(1 − t) (from e^(−t) ≥ 1 − t), which stays positive for tiny η.
        t = e * log_g_up
        lower = max(Fraction(-expm1_up(t)), -t / (1 - t))
        mean = e * (1 - g) / (g * lower)
    else:
        # η < 0: η/(1 − γ^η) = |η| / (e^t − 1) with t = η ln γ > 0, smallest at the upper ln γ;
        # e^t − 1 ≥ t keeps the bound positive; e^t − 1 grows with t, so past 700 (where a double
        # overflows) e^700 − 1 is a lower bound too.
        t = e * log_g_up
        lower = max(Fraction(expm1_down(min(t, Fraction(700)))), t)
        mean = -e * (1 - g) / (g * lower)
    return Fraction(log_up(mean))


def selection_renyi_tnb(
    alpha: Number,
    epsilon: Number,
    alpha_hat: Number,
    epsilon_hat: Number,
    eta: Number,
    gamma: Number,
) -> Fraction:
    """The ``(λ, ε')``-RDP of the best of ``K ~ D_{η,γ}`` runs of a ``(λ, ε)``- and ``(λ̂, ε̂)``-RDP mechanism.

    ``ε' = ε + (1 + η)(1 − 1/λ̂) ε̂ + (1 + η) ln(1/γ) / λ̂ + ln E[K] / (λ − 1)``, rounded up.

    Source: Papernot–Steinke 2022 (ICLR; arXiv:2110.03620v2), Theorem 2 (the truncated negative binomial
    law, ``η ∈ (−1, ∞)``, ``γ ∈ (0, 1)``, ``λ ∈ (1, ∞)``, ``λ̂ ∈ [1, ∞)``). With ``λ̂ = 1`` the ε̂ term is
    void (pass any ``epsilon_hat``, e.g. 0). The step this rests on: ``f'(q)/f'(q') = ((γ + (1−γ)u') /
    (γ + (1−γ)u))^(1+η)`` with ``u' ≤ (e^ε̂ u)^(1−1/λ̂)`` (RDP's event bound, Mironov 2017 Prop. 10), and
    ``γ^(1/λ̂)(γ + (1−γ)u^(1−1/λ̂)) ≤ γ + (1−γ)u`` (weighted AM–GM and Bernoulli's inequality).

    Args:
        alpha: the order ``λ > 1`` of the bound returned.
        epsilon: the candidate's RDP ``ε`` at ``λ``.
        alpha_hat: the second order ``λ̂ ≥ 1``.
        epsilon_hat: the candidate's RDP ``ε̂`` at ``λ̂`` (ignored when ``λ̂ = 1``).
        eta: ``η > −1`` (0: logarithmic, 1: geometric).
        gamma: ``γ ∈ (0, 1)``.

    Examples:
        >>> eps = selection_renyi_tnb(2, Fraction(1, 10), 4, Fraction(1, 5), 1, Fraction(1, 10))
        >>> round(float(eps), 6)  # 0.1 + 2·(3/4)·0.2 + 2·ln 10/4 + ln 10
        3.853878
    """
    return tnb_selection_bound(eta, gamma)(alpha, epsilon, [(alpha_hat, epsilon_hat)])


def tnb_selection_bound(
    eta: Number, gamma: Number
) -> Callable[[Number, Number, Sequence[tuple[Number, Number]]], Fraction]:
    """Theorem 2 of Papernot–Steinke 2022 for ``K ~ D_{η,γ}``, least over several second orders.

    Returns ``bound(alpha, epsilon, hats)``: the least, over the pairs ``(λ̂, ε̂)`` of ``hats``, of
    :func:`selection_renyi_tnb`'s ``ε'`` for a candidate that is ``(λ, ε)``-RDP and ``(λ̂, ε̂)``-RDP. The
    parts that depend on the law only, ``ln E[K]`` (:func:`tnb_log_mean_up`) and ``ln(1/γ)``, are computed
    once here, not per order; every sum is exact, so each reading equals the least of
    :func:`selection_renyi_tnb` over the pairs.

    Source: Papernot–Steinke 2022 (ICLR; arXiv:2110.03620v2), Theorem 2 (see :func:`selection_renyi_tnb`).

    Raises:
        InvalidParameter: η or γ out of range (here); at a call, ``λ ≤ 1``, ``ε < 0``, an empty ``hats``, a
            ``λ̂ < 1`` or an ``ε̂ < 0`` at a ``λ̂ > 1``.

    Examples:
        >>> bound = tnb_selection_bound(1, Fraction(1, 10))
        >>> round(float(bound(2, Fraction(1, 10), [(1, 0), (4, Fraction(1, 5))])), 6)
        3.853878
    """
    e, g = check_tnb_parameters(eta, gamma)
    law = (1 + e) * Fraction(-log_down(g))  # (1 + η) ln(1/γ), rounded up
    log_mean = tnb_log_mean_up(e, g)

    def bound(alpha: Number, epsilon: Number, hats: Sequence[tuple[Number, Number]]) -> Fraction:
        lam = _order(alpha)
        eps = exact(epsilon, "epsilon")
        if eps < 0:
            raise InvalidParameter(f"epsilon={short_repr(epsilon)} must be non-negative")
        if not hats:
            raise InvalidParameter("hats=[] must hold at least one (alpha_hat, epsilon_hat) pair")
        best: Fraction | None = None
        for alpha_hat, epsilon_hat in hats:
            lam_hat = exact(alpha_hat, "alpha_hat")
            if not lam_hat >= 1:
                raise InvalidParameter(f"alpha_hat={short_repr(alpha_hat)} must be at least 1")
            term = law / lam_hat
            if lam_hat > 1:
                eps_hat = exact(epsilon_hat, "epsilon_hat")
                if eps_hat < 0:
                    raise InvalidParameter(f"epsilon_hat={short_repr(epsilon_hat)} must be non-negative")
                term += (1 + e) * (1 - 1 / lam_hat) * eps_hat
            best = term if best is None or term < best else best
        assert best is not None  # hats is not empty
        return eps + best + log_mean / (lam - 1)

    return bound


def renyi_delta_at(epsilon_hat: Number, alphas: Sequence[Number], epsilons: Sequence[Number]) -> Fraction:
    """The least δ̂, over the given orders, with which an RDP curve implies ``(ε̂, δ̂)``-DP; rounded up, ≤ 1.

    ``δ̂ = min_α exp((α − 1)(r(α) − ε̂ + ln(1 − 1/α)) − ln α)``: the conversion of Balle, Barthe, Gaboardi,
    Hsu, Sato 2020 (AISTATS) Thm 21, ``ε̂ = r(α) + ln((α−1)/α) − (ln δ̂ + ln α)/(α − 1)``, solved for δ̂.

    Examples:
        >>> float(renyi_delta_at(1, [Fraction(2)], [Fraction(0)])) < 0.1
        True
    """
    eh = nonnegative(epsilon_hat, "epsilon_hat")
    a_seq = as_sequence(alphas, "alphas")
    e_seq = as_sequence(epsilons, "epsilons")
    check_same_length(a_seq, "alphas", e_seq, "epsilons")
    best = Fraction(1)
    for i, (a, e) in enumerate(zip(a_seq, e_seq, strict=True)):
        alpha = _order(positive(a, f"alphas[{i}]"), f"alphas[{i}]")
        r = nonnegative(e, f"epsilons[{i}]")
        expo = (alpha - 1) * (r - eh + Fraction(log_up(1 - 1 / alpha))) - Fraction(log_down(alpha))
        if expo < 0:
            best = min(best, Fraction(exp_up(expo)))
    return best


def selection_renyi_poisson(alpha: Number, epsilon: Number, delta_hat: Number, mu: Number) -> Fraction:
    """The ``(λ, ε')``-RDP of the best of ``K ~ Poisson(μ)`` runs (nothing released when ``K = 0``).

    For a candidate that is ``(λ, ε)``-RDP and ``(ε̂, δ̂)``-DP with ``e^ε̂ ≤ 1 + 1/(λ − 1)``:
    ``ε' = ln(e^(−μ) + μ·e^((λ−1)(ε + μδ̂))) / (λ − 1)``, rounded up.

    Source: Papernot–Steinke 2022 (ICLR; arXiv:2110.03620v2), the Poisson theorem (Theorem 6 there), whose
    stated form ``ε + μδ̂ + ln(μ)/(λ − 1)`` drops the released-nothing outcome ``K = 0`` (probability
    ``e^(−μ)`` on both sides): for ``μ < 1`` and a candidate that ignores its input that form is negative,
    so it cannot bound a divergence. Kept here: the density of the best run is ``Q(y) μ e^(−μu)``, and
    ``λu − (λ−1)u' ≥ −(λ−1)δ̂`` when ``u' ≤ e^ε̂ u + δ̂`` and ``(λ−1)e^ε̂ ≤ λ``, so
    ``e^((λ−1)D_λ) ≤ e^(−μ) + μ e^((λ−1)(ε + μδ̂))``. The caller guarantees the condition on ε̂.

    Args:
        alpha: the order ``λ > 1``.
        epsilon: the candidate's RDP at ``λ``.
        delta_hat: the candidate's δ̂ at an ``ε̂ ≤ ln(1 + 1/(λ − 1))``.
        mu: the mean ``μ > 0`` of the number of runs.

    Examples:
        >>> round(float(selection_renyi_poisson(2, 0, 0, 1)), 6)  # ln(e^-1 + 1)
        0.313262
    """
    lam = _order(alpha)
    eps = exact(epsilon, "epsilon")
    dh = exact(delta_hat, "delta_hat")
    if eps < 0 or not 0 <= dh <= 1:
        raise InvalidParameter(f"epsilon={epsilon!r} must be ≥ 0 and delta_hat={delta_hat!r} in [0, 1]")
    m = check_poisson_mean(mu, "mu")
    x = (lam - 1) * (eps + m * dh)
    # ln(e^(−μ) + μ e^x) = x + ln μ + ln(1 + e^(−μ−x)/μ), increasing in x; each step rounded up.
    tail = Fraction(exp_up(-m - x)) / m
    total = x + Fraction(log_up(m)) + Fraction(log1p_up(tail))
    return max(Fraction(0), total / (lam - 1))
