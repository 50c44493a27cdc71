"""make_quantile_score_candidates and make_private_quantile (issue 15): brute-force stability on all small
neighbouring datasets, the scores against a direct count, and the end-to-end privacy of the quantile."""

from __future__ import annotations

import itertools
from collections import Counter
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpcompose as dp

SYM = dp.SymmetricDistance()
CHG = dp.ChangeOneDistance()
INTS = dp.VectorDomain(dp.AtomDomain(int))
FLOATS = dp.VectorDomain(dp.AtomDomain(float))


def direct_scores(data: list[float], candidates: list[float], alpha: Fraction) -> list[int]:
    a, b = alpha.numerator, alpha.denominator
    return [abs((b - a) * sum(x < c for x in data) - a * sum(x > c for x in data)) for c in candidates]


def _datasets(values: list[int], max_len: int) -> list[tuple[int, ...]]:
    return [d for n in range(max_len + 1) for d in itertools.product(values, repeat=n)]


@pytest.mark.parametrize("alpha", [Fraction(1, 2), Fraction(0), Fraction(1), Fraction(1, 3), Fraction(7, 10)])
def test_stability_by_enumeration(alpha: Fraction) -> None:
    """Every dataset over {0,..,3} of length <= 3 and every neighbour (add/remove one; change one): the
    L∞ distance of the score vectors is at most map(1), and the bound is attained."""
    cands = [0, 1, 2, 3]
    sym = dp.t.make_quantile_score_candidates(INTS, SYM, cands, alpha)
    chg = dp.t.make_quantile_score_candidates(INTS, CHG, cands, alpha)
    worst_sym, worst_chg = 0, 0
    for data in _datasets([0, 1, 2, 3], 3):
        s = sym(list(data))
        for v in range(4):  # add one record
            worst_sym = max(worst_sym, int(np.max(np.abs(s - sym([*data, v])))))
        for i in range(len(data)):
            for v in range(4):  # change one record
                changed = [*data[:i], v, *data[i + 1 :]]
                worst_chg = max(worst_chg, int(np.max(np.abs(s - chg(changed)))))
    assert worst_sym == sym.map(1)
    assert worst_chg == chg.map(1)
    assert sym.map(2) == 2 * sym.map(1)


@given(
    st.lists(st.floats(-10, 10, allow_nan=False), max_size=30),
    st.lists(st.floats(-10, 10, allow_nan=False), min_size=1, max_size=6, unique=True),
    st.sampled_from([Fraction(1, 2), Fraction(1, 10), Fraction(9, 10), Fraction(0), Fraction(1)]),
)
def test_scores_match_a_direct_count(data: list[float], cands: list[float], alpha: Fraction) -> None:
    cands = sorted(set(cands))
    t = dp.t.make_quantile_score_candidates(FLOATS, SYM, cands, alpha)
    assert t(data).tolist() == direct_scores(data, cands, alpha)
    assert t(np.asarray(data, dtype=np.float64)).tolist() == direct_scores(data, cands, alpha)


def test_huge_ints_and_alpha_reading() -> None:
    t = dp.t.make_quantile_score_candidates(INTS, SYM, [-5, 0, 5], 0.3)  # 0.3 is read as 3/10
    data = [-(2**100), 2**70, 0, 2**63, -(2**63) - 1]
    assert t(data).tolist() == direct_scores(data, [-5, 0, 5], Fraction(3, 10))
    assert t.map(1) == 7
    assert dp.t.make_quantile_score_candidates(INTS, CHG, [0], Fraction(3, 10)).map(1) == 10


def test_refusals() -> None:
    with pytest.raises(dp.InvalidParameter, match="strictly increasing"):
        dp.t.make_quantile_score_candidates(INTS, SYM, [1, 1], 0.5)
    with pytest.raises(dp.InvalidParameter, match="alpha"):
        dp.t.make_quantile_score_candidates(INTS, SYM, [1], 1.5)
    with pytest.raises(dp.InvalidParameter, match="alpha"):
        dp.t.make_quantile_score_candidates(INTS, SYM, [1], Fraction(1, 3**20))
    with pytest.raises(dp.InvalidParameter, match=r"candidates\[0\]"):
        dp.t.make_quantile_score_candidates(INTS, SYM, [2**61], 0.5)
    with pytest.raises(dp.InvalidParameter, match=r"candidates\[1\]"):
        dp.t.make_quantile_score_candidates(INTS, SYM, [1, 2.5], 0.5)
    with pytest.raises(dp.InvalidParameter, match="candidates"):
        dp.t.make_quantile_score_candidates(INTS, SYM, [], 0.5)
    with pytest.raises(dp.DomainMismatch, match="NaN"):
        dp.t.make_quantile_score_candidates(dp.VectorDomain(dp.AtomDomain(float, nan=True)), SYM, [0.0], 0.5)
    with pytest.raises(dp.DomainMismatch, match="input_metric"):
        dp.t.make_quantile_score_candidates(INTS, dp.L1Distance(), [0], 0.5)
    with pytest.raises(dp.InvalidParameter, match="scale"):
        dp.m.make_private_quantile(INTS, SYM, [0], Fraction(1, 2**20), 2.0**40)


def _quantile_distribution(
    data: list[int], cands: list[int], alpha: Fraction, scale: Fraction
) -> list[object]:
    from tests.measurements.test_noisy_max import argmax_distribution

    scores = direct_scores(data, cands, alpha)
    return argmax_distribution([-s for s in scores], scale * alpha.denominator)


@pytest.mark.parametrize("alpha", [Fraction(1, 2), Fraction(1, 4)])
def test_private_quantile_privacy_by_exact_distribution(alpha: Fraction) -> None:
    """All datasets over {0, 1, 2} of length <= 3 and their add/remove neighbours: the exact loss of the
    released candidate never exceeds the map."""
    cands = [0, 1, 2]
    scale = Fraction(1)
    m = dp.m.make_private_quantile(INTS, SYM, cands, alpha, scale)
    eps = m.map(1)
    assert eps == 2 * max(alpha, 1 - alpha) / scale
    worst = mpmath.mpf(0)
    for data in _datasets([0, 1, 2], 3):
        p = _quantile_distribution(list(data), cands, alpha, scale)
        for v in range(3):
            p2 = _quantile_distribution([*data, v], cands, alpha, scale)
            worst = max(worst, *(abs(mpmath.log(a) - mpmath.log(b)) for a, b in zip(p, p2, strict=True)))
    assert worst <= mpmath.mpf(eps.numerator) / eps.denominator
    assert worst > mpmath.mpf(eps.numerator) / eps.denominator / 4


def test_private_median_releases_a_candidate() -> None:
    m = dp.m.make_private_quantile(
        FLOATS, CHG, [0.0, 2.5, 5.0, 7.5, 10.0], 0.5, scale=1.0, rng=np.random.default_rng(3)
    )
    data = np.random.default_rng(0).normal(5.0, 1.0, size=2_000)
    out = Counter(m(data) for _ in range(20))
    assert set(out) == {5.0}
    assert isinstance(m(data), float)
    assert m.map(1) == 2
