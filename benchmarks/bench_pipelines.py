"""Time and peak memory of everyday pipelines, dpcompose beside OpenDP, on numpy arrays and Python lists.

Run: ``python benchmarks/bench_pipelines.py`` (``--sizes 10000 1000000`` to pick sizes, ``--no-opendp`` to
skip OpenDP, ``--src PATH`` to time another checkout's ``src``, e.g. the code before a change).

Pipelines (each timed as the whole call ``t(data)``: the input-domain check and the function):

* ``count``: ``make_count`` on int records;
* ``int sum``: ``make_clamp(ints, (0, 100)) >> make_sum`` on int64 records in [-5, 105);
* ``float sum``: ``make_clamp(floats, (0.0, 1.0)) >> make_sum(max_size=n)`` on float64 records in
  [-0.5, 1.5);
* ``mean``: ``make_clamp(floats, (0.0, 1.0)) >> make_resize(size=n, constant=0.5) >> make_mean`` on float64
  records in [-0.5, 1.5) (the data already has n records, so the resize keeps them all);
* ``by category``: ``make_count_by_categories`` on int records with the 10 categories 0 … 9 (plus "other");
* ``quantile``: ``make_quantile_score_candidates`` (the part of a private median that touches the data)
  on int records with the 21 candidates 0, 5, …, 100 and alpha = 0.5 (the two libraries' scores differ
  in form — OpenDP's are shifted and scaled — so the row checks only that both ran).

OpenDP's equivalents are built on ``atom_domain(T="i64")`` / ``T=float`` with ``then_sum`` and
``make_count_by_categories`` (OpenDP 0.16; OpenDP is an optional benchmark-only dependency, the ``bench``
extra). OpenDP's float sum is given a sized domain (``size=n``): on an unsized one it sums only a bounded
number of records (at 10⁷ records it returned about a tenth of the sum). Each row checks that both
libraries computed the same value and prints ``DIFFERENT`` otherwise.

Columns: the best time of ``--repeats`` runs (one run for Python lists at 10⁷), ``ratio`` = our time
divided by OpenDP's (below 1: we are faster), and ``peak/input``: dpcompose's peak traced allocation
(``tracemalloc``, which sees numpy's buffers and Python objects) during one call, divided by the size of the
numpy input array — for list input too, so the column shows what a list costs beside the array. OpenDP's
memory is allocated in Rust, which ``tracemalloc`` cannot see, so it has no memory column.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def _import_dpcompose(src: str | None) -> Any:
    sys.path.insert(0, str(Path(src).resolve() if src else Path(__file__).resolve().parents[1] / "src"))
    import dpcompose

    return dpcompose


def _opendp() -> Any:
    try:
        import opendp.prelude as odp
    except ImportError:
        return None
    odp.enable_features("contrib")
    return odp


def ours(dp: Any, n: int) -> dict[str, Callable[[Any], Any] | None]:
    sym = dp.SymmetricDistance()
    ints = dp.VectorDomain(dp.AtomDomain(int))
    floats = dp.VectorDomain(dp.AtomDomain(float))
    iclamp = dp.t.make_clamp(ints, sym, (0, 100))
    fclamp = dp.t.make_clamp(floats, sym, (0.0, 1.0))
    by_cat = getattr(dp.t, "make_count_by_categories", None)
    resize = getattr(dp.t, "make_resize", None)
    mean = None
    if resize is not None:
        sized = resize(fclamp.output_domain, sym, size=n, constant=0.5)
        mean = fclamp >> sized >> dp.t.make_mean(sized.output_domain, sized.output_metric)
    score = getattr(dp.t, "make_quantile_score_candidates", None)
    return {
        "count": dp.t.make_count(ints, sym),
        "int sum": iclamp >> dp.t.make_sum(iclamp.output_domain, sym),
        "float sum": fclamp >> dp.t.make_sum(fclamp.output_domain, sym, max_size=n),
        "mean": mean,
        "by category": None if by_cat is None else by_cat(ints, sym, list(range(10))),
        "quantile": None if score is None else score(ints, sym, list(range(0, 101, 5)), 0.5),
    }


def theirs(odp: Any, n: int) -> dict[str, Callable[[Any], Any]]:
    sym = odp.symmetric_distance()
    ints = odp.vector_domain(odp.atom_domain(T="i64"))
    floats = odp.vector_domain(odp.atom_domain(T=float, nan=False), size=n)  # see the module docstring
    unsized = odp.vector_domain(odp.atom_domain(T=float, nan=False))
    return {
        "count": odp.t.make_count(ints, sym),
        "int sum": odp.t.make_clamp(ints, sym, (0, 100)) >> odp.t.then_sum(),
        "float sum": odp.t.make_clamp(floats, sym, (0.0, 1.0)) >> odp.t.then_sum(),
        "mean": odp.t.make_clamp(unsized, sym, (0.0, 1.0))
        >> odp.t.then_resize(size=n, constant=0.5)
        >> odp.t.then_mean(),
        "by category": odp.t.make_count_by_categories(ints, sym, categories=list(range(10))),
        "quantile": odp.t.make_quantile_score_candidates(
            ints, sym, candidates=list(range(0, 101, 5)), alpha=0.5
        ),
    }


def best_time(func: Callable[[Any], Any], data: Any, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        func(data)
        best = min(best, time.perf_counter() - start)
    return best


def peak_bytes(func: Callable[[Any], Any], data: Any) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        func(data)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def data_for(name: str, n: int, rng: np.random.Generator) -> np.ndarray[Any, Any]:
    if name in ("float sum", "mean"):
        return rng.uniform(-0.5, 1.5, n)
    return rng.integers(-5, 105, n, dtype=np.int64)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10**4, 10**5, 10**6, 10**7])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-opendp", action="store_true")
    parser.add_argument("--no-lists", action="store_true", help="numpy input only")
    parser.add_argument("--no-memory", action="store_true", help="skip the tracemalloc runs")
    parser.add_argument("--src", help="import dpcompose from this src directory instead of the repo's")
    args = parser.parse_args(argv)
    dp = _import_dpcompose(args.src)
    odp = None if args.no_opendp else _opendp()
    if odp is None and not args.no_opendp:
        print("OpenDP is not installed (pip install opendp, or the bench extra): dpcompose alone")
    print(f"dpcompose from {Path(dp.__file__).parent}")
    columns = f"{'dpcompose':>11} {'opendp':>11} {'ratio':>7} {'peak/input':>10}"
    header = f"{'pipeline':<12} {'input':<6} {'n':>9} {columns}"
    print(header)
    print("-" * len(header))
    rng = np.random.default_rng(0)
    for n in args.sizes:
        mine = ours(dp, n)
        other = theirs(odp, n) if odp is not None else {}
        for name, func in mine.items():
            if func is None:
                continue
            array = data_for(name, n, rng)
            inputs: list[tuple[str, Any]] = [("numpy", array)]
            if not args.no_lists:
                inputs.append(("list", array.tolist()))
            for kind, data in inputs:
                repeats = 1 if (kind == "list" and n >= 10**7) else args.repeats
                t_ours = best_time(func, data, repeats)
                t_theirs = best_time(other[name], data, repeats) if name in other else None
                same = name not in other or _same(func(data), other[name](data), name)
                agree = "" if same else "  DIFFERENT"
                peak = "" if args.no_memory else f"{peak_bytes(func, data) / array.nbytes:10.2f}"
                theirs_text = "" if t_theirs is None else f"{t_theirs * 1e3:9.2f}ms"
                ratio = "" if t_theirs is None else f"{t_ours / t_theirs:7.2f}"
                timing = f"{t_ours * 1e3:9.2f}ms {theirs_text:>11} {ratio:>7}"
                print(f"{name:<12} {kind:<6} {n:>9} {timing} {peak:>10}{agree}", flush=True)
            del inputs, data


def _same(a: Any, b: Any, name: str) -> bool:
    """Both libraries compute the same value (a check that the pipelines are equivalent)."""
    if name in ("float sum", "mean"):
        return abs(float(a) - float(b)) <= 1e-9 * max(1.0, abs(float(b)))
    if name == "by category":
        return list(np.asarray(a).tolist()) == list(b)
    if name == "quantile":
        return len(a) == len(b)
    return bool(a == b)


if __name__ == "__main__":
    main()
