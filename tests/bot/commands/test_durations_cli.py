"""`ci-registrar durations import|show|export` and `db upgrade` through the real command group."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli import main
from checks.calibration.estimates import duration_stats
from tests import REPO
from tests.bot.store.test_durations_store import make_log


@pytest.fixture()
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("CI_REGISTRAR_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("DATABASE_URL", raising=False)
    return tmp_path


def run(*args):
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def write_log(path: Path, entries, **kw) -> Path:
    path.write_text(make_log(entries, **kw), newline="")
    return path


def test_db_upgrade_creates_the_sqlite_store(env):
    code, out, _ = run("db", "upgrade")
    assert code == 0 and "revision head" in out
    assert (env / "data" / "ci-registrar.db").exists()


@pytest.mark.parametrize("args, empty", [
    (("durations", "show"), "no passing measurements"), (("durations", "show", "--format", "json"), "[]"),
    (("durations", "export"), "[]"), (("durations", "export", "--format", "csv"), "repository,file,"),
    (("audit",), ""), (("audit", "--format", "json"), "[]"),
])
def test_reading_commands_never_create_a_store(env, args, empty):
    code, out, err = run(*args)
    assert code == 0, err
    assert out.strip().startswith(empty)
    assert "no store at" in err and "CI_REGISTRAR_DATA_DIR" in err
    assert not (env / "data").exists()  # nothing created where the command ran


def test_import_show_export_on_the_embedded_store(env):
    durations = [800, 820, 850, 900, 812]
    logs = [write_log(env / f"job{i}.log", [("tests/e2e/test_a.py", "PASS", d), ("tests/e2e/test_b.py", "FAIL", 10)],
                      est={"tests/e2e/test_a.py": 700, "tests/e2e/test_b.py": 20})
            for i, d in enumerate(durations)]
    code, out, err = run("durations", "import", *map(str, logs), "--repository", "radixark/miles", "--label", "mi350")
    assert code == 0, err
    assert "imported 2 measurements" in out and "10 new measurements from 5 files" in out
    assert (env / "data" / "ci-registrar.db").exists()  # created on first use

    code, out, err = run("durations", "import", *map(str, logs), "--repository", "radixark/miles", "--label", "mi350")
    assert code == 0 and "(2 already stored)" in out and "0 new measurements" in out

    code, out, _ = run("durations", "show", "--format", "json")
    assert code == 0
    expected = duration_stats(durations)
    assert json.loads(out) == [{"file": "tests/e2e/test_a.py", "backend": "rocm", "suite": "stage-c-4-gpu-mi350",
                                "hardware": "MI355X", "n": 5, "median": expected.median, "p90": expected.p90,
                                "max": expected.max}]
    detailed = json.loads(run("durations", "show", "--format", "json", "--details")[1])[0]
    assert detailed["repository"] == "radixark/miles" and detailed["est_time"] == 700
    assert detailed["since"].endswith("Z") and detailed["since"] <= detailed["latest"]
    code, out, _ = run("durations", "show")
    assert out.splitlines()[0].split() == ["file", "backend", "suite", "hardware", "n", "median", "p90", "max"]
    assert out.splitlines()[1].split() == ["tests/e2e/test_a.py", "rocm", "stage-c-4-gpu-mi350", "MI355X", "5",
                                           "820", "880", "900"]
    assert json.loads(run("durations", "show", "--file", "tests/e2e/nope.py", "--format", "json")[1]) == []
    assert len(json.loads(run("durations", "show", "--suite", "stage-c-4-gpu-mi350", "--format", "json")[1])) == 1

    code, out, _ = run("durations", "export", "--format", "json")
    records = json.loads(out)
    assert len(records) == 10 and {r["outcome"] for r in records} == {"PASS", "FAIL"}
    code, csv_text, _ = run("durations", "export", "--format", "csv")
    assert csv_text.splitlines()[0].startswith("repository,file,backend,suite,hardware,elapsed_s,outcome,attempt")
    assert len(csv_text.splitlines()) == 11
    (env / "x.csv").write_text(csv_text)
    (env / "x.json").write_text(out)
    code, out, _ = run("durations", "import", str(env / "x.csv"), str(env / "x.json"))
    assert code == 0 and "0 new measurements from 2 files" in out


def test_import_reports_bad_input(env):
    empty = env / "empty.log"
    empty.write_text("2026-11-01T00:00:00.0000000Z nothing to see\n")
    code, out, err = run("durations", "import", str(empty), "--repository", "a/b")
    assert code == 1 and "no per-file summary lines" in err and "nothing imported" in err

    bad = env / "bad.log"
    bad.write_text("2026-11-01T00:00:00.0Z [1/2] tests/e2e/test_a.py  PASS  elapsed=5s\n"
                   "2026-11-01T00:00:00.0Z [2/2] tests/e2e/test_b.py  GREEN  elapsed=5s\n")
    code, out, err = run("durations", "import", str(bad), "--repository", "a/b")
    assert code == 0 and f"{bad}:2: unknown status 'GREEN'" in err and "1 malformed line skipped" in out
    assert "hardware unknown" in err

    csv_file = env / "m.csv"
    csv_file.write_text("file,outcome\ntests/e2e/test_a.py,PASS\n")
    code, out, err = run("durations", "import", str(csv_file), "--repository", "a/b")
    assert code == 1 and "missing column: elapsed_s" in err

    code, _, err = run("durations", "import", str(bad))  # a usage error: exit 2, one line
    assert code == 2 and "needs --repo" in err and len(err.strip().splitlines()) == 1


def test_import_with_explicit_hardware_run_id_and_format(env):
    log = write_log(env / "job.txt", [("tests/e2e/test_a.py", "PASS", 5)])
    code, out, err = run("durations", "import", str(log), "--repository", "a/b", "--run-id", "42", "--job-id", "7",
                         "--hardware", "MI300X", "--format", "log")
    assert code == 0, err
    record = json.loads(run("durations", "export")[1])[0]
    assert (record["run_id"], record["job_id"], record["hardware"]) == (42, 7, "MI300X")


def test_commands_on_postgresql(pg_url, tmp_path, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", pg_url)
    monkeypatch.setenv("CI_REGISTRAR_DATA_DIR", str(tmp_path / "data"))
    assert run("db", "upgrade")[0] == 0
    repo = f"pg/{uuid.uuid4().hex[:8]}"
    log = write_log(tmp_path / "job.log", [("tests/e2e/test_a.py", "PASS", 5)])
    code, out, err = run("durations", "import", str(log), "--repository", repo, "--label", "linux-mi35x-gpu-8")
    assert code == 0 and "imported 1 measurement" in out, err
    shown = json.loads(run("durations", "show", "--repository", repo, "--format", "json")[1])
    assert [(s["hardware"], s["n"]) for s in shown] == [("MI355X", 1)]
    assert not (tmp_path / "data" / "ci-registrar.db").exists()


def test_the_installed_entry_point(env):
    log = write_log(env / "job.log", [("tests/e2e/test_a.py", "PASS", 5)])
    cmd = [sys.executable, "-m", "bot.cli", "durations", "import", str(log), "--repository", "a/b"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env={"CI_REGISTRAR_DATA_DIR": str(env / "data"),
                                                                     "PATH": "/usr/bin:/bin"},
                          cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert "imported 1 measurement" in proc.stdout
