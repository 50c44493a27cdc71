"""The PLD composition engine's numerical parts against high-precision arithmetic (mpmath)."""

from __future__ import annotations

import math
from fractions import Fraction as F

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcompose.accounting import pld_laplace, pld_randomized_response
from dpcompose.accounting._pld import distribution as distribution_mod
from dpcompose.accounting._pld import floats as floats_mod
from dpcompose.accounting._pld import fourier as fourier_mod
from dpcompose.accounting._pld import longdouble as longdouble_mod
from dpcompose.accounting._pld import side as side_mod
from dpcompose.accounting._pld import tilt as tilt_mod
from dpcompose.errors import ResourceLimit


def _dft_mp(x: np.ndarray, size: int, count: int) -> list[mpmath.mpc]:
    nz = np.flatnonzero(x)
    with mpmath.workdps(40):
        out = []
        for j in range(count):
            acc = mpmath.mpc(0)
            for n in nz.tolist():
                acc += mpmath.mpf(float(x[n])) * mpmath.expjpi(-2 * mpmath.mpf(j * n % size) / size)
            out.append(acc)
    return out


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), spread=st.floats(5.0, 400.0), count=st.integers(1, 6))
def test_ld_dft_within_its_bound_with_a_double_tail(seed: int, spread: float, count: int) -> None:
    # a long vector (≥ 4096 entries, so the head/tail split applies) with most mass in the middle
    rng = np.random.default_rng(seed)
    n = 5000
    i = np.arange(n)
    x = np.exp(-(((i - n / 2) / spread) ** 2)) * rng.uniform(0.5, 1.5, n)
    x /= x.sum()
    a, b = longdouble_mod.head_range(x, longdouble_mod.LD_HEAD)
    assert 0 < b - a <= n
    size = 1 << 13
    vals, errs = longdouble_mod.ld_dft(x, size, count)
    exact = _dft_mp(x, size, count)
    for j in range(count):
        d = abs(mpmath.mpc(float(vals[j].real), float(vals[j].imag)) - exact[j])
        # the computed value (rounded to complex128 here, hence the small float allowance) is within errs
        assert float(d) <= errs[j] + 4e-16 * float(abs(exact[j])) + 1e-300


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), count=st.integers(1, 6), bits=st.sampled_from([13, 19]))
def test_ld_dft_of_a_sparse_vector_all_in_long_double(seed: int, count: int, bits: int) -> None:
    # few nonzero entries spread over a long vector (a thin step's far tail): all of x is summed in long
    # double, with no double tail; 2**13 reads the tabulated roots of unity, 2**19 (above the table's
    # largest size) their two factors
    rng = np.random.default_rng(seed)
    n = 6000
    x = np.zeros(n)
    nz = rng.choice(n, 300, replace=False)
    x[nz] = rng.pareto(1.0, 300) * 10.0 ** rng.uniform(-30, 0, 300)
    size = 1 << bits
    assert count * 300 <= size  # (the all-long-double case)
    vals, errs = longdouble_mod.ld_dft(x, size, count)
    exact = _dft_mp(x, size, count)
    for j in range(count):
        d = abs(mpmath.mpc(float(vals[j].real), float(vals[j].imag)) - exact[j])
        assert float(d) <= errs[j] + 4e-16 * float(abs(exact[j])) + 1e-300
    assert float(np.max(errs)) < 1e-2 * floats_mod.fft_componentwise(size) * float(np.sum(x))


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), count=st.integers(1, 6))
def test_ld_dft_with_a_sparse_tail_summed_directly_in_double(seed: int, count: int) -> None:
    # a dense head and a sparse tail of small mass (a thin step): the tail is summed directly in double
    # (no FFT: one would raise here), and every output is within its bound
    rng = np.random.default_rng(seed)
    n = 9000
    x = np.zeros(n)
    x[4000:4400] = rng.uniform(0.5, 1.5, 400)
    tail = np.concatenate([rng.choice(4000, 150, replace=False), 4400 + rng.choice(4600, 150, replace=False)])
    x[tail] = rng.uniform(0.0, 1.0, 300) * 10.0 ** rng.uniform(-30, -9, 300)
    x /= x.sum()
    size = 1 << 14
    a, b = longdouble_mod.head_range(x, longdouble_mod.LD_HEAD)
    assert a > 0 and b < n and count * int(np.count_nonzero(x[:a]) + np.count_nonzero(x[b:])) <= size

    def no_fft(*args: object, **kwargs: object) -> object:
        raise AssertionError("the tail went to the FFT")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(np.fft, "rfft", no_fft)
        vals, errs = longdouble_mod.ld_dft(x, size, count)
    exact = _dft_mp(x, size, count)
    for j in range(count):
        d = abs(mpmath.mpc(float(vals[j].real), float(vals[j].imag)) - exact[j])
        assert float(d) <= errs[j] + 4e-16 * float(abs(exact[j])) + 1e-300
    assert float(np.max(errs)) < 1e-2 * floats_mod.fft_componentwise(size)


def test_found_by_review_a_subnormal_tail_stays_within_the_bound() -> None:
    # a tail of 5e-324 entries at angles where 0 < cos < 1/2: each product rounds to 0, 3e-320 in all,
    # which the relative bound alone (1.5e-321) did not cover
    size = 1 << 18
    x = np.zeros(size)
    x[:100] = 1e-307
    tail = np.arange(size // 6 + 1, size // 4)
    x[tail] = 5e-324
    vals, errs = longdouble_mod.ld_dft(x, size, 2)
    nz = np.flatnonzero(x).tolist()
    with mpmath.workdps(40):
        for j in range(2):
            terms = [(mpmath.mpf(float(x[i])), 2 * mpmath.mpf(j * i % size) / size) for i in nz]
            re = mpmath.fsum(v * mpmath.cospi(t) for v, t in terms)
            im = -mpmath.fsum(v * mpmath.sinpi(t) for v, t in terms)
            got = mpmath.mpc(float(vals[j].real), float(vals[j].imag))  # (the rounding: ≤ 1e-321)
            assert abs(got - mpmath.mpc(re, im)) <= errs[j] - 1e-321


def test_ld_unit_roots_are_the_products_of_their_factors() -> None:
    # the table holds, bit for bit, the products the untabulated path forms
    size = 1 << 12
    re, im = longdouble_mod.ld_unit_roots(size)
    t_hi, t_lo, blk = longdouble_mod.ld_root_factors(size)
    m = np.arange(size)
    w = t_hi[m // blk] * t_lo[m % blk]
    assert np.array_equal(re, w.real) and np.array_equal(im, w.imag)
    assert re.dtype == np.longdouble and not re.flags.writeable


def test_ld_dft_bound_is_small_where_it_matters() -> None:
    # the point of the long double path: its bound is far below the double FFT's componentwise bound
    n = 6000
    i = np.arange(n)
    x = np.exp(-(((i - 3000) / 50.0) ** 2))
    x /= x.sum()
    _, errs = longdouble_mod.ld_dft(x, 1 << 14, 4)
    assert float(np.max(errs)) < 1e-2 * floats_mod.fft_componentwise(1 << 14)


def test_tail_count_matches_full_cumsum() -> None:
    rng = np.random.default_rng(1)
    for n in (3, 300, 5000, 70_000):
        m = rng.exponential(1.0, n) * np.exp(-np.linspace(0, 60, n))
        for tail in (0.0, 1e-20, 1e-5, 0.5, 1e9):
            expect = int(np.searchsorted(np.cumsum(m) > tail, True))
            assert side_mod.tail_count(m, tail) == expect


@pytest.mark.parametrize("k", [50, 400])
def test_dropped_frequencies_do_not_change_the_bounds_much(k: int) -> None:
    # a composition long enough for the Fourier path; the interval must contain the exact RR value
    from dpcompose.accounting import optimal_epsilon, pld_randomized_response

    eps0 = 0.05
    lo, hi = pld_randomized_response(eps0).self_compose(k).epsilon_bounds(1e-6)
    exact = optimal_epsilon([eps0] * k, [0] * k, 1e-6)
    assert lo <= exact <= hi
    assert float(hi - lo) < 0.02 * math.sqrt(k / 50)


@settings(max_examples=25, deadline=None)
@given(
    weights=st.lists(st.floats(0.05, 1.0), min_size=2, max_size=4),
    ratios=st.lists(st.floats(-0.9, 0.9), min_size=2, max_size=4),
    k=st.integers(1, 5),
    eps=st.floats(0.0, 2.0),
    bits=st.integers(3, 9),
)
def test_lumped_lower_and_upper_bracket_exact_finite_pairs(
    weights: list[float], ratios: list[float], k: int, eps: float, bits: int
) -> None:
    # a random finite pair (P, Q) with losses off the lattice, composed k times; exact δ by enumeration
    import itertools
    from fractions import Fraction

    n = min(len(weights), len(ratios))
    p = [mpmath.mpf(w) for w in weights[:n]]
    q = [pi * mpmath.exp(-mpmath.mpf(r)) for pi, r in zip(p, ratios[:n], strict=True)]
    sp, sq = sum(p), sum(q)
    p = [x / sp for x in p]
    q = [x / sq for x in q]
    with mpmath.workdps(40):
        exact = mpmath.mpf(0)
        e_eps = mpmath.exp(mpmath.mpf(eps))
        for combo in itertools.product(range(n), repeat=k):
            pp = mpmath.fprod(p[i] for i in combo)
            qq = mpmath.fprod(q[i] for i in combo)
            exact += max(pp - e_eps * qq, 0)
    atoms = [
        (Fraction(mpmath.nstr(mpmath.log(pi / qi), 30)), float(pi), float(mpmath.log(qi)))
        for pi, qi in zip(p, q, strict=True)
    ]
    one = distribution_mod.pld_of_atoms(bits, atoms, 0.0, 0.0, 1e-30, "finite")
    pld = one if k == 1 else one.self_compose(k)
    lo, hi = pld.delta_bounds(eps)
    # (the atoms' losses are rounded to 30 digits; the float masses are within _atoms' stated accuracy)
    assert float(lo) <= float(exact)
    assert float(exact) <= float(hi)


@pytest.mark.parametrize(("eps0", "k", "eps"), [(0.3, 300, 6.0), (0.05, 2000, 3.0), (1.0, 60, 20.0)])
def test_fourier_path_brackets_binomial_compositions(eps0: float, k: int, eps: float) -> None:
    # RR_ε composed k times (the Fourier path, with its window and dropped frequencies): losses ε(2j − k)
    # with binomial masses, so δ is exact; both ends must bracket it, on this lattice and a coarse one
    from dpcompose.accounting import pld_randomized_response

    with mpmath.workdps(50):
        e0 = mpmath.mpf(eps0)
        p = mpmath.exp(e0) / (1 + mpmath.exp(e0))
        exact = mpmath.fsum(
            mpmath.binomial(k, j) * p**j * (1 - p) ** (k - j) * -mpmath.expm1(eps - e0 * (2 * j - k))
            for j in range(k + 1)
            if e0 * (2 * j - k) > eps
        )
    for bits in (14, 9):
        lo, hi = pld_randomized_response(eps0, step_bits=bits).self_compose(k).delta_bounds(eps)
        assert float(lo) <= float(exact) <= float(hi), (bits, float(lo), float(exact), float(hi))
        if bits == 14:  # (on the coarse lattice the atoms' split alone costs ~1e-3 relative)
            assert float(hi - lo) <= 1e-3 * float(exact) + 1e-15


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8))
def test_random_compositions_lower_end_not_above_dp_accounting(seed: int) -> None:
    # dp_accounting's pessimistic PLD at a fine discretisation (1e-5) is at or above the truth on these
    # inputs; a certified lower end above it would be a bug on one side or the other
    import random

    pl = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    from dpcompose.accounting import (
        compose_plds,
        pld_gaussian,
        pld_laplace,
        pld_randomized_response,
        pld_subsampled_gaussian,
    )

    rng = random.Random(seed)
    ours: list[distribution_mod.PLD] = []
    peer = None
    for _ in range(rng.randint(2, 4)):
        kind = rng.choice(["lap", "gau", "rr", "sub"])
        k = rng.choice([1, 5, 50, 300])
        h = 1e-5
        if kind == "lap":
            b = rng.uniform(0.5, 20)
            o, p = pld_laplace(1, b), pl.from_laplace_mechanism(b, value_discretization_interval=h)
        elif kind == "gau":
            s = rng.uniform(0.5, 20)
            o, p = pld_gaussian(1, s), pl.from_gaussian_mechanism(s, value_discretization_interval=h)
        elif kind == "rr":
            e = rng.uniform(0.01, 1.0)
            o = pld_randomized_response(e)
            p = pl.from_randomized_response(2 / (1 + math.exp(e)), 2, value_discretization_interval=h)
        else:
            s, q = rng.uniform(0.8, 3), rng.uniform(0.001, 0.1)
            o = pld_subsampled_gaussian(s, q)
            p = pl.from_gaussian_mechanism(s, sampling_prob=q, value_discretization_interval=h)
        ours += [o] * k
        pk = p.self_compose(k) if k > 1 else p
        peer = pk if peer is None else peer.compose(pk)
    assert peer is not None
    delta = rng.choice([1e-3, 1e-6, 1e-9])
    lo, hi = compose_plds(ours).epsilon_bounds(delta)
    assert float(lo) <= float(peer.get_epsilon_for_delta(delta)) * (1 + 1e-9) <= float(hi) * 1.01


def _log_mgf_mp(masses: np.ndarray, offset: int, center: int, tau: float) -> mpmath.mpf:
    with mpmath.workdps(50):
        acc = mpmath.mpf(0)
        for j in np.flatnonzero(masses).tolist():
            acc += abs(mpmath.mpf(float(masses[j]))) * mpmath.exp(mpmath.mpf(tau) * (offset + j - center))
        return mpmath.log(acc)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 3000),
    modes=st.integers(1, 3),
    spread=st.floats(0.5, 300.0),
    offset=st.integers(-5000, 5000),
    center=st.integers(-3000, 3000),
    scale=st.floats(-6.0, 1.0),
)
def test_log_mgfs_bound_the_exact_ones_tightly(
    seed: int, n: int, modes: int, spread: float, offset: int, center: int, scale: float
) -> None:
    # masses with one to three modes far apart (so the summed blocks need not be one run), zeros, a few
    # negative entries (stored float masses may be), tiny far tails; τ from 1e-6 to 10 per step, both signs
    rng = np.random.default_rng(seed)
    i = np.arange(n)
    m = np.zeros(n)
    for c in rng.integers(0, n, modes):
        m += np.exp(-(((i - c) / spread) ** 2))
    m *= rng.uniform(0.5, 1.5, n)
    m[rng.random(n) < 0.2] = 0.0
    m[rng.random(n) < 0.02] *= -1e-3
    side = side_mod.Side(offset, m, 0.0, 0.0)
    taus = np.array([10.0**scale, -(10.0**scale), 3e-3, -3e-3, 0.0])
    got = fourier_mod.log_mgfs(side, center, taus)
    for t, g in zip(taus.tolist(), got.tolist(), strict=True):
        if not np.any(m != 0):
            assert g == -math.inf
            continue
        exact = _log_mgf_mp(m, offset, center, t)
        assert g >= exact  # an upper bound
        # and a tight one: the blocks that can matter are summed exactly, the rest add ≤ e^-60 of the sum each
        assert g - exact <= 1e-8 + 1e-11 * (abs(float(exact)) + 800 + abs(t) * 10_000)


def test_log_mgfs_on_a_long_side_with_its_mass_in_a_few_blocks() -> None:
    # the case the blocks are for: 200,000 entries, all the mass within 700 of one point (down to 1e-300
    # and subnormals at its edges), exact zeros elsewhere (empty blocks)
    n = 200_000
    i = np.arange(n, dtype=np.float64)
    m = np.where(np.abs(i - 1000.0) < 700, np.exp(-(((i - 1000.0) / 27.0) ** 2)), 0.0)
    side = side_mod.Side(-1000, m, 0.0, 0.0)
    taus = np.array([1e-4, -1e-4, 0.05, -0.05, 2.0, -2.0])
    got = fourier_mod.log_mgfs(side, 0, taus)
    for t, g in zip(taus.tolist(), got.tolist(), strict=True):
        exact = float(_log_mgf_mp(m, -1000, 0, t))
        assert exact <= g <= exact + 1e-8


def test_ld_dft_far_frequencies_within_their_bound() -> None:
    # the wide long-double budget (_LD_WIDE_FREQ): a few hundred entries carry the mass (a small-rate step),
    # so thousands of frequencies are recomputed, in passes of many frequencies at once
    n = 6000
    i = np.arange(n)
    x = np.where(i < 400, np.exp(-((i / 40.0) ** 2)), 1e-25)
    x /= x.sum()
    size = 1 << 14
    count = longdouble_mod.LD_WIDE_FREQ
    vals, errs = longdouble_mod.ld_dft(x, size, count)
    assert vals.size == errs.size == count
    with mpmath.workdps(40):
        for j in (0, 1, 255, 256, 1000, count - 1):
            acc = mpmath.mpc(0)
            for k in np.flatnonzero(x).tolist():
                acc += mpmath.mpf(float(x[k])) * mpmath.expjpi(-2 * mpmath.mpf(j * k % size) / size)
            d = abs(mpmath.mpc(float(vals[j].real), float(vals[j].imag)) - acc)
            assert float(d) <= errs[j] + 4e-16 * float(abs(acc)) + 1e-300
    # a pass boundary changes nothing: the first 256 are those of a 256-frequency call
    v2, e2 = longdouble_mod.ld_dft(x, size, 256)
    assert np.array_equal(vals[:256], v2) and np.array_equal(errs[:256], e2)


def test_running_out_of_memory_in_a_composition_says_what_to_change(monkeypatch: pytest.MonkeyPatch) -> None:
    # σ = 0.125 at rate 0.01 over 1000 steps needs a window of 2**25 points (2.5 GB at its peak); with less
    # memory numpy's MemoryError came after 27 s with no message. Simulated here by an FFT that cannot
    # allocate: the library's own error (a DPError), naming step_bits.
    from dpcompose.accounting import pld_laplace

    def no_memory(*args: object, **kwargs: object) -> object:
        raise MemoryError

    pld = pld_laplace(1, 10).self_compose(200)
    monkeypatch.setattr(np.fft, "rfft", no_memory)
    with pytest.raises(ResourceLimit, match=r"FFT window of \d+ lattice points .* smaller step_bits"):
        pld.epsilon(1e-6)
    # (found by review: bare in the tilted composite's shift, just after the FFT)
    monkeypatch.undo()
    monkeypatch.setattr(np, "roll", no_memory)
    with pytest.raises(ResourceLimit, match=r"FFT window of \d+ lattice points .* smaller step_bits"):
        pld_laplace(1, 10).self_compose(200).epsilon(1e-6)


def test_wide_long_double_set_only_where_it_lowers_the_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # Up to _LD_WIDE_FREQ low frequencies are recomputed in long double where the heads are narrow. For
    # 1000 × Laplace(200) that took 16 of 30 ms and moved ε by 3e-11 relative: the frequencies left keep an
    # error that dominates, or the error is already negligible against the tilted total. At q = 1e-5 the
    # wide set lowers the bound 400-fold, and is still used.
    from dpcompose.accounting import pld_laplace, pld_subsampled_gaussian

    counts: list[int] = []
    real = longdouble_mod.ld_dft

    def recorded(x: np.ndarray, size: int, count: int, head: tuple[int, int] | None = None) -> object:
        counts.append(count)
        return real(x, size, count, head)

    monkeypatch.setattr(fourier_mod, "ld_dft", recorded)
    lo, hi = pld_laplace(1, 200).self_compose(1000).epsilon_bounds(1e-6)
    assert counts and max(counts) <= longdouble_mod.LD_MAX_FREQ
    counts.clear()
    pld_subsampled_gaussian(0.6, 1e-5).self_compose(100_000).epsilon(1e-6)
    assert max(counts) > longdouble_mod.LD_MAX_FREQ
    # the wide set everywhere gives the same interval to 1e-9 relative
    monkeypatch.setattr(fourier_mod, "LD_WIDE_GAIN", 0.0)
    monkeypatch.setattr(tilt_mod, "LD_TOL", 0.0)
    counts.clear()
    lo_w, hi_w = pld_laplace(1, 200).self_compose(1000).epsilon_bounds(1e-6)
    assert max(counts) > longdouble_mod.LD_MAX_FREQ
    assert abs(float(hi) - float(hi_w)) <= 1e-9 * float(hi)
    assert abs(float(lo) - float(lo_w)) <= 1e-9 * float(lo)


# --- the N error carried through a composition (side.composed_nq_err) -------------------------------------


def _n_side(nq: list[float], nq_err: float) -> side_mod.Side:
    return side_mod.Side(0, np.full(len(nq), 1 / len(nq)), 0.0, 0.0, np.array(nq), nq_err)


def _n_err_exact(items: list[tuple[side_mod.Side, int]]) -> mpmath.mpf:
    """Π(nᵢ + eᵢ)^{kᵢ} − Πnᵢ^{kᵢ} in 700 digits (e/n may be 1e-450), nᵢ = norm1_up(nqᵢ) (the bound the
    function certifies)."""
    with mpmath.workdps(700):
        a, b = mpmath.mpf(1), mpmath.mpf(1)
        for sd, k in items:
            assert sd.nq is not None
            n = mpmath.mpf(floats_mod.norm1_up(sd.nq))
            a *= n**k
            b *= (n + mpmath.mpf(sd.nq_err)) ** k
        return b - a


@pytest.mark.parametrize(
    "items",
    [
        [(_n_side([0.3, 0.2], 1e-9), 3), (_n_side([0.7], 2e-12), 5)],  # the ordinary case
        [(_n_side([0.0, 0.0], 1e-3), 3), (_n_side([0.5], 1e-6), 2)],  # a zero-norm child: E = Π(n + e)^k
        [(_n_side([1e200, 1e200], 1e-250), 2)],  # Πn^k = 4e400 overflows; E ≈ 8e-50 does not
        [(_n_side([1e-200, 1e-200], 1e-100), 2)],  # Πn^k = 4e-400 underflows to 0; E ≈ 1e-200 does not
        [(_n_side([3.0], 1e-15), 600), (_n_side([2.0], 1e-300), 1)],  # Π(n + e)^k ≈ 1e286, e/n = 5e-301
    ],
)
def test_composed_n_error_is_an_upper_bound_and_tight(items: list[tuple[side_mod.Side, int]]) -> None:
    got = side_mod.composed_nq_err(items)
    exact = _n_err_exact(items)
    with mpmath.workdps(700):  # (the exponent's own rounding, a few ulps of L_B ≈ 921, is ~1e-12 of E)
        assert exact <= mpmath.mpf(got) <= exact * (1 + mpmath.mpf(10) ** -11), (got, exact)


def test_composed_n_error_edge_cases() -> None:
    exact_zero = _n_side([0.0], 0.0)
    assert side_mod.composed_nq_err([(exact_zero, 1), (_n_side([1e300], 1e300), 9)]) == 0.0  # both are 0
    assert side_mod.composed_nq_err([(_n_side([0.5], 0.0), 4)]) == 0.0  # no error to carry
    assert side_mod.composed_nq_err([(_n_side([1e300], 1e-10), 3)]) == math.inf  # E ≈ 3e590
    assert side_mod.composed_nq_err([(_n_side([1e-300], 1e-300), 2)]) > 0  # E = 3e-600: not a float, not 0


def test_lower_composition_carries_an_n_error_whose_product_underflows() -> None:
    # Πnᵢ^{kᵢ} underflows while the carried error does not: the composite's nq_err still bounds it
    items = [(_n_side([1e-200, 1e-200], 1e-100), 2)]
    out = fourier_mod.compose_many(items, False, 1e-18)
    assert mpmath.mpf(out.nq_err) >= _n_err_exact(items)


def test_a_pairwise_composition_carries_the_proven_n_error() -> None:
    """compose_sides carries the children's N errors by composed_nq_err (one copy each) plus its
    convolution's error bound: at least the exact Π(nᵢ + eᵢ) − Πnᵢ, and a number where a child is exactly 0
    against an infinite error in the other (0·∞ read NaN)."""
    pairs = [
        (_n_side([0.3, 0.2], 1e-9), _n_side([0.7], 2e-12)),
        (_n_side([1e200, 1e200], 1e-250), _n_side([3.0], 1e-15)),
        (_n_side([1e-200, 1e-200], 1e-100), _n_side([1e-200], 1e-100)),
    ]
    for a, b in pairs:
        out = side_mod.compose_sides(a, b, False, 0.0)
        with mpmath.workdps(700):
            assert mpmath.mpf(out.nq_err) >= _n_err_exact([(a, 1), (b, 1)])
    zero = _n_side([0.0, 0.0], 0.0)
    for a, b in [(_n_side([0.5], math.inf), zero), (zero, _n_side([0.5], math.inf))]:
        out = side_mod.compose_sides(a, b, False, 0.0)
        assert out.nq is not None and not out.nq.any()
        assert 0 <= out.nq_err < 1e-300, out.nq_err  # the composite is exactly 0; only the rounding bound


def test_pairwise_compositions_read_the_pinned_certified_bounds() -> None:
    """Short lattices compose by compose_sides (no Fourier path): both ends of δ and ε, pinned exactly
    (the N error through composed_nq_err rises by ~1e-14 of itself and moves no reading)."""
    rr = pld_randomized_response(1.0, step_bits=6).self_compose(5)
    assert rr.delta_bounds(1.0) == (F(1209445552483783, 2**51), F(302361388122779, 2**49))
    assert rr.epsilon_bounds(1e-6) == (F(703686767791161, 2**47), F(5629494142336967, 2**50))
    mixed = pld_laplace(1, 2, step_bits=8).compose(pld_randomized_response(0.5, step_bits=8))
    assert mixed.delta_bounds(0.5) == (F(4960715588734359, 2**55), F(4960715588794717, 2**55))
