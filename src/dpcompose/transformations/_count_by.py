"""Counting by category: a histogram over declared categories, and counts per key read from the data."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose._validation import short_repr as _short
from dpcompose.accounting._exact import sqrt_up_dyadic
from dpcompose.core import (
    AtomDomain,
    ChangeOneDistance,
    Domain,
    L1Distance,
    L2Distance,
    MapDomain,
    Metric,
    Node,
    Transformation,
    VectorDomain,
)
from dpcompose.core._metrics import L01InfDistance, check_space
from dpcompose.core._recipe import recorded
from dpcompose.errors import DomainMismatch, InvalidParameter
from dpcompose.transformations._clamp import INT64_MAX, INT64_MIN, check_dataset_metric

__all__ = ["make_count_by", "make_count_by_categories"]

_CARRIERS = (int, float, str, bool)
_TABLE_SPAN = 1 << 16  # int categories spanning fewer values than this are coded by table lookup


def _atom_carrier(input_domain: Domain, ctor: str) -> type:
    """The carrier of a VectorDomain of int/float/str/bool atoms; DomainMismatch otherwise."""
    if (
        isinstance(input_domain, VectorDomain)
        and isinstance(input_domain.element_domain, AtomDomain)
        and input_domain.element_domain.carrier in _CARRIERS
    ):
        return input_domain.element_domain.carrier
    raise DomainMismatch(
        f"input_domain={input_domain!r}: {ctor} needs a VectorDomain of int, float, str or bool atoms"
    )


def _category(value: object, carrier: type, i: int) -> Any:
    """``value`` as a category of ``carrier`` (a plain Python int/float/str/bool), or InvalidParameter.

    Exact: an int category must be an integer (not a bool), a float category a float or an integer that
    is exactly a float64, a str category a str, a bool category a bool; NaN is refused (it equals nothing).
    """
    if isinstance(value, np.generic):
        value = value.item()
    where = f"categories[{i}]={_short(value)}"
    if carrier is bool:
        if isinstance(value, bool):
            return value
        raise InvalidParameter(f"{where} must be a bool for a bool domain")
    if carrier is str:
        if isinstance(value, str):
            return str.__str__(value)
        raise InvalidParameter(f"{where} must be a str for a str domain")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidParameter(f"{where} must be {'an int' if carrier is int else 'a float'}")
    if carrier is int:
        if not isinstance(value, int):
            raise InvalidParameter(f"{where} must be an int for an int domain (categories are exact)")
        return int(value)
    if isinstance(value, int):
        try:
            exact_float = float(value) == value
        except OverflowError:
            exact_float = False
        if not exact_float:
            raise InvalidParameter(f"{where} is not exactly a float64: it could never equal a record")
    if math.isnan(value):
        raise InvalidParameter(f"{where}: NaN cannot be a category (it equals nothing)")
    return float(value)


def _categories(categories: object, carrier: type) -> tuple[Any, ...]:
    if isinstance(categories, (str, bytes, bytearray, set, frozenset, dict)) or not isinstance(
        categories, (Sequence, np.ndarray)
    ):
        raise InvalidParameter(
            f"categories={_short(categories)} must be a list or tuple of categories (ordered; a set's "
            "order changes between runs)"
        )
    if isinstance(categories, np.ndarray) and categories.ndim != 1:
        raise InvalidParameter(f"categories={_short(categories)} must be one-dimensional")
    try:
        raw = list(categories)
    except Exception as exc:
        raise InvalidParameter(f"categories={_short(categories)} cannot be read ({exc})") from None
    if not raw:
        raise InvalidParameter("categories=[] must not be empty")
    cats = tuple(_category(c, carrier, i) for i, c in enumerate(raw))
    seen: dict[Any, int] = {}
    for i, c in enumerate(cats):
        j = seen.setdefault(c, i)
        if j != i:
            raise InvalidParameter(
                f"categories={_short(raw)} must be distinct: {cats[j]!r} and {c!r} are equal"
            )
    return cats


def _check_bool(value: object, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidParameter(f"{name}={_short(value)} must be True or False")
    return bool(value)


def _numpy_can_hold(category: Any, carrier: type) -> bool:
    """Whether a numpy array of the carrier's dtype holds ``category`` exactly: not an int beyond int64,
    not a str ending in NUL (numpy strips trailing NULs, so such a str never equals an array element)."""
    if carrier is int:
        return bool(INT64_MIN <= category <= INT64_MAX)
    if carrier is str:
        return not category.endswith("\x00")
    return True


class _Coder:
    """Maps a dataset to bucket codes 0 … k (k = "other"), vectorised, exact, never raising.

    The categories are sorted once (``sorted_values`` with their declared positions ``positions``);
    a record's code is found with ``np.searchsorted`` and an exact equality check — or, for int
    categories spanning fewer than 2**16 values, by a lookup table (``_table_codes``). Records numpy cannot
    hold exactly (ints beyond int64, str records in a Python list) are looked up in a dict, converted to
    plain Python values first so that equality is the carrier's own.
    """

    def __init__(self, cats: tuple[Any, ...], carrier: type) -> None:
        self.k = len(cats)
        self.carrier = carrier
        self.index = {c: i for i, c in enumerate(cats)}
        vectorised = [(c, i) for i, c in enumerate(cats) if _numpy_can_hold(c, carrier)]
        vectorised.sort(key=lambda ci: ci[0])
        dtype: Any = {int: np.int64, float: np.float64, bool: np.bool_, str: np.str_}[carrier]
        self.sorted_values = np.array([c for c, _ in vectorised], dtype=dtype)
        self.positions = np.array([i for _, i in vectorised] + [self.k], dtype=np.intp)
        # ints in a narrow range: a lookup table indexed by the offset from the least category
        self.table: np.ndarray[Any, np.dtype[np.intp]] | None = None
        if carrier is int and vectorised and vectorised[-1][0] - vectorised[0][0] < _TABLE_SPAN:
            self.low = vectorised[0][0]
            span = vectorised[-1][0] - self.low
            self.table = np.full(span + 2, self.k, dtype=np.intp)  # the last entry: beyond the range
            for c, i in vectorised:
                self.table[c - self.low] = i
            self.consecutive = [c for c, _ in vectorised] == list(range(self.low, self.low + self.k)) and [
                i for _, i in vectorised
            ] == list(range(self.k))

    def _table_codes(self, arr: np.ndarray[Any, np.dtype[np.int64]]) -> np.ndarray[Any, np.dtype[np.intp]]:
        """Codes of int64 records through the table. ``arr − low`` is computed in int64 with wrap-around
        and read as uint64: that is ``(x − low) mod 2**64``, which lies in ``[0, span]`` exactly when
        ``low ≤ x ≤ low + span`` (a wrapped difference is at least ``span + 1``, as ``low + span`` fits in
        int64), so every other record lands on the table's last entry ("other")."""
        assert self.table is not None
        with np.errstate(over="ignore"):
            offset = np.subtract(arr, np.int64(self.low), dtype=np.int64).view(np.uint64)
        np.minimum(offset, np.uint64(self.table.size - 1), out=offset)
        index = offset.view(np.int64)  # now in [0, span + 1]
        # categories low, low + 1, … in declared order: the offset is the code itself
        out: np.ndarray[Any, np.dtype[np.intp]] = (
            index.astype(np.intp, copy=False) if self.consecutive else self.table[index]
        )
        return out

    def _search(self, arr: np.ndarray[Any, Any]) -> np.ndarray[Any, np.dtype[np.intp]]:
        if self.table is not None:
            return self._table_codes(arr)
        m = self.sorted_values.size
        if m == 0:
            return np.full(arr.shape, self.k, dtype=np.intp)
        pos = np.searchsorted(self.sorted_values, arr)
        np.minimum(pos, m - 1, out=pos)
        hit = self.sorted_values[pos] == arr
        pos[~hit] = m  # positions[m] is the "other" bucket
        out: np.ndarray[Any, np.dtype[np.intp]] = self.positions[pos]
        return out

    def _lookup(self, values: Iterable[Any]) -> np.ndarray[Any, np.dtype[np.intp]]:
        get, other = self.index.get, self.k
        return np.fromiter((get(v, other) for v in values), dtype=np.intp)

    def codes(self, data: Any) -> np.ndarray[Any, np.dtype[np.intp]]:
        carrier = self.carrier
        if carrier is float:
            return self._search(np.asarray(data, dtype=np.float64))  # NaN matches no category
        if carrier is bool:
            return self._search(np.asarray(data, dtype=np.bool_))
        if carrier is str:
            if isinstance(data, np.ndarray) and data.dtype.kind == "U":
                return self._search(data)
            values = data.tolist() if isinstance(data, np.ndarray) else data
            return self._lookup(map(str.__str__, values))
        return self._int_codes(data)

    def _int_codes(self, data: Any) -> np.ndarray[Any, np.dtype[np.intp]]:
        if isinstance(data, np.ndarray):
            if data.dtype.kind == "u" and data.size and data.max() > INT64_MAX:
                big = data > INT64_MAX  # beyond int64: matched exactly as Python ints
                codes = self._search(np.where(big, 0, data).astype(np.int64))
                codes[big] = self._lookup(data[big].tolist())
                return codes
            return self._search(data.astype(np.int64, copy=False))
        try:
            arr = np.asarray(data, dtype=np.int64)
        except (OverflowError, TypeError, ValueError):  # an int beyond int64: exact Python lookup
            return self._lookup(map(int, data))
        return self._search(arr)


@recorded
def make_count_by_categories(
    input_domain: Domain,
    input_metric: Metric,
    categories: Sequence[Any],
    null_category: bool = True,
    *,
    norm: int = 1,
) -> Transformation[Any, Any, int, Fraction]:
    """Count the records equal to each declared category: a vector of ``k`` counts in the order of
    ``categories``, followed (``null_category=True``) by the count of records equal to none of them.

    The output is an ``int64`` numpy array in ``VectorDomain(AtomDomain(int), size=k or k + 1)`` under
    ``L1Distance()`` (``norm=1``) or ``L2Distance()`` (``norm=2``), ready for ``make_laplace`` /
    ``make_gaussian`` (or their discrete versions). Categories are compared exactly, by value within the
    carrier: for an int domain the categories are ints (``1.0`` and ``True`` are refused), for a float
    domain floats (``-0.0`` and ``0.0`` are one category; NaN matches none and goes to "other"), for str
    and bool domains strs and bools. Vectorised: ``np.searchsorted`` over the sorted categories and
    ``np.bincount``; a Python list is converted once (str records in a list are looked up in a dict).

    Stability, with ``m`` the number of output buckets (``k + 1`` or ``k``): the output is
    ``c(x)ᵢ = #{records of x in bucket i}``.

    * ``SymmetricDistance``, d records added or removed: each moves exactly one bucket by one (or none,
      for a record outside the categories when ``null_category=False``). So the difference vector ``v``
      has ``‖v‖₁ = Σ|vᵢ| ≤ d``, and as its entries are integers ``‖v‖₂² = Σvᵢ² ≤ (Σ|vᵢ|)² ≤ d²``:
      ``d_out = d`` for both norms, attained by d equal records.
    * ``ChangeOneDistance``, d records changed: each change takes one from at most one bucket and adds
      one to at most one bucket, so ``v = p − n`` with ``p, n ≥ 0``, ``Σpᵢ ≤ d``, ``Σnᵢ ≤ d`` and
      disjoint supports (after cancelling). Then ``‖v‖₁ ≤ 2d`` and ``‖v‖₂² = Σpᵢ² + Σnᵢ² ≤ d² + d² =
      2d²``: ``d_out = 2d`` (L1) and ``√2·d`` (L2, as a rational rounded up within 2**-64), attained by d
      records all moved from one bucket to another. When ``m = 1`` there is no other bucket to move to:
      ``|v| ≤ d`` and ``d_out = d``.

    Args:
        input_domain: ``VectorDomain(AtomDomain(int | float | str | bool))``.
        input_metric: ``SymmetricDistance()`` or ``ChangeOneDistance()``.
        categories: the declared categories, distinct, non-empty, a list or tuple (public: they are
            part of the query, never read from the data).
        null_category: whether to count the records outside the categories in a last bucket.
        norm: 1 for an ``L1Distance`` output (Laplace), 2 for ``L2Distance`` (Gaussian).

    Source: Dwork–Roth 2014 §3.3 (histogram queries: add/remove moves one cell by 1); the substitution and
    L2 bounds are proven above. OpenDP's ``make_count_by_categories`` is the counterpart.

    Examples:
        >>> import dpcompose as dp
        >>> words = dp.VectorDomain(dp.AtomDomain(str))
        >>> hist = dp.t.make_count_by_categories(words, dp.SymmetricDistance(), ["a", "b"])
        >>> hist(["a", "b", "a", "z", "a"]), hist.map(1)
        (array([3, 1, 1]), Fraction(1, 1))
        >>> l2 = dp.t.make_count_by_categories(words, dp.ChangeOneDistance(), ["a", "b"], norm=2)
        >>> float(l2.map(1))
        1.4142135623730951
    """
    check_dataset_metric(input_metric)
    check_space(input_domain, input_metric)
    carrier = _atom_carrier(input_domain, "make_count_by_categories")
    cats = _categories(categories, carrier)
    null = _check_bool(null_category, "null_category")
    if not isinstance(norm, (int, np.integer)) or isinstance(norm, bool) or norm not in (1, 2):
        raise InvalidParameter(f"norm={_short(norm)} must be the integer 1 (L1Distance) or 2 (L2Distance)")
    norm = int(norm)
    k = len(cats)
    buckets = k + 1 if null else k
    coder = _Coder(cats, carrier)
    change_one = isinstance(input_metric, ChangeOneDistance)

    def run(data: Any) -> np.ndarray[Any, np.dtype[np.int64]]:
        counts = np.bincount(coder.codes(data), minlength=k + 1).astype(np.int64, copy=False)
        return counts[:buckets]

    def stability(d_in: int) -> Fraction:
        if not change_one or buckets == 1:
            return Fraction(d_in)
        return Fraction(2 * d_in) if norm == 1 else sqrt_up_dyadic(2 * d_in * d_in, 64)

    output_metric = L1Distance() if norm == 1 else L2Distance()
    return Transformation(
        input_domain,
        VectorDomain(AtomDomain(int), size=buckets),
        input_metric,
        output_metric,
        run,
        stability,
        node=Node(
            "count_by_categories",
            params=(("categories", str(k)), ("null_category", str(null)), ("norm", f"L{norm}")),
            source="Dwork–Roth 2014 §3.3",
        ),
    )


@recorded
def make_count_by(
    input_domain: Domain, input_metric: Metric
) -> Transformation[Any, dict[Any, int], int, tuple[int, Fraction, Fraction]]:
    """Counts per key, for keys read from the data: a ``dict`` mapping each distinct record to the number
    of times it occurs, in sorted key order (so the order reveals nothing about the row order).

    The keys are data, so releasing them needs partition selection (a noisy threshold over these
    counts); this transformation gives such a mechanism its input. The output is in
    ``MapDomain(AtomDomain(carrier), AtomDomain(int))`` under :class:`~dpcompose.L01InfDistance`: the
    distance between two count mappings (a key missing from one counts 0 there) is ``(l0, l1, l∞)`` —
    how many keys' counts differ, by how much in total, and by how much at most.

    Keys are plain Python values: an int domain gives ``int`` keys, a float domain ``float`` keys (``-0.0``
    is counted as ``0.0``; NaN records are not counted, as a NaN key could never be looked up — a
    function of each record alone, so the stability is unchanged), str and bool domains ``str`` and
    ``bool`` keys. Vectorised with ``np.unique`` on arrays; a Python list of ints or floats is converted
    once, a list of str is counted with :class:`collections.Counter`.

    Stability:

    * ``SymmetricDistance``, d records added or removed: each changes one key's count by one, so
      ``(l0, l1, l∞) ≤ (d, d, d)`` (all attained: d distinct new keys give l0 = l1 = d, d equal ones
      l∞ = d).
    * ``ChangeOneDistance``, d records changed: each lowers one key's count by one and raises another's
      by one, so ``(l0, l1, l∞) ≤ (2d, 2d, d)``.

    Args:
        input_domain: ``VectorDomain(AtomDomain(int | float | str | bool))``.
        input_metric: ``SymmetricDistance()`` or ``ChangeOneDistance()``.

    Source: the (l0, l∞) sensitivity of a histogram with unknown keys as used for partition selection
    (Korolova et al. 2009; Wilson et al. 2020 §3; Rogers et al. 2023, "A Unifying Privacy Analysis
    Framework for Unknown Domain Algorithms"). OpenDP's ``make_count_by`` is the counterpart.

    Examples:
        >>> import dpcompose as dp
        >>> by = dp.t.make_count_by(dp.VectorDomain(dp.AtomDomain(str)), dp.SymmetricDistance())
        >>> by(["b", "a", "b"]), by.map(1)
        ({'a': 1, 'b': 2}, (1, Fraction(1, 1), Fraction(1, 1)))
        >>> ints = dp.VectorDomain(dp.AtomDomain(int))
        >>> dp.t.make_count_by(ints, dp.ChangeOneDistance()).map(2) == (4, 4, 2)
        True
    """
    check_dataset_metric(input_metric)
    check_space(input_domain, input_metric)
    carrier = _atom_carrier(input_domain, "make_count_by")
    element = input_domain.element_domain  # type: ignore[attr-defined]
    key_domain = AtomDomain(carrier, bounds=element.bounds)
    change_one = isinstance(input_metric, ChangeOneDistance)

    def run(data: Any) -> dict[Any, int]:
        return _count_keys(data, carrier)

    def stability(d_in: int) -> tuple[int, Fraction, Fraction]:
        spread = 2 * d_in if change_one else d_in
        return (spread, Fraction(spread), Fraction(d_in))

    return Transformation(
        input_domain,
        MapDomain(key_domain, AtomDomain(int)),
        input_metric,
        L01InfDistance(),
        run,
        stability,
        node=Node("count_by", source="Korolova et al. 2009; Wilson et al. 2020"),
    )


def _unique_counts(arr: np.ndarray[Any, Any]) -> dict[Any, int]:
    keys, counts = np.unique(arr, return_counts=True)
    return dict(zip(keys.tolist(), counts.tolist(), strict=True))


def _count_keys(data: Any, carrier: type) -> dict[Any, int]:
    if carrier is float:
        arr = np.asarray(data, dtype=np.float64)
        arr = arr[~np.isnan(arr)] + 0.0  # NaN is not counted; -0.0 + 0.0 is 0.0
        return _unique_counts(arr)
    if carrier is bool:
        return _unique_counts(np.asarray(data, dtype=np.bool_))
    if carrier is int:
        if isinstance(data, np.ndarray):
            return _unique_counts(data)  # any integer dtype; keys come out as Python ints
        try:
            arr = np.asarray(data, dtype=np.int64)
        except (OverflowError, TypeError, ValueError):  # an int beyond int64: exact Python counting
            return dict(sorted(Counter(map(int, data)).items()))
        return _unique_counts(arr)
    if isinstance(data, np.ndarray) and data.dtype.kind == "U":
        return _unique_counts(data)
    values = data.tolist() if isinstance(data, np.ndarray) else data
    return dict(sorted(Counter(map(str.__str__, values)).items()))
