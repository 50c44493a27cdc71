"""The PLD composition engine's numerical parts against high-precision arithmetic (mpmath)."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcompose.accounting import _pld


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
    a, b = _pld._head_range(x, _pld._LD_HEAD)
    assert 0 < b - a <= n
    size = 1 << 13
    vals, errs = _pld._ld_dft(x, size, count)
    exact = _dft_mp(x, size, count)
    for j in range(count):
        d = abs(mpmath.mpc(float(vals[j].real), float(vals[j].imag)) - exact[j])
        # the computed value (rounded to complex128 here, hence the small float allowance) is within errs
        assert float(d) <= errs[j] + 4e-16 * float(abs(exact[j])) + 1e-300


def test_ld_dft_bound_is_small_where_it_matters() -> None:
    # the point of the long double path: its bound is far below the double FFT's componentwise bound
    n = 6000
    i = np.arange(n)
    x = np.exp(-(((i - 3000) / 50.0) ** 2))
    x /= x.sum()
    _, errs = _pld._ld_dft(x, 1 << 14, 4)
    assert float(np.max(errs)) < 1e-2 * _pld._fft_componentwise(1 << 14)


def test_tail_count_matches_full_cumsum() -> None:
    rng = np.random.default_rng(1)
    for n in (3, 300, 5000, 70_000):
        m = rng.exponential(1.0, n) * np.exp(-np.linspace(0, 60, n))
        for tail in (0.0, 1e-20, 1e-5, 0.5, 1e9):
            expect = int(np.searchsorted(np.cumsum(m) > tail, True))
            assert _pld._tail_count(m, tail) == expect


@pytest.mark.parametrize("k", [50, 400])
def test_dropped_frequencies_do_not_change_the_bounds_much(k: int) -> None:
    # a composition long enough for the Fourier path; the interval must contain the exact RR value
    from dpcompose.accounting import optimal_epsilon, pld_randomized_response

    eps0 = 0.05
    lo, hi = pld_randomized_response(eps0).self_compose(k).epsilon_bounds(1e-6)
    exact = optimal_epsilon([eps0] * k, [0] * k, 1e-6)
    assert lo <= exact <= hi
    assert float(hi - lo) < 0.02 * math.sqrt(k / 50)
