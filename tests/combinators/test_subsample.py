"""make_subsample: amplification by subsampling (Balle–Barthe–Gaboardi 2018), checked against mpmath and
against the exact output distribution of small subsampled mechanisms (all subsets enumerated)."""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpcompose as dp
from dpcompose.accounting._exact import log_up
from dpcompose.combinators._subsample import amplify_epsilon, bernoulli_mask, uniform_subset
from dpcompose.measurements._sampling import SeededSource

INTS = dp.VectorDomain(dp.AtomDomain(int))
SYM = dp.SymmetricDistance()
CHANGE = dp.ChangeOneDistance()

# --- the formula ------------------------------------------------------------------------------------------


def _mp(x: Fraction) -> mpmath.mpf:
    return mpmath.mpf(x.numerator) / x.denominator


def _at_least(ours: Fraction, ref: mpmath.mpf) -> bool:
    """``ours >= ref`` up to mpmath's own rounding at 50 digits (far below a double's ulp)."""
    return bool(_mp(ours) >= ref * (1 - mpmath.mpf(10) ** -40))


def _reference(eps: Fraction, q: Fraction) -> mpmath.mpf:
    return mpmath.log(
        1
        + mpmath.mpf(q.numerator) / q.denominator * mpmath.expm1(mpmath.mpf(eps.numerator) / eps.denominator)
    )


@given(
    eps=st.fractions(min_value=0, max_value=800, max_denominator=10**6),
    q=st.fractions(min_value=0, max_value=1, max_denominator=10**9),
)
def test_amplified_epsilon_is_a_tight_upper_bound(eps: Fraction, q: Fraction) -> None:
    ours = amplify_epsilon(eps, q)
    ref = _reference(eps, q)
    assert _at_least(ours, ref)
    assert ours <= eps
    assert float(ours) <= float(ref) * (1 + 1e-9) + 1e-15


@pytest.mark.parametrize(
    "eps", [Fraction(1, 10**12), Fraction(1, 3), Fraction(1), Fraction(7, 2), Fraction(700)]
)
@pytest.mark.parametrize("q", [Fraction(1, 10**9), Fraction(1, 100), Fraction(1, 2), Fraction(999, 1000)])
def test_amplified_epsilon_grid(eps: Fraction, q: Fraction) -> None:
    ours = amplify_epsilon(eps, q)
    ref = _reference(eps, q)
    assert _at_least(ours, ref)
    assert float(ours) <= float(ref) * (1 + 1e-9) + 1e-15


def test_amplified_epsilon_edge_cases() -> None:
    assert amplify_epsilon(Fraction(2), Fraction(0)) == 0
    assert amplify_epsilon(Fraction(0), Fraction(1, 2)) == 0
    assert amplify_epsilon(Fraction(2), Fraction(1)) == 2


# --- brute force on small datasets -------------------------------------------------------------------------

# A finite child: randomized response on the bit "the dataset holds a 1", with e^ε = 3 exactly (p = 3/4), and
# (for the approximate child) a leak of the bit with probability DELTA. Neighbours that add, remove or
# substitute one record change the bit at most once, so the child is (ln 3, DELTA)-DP under all three.
P_TRUE = Fraction(3, 4)
DELTA = Fraction(1, 50)
OUTPUTS = ["rr0", "rr1", "leak0", "leak1"]


def _child_dist(sample: Sequence[int], delta: Fraction) -> dict[str, Fraction]:
    b = int(1 in sample)
    p1 = P_TRUE if b else 1 - P_TRUE
    return {
        "rr1": (1 - delta) * p1,
        "rr0": (1 - delta) * (1 - p1),
        "leak1": delta if b else Fraction(0),
        "leak0": Fraction(0) if b else delta,
    }


def _child(delta: Fraction, domain: dp.Domain = INTS, metric: dp.Metric = SYM) -> Any:
    eps = Fraction(log_up(3))

    def function(sample: Any) -> str:
        dist = _child_dist(list(sample), delta)
        rng = np.random.default_rng()
        u = Fraction(int(rng.integers(0, 2**40)), 2**40)
        for out in OUTPUTS:
            u -= dist[out]
            if u < 0:
                return out
        return OUTPUTS[-1]  # pragma: no cover

    if delta == 0:
        return dp.make_user_measurement(
            domain, metric, dp.PureDP(), function, lambda d: d * eps, trusted=True, name="rr_child"
        )
    return dp.make_user_measurement(
        domain,
        metric,
        dp.ApproxDP(),
        function,
        lambda d: dp.accounting.group(eps, delta, d) if d else (Fraction(0), Fraction(0)),
        trusted=True,
        name="rr_child",
    )


@functools.cache
def _poisson_dist(data: tuple[int, ...], q: Fraction, delta: Fraction) -> dict[str, Fraction]:
    out = dict.fromkeys(OUTPUTS, Fraction(0))
    for keep in itertools.product([False, True], repeat=len(data)):
        p = Fraction(1)
        for k in keep:
            p *= q if k else 1 - q
        sample = [x for x, k in zip(data, keep, strict=True) if k]
        for o, po in _child_dist(sample, delta).items():
            out[o] += p * po
    return out


@functools.cache
def _wor_dist(data: tuple[int, ...], k: int, delta: Fraction) -> dict[str, Fraction]:
    out = dict.fromkeys(OUTPUTS, Fraction(0))
    subsets = list(itertools.combinations(range(len(data)), k))
    for s in subsets:
        for o, po in _child_dist([data[i] for i in s], delta).items():
            out[o] += po / len(subsets)
    return out


def _hockey(p: dict[str, Fraction], r: dict[str, Fraction], eps: Fraction) -> mpmath.mpf:
    """δ(ε) = Σ max(P(o) − e^ε R(o), 0), evaluated at 60 digits (exact inputs)."""
    with mpmath.workdps(60):
        factor = mpmath.exp(mpmath.mpf(eps.numerator) / eps.denominator)
        return mpmath.fsum(max(_mp(p[o]) - factor * _mp(r[o]), 0) for o in OUTPUTS)


def _true_epsilon(p: dict[str, Fraction], r: dict[str, Fraction]) -> mpmath.mpf:
    return max(mpmath.log(_mp(p[o]) / _mp(r[o])) for o in OUTPUTS if p[o] or r[o])


#: (P(x), P(y), bound) triples already checked: the check is a function of the two output laws and the
#: bound alone, and the sweeps below meet the same triple many times (a law depends on the records only
#: through how many 1s and how many records there are), so each is checked once per process.
_CHECKED: set[tuple[Any, ...]] = set()


def _check_pair(
    dist: Callable[[Sequence[int]], dict[str, Fraction]], x: Sequence[int], y: Sequence[int], bound: Any
) -> None:
    px, py = dist(x), dist(y)
    key = (tuple(px.items()), tuple(py.items()), bound, mpmath.mp.prec)
    if key in _CHECKED:
        return
    if isinstance(bound, tuple):
        eps, delta = bound
        for a, b in ((px, py), (py, px)):
            assert _at_least(delta, _hockey(a, b, eps))
    else:
        assert _at_least(bound, _true_epsilon(px, py))
        assert _at_least(bound, _true_epsilon(py, px))
    _CHECKED.add(key)


def _datasets(n: int) -> list[tuple[int, ...]]:
    return [t for size in range(n + 1) for t in itertools.product([0, 1, 2], repeat=size)]


@pytest.mark.parametrize(
    ("q", "delta"),
    [  # both rates and both children (pure, approximate) by default; the other two pairings in the slow run
        (Fraction(1, 3), DELTA),
        (Fraction(3, 4), Fraction(0)),
        pytest.param(Fraction(1, 3), Fraction(0), marks=pytest.mark.slow),
        pytest.param(Fraction(3, 4), DELTA, marks=pytest.mark.slow),
    ],
)
def test_poisson_bound_holds_for_every_add_remove_pair(delta: Fraction, q: Fraction) -> None:
    sub = dp.make_subsample(_child(delta), q)
    one, two = sub.map(1), sub.map(2)

    def dist(data: Sequence[int]) -> dict[str, Fraction]:
        return _poisson_dist(tuple(data), q, delta)

    for x in _datasets(3):
        for i in range(len(x) + 1):
            for v in (0, 1, 2):
                y = (*x[:i], v, *x[i:])  # one record added
                _check_pair(dist, x, y, one)
                for j in range(len(y) + 1):
                    for w in (0, 1):
                        _check_pair(dist, x, (*y[:j], w, *y[j:]), two)  # two records added


def test_poisson_bound_is_tight_for_randomized_response() -> None:
    q = Fraction(1, 3)
    sub = dp.make_subsample(_child(Fraction(0)), q)
    px, py = _poisson_dist((), q, Fraction(0)), _poisson_dist((1,), q, Fraction(0))
    true = _true_epsilon(py, px)
    assert true == pytest.approx(mpmath.log(1 + q * 2), rel=1e-30)  # 1 + q(e^ε − 1) with e^ε = 3
    ours = sub.map(1)
    assert _at_least(ours, true) and _mp(ours) <= true * (1 + 1e-9) + 1e-15


@pytest.mark.parametrize("delta", [Fraction(0), DELTA])
@pytest.mark.parametrize(("n", "k_rate"), [(4, Fraction(1, 2)), (5, Fraction(3, 5)), (4, Fraction(1, 4))])
def test_without_replacement_bound_holds_for_every_substitution(
    delta: Fraction, n: int, k_rate: Fraction
) -> None:
    k = math.floor(k_rate * n)
    child = _child(delta, dp.VectorDomain(dp.AtomDomain(int), size=k), CHANGE)
    sub = dp.make_subsample(child, k_rate, "without_replacement", dataset_size=n)
    one = sub.map(1)

    def dist(data: Sequence[int]) -> dict[str, Fraction]:
        return _wor_dist(tuple(data), k, delta)

    for x in itertools.product([0, 1, 2], repeat=n):
        for i in range(n):
            for v in (0, 1, 2):
                if v != x[i]:
                    _check_pair(dist, x, (*x[:i], v, *x[i + 1 :]), one)
    if delta == 0:  # tight: the substituted record decides the bit
        true = _true_epsilon(dist((1,) + (0,) * (n - 1)), dist((0,) * n))
        eps = one
        assert _at_least(eps, true) and _mp(eps) <= true * (1 + 1e-9) + 1e-15


def test_without_replacement_with_a_symmetric_child_reads_it_at_two() -> None:
    child = _child(Fraction(0))
    sub = dp.make_subsample(child, 0.5, "without_replacement", dataset_size=10)
    assert sub.map(1) == amplify_epsilon(child.map(2), Fraction(1, 2))


# --- the samplers ------------------------------------------------------------------------------------------


def test_bernoulli_mask_rate_matches_a_binomial_check() -> None:
    q = Fraction(0.3)  # the exact binary value (denominator 2**54)
    n = 200_000
    keep = bernoulli_mask(q, n, SeededSource(5))
    # mean ± 5 standard deviations: fails with probability < 1e-6 for a correct sampler (fixed seed anyway)
    sd = math.sqrt(n * 0.3 * 0.7)
    assert abs(int(keep.sum()) - n * 0.3) < 5 * sd


def test_bernoulli_mask_huge_denominator_and_edges() -> None:
    q = Fraction(1, 3) + Fraction(1, 2**200)
    keep = bernoulli_mask(q, 30_000, SeededSource(1))
    assert abs(int(keep.sum()) - 10_000) < 5 * math.sqrt(30_000 * 2 / 9)
    assert not bernoulli_mask(Fraction(0), 100, SeededSource(1)).any()
    assert bernoulli_mask(Fraction(1), 100, SeededSource(1)).all()


def test_uniform_subset_is_uniform() -> None:
    src = SeededSource(3)
    counts: dict[tuple[int, ...], int] = {}
    trials = 6000
    for _ in range(trials):
        s = uniform_subset(4, 2, src)
        assert list(s) == sorted(set(s.tolist())) and len(s) == 2
        counts[tuple(s.tolist())] = counts.get(tuple(s.tolist()), 0) + 1
    assert len(counts) == 6
    sd = math.sqrt(trials * (1 / 6) * (5 / 6))
    for c in counts.values():
        assert abs(c - trials / 6) < 5 * sd


def test_subsample_runs_on_arrays_and_lists() -> None:
    count = dp.t.make_count(INTS, SYM)
    seen: list[Any] = []

    def spy(sample: Any) -> int:
        seen.append(sample)
        return len(sample)

    child: dp.Measurement[Any, int, int, Fraction] = dp.make_user_measurement(
        INTS, SYM, dp.PureDP(), spy, lambda d: Fraction(d), trusted=True
    )
    sub = dp.make_subsample(child, 0.25, rng=np.random.default_rng(0))
    n = sub(np.arange(10_000))
    assert isinstance(seen[-1], np.ndarray) and abs(n - 2500) < 5 * math.sqrt(10_000 * 0.25 * 0.75)
    # distinct records of the data, in a random order (the child sees the sampled multiset only)
    assert set(seen[-1].tolist()) <= set(range(10_000)) and len(set(seen[-1].tolist())) == len(seen[-1])
    assert list(seen[-1]) != sorted(seen[-1])
    sub([1, 2, 3])
    assert isinstance(seen[-1], list)
    wor = dp.make_subsample(child, 0.3, "without_replacement", dataset_size=10, rng=np.random.default_rng(1))
    assert wor(list(range(10))) == 3 and set(seen[-1]) <= set(range(10)) and len(set(seen[-1])) == 3
    assert count(seen[-1]) == 3
    assert sub([]) == 0


# --- composition, explain and refusals ---------------------------------------------------------------------


def _noisy_count(scale: int = 1) -> Any:
    noise = dp.m.make_discrete_laplace(dp.AtomDomain(int), dp.AbsoluteDistance(), scale)
    return dp.t.make_count(INTS, SYM) >> noise


def test_composes_with_sequential_and_explain() -> None:
    sub = dp.make_subsample(_noisy_count(), 0.1)
    both = dp.make_sequential(sub, _noisy_count(2))
    assert both.map(1) == sub.map(1) + Fraction(1, 2)
    text = str(dp.explain(both, 1))
    assert "subsample(method=poisson" in text and "amplification by subsampling" in text
    assert "Balle–Barthe–Gaboardi 2018" in text
    approx = dp.make_subsample(dp.make_pure_to_approx(_noisy_count()), 0.5)
    eps, delta = approx.map(1)
    assert delta == 0 and eps == amplify_epsilon(Fraction(1), Fraction(1, 2))
    assert approx.map(0) == (0, 0)


def test_group_privacy_beyond_one_step() -> None:
    sub = dp.make_subsample(_noisy_count(), 0.5)
    assert sub.map(3) == 3 * sub.map(1)
    assert sub.map(0) == 0


def test_refuses_what_it_cannot_amplify() -> None:
    gauss = dp.t.make_count(INTS, SYM) >> dp.m.make_gaussian(dp.AtomDomain(int), dp.AbsoluteDistance(), 2.0)
    # zCDP or Rényi with a pair: accepted, as a privacy profile (tests/combinators/test_subsample_pld.py);
    # without one (a composition of two, a user's mechanism), as a Rényi curve (test_subsample_renyi.py)
    assert dp.make_subsample(dp.make_sequential(gauss, gauss), 0.5).output_measure == dp.RenyiDP()
    user = dp.make_user_measurement(INTS, SYM, dp.ZCDP(), len, lambda d: Fraction(d), trusted=True)
    assert dp.make_subsample(user, 0.5).output_measure == dp.RenyiDP()
    # a privacy profile without a pair: no amplification bound here
    profile = dp.make_user_measurement(
        INTS, SYM, dp.ProfileDP(), len, lambda d: dp.PrivacyProfile(), trusted=True
    )
    with pytest.raises(dp.UnsupportedComposition, match="reports no dominating pair"):
        dp.make_subsample(profile, 0.5)
    with pytest.raises(dp.DomainMismatch, match="SymmetricDistance"):
        dp.make_subsample(_child(Fraction(0), INTS, CHANGE), 0.5)
    sized = dp.VectorDomain(dp.AtomDomain(int), size=5)
    with pytest.raises(dp.DomainMismatch, match="size=None"):
        dp.make_subsample(_child(Fraction(0), sized, SYM), 0.5)
    with pytest.raises(dp.DomainMismatch, match="⌊rate·n⌋ = 5"):
        dp.make_subsample(
            _child(Fraction(0), dp.VectorDomain(dp.AtomDomain(int), size=4), CHANGE),
            0.5,
            "without_replacement",
            dataset_size=10,
        )
    with pytest.raises(dp.InvalidParameter, match="dataset_size"):
        dp.make_subsample(_noisy_count(), 0.5, "without_replacement")
    with pytest.raises(dp.InvalidParameter, match="dataset_size"):
        dp.make_subsample(_noisy_count(), 0.5, dataset_size=10)
    with pytest.raises(dp.InvalidParameter, match="rate"):
        dp.make_subsample(_noisy_count(), 1.5)
    with pytest.raises(dp.InvalidParameter, match="method"):
        dp.make_subsample(_noisy_count(), 0.5, "bootstrap")
    svt = (
        dp.m.make_sparse_vector(INTS, SYM, threshold=1.0, scale=2.0, max_positive=1)
        if hasattr(dp.m, "make_sparse_vector")
        else None
    )
    if svt is not None and svt.interactive:
        with pytest.raises(dp.UnsupportedComposition, match="interactive"):
            dp.make_subsample(svt, 0.5)


# --- in-domain data never makes it raise (the contract of tests/test_contract_no_raise.py, which enumerates
# dp.t / dp.m only) ------------------------------------------------------------------------------------------

_INT_VALUES = st.one_of(st.integers(), st.sampled_from([2**63 - 1, -(2**63), 2**64, 2**1024 + 1]))


@settings(max_examples=40, deadline=None)
@given(
    data=st.one_of(
        st.lists(_INT_VALUES, max_size=40),
        st.lists(st.integers(-(2**63), 2**63 - 1), max_size=40).map(
            lambda xs: np.asarray(xs, dtype=np.int64)
        ),
    ),
    rate=st.sampled_from([0.0, 1e-300, 0.3, 0.5, 1.0]),
)
def test_no_in_domain_datum_makes_it_raise(data: Any, rate: float) -> None:
    for m in (_noisy_count(), dp.make_pure_to_approx(_noisy_count())):
        assert isinstance(dp.make_subsample(m, rate)(data), int)
        sized = dp.make_subsample(m, rate, "without_replacement", dataset_size=max(len(data), 1))
        if sized.input_domain.member(data):
            assert isinstance(sized(data), int)


# --- beyond one step: a child whose loss at distance 2 really is twice its loss at distance 1 ---------------
# Two randomized-response bits (p = 3/4 each) on b1 = [at least one 1] and b2 = [at least two 1s]: adding or
# removing one record flips at most one of them (ln 3 per step), two records can flip both (2 ln 3).


def _two_bit_dist(sample: Sequence[int]) -> dict[tuple[int, int], Fraction]:
    ones = sum(1 for v in sample if v == 1)
    bits = (int(ones >= 1), int(ones >= 2))
    out = {}
    for o in itertools.product([0, 1], repeat=2):
        p = Fraction(1)
        for oi, bi in zip(o, bits, strict=True):
            p *= P_TRUE if oi == bi else 1 - P_TRUE
        out[o] = p
    return out


@functools.cache
def _two_bit_poisson(data: tuple[int, ...], q: Fraction) -> dict[tuple[int, int], Fraction]:
    out: dict[tuple[int, int], Fraction] = {}
    for keep in itertools.product([False, True], repeat=len(data)):
        p = Fraction(1)
        for k in keep:
            p *= q if k else 1 - q
        for o, po in _two_bit_dist([x for x, k in zip(data, keep, strict=True) if k]).items():
            out[o] = out.get(o, Fraction(0)) + p * po
    return out


@pytest.mark.parametrize("q", [Fraction(1, 5), Fraction(2, 3)])
def test_poisson_group_bound_holds_and_is_tight_at_two_steps(q: Fraction) -> None:
    eps = Fraction(log_up(3))
    child = dp.make_user_measurement(
        INTS, SYM, dp.PureDP(), lambda s: (0, 0), lambda d: d * eps, trusted=True, name="two_bits"
    )
    sub = dp.make_subsample(child, q)
    bound = _mp(sub.map(2))
    worst = mpmath.mpf(0)
    for x in _datasets(2):
        for i in range(len(x) + 1):
            for j in range(len(x) + 2):
                for v, w in itertools.product([0, 1, 2], repeat=2):
                    y = list(x)
                    y.insert(i, v)
                    y.insert(j, w)
                    px, py = _two_bit_poisson(tuple(x), q), _two_bit_poisson(tuple(y), q)
                    for o in px:
                        loss = abs(mpmath.log(_mp(py[o]) / _mp(px[o])))
                        worst = max(worst, loss)
    assert worst <= bound * (1 + mpmath.mpf(10) ** -40)
    # empty vs two 1s: the ratio of P[(1, 1)] is (1 + 2q)², i.e. twice the one-step amplified ε
    assert worst == pytest.approx(2 * mpmath.log(1 + 2 * _mp(q)), rel=1e-30)
    assert bound <= worst * (1 + 1e-9) + 1e-15
