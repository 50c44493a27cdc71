"""Per-row vector clipping and vector sums: a dataset of fixed-size float vectors, each scaled into an
L1 or L2 ball, then summed into one vector with an L1/L2 sensitivity that vector noise can consume.

Examples:
    >>> import numpy as np
    >>> import dpcompose as dp
    >>> rows = dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float), size=2))
    >>> clip = dp.t.make_clip_l2(rows, dp.SymmetricDistance(), norm=1.0)
    >>> total = clip >> dp.t.make_vector_sum(clip.output_domain, clip.output_metric, max_size=100)
    >>> total(np.array([[3.0, 4.0], [0.5, 0.0]])).round(4).tolist()
    [1.1, 0.8]
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpcompose.accounting import float_up
from dpcompose.accounting._exact import sqrt_up_dyadic
from dpcompose.core import (
    AtomDomain,
    ChangeOneDistance,
    Domain,
    L1Distance,
    L2Distance,
    Metric,
    Node,
    NormBallDomain,
    Transformation,
    VectorDomain,
)
from dpcompose.core._metrics import check_space
from dpcompose.core._norm_domain import MARGIN, MAX_DIMENSION, certainly_within
from dpcompose.core._recipe import recorded
from dpcompose.core._stages import Stage
from dpcompose.errors import DomainMismatch, InvalidParameter
from dpcompose.transformations._clamp import check_dataset_metric
from dpcompose.transformations._column_sums import column_sums
from dpcompose.transformations._sum import SUM_SCALE, size_bound
from dpcompose.transformations._vector_speed import (
    FANOUT,
    LEAST_BOUND,
    block_column_sums,
    fast_clip_l2,
    fast_clip_rows,
    float_column_sums,
    float_sum_gamma,
    square_block_rows,
    sum_block_rows,
    vector_speedups_on,
)

__all__ = ["make_clip_l1", "make_clip_l2", "make_vector_sum"]

FloatRows = npt.NDArray[np.float64]


def _row_size(input_domain: Domain, name: str) -> int:
    """The row length d of ``VectorDomain(VectorDomain(AtomDomain(float), size=d))``; refuses others."""
    element = input_domain.element_domain if isinstance(input_domain, VectorDomain) else None
    if not (
        isinstance(element, VectorDomain)
        and isinstance(element.element_domain, AtomDomain)
        and element.element_domain.carrier is float
        and element.size is not None
        and element.size >= 1
    ):
        raise DomainMismatch(
            f"{name} needs rows of floats of a fixed size: input_domain={input_domain!r} must be "
            "VectorDomain(VectorDomain(AtomDomain(float), size=d))"
        )
    if element.size > MAX_DIMENSION:
        raise DomainMismatch(f"input_domain={input_domain!r}: the row size must be at most 2**20")
    return element.size


def rows_array(data: Any, d: int) -> FloatRows:
    """A member dataset of d-vectors as one ``(n, d)`` float64 array (exact: members are exact floats).

    A 2-d array is converted once (no copy if it is float64 already); a list of rows is converted by one
    ``numpy.asarray``, or row by row when its rows are of mixed kinds.
    """
    if isinstance(data, np.ndarray) and data.ndim == 2:
        return data.astype(np.float64, copy=False)
    n = len(data)
    if n == 0:
        return np.zeros((0, d))
    try:
        whole: FloatRows = np.asarray(data, dtype=np.float64)
        if whole.shape == (n, d):
            return whole
    except (TypeError, ValueError, OverflowError):
        pass
    out = np.empty((n, d))
    for i, row in enumerate(data):
        out[i] = np.asarray(list(row), dtype=np.float64) if not isinstance(row, np.ndarray) else row
    return out


FLOAT_SUM_SLACK = Fraction(1, 2**16)
"""The most the float sum may add to a vector sum's map, relative to the row norm c (else: the exact sum)."""

CHUNK_ENTRIES = 1 << 21
"""Rows are clipped in blocks of about this many entries (16 MiB of float64): the temporaries of the norms
and of the scaling stay that small, whatever the input size."""


def clip_rows(rows: FloatRows, p: int, bound: float) -> FloatRows:
    """Each row scaled into the Lp ball of radius ``bound`` (a float >= 2**-900), exactly.

    A row containing NaN becomes the zero vector. A row whose norm is certainly at most
    ``bound·(1 − 2**-20)`` is returned unchanged; every other row ``x`` becomes
    ``ldexp(fl(y·h), E_c)`` with ``y = x·2**-E``, ``s`` its computed norm (:func:`scaled_norms`),
    ``bound = m·2**E_c`` (frexp) and ``h = fl(fl(m/s)·(1 − 2**-20))``.

    Proof that the exact norm of the result is at most ``bound``: ``‖y‖ <= (1 + 2**-30)·s``, and
    ``h <= (m/s)(1 − 2**-20)(1 + u)²``; each product ``y_i·h`` is rounded with relative error <= u or, if
    subnormal, absolute error <= 2**-1075, and scaling by ``2**E_c`` is exact except for a subnormal result
    (absolute error <= 2**-1075). So ``‖out‖ <= (1 + u)³(1 + 2**-30)(1 − 2**-20)·bound + d·2**-1074·
    max(2**E_c, 1)``: the first term is below ``(1 − 2**-21)·bound``, the second at most 2**-1034·bound for
    d <= 2**20 and bound >= 2**-900. Rows kept unchanged: see
    :func:`~dpcompose.core._norm_domain.certainly_within`.

    Vectorised, in blocks of rows (:data:`CHUNK_ENTRIES`): the output is the one full-size array. Scaling
    by a power of two is a multiplication by that float (``x·2**k`` rounded once, which is what ``ldexp``
    returns, where ``2**k`` is a float: ``ldexp`` itself is used where it is not); ``max|xᵢ|`` is read as
    ``max(max xᵢ, −min xᵢ)``. No step depends on a row's values other than through the rows selected for
    scaling.
    """
    n, d = rows.shape
    out: FloatRows = np.empty((n, d), dtype=np.float64)
    step = max(1, CHUNK_ENTRIES // max(d, 1))
    work = np.empty((min(step, n), d), dtype=np.float64)  # (reused: a fresh block each time page-faults)
    for start in range(0, n, step):
        block = rows[start : start + step]
        _clip_block(block, p, bound, out[start : start + step], work[: block.shape[0]])
    return out


def _pow2_scale(x: FloatRows, k: npt.NDArray[np.int64], out: FloatRows) -> FloatRows:
    """``ldexp(x, k[:, None])`` (each row times 2**k, rounded once) into ``out``: a multiplication where
    every 2**k is a float (k in [−1074, 1023]), else ``ldexp``."""
    if k.size and int(k.min()) >= -1074 and int(k.max()) <= 1023:
        return np.multiply(x, np.ldexp(1.0, k)[:, None], out=out)
    return np.ldexp(x, k[:, None], out=out)


def _norms(x: FloatRows, p: int, y: FloatRows, work: FloatRows) -> tuple[FloatRows, npt.NDArray[np.int64]]:
    """:func:`~dpcompose.core._norm_domain.scaled_norms` of the rows ``x`` (``y`` receives the scaled rows;
    ``work`` is overwritten): ``max|xᵢ|`` read as ``max(max xᵢ, −min xᵢ)``, the scaling by 2**-E as
    :func:`_pow2_scale`."""
    top = np.maximum(x.max(axis=1), -x.min(axis=1)) if x.shape[1] else np.zeros(x.shape[0])
    _, exponent = np.frexp(top)
    e = exponent.astype(np.int64)
    _pow2_scale(x, -e, y)
    terms = np.abs(y, out=work) if p == 1 else np.square(y, out=work)
    s = terms.sum(axis=1)
    return (np.sqrt(s) if p == 2 else s), e


def _clip_block(x: FloatRows, p: int, bound: float, out: FloatRows, y: FloatRows) -> None:
    """:func:`clip_rows` of the rows ``x``, written into ``out``; ``y`` is work space of the same shape."""
    with np.errstate(under="ignore", over="ignore", invalid="ignore"):
        s, e = _norms(x, p, y, out)
        nan_rows = np.isnan(s)  # exactly the rows holding a NaN (NaN propagates; nothing else makes one)
        if nan_rows.any():  # they become zero rows, read again as such (as every other row, on its own)
            x = np.where(nan_rows[:, None], 0.0, x)
            s, e = _norms(x, p, y, out)
    keep = certainly_within(s, e, bound)
    out[...] = x
    if bool(keep.all()):
        return
    mantissa, exponent_c = math.frexp(bound)
    scaled = ~keep
    with np.errstate(under="ignore", over="ignore", divide="ignore", invalid="ignore"):
        h = mantissa / np.where(keep, 1.0, s)
        h *= 1.0 - MARGIN
        rows = scaled[:, None]
        np.multiply(y, h[:, None], out=out, where=rows)
        if exponent_c <= 1023:
            np.multiply(out, 2.0**exponent_c, out=out, where=rows)
        else:
            out[scaled] = np.ldexp(out[scaled], exponent_c)


class ClipRows(Stage):
    """The function of :func:`make_clip_l1` / :func:`make_clip_l2`: rows of length ``d`` into the Lp ball of
    radius ``bound`` (the fast path of :func:`~dpcompose.transformations._vector_speed.fast_clip_l2` for
    p = 2 when the speed switch is on, else :func:`clip_rows`)."""

    __slots__ = ("bound", "d", "fast", "p")

    def __init__(self, d: int, p: int, bound: float) -> None:
        self.d, self.p, self.bound = d, p, bound
        self.fast = p == 2 and bound >= LEAST_BOUND

    def __call__(self, data: Any) -> FloatRows:
        x = rows_array(data, self.d)
        if not (self.fast and vector_speedups_on()):
            return clip_rows(x, self.p, self.bound)
        out, rest = fast_clip_l2(x, self.bound)
        if rest.any():  # NaN rows, norms beyond about 2**511: rescaled (their count shows in the time)
            out[rest] = clip_rows(x[rest], self.p, self.bound)
        return out


class VectorSumRows(Stage):
    """The function of :func:`make_vector_sum`: the float sum
    (:func:`~dpcompose.transformations._vector_speed.float_column_sums`) of at most ``limit`` rows when the
    speed switch is on (``limit`` −1: never), else the exact sum clamped at ``saturation``. After a
    :class:`ClipRows` it runs as :class:`ClippedSum`."""

    __slots__ = ("d", "largest", "limit", "saturation")

    def __init__(self, d: int, limit: int, largest: float, saturation: int) -> None:
        self.d, self.limit, self.largest, self.saturation = d, limit, largest, saturation

    def float_sum(self, n: int) -> bool:
        """Whether n rows are summed in floating point (the speed switch is read)."""
        return n <= self.limit and vector_speedups_on()

    def __call__(self, data: Any) -> FloatRows:
        x = rows_array(data, self.d)
        if self.float_sum(x.shape[0]):
            return float_column_sums(x, self.largest)
        out: FloatRows = column_sums(x, self.saturation)
        return out

    def after(self, first: Any) -> Any:
        if isinstance(first, ClipRows):
            return ClippedSum(first, self)
        return Stage.after(self, first)


class ClippedSum:
    """``make_clip_l1/l2 >> make_vector_sum`` without the clipped array: where the sum is a float sum, the
    rows are clipped block by block (:func:`~dpcompose.transformations._vector_speed.sum_block_rows` rows)
    into one reused buffer and each block is added into the summation tree while in the cache
    (:func:`~dpcompose.transformations._vector_speed.block_column_sums`).

    The result is the same bits as the clip's output summed by the vector sum, for every input: each row is
    clipped by the same elementwise and row-by-row steps (its bits depend on the row alone: the proof of
    :func:`~dpcompose.transformations._vector_speed.fast_clip_l2` and :func:`clip_rows`), and
    ``block_column_sums`` returns the same bits wherever its blocks are kept. So the chain's maps and proofs
    are those of its two parts. Elsewhere (the exact sum) the two run one after the other.
    """

    __slots__ = ("clip", "total")

    def __init__(self, clip: ClipRows, total: VectorSumRows) -> None:
        self.clip, self.total = clip, total

    def __call__(self, data: Any) -> FloatRows:
        clip = self.clip
        x = rows_array(data, clip.d)
        n, d = x.shape
        if not self.total.float_sum(n):
            return self.total(clip(x))
        fast = clip.fast and vector_speedups_on()
        rows = min(n, sum_block_rows(d))
        out = np.empty((rows, d))
        q = np.empty(rows)
        squares = np.empty((min(square_block_rows(d), rows), d))

        def block(start: int, stop: int) -> FloatRows:
            x_block, clipped = x[start:stop], out[: stop - start]
            if not fast:
                clipped[...] = clip_rows(x_block, clip.p, clip.bound)
                return clipped
            rest = fast_clip_rows(x_block, clip.bound, clipped, q[: stop - start], squares)
            if rest.any():  # (as ClipRows: NaN rows, norms beyond about 2**511)
                clipped[rest] = clip_rows(x_block[rest], clip.p, clip.bound)
            return clipped

        return block_column_sums(n, d, block, self.total.largest)


def _make_clip(
    input_domain: Domain, input_metric: Metric, norm: Any, p: int, name: str
) -> Transformation[Any, FloatRows, int, int]:
    check_dataset_metric(input_metric)
    check_space(input_domain, input_metric)
    d = _row_size(input_domain, name)
    assert isinstance(input_domain, VectorDomain)
    ball = NormBallDomain(size=d, norm=norm, p=p)
    bound = ball.norm

    return Transformation(
        input_domain,
        VectorDomain(ball, size=input_domain.size),
        input_metric,
        input_metric,
        ClipRows(d, p, bound),
        lambda d_in: d_in,
        node=Node(
            f"clip_l{p}",
            params=(("norm", repr(bound)),),
            source="row-wise map (1-stable); norm clipping as in Abadi et al. 2016",
        ),
    )


_CLIP_DOC = """Scale each row (a float vector of fixed size d) so its exact L{p} norm is at most ``norm``.

    Rows already inside the ball are returned unchanged, except those within a relative 2**-20 of the
    bound, which may be shrunk by up to that much; a longer row ``x`` becomes (up to the same relative
    2**-20) ``x·norm/‖x‖_{p}``. Float rounding never lets a result out of the ball: the scale factor is
    rounded down by a margin that covers every rounding, proven in
    :func:`~dpcompose.transformations._vectors.clip_rows`, and the output domain
    ``NormBallDomain(size=d, norm=c, p={p})`` states the bound that holds exactly. A row containing NaN
    (when the domain admits it) becomes the zero vector, never an exception. Vectorised: a 2-d numpy array
    of shape (n, d) is processed without a per-row Python loop; a list of rows is converted once.

    For p = 2 (and ``norm`` >= 2**-479), each row's norm is read in one pass without rescaling and each row
    is multiplied once by its scale factor (1 for a row kept): proven in
    :func:`~dpcompose.transformations._vector_speed.fast_clip_l2`, with the same 2**-20 margin; the rows that
    proof does not cover (a NaN, a norm beyond about 2**511) are scaled by the rescaling path of
    :func:`~dpcompose.transformations._vectors.clip_rows`, as is every row when the speed switch
    (``DPCOMPOSE_VECTOR_SPEEDUPS=0``) is off.

    Stability: the map acts on each row alone, so adding, removing or changing k rows of the input adds,
    removes or changes at most k rows of the output: d_out = d_in under ``SymmetricDistance`` and
    ``ChangeOneDistance``.

    Args:
        input_domain: ``VectorDomain(VectorDomain(AtomDomain(float), size=d))``, d <= 2**20 (entries may be
            bounded and may admit NaN), with an optional dataset size.
        input_metric: ``SymmetricDistance()`` or ``ChangeOneDistance()``.
        norm: the bound c > 0 (at least 2**-900; the domain keeps the greatest float <= c).

    Returns:
        A transformation to ``VectorDomain(NormBallDomain(size=d, norm=c, p={p}))``, releasing a float64
        array of shape (n, d).

    Raises:
        DomainMismatch: the domain or metric is not one of the above.
        InvalidParameter: ``norm`` is not a finite number in [2**-900, float max].

    Source: a row-wise map is 1-stable (Dwork–Roth 2014 §2.3, post-processing per record); per-row norm
    clipping as in Abadi et al. 2016 (DP-SGD).
"""


@recorded
def make_clip_l1(
    input_domain: Domain, input_metric: Metric, norm: float | int | Fraction
) -> Transformation[Any, FloatRows, int, int]:
    return _make_clip(input_domain, input_metric, norm, 1, "make_clip_l1")


@recorded
def make_clip_l2(
    input_domain: Domain, input_metric: Metric, norm: float | int | Fraction
) -> Transformation[Any, FloatRows, int, int]:
    return _make_clip(input_domain, input_metric, norm, 2, "make_clip_l2")


make_clip_l1.__doc__ = (
    _CLIP_DOC.format(p=1)
    + """
    Examples:
        >>> import dpcompose as dp
        >>> rows = dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float), size=2))
        >>> clip = dp.t.make_clip_l1(rows, dp.SymmetricDistance(), norm=2.0)
        >>> clip([[1.0, 0.5], [3.0, -1.0]]).round(4).tolist(), clip.map(1)
        ([[1.0, 0.5], [1.5, -0.5]], 1)
        >>> clip.output_domain
        VectorDomain(NormBallDomain(size=2, norm=2.0, p=1))
    """
)
make_clip_l2.__doc__ = (
    _CLIP_DOC.format(p=2)
    + """
    Examples:
        >>> import numpy as np
        >>> import dpcompose as dp
        >>> rows = dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float, nan=True), size=2))
        >>> clip = dp.t.make_clip_l2(rows, dp.ChangeOneDistance(), norm=1.0)
        >>> clip(np.array([[0.3, 0.4], [6.0, 8.0], [np.nan, 1.0]])).round(4).tolist()
        [[0.3, 0.4], [0.6, 0.8], [0.0, 0.0]]
    """
)


@recorded
def make_vector_sum(
    input_domain: Domain, input_metric: Metric, *, max_size: int | None = None
) -> Transformation[Any, npt.NDArray[np.float64], int, Fraction]:
    """The sum of norm-bounded rows: one float vector, under ``L1Distance`` or ``L2Distance``.

    The input rows lie in ``NormBallDomain(size=d, norm=c, p)`` (chain :func:`make_clip_l1` or
    :func:`make_clip_l2` first); the output metric is L1 for p = 1 and L2 for p = 2.

    Stability, exact part: adding or removing k rows moves the exact sum by a vector of p-norm at most
    k·c (triangle inequality), changing k rows by at most 2k·c (each change is ``x' − x``, of norm
    <= 2c). So d_out = d_in·c (``SymmetricDistance``) or 2·d_in·c (``ChangeOneDistance``), plus the
    rounding slack below.

    The sum is computed in floating point (:func:`~dpcompose.transformations._vector_speed.float_column_sums`:
    a tree of numpy sums of fan-out 64, each coordinate clamped to ``[-L, L]``), where ``L`` is the least
    float >= n·c for the bound n on the number of rows (the domain's ``size`` or ``max_size=``). Its rounding
    is part of the map. Each entry takes part in at most t = ``tree_depth(n)`` additions (about
    63·log₆₄ n), so coordinate j is off its exact sum Sⱼ by at most γ_t·Σᵢ|xᵢⱼ| (Higham 2002, §4.2, eq. 4.4
    and Lemma 3.1; every summation order is a binary tree of additions; Casacuberta et al. 2022 apply the
    same bound to DP sums). The error vector e then has ‖e‖_p <= γ_t·‖Σᵢ|xᵢ|‖_p <= γ_t·Σᵢ‖xᵢ‖_p <= γ_t·n·c
    (Minkowski), for p = 1 and p = 2. The clamp is a projection onto a box that holds every exact sum of at
    most n rows, so it moves no output further from the other's than before (non-expansive). Two datasets
    of at most n rows therefore give outputs at most ‖S − S'‖_p + 2·γ_t·n·c apart — also at d_in = 0, as
    a reordering of the rows changes the float sum's last bits, so that term is in the map at every d_in.

    The float sum is used only where that term is small, 2·γ_t·n <= 2**-16 (n up to about 2·10⁸ rows),
    where n > 64 (for fewer rows the exact sum costs little and keeps the map tighter) and where
    (1 + γ_t)·L is a float (no partial sum can overflow); the term is in the map exactly when it is used.
    A dataset of more than n rows (never refused: an exception would reveal its size), and every dataset
    when the speed switch is off (:mod:`~dpcompose.transformations._vector_speed`) or when the float sum is
    not used, is summed exactly (:func:`~dpcompose.transformations._column_sums.column_sums`), clamped to
    ``[-L, L]`` and rounded once to the nearest float, as in :func:`~dpcompose.transformations.make_sum`: no
    coordinate of n rows exceeds n·c, so the clamp changes nothing for them; rounding to nearest at
    magnitudes <= L moves each coordinate by at most ``ulp(L)/2``, so two such outputs are further apart
    than their exact clamped sums by at most ``d·ulp(L)`` in L1 and ``√d·ulp(L)`` in L2 (a rational upper
    bound of √d is used), added to the map for d_in > 0. A float sum of at most n rows against an exact one
    of more: ‖S − clamp(S')‖ <= ‖S − S'‖ (S lies in the box), plus γ_t·n·c and half that slack, so the map
    covers every pairing of the two computations. At d_in = 0 (the same multiset, one side summed fast and
    the other exactly, the switch flipped between runs) the map has no slack term, and none is needed: the
    exact side's single rounding to nearest moves it by at most u·‖S‖ + √d·2**-1075 <= u·n·c + √d·2**-1075,
    within γ_t·n·c as γ_t >= 64u whenever n·c >= √d·2**-1028, which always holds here: a norm bound is at
    least 2**-900 (:class:`~dpcompose.NormBallDomain`), n > 64 and d <= 2**20.

    Args:
        input_domain: ``VectorDomain(NormBallDomain(size=d, norm=c, p=1|2))``, optionally sized.
        input_metric: ``SymmetricDistance()`` or ``ChangeOneDistance()``.
        max_size: without a domain ``size``: the most rows a dataset may hold (more are summed and
            clamped).

    Returns:
        A transformation to ``VectorDomain(AtomDomain(float), size=d)`` releasing a float64 array.

    Raises:
        DomainMismatch: the rows are not a ``NormBallDomain`` or the metric is not a dataset metric.
        InvalidParameter: no size bound, ``max_size`` not a non-negative integer, or n·c beyond the float
            range.

    Source: Dwork–Roth 2014 §3.3 and App. A (L1 / L2 sensitivity of sums of norm-bounded vectors);
    rounding slack per Casacuberta et al. 2022 ("Widespread underestimation of sensitivity in differentially
    private libraries and how to fix it", CCS 2022), as in ``make_sum``; float summation error: Higham 2002,
    Accuracy and Stability of Numerical Algorithms (2nd ed.), §4.2 and Lemma 3.1.

    Examples:
        >>> import dpcompose as dp
        >>> rows = dp.VectorDomain(dp.NormBallDomain(size=2, norm=1.0, p=2))
        >>> s = dp.t.make_vector_sum(rows, dp.SymmetricDistance(), max_size=1000)
        >>> s([[0.5, 0.5], [0.0, -1.0], [0.25, 0.0]]).tolist()
        [0.75, -0.5]
        >>> s.output_metric, float(s.map(1)), float(s.map(0))
        (L2Distance(), 1.0000000000174802, 1.731947918415259e-11)
    """
    check_dataset_metric(input_metric)
    check_space(input_domain, input_metric)
    assert isinstance(input_domain, VectorDomain)
    ball = input_domain.element_domain
    if not isinstance(ball, NormBallDomain):
        raise DomainMismatch(
            f"make_vector_sum needs rows of bounded norm: input_domain={input_domain!r} must be "
            "VectorDomain(NormBallDomain(...)); chain make_clip_l1 or make_clip_l2 first"
        )
    limit = size_bound(input_domain, max_size, "a vector sum", "rows")
    d, p, c = ball.size, ball.p, Fraction(ball.norm)
    assert d is not None
    largest = float_up(limit * c)
    if largest == math.inf:
        raise InvalidParameter(
            f"max_size={limit} rows of norm up to {ball.norm!r} can sum beyond the float range: lower "
            "max_size or the norm"
        )
    ulp = Fraction(math.ulp(largest))
    slack = d * ulp if p == 1 else sqrt_up_dyadic(d, 20) * ulp
    per_row = 2 * c if isinstance(input_metric, ChangeOneDistance) else c
    saturation = int(Fraction(largest) * SUM_SCALE)
    gamma = float_sum_gamma(limit)
    fast = (
        limit > FANOUT
        and 2 * gamma * limit <= FLOAT_SUM_SLACK
        and float_up(Fraction(largest) * (1 + gamma)) < sys.float_info.max  # no partial sum overflows
    )
    float_error = 2 * gamma * limit * c if fast else Fraction(0)  # two datasets' rounding, any d_in

    def stability(d_in: int) -> Fraction:
        return d_in * per_row + (slack if d_in > 0 else 0) + float_error

    params = [("norm", repr(ball.norm)), ("p", str(p))]
    if max_size is not None:
        params.append(("max_size", str(limit)))
    return Transformation(
        input_domain,
        VectorDomain(AtomDomain(float), size=d),
        input_metric,
        L1Distance() if p == 1 else L2Distance(),
        VectorSumRows(d, limit if fast else -1, largest, saturation),
        stability,
        node=Node("vector_sum", params=tuple(params), source="Dwork–Roth 2014 §3.3; Casacuberta et al. 2022"),
    )
