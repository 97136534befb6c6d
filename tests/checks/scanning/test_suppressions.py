"""Inline suppressions: `# ci-registrar: ignore[CODE] reason` on a registration, after the mypy and
pyright convention; an unused one is a REG005 notice; JSON and SARIF carry what was suppressed."""

from __future__ import annotations

import json
import os
import subprocess

import jsonschema
import pytest

from checks.engine import check_tree
from checks.scanning.tree import MemoryTree
from tests.conftest import CLI
from tests.fixtures.miles import miles_tree, test_file

TYPO = 'register_rocm_ci(est_time=800, suite="nightly-stage-c-8-gpu-mi35", labels=["megatron"])'
GOOD = 'register_rocm_ci(est_time=800, suite="nightly-stage-c-8-gpu-mi350", labels=["megatron"])'
PPO = "tests/e2e/megatron/test_qwen3_4B_ppo.py"
CONFIG = {".github/ci-registrar.yml": "consumers: []\nrules:\n  REG013: off\n"}


def _report(line: str):
    return check_tree(MemoryTree(miles_tree(**CONFIG, **{PPO: test_file(line)})))


def _rules(report, path=PPO):
    return sorted(f.rule for f in report.findings if f.file == path)


def test_a_suppression_takes_the_finding_out_and_keeps_its_reason():
    assert "REG010" in _rules(_report(TYPO))
    report = _report(TYPO + "  # ci-registrar: ignore[REG010] the suite is added in the next PR")
    assert "REG010" not in _rules(report) and not report.failed
    [(finding, suppression)] = report.suppressed
    assert finding.rule == "REG010" and suppression.reason == "the suite is added in the next PR"


@pytest.mark.parametrize("comment", ["# ci-registrar: ignore[unknown-suite]", "#ci-registrar:ignore[REG010, REG020]"])
def test_names_spacing_and_lists_are_accepted(comment):
    report = _report(f"{TYPO}  {comment}")
    assert "REG010" not in _rules(report) and [f.rule for f, _ in report.suppressed] == ["REG010"]


def test_on_any_line_of_a_wrapped_registration():
    wrapped = ('register_rocm_ci(  # ci-registrar: ignore[REG010]\n    est_time=800,\n'
               '    suite="nightly-stage-c-8-gpu-mi35",\n    labels=["megatron"],\n)')
    report = _report(wrapped)
    assert "REG010" not in _rules(report) and len(report.suppressed) == 1


def test_an_unused_suppression_is_a_notice():
    report = _report(GOOD + "  # ci-registrar: ignore[REG010]")
    [notice] = [f for f in report.findings if f.rule == "REG005"]
    assert notice.severity.value == "notice" and "no REG010 finding" in notice.message and not report.failed
    unknown = _report(TYPO + "  # ci-registrar: ignore[REG999]")
    assert "REG010" in _rules(unknown) and any("`REG999` is no rule" in f.message for f in unknown.findings)


def test_a_suppression_for_another_rule_hides_nothing():
    report = _report(TYPO + "  # ci-registrar: ignore[REG020]")
    assert "REG010" in _rules(report) and report.failed
    assert any(f.rule == "REG005" and "no REG020" in f.message for f in report.findings)


def _cli(tmp_path, fmt):
    from tests.bot.commands.test_seed_pr import write

    write(tmp_path, miles_tree(**CONFIG, **{PPO: test_file(TYPO + "  # ci-registrar: ignore[REG010] known")}))
    return subprocess.run([CLI, "check", "--repo", str(tmp_path), "--format", fmt], capture_output=True, text=True,
                          env=os.environ)


def test_json_and_sarif_carry_the_suppression(tmp_path):
    done = _cli(tmp_path, "json")
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads(done.stdout)
    assert not [f for f in doc["findings"] if f["rule"] == "REG010"]
    [entry] = doc["suppressed"]
    assert entry["rule"] == "REG010" and entry["file"] == PPO
    assert entry["suppression"] == {"kind": "inSource", "line": entry["line"], "codes": ["REG010"],
                                    "justification": "known"}
    sarif = json.loads(_cli(tmp_path, "sarif").stdout)
    [result] = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "REG010"]
    assert result["suppressions"] == [{"kind": "inSource", "justification": "known"}]
    from tests.checks.reporting.test_render import _sarif_schema

    schema = _sarif_schema()
    if schema is not None:
        jsonschema.validate(sarif, schema)
    text = _cli(tmp_path, "text").stdout
    assert "REG010" not in text and "1 suppressed" in text


# -- only whole codes and names; a bare or malformed ignore explains the syntax (issue 27) --------


def _notices(report):
    return [f.message for f in report.findings if f.rule == "REG005"]


def test_a_code_prefix_suppresses_nothing_and_gets_one_notice_explaining_the_syntax():
    report = _report(TYPO + "  # ci-registrar: ignore[REG01]")
    assert "REG010" in _rules(report) and report.suppressed == []
    [notice] = _notices(report)  # one, not one "unused" per code the prefix would cover
    assert "`REG01` is a code prefix (REG010, REG011" in notice and "whole rule codes or names" in notice
    assert "`# ci-registrar: ignore[REG010]`" in notice


@pytest.mark.parametrize("comment", ["# ci-registrar: ignore", "# ci-registrar: ignore  the suite comes later",
                                     "# ci-registrar: ignore[]"])
def test_a_bare_or_empty_ignore_suppresses_nothing_and_says_how_to_write_one(comment):
    report = _report(f"{TYPO}  {comment}")
    assert "REG010" in _rules(report) and report.suppressed == []
    [notice] = _notices(report)
    assert "`# ci-registrar: ignore[REG010]` or `ignore[unknown-suite]`" in notice


def test_a_word_that_starts_with_ignore_is_no_suppression():
    report = _report(GOOD + "  # ci-registrar: ignored here once, see #812")
    assert _notices(report) == []
