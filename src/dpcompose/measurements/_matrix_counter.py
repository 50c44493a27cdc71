"""The matrix-factorisation online counter: running counts from the square-root factorisation of the
prefix-sum matrix, with correlated discrete Gaussian noise, released one step at a time.

The factorisation (Fichtenberger, Henzinger, Upadhyay 2023, "Constant matters: fine-grained error bound on
differentially private continual observation", ICML, §3; Henzinger, Upadhyay, Upadhyay 2023, SODA). The
``T × T`` prefix-sum matrix ``A`` (lower-triangular ones) is ``A = B·C`` with ``B = C`` the lower-triangular
Toeplitz matrix of ``f_k = binom(2k, k)/4**k`` (``f_0 = 1``, ``f_k = f_{k−1}·(2k − 1)/(2k)``): the
coefficients of ``(1 − z)**(−1/2)``, whose square is ``1/(1 − z)``, the generating function of ``A``'s
diagonals. The mechanism adds noise to ``C·x`` and releases ``ŝ_t = (B·(C·x + z))_t = s_t + (B·z)_t``, a
function of the first ``t + 1`` entries of ``C·x + z`` only (both factors are lower triangular), so step
``t`` can be answered when step ``t`` closes. The noise of ``ŝ_t`` has variance ``σ²·Σ_{k ≤ t} f_k²``
(``≈ σ²·(ln(t + 1) + γ + ln 16)/π``, γ Euler's constant; the binary tree's is ``σ²·(⌈log₂T⌉ + 1)``-ish).

What runs, exactly. Two things keep the privacy proof exact on a computer.

1. ``C`` is replaced by ``C̃``, its entries ``f_k`` rounded *down* to multiples of ``2**−64``
   (``0 ≤ f̃_k ≤ f_k``), so that ``(C̃x)_t = N_t/2**64`` with the integer ``N_t = Σ_{i ≤ t} F_{t−i}·x_i``,
   ``F_k = ⌊f_k·2**64⌋`` — computed exactly in Python integers, by the same steps for every datum (each
   item enters as ``x_i + 2**63``, an integer of 63–64 bits, and ``2**63·Σ_{k ≤ t} F_k`` is subtracted
   after, so the work does not depend on the items' sizes). Each
   column of ``C̃`` is entrywise between 0 and the same column of ``C``, so its L2 norm is at most ``C``'s.
   (``B·C̃`` differs from ``A`` by less than ``2**−64·(t + 1)·Σ f`` per unit of data: a bias far below the
   grid rounding and the noise.)
2. The noise is the library's exact discrete Gaussian on the grid ``g·Z``, ``g = 2**k``,
   ``k = ⌊log₂ σ⌋ − 39``, with parameter ``σ_g = ⌈σ/g⌉ ∈ [2**39, 2**40]`` grid units (as
   :func:`~dpcompose.measurements.make_gaussian` does for float data, on a grid 2**19 times finer, so that
   the rounding below costs a relative ``≈ 2√T·σ/(2**39·S)`` in ρ rather than ``2√T·σ/(2**20·S)``, which
   is 1.4e-4 at ``T = 1,024``, σ = 4; ``σ' = σ_g·g ≥ σ`` is the noise actually used, ``σ`` itself when it
   has at most 40 significant bits). ``C̃x`` is rounded to the grid first —
   ``q_t = ⌊N_t/2**(64+k) + 1/2⌋``, exact integer arithmetic — and the released vector is ``y = q + z``
   in grid units, ``z`` independent discrete Gaussians. (Adding integer noise to the unrounded ``C̃x``
   would not be private: neighbours' outputs would live on different shifted lattices.) The answer to
   step ``t`` is ``g·Σ_{j ≤ t} f_{t−j}·y_j`` in floating point, a post-processing of ``y``.

Privacy (proof). Neighbour relation: ``L1Distance`` on the ``T`` integer per-step counts — event level,
change-one-item: one event of weight at most ``c`` (it adds at most ``c`` to one step's count) is
``d_in = c``; ``|x_t − x'_t| ≤ 1`` at one step is ``d_in = 1``. Each count is first clamped to
``±⌊2**62/T⌋`` (1-Lipschitz per step, so the distance never grows). For ``v = x − x'`` with ``‖v‖₁ ≤ d``,
``‖C̃v‖₂ ≤ Σ_j |v_j|·‖c̃_j‖₂ ≤ d·S`` with ``S = max_j ‖c_j‖₂ = √(Σ_{k<T} f_k²)`` (column 0 is the longest;
the triangle inequality, attained by ``v = d·e_0``); the map uses ``S̄ ≥ S``, the least multiple of
``2**−64`` at or above it, from the exact rational ``Σ f_k²`` (:func:`column_norm_bound`). Rounding to the
grid moves each coordinate by less than half a unit, so ``‖q(x) − q(x')‖₂ < d·S̄/g + √T`` grid units
(:func:`~dpcompose.measurements._discrete.grid_sensitivity`, with a rational above ``√T``): call it
``Δ_g``. ``y`` is the multivariate discrete Gaussian mechanism on the integer vector ``q(x)``, which is
``Δ_g²/(2σ_g²)``-zCDP (Canonne, Kamath, Steinke 2020, Theorem 14). Every answer, whatever steps are asked
and however they are interleaved with other queryables, is a function of ``y`` (drawing ``z`` when the
queryable is created (the whole stream is clamped and stored then too) does not change ``y``'s
law), so the whole transcript is ``ρ``-zCDP with ``ρ = Δ_g²/(2σ_g²)``, charged in full when the counter is
created (as a child of a compositor, the compositor's theorem composes it with its siblings). The map
reports the least non-increasing majorant of that ρ in σ
(:func:`~dpcompose.measurements._discrete.monotone_in_scale`: the grid coarsens at each power of two)
rounded up to the least float at or above it, and the dominating pair of the discrete Gaussian vector
(:func:`~dpcompose.accounting._vector_pairs.vector_discrete_gaussian_loss`) for the tight (ε, δ) of
:func:`~dpcompose.make_zcdp_to_profile`.

Adaptively chosen items. Here the items are the data the queryable is created on, fixed before the first
answer, so the argument above is complete. The same ρ also holds when each item may depend on the earlier
answers — an adversary choosing ``x_t`` and ``x'_t`` after seeing ``ŝ_0 … ŝ_{t−1}``, the two streams
differing at one step ``τ`` by at most ``d`` — by this proof: at step ``t`` the release ``y_t`` is
``q_t + z_t`` with fresh noise, and the two worlds' ``q_t`` differ by an integer ``Δ_t`` that is a
function of the shared history (0 before ``τ``; after it, the rounding of ``f̃_{t−τ}·(x_τ − x'_τ)/g``
plus less than one unit), so a discrete Gaussian step of Rényi divergence at most ``αΔ_t²/(2σ_g²)`` at
every order ``α`` (Canonne–Kamath–Steinke 2020, Theorem 4); on every history
``Σ_t Δ_t² ≤ ‖q(x) − q(x')‖₂² ≤ Δ_g²`` (the bound above), so the Rényi filter (Feldman–Zrnic 2021,
Theorem 4.3) gives ``αΔ_g²/(2σ_g²)`` for the whole adaptive transcript at every ``α``: ρ-zCDP. For
continuous Gaussian noise this is Denisov, McMahan, Rush, Smith, Thakurta 2022, "Improved differential
privacy for SGD via optimal private linear operators on adaptive streams" (NeurIPS), Theorem 2.1: for a
square, full-rank, lower-triangular workload ``A = B·C``, releasing ``B(Cx + z)`` online over an adaptive
stream is exactly as private as the non-adaptive Gaussian mechanism ``x ↦ Cx + z`` at the sensitivity
``max_j ‖c_j‖₂``.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpcompose._validation import check_finite_positive
from dpcompose.accounting import PrivacyLoss, exact
from dpcompose.accounting._exact import fraction_up
from dpcompose.accounting._vector_pairs import vector_discrete_gaussian_loss, vector_shift_dims
from dpcompose.core import ZCDP, Domain, Measurement, Metric, Node
from dpcompose.core._recipe import recorded
from dpcompose.errors import InvalidParameter
from dpcompose.measurements._counter import StepCounter
from dpcompose.measurements._discrete import (
    Grid,
    check_generator,
    check_grid_scale,
    grid_sensitivity,
    monotone_in_scale,
    rng_source,
)
from dpcompose.measurements._interactive import grid_index
from dpcompose.measurements._sampling import discrete_gaussian_array
from dpcompose.transformations._tree import check_step_counts, clamped_steps

__all__ = ["column_norm_bound", "make_matrix_counter", "sqrt_factor_coefficients"]

MAX_STEPS = 1 << 16
"""The largest horizon T accepted: step ``t`` costs ``O(t)`` exact integer operations (the whole stream
``O(T²)``), which is seconds at ``T = 2**16``."""

C_BITS = 64
"""The entries of ``C̃`` are ``f_k`` rounded down to multiples of ``2**−C_BITS``."""

GRID_BITS = 39
"""σ in grid units lies in ``[2**39, 2**40]``: the grid exponent is ``⌊log₂ σ⌋ − 39`` (``σ_g² ≤ 2**80``,
the exact sampler's limit)."""

Floats = npt.NDArray[np.float64]


@functools.lru_cache(maxsize=8)
def sqrt_factor_coefficients(length: int) -> tuple[Fraction, ...]:
    """The exact ``f_k = binom(2k, k)/4**k`` for ``k < length`` (``f_0 = 1``, ``f_k = f_{k−1}(2k−1)/(2k)``):
    the first column of the square root ``C`` of the ``length × length`` prefix-sum matrix.

    Source: Fichtenberger, Henzinger, Upadhyay 2023 (ICML), §3: ``C = B`` lower-triangular Toeplitz with these
    entries and ``B·C = A`` (the coefficients of ``(1 − z)**(−1/2)``, squared, are all 1).

    Examples:
        >>> [str(f) for f in sqrt_factor_coefficients(4)]
        ['1', '1/2', '3/8', '5/16']
    """
    out = [Fraction(1)]
    for k in range(1, length):
        out.append(out[-1] * (2 * k - 1) / (2 * k))
    return tuple(out)


@functools.lru_cache(maxsize=64)
def column_norm_bound(length: int) -> Fraction:
    """``S̄``: the least multiple of ``2**−64`` at or above ``S = √(Σ_{k<T} f_k²)``, the largest column L2
    norm of ``C`` (``T = length``), from the exact rational sum (integer square root, rounded up).

    Source: proven in the module docstring (column 0 of the lower-triangular Toeplitz ``C`` holds every
    ``f_k``, ``k < T``; the other columns hold a prefix of them).

    Examples:
        >>> column_norm_bound(1), column_norm_bound(2) == Fraction(math.isqrt(5 * 2**126 - 1) + 1, 2**64)
        (Fraction(1, 1), True)
    """
    # Σ f_k² = Σ binom(2k, k)²·16**(T−1−k) / 16**(T−1), in integers (f_k = binom(2k, k)/4**k exactly)
    top, binom = 0, 1
    for k in range(length):
        if k:
            binom = binom * 2 * (2 * k - 1) // k  # binom(2k, k) from binom(2k − 2, k − 1), exact
        top = top * 16 + binom * binom
    # S̄ = ⌈S·2**64⌉/2**64 = (isqrt(⌈S²·4**64⌉ − 1) + 1)/2**64, with ⌈S²·4**64⌉ = ⌈top·4**64/16**(T−1)⌉
    shift = 4 * (length - 1) - 2 * C_BITS
    scaled = -((-top) >> shift) if shift >= 0 else top << -shift
    return Fraction(math.isqrt(scaled - 1) + 1, 1 << C_BITS)


OFFSET = 1 << 63
"""Added to every (clamped) item before the products and subtracted after, so that every item enters the
exact arithmetic as an integer of 63–64 bits: the same digit counts, hence the same work, whatever the
data (a running time is an output too)."""
SMALLEST_SCALE = Fraction(1, 1 << 900)
"""Scales below this are refused: ``|(C̃x)_t| < 2**63`` (clamped items, ``Σ f_k ≤ 2√T``), so on a grid of
``2**k`` with ``k ≥ −939`` every grid index plus noise stays below ``2**1003`` and its float conversion (and
``B``'s float products) cannot overflow on data inside the domain."""


@functools.lru_cache(maxsize=8)
def _tables(length: int) -> tuple[tuple[int, ...], tuple[int, ...], Floats]:
    """``F_k = ⌊f_k·2**64⌋`` (the entries of ``C̃`` as integers), ``OFFSET·Σ_{k ≤ t} F_k`` (what the offset
    adds to ``N_t``) and ``f_k`` as floats (for ``B``)."""
    coefficients = sqrt_factor_coefficients(length)
    ints = tuple((f.numerator << C_BITS) // f.denominator for f in coefficients)
    offsets, total = [], 0
    for value in ints:
        total += value * OFFSET
        offsets.append(total)
    return ints, tuple(offsets), np.array([float(f) for f in coefficients], dtype=np.float64)


def counter_grid(sigma: Fraction) -> Grid:
    """The grid ``2**k``, ``k = ⌊log₂ σ⌋ − 39``, and ``σ_g = ⌈σ/2**k⌉ ∈ [2**39, 2**40]`` grid units."""
    k = sigma.numerator.bit_length() - sigma.denominator.bit_length()
    if Fraction(2) ** k > sigma:
        k -= 1  # now 2**k ≤ σ < 2**(k+1)
    k -= GRID_BITS
    return Grid(k, Fraction(math.ceil(sigma / Fraction(2) ** k)))


def matrix_counter_rho(d_in: Fraction, sigma: Fraction, length: int) -> Fraction:
    """ρ of the release on σ's grid at input distance ``d_in``: ``Δ_g²/(2σ_g²)`` with
    ``Δ_g = d_in·S̄/g + s``, ``s ≥ √T`` (the map reports :func:`monotone_in_scale` of it)."""
    grid = counter_grid(sigma)
    units = grid_sensitivity(d_in * column_norm_bound(length), grid.width, length, 2, False)
    return units * units / (2 * grid.units * grid.units)


class MatrixCounter(StepCounter[float]):
    """Answers step ``t`` (at most one past the last asked) with the noisy running count through ``t``."""

    def __init__(self, data: Any, length: int, grid: Grid, noise: npt.NDArray[np.int64]) -> None:
        super().__init__("matrix counter", length)
        self._values = [v + OFFSET for v in clamped_steps(data, length).tolist()]  # Python ints
        self._shift = C_BITS + grid.k  # q_t = ⌊N_t / 2**shift + 1/2⌋
        self._width = float(grid.width)
        self._noise = noise
        self._ints, self._offsets, self._floats = _tables(length)
        self._released = np.zeros(length, dtype=np.float64)  # y in grid units, as floats (for B)

    def _release(self, t: int) -> float:
        shifted = sum(map(int.__mul__, self._ints[t::-1], self._values[: t + 1]))
        total = shifted - self._offsets[t]  # N_t = 2**64·(C̃x)_t, exactly
        self._released[t] = float(grid_index(total, self._shift) + int(self._noise[t]))
        return self._width * float(np.dot(self._floats[t::-1], self._released[: t + 1]))


@recorded
def make_matrix_counter(
    input_domain: Domain,
    input_metric: Metric,
    scale: float,
    *,
    rng: np.random.Generator | None = None,
) -> Measurement[Any, Any, Any, Fraction]:
    """An online counter by the square-root factorisation of the prefix-sum matrix, with correlated
    discrete Gaussian noise: a queryable releasing the running count after each step, in zCDP.

    Ask the steps in order: ``counter(t)`` returns ``x_0 + … + x_t`` plus ``(B·z)_t = Σ_{j ≤ t} f_{t−j}·z_j``
    (``f_k = binom(2k, k)/4**k``, ``z`` independent discrete Gaussians of standard deviation about
    ``scale``), reading only the steps up to ``t``. Asking a step again returns the same answer; asking more
    than one step ahead, or past ``T``, is refused (nothing is run). Each answer is a ``float``. The noise
    of answer ``t`` has variance ``σ'²·Σ_{k ≤ t} f_k²`` (``σ' = ⌈σ/g⌉·g``, ``σ`` itself when it has at most
    40 significant bits): at ``T = 1,024`` the mean over all steps is about ``2.96·σ'²``.

    Privacy map (charged at construction; proof and the exact rounding in the module docstring):
    ``ρ = Δ_g²/(2σ_g²)`` with ``Δ_g = d_in·S̄/g + s`` grid units, ``S̄ ≥ √(Σ_{k<T} f_k²)`` (the largest column
    norm of ``C``, ≈ 1.81 at ``T = 1,024``) and ``s ≥ √T`` the grid rounding — about ``(d_in·S̄/σ)²/2``
    (relative excess ``≈ 2√T·σ/(2**39·d_in·S)``, below 1e-4 for ``σ`` up to ``10**6`` at ``T = 1,024``),
    rounded up to a float. Under ``L1Distance`` on the per-step counts: an event of weight at most ``c``
    at one step is ``d_in = c``. For (ε, δ), cast with
    :func:`~dpcompose.make_zcdp_to_approx` or, tighter (the discrete Gaussian's dominating pair),
    :func:`~dpcompose.make_zcdp_to_profile` then :func:`~dpcompose.make_fix_delta`. The same ρ holds if the
    items were chosen adaptively from earlier answers (Denisov et al. 2022 Thm 2.1; module docstring).

    Args:
        input_domain: ``VectorDomain(AtomDomain(int), size=T)`` — the count at each step, ``1 ≤ T ≤ 2**16``.
        input_metric: ``L1Distance()``.
        scale: σ, the standard deviation of each ``z_t`` (positive, finite, within the float grid's range).
        rng: a seeded numpy Generator for reproducible, NOT private, noise (default: the secure source).

    Raises:
        DomainMismatch: the domain is not a sized vector of ``int``, or the metric is not ``L1Distance()``.
        InvalidParameter: ``scale`` not positive and finite or outside ``[2**-900, 2**1010)``; ``T`` above
            2**16; (when asked) a step that is not an int, out of order, or past ``T``.

    Source: Fichtenberger, Henzinger, Upadhyay 2023 (ICML) §3, Henzinger, Upadhyay, Upadhyay 2023 (SODA)
    (the factorisation and its error); Canonne, Kamath, Steinke 2020, Theorem 14 (the discrete Gaussian
    vector is ½Δ²/σ²-zCDP); Denisov, McMahan, Rush, Smith, Thakurta 2022 (NeurIPS) Theorem 2.1 (adaptive
    streams).

    Examples:
        >>> import dpcompose as dp
        >>> steps = dp.VectorDomain(dp.AtomDomain(int), size=8)
        >>> counter = dp.m.make_matrix_counter(steps, dp.L1Distance(), scale=4.0)
        >>> rho = counter.map(1)       # ≈ (S/σ)²/2 with S = √(Σ_{k<8} f_k²) ≈ 1.31
        >>> round(float(rho), 4)
        0.0537
        >>> q = counter([5, 0, 2, 7, 1, 1, 0, 3])
        >>> [type(q(t)).__name__ for t in range(3)]
        ['float', 'float', 'float']
    """
    length = check_step_counts(input_domain, input_metric)
    if not 1 <= length <= MAX_STEPS:
        raise InvalidParameter(
            f"input_domain has size {length}: the stream length must be 1 … 2**16 (each step costs O(T))"
        )
    check_finite_positive(scale, "scale")
    sigma = exact(scale, "scale")
    check_grid_scale(sigma, GRID_BITS)
    if sigma < SMALLEST_SCALE:
        raise InvalidParameter(
            f"scale={scale!r} is below 2**-900: a large item's running count would pass the float range on "
            "the counter's grid; rescale the counts (a scale of 2**-900 or more)"
        )
    check_generator(rng)
    grid = counter_grid(sigma)
    column_norm_bound(length)  # (cached: the first map call costs nothing more)

    def run(data: Any) -> MatrixCounter:
        noise = discrete_gaussian_array(grid.units * grid.units, length, rng_source(rng))
        return MatrixCounter(data, length, grid, noise)

    def privacy_map(d_in: Any) -> Fraction:
        d = Fraction(d_in)
        if d == 0:
            return Fraction(0)
        # rounded up to the least float ≥ ρ (a short dyadic: the exact ρ has ~300-bit terms)
        return fraction_up(
            monotone_in_scale(lambda s: matrix_counter_rho(d, s, length), sigma, GRID_BITS, False)
        )

    def loss(d_in: Any) -> PrivacyLoss | None:
        # integer shifts of L2 norm ≤ Δ_g in grid units: Gaussian(μ′) ⊗ A(0, η) (vector_gaussian_bound)
        units = grid_sensitivity(Fraction(d_in) * column_norm_bound(length), grid.width, length, 2, False)
        return vector_discrete_gaussian_loss(units, grid.units, vector_shift_dims(units, length))

    return Measurement(
        input_domain,
        input_metric,
        ZCDP(),
        run,
        privacy_map,
        loss=loss,
        interactive=True,
        node=Node(
            "matrix_counter",
            params=(("T", str(length)), ("scale", repr(scale))),
            source="Fichtenberger–Henzinger–Upadhyay 2023 §3 (√ factorisation); CKS 2020 Thm 14",
            interaction="interactive",
        ),
    )
