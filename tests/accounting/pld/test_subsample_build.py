"""Wide buckets and the thin subsampled Gaussian (``_pld_subsample.thin``, ``_Buckets.edges``,
``PLD.thin``): never below the exact δ, and close to the full build where long compositions read them."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcompose.accounting import PLD, compose_plds, pld_subsampled_discrete_gaussian, pld_subsampled_gaussian
from dpcompose.accounting._pld import buckets as buckets_mod
from dpcompose.accounting._pld import composition as composition_mod
from dpcompose.accounting._pld import concurrency as concurrency_mod
from dpcompose.accounting._pld import distribution as distribution_mod
from dpcompose.accounting._pld import lattice as lattice_mod
from dpcompose.accounting._pld import orders as orders_mod
from dpcompose.accounting._pld.fourier import log_mgfs
from dpcompose.accounting._pld.side import Side
from dpcompose.accounting._pld.subsample import build as build_mod
from dpcompose.accounting._pld.subsample import cells as cells_mod
from dpcompose.accounting._pld.subsample import continuous as continuous_mod
from dpcompose.accounting._pld.subsample import discrete as discrete_mod

mpmath.mp.dps = 40


def mp(x: Fraction | float) -> mpmath.mpf:
    if isinstance(x, Fraction):
        return mpmath.mpf(x.numerator) / x.denominator
    return mpmath.mpf(x)


def compose_exact(atoms: list[tuple[mpmath.mpf, mpmath.mpf]], k: int) -> list[tuple[mpmath.mpf, mpmath.mpf]]:
    """The k-fold PLD of a finite pair, as (loss, P-mass) atoms (losses add, masses multiply)."""
    out = [(mpmath.mpf(0), mpmath.mpf(1))]
    for _ in range(k):
        out = [(a + b, pa * pb) for a, pa in out for b, pb in atoms]
    return out


def delta_exact(atoms: list[tuple[mpmath.mpf, mpmath.mpf]], eps: float) -> mpmath.mpf:
    e = mpmath.mpf(eps)
    return mpmath.fsum(p * (1 - mpmath.exp(e - loss)) for loss, p in atoms if loss > e)


def finite_pair(draw: st.DrawFn) -> tuple[list[tuple[float, float, float, float]], list[float], list[float]]:
    """A random finite base pair with both masses positive: ``_finite_cells``' outputs (y, ey, ln P, ln Q)
    and the masses e^{ln P}, e^{ln Q} (read exactly from the same floats)."""
    n = draw(st.integers(2, 7))
    wp = [draw(st.floats(0.05, 1.0)) for _ in range(n)]
    wq = [draw(st.floats(0.05, 1.0)) for _ in range(n)]
    lps = [math.log(w / sum(wp)) for w in wp]
    lqs = [math.log(w / sum(wq)) for w in wq]
    outs = [
        (lp - lq, 8 * 2.0**-53 * (abs(lp) + abs(lq) + 1), lp, lq) for lp, lq in zip(lps, lqs, strict=True)
    ]
    return outs, lps, lqs


@st.composite
def _cases(draw: st.DrawFn) -> tuple[object, ...]:
    outs, lps, lqs = finite_pair(draw)
    q = draw(st.sampled_from([0.05, 0.3, 0.7, 0.999]))
    bits = draw(st.integers(4, 9))
    every = draw(st.integers(2, 16))  # every `every`-th lattice loss (and a few random ones) is a start
    salt = draw(st.integers(0, 2**31))
    k = draw(st.integers(1, 3))
    return outs, lps, lqs, q, bits, every, salt, k


def _sparse_starts(cells: cells_mod.Cells, bits: int, every: int, salt: int) -> np.ndarray:
    fin = np.concatenate([cells.lo[np.isfinite(cells.lo)], cells.hi[np.isfinite(cells.hi)], [0.0]])
    j0 = math.floor(float(np.min(fin)) * 2**bits) - 2
    j1 = math.ceil(float(np.max(fin)) * 2**bits) + 2
    j = np.arange(j0, j1 + 1, dtype=np.int64)
    rng = np.random.default_rng(salt)
    keep = (j % every == 0) | (rng.random(j.size) < 0.1) | (np.abs(j) <= 1)
    return j[keep]


def _test_wide_buckets_bracket_exact_enumeration(case: tuple[object, ...]) -> None:
    """Cells cut at a sparse, partly random set of lattice losses (so some cells also straddle a start and
    collapse), both orders of the Poisson-subsampled pair: the certified interval contains the exact δ of
    k-fold compositions at every ε checked (mpmath enumeration of the products)."""
    outs, lps, lqs, q, bits, every, salt, k = case
    assert isinstance(q, float) and isinstance(bits, int) and isinstance(k, int)
    cells = continuous_mod.finite_cells(outs, q, 16 * 2.0**-44)  # type: ignore[arg-type]
    cells.starts = _sparse_starts(cells, bits, every, salt)  # type: ignore[arg-type]
    b = cells_mod.to_buckets(cells, bits, "remove", cells.starts)
    assert b.edges is not None and b.edges.size == b.p.size + 1
    one = cells_mod.from_cells(cells, bits, 1e-18, "poisson", "wide")
    pld = one.self_compose(k) if k > 1 else one
    qq = mp(q)
    rem, add = [], []
    for lp, lq in zip(lps, lqs, strict=True):  # type: ignore[call-overload]
        pm, qm = mpmath.exp(mp(lp)), mpmath.exp(mp(lq))
        mix = (1 - qq) * qm + qq * pm
        loss = mpmath.log(mix / qm)
        rem.append((loss, mix))
        add.append((-loss, qm))
    r_k, a_k = compose_exact(rem, k), compose_exact(add, k)
    top = float(max(x for x, _ in r_k + a_k))
    for eps in sorted({0.0, top / 3, top / 2 + 2.0**-bits / 3, top * 0.9, max(top - 2.0**-bits, 0.0)}):
        ref = max(delta_exact(r_k, eps), delta_exact(a_k, eps))
        lo, hi = pld.delta_bounds(eps)
        assert mp(lo) <= ref * (1 + mpmath.mpf(2) ** -60) + mpmath.mpf(10) ** -300, (eps, lo, ref)
        assert ref <= mp(hi), (eps, float(ref), float(hi), q, bits, every, k)


@settings(max_examples=20, deadline=None)
@given(_cases())
def test_wide_buckets_bracket_exact_enumeration(case: tuple[object, ...]) -> None:
    _test_wide_buckets_bracket_exact_enumeration(case=case)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(_cases())
def test_wide_buckets_bracket_exact_enumeration_thorough(case: tuple[object, ...]) -> None:
    _test_wide_buckets_bracket_exact_enumeration(case=case)


def test_wide_buckets_are_split_between_their_own_ends() -> None:
    """One wide bucket holding one loss: the connect-the-dots split keeps the P-mass and the Q-mass (to
    rounding), so δ at the bucket's two ends is exact and between them it lies on the chord."""
    h = 2.0**-6
    loss = 5.3 * h  # one output: P = 0.5 at loss ℓ (Q = 0.5·e^{−ℓ}), the rest at +∞ under P (Q-mass 1 − that)
    p, r = 0.5, 0.5 * math.exp(-loss) * math.exp(2 * h)  # r = e^{a}·Q with a = 2h, the bucket (2h, 9h]
    b = buckets_mod.Buckets(2, np.array([p]), np.array([r]), np.array([1e-15]), edges=np.array([0, 7]))
    pld = distribution_mod.build_pld(6, b, 1e-18, "one wide bucket")
    up = pld.upper
    assert up.offset == 2 and up.masses.size == 8  # the two ends 2h and 9h, nothing between
    assert up.masses[1:7].sum() == 0
    assert math.isclose(float(up.masses.sum()), p, rel_tol=1e-12)
    q_mass = up.masses[0] * math.exp(-2 * h) + up.masses[-1] * math.exp(-9 * h)
    assert math.isclose(q_mass, 0.5 * math.exp(-loss), rel_tol=1e-12)
    exact = 0.5 * (1 - math.exp(2 * h - loss))  # δ at the lower end, ε = 2h
    assert float(pld.delta(2 * h)) >= exact
    assert math.isclose(float(pld.delta(2 * h)), exact, rel_tol=1e-9)
    for eps in (3 * h, 5 * h, 5.2 * h):  # between the ends: the chord, only the top's mass counts
        chord = float(up.masses[-1]) * (1 - math.exp(eps - 9 * h))
        assert float(pld.delta(eps)) >= 0.5 * (1 - math.exp(eps - loss))
        assert math.isclose(float(pld.delta(eps)), chord, rel_tol=1e-9)


def assert_thin_close(pairs: list[tuple[PLD, PLD]], ks: tuple[int, ...]) -> None:
    """For each (full, thin) order and count k: the two certified intervals of ε(δ) overlap, and the thin
    upper end is within 1e-5 (one step) or 1e-6 (a long composition) relative of the full one."""
    for k in ks:
        rel = 1e-5 if k == 1 else 1e-6
        for one, one_thin in pairs:
            full = distribution_mod.compose_groups([(one, k)], "full") if k > 1 else one
            thin = distribution_mod.compose_groups([(one_thin, k)], "thin") if k > 1 else one_thin
            for d in (1e-6, 1e-10):
                lf, hf = full.epsilon_bounds(d)
                lt, ht = thin.epsilon_bounds(d)
                assert lt <= hf and lf <= ht, (k, d)
                assert float(ht) <= float(hf) * (1 + rel) + 1e-9, (k, d, float(hf), float(ht))


def test_thin_keeps_the_core_and_bounds_the_widths() -> None:
    bits = 14
    lams = np.arange(-200, 130_001, dtype=np.float64) / 2**bits
    keep = build_mod.thin_cuts(lams, bits, lambda t: 0.2 + 0.1 * math.log10(1 / t))
    j = np.arange(-200, 130_001)[keep]
    assert keep[0] and keep[-1]
    widths = np.diff(j)
    assert widths.max() <= 2.0**-10 * 2**bits  # _THIN_WIDEST
    # every lattice loss where the mass lies: the negative ones and those below up_at(3e-5) ≈ 0.65
    core = j[j / 2**bits < 0.65]
    assert np.all(np.diff(core) == 1) and core[0] == -200
    assert np.all(np.diff(j[j / 2**bits > 0.66]) > 1)  # above it, thinned
    assert j.size < 20_000  # the point of it: 130 000 lattice losses cut at fewer than 20 000


def _thin_per_loss(lams: np.ndarray, bits: int, ups: list[float]) -> np.ndarray:
    """``thin``'s rule loss by loss: λ > 0 at or above k of the (sorted) thresholds keeps only the multiples
    of 2**k steps; |j| ≤ 4 and the two ends always stay."""
    u = np.sort(np.nan_to_num(np.array(ups), nan=np.inf))
    level = np.where(lams > 0, np.searchsorted(u, lams, side="right"), 0)
    j = np.rint(np.ldexp(lams, bits)).astype(np.int64)
    keep = (j % (np.int64(1) << level.astype(np.int64)) == 0) | (np.abs(j) <= build_mod.THIN_CORE)
    keep[0] = keep[-1] = True
    return keep


@settings(max_examples=60, deadline=None)
@given(
    j0=st.integers(-3000, 3000),
    n=st.integers(3, 6000),
    bits=st.sampled_from([11, 12, 14, 18]),
    ups=st.lists(
        st.one_of(st.floats(-0.3, 0.5), st.just(math.nan), st.just(math.inf)), min_size=8, max_size=8
    ),
)
def test_thin_takes_the_losses_its_rule_takes(j0: int, n: int, bits: int, ups: list[float]) -> None:
    """``thin`` keeps, by index ranges and strided slices, exactly the losses its per-loss rule keeps."""
    lams = np.arange(j0, j0 + n, dtype=np.float64) / 2**bits
    levels = build_mod.thin_levels(bits)
    assert levels <= len(ups)
    got = build_mod.thin_cuts(lams, bits, lambda t: ups[round(math.log(build_mod.THIN_SHARE / t, 16))])
    if levels == 0:
        assert got.all()
    else:
        assert np.array_equal(got, _thin_per_loss(lams, bits, ups[:levels]))


def test_subsampled_gaussian_builds_only_what_is_read() -> None:
    """The full PLD's sides are built on first use; long compositions use the thin version and never build
    them; the content key (compose_plds' grouping) reads neither."""
    p = pld_subsampled_gaussian(1.0, 0.01)
    assert p.upper_if_built is None and p.thin is not None and p.thin.upper_if_built is None
    assert p.reverse is not None and p.reverse.upper_if_built is None
    long = p.self_compose(distribution_mod.THIN_MIN_COUNT)
    long.epsilon(1e-5)
    assert p.upper_if_built is None and p.reverse.upper_if_built is None and p.thin.upper_if_built is not None
    assert composition_mod.content_key(p) == composition_mod.content_key(pld_subsampled_gaussian(1.0, 0.01))
    assert p.upper_if_built is None
    short = compose_plds([p, p])  # a short composition reads the full PLD
    assert p.upper_if_built is not None
    assert float(short.epsilon(1e-5)) < float(long.epsilon(1e-5))


def test_a_privacy_map_reading_builds_no_lower_side() -> None:
    """ε(δ)'s upper end (what privacy maps read) reads only the steps' upper sides: the lower ones are built
    when an interval asks for them, with the same numbers as when built first."""
    p = pld_subsampled_gaussian(1.0, 0.01)
    long = p.self_compose(300)
    hi = long.epsilon(1e-5)
    t = p.thin
    assert t is not None and t.reverse is not None
    assert t.upper_if_built is not None and t.reverse.upper_if_built is not None
    assert t.lower_if_built is None and t.reverse.lower_if_built is None
    lo, hi2 = long.epsilon_bounds(1e-5)
    # (the order that sets ε here; the other's lower end may be needed or not)
    assert hi2 == hi and t.lower_if_built is not None
    q = pld_subsampled_gaussian(1.0, 0.01)
    assert q.thin is not None and q.thin.reverse is not None
    assert q.thin.lower is not None and q.thin.reverse.lower is not None  # built before anything else is
    assert q.self_compose(300).epsilon_bounds(1e-5) == (lo, hi)


def test_a_refused_lattice_is_refused_before_the_lazy_build() -> None:
    with pytest.raises(Exception, match="use step_bits at most"):
        pld_subsampled_gaussian(0.125, 0.5, step_bits=40)


@pytest.mark.parametrize(
    ("sigma", "rate"),
    [
        (1.0, 0.01),
        pytest.param(0.6, 1e-3, marks=pytest.mark.slow),
        pytest.param(2.0, 0.5, marks=pytest.mark.slow),
        pytest.param(0.8, 1e-4, marks=pytest.mark.slow),
    ],
)
def test_thin_and_full_intervals_agree(sigma: float, rate: float) -> None:
    """Both are certified, so their intervals must overlap; the thin one is at most a little looser where
    compositions use it (300 steps: 3.6e-7 on ε ≈ 4.3 at σ = 0.6, q = 1e-3), and, read alone, is looser in
    one step's far tails, which is why only long compositions use it."""
    p = pld_subsampled_gaussian(sigma, rate)
    assert p.reverse is not None and p.thin is not None and p.thin.reverse is not None
    # each order alone too (δ reads the larger). One step is read from the thin PLD only here: its far
    # upper tail is cut coarser (1.6e-6 relative at σ = 0.8, δ = 1e-10; the add order's, below −ln(1 − q),
    # was 1.3e-3 when negative losses were thinned)
    assert_thin_close([(p, p.thin), (p.reverse, p.thin.reverse)], (1, 300))


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 5000),
    density=st.floats(0.001, 1.0),
    tau=st.floats(-3.0, 3.0).filter(lambda t: abs(t) > 1e-6),
    salt=st.integers(0, 2**31),
)
def test_log_mgfs_of_sparse_sides_bound_the_sum(n: int, density: float, tau: float, salt: int) -> None:
    """``log_mgfs`` sums only the non-zero entries (a thin PLD's tail is mostly zeros): still an upper bound
    on log Σ mⱼe^{τ(offset + j − c)}, and within 1e-8 of it."""
    rng = np.random.default_rng(salt)
    m = np.where(rng.random(n) < density, rng.random(n) * np.exp(-rng.random(n) * 50), 0.0)
    m[rng.integers(0, n)] = 0.5
    side = Side(-n // 3, m, 0.0, 0.0)
    center = 7
    t = tau / max(1.0, n / 100)
    got = float(log_mgfs(side, center, np.array([t]))[0])
    nz = np.flatnonzero(m)
    at = side.offset - center
    terms = (mpmath.mpf(float(m[i])) * mpmath.exp(mpmath.mpf(t) * (at + int(i))) for i in nz)
    exact = mpmath.log(mpmath.fsum(terms))
    assert got >= exact
    assert got - exact <= 1e-8 * (1 + abs(exact))


def test_in_parallel_runs_both_and_raises_the_first_error_first() -> None:
    ran: list[str] = []

    def ok(name: str) -> Callable[[], str]:
        def f() -> str:
            ran.append(name)
            return name

        return f

    def bad(msg: str) -> Callable[[], str]:
        def f() -> str:
            ran.append(msg)
            raise ValueError(msg)

        return f

    assert concurrency_mod.in_parallel(ok("a"), ok("b")) == ("a", "b")
    ran.clear()
    with pytest.raises(ValueError, match="first"):
        concurrency_mod.in_parallel(bad("first"), bad("second"))
    assert sorted(ran) == ["first", "second"]  # both ran to the end
    with pytest.raises(ValueError, match="second"):
        concurrency_mod.in_parallel(ok("a"), bad("second"))


def test_both_orders_read_in_two_threads_as_one_after_the_other(monkeypatch: pytest.MonkeyPatch) -> None:
    """The two orders of a long subsampled composition are read in two threads: the same numbers as read
    one after the other (every read is deterministic; the orders share only the step's build)."""

    def readings() -> list[Fraction]:
        c = pld_subsampled_gaussian(1.0, 0.05).self_compose(400)
        return [c.epsilon(1e-6), *c.epsilon_bounds(1e-8), c.delta(1.0), *c.delta_bounds(2.0)]

    ways = pld_subsampled_gaussian(1.0, 0.05).self_compose(400).orders()
    assert orders_mod.orders_in_parallel(ways.one.recipe, ways.rev.recipe)
    both = readings()
    monkeypatch.setattr(orders_mod, "orders_in_parallel", lambda one, rev: False)
    assert readings() == both


@pytest.mark.parametrize(
    ("delta", "sigma", "rate", "sampling", "ks"),
    [
        (2**20 + 1, 2**20, 0.01, "poisson", (1, 300)),  # make_gaussian's DP-SGD step in grid units
        pytest.param(2**20 + 1, 2**20, 0.05, "without_replacement", (300,), marks=pytest.mark.slow),
        # thinned, and the integers from z_s on are cells of their own (at Δ/σ² just above h)
        (24660, 20_000, 0.1, "poisson", (1,)),
    ],
)
def test_thin_discrete_gaussian_agrees_with_the_full_build(
    delta: int, sigma: int, rate: float, sampling: str, ks: tuple[int, ...]
) -> None:
    """The subsampled discrete Gaussian's thin build (its lattice cuts thinned; the single integers past
    z_s keep narrow buckets around their losses): certified like the full one (the intervals overlap), as
    tight where long compositions use it, and cutting fewer cells."""
    p = pld_subsampled_discrete_gaussian(delta, sigma, rate, sampling=sampling)  # type: ignore[arg-type]
    assert p.thin is not None and p.upper_if_built is None
    pairs = [(p, p.thin)]
    if p.reverse is not None:
        assert p.thin.reverse is not None
        pairs.append((p.reverse, p.thin.reverse))
    assert_thin_close(pairs, ks)
    bits = lattice_mod.DEFAULT_STEP_BITS
    full_cells = discrete_mod.dgauss_cells(bits, delta, Fraction(sigma), rate)
    thin_cells = discrete_mod.dgauss_cells(bits, delta, Fraction(sigma), rate, thin=True)
    assert thin_cells.starts is not None and full_cells.starts is None
    assert thin_cells.lo.size <= full_cells.lo.size


def test_a_refused_discrete_lattice_is_refused_before_the_lazy_build() -> None:
    with pytest.raises(Exception, match="use step_bits at most"):
        pld_subsampled_discrete_gaussian(30, 1, 0.5, step_bits=16)


def test_found_by_review_a_lattice_refused_for_the_cell_below_the_range_is_refused_up_front() -> None:
    """At σ = 1e4 (μ = 1e-4) the loss at the output −1e4 lies far above ln(1 − q), where the cell below
    the outputs' range sits: the constructor checked the smaller range, passed, and the first read built for
    40 s before refusing. Now it refuses at once, naming the step_bits that fits."""
    t0 = time.perf_counter()
    with pytest.raises(Exception, match="use step_bits at most 25"):
        pld_subsampled_gaussian(10000, 0.5, step_bits=26)
    assert time.perf_counter() - t0 < 5


def test_found_by_review_the_thin_twin_is_used_by_a_pld_s_own_count() -> None:
    """One dominant step among 255 negligible ones (256 in all): read through the full PLD (the total count
    had chosen the thin twin, and ε(1e-10) rose 15%)."""
    a = pld_subsampled_gaussian(10.882575090239978, 0.003007339539707772, step_bits=13)
    b = pld_subsampled_gaussian(5000, 1e-6, step_bits=13)
    few = compose_plds([a] + [b] * 254).epsilon(1e-10)
    more = compose_plds([a] + [b] * 255).epsilon(1e-10)
    assert float(more) <= float(few) * 1.001
    assert a.thin is not None and a.thin.upper_if_built is None  # never built


def test_no_thin_twin_where_it_would_equal_the_full_build() -> None:
    assert pld_subsampled_gaussian(1.0, 0.01, step_bits=10).thin is None  # (buckets would stay 1 step wide)
    assert pld_subsampled_gaussian(1.0, 0.01, step_bits=11).thin is not None


def test_found_by_review_the_thin_discrete_twin_keeps_the_atom_at_zero_narrow() -> None:
    """Without replacement, where every integer near loss 0 is a cell of its own (past z_s), the thin build
    had no cut near 0, and the pair's atom at loss 0 shared one wide bucket with the first losses on either
    side: make_sequential's ε jumped 2% at 256 steps, one step's δ(0) was 22% looser. Where thinning skips
    nothing the thin build is now the full one, and the steps next to 0 are always cut."""
    p = pld_subsampled_discrete_gaussian(1, 1, 0.01, sampling="without_replacement")
    assert p.thin is not None
    full = distribution_mod.compose_groups([(p, 256)], "full").epsilon(1e-5)
    thin = distribution_mod.compose_groups([(p.thin, 256)], "thin").epsilon(1e-5)
    assert float(thin) <= float(full) * (1 + 1e-9)
    one = pld_subsampled_discrete_gaussian(3, 2, 0.01, sampling="without_replacement")
    assert one.thin is not None
    assert float(one.thin.delta(0)) <= float(one.delta(0)) * (1 + 1e-9)
    # (thinned: cuts near 0 kept)
    cells = discrete_mod.dgauss_cells(14, 2**20 + 1, Fraction(2**20), 0.01, thin=True)
    assert cells.starts is not None and set(range(-4, 5)) <= set(cells.starts.tolist())


def test_found_by_review_a_short_privacy_loss_composition_builds_only_the_full_step() -> None:
    """PrivacyLoss's window estimate read the thin twin for any count, and a composition of fewer than 256
    then built both (the thin one for the estimate, the full one to compose)."""
    from dpcompose.accounting import PrivacyLoss
    from dpcompose.accounting import _loss as loss_mod

    step = PrivacyLoss.subsampled(PrivacyLoss.gaussian(1, 1.25), 0.02)
    PrivacyLoss.compose([step] * 100).epsilon(1e-5)
    p = loss_mod._pld(step, PrivacyLoss.compose([step] * 100).step_bits())
    assert p.thin is not None and p.thin.upper_if_built is None and p.upper_if_built is not None


@pytest.mark.parametrize("built", [False, True])
def test_found_by_review_lazy_subsampled_plds_pickle(built: bool) -> None:
    """The lazy build had made pld_subsampled_gaussian's results unpicklable (closures); they pickle again,
    built or not, and read the same numbers after loading (the thin twin too)."""
    import pickle

    for p in (pld_subsampled_gaussian(1.0, 0.05), pld_subsampled_discrete_gaussian(5, 4, 0.1)):
        if built:
            p.epsilon(1e-6)
        q = pickle.loads(pickle.dumps(p))
        assert (q.upper_if_built is not None) == built
        assert q.epsilon(1e-6) == p.epsilon(1e-6)
        assert q.lower_if_built is None  # (a privacy map's reading builds no lower side: it pickles unbuilt)
        assert q.epsilon_bounds(1e-6) == p.epsilon_bounds(1e-6)
        assert q.thin is not None and p.thin is not None
        assert q.thin.epsilon(1e-6) == p.thin.epsilon(1e-6)
