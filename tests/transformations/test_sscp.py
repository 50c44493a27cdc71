"""make_sscp: outputs pinned to the values main computed before the input check was fused into the block
loop (with the speed devices on and off), the fused check deciding exactly as the input domain's own check
(in one thread or two), and the norm bound's square root tight at every scale."""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpcompose as dp
from dpcompose._scipy import blas_dgemm
from dpcompose.accounting import float_down
from dpcompose.core._norm_domain import all_within
from dpcompose.errors import DomainMismatch
from dpcompose.transformations._sscp import BLOCK_ROWS, sqrt_up_rational
from dpcompose.transformations._sscp_speed import (
    block_gram,
    sscp_speedups,
    sscp_threads,
    two_threads,
    uses_gemm,
)

SYM, CHG = dp.SymmetricDistance(), dp.ChangeOneDistance()


def _box(lo: Any, hi: Any, d: int, size: int | None = None) -> dp.VectorDomain:
    return dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float, bounds=(lo, hi)), size=d), size=size)


def _ball(d: int, c: float, p: int = 2) -> dp.VectorDomain:
    return dp.VectorDomain(dp.NormBallDomain(size=d, norm=c, p=p))


def _cases() -> Iterator[tuple[str, Any, Any]]:
    r = np.random.default_rng(36)
    x3 = r.uniform(-1, 1, (20000, 3))
    yield "box3", dp.t.make_sscp(_box(-1.0, 1.0, 3), SYM, max_size=20000), x3
    yield "box3_icpt_one", dp.t.make_sscp(_box(-1.0, 1.0, 3, 20000), CHG, intercept=True), x3
    x10 = r.normal(size=(17000, 10))
    x10 *= (1 - 2.0**-30) / np.maximum(1.0, np.linalg.norm(x10, axis=1))[:, None]
    yield "ball10", dp.t.make_sscp(_ball(10, 1.0), SYM, max_size=17000), x10
    x4 = r.uniform(-1, 1, (9000, 4))
    x4 *= 2.5 * (1 - 2.0**-30) / np.maximum(2.5, np.abs(x4).sum(axis=1))[:, None]
    yield "ball4_l1_icpt", dp.t.make_sscp(_ball(4, 2.5, 1), SYM, max_size=9000, intercept=True), x4
    huge = r.uniform(-1, 1, (3000, 5)) * 2.0**400
    yield "huge", dp.t.make_sscp(_box(-(2.0**400), 2.0**400, 5), SYM, max_size=3000), huge
    tiny = r.uniform(-1, 1, (3000, 5)) * 2.0**-500
    yield "tiny", dp.t.make_sscp(_box(-(2.0**-500), 2.0**-500, 5), SYM, max_size=3000), tiny
    tiny_icpt = dp.t.make_sscp(_box(-(2.0**-500), 2.0**-500, 5), SYM, max_size=3000, intercept=True)
    yield "tiny_icpt", tiny_icpt, tiny
    yield "clamped", dp.t.make_sscp(_ball(10, 1.0), SYM, max_size=100), x10[:5000]
    odd = r.uniform(-0.3, 0.7, (12000, 6))
    yield "odd_bounds", dp.t.make_sscp(_box(-0.3, 0.7, 6), SYM, max_size=12000), odd
    yield "list_rows", dp.t.make_sscp(_box(-1.0, 1.0, 3), SYM, max_size=100), x3[:50].tolist()
    strided = np.asfortranarray(r.uniform(-1, 1, (18000, 6)))[:, ::2]
    yield "fortran_strided", dp.t.make_sscp(_box(-1.0, 1.0, 3), SYM, max_size=20000), strided
    yield "ball10_icpt", dp.t.make_sscp(_ball(10, 1.0), SYM, max_size=17000, intercept=True), x10
    yield "box7", dp.t.make_sscp(_box(-1.0, 1.0, 7), SYM, max_size=10000), r.uniform(-1, 1, (10000, 7))
    yield "empty", dp.t.make_sscp(_box(-1.0, 1.0, 3), SYM, max_size=10), np.zeros((0, 3))


PINNED = {  # sha256 of the released float64 vector, computed on main (dcbd886) with the same data
    "box3": "e921be255eec532a71c320728f4a8d193696bfcd39c56506f72370d36f981ce8",
    "box3_icpt_one": "fcaf1d0d82440d99a08a3f29edff5602a5ebc0d6f36dc4df0ba6812f95f984a7",
    "ball10": "ff00ce50a3a051430789fd42634d5d28d2cbb1803501724617ad50df1f0b8876",
    "ball4_l1_icpt": "4a8b6a752b6629234de6d66ce41694b1c1e50bdeda3c4f35e580073e352f3bec",
    "huge": "aa87a4659650bf5fd85b99df283a3f4f43d54ac61755fe72d2ac5a5e88cde3f1",
    # "tiny": main's grid was 2**-60 (its √ had an absolute 2**-40 slack): every entry released as 0
    "tiny_icpt": "bb77e85a8c879e12c9137fe0de19b43b33fa60901cdad8e9224e4fdc3f8ac7b4",
    "clamped": "c695789cda3195b06059cd3d601a61ee4af5719e5bdee1bd803da29cd81119d4",
    "odd_bounds": "720e6773d4128df51b0de8c44f84476cbaf99ffeefd9f4d2c0f39d6fccc54532",
    "list_rows": "010267b92ca3137f0276a1a43146efead4c67d6032f1b356e765c3cdc66a9a17",
    "fortran_strided": "6c542f11bbfe0cc2898b1add82ccc2299ee7bf8a6dc942b126dbcf71fcda7230",
    "ball10_icpt": "1db01214c5ea2c8239b40c32e34f733357966c15811966884607ea64d98a5845",
    "box7": "047db69e8b8d2d28f064ab5ac4f6e2cd67e9c0f4633c5e7971c48e63869ff771",
    "empty": "834a709ba2534ebe3ee1397fd4f7bd288b2acc1d20a08d6c862dcd99b6f04400",
}


def test_sscp_outputs_pinned_to_main() -> None:
    for name, t, data in _cases():
        out = t(data)
        assert np.array_equal(out, t.function(data)), name
        if name in PINNED:
            assert hashlib.sha256(out.tobytes()).hexdigest() == PINNED[name], name
        else:  # tiny: a grid at the data's scale (2**-518 here): within a relative 2**-17 of X.T @ X
            exact = (data.T @ data).ravel()
            assert np.all(np.abs(out - exact) <= 2.0**-17 * np.abs(exact).max()), name


@pytest.fixture
def two_parts(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The two threads turned on, for datasets of 2 blocks or more (the pinned cases hold up to 3), of every
    width."""
    monkeypatch.setattr("dpcompose.transformations._sscp_speed.PARALLEL_BLOCKS", 2)
    monkeypatch.setattr("dpcompose.transformations._sscp_speed.THREAD_WIDTHS", range(1, 1025))
    with sscp_threads(True):
        yield


@pytest.mark.parametrize("on", [True, False])
def test_sscp_same_bits_with_speedups_on_and_off(on: bool, two_parts: None) -> None:
    """Two threads and BLAS's general product (every width here) release the pinned bits, as one thread and
    numpy's product do."""
    with sscp_speedups(on):
        for name, t, data in _cases():
            if name in PINNED:
                assert hashlib.sha256(t(data).tobytes()).hexdigest() == PINNED[name], (name, on)


def _sscp_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "dpcompose-sscp-part"]


@pytest.mark.parametrize("on", [True, False])
def test_sscp_parts_run_in_two_threads(on: bool, two_parts: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the switch on, the blocks of a large dataset are tested (and multiplied) in two threads, none
    left running after the call, the same bits; off, all in the caller's."""
    seen: set[str] = set()
    took = {"dpcompose-sscp-part": threading.Event(), threading.current_thread().name: threading.Event()}

    def recording(*args: Any) -> bool:  # each thread's first block waits until the other has one
        name = threading.current_thread().name
        seen.add(name)
        if on:
            took[name].set()
            other = next(event for key, event in took.items() if key != name)
            assert other.wait(timeout=60)
        return all_within(*args)

    monkeypatch.setattr("dpcompose.transformations._sscp.all_within", recording)
    x = np.random.default_rng(2).uniform(-0.5, 0.5, (4 * BLOCK_ROWS + 3, 3))
    t = dp.t.make_sscp(_ball(3, 1.0), SYM, max_size=len(x))
    with sscp_speedups(on):
        out = t(x)
    here = threading.current_thread().name
    assert seen == ({here, "dpcompose-sscp-part"} if on else {here})
    with sscp_speedups(not on):
        assert np.array_equal(t(x), out)
    assert _sscp_threads() == []


@pytest.mark.parametrize("bad", [[0], [-1], [0, -1], [3 * BLOCK_ROWS - 1]])
def test_sscp_refusal_in_either_part(bad: list[int], two_parts: None) -> None:
    """A non-member row in the first block, the last, both or one between is refused with the domain's own
    message, nothing released and no thread left running (whichever thread took the block); members before
    and after give the one-thread bits."""
    x = np.random.default_rng(3).uniform(-0.5, 0.5, (5 * BLOCK_ROWS + 1, 4))
    for t in (
        dp.t.make_sscp(_box(-0.5, 0.5, 4), SYM, max_size=len(x)),
        dp.t.make_sscp(_ball(4, 1.0), CHG, max_size=len(x), intercept=True),
    ):
        with sscp_speedups(False):
            one_thread = t(x)
        assert np.array_equal(t(x), one_thread)
        y = x.copy()
        y[bad] = [0.5, 0.5, 0.5, np.nextafter(0.5, 1.0)]
        assert _refusal(t, y) == _refusal(t.input_domain.check, y)
        assert _sscp_threads() == []
        assert np.array_equal(t(x), one_thread)


def test_block_gram_exact_both_ways() -> None:
    """SciPy's ``dgemm`` and numpy's product both give the exact integer ``QᵀQ`` at the grid's extremes
    (partial sums up to 2**53), full and partial blocks, C-contiguous or not (then ``dgemm`` copies)."""
    r = np.random.default_rng(4)
    for d in (1, 2, 3, 5, 7, 10, 11, 12, 16, 21, 33):
        for m in (BLOCK_ROWS, BLOCK_ROWS - 1, 4 * 7):
            q = r.integers(-(2**20), 2**20, size=(m, d), endpoint=True).astype(np.float64)
            q[: m // 2] = np.where(q[: m // 2] < 0, -(2.0**20), 2.0**20)
            exact = q.astype(np.int64).T @ q.astype(np.int64)
            assert np.array_equal(block_gram(q, blas_dgemm()), exact), (d, m)
            assert np.array_equal(block_gram(q, None), exact), (d, m)
            assert np.array_equal(block_gram(np.asfortranarray(q), blas_dgemm()), exact), (d, m)
    assert int(np.abs(block_gram(np.full((BLOCK_ROWS, 2), 2.0**20), blas_dgemm())).max()) == 2**53


def test_two_threads_by_size_width_and_switches() -> None:
    """Turned on: for 32 blocks or more of widths 8 to 20; off by default (unless the environment says)."""
    with sscp_threads(True):
        assert [d for d in range(1, 40) if two_threads(32 * BLOCK_ROWS, d, BLOCK_ROWS)] == [*range(8, 21)]
        assert not two_threads(31 * BLOCK_ROWS, 10, BLOCK_ROWS)
        with sscp_speedups(False):
            assert not two_threads(10**6, 10, BLOCK_ROWS)
    with sscp_threads(False):
        assert not two_threads(10**6, 10, BLOCK_ROWS)


@pytest.mark.parametrize(
    "d", [2, 4, 8, 9, 11, 12, 16, 20, 21, 33, pytest.param(64, marks=pytest.mark.slow)]
)  # 64 (numpy's product again, the largest) in the slow run: 33 is the wide case by default
def test_every_product_path_gives_the_exact_integers(d: int, two_parts: None) -> None:
    """End to end at the widths of each product (dgemm 2-11, numpy's 12 and up; threads at every width
    here, by the fixture): speedups on, off and threads give the same bits, and they are the exact rounded
    Gram matrix of the grid rows (computed in Python integers), with and without the intercept."""
    r = np.random.default_rng(d)
    x = r.uniform(-1.0, 1.0, (2 * BLOCK_ROWS + 5, d))
    x[:7] = np.where(x[:7] < 0, -1.0, 1.0)  # entries at the bounds: grid values at the extremes
    for intercept in (False, True):
        t = dp.t.make_sscp(_box(-1.0, 1.0, d), SYM, max_size=len(x), intercept=intercept)
        with sscp_threads(False):
            one = t(x)
        with sscp_speedups(False):
            off = t(x)
        assert np.array_equal(t(x), one) and np.array_equal(one, off), (d, intercept)
        k = (
            20
            - math.frexp(
                max(float(sqrt_up_rational(Fraction(d))), 1.0)
                if intercept
                else float(sqrt_up_rational(Fraction(d)))
            )[1]
        )
        q = np.rint(x * 2.0**k).astype(np.int64)
        if intercept:
            q = np.hstack([q, np.full((len(x), 1), 1 << k, dtype=np.int64)])
        exact = [int(v) for v in (q.T @ q).ravel()]  # int64: |sum| <= 16389·2**40 < 2**63, exact
        assert one.tolist() == [v / 2 ** (2 * k) for v in exact], (d, intercept)


def test_uses_gemm_by_width_and_switch() -> None:
    assert [d for d in range(1, 1025) if uses_gemm(d)] == [*range(2, 12)]
    with sscp_speedups(False):
        assert not any(uses_gemm(d) for d in range(1, 40))


def _check_calls(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    calls: list[object] = []
    original = dp.VectorDomain.check

    def counting(self: dp.VectorDomain, value: object, what: str = "data") -> None:
        calls.append(value)
        original(self, value, what)

    monkeypatch.setattr(dp.VectorDomain, "check", counting)
    return calls


@pytest.mark.parametrize("domain", ["box", "ball"])
def test_sscp_call_checks_in_the_block_pass(domain: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a float64 array the call makes no separate pass of the input domain's check (the blocks are
    tested as they are multiplied), alone and chained before noise; other data is checked first."""
    x = np.random.default_rng(1).uniform(-0.5, 0.5, (BLOCK_ROWS + 5, 3))
    rows = _box(-0.5, 0.5, 3) if domain == "box" else _ball(3, 1.0)
    t = dp.t.make_sscp(rows, SYM, max_size=len(x))
    noisy = t >> dp.m.make_gaussian(t.output_domain, t.output_metric, scale=1.0)
    matrix = noisy >> (lambda v: v.reshape(3, 3))
    calls = _check_calls(monkeypatch)
    assert np.array_equal(t(x), t.function(x))
    assert noisy(x).shape == (9,)
    assert matrix(x).shape == (3, 3)
    assert calls == []
    t(x.tolist()[:10])
    assert len(calls) == 1


def _refusal(call: Any, data: Any) -> str:
    with pytest.raises(DomainMismatch) as caught:
        call(data)
    return str(caught.value)


def test_sscp_fused_check_decides_as_the_domain() -> None:
    """Every float64 dataset is accepted or refused exactly as ``input_domain.check`` decides, with its
    message, wherever the offending row lies (here in the last block); members give the function's value."""
    third = Fraction(1, 3)
    box = dp.t.make_sscp(_box(-third, third, 2), SYM, max_size=3 * BLOCK_ROWS)
    ball = dp.t.make_sscp(_ball(2, 1.0), SYM, max_size=3 * BLOCK_ROWS)
    sized = dp.t.make_sscp(_box(-1.0, 1.0, 2, size=2 * BLOCK_ROWS), SYM)
    noisy = box >> dp.m.make_gaussian(box.output_domain, box.output_metric, scale=1.0)
    big_box = dp.t.make_sscp(_box(-(2.0**25), 2.0**25, 2), SYM, max_size=3 * BLOCK_ROWS)  # grid step 2**6
    big_ball = dp.t.make_sscp(_ball(2, 2.0**30), SYM, max_size=3 * BLOCK_ROWS)
    top = float_down(third)
    base = np.zeros((2 * BLOCK_ROWS + 1, 2))
    cases: list[tuple[Any, list[float], bool, bool]] = [  # (t, last row, box member, ball member)
        (box, [top, -top], True, True),
        (box, [np.nextafter(top, 1.0), 0.0], False, True),
        (box, [0.0, -np.nextafter(top, 1.0)], False, True),
        (box, [np.nan, 0.0], False, False),
        (box, [0.0, np.inf], False, False),
        (box, [1e308, 0.0], False, False),  # overflows when scaled by 2**20: refused, no warning
        (ball, [-1e308, 1e308], False, False),
        (big_box, [2.0**25, -(2.0**25)], True, True),
        (big_box, [np.nextafter(2.0**25, np.inf), 0.0], False, True),
        (big_box, [1e-320, np.nan], False, False),
        (big_ball, [2.0**30, 0.0], True, True),
        (big_ball, [0.6 * 2.0**30, 0.8 * 2.0**30], False, False),
        (ball, [1.0, 0.0], True, True),
        (ball, [0.6, 0.8], False, False),  # the floats' exact norm is just above 1
        (ball, [0.6, 0.7999999999999999], True, True),
        (ball, [-np.inf, 0.0], False, False),
        (ball, [np.nan, 0.0], False, False),
    ]
    for t, last, in_box, in_ball in cases:
        x = base.copy()
        x[-1] = last
        member = in_box if t in (box, big_box) else in_ball
        assert t.input_domain.member(x) is member
        if member:
            assert np.array_equal(t(x), t.function(x))
        else:
            expected = _refusal(t.input_domain.check, x)
            assert _refusal(t, x) == expected
            if t is box:
                assert _refusal(noisy, x) == expected
                assert _refusal(noisy >> np.sum, x) == expected
    for data in (np.zeros((2 * BLOCK_ROWS + 1, 2)), np.zeros((2 * BLOCK_ROWS, 2), dtype=np.float32)):
        if sized.input_domain.member(data):
            assert np.array_equal(sized(data), sized.function(data))
        else:
            assert _refusal(sized, data) == _refusal(sized.input_domain.check, data)
    assert np.array_equal(box(np.zeros((5, 2), dtype=np.int64)), np.zeros(4))
    assert _refusal(box, np.zeros((5, 3))) == _refusal(box.input_domain.check, np.zeros((5, 3)))


@pytest.mark.parametrize(
    "q",
    [
        Fraction(0),
        Fraction(4),
        Fraction(2),
        Fraction(5, 2**2000),
        Fraction(3, 10**300),
        Fraction(7, 3),
        Fraction(2**1900 + 1),
        Fraction(10) ** 400 / 7,
        Fraction(1, 2**1074) ** 2 * 3,
    ],
)
def test_sqrt_up_rational_is_tight_at_every_scale(q: Fraction) -> None:
    with mpmath.workprec(400):
        root = mpmath.sqrt(mpmath.mpf(q.numerator) / q.denominator)
        bound = mpmath.mpf(sqrt_up_rational(q).numerator) / sqrt_up_rational(q).denominator
        assert root <= bound <= root * (1 + mpmath.mpf(2) ** -63)
        if q in (0, 4):
            assert bound == root


@pytest.mark.parametrize("top", [2.0**-520, 2.0**-300, 1e-30, 1 / 3, 1.0, 3.7, 2.0**400, 2.0**500])
def test_sscp_norm_bound_tight_at_every_scale(top: float) -> None:
    """The map's per-row bound is within the grid's relative 2**-17 of the exact d·top² (main's square
    root, with an absolute 2**-40 slack, exceeded it by a factor 2**960 at top = 2**-520). Below about
    2**-528 the output's own float resolution (a subnormal ulp, 2**-1074, per entry) dominates the map."""
    d = 5
    t = dp.t.make_sscp(_box(-top, top, d), SYM, max_size=1)
    exact = d * Fraction(top) ** 2
    assert exact <= t.map(1) <= exact * (1 + Fraction(1, 2**17))


def _within(row: np.ndarray, p: int, bound: float) -> bool:
    values = [Fraction(v) for v in row.tolist()]
    total = (
        sum((abs(v) for v in values), Fraction(0)) if p == 1 else sum((v * v for v in values), Fraction(0))
    )
    return total <= Fraction(bound) ** p


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=5),
    st.sampled_from([0.0, 2.0**-60, -(2.0**-60), 2.0**-31, -(2.0**-31), 2.0**-29, -(2.0**-29), 2.0**-19]),
    st.sampled_from([1, 2]),
    st.sampled_from([1.0, 3.7, 2.0**-400, 2.0**400, 1e-300, 1e300]),
    st.sampled_from([0.0, 5e-324, np.nan, np.inf]),
)
def test_all_within_agrees_with_exact_rationals(
    row: list[float], offset: float, p: int, bound: float, extra: float
) -> None:
    """A block of rows, one placed within ±2**-19 of the sphere (both sides of the fast test's 2**-30
    margin) and one holding a subnormal, NaN or inf entry: ``all_within`` is the exact answer."""
    x = np.array(row)
    norm = float(np.abs(x).sum()) if p == 1 else float(np.sqrt(np.square(x).sum()))
    if norm == 0:
        return
    with np.errstate(over="ignore"):
        scaled = x * (bound / norm) * (1 + offset)
    if not np.isfinite(scaled).all():
        return
    block = np.zeros((4, len(row)))
    block[1] = scaled
    block[3, 0] = extra
    expected = _within(scaled, p, bound) and (
        extra == 0 or (bool(np.isfinite(extra)) and _within(block[3], p, bound))
    )
    assert all_within(block, p, bound) is expected
    assert all_within(block, p, bound, np.empty_like(block)) is expected


@pytest.mark.parametrize("top", [2.0**25, 2.0**300])
def test_sscp_intercept_exact_for_large_norm_bounds(top: float) -> None:
    """With a norm bound of 2**20 or more the grid step exceeds 1 (k < 0), so the intercept column (1) is
    not on it: its sums are still exact (main truncated them, releasing the row count as 0)."""
    rows = _box(-top, top, 2)
    t = dp.t.make_sscp(rows, SYM, max_size=10, intercept=True)
    x = np.array([[2.0**12, -3.0], [5.0, 2.0**-3], [-(2.0**20), 7.0]]) * (top / 2.0**25)
    grid = 2.0 ** (20 - math.frexp(math.sqrt(2) * top)[1])  # 2**k: c = √2·top, |q| below 2**20
    q = np.rint(x * grid) / grid
    design = np.hstack([q, np.ones((3, 1))])
    expected = [
        float(sum(Fraction(a) * Fraction(b) for a, b in zip(u, v, strict=True)))
        for u in design.T
        for v in design.T
    ]
    assert t(x).tolist() == expected
    assert t(x)[-1] == 3.0


@pytest.mark.slow
@pytest.mark.parametrize("on", [True, False])
def test_sscp_sums_past_the_int64_flush(on: bool) -> None:
    """More than 1023 blocks (the int64 running sums move to Python integers; in one thread with the speed
    devices off), with the intercept: every entry is exact."""
    n = 1024 * BLOCK_ROWS + 5
    x = np.full((n, 1), 0.75)
    x[::7] = -1.0
    t = dp.t.make_sscp(_box(-1.0, 1.0, 1), SYM, max_size=n, intercept=True)
    negative = len(range(0, n, 7))
    s1 = Fraction(3, 4) * (n - negative) - negative
    s2 = Fraction(9, 16) * (n - negative) + negative
    with sscp_speedups(on):
        assert t(x).tolist() == [float(s2), float(s1), float(s1), float(n)]
