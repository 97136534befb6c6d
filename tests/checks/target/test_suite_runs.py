"""The one model of how every suite runs (checks/target/suite_runs.py), on vendored revisions of
both targets (tests/fixtures/targets/*/ci-*) and on small trees that pin each reading rule.

The model joins two readings of the same workflows: the consumer reading the rules point with
(checks/workflows/runs.py) and the job reading `run-plan` copies a job with
(checks/workflows/jobs.py). The differential tests below hold them to the same answer: every
(suite, backend) one finds, the other finds.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import yaml

from checks.engine import build_context
from checks.model import Backend
from checks.limits import Budget
from checks.config.schema import load_config
from checks.scanning.tree import DirectoryTree, MemoryTree

from tests import FIXTURES, REPO

TARGETS = FIXTURES / "targets"
SGLANG = TARGETS / "sglang" / "ci-382343f"
MILES = TARGETS / "miles" / "ci-31f1ca9"
CONSUMER_PATH = ".github/workflows/nightly-test-amd-miles-rocm720.yml"
CONSUMER_LABEL = f"sgl-project/sglang:{CONSUMER_PATH}"
CONSUMER = {CONSUMER_LABEL: (SGLANG / CONSUMER_PATH).read_bytes()}
DOCS_CONFIGS = REPO / "docs" / "configs"


def _sglang_config():
    config, findings = load_config((DOCS_CONFIGS / "sglang.yml").read_text())
    assert not findings
    return config


@pytest.fixture(scope="module")
def sglang():
    ctx, _, _ = build_context(DirectoryTree(SGLANG), _sglang_config(), Budget())
    return ctx


@pytest.fixture(scope="module")
def miles():
    config, _ = load_config(None)
    ctx, _, _ = build_context(DirectoryTree(MILES), config, Budget(), consumers_from=CONSUMER)
    return ctx


def test_every_consumer_has_its_job_on_both_targets(sglang, miles):
    """Differential: each (consumer, suite, --hw) the consumer reading finds is a run of the model
    with the job that runs it, and the model has no run the consumer reading does not find."""
    for ctx in (sglang, miles):
        model = ctx.suite_runs
        found = {(u.consumer, u.suite, u.hw) for u in ctx.uses}
        runs = {(r.consumer, r.suite, r.hw) for r in model.runs}
        assert found == runs
        assert found, "the fixture runs suites"
        assert all(r.job is not None for r in model.runs), [r.where for r in model.runs if r.job is None]


def test_pool_gives_gpus_and_hardware(sglang):
    model = sglang.suite_runs
    (pr,) = {r.pool for r in model.of("amd", "stage-c-test-large-8-gpu-amd-mi35x")}
    assert (pr.labels, pr.gpus, pr.hardware) == (("linux-mi35x-gpu-8",), 8, "MI355X")
    mi300 = [r for r in model.runs if r.pool.labels and any("mi300" in label for label in r.pool.labels)]
    assert mi300 and all(r.pool.hardware == "MI300X" for r in mi300)  # docs/configs/sglang.yml's globs


def test_a_job_that_runs_a_suite_twice_is_two_invocations(sglang):
    runs = [r for r in sglang.suite_runs.of("amd", "nightly-amd-8-gpu-mi35x-deepseek-v4-pro")
            if r.consumer.endswith("nightly-test-amd-rocm720.yml")]
    backends = {(r.job.invocation, dict(r.job.env).get("SGLANG_HACK_FLASHMLA_BACKEND")) for r in runs}
    assert backends == {(1, "unified_kv_triton"), (2, "triton")}


def test_own_container_set_up_and_run_time_environment_are_recorded(sglang):
    (run, *_) = sglang.suite_runs.of("amd", "stage-b-test-large-8-gpu-mi35x-disaggregation-amd")
    assert run.job.setup == "scripts/ci/amd/amd_ci_start_container_disagg.sh"
    assert "SGLANG_TEST_RDMA_DEVICE" in run.job.env_at_run_time
    assert ("MC_LOG_LEVEL", "TRACE") in run.job.env
    (other, *_) = sglang.suite_runs.of("amd", "stage-c-test-large-8-gpu-amd-mi35x")
    assert other.job.setup == "scripts/ci/amd/amd_ci_start_container.sh"


def test_cadence_and_triggers_come_from_the_job(sglang, miles):
    nightly = sglang.suite_runs.of("amd", "nightly-amd-8-gpu-mi35x-glm51")
    assert nightly and all(r.cadence == "nightly" and "schedule" in r.triggers for r in nightly)
    pr = sglang.suite_runs.of("amd", "stage-c-test-large-8-gpu-amd-mi35x")
    assert pr and all(r.cadence == "per run" for r in pr)
    for run in pr:  # the workflow's own `on:` keys, read with plain YAML
        doc = yaml.safe_load((SGLANG / run.consumer).read_text())
        assert run.triggers == set(map(str, (doc.get(True) or doc.get("on")).keys()))
    (consumer,) = miles.suite_runs.of("rocm", "nightly-stage-c-4-gpu-mi350")
    assert (consumer.consumer, consumer.pool.gpus, consumer.cadence) == (CONSUMER_LABEL, 8, "nightly")
    assert consumer.external and consumer.file is None


def test_an_external_consumer_not_given_is_unknown_not_none():
    config, _ = load_config(None)
    ctx, _, _ = build_context(DirectoryTree(MILES), config, Budget())
    model = ctx.suite_runs
    assert CONSUMER_LABEL in model.unknown and not model.complete
    nightly = _reg("nightly-stage-c-4-gpu-mi350", "rocm", "tests/e2e/x/test_a.py")
    assert model.never_runs(nightly) is None  # unknown: its consumer was not read
    assert model.never_runs(_reg("stage-c-4-gpu-mi350", "rocm", "tests/e2e/x/test_b.py")) is False


def _reg(suite: str, backend: str, file: str):
    """What the model reads of a registration: its suite, backend and file."""
    return SimpleNamespace(suite=suite, backend=Backend(backend), file=file)


RUNNER = '''
from enum import Enum
class HWBackend(Enum):
    CPU = "cpu"
    AMD = "amd"
PER_COMMIT_SUITES = {HWBackend.CPU: ["stage-a-cpu"], HWBackend.AMD: ["stage-b-amd"]}
'''


def _tree(workflow: str, extra: dict | None = None):
    files = {"test/run_suite.py": RUNNER, ".github/workflows/ci.yml": workflow, **(extra or {})}
    return MemoryTree(files)


def _model(workflow: str, extra: dict | None = None):
    config, findings = load_config("paths:\n  suites_module: test/run_suite.py\nconsumers: []\n")
    assert not findings
    ctx, _, _ = build_context(_tree(workflow, extra), config, Budget())
    return ctx.suite_runs


def test_a_command_quoted_inside_bash_c_and_a_python_variable_are_runs():
    model = _model('''on: [pull_request]
jobs:
  cpu:
    runs-on: ubuntu-latest
    steps:
      - run: docker exec c bash -c "cd ./test && python3 run_suite.py --hw cpu --suite stage-a-cpu --timeout-per-file 900"
  amd:
    runs-on: linux-mi300-2gpu-sglang
    steps:
      - run: |
          PY=python3
          ${PYTHON_FOR_SGLANG} -u run_suite.py --hw amd --suite stage-b-amd
''')
    (cpu,) = model.of("cpu", "stage-a-cpu")
    assert cpu.job is not None and cpu.job.timeout_per_file_s == 900 and cpu.pool.gpus == 0  # --hw cpu holds no GPU
    (amd,) = model.of("amd", "stage-b-amd")
    assert amd.job is not None and amd.pool.gpus == 2 and amd.where == ".github/workflows/ci.yml:12"


def test_another_program_of_the_runners_name_runs_no_suite_of_ours():
    model = _model('''on: [pull_request]
jobs:
  gen:
    runs-on: ubuntu-latest
    steps:
      - run: python3 sglang/multimodal_gen/test/run_suite.py --suite stage-a-cpu
''')
    assert model.of("cpu", "stage-a-cpu") == []


def test_never_runs_is_false_for_a_file_a_workflow_runs_itself():
    model = _model('''on: [pull_request]
jobs:
  direct:
    runs-on: ubuntu-latest
    steps:
      - run: cd test && python3 -m pytest registered/amd/
''')
    assert model.complete
    assert model.never_runs(_reg("stage-b-amd", "amd", "test/registered/amd/test_x.py")) is False
    assert model.never_runs(_reg("stage-b-amd", "amd", "test/registered/cpu/test_y.py")) is True


def test_backend_values_are_the_models_keys():
    # `of(backend, suite)` takes Backend values, as registrations carry them
    assert Backend.AMD.value == "amd" and Backend.ROCM.value == "rocm"


def test_calibration_hardware_comes_from_the_pool_unless_configured(sglang):
    """With the shipped docs/configs/sglang.yml, every AMD suite whose jobs run on an MI300X pool
    calibrates on MI300X (those matching no configured glob used to fall back to MI355X)."""
    from fnmatch import fnmatchcase

    from checks.calibration.policy import hardware_for_suite

    pools = sglang.suite_runs.pool_hardware()
    mi300 = sorted(s for s, model in pools.items() if model == "MI300X")
    assert mi300
    assert all(hardware_for_suite(s, sglang.config.calibration) == "MI300X" for s in mi300)
    shipped = _sglang_config().calibration
    unmatched = [s for s in mi300 if not any(fnmatchcase(s, g) for g in shipped.hardware_by_suite)]
    assert all(hardware_for_suite(s, shipped) == shipped.hardware for s in unmatched)  # what the name map alone said
    # configuration overrides the pool
    config, _ = load_config((DOCS_CONFIGS / "sglang.yml").read_text().replace(
        '    "*mi35x*": MI355X\n', f'    "*mi35x*": MI355X\n    "{mi300[0]}": MI355X\n'))
    ctx, _, _ = build_context(DirectoryTree(SGLANG), config, Budget())
    assert hardware_for_suite(mi300[0], ctx.config.calibration) == "MI355X"


def test_another_repositorys_start_script_is_not_read_from_this_tree():
    """A consumer in another repository starts its own container script: read from this tree, a
    script at the same path would give that job this repository's image."""
    from checks.workflows.jobs import read_suite_jobs

    workflow = ("on: {schedule: [{cron: '1 1 * * *'}]}\njobs:\n  j:\n    runs-on: linux-mi35x-gpu-8\n    steps:\n"
                "      - run: bash scripts/ci/amd/amd_ci_start_container.sh\n"
                "      - run: python3 tests/ci/run_suite.py --hw rocm --suite nightly-x-8-gpu-mi350 --cadence nightly\n")
    reads = []
    own = read_suite_jobs({".github/workflows/n.yml": workflow}, runner="run_suite", read_script=reads.append)
    assert reads == ["scripts/ci/amd/amd_ci_start_container.sh"] and [j.suite for j in own] == ["nightly-x-8-gpu-mi350"]
    reads.clear()
    theirs = read_suite_jobs({}, {"o/r:.github/workflows/n.yml": workflow}, runner="run_suite", read_script=reads.append)
    assert reads == [] and [j.suite for j in theirs] == ["nightly-x-8-gpu-mi350"] and theirs[0].image is None
