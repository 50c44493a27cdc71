"""MST (McKenna–Miklau–Sheldon 2021, "Winning the NIST Contest"): one-way marginals, a maximum spanning tree
of two-way marginals chosen privately, and a model fitted to both, under one zCDP privacy filter."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose._validation import check_positive_int
from dpcompose.algorithms._aim import (
    SLACK,
    check_synthesis_args,
    claimed_up_to,
    complete_record_codes,
    measure_marginal,
    select_marginal,
)
from dpcompose.algorithms._model import MarginalModel, NoisyMarginal, fit_model
from dpcompose.combinators import make_postprocess, make_privacy_filter
from dpcompose.combinators._filter import FilterQueryable
from dpcompose.core import ZCDP, CategoricalDomain, Domain, Measurement, Metric
from dpcompose.core._recipe import recorded
from dpcompose.errors import InvalidParameter

__all__ = ["make_mst", "run_mst"]

Clique = tuple[Hashable, ...]


def run_mst(
    q: FilterQueryable,
    coded: Domain,
    input_metric: Metric,
    sizes: list[int],
    rho: float,
    d_in: int,
    iterations: int,
) -> MarginalModel:
    """MST's three steps over the coded records (column ``j`` has the categories ``0 … sizes[j] - 1``), a
    third of ``rho`` each; the model it returns has the columns ``0 … d - 1``."""
    d = len(sizes)
    columns: list[Hashable] = list(range(d))
    domains: dict[Hashable, CategoricalDomain] = {
        j: CategoricalDomain(list(range(n))) for j, n in enumerate(sizes)
    }
    cats: dict[Hashable, Any] = {j: domains[j].categories for j in columns}
    third = rho / 3
    measured: list[NoisyMarginal] = []

    def measure(clique: Clique, scale: float) -> None:
        noisy = q(measure_marginal(coded, input_metric, clique, domains, scale))
        shape = tuple(sizes[columns.index(j)] for j in clique)
        measured.append(NoisyMarginal(clique, np.asarray(noisy, dtype=np.float64).reshape(shape), scale))

    # ρ at σ is unit/σ² (d_in and the metric are in the unit, read from the library's map)
    unit = max(float(measure_marginal(coded, input_metric, (j,), domains, 1.0).map(d_in)) for j in columns)
    one_way = math.sqrt(d * unit / third) * SLACK
    for j in columns:
        measure((j,), one_way)
    model = fit_model(MarginalModel.uniform(columns, cats, 1.0), measured, iterations=iterations)
    if d == 1:
        return model
    # Kruskal's algorithm, each edge chosen privately among those joining two components: the score of a pair
    # is how badly the one-way model answers it (McKenna et al. 2021 §3, Alg. 1 line 3)
    epsilon = math.sqrt(8 * third / (d - 1)) / SLACK  # each selection costs ε²/8 (bounded range)
    component = list(range(d))

    def root(j: int) -> int:
        while component[j] != j:
            j = component[j]
        return j

    tree: list[Clique] = []
    for _ in range(d - 1):
        candidates: dict[Clique, int] = {
            (i, j): 1 for i in range(d) for j in range(i + 1, d) if root(i) != root(j)
        }
        chosen = list(candidates)[
            q(select_marginal(coded, input_metric, candidates, domains, model, 0.0, epsilon, d_in))
        ]
        tree.append(chosen)
        a, b = (columns.index(c) for c in chosen)
        component[root(a)] = root(b)
    unit = max(float(measure_marginal(coded, input_metric, pair, domains, 1.0).map(d_in)) for pair in tree)
    two_way = math.sqrt((d - 1) * unit / third) * SLACK
    for pair in tree:
        measure(pair, two_way)
    return fit_model(model, measured, iterations=iterations)


@recorded
def make_mst(
    input_domain: Domain,
    input_metric: Metric,
    categories: Mapping[Any, Any],
    rho: float,
    *,
    d_in: int = 1,
    iterations: int = 100,
) -> Measurement[Any, MarginalModel, int, Fraction]:
    """MST: a synthetic-data model of categorical records from every one-way marginal and a spanning tree of
    two-way marginals, ρ-zCDP at ``d_in`` (McKenna–Miklau–Sheldon 2021, Alg. 1).

    A third of ρ measures every one-way marginal (discrete Gaussian); a third chooses ``d − 1`` pairs of
    columns one at a time, Kruskal-style, each by the exponential mechanism over the pairs joining two
    components of the tree so far, scored by ``‖M_ij(x) − M_ij(p̂)‖₁`` against the model of the one-way
    marginals (:func:`~dpcompose.transformations.make_marginal_errors`; ε-bounded range, so ε²/8-zCDP
    each, as in the paper); a third measures the chosen pairs. Every step is a library measurement answered
    by a zCDP filter holding ρ, which refuses any query past it; the model (:class:`MarginalModel`) is
    post-processing.

    A record whose value in a declared column is missing or undeclared is in the input domain (it never
    makes the call raise) and is left out of every marginal, as for :func:`make_aim`: the model describes
    the records whose every declared column holds a declared category.

    Args:
        input_domain: a ``VectorDomain`` of records (tuples, lists or dicts), as for ``make_marginals``.
        input_metric: ``SymmetricDistance()`` or ``ChangeOneDistance()``.
        categories: each column's declared categories (the model's columns, in order).
        rho: the zCDP budget.
        d_in: the neighbouring distance the budget is for.
        iterations: the most L-BFGS iterations of each model fit.

    Raises:
        InvalidParameter: malformed categories or parameters; a joint table over 2**22 cells.
        DomainMismatch: records that are not tuples, lists or dicts, or a metric that is not a dataset
            metric.

    Source: McKenna, Miklau, Sheldon 2021, "Winning the NIST Contest: A scalable and general approach to
    differentially private synthetic data", Alg. 1; privacy by the zCDP filter (Feldman–Zrnic 2021 Thm
    4.3), the discrete Gaussian (Canonne–Kamath–Steinke 2020 Thm 4) and the exponential mechanism,
    ε-bounded range, hence ε²/8-zCDP (Cesar–Rogers 2021).

    Examples:
        >>> import dpcompose as dp
        >>> rows = dp.VectorDomain(dp.AtomDomain(dict))
        >>> mst = dp.algorithms.make_mst(rows, dp.SymmetricDistance(), {"a": [0, 1], "b": [0, 1]}, rho=1.0)
        >>> mst.map(1)
        Fraction(1, 1)
    """
    columns, domains, rho_f = check_synthesis_args(input_domain, input_metric, categories, rho)
    check_positive_int(d_in, "d_in")
    check_positive_int(iterations, "iterations")
    d = len(columns)
    if math.sqrt(d / (2 * rho_f / 3)) * d_in > 2.0**38 or (
        d > 1 and 2 * d_in / math.sqrt(8 * rho_f / 3 / (d - 1)) > 2.0**48
    ):
        raise InvalidParameter(f"rho={rho!r}: the noise would be past the exact samplers' range: raise rho")
    codes = complete_record_codes(input_domain, input_metric, categories)
    budget = make_privacy_filter(
        codes.output_domain, codes.output_metric, ZCDP(), d_in=codes.map(d_in), d_out=rho, rule="zcdp"
    )
    sizes = [len(domains[c].categories) for c in columns]
    user_cats = {c: domains[c].categories for c in columns}

    def mst(q: FilterQueryable) -> MarginalModel:
        fitted = run_mst(q, codes.output_domain, codes.output_metric, sizes, rho_f, d_in, iterations)
        return fitted.named(columns, user_cats)

    answered: Measurement[Any, MarginalModel, int, Fraction] = make_postprocess(budget, mst)
    return claimed_up_to(codes >> answered, d_in, "make_mst")
