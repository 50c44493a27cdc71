"""Integer outputs stay integers (issue 15): make_laplace / make_gaussian on an int domain are the discrete
mechanisms — same release type, same exact maps, same saturation — and float domains are unchanged."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpcompose as dp

INT, FLOAT = dp.AtomDomain(int), dp.AtomDomain(float)
INTS = dp.VectorDomain(INT)
ABS, L1, L2 = dp.AbsoluteDistance(), dp.L1Distance(), dp.L2Distance()

scales = st.one_of(
    st.floats(1e-6, 2.0**40), st.fractions(Fraction(1, 10**6), 10**6), st.integers(1, 2**40), st.just(0.1)
)
d_ins = st.fractions(0, 10**6) | st.integers(0, 10**6)


@given(scales, d_ins)
def test_maps_are_the_discrete_mechanisms_maps_exactly(scale: float | Fraction | int, d_in: Fraction) -> None:
    exact_scale = Fraction(scale)
    for domain, metric in ((INT, ABS), (INTS, L1)):
        m = dp.m.make_laplace(domain, metric, scale=scale)
        assert m.map(d_in) == dp.m.make_discrete_laplace(domain, metric, scale=scale).map(d_in)
        assert m.map(d_in) == Fraction(d_in) / exact_scale  # ε = d_in/scale, exactly
    for domain, metric in ((INT, ABS), (INTS, L2)):
        g = dp.m.make_gaussian(domain, metric, scale=scale)
        assert g.map(d_in) == dp.m.make_discrete_gaussian(domain, metric, scale=scale).map(d_in)
        assert g.map(d_in) == (Fraction(d_in) / exact_scale) ** 2 / 2  # ρ = (d_in/σ)²/2, exactly


def test_releases_are_ints_for_int_data_and_floats_for_float_data() -> None:
    for make, vec_metric in ((dp.m.make_laplace, L1), (dp.m.make_gaussian, L2)):
        for rng in (None, np.random.default_rng(3)):
            scalar = make(INT, ABS, scale=2.0, rng=rng)(7)
            assert type(scalar) is int
            for data in ([1, 2, 3], np.array([1, 2, 3], dtype=np.int64), np.array([1, 2, 3], dtype=np.uint8)):
                out = make(INTS, vec_metric, scale=2.0, rng=rng)(data)
                assert isinstance(out, np.ndarray) and out.dtype == np.int64 and out.shape == (3,)
            assert type(make(FLOAT, ABS, scale=2.0, rng=rng)(7.0)) is float
            sized = dp.VectorDomain(FLOAT, size=2)
            assert make(sized, vec_metric, scale=2.0, rng=rng)([1.0, 2.0]).dtype == np.float64


def test_a_count_releases_an_integer() -> None:
    count = dp.t.make_count(dp.VectorDomain(dp.AtomDomain(str)), dp.SymmetricDistance())
    noisy = count >> dp.m.make_laplace(count.output_domain, count.output_metric, scale=1.0)
    release = noisy(["a", "b", "c"])
    assert type(release) is int
    assert noisy.map(1) == 1


def test_saturation_never_raises_and_scalars_are_exact() -> None:
    assert dp.m.make_laplace(INT, ABS, scale=1e-9)(2**3000) == 2**3000  # noise 0 w.p. 1 - 2e-434
    out = dp.m.make_gaussian(INTS, L2, scale=1e-9)(np.array([2**63 - 1, -(2**63)], dtype=np.int64))
    assert out.tolist() == [2**63 - 1, -(2**63)]
    out = dp.m.make_laplace(INTS, L1, scale=1e-9)(np.array([2**64 - 1], dtype=np.uint64))
    assert out.tolist() == [2**63 - 1]  # saturated to int64
    assert dp.m.make_laplace(INTS, L1, scale=3.0)([]).shape == (0,)


def test_integer_scales_beyond_the_exact_samplers_are_refused() -> None:
    with pytest.raises(dp.InvalidParameter, match=r"scale=.*2\*\*50 for integer data"):
        dp.m.make_laplace(INT, ABS, scale=2.0**50 + 2**-2)
    with pytest.raises(dp.InvalidParameter, match=r"scale=.*2\*\*40 for integer data"):
        dp.m.make_gaussian(INTS, L2, scale=math.nextafter(2.0**40, math.inf))
    dp.m.make_laplace(INT, ABS, scale=2.0**50)
    dp.m.make_gaussian(INT, ABS, scale=2.0**40)
    dp.m.make_laplace(FLOAT, ABS, scale=2.0**60)  # float data: the grid takes any scale in its range


def _laplace_pmf(z: int, t: float) -> float:
    q = math.exp(-1 / t)
    return (1 - q) / (1 + q) * q ** abs(z)


def test_sampled_distribution_is_the_discrete_laplace_and_privacy_ratio_holds() -> None:
    """The seeded sampler's frequencies match the exact pmf; the pmf ratio of neighbouring counts (x and
    x + 1) is at most exp(ε) with ε = map(1) at every output."""
    t = 1.5
    m = dp.m.make_laplace(INTS, L1, scale=t, rng=np.random.default_rng(11))
    n = 200_000
    z = m(np.zeros(n, dtype=np.int64))
    for k in range(-4, 5):
        p = _laplace_pmf(k, t)
        freq = float(np.mean(z == k))
        assert abs(freq - p) < 5 * math.sqrt(p * (1 - p) / n), (k, freq, p)
    eps = float(m.map(1))
    for out in range(-30, 31):
        ratio = _laplace_pmf(out - 0, t) / _laplace_pmf(out - 1, t)
        assert ratio <= math.exp(eps) * (1 + 1e-12)


@pytest.mark.parametrize(
    "make",
    [dp.m.make_laplace, dp.m.make_gaussian, dp.m.make_discrete_laplace, dp.m.make_discrete_gaussian],
)
@pytest.mark.parametrize("carrier", [int, float])
def test_a_bad_rng_is_refused_at_construction(make: Any, carrier: type) -> None:
    """rng="x" used to be accepted and to raise AttributeError only when the mechanism ran on data."""
    if carrier is float and make in (dp.m.make_discrete_laplace, dp.m.make_discrete_gaussian):
        return
    with pytest.raises(dp.InvalidParameter, match="rng"):
        make(dp.AtomDomain(carrier), dp.AbsoluteDistance(), 2.0, rng="x")
