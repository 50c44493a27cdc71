"""Privacy amplification by subsampling: run a measurement on a random subsample of the dataset.

Two samplers, each paired with the neighbouring relation its theorem is proven for (Balle, Barthe,
Gaboardi 2018, "Privacy amplification by subsampling: tight analyses via couplings and divergences",
NeurIPS; Table 1):

* **Poisson** (``method="poisson"``): every record is kept independently with probability ``q = rate``.
  Neighbours: add/remove one record (``SymmetricDistance``). If the child is (ε, δ)-DP under add/remove,
  the subsampled mechanism is ``(log(1 + q(e^ε − 1)), qδ)``-DP under add/remove (BBG 2018 Thm 8 for the
  removal direction; the addition direction gives the smaller ``−log(1 + q(e^{−ε} − 1))`` for ε with a δ
  of at most ``qδ``, see Steinke 2022, "Composition of differential privacy & privacy amplification by
  subsampling", arXiv:2210.00597, the section on Poisson subsampling).
* **Without replacement** (``method="without_replacement"``): a uniformly random subset of exactly
  ``m = ⌊rate·n⌋`` of the ``n`` records (``n`` public: a known-size dataset). Neighbours: substitute one
  record (``ChangeOneDistance``). If the child is (ε, δ)-DP under substitution on datasets of size ``m``,
  the subsampled mechanism is ``(log(1 + (m/n)(e^ε − 1)), (m/n)δ)``-DP under substitution (BBG 2018 Thm 9).

Where the child reports a dominating pair, the result reports the subsampled pair too (Zhu–Dong–Wang 2022,
Thm 11 for Poisson sampling, Prop. 30 without replacement), so compositions are accounted by its privacy
loss distribution; a zCDP child with a pair (the Gaussian mechanism: DP-SGD) gives a ``ProfileDP`` result,
and a zCDP or Rényi child without one a ``RenyiDP`` result (its subsampled Rényi curve, Poisson only).

Examples:
    >>> import dpcompose as dp
    >>> import numpy as np
    >>> ints = dp.VectorDomain(dp.AtomDomain(int))
    >>> count = dp.t.make_count(ints, dp.SymmetricDistance()) >> dp.m.make_discrete_laplace(
    ...     dp.AtomDomain(int), dp.AbsoluteDistance(), scale=1
    ... )
    >>> sub = dp.make_subsample(count, rate=0.1, rng=np.random.default_rng(0))
    >>> float(sub.map(1))  # log(1 + 0.1·(e − 1)), rounded up
    0.158565078740...
    >>> isinstance(sub(np.arange(1000)), int)
    True
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpcompose._validation import check_finite, check_positive_int, check_str
from dpcompose.accounting import PrivacyLoss, PrivacyProfile, subsampled_renyi
from dpcompose.accounting._basic import group
from dpcompose.accounting._exact import decimal, exact, exp_up, expm1_up, log1p_up, log_up
from dpcompose.accounting._loss import flagged_pair
from dpcompose.accounting._rdp_cache import subsampled_zcdp_at
from dpcompose.core import (
    ZCDP,
    ApproxDP,
    ChangeOneDistance,
    Measurement,
    Metric,
    Node,
    ProfileDP,
    PureDP,
    RenyiCurve,
    RenyiDP,
    SymmetricDistance,
    VectorDomain,
)
from dpcompose.core._metrics import refuse_table_domain
from dpcompose.core._recipe import recorded
from dpcompose.errors import DomainMismatch, InvalidParameter, UnsupportedComposition
from dpcompose.measurements._random import (
    RandomSource,
    caller_or_secure_source,
    uniform_words,
)
from dpcompose.transformations._stats import random_selection

__all__ = ["amplify_epsilon", "make_subsample"]

_METHODS = ("poisson", "without_replacement")


def amplify_epsilon(epsilon: Fraction, q: Fraction) -> Fraction:
    """An upper bound on ``log(1 + q(e^ε − 1))``, the amplified ε, as an exact rational.

    Evaluated as ``log1p(q·expm1(ε))`` (no cancellation for any q or ε), and for ε beyond the float range
    of ``e^ε`` as ``ε + log(q + (1 − q)e^{−ε})`` (the same number:
    ``1 + q(e^ε − 1) = e^ε(q + (1 − q)e^{−ε})``); every irrational step is rounded up
    (:mod:`dpcompose.accounting._exact`). The result is capped at ε, which it never exceeds for ``q <= 1``.

    Source: Balle, Barthe, Gaboardi 2018, Thm 8 and Thm 9 (the formula).

    Examples:
        >>> amplify_epsilon(Fraction(1), Fraction(1, 10)) > Fraction(0.15856)
        True
        >>> amplify_epsilon(Fraction(3), Fraction(1)), amplify_epsilon(Fraction(3), Fraction(0))
        (Fraction(3, 1), Fraction(0, 1))
    """
    if q == 0 or epsilon == 0:
        return Fraction(0)
    if q == 1:
        return epsilon
    grow = expm1_up(epsilon)
    if math.isfinite(grow):
        bound = Fraction(log1p_up(q * Fraction(grow)))
    else:  # e^ε beyond the float range
        inner = q + (1 - q) * Fraction(exp_up(-epsilon))
        bound = epsilon + Fraction(log_up(inner))
    return min(epsilon, bound)


def bernoulli_mask(q: Fraction, n: int, source: RandomSource) -> npt.NDArray[np.bool_]:
    """``n`` independent ``Bernoulli(q)`` draws for a rational ``q``, exactly.

    The byte-wise comparison of a uniform real ``U`` with ``q`` of
    :func:`dpcompose.measurements._sampling.bern_ratio`: with ``f = ⌊256·r/den⌋`` and a random byte ``w``,
    ``w < f`` means ``U < q``, ``w > f`` means ``U > q`` and ``w == f`` asks the same question of the next
    bits with ``r ← 256·r − f·den``. Every record has the same ``q``, so the remainder ``r`` is one exact
    Python integer shared by all undecided records (any denominator, no int64 limit), and each round is
    one vectorised comparison; 255/256 of the undecided records are decided per round.
    """
    keep = np.zeros(n, dtype=np.bool_)
    if q == 1:
        keep[:] = True
        return keep
    r, den = q.numerator, q.denominator
    pending = np.arange(n)
    while pending.size:
        w = uniform_words(source, pending.size, 8)
        shifted = r * 256
        f = shifted // den  # in [0, 255]: r < den
        keep[pending[w < f]] = True
        pending = pending[w == f]
        r = shifted - f * den
    return keep


def uniform_subset(n: int, m: int, source: RandomSource) -> npt.NDArray[np.int64]:
    """The sorted indices of a uniformly random ``m``-subset of ``range(n)``, exactly.

    Each index gets a uniform 62-bit key; the ``m`` smallest keys are taken. Given that all keys are
    distinct (redrawn otherwise: a collision has probability below ``n²/2**63``), their order is a uniformly
    random permutation by symmetry, so the set of the ``m`` smallest is a uniform ``m``-subset.
    """
    if m == 0:
        return np.zeros(0, dtype=np.int64)
    if m == n:
        return np.arange(n, dtype=np.int64)
    while True:
        keys = uniform_words(source, n, 62)
        if np.unique(keys).size == n:
            break
    chosen = np.argpartition(keys, m - 1)[:m]
    chosen.sort()
    return chosen.astype(np.int64)


def _select(data: Any, index: npt.NDArray[np.int64] | npt.NDArray[np.bool_], source: RandomSource) -> Any:
    """The records of ``data`` at ``index`` (a mask or sorted indices), in a uniformly random order (exact:
    :func:`random_selection`): a numpy array stays an array; any other sequence becomes a list.

    The shuffle makes the child's input a function of the sampled *multiset* alone. The dataset metrics
    compare multisets, but a child need not be order-invariant (a float sum's last bits depend on the order
    of its rows: its map is positive at ``d_in = 0``); without the shuffle, a dataset and a reordering of it
    (distance 0) would subsample to different child inputs, while the subsampled map reads 0 at 0 and the
    amplification theorems assume the branches that miss the differing record are identical. With it,
    reordering the data leaves the output's distribution unchanged, and the theorems apply to the child as a
    function of the sampled multiset (its guarantee, which holds for every order, still bounds it)."""
    positions = np.flatnonzero(index) if index.dtype == np.bool_ else index
    positions = positions[random_selection(positions.size, positions.size, source)]
    if isinstance(data, np.ndarray):
        return data[positions]
    return [data[i] for i in positions.tolist()]


def _amplified(measure: Any, one: Any, q: Fraction, k: int) -> Any:
    """The amplified guarantee at distance ``k`` from the child's guarantee ``one`` at one step."""
    if k == 0:
        return measure.zero()
    if isinstance(measure, PureDP):
        return k * amplify_epsilon(Fraction(one), q)
    eps, delta = one
    eps1, delta1 = amplify_epsilon(Fraction(eps), q), q * Fraction(delta)
    if k == 1:
        return eps1, delta1
    return group(eps1, delta1, k)


def _renyi_map(m: Measurement[Any, Any, Any, Any], measure: Any, q: Fraction) -> Callable[[int], RenyiCurve]:
    """The privacy map of a Poisson-subsampled zCDP or Rényi ``m`` without a pair of one mechanism: at one
    record added or removed, the curve α ↦ min(subsampled_renyi(r, q)(α), r(α)) with r the child's curve at
    one step (jρ for ρ-zCDP); nothing at 0; refused beyond one record. Where ``m`` reports a composed pair of
    Gaussian and discrete Gaussian parts only, its output pair is a product of symmetric pairs (a product
    of reflections swaps it), so the removal sum alone is read (``symmetric=True``; the lemma of
    :mod:`dpcompose.accounting._rdp`)."""
    pair = m.privacy_loss(1) if m.loss is not None else None
    symmetric = (
        pair is not None
        and pair.kind == "composed"
        and all(part.kind in ("gaussian", "discrete_gaussian") for part, _ in pair.parts)
    )

    def privacy_map(d_in: int) -> RenyiCurve:
        steps = int(d_in)
        if steps == 0:
            return RenyiDP().zero()
        if steps > 1:
            raise UnsupportedComposition(
                f"make_subsample: d_in={d_in}: the subsampled Rényi curve is for one record added or "
                "removed; no theorem here gives it for several (group privacy of Rényi curves is not "
                "implemented)"
            )
        one = m.map(1)
        if isinstance(measure, ZCDP):
            rho = Fraction(one)

            @functools.cache
            def zcdp_curve(alpha: Any) -> Fraction:  # (the same numbers as below with own(α) = αρ)
                return min(subsampled_zcdp_at(rho, q, alpha, symmetric), Fraction(alpha) * rho)

            return RenyiCurve(zcdp_curve, f"subsampled(ρ={_short(rho)}, q={_short(q)})")
        child = RenyiDP().check_cost(one, f"m's Rényi curve at d_in=1 ({m.node.label()})")
        own = child.__call__
        base = functools.cache(lambda j: own(Fraction(j)))

        @functools.cache
        def curve(alpha: Any) -> Fraction:
            (sub,) = subsampled_renyi(base, q, (alpha,), symmetric=symmetric)
            return min(sub, own(alpha))

        return RenyiCurve(curve, f"subsampled({child.label}, q={_short(q)})")

    return privacy_map


def _short(x: Fraction) -> str:
    return f"{float(x):.6g}"


@recorded
def make_subsample(
    m: Measurement[Any, Any, Any, Any],
    rate: float | Fraction,
    method: str = "poisson",
    *,
    dataset_size: int | None = None,
    rng: np.random.Generator | RandomSource | None = None,
    accounting: str = "auto",
) -> Measurement[Any, Any, Any, Any]:
    """Run ``m`` on a random subsample of the dataset; the privacy map applies amplification by subsampling.

    ``method="poisson"``: each record is kept independently with probability ``q = rate`` (read as its
    exact binary value), drawn with the exact Bernoulli sampler (no floating point; the secure source by
    default). ``m`` must take datasets of any size (``VectorDomain(..., size=None)``) under
    ``SymmetricDistance`` (add/remove); the result has the same domain and metric.

    ``method="without_replacement"``: the dataset has the public size ``n = dataset_size``; a uniformly
    random subset of ``k = ⌊rate·n⌋`` records is taken (in the records' original order; ``rate`` read as
    the decimal it prints as, so ``0.3`` of 10 records is 3), and the map uses ``q = k/n`` exactly. ``m``
    must take datasets of size ``k`` (``size=k`` or ``None``) under ``ChangeOneDistance``
    (substitution; its map is read at 1) or ``SymmetricDistance`` (a substitution is one removal plus one
    addition: its map is read at 2); the result takes ``VectorDomain(element, size=n)`` under
    ``ChangeOneDistance``.

    Privacy map: with ``m``'s guarantee (ε, δ) at one step (one record added/removed, resp. substituted),
    one step of the result costs ``ε' = log(1 + q(e^ε − 1))`` and ``δ' = qδ`` (rounded up:
    :func:`amplify_epsilon`); ``d_in = j > 1`` steps cost group privacy over ``j`` steps of that
    guarantee (``jε'`` for pure DP; ``(jε', δ'·(e^{jε'} − 1)/(e^{ε'} − 1))`` for (ε, δ)). ``m`` is read at
    one step only: no multi-record amplification theorem is used.

    Dominating pair: at one step the result reports (``privacy_loss(1)``) the subsampled pair of ``m``'s
    pair at one step (``PrivacyLoss.subsampled``: for Poisson both orders of add/remove, without
    replacement the symmetric substitution pair); a pure or (ε, δ) ``m`` without a pair of one mechanism
    (none, or a composition's) is read as RR_(ε,δ) of its guarantee first (Kairouz–Oh–Viswanath 2015
    Thm 2.5). Compositions of the result are then accounted by its PLD (far below the amplified ε
    composed). For ``d_in > 1`` there is no pair (no multi-record theorem for subsampled pairs is used).

    Output measure: ``PureDP`` and ``ApproxDP`` ``m`` keep their measure and numbers. Any other ``m``
    (zCDP, Rényi, a profile) is accepted where it reports the dominating pair of one mechanism at one
    step — the scalar Gaussian mechanisms do, and the vector ones (a DP-SGD step ``make_clip_l2 >>
    make_vector_sum >> make_gaussian``) report one pair with a (0, η) flag, which subsamples too
    (``PrivacyLoss.subsampled``) — and the result is a ``ProfileDP`` measurement whose map at
    one step is the profile of the subsampled pair (``PrivacyProfile.from_loss``), at 0 the empty
    profile, and beyond one step refused (no theorem for several records here). A zCDP or Rényi ``m``
    without such a pair (a user's mechanism, a composition) gives, under Poisson sampling, a ``RenyiDP``
    measurement: at one step the subsampled Rényi curve of ``m``'s curve r at one step (r(j) = jρ for
    ρ-zCDP; :func:`~dpcompose.accounting.subsampled_renyi`, capped at r(α)), the removal sum alone where
    ``m`` reports a composed pair of Gaussian parts only (a product of symmetric pairs); at 0 the zero
    curve; beyond one step refused. Without replacement it is refused (no Rényi theorem for it is used
    here), as is any other measure without a pair. Interactive ``m`` is refused (the theorems are for one
    release).

    ``accounting="renyi"`` takes that Rényi route for a zCDP or Rényi ``m`` even where it reports a pair
    (Poisson only): for a Rényi filter, which charges a query its Rényi curve — the vector Gaussian's pair
    carries a (0, η) flag and so has no finite Rényi curve, while the mechanism's own ρ gives one. The
    curve is then the general one of ``m``'s ρ (the removal sum alone only for a composed pair of Gaussian
    parts, as above). ``accounting="auto"`` (the default) is the choice described above.

    Args:
        m: the measurement to run on the subsample (non-interactive; ``PureDP``, ``ApproxDP``, or any
            measure with a dominating pair of one mechanism).
        rate: the sampling rate ``q ∈ [0, 1]`` (Poisson), or the fraction of records kept (without
            replacement: ``⌊rate·n⌋`` records).
        method: ``"poisson"`` or ``"without_replacement"``.
        accounting: ``"auto"``, or ``"renyi"`` for the subsampled Rényi curve of a zCDP or Rényi ``m``
            (Poisson only; see above).
        dataset_size: the public dataset size ``n`` (required for ``"without_replacement"``, refused for
            ``"poisson"``).
        rng: a numpy Generator (or a ``RandomSource`` such as ``SeededSource``) driving the exact sampler
            reproducibly, for experiments only: NOT private. Default: the operating system's secure source.
            (``m`` draws its own noise as it was built.)

    Returns:
        A measurement with ``m``'s output measure (``PureDP``, ``ApproxDP``), else ``ProfileDP`` (a pair of
        one mechanism), else ``RenyiDP`` (a zCDP or Rényi ``m`` without one, Poisson).

    Raises:
        InvalidParameter: ``rate`` outside ``[0, 1]``, an unknown ``method``, a missing or bad
            ``dataset_size``, or ``m`` not a measurement.
        DomainMismatch: ``m``'s input domain or metric does not fit the method (see above).
        UnsupportedComposition: ``m``'s output measure cannot be amplified (not pure, (ε, δ), zCDP or
            Rényi, and no dominating pair of one mechanism; or zCDP/Rényi without a pair under sampling
            without replacement), or ``m`` is interactive.

    Source: Balle, Barthe, Gaboardi 2018 (NeurIPS), Thm 8 (Poisson, add/remove) and Thm 9 (without
    replacement, substitution); Steinke 2022 (arXiv:2210.00597; both directions of add/remove);
    group privacy: Dwork–Roth 2014 Thm 2.2, Vadhan 2017 Lemma 2.2; subsampled dominating pairs:
    Zhu–Dong–Wang 2022 Thm 11 (Poisson) and Prop. 30 (without replacement); subsampled Rényi curves:
    :mod:`dpcompose.accounting._rdp` (removal sum as in Mironov–Talwar–Zhang 2019 Sec. 3.3, the addition
    lemma and the symmetric-base lemma proved there; Zhu–Wang 2019 Thm 6).

    Examples:
        >>> import dpcompose as dp
        >>> import numpy as np
        >>> sized = dp.VectorDomain(dp.AtomDomain(int), size=10)
        >>> count = dp.t.make_count(dp.VectorDomain(dp.AtomDomain(int)), dp.SymmetricDistance())
        >>> noisy = count >> dp.m.make_discrete_laplace(dp.AtomDomain(int), dp.AbsoluteDistance(), 2)
        >>> sub = dp.make_subsample(noisy, 0.5, "without_replacement", dataset_size=100)
        >>> sub.input_domain, sub.input_metric
        (VectorDomain(AtomDomain(int), size=100), ChangeOneDistance())
        >>> sub.map(1) < noisy.map(2)  # ε = 1 for the child at a substitution, amplified with q = 1/2
        True
        >>> sub.privacy_loss(1)
        PrivacyLoss(subsampled(discrete_laplace(Δ=2, t=2), q=0.5, without_replacement))
        >>> gauss = count >> dp.m.make_gaussian(dp.AtomDomain(int), dp.AbsoluteDistance(), 4.0)
        >>> step = dp.make_subsample(gauss, 0.01)  # zCDP with a pair: a privacy profile
        >>> step.output_measure, step.map(1)
        (ProfileDP(), PrivacyProfile(pairs=[subsampled(discrete_gaussian(Δ=1, σ=4), q=0.01, poisson)]))
        >>> two = dp.make_subsample(dp.make_sequential(gauss, gauss), 0.01)  # zCDP, no pair of one mechanism
        >>> two.output_measure, float(two.map(1)(8))  # its subsampled Rényi curve at α = 8
        (RenyiDP(), 5.37...e-05)
    """
    if not isinstance(m, Measurement):
        raise InvalidParameter(f"make_subsample: m={m!r} must be a Measurement")
    rate_v = check_finite(rate, "rate")
    if not 0 <= rate_v <= 1:
        raise InvalidParameter(f"rate={rate!r} must lie in [0, 1]")
    q_rate = exact(rate, "rate")
    check_str(method, "method", _METHODS)
    check_str(accounting, "accounting", ("auto", "renyi"))
    measure = m.output_measure
    if accounting == "renyi" and (method != "poisson" or not isinstance(measure, (ZCDP, RenyiDP))):
        raise UnsupportedComposition(
            f"make_subsample: accounting='renyi' is for a zCDP or Rényi m under Poisson sampling (m is "
            f"{measure!r}, method={method!r}): its subsampled Rényi curve is proven here for that case only"
        )
    if m.interactive:
        raise UnsupportedComposition(
            "make_subsample: m is interactive; the amplification theorems cover one non-interactive release"
        )
    domain, metric = m.input_domain, m.input_metric
    if not isinstance(domain, VectorDomain):
        raise DomainMismatch(
            f"make_subsample: m's input_domain={domain!r} must be a VectorDomain (a dataset)"
        )
    refuse_table_domain(domain, "m.input_domain")  # the sample picks records by position
    source = caller_or_secure_source(rng)

    function: Callable[[Any], Any]
    outer_metric: Metric
    if method == "poisson":
        if dataset_size is not None:
            raise InvalidParameter(
                f"dataset_size={dataset_size!r} is only for method='without_replacement' (Poisson "
                "subsampling takes data of any size)"
            )
        if domain.size is not None:
            raise DomainMismatch(
                f"make_subsample: a Poisson subsample has a random size, so m's input_domain={domain!r} "
                "must have size=None"
            )
        if not isinstance(metric, SymmetricDistance):
            raise DomainMismatch(
                f"make_subsample: Poisson subsampling is amplified for add/remove neighbours: m's "
                f"input_metric={metric!r} must be SymmetricDistance()"
            )
        q, child_d = q_rate, 1
        params: tuple[tuple[str, str], ...] = (("method", method), ("rate", repr(rate)))
        source_text = "Balle–Barthe–Gaboardi 2018 Thm 8; Steinke 2022 (Poisson, add/remove)"
        outer_domain, outer_metric = domain, SymmetricDistance()

        def function(data: Any) -> Any:
            return m.function(_select(data, bernoulli_mask(q, len(data), source), source))

    else:
        if dataset_size is None:
            raise InvalidParameter(
                "dataset_size=None: method='without_replacement' needs the public dataset size n"
            )
        n = check_positive_int(dataset_size, "dataset_size")
        k = math.floor(decimal(rate, "rate") * n)
        if domain.size not in (None, k):
            raise DomainMismatch(
                f"make_subsample: the subsample has ⌊rate·n⌋ = {k} records, but m's input_domain={domain!r}"
            )
        if isinstance(metric, ChangeOneDistance):
            child_d = 1
        elif isinstance(metric, SymmetricDistance):
            child_d = 2
        else:
            raise DomainMismatch(
                f"make_subsample: sampling without replacement is amplified for substitution neighbours: "
                f"m's input_metric={metric!r} must be ChangeOneDistance() or SymmetricDistance()"
            )
        q = Fraction(k, n)
        params = (("method", method), ("sample", f"{k} of {n}"))
        source_text = "Balle–Barthe–Gaboardi 2018 Thm 9 (without replacement, substitution)"
        outer_domain, outer_metric = VectorDomain(domain.element_domain, size=n), ChangeOneDistance()

        def function(data: Any) -> Any:
            return m.function(_select(data, uniform_subset(len(data), k, source), source))

    sampling = "poisson" if method == "poisson" else "without_replacement"
    pair_source = "; pair: Zhu–Dong–Wang 2022 " + ("Thm 11" if method == "poisson" else "Prop. 30")

    @functools.cache  # (m's pair is a function of child_d only; raising calls are not kept)
    def child_pair() -> PrivacyLoss | None:
        """m's dominating pair for one step (one record added/removed, resp. substituted), or, for a pure
        or (ε, δ) m without one (or with a composed one), RR_(ε,δ) of its guarantee at one step (KOV 2015
        Thm 2.5); None where m has neither."""
        pair = m.privacy_loss(child_d) if m.loss is not None else None
        if pair is not None and (pair.kind not in ("composed", "subsampled") or flagged_pair(pair)):
            return pair  # (one mechanism's pair, or one pair with (0, η) flags: PrivacyLoss.subsampled)
        if isinstance(measure, PureDP):
            return PrivacyLoss.approx(m.map(child_d), 0)
        if isinstance(measure, ApproxDP):
            return PrivacyLoss.approx(*m.map(child_d))
        return None

    @functools.cache
    def subsampled_pair() -> PrivacyLoss | None:
        """The subsampled pair of :func:`child_pair` (one step's pair of the result), built once."""
        pair = child_pair()
        return None if pair is None else PrivacyLoss.subsampled(pair, q, sampling)

    if isinstance(measure, (PureDP, ApproxDP)):
        out_measure: Any = measure

        def privacy_map(d_in: int) -> Any:
            steps = int(d_in)
            if steps == 0:
                return measure.zero()
            return _amplified(measure, m.map(child_d), q, steps)

        theorem_source = source_text + pair_source
    elif (accounting == "renyi" or child_pair() is None) and isinstance(measure, (ZCDP, RenyiDP)):
        if method != "poisson":
            raise UnsupportedComposition(
                f"make_subsample: m ({m.node.label()}) is {measure!r} without a dominating pair; its "
                "subsampled Rényi curve is proven here for Poisson subsampling only: use method='poisson', "
                "or a mechanism that reports its pair (a discrete Gaussian vector reports one only when its "
                "noise is at least about 35–55 of its own units, depending on how many coordinates move: "
                "σ ≳ 40 for integer data)"
            )
        out_measure = RenyiDP()
        renyi_map = _renyi_map(m, measure, q)

        def privacy_map(d_in: int) -> Any:
            return renyi_map(d_in)

        theorem_source = (
            "subsampled Rényi curve (accounting._rdp: removal sum as in Mironov–Talwar–Zhang 2019 Sec. 3.3, "
            "addition lemma; Zhu–Wang 2019 Thm 6)"
        )
    else:
        if child_pair() is None:
            raise UnsupportedComposition(
                f"make_subsample: m's output measure {measure!r} has no amplification bound here, and m "
                f"({m.node.label()}) reports no dominating pair of one mechanism at d_in={child_d} "
                "(privacy_loss), whose subsampled pair would give one (a discrete Gaussian vector reports "
                "one only when its noise is at least about 35–55 of its own units, depending on how many "
                "coordinates move (σ ≳ 40 for integer data): "
                "below that the proven pair, vector_gaussian_bound, is too loose and is not offered); "
                "convert m first (e.g. make_zcdp_to_approx) or use a mechanism that reports its pair"
            )
        out_measure = ProfileDP()

        def privacy_map(d_in: int) -> Any:
            steps = int(d_in)
            if steps == 0:
                return PrivacyProfile()
            if steps > 1:
                raise UnsupportedComposition(
                    f"make_subsample: d_in={d_in}: the subsampled pair is for one record "
                    f"({'added or removed' if method == 'poisson' else 'substituted'}); no theorem here "
                    "gives a privacy profile for several records from it (group privacy of a profile is "
                    "not implemented)"
                )
            pair = subsampled_pair()
            assert pair is not None  # checked at construction; m's pair is a function of d_in only
            return PrivacyProfile.from_loss(pair)

        theorem_source = "Zhu–Dong–Wang 2022 " + (
            "Thm 11 (Poisson, add/remove)"
            if method == "poisson"
            else "Prop. 30 (without replacement, substitution)"
        )

    if accounting != "auto":
        params = (*params, ("accounting", accounting))

    def loss(d_in: int) -> PrivacyLoss | None:
        """The subsampled dominating pair at one step; none for several (no multi-record PLD theorem)."""
        steps = int(d_in)
        if steps == 0:
            return PrivacyLoss.approx(0, 0)
        return subsampled_pair() if steps == 1 else None

    def child_inputs(d_in: Any) -> tuple[Any, ...]:
        return (child_d if d_in else 0,)

    return Measurement(
        outer_domain,
        outer_metric,
        out_measure,
        function,
        privacy_map,
        loss=loss,
        node=Node(
            "subsample",
            params=params,
            source=theorem_source,
            theorem="amplification by subsampling",
            children=(m,),
            child_inputs=child_inputs,
        ),
    )
