"""Combinators: composite measurements whose privacy maps apply the composition theorems."""

from __future__ import annotations

from dpcompose.combinators._adaptive import make_adaptive_concurrent, make_adaptive_sequential
from dpcompose.combinators._casts import (
    make_approx_to_profile,
    make_fix_delta,
    make_group,
    make_loss_to_profile,
    make_postprocess,
    make_pure_to_approx,
    make_pure_to_profile,
    make_pure_to_renyi,
    make_pure_to_zcdp,
    make_renyi_to_approx,
    make_zcdp_to_approx,
    make_zcdp_to_profile,
    make_zcdp_to_renyi,
    wrap_queryable,
)
from dpcompose.combinators._compose import make_concurrent, make_sequential
from dpcompose.combinators._filter import make_privacy_filter
from dpcompose.combinators._ledger import LedgerError, LedgerLocked, MemoryLedger, SQLiteLedger
from dpcompose.combinators._odometer import make_odometer
from dpcompose.combinators._parallel import make_parallel
from dpcompose.combinators._select import make_private_selection
from dpcompose.combinators._select_renyi import (
    PoissonRuns,
    TruncatedNegativeBinomialRuns,
    make_private_selection_renyi,
)
from dpcompose.combinators._subsample import make_subsample

__all__ = [
    "LedgerError",
    "LedgerLocked",
    "MemoryLedger",
    "PoissonRuns",
    "SQLiteLedger",
    "TruncatedNegativeBinomialRuns",
    "make_adaptive_concurrent",
    "make_adaptive_sequential",
    "make_approx_to_profile",
    "make_concurrent",
    "make_fix_delta",
    "make_group",
    "make_loss_to_profile",
    "make_odometer",
    "make_parallel",
    "make_postprocess",
    "make_privacy_filter",
    "make_private_selection",
    "make_private_selection_renyi",
    "make_pure_to_approx",
    "make_pure_to_profile",
    "make_pure_to_renyi",
    "make_pure_to_zcdp",
    "make_renyi_to_approx",
    "make_sequential",
    "make_subsample",
    "make_zcdp_to_approx",
    "make_zcdp_to_profile",
    "make_zcdp_to_renyi",
    "wrap_queryable",
]
