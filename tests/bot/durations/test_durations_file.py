"""One durations file format: every `--durations-file` reads what `durations export` writes.

The files are written by the commands themselves (`durations import` of job logs into the embedded
store, then `durations export` / `durations show --format json`), then given to `check` and
`calibrate`. A file of the other shape is either read or refused in one line; a file the command
reads nothing from says so.
"""

from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime, timedelta, timezone

import pytest

from tests.conftest import CLI
from tests.fixtures.miles import miles_tree

PPO = "tests/e2e/megatron/test_qwen3_4B_ppo.py"  # ROCm est_time 800 in the fixture


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """A miles checkout, a store with 7 passing MI355X runs of PPO, and the files the commands write."""
    tmp = tmp_path_factory.mktemp("durations-file")
    repo = tmp / "repo"
    for path, text in miles_tree().items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    env = {**os.environ, "CI_REGISTRAR_DATA_DIR": str(tmp / "data")}
    env.pop("DATABASE_URL", None)
    day = datetime.now(timezone.utc) - timedelta(days=3)
    for run, elapsed in enumerate([870, 880, 900, 905, 912, 915, 920], start=1):
        stamp = (day + timedelta(hours=run)).strftime("%Y-%m-%dT%H:%M:%S.0000000Z")
        log = tmp / f"job-{run}.log"
        log.write_text(f"{stamp} ##[group]Run tests\n{stamp} [1/1] {PPO}  PASS  elapsed={elapsed}s\n{stamp} ##[endgroup]\n")
        done = subprocess.run([CLI, "durations", "import", str(log), "--repository", "radixark/miles", "--run-id", str(run),
                               "--hardware", "MI355X", "--backend", "rocm"], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr
    files = {}
    for name, args in {"export.json": ["export"], "export.csv": ["export", "--format", "csv"],
                       "show.json": ["show", "--format", "json"]}.items():
        done = subprocess.run([CLI, "durations", *args], capture_output=True, text=True, env=env, check=True)
        files[name] = tmp / name
        files[name].write_text(done.stdout)
    return repo, files, env


def run(*args, env=None):
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=env)


def reg020(done):
    assert done.returncode == 0, done.stderr
    return [f for f in json.loads(done.stdout)["findings"] if f["rule"] == "REG020"]


@pytest.mark.parametrize("name", ["export.json", "export.csv", "show.json"])
def test_check_reads_the_export_in_json_and_csv_and_the_show_json(stored, name):
    repo, files, _env = stored
    (f,) = reg020(run("check", "--repo", str(repo), "--durations-file", str(files[name]), "--format", "json"))
    assert "over 7 passing runs on MI355X" in f["message"] and "p90 917 s" in f["message"]
    assert f["suggestion"] == "1060"


@pytest.mark.parametrize("name", ["export.json", "export.csv"])
def test_calibrate_reads_the_export_in_json_and_csv(stored, name):
    repo, files, _env = stored
    done = run("calibrate", "--repo", str(repo), "--durations-file", str(files[name]), "--format", "json")
    assert done.returncode == 0, done.stderr
    changes = {(c["file"], c["old"], c["new"]) for c in json.loads(done.stdout)["changes"]}
    assert changes == {(PPO, 800, 1060)}


def test_calibrate_refuses_the_show_json_in_one_line_naming_the_export(stored):
    repo, files, _env = stored
    done = run("calibrate", "--repo", str(repo), "--durations-file", str(files["show.json"]))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "`ci-registrar durations export`" in done.stderr


def test_a_file_of_another_shape_is_refused_in_one_line(stored, tmp_path):
    repo, _files, _env = stored
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps([{"path": PPO, "seconds": 900}]))
    for command in ("check", "calibrate"):
        done = run(command, "--repo", str(repo), "--durations-file", str(odd))
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert "object 1 is neither" in done.stderr and "durations export" in done.stderr
    text = tmp_path / "notes.txt"
    text.write_text("file,seconds\nx.py,3\n")
    done = run("check", "--repo", str(repo), "--durations-file", str(text))
    assert done.returncode == 2 and "lacks the columns elapsed_s, outcome" in done.stderr


def test_a_file_read_for_nothing_says_so(stored, tmp_path):
    repo, files, _env = stored
    other = tmp_path / "mi300x.json"
    other.write_text(json.dumps([{**r, "hardware": "MI300X"} for r in json.loads(files["export.json"].read_text())]))
    for command in ("check", "calibrate"):
        done = run(command, "--repo", str(repo), "--durations-file", str(other))
        assert done.returncode == 0, done.stderr
        assert "none of its 7 rows is on MI355X (calibration.hardware); it holds 7 on MI300X" in done.stderr
    empty = tmp_path / "empty.json"
    empty.write_text("[]\n")
    done = run("check", "--repo", str(repo), "--durations-file", str(empty))
    assert "holds no measurements" in done.stderr


def test_a_mistyped_repository_is_exit_2_naming_the_stored_ones(stored):
    repo, files, env = stored
    for source in (["--durations-file", str(files["export.json"])], ["--durations"]):
        for command in ("check", "calibrate"):
            done = run(command, "--repo", str(repo), *source, "--repository", "radixark/mils", env=env)
            assert done.returncode == 2, (command, source, done.stdout, done.stderr)
            assert "radixark/mils" in done.stderr and "it holds: radixark/miles" in done.stderr
            assert done.stderr.count("\n") == 1
