"""The composition theorems as pure functions of numbers.

Every function here takes numbers and returns numbers (or a :class:`PrivacyProfile`); none sees data,
a domain or a queryable. Results never under-report: rational results are exact
:class:`fractions.Fraction`, irrational steps are rounded outward (see :mod:`dpcompose.accounting._exact`).
Each function's docstring names its source. The catalogue is docs/accounting.md.
"""

from __future__ import annotations

from dpcompose.accounting._accountant import SHUFFLE_REFUSED, PLDAccountant
from dpcompose.accounting._basic import advanced, advanced_drv, advanced_kov, basic, group
from dpcompose.accounting._calibrate import (
    Calibration,
    calibrate_loss,
    gaussian_sigma,
    least_passing,
)
from dpcompose.accounting._concurrent import concurrent_vadhan_wang
from dpcompose.accounting._display import Shown, format_down, format_excess, format_up, shown_down, shown_up
from dpcompose.accounting._exact import (
    Number,
    decimal,
    exact,
    float_down,
    float_up,
)
from dpcompose.accounting._filters import (
    BasicFilter,
    FilterRule,
    RenyiFilter,
    RRUVFilter,
    WhitehouseFilter,
    ZCDPApproxFilter,
    ZCDPFilter,
    rruv_filter_epsilon,
    whitehouse_filter_epsilon,
    zcdp_budget,
)
from dpcompose.accounting._gaussian import gaussian_delta
from dpcompose.accounting._gdp_filter import GDPFilter
from dpcompose.accounting._loss import PrivacyLoss
from dpcompose.accounting._optimal import (
    optimal_delta,
    optimal_delta_bounds,
    optimal_epsilon,
    optimal_epsilon_bounds,
)
from dpcompose.accounting._pld import (
    PLD,
    compose_plds,
    pld_approx,
    pld_discrete_gaussian,
    pld_discrete_laplace,
    pld_gaussian,
    pld_laplace,
    pld_randomized_response,
    pld_subsampled_discrete_gaussian,
    pld_subsampled_discrete_laplace,
    pld_subsampled_gaussian,
    pld_subsampled_laplace,
)
from dpcompose.accounting._profile import PrivacyProfile, gaussian_profile
from dpcompose.accounting._rdp import subsampled_gaussian_renyi, subsampled_renyi, subsampled_zcdp_to_renyi
from dpcompose.accounting._renyi_odometer import renyi_odometer_epsilon, renyi_stopping_epsilon
from dpcompose.accounting._selection import (
    renyi_delta_at,
    selection_renyi_poisson,
    selection_renyi_tnb,
    tnb_log_mean_up,
)
from dpcompose.accounting._zcdp import (
    bounded_range_to_zcdp,
    group_zcdp,
    pure_to_zcdp,
    renyi_to_approx,
    zcdp_compose,
    zcdp_delta,
    zcdp_to_approx,
)

__all__ = [
    "PLD",
    "SHUFFLE_REFUSED",
    "BasicFilter",
    "Calibration",
    "FilterRule",
    "GDPFilter",
    "Number",
    "PLDAccountant",
    "PrivacyLoss",
    "PrivacyProfile",
    "RRUVFilter",
    "RenyiFilter",
    "Shown",
    "WhitehouseFilter",
    "ZCDPApproxFilter",
    "ZCDPFilter",
    "advanced",
    "advanced_drv",
    "advanced_kov",
    "basic",
    "bounded_range_to_zcdp",
    "calibrate_loss",
    "compose_plds",
    "concurrent_vadhan_wang",
    "decimal",
    "exact",
    "float_down",
    "float_up",
    "format_down",
    "format_excess",
    "format_up",
    "gaussian_delta",
    "gaussian_profile",
    "gaussian_sigma",
    "group",
    "group_zcdp",
    "least_passing",
    "optimal_delta",
    "optimal_delta_bounds",
    "optimal_epsilon",
    "optimal_epsilon_bounds",
    "pld_approx",
    "pld_discrete_gaussian",
    "pld_discrete_laplace",
    "pld_gaussian",
    "pld_laplace",
    "pld_randomized_response",
    "pld_subsampled_discrete_gaussian",
    "pld_subsampled_discrete_laplace",
    "pld_subsampled_gaussian",
    "pld_subsampled_laplace",
    "pure_to_zcdp",
    "renyi_delta_at",
    "renyi_odometer_epsilon",
    "renyi_stopping_epsilon",
    "renyi_to_approx",
    "rruv_filter_epsilon",
    "selection_renyi_poisson",
    "selection_renyi_tnb",
    "shown_down",
    "shown_up",
    "subsampled_gaussian_renyi",
    "subsampled_renyi",
    "subsampled_zcdp_to_renyi",
    "tnb_log_mean_up",
    "whitehouse_filter_epsilon",
    "zcdp_budget",
    "zcdp_compose",
    "zcdp_delta",
    "zcdp_to_approx",
]
