"""REG901 (unreadable contract), checks/ruleset/reading/reg901_unreadable_contract.py: driven by its fixtures,
REG901/ beside this module (test_rule_fixtures.py describes them), and its cases on miles-shaped
source written here.

Spans are 1-based, end_column exclusive. Each positive case asserts the exact line and column.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.model import Severity

from tests.checks.ruleset.rule_support import (
    CFG,
    P,
    check,
    check_fixture,
    clean,
    fixture_files,
    fixture_id,
    only,
    regs,
    rules_of,
    span,
)
from tests.fixtures.miles import miles_tree, test_file


@pytest.mark.parametrize("fixture", fixture_files("REG901"), ids=fixture_id)
def test_fixture(fixture: Path):
    """Each fixture in REG901/ beside this module gets exactly the findings its `# expect:` lines state."""
    check_fixture(fixture)


INVENTORY_EXPRESSIONS = '''\
from tests.ci.ci_register import HWBackend

ROCM = ["stage-c-4-gpu-mi350"]
NIGHTLY = ["nightly-stage-c-8-gpu-mi350", "nightly-stage-c-4-gpu-mi350"]
MORE = ("nightly-stage-c-2-gpu-mi350",)
CPU_BASE = ["stage-a-cpu"]
CUDA_A = ["stage-b-2-gpu-h200", "stage-c-8-gpu-h100"]
CUDA_B = ["stage-c-8-gpu-h200", "stage-c-4-gpu-h200", "stage-c-2-gpu-h200"]
CI_SUITES = {
    HWBackend.CPU: list(CPU_BASE) + ["stage-b-cpu"],
    HWBackend.CUDA: CUDA_A + CUDA_B,
    HWBackend.ROCM: [*ROCM, *NIGHTLY, *MORE],
}
'''


def test_reg901_inventory_expressions_resolve():
    report = check(**{"tests/ci/run_suite.py": INVENTORY_EXPRESSIONS})
    assert clean(report) == []
    # and the resolved names are really used: a typo is still caught
    found = regs('register_rocm_ci(est_time=10, suite="nightly-stage-c-2-gpu-mi35", labels=["long"])', **{"tests/ci/run_suite.py": INVENTORY_EXPRESSIONS})
    assert only(found, "REG010").suggestion == '"nightly-stage-c-2-gpu-mi350"'


def test_reg901_unresolvable_entry_does_not_fail_every_registration():
    inventory = INVENTORY_EXPRESSIONS.replace("[*ROCM, *NIGHTLY, *MORE]", "[*ROCM, *NIGHTLY, extra_suites()]")
    report = check(**{"tests/ci/run_suite.py": inventory, P: test_file('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi35", labels=["long"])')})
    f = only(report.findings, "REG901")
    assert f.file == "tests/ci/run_suite.py"
    assert span(f) == (12, 39, 12, 53)
    assert f.severity is Severity.WARNING
    assert "REG010" not in rules_of(report.findings)  # rocm names are not judged from a partial list
    assert "REG014" not in rules_of(report.findings)
    # the readable backends are still checked
    report = check(**{"tests/ci/run_suite.py": inventory, P: test_file('register_cuda_ci(est_time=10, suite="stage-c-4-gpu-h20", labels=["long"])')})
    assert only(report.findings, "REG010").file == P


def test_reg901_unbound_name():
    inventory = INVENTORY_EXPRESSIONS.replace('CPU_BASE = ["stage-a-cpu"]\n', "")
    report = check(**{"tests/ci/run_suite.py": inventory})
    f = only(report.findings, "REG901")
    assert span(f) == (9, 25, 9, 33)
    assert "CPU_BASE" in f.message


def test_reg901_inventory_not_a_dict():
    f = only(check(**{"tests/ci/run_suite.py": "CI_SUITES = build()\n"}).findings, "REG901")
    assert span(f) == (1, 13, 1, 20)
    report = check(**{"tests/ci/run_suite.py": "CI_SUITES = build()\n", P: test_file('register_rocm_ci(est_time=10, suite="anything", labels=["long"])')})
    assert "REG010" not in rules_of(report.findings)


def test_reg901_missing_inventory():
    files = miles_tree()
    del files["tests/ci/run_suite.py"]
    f = only(check(files).findings, "REG901")
    assert f.file == "tests/ci/run_suite.py" and f.span.line == 1


PER_COMMIT_AND_NIGHTLY = '''\
from tests.ci.ci_register import HWBackend

PER_COMMIT_SUITES = {
    HWBackend.CPU: ["stage-a-cpu", "stage-b-cpu"],
    HWBackend.CUDA: ["stage-b-2-gpu-h200", "stage-c-8-gpu-h100", "stage-c-8-gpu-h200", "stage-c-4-gpu-h200", "stage-c-2-gpu-h200"],
    HWBackend.ROCM: ["stage-c-4-gpu-mi350"],
}
NIGHTLY_SUITES = {
    HWBackend.ROCM: ["nightly-stage-c-8-gpu-mi350", "nightly-stage-c-4-gpu-mi350", "nightly-stage-c-2-gpu-mi350"],
}
'''


def test_reg901_per_commit_and_nightly_suites_via_config():
    cfg = "paths:\n  suites_variables: [PER_COMMIT_SUITES, NIGHTLY_SUITES]\n"
    report = check(**{"tests/ci/run_suite.py": PER_COMMIT_AND_NIGHTLY, CFG: cfg})
    assert clean(report) == []
    report = check(**{"tests/ci/run_suite.py": PER_COMMIT_AND_NIGHTLY, CFG: cfg, P: test_file('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi35", labels=["long"])')})
    assert only(report.findings, "REG010").suggestion == '"nightly-stage-c-4-gpu-mi350"'


def test_per_commit_layout_without_config_is_read_from_the_module():
    """The default names CI_SUITES; a module that binds none reads as the dicts it keys by HWBackend."""
    report = check(**{"tests/ci/run_suite.py": PER_COMMIT_AND_NIGHTLY})
    assert clean(report) == []
    report = check(**{"tests/ci/run_suite.py": PER_COMMIT_AND_NIGHTLY, P: test_file('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi35", labels=["long"])')})
    assert only(report.findings, "REG010").suggestion == '"nightly-stage-c-4-gpu-mi350"'


def test_reg901_a_configured_variable_the_module_lacks():
    report = check(**{"tests/ci/run_suite.py": PER_COMMIT_AND_NIGHTLY, CFG: "paths:\n  suites_variables: [SUITES]\n"})
    f = only(report.findings, "REG901")
    assert "SUITES" in f.message
    assert "REG010" not in rules_of(report.findings) and "REG014" not in rules_of(report.findings)


def test_reg901_labels_unreadable_skips_label_checks():
    report = check(**{"tests/ci/labels.py": "KNOWN_LABELS = load()\n", P: test_file('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi350", labels=["whatever"])')})
    f = only(report.findings, "REG901")
    assert f.file == "tests/ci/labels.py" and span(f) == (1, 16, 1, 22)
    assert "REG002" not in rules_of(report.findings)
