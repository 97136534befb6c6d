"""The runner's contract read from its code (checks/target/runner.py, checks/contract.resolve_validity):
discovery, sanity_check, implicit-CPU roots, validity, open backends. Small synthetic targets."""

from __future__ import annotations

import re

import pytest

from checks.config.schema import load_config
from checks.target.contract import read_contract
from checks.engine import check_tree, discover
from checks.model import Backend
from checks.target.runner import _glob_regex
from checks.scanning.tree import MemoryTree

REGISTER = '''
from enum import Enum, auto

class HWBackend(Enum):
    CPU = auto()
    CUDA = auto()
    AMD = auto()
    TPU = auto()

def register_cpu_ci(est_time: float, suite: str, nightly: bool = False, disabled=None):
    return None

def register_amd_ci(est_time: float, suite: str, nightly: bool = False, disabled=None):
    return None

def register_tpu_ci(est_time: float, suite: str, nightly: bool = False, disabled=None):
    return None

def register_unmapped_ci(est_time: float, suite: str):
    return None

REGISTER_MAPPING = {
    "register_cpu_ci": HWBackend.CPU,
    "register_amd_ci": HWBackend.AMD,
    "register_tpu_ci": HWBackend.TPU,
}

def collect_tests(files, sanity_check: bool = True):
    return []
'''

RUNNER = '''
import glob
import os

from ci.ci_register import HWBackend, collect_tests

SUITES = {
    HWBackend.CPU: ["cpu-suite"],
    HWBackend.AMD: ["amd-suite", "stage-c-4-gpu-mi350", "stage-c-4-gpu-h200"],
    HWBackend.TPU: ["tpu-suite"],
}

ROOTS = ("t/a", "t/b")


def _keep(filename):
    base = os.path.basename(filename)
    return base != "helper.py" and not base.startswith("_")


def run_a_suite(args):
    script_dir = os.path.dirname(os.path.abspath(__file__))
    files = [f for f in glob.glob(os.path.join(script_dir, "reg", "**", "*.py"), recursive=True) if _keep(f)]
    for root in ROOTS:
        files.extend(glob.glob(f"{root}/**/test_*.py", recursive=True))
    strict = SANITY
    all_tests = collect_tests(files, sanity_check=strict)
'''

CONFIG = "paths:\n  register_module: ci/ci_register.py\n  suites_module: ci/run_suite.py\nconsumers: []\n"


def tree(sanity: str = "True", runner: str = RUNNER, **files: str) -> dict[str, str]:
    out = {"ci/ci_register.py": REGISTER, "ci/run_suite.py": runner.replace("SANITY", sanity), ".github/ci-registrar.yml": CONFIG}
    out.update(files)
    return out


def contract_of(files: dict[str, str]):
    config, findings = load_config(files.get(".github/ci-registrar.yml"))
    assert findings == []
    return read_contract(MemoryTree(files), config), config


def test_backends_come_from_the_modules_map_and_are_open():
    contract, _ = contract_of(tree())
    assert contract.functions == {"register_cpu_ci": Backend.CPU, "register_amd_ci": Backend.AMD, "register_tpu_ci": Backend("tpu")}
    assert Backend("tpu").value == "tpu" and Backend("tpu").is_gpu
    assert Backend.AMD.family is Backend.ROCM and Backend.ROCM.family is Backend.ROCM
    assert contract.suite_names(Backend("tpu")) == {"tpu-suite"}
    assert not [f for f in contract.findings if f.rule == "REG901"]


def test_discovery_is_read_from_the_runner():
    files = tree(**{
        "ci/reg/x/test_one.py": "", "ci/reg/helper.py": "", "ci/reg/_private.py": "", "ci/reg/any.py": "",
        "t/a/deep/test_two.py": "", "t/a/deep/other.py": "", "t/b/test_three.py": "", "t/c/test_no.py": "",
        "ci/reg/.hidden/test_h.py": "",
    })
    contract, config = contract_of(files)
    assert discover(files, config, contract) == ["ci/reg/any.py", "ci/reg/x/test_one.py", "t/a/deep/test_two.py", "t/b/test_three.py"]
    assert contract.facts.discovery_where == "ci/run_suite.py:27"


@pytest.mark.parametrize("sanity, severity", [("True", "failure"), ("False", "warning")])
def test_unregistered_file_follows_sanity_check(sanity, severity):
    files = tree(sanity, **{"t/a/test_none.py": "def test_x():\n    pass\n"})
    report = check_tree(MemoryTree(files))
    (f,) = [f for f in report.findings if f.rule == "REG004"]
    assert f.severity.value == severity
    if severity == "warning":
        assert "sanity_check=False" in f.message


def test_configured_validity_wins_over_the_code():
    files = tree("False", **{"t/a/test_none.py": "x = 1\n"})
    files[".github/ci-registrar.yml"] = CONFIG + "validity:\n  unregistered_file: failure\n"
    report = check_tree(MemoryTree(files))
    assert [f.severity.value for f in report.findings if f.rule == "REG004"] == ["failure"]


def test_unreadable_discovery_is_a_failure_that_names_it():
    runner = RUNNER.replace("files.extend(glob.glob(", "files.extend(mystery(")
    files = tree(runner=runner, **{"t/a/test_none.py": "x = 1\n"})
    contract, _ = contract_of(files)
    assert contract.discovery is None
    (f,) = [f for f in contract.findings if f.rule == "REG901"]
    assert "cannot be read" in f.message and f.severity.value == "failure"  # never a silent pass on a guess
    assert contract.unregistered_severity == "warning"


def test_registration_of_an_open_backend_is_read_and_an_unmapped_function_is_not_collected():
    test = "from ci.ci_register import register_tpu_ci, register_unmapped_ci\n\nregister_tpu_ci(10, \"tpu-suite\")\nregister_unmapped_ci(10, \"x\")\n"
    files = tree(**{"t/a/test_t.py": test})
    report = check_tree(MemoryTree(files))
    assert [(r.backend.value, r.suite) for r in report.registrations] == [("tpu", "tpu-suite")]
    # no workflow runs it: its test never runs (REG013), the only failure
    assert [f.rule for f in report.findings if f.severity.value == "failure"] == ["REG013"]


@pytest.mark.parametrize("value, severity", [("0", "warning"), ("-5", "warning"), ('"10"', "failure"), ("1e999", "failure")])
def test_est_time_bounds_follow_the_code(value, severity):
    test = f'from ci.ci_register import register_cpu_ci\n\nregister_cpu_ci({value}, "cpu-suite")\n'
    report = check_tree(MemoryTree(tree(**{"t/a/test_t.py": test})))
    assert [f.severity.value for f in report.findings if f.rule == "REG002"] == [severity]


def test_est_time_bound_read_from_the_register_module():
    register = REGISTER + "\ndef _check(est_time):\n    if est_time <= 0:\n        raise ValueError('est_time must be positive')\n"
    files = tree(**{"t/a/test_t.py": 'from ci.ci_register import register_cpu_ci\n\nregister_cpu_ci(0, "cpu-suite")\n'})
    files["ci/ci_register.py"] = register
    report = check_tree(MemoryTree(files))
    assert [f.severity.value for f in report.findings if f.rule == "REG002"] == ["failure"]


@pytest.mark.parametrize(
    "pattern, path, hit",
    [
        ("a/**/*.py", "a/x.py", True),
        ("a/**/*.py", "a/b/c/x.py", True),
        ("a/**/*.py", "a/.h/x.py", False),
        ("a/**/test_*.py", "a/b/test_x.py", True),
        ("a/**/test_*.py", "a/b/x_test.py", False),
        ("a/*.py", "a/b/x.py", False),
        ("a/test_?.py", "a/test_1.py", True),
    ],
)
def test_glob_semantics(pattern, path, hit):
    assert bool(re.fullmatch(_glob_regex(pattern), path)) is hit


MAIN_CHECK = '''

def _has_main(tree):
    return any(getattr(n, "value", None) == "__main__" for n in tree)
'''

VALIDATE = '''

CHECKED = {HWBackend.CPU, HWBackend.TPU}


def validate_all_suites(all_tests):
    errors = []
    for t in all_tests:
        if t.backend not in CHECKED:
            continue
        if t.suite not in SUITES.get(t.backend, []):
            errors.append(t.filename)
    if errors:
        raise ValueError(errors)
'''


@pytest.mark.parametrize(
    "body, failed",
    [
        ('register_cpu_ci(10, "cpu-suite")\n', True),
        ('register_cpu_ci(10, "cpu-suite")\n\nif __name__ == "__main__":\n    main()\n', False),
        ('register_cpu_ci(10, "cpu-suite", disabled="flaky")\n', False),  # only enabled files need it
    ],
)
def test_main_block_required_where_the_register_module_checks_it(body, failed):
    files = tree(**{"t/a/test_t.py": "from ci.ci_register import register_cpu_ci\n\n" + body})
    files["ci/ci_register.py"] = REGISTER + MAIN_CHECK
    report = check_tree(MemoryTree(files))
    assert bool([f for f in report.findings if f.rule == "REG002" and "__main__" in f.message]) is failed


@pytest.mark.parametrize(
    "call, severity",
    [
        ('register_tpu_ci(10, "no-such-suite")', "failure"),  # a backend the runner validates
        ('register_tpu_ci(10, "no-such-suite", disabled="x")', "failure"),  # ... disabled or not
        # not validated by the runner: the inventory is out of date (a warning); that no job runs
        # it is REG013's one finding, a failure, in every era and backend
        ('register_amd_ci(10, "no-such-suite")', "warning"),
    ],
)
def test_unknown_suite_severity_follows_the_runners_validation(call, severity):
    files = tree(**{"t/a/test_t.py": "from ci.ci_register import register_tpu_ci, register_amd_ci\n\n" + call + "\n"})
    files["ci/run_suite.py"] += VALIDATE
    report = check_tree(MemoryTree(files))
    assert [f.severity.value for f in report.findings if f.rule == "REG010"] == [severity]
    never = [f.severity.value for f in report.findings if f.rule == "REG013"]
    assert never == ([] if "disabled" in call else ["failure"])


def test_a_discovery_that_multiplies_is_not_followed():
    loops = "    for a in BIG:\n        for b in BIG:\n            for c in BIG:\n                files.extend(glob.glob(f\"{a}/{b}/{c}/*.py\"))\n"
    runner = RUNNER.replace("    strict = SANITY\n", loops + "    strict = SANITY\n").replace("ROOTS = (", "BIG = [" + ", ".join(f'"d{i}"' for i in range(60)) + "]\nROOTS = (")
    contract, _ = contract_of(tree(runner=runner))
    assert contract.discovery is None
    assert any(f.rule == "REG901" and ("steps" in f.message or "globs" in f.message) for f in contract.findings)


@pytest.mark.parametrize("suite, mismatch", [("stage-c-4-gpu-mi350", False), ("stage-c-4-gpu-h200", True)])
def test_amd_is_rocm_hardware_for_the_hardware_rule(suite, mismatch):
    files = tree(**{"t/a/test_t.py": f'from ci.ci_register import register_amd_ci\n\nregister_amd_ci(10, "{suite}")\n'})
    report = check_tree(MemoryTree(files))
    assert bool([f for f in report.findings if f.rule == "REG011"]) is mismatch
