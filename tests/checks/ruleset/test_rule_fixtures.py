"""The rules' fixture files, across the rules: every rule has some, and each sits with its rule's tests.

Each rule's tests (tests/<package of the rule>/test_regNNN_<name>.py) run its fixtures, the files of
REGNNN/ beside them (rule_support.check_fixture). A fixture is one file of a miles-shaped repository
(tests/fixtures/miles.py) and states, in comment lines anywhere in it, where it goes and what the
check must report:

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

import os
import re

from checks.rules import RULES
from tests import TESTS
from tests.checks.ruleset.rule_support import directives, fixture_files, rule_home


def test_every_rule_has_fixtures_that_find_it_and_fixtures_that_do_not():
    found: dict[str, set[str]] = {}
    for code in RULES:
        kinds = found.setdefault(code, set())
        for fixture in fixture_files(code):
            for key, value in directives(fixture.read_text()):
                if key == "expect":
                    kinds.add("negative" if value == "none" else "positive")
    missing = {code: sorted({"positive", "negative"} - found.get(code, set())) for code in RULES}
    assert {c: m for c, m in missing.items() if m} == {}, "<the rule's home>/<CODE>/ needs a fixture that finds the rule and one that does not"


def test_every_fixture_folder_names_a_rule_and_sits_with_its_tests():
    """A REGNNN/ folder anywhere in tests/ is the fixtures of rule REGNNN, beside its test module."""
    folders = []
    for top, dirs, _files in os.walk(TESTS):
        dirs[:] = [d for d in dirs if d not in ("targets", "__pycache__")]
        folders += [os.path.join(top, d) for d in dirs if re.fullmatch(r"REG\d{3}", d)]
    assert folders
    for folder in folders:
        code = os.path.basename(folder)
        assert code in RULES, f"{folder} names no rule"
        home = rule_home(code)
        assert os.path.samefile(os.path.dirname(folder), home), f"{folder}: the fixtures of {code} belong in {home}"
        assert list(home.glob(f"test_{code.lower()}_*.py")), f"{folder}: no test module of {code} beside it"


def test_the_catalogue_read_from_file_names_is_the_registrys():
    """checks.ruleset.rule_names (read without importing a rule, for the configuration and the
    suppressions below the rules) against the registry that loads every rule module."""
    from checks.rules import RULES
    from checks.ruleset import rule_names

    assert rule_names() == {code: rule.name for code, rule in sorted(RULES.items())}
