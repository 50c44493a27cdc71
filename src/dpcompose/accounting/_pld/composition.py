"""``compose_plds``: the composition of a list of PLDs, equal ones (by content) composed as one group."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from dpcompose._validation import check_positive_int
from dpcompose.accounting._pld.distribution import PLD, compose_groups
from dpcompose.accounting._pld.lattice import ALIGN_HINT
from dpcompose.accounting._pld.side import Side
from dpcompose.errors import InvalidParameter


def compose_plds(plds: Sequence[PLD]) -> PLD:
    """The PLD of the sequential composition of mechanisms with these PLDs.

    Equal objects are grouped and self-composed by repeated squaring, then the groups are convolved.

    Source: Koskela et al. 2020 (convolution of PLDs); Zhu–Dong–Wang 2022 Thm 10 (products of
    dominating pairs dominate adaptive compositions).

    Raises:
        InvalidParameter: the list is empty, holds a non-PLD, or mixes lattices.
        UnsupportedComposition: it mixes Poisson sampling with sampling without replacement (``sampling``):
            their pairs hold under different neighbouring relations.

    Examples:
        >>> from dpcompose.accounting import pld_laplace, pld_randomized_response
        >>> a, b = pld_laplace(1, 10), pld_randomized_response(0.1)
        >>> float(compose_plds([a, b, a]).epsilon(1e-6)) <= 0.3001
        True
    """
    if isinstance(plds, PLD) or not isinstance(plds, Sequence) or len(plds) == 0:
        raise InvalidParameter(f"plds={plds!r} must be a non-empty sequence of PLDs")
    groups: dict[object, tuple[PLD, int]] = {}
    keys: dict[int, object] = {}
    for i, p in enumerate(plds):
        if not isinstance(p, PLD):
            raise InvalidParameter(f"plds[{i}]={p!r} must be a PLD")
        key = keys.get(id(p))
        if key is None:
            key = keys[id(p)] = content_key(p)  # equal PLDs built separately share one FFT
        prev = groups.get(key)
        groups[key] = (p, 1 if prev is None else prev[1] + 1)
    return _compose_keyed(groups)


def compose_counted(counted: Sequence[tuple[PLD, int]]) -> PLD:
    """:func:`compose_plds` of ``n`` copies of each PLD of ``counted`` (pairs ``(pld, n)``), without a list of
    all the copies.

    Source: as :func:`compose_plds`.

    Raises:
        InvalidParameter: the list is empty, holds a non-PLD or a count below 1, or mixes lattices.
        UnsupportedComposition: it mixes Poisson sampling with sampling without replacement.

    Examples:
        >>> from dpcompose.accounting import pld_laplace
        >>> a = pld_laplace(1, 10)
        >>> compose_counted([(a, 3)]).epsilon(1e-6) == compose_plds([a] * 3).epsilon(1e-6)
        True
    """
    if isinstance(counted, PLD) or not isinstance(counted, Sequence) or len(counted) == 0:
        raise InvalidParameter(f"counted={counted!r} must be a non-empty sequence of (PLD, count) pairs")
    groups: dict[object, tuple[PLD, int]] = {}
    for i, item in enumerate(counted):
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], PLD)):
            raise InvalidParameter(f"counted[{i}]={item!r} must be a (PLD, count) pair")
        p, n = item[0], check_positive_int(item[1], f"counted[{i}] count")
        key = content_key(p)
        prev = groups.get(key)
        groups[key] = (p, n if prev is None else prev[1] + n)
    return _compose_keyed(groups)


def _compose_keyed(groups: dict[object, tuple[PLD, int]]) -> PLD:
    """:func:`compose_plds` once equal PLDs are grouped (their lattices checked here)."""
    first = next(iter(groups.values()))[0]
    for p, _ in groups.values():
        if p.grid != first.grid:
            raise InvalidParameter(
                f"plds mix the lattices h={first.grid.describe()} and h={p.grid.describe()}: build all PLDs "
                f"on the same lattice{ALIGN_HINT}"
            )
    desc = " ∘ ".join(f"{n} × {p.description}" if n > 1 else p.description for p, n in groups.values())
    return compose_groups(list(groups.values()), desc)


def content_key(p: PLD) -> object:
    """A key equal for PLDs with equal contents (step, tail, both sides' numbers, reverse)."""

    def side(sd: Side) -> object:
        digest = hashlib.sha256(np.ascontiguousarray(sd.masses).tobytes()).hexdigest()
        nq = None if sd.nq is None else hashlib.sha256(np.ascontiguousarray(sd.nq).tobytes()).hexdigest()
        return (sd.offset, sd.masses.size, digest, sd.inf, sd.err, nq, sd.nq_err)

    if p.gaussian is not None and p.reverse is None:
        return (p.grid, p.tail, p.gaussian, p.sampling)
    key = p.reading.key
    if key is not None:
        return ("built from", key)
    rev = None if p.reverse is None else content_key(p.reverse)
    # a lower side built on first use is not built for a key: such PLDs (composites) are grouped by identity,
    # whether it has been built since or not (so that the grouping, and the composite's numbers, do not
    # depend on what was read before)
    low = ("lazy", id(p)) if p.reading.sides.lazy_lower else side(p.lower)
    return (p.grid, p.tail, p.gaussian, side(p.upper), low, rev, p.sampling)
