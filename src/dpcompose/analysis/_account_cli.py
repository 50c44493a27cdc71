"""``python -m dpcompose account``: the privacy of a list of mechanisms, from the command line.

Each mechanism is ``NAME:key=value,...`` (or an object in a JSON file): ``laplace`` (``scale``),
``gaussian`` (``sigma``), ``rr`` (``epsilon``, ``k``), ``approx`` (``epsilon``, ``delta``), each with
``count`` (default 1) and, for Laplace and Gaussian, ``sensitivity`` (default 1). ``rate=q`` runs the
mechanism on a subsample: ``sampling=poisson`` (default; each record kept with probability q, add/remove
neighbours) or ``sampling=without_replacement`` (a fixed-size subset, q = m/n; the sensitivity is then
the one for substituting a record). ``noise=dpcompose``
(default) accounts the noise dpcompose releases (discrete noise on a fine grid); ``noise=continuous`` the
textbook continuous mechanism. The composition is accounted with privacy loss distributions (certified
interval) and, beside it, the generic theorems (optimal composition, zCDP, basic).

Examples:
    >>> main(["--mech", "laplace:scale=10,count=100", "--delta", "1e-6"])  # doctest: +ELLIPSIS
    composition: 100 × laplace(scale=10)
    ε(δ=1e-06) ≤ 4.69267
    theorem: privacy loss distributions (Zhu–Dong–Wang 2022 Thm 10), certified
    ...
    0
"""

from __future__ import annotations

import argparse
import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dpcompose._serialize import unique_keys
from dpcompose._validation import check_finite_nonnegative
from dpcompose.accounting import (
    PrivacyLoss,
    basic,
    exact,
    format_down,
    format_up,
    optimal_delta,
    optimal_epsilon,
    zcdp_compose,
    zcdp_delta,
    zcdp_to_approx,
)
from dpcompose.accounting._common import probability
from dpcompose.accounting._filters import add_renyi_curves, pure_cost_to_renyi, zcdp_cost_to_renyi
from dpcompose.accounting._loss import delta_bounds
from dpcompose.accounting._rdp import RUNNER_UP_ORDERS
from dpcompose.accounting._zcdp import renyi_to_approx
from dpcompose.combinators._subsample import amplify_epsilon
from dpcompose.core import AbsoluteDistance, AtomDomain, CategoricalDomain, DiscreteDistance
from dpcompose.errors import DPError, InvalidParameter
from dpcompose.measurements import make_gaussian, make_laplace, make_randomized_response

__all__ = ["main"]

_SAMPLING_KEYS = {"rate", "sampling"}
_OPTIMAL_MAX = 100_000  # optimal composition is listed up to this many mechanisms (its input lists each)
_KEYS = {
    "laplace": {"scale", "sensitivity", "count", "noise"} | _SAMPLING_KEYS,
    "gaussian": {"sigma", "sensitivity", "count", "noise"} | _SAMPLING_KEYS,
    "rr": {"epsilon", "k", "count"} | _SAMPLING_KEYS,
    "approx": {"epsilon", "delta", "count"} | _SAMPLING_KEYS,
}


@dataclass(frozen=True)
class _Mechanism:
    label: str
    count: int
    loss: PrivacyLoss
    pure: Fraction | None  # ε (pure DP), or None
    approx: tuple[Fraction, Fraction] | None  # (ε, δ), or None
    rho: Fraction | None  # zCDP ρ, or None


def _number(value: Any, key: str, where: str) -> Any:
    if isinstance(value, str):
        try:
            return int(value) if value.lstrip("-").isdigit() else Fraction(value)  # '1e-6' is exact
        except (ValueError, ZeroDivisionError):
            raise InvalidParameter(f"{where}: {key}={value!r} is not a number") from None
    return value


def _mechanism(spec: dict[str, Any], where: str) -> _Mechanism:
    """One mechanism from its parameters, run on a subsample where ``rate`` is given (:func:`_subsampled`)."""
    if "rate" not in spec:
        if "sampling" in spec:
            raise InvalidParameter(f"{where}: sampling={spec['sampling']!r} needs a rate=")
        return _plain(spec, where)
    rate, sampling = spec["rate"], spec.get("sampling")
    if isinstance(rate, bool) or not isinstance(rate, int | float | str):
        raise InvalidParameter(f"{where}: rate={rate!r} must be a number in [0, 1]")
    inner = _plain({k: v for k, v in spec.items() if k not in _SAMPLING_KEYS}, where)
    return _subsampled(inner, rate, sampling or "poisson", where)


def _subsampled(m: _Mechanism, rate: Any, sampling: Any, where: str) -> _Mechanism:
    """``m`` run on a subsample: its pair subsampled (Zhu–Dong–Wang 2022 Thm 11 for Poisson sampling and
    add/remove neighbours, Prop. 30 without replacement and substitution; see
    :meth:`~dpcompose.accounting.PrivacyLoss.subsampled`), and its pure or (ε, δ) guarantee amplified to
    (log(1 + q(e^ε − 1)), qδ) (Balle–Barthe–Gaboardi 2018 Thm 8, resp. Thm 9) for the generic theorems. A
    zCDP guarantee has no amplification theorem here: a subsampled Gaussian is accounted by its pair alone.
    """
    q_in = _number(rate, "rate", where)  # (its own message names where; not prefixed again)
    try:  # PrivacyLoss.subsampled checks the rate (in [0, 1]) and the sampling
        loss = PrivacyLoss.subsampled(m.loss, q_in, sampling)
    except InvalidParameter as exc:
        raise InvalidParameter(f"{where}: {exc}") from None
    q = loss.params[0]
    assert isinstance(q, Fraction)
    pure = None if m.pure is None else amplify_epsilon(m.pure, q)
    approx = None if m.approx is None else (amplify_epsilon(m.approx[0], q), q * m.approx[1])
    rho = m.rho if q == 1 else None
    label = f"{m.label[:-1]}, rate={rate}{', ' + sampling if sampling != 'poisson' else ''})"
    return _Mechanism(label, m.count, loss, pure, approx, rho)


def _plain(spec: dict[str, Any], where: str) -> _Mechanism:
    """Build one mechanism from its parameters (as dpcompose's own measurement where there is one)."""
    name = spec.get("name")
    if name not in _KEYS:
        raise InvalidParameter(f"{where}: name={name!r} must be one of {', '.join(_KEYS)}")
    extra = set(spec) - _KEYS[name] - {"name"}
    if extra:
        raise InvalidParameter(
            f"{where}: unknown keys {sorted(extra)} for {name} (known: {sorted(_KEYS[name])})"
        )
    params = {k: (v if k == "noise" else _number(v, k, where)) for k, v in spec.items() if k != "name"}
    count = params.pop("count", 1)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise InvalidParameter(f"{where}: count={count!r} must be a positive integer")
    noise = params.pop("noise", "dpcompose")
    if noise not in ("dpcompose", "continuous"):
        raise InvalidParameter(f"{where}: noise={noise!r} must be 'dpcompose' or 'continuous'")
    shown = ", ".join(f"{k}={v}" for k, v in spec.items() if k not in ("name", "count"))
    label = f"{name}({shown})"
    if name in ("laplace", "gaussian"):
        sens = params.pop("sensitivity", 1)
        scale = params.get("scale" if name == "laplace" else "sigma")
        if scale is None:
            raise InvalidParameter(f"{where}: {name} needs {'scale' if name == 'laplace' else 'sigma'}=")
        floats = AtomDomain(float)
        maker = make_laplace if name == "laplace" else make_gaussian
        m = maker(floats, AbsoluteDistance(), scale=scale)
        cost = m.map(sens)
        if noise == "continuous":
            q_sens, q_scale = Fraction(sens), Fraction(scale)
            loss = (
                PrivacyLoss.laplace(q_sens, q_scale)
                if name == "laplace"
                else PrivacyLoss.gaussian(q_sens, q_scale)
            )
            cost = q_sens / q_scale if name == "laplace" else (q_sens / q_scale) ** 2 / 2
        else:
            found = m.privacy_loss(sens)
            assert found is not None  # scalar Laplace/Gaussian always report their pair
            loss = found
        if name == "laplace":
            return _Mechanism(label, count, loss, cost, (cost, Fraction(0)), cost * cost / 2)
        return _Mechanism(label, count, loss, None, None, cost)
    if name == "rr":
        k = params.get("k", 2)
        if isinstance(k, bool) or not isinstance(k, int) or not 2 <= k <= 10**6:
            raise InvalidParameter(f"{where}: k={k!r} must be an integer in [2, 10**6]")
        rr = make_randomized_response(
            CategoricalDomain(list(range(k))),
            DiscreteDistance(),
            epsilon=params.get("epsilon"),  # type: ignore[arg-type]
        )
        eps = rr.map(1)
        found = rr.privacy_loss(1)
        assert found is not None
        return _Mechanism(label, count, found, eps, (eps, Fraction(0)), eps * eps / 2)
    loss = PrivacyLoss.approx(params.get("epsilon"), params.get("delta", 0))  # type: ignore[arg-type]
    eps, d = Fraction(loss.params[0]), Fraction(loss.params[1])
    return _Mechanism(label, count, loss, eps if d == 0 else None, (eps, d), None)


class _Once(argparse.Action):
    """Store an option's value, noting (in ``repeated``) an option given twice, which argparse would
    otherwise resolve silently to the last value (abbreviations included)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        if getattr(namespace, self.dest, None) is not None:
            namespace.repeated = [*namespace.repeated, "/".join(self.option_strings)]
        setattr(namespace, self.dest, values)


def _parse_mech(text: str) -> dict[str, Any]:
    name, _, rest = text.partition(":")
    spec: dict[str, Any] = {"name": name.strip()}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq:
            raise InvalidParameter(f"--mech {text!r}: {item!r} must be key=value")
        if key.strip() in spec:  # (sigma=1,sigma=2 would otherwise keep the last silently)
            raise InvalidParameter(f"--mech {text!r}: {key.strip()!r} is given twice")
        spec[key.strip()] = value.strip()
    return spec


def _candidates(
    mechs: Sequence[_Mechanism], delta: Fraction | None, epsilon: Fraction | None
) -> list[tuple[str, Fraction]]:
    """The generic theorems that apply, each with its bound (ε at ``delta``, or δ at ``epsilon``)."""
    out: list[tuple[str, Fraction]] = []
    approx = [(m.approx, m.count) for m in mechs if m.approx is not None]
    if len(approx) == len(mechs):
        if sum(m.count for m in mechs) <= _OPTIMAL_MAX:  # (its inputs list every mechanism)
            eps = [a[0] for a, n in approx for _ in range(n)]
            dels = [a[1] for a, n in approx for _ in range(n)]
            name = "optimal composition (Kairouz–Oh–Viswanath 2015; Murtagh–Vadhan 2016)"
            with contextlib.suppress(DPError):  # refused where the children's δ already exceed the target
                if delta is not None:
                    out.append((name, optimal_epsilon(eps, dels, delta)))
                elif epsilon is not None:
                    out.append((name, optimal_delta(eps, dels, epsilon)))
        # basic composition adds: n copies of (ε, δ) are one (nε, nδ) (refused where nδ reaches 1)
        with contextlib.suppress(DPError):
            e_b, d_b = basic([a[0] * n for a, n in approx], [a[1] * n for a, n in approx])
            basic_name = "basic composition (Dwork et al. 2006)"
            if delta is not None and d_b <= delta:
                out.append((basic_name, e_b))
            if epsilon is not None and e_b <= epsilon:
                out.append((basic_name, d_b))
    curves = [_renyi_curve(m) for m in mechs] if delta is not None and delta > 0 else []
    if delta is not None and curves and all(c is not None for c in curves):
        # Rényi curves add (Mironov 2017 Prop. 1), converted at δ (Balle et al. 2020 Thm 21)
        parts = [(c, m.count) for m, c in zip(mechs, curves, strict=True) if c is not None]
        renyi = renyi_to_approx(RUNNER_UP_ORDERS, add_renyi_curves(parts, len(RUNNER_UP_ORDERS)), delta)
        name = "Rényi (Mironov 2017; Balle–Barthe–Gaboardi–Hsu–Sato 2020"
        if any(m.loss.kind == "subsampled" for m in mechs):
            name += "; subsampled: Mironov–Talwar–Zhang 2019 and PrivacyLoss.renyi's lemma"
        out.append((name + ")", renyi))
    if all(m.rho is not None for m in mechs):
        rho = zcdp_compose([m.rho * m.count for m in mechs if m.rho is not None])  # (ρ's add)
        name = "zCDP (Bun–Steinke 2016; Canonne–Kamath–Steinke 2020)"
        if delta is not None and delta > 0:
            out.append((name, zcdp_to_approx(rho, delta)))
        elif epsilon is not None:
            out.append((name, zcdp_delta(rho, epsilon)))
    return out


def _renyi_curve(m: _Mechanism) -> tuple[Fraction, ...] | None:
    """The mechanism's Rényi curve on RUNNER_UP_ORDERS: its pair's (PrivacyLoss.renyi), and where it is pure
    or zCDP (a subsampled pure mechanism: its amplified ε) the least of that and the pair's, or None."""
    own = m.loss.renyi(RUNNER_UP_ORDERS)
    if m.pure is not None:
        other = pure_cost_to_renyi(m.pure, RUNNER_UP_ORDERS)
    elif m.rho is not None:
        other = zcdp_cost_to_renyi(m.rho, RUNNER_UP_ORDERS)
    else:
        return own
    return other if own is None else tuple(min(a, b) for a, b in zip(own, other, strict=True))


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m dpcompose account`` (returns the exit status)."""
    parser = argparse.ArgumentParser(
        prog="python -m dpcompose account",
        description="ε for a δ (or δ for an ε) of a composition of mechanisms, certified.",
    )
    parser.add_argument(
        "--mech",
        action="append",
        default=[],
        metavar="NAME:key=value,...",
        help="a mechanism: laplace:scale=10,count=1000 | gaussian:sigma=20 | rr:epsilon=1,k=4 | "
        "approx:epsilon=1,delta=1e-9 (repeatable); add rate=0.01 (and sampling=without_replacement) to "
        "run it on a subsample",
    )
    parser.add_argument(
        "--file",
        action=_Once,
        help='a JSON file: {"mechanisms": [{"name": "laplace", "scale": 10, '
        '"count": 1000}, ...], "delta": 1e-6}',
    )
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--delta", action=_Once, help="report ε at this δ")
    target.add_argument("--epsilon", action=_Once, help="report δ at this ε")
    parser.add_argument(
        "--plot", action=_Once, metavar="FILE", help="also draw δ(ε) to FILE (needs matplotlib)"
    )
    parser.set_defaults(repeated=[])
    args = parser.parse_args(argv)
    try:
        if args.repeated:  # (argparse would keep the last one silently)
            raise InvalidParameter(f"{args.repeated[0]} is given more than once")
        specs = [_parse_mech(t) for t in args.mech]
        delta_text, eps_text = args.delta, args.epsilon
        if args.file:
            try:
                with open(args.file, encoding="utf-8") as fh:
                    # (a repeated key is refused: json keeps the last value silently, so
                    # {"sigma": 1, "sigma": 50} would be accounted at σ = 50)
                    data = json.load(fh, object_pairs_hook=unique_keys)
            except (OSError, ValueError) as exc:  # (SerializationError, a ValueError too: a repeated key)
                raise InvalidParameter(f"--file {args.file!r}: {exc}") from None
            if not isinstance(data, dict) or not isinstance(data.get("mechanisms"), list):
                raise InvalidParameter(f"--file {args.file!r}: needs an object with a 'mechanisms' list")
            specs += [dict(s) if isinstance(s, dict) else {"name": s} for s in data["mechanisms"]]
            if data.get("delta") is not None and data.get("epsilon") is not None:
                raise InvalidParameter(  # (neither is picked silently)
                    f"--file {args.file!r}: give 'delta' (to get ε) or 'epsilon' (to get δ), not both"
                )
            if (args.delta is not None and data.get("epsilon") is not None) or (
                args.epsilon is not None and data.get("delta") is not None
            ):
                raise InvalidParameter(
                    f"--file {args.file!r} gives the other target than the command line: give one of them"
                )
            delta_text = delta_text if delta_text is not None else data.get("delta")
            eps_text = eps_text if eps_text is not None else data.get("epsilon")
        if not specs:
            raise InvalidParameter("no mechanisms: pass --mech NAME:key=value,... or --file FILE")
        if delta_text is None and eps_text is None:
            raise InvalidParameter("pass --delta (to get ε) or --epsilon (to get δ)")
        mechs = [_mechanism(s, f"mechanism {i}") for i, s in enumerate(specs)]
        # (n copies as one composed part, so that count = 10⁸ does not build a list of 10⁸ entries)
        total = PrivacyLoss.compose(
            [PrivacyLoss("composed", (), ((m.loss, m.count),)) if m.count > 1 else m.loss for m in mechs]
        )
        shown = "composition: " + " + ".join(
            f"{m.count} × {m.label}" if m.count > 1 else m.label for m in mechs
        )
        pld_name = "privacy loss distributions (Zhu–Dong–Wang 2022 Thm 10), certified"
        if delta_text is not None:
            delta = probability(_number(delta_text, "delta", "--delta"), "delta")
            what, at = "ε", f"δ={float(delta):g}"
            lo, hi = total.epsilon_bounds(delta)
            results = [(pld_name, hi), *_candidates(mechs, delta, None)]
        else:
            epsilon = exact(
                check_finite_nonnegative(_number(eps_text, "epsilon", "--epsilon"), "epsilon"), "epsilon"
            )
            what, at = "δ", f"ε={float(epsilon):g}"
            lo, hi = delta_bounds(total, epsilon)
            results = [(pld_name, hi), *_candidates(mechs, None, epsilon)]
        best_name, best = min(results, key=lambda r: r[1])
        print(shown)  # (after the work: a refused case prints its error line alone)
        print(f"{what}({at}) ≤ {format_up(best)}")
        print(f"theorem: {best_name}")
        print(f"PLD certified interval: [{format_down(lo)}, {format_up(hi)}] (sources: {total.source})")
        print("all candidates:")
        for name, value in results:
            print(f"  {what} ≤ {format_up(value):<10} {name}{'  (chosen)' if name == best_name else ''}")
        if args.plot:
            _plot(total, args.plot)
            print(f"plot: {args.plot}")
    except DPError as exc:
        print(f"error: {exc}")
        return 2
    return 0


def _plot(total: PrivacyLoss, path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InvalidParameter("--plot needs matplotlib: pip install 'dpcompose[plot]'") from None
    top = max(total.span(), 1e-3)
    xs = [top * i / 200 for i in range(201)]
    ys = [float(d) for d in total.deltas(xs)]  # (one curve: each PLD read once for all 201 points)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.semilogy(xs, [max(y, 1e-300) for y in ys])
    ax.set_xlabel("ε")
    ax.set_ylabel("δ(ε), certified upper bound")
    ax.set_title(total.label()[:80])
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
