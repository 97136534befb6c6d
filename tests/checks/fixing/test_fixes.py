"""The libcst fixes: a REG010 correction changes one argument and keeps everything else."""

from __future__ import annotations

import pytest

from checks.target.contract import Contract
from checks.engine import check_tree
from checks.fixing.fixes import LINE_LENGTH, replace_argument
from checks.scanning.registrations import scan_file
from checks.scanning.tree import MemoryTree
from tests.fixtures.miles import miles_tree

P = "tests/e2e/test_x.py"
HEADER = "from tests.ci.ci_register import register_cpu_ci, register_cuda_ci, register_rocm_ci\n\n"
FIRST = 3  # the registration starts on line 3, after HEADER


def reg010(source: str):
    """The one REG010 finding of `source` (checked in the miles tree) and the file's lines."""
    report = check_tree(MemoryTree(miles_tree(**{P: source})))
    hits = [f for f in report.findings if f.file == P and f.rule == "REG010"]
    assert len(hits) == 1, [(f.rule, f.message) for f in report.findings]
    return hits[0], source.split("\n")


def fixed_file(source: str) -> str:
    """The whole file after applying the finding's whole-line fix."""
    finding, lines = reg010(source)
    fix = finding.fix
    assert fix is not None, finding
    assert fix.file == P
    return "\n".join(lines[: fix.start_line - 1] + fix.text.split("\n") + lines[fix.end_line :])


def test_multiline_call_with_trailing_comma_and_comment_keeps_its_formatting():
    call = (
        "register_rocm_ci(\n"
        "    est_time=2400,\n"
        '    suite="nightly-stage-c-4-gpu-mi35",  # the nightly suite\n'
        '    labels=["long"],\n'
        ")\n"
    )
    finding, _ = reg010(HEADER + call)
    assert (finding.span.line, finding.span.column, finding.span.end_line, finding.span.end_column) == (5, 11, 5, 39)
    assert finding.suggestion == '"nightly-stage-c-4-gpu-mi350"'
    fix = finding.fix
    assert (fix.start_line, fix.end_line) == (3, 7)
    assert fix.text == (
        "register_rocm_ci(\n"
        "    est_time=2400,\n"
        '    suite="nightly-stage-c-4-gpu-mi350",  # the nightly suite\n'
        '    labels=["long"],\n'
        ")"
    )


def test_trailing_comment_after_the_call_is_kept():
    line = 'register_rocm_ci(est_time=2400, suite="nightly-stage-c-4-gpu-mi35", labels=["long"])  # calibrated on MI355X'
    finding, _ = reg010(HEADER + line + "\n")
    assert (finding.fix.start_line, finding.fix.end_line) == (3, 3)
    assert finding.fix.text == line.replace("mi35", "mi350")


def test_positional_suite_argument():
    line = 'register_rocm_ci(800, "nightly-stage-c-4-gpu-mi35", labels=["long"])'
    finding, _ = reg010(HEADER + line + "\n")
    assert (finding.span.line, finding.span.column, finding.span.end_column) == (3, 23, 51)
    assert finding.fix.text == 'register_rocm_ci(800, "nightly-stage-c-4-gpu-mi350", labels=["long"])'


def test_positional_suite_is_not_confused_with_est_time():
    # the value 800 must stay where it is even though it is the first positional
    line = 'register_rocm_ci(800, "nightly-stage-c-4-gpu-mi35", labels=["long"], nightly=True)'
    finding, _ = reg010(HEADER + line + "\n")
    assert finding.fix.text == 'register_rocm_ci(800, "nightly-stage-c-4-gpu-mi350", labels=["long"], nightly=True)'


def test_wrap_when_the_fix_pushes_the_line_over_120_columns():
    line = 'register_rocm_ci(est_time=24, suite="nightly-stage-c-4-gpu-mi35", labels=["long", "megatron", "sglang", "fsdp", "ckpt"])'
    assert len(line) == LINE_LENGTH == 120  # the fix adds one character
    finding, _ = reg010(HEADER + line + "\n")
    # black --line-length 120 output for the corrected statement
    assert finding.fix.text == (
        "register_rocm_ci(\n"
        '    est_time=24, suite="nightly-stage-c-4-gpu-mi350", labels=["long", "megatron", "sglang", "fsdp", "ckpt"]\n'
        ")"
    )
    assert (finding.fix.start_line, finding.fix.end_line) == (3, 3)
    assert all(len(x) <= 120 for x in finding.fix.text.split("\n"))


def test_no_wrap_at_exactly_120_columns():
    line = 'register_rocm_ci(est_time=24, suite="nightly-stage-c-4-gpu-mi35", labels=["long", "megatron", "sglang", "fsdp", "amd"])'
    assert len(line) == 119  # 120 after the fix: still fits
    finding, _ = reg010(HEADER + line + "\n")
    assert finding.fix.text == line.replace("mi35", "mi350")
    assert "\n" not in finding.fix.text


def test_wrap_one_argument_per_line_when_the_arguments_do_not_fit_one_line():
    line = (
        'register_rocm_ci(est_time=2400, suite="nightly-stage-c-4-gpu-mi35", labels=["long", "megatron", "sglang", "fsdp", "ckpt"], '
        "nightly=True, disabled=None)"
    )
    finding, _ = reg010(HEADER + line + "\n")
    # black --line-length 120 output
    assert finding.fix.text == (
        "register_rocm_ci(\n"
        "    est_time=2400,\n"
        '    suite="nightly-stage-c-4-gpu-mi350",\n'
        '    labels=["long", "megatron", "sglang", "fsdp", "ckpt"],\n'
        "    nightly=True,\n"
        "    disabled=None,\n"
        ")"
    )


def test_wrap_with_magic_trailing_comma_explodes_one_per_line():
    line = 'register_rocm_ci(est_time=24, suite="nightly-stage-c-4-gpu-mi35", labels=["long", "megatron", "sglang", "ckpt", "amd"],)'
    assert len(line) == 120
    finding, _ = reg010(HEADER + line + "\n")
    assert finding.fix.text == (
        "register_rocm_ci(\n"
        "    est_time=24,\n"
        '    suite="nightly-stage-c-4-gpu-mi350",\n'
        '    labels=["long", "megatron", "sglang", "ckpt", "amd"],\n'
        ")"
    )


def test_wrap_keeps_a_trailing_comment_after_the_closing_parenthesis():
    line = 'register_rocm_ci(est_time=2400, suite="nightly-stage-c-4-gpu-mi35", labels=["long", "megatron", "sglang"])  # MI355X run'
    assert len(line) == 120  # the fix makes it 121: over the line length
    finding, _ = reg010(HEADER + line + "\n")
    # black --line-length 120 output: the comment stays with the closing parenthesis
    assert finding.fix.text == (
        "register_rocm_ci(\n"
        '    est_time=2400, suite="nightly-stage-c-4-gpu-mi350", labels=["long", "megatron", "sglang"]\n'
        ")  # MI355X run"
    ), f"fix leaves a {max(len(x) for x in finding.fix.text.split(chr(10)))}-column line: {finding.fix.text!r}"


def test_only_the_one_argument_changes_with_odd_formatting():
    line = "register_rocm_ci( est_time = 2400 ,suite='nightly-stage-c-4-gpu-mi35',labels=[ 'long' ] ,nightly = True )"
    finding, _ = reg010(HEADER + line + "\n")
    assert finding.fix.text == line.replace("'nightly-stage-c-4-gpu-mi35'", '"nightly-stage-c-4-gpu-mi350"')


def test_only_the_one_registration_statement_changes():
    source = (
        HEADER
        + 'register_cuda_ci(est_time=2200, suite="stage-c-4-gpu-h200", labels=["long"])  # CUDA\n'
        + 'register_rocm_ci(\n    est_time=2400,\n    suite="nightly-stage-c-4-gpu-mi35",\n    labels=["long"],\n)\n'
        + "\n\ndef test_it():\n    assert True\n"
    )
    after = fixed_file(source)
    assert after == source.replace('"nightly-stage-c-4-gpu-mi35"', '"nightly-stage-c-4-gpu-mi350"')


def test_semicolon_statement_keeps_the_rest_of_the_line():
    line = 'register_rocm_ci(est_time=2400, suite="stage-c-4-gpu-mi35", labels=["long"]); x = 1'
    finding, _ = reg010(HEADER + line + "\n")
    assert finding.fix.text == line.replace('"stage-c-4-gpu-mi35"', '"stage-c-4-gpu-mi350"')


def test_no_fix_when_the_correction_is_not_confident():
    finding, _ = reg010(HEADER + 'register_rocm_ci(est_time=10, suite="nightly-stage-c-6-gpu-mi350", labels=["long"])\n')
    assert finding.suggestion is None and finding.fix is None


def test_fixed_file_is_clean():
    source = HEADER + 'register_rocm_ci(\n    est_time=2400,\n    suite="nightly-stage-c-4-gpu-mi35",  # x\n    labels=["long"],\n)\n'
    after = fixed_file(source)
    report = check_tree(MemoryTree(miles_tree(**{P: after})))
    assert [f for f in report.findings if f.file == P] == []


# --- replace_argument directly (est_time calibration fixes use it too) ------------------------


def _registration(source: str):
    scan = scan_file(P, source.encode(), Contract())
    assert scan.registrations, scan.findings
    return scan.registrations[0], source.split("\n")


def test_replace_est_time_keyword():
    reg, lines = _registration(HEADER + 'register_rocm_ci(est_time=2400, suite="nightly-stage-c-4-gpu-mi350", labels=["long"])  # x\n')
    fix = replace_argument(lines, reg, "est_time", "2760", position=0)
    assert fix.text == 'register_rocm_ci(est_time=2760, suite="nightly-stage-c-4-gpu-mi350", labels=["long"])  # x'
    assert (fix.start_line, fix.end_line) == (FIRST, FIRST)


def test_replace_est_time_positional():
    reg, lines = _registration(HEADER + 'register_rocm_ci(2400, "nightly-stage-c-4-gpu-mi350", labels=["long"])\n')
    fix = replace_argument(lines, reg, "est_time", "2760", position=0)
    assert fix.text == 'register_rocm_ci(2760, "nightly-stage-c-4-gpu-mi350", labels=["long"])'


def test_replace_does_not_touch_nested_calls():
    reg, lines = _registration(HEADER + 'register_rocm_ci(est_time=2400, suite="s", labels=["long"], disabled=str(dict(suite="s")))\n')
    fix = replace_argument(lines, reg, "suite", '"t"', position=1)
    assert fix.text == 'register_rocm_ci(est_time=2400, suite="t", labels=["long"], disabled=str(dict(suite="s")))'


def test_replace_with_the_same_value_is_no_fix():
    reg, lines = _registration(HEADER + 'register_rocm_ci(est_time=2400, suite="s", labels=["long"])\n')
    assert replace_argument(lines, reg, "suite", '"s"', position=1) is None


def test_replace_missing_argument_is_no_fix():
    reg, lines = _registration(HEADER + 'register_cpu_ci(est_time=2400, suite="s")\n')
    assert replace_argument(lines, reg, "labels", '["x"]') is None


@pytest.mark.parametrize("bad", ["(", "1 +", "]"])
def test_replace_with_unparsable_value_is_no_fix(bad):
    reg, lines = _registration(HEADER + 'register_cpu_ci(est_time=2400, suite="s")\n')
    assert replace_argument(lines, reg, "suite", bad, position=1) is None


# --- other statements on the registration's line -------------------------------------------


def test_only_the_registration_call_changes_when_another_call_shares_the_line():
    line = 'foo(1, "x"); register_rocm_ci(800, "nightly-stage-c-4-gpu-mi35", labels=["long"])'
    finding, _ = reg010(HEADER + line + "\n")
    assert finding.fix.text == 'foo(1, "x"); register_rocm_ci(800, "nightly-stage-c-4-gpu-mi350", labels=["long"])'


def test_fix_never_drops_the_registration_when_another_call_shares_the_line():
    line = 'foo(suite="x"); register_rocm_ci(est_time=800, suite="nightly-stage-c-4-gpu-mi35", labels=["long"])'
    finding, _ = reg010(HEADER + line + "\n")
    assert finding.fix.text == 'foo(suite="x"); register_rocm_ci(est_time=800, suite="nightly-stage-c-4-gpu-mi350", labels=["long"])'


def test_crlf_file_fix_text_has_no_stray_carriage_return():
    src = (HEADER + 'register_rocm_ci(est_time=2400, suite="nightly-stage-c-4-gpu-mi35", labels=["long"])\n').replace("\n", "\r\n")
    finding, _ = reg010(src)
    assert not finding.fix.text.endswith("\r")
