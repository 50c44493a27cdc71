"""Report noisy max, noisy top-k and the private quantile (issue 15): exact output distributions.

The mechanism releases ``argmax_i (r_i + Z_i)`` (lowest index on ties) for integer grid indices ``r`` and
iid discrete Laplace ``Z`` of scale ``t``. :func:`argmax_distribution` computes ``P[i]`` for every ``i`` in
closed form with mpmath: on each interval of ``z`` between the breakpoints, ``p(z)`` and every CDF factor
``P[Z_j <= r_i + z - r_j (- 1 if j < i)]`` are of the form ``α + β·q^(γz)``, so the sum over ``z`` is a
finite sum of geometric series (no truncation). The privacy tests compare the exact loss
``max_i |log P[i] - log P'[i]|`` over neighbouring score vectors with the privacy map.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import Counter
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpcompose as dp
from dpcompose.measurements._noisy_max import Scores, noisy_argmax
from dpcompose.measurements._sampling import SeededSource

mpmath.mp.dps = 60


def _geometric(x: Any, lo: float, hi: float) -> Any:
    """Σ_{z=lo}^{hi} x^z (lo may be -inf, hi may be +inf; the sum converges there)."""
    if x == 1:
        assert math.isfinite(lo) and math.isfinite(hi)
        return mpmath.mpf(int(hi) - int(lo) + 1)
    if lo == -math.inf:
        assert x > 1
        return x ** int(hi) / (1 - 1 / x)
    if hi == math.inf:
        assert x < 1
        return x ** int(lo) / (1 - x)
    return (x ** int(lo) - x ** (int(hi) + 1)) / (1 - x)


def _mul(a: dict[int, Any], b: dict[int, Any]) -> dict[int, Any]:
    out: dict[int, Any] = {}
    for ea, ca in a.items():
        for eb, cb in b.items():
            out[ea + eb] = out.get(ea + eb, 0) + ca * cb
    return out


def argmax_distribution(r: list[int], t: Fraction) -> list[Any]:
    """Exact ``P[argmax_i (r_i + Z_i) = i]`` (lowest index on ties), discrete Laplace scale ``t``."""
    return list(_argmax_distribution(tuple(r), t, mpmath.mp.prec))


@functools.cache
def _argmax_distribution(r: tuple[int, ...], t: Fraction, prec: int) -> tuple[Any, ...]:
    """argmax_distribution, computed once per score vector, scale and working precision (the brute-force
    tests meet each score vector in many pairs)."""
    q = mpmath.exp(-1 / mpmath.mpf(t.numerator) * t.denominator)
    c0 = (1 - q) / (1 + q)
    probs = []
    for i in range(len(r)):
        offsets = [r[i] - r[j] - (1 if j < i else 0) for j in range(len(r)) if j != i]
        cuts = sorted({0, *(-o for o in offsets)})
        edges = [-math.inf, *cuts, math.inf]
        total = mpmath.mpf(0)
        for lo_edge, hi_edge in itertools.pairwise(edges):
            lo, hi = lo_edge, (hi_edge - 1 if math.isfinite(hi_edge) else math.inf)
            lo_pt = hi if lo == -math.inf else lo  # any point of the interval decides the branches
            if math.isfinite(lo) and math.isfinite(hi) and hi < lo:
                continue
            # p(z): c0·q^|z|, as a polynomial in u = q^z: {exponent: coefficient}
            poly: dict[int, Any] = {1: c0} if lo_pt >= 0 else {-1: c0}
            for o in offsets:
                if lo_pt + o >= 0:  # F(w) = 1 - q^(w+1)/(1+q), w = z + o
                    factor = {0: mpmath.mpf(1), 1: -(q ** (o + 1)) / (1 + q)}
                else:  # F(w) = q^(-w)/(1+q)
                    factor = {-1: q ** (-o) / (1 + q)}
                poly = _mul(poly, factor)
            for e, coef in poly.items():
                if coef != 0:
                    total += coef * _geometric(q**e, lo, hi)
        probs.append(total)
    return tuple(probs)


def exact_loss(r: list[int], r2: list[int], t: Fraction) -> Any:
    p, p2 = argmax_distribution(r, t), argmax_distribution(r2, t)
    assert abs(sum(p) - 1) < mpmath.mpf(10) ** -40 and abs(sum(p2) - 1) < mpmath.mpf(10) ** -40
    return max(abs(mpmath.log(a) - mpmath.log(b)) for a, b in zip(p, p2, strict=True))


def test_argmax_distribution_matches_enumeration() -> None:
    """The closed form against a direct sum over a truncated lattice (scale 1/2: tails below 1e-80)."""
    t = Fraction(1, 2)
    q = math.exp(-2)
    pmf = {z: (1 - q) / (1 + q) * q ** abs(z) for z in range(-100, 101)}
    r = [0, 1, 1]
    direct = [0.0, 0.0, 0.0]
    for z in itertools.product(range(-12, 13), repeat=3):
        noisy = [r[i] + z[i] for i in range(3)]
        direct[noisy.index(max(noisy))] += pmf[z[0]] * pmf[z[1]] * pmf[z[2]]
    exact = argmax_distribution(r, t)
    for a, b in zip(direct, exact, strict=True):
        assert abs(a - float(b)) < 1e-9


def _neighbours(m: int, delta: int, monotonic: bool) -> list[tuple[list[int], list[int]]]:
    pairs = []
    for s in itertools.product(range(3), repeat=m):
        for shift in itertools.product(range(-delta, delta + 1), repeat=m):
            if monotonic and not (all(d >= 0 for d in shift) or all(d <= 0 for d in shift)):
                continue
            pairs.append((list(s), [a + d for a, d in zip(s, shift, strict=True)]))
    return pairs


@pytest.mark.parametrize("monotonic", [False, True])
@pytest.mark.parametrize("scale", [Fraction(1, 2), Fraction(1), Fraction(3)])
@pytest.mark.parametrize("m", [2, 3])
def test_report_noisy_max_privacy_by_exact_distribution(monotonic: bool, scale: Fraction, m: int) -> None:
    """Every pair of integer score vectors within L∞ distance 1 (monotone pairs for the monotonic
    metric): the exact loss never exceeds the map, and comes within a factor 2 of it (the map is not
    loose by more than the theorem's constant)."""
    meas = dp.m.make_report_noisy_max(
        dp.VectorDomain(dp.AtomDomain(int), size=m), dp.LInfDistance(monotonic=monotonic), scale
    )
    eps = meas.map(1)
    worst = max(exact_loss(s, s2, scale) for s, s2 in _neighbours(m, 1, monotonic))
    assert worst <= mpmath.mpf(eps.numerator) / eps.denominator
    assert worst > mpmath.mpf(eps.numerator) / eps.denominator / 2


def test_general_scores_need_the_factor_two() -> None:
    """Non-monotone neighbours really lose more than d_in/scale: the factor 2 is needed (so the
    monotonic map must not be used for them)."""
    scale = Fraction(1)
    worst = max(exact_loss(s, s2, scale) for s, s2 in _neighbours(2, 1, False))
    assert worst > 1  # > d_in/scale


def test_float_scores_rounding_is_accounted() -> None:
    """Float scores d_in apart straddling grid midpoints: the grid indices move by ⌈d_in/g⌉, and the
    exact loss on those indices (noise t = scale/g grid units) stays within the map."""
    domain = dp.VectorDomain(dp.AtomDomain(float), size=2)
    scale = 2.0**-20
    plan = Scores(domain, dp.LInfDistance(), scale, "max")
    g = 2.0**plan.k
    meas = dp.m.make_report_noisy_max(domain, dp.LInfDistance(), scale)
    for d in (g / 2, g, 1.5 * g, 3 * g):
        # the second candidate far behind (its probability is in the tail, where the loss is largest);
        # the first just above a midpoint, so that moving both by d moves each index by ⌈d/g⌉
        x = [0.5 * g + g / 16, -40 * scale]
        x2 = [x[0] - d, x[1] + d]
        r, r2 = plan.indices(x).tolist(), plan.indices(x2).tolist()
        assert max(abs(a - b) for a, b in zip(r, r2, strict=True)) == math.ceil(d / g)
        eps = meas.map(d)
        loss = exact_loss(r, r2, plan.units)
        assert loss <= mpmath.mpf(eps.numerator) / eps.denominator
        if d == g / 2:  # the rounding matters: the map without it (2·d/scale) would under-report
            assert loss > 2 * mpmath.mpf(d) / mpmath.mpf(scale)


@given(
    st.lists(st.floats(-1e6, 1e6), min_size=3, max_size=3),
    st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=3),
    st.floats(1e-3, 1e3),
)
def test_float_rounding_is_monotone_and_within_ceil(x: list[float], shift: list[float], scale: float) -> None:
    domain = dp.VectorDomain(dp.AtomDomain(float), size=3)
    plan = Scores(domain, dp.LInfDistance(), scale, "max")
    x2 = [a + b for a, b in zip(x, shift, strict=True)]
    d = max(abs(Fraction(a) - Fraction(b)) for a, b in zip(x, x2, strict=True))
    r, r2 = plan.indices(x), plan.indices(x2)
    steps = math.ceil(d / Fraction(2) ** plan.k)
    assert int(np.max(np.abs(r - r2))) <= steps
    for a, b, ra, rb in zip(x, x2, r.tolist(), r2.tolist(), strict=True):
        assert (a <= b) <= (ra <= rb)  # non-decreasing: the order of values is kept (ties may merge)


def test_map_values_and_refusals() -> None:
    ints = dp.VectorDomain(dp.AtomDomain(int), size=3)
    assert dp.m.make_report_noisy_max(ints, dp.LInfDistance(), 2).map(1) == 1
    assert dp.m.make_report_noisy_max(ints, dp.LInfDistance(monotonic=True), 2).map(3) == Fraction(3, 2)
    assert dp.m.make_noisy_top_k(ints, dp.LInfDistance(), 2, k=3).map(1) == 3
    floats = dp.VectorDomain(dp.AtomDomain(float), size=3)
    assert dp.m.make_report_noisy_max(floats, dp.LInfDistance(), 2.0).map(1) == 1  # 1 is on the grid
    assert dp.m.make_report_noisy_max(floats, dp.LInfDistance(), 2.0).map(0) == 0
    # d_in below a grid step costs a full step
    tiny = dp.m.make_report_noisy_max(floats, dp.LInfDistance(), 1.0)
    assert tiny.map(2.0**-40) == 2 * Fraction(2) ** -30
    with pytest.raises(dp.DomainMismatch, match="known size"):
        dp.m.make_report_noisy_max(dp.VectorDomain(dp.AtomDomain(int)), dp.LInfDistance(), 1.0)
    with pytest.raises(dp.DomainMismatch, match="LInfDistance"):
        dp.m.make_report_noisy_max(ints, dp.L1Distance(), 1.0)
    with pytest.raises(dp.DomainMismatch, match="NaN"):
        dp.m.make_report_noisy_max(
            dp.VectorDomain(dp.AtomDomain(float, nan=True), size=2), dp.LInfDistance(), 1.0
        )
    with pytest.raises(dp.InvalidParameter, match="optimize"):
        dp.m.make_report_noisy_max(ints, dp.LInfDistance(), 1.0, optimize="argmax")
    with pytest.raises(dp.InvalidParameter, match="k=4"):
        dp.m.make_noisy_top_k(ints, dp.LInfDistance(), 1.0, k=4)
    with pytest.raises(dp.InvalidParameter, match="scale"):
        dp.m.make_report_noisy_max(ints, dp.LInfDistance(), 2.0**51)


def test_float_map_is_non_increasing_in_scale() -> None:
    floats = dp.VectorDomain(dp.AtomDomain(float), size=2)
    scales = [2.0**j * f for j in range(-40, 40, 7) for f in (1.0, 1.3, 1.9)]
    for d in (2.0**-45, 0.3, 1.0):
        values = [dp.m.make_report_noisy_max(floats, dp.LInfDistance(), s).map(d) for s in sorted(scales)]
        assert all(a >= b for a, b in itertools.pairwise(values))


def test_sampled_frequencies_match_the_exact_distribution() -> None:
    """The sampler path (with a seeded source) against the closed form: 5,000 draws (the slow twin 20,000),
    the bound derived at that count."""
    _check_sampled_frequencies(5_000)


@pytest.mark.slow
def test_sampled_frequencies_match_the_exact_distribution_thorough() -> None:
    _check_sampled_frequencies(20_000)


def _check_sampled_frequencies(n: int) -> None:
    """The sampler path (with a seeded source) against the closed form, chi-square style bound."""
    r = np.array([0, 1, 1, -1], dtype=np.int64)
    t = Fraction(3, 2)
    src = SeededSource(11)
    counts = Counter(noisy_argmax(r, t, src) for _ in range(n))
    exact = argmax_distribution(r.tolist(), t)
    for i, p in enumerate(exact):
        p = float(p)
        assert abs(counts[i] / n - p) < 5 * math.sqrt(p * (1 - p) / n) + 1e-3


def test_min_selects_the_smallest_and_ties_go_to_the_lowest_index() -> None:
    ints = dp.VectorDomain(dp.AtomDomain(int), size=4)
    low = dp.m.make_report_noisy_max(
        ints, dp.LInfDistance(), 0.01, optimize="min", rng=np.random.default_rng(1)
    )
    assert low([5, -(2**70), 3, -(2**70)]) == 1  # saturation keeps the order; tie -> lowest index
    top = dp.m.make_noisy_top_k(ints, dp.LInfDistance(), 0.01, k=4, rng=np.random.default_rng(2))
    assert top(np.array([3, 9, 1, 9])) == (1, 3, 0, 2)
    fl = dp.m.make_noisy_top_k(
        dp.VectorDomain(dp.AtomDomain(float), size=3), dp.LInfDistance(), 1e-6, k=2, optimize="min"
    )
    assert fl([1e308, -1e308, 0.5]) == (1, 2)


def test_huge_noise_takes_the_exact_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Noise of 2**62 or more is added in Python ints (no int64 wrap-around changes the winner)."""
    import dpcompose.measurements._noisy_max as nm

    def fake(units: Any, size: int, source: Any) -> Any:
        return np.array([2**62, 2**63 - 1] + [0] * (size - 2), dtype=np.int64)

    monkeypatch.setattr(nm, "discrete_laplace_array", fake)
    assert nm.noisy_argmax(np.array([0, 2**60], dtype=np.int64), Fraction(1), None) == 1


# --- noisy top-k: the exact distribution of peeling ------------------------------------------------------


def top_k_distribution(r: list[int], t: Fraction, k: int) -> dict[tuple[int, ...], Any]:
    """Exact law of peeling: round j is report noisy max (fresh noise) over the candidates not yet chosen,
    the lowest remaining index winning ties, so P[(i₁, …, i_k)] is a product of argmax probabilities."""
    out: dict[tuple[int, ...], Any] = {}

    def walk(prefix: tuple[int, ...], prob: Any) -> None:
        if len(prefix) == k:
            out[prefix] = prob
            return
        remaining = [i for i in range(len(r)) if i not in prefix]
        probs = argmax_distribution([r[i] for i in remaining], t)
        for i, p in zip(remaining, probs, strict=True):
            walk((*prefix, i), prob * p)

    walk((), mpmath.mpf(1))
    return out


@pytest.mark.parametrize("monotonic", [False, True])
@pytest.mark.parametrize("scale", [Fraction(1, 2), Fraction(2)])
def test_noisy_top_k_privacy_by_exact_distribution(monotonic: bool, scale: Fraction) -> None:
    """Top-2 of 3 by peeling: over every pair of score vectors in {0, 1, 2}³ within L∞ distance 1 (monotone
    pairs for the monotonic metric), the exact loss of the released ordered pair is within the map (k times
    the one-round map), and more than one round's map: the composition is needed."""
    k = 2
    meas = dp.m.make_noisy_top_k(
        dp.VectorDomain(dp.AtomDomain(int), size=3), dp.LInfDistance(monotonic=monotonic), scale, k
    )
    eps = meas.map(1)
    one_round = dp.m.make_report_noisy_max(
        dp.VectorDomain(dp.AtomDomain(int), size=3), dp.LInfDistance(monotonic=monotonic), scale
    ).map(1)
    assert eps == k * one_round
    worst = mpmath.mpf(0)
    for s, s2 in _neighbours(3, 1, monotonic):
        p, p2 = top_k_distribution(s, scale, k), top_k_distribution(s2, scale, k)
        assert abs(sum(p.values()) - 1) < mpmath.mpf(10) ** -40
        worst = max(worst, max(abs(mpmath.log(p[o]) - mpmath.log(p2[o])) for o in p))
    assert worst <= mpmath.mpf(eps.numerator) / eps.denominator
    assert worst > mpmath.mpf(one_round.numerator) / one_round.denominator


def test_noisy_top_k_releases_distinct_indices_best_first() -> None:
    scores = dp.VectorDomain(dp.AtomDomain(int), size=4)
    top = dp.m.make_noisy_top_k(scores, dp.LInfDistance(), scale=1.0, k=3, rng=np.random.default_rng(0))
    assert top([0, 10**6, 5 * 10**5, 10**5]) == (1, 2, 3)
    low = dp.m.make_noisy_top_k(scores, dp.LInfDistance(), 1.0, 2, "min", rng=np.random.default_rng(1))
    assert low([0, 10**6, 5 * 10**5, 10**5]) == (0, 3)


# --- quantile scores: stability by brute force -------------------------------------------------------------


def _datasets(alphabet: list[int], max_len: int) -> list[list[int]]:
    return [list(c) for n in range(max_len + 1) for c in itertools.combinations_with_replacement(alphabet, n)]


@pytest.mark.parametrize("alpha", [Fraction(1, 2), Fraction(1, 4), Fraction(2, 3), Fraction(0), Fraction(1)])
@pytest.mark.parametrize("metric", ["symmetric", "change"])
def test_quantile_score_stability_by_brute_force(alpha: Fraction, metric: str) -> None:
    """Every pair of datasets over {0, …, 4} with at most 4 records that are neighbours (one record added or
    removed; one record changed): the scores move by at most map(1) in L∞, and the bound is attained."""
    ints = dp.VectorDomain(dp.AtomDomain(int))
    m = dp.SymmetricDistance() if metric == "symmetric" else dp.ChangeOneDistance()
    candidates = [0, 1, 2, 3, 4]
    t = dp.t.make_quantile_score_candidates(ints, m, candidates, alpha)
    bound = t.map(1)
    worst = 0
    for x in _datasets(list(range(5)), 4):
        if metric == "symmetric":
            neighbours = [[*x, v] for v in range(5)]
        else:
            neighbours = [[*x[:i], v, *x[i + 1 :]] for i in range(len(x)) for v in range(5)]
        sx = t(x)
        for y in neighbours:
            sy = t(y)
            worst = max(worst, int(np.max(np.abs(sx - sy))) if len(candidates) else 0)
    assert worst == bound  # within the map, and attained


def test_quantile_scores_are_the_documented_integers() -> None:
    """score(c) = |(b − a)·#{x < c} − a·#{x > c}| for α = a/b, on a hand-checked case, lists and arrays."""
    floats = dp.VectorDomain(dp.AtomDomain(float))
    t = dp.t.make_quantile_score_candidates(floats, dp.SymmetricDistance(), [0.0, 0.5, 1.0], Fraction(1, 4))
    data = [0.1, 0.2, 0.6, 0.7, 0.9]
    expected = [abs(3 * sum(x < c for x in data) - 1 * sum(x > c for x in data)) for c in (0.0, 0.5, 1.0)]
    assert t(data).tolist() == expected == t(np.array(data)).tolist()


@pytest.mark.parametrize("metric", ["symmetric", "change"])
def test_private_quantile_privacy_by_exact_distribution(metric: str) -> None:
    """The one-call private median over 3 candidates: for every pair of neighbouring datasets over
    {0, 1, 2} with at most 3 records, the exact loss of the released candidate (the argmax law of the
    noisy scores) is within the map."""
    ints = dp.VectorDomain(dp.AtomDomain(int))
    m = dp.SymmetricDistance() if metric == "symmetric" else dp.ChangeOneDistance()
    candidates, alpha, scale = [0, 1, 2], Fraction(1, 2), Fraction(1)
    median = dp.m.make_private_quantile(ints, m, candidates, alpha, scale)
    score = dp.t.make_quantile_score_candidates(ints, m, candidates, alpha)
    eps = median.map(1)
    t = scale * alpha.denominator  # the noise scale on the integer scores
    worst = mpmath.mpf(0)
    for x in _datasets([0, 1, 2], 3):
        if metric == "symmetric":
            neighbours = [[*x, v] for v in range(3)]
        else:
            neighbours = [[*x[:i], v, *x[i + 1 :]] for i in range(len(x)) for v in range(3)]
        for y in neighbours:
            # report noisy max with optimize="min" is the argmax of the negated scores
            worst = max(worst, exact_loss([-int(v) for v in score(x)], [-int(v) for v in score(y)], t))
    assert worst <= mpmath.mpf(eps.numerator) / eps.denominator
