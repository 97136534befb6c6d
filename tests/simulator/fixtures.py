"""pytest fixtures for the GitHub simulator; import them from a conftest.py."""

from __future__ import annotations

import pytest

from .core import GitHubSimulator


@pytest.fixture()
def github_sim():
    """A started simulator; the test fails if any request or response broke GitHub's description."""
    sim = GitHubSimulator()
    sim.start()
    try:
        yield sim
    finally:
        sim.stop()
    assert sim.violations == [], "GitHub simulator violations:\n" + "\n".join(sim.violations)
