"""Transformation and Measurement: small immutable records, chained with ``>>``.

A :class:`Transformation` is a deterministic stable map (``t.map(d_in)`` bounds the output distance); a
:class:`Measurement` is a randomized mechanism with a privacy map (``m.map(d_in)`` bounds the privacy
loss). Chaining checks at construction that the right side's input domain and metric equal the left
side's output domain and metric, and raises :class:`DomainMismatch` naming both sides otherwise.

Trust is explicit. Library constructors (``make_*``) build these records with maps proven in their
docstrings. A map written by a user is a claim the library cannot check, so building a record from raw
parts outside the library is refused; :func:`make_user_measurement` and :func:`make_user_transformation`
accept one with ``trusted=True``, validate every value its map returns (:meth:`Measure.check_cost`,
:meth:`Metric.validate`), and mark it ``[UNVERIFIED]`` in ``repr`` and ``dp.explain``.

Examples:
    >>> import dpcompose as dp
    >>> data = dp.VectorDomain(dp.AtomDomain(int))
    >>> count = dp.t.make_count(data, dp.SymmetricDistance())
    >>> noisy = count >> dp.m.make_laplace(count.output_domain, count.output_metric, scale=2.0)
    >>> noisy.map(1)
    Fraction(1, 2)
    >>> noisy.check(1, 0.5)
    True
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, overload

from dpcompose.accounting import PrivacyLoss, PrivacyProfile
from dpcompose.core._domains import Domain
from dpcompose.core._measures import Measure
from dpcompose.core._metrics import Metric, check_space, even_below, read_d_in
from dpcompose.core._node import Node
from dpcompose.core._recipe import Call, Chain, record_chain, recorded
from dpcompose.core._stages import compose
from dpcompose.errors import DomainMismatch, DPError, InvalidParameter, UnsupportedComposition

__all__ = [
    "Measurement",
    "Transformation",
    "make_user_measurement",
    "make_user_transformation",
    "refuse_odd_d_in",
]

TI = TypeVar("TI")
TO = TypeVar("TO")
T2 = TypeVar("T2")
DI = TypeVar("DI")
DO = TypeVar("DO")
D2 = TypeVar("D2")
D3 = TypeVar("D3")


def _check_pair(domain: Domain, metric: Metric, side: str) -> None:
    """The ``{side}_domain``/``{side}_metric`` pair of a record, named as the parameters are."""
    check_space(domain, metric, f"{side}_domain", f"{side}_metric", allow_identifiers=True, allow_tables=True)


def _check_measure(measure: object) -> None:
    if not isinstance(measure, Measure):
        raise DomainMismatch(f"output_measure={measure!r} must be a Measure")


def _check_origin(kind: str) -> None:
    """Refuse a record built from raw parts outside the library (see the module docstring).

    Called from ``__post_init__``: frame 3 (this function, ``__post_init__``, the dataclass ``__init__``,
    then its caller) is whoever built the record. Library code
    (any ``dpcompose.*`` module) passes; anything else must go through ``make_user_{kind}``.
    """
    caller = sys._getframe(3).f_globals.get("__name__", "")
    if not (isinstance(caller, str) and caller.startswith("dpcompose.")):
        what = kind.capitalize()
        raise InvalidParameter(
            f"a {what} built from raw parts carries a map the library cannot check: use "
            f"dp.make_user_{kind}(..., trusted=True) to state that you have proven it (its map's "
            "outputs are then validated on every call and it is marked [UNVERIFIED]), or a library "
            "make_* constructor"
        )


def _check_chain(left: Any, right: Any) -> None:
    """Raise DomainMismatch unless ``right`` accepts what ``left`` outputs."""
    if left.output_domain != right.input_domain or left.output_metric != right.input_metric:
        raise DomainMismatch(
            "cannot chain: the left side outputs "
            f"{left.output_domain!r} under {left.output_metric!r} "
            f"({left.node.label()}), but the right side expects "
            f"{right.input_domain!r} under {right.input_metric!r} ({right.node.label()})"
        )


@dataclass(frozen=True, slots=True, eq=False)
class Transformation(Generic[TI, TO, DI, D2]):
    """A deterministic map with a stability map ``d_in ↦ d_out`` between its input and output metrics.

    Call it on data (``t(data)``; data outside ``input_domain`` raises :class:`DomainMismatch`) and
    bound distances with ``t.map(d_in)``.

    ``checked_function`` (library constructors only) is ``function`` with the membership test fused into
    its own pass over the data: on a member of ``input_domain`` it returns what ``function`` returns, and
    on any other value it raises the :class:`DomainMismatch` that ``input_domain.check`` raises (it may
    compute part of the result first; nothing is released). A call uses it in place of the separate check.
    """

    input_domain: Domain
    output_domain: Domain
    input_metric: Metric
    output_metric: Metric
    function: Callable[[TI], TO]
    stability_map: Callable[[DI], D2]
    node: Node = field(default_factory=lambda: Node("transformation"))
    checked_function: Callable[[TI], TO] | None = field(default=None, repr=False, compare=False)
    recipe: Call | Chain | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_origin("transformation")
        _check_pair(self.input_domain, self.input_metric, "input")
        _check_pair(self.output_domain, self.output_metric, "output")

    def __call__(self, data: TI) -> TO:
        if self.checked_function is not None:
            return self.checked_function(data)
        self.input_domain.check(data)
        return self.function(data)

    def map(self, d_in: DI) -> D2:
        """An upper bound on the output distance when inputs are ``d_in`` apart (an odd ``d_in`` on a
        sized dataset domain under ``SymmetricDistance`` is refused: ``core._metrics.refuse_odd_sized``)."""
        return self.stability_map(read_d_in(self.input_domain, self.input_metric, d_in))

    @overload
    def __rshift__(self, other: Transformation[TO, T2, D2, D3]) -> Transformation[TI, T2, DI, D3]: ...
    @overload
    def __rshift__(self, other: Measurement[TO, T2, D2, DO]) -> Measurement[TI, T2, DI, DO]: ...
    def __rshift__(self, other: Any) -> Any:
        if isinstance(other, Transformation):
            return _chain_tt(self, other)
        if isinstance(other, Measurement):
            return _chain_tm(self, other)
        return NotImplemented

    def __copy__(self) -> Any:
        return self  # immutable record

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return self

    def __repr__(self) -> str:
        return (
            f"Transformation({self.node.label()}: {self.input_domain!r}, {self.input_metric!r} -> "
            f"{self.output_domain!r}, {self.output_metric!r})"
        )


@dataclass(frozen=True, slots=True, eq=False)
class Measurement(Generic[TI, TO, DI, DO]):
    """A randomized mechanism paired with its privacy map ``d_in ↦ d_out``.

    ``m(data)`` runs it (data outside ``input_domain`` raises :class:`DomainMismatch` and runs nothing);
    ``m.map(d_in)`` is the static privacy check, available before any data is touched; an interactive
    measurement's function returns a :class:`~dpcompose.Queryable`.

    ``checked_function``: as for :class:`Transformation` (a chain after a transformation that has one):
    on a non-member it raises before anything random runs.
    """

    input_domain: Domain
    input_metric: Metric
    output_measure: Measure[DO]
    function: Callable[[TI], TO]
    privacy_map: Callable[[DI], DO]
    interactive: bool = False
    node: Node = field(default_factory=lambda: Node("measurement"))
    loss: Callable[[DI], PrivacyLoss | None] | None = field(default=None, repr=False, compare=False)
    checked_function: Callable[[TI], TO] | None = field(default=None, repr=False, compare=False)
    recipe: Call | Chain | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_origin("measurement")
        _check_pair(self.input_domain, self.input_metric, "input")
        _check_measure(self.output_measure)
        if not isinstance(self.interactive, bool):
            raise InvalidParameter(f"interactive={self.interactive!r} must be a bool")

    def privacy_loss(self, d_in: DI) -> PrivacyLoss | None:
        """The mechanism's dominating pair at ``d_in`` (:class:`~dpcompose.accounting.PrivacyLoss`), or
        None where the library knows none. Composites use it to account by privacy loss distributions.

        Examples:
            >>> import dpcompose as dp
            >>> m = dp.m.make_randomized_response(
            ...     dp.CategoricalDomain([0, 1]), dp.DiscreteDistance(), epsilon=1.0)
            >>> m.privacy_loss(1)
            PrivacyLoss(randomized_response(ε=1, k=2))
        """
        d = read_d_in(self.input_domain, self.input_metric, d_in)
        return None if self.loss is None else self.loss(d)

    def __call__(self, data: TI) -> TO:
        if self.checked_function is not None:
            return self.checked_function(data)
        self.input_domain.check(data)
        return self.function(data)

    def map(self, d_in: DI) -> DO:
        """An upper bound on the privacy loss between inputs ``d_in`` apart (an odd ``d_in`` on a sized
        dataset domain under ``SymmetricDistance`` is refused: ``core._metrics.refuse_odd_sized``)."""
        return self.privacy_map(read_d_in(self.input_domain, self.input_metric, d_in))

    def check(self, d_in: DI, d_out: object) -> bool:
        """Whether ``map(d_in)`` is within the budget ``d_out`` (read as the decimal it prints as)."""
        bound = self.output_measure.parse(d_out)
        return self.output_measure.less_equal(self.map(d_in), bound)

    def __rshift__(self, function: Callable[[TO], T2]) -> Measurement[TI, T2, DI, DO]:
        if isinstance(function, Transformation):
            raise DomainMismatch(
                f"cannot chain {self.node.label()} >> {function.node.label()}: a measurement's output is a "
                "noisy release, not data. Put transformations before the measurement (t >> m), or "
                "post-process the release with m >> function"
            )
        if isinstance(function, Measurement):
            raise DomainMismatch(
                f"cannot chain {self.node.label()} >> {function.node.label()}: to run both on the same "
                "data, compose them: dp.make_sequential(m1, m2) or dp.make_concurrent(m1, m2)"
            )
        if not callable(function):
            return NotImplemented
        return postprocess(self, function)

    def __copy__(self) -> Any:
        return self  # immutable record

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return self

    def __repr__(self) -> str:
        kind = "interactive " if self.interactive else ""
        return (
            f"Measurement({kind}{self.node.label()}: {self.input_domain!r}, {self.input_metric!r} -> "
            f"{self.output_measure!r})"
        )


def _check_trusted(trusted: object, kind: str) -> None:
    if trusted is not True:
        raise InvalidParameter(
            f"trusted={trusted!r}: a user-written {kind} needs trusted=True, your statement that its map is "
            "proven; the library validates what the map returns but cannot check the proof"
        )


def _check_callable(value: object, name: str) -> None:
    if not callable(value):
        raise InvalidParameter(f"{name}={value!r} must be callable")


def _checked_user_map(
    raw: Callable[[Any], Any], validate: Callable[[object, str], Any], label: str
) -> Callable[[Any], Any]:
    """``raw`` with its every output validated, and any non-DPError it raises as InvalidParameter."""

    def checked(d_in: Any) -> Any:
        try:
            d_out = raw(d_in)
        except DPError:
            raise
        except Exception as exc:
            raise InvalidParameter(f"{label}: its map raised {type(exc).__name__}: {exc}") from exc
        return validate(d_out, f"{label}'s map({d_in})")

    return checked


@recorded
def make_user_measurement(
    input_domain: Domain,
    input_metric: Metric,
    output_measure: Measure[DO],
    function: Callable[[TI], TO],
    privacy_map: Callable[[DI], DO],
    *,
    trusted: bool,
    interactive: bool = False,
    name: str = "user_measurement",
) -> Measurement[TI, TO, DI, DO]:
    """A measurement from raw parts written by the user: an explicit, visible act of trust.

    The library cannot prove a user's map, so it asks for ``trusted=True``, checks every value the map
    returns with the measure's cost validation (exact, finite, non-negative, the measure's type — the same
    check every budget applies before charging), and labels the node ``[UNVERIFIED]`` in ``repr`` and
    ``dp.explain``. The function should never raise on data in ``input_domain``: an exception is an
    output no map accounts for.

    Args:
        input_domain: the domain of the data.
        input_metric: the metric on it.
        output_measure: the privacy measure the map returns.
        function: the mechanism (data -> output; a Queryable if ``interactive``).
        privacy_map: d_in -> d_out, returning exact values (``fractions.Fraction``).
        trusted: must be ``True``: your statement that the map is proven for the function.
        interactive: whether ``function`` returns a Queryable.
        name: the node's name in ``repr`` and ``dp.explain``.

    Raises:
        InvalidParameter: ``trusted`` is not ``True``, or a part is not callable.
        DomainMismatch: the domain/metric pair does not fit.

    Examples:
        >>> import dpcompose as dp
        >>> from fractions import Fraction
        >>> m = dp.make_user_measurement(  # a release that reads nothing of x: ε = 0 at every d_in
        ...     dp.AtomDomain(int), dp.AbsoluteDistance(), dp.PureDP(), lambda x: "schema v2",
        ...     lambda d: Fraction(0), trusted=True, name="my_release")
        >>> m
        Measurement(my_release [UNVERIFIED]: AtomDomain(int), AbsoluteDistance() -> PureDP())
        >>> m(41), m.map(3)
        ('schema v2', Fraction(0, 1))
        >>> bad = dp.make_user_measurement(dp.AtomDomain(int), dp.AbsoluteDistance(), dp.PureDP(),
        ...     lambda x: x, lambda d: -d, trusted=True)
        >>> bad.map(1)
        Traceback (most recent call last):
        ...
        dpcompose.errors.InvalidParameter: user_measurement [UNVERIFIED]'s map(1)=-1 must be non-negative: ...
    """
    _check_trusted(trusted, "measurement")
    _check_callable(function, "function")
    _check_callable(privacy_map, "privacy_map")
    _check_measure(output_measure)
    node = Node(str(name), source="user-written: trusted, not verified", verified=False)
    return Measurement(
        input_domain,
        input_metric,
        output_measure,
        function,
        _checked_user_map(privacy_map, output_measure.check_cost, node.label()),
        interactive=interactive,
        node=node,
    )


@recorded
def make_user_transformation(
    input_domain: Domain,
    output_domain: Domain,
    input_metric: Metric,
    output_metric: Metric,
    function: Callable[[TI], TO],
    stability_map: Callable[[DI], D2],
    *,
    trusted: bool,
    name: str = "user_transformation",
) -> Transformation[TI, TO, DI, D2]:
    """A transformation from raw parts written by the user: an explicit, visible act of trust.

    Like :func:`make_user_measurement`: needs ``trusted=True``, validates every value the stability map
    returns with the output metric (:meth:`Metric.validate`: a non-negative distance of its type), and
    is labelled ``[UNVERIFIED]``. The function must return values in ``output_domain`` and should never
    raise on data in ``input_domain``.

    Args:
        input_domain: the domain of the data.
        output_domain: the domain of what ``function`` returns.
        input_metric: the metric on the input.
        output_metric: the metric on the output.
        function: the transformation (data -> data).
        stability_map: d_in -> d_out.
        trusted: must be ``True``: your statement that the stability map is proven.
        name: the node's name in ``repr`` and ``dp.explain``.

    Examples:
        >>> import dpcompose as dp
        >>> ages = dp.VectorDomain(dp.AtomDomain(int, bounds=(0, 120)))
        >>> oldest = dp.make_user_transformation(  # two maxima in [0, 120] are at most 120 apart
        ...     ages, dp.AtomDomain(int), dp.SymmetricDistance(), dp.AbsoluteDistance(),
        ...     lambda xs: max(xs, default=0), lambda d: 120 if d else 0, trusted=True, name="oldest")
        >>> oldest([31, 87, 45]), oldest.map(0), oldest.map(3)
        (87, Fraction(0, 1), Fraction(120, 1))
    """
    _check_trusted(trusted, "transformation")
    _check_callable(function, "function")
    _check_callable(stability_map, "stability_map")
    if not isinstance(output_metric, Metric):
        raise DomainMismatch(f"output_metric={output_metric!r} must be a Metric")
    node = Node(str(name), source="user-written: trusted, not verified", verified=False)
    return Transformation(
        input_domain,
        output_domain,
        input_metric,
        output_metric,
        function,
        _checked_user_map(stability_map, output_metric.validate, node.label()),
        node=node,
    )


@recorded
def postprocess(
    measurement: Measurement[TI, TO, DI, DO], function: Callable[[TO], T2]
) -> Measurement[TI, T2, DI, DO]:
    """``measurement`` followed by a data-independent ``function``: same privacy map.

    Source: Dwork–Roth 2014 Prop. 2.1 (post-processing); for interactive mechanisms, Vadhan–Wang 2021
    §2 (interactive post-processing).
    """
    inner = measurement.function

    def run(data: TI) -> T2:
        return function(inner(data))

    checked = measurement.checked_function

    def run_checked(data: TI) -> T2:
        assert checked is not None
        return function(checked(data))

    name = getattr(function, "__name__", type(function).__name__)
    return Measurement(
        measurement.input_domain,
        measurement.input_metric,
        measurement.output_measure,
        run,
        measurement.privacy_map,
        interactive=measurement.interactive,
        loss=measurement.loss,  # post-processing keeps the dominating pair (Dwork–Roth 2014 Prop. 2.1)
        node=Node(
            "postprocess",
            params=(("function", name),),
            source="Dwork–Roth 2014 Prop. 2.1",
            theorem="post-processing",
            children=(measurement,),
        ),
        checked_function=None if checked is None else run_checked,
    )


def _chain_tt(t1: Transformation[Any, Any, Any, Any], t2: Transformation[Any, Any, Any, Any]) -> Any:
    _check_chain(t1, t2)
    run = compose(t1.function, t2.function)  # (fused where t2's function offers it: the same bits)

    checked = t1.checked_function  # (the fused membership test, then t2's function)
    run_checked = None if checked is None else compose(checked, t2.function)

    def stability(d_in: Any) -> Any:  # (t1's bound on a sized output: an odd one is rounded down, even_below)
        return t2.map(even_below(t2.input_domain, t2.input_metric, t1.map(d_in)))

    result = Transformation(
        t1.input_domain,
        t2.output_domain,
        t1.input_metric,
        t2.output_metric,
        run,
        stability,
        node=Node(
            "chain",
            source="composition of stability maps",
            children=(t1, t2),
            child_inputs=lambda d: (d, even_below(t2.input_domain, t2.input_metric, t1.map(d))),
        ),
        checked_function=run_checked,
    )
    record_chain(result, t1, t2)
    return result


def _all_verified(part: Any) -> bool:
    """Whether no user-written part (``verified=False``) is among ``part`` and the parts it is built from."""
    stack, seen = [part], set()
    while stack:
        p = stack.pop()
        node = getattr(p, "node", None)
        if not isinstance(node, Node) or id(p) in seen:
            continue
        seen.add(id(p))
        if not node.verified:
            return False
        stack.extend(node.children)
    return True


def _chain_tm(t: Transformation[Any, Any, Any, Any], m: Measurement[Any, Any, Any, Any]) -> Any:
    _check_chain(t, m)
    run = compose(t.function, m.function)  # (fused where a function offers it: the same bits)

    checked = t.checked_function  # (the fused membership test, then m's function)
    run_checked = None if checked is None else compose(checked, m.function)

    # A Poisson-subsampled pair is composed order by order: every mechanism of a composition must see the
    # same order of neighbours (PrivacyLoss.order_sensitive). The library's transformations keep D ⊆ D′ as
    # T(D) ⊆ T(D′); a user-written one may reverse it (a complement against a public universe, say), and
    # a composition mixing the orders can exceed both (e.g. δ 0.0298 where order by order reads 0.02).
    # Through a user transformation such a pair is dropped: the child is read by its other description.
    kept_order = _all_verified(t)

    def privacy(d_in: Any) -> Any:
        out = m.map(even_below(m.input_domain, m.input_metric, t.map(d_in)))  # (see _chain_tt)
        pair = out.loss if isinstance(out, PrivacyProfile) else None
        if kept_order or pair is None or not pair.order_sensitive():
            return out
        generic = out.generic()
        if generic is None:
            raise UnsupportedComposition(
                f"{m.node.label()} after the user-written {t.node.label()}: its Poisson-subsampled pair "
                "holds only where the transformation keeps which neighbour holds the record, and it has no "
                "other description; subsample after the transformation, or use a library transformation"
            )
        return generic

    def loss(d_in: Any) -> PrivacyLoss | None:
        found = m.privacy_loss(even_below(m.input_domain, m.input_metric, t.map(d_in)))
        return None if found is None or (not kept_order and found.order_sensitive()) else found

    result = Measurement(
        t.input_domain,
        t.input_metric,
        m.output_measure,
        run,
        privacy,
        interactive=m.interactive,
        loss=None if m.loss is None else loss,
        node=Node(
            "chain",
            source="stability map, then privacy map",
            children=(t, m),
            child_inputs=lambda d: (d, even_below(m.input_domain, m.input_metric, t.map(d))),
        ),
        checked_function=run_checked,
    )
    record_chain(result, t, m)
    return result


def refuse_odd_d_in(make: Callable[[Any], Any], at: object, d_in: object) -> None:
    """Before a parameter search, refuse an odd ``d_in`` on a fixed-size dataset domain under
    ``SymmetricDistance`` (:func:`~dpcompose.core._metrics.refuse_odd_sized`), read from the input space of
    ``make(at)``: the search would otherwise swallow the refusal into "no parameter passes". Nothing is
    refused where ``make(at)`` does not build (the search then names why)."""
    try:
        built = make(at)
    except (DPError, ArithmeticError, ValueError, TypeError):
        return
    if isinstance(built, Measurement):
        read_d_in(built.input_domain, built.input_metric, d_in)
