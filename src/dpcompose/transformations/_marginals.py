"""Marginals (contingency tables) over chosen columns of categorical records, as one flat count vector."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpcompose._validation import short_repr as _short
from dpcompose.core import (
    AtomDomain,
    CategoricalDomain,
    ChangeOneDistance,
    Domain,
    L1Distance,
    L2Distance,
    Metric,
    Node,
    Transformation,
    VectorDomain,
)
from dpcompose.core._metrics import check_space
from dpcompose.core._recipe import recorded
from dpcompose.errors import DomainMismatch, InvalidParameter
from dpcompose.transformations._clamp import check_dataset_metric
from dpcompose.transformations._workload import L1_DEFAULT, MAX_CELLS, check_output_metric, sqrt_up

__all__ = ["make_marginals", "marginal_tables"]

Counts = npt.NDArray[np.int64]
Marginal = tuple[Hashable, ...]


def _check_key(key: object, where: str) -> Hashable:
    if isinstance(key, (bool, np.bool_)) or not isinstance(key, (int, np.integer, str)):
        raise InvalidParameter(f"{where}={_short(key)} must be a column position (int) or a key (str)")
    return int(key) if isinstance(key, (int, np.integer)) else str.__str__(key)


def _check_columns(columns: object) -> tuple[Marginal, ...]:
    if isinstance(columns, (str, bytes, Mapping)) or not isinstance(columns, Sequence) or not columns:
        raise InvalidParameter(
            f"columns={_short(columns)} must be a non-empty list of marginals, each a tuple of column keys, "
            'e.g. [("age",), ("age", "sex")]'
        )
    out = []
    for i, marginal in enumerate(columns):
        if not isinstance(marginal, (tuple, list)) or not marginal:
            raise InvalidParameter(
                f"columns[{i}]={_short(marginal)} must be a non-empty tuple of column keys (write (key,) for "
                "a one-way marginal)"
            )
        keys = tuple(_check_key(k, f"columns[{i}]") for k in marginal)
        if len(set(keys)) != len(keys):
            raise InvalidParameter(f"columns[{i}]={_short(marginal)} names a column twice")
        out.append(keys)
    if len(set(out)) != len(out):
        raise InvalidParameter(f"columns={_short(columns)} lists a marginal twice")
    return tuple(out)


def _check_categories(categories: object, keys: set[Hashable]) -> dict[Hashable, CategoricalDomain]:
    if not isinstance(categories, Mapping):
        raise InvalidParameter(
            f"categories={_short(categories)} must be a dict from each column key to its declared categories"
        )
    out: dict[Hashable, CategoricalDomain] = {}
    for key in sorted(keys, key=repr):
        if key not in categories:
            raise InvalidParameter(f"categories has no entry for column {key!r}: declare its categories")
        cats = categories[key]
        domain = cats if isinstance(cats, CategoricalDomain) else CategoricalDomain(cats)
        for c in domain.categories:
            if isinstance(c, (float, np.floating, complex)):
                raise InvalidParameter(
                    f"categories[{key!r}] holds the float {c!r}: a marginal needs a categorical column; bin "
                    "the floats first (make_map_rows to an int or str code)"
                )
        out[key] = domain
    return out


def _value(record: Any, key: Hashable) -> Any:
    if isinstance(record, Mapping):
        return record[key]
    if isinstance(record, (tuple, list)):
        if isinstance(key, int):
            return record[key]
        fields = getattr(type(record), "_fields", None)
        if isinstance(fields, tuple) and key in fields:  # a namedtuple's field name
            return record[fields.index(key)]
    raise LookupError(key)


_PLAIN = (int, str, bool, bytes, type(None))
"""Types whose equality is the standard, reflexive one: a dict hit of the same type is the category."""


class _ColumnCoder:
    """The category position of a record's value in one column, or -1 (missing or undeclared), exactly as
    :meth:`CategoricalDomain.index` (same type, equal), through one dict lookup for plain values."""

    def __init__(self, domain: CategoricalDomain, key: Hashable) -> None:
        self.domain = domain
        self.key = key
        self.lookup = {c: (i, type(c)) for i, c in enumerate(domain.categories)}
        self.int_key = isinstance(key, int)

    def code(self, record: Any) -> int:
        try:
            kind = type(record)
            value = (
                record[self.key]
                if kind is dict or (self.int_key and kind is tuple)
                else _value(record, self.key)
            )
            hit = self.lookup.get(value)
            if hit is None or type(value) is not hit[1]:
                return -1
            if hit[1] in _PLAIN:
                return hit[0]
            return hit[0] if self.domain.member(value) and self.domain.index(value) == hit[0] else -1
        except (
            Exception
        ):  # a missing column or an odd value: the record adds to no cell of this column's tables
            return -1


def _shape(marginal: Marginal, domains: Mapping[Hashable, CategoricalDomain]) -> tuple[int, ...]:
    return tuple(len(domains[key].categories) for key in marginal)


def _cells(shape: tuple[int, ...]) -> int:
    size = 1
    for n in shape:
        size *= n
    return size


class _TableCounter:
    """Each marginal's flat cell counts of a dataset (records coded once per column)."""

    def __init__(
        self,
        marginals: tuple[Marginal, ...],
        domains: Mapping[Hashable, CategoricalDomain],
        shapes: Sequence[tuple[int, ...]],
    ) -> None:
        self.marginals = marginals
        self.shapes = list(shapes)
        self.keys = sorted({key for marginal in marginals for key in marginal}, key=repr)
        self.coders = {key: _ColumnCoder(domains[key], key) for key in self.keys}

    def tables(self, data: Any) -> list[Counts]:
        values = data.tolist() if isinstance(data, np.ndarray) else data
        codes = {key: np.fromiter(map(self.coders[key].code, values), dtype=np.intp) for key in self.keys}
        parts = []
        for marginal, shape in zip(self.marginals, self.shapes, strict=True):
            columns_codes = [codes[key] for key in marginal]
            valid = np.ones(len(columns_codes[0]), dtype=bool)
            for c in columns_codes:
                valid &= c >= 0
            flat = np.ravel_multi_index(tuple(c[valid] for c in columns_codes), shape)
            parts.append(np.bincount(flat, minlength=_cells(shape)).astype(np.int64))
        return parts


@recorded
def make_marginals(
    input_domain: Domain,
    input_metric: Metric,
    columns: Sequence[Sequence[Hashable]],
    categories: Mapping[Any, Any],
    *,
    metric: Metric = L1_DEFAULT,
) -> Transformation[Any, Counts, int, Fraction]:
    """Marginals (contingency tables) of categorical columns: each table's cell counts, concatenated into one
    int64 vector (each table in row-major order over its columns' declared categories).

    A record adds 1 to the cell of its values in each table. A record whose value in a column is missing or
    not one of that column's categories (compared exactly, as :class:`~dpcompose.CategoricalDomain` does:
    ``True`` is not ``1``) adds nothing to the tables over that column — never an exception. Use
    :func:`marginal_tables` to get the tables back as shaped arrays.

    Sensitivity, with ``t`` tables, ``d = d_in``, and ``w = Σᵢ wᵢ`` where ``wᵢ = 2`` for a table of two or
    more cells and 1 for a one-cell table:

    * ``SymmetricDistance``: each record added or removed moves at most one cell of each table by one, so
      its contribution ``e`` has at most ``t`` entries equal to 1 and the others 0: ``‖e‖₁ ≤ t``,
      ``‖e‖₂ ≤ √t``, ``‖e‖∞ ≤ 1``; by the triangle inequality ``d·t`` (L1), ``d·√t`` (L2), ``d`` (L∞).
      Exact: attained by ``d`` copies of a record with declared values in every column.
    * ``ChangeOneDistance``: a change takes one unit from at most one cell of each table and adds one to at
      most one other cell (the same cell: no change), so each table's part of the difference has L1 norm
      ``≤ wᵢ`` and squared L2 norm ``≤ wᵢ``: ``d·w`` (L1), ``d·√w`` (L2), ``d`` (L∞). With every table of
      two or more cells (``w = 2t``) these are attained by changing ``d`` records from the first to the
      last category of every column.

    ``√`` is reported as a rational upper bound within 2**-64 (exact for perfect squares).

    **Per user.** On data with several rows per person (``SymmetricIdDistance``), put
    :func:`~dpcompose.transformations.make_bound_contributions` with ``max_rows = r`` first: it maps one
    person to ``r`` rows under ``SymmetricDistance``, so the chain's map is ``d·r·t`` in L1 and
    ``d·r·√t`` in L2 (a person's ``r`` rows may all land in the same cells).

    Args:
        input_domain: a ``VectorDomain`` of records: tuples, lists (an int key is a position, a str key a
            namedtuple field) or mappings (a key), e.g. ``VectorDomain(AtomDomain(dict))``.
        input_metric: ``SymmetricDistance()`` or ``ChangeOneDistance()``.
        columns: the tables: a non-empty list of non-empty tuples of column keys (``[("a",), ("a", "b")]``).
        categories: for each column key used, its declared categories (a list, tuple or
            ``CategoricalDomain``; no floats).
        metric: ``L1Distance()`` (default, for Laplace), ``L2Distance()`` (Gaussian) or ``LInfDistance()``.

    Raises:
        DomainMismatch: records that are numbers, strings or bools, or a metric that is not a dataset metric.
        InvalidParameter: malformed ``columns``; a column without declared categories; float categories;
            more than 2**22 cells; ``metric`` not one of the three.

    Source: Dwork–Roth 2014 §3.3 (histogram queries); marginal workloads as in McKenna et al. 2021
    ("Winning the NIST Contest", MST: a record adds one to one cell of each marginal). The bounds are proven
    above.

    Examples:
        >>> import dpcompose as dp
        >>> people = dp.VectorDomain(dp.AtomDomain(dict))
        >>> cats = {"sex": ["f", "m"], "smoker": [False, True]}
        >>> marg = dp.t.make_marginals(people, dp.SymmetricDistance(), [("sex",), ("sex", "smoker")], cats)
        >>> rows = [{"sex": "f", "smoker": True}, {"sex": "m", "smoker": False}, {"sex": "f", "smoker": 1}]
        >>> marg(rows).tolist(), marg.map(1)
        ([2, 1, 0, 1, 1, 0], Fraction(2, 1))
        >>> tables = dp.t.marginal_tables(marg(rows), [("sex",), ("sex", "smoker")], cats)
        >>> tables[("sex", "smoker")].tolist()
        [[0, 1], [1, 0]]
        >>> swap = dp.t.make_marginals(people, dp.ChangeOneDistance(), [("sex",), ("smoker",)], cats,
        ...                            metric=dp.L2Distance())
        >>> swap.map(1)
        Fraction(2, 1)
    """
    check_dataset_metric(input_metric)
    check_space(input_domain, input_metric)
    assert isinstance(input_domain, VectorDomain)
    element = input_domain.element_domain
    if isinstance(element, AtomDomain) and element.carrier in (int, float, str, bool, bytes):
        raise DomainMismatch(
            f"input_domain={input_domain!r}: marginals need records with columns (tuples, lists or dicts), "
            "e.g. VectorDomain(AtomDomain(dict))"
        )
    out_metric = check_output_metric(metric)
    marginals = _check_columns(columns)
    domains = _check_categories(categories, {key for marginal in marginals for key in marginal})
    shapes = [_shape(marginal, domains) for marginal in marginals]
    sizes = [_cells(shape) for shape in shapes]
    if sum(sizes) > MAX_CELLS:
        raise InvalidParameter(f"columns: the marginals have {sum(sizes)} cells: at most 2**22 are supported")
    counter = _TableCounter(marginals, domains, shapes)
    t = len(marginals)
    w = sum(2 if size >= 2 else 1 for size in sizes)
    per = w if isinstance(input_metric, ChangeOneDistance) else t

    def run(data: Any) -> Counts:
        return np.concatenate(counter.tables(data))

    def stability(d_in: int) -> Fraction:
        if isinstance(out_metric, L1Distance):
            return Fraction(d_in * per)
        if isinstance(out_metric, L2Distance):
            return sqrt_up(d_in * d_in * per)
        return Fraction(d_in)

    return Transformation(
        input_domain,
        VectorDomain(AtomDomain(int), size=sum(sizes)),
        input_metric,
        out_metric,
        run,
        stability,
        node=Node(
            "marginals",
            params=(
                ("columns", _short(list(marginals))),
                ("cells", str(sum(sizes))),
                ("metric", repr(out_metric)),
            ),
            source="Dwork–Roth 2014 §3.3; McKenna et al. 2021",
        ),
    )


def marginal_tables(
    release: Any, columns: Sequence[Sequence[Hashable]], categories: Mapping[Any, Any]
) -> dict[Marginal, npt.NDArray[Any]]:
    """The flat output of :func:`make_marginals` (or a noisy release of it) as one array per table, shaped
    by the declared categories of its columns (axis ``i`` follows ``categories[columns[j][i]]``).

    Post-processing only: it reads the public ``columns`` and ``categories`` and reshapes.

    Args:
        release: the vector, of the length :func:`make_marginals` gives for these ``columns``.
        columns: the same ``columns`` as given to :func:`make_marginals`.
        categories: the same ``categories``.

    Raises:
        InvalidParameter: malformed ``columns`` or ``categories``, or a release of the wrong length.

    Examples:
        >>> import dpcompose as dp
        >>> tables = dp.t.marginal_tables([2, 1, 1, 1, 0, 1], [("a",), ("a", "b")],
        ...                               {"a": ["x", "y"], "b": [0, 1]})
        >>> tables[("a",)].tolist(), tables[("a", "b")].tolist()
        ([2, 1], [[1, 1], [0, 1]])
    """
    marginals = _check_columns(columns)
    domains = _check_categories(categories, {key for marginal in marginals for key in marginal})
    try:
        flat = np.asarray(release)
    except Exception as exc:
        raise InvalidParameter(f"release={_short(release)} cannot be read as a vector ({exc})") from None
    shapes = [_shape(marginal, domains) for marginal in marginals]
    total = sum(_cells(shape) for shape in shapes)
    if flat.ndim != 1 or flat.shape[0] != total:
        raise InvalidParameter(
            f"release has {flat.size} entries: the marginals {list(marginals)} have {total} cells"
        )
    out: dict[Marginal, npt.NDArray[Any]] = {}
    start = 0
    for marginal, shape in zip(marginals, shapes, strict=True):
        size = _cells(shape)
        out[marginal] = flat[start : start + size].reshape(shape)
        start += size
    return out
