"""Tests of ``verify lp`` (the Section 6 reproduction)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from fractions import Fraction

import pytest

from dpcompose.analysis import _verify_cli
from dpcompose.analysis._verify_cli import main, run_trial


def test_small_run_all_feasible(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_verify_cli, "_load_tqdm", lambda: None)
    assert main(["lp", "--trials", "20", "--delta", "0.01", "--seed", "0"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.strip().splitlines()
    assert lines[-1] == "feasible: 20/20"
    assert any(line.strip().startswith("infeasible") and line.strip().endswith(" 0") for line in lines)
    assert "20/20 trials (100%)" in captured.err  # plain progress fallback (tqdm is not a dependency)


def test_tqdm_is_used_when_importable(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []

    def fake_tqdm(items: Iterable[object], total: int, desc: str, file: object) -> Iterator[object]:
        calls.append(total)
        yield from items

    monkeypatch.setattr(_verify_cli, "_load_tqdm", lambda: fake_tqdm)
    assert main(["lp", "--trials", "3", "--seed", "2"]) == 0
    assert calls == [3]
    assert capsys.readouterr().out.strip().splitlines()[-1] == "feasible: 3/3"


def test_leading_verify_word_and_quiet(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "lp", "--trials", "4", "--delta", "0.1", "--seed", "3", "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip().splitlines()[-1] == "feasible: 4/4"
    assert captured.err == ""


def test_jobs_do_not_change_the_result(capsys: pytest.CaptureFixture[str]) -> None:
    assert [run_trial(5, i, 0.05).epsilon for i in range(6)] == [
        run_trial(5, i, 0.05).epsilon for i in range(6)
    ]
    main(["lp", "--trials", "6", "--delta", "0.05", "--seed", "5", "--jobs", "2", "--no-progress"])
    two = capsys.readouterr().out.splitlines()
    main(["lp", "--trials", "6", "--delta", "0.05", "--seed", "5", "--no-progress"])
    one = capsys.readouterr().out.splitlines()
    strip = [line for line in one if "time" not in line]
    assert strip == [line for line in two if "time" not in line]


@pytest.mark.parametrize(
    "argv",
    [
        ["lp", "--trials", "0"],
        ["lp", "--delta", "1.5"],
        ["lp", "--jobs", "0"],
        ["lp", "--trials", "many"],
        ["nonsense"],
        [],
    ],
)
def test_bad_arguments(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err != ""


@pytest.mark.slow
def test_full_section6_reproduction(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lp", "--trials", "10000", "--delta", "0.01", "--seed", "0", "--jobs", "2"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == "feasible: 10000/10000"


def test_summary_rounds_epsilons_up(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Was: ε min/median/max and an infeasible trial's ε printed with '.6g' (1 + 6e-10 showed as 1)."""
    one_plus = 1 + 6e-10
    fake = [
        _verify_cli.TrialResult(0, (0.5,), one_plus, False, 0.0, "infeasible"),
        _verify_cli.TrialResult(1, (0.5,), 0.1, True, 0.0, "optimal"),
        _verify_cli.TrialResult(2, (0.5,), 0.2, True, 0.0, "optimal"),
        _verify_cli.TrialResult(3, (0.5,), 0.3, True, 0.0, "optimal"),
    ]
    monkeypatch.setattr(_verify_cli, "_results", lambda seed, trials, delta, jobs: iter(fake))
    assert main(["lp", "--trials", "4", "--no-progress"]) == 1
    out = capsys.readouterr().out
    rows = {}
    for line in out.splitlines():
        key, _, value = line.strip().rpartition("  ")
        rows[key.strip()] = value
    assert Fraction(rows["ε: max"]) >= Fraction(one_plus)
    assert Fraction(rows["ε: median"]) >= (Fraction(0.2) + Fraction(0.3)) / 2
    assert "infeasible trial 0: ε=1.00001 " in out
