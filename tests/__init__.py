"""The tests, in folders that mirror the code's (tests/README.md)."""

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent  # the repository's root
TESTS = REPO / "tests"
FIXTURES = TESTS / "fixtures"  # vendored trees of the targets, miles-shaped sources, attacks
