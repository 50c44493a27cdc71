"""A bounded cache of subsampled Rényi curves, for loops that charge the same step many times.

A Rényi filter or odometer charging a DP-SGD step (``make_subsample(..., accounting="renyi")``) reads the
step's curve at each of its orders on every step, and each reading is an exact sum of up to α terms
(:func:`~dpcompose.accounting._rdp.subsampled_renyi`): 18 orders up to 256 cost about 15 ms a step, the
same numbers every step. The value at one order is a pure function of exact, hashable inputs — ρ, q, the
order and whether the removal sum alone is read — so it is kept, per those inputs, in a
least-recently-used cache of :data:`CACHE_SIZE` entries. (A dominating pair's whole curve is cached by
:meth:`~dpcompose.accounting.PrivacyLoss.renyi` itself.)

Speed only (DESIGN.md §6): the readings are the same with the cache on or off. The switch is the
environment variable :data:`SPEEDUPS_ENV` (``0``/``off`` turns it off), or :data:`SWITCH` for a block.
"""

from __future__ import annotations

import functools
from fractions import Fraction

from dpcompose._switch import SpeedSwitch
from dpcompose.accounting._rdp import subsampled_renyi

__all__ = ["CACHE_SIZE", "SPEEDUPS_ENV", "SWITCH", "clear", "sizes", "subsampled_zcdp_at"]

SPEEDUPS_ENV = "DPCOMPOSE_RDP_CACHE"
"""The environment variable that turns the cache off (``0``, ``false``, ``off``, ``no``)."""

SWITCH = SpeedSwitch(SPEEDUPS_ENV)
"""The cache's switch (``SWITCH.turned(False)`` for a block without it)."""

CACHE_SIZE = 4096
"""The most entries each cache keeps (least recently used dropped first): a few hundred distinct steps at
the default orders."""


def subsampled_zcdp_at(rho: Fraction, q: Fraction, alpha: Fraction, symmetric: bool) -> Fraction:
    """``subsampled_renyi(j ↦ jρ, q, (α,), symmetric=symmetric)[0]``: the Rényi divergence bound at order α
    of a ρ-zCDP mechanism (Bun–Steinke 2016 Def. 1.1: D_j ≤ jρ) run on a Poisson subsample with rate q,
    cached per (ρ, q, α, symmetric) while :data:`SWITCH` is on.

    Source: :func:`~dpcompose.accounting._rdp.subsampled_renyi` (the module docstring's proof there: the
    removal sum as in Mironov–Talwar–Zhang 2019 Sec. 3.3, the addition lemma; with ``symmetric`` its
    symmetric-base lemma; Zhu–Wang 2019 Thm 6).

    Examples:
        >>> from fractions import Fraction
        >>> value = subsampled_zcdp_at(Fraction(1, 2), Fraction(1, 100), Fraction(10), False)
        >>> round(float(value), 5)  # σ = 1 (ρ = 1/2), q = 0.01 at order 10
        0.03827
    """
    if SWITCH.on():
        return _zcdp_at(rho, q, alpha, symmetric)
    return _zcdp_at.__wrapped__(rho, q, alpha, symmetric)


@functools.lru_cache(maxsize=CACHE_SIZE)
def _zcdp_at(rho: Fraction, q: Fraction, alpha: Fraction, symmetric: bool) -> Fraction:
    (value,) = subsampled_renyi(lambda j: j * rho, q, (alpha,), symmetric=symmetric)
    return value


def sizes() -> int:
    """The number of single-order zCDP values held (a pair's whole curve is cached by
    :meth:`~dpcompose.accounting.PrivacyLoss.renyi` itself)."""
    return _zcdp_at.cache_info().currsize


def clear() -> None:
    """Empty the cache."""
    _zcdp_at.cache_clear()
