"""Tests of ``verify lp`` (the Section 6 reproduction)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from fractions import Fraction

import pytest

from dpcompose import _progress
from dpcompose.analysis import _verify_cli
from dpcompose.analysis._verify_cli import main, run_trial


def test_small_run_all_feasible(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_progress, "load_tqdm", lambda: None)
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

    monkeypatch.setattr(_progress, "load_tqdm", lambda: fake_tqdm)
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
    monkeypatch.setattr(_verify_cli, "trial_results", lambda seed, trials, delta, jobs: iter(fake))
    assert main(["lp", "--trials", "4", "--no-progress"]) == 1
    out = capsys.readouterr().out
    rows = {}
    for line in out.splitlines():
        key, _, value = line.strip().rpartition("  ")
        rows[key.strip()] = value
    assert Fraction(rows["ε: max"]) >= Fraction(one_plus)
    assert Fraction(rows["ε: median"]) >= (Fraction(0.2) + Fraction(0.3)) / 2
    assert "infeasible trial 0: ε=1.00001 " in out


def test_ctrl_c_summarises_the_finished_trials_and_exits_130(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(seed: int, trials: int, delta: float, jobs: int) -> Iterator[_verify_cli.TrialResult]:
        yield run_trial(0, 0, 0.01)
        yield run_trial(0, 1, 0.01)
        raise KeyboardInterrupt

    monkeypatch.setattr(_verify_cli, "trial_results", interrupted)
    assert main(["lp", "--trials", "10", "--seed", "0", "--no-progress"]) == 130
    captured = capsys.readouterr()
    assert "interrupted after 2/10 trials" in captured.err
    assert captured.out.strip().splitlines()[-1] == "feasible: 2/2"
    assert "2 of 10 (interrupted)" in captured.out


def test_ctrl_c_before_any_trial_prints_no_summary(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(seed: int, trials: int, delta: float, jobs: int) -> Iterator[_verify_cli.TrialResult]:
        raise KeyboardInterrupt
        yield  # pragma: no cover

    monkeypatch.setattr(_verify_cli, "trial_results", interrupted)
    assert main(["lp", "--trials", "10", "--no-progress"]) == 130
    captured = capsys.readouterr()
    assert captured.out == "" and "interrupted after 0/10" in captured.err


def test_the_process_pool_is_cancelled_when_the_consumer_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    shutdowns: list[dict[str, bool]] = []
    real = _verify_cli.ProcessPoolExecutor

    class Recording(real):  # type: ignore[misc, valid-type]
        def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
            shutdowns.append({"wait": wait, "cancel_futures": cancel_futures})
            super().shutdown(wait=wait, cancel_futures=cancel_futures)

    monkeypatch.setattr(_verify_cli, "ProcessPoolExecutor", Recording)
    gen = _verify_cli.trial_results(0, 400, 0.01, 2)
    assert next(gen).index == 0
    gen.close()  # what a KeyboardInterrupt in the consumer does to the generator
    assert shutdowns[0] == {"wait": True, "cancel_futures": True}


def test_audit_reports_progress_on_stderr_only_when_asked(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import dpcompose as dp

    monkeypatch.setattr(_progress, "load_tqdm", lambda: None)
    dp.analysis.audit(lambda x: x, 0, 1, epsilon=1.0, trials=40, seed=0, progress=True)
    err = capsys.readouterr().err
    assert "40/40 samples of x0 (100%)" in err and "40/40 samples of x1 (100%)" in err
    dp.analysis.audit(lambda x: x, 0, 1, epsilon=1.0, trials=40, seed=0)
    assert capsys.readouterr().err == ""
