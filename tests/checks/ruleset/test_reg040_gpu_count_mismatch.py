"""REG040 (gpu count mismatch), checks/ruleset/reg040_gpu_count_mismatch.py: driven by its fixtures,
REG040/ beside this module (test_rule_fixtures.py describes them), and its cases on miles-shaped
source written here.

Spans are 1-based, end_column exclusive. Each positive case asserts the exact line and column.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.model import Severity

from tests.checks.ruleset.rule_support import (
    GOOD_CPU,
    GOOD_ROCM,
    P,
    at,
    check_fixture,
    fixture_files,
    fixture_id,
    only,
    regs,
    rules_of,
    span,
)
from tests.fixtures.miles import test_file


@pytest.mark.parametrize("fixture", fixture_files("REG040"), ids=fixture_id)
def test_fixture(fixture: Path):
    """Each fixture in REG040/ beside this module gets exactly the findings its `# expect:` lines state."""
    check_fixture(fixture)


def test_reg040_file_name_2xgpu_vs_4_gpu_suite():
    f = only(regs(GOOD_ROCM, path="tests/e2e/test_foo_2xGPU.py"), "REG040")
    assert span(f) == (3, 37, 3, 66)
    assert f.severity is Severity.WARNING
    assert "2" in f.message and "file name" in f.message


def test_reg040_num_gpus_constant():
    f = only(at(P, test_file(GOOD_ROCM, body="NUM_GPUS = 8\n")), "REG040")
    assert span(f) == (3, 37, 3, 66)
    assert "NUM_GPUS" in f.message and "8" in f.message


def test_reg040_num_gpus_in_a_docstring_is_not_the_constant():
    source = '"""How to run:\nNUM_GPUS = 8\n"""\n' + test_file(GOOD_ROCM).split("\n", 1)[1]
    assert "REG040" not in rules_of(at(P, source)), "a NUM_GPUS line inside a string is not a module-level constant"


def test_reg040_negative():
    assert "REG040" not in rules_of(regs(GOOD_ROCM, path="tests/e2e/test_foo_4xGPU.py"))
    assert "REG040" not in rules_of(at(P, test_file(GOOD_ROCM, body="NUM_GPUS = 4\n")))
    assert "REG040" not in rules_of(regs(GOOD_CPU, path="tests/e2e/test_foo_2xGPU.py"))
