"""Calibration on the float grid (issue 34 item 5): least_passing, calibrate_loss, gaussian_sigma."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpcompose as dp
from dpcompose.accounting import PrivacyLoss, calibrate_loss, gaussian_delta, gaussian_sigma, least_passing
from dpcompose.accounting._calibrate import least_passing_exact
from dpcompose.errors import InvalidParameter


def _true_gaussian_delta(sigma: float, eps: float, sens: float = 1.0) -> mpmath.mpf:
    """Balle–Wang 2018 Thm 8 at 50 digits."""
    with mpmath.workdps(50):
        s, e, d = mpmath.mpf(sigma), mpmath.mpf(eps), mpmath.mpf(sens)
        return mpmath.ncdf(d / (2 * s) - e * s / d) - mpmath.e**e * mpmath.ncdf(-d / (2 * s) - e * s / d)


# -- the search itself ------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    threshold=st.floats(1e-3, 1e6, allow_nan=False),
    with_reading=st.booleans(),
    power=st.floats(0.3, 3.0),
)
def test_least_passing_finds_the_exact_float_threshold(
    threshold: float, with_reading: bool, power: float
) -> None:
    def probe(x: float) -> tuple[bool, float | None]:
        return x >= threshold, (power * math.log(threshold / x) if with_reading and x > 0 else None)

    c = least_passing(probe)
    assert c.value == threshold
    assert c.below == math.nextafter(threshold, 0.0)
    assert c.wobble == 0.0


@settings(max_examples=40, deadline=None)
@given(threshold=st.floats(1e-2, 1e4), rtol=st.sampled_from([1e-2, 1e-4, 1e-8]))
def test_least_passing_with_rtol_is_within_tolerance(threshold: float, rtol: float) -> None:
    def probe(x: float) -> tuple[bool, float | None]:
        return x >= threshold, (math.log(threshold / x) if x > 0 else None)

    c = least_passing(probe, rtol=rtol)
    assert threshold <= c.value <= threshold * (1 + rtol) * (1 + 1e-15)
    assert c.below < threshold <= c.value
    assert c.value <= c.below * (1 + rtol)


def test_least_passing_with_readings_takes_few_probes() -> None:
    c = least_passing(lambda x: (x >= 3.7, math.log(3.7 / x)))
    assert c.value == 3.7
    assert c.probes <= 12  # bisection of the floats takes about 64


def test_least_passing_refuses_a_rising_reading() -> None:
    def probe(x: float) -> tuple[bool, float | None]:  # passes from 5 up, but reads more as σ grows below 5
        return x >= 5, (math.log(2 + x) if x < 5 else math.log(5 / x))

    with pytest.raises(InvalidParameter, match="make: the certified reading is not monotone"):
        least_passing(probe)


def test_least_passing_bad_bounds_and_no_solution() -> None:
    with pytest.raises(InvalidParameter, match=r"bounds\[1\]=10.0 does not meet the target"):
        least_passing(lambda x: (x >= 20, math.log(20 / x)), bounds=(0.0, 10.0))
    with pytest.raises(InvalidParameter, match=r"bounds\[0\]=1.0 already meets the target"):
        least_passing(lambda x: (x >= 0.5, math.log(0.5 / x)), bounds=(1.0, 10.0))
    with pytest.raises(InvalidParameter, match="lo < hi"):
        least_passing(lambda x: (True, None), bounds=(5.0, 1.0))
    with pytest.raises(InvalidParameter, match=r"bounds\[0\]"):
        least_passing(lambda x: (True, None), bounds=(-1.0, 1.0))
    with pytest.raises(InvalidParameter, match="rtol"):
        least_passing(lambda x: (True, None), rtol=1.5)


def test_a_refused_sigma_counts_as_failing_and_is_named() -> None:
    def probe(x: float) -> tuple[bool, float | None]:
        raise InvalidParameter("no pair here")

    with pytest.raises(InvalidParameter, match="no pair here"):
        least_passing(probe, bounds=(0.0, 100.0))


# -- the Gaussian σ by the exact profile ------------------------------------------------------------------


def test_gaussian_sigma_at_1_1e6() -> None:
    sigma = gaussian_sigma(1.0, 1e-6)
    assert _true_gaussian_delta(sigma, 1.0) <= mpmath.mpf(1e-6)  # certified
    assert _true_gaussian_delta(sigma * (1 - 1e-9), 1.0) > mpmath.mpf(1e-6)  # least, to 1e-9
    assert abs(sigma - 4.22467888933) < 1e-9
    # the zCDP route (ρ = 1/2σ², then CKS 2020 Prop 12) needs more noise for the same target
    assert float(dp.accounting.zcdp_to_approx(Fraction(1, 2) / Fraction(sigma) ** 2, 1e-6)) > 1.0


@settings(max_examples=25, deadline=None)
@given(
    eps=st.floats(0.05, 8.0),
    delta=st.floats(1e-12, 1e-2),
    sens=st.floats(0.25, 8.0),
)
def test_gaussian_sigma_is_certified_and_least(eps: float, delta: float, sens: float) -> None:
    sigma = gaussian_sigma(eps, delta, sensitivity=sens)
    below = math.nextafter(sigma, 0.0)
    d_exact = Fraction(delta)
    e, d = dp.accounting.decimal(eps), dp.accounting.decimal(delta)  # targets are read as they print
    assert gaussian_delta((Fraction(sens) / Fraction(sigma)) ** 2, e) <= d
    assert gaussian_delta((Fraction(sens) / Fraction(below)) ** 2, e) > d
    assert _true_gaussian_delta(sigma, eps, sens) <= mpmath.mpf(d_exact) * (1 + 1e-12)
    assert _true_gaussian_delta(sigma * (1 - 1e-7), eps, sens) > mpmath.mpf(d_exact) * (1 - 1e-12)


@pytest.mark.parametrize(
    ("args", "name"),
    [
        ((0.0, 1e-6), "epsilon"),
        ((math.inf, 1e-6), "epsilon"),
        ((-1.0, 1e-6), "epsilon"),
        ((1.0, 0.0), "delta"),
        ((1.0, 1.0), "delta"),
        ((1.0, 2.0), "delta"),
        ((1.0, math.nan), "delta"),
        ((1.0, 1e-6, 0.0), "sensitivity"),
        ((1.0, 1e-6, -1.0), "sensitivity"),
    ],
)
def test_gaussian_sigma_bad_input_names_the_parameter(args: tuple[float, ...], name: str) -> None:
    with pytest.raises(InvalidParameter, match=name):
        gaussian_sigma(*args)


# -- a σ ↦ PrivacyLoss calibration ------------------------------------------------------------------------


def _dpsgd(steps: int, q: float) -> object:
    def make(sigma: float) -> PrivacyLoss:
        step = PrivacyLoss.subsampled(PrivacyLoss.gaussian(1, sigma), q)
        return PrivacyLoss("composed", (), ((step, steps),))

    return make


def test_calibrate_loss_dpsgd_boundary_is_exact() -> None:
    make = _dpsgd(10_000, 0.01)
    sigma = calibrate_loss(make, 1.0, 1e-5, start=4.0)  # type: ignore[arg-type]
    assert make(sigma).epsilon(1e-5) <= 1  # type: ignore[operator]
    assert make(math.nextafter(sigma, 0.0)).epsilon(1e-5) > 1  # type: ignore[operator]
    assert 3.81 < sigma < 3.82  # dp_accounting's calibrate_dp_mechanism: 3.813240 (issue 34)


def test_calibrate_loss_matches_the_gaussian_profile() -> None:
    sigma = calibrate_loss(lambda s: PrivacyLoss.gaussian(1, s), 1.0, 1e-6)
    # the PLD certificate is within its lattice error of the exact profile's σ, never below the truth
    assert _true_gaussian_delta(sigma, 1.0) <= mpmath.mpf(1e-6)
    assert sigma == pytest.approx(gaussian_sigma(1.0, 1e-6), rel=1e-3)


def test_calibrate_loss_no_solution_and_bad_targets() -> None:
    make = _dpsgd(100, 0.01)
    with pytest.raises(InvalidParameter, match="bounds"):
        calibrate_loss(make, 1e-3, 1e-10, bounds=(1.0, 2.0))  # type: ignore[arg-type]
    with pytest.raises(InvalidParameter, match="epsilon"):
        calibrate_loss(make, -1.0, 1e-5)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameter, match="delta"):
        calibrate_loss(make, 1.0, 1.5)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameter, match="make_loss"):
        calibrate_loss(3, 1.0, 1e-5)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameter, match="not a PrivacyLoss"):
        calibrate_loss(lambda s: 1.0, 1.0, 1e-5, bounds=(0.5, 2.0))  # type: ignore[arg-type,return-value]


@pytest.mark.slow
def test_calibrate_loss_dpsgd_issue_case() -> None:
    """T = 10⁴, q = 0.01, (1, 1e-5): the exact boundary, and the rtol answer within 1e-4 of it."""
    make = _dpsgd(10_000, 0.01)
    sigma = calibrate_loss(make, 1.0, 1e-5)  # type: ignore[arg-type]
    assert make(sigma).epsilon(1e-5) <= 1  # type: ignore[operator]
    assert make(math.nextafter(sigma, 0.0)).epsilon(1e-5) > 1  # type: ignore[operator]
    rough = calibrate_loss(make, 1.0, 1e-5, rtol=1e-4)  # type: ignore[arg-type]
    assert sigma <= rough * (1 + 1e-12) and rough <= sigma * (1 + 1e-4)


def test_least_passing_exact_crosses_a_rise_at_a_power_of_two() -> None:
    """A reading exact in σ that falls within each binade but rises at 4: σ in [3.5, 4) passes, [4, 4.5)
    fails, [4.5, ∞) passes; the least passing σ, 3.5, is found from either side of the rise."""

    def probe(s: float) -> tuple[bool, Fraction]:
        q = Fraction(3.5) / Fraction(s) if s < 4 else Fraction(4.5) / Fraction(s)
        return q <= 1, q

    for start in (1.0, 6.0, 100.0):
        cal = least_passing_exact(probe, (0.0, 1e10), start)
        assert cal.value == 3.5 and cal.below == math.nextafter(3.5, 0.0)


def test_least_passing_exact_refuses_a_rise_within_a_binade() -> None:
    def probe(s: float) -> tuple[bool, Fraction]:
        q = Fraction(4) / Fraction(s) if s < 6 else Fraction(9, 10)  # rises at 6, inside [4, 8)
        return q <= 1, q

    with pytest.raises(InvalidParameter, match=r"rises with the scale within the binade \[2\*\*2, 2\*\*3\)"):
        least_passing_exact(probe, (1.0, 7.0), 6.5)
