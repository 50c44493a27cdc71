"""Subsampled discrete noise (and subsampled RR, RR_(ε,δ)): certified PLDs against exact enumeration.

The reference enumerates the integer outputs of the exact pair in 40-digit mpmath (the discrete Gaussian's
tails beyond 60σ are below 1e-700), builds the exact privacy loss distribution of each order — "remove"
((1 − q)Q + qP against Q), "add" (the reverse) and the symmetric without-replacement pair (P*, Q*) of
``_pld_subsample`` — composes it k times by exact convolution (equal losses merged), and reads δ(ε). The
certified interval of every order must contain it.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from fractions import Fraction

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcompose.accounting import (
    PLD,
    PrivacyLoss,
    compose_plds,
    pld_discrete_gaussian,
    pld_discrete_laplace,
    pld_laplace,
    pld_subsampled_discrete_gaussian,
    pld_subsampled_discrete_laplace,
    pld_subsampled_gaussian,
    pld_subsampled_laplace,
)
from dpcompose.accounting._pld.distribution import sides_pld
from dpcompose.accounting._pld.subsample import discrete as discrete_mod
from dpcompose.errors import InvalidParameter, UnsupportedComposition

MP_DPS = 40
mpf = mpmath.mpf
Dist = dict[str, tuple[mpmath.mpf, mpmath.mpf]]  # key → (loss, P-mass)


# ---------------------------------------------------------------------------------------------------------
# The exact reference
# ---------------------------------------------------------------------------------------------------------


def dlap_outputs(delta: int, t: float) -> list[tuple[mpmath.mpf, mpmath.mpf]]:
    """(Q-mass, P-mass) of every output class of the discrete Laplace pair: z ≤ 0, 1 … Δ − 1, z ≥ Δ."""
    r = mpmath.exp(-1 / mpf(t))
    c = (1 - r) / (1 + r)
    outs = [(1 / (1 + r), r**delta / (1 + r))]
    outs += [(c * r**z, c * r ** (delta - z)) for z in range(1, delta)]
    outs.append((r**delta / (1 + r), 1 / (1 + r)))
    return outs


def dgauss_outputs(delta: int, sigma: float) -> list[tuple[mpmath.mpf, mpmath.mpf]]:
    """(Q-mass, P-mass) of the discrete Gaussian pair on |z| ≤ 15σ + Δ (normalised over |z| ≤ 60σ; the
    outputs left out hold less than 1e-48, far below every comparison)."""
    s2 = 2 * mpf(sigma) ** 2
    n = math.ceil(60 * sigma) + 2 * delta
    f = {z: mpmath.exp(-(mpf(z) ** 2) / s2) for z in range(-n, n + 1)}
    norm = mpmath.fsum(f.values())
    k = math.ceil(15 * sigma) + delta
    return [(f[z] / norm, f[z - delta] / norm) for z in range(-k, k + 1)]


def rr_outputs(eps: float, delta: float) -> list[tuple[mpmath.mpf, mpmath.mpf]]:
    """(Q-mass, P-mass) of RR_(ε,δ) (k = 2 randomized response when δ = 0)."""
    e, d = mpmath.exp(mpf(eps)), mpf(delta)
    lo, hi = (1 - d) / (1 + e), (1 - d) * e / (1 + e)
    return [(mpf(0), d), (lo, hi), (hi, lo), (d, mpf(0))]


def _add(dist: Dist, loss: mpmath.mpf, mass: mpmath.mpf) -> None:
    if mass == 0:
        return
    key = "inf" if loss == mpmath.inf else mpmath.nstr(loss, 30)
    old = dist.get(key)
    dist[key] = (loss, mass if old is None else old[1] + mass)


def exact_plds(outs: list[tuple[mpmath.mpf, mpmath.mpf]], q: float) -> dict[str, Dist]:
    """The exact PLDs of the remove, add and without-replacement (sym) pairs."""
    qq = mpf(q)
    rem: Dist = {}
    add: Dist = {}
    sym: Dist = {}
    in_s = mpf(0)
    for base, p in outs:
        mix = (1 - qq) * base + qq * p
        if base == 0:
            _add(rem, mpmath.inf, mix)
            _add(sym, mpmath.inf, mix)
            in_s += mix
            continue
        loss = mpmath.log(mix / base)
        _add(rem, loss, mix)
        _add(add, -loss, base)
        if loss > 0:
            _add(sym, loss, mix)
            _add(sym, -loss, base)
            in_s += mix + base
    _add(sym, mpf(0), 1 - in_s)
    return {"remove": rem, "add": add, "sym": sym}


def convolve(a: Dist, b: Dist) -> Dist:
    out: Dist = {}
    for la, ma in a.values():
        for lb, mb in b.values():
            _add(out, la + lb, ma * mb)
    return out


def power(d: Dist, k: int) -> Dist:
    out = d
    for _ in range(k - 1):
        out = convolve(out, d)
    return out


def delta_of(dist: Dist, eps: float) -> mpmath.mpf:
    e = mpf(eps)
    return mpmath.fsum(
        m * (1 - mpmath.exp(e - loss)) if loss != mpmath.inf else m for loss, m in dist.values() if loss > e
    )


def one_way(p: PLD) -> PLD:
    return sides_pld(p.step_bits, p.upper, p.lower, p.tail, p.description)


def orders(pld: PLD, sampling: str) -> dict[str, PLD]:
    """The certified PLD of each order: remove/add (Poisson) or the symmetric pair (without replacement)."""
    if sampling == "poisson":
        assert pld.reverse is not None
        return {"remove": one_way(pld), "add": pld.reverse}
    assert pld.reverse is None
    return {"sym": pld}


def check_wor(pld: PLD, ref: dict[str, Dist], k: int, epsilons: list[float], rel_width: float) -> None:
    """Without replacement: the upper end is at least the exact δ of the symmetric pair (which dominates the
    mechanism) and the lower end at most that of the "remove" pair (which real neighbours attain: a lower
    bound on the surrogate is not one on the mechanism), each end within ``rel_width`` of its reference."""
    part = pld.self_compose(k) if k > 1 else pld
    sym, rem = power(ref["sym"], k), power(ref["remove"], k)
    for eps in epsilons:
        lo, hi = part.delta_bounds(eps)
        e_sym, e_rem = delta_of(sym, eps), delta_of(rem, eps)
        # (e_rem ≤ e_sym holds exactly; at ε = 0 they are equal and differ only by mpmath's rounding)
        assert mpf(lo.numerator) / lo.denominator <= e_rem, (k, eps, float(lo), float(e_rem))
        assert e_sym <= mpf(hi.numerator) / hi.denominator, (k, eps, float(e_sym), float(hi))
        for dist, gap in ((sym, float(hi) - float(e_sym)), (rem, float(e_rem) - float(lo))):
            above = mpmath.fsum(m for loss, m in dist.values() if loss > mpf(eps) - k * part.step)
            slack = k * part.step * float(above) * 1.01 + 1e-8  # (as in check_contains)
            assert gap <= rel_width * float(delta_of(dist, eps)) + slack, (k, eps, float(lo), float(hi))


def check_contains(
    pld: PLD, ref: dict[str, Dist], sampling: str, k: int, epsilons: list[float], rel_width: float = 0.05
) -> None:
    """Every order's certified δ interval contains the exact δ of its k-fold composition; also the
    PLD's own answer (the larger order). Without replacement: :func:`check_wor`."""
    if sampling == "without_replacement":
        check_wor(pld, ref, k, epsilons, rel_width)
        return
    worst = {e: mpf(0) for e in epsilons}
    for order, part in orders(pld.self_compose(k) if k > 1 else pld, sampling).items():
        dist = power(ref[order], k)
        for eps in epsilons:
            lo, hi = part.delta_bounds(eps)
            exact = delta_of(dist, eps)
            worst[eps] = max(worst[eps], exact)
            assert mpf(lo.numerator) / lo.denominator <= exact <= mpf(hi.numerator) / hi.denominator, (
                order,
                k,
                eps,
                float(lo),
                float(exact),
                float(hi),
            )
            # (the lower side rounds losses down: its error is first order in h, at most h·(the mass of the
            # losses within h of ε or above) per composed step)
            above = mpmath.fsum(m for loss, m in dist.values() if loss > mpf(eps) - k * part.step)
            # (+ 1e-8: the float error bound of composing long PLDs, which the upper side carries)
            slack = k * part.step * float(above) * 1.01 + 1e-8
            assert float(hi - lo) <= rel_width * float(exact) + slack, (order, k, eps, float(lo), float(hi))
    both = pld.self_compose(k) if k > 1 else pld
    for eps in epsilons:
        lo, hi = both.delta_bounds(eps)
        assert float(lo) <= float(worst[eps]) <= float(hi)


# ---------------------------------------------------------------------------------------------------------
# Against exact enumeration
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sampling", ["poisson", "without_replacement"])
@pytest.mark.parametrize("q", [0.01, 0.1, 0.5])
@pytest.mark.parametrize(("delta", "t"), [(1, 1), (1, 5), (2, 2)])
def test_discrete_laplace_one_step_brackets_exact(delta: int, t: int, q: float, sampling: str) -> None:
    pld = pld_subsampled_discrete_laplace(delta, t, q, sampling=sampling, step_bits=12)  # type: ignore[arg-type]
    ref = exact_plds(dlap_outputs(delta, t), q)
    top = float(mpmath.log(1 - q + q * mpmath.exp(mpf(delta) / t)))
    check_contains(pld, ref, sampling, 1, [0.0, top / 4, top / 2, 0.9 * top])


@pytest.mark.parametrize(
    ("delta", "t", "q", "sampling", "k"),
    [
        (1, 1, 0.1, "poisson", 12),
        (2, 3, 0.5, "poisson", 6),
        (1, 2, 0.1, "without_replacement", 12),
        (2, 1, 0.01, "without_replacement", 8),
        (2, 1, 0.75, "without_replacement", 3),
    ],  # an output of loss exactly 0 (z = Δ/2) stays out of S
)
def test_discrete_laplace_compositions_bracket_exact(
    delta: int, t: int, q: float, sampling: str, k: int
) -> None:
    pld = pld_subsampled_discrete_laplace(delta, t, q, sampling=sampling, step_bits=12)  # type: ignore[arg-type]
    ref = exact_plds(dlap_outputs(delta, t), q)
    top = k * float(mpmath.log(1 - q + q * mpmath.exp(mpf(delta) / t)))
    check_contains(pld, ref, sampling, k, [0.0, top / 8, top / 4, top / 2], rel_width=0.1)


@pytest.mark.parametrize("sampling", ["poisson", "without_replacement"])
@pytest.mark.parametrize("q", [0.01, 0.1, 0.5])
@pytest.mark.parametrize(("delta", "sigma"), [(1, 1), (1, 3), (2, 2), (1, 0.5)])
def test_discrete_gaussian_one_step_brackets_exact(delta: int, sigma: float, q: float, sampling: str) -> None:
    pld = pld_subsampled_discrete_gaussian(delta, sigma, q, sampling=sampling, step_bits=12)  # type: ignore[arg-type]
    ref = exact_plds(dgauss_outputs(delta, sigma), q)
    mu = delta / sigma
    scale = float(mpmath.log(1 - q + q * mpmath.exp(mu * mu)))  # the loss at two standard deviations
    check_contains(pld, ref, sampling, 1, [0.0, scale / 4, scale, 2 * scale])


@pytest.mark.parametrize(
    ("delta", "sigma", "q", "sampling"),
    [
        (1, 1, 0.1, "poisson"),
        pytest.param(2, 3, 0.5, "without_replacement", marks=pytest.mark.slow),  # ~1.4 s
        (1, 2, 0.01, "poisson"),
        (2, 1, 0.8, "without_replacement"),
    ],
)
def test_discrete_gaussian_two_steps_bracket_exact(delta: int, sigma: int, q: float, sampling: str) -> None:
    pld = pld_subsampled_discrete_gaussian(delta, sigma, q, sampling=sampling, step_bits=12)  # type: ignore[arg-type]
    ref = exact_plds(dgauss_outputs(delta, sigma), q)
    mu = delta / sigma
    scale = float(mpmath.log(1 - q + q * mpmath.exp(mu * mu)))
    check_contains(pld, ref, sampling, 2, [0.0, scale / 2, scale, 3 * scale], rel_width=0.1)


@pytest.mark.parametrize("sampling", ["poisson", "without_replacement"])
@pytest.mark.parametrize(("eps", "delta", "q"), [(1.0, 0.0, 0.1), (0.5, 1e-3, 0.3), (2.0, 1e-6, 0.01)])
def test_subsampled_finite_pairs_bracket_exact(eps: float, delta: float, q: float, sampling: str) -> None:
    child = PrivacyLoss.approx(eps, delta) if delta else PrivacyLoss.randomized_response(eps)
    pld = PrivacyLoss.subsampled(child, q, sampling).pld(12)
    ref = exact_plds(rr_outputs(eps, delta), q)
    top = float(mpmath.log(1 - q + q * mpmath.exp(mpf(eps))))
    check_contains(pld, ref, sampling, 1, [0.0, top / 3, 0.9 * top, 2 * top])
    check_contains(pld, ref, sampling, 5, [0.0, top, 2 * top], rel_width=0.1)


@settings(max_examples=10, deadline=None)
@given(
    kind=st.sampled_from(["laplace", "gaussian"]),
    delta=st.integers(1, 3),
    scale=st.floats(0.5, 4.0),
    q=st.floats(0.001, 0.9),
    sampling=st.sampled_from(["poisson", "without_replacement"]),
    frac=st.floats(0.0, 1.0),
)
def test_single_step_brackets_exact_over_parameters(
    kind: str, delta: int, scale: float, q: float, sampling: str, frac: float
) -> None:
    if kind == "laplace":
        pld = pld_subsampled_discrete_laplace(delta, scale, q, sampling=sampling, step_bits=10)  # type: ignore[arg-type]
        outs = dlap_outputs(delta, scale)
        top = float(mpmath.log(1 - q + q * mpmath.exp(mpf(delta) / mpf(scale))))
    else:
        pld = pld_subsampled_discrete_gaussian(delta, scale, q, sampling=sampling, step_bits=10)  # type: ignore[arg-type]
        outs = dgauss_outputs(delta, scale)
        mu = mpf(delta) / mpf(scale)
        top = float(mpmath.log(1 - q + q * mpmath.exp(mu * mu + 2 * mu)))
    check_contains(pld, exact_plds(outs, q), sampling, 1, [frac * top], rel_width=0.3)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    kind=st.sampled_from(["laplace", "gaussian"]),
    delta=st.integers(1, 3),
    scale=st.floats(0.5, 6.0),
    q=st.floats(1e-4, 0.99),
    sampling=st.sampled_from(["poisson", "without_replacement"]),
    k=st.integers(1, 3),
    frac=st.floats(0.0, 1.0),
)
def test_compositions_bracket_exact_over_parameters_thorough(
    kind: str, delta: int, scale: float, q: float, sampling: str, k: int, frac: float
) -> None:
    if kind == "laplace":
        pld = pld_subsampled_discrete_laplace(delta, scale, q, sampling=sampling, step_bits=12)  # type: ignore[arg-type]
        outs = dlap_outputs(delta, scale)
        top = float(mpmath.log(1 - q + q * mpmath.exp(mpf(delta) / mpf(scale))))
    else:
        if k > 2 and scale > 1:
            k = 2  # (keep the exact convolution small)
        pld = pld_subsampled_discrete_gaussian(delta, scale, q, sampling=sampling, step_bits=12)  # type: ignore[arg-type]
        outs = dgauss_outputs(delta, scale)
        mu = mpf(delta) / mpf(scale)
        top = float(mpmath.log(1 - q + q * mpmath.exp(mu * mu + 2 * mu)))
    check_contains(pld, exact_plds(outs, q), sampling, k, [frac * k * top], rel_width=0.3)


@pytest.mark.parametrize("sampling", ["poisson", "without_replacement"])
def test_outputs_sparser_than_the_lattice_are_one_cell_each(
    sampling: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Δ/σ = 20, q = 0.9: 49 outputs over 2 million lattice points at h = 2**-12 (7.9 million at the default
    # 2**-14, where searching every lattice point's edges took 5 s and 1.1 GB). Each output is its own cell,
    # and only the lattice losses below the first output a lattice step from the next are searched.
    searched: list[int] = []
    lattice = discrete_mod.lattice_points

    def counted(lo: float, hi: float, bits: int) -> object:
        searched.append(lattice(lo, hi, bits).size)
        return lattice(lo, hi, bits)

    monkeypatch.setattr(discrete_mod, "lattice_points", counted)
    cells = discrete_mod.dgauss_cells(12, 20, Fraction(1), 0.9)
    assert cells.lo.size <= 49 + 2  # the outputs −14 … 34 and the two tails
    assert sum(searched) < 100, searched
    pld = pld_subsampled_discrete_gaussian(20, 1, 0.9, sampling=sampling, step_bits=12)  # type: ignore[arg-type]
    ref = exact_plds(dgauss_outputs(20, 1), 0.9)
    check_contains(pld, ref, sampling, 1, [0.0, 1.0, 50.0, 200.0, 300.0, 400.0])


@pytest.mark.parametrize(
    ("delta", "sigma", "q", "bits"),
    [(20 * 1024, 1024, 0.9, 10), (5, Fraction(1, 2), 0.7, 10), (40, 7, 0.3, 12)],
)
def test_cells_per_output_match_the_lattice_edges(
    delta: int, sigma: Fraction | int, q: float, bits: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where outputs are a lattice step or more apart they are taken one per cell instead of cut at every
    lattice loss's edges: the certified PLD is the same (the edges cut there as finely)."""
    ours = pld_subsampled_discrete_gaussian(delta, sigma, q, step_bits=bits)
    monkeypatch.setattr(discrete_mod, "sparse_from", lambda *a: a[-1])  # lattice edges only
    edges = pld_subsampled_discrete_gaussian(delta, sigma, q, step_bits=bits)
    for e in (0.0, 0.5, 2.0, 10.0, 50.0):
        for a, b in zip(ours.delta_bounds(e), edges.delta_bounds(e), strict=True):
            assert abs(a - b) <= Fraction(1, 10**9) * b + Fraction(1, 10**30), (e, float(a), float(b))


# ---------------------------------------------------------------------------------------------------------
# Without replacement: why one symmetric pair
# ---------------------------------------------------------------------------------------------------------


def test_substitute_orders_mix_in_a_composition_and_the_symmetric_pair_covers_it() -> None:
    # Substitute neighbours D, D′ and subsampled sum queries f and Δ − f: for f the record of D acts as
    # "added", for Δ − f that of D′, so a composition's pair can be remove ⊗ remove ⊗ add. Its δ exceeds
    # both remove³ and add³ (so composing the two orders separately, as dpcompose once did, under-reports),
    # and the symmetric pair's PLD covers every mix.
    ref = exact_plds(dlap_outputs(1, 0.3), 0.3)
    mixed = convolve(power(ref["remove"], 2), ref["add"])
    pure = [power(ref["remove"], 3), power(ref["add"], 3)]
    assert delta_of(mixed, 1.5) > 1.3 * max(delta_of(d, 1.5) for d in pure)  # 0.304 against 0.230
    sym = pld_subsampled_discrete_laplace(1, 0.3, 0.3, sampling="without_replacement").self_compose(3)
    others = [convolve(power(ref["add"], 2), ref["remove"])]
    for e in (0.0, 0.4, 0.8, 1.5, 2.5):
        _, hi = sym.delta_bounds(e)
        for dist in [mixed, *pure, *others]:
            assert delta_of(dist, e) <= mpf(hi.numerator) / hi.denominator, e


def test_without_replacement_pair_is_symmetric_and_the_poisson_orders_are_not() -> None:
    wor = pld_subsampled_discrete_gaussian(3, 2, 0.2, sampling="without_replacement")
    poi = pld_subsampled_discrete_gaussian(3, 2, 0.2)
    assert wor.reverse is None and poi.reverse is not None
    ref = exact_plds(dgauss_outputs(3, 2), 0.2)
    for e in (0.2, 0.8):
        assert delta_of(ref["remove"], e) != delta_of(ref["add"], e)
    # one step at ε ≥ 0: the symmetric pair's δ is the remove order's (its α ≥ 1 half)
    for e in (0.0, 0.5, 1.0):
        assert abs(float(wor.delta(e)) - float(one_way(poi).delta(e))) < 1e-6


@pytest.mark.parametrize(
    "build",
    [
        lambda smp: pld_subsampled_gaussian(1.5, 0.2, sampling=smp),
        lambda smp: pld_subsampled_laplace(0.7, 0.3, sampling=smp),
    ],
)
def test_continuous_without_replacement_is_one_symmetric_pair(build: Callable[[str], PLD]) -> None:
    wor, poi = build("without_replacement"), build("poisson")
    assert wor.reverse is None and poi.reverse is not None
    for e in (0.0, 0.3, 1.0):  # one step at ε ≥ 0: the remove order's δ
        assert abs(float(wor.delta(e)) - float(one_way(poi).delta(e))) < 1e-6
    # k steps: the symmetric pair dominates both orders (it covers every mix of them)
    w3, p3 = wor.self_compose(3), poi.self_compose(3)
    assert p3.reverse is not None
    for e in (0.0, 0.5, 1.5):
        assert w3.delta(e) > 0
        assert w3.delta_bounds(e)[1] >= max(one_way(p3).delta_bounds(e)[0], p3.reverse.delta_bounds(e)[0])


# ---------------------------------------------------------------------------------------------------------
# dpcompose's real sizes
# ---------------------------------------------------------------------------------------------------------

G = 2**30


@pytest.mark.parametrize("q", [0.01, 0.2])
def test_grid_sized_discrete_laplace_matches_the_continuous_one(q: float) -> None:
    # make_laplace(scale=10) at d_in = 1 on a grid of 2**-30: Δ = 2**30 units, t = 10·2**30; its noise is
    # the continuous Laplace(10) up to the grid, so the two PLDs bracket nearly the same numbers
    t0 = time.perf_counter()
    disc = pld_subsampled_discrete_laplace(G, 10 * G, q)
    elapsed = time.perf_counter() - t0
    cont = pld_subsampled_laplace(10, q)
    for k in (1, 50):
        d = disc.self_compose(k) if k > 1 else disc
        c = cont.self_compose(k) if k > 1 else cont
        for delta in (1e-5, 1e-8):
            (dl, dh), (cl, ch) = d.epsilon_bounds(delta), c.epsilon_bounds(delta)
            assert dl <= ch and cl <= dh  # the intervals overlap
            assert abs(float(dh - ch)) <= 1e-6 * float(ch) + 1e-9, (k, delta, float(dh), float(ch))
    assert elapsed < 10  # (≈ 0.02 s; loose for a loaded machine)


@pytest.mark.parametrize(("sigma", "q"), [(1, 0.01), (10, 0.05)])
def test_grid_sized_discrete_gaussian_matches_the_continuous_one(sigma: int, q: float) -> None:
    disc = pld_subsampled_discrete_gaussian(G, sigma * G, q)
    cont = pld_subsampled_gaussian(sigma, q)
    for delta in (1e-5, 1e-9):
        (dl, dh), (cl, ch) = disc.epsilon_bounds(delta), cont.epsilon_bounds(delta)
        assert dl <= ch and cl <= dh
        assert abs(float(dh - ch)) <= 1e-6 * float(ch) + 1e-9, (delta, float(dh), float(ch))
        assert abs(float(dl - cl)) <= 1e-6 * float(cl) + 1e-9, (delta, float(dl), float(cl))


def test_dp_sgd_thousand_steps_through_privacy_loss() -> None:
    step = PrivacyLoss.subsampled(PrivacyLoss.discrete_gaussian(G, G), 0.01)
    loss = PrivacyLoss.compose([step] * 1000)
    lo, hi = loss.epsilon_bounds(1e-5)
    cont = pld_subsampled_gaussian(1.0, 0.01, step_bits=loss.step_bits())
    c_lo, c_hi = cont.self_compose(1000).epsilon_bounds(1e-5)
    assert lo <= c_hi and c_lo <= hi
    assert abs(float(hi - c_hi)) < 1e-3 * float(c_hi)  # measured: 1.82828 against 1.82824
    assert 1.80 < float(lo) <= float(hi) < 1.83


@pytest.mark.slow
def test_dp_sgd_ten_thousand_steps_against_dp_accounting() -> None:
    pldlib = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    step = PrivacyLoss.subsampled(PrivacyLoss.discrete_gaussian(G, G), 0.01)
    lo, hi = PrivacyLoss.compose([step] * 10_000).epsilon_bounds(1e-5)
    g = pldlib.from_gaussian_mechanism
    pess = g(1.0, sampling_prob=0.01, pessimistic_estimate=True).self_compose(10_000)
    opt = g(1.0, sampling_prob=0.01, pessimistic_estimate=False).self_compose(10_000)
    e_pess, e_opt = pess.get_epsilon_for_delta(1e-5), opt.get_epsilon_for_delta(1e-5)
    assert float(lo) <= e_pess and e_opt <= float(hi)
    assert float(hi) - float(lo) < 0.1


# ---------------------------------------------------------------------------------------------------------
# PrivacyLoss.subsampled
# ---------------------------------------------------------------------------------------------------------


def test_privacy_loss_subsampled_is_an_exact_value() -> None:
    child = PrivacyLoss.discrete_gaussian(G, 10 * G)
    a = PrivacyLoss.subsampled(child, 0.01)
    b = PrivacyLoss.subsampled(child, Fraction(0.01), "poisson")
    assert a == b and hash(a) == hash(b)
    assert a.params == (Fraction(0.01), "poisson") and a.parts == ((child, 1),)
    assert a != PrivacyLoss.subsampled(child, 0.01, "without_replacement")
    assert repr(a) == (
        "PrivacyLoss(subsampled(discrete_gaussian(Δ=1073741824, σ=10737418240), q=0.01, poisson))"
    )
    assert repr(PrivacyLoss.subsampled(child, Fraction(1, 3), "without_replacement")).endswith(
        "q=0.333333…, without_replacement))"
    )
    assert "Thm 11" in a.source and a.count() == 1
    with pytest.raises(InvalidParameter):
        PrivacyLoss("subsampled", (Fraction(1, 2), "poisson"), ())
    with pytest.raises(InvalidParameter):
        PrivacyLoss("subsampled", (Fraction(3, 2), "poisson"), ((child, 1),))


def test_privacy_loss_subsampled_refuses_compositions_and_nesting() -> None:
    child = PrivacyLoss.laplace(1, 10)
    many = PrivacyLoss.compose([child, PrivacyLoss.gaussian(1, 3)])
    with pytest.raises(UnsupportedComposition, match="not a product"):
        PrivacyLoss.subsampled(many, 0.1)
    with pytest.raises(UnsupportedComposition):
        PrivacyLoss.subsampled(PrivacyLoss.subsampled(child, 0.1), 0.1)
    for bad in (-0.1, 1.5, math.nan, math.inf):
        with pytest.raises(InvalidParameter, match="rate"):
            PrivacyLoss.subsampled(child, bad)
    with pytest.raises(InvalidParameter, match="sampling"):
        PrivacyLoss.subsampled(child, 0.1, "shuffle")
    with pytest.raises(InvalidParameter, match="child"):
        PrivacyLoss.subsampled(0.5, 0.1)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "child",
    [
        PrivacyLoss.discrete_laplace(2, 4),
        PrivacyLoss.discrete_gaussian(2, 3),
        PrivacyLoss.laplace(1, 2),
        PrivacyLoss.gaussian(1, 2),
        PrivacyLoss.randomized_response(1.0, 3),
        PrivacyLoss.approx(1.0, 1e-6),
    ],
)
def test_rate_one_is_the_child_and_rate_zero_the_identity(child: PrivacyLoss) -> None:
    for sampling in ("poisson", "without_replacement"):
        one = PrivacyLoss.subsampled(child, 1, sampling)
        assert one.pld(10) is child.pld(10)
        zero = PrivacyLoss.subsampled(child, 0, sampling)
        assert zero.delta(0) == 0 and zero.epsilon(0) == 0
        half = PrivacyLoss.subsampled(child, 0.5, sampling)
        assert 0 < half.epsilon(1e-6) < child.epsilon(1e-6)  # amplification


def test_subsampled_composes_with_other_kinds() -> None:
    # mixing a two-order (Poisson) PLD with symmetric ones: every order composes with the same order of the
    # others, here checked against building the same composition from the PLDs by hand
    sub = PrivacyLoss.subsampled(PrivacyLoss.discrete_laplace(1, 2), 0.2)
    lap, rr = PrivacyLoss.laplace(1, 10), PrivacyLoss.randomized_response(0.3)
    loss = PrivacyLoss.compose([sub, sub, lap, rr, sub])
    assert loss.count() == 5
    bits = loss.step_bits()
    by_hand = compose_plds([sub.pld(bits)] * 3 + [lap.pld(bits), rr.pld(bits)])
    assert by_hand.reverse is not None
    (lo, hi), (h_lo, h_hi) = loss.epsilon_bounds(1e-6), by_hand.epsilon_bounds(1e-6)
    assert abs(hi - h_hi) < 1e-7 and abs(lo - h_lo) < 1e-7  # (grouped in another order: other roundings)
    # and against the exact reference: each order of the subsampled parts with the (symmetric) RR
    ref = exact_plds(dlap_outputs(1, 2), 0.2)
    rr_d: Dist = {}
    e = mpmath.exp(mpf(0.3))
    _add(rr_d, mpf(0.3), e / (1 + e))
    _add(rr_d, -mpf(0.3), 1 / (1 + e))
    sub_only = PrivacyLoss.compose([sub, sub, rr])
    got = sub_only.pld(bits)
    for eps in (0.0, 0.2, 0.5):
        lo, hi = got.delta_bounds(eps)
        exact = max(delta_of(convolve(power(ref[o], 2), rr_d), eps) for o in ("remove", "add"))
        assert mpf(lo.numerator) / lo.denominator <= exact <= mpf(hi.numerator) / hi.denominator


def test_without_replacement_privacy_loss_composes_as_one_symmetric_pair() -> None:
    sub = PrivacyLoss.subsampled(PrivacyLoss.discrete_laplace(2, 1), 0.3, "without_replacement")
    two = PrivacyLoss.compose([sub, sub])
    ref = exact_plds(dlap_outputs(2, 1), 0.3)
    mixed = convolve(ref["remove"], ref["add"])
    pld = two.pld(12)
    assert pld.reverse is None
    for eps in (0.0, 0.3, 0.8):
        _, hi = pld.delta_bounds(eps)
        assert delta_of(mixed, eps) <= mpf(hi.numerator) / hi.denominator


# ---------------------------------------------------------------------------------------------------------
# Edges of the parameter range, and bad input
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "build",
    [
        lambda q: pld_subsampled_discrete_laplace(1, 0.034, q, step_bits=8),
        lambda q: pld_subsampled_discrete_laplace(G, 10 * G, q, step_bits=8),
        lambda q: pld_subsampled_discrete_gaussian(3, 0.1, q, step_bits=8),
        lambda q: pld_subsampled_discrete_gaussian(G, G, q, step_bits=8),
        lambda q: pld_subsampled_gaussian(0.125, q, step_bits=8),
        lambda q: pld_subsampled_gaussian(8.0, q, step_bits=8),
        lambda q: pld_subsampled_laplace(0.034, q, step_bits=8),
        lambda q: pld_subsampled_laplace(8.0, q, step_bits=8),
    ],
)
def test_extreme_rates_are_certified_without_warnings(build: Callable[[float], PLD]) -> None:
    prev = None
    for q in (2**-40, 1e-6, 0.5, 1 - 2**-20, 1 - 2**-40, 1 - 2**-52):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            pld = build(q)
            lo, hi = pld.delta_bounds(0.1)
        assert 0 <= lo <= hi <= 1
        if prev is not None:
            assert hi >= prev[0]  # δ grows with the rate (a larger rate dominates)
        prev = (lo, hi)
    _, f_hi = build(1.0).delta_bounds(0.1)  # rate 1: the mechanism itself
    a_lo, a_hi = build(1 - 2**-40).delta_bounds(0.1)
    assert a_lo <= f_hi and abs(float(a_hi - f_hi)) < 1e-3 * float(f_hi) + 1e-7  # (h = 2**-8 apart)


def test_rate_one_and_zero_of_the_constructors() -> None:
    assert pld_subsampled_discrete_laplace(2, 3, 1).epsilon(0) == pld_discrete_laplace(2, 3).epsilon(0)
    assert pld_subsampled_discrete_gaussian(2, 3, 1).delta(1) == pld_discrete_gaussian(2, 3).delta(1)
    for f in (pld_subsampled_discrete_laplace, pld_subsampled_discrete_gaussian):
        assert f(2, 3, 0).delta(0) == 0
        assert f(0, 3, 0.5).delta(0) == 0
    assert float(pld_laplace(1, 1).epsilon(0)) >= float(pld_subsampled_discrete_laplace(1, 1, 0.9).epsilon(0))


@pytest.mark.parametrize(
    "call",
    [
        lambda: pld_subsampled_discrete_laplace(1.5, 1, 0.1),  # type: ignore[arg-type]
        lambda: pld_subsampled_discrete_laplace(True, 1, 0.1),
        lambda: pld_subsampled_discrete_laplace(-1, 1, 0.1),
        lambda: pld_subsampled_discrete_laplace(1, 0, 0.1),
        lambda: pld_subsampled_discrete_laplace(1, math.nan, 0.1),
        lambda: pld_subsampled_discrete_laplace(1, 1, 1.01),
        lambda: pld_subsampled_discrete_laplace(1, 1, -0.01),
        lambda: pld_subsampled_discrete_laplace(1, 1, math.inf),
        lambda: pld_subsampled_discrete_laplace(31, 1, 0.1),
        lambda: pld_subsampled_discrete_laplace(1, 1, 0.1, sampling="replacement"),  # type: ignore[arg-type]
        lambda: pld_subsampled_discrete_gaussian(2**51, 2**50, 0.1),
        lambda: pld_subsampled_discrete_gaussian(1, 2.0**41, 0.1),
        lambda: pld_subsampled_discrete_gaussian(1, 1e-3, 0.1),
        lambda: pld_subsampled_discrete_gaussian(1, 1, math.nan),
        lambda: pld_subsampled_discrete_gaussian(1, 1, 0.1, step_bits=0),
        lambda: pld_subsampled_discrete_gaussian(1, 1, 0.1, tail=1.0),
    ],
)
def test_bad_input_raises_invalid_parameter(call: Callable[[], object]) -> None:
    with pytest.raises(InvalidParameter):
        call()
