"""Parallel composition over the disjoint parts of a partition."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose.accounting import group, group_zcdp
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

__all__ = ["EXACT_LIMIT", "make_parallel", "worst_allocation"]

#: The most child-map evaluations (distinct children × changed records) ``make_parallel``'s map spends on
#: the exact worst case when the group-privacy closed form does not settle it (under a second for two
#: float-sum children on an idle core); beyond it the map refuses rather than run for minutes. It counts
#: map evaluations only: children whose maps are neither convex nor concave in k also cost
#: :func:`worst_allocation`'s O(parts · k²) exact additions.
EXACT_LIMIT = 2**15


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

    A large d_in is answered in closed form by group privacy (proved at ``_group_closed_form``): with every
    library Laplace or Gaussian count as a child that is exactly the worst case above, from two
    evaluations of each child's map. Where the closed form does not settle it, the worst case is computed
    exactly up to :data:`EXACT_LIMIT` child-map evaluations, and a larger ``d_in`` is refused with
    ``InvalidParameter``.

    Children may be interactive; their queryables stay open (the data is static).

    Source: McSherry 2009 (PINQ) Thm 4 (parallel composition); interactive children:
    Henzinger–Safavi–Vadhan 2024 (parallel composition of interactive mechanisms on static data); the
    closed form: group privacy (Dwork–Roth 2014 Thm 2.2; Bun–Steinke 2016 Prop. 1.9; Vadhan 2017
    Lemma 2.2), the rule of DESIGN.md §3.

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
    distinct = list({id(c): c for c in children}.values())
    # group privacy reaches a part k records away through k neighbours only inside an unsized domain
    unsized = isinstance(part_domain, VectorDomain) and part_domain.size is None

    def privacy_map(d_in: Any) -> Any:
        total = partition.map(d_in)
        maps = {id(c): functools.cache(c.map) for c in distinct}  # each child's map read once per k
        closed = _group_closed_form(list(maps.values()), measure, total) if unsized else None
        if closed is not None:
            return closed
        if type(total) is int and len(distinct) * total > EXACT_LIMIT:
            raise InvalidParameter(
                f"d_in={d_in!r}: make_parallel's exact worst case would evaluate the maps of its "
                f"{len(distinct)} distinct children at every k ≤ {total} changed records "
                f"({len(distinct) * total} evaluations, above EXACT_LIMIT = {EXACT_LIMIT}), and the "
                "group-privacy closed form does not settle it (a child's map at that many records is "
                "below its group-privacy bound k·map(1)); pass a d_in with at most "
                f"{EXACT_LIMIT // len(distinct)} changed records over the parts, or bound groups from "
                "d_in = 1 with dp.make_group(measurement, k).map(1) (valid, possibly looser; on "
                "ChangeOneDistance for a fixed-size domain)"
            )
        if approx:
            eps = worst_allocation(_shared(children, lambda c: _coordinate(maps[id(c)], 0)), total)
            delta = worst_allocation(_shared(children, lambda c: _coordinate(maps[id(c)], 1)), total)
            return eps, delta
        return worst_allocation(_shared(children, lambda c: maps[id(c)]), total)

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


def _group_closed_form(maps: Sequence[Callable[[int], Any]], measure: Any, total: Any) -> Any:
    """The worst case of ``total`` changed records over disjoint parts, by group privacy, or ``None``.

    ``maps`` are the privacy maps of the distinct children, each under ``SymmetricDistance`` on an unsized
    ``VectorDomain`` (so a part k records away is reached through k neighbouring parts inside the domain);
    gᵢ(k) is child i's map at k records, and T = ``total``.

    Theorem. Group privacy bounds child i at k records by Gᵢ(k), from its map at one record:

    * PureDP: Gᵢ(k) = k·gᵢ(1) (Dwork–Roth 2014 Thm 2.2);
    * ZCDP: Gᵢ(k) = k²·gᵢ(1) (Bun–Steinke 2016 Prop. 1.9);
    * ApproxDP, gᵢ(1) = (εᵢ, δᵢ): Gᵢ(k) = (k·εᵢ, δᵢ·Σ_{j<k} e^{j·εᵢ}) (Vadhan 2017 Lemma 2.2; rounded up
      by :func:`dpcompose.accounting.group`).

    Parallel composition (McSherry 2009 Thm 4) of the touched parts then costs Σᵢ Gᵢ(kᵢ) with
    Σᵢ kᵢ ≤ T. Each Gᵢ (each coordinate of it) is convex in k with Gᵢ(0) = 0, so Gᵢ(kᵢ) ≤ (kᵢ/T)·Gᵢ(T)
    and Σᵢ Gᵢ(kᵢ) ≤ maxᵢ Gᵢ(T) =: U: a valid bound at distance T (for (ε, δ), the worst ε and the worst δ
    are bounded separately, as :func:`make_parallel` does). The exact worst case W over the children's
    own maps (:func:`worst_allocation`) is valid too, and W ≥ L := maxᵢ gᵢ(T), since putting all T records
    into one part is an allocation. So when L ≥ U (each coordinate), U ≤ W and U is returned: it equals W
    whenever no child's map exceeds its group-privacy bound (linear ε, quadratic ρ — a Laplace or
    Gaussian count), and it is the tighter of the two otherwise. When L < U nothing is decided without
    every gᵢ(k), and ``None`` is returned. Cost: two evaluations of each child's map.

    Examples:
        >>> import dpcompose as dp
        >>> rows = dp.VectorDomain(dp.AtomDomain(int))
        >>> lap = dp.t.make_count(rows, dp.SymmetricDistance()) >> dp.m.make_laplace(
        ...     dp.AtomDomain(int), dp.AbsoluteDistance(), scale=2.0)
        >>> _group_closed_form([lap.map], dp.PureDP(), 10**12)
        Fraction(500000000000, 1)
    """
    if type(total) is not int or total < 1:
        return None
    ones = [g(1) for g in maps]
    at_total = [g(total) for g in maps]
    if isinstance(measure, PureDP):
        bound = max(group(e, 0, total)[0] for e in ones)
        return bound if max(at_total) >= bound else None
    if isinstance(measure, ZCDP):
        bound = max(group_zcdp(r, total) for r in ones)
        return bound if max(at_total) >= bound else None
    if any(d >= 1 for _, d in ones):
        return None  # δ = 1 says nothing; group() takes δ < 1
    pairs = [group(e, d, total) for e, d in ones]
    eps, delta = max(e for e, _ in pairs), max(d for _, d in pairs)
    if max(e for e, _ in at_total) >= eps and max(d for _, d in at_total) >= delta:
        return eps, delta
    return None


def _shared(
    children: Sequence[Measurement[Any, Any, Any, Any]],
    make: Callable[[Measurement[Any, Any, Any, Any]], Callable[[int], Fraction]],
) -> list[Callable[[int], Fraction]]:
    """One map function per distinct child object, so repeated children are evaluated once."""
    made: dict[int, Callable[[int], Fraction]] = {}
    return [made.setdefault(id(c), make(c)) for c in children]


def _coordinate(child_map: Callable[[int], Any], i: int) -> Callable[[int], Fraction]:
    def f(k: int) -> Fraction:
        return child_map(k)[i]  # type: ignore[no-any-return]

    return f
