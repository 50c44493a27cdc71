"""Memory of PLD builds, compositions and readings: guarded by bytes before allocating, bounded for many
distinct children, and every refusal a DPError naming what to change (issue 32, item 8)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from dpcompose.accounting import _pld, pld_laplace, pld_randomized_response
from dpcompose.errors import DPError, ResourceLimit

_SRC = str(Path(__file__).resolve().parents[2] / "src")


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
    # (after 20 s); the 10⁵-fold Gaussian's epsilon_bounds raised a bare MemoryError where delta_bounds on
    # the same object refused by name. Both are refused up front now, by the estimate of their bytes.
    out = _run_limited(
        """
        import time
        from dpcompose.accounting import pld_gaussian, pld_laplace
        from dpcompose.errors import ResourceLimit
        for name, call in [
            ("laplace", lambda: pld_laplace(1, 10, step_bits=26)),
            ("gaussian", lambda: pld_gaussian(1, 1.2167).self_compose(10**5).epsilon_bounds(1e-3)),
        ]:
            t0 = time.perf_counter()
            try:
                call()
                print(name, "ran")
            except ResourceLimit as e:
                print(name, "refused", round(time.perf_counter() - t0, 1), e)
        """
    )
    lines = out.strip().splitlines()
    assert len(lines) == 2, out
    lap, gauss = lines
    assert lap.startswith("laplace refused ") and "use step_bits at most 2" in lap, lap
    assert "13421774 lattice points at step_bits=26" in lap
    assert gauss.startswith("gaussian refused ") and "build its PLDs with step_bits at most 1" in gauss, gauss
    assert float(lap.split()[2]) < 5 and float(gauss.split()[2]) < 10  # refused before the work


def test_memory_refusal_is_a_dp_error_naming_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    composite = pld_randomized_response(0.5).self_compose(400)  # (built lazily: nothing allocated yet)
    monkeypatch.setattr(_pld, "MEMORY_LIMIT", 1 << 20)  # 1 MiB: every sizeable build is refused
    monkeypatch.setattr(_pld, "_CHECK_FLOOR", 0)
    with pytest.raises(ResourceLimit, match=r"step_bits=20\) needs about .* GiB .*use step_bits at most \d+$"):
        pld_laplace(1, 10, step_bits=20)
    with pytest.raises(ResourceLimit, match=r"FFT window of \d+ lattice points needs about .*step_bits at most"):
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
    what, fix = _pld.out_of_memory(1 << 19, 3000)
    assert "0.0 G" not in what and "GiB" in what and "step_bits" in fix
    assert _pld._gib(0.04 * 2**30) == "0.04 GiB"


def test_streamed_spectra_read_the_same_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    # past SPECTRA_BYTES each spectrum is computed again instead of kept: the same arithmetic, so the
    # same bits (long double low frequencies included: 300 copies of one step)
    def read() -> list[object]:
        mix = _pld.compose_plds([pld_laplace(1, 3 + i / 7) for i in range(12)] + [pld_laplace(1, 10)] * 300)
        return [*mix.epsilon_bounds(1e-7), *mix.delta_bounds(2.0)]

    kept = read()
    monkeypatch.setattr(_pld, "SPECTRA_BYTES", 0)
    assert read() == kept
