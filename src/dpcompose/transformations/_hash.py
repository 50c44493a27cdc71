"""The one specified hash behind contribution capping, in numpy, shared by every engine.

Engines have their own hash functions, but those change between versions (Polars documents that its
``hash`` is not stable) and differ between engines, so a cap that kept "the rows with the smallest engine
hash" would keep different rows on different engines or versions. Here every value is mapped to 64 bits by
a function fixed in this docstring, computed in numpy on columns the engine hands over:

* ``splitmix64(x)`` is the SplitMix64 output function (Steele, Lea, Flood 2014) on a uint64 ``x``::

      z = x + 0x9E3779B97F4A7C15
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
      z = (z ^ (z >> 27)) * 0x94D049BB133111EB
      return z ^ (z >> 31)                       (all arithmetic modulo 2**64)

* a value's 64-bit code ``h(v)``:

  - an integer (any width) or a bool: ``splitmix64`` of its int64 two's-complement bit pattern
    (``True`` = 1, ``False`` = 0); a date: ``splitmix64`` of its days since 1970-01-01 as an int64;
  - a float: ``splitmix64`` of its IEEE-754 binary64 bit pattern, with ``-0.0`` read as ``0.0`` and every
    NaN as the quiet NaN ``0x7FF8000000000000`` (a float32 column is widened to float64 first, exactly);
  - a string: the first 8 bytes of ``blake2b(utf8(v), digest_size=8)`` read little-endian (computed once
    per distinct value);
  - null (missing): the constant :data:`NULL_CODE`.

* a row's key over the columns ``c_1 … c_m`` (in the order the caller lists them):
  ``acc_0 = ROW_SEED``, ``acc_i = splitmix64(acc_{i-1} ^ h(c_i))``, key = ``acc_m``.

Capping keeps, per identifier, the rows with the smallest keys (:mod:`dpcompose.tables._engine`). Keys
are a function of the row's values alone, so the kept rows do not depend on row order, partitioning or
engine; two rows with equal keys are identical rows (or collide, with probability about ``2**-64`` per
pair of distinct rows — then which of the two is kept may depend on order; the privacy guarantee does not
depend on which rows are kept).

Examples:
    >>> import numpy as np
    >>> hex(int(splitmix64(np.array([0], dtype=np.uint64))[0]))
    '0xe220a8397b1dcdaf'
    >>> int(value_codes(np.array([-0.0]))[0]) == int(value_codes(np.array([0.0]))[0])
    True
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "NULL_CODE",
    "ROW_SEED",
    "SPLITMIX_GAMMA",
    "SPLITMIX_M1",
    "SPLITMIX_M2",
    "fold_row_key",
    "row_keys",
    "splitmix64",
    "splitmix64_inplace",
    "string_code",
    "value_codes",
]

U64 = npt.NDArray[np.uint64]

NULL_CODE = np.uint64(0x6E756C6C6E756C6C)
"""The code of a null (missing) value: the bytes of "nullnull"."""

ROW_SEED = np.uint64(0x243F6A8885A308D3)
"""The starting value of a row key (the first hex digits of π's fractional part)."""

SPLITMIX_GAMMA = np.uint64(0x9E3779B97F4A7C15)
"""SplitMix64's increment (:func:`splitmix64` adds it first)."""

SPLITMIX_M1 = np.uint64(0xBF58476D1CE4E5B9)
"""SplitMix64's first multiplier (after the shift by 30)."""

SPLITMIX_M2 = np.uint64(0x94D049BB133111EB)
"""SplitMix64's second multiplier (after the shift by 27)."""

_CANONICAL_NAN = np.uint64(0x7FF8000000000000)


def splitmix64(x: U64) -> U64:
    """SplitMix64's output function, vectorised, modulo 2**64 (a bijection of uint64)."""
    return splitmix64_inplace(np.array(x, dtype=np.uint64))


def splitmix64_inplace(z: U64) -> U64:
    """:func:`splitmix64` computed in ``z`` itself (overwritten and returned), with one temporary array:
    the same bits, a third of the memory."""
    with np.errstate(over="ignore"):
        z += SPLITMIX_GAMMA
        t = z >> np.uint64(30)
        z ^= t
        z *= SPLITMIX_M1
        np.right_shift(z, np.uint64(27), out=t)
        z ^= t
        z *= SPLITMIX_M2
        np.right_shift(z, np.uint64(31), out=t)
        z ^= t
    return z


def string_code(s: str) -> int:
    """The 64-bit code of a string: blake2b with an 8-byte digest of its UTF-8 bytes, little-endian.

    Examples:
        >>> string_code("a") == int.from_bytes(hashlib.blake2b(b"a", digest_size=8).digest(), "little")
        True
    """
    return int.from_bytes(
        hashlib.blake2b(s.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little"
    )


def value_codes(values: npt.NDArray[Any], nulls: npt.NDArray[np.bool_] | None = None) -> U64:
    """``h(v)`` for every entry of a numpy column (ints, bools, floats or Python strings), nulls marked
    by the boolean mask ``nulls`` (their entries in ``values`` are ignored).

    Strings are hashed once per distinct value (``numpy.unique`` then a lookup).
    """
    kind = values.dtype.kind
    if kind == "b":  # astype copies: the fresh array is hashed in place
        codes = splitmix64_inplace(values.astype(np.uint64))
    elif kind in "iu":
        codes = splitmix64_inplace(values.astype(np.int64).view(np.uint64))
    elif kind == "f":
        f = values.astype(np.float64)
        f[f == 0.0] = 0.0  # -0.0 -> 0.0
        nan = np.isnan(f)
        bits = f.view(np.uint64)
        bits[nan] = _CANONICAL_NAN
        codes = splitmix64_inplace(bits)
    else:  # strings (object or unicode arrays)
        valid = np.ones(len(values), dtype=bool) if nulls is None else ~nulls
        codes = np.full(len(values), NULL_CODE, dtype=np.uint64)
        if valid.any():
            # each distinct string hashed once, as Python str: numpy's fixed-width str dtype would drop
            # trailing NULs ("a\x00" -> "a", against the spec) and size every entry to the longest one
            present = values[valid].tolist()
            seen: dict[str, int] = {}

            def code(v: object) -> int:
                text = v if isinstance(v, str) else str(v)
                found = seen.get(text)
                if found is None:
                    found = seen[text] = string_code(text)
                return found

            codes[valid] = np.fromiter(map(code, present), dtype=np.uint64, count=len(present))
        return codes
    if nulls is not None and nulls.any():
        codes = codes.copy()
        codes[nulls] = NULL_CODE
    return codes


def row_keys(columns: Sequence[U64]) -> U64:
    """The key of every row from its columns' codes: ``acc = splitmix64(acc ^ code)`` from :data:`ROW_SEED`.

    Examples:
        >>> a = value_codes(np.array([1, 2])); b = value_codes(np.array(["x", "y"], dtype=object))
        >>> row_keys([a, b]).dtype
        dtype('uint64')
    """
    n = len(columns[0]) if columns else 0
    acc = np.full(n, ROW_SEED, dtype=np.uint64)
    for codes in columns:
        fold_row_key(acc, codes)
    return acc


def fold_row_key(acc: U64, codes: U64) -> U64:
    """One step of :func:`row_keys` in place: ``acc = splitmix64(acc ^ codes)`` (``acc`` overwritten and
    returned), so a caller can fold columns in one at a time without holding them all."""
    acc ^= codes
    return splitmix64_inplace(acc)
