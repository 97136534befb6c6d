"""REG010 (unknown suite), checks/ruleset/reg010_unknown_suite.py: driven by its fixtures, REG010/
beside this module (test_rule_fixtures.py describes them), and its cases on miles-shaped source
written here.

Spans are 1-based, end_column exclusive. Each positive case asserts the exact line and column.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.model import Severity

from tests import FIXTURES
from tests.checks.ruleset.rule_support import (
    GOOD_CPU,
    GOOD_CUDA,
    GOOD_ROCM,
    check,
    check_fixture,
    fixture_files,
    fixture_id,
    only,
    regs,
    rules_of,
    span,
)
from tests.fixtures.miles import test_file


@pytest.mark.parametrize("fixture", fixture_files("REG010"), ids=fixture_id)
def test_fixture(fixture: Path):
    """Each fixture in REG010/ beside this module gets exactly the findings its `# expect:` lines state."""
    check_fixture(fixture)


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


def test_reg010_messages_for_a_validated_and_a_disabled_unvalidated_backend(tmp_path):
    import shutil
    from pathlib import Path

    from checks.engine import check_tree
    from checks.scanning.tree import DirectoryTree
    from tests.fixtures.sglang import SGLANG_CONFIG

    # miles validates rocm suites: the runner rejects the name
    report = check(**{"tests/e2e/test_typo.py": test_file('register_rocm_ci(est_time=60, suite="stage-c-4-gpu-mi35", labels=["amd"])')})
    f = only([f for f in report.findings if f.file == "tests/e2e/test_typo.py"], "REG010")
    assert f.severity.value == "failure" and "so the runner rejects this registration" in f.message
    assert "never runs" not in f.message  # REG013 is the one finding that says so
    assert "does not validate" not in f.message
    # sglang (August 2026) validates no AMD suite: a disabled registration there is a warning that says so
    tree = tmp_path / "sglang"
    shutil.copytree(FIXTURES / "targets" / "sglang" / "r2026-08-22-382343f", tree)
    (tree / "test/registered/amd").mkdir(parents=True, exist_ok=True)
    (tree / "test/registered/amd/test_off.py").write_text(
        'from sglang.test.ci.ci_register import register_amd_ci\n\n'
        'register_amd_ci(est_time=60, suite="nightly-amd-off-1-gpu", disabled="no runner yet")\n')
    found = [f for f in check_tree(DirectoryTree(tree), config_text=SGLANG_CONFIG).findings
             if f.rule == "REG010" and f.file == "test/registered/amd/test_off.py"]
    assert [f.severity.value for f in found] == ["warning"]
    assert "the runner does not validate AMD suites against it" in found[0].message
