"""Lazy two-order builds of subsampled PLDs and their thin twins."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from dpcompose.accounting._pld.concurrency import speedups_on
from dpcompose.accounting._pld.distribution import (
    PLD,
    built_on_first_use,
    from_constructor,
    pair_of,
    pld_of_atoms,
)
from dpcompose.accounting._pld.subsample.cells import Cells, Sampling, check_cells, order, symmetric

FloatArray = npt.NDArray[np.float64]


THIN_SHARE = 3e-5  # lattice losses are skipped only where the P-mass beyond is below this (see thin_cuts)


_THIN_WIDEST = 2.0**-10  # the widest bucket, in loss


THIN_CORE = 4  # the lattice steps next to loss 0 (on either side) are always kept


def thin_cuts(lams: FloatArray, bits: int, up_at: Callable[[float], float]) -> npt.NDArray[np.bool_]:
    """Which of the lattice losses ``lams`` (consecutive, ascending) to cut a continuous pair's outputs at:
    all of them where the mass lies, every 2**k-th one in the upper tail.

    ``up_at(t)`` is a loss beyond which the P-mass of either order (and of the without-replacement pair) is
    at most about t (an estimate). Beyond the loss of P-mass t_k = ``THIN_SHARE``·16^{1−k} only the
    multiples of 2**k steps are kept (k = 1, 2, …, up to buckets ``_THIN_WIDEST`` wide), so a bucket of
    width w = 2**k·h holds at most t_k and the wide buckets together carry Σₖ t_k·w² ≤ 6·``THIN_SHARE``·h²
    of the split's second-order spread, against about h²/8 from the mass at one step. What is skipped only
    changes the tightness: every wide bucket is split between its own two ends
    (``build_pld``), which dominates for any width. Negative losses are all
    kept: the loss ln(1 − q + q·e^y) crowds into a few lattice steps above ln(1 − q) as y → −∞, so a wide
    bucket there would hold much of the add order's upper tail (found in the tests: one step's add order
    read 1.3e-3 looser at δ = 1e-10, q = 0.01), and at a small rate there are few of them anyway. The first
    and last loss and those within ``THIN_CORE`` steps of 0 are always kept (the buckets around 0 are one
    step wide, as the lumped lower side and the without-replacement atom at 0 expect).
    """
    n = lams.size
    keep = np.ones(n, dtype=np.bool_)
    levels = thin_levels(bits)
    if levels == 0 or n <= 2:
        return keep
    ups = np.array([up_at(THIN_SHARE * 16.0 ** (1 - k)) for k in range(1, levels + 1)])
    ups = np.sort(np.nan_to_num(ups, nan=np.inf))  # (a NaN estimate counts as no threshold)
    # A loss λ > 0 at or above k of the thresholds keeps only the multiples of 2**k steps. The losses are
    # consecutive lattice points (j0 + i)·h, so the level-k losses are one index range, and its multiples
    # of 2**k a strided slice of it (rather than a level, an index and a remainder per loss).
    j0 = int(np.rint(np.ldexp(lams[0], bits)))  # (exact: lattice points)
    assert np.ldexp(lams[-1], bits) == j0 + n - 1, "_thin reads consecutive lattice losses"
    positive = int(np.searchsorted(lams, 0.0, side="right"))
    ends = [max(int(np.searchsorted(lams, u, side="left")), positive) for u in ups] + [n]
    for k in range(1, levels + 1):
        a, b = ends[k - 1], ends[k]
        if a < b:
            step = 1 << k
            keep[a:b] = False
            keep[a + (-(j0 + a)) % step : b : step] = True
    keep[max(0, -THIN_CORE - j0) : max(0, THIN_CORE - j0 + 1)] = True  # |j| ≤ THIN_CORE
    keep[0] = keep[-1] = True
    return keep


def thin_levels(bits: int) -> int:
    """The k of :func:`thin_cuts`'s widest buckets, 2**k steps, at most ``_THIN_WIDEST`` (and 30)."""
    levels = 0
    while levels < 30 and math.ldexp(1.0, levels + 1 - bits) <= _THIN_WIDEST:
        levels += 1
    return levels


def has_thin(bits: int) -> bool:
    """Whether :func:`thin_cuts` can skip any lattice loss at this lattice (its widest bucket,
    ``_THIN_WIDEST``, is at least two steps): below, a thin twin would be the full PLD built twice."""
    return thin_levels(bits) > 0


class Build:
    """Builds a subsampled pair's PLD on first use from its cells (``cells(*args)``, a module-level function,
    computed once): the first order (Poisson: "remove") or the symmetric pair (without replacement) when
    called, the reverse ("add") order by :meth:`reverse`, each once, under a lock of its own (the reverse
    order waits only for the cells), whichever thread asks first. A class, not a closure, so that a PLD
    built on first use can still be pickled (closures would make ``pld_subsampled_gaussian``'s results
    unpicklable)."""

    def __init__(
        self,
        cells: Callable[..., Cells],
        args: tuple[object, ...],
        bits: int,
        tail: float,
        sampling: Sampling,
        name: str,
    ) -> None:
        self.cells, self.args = cells, args
        self.bits, self.tail, self.sampling, self.name = bits, tail, sampling, name
        self.built: PLD | None = None
        self.reverse_built: PLD | None = None
        self._cells: Cells | None = None  # (kept until both orders are built)
        self._make_locks()

    def _make_locks(self) -> None:
        self._cells_lock = threading.Lock()
        self._lock = threading.Lock()
        self._rev_lock = threading.Lock()

    def _get_cells(self) -> Cells:
        with self._cells_lock:
            if self._cells is None:
                cells = self.cells(*self.args)
                check_cells(cells, self.bits)
                self._cells = cells
            return self._cells

    def _done(self) -> None:
        """Drop the cells once nothing more is built from them."""
        with self._cells_lock:
            if self.built is not None and (self.reverse_built is not None or self.sampling != "poisson"):
                self._cells = None

    def __call__(self) -> PLD:
        with self._lock:
            if self.built is None:
                cells = self._get_cells()
                if self.sampling == "poisson":
                    self.built = order(cells, self.bits, self.tail, "remove", self.name, self.sampling)
                else:
                    self.built = symmetric(cells, self.bits, self.tail, self.name, self.sampling)
                self._done()
            return self.built

    def reverse(self) -> PLD:
        """The reverse ("add") order of the Poisson-subsampled pair."""
        with self._rev_lock:
            if self.reverse_built is None:
                cells = self._get_cells()
                self.reverse_built = order(cells, self.bits, self.tail, "add", self.name, self.sampling)
                self._done()
            return self.reverse_built

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        for lock in ("_cells_lock", "_lock", "_rev_lock"):
            del state[lock]  # (a lock cannot be pickled; fresh ones are made on loading)
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._make_locks()


class _ReverseOf:
    """The reverse order of the PLD a :class:`Build` builds (picklable, as it is)."""

    def __init__(self, build: Build) -> None:
        self.build = build

    def __call__(self) -> PLD:
        return self.build.reverse()


def lazy_pld(build: Build, key: object, thin: PLD | None = None) -> PLD:
    """The PLD ``build`` returns, built on first use: its sides and, for Poisson sampling, its reverse
    order's (each order built when first read). ``key`` stands for its contents
    (:func:`~dpcompose.accounting._pld.distribution.content_key`); ``thin`` is its thin version
    (:attr:`PLD.thin`). With the speed devices off
    (:func:`~dpcompose.accounting._pld.concurrency.speedups`), both orders are built here, one after the
    other (their lower sides are still built where read)."""
    bits, tail, name, sampling = build.bits, build.tail, build.name, build.sampling
    if not speedups_on():
        build()
        if sampling == "poisson":
            build.reverse()
    p = built_on_first_use(bits, build, tail, name, sampling)
    if sampling == "poisson":
        p = pair_of(p, built_on_first_use(bits, _ReverseOf(build), tail, name + " add", sampling))
    return from_constructor(p, key, thin)


def identity(bits: int, tail: float, name: str) -> PLD:
    """The PLD of a pair of equal distributions (every loss 0, δ(ε) = 0)."""
    return pld_of_atoms(bits, [(Fraction(0), 1.0, 0.0)], 0.0, 0.0, tail, name)
