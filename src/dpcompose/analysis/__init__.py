"""Analysis: explanation of privacy costs, parameter search, verification and auditing."""

from __future__ import annotations

from dpcompose.analysis._audit import AuditResult, audit, clopper_pearson
from dpcompose.analysis._curve import plot_profile, privacy_curve
from dpcompose.analysis._explain import Explanation, ExplanationRow, explain
from dpcompose.analysis._finite import (
    ConcurrentComparison,
    FiniteInteractiveMechanism,
    adversary_count,
    compare_concurrent,
    concurrent_composition,
    deterministic_adversaries,
    exp_privacy_loss,
    privacy_loss,
    randomized_response,
    tightest_exp_epsilon,
)
from dpcompose.analysis._lp import RR_OUTPUTS, LPSimulation, lp_simulation, two_round_mechanism
from dpcompose.analysis._planning import binary_search_param, calibrate_noise, split_budget
from dpcompose.analysis._rr import RRSimulation, rr_simulator

__all__ = [
    "RR_OUTPUTS",
    "AuditResult",
    "ConcurrentComparison",
    "Explanation",
    "ExplanationRow",
    "FiniteInteractiveMechanism",
    "LPSimulation",
    "RRSimulation",
    "adversary_count",
    "audit",
    "binary_search_param",
    "calibrate_noise",
    "clopper_pearson",
    "compare_concurrent",
    "concurrent_composition",
    "deterministic_adversaries",
    "exp_privacy_loss",
    "explain",
    "lp_simulation",
    "plot_profile",
    "privacy_curve",
    "privacy_loss",
    "randomized_response",
    "rr_simulator",
    "split_budget",
    "tightest_exp_epsilon",
    "two_round_mechanism",
]
