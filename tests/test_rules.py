"""Every rule of the check engine, on miles-shaped source written here (docs/rules.md).

Spans are 1-based, end_column exclusive. Each positive case asserts the exact line and column.
"""

from __future__ import annotations

import pytest

from checks.target.contract import Contract, read_contract
from checks.config.schema import Config
from checks.engine import check_tree
from checks.model import Severity
from checks.scanning.registrations import scan_file
from checks.scanning.tree import MemoryTree
from tests.fixtures import miles
from tests.fixtures.miles import miles_tree, test_file

test_file.__test__ = False  # a fixture builder, not a test

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


# The fixture's own workflows run suites it registers nothing in (it keeps few test files): REG015
# reports those jobs. `clean(report)` is every other finding.
FIXTURE_EMPTY_SUITES = {
    (".github/workflows/pr-test-rocm.yml", "stage-c-4-gpu-mi350"),
    (".github/workflows/pr-test.yml", "stage-b-cpu"),
    (".github/workflows/pr-test.yml", "stage-b-2-gpu-h200"),
    (".github/workflows/pr-test.yml", "stage-c-8-gpu-h100"),
    (".github/workflows/pr-test.yml", "stage-c-2-gpu-h200"),
    # sglang's MI350 nightly (the built-in external consumer, read from its file) runs it too
    ("tests/ci/run_suite.py", "nightly-stage-c-2-gpu-mi350"),
}


def clean(report) -> list:
    return [f for f in report.findings if f.rule != "REG015"]


# --------------------------------------------------------------------------------------------
# the baseline: the fixture repository is clean


def test_fixture_repository_is_clean():
    report = check()
    assert clean(report) == []
    assert {(f.file, f.message.split("`")[1]) for f in report.findings} == FIXTURE_EMPTY_SUITES
    assert not report.failed
    assert {r.file for r in report.registrations if not r.implicit} == {
        "tests/e2e/megatron/test_qwen3_4B_ppo.py",
        "tests/e2e/fsdp/test_qwen3_0.6B_fsdp_distributed.py",
    }
    # the runner's implicit CPU registration of a tests/fast file without a call is reported too
    assert {r.file for r in report.registrations if r.implicit} == {"tests/fast/test_utils.py"}


def test_good_registrations_have_no_findings():
    assert regs(GOOD_ROCM, GOOD_CUDA, GOOD_CPU) == []


# --------------------------------------------------------------------------------------------
# REG001: the file does not parse


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


# --------------------------------------------------------------------------------------------
# REG002: registrations the runner rejects
# Column references in the comments are into the registration line, which is line 3 of test_file().


def test_reg002_non_literal_argument():
    f = only(regs('register_rocm_ci(est_time=X, suite="nightly-stage-c-4-gpu-mi350", labels=["long"])'), "REG002", "must be a literal")
    assert span(f) == (3, 27, 3, 28)
    assert f.severity is Severity.FAILURE


def test_reg002_non_literal_call_argument():
    f = only(regs('register_rocm_ci(est_time=int("10"), suite="nightly-stage-c-4-gpu-mi350", labels=["long"])'), "REG002", "literal")
    assert span(f) == (3, 27, 3, 36)


def test_reg002_starred_argument():
    found = regs('register_rocm_ci(*args, suite="nightly-stage-c-4-gpu-mi350", labels=["long"])')
    assert span(only(found, "REG002", "starred")) == (3, 18, 3, 23)


def test_reg002_double_star_kwargs():
    found = regs('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi350", labels=["long"], **kw)')
    assert span(only(found, "REG002", "**kwargs")) == (3, 85, 3, 89)


def test_reg002_too_many_positionals():
    found = regs('register_rocm_ci(10, "nightly-stage-c-4-gpu-mi350", ["long"])')
    assert span(only(found, "REG002", "too many positional")) == (3, 53, 3, 61)


def test_reg002_two_positionals_are_fine():
    assert regs('register_rocm_ci(10, "nightly-stage-c-4-gpu-mi350", labels=["long"])') == []


def test_reg002_unknown_keyword_with_did_you_mean():
    found = regs('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi350", lables=["long"])')
    f = only(found, "REG002", "unknown keyword")
    assert span(f) == (3, 68, 3, 83)
    assert "`lables`" in f.message and "did you mean `labels`?" in f.message


def test_reg002_duplicate_keyword():
    found = regs('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi350", labels=["long"], est_time=20)')
    f = only(found, "REG002", "duplicated")
    assert span(f) == (3, 85, 3, 96)
    assert "`est_time`" in f.message


def test_reg002_duplicate_positional_and_keyword():
    found = regs('register_rocm_ci(10, "nightly-stage-c-4-gpu-mi350", labels=["long"], est_time=20)')
    f = only(found, "REG002", "duplicated")
    assert span(f) == (3, 70, 3, 81)


def test_reg002_missing_est_time_and_suite():
    found = regs('register_rocm_ci(labels=["long"])')
    f = only(found, "REG002", "missing")
    assert span(f) == (3, 1, 3, 34)
    assert "`est_time`" in f.message and "`suite`" in f.message


def test_reg002_missing_suite_only():
    found = regs('register_cpu_ci(est_time=10)')
    f = only(found, "REG002", "missing")
    assert "`suite`" in f.message and "`est_time`" not in f.message
    assert span(f) == (3, 1, 3, 29)


@pytest.mark.parametrize(
    "value, end",
    [("0", 28), ("-5", 29), ("True", 31), ('"10"', 31), ("0.0", 30)],
)
def test_reg002_est_time_not_positive_number(value, end):
    found = regs(f'register_rocm_ci(est_time={value}, suite="nightly-stage-c-4-gpu-mi350", labels=["long"])')
    f = only(found, "REG002", "est_time must be a positive number")
    assert span(f) == (3, 27, 3, end)


def test_reg002_est_time_infinite():
    # 1e999 is float("inf"): the runner's int(1.25 * est_time) timeout raises OverflowError
    found = regs('register_rocm_ci(est_time=1e999, suite="nightly-stage-c-4-gpu-mi350", labels=["long"])')
    f = only(found, "REG002", "est_time")
    assert span(f) == (3, 27, 3, 32)


@pytest.mark.parametrize("value", ["1", "0.5", "2400", "1e3"])
def test_reg002_est_time_positive_is_fine(value):
    assert regs(f'register_rocm_ci(est_time={value}, suite="nightly-stage-c-4-gpu-mi350", labels=["long"])') == []


def test_reg002_suite_not_a_string():
    f = only(regs('register_rocm_ci(est_time=10, suite=5, labels=["long"])'), "REG002", "suite must be a string")
    assert span(f) == (3, 37, 3, 38)


def test_reg002_suite_list_not_a_string():
    f = only(regs('register_rocm_ci(est_time=10, suite=["a"], labels=["long"])'), "REG002", "suite must be a string")
    assert span(f) == (3, 37, 3, 42)


@pytest.mark.parametrize(
    "labels, end",
    [('"long"', 81), ('["long", 3]', 86), ('("long",)', 84), ('{"long"}', 83)],
)
def test_reg002_labels_not_a_list_of_string_literals(labels, end):
    found = regs(f'register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi350", labels={labels})')
    hits = [f for f in found if f.rule == "REG002" and ("labels must be a list" in f.message or "literal" in f.message)]
    assert hits, found
    assert span(hits[0]) == (3, 75, 3, end)


def test_reg002_labels_with_non_literal_element():
    found = regs('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi350", labels=["long", X])')
    f = only(found, "REG002", "must be a literal")
    assert span(f) == (3, 75, 3, 86)


def test_reg002_gpu_registration_without_labels():
    found = regs('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi350")')
    f = only(found, "REG002", "non-empty `labels`")
    assert span(f) == (3, 1, 3, 67)


def test_reg002_gpu_registration_labels_none():
    found = regs('register_cuda_ci(est_time=10, suite="stage-c-4-gpu-h200", labels=None)')
    f = only(found, "REG002", "non-empty `labels`")
    assert span(f) == (3, 66, 3, 70)


def test_reg002_gpu_registration_labels_empty():
    found = regs('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi350", labels=[])')
    f = only(found, "REG002", "non-empty `labels`")
    assert span(f) == (3, 75, 3, 77)


@pytest.mark.parametrize("labels", ["", ", labels=None", ", labels=[]"])
def test_reg002_cpu_registration_may_omit_labels(labels):
    assert regs(f'register_cpu_ci(est_time=10, suite="stage-a-cpu"{labels})') == []


def test_reg002_unknown_label_exact_element():
    found = regs('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi350", labels=["long", "megatorn"])')
    f = only(found, "REG002", "unknown label")
    assert span(f) == (3, 84, 3, 94)
    assert "`megatorn`" in f.message and "did you mean `megatron`?" in f.message


def test_reg002_unknown_label_exact_element_multiline_non_ascii():
    src = HEADER + (
        "register_rocm_ci(\n"  # 3
        "    est_time=10,\n"  # 4
        '    suite="nightly-stage-c-4-gpu-mi350",\n'  # 5
        "    labels=[\n"  # 6
        '        "long",\n'  # 7
        '        "mégatron",\n'  # 8
        "    ],\n"
        ")\n"
    )
    f = only(at(P, src), "REG002", "unknown label")
    assert span(f) == (8, 9, 8, 19)


def test_reg002_unknown_label_after_non_ascii_on_same_line():
    found = regs('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi350", labels=["lóng", "long"])')
    f = only(found, "REG002", "unknown label")
    assert span(f) == (3, 76, 3, 82)  # characters, not UTF-8 bytes


def test_reg002_known_labels_are_fine():
    assert regs('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi350", labels=["long", "megatron", "fully-async"])') == []


def test_reg002_nightly_not_bool():
    found = regs('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi350", labels=["long"], nightly=1)')
    f = only(found, "REG002", "nightly must be True or False")
    assert span(f) == (3, 93, 3, 94)


def test_reg002_nightly_string_not_bool():
    found = regs('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi350", labels=["long"], nightly="yes")')
    assert span(only(found, "REG002", "nightly")) == (3, 93, 3, 98)


def test_reg002_disabled_not_str_or_none():
    found = regs('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi350", labels=["long"], disabled=1)')
    f = only(found, "REG002", "disabled must be")
    assert span(f) == (3, 94, 3, 95)


@pytest.mark.parametrize("value", ["None", '"flaky on MI355X"'])
def test_reg002_disabled_str_or_none_and_nightly_bool_are_fine(value):
    found = regs(f'register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi350", labels=["long"], nightly=True, disabled={value})')
    assert "REG002" not in rules_of(found)


def test_reg002_gpu_call_in_implicit_cpu_root():
    found = at("tests/fast/test_g.py", test_file(GOOD_ROCM))
    f = only(found, "REG002", "implicit-CPU root")
    assert span(f) == (3, 1, 3, 17)


def test_reg002_cpu_call_in_implicit_cpu_root_is_fine():
    assert at("tests/fast/test_g.py", test_file('register_cpu_ci(est_time=10, suite="stage-b-cpu")')) == []


def test_reg002_register_function_not_defined_by_the_repository():
    register_module = miles.REGISTER_MODULE.split("\n\ndef register_rocm_ci")[0] + "\n"
    found = regs(GOOD_ROCM, **{"tests/ci/ci_register.py": register_module})
    f = only(found, "REG002", "not defined")
    assert span(f) == (3, 1, 3, 17)
    assert "register_cpu_ci, register_cuda_ci" in f.message


def test_reg002_signature_with_hardware_keyword_is_accepted():
    register_module = miles.REGISTER_MODULE.replace(
        "def register_cuda_ci(est_time: float, suite: str, *, labels,",
        "def register_cuda_ci(est_time: float, suite: str, *, labels, hardware=None,",
    )
    line = 'register_cuda_ci(est_time=10, suite="stage-c-4-gpu-h200", labels=["long"], hardware=["hopper", "blackwell"])'
    assert regs(line, **{"tests/ci/ci_register.py": register_module}) == []
    # ...and the same keyword is unknown where the repository's signature does not declare it
    f = only(regs(line), "REG002", "unknown keyword `hardware`")
    assert span(f) == (3, 76, 3, 108)


def test_reg002_old_num_gpus_signature_is_accepted():
    register_module = "def register_rocm_ci(est_time: float, suite: str, num_gpus: int = 1):\n    pass\n"
    found = regs('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi350", num_gpus=4)', **{"tests/ci/ci_register.py": register_module})
    assert "REG002" not in rules_of(found)


# --------------------------------------------------------------------------------------------
# REG003: registrations the runner silently ignores


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


# --------------------------------------------------------------------------------------------
# REG004: a discovered test file without a registration


def test_reg004_unregistered_test_file():
    f = only(at("tests/e2e/test_none.py", "def test_a():\n    pass\n"), "REG004")
    assert span(f) == (1, 1, 1, 1)
    assert f.severity is Severity.FAILURE
    assert "tests/e2e" in f.message


@pytest.mark.parametrize("root", ["tests/fast-gpu", "tests/ci", "tests/e2e/deeper/dir"])
def test_reg004_other_discovery_roots(root):
    assert rules_of(at(f"{root}/test_none.py", "x = 1\n")) == {"REG004"}


def test_reg004_implicit_cpu_root_is_exempt():
    report = check(**{"tests/fast/sub/test_none.py": "def test_a():\n    pass\n"})
    assert [f for f in report.findings if f.file == "tests/fast/sub/test_none.py"] == []


@pytest.mark.parametrize("path", ["tests/e2e/helper.py", "tests/e2e/conftest.py", "tests/e2e/test_data.txt", "tests/other/test_z.py", "test_top.py", "tests/e2e_old/test_q.py"])
def test_reg004_non_discovered_names(path):
    report = check(**{path: "def test_a():\n    pass\n"})
    assert [f for f in report.findings if f.file == path] == []
    assert report.files_checked == 3  # the miles fixture's discovered files only


def test_reg004_negative_registered_file():
    assert "REG004" not in rules_of(regs(GOOD_CPU))


# --------------------------------------------------------------------------------------------
# REG010: suite not in the inventory for the backend


def test_reg010_confident_typo_suggestion():
    found = regs('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi35", labels=["long"])')
    f = only(found, "REG010")
    assert span(f) == (3, 37, 3, 65)
    assert f.severity is Severity.FAILURE
    assert "did you mean `nightly-stage-c-4-gpu-mi350`" in f.message
    assert f.suggestion == '"nightly-stage-c-4-gpu-mi350"'


def test_reg010_warning_when_disabled():
    found = regs('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi35", labels=["long"], disabled="flaky")')
    f = only(found, "REG010")
    assert f.severity is Severity.WARNING
    assert span(f) == (3, 37, 3, 65)


def test_reg010_names_the_backend_that_owns_the_suite():
    found = regs('register_rocm_ci(est_time=10, suite="stage-c-4-gpu-h200", labels=["long"])')
    f = only(found, "REG010")
    assert span(f) == (3, 37, 3, 57)
    assert "belongs to cuda" in f.message


def test_reg010_no_suggestion_when_ambiguous():
    # stage-d- is one edit from both stage-b-2-gpu-h200 and stage-c-2-gpu-h200: no single nearest name
    found = regs('register_cuda_ci(est_time=10, suite="stage-d-2-gpu-h200", labels=["long"])')
    f = only(found, "REG010")
    assert f.suggestion is None and f.fix is None
    assert "did you mean `stage-b-2-gpu-h200` or `stage-c-2-gpu-h200`?" in f.message


def test_reg010_never_suggests_another_gpu_count():
    # -6-gpu- is one edit from -8-gpu-, -4-gpu- and -2-gpu-: each is other hardware, none is offered
    found = regs('register_rocm_ci(est_time=10, suite="nightly-stage-c-6-gpu-mi350", labels=["long"])')
    f = only(found, "REG010")
    assert f.suggestion is None and f.fix is None
    assert "did you mean" not in f.message


def test_reg010_an_8_gpu_test_is_offered_only_8_gpu_suites():
    f = only(regs('register_cuda_ci(est_time=10, suite="stage-b-8-gpu-h200", labels=["long"])'), "REG010")
    assert "-2-gpu-" not in f.message and "-4-gpu-" not in f.message
    assert f.suggestion == '"stage-c-8-gpu-h200"'


def test_reg010_never_changes_the_hardware_model():
    # b200 is one edit from h200, but it is other hardware (Blackwell): no did-you-mean, no fix
    f = only(regs('register_cuda_ci(est_time=10, suite="stage-c-8-gpu-b200", labels=["long"])'), "REG010")
    assert f.suggestion is None and f.fix is None
    assert "did you mean" not in f.message


def test_reg010_disabled_blackwell_registration_gets_no_fix():
    found = regs('register_cuda_ci(est_time=10, suite="stage-c-8-gpu-b200", labels=["long"], disabled="Blackwell CI not supported")')
    f = only(found, "REG010")
    assert f.suggestion is None and f.fix is None
    assert "h200" not in f.message


def test_reg010_disabled_registration_gets_a_hint_but_no_fix():
    f = only(regs('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi35", labels=["long"], disabled="flaky")'), "REG010")
    assert "did you mean `nightly-stage-c-4-gpu-mi350`" in f.message
    assert "no fix is offered for a disabled registration" in f.message
    assert f.suggestion is None and f.fix is None


def test_reg010_no_did_you_mean_for_far_names():
    f = only(regs('register_rocm_ci(est_time=10, suite="totally-unrelated", labels=["long"])'), "REG010")
    assert "did you mean" not in f.message and f.suggestion is None


def test_reg010_nightly_namespace_correction():
    f = only(regs('register_rocm_ci(est_time=10, suite="stage-c-8-gpu-mi350", labels=["long"])'), "REG010")
    assert f.suggestion == '"nightly-stage-c-8-gpu-mi350"'


def test_reg010_positional_suite():
    f = only(regs('register_rocm_ci(800, "nightly-stage-c-4-gpu-mi35", labels=["long"])'), "REG010")
    assert span(f) == (3, 23, 3, 51)


def test_reg010_negative():
    assert "REG010" not in rules_of(regs(GOOD_ROCM, GOOD_CUDA, GOOD_CPU))


# --------------------------------------------------------------------------------------------
# REG011: hardware class contradicts the backend


def test_reg011_mi350_suite_in_cuda_registration():
    found = regs('register_cuda_ci(est_time=10, suite="stage-c-4-gpu-mi350", labels=["long"])')
    f = only(found, "REG011")
    assert span(f) == (3, 37, 3, 58)
    assert f.severity is Severity.FAILURE
    assert "mi350" in f.message


def test_reg011_h200_suite_in_rocm_registration():
    f = only(regs('register_rocm_ci(est_time=10, suite="stage-c-4-gpu-h200", labels=["long"])'), "REG011")
    assert span(f) == (3, 37, 3, 57)


def test_reg011_negative():
    assert "REG011" not in rules_of(regs(GOOD_ROCM, GOOD_CUDA, GOOD_CPU))


# --------------------------------------------------------------------------------------------
# REG013: a suite with no consumer

RUN_SUITE_WITH_Z = miles.RUN_SUITE.replace('"stage-b-cpu",', '"stage-b-cpu",\n        "stage-z-cpu",')


def test_reg013_unconsumed_suite():
    found = regs('register_cpu_ci(est_time=10, suite="stage-z-cpu")', **{"tests/ci/run_suite.py": RUN_SUITE_WITH_Z})
    f = only(found, "REG013")
    assert span(f) == (3, 36, 3, 49)
    assert f.severity is Severity.FAILURE  # "this test never runs": one finding, one severity
    assert f.message.startswith("this test never runs: no job runs suite `stage-z-cpu` for CPU")


def test_reg013_negative_disabled_or_consumed():
    assert "REG013" not in rules_of(regs('register_cpu_ci(est_time=10, suite="stage-z-cpu", disabled="x")', **{"tests/ci/run_suite.py": RUN_SUITE_WITH_Z}))
    assert "REG013" not in rules_of(regs(GOOD_CPU, GOOD_ROCM, GOOD_CUDA))


def test_reg013_external_consumer_from_configuration():
    cfg = "consumers:\n  - repository: o/r\n    workflow: .github/workflows/n.yml\n    suites: [stage-z-cpu]\n"
    found = regs('register_cpu_ci(est_time=10, suite="stage-z-cpu")', **{"tests/ci/run_suite.py": RUN_SUITE_WITH_Z, ".github/ci-registrar.yml": cfg})
    assert "REG013" not in rules_of(found)


# --------------------------------------------------------------------------------------------
# REG014: a workflow runs a suite the inventory lacks


def test_reg014_stale_consumer():
    report = check(**{".github/workflows/pr-test.yml": miles.PR_TEST.replace("--suite stage-b-cpu", "--suite stage-b-cpux")})
    f = only(report.findings, "REG014")
    assert f.file == ".github/workflows/pr-test.yml"
    assert span(f) == (9, 61, 9, 73)
    assert f.severity is Severity.WARNING
    assert f.suggestion == "stage-b-cpu"


def test_reg014_stale_matrix_value():
    report = check(**{".github/workflows/pr-test.yml": miles.PR_TEST.replace("stage-c-8-gpu-h100, ", "stage-c-8-gpu-h1000, ")})
    f = only(report.findings, "REG014")
    assert span(f) == (14, 37, 14, 56)


def test_reg014_negative():
    assert "REG014" not in rules_of(check().findings)


# --------------------------------------------------------------------------------------------
# REG030: a suite's est_time per shard exceeds its consumer's job timeout


def _rocm_files(n: int, est: int, suite: str = "stage-c-4-gpu-mi350"):
    return {f"tests/e2e/test_big{i}.py": test_file(f'register_rocm_ci(est_time={est}, suite="{suite}", labels=["long"])') for i in range(n)}


def test_reg030_over_budget_with_auto_partition_shards():
    # pr-test-rocm.yml: timeout-minutes 180, --auto-partition-size 2 -> 4 x 6000 s = 12000 s per shard > 10800 s
    report = check(**_rocm_files(4, 6000))
    f = only(report.findings, "REG030")
    assert f.file == "tests/ci/run_suite.py"
    assert span(f) == (17, 9, 17, 30)  # the suite's entry in CI_SUITES
    assert f.severity is Severity.WARNING
    assert "2 shards" in f.message and "12000 s" in f.message and "180 min" in f.message


def test_reg030_one_finding_per_suite_naming_every_workflow_it_overruns():
    # the same 4 x 6000 s suite in three workflows: 2 shards / 180 min (12000 s > 10800 s), one
    # shard / 300 min (24000 s > 18000 s) and 4 shards / 120 min (6000 s < 7200 s: it fits there)
    base = miles_tree()[".github/workflows/pr-test-rocm.yml"]
    one = base.replace("timeout-minutes: 180", "timeout-minutes: 300").replace(
        " --auto-partition-id ${{ matrix.part }} --auto-partition-size 2", "").replace("part: [0, 1]", "part: [0]")
    four = base.replace("timeout-minutes: 180", "timeout-minutes: 120").replace(
        "--auto-partition-size 2", "--auto-partition-size 4").replace("part: [0, 1]", "part: [0, 1, 2, 3]")
    report = check(**_rocm_files(4, 6000), **{".github/workflows/nightly-rocm.yml": one, ".github/workflows/weekly-rocm.yml": four})
    f = only(report.findings, "REG030")
    assert span(f) == (17, 9, 17, 30)
    assert "it overruns the job timeout in 2 workflows: " in f.message, f.message
    assert ".github/workflows/nightly-rocm.yml (longest of 1 shard 24000 s, timeout 300 min)" in f.message
    assert ".github/workflows/pr-test-rocm.yml (longest of 2 shards 12000 s, timeout 180 min)" in f.message
    assert "weekly-rocm.yml" not in f.message
    assert "(s)" not in f.message


def test_reg030_under_budget_thanks_to_shards():
    # 4 x 5000 s = 20000 s would overflow one shard; two shards hold 10000 s each < 10800 s
    assert "REG030" not in rules_of(check(**_rocm_files(4, 5000)).findings)


def test_reg030_external_consumer_timeout():
    # the sglang nightly, read from its file: a 180-minute step timeout (it was 120 when the
    # consumer was typed by hand), 1 shard; the fixture already has 2400 s in nightly-stage-c-4-gpu-mi350
    report = check(**_rocm_files(2, 5000, "nightly-stage-c-4-gpu-mi350"))
    f = only(report.findings, "REG030")
    assert span(f) == (20, 9, 20, 38)
    assert "180 min" in f.message and "sgl-project/sglang:.github/workflows/nightly-test-amd-miles-rocm720.yml" in f.message
    assert "REG030" not in rules_of(check(**_rocm_files(1, 5000, "nightly-stage-c-4-gpu-mi350")).findings)  # 7400 s < 10800 s


def test_reg030_disabled_registrations_do_not_count():
    files = {
        f"tests/e2e/test_big{i}.py": test_file(f'register_rocm_ci(est_time=6000, suite="stage-c-4-gpu-mi350", labels=["long"], disabled="off")') for i in range(4)
    }
    assert "REG030" not in rules_of(check(**files).findings)


# --------------------------------------------------------------------------------------------
# REG040: GPU count in the suite name contradicts the test's own


def test_reg040_file_name_2xgpu_vs_4_gpu_suite():
    f = only(regs(GOOD_ROCM, path="tests/e2e/test_foo_2xGPU.py"), "REG040")
    assert span(f) == (3, 37, 3, 66)
    assert f.severity is Severity.WARNING
    assert "2" in f.message and "file name" in f.message


def test_reg040_num_gpus_constant():
    f = only(at(P, test_file(GOOD_ROCM, body="NUM_GPUS = 8\n")), "REG040")
    assert span(f) == (3, 37, 3, 66)
    assert "NUM_GPUS" in f.message and "8" in f.message


def test_reg040_num_gpus_in_a_docstring_is_not_the_constant():
    source = '"""How to run:\nNUM_GPUS = 8\n"""\n' + test_file(GOOD_ROCM).split("\n", 1)[1]
    assert "REG040" not in rules_of(at(P, source)), "a NUM_GPUS line inside a string is not a module-level constant"


def test_reg040_negative():
    assert "REG040" not in rules_of(regs(GOOD_ROCM, path="tests/e2e/test_foo_4xGPU.py"))
    assert "REG040" not in rules_of(at(P, test_file(GOOD_ROCM, body="NUM_GPUS = 4\n")))
    assert "REG040" not in rules_of(regs(GOOD_CPU, path="tests/e2e/test_foo_2xGPU.py"))


# --------------------------------------------------------------------------------------------
# REG900: invalid configuration; severity overrides

CFG = ".github/ci-registrar.yml"


def _config_findings(text: str):
    return [f for f in check(**{CFG: text}).findings if f.file == CFG]


def test_reg900_invalid_yaml_line():
    f = only(_config_findings("paths:\n  test_roots: [a\n"), "REG900")
    assert f.span.line == 3
    assert f.severity is Severity.FAILURE
    assert "not valid YAML" in f.message


def test_reg900_invalid_yaml_indentation_line():
    f = only(_config_findings("rules:\n  REG040: off\n calibration: 1\n"), "REG900")
    assert f.span.line == 3


def test_reg900_wrong_type_line_and_column():
    f = only(_config_findings("calibration:\n  hardware: MI355X\n  margin: lots\n"), "REG900")
    assert span(f) == (3, 11, 3, 15)
    assert "calibration.margin" in f.message


@pytest.mark.parametrize("value", [".nan", ".NaN", ".inf", "-.inf", "+.inf", ".Inf"])
def test_reg900_a_non_finite_budget_is_located(value):
    f = only(_config_findings(f"rules:\n  REG040: off\nbudgets:\n  max_files_per_command: 3\n"
                              f"  daily_gpu_hours: {value}\n"), "REG900")
    assert f.span.line == 5 and "budgets.daily_gpu_hours must be a finite number" in f.message


@pytest.mark.parametrize("text, line, says", [
    ("calibration:\n  margin: .nan\n", 2, "calibration.margin must be a finite number"),
    ("calibration:\n  over_slack_s: .inf\n", 2, "calibration.over_slack_s must be a finite number"),
    ("calibration:\n  max_margin: 1.0e+400\n", 2, "calibration.max_margin"),  # too large for a float: located
    ("budgets:\n  daily_gpu_hours: -0.5\n", 2, "budgets.daily_gpu_hours must be from 0 to 1e+06"),
    ("budgets:\n  daily_gpu_hours: 1000001\n", 2, "budgets.daily_gpu_hours must be from 0 to 1e+06"),
    ("budgets:\n  max_files_per_command: 0\n", 2, "budgets.max_files_per_command must be from 1 to 1000"),
    ("calibration:\n  window_days: 0\n", 2, "calibration.window_days must be from 1 to 3650"),
    ("calibration:\n  floor_days: 99999\n", 2, "calibration.floor_days must be from 1 to 3650"),
    ("calibration:\n  pull_request_every_days: 366\n", 2, "calibration.pull_request_every_days must be from 1 to 365"),
    ("calibration:\n  timeout_per_file_s: 0\n", 2, "calibration.timeout_per_file_s must be from 1"),
    ("calibration:\n  over_factor: 0.5\n", 2, "calibration.over_factor must be from 1 to 100"),
    ("consumers:\n  - repository: a/b\n    workflow: w.yml\n    suites: [s]\n    shards: 300\n", 5,
     "consumers[].shards must be from 1 to 256"),
    ("dispatch:\n  s:\n    workflow: w.yml\n    gpus: 65\n", 4, "dispatch.s.gpus must be from 1 to 64"),
])
def test_reg900_every_number_is_finite_and_in_range(text, line, says):
    f = only(_config_findings(text), "REG900")
    assert f.span.line == line and says in f.message, f.message


@pytest.mark.parametrize("text", ["budgets:\n  daily_gpu_hours: 0\n", "budgets:\n  daily_gpu_hours: 1000000\n",
                                  "calibration:\n  margin: 10\n  window_days: 3650\n  floor_days: 3650\n",
                                  "calibration:\n  over_slack_s: 0\n"])
def test_reg900_numbers_at_the_ends_of_their_ranges_are_valid(text):
    assert _config_findings(text) == []


def test_reg900_unknown_field_points_at_the_key():
    f = only(_config_findings("paths:\n  register_module: x.py\n  bogus: 1\n"), "REG900")
    assert span(f) == (3, 3, 3, 8)
    assert "bogus" in f.message


def test_reg900_unknown_rule_code_line():
    f = only(_config_findings("rules:\n  REG040: off\n  REG999: warning\n"), "REG900")
    assert f.span.line == 3
    assert "REG999" in f.message


def test_reg900_bad_severity_value_line():
    f = only(_config_findings("rules:\n  REG040: loud\n"), "REG900")
    assert f.span.line == 2


def test_reg900_bad_severity_value_on_a_later_line():
    f = only(_config_findings("rules:\n  REG040: off\n  REG030: loud\n"), "REG900")
    assert f.span.line == 3, f"points at line {f.span.line}: {f.message}"


def test_reg900_invalid_config_fails_the_check_and_is_not_silently_defaults():
    report = check(**{CFG: "budgets: [1, 2]\n"})
    assert report.failed
    assert only(report.findings, "REG900").span.line == 1


def test_reg900_negative_valid_config():
    assert _config_findings("rules:\n  REG040: off\ncalibration:\n  margin: 1.2\n") == []


def test_rules_off_turns_a_rule_off():
    src = {"tests/e2e/test_foo_2xGPU.py": test_file(GOOD_ROCM)}
    assert "REG040" in rules_of(check(**src).findings)
    assert "REG040" not in rules_of(check(**src, **{CFG: "rules:\n  REG040: off\n"}).findings)


def test_rules_severity_override():
    src = {"tests/e2e/test_foo_2xGPU.py": test_file(GOOD_ROCM)}
    report = check(**src, **{CFG: "rules:\n  REG040: failure\n"})
    assert only(report.findings, "REG040").severity is Severity.FAILURE
    assert report.failed
    report = check(**{"tests/e2e/test_none.py": "x = 1\n", CFG: "rules:\n  REG004: notice\n"})
    assert only(report.findings, "REG004").severity is Severity.NOTICE
    assert not report.failed


# --------------------------------------------------------------------------------------------
# REG901: the contract cannot be read statically

INVENTORY_EXPRESSIONS = '''\
from tests.ci.ci_register import HWBackend

ROCM = ["stage-c-4-gpu-mi350"]
NIGHTLY = ["nightly-stage-c-8-gpu-mi350", "nightly-stage-c-4-gpu-mi350"]
MORE = ("nightly-stage-c-2-gpu-mi350",)
CPU_BASE = ["stage-a-cpu"]
CUDA_A = ["stage-b-2-gpu-h200", "stage-c-8-gpu-h100"]
CUDA_B = ["stage-c-8-gpu-h200", "stage-c-4-gpu-h200", "stage-c-2-gpu-h200"]
CI_SUITES = {
    HWBackend.CPU: list(CPU_BASE) + ["stage-b-cpu"],
    HWBackend.CUDA: CUDA_A + CUDA_B,
    HWBackend.ROCM: [*ROCM, *NIGHTLY, *MORE],
}
'''


def test_reg901_inventory_expressions_resolve():
    report = check(**{"tests/ci/run_suite.py": INVENTORY_EXPRESSIONS})
    assert clean(report) == []
    # and the resolved names are really used: a typo is still caught
    found = regs('register_rocm_ci(est_time=10, suite="nightly-stage-c-2-gpu-mi35", labels=["long"])', **{"tests/ci/run_suite.py": INVENTORY_EXPRESSIONS})
    assert only(found, "REG010").suggestion == '"nightly-stage-c-2-gpu-mi350"'


def test_reg901_unresolvable_entry_does_not_fail_every_registration():
    inventory = INVENTORY_EXPRESSIONS.replace("[*ROCM, *NIGHTLY, *MORE]", "[*ROCM, *NIGHTLY, extra_suites()]")
    report = check(**{"tests/ci/run_suite.py": inventory, P: test_file('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi35", labels=["long"])')})
    f = only(report.findings, "REG901")
    assert f.file == "tests/ci/run_suite.py"
    assert span(f) == (12, 39, 12, 53)
    assert f.severity is Severity.WARNING
    assert "REG010" not in rules_of(report.findings)  # rocm names are not judged from a partial list
    assert "REG014" not in rules_of(report.findings)
    # the readable backends are still checked
    report = check(**{"tests/ci/run_suite.py": inventory, P: test_file('register_cuda_ci(est_time=10, suite="stage-c-4-gpu-h20", labels=["long"])')})
    assert only(report.findings, "REG010").file == P


def test_reg901_unbound_name():
    inventory = INVENTORY_EXPRESSIONS.replace('CPU_BASE = ["stage-a-cpu"]\n', "")
    report = check(**{"tests/ci/run_suite.py": inventory})
    f = only(report.findings, "REG901")
    assert span(f) == (9, 25, 9, 33)
    assert "CPU_BASE" in f.message


def test_reg901_inventory_not_a_dict():
    f = only(check(**{"tests/ci/run_suite.py": "CI_SUITES = build()\n"}).findings, "REG901")
    assert span(f) == (1, 13, 1, 20)
    report = check(**{"tests/ci/run_suite.py": "CI_SUITES = build()\n", P: test_file('register_rocm_ci(est_time=10, suite="anything", labels=["long"])')})
    assert "REG010" not in rules_of(report.findings)


def test_reg901_missing_inventory():
    files = miles_tree()
    del files["tests/ci/run_suite.py"]
    f = only(check(files).findings, "REG901")
    assert f.file == "tests/ci/run_suite.py" and f.span.line == 1


PER_COMMIT_AND_NIGHTLY = '''\
from tests.ci.ci_register import HWBackend

PER_COMMIT_SUITES = {
    HWBackend.CPU: ["stage-a-cpu", "stage-b-cpu"],
    HWBackend.CUDA: ["stage-b-2-gpu-h200", "stage-c-8-gpu-h100", "stage-c-8-gpu-h200", "stage-c-4-gpu-h200", "stage-c-2-gpu-h200"],
    HWBackend.ROCM: ["stage-c-4-gpu-mi350"],
}
NIGHTLY_SUITES = {
    HWBackend.ROCM: ["nightly-stage-c-8-gpu-mi350", "nightly-stage-c-4-gpu-mi350", "nightly-stage-c-2-gpu-mi350"],
}
'''


def test_reg901_per_commit_and_nightly_suites_via_config():
    cfg = "paths:\n  suites_variables: [PER_COMMIT_SUITES, NIGHTLY_SUITES]\n"
    report = check(**{"tests/ci/run_suite.py": PER_COMMIT_AND_NIGHTLY, CFG: cfg})
    assert clean(report) == []
    report = check(**{"tests/ci/run_suite.py": PER_COMMIT_AND_NIGHTLY, CFG: cfg, P: test_file('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi35", labels=["long"])')})
    assert only(report.findings, "REG010").suggestion == '"nightly-stage-c-4-gpu-mi350"'


def test_per_commit_layout_without_config_is_read_from_the_module():
    """The default names CI_SUITES; a module that binds none reads as the dicts it keys by HWBackend."""
    report = check(**{"tests/ci/run_suite.py": PER_COMMIT_AND_NIGHTLY})
    assert clean(report) == []
    report = check(**{"tests/ci/run_suite.py": PER_COMMIT_AND_NIGHTLY, P: test_file('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi35", labels=["long"])')})
    assert only(report.findings, "REG010").suggestion == '"nightly-stage-c-4-gpu-mi350"'


def test_reg901_a_configured_variable_the_module_lacks():
    report = check(**{"tests/ci/run_suite.py": PER_COMMIT_AND_NIGHTLY, CFG: "paths:\n  suites_variables: [SUITES]\n"})
    f = only(report.findings, "REG901")
    assert "SUITES" in f.message
    assert "REG010" not in rules_of(report.findings) and "REG014" not in rules_of(report.findings)


def test_reg901_labels_unreadable_skips_label_checks():
    report = check(**{"tests/ci/labels.py": "KNOWN_LABELS = load()\n", P: test_file('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi350", labels=["whatever"])')})
    f = only(report.findings, "REG901")
    assert f.file == "tests/ci/labels.py" and span(f) == (1, 16, 1, 22)
    assert "REG002" not in rules_of(report.findings)


# --------------------------------------------------------------------------------------------
# bad input: findings, never an exception


def _never_raises(data: bytes, path: str = P):
    report = check(**{path: data})
    return [f for f in report.findings if f.file == path]


def test_bad_input_empty_file():
    assert rules_of(_never_raises(b"")) == {"REG004"}
    assert _never_raises(b"", "tests/fast/test_empty.py") == []


def test_bad_input_3mb_file():
    data = test_file(GOOD_ROCM).encode() + (b"x = 1  # " + b"y" * 80 + b"\n") * 34000
    assert len(data) > 3_000_000
    assert _never_raises(data) == []


def test_bad_input_3mb_file_without_registration():
    data = (b"x = 1  # " + b"y" * 80 + b"\n") * 34000
    assert rules_of(_never_raises(data)) == {"REG004"}


def test_bad_input_500_nested_parentheses():
    data = ("register_rocm_ci(est_time=" + "(" * 500 + "1" + ")" * 500 + ', suite="nightly-stage-c-4-gpu-mi350", labels=["long"])\n').encode()
    f = only(_never_raises(data), "REG001")
    assert f.span.line == 1


def test_bad_input_100k_nested_list():
    data = ('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi350", labels=' + "[" * 100000 + "]" * 100000 + ")\n").encode()
    assert rules_of(_never_raises(data)) == {"REG001"}


def test_bad_input_100k_unary_minus():
    data = ("register_rocm_ci(est_time=" + "-" * 100000 + '1, suite="nightly-stage-c-4-gpu-mi350", labels=["long"])\n').encode()
    assert rules_of(_never_raises(data)) == {"REG001"}


def test_bad_input_deep_binop_around_an_invisible_call():
    # ast.parse accepts this depth; the REG003 search must not recurse past Python's limit
    data = ('x = register_rocm_ci(est_time=1, suite="a", labels=["long"])' + " + 1" * 1500 + "\n").encode()
    found = _never_raises(data)
    assert "REG003" in rules_of(found) or "REG001" in rules_of(found)


def test_bad_input_deep_attribute_chain_in_attribute_call():
    data = ("x = (a" + ".b" * 1500 + ').register_rocm_ci(est_time=1, suite="a", labels=["long"])\n').encode()
    assert _never_raises(data)


def test_bad_input_deep_inventory_expression():
    inventory = "A = ['stage-a-cpu']\nCI_SUITES = {HWBackend.CPU: A" + " + A" * 1500 + "}\n"
    report = check(**{"tests/ci/run_suite.py": inventory})
    assert {f.rule for f in report.findings if f.file == "tests/ci/run_suite.py"} <= {"REG901"}


def test_bad_input_deep_if_nesting():
    data = ("".join("    " * i + "if x:\n" for i in range(99)) + "    " * 99 + GOOD_ROCM + "\n").encode()
    f = only(_never_raises(data), "REG003")
    assert span(f) == (100, 397, 100, 480)


def test_bad_input_lone_carriage_returns_do_not_crash():
    # Python's tokenizer counts a lone CR as a line break; "\n"-split lines do not
    data = b"x = 1\rx = 2\rregister_rocm_ci(est_time=1, suite='nightly-stage-c-4-gpu-mi350', labels=['long'])\n"
    found = _never_raises(data)
    for f in found:
        assert f.span.line == 1, f  # the file has one line as git and GitHub count lines


def test_bad_input_crlf_line_endings_keep_positions():
    data = test_file('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi35", labels=["long"])').replace("\n", "\r\n").encode()
    f = only(_never_raises(data), "REG010")
    assert span(f) == (3, 37, 3, 65)


@pytest.mark.parametrize(
    "data",
    [
        b"\x00",
        b"\xff",
        b"register_rocm_ci(",
        b"register_rocm_ci(\xff)",
        b"\x00register_rocm_ci()",
        b"register_rocm_ci()" * 3,
        b"register_rocm_ci(est_time=1, suite='x', labels=['a'], labels=['b'])\r\nregister_cuda_ci()\r",
        b"\xef\xbb\xbfregister_cpu_ci(1, 'stage-a-cpu')",
        "register_rocm_ci(est_time=1, suite='ß', labels=['é'])\n".encode("utf-16"),
        b"register_rocm_ci(est_time=1, suite='\\N{bogus}')\n",
        b"def f(\n" * 300,
    ],
)
def test_bad_input_odd_bytes(data):
    for f in _never_raises(data):
        assert f.span.line >= 1 and f.span.column >= 1


def test_scan_file_direct_bad_inputs():
    contract = Contract()
    for data in (b"", b"\xff\x00", b"(" * 500 + b"1" + b")" * 500, b"[" * 100000 + b"]" * 100000):
        scan = scan_file(P, data, contract, exact=True)
        for f in scan.findings:
            assert f.span.line >= 1 and f.span.column >= 1


def test_read_contract_of_the_fixture():
    contract = read_contract(MemoryTree(miles_tree()), Config())
    assert contract.findings == []
    assert "nightly-stage-c-4-gpu-mi350" in contract.suite_names(next(b for b in contract.suites if b.value == "rocm"))
    assert contract.labels and "fully-async" in contract.labels


# --------------------------------------------------------------------------------------------
# diff mode: REG012, REG050, and re-validation when the inventory changes

PPO = "tests/e2e/megatron/test_qwen3_4B_ppo.py"
FSDP = "tests/e2e/fsdp/test_qwen3_0.6B_fsdp_distributed.py"


def test_reg012_move_out_of_the_nightly_namespace():
    head = miles_tree(**{FSDP: test_file(
        'register_cuda_ci(est_time=2200, suite="stage-c-4-gpu-h200", labels=["long"])',
        'register_rocm_ci(est_time=2400, suite="stage-c-4-gpu-mi350", labels=["long"])',
    )})
    report = check_tree(MemoryTree(head), MemoryTree(miles_tree()), {FSDP: FSDP}, consumers_from=miles.CONSUMERS)
    f = only(report.findings, "REG012")
    assert (f.file, span(f)) == (FSDP, (4, 39, 4, 60))
    assert f.severity is Severity.NOTICE
    assert "sgl-project/sglang" in f.message and "pr-test-rocm.yml" in f.message


def test_reg050_registration_removed_and_file_deleted():
    head = miles_tree(**{PPO: test_file('register_cuda_ci(est_time=700, suite="stage-c-8-gpu-h200", labels=["megatron"])')})
    report = check_tree(MemoryTree(head), MemoryTree(miles_tree()), {PPO: PPO})
    f = only(report.findings, "REG050")
    assert f.file == PPO and "rocm" in f.message
    head = miles_tree()
    del head[PPO]
    report = check_tree(MemoryTree(head), MemoryTree(miles_tree()), {PPO: PPO})
    assert sorted(span(f)[:2] for f in report.findings if f.rule == "REG050") == [(3, 1), (4, 1)]


def test_inventory_change_revalidates_untouched_files():
    run_suite = miles.RUN_SUITE.replace('        "nightly-stage-c-4-gpu-mi350",\n', "")
    head = miles_tree(**{"tests/ci/run_suite.py": run_suite})
    report = check_tree(MemoryTree(head), MemoryTree(miles_tree()), {"tests/ci/run_suite.py": "tests/ci/run_suite.py"})
    f = only(report.findings, "REG010")
    assert (f.file, span(f)) == (FSDP, (4, 39, 4, 68))
    assert f.suggestion == '"stage-c-4-gpu-mi350"'  # the same name across the nightly- boundary


def test_diff_mode_unchanged_file_is_not_rechecked():
    head = miles_tree(**{"tests/e2e/test_new.py": test_file(GOOD_CPU)})
    report = check_tree(MemoryTree(head), MemoryTree(miles_tree()), {"tests/e2e/test_new.py": None})
    assert report.files_checked == 1
    assert [r.change.value for r in report.registrations] == ["added"]


# --------------------------------------------------------------------------------------------
# workflow reading: positions and hostile YAML


def test_reg014_points_at_the_step_not_at_an_earlier_comment():
    wf = "# stage-b-cpux was renamed\n" + miles.PR_TEST.replace("--suite stage-b-cpu", "--suite stage-b-cpux")
    f = only(check(**{".github/workflows/pr-test.yml": wf}).findings, "REG014")
    assert span(f) == (10, 61, 10, 73), f"points at {span(f)}, the comment on line 1"


def _alias_bomb(levels: int) -> str:
    anchors = ['  a0: &a0 ["--suite stage-a-cpu"]']
    anchors += [f"  a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels + 1)]
    return "on: push\nx:\n" + "\n".join(anchors) + f"\njobs:\n  j:\n    steps:\n      - run: echo\n        with: *a{levels}\n"


@pytest.mark.timeout(5)
def test_workflow_yaml_alias_bomb_does_not_hang_the_check():
    # a 1 KB workflow in a PR whose aliases expand to 10**6 strings: walking the expanded tree
    # takes ~30 s (10**7: minutes); the check must stay linear in the file's size
    report = check(**{".github/workflows/bomb.yml": _alias_bomb(6)})
    assert report is not None


def test_excluded_file_names_are_not_discovered():
    """paths.test_excludes: sglang discovers every *.py under test/registered but conftest.py and __init__.py."""
    from checks.config.schema import load_config
    from checks.engine import discover

    config, findings = load_config("paths:\n  test_roots: [test/registered]\n  test_pattern: '*.py'\n"
                                   "  test_excludes: [conftest.py, __init__.py]\n")
    assert findings == []
    paths = ["test/registered/a/__init__.py", "test/registered/a/conftest.py", "test/registered/a/test_x.py",
             "test/registered/a/helper.py", "test/other/test_y.py"]
    assert discover(paths, config) == ["test/registered/a/helper.py", "test/registered/a/test_x.py"]
