"""REG014 (stale consumer), checks/ruleset/reg014_stale_consumer.py: driven by its fixtures, REG014/
beside this module (test_rule_fixtures.py describes them), and its cases on miles-shaped source
written here.

Spans are 1-based, end_column exclusive. Each positive case asserts the exact line and column.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.model import Severity

from tests.checks.ruleset.rule_support import (
    check,
    check_fixture,
    fixture_files,
    fixture_id,
    only,
    rules_of,
    span,
)
from tests.fixtures import miles


@pytest.mark.parametrize("fixture", fixture_files("REG014"), ids=fixture_id)
def test_fixture(fixture: Path):
    """Each fixture in REG014/ beside this module gets exactly the findings its `# expect:` lines state."""
    check_fixture(fixture)


def test_reg014_stale_consumer():
    report = check(**{".github/workflows/pr-test.yml": miles.PR_TEST.replace("--suite stage-b-cpu", "--suite stage-b-cpux")})
    f = only(report.findings, "REG014")
    assert f.file == ".github/workflows/pr-test.yml"
    assert span(f) == (9, 61, 9, 73)
    assert f.severity is Severity.WARNING
    assert f.suggestion == "stage-b-cpu"


def test_reg014_stale_matrix_value():
    report = check(**{".github/workflows/pr-test.yml": miles.PR_TEST.replace("stage-c-8-gpu-h100, ", "stage-c-8-gpu-h1000, ")})
    f = only(report.findings, "REG014")
    assert span(f) == (14, 37, 14, 56)


def test_reg014_negative():
    assert "REG014" not in rules_of(check().findings)


def test_reg014_points_at_the_step_not_at_an_earlier_comment():
    wf = "# stage-b-cpux was renamed\n" + miles.PR_TEST.replace("--suite stage-b-cpu", "--suite stage-b-cpux")
    f = only(check(**{".github/workflows/pr-test.yml": wf}).findings, "REG014")
    assert span(f) == (10, 61, 10, 73), f"points at {span(f)}, the comment on line 1"
