"""REG011 (hardware mismatch), checks/ruleset/reg011_hardware_mismatch.py: driven by its fixtures,
REG011/ beside this module (test_rule_fixtures.py describes them), and its cases on miles-shaped
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
    check_fixture,
    fixture_files,
    fixture_id,
    only,
    regs,
    rules_of,
    span,
)


@pytest.mark.parametrize("fixture", fixture_files("REG011"), ids=fixture_id)
def test_fixture(fixture: Path):
    """Each fixture in REG011/ beside this module gets exactly the findings its `# expect:` lines state."""
    check_fixture(fixture)


def test_reg011_mi350_suite_in_cuda_registration():
    found = regs('register_cuda_ci(est_time=10, suite="stage-c-4-gpu-mi350", labels=["long"])')
    f = only(found, "REG011")
    assert span(f) == (3, 37, 3, 58)
    assert f.severity is Severity.FAILURE
    assert "mi350" in f.message


def test_reg011_h200_suite_in_rocm_registration():
    f = only(regs('register_rocm_ci(est_time=10, suite="stage-c-4-gpu-h200", labels=["long"])'), "REG011")
    assert span(f) == (3, 37, 3, 57)


def test_reg011_negative():
    assert "REG011" not in rules_of(regs(GOOD_ROCM, GOOD_CUDA, GOOD_CPU))
