"""issue 25's done-when checks on miles' newest tree (tests/fixtures/targets/miles/ci-31f1ca9) with
imported measurements, through the shipped command line: `ci-registrar calibrate` and `check`."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import datetime, timedelta, timezone

import pytest

from tests import FIXTURES, REPO
from tests.conftest import CLI

MILES_HEAD = FIXTURES / "targets" / "miles" / "ci-31f1ca9"
AS_OF = datetime(2026, 11, 30, tzinfo=timezone.utc)
CKPT = "tests/e2e/ckpt/test_qwen3_4B_ckpt.py"  # register_rocm_ci(est_time=1200, suite="nightly-stage-c-8-gpu-mi350", ...)
LORA = "tests/e2e/lora/test_lora_qwen2.5_0.5B.py"  # est_time=300, nightly-stage-c-4-gpu-mi350


def record(file, elapsed, *, days_ago=1.0, outcome="PASS", event="schedule", branch="main", run_id=1, **extra):
    out = {"repository": "radixark/miles", "file": file, "backend": "rocm", "hardware": "MI355X", "elapsed_s": elapsed,
           "outcome": outcome, "measured_at": (AS_OF - timedelta(days=days_ago)).isoformat(), "run_id": run_id,
           "job_id": run_id, "event": event, "head_branch": branch}
    out.update(extra)
    return out


def nightly(file, values, *, first_run=1000, **kw):
    """Scheduled runs on main, one a day, newest first."""
    return [record(file, v, days_ago=1 + i, run_id=first_run + i, **kw) for i, v in enumerate(values)]


@pytest.fixture
def checkout(tmp_path):
    repo = tmp_path / "miles"
    shutil.copytree(MILES_HEAD, repo)
    return repo


def calibrate(repo, records, *args):
    (repo.parent / "durations.json").write_text(json.dumps(records))
    return subprocess.run([CLI, "calibrate", "--repo", str(repo), "--durations-file", str(repo.parent / "durations.json"),
                           "--as-of", AS_OF.isoformat(), *args], capture_output=True, text=True)


def changes(repo, records):
    done = calibrate(repo, records, "--format", "json")
    assert done.returncode == 0, done.stderr
    return {c["file"]: (c["old"], c["new"]) for c in json.loads(done.stdout)["changes"]}


def test_a_crlf_file_keeps_crlf_and_only_its_digits_change(checkout):
    path = checkout / CKPT
    crlf = path.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    path.write_bytes(crlf)
    records = nightly(CKPT, [500, 510, 505, 520, 515, 498, 502, 511, 507, 509])
    done = calibrate(checkout, records, "--write")
    assert done.returncode == 0, done.stderr
    after = path.read_bytes()
    assert after.count(b"\r\n") == crlf.count(b"\r\n") and b"\n" not in after.replace(b"\r\n", b"")
    assert after == crlf.replace(b"est_time=1200", b"est_time=600")  # p90 515.5 x 1.15 = 593 -> 600


def store_env(tmp_path):
    import os

    env = {**os.environ, "CI_REGISTRAR_DATA_DIR": str(tmp_path / "data")}
    env.pop("DATABASE_URL", None)
    return env


def test_runs_of_a_feature_branch_change_nothing(checkout, tmp_path):
    """Ten 1,500 s pushes on feature/slow-path, imported with their event and head_branch: neither
    `calibrate` nor REG020 moves LORA (est_time 300, main's nightlies take 240-260 s)."""
    main = nightly(LORA, [240, 250, 245, 255, 260, 248, 252, 243, 251, 249])
    feature = [record(LORA, 1500, days_ago=0.5 + i / 24, event="push", branch="feature/slow-path", run_id=5000 + i)
               for i in range(10)]
    dispatched = [record(LORA, 1500, days_ago=0.2, event="workflow_dispatch", branch="main", run_id=6000)]
    forked = [record(LORA, 1500, days_ago=0.3, event="push", branch="main", run_id=6001, head_repository="evil/miles")]
    assert changes(checkout, main) == {}
    assert changes(checkout, main + feature + dispatched + forked) == {}
    # the same runs through the store: `durations import` keeps event and head_branch
    env = store_env(tmp_path)
    (tmp_path / "all.json").write_text(json.dumps(main + feature + dispatched + forked))
    done = subprocess.run([CLI, "durations", "import", str(tmp_path / "all.json")], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    done = subprocess.run([CLI, "calibrate", "--repo", str(checkout), "--durations", "--repository", "radixark/miles",
                           "--as-of", AS_OF.isoformat(), "--format", "json"], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["changes"] == []
    # counted as merged code, the same feature runs would have raised it: the filter is what holds it
    assert changes(checkout, main + [{**r, "head_branch": "main"} for r in feature]) == {LORA: (300, 1730)}  # 1500 x 1.15


def test_a_timeout_40_days_ago_prevents_a_lowering(checkout):
    """Remembered as long as a pass (floor_days, 90): 10 fast passes would lower CKPT from 1200, a
    run killed at the limit 40 days ago keeps it."""
    fast = nightly(CKPT, [500, 510, 505, 520, 515, 498, 502, 511, 507, 509])
    assert changes(checkout, fast) == {CKPT: (1200, 600)}
    killed = record(CKPT, 1800, days_ago=40, outcome="TIMEOUT", timeout_after_s=1800, run_id=77)
    assert changes(checkout, fast + [killed]) == {}
    done = calibrate(checkout, fast + [killed], "--format", "json")
    (kept,) = [u for u in json.loads(done.stdout)["unchanged"] if u["file"] == CKPT]
    assert kept["reason"] == "timeout-in-window"


def mixed_history():
    """Every case the policy separates, on miles' newest tree."""
    return (
        nightly(CKPT, [500, 510, 505, 520, 515, 498, 502, 511, 507, 509])  # over: lowered
        + nightly(LORA, [240, 250, 245, 255, 260, 248, 252, 243, 251, 249])  # fits
        + [record(LORA, 1500, days_ago=0.5, event="push", branch="feature/slow-path", run_id=5000 + i) for i in range(10)]
        + nightly("tests/fast-gpu/test_det_process_group.py", [100, 104, 98, 101])  # 40 -> under: raised
        + nightly("tests/e2e/long/test_qwen2.5_0.5B_gsm8k.py", [3000, 3100, 3050, 2990])  # over, window not full
        + nightly("tests/e2e/long/test_qwen2.5_0.5B_gsm8k_async.py", [1000, 1010, 990, 1005, 1002, 998, 1001, 1003, 999, 1004])
        + [record("tests/e2e/long/test_qwen2.5_0.5B_gsm8k_async.py", 6250, days_ago=40, outcome="TIMEOUT",
                  timeout_after_s=6250, run_id=88)]  # killed 40 days ago at the limit est_time 5000 sets: raised
        + nightly("tests/e2e/sglang/test_session_server_multi_role/test_qwen3.py",
                  [180, 200, 220, 190, 210, 205, 195, 215, 5000, 185])  # one 5,000 s pass raises 500
    )


def test_reg020_flags_exactly_the_files_calibrate_changes_with_its_values(checkout, tmp_path):
    env = store_env(tmp_path)
    (tmp_path / "all.json").write_text(json.dumps(mixed_history()))
    done = subprocess.run([CLI, "durations", "import", str(tmp_path / "all.json")], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    done = subprocess.run([CLI, "calibrate", "--repo", str(checkout), "--durations", "--repository", "radixark/miles",
                           "--as-of", AS_OF.isoformat(), "--format", "json"], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    proposed = {(c["file"], c["line"], str(c["new"])) for c in json.loads(done.stdout)["changes"]}
    assert {f for f, _l, _n in proposed} == {CKPT, "tests/fast-gpu/test_det_process_group.py",
                                              "tests/e2e/long/test_qwen2.5_0.5B_gsm8k_async.py",
                                              "tests/e2e/sglang/test_session_server_multi_role/test_qwen3.py"}
    # `check` reads the store as of now: the history is dated relative to AS_OF, so move it to now
    shifted = [{**r, "measured_at": (datetime.fromisoformat(r["measured_at"]) + (datetime.now(timezone.utc) - AS_OF)).isoformat()}
               for r in mixed_history()]
    env2 = store_env(tmp_path / "now")
    (tmp_path / "now.json").write_text(json.dumps(shifted))
    assert subprocess.run([CLI, "durations", "import", str(tmp_path / "now.json")], capture_output=True, text=True,
                          env=env2).returncode == 0
    done = subprocess.run([CLI, "check", "--repo", str(checkout), "--durations", "--repository", "radixark/miles",
                           "--format", "json", "--select", "REG020"], capture_output=True, text=True, env=env2)
    flagged = {(f["file"], f["span"]["line"] if "span" in f else f["line"], f["suggestion"])
               for f in json.loads(done.stdout)["findings"] if f["rule"] == "REG020"}
    assert flagged == proposed


def test_a_raise_driven_by_one_run_says_so_with_its_link(checkout):
    qwen = "tests/e2e/sglang/test_session_server_multi_role/test_qwen3.py"
    records = nightly(qwen, [180, 200, 220, 190, 210, 205, 195, 215, 5000, 185],
                      source="workflow_run:radixark/miles")
    done = calibrate(checkout, records, "--format", "json")
    (change,) = json.loads(done.stdout)["changes"]
    assert (change["old"], change["new"]) == (500, 5250)  # 5,000 x 1.05: the p90 alone would say 560
    from bot.worker.calibration_pr import render_body
    from checks.calibration.policy import Plan, build_suite_windows, decide_all
    from checks.config.schema import Calibration
    from checks.engine import check_tree
    from checks.scanning.tree import DirectoryTree

    params = Calibration()
    windows = build_suite_windows(records, params, now=AS_OF, default_branch="main")
    regs = check_tree(DirectoryTree(checkout), fixes=False).registrations
    plan = Plan(decide_all(regs, windows, params))
    (d,) = plan.changes
    assert d.one_run and d.run == "https://github.com/radixark/miles/actions/runs/1008"
    body = render_body(plan, windows, [], regs, "x", params)
    assert "(driven by a single run: [1008](https://github.com/radixark/miles/actions/runs/1008))" in body


# -- item 3: per-suite hardware and the runner's timeout model -------------------------------------

SGLANG_HEAD = FIXTURES / "targets" / "sglang" / "ci-382343f"
SGLANG_CONFIG = (REPO / "docs" / "configs" / "sglang.yml").read_text()
MI300_FILE = "test/registered/amd/test_mi300_only.py"
KIMI = "test/registered/amd/test_kimi_k25_mxfp4.py"  # est_time 700, stage-c-test-large-8-gpu-amd-mi35x


@pytest.fixture
def sglang(tmp_path):
    repo = tmp_path / "sglang"
    shutil.copytree(SGLANG_HEAD, repo)
    (repo / ".github").mkdir(exist_ok=True)
    (repo / ".github" / "ci-registrar.yml").write_text(SGLANG_CONFIG)
    (repo / MI300_FILE).write_text("from sglang.test.ci.ci_register import register_amd_ci\n\n"
                                   'register_amd_ci(est_time=100, suite="stage-b-test-1-gpu-small-amd")\n')
    return repo


def sg(file, values, hardware, **kw):
    return [{**r, "repository": "sgl-project/sglang", "hardware": hardware}
            for r in nightly(file, values, **kw)]


def test_each_suite_calibrates_on_its_own_hardware_named_in_any_case(sglang):
    """An mi30x-pool suite reads MI300X runs (stored as `mi300x`), an mi35x suite MI355X runs."""
    records = sg(MI300_FILE, [200, 210, 205, 190, 199], "mi300x") + sg(MI300_FILE, [20] * 10, "MI355X", first_run=3000)
    records += sg(KIMI, [900, 910, 905, 920], "MI355x") + sg(KIMI, [5] * 10, "MI300X", first_run=4000)
    assert changes(sglang, records) == {MI300_FILE: (100, 240), KIMI: (700, 1060)}  # p90 208 x 1.15 -> 240; 920 x 1.15 -> 1060


def test_the_per_file_timeout_model_is_the_runners_own():
    from checks.target.timeout_model import MILES, read_timeout_model

    miles = read_timeout_model((MILES_HEAD / "tests/ci/ci_utils.py").read_bytes())
    sglang = read_timeout_model((SGLANG_HEAD / "python/sglang/test/ci/ci_utils.py").read_bytes())
    assert (miles.factor, miles.slack, miles.use_floor) == (MILES.factor, None, True)
    assert (sglang.factor, sglang.slack, sglang.use_floor) == (1.5, 1800.0, False)
    assert [miles.timeout(e, 1800) for e in (100, 2000)] == [1800, 2500]
    assert [sglang.timeout(e, 1800) for e in (100, 2000)] == [1900, 3800]


def test_a_pass_within_sglangs_timeout_is_no_failure_there(sglang):
    """4,000 s passes against est_time 3000: over miles' limit (3750 s), within sglang's (4800 s)."""
    kimi = sg(KIMI, [2900, 2950, 4000, 2980, 2990, 2930, 2940, 2960, 2970, 2910], "MI355X")
    (repo_file,) = [p for p in sglang.rglob("test_kimi_k25_mxfp4.py")]
    repo_file.write_text(repo_file.read_text().replace("est_time=700", "est_time=3000"))
    done = calibrate(sglang, kimi, "--format", "json", "--default-branch", "main")
    (change,) = json.loads(done.stdout)["changes"]
    assert change["reason"] == "under-estimated"  # not exceeds-timeout: sglang's limit for 3000 is 4800 s
    # configured instead: miles' 1.25 x est_time, whose limit (3750 s) that 4,000 s pass outlived
    config = sglang / ".github" / "ci-registrar.yml"
    config.write_text(config.read_text().replace("calibration:\n", "calibration:\n  timeout_factor: 1.25\n"))
    done = calibrate(sglang, kimi, "--format", "json")
    (change,) = json.loads(done.stdout)["changes"]
    assert change["reason"] == "exceeds-timeout" and change["new"] * 1.25 >= 4000


def test_calibrate_reads_the_scan_cache_check_left_and_proposes_the_same(checkout, tmp_path):
    """`calibrate` reads the checkout's scan cache as `check` does: after `check` filled it, calibrate
    parses no test file again (the one pack it adds holds the runner's timeout model alone, and a
    second run adds none), and its proposal is the one it makes without a cache."""
    records = nightly(CKPT, [500, 510, 505, 520, 515, 498, 502, 511, 507, 509])
    cache = tmp_path / "scan-cache"
    done = subprocess.run([CLI, "check", "--repo", str(checkout), "--cache-dir", str(cache), "--format", "json"],
                          capture_output=True, text=True)
    assert done.returncode in (0, 1), done.stderr
    packs = sorted(p.name for p in cache.rglob("pack-*.json"))
    assert packs  # the check left its facts
    warm = calibrate(checkout, records, "--format", "json", "--cache-dir", str(cache))
    assert warm.returncode == 0, warm.stderr
    added = sorted(set(p.name for p in cache.rglob("pack-*.json")) - set(packs))
    assert len(added) == 1  # every test file answered by the cache
    [pack] = [p for p in cache.rglob("pack-*.json") if p.name == added[0]]
    assert [k.split(":")[0] for k in json.loads(pack.read_text())["entries"]] == ["timeout-model"]
    again = calibrate(checkout, records, "--format", "json", "--cache-dir", str(cache))
    assert again.stdout == warm.stdout and len(list(cache.rglob("pack-*.json"))) == len(packs) + 1
    cold = calibrate(checkout, records, "--format", "json", "--no-cache")
    assert cold.returncode == 0, cold.stderr
    assert json.loads(warm.stdout) == json.loads(cold.stdout) and json.loads(cold.stdout)["changes"]


def test_calibrate_reads_the_contract_and_the_runners_timeout_once(checkout, tmp_path, monkeypatch):
    """The check takes over the context calibrate read each suite's hardware from: one read of the
    contract and of the workflows' jobs, one read of the runner's timeout model from its ci_utils
    module, which the check then finds in the configuration it was handed (issue 38)."""
    from click.testing import CliRunner

    import checks.engine
    import checks.target.timeout_model as timeout_model
    from bot.cli import main

    reads = {"contract": 0}
    read_contract = checks.engine.read_contract

    def counted(*args, **kwargs):
        reads["contract"] += 1
        return read_contract(*args, **kwargs)

    monkeypatch.setattr(checks.engine, "read_contract", counted)
    timeout_model.read_timeout_model.cache_clear()
    (tmp_path / "durations.json").write_text(json.dumps(nightly(CKPT, [500, 510, 505, 520, 515, 498, 502, 511, 507, 509])))
    done = CliRunner().invoke(main, ["calibrate", "--repo", str(checkout), "--durations-file", str(tmp_path / "durations.json"),
                                     "--as-of", AS_OF.isoformat(), "--format", "json", "--no-cache"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["changes"]
    info = timeout_model.read_timeout_model.cache_info()
    assert reads["contract"] == 1 and (info.misses, info.hits) == (1, 0)


def test_window_lookup_finds_what_window_for_finds():
    from types import SimpleNamespace

    from checks.calibration.policy import build_suite_windows, window_for, window_lookup
    from checks.model import Backend
    from checks.config.schema import Calibration

    params = Calibration(hardware="MI355X", hardware_by_suite={"*mi30x*": "MI300X"})
    records = nightly(CKPT, [500, 510, 505]) + [{**r, "hardware": "mi300x"} for r in nightly(LORA, [300, 310], first_run=2000)]
    records += [{**r, "hardware": "MI300X"} for r in nightly(CKPT, [50, 51], first_run=3000)]
    windows = build_suite_windows(records, params, now=AS_OF, default_branch="main")
    assert len(windows) == 3
    lookup = window_lookup(windows, params)
    regs = [SimpleNamespace(file=f, backend=b, suite=s) for f in (CKPT, LORA, "tests/other.py")
            for b in (Backend.ROCM, Backend.CUDA) for s in ("nightly-stage-c-8-gpu-mi350", "stage-x-mi30x", None)]
    found = [(lookup(r), window_for(windows, r, params)) for r in regs]
    assert all(a is b for a, b in found)
    assert sum(a is not None for a, _ in found) == 4  # CKPT on either hardware (3 suites), LORA on MI300X only
    legacy = {(CKPT, Backend.ROCM.family): windows[next(iter(windows))]}  # build_windows' (file, family) keys
    assert window_lookup(legacy, params)(regs[0]) is window_for(legacy, regs[0], params) is not None


def test_windows_read_each_distinct_value_once_and_survive_values_of_another_origin():
    """build_windows remembers each hardware name, backend and run time it has read (a season of
    runs repeats them thousands of times); a value that cannot be remembered (a list, from a file of
    another origin) is read as before, never a crash."""
    from checks.calibration.policy import build_windows
    from checks.config.schema import Calibration

    qwen = "tests/e2e/short/test_qwen.py"
    records = nightly(qwen, [100, 110, 120]) + nightly(qwen, [900], first_run=2000)
    records[-1]["hardware"] = ["MI355X"]  # not a model name: not this hardware
    records.append({**records[0], "backend": ["rocm"], "elapsed_s": 5000})  # not a backend: skipped
    records.append({**records[0], "measured_at": (AS_OF - timedelta(days=40)).isoformat(), "elapsed_s": 7000})
    windows = build_windows(records, Calibration(), now=AS_OF, default_branch="main")
    [window] = windows.values()
    # newest first; the list-valued hardware and backend are no model and no backend, and the run
    # 40 days ago (a time read apart from the others) is outside the 30-day window
    assert window.passing == (100.0, 110.0, 120.0)
