"""Static types of mechanism-aware accounting (issue 13): ``mypy --strict tests/typing``."""

from __future__ import annotations

from fractions import Fraction

from typing_extensions import assert_type

import dpcompose as dp
from dpcompose.accounting import PLD, PrivacyLoss


def test_privacy_loss_types() -> None:
    lap = dp.m.make_laplace(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=10.0)
    loss = lap.privacy_loss(Fraction(1))
    assert_type(loss, PrivacyLoss | None)
    assert loss is not None
    many = PrivacyLoss.compose([loss] * 3)
    assert_type(many, PrivacyLoss)
    assert_type(many.epsilon(1e-6), Fraction)
    assert_type(many.epsilon_bounds(1e-6), tuple[Fraction, Fraction])
    assert_type(many.pld(), PLD)
    assert_type(many.step_bits(), int)
    assert many.count() == 3
