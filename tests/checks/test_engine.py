"""The check engine across its rules, on miles-shaped source written here: the fixture repository is
clean, bad input gives findings and never an exception, diff mode re-validates what an inventory change
touches, hostile workflow YAML. Each rule's own tests sit with its fixtures (tests/checks/ruleset/).
"""

from __future__ import annotations

import pytest

from checks.engine import check_tree
from checks.scanning.registrations import scan_file
from checks.scanning.tree import MemoryTree
from checks.config.schema import Config
from checks.target.contract import Contract, read_contract

from tests.checks.ruleset.rule_support import (
    FSDP,
    GOOD_CPU,
    GOOD_CUDA,
    GOOD_ROCM,
    P,
    check,
    clean,
    only,
    regs,
    rules_of,
    span,
)
from tests.fixtures import miles
from tests.fixtures.miles import miles_tree, test_file


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
