"""The inference step of marginal-based synthesisers: a distribution fitted to noisy marginals.

Post-processing only: everything here reads released noisy marginals and public parameters, never data.

The model is the maximum-entropy family of Private-PGM (McKenna–Sheldon–Miklau 2019): the joint
distribution ``p ∝ exp(Σ_C θ_C)`` with one log-potential table per measured clique ``C``. It is stored as
the dense joint table (``p`` over the product of all columns' categories, at most :data:`MAX_MODEL_CELLS`
cells), which makes every marginal an exact sum; the potentials are fitted to the Gaussian-likelihood loss
``L(p) = Σᵢ ‖n·Mᵢp − yᵢ‖² / (2σᵢ²)`` by L-BFGS (:func:`fit_model`). Private-PGM itself uses a junction
tree, which scales to large domains; the dense table is the small-domain version of the same model.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dpcompose.errors import InvalidParameter

__all__ = ["MAX_MODEL_CELLS", "MarginalModel", "NoisyMarginal", "fit_model"]

FloatArray = npt.NDArray[np.float64]
Clique = tuple[Hashable, ...]

MAX_MODEL_CELLS = 1 << 22
"""The dense joint table's largest size (4,194,304 cells, 32 MiB of float64)."""


@dataclass(frozen=True)
class NoisyMarginal:
    """One released marginal: the clique's noisy cell counts (shaped by its columns' categories) and the
    standard deviation of the noise added to each cell."""

    clique: Clique
    values: FloatArray
    stddev: float


class MarginalModel:
    """A distribution over the product of the columns' categories, scaled to ``total`` records.

    Args:
        columns: the column keys, in order.
        categories: each column's declared categories.
        log_p: the joint log-probabilities (normalised), of shape ``(len(categories[c]) for c in columns)``.
        total: the number of records the model stands for.
        measurements: the noisy marginals it was fitted to.
        potentials: the log-potential table of each largest measured clique (keyed by axis positions):
            ``log_p`` is their broadcast sum, normalised (a warm start for the next fit).
    """

    def __init__(
        self,
        columns: Sequence[Hashable],
        categories: Mapping[Hashable, Sequence[Any]],
        log_p: FloatArray,
        total: float,
        measurements: Sequence[NoisyMarginal] = (),
        potentials: Mapping[tuple[int, ...], FloatArray] | None = None,
    ) -> None:
        self.columns: tuple[Hashable, ...] = tuple(columns)
        self.categories = {c: tuple(categories[c]) for c in self.columns}
        self.shape = tuple(len(self.categories[c]) for c in self.columns)
        self.log_p = log_p
        self.p: FloatArray = np.exp(log_p)
        """The joint probabilities (summing to 1)."""
        self.total = float(total)
        self.measurements: tuple[NoisyMarginal, ...] = tuple(measurements)
        self.potentials: dict[tuple[int, ...], FloatArray] = dict(potentials or {})
        self._axis = {c: i for i, c in enumerate(self.columns)}

    def named(
        self, columns: Sequence[Hashable], categories: Mapping[Hashable, Sequence[Any]]
    ) -> MarginalModel:
        """This model (fitted over column positions 0 … d−1) over the keys ``columns`` with their
        ``categories``: the same probabilities and total, each measured clique's positions named."""
        name_of: dict[Hashable, Hashable] = dict(enumerate(columns))
        named = [
            NoisyMarginal(tuple(name_of[j] for j in m.clique), m.values, m.stddev) for m in self.measurements
        ]
        return MarginalModel(columns, categories, self.log_p, self.total, named)

    @classmethod
    def uniform(
        cls, columns: Sequence[Hashable], categories: Mapping[Hashable, Sequence[Any]], total: float
    ) -> MarginalModel:
        """The uniform distribution over the columns' categories."""
        shape = tuple(len(categories[c]) for c in columns)
        cells = math.prod(shape)
        if cells > MAX_MODEL_CELLS:
            raise InvalidParameter(
                f"categories: the columns' categories make a joint table of {cells} cells; the dense model "
                f"holds at most {MAX_MODEL_CELLS} (2**22): merge categories or drop columns"
            )
        return cls(columns, categories, np.full(shape, -math.log(cells)), total)

    def project(self, clique: Sequence[Hashable]) -> FloatArray:
        """The model's marginal over ``clique`` (expected counts, axes in the clique's order)."""
        return self.total * _marginal(self.p, [self._axis[c] for c in clique])

    def synthesize(
        self, n: int | None = None, *, rng: np.random.Generator | None = None
    ) -> list[dict[Hashable, Any]]:
        """``n`` synthetic records (default: the model's total, rounded), drawn from the model.

        Args:
            n: how many records.
            rng: the generator to draw with (default a fresh ``np.random.default_rng()``).
        """
        size = max(0, round(self.total)) if n is None else n
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise InvalidParameter(f"n={n!r} must be a non-negative int")
        gen = rng if rng is not None else np.random.default_rng()
        p = self.p.reshape(-1)
        cells = gen.choice(p.size, size=size, p=p / p.sum())
        codes = np.unravel_index(cells, self.shape)
        cats = [self.categories[c] for c in self.columns]
        columns = [[cat[i] for i in code.tolist()] for cat, code in zip(cats, codes, strict=True)]
        return [dict(zip(self.columns, row, strict=True)) for row in zip(*columns, strict=True)]


def _reduce(table: FloatArray, table_axes: Sequence[int], keep: Sequence[int]) -> FloatArray:
    """``table`` (its axes are the joint's axes ``table_axes``) summed over every axis not in ``keep``, with
    the kept axes in the order of ``keep``."""
    others = tuple(i for i, a in enumerate(table_axes) if a not in keep)
    reduced = table.sum(axis=others) if others else table
    remaining = [a for a in table_axes if a in keep]
    return np.transpose(reduced, [remaining.index(a) for a in keep])


def _expand(small: FloatArray, small_axes: Sequence[int], big_axes: Sequence[int]) -> FloatArray:
    """``small`` (axes ``small_axes``) as an array broadcastable over a table with the axes ``big_axes``."""
    order = [a for a in big_axes if a in small_axes]
    ordered = np.transpose(small, [list(small_axes).index(a) for a in order])
    return ordered.reshape([ordered.shape[order.index(a)] if a in order else 1 for a in big_axes])


def _marginal(p: FloatArray, axes: Sequence[int]) -> FloatArray:
    """The joint ``p``'s marginal over ``axes`` (in that order): runs of summed-out axes are merged into
    one axis by a reshape (no copy), then summed from the last (contiguous) one."""
    kept = sorted(axes)
    dims: list[int] = []
    summed: list[int] = []
    run = 1
    for a, n in enumerate(p.shape):
        if a in kept:
            if run > 1:
                summed.append(len(dims))
                dims.append(run)
                run = 1
            dims.append(n)
        else:
            run *= n
    if run > 1:
        summed.append(len(dims))
        dims.append(run)
    table = p.reshape(dims)
    for axis in reversed(summed):
        table = table.sum(axis=axis)
    return np.transpose(table, [kept.index(a) for a in axes])


def lbfgs(
    f: Callable[[FloatArray], tuple[float, FloatArray]],
    x: FloatArray,
    iterations: int,
    tolerance: float,
    memory: int = 10,
) -> FloatArray:
    """Minimise a smooth ``f`` (returning its value and gradient) from ``x`` by L-BFGS with a backtracking
    (Armijo) line search; stop after ``iterations`` steps, or when a step improves ``f`` by less than
    ``tolerance`` times its value.

    Source: Liu–Nocedal 1989; Nocedal–Wright 2006 Alg. 7.4 (the two-loop recursion) and Alg. 3.1.
    """
    value, grad = f(x)
    history: list[tuple[FloatArray, FloatArray, float]] = []
    for _ in range(iterations):
        q = grad.copy()
        alphas = []
        for s_k, y_k, rho_k in reversed(history):
            a = rho_k * float(s_k @ q)
            alphas.append(a)
            q -= a * y_k
        if history:
            s_k, y_k, _ = history[-1]
            q *= float(s_k @ y_k) / float(y_k @ y_k)
        else:
            q *= 1.0 / max(float(np.abs(grad).max()), 1e-300)
        for (s_k, y_k, rho_k), a in zip(history, reversed(alphas), strict=True):
            q += (a - rho_k * float(y_k @ q)) * s_k
        direction = -q
        slope = float(grad @ direction)
        if slope >= 0:  # not a descent direction: restart from the gradient
            history.clear()
            direction = -grad / max(float(np.abs(grad).max()), 1e-300)
            slope = float(grad @ direction)
        if slope == 0:
            break
        step = 1.0
        while True:
            candidate = x + step * direction
            new_value, new_grad = f(candidate)
            if new_value <= value + 1e-4 * step * slope or step < 1e-20:
                break
            step /= 2
        s_new, y_new = candidate - x, new_grad - grad
        curvature = float(s_new @ y_new)
        if curvature > 1e-12 * float(np.sqrt((s_new @ s_new) * (y_new @ y_new))):
            history.append((s_new, y_new, 1.0 / curvature))
            if len(history) > memory:
                history.pop(0)
        improved = value - new_value
        x, value, grad = candidate, new_value, new_grad
        if improved <= tolerance * max(abs(value), 1e-300):
            break
    return x


def fit_model(
    model: MarginalModel,
    measured: Sequence[NoisyMarginal],
    *,
    iterations: int = 100,
    tolerance: float = 1e-7,
) -> MarginalModel:
    """The model fitted to the noisy marginals, warm-started at ``model``'s potentials.

    The model is ``p ∝ exp(Σ_T φ_T)`` with one log-potential table ``φ_T`` per largest measured clique
    ``T`` (a clique inside another adds no freedom); the potentials minimise the Gaussian-likelihood loss
    ``L = Σᵢ ‖n·Mᵢp − yᵢ‖² / (2σᵢ²)`` by L-BFGS (the gradient in ``φ_T`` is the ``T``-marginal of
    ``p·(G − E_p[G])`` with ``G = ∇_p L``). The total ``n`` is the inverse-variance-weighted mean of the
    measurements' noisy sums (at least 1).

    Args:
        model: the starting point (its columns and categories are the model's).
        measured: the noisy marginals.
        iterations: the most L-BFGS iterations.
        tolerance: stop when an iteration improves the loss by less than this fraction.

    Source: McKenna–Sheldon–Miklau 2019 (Private-PGM: the graphical model over the measured cliques, fitted
    to noisy marginals by the Gaussian likelihood); Liu–Nocedal 1989 (L-BFGS). Post-processing: no privacy
    cost (Dwork–Roth 2014 Prop. 2.1).
    """
    if not measured:
        return model
    ndim = model.log_p.ndim
    # one target per clique: the precision-weighted mean of its measurements (the loss changes by a constant)
    grouped: dict[tuple[int, ...], tuple[FloatArray, float]] = {}
    for m in measured:
        ax = tuple(model.columns.index(c) for c in m.clique)
        w = 1.0 / max(m.stddev, 1e-12) ** 2
        y = np.asarray(m.values, dtype=np.float64)
        if ax in grouped:
            y0, w0 = grouped[ax]
            grouped[ax] = ((y0 * w0 + y * w) / (w0 + w), w0 + w)
        else:
            grouped[ax] = (y, w)
    total = max(
        1.0, sum(float(np.sum(y)) * w for y, w in grouped.values()) / sum(w for _, w in grouped.values())
    )
    # each clique is read from (and pushes its gradient through) a largest measured clique containing it,
    # which also holds the only potential: one pass over the joint per largest clique
    cliques = list(grouped)
    tops = [c for c in cliques if not any(set(c) < set(o) for o in cliques)]
    home = {c: next(t for t in tops if set(c) <= set(t)) for c in cliques}
    shapes = [tuple(model.shape[a] for a in top) for top in tops]
    sizes = [math.prod(shape) for shape in shapes]
    start = [np.zeros(shape) for shape in shapes]
    for axes, table in model.potentials.items():  # warm start: each old potential folded into its top
        where = next((i for i, t in enumerate(tops) if set(axes) <= set(t)), None)
        if where is not None:
            start[where] = start[where] + _expand(table, axes, tops[where])

    def unpack(x: FloatArray) -> list[FloatArray]:
        out, at = [], 0
        for shape, size in zip(shapes, sizes, strict=True):
            out.append(x[at : at + size].reshape(shape))
            at += size
        return out

    def log_joint(phis: list[FloatArray]) -> FloatArray:
        theta = np.zeros(model.shape)
        for top, phi in zip(tops, phis, strict=True):
            theta += _expand(phi, top, range(ndim))
        peak = float(np.max(theta))
        return theta - (peak + math.log(float(np.sum(np.exp(theta - peak)))))

    def loss_and_grad(x: FloatArray) -> tuple[float, FloatArray]:
        p = np.exp(log_joint(unpack(x)))
        loss = 0.0
        big = np.zeros(model.shape)
        marginals = []
        for top in tops:
            mu = _marginal(p, top)
            marginals.append(mu)
            g = np.zeros_like(mu)
            for c in cliques:
                if home[c] == top:
                    y, w = grouped[c]
                    diff = total * _reduce(mu, top, c) - y
                    loss += 0.5 * w * float(np.sum(diff * diff))
                    g = g + _expand(w * total * diff, c, top)
            big += _expand(g, top, range(ndim))
        weighted = p * big
        mean = float(np.sum(weighted))
        grads = [_marginal(weighted, top) - mean * mu for top, mu in zip(tops, marginals, strict=True)]
        return loss, np.concatenate([g.reshape(-1) for g in grads])

    x = lbfgs(loss_and_grad, np.concatenate([s.reshape(-1) for s in start]), iterations, tolerance)
    phis = unpack(x)
    potentials = dict(zip(tops, phis, strict=True))
    log_p = log_joint(phis)
    return MarginalModel(model.columns, model.categories, log_p, total, measured, potentials)
