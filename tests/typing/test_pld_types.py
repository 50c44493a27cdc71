"""Static types of mechanism-aware accounting (issue 13): ``mypy --strict tests/typing``."""

from __future__ import annotations

from fractions import Fraction

from typing_extensions import assert_type

import dpcompose as dp
from dpcompose.accounting import (
    PLD,
    PrivacyLoss,
    pld_subsampled_discrete_gaussian,
    pld_subsampled_discrete_laplace,
)


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


def test_subsampled_types() -> None:
    step = PrivacyLoss.subsampled(PrivacyLoss.discrete_gaussian(2**30, 2**30), 0.01, "without_replacement")
    assert_type(step, PrivacyLoss)
    assert_type(PrivacyLoss.compose([step] * 2).epsilon(1e-5), Fraction)
    assert_type(pld_subsampled_discrete_gaussian(2, 3, 0.1, step_bits=8), PLD)
    assert_type(pld_subsampled_discrete_laplace(2, 3, Fraction(1, 10), sampling="poisson"), PLD)
