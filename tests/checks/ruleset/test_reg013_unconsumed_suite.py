"""REG013 (unconsumed suite), checks/ruleset/reg013_unconsumed_suite.py: driven by its fixtures,
REG013/ beside this module (test_rule_fixtures.py describes them), and its cases on miles-shaped
source written here.

Spans are 1-based, end_column exclusive. Each positive case asserts the exact line and column.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.model import Severity

from tests.checks.ruleset.rule_support import (
    GOOD_CPU,
    GOOD_CUDA,
    GOOD_ROCM,
    check,
    check_fixture,
    fixture_files,
    fixture_id,
    only,
    regs,
    rules_of,
    span,
)
from tests.fixtures import miles
from tests.fixtures.miles import PR_TEST_ROCM, test_file


@pytest.mark.parametrize("fixture", fixture_files("REG013"), ids=fixture_id)
def test_fixture(fixture: Path):
    """Each fixture in REG013/ beside this module gets exactly the findings its `# expect:` lines state."""
    check_fixture(fixture)


RUN_SUITE_WITH_Z = miles.RUN_SUITE.replace('"stage-b-cpu",', '"stage-b-cpu",\n        "stage-z-cpu",')


def test_reg013_unconsumed_suite():
    found = regs('register_cpu_ci(est_time=10, suite="stage-z-cpu")', **{"tests/ci/run_suite.py": RUN_SUITE_WITH_Z})
    f = only(found, "REG013")
    assert span(f) == (3, 36, 3, 49)
    assert f.severity is Severity.FAILURE  # "this test never runs": one finding, one severity
    assert f.message.startswith("this test never runs: no job runs suite `stage-z-cpu` for CPU")


def test_reg013_negative_disabled_or_consumed():
    assert "REG013" not in rules_of(regs('register_cpu_ci(est_time=10, suite="stage-z-cpu", disabled="x")', **{"tests/ci/run_suite.py": RUN_SUITE_WITH_Z}))
    assert "REG013" not in rules_of(regs(GOOD_CPU, GOOD_ROCM, GOOD_CUDA))


def test_reg013_external_consumer_from_configuration():
    cfg = "consumers:\n  - repository: o/r\n    workflow: .github/workflows/n.yml\n    suites: [stage-z-cpu]\n"
    found = regs('register_cpu_ci(est_time=10, suite="stage-z-cpu")', **{"tests/ci/run_suite.py": RUN_SUITE_WITH_Z, ".github/ci-registrar.yml": cfg})
    assert "REG013" not in rules_of(found)


def test_reg013_names_the_hw_a_consumer_runs_the_suite_with():
    """A job runs the suite, but only with `--hw cuda`: the ROCm registration has no consumer, and
    the finding says which --hw does run it."""
    wf = PR_TEST_ROCM.replace("--hw rocm", "--hw cuda")
    report = check(**{".github/workflows/pr-test-rocm.yml": wf},
                   **{"tests/e2e/test_gate.py": test_file('register_rocm_ci(est_time=60, suite="stage-c-4-gpu-mi350", labels=["amd"])')})
    f = only([f for f in report.findings if f.file == "tests/e2e/test_gate.py"], "REG013")
    assert "runs `stage-c-4-gpu-mi350` only with `--hw cuda`, which does not select ROCm registrations" in f.message
