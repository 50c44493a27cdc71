"""MWEM from checked parts (issue 36): the budget is the zCDP filter's and every planned run fits it, every
step is a library measurement (``dp.explain`` shows no ``[UNVERIFIED]``), the histogram answers the
workload far better than the uniform start, and bad parameters are refused before anything runs."""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import dpcompose as dp
from dpcompose.errors import InvalidParameter

CELLS = list(itertools.product(range(4), range(3), range(2)))
DOMAIN = dp.VectorDomain(dp.CategoricalDomain(CELLS))
SYM = dp.SymmetricDistance()
# every one-way marginal and the (0, 1) two-way marginal: 4 + 3 + 2 + 12 queries
A = np.array(
    [[c[a] == v for c in CELLS] for a, n in enumerate((4, 3, 2)) for v in range(n)]
    + [[c[0] == i and c[1] == j for c in CELLS] for i in range(4) for j in range(3)],
    dtype=int,
)


def data(n: int, seed: int) -> list[tuple[int, int, int]]:
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(len(CELLS), 0.5))
    return [CELLS[i] for i in rng.choice(len(CELLS), n, p=p)]


def max_error(est: np.ndarray, records: list[Any]) -> float:
    h = np.bincount([CELLS.index(c) for c in records], minlength=len(CELLS))
    return float(np.abs(A @ est - A @ h).max() / len(records))


def test_the_map_is_the_filters_budget_and_explain_is_all_verified() -> None:
    mwem = dp.algorithms.make_mwem(DOMAIN, SYM, A, rho=0.25, rounds=4, d_in=2)
    assert mwem.map(2) == Fraction(1, 4) and mwem.map(1) == Fraction(1, 4)
    shown = str(dp.explain(mwem, 2))
    assert "[UNVERIFIED]" not in shown and "filter" in shown


def test_the_histogram_beats_the_uniform_start_by_far() -> None:
    records = data(4000, 0)
    uniform = max_error(np.full(len(CELLS), len(records) / len(CELLS)), records)
    for size in (len(records), None):
        est = dp.algorithms.make_mwem(DOMAIN, SYM, A, rho=1.0, rounds=12, size=size)(records)
        assert est.shape == (len(CELLS),) and est.min() >= 0
        assert max_error(est, records) < 0.4 * uniform


@pytest.mark.parametrize(
    ("metric", "d_in", "size"),
    [(SYM, 1, None), (SYM, 3, 50), (dp.ChangeOneDistance(), 1, None), (dp.ChangeOneDistance(), 2, 50)],
)
def test_every_planned_run_fits_its_budget(metric: Any, d_in: int, size: int | None) -> None:
    """The filter refuses (raises BudgetExceeded) any query past ρ: a run that plans right never meets it,
    at any ρ, number of rounds, split, d_in, metric, and with or without a public size."""
    records = data(50, 1)
    for rho, rounds, split in ((0.01, 3, 0.5), (2.0, 7, 0.1), (0.3, 1, 0.9)):
        mwem = dp.algorithms.make_mwem(
            DOMAIN, metric, A, rho=rho, rounds=rounds, size=size, d_in=d_in, select_split=split, passes=2
        )
        assert mwem.map(d_in) == Fraction(str(rho))  # the budget as the decimal it prints as
        est = mwem(records)
        assert np.isfinite(est).all()


def test_predicate_queries_are_the_matrix() -> None:
    predicates = [lambda c, v=v: c[0] == v for v in range(4)]
    est = dp.algorithms.make_mwem(DOMAIN, SYM, predicates, rho=1.0, rounds=4, size=2000)(data(2000, 2))
    assert est.shape == (len(CELLS),) and abs(float(est.sum()) - 2000) < 1e-6


@pytest.mark.parametrize(
    ("kwargs", "text"),
    [
        ({"rho": -1.0}, "rho"),
        ({"rounds": 0}, "rounds"),
        ({"select_split": 1.0}, "select_split"),
        ({"size": 0}, "size"),
        ({"d_in": 0}, "d_in"),
        ({"passes": 0}, "passes"),
        ({"rho": 1e-30}, "rho"),
    ],
)
def test_bad_parameters_are_refused_before_anything_runs(kwargs: dict[str, Any], text: str) -> None:
    args: dict[str, Any] = {"rho": 1.0, **kwargs}
    with pytest.raises(InvalidParameter, match=text):
        dp.algorithms.make_mwem(DOMAIN, SYM, A, **args)


def test_a_domain_without_cells_is_refused() -> None:
    with pytest.raises(dp.DPError):
        dp.algorithms.make_mwem(dp.VectorDomain(dp.AtomDomain(int)), SYM, [lambda x: x > 0], rho=1.0)
