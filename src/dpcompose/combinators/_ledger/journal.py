"""The ledger file's layout and its journal: appending a row, verifying the journal from its start, and
folding old rows into a checkpoint so that the file stays bounded.

**Layout.** A table ``dpcompose_journal (seq, key, entry, hash)`` and a one-row table
``dpcompose_head (id, seq, hash, file_id, anchor)``. Rows ``1, 2, 3, …`` are charges and key creations: row
``n``'s hash is :func:`~dpcompose.combinators._ledger.chain.link` of row ``n − 1``'s hash (for row 1,
:func:`~dpcompose.combinators._ledger.chain.genesis` of the file id), ``n``, the key and the entry (which
holds a random nonce). The head row holds the last row's ``(seq, hash)`` and the id of the first anchor
that recorded the file (NULL: never anchored).

**Versions.** 2: the journal; 3: with a checkpoint; 4: rows hold a random nonce and the head an anchor
column. A file of version 2 or 3 is read as it is; the first row a dpcompose of version 4 appends to it
adds the head's column and marks it version 4 (in the same transaction), which dpcompose reading versions 2
and 3 only refuses by its version.

**Checkpoint.** A fold at head ``S`` appends one row with the empty key (no user key is empty), a
*checkpoint*, at ``S + 1``: a :class:`~dpcompose.combinators._ledger.chain.Checkpoint` that records a
sequence ``C < S``, row ``C``'s hash and every key's entry after row ``C``; then rows ``1 … C`` (with the
previous checkpoint) are deleted. The checkpoint is a row of the chain like any other: its hash covers the
row before it and everything it records, and every later row covers it, so the head and an anchor's
record commit to it. The journal is verified from the checkpoint: rows ``C + 1 …`` chain from the hash it
records, up to the checkpoint itself. A damaged checkpoint fails its chained hash (and a wrong recorded
hash also row ``C + 1``'s link); an older checkpoint put back, a deleted checkpoint or a folded row put
back leaves the journal starting at the wrong row: all are refused like any damaged row. What is gone is
the hash of each folded row: an anchor's record below ``C`` cannot be checked, and is refused.

**When.** A charge folds when the checkpoint is ``KEEP_ROWS + max(FOLD_EVERY, keys)`` rows behind the
head, keeping the last ``KEEP_ROWS`` rows before the new checkpoint (a process, or an anchor, that last
verified one of them still checks the chain through it, hash and all). The file then holds at most about
``2 KEEP_ROWS + FOLD_EVERY`` rows plus one entry per key, whatever the number of charges, and the work of
a fold (verifying and rewriting ``O(rows + keys)``) is spread over at least ``FOLD_EVERY`` charges.
"""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field

from dpcompose.combinators._ledger.base import LedgerEntry, continues
from dpcompose.combinators._ledger.chain import (
    Checkpoint,
    Corrupt,
    as_blob,
    as_int,
    decode_checkpoint,
    decode_entry,
    encode_checkpoint,
    genesis,
    link,
)

__all__ = [
    "APPLICATION_ID",
    "FOLD_EVERY",
    "HEAD",
    "JOURNAL",
    "KEEP_ROWS",
    "SCHEMA",
    "SCHEMA_V3",
    "SCHEMA_VERSION",
    "VERSIONS_READ",
    "Walk",
    "append",
    "build",
    "fold",
    "fold_due",
    "fold_point",
    "hash_at",
    "upgrade",
    "walk",
]

APPLICATION_ID = 0x4450_4C47  # "DPLG"
#: 1: one mutable row per key (dpcompose ≤ 0.x, before issue 11); 2: hash-chained append-only journal;
#: 3: the same, with a checkpoint row folding old rows; 4: rows with a nonce, the head with an anchor id.
#: Versions 2 and 3 are read as they are and marked version 4 by the first row appended (see above).
SCHEMA_VERSION = 4
VERSIONS_READ = (2, 3, 4)
JOURNAL = "dpcompose_journal"
HEAD = "dpcompose_head"
_HEAD_V3 = (
    f"CREATE TABLE {HEAD} (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL, "
    "hash BLOB NOT NULL, file_id BLOB NOT NULL"
)
_ADD_ANCHOR = "anchor BLOB"  # what ALTER TABLE appends to the head's CREATE statement
#: The schema of a version 4 file (a version 2 or 3 file has the head without its anchor column).
SCHEMA = {
    JOURNAL: f"CREATE TABLE {JOURNAL} (seq INTEGER PRIMARY KEY, key BLOB NOT NULL, entry BLOB NOT NULL, "
    "hash BLOB NOT NULL)",
    HEAD: f"{_HEAD_V3}, {_ADD_ANCHOR})",
}
SCHEMA_V3 = {**SCHEMA, HEAD: f"{_HEAD_V3})"}
#: Rows a fold keeps before its checkpoint (at least 2: the last row and the one before it are rows).
KEEP_ROWS = 32
#: Rows past the checkpoint, besides the kept ones, before the next fold (at least the number of keys,
#: which each fold rewrites).
FOLD_EVERY = 32


def fold_due(head: int, checkpoint: int, keys: int) -> bool:
    """Whether a charge at ``head`` should fold a journal whose checkpoint row is ``checkpoint`` (0: none)
    and holds ``keys`` keys."""
    return head - checkpoint >= KEEP_ROWS + max(FOLD_EVERY, keys)


def fold_point(head: int) -> int:
    """The last row a fold at ``head`` folds into its checkpoint."""
    return head - KEEP_ROWS


def build(conn: sqlite3.Connection) -> None:
    """Lay out a new, empty ledger file (inside the caller's transaction)."""
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    for sql in SCHEMA.values():
        conn.execute(sql)
    file_id = secrets.token_bytes(16)
    head = (genesis(file_id), file_id)
    conn.execute(f"INSERT INTO {HEAD} (id, seq, hash, file_id, anchor) VALUES (1, 0, ?, ?, NULL)", head)


def upgrade(conn: sqlite3.Connection) -> None:
    """Make a version 2 or 3 file version 4 (inside the caller's write transaction, before it appends)."""
    conn.execute(f"ALTER TABLE {HEAD} ADD COLUMN {_ADD_ANCHOR}")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def hash_at(conn: sqlite3.Connection, file_id: bytes, seq: int) -> bytes | None:
    """The stored hash after row ``seq`` of a verified journal: the row's, the checkpoint's record of the
    row it folds up to, or the genesis hash for 0 before any fold; None if the row was folded away."""
    row = conn.execute(f"SELECT hash FROM {JOURNAL} WHERE seq = ?", (seq,)).fetchone()
    if row is not None:
        return as_blob(row[0], "row hash", 32)
    checkpoint = conn.execute(f"SELECT entry FROM {JOURNAL} WHERE length(key) = 0").fetchone()
    if checkpoint is None:
        return genesis(file_id) if seq == 0 else None
    cp = decode_checkpoint(as_blob(checkpoint[0], "checkpoint"))
    return cp.prev if cp.seq == seq else None


def append(conn: sqlite3.Connection, seq: int, prev: bytes, key: bytes, raw: bytes) -> bytes:
    """Append row ``seq`` after a row whose hash is ``prev`` and move the head to it; returns its hash."""
    digest = link(prev, seq, key, raw)
    row = (seq, key, raw, digest)
    conn.execute(f"INSERT INTO {JOURNAL} (seq, key, entry, hash) VALUES (?, ?, ?, ?)", row)
    conn.execute(f"UPDATE {HEAD} SET seq = ?, hash = ? WHERE id = 1", (seq, digest))
    return digest


@dataclass
class Walk:
    """What verifying the journal from its start established.

    Attributes:
        start: the row the checkpoint folds up to (0: no checkpoint); the journal's rows follow it.
        checkpoint: the checkpoint's own row (0: none).
        keys: how many keys the checkpoint holds.
        seq: the last row's sequence.
        hash: the last row's hash.
        entries: every key's last entry.
        at: the hash after row ``n`` for each probed ``n`` from ``start`` to ``seq`` (``at[start]`` is the
            hash the checkpoint records, or the genesis hash).
        folded: what a fold at ``fold_at`` records, if asked for and passed.
    """

    start: int = 0
    checkpoint: int = 0
    keys: int = 0
    seq: int = 0
    hash: bytes = b""
    entries: dict[bytes, LedgerEntry] = field(default_factory=dict)
    at: dict[int, bytes] = field(default_factory=dict)
    folded: Checkpoint | None = None


def walk(
    conn: sqlite3.Connection,
    file_id: bytes,
    key: bytes | None,
    probes: Iterable[int] = (),
    fold_at: int = -1,
) -> Walk:
    """Verify the whole journal from its start (the checkpoint's recorded hash, or the genesis hash).

    Every row must follow the one before it and pass its chained hash, the checkpoint row included.
    ``key``'s rows (if given) must each continue the one before (the same accountant, never fewer queries);
    every key's entry is parsed where it is needed, its last before ``fold_at`` and at the end, and must
    continue its entry in the checkpoint.

    Raises:
        Corrupt: a check fails.
        ValueError: a stored entry or checkpoint is malformed (the caller reports corruption).
    """
    wanted = set(probes)
    out = Walk(seq=0, hash=genesis(file_id))
    folded: dict[bytes, LedgerEntry] = {}  # the checkpoint's entries
    checkpoints = conn.execute(f"SELECT seq, entry FROM {JOURNAL} WHERE length(key) = 0").fetchall()
    if len(checkpoints) > 1:
        raise Corrupt(f"the journal has {len(checkpoints)} checkpoints")
    if checkpoints:
        out.checkpoint = as_int(checkpoints[0][0], "checkpoint seq")
        cp = decode_checkpoint(as_blob(checkpoints[0][1], "checkpoint"))
        if cp.file_id != file_id:
            raise Corrupt("the checkpoint belongs to another ledger file")
        if cp.seq >= out.checkpoint:
            raise Corrupt(f"the checkpoint at row {out.checkpoint} folds rows up to {cp.seq}")
        out.start = out.seq = cp.seq
        out.hash, out.keys, folded = cp.prev, len(cp.entries), cp.entries
    own = folded.get(key) if key is not None else None
    raws: dict[bytes, bytes] = {}  # each key's last entry since the checkpoint's, as stored
    at_fold: tuple[bytes, dict[bytes, bytes]] | None = None
    if out.seq in wanted:
        out.at[out.seq] = out.hash
    rows = conn.execute(f"SELECT seq, key, entry, hash FROM {JOURNAL} ORDER BY seq")
    for row_seq, row_key, raw, digest in rows:
        row_seq = as_int(row_seq, "row seq")
        if row_seq != out.seq + 1:
            raise Corrupt(f"journal row {out.seq + 1} is missing (next is {row_seq})")
        row_key, raw = as_blob(row_key, "key"), as_blob(raw, "entry")
        if link(out.hash, row_seq, row_key, raw) != as_blob(digest, "row hash", 32):
            what = "the checkpoint" if row_seq == out.checkpoint else f"journal row {row_seq}"
            raise Corrupt(f"{what} fails its chained checksum")
        if row_key == key:
            new = decode_entry(raw)
            if not continues(own, new):
                raise Corrupt(f"journal row {row_seq} does not continue key {_name(row_key)!r}")
            own = new
        if row_key:
            raws[row_key] = raw
        out.seq, out.hash = row_seq, digest
        if out.seq in wanted:
            out.at[out.seq] = out.hash
        if out.seq == fold_at:
            at_fold = (out.hash, dict(raws))
    out.entries = _merged(folded, raws)
    if at_fold is not None:
        out.folded = Checkpoint(file_id, fold_at, at_fold[0], _merged(folded, at_fold[1]))
    return out


def _merged(folded: dict[bytes, LedgerEntry], raws: dict[bytes, bytes]) -> dict[bytes, LedgerEntry]:
    entries = dict(folded)
    for key, raw in raws.items():
        new = decode_entry(raw)
        if not continues(folded.get(key), new):
            raise Corrupt(f"key {_name(key)!r} does not continue its entry in the checkpoint")
        entries[key] = new
    return entries


def _name(key: bytes) -> str:
    return key.decode("utf-8", "replace")


def fold(conn: sqlite3.Connection, head: int, head_hash: bytes, checkpoint: Checkpoint) -> bytes:
    """Append ``checkpoint`` after the head ``(head, head_hash)`` and delete the rows it folds, the previous
    checkpoint among them (inside the caller's write transaction, after a :func:`walk` that produced it);
    returns the checkpoint row's hash."""
    digest = append(conn, head + 1, head_hash, b"", encode_checkpoint(checkpoint))
    conn.execute(f"DELETE FROM {JOURNAL} WHERE seq <= ?", (checkpoint.seq,))
    return digest
