"""REG900 (invalid configuration), checks/ruleset/reading/reg900_invalid_configuration.py: driven by its
fixtures, REG900/ beside this module (test_rule_fixtures.py describes them), and its cases on miles-
shaped source written here.

Spans are 1-based, end_column exclusive. Each positive case asserts the exact line and column.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.model import Severity

from tests.checks.ruleset.rule_support import (
    CFG,
    GOOD_ROCM,
    check,
    check_fixture,
    fixture_files,
    fixture_id,
    only,
    rules_of,
    span,
)
from tests.fixtures.miles import test_file


@pytest.mark.parametrize("fixture", fixture_files("REG900"), ids=fixture_id)
def test_fixture(fixture: Path):
    """Each fixture in REG900/ beside this module gets exactly the findings its `# expect:` lines state."""
    check_fixture(fixture)


def _config_findings(text: str):
    return [f for f in check(**{CFG: text}).findings if f.file == CFG]


def test_reg900_invalid_yaml_line():
    f = only(_config_findings("paths:\n  test_roots: [a\n"), "REG900")
    assert f.span.line == 3
    assert f.severity is Severity.FAILURE
    assert "not valid YAML" in f.message


def test_reg900_invalid_yaml_indentation_line():
    f = only(_config_findings("rules:\n  REG040: off\n calibration: 1\n"), "REG900")
    assert f.span.line == 3


def test_reg900_wrong_type_line_and_column():
    f = only(_config_findings("calibration:\n  hardware: MI355X\n  margin: lots\n"), "REG900")
    assert span(f) == (3, 11, 3, 15)
    assert "calibration.margin" in f.message


@pytest.mark.parametrize("value", [".nan", ".NaN", ".inf", "-.inf", "+.inf", ".Inf"])
def test_reg900_a_non_finite_budget_is_located(value):
    f = only(_config_findings(f"rules:\n  REG040: off\nbudgets:\n  max_files_per_command: 3\n"
                              f"  daily_gpu_hours: {value}\n"), "REG900")
    assert f.span.line == 5 and "budgets.daily_gpu_hours must be a finite number" in f.message


@pytest.mark.parametrize("text, line, says", [
    ("calibration:\n  margin: .nan\n", 2, "calibration.margin must be a finite number"),
    ("calibration:\n  over_slack_s: .inf\n", 2, "calibration.over_slack_s must be a finite number"),
    ("calibration:\n  max_margin: 1.0e+400\n", 2, "calibration.max_margin"),  # too large for a float: located
    ("budgets:\n  daily_gpu_hours: -0.5\n", 2, "budgets.daily_gpu_hours must be from 0 to 1e+06"),
    ("budgets:\n  daily_gpu_hours: 1000001\n", 2, "budgets.daily_gpu_hours must be from 0 to 1e+06"),
    ("budgets:\n  max_files_per_command: 0\n", 2, "budgets.max_files_per_command must be from 1 to 1000"),
    ("calibration:\n  window_days: 0\n", 2, "calibration.window_days must be from 1 to 3650"),
    ("calibration:\n  floor_days: 99999\n", 2, "calibration.floor_days must be from 1 to 3650"),
    ("calibration:\n  pull_request_every_days: 366\n", 2, "calibration.pull_request_every_days must be from 1 to 365"),
    ("calibration:\n  timeout_per_file_s: 0\n", 2, "calibration.timeout_per_file_s must be from 1"),
    ("calibration:\n  over_factor: 0.5\n", 2, "calibration.over_factor must be from 1 to 100"),
    ("consumers:\n  - repository: a/b\n    workflow: w.yml\n    suites: [s]\n    shards: 300\n", 5,
     "consumers[].shards must be from 1 to 256"),
    ("dispatch:\n  s:\n    workflow: w.yml\n    gpus: 65\n", 4, "dispatch.s.gpus must be from 1 to 64"),
])
def test_reg900_every_number_is_finite_and_in_range(text, line, says):
    f = only(_config_findings(text), "REG900")
    assert f.span.line == line and says in f.message, f.message


@pytest.mark.parametrize("text", ["budgets:\n  daily_gpu_hours: 0\n", "budgets:\n  daily_gpu_hours: 1000000\n",
                                  "calibration:\n  margin: 10\n  window_days: 3650\n  floor_days: 3650\n",
                                  "calibration:\n  over_slack_s: 0\n"])
def test_reg900_numbers_at_the_ends_of_their_ranges_are_valid(text):
    assert _config_findings(text) == []


def test_reg900_unknown_field_points_at_the_key():
    f = only(_config_findings("paths:\n  register_module: x.py\n  bogus: 1\n"), "REG900")
    assert span(f) == (3, 3, 3, 8)
    assert "bogus" in f.message


def test_reg900_unknown_rule_code_line():
    f = only(_config_findings("rules:\n  REG040: off\n  REG999: warning\n"), "REG900")
    assert f.span.line == 3
    assert "REG999" in f.message


def test_reg900_bad_severity_value_line():
    f = only(_config_findings("rules:\n  REG040: loud\n"), "REG900")
    assert f.span.line == 2


def test_reg900_bad_severity_value_on_a_later_line():
    f = only(_config_findings("rules:\n  REG040: off\n  REG030: loud\n"), "REG900")
    assert f.span.line == 3, f"points at line {f.span.line}: {f.message}"


def test_reg900_invalid_config_fails_the_check_and_is_not_silently_defaults():
    report = check(**{CFG: "budgets: [1, 2]\n"})
    assert report.failed
    assert only(report.findings, "REG900").span.line == 1


def test_reg900_negative_valid_config():
    assert _config_findings("rules:\n  REG040: off\ncalibration:\n  margin: 1.2\n") == []


def test_rules_off_turns_a_rule_off():
    src = {"tests/e2e/test_foo_2xGPU.py": test_file(GOOD_ROCM)}
    assert "REG040" in rules_of(check(**src).findings)
    assert "REG040" not in rules_of(check(**src, **{CFG: "rules:\n  REG040: off\n"}).findings)


def test_rules_severity_override():
    src = {"tests/e2e/test_foo_2xGPU.py": test_file(GOOD_ROCM)}
    report = check(**src, **{CFG: "rules:\n  REG040: failure\n"})
    assert only(report.findings, "REG040").severity is Severity.FAILURE
    assert report.failed
    report = check(**{"tests/e2e/test_none.py": "x = 1\n", CFG: "rules:\n  REG004: notice\n"})
    assert only(report.findings, "REG004").severity is Severity.NOTICE
    assert not report.failed
