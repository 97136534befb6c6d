"""The calibration pull request's test data, shared by its fast tests (test_calibration_pr_units.py)
and its tests on the GitHub simulator (test_calibration_pr.py and the files that import it): sglang's
MI35x suite as it timed out (tests/fixtures/targets/sglang/r2026-07-01-13dc5f2), a configuration that
turns the calibration pull requests on, and that suite's stored runs."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from tests import TESTS

MI35X = TESTS / "fixtures" / "targets" / "sglang" / "r2026-07-01-13dc5f2"
CONFIG = (TESTS.parent / "docs" / "configs" / "sglang.yml").read_text() + "calibration:\n  pull_requests: true\n"
NOW = datetime(2026, 7, 1, tzinfo=timezone.utc)
KIMI = "test/registered/amd/test_kimi_k25_mxfp4.py"
QWEN = "test/registered/amd/test_qwen3_coder_next_8gpu.py"
REPO = "sgl-project/sglang"


def _files() -> dict[str, bytes]:
    files = {str(p.relative_to(MI35X)): p.read_bytes() for p in MI35X.rglob("*") if p.is_file() and p.name != "durations.json"}
    files[".github/ci-registrar.yml"] = CONFIG.encode()
    return files


def records(**slower: float) -> list[dict]:
    """The fixture's durations; slower[file] adds seconds to every run of that file."""
    rows = json.loads((MI35X / "durations.json").read_text())
    for r in rows:
        for key, extra in slower.items():
            if r["file"].endswith(key):
                r["elapsed_s"] += extra
    return rows
