"""The noise scale at which a budget starts to be met, on the mechanism's own grid: :func:`scale_for`."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

from dpcompose.accounting._calibrate import least_passing_exact
from dpcompose.core import ApproxDP, Measurement, Transformation
from dpcompose.core._measurement import refuse_odd_d_in
from dpcompose.errors import InvalidParameter
from dpcompose.measurements._laplace import make_laplace

__all__ = ["scale_for"]

SCALE_BOUNDS = (0.0, 2.0**1000)
"""The scales searched: every scale the secure float grid takes (``[2**-991, 2**1001)``) and more."""


def scale_for(
    make: Transformation[Any, Any, Any, Any] | Callable[[float], Measurement[Any, Any, Any, Any]],
    d_out: Any,
    *,
    d_in: Any = 1,
    mechanism: Callable[..., Measurement[Any, Any, Any, Any]] = make_laplace,
) -> float:
    """A float scale whose noise meets ``d_out`` at ``d_in`` by the mechanism's certified map, the float just
    below it not meeting it (both read).

    The textbook scale Δ/ε is not always enough: the secure float mechanisms round their input to a grid
    ``g·Z``, ``g = 2**(⌊log₂ scale⌋ − 30)``, and the privacy map counts the rounding (``⌈d_in/g⌉`` grid
    steps for a number, see :func:`~dpcompose.measurements.make_laplace`), and a float sum
    (:func:`~dpcompose.transformations.make_sum`) has sensitivity ``d_in·Δ + ulp(L)`` (``Δ + ulp(L)`` at
    ``d_in = 1``), one unit in the last place of its largest possible |sum| L above the textbook
    sensitivity, because its result is a rounded float. After a float sum, no grid makes Δ/ε cost exactly ε:
    the map of ``make_laplace`` reads ``ε = ⌈(Δ + ulp(L))/g⌉·g/scale``, above ``Δ/scale`` at every scale by a
    relative amount in ``[ulp(L)/Δ, (ulp(L) + g)/Δ)``; at the textbook scale Δ/ε, ``g/Δ ≤ 2**-30/ε``
    (about 1e-9/ε).

    What is returned: a scale that meets ``d_out`` whose float predecessor does not (both read). A grid
    map is an exact rational, monotone within each binade ``[2**m, 2**(m+1))`` (the grid is fixed there),
    but it may rise where the grid coarsens, at a power of two (by a relative ``g/d_in`` or less for
    ``d_in`` of at least a grid step, up to 2× below one), so a passing scale may lie just below a power
    of two under a failing one. The search (``least_passing_exact`` of ``dpcompose.accounting._calibrate``)
    crosses such a rise: the top float of the binade below the answer's is read, and if it passes the
    binade below is searched too; the readings taken are compared exactly, with no slack, and a rise
    within a binade is refused. The scale returned is the least passing float when the map is monotone
    within each binade and falls from one binade's top to the next (true of the scalar grid maps,
    ``⌈d_in/g⌉·g/scale`` and its square).

    Args:
        make: either the chain before the noise (a ``Transformation``: the measurement is
            ``make >> mechanism(make.output_domain, make.output_metric, scale)``), or a function from the
            scale to the whole measurement.
        d_out: the budget, in the measurement's output measure (ε for ``make_laplace``, ρ for
            ``make_gaussian``, ...).
        d_in: the input distance the budget is for (default 1: one record or one person).
        mechanism: the noise builder ``(input_domain, input_metric, scale) -> Measurement`` put after a
            ``Transformation`` (default :func:`~dpcompose.measurements.make_laplace`; e.g.
            ``dp.m.make_gaussian``). Ignored when ``make`` is a function.

    Returns:
        A float scale ``s`` with ``measurement(s).check(d_in, d_out)``, the float below it failing (the
        least such scale where the map is monotone within binades, see above).

    Raises:
        InvalidParameter: ``make`` is neither a Transformation nor callable, ``mechanism`` is not
            callable, no scale up to 2**1000 meets ``d_out`` (the first refusal is named), or the map rises
            with the scale within a binade (both scales named).

    Source: the maps of the mechanisms (their docstrings cite the theorems); the search is
    :func:`~dpcompose.accounting.least_passing`'s, with no slack and across binades.

    Examples:
        >>> import dpcompose as dp
        >>> data = dp.VectorDomain(dp.AtomDomain(float, bounds=(0.0, 10.0)))
        >>> total = dp.t.make_sum(data, dp.SymmetricDistance(), max_size=1000)
        >>> textbook = total >> dp.m.make_laplace(total.output_domain, total.output_metric, scale=10.0)
        >>> textbook.check(1, 1.0)  # the sum's rounding adds ulp(10000) to its sensitivity
        False
        >>> b = scale_for(total, 1.0)
        >>> b > 10.0, round(b, 6)
        (True, 10.0)
        >>> m = total >> dp.m.make_laplace(total.output_domain, total.output_metric, scale=b)
        >>> m.check(1, 1.0)
        True
    """
    build = _builder(make, mechanism)
    refuse_odd_d_in(build, 1.0, d_in)

    def probe(scale: float) -> tuple[bool, Fraction | None]:
        measurement = build(scale)
        if not isinstance(measurement, Measurement):
            raise InvalidParameter(f"make({scale!r}) returned {measurement!r}, not a Measurement")
        bound = measurement.output_measure.parse(d_out)
        value = measurement.map(d_in)
        ok = bool(measurement.output_measure.less_equal(value, bound))
        if isinstance(measurement.output_measure, ApproxDP):
            value, bound = value[0], bound[0]
        reading = None
        if isinstance(value, Fraction) and isinstance(bound, Fraction) and value > 0 and bound > 0:
            reading = value / bound
        return ok, reading

    try:
        return least_passing_exact(probe, SCALE_BOUNDS).value
    except InvalidParameter as exc:
        raise InvalidParameter(
            f"scale_for: no scale up to 2**1000 meets d_out={d_out!r} at d_in={d_in!r}, or the map is not "
            f"monotone in the scale there ({exc}); loosen d_out or lower d_in"
        ) from None


def _builder(make: object, mechanism: object) -> Callable[[float], Measurement[Any, Any, Any, Any]]:
    """``make`` as a function of the scale: a Transformation followed by ``mechanism``, or ``make`` itself."""
    if isinstance(make, Transformation):
        if not callable(mechanism):
            raise InvalidParameter(
                f"mechanism={mechanism!r} must be a noise builder (input_domain, input_metric, scale), "
                "e.g. dp.m.make_laplace"
            )
        prefix = make
        noise = mechanism

        def chained(scale: float) -> Measurement[Any, Any, Any, Any]:
            built = prefix >> noise(prefix.output_domain, prefix.output_metric, scale)
            assert isinstance(built, Measurement)
            return built

        return chained
    if callable(make):
        return make
    raise InvalidParameter(
        f"make={make!r} must be the Transformation before the noise or a function from the scale to a "
        "Measurement"
    )
