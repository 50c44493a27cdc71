"""dpcompose: typed, composable differential privacy with proven composition theorems.

Examples:
    >>> import dpcompose as dp
    >>> data = dp.VectorDomain(dp.AtomDomain(float))
    >>> mean_parts = dp.t.make_clamp(data, dp.SymmetricDistance(), (0.0, 100.0))
    >>> mean_parts.map(1)
    1
"""

from __future__ import annotations

from dpcompose import accounting, analysis, combinators, core, measurements, transformations
from dpcompose import measurements as m
from dpcompose import transformations as t
from dpcompose.analysis import binary_search_param, explain, split_budget
from dpcompose.combinators import (
    LedgerError,
    LedgerLocked,
    MemoryLedger,
    SQLiteLedger,
    make_adaptive_concurrent,
    make_adaptive_sequential,
    make_approx_to_profile,
    make_concurrent,
    make_filter,
    make_fix_delta,
    make_group,
    make_odometer,
    make_parallel,
    make_postprocess,
    make_pure_to_approx,
    make_pure_to_profile,
    make_pure_to_zcdp,
    make_sequential,
    make_zcdp_to_approx,
    make_zcdp_to_profile,
    wrap_queryable,
)
from dpcompose.core import (
    ZCDP,
    AbsoluteDistance,
    ApproxDP,
    AtomDomain,
    CategoricalDomain,
    ChangeOneDistance,
    DiscreteDistance,
    Domain,
    L1Distance,
    L2Distance,
    Measure,
    Measurement,
    Metric,
    PartitionDistance,
    ProfileDP,
    PureDP,
    Queryable,
    RenyiCurve,
    RenyiDP,
    SymmetricDistance,
    Transformation,
    VectorDomain,
)
from dpcompose.errors import (
    BudgetExceeded,
    DomainMismatch,
    DPError,
    InvalidParameter,
    SequentialityError,
    UnsupportedComposition,
)

__version__ = "0.1.0"

__all__ = [
    "ZCDP",
    "AbsoluteDistance",
    "ApproxDP",
    "AtomDomain",
    "BudgetExceeded",
    "CategoricalDomain",
    "ChangeOneDistance",
    "DPError",
    "DiscreteDistance",
    "Domain",
    "DomainMismatch",
    "InvalidParameter",
    "L1Distance",
    "L2Distance",
    "LedgerError",
    "LedgerLocked",
    "Measure",
    "Measurement",
    "MemoryLedger",
    "Metric",
    "PartitionDistance",
    "ProfileDP",
    "PureDP",
    "Queryable",
    "RenyiCurve",
    "RenyiDP",
    "SQLiteLedger",
    "SequentialityError",
    "SymmetricDistance",
    "Transformation",
    "UnsupportedComposition",
    "VectorDomain",
    "__version__",
    "accounting",
    "analysis",
    "binary_search_param",
    "combinators",
    "core",
    "explain",
    "m",
    "make_adaptive_concurrent",
    "make_adaptive_sequential",
    "make_approx_to_profile",
    "make_concurrent",
    "make_filter",
    "make_fix_delta",
    "make_group",
    "make_odometer",
    "make_parallel",
    "make_postprocess",
    "make_pure_to_approx",
    "make_pure_to_profile",
    "make_pure_to_zcdp",
    "make_sequential",
    "make_zcdp_to_approx",
    "make_zcdp_to_profile",
    "measurements",
    "split_budget",
    "t",
    "transformations",
    "wrap_queryable",
]
