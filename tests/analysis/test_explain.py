"""dp.explain shows every privacy number rounded up (issue 11, D.13)."""

from __future__ import annotations

import re
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpcompose as dp

FLOATS = dp.AtomDomain(float)
ABS = dp.AbsoluteDistance()
NUMBER = re.compile(r"\d+(\.\d+)?(e[+-]\d{2,})?")


def test_cost_just_above_one_is_not_shown_as_one() -> None:
    """Was 'ε=1' for a cost of 1 + 6e-10 that check(1, 1.0) rejects."""
    lap = dp.m.make_laplace(FLOATS, ABS, scale=float(1 / (1 + Fraction(6, 10**10))))
    assert not lap.check(1, 1.0)
    row = dp.explain(lap, 1).rows[0]
    assert row.cost == "ε=1.00001"
    assert "ε=1 " not in str(dp.explain(lap, 1)) + " "


def test_d_in_and_stability_rounded_up() -> None:
    lap = dp.m.make_laplace(FLOATS, ABS, scale=1.0)
    assert dp.explain(lap, Fraction(1, 3)).rows[0].d_in == "0.333334"
    clamp = dp.t.make_clamp(dp.VectorDomain(FLOATS), dp.SymmetricDistance(), (0.0, 0.1))
    total = dp.t.make_sum(clamp.output_domain, clamp.output_metric, max_size=10)
    stability = total.map(1)
    assert stability > Fraction(1, 10)  # 0.1 as a float, plus rounding slack
    shown = dp.explain(total, 1).rows[0].cost
    assert shown.startswith("d_out=") and Fraction(shown.removeprefix("d_out=")) >= stability


@pytest.mark.slow  # (thorough: the README test command stays under 3 minutes)
@given(st.floats(min_value=1e-2, max_value=1e6))
def test_every_cost_cell_is_at_least_the_cost(scale: float) -> None:
    lap = dp.m.make_laplace(FLOATS, ABS, scale=scale)
    pure = dp.make_sequential(lap, lap)
    zcdp = dp.make_sequential(dp.make_pure_to_zcdp(lap), dp.m.make_gaussian(FLOATS, ABS, scale=scale))
    approx = dp.make_sequential(*[lap] * 3, output_measure=dp.ApproxDP(), delta=1e-6)
    for node in (pure, zcdp, approx):
        explained = dp.explain(node, 1)
        for row in explained.rows:
            shown = [Fraction(x.group(0)) for x in NUMBER.finditer(row.cost)]
            assert shown
        top = [Fraction(x.group(0)) for x in NUMBER.finditer(explained.rows[0].cost)]
        cost = node.map(1)
        assert top[0] >= (cost if isinstance(cost, Fraction) else cost[0])


def test_explain_and_queryables_render_as_escaped_html() -> None:
    import dpcompose as dp

    ints = dp.VectorDomain(dp.AtomDomain(int))
    size = dp.make_user_transformation(
        ints,
        dp.AtomDomain(int),
        dp.SymmetricDistance(),
        dp.AbsoluteDistance(),
        len,
        lambda d: d,
        trusted=True,
        name="<size & co>",
    )
    m = size >> dp.m.make_laplace(dp.AtomDomain(int), dp.AbsoluteDistance(), scale=2.0)
    page = dp.explain(m, 1)._repr_html_()
    assert page.startswith("<table>") and page.count("<tr>") == 1 + len(dp.explain(m, 1).rows)
    assert "&lt;size &amp; co&gt; [UNVERIFIED]" in page and "<size" not in page
    q = dp.m.make_sparse_vector(ints, dp.SymmetricDistance(), threshold=1.0, scale=1.0, max_positive=1)([1])
    assert (
        q._repr_html_()
        == "<code>&lt;sparse vector: open, 0 answered; 0 of 1 positive answers used&gt;</code>"
    )


def test_found_by_review_only_the_exactly_least_candidate_is_marked_chosen() -> None:
    # basic and advanced give ε = 0.3, optimal 0.29999999…: all three show as 0.3, and all three were
    # marked chosen (the marks compared the shown strings)
    ints = dp.VectorDomain(dp.AtomDomain(int))
    count = dp.t.make_count(ints, dp.SymmetricDistance())
    kids = [count >> dp.m.make_laplace(dp.AtomDomain(int), dp.AbsoluteDistance(), 10) for _ in range(3)]
    m = dp.make_sequential(*kids, output_measure=dp.ApproxDP(), delta=1e-9)
    row = dp.explain(m, 1).rows[0]
    marked = [name.split(" —")[0] for i, (name, _) in enumerate(row.runners_up) if row.is_chosen(i)]
    assert marked == ["optimal"]
    text = str(dp.explain(m, 1))
    assert text.count("· chosen") == 1
