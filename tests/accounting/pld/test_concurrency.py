"""The PLD engine's one speed switch (``DPCOMPOSE_PLD_SPEEDUPS=0``, :func:`speedups`): threads, the composite
cache, screening and lazy subsampled builds off give the same readings, bit for bit."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import pytest

from dpcompose.accounting import (
    PLD,
    compose_plds,
    pld_discrete_gaussian,
    pld_laplace,
    pld_randomized_response,
    pld_subsampled_discrete_gaussian,
    pld_subsampled_gaussian,
)
from dpcompose.accounting._pld.concurrency import SPEEDUPS_ENV, speedups, speedups_on
from dpcompose.accounting._pld.recipe import Recipe
from dpcompose.accounting._pld.subsample import build as build_mod

Case = tuple[Callable[[], PLD], float, float]  # (build, δ for ε(δ), ε for δ(ε))


def _mixed() -> PLD:
    parts = [
        pld_laplace(1, 10 + i % 7) if i % 2 else pld_randomized_response(0.05 + 0.01 * (i % 4))
        for i in range(30)
    ]
    return compose_plds(parts)


QUICK: dict[str, Case] = {
    "laplace+rr": (
        lambda: compose_plds([pld_laplace(1, 10)] * 50 + [pld_randomized_response(0.5)] * 5),
        1e-6,
        1.0,
    ),
    # a long subsampled composition: two orders read in two threads, the reverse one screened, tilted
    # composites cached
    "dp-sgd 400": (lambda: pld_subsampled_gaussian(1.0, 0.05).self_compose(400), 1e-6, 1.0),
    "wor 60": (
        lambda: pld_subsampled_gaussian(2.0, 0.05, sampling="without_replacement", step_bits=10).self_compose(
            60
        ),
        1e-5,
        1.0,
    ),
    "discrete gaussian 20": (lambda: pld_discrete_gaussian(1, 5).self_compose(20), 1e-6, 1.0),
    "mixed 30": (_mixed, 1e-6, 0.5),
}

THOROUGH: dict[str, Case] = {
    "dp-sgd 1e4": (lambda: pld_subsampled_gaussian(1.0, 0.01).self_compose(10_000), 1e-5, 5.0),
    "wor 500": (
        lambda: pld_subsampled_gaussian(1.0, 0.05, sampling="without_replacement").self_compose(500),
        1e-5,
        2.0,
    ),
    "subsampled dgauss 1e3": (
        lambda: pld_subsampled_discrete_gaussian(4, 4.0, 0.02).self_compose(1000),
        1e-5,
        1.0,
    ),
    "laplace 1000 aligned": (lambda: pld_laplace(1, 10.0, aligned=True).self_compose(1000), 1e-6, 1.0),
    "discrete gaussian 100": (lambda: pld_discrete_gaussian(1, 5).self_compose(100), 1e-6, 1.0),
}


def _readings(case: Case) -> list[Fraction]:
    """ε(δ), δ(ε) and both intervals, each on a fresh object (no reading leans on an earlier one's)."""
    build, delta, eps = case
    return [
        build().epsilon(delta),
        build().delta(eps),
        *build().epsilon_bounds(delta),
        *build().delta_bounds(eps),
    ]


def _same_both_ways(case: Case) -> None:
    with speedups(True):
        on = _readings(case)
    with speedups(False):
        off = _readings(case)
    assert off == on


@pytest.mark.parametrize("name", sorted(QUICK))
def test_readings_are_the_same_with_the_speed_devices_off(name: str) -> None:
    _same_both_ways(QUICK[name])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(THOROUGH))
def test_readings_are_the_same_with_the_speed_devices_off_thorough(name: str) -> None:
    _same_both_ways(THOROUGH[name])


def test_off_starts_no_thread_keeps_no_composite_and_screens_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_thread(*args: object, **kwargs: object) -> threading.Thread:
        raise AssertionError("a thread was started with the speed devices off")

    monkeypatch.setattr(threading, "Thread", no_thread)
    with speedups(False):
        assert not speedups_on()
        pld = QUICK["dp-sgd 400"][0]()
        ways = pld.orders()
        pld.epsilon_bounds(1e-6)
        pld.delta_bounds(1.0)
    for way in (ways.one, ways.rev):
        recipe = way.recipe
        assert isinstance(recipe, Recipe)
        assert recipe.cached_bytes() == 0 and not recipe.cache and not recipe.lower_cache and not recipe.tilts
        assert not recipe.screen  # (no screening twin was made)


def test_on_uses_the_devices_the_off_test_rules_out() -> None:
    # (so that the test above can fail: the same reading with the devices on keeps composites and screens)
    with speedups(True):
        pld = QUICK["dp-sgd 400"][0]()
        ways = pld.orders()
        pld.epsilon(1e-6)
    one, rev = ways.one.recipe, ways.rev.recipe
    assert isinstance(one, Recipe) and isinstance(rev, Recipe)
    assert one.cache and one.tilts
    assert rev.screen and isinstance(rev.screen[0], PLD)  # the reverse order's twin was read


def test_off_builds_a_subsampled_step_when_made(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []
    call, reverse = build_mod.Build.__call__, build_mod.Build.reverse

    def counted_call(self: build_mod.Build) -> PLD:
        built.append("first")
        return call(self)

    def counted_reverse(self: build_mod.Build) -> PLD:
        built.append("reverse")
        return reverse(self)

    monkeypatch.setattr(build_mod.Build, "__call__", counted_call)
    monkeypatch.setattr(build_mod.Build, "reverse", counted_reverse)
    with speedups(True):
        pld_subsampled_gaussian(1.0, 0.05)
    assert built == []  # lazy: built when first read
    with speedups(False):
        pld_subsampled_gaussian(1.0, 0.05)
    assert built.count("first") == built.count("reverse") >= 1  # both orders (of the twin and the step)


def test_speedups_restores_the_setting_found() -> None:
    before = speedups_on()
    with speedups(not before):
        assert speedups_on() is (not before)
        with speedups(before):
            assert speedups_on() is before
        assert speedups_on() is (not before)
    assert speedups_on() is before
    with pytest.raises(RuntimeError), speedups(not before):
        raise RuntimeError
    assert speedups_on() is before


@pytest.mark.parametrize(
    # (a subprocess each, ~0.75 s; "1" is also the default every other test here runs with)
    ("value", "on"),
    [("0", False), pytest.param("1", True, marks=pytest.mark.slow)],
)
def test_the_environment_variable_is_the_switch(value: str, on: bool) -> None:
    src = str(Path(__file__).resolve().parents[3] / "src")
    env = {**os.environ, "PYTHONPATH": src, SPEEDUPS_ENV: value}
    code = "from dpcompose.accounting._pld.concurrency import speedups_on; print(speedups_on())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(on)
