"""Every process a test starts ends with it, pass or fail (tests/processes.py, tests/conftest.py):
an inner pytest session whose tests leave processes behind in every way they can."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.patience import PATIENCE

ROOT = Path(__file__).resolve().parent.parent

LEAKY = '''
import subprocess, sys
import pytest
from tests import processes

def sleeper(*extra):
    return [sys.executable, "-c", "import time; time.sleep(600)", "{mark}", *extra]

@pytest.fixture(scope="module")
def leaky():
    yield processes.start(sleeper("bot.cli"))  # a fixture that never stops its process

def test_a_body_that_fails_before_its_clean_up():
    processes.start(sleeper("from-the-body"))
    raise AssertionError("failed before its clean-up")

def test_a_fixture_that_forgets(leaky):
    assert leaky.poll() is None

def test_a_process_started_another_way():
    subprocess.Popen(sleeper("ci-registrar"))
'''


def _alive(mark: str) -> list[str]:
    out = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if mark.encode() in cmdline:
            out.append(entry.name)
    return out


def test_no_process_outlives_its_test_or_the_session(tmp_path):
    mark = f"leak-probe-{os.getpid()}-{tmp_path.name}"
    (tmp_path / "conftest.py").write_text("from tests.conftest import *  # noqa: F401,F403\n"
                                          "from tests.conftest import pytest_runtest_call, _no_process_outlives_the_session  # noqa: F401\n")
    (tmp_path / "test_leaky.py").write_text(LEAKY.replace("{mark}", mark))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                          "-o", "addopts=", str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=PATIENCE)
    assert _alive(mark) == [], run.stdout  # all ended, the session's own pytest included
    assert run.returncode == 1, run.stdout
    assert "1 failed, 2 passed, 1 error" in run.stdout, run.stdout
    assert "processes left running at the end of the session" in run.stdout
    # the report's lines (pytest prefixes them with E), one per process left
    left = "\n".join(line for line in run.stdout.splitlines() if line.startswith("E ") and mark in line)
    assert "bot.cli" in left and "ci-registrar" in left and "not started through tests/processes.py" in left
    assert "from-the-body" not in left  # stopped as its test ended, not at the end of the session
