"""Transformations: deterministic, stable maps on datasets."""

from __future__ import annotations

from dpcompose.transformations._clamp import make_clamp
from dpcompose.transformations._contributions import make_bound_contributions
from dpcompose.transformations._count import make_count
from dpcompose.transformations._count_by import make_count_by, make_count_by_categories
from dpcompose.transformations._expr_rows import make_map_exprs
from dpcompose.transformations._groupwise import make_groupwise
from dpcompose.transformations._marginals import (
    make_category_codes,
    make_marginal_errors,
    make_marginals,
    marginal_tables,
)
from dpcompose.transformations._partition import make_partition
from dpcompose.transformations._quantile import make_quantile_score_candidates
from dpcompose.transformations._rows import (
    make_count_distinct,
    make_drop_null,
    make_impute_constant,
    make_map_rows,
    make_select_column,
    make_subset_by,
)
from dpcompose.transformations._sscp import make_sscp
from dpcompose.transformations._stats import make_mean, make_resize, make_variance
from dpcompose.transformations._sum import make_sum
from dpcompose.transformations._tree import make_b_ary_tree, tree_running_counts
from dpcompose.transformations._vectors import make_clip_l1, make_clip_l2, make_vector_sum
from dpcompose.transformations._workload import make_workload, make_workload_error

__all__ = [
    "make_b_ary_tree",
    "make_bound_contributions",
    "make_category_codes",
    "make_clamp",
    "make_clip_l1",
    "make_clip_l2",
    "make_count",
    "make_count_by",
    "make_count_by_categories",
    "make_count_distinct",
    "make_drop_null",
    "make_groupwise",
    "make_impute_constant",
    "make_map_exprs",
    "make_map_rows",
    "make_marginal_errors",
    "make_marginals",
    "make_mean",
    "make_partition",
    "make_quantile_score_candidates",
    "make_resize",
    "make_select_column",
    "make_sscp",
    "make_subset_by",
    "make_sum",
    "make_variance",
    "make_vector_sum",
    "make_workload",
    "make_workload_error",
    "marginal_tables",
    "tree_running_counts",
]
