"""A long composition read through tilted composites: choose θ and answer δ(ε) and ε(δ)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import numpy.typing as npt

from dpcompose._scipy import brentq
from dpcompose.accounting._pld.concurrency import HELD, Composites, once, speedups_on
from dpcompose.accounting._pld.floats import few_ulps_up
from dpcompose.accounting._pld.fourier import totals
from dpcompose.accounting._pld.lattice import Grid
from dpcompose.accounting._pld.side import Side, least_search
from dpcompose.accounting._pld.tilt import (
    ERROR_SHARE,
    FINE_SHARE,
    LOG_THETA,
    THETA_BITS,
    Tilted,
    TiltedLower,
    dyadic,
    groups,
    tilt,
    tilt_lower,
)

FloatArray = npt.NDArray[np.float64]


_PER_PROCESS = ("composites", "screen")  # (not copied: Recipe.__getstate__)


@dataclass
class Recipe:
    """What a long composition was built from (the children's upper sides and counts), so that δ(ε) and
    ε(δ) can be read from a composite tilted for the question asked.

    Every reading is a function of the composition and the question alone, never of what was read before or
    in another thread. δ(ε) reads the composite of ε's tilt (:meth:`theta_for_epsilon`: of the two tilts on a
    grid of ratio 2**(1/4) around the θ that centres the composite at ε, the one whose mean is nearer ε);
    ε(δ) searches the composite of a grid θ next to the saddle point for δ (:meth:`theta_for_delta`; and of
    the θ of its answer, where that differs), and answers the least point found whose δ, read as
    :meth:`PLD.delta` reads it, is at most δ: so δ(ε(δ)) ≤ δ by construction.
    A composite is keyed by θ alone (its window is cut for the δ the model expects at θ,
    :meth:`expected_delta`), cached by :class:`Composites` (under one process-wide budget, ``CACHE_BYTES``:
    a composite of a long composition takes tens of megabytes; one a reading holds is not evicted; nothing
    is kept with the speed devices off), built once when several threads ask for it at once, and rebuilt
    identically after eviction."""

    get_items: Callable[[], list[tuple[Side, int]]]
    grid: Grid
    get_lower: Callable[[], list[tuple[Side, int]]]
    composites: Composites[Tilted, TiltedLower] = field(default_factory=Composites)
    screen: list[object] = field(default_factory=list)  # [the screening twin, or None] once made
    tilts: dict[float, float] = field(default_factory=dict)  # ε → :meth:`theta_for_epsilon` (a memo)

    @property
    def cache(self) -> dict[tuple[float, float | None], Tilted | None]:
        """The tilted composites of the upper sides kept now, by key."""
        return self.composites.cache

    @property
    def lower_cache(self) -> dict[tuple[float, float | None], TiltedLower | None]:
        """The tilted lumped pairs kept now, by key."""
        return self.composites.lower_cache

    def __getstate__(self) -> dict[str, object]:
        """The state a copy or a pickle carries: not the composites (their lock, the builds in progress, the
        caches) nor the screening twin: a copy starts with empty ones and rebuilds what it reads,
        identically (the readings are pure)."""
        state = dict(self.__dict__)
        for name in _PER_PROCESS:
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self.composites, self.screen = Composites(), []

    def cached_bytes(self) -> int:
        """The bytes of the arrays this recipe's caches hold."""
        return self.composites.cached_bytes()

    @once
    def items(self) -> list[tuple[Side, int]]:
        """The children's upper sides and counts (built on first use)."""
        return self.get_items()

    @once
    def lower_items(self) -> list[tuple[Side, int]]:
        """The children's lower sides and counts (built on first use)."""
        return self.get_lower()

    @once
    def upper_totals(self) -> tuple[float, float, bool]:
        """``totals`` of the upper sides: the composite's mass at +∞, the carried error, no finite mass."""
        return totals(self.items, True)

    @once
    def _model(self) -> list[tuple[FloatArray, FloatArray, int]]:
        """Each side grouped (mass, mean index) by :func:`groups`: only for choosing θ."""
        out = []
        for sd, k in self.items:
            m = np.maximum(sd.masses, 0.0)
            if not np.any(m > 0):
                continue
            starts = groups(m.size, int(np.argmax(m)))
            w = np.add.reduceat(m, starts)
            idx = np.arange(m.size, dtype=np.float64) + sd.offset
            keep = w > 0
            p = np.add.reduceat(m * idx, starts)[keep] / w[keep]
            out.append((p, w[keep], k))
        return out

    def cumulants(self, theta: float) -> tuple[float, float, float]:
        """K(θ), K'(θ), K''(θ) of the composite's finite masses (θ per lattice step; the model's)."""
        big_k = k1 = k2 = 0.0
        for p, w, k in self._model:
            v = np.log(w) + theta * p
            mx = float(np.max(v))
            ex = np.exp(v - mx)
            s = float(np.sum(ex))
            mean = float(np.sum(ex * p)) / s
            var = float(np.sum(ex * (p - mean) ** 2)) / s
            big_k += k * (mx + math.log(s))
            k1 += k * mean
            k2 += k * var
        return big_k, k1, k2

    def _root(self, f: Callable[[float], float]) -> float:
        """The θ (per lattice step) where the decreasing f(θ) crosses 0 on the searched range (an end if
        it does not): Brent's method on log θ, to 1e-10 (θ is then rounded to ``THETA_BITS`` bits)."""
        h = self.grid.h
        lo, hi = LOG_THETA
        if f(math.exp(lo) * h) <= 0:
            return math.exp(lo) * h
        if f(math.exp(hi) * h) >= 0:
            return math.exp(hi) * h
        return math.exp(float(brentq(lambda x: f(math.exp(x) * h), lo, hi, xtol=1e-10))) * h

    def theta_for_delta(self, target: float, inf: float) -> float:
        """A grid θ (:func:`_grid_tilt`) next to the saddle-point θ for ε(target): log δ ≈ K − θK' −
        log(σ√(2π)·θ(1 + θ)) (θ and σ in loss units), the Gaussian approximation of the tilted composite at
        its mean (Alghamdi et al. 2023); capped at the Chernoff θ, which centres the tilted composite at the
        Chernoff estimate min_θ (K(θ) − log δ)/θ ≥ ε(δ) (the Gaussian approximation fails for few atom-heavy
        mechanisms)."""
        h = self.grid.h
        goal = math.log(max(target - inf, target * 1e-3, 1e-300))

        def f(theta: float) -> float:
            big_k, k1, k2 = self.cumulants(theta)
            t = theta / h
            sigma = math.sqrt(max(k2, 1.0)) * h  # (a lattice's density is at most 1/h)
            return big_k - theta * k1 - math.log(sigma * math.sqrt(2 * math.pi) * t * (1 + t)) - goal

        def slope(theta: float) -> float:  # −θ²·(d/dθ)(K(θ) − log δ)/θ, falling with θ (derivative −θK'')
            big_k, k1, _ = self.cumulants(theta)
            return big_k - goal - theta * k1

        # the Chernoff exponent (K(θ) − log δ)/θ is least where its derivative crosses 0
        return self.nearer_tilt(min(self._root(f), self._root(slope)))

    def nearer_tilt(self, raw: float) -> float:
        """Of the two grid tilts (:func:`_grid_tilt`) around ``raw`` (> 0), the one whose tilted mean is
        nearer the mean of ``raw``'s. (Where the mean leaps with θ, as a rare large loss takes over, the
        tilt nearer in θ may centre far from the answer: 10⁵ steps at q = 1e-4, σ = 0.8, the grid tilt
        0.00069 centres at ε = 99, the one below it near the answers to δ = 1e-10, 0.56.)"""
        k = math.floor(4 * math.log2(raw))
        below, above = _grid_tilt(k), _grid_tilt(k + 1)
        mean = self.cumulants(raw)[1]
        near_below = mean - self.cumulants(below)[1] <= self.cumulants(above)[1] - mean
        return below if near_below else above

    def theta_for_epsilon(self, eps: float) -> float:
        """ε's tilt: of the two grid tilts around the θ that centres the tilted composite at ε (K'(θ) = ε/h),
        the one whose tilted mean is nearer ε (:meth:`nearer_tilt`, as :meth:`theta_for_delta` chooses), or 0
        if ε is at or below the untilted mean. δ(ε) read at many ε (a plot) shares a few composites (a memo,
        not kept with the speed devices off)."""
        theta = self.tilts.get(eps) if speedups_on() else None
        if theta is None:
            scaled = self.grid.steps(eps)  # (only chooses θ)
            if self.cumulants(0.0)[1] >= scaled:
                theta = 0.0
            else:
                theta = self.nearer_tilt(self._root(lambda th: scaled - self.cumulants(th)[1]))
            if speedups_on():  # (a function of ε: kept only to spare the root search)
                if len(self.tilts) >= 1024:
                    self.tilts.clear()
                self.tilts[eps] = theta
        return theta

    def expected_delta(self, theta: float) -> float:
        """The least δ the model expects to be read from the composite tilted by θ: at the mean of the tilt
        θ·2**(1/8) (about the top of the ε whose tilt is θ, :meth:`theta_for_epsilon`, where the mean is
        smooth in θ), the saddle-point value e^{K − θK'}/(σ√(2π)·t(1 + t)) that :meth:`theta_for_delta`
        solves for, or the Chernoff value e^{K − θK'} where that is
        smaller (where it caps θ). It only cuts the composite's window (:func:`_fit`), which makes the window
        a function of θ alone."""
        h = self.grid.h
        theta *= 2.0**0.125
        big_k, k1, k2 = self.cumulants(theta)
        t = theta / h
        sigma = math.sqrt(max(k2, 1.0)) * h
        chernoff = big_k - theta * k1
        saddle = chernoff - math.log(sigma * math.sqrt(2 * math.pi) * t * (1 + t))
        return math.exp(min(max(min(chernoff, saddle), -745.0), 0.0))

    def tilted(self, theta: float) -> Tilted | None:
        """The tilted composite at θ (window cut for :meth:`expected_delta`: see :func:`tilt`), cached under
        (θ, that δ)."""
        target = self.expected_delta(theta)
        build = partial(tilt, self.items, theta, self.grid, target)
        return self.composites.upper((theta, target), build)

    def tilted_lower(self, theta: float) -> TiltedLower | None:
        """The tilted lumped pair at θ (window cut as :meth:`tilted`'s), cached."""
        target = self.expected_delta(theta)
        build = partial(tilt_lower, self.lower_items, theta, self.grid, target)
        return self.composites.lower((theta, target), build)

    def poor(self, t: Tilted, eps: float, value: float) -> bool:
        """Whether the untilted side is read beside the tilted composite ``t``, whose certified δ at ε is
        ``value``: where ε lies within a step of the window's bottom (the least ε(δ) may lie below it, where
        ``t`` does not apply), where its error terms exceed ``ERROR_SHARE`` of δ, or ``FINE_SHARE`` of a δ
        above 1e-4 (the untilted side's absolute error is negligible there, and it is cheap to compare)."""
        share = t.error_terms(eps) / value if value > 0 else 0.0
        at_bottom = eps <= (t.offset + 1) * self.grid.h
        return at_bottom or share > ERROR_SHARE or (share > FINE_SHARE and value > 1e-4)

    def delta_up(self, eps: float) -> tuple[float, bool] | None:
        """``(δ, poor)``: the certified δ(ε) of the composite of ε's tilt (:meth:`theta_for_epsilon`) and
        whether the untilted side should be read too (:meth:`poor`); None where no tilted bound applies (ε
        at or below the composite's mean, or tilting does not apply there)."""
        top = sum(k * (sd.offset + sd.masses.size - 1) for sd, k in self.items)  # the largest finite index
        if eps >= top * self.grid.h:  # only the mass at +∞ is above ε (nothing to compose; exact: Grid)
            inf, err_unt, _ = self.upper_totals
            return few_ulps_up(inf + err_unt), False
        theta = self.theta_for_epsilon(eps)
        t = self.tilted(theta) if theta > 0 else None
        with HELD.in_use(t):
            value = t.delta_up(eps) if t is not None else math.inf
            if t is None or not math.isfinite(value):
                return None
            return value, self.poor(t, eps, value)

    def least_up(
        self,
        untilted_up: Callable[[float], float | None],
        target: float,
        certified: Callable[[float], float],
    ) -> float | None:
        """The least float ε found whose δ as :meth:`PLD.delta` reads it (``certified``) is at most
        ``target``; None where no finite ε is certified.

        Candidates: the least ε certified by the composite at a grid θ next to the saddle point for
        ``target`` (:meth:`theta_for_delta`), then by that of its answer's own tilt where it differs (at most
        three composites: atom-heavy compositions, whose answer lies between atoms far from the saddle
        point), and by the untilted side where a tilted answer is poor (:meth:`poor`) or none is confirmed.
        The least candidate that ``certified`` confirms is returned (an answer found on the composite of
        its own tilt always is: ``certified`` reads that composite there); where none is, the answer is
        searched upward from the largest (:func:`_raise_until`)."""
        h = self.grid.h
        found: list[float] = []
        confirmed: set[float] = set()  # answers found on the composite of their own tilt
        tried: list[float] = []
        plain: list[float | None] = []  # the untilted side's answer, once read

        def read_plain() -> None:
            if not plain:
                plain.append(untilted_up(target))
                if plain[0] is not None:
                    found.append(plain[0])

        theta = self.theta_for_delta(target, self.upper_totals[0])
        while theta > 0 and theta not in tried and len(tried) < 3:
            tried.append(theta)
            t = self.tilted(theta)
            with HELD.in_use(t):
                e = self._least_tilted(t, target) if t is not None else None
                if t is None or e is None:
                    break
                found.append(e)
                poor = self.poor(t, e, t.delta_up(e))
            if poor:
                read_plain()
            theta, own = self.theta_for_epsilon(e), theta
            if theta == own:  # (δ read at e reads this composite, certified at most the target: confirmed)
                confirmed.add(e)
        checked: set[float] = set()
        for _ in range(2):  # (the second round with the untilted answer, if it was not read)
            for e in sorted(set(found) - checked):
                checked.add(e)
                if e in confirmed or certified(e) <= target:
                    return e
            read_plain()
        if not found:
            return None
        top = sum(k * (sd.offset + sd.masses.size - 1) for sd, k in self.items) * h
        return _raise_until(certified, max(found), target, top)

    def _least_tilted(self, t: Tilted, target: float) -> float | None:
        """The least float ε whose δ certified by ``t`` is at most ``target`` (None if none is)."""
        e = least_search(target, t.delta_up, t.offset + t.masses.size, partial(t.guess, target), self.grid.h)
        top = t.support_top * self.grid.h  # the largest finite loss (exact: Grid)
        if e is None and t.delta_up(top) <= target:
            e = top  # (δ is only the mass at +∞ there: e.g. δ = 0 without any)
        return e

    def lumped_epsilon(
        self,
        target: float,
        stop: float,
        plain: Callable[[], float | None],
        certifies: Callable[[float], bool],
    ) -> float:
        """The greatest float ε ≤ ``stop`` found whose lower δ as :meth:`PLD.delta_bounds` reads it exceeds
        ``target`` (``certifies``), or 0: the lower end of ε(δ), so that δ's lower end at it stays above δ.

        Candidates, as in :meth:`least_up`: the answers of the tilted lumped pairs at the saddle point's grid
        θ and at their answers' own tilts (:meth:`_lumped_search`), and the untilted lower side's
        (``plain``) where the tilted answer is far below ``stop`` (the upper end) or none is confirmed; the
        greatest confirmed one, else the answer is searched downward from the least (:func:`_lower_until`)."""
        found: list[float] = []
        confirmed: set[float] = set()  # answers found on the composite of their own tilt
        tried: list[float] = []
        theta = self.theta_for_delta(target, self.upper_totals[0])
        while theta > 0 and theta not in tried and len(tried) < 3:
            tried.append(theta)
            t = self.tilted_lower(theta)
            with HELD.in_use(t):
                y = self._lumped_search(t, target, stop) if t is not None else None
            if y is None:
                break
            found.append(y)
            theta, own = self.theta_for_epsilon(y), theta
            if theta == own:  # (δ's lower end at y reads this composite, certified above the target)
                confirmed.add(y)
        plain_read = False

        def read_plain() -> None:
            nonlocal plain_read
            if not plain_read:
                plain_read = True
                y = plain()
                if y is not None:
                    found.append(y)

        if not found or max(found) < stop * (1 - ERROR_SHARE):
            read_plain()
        checked: set[float] = set()
        for _ in range(2):  # (the second round with the untilted answer, if it was not read)
            for y in sorted(set(found) - checked, reverse=True):
                checked.add(y)
                if y in confirmed or certifies(y):
                    return y
            read_plain()
        return _lower_until(certifies, min(found)) if found else 0.0

    def _lumped_search(self, t: TiltedLower, target: float, stop: float) -> float | None:
        """The greatest float ε ≤ ``stop`` found whose lower δ certified by ``t`` exceeds ``target``, or None:
        searched down from ``stop`` (the upper end, which the answer is close to) by secant steps, or by
        growing steps and bisection (to ~1e-12 relative) if those find none."""
        # secant steps toward δ_lo = target·(1 + 1e-9) (δ_lo is smooth and falls with ε), keeping the
        # greatest point certified above the target; growing steps and bisection if they find none
        f0 = t.delta_lo(stop) - target
        if f0 > 0:
            return stop
        x0, x1 = stop, stop - max(stop, 1.0) * 1e-8
        f1 = t.delta_lo(x1) - target
        best = x1 if f1 > 0 else None
        misses = [stop] if f1 > 0 else [stop, x1]  # points whose certified lower δ is not above the target
        aim = target * 1e-9
        converged = False
        for _ in range(12):
            if best is not None and 0 < f1 <= 100 * aim:
                converged = True
                break
            if f1 == f0:
                break
            x2 = min(max(x1 + (aim - f1) * (x1 - x0) / (f1 - f0), 0.0), stop)
            f2 = t.delta_lo(x2) - target
            if f2 > 0 and (best is None or x2 > best):
                best = x2
            elif f2 <= 0:
                misses.append(x2)
            x0, f0, x1, f1 = x1, f1, x2, f2

        def refine(ok: float, bad: float) -> float:
            """Bisect between a point certified above the target and a greater one not (~1e-12 relative)."""
            while bad - ok > max(ok, 1.0) * 1e-12:
                mid = (ok + bad) / 2
                if t.delta_lo(mid) > target:
                    ok = mid
                else:
                    bad = mid
            return ok

        if best is not None:
            # without convergence, bisect between the best point and the least failed point above it
            # (secant steps can oscillate after one clamped at 0 certifies there; returning that 0 would
            # miss an answer such as 0.02675)
            return best if converged else refine(best, min(x for x in misses if x > best))
        x = stop
        failed, step = x, max(stop, 1.0) * 1e-10
        while True:
            x = max(0.0, stop - step)
            if t.delta_lo(x) > target:
                break
            if x == 0.0:
                return None
            failed, step = x, step * 8
        return refine(x, failed)

    def delta_lo(self, eps: float) -> float | None:
        """The certified lower δ(ε) of the tilted lumped pair of ε's tilt (:meth:`theta_for_epsilon`), or None
        where none applies."""
        theta = self.theta_for_epsilon(eps)
        t = self.tilted_lower(theta) if theta > 0 else None
        with HELD.in_use(t):
            return None if t is None else t.delta_lo(eps)


def _grid_tilt(k: int) -> float:
    """The grid tilt 2**(k/4), rounded to ``THETA_BITS`` significant bits."""
    return dyadic(2.0 ** (k / 4), THETA_BITS)


def _raise_until(
    certified: Callable[[float], float], start: float, target: float, top: float
) -> float | None:
    """The least float ε found at or above ``start`` with ``certified(ε)`` ≤ ``target`` (growing steps, then
    bisection to ~1e-12 relative; ``certified`` need not fall monotonically: every answer is checked), or
    None where even ``top`` (the largest finite loss, above which δ is only the mass at +∞) is not."""
    if certified(start) <= target:
        return start
    if certified(top) > target:
        return None
    lo, step = start, max(abs(start), 1.0) * 2.0**-40
    x = start
    while x < top:
        x = min(x + step, top)
        if certified(x) <= target:
            break
        lo, step = x, step * 4
    hi = x
    while hi - lo > max(abs(lo), 1.0) * 1e-12:
        mid = (lo + hi) / 2
        if certified(mid) <= target:
            hi = mid
        else:
            lo = mid
    return hi


def _lower_until(certifies: Callable[[float], bool], start: float) -> float:
    """The greatest float ε found in [0, ``start``] that ``certifies`` (growing steps down, then bisection to
    ~1e-12 relative), or 0 (ε ≥ 0 is always a valid lower end)."""
    if start <= 0:
        return 0.0
    failed, step = start, max(start, 1.0) * 2.0**-40
    x = start
    while True:
        if certifies(x):
            break
        if x == 0.0:
            return 0.0
        failed, x, step = x, max(0.0, x - step), step * 4
    while failed - x > max(x, 1.0) * 1e-12:
        mid = (x + failed) / 2
        if certifies(mid):
            x = mid
        else:
            failed = mid
    return x
