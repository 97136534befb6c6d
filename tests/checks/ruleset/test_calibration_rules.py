"""REG020 / REG021 on a fixture with known MI355X durations, and REG030 with measured time."""

from __future__ import annotations

import json
import subprocess

from checks.engine import check_tree
from checks.scanning.tree import MemoryTree
from tests.conftest import CLI
from tests.fixtures.miles import miles_tree, test_file

PPO = "tests/e2e/megatron/test_qwen3_4B_ppo.py"  # ROCm est_time 800 in the fixture
FSDP = "tests/e2e/fsdp/test_qwen3_0.6B_fsdp_distributed.py"  # ROCm est_time 2400, CUDA 2200


def row(file, n, median, p90, maximum, since="2026-11-02"):
    return {"file": file, "backend": "rocm", "suite": None, "hardware": "MI355X", "n": n, "median": median, "p90": p90, "max": maximum, "since": since}


def findings(rows, tree=None, rule=None):
    report = check_tree(MemoryTree(tree or miles_tree()), durations=rows)
    return [f for f in report.findings if rule is None or f.rule == rule]


def test_under_estimated_est_time_says_its_numbers_and_offers_the_calibrated_value():
    (f,) = findings([row(PPO, 7, 850, 912, 950)], rule="REG020")
    assert f.severity.value == "warning"
    assert f.message.startswith("p90 912 s over 7 passing runs on MI355X since 2026-11-02; est_time 800 s is under-estimated; suggest 1050")
    assert (f.file, f.span.line, f.span.column, f.span.end_column) == (PPO, 4, 27, 30)
    assert f.suggestion == "1050"  # ceil(912 x 1.15 / 10) x 10
    assert f.fix.text == 'register_rocm_ci(est_time=1050, suite="nightly-stage-c-8-gpu-mi350", labels=["megatron"])'


def test_over_estimated_est_time():
    # p90 300: the ceiling is max(1.5 x 300, 300 + 120) = 450 < 800
    (f,) = findings([row(PPO, 10, 280, 300, 310)], rule="REG020")
    assert "over-estimated" in f.message and f.suggestion == "350"
    # 5 of 10 runs: `calibrate` lowers only on a full window, so REG020 does not flag it either
    assert findings([row(PPO, 5, 280, 300, 310)], rule="REG020") == []


def test_a_fitting_est_time_is_silent():
    assert findings([row(PPO, 5, 650, 700, 760)], rule="REG020") == []


def test_max_beyond_the_runner_timeout_is_a_failure():
    # est_time 2400 -> timeout max(1800, 3000) = 3000 s; a passing run took 3300 s
    (f,) = findings([row(FSDP, 6, 2500, 2700, 3300)], rule="REG020")
    assert f.severity.value == "failure"
    assert "exceeds the runner's timeout of 3000 s" in f.message
    assert int(f.suggestion) * 1.25 >= 3300


def test_the_seed_case_a_single_run_is_a_notice_that_says_so():
    reg021 = findings([row(FSDP, 1, 2100, 2100, 2100)], rule="REG021")
    assert sorted(f.file for f in reg021) == [FSDP, PPO]  # PPO has no data at all
    f = next(f for f in reg021 if f.file == FSDP)
    assert f.severity.value == "notice"
    assert "rests on a single run on MI355X" in f.message
    assert "cannot estimate" in f.message  # no three files with both backends in this fixture
    assert f.suggestion is None


def test_no_data_estimates_from_the_cuda_est_time_when_three_files_have_both():
    extra = {}
    rows = []
    for i, (cuda, rocm_p90) in enumerate([(1000, 1100), (2000, 2300), (500, 600)]):
        path = f"tests/e2e/test_pair_{i}.py"
        extra[path] = test_file(
            f'register_cuda_ci(est_time={cuda}, suite="stage-c-4-gpu-h200", labels=["long"])',
            f'register_rocm_ci(est_time={int(rocm_p90 * 1.1)}, suite="nightly-stage-c-4-gpu-mi350", labels=["long"])',
        )
        rows.append(row(path, 5, rocm_p90, rocm_p90, rocm_p90))
    reg021 = findings(rows, tree=miles_tree(**extra), rule="REG021")
    fsdp = next(f for f in reg021 if f.file == FSDP)
    # ratios 1.1, 1.15, 1.2 -> median 1.15; 2200 x 1.15 = 2530
    assert "x 1.15 (median over 3 files with both) it would be about 2530" in fsdp.message
    assert "no stored passing durations on MI355X" in fsdp.message


def test_budget_uses_measured_time_where_it_exists():
    # pr-test-rocm.yml: stage-c-4-gpu-mi350, 2 shards, 180 min
    files = {f"tests/e2e/test_gate_{i}.py": test_file(f'register_rocm_ci(est_time=1000, suite="stage-c-4-gpu-mi350", labels=["amd"])') for i in range(4)}
    tree = miles_tree(**files)
    assert findings(None, tree=tree, rule="REG030") == []  # 2 x 1000 s per shard < 10800 s
    rows = [row(p, 5, 5000, 5600, 5700) for p in files]  # measured: 2 x 5600 s per shard > 10800 s
    (f,) = findings(rows, tree=tree, rule="REG030")
    assert "measured p90 for every file" in f.message and f.file == "tests/ci/run_suite.py"
    assert "no est_time rebalances it: 4 shards would fit" in f.message  # 5600 s each against 10800 s


def test_without_durations_the_calibration_rules_do_not_run():
    assert [f for f in findings(None) if f.rule in ("REG020", "REG021")] == []


def test_check_with_a_durations_file(tmp_path):
    repo = tmp_path / "repo"
    for path, text in miles_tree().items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    export = tmp_path / "durations.json"
    export.write_text(json.dumps([row(PPO, 7, 850, 912, 950)]))
    done = subprocess.run([CLI, "check", "--repo", str(repo), "--durations-file", str(export), "--format", "json"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr  # a warning does not fail the check
    (f,) = [f for f in json.loads(done.stdout)["findings"] if f["rule"] == "REG020"]
    assert f["suggestion"] == "1050" and f["line"] == 4
    export.write_text("{not json")
    done = subprocess.run([CLI, "check", "--repo", str(repo), "--durations-file", str(export)], capture_output=True, text=True)
    assert done.returncode == 2 and "not JSON" in done.stderr


def test_check_with_the_durations_store(tmp_path):
    """Job logs imported into the embedded store feed `check --durations`."""
    import os
    from datetime import datetime, timedelta, timezone

    repo = tmp_path / "repo"
    for path, text in miles_tree().items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    env = {**os.environ, "CI_REGISTRAR_DATA_DIR": str(tmp_path / "data")}
    env.pop("DATABASE_URL", None)
    day = datetime.now(timezone.utc) - timedelta(days=3)
    for run, elapsed in enumerate([870, 880, 900, 905, 912, 915, 920], start=1):
        stamp = (day + timedelta(hours=run)).strftime("%Y-%m-%dT%H:%M:%S.0000000Z")
        log = tmp_path / f"job-{run}.log"
        log.write_text(f"{stamp} ##[group]Run tests\n{stamp} [1/1] {PPO}  PASS  elapsed={elapsed}s\n{stamp} ##[endgroup]\n")
        done = subprocess.run(
            [CLI, "durations", "import", str(log), "--repository", "radixark/miles", "--run-id", str(run), "--hardware", "MI355X", "--backend", "rocm"],
            capture_output=True, text=True, env=env,
        )
        assert done.returncode == 0, done.stdout + done.stderr
    done = subprocess.run([CLI, "check", "--repo", str(repo), "--durations", "--repository", "radixark/miles", "--format", "json"], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    (f,) = [f for f in json.loads(done.stdout)["findings"] if f["rule"] == "REG020"]
    assert "over 7 passing runs on MI355X" in f["message"] and "est_time 800 s is under-estimated" in f["message"]
    assert "p90 917 s" in f["message"]  # 915 + 0.4 x (920 - 915), numpy's linear interpolation
    assert f["suggestion"] == "1060"  # 917 x 1.15 = 1054.6, rounded up to 10 s
