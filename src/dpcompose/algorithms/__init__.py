"""Algorithms built from the library's checked parts: marginal-based synthetic data (AIM, MST) and MWEM.

Each is one :class:`~dpcompose.Measurement` whose privacy-relevant steps are library measurements answered
by a zCDP privacy filter; the model fit is post-processing.
"""

from __future__ import annotations

from dpcompose.algorithms._aim import make_aim
from dpcompose.algorithms._model import MarginalModel, NoisyMarginal, fit_model
from dpcompose.algorithms._mst import make_mst
from dpcompose.algorithms._mwem import make_mwem

__all__ = ["MarginalModel", "NoisyMarginal", "fit_model", "make_aim", "make_mst", "make_mwem"]
