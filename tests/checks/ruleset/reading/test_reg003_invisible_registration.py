"""REG003 (invisible registration), checks/ruleset/reading/reg003_invisible_registration.py: driven by its
fixtures, REG003/ beside this module (test_rule_fixtures.py describes them), and its cases on miles-
shaped source written here.

Spans are 1-based, end_column exclusive. Each positive case asserts the exact line and column.

REG003's walk visits only the top-level statements whose lines name a register function
(checks/ruleset/reading/reg003_invisible_registration.py). A derived answer must equal the source answer:
here the narrowed walk is compared with the whole module's walk on many composed modules.
"""

from __future__ import annotations

import ast
import random
from pathlib import Path

import pytest

from checks.engine import check_tree
from checks.model import Severity
from checks.ruleset.reading import reg003_invisible_registration as reg003
from checks.scanning.tree import MemoryTree

from tests.checks.ruleset.rule_support import (
    GOOD_CUDA,
    GOOD_ROCM,
    HEADER,
    P,
    at,
    check_fixture,
    fixture_files,
    fixture_id,
    only,
    rules_of,
    span,
)
from tests.fixtures.miles import miles_tree


@pytest.mark.parametrize("fixture", fixture_files("REG003"), ids=fixture_id)
def test_fixture(fixture: Path):
    """Each fixture in REG003/ beside this module gets exactly the findings its `# expect:` lines state."""
    check_fixture(fixture)


def _reg003(src: str):
    return at(P, HEADER + src)


def test_reg003_aliased_import_and_call_through_alias():
    src = "from tests.ci.ci_register import register_rocm_ci as reg\n\nreg(est_time=10, suite=\"nightly-stage-c-4-gpu-mi350\", labels=[\"long\"])\n"
    found = at(P, src)
    reg003 = sorted((f for f in found if f.rule == "REG003"), key=span)
    assert [span(f) for f in reg003] == [(1, 34, 1, 57), (3, 1, 3, 71)]
    assert reg003[0].severity is Severity.WARNING
    assert "imported as `reg`" in reg003[0].message
    assert only(found, "REG004").span.line == 1  # nothing visible remains


def test_reg003_alias_call_in_diff_mode():
    src = "from tests.ci.ci_register import register_rocm_ci as reg\n\nreg(est_time=10, suite=\"nightly-stage-c-4-gpu-mi350\", labels=[\"long\"])\n"
    report = check_tree(MemoryTree(miles_tree(**{P: src})), MemoryTree(miles_tree()), {P: None})
    reg003 = sorted((f for f in report.findings if f.file == P and f.rule == "REG003"), key=span)
    assert [span(f) for f in reg003] == [(1, 34, 1, 57), (3, 1, 3, 71)]


def test_reg003_alias_call_message_names_the_alias():
    src = "from tests.ci.ci_register import register_rocm_ci as reg\n\nreg(est_time=10, suite=\"nightly-stage-c-4-gpu-mi350\", labels=[\"long\"])\n"
    report = check_tree(MemoryTree(miles_tree(**{P: src})), MemoryTree(miles_tree()), {P: None})
    call = [f for f in report.findings if f.rule == "REG003" and f.span.line == 3][0]
    assert "alias" in call.message


def test_reg003_attribute_call():
    src = "from tests.ci import ci_register\n\nci_register.register_rocm_ci(est_time=10, suite=\"nightly-stage-c-4-gpu-mi350\", labels=[\"long\"])\n"
    f = only(at(P, src), "REG003")
    assert span(f) == (3, 1, 3, 96)
    assert "attribute call" in f.message


@pytest.mark.parametrize(
    "prefix, why",
    [
        ("def f():\n", "inside a function"),
        ("class C:\n", "inside a class"),
        ("if True:\n", "inside an `if`"),
        ("with open('x') as fh:\n", "`with`"),
        ("for i in range(1):\n", "`for`"),
        ("while False:\n", "`while`"),
        ("try:\n", "`try`"),
    ],
)
def test_reg003_call_not_at_top_level(prefix, why):
    suffix = "except Exception:\n    pass\n" if prefix.startswith("try") else ""
    found = _reg003(prefix + "    " + GOOD_ROCM + "\n" + suffix)
    f = only(found, "REG003")
    assert span(f) == (4, 5, 4, 88)
    assert why in f.message
    assert "REG004" in rules_of(found)


def test_reg003_assignment():
    f = only(_reg003("x = " + GOOD_ROCM + "\n"), "REG003")
    assert span(f) == (3, 5, 3, 88)
    assert "not a top-level expression statement" in f.message


def test_reg003_with_a_visible_registration_beside_it():
    found = _reg003(GOOD_ROCM + "\nif True:\n    " + GOOD_CUDA + "\n")
    f = only(found, "REG003")
    assert span(f) == (5, 5, 5, 79)
    assert "REG004" not in rules_of(found)


def test_reg003_negative_top_level_calls_and_mentions_in_comments():
    src = HEADER + "# register_rocm_ci(...) in a comment\n" + GOOD_ROCM + '\n\n\ndef test_it():\n    """register_cuda_ci is documented here"""\n'
    assert at(P, src) == []


FUNCTIONS = {"register_cuda_ci", "register_cpu_ci", "register_amd_ci"}

# Statements that hide a register call from the runner in every way the rule knows, spread over
# lines (the name on a later line than the statement's start), in decorators, in nested scopes.
PIECES = [
    'register_cuda_ci(est_time=60, suite="stage-b-1-gpu")\n',
    'from tests.ci.ci_register import register_cuda_ci, register_cpu_ci\n',
    '# register_cuda_ci(est_time=1, suite="in-a-comment")\n',
    '"""A docstring naming register_amd_ci."""\n',
    'x = register_cuda_ci(est_time=60, suite="assigned")\n',
    'value = (\n    ci_register.\n    register_cpu_ci(est_time=5, suite="stage-a-cpu")\n)\n',
    'if True:\n    register_amd_ci(est_time=60, suite="nightly-amd")\n',
    'for _ in range(1):\n    pass\nelse:\n    register_cuda_ci(est_time=1, suite="for-else")\n',
    '@decorate(\n    register_cuda_ci(est_time=1, suite="decorator"),\n)\ndef f():\n    return 1\n',
    '@decorate\nclass C:\n    register_cpu_ci(est_time=1, suite="class-body")\n',
    'def g():\n    def h():\n        register_amd_ci(est_time=1, suite="nested")\n    return h\n',
    'handler = lambda: register_cuda_ci(est_time=1, suite="lambda")\n',
    'with open("f") as fh:\n    register_cpu_ci(est_time=1, suite="with")\n',
    'try:\n    pass\nexcept Exception:\n    ci.register_cuda_ci(est_time=1, suite="attr-in-try")\n',
    'def unrelated(a, b):\n    return a + b\n',
    'CONSTANT = {"k": [1, 2, 3]}\n',
    'print(register_cuda_ci)\n',
    'ci.register_amd_ci(est_time=1, suite="attribute")\n',
    'match 1:\n    case 1:\n        register_cuda_ci(est_time=1, suite="match")\n',
]
NO_ALIAS_WALKS_ALL = {"zz_not_an_alias": "register_cuda_ci"}  # an alias makes the walk whole


def both(source: str):
    tree = ast.parse(source)
    lines = source.split("\n")
    narrowed = reg003.invisible_calls("t.py", lines, tree, FUNCTIONS, {})
    whole = reg003.invisible_calls("t.py", lines, tree, FUNCTIONS, NO_ALIAS_WALKS_ALL)
    return narrowed, whole


def test_the_narrowed_walk_finds_what_the_whole_walk_finds():
    rng = random.Random(28)
    found = 0
    for _ in range(400):
        source = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 9)))
        narrowed, whole = both(source)
        assert narrowed == whole, source
        found += len(whole)
    assert found > 400  # the composed modules do hide calls: the comparison is not of empty lists


def test_a_file_whose_mentions_are_all_in_comments_walks_nothing():
    source = "# register_cuda_ci is how a test registers\nimport os\n\ndef f():\n    return os.sep\n"
    assert reg003._statements_mentioning(ast.parse(source), source.split("\n"), FUNCTIONS) == []
    assert both(source) == ([], [])


def test_a_decorator_line_counts_as_its_statements():
    source = '@decorate(register_cuda_ci(est_time=1, suite="s"))\ndef f():\n    pass\n'
    tree = ast.parse(source)
    assert reg003._statements_mentioning(tree, source.split("\n"), FUNCTIONS) == [tree.body[0]]
    narrowed, whole = both(source)
    assert len(narrowed) == 1 and narrowed == whole
