"""The privacy unit: bound each person's contribution, turning a user-level distance into a row-level one.

Many datasets hold several rows per person. :class:`~dpcompose.core.SymmetricIdDistance` measures them
in people (identifiers); :func:`make_bound_contributions` keeps at most ``max_rows`` rows per person (and,
with ``by``, at most ``max_groups`` groups per person and ``max_rows`` rows per person and group), so
that every row-level transformation can follow, with ``d_out = d_in · max_rows`` (or
``d_in · max_groups · max_rows``).

Which rows are kept is decided by a specified keyed hash, never by the order of the rows, so the result
is a function of the *multiset* of rows (see :func:`make_bound_contributions` for the exact rule).
"""

from __future__ import annotations

import hashlib
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

__all__ = ["make_bound_contributions"]

HASH_KEY = b"dpcompose.make_bound_contributions.v1"
"""The blake2b key of the row and group hashes (public: it only makes the choice look random)."""

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
            return (
                sign + frame(b"n", _int_bytes(int(numerator))) + frame(b"d", _int_bytes(int(denominator)))
            )
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
) -> Transformation[Any, list[Any], int, int]:
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
       name; and the key ``H_row(e)``. Of each identifier's (identifier and group's) rows the
       ``max_rows`` with the smallest ``(key, e)`` are kept.
    4. The kept rows are output in their input order, as a list.

    ``H_row`` and ``H_group`` are BLAKE2b with a 16-byte digest, the key
    ``b"dpcompose.make_bound_contributions.v1"`` and the personalisation ``b"row"`` / ``b"group"``. The
    hash is public: it only spreads the choice pseudo-randomly over each identifier's rows (rather than,
    say, keeping the smallest values); privacy does not rest on it being secret.

    Rows with equal encodings are equal values, so which of them is kept does not matter — except for a
    value of a type the encoding does not know (a user object: only its type's name is encoded). If
    such an *opaque* encoding straddles the cut (some of its copies would be kept, some not), all its
    copies in that identifier (group) are dropped, so that the output never depends on row order.

    Stability (proof). Let ``k = max_rows`` (``k = max_groups · max_rows`` with ``by``). Steps 1–3 decide
    the rows kept of identifier ``u`` from the multiset ``x_u`` of ``u``'s rows alone (the keys are
    functions of the values; equal keys are interchangeable, or dropped together) and keep at most ``k``
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

    def run(data: Any) -> list[Any]:
        rows: list[Any] = data.tolist() if isinstance(data, np.ndarray) else list(data)
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
            digests = [digest(frame(b"u", u) + frame(b"g", g), b"group") for u, g in pair_list]
            kept_pairs = _select(owner, digests, [g for _, g in pair_list], groups_limit)
            alive = kept_pairs[pair_of] if n else np.zeros(0, dtype=bool)
            units = [frame(b"u", u) + frame(b"g", g) for u, g in zip(ids, groups, strict=True)]
        index = np.flatnonzero(alive).tolist()
        unit_codes: dict[bytes, int] = {}
        codes = np.fromiter(
            (unit_codes.setdefault(units[i], len(unit_codes)) for i in index), np.int64, len(index)
        )
        encoded = [row_encoding(rows[i]) for i in index]
        labels = [e for e, _ in encoded]
        digests = [digest(e, b"row") for e in labels]
        mark = _select(codes, digests, labels, rows_limit)
        _drop_opaque_straddles(mark, codes, labels, [o for _, o in encoded], rows_limit)
        keep = np.zeros(n, dtype=bool)
        keep[np.asarray(index, dtype=np.int64)[mark]] = True
        return [r for r, k in zip(rows, keep.tolist(), strict=True) if k]

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


def _drop_opaque_straddles(
    mark: np.ndarray[Any, np.dtype[np.bool_]],
    codes: np.ndarray[Any, np.dtype[np.int64]],
    labels: list[bytes],
    opaque: list[bool],
    limit: int,
) -> None:
    """Unmark every copy of an opaque encoding that is marked in one place and not in another within the
    same unit (see ``make_bound_contributions``); in place. Only units with more than ``limit`` rows and
    an opaque row can be affected, so the common case costs one scan of ``opaque``."""
    if not any(opaque):
        return
    seen: dict[tuple[int, bytes], list[int]] = {}
    for i, (code, label, is_opaque) in enumerate(zip(codes.tolist(), labels, opaque, strict=True)):
        if is_opaque:
            seen.setdefault((code, label), []).append(i)
    for members in seen.values():
        flags = {bool(mark[i]) for i in members}
        if len(flags) == 2:
            mark[members] = False
