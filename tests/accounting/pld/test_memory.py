"""Memory of PLD builds, compositions and readings: guarded by bytes before allocating, bounded for many
distinct children, and every refusal a DPError naming what to change (issue 32, item 8)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
import tracemalloc
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest

import dpcompose as dp
from dpcompose.accounting import PrivacyLoss, _loss, _pld_memory, pld_laplace, pld_randomized_response
from dpcompose.accounting._pld import composition as composition_mod
from dpcompose.accounting._pld import fourier as fourier_mod
from dpcompose.errors import DPError, ResourceLimit

_SRC = str(Path(__file__).resolve().parents[3] / "src")


def _run_limited(code: str, gib: float = 2.0) -> str:
    """Run ``code`` in a fresh interpreter whose address space is capped at ``gib`` GiB (RLIMIT_AS), so that
    a build that would need more cannot harm the test machine; its stdout."""
    prog = textwrap.dedent(
        f"""
        import resource, sys
        limit = int({gib} * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        sys.path.insert(0, {_SRC!r})
        """
    ) + textwrap.dedent(code)
    done = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS and /proc are Linux's")
def test_reproducers_under_2_gib_raise_the_named_error() -> None:
    # pld_laplace(1, 10, step_bits=26) peaked at 2.7 GB and died with numpy's bare MemoryError under 2 GiB
    # (after 12-20 s); 10⁵ × RR(0.5) read for ε(1e-6) raised a MemoryError (not a DPError) after 14 s. Both
    # are refused up front now, by the estimate of their bytes, naming step_bits. (The second
    # reproducer, the 10⁵-fold Gaussian's epsilon_bounds, is read from the closed form now: it answers.)
    out = _run_limited(
        """
        import time
        from dpcompose.accounting import pld_gaussian, pld_laplace, pld_randomized_response
        from dpcompose.errors import ResourceLimit
        for name, call in [
            ("laplace", lambda: pld_laplace(1, 10, step_bits=26)),
            ("rr", lambda: pld_randomized_response(0.5).self_compose(10**5).epsilon(1e-6)),
            ("gaussian", lambda: pld_gaussian(1, 1.2167).self_compose(10**5).epsilon_bounds(1e-3)),
        ]:
            t0 = time.perf_counter()
            try:
                call()
                print(name, "ran", round(time.perf_counter() - t0, 1))
            except ResourceLimit as e:
                print(name, "refused", round(time.perf_counter() - t0, 1), e)
        """
    )
    lines = out.strip().splitlines()
    assert len(lines) == 3, out
    lap, rr, gauss = lines
    assert lap.startswith("laplace refused ") and "use step_bits at most 2" in lap, lap
    assert "13421774 lattice points at step_bits=26" in lap
    assert rr.startswith("rr refused ") and "FFT window of 33554432 lattice points" in rr, rr
    assert "build its PLDs with step_bits at most 1" in rr
    assert float(lap.split()[2]) < 5 and float(rr.split()[2]) < 5  # refused before the work
    assert gauss.startswith("gaussian ran "), gauss


def test_memory_refusal_is_a_dp_error_naming_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    composite = pld_randomized_response(0.5).self_compose(4000)  # (built lazily: nothing allocated yet)
    monkeypatch.setattr(_pld_memory, "MEMORY_LIMIT", 1 << 20)  # 1 MiB: any sizeable build or window refused
    build = r"step_bits=20\) needs about .* GiB .*use step_bits at most \d+$"
    with pytest.raises(ResourceLimit, match=build):
        pld_laplace(1, 10, step_bits=20)
    window = r"FFT window of \d+ lattice points needs about .*step_bits at most"
    with pytest.raises(ResourceLimit, match=window):
        composite.epsilon(1e-6)
    assert issubclass(ResourceLimit, DPError)


def test_numpy_running_out_of_memory_in_a_build_is_the_named_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # a last resort, where the estimate let the build run and memory was taken meanwhile
    def no_memory(*args: object, **kwargs: object) -> object:
        raise MemoryError

    monkeypatch.setattr(np, "bincount", no_memory)  # (the lower side's labels)
    with pytest.raises(ResourceLimit, match=r"^building .* ran out of memory .*use a smaller step_bits"):
        pld_laplace(1, 7)


def test_the_memory_figures_say_gib_not_zero() -> None:
    # "about 0.0 GB" for a window of 2**19 points: the figure had one decimal
    what, fix = fourier_mod.out_of_memory(1 << 19, 3000)
    assert "about 0.0391 GiB at its peak" in what and "step_bits" in fix


def test_streamed_spectra_read_the_same_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    # past SPECTRA_BYTES each spectrum is computed again instead of kept: the same arithmetic, so the
    # same bits (long double low frequencies included: 300 copies of one step)
    def read() -> list[object]:
        mix = composition_mod.compose_plds(
            [pld_laplace(1, 3 + i / 7) for i in range(4)] + [pld_laplace(1, 10)] * 60
        )
        return [*mix.epsilon_bounds(1e-7), *mix.delta_bounds(2.0)]

    kept = read()
    monkeypatch.setattr(_pld_memory, "SPECTRA_BYTES", 0)
    assert read() == kept


# -- many distinct children (item 8 (a)) --------------------------------------------------------------------


def _laplace_pairs(n: int, base: float) -> list[PrivacyLoss]:
    """The pairs dpcompose's secure make_laplace reports at d_in = 1 for the scales base + i/100."""
    dom, metric = dp.AtomDomain(float), dp.AbsoluteDistance()
    pairs = [dp.m.make_laplace(dom, metric, scale=base + i / 100).privacy_loss(1) for i in range(n)]
    assert all(p is not None for p in pairs)
    return [p for p in pairs if p is not None]


def test_memory_per_distinct_child_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    # 300 distinct Laplace children (scales 10 + i/100): the composition kept every child's spectrum on its
    # window (977.7 MB at the peak, 3.3 MB per child; 3,000 children at scales 1 + i/1000 ran out of memory
    # and 20,000 ran past 90 s). The spectra are streamed past SPECTRA_BYTES and the Laplace pairs rounded to
    # at most GROUP_OVER dominating ones (32 here, to keep the test short; 256 by default).
    pairs = _laplace_pairs(300, 10.0)
    monkeypatch.setattr(_loss, "GROUP_OVER", 32, raising=False)
    composed = PrivacyLoss.compose(pairs)
    tracemalloc.start()
    try:
        eps = composed.epsilon(1e-6)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # (171 KiB per child measured, most of it the spectra kept below SPECTRA_BYTES, which do not grow with
    # the number of children; 3,337 KiB per child before)
    assert peak < _pld_memory.SPECTRA_BYTES + (32 << 20) and peak / 300 < 512 << 10, f"{peak / 2**20:.0f} MB"
    assert 7.7265 < float(eps) < 7.8  # (the 300 pairs composed as they are read 7.72655)


def test_rounded_groups_never_read_below_the_exact_composition(monkeypatch: pytest.MonkeyPatch) -> None:
    pairs = _laplace_pairs(40, 10.0)
    exact = PrivacyLoss.compose(pairs)  # 40 ≤ GROUP_OVER: every pair composed as it is
    lo, hi = exact.epsilon_bounds(1e-6)
    monkeypatch.setattr(_loss, "GROUP_OVER", 8, raising=False)
    grouped = PrivacyLoss.compose([*pairs, PrivacyLoss.laplace(0, 1)])  # (a new key: not read before)
    g_lo, g_hi = grouped.epsilon_bounds(1e-6)
    # the pairs rounded up dominate: the certified upper end never falls below the exact one's; the lower
    # end is read from the pairs rounded down, which the mechanisms dominate: never above the exact upper
    assert lo <= hi <= g_hi and g_lo <= lo
    assert g_hi < hi * Fraction(101, 100)  # (at most 8 groups here: each ε up by less than 1/s ≈ 1.5%)
    assert g_lo > lo * Fraction(99, 100)
    assert exact.delta(2.5) <= grouped.delta(2.5)


@pytest.mark.parametrize("kind", ["laplace", "discrete_laplace"])
def test_each_rounded_pair_dominates_its_pair(kind: str) -> None:
    # the docstring's proof: the original pair is the rounded one with the same independent noise added to
    # both sides, so its hockey-stick divergence is at most the rounded pair's at every ε. Checked exactly
    # (mpmath) for discrete Laplace, and by the closed form 1 − e^{(ε − ε₀)/2} for Laplace.
    for delta, t in [(1, Fraction(10, 3)), (3, Fraction(7, 2))]:
        pair = PrivacyLoss.laplace(delta, t) if kind == "laplace" else PrivacyLoss.discrete_laplace(delta, t)
        for steps in (4096, 7, 1):
            rounded, below = _loss.rounded_pair(pair, steps, True), _loss.rounded_pair(pair, steps, False)
            eps0 = Fraction(delta) / t
            eps1 = Fraction(rounded.params[0]) / Fraction(rounded.params[1])
            eps2 = Fraction(below.params[0]) / Fraction(below.params[1])
            assert eps0 * (1 - Fraction(1, steps)) < eps2 <= eps0 <= eps1 < eps0 * (1 + Fraction(1, steps))
            if kind == "discrete_laplace":
                assert rounded.params[0] == below.params[0] == delta
                assert Fraction(rounded.params[1]) <= t <= Fraction(below.params[1])
            for e in (0, 0.25, 0.5):
                assert _hockey(below, e) <= _hockey(pair, e) <= _hockey(rounded, e)


def _hockey(pair: PrivacyLoss, eps: float) -> mpmath.mpf:
    """δ(ε) of a Laplace or discrete Laplace pair, exactly (mpmath)."""
    with mpmath.workdps(50):
        delta, t = (
            mpmath.mpf(Fraction(pair.params[0]).numerator) / Fraction(pair.params[0]).denominator,
            (mpmath.mpf(Fraction(pair.params[1]).numerator) / Fraction(pair.params[1]).denominator),
        )
        eps0 = delta / t
        if pair.kind == "laplace":
            return max(mpmath.mpf(0), 1 - mpmath.exp((eps - eps0) / 2)) if eps < eps0 else mpmath.mpf(0)
        r = mpmath.exp(-1 / t)
        c = (1 - r) / (1 + r)
        total = mpmath.mpf(0)
        for z in range(-150, int(delta) + 150):  # (the rest weighs below r**150 < 1e-18)
            p, q = c * r ** abs(z), c * r ** abs(z - int(delta))
            total += max(mpmath.mpf(0), p - mpmath.exp(eps) * q)
        return total


def test_too_many_distinct_pairs_are_refused_by_name() -> None:
    # pairs that are not rounded (discrete Gaussians: no such domination is proved here) past MAX_DISTINCT
    pairs = [PrivacyLoss.discrete_gaussian(1, 10 + Fraction(i, 100)) for i in range(_loss.MAX_DISTINCT + 1)]
    t0 = time.perf_counter()
    with pytest.raises(ResourceLimit, match=r"has 513 distinct pairs .* more than the 512 .*MAX_DISTINCT"):
        PrivacyLoss.compose(pairs).epsilon(1e-6)
    assert time.perf_counter() - t0 < 3  # before any of them is built
