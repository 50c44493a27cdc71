"""MWEM (Hardt–Ligett–McSherry 2012): a synthetic histogram fitted by multiplicative weights to workload
queries chosen by the exponential mechanism, built from the library's checked parts under one zCDP filter.

Every step that reads the data is a library measurement submitted to
:func:`~dpcompose.make_privacy_filter` (``ZCDP()``, rule ``"zcdp"``): the dataset size, when it is not
given, as a noisy count (:func:`~dpcompose.transformations.make_count` then
:func:`~dpcompose.measurements.make_gaussian`); each round's selection, the errors of every query against
the current estimate (:func:`~dpcompose.transformations.make_workload` then
:func:`~dpcompose.transformations.make_workload_error`, L∞ sensitivity ``d_in·max A``) into the
exponential mechanism (:func:`~dpcompose.measurements.make_exponential_mechanism`, ε²/8-zCDP as it is
ε-bounded range); and the selected query's answer with exact discrete Gaussian noise. The filter charges
each before it runs and refuses any that would pass ρ, so the whole is ρ-zCDP (Feldman–Zrnic 2021 Thm
4.3); the multiplicative-weights updates, the loop's control flow and the returned histogram read only
released answers and public parameters (post-processing, Dwork–Roth 2014 Prop. 2.1).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpcompose._validation import check_finite_positive, check_positive_int
from dpcompose.algorithms._aim import SLACK, claimed_up_to
from dpcompose.combinators import make_postprocess, make_privacy_filter
from dpcompose.combinators._filter import FilterQueryable
from dpcompose.core import ZCDP, CategoricalDomain, Domain, L2Distance, LInfDistance, Measurement, Metric
from dpcompose.core._recipe import recorded
from dpcompose.errors import DomainMismatch, InvalidParameter
from dpcompose.measurements import make_exponential_mechanism, make_gaussian
from dpcompose.transformations import make_count, make_workload, make_workload_error
from dpcompose.transformations._workload import categorical_query_matrix

__all__ = ["make_mwem"]

FloatArray = npt.NDArray[np.float64]

_MAX_SIGMA = 2.0**38
"""The largest σ planned for the exact discrete Gaussian (its sampler takes up to 2**40)."""


def _plan(rho: float, rounds: int, select_split: float, sized: bool) -> tuple[float, float]:
    """The per-round selection ε and the planned ρ of one measurement (and of the count, if any)."""
    per_round = rho / (rounds if sized else rounds + 1)
    epsilon = math.sqrt(8 * select_split * per_round) / SLACK
    return epsilon, (1 - select_split) * per_round


def _mw_update(est: FloatArray, row: FloatArray, measured: float, n: float) -> FloatArray:
    """One multiplicative-weights step towards ``row·est = measured``, the total kept at ``n``
    (Hardt–Ligett–McSherry 2012, Alg. 1: ``A(x) ∝ A(x)·exp(q(x)·(m − q(A))/(2n))``)."""
    step = np.clip(row * (measured - float(row @ est)) / (2 * n), -50.0, 50.0)
    new = est * np.exp(step)
    total = float(new.sum())
    return new * (n / total) if total > 0 else np.full_like(est, n / est.size)


@recorded
def make_mwem(
    input_domain: Domain,
    input_metric: Metric,
    queries: Any,
    rho: float,
    *,
    rounds: int = 10,
    size: int | None = None,
    d_in: int = 1,
    select_split: float = 0.5,
    passes: int = 10,
) -> Measurement[Any, FloatArray, int, Fraction]:
    """MWEM: a synthetic histogram over a categorical record domain that answers a workload of counting
    queries, ρ-zCDP at ``d_in`` (Hardt–Ligett–McSherry 2012, Alg. 1, with zCDP accounting).

    Starting from the uniform histogram (total ``n``), each of ``rounds`` rounds selects the query the
    current estimate answers worst (the exponential mechanism over the errors ``|qᵢ(x) − qᵢ(est)|``),
    measures it with Gaussian noise, and applies the multiplicative-weights update for every measurement so
    far, ``passes`` times (the paper's practical variant, §3.1). Each round's budget ``ρ/rounds`` is split
    ``select_split`` to the selection (``ε²/8``: the exponential mechanism is ε-bounded range) and the rest
    to the measurement (``(d_in·Δ₂)²/(2σ²)``, Δ₂ = 1 for a record added or removed, √2 changed, one query).
    When ``size`` is not given, the dataset size is first released as a noisy count (free under
    ``ChangeOneDistance``, where the size is public) and the budget is split into ``rounds + 1`` parts.

    The privacy map is that of the zCDP filter holding the run: ``ρ`` for any ``d ≤ d_in``. The output is the
    final histogram (float64 counts, one per category, in the domain's order; they sum to ``n`` or the noisy
    count); answer any linear query from it.

    Args:
        input_domain: ``VectorDomain(CategoricalDomain(cells))``: each record one cell of a finite domain.
        input_metric: ``SymmetricDistance()`` or ``ChangeOneDistance()``.
        queries: the workload, as for :func:`~dpcompose.transformations.make_workload`: a 0/1 matrix of
            shape ``(k, m)`` (``m`` cells) or a list of predicates of a cell.
        rho: the zCDP budget.
        rounds: the number of rounds T (queries measured).
        size: the public number of records, if it is public; default: released as a noisy count. It is
            taken as given, not checked against the data (a check would tell the data's size, which the
            add/remove neighbours keep private): the histogram is scaled to it, so a wrong ``size`` gives
            a histogram of that many records.
        d_in: the neighbouring distance the budget is for.
        select_split: the share of each round's budget spent on selection, in (0, 1).
        passes: multiplicative-weights passes over the measurements after each round.

    Raises:
        InvalidParameter: malformed queries or parameters, or a ρ so small that the noise would pass the
            exact sampler's range.
        DomainMismatch: a domain that is not a vector of a ``CategoricalDomain``, or a metric that is not a
            dataset metric.

    Source: Hardt, Ligett, McSherry 2012, "A Simple and Practical Algorithm for Differentially Private Data
    Release", Alg. 1; privacy by the zCDP filter (Feldman–Zrnic 2021 Thm 4.3), the discrete Gaussian
    (Canonne–Kamath–Steinke 2020 Thm 4) and the exponential mechanism, ε-bounded range, hence
    ε²/8-zCDP (Cesar–Rogers 2021).

    Examples:
        >>> import numpy as np
        >>> import dpcompose as dp
        >>> cells = dp.VectorDomain(dp.CategoricalDomain(["a", "b", "c"]))
        >>> A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 0]])
        >>> mwem = dp.algorithms.make_mwem(cells, dp.SymmetricDistance(), A, rho=0.5, rounds=3, size=300)
        >>> mwem.map(1)
        Fraction(1, 2)
        >>> histogram = mwem(["a"] * 200 + ["c"] * 100)  # a synthetic histogram of 300 records
        >>> len(histogram), round(float(histogram.sum()), 6)
        (3, 300.0)
    """
    answers = make_workload(input_domain, input_metric, queries, metric=LInfDistance())
    element = getattr(input_domain, "element_domain", None)
    if not isinstance(element, CategoricalDomain):
        raise DomainMismatch(
            f"input_domain={input_domain!r} must be a VectorDomain(CategoricalDomain(cells)): MWEM keeps a "
            "histogram over the cells"
        )
    cells = len(element.categories)
    check_finite_positive(rho, "rho")
    t = check_positive_int(rounds, "rounds")
    check_positive_int(d_in, "d_in")
    check_positive_int(passes, "passes")
    check_finite_positive(select_split, "select_split")
    if not 0 < float(select_split) < 1:
        raise InvalidParameter(f"select_split={select_split!r} must be in (0, 1): the rest measures")
    if size is not None:
        check_positive_int(size, "size")
    rho_f = float(rho)
    rows = categorical_query_matrix(queries, element)
    matrix = rows.astype(np.float64)
    epsilon, rho_measure = _plan(rho_f, t, float(select_split), size is not None)

    def one_query(i: int) -> Any:
        return make_workload(input_domain, input_metric, rows[i : i + 1], metric=L2Distance())

    # ρ of a Gaussian at σ = 1 on the most sensitive single query (or the count): (d_in·Δ₂)²/2
    count = make_count(input_domain, input_metric)
    unit = max(float(m.map(d_in)) ** 2 / 2 for m in [count, *(one_query(i) for i in range(len(rows)))])
    sigma = math.sqrt(unit / rho_measure) * SLACK if unit > 0 else 1.0
    if sigma > _MAX_SIGMA:
        raise InvalidParameter(
            f"rho={rho!r}: each measurement would need Gaussian noise of σ = {sigma:.3g}, past the exact "
            "sampler's range: raise rho or lower rounds"
        )
    sensitivity = float(answers.map(d_in))
    select_scale = 2 * max(sensitivity, 1.0) / epsilon * SLACK
    if select_scale > 2.0**48:
        raise InvalidParameter(f"rho={rho!r}: the selection's noise would be past its sampler's range")
    budget = make_privacy_filter(input_domain, input_metric, ZCDP(), d_in=d_in, d_out=rho, rule="zcdp")

    def mwem(q: FilterQueryable) -> FloatArray:
        if size is not None:
            n = float(size)
        else:
            noisy = q(count >> make_gaussian(count.output_domain, count.output_metric, scale=sigma))
            n = float(max(int(noisy), 1))
        est = np.full(cells, n / cells)
        measured: list[tuple[int, float]] = []
        for _ in range(t):
            reference = np.rint(matrix @ est).astype(np.int64).tolist()
            scores = answers >> make_workload_error(answers.output_domain, answers.output_metric, reference)
            pick = scores >> make_exponential_mechanism(
                scores.output_domain, scores.output_metric, scale=select_scale, output_measure=ZCDP()
            )
            i = int(q(pick))
            one = one_query(i)
            value = q(one >> make_gaussian(one.output_domain, one.output_metric, scale=sigma))
            measured.append((i, float(np.asarray(value, dtype=np.float64)[0])))
            for _ in range(passes):
                for j, m in measured:
                    est = _mw_update(est, matrix[j], m, n)
        return est

    answered: Measurement[Any, FloatArray, int, Fraction] = make_postprocess(budget, mwem)
    return claimed_up_to(answered, d_in, "make_mwem")
