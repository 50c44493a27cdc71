"""Metrics: how far apart two inputs are. A distance ``d_in`` is a plain number.

Dataset metrics (:class:`SymmetricDistance`, :class:`ChangeOneDistance`, :class:`DiscreteDistance`)
count records, so their distances are non-negative integers; :class:`SymmetricIdDistance` counts
identifiers (people), each of whom may own several records. Numeric metrics (:class:`AbsoluteDistance`,
:class:`L1Distance`, :class:`L2Distance`, :class:`LInfDistance`) measure sensitivities, which are exact
rationals here: a float the user states as ``d_in`` is read as the larger of its binary value and the
decimal it prints as, so neither reading can under-report.

Examples:
    >>> import dpcompose as dp
    >>> dp.SymmetricDistance().validate(2)
    2
    >>> dp.L1Distance().validate(0.1)
    Fraction(3602879701896397, 36028797018963968)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose._validation import check_finite_nonnegative, read_real
from dpcompose.accounting import decimal, exact
from dpcompose.core._domains import (
    AtomDomain,
    CategoricalDomain,
    Domain,
    MapDomain,
    TableDomain,
    VectorDomain,
)
from dpcompose.errors import DomainMismatch, InvalidParameter

__all__ = [
    "AbsoluteDistance",
    "ChangeOneDistance",
    "DiscreteDistance",
    "L01InfDistance",
    "L1Distance",
    "L2Distance",
    "LInfDistance",
    "Metric",
    "PartitionDistance",
    "SymmetricDistance",
    "SymmetricIdDistance",
    "check_space",
    "even_below",
    "read_d_in",
    "refuse_identifier_metric",
    "refuse_odd_sized",
    "refuse_table_domain",
    "sized_symmetric",
]


class Metric:
    """Base of all metrics. A metric validates distances and says which domains it measures."""

    __slots__ = ()

    def validate(self, d: object, name: str = "d_in") -> Any:  # pragma: no cover - abstract
        """Check a distance and return it in canonical exact form."""
        raise NotImplementedError

    def check_domain(self, domain: Domain, name: str = "input_domain") -> None:  # pragma: no cover
        """Raise :class:`DomainMismatch` (naming the parameter ``name``) if this metric cannot measure
        distances on ``domain``."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def check_space(
    domain: object,
    metric: object,
    domain_name: str = "input_domain",
    metric_name: str = "input_metric",
    *,
    allow_identifiers: bool = False,
    allow_tables: bool = False,
) -> None:
    """The one check of a (domain, metric) pair a constructor receives: ``domain`` is a :class:`Domain`,
    ``metric`` a :class:`Metric` that measures it; :class:`DomainMismatch` naming the parameter otherwise.

    A user-level metric (:class:`SymmetricIdDistance`) is refused unless ``allow_identifiers`` is true,
    with a message that names ``make_bound_contributions``: a constructor whose map counts records must
    not receive a distance that counts people. Only the constructors that are generic over the metric
    (``Transformation``/``Measurement`` records, accountants, ``make_bound_contributions``) allow it.

    A table domain (:class:`~dpcompose.core.TableDomain`, i.e. ``dp.FrameDomain``) is refused unless
    ``allow_tables`` is true: its members are DataFrames, and a constructor that walks records
    (``for record in data``) would walk a DataFrame's columns instead. Only the generic records and
    combinators, which never look inside the data, allow it.

    Examples:
        >>> import dpcompose as dp
        >>> check_space(dp.AtomDomain(int), dp.AbsoluteDistance())
        >>> check_space(dp.AtomDomain(int), "abs")
        Traceback (most recent call last):
        ...
        dpcompose.errors.DomainMismatch: input_metric='abs' must be a Metric
    """
    if not isinstance(domain, Domain):
        raise DomainMismatch(f"{domain_name}={domain!r} must be a Domain")
    if not isinstance(metric, Metric):
        raise DomainMismatch(f"{metric_name}={metric!r} must be a Metric")
    if not allow_identifiers:
        refuse_identifier_metric(metric, metric_name)
    if not allow_tables:
        refuse_table_domain(domain, domain_name)
    metric.check_domain(domain, domain_name)


def refuse_table_domain(domain: object, domain_name: str = "input_domain") -> None:
    """Raise :class:`DomainMismatch` if ``domain`` is a table domain (``dp.FrameDomain``): the caller walks
    the records of a Python sequence, and iterating a DataFrame yields its columns, not its rows.

    Examples:
        >>> import dpcompose as dp
        >>> refuse_table_domain(dp.VectorDomain(dp.AtomDomain(int)))
        >>> refuse_table_domain(dp.FrameDomain({"x": dp.Column(int)}))
        Traceback (most recent call last):
        ...
        dpcompose.errors.DomainMismatch: input_domain=FrameDomain({'x': Column(int)}) is a table domain ...
    """
    if isinstance(domain, TableDomain):
        raise DomainMismatch(
            f"{domain_name}={domain!r} is a table domain ({type(domain).__name__}): this constructor walks "
            "the records of a Python sequence, and iterating a DataFrame walks its columns, not its rows; "
            "query a table through dp.Context, or pass its rows as a list (frame.rows() or "
            "frame.iter_rows(named=True)) with a dp.VectorDomain"
        )


def refuse_identifier_metric(metric: object, metric_name: str = "input_metric") -> None:
    """Raise :class:`DomainMismatch` naming ``make_bound_contributions`` if ``metric`` is user-level.

    Every constructor whose stability or privacy map counts *records* calls this (through
    :func:`check_space` or ``check_dataset_metric``): a person with many records would otherwise be
    protected as if they had one, silently.

    Examples:
        >>> refuse_identifier_metric(SymmetricDistance())
        >>> refuse_identifier_metric(SymmetricIdDistance("user"))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        dpcompose.errors.DomainMismatch: input_metric=SymmetricIdDistance('user') counts identifiers ...
    """
    if isinstance(metric, SymmetricIdDistance):
        raise DomainMismatch(
            f"{metric_name}={metric!r} counts identifiers (all the rows of one person), but this "
            "constructor counts rows: bound each identifier's rows first with "
            f"dp.t.make_bound_contributions(domain, {metric!r}, id_key={metric.id_key!r}, max_rows=...), "
            "whose output is measured in rows (SymmetricDistance())"
        )


def validate_count(d: object, name: str) -> int:
    """A distance or count ``d`` named ``name`` as a non-negative ``int`` (a whole number of records).

    Raises:
        InvalidParameter: ``d`` is not a number, not whole, or negative; the message names ``name``.
    """
    if type(d) is int and d >= 0:  # fast path
        return d
    try:
        v = read_real(d, name)
    except InvalidParameter:
        raise InvalidParameter(f"{name}={d!r} must be a non-negative integer number of records") from None
    if v != int(v):
        raise InvalidParameter(f"{name}={d!r} must be a non-negative integer number of records")
    if v < 0:
        raise InvalidParameter(f"{name}={d!r} must be non-negative")
    return int(v)


def _validate_sensitivity(d: object, name: str) -> Fraction:
    """A stated sensitivity as the larger of its exact value and the decimal it prints as.

    Either reading alone could be too small (``0.1`` is above ``1/10`` in binary; ``numpy.float32(0.3)``
    is above ``3/10``; ``0.3`` is below ``3/10``), and a sensitivity read too small under-reports. A
    ``longdouble`` is read with all its bits (never rounded to a double first).
    """
    if type(d) is Fraction and d >= 0 and d.numerator.bit_length() - d.denominator.bit_length() < 1023:
        return d  # fast path: already exact
    check_finite_nonnegative(d, name)
    return max(exact(d, name), decimal(d, name))


def _is_numeric_atom(domain: Domain) -> bool:
    return isinstance(domain, AtomDomain) and domain.carrier in (int, float, Fraction)


class _DatasetMetric(Metric):
    __slots__ = ()

    def validate(self, d: object, name: str = "d_in") -> int:
        return validate_count(d, name)

    def check_domain(self, domain: Domain, name: str = "input_domain") -> None:
        if not isinstance(domain, VectorDomain):
            raise DomainMismatch(
                f"{self!r} measures datasets: it needs a VectorDomain, not {name}={domain!r}"
            )


@dataclass(frozen=True, slots=True, repr=False)
class SymmetricDistance(_DatasetMetric):
    """Add/remove distance: the number of records added or removed to turn one dataset into the other."""


@dataclass(frozen=True, slots=True, repr=False)
class SymmetricIdDistance(Metric):
    """User-level add/remove distance: the number of identifiers (people) whose rows are added or removed.

    Records carry an identifier in the column ``id_key``; two datasets are neighbours when one is the
    other plus *all* the rows of one identifier. The distance between ``x`` and ``x'`` is the fewest such
    steps: for each identifier ``u`` whose multisets of rows ``x_u`` and ``x'_u`` differ, 1 if one of them
    is empty and 2 otherwise (remove all of ``u``'s rows, then add the new ones). Rows are compared by
    type and value (``{"x": 1}`` and ``{"x": 1.0}`` are different rows: an output's type is an output;
    a dict's key order does not matter).

    Identifiers are compared by value, as follows (the same rule ``make_bound_contributions`` groups
    by; it never raises):

    * numbers (``int``, ``float``, ``Fraction``, ``Decimal``, numpy integers and floats) by exact value
      (``1``, ``1.0`` and ``numpy.int64(1)`` are one identifier; ``0.0`` and ``-0.0`` too); every NaN is
      one identifier; ``True``/``False`` are not ``1``/``0``;
    * ``str`` and ``bytes`` (and their numpy scalars) as themselves, ``None`` as itself, ``uuid.UUID`` by
      value; tuples (namedtuples too), lists, sets and dicts by their parts (unhashable values included);
    * a value of any other type (a ``complex``, a ``datetime``, a user object), and a value nested more
      than 64 levels deep (a cyclic list), is the single identifier "other": all such rows are one
      person to this metric. Convert such identifiers to ``str`` upstream for a finer unit;
    * a record without the column (a missing key, a short tuple) belongs to the single identifier
      "missing".

    Args:
        id_key: the identifier's column: an ``int`` (a position in tuple or list records, or a key of
            mapping records) or a ``str`` (a key of mapping records, or a namedtuple's field name).

    Pairs with a ``VectorDomain`` without a fixed size (adding a person changes the number of rows)
    whose elements are ``AtomDomain(tuple)``, ``AtomDomain(list)`` or ``AtomDomain(dict)`` (or a
    subclass: a namedtuple class, another ``Mapping``). A ``str`` ``id_key`` on tuple records needs a
    namedtuple carrier with that field. It also measures tables (``dp.FrameDomain``) whose schema declares
    the column ``id_key``: the person-level unit of ``dp.Context``.

    Only ``make_bound_contributions`` (and constructors generic over the metric) accept it; every
    constructor that counts rows refuses it with a message naming ``make_bound_contributions``.

    Source: user-level neighbouring relation (Amin, Kulesza, Muñoz Medina, Vassilvitskii 2019, "Bounding
    User Contributions", §2; Wilson et al. 2020, "Differentially Private SQL with Bounded User
    Contribution", §2).

    Examples:
        >>> import dpcompose as dp
        >>> dp.SymmetricIdDistance("user")
        SymmetricIdDistance('user')
        >>> dp.SymmetricIdDistance(0) == dp.SymmetricIdDistance(0), dp.SymmetricIdDistance(0).validate(2)
        (True, 2)
        >>> dp.SymmetricIdDistance(0).check_domain(dp.VectorDomain(dp.AtomDomain(tuple)))
    """

    id_key: int | str

    def __post_init__(self) -> None:
        key = self.id_key
        if isinstance(key, np.generic) and not isinstance(key, np.bool_):
            key = key.item()
        if isinstance(key, bool) or not isinstance(key, (int, str)):
            raise InvalidParameter(f"id_key={key!r} must be a column position (int) or a column name (str)")
        object.__setattr__(self, "id_key", int(key) if isinstance(key, int) else str(key))

    def validate(self, d: object, name: str = "d_in") -> int:
        return validate_count(d, name)

    def check_domain(self, domain: Domain, name: str = "input_domain") -> None:
        # a table domain (dp.FrameDomain, a layer above core) checks its own identifier column
        check_identifier = getattr(domain, "check_identifier", None)
        if callable(check_identifier):
            check_identifier(self.id_key, name)
            return
        element = domain.element_domain if isinstance(domain, VectorDomain) else None
        carrier = element.carrier if isinstance(element, AtomDomain) else None
        records = carrier is not None and issubclass(carrier, (tuple, list, Mapping))
        if not records:
            raise DomainMismatch(
                f"{self!r} measures datasets of records with an identifier column: it needs a VectorDomain "
                f"of AtomDomain(tuple), AtomDomain(list) or AtomDomain(dict), not {name}={domain!r}"
            )
        assert isinstance(domain, VectorDomain)
        assert carrier is not None
        if domain.size is not None:
            raise DomainMismatch(
                f"{self!r} adds and removes people, which changes the number of rows: {name}={domain!r} "
                "must not fix a size"
            )
        if isinstance(self.id_key, str) and not issubclass(carrier, Mapping):
            fields = getattr(carrier, "_fields", None)
            if not (isinstance(fields, tuple) and self.id_key in fields):
                raise DomainMismatch(
                    f"{self!r} reads the column {self.id_key!r} by name: {name}={domain!r} must hold "
                    "mappings (AtomDomain(dict)) or a namedtuple with that field; use an int position for "
                    "tuples"
                )

    def __repr__(self) -> str:
        return f"SymmetricIdDistance({self.id_key!r})"


@dataclass(frozen=True, slots=True, repr=False)
class ChangeOneDistance(_DatasetMetric):
    """Substitution distance: the number of records changed (datasets of equal size)."""


@dataclass(frozen=True, slots=True, repr=False)
class DiscreteDistance(Metric):
    """0 if two values are equal, 1 otherwise: one person's own value (randomized response)."""

    def validate(self, d: object, name: str = "d_in") -> int:
        return validate_count(d, name)

    def check_domain(self, domain: Domain, name: str = "input_domain") -> None:
        if not isinstance(domain, (AtomDomain, CategoricalDomain)):
            raise DomainMismatch(
                f"{self!r} compares single values: it needs an atom domain, not {name}={domain!r}"
            )


@dataclass(frozen=True, slots=True, repr=False)
class AbsoluteDistance(Metric):
    """|x − x′| between two numbers."""

    def validate(self, d: object, name: str = "d_in") -> Fraction:
        return _validate_sensitivity(d, name)

    def check_domain(self, domain: Domain, name: str = "input_domain") -> None:
        if not _is_numeric_atom(domain):
            raise DomainMismatch(f"{self!r} needs a numeric AtomDomain, not {name}={domain!r}")


class _VectorNormMetric(Metric):
    __slots__ = ()

    def validate(self, d: object, name: str = "d_in") -> Fraction:
        return _validate_sensitivity(d, name)

    def check_domain(self, domain: Domain, name: str = "input_domain") -> None:
        if not (isinstance(domain, VectorDomain) and _is_numeric_atom(domain.element_domain)):
            raise DomainMismatch(f"{self!r} needs a VectorDomain of numeric atoms, not {name}={domain!r}")


@dataclass(frozen=True, slots=True, repr=False)
class L1Distance(_VectorNormMetric):
    """Σ|xᵢ − x′ᵢ| between two vectors of numbers."""


@dataclass(frozen=True, slots=True, repr=False)
class L2Distance(_VectorNormMetric):
    """√Σ(xᵢ − x′ᵢ)² between two vectors of numbers."""


@dataclass(frozen=True, slots=True, repr=False)
class LInfDistance(_VectorNormMetric):
    """maxᵢ|xᵢ − x′ᵢ| between two vectors of numbers (score vectors for report noisy max).

    Args:
        monotonic: the distance also promises that the two vectors move in one direction: ``xᵢ <= x′ᵢ``
            for every ``i`` or ``xᵢ >= x′ᵢ`` for every ``i`` (as counts do when one record is added).
            Selection mechanisms charge half as much for monotonic scores.

    Examples:
        >>> LInfDistance().validate(1)
        Fraction(1, 1)
        >>> LInfDistance(monotonic=True)
        LInfDistance(monotonic=True)
    """

    monotonic: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.monotonic, (bool, np.bool_)):
            raise InvalidParameter(f"monotonic={self.monotonic!r} must be a bool")
        object.__setattr__(self, "monotonic", bool(self.monotonic))

    def __repr__(self) -> str:
        return "LInfDistance(monotonic=True)" if self.monotonic else "LInfDistance()"


@dataclass(frozen=True, slots=True, repr=False)
class PartitionDistance(Metric):
    """Between two partitioned datasets: the total number of records added or removed, summed over all
    parts. The output metric of ``make_partition``; ``make_parallel`` bounds how it spreads over parts."""

    def validate(self, d: object, name: str = "d_in") -> int:
        return validate_count(d, name)

    def check_domain(self, domain: Domain, name: str = "input_domain") -> None:
        if not (isinstance(domain, VectorDomain) and isinstance(domain.element_domain, VectorDomain)):
            raise DomainMismatch(
                f"{self!r} needs a VectorDomain of VectorDomains (parts), not {name}={domain!r}"
            )


@dataclass(frozen=True, slots=True, repr=False)
class L01InfDistance(Metric):
    """Between two mappings of numbers (a key absent from one counts as 0 there): the triple
    ``(l0, l1, l∞)`` = (how many keys differ, Σ|xₖ − x′ₖ|, maxₖ|xₖ − x′ₖ|). A distance bound
    ``(a, b, c)`` holds when all three are within it. The output metric of ``make_count_by``: partition
    selection needs to know both how many keys can change (``l0``: keys that appear or vanish) and by how
    much each can change (``l∞``), and noise on all keys needs ``l1`` (or ``√l0·l∞`` for an L2 bound).

    A distance is validated as a triple: ``l0`` a non-negative integer, ``l1`` and ``l∞`` non-negative
    sensitivities (read exactly, never rounded down).

    Examples:
        >>> L01InfDistance().validate((2, 2, 1))
        (2, Fraction(2, 1), Fraction(1, 1))
    """

    def validate(self, d: object, name: str = "d_in") -> tuple[int, Fraction, Fraction]:
        if not isinstance(d, (tuple, list)) or len(d) != 3:
            raise InvalidParameter(f"{name}={d!r} must be a triple (l0, l1, l_inf) for {self!r}")
        return (
            validate_count(d[0], f"{name}[0]"),
            _validate_sensitivity(d[1], f"{name}[1]"),
            _validate_sensitivity(d[2], f"{name}[2]"),
        )

    def check_domain(self, domain: Domain, name: str = "input_domain") -> None:
        if not (isinstance(domain, MapDomain) and _is_numeric_atom(domain.value_domain)):
            raise DomainMismatch(f"{self!r} needs a MapDomain with numeric values, not {name}={domain!r}")


def refuse_odd_sized(domain: object, metric: object, d: object, name: str = "d_in") -> None:
    """Refuse an odd add/remove distance ``d`` between datasets of one fixed size.

    Two datasets of the same size are an even ``SymmetricDistance`` apart (replacing one record removes
    one and adds one: distance 2), so on a ``VectorDomain(..., size=n)`` a map at an odd ``d_in`` speaks of
    neighbours the domain cannot hold: a mean's map at ``d_in = 1`` is 0, true but vacuous, and a privacy
    filter charging it would admit every query. Such a request is refused instead of answered.

    Raises:
        InvalidParameter: ``metric`` is ``SymmetricDistance()``, ``domain`` a sized ``VectorDomain`` and
            ``d`` an odd whole number; the message names ``name`` and the two fixes (``d_in = 2`` per
            changed record, or ``ChangeOneDistance()``).

    Examples:
        >>> import dpcompose as dp
        >>> sized = dp.VectorDomain(dp.AtomDomain(float, bounds=(0.0, 1.0)), size=100)
        >>> refuse_odd_sized(sized, dp.SymmetricDistance(), 2)  # one record changed: fine
        >>> from dpcompose.errors import InvalidParameter
        >>> try:
        ...     refuse_odd_sized(sized, dp.SymmetricDistance(), 1)
        ... except InvalidParameter as e:
        ...     print(str(e)[:48])
        d_in=1 is odd, but the input domain holds datase
    """
    if sized_symmetric(domain, metric) and type(d) is int and d % 2 == 1:
        within = f" ({name}={d - 1} covers every pair within {d})" if d > 1 else ""
        size = getattr(domain, "size", None)
        raise InvalidParameter(
            f"{name}={d} is odd, but the input domain holds datasets of one fixed size (size={size}): "
            f"under SymmetricDistance() two of them are an even distance apart (one record changed is "
            f"{name}=2), so nothing in the domain is exactly {d} apart (at {name}=1 any bound is vacuous: a "
            f"mean's is 0). Ask for an even {name}: 2 per changed record{within}, or build on "
            f"ChangeOneDistance() ({name}=1 per changed record)"
        )


def sized_symmetric(domain: object, metric: object) -> bool:
    """Whether ``metric`` is a ``SymmetricDistance`` (or a subclass) on a ``VectorDomain`` of fixed size: the
    spaces where every two members are an even distance apart (:func:`refuse_odd_sized`)."""
    return (
        isinstance(metric, SymmetricDistance) and isinstance(domain, VectorDomain) and domain.size is not None
    )


def even_below(domain: object, metric: object, d: object) -> object:
    """``d`` rounded down to even where ``domain`` and ``metric`` are :func:`sized_symmetric` and ``d`` is
    an odd int, else ``d`` unchanged: for an intermediate distance inside a chain (a transformation's bound
    on its sized output's distance). Sound: every two members of such a domain are an even distance apart,
    so a pair at most ``d`` apart is at most ``d − 1`` apart when ``d`` is odd.

    Examples:
        >>> import dpcompose as dp
        >>> sized = dp.VectorDomain(dp.AtomDomain(float), size=10)
        >>> even_below(sized, dp.SymmetricDistance(), 3), even_below(sized, dp.ChangeOneDistance(), 3)
        (2, 3)
    """
    if sized_symmetric(domain, metric) and type(d) is int and d % 2 == 1:
        return d - 1
    return d


def read_d_in(domain: object, metric: Metric, d_in: object, name: str = "d_in") -> Any:
    """``d_in`` as ``metric`` reads it (:meth:`Metric.validate`), refusing an odd distance on a fixed-size
    dataset domain under ``SymmetricDistance`` (:func:`refuse_odd_sized`): how every map, filter and
    compositor reads the distance a caller asks about."""
    d = metric.validate(d_in, name)
    refuse_odd_sized(domain, metric, d, name)
    return d
