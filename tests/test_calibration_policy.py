"""issue 25's done-when checks on miles' newest tree (tests/fixtures/targets/miles/ci-31f1ca9) with
imported measurements, through the shipped command line: `ci-registrar calibrate` and `check`."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from tests.conftest import CLI

MILES_HEAD = Path(__file__).parent / "fixtures" / "targets" / "miles" / "ci-31f1ca9"
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
