"""REG017 (external consumer unread), checks/ruleset/reading/reg017_external_consumer_unread.py: driven by its
fixtures, REG017/ beside this module (test_rule_fixtures.py describes them).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.checks.ruleset.rule_support import check_fixture, fixture_files, fixture_id


@pytest.mark.parametrize("fixture", fixture_files("REG017"), ids=fixture_id)
def test_fixture(fixture: Path):
    """Each fixture in REG017/ beside this module gets exactly the findings its `# expect:` lines state."""
    check_fixture(fixture)
