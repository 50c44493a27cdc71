"""PLDAccountant: Opacus' method names over the certified PLD; the sampler accounted is the one named
(issue 34 items 6 and 7)."""

from __future__ import annotations

import math
import sys
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcompose.accounting import SHUFFLE_REFUSED, PLDAccountant, PrivacyLoss
from dpcompose.errors import InvalidParameter, UnsupportedComposition


def test_dpsgd_reads_the_certified_pld() -> None:
    acc = PLDAccountant()
    for _ in range(1000):
        acc.step(noise_multiplier=1.0, sample_rate=0.01)
    assert acc.history == [(1.0, 0.01, 1000)]
    assert len(acc) == 1000
    eps = acc.get_epsilon(1e-5)
    step = PrivacyLoss.subsampled(PrivacyLoss.gaussian(1, 1.0), 0.01)
    assert eps >= float(PrivacyLoss("composed", (), ((step, 1000),)).epsilon(1e-5))  # rounded up, not down
    assert 1.8282 < eps <= 1.01 * 1.828244  # dp_accounting's PLD reads 1.828244 (issue 34)


def test_history_is_grouped_like_opacus() -> None:
    acc = PLDAccountant()
    for s in (1.0, 1.0, 2.0, 2.0, 2.0, 1.0):
        acc.step(noise_multiplier=s, sample_rate=0.01)
    assert acc.history == [(1.0, 0.01, 2), (2.0, 0.01, 3), (1.0, 0.01, 1)]
    assert len(acc) == 6
    # the reading composes equal steps together, whatever their order
    other = PLDAccountant()
    for s in (2.0, 2.0, 2.0, 1.0, 1.0, 1.0):
        other.step(noise_multiplier=s, sample_rate=0.01)
    assert acc.get_epsilon(1e-5) == other.get_epsilon(1e-5)
    assert PLDAccountant().get_epsilon(1e-5) == 0.0
    assert PLDAccountant.mechanism() == "pld"


def test_a_million_steps_are_fast() -> None:
    acc = PLDAccountant()
    step = acc.step
    for _ in range(10**6):  # (about 1 µs a step: benchmarks/bench_training.py; no timed assertion here)
        step(noise_multiplier=2.0, sample_rate=0.001)
    eps = acc.get_epsilon(1e-6)
    assert acc.history == [(2.0, 0.001, 10**6)]  # a million steps are held as one record
    assert 0 < eps < 10


def test_without_replacement_is_the_substitution_pair() -> None:
    acc = PLDAccountant()
    for _ in range(100):
        acc.step(noise_multiplier=2.0, sample_rate=0.01, sampling="without_replacement")
    pair = PrivacyLoss.subsampled(PrivacyLoss.gaussian(2, 2.0), 0.01, "without_replacement")
    assert acc.privacy_loss() == PrivacyLoss("composed", (), ((pair, 100),))
    poisson = PLDAccountant()
    for _ in range(100):
        poisson.step(noise_multiplier=2.0, sample_rate=0.01)
    # a substituted example moves the clipped sum by up to 2C: more ε than one added or removed
    assert acc.get_epsilon(1e-5) > poisson.get_epsilon(1e-5)


def test_shuffle_is_refused_with_the_pitfall_and_records_nothing() -> None:
    acc = PLDAccountant()
    acc.step(noise_multiplier=1.0, sample_rate=0.01)
    before = list(acc.history)
    with pytest.raises(UnsupportedComposition, match="Chua") as info:
        acc.step(noise_multiplier=1.0, sample_rate=0.01, sampling="shuffle")
    assert str(info.value) == SHUFFLE_REFUSED and "sampling='shuffle'" in SHUFFLE_REFUSED
    assert acc.history == before
    with pytest.raises(UnsupportedComposition, match="shuffle"):
        acc.get_noise_multiplier(
            target_epsilon=1.0, target_delta=1e-5, sample_rate=0.01, steps=100, sampling="shuffle"
        )


def test_mixed_samplings_are_refused_and_record_nothing() -> None:
    acc = PLDAccountant()
    acc.step(noise_multiplier=1.0, sample_rate=0.01)
    with pytest.raises(UnsupportedComposition, match="neighbouring relations"):
        acc.step(noise_multiplier=1.0, sample_rate=0.01, sampling="without_replacement")
    assert acc.history == [(1.0, 0.01, 1)] and acc.sampling == "poisson"


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"noise_multiplier": 0.0, "sample_rate": 0.01}, "noise_multiplier"),
        ({"noise_multiplier": -1.0, "sample_rate": 0.01}, "noise_multiplier"),
        ({"noise_multiplier": math.nan, "sample_rate": 0.01}, "noise_multiplier"),
        ({"noise_multiplier": math.inf, "sample_rate": 0.01}, "noise_multiplier"),
        ({"noise_multiplier": 1.0, "sample_rate": 1.5}, "sample_rate"),
        ({"noise_multiplier": 1.0, "sample_rate": -0.1}, "sample_rate"),
        ({"noise_multiplier": 1.0, "sample_rate": 0.1, "sampling": "uniform"}, "sampling"),
        ({"noise_multiplier": 1.0, "sample_rate": 0.1, "sampling": None}, "sampling"),
    ],
)
def test_bad_steps_name_the_parameter_and_record_nothing(kwargs: dict[str, object], name: str) -> None:
    acc = PLDAccountant()
    with pytest.raises(InvalidParameter, match=name):
        acc.step(**kwargs)  # type: ignore[arg-type]
    assert acc.history == [] and acc.sampling is None


def test_get_epsilon_bad_delta() -> None:
    acc = PLDAccountant()
    acc.step(noise_multiplier=1.0, sample_rate=0.01)
    for bad in (-1e-5, 1.5, math.nan):
        with pytest.raises(InvalidParameter, match="delta"):
            acc.get_epsilon(bad)


def test_state_dict_round_trip_and_bad_states() -> None:
    acc = PLDAccountant()
    for _ in range(10):
        acc.step(noise_multiplier=1.5, sample_rate=0.02, sampling="without_replacement")
    state = acc.state_dict()
    assert state == {"history": [(1.5, 0.02, 10)], "mechanism": "pld", "sampling": "without_replacement"}
    other = PLDAccountant()
    other.load_state_dict(state)
    assert other.get_epsilon(1e-5) == acc.get_epsilon(1e-5)
    for bad, name in [
        ({"history": [(1.5, 0.02, 10)], "mechanism": "rdp"}, "mechanism"),
        ({"mechanism": "pld"}, "history"),
        ({"history": [(1.5, 0.02, 0)], "mechanism": "pld"}, "steps"),
        ({"history": [(1.5, 2.0, 1)], "mechanism": "pld"}, "sample_rate"),
        ({"history": [(1.5, 0.02, 1)], "mechanism": "pld", "sampling": "shuffle"}, "shuffle"),
    ]:
        with pytest.raises((InvalidParameter, UnsupportedComposition), match=name):
            other.load_state_dict(bad)
        assert other.history == [(1.5, 0.02, 10)]  # unchanged


def test_get_noise_multiplier_is_the_least_certified_sigma() -> None:
    acc = PLDAccountant()
    sigma = acc.get_noise_multiplier(target_epsilon=1.0, target_delta=1e-5, sample_rate=0.01, steps=10_000)
    assert acc.history == []  # nothing recorded
    for s, meets in ((sigma, True), (math.nextafter(sigma, 0.0), False)):
        probe = PLDAccountant()
        probe.load_state_dict({"history": [(s, 0.01, 10_000)], "mechanism": "pld"})
        assert (probe.privacy_loss().epsilon(1e-5) <= 1) is meets
    assert 3.81 < sigma < 3.82  # dp_accounting's calibrate_dp_mechanism: 3.813240 (issue 34)
    # epochs, as Opacus reads them: int(epochs / q) steps
    assert (
        acc.get_noise_multiplier(target_epsilon=1.0, target_delta=1e-5, sample_rate=0.01, epochs=100) == sigma
    )


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"steps": 100, "epochs": 1}, "exactly one"),
        ({}, "exactly one"),
        ({"steps": 0}, "steps"),
        ({"steps": 100, "target_epsilon": 0.0}, "target_epsilon"),
        ({"steps": 100, "target_delta": 0.0}, "target_delta"),
        ({"steps": 100, "target_delta": 1.0}, "target_delta"),
        ({"steps": 100, "sample_rate": 2.0}, "sample_rate"),
        ({"epochs": -1.0}, "epochs"),
    ],
)
def test_get_noise_multiplier_bad_input(kwargs: dict[str, object], name: str) -> None:
    base: dict[str, object] = {"target_epsilon": 1.0, "target_delta": 1e-5, "sample_rate": 0.01}
    with pytest.raises(InvalidParameter, match=name):
        PLDAccountant().get_noise_multiplier(**{**base, **kwargs})  # type: ignore[arg-type]


@settings(max_examples=3, deadline=None)
@given(
    sigmas=st.lists(st.sampled_from([1.0, 2.0]), min_size=1, max_size=8),
    q=st.sampled_from([0.01, 0.05]),
)
def test_epsilon_never_below_the_composed_pair(sigmas: list[float], q: float) -> None:
    acc = PLDAccountant()
    for s in sigmas:
        acc.step(noise_multiplier=s, sample_rate=q)
    pairs = [PrivacyLoss.subsampled(PrivacyLoss.gaussian(1, s), q) for s in sigmas]
    assert acc.get_epsilon(1e-6) >= float(PrivacyLoss.compose(pairs).epsilon(1e-6))
    assert acc.get_epsilon(1e-6) >= acc.get_epsilon(1e-3)


def test_no_torch_import() -> None:
    assert "torch" not in sys.modules and "opacus" not in sys.modules


def test_exact_rates_and_multipliers_are_rounded_to_the_safe_side() -> None:
    """A Fraction rate was rounded to the nearest double (1/3 → 0.333…33 < 1/3) and σ likewise (it may
    round up): the accounted step could be more private than the one that ran. Rate 1 (full batch) was
    refused."""
    acc = PLDAccountant()
    acc.step(noise_multiplier=Fraction(1, 3), sample_rate=Fraction(1, 3))
    ((sigma, q, n),) = acc.history
    assert Fraction(q) >= Fraction(1, 3) and Fraction(sigma) <= Fraction(1, 3) and n == 1
    full = PLDAccountant()
    full.step(noise_multiplier=1.0, sample_rate=1.0)
    assert full.history == [(1.0, 1.0, 1)]
    with pytest.raises(InvalidParameter, match="sample_rate"):
        full.step(noise_multiplier=1.0, sample_rate=1.5)
