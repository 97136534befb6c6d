"""REG016 (nightly never selected), checks/ruleset/reg016_nightly_never_selected.py: driven by its
fixtures, REG016/ beside this module (test_rule_fixtures.py describes them).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.checks.ruleset.rule_support import check_fixture, fixture_files, fixture_id


@pytest.mark.parametrize("fixture", fixture_files("REG016"), ids=fixture_id)
def test_fixture(fixture: Path):
    """Each fixture in REG016/ beside this module gets exactly the findings its `# expect:` lines state."""
    check_fixture(fixture)
