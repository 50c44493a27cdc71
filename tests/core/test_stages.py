"""How ``>>`` runs two functions (core/_stages): plainly, re-associated, or fused by a Stage."""

from __future__ import annotations

from typing import Any

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
