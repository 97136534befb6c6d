"""est_time calibration: the policy (checks/calibration/policy.py), its edits (checks/fixing/calibration_edits.py),
the runner's shard split replayed (checks/calibration/shards.py, REG030), `ci-registrar calibrate`, and
REG020's failure on a change that lowers est_time below passing runs."""

from __future__ import annotations

import json
import shutil
import subprocess
from msgspec.structs import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from checks.calibration.policy import (
    DISABLED, EXCEEDS_TIMEOUT, FITS, OVER, TIMEOUT_IN_WINDOW, TOO_FEW, UNDER, Bounds, Decision,
    build_windows, decide, decide_all, origin_of, stats_rows,
)
from checks.fixing.calibration_edits import edit_source
from checks.config.schema import Calibration, load_config
from checks.engine import check_tree
from checks.model import Backend
from checks.calibration.shards import Item, heaviest, partition
from checks.scanning.tree import DirectoryTree, MemoryTree
from tests import TESTS
from tests.conftest import CLI
from tests.fixtures.miles import miles_tree, test_file

ROOT = TESTS
TARGETS = ROOT / "fixtures" / "targets"
MILES = TARGETS / "miles" / "r2026-08-21-778227d"
SGLANG_AUG = TARGETS / "sglang" / "r2026-08-22-382343f"
MI35X = TARGETS / "sglang" / "r2026-07-01-13dc5f2"
SGLANG_CONFIG = (ROOT.parent / "docs" / "configs" / "sglang.yml").read_text()
MI35X_SUITE = "stage-c-test-large-8-gpu-amd-mi35x"
MI35X_AS_OF = datetime(2026, 7, 1, tzinfo=timezone.utc)
PARAMS = Calibration()
NOW = datetime(2026, 11, 30, tzinfo=timezone.utc)
PPO = "tests/e2e/megatron/test_qwen3_4B_ppo.py"  # ROCm est_time 800 in tests/fixtures/miles.py


def registrations(tree, config_text=None):
    report = check_tree(tree, fixes=False) if config_text is None else check_tree(tree, config_text=config_text, fixes=False)
    return report.registrations


def rocm(file=PPO, est_time=800, extra=""):
    tree = miles_tree(**{file: test_file(f'register_rocm_ci(est_time={est_time}, suite="nightly-stage-c-8-gpu-mi350", labels=["megatron"]{extra})')})
    (reg,) = [r for r in registrations(MemoryTree(tree)) if r.file == file and r.backend is Backend.ROCM]
    return reg


def runs(file, values, *, outcome="PASS", start=NOW - timedelta(days=10), hardware="MI355X", source="workflow_run:radixark/miles",
         backend="rocm", event=None):
    out = []
    for i, v in enumerate(values):
        record = {"repository": "radixark/miles", "file": file, "backend": backend, "hardware": hardware, "elapsed_s": v,
                  "outcome": outcome, "measured_at": (start + timedelta(hours=i)).isoformat(), "source": source}
        if event:
            record["event"] = event
        out.append(record)
    return out


def window_of(records, params=PARAMS, file=PPO):
    return build_windows(records, params, now=NOW).get((file, Backend.ROCM))


# -- the policy ----------------------------------------------------------------------------------


def test_the_bimodal_300_13_case_never_goes_below_its_slow_run():
    # sglang's weekly script set 300 s to 13 s from a p90; here 9 fast runs and one slow one
    w = window_of(runs(PPO, [13] * 9 + [300]))
    d = decide(rocm(est_time=300), w, PARAMS)
    assert d.new is None or d.new >= 300
    d = decide(rocm(est_time=2000), w, PARAMS)  # far over: lowered, but never under the slow run
    assert d.reason == OVER and d.new >= 300 * PARAMS.max_margin and w.cut_by(d.new) == 0


def test_a_proposal_is_never_below_a_passing_run_of_the_window():
    import random

    rng = random.Random(16)
    for _ in range(200):
        values = [rng.choice([rng.uniform(10, 60), rng.uniform(200, 3000)]) for _ in range(rng.randint(3, 12))]
        w = window_of(runs(PPO, values))
        d = decide(rocm(est_time=rng.choice([1, 50, 500, 5000])), w, PARAMS)
        if d.changed:
            assert w.cut_by(d.new) == 0 and d.new >= max(w.passing)


def test_a_timeout_in_the_window_means_no_decrease():
    records = runs(PPO, [300, 310, 305, 320]) + runs(PPO, [1800], outcome="TIMEOUT", start=NOW - timedelta(days=2))
    w = window_of(records)
    assert w.timeouts == 1
    d = decide(rocm(est_time=2000), w, PARAMS)
    assert d.new is None and d.reason == TIMEOUT_IN_WINDOW
    d = decide(rocm(est_time=100), w, PARAMS)  # an increase is still made
    assert d.new is not None and d.new > 100


def test_only_what_reg020_flags_changes_and_a_calibrated_value_stays_next_week():
    w = window_of(runs(PPO, [650, 700, 690, 720, 710]))
    assert decide(rocm(est_time=800), w, PARAMS).reason == FITS  # inside REG020's tolerance
    d = decide(rocm(est_time=300), w, PARAMS)
    assert d.reason == UNDER and d.new == 830  # p90 716 x 1.15 = 823.4 -> 830 (>= max 720 x 1.05)
    again = decide(rocm(est_time=d.new), w, PARAMS)
    assert again.new is None and again.reason == FITS


def test_too_few_runs_and_disabled_registrations_are_left_alone():
    w = window_of(runs(PPO, [650, 700]))
    assert decide(rocm(est_time=5000), w, PARAMS).reason == TOO_FEW
    w = window_of(runs(PPO, [650, 700, 690, 720]))
    d = decide(rocm(est_time=5000, extra=', disabled="flaky on MI355X"'), w, PARAMS)
    assert d.reason == DISABLED and d.new is None


def test_runs_of_unmerged_code_count_only_when_configured():
    merged = runs(PPO, [600, 610])
    pr_heads = runs(PPO, [3000, 3100], event="pull_request", start=NOW - timedelta(days=1))
    on_demand = runs(PPO, [2900], source="on-demand:17", start=NOW - timedelta(days=3))
    assert [origin_of(r) for r in (merged[0], pr_heads[0], on_demand[0])] == ["merged", "pr-head", "on-demand"]
    w = window_of(merged + pr_heads + on_demand)
    assert w.passing == (610, 600) and w.excluded == 3
    assert decide(rocm(est_time=5000), w, PARAMS).reason == TOO_FEW
    w = window_of(merged + pr_heads + on_demand, replace(PARAMS, include_unmerged=True))
    assert len(w.passing) == 5 and max(w.passing) == 3100


def test_other_hardware_and_old_runs_are_not_in_the_window():
    records = runs(PPO, [900] * 5, hardware="H200", backend="cuda") + runs(PPO, [100] * 5, start=NOW - timedelta(days=60))
    records += runs(PPO, [500, 510, 520])
    w = window_of(records)
    assert sorted(w.passing) == [500, 510, 520]


def test_the_runners_est_time_bound_is_respected():
    w = window_of(runs(PPO, [0.2, 0.3, 0.25] * 4))
    d = decide(rocm(est_time=600), w, replace(PARAMS, round_to_s=1, margin=1, max_margin=1), Bounds(minimum=1))
    assert d.new == 1


def test_exceeds_timeout_raises_above_the_slowest_run():
    # est_time 2400 -> timeout max(1800, 3000) = 3000; a passing run took 3300 s
    w = window_of(runs(PPO, [2500, 2600, 2700, 3300]))
    d = decide(rocm(est_time=2400), w, PARAMS)
    assert d.reason == EXCEEDS_TIMEOUT and int(1.25 * d.new) >= 3300 and d.new >= 3300 * PARAMS.max_margin


def test_an_integer_stays_an_integer_and_a_float_a_float():
    w = window_of(runs(PPO, [650, 700, 690, 720, 710]))
    assert isinstance(decide(rocm(est_time=300), w, PARAMS).new, int)
    assert decide(rocm(est_time=300.5), w, PARAMS).new == 830.0 and isinstance(decide(rocm(est_time=300.5), w, PARAMS).new, float)


def test_the_json_shape():
    w = window_of(runs(PPO, [650, 700, 690, 720, 710]))
    changed = decide(rocm(est_time=300), w, PARAMS).as_json()
    assert set(changed) == {"file", "line", "backend", "suite", "hardware", "old", "new", "n", "p90", "max", "reason"}
    kept = decide(rocm(est_time=800), w, PARAMS).as_json()
    assert "new" not in kept and kept["why"].endswith("fits")


# -- the edits: only the est_time numbers change -------------------------------------------------


def _forced(regs, bump=111):
    """A decision changing every ROCm-family est_time (disabled ones too: the editor must cope)."""
    out = []
    for r in regs:
        if r.backend.family is Backend.ROCM and r.est_time is not None:
            new = type(r.est_time)(r.est_time + bump)
            out.append(Decision(r, r.est_time, new, "under-estimated", ""))
    return out


def _check_only_numbers_changed(before: str, after: str, decisions):
    """Putting the old value's text back at each argument gives the original bytes exactly."""
    lines = after.split("\n")
    for d in sorted(decisions, key=lambda d: (d.registration.arguments["est_time"].span.line,
                                              -d.registration.arguments["est_time"].span.column)):
        arg = d.registration.arguments["est_time"]
        line = lines[arg.span.line - 1]
        col = arg.span.column - 1
        new_text = repr(d.new) if isinstance(d.new, float) else str(d.new)
        assert line[col:col + len(new_text)] == new_text
        lines[arg.span.line - 1] = line[:col] + arg.source + line[col + len(new_text):]
    assert "\n".join(lines) == before


@pytest.mark.parametrize("root, config", [(MILES, None), (SGLANG_AUG, SGLANG_CONFIG), (MI35X, SGLANG_CONFIG)],
                         ids=["miles-2026-08", "sglang-2026-08", "sglang-2026-07"])
def test_vendored_files_keep_every_other_byte(root, config):
    regs = registrations(DirectoryTree(root), config)
    decisions = _forced(regs)
    assert decisions
    by_file = {}
    for d in decisions:
        by_file.setdefault(d.registration.file, []).append(d)
    for path, ds in by_file.items():
        before = (root / path).read_text()
        after = edit_source(before, ds)
        assert after != before
        _check_only_numbers_changed(before, after, ds)
        # read back: the new values are what the scan now sees, every other argument as it was
        rescanned = {(r.span.line, r.function): r for r in registrations(MemoryTree({**_tree_bytes(root), path: after.encode()}), config) if r.file == path}
        for d in ds:
            r = rescanned[(d.registration.span.line, d.registration.function)]
            assert r.est_time == d.new and type(r.est_time) is type(d.new)
            assert {k: a.source for k, a in r.arguments.items() if k != "est_time"} == \
                   {k: a.source for k, a in d.registration.arguments.items() if k != "est_time"}


def _tree_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_the_families_backends_and_styles_are_all_covered_by_the_vendored_files():
    seen = set()
    for root, config in [(MILES, None), (SGLANG_AUG, SGLANG_CONFIG), (MI35X, SGLANG_CONFIG)]:
        for r in registrations(DirectoryTree(root), config):
            if r.backend.family is Backend.ROCM:
                seen.add(r.function)
                seen.add("stage=" if "stage" in r.arguments else "suite=")
                seen.add("multi-line" if r.statement_lines[0] != r.statement_lines[1] else "one line")
    assert {"register_rocm_ci", "register_amd_ci", "stage=", "suite=", "multi-line", "one line"} <= seen


EDGE = '''\
from tests.ci.ci_register import register_rocm_ci

register_rocm_ci(  # the slow MoE case
    800,  # est_time, positional
    "nightly-stage-c-8-gpu-mi350",
    labels=["megatron"],   # odd spacing kept
)
register_rocm_ci(est_time = 812.5 , suite="nightly-stage-c-4-gpu-mi350", labels=["long"])  # float stays float
'''


def test_positional_multi_line_comments_and_floats():
    path = "tests/e2e/test_edge.py"
    tree = miles_tree(**{path: EDGE})
    regs = [r for r in registrations(MemoryTree(tree)) if r.file == path]
    decisions = _forced(regs, bump=200)
    after = edit_source(EDGE, decisions)
    assert after == EDGE.replace("    800,", "    1000,").replace("est_time = 812.5 ", "est_time = 1012.5 ")
    _check_only_numbers_changed(EDGE, after, decisions)


# -- shards: the runner's split replayed ---------------------------------------------------------


def test_partition_is_the_runners_lpt_with_ties_by_file_name():
    items = [Item(f, e, e) for f, e in [("b.py", 10), ("a.py", 10), ("c.py", 10), ("d.py", 5)]]
    shards = partition(items, 2)
    # a, b, c by name among equals: a -> 0, b -> 1, c -> 0 (both 10: lowest id), d -> 1
    assert [s.files for s in shards] == [("a.py", "c.py"), ("b.py", "d.py")]
    assert len(partition(items, 50)) == 4  # shards past the number of files stay empty


def _mi35x():
    config, _ = load_config(SGLANG_CONFIG)
    records = json.loads((MI35X / "durations.json").read_text())
    windows = build_windows(records, config.calibration, now=MI35X_AS_OF)
    report = check_tree(DirectoryTree(MI35X), config_text=SGLANG_CONFIG, durations=stats_rows(windows, "MI355X"), fixes=False)
    return config, windows, report


def test_the_mi35x_timeout_of_june_2026_is_predicted_and_its_shard_named():
    _config, _windows, report = _mi35x()
    (f,) = [f for f in report.findings if f.rule == "REG030"]
    assert f"`{MI35X_SUITE}`" in f.message and "over the 60 min timeout of .github/workflows/pr-test-amd.yml" in f.message
    # the two slowest files share shard 0, as they did: 66 min predicted against 17 for shard 1
    assert ("`test/registered/amd/test_deepseek_r1_mxfp4_8gpu.py`, `test/registered/amd/test_kimi_k25_mxfp4_bcg_mi35x.py`, "
            "`test/registered/cuda_graph/breakable/test_breakable_cuda_graph.py` in shard 0 (--auto-partition-id 0, 66 min; "
            "the other: 17 min)") in f.message


def test_the_proposed_est_times_bring_every_mi35x_shard_under_the_timeout():
    config, windows, report = _mi35x()
    decisions = decide_all(report.registrations, windows, config.calibration)
    proposed = {d.registration.file: d.new for d in decisions if d.changed}
    regs = [r for r in report.registrations if r.suite == MI35X_SUITE and r.disabled is None]
    items = [Item(r.file, proposed.get(r.file, r.est_time), windows[(r.file, Backend.ROCM)].stats.p90) for r in regs]
    shards = partition(items, 2)
    assert heaviest(shards).predicted < 60 * 60
    # and against every run of the window, not only the p90: each run's shards fit
    for k in range(10):
        for s in shards:
            assert sum(windows[(f, Backend.ROCM)].passing[k] for f in s.files) < 60 * 60
    # never below a passing run
    for d in decisions:
        if d.changed:
            assert windows[(d.registration.file, Backend.ROCM)].cut_by(d.new) == 0
    assert "rebalance it: predicted shards 44 min, 39 min" in next(f.message for f in report.findings if f.rule == "REG030")


# -- REG020: lowering below passing runs fails ----------------------------------------------------


def test_a_pr_lowering_est_time_below_passing_runs_fails_and_says_how_many():
    base = miles_tree()
    head = dict(base)
    head[PPO] = base[PPO].replace("est_time=800", "est_time=600")
    rows = [{"file": PPO, "backend": "rocm", "hardware": "MI355X", "n": 5, "median": 640, "p90": 700, "max": 720,
             "values": [720, 590, 700, 650, 640]}]
    report = check_tree(MemoryTree(head), base=MemoryTree(base), changed={PPO: PPO}, durations=rows)
    (f,) = [f for f in report.findings if f.rule == "REG020"]
    assert f.severity.value == "failure"
    assert "lowers est_time from 800 to 600 s, below 4 of the 5 passing runs on MI355X" in f.message
    assert f.suggestion == "810"  # p90 700 x 1.15 = 805 -> 810, above the slowest run x 1.05 = 756
    head[PPO] = base[PPO].replace("est_time=800", "est_time=760")  # lower, but above every run: no failure
    report = check_tree(MemoryTree(head), base=MemoryTree(base), changed={PPO: PPO}, durations=rows)
    assert not [f for f in report.findings if f.rule == "REG020" and f.severity.value == "failure"]


def test_reg020_suggests_what_calibrate_writes():
    rows = [{"file": PPO, "backend": "rocm", "hardware": "MI355X", "n": 10, "median": 13, "p90": 41.7, "max": 300}]
    report = check_tree(MemoryTree(miles_tree()), durations=rows)
    # est_time 800 over the ceiling max(1.5 x 41.7, 161.7): the suggestion keeps the slow run
    (f,) = [f for f in report.findings if f.rule == "REG020"]
    assert f.suggestion == "320"  # 300 x 1.05 = 315 -> 320


# -- the command line ----------------------------------------------------------------------------


@pytest.fixture
def mi35x_checkout(tmp_path):
    repo = tmp_path / "sglang"
    shutil.copytree(MI35X, repo)
    (repo / ".github" / "ci-registrar.yml").write_text(SGLANG_CONFIG)
    return repo


def calibrate(repo, *args, env=None):
    return subprocess.run([CLI, "calibrate", "--repo", str(repo), "--durations-file", str(repo / "durations.json"),
                           "--as-of", "2026-07-01T00:00:00Z", *args], capture_output=True, text=True, env=env)


def test_cli_table_json_diff_and_write(mi35x_checkout):
    repo = mi35x_checkout
    before = {p: p.read_bytes() for p in repo.rglob("*.py")}
    done = calibrate(repo)
    assert done.returncode == 0, done.stderr
    assert "test/registered/amd/test_kimi_k25_mxfp4.py" in done.stdout and "over-estimated" in done.stdout
    assert "shards: suite `stage-c-test-large-8-gpu-amd-mi35x`" in done.stdout
    done = calibrate(repo, "--format", "json")
    data = json.loads(done.stdout)
    assert set(data) == {"changes", "unchanged"}
    changes = {(c["file"], c["old"], c["new"]) for c in data["changes"]}
    assert changes == {
        ("test/registered/amd/test_deepseek_r1_mxfp4_8gpu.py", 3600, 1310),
        ("test/registered/amd/test_kimi_k25_mxfp4.py", 3600, 740),
        ("test/registered/amd/test_qwen3_coder_next_8gpu.py", 3600, 450),
        ("test/registered/cuda_graph/breakable/test_breakable_cuda_graph.py", 120, 200),
    }
    assert {u["reason"] for u in data["unchanged"]} == {"disabled", "fits"} and all(u["why"] for u in data["unchanged"])
    done = calibrate(repo, "--diff")
    assert done.returncode == 1
    assert "-register_amd_ci(est_time=3600, suite=\"stage-c-test-large-8-gpu-amd-mi35x\")" in done.stdout
    assert {p: p.read_bytes() for p in repo.rglob("*.py")} == before  # --diff writes nothing
    done = calibrate(repo, "--write")
    assert done.returncode == 0, done.stderr
    assert (repo / "test/registered/amd/test_kimi_k25_mxfp4.py").read_text().count("est_time=740") == 1
    done = calibrate(repo, "--format", "json")
    assert json.loads(done.stdout)["changes"] == []  # calibrated: nothing left next time


def test_cli_from_the_store_and_bad_input(mi35x_checkout, tmp_path):
    import os

    env = {**os.environ, "CI_REGISTRAR_DATA_DIR": str(tmp_path / "data")}
    env.pop("DATABASE_URL", None)
    done = subprocess.run([CLI, "durations", "import", str(mi35x_checkout / "durations.json")], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    done = subprocess.run([CLI, "calibrate", "--repo", str(mi35x_checkout), "--durations", "--repository", "sgl-project/sglang",
                           "--as-of", "2026-07-01T00:00:00Z", "--format", "json"], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["changes"]) == 4
    (mi35x_checkout / "durations.json").write_text("{nope")
    done = calibrate(mi35x_checkout)
    assert done.returncode == 2 and "is not JSON" in done.stderr
    done = subprocess.run([CLI, "calibrate", "--repo", str(mi35x_checkout)], capture_output=True, text=True)
    assert done.returncode == 2 and "give the durations" in done.stderr


def test_a_slow_run_older_than_the_last_ten_still_bounds_the_proposal():
    # a slow mode seen 50 days ago (inside floor_days, outside window_days): not forgotten
    records = runs(PPO, [2600], start=NOW - timedelta(days=50)) + runs(PPO, [1500 + i for i in range(10)])
    w = window_of(records)
    assert max(w.passing) < 1600 and w.slowest == 2600
    d = decide(rocm(est_time=5000), w, PARAMS)
    assert d.new >= 2600 * PARAMS.max_margin
    assert decide(rocm(est_time=5000), window_of(records, replace(PARAMS, floor_days=30)), PARAMS).new < 2600


def test_lowering_needs_a_full_window_raising_does_not():
    w = window_of(runs(PPO, [600, 610, 620, 615]))
    assert decide(rocm(est_time=5000), w, PARAMS).reason == "window-not-full"
    assert decide(rocm(est_time=100), w, PARAMS).new == 720  # 620 x 1.15 = 713 -> 720


def test_a_run_killed_at_the_limit_its_est_time_set_raises_it():
    # est_time 2000 -> the runner's limit 2500 s; a run was killed there: it needed more
    records = runs(PPO, [1700 + i for i in range(10)]) + [{**runs(PPO, [2500], outcome="TIMEOUT")[0], "timeout_after_s": 2500}]
    w = window_of(records)
    assert (w.timeouts, w.timed_out_at) == (1, 2500)
    d = decide(rocm(est_time=2000), w, PARAMS)
    assert d.reason == EXCEEDS_TIMEOUT and d.new >= 2500 * PARAMS.max_margin
    # a short test killed at the runner's floor (1800 s, a hang): est_time did not set that limit
    records = runs(PPO, [100 + i for i in range(10)]) + runs(PPO, [1800], outcome="TIMEOUT")
    d = decide(rocm(est_time=1000), window_of(records), PARAMS)  # over-estimated, but a timeout: kept, not raised
    assert d.new is None and d.reason == TIMEOUT_IN_WINDOW
