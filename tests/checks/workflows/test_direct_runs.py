"""Files a workflow runs itself, read as CI runs them (checks/workflows._direct_runs): `python
file.py`, and pytest on files, directories and globs, `python -m pytest` too, over `\\` lines."""

from __future__ import annotations

import pytest

from checks.workflows.runs import _direct_runs, direct_run_of

COVERAGE = """\
jobs:
  unit:
    steps:
      - run: |
          pytest test/registered/unit/ \\
            --cov --cov-config=.coveragerc \\
            -k "not slow" \\
            -v | tee coverage_output.txt
"""


def runs(text: str, runner_dir: str = "test") -> dict[str, str]:
    out: dict[str, str] = {}
    _direct_runs("ci.yml", text, runner_dir, out)
    return out


def test_pytest_on_a_directory_runs_the_test_files_below_it():
    found = runs(COVERAGE)
    assert direct_run_of(found, "test/registered/unit/constrained/test_grammar.py") == "ci.yml:5"
    assert direct_run_of(found, "test/registered/unit/helpers.py") is None  # pytest collects test_*.py only
    assert direct_run_of(found, "test/registered/other/test_x.py") is None
    assert "not" not in found and '"not' not in found  # -k's value is no path
    assert "tee" not in found and "coverage_output.txt/" not in found  # the pipe ends pytest's arguments


@pytest.mark.parametrize("line, file, expected", [
    ("python -m pytest test/a/test_one.py::test_x -x", "test/a/test_one.py", True),
    ("python3 -m pytest -q test/a/", "test/a/b/test_two.py", True),
    ("pytest 'test/a/test_*.py'", "test/a/test_three.py", True),
    ("pytest test/a/test_*.py", "test/b/test_three.py", False),
    ("pytest --ignore test/a test/b", "test/a/test_one.py", False),
    ("echo pytest-xdist", "test/a/test_one.py", False),
    ("python3 registered/test_x.py", "test/registered/test_x.py", True),  # from the runner's directory
])
def test_each_way_ci_starts_a_test(line, file, expected):
    assert (direct_run_of(runs(f"    steps:\n      - run: {line}\n"), file) is not None) is expected
