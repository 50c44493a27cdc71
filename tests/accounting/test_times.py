"""PrivacyLoss.times and PrivacyProfile.times: n copies composed, equal to composing the list of n."""

from __future__ import annotations

import pytest

from dpcompose.accounting import PrivacyLoss, PrivacyProfile, gaussian_profile
from dpcompose.errors import InvalidParameter

G = PrivacyLoss.gaussian(1, 3)
STEP = PrivacyLoss.subsampled(PrivacyLoss.discrete_gaussian(2**20, 2**20), 0.01)
PAIRS = [G, STEP, PrivacyLoss.laplace(1, 10), PrivacyLoss.compose([G, PrivacyLoss.approx(0.5, 1e-7), G])]


@pytest.mark.parametrize("pair", PAIRS)
@pytest.mark.parametrize("n", [1, 2, 7, 1000])
def test_loss_times_is_compose_of_copies(pair: PrivacyLoss, n: int) -> None:
    assert pair.times(n) == PrivacyLoss.compose([pair] * n)
    assert pair.times(n).count() == n * pair.count()


def test_compose_counts_one_object_repeated_and_names_the_bad_part() -> None:
    items = [STEP] * 500 + [G] * 3 + [STEP]
    assert PrivacyLoss.compose(items) == PrivacyLoss.compose([STEP.times(501), G.times(3)])
    with pytest.raises(InvalidParameter, match=r"parts\[4\]=1\.5 must be a PrivacyLoss"):
        PrivacyLoss.compose([G, G, STEP, G, 1.5, G, 1.5])  # type: ignore[list-item]


PROFILES = [
    PrivacyProfile.pure(0.5),
    PrivacyProfile.approx(0.3, 1e-6),
    PrivacyProfile.zcdp(0.01),
    gaussian_profile(1, 4),
    PrivacyProfile.from_loss(STEP),
    PrivacyProfile.pure(0.2).with_loss(PrivacyLoss.randomized_response(0.2)),
    PrivacyProfile.compose([PrivacyProfile.zcdp(0.1), PrivacyProfile.approx(0.1, 1e-9).with_loss(G)]),
]


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("n", [1, 3, 50])
def test_profile_times_is_compose_of_copies(profile: PrivacyProfile, n: int) -> None:
    assert profile.times(n) == PrivacyProfile.compose([profile] * n)


@pytest.mark.parametrize("n", [0, -1, True, 2.0, "3"])
def test_times_refuses_what_is_not_a_positive_count(n: object) -> None:
    with pytest.raises(InvalidParameter, match="must be a positive integer"):
        G.times(n)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameter, match="must be a positive integer"):
        PROFILES[0].times(n)  # type: ignore[arg-type]
