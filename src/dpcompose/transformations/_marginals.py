"""Marginals (contingency tables) over chosen columns of categorical records, as one flat count vector."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
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
from dpcompose.transformations._workload import L1_DEFAULT, MAX_CELLS, check_output_metric

__all__ = ["make_category_codes", "make_marginal_errors", "make_marginals", "marginal_tables"]

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
            raise InvalidParameter(
                f"categories has no entry for column {key!r}, which columns names: declare its categories "
                "or take it out of columns"
            )
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


def _is_int_matrix(data: Any) -> bool:
    return isinstance(data, np.ndarray) and data.ndim == 2 and data.dtype.kind in "iu" and data.shape[1] > 0


def _int_matrix_codes(
    data: npt.NDArray[Any], coders: Mapping[Hashable, _ColumnCoder]
) -> dict[Hashable, npt.NDArray[np.intp]] | None:
    """The codes of a 2-d integer array's rows, vectorised, exactly as the per-record path codes
    ``data.tolist()`` (rows of Python ints: an int key is a position, negative ones from the end; only
    categories of type ``int`` can match); ``None`` when a key is not an int."""
    if not all(isinstance(key, int) for key in coders) or (
        data.dtype.kind == "u" and data.dtype.itemsize >= 8
    ):
        return None
    width = data.shape[1]
    out: dict[Hashable, npt.NDArray[np.intp]] = {}
    for key, coder in coders.items():
        assert isinstance(key, int)
        codes = np.full(data.shape[0], -1, dtype=np.intp)
        pairs = sorted(
            (c, i) for i, c in enumerate(coder.domain.categories) if type(c) is int and -(2**63) <= c < 2**63
        )
        if pairs and -width <= key < width:
            values = data[:, key].astype(np.int64)
            cats = np.array([c for c, _ in pairs], dtype=np.int64)
            positions = np.array([i for _, i in pairs], dtype=np.intp)
            where = np.minimum(np.searchsorted(cats, values), len(pairs) - 1)
            hit = cats[where] == values
            codes[hit] = positions[where[hit]]
        out[key] = codes
    return out


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
        codes = _int_matrix_codes(data, self.coders) if _is_int_matrix(data) else None
        if codes is None:
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


def _check_records(input_domain: Domain, input_metric: Metric, what: str) -> None:
    """Refuse a dataset metric or space that is not one of records with columns (``what`` names the
    constructor's output in the message)."""
    check_dataset_metric(input_metric)
    check_space(input_domain, input_metric)
    assert isinstance(input_domain, VectorDomain)  # (check_space: a dataset metric's space)
    element = input_domain.element_domain
    if isinstance(element, AtomDomain) and element.carrier in (int, float, str, bool, bytes):
        raise DomainMismatch(
            f"input_domain={input_domain!r}: {what} need records with columns (tuples, lists or dicts), "
            "e.g. VectorDomain(AtomDomain(dict))"
        )


def _checked_tables(
    input_domain: Domain, input_metric: Metric, columns: Any, categories: Any
) -> tuple[tuple[Marginal, ...], dict[Hashable, CategoricalDomain], list[tuple[int, ...]], list[int]]:
    """The checked records, tables (``columns``), per-key categories, table shapes and cell counts that
    :func:`make_marginals` and :func:`make_marginal_errors` share."""
    _check_records(input_domain, input_metric, "marginals")
    marginals = _check_columns(columns)
    domains = _check_categories(categories, {key for marginal in marginals for key in marginal})
    shapes = [_shape(marginal, domains) for marginal in marginals]
    sizes = [_cells(shape) for shape in shapes]
    if sum(sizes) > MAX_CELLS:
        raise InvalidParameter(f"columns: the marginals have {sum(sizes)} cells: at most 2**22 are supported")
    return marginals, domains, shapes, sizes


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
    out_metric = check_output_metric(metric)
    marginals, domains, shapes, sizes = _checked_tables(input_domain, input_metric, columns, categories)
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
            return sqrt_up_dyadic(d_in * d_in * per, 64)
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


def _check_ints(values: object, name: str, count: int, low: int, high: int) -> list[int]:
    if (
        isinstance(values, (str, bytes, Mapping))
        or not isinstance(values, (Sequence, np.ndarray))
        or (isinstance(values, np.ndarray) and values.ndim != 1)
    ):
        raise InvalidParameter(f"{name}={_short(values)} must be a list of {count} integers")
    out = values.tolist() if isinstance(values, np.ndarray) else list(values)
    if len(out) != count or not all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in out
    ):
        raise InvalidParameter(
            f"{name}={_short(values)} must be a list of {count} integers (one per marginal)"
        )
    ints = [int(v) for v in out]
    for v in ints:
        if not low <= v <= high:
            raise InvalidParameter(f"{name} holds {v}: each must be in [{low}, {high}]")
    return ints


_REF_BOUND = 1 << 53
"""A reference cell is an integer within ±2**53 (a rounded float estimate)."""


@recorded
def make_marginal_errors(
    input_domain: Domain,
    input_metric: Metric,
    columns: Sequence[Sequence[Hashable]],
    categories: Mapping[Any, Any],
    reference: Sequence[Any],
    *,
    weights: Sequence[int] | None = None,
    offsets: Sequence[int] | None = None,
) -> Transformation[Any, Counts, int, int]:
    """How badly a public estimate answers each marginal: ``sᵢ = wᵢ·‖Mᵢ(x) − refᵢ‖₁ − oᵢ`` for each table
    ``i`` of ``columns``, as an int64 vector — the score vector of AIM's and MST's marginal selection.

    ``Mᵢ(x)`` is table ``i`` of :func:`make_marginals` (the same cells, the same treatment of missing or
    undeclared values), ``refᵢ`` a public integer table of the same shape (e.g. a model's estimate of that
    marginal, rounded), ``wᵢ >= 1`` a public integer weight and ``oᵢ`` a public integer offset (AIM's
    penalty for the noise a measurement of that table would add). The arithmetic is exact (Python
    integers); a score beyond the int64 range is saturated to it.

    Stability in ``LInfDistance()`` (not monotonic: an error can move either way), with ``d = d_in``:
    ``SymmetricDistance``: a record added or removed moves one cell of each table by one, so by the
    triangle inequality each ``‖Mᵢ(x) − refᵢ‖₁`` moves by at most 1 and ``sᵢ`` by at most ``wᵢ``: the map is
    ``d·maxᵢ wᵢ``. ``ChangeOneDistance``: a change moves table ``i`` by at most ``cᵢ`` in L1 (``cᵢ = 2`` for a
    table of two or more cells, 1 for a one-cell table, as in :func:`make_marginals`): ``d·maxᵢ wᵢcᵢ``.
    Subtracting a constant and saturating are 1-Lipschitz and add nothing.

    Args:
        input_domain: a ``VectorDomain`` of records, as for :func:`make_marginals`.
        input_metric: ``SymmetricDistance()`` or ``ChangeOneDistance()``.
        columns: the candidate tables, as for :func:`make_marginals`.
        categories: each column's declared categories, as for :func:`make_marginals`.
        reference: one public integer array per table, of the table's shape or flat (each cell within
            ±2**53).
        weights: one integer in [1, 2**20] per table (default all 1).
        offsets: one integer within ±2**62 per table (default all 0).

    Raises:
        DomainMismatch: as :func:`make_marginals`.
        InvalidParameter: as :func:`make_marginals`; a reference of the wrong length or shape or with
            non-integer cells; weights or offsets malformed or out of range.

    Source: McKenna–Mullins–Sheldon–Miklau 2022 (AIM, Alg. 1: the score ``wᵣ(‖Mᵣ(D) − Mᵣ(p̂)‖₁ −
    √(2/π)·σ·nᵣ)``) and McKenna–Miklau–Sheldon 2021 (MST: the L1 error of a pair); the bound is proven
    above.

    Examples:
        >>> import dpcompose as dp
        >>> rows = dp.VectorDomain(dp.AtomDomain(dict))
        >>> cats = {"sex": ["f", "m"], "smoker": [False, True]}
        >>> guess = [[1, 1], [[0, 1], [1, 0]]]          # a public estimate of each table
        >>> err = dp.t.make_marginal_errors(rows, dp.SymmetricDistance(), [("sex",), ("sex", "smoker")],
        ...                                 cats, guess, weights=[1, 3], offsets=[0, 1])
        >>> data = [{"sex": "f", "smoker": True}, {"sex": "f", "smoker": False}]
        >>> err(data).tolist(), err.map(1)
        ([2, 5], 3)
    """
    marginals, domains, shapes, sizes = _checked_tables(input_domain, input_metric, columns, categories)
    t = len(marginals)
    if (
        isinstance(reference, (str, bytes, Mapping))
        or not isinstance(reference, (Sequence, np.ndarray))
        or (isinstance(reference, np.ndarray) and reference.ndim == 0)
    ):
        raise InvalidParameter(f"reference={_short(reference)} must be a list of {t} integer tables")
    if len(reference) != t:
        raise InvalidParameter(
            f"reference has {len(reference)} tables: columns names {t} tables, one reference each"
        )
    refs: list[Counts] = []
    for i, (table, size) in enumerate(zip(reference, sizes, strict=True)):
        try:
            arr = np.asarray(table)
        except Exception as exc:
            raise InvalidParameter(f"reference[{i}] cannot be read as an array ({exc})") from None
        if arr.dtype.kind not in "iu" or arr.size != size or (arr.ndim != 1 and arr.shape != shapes[i]):
            raise InvalidParameter(
                f"reference[{i}] must be an integer array of shape {shapes[i]} (or {size} flat cells); got "
                f"dtype {arr.dtype} and shape {arr.shape} (round a float estimate first)"
            )
        flat = arr.reshape(-1)
        if flat.size and (int(flat.min()) < -_REF_BOUND or int(flat.max()) > _REF_BOUND):
            raise InvalidParameter(f"reference[{i}] has a cell beyond ±2**53")
        refs.append(flat.astype(np.int64))
    w = [1] * t if weights is None else _check_ints(weights, "weights", t, 1, 1 << 20)
    o = [0] * t if offsets is None else _check_ints(offsets, "offsets", t, -(1 << 62), 1 << 62)
    moves = (
        [2 if size >= 2 else 1 for size in sizes] if isinstance(input_metric, ChangeOneDistance) else [1] * t
    )
    per = max(wi * ci for wi, ci in zip(w, moves, strict=True))
    counter = _TableCounter(marginals, domains, shapes)

    def run(data: Any) -> Counts:
        out = []
        for counts, ref, wi, oi in zip(counter.tables(data), refs, w, o, strict=True):
            # |count − ref| < 2**63 (count ≤ 2**62 records, |ref| ≤ 2**53); the sum in Python integers
            error = sum(np.abs(counts - ref).tolist())
            out.append(max(-INT64_MAX, min(wi * error - oi, INT64_MAX)))
        return np.array(out, dtype=np.int64)

    return Transformation(
        input_domain,
        VectorDomain(AtomDomain(int), size=t),
        input_metric,
        LInfDistance(),
        run,
        lambda d_in: d_in * per,
        node=Node(
            "marginal_errors",
            params=(("columns", _short(list(marginals))), ("max_weight", str(max(w)))),
            source="McKenna et al. 2022 (AIM Alg. 1 score); 1-Lipschitz per table as proven",
        ),
    )


@recorded
def make_category_codes(
    input_domain: Domain, input_metric: Metric, categories: Mapping[Any, Any]
) -> Transformation[Any, npt.NDArray[np.int64], int, int]:
    """Each record's category position in each declared column, as one ``(n, d)`` int64 array: column
    ``j`` of the array is the column ``list(categories)[j]``, its entry the value's index among that
    column's declared categories, or -1 when the value is missing or undeclared (compared exactly, as
    :func:`make_marginals` does). Marginals of the codes (``categories = {j: range(nⱼ)}``) equal the
    marginals of the records, and are counted vectorised.

    Stability: a row-by-row map (each record gives one row, the same for equal records): ``d_in → d_in``
    under ``SymmetricDistance`` and ``ChangeOneDistance``.

    Args:
        input_domain: a ``VectorDomain`` of records, as for :func:`make_marginals`.
        input_metric: ``SymmetricDistance()`` or ``ChangeOneDistance()``.
        categories: each column's declared categories (a dict; its key order is the columns' order).

    Raises:
        DomainMismatch: as :func:`make_marginals`.
        InvalidParameter: as :func:`make_marginals` for the categories.

    Source: Dwork–Roth 2014 §3.3 (a row map is 1-stable); the codes as in McKenna et al. 2021 (MST).

    Examples:
        >>> import dpcompose as dp
        >>> rows = dp.VectorDomain(dp.AtomDomain(dict))
        >>> codes = dp.t.make_category_codes(rows, dp.SymmetricDistance(), {"sex": ["f", "m"], "n": [0, 1]})
        >>> codes([{"sex": "m", "n": 1}, {"sex": "x", "n": 0}]).tolist(), codes.map(1)
        ([[1, 1], [-1, 0]], 1)
    """
    _check_records(input_domain, input_metric, "codes")
    if not isinstance(categories, Mapping) or not categories:
        raise InvalidParameter(
            f"categories={_short(categories)} must be a non-empty dict from each column key to its declared "
            "categories"
        )
    keys = [_check_key(key, "categories") for key in categories]
    domains = _check_categories(categories, set(keys))
    coders = [_ColumnCoder(domains[key], key) for key in keys]
    width = len(keys)

    def run(data: Any) -> npt.NDArray[np.int64]:
        values = data.tolist() if isinstance(data, np.ndarray) else data
        if not len(values):
            return np.zeros((0, width), dtype=np.int64)
        return np.stack([np.fromiter(map(c.code, values), dtype=np.int64) for c in coders], axis=1)

    return Transformation(
        input_domain,
        VectorDomain(VectorDomain(AtomDomain(int), size=width)),
        input_metric,
        input_metric,
        run,
        lambda d_in: d_in,
        node=Node(
            "category_codes", params=(("columns", _short(keys)),), source="Dwork–Roth 2014 §3.3 (row map)"
        ),
    )
