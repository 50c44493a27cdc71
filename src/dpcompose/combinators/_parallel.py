"""Parallel composition over the disjoint parts of a partition."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose.core import (
    ZCDP,
    ApproxDP,
    Measurement,
    Node,
    PartitionDistance,
    PureDP,
    SymmetricDistance,
    Transformation,
    VectorDomain,
)
from dpcompose.core._recipe import recorded
from dpcompose.errors import DomainMismatch, InvalidParameter, UnsupportedComposition

__all__ = ["make_parallel", "worst_allocation"]


def worst_allocation(maps: Sequence[Callable[[int], Fraction]], total: int) -> Fraction:
    """max over (k₁, …, k_m) with Σ kᵢ ≤ total, kᵢ ≥ 0, of Σ gᵢ(kᵢ), where gᵢ(0) = 0 (an untouched part
    costs nothing) and gᵢ(k) = mapᵢ(k) for k ≥ 1 — exactly.

    This is the worst case of parallel composition when ``total`` changed records may fall into the parts
    in any way (a child's map need not be linear). Each distinct map (the same function object) is
    evaluated once per k ≤ total, O(distinct·total) calls, and then:

    * every gᵢ convex on {0, …, total} (second differences ≥ 0; linear maps, zCDP's k²ρ, group privacy):
      the worst case is maxᵢ gᵢ(total), all records in one part. Proof: convexity and gᵢ(0) = 0 give
      gᵢ(k) ≤ (k/total)·gᵢ(total), so Σ gᵢ(kᵢ) ≤ maxᵢ gᵢ(total)·Σ kᵢ/total ≤ maxᵢ gᵢ(total), which one
      allocation attains. O(distinct·total).
    * every gᵢ concave (non-increasing marginals, e.g. a map capped at a constant): the worst case is the
      sum of the ``total`` largest positive marginals over all parts (each part's marginals are
      non-increasing, so the largest ones form a prefix in every part: a valid allocation, and an
      exchange argument shows nothing beats it). O(distinct·total·log).
    * otherwise: dynamic programming over the parts, O(m·total²) additions.

    Examples:
        >>> from fractions import Fraction
        >>> square = lambda k: Fraction(k * k)  # convex: concentrating the records is worst
        >>> worst_allocation([square, square, square], 3)
        Fraction(9, 1)
        >>> worst_allocation([lambda k: Fraction(min(k, 1))] * 3, 3)  # concave: spreading is worst
        Fraction(3, 1)
        >>> bumpy = lambda k: Fraction([0, 2, 2, 5][k])  # neither: the exact dynamic programme
        >>> worst_allocation([bumpy, bumpy], 3)
        Fraction(5, 1)
    """
    tables: dict[int, list[Fraction]] = {}
    counts: dict[int, int] = {}
    order: list[Callable[[int], Fraction]] = []
    for f in maps:
        if id(f) not in tables:
            tables[id(f)] = [Fraction(0)] + [f(k) for k in range(1, total + 1)]
            counts[id(f)] = 0
            order.append(f)
        counts[id(f)] += 1
    if total == 0 or not order:
        return Fraction(0)
    second = [[g[k + 1] - 2 * g[k] + g[k - 1] for k in range(1, total)] for g in tables.values()]
    if all(d >= 0 for ds in second for d in ds):
        return max(Fraction(0), *(g[total] for g in tables.values()))
    if all(d <= 0 for ds in second for d in ds):
        marginals = sorted(
            ((g[k] - g[k - 1], counts[key]) for key, g in tables.items() for k in range(1, total + 1)),
            reverse=True,
        )
        acc, left = Fraction(0), total
        for gain, copies in marginals:
            if gain <= 0 or left == 0:
                break
            take = min(copies, left)
            acc += gain * take
            left -= take
        return acc
    best = [Fraction(0)] + [Fraction(-1)] * total  # best[s]: max over parts so far using s records
    for f in maps:
        values = tables[id(f)]
        new = list(best)
        for s in range(total + 1):
            for k in range(1, s + 1):
                if best[s - k] >= 0:
                    candidate = best[s - k] + values[k]
                    if candidate > new[s]:
                        new[s] = candidate
        best = new
    return max(best)


@recorded
def make_parallel(
    partition: Transformation[Any, Any, Any, Any], measurements: Sequence[Measurement[Any, Any, Any, Any]]
) -> Measurement[Any, Any, Any, Any]:
    """Run ``measurements[i]`` on part i of ``partition``'s output; the parts are disjoint.

    Privacy map: ``partition`` turns ``d_in`` into the total number of records added or removed over all
    parts (add/remove of k records: k; change of k records: 2k). Those can fall into the parts in any way,
    so the map is the exact worst case over all allocations of that total (:func:`worst_allocation`) of
    the composition of the touched parts' costs — not the max times d_in, since a child's map need not
    be linear (zCDP children cost k²ρ for k records). For d_in = 1 under add/remove this is the maximum
    over parts; under change-one, the worst of one part at distance 2 and two parts at distance 1.
    (ε, δ) children: the worst ε and the worst δ are bounded separately (a valid, possibly loose bound).

    Children may be interactive; their queryables stay open (the data is static).

    Source: McSherry 2009 (PINQ) Thm 4 (parallel composition); interactive children:
    Henzinger–Safavi–Vadhan 2024 (parallel composition of interactive mechanisms on static data).

    Examples:
        >>> import dpcompose as dp
        >>> rows = dp.VectorDomain(dp.AtomDomain(str))
        >>> part = dp.t.make_partition(rows, dp.SymmetricDistance(), by=lambda r: r[0], keys="ab")
        >>> counts = [dp.t.make_count(rows, dp.SymmetricDistance())
        ...           >> dp.m.make_laplace(dp.AtomDomain(int), dp.AbsoluteDistance(), scale=2.0)] * 2
        >>> hist = dp.make_parallel(part, counts)
        >>> hist.map(1), hist.map(3)
        (Fraction(1, 2), Fraction(3, 2))
        >>> len(hist(["apple", "avocado", "banana"]))
        2
    """
    if not isinstance(partition, Transformation) or not isinstance(
        partition.output_metric, PartitionDistance
    ):
        raise InvalidParameter(
            f"partition={partition!r} must be made by make_partition (PartitionDistance output)"
        )
    out_domain = partition.output_domain
    assert isinstance(out_domain, VectorDomain)
    if (
        isinstance(measurements, (str, bytes, Mapping))
        or not isinstance(measurements, Iterable)
        or (isinstance(measurements, np.ndarray) and measurements.ndim != 1)
    ):
        raise InvalidParameter(f"measurements={measurements!r} must be a sequence of Measurements")
    children = tuple(measurements)
    for i, child in enumerate(children):
        if not isinstance(child, Measurement):
            raise InvalidParameter(f"measurements[{i}]={child!r} must be a Measurement")
    if len(children) != out_domain.size:
        raise InvalidParameter(
            f"the partition has {out_domain.size} parts but {len(children)} measurements were given"
        )
    if not children:
        raise InvalidParameter("make_parallel needs at least one part")
    part_domain = out_domain.element_domain
    measure = children[0].output_measure
    for i, child in enumerate(children):
        if child.input_domain != part_domain or not isinstance(child.input_metric, SymmetricDistance):
            raise DomainMismatch(
                f"make_parallel: part {i} holds {part_domain!r} under SymmetricDistance(), but measurement "
                f"{i} ({child.node.label()}) takes {child.input_domain!r} under {child.input_metric!r}"
            )
        if child.output_measure != measure:
            raise UnsupportedComposition(
                f"make_parallel: measurement 0 is {measure!r} but measurement {i} is {child.output_measure!r}"
            )
    if not isinstance(measure, (PureDP, ZCDP, ApproxDP)):
        raise UnsupportedComposition(
            f"make_parallel supports PureDP, ZCDP and ApproxDP children, not {measure!r}: the worst case "
            "over allocations needs a totally ordered cost"
        )
    approx = isinstance(measure, ApproxDP)

    def privacy_map(d_in: Any) -> Any:
        total = partition.map(d_in)
        if approx:
            eps = worst_allocation(_shared(children, lambda c: _coordinate(c, 0)), total)
            delta = worst_allocation(_shared(children, lambda c: _coordinate(c, 1)), total)
            return eps, delta
        return worst_allocation(_shared(children, lambda c: c.map), total)

    inner = partition.function

    def run(data: Any) -> tuple[Any, ...]:
        parts = inner(data)
        return tuple(child.function(part) for child, part in zip(children, parts, strict=True))

    return Measurement(
        partition.input_domain,
        partition.input_metric,
        measure,
        run,
        privacy_map,
        interactive=any(c.interactive for c in children),
        node=Node(
            "parallel",
            params=(("parts", str(len(children))),),
            source="McSherry 2009 Thm 4; Henzinger–Safavi–Vadhan 2024 (interactive)",
            theorem="parallel composition (worst allocation of changed records)",
            interaction="parallel",
            children=(partition, *children),
            # for explain: each part is shown at the most records it can receive
            child_inputs=lambda d: (d, *[partition.map(d)] * len(children)),
        ),
    )


def _shared(
    children: Sequence[Measurement[Any, Any, Any, Any]],
    make: Callable[[Measurement[Any, Any, Any, Any]], Callable[[int], Fraction]],
) -> list[Callable[[int], Fraction]]:
    """One map function per distinct child object, so repeated children are evaluated once."""
    made: dict[int, Callable[[int], Fraction]] = {}
    return [made.setdefault(id(c), make(c)) for c in children]


def _coordinate(child: Measurement[Any, Any, Any, Any], i: int) -> Callable[[int], Fraction]:
    def f(k: int) -> Fraction:
        return child.map(k)[i]  # type: ignore[no-any-return]

    return f
