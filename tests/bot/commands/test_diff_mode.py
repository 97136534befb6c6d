"""The PR sees what it breaks: each change below breaks something the diff never touched, and is
reported on the PR that makes it, in diff mode (`check --base`), with `--new-only`, and by the
App's check run on the simulator.

The base is miles-shaped (tests/fixtures/miles.py) with `consumers: []`, so its two nightly ROCm
registrations already have no consumer (REG013) and its CUDA matrix already runs suites no test
registers (REG015): old findings, which `--new-only` must leave out while keeping the new ones.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import CLI
from tests.fixtures.miles import RUN_SUITE, miles_tree, test_file
from tests.bot.commands.test_seed_pr import git, write

ROCM_TEST = "tests/e2e/test_rocm_pr.py"
ROCM_WORKFLOW = ".github/workflows/pr-test-rocm.yml"
INVENTORY = "tests/ci/run_suite.py"
MAIN = '\nif __name__ == "__main__":\n    pass\n'
OLD = [("REG013", "failure", "tests/e2e/fsdp/test_qwen3_0.6B_fsdp_distributed.py"),
       ("REG013", "failure", "tests/e2e/megatron/test_qwen3_4B_ppo.py")]


def rocm_test(suite: str) -> str:
    return test_file(f'register_rocm_ci(est_time=10, suite="{suite}", labels=["long"])', body=MAIN)


def base_files() -> dict[str, str]:
    return miles_tree(**{".github/ci-registrar.yml": "consumers: []\n", ROCM_TEST: rocm_test("stage-c-4-gpu-mi350")})


# name -> (the branch's changes: path -> new text, None deletes; findings of the diff check that
# the base does not have, as (rule, severity, file); the exit status)
CASES = {
    # a workflow change leaves a registered suite with no job
    "workflow deleted": ({ROCM_WORKFLOW: None}, [("REG013", "failure", ROCM_TEST)], 1),
    "workflow runs another suite": (
        {ROCM_WORKFLOW: miles_tree()[ROCM_WORKFLOW].replace("--suite stage-c-4-gpu-mi350", "--suite nightly-stage-c-4-gpu-mi350")},
        [("REG013", "failure", ROCM_TEST)], 1),
    # an inventory change renames a suite that a job still runs, and that an untouched file registers
    "inventory renames a suite": (
        {INVENTORY: RUN_SUITE.replace('"stage-c-4-gpu-mi350"', '"stage-c-4-gpu-mi355"')},
        [("REG010", "failure", ROCM_TEST), ("REG014", "warning", ROCM_WORKFLOW)], 1),
    # a registration moved to another suite empties the suite an untouched workflow runs
    "last registration moved away": (
        {ROCM_TEST: rocm_test("nightly-stage-c-4-gpu-mi350")},
        [("REG012", "notice", ROCM_TEST), ("REG013", "failure", ROCM_TEST), ("REG015", "warning", ROCM_WORKFLOW)], 1),
    # a file's registrations removed: the file is unregistered, and its suite empty
    "registrations removed": (
        {ROCM_TEST: "def test_it():\n    pass\n"},
        [("REG004", "failure", ROCM_TEST), ("REG015", "warning", ROCM_WORKFLOW), ("REG050", "notice", ROCM_TEST)], 1),
    # the file deleted: its suite is empty (REG050 says the registration is gone)
    "test file deleted": (
        {ROCM_TEST: None},
        [("REG015", "warning", ROCM_WORKFLOW), ("REG050", "notice", ROCM_TEST)], 0),
}


def cli(*args: str):
    return subprocess.run([CLI, *args], capture_output=True, text=True, env={**os.environ})


def findings_of(done) -> list[tuple[str, str, str]]:
    assert "Traceback" not in done.stderr, done.stderr
    return sorted((f["rule"], f["severity"], f["file"]) for f in json.loads(done.stdout)["findings"])


def branch_repo(root: Path, changes: dict[str, str | None]) -> Path:
    write(root, base_files())
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    git(root, "checkout", "-qb", "topic")
    for path, text in changes.items():
        if text is None:
            (root / path).unlink()
    write(root, {p: t for p, t in changes.items() if t is not None})
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the change", "--allow-empty")
    return root


def test_the_base_has_the_old_findings_only(tmp_path):
    repo = branch_repo(tmp_path / "miles", {})
    git(repo, "checkout", "-q", "main")
    whole = findings_of(cli("check", "--repo", str(repo), "--format", "json", "--no-cache"))
    assert [f for f in whole if f[0] != "REG015"] == OLD
    assert {f[2] for f in whole if f[0] == "REG015"} == {".github/workflows/pr-test.yml"}


@pytest.mark.parametrize("case", sorted(CASES))
def test_diff_mode_reports_what_the_branch_breaks(tmp_path, case):
    changes, new, status = CASES[case]
    repo = branch_repo(tmp_path / "miles", changes)
    done = cli("check", "--repo", str(repo), "--base", "main", "--format", "json", "--no-cache")
    assert done.returncode == status, done.stdout
    reported = findings_of(done)
    assert all(f in reported for f in new), reported
    # and the whole-tree check of the head agrees that each is there
    whole = findings_of(cli("check", "--repo", str(repo), "--format", "json", "--no-cache"))
    assert all(f in whole for f in new if f[0] not in ("REG012", "REG050")), whole


@pytest.mark.parametrize("cache", [[], ["--no-cache"]], ids=["cache", "no-cache"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_new_only_keeps_every_finding_the_branch_brings_and_nothing_older(tmp_path, case, cache):
    changes, new, status = CASES[case]
    repo = branch_repo(tmp_path / "miles", changes)
    args = ["check", "--repo", str(repo), "--base", "main", "--new-only", "--format", "json",
            "--cache-dir", str(tmp_path / "cache"), *cache]
    for _run in range(2):  # the second run with the scan cache warm
        done = cli(*args)
        assert findings_of(done) == sorted(new)
        assert done.returncode == status


def test_new_only_follows_a_renamed_file_back_to_its_base_path(tmp_path):
    """An old finding in a file the branch renamed is not new; a new one in the same file is."""
    repo = branch_repo(tmp_path / "miles", {})
    git(repo, "mv", "tests/e2e/megatron/test_qwen3_4B_ppo.py", "tests/e2e/megatron/test_qwen3_4B_ppo_renamed.py")
    git(repo, "commit", "-qm", "rename")
    write(repo, {INVENTORY: RUN_SUITE.replace('"stage-c-4-gpu-mi350"', '"stage-c-4-gpu-mi355"')})
    git(repo, "commit", "-qam", "and rename a suite")
    done = cli("check", "--repo", str(repo), "--base", "main", "--new-only", "--format", "json", "--no-cache")
    assert findings_of(done) == [("REG010", "failure", ROCM_TEST), ("REG014", "warning", ROCM_WORKFLOW)]


def test_new_only_reports_a_finding_that_became_more_severe(tmp_path):
    """The base's configuration keeps REG013 a warning; the branch drops that: the old warnings
    are new failures."""
    repo = branch_repo(tmp_path / "miles", {})
    git(repo, "checkout", "-q", "main")
    write(repo, {".github/ci-registrar.yml": "consumers: []\nrules:\n  REG013: warning\n"})
    git(repo, "commit", "-qam", "REG013 a warning on main")
    git(repo, "checkout", "-q", "topic")
    done = cli("check", "--repo", str(repo), "--base", "main", "--new-only", "--format", "json", "--no-cache")
    assert done.returncode == 1
    assert findings_of(done) == [(rule, "failure", file) for rule, _severity, file in OLD]


# ------------------------------------------------------------------------------------------------
# The App: the same changes as pull requests on the simulator, checked by the App's PR check


@pytest.fixture(scope="module")
def app_world(tmp_path_factory):
    from bench.api_calls import ApiWorld

    w = ApiWorld(tmp_path_factory.mktemp("diff-mode"), files=40, tests=8)
    w.repo.commit(base_files(), branch="main", replace=True)
    yield w
    w.stop()


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_apps_check_run_reports_what_the_pull_request_breaks(app_world, case):
    w = app_world
    changes, new, status = CASES[case]
    branch = "case-" + case.replace(" ", "-")
    pr = w.open_pr(changes, branch)
    w.event("pull_request", "opened", pull=pr, sender="bob")
    run = w.latest_run(w.repo.head(branch))
    level = {"failure": "failure", "warning": "warning", "notice": "notice"}
    annotated = [(a["title"].split()[0], a["annotation_level"], a["path"]) for a in run["annotations"]]
    assert all((rule, level[severity], file) in annotated for rule, severity, file in new), annotated
    assert run["conclusion"] == ("failure" if status else "success"), run["output"]


def test_new_only_on_a_branch_that_adopts_the_layout_keeps_everything(tmp_path):
    """The base is not yet a target repository: every finding of the head is new."""
    repo = tmp_path / "miles"
    write(repo, {"README.md": "before\n"})
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    git(repo, "checkout", "-qb", "topic")
    write(repo, base_files())
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "adopt")
    every = cli("check", "--repo", str(repo), "--base", "main", "--format", "json", "--no-cache")
    new = cli("check", "--repo", str(repo), "--base", "main", "--new-only", "--format", "json", "--no-cache")
    assert findings_of(new) == findings_of(every) != []
