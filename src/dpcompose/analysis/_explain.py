"""``dp.explain``: the tree of a measurement, each node with its measure, cost and theorem."""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from dpcompose.accounting import format_up
from dpcompose.core import Measurement, Transformation
from dpcompose.errors import InvalidParameter

__all__ = ["Explanation", "ExplanationRow", "explain"]

_NOT_USED = "—"  # the cost shown for a candidate theorem that could not certify the case


@dataclass(frozen=True, slots=True)
class ExplanationRow:
    """One node of the tree: its depth, label, interaction, measure/metric, cost at its ``d_in``,
    theorem, source, and the runners-up the policy rejected (theorem, cost); ``chosen`` marks those whose
    exact cost is the one chosen (a shown cost rounds: basic's ε = 0.3 and optimal's 0.29999999 both
    show as 0.3, and only the exact one is marked chosen)."""

    depth: int
    label: str
    interaction: str
    measure: str
    d_in: str
    cost: str
    theorem: str
    source: str
    runners_up: tuple[tuple[str, str], ...] = ()
    chosen: tuple[bool, ...] = ()

    def is_chosen(self, i: int) -> bool:
        """Whether runner-up ``i`` is the one chosen (by its exact cost where known, else as shown)."""
        if i < len(self.chosen):
            return self.chosen[i]
        return self.runners_up[i][1] == self.cost

    def mark(self, i: int) -> str:
        """How runner-up ``i`` is marked: chosen, a runner-up, or not used (it could not certify the case:
        its theorem column says why)."""
        if self.runners_up[i][1] == _NOT_USED:
            return "not used"
        return "chosen" if self.is_chosen(i) else "runner-up"


@dataclass(frozen=True, slots=True)
class Explanation:
    """The explained tree, as rows in depth-first order; prints as a table."""

    rows: tuple[ExplanationRow, ...]

    def __str__(self) -> str:
        headers = ("node", "interaction", "measure", "d_in", "cost", "theorem / source")
        table = []
        for r in self.rows:
            why = r.theorem + (f" — {r.source}" if r.source and r.theorem else r.source)
            table.append(("  " * r.depth + r.label, r.interaction, r.measure, r.d_in, r.cost, why))
            for i, (theorem, value) in enumerate(r.runners_up):
                table.append(("  " * (r.depth + 1) + "· " + r.mark(i), "", "", "", value, theorem))
        widths = [max(len(h), *(len(row[i]) for row in table)) for i, h in enumerate(headers)]
        lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
        lines.append("  ".join("-" * w for w in widths))
        lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in table]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"Explanation({len(self.rows)} nodes)\n{self}"

    def _repr_html_(self) -> str:
        """The table as HTML, for Jupyter (every cell escaped; depth shown as indentation)."""
        headers = ("node", "interaction", "measure", "d_in", "cost", "theorem / source")
        out = [
            "<table>",
            "<thead><tr>" + "".join(f"<th>{h}</th>" for h in headers) + "</tr></thead>",
            "<tbody>",
        ]
        for r in self.rows:
            why = r.theorem + (f" — {r.source}" if r.source and r.theorem else r.source)
            cells = (r.label, r.interaction, r.measure, r.d_in, r.cost, why)
            pad = f' style="padding-left: {1.5 * r.depth + 0.5:g}em"'
            out.append(
                "<tr>"
                + "".join(f"<td{pad if i == 0 else ''}>{html.escape(c)}</td>" for i, c in enumerate(cells))
                + "</tr>"
            )
            for i, (theorem, value) in enumerate(r.runners_up):
                mark = r.mark(i)
                out.append(
                    f'<tr><td style="padding-left: {1.5 * r.depth + 2:g}em">· {mark}</td><td></td><td></td>'
                    f"<td></td><td>{html.escape(value)}</td><td>{html.escape(theorem)}</td></tr>"
                )
        out += ["</tbody>", "</table>"]
        return "\n".join(out)


def _same(a: Any, b: Any) -> bool:
    """Exact equality of two costs (numbers or tuples of numbers; False where they do not compare)."""
    try:
        return bool(a == b)
    except Exception:  # (an array-like cost has no single truth value)
        return False


def _display_cost(node: Measurement[Any, Any, Any, Any] | Transformation[Any, Any, Any, Any], d: Any) -> str:
    if isinstance(node, Measurement):
        return node.output_measure.display(d)
    return f"d_out={_num(d)}"


def _num(d: Any) -> str:
    """A distance (``d_in``, a transformation's ``d_out``) rounded up; a tuple of numbers (e.g. the
    (l0, l1, l∞) of ``L01InfDistance``) element by element; else its repr.

    Examples:
        >>> from fractions import Fraction
        >>> _num(Fraction(1, 3)), _num((1, Fraction(2, 1), Fraction(1, 3))), _num("x")
        ('0.333334', '(1, 2, 0.333334)', "'x'")
    """
    if isinstance(d, tuple) and d:
        try:
            return "(" + ", ".join(format_up(x) for x in d) + ")"
        except InvalidParameter:
            return repr(d)
    try:
        return format_up(d)
    except InvalidParameter:
        return repr(d)


def explain(
    measurement: Measurement[Any, Any, Any, Any] | Transformation[Any, Any, Any, Any], d_in: Any
) -> Explanation:
    """Explain where a measurement's privacy cost at ``d_in`` comes from, node by node.

    Every node's cost is evaluated with its own map at the ``d_in`` it receives (a transformation's
    output distance flows on to the next node of a chain).

    Examples:
        >>> import dpcompose as dp
        >>> data = dp.VectorDomain(dp.AtomDomain(int))
        >>> m = dp.t.make_count(data, dp.SymmetricDistance()) >> dp.m.make_laplace(
        ...     dp.AtomDomain(int), dp.AbsoluteDistance(), scale=2.0)
        >>> print(dp.explain(m, 1))
        node                  interaction      measure  d_in  cost     theorem / source
        --------------------  ---------------  -------  ----  -------  -----------------------------------
        chain                 non-interactive  PureDP   1     ε=0.5    stability map, then privacy map
          count               non-interactive  metric   1     d_out=1  Dwork–Roth 2014 §3.3
          laplace(scale=2.0)  non-interactive  PureDP   1     ε=0.5    Ghosh–Roughgarden–Sundararajan 2009
    """
    if not isinstance(measurement, (Measurement, Transformation)):
        raise InvalidParameter(f"measurement={measurement!r} must be a Measurement or a Transformation")
    rows: list[ExplanationRow] = []
    _walk(measurement, measurement.input_metric.validate(d_in), 0, rows)
    return Explanation(tuple(rows))


def _interaction(interactive: bool, kind: str) -> str:
    """The interaction column: the node's own kind, marked ``interactive`` when its output is a queryable."""
    if not interactive or kind == "interactive":
        return kind
    if kind == "non-interactive":
        return "interactive"
    return f"interactive, {kind}"


def _walk(node: Any, d_in: Any, depth: int, rows: list[ExplanationRow], repeat: int = 1) -> None:
    """Append the rows of ``node`` (shown once with ``×repeat`` when it is repeated) and its subtree."""
    info = node.node
    cost = node.map(d_in)
    measure = repr(node.output_measure).removesuffix("()") if isinstance(node, Measurement) else "metric"
    runners: tuple[tuple[str, str], ...] = ()
    chosen: tuple[bool, ...] = ()
    if info.alternatives is not None:
        alternatives = info.alternatives(d_in)  # (a value None: a candidate that could not certify, and why)
        runners = tuple(
            (name, _NOT_USED if value is None else _display_cost(node, value)) for name, value in alternatives
        )
        chosen = tuple(value is not None and _same(value, cost) for _, value in alternatives)
    rows.append(
        ExplanationRow(
            depth=depth,
            label=info.label() + (f" ×{repeat}" if repeat > 1 else ""),
            interaction=_interaction(getattr(node, "interactive", False), info.interaction),
            measure=measure,
            d_in=_num(d_in),
            cost=_display_cost(node, cost),
            theorem=info.theorem,
            source=info.source,
            runners_up=runners,
            chosen=chosen,
        )
    )
    pairs = list(zip(info.children, info.inputs_for_children(d_in), strict=True))
    i = 0
    while i < len(pairs):
        child, child_d = pairs[i]
        repeat = 1
        while i + repeat < len(pairs) and pairs[i + repeat][0] is child and pairs[i + repeat][1] == child_d:
            repeat += 1
        _walk(child, child_d, depth + 1, rows, repeat)
        i += repeat
