"""The sum of per-row outer products (SSCP, ``XᵀX``) of norm-bounded rows: the sufficient statistics of
linear regression and the matrix of PCA, with an L2 (Frobenius) sensitivity that vector noise consumes.

Examples:
    >>> import numpy as np
    >>> import dpcompose as dp
    >>> rows = dp.VectorDomain(dp.NormBallDomain(size=2, norm=1.0), size=2)
    >>> sscp = dp.t.make_sscp(rows, dp.SymmetricDistance())
    >>> sscp(np.array([[0.5, 0.5], [0.0, -1.0]])).reshape(2, 2).tolist()
    [[0.25, 0.25], [0.25, 1.25]]
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpcompose.accounting import float_down, float_up
from dpcompose.accounting._exact import sqrt_up_dyadic
from dpcompose.core import (
    AtomDomain,
    ChangeOneDistance,
    Domain,
    L2Distance,
    Metric,
    Node,
    NormBallDomain,
    Transformation,
    VectorDomain,
)
from dpcompose.core._metrics import check_space
from dpcompose.core._norm_domain import all_within
from dpcompose.core._recipe import recorded
from dpcompose.errors import DomainMismatch, InvalidParameter
from dpcompose.transformations._clamp import check_dataset_metric
from dpcompose.transformations._sscp_speed import (
    Blocks,
    Floats,
    Product,
    block_product,
    in_two_threads,
    two_threads,
)
from dpcompose.transformations._sum import size_bound
from dpcompose.transformations._vectors import rows_array

__all__ = ["BLOCK_ROWS", "GRID_BITS", "make_sscp", "sqrt_up_rational"]

_Sums = tuple[list[int], list[int]]
BlockTest = Callable[[Floats, Floats, Floats], bool]
"""A test of a block of rows, given the block scaled by ``2**k`` and a scratch array of its shape (the
call's own: calls may overlap)."""

BLOCK_ROWS = 1 << 13
"""Rows per block product (a block and its work space stay in a core's cache): every partial sum of a
block's ``QᵀQ`` is an integer of magnitude at most ``BLOCK_ROWS·2**(2·GRID_BITS) = 2**53`` (a double), so
the float product is exact whatever the summation order."""

GRID_BITS = 20
"""Grid values (integers) are at most ``2**GRID_BITS`` in magnitude: each entry is rounded to a grid of step
at most ``m·2**-19`` (an error of at most ``m·2**-20``), m = c (the norm bound), or max(c, 1) with an
intercept."""

_FLUSH = 1023
"""Blocks added in int64 before the running sums move to Python integers: 1023 block sums of magnitude at
most 2**53 stay below 2**63."""

_ROOT2_UP = Fraction(1414213563, 10**9)  # > √2
_MAX_COLUMNS = 1 << 10


def sqrt_up_rational(q: Fraction) -> Fraction:
    """A rational >= √q (q >= 0 rational) within a relative 2**-64 of it, at every scale: with q = a/b,
    ``√q = √(a·b)/b`` and ``√(a·b)`` (>= 1 for q > 0) is rounded up to a multiple of 2**-64
    (:func:`~dpcompose.accounting._exact.sqrt_up_dyadic`, exact for a perfect square)."""
    return sqrt_up_dyadic(q.numerator * q.denominator, 64) / q.denominator


def _row_bound(input_domain: Domain) -> tuple[int, Fraction]:
    """The row size d and a bound c on the L2 norm of every row (exact rational)."""
    element = input_domain.element_domain if isinstance(input_domain, VectorDomain) else None
    if isinstance(element, NormBallDomain):
        assert element.size is not None
        return element.size, Fraction(element.norm)  # an L1 ball lies in the L2 ball of the same radius
    atom = element.element_domain if isinstance(element, VectorDomain) else None
    if (
        isinstance(element, VectorDomain)
        and element.size is not None
        and element.size >= 1
        and isinstance(atom, AtomDomain)
        and atom.carrier is float
        and atom.bounds is not None
        and not atom.nan
    ):
        top = max(abs(Fraction(atom.bounds[0])), abs(Fraction(atom.bounds[1])))
        if top == 0:
            raise DomainMismatch(f"input_domain={input_domain!r}: the bounds hold only zero rows")
        return element.size, sqrt_up_rational(element.size * top * top)
    raise DomainMismatch(
        f"make_sscp needs rows of bounded norm: input_domain={input_domain!r} must be "
        "VectorDomain(NormBallDomain(size=d, norm=c)) (chain make_clip_l2) or "
        "VectorDomain(VectorDomain(AtomDomain(float, bounds=(lo, hi)), size=d)) without NaN (e.g. the output "
        "of make_map_exprs with clip and fill)"
    )


@recorded
def make_sscp(
    input_domain: Domain, input_metric: Metric, *, intercept: bool = False, max_size: int | None = None
) -> Transformation[Any, Floats, int, Fraction]:
    """The sum of squares and cross products ``Σ x xᵀ`` of the rows (``XᵀX``), flattened row-major: a
    float vector of length D² (D = d, or d + 1 with ``intercept``, which appends a 1 to every row), under
    ``L2Distance`` (the Frobenius norm of the matrix).

    Sensitivity. The outer product of one row has Frobenius norm ``‖x xᵀ‖_F = ‖x‖²``, so adding or removing
    k rows of norm at most c moves the exact sum by at most ``k·c²``; changing a row ``x`` into ``y`` moves
    it by ``‖x xᵀ − y yᵀ‖_F = √(‖x‖⁴ + ‖y‖⁴ − 2(x·y)²) <= √2·c²``. With ``intercept`` the rows are
    ``(x, 1)``, of squared norm at most ``c² + 1``.

    Float rounding is covered by computing on a grid, exactly. Each row is scaled by ``2**k`` (exact) and
    rounded to integers ``q`` with ``|qᵢ| <= 2**20`` (``k`` fixed by c alone, never by the data); the row's
    grid vector ``q·2**-k`` is within ``√d·2**-(k+1)`` of ``x``, so its squared norm is at most
    ``s = (c + √d·2**-(k+1))²`` (+1 with the intercept, which is exact), the bound used above in place of
    ``c²``. Blocks of :data:`BLOCK_ROWS` rows are multiplied (``QᵀQ``, BLAS, any summation order) with every
    partial sum an integer of magnitude at most ``2**53``, hence exactly, and the blocks are added in int64
    and Python integers: the sum of the grid rows' outer products is exact. With the intercept, the last row
    and column are the column sums of the grid rows (integers of magnitude at most ``2**33`` per block,
    exact) and the corner is the row count, combined in Python integers. Each entry is then clamped to
    ``[−L, L]`` (L the least float >= N·s for the size bound N: no entry of N rows exceeds it, and a larger
    dataset is computed and clamped, never refused) and rounded once to the nearest float, which moves it by
    at most ``ulp(L)/2``; the map adds ``D·ulp(L)`` (the L2 norm of D² such moves on each of two outputs) for
    d_in > 0, as :func:`make_vector_sum` does. So d_out = d_in·s (``SymmetricDistance``) or d_in·√2·s
    (``ChangeOneDistance``, √2 rounded up), plus that slack. The grid costs at most ``2**-20·m`` per entry
    (m = c, or max(c, 1) with an intercept: the grid must hold the entry 1), far below the noise of any
    useful ε.

    Args:
        input_domain: ``VectorDomain(NormBallDomain(size=d, norm=c, p=1|2))`` (rows of norm at most c; chain
            :func:`make_clip_l2`) or ``VectorDomain(VectorDomain(AtomDomain(float, bounds=(lo, hi)),
            size=d))`` without NaN (c = √d·max(|lo|, |hi|), rounded up), optionally sized; d <= 1024.
        input_metric: ``SymmetricDistance()`` or ``ChangeOneDistance()``.
        intercept: append a constant 1 to every row (the intercept column of a regression).
        max_size: without a domain ``size``: the most rows a dataset may hold (more are summed and
            clamped).

    Returns:
        A transformation to ``VectorDomain(AtomDomain(float), size=D*D)`` releasing a float64 vector;
        ``v.reshape(D, D)`` is the symmetric matrix (after noise, symmetrise with ``(A + Aᵀ)/2``: it
        halves the noise variance of the off-diagonal entries, each released twice).

    Raises:
        DomainMismatch: rows without a norm or entry bound, or the metric is not a dataset metric.
        InvalidParameter: no size bound, ``max_size`` not a non-negative integer, d over 1024, N·s beyond the
            float range, or ``intercept`` not a bool.

    Source: Sheffet 2017 and Wang 2018 (linear regression from noisy sufficient statistics XᵀX, Xᵀy);
    the Frobenius norm of a rank-one matrix is ``‖x‖²``; rounding slack per Casacuberta et al. 2022.

    Examples:
        >>> import numpy as np
        >>> import dpcompose as dp
        >>> rows = dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float, bounds=(-1.0, 1.0)), size=2))
        >>> sscp = dp.t.make_sscp(rows, dp.SymmetricDistance(), intercept=True, max_size=1000)
        >>> sscp(np.array([[1.0, 0.5], [-1.0, 0.25]])).reshape(3, 3).tolist()
        [[2.0, 0.25, 0.0], [0.25, 0.3125, 0.75], [0.0, 0.75, 2.0]]
        >>> round(float(sscp.map(1)), 6)  # (√2)² + 1, and the grid's and the rounding's slack
        3.000004
    """
    check_dataset_metric(input_metric)
    check_space(input_domain, input_metric)
    if not isinstance(intercept, bool):
        raise InvalidParameter(f"intercept={intercept!r} must be True or False")
    d, c = _row_bound(input_domain)
    if d > _MAX_COLUMNS:
        raise InvalidParameter(f"input_domain={input_domain!r}: at most {_MAX_COLUMNS} columns")
    assert isinstance(input_domain, VectorDomain)
    limit = size_bound(input_domain, max_size, "an SSCP", "rows")
    width = d + 1 if intercept else d
    top = max(float_up(c), 1.0) if intercept else float_up(c)
    _, e = math.frexp(top)  # top < 2**e: every entry, scaled by 2**k, is below 2**GRID_BITS
    k = GRID_BITS - e
    if not -1000 <= k <= 1000:
        raise InvalidParameter(
            f"input_domain={input_domain!r}: the row norm bound must lie in [2**-980, 2**980]"
        )
    half_step = sqrt_up_rational(Fraction(d)) * Fraction(2) ** (-k - 1)
    s = (c + half_step) ** 2 + (1 if intercept else 0)
    largest = float_up(limit * s)
    if largest == math.inf:
        raise InvalidParameter(
            f"max_size={limit} rows of squared norm up to {float(s)!r} can sum beyond the float range: lower "
            "max_size or the norm"
        )
    cap = math.floor(Fraction(largest) * Fraction(2) ** (2 * k))  # L in grid units (entries are integers)
    ulp = Fraction(math.ulp(largest))
    slack = width * ulp
    per_row = s * _ROOT2_UP if isinstance(input_metric, ChangeOneDistance) else s
    scale = np.float64(math.ldexp(1.0, k))  # (a numpy scalar: the multiply's fastest operand)

    def block_sums(x: Floats, inside: BlockTest | None, data: Any, blocks: Blocks, product: Product) -> _Sums:
        """The exact ``Σ q qᵀ`` (flattened row-major) and ``Σ q`` of the grid rows of the blocks of ``x``
        taken from ``blocks`` (each ``qᵀq`` by ``product``, :func:`block_product`); with ``inside``, each
        block is tested once scaled (before any of it is summed) and a block failing it runs the input
        domain's full check on ``data``, which raises its :class:`DomainMismatch` (and stops ``blocks``)."""
        gram, sums = [0] * (d * d), [0] * d
        running = np.zeros((d, d), dtype=np.int64)
        running_sums = np.zeros(d, dtype=np.int64)
        rows = min(BLOCK_ROWS, x.shape[0])
        work = np.empty((rows, d))  # reused (a fresh block each time page-faults), contiguous (fast loops)
        scratch = np.empty((rows, d))
        ones = np.ones(rows)
        with np.errstate(under="ignore", over="ignore"):  # (overflow: only in a non-member, refused)
            number = 0
            while (start := blocks.take()) is not None:
                number += 1
                block = x[start : start + BLOCK_ROWS]
                m = block.shape[0]
                q = work[:m]
                np.multiply(block, scale, out=q)
                if inside is not None and not inside(block, q, scratch[:m]):
                    try:
                        input_domain.check(data)  # a non-member raises here (the block tests are exact)
                    except BaseException:
                        blocks.stop()
                        raise
                    inside = None  # unreachable: the whole dataset is a member after all
                np.rint(q, out=q)
                running += product(q)  # exact integers of magnitude <= 2**53
                if intercept:  # column sums: integers of magnitude <= 2**33, exact in any order
                    running_sums += np.dot(ones[:m], q).astype(np.int64)
                if number % _FLUSH == 0:
                    gram = _add(gram, running)
                    sums = _add(sums, running_sums)
                    running[...] = 0
                    running_sums[...] = 0
        return _add(gram, running), _add(sums, running_sums)

    def products(x: Floats, inside: BlockTest | None, data: Any) -> Floats:
        """The SSCP of the rows ``x`` (tested block by block with ``inside``, see ``block_sums``), in two
        threads for a large ``x`` (:mod:`~dpcompose.transformations._sscp_speed`): each thread's sums are
        exact integers, so their sum is the same however the blocks were shared."""
        blocks = Blocks(x.shape[0], BLOCK_ROWS)
        product = block_product(d)
        if not two_threads(x.shape[0], d, BLOCK_ROWS):
            gram, sums = block_sums(x, inside, data, blocks, product)
        else:  # the second thread's product releases the GIL (the caller's may hold it)
            second = block_product(d, threads=True)
            (gram, sums), (gram2, sums2) = in_two_threads(
                lambda: block_sums(x, inside, data, blocks, product),
                lambda: block_sums(x, inside, data, blocks, second),
                blocks,
            )
            gram = [a + b for a, b in zip(gram, gram2, strict=True)]
            sums = [a + b for a, b in zip(sums, sums2, strict=True)]
        if not intercept:
            total, unit = gram, 2 * k  # entries in units of 2**-2k
        elif k >= 0:  # the row (q, 2**k) in units of 2**-k: Σ q qᵀ, 2**k·Σ q, 2**2k·n
            total, unit = _bordered(gram, [v << k for v in sums], x.shape[0] << (2 * k), d), 2 * k
        else:  # units of 1: Σ q qᵀ·2**-2k, Σ q·2**-k, n (the intercept is not a multiple of 2**-k)
            shift = -2 * k
            exact = _bordered([v << shift for v in gram], [v << -k for v in sums], x.shape[0], d)
            total, unit = exact, 0
        limit = cap if unit == 2 * k else math.floor(largest)
        clamped = [max(-limit, min(limit, v)) for v in total]
        if unit >= 0:  # int / int and int -> float are correctly rounded: once, to nearest
            return np.array([v / (1 << unit) for v in clamped])
        return np.array([float(v << -unit) for v in clamped])

    def run(data: Any) -> Floats:
        return products(rows_array(data, d), None, data)

    block_test = _block_test(input_domain, k)

    def run_checked(data: Any) -> Floats:
        if block_test is None or not _fusable(input_domain, data, d):
            input_domain.check(data)
            return run(data)
        return products(data, block_test, data)

    def stability(d_in: int) -> Fraction:
        return d_in * per_row + (slack if d_in > 0 else 0)

    params = [("norm", repr(float_up(c))), ("intercept", str(intercept))]
    if max_size is not None:
        params.append(("max_size", str(limit)))
    return Transformation(
        input_domain,
        VectorDomain(AtomDomain(float), size=width * width),
        input_metric,
        L2Distance(),
        run,
        stability,
        node=Node(
            "sscp", params=tuple(params), source="Sheffet 2017; ‖x xᵀ‖_F = ‖x‖²; Casacuberta et al. 2022"
        ),
        checked_function=run_checked,
    )


def _add(total: list[int], running: npt.NDArray[np.int64]) -> list[int]:
    """``total`` plus ``running`` (flattened row-major), in Python integers."""
    return [a + b for a, b in zip(total, running.ravel().tolist(), strict=True)]


def _bordered(gram: list[int], border: list[int], corner: int, d: int) -> list[int]:
    """The (d + 1) × (d + 1) matrix ``[[G, b], [bᵀ, corner]]`` flattened row-major, from the d × d ``G``
    (flattened) and the d-vector ``b``."""
    out: list[int] = []
    for i in range(d):
        out.extend(gram[i * d : (i + 1) * d])
        out.append(border[i])
    out.extend(border)
    out.append(corner)
    return out


def _block_test(input_domain: VectorDomain, k: int) -> BlockTest | None:
    """An exact membership test of a block of rows for the two row domains :func:`make_sscp` takes, given
    the block (a float64 ``(m, d)`` array, any strides), the block scaled by ``2**k`` (``fl(x·2**k)``) and
    a scratch array: it decides every block as the input domain's own check decides its rows, entries in
    ``[float_up(lo), float_down(hi)]`` and no NaN (one min and one max, NaN propagating), or every row's
    exact norm within the ball (:func:`all_within`). None for any other (sub)class of domain: its own
    check runs.

    For k >= 0 the scaled block is tested against the bounds scaled by ``2**k`` (it is in the cache): both
    scalings are exact (a power of two, upwards: no underflow; the bounds stay below ``2**20``), except an
    entry that overflows to ±inf, which lies beyond ``2**(1024-k) > 2**20·2**-k >`` every bound and is
    refused either way; so each comparison, and each exact norm, has the same answer as on the rows. For
    k < 0 (a scaling down may underflow) the rows themselves are tested."""
    element = input_domain.element_domain
    if type(input_domain) is not VectorDomain:
        return None
    if type(element) is NormBallDomain:
        p = element.p
        if k >= 0:
            scaled_norm = math.ldexp(element.norm, k)
            return lambda block, scaled, scratch: all_within(scaled, p, scaled_norm, scratch)
        norm = element.norm
        return lambda block, scaled, scratch: all_within(block, p, norm, scratch)
    atom = element.element_domain if type(element) is VectorDomain else None
    if type(atom) is AtomDomain and atom.bounds is not None and not atom.nan:
        lo, hi = float_up(atom.bounds[0]), float_down(atom.bounds[1])
        if k >= 0:
            lo, hi = math.ldexp(lo, k), math.ldexp(hi, k)
            return lambda block, scaled, _: bool(lo <= scaled.min() and scaled.max() <= hi)  # NaN: False
        return lambda block, scaled, _: bool(lo <= block.min() and block.max() <= hi)
    return None


def _fusable(input_domain: VectorDomain, data: Any, d: int) -> bool:
    """Whether ``data`` is a float64 array of d columns (and of the domain's size, if any): the data whose
    check :func:`_block_test` decides block by block."""
    return (
        type(data) is np.ndarray
        and data.ndim == 2
        and data.dtype == np.dtype(np.float64)
        and data.shape[1] == d
        and (input_domain.size is None or data.shape[0] == input_domain.size)
    )
