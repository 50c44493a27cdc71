"""The error-model primitives of ``_pld/floats.py``: each bound really bounds, checked in exact rational
arithmetic (``Fraction``) or against mpmath at 200 bits, and each is one fixed sequence of float operations
(the PLD readings are pinned bit for bit to it)."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcompose.accounting._pld import floats

U = Fraction(1, 2**53)
E = Fraction(floats.EXP_REL)

normal = st.floats(2.0**-1000, 2.0**1000)
mixed_floats = st.floats(-1e300, 1e300, allow_nan=False, allow_infinity=False)


def _chain(x0: float, ops: list[tuple[bool, float]]) -> tuple[float, Fraction]:
    """The float and the exact results of multiplying or dividing ``x0`` by each factor in turn."""
    x, exact = x0, Fraction(x0)
    for mul, f in ops:
        x, exact = (x * f, exact * Fraction(f)) if mul else (x / f, exact / Fraction(f))
    return x, exact


_ops = st.lists(st.tuples(st.booleans(), st.floats(0.5, 2.0)), max_size=12)


@given(x0=st.floats(2.0**-900, 2.0**900), ops=_ops, extra=st.integers(0, 100))
def test_roundings_up_and_down_cover_r_roundings(
    x0: float, ops: list[tuple[bool, float]], extra: int
) -> None:
    x, exact = _chain(x0, ops)
    k = 2 * ((len(ops) + 3 + extra) // 2)  # r + 2 or more, even (see roundings_up)
    assert Fraction(floats.roundings_up(x, k)) >= exact
    assert Fraction(floats.roundings_down(x, k)) <= exact


@given(x=normal, half_k=st.integers(1, 2**20))
def test_roundings_factor_is_one_rounding_of_the_exact_product(x: float, half_k: int) -> None:
    k = 2 * half_k
    up, down = floats.roundings_up(x, k), floats.roundings_down(x, k)
    assert Fraction(up) >= Fraction(x) * (1 + k * U) * (1 - U)
    assert Fraction(down) <= Fraction(x) * (1 - k * U) * (1 + U)
    # elementwise on arrays: the same floats
    arr = np.array([x, x / 3, x * 0.75])
    assert floats.roundings_up(arr, k).tolist() == [floats.roundings_up(float(v), k) for v in arr]
    assert floats.roundings_down(arr, k).tolist() == [floats.roundings_down(float(v), k) for v in arr]


@settings(max_examples=300)
@given(x=st.floats(-700.0, 700.0))
def test_libm_up_and_down_bound_exp_and_expm1(x: float) -> None:
    mpmath.mp.prec = 200
    true_exp = mpmath.exp(mpmath.mpf(x))
    true_expm1 = mpmath.expm1(mpmath.mpf(x))
    for value in (math.exp(x), float(np.exp(np.array([x]))[0])):
        assert mpmath.mpf(floats.libm_up(value)) >= true_exp
        assert mpmath.mpf(floats.libm_down(value)) <= true_exp
    for value in (math.expm1(x), float(np.expm1(np.array([x]))[0])):
        # |expm1| moved away from / toward 0 by the sign of the result
        if x > 0:
            assert mpmath.mpf(floats.libm_up(value)) >= true_expm1
            assert mpmath.mpf(floats.libm_down(value)) <= true_expm1
        elif x < 0:
            assert mpmath.mpf(-floats.libm_up(-value)) <= true_expm1
            assert mpmath.mpf(-floats.libm_down(-value)) >= true_expm1


@given(x=st.floats(1.0 + 2.0**-50, 1e300))
def test_libm_up_and_down_bound_log(x: float) -> None:
    mpmath.mp.prec = 200
    true = mpmath.log(mpmath.mpf(x))
    for value in (math.log(x), float(np.log(np.array([x]))[0])):
        assert mpmath.mpf(floats.libm_up(value, 2)) >= true
        assert mpmath.mpf(floats.libm_down(value, 2)) <= true


@given(n=st.integers(1, 2**53))
def test_gamma_bounds_gamma_n(n: int) -> None:
    nu = n * U
    g = floats.gamma(n)
    if nu >= Fraction(1, 2):
        assert g == math.inf
        return
    assert Fraction(g) >= nu / (1 - nu)
    if n < 2**40:
        padded = floats.gamma_padded(np.array([float(n)]))
        assert Fraction(float(padded[0])) >= nu / (1 - nu)
        assert float(padded[0]) == floats.gamma_padded(float(n))


@given(xs=st.lists(mixed_floats, max_size=200))
def test_sum_bound_bounds_the_rounding_of_a_float_sum(xs: list[float]) -> None:
    x = np.array(xs, dtype=np.float64)
    s, e = floats.sum_bound(x)
    exact = sum((Fraction(v) for v in xs), Fraction(0))
    assert abs(Fraction(s) - exact) <= Fraction(e)


@given(
    xs=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=12),
    ys=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=40),
)
def test_sum_err_bounds_a_direct_convolution(xs: list[float], ys: list[float]) -> None:
    # the direct convolution of two sides (side.py): ‖ĉ − x∗y‖₁ ≤ γ_{min+2}·‖x‖₁·‖y‖₁ (padded) + subnormals
    x, y = np.array(xs), np.array(ys)
    c = np.convolve(x, y)
    exact = [Fraction(0)] * c.size
    for i, a in enumerate(xs):
        for j, b in enumerate(ys):
            exact[i + j] += Fraction(a) * Fraction(b)
    err = sum((abs(Fraction(float(v)) - w) for v, w in zip(c, exact, strict=True)), Fraction(0))
    ax, ay = float(np.sum(np.abs(x))), float(np.sum(np.abs(y)))
    bound = floats.sum_err(min(x.size, y.size) + 2, ax, ay) + 5e-324 * c.size
    assert err <= Fraction(bound)


@given(a=mixed_floats, b=mixed_floats)
def test_rounding_err_bounds_one_addition_and_one_product(a: float, b: float) -> None:
    s = a + b
    assert abs(Fraction(s) - (Fraction(a) + Fraction(b))) <= Fraction(floats.rounding_err(2, abs(s)))
    p = a * b
    if math.isfinite(p):
        # a product in the subnormal range may also lose 2**-1075 (call sites add it where it can occur)
        slack = Fraction(1, 2**1075)
        dev = abs(Fraction(p) - Fraction(a) * Fraction(b))
        assert dev <= Fraction(floats.rounding_err(2, abs(p))) + slack
        if abs(p) >= floats.TINY:
            assert dev <= floats.rounding_rel(2) * abs(Fraction(p))


@given(x0=st.floats(2.0**-900, 2.0**900), ops=_ops, bits=st.integers(20, 48))
def test_pad_up_and_down_cover_a_few_roundings(x0: float, ops: list[tuple[bool, float]], bits: int) -> None:
    x, exact = _chain(x0, ops)
    assert Fraction(floats.pad_up(x, bits)) >= exact
    assert Fraction(floats.pad_down(x, bits)) <= exact


def test_primitives_are_the_float_expressions_they_name() -> None:
    # the PLD readings are pinned bit for bit (scripts/pld_corpus.py): each primitive is one fixed
    # sequence of operations, elementwise on arrays
    rng = np.random.default_rng(7)
    x = rng.random(50) * 10.0 ** rng.integers(-300, 300, 50)
    assert np.array_equal(floats.roundings_up(x, 8), x * (1 + 8 * 2.0**-53))
    assert np.array_equal(floats.roundings_down(x, 4), x * (1 - 4 * 2.0**-53))
    assert np.array_equal(floats.libm_up(x, 2), x * (1 + 2 * 2.0**-44))
    assert np.array_equal(floats.libm_down(x, 8), x * (1 - 8 * 2.0**-44))
    assert np.array_equal(floats.pad_up(x, 40), x * (1 + 2.0**-40))
    assert np.array_equal(floats.pad_down(x, 48), x * (1 - 2.0**-48))
    assert np.array_equal(floats.rounding_err(3.03, x), 3.03 * 2.0**-53 * x)
    assert floats.libm_err(16) == 16 * 2.0**-44 and floats.rounding_rel(4) == 4 * 2.0**-53
    assert floats.sum_err(10, 0.3, 0.7) == floats.gamma(10) * 0.3 * 0.7 * (1 + 2.0**-40)


@given(xs=st.lists(st.floats(0.0, 1e300), max_size=200), signs=st.lists(st.booleans(), max_size=200))
def test_norm1_up_and_gamma_up_down_bound_an_l1_norm(xs: list[float], signs: list[bool]) -> None:
    vals = [-v if s else v for v, s in zip(xs, signs + [False] * len(xs), strict=False)]
    x = np.array(vals, dtype=np.float64)
    exact = sum((abs(Fraction(v)) for v in vals), Fraction(0))
    assert Fraction(floats.norm1_up(x)) >= exact
    s = float(np.sum(np.abs(x)))  # n − 1 roundings of non-negative terms
    assert Fraction(floats.gamma_up(s, max(1, x.size))) >= exact
    assert Fraction(floats.gamma_down(s, max(1, x.size))) <= exact
