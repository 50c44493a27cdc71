"""The SQLite ledger's records: how an entry and a checkpoint are written, the hash chain over the journal,
and the internal exceptions a failed check raises (reported by the ledger as a LedgerError naming the file).
"""

from __future__ import annotations

import hashlib
import json
import secrets
from fractions import Fraction
from typing import Any, NamedTuple

from dpcompose.combinators._ledger.base import LedgerEntry

__all__ = [
    "NONCE_BYTES",
    "Checkpoint",
    "Corrupt",
    "RolledBack",
    "Unanchored",
    "Unverifiable",
    "as_blob",
    "as_int",
    "decode_checkpoint",
    "decode_entry",
    "encode_checkpoint",
    "encode_entry",
    "genesis",
    "link",
    "nonce",
]

_DOMAIN_TAG = b"dpcompose-ledger-v2\x00"
#: Random bytes in every row written since version 4 (hashed with the row).
NONCE_BYTES = 16


def _dumps(doc: object) -> bytes:
    return json.dumps(doc, sort_keys=True, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def _entry_doc(e: LedgerEntry) -> dict[str, Any]:
    state = [f"{q.numerator}/{q.denominator}" for q in e.state]
    return {"kind": e.kind, "spec": e.spec, "rule": e.rule, "state": state, "queries": e.queries}


def nonce() -> str:
    """A fresh random nonce for a row: 16 random bytes as lower-case hex."""
    return secrets.token_hex(NONCE_BYTES)


def encode_entry(e: LedgerEntry) -> bytes:
    """An entry as canonical ASCII JSON (sorted keys, running sums as exact ``p/q`` fractions), with a fresh
    random ``nonce``: two rows never have the same bytes, so a rewrite after a rollback never reproduces
    the hash a lost row had, even for the same charges (version 4; older rows have none)."""
    return _dumps({**_entry_doc(e), "nonce": nonce()})


def decode_entry(raw: bytes) -> LedgerEntry:
    """Parse a stored entry; raises ``ValueError`` on anything malformed (the caller reports corruption)."""
    return _entry_from_doc(_without_nonce(json.loads(raw.decode("ascii"))))


def _without_nonce(doc: object) -> object:
    """``doc`` without its ``nonce`` (checked: lower-case hex of NONCE_BYTES bytes); others as they are."""
    if isinstance(doc, dict) and "nonce" in doc:
        doc = dict(doc)
        _hex(doc.pop("nonce"), NONCE_BYTES)
    return doc


def _entry_from_doc(doc: object) -> LedgerEntry:
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


class Checkpoint(NamedTuple):
    """What a checkpoint folds: the journal up to row ``seq`` of the file ``file_id``, whose hash was
    ``prev``, into every key's entry at that row."""

    file_id: bytes
    seq: int
    prev: bytes
    entries: dict[bytes, LedgerEntry]


def encode_checkpoint(cp: Checkpoint) -> bytes:
    """A checkpoint as canonical ASCII JSON (keys as hex of their UTF-8 bytes), with a fresh ``nonce``."""
    entries = {key.hex(): _entry_doc(e) for key, e in cp.entries.items()}
    doc = {"file": cp.file_id.hex(), "seq": cp.seq, "prev": cp.prev.hex(), "entries": entries}
    return _dumps({**doc, "nonce": nonce()})


def decode_checkpoint(raw: bytes) -> Checkpoint:
    """Parse a stored checkpoint; raises ``ValueError`` on anything malformed."""
    doc = _without_nonce(json.loads(raw.decode("ascii")))
    if not isinstance(doc, dict) or set(doc) != {"file", "seq", "prev", "entries"}:
        raise ValueError("malformed checkpoint")
    file_hex, seq, prev_hex, entries = (doc[k] for k in ("file", "seq", "prev", "entries"))
    if type(seq) is not int or seq < 1 or not isinstance(entries, dict):
        raise ValueError("malformed checkpoint")
    file_id, prev = _hex(file_hex, 16), _hex(prev_hex, 32)
    folded = {_hex(key_hex): _entry_from_doc(entry) for key_hex, entry in entries.items()}
    if b"" in folded:
        raise ValueError("a checkpoint entry has an empty key")
    return Checkpoint(file_id, seq, prev, folded)


def _hex(text: object, size: int | None = None) -> bytes:
    """Bytes from their canonical lower-case hex (``bytes.fromhex`` alone also takes spaces)."""
    if not isinstance(text, str):
        raise ValueError("malformed checkpoint")
    raw = bytes.fromhex(text)
    if raw.hex() != text or (size is not None and len(raw) != size):
        raise ValueError("malformed checkpoint")
    return raw


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


class Unanchored(Corrupt):
    """Internal: the file was recorded by an anchor, and the anchor it is opened with has no record of it."""


class Unverifiable(Corrupt):
    """Internal: the anchor's record lies in rows a checkpoint has folded, so it cannot be checked."""


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
