"""Description records for ``dp.explain``: each Measurement/Transformation carries one frozen Node.

A node describes, it does not interpret (STYLE §4): ``dp.explain`` walks the tree of nodes and evaluates
the maps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Node"]


@dataclass(frozen=True, slots=True)
class Node:
    """What a measurement or transformation is, for explanation.

    Args:
        name: short name (``"laplace"``, ``"sequential"``, ``"chain"``).
        params: the parameters that matter, as ``(name, value)`` text pairs.
        source: the paper/theorem behind this node's privacy or stability map.
        theorem: for a combinator, the composition theorem its map applies.
        interaction: ``"non-interactive"``, ``"sequential"``, ``"concurrent"``, ``"adaptive"``, …
        children: the parts this node is built from, in order.
        child_inputs: maps this node's ``d_in`` to each child's ``d_in`` (default: every child gets it).
        alternatives: maps ``d_in`` to the runners-up the policy rejected, as ``(theorem, value)`` pairs
            (value None for a theorem that applies but could not certify the case, its name saying why).
        verified: ``False`` for a user-written part (``make_user_measurement`` /
            ``make_user_transformation``): its map is the user's claim, not a library proof; its label
            says so wherever it is shown (``repr``, ``dp.explain``).
    """

    name: str
    params: tuple[tuple[str, str], ...] = ()
    source: str = ""
    theorem: str = ""
    interaction: str = "non-interactive"
    children: tuple[Any, ...] = ()
    child_inputs: Callable[[Any], tuple[Any, ...]] | None = field(default=None, compare=False)
    alternatives: Callable[[Any], tuple[tuple[str, Any], ...]] | None = field(default=None, compare=False)
    verified: bool = True

    def inputs_for_children(self, d_in: Any) -> tuple[Any, ...]:
        """Each child's ``d_in`` when this node receives ``d_in``."""
        if self.child_inputs is not None:
            return self.child_inputs(d_in)
        return tuple(d_in for _ in self.children)

    def label(self) -> str:
        """``name(param=value, …)``, with ``[UNVERIFIED]`` after a user-written part."""
        text = self.name
        if self.params:
            text += f"({', '.join(f'{k}={v}' for k, v in self.params)})"
        return text if self.verified else f"{text} [UNVERIFIED]"
