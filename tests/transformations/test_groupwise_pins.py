"""make_groupwise's outputs and maps pinned on fixed inputs: the column-at-a-time routing of plain keys
gives the parts the record-by-record routing gives, bit for bit (the digests were taken with the
record-by-record routing), including the shuffle of tied records for a plain-function statistic."""

from __future__ import annotations

import hashlib
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import dpcompose as dp
from dpcompose.measurements._random import SeededSource

ROWS = dp.VectorDomain(dp.AtomDomain(tuple))
DICTS = dp.VectorDomain(dp.AtomDomain(dict))
SYM = dp.SymmetricDistance()


class Opaque:
    """A value the encoding cannot tell apart from another Opaque: ties, shuffled from the rng."""

    def __init__(self, v: int) -> None:
        self.v = v


def int_sum() -> Any:
    col = dp.t.make_select_column(ROWS, SYM, 1, dp.AtomDomain(int), 0)
    clamped = col >> dp.t.make_clamp(col.output_domain, col.output_metric, (0, 50))
    return clamped >> dp.t.make_sum(clamped.output_domain, clamped.output_metric)


def first_opaque(part: list[Any]) -> int:
    return int(part[0][2].v) if part else -1


def dict_sum(part: list[Any]) -> int:
    return sum(r["v"] for r in part)


def _cases() -> dict[str, tuple[Any, Any]]:
    rng = np.random.default_rng(7)
    n = 3000
    ids = rng.integers(0, 500, n).tolist()
    vals = rng.integers(0, 9, n).tolist()
    plain = [(i, v) for i, v in zip(ids, vals, strict=True)]
    strs = [(f"u{i}", v) for i, v in zip(ids, vals, strict=True)]
    mixed = [
        (i if j % 5 else (float(i) if j % 2 else (np.int64(i) if j % 3 else str(i))), v)
        for j, (i, v) in enumerate(zip(ids, vals, strict=True))
    ] + [(), (None, 1), (True, 2), (2**70, 3), (-(2**65), 4)]
    big = [(i + 2**64 if i % 3 else i, v) for i, v in zip(ids, vals, strict=True)]
    opaque = [(i % 40, v, Opaque(j % 3)) for j, (i, v) in enumerate(zip(ids, vals, strict=True))]
    dicts = [{"id": f"p{i}", "v": v} for i, v in zip(ids, vals, strict=True)]
    wide = (0, 10**6)
    out: dict[str, tuple[Any, Any]] = {}
    for name, data in (("plain", plain), ("strs", strs), ("mixed", mixed), ("big", big)):
        out[f"{name}-buckets"] = (
            dp.t.make_groupwise(ROWS, SYM, int_sum(), by=0, buckets=37, bounds=wide),
            data,
        )
    out["plain-keys"] = (
        dp.t.make_groupwise(ROWS, SYM, int_sum(), by=0, keys=[3, 5, 499, 10**9, "x"], bounds=wide),
        plain,
    )
    out["plain-callable"] = (
        dp.t.make_groupwise(ROWS, SYM, int_sum(), by=lambda r: r[0] % 11, buckets=5, bounds=wide),
        plain,
    )
    out["user-level"] = (
        dp.t.make_groupwise(ROWS, dp.SymmetricIdDistance(0), int_sum(), by=0, buckets=64, bounds=wide),
        plain,
    )
    out["chg"] = (
        dp.t.make_groupwise(ROWS, dp.ChangeOneDistance(), int_sum(), by=0, buckets=3, bounds=wide),
        strs,
    )
    out["opaque-ties"] = (
        dp.t.make_groupwise(ROWS, SYM, first_opaque, by=0, buckets=16, bounds=(-1, 5), rng=SeededSource(11)),
        opaque,
    )
    out["dicts"] = (dp.t.make_groupwise(DICTS, SYM, dict_sum, by="id", buckets=9, bounds=wide), dicts)
    return out


PINNED = {
    "plain-buckets": "13e04af3c291dcd9",
    "strs-buckets": "53994a73c2230786",
    "mixed-buckets": "ce948c564da72cc8",
    "big-buckets": "7e2f0a17d5512557",
    "plain-keys": "3d9640a2738d74b8",
    "plain-callable": "2ed25320049bbad3",
    "user-level": "591a591ca7ee3186",
    "chg": "9f36f9da5300813d",
    "opaque-ties": "134300d5744a0f86",
    "dicts": "7c75215b0a62d64b",
}


def test_outputs_are_the_pinned_ones() -> None:
    got = {}
    for name, (t, data) in _cases().items():
        out = np.asarray(t(data))
        got[name] = hashlib.sha256(out.tobytes() + str(out.dtype).encode()).hexdigest()[:16]
    assert got == PINNED


def test_the_shuffle_of_ties_is_drawn_from_the_rng() -> None:
    rng = np.random.default_rng(7)  # the rows of the case "opaque-ties"
    ids, vals = rng.integers(0, 500, 3000).tolist(), rng.integers(0, 9, 3000).tolist()
    data = [(i % 40, v, Opaque(j % 3)) for j, (i, v) in enumerate(zip(ids, vals, strict=True))]
    seeded = [
        dp.t.make_groupwise(ROWS, SYM, first_opaque, by=0, buckets=16, bounds=(-1, 5), rng=SeededSource(s))
        for s in (11, 12)
    ]
    assert seeded[0](data).tolist() == [1, 0, 2, 0, 1, 0, 0, 2, -1, 0, 0, 0, 0, 2, 0, 1]
    assert seeded[1](data).tolist() == [1, 0, 1, 0, 1, 1, 0, 2, -1, 2, 1, 0, 0, 2, 1, 0]


def test_keys_with_a_nul_character_stay_apart() -> None:
    # numpy's str arrays drop trailing NULs: such keys are routed record by record
    t = dp.t.make_groupwise(ROWS, SYM, len, by=0, keys=["a", "a\x00"], bounds=(0, 10**4))
    assert t([("a", 1), ("a\x00", 2), ("a\x00", 3)] * 400).tolist() == [400, 800]


@pytest.mark.parametrize(
    ("metric", "expected"),
    [
        (dp.L1Distance(), [0, 50, 100, 250, 2000]),
        (
            dp.L2Distance(),
            [
                0,
                Fraction(7036874417766401, 140737488355328),
                Fraction(7036874417766401, 70368744177664),
                Fraction(5277655813324801, 35184372088832),
                Fraction(7867464773627463, 17592186044416),
            ],
        ),
    ],
)
def test_maps_are_the_pinned_ones(metric: dp.Metric, expected: list[Fraction]) -> None:
    t = dp.t.make_groupwise(ROWS, SYM, int_sum(), by=0, buckets=37, bounds=(0, 100), metric=metric)
    assert [t.map(d) for d in (0, 1, 2, 5, 40)] == expected
