"""The fast paths of L2 clipping and vector sums, and the one switch that turns them off.

The fast paths (used by :func:`~dpcompose.transformations.make_clip_l2` and
:func:`~dpcompose.transformations.make_vector_sum`):

* :func:`fast_clip_l2`: each row's squared norm read in one pass (elementwise squares, then numpy's
  pairwise sum of each row; no rescaling by a power of two), then one multiplication of every row by its
  scale factor (1.0 for a row kept as it is), block by block of rows. Rows the
  pass cannot certify (a NaN, a norm beyond about 2**511, or a bound below 2**-479) are left to the
  rescaling path, :func:`~dpcompose.transformations._vectors.clip_rows`.
* :func:`float_column_sums`: the column sums in floating point, added up in a tree of fan-out
  :data:`FANOUT` (numpy's sums, any order inside a node), clamped to ``[-L, L]``, read block by block of
  rows (:func:`block_column_sums`); chained after a clip, each block is clipped into one reused buffer
  and summed while in the cache (:class:`~dpcompose.transformations._vectors.ClippedSum`), with the same
  bits as the clipped array summed.

The switch: the environment variable ``DPCOMPOSE_VECTOR_SPEEDUPS=0`` (read once, when this module is
imported; also ``false``, ``off`` or ``no``), or :func:`vector_speedups` for a block of code, turns both off:
the clip then rescales every row (:func:`~dpcompose.transformations._vectors.clip_rows`) and the sum is the
exact one, rounded once (:func:`~dpcompose.transformations._column_sums.column_sums`). The maps are the same
either way (the sum's stability map covers both computations, proven in ``make_vector_sum``); the released
vectors differ in their last bits, each within its proven bound. With the switch off no step of the clip or
the sum takes time that depends on a row's magnitude (only NaN rows and the columns the exact sum cannot
settle in its fast pass take more); with it on, rows the fast clip leaves to the rescaling path do (see
docs/security.md).

Examples:
    >>> import numpy as np
    >>> tree_depth(1), tree_depth(64), tree_depth(65), tree_depth(64**2 + 1)
    (0, 63, 64, 127)
    >>> float_column_sums(np.array([[1.0, 2.0], [3.0, -4.0]]), 10.0).tolist()
    [4.0, -2.0]
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from dpcompose._switch import SpeedSwitch
from dpcompose.accounting._exact import gamma_q
from dpcompose.core._norm_domain import MARGIN

__all__ = [
    "BLOCK_ENTRIES",
    "FANOUT",
    "SCALE_ENTRIES",
    "SPEEDUPS_ENV",
    "SUM_BLOCK_ENTRIES",
    "block_column_sums",
    "fast_clip_l2",
    "fast_clip_rows",
    "float_column_sums",
    "float_sum_gamma",
    "row_square_sums",
    "square_block_rows",
    "sum_block_rows",
    "tree_depth",
    "tree_sums",
    "vector_speedups",
    "vector_speedups_on",
]

FloatRows = npt.NDArray[np.float64]

SPEEDUPS_ENV = "DPCOMPOSE_VECTOR_SPEEDUPS"
"""The environment variable whose value ``0`` (or ``false``, ``off``, ``no``) turns the fast paths off."""

_SWITCH = SpeedSwitch(SPEEDUPS_ENV)


def vector_speedups_on() -> bool:
    """Whether the fast paths of L2 clipping and vector sums are on."""
    return _SWITCH.on()


@contextlib.contextmanager
def vector_speedups(on: bool) -> Iterator[None]:
    """Turn the fast paths on or off (``on``) for the block, then restore the setting found: for tests, for
    profiling, and for releases whose timing must not depend on the rows' magnitudes. Process-wide: change
    it only while no other thread runs a clip or a vector sum. The maps are the same either way."""
    with _SWITCH.turned(on):
        yield


FANOUT = 64
"""Each node of the summation tree adds at most this many values (numpy's sum, in any order)."""


def tree_depth(n: int) -> int:
    """The most additions any one of n summands takes part in, in :func:`float_column_sums`.

    The tree's level k adds groups of at most ``FANOUT`` of the ``m_{k−1}`` values of the level below
    (``m_0 = n``), leaving ``m_k = ⌈m_{k−1}/FANOUT⌉``; a group of g values is summed, in whatever order, by
    g − 1 additions, and a value takes part in at most g − 1 of them. So the depth is
    Σ_k (min(FANOUT, m_{k−1}) − 1) over the levels until one value is left. It is non-decreasing in n (each
    m_k is, and so is the number of levels).
    """
    depth, m = 0, n
    while m > 1:
        depth += min(FANOUT, m) - 1
        m = -(-m // FANOUT)
    return depth


def float_sum_gamma(n: int) -> Fraction:
    """γ_t = t·u/(1 − t·u) exactly, for t = ``tree_depth(n)``: each column sum of :func:`float_column_sums`
    on at most n rows is within γ_t·Σᵢ|xᵢⱼ| of its exact sum (non-decreasing in n, as t is).

    Source: Higham 2002, Accuracy and Stability of Numerical Algorithms (2nd ed.), Lemma 3.1 and §4.2
    (:func:`~dpcompose.accounting._exact.gamma_q`).
    """
    return gamma_q(tree_depth(n))


SUM_BLOCK_ENTRIES = 2**18
"""The float sum reads its rows in blocks of about this many entries (2 MiB; a multiple of :data:`FANOUT`
rows, at least FANOUT rows): a chain ``make_clip_l2 >> make_vector_sum`` clips one block into a reused
buffer and adds it up while it is in the cache (:func:`block_column_sums`)."""


def sum_block_rows(d: int) -> int:
    """The number of rows in each block :func:`block_column_sums` reads, for rows of length d: a multiple of
    :data:`FANOUT`, about :data:`SUM_BLOCK_ENTRIES` entries."""
    return FANOUT * max(1, SUM_BLOCK_ENTRIES // (FANOUT * max(d, 1)))


def tree_sums(parts: FloatRows, largest: float) -> FloatRows:
    """The summation tree of :func:`float_column_sums` run on the rows ``parts`` (C-ordered), each column
    sum clamped to ``[-largest, largest]``."""
    d = parts.shape[1]
    with np.errstate(under="ignore"):
        while parts.shape[0] > 1:
            m = parts.shape[0]
            full = m - m % FANOUT
            pieces = []
            if full:
                pieces.append(parts[:full].reshape(full // FANOUT, FANOUT, d).sum(axis=1))
            if full < m:
                pieces.append(parts[full:].sum(axis=0, keepdims=True))
            parts = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
    out: FloatRows = np.clip(parts[0], -largest, largest)
    return out


def block_column_sums(n: int, d: int, block: Callable[[int, int], FloatRows], largest: float) -> FloatRows:
    """:func:`float_column_sums` of the n rows of length d that ``block(start, stop)`` returns, block by
    block of :func:`sum_block_rows` rows (each returned as a C-ordered ``(stop − start, d)`` array, which
    may be a reused buffer: it is read before the next call).

    The result depends on the rows' values and on n and d only, never on where ``block`` keeps them: with
    n rows or fewer than one block, the tree (:func:`tree_sums`) runs on the one block; else each block's
    groups of :data:`FANOUT` rows are summed by the same numpy call (``sum(axis=1)`` of the block reshaped
    to (rows/FANOUT, FANOUT, d); the last block's last group by ``sum(axis=0)``), the group sums kept in
    one array of ⌈n/FANOUT⌉ rows, and the tree's further levels run on it. So the sum of a clipped array
    and the sum of the same rows clipped block by block into a buffer are the same bits.
    """
    if n == 0:
        return np.zeros(d)
    step = sum_block_rows(d)
    if n <= step:
        return tree_sums(block(0, n), largest)
    groups: FloatRows = np.empty((-(-n // FANOUT), d))
    with np.errstate(under="ignore"):
        for start in range(0, n, step):
            rows = block(start, min(n, start + step))
            m = rows.shape[0]
            full, first = m - m % FANOUT, start // FANOUT
            if full:
                groups[first : first + full // FANOUT] = (
                    rows[:full].reshape(full // FANOUT, FANOUT, d).sum(axis=1)
                )
            if full < m:
                groups[first + full // FANOUT] = rows[full:].sum(axis=0)
    return tree_sums(groups, largest)


def float_column_sums(rows: FloatRows, largest: float) -> FloatRows:
    """The column sums of the finite (n, d) array ``rows`` in floating point, each clamped to
    ``[-largest, largest]``.

    The sums run in a tree (:func:`tree_depth`): the rows are cut into groups of :data:`FANOUT` consecutive
    rows (the last may be shorter), each group summed by numpy (``sum(axis=1)`` of a reshaped view, or
    ``sum(axis=0)``), and the group sums likewise, until one row is left (block by block of rows:
    :func:`block_column_sums`). Every column is summed by binary
    additions in which each entry takes part in at most ``t = tree_depth(n)`` of them, so its error is at most
    γ_t·Σᵢ|xᵢⱼ| (:func:`~dpcompose.accounting._exact.gamma_q`; Higham 2002 §4.2), provided no partial sum
    overflows: the caller ensures ``(1 + γ_t)·Σᵢ|xᵢⱼ|`` stays below the float maximum. The memory used is
    about n/64 rows, and one block of rows where ``rows`` is not C-ordered.
    """
    n, d = rows.shape
    return block_column_sums(n, d, lambda start, stop: np.ascontiguousarray(rows[start:stop]), largest)


TINY_SQUARE = 2.0**-960
"""A row whose computed squared norm is at most this has a norm below 2**-479 (proof in
:func:`fast_clip_l2`)."""

LEAST_BOUND = 2.0**-479
"""The fast clip needs a bound of at least this (every practical one): smaller bounds rescale every row."""

HEADROOM = 2.0**960
"""A row is scaled on the fast path only if its computed norm is at most ``bound·HEADROOM``: its scale
factor is then a normal float."""


BLOCK_ENTRIES = 2**15
"""The fast clip squares blocks of about this many entries (at least one row) into a scratch block (256 KiB)
and sums them while they are in the cache."""


SCALE_ENTRIES = 2**17
"""The fast clip scales groups of about this many entries (1 MiB; whole blocks of :data:`BLOCK_ENTRIES`)
right after reading their norms, while they are in the cache."""


def row_square_sums(rows: FloatRows, scratch: FloatRows, sums: FloatRows) -> None:
    """Each row's float sum of squares into ``sums`` (1-D): the squares written into the C-ordered
    ``scratch`` (same shape as ``rows``), then summed by numpy's pairwise sum along each row, in an order
    that depends on the row's length only (the proof is in :func:`fast_clip_l2`)."""
    np.multiply(rows, rows, out=scratch)
    np.add.reduce(scratch, axis=1, out=sums)


def fast_clip_l2(rows: FloatRows, bound: float) -> tuple[FloatRows, npt.NDArray[np.bool_]]:
    """``(out, rest)``: each row of the (n, d) array ``rows`` (finite or NaN entries, any layout; d <= 2**20)
    scaled into the L2 ball of radius ``bound`` (a float), except the rows flagged in ``rest``, which the
    caller must clip itself (their rows of ``out`` are left as they came in): all of them if ``bound`` is
    below :data:`LEAST_BOUND`.

    Method: block by block of rows (:data:`BLOCK_ENTRIES`), the squares ``fl(xᵢ·xᵢ)`` are written into a
    C-ordered scratch block (``np.multiply``) and summed while in the cache,
    ``q = np.add.reduce(scratch, axis=1)`` (each row's float sum of squares, see below); then ``s = fl(√q)``.
    A row with ``q <= 2**-960`` or ``s <= fl(bound·(1 − 2**-20))`` is kept unchanged; a row with finite
    ``s <= bound·2**960`` is multiplied by ``h = fl(fl(bound/s)·(1 − 2**-20))``; every other row (q NaN or
    +∞, or s beyond that) is flagged. The kept rows are multiplied by 1.0 (exact), so the output is one
    multiplication ``x·h[:, None]``.

    Each row's q is a function of that row's values and length alone (the clip's stability and the sum's
    map need equal rows to clip to equal bits in any two datasets, wherever they sit in memory):

    * each square is one elementwise IEEE multiplication (correctly rounded, whatever SIMD lanes or memory
      alignment numpy uses), and the squares of a row land in one contiguous row of the scratch block;
    * numpy's float64 add reduction over the last axis of a C-ordered array calls its inner loop with the
      whole row: numpy/_core/src/umath/reduction.c, ``PyUFunc_ReduceWrapper``, iterates with
      ``NPY_ITER_EXTERNAL_LOOP | NPY_ITER_BUFFERED | NPY_ITER_GROWINNER``; no operand needs a buffer (float64
      in and out, aligned) and the reduced axis cannot be coalesced with the row axis (the output's stride
      is 0 along one and 8 along the other), so the inner loop is the row. This step rests on reading the
      iterator's flags, not its buffering code line by line; a test pins it: q equals the sum below
      transcribed in Python floats, at buffer sizes 16 and 8192, for rows longer than both;
    * that inner loop, ``DOUBLE_add`` in numpy/_core/src/umath/loops_arithm_fp.dispatch.c.src, takes its
      reduce branch (input 0 and output the same pointer, stride 0) and adds
      ``DOUBLE_pairwise_sum(row, d, 8)`` to the initial value (0.0, an exact addition for a sum of squares);
    * ``DOUBLE_pairwise_sum`` (numpy/_core/src/umath/loops_utils.h.src) is plain C on doubles whose order
      depends only on n: fewer than 8 terms added left to right from −0.0; up to 128 terms in 8 running
      sums (terms i ≡ k mod 8, from i = 8 to the last multiple of 8) combined as
      ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)), then the remaining terms left to right; more terms
      split at n2 = ⌊n/2⌋ − (⌊n/2⌋ mod 8) and the two halves' sums added. No alignment peeling and no
      reassociation (numpy is not built with fast-math; the 8 running sums are written out in C).

    ``tests/transformations/test_vector_speed.py`` checks q against that order transcribed in Python floats
    and checks equal rows' bits at many alignments, positions, dataset sizes and layouts.

    Proof that every output row has exact norm ``‖out‖ <= bound`` (u = 2**-53, d <= 2**20):

    1. The computed q. Whatever the order and whether or not a fused multiply-add is used, q is built from
       the d exact squares by at most 2d − 1 float operations, each returning its exact result times
       (1 + δ), |δ| <= u, plus an absolute error of at most 2**-1075 where the result is subnormal (Higham
       2002, §2.1, the model with gradual underflow; no overflow when q is finite, every partial result
       being at most q(1 + γ_d) for non-negative terms). Each square passes through at most d such
       roundings, so |q − ‖x‖²| <= γ_d·‖x‖² + 2d·2**-1075·(1 + γ_d) (Higham 2002, §3.1, eq. 3.5, any order),
       with γ_d <= 2**-32.9 and 2d·2**-1075·(1 + γ_d) < 2**-1053. Hence ‖x‖² <= (q + 2**-1053)/(1 − γ_d).
    2. Kept tiny rows: q <= 2**-960 gives ‖x‖² < 2**-959.9, so ‖x‖ < 2**-479 <= bound.
    3. Other rows: q > 2**-960, so ‖x‖² <= q(1 + 2**-93)/(1 − γ_d) and, as s >= √q/(1 + u) (the square root
       is correctly rounded), ‖x‖ <= s·(1 + u)·√((1 + 2**-93)/(1 − γ_d)) <= s·(1 + 2**-30): the bound
       :func:`~dpcompose.core._norm_domain.certainly_within` asks of ``s·2**E`` with E = 0, so a row with
       s <= fl(bound·(1 − 2**-20)) has ‖x‖ <= bound (its proof).
    4. Scaled rows: s > fl(bound·(1 − 2**-20)) and s <= bound·2**960, so bound/s lies in
       [2**-960, 1 + 2**-19] and h is a normal float with h <= (bound/s)(1 − 2**-20)(1 + u)². Each
       ``fl(xᵢ·h)`` is within u·|xᵢh| of xᵢh, or within 2**-1075 when subnormal, so
       ‖out‖ <= (1 + u)·h·‖x‖ + √d·2**-1075 <= (1 + u)³(1 + 2**-30)(1 − 2**-20)·bound + 2**-1065
       < (1 − 2**-21)·bound + 2**-1065 < bound, as bound >= 2**-479.

    Time: two passes over the data, the second (the scaling) over groups of :data:`SCALE_ENTRIES` entries
    read from the cache, and the flagged rows' own path.
    """
    n, d = rows.shape
    out: FloatRows = np.empty((n, d), dtype=np.float64)
    if not bound >= LEAST_BOUND:  # (outside the proof: every row is the caller's)
        out[...] = rows
        return out, np.ones(n, dtype=bool)
    squares = np.empty((min(square_block_rows(d), n), d))
    return out, fast_clip_rows(rows, bound, out, np.empty(n), squares)


def square_block_rows(d: int) -> int:
    """The rows of length d squared at a time by the fast clip (:data:`BLOCK_ENTRIES` entries, at least 1)."""
    return max(1, BLOCK_ENTRIES // max(d, 1))


def fast_clip_rows(
    rows: FloatRows, bound: float, out: FloatRows, q: FloatRows, squares: FloatRows
) -> npt.NDArray[np.bool_]:
    """The work of :func:`fast_clip_l2` (``bound >= LEAST_BOUND``) with the caller's buffers: the clipped
    rows are written into ``out`` (same shape as ``rows``), each row's sum of squares into ``q`` (n entries),
    using ``squares`` (C-ordered, d columns, at least one row) block by block of its rows; returns the rows
    left to the caller (``rest``). Every step is elementwise or row by row, so a row's output bits depend on
    that row alone (see :func:`fast_clip_l2`), whichever block of rows it is clipped with."""
    n, d = rows.shape
    step = max(1, squares.shape[0])
    group = max(step, SCALE_ENTRIES // max(d, 1) // step * step)
    rest: npt.NDArray[np.bool_] = np.empty(n, dtype=bool)
    with np.errstate(under="ignore", over="ignore", divide="ignore", invalid="ignore"):
        for first in range(0, n, group):  # (each group scaled while it is in the cache)
            last = min(n, first + group)
            for start in range(first, last, step):
                block = rows[start : min(last, start + step)]
                row_square_sums(block, squares[: len(block)], q[start : start + len(block)])
            sums = q[first:last]
            s = np.sqrt(sums)
            keep = (sums <= TINY_SQUARE) | (s <= bound * (1.0 - MARGIN))
            scaled = ~keep & (s <= bound * HEADROOM) & (s < np.inf)  # (bound·2**960 may be +∞)
            h = np.where(scaled, bound / np.where(scaled, s, 1.0), 1.0)
            h *= np.where(scaled, 1.0 - MARGIN, 1.0)
            np.multiply(rows[first:last], h[:, None], out=out[first:last])
            np.logical_not(keep | scaled, out=rest[first:last])
    return rest
