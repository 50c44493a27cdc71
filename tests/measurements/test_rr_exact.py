"""Randomized response: the exact output distribution never loses more than the map says (issue 11,
A.2, A.3), outputs are the domain's own objects (D.11), and every bad ε/δ is refused clearly (D.10).

The output distributions are found by *exact enumeration* of the mechanism as a black box: the uniform
integer draws (``_noise.uniform_below``, which ``bernoulli`` uses too) are replaced by a script, and every
draw's range [0, n) is split into the intervals on which the run behaves the same (found by galloping
and bisection, so draws over 2**1000 values take a few thousand runs). Each interval's weight is its
length / n, exactly. Losses are then computed from these Fractions with mpmath at 60 digits.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from decimal import Decimal
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpcompose as dp
from dpcompose.measurements import _noise

MP_DPS = 60
DISC = dp.DiscreteDistance()
Key = tuple[type, Hashable]


class _Script:
    """Stands in for ``_noise.uniform_below``: returns the scripted values, then 0, and records ranges."""

    def __init__(self, prefix: list[int]) -> None:
        self.prefix = prefix
        self.ranges: list[int] = []

    def __call__(self, n: int, rng: object = None) -> int:
        k = len(self.ranges)
        self.ranges.append(n)
        return self.prefix[k] if k < len(self.prefix) else 0


def _key(out: object) -> Key:
    return (type(out), out)  # type: ignore[return-value]


def exact_distribution(
    m: dp.Measurement,
    value: object,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[type-arg]
) -> dict[Key, Fraction]:
    """The exact output distribution of ``m(value)``, keyed by (type, output)."""

    def run(prefix: list[int]) -> tuple[Key, tuple[int, ...]]:
        script = _Script(prefix)
        monkeypatch.setattr(_noise, "uniform_below", script)
        out = m(value)
        return _key(out), tuple(script.ranges)

    dist: dict[Key, Fraction] = {}

    def explore(prefix: list[int], weight: Fraction) -> None:
        out, ranges = run(prefix)
        if len(ranges) <= len(prefix):
            dist[out] = dist.get(out, Fraction(0)) + weight
            return
        n = ranges[len(prefix)]

        def trace(u: int) -> tuple[Key, tuple[int, ...]]:
            return run([*prefix, u])

        u = 0
        while u < n:
            t = trace(u)
            lo, step = u, 1  # gallop: trace(lo) == t; find hi with trace(hi) != t or hi == n
            while lo + step < n and trace(lo + step) == t:
                lo, step = lo + step, step * 2
            hi = min(lo + step, n)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if trace(mid) == t else (lo, mid)
            explore([*prefix, u], weight * Fraction(hi - u, n))
            u = hi

    explore([], Fraction(1))
    assert sum(dist.values()) == 1
    return dist


def _mp(q: Fraction) -> mpmath.mpf:
    return mpmath.mpf(q.numerator) / q.denominator


def max_log_ratio(p: dict[Key, Fraction], q: dict[Key, Fraction]) -> mpmath.mpf:
    """max over outputs of ln(p/q) (+inf if p > 0 = q)."""
    worst = mpmath.mpf(0)
    for o, po in p.items():
        qo = q.get(o, Fraction(0))
        if po == 0:
            continue
        if qo == 0:
            return mpmath.inf
        worst = max(worst, mpmath.log(_mp(po / qo)))
    return worst


def hockey_stick(p: dict[Key, Fraction], q: dict[Key, Fraction], eps: Fraction) -> mpmath.mpf:
    """δ(ε) = Σ_o max(0, p_o − e^ε q_o), with the q_o = 0 terms exact."""
    exact_part, mp_part = Fraction(0), mpmath.mpf(0)
    for o, po in p.items():
        qo = q.get(o, Fraction(0))
        if qo == 0:
            exact_part += po
        elif po > qo and mpmath.log(_mp(po / qo)) > _mp(eps):
            mp_part += _mp(po) - mpmath.exp(_mp(eps)) * _mp(qo)
    return _mp(exact_part) + mp_part


def _pure_loss(m: dp.Measurement, values: list[object], mp: pytest.MonkeyPatch) -> mpmath.mpf:  # type: ignore[type-arg]
    dists = [exact_distribution(m, v, mp) for v in values]
    return max(max_log_ratio(a, b) for a in dists for b in dists if a is not b)


EPSILONS: list[Any] = [0, 0.0, -0.0, 1e-300, 5e-324, 1e-17, 2.2e-16, 1e-10, 1, 1.0, 700, 709.8, 1000.0, 1e308]


@pytest.mark.parametrize("eps", EPSILONS)
@pytest.mark.parametrize("k", [2, 3])
def test_k_rr_real_loss_within_map(eps: Any, k: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Was: at ε below ~2.2e-16 the other outputs were more likely than the truth (loss 2.2e-16 > 0)."""
    m = dp.m.make_randomized_response(dp.CategoricalDomain(range(k)), DISC, epsilon=eps)
    claimed = m.map(1)
    assert claimed == Fraction(eps)
    assert _pure_loss(m, list(range(k)), monkeypatch) <= _mp(claimed)


_K_RR_EPS = st.one_of(
    st.floats(min_value=0, max_value=1e-12),
    st.floats(min_value=0, max_value=800),
    st.fractions(min_value=0, max_value=50, max_denominator=10**30),
)


@settings(max_examples=20)
@given(_K_RR_EPS, st.integers(2, 4))
def test_k_rr_real_loss_within_map_property(eps: float | Fraction, k: int) -> None:
    _check_k_rr_loss(eps, k)


@pytest.mark.slow
@settings(max_examples=60)
@given(_K_RR_EPS, st.integers(2, 4))
def test_k_rr_real_loss_within_map_property_thorough(eps: float | Fraction, k: int) -> None:
    _check_k_rr_loss(eps, k)


def _check_k_rr_loss(eps: float | Fraction, k: int) -> None:
    with pytest.MonkeyPatch.context() as mp:
        m = dp.m.make_randomized_response(dp.CategoricalDomain(range(k)), DISC, epsilon=eps)
        assert _pure_loss(m, list(range(k)), mp) <= _mp(m.map(1))


def test_k_rr_matches_its_stated_distribution(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sampler's own distribution() (used for audits) is what it really samples."""
    m = dp.m.make_randomized_response(dp.CategoricalDomain(["a", "b", "c"]), DISC, epsilon=1.0)
    for i, c in enumerate("abc"):
        stated = {_key(o): p for o, p in m.function.distribution(i).items()}
        assert exact_distribution(m, c, monkeypatch) == stated


# every ε with δ = 0, 0.01 and 0.5; the subnormal and tiny δ (labels drawn over ~2**1000 values: the slow
# cases) with ε at 0 (int, float, -0.0), tiny, the float spacing, 1, near the exp overflow and huge; the
# rest of that grid in the slow run
_TINY_DELTA_EPS = {0.0, 1e-300, 2.2e-16, 1.0, 709.8, 1e308}


@pytest.mark.parametrize(
    ("eps", "delta"),
    [
        pytest.param(
            eps,
            delta,
            marks=[pytest.mark.slow] if delta in (5e-324, 1e-300) and eps not in _TINY_DELTA_EPS else [],
        )
        for delta in [0, 5e-324, 1e-300, 0.01, 0.5]
        for eps in EPSILONS
    ],
)
def test_rr_approx_real_loss_within_map(eps: Any, delta: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """Was: true δ(0) = δ + 1.1e-16 at ε = 0 (and tiny ε) while the map said δ."""
    _check_rr_approx_loss(eps, delta, monkeypatch)


def _check_rr_approx_loss(eps: Any, delta: float, monkeypatch: pytest.MonkeyPatch) -> None:
    m = dp.m.make_randomized_response_approx(dp.CategoricalDomain([0, 1]), DISC, epsilon=eps, delta=delta)
    e_map, d_map = m.map(1)
    d0, d1 = exact_distribution(m, 0, monkeypatch), exact_distribution(m, 1, monkeypatch)
    assert max(hockey_stick(d0, d1, e_map), hockey_stick(d1, d0, e_map)) <= _mp(d_map)
    stated = {_key(o): p for o, p in m.function.distribution(0).items() if p}
    assert {o: p for o, p in d0.items() if p} == stated


_APPROX_EPS = st.floats(min_value=0, max_value=1e-6) | st.floats(0, 20)
_APPROX_DELTA = st.floats(min_value=0, max_value=0.5)


@settings(max_examples=20)
@given(_APPROX_EPS, _APPROX_DELTA)
def test_rr_approx_real_loss_within_map_property(eps: float, delta: float) -> None:
    _check_rr_approx_property(eps, delta)


@pytest.mark.slow
@settings(max_examples=60)
@given(_APPROX_EPS, _APPROX_DELTA)
def test_rr_approx_real_loss_within_map_property_thorough(eps: float, delta: float) -> None:
    _check_rr_approx_property(eps, delta)


def _check_rr_approx_property(eps: float, delta: float) -> None:
    with pytest.MonkeyPatch.context() as mp:
        m = dp.m.make_randomized_response_approx(
            dp.CategoricalDomain(["x", "y"]), DISC, epsilon=eps, delta=delta
        )
        e_map, d_map = m.map(1)
        d0, d1 = exact_distribution(m, "x", mp), exact_distribution(m, "y", mp)
        assert max(hockey_stick(d0, d1, e_map), hockey_stick(d1, d0, e_map)) <= _mp(d_map)


# --- A.3: NaN categories, index-based comparison ------------------------------------------------------


def test_nan_category_refused_for_rr() -> None:
    """Was accepted; RR over it had true ε = 1 + ln 2 at ε = 1 and RR_(ε,δ) true δ(1) = 0.734."""
    with pytest.raises(dp.InvalidParameter, match="categories="):
        dp.m.make_randomized_response(dp.CategoricalDomain([math.nan, 1.0]), DISC, epsilon=1.0)
    with pytest.raises(dp.InvalidParameter, match="categories="):
        dp.m.make_randomized_response_approx(
            dp.CategoricalDomain([np.float64("nan"), 1.0]), DISC, epsilon=1.0, delta=0.01
        )


def test_float_categories_loss_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    cats = [0.5, 1.0, math.inf]
    m = dp.m.make_randomized_response(dp.CategoricalDomain(cats), DISC, epsilon=1.0)
    assert _pure_loss(m, cats, monkeypatch) <= 1


# --- D.11: outputs are the domain's own objects; non-categories refused ---------------------------------


@pytest.mark.parametrize("value", [True, 1.0, np.float32(1), np.int64(1), Fraction(1), "1"])
@pytest.mark.parametrize("approx", [False, True])
def test_other_representations_refused(value: object, approx: bool) -> None:
    """Was: rr(True) could return True, rr(1.0) 1.0 — the output's type showed the input's."""
    domain = dp.CategoricalDomain([0, 1])
    m = (
        dp.m.make_randomized_response_approx(domain, DISC, epsilon=1.0, delta=0.1)
        if approx
        else dp.m.make_randomized_response(domain, DISC, epsilon=1.0)
    )
    with pytest.raises(dp.DomainMismatch, match="not a member"):
        m(value)


def _outputs(m: dp.Measurement, value: object, monkeypatch: pytest.MonkeyPatch) -> list[Any]:  # type: ignore[type-arg]
    found = []
    for _, out in exact_distribution(m, value, monkeypatch):
        found.append(out)
    return found


def test_outputs_are_the_domains_objects(monkeypatch: pytest.MonkeyPatch) -> None:
    """An equal value of the same type (-0.0 for the category 0.0) yields the domain's object, never the
    caller's; RR_(ε,δ)'s labels are made from the domain's categories."""
    cats = [0.0, 1.0]
    domain = dp.CategoricalDomain(cats)
    rr = dp.m.make_randomized_response(domain, DISC, epsilon=0.5)
    for out in _outputs(rr, -0.0, monkeypatch):
        assert any(out is c for c in domain.categories)
        assert math.copysign(1.0, out) == 1.0
    approx = dp.m.make_randomized_response_approx(domain, DISC, epsilon=0.5, delta=0.25)
    outs = _outputs(approx, -0.0, monkeypatch)
    assert set(outs) == {0.0, 1.0, "Iam0.0"}
    for out in outs:
        assert isinstance(out, str) or any(out is c for c in domain.categories)


def test_numpy_categories_come_back_as_themselves(monkeypatch: pytest.MonkeyPatch) -> None:
    domain = dp.CategoricalDomain(np.array([3, 5]))
    rr = dp.m.make_randomized_response(domain, DISC, epsilon=1.0)
    assert all(type(out) is np.int64 for out in _outputs(rr, np.int64(3), monkeypatch))
    with pytest.raises(dp.DomainMismatch):
        rr(3)  # a Python int is not the category np.int64(3)


def test_single_category_is_constant(monkeypatch: pytest.MonkeyPatch) -> None:
    m = dp.m.make_randomized_response(dp.CategoricalDomain(["only"]), DISC, epsilon=3.0)
    assert m.map(1) == 0
    assert exact_distribution(m, "only", monkeypatch) == {(str, "only"): 1}


# --- D.10: every bad ε/δ is InvalidParameter; unusual good ones give a correct mechanism ---------------

BAD = [
    math.nan,
    math.inf,
    -math.inf,
    -1e-300,
    -1,
    True,
    False,
    "1",
    None,
    Decimal("NaN"),
    np.float64("nan"),
    np.float32("inf"),
    np.bool_(True),
    complex(1, 0),
    [1.0],
    np.array([1.0, 2.0]),
    Fraction(-1, 3),
]


@pytest.mark.parametrize("bad", BAD, ids=repr)
def test_bad_epsilon_refused(bad: object) -> None:
    domain = dp.CategoricalDomain([0, 1])
    with pytest.raises(dp.InvalidParameter, match="epsilon="):
        dp.m.make_randomized_response(domain, DISC, epsilon=bad)  # type: ignore[arg-type]
    with pytest.raises(dp.InvalidParameter, match="epsilon="):
        dp.m.make_randomized_response_approx(domain, DISC, epsilon=bad, delta=0.1)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [*BAD, 1, 1.0, 1.5, 10**400, np.float64(1.0)], ids=repr)
def test_bad_delta_refused(bad: object) -> None:
    if isinstance(bad, Fraction | int | float) and not isinstance(bad, bool) and 0 <= bad < 1:
        return
    with pytest.raises(dp.InvalidParameter, match="delta="):
        dp.m.make_randomized_response_approx(
            dp.CategoricalDomain([0, 1]),
            DISC,
            epsilon=1.0,
            delta=bad,  # type: ignore[arg-type]
        )


GOOD: list[Any] = [
    -0.0,
    np.float32(0.3),
    np.float16(0.5),
    np.longdouble("0.7"),
    np.int64(2),
    np.uint8(1),
    Fraction(1, 3),
    Decimal("1"),
    np.array(1.0),  # a 0-d array is read as the scalar it holds
    709.79,
    709.8,
    1000,
    1.7e308,
]


def _id(x: object) -> str:
    try:
        return repr(x)[:24]
    except ValueError:  # an int too long for repr
        return f"{type(x).__name__}-huge"


@pytest.mark.parametrize("eps", [10**400, Fraction(10**400, 3), 10**5000, Fraction(1, 10**5000)], ids=_id)
def test_epsilons_beyond_the_readers_range_are_refused(eps: Any) -> None:
    """The one number reader refuses magnitudes beyond the double range and denominators beyond 2**10000
    (docs/concepts.md, rule 0) with a message naming the parameter — never a raw error."""
    with pytest.raises(dp.InvalidParameter, match="epsilon"):
        dp.m.make_randomized_response(dp.CategoricalDomain([0, 1, 2]), DISC, epsilon=eps)


@pytest.mark.parametrize("eps", GOOD, ids=_id)
def test_unusual_epsilons_give_correct_mechanisms(eps: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Was: ε ≥ 709.8 raised OverflowError. Each must work, with real loss ≤ the map."""
    rr = dp.m.make_randomized_response(dp.CategoricalDomain([0, 1, 2]), DISC, epsilon=eps)
    assert rr.map(1) >= 0
    assert _pure_loss(rr, [0, 1, 2], monkeypatch) <= _mp(rr.map(1))
    approx = dp.m.make_randomized_response_approx(dp.CategoricalDomain([0, 1]), DISC, epsilon=eps, delta=0.0)
    e_map, d_map = approx.map(1)
    d0, d1 = exact_distribution(approx, 0, monkeypatch), exact_distribution(approx, 1, monkeypatch)
    assert max(hockey_stick(d0, d1, e_map), hockey_stick(d1, d0, e_map)) <= _mp(d_map)


@pytest.mark.parametrize("delta", [5e-324, np.float32(0.1), Fraction(1, 3), 0.9999999999999999, -0.0])
def test_unusual_deltas_sampled_as_reported(delta: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    m = dp.m.make_randomized_response_approx(dp.CategoricalDomain([0, 1]), DISC, epsilon=0.0, delta=delta)
    e_map, d_map = m.map(1)
    d0, d1 = exact_distribution(m, 0, monkeypatch), exact_distribution(m, 1, monkeypatch)
    assert hockey_stick(d0, d1, e_map) == _mp(d_map)  # exactly δ: the labels carry it, nothing else


def test_rr_approx_needs_printable_categories() -> None:
    class NoStr:
        def __str__(self) -> str:
            raise RuntimeError("no text")

        def __hash__(self) -> int:
            return 1

        def __eq__(self, other: object) -> bool:
            return self is other

    with pytest.raises(dp.InvalidParameter, match="labels"):
        dp.m.make_randomized_response_approx(dp.CategoricalDomain([NoStr(), 0]), DISC, epsilon=1.0, delta=0.1)
