"""Every view of how a suite runs reads the one model (checks/target/suite_runs.py): differential
tests of the views against the model and against independent readings of the same files.

- "this test never runs" (REG013) <=> the model has no run that selects the registration and no
  workflow runs its file; and never of a file a workflow names after `python`/`pytest`;
- the summary's buttons go only to suites a job runs (a PR adding three suites no job runs and one
  a job runs gets the one button).
(The summary's GPU-hours against the target's own selection code: tests/checks/reporting/test_pr_summary.py.)
"""

from __future__ import annotations

import re

from checks.engine import build_context, check_tree
from checks.limits import Budget
from checks.reporting.render import check_run_actions
from checks.scanning.tree import DirectoryTree, MemoryTree
from checks.config.schema import load_config
from tests import FIXTURES, REPO
from tests.fixtures.miles import miles_tree, test_file

TARGETS = FIXTURES / "targets"
SGLANG = TARGETS / "sglang" / "ci-382343f"
SGLANG_CONFIG = (REPO / "docs" / "configs" / "sglang.yml").read_bytes()


def _named_by_a_workflow(tree, file: str) -> bool:
    """An independent reading: the workflows name the file, or a directory above it, right after a
    `python`/`pytest` command (as a path from the root or from the runner's `test/`)."""
    text = "\n".join(tree.read(p).decode() for p in tree.paths()
                     if p.startswith(".github/workflows/") and p.endswith((".yml", ".yaml")))
    parts = file.split("/")
    names = {file, file.removeprefix("test/")}
    for i in range(1, len(parts)):
        folder = "/".join(parts[:i]) + "/"
        names |= {folder, folder.removeprefix("test/")}
    return any(re.search(r"(?:python3?|pytest)[^\n]*\s" + re.escape(n) + r"(?:\s|$)", text) for n in names if n.strip("/"))


def test_never_runs_is_said_exactly_where_the_model_has_no_run_and_no_direct_run():
    tree = DirectoryTree(SGLANG)
    report = check_tree(tree, config_text=SGLANG_CONFIG)
    config, _ = load_config(SGLANG_CONFIG)
    model = build_context(tree, config, Budget())[0].suite_runs
    said = {(f.file, f.span.line) for f in report.findings if f.rule == "REG013"}
    expected = {(r.file, r.span.line) for r in report.registrations
                if r.suite and not r.implicit and r.disabled is None and model.never_runs(r) is True}
    assert said == expected
    assert said, "the excerpt has registrations no vendored job runs"
    # "never runs" is one finding: no other rule says it
    assert not [f for f in report.findings if "never runs" in f.message and f.rule != "REG013"]
    # never of a file a workflow runs itself, by an independent reading of the workflows
    assert not [file for file, _ in said if _named_by_a_workflow(tree, file)]
    # a workflow that runs one of them itself (pytest on its directory from test/): it runs, no finding
    file = sorted(said)[0][0]
    files = {p: tree.read(p) for p in tree.paths()}
    folder = file.removeprefix("test/").rsplit("/", 1)[0] + "/"
    files[".github/workflows/direct.yml"] = (f"on: [pull_request]\njobs:\n  d:\n    runs-on: ubuntu-latest\n"
                                             f"    steps:\n      - run: cd test && python3 -m pytest {folder}\n").encode()
    again = check_tree(MemoryTree(files), config_text=SGLANG_CONFIG)
    assert _named_by_a_workflow(MemoryTree(files), file)
    assert file not in {f.file for f in again.findings if f.rule == "REG013"}


def test_buttons_go_only_to_suites_a_job_runs():
    """Three ROCm suites no job runs, and one a job runs: the one button is the runnable one's
    (the rows sort the three first, so a choice by row order alone would give them all three)."""
    base = miles_tree(**{".github/ci-registrar.yml": "consumers: []\n"})
    added = {
        "tests/e2e/rocm/test_n2.py": test_file('register_rocm_ci(est_time=600, suite="nightly-stage-c-2-gpu-mi350", labels=["long"])'),
        "tests/e2e/rocm/test_n4.py": test_file('register_rocm_ci(est_time=600, suite="nightly-stage-c-4-gpu-mi350", labels=["long"])'),
        "tests/e2e/rocm/test_n8.py": test_file('register_rocm_ci(est_time=600, suite="nightly-stage-c-8-gpu-mi350", labels=["long"])'),
        "tests/e2e/rocm/test_pr.py": test_file('register_rocm_ci(est_time=600, suite="stage-c-4-gpu-mi350", labels=["long"])'),
    }
    head = {**base, **added}
    report = check_tree(MemoryTree(head), MemoryTree(base), {p: None for p in added})
    rows = {row.suite: row for row in report.pr_summary.rows}
    assert set(rows) == {"nightly-stage-c-2-gpu-mi350", "nightly-stage-c-4-gpu-mi350", "nightly-stage-c-8-gpu-mi350",
                         "stage-c-4-gpu-mi350"}
    assert [a["description"] for a in check_run_actions(report)] == ["/run-rocm stage-c-4-gpu-mi350"]
    # the three are "never runs" failures, and the runnable one's suggestion shows the plan's charge:
    # the runner's per-file timeout floor for est_time 600 (max(1800, 1.25 x 600) s) x its pool's
    # GPUs ([self-hosted, amd, mi350, 4gpu]: 4), not the table's est_time figure
    assert {f.file for f in report.findings if f.rule == "REG013"} >= {p for p in added if "/test_n" in p}
    runnable = rows["stage-c-4-gpu-mi350"]
    (job,) = runnable.consumers
    assert job.gpus == 4 and runnable.run_gpu_hours == 1800 * 4 / 3600 != job.gpu_hours_after


def test_no_button_for_a_suite_the_run_plan_refuses():
    """The job runs the suite twice in one job, each with its own environment: `/run-rocm` refuses
    it, so the summary offers no button and says why."""
    twice = ("      - run: bash scripts/exec.sh -e MODE=a python3 tests/ci/run_suite.py --hw rocm --suite stage-c-4-gpu-mi350\n"
             "      - run: bash scripts/exec.sh -e MODE=b python3 tests/ci/run_suite.py --hw rocm --suite stage-c-4-gpu-mi350\n")
    workflow = ("name: PR Test (ROCm)\non:\n  pull_request:\njobs:\n  rocm:\n    runs-on: [self-hosted, amd, mi350, 4gpu]\n"
                "    steps:\n" + twice)
    config = 'consumers: []\ndispatch:\n  "*":\n    workflow: rocm-on-demand.yml\n'
    base = miles_tree(**{".github/ci-registrar.yml": config, ".github/workflows/pr-test-rocm.yml": workflow})
    added = {"tests/e2e/rocm/test_pr.py": test_file('register_rocm_ci(est_time=600, suite="stage-c-4-gpu-mi350", labels=["long"])')}
    report = check_tree(MemoryTree({**base, **added}), MemoryTree(base), {p: None for p in added})
    row = next(r for r in report.pr_summary.rows if r.suite == "stage-c-4-gpu-mi350")
    assert row.plannable and "runs it 2 times in one job" in row.refused
    assert check_run_actions(report) == []
    # with one invocation, the same suite is planned and gets its button
    once = workflow.replace(twice.split("\n")[1] + "\n", "")
    base = miles_tree(**{".github/ci-registrar.yml": config, ".github/workflows/pr-test-rocm.yml": once})
    report = check_tree(MemoryTree({**base, **added}), MemoryTree(base), {p: None for p in added})
    assert [a["description"] for a in check_run_actions(report)] == ["/run-rocm stage-c-4-gpu-mi350"]
