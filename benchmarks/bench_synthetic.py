"""AIM synthetic data: dpcompose's ``dp.algorithms.make_aim`` against OpenDP 0.16's ``dp.mbi.AIM``.

Same data (a categorical table drawn from a random tree-shaped Bayesian network: 10 columns of 2–5
categories, 10⁵ rows), same ρ, same workload (every 2-way marginal, or every 3-way with ``--way 3``), the
same planned number of rounds T (``--rounds``; both libraries' default is 16 × the number of columns),
three seeds. The figure is the average L1 workload error ``(1/|W|) Σ_r ‖M_r(D) − M_r(model)‖₁ / n`` of
each library's fitted model, and the wall time. Run::

    PYTHONPATH=src python benchmarks/bench_synthetic.py [--rows N] [--way K] [--rho R] [--rounds T]
        [--opendp-python /work/venv-opendp/bin/python]

dpcompose runs in this interpreter (all seeds first); then OpenDP runs in ``--opendp-python`` (an
interpreter with ``opendp[mbi]``; default ``/work/venv-opendp/bin/python``), one worker process for all
seeds, fed the very same arrays through temporary ``.npy`` files. Without that interpreter only
dpcompose's side is printed.

Why OpenDP's AIM is slow here: profiling a 10⁴-row run (T = 20, 14 rounds, 450 s) puts 70 % of the time
in XLA compilation (``backend_compile_and_load``, 1,831 compilations): every round changes the model's
cliques, so ``mbi``'s JAX code (the mirror-descent fit and the variable elimination behind
``model.project``, called for every candidate every round) meets new array shapes and compiles again.
The number of rows hardly matters; the number of rounds does (≈ 30 s a round on this machine, less once
the worker's compilation cache holds the shapes: the later seeds of one worker run 2–3× faster).

The same T is not the same plan. OpenDP's ``contingency_table`` first releases every one-way marginal with
half of ρ (its default ``oneway_split = 0.5``) and its AIM then runs T rounds of ``(ρ/2)/T``; dpcompose's
AIM (the paper's Alg. 1) measures the one-way marginals inside its budget at the per-round σ and runs
rounds of ``ρ/T``. So at equal T dpcompose measures about half as many marginals (T = 20, seed 0: 10
one-way + 11 two-way, where OpenDP runs up to 20 rounds: 14 in a profiled 10⁴-row run), and
``--opendp-rounds`` T/2 gives both the same per-round budget.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import dpcompose as dp

SIZES = [2, 3, 4, 5, 2, 3, 4, 2, 3, 5]
COLUMNS = [f"c{i}" for i in range(len(SIZES))]
DEFAULT_OPENDP_PYTHON = "/work/venv-opendp/bin/python"


def make_data(rows: int, seed: int) -> np.ndarray:
    """Rows of a random tree-shaped Bayesian network: column i depends on one earlier column."""
    rng = np.random.default_rng(seed)
    out = np.zeros((rows, len(SIZES)), dtype=np.int64)
    out[:, 0] = rng.choice(SIZES[0], size=rows, p=rng.dirichlet(np.ones(SIZES[0])))
    for i in range(1, len(SIZES)):
        parent = int(rng.integers(0, i))
        table = rng.dirichlet(np.full(SIZES[i], 0.5), size=SIZES[parent])  # P(c_i | c_parent)
        u = rng.random(rows)[:, None]
        cdf = np.cumsum(table[out[:, parent]], axis=1)
        out[:, i] = np.minimum((u > cdf).sum(axis=1), SIZES[i] - 1)
    return out


def true_marginal(data: np.ndarray, clique: tuple[int, ...]) -> np.ndarray:
    shape = tuple(SIZES[i] for i in clique)
    flat = np.ravel_multi_index(tuple(data[:, i] for i in clique), shape)
    return np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape).astype(float)


def workload_error(data: np.ndarray, workload: list[tuple[int, ...]], project: Any) -> float:
    n = len(data)
    return float(np.mean([np.abs(true_marginal(data, r) - project(r)).sum() / n for r in workload]))


def run_dpcompose(
    data: np.ndarray, workload: list[tuple[int, ...]], rho: float, rounds: int | None
) -> tuple[float, float]:
    rows = dp.VectorDomain(dp.AtomDomain(dict))
    cats = {c: list(range(s)) for c, s in zip(COLUMNS, SIZES, strict=True)}
    records = [dict(zip(COLUMNS, r, strict=True)) for r in data.tolist()]
    start = time.perf_counter()
    aim = dp.algorithms.make_aim(
        rows,
        dp.SymmetricDistance(),
        cats,
        rho,
        workload=[tuple(COLUMNS[i] for i in r) for r in workload],
        rounds=rounds,
    )
    model = aim(records)
    elapsed = time.perf_counter() - start
    err = workload_error(data, workload, lambda r: model.project(tuple(COLUMNS[i] for i in r)))
    return err, elapsed


def run_opendp(
    data: np.ndarray, workload: list[tuple[int, ...]], rho: float, rounds: int | None
) -> tuple[float, float]:
    """OpenDP's AIM on ``data`` (run inside the OpenDP interpreter)."""
    import opendp.prelude as odp  # optional dependency, present only in the worker's interpreter
    import polars as pl  # optional dependency

    odp.enable_features("contrib")
    frame = pl.LazyFrame({c: data[:, i] for i, c in enumerate(COLUMNS)})
    start = time.perf_counter()
    context = odp.Context.compositor(
        data=frame,
        privacy_unit=odp.unit_of(contributions=1),
        privacy_loss=odp.loss_of(rho=rho),
        split_evenly_over=1,
    )
    queries = [odp.mbi.Count(tuple(COLUMNS[i] for i in r)) for r in workload]
    algorithm = (
        odp.mbi.AIM(queries=queries) if rounds is None else odp.mbi.AIM(queries=queries, rounds=rounds)
    )
    table = (
        context.query()
        .select(*COLUMNS)
        .contingency_table(
            keys={c: list(range(s)) for c, s in zip(COLUMNS, SIZES, strict=True)},
            algorithm=algorithm,
        )
        .release()
    )
    elapsed = time.perf_counter() - start

    def split(r: tuple[int, ...]) -> tuple[np.ndarray, float]:
        """OpenDP's marginal over the declared categories, and its mass on the null category it adds."""
        values = np.asarray(table.project(tuple(COLUMNS[i] for i in r)), dtype=float)
        index = [[table.keys[COLUMNS[i]].to_list().index(v) for v in range(SIZES[i])] for i in r]
        inside = values[np.ix_(*index)]
        return inside, float(values.sum() - inside.sum())

    n = len(data)
    errors = []
    for r in workload:
        inside, null_mass = split(r)
        errors.append((np.abs(true_marginal(data, r) - inside).sum() + null_mass) / n)
    return float(np.mean(errors)), elapsed


def worker(spec_path: str) -> None:
    """The OpenDP side: one JSON line per data file named in the spec, flushed as each finishes."""
    spec = json.loads(Path(spec_path).read_text())
    workload = [tuple(r) for r in spec["workload"]]
    for path in spec["data"]:
        err, elapsed = run_opendp(np.load(path), workload, spec["rho"], spec["rounds"])
        print(json.dumps({"err": err, "time": elapsed}), flush=True)


class OpenDPWorker:
    """OpenDP's AIM in another interpreter, one process for every seed of one ρ."""

    def __init__(
        self,
        python: str,
        tmp: Path,
        data: list[np.ndarray],
        workload: list[Any],
        rho: float,
        rounds: int | None,
    ) -> None:
        paths = []
        for k, d in enumerate(data):
            path = tmp / f"data_{rho}_{k}.npy"
            np.save(path, d)
            paths.append(str(path))
        spec = tmp / f"spec_{rho}.json"
        spec.write_text(json.dumps({"data": paths, "workload": workload, "rho": rho, "rounds": rounds}))
        self.proc = subprocess.Popen(
            [python, os.path.abspath(__file__), "--worker", str(spec)],
            stdout=subprocess.PIPE,
            text=True,
        )

    def next(self) -> tuple[float, float] | None:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            return None
        got = json.loads(line)
        return float(got["err"]), float(got["time"])


def opendp_available(python: str) -> bool:
    if not Path(python).exists():
        return False
    check = subprocess.run([python, "-c", "import mbi, opendp, polars"], capture_output=True)
    return check.returncode == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--way", type=int, default=2)
    parser.add_argument("--rho", type=float, nargs="+", default=[0.1])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=None, help="planned rounds T (default 16 × columns)")
    parser.add_argument("--opendp-rounds", type=int, default=None, help="OpenDP's T (default: --rounds)")
    parser.add_argument("--opendp-python", default=DEFAULT_OPENDP_PYTHON, help="interpreter with opendp[mbi]")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return
    workload = list(itertools.combinations(range(len(SIZES)), args.way))
    opendp_rounds = args.rounds if args.opendp_rounds is None else args.opendp_rounds
    rounds = "16 × columns" if args.rounds is None else args.rounds
    if opendp_rounds != args.rounds:
        rounds = f"{rounds} (OpenDP: {'16 × columns' if opendp_rounds is None else opendp_rounds})"
    print(
        f"{len(SIZES)} columns of {SIZES} categories, {args.rows} rows, workload: all {len(workload)} "
        f"{args.way}-way marginals, T = {rounds}; error = mean_r ‖M_r(D) − M_r(model)‖₁ / n"
    )
    has_opendp = opendp_available(args.opendp_python)
    if not has_opendp:
        print(f"(no opendp[mbi] at {args.opendp_python}: dpcompose only)")
    head = f"{'rho':>6} {'seed':>4}  {'dpcompose err':>13} {'time s':>7}  {'OpenDP err':>10} {'time s':>7}"
    print(head + "  ratio", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for rho in args.rho:
            data = [make_data(args.rows, seed) for seed in range(args.seeds)]
            # one library at a time (one core each in turn): dpcompose's seeds first, then OpenDP's
            ours_runs = [run_dpcompose(d, workload, rho, args.rounds) for d in data]
            theirs_proc = (
                OpenDPWorker(args.opendp_python, Path(tmp), data, workload, rho, opendp_rounds)
                if has_opendp
                else None
            )
            ours_all, theirs_all = [], []
            for seed in range(args.seeds):
                ours, t_ours = ours_runs[seed]
                ours_all.append(ours)
                theirs = theirs_proc.next() if theirs_proc is not None else None
                if theirs is None:
                    print(f"{rho:>6} {seed:>4}  {ours:>13.5f} {t_ours:>7.1f}  {'(none)':>10}", flush=True)
                    continue
                theirs_all.append(theirs[0])
                print(
                    f"{rho:>6} {seed:>4}  {ours:>13.5f} {t_ours:>7.1f}  {theirs[0]:>10.5f} "
                    f"{theirs[1]:>7.1f}  {ours / theirs[0]:.2f}",
                    flush=True,
                )
            if theirs_proc is not None:
                theirs_proc.proc.wait()
            if theirs_all:
                print(
                    f"{rho:>6} mean  {np.mean(ours_all):>13.5f} {'':>7}  {np.mean(theirs_all):>10.5f} "
                    f"{'':>7}  {np.mean(ours_all) / np.mean(theirs_all):.2f}",
                    flush=True,
                )


if __name__ == "__main__":
    sys.exit(main())
