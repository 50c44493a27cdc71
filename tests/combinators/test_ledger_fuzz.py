"""Fuzzing an SQLiteLedger file (issue 11 C.9): truncations, byte flips, deleted and copied-back rows.

Every damaged file, opened and read, must either raise LedgerError or give exactly the committed entry —
never a smaller spend, never another exception. The default run samples; ``-m slow`` tries every
truncation length and every byte offset. Each runs on a journal and on a journal folded into checkpoints
(issue 32 item 10).
"""

from __future__ import annotations

import contextlib
import random
import sqlite3
from collections.abc import Iterable
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

import dpcompose as dp
from dpcompose.combinators._ledger import LedgerEntry, journal

KIND, SPEC = "filter", "fuzz spec"


def add(q: Fraction) -> Any:
    def update(e: LedgerEntry) -> LedgerEntry:
        total = e.state[0] if e.state else Fraction(0)
        return e.replace(rule="basic", state=(total + q,), queries=e.queries + 1)

    return update


def make_pristine(path: Path, folded: bool) -> tuple[bytes, LedgerEntry]:
    """A ledger with two keys and several charges each (folded into a checkpoint twice or more, if asked);
    returns its bytes and key 'k''s entry."""
    with pytest.MonkeyPatch.context() as patch:
        if folded:
            patch.setattr(journal, "KEEP_ROWS", 3)
            patch.setattr(journal, "FOLD_EVERY", 4)
        a = dp.SQLiteLedger(path, "k", create=True)
        b = dp.SQLiteLedger(path, "other", create=True)
        a.bind(KIND, SPEC)
        b.bind(KIND, SPEC)
        committed = a.read()
        for i in range(8):
            committed = a.charge(add(Fraction(1, 3 + i)))
            b.charge(add(Fraction(1, 7)))
        a.close()
        b.close()
    assert not (path.parent / "ledger.db-journal").read_bytes()  # nothing lives outside the .db
    with contextlib.closing(sqlite3.connect(path)) as conn:
        first, checkpoints = conn.execute(
            "SELECT min(seq), sum(length(key) = 0) FROM dpcompose_journal"
        ).fetchone()
    assert (first > 1, checkpoints) == ((True, 1) if folded else (False, 0))
    return path.read_bytes(), committed


@pytest.fixture(scope="module", params=["journal", "folded"])
def pristine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[bytes, LedgerEntry]:
    return make_pristine(tmp_path_factory.mktemp("fuzz") / "ledger.db", request.param == "folded")


@pytest.fixture(scope="module")
def unfolded(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, LedgerEntry]:
    return make_pristine(tmp_path_factory.mktemp("fuzz") / "ledger.db", False)


class Outcomes:
    def __init__(self, committed: LedgerEntry) -> None:
        self.committed = committed
        self.refused = self.exact = 0
        self.bad: list[str] = []

    def check(self, path: Path, label: str) -> None:
        ledger = dp.SQLiteLedger(path, "k")
        try:
            ledger.bind(KIND, SPEC)
            got = ledger.read()
        except dp.LedgerError:
            self.refused += 1
            return
        except Exception as exc:  # any other exception is the failure being looked for
            self.bad.append(f"{label}: {type(exc).__name__}: {exc}")
            return
        finally:
            ledger.close()
        if got == self.committed:
            self.exact += 1
        else:
            self.bad.append(f"{label}: read {got} instead of {self.committed}")


def run_cases(tmp: Path, data: bytes, committed: LedgerEntry, cases: Iterable[tuple[str, bytes]]) -> Outcomes:
    out = Outcomes(committed)
    for i, (label, damaged) in enumerate(cases):
        path = tmp / f"case{i}.db"
        path.write_bytes(damaged)
        out.check(path, label)
        path.unlink()
        for extra in (path.with_name(path.name + "-journal"),):
            extra.unlink(missing_ok=True)
    assert not out.bad, out.bad[:10]
    return out


def truncations(data: bytes, lengths: Iterable[int]) -> Iterable[tuple[str, bytes]]:
    for n in lengths:
        yield f"truncated to {n}", data[:n]


def flips(data: bytes, offsets: Iterable[int], masks: Iterable[int]) -> Iterable[tuple[str, bytes]]:
    for off in offsets:
        for mask in masks:
            damaged = bytearray(data)
            damaged[off] ^= mask
            yield f"byte {off} ^ {mask:#04x}", bytes(damaged)


def test_truncations_sampled(tmp_path: Path, pristine: tuple[bytes, LedgerEntry]) -> None:
    data, committed = pristine
    rng = random.Random(11)
    lengths = {0, 1, 2, 99, 100, 101, 4095, 4096, 4097, len(data) - 1}
    lengths |= {rng.randrange(len(data)) for _ in range(40)}
    out = run_cases(tmp_path, data, committed, truncations(data, sorted(lengths)))
    assert out.refused == len(lengths)  # every truncation of this file loses a page: always refused


def test_byte_flips_sampled(tmp_path: Path, pristine: tuple[bytes, LedgerEntry]) -> None:
    data, committed = pristine
    rng = random.Random(12)
    offsets = sorted({rng.randrange(len(data)) for _ in range(300)} | set(range(0, 100, 7)))
    run_cases(tmp_path, data, committed, flips(data, offsets, [0x01, 0xFF]))


@pytest.mark.slow
def test_every_truncation(tmp_path: Path, pristine: tuple[bytes, LedgerEntry]) -> None:
    data, committed = pristine
    run_cases(tmp_path, data, committed, truncations(data, range(len(data))))


@pytest.mark.slow
def test_every_byte_flip(tmp_path: Path, pristine: tuple[bytes, LedgerEntry]) -> None:
    data, committed = pristine
    run_cases(tmp_path, data, committed, flips(data, range(len(data)), [0x01, 0x80, 0xFF]))


def edited(tmp: Path, data: bytes, *sql: str) -> bytes:
    path = tmp / "edit.db"
    path.write_bytes(data)
    with contextlib.closing(sqlite3.connect(path)) as conn:
        for statement in sql:
            conn.execute(statement)
        conn.commit()
    out = path.read_bytes()
    path.unlink()
    return out


@pytest.mark.parametrize(
    "sql",
    [
        ["DELETE FROM dpcompose_journal WHERE key = CAST('k' AS BLOB)"],  # the key's rows deleted
        ["DELETE FROM dpcompose_journal WHERE seq = 5"],  # one row in the middle
        ["DELETE FROM dpcompose_journal WHERE seq = (SELECT max(seq) FROM dpcompose_journal)"],
        [  # an older row of the key copied over its last row
            "UPDATE dpcompose_journal SET (entry, hash) = (SELECT entry, hash FROM dpcompose_journal "
            "WHERE seq = 3) WHERE seq = (SELECT max(seq) FROM dpcompose_journal "
            "WHERE key = CAST('k' AS BLOB))"
        ],
        ["UPDATE dpcompose_journal SET entry = replace(entry, '\"queries\":8', '\"queries\":1')"],
        ["DELETE FROM dpcompose_head"],
        ["DROP TABLE dpcompose_head"],
    ],
)
def test_row_edits_are_refused(tmp_path: Path, unfolded: tuple[bytes, LedgerEntry], sql: list[str]) -> None:
    data, committed = unfolded
    damaged = edited(tmp_path, data, *sql)
    assert damaged != data
    out = run_cases(tmp_path, data, committed, [(" / ".join(sql), damaged)])
    assert out.refused == 1
