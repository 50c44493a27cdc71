"""How ``>>`` runs two functions (core/_stages): plainly, re-associated, or fused by a Stage."""

from __future__ import annotations

from typing import Any

import dpcompose as dp
from dpcompose.core._stages import Composed, Stage, compose


def test_compose_reassociates_and_offers_stages() -> None:
    seen: list[object] = []

    class Twice(Stage):
        def __call__(self, data: Any) -> Any:
            return 2 * data

        def after(self, first: Any) -> Any:
            seen.append(first)
            return Stage.after(self, first)

    def inc(v: int) -> int:
        return v + 1

    f = compose(compose(inc, inc), Twice())
    assert f(1) == 6 and seen == [inc]
    g = compose(inc, compose(Twice(), inc))
    assert g(1) == 5 and isinstance(g, Composed)


def test_a_long_chain_runs_in_one_frame() -> None:
    """5,000 links (far past the recursion limit were each link a frame) build and run; the parts are flat."""
    f: Any = abs
    for _ in range(5_000):
        f = compose(f, abs)
    assert f(-3) == 3 and isinstance(f, Composed) and len(f.parts) == 5_001


def test_long_chains_of_transformations_run() -> None:
    first = dp.t.make_clamp(dp.VectorDomain(dp.AtomDomain(float)), dp.SymmetricDistance(), bounds=(0.0, 1.0))
    t = dp.t.make_clamp(first.output_domain, dp.SymmetricDistance(), bounds=(0.0, 1.0))
    chain = first
    for _ in range(1_500):
        chain = chain >> t
    assert list(chain([2.0, -1.0, 0.5])) == [1.0, 0.0, 0.5]
