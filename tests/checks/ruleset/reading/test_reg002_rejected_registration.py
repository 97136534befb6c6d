"""REG002 (rejected registration), checks/ruleset/reading/reg002_rejected_registration.py: driven by its
fixtures, REG002/ beside this module (test_rule_fixtures.py describes them), and its cases on miles-
shaped source written here.

Spans are 1-based, end_column exclusive. Each positive case asserts the exact line and column.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.model import Severity

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
from tests.fixtures import miles
from tests.fixtures.miles import test_file


@pytest.mark.parametrize("fixture", fixture_files("REG002"), ids=fixture_id)
def test_fixture(fixture: Path):
    """Each fixture in REG002/ beside this module gets exactly the findings its `# expect:` lines state."""
    check_fixture(fixture)


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
