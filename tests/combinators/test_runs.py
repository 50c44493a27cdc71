"""A composition of one child repeated (a training run's steps) is read once per run of equal children, as
n copies (issue 34, speed): the numbers are those of the children listed one by one, and the work does not
grow with the number of children."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

import dpcompose as dp
from dpcompose.accounting import PrivacyLoss, PrivacyProfile

ABS = dp.AbsoluteDistance()
COUNTS = dp.t.make_count(dp.VectorDomain(dp.AtomDomain(int)), dp.SymmetricDistance())


def _step(sigma: float, rate: float) -> Any:
    return dp.make_subsample(COUNTS >> dp.m.make_gaussian(dp.AtomDomain(int), ABS, sigma), rate)


def _laplace(scale: float) -> Any:
    return COUNTS >> dp.m.make_laplace(dp.AtomDomain(int), ABS, scale)


@pytest.mark.parametrize("combinator", [dp.make_sequential, dp.make_concurrent])
def test_a_long_run_hands_the_accountant_one_pair_per_run(
    combinator: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # before, the map listed every child's pair and profile (10⁶ PrivacyLoss objects hashed one by one for
    # a training run: 53 s against dp_accounting's 2.2 s at 10⁶ steps)
    step = _step(1.0, 0.01)
    run = combinator(*[step] * 5000, output_measure=dp.ApproxDP(), delta=1e-5)
    real = PrivacyLoss.compose.__func__  # type: ignore[attr-defined]
    sizes: list[int] = []

    def counted(cls: type[PrivacyLoss], parts: Any) -> PrivacyLoss:
        parts = list(parts)
        sizes.append(len(parts))
        return real(cls, parts)  # type: ignore[no-any-return]

    monkeypatch.setattr(PrivacyLoss, "compose", classmethod(counted))
    eps, delta = run.map(1)
    assert sizes and max(sizes) <= 2
    monkeypatch.undo()
    pair = step.privacy_loss(1)
    assert eps == PrivacyLoss.compose([pair] * 5000).epsilon(Fraction(1, 10**5))
    assert delta == Fraction(1, 10**5)


@pytest.mark.parametrize("combinator", [dp.make_sequential, dp.make_concurrent])
def test_runs_read_the_numbers_of_the_children_one_by_one(combinator: Any) -> None:
    a, b = _step(1.0, 0.01), _step(2.0, 0.02)
    children = [a] * 30 + [b] * 20 + [a] * 5 + [b]
    pairs = [c.privacy_loss(1) for c in children]
    # ProfileDP: the profile of the children's profiles composed one by one
    profile = combinator(*children).map(1)
    one_by_one = [c.map(1).with_loss(p) for c, p in zip(children, pairs, strict=True)]
    assert profile == PrivacyProfile.compose(one_by_one)
    # ApproxDP: the least of the candidates, each as for the listed children
    run = combinator(*children, output_measure=dp.ApproxDP(), delta=1e-6)
    found = {name.split(" —")[0]: value for name, value in run.node.alternatives(1)}
    d = Fraction(1, 10**6)
    assert found["pld"] == (PrivacyLoss.compose(pairs).epsilon(d), d)
    assert found["profile"] == (profile.epsilon(d), d)
    assert run.map(1) == min(found.values())
    assert run.privacy_loss(1) == PrivacyLoss.compose(pairs)
    # pure children: every theorem reads the expanded list (basic: the ε add up exactly)
    lap, lap3 = _laplace(10.0), _laplace(3.0)
    pure = combinator(*([lap] * 7 + [lap3] * 2 + [lap]))
    assert pure.map(1) == 8 * Fraction(1, 10) + 2 * lap3.map(1)


def test_a_measure_mismatch_names_the_child_not_the_run() -> None:
    lap, gauss = _laplace(10.0), COUNTS >> dp.m.make_gaussian(dp.AtomDomain(int), ABS, 5.0)
    with pytest.raises(dp.errors.UnsupportedComposition, match="but child 4 is ZCDP"):
        dp.make_sequential(*[lap] * 4, gauss)


def test_errors_name_the_child_in_a_long_list() -> None:
    lap = _laplace(10.0)
    other = dp.m.make_laplace(dp.AtomDomain(float), ABS, 1.0)
    with pytest.raises(dp.errors.InvalidParameter, match=r"measurements\[5\]=3 is not a Measurement"):
        dp.make_sequential(*[lap] * 5, 3, 3, lap)  # type: ignore[arg-type]
    with pytest.raises(dp.errors.DomainMismatch, match="but child 3 "):
        dp.make_concurrent(*[lap] * 3, other, lap)
    with pytest.raises(dp.errors.InvalidParameter, match="at least one measurement"):
        dp.make_sequential()
