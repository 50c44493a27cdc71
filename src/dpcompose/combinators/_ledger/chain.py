"""The SQLite ledger's records: how an entry is written, the hash chain over the journal, and the internal
exceptions a failed check raises (reported by the ledger as a LedgerError naming the file)."""

from __future__ import annotations

import hashlib
import json
from fractions import Fraction

from dpcompose.combinators._ledger.base import LedgerEntry

__all__ = ["Corrupt", "RolledBack", "as_blob", "as_int", "decode_entry", "encode_entry", "genesis", "link"]

_DOMAIN_TAG = b"dpcompose-ledger-v2\x00"


def encode_entry(e: LedgerEntry) -> bytes:
    """An entry as canonical ASCII JSON (sorted keys, running sums as exact ``p/q`` fractions)."""
    state = [f"{q.numerator}/{q.denominator}" for q in e.state]
    doc = {"kind": e.kind, "spec": e.spec, "rule": e.rule, "state": state, "queries": e.queries}
    return json.dumps(doc, sort_keys=True, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def decode_entry(raw: bytes) -> LedgerEntry:
    """Parse a stored entry; raises ``ValueError`` on anything malformed (the caller reports corruption)."""
    doc = json.loads(raw.decode("ascii"))
    if not isinstance(doc, dict) or set(doc) != {"kind", "spec", "rule", "state", "queries"}:
        raise ValueError("malformed entry")
    kind, spec, rule, state, queries = (doc[k] for k in ("kind", "spec", "rule", "state", "queries"))
    if not all(isinstance(s, str) for s in (kind, spec, rule)) or not isinstance(state, list):
        raise ValueError("malformed entry")
    if isinstance(queries, bool) or not isinstance(queries, int) or queries < 0:
        raise ValueError(f"malformed query count {queries!r}")
    sums = []
    for part in state:
        if not isinstance(part, str):
            raise ValueError("malformed running sum")
        num, slash, den = part.partition("/")
        q = Fraction(int(num), int(den))
        if not slash or q < 0 or int(den) <= 0:
            raise ValueError(f"malformed running sum {part!r}")
        sums.append(q)
    return LedgerEntry(kind, spec, rule, tuple(sums), queries)


def genesis(file_id: bytes) -> bytes:
    """The hash the first journal row chains from: a digest of the file's random id."""
    return hashlib.sha256(_DOMAIN_TAG + b"genesis\x00" + file_id).digest()


def link(prev: bytes, seq: int, key: bytes, entry: bytes) -> bytes:
    """The hash of journal row ``seq``: covers the previous row's hash, the sequence, the key, the entry."""
    h = hashlib.sha256(_DOMAIN_TAG)
    h.update(prev)
    h.update(seq.to_bytes(8, "big"))
    h.update(len(key).to_bytes(4, "big"))
    h.update(key)
    h.update(len(entry).to_bytes(8, "big"))
    h.update(entry)
    return h.digest()


class Corrupt(Exception):
    """Internal: the file's contents fail a check (reported as a LedgerError naming the file)."""


class RolledBack(Corrupt):
    """Internal: the file is behind (or off) the head its anchor recorded."""


def as_int(value: object, what: str) -> int:
    """``value`` if it is an ``int`` (a stored column read back), else :class:`Corrupt` naming ``what``."""
    if type(value) is not int:
        raise Corrupt(f"{what} is {type(value).__name__}, not an integer")
    return value


def as_blob(value: object, what: str, size: int | None = None) -> bytes:
    """``value`` if it is ``bytes`` (of ``size`` bytes, if given), else :class:`Corrupt` naming ``what``."""
    if type(value) is not bytes or (size is not None and len(value) != size):
        raise Corrupt(f"{what} is not a {size or ''}-byte blob".replace(" -byte", ""))
    return value
