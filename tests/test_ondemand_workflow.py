"""deploy/workflows/rocm-on-demand.yml: the workflow the App dispatches for `/run-rocm`, and
deploy/workflows/rocm-on-demand-job.yml, its GPU job for targets without a reusable ROCm job.

Linted offline by actionlint (with shellcheck on its shell scripts) and zizmor, with zero findings
allowed, beside radixark/miles' real reusable job (vendored: tests/fixtures/targets/miles/
workflows-778227d), so actionlint checks the call against that job's declared inputs; its
structure checked from the parsed YAML; and its own scripts (the input checks, the static inventory
check, the plan of the GPU jobs, the commit check and the commands the GPU jobs run) extracted and
run against small git repositories, so what the workflow enforces is tested for real, not read.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from checks.config import Dispatch, load_config
from checks.dispatch_plan import RUNNER_SHAPES, default_runner_flags, plan, runs_on_for
from checks.durations import parse_job_log
from checks.runner import read_runner

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / "deploy" / "workflows" / "rocm-on-demand.yml"
JOB_WORKFLOW = ROOT / "deploy" / "workflows" / "rocm-on-demand-job.yml"
TARGETS = ROOT / "tests" / "fixtures" / "targets"
MILES_WORKFLOWS = TARGETS / "miles" / "workflows-778227d"
MILES_RUNNER = TARGETS / "miles" / "ci-runner-778227d" / "run_suite.py"
MILES_INVENTORY = TARGETS / "miles" / "r2026-08-21-778227d" / "tests" / "ci" / "run_suite.py"
SGLANG_NIGHTLY = TARGETS / "sglang" / "workflows-382343f" / "nightly-test-amd-miles-rocm720.yml"
BIN = Path(sys.executable).parent
INPUTS = ("suite", "head_sha", "pull_number", "test_files", "runs_on", "shards", "image", "runner_flags")

TEXT = WORKFLOW.read_text()
DOC = yaml.safe_load(TEXT)
JOBS = DOC["jobs"]
VALIDATE = JOBS["validate"]
RUN = JOBS["run"]
JOB_TEXT = JOB_WORKFLOW.read_text()
JOB_DOC = yaml.safe_load(JOB_TEXT)
GPU_JOB = JOB_DOC["jobs"]["run"]


def _tool(name: str) -> str:
    path = BIN / name
    if not path.exists():
        found = shutil.which(name)
        if found is None:
            pytest.fail(f"{name} is not installed: `pip install -e '.[app,test]'` (make install) installs it")
        return found
    return str(path)


def _step(job: dict, step_id: str | None = None, *, uses: str | None = None, name_has: str | None = None) -> dict:
    for step in job["steps"]:
        if step_id is not None and step.get("id") == step_id:
            return step
        if uses is not None and step.get("uses", "").startswith(uses):
            return step
        if name_has is not None and name_has in step.get("name", ""):
            return step
    raise AssertionError(f"no step {step_id or uses or name_has!r}")


def _run_steps():
    for doc in (DOC, JOB_DOC):
        for job_id, job in doc["jobs"].items():
            for step in job.get("steps", []):
                if "run" in step:
                    yield job_id, step


def _workflow_constant(name: str):
    """A literal the shapes step holds itself (RUNNERS, MAX_SHARDS, RUNNER_FLAGS, ...)."""
    for node in ast.parse(_step(VALIDATE, "shapes")["run"]).body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets if isinstance(t, ast.Name)] == [name]:
            return ast.literal_eval(node.value)
    raise AssertionError(f"no {name} in the shapes step")


# ----------------------------------------------------------------------------------------------
# The linters, offline, with zero findings, on the workflows as installed


def _installed(tmp_path: Path, caller: str = TEXT, job: str | None = None) -> Path:
    """A repository's .github/workflows: the shipped caller beside a reusable `_run-ci-rocm.yml`
    (miles' real one unless `job` is given), as actionlint needs them to check the call."""
    workflows = tmp_path / "repo" / ".github" / "workflows"
    workflows.mkdir(parents=True, exist_ok=True)
    # actionlint finds the project (and so the called workflow) by its .git directory; without
    # one it skips checking the call, silently.
    (tmp_path / "repo" / ".git").mkdir(exist_ok=True)
    (workflows / "rocm-on-demand.yml").write_text(caller)
    (workflows / "_run-ci-rocm.yml").write_text(job if job is not None else (MILES_WORKFLOWS / "_run-ci-rocm.yml").read_text())
    return workflows


def _actionlint(path: Path, tmp_path: Path, *, cwd: Path | None = None) -> list[dict]:
    config = tmp_path / "actionlint.yaml"
    # Without this, actionlint rejects the self-hosted MI350 labels as unknown runner labels.
    labels = sorted({label for shape in RUNNER_SHAPES.values() for label in shape} - {"self-hosted"})
    config.write_text(f"self-hosted-runner:\n  labels: {json.dumps(labels)}\n")
    shellcheck = shutil.which("shellcheck", path=str(BIN)) or shutil.which("shellcheck") or ""
    done = subprocess.run(
        [_tool("actionlint"), "-config-file", str(config), "-shellcheck", shellcheck, "-format", "{{json .}}", str(path)],
        capture_output=True, text=True, timeout=120, cwd=cwd or path.parent,
    )
    assert done.returncode in (0, 1), done.stderr  # 0: clean, 1: findings, others: the tool failed
    return json.loads(done.stdout or "null") or []


def _zizmor(path: Path, persona: str) -> list[dict]:
    done = subprocess.run(
        [_tool("zizmor"), "--offline", "--no-config", f"--persona={persona}", "--format=json", str(path)],
        capture_output=True, text=True, timeout=120,
    )
    # 0: clean; 10-14: findings by highest severity; anything else: the tool failed.
    assert done.returncode == 0 or 10 <= done.returncode <= 14, done.stderr
    return json.loads(done.stdout)


def _repo_root(workflows: Path) -> Path:
    return workflows.parent.parent


def test_actionlint_finds_nothing_calling_miles_real_reusable_job(tmp_path):
    workflows = _installed(tmp_path)
    assert _actionlint(workflows / "rocm-on-demand.yml", tmp_path, cwd=_repo_root(workflows)) == []


def test_actionlint_finds_nothing_with_the_shipped_gpu_job(tmp_path):
    workflows = _installed(tmp_path, job=JOB_TEXT)
    root = _repo_root(workflows)
    assert _actionlint(workflows / "rocm-on-demand.yml", tmp_path, cwd=root) == []
    assert _actionlint(workflows / "_run-ci-rocm.yml", tmp_path, cwd=root) == []


@pytest.mark.parametrize("job", ["miles", "shipped"])
def test_actionlint_checks_the_call_against_the_reusable_jobs_inputs(tmp_path, job):
    # A misspelt input and a missing required one: actionlint reads the called workflow.
    broken = TEXT.replace("container_image: ${{ needs.validate.outputs.image }}",
                          "container_imag: ${{ needs.validate.outputs.image }}")
    assert broken != TEXT
    workflows = _installed(tmp_path, broken, job=None if job == "miles" else JOB_TEXT)
    findings = _actionlint(workflows / "rocm-on-demand.yml", tmp_path, cwd=_repo_root(workflows))
    messages = [f["message"] for f in findings if f["kind"] == "workflow-call"]
    assert any('"container_imag" is not defined' in m for m in messages), findings
    assert any('"container_image" is required' in m for m in messages), findings


def _bad_job(tmp_path: Path) -> Path:
    """The GPU job with three classic mistakes: an input in a script, a floating tag, an unknown label."""
    bad = JOB_TEXT.replace('echo "running PR code at ${actual}"', "echo running ${{ inputs.ref }} at $actual")
    bad = bad.replace("uses: actions/checkout@de0fac2e4500dabe0009e67214ff5f5447ce83dd # v6.0.2",
                      "uses: actions/checkout@v6")
    bad = bad.replace("runs-on: ${{ fromJSON(inputs.runs_on) }}", "runs-on: [self-hosted, amd, mi305]")
    assert bad.count("${{ inputs.ref }} at") == 1 and "actions/checkout@v6\n" in bad and "mi305" in bad
    path = tmp_path / "bad.yml"
    path.write_text(bad)
    return path


def test_actionlint_really_runs_and_lints_the_scripts(tmp_path):
    findings = _actionlint(_bad_job(tmp_path), tmp_path)
    kinds = {f["kind"] for f in findings}
    assert "runner-label" in kinds, findings  # the unknown label: the config file is read
    if shutil.which("shellcheck", path=str(BIN)) or shutil.which("shellcheck"):
        assert any(f["kind"] == "shellcheck" and "SC2086" in f["message"] for f in findings), findings


@pytest.mark.parametrize("path", [WORKFLOW, JOB_WORKFLOW], ids=["caller", "gpu-job"])
def test_zizmor_finds_nothing_even_pedantic(path):
    assert _zizmor(path, "regular") == []
    assert _zizmor(path, "pedantic") == []
    # The auditor persona too: the self-hosted runner is named by a JSON input, not in this file.
    assert _zizmor(path, "auditor") == []


def test_zizmor_really_runs(tmp_path):
    idents = {f["ident"] for f in _zizmor(_bad_job(tmp_path), "regular")}
    assert {"template-injection", "unpinned-uses"} <= idents
    # and its one justified exception is an exception, not a blind spot
    assert "self-repository" in {f["ident"] for f in _zizmor(_write(tmp_path / "c.yml", TEXT.replace(
        " # zizmor: ignore[self-repository]", "")), "regular")}


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# ----------------------------------------------------------------------------------------------
# Structure


def test_dispatch_inputs_match_the_apps_dispatch_table():
    on = DOC.get("on", DOC.get(True))  # YAML 1.1 reads a bare `on` key as True
    assert set(on) == {"workflow_dispatch"}
    inputs = on["workflow_dispatch"]["inputs"]
    assert tuple(inputs) == INPUTS
    assert set(inputs) == set(Dispatch(workflow="rocm-on-demand.yml").inputs)  # the App's defaults
    assert len(inputs) <= 10  # GitHub Enterprise Server 3.17-3.19 take at most 10
    for name, spec in inputs.items():
        assert spec["type"] == "string", name
    for name in ("suite", "head_sha", "pull_number"):
        assert inputs[name]["required"] is True
    for name in INPUTS[3:]:
        assert inputs[name]["required"] is False, name
    assert inputs["test_files"]["default"] == "" and inputs["shards"]["default"] == "1"
    assert json.loads(inputs["runs_on"]["default"]) in _workflow_constant("RUNNERS")


def test_run_name_identifies_the_run():
    run_name = DOC["run-name"]
    for name in ("suite", "pull_number", "head_sha"):
        assert "${{ inputs.%s }}" % name in run_name
    assert run_name.startswith("MI350 · ") and "PR #${{ inputs.pull_number }}" in run_name


def test_permissions_and_concurrency():
    assert DOC["permissions"] == {}
    assert VALIDATE["permissions"] == {"contents": "read"}
    assert RUN["permissions"] == {}
    assert JOB_DOC["permissions"] == {} and GPU_JOB["permissions"] == {}
    group = DOC["concurrency"]["group"]
    assert "${{ inputs.pull_number }}" in group and "${{ inputs.suite }}" in group


def test_no_expression_inside_any_script():
    # Inputs reach scripts only through env: `${{ }}` in a script is template injection.
    scripts = list(_run_steps())
    assert len(scripts) >= 8
    for job_id, step in scripts:
        assert "${{" not in step["run"], (job_id, step.get("name"))


def test_every_action_is_pinned_to_a_commit_with_its_version():
    for text in (TEXT, JOB_TEXT):
        uses_lines = [line.strip() for line in text.splitlines() if line.strip().startswith(("uses:", "- uses:"))
                      and "./.github/workflows/" not in line]
        assert uses_lines
        for line in uses_lines:
            assert re.fullmatch(r"(- )?uses: [\w.-]+/[\w.-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+", line), line


def test_validation_comes_first_and_never_executes_pr_code():
    assert VALIDATE["runs-on"] == "ubuntu-latest"
    steps = VALIDATE["steps"]
    assert steps[0].get("id") == "shapes", "inputs are checked before anything uses them"
    checkout = _step(VALIDATE, uses="actions/checkout@")
    assert checkout["with"]["ref"] == "refs/pull/${{ inputs.pull_number }}/head"
    assert checkout["with"]["persist-credentials"] is False
    assert checkout["with"]["sparse-checkout"] == "tests/ci/run_suite.py"
    inventory = _step(VALIDATE, "inventory")
    assert steps.index(inventory) > steps.index(checkout)
    assert "import ast" in inventory["run"]
    # The only scripts of this job are its Python checks and plan: nothing runs a file of the PR.
    assert [s.get("id") for s in steps if "run" in s] == ["shapes", "inventory", "plan"]
    for step in (_step(VALIDATE, "shapes"), inventory):
        assert step["shell"] == "python"
        for name, var in (("suite", "SUITE"), ("head_sha", "HEAD_SHA"), ("pull_number", "PULL_NUMBER"), ("test_files", "TEST_FILES")):
            assert step["env"][var] == "${{ inputs.%s }}" % name
    shapes = _step(VALIDATE, "shapes")
    for name, var in (("runs_on", "RUNS_ON"), ("shards", "SHARDS"), ("image", "IMAGE"), ("runner_flags", "RUNNER_FLAGS")):
        assert shapes["env"][var] == "${{ inputs.%s }}" % name
    # The GPU jobs get only what the checks wrote: no raw input of these four reaches them.
    assert VALIDATE["outputs"] == {"runs_on": "${{ steps.shapes.outputs.runs_on }}",
                                   "image": "${{ steps.shapes.outputs.image }}",
                                   "matrix": "${{ steps.plan.outputs.matrix }}"}
    plan_step = _step(VALIDATE, "plan")
    assert plan_step["env"]["SHARDS"] == "${{ steps.shapes.outputs.shards }}"
    assert plan_step["env"]["RUNNER_FLAGS"] == "${{ steps.shapes.outputs.runner_flags }}"


def test_the_gpu_jobs_call_the_targets_own_reusable_job_with_checked_values_only():
    assert RUN["needs"] == "validate"
    assert RUN["uses"] == "./.github/workflows/_run-ci-rocm.yml"
    assert RUN["strategy"] == {"fail-fast": False, "matrix": "${{ fromJSON(needs.validate.outputs.matrix) }}"}
    assert RUN["with"] == {
        "ref": "${{ inputs.head_sha }}",  # checked to be refs/pull/<n>/head by the validate job
        "runs_on": "${{ needs.validate.outputs.runs_on }}",
        "container_image": "${{ needs.validate.outputs.image }}",
        "execute_command": "${{ matrix.command }}",
    }
    # miles' job accepts exactly these (and an optional skip_dependency_install, left at its default)
    miles = yaml.safe_load((MILES_WORKFLOWS / "_run-ci-rocm.yml").read_text())
    declared = (miles.get("on") or miles[True])["workflow_call"]["inputs"]
    assert set(RUN["with"]) <= set(declared) and {k for k, v in declared.items() if v.get("required")} <= set(RUN["with"])
    shipped = (JOB_DOC.get("on") or JOB_DOC[True])["workflow_call"]["inputs"]
    assert set(shipped) == set(RUN["with"])  # the shipped GPU job is a drop-in for miles' one


def test_no_secret_reaches_the_job_that_runs_pr_code():
    # miles' reusable job would take a secret if given one...
    miles = yaml.safe_load((MILES_WORKFLOWS / "_run-ci-rocm.yml").read_text())
    assert "WANDB_API_KEY" in (miles.get("on") or miles[True])["workflow_call"]["secrets"]
    # ...and its own caller passes it; this one passes none, not even `inherit`.
    pr_test = yaml.safe_load((MILES_WORKFLOWS / "pr-test-rocm.yml").read_text())
    assert pr_test["jobs"]["stage-c-4-gpu-mi350"]["secrets"] == {"WANDB_API_KEY": "${{ secrets.WANDB_API_KEY }}"}
    assert "secrets" not in RUN
    for text, doc in ((TEXT, DOC), (JOB_TEXT, JOB_DOC)):
        assert "secrets" not in _keys(doc)  # no `secrets:` to a call, no `secrets:` declared
        assert not re.search(r"secrets\s*[.\[]", text)  # no secrets.X anywhere
        assert "github.token" not in text and "GITHUB_TOKEN" not in text
    assert "env" not in DOC and "env" not in RUN
    assert set(GPU_JOB["env"]) == {"PYTHONPATH", "MILES_HARDWARE_PLATFORM"}
    assert set(GPU_JOB["container"].get("env", {})) == {"HF_HOME", "MIOPEN_USER_DB_PATH", "MIOPEN_CUSTOM_CACHE_DIR"}
    checkout = _step(GPU_JOB, uses="actions/checkout@")
    assert checkout["with"] == {"ref": "${{ inputs.ref }}", "persist-credentials": False}
    assert GPU_JOB["steps"].index(checkout) == 0
    for step in GPU_JOB["steps"]:
        for value in (step.get("env") or {}).values():
            assert "secret" not in str(value).lower() and "token" not in str(value).lower()


def _keys(node) -> set:
    if isinstance(node, dict):
        return set(node) | {k for v in node.values() for k in _keys(v)}
    if isinstance(node, list):
        return {k for v in node for k in _keys(v)}
    return set()


def test_the_shipped_gpu_job_carries_the_container_pattern():
    options = GPU_JOB["container"]["options"].split()
    for option in ("--device=/dev/kfd", "--device=/dev/dri", "--shm-size=32g", "video", "render", "--ipc=host"):
        assert option in options, option
    assert GPU_JOB["runs-on"] == "${{ fromJSON(inputs.runs_on) }}"
    assert GPU_JOB["container"]["image"] == "${{ inputs.container_image }}"
    names = [s.get("name", "") for s in GPU_JOB["steps"]]
    assert names.index("Wait for the GPUs") < names.index("Run the tests")
    run = _step(GPU_JOB, name_has="Run the tests")
    assert run["env"] == {"EXECUTE_COMMAND": "${{ inputs.execute_command }}"}


# ----------------------------------------------------------------------------------------------
# Where suites run: the App's defaults against the real fleets and this workflow's own lists


def _real_runner_shapes() -> list[list[str]]:
    """Runner label sets of the ROCm jobs in miles' and sglang's real workflows."""
    shapes = []
    pr_test = yaml.safe_load((MILES_WORKFLOWS / "pr-test-rocm.yml").read_text())
    for job in pr_test["jobs"].values():
        if "runs_on" in job.get("with", {}):
            shapes.append(json.loads(job["with"]["runs_on"]))
    nightly = yaml.safe_load(SGLANG_NIGHTLY.read_text())
    for job in nightly["jobs"].values():
        for entry in job.get("strategy", {}).get("matrix", {}).get("include", []):
            shapes.append([entry["runner"]])
    return shapes


def _miles_rocm_suites() -> list[str]:
    tree = ast.parse(MILES_INVENTORY.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and node.targets[0].id == "CI_SUITES":
            for key, value in zip(node.value.keys, node.value.values):
                if key.attr == "ROCM":
                    return [e.value for e in value.elts]
    raise AssertionError("no ROCm suites")


def test_every_miles_rocm_suite_runs_on_a_real_runner_shape_this_workflow_accepts():
    real = _real_runner_shapes()
    assert ["self-hosted", "amd", "mi350", "4gpu"] in real and ["linux-mi35x-gpu-8"] in real
    accepted = _workflow_constant("RUNNERS")
    suites = _miles_rocm_suites()
    assert len(suites) == 4
    for suite in suites:
        labels = list(runs_on_for(suite, Dispatch(workflow="rocm-on-demand.yml")))
        assert labels in real, (suite, labels)
        assert labels in accepted, (suite, labels)
    assert list(runs_on_for("nightly-stage-c-8-gpu-mi350", Dispatch(workflow="x.yml"))) == ["linux-mi35x-gpu-8"]
    assert list(runs_on_for("stage-c-4-gpu-mi350", Dispatch(workflow="x.yml"))) == ["self-hosted", "amd", "mi350", "4gpu"]


def _miles_options():
    return read_runner("tests/ci/run_suite.py", ast.parse(MILES_RUNNER.read_text()), "tests/ci/ci_register.py",
                       None, set()).options


def test_the_flags_the_app_plans_for_miles_are_flags_this_workflow_accepts():
    options = _miles_options()
    accepted = _workflow_constant("RUNNER_FLAGS")
    for suite in _miles_rocm_suites():
        flags = default_runner_flags(suite, options)
        assert "--match-all-labels" in flags and "--continue-on-error" in flags
        assert ("--cadence" in flags) is suite.startswith("nightly-")
        i = 0
        while i < len(flags):
            assert flags[i] in accepted, flags[i]
            if accepted[flags[i]] is not None:
                assert flags[i + 1] in accepted[flags[i]]
                i += 1
            i += 1
    assert default_runner_flags("nightly-stage-c-8-gpu-mi350", options) == (
        "--cadence", "nightly", "--match-all-labels", "--continue-on-error", "--enable-retry", "--max-attempts", "2")


# ----------------------------------------------------------------------------------------------
# The input checks, run


def _python_step(step: dict, env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    # `shell: python` runs the script file with the runner's python; only `env:` reaches it, and
    # GITHUB_OUTPUT names the file a step writes its outputs to.
    env = dict(env)
    output = Path(env.setdefault("GITHUB_OUTPUT", str(Path(os.environ.get("TMPDIR", "/tmp")) / f"out-{os.getpid()}")))
    output.write_text("")
    done = subprocess.run(
        [sys.executable, "-c", step["run"]], env={"PATH": os.environ["PATH"], **env},
        cwd=cwd, capture_output=True, text=True, timeout=60,
    )
    done.outputs = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
    return done


SHA = "0123456789abcdef0123456789abcdef01234567"
GOOD = {"SUITE": "nightly-stage-c-4-gpu-mi350", "HEAD_SHA": SHA, "PULL_NUMBER": "123", "TEST_FILES": "",
        "RUNS_ON": '["self-hosted","amd","mi350","4gpu"]', "SHARDS": "1", "IMAGE": "", "RUNNER_FLAGS": ""}


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"TEST_FILES": "tests/e2e/megatron/test_qwen3_4B_ppo.py"},
        {"TEST_FILES": "tests/e2e/fsdp/test_qwen3_0.6B_fsdp_distributed.py tests/fast/test_utils.py"},
        {"TEST_FILES": " tests/fast-gpu/a/b-c/test_x.py  tests/ci/test_y.py "},
        {"SUITE": "a"},
        {"PULL_NUMBER": "9999999999"},
        {"RUNS_ON": '["linux-mi35x-gpu-8"]', "SHARDS": "2"},
        {"RUNS_ON": '[ "self-hosted", "amd", "mi350", "4gpu" ]', "SHARDS": "8"},
        {"IMAGE": "miles-rocm720-mi35x-20260811"},
        {"IMAGE": "rocm/sgl-dev:miles-rocm720-mi35x"},
        {"IMAGE": "rocm/sgl-dev@sha256:" + "a" * 64},
        {"RUNNER_FLAGS": "--cadence nightly --match-all-labels --continue-on-error --enable-retry --max-attempts 2"},
        {"RUNNER_FLAGS": " --nightly  "},
    ],
)
def test_shapes_accepts(changes):
    done = _python_step(_step(VALIDATE, "shapes"), {**GOOD, **changes})
    assert done.returncode == 0, done.stdout + done.stderr


def test_shapes_writes_the_checked_values_for_the_gpu_jobs():
    done = _python_step(_step(VALIDATE, "shapes"), {**GOOD, "RUNS_ON": '[ "linux-mi35x-gpu-8" ]', "SHARDS": "2",
                                                    "RUNNER_FLAGS": " --cadence  nightly "})
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.outputs == {"runs_on": '["linux-mi35x-gpu-8"]', "image": "rocm/sgl-dev:miles-rocm720-mi35x",
                            "shards": "2", "runner_flags": "--cadence nightly"}
    digest = "rocm/sgl-dev@sha256:" + "0" * 64
    assert _python_step(_step(VALIDATE, "shapes"), {**GOOD, "IMAGE": digest}).outputs["image"] == digest


@pytest.mark.parametrize(
    "changes",
    [
        {"HEAD_SHA": SHA.upper()},
        {"HEAD_SHA": SHA[:39]},
        {"HEAD_SHA": SHA + "0"},
        {"HEAD_SHA": "main"},
        {"HEAD_SHA": SHA + "\n"},
        {"PULL_NUMBER": ""},
        {"PULL_NUMBER": "0"},
        {"PULL_NUMBER": "12a"},
        {"PULL_NUMBER": "1/../../heads/main"},
        {"PULL_NUMBER": "-1"},
        {"PULL_NUMBER": "12345678901"},
        {"SUITE": ""},
        {"SUITE": "-stage"},
        {"SUITE": ".hidden"},
        {"SUITE": "stage c"},
        {"SUITE": "stage;rm -rf /"},
        {"SUITE": "stage\n::set-output name=x::y"},
        {"SUITE": "s" * 129},
        {"SUITE": "stagé"},
        {"TEST_FILES": "tests/e2e/../../etc/test_x.py"},
        {"TEST_FILES": "tests/e2e/a..b/test_x.py"},
        {"TEST_FILES": "tests/e2e/-rf/test_x.py"},
        {"TEST_FILES": "tests/e2e/.git/test_x.py"},
        {"TEST_FILES": "/tests/e2e/test_x.py"},
        {"TEST_FILES": "tests/unit/test_x.py"},
        {"TEST_FILES": "tests/e2e/test_x.sh"},
        {"TEST_FILES": "tests/e2e/x.py"},
        {"TEST_FILES": "tests/e2e/conftest.py"},
        {"TEST_FILES": "tests/e2e/test_x.py;id"},
        {"TEST_FILES": "tests/e2e/test_$(id).py"},
        {"TEST_FILES": "tests/e2e/test_*.py"},
        {"TEST_FILES": "tests/e2e/test_x.py\ntests/e2e/test_y.py"},
        {"TEST_FILES": "tests/e2e/test_x.py\ttests/e2e/test_y.py"},
        {"TEST_FILES": "tests/e2e/tést_x.py"},
        {"TEST_FILES": "tests/e2e/test_x.py tests/e2e/test_x.py"},
        {"TEST_FILES": " ".join(f"tests/e2e/test_{i}.py" for i in range(101))},
        {"TEST_FILES": "tests/e2e/" + "a" * 250 + "/test_x.py"},
        {"RUNS_ON": ""},
        {"RUNS_ON": "self-hosted"},
        {"RUNS_ON": '["self-hosted","amd","mi350"]'},  # a subset: any MI350 machine, whatever its GPUs
        {"RUNS_ON": '["self-hosted","amd","mi350","4gpu","x"]'},
        {"RUNS_ON": '["ubuntu-latest"]'},
        {"RUNS_ON": '"linux-mi35x-gpu-8"'},
        {"SHARDS": ""},
        {"SHARDS": "0"},
        {"SHARDS": "9"},
        {"SHARDS": "01"},
        {"SHARDS": "2 "},
        {"SHARDS": "-1"},
        {"IMAGE": "evil/image:latest"},
        {"IMAGE": "rocm/sgl-dev-evil:tag"},
        {"IMAGE": "docker.io/rocm/sgl-dev:tag"},
        {"IMAGE": "rocm/sgl-dev:tag; id"},
        {"IMAGE": "rocm/sgl-dev@sha256:abc"},
        {"IMAGE": "-tag"},
        {"RUNNER_FLAGS": "--labels run-ci-all"},
        {"RUNNER_FLAGS": "--cadence"},
        {"RUNNER_FLAGS": "--cadence hourly"},
        {"RUNNER_FLAGS": "--max-attempts 99"},
        {"RUNNER_FLAGS": "--continue-on-error;id"},
        {"RUNNER_FLAGS": "--nightly\n::error::x"},
        {"RUNNER_FLAGS": "$(id)"},
        {"RUNNER_FLAGS": "--auto-partition-id 0"},
    ],
)
def test_shapes_rejects(changes):
    done = _python_step(_step(VALIDATE, "shapes"), {**GOOD, **changes})
    assert done.returncode == 1, done.stdout + done.stderr
    # One line: a rejected value never starts a line of its own (no forged workflow command).
    assert done.stdout.startswith("::error::") and done.stdout.count("\n") == 1, done.stdout


# ----------------------------------------------------------------------------------------------
# The commit and inventory check, run on small git repositories

MILES_RUN_SUITE = '''\
import sys
from tests.ci.ci_register import HWBackend

open("EXECUTED", "w").write("the inventory module was executed")
sys.exit("executed")

CI_SUITES = {
    HWBackend.CPU: ["stage-a-cpu"],
    HWBackend.CUDA: ["stage-c-8-gpu-h200", "stage-c-4-gpu-h200"],
    HWBackend.ROCM: [
        # consumed by pr-test-rocm.yml
        "stage-c-4-gpu-mi350",
        "nightly-stage-c-8-gpu-mi350",
        "nightly-stage-c-4-gpu-mi350",
    ],
}
'''

SPLIT_RUN_SUITE = '''\
from tests.ci.ci_register import HWBackend

PER_COMMIT_SUITES = {
    HWBackend.CPU: ["stage-a-cpu"],
    HWBackend.CUDA: ["stage-c-8-gpu-h200"],
    HWBackend.ROCM: ["stage-c-4-gpu-mi350"],
}

NIGHTLY_SUITES: dict = {
    HWBackend.CUDA: ["nightly-h200"],
    HWBackend.ROCM: ("nightly-stage-c-4-gpu-mi350",),
}
'''

COMPUTED_RUN_SUITE = '''\
from tests.ci.ci_register import HWBackend

ROCM = ["nightly-stage-c-4-gpu-mi350"]
CI_SUITES = {HWBackend.ROCM: ROCM + ["other"]}
'''


def _git(repo: Path, *args: str) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": str(repo), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout.strip()


def _repo(tmp_path: Path, files: dict[str, str], symlinks: dict[str, str] | None = None) -> tuple[Path, str]:
    """A git repository holding `files`, checked out at its one commit; returns (path, sha)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "pr-head"
    repo.mkdir()
    _git(repo, "init", "-q")
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    for path, target in (symlinks or {}).items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).symlink_to(target)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "pr head")
    return repo, _git(repo, "rev-parse", "HEAD")


def _inventory(repo: Path, sha: str, suite: str, files: str = "") -> subprocess.CompletedProcess:
    step = _step(VALIDATE, "inventory")
    env = {k: v for k, v in step["env"].items() if "${{" not in v}  # SUITES_MODULE, SUITES_VARIABLES
    env.update(SUITE=suite, HEAD_SHA=sha, PULL_NUMBER="7", TEST_FILES=files, HOME=str(repo), GIT_CONFIG_NOSYSTEM="1")
    return _python_step(step, env, cwd=repo)


def test_inventory_accepts_a_rocm_suite_without_executing_the_module(tmp_path):
    repo, sha = _repo(tmp_path, {"tests/ci/run_suite.py": MILES_RUN_SUITE})
    done = _inventory(repo, sha, "nightly-stage-c-4-gpu-mi350")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "is the head of PR #7" in done.stdout
    assert not (repo / "EXECUTED").exists()


def test_inventory_rejects_a_cuda_suite(tmp_path):
    repo, sha = _repo(tmp_path, {"tests/ci/run_suite.py": MILES_RUN_SUITE})
    done = _inventory(repo, sha, "stage-c-4-gpu-h200")
    assert done.returncode == 1
    assert "stage-c-4-gpu-h200 is a cuda suite, not a ROCm one" in done.stdout


def test_inventory_rejects_an_unknown_suite(tmp_path):
    repo, sha = _repo(tmp_path, {"tests/ci/run_suite.py": MILES_RUN_SUITE})
    done = _inventory(repo, sha, "nightly-stage-c-16-gpu-mi350")
    assert done.returncode == 1
    assert "is not in the inventory" in done.stdout


@pytest.mark.parametrize(("suite", "ok"), [
    ("stage-c-4-gpu-mi350", True),           # PER_COMMIT_SUITES
    ("nightly-stage-c-4-gpu-mi350", True),   # NIGHTLY_SUITES (annotated, a tuple)
    ("nightly-h200", False),
    ("stage-a-cpu", False),
])
def test_inventory_reads_the_older_split_layout(tmp_path, suite, ok):
    repo, sha = _repo(tmp_path, {"tests/ci/run_suite.py": SPLIT_RUN_SUITE})
    done = _inventory(repo, sha, suite)
    assert (done.returncode == 0) is ok, done.stdout + done.stderr


def test_inventory_rejects_what_only_evaluation_could_tell(tmp_path):
    repo, sha = _repo(tmp_path, {"tests/ci/run_suite.py": COMPUTED_RUN_SUITE})
    done = _inventory(repo, sha, "nightly-stage-c-4-gpu-mi350")
    assert done.returncode == 1 and "not in the inventory" in done.stdout


@pytest.mark.parametrize(("text", "message"), [
    (None, "does not exist"),
    ("CI_SUITES = {\n", "cannot be parsed: SyntaxError"),
    ("SUITES = {'rocm': ['nightly-stage-c-4-gpu-mi350']}\n", "has none of CI_SUITES"),
    ("CI_SUITES = dict(rocm=['nightly-stage-c-4-gpu-mi350'])\n", "has none of CI_SUITES"),
    ("CI_SUITES = {ROCM_KEY: ['nightly-stage-c-4-gpu-mi350']}\n", "has none of CI_SUITES"),
])
def test_inventory_rejects_an_unreadable_inventory(tmp_path, text, message):
    files = {"README.md": "x\n"} if text is None else {"tests/ci/run_suite.py": text}
    repo, sha = _repo(tmp_path, files)
    done = _inventory(repo, sha, "nightly-stage-c-4-gpu-mi350")
    assert done.returncode == 1 and message in done.stdout, done.stdout


def test_inventory_rejects_a_sha_that_is_not_the_pull_requests_head(tmp_path):
    repo, sha = _repo(tmp_path, {"tests/ci/run_suite.py": MILES_RUN_SUITE})
    other = "f" * 40
    done = _inventory(repo, other, "nightly-stage-c-4-gpu-mi350")
    assert done.returncode == 1
    assert f"refs/pull/7/head is {sha}, not the approved {other}" in done.stdout


def test_inventory_checks_each_listed_file_is_a_regular_file(tmp_path):
    repo, sha = _repo(
        tmp_path,
        {"tests/ci/run_suite.py": MILES_RUN_SUITE, "tests/e2e/megatron/test_a.py": "", "tests/e2e/test_b.py": ""},
        symlinks={"tests/e2e/test_link.py": "/etc/passwd", "tests/e2e/linked/test_c.py": "../megatron/test_a.py",
                  "tests/e2e/dir": "megatron"},
    )
    suite = "nightly-stage-c-4-gpu-mi350"
    assert _inventory(repo, sha, suite, "tests/e2e/megatron/test_a.py tests/e2e/test_b.py").returncode == 0
    for bad in ("tests/e2e/test_missing.py", "tests/e2e/test_link.py", "tests/e2e/megatron",
                "tests/e2e/dir/test_a.py", "tests/e2e/linked/test_c.py"):
        done = _inventory(repo, sha, suite, f"tests/e2e/test_b.py {bad}")
        assert done.returncode == 1 and f"{bad} is not a regular file" in done.stdout, bad


# ----------------------------------------------------------------------------------------------
# The plan of the GPU jobs, and the commands they run, on a stand-in repository (python3 for GPUs)


def _plan(suite: str, files: str = "", shards: str = "1", flags: str = "") -> list[dict]:
    step = _step(VALIDATE, "plan")
    env = {k: v for k, v in step["env"].items() if "${{" not in v}
    env.update(SUITE=suite, TEST_FILES=files, SHARDS=shards, RUNNER_FLAGS=flags)
    done = _python_step(step, env)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.outputs["matrix"])["include"]


def _execute(command: str, repo: Path, *extra: str) -> subprocess.CompletedProcess:
    """As the reusable job runs it: the command is the script of a `shell: bash` step
    (`bash --noprofile --norc -eo pipefail {0}`), `--list-only` appended in its plan step."""
    script = repo / ".step.sh"
    script.write_text(" ".join([command, *extra]) + "\n")
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(repo), "MILES_HARDWARE_PLATFORM": "rocm"}
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], env=env, cwd=repo,
                          capture_output=True, text=True, timeout=120)


def test_a_sharded_suite_is_one_job_per_partition_with_the_runners_own_options():
    flags = "--cadence nightly --match-all-labels --continue-on-error --enable-retry --max-attempts 2"
    matrix = _plan("nightly-stage-c-8-gpu-mi350", shards="2", flags=flags)
    base = f"python3 tests/ci/run_suite.py --hw rocm --suite nightly-stage-c-8-gpu-mi350 {flags}"
    assert matrix == [
        {"partition_id": 0, "command": f"{base} --auto-partition-id 0 --auto-partition-size 2"},
        {"partition_id": 1, "command": f"{base} --auto-partition-id 1 --auto-partition-size 2"},
    ]
    assert _plan("stage-c-4-gpu-mi350") == [
        {"partition_id": 0, "command": "python3 tests/ci/run_suite.py --hw rocm --suite stage-c-4-gpu-mi350"}]


def test_the_generated_commands_run_miles_real_runner_argument_parser(tmp_path):
    # miles' own run_suite.py parses each shard's command (its imports stubbed: nothing else runs).
    runner = MILES_RUNNER.read_text()
    stub = runner.split("def main():", 1)[1].split("args = parser.parse_args()", 1)[0]
    probe = ("import argparse, json, sys\nCI_CADENCES = {'regular', 'nightly', 'weekly', 'release'}\n"
             "NIGHTLY_CADENCE, REGULAR_CADENCE = 'nightly', 'regular'\nHW_MAPPING = {'cpu': 0, 'cuda': 1, 'rocm': 2}\n"
             "def main():" + stub + "args = parser.parse_args()\n    print(json.dumps(vars(args)))\nmain()\n")
    repo, _ = _repo(tmp_path, {"tests/ci/run_suite.py": probe})
    flags = " ".join(default_runner_flags("nightly-stage-c-8-gpu-mi350", _miles_options()))
    for shard in _plan("nightly-stage-c-8-gpu-mi350", shards="2", flags=flags):
        for extra in ((), ("--list-only",)):
            done = _execute(shard["command"], repo, *extra)
            assert done.returncode == 0, done.stderr
            args = json.loads(done.stdout)
            assert (args["suite"], args["hw"], args["cadence"]) == ("nightly-stage-c-8-gpu-mi350", "rocm", "nightly")
            assert (args["auto_partition_id"], args["auto_partition_size"]) == (shard["partition_id"], 2)
            assert args["match_all_labels"] and args["continue_on_error"] and args["enable_retry"]
            assert args["list_only"] is bool(extra)


def test_listed_files_use_the_runners_own_selection_where_it_has_one():
    step = _step(VALIDATE, "plan")
    env = {k: v for k, v in step["env"].items() if "${{" not in v}
    env.update(SUITE="s", TEST_FILES="tests/e2e/test_a.py tests/e2e/test_b.py tests/e2e/test_c.py", SHARDS="2",
               RUNNER_FLAGS="", RUNNER_FILE_OPTION="--files")
    done = _python_step(step, env)
    base = "python3 tests/ci/run_suite.py --hw rocm --suite s --files tests/e2e/test_a.py tests/e2e/test_b.py tests/e2e/test_c.py"
    assert [m["command"] for m in json.loads(done.outputs["matrix"])["include"]] == [
        f"{base} --auto-partition-id 0 --auto-partition-size 2", f"{base} --auto-partition-id 1 --auto-partition-size 2"]
    assert step["env"]["RUNNER_FILE_OPTION"] == ""  # neither miles' nor sglang's runner has one


def test_verify_step_refuses_another_commit(tmp_path):
    repo, sha = _repo(tmp_path, {"README.md": "x\n"})
    verify = _step(GPU_JOB, name_has="Verify")
    assert verify["env"] == {"HEAD_SHA": "${{ inputs.ref }}"}
    assert _bash_step(verify, {"HEAD_SHA": sha}, repo).returncode == 0
    done = _bash_step(verify, {"HEAD_SHA": "e" * 40}, repo)
    assert done.returncode == 1 and "not the approved" in done.stdout


def _bash_step(step: dict, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    # A step without `shell:` runs as `bash -e {0}` on Linux runners.
    assert "shell" not in step
    script = cwd / ".step.sh"
    script.write_text(step["run"])
    return subprocess.run(["bash", "-e", str(script)], env={"PATH": os.environ["PATH"], **env}, cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_the_shipped_gpu_job_runs_the_command_as_miles_job_does(tmp_path):
    repo, _ = _repo(tmp_path, {"tests/ci/run_suite.py": RUNNER_STANDIN})
    [shard] = _plan("nightly-stage-c-4-gpu-mi350")
    env = {"EXECUTE_COMMAND": shard["command"], "PYTHONPATH": str(repo)}
    listed = _bash_step(_step(GPU_JOB, name_has="Resolve the plan"), env, repo)
    assert listed.returncode == 0 and "'--list-only'" in listed.stdout
    done = _bash_step(_step(GPU_JOB, name_has="Run the tests"), env, repo)
    assert done.returncode == 0, done.stderr
    assert "argv ['--hw', 'rocm', '--suite', 'nightly-stage-c-4-gpu-mi350']" in done.stdout
    assert [r.file for r in parse_job_log(done.stdout).records] == ["tests/e2e/test_a.py"]


RUNNER_STANDIN = '''\
import sys
print("argv", sys.argv[1:])
print("[1/1] tests/e2e/test_a.py  PASS  elapsed=3s")
'''


def test_listed_files_run_one_by_one_and_their_lines_are_ingestible(tmp_path):
    repo, _ = _repo(tmp_path, {
        "tests/e2e/test_pass.py": "import os\nassert os.environ['MILES_HARDWARE_PLATFORM'] == 'rocm'\n",
        "tests/e2e/x/test_fail.py": "raise SystemExit(3)\n",
        "tests/e2e/test_slow.py": "import time\ntime.sleep(60)\n",
        "tests/fast/test_after.py": "print('still ran')\n",
    })
    files = "tests/e2e/test_pass.py tests/e2e/x/test_fail.py tests/e2e/test_slow.py tests/fast/test_after.py"
    step = _step(VALIDATE, "plan")
    env = {k: v for k, v in step["env"].items() if "${{" not in v}
    # 5 s: long enough for a python start-up on a loaded machine, far short of the slow file's 60 s
    env.update(SUITE="nightly-stage-c-4-gpu-mi350", TEST_FILES=files, SHARDS="2", RUNNER_FLAGS="",
               TIMEOUT_PER_FILE="5")
    [shard] = json.loads(_python_step(step, env).outputs["matrix"])["include"]  # one job: nothing partitions them
    listed = _execute(shard["command"], repo, "--list-only")  # the reusable job's plan step
    assert listed.returncode == 0 and "still ran" not in listed.stdout
    assert listed.stdout.splitlines()[-4:] == [f"listed: {f}" for f in files.split()]
    done = _execute(shard["command"], repo)
    assert done.returncode == 1, done.stdout + done.stderr  # a file failed: the job fails
    assert "still ran" in done.stdout  # ...but only after every listed file ran
    parsed = parse_job_log(done.stdout)
    assert parsed.malformed == []
    assert (parsed.suite, parsed.backend) == ("nightly-stage-c-4-gpu-mi350", "rocm")
    got = [(r.index, r.total, r.file, r.status, r.exit_code, r.timeout_after) for r in parsed.records]
    assert got == [
        (1, 4, "tests/e2e/test_pass.py", "PASS", None, None),
        (2, 4, "tests/e2e/x/test_fail.py", "FAIL", 3, None),
        (3, 4, "tests/e2e/test_slow.py", "TIMEOUT", 124, 5),
        (4, 4, "tests/fast/test_after.py", "PASS", None, None),
    ]
    assert step["env"]["TIMEOUT_PER_FILE"] == "1800"


def test_listed_files_all_passing_pass(tmp_path):
    repo, _ = _repo(tmp_path, {"tests/e2e/test_a.py": "", "tests/e2e/test_b.py": ""})
    [shard] = _plan("s", files="tests/e2e/test_a.py tests/e2e/test_b.py")
    done = _execute(shard["command"], repo)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [r.status for r in parse_job_log(done.stdout).records] == ["PASS", "PASS"]


def test_the_plan_for_nightly_stage_c_8_gpu_mi350_on_miles():
    """The generated job for the 8-GPU nightly suite with two shards, end to end from the App's
    dispatch table to the commands the GPU jobs run."""
    config, findings = load_config("dispatch:\n  nightly-stage-c-8-gpu-mi350:\n    workflow: rocm-on-demand.yml\n"
                                   "    shards: 2\n")
    assert findings == []
    run = plan("nightly-stage-c-8-gpu-mi350", config.dispatch["nightly-stage-c-8-gpu-mi350"], _miles_options(), [])
    inputs = run.inputs()
    assert inputs == {"runs_on": '["linux-mi35x-gpu-8"]', "shards": "2", "image": "",
                      "runner_flags": "--cadence nightly --match-all-labels --continue-on-error --enable-retry "
                                      "--max-attempts 2"}
    shapes = _python_step(_step(VALIDATE, "shapes"), {**GOOD, "SUITE": "nightly-stage-c-8-gpu-mi350",
                                                      **{k.upper(): v for k, v in inputs.items()}})
    assert shapes.returncode == 0, shapes.stdout
    assert shapes.outputs["image"] == "rocm/sgl-dev:miles-rocm720-mi35x"
    matrix = _plan("nightly-stage-c-8-gpu-mi350", shards=shapes.outputs["shards"], flags=shapes.outputs["runner_flags"])
    assert [m["partition_id"] for m in matrix] == [0, 1]
    assert all(m["command"].endswith(f"--auto-partition-id {m['partition_id']} --auto-partition-size 2") for m in matrix)


SGLANG_RUN_SUITE = '''\
from sglang.test.ci.ci_register import HWBackend

PER_COMMIT_SUITES = {HWBackend.AMD: ["stage-b-test-1-gpu-small-amd"], HWBackend.CUDA: ["stage-b-test-1-gpu-small"]}
NIGHTLY_SUITES = {HWBackend.AMD: ["nightly-amd-8-gpu-mi35x"]}
OTHER_SUITES = {HWBackend.AMD: []}
'''


def test_sglangs_setup_is_the_same_workflow_with_its_paths(tmp_path):
    """sglang's layout: test/run_suite.py, three inventory dicts, backend `amd`, test/registered."""
    repo, sha = _repo(tmp_path, {"test/run_suite.py": SGLANG_RUN_SUITE, "test/registered/amd/test_x.py": ""})
    step = _step(VALIDATE, "inventory")
    env = {k: v for k, v in step["env"].items() if "${{" not in v}
    env.update(SUITES_MODULE="test/run_suite.py", SUITES_VARIABLES="PER_COMMIT_SUITES NIGHTLY_SUITES OTHER_SUITES",
               SUITES_BACKEND="amd", SUITE="nightly-amd-8-gpu-mi35x", HEAD_SHA=sha, PULL_NUMBER="7",
               TEST_FILES="test/registered/amd/test_x.py", HOME=str(repo), GIT_CONFIG_NOSYSTEM="1")
    assert _python_step(step, env, cwd=repo).returncode == 0
    assert _python_step(step, {**env, "SUITE": "stage-b-test-1-gpu-small"}, cwd=repo).returncode == 1  # a CUDA suite
    assert env["SUITES_BACKEND"] == "amd" and step["env"]["SUITES_BACKEND"] == "rocm"
    # the shapes step's roots are a list the installer edits
    shapes = _step(VALIDATE, "shapes")
    sglang_shapes = {**shapes, "run": shapes["run"].replace(
        'TEST_ROOTS = ["tests/e2e", "tests/fast", "tests/fast-gpu", "tests/ci"]', 'TEST_ROOTS = ["test/registered"]')}
    assert sglang_shapes["run"] != shapes["run"]
    good = {**GOOD, "TEST_FILES": "test/registered/amd/test_x.py", "RUNS_ON": '["linux-mi35x-gpu-8"]'}
    assert _python_step(sglang_shapes, good).returncode == 0
    assert _python_step(shapes, good).returncode == 1
    plan_step = _step(VALIDATE, "plan")
    env = {k: v for k, v in plan_step["env"].items() if "${{" not in v}
    env.update(SUITE="nightly-amd-8-gpu-mi35x", TEST_FILES="", SHARDS="2", RUNNER_FLAGS="--nightly",
               RUNNER_SCRIPT="test/run_suite.py", RUNNER_HW="amd")
    [first, _] = json.loads(_python_step(plan_step, env).outputs["matrix"])["include"]
    assert first["command"] == ("python3 test/run_suite.py --hw amd --suite nightly-amd-8-gpu-mi35x --nightly "
                                "--auto-partition-id 0 --auto-partition-size 2")
