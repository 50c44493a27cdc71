"""The cache of subsampled Rényi curves (accounting/_rdp_cache.py): the same readings with it on or off, and
the exact sums computed once per distinct step instead of once per step and order."""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import dpcompose as dp
import dpcompose.accounting._rdp_cache as rdp_cache
from dpcompose.accounting._filters import DEFAULT_ORDERS
from dpcompose.accounting._rdp import subsampled_renyi

ROWS = dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float), size=3))
SYM = dp.SymmetricDistance()
DATA = np.column_stack([np.linspace(-1, 1, 60), np.ones(60), np.zeros(60)])


def _step(sigma: float = 1.1, q: float = 0.02) -> Any:
    """docs/training.md's DP-SGD step (a float vector sum, Gaussian noise, Poisson subsample) with the
    Rényi accounting the Rényi odometer takes."""
    clipped = dp.t.make_clip_l2(ROWS, SYM, norm=1.0)
    total = clipped >> dp.t.make_vector_sum(clipped.output_domain, SYM, max_size=1000)
    noisy = total >> dp.m.make_gaussian(total.output_domain, total.output_metric, scale=sigma)
    return dp.make_subsample(noisy, q, accounting="renyi")


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts the exact sums the cache module asks for (empty caches before and after)."""
    calls: list[int] = []

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return subsampled_renyi(*args, **kwargs)

    monkeypatch.setattr(rdp_cache, "subsampled_renyi", counting)
    rdp_cache.clear()
    yield calls
    rdp_cache.clear()


def _run(steps: int, sigmas: list[float]) -> tuple[Any, ...]:
    odometer = dp.make_odometer(ROWS, SYM, dp.RenyiDP(), d_in=1, delta=1e-5)
    q = odometer(DATA)
    for i in range(steps):
        q(_step(sigmas[i % len(sigmas)]))
    return q.privacy_loss(), q.spent()


def test_the_odometer_reads_the_same_with_the_cache_and_computes_each_step_once(counted: list[int]) -> None:
    with rdp_cache.SWITCH.turned(False):
        off = _run(10, [1.1])
    per_step = len(counted) // 10
    assert per_step == len(DEFAULT_ORDERS) and len(counted) == 10 * per_step
    counted.clear()
    with rdp_cache.SWITCH.turned(True):  # (whatever DPCOMPOSE_RDP_CACHE says)
        on = _run(10, [1.1])
        assert on == off
        assert len(counted) == per_step  # the first step's orders only
        counted.clear()
        assert _run(10, [1.1]) == off and counted == []  # a new odometer, the same step: all cached
        mixed = _run(6, [1.1, 2.0, 4.0])
        assert len(counted) == 2 * per_step  # two new steps
    with rdp_cache.SWITCH.turned(False):
        assert _run(6, [1.1, 2.0, 4.0]) == mixed


def test_the_single_order_value_is_the_uncached_one(counted: list[int]) -> None:
    rho, q = Fraction(1, 2), Fraction(1, 50)
    rdp_cache.clear()
    with rdp_cache.SWITCH.turned(True):
        for alpha in (Fraction(5, 4), Fraction(2), Fraction(10), Fraction(256)):
            for symmetric in (False, True):
                want = subsampled_renyi(lambda j: j * rho, q, (alpha,), symmetric=symmetric)[0]
                assert rdp_cache.subsampled_zcdp_at(rho, q, alpha, symmetric) == want
                computed = len(counted)
                assert rdp_cache.subsampled_zcdp_at(rho, q, alpha, symmetric) == want
                assert len(counted) == computed  # (from the cache: nothing computed again)
    rdp_cache.clear()


def test_the_cache_is_bounded() -> None:
    rdp_cache.clear()
    with rdp_cache.SWITCH.turned(True):  # (whatever DPCOMPOSE_RDP_CACHE says)
        for k in range(rdp_cache.CACHE_SIZE + 50):
            rdp_cache.subsampled_zcdp_at(Fraction(k + 1, 1000), Fraction(1, 100), Fraction(2), True)
    assert rdp_cache.sizes() == rdp_cache.CACHE_SIZE
    rdp_cache.clear()
