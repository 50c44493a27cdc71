"""The privacy unit: bound each person's contribution, turning a user-level distance into a row-level one.

Many datasets hold several rows per person. :class:`~dpcompose.core.SymmetricIdDistance` measures them
in people (identifiers); :func:`make_bound_contributions` keeps at most ``max_rows`` rows per person (and,
with ``by``, at most ``max_groups`` groups per person and ``max_rows`` rows per person and group), so
that every row-level transformation can follow, with ``d_out = d_in · max_rows`` (or
``d_in · max_groups · max_rows``).

Which rows are kept is decided by specified hashes, never by the order of the rows, so the result
is a function of the *multiset* of rows (see :func:`make_bound_contributions` for the exact rule).
"""

from __future__ import annotations

import hashlib
import itertools
import struct
import uuid
from collections.abc import Mapping
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose._validation import check_positive_int
from dpcompose.core import Domain, Metric, Node, SymmetricDistance, Transformation, VectorDomain
from dpcompose.core._metrics import SymmetricIdDistance, check_space
from dpcompose.core._recipe import recorded
from dpcompose.errors import DomainMismatch, InvalidParameter
from dpcompose.transformations._rowkeys import (
    column_keys,
    plain_columns,
    plain_row_key,
    same_rows_of,
    select_smallest,
)

__all__ = ["COLUMNS_FROM", "group_digest", "kept_by_columns", "kept_row_by_row", "make_bound_contributions"]

HASH_KEY = b"dpcompose.make_bound_contributions.v1"
"""The blake2b key of the row and group hashes (public: it only makes the choice look random)."""

COLUMNS_FROM = 1024
"""Datasets of at least this many rows are tried a column at a time (below, numpy's per-call costs exceed
the row-by-row work; both paths keep the same rows)."""

_MAX_DEPTH = 64  # deeper values (or cyclic ones) are encoded as opaque / the class "other"
_MISSING = b"\x00missing"
OTHER_CLASS = b"\x00other"
"""The class of a value that is not compared by value (a type the rule does not know, a value nested too
deep, a cyclic one): every such value has this one class."""
_NAN = b"\x00nan"


def frame(tag: bytes, payload: bytes) -> bytes:
    """``tag`` (one byte), the payload's length (8 bytes, big-endian), the payload: a prefix-free code."""
    return tag + len(payload).to_bytes(8, "big") + payload


_PACK_DOUBLE = struct.Struct(">d").pack


def _int_bytes(value: int) -> bytes:
    return int.to_bytes(value, (int.bit_length(value) + 8) // 8, "big", signed=True)


def _type_name(value: object) -> bytes:
    kind = type(value)
    return f"{kind.__module__}.{kind.__qualname__}".encode("utf-8", "surrogatepass")


# --- identifiers and groups: classes of values compared by value ----------------------------------------

_DENOMINATOR_ONE = frame(b"d", _int_bytes(1))


def _number_class(numerator: int, denominator: int) -> bytes:
    tail = _DENOMINATOR_ONE if denominator == 1 else frame(b"d", _int_bytes(denominator))
    return frame(b"Q", frame(b"n", _int_bytes(numerator)) + tail)


def _float_class(value: Any) -> bytes:
    """A float (Python or numpy, any width) by exact value; all NaNs are one class."""
    if value != value:
        return _NAN
    if value in (float("inf"), float("-inf")):
        return frame(b"F", b"+inf" if value > 0 else b"-inf")
    numerator, denominator = value.as_integer_ratio()
    return _number_class(int(numerator), int(denominator))


def _decimal_class(value: Decimal) -> bytes:
    if value.is_nan():
        return _NAN
    if value.is_infinite():
        return frame(b"F", b"+inf" if value > 0 else b"-inf")
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    if -4000 <= exponent <= 4000:  # exact, and cheap enough
        ratio = Fraction(value)
        return _number_class(ratio.numerator, ratio.denominator)
    # beyond: canonical digits (trailing zeros moved into the exponent); no float or int of
    # reasonable size equals such a value
    coefficient = int("".join(map(str, digits)) or "0")
    if coefficient == 0:
        return _number_class(0, 1)
    while coefficient % 10 == 0:
        coefficient //= 10
        exponent += 1
    return frame(b"E", _int_bytes(-coefficient if sign else coefficient) + b"e" + _int_bytes(exponent))


class _TooDeep(Exception):
    """A value nested deeper than ``_MAX_DEPTH`` (or cyclic): its class is "other" as a whole."""


def _class_of(value: Any, depth: int = 0) -> bytes:
    """The identifier (or group) class of ``value`` as bytes: equal bytes iff equal identifiers, under
    the rule documented on :class:`~dpcompose.core.SymmetricIdDistance`."""
    if depth > _MAX_DEPTH:
        raise _TooDeep
    kind = type(value)
    if kind is int:  # fast path, as below
        return _number_class(value, 1)
    if kind is str:
        return frame(b"S", value.encode("utf-8", "surrogatepass"))
    if value is None:
        return b"\x00none"
    if kind is bool or kind is np.bool_:
        return frame(b"B", b"1" if value else b"0")
    if kind is str or kind is np.str_:
        return frame(b"S", str.encode(value, "utf-8", "surrogatepass"))
    if kind is bytes or kind is np.bytes_:
        return frame(b"Y", bytes(value))
    if kind is int or isinstance(value, np.integer):
        return _number_class(int(value), 1)
    if kind is float or isinstance(value, np.floating):
        return _float_class(value)
    if kind is Fraction:
        return _number_class(value.numerator, value.denominator)
    if kind is Decimal:
        return _decimal_class(value)
    if kind is uuid.UUID:
        return frame(b"U", value.bytes)
    if isinstance(value, tuple):  # namedtuples compare as tuples
        return frame(b"T", b"".join(_class_of(v, depth + 1) for v in value))
    if kind is list:
        return frame(b"L", b"".join(_class_of(v, depth + 1) for v in value))
    if kind is set or kind is frozenset:
        return frame(b"Z", b"".join(sorted({_class_of(v, depth + 1) for v in value})))
    if kind is dict:
        pairs = sorted(
            frame(b"P", _class_of(k, depth + 1) + _class_of(v, depth + 1)) for k, v in value.items()
        )
        return frame(b"M", b"".join(pairs))
    return OTHER_CLASS


def safe_class(value: Any) -> bytes:
    """The class of ``value`` (see :func:`_class_of`); a value too deep, cyclic or failing to iterate is
    the class "other". Never raises."""
    try:
        return _class_of(value)
    except Exception:  # too deep, cyclic, or an odd container (a failing iterator): "other", never raised
        return OTHER_CLASS


def _read_column(record: Any, key: int | str) -> Any:
    """``record[key]`` for a mapping, the position ``key`` of a tuple/list, a namedtuple's field ``key``;
    raises ``LookupError`` when there is no such column."""
    if isinstance(record, Mapping):
        return record[key]
    if isinstance(record, (tuple, list)):
        if isinstance(key, int):
            return record[key]
        fields = getattr(type(record), "_fields", None)
        if isinstance(fields, tuple) and key in fields:
            return record[fields.index(key)]
    raise LookupError(key)


def column_class(record: Any, key: int | str) -> bytes:
    """The class of the column ``key`` of ``record`` (see :func:`safe_class`); a missing column is the
    class "missing". Never raises."""
    try:
        value = _read_column(record, key)
    except Exception:  # no such column (or a mapping whose lookup fails): the class "missing"
        return _MISSING
    return safe_class(value)


# --- rows: an exact, type-tagged encoding -------------------------------------------------------------


class _Encoding:
    """Builds the canonical encoding of a row; ``opaque`` records whether it met a value it cannot
    encode injectively (a type it does not know: only the type's name is encoded)."""

    __slots__ = ("opaque",)

    def __init__(self) -> None:
        self.opaque = False

    def typed(self, value: Any, base: type) -> bytes:
        """A subclass of a built-in type is tagged with its own name, so its rows differ from the base's."""
        return b"" if type(value) is base else frame(b"t", _type_name(value))

    def encode(self, value: Any, depth: int = 0) -> bytes:
        kind = type(value)  # fast paths for the common exact types (the same bytes as the general ones)
        if kind is int:
            return frame(b"I", _int_bytes(value))
        if kind is str:
            return frame(b"S", value.encode("utf-8", "surrogatepass"))
        if kind is float:
            return frame(b"F", _PACK_DOUBLE(value))
        if depth > _MAX_DEPTH:
            self.opaque = True
            return frame(b"?", b"deep")
        if kind is tuple:
            return frame(b"T", b"".join([self.encode(v, depth + 1) for v in value]))
        if value is None:
            return frame(b"N", b"")
        if type(value) is bool:
            return frame(b"B", b"1" if value else b"0")
        if isinstance(value, np.generic):
            dtype = value.dtype.str if value.dtype.kind == "V" else value.dtype.name
            return frame(b"g", frame(b"t", dtype.encode()) + self.numpy_payload(value))
        if isinstance(value, int):
            return frame(b"I", self.typed(value, int) + _int_bytes(int.__index__(value)))
        if isinstance(value, float):
            return frame(b"F", self.typed(value, float) + struct.pack(">d", value))
        if isinstance(value, str):
            return frame(b"S", self.typed(value, str) + str.encode(value, "utf-8", "surrogatepass"))
        if isinstance(value, bytes):
            return frame(b"Y", self.typed(value, bytes) + bytes(value))
        if type(value) is Fraction:
            return frame(
                b"Q", frame(b"n", _int_bytes(value.numerator)) + frame(b"d", _int_bytes(value.denominator))
            )
        if type(value) is Decimal:
            return frame(b"D", str(value).encode())
        if type(value) is complex:
            return frame(b"C", struct.pack(">dd", value.real, value.imag))
        if type(value) is uuid.UUID:
            return frame(b"U", value.bytes)
        if isinstance(value, (tuple, list)):
            tag = b"T" if isinstance(value, tuple) else b"L"
            base = tuple if isinstance(value, tuple) else list
            parts = b"".join(self.encode(v, depth + 1) for v in value)
            return frame(tag, self.typed(value, base) + parts)
        if isinstance(value, (set, frozenset)):
            tag, kind = (b"Z", frozenset) if isinstance(value, frozenset) else (b"z", set)
            members = sorted(self.encode(v, depth + 1) for v in value)
            return frame(tag, self.typed(value, kind) + b"".join(members))
        if isinstance(value, Mapping):
            pairs = sorted(
                frame(b"P", self.encode(k, depth + 1) + self.encode(v, depth + 1)) for k, v in value.items()
            )
            return frame(b"M", self.typed(value, dict) + b"".join(pairs))
        self.opaque = True
        return frame(b"?", _type_name(value))

    def numpy_payload(self, value: np.generic) -> bytes:
        if isinstance(value, np.floating) and value.dtype.itemsize <= 8:  # IEEE bits, big-endian
            return np.asarray(value, dtype=value.dtype.newbyteorder(">")).tobytes()
        if isinstance(value, np.floating):  # longdouble: its exact value (its padding bytes are undefined)
            if np.isnan(value):
                return b"nan"
            sign = b"-" if np.signbit(value) else b"+"
            if np.isinf(value):
                return sign + b"inf"
            numerator, denominator = value.as_integer_ratio()
            return sign + frame(b"n", _int_bytes(int(numerator))) + frame(b"d", _int_bytes(int(denominator)))
        if isinstance(value, np.complexfloating):
            return self.numpy_payload(value.real) + self.numpy_payload(value.imag)
        if isinstance(value, (np.integer, np.bool_)):
            return _int_bytes(int(value))
        if isinstance(value, (np.str_, np.bytes_)):
            return self.encode(value.item())
        if value.dtype.kind in "mM":  # datetime64, timedelta64: the int64 count, big-endian
            return np.asarray(value, dtype=value.dtype.newbyteorder(">")).tobytes()
        return value.tobytes()  # void (structured): fixed-width, the dtype names the layout


def row_encoding(row: Any) -> tuple[bytes, bool]:
    """The canonical encoding of a row and whether it is opaque (see :class:`_Encoding`). Never raises."""
    encoder = _Encoding()
    try:
        return encoder.encode(row), encoder.opaque
    except Exception:  # an odd container: one opaque encoding per type
        return frame(b"?", _type_name(row)), True


def digest(data: bytes, person: bytes) -> bytes:
    """The specified keyed hash: BLAKE2b, 16-byte digest, key :data:`HASH_KEY`, personalisation ``person``."""
    return hashlib.blake2b(data, digest_size=16, key=HASH_KEY, person=person).digest()


# --- the selection ----------------------------------------------------------------------------------


def _select(
    codes: np.ndarray[Any, np.dtype[np.int64]], digests: list[bytes], labels: list[bytes], limit: int
) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """Within each code, mark the ``limit`` items with the smallest ``(digest, label)``.

    Sorted by ``(code, first 8 digest bytes)`` with numpy; items that tie there with different labels (a
    64-bit collision) are ordered by the full key in Python. Items with equal labels are interchangeable
    (the caller guarantees it, see ``make_bound_contributions``), so which of them is marked when they
    straddle the limit does not change the result.
    """
    n = len(digests)
    mark = np.zeros(n, dtype=bool)
    if n == 0:
        return mark
    h64 = np.frombuffer(b"".join(d[:8] for d in digests), dtype=">u8").astype(np.uint64)
    order = np.lexsort((h64, codes))
    sorted_codes, sorted_h = codes[order], h64[order]
    tie = (sorted_codes[1:] == sorted_codes[:-1]) & (sorted_h[1:] == sorted_h[:-1])
    if tie.any() and any(labels[order[i]] != labels[order[i + 1]] for i in np.flatnonzero(tie).tolist()):
        full = sorted(range(n), key=lambda i: (int(codes[i]), digests[i], labels[i]))
        order = np.asarray(full, dtype=np.int64)
        sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    sizes = np.diff(np.r_[starts, n])
    rank = np.arange(n) - np.repeat(starts, sizes)
    mark[order[rank < limit]] = True
    return mark


@recorded
def make_bound_contributions(
    input_domain: Domain,
    input_metric: Metric,
    id_key: int | str,
    max_rows: int,
    max_groups: int | None = None,
    by: int | str | None = None,
) -> Transformation[Any, Any, int, int]:
    """Keep at most ``max_rows`` rows per identifier — the step from people to rows.

    The input is measured in identifiers (``SymmetricIdDistance(id_key)``: neighbours differ in all the
    rows of one person); the output in rows (``SymmetricDistance()``), so any row-level transformation
    can follow. With ``by`` (a group column) and ``max_groups``, each identifier keeps at most
    ``max_groups`` distinct groups and at most ``max_rows`` rows in each kept group.

    Which rows are kept (specified exactly, so the result never depends on the order of the rows):

    1. Each row's identifier class ``u`` (and group class ``g``) is read from the column ``id_key``
       (``by``) and compared by value as :class:`~dpcompose.core.SymmetricIdDistance` documents (a row
       without the column belongs to the class "missing").
    2. With ``by``: each pair ``(u, g)`` present gets the key
       ``H_group(frame("u", c(u)) + frame("g", c(g)))``, where ``c`` is the class's canonical bytes and
       ``frame(tag, p)`` is the tag byte, ``len(p)`` as 8 big-endian bytes, then ``p``; of each
       identifier's groups the ``max_groups`` with the smallest ``(key, c(g))`` are kept, the rows of the
       other groups dropped.
    3. Each row gets ``e`` = its canonical encoding, built from such frames (type-tagged, so
       prefix-free): ``None``, ``bool``, ``int`` (two's complement), ``float`` by its IEEE bits, ``str``
       (UTF-8), ``bytes``, ``Fraction``, ``Decimal`` by its text, ``complex``, ``UUID``, numpy scalars
       with their dtype's name (floats by their big-endian bits), tuples and lists element by element,
       sets and mappings sorted by their elements' encodings, a subclass tagged with its module and
       name; and the key ``K(e)``: for a *plain* row — a ``tuple`` or ``list`` whose fields are all
       ``None``, ``bool``, ``float``, ``str`` or ``int`` in ``[-2**63, 2**64)`` (exact types) — the tables'
       specified 64-bit row hash over its fields in order (:mod:`dpcompose.transformations._hash`: an
       int by its bits modulo ``2**64``, ``None`` as null), for any other row the first 8 bytes
       (big-endian) of ``H_row(e)``. ``K`` is a function of ``e`` (which names every type, so it decides
       whether the row is plain). Of each identifier's (identifier and group's) rows the ``max_rows``
       with the smallest ``(K, e)`` are kept.
    4. The kept rows are output in their input order: as a list, or as a numpy structured array of the
       input's dtype when the input is one (its rows read as tuples by the rule above).

    ``H_row`` and ``H_group`` are BLAKE2b with a 16-byte digest, the key
    ``b"dpcompose.make_bound_contributions.v1"`` and the personalisation ``b"row"`` / ``b"group"``. The
    hashes are public: they only spread the choice pseudo-randomly over each identifier's rows (rather
    than, say, keeping the smallest values); privacy does not rest on them being secret.

    Speed: a list of tuples (or lists) of one length whose columns each hold one plain type (and
    ``None``), or a numpy structured array of bool, int, float and str fields, is handled a column at a
    time in numpy (identifiers grouped and rows keyed and sorted as arrays; a row's encoding ``e`` is
    built only for the rare key ties across a cut between different rows); other records row by row.
    Both give the rows the rule above keeps (a structured array's row ``r`` read as ``r.item()``). With
    ``by``, the group keys are computed once per distinct
    (identifier, group) pair in Python.

    Rows with equal encodings are equal values, so which of them is kept does not matter — except for a
    value of a type the encoding does not know (a user object: only its type's name is encoded). If
    such an *opaque* encoding straddles the cut (some of its copies would be kept, some not), all its
    copies in that identifier (group) are dropped, so that the output never depends on row order.

    Stability (proof). Let ``k = max_rows`` (``k = max_groups · max_rows`` with ``by``). Steps 1–3 decide
    the rows kept of identifier ``u`` from the multiset ``x_u`` of ``u``'s rows alone (the keys are
    functions of the encodings, ties are ordered by the encoding, and equal encodings are
    interchangeable, or dropped together) and keep at most ``k``
    of them. If ``x'`` is ``x`` plus (or minus) all the rows of one identifier ``u``, every other
    identifier's kept rows are the same multiset in both outputs, and ``u`` has at most ``k`` kept rows in
    one output and none in the other: the outputs are at most ``k`` apart in ``SymmetricDistance``. A
    path of ``d_in`` such steps gives ``d_out = d_in · k`` (triangle inequality); in particular a
    permutation of the rows (``d_in = 0``) gives the same multiset. Tight: one identifier with ``k`` or
    more rows (in ``max_groups`` groups) is exactly ``k`` rows away from its absence.

    Args:
        input_domain: a ``VectorDomain`` (no fixed size) of tuple, list or dict records.
        input_metric: ``SymmetricIdDistance(id_key)``.
        id_key: the identifier column (``int`` position or key, ``str`` key or namedtuple field); must
            equal ``input_metric.id_key``.
        max_rows: rows kept per identifier (per identifier and group with ``by``); an integer ≥ 1.
        max_groups: groups kept per identifier; an integer ≥ 1, given exactly when ``by`` is.
        by: the group column (same kinds as ``id_key``), or ``None``.

    Returns:
        A transformation whose output type is decided by the input's type alone, never by its values or
        its size (which path keeps the rows does not show): a numpy structured array gives a structured
        array of the same dtype, any other member of ``input_domain`` (a list, tuple, object array, …) a
        ``list`` of its kept records. Both are members of the output domain ``VectorDomain(element)``.

    Raises:
        DomainMismatch: a metric other than ``SymmetricIdDistance`` or a domain it does not measure.
        InvalidParameter: ``id_key`` not the metric's, ``max_rows``/``max_groups`` not positive integers,
            ``by`` without ``max_groups`` or the reverse.

    Source: contribution bounding for user-level privacy (Amin, Kulesza, Muñoz Medina, Vassilvitskii
    2019, "Bounding User Contributions: A Bias-Variance Trade-off in Differential Privacy", ICML, §2–3;
    Wilson et al. 2020, "Differentially Private SQL with Bounded User Contribution", PoPETs, §3: per-user
    partition and per-partition bounds); the stability argument is the one given above.

    Examples:
        >>> import dpcompose as dp
        >>> visits = dp.VectorDomain(dp.AtomDomain(tuple))
        >>> bound = dp.t.make_bound_contributions(visits, dp.SymmetricIdDistance(0), id_key=0, max_rows=2)
        >>> rows = [("ann", 1), ("ann", 2), ("ann", 3), ("bob", 4)]
        >>> kept = bound(rows)
        >>> len(kept), sum(r[0] == "ann" for r in kept)
        (3, 2)
        >>> sorted(bound(rows[::-1])) == sorted(kept)  # the order of the rows does not matter
        True
        >>> bound.output_metric, bound.map(1), bound.map(3)
        (SymmetricDistance(), 2, 6)
        >>> grouped = dp.t.make_bound_contributions(
        ...     visits, dp.SymmetricIdDistance(0), id_key=0, max_rows=2, max_groups=3, by=1
        ... )
        >>> grouped.map(1)
        6
    """
    if not isinstance(input_metric, SymmetricIdDistance):
        raise DomainMismatch(
            f"input_metric={input_metric!r} must be SymmetricIdDistance(id_key): make_bound_contributions "
            "maps a distance in identifiers to one in rows"
        )
    check_space(input_domain, input_metric, allow_identifiers=True)
    assert isinstance(input_domain, VectorDomain)
    if isinstance(id_key, np.generic) and not isinstance(id_key, np.bool_):
        id_key = id_key.item()
    if isinstance(id_key, bool) or not isinstance(id_key, (int, str)) or id_key != input_metric.id_key:
        raise InvalidParameter(
            f"id_key={id_key!r} must be the identifier column of input_metric={input_metric!r} "
            f"({input_metric.id_key!r})"
        )
    rows_limit = check_positive_int(max_rows, "max_rows")
    if (by is None) != (max_groups is None):
        raise InvalidParameter(
            f"by={by!r} and max_groups={max_groups!r} must be given together: max_groups bounds the number "
            "of groups (values of the column by) one identifier may keep"
        )
    groups_limit = 1
    group_key: int | str | None = None
    if by is not None:
        groups_limit = check_positive_int(max_groups, "max_groups")
        if isinstance(by, np.generic) and not isinstance(by, np.bool_):
            by = by.item()
        if isinstance(by, bool) or not isinstance(by, (int, str)):
            raise InvalidParameter(f"by={by!r} must be a column position (int) or a column name (str)")
        group_key = int(by) if isinstance(by, int) else str(by)
        try:
            SymmetricIdDistance(group_key).check_domain(input_domain)
        except DomainMismatch:
            raise InvalidParameter(
                f"by={by!r} names a column by name, which input_domain={input_domain!r} cannot hold"
            ) from None
    key = input_metric.id_key
    factor = rows_limit * groups_limit
    element = input_domain.element_domain

    def run(data: Any) -> Any:
        rows: Any = data if isinstance(data, (list, np.ndarray)) else list(data)
        table = rows if isinstance(rows, np.ndarray) and rows.dtype.names else None
        columns = plain_columns(rows) if len(rows) >= COLUMNS_FROM else None
        if columns is None:
            if isinstance(rows, np.ndarray):
                rows = rows.tolist()
            keep = kept_row_by_row(rows, key, group_key, rows_limit, groups_limit)
        else:
            keep = kept_by_columns(rows, columns, key, group_key, rows_limit, groups_limit)
        if table is not None:  # a structured array: its kept rows, whichever path chose them
            return table[keep]
        return list(itertools.compress(rows, keep.tolist()))

    params: tuple[tuple[str, str], ...] = (("id_key", repr(key)), ("max_rows", str(rows_limit)))
    if group_key is not None:
        params += (("by", repr(group_key)), ("max_groups", str(groups_limit)))
    return Transformation(
        input_domain,
        VectorDomain(element),
        input_metric,
        SymmetricDistance(),
        run,
        lambda d_in: factor * d_in,
        node=Node(
            "bound_contributions",
            params=params,
            source="Amin et al. 2019; Wilson et al. 2020 (per-identifier truncation: d_out = d_in·bound)",
        ),
    )


def _row_key(row: Any) -> int:
    """The key ``K`` of any row: the tables' hash of a plain row, else the first 8 bytes of ``H_row(e)``."""
    key = plain_row_key(row)
    if key is None:
        key = int.from_bytes(digest(row_encoding(row)[0], b"row")[:8], "big")
    return key


_GROUP_HASH = hashlib.blake2b(digest_size=16, key=HASH_KEY, person=b"group")
"""``H_group`` with its key block absorbed: a copy of it hashes a pair (as :func:`digest`, cheaper)."""


def group_digest(framed_pair: bytes) -> bytes:
    """``H_group(framed_pair)``: the same bytes as ``digest(framed_pair, b"group")``."""
    h = _GROUP_HASH.copy()
    h.update(framed_pair)
    return h.digest()


def _kept_groups(
    framed_ids: list[bytes],
    framed_groups: list[bytes],
    group_labels: list[bytes],
    owner: np.ndarray[Any, Any],
    limit: int,
) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """Of the pairs (identifier class, group class), given as ``frame("u", c(u))`` and ``frame("g", c(g))``
    with ``c(g)`` in ``group_labels`` and owned by the identifier codes ``owner``, the ``limit`` per
    identifier with the smallest ``(H_group(frame("u", c(u)) + frame("g", c(g))), c(g))``."""
    digests = [group_digest(u + g) for u, g in zip(framed_ids, framed_groups, strict=True)]
    return _select(owner, digests, group_labels, limit)


def kept_row_by_row(
    rows: list[Any], key: int | str, group_key: int | str | None, rows_limit: int, groups_limit: int
) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """The rows kept (a mask), computed row by row: any records."""
    n = len(rows)
    ids = [column_class(r, key) for r in rows]
    if group_key is None:
        units = ids
        alive = np.ones(n, dtype=bool)
    else:
        groups = [column_class(r, group_key) for r in rows]
        pairs: dict[tuple[bytes, bytes], int] = {}
        pair_of = np.fromiter(
            (pairs.setdefault(p, len(pairs)) for p in zip(ids, groups, strict=True)), np.int64, n
        )
        pair_list = list(pairs)
        id_codes: dict[bytes, int] = {}
        owner = np.fromiter((id_codes.setdefault(u, len(id_codes)) for u, _ in pair_list), np.int64)
        kept_pairs = _kept_groups(
            [frame(b"u", u) for u, _ in pair_list],
            [frame(b"g", g) for _, g in pair_list],
            [g for _, g in pair_list],
            owner,
            groups_limit,
        )
        alive = kept_pairs[pair_of] if n else np.zeros(0, dtype=bool)
        units = [frame(b"u", u) + frame(b"g", g) for u, g in zip(ids, groups, strict=True)]
    index = np.flatnonzero(alive)
    positions = index.tolist()
    unit_codes: dict[bytes, int] = {}
    codes = np.fromiter(
        (unit_codes.setdefault(units[i], len(unit_codes)) for i in positions), np.int64, len(positions)
    )
    keys = np.fromiter((_row_key(rows[i]) for i in positions), np.uint64, len(positions))
    mark = select_smallest(
        codes,
        keys,
        rows_limit,
        lambda j: row_encoding(rows[positions[j]]),
        lambda j: _row_key(rows[positions[j]]),
    )
    keep = np.zeros(n, dtype=bool)
    keep[index[mark]] = True
    return keep


def _class_codes(
    values: np.ndarray[Any, Any], nulls: np.ndarray[Any, Any] | None
) -> tuple[np.ndarray[Any, np.dtype[np.int64]], list[bytes]]:
    """Dense codes of the identifier (group) classes of a plain column, and each code's class bytes."""
    if values.dtype.kind == "f":
        canonical = np.where(values == 0.0, 0.0, values.astype(np.float64))  # -0.0 and 0.0: one class
        canonical[np.isnan(canonical)] = np.nan  # every NaN: one class
        uniques, inverse = np.unique(canonical.view(np.uint64), return_inverse=True)
        distinct: list[Any] = uniques.view(np.float64).tolist()
    elif values.dtype.kind == "O":
        table: dict[Any, int] = {}
        present = values.tolist()
        if nulls is not None:
            present = [None if null else v for v, null in zip(present, nulls.tolist(), strict=True)]
        inverse = np.fromiter((table.setdefault(v, len(table)) for v in present), np.int64, len(present))
        return inverse, [safe_class(v) for v in table]
    else:
        uniques, inverse = np.unique(values, return_inverse=True)
        distinct = uniques.tolist()
    labels = [safe_class(v) for v in distinct]
    inverse = inverse.astype(np.int64, copy=False).reshape(-1)
    if nulls is not None and nulls.any():
        inverse[nulls] = len(labels)
        labels.append(safe_class(None))
    return inverse, labels


def kept_by_columns(
    rows: Any,
    columns: list[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any] | None]],
    key: int | str,
    group_key: int | str | None,
    rows_limit: int,
    groups_limit: int,
) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """The rows kept (a mask), computed a column at a time: plain rows (see :func:`plain_columns`). The
    same rule as :func:`kept_row_by_row`, so the same mask."""
    n = len(rows)
    width = len(columns)

    def classes(column_key: int | str) -> tuple[np.ndarray[Any, np.dtype[np.int64]], list[bytes]]:
        if isinstance(column_key, int) and -width <= column_key < width:
            return _class_codes(*columns[column_key])
        return np.zeros(n, dtype=np.int64), [_MISSING]  # no such column in any row: one class

    if group_key is None:
        values, nulls = columns[key] if isinstance(key, int) and -width <= key < width else (None, None)
        if values is not None and nulls is None and values.dtype.kind in "iub":
            units: np.ndarray[Any, Any] = values  # ints and bools: equal values, equal classes
        else:
            units = classes(key)[0]
        keys = column_keys(columns)
        return select_smallest(
            units,
            keys,
            rows_limit,
            lambda i: row_encoding(_row(rows, i)),
            lambda i: _row_key(_row(rows, i)),
            same_rows_of(columns),
        )
    ids, id_labels = classes(key)
    groups, group_labels = classes(group_key)
    pair_code = ids * len(group_labels) + groups
    pairs, pair_of = np.unique(pair_code, return_inverse=True)
    pair_of = pair_of.reshape(-1)
    owner = pairs // len(group_labels)
    group_of = (pairs % len(group_labels)).tolist()
    framed_ids = [frame(b"u", u) for u in id_labels]
    framed_groups = [frame(b"g", g) for g in group_labels]
    kept_pairs = _kept_groups(
        [framed_ids[u] for u in owner.tolist()],
        [framed_groups[g] for g in group_of],
        [group_labels[g] for g in group_of],
        owner,
        groups_limit,
    )
    alive = kept_pairs[pair_of]
    index = np.flatnonzero(alive)
    alive_columns = [(v[index], None if m is None else m[index]) for v, m in columns]
    keys = column_keys(alive_columns)
    mark = select_smallest(
        pair_of[index],
        keys,
        rows_limit,
        lambda j: row_encoding(_row(rows, int(index[j]))),
        lambda j: _row_key(_row(rows, int(index[j]))),
        same_rows_of(alive_columns),
    )
    keep = np.zeros(n, dtype=bool)
    keep[index[mark]] = True
    return keep


def _row(rows: Any, i: int) -> Any:
    """Row ``i`` as the row-by-row path sees it (a structured array's row as a tuple)."""
    row = rows[i]
    return row.item() if isinstance(row, np.void) else row
