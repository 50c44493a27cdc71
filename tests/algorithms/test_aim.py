"""AIM from checked parts: the budget is the zCDP filter's and is never exceeded, every step is a library
measurement (``dp.explain`` shows no ``[UNVERIFIED]``), the error falls as ρ grows, the model fit recovers
consistent marginals, and bad parameters are refused before anything runs."""

from __future__ import annotations

import itertools
from collections.abc import Hashable
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import dpcompose as dp
from dpcompose.algorithms import MarginalModel, NoisyMarginal, fit_model
from dpcompose.algorithms._aim import candidates_of, measure_marginal, run_aim, select_marginal
from dpcompose.algorithms._mst import run_mst
from dpcompose.errors import InvalidParameter

ROWS = dp.VectorDomain(dp.AtomDomain(dict))
SYM = dp.SymmetricDistance()
CATS: dict[Hashable, list[Any]] = {"a": [0, 1], "b": ["x", "y", "z"], "c": [False, True]}


def records(n: int, seed: int) -> list[dict[str, Any]]:
    """a → b → c, strongly dependent: the 2-way marginals carry what the 1-way ones miss."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    b = (a + rng.integers(0, 2, n)) % 3
    c = (b == 2) ^ (rng.random(n) < 0.1)
    return [{"a": int(x), "b": CATS["b"][int(y)], "c": bool(z)} for x, y, z in zip(a, b, c, strict=True)]


def workload_error(model: MarginalModel, data: list[dict[str, Any]]) -> float:
    marg = dp.t.make_marginals(ROWS, SYM, [("a", "b"), ("b", "c"), ("a", "c")], CATS)
    tables = dp.t.marginal_tables(marg(data), [("a", "b"), ("b", "c"), ("a", "c")], CATS)
    return float(np.mean([np.abs(model.project(r) - t).sum() / len(data) for r, t in tables.items()]))


def test_the_map_is_the_filters_budget_and_explain_is_all_verified() -> None:
    aim = dp.algorithms.make_aim(ROWS, SYM, CATS, rho=0.25, d_in=2)
    assert aim.map(2) == Fraction(1, 4) and aim.map(1) == Fraction(1, 4)
    shown = str(dp.explain(aim, 2))
    assert "[UNVERIFIED]" not in shown and "filter" in shown and "category_codes" in shown
    # the two kinds of query the loop submits to the filter are library measurements too
    codes = dp.t.make_category_codes(ROWS, SYM, CATS)
    domains: dict[Hashable, dp.CategoricalDomain] = {
        j: dp.CategoricalDomain(list(range(n))) for j, n in enumerate([2, 3, 2])
    }
    coded = codes.output_domain
    step = measure_marginal(coded, SYM, (0, 1), domains, sigma=3.0)
    model = MarginalModel.uniform([0, 1, 2], {j: d.categories for j, d in domains.items()}, 100.0)
    pick = select_marginal(
        coded, SYM, candidates_of([(0, 1), (1, 2)], [0, 1, 2]), domains, model, 3.0, 0.5, 1
    )
    for m in (step, pick):
        assert "[UNVERIFIED]" not in str(dp.explain(m, 1))
    assert step.map(1) == Fraction(1, 18)  # ρ = 1/(2σ²), σ = 3
    # the exponential mechanism is ε-bounded range: (ε = 0.5)²/8, the scale widened by SLACK (not ε²/2)
    assert Fraction(1, 32) * (1 - Fraction(1, 2**20)) <= pick.map(1) <= Fraction(1, 32)
    assert "exponential_mechanism" in str(dp.explain(pick, 1))


def test_the_budget_is_spent_and_never_exceeded() -> None:
    """The loop spends (almost) all of ρ and never more: the filter's exact sums."""
    data = records(500, 0)
    codes = dp.t.make_category_codes(ROWS, SYM, CATS)
    budget = dp.make_privacy_filter(codes.output_domain, SYM, dp.ZCDP(), d_in=1, d_out=0.5, rule="zcdp")
    q = budget(codes(data))
    candidates = candidates_of([(0, 1), (1, 2)], [0, 1, 2])
    model = run_aim(q, codes.output_domain, SYM, [2, 3, 2], 0.5, candidates, 1, 6, 0.9, 30)
    spent = q.spent()["rho"].exact
    assert Fraction(49, 100) <= spent <= Fraction(1, 2)
    assert len(model.measurements) >= 4 and model.total > 0


def test_the_filter_refuses_a_loop_that_plans_past_its_budget() -> None:
    """A loop told ρ = 1 over a filter holding ρ = 1/100 is stopped by the filter: the query that would
    pass it raises BudgetExceeded, runs nothing, and the spend stays within the filter's budget."""
    data = records(200, 1)
    codes = dp.t.make_category_codes(ROWS, SYM, CATS)
    budget = dp.make_privacy_filter(codes.output_domain, SYM, dp.ZCDP(), d_in=1, d_out=0.01, rule="zcdp")
    q = budget(codes(data))
    candidates = candidates_of([(0, 1)], [0, 1, 2])
    with pytest.raises(dp.BudgetExceeded):
        run_aim(q, codes.output_domain, SYM, [2, 3, 2], 1.0, candidates, 1, 2, 0.9, 10)
    assert q.spent()["rho"].exact <= Fraction(1, 100)


def mean_errors(rhos: tuple[float, ...], seeds: range, rounds: int) -> dict[float, float]:
    errors = {}
    for rho in rhos:
        errs = []
        for seed in seeds:
            data = records(400, seed)
            aim = dp.algorithms.make_aim(ROWS, SYM, CATS, rho=rho, rounds=rounds, iterations=30)
            errs.append(workload_error(aim(data), data))
        errors[rho] = float(np.mean(errs))
    return errors


def test_the_error_falls_as_rho_grows() -> None:
    """On a fixed set of data seeds, the mean workload error at ρ = 2 is below that at ρ = 0.005."""
    errors = mean_errors((0.005, 2.0), range(2), rounds=12)
    assert errors[2.0] < errors[0.005]
    assert errors[2.0] < 0.05


@pytest.mark.slow
def test_the_error_falls_as_rho_grows_thoroughly() -> None:
    errors = mean_errors((0.001, 0.01, 0.1, 1.0), range(5), rounds=48)
    assert errors[1.0] < errors[0.1] < errors[0.01] < errors[0.001]


def test_fit_model_recovers_consistent_marginals() -> None:
    """Fitted to the exact 1- and 2-way marginals of a chain a → b → c (σ small), the model reproduces them
    and the synthetic records have the model's columns and categories."""
    data = records(1000, 2)
    cols = [("a",), ("b",), ("c",), ("a", "b"), ("b", "c")]
    marg = dp.t.make_marginals(ROWS, SYM, cols, CATS)
    tables = dp.t.marginal_tables(marg(data), cols, CATS)
    measured = [NoisyMarginal(r, t.astype(float), 1.0) for r, t in tables.items()]
    start = MarginalModel.uniform(list(CATS), CATS, 1.0)
    model = fit_model(start, measured, iterations=100, tolerance=1e-14)
    assert model.total == pytest.approx(1000, rel=1e-9)
    for r, t in tables.items():
        assert np.abs(model.project(r) - t).max() < 0.5
    synthetic = model.synthesize(50, rng=np.random.default_rng(0))
    assert len(synthetic) == 50
    assert all(set(row) == set(CATS) and all(row[k] in CATS[k] for k in CATS) for row in synthetic)
    assert model.project(("c", "a")).shape == (2, 2)


def test_candidates_are_the_workloads_downward_closure_weighted_by_overlap() -> None:
    cands = candidates_of([("a", "b"), ("b", "c")], ["a", "b", "c"])
    assert cands == {("a",): 1, ("b",): 2, ("c",): 1, ("a", "b"): 3, ("b", "c"): 3}


@pytest.mark.parametrize(
    ("kwargs", "text"),
    [
        ({"categories": []}, "categories"),
        ({"rho": 0}, "rho"),
        ({"rho": float("nan")}, "rho"),
        ({"workload": [("a", "q")]}, "'q'"),
        ({"workload": [("a", "a")]}, "twice"),
        ({"workload": "ab"}, "workload"),
        ({"measure_split": 1.0}, "measure_split"),
        ({"rounds": 0}, "rounds"),
        ({"d_in": -1}, "d_in"),
        ({"iterations": 0}, "iterations"),
        ({"rho": 1e-30}, "rho"),
        ({"categories": {f"c{i}": list(range(10)) for i in range(7)}}, "2\\*\\*22"),
    ],
)
def test_bad_parameters_are_refused_before_anything_runs(kwargs: dict[str, Any], text: str) -> None:
    args: dict[str, Any] = {"input_domain": ROWS, "input_metric": SYM, "categories": CATS, "rho": 0.5}
    args.update(kwargs)
    with pytest.raises(InvalidParameter, match=text):
        dp.algorithms.make_aim(**args)


def test_records_that_are_not_rows_are_refused() -> None:
    with pytest.raises(dp.DomainMismatch):
        dp.algorithms.make_aim(dp.VectorDomain(dp.AtomDomain(int)), SYM, CATS, rho=0.5)


def test_every_column_pair_is_the_default_workload() -> None:
    aim = dp.algorithms.make_aim(ROWS, SYM, CATS, rho=0.5)
    assert aim.map(1) == Fraction(1, 2)
    pairs = list(itertools.combinations(CATS, 2))
    assert set(candidates_of(pairs, list(CATS))) >= {("a", "b"), ("a", "c"), ("b", "c")}


def test_aim_round_trips_through_json() -> None:
    aim = dp.algorithms.make_aim(ROWS, SYM, CATS, rho=0.5, workload=[("a", "b")], rounds=4)
    back = dp.from_json(dp.to_json(aim))
    assert back.map(1) == Fraction(1, 2)
    assert "[UNVERIFIED]" not in str(dp.explain(back, 1))


def test_mst_spends_a_verified_budget_on_a_spanning_tree() -> None:
    """MST: map ρ, nothing unverified, d one-way marginals then d − 1 pairs forming a spanning tree, the
    budget spent within ρ, and the error at ρ = 2 small."""
    mst = dp.algorithms.make_mst(ROWS, SYM, CATS, rho=2.0)
    assert mst.map(1) == 2
    assert "[UNVERIFIED]" not in str(dp.explain(mst, 1))
    data = records(400, 3)
    model = mst(data)
    cliques = [m.clique for m in model.measurements]
    assert cliques[:3] == [("a",), ("b",), ("c",)]
    pairs = cliques[3:]
    assert len(pairs) == 2 and len({frozenset(p) for p in pairs}) == 2
    assert set().union(*pairs) == {"a", "b", "c"}  # two distinct pairs over three columns: a tree
    assert workload_error(model, data) < 0.05
    codes = dp.t.make_category_codes(ROWS, SYM, CATS)
    budget = dp.make_privacy_filter(codes.output_domain, SYM, dp.ZCDP(), d_in=1, d_out=0.3, rule="zcdp")
    q = budget(codes(data))
    run_mst(q, codes.output_domain, SYM, [2, 3, 2], 0.3, 1, 20)
    assert Fraction(299, 1000) <= q.spent()["rho"].exact <= Fraction(3, 10)
    with pytest.raises(InvalidParameter, match="rho"):
        dp.algorithms.make_mst(ROWS, SYM, CATS, rho=1e-30)


@pytest.mark.parametrize("metric", [dp.SymmetricDistance(), dp.ChangeOneDistance()])
@pytest.mark.parametrize("d_in", [1, 3])
def test_aim_and_mst_run_within_budget_at_any_d_in_and_metric(d_in: int, metric: Any) -> None:
    """The noise is planned from the library's own map at d_in under the metric (the unit cost of a table),
    so a run spends at most ρ and is never refused part way (d_in = 3 and change-one were refused)."""
    data = records(200, 0)
    for build in (
        lambda: dp.algorithms.make_aim(ROWS, metric, CATS, rho=1.0, d_in=d_in, rounds=len(CATS)),
        lambda: dp.algorithms.make_mst(ROWS, metric, CATS, rho=1.0, d_in=d_in),
    ):
        m = build()
        assert m.map(d_in) <= 1
        m(data)  # raises BudgetExceeded if a step was planned past the budget


def test_records_with_missing_or_undeclared_values_are_left_out_of_every_marginal() -> None:
    """Such records are in the input domain (any dict), so the call runs; each is left out of every
    marginal, not only those over its offending column, so the model's total is the number of records
    with declared values everywhere (50 here), not a compromise between marginals of 50 and 110 records."""
    cats = {"a": ["x", "y"], "b": [0, 1]}
    good = [{"a": "x", "b": 0}] * 25 + [{"a": "y", "b": 1}] * 25
    rows = good + [{"a": "z", "b": 0}] * 50 + [{"b": 1}] * 10
    for make in (
        lambda: dp.algorithms.make_aim(ROWS, SYM, cats, rho=200.0, rounds=4),
        lambda: dp.algorithms.make_mst(ROWS, SYM, cats, rho=200.0),
    ):
        model = make()(rows)
        assert abs(float(model.project(("a",)).sum()) - 50) < 2
        assert abs(float(model.project(("b",)).sum()) - 50) < 2


def test_a_map_past_the_built_d_in_names_the_constructor_and_argument() -> None:
    """The filter's refusal said "build it with the larger d_in" without naming where."""
    aim = dp.algorithms.make_aim(ROWS, SYM, CATS, rho=0.5, rounds=4)
    with pytest.raises(InvalidParameter, match=r"make_aim\(\.\.\., d_in=2\)"):
        aim.map(2)
    assert aim.map(1) == Fraction(1, 2) and aim.map(0) == Fraction(1, 2)
    mst = dp.algorithms.make_mst(ROWS, SYM, CATS, rho=0.5, d_in=2)
    with pytest.raises(InvalidParameter, match=r"make_mst\(\.\.\., d_in=3\)"):
        mst.map(3)
    assert mst.map(2) == Fraction(1, 2)
    cells = dp.VectorDomain(dp.CategoricalDomain([0, 1]))
    mwem = dp.algorithms.make_mwem(cells, SYM, [[1, 0], [0, 1]], rho=0.5, rounds=2)
    with pytest.raises(InvalidParameter, match=r"make_mwem\(\.\.\., d_in=2\)"):
        mwem.map(2)
