"""REG012 (nightly namespace move), checks/ruleset/reg012_nightly_namespace_move.py: driven by its
fixtures, REG012/ beside this module (test_rule_fixtures.py describes them), and its cases on miles-
shaped source written here.

Spans are 1-based, end_column exclusive. Each positive case asserts the exact line and column.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.engine import check_tree
from checks.model import Severity
from checks.scanning.tree import MemoryTree

from tests.checks.ruleset.rule_support import FSDP, check_fixture, fixture_files, fixture_id, only, span
from tests.fixtures import miles
from tests.fixtures.miles import miles_tree, test_file


@pytest.mark.parametrize("fixture", fixture_files("REG012"), ids=fixture_id)
def test_fixture(fixture: Path):
    """Each fixture in REG012/ beside this module gets exactly the findings its `# expect:` lines state."""
    check_fixture(fixture)


def test_reg012_move_out_of_the_nightly_namespace():
    head = miles_tree(**{FSDP: test_file(
        'register_cuda_ci(est_time=2200, suite="stage-c-4-gpu-h200", labels=["long"])',
        'register_rocm_ci(est_time=2400, suite="stage-c-4-gpu-mi350", labels=["long"])',
    )})
    report = check_tree(MemoryTree(head), MemoryTree(miles_tree()), {FSDP: FSDP}, consumers_from=miles.CONSUMERS)
    f = only(report.findings, "REG012")
    assert (f.file, span(f)) == (FSDP, (4, 39, 4, 60))
    assert f.severity is Severity.NOTICE
    assert "sgl-project/sglang" in f.message and "pr-test-rocm.yml" in f.message
