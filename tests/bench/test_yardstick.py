"""The timing yardstick (bench/target_collector.py) collects what the engine reports.

bench/first_run.py divides the engine's time by the time of each target's own collection code,
run as is. A ratio means something only if both do the same job, so on vendored excerpts of both
targets (tests/fixtures/targets, Apache-2.0) the yardstick's count of registrations must equal
the engine's JSON count, implicit registrations included.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli import main
from tests import REPO
from tests.fixtures.sglang import SGLANG_CONFIG

ROOT = REPO
sys.path.insert(0, str(ROOT))
from bench import target_collector  # noqa: E402

TARGETS = ROOT / "tests" / "fixtures" / "targets"


def engine_count(tree: Path) -> int:
    result = CliRunner().invoke(main, ["check", "--format", "json", "--no-cache", "--repo", str(tree)])
    assert result.exit_code in (0, 1), result.output
    return len(json.loads(result.output)["registrations"])


def test_miles_own_collector_and_the_engine_count_the_same(tmp_path):
    tree = tmp_path / "miles"
    shutil.copytree(TARGETS / "miles" / "ci-31f1ca9", tree)
    collected = target_collector.count("miles", str(tree))
    assert collected > 0
    assert engine_count(tree) == collected


# revisions whose runner discovers files as the newest one does (the glob of test/registered); the
# yardstick is that code, so older eras (2025: other roots) are the agreement sweep's business
@pytest.mark.parametrize("revision", ["r2026-03-07-0f62da6", "r2026-07-01-13dc5f2"])
def test_sglang_own_collector_and_the_engine_count_the_same(tmp_path, revision):
    tree = tmp_path / "sglang"
    shutil.copytree(TARGETS / "sglang" / revision, tree)
    (tree / ".github").mkdir(exist_ok=True)
    (tree / ".github" / "ci-registrar.yml").write_text(SGLANG_CONFIG)
    collected = target_collector.count("sglang", str(tree))
    assert collected > 0
    assert engine_count(tree) == collected
