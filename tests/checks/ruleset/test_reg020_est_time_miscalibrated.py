"""checks/ruleset/reg020_est_time_miscalibrated.py's own fast tests, in-process: the window sizes
around `min_samples` (3 by default), the lowering failure and its suggested minimum (issue 37)."""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.engine import check_tree
from checks.scanning.tree import MemoryTree

from tests.checks.ruleset.rule_support import check_fixture, fixture_files, fixture_id
from tests.fixtures.miles import miles_tree


@pytest.mark.parametrize("fixture", fixture_files("REG020"), ids=fixture_id)
def test_fixture(fixture: Path):
    """Each fixture in REG020/ beside this module gets exactly the findings its `# expect:` lines state."""
    check_fixture(fixture)


PPO = "tests/e2e/megatron/test_qwen3_4B_ppo.py"  # ROCm est_time 800 in tests/fixtures/miles.py


def _rows(values: list[float]) -> list[dict]:
    s = sorted(values)
    return [{"file": PPO, "backend": "rocm", "hardware": "MI355X", "n": len(values), "median": s[len(s) // 2],
             "p90": s[-1] if len(s) < 3 else s[int(0.9 * (len(s) - 1))], "max": s[-1], "values": values}]


def _reg020(est_before: float | None, est_after: float, values: list[float]):
    base = miles_tree()
    head = dict(base)
    head[PPO] = base[PPO].replace("est_time=800", f"est_time={est_after:g}")
    if est_before is None:
        report = check_tree(MemoryTree(head), durations=_rows(values))
    else:
        base[PPO] = base[PPO].replace("est_time=800", f"est_time={est_before:g}")
        report = check_tree(MemoryTree(head), base=MemoryTree(base), changed={PPO: PPO}, durations=_rows(values))
    return [f for f in report.findings if f.rule == "REG020"]


@pytest.mark.parametrize("n", [3, 4])
def test_a_lowering_below_a_window_of_at_least_min_samples_runs_keeps_its_suggested_minimum(n):
    """A window of exactly min_samples runs is enough to calibrate: the failure says the value the
    policy keeps and offers it as the fix."""
    values = [700.0, 720.0, 690.0, 710.0][:n]
    (f,) = _reg020(800, 600, values)
    assert f.severity.value == "failure"
    assert f"below {n} of the {n} passing runs on MI355X in the window (slowest 720 s)" in f.message
    assert "the calibration policy keeps at least" in f.message and f.suggestion is not None
    assert int(f.suggestion) >= 720 * 1.05  # never below the slowest run, with its margin


def test_a_lowering_below_fewer_than_min_samples_runs_fails_without_a_suggestion():
    (f,) = _reg020(800, 600, [700.0, 720.0])
    assert f.severity.value == "failure" and "below 2 of the 2 passing runs" in f.message
    assert "keeps at least" not in f.message and f.suggestion is None


def test_a_lowering_above_every_run_is_not_a_lowering_failure():
    assert not [f for f in _reg020(800, 760, [700.0, 720.0, 690.0]) if f.severity.value == "failure"]
    assert not [f for f in _reg020(600, 800, [700.0, 720.0, 690.0]) if f.severity.value == "failure"]  # a raise


@pytest.mark.parametrize("n, flagged", [(2, False), (3, True), (4, True)])
def test_a_window_of_min_samples_runs_is_judged_and_a_smaller_one_is_reg021s(n, flagged):
    """est_time 800 against runs of ~1000 s: under-estimated once the window holds min_samples runs."""
    found = _reg020(None, 800, [1000.0, 1010.0, 990.0, 1005.0][:n])
    assert bool(found) == flagged
    if flagged:
        assert "under-estimated" in found[0].message and int(found[0].suggestion) > 1000


def test_the_suggested_minimum_is_the_policys_value_from_the_p90_and_the_slowest_run():
    (f,) = _reg020(800, 600, [700.0, 720.0, 690.0])
    assert f.message.endswith("the calibration policy keeps at least 810") and f.suggestion == "810"  # p90 x 1.15, rounded up
    (f,) = _reg020(800, 600, [700.0, 720.0, 690.0, 2000.0])  # a slow run: 2000 x 1.05 = 2100
    assert f.suggestion == "2100"


def _row(values: list[float] | None, n: int, p90: float, maximum: float) -> list[dict]:
    row = {"file": PPO, "backend": "rocm", "hardware": "MI355X", "n": n, "median": p90, "p90": p90, "max": maximum}
    return [row if values is None else {**row, "values": values}]


def _check(head_est: float, rows: list[dict], base_est: float | None = None, **head_kw):
    base = miles_tree()
    head = dict(base)
    head[PPO] = base[PPO].replace("est_time=800", f"est_time={head_est:g}")
    for old, new in head_kw.items():
        head[PPO] = head[PPO].replace(old, new)
    if base_est is None:
        report = check_tree(MemoryTree(head), durations=rows)
    else:
        base[PPO] = base[PPO].replace("est_time=800", f"est_time={base_est:g}")
        report = check_tree(MemoryTree(head), base=MemoryTree(base), changed={PPO: PPO}, durations=rows)
    return [f for f in report.findings if f.rule == "REG020"]


def test_a_lowering_judged_from_statistics_without_their_values_counts_at_least_one_run():
    (f,) = _check(600, _row(None, 5, 700, 720), base_est=800)
    assert f.severity.value == "failure" and "below at least 1 of the passing runs" in f.message
    assert f.suggestion == "810"
    assert not [f for f in _check(730, _row(None, 5, 700, 720), base_est=800) if f.severity.value == "failure"]


def test_an_unchanged_est_time_is_no_lowering():
    """The file changed (its labels), its est_time did not: however far below the runs it is, that
    is the ordinary verdict (under-estimated, a warning), never "lowers est_time from 800 to 800"."""
    found = _check(800, _row([1000.0, 1010.0, 990.0], 3, 1010, 1010), base_est=800, megatron="megatron2")
    assert found and all("lowers" not in f.message and f.severity.value == "warning" for f in found)


def test_a_disabled_registration_is_not_judged_even_when_lowered():
    assert _check(600, _row([700.0, 720.0, 690.0], 3, 720, 720), base_est=800,
                  **{'labels=["megatron"]': 'labels=["megatron"], disabled="flaky"'}) == []


def test_without_durations_reg020_says_nothing():
    report = check_tree(MemoryTree(miles_tree()))
    assert not [f for f in report.findings if f.rule == "REG020"]


def test_a_raise_one_run_drives_says_so_and_a_run_past_the_timeout_fails():
    (f,) = _check(800, _row([1500.0, 1000.0, 1100.0, 900.0, 1000.0], 5, 1340, 1500))
    assert f.severity.value == "warning" and f.suggestion == "1580"
    assert f.message.endswith("; this raise rests on a single run (1500 s)")
    assert f.fix is not None and "est_time=1580" in f.fix.text  # REG020 is fixable: the fix writes the value
    (f,) = _check(800, _row([100.0] * 9 + [2000.0], 10, 290, 2000))
    assert f.severity.value == "failure" and "exceeds the runner's timeout of 1800 s" in f.message
    assert f.message.endswith("; this raise rests on a single run (2000 s)") and f.suggestion == "2100"


def test_reg020_is_documented_as_fixable():
    from checks.rule_docs import rule_text
    from checks.rules import RULES

    assert RULES["REG020"].fixable and "fixable" in rule_text(RULES["REG020"])


def test_a_sub_second_window_keeps_its_own_slowest_run_not_a_second():
    """With `round_to_s: 1`, a window of runs under a second keeps what they took, rounded up to the
    second: the slowest run is the window's, never one second assumed for a missing value."""
    config = "consumers: []\ncalibration:\n  round_to_s: 1\n"
    base = miles_tree(**{".github/ci-registrar.yml": config})
    head = dict(base)
    head[PPO] = base[PPO].replace("est_time=800", "est_time=0.4")
    report = check_tree(MemoryTree(head), base=MemoryTree(base), changed={PPO: PPO}, durations=_rows([0.5, 0.6, 0.55]))
    (f,) = [f for f in report.findings if f.rule == "REG020"]
    assert f.severity.value == "failure" and f.suggestion == "1"  # max(0.6 x 1.15, 0.6 x 1.05) -> 1 s


# -- issue 37, seed 41 -------------------------------------------------------------------------------
def test_a_run_exactly_as_long_as_the_new_est_time_is_not_cut():
    """Lowering est_time to the slowest run's own length cuts none of them; to one run below it, the
    runs longer than the new value are counted, never the one that took it exactly."""
    values = [700.0, 720.0, 690.0, 710.0, 680.0]
    assert not [f for f in _check(720, _row(values, 5, 720, 720), base_est=800) if "lowers" in f.message]
    (f,) = _check(700, _row(values, 5, 720, 720), base_est=800)
    assert "below 2 of the 5 passing runs" in f.message  # 710 and 720, not 700
    # without the values: only a slowest run longer than the new est_time is a cut
    assert not [f for f in _check(720, _row(None, 5, 710, 720), base_est=800) if "lowers" in f.message]


def test_check_without_the_runners_bounds_decides_under_the_default_ones():
    from checks.calibration.durations_index import durations_index, window_of
    from checks.ruleset.reg020_est_time_miscalibrated import check
    from checks.config.schema import load_config

    reg = next(r for r in check_tree(MemoryTree(miles_tree())).registrations if r.file == PPO and r.backend.value == "rocm")
    params = load_config(None)[0].calibration
    d = durations_index(_row([1000.0, 1010.0, 990.0], 3, 1010, 1010), params).for_reg(reg)
    (f,) = check(reg, window_of(d), params)
    assert "under-estimated" in f.message and f.suggestion == "1160"  # p90 1008 s x 1.15, rounded up
    (engine,) = _check(800, _row([1000.0, 1010.0, 990.0], 3, 1010, 1010))  # the engine passes the contract's bounds
    assert (engine.message, engine.suggestion) == (f.message, f.suggestion)
