"""AIM (McKenna–Mullins–Sheldon–Miklau 2022): adaptive, workload-aware selection of marginals to measure,
built from the library's checked parts under one zCDP privacy filter.

Every step that reads the data is a library measurement submitted to
:func:`~dpcompose.make_privacy_filter` (``ZCDP()``, rule ``"zcdp"``): a one-way or selected marginal
(:func:`~dpcompose.transformations.make_marginals`) with exact discrete Gaussian noise
(:func:`~dpcompose.measurements.make_gaussian`), and the selection of the worst-answered candidate
(:func:`~dpcompose.transformations.make_marginal_errors` then the exponential mechanism
:func:`~dpcompose.measurements.make_exponential_mechanism` with its bounded-range zCDP map, ε²/8). The
filter charges each before it runs and refuses any that would
pass ρ, so the whole is ρ-zCDP by the filter's theorem (Feldman–Zrnic 2021 Thm 4.3); the control flow,
the model fit (:func:`~dpcompose.algorithms.fit_model`) and the returned model read only released
answers and public parameters (post-processing, Dwork–Roth 2014 Prop. 2.1).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose._validation import check_finite_positive, check_positive_int, short_repr
from dpcompose.algorithms._model import MarginalModel, NoisyMarginal, fit_model
from dpcompose.combinators import make_postprocess, make_privacy_filter
from dpcompose.combinators._filter import FilterQueryable
from dpcompose.core import (
    ZCDP,
    CategoricalDomain,
    Domain,
    L2Distance,
    Measurement,
    Metric,
    Transformation,
)
from dpcompose.core._node import Node
from dpcompose.core._recipe import recorded
from dpcompose.errors import InvalidParameter
from dpcompose.measurements import make_exponential_mechanism, make_gaussian
from dpcompose.transformations import make_category_codes, make_marginal_errors, make_marginals

__all__ = [
    "SLACK",
    "candidates_of",
    "check_synthesis_args",
    "claimed_up_to",
    "complete_record_codes",
    "make_aim",
    "measure_marginal",
    "run_aim",
    "select_marginal",
]

Clique = tuple[Hashable, ...]

_MAX_GAUSSIAN_SCALE = 2.0**40
"""The largest σ the exact discrete Gaussian takes for integer data."""

_MAX_SELECT_SCALE = 2.0**50
"""The largest scale the exponential mechanism takes for integer scores."""

SLACK = 1 + 2.0**-30
"""Scales are widened by this factor so that the exact cost of a float scale stays within its plan."""


def check_synthesis_args(
    input_domain: Domain, input_metric: Metric, categories: object, rho: object
) -> tuple[list[Hashable], dict[Hashable, CategoricalDomain], float]:
    """The columns (in order), their categorical domains and ρ as a float, checked; the records' domain and
    metric are checked by building the one-way marginals (which raises what :func:`make_marginals` raises).
    """
    if not isinstance(categories, Mapping) or not categories:
        raise InvalidParameter(
            f"categories={short_repr(categories)} must be a non-empty dict from each column key to its "
            "declared categories, e.g. {'sex': ['f', 'm'], 'smoker': [False, True]}"
        )
    check_finite_positive(rho, "rho")
    columns = list(categories)
    make_marginals(input_domain, input_metric, [(c,) for c in columns], categories)
    domains = {
        c: (v if isinstance(v, CategoricalDomain) else CategoricalDomain(v)) for c, v in categories.items()
    }
    MarginalModel.uniform(columns, {c: d.categories for c, d in domains.items()}, 1.0)  # the size check
    assert isinstance(rho, (int, float, Fraction))
    return columns, domains, float(rho)


def claimed_up_to(
    m: Measurement[Any, Any, int, Fraction], d_in: int, constructor: str
) -> Measurement[Any, Any, int, Fraction]:
    """``m`` with a privacy map that refuses a distance above the ``d_in`` it was built for naming the
    constructor and its argument (``make_aim(..., d_in=2)``); at or below it, ``m``'s own map (the zCDP
    filter's, which claims its budget up to ``d_in`` only: Feldman–Zrnic 2021 Thm 4.3 at that ``d_in``)."""
    inner = m.privacy_map

    def privacy_map(d: int) -> Fraction:
        if d > d_in:
            raise InvalidParameter(
                f"this {constructor} was built for d_in={d_in} and makes no claim at d_in={d}: build it with "
                f"dp.algorithms.{constructor}(..., d_in={d})"
            )
        return inner(d)

    return Measurement(
        m.input_domain,
        m.input_metric,
        m.output_measure,
        m.function,
        privacy_map,
        interactive=m.interactive,
        node=m.node,
        loss=m.loss,
        checked_function=m.checked_function,
    )


def complete_record_codes(
    input_domain: Domain, input_metric: Metric, categories: Mapping[Any, Any]
) -> Transformation[Any, Any, int, int]:
    """The records' category codes (:func:`~dpcompose.transformations.make_category_codes`), with every code
    of a record set to -1 when any of its declared columns is missing or holds an undeclared value, so that
    such a record adds to no cell of any marginal (not only of those over the offending column: the
    marginals then all count the same records, and the model's total is theirs).

    Stability: still a row-by-row map (a record's row depends on that record alone, the same for equal
    records): ``d_in → d_in`` under ``SymmetricDistance`` and ``ChangeOneDistance`` (McSherry 2009, PINQ §4;
    Dwork–Roth 2014 §3.3). A record coded -1 throughout is one that adds to no cell, which the marginals'
    sensitivity already covers (:func:`~dpcompose.transformations.make_marginals`).
    """
    codes = make_category_codes(input_domain, input_metric, categories)
    coder = codes.function

    def run(data: Any) -> Any:
        coded = coder(data)
        coded[(coded < 0).any(axis=1)] = -1
        return coded

    return Transformation(
        codes.input_domain,
        codes.output_domain,
        codes.input_metric,
        codes.output_metric,
        run,
        lambda d_in: d_in,
        node=Node(
            "category_codes",
            params=(*codes.node.params, ("incomplete records", "in no cell")),
            source="Dwork–Roth 2014 §3.3 (row map)",
        ),
    )


def _check_workload(workload: object, columns: list[Hashable]) -> list[Clique]:
    if workload is None:
        return [tuple(pair) for pair in itertools.combinations(columns, 2)] or [tuple(columns)]
    if isinstance(workload, (str, bytes, Mapping)) or not isinstance(workload, Sequence) or not workload:
        raise InvalidParameter(
            f"workload={short_repr(workload)} must be a non-empty list of tuples of column keys, e.g. "
            "[('age', 'sex'), ('sex', 'smoker')]"
        )
    out: list[Clique] = []
    for i, clique in enumerate(workload):
        if not isinstance(clique, (tuple, list)) or not clique:
            raise InvalidParameter(
                f"workload[{i}]={short_repr(clique)} must be a non-empty tuple of column keys"
            )
        for key in clique:
            if key not in columns:
                raise InvalidParameter(
                    f"workload[{i}] names {key!r}, which is not a key of categories: declare its categories"
                )
        if len(set(clique)) != len(clique):
            raise InvalidParameter(f"workload[{i}]={short_repr(clique)} names a column twice")
        out.append(tuple(sorted(clique, key=columns.index)))
    return list(dict.fromkeys(out))


def candidates_of(workload: Sequence[Clique], columns: list[Hashable]) -> dict[Clique, int]:
    """AIM's candidates: every non-empty subset of a workload clique, weighted ``Σ_{s∈W} |r ∩ s|``
    (McKenna et al. 2022 §4: the downward closure, each clique weighted by its overlap with the workload)."""
    closure: set[Clique] = set()
    for clique in workload:
        for k in range(1, len(clique) + 1):
            closure.update(itertools.combinations(clique, k))
    ordered = sorted(closure, key=lambda r: (len(r), [columns.index(c) for c in r]))
    return {r: sum(len(set(r) & set(s)) for s in workload) for r in ordered}


def measure_marginal(
    input_domain: Domain,
    input_metric: Metric,
    clique: Clique,
    domains: Mapping[Hashable, CategoricalDomain],
    sigma: float,
) -> Measurement[Any, Any, Any, Any]:
    """One marginal with exact discrete Gaussian noise of scale ``sigma`` (ρ = Δ₂²/(2σ²) per unit of
    ``d_in``, Canonne–Kamath–Steinke 2020 Thm 4 and Thm 14, through :func:`make_gaussian`)."""
    cats = {c: domains[c] for c in clique}
    marg = make_marginals(input_domain, input_metric, [clique], cats, metric=L2Distance())
    return marg >> make_gaussian(marg.output_domain, marg.output_metric, scale=sigma)


def select_marginal(
    input_domain: Domain,
    input_metric: Metric,
    candidates: Mapping[Clique, int],
    domains: Mapping[Hashable, CategoricalDomain],
    model: MarginalModel,
    sigma: float,
    epsilon: float,
    d_in: int,
) -> Measurement[Any, Any, Any, Any]:
    """AIM's selection step as one zCDP measurement: the exponential mechanism over the integer scores
    ``wᵣ·‖Mᵣ(x) − round(Mᵣ(p̂))‖₁ − round(wᵣ·√(2/π)·σ·nᵣ)`` (``nᵣ`` cells) with ``scale = 2Δ/ε`` (Δ the
    scores' L∞ sensitivity at ``d_in``), which is ε-bounded range and so (ε²/8)-zCDP (Cesar–Rogers 2021;
    :func:`make_exponential_mechanism`). The released value is the candidate's index."""
    cliques = list(candidates)
    bound = float(
        2**52
    )  # a cell of the model within ±2**52 (NaN as 0): the reference make_marginal_errors takes
    reference = [
        np.rint(np.clip(np.nan_to_num(model.project(r)), -bound, bound)).astype(np.int64) for r in cliques
    ]
    offsets = [
        round(w * math.sqrt(2 / math.pi) * sigma * math.prod(len(domains[c].categories) for c in r))
        for r, w in candidates.items()
    ]
    scores = make_marginal_errors(
        input_domain,
        input_metric,
        cliques,
        {c: domains[c] for r in cliques for c in r},
        reference,
        weights=list(candidates.values()),
        offsets=[max(-(1 << 62), min(o, 1 << 62)) for o in offsets],
    )
    scale = 2 * float(scores.map(d_in)) / epsilon * SLACK
    pick: Measurement[Any, Any, Any, Any] = make_exponential_mechanism(
        scores.output_domain, scores.output_metric, scale=scale, output_measure=ZCDP()
    )
    return scores >> pick


def _remaining(q: FilterQueryable) -> Fraction:
    return Fraction(q.remaining()["rho"].exact)


def run_aim(
    q: FilterQueryable,
    coded: Domain,
    input_metric: Metric,
    sizes: list[int],
    rho: float,
    candidates: Mapping[Clique, int],
    d_in: int,
    rounds: int,
    measure_split: float,
    iterations: int,
) -> MarginalModel:
    """AIM's loop over the coded records (column ``j`` has the categories ``0 … sizes[j] - 1``); the model
    it returns has the columns ``0 … d - 1``."""
    columns: list[Hashable] = list(range(len(sizes)))
    domains: dict[Hashable, CategoricalDomain] = {
        j: CategoricalDomain(list(range(n))) for j, n in enumerate(sizes)
    }
    cats: dict[Hashable, Sequence[Any]] = {j: domains[j].categories for j in columns}
    size_of: dict[Hashable, int] = dict(enumerate(sizes))
    measured: list[NoisyMarginal] = []
    # the cost of measuring a table depends only on whether it has one cell or more; ρ at σ is unit/σ²
    # (a Gaussian's ρ = (d_in·Δ₂)²/(2σ²): d_in and the metric are in the unit, read from the library's map)
    tables = [*candidates, *((j,) for j in columns)]
    probes = {math.prod(size_of[j] for j in r) > 1: r for r in tables}
    unit = max(
        float(measure_marginal(coded, input_metric, r, domains, 1.0).map(d_in)) for r in probes.values()
    )
    sigma = math.sqrt(rounds * unit / (measure_split * rho)) * SLACK
    epsilon = math.sqrt(8 * (1 - measure_split) * rho / rounds) / SLACK

    def measure(clique: Clique, scale: float) -> None:
        noisy = q(measure_marginal(coded, input_metric, clique, domains, scale))
        shape = tuple(size_of[j] for j in clique)
        measured.append(NoisyMarginal(clique, np.asarray(noisy, dtype=np.float64).reshape(shape), scale))

    for j in range(len(sizes)):  # AIM's initialisation: every one-way marginal at the per-round σ
        measure((j,), sigma)
    model = fit_model(MarginalModel.uniform(columns, cats, 1.0), measured, iterations=iterations)
    final = False
    while not final:
        left = _remaining(q)
        planned = unit / (sigma * sigma) + epsilon * epsilon / 8
        if left <= 2 * planned:  # the last round spends what is left
            final = True
            sigma = math.sqrt(unit / (measure_split * float(left))) * SLACK**2
            epsilon = math.sqrt(8 * (1 - measure_split) * float(left)) / SLACK**2
        if sigma > _MAX_GAUSSIAN_SCALE:
            break
        select = select_marginal(coded, input_metric, candidates, domains, model, sigma, epsilon, d_in)
        cost = select.map(d_in) + max(
            measure_marginal(coded, input_metric, r, domains, sigma).map(d_in) for r in probes.values()
        )
        if cost > left:
            break
        clique = list(candidates)[q(select)]
        before = model.project(clique)
        measure(clique, sigma)
        model = fit_model(model, measured, iterations=iterations)
        cells = math.prod(size_of[j] for j in clique)
        if float(np.abs(model.project(clique) - before).sum()) <= math.sqrt(2 / math.pi) * sigma * cells:
            sigma /= 2  # the model barely moved: spend more on each round (McKenna et al. 2022 Alg. 1)
            epsilon *= 2
    return model


@recorded
def make_aim(
    input_domain: Domain,
    input_metric: Metric,
    categories: Mapping[Any, Any],
    rho: float,
    *,
    workload: Sequence[Sequence[Hashable]] | None = None,
    d_in: int = 1,
    rounds: int | None = None,
    measure_split: float = 0.9,
    iterations: int = 100,
) -> Measurement[Any, MarginalModel, int, Fraction]:
    """AIM: a synthetic-data model of categorical records, fitted to marginals chosen adaptively for a
    workload, ρ-zCDP at ``d_in`` (McKenna–Mullins–Sheldon–Miklau 2022, Alg. 1).

    Every one-way marginal is measured first; then each round selects the candidate marginal (a subset of
    a workload clique) that the current model answers worst, weighted by its overlap with the workload and
    penalised by the noise its measurement would add, measures it with Gaussian noise and refits the model. A
    round whose measurement barely moves the model halves σ and doubles the selection's ε; the last round
    spends what is left. Each round costs ``(d_in·Δ₂)²/(2σ²)`` (Δ₂ = 1 for a record added or removed, √2
    changed; the measurement, a share ``measure_split`` of the planned per-round budget ``ρ/rounds``) plus
    ``ε²/8`` (selection, the rest of the share: the exponential mechanism, drawn exactly, is ε-bounded
    range), so ``σ = √(T/(2αρ))`` and ``ε = √(8(1 − α)ρ/T)`` as in the paper.

    The privacy map is that of the zCDP filter holding the whole run: ``ρ`` for any ``d ≤ d_in``. Each
    measurement is charged before it runs, and the filter refuses (raises, spending nothing) any that would
    pass ρ; the loop plans each round's cost from the filter's exact remaining budget.

    **Records outside the categories.** The input domain holds any record (e.g. any ``dict``), so a record
    whose value in a declared column is missing or not one of its categories is in the domain and never
    makes the call raise: it is left out of every marginal, and the model describes only the records
    whose every declared column holds a declared category (its total estimates their number, not the
    dataset's size). To keep such records, map their values to a declared category first, e.g. an
    ``"other"`` category (:func:`~dpcompose.transformations.make_map_rows`), or drop them beforehand.

    The output is a :class:`MarginalModel`: ``project(clique)`` gives any marginal of the model, and
    ``synthesize(n, rng=...)`` draws synthetic records; ``measurements`` are the noisy marginals it was
    fitted to. The model is dense over the product of all columns' categories (at most 2**22 cells).

    Args:
        input_domain: a ``VectorDomain`` of records (tuples, lists or dicts), as for ``make_marginals``.
        input_metric: ``SymmetricDistance()`` or ``ChangeOneDistance()``.
        categories: each column's declared categories (the model's columns, in order).
        rho: the zCDP budget.
        workload: the marginals to answer well (tuples of column keys; default every pair of columns).
        d_in: the neighbouring distance the budget is for.
        rounds: the planned number of rounds ``T`` (default 16 × the number of columns).
        measure_split: the share of each round's budget spent on measuring (α; the rest selects).
        iterations: the most L-BFGS iterations of each refit.

    Raises:
        InvalidParameter: malformed categories, workload or parameters; a joint table over 2**22 cells;
            a ρ so small that the first round's noise is past the exact samplers' range.
        DomainMismatch: records that are not tuples, lists or dicts, or a metric that is not a dataset
            metric.

    Source: McKenna, Mullins, Sheldon, Miklau 2022, "AIM: An Adaptive and Iterative Mechanism for
    Differentially Private Synthetic Data", Alg. 1; privacy by the zCDP filter (Feldman–Zrnic 2021 Thm
    4.3), the discrete Gaussian (Canonne–Kamath–Steinke 2020 Thm 4) and the exponential mechanism,
    ε-bounded range, hence ε²/8-zCDP (Cesar–Rogers 2021).

    Examples:
        >>> import dpcompose as dp
        >>> rows = dp.VectorDomain(dp.AtomDomain(dict))
        >>> cats = {"sex": ["f", "m"], "smoker": [False, True]}
        >>> aim = dp.algorithms.make_aim(rows, dp.SymmetricDistance(), cats, rho=0.5, rounds=4)
        >>> aim.map(1)
        Fraction(1, 2)
    """
    columns, domains, rho_f = check_synthesis_args(input_domain, input_metric, categories, rho)
    cliques = _check_workload(workload, columns)
    check_positive_int(d_in, "d_in")
    t = 16 * len(columns) if rounds is None else check_positive_int(rounds, "rounds")
    check_finite_positive(measure_split, "measure_split")
    if not 0 < float(measure_split) < 1:
        raise InvalidParameter(f"measure_split={measure_split!r} must be in (0, 1): the rest selects")
    check_positive_int(iterations, "iterations")
    if t < len(columns):
        raise InvalidParameter(
            f"rounds={rounds!r}: at least the number of columns ({len(columns)}); AIM first measures every "
            "one-way marginal at the per-round budget"
        )
    alpha = float(measure_split)
    sigma = math.sqrt(t / (2 * alpha * rho_f))
    if sigma * d_in > _MAX_GAUSSIAN_SCALE / 4:
        raise InvalidParameter(
            f"rho={rho!r}: the first rounds would need Gaussian noise of σ = {sigma:.3g}, past the exact "
            "sampler's range (2**38 here): raise rho or lower rounds"
        )
    candidates = candidates_of(cliques, columns)
    epsilon = math.sqrt(8 * (1 - alpha) * rho_f / t)
    if 2 * d_in * max(candidates.values()) / epsilon > _MAX_SELECT_SCALE / 4:
        raise InvalidParameter(f"rho={rho!r}: the selection's noise would be past its sampler's range")
    codes = complete_record_codes(input_domain, input_metric, categories)
    budget = make_privacy_filter(
        codes.output_domain, codes.output_metric, ZCDP(), d_in=codes.map(d_in), d_out=rho, rule="zcdp"
    )
    index = {c: j for j, c in enumerate(columns)}
    coded_candidates: dict[Clique, int] = {tuple(index[c] for c in r): w for r, w in candidates.items()}
    sizes = [len(domains[c].categories) for c in columns]
    user_cats = {c: domains[c].categories for c in columns}

    def aim(q: FilterQueryable) -> MarginalModel:
        fitted = run_aim(
            q,
            codes.output_domain,
            codes.output_metric,
            sizes,
            rho_f,
            coded_candidates,
            d_in,
            t,
            alpha,
            iterations,
        )
        return fitted.named(columns, user_cats)

    answered: Measurement[Any, MarginalModel, int, Fraction] = make_postprocess(budget, aim)
    return claimed_up_to(codes >> answered, d_in, "make_aim")
