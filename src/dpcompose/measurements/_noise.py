"""The one small interface the float-valued mechanisms draw noise through.

Every random draw of ``make_laplace``, ``make_gaussian`` and randomized response goes through these
functions, so hardening the sampler is a local change. ``rng=None`` means a fresh
:class:`numpy.random.Generator` seeded with 128 bits from :mod:`secrets`; passing ``rng=`` makes runs
reproducible and is for experiments only — a seeded generator is not private.
"""

from __future__ import annotations

import secrets
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

__all__ = ["bernoulli", "gaussian", "laplace", "resolve_rng", "uniform_below"]


def resolve_rng(rng: np.random.Generator | None) -> np.random.Generator:
    """The caller's generator, or a fresh one seeded from the operating system's secure source."""
    if rng is None:
        return np.random.default_rng(secrets.randbits(128))
    return rng


def laplace(shape: tuple[int, ...], scale: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """Laplace(0, scale) noise of the given shape."""
    return rng.laplace(0.0, scale, size=shape)


def gaussian(shape: tuple[int, ...], scale: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """N(0, scale²) noise of the given shape."""
    return rng.normal(0.0, scale, size=shape)


_LIMB = 1 << 62


def uniform_below(n: int, rng: np.random.Generator | None) -> int:
    """A uniform integer in [0, n), exactly: ``secrets.randbelow`` or the caller's generator."""
    if rng is None:
        return secrets.randbelow(n)
    if n <= _LIMB:
        return int(rng.integers(0, n))
    # beyond numpy's int64 range: uniform bits in 62-bit limbs, rejection (expected < 2 rounds)
    bits = n.bit_length()
    while True:
        value, got = 0, 0
        while got < bits:
            value = (value << 62) | int(rng.integers(0, _LIMB))
            got += 62
        value >>= got - bits
        if value < n:
            return value


def bernoulli(p: Fraction, rng: np.random.Generator | None) -> bool:
    """True with probability exactly ``p`` (a rational in [0, 1]), using integer draws only."""
    return uniform_below(p.denominator, rng) < p.numerator
