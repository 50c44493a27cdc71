from __future__ import annotations

from fractions import Fraction

import pytest

import dpcompose as dp

INTS = dp.VectorDomain(dp.AtomDomain(int))
SYM = dp.SymmetricDistance()


def _count_laplace(scale: float) -> dp.Measurement:  # type: ignore[type-arg]
    return dp.t.make_count(INTS, SYM) >> dp.m.make_laplace(
        dp.AtomDomain(int), dp.AbsoluteDistance(), scale=scale
    )


def test_chain_map_is_composition_of_maps() -> None:
    clamp = dp.t.make_clamp(INTS, SYM, (0, 7))
    total = dp.t.make_sum(clamp.output_domain, SYM)
    lap = dp.m.make_laplace(dp.AtomDomain(int), dp.AbsoluteDistance(), scale=3.0)
    chained = clamp >> total >> lap
    for d in range(5):
        assert chained.map(d) == lap.map(total.map(clamp.map(d)))
    assert (clamp >> total).map(2) == total.map(clamp.map(2)) == 14


def test_chain_mismatch_names_both_sides() -> None:
    count = dp.t.make_count(INTS, SYM)
    vec_laplace = dp.m.make_laplace(dp.VectorDomain(dp.AtomDomain(float), size=3), dp.L1Distance(), scale=1.0)
    with pytest.raises(dp.DomainMismatch) as info:
        count >> vec_laplace
    message = str(info.value)
    assert "AtomDomain(int)" in message and "VectorDomain(AtomDomain(float), size=3)" in message
    assert "count" in message and "laplace" in message


def test_measurement_refuses_data_outside_domain_and_runs_nothing() -> None:
    calls = []

    def spy(x: float) -> float:
        calls.append(x)
        return x

    m = dp.make_user_measurement(
        dp.AtomDomain(float, bounds=(0.0, 1.0)),
        dp.AbsoluteDistance(),
        dp.PureDP(),
        spy,
        lambda d: d,
        trusted=True,
    )
    with pytest.raises(dp.DomainMismatch, match="2.0"):
        m(2.0)
    assert calls == []
    assert m(0.5) == 0.5


def test_check_uses_exact_budget() -> None:
    m = _count_laplace(10.0)
    assert m.map(1) == Fraction(1, 10)
    assert m.check(1, 0.1)
    assert not m.check(2, 0.1)


def test_postprocess_keeps_map_and_applies_function() -> None:
    m = _count_laplace(10.0)
    rounded = m >> round
    assert rounded.map(3) == m.map(3)
    assert isinstance(rounded([1, 2, 3]), int)
    assert "postprocess" in repr(rounded)


def test_measurement_rejects_bad_pairs() -> None:
    with pytest.raises(dp.DomainMismatch):
        dp.make_user_measurement(dp.AtomDomain(int), SYM, dp.PureDP(), lambda x: x, lambda d: d, trusted=True)
    with pytest.raises(dp.DomainMismatch, match="Measure"):
        dp.make_user_measurement(INTS, SYM, "PureDP", lambda x: x, lambda d: d, trusted=True)  # type: ignore[arg-type]


def test_rshift_with_non_callable_is_type_error() -> None:
    with pytest.raises(TypeError):
        _count_laplace(1.0) >> 3  # type: ignore[operator]


def test_explain_table_lists_every_node() -> None:
    m = _count_laplace(2.0)
    text = str(dp.explain(m, 3))
    assert "count" in text and "laplace(scale=2.0)" in text and "ε=1.5" in text
    assert len(dp.explain(m, 3).rows) == 3
