"""``python -m dpcompose account``: parsing, the numbers it prints, refusals."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import dpcompose as dp
from dpcompose.__main__ import main


def _first_bound(text: str) -> float:
    match = re.search(r"≤ ([0-9.e+-]+)\n", text)
    assert match, text
    return float(match.group(1))


def test_prints_the_policy_s_value_and_all_candidates(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["account", "--mech", "laplace:scale=10,count=100", "--delta", "1e-6"]) == 0
    out = capsys.readouterr().out
    lap = dp.m.make_laplace(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=10.0)
    eps, _ = dp.make_sequential(*[lap] * 100, output_measure=dp.ApproxDP(), delta=1e-6).map(1)
    assert _first_bound(out) == float(dp.accounting.format_up(eps))  # the library's own composite
    assert "(chosen)" in out and "optimal composition" in out and "zCDP" in out


def test_delta_for_an_epsilon_and_a_json_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = {"mechanisms": [{"name": "rr", "epsilon": 1, "k": 4, "count": 20}], "epsilon": 5}
    path = tmp_path / "m.json"
    path.write_text(json.dumps(spec))
    assert main(["account", "--file", str(path)]) == 0
    out = capsys.readouterr().out
    pld = dp.accounting.PrivacyLoss.compose([dp.accounting.PrivacyLoss.randomized_response(1, 4)] * 20)
    assert _first_bound(out) >= float(pld.pld(pld.step_bits()).delta_bounds(5)[0])
    assert out.startswith("composition: 20 × rr(epsilon=1, k=4)")


def test_continuous_noise_and_sensitivity(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "account",
                "--mech",
                "gaussian:sigma=4,sensitivity=2,noise=continuous,count=10",
                "--delta",
                "1e-5",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    exact = dp.accounting.gaussian_profile(2, 4 / 10**0.5).epsilon(1e-5)  # Balle–Wang closed form
    assert float(exact) <= _first_bound(out) <= float(exact) * 1.001


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--mech", "lap:scale=1", "--delta", "1e-6"], "must be one of laplace"),
        (["--mech", "laplace:scale=1,colour=red", "--delta", "1e-6"], "unknown keys"),
        (["--mech", "laplace:scale=nan", "--delta", "1e-6"], "not a number"),
        (["--mech", "laplace:scale=-1", "--delta", "1e-6"], "scale"),
        (["--mech", "laplace:scale=1,count=0", "--delta", "1e-6"], "count"),
        (["--mech", "laplace:scale=1", "--delta", "1.5"], "delta"),
        (["--mech", "laplace:scale=1"], "--delta"),
        (["--delta", "1e-6"], "no mechanisms"),
        (["--mech", "gaussian:scale=1", "--delta", "1e-6"], "unknown keys"),
        (["--mech", "rr:epsilon=1,k=2.5", "--epsilon", "1"], "k="),
        (["--file", "/nonexistent.json", "--delta", "1e-6"], "--file"),
        (["--mech", "gaussian:sigma=1,rate=1.5", "--delta", "1e-6"], "rate"),
        (["--mech", "gaussian:sigma=1,rate=-0.1", "--delta", "1e-6"], "rate"),
        (["--mech", "gaussian:sigma=1,rate=nan", "--delta", "1e-6"], "not a number"),
        (["--mech", "gaussian:sigma=1,sampling=poisson", "--delta", "1e-6"], "needs a rate"),
        (["--mech", "laplace:scale=1,rate=0.1,sampling=shuffle", "--delta", "1e-6"], "sampling="),
        (["--mech", "gaussian:sigma=0.05,rate=0.1,noise=continuous", "--delta", "1e-6"], "sensitivity/sigma"),
        # found by review: a Poisson entry (add/remove) and a without-replacement one (substitution) were
        # composed into one "certified" ε of 21.54, where a substitution pair of data sets has δ ≥ 0.07 there
        (
            [
                "--mech",
                "gaussian:sigma=1,rate=0.2,count=200,noise=continuous",
                "--mech",
                "gaussian:sigma=100,sensitivity=2,rate=0.01,sampling=without_replacement,noise=continuous",
                "--delta",
                "1e-5",
            ],
            "mix Poisson sampling",
        ),
        # found by review: a key given twice kept the last value
        (["--mech", "gaussian:sigma=1,sigma=2", "--delta", "1e-6"], "given twice"),
    ],
)
def test_bad_input_is_an_error_line_and_status_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["account", *argv]) == 2
    out = capsys.readouterr().out
    assert out.startswith("error:") and out.count("\n") == 1  # the error line alone
    assert message in out


@pytest.mark.parametrize("rate", [True, None, [0.1]])
def test_a_json_rate_must_be_a_number(
    rate: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "m.json"
    mech = {"name": "gaussian", "sigma": 1, "rate": rate}
    path.write_text(json.dumps({"mechanisms": [mech], "delta": 1e-6}))
    assert main(["account", "--file", str(path)]) == 2
    assert "rate=" in capsys.readouterr().out


def test_subsampled_mechanisms(capsys: pytest.CaptureFixture[str]) -> None:
    """``rate=`` subsamples the pair (the library's PrivacyLoss.subsampled, both orders for Poisson) and
    amplifies a pure ε for the generic theorems (Balle–Barthe–Gaboardi 2018 Thm 8); a Gaussian's only
    runner-up is then its subsampled Rényi curve (no zCDP amplification theorem is used), and rate 1
    changes nothing."""
    from fractions import Fraction

    from dpcompose.accounting import PrivacyLoss, format_up, optimal_epsilon
    from dpcompose.accounting._rdp import RUNNER_UP_ORDERS
    from dpcompose.accounting._zcdp import renyi_to_approx
    from dpcompose.combinators._subsample import amplify_epsilon

    floats, dist = dp.AtomDomain(float), dp.AbsoluteDistance()
    assert main(["account", "--mech", "gaussian:sigma=1,rate=0.01,count=1000", "--delta", "1e-5"]) == 0
    out = capsys.readouterr().out
    gauss = dp.m.make_gaussian(floats, dist, scale=1.0).privacy_loss(1)
    assert gauss is not None
    step = PrivacyLoss.subsampled(gauss, Fraction(1, 100))
    assert _first_bound(out) == float(format_up(PrivacyLoss.compose([step] * 1000).epsilon_bounds(1e-5)[1]))
    assert out.startswith("composition: 1000 × gaussian(sigma=1, rate=0.01)")
    # the answer, the PLD line and the Rényi runner-up (the subsampled curve: PrivacyLoss.renyi); no zCDP
    assert out.count("≤") == 3 and "zCDP" not in out
    curve = PrivacyLoss.compose([step] * 1000).renyi(RUNNER_UP_ORDERS)
    assert curve is not None
    renyi_line = next(x for x in out.splitlines() if "Rényi" in x)
    assert f"≤ {format_up(renyi_to_approx(RUNNER_UP_ORDERS, curve, Fraction(1, 10**5)))}" in renyi_line

    assert main(["account", "--mech", "laplace:scale=2,rate=0.05,count=200", "--delta", "1e-6"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "optimal composition" in x)
    eps1 = amplify_epsilon(Fraction(1, 2), Fraction(1, 20))
    assert f"≤ {format_up(optimal_epsilon([eps1] * 200, [Fraction(0)] * 200, Fraction(1, 10**6)))}" in line
    assert "theorem: privacy loss distributions" in out  # tighter than the amplified ε's theorems

    assert (
        main(
            [
                "account",
                "--mech",
                "rr:epsilon=1,rate=0.1,sampling=without_replacement,count=30",
                "--epsilon",
                "2",
            ]
        )
        == 0
    )
    assert "rr(epsilon=1, rate=0.1, without_replacement)" in capsys.readouterr().out

    bounds = []
    for extra in ("", ",rate=1"):
        assert main(["account", "--mech", f"gaussian:sigma=4,count=10{extra}", "--delta", "1e-6"]) == 0
        out = capsys.readouterr().out
        bounds.append(_first_bound(out))
        assert "zCDP" in out
    assert bounds[0] == bounds[1]


@pytest.mark.slow  # (thorough: the README test command stays under 3 minutes)
def test_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    target = tmp_path / "curve.png"
    argv = ["account", "--mech", "laplace:scale=5,count=10", "--delta", "1e-6", "--plot", str(target)]
    assert main(argv) == 0
    assert target.stat().st_size > 1000
    assert f"plot: {target}" in capsys.readouterr().out


def _docs_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The command lines of docs/accounting.md's "From the command line" block, with its JSON example
    written to ``tmp_path`` (the working directory)."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "accounting.md").read_text(encoding="utf-8")
    section = text.split("### From the command line", 1)[1]
    block = section.split("```", 2)[1]
    commands = [line.split() for line in block.splitlines() if line.startswith("python -m dpcompose account")]
    assert len(commands) == 4
    spec = re.search(r"A JSON file holds `(\{.*\})`", section.replace("\n", " "))
    assert spec
    (tmp_path / "mechanisms.json").write_text(spec.group(1))
    monkeypatch.chdir(tmp_path)
    return commands


def test_the_docs_command_lines_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every command of the docs block as written, but the ``--plot`` one without its plot: δ(ε) at the
    plot's 201 points of 1000 Laplace mechanisms costs ~6 s of library time (the whole command line,
    plot included, runs in the slow twin below). The plot's own code path (matplotlib, the file, the
    ``plot:`` line) runs here on one Laplace mechanism, where δ(ε) costs milliseconds."""
    commands = _docs_commands(tmp_path, monkeypatch)
    pytest.importorskip("matplotlib")  # the third command draws the plot
    plotted = [argv for argv in commands if "--plot" in argv]
    assert len(plotted) == 1
    for argv in commands:
        if "--plot" in argv:
            argv = argv[: argv.index("--plot")] + argv[argv.index("--plot") + 2 :]
        assert main(argv[3:]) == 0, argv
        assert "(chosen)" in capsys.readouterr().out
    target = tmp_path / "small.png"
    assert main(["account", "--mech", "laplace:scale=5", "--delta", "1e-6", "--plot", str(target)]) == 0
    assert f"plot: {target}" in capsys.readouterr().out
    assert target.stat().st_size > 1000


@pytest.mark.slow  # (thorough: the documented plot of 1000 mechanisms costs ~6 s)
def test_the_docs_command_lines_run_thorough(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every command of docs/accounting.md's "From the command line" block, with its JSON example."""
    commands = _docs_commands(tmp_path, monkeypatch)
    pytest.importorskip("matplotlib")  # the third command draws the plot
    for argv in commands:
        assert main(argv[3:]) == 0, argv
        assert "(chosen)" in capsys.readouterr().out
    assert (tmp_path / "curve.png").stat().st_size > 1000


def test_renyi_is_a_candidate_for_pure_and_zcdp_mechanisms(capsys: pytest.CaptureFixture[str]) -> None:
    # (found by review: the CLI listed optimal, basic and zCDP, not the Rényi route the combinators use)
    from fractions import Fraction

    from dpcompose.accounting import renyi_to_approx
    from dpcompose.accounting._filters import pure_cost_to_renyi
    from dpcompose.accounting._rdp import RUNNER_UP_ORDERS

    assert main(["account", "--mech", "laplace:scale=10,count=100", "--delta", "1e-6"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "Rényi" in x)
    curve = pure_cost_to_renyi(Fraction(1, 10), RUNNER_UP_ORDERS)
    expected = renyi_to_approx(RUNNER_UP_ORDERS, [100 * c for c in curve], Fraction(1, 10**6))
    assert f"≤ {dp.accounting.format_up(expected)}" in line


def test_found_by_review_a_huge_count_and_the_interval_s_lower_end(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # count = 10⁸ built lists of 10⁸ entries and ended in a MemoryError after 75 s; the interval's lower end
    # was printed rounded up ([8.30623, 8.30623] around 8.3062250)
    assert main(["account", "--mech", "rr:epsilon=0.01,count=100000000", "--delta", "1e-6"]) == 0
    out = capsys.readouterr().out
    assert "zCDP" in out and "basic composition" in out and "optimal composition" not in out
    gauss = "gaussian:sigma=20,count=1000,noise=continuous"
    assert main(["account", "--mech", gauss, "--delta", "1e-6"]) == 0
    out = capsys.readouterr().out
    match = re.search(r"interval: \[([0-9.]+), ([0-9.]+)\]", out)
    assert match, out
    exact = float(dp.accounting.gaussian_profile(1, 20 / 1000**0.5).epsilon(1e-6))
    assert float(match.group(1)) <= exact <= float(match.group(2))
    assert float(match.group(1)) < float(match.group(2))


def test_found_by_review_one_target_per_run_and_one_prefix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a file with both targets used delta silently; a file's epsilon with --delta on the command line was
    # dropped silently; an unreadable rate said "mechanism 0: mechanism 0:"
    both = tmp_path / "both.json"
    both.write_text(json.dumps({"mechanisms": [{"name": "rr", "epsilon": 1}], "delta": 1e-6, "epsilon": 1}))
    assert main(["account", "--file", str(both)]) == 2
    assert "not both" in capsys.readouterr().out
    eps = tmp_path / "eps.json"
    eps.write_text(json.dumps({"mechanisms": [{"name": "rr", "epsilon": 1}], "epsilon": 1}))
    assert main(["account", "--file", str(eps), "--delta", "1e-6"]) == 2
    assert "give one of them" in capsys.readouterr().out
    assert main(["account", "--mech", "gaussian:sigma=1,rate=nan", "--delta", "1e-6"]) == 2
    assert capsys.readouterr().out.count("mechanism 0:") == 1


def test_found_by_review_no_overflow_warnings_where_a_side_bounds_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # 10⁵ × Laplace(1) at ε = 0: the lumped pair's N = e^{s}·Q overflows and its bound is infinite (the lower
    # end is then 0, validly); numpy's overflow and 0·∞ warnings reached the user
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert main(["account", "--mech", "laplace:scale=1,count=100000", "--epsilon", "0"]) == 0
    assert "interval: [0, 1]" in capsys.readouterr().out


def test_found_by_review_repeated_json_keys_and_options_are_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # json keeps a repeated key's last value ({"sigma": 1, "sigma": 50} was accounted at σ = 50, 87 times
    # below the truth for σ = 1), and argparse the last of a repeated option (abbreviated or not)
    dup = tmp_path / "dup.json"
    dup.write_text('{"mechanisms": [{"name": "gaussian", "sigma": 1, "sigma": 50}], "delta": 1e-6}')
    assert main(["account", "--file", str(dup)]) == 2
    assert "key 'sigma' twice" in capsys.readouterr().out
    for argv in (["--delta", "1e-6", "--delta", "0.5"], ["--delta", "1e-6", "--del", "0.5"]):
        assert main(["account", "--mech", "gaussian:sigma=1", *argv]) == 2
        assert "--delta is given more than once" in capsys.readouterr().out


def test_found_by_review_an_epsilon_beyond_the_float_range_of_lattice_steps(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # ε = 1e308 overflowed math.ldexp(ε, step_bits) in the tilted reading: a traceback, not an answer
    assert main(["account", "--mech", "laplace:scale=1,count=2000", "--epsilon", "1e308"]) == 0
    assert "interval: [0, 0]" in capsys.readouterr().out
