"""``python -m dpcompose verify lp``: reproduce Section 6 of Vadhan–Wang (2021).

For each trial: draw the 10 parameters of a random 2-round, 1-bit interactive mechanism M uniformly from
[0, 1) (:func:`~dpcompose.analysis._lp.two_round_mechanism`), compute ε = PrivLoss(M, δ) exactly
(rounded up), and solve the linear program of :func:`~dpcompose.analysis._lp.lp_simulation`: is M an
interactive post-processing of RR_(ε, δ)? Prints progress (tqdm if installed, else plain lines on
stderr), a summary table, and, last, ``feasible: N/T``. Ctrl-C stops cleanly: queued work is cancelled,
the trials finished so far are summarised, and the exit status is 130.

Trial ``i`` draws its parameters from ``numpy.random.default_rng([seed, i])``, so the result does not
depend on ``--jobs``.

Examples:
    >>> main(["lp", "--trials", "3", "--delta", "0.01", "--seed", "0", "--no-progress"])  # doctest: +ELLIPSIS
    Section 6 reproduction (Vadhan–Wang 2021): ...
    feasible: 3/3
    0
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dpcompose._progress import progress
from dpcompose.accounting._display import format_up
from dpcompose.accounting._exact import float_up
from dpcompose.analysis._finite import privacy_loss
from dpcompose.analysis._lp import lp_simulation, two_round_mechanism

__all__ = ["TrialResult", "main", "run_trial"]


@dataclass(frozen=True)
class TrialResult:
    """One trial of the Section 6 experiment."""

    index: int
    parameters: tuple[float, ...]
    epsilon: float
    feasible: bool
    max_residual: float
    status: str


def run_trial(seed: int, index: int, delta: float) -> TrialResult:
    """Draw mechanism ``index`` for ``seed``, compute ε = PrivLoss(M, δ), and solve the LP.

    Examples:
        >>> r = run_trial(0, 0, 0.01)
        >>> r.feasible, r.epsilon > 0
        (True, True)
    """
    u = np.random.default_rng([seed, index]).random(10)
    params = tuple(float(x) for x in u)
    m = two_round_mechanism(params[:5], params[5:])
    eps = privacy_loss(m, delta)
    res = lp_simulation(m, eps, delta)
    return TrialResult(index, params, float_up(eps), res.feasible, res.max_residual, res.status)


def _run_chunk(args: tuple[int, Sequence[int], float]) -> list[TrialResult]:
    seed, indices, delta = args
    return [run_trial(seed, i, delta) for i in indices]


def trial_results(seed: int, trials: int, delta: float, jobs: int) -> Iterator[TrialResult]:
    """The results of trials ``0 … trials − 1`` in order, in ``jobs`` worker processes when ``jobs > 1``."""
    if jobs <= 1:
        for i in range(trials):
            yield run_trial(seed, i, delta)
        return
    chunk = max(1, min(200, trials // (jobs * 8) or 1))
    work = [(seed, range(s, min(s + chunk, trials)), delta) for s in range(0, trials, chunk)]
    pool = ProcessPoolExecutor(max_workers=jobs)
    try:
        for part in pool.map(_run_chunk, work):
            yield from part
    finally:
        # on Ctrl-C (or any early stop) queued chunks are cancelled rather than waited for
        pool.shutdown(wait=True, cancel_futures=True)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m dpcompose verify", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    lp = sub.add_parser(
        "lp", help="Section 6: is every random 2-round mechanism a post-processing of RR_(ε,δ)?"
    )
    lp.add_argument("--trials", type=int, default=10000, help="number of random mechanisms (default 10000)")
    lp.add_argument("--delta", type=float, default=0.01, help="δ in [0, 1) (default 0.01)")
    lp.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    lp.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    lp.add_argument("--no-progress", action="store_true", help="do not print progress")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run ``verify <command> [options]``; returns the exit status (0 when every LP is feasible).

    ``argv`` is the argument list after ``verify`` (a leading ``"verify"`` is accepted and skipped).
    Exit status: 0 all feasible, 1 some infeasible, 2 bad arguments, 130 interrupted (Ctrl-C).
    """
    args_in = list(sys.argv[1:] if argv is None else argv)
    if args_in[:1] == ["verify"]:
        args_in = args_in[1:]
    parser = _parser()
    try:
        ns = parser.parse_args(args_in)
    except SystemExit as exc:
        return int(exc.code) if isinstance(exc.code, int) else 2
    if ns.trials < 1:
        print(f"error: --trials={ns.trials} must be at least 1", file=sys.stderr)
        return 2
    if not 0 <= ns.delta < 1:
        print(f"error: --delta={ns.delta} must lie in [0, 1)", file=sys.stderr)
        return 2
    if ns.jobs < 1:
        print(f"error: --jobs={ns.jobs} must be at least 1", file=sys.stderr)
        return 2
    return _run_lp(ns.trials, ns.delta, ns.seed, ns.jobs, not ns.no_progress)


def _run_lp(trials: int, delta: float, seed: int, jobs: int, show: bool) -> int:
    out, err = sys.stdout, sys.stderr
    start = time.perf_counter()
    results: list[TrialResult] = []
    interrupted = False
    try:
        trial_iter = trial_results(seed, trials, delta, jobs)
        for r in progress(trial_iter, trials, "trials", enabled=show, stream=err):
            results.append(r)
    except KeyboardInterrupt:
        interrupted = True
        print(f"interrupted after {len(results)}/{trials} trials; summarising those", file=err, flush=True)
        if not results:
            return 130
    elapsed = time.perf_counter() - start
    done = len(results)
    feasible = [r for r in results if r.feasible]
    infeasible = [r for r in results if not r.feasible]
    eps = [r.epsilon for r in results]
    worst = max((r.max_residual for r in feasible), default=float("nan"))
    rows = [
        ("trials", f"{done}" + (f" of {trials} (interrupted)" if interrupted else "")),
        ("δ", format_up(delta)),
        ("seed", f"{seed}"),
        ("ε = PrivLoss(M, δ): min", format_up(min(eps))),
        ("ε: median", format_up(statistics.median(Fraction(e) for e in eps))),  # exact mean of the middle two
        ("ε: max", format_up(max(eps))),
        ("feasible", f"{len(feasible)}"),
        ("infeasible", f"{len(infeasible)}"),
        ("largest residual (feasible LPs)", f"{worst:.3g}"),
        ("time", f"{elapsed:.1f} s ({jobs} process{'es' if jobs > 1 else ''})"),
    ]
    print(
        "Section 6 reproduction (Vadhan–Wang 2021): random 2-round, 1-bit mechanisms M;"
        " is M a post-processing of RR_(ε, δ) at ε = PrivLoss(M, δ)?",
        file=out,
    )
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"  {k:<{width}}  {v}", file=out)
    for r in infeasible[:5]:
        shown = format_up(r.epsilon)
        print(f"  infeasible trial {r.index}: ε={shown} p={r.parameters} ({r.status})", file=out)
    print(f"feasible: {len(feasible)}/{done}", file=out)
    if interrupted:
        return 130
    return 0 if not infeasible else 1


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
