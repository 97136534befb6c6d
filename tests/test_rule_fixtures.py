"""Each rule against its fixture files: tests/fixtures/rules/<CODE>/*.py (and *.yml).

A fixture is one file of a miles-shaped repository (tests/fixtures/miles.py) and states, in
comment lines anywhere in it, where it goes and what the check must report:

    # path: tests/e2e/test_x.py            where the file goes (default tests/e2e/test_case.py)
    # expect: REG010 6:37 failure | msg: did you mean `x`? | suggestion: "x" | fix: yes
    # expect: REG030 @tests/ci/run_suite.py 17:9 warning     (a finding in another file)
    # expect: none                          (no finding of the fixture's rule)
    # patch: {"path": "tests/ci/run_suite.py", "old": "...", "new": "..."}   (edit a repository file;
                                             "old": "" makes a file the tree lacks)
    # drop: .github/workflows/pr-test.yml   (remove a repository file)
    # base: other.base.py                   (diff mode: the base holds that sibling at `path`;
                                             `# base: absent` for a file the diff adds)
    # durations: [{"file": ..., "n": 7, ...}]   (rows of `durations show --format json`)
    # limits: {"ast_nodes": 200}            (checks/limits.py caps)
    # consumers: none                       (no copy of the external consumers' workflows; by
                                             default sglang's MI350 nightly is given, as the App reads it)

Every finding of the fixture's rule (and of any rule an `expect:` names) in the fixture's file (and
in any file an `expect:` names with `@`) must be expected, at that line and column with that severity; `msg:` is a substring of the message; `suggestion:` the exact
suggestion (`none` for no suggestion); `fix: yes|no` whether a one-click fix is attached.
Files named `*.base.*` are base sides, not fixtures.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from checks.engine import check_tree
from checks.limits import Limits
from checks.rules import RULES
from checks.scanning.tree import MemoryTree
from tests.fixtures.miles import CONSUMERS, miles_tree

ROOT = Path(__file__).parent / "fixtures" / "rules"
DEFAULT_PATH = "tests/e2e/test_case.py"
_DIRECTIVE = re.compile(r"^\s*# (path|expect|patch|drop|base|durations|limits|consumers): ?(.*)$")


def fixture_files() -> list[Path]:
    return sorted(p for p in ROOT.glob("REG*/*") if p.suffix in (".py", ".yml") and ".base." not in p.name)


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


@pytest.mark.parametrize("fixture", fixture_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_rule_fixture(fixture: Path):
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


def test_every_rule_has_fixtures_that_find_it_and_fixtures_that_do_not():
    found: dict[str, set[str]] = {}
    for fixture in fixture_files():
        kinds = found.setdefault(fixture.parent.name, set())
        for key, value in directives(fixture.read_text()):
            if key == "expect":
                kinds.add("negative" if value == "none" else "positive")
    missing = {code: sorted({"positive", "negative"} - found.get(code, set())) for code in RULES}
    assert {c: m for c, m in missing.items() if m} == {}, "tests/fixtures/rules/<CODE>/ needs a fixture that finds the rule and one that does not"
