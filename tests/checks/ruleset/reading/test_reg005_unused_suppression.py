"""REG005 (unused suppression), checks/ruleset/reading/reg005_unused_suppression.py: driven by its fixtures,
REG005/ beside this module (test_rule_fixtures.py describes them).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.checks.ruleset.rule_support import check_fixture, fixture_files, fixture_id


@pytest.mark.parametrize("fixture", fixture_files("REG005"), ids=fixture_id)
def test_fixture(fixture: Path):
    """Each fixture in REG005/ beside this module gets exactly the findings its `# expect:` lines state."""
    check_fixture(fixture)
