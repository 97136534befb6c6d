"""What the rules' tests share: the runner of the rules' fixture files (test_rule_fixtures.py
describes their format), and the miles-shaped tree checked with a file replaced."""

from __future__ import annotations

import json
import re
from pathlib import Path

from checks.engine import check_tree
from checks.limits import Limits
from checks.rules import RULES
from checks.scanning.tree import MemoryTree

from tests import REPO, TESTS
from tests.fixtures import miles
from tests.fixtures.miles import CONSUMERS, miles_tree, test_file


DEFAULT_PATH = "tests/e2e/test_case.py"
_DIRECTIVE = re.compile(r"^\s*# (path|expect|patch|drop|base|durations|limits|consumers): ?(.*)$")


def rule_home(code: str) -> Path:
    """The folder of a rule's tests and fixtures: tests/ mirrors the package of its module
    (checks/ruleset/reg010_unknown_suite.py: tests/checks/ruleset/, fixtures in REG010/)."""
    (module,) = (REPO / "checks").rglob(f"{code.lower()}_*.py")
    return TESTS / module.parent.relative_to(REPO)


def fixture_files(code: str) -> list[Path]:
    """The fixtures of one rule: <its home>/<CODE>/*.py and *.yml; `*.base.*` files are base sides."""
    return sorted(p for p in (rule_home(code) / code).glob("*") if p.suffix in (".py", ".yml") and ".base." not in p.name)


def fixture_id(fixture: Path) -> str:
    return f"{fixture.parent.name}/{fixture.name}"


def directives(text: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2).strip()) for line in text.split("\n") if (m := _DIRECTIVE.match(line))]


def parse_expect(value: str, default_path: str):
    head, *extras = [part.strip() for part in value.split(" | ")]
    fields = head.split()
    code = fields.pop(0)
    path = default_path
    if fields and fields[0].startswith("@"):
        path = fields.pop(0)[1:]
    line, col = (int(x) for x in fields[0].split(":"))
    severity = fields[1]
    checks = {}
    for extra in extras:
        key, _, val = extra.partition(": ")
        checks[key] = val
    return (code, path, line, col, severity), checks


def run_fixture(fixture: Path):
    text = fixture.read_text()
    d = directives(text)
    path = next((v for k, v in d if k == "path"), DEFAULT_PATH)
    files = miles_tree()
    for key, value in d:
        if key == "patch":
            patch = json.loads(value)
            if patch["old"] == "":  # a file the tree has not got: made with `new`
                assert patch["path"] not in files, f"{fixture.name}: {patch['path']} exists: give the text to replace"
                files[patch["path"]] = patch["new"]
                continue
            assert patch["old"] in files[patch["path"]], f"{fixture.name}: patch text not found in {patch['path']}"
            files[patch["path"]] = files[patch["path"]].replace(patch["old"], patch["new"])
        elif key == "drop":
            del files[value]
    kwargs = {"consumers_from": {} if ("consumers", "none") in d else CONSUMERS}
    durations = next((v for k, v in d if k == "durations"), None)
    if durations is not None:
        kwargs["durations"] = json.loads(durations)
    limits = next((v for k, v in d if k == "limits"), None)
    if limits is not None:
        kwargs["limits"] = Limits(**json.loads(limits))
    base = next((v for k, v in d if k == "base"), None)
    head_files = {**files, path: text}
    if base is None:
        return path, d, check_tree(MemoryTree(head_files), **kwargs)
    base_files = dict(files)
    if base == "absent":
        base_files.pop(path, None)
    else:
        base_files[path] = (fixture.parent / base).read_text()
    return path, d, check_tree(MemoryTree(head_files), MemoryTree(base_files), {path: path if base != "absent" else None}, **kwargs)


def check_fixture(fixture: Path) -> None:
    """The check on the fixture reports exactly what its `# expect:` lines state."""
    code = fixture.parent.name
    assert code in RULES, f"fixture directory {code} names no rule"
    path, d, report = run_fixture(fixture)
    expects = [v for k, v in d if k == "expect"]
    assert expects, f"{fixture}: no `# expect:` line"
    expected = {}
    for value in expects:
        if value == "none":
            continue
        key, checks = parse_expect(value, path)
        assert key not in expected, f"{fixture.name}: {key} expected twice"
        expected[key] = checks
    codes = {code} | {k[0] for k in expected}
    files = {path} | {k[1] for k in expected}  # the fixture's own file, and any file an expect names
    actual = {(f.rule, f.file, f.span.line, f.span.column, f.severity.value): f for f in report.findings if f.rule in codes and f.file in files}
    shown = sorted(f"{k[0]} @{k[1]} {k[2]}:{k[3]} {k[4]} | {f.message}" for k, f in actual.items())
    assert set(actual) == set(expected), f"{fixture.name}: got\n" + "\n".join(shown)
    for key, checks in expected.items():
        finding = actual[key]
        if "msg" in checks:
            assert checks["msg"] in finding.message, f"{fixture.name}: {finding.message!r}"
        if "suggestion" in checks:
            want = None if checks["suggestion"] == "none" else checks["suggestion"]
            assert finding.suggestion == want, f"{fixture.name}: suggestion {finding.suggestion!r}"
        if "fix" in checks:
            assert (finding.fix is not None) == (checks["fix"] == "yes"), f"{fixture.name}: fix {finding.fix!r}"


P = "tests/e2e/test_x.py"
GOOD_ROCM = 'register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi350", labels=["long"])'
GOOD_CUDA = 'register_cuda_ci(est_time=10, suite="stage-c-4-gpu-h200", labels=["long"])'
GOOD_CPU = 'register_cpu_ci(est_time=10, suite="stage-a-cpu")'
HEADER = "from tests.ci.ci_register import register_cpu_ci, register_cuda_ci, register_rocm_ci\n\n"


def check(files: dict | None = None, **extra):
    """Whole-tree check, with the built-in external consumer (sglang's MI350 nightly) given."""
    files = dict(files if files is not None else miles_tree())
    files.update(extra)
    return check_tree(MemoryTree(files), consumers_from=miles.CONSUMERS)


def at(path: str, source: str | bytes, **extra):
    """Check the miles tree with `path` holding `source`; the findings in that file."""
    report = check(**{path: source}, **extra)
    return [f for f in report.findings if f.file == path]


def regs(*lines: str, path: str = P, **extra):
    return at(path, test_file(*lines), **extra)


def span(f):
    return (f.span.line, f.span.column, f.span.end_line, f.span.end_column)


def only(findings, rule: str, contains: str = ""):
    hits = [f for f in findings if f.rule == rule and contains in f.message]
    assert len(hits) == 1, f"expected one {rule} containing {contains!r}, got {[(f.rule, span(f), f.message) for f in findings]}"
    return hits[0]


def rules_of(findings) -> set[str]:
    return {f.rule for f in findings}


def clean(report) -> list:
    return [f for f in report.findings if f.rule != "REG015"]


CFG = ".github/ci-registrar.yml"
FSDP = "tests/e2e/fsdp/test_qwen3_0.6B_fsdp_distributed.py"
