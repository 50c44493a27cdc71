"""The exponential mechanism over a vector of scores, sampled exactly, with its bounded-range zCDP map.

The scores become integer grid indices ``r`` exactly as for report noisy max (integer scores as they are,
float scores rounded to the grid of ``make_laplace``, clamped, negated when minimising; see
:class:`~dpcompose.measurements._noisy_max.Scores`), and index ``i`` is released with probability

    ``P[i] = exp(rᵢ/t) / Σⱼ exp(rⱼ/t)``            (t = the scale in grid units)

(McSherry–Talwar 2007; it is report noisy max with Gumbel noise, the "Gumbel-max trick"). No float touches
the draw: with ``uᵢ = max(r) − rᵢ >= 0`` (an integer), a proposal ``I`` uniform on the ``m`` indices is
accepted with probability ``exp(−u_I/t)`` by the exact ``Bernoulli(exp(−γ))`` sampler of
Canonne–Kamath–Steinke 2020 (Algorithm 1, vectorised in :func:`~dpcompose.measurements._sampling.bern_exp`),
and the first accepted proposal is released. Proposals are iid, so the first accepted one has the law
``P[I = i | accepted] = exp(−uᵢ/t)/Σⱼ exp(−uⱼ/t) = P[i]`` above, exactly. The index of the largest
score has ``u = 0`` and is always accepted, so each proposal is accepted with probability at least
``1/m``; proposals are drawn in batches of ``16·m`` (at most ``2**20``), and the first accepted one in
batch order is released.

Privacy. Let ``r, r'`` be the integer indices of two score vectors ``Δ`` apart in L∞ (integer
differences at most ``⌊Δ⌋``; for float scores ``Δ = ⌈d_in/g⌉`` grid units, exactly as for report noisy
max). The privacy loss at output ``i`` is

    ``L(i) = log P[i]/P'[i] = (rᵢ − r'ᵢ)/t + log(Z'/Z)``,   ``Z = Σⱼ exp(rⱼ/t)``,

whose second term does not depend on ``i``. As ``i`` varies, ``(rᵢ − r'ᵢ)/t`` stays in ``[−Δ/t, Δ/t]``,
and in ``[0, Δ/t]`` (or ``[−Δ/t, 0]``) when the scores are monotonic (every coordinate moves the same
way). So ``L`` takes values in an interval of width ``η = 2Δ/t`` (``Δ/t`` monotonic): the mechanism is
η-*bounded range* (the notion of Durfee–Rogers 2019; the exponential mechanism is their example). Then:

* ε-DP with ``ε = η``: an interval of width η holding ``L`` must contain 0 (``Σ P = Σ P' = 1`` forbids
  ``L > 0`` everywhere or ``L < 0`` everywhere), so ``|L| <= η`` (McSherry–Talwar 2007;
  Dwork–Roth 2014 Thm 3.10).
* ``η²/8``-zCDP (Cesar–Rogers 2021, ALT, "Bounding, Concentrating, and Truncating", arXiv:2004.07223:
  η-bounded range implies η²/8-zCDP). The proof is Hoeffding's lemma: ``L`` under ``P`` lies in an
  interval of width η, so ``E[e^{λL}] <= exp(λ·E[L] + λ²η²/8)`` for every real λ; at ``λ = −1``,
  ``E[e^{−L}] = Σ P'[i] = 1`` gives ``E[L] <= η²/8``; hence ``E[e^{(α−1)L}] <= exp((α−1)αη²/8)``, i.e.
  ``D_α(P‖P') <= α·η²/8`` for every ``α > 1`` (Steinke 2024, "Sharp RDP & zCDP from Pure DP",
  differentialprivacy.org, Thm 5 and Cor. 7, gives this proof in full).

Both hold for the law sampled above, which is the exponential mechanism's exactly (the proof is about
the law, and the sampler draws it without approximation); a tie in the scores is two equal weights, not
a tie-break. The zCDP map is a quarter of what ``make_pure_to_zcdp`` (Bun–Steinke 2016 Prop. 1.4, ε²/2)
gives for the same ε. The tests compare it with the Rényi divergences of the exact law, computed by
enumeration.

Time. The release time depends on the scores through the acceptance rate ``Σᵢ exp(−uᵢ/t)/m`` (between
``1/m`` and 1) and the gaps ``uᵢ`` (the Bernoulli rounds): one batch of ``16·m`` proposals holds an
accepted one except with probability at most ``e^−16`` (for ``16·m <= 2**20``), but the work within it
varies with the gaps. Release where the timing cannot be observed if that matters (docs/security.md).

Examples:
    >>> import dpcompose as dp
    >>> scores = dp.VectorDomain(dp.AtomDomain(int), size=3)
    >>> em = dp.m.make_exponential_mechanism(scores, dp.LInfDistance(), scale=2.0, output_measure=dp.ZCDP())
    >>> em.map(1)
    Fraction(1, 8)
    >>> em([10, 500, 20])
    1
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose.accounting import bounded_range_to_zcdp
from dpcompose.core import ZCDP, Domain, Measure, Measurement, Metric, Node, PureDP
from dpcompose.core._recipe import recorded
from dpcompose.errors import InvalidParameter
from dpcompose.measurements._noisy_max import IntArray, Scores, show_param
from dpcompose.measurements._random import RandomSource, caller_or_secure_source, caller_source
from dpcompose.measurements._sampling import bern_exp, uniform_below

__all__ = ["exponential_argmax", "make_exponential_mechanism"]

_PROPOSALS = 16
"""Proposals per candidate in one batch: a batch holds no accepted proposal with probability <= e^-16."""

_MAX_BATCH = 1 << 20
"""The most proposals drawn at once (bounds memory for huge candidate sets)."""

_INT64_GAMMA = 1 << 62
"""``u·d`` below this (and the numerator below ``2**54``) keeps the Bernoulli arithmetic in int64."""

_SOURCE = (
    "McSherry–Talwar 2007 (exponential mechanism); η-bounded range (Durfee–Rogers 2019) ⇒ η²/8-zCDP "
    "(Cesar–Rogers 2021); exact sampling: CKS 2020 Alg. 1 on uniform proposals"
)


def exponential_argmax(r: IntArray, units: Fraction, source: RandomSource | None) -> int:
    """An index ``i`` drawn with probability ``∝ exp(r[i]/units)``, exactly (see the module docstring).

    ``r`` holds integers within ``±(2**60 + 1)``; ``units`` is a positive rational.
    """
    m = int(r.shape[0])
    if m == 1:
        return 0
    src = caller_or_secure_source(source)
    n, d = units.numerator, units.denominator
    gaps = int(r.max()) - r  # exact: |r| <= 2**60 + 1, so every gap fits int64
    small = n < (1 << 54) and int(gaps.max()) * d < _INT64_GAMMA  # else exact Python ints
    num: Any = gaps * d if small else gaps.astype(object) * d
    batch = min(_PROPOSALS * m, _MAX_BATCH)
    while True:
        proposals = uniform_below(m, batch, src)
        accepted = np.flatnonzero(bern_exp(num[proposals], n, src))
        if accepted.size:
            return int(proposals[accepted[0]])


@recorded
def make_exponential_mechanism(
    input_domain: Domain,
    input_metric: Metric,
    scale: float | int | Fraction,
    optimize: str = "max",
    *,
    output_measure: Measure[Any] | None = None,
    rng: np.random.Generator | RandomSource | None = None,
) -> Measurement[Any, int, Fraction, Fraction]:
    """The exponential mechanism: index ``i`` with probability ``∝ exp(scoreᵢ/scale)``, drawn exactly.

    It is report noisy max with Gumbel noise (where :func:`make_report_noisy_max` adds discrete Laplace
    noise). Integer scores are clamped to ``±2**60``; float scores are rounded to the grid of
    ``make_laplace`` (width ``g = 2**(⌊log₂ scale⌋ - 30)``) and clamped to ``±2**60·g``, as in
    :func:`make_report_noisy_max`: the law is that of the clamped scores (clamping is 1-Lipschitz and
    non-decreasing, so the privacy map holds; scores beyond the clamp are not told apart — at ``scale=1``
    the float scores ``[2e9, 1.5e9]`` are drawn about evenly). With ``optimize="min"`` the probability is
    ``∝ exp(-scoreᵢ/scale)``.

    Privacy map, for scores ``d_in`` apart in ``LInfDistance()``: the mechanism is η-bounded range with
    ``η = 2·d_in/scale`` (``d_in/scale`` for ``LInfDistance(monotonic=True)``; float scores: ``d_in``
    rounded up to the grid, as for report noisy max), so

    * ``output_measure=PureDP()`` (default): ε = η (Dwork–Roth 2014 Thm 3.10);
    * ``output_measure=ZCDP()``: ρ = η²/8 (Cesar–Rogers 2021: η-bounded range ⇒ η²/8-zCDP), a quarter of
      the ε²/2 of viewing the ε-DP mechanism as zCDP. The proof, for the exact law drawn here, is in the
      module docstring.

    Args:
        input_domain: ``VectorDomain(AtomDomain(int|float), size=m)``, ``m >= 1`` candidates' scores (no
            NaN).
        input_metric: ``LInfDistance()`` or ``LInfDistance(monotonic=True)``.
        scale: the temperature > 0 (read as its exact binary value); limits as in
            :func:`make_report_noisy_max`. For a target ε on scores of sensitivity Δ: ``scale = 2Δ/ε``.
        optimize: ``"max"`` (default) to favour large scores, ``"min"`` for small ones.
        output_measure: ``PureDP()`` (default) or ``ZCDP()``.
        rng: a numpy Generator or RandomSource driving the exact sampler reproducibly, for experiments
            only: NOT private. Default: the operating system's secure source.

    Returns:
        A measurement returning the selected index (a Python int in ``[0, m)``).

    Raises:
        InvalidParameter: ``scale`` not finite and positive or out of range; ``optimize`` not
            ``"max"``/``"min"``; ``output_measure`` not ``PureDP()``/``ZCDP()``; ``rng`` not a Generator
            or RandomSource.
        DomainMismatch: as :func:`make_report_noisy_max`.

    Source: McSherry–Talwar 2007, "Mechanism Design via Differential Privacy"; Dwork–Roth 2014 Thm 3.10
    (ε-DP); Durfee–Rogers 2019 (bounded range); Cesar–Rogers 2021 (η-bounded range ⇒ η²/8-zCDP, by
    Hoeffding's lemma); exact sampling: Canonne–Kamath–Steinke 2020 Algorithm 1.

    Examples:
        >>> import dpcompose as dp
        >>> scores = dp.VectorDomain(dp.AtomDomain(float), size=3)
        >>> em = dp.m.make_exponential_mechanism(scores, dp.LInfDistance(monotonic=True), scale=1.0)
        >>> em.map(1)
        Fraction(1, 1)
        >>> em([0.0, 100.0, 3.5])
        1
    """
    plan = Scores(input_domain, input_metric, scale, optimize)
    measure = PureDP() if output_measure is None else output_measure
    if not isinstance(measure, (PureDP, ZCDP)):
        raise InvalidParameter(
            f"output_measure={output_measure!r} must be dp.PureDP() (ε-DP) or dp.ZCDP() (ρ = η²/8)"
        )
    source = caller_source(rng)
    zcdp = isinstance(measure, ZCDP)

    def run(data: Any) -> int:
        return exponential_argmax(plan.indices(data), plan.units, source)

    def privacy_map(d_in: Fraction) -> Fraction:
        eta = plan.epsilon(d_in)  # the bounded-range width: the map of report noisy max (module docstring)
        return bounded_range_to_zcdp(eta) if zcdp else eta

    return Measurement(
        input_domain,
        input_metric,
        measure,
        run,
        privacy_map,
        node=Node(
            "exponential_mechanism",
            params=(("scale", show_param(scale)), ("optimize", str(optimize))),
            source=_SOURCE,
        ),
    )
