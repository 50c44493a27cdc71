"""Per-step budgets given as dominating pairs, for the adaptive compositors.

A pair budget declares, before the interaction starts, the dominating pair (:class:`PrivacyLoss`) that each
step's mechanism must stay within; the analyst then chooses every query adaptively (DP-SGD: θₜ from the
earlier outputs, the noise and sampling fixed in advance). A query is admitted iff its own pair at ``d_in``
is *dominated* by the declared one (:func:`domination_gap`), and the composite is accounted by the PLD of
the declared pairs.

**Domination.** A pair (P, Q) is dominated by (P′, Q′), written (P, Q) ≼ (P′, Q′), when
H_γ(P ‖ Q) ≤ H_γ(P′ ‖ Q′) for every γ ≥ 0, H_γ(A ‖ B) = sup_S A(S) − γB(S) the hockey-stick divergence.
Equivalently T(P, Q) ≥ T(P′, Q′) pointwise (trade-off functions; Dong–Roth–Su 2022 Prop. 2.12), and by
Blackwell's theorem (Dong–Roth–Su 2022 Thm 2.10) there is one Markov kernel K with K(P′) = P and
K(Q′) = Q. So if (P, Q) dominates a mechanism M (Zhu–Dong–Wang 2022 Def. 7: H_γ(M(D) ‖ M(D′)) ≤
H_γ(P ‖ Q) for all neighbours and γ ≥ 0), so does every (P′, Q′) ≽ (P, Q): the relation is transitive, and
an admitted query is dominated by its declared pair. Then the adaptive composition of the admitted
queries is dominated by the product of the declared pairs (Zhu–Dong–Wang 2022 Thm 10: each step's pair
may be any fixed pair that dominates every mechanism the analyst may choose at that step; concurrently,
the same product bounds it: Vadhan–Zhang 2023 Thm 1.3, as T(P′ᵢ, Q′ᵢ)-DP interactive mechanisms compose
to ⊗ᵢT(P′ᵢ, Q′ᵢ) = T(∏P′ᵢ, ∏Q′ᵢ)).
"""

from __future__ import annotations

import functools
import itertools
from collections import deque
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from dpcompose.accounting import PrivacyLoss, format_up
from dpcompose.combinators._map_errors import map_errors
from dpcompose.combinators._policy import child_losses
from dpcompose.core import Measurement
from dpcompose.errors import InvalidParameter

__all__ = ["PairSchedule", "domination_gap", "offered_pair"]


_NOISE = ("laplace", "gaussian", "discrete_laplace", "discrete_gaussian")
_PURE = ("laplace", "discrete_laplace", "randomized_response")  # pairs of ε-DP mechanisms: their ε below
_MAX_DISTINCT = 256  # the most distinct parts matched between two compositions
_MOST_STEPS = 1 << 44
"""The most steps of one declared pair: the PLD engine composes at most 2**44 copies of one PLD."""


class PairSchedule(Sequence[PrivacyLoss]):
    """The declared pairs of an adaptive compositor, one per step: a tuple of pairs, or one pair repeated
    ``steps`` times (O(1) memory however many steps)."""

    __slots__ = ("_one", "_pairs", "_steps")

    def __init__(self, pairs: tuple[PrivacyLoss, ...] | None, one: PrivacyLoss | None, steps: int) -> None:
        self._pairs, self._one, self._steps = pairs, one, steps

    def __len__(self) -> int:
        return self._steps

    def __getitem__(self, i: Any) -> Any:  # (Sequence's overloads; only int indexes are used)
        if self._one is not None:
            if not 0 <= i < self._steps:
                raise IndexError(i)
            return self._one
        assert self._pairs is not None
        return self._pairs[i]

    def total(self) -> PrivacyLoss:
        """The product of the declared pairs (raises UnsupportedComposition where they mix samplings)."""
        if self._one is not None:
            return self._one.times(self._steps)
        assert self._pairs is not None
        return PrivacyLoss.compose(self._pairs)

    def label(self) -> str:
        if self._one is not None:
            return f"{self._steps} × {self._one.label()}"
        return f"{self._steps} pairs"

    @classmethod
    def read(cls, d_mids: Any, steps: Any) -> PairSchedule | None:
        """The schedule ``d_mids`` declares if it is made of pairs (a PrivacyLoss with ``steps``, or a
        sequence of PrivacyLoss values), else None (``d_mids`` are budgets in the output measure's units).

        Raises:
            InvalidParameter: a single pair without ``steps=``, ``steps`` that is not a positive int or is
                given with a sequence, or a sequence that mixes pairs with other budgets.
        """
        if isinstance(d_mids, PrivacyLoss):
            if steps is None:
                raise InvalidParameter(
                    f"d_mids={d_mids!r} is one step's pair: pass steps=N for N steps of it, or a list of "
                    "pairs, one per step"
                )
            if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
                raise InvalidParameter(f"steps={steps!r} must be a positive int (the number of steps)")
            if steps > _MOST_STEPS:
                raise InvalidParameter(
                    f"steps={steps!r} is more than the {_MOST_STEPS} (2**44) copies of one pair the PLD "
                    "composes: nothing useful is certified beyond (each mass carries a 2**-44 rounding pad)"
                )
            return cls(None, d_mids, steps)
        if steps is not None:
            raise InvalidParameter(
                f"steps={steps!r} goes with a single PrivacyLoss in d_mids (that pair for each of the "
                "steps); with a list of budgets, the list's length is the number of steps"
            )
        if isinstance(d_mids, (str, bytes)) or not isinstance(d_mids, Sequence) or not d_mids:
            return None
        pairs = [isinstance(d, PrivacyLoss) for d in d_mids]
        if not any(pairs):
            return None
        if not all(pairs):
            i = pairs.index(False)
            raise InvalidParameter(
                f"d_mids[{i}]={d_mids[i]!r} is not a PrivacyLoss, but d_mids holds pairs: give every step's "
                "budget as a dominating pair (PrivacyLoss), or every one in the output measure's units"
            )
        return cls(tuple(d_mids), None, len(d_mids))


def offered_pair(query: Measurement[Any, Any, Any, Any], d_in: Any) -> PrivacyLoss | None:
    """The query's own dominating pair at ``d_in``: its ``loss`` hook, else the pair its (ε, δ), pure ε or
    profile guarantee names (:func:`~dpcompose.combinators._policy.child_losses`: RR_(ε,δ) by
    Kairouz–Oh–Viswanath 2015 Thm 2.5), else None.

    Raises:
        InvalidParameter: the query's loss hook or map raised something other than a DPError.
    """
    label = query.node.label()
    with map_errors(label):
        pair = query.loss(d_in) if query.loss is not None else None
        if pair is None:
            d_out = query.privacy_map(d_in)
            d_out = query.output_measure.check_cost(d_out, f"query {label}'s cost at d_in={d_in}")
            pair = child_losses([query.output_measure], [d_out], [None])[0]
    if pair is not None and not isinstance(pair, PrivacyLoss):
        raise InvalidParameter(f"query {label}: its loss hook returned {pair!r}, not a PrivacyLoss")
    return pair


def _identity(p: PrivacyLoss) -> bool:
    """Whether the pair is (R, R) for some R (its H_γ = (1 − γ)₊, the least of any pair's)."""
    a: Any = p.params[0] if p.params else None
    if p.kind in _NOISE or p.kind == "randomized_response":
        return bool(a == 0)
    if p.kind == "approx":
        return bool(a == 0 and p.params[1] == 0)
    if p.kind == "subsampled":
        return bool(a == 0 or _identity(p.parts[0][0]))
    return all(_identity(part) for part, _ in p.parts)


def _pure_epsilon(p: PrivacyLoss) -> Fraction:
    """ε of a pair in ``_PURE``: the ratio P/Q is within e^{±ε} everywhere."""
    a, b = (Fraction(v) for v in p.params)
    return a if p.kind == "randomized_response" else a / b


@functools.lru_cache(maxsize=4096)
def domination_gap(offered: PrivacyLoss, declared: PrivacyLoss) -> str | None:
    """None if ``offered`` ≼ ``declared`` by the rule below, else why not (cached per pair of pairs).

    The rule (each case a proof that H_γ(offered) ≤ H_γ(declared) for every γ ≥ 0; anything else is
    refused — the rule is sufficient, not necessary):

    1. **Equal pairs**, and an **identity** offered pair (P = Q: noise with Δ = 0, ε = 0, rate 0), whose
       H_γ = (1 − γ)₊ ≤ Σ(A − γB)₊ = H_γ(A ‖ B) for any pair (A, B) (as Σ(A − γB) = 1 − γ).
    2. **Gaussian** (Δ, σ) ≼ (Δ′, σ′) iff Δ/σ ≤ Δ′/σ′. Scaling by 1/σ maps the pair to (N(0, 1), N(μ, 1)),
       μ = Δ/σ (a bijection, so H is unchanged). With c = μ/μ′ ∈ [0, 1], x ↦ c·x + √(1 − c²)·Z,
       Z ~ N(0, 1) independent, maps N(0, 1) to N(0, 1) and N(μ′, 1) to N(μ, 1): a post-processing.
    3. **Laplace** (Δ, b) ≼ (Δ′, b′) iff Δ/b ≤ Δ′/b′: scaling gives Laplace(Δ/b, 1), and Laplace(1, b) is
       a post-processing of Laplace(1, b′) for b′ ≤ b (adding W, ``rounded_pair`` in
       ``dpcompose.accounting._loss`` proves it).
    4. **Discrete Laplace** (Δ, t) ≼ (Δ′, t′) iff Δ ≤ Δ′ and t ≥ t′; **discrete Gaussian** (Δ, σ) ≼
       (Δ′, σ′) iff Δ ≤ Δ′ and σ = σ′. Shift first (same noise R on the integers, 0 ≤ Δ ≤ Δ′): R is
       symmetric and log-concave, so the ratio R(x − Δ)/R(x) is non-decreasing in x (monotone likelihood
       ratio). By the Neyman–Pearson lemma the threshold test at level α under the null R (reject x > s,
       randomised at x = s) is most powerful against *every* shift Δ > 0 — it rejects where the ratio
       exceeds its value at s and accepts where it is below — and it does not depend on Δ. Its type II
       error E[1 − φ(X + Δ)], X ~ R, is non-increasing in Δ since 1 − φ is non-increasing; so
       T(R, R(· − Δ)) ≥ T(R, R(· − Δ′)), and by reflection x ↦ Δ − x the same holds in the other order.
       Then the scale of the discrete Laplace: scale t is scale t′ ≤ t plus an independent integer W
       (``rounded_pair`` again), a post-processing that keeps the shift. The discrete Gaussian has no such
       step, and a larger σ is **not** dominated in general: with Δ = 1, δ(ε = 3) is 0.0587 at σ = 0.43
       but 0.0903 at σ = 0.48 (exact sums, and the PLD engine agrees:
       ``PrivacyLoss.discrete_gaussian(1, 0.48).delta(3)``); so only equal σ is admitted.
    5. **Randomized response** (ε, k) ≼ (ε′, k′) iff ε ≤ ε′ and k ≥ k′: for γ ≥ 1,
       H_γ = (e^ε − γ)₊/(e^ε + k − 1), non-decreasing in ε (derivative (k − 1 + γ)/(e^ε + k − 1)² where
       positive) and non-increasing in k; the pair is its own reverse, so for γ < 1,
       H_γ = 1 − γ + γ·H_{1/γ}, ordered the same way.
    6. **(ε, δ) pairs** RR_(ε,δ) ≼ RR_(ε′,δ′) iff ε ≤ ε′ and δ ≤ δ′ (for γ ≥ 1,
       H_γ = δ + (1 − δ)(e^ε − γ)₊/(1 + e^ε), non-decreasing in both, and the reverse as in 5); and a
       pure pair (Laplace Δ/b, discrete Laplace Δ/t, randomized response ε) with its ε ≤ ε′: the pair is
       itself an ε-DP mechanism on two inputs, hence a post-processing of RR_(ε,0) that keeps the order
       of its two inputs (Kairouz–Oh–Viswanath 2015 Thm 2.5), and RR_(ε,0) ≼ RR_(ε′,δ′).
    7. **Subsampled** (child, q, sampling) ≼ (child′, q′, sampling′) iff the same sampling, q ≤ q′ and
       child ≼ child′. With K the kernel for child ≼ child′ (Blackwell), mixing is linear, so K maps
       mix′ = (1 − q)Q′ + qP′ to mix and Q′ to Q: both Poisson orders, (mix, Q) and (Q, mix), are
       post-processings of the primed ones by the same K. For q ≤ q′, the kernel "keep the output with
       probability q/q′, else replace it by a fresh draw from Q" maps Q to Q and (1 − q′)Q + q′P to
       (1 − q)Q + qP (both orders). (This is the monotonicity in q used by Zhu–Dong–Wang 2022 Thm 11.)
       Without replacement the pair is the symmetric (P*, Q*) of ``_pld/subsample/cells.py``, whose
       H_γ equals H_γ(mix ‖ Q) for γ ≥ 1 and 1 − γ + γ·H_{1/γ}(mix ‖ Q) below: a non-decreasing
       function of the (mix, Q) divergences, ordered as just shown. The same sampling is required: the
       two samplings hold for different neighbouring relations.
    8. **Compositions**: the offered parts (with their counts) can be matched one to one into the
       declared parts, each offered part dominated by its match (a bipartite matching, found by maximum
       flow). The product of the per-part kernels maps the matched declared product to the offered one,
       and dropping the unmatched declared parts is a post-processing (a marginal). A single pair is a
       composition of one part.

    Different families are refused, except an ε-DP pair under an (ε′, δ′) budget (6).

    Examples:
        >>> from dpcompose.accounting import PrivacyLoss, format_up
        >>> domination_gap(PrivacyLoss.gaussian(1, 2), PrivacyLoss.gaussian(1, 1)) is None
        True
        >>> domination_gap(PrivacyLoss.discrete_gaussian(1, 2), PrivacyLoss.discrete_gaussian(1, 1))
        'a discrete Gaussian pair is admitted only at the declared σ (a larger σ is not always dominated)'
    """
    if offered == declared or _identity(offered):
        return None
    if offered.kind == "composed" or declared.kind == "composed":
        return _match_parts(offered, declared)
    if declared.kind == "approx":
        eps, delta = (Fraction(v) for v in declared.params)
        if offered.kind == "approx":
            return _approx_gap(offered, eps, delta)
        if offered.kind in _PURE:
            e = _pure_epsilon(offered)
            return None if e <= eps else f"its ε = {_show(e)} is larger than the declared ε = {_show(eps)}"
        return f"a {offered.kind} pair is not one of the ε-DP kinds an (ε, δ) pair is compared with"
    if offered.kind != declared.kind:
        return f"a {offered.kind} pair is not compared with a {declared.kind} pair (different families)"
    if offered.kind == "subsampled":
        (q, sampling), (q2, sampling2) = offered.params, declared.params
        if sampling != sampling2:
            return f"it samples {sampling}, the declared pair {sampling2} (different neighbouring relations)"
        if Fraction(q) > Fraction(q2):
            return f"its sampling rate q = {_show(q)} is larger than the declared q = {_show(q2)}"
        inner = domination_gap(offered.parts[0][0], declared.parts[0][0])
        return None if inner is None else f"its subsampled mechanism is not dominated: {inner}"
    a, b = (Fraction(v) for v in offered.params)
    a2, b2 = (Fraction(v) for v in declared.params)
    if offered.kind in ("gaussian", "laplace"):
        if a * b2 <= a2 * b:
            return None
        return f"its Δ/scale = {_show(a / b)} is larger than the declared Δ/scale = {_show(a2 / b2)}"
    if offered.kind == "discrete_laplace":
        if a > a2:
            return f"its Δ = {_show(a)} is larger than the declared Δ = {_show(a2)}"
        return None if b >= b2 else f"its scale t = {_show(b)} is smaller than the declared t = {_show(b2)}"
    if offered.kind == "discrete_gaussian":
        if b != b2:
            return (
                "a discrete Gaussian pair is admitted only at the declared σ (a larger σ is not always "
                "dominated)"
            )
        return None if a <= a2 else f"its Δ = {_show(a)} is larger than the declared Δ = {_show(a2)}"
    if offered.kind == "randomized_response":
        if a > a2:
            return f"its ε = {_show(a)} is larger than the declared ε = {_show(a2)}"
        return None if b >= b2 else f"its k = {_show(b)} is smaller than the declared k = {_show(b2)}"
    assert offered.kind == "approx"
    return _approx_gap(offered, a2, b2)


def _show(x: Any) -> str:
    """A parameter in a refusal message: the shortest double that reads back as it (exact values that
    differ only past the 17th digit may print alike), or, beyond the double range, its decimal rounded up
    (:func:`~dpcompose.accounting.format_up`: a refusal must not end in an ``OverflowError``)."""
    try:
        return repr(float(x))
    except OverflowError:
        return format_up(x)


def _approx_gap(offered: PrivacyLoss, eps: Fraction, delta: Fraction) -> str | None:
    """Case 6 for two (ε, δ) pairs: which of ε and δ is larger, with both values, or None."""
    a, b = (Fraction(v) for v in offered.params)
    if a > eps:
        return f"its ε = {_show(a)} is larger than the declared ε = {_show(eps)}"
    return None if b <= delta else f"its δ = {_show(b)} is larger than the declared δ = {_show(delta)}"


def _match_parts(offered: PrivacyLoss, declared: PrivacyLoss) -> str | None:
    """Case 8 of :func:`domination_gap`: a maximum flow from the offered parts (capacity: their counts)
    through the dominated-by edges into the declared parts (capacity: their counts)."""
    left = offered.parts if offered.kind == "composed" else ((offered, 1),)
    right = declared.parts if declared.kind == "composed" else ((declared, 1),)
    if len(left) > _MAX_DISTINCT or len(right) > _MAX_DISTINCT:
        return f"more than {_MAX_DISTINCT} distinct parts to match"
    need = sum(n for _, n in left)
    if need > sum(n for _, n in right):
        return "it composes more mechanisms than the declared pair"
    edges = [[j for j, (d, _) in enumerate(right) if domination_gap(o, d) is None] for o, _ in left]
    # residual capacities: source -> i (left counts), i -> j (unbounded), j -> sink (right counts)
    src_cap = [n for _, n in left]
    sink_cap = [n for _, n in right]
    flow: dict[tuple[int, int], int] = {}
    total = 0
    while True:  # Edmonds–Karp: BFS for a shortest augmenting path
        prev: dict[tuple[str, int], tuple[str, int] | None] = {}
        queue: deque[tuple[str, int]] = deque()
        for i, c in enumerate(src_cap):
            if c > 0:
                prev[("L", i)] = None
                queue.append(("L", i))
        end: tuple[str, int] | None = None
        while queue and end is None:
            side, k = queue.popleft()
            if side == "L":
                for j in edges[k]:
                    if ("R", j) not in prev:
                        prev[("R", j)] = (side, k)
                        if sink_cap[j] > 0:
                            end = ("R", j)
                            break
                        queue.append(("R", j))
            else:
                for i in range(len(left)):
                    if flow.get((i, k), 0) > 0 and ("L", i) not in prev:
                        prev[("L", i)] = (side, k)
                        queue.append(("L", i))
        if end is None:
            break
        path: list[tuple[str, int]] = []
        node: tuple[str, int] | None = end
        while node is not None:
            path.append(node)
            node = prev[node]
        path.reverse()  # L, R, L, R, ..., R
        amount = min(src_cap[path[0][1]], sink_cap[path[-1][1]])
        for x, y in itertools.pairwise(path):
            if x[0] == "R":  # a backward edge R -> L undoes flow on (L, R)
                amount = min(amount, flow[(y[1], x[1])])
        src_cap[path[0][1]] -= amount
        sink_cap[path[-1][1]] -= amount
        for x, y in itertools.pairwise(path):
            if x[0] == "L":
                flow[(x[1], y[1])] = flow.get((x[1], y[1]), 0) + amount
            else:
                flow[(y[1], x[1])] -= amount
        total += amount
    if total == need:
        return None
    return _unmatched(left, right, edges, src_cap)


def _unmatched(
    left: Sequence[tuple[PrivacyLoss, int]],
    right: Sequence[tuple[PrivacyLoss, int]],
    edges: list[list[int]],
    src_cap: list[int],
) -> str:
    """Why the matching of case 8 failed, naming an offered part left unmatched: either no declared part
    dominates it (each declared part of its family named with the field that fails), or those that do are
    taken by other parts (the counts)."""
    short = [i for i, c in enumerate(src_cap) if c > 0]
    i = next((i for i in short if not edges[i]), short[0])
    part, count = left[i]
    if not edges[i]:
        same = [d for d, _ in right if d.kind == part.kind] or [d for d, _ in right]
        why = "; ".join(f"against {d.label()}: {domination_gap(part, d)}" for d in same[:3])
        more = f"; and {len(same) - 3} more" if len(same) > 3 else ""
        return f"its part {part.label()} is dominated by no declared part ({why}{more})"
    doms = ", ".join(f"{right[j][1]} × {right[j][0].label()}" for j in edges[i][:3])
    return (
        f"its part {part.label()} (× {count}, {src_cap[i]} of them unmatched) is dominated only by declared "
        f"parts ({doms}) that the other parts already take: it composes more of them than declared"
    )
