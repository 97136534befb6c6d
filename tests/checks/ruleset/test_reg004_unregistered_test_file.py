"""REG004 (unregistered test file), checks/ruleset/reg004_unregistered_test_file.py: driven by its
fixtures, REG004/ beside this module (test_rule_fixtures.py describes them), and its cases on miles-
shaped source written here.

Spans are 1-based, end_column exclusive. Each positive case asserts the exact line and column.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.model import Severity

from tests.checks.ruleset.rule_support import (
    GOOD_CPU,
    at,
    check,
    check_fixture,
    fixture_files,
    fixture_id,
    only,
    regs,
    rules_of,
    span,
)


@pytest.mark.parametrize("fixture", fixture_files("REG004"), ids=fixture_id)
def test_fixture(fixture: Path):
    """Each fixture in REG004/ beside this module gets exactly the findings its `# expect:` lines state."""
    check_fixture(fixture)


def test_reg004_unregistered_test_file():
    f = only(at("tests/e2e/test_none.py", "def test_a():\n    pass\n"), "REG004")
    assert span(f) == (1, 1, 1, 1)
    assert f.severity is Severity.FAILURE
    assert "tests/e2e" in f.message


@pytest.mark.parametrize("root", ["tests/fast-gpu", "tests/ci", "tests/e2e/deeper/dir"])
def test_reg004_other_discovery_roots(root):
    assert rules_of(at(f"{root}/test_none.py", "x = 1\n")) == {"REG004"}


def test_reg004_implicit_cpu_root_is_exempt():
    report = check(**{"tests/fast/sub/test_none.py": "def test_a():\n    pass\n"})
    assert [f for f in report.findings if f.file == "tests/fast/sub/test_none.py"] == []


@pytest.mark.parametrize("path", ["tests/e2e/helper.py", "tests/e2e/conftest.py", "tests/e2e/test_data.txt", "tests/other/test_z.py", "test_top.py", "tests/e2e_old/test_q.py"])
def test_reg004_non_discovered_names(path):
    report = check(**{path: "def test_a():\n    pass\n"})
    assert [f for f in report.findings if f.file == path] == []
    assert report.files_checked == 3  # the miles fixture's discovered files only


def test_reg004_negative_registered_file():
    assert "REG004" not in rules_of(regs(GOOD_CPU))
