"""REG902 (analysis limit reached), checks/ruleset/reading/reg902_analysis_limit_reached.py: driven by its
fixtures, REG902/ beside this module (test_rule_fixtures.py describes them).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.checks.ruleset.rule_support import check_fixture, fixture_files, fixture_id


@pytest.mark.parametrize("fixture", fixture_files("REG902"), ids=fixture_id)
def test_fixture(fixture: Path):
    """Each fixture in REG902/ beside this module gets exactly the findings its `# expect:` lines state."""
    check_fixture(fixture)
