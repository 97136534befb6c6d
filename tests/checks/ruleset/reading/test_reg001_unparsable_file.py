"""REG001 (unparsable file), checks/ruleset/reading/reg001_unparsable_file.py: driven by its fixtures, REG001/
beside this module (test_rule_fixtures.py describes them), and its cases on miles-shaped source
written here.

Spans are 1-based, end_column exclusive. Each positive case asserts the exact line and column.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.engine import check_tree
from checks.model import Severity
from checks.scanning.tree import MemoryTree

from tests.checks.ruleset.rule_support import (
    GOOD_ROCM,
    HEADER,
    P,
    at,
    check_fixture,
    fixture_files,
    fixture_id,
    only,
    regs,
    rules_of,
    span,
)
from tests.fixtures.miles import miles_tree, test_file


@pytest.mark.parametrize("fixture", fixture_files("REG001"), ids=fixture_id)
def test_fixture(fixture: Path):
    """Each fixture in REG001/ beside this module gets exactly the findings its `# expect:` lines state."""
    check_fixture(fixture)


def test_reg001_syntax_error_position():
    found = at(P, HEADER + "register_rocm_ci(est_time=10,\n")
    f = only(found, "REG001")
    assert f.severity is Severity.FAILURE
    assert span(f)[:2] == (3, 17)  # the unclosed parenthesis
    assert "REG004" not in rules_of(found)  # an unreadable file is not also "unregistered"


BROKEN_AFTER_REGISTRATION = test_file(GOOD_ROCM) + "def broken(:\n    pass\n"


def test_reg001_syntax_error_on_later_line_in_diff_mode():
    files = miles_tree(**{P: BROKEN_AFTER_REGISTRATION})
    base = miles_tree()
    report = check_tree(MemoryTree(files), MemoryTree(base), {P: None})
    f = only([f for f in report.findings if f.file == P], "REG001")
    assert span(f)[:2] == (8, 12)


def test_reg001_syntax_error_on_later_line_whole_tree():
    f = only(at(P, BROKEN_AFTER_REGISTRATION), "REG001")
    assert span(f)[:2] == (8, 12)


@pytest.mark.parametrize("path", [P, "tests/fast/test_broken_fast.py"])
def test_reg001_whole_tree_file_without_any_registration(path):
    """A discovered file that names no register function is parsed too: its syntax error is REG001
    (not REG004, and not silence in an implicit-CPU root)."""
    found = at(path, "import os\n\ndef broken(:\n    pass\n")
    f = only(found, "REG001")
    assert span(f)[:2] == (3, 12)
    assert "REG004" not in rules_of(found)


# A file that names no register function is only syntax-checked (registrations.parses): by the
# symbol-table builder first, by ast.parse when it refuses. The verdict is ast.parse's, the runner's.
ONLY_THE_SYMBOL_TABLE_REFUSES = {
    "nonlocal at module level": "nonlocal x\n",
    "duplicate argument": "def f(a, a):\n    pass\n",
    "global after use": "def f():\n    x = 1\n    global x\n",
}


@pytest.mark.parametrize("case", sorted(ONLY_THE_SYMBOL_TABLE_REFUSES))
def test_reg001_not_for_what_only_the_symbol_table_refuses(case):
    """ast.parse (the runner's parse) accepts these: not REG001, in a file with or without a registration."""
    import ast

    import symtable

    source = ONLY_THE_SYMBOL_TABLE_REFUSES[case]
    ast.parse(source)
    with pytest.raises(SyntaxError):
        symtable.symtable(source, "t.py", "exec")
    assert "REG001" not in rules_of(at("tests/fast/test_plain.py", source))
    assert "REG001" not in rules_of(at(P, test_file(GOOD_ROCM) + source))


@pytest.mark.parametrize("source, line", [
    ("x = (\n", 1), ("def broken(:\n    pass\n", 1), ("x = 1\n\x00\n", 2), ("x = " + "-" * 5000 + "1\n", 1),
    ("if True:\n  x = 1\n    y = 2\n", 3),
])
def test_reg001_file_without_registration_fails_as_ast_parse_does(source, line):
    import ast

    from checks.scanning.registrations import parses

    with pytest.raises((SyntaxError, ValueError, RecursionError, MemoryError)):
        ast.parse(source)
    assert parses(source, "t.py") is False
    f = only(at("tests/fast/test_plain.py", source), "REG001")
    assert f.span.line == line


def test_reg001_negative_valid_file():
    assert "REG001" not in rules_of(regs(GOOD_ROCM))


def test_reg001_non_utf8():
    found = at(P, b"\xff\xfe" + test_file(GOOD_ROCM).encode())
    f = only(found, "REG001", "UTF-8")
    assert span(f)[:2] == (1, 1)


def test_reg001_null_bytes_is_a_finding():
    found = at(P, (GOOD_ROCM + "\x00\n").encode())
    assert rules_of(found) == {"REG001"}


def test_reg001_null_byte_line_is_exact():
    found = at(P, b"from tests.ci.ci_register import register_rocm_ci\n\x00" + GOOD_ROCM.encode() + b"\n")
    assert only(found, "REG001").span.line == 2


def test_utf8_bom_is_accepted():
    assert at(P, b"\xef\xbb\xbf" + test_file(GOOD_ROCM).encode()) == []
