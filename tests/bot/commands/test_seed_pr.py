"""The seed PR's situation (miles #2480), as a real git repository checked in diff mode.

Base: the MI350 8-GPU suite is `stage-c-8-gpu-mi350`, run by a nightly workflow's matrix.
Head: CI_SUITES renames it to `nightly-stage-c-8-gpu-mi350` and the PR updates two test files,
while a third file, untouched by the PR, still registers the old name, and the nightly
workflow's matrix still lists the old names.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from checks.engine import check_tree
from checks.model import Change
from checks.scanning.tree import GitRevisionTree, changed_paths
from tests.conftest import CLI
from tests.fixtures.miles import LABELS, PR_TEST, PR_TEST_ROCM, REGISTER_MODULE, test_file

OLD_SUITES = '''\
from tests.ci.ci_register import HWBackend

CI_SUITES = {
    HWBackend.CPU: ["stage-a-cpu", "stage-b-cpu"],
    HWBackend.CUDA: ["stage-b-2-gpu-h200", "stage-c-8-gpu-h100", "stage-c-8-gpu-h200", "stage-c-4-gpu-h200", "stage-c-2-gpu-h200"],
    HWBackend.ROCM: [
        # consumed by pr-test-rocm.yml
        "stage-c-4-gpu-mi350",
        # consumed by the MI350 nightly
        "stage-c-8-gpu-mi350",
    ],
}
'''

NEW_SUITES = OLD_SUITES.replace('"stage-c-8-gpu-mi350"', '"nightly-stage-c-8-gpu-mi350"')

NIGHTLY = '''\
name: Nightly MI350
on:
  schedule:
    - cron: "0 4 * * *"
jobs:
  nightly:
    timeout-minutes: 120
    strategy:
      matrix:
        include:
          - suite: stage-c-8-gpu-mi350
            runner: linux-mi35x-gpu-8
    runs-on: ${{ matrix.runner }}
    steps:
      - run: python3 tests/ci/run_suite.py --hw rocm --suite ${{ matrix.suite }} --match-all-labels
'''

CONFIG = "consumers: []\n"  # the nightly lives in this fixture's own workflows


def _rocm(suite: str, est: int = 800) -> str:
    return f'register_rocm_ci(est_time={est}, suite="{suite}", labels=["long"])'


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env).stdout


def write(repo: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        p = repo / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


@pytest.fixture()
def seed_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "miles"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(
        repo,
        {
            "tests/ci/ci_register.py": REGISTER_MODULE,
            "tests/ci/run_suite.py": OLD_SUITES,
            "tests/ci/labels.py": LABELS,
            ".github/ci-registrar.yml": CONFIG,
            ".github/workflows/pr-test-rocm.yml": PR_TEST_ROCM,
            ".github/workflows/pr-test.yml": PR_TEST,
            ".github/workflows/nightly-mi350.yml": NIGHTLY,
            "tests/e2e/test_qwen3_4B_ppo.py": test_file(_rocm("stage-c-8-gpu-mi350", 800)),
            "tests/e2e/test_qwen3_4B_offload_disk.py": test_file(_rocm("stage-c-8-gpu-mi350", 300)),
            "tests/e2e/test_run_megatron_worker_main.py": test_file(_rocm("stage-c-8-gpu-mi350", 20)),
            "tests/e2e/test_gone.py": test_file(_rocm("stage-c-4-gpu-mi350", 100)),
        },
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    git(repo, "checkout", "-qb", "rename")
    write(
        repo,
        {
            "tests/ci/run_suite.py": NEW_SUITES,
            "tests/e2e/test_qwen3_4B_ppo.py": test_file(_rocm("nightly-stage-c-8-gpu-mi350", 800)),
            "tests/e2e/test_qwen3_4B_offload_disk.py": test_file(_rocm("nightly-stage-c-8-gpu-mi350", 300)),
        },
    )
    (repo / "tests/e2e/test_gone.py").unlink()
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "rename the MI350 8-GPU suite into the nightly- namespace")
    return repo


def _diff_report(repo: Path):
    head, base = GitRevisionTree(repo, "rename"), GitRevisionTree(repo, "main")
    return check_tree(head, base=base, changed=changed_paths(repo, base.commit, head.commit))


def test_untouched_file_with_the_old_name_fails_with_a_fix(seed_repo):
    report = _diff_report(seed_repo)
    reg010 = [f for f in report.findings if f.rule == "REG010"]
    assert [(f.file, f.span.line, f.span.column) for f in reg010] == [("tests/e2e/test_run_megatron_worker_main.py", 3, 37)]
    finding = reg010[0]
    assert finding.severity.value == "failure"
    assert "`nightly-stage-c-8-gpu-mi350`" in finding.message
    assert finding.suggestion == '"nightly-stage-c-8-gpu-mi350"'
    assert finding.fix.text == 'register_rocm_ci(est_time=20, suite="nightly-stage-c-8-gpu-mi350", labels=["long"])'
    assert (finding.fix.start_line, finding.fix.end_line) == (3, 3)


def test_the_stale_workflow_matrix_leaves_the_renamed_suite_without_consumer(seed_repo):
    report = _diff_report(seed_repo)
    reg013 = sorted((f.file, f.span.line) for f in report.findings if f.rule == "REG013")
    assert reg013 == [("tests/e2e/test_qwen3_4B_offload_disk.py", 3), ("tests/e2e/test_qwen3_4B_ppo.py", 3)]
    reg014 = [f for f in report.findings if f.rule == "REG014"]
    assert [(f.file, f.span.line) for f in reg014] == [(".github/workflows/nightly-mi350.yml", 11)]
    assert "stage-c-8-gpu-mi350" in reg014[0].message


def test_namespace_moves_and_removals_are_noticed(seed_repo):
    report = _diff_report(seed_repo)
    moves = [f for f in report.findings if f.rule == "REG012"]
    assert len(moves) == 2 and all(f.severity.value == "notice" for f in moves)
    assert "nightly-mi350.yml" in moves[0].message  # who ran the old name
    removed = [f for f in report.findings if f.rule == "REG050"]
    assert [(f.file, f.span.line) for f in removed] == [("tests/e2e/test_gone.py", 3)]
    changes = {(r.file, r.change) for r in report.registrations}
    assert ("tests/e2e/test_qwen3_4B_ppo.py", Change.CHANGED) in changes
    assert ("tests/e2e/test_run_megatron_worker_main.py", Change.UNCHANGED) in changes
    assert ("tests/e2e/test_gone.py", Change.REMOVED) in changes
    assert report.failed


def test_the_command_line_reports_the_same_in_json(seed_repo):
    done = subprocess.run(
        [CLI, "check", "--repo", str(seed_repo), "--base", "main", "--head", "rename", "--format", "json"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    assert set(doc) == {"registrations", "findings"}
    rules = sorted({f["rule"] for f in doc["findings"]})
    assert rules == ["REG010", "REG012", "REG013", "REG014", "REG015", "REG050"]
    # deleting test_gone.py took the last registration of the suite pr-test-rocm.yml runs
    assert [f["file"] for f in doc["findings"] if f["rule"] == "REG015"] == [".github/workflows/pr-test-rocm.yml"]
    changes = sorted({r["change"] for r in doc["registrations"]})
    assert changes == ["changed", "removed", "unchanged"]


def test_whole_tree_mode_on_the_head_finds_the_same_failure(seed_repo):
    git(seed_repo, "checkout", "-q", "rename")
    done = subprocess.run([CLI, "check", "--repo", str(seed_repo)], capture_output=True, text=True)
    assert done.returncode == 1
    assert "REG010" in done.stdout and "test_run_megatron_worker_main.py" in done.stdout


def test_bad_invocations_exit_2(tmp_path):
    not_git = tmp_path / "plain"
    not_git.mkdir()
    done = subprocess.run([CLI, "check", "--repo", str(not_git), "--base", "main"], capture_output=True, text=True)
    assert done.returncode == 2 and "git" in done.stderr and "Traceback" not in done.stderr
    done = subprocess.run([CLI, "check", "--repo", str(tmp_path / "missing")], capture_output=True, text=True)
    assert done.returncode == 2 and "not a readable directory" in done.stderr
