"""The privacy curve ε(δ) of a measurement, and a plot of it (matplotlib, an optional extra)."""

from __future__ import annotations

import importlib
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from dpcompose._validation import check_probability
from dpcompose.accounting import PrivacyProfile, decimal, renyi_to_approx, zcdp_to_approx
from dpcompose.accounting._filters import DEFAULT_ORDERS
from dpcompose.core import ZCDP, ApproxDP, Measurement, ProfileDP, PureDP, RenyiDP
from dpcompose.errors import DomainMismatch, InvalidParameter

__all__ = ["DEFAULT_DELTAS", "plot_profile", "privacy_curve"]

#: δ from 1e-12 to 1e-1, two points per decade.
DEFAULT_DELTAS: tuple[Fraction, ...] = tuple(
    Fraction(m, 10**e) for e in range(12, 0, -1) for m in ((1, 3) if e > 1 else (1,))
)


def privacy_curve(
    measurement: Measurement[Any, Any, Any, Any], d_in: Any, deltas: Sequence[object] = DEFAULT_DELTAS
) -> list[tuple[Fraction, Fraction | None]]:
    """``(δ, ε)`` pairs: the least ε the library certifies for ``measurement`` at ``d_in`` and each δ.

    ``ε`` is ``None`` where no ε is certified at that δ (an (ε₀, δ₀) guarantee below δ₀, or a profile
    below the least δ it reaches). Every ε is an upper bound, from the measure's own conversion:

    * ``PureDP``: ε for every δ; ``ApproxDP`` (ε₀, δ₀): ε₀ for δ ≥ δ₀;
    * ``ZCDP``: Canonne–Kamath–Steinke 2020 (``accounting.zcdp_to_approx``);
    * ``RenyiDP``: Balle et al. 2020 Thm 21 over the default orders 1.25 … 256 (``renyi_to_approx``);
    * ``ProfileDP``: the profile's own ε(δ) (``PrivacyProfile.epsilon``);

    and, where the measurement knows its dominating pair at ``d_in``
    (:meth:`~dpcompose.core.Measurement.privacy_loss`), the pair's certified ε(δ) too
    (:meth:`~dpcompose.accounting.PrivacyLoss.epsilon`): each is an upper bound on the true ε(δ), so the
    less of the two is reported (for a Gaussian, its own noise's privacy loss distribution rather than
    zCDP's conversion: Canonne–Kamath–Steinke 2020 for the discrete one, Balle–Wang 2018 Thm 8 for the
    continuous one).

    Examples:
        >>> import dpcompose as dp
        >>> g = dp.m.make_gaussian(dp.AtomDomain(int), dp.AbsoluteDistance(), scale=4.0)
        >>> [(str(d), dp.accounting.format_up(e)) for d, e in privacy_curve(g, 1, [1e-6, 1e-3])]
        [('1/1000000', '1.06344'), ('1/1000', '0.58987')]
    """
    if not isinstance(measurement, Measurement):
        raise InvalidParameter(f"measurement={measurement!r} must be a Measurement")
    if isinstance(deltas, (str, bytes)) or not isinstance(deltas, Sequence):
        raise InvalidParameter(f"deltas={deltas!r} must be a sequence of δ values in [0, 1)")
    ds = [decimal(check_probability(d, f"deltas[{i}]"), f"deltas[{i}]") for i, d in enumerate(deltas)]
    cost = measurement.map(d_in)
    measure: Any = measurement.output_measure
    try:
        curve = _curve(measure, cost, ds)
    except InvalidParameter as exc:  # a cost beyond what the conversions handle: say which input did it
        raise InvalidParameter(f"d_in={d_in!r} gives a cost that cannot be turned into ε: {exc}") from None
    pair = measurement.privacy_loss(d_in)
    if pair is None:
        return curve
    return [(delta, _least(eps, _pair_epsilon(pair, delta))) for delta, eps in curve]


def _pair_epsilon(pair: Any, delta: Fraction) -> Fraction | None:
    """The pair's certified ε at ``delta``, or None where it certifies none (below its mass at +∞)."""
    try:
        eps: Fraction = pair.epsilon(delta)
    except InvalidParameter:
        return None
    return eps


def _least(a: Fraction | None, b: Fraction | None) -> Fraction | None:
    if a is None:
        return b
    return a if b is None else min(a, b)


def _curve(measure: Any, cost: Any, ds: list[Fraction]) -> list[tuple[Fraction, Fraction | None]]:
    out: list[tuple[Fraction, Fraction | None]] = []
    for delta in ds:
        eps: Fraction | None
        if isinstance(measure, PureDP):
            eps = cost
        elif isinstance(measure, ApproxDP):
            eps = cost[0] if delta >= cost[1] else None
        elif isinstance(measure, ZCDP):
            eps = zcdp_to_approx(cost, delta) if delta > 0 else None
        elif isinstance(measure, RenyiDP):
            eps = (
                renyi_to_approx(DEFAULT_ORDERS, [cost(a) for a in DEFAULT_ORDERS], delta)
                if delta > 0
                else None
            )
        elif isinstance(measure, ProfileDP):
            assert isinstance(cost, PrivacyProfile)
            try:
                eps = cost.epsilon(delta)
            except InvalidParameter:
                eps = None  # below the least δ the profile reaches
        else:
            raise DomainMismatch(f"no privacy curve for {measure!r}")
        out.append((delta, eps))
    return out


def plot_profile(
    measurement: Measurement[Any, Any, Any, Any],
    d_in: Any,
    deltas: Sequence[object] = DEFAULT_DELTAS,
    ax: Any = None,
    label: str | None = None,
) -> Any:
    """Draw ε(δ) of :func:`privacy_curve` on a log δ axis; returns the matplotlib ``Axes``.

    Needs matplotlib (``pip install dpcompose[plot]``). The plotted ε are the certified upper bounds
    (exact values rounded up to floats); δ where nothing is certified are left out. Pass ``ax`` to draw
    several curves on one axes, each with its ``label`` (default: the measurement's node label), then
    call ``ax.legend()`` (a passed ``ax`` keeps its title; a new figure is titled after the measurement);
    docs/plot_profile.py draws the picture in docs/concepts.md this way.
    """
    if ax is not None and not callable(getattr(ax, "plot", None)):
        raise InvalidParameter(f"ax={ax!r} must be a matplotlib Axes (or None for a new figure)")
    if label is not None and not isinstance(label, str):
        raise InvalidParameter(f"label={label!r} must be a string (or None for the measurement's label)")
    curve = [(d, e) for d, e in privacy_curve(measurement, d_in, deltas) if e is not None]
    name = measurement.node.label() if label is None else label
    try:
        plt = importlib.import_module("matplotlib.pyplot")
    except ImportError as exc:
        raise InvalidParameter("plot_profile needs matplotlib: pip install 'dpcompose[plot]'") from exc
    new = ax is None
    if new:
        _, ax = plt.subplots(figsize=(5, 3.2))
    ax.plot([float(d) for d, _ in curve], [_up(e) for _, e in curve], marker="o", label=name)
    ax.set_xscale("log")
    ax.set_xlabel("δ")
    ax.set_ylabel("ε (upper bound)")
    if new:  # a shared axes keeps its own title: several curves are told apart by their labels
        ax.set_title(f"{name} at d_in={d_in}")
    ax.grid(True, which="both", alpha=0.3)
    return ax


def _up(q: Fraction) -> float:
    f = float(q)
    return math.nextafter(f, math.inf) if Fraction(f) < q else f
