"""Static types of profiles that carry dominating pairs: ``mypy --strict tests/typing``."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from typing_extensions import assert_type

import dpcompose as dp
from dpcompose.accounting import PrivacyLoss, PrivacyProfile


def test_profile_with_pairs_types() -> None:
    pair = PrivacyLoss.laplace(1, 10)
    p = PrivacyProfile.pure(Fraction(1, 10)).with_loss(pair)
    assert_type(p, PrivacyProfile)
    assert_type(PrivacyProfile.from_loss(pair), PrivacyProfile)
    assert_type(p.loss, PrivacyLoss | None)
    assert_type(p.loss_fallback, PrivacyProfile | None)
    assert_type(p.privacy_loss(), PrivacyLoss | None)
    assert_type(p.generic(), PrivacyProfile | None)
    assert_type(p.pairs_only(), PrivacyProfile)
    assert_type(p.routes(), tuple[tuple[str, PrivacyProfile], ...])
    assert_type(p.epsilon(1e-6), Fraction)
    assert p.epsilon(1e-6) <= Fraction(1, 10)


def test_loss_to_profile_types() -> None:
    lap = dp.m.make_laplace(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=10.0)
    prof = dp.make_loss_to_profile(lap)
    assert_type(prof, dp.Measurement[Any, Any, Any, Any])
    assert isinstance(prof.output_measure, dp.ProfileDP)
