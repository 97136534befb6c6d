"""REG015 (consumer without registrations), checks/ruleset/reg015_consumer_without_registrations.py:
driven by its fixtures, REG015/ beside this module (test_rule_fixtures.py describes them), and its
cases on miles-shaped source written here.

Spans are 1-based, end_column exclusive. Each positive case asserts the exact line and column.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.checks.ruleset.rule_support import check, check_fixture, fixture_files, fixture_id
from tests.fixtures.miles import PR_TEST_ROCM, miles_tree, test_file


@pytest.mark.parametrize("fixture", fixture_files("REG015"), ids=fixture_id)
def test_fixture(fixture: Path):
    """Each fixture in REG015/ beside this module gets exactly the findings its `# expect:` lines state."""
    check_fixture(fixture)


def test_reg015_leaves_a_suite_outside_the_inventory_to_reg014():
    wf = PR_TEST_ROCM.replace("--suite stage-c-4-gpu-mi350", "--suite stage-c-4-gpu-mi999")
    report = check(**{".github/workflows/pr-test-rocm.yml": wf})
    assert [f.rule for f in report.findings if f.file == ".github/workflows/pr-test-rocm.yml"] == ["REG014"]


def test_reg015_is_quiet_when_a_registration_of_that_backend_names_its_suite_unreadably():
    """A ROCm registration whose suite is no literal may be the one the job's suite names."""
    files = miles_tree()
    # nothing registers stage-c-4-gpu-mi350 in the fixture: REG015 on pr-test-rocm.yml ...
    assert any(f.rule == "REG015" and "stage-c-4-gpu-mi350" in f.message for f in check(files).findings)
    # ... unless a rocm registration's suite cannot be read
    unread = 'SUITE = "stage-c-4-gpu-" + "mi350"\nregister_rocm_ci(est_time=60, suite=SUITE, labels=["amd"])'
    files["tests/e2e/test_unread.py"] = test_file(unread)
    report = check(files)
    assert not any(f.rule == "REG015" and "stage-c-4-gpu-mi350" in f.message for f in report.findings)
    # and a cuda registration's unreadable suite does not silence the rocm job's
    files["tests/e2e/test_unread.py"] = test_file(unread.replace("register_rocm_ci", "register_cuda_ci").replace('["amd"]', '["long"]'))
    assert any(f.rule == "REG015" and "stage-c-4-gpu-mi350" in f.message for f in check(files).findings)


def test_emptied_for_reads_the_backends_a_diff_emptied():
    from checks.ruleset.reg015_consumer_without_registrations import emptied_for as _emptied_for

    assert _emptied_for({"rocm"}, "rocm") and _emptied_for({"rocm"}, None) and _emptied_for({"*"}, "cuda")
    assert not _emptied_for({"cuda"}, "rocm") and not _emptied_for(set(), None) and not _emptied_for(None, "rocm")


def test_reg015_in_a_diff_reports_the_jobs_of_the_workflows_it_changed_only():
    """Nothing in the fixture registers stage-c-4-gpu-mi350: REG015 on pr-test-rocm.yml's job. A
    diff that edits that workflow is told; a diff elsewhere is not (the job was like that before)."""
    from checks.engine import check_tree
    from checks.scanning.tree import MemoryTree
    from tests.fixtures import miles

    base = miles_tree()
    edited = {**base, ".github/workflows/pr-test-rocm.yml": PR_TEST_ROCM.replace("timeout-minutes: 180", "timeout-minutes: 170")}
    # another workflow: the diff re-reads every registration (a complete picture), yet did not touch this job
    elsewhere = {**base, ".github/workflows/pr-test.yml": base[".github/workflows/pr-test.yml"] + "\n# note\n"}

    def reg015(head: dict, changed: set[str]) -> list:
        report = check_tree(MemoryTree(head), MemoryTree(base), {p: p for p in changed}, consumers_from=miles.CONSUMERS)
        return [f for f in report.findings if f.rule == "REG015" and "stage-c-4-gpu-mi350" in f.message]

    assert reg015(edited, {".github/workflows/pr-test-rocm.yml"})
    assert not reg015(elsewhere, {".github/workflows/pr-test.yml"})
