"""Domains: the sets of valid inputs and outputs.

Examples:
    >>> import dpcompose as dp
    >>> ages = dp.VectorDomain(dp.AtomDomain(int, bounds=(0, 120)))
    >>> ages.member([30, 40, 121])
    False
    >>> ages
    VectorDomain(AtomDomain(int, bounds=(0, 120)))
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose._validation import short_repr as _short
from dpcompose.accounting import float_down, float_up
from dpcompose.errors import DomainMismatch, InvalidParameter

__all__ = ["AtomDomain", "CategoricalDomain", "Domain", "MapDomain", "TableDomain", "VectorDomain"]

_NUMERIC = (int, float, Fraction)


class Domain:
    """Base of all domains: a set of values with a membership test.

    Subclasses implement :meth:`member`; :meth:`check` raises :class:`DomainMismatch` naming the domain.
    """

    __slots__ = ()

    def member(self, value: object) -> bool:  # pragma: no cover - abstract
        """Whether ``value`` belongs to this domain."""
        raise NotImplementedError

    def check(self, value: object, what: str = "data") -> None:
        """Raise :class:`DomainMismatch` unless ``value`` belongs to this domain. Runs nothing else."""
        if not self.member(value):
            raise DomainMismatch(f"{what}={_short(value)} is not a member of {self!r}")


@dataclass(frozen=True, slots=True, repr=False)
class AtomDomain(Domain):
    """Single values of one type, optionally within closed ``bounds`` and optionally allowing NaN.

    Args:
        carrier: the Python type of the values: ``int``, ``float``, ``bool``, ``str``, …
        bounds: optional closed interval ``(lo, hi)`` the values must lie in (numeric carriers only).
        nan: whether NaN is a member (float carrier only; default ``False``).

    A float atom admits Python floats, numpy floats that are exact float64 values, and ints (Python or
    numpy) only when they are exactly representable as a float64: converting any other int would round
    it first (``2**60 + 1`` and ``2**60 + 129`` are 128 apart as floats), so a mechanism could not compute
    on the exact value. Use ``AtomDomain(int)`` for such integers.

    Raises:
        InvalidParameter: bounds that are not a pair of finite numbers ``lo <= hi``, or on a non-numeric
            carrier; ``nan`` not a bool.

    Examples:
        >>> AtomDomain(float, bounds=(0.0, 1.0)).member(0.5)
        True
        >>> AtomDomain(float).member(float("nan"))
        False
        >>> AtomDomain(float).member(2**53), AtomDomain(float).member(2**53 + 1)
        (True, False)
    """

    carrier: type
    bounds: tuple[Any, Any] | None = None
    nan: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.carrier, type):
            raise InvalidParameter(f"carrier={self.carrier!r} must be a type such as int or float")
        if not isinstance(self.nan, (bool, np.bool_)):
            raise InvalidParameter(f"nan={self.nan!r} must be a bool")
        object.__setattr__(self, "nan", bool(self.nan))
        if self.nan and self.carrier is not float:
            raise InvalidParameter(
                f"nan=True is only meaningful for float atoms, not {self.carrier.__name__}"
            )
        if self.bounds is not None:
            if self.carrier not in (int, float, Fraction):
                raise InvalidParameter(f"bounds={self.bounds!r} need a numeric carrier, not {self.carrier!r}")
            pair = isinstance(self.bounds, tuple | list) or (
                isinstance(self.bounds, np.ndarray) and self.bounds.ndim == 1
            )
            if not pair or len(self.bounds) != 2:
                raise InvalidParameter(f"bounds={self.bounds!r} must be a pair (lo, hi)")
            object.__setattr__(self, "bounds", tuple(self.bounds))
            lo, hi = self.bounds
            for b in (lo, hi):
                if (
                    isinstance(b, bool)
                    or not isinstance(b, _NUMERIC)
                    or (isinstance(b, float) and not math.isfinite(b))
                ):
                    raise InvalidParameter(f"bounds={self.bounds!r} must be finite numbers")
            if lo > hi:
                raise InvalidParameter(f"bounds={self.bounds!r} must satisfy lo <= hi")

    def member(self, value: object) -> bool:
        if isinstance(value, np.generic):
            value = value.item()
        if self.carrier is float:
            if isinstance(value, bool) or not isinstance(value, (float, int)):
                return False
            if isinstance(value, int) and not _exact_float_int(value):
                return False
            value = float(value)
            if math.isnan(value):
                return self.nan
            if math.isinf(value) and self.bounds is None:
                return False
        elif self.carrier is int:
            if isinstance(value, bool) or not isinstance(value, int):
                return False
        elif not isinstance(value, self.carrier):
            return False
        if self.bounds is not None:
            lo, hi = self.bounds
            return bool(lo <= value <= hi)
        return True

    def __repr__(self) -> str:
        parts = [self.carrier.__name__]
        if self.bounds is not None:
            parts.append(f"bounds={self.bounds!r}")
        if self.nan:
            parts.append("nan=True")
        return f"AtomDomain({', '.join(parts)})"


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class CategoricalDomain(Domain):
    """Single values from a finite, declared, ordered list of categories (for randomized response).

    Membership is exact: a value is a member when it is *equal to* a category *and of the same type*, so
    ``True``, ``1.0`` and ``np.int64(1)`` are not the category ``1``. Mechanisms work with the category's
    position (:meth:`index`) and output only the domain's own category objects, so the representation of
    the caller's value never shows in an output. Membership never raises (an unhashable value is simply
    not a member).

    Each category must be hashable and equal to itself (``c == c`` is ``True``, ``c != c`` is ``False``),
    recursively inside tuples and frozensets: NaN (float, numpy, Decimal) and objects with a non-reflexive
    equality are refused, because ``in`` and ``!=`` misbehave on them. Categories must be pairwise
    distinct, which also refuses mixtures that Python treats as equal (``1``, ``1.0`` and ``True``; ``0.0``
    and ``-0.0``). They are kept in the given order: a bare ``str`` or ``bytes`` (which would iterate its
    characters) and a ``set`` (whose order changes between runs) are refused.

    Args:
        categories: a non-empty list, tuple or other ordered iterable of categories.

    Raises:
        InvalidParameter: ``categories`` is not an ordered iterable, is empty, or holds an unhashable,
            non-reflexive or repeated category.

    Examples:
        >>> d = CategoricalDomain(("yes", "no"))
        >>> d.member("yes"), d.member("maybe"), d.index("no")
        (True, False, 1)
        >>> CategoricalDomain([0, 1]).member(True)
        False
        >>> CategoricalDomain([1, True])
        Traceback (most recent call last):
        ...
        dpcompose.errors.InvalidParameter: categories=[1, True] must be distinct: 1 and True are equal
    """

    categories: tuple[Hashable, ...]
    _by_hash: dict[int, tuple[int, ...]] = field(init=False, repr=False, compare=False)

    def __init__(self, categories: Iterable[Hashable]) -> None:
        if isinstance(categories, (str, bytes, bytearray)):
            raise InvalidParameter(
                f"categories={_short(categories)} must be a list of categories, not a single string "
                "(write list(...) to make each character a category)"
            )
        if isinstance(categories, (set, frozenset)):
            raise InvalidParameter(
                f"categories={_short(categories)} must be ordered (a list or tuple): a set's order changes "
                "between runs"
            )
        try:
            cats = tuple(categories)
        except Exception as exc:  # not iterable, or its iterator failed
            raise InvalidParameter(
                f"categories={_short(categories)} must be an iterable of categories ({exc})"
            ) from None
        if len(cats) == 0:
            raise InvalidParameter(f"categories={list(cats)!r} must not be empty")
        by_hash: dict[int, list[int]] = {}
        first: dict[Hashable, int] = {}
        for i, c in enumerate(cats):
            problem = _category_problem(c)
            if problem is not None:
                raise InvalidParameter(f"categories={_short(list(cats))}: category {_short(c)} {problem}")
            j = first.setdefault(c, i)
            if j != i:
                raise InvalidParameter(
                    f"categories={_short(list(cats))} must be distinct: {cats[j]!r} and {c!r} are equal"
                )
            by_hash.setdefault(hash(c), []).append(i)
        object.__setattr__(self, "categories", cats)
        object.__setattr__(self, "_by_hash", {h: tuple(ix) for h, ix in by_hash.items()})

    def index(self, value: object) -> int:
        """The position of ``value``'s category in :attr:`categories`.

        Raises:
            DomainMismatch: ``value`` is not a member.
        """
        i = self._find(value)
        if i is None:
            self.check(value)  # raises, with the reason
            raise DomainMismatch(f"data={_short(value)} is not a member of {self!r}")  # pragma: no cover
        return i

    def _find(self, value: object) -> int | None:
        """The index of the one category that is ``value`` (same type, equal both ways), else None."""
        try:
            candidates = self._by_hash.get(hash(value), ())
            found = [
                i
                for i in candidates
                if type(self.categories[i]) is type(value)
                and _is_true(value == self.categories[i])
                and _is_true(self.categories[i] == value)
            ]
        except Exception:  # unhashable, or an equality that raises: not a member
            return None
        return found[0] if len(found) == 1 else None

    def member(self, value: object) -> bool:
        return self._find(value) is not None

    def check(self, value: object, what: str = "data") -> None:
        if self._find(value) is not None:
            return
        hint = ""
        for c in self.categories:
            try:
                same = type(c) is not type(value) and _is_true(c == value)
            except Exception:
                same = False
            if same:
                hint = (
                    f" (it equals the category {c!r} but its type is {type(value).__name__}, not "
                    f"{type(c).__name__}: membership is exact)"
                )
                break
        raise DomainMismatch(f"{what}={_short(value)} is not a member of {self!r}{hint}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CategoricalDomain):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple[tuple[type, Hashable], ...]:
        return tuple((type(c), c) for c in self.categories)

    def __repr__(self) -> str:
        return f"CategoricalDomain({list(self.categories)!r})"


def _is_true(result: object) -> bool:
    """Whether a comparison returned exactly true (a ``bool`` or ``numpy.bool_``, not an array)."""
    return isinstance(result, (bool, np.bool_)) and bool(result)


def _category_problem(c: object) -> str | None:
    """Why ``c`` cannot be a category (unhashable, not equal to itself), or None if it can."""
    try:
        hash(c)
    except Exception:
        return f"is not hashable (a {type(c).__name__})"
    try:
        reflexive = _is_true(c == c) and not _is_true(c != c) and isinstance(c != c, (bool, np.bool_))
    except Exception:
        reflexive = False
    if not reflexive:
        return "is not equal to itself (a NaN, or an object whose == is not reflexive)"
    if isinstance(c, (tuple, frozenset)):
        for part in c:
            problem = _category_problem(part)
            if problem is not None:
                return f"contains {_short(part)}, which {problem}"
    return None


@dataclass(frozen=True, slots=True, repr=False)
class VectorDomain(Domain):
    """Sequences (lists, tuples, 1-d numpy arrays) whose elements all belong to ``element_domain``.

    Args:
        element_domain: the domain of each element.
        size: if given, every member has exactly this many elements (a public, known dataset size).

    Examples:
        >>> VectorDomain(AtomDomain(int), size=3).member([1, 2, 3])
        True
        >>> VectorDomain(AtomDomain(int), size=3).member([1, 2])
        False
    """

    element_domain: Domain
    size: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.element_domain, Domain):
            raise InvalidParameter(f"element_domain={self.element_domain!r} must be a Domain")
        if self.size is not None and (
            isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 0
        ):
            raise InvalidParameter(f"size={self.size!r} must be a non-negative integer or None")

    def member(self, value: object) -> bool:
        if isinstance(value, np.ndarray):
            if value.ndim == 2 and isinstance(self.element_domain, VectorDomain):
                # a dataset of fixed-size numeric rows as one (n, d) array (vectorised)
                sized = self.size is None or len(value) == self.size
                return sized and self.element_domain.member_rows(value)
            if value.ndim != 1:
                return False
        elif not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
            return False
        if self.size is not None and len(value) != self.size:
            return False
        element = self.element_domain
        if isinstance(value, np.ndarray) and isinstance(element, AtomDomain):
            return _array_member(value, element)
        return all(element.member(v) for v in value)

    def check(self, value: object, what: str = "data") -> None:
        """Raise :class:`DomainMismatch` unless ``value`` is a member (a sequence whose length is not the
        declared ``size`` is refused naming ``size=``). Runs nothing else."""
        if self.member(value):
            return
        if (
            self.size is not None
            and (
                (isinstance(value, np.ndarray) and value.ndim >= 1)
                or (isinstance(value, Sequence) and not isinstance(value, (str, bytes)))
            )
            and len(value) != self.size
        ):
            raise DomainMismatch(
                f"{what} has {len(value)} elements, but its domain declares size={self.size}: pass data of "
                f"that size, or declare the size it has ({self!r})"
            )
        Domain.check(self, value, what)

    def member_rows(self, rows: np.ndarray[Any, Any]) -> bool:
        """Whether every row of the 2-d array ``rows`` is a member: only for a known ``size`` equal to the
        row length and numeric atoms (vectorised); ``False`` otherwise."""
        element = self.element_domain
        if rows.ndim != 2 or self.size is None or rows.shape[1] != self.size:
            return False
        if not (isinstance(element, AtomDomain) and element.carrier in (int, float)):
            return False
        step = max(1, MEMBER_BLOCK // max(rows.shape[1], 1))  # (blocks: no full-size copy or mask)
        starts = range(0, max(len(rows), 1), step)  # (an empty array is one empty block: its dtype is read)
        return all(_array_member(rows[i : i + step].reshape(-1), element) for i in starts)

    def __repr__(self) -> str:
        size = "" if self.size is None else f", size={self.size}"
        return f"VectorDomain({self.element_domain!r}{size})"


class TableDomain(VectorDomain):
    """A :class:`VectorDomain` whose members are engine tables (a Polars, pandas or Spark DataFrame), not
    Python sequences of records: iterating one walks its columns, indexing it does not give a record.

    The base of ``dp.FrameDomain``. :func:`~dpcompose.core._metrics.check_space` refuses it for every
    constructor that walks records, so that a constructor which would read a table's columns as its rows
    never accepts one; only the generic records (``Transformation``, ``Measurement``) and the combinators
    generic over their input take it.
    """

    __slots__ = ()


@dataclass(frozen=True, slots=True, repr=False)
class MapDomain(Domain):
    """Mappings (a ``dict`` or other :class:`~collections.abc.Mapping`) whose keys all belong to
    ``key_domain`` and whose values all belong to ``value_domain``: counts per key, for example.

    Args:
        key_domain: the domain of each key.
        value_domain: the domain of each value.

    Examples:
        >>> counts = MapDomain(AtomDomain(str), AtomDomain(int))
        >>> counts.member({"a": 2, "b": 1}), counts.member({"a": 0.5}), counts.member([("a", 1)])
        (True, False, False)
    """

    key_domain: Domain
    value_domain: Domain

    def __post_init__(self) -> None:
        for name in ("key_domain", "value_domain"):
            if not isinstance(getattr(self, name), Domain):
                raise InvalidParameter(f"{name}={getattr(self, name)!r} must be a Domain")

    def member(self, value: object) -> bool:
        if not isinstance(value, Mapping):
            return False
        try:
            return all(self.key_domain.member(k) and self.value_domain.member(v) for k, v in value.items())
        except Exception:  # a mapping whose iteration fails is not a member
            return False

    def __repr__(self) -> str:
        return f"MapDomain({self.key_domain!r}, {self.value_domain!r})"


def _exact_float_int(value: int) -> bool:
    """Whether the int ``value`` is exactly a float64 (so converting it changes nothing)."""
    try:
        return float(value) == value  # int/float comparison in Python is exact
    except OverflowError:
        return False


def _exact_float_ints(value: np.ndarray) -> bool:
    """Whether every entry of an integer array is exactly a float64, vectorised.

    ``a = |v|`` (as uint64) is a float64 iff its significant bits fit in 53: ``a < 2**53``, or its lowest
    set bit ``b = a & -a`` satisfies ``a < b·2**53`` (true whenever ``b >= 2**11``, as ``a < 2**64``).
    """
    if value.dtype.itemsize <= 4 or not value.size:
        return True  # 32-bit integers are all exact floats
    mags = value.astype(np.uint64)
    if value.dtype.kind == "i":
        negative = value < 0
        mags[negative] = (~mags[negative]) + np.uint64(1)  # |v| in uint64, -2**63 included
    low = mags & (~mags + np.uint64(1))
    small = mags < np.uint64(1 << 53)
    coarse = low >= np.uint64(1 << 11)
    with np.errstate(over="ignore"):
        fits = mags < (low << np.uint64(53))
    return bool(np.all(small | coarse | fits))


MEMBER_BLOCK = 2**16
"""Membership of a numpy array is decided block by block of this many entries (512 KiB of float64): the
temporaries (NaN masks, integer magnitudes) stay that small and each block is read again from the cache."""


def _array_member(value: np.ndarray, element: AtomDomain) -> bool:
    """Vectorised membership for 1-d numpy arrays of numbers, block by block (:data:`MEMBER_BLOCK`)."""
    if value.size <= MEMBER_BLOCK:
        return _block_member(value, element)
    return all(
        _block_member(value[i : i + MEMBER_BLOCK], element) for i in range(0, value.size, MEMBER_BLOCK)
    )


def _block_member(value: np.ndarray, element: AtomDomain) -> bool:
    """Vectorised membership for a 1-d numpy array of numbers."""
    kind = value.dtype.kind
    nan: np.ndarray | None = None  # the NaN mask of a float array holding a NaN
    if element.carrier is int:
        if kind not in "iu":
            return False
    elif element.carrier is float:
        if kind not in "iuf":
            return False
        if kind in "iu" and not _exact_float_ints(value):
            return False
        if kind == "f" and value.dtype.itemsize > 8:  # longdouble: only values that are exact float64s
            with np.errstate(over="ignore", invalid="ignore"):
                if not bool(np.all((value.astype(np.float64) == value) | np.isnan(value))):
                    return False
        if kind == "f" and value.size:
            low, high = value.min(), value.max()  # NaN propagates: both are numbers iff no entry is NaN
            if not (np.isnan(low) or np.isnan(high)):  # two passes decide it (the same answer as below)
                if element.bounds is None:
                    return bool(np.isfinite(low) and np.isfinite(high))
                return bool(float_up(element.bounds[0]) <= low and high <= float_down(element.bounds[1]))
        if kind == "f":
            nan = np.isnan(value)
            if not nan.any():
                nan = None
            elif not element.nan:
                return False
            if element.bounds is None and np.isinf(value).any():
                return False
    elif value.dtype.names is not None and element.bounds is None and issubclass(tuple, element.carrier):
        return True  # a structured array's rows are tuples (what ``tolist`` gives): all members
    else:
        return all(element.member(v) for v in value.tolist())
    if element.bounds is not None and value.size:
        lo, hi = element.bounds
        if kind == "f":  # compare exactly: numpy would round a bound that is not a float to the nearest one
            lo, hi = float_up(lo), float_down(hi)
        finite = value if nan is None else value[~nan]  # no copy without a NaN
        if finite.size and (finite.min() < lo or finite.max() > hi):
            return False
    return True
