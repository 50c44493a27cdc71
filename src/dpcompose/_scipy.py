"""SciPy, imported on first use, so that ``import dpcompose`` stays fast.

``scipy.optimize``, ``scipy.special`` and ``scipy.stats`` together take about half a second to import and
are needed only by some accounting functions (root finding, log-Φ) and analysis tools (LP, audits);
``scipy.linalg`` (0.2 s) only by the SSCP's block products. Each wrapper here imports its SciPy module
when first called; Python caches the module after that.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["beta_ppf", "blas_dgemm", "brentq", "expit", "linprog", "log_ndtr", "minimize_scalar"]


def _attr(module: str, name: str) -> Any:
    return getattr(importlib.import_module(module), name)


def brentq(f: Callable[[float], float], a: float, b: float, **kwargs: Any) -> Any:
    """:func:`scipy.optimize.brentq`."""
    return _attr("scipy.optimize", "brentq")(f, a, b, **kwargs)


def minimize_scalar(f: Callable[[float], float], **kwargs: Any) -> Any:
    """:func:`scipy.optimize.minimize_scalar`."""
    return _attr("scipy.optimize", "minimize_scalar")(f, **kwargs)


def linprog(**kwargs: Any) -> Any:
    """:func:`scipy.optimize.linprog`."""
    return _attr("scipy.optimize", "linprog")(**kwargs)


def expit(x: Any) -> Any:
    """:func:`scipy.special.expit`, the logistic function."""
    return _attr("scipy.special", "expit")(x)


def log_ndtr(x: Any) -> Any:
    """:func:`scipy.special.log_ndtr`, log of the standard normal CDF."""
    return _attr("scipy.special", "log_ndtr")(x)


def beta_ppf(q: float, a: float, b: float) -> float:
    """The quantile function of the Beta(a, b) distribution (:data:`scipy.stats.beta`)."""
    return float(_attr("scipy.stats", "beta").ppf(q, a, b))


def blas_dgemm() -> Callable[..., Any]:
    """:func:`scipy.linalg.blas.dgemm` itself, BLAS's general matrix product (``alpha·op(a)·op(b)``), for a
    caller that makes many small products (one lookup, not one per product)."""
    dgemm: Callable[..., Any] = _attr("scipy.linalg.blas", "dgemm")
    return dgemm
