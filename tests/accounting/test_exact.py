"""The scalar primitives of ``dpcompose.accounting._exact`` against exact integer arithmetic."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from dpcompose.accounting._exact import sqrt_up_dyadic


@settings(max_examples=40)
@given(st.integers(0, 2**200), st.integers(0, 80))
def test_sqrt_up_dyadic_is_the_least_dyadic_at_or_above_the_root(n: int, bits: int) -> None:
    r = sqrt_up_dyadic(n, bits)
    assert isinstance(r, Fraction)
    k = r * 2**bits
    assert k.denominator == 1  # a multiple of 2**-bits
    m = n << (2 * bits)  # k ≥ √n·2^b  ⟺  k² ≥ n·4^b
    assert k.numerator**2 >= m
    assert k.numerator == 0 or (k.numerator - 1) ** 2 < m  # the least such multiple


@settings(max_examples=30)
@given(st.integers(0, 2**100), st.integers(0, 80))
def test_sqrt_up_dyadic_is_exact_on_perfect_squares(root: int, bits: int) -> None:
    assert sqrt_up_dyadic(root * root, bits) == root
