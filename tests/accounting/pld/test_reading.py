"""The PLD record holds its content and its reading, a strategy object per representation variant
(``_pld/reading.py``), and its sides in a :class:`Sides` built on first use (``_pld/lazy.py``)."""

from __future__ import annotations

import dataclasses

import numpy as np

from dpcompose.accounting import pld_gaussian, pld_laplace, pld_subsampled_gaussian
from dpcompose.accounting._pld.distribution import PLD, one_way
from dpcompose.accounting._pld.lazy import Sides
from dpcompose.accounting._pld.reading import (
    FromConstructor,
    GaussianReading,
    PairReading,
    SidesReading,
    TiltedReading,
)
from dpcompose.accounting._pld.side import Side


def test_the_record_holds_its_content_and_its_reading() -> None:
    # (no field exists only as a cache or a lazy builder: those live in the reading's Sides)
    names = [f.name for f in dataclasses.fields(PLD)]
    assert names == ["step_bits", "reading", "tail", "description", "sampling", "step_mult"]


def test_each_variant_is_a_type() -> None:
    short = pld_laplace(1, 10)
    assert type(short.reading) is SidesReading and short.gaussian is None and short.reverse is None
    g = pld_gaussian(1, 5)
    assert type(g.reading) is GaussianReading and g.gaussian is not None
    long = pld_laplace(1, 10).self_compose(1000)
    assert type(long.reading) is TiltedReading and long.recipe is long.reading.recipe
    step = pld_subsampled_gaussian(1.0, 0.01)
    assert type(step.reading) is FromConstructor and type(step.reading.inner) is PairReading
    assert step.thin is step.reading.thin and step.reverse is step.reading.reverse
    run = step.self_compose(1000)
    assert type(run.reading) is PairReading and type(run.reading.first) is TiltedReading
    assert run.reverse is not None and type(run.reverse.reading) is TiltedReading
    view = one_way(run)
    assert view.reverse is None and view.reading is run.reading.first and view.recipe is run.recipe


def test_an_order_read_alone_builds_on_the_pair_once() -> None:
    step = pld_subsampled_gaussian(1.0, 0.05)
    assert step.upper_if_built is None
    first = one_way(step)
    assert first.reading.sides is step.reading.sides  # (one Sides: a side is built once, for both)
    side = first.upper
    assert step.upper_if_built is side and step.upper is side


def _side(value: float) -> Side:
    return Side(0, np.array([value]), 0.0, 0.0, np.array([value]), 0.0)


def test_sides_build_each_side_once_and_only_where_read() -> None:
    calls: list[str] = []

    def make(name: str, value: float) -> Side:
        calls.append(name)
        return _side(value)

    sides = Sides(make_upper=lambda: make("upper", 1.0), make_lower=lambda: make("lower", 0.5))
    assert sides.lazy_lower and sides.upper_if_built is None and sides.lower_if_built is None
    low = sides.lower
    assert calls == ["lower"] and sides.upper_if_built is None
    assert sides.lower is low and sides.upper is sides.upper and calls == ["lower", "upper"]
    built = Sides(_side(1.0), _side(0.5))
    assert not built.lazy_lower and built.lower_if_built is not None


def test_sides_made_by_one_build_read_the_lower_side_from_it() -> None:
    made: list[Sides] = []

    def make() -> Sides:
        s = Sides(_side(1.0), make_lower=lambda: _side(0.5))
        made.append(s)
        return s

    sides = Sides(make=make)
    assert sides.upper.masses[0] == 1.0 and len(made) == 1
    assert sides.lower_if_built is None  # (the made PLD's lower side is built where read)
    assert sides.lower is made[0].lower and sides.lower_if_built is made[0].lower_if_built
    assert len(made) == 1
