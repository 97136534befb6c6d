"""Grammar in every message: counts agree with their noun, "an AMD suite", no "file(s)".

The messages of a whole check of sglang's vendored CI tree (its 37 AMD suites, REG010, REG030 in
two workflows, REG040) are read as a person reads them.
"""

from __future__ import annotations

import re
import shutil

import pytest

from checks.engine import check_tree
from checks.reporting.render import summary_line
from checks.scanning.tree import DirectoryTree
from checks.wording import article, backend_name, plural

from tests import FIXTURES, REPO

TARGETS = FIXTURES / "targets"
CONFIG = REPO / "docs" / "configs" / "sglang.yml"


# What a person should never read: "file(s)", "a AMD suite", "1 files".
_A_AN = re.compile(r"\ba (?:AMD|NPU|XPU|MLX|amd|npu|xpu|mlx|[aeiou]\w*)\b")
_ONE_MANY = re.compile(r"\b1 (?:files|test files|shards|runs|GPUs|registrations|failures|warnings|notices|suites|runners)\b")


def wording_problems(messages) -> list[str]:
    """The messages a person would stumble on (tests/bot/test_cli_messages.py reads the command line's)."""
    return [m for m in messages if "(s)" in m or _A_AN.search(m) or _ONE_MANY.search(m)]


@pytest.mark.parametrize("n, word, expected", [
    (0, "file", "0 files"), (1, "file", "1 file"), (2, "shard", "2 shards"), (1200, "run", "1,200 runs"),
    (3, "entry", "3 entries"), (1, "GPU", "1 GPU"), (8, "GPU", "8 GPUs"), (2, "shard log", "2 shard logs"),
])
def test_plural(n, word, expected):
    assert plural(n, word) == expected


@pytest.mark.parametrize("backend, expected", [
    ("amd", "an AMD suite"), ("rocm", "a ROCm suite"), ("cuda", "a CUDA suite"), ("cpu", "a CPU suite"),
    ("npu", "an NPU suite"), ("xpu", "an XPU suite"), ("mlx", "an MLX suite"), ("musa", "a MUSA suite"),
])
def test_a_backend_suite(backend, expected):
    assert article(backend_name(backend) + " suite") == expected


def test_no_message_of_a_whole_sglang_check_says_a_amd_or_file_s(tmp_path):
    repo = tmp_path / "sglang"
    shutil.copytree(TARGETS / "sglang" / "ci-382343f", repo)
    (repo / ".github" / "ci-registrar.yml").write_text(CONFIG.read_text())
    report = check_tree(DirectoryTree(repo))
    messages = [f.message for f in report.findings] + [summary_line(report)]
    assert any("is not an AMD suite" in m for m in messages)  # the REG010 the issue quoted
    assert wording_problems(messages) == []
    # one REG030 per suite, naming each workflow it overruns (there were 9 for one suite)
    suites = [re.match(r"suite `([^`]+)`", f.message).group(1) for f in report.findings if f.rule == "REG030"]
    assert suites and len(suites) == len(set(suites))
    assert any("overruns the job timeout in 2 workflows" in f.message for f in report.findings if f.rule == "REG030")
    one = [m for m in messages if re.search(r"\b1 (?:files|shards|runs|GPUs|registrations|failures|warnings)\b", m)]
    assert one == []
