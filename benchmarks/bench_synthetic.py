"""AIM synthetic data: dpcompose's ``dp.algorithms.make_aim`` against OpenDP 0.16's ``dp.mbi.AIM``.

Same data (a categorical table drawn from a random tree-shaped Bayesian network: 10 columns of 2–5
categories, 10⁵ rows), same ρ, same workload (every 2-way marginal, or every 3-way with ``--way 3``), three
seeds. The figure is the average L1 workload error ``(1/|W|) Σ_r ‖M_r(D) − M_r(model)‖₁ / n`` of each
library's fitted model, and the wall time. Run::

    PYTHONPATH=src /work/venv-opendp/bin/python benchmarks/bench_synthetic.py [--rows N] [--way K] [--rho R]

(OpenDP needs ``pip install "opendp[mbi]"``; without it only dpcompose's side is printed.)
"""

from __future__ import annotations

import argparse
import itertools
import time
from typing import Any

import numpy as np

import dpcompose as dp

SIZES = [2, 3, 4, 5, 2, 3, 4, 2, 3, 5]
COLUMNS = [f"c{i}" for i in range(len(SIZES))]


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


def run_dpcompose(data: np.ndarray, workload: list[tuple[int, ...]], rho: float) -> tuple[float, float]:
    rows = dp.VectorDomain(dp.AtomDomain(dict))
    cats = {c: list(range(s)) for c, s in zip(COLUMNS, SIZES, strict=True)}
    records = [dict(zip(COLUMNS, r, strict=True)) for r in data.tolist()]
    start = time.perf_counter()
    aim = dp.algorithms.make_aim(
        rows, dp.SymmetricDistance(), cats, rho, workload=[tuple(COLUMNS[i] for i in r) for r in workload]
    )
    model = aim(records)
    elapsed = time.perf_counter() - start
    err = workload_error(data, workload, lambda r: model.project(tuple(COLUMNS[i] for i in r)))
    return err, elapsed


def run_opendp(data: np.ndarray, workload: list[tuple[int, ...]], rho: float) -> tuple[float, float] | None:
    try:
        import mbi  # noqa: F401
        import opendp.prelude as odp
        import polars as pl
    except ImportError:
        return None
    odp.enable_features("contrib")
    frame = pl.LazyFrame({c: data[:, i] for i, c in enumerate(COLUMNS)})
    start = time.perf_counter()
    context = odp.Context.compositor(
        data=frame,
        privacy_unit=odp.unit_of(contributions=1),
        privacy_loss=odp.loss_of(rho=rho),
        split_evenly_over=1,
    )
    table = (
        context.query()
        .select(*COLUMNS)
        .contingency_table(
            keys={c: list(range(s)) for c, s in zip(COLUMNS, SIZES, strict=True)},
            algorithm=odp.mbi.AIM(queries=[odp.mbi.Count(tuple(COLUMNS[i] for i in r)) for r in workload]),
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--way", type=int, default=2)
    parser.add_argument("--rho", type=float, nargs="+", default=[0.1])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    workload = list(itertools.combinations(range(len(SIZES)), args.way))
    print(
        f"{len(SIZES)} columns of {SIZES} categories, {args.rows} rows, workload: all {len(workload)} "
        f"{args.way}-way marginals; error = mean_r ‖M_r(D) − M_r(model)‖₁ / n"
    )
    head = f"{'rho':>6} {'seed':>4}  {'dpcompose err':>13} {'time s':>7}  {'OpenDP err':>10} {'time s':>7}"
    print(head + "  ratio")
    for rho in args.rho:
        ours_all, theirs_all = [], []
        for seed in range(args.seeds):
            data = make_data(args.rows, seed)
            ours, t_ours = run_dpcompose(data, workload, rho)
            theirs = run_opendp(data, workload, rho)
            ours_all.append(ours)
            if theirs is None:
                print(f"{rho:>6} {seed:>4}  {ours:>13.4f} {t_ours:>7.1f}  {'(no mbi)':>10}")
                continue
            theirs_all.append(theirs[0])
            print(
                f"{rho:>6} {seed:>4}  {ours:>13.4f} {t_ours:>7.1f}  {theirs[0]:>10.4f} {theirs[1]:>7.1f}  "
                f"{ours / theirs[0]:.2f}"
            )
        if theirs_all:
            print(
                f"{rho:>6} mean  {np.mean(ours_all):>13.4f} {'':>7}  {np.mean(theirs_all):>10.4f} {'':>7}  "
                f"{np.mean(ours_all) / np.mean(theirs_all):.2f}"
            )


if __name__ == "__main__":
    main()
