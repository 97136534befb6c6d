"""checks/ruleset/reg020_est_time_miscalibrated.py's own fast tests, in-process: the window sizes
around `min_samples` (3 by default), the lowering failure and its suggested minimum (issue 37)."""

from __future__ import annotations

import pytest

from checks.engine import check_tree
from checks.scanning.tree import MemoryTree
from tests.fixtures.miles import miles_tree

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
