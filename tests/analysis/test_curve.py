"""dp.privacy_curve and dp.plot_profile (issue 14, notebook display)."""

from __future__ import annotations

import sys
import types
from fractions import Fraction
from typing import Any

import pytest

import dpcompose as dp

INT = dp.AtomDomain(int)
ABS = dp.AbsoluteDistance()


def test_curves_per_measure() -> None:
    lap = dp.m.make_laplace(INT, ABS, scale=2.0)
    pair = lap.privacy_loss(1)
    assert pair is not None
    curve = dp.privacy_curve(lap, 1, [1e-9, 0.1])
    assert [d for d, _ in curve] == [Fraction(1, 10**9), Fraction(1, 10)]
    for delta, eps in curve:  # ε = 1/2 from the measure, below it from the pair where δ > 0
        assert eps == min(Fraction(1, 2), pair.epsilon(delta))
    assert Fraction(1, 2) - Fraction(1, 10**5) < curve[0][1] < Fraction(1, 2)  # δ = 1e-9: a hair below
    assert curve[1][1] is not None and curve[1][1] < 0.33  # δ = 0.1 buys ε well below 1/2
    rr = dp.m.make_randomized_response_approx(
        dp.CategoricalDomain([0, 1]), dp.DiscreteDistance(), 1.0, Fraction(1, 10**4)
    )
    assert dp.privacy_curve(rr, 1, [1e-5, 1e-4]) == [(Fraction(1, 10**5), None), (Fraction(1, 10**4), 1)]
    gauss = dp.m.make_gaussian(INT, ABS, scale=4.0)
    curve = dp.privacy_curve(gauss, 1)
    eps = [e for _, e in curve]
    assert all(e is not None for e in eps)
    assert eps == sorted(eps, reverse=True)  # ε falls as δ grows
    zcdp = dp.accounting.zcdp_to_approx(gauss.map(1), curve[0][0])
    pair = gauss.privacy_loss(1)
    assert pair is not None
    assert curve[0][1] == min(zcdp, pair.epsilon(curve[0][0])) < zcdp  # the pair's curve is the tighter


@pytest.mark.parametrize("scale", [0.5, 4.0, 30.0])
def test_a_gaussian_curve_is_its_exact_curve_rounded_up(scale: float) -> None:
    """The continuous Gaussian's curve, against Balle–Wang 2018 Thm 8 in 50-digit arithmetic: at each
    reported ε the true δ(ε) is at most δ (never under-reported), and the reported ε is within 1e-6 of the
    exact one (it was zCDP's conversion, several percent above, before the pair was read)."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 50
    mu = mpmath.mpf(1) / mpmath.mpf(scale)
    phi = mpmath.ncdf

    def delta_of(eps: Any) -> Any:
        e = mpmath.mpf(eps)
        return phi(mu / 2 - e / mu) - mpmath.exp(e) * phi(-mu / 2 - e / mu)

    g = dp.m.make_gaussian(dp.AtomDomain(float), ABS, scale=scale)
    for delta, eps in dp.privacy_curve(g, 1, [1e-12, 1e-6, 1e-3, 0.1]):
        assert eps is not None
        assert delta_of(eps) <= delta
        lo, hi = mpmath.mpf(0), mpmath.mpf(200)  # δ(ε) falls in ε: bisect for δ(ε) = δ
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if delta_of(mid) > delta else (lo, mid)
        exact = hi if delta_of(0) > delta else 0  # (δ(0) <= δ: ε = 0 is exact)
        assert 0 <= eps - exact <= 1e-6 * max(1, exact), (delta, float(eps), float(exact))


def test_bad_deltas_are_refused() -> None:
    lap = dp.m.make_laplace(INT, ABS, scale=2.0)
    with pytest.raises(dp.InvalidParameter, match=r"deltas\[1\]"):
        dp.privacy_curve(lap, 1, [0.1, 1.5])
    with pytest.raises(dp.InvalidParameter, match="measurement"):
        dp.privacy_curve("laplace", 1)  # type: ignore[arg-type]


def test_plot_profile_draws_the_certified_points(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in for matplotlib records what is drawn (matplotlib is an optional extra)."""
    calls: dict[str, Any] = {}

    class Axes:
        def plot(self, xs: list[float], ys: list[float], **kw: Any) -> None:
            calls["xy"] = (xs, ys)

        def __getattr__(self, name: str) -> Any:
            return lambda *a, **k: calls.setdefault(name, a)

    pyplot = types.ModuleType("matplotlib.pyplot")
    pyplot.subplots = lambda **kw: (None, Axes())  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "matplotlib", types.ModuleType("matplotlib"))
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", pyplot)
    rr = dp.m.make_randomized_response_approx(
        dp.CategoricalDomain([0, 1]), dp.DiscreteDistance(), 1.0, Fraction(1, 10**4)
    )
    dp.plot_profile(rr, 1, [1e-5, 1e-4, 1e-3])
    xs, ys = calls["xy"]
    assert xs == [1e-4, 1e-3]  # no ε is certified at δ = 1e-5 < δ₀
    assert ys == [float(e) for _, e in dp.privacy_curve(rr, 1, [1e-4, 1e-3])] and ys[0] == 1.0 > ys[1]
    assert calls["set_xscale"] == ("log",)


def test_plot_profile_without_matplotlib_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)  # import fails
    with pytest.raises(dp.InvalidParameter, match=r"dpcompose\[plot\]"):
        dp.plot_profile(dp.m.make_laplace(INT, ABS, scale=2.0), 1)


def test_the_docs_picture_script_draws_with_real_matplotlib(tmp_path: Any) -> None:
    """docs/plot_profile.py draws docs/privacy_curve.png with dp.plot_profile (matplotlib: test extra)."""
    pytest.importorskip("matplotlib")
    import runpy
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "docs" / "plot_profile.py"
    namespace = runpy.run_path(str(script))
    out = tmp_path / "curve.png"
    namespace["main"](out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


def test_plot_profile_labels_each_curve(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    laplace = dp.m.make_laplace(INT, ABS, scale=2.0)
    assert dp.plot_profile(laplace, 1, [1e-6, 1e-3], ax=ax, label="mine") is ax
    dp.plot_profile(laplace, 1, [1e-6, 1e-3], ax=ax)
    assert [line.get_label() for line in ax.get_lines()] == ["mine", laplace.node.label()]
    drawn = [float(e) for _, e in dp.privacy_curve(laplace, 1, [1e-6, 1e-3])]
    assert list(ax.get_lines()[0].get_ydata()) == drawn and all(0.49 < y <= 0.5 for y in drawn)
    plt.close(fig)
    with pytest.raises(dp.InvalidParameter, match="label"):
        dp.plot_profile(laplace, 1, label=3)  # type: ignore[arg-type]


def test_a_shared_axes_keeps_its_title_and_a_new_figure_is_titled_after_the_measurement() -> None:
    """Drawing several curves on one axes titled the figure after the last curve drawn."""
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.set_title("two mechanisms")
    dp.plot_profile(dp.m.make_laplace(INT, ABS, scale=2.0), 1, [1e-6, 1e-3], ax=ax, label="a")
    dp.plot_profile(dp.m.make_laplace(INT, ABS, scale=4.0), 1, [1e-6, 1e-3], ax=ax, label="b")
    assert ax.get_title() == "two mechanisms"
    plt.close(fig)
    own = dp.plot_profile(dp.m.make_laplace(INT, ABS, scale=2.0), 1, [1e-6, 1e-3], label="alone")
    assert own.get_title() == "alone at d_in=1"
    plt.close(own.figure)


def test_dir_of_the_accuracy_module_lists_its_public_names_only() -> None:
    assert dir(dp.accuracy) == sorted(dp.accuracy.__all__)
    assert "confidence_interval" in dir(dp.accuracy) and "np" not in dir(dp.accuracy)
