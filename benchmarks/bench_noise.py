"""Samples per second of dpcompose's exact secure samplers, beside numpy's float samplers and OpenDP's.

Run: ``python benchmarks/bench_noise.py`` (add ``--no-opendp`` to skip OpenDP, ``--sizes 1000 100000`` to
pick sizes). dpcompose draws from the operating system's secure source (``SecureSource``); numpy uses its
default PCG64 generator and float arithmetic (neither secure nor exact: the reference for raw speed);
OpenDP uses its exact integer samplers (``make_laplace`` / ``make_gaussian`` on an integer vector
domain), which also draw from a secure source.

Columns: samples/s of each; ``ours/numpy`` is our time divided by numpy's (the issue aims at ≤ 10 for
10⁶-vectors); ``opendp/ours`` is OpenDP's time divided by ours (> 1 means we are faster). Each timing is
the best of ``--repeats`` runs (OpenDP: one run at 10⁶, it is slow).

Rows ``laplace@grid`` / ``gaussian@grid`` (on by default; ``--no-grid`` skips them) time the samplers at the
parameters the default float mechanisms use: ``make_laplace(scale)`` samples the discrete Laplace of scale
``t = scale/2^k`` in ``[2^30, 2^31)`` and ``make_gaussian(scale)`` the discrete Gaussian of
``σ = ⌈scale/2^k⌉`` in ``[2^20, 2^21]`` (``Grid.for_laplace`` / ``Grid.for_gaussian``); the ``scale``
column is the float scale.
Rows ``mech-lap`` / ``mech-gau`` time the whole float mechanism (``make_laplace`` / ``make_gaussian`` on a
float vector of zeros, rounding to the grid included), beside numpy's float noise of the same scale;
``mech-lap-int`` / ``mech-gau-int`` the same mechanisms on an int64 vector (since issue 15 the discrete
mechanisms: exact integer noise of the given scale, no grid, an int64 release).

For scales up to 2048 (Laplace) and σ up to 8192 (Gaussian) our samplers invert the distribution with a
per-parameter table of integer bounds, built on the first call whose size pays for it (``size`` at least
about twice the table length: ~22·scale entries for Laplace, ~9·σ for Gaussian) and then cached; later
calls of any size reuse it. ``ours/s`` is therefore the warm speed; ``cold/s`` is a single first call with
the caches emptied (set-up included when that call builds a table). Above those (the ``@grid`` rows),
Laplace uses the digit split and the Gaussian (2**26 < σ² <= 2**60) the bucketed envelope, whose
per-parameter tables are likewise built when ``size`` pays for them (about 24 000 draws for the
Gaussian) and cached; smaller uncached requests run CKS 2020 Algorithms 2/3 on blocks.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from fractions import Fraction
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import dpcompose as dp
from dpcompose.accounting import exact
from dpcompose.measurements import _huge_scales, _inversion
from dpcompose.measurements._discrete import Grid
from dpcompose.measurements._sampling import (
    SecureSource,
    discrete_gaussian_array,
    discrete_laplace_array,
)


def clear_caches() -> None:
    """Forget every inversion table, so that the next call runs cold."""
    _inversion.TABLES.clear()
    _inversion.tail_bounds.cache_clear()
    _huge_scales.PLANS.clear()
    _huge_scales.GAUSS_PLANS.clear()


def best_time(fn: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def opendp_samplers() -> dict[str, Callable[[float, int], Callable[[], object]]] | None:
    try:
        import opendp.prelude as odp
    except ImportError:
        return None
    odp.enable_features("contrib")

    def laplace(scale: float, size: int) -> Callable[[], object]:
        domain = odp.vector_domain(odp.atom_domain(T=int), size=size)
        meas = odp.m.make_laplace(domain, odp.l1_distance(T=int), scale=scale)
        zeros = [0] * size
        return lambda: meas(zeros)

    def gaussian(scale: float, size: int) -> Callable[[], object]:
        domain = odp.vector_domain(odp.atom_domain(T=int), size=size)
        meas = odp.m.make_gaussian(domain, odp.l2_distance(T=int), scale=scale)
        zeros = [0] * size
        return lambda: meas(zeros)

    return {"laplace": laplace, "gaussian": gaussian}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 100_000, 1_000_000])
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 10, 1000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-opendp", action="store_true")
    parser.add_argument("--no-grid", action="store_true", help="skip the float mechanisms' grid rows")
    args = parser.parse_args()

    src = SecureSource()
    gen = np.random.default_rng()
    odp = None if args.no_opendp else opendp_samplers()
    header = (
        f"{'noise':<14}{'scale':>6}{'size':>9}{'cold/s':>12}{'ours/s':>12}{'numpy/s':>12}{'opendp/s':>12}"
        f"{'ours/numpy':>12}{'opendp/ours':>13}"
    )
    print(header)
    print("-" * len(header))
    for kind in ("laplace", "gaussian"):
        for scale in args.scales:
            for size in args.sizes:
                if kind == "laplace":
                    run_ours = partial(discrete_laplace_array, Fraction(scale), size, src)
                    run_ref = partial(gen.laplace, 0.0, scale, size)
                else:
                    run_ours = partial(discrete_gaussian_array, Fraction(scale) ** 2, size, src)
                    run_ref = partial(gen.normal, 0.0, scale, size)
                clear_caches()
                cold = best_time(run_ours, 1)
                ours = best_time(run_ours, args.repeats)
                ref = best_time(run_ref, args.repeats)
                odp_cell, ratio_cell = f"{'-':>12}", f"{'-':>13}"
                if odp is not None:
                    run = odp[kind](float(scale), size)
                    theirs = best_time(run, 1 if size >= 1_000_000 else args.repeats)
                    odp_cell = f"{size / theirs:>12.3g}"
                    ratio_cell = f"{theirs / ours:>13.1f}"
                print(
                    f"{kind:<14}{scale:>6}{size:>9}{size / cold:>12.3g}{size / ours:>12.3g}"
                    f"{size / ref:>12.3g}{odp_cell}"
                    f"{ours / ref:>12.1f}{ratio_cell}"
                )
    if not args.no_grid:
        grid_rows(args, src, gen)


def grid_rows(args: argparse.Namespace, src: SecureSource, gen: np.random.Generator) -> None:
    """The samplers at the float mechanisms' grid parameters, and the whole float mechanisms."""
    for kind in ("laplace@grid", "gaussian@grid", "mech-lap", "mech-gau", "mech-lap-int", "mech-gau-int"):
        for scale in args.scales:
            for size in args.sizes:
                fscale = float(scale)
                is_laplace = kind in ("laplace@grid", "mech-lap", "mech-lap-int")
                if kind == "laplace@grid":
                    t = Grid.for_laplace(exact(fscale)).units
                    run_ours = partial(discrete_laplace_array, t, size, src)
                elif kind == "gaussian@grid":
                    sigma = Grid.for_gaussian(exact(fscale)).units
                    run_ours = partial(discrete_gaussian_array, sigma**2, size, src)
                else:
                    integer = kind.endswith("-int")
                    carrier = int if integer else float
                    domain = dp.VectorDomain(dp.AtomDomain(carrier), size=size)
                    make = dp.m.make_laplace if is_laplace else dp.m.make_gaussian
                    metric = dp.L1Distance() if is_laplace else dp.L2Distance()
                    meas = make(domain, metric, scale=fscale)
                    run_ours = partial(meas, np.zeros(size, dtype=np.int64 if integer else np.float64))
                run_ref = partial(gen.laplace if is_laplace else gen.normal, 0.0, fscale, size)
                clear_caches()
                cold = best_time(run_ours, 1)
                ours = best_time(run_ours, args.repeats)
                ref = best_time(run_ref, args.repeats)
                print(
                    f"{kind:<14}{scale:>6}{size:>9}{size / cold:>12.3g}{size / ours:>12.3g}"
                    f"{size / ref:>12.3g}{'-':>12}{ours / ref:>12.1f}{'-':>13}"
                )


if __name__ == "__main__":
    main()
