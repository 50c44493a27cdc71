"""The inference step of marginal-based synthesisers: a distribution fitted to noisy marginals.

Post-processing only: everything here reads released noisy marginals and public parameters, never data.

The model is the maximum-entropy family of Private-PGM (McKenna–Sheldon–Miklau 2019): the joint
distribution ``p ∝ exp(Σ_C θ_C)`` with one log-potential table per measured clique ``C``. It is stored as
the dense joint table (``p`` over the product of all columns' categories, at most :data:`MAX_MODEL_CELLS`
cells), which makes every marginal an exact sum, and is fitted by entropic mirror descent on the
Gaussian-likelihood loss ``L(p) = Σᵢ ‖n·Mᵢp − yᵢ‖² / (2σᵢ²)``: ``log p ← log p − η·∇L(p)``, renormalised.
Each gradient is a sum of the measured cliques' tables broadcast back over the joint, so the iterates stay
in the product-of-cliques family (McKenna et al. 2019 §4: mirror descent on the marginal polytope).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
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
    """

    def __init__(
        self,
        columns: Sequence[Hashable],
        categories: Mapping[Hashable, Sequence[Any]],
        log_p: FloatArray,
        total: float,
        measurements: Sequence[NoisyMarginal] = (),
    ) -> None:
        self.columns: tuple[Hashable, ...] = tuple(columns)
        self.categories = {c: tuple(categories[c]) for c in self.columns}
        self.shape = tuple(len(self.categories[c]) for c in self.columns)
        self.log_p = log_p
        self.total = float(total)
        self.measurements: tuple[NoisyMarginal, ...] = tuple(measurements)
        self._axis = {c: i for i, c in enumerate(self.columns)}

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

    def probabilities(self) -> FloatArray:
        """The joint probabilities (summing to 1)."""
        return np.exp(self.log_p)

    def project(self, clique: Sequence[Hashable]) -> FloatArray:
        """The model's marginal over ``clique`` (expected counts, axes in the clique's order)."""
        return self.total * _marginal(self.probabilities(), [self._axis[c] for c in clique])

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
        p = self.probabilities().reshape(-1)
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


def fit_model(
    model: MarginalModel,
    measured: Sequence[NoisyMarginal],
    *,
    iterations: int = 500,
    tolerance: float = 1e-7,
) -> MarginalModel:
    """The model fitted to the noisy marginals by entropic mirror descent, warm-started at ``model``.

    The total is the inverse-variance-weighted mean of the measurements' noisy sums (at least 1). The step
    size starts at ``1/Σᵢ(n/σᵢ)²`` (the loss is that smooth in L1: the iteration never increases it) and is
    doubled after each accepted step and halved until the loss does not increase (Armijo backtracking).

    Args:
        model: the starting point (its columns and categories are the model's).
        measured: the noisy marginals.
        iterations: the most mirror-descent steps.
        tolerance: stop when a step improves the loss by less than this fraction.

    Source: McKenna–Sheldon–Miklau 2019 (Private-PGM, §4: mirror descent over the marginal polytope);
    Beck–Teboulle 2003 (entropic mirror descent). Post-processing: no privacy cost (Dwork–Roth 2014 Prop.
    2.1).
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
    # each clique is read from (and pushes its gradient through) a largest measured clique containing it:
    # one pass over the joint per largest clique
    cliques = list(grouped)
    tops = [c for c in cliques if not any(set(c) < set(o) for o in cliques)]
    home = {c: next(t for t in tops if set(c) <= set(t)) for c in cliques}

    def loss_and_grad(log_p: FloatArray) -> tuple[float, FloatArray]:
        p = np.exp(log_p)
        loss = 0.0
        grad = np.zeros_like(p)
        for top in tops:
            mu = total * _marginal(p, top)
            g = np.zeros_like(mu)
            for c in cliques:
                if home[c] != top:
                    continue
                y, w = grouped[c]
                diff = _reduce(mu, top, c) - y
                loss += 0.5 * w * float(np.sum(diff * diff))
                g = g + _expand(w * total * diff, c, top)
            grad += _expand(g, top, range(ndim))
        return loss, grad

    def normalise(log_p: FloatArray) -> FloatArray:
        top = float(np.max(log_p))
        return log_p - (top + math.log(float(np.sum(np.exp(log_p - top)))))

    log_p = model.log_p
    step = 1.0 / sum(total * total * w for _, w in grouped.values())
    loss, grad = loss_and_grad(log_p)
    for _ in range(iterations):
        while True:
            candidate = normalise(log_p - step * grad)
            new_loss, new_grad = loss_and_grad(candidate)
            if new_loss <= loss or step < 1e-300:
                break
            step /= 2
        improved = loss - new_loss
        log_p, loss, grad = candidate, new_loss, new_grad
        step *= 2
        if improved <= tolerance * max(loss, 1e-300):
            break
    return MarginalModel(model.columns, model.categories, log_p, total, measured)
