"""REG050 (registration removed), checks/ruleset/reg050_registration_removed.py: driven by its
fixtures, REG050/ beside this module (test_rule_fixtures.py describes them), and its cases on miles-
shaped source written here.

Spans are 1-based, end_column exclusive. Each positive case asserts the exact line and column.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.engine import check_tree
from checks.scanning.tree import MemoryTree

from tests.checks.ruleset.rule_support import check_fixture, fixture_files, fixture_id, only, span
from tests.fixtures.miles import miles_tree, test_file


@pytest.mark.parametrize("fixture", fixture_files("REG050"), ids=fixture_id)
def test_fixture(fixture: Path):
    """Each fixture in REG050/ beside this module gets exactly the findings its `# expect:` lines state."""
    check_fixture(fixture)


PPO = "tests/e2e/megatron/test_qwen3_4B_ppo.py"


def test_reg050_registration_removed_and_file_deleted():
    head = miles_tree(**{PPO: test_file('register_cuda_ci(est_time=700, suite="stage-c-8-gpu-h200", labels=["megatron"])')})
    report = check_tree(MemoryTree(head), MemoryTree(miles_tree()), {PPO: PPO})
    f = only(report.findings, "REG050")
    assert f.file == PPO and "rocm" in f.message
    head = miles_tree()
    del head[PPO]
    report = check_tree(MemoryTree(head), MemoryTree(miles_tree()), {PPO: PPO})
    assert sorted(span(f)[:2] for f in report.findings if f.rule == "REG050") == [(3, 1), (4, 1)]
