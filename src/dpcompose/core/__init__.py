"""The core vocabulary: domains, metrics, measures, Transformation, Measurement, Queryable."""

from __future__ import annotations

from dpcompose.core._domains import (
    AtomDomain,
    CategoricalDomain,
    Domain,
    MapDomain,
    TableDomain,
    VectorDomain,
)
from dpcompose.core._measurement import (
    Measurement,
    Transformation,
    make_user_measurement,
    make_user_transformation,
    postprocess,
)
from dpcompose.core._measures import (
    ZCDP,
    ApproxDP,
    Composability,
    Measure,
    ProfileDP,
    PureDP,
    RenyiCurve,
    RenyiDP,
)
from dpcompose.core._metrics import (
    AbsoluteDistance,
    ChangeOneDistance,
    DiscreteDistance,
    L01InfDistance,
    L1Distance,
    L2Distance,
    LInfDistance,
    Metric,
    PartitionDistance,
    SymmetricDistance,
    SymmetricIdDistance,
)
from dpcompose.core._node import Node
from dpcompose.core._norm_domain import NormBallDomain
from dpcompose.core._queryable import Queryable

__all__ = [
    "ZCDP",
    "AbsoluteDistance",
    "ApproxDP",
    "AtomDomain",
    "CategoricalDomain",
    "ChangeOneDistance",
    "Composability",
    "DiscreteDistance",
    "Domain",
    "L01InfDistance",
    "L1Distance",
    "L2Distance",
    "LInfDistance",
    "MapDomain",
    "Measure",
    "Measurement",
    "Metric",
    "Node",
    "NormBallDomain",
    "PartitionDistance",
    "ProfileDP",
    "PureDP",
    "Queryable",
    "RenyiCurve",
    "RenyiDP",
    "SymmetricDistance",
    "SymmetricIdDistance",
    "TableDomain",
    "Transformation",
    "VectorDomain",
    "make_user_measurement",
    "make_user_transformation",
    "postprocess",
]
