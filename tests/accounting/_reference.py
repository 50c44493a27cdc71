"""High-precision (mpmath) references shared by the accounting tests."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import mpmath

mp = mpmath.mp
mp.dps = 50


def mpf(x: object) -> mpmath.mpf:
    """Exact conversion of an int/float/Fraction to an mpf at the working precision."""
    if isinstance(x, Fraction):
        return mpmath.mpf(x.numerator) / x.denominator
    return mpmath.mpf(x)


def golden_min(f: Callable[[mpmath.mpf], mpmath.mpf], lo: float, hi: float, iters: int = 170) -> mpmath.mpf:
    """Minimum of a unimodal f on [lo, hi] by golden-section search at 50 digits."""
    a, b = mpf(lo), mpf(hi)
    g = (mpmath.sqrt(5) - 1) / 2
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(iters):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
    return min(fc, fd)


def assert_tight(ours: Fraction, ref: mpmath.mpf, rel: float = 1e-9, abs_: float = 1e-15) -> None:
    """``ref <= ours <= ref·(1 + rel) + abs_`` (the project's tightness rule)."""
    o = mpf(ours)
    assert ref <= o, f"under-reports: ours={mpmath.nstr(o, 20)} < reference={mpmath.nstr(ref, 20)}"
    assert o <= ref * (1 + mpf(rel)) + mpf(abs_), (
        f"too loose: ours={mpmath.nstr(o, 20)} reference={mpmath.nstr(ref, 20)}"
    )
