"""Analysis: explanation of privacy costs, parameter search, verification and auditing."""

from __future__ import annotations

from dpcompose.analysis._explain import Explanation, ExplanationRow, explain

__all__ = ["Explanation", "ExplanationRow", "explain"]
