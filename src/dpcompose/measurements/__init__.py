"""Primitive measurements: noise mechanisms, selection and randomized response."""

from __future__ import annotations

from dpcompose.measurements._counter import make_online_counter
from dpcompose.measurements._discrete import make_discrete_gaussian, make_discrete_laplace
from dpcompose.measurements._exponential import make_exponential_mechanism
from dpcompose.measurements._gaussian import make_gaussian
from dpcompose.measurements._interactive import make_interactive_laplace, make_sparse_vector
from dpcompose.measurements._laplace import make_laplace
from dpcompose.measurements._matrix_counter import make_matrix_counter
from dpcompose.measurements._noisy_max import make_noisy_top_k, make_report_noisy_max
from dpcompose.measurements._quantile import make_private_quantile
from dpcompose.measurements._randomized_response import (
    make_randomized_response,
    make_randomized_response_approx,
)
from dpcompose.measurements._scale_for import scale_for
from dpcompose.measurements._threshold import (
    make_gaussian_threshold,
    make_laplace_threshold,
    partition_threshold,
)

__all__ = [
    "make_discrete_gaussian",
    "make_discrete_laplace",
    "make_exponential_mechanism",
    "make_gaussian",
    "make_gaussian_threshold",
    "make_interactive_laplace",
    "make_laplace",
    "make_laplace_threshold",
    "make_matrix_counter",
    "make_noisy_top_k",
    "make_online_counter",
    "make_private_quantile",
    "make_randomized_response",
    "make_randomized_response_approx",
    "make_report_noisy_max",
    "make_sparse_vector",
    "partition_threshold",
    "scale_for",
]
