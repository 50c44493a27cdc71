"""Basic (sequential) composition and its relatives: exact sums.

Source: Dwork, McSherry, Nissim, Smith 2006 (pure); Dwork, Kenthapadi, McSherry, Mironov, Naor 2006
(approximate); Bun–Steinke 2016 Lemma 2.3 (zCDP).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from dpcompose._validation import check_finite_nonnegative, check_probability, check_same_length
from dpcompose.accounting._exact import Number, exact

__all__ = ["basic", "zcdp_compose"]


def basic(epsilons: Sequence[Number], deltas: Sequence[Number] | None = None) -> tuple[Fraction, Fraction]:
    """Basic composition: (Σεᵢ, Σδᵢ), exact.

    Source: Dwork, McSherry, Nissim, Smith 2006 (pure ε); Dwork, Kenthapadi, McSherry, Mironov, Naor 2006
    (approximate (ε, δ)).

    Examples:
        >>> basic([0.5, 0.25], [1e-6, 0])
        (Fraction(3, 4), Fraction(4722366482869645, 4722366482869645213696))
    """
    eps = [exact(check_finite_nonnegative(e, "epsilons"), "epsilons") for e in epsilons]
    if deltas is None:
        return sum(eps, Fraction(0)), Fraction(0)
    check_same_length(list(epsilons), "epsilons", list(deltas), "deltas")
    dels = [exact(check_probability(d, "deltas"), "deltas") for d in deltas]
    return sum(eps, Fraction(0)), sum(dels, Fraction(0))


def zcdp_compose(rhos: Sequence[Number]) -> Fraction:
    """zCDP composition: Σρᵢ, exact.

    Source: Bun–Steinke 2016, Lemma 2.3.

    Examples:
        >>> zcdp_compose([0.5, 0.25])
        Fraction(3, 4)
    """
    return sum((exact(check_finite_nonnegative(r, "rhos"), "rhos") for r in rhos), Fraction(0))
