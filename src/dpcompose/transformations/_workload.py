"""Workloads of counting queries and marginals: records → a vector of counts with exact sensitivities.

A *counting query* counts the records satisfying a property; a *workload* is a declared list of them. Over a
categorical record domain with ``m`` categories a workload of ``k`` queries is a 0/1 matrix ``A`` of
shape ``(k, m)``: record category ``j`` adds the column ``a_j`` to the answer vector ``A·h`` (``h`` the
histogram). Every sensitivity below is read off the columns, exactly.

Sensitivity of a workload (proofs; ``c_j = ‖a_j‖₁`` the number of queries category ``j`` satisfies,
``c = max_j c_j``, ``s = max_{j,l} |a_j Δ a_l| = max_{j,l} (c_j + c_l − 2·a_j·a_l)``):

* ``SymmetricDistance`` d: ``x'`` is ``x`` with records ``r_1 … r_t`` added and ``r_{t+1} … r_d``
  removed, so the answers differ by ``v = Σ ±a_{j_i}``. Triangle inequality: ``‖v‖₁ ≤ d·c``,
  ``‖v‖₂ ≤ d·√c`` (each ``‖a_j‖₂ = √c_j`` as the entries are 0/1), ``‖v‖∞ ≤ d·max A``. All three are
  attained by adding ``d`` copies of a category with ``c_j = c``, so they are the exact sensitivities.
* ``ChangeOneDistance`` d: pair the records so that ``d`` pairs differ; the answers differ by
  ``v = Σ (a_{l_i} − a_{j_i})``, each term with ``‖·‖₁ = |a_l Δ a_j| ≤ s`` and ``‖·‖₂ = √|a_l Δ a_j|
  ≤ √s``, ``‖·‖∞ ≤ 1`` (and 0 when all columns are equal). So ``d·s``, ``d·√s`` and ``d·[s > 0]``;
  all attained by changing ``d`` records along the same maximising pair of categories.

Square roots are reported as the least rational in ``2**-64·Z`` at or above them (exact when the
radicand is a perfect square): a map never under-reports.

Marginals (:func:`make_marginals`) are the workload whose queries are the cells of contingency tables;
with ``t`` tables a record adds 1 to at most one cell of each, so ``c = t`` and a change moves at most
one unit out of and one unit into each table (see that function for the exact figures).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpcompose._validation import short_repr as _short
from dpcompose.accounting._exact import sqrt_up_dyadic
from dpcompose.core import (
    AtomDomain,
    CategoricalDomain,
    ChangeOneDistance,
    Domain,
    L1Distance,
    L2Distance,
    LInfDistance,
    Metric,
    Node,
    Transformation,
    VectorDomain,
)
from dpcompose.core._metrics import check_space
from dpcompose.core._recipe import recorded
from dpcompose.errors import DomainMismatch, InvalidParameter
from dpcompose.transformations._clamp import INT64_MAX, check_dataset_metric
from dpcompose.transformations._rows import satisfies

__all__ = ["categorical_query_matrix", "make_workload", "make_workload_error"]

Counts = npt.NDArray[np.int64]
L1_DEFAULT = L1Distance()
"""The default output metric (one shared instance: metrics are immutable)."""
MAX_CELLS = 1 << 22
"""The most categories × queries (workload matrix entries) or marginal cells accepted: the matrix and
its column Gram matrix are held in memory."""


def int_vector_size(input_domain: Domain, size_name: str, meaning: str) -> int:
    """The size of ``input_domain`` if it is ``VectorDomain(AtomDomain(int), size=…)`` with a size.

    Raises:
        DomainMismatch: any other domain; the message names the size ``size_name`` and says what the
            vector holds (``meaning``).
    """
    if not (
        isinstance(input_domain, VectorDomain)
        and isinstance(input_domain.element_domain, AtomDomain)
        and input_domain.element_domain.carrier is int
        and input_domain.size is not None
    ):
        raise DomainMismatch(
            f"input_domain={input_domain!r} must be VectorDomain(AtomDomain(int), size={size_name}): "
            + meaning
        )
    return int(input_domain.size)


def check_output_metric(metric: object) -> Metric:
    """``metric`` if it is ``L1Distance()``, ``L2Distance()`` or ``LInfDistance()``; InvalidParameter else."""
    if isinstance(metric, (L1Distance, L2Distance)):
        return metric
    if isinstance(metric, LInfDistance):
        if metric.monotonic:
            raise InvalidParameter(
                "metric=LInfDistance(monotonic=True): workload answers of neighbours at distance > 1 need "
                "not move in one direction (one record added, another removed); use LInfDistance()"
            )
        return metric
    raise InvalidParameter(
        f"metric={_short(metric)} must be L1Distance() (Laplace), L2Distance() (Gaussian) or "
        "LInfDistance() (report noisy max)"
    )


class _Sensitivity:
    """The exact per-record figures of a 0/1 workload and its stability map for one output metric."""

    def __init__(self, add: int, change: int, top: int, metric: Metric, change_one: bool) -> None:
        self.per = change if change_one else add  # c (add/remove) or s (change one)
        self.top = (1 if change > 0 else 0) if change_one else top
        self.metric = metric

    def __call__(self, d_in: int) -> Fraction:
        if isinstance(self.metric, L1Distance):
            return Fraction(d_in * self.per)
        if isinstance(self.metric, L2Distance):
            return sqrt_up_dyadic(d_in * d_in * self.per, 64)
        return Fraction(d_in * self.top)


EXACT_SPREAD_COLUMNS = 1 << 12
"""Up to this many distinct columns, ``s`` (the largest symmetric difference of two columns) is computed
exactly, by blocks of the columns' Gram matrix; beyond, the upper bound ``min(2c, k)`` is used."""


def _matrix_figures(matrix: Counts) -> tuple[int, int, int]:
    """``(c, s, max A)`` of a 0/1 matrix (see the module docstring), with integer arithmetic.

    ``c`` and ``max A`` are exact. ``s = max_{j,l} (c_j + c_l − 2·a_j·a_l)`` is computed over the distinct
    columns (a repeated column adds no pair), exactly when there are at most :data:`EXACT_SPREAD_COLUMNS`
    of them, in blocks of 256 columns against all; otherwise the bound ``min(2c, k)`` (every term is at
    most ``c_j + c_l ≤ 2c`` and at most ``k``, the number of queries) — an upper bound, never less.
    """
    if matrix.size == 0:
        return 0, 0, 0
    columns = matrix.sum(axis=0)
    c, k = int(columns.max()), matrix.shape[0]
    distinct = np.unique(matrix, axis=1)
    u = distinct.shape[1]
    if u > EXACT_SPREAD_COLUMNS:
        return c, min(2 * c, k), int(matrix.max())
    sums = distinct.sum(axis=0)
    spread = 0
    for start in range(0, u, 256):
        block = distinct[:, start : start + 256]
        gram = block.T @ distinct
        spread = max(spread, int((sums[start : start + 256, None] + sums[None, :] - 2 * gram).max()))
    return c, spread, int(matrix.max())


def _query_matrix(queries: object, m: int) -> Counts:
    """``queries`` as a 0/1 int64 matrix with ``m`` columns, or InvalidParameter."""
    if (
        isinstance(queries, np.ndarray)
        and queries.dtype.kind in "biu"
        and queries.ndim == 2
        and queries.shape[0]
        and queries.shape[1] == m
        and queries.size <= MAX_CELLS
        and bool(((queries == 0) | (queries == 1)).all())
    ):
        return queries.astype(np.int64)  # vectorised; every other case is checked entry by entry below
    try:
        raw = np.asarray(queries, dtype=object)
    except Exception as exc:
        raise InvalidParameter(f"queries={_short(queries)} cannot be read as a matrix ({exc})") from None
    if raw.ndim != 2 or raw.shape[0] == 0:
        raise InvalidParameter(
            f"queries={_short(queries)} must be a non-empty 2-d 0/1 matrix of shape (k, {m}) or a list of "
            "predicates"
        )
    if raw.shape[1] != m:
        raise InvalidParameter(
            f"queries has {raw.shape[1]} columns: it needs one per category of the input domain ({m})"
        )
    if raw.size > MAX_CELLS:
        raise InvalidParameter(f"queries has {raw.size} entries: at most 2**22 are supported")
    ok = all(isinstance(v, (int, np.integer, bool, np.bool_)) and v in (0, 1) for v in raw.flat)
    if not ok:
        raise InvalidParameter(
            f"queries={_short(queries)} must hold only the integers 0 and 1 (or bools): the sensitivity "
            "is that of counting queries"
        )
    return np.asarray(raw.astype(np.int64), dtype=np.int64)


def _is_predicate_list(queries: object) -> bool:
    return (
        isinstance(queries, (list, tuple))
        and len(queries) > 0
        and all(callable(q) and not isinstance(q, (list, tuple, np.ndarray)) for q in queries)
    )


def categorical_query_matrix(queries: Any, element: CategoricalDomain) -> Counts:
    """The 0/1 int64 matrix ``(k, m)`` of a workload over the ``m`` categories of ``element``: a matrix as
    given (checked), or each predicate evaluated once per category (:func:`make_workload`'s reading)."""
    m = len(element.categories)
    if _is_predicate_list(queries):
        if len(queries) * m > MAX_CELLS:
            raise InvalidParameter(f"queries: {len(queries)} predicates × {m} categories exceed 2**22")
        return np.array(
            [[satisfies(q, c) for c in element.categories] for q in queries], dtype=np.int64
        ).reshape(len(queries), m)
    return _query_matrix(queries, m)


class _CategoryCoder:
    """Positions of the records of a ``CategoricalDomain`` (members only, so a dict lookup is exact)."""

    def __init__(self, domain: CategoricalDomain) -> None:
        self.index: dict[Hashable, int] = {c: i for i, c in enumerate(domain.categories)}
        self.m = len(domain.categories)

    def histogram(self, data: Any) -> Counts:
        values = data.tolist() if isinstance(data, np.ndarray) else data
        get, other = self.index.get, self.m
        codes = np.fromiter((_safe_get(get, v, other) for v in values), dtype=np.intp)
        return np.bincount(codes, minlength=self.m + 1)[: self.m].astype(np.int64)


def _safe_get(get: Callable[[Hashable, int], int], value: Any, other: int) -> int:
    try:
        return get(value, other)
    except Exception:  # unhashable: not a member (cannot occur in the domain)
        return other


@recorded
def make_workload(
    input_domain: Domain,
    input_metric: Metric,
    queries: Any,
    *,
    metric: Metric = L1_DEFAULT,
) -> Transformation[Any, Counts, int, Fraction]:
    """The answers of a declared workload of ``k`` counting queries: an int64 vector of ``k`` counts.

    ``queries`` is either

    * a 0/1 matrix of shape ``(k, m)`` (numpy array or nested lists of 0/1 or bools) over records of
      ``CategoricalDomain(categories)`` with ``m`` categories: query ``i`` counts the records whose
      category ``j`` has ``queries[i][j] = 1``. Answers are ``A·h`` for the histogram ``h``, vectorised; or
    * a non-empty list of predicates (callables of one record). A record satisfies a predicate when its
      answer is true as Python's ``if`` reads it (``True``, ``numpy.True_``, ``1``; the rule of
      :func:`make_subset_by`); a predicate that raises, or whose answer has no truth value, counts 0,
      never an exception. Over a ``CategoricalDomain`` each predicate is evaluated once per *category*
      at construction (so records are counted through the matrix, vectorised, and the sensitivity is
      exact); over any other record domain once per record.

    Sensitivity (exact; proofs in the module docstring): with ``c`` the most queries one category
    satisfies (largest column sum), ``s`` the largest symmetric difference of two columns and
    ``d = d_in``:

    ========================  ==========  ==========  ============
    input metric               L1          L2          L∞
    ========================  ==========  ==========  ============
    ``SymmetricDistance``      d·c         d·√c        d·max A
    ``ChangeOneDistance``      d·s         d·√s        d·[s > 0]
    ========================  ==========  ==========  ============

    ``√`` is reported as a rational upper bound within 2**-64 (exact for perfect squares). For predicates
    over a non-categorical domain nothing is known of the records, so ``c = s = k`` (one record may
    satisfy every query, another none). ``s`` is exact for matrices of at most 4,096 distinct columns;
    beyond, the upper bound ``min(2c, k)`` is used (the exact farthest pair would take quadratic time).

    Chain ``make_laplace`` after ``metric=L1Distance()``, ``make_gaussian`` after ``L2Distance()`` and
    ``make_report_noisy_max`` after ``LInfDistance()`` (for errors against a public estimate, put
    :func:`make_workload_error` in between).

    Args:
        input_domain: ``VectorDomain(CategoricalDomain(categories))`` (matrix or predicates), or any
            ``VectorDomain`` of records (predicates).
        input_metric: ``SymmetricDistance()`` or ``ChangeOneDistance()``.
        queries: the 0/1 query matrix or the list of predicates (public: part of the query).
        metric: the output metric: ``L1Distance()`` (default), ``L2Distance()`` or ``LInfDistance()``.

    Raises:
        DomainMismatch: the metric is not a dataset metric, or a matrix is given for records that are not
            a ``CategoricalDomain``.
        InvalidParameter: a matrix that is not 0/1, of the wrong width or empty; a list holding a
            non-callable; ``metric`` not one of the three.

    Source: Li, Miklau, Hay, McGregor, Rastogi 2015, "The matrix mechanism", §3 (a workload's L1 / L2
    sensitivity is its largest column norm); Dwork–Roth 2014 §3.3 (histogram queries); the change-one
    and L∞ figures are proven in the module docstring.

    Examples:
        >>> import dpcompose as dp
        >>> colours = dp.VectorDomain(dp.CategoricalDomain(["red", "green", "blue"]))
        >>> w = dp.t.make_workload(colours, dp.SymmetricDistance(), [[1, 1, 0], [0, 1, 1], [1, 1, 1]])
        >>> w(["red", "blue", "green", "green"]).tolist(), w.map(1)
        ([3, 3, 4], Fraction(3, 1))
        >>> w2 = dp.t.make_workload(colours, dp.SymmetricDistance(), [lambda c: c != "red"],
        ...                         metric=dp.L2Distance())
        >>> w2(["red", "blue"]).tolist(), w2.map(2)
        ([1], Fraction(2, 1))
        >>> noisy = w >> dp.m.make_laplace(w.output_domain, w.output_metric, scale=30.0)
        >>> noisy.map(1)
        Fraction(1, 10)
    """
    check_dataset_metric(input_metric)
    check_space(input_domain, input_metric)
    assert isinstance(input_domain, VectorDomain)
    out_metric = check_output_metric(metric)
    element = input_domain.element_domain
    change_one = isinstance(input_metric, ChangeOneDistance)
    predicates = _is_predicate_list(queries)
    mixed = isinstance(queries, (list, tuple)) and any(callable(q) for q in queries)
    if mixed and not predicates:
        raise InvalidParameter(
            f"queries={_short(queries)} mixes predicates and other values: give a list of predicates or a "
            "0/1 matrix"
        )
    run: Callable[[Any], Counts]
    if isinstance(element, CategoricalDomain):
        matrix = categorical_query_matrix(queries, element)
        coder = _CategoryCoder(element)
        add, change, top = _matrix_figures(matrix)
        k = matrix.shape[0]

        def run(data: Any) -> Counts:
            return matrix @ coder.histogram(data)

        kind = "matrix" if not predicates else "predicates on categories"
    else:
        if not predicates:
            raise DomainMismatch(
                f"queries={_short(queries)} is not a list of predicates, and a query matrix needs records of "
                f"a CategoricalDomain (one column per category), not input_domain={input_domain!r}"
            )
        preds: tuple[Callable[[Any], Any], ...] = tuple(queries)
        k = len(preds)
        add, change, top = k, k, 1

        def run(data: Any) -> Counts:
            values = data.tolist() if isinstance(data, np.ndarray) else data
            out = [0] * k
            for record in values:
                for i, q in enumerate(preds):
                    out[i] += satisfies(q, record)
            return np.array([min(v, INT64_MAX) for v in out], dtype=np.int64)

        kind = "predicates"
    stability = _Sensitivity(add, change, top, out_metric, change_one)
    return Transformation(
        input_domain,
        VectorDomain(AtomDomain(int), size=k),
        input_metric,
        out_metric,
        run,
        stability,
        node=Node(
            "workload",
            params=(("queries", f"{k} ({kind})"), ("max_per_record", str(add)), ("metric", repr(out_metric))),
            source="Li et al. 2015 §3 (workload sensitivity = largest column norm)",
        ),
    )


@recorded
def make_workload_error(
    input_domain: Domain, input_metric: Metric, reference: Sequence[int]
) -> Transformation[Any, Counts, Fraction, Fraction]:
    """Each answer's absolute error against a public integer ``reference``: ``|vᵢ − rᵢ|`` (saturated at
    the int64 maximum) — the score vector of MWEM's query selection.

    Stability: d_in → d_in in the input's metric (L1, L2 or L∞), since ``||a| − |b|| ≤ |a − b|``
    coordinate by coordinate and saturating at a constant is 1-Lipschitz too; the arithmetic is exact
    (Python integers).

    Args:
        input_domain: ``VectorDomain(AtomDomain(int), size=k)`` (e.g. :func:`make_workload`'s output).
        input_metric: ``L1Distance()``, ``L2Distance()`` or ``LInfDistance()``.
        reference: ``k`` public integers (e.g. the current synthetic estimate's answers, rounded).

    Source: Hardt, Ligett, McSherry 2012 (MWEM: select the query of largest error); 1-Lipschitz
    post-processing as proven above.

    Examples:
        >>> import dpcompose as dp
        >>> answers = dp.VectorDomain(dp.AtomDomain(int), size=3)
        >>> err = dp.t.make_workload_error(answers, dp.LInfDistance(), [5, 5, 5])
        >>> err([3, 5, 9]).tolist(), err.map(1)
        ([2, 0, 4], Fraction(1, 1))
    """
    if not isinstance(input_metric, (L1Distance, L2Distance, LInfDistance)):
        raise DomainMismatch(
            f"input_metric={input_metric!r} must be L1Distance(), L2Distance() or LInfDistance()"
        )
    k = int_vector_size(input_domain, "k", "the workload's answers")
    check_space(input_domain, input_metric)
    if (
        isinstance(reference, (str, bytes, Mapping))
        or not isinstance(reference, (Sequence, np.ndarray))
        or (isinstance(reference, np.ndarray) and reference.ndim != 1)
    ):
        raise InvalidParameter(f"reference={_short(reference)} must be a list of {k} integers")
    ref = reference.tolist() if isinstance(reference, np.ndarray) else list(reference)
    if len(ref) != k or not all(isinstance(r, (int, np.integer)) and not isinstance(r, bool) for r in ref):
        raise InvalidParameter(
            f"reference={_short(reference)} must be a list of {k} integers (round a float estimate first)"
        )
    ref_ints = [int(r) for r in ref]

    def run(data: Any) -> Counts:
        values = data.tolist() if isinstance(data, np.ndarray) else list(data)
        return np.array(
            [min(abs(int(v) - r), INT64_MAX) for v, r in zip(values, ref_ints, strict=True)], dtype=np.int64
        )

    # |v − r| is 1-Lipschitz per coordinate, but not monotone: two answers moving up can move their errors
    # in opposite directions (errors [1, 0] → [0, 1]), so a monotonic L∞ input gives a plain L∞ output
    output_metric = LInfDistance() if isinstance(input_metric, LInfDistance) else input_metric
    return Transformation(
        input_domain,
        VectorDomain(AtomDomain(int), size=k),
        input_metric,
        output_metric,
        run,
        lambda d_in: d_in,
        node=Node("workload_error", params=(("k", str(k)),), source="Hardt–Ligett–McSherry 2012"),
    )
