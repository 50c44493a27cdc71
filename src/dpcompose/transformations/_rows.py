"""Row transformations: filter, map, impute, drop nulls, select a column, count distinct values.

Every transformation here is a function of each record alone (or, for the count, of the set of records),
so its stability follows from one observation per metric, proven in each docstring:

* ``SymmetricDistance`` (records added or removed, order ignored): a map ``f`` applied to every record
  sends the multisets ``x`` and ``x'`` to ``f(x)`` and ``f(x')``; every record they share maps to a
  shared output record, so ``|f(x) Δ f(x')| <= |x Δ x'|``. Keeping only the records a predicate accepts
  is the same argument with "maps to nothing" allowed.
* ``ChangeOneDistance`` (records changed, same size): pair the records of ``x`` and ``x'`` so that at
  most ``d`` pairs differ; a record-wise map keeps the pairing and the size, so at most ``d`` output pairs
  differ. A *filter* does not keep the size: a changed pair can leave one record kept on one side and
  none (or a different one) on the other. Changing a record is removing it and adding another, so
  ``d`` changes are at most ``2·d`` additions and removals, and the filter is 1-stable under those:
  ``ChangeOneDistance`` d_in becomes ``SymmetricDistance`` 2·d_in (tight: ``[a]`` and ``[b]``, both
  kept, are 2 apart).

User functions (predicates, maps) must be functions of the record alone — deterministic, with no state
shared between records — for these proofs to apply; the library cannot check that. They are called once
per record (a Python loop by nature); the rest is vectorised on numpy arrays where the records are
numbers. A record for which a user function raises (an ``Exception``) or answers outside the declared
contract is dropped or replaced by a declared default, never passed on as an exception: an exception
would be an output no stability map accounts for.

Representation. Records of ``AtomDomain(float)`` travel as a ``float64`` array, records of
``AtomDomain(int)`` with bounds inside the int64 range as an ``int64`` array, other int records as a
list of Python ``int``; everything else as a list. User functions see Python scalars (``float``/``int``)
for numeric records, whatever the caller passed (a list, an array, numpy scalars), so the output's type
and values never depend on the representation of the input.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose._validation import check_callable
from dpcompose._validation import short_repr as _short
from dpcompose.core import (
    AbsoluteDistance,
    AtomDomain,
    CategoricalDomain,
    ChangeOneDistance,
    Domain,
    Metric,
    Node,
    SymmetricDistance,
    Transformation,
    VectorDomain,
)
from dpcompose.core._metrics import check_space
from dpcompose.core._recipe import recorded
from dpcompose.errors import DomainMismatch, InvalidParameter
from dpcompose.transformations._clamp import check_dataset_metric

__all__ = [
    "make_count_distinct",
    "make_drop_null",
    "make_impute_constant",
    "make_map_rows",
    "make_select_column",
    "make_subset_by",
]

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def satisfies(predicate: Callable[[Any], Any], record: Any) -> bool:
    """Whether ``predicate(record)`` is true as Python's ``if`` reads it (``True``, ``numpy.True_``, ``1``, a
    non-empty string, …): the one rule for every user predicate (:func:`make_subset_by`,
    :func:`~dpcompose.transformations.make_workload`). ``False`` when the call or the truth test raises an
    ``Exception`` (``bool`` of a numpy array of several values raises): a record's own failure is "not
    satisfied", never an exception, so a transformation never raises on data in its domain."""
    try:
        return bool(predicate(record))
    except Exception:  # the record's own failure (or an answer without a truth value): not satisfied
        return False


def _name_of(function: object) -> str:
    """A stable label for a user function in ``explain`` output (no memory address)."""
    name = getattr(function, "__qualname__", None)
    return name if isinstance(name, str) else type(function).__name__


def _dataset_space(input_domain: Domain, input_metric: Metric) -> VectorDomain:
    """The checks every constructor here starts with; the input domain, typed."""
    check_space(input_domain, input_metric)
    check_dataset_metric(input_metric)
    if not isinstance(input_domain, VectorDomain):  # pragma: no cover - the dataset metrics refuse others
        raise DomainMismatch(f"input_domain={input_domain!r} must be a VectorDomain")
    return input_domain


def _array_dtype(element: Domain) -> type | None:
    """The numpy dtype that holds every member of ``element`` exactly, or None (a list is used)."""
    if isinstance(element, AtomDomain):
        if element.carrier is float:
            return np.float64
        if element.carrier is int and element.bounds is not None:
            lo, hi = element.bounds
            if lo >= _INT64_MIN and hi <= _INT64_MAX:
                return np.int64
    return None


def _rows(data: Any, element: Domain) -> list[Any]:
    """The records of an in-domain dataset as a list, numbers as Python scalars (see the module doc)."""
    dtype = _array_dtype(element)
    if dtype is not None:
        return np.asarray(data, dtype=dtype).tolist()  # type: ignore[no-any-return]
    rows = data.tolist() if isinstance(data, np.ndarray) else list(data)
    if isinstance(element, AtomDomain) and element.carrier is int:
        return [int(v) for v in rows]
    return rows


def _pack(values: list[Any], element: Domain) -> Any:
    """A dataset of canonical members of ``element`` in its representation (see the module doc)."""
    dtype = _array_dtype(element)
    if dtype is not None:
        return np.asarray(values, dtype=dtype)
    return values


def _canonical(value: Any, element: Domain) -> Any:
    """The value a member is output as: a Python ``float``/``int`` for numeric atoms, the domain's own
    category object for a ``CategoricalDomain``; other values unchanged."""
    if isinstance(element, AtomDomain) and element.carrier in (int, float):
        if isinstance(value, np.generic):
            value = value.item()
        return element.carrier(value)
    if isinstance(element, CategoricalDomain):
        return element.categories[element.index(value)]
    return value


def _member(domain: Domain, value: Any) -> bool:
    """``domain.member(value)``, with any failure (a user object's odd comparison) counted as "no"."""
    try:
        return domain.member(value) is True
    except Exception:
        return False


def _check_default(default: object, domain: Domain, name: str, domain_name: str) -> Any:
    """The canonical form of a declared default, which must be a member of ``domain``."""
    if _member(domain, default):
        try:
            value = _canonical(default, domain)
        except Exception:
            value = _OTHER  # not a member of any domain
        if _member(domain, value):
            return value
    raise InvalidParameter(
        f"{name}={_short(default)} must be a member of {domain_name}={domain!r}: it replaces the records "
        "that cannot be computed"
    )


def _float_member(element: Domain) -> Callable[[float], bool] | None:
    """For ``AtomDomain(float)``: membership of a Python ``float``, inlined (as ``AtomDomain.member``)."""
    if not (isinstance(element, AtomDomain) and element.carrier is float):
        return None
    nan = element.nan
    if element.bounds is None:
        return lambda v: -math.inf < v < math.inf or (nan and v != v)
    lo, hi = element.bounds
    return lambda v: lo <= v <= hi or (nan and v != v)


def _safe_map(function: Callable[[Any], Any], element: Domain, default: Any) -> Callable[[Any], Any]:
    """``function`` made total: its result as a canonical member of ``element``, else ``default``."""

    float_member = _float_member(element)

    def apply(row: Any) -> Any:
        try:
            value = function(row)
            if float_member is not None and type(value) is float:  # the common case, without the calls
                return value if float_member(value) else default
            if not _member(element, value):
                return default
            value = _canonical(value, element)
            return value if _member(element, value) else default  # the value output is the one checked
        except Exception:  # the record's own failure: replaced, never raised
            return default

    return apply


@recorded
def make_subset_by(
    input_domain: Domain, input_metric: Metric, predicate: Callable[[Any], Any]
) -> Transformation[Any, Any, int, int]:
    """Keep the records for which ``predicate(record)`` is true.

    A record is kept when the predicate's answer is true as Python's ``if`` reads it (``True``,
    ``numpy.True_``, ``1``; :func:`satisfies`); a record for which the predicate or the truth test of its
    answer raises an ``Exception``, or whose answer is false (``False``, ``0``, ``None``, ``""``), is
    dropped. Dropping is decided by the record alone, so it never raises on data in the input domain.
    The predicate is called once per record, on Python scalars for numeric records; the selection itself
    is a numpy mask. It must be a deterministic function of the record alone.

    Stability:
        ``SymmetricDistance`` d_in → ``SymmetricDistance`` d_in: the records ``x`` and ``x'`` share are
        kept or dropped alike, so the kept multisets differ at most in the records in ``x Δ x'``.

        ``ChangeOneDistance`` d_in → ``SymmetricDistance`` 2·d_in: the output sizes differ (one side of a
        changed pair may be kept, the other not), so the output metric counts additions and removals.
        Changing d records is removing d and adding d, which the filter maps to at most 2·d additions
        and removals. Tight: ``[a]`` and ``[b]``, both kept, are 2 apart.

    The output has no fixed size (which records are kept depends on the data).

    Args:
        input_domain: a ``VectorDomain`` of records.
        input_metric: ``SymmetricDistance()`` or ``ChangeOneDistance()``.
        predicate: a function of one record returning a true value (``True``) to keep it.

    Source: McSherry 2009 (PINQ, §4 "Where": a filter is 1-stable under add/remove); a change is one
    removal and one addition.

    Examples:
        >>> import dpcompose as dp
        >>> floats = dp.VectorDomain(dp.AtomDomain(float, nan=True))
        >>> adults = dp.t.make_subset_by(floats, dp.SymmetricDistance(), lambda age: age >= 18)
        >>> adults([12.0, 30.0, float("nan"), 45.0]).tolist()
        [30.0, 45.0]
        >>> adults.map(1)
        1
        >>> changed = dp.t.make_subset_by(floats, dp.ChangeOneDistance(), lambda age: age >= 18)
        >>> changed.output_metric, changed.map(1)
        (SymmetricDistance(), 2)
    """
    domain = _dataset_space(input_domain, input_metric)
    check_callable(predicate, "predicate")
    element = domain.element_domain
    dtype = _array_dtype(element)
    factor = 2 if isinstance(input_metric, ChangeOneDistance) else 1

    def run(data: Any) -> Any:
        if dtype is not None:
            values: np.ndarray[Any, Any] = np.asarray(data, dtype=dtype)
            mask = np.fromiter(
                (satisfies(predicate, v) for v in values.tolist()), dtype=bool, count=values.size
            )
            return values[mask]
        return [row for row in _rows(data, element) if satisfies(predicate, row)]

    return Transformation(
        domain,
        VectorDomain(element),
        input_metric,
        SymmetricDistance(),
        run,
        lambda d_in: factor * d_in,
        node=Node(
            "subset_by",
            params=(("predicate", _name_of(predicate)),),
            source="McSherry 2009 §4 (filter, 1-stable); change = removal + addition",
        ),
    )


@recorded
def make_map_rows(
    input_domain: Domain,
    input_metric: Metric,
    function: Callable[[Any], Any],
    output_domain: Domain,
    default: Any,
) -> Transformation[Any, Any, int, int]:
    """Replace each record ``r`` by ``function(r)``, checked against ``output_domain`` (one record's domain).

    A record for which ``function`` raises an ``Exception`` or returns a value outside ``output_domain``
    becomes ``default``, declared up front and checked to be a member of ``output_domain`` when the
    transformation is built; so every output record is in ``output_domain`` and in-domain data never
    make it raise. Numeric outputs are stored as Python/numpy numbers of the domain's type (an int
    ``2`` in a float domain becomes ``2.0``), and that stored value is the one checked. ``function`` is
    called once per record (on Python scalars for numeric records) and must be a deterministic function
    of the record alone.

    Stability: d_in → d_in under ``SymmetricDistance`` and under ``ChangeOneDistance`` (the output has as
    many records as the input): a record-wise map sends shared records to shared records, and a
    pairing of ``x`` with ``x'`` in which at most d pairs differ to one of the outputs with at most d.

    Args:
        input_domain: a ``VectorDomain`` of records.
        input_metric: ``SymmetricDistance()`` or ``ChangeOneDistance()``.
        function: a function of one record.
        output_domain: the domain of one output record (e.g. ``AtomDomain(float, bounds=(0.0, 1.0))``).
        default: the record output where ``function`` fails; a member of ``output_domain``.

    Source: McSherry 2009 (PINQ, §4 "Select": a record-wise map is 1-stable).

    Examples:
        >>> import dpcompose as dp
        >>> words = dp.VectorDomain(dp.AtomDomain(str))
        >>> lengths = dp.t.make_map_rows(
        ...     words, dp.SymmetricDistance(), len, dp.AtomDomain(int, bounds=(0, 5)), default=5
        ... )
        >>> lengths(["a", "four", "elephant"]).tolist()  # "elephant" leaves the domain: the default
        [1, 4, 5]
        >>> lengths.output_domain, lengths.map(3)
        (VectorDomain(AtomDomain(int, bounds=(0, 5))), 3)
    """
    domain = _dataset_space(input_domain, input_metric)
    check_callable(function, "function")
    if not isinstance(output_domain, Domain):
        raise InvalidParameter(f"output_domain={_short(output_domain)} must be a Domain (one record's)")
    fallback = _check_default(default, output_domain, "default", "output_domain")
    return _record_map(
        domain,
        input_metric,
        _safe_map(function, output_domain, fallback),
        output_domain,
        Node(
            "map_rows",
            params=(("function", _name_of(function)), ("default", _short(fallback))),
            source="McSherry 2009 §4 (record-wise map, 1-stable)",
        ),
    )


def _record_map(
    domain: VectorDomain, metric: Metric, apply: Callable[[Any], Any], element: Domain, node: Node
) -> Transformation[Any, Any, int, int]:
    source = domain.element_domain

    def run(data: Any) -> Any:
        return _pack([apply(row) for row in _rows(data, source)], element)

    return Transformation(
        domain, VectorDomain(element, size=domain.size), metric, metric, run, lambda d_in: d_in, node=node
    )


def _check_key(key: object) -> Hashable:
    """A column key: hashable, equal to itself, not a bool; numpy scalars read as Python ones."""
    if isinstance(key, (bool, np.bool_)):
        raise InvalidParameter(f"key={key!r} must be a column position or name, not a bool")
    if isinstance(key, np.generic):
        key = key.item()
    try:
        hash(key)
        reflexive = (key == key) is True
    except Exception:
        reflexive = False
    if not reflexive:
        raise InvalidParameter(
            f"key={_short(key)} must be a column position (int) or a hashable name equal to itself"
        )
    return key


@recorded
def make_select_column(
    input_domain: Domain, input_metric: Metric, key: Hashable, column_domain: Domain, default: Any
) -> Transformation[Any, Any, int, int]:
    """The column ``key`` of each record: ``record[key]`` for a mapping, the position ``key`` of a tuple or
    list (a ``str`` key also reads a namedtuple's field).

    A record without that column (a missing key, a position past its end, a record that is neither a
    mapping nor a tuple or list), or whose value is not in ``column_domain``, gives ``default`` —
    declared up front and checked to be a member of ``column_domain`` — never an exception. Numeric
    columns are output as numpy arrays (see the module docstring).

    Stability: d_in → d_in under ``SymmetricDistance`` and ``ChangeOneDistance``: it is a record-wise map
    (see :func:`make_map_rows`).

    Args:
        input_domain: a ``VectorDomain`` of records (e.g. ``AtomDomain(tuple)`` or ``AtomDomain(dict)``).
        input_metric: ``SymmetricDistance()`` or ``ChangeOneDistance()``.
        key: a column position (int; negative counts from the end) or a mapping key / field name.
        column_domain: the domain of one value of the column.
        default: the value output for a record without a valid value; a member of ``column_domain``.

    Source: McSherry 2009 (PINQ, §4 "Select": a record-wise map is 1-stable).

    Examples:
        >>> import dpcompose as dp
        >>> people = dp.VectorDomain(dp.AtomDomain(dict))
        >>> age = dp.t.make_select_column(
        ...     people, dp.SymmetricDistance(), "age", dp.AtomDomain(float, bounds=(0.0, 120.0)), default=0.0
        ... )
        >>> age([{"age": 31}, {"name": "no age"}, {"age": 999.0}]).tolist()
        [31.0, 0.0, 0.0]
        >>> age.map(1)
        1
    """
    domain = _dataset_space(input_domain, input_metric)
    column = _check_key(key)
    if not isinstance(column_domain, Domain):
        raise InvalidParameter(f"column_domain={_short(column_domain)} must be a Domain (one value's)")
    fallback = _check_default(default, column_domain, "default", "column_domain")
    position = column if isinstance(column, int) else None

    def get(record: Any) -> Any:
        if isinstance(record, Mapping):
            return record[column]
        if isinstance(record, (tuple, list)):
            if position is not None:
                return record[position]
            fields = getattr(type(record), "_fields", None)
            if isinstance(fields, tuple) and column in fields:  # a namedtuple's field name
                return record[fields.index(column)]
        raise LookupError(column)

    return _record_map(
        domain,
        input_metric,
        _safe_map(get, column_domain, fallback),
        column_domain,
        Node(
            "select_column",
            params=(("key", _short(column)), ("default", _short(fallback))),
            source="McSherry 2009 §4 (record-wise map, 1-stable)",
        ),
    )


def _float_element(domain: VectorDomain, name: str) -> AtomDomain:
    element = domain.element_domain
    if not (isinstance(element, AtomDomain) and element.carrier is float):
        raise DomainMismatch(
            f"{name} needs float records, the only atoms with a null (NaN), not input_domain={domain!r}; "
            "for records with missing fields use make_select_column (a declared default) or make_subset_by"
        )
    return element


@recorded
def make_impute_constant(
    input_domain: Domain, input_metric: Metric, constant: Any
) -> Transformation[Any, Any, int, int]:
    """Replace every NaN record by ``constant``; the output domain has ``nan=False``.

    NaN is the only null a float atom can hold (``AtomDomain`` admits no ``None``: a record ``None`` is
    outside every numeric domain, so it cannot reach this transformation). Vectorised (``numpy.where``).

    Stability: d_in → d_in under ``SymmetricDistance`` and ``ChangeOneDistance``: a record-wise map
    (see :func:`make_map_rows`).

    Args:
        input_domain: ``VectorDomain(AtomDomain(float, nan=True))``, optionally with bounds and a size.
        input_metric: ``SymmetricDistance()`` or ``ChangeOneDistance()``.
        constant: the value for missing records; a member of the output element domain (a finite float,
            inside the bounds if there are any).

    Source: McSherry 2009 (PINQ, §4 "Select": a record-wise map is 1-stable).

    Examples:
        >>> import dpcompose as dp
        >>> raw = dp.VectorDomain(dp.AtomDomain(float, bounds=(0.0, 10.0), nan=True))
        >>> impute = dp.t.make_impute_constant(raw, dp.SymmetricDistance(), 5.0)
        >>> impute([1.0, float("nan"), 3.0]).tolist()
        [1.0, 5.0, 3.0]
        >>> impute.output_domain
        VectorDomain(AtomDomain(float, bounds=(0.0, 10.0)))
    """
    domain = _dataset_space(input_domain, input_metric)
    element = _float_element(domain, "make_impute_constant")
    output = AtomDomain(float, bounds=element.bounds)
    value = _check_default(constant, output, "constant", "the output records' domain")

    def run(data: Any) -> Any:
        values = np.asarray(data, dtype=np.float64)
        return np.where(np.isnan(values), value, values)

    return Transformation(
        domain,
        VectorDomain(output, size=domain.size),
        input_metric,
        input_metric,
        run,
        lambda d_in: d_in,
        node=Node(
            "impute_constant",
            params=(("constant", repr(value)),),
            source="McSherry 2009 §4 (record-wise map, 1-stable)",
        ),
    )


@recorded
def make_drop_null(input_domain: Domain, input_metric: Metric) -> Transformation[Any, Any, int, int]:
    """Drop the NaN records; the output domain has ``nan=False`` and no fixed size.

    NaN is the only null a float atom can hold (see :func:`make_impute_constant`). Vectorised (a numpy
    mask).

    Stability: as :func:`make_subset_by` with the predicate "is not NaN": ``SymmetricDistance`` d_in →
    ``SymmetricDistance`` d_in; ``ChangeOneDistance`` d_in → ``SymmetricDistance`` 2·d_in (changing a
    NaN into a number adds a record to the output, and a number into another number removes one and adds
    one).

    Args:
        input_domain: ``VectorDomain(AtomDomain(float, nan=True))``, optionally with bounds.
        input_metric: ``SymmetricDistance()`` or ``ChangeOneDistance()``.

    Source: McSherry 2009 (PINQ, §4 "Where": a filter is 1-stable under add/remove); a change is one
    removal and one addition.

    Examples:
        >>> import dpcompose as dp
        >>> raw = dp.VectorDomain(dp.AtomDomain(float, nan=True), size=3)
        >>> drop = dp.t.make_drop_null(raw, dp.ChangeOneDistance())
        >>> drop([1.0, float("nan"), 3.0]).tolist()
        [1.0, 3.0]
        >>> drop.output_domain, drop.output_metric, drop.map(1)
        (VectorDomain(AtomDomain(float)), SymmetricDistance(), 2)
    """
    domain = _dataset_space(input_domain, input_metric)
    element = _float_element(domain, "make_drop_null")
    factor = 2 if isinstance(input_metric, ChangeOneDistance) else 1

    def run(data: Any) -> Any:
        values = np.asarray(data, dtype=np.float64)
        return values[~np.isnan(values)]

    return Transformation(
        domain,
        VectorDomain(AtomDomain(float, bounds=element.bounds)),
        input_metric,
        SymmetricDistance(),
        run,
        lambda d_in: factor * d_in,
        node=Node("drop_null", source="McSherry 2009 §4 (filter, 1-stable); change = removal + addition"),
    )


class _Token:
    """A key that equals only itself: all NaNs, and all values of types without a trusted equality."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}>"


_NAN = _Token("nan")
_OTHER = _Token("other")


def _key(value: Any) -> Hashable:
    """A hashable key with a true equivalence (reflexive, symmetric, transitive), so that the distinct
    count is a count of classes.

    Numbers compare by exact value across ``int``, ``float``, ``Fraction`` and ``Decimal`` (as Python
    does; ``0.0 == -0.0``), every NaN is one value, bools are kept apart from 1 and 0, strings and bytes
    as themselves, tuples/lists/sets/dicts by their parts; any other type (or a subclass, whose ``==``
    could be anything) is the single value "other". Never raises.
    """
    try:
        return _key_of(value)
    except Exception:  # a recursion limit, an odd container: one class
        return _OTHER


def _key_of(value: Any) -> Hashable:
    kind = type(value)
    if kind is str or kind is bytes or kind is int or kind is Fraction or value is None:
        return value  # type: ignore[no-any-return]
    if kind is float:
        return _NAN if value != value else value
    if kind is bool or kind is np.bool_:
        return ("bool", bool(value))
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):  # float64 included (a float subclass): read exactly
        if np.isnan(value):
            return _NAN
        if np.isinf(value):
            return float(value)
        numerator, denominator = value.as_integer_ratio()
        return Fraction(numerator, denominator)
    if kind is np.str_:
        return str(value)
    if kind is np.bytes_:
        return bytes(value)
    if kind is Decimal:
        return _NAN if value.is_nan() else value
    if kind is complex:
        return ("complex", _key_of(value.real), _key_of(value.imag))
    if kind is tuple:
        return ("tuple", tuple(_key_of(v) for v in value))
    if kind is list:
        return ("list", tuple(_key_of(v) for v in value))
    if kind is frozenset or kind is set:
        return ("set", frozenset(_key_of(v) for v in value))
    if kind is dict:
        return ("dict", frozenset((_key_of(k), _key_of(v)) for k, v in value.items()))
    return _OTHER


@recorded
def make_count_distinct(
    input_domain: Domain, input_metric: Metric
) -> Transformation[Any, int, int, Fraction]:
    """The number of distinct records, as an ``int`` under ``AbsoluteDistance``.

    Distinct means unequal by value: numbers compare exactly across ``int``/``float``/``Fraction``
    (``1 == 1.0``, ``0.0 == -0.0``), all NaNs count as one value, ``True`` is not ``1``, tuples, lists,
    sets and dicts compare by their parts; records of any other type count together as one value (their
    own ``==`` is not trusted: an equality that is not transitive would break the bound below). Records
    of a ``CategoricalDomain`` compare as categories. Vectorised (``numpy.unique``) for numeric records.

    Stability: ``|count(x) − count(x')| <= d_in`` under both metrics. Adding a record adds at most one new
    value, removing one removes at most one value (the count is the number of classes of an equivalence);
    changing a record removes one and adds one, so the count moves by −1, 0 or +1 — not 2, since a
    change that removes a value can only add one back. Summing over d steps gives d.

    Args:
        input_domain: a ``VectorDomain`` of records.
        input_metric: ``SymmetricDistance()`` or ``ChangeOneDistance()``.

    Source: each record contributes to one class (Dwork–Roth 2014 §3.3, sensitivity of a function that
    one record moves by at most 1); the change-one bound is a removal followed by an addition.

    Examples:
        >>> import dpcompose as dp
        >>> words = dp.VectorDomain(dp.AtomDomain(str))
        >>> distinct = dp.t.make_count_distinct(words, dp.ChangeOneDistance())
        >>> distinct(["a", "b", "a", "c"]), distinct.map(1)
        (3, Fraction(1, 1))
    """
    domain = _dataset_space(input_domain, input_metric)
    element = domain.element_domain
    dtype = _array_dtype(element)

    def run(data: Any) -> int:
        if dtype is not None:
            return int(np.unique(np.asarray(data, dtype=dtype)).size)  # NaNs are one value
        if isinstance(element, CategoricalDomain):
            return len({element.index(v) for v in data})  # members: index never fails
        return len({_key(v) for v in _rows(data, element)})

    return Transformation(
        domain,
        AtomDomain(int),
        input_metric,
        AbsoluteDistance(),
        run,
        lambda d_in: Fraction(d_in),
        node=Node("count_distinct", source="Dwork–Roth 2014 §3.3; change = removal + addition"),
    )
