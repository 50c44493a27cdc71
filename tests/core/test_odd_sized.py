"""An odd add/remove distance between datasets of one fixed size is refused (found by a user audit: a
mean's map at d_in = 1 was 0 on a sized domain, so docs printed a cost for neighbours that cannot exist
and a filter charging it would admit every query)."""

from __future__ import annotations

from fractions import Fraction

import pytest

import dpcompose as dp
from dpcompose.errors import InvalidParameter

SYM = dp.SymmetricDistance()
SIZED = dp.VectorDomain(dp.AtomDomain(float, bounds=(0.0, 1.0)), size=100)
UNSIZED = dp.VectorDomain(dp.AtomDomain(float, bounds=(0.0, 1.0)))


def _mean() -> dp.Measurement:
    laplace = dp.m.make_laplace(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=0.01)
    return dp.t.make_mean(SIZED, SYM) >> laplace


def test_an_odd_distance_on_a_sized_domain_is_refused_everywhere_it_is_read() -> None:
    mean = _mean()
    transformation = dp.t.make_mean(SIZED, SYM)
    for call in (
        lambda: mean.map(1),
        lambda: mean.map(3),
        lambda: mean.check(1, 1.0),
        lambda: mean.privacy_loss(1),
        lambda: transformation.map(1),
        lambda: dp.explain(mean, 1),
    ):
        with pytest.raises(
            InvalidParameter, match=r"d_in=\d is odd.*fixed size \(size=100\).*ChangeOneDistance"
        ):
            call()


def test_even_distances_other_metrics_and_unsized_domains_are_answered() -> None:
    mean = _mean()
    assert mean.map(2) > 0 and mean.map(0) == 0  # one record changed: d_in = 2
    changed = dp.t.make_mean(SIZED, dp.ChangeOneDistance()) >> dp.m.make_laplace(
        dp.AtomDomain(float), dp.AbsoluteDistance(), scale=0.01
    )
    assert changed.map(1) == mean.map(2)  # the same neighbours, named per changed record
    unsized = dp.t.make_sum(UNSIZED, SYM, max_size=100)
    assert unsized.map(1) >= 1


def test_a_filter_over_a_sized_domain_refuses_an_odd_d_in_and_spends_nothing() -> None:
    """A filter, odometer or compositor built at d_in = 1 would charge 0 per mean: refused when built; at
    d_in = 2 the same query is charged its real cost."""
    data = [0.5] * 100
    for build in (
        lambda: dp.make_privacy_filter(SIZED, SYM, dp.PureDP(), d_in=1, d_out=1.0),
        lambda: dp.make_odometer(SIZED, SYM, dp.PureDP(), d_in=1),
        lambda: dp.make_adaptive_sequential(SIZED, SYM, dp.PureDP(), d_in=1, d_mids=[1.0]),
    ):
        with pytest.raises(InvalidParameter, match="odd"):
            build()
    even = dp.make_privacy_filter(SIZED, SYM, dp.PureDP(), d_in=2, d_out=2.0)(data)
    even(_mean())
    assert 1 <= _mean().map(2) < Fraction(1001, 1000)  # Δ = 1/n per changed record (plus slack), scale 1/n
    assert even.spent()["epsilon"] >= 1  # charged its cost at d_in = 2, not the vacuous 0 of d_in = 1


def test_a_chain_reads_an_odd_bound_into_a_sized_domain_as_the_even_one_below() -> None:
    """Found by review: a transformation into a sized domain may state a loose odd bound (3·d here; the
    true distance is even); the chain used to be refused at the user's d_in=1 naming a d_in=3 the user never
    passed. Every two members of the sized domain are an even distance apart, so 3 is read as 2."""
    sized = dp.VectorDomain(dp.AtomDomain(float, bounds=(0.0, 1.0)), size=10)

    def smallest(x: list[float]) -> list[float]:
        return sorted(x)[:10] + [0.0] * (10 - len(x[:10]))

    t = dp.make_user_transformation(UNSIZED, sized, SYM, SYM, smallest, lambda d: 3 * d, trusted=True)
    mean = dp.t.make_mean(sized, SYM)
    laplace = dp.m.make_laplace(mean.output_domain, mean.output_metric, scale=1.0)
    m = t >> mean >> laplace
    assert (t >> mean).map(1) == mean.map(2)  # 3 → 2
    assert m.map(1) == laplace.map(mean.map(2)) > 0


def test_group_privacy_on_a_sized_symmetric_domain_is_refused_with_the_fix() -> None:
    """Found by review: make_group reads map(1), which was 0 there (a group cost 0 before the refusal)."""
    with pytest.raises(dp.DomainMismatch, match="ChangeOneDistance"):
        dp.make_group(_mean(), 2)
    changed = dp.t.make_mean(SIZED, dp.ChangeOneDistance()) >> dp.m.make_laplace(
        dp.AtomDomain(float), dp.AbsoluteDistance(), scale=0.01
    )
    assert dp.make_group(changed, 2).map(1) == 2 * changed.map(1)


def test_a_subclass_of_symmetric_distance_is_refused_too() -> None:
    from dataclasses import dataclass

    @dataclass(frozen=True, slots=True, repr=False)
    class MySym(dp.SymmetricDistance):
        pass

    with pytest.raises(InvalidParameter, match="odd"):
        dp.make_privacy_filter(SIZED, MySym(), dp.PureDP(), d_in=1, d_out=1.0)


def test_the_parameter_searches_name_the_odd_distance() -> None:
    """Found by review: scale_for, calibrate_noise and binary_search_param swallowed the refusal into "no
    scale meets d_out" (or an unrelated first error); they now refuse it by name before searching."""
    mean = dp.t.make_mean(SIZED, SYM)

    def make(s: float) -> dp.Measurement:
        return mean >> dp.m.make_laplace(mean.output_domain, mean.output_metric, scale=s)

    for search in (
        lambda: dp.m.scale_for(mean, 1.0),
        lambda: dp.calibrate_noise(make, 1, 1.0),
        lambda: dp.binary_search_param(make, 1, 1.0),
    ):
        with pytest.raises(InvalidParameter, match=r"d_in=1 is odd"):
            search()
    assert dp.m.scale_for(mean, 1.0, d_in=2) > 0
