"""Analysis: explanation of privacy costs, parameter search, verification and auditing."""

from __future__ import annotations

from dpcompose.analysis._explain import Explanation, ExplanationRow, explain
from dpcompose.analysis._planning import binary_search_param, split_budget

__all__ = [
    "Explanation",
    "ExplanationRow",
    "binary_search_param",
    "explain",
    "split_budget",
]
