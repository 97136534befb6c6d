"""deploy/workflows/rocm-on-demand.yml: the workflow the App dispatches for `/run-rocm`, and
deploy/workflows/rocm-on-demand-job.yml, the GPU job it calls for every shard.

Linted offline by actionlint (with shellcheck on its shell scripts) and zizmor, with zero findings
allowed, the two installed side by side so actionlint checks the call against the job's declared
inputs; their structure checked from the parsed YAML; and their own scripts (the input checks, the
static inventory check, the image resolution, the plan of the GPU jobs, the commit check, the
container start with its cache modes, the install and the command) extracted and run against small
git repositories, a stand-in registry and a stand-in `docker`, so what the workflows enforce is
tested for real, not read. The App's run plans of both real targets (tests/fixtures/targets/*/ci-*)
pass the input checks, and the commands the workflow builds from them are the commands the App's
plan shows; each is parsed by the target's real runner.
"""

from __future__ import annotations

import ast
import datetime
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from checks.config.schema import Dispatch, load_config
from checks.target.dispatch_plan import plan
from checks.calibration.job_log import parse_job_log
from checks.target.target_ci import read_target_ci
from checks.scanning.tree import DirectoryTree
from tests import REPO
from tests.patience import PATIENCE

ROOT = REPO
WORKFLOW = ROOT / "deploy" / "workflows" / "rocm-on-demand.yml"
JOB_WORKFLOW = ROOT / "deploy" / "workflows" / "rocm-on-demand-job.yml"
TARGETS = ROOT / "tests" / "fixtures" / "targets"
MILES = TARGETS / "miles" / "ci-31f1ca9"
SGLANG = TARGETS / "sglang" / "ci-382343f"
CONSUMER_PATH = ".github/workflows/nightly-test-amd-miles-rocm720.yml"
BIN = Path(sys.executable).parent
INPUTS = ("suite", "head_sha", "pull_number", "test_files", "plan")
ANY = 'dispatch:\n  "*":\n    workflow: rocm-on-demand.yml\n'

TEXT = WORKFLOW.read_text()
DOC = yaml.safe_load(TEXT)
JOBS = DOC["jobs"]
VALIDATE = JOBS["validate"]
RUN = JOBS["run"]
JOB_TEXT = JOB_WORKFLOW.read_text()
JOB_DOC = yaml.safe_load(JOB_TEXT)
GPU_JOB = JOB_DOC["jobs"]["run"]
RUNNER_LABELS = ["amd", "mi350", "4gpu", "8gpu", "linux-mi35x-gpu-1", "linux-mi35x-gpu-2", "linux-mi35x-gpu-8",
                 "linux-mi35x-gpu-8.fabric"]


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
        if uses is not None and str(step.get("uses", "")).startswith(uses):
            return step
        if name_has is not None and name_has in step.get("name", ""):
            return step
    raise AssertionError(f"no step {step_id or uses or name_has}")


def _run_steps():
    for job_id, job in [*JOBS.items(), *JOB_DOC["jobs"].items()]:
        for step in job.get("steps", []):
            if "run" in step:
                yield job_id, step


def _workflow_constant(name: str, step_id: str = "shapes"):
    """A list the installer edits, read from the step's script (a literal)."""
    tree = ast.parse(_step(VALIDATE, step_id)["run"])
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and node.targets[0].id == name:
            return ast.literal_eval(node.value)
    raise AssertionError(name)


def _installed(tmp_path: Path, caller: str = TEXT, job: str = JOB_TEXT) -> Path:
    """The two workflows in a repository, as the installation instructions say."""
    workflows = tmp_path / "repo" / ".github" / "workflows"
    workflows.mkdir(parents=True, exist_ok=True)
    # actionlint finds the project (and so the called workflow) by its .git directory; without
    # one it skips checking the call, silently.
    (tmp_path / "repo" / ".git").mkdir(exist_ok=True)
    (workflows / "rocm-on-demand.yml").write_text(caller)
    (workflows / "rocm-on-demand-job.yml").write_text(job)
    return workflows


def _actionlint(path: Path, tmp_path: Path, *, cwd: Path | None = None) -> list[dict]:
    config = tmp_path / "actionlint.yaml"
    # Without this, actionlint rejects the self-hosted MI350 labels as unknown runner labels.
    config.write_text(f"self-hosted-runner:\n  labels: {json.dumps(RUNNER_LABELS)}\n")
    shellcheck = shutil.which("shellcheck", path=str(BIN)) or shutil.which("shellcheck") or ""
    done = subprocess.run(
        [_tool("actionlint"), "-config-file", str(config), "-shellcheck", shellcheck, "-format", "{{json .}}", str(path)],
        capture_output=True, text=True, timeout=PATIENCE, cwd=cwd or path.parent,
    )
    assert done.returncode in (0, 1), done.stderr  # 0: clean, 1: findings, others: the tool failed
    return json.loads(done.stdout or "null") or []


def _zizmor(path: Path, persona: str) -> list[dict]:
    done = subprocess.run(
        [_tool("zizmor"), "--offline", "--no-config", f"--persona={persona}", "--format=json", str(path)],
        capture_output=True, text=True, timeout=PATIENCE,
    )
    # 0: clean; 10-14: findings by highest severity; anything else: the tool failed.
    assert done.returncode == 0 or 10 <= done.returncode <= 14, done.stderr
    return json.loads(done.stdout)


def _repo_root(workflows: Path) -> Path:
    return workflows.parent.parent


def test_actionlint_finds_nothing(tmp_path):
    workflows = _installed(tmp_path)
    root = _repo_root(workflows)
    assert _actionlint(workflows / "rocm-on-demand.yml", tmp_path, cwd=root) == []
    assert _actionlint(workflows / "rocm-on-demand-job.yml", tmp_path, cwd=root) == []


def test_actionlint_checks_the_call_against_the_gpu_jobs_inputs(tmp_path):
    # A misspelt input and a missing required one: actionlint reads the called workflow.
    broken = TEXT.replace("container_image: ${{ needs.validate.outputs.image }}",
                          "container_imag: ${{ needs.validate.outputs.image }}")
    assert broken != TEXT
    workflows = _installed(tmp_path, broken)
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
    assert set(Dispatch(workflow="rocm-on-demand.yml").inputs) == set(inputs)  # the App's defaults
    assert len(inputs) <= 10  # GitHub Enterprise Server 3.17-3.19 take at most 10
    for name, spec in inputs.items():
        assert spec["type"] == "string", name
    for name in ("suite", "head_sha", "pull_number", "plan"):
        assert inputs[name]["required"] is True
    assert inputs["test_files"]["required"] is False and inputs["test_files"]["default"] == ""


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
    assert len(scripts) >= 10
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
    trusted = _step(VALIDATE, name_has="this branch's workflows")
    assert trusted["with"]["ref"] == "${{ github.sha }}" and trusted["with"]["sparse-checkout"] == ".github/workflows"
    inventory = _step(VALIDATE, "inventory")
    assert steps.index(inventory) > steps.index(checkout) and steps.index(inventory) > steps.index(trusted)
    assert "import ast" in inventory["run"]
    # The only scripts of this job are its Python checks and plan: nothing runs a file of the PR.
    assert [s.get("id") for s in steps if "run" in s] == ["shapes", "inventory", "image", "plan"]
    for step in (_step(VALIDATE, "shapes"), inventory):
        assert step["shell"] == "python"
        for name, var in (("suite", "SUITE"), ("head_sha", "HEAD_SHA"), ("pull_number", "PULL_NUMBER"), ("test_files", "TEST_FILES")):
            assert step["env"][var] == "${{ inputs.%s }}" % name
    assert _step(VALIDATE, "shapes")["env"]["PLAN"] == "${{ inputs.plan }}"
    # The GPU jobs get only what the checks wrote: no raw input reaches them.
    for name, value in VALIDATE["outputs"].items():
        assert value.startswith("${{ steps.") and "inputs." not in value, name
    plan_step = _step(VALIDATE, "plan")
    assert plan_step["env"]["SHARDS"] == "${{ steps.shapes.outputs.shards }}"
    assert plan_step["env"]["RUNNER_FLAGS"] == "${{ steps.shapes.outputs.runner_flags }}"
    assert plan_step["env"]["TIMEOUT_PER_FILE"] == "${{ steps.shapes.outputs.timeout_per_file }}"
    assert _step(VALIDATE, "image")["env"]["IMAGE"] == "${{ steps.shapes.outputs.image }}"


def test_the_gpu_jobs_call_the_shipped_gpu_job_with_checked_values_only():
    assert RUN["needs"] == "validate"
    assert RUN["uses"] == "./.github/workflows/rocm-on-demand-job.yml"
    assert RUN["strategy"] == {"fail-fast": False, "matrix": "${{ fromJSON(needs.validate.outputs.matrix) }}"}
    assert RUN["with"] == {
        "ref": "${{ inputs.head_sha }}",  # checked to be refs/pull/<n>/head by the validate job
        "runs_on": "${{ needs.validate.outputs.runs_on }}",
        "container_image": "${{ needs.validate.outputs.image }}",
        "execute_command": "${{ matrix.command }}",
        "install": "${{ needs.validate.outputs.install }}",
        "env": "${{ needs.validate.outputs.env }}",
        "workdir": "${{ needs.validate.outputs.workdir }}",
        "cache": "${{ needs.validate.outputs.cache }}",
        "job_timeout_min": "${{ needs.validate.outputs.job_timeout_min }}",
    }
    declared = (JOB_DOC.get("on") or JOB_DOC[True])["workflow_call"]["inputs"]
    assert set(declared) == set(RUN["with"])
    # the job's timeout is the plan's (the target's own job's), so what was charged is what may run
    assert GPU_JOB["timeout-minutes"] == "${{ fromJSON(inputs.job_timeout_min) }}"
    assert GPU_JOB["runs-on"] == "${{ fromJSON(inputs.runs_on) }}"


def test_no_secret_reaches_the_job_that_runs_pr_code():
    assert "secrets" not in RUN
    for text, doc in ((TEXT, DOC), (JOB_TEXT, JOB_DOC)):
        assert "secrets" not in _keys(doc)  # no `secrets:` to a call, no `secrets:` declared
        assert not re.search(r"secrets\s*[.\[]", text)  # no secrets.X anywhere
        assert "github.token" not in text and "GITHUB_TOKEN" not in text
    assert "env" not in DOC and "env" not in RUN
    assert set(GPU_JOB["env"]) == {"PROFILE"}
    for checkout in [s for s in GPU_JOB["steps"] if str(s.get("uses", "")).startswith("actions/checkout@")]:
        assert checkout["with"]["persist-credentials"] is False
    pr = _step(GPU_JOB, name_has="approved commit")
    assert pr["with"] == {"ref": "${{ inputs.ref }}", "path": "checkout", "persist-credentials": False}
    trusted = _step(GPU_JOB, name_has="trusted CI scripts")
    assert trusted["with"]["ref"] == "${{ github.sha }}" and trusted["with"]["path"] == "trusted"
    for step in GPU_JOB["steps"]:
        for value in (step.get("env") or {}).values():
            assert "secret" not in str(value).lower() and "token" not in str(value).lower()


def _keys(node) -> set:
    if isinstance(node, dict):
        return set(node) | {k for v in node.values() for k in _keys(v)}
    if isinstance(node, list):
        return {k for v in node for k in _keys(v)}
    return set()


def test_the_gpu_job_never_shares_the_hosts_ipc_nor_runs_privileged():
    assert "container" not in GPU_JOB  # it starts the target's container itself, with these options
    assert "--ipc=host" not in JOB_TEXT and "--privileged" not in JOB_TEXT
    start = _step(GPU_JOB, name_has="Start the container")["run"]
    for option in ("--device=/dev/kfd", "--shm-size 32g", "--group-add video", "--group-add render"):
        assert option in start, option
    names = [s.get("name", "") for s in GPU_JOB["steps"]]
    assert names.index("Start the container") < names.index("Install the pull request's code as the target's job does") \
        < names.index("Run the tests") < names.index("Remove the container")
    assert _step(GPU_JOB, name_has="Remove the container")["if"] == "${{ always() }}"


# ----------------------------------------------------------------------------------------------
# The App's plans of both real targets, through this workflow's checks and plan


def _python_step(step: dict, env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    # `shell: python` runs the script file with the runner's python; only `env:` reaches it, and
    # GITHUB_OUTPUT names the file a step writes its outputs to.
    env = dict(env)
    output = Path(env.setdefault("GITHUB_OUTPUT", str(Path(os.environ.get("TMPDIR", "/tmp")) / f"out-{os.getpid()}")))
    output.write_text("")
    done = subprocess.run(
        [sys.executable, "-c", step["run"]], env={"PATH": os.environ["PATH"], **env},
        cwd=cwd, capture_output=True, text=True, timeout=PATIENCE,
    )
    done.outputs = _outputs(output.read_text())
    return done


def _outputs(text: str) -> dict[str, str]:
    """GITHUB_OUTPUT's `name=value` lines and `name<<DELIM ... DELIM` blocks."""
    out, lines, i = {}, text.split("\n"), 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and "=" not in line.split("<<", 1)[0]:
            name, delim = line.split("<<", 1)
            j = lines.index(delim, i + 1)
            out[name] = "\n".join(lines[i + 1:j])
            i = j + 1
            continue
        if "=" in line:
            name, value = line.split("=", 1)
            out[name] = value
        i += 1
    return out


def _target_plan(target: str, suite: str, extra: str = ""):
    if target == "sglang":
        config, _ = load_config((ROOT / "docs" / "configs" / "sglang.yml").read_text() + ANY + extra)
        ci = read_target_ci(DirectoryTree(SGLANG), config)
    else:
        config, _ = load_config(ANY + extra)
        ci = read_target_ci(DirectoryTree(MILES), config,
                            consumers_from={f"sgl-project/sglang:{CONSUMER_PATH}": (SGLANG / CONSUMER_PATH).read_bytes()})
    return plan(suite, config.dispatch_for(suite), ci.options, [], jobs=ci.jobs, fleet=ci.fleet,
                suites_module=config.paths.suites_module)


SHA = "0123456789abcdef0123456789abcdef01234567"
PLAN = {"runs_on": ["self-hosted", "amd", "mi350", "4gpu"], "shards": 1, "image": "rocm/sgl-dev:miles-rocm720-mi35x",
        "image_days": 0, "timeout_per_file_s": 1800, "job_timeout_min": 180, "runner_flags": [], "install": [],
        "env": [], "cache": "read-only"}
GOOD = {"SUITE": "nightly-stage-c-4-gpu-mi350", "HEAD_SHA": SHA, "PULL_NUMBER": "123", "TEST_FILES": "",
        "PLAN": json.dumps(PLAN)}
# sglang's settings of the plan step (docs/on-demand-workflow.md's table)
SGLANG_PLAN_ENV = {"RUNNER_SCRIPT": "run_suite.py", "RUNNER_WORKDIR": "test", "RUNNER_HW": "amd"}


def _with_plan(**changes) -> dict:
    return {**GOOD, "PLAN": json.dumps({**PLAN, **changes})}


def _plan_matrix(shapes_outputs: dict, suite: str, files: str = "", **settings) -> tuple[list[dict], str]:
    step = _step(VALIDATE, "plan")
    env = {k: v for k, v in step["env"].items() if "${{" not in v}
    env.update(settings)
    env.update(SUITE=suite, TEST_FILES=files, SHARDS=shapes_outputs["shards"], RUNNER_FLAGS=shapes_outputs["runner_flags"],
               TIMEOUT_PER_FILE=shapes_outputs["timeout_per_file"])
    done = _python_step(step, env)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.outputs["matrix"])["include"], done.outputs["workdir"]


def _sglang_mi35x_suites() -> list[str]:
    """sglang's MI35x suites the App plans (the refused ones: tests/checks/target/test_fleet_plans.py)."""
    from tests.checks.target.test_fleet_plans import REFUSED, _mi35x_jobs

    return sorted(s for s in _mi35x_jobs() if s not in REFUSED)


@pytest.mark.parametrize(("target", "suite"), [
    *(("sglang", s) for s in _sglang_mi35x_suites()),
    ("miles", "stage-c-4-gpu-mi350"), ("miles", "nightly-stage-c-4-gpu-mi350"),
])
def test_the_apps_plan_passes_the_checks_and_becomes_the_commands_it_shows(target, suite):
    """The differential: what the App plans (and shows in its reply, and `run-plan` prints) is
    what this workflow accepts and runs, command for command: every AMD suite of sglang's MI35x
    jobs, and miles' plannable ROCm suites."""
    run = _target_plan(target, suite)
    inputs = run.inputs()
    shapes = _python_step(_step(VALIDATE, "shapes"), {**GOOD, "SUITE": suite, "PLAN": inputs["plan"]})
    assert shapes.returncode == 0, shapes.stdout
    assert json.loads(shapes.outputs["runs_on"]) == list(run.runs_on)
    assert int(shapes.outputs["job_timeout_min"]) == run.job_timeout_min
    assert shapes.outputs["install"].split("\n") == list(run.install) if run.install else shapes.outputs["install"] == ""
    assert shapes.outputs["cache"] == "read-only"
    settings = SGLANG_PLAN_ENV if target == "sglang" else {}
    matrix, workdir = _plan_matrix(shapes.outputs, suite, **settings)
    assert [m["command"] for m in matrix] == run.commands()
    assert workdir == run.workdir
    assert all("--list-only" not in m["command"] for m in matrix)


def _parser_probe(runner: Path, prelude: str) -> str:
    """The runner's own argparse setup as a script that prints the parsed arguments (its imports
    stubbed: nothing else of it runs)."""
    text = runner.read_text()
    body = text.split("def main():", 1)[1].split("args = parser.parse_args()", 1)[0]
    return prelude + "def main():" + body + "args = parser.parse_args()\n    print(json.dumps(vars(args)))\nmain()\n"


def test_every_command_parses_with_the_targets_real_runner(tmp_path):
    """sglang's runner rejects `--list-only` (exit 2) and accepts every command the plans give it;
    miles' runner accepts its plans' commands."""
    sglang = _parser_probe(SGLANG / "test" / "run_suite.py",
                           "import argparse, json, sys\nHW_MAPPING = {'cpu': 0, 'cuda': 1, 'amd': 2}\n")
    miles = _parser_probe(MILES / "tests" / "ci" / "run_suite.py",
                          "import argparse, json, sys\nCI_CADENCES = {'regular', 'nightly', 'weekly', 'release'}\n"
                          "NIGHTLY_CADENCE, REGULAR_CADENCE = 'nightly', 'regular'\nHW_MAPPING = {'cpu': 0, 'cuda': 1, 'rocm': 2}\n")
    repo, _ = _repo(tmp_path, {"test/run_suite.py": sglang, "tests/ci/run_suite.py": miles})
    for target, suite, runner_dir in (("sglang", "stage-c-test-large-8-gpu-amd-mi35x", repo / "test"),
                                      ("sglang", "nightly-amd-8-gpu-mi35x-glm51", repo / "test"),
                                      ("miles", "stage-c-4-gpu-mi350", repo), ("miles", "nightly-stage-c-4-gpu-mi350", repo)):
        run = _target_plan(target, suite)
        for shard, command in enumerate(run.commands()):
            done = subprocess.run(["bash", "-c", command], cwd=runner_dir, capture_output=True, text=True, timeout=PATIENCE)
            assert done.returncode == 0, (command, done.stderr)
            args = json.loads(done.stdout)
            assert args["suite"] == suite and args["timeout_per_file"] == run.timeout_per_file_s
            if run.shards > 1:
                assert (args["auto_partition_id"], args["auto_partition_size"]) == (shard, run.shards)
    rejected = subprocess.run(["bash", "-c", run.command(0) + " --list-only"], cwd=repo, capture_output=True, text=True)
    assert rejected.returncode == 0  # miles' runner has --list-only...
    run = _target_plan("sglang", "stage-c-test-large-8-gpu-amd-mi35x")
    rejected = subprocess.run(["bash", "-c", run.command(0) + " --list-only"], cwd=repo / "test", capture_output=True, text=True)
    assert rejected.returncode == 2 and "unrecognized arguments: --list-only" in rejected.stderr  # ...sglang's has not


# ----------------------------------------------------------------------------------------------
# The input checks, run


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"TEST_FILES": "tests/e2e/megatron/test_qwen3_4B_ppo.py"},
        {"TEST_FILES": "tests/e2e/fsdp/test_qwen3_0.6B_fsdp_distributed.py tests/fast/test_utils.py"},
        {"TEST_FILES": " tests/fast-gpu/a/b-c/test_x.py  tests/ci/test_y.py "},
        {"SUITE": "a"},
        {"PULL_NUMBER": "9999999999"},
        _with_plan(runs_on=["linux-mi35x-gpu-8"], shards=2),
        _with_plan(runs_on=["linux-mi35x-gpu-8.fabric"], shards=8),
        _with_plan(image="miles-rocm720-mi35x-20260811"),
        _with_plan(image="rocm/sgl-dev:miles-rocm720-mi35x-{date}", image_days=7),
        _with_plan(image="rocm/sgl-dev:{version}-rocm724-mi35x-{date}", image_days=7),
        _with_plan(image="rocm/sgl-dev@sha256:" + "a" * 64),
        _with_plan(runner_flags=["--cadence", "nightly", "--match-all-labels", "--continue-on-error", "--enable-retry",
                                 "--max-attempts", "2"]),
        _with_plan(runner_flags=["--nightly"], timeout_per_file_s=14400, job_timeout_min=480),
        _with_plan(install=["bash scripts/ci/amd/amd_ci_install_dependency.sh --skip-test-time-deps",
                            "bash scripts/ci/amd/amd_ci_exec.sh pip install tabulate"]),
        _with_plan(env=["SGLANG_USE_AITER=1", "RCCL_MSCCL_ENABLE=0"], cache="scratch"),
    ],
)
def test_shapes_accepts(changes):
    done = _python_step(_step(VALIDATE, "shapes"), {**GOOD, **changes})
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    "changes",
    [
        {"HEAD_SHA": SHA.upper()}, {"HEAD_SHA": SHA[:39]}, {"HEAD_SHA": SHA + "0"}, {"HEAD_SHA": "main"},
        {"HEAD_SHA": SHA + "\n"}, {"PULL_NUMBER": ""}, {"PULL_NUMBER": "0"}, {"PULL_NUMBER": "12a"},
        {"PULL_NUMBER": "1/../../heads/main"}, {"PULL_NUMBER": "-1"}, {"PULL_NUMBER": "12345678901"},
        {"SUITE": ""}, {"SUITE": "-stage"}, {"SUITE": ".hidden"}, {"SUITE": "stage c"}, {"SUITE": "stage;rm -rf /"},
        {"SUITE": "stage\n::set-output name=x::y"}, {"SUITE": "s" * 129}, {"SUITE": "stagé"},
        {"TEST_FILES": "tests/e2e/../../etc/test_x.py"}, {"TEST_FILES": "tests/e2e/a..b/test_x.py"},
        {"TEST_FILES": "tests/e2e/-rf/test_x.py"}, {"TEST_FILES": "tests/e2e/.git/test_x.py"},
        {"TEST_FILES": "/tests/e2e/test_x.py"}, {"TEST_FILES": "tests/unit/test_x.py"}, {"TEST_FILES": "tests/e2e/test_x.sh"},
        {"TEST_FILES": "tests/e2e/x.py"}, {"TEST_FILES": "tests/e2e/conftest.py"}, {"TEST_FILES": "tests/e2e/test_x.py;id"},
        {"TEST_FILES": "tests/e2e/test_$(id).py"}, {"TEST_FILES": "tests/e2e/test_*.py"},
        {"TEST_FILES": "tests/e2e/test_x.py\ntests/e2e/test_y.py"}, {"TEST_FILES": "tests/e2e/test_x.py\ttests/e2e/test_y.py"},
        {"TEST_FILES": "tests/e2e/tést_x.py"}, {"TEST_FILES": "tests/e2e/test_x.py tests/e2e/test_x.py"},
        {"TEST_FILES": " ".join(f"tests/e2e/test_{i}.py" for i in range(101))},
        {"TEST_FILES": "tests/e2e/" + "a" * 250 + "/test_x.py"},
        {"PLAN": ""}, {"PLAN": "[]"}, {"PLAN": "{"}, _with_plan(extra_key=1),
        _with_plan(runs_on="self-hosted"), _with_plan(runs_on=["self-hosted", "amd", "mi350"]),  # a subset: any MI350
        _with_plan(runs_on=["self-hosted", "amd", "mi350", "4gpu", "x"]), _with_plan(runs_on=["ubuntu-latest"]),
        _with_plan(shards=0), _with_plan(shards=9), _with_plan(shards="2"), _with_plan(shards=True), _with_plan(shards=1.5),
        _with_plan(image="evil/image:latest"), _with_plan(image="rocm/sgl-dev-evil:tag"),
        _with_plan(image="docker.io/rocm/sgl-dev:tag"), _with_plan(image="rocm/sgl-dev:tag; id"),
        _with_plan(image="rocm/sgl-dev@sha256:abc"), _with_plan(image="-tag"), _with_plan(image="rocm/sgl-dev:{x}"),
        _with_plan(image="rocm/sgl-dev:a-{date}", image_days=0), _with_plan(image="rocm/sgl-dev:a-{date}", image_days=99),
        _with_plan(image="rocm/sgl-dev:a-{date}-{date}", image_days=7), _with_plan(image=["x"]),
        _with_plan(timeout_per_file_s=0), _with_plan(timeout_per_file_s=10 ** 9), _with_plan(job_timeout_min=721), _with_plan(job_timeout_min=0),
        _with_plan(runner_flags=["--labels", "run-ci-all"]), _with_plan(runner_flags=["--cadence"]),
        _with_plan(runner_flags=["--cadence", "hourly"]), _with_plan(runner_flags=["--max-attempts", "99"]),
        _with_plan(runner_flags=["--continue-on-error;id"]), _with_plan(runner_flags=["--nightly\n::error::x"]),
        _with_plan(runner_flags=["$(id)"]), _with_plan(runner_flags=["--auto-partition-id", "0"]),
        _with_plan(runner_flags=["--list-only"]), _with_plan(runner_flags="--nightly"),
        _with_plan(install=["curl evil.sh | sh"]), _with_plan(install=["bash scripts/ci/amd/other.sh"]),
        _with_plan(install="pip install -e ."),
        _with_plan(env=["LD_PRELOAD=/tmp/x.so"]), _with_plan(env=["SGLANG_X=$(id)"]), _with_plan(env=["SGLANG_X"]),
        _with_plan(env=["SGLANG_X=a b"]), _with_plan(env=[f"SGLANG_{i}=1" for i in range(21)]),
        _with_plan(cache="shared"), _with_plan(cache="rw"),  # shared: only if CACHE_MODES lists it
    ],
)
def test_shapes_rejects(changes):
    done = _python_step(_step(VALIDATE, "shapes"), {**GOOD, **changes})
    assert done.returncode == 1, done.stdout + done.stderr
    # One line: a rejected value never starts a line of its own (no forged workflow command).
    assert done.stdout.startswith("::error::") and done.stdout.count("\n") == 1, done.stdout


def test_a_shared_cache_is_an_explicit_choice_of_the_installer():
    shapes = _step(VALIDATE, "shapes")
    assert _workflow_constant("CACHE_MODES") == ["read-only", "scratch"]
    allowed = {**shapes, "run": shapes["run"].replace('CACHE_MODES = ["read-only", "scratch"]',
                                                      'CACHE_MODES = ["read-only", "scratch", "shared"]')}
    assert allowed["run"] != shapes["run"]
    done = _python_step(allowed, _with_plan(cache="shared"))
    assert done.returncode == 0 and done.outputs["cache"] == "shared"


def test_shapes_writes_the_checked_values_for_the_gpu_jobs():
    done = _python_step(_step(VALIDATE, "shapes"), _with_plan(
        runs_on=["linux-mi35x-gpu-8"], shards=2, image="", runner_flags=["--cadence", "nightly"],
        install=["pip install -e . --no-deps --break-system-packages"], env=["SGLANG_USE_AITER=1"], job_timeout_min=60))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.outputs == {"runs_on": '["linux-mi35x-gpu-8"]', "image": "rocm/sgl-dev:miles-rocm720-mi35x",
                            "image_days": "0", "shards": "2", "runner_flags": "--cadence nightly",
                            "timeout_per_file": "1800", "job_timeout_min": "60",
                            "install": "pip install -e . --no-deps --break-system-packages",
                            "env": "SGLANG_USE_AITER=1", "cache": "read-only"}


# ----------------------------------------------------------------------------------------------
# Dated images, resolved as the targets' jobs resolve them


class _Registry(http.server.BaseHTTPRequestHandler):
    """Docker Hub's tag list, for the tags given to the fixture; `name` filters by substring."""

    tags: list[str] = []
    asked: list[str] = []

    def do_GET(self):  # noqa: N802 - the handler's name
        from urllib.parse import parse_qs, urlparse

        url = urlparse(self.path)
        name = parse_qs(url.query).get("name", [""])[0]
        type(self).asked.append(self.path)
        body = json.dumps({"results": [{"name": t} for t in self.tags if name in t], "next": None}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture()
def registry():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Registry)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Registry.tags, _Registry.asked = [], []
    yield f"http://127.0.0.1:{server.server_address[1]}/v2/repositories/{{repository}}/tags", _Registry
    server.shutdown()


def _day(back: int) -> str:
    return (datetime.datetime.now(datetime.timezone.utc).date() - datetime.timedelta(days=back)).strftime("%Y%m%d")


def _resolve(url: str, image: str, days: int) -> subprocess.CompletedProcess:
    return _python_step(_step(VALIDATE, "image"), {"IMAGE": image, "IMAGE_DAYS": str(days), "REGISTRY_TAGS_URL": url})


def test_a_dated_tag_is_the_newest_day_that_has_an_image(registry):
    url, reg = registry
    reg.tags = [f"miles-rocm720-mi35x-{_day(2)}", f"miles-rocm720-mi35x-{_day(5)}", "miles-rocm720-mi35x",
                f"miles-rocm720-mi35x-{_day(0)}-debug"]
    done = _resolve(url, "rocm/sgl-dev:miles-rocm720-mi35x-{date}", 7)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.outputs["image"] == f"rocm/sgl-dev:miles-rocm720-mi35x-{_day(2)}"
    assert all("/v2/repositories/rocm/sgl-dev/tags?" in p for p in reg.asked)


def test_sglangs_version_and_date_are_found_in_the_tag_list(registry):
    url, reg = registry
    reg.tags = [f"v0.5.9-rocm724-mi35x-{_day(1)}", f"v0.5.10.post1-rocm724-mi35x-{_day(1)}",
                f"v0.5.11-rocm720-mi35x-{_day(0)}", f"nightly-rocm724-mi35x-{_day(0)}"]
    done = _resolve(url, "rocm/sgl-dev:{version}-rocm724-mi35x-{date}", 7)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.outputs["image"] == f"rocm/sgl-dev:v0.5.10.post1-rocm724-mi35x-{_day(1)}"  # the highest version


def test_no_image_in_the_window_fails_before_a_gpu_machine_is_touched(registry):
    url, reg = registry
    reg.tags = [f"miles-rocm720-mi35x-{_day(9)}"]
    done = _resolve(url, "rocm/sgl-dev:miles-rocm720-mi35x-{date}", 7)
    assert done.returncode == 1 and "no image" in done.stdout
    plain = _resolve(url, "rocm/sgl-dev:miles-rocm720-mi35x", 0)  # an undated tag is used as it is
    assert plain.returncode == 0 and plain.outputs["image"] == "rocm/sgl-dev:miles-rocm720-mi35x"


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


def test_inventory_accepts_a_suite_this_branchs_workflows_run_with_the_backend(tmp_path):
    """sglang's runner runs AMD suites its inventory does not list (28 of the 37 its MI35x jobs
    run): the trusted branch's own workflows name them, with `--hw amd`."""
    repo, sha = _repo(tmp_path, {"test/run_suite.py": "PER_COMMIT_SUITES = {HWBackend.AMD: ['listed']}\n"})
    trusted = tmp_path / "trusted" / ".github" / "workflows"
    trusted.mkdir(parents=True)
    (trusted / "nightly.yml").write_text((SGLANG / ".github" / "workflows" / "nightly-test-amd-rocm720.yml").read_text())
    step = _step(VALIDATE, "inventory")
    env = {k: v for k, v in step["env"].items() if "${{" not in v}
    env.update(SUITES_MODULE="test/run_suite.py", SUITES_VARIABLES="PER_COMMIT_SUITES NIGHTLY_SUITES OTHER_SUITES",
               SUITES_BACKEND="amd", SUITE="nightly-amd-8-gpu-mi35x-deepseek-v4-pro", HEAD_SHA=sha, PULL_NUMBER="7",
               TEST_FILES="", HOME=str(repo), GIT_CONFIG_NOSYSTEM="1")
    assert env["TRUSTED_WORKFLOWS"] == "../trusted/.github/workflows" and env["SUITES_FROM_WORKFLOWS"] == "true"
    done = _python_step(step, env, cwd=repo)
    assert done.returncode == 0, done.stdout
    for suite in ("nightly-amd-8-gpu-mi35x-deepseek-v4", "not-run-anywhere", "nightly-stage-c-8-gpu-mi350"):
        done = _python_step(step, {**env, "SUITE": suite}, cwd=repo)
        assert done.returncode == 1 and "workflows do not run it" in done.stdout, suite
    # a suite that only another backend's command runs is not one
    done = _python_step(step, {**env, "SUITES_BACKEND": "rocm"}, cwd=repo)
    assert done.returncode == 1
    assert _python_step(step, {**env, "SUITES_FROM_WORKFLOWS": "false"}, cwd=repo).returncode == 1


# ----------------------------------------------------------------------------------------------
# The GPU job's steps, run with a stand-in `docker` that records what it is asked


def _bash_step(step: dict, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    # A step without `shell:` runs as `bash -e {0}` on Linux runners.
    assert "shell" not in step
    script = cwd / ".step.sh"
    script.write_text(step["run"])
    return subprocess.run(["bash", "-e", str(script)], env={"PATH": os.environ["PATH"], **env}, cwd=cwd,
                          capture_output=True, text=True, timeout=PATIENCE)


FAKE_DOCKER = '''#!/bin/bash
printf '%s\\n' "docker $*" >> "$DOCKER_LOG"
if [ "$1" = exec ]; then
  # run the command for real (the container is this machine), from the directory it names
  shift
  while [ $# -gt 0 ]; do
    case "$1" in
      -w) dir="$2"; shift 2;;
      -e) export "$2"; shift 2;;
      *) break;;
    esac
  done
  shift  # the container's name
  cd "${MOUNT_ROOT}${dir#"$CHECKOUT_MOUNT"}" && exec "$@"
fi
'''


@pytest.fixture()
def gpu_host(tmp_path):
    """A runner machine: a workspace with the trusted scripts and the PR's checkout, host cache
    directories, and `docker` that logs its arguments (and runs `exec`ed commands here)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(FAKE_DOCKER)
    (bin_dir / "docker").chmod(0o755)
    workspace = tmp_path / "work"
    workspace.mkdir()
    caches = tmp_path / "host-data"
    (caches / "hf_cache").mkdir(parents=True)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "DOCKER_LOG": str(tmp_path / "docker.log"),
           "GITHUB_WORKSPACE": str(workspace), "GITHUB_ENV": str(tmp_path / "github.env"),
           "RUNNER_TEMP": str(tmp_path / "temp"), "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    (tmp_path / "temp").mkdir()
    (tmp_path / "github.env").write_text("")
    return tmp_path, workspace, caches, env


def _start_step(profile_caches: str) -> dict:
    """The start step as an installer edits it: the profile's host cache paths set to this machine's."""
    step = _step(GPU_JOB, name_has="Start the container")
    text = step["run"].replace('CACHES=("/home/runner/sglang-data:/sgl-data")', f'CACHES=({profile_caches})')
    assert text != step["run"]
    return {**step, "run": text}


def _docker_calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "docker.log"
    return log.read_text().splitlines() if log.exists() else []


@pytest.mark.parametrize(("cache", "mounts", "offline"), [
    ("read-only", ["-v {caches}/sgl:/sgl-data:ro", "-v {caches}/hf_cache:/root/.cache/huggingface:ro"], True),
    ("scratch", [], False),
    ("shared", ["-v {caches}/sgl:/sgl-data", "-v {caches}/hf_cache:/root/.cache/huggingface"], False),
])
def test_the_container_mounts_caches_read_only_by_default(gpu_host, cache, mounts, offline):
    """Issue 23's attack: the target's own jobs mount the host cache writable (with seccomp off and
    SYS_PTRACE), so PR code could poison what later trusted jobs read. Read-only is the default; each
    run writes to its own scratch; `shared` exists only when chosen (and CACHE_MODES allows it)."""
    tmp_path, workspace, caches, env = gpu_host
    (caches / "sgl").mkdir()
    step = _start_step(f'"{caches}/sgl:/sgl-data" "{caches}/hf_cache:/root/.cache/huggingface" "{caches}/absent:/x"')
    done = _bash_step(step, {**env, "PROFILE": "sglang", "IMAGE": "rocm/sgl-dev:v1-rocm724-mi35x-20260801",
                             "CACHE": cache}, workspace)
    assert done.returncode == 0, done.stdout + done.stderr
    [run] = [c for c in _docker_calls(tmp_path) if c.startswith("docker run ")]
    volumes = re.findall(r"-v (\S+)", run)
    expected = [m.format(caches=caches).split(" ", 1)[1] for m in mounts] + [f"{workspace}/checkout:/sglang-checkout"]
    assert volumes == expected
    assert ("-e HF_HUB_OFFLINE=1" in run) is offline
    assert ("MIOPEN_USER_DB_PATH=/tmp/scratch/miopen" in run) is (cache == "read-only")
    assert "--ipc=host" not in run and "--privileged" not in run
    assert run.endswith("rocm/sgl-dev:v1-rocm724-mi35x-20260801 sleep infinity")
    assert "CONTAINER=ci_sglang" in (tmp_path / "github.env").read_text()


def test_an_unknown_cache_mode_or_profile_starts_nothing(gpu_host):
    tmp_path, workspace, caches, env = gpu_host
    step = _step(GPU_JOB, name_has="Start the container")
    for profile, cache in (("sglang", "rw"), ("other", "read-only")):
        done = _bash_step(step, {**env, "PROFILE": profile, "IMAGE": "rocm/sgl-dev:x", "CACHE": cache}, workspace)
        assert done.returncode == 1
    assert not [c for c in _docker_calls(tmp_path) if c.startswith("docker run ")]


def test_install_runs_the_trusted_scripts_on_the_host_and_the_rest_in_the_container(gpu_host):
    """A `bash scripts/ci/...` install command runs the trusted branch's copy, from a scratch
    directory that holds only the Dockerfile it reads (copied out of git, so a symlink in the PR
    leads nowhere); the PR's own copy of the script never runs. Other commands go to the container."""
    tmp_path, workspace, caches, env = gpu_host
    script = "scripts/ci/amd/amd_ci_install_dependency.sh"
    (workspace / "trusted" / "scripts" / "ci" / "amd").mkdir(parents=True)
    (workspace / "trusted" / script).write_text('echo "trusted install $* in $PWD"; ls docker; cat docker/rocm.Dockerfile\n')
    checkout, _ = _repo(tmp_path, {script: "echo PR-CODE-RAN-ON-THE-HOST\n", "docker/rocm.Dockerfile": "ARG AITER=1\n"})
    checkout.rename(workspace / "checkout")
    mount_root = workspace / "checkout"
    done = _bash_step(_step(GPU_JOB, name_has="Install"), {
        **env, "INSTALL": f"bash {script} --skip-test-time-deps\npip --version",
        "CONTAINER": "ci_sglang", "CHECKOUT_MOUNT": "/sglang-checkout", "MOUNT_ROOT": str(mount_root)}, workspace)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PR-CODE-RAN-ON-THE-HOST" not in done.stdout
    assert f"trusted install --skip-test-time-deps in {tmp_path}/temp/host-work" in done.stdout
    assert "ARG AITER=1" in done.stdout
    assert _docker_calls(tmp_path) == ["docker exec -w /sglang-checkout ci_sglang pip --version"]


def test_the_command_runs_in_the_container_in_its_directory_with_its_environment(gpu_host):
    tmp_path, workspace, caches, env = gpu_host
    (workspace / "checkout" / "test").mkdir(parents=True)
    done = _bash_step(_step(GPU_JOB, name_has="Run the tests"), {
        **env, "PROFILE": "miles", "EXECUTE_COMMAND": "echo ran in $PWD with $SGLANG_USE_AITER",
        "COMMAND_ENV": "SGLANG_USE_AITER=1", "WORKDIR": "test", "CONTAINER": "ci_miles",
        "CHECKOUT_MOUNT": "/miles-checkout", "MOUNT_ROOT": str(workspace / "checkout")}, workspace)
    assert done.returncode == 0, done.stderr
    assert f"ran in {workspace}/checkout/test with 1" in done.stdout
    assert _docker_calls(tmp_path) == ["docker exec -w /miles-checkout/test -e SGLANG_USE_AITER=1 ci_miles bash -c "
                                       "echo ran in $PWD with $SGLANG_USE_AITER"]


def test_verify_step_refuses_another_commit(tmp_path):
    repo, sha = _repo(tmp_path, {"README.md": "x\n"})
    repo.rename(tmp_path / "checkout")
    verify = _step(GPU_JOB, name_has="Verify")
    assert verify["env"] == {"HEAD_SHA": "${{ inputs.ref }}"}
    assert _bash_step(verify, {"HEAD_SHA": sha}, tmp_path).returncode == 0
    done = _bash_step(verify, {"HEAD_SHA": "e" * 40}, tmp_path)
    assert done.returncode == 1 and "not the approved" in done.stdout


# ----------------------------------------------------------------------------------------------
# Listed files, one by one


def _plan_files(suite: str, files: str, shards: str = "1", timeout: str = "1800", **settings) -> list[dict]:
    matrix, _ = _plan_matrix({"shards": shards, "runner_flags": "", "timeout_per_file": timeout}, suite, files, **settings)
    return matrix


def _execute(command: str, cwd: Path) -> subprocess.CompletedProcess:
    """As the GPU job runs it: `bash -c <command>` in the runner's directory of the checkout."""
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(cwd), "MILES_HARDWARE_PLATFORM": "rocm"}
    return subprocess.run(["bash", "-c", command], env=env, cwd=cwd, capture_output=True, text=True, timeout=PATIENCE)


def test_listed_files_use_the_runners_own_selection_where_it_has_one():
    matrix = _plan_files("s", "tests/e2e/test_a.py tests/e2e/test_b.py tests/e2e/test_c.py", shards="2",
                         RUNNER_FILE_OPTION="--files")
    base = ("python3 tests/ci/run_suite.py --hw rocm --suite s --timeout-per-file 1800 --files tests/e2e/test_a.py "
            "tests/e2e/test_b.py tests/e2e/test_c.py")
    assert [m["command"] for m in matrix] == [f"{base} --auto-partition-id 0 --auto-partition-size 2",
                                              f"{base} --auto-partition-id 1 --auto-partition-size 2"]
    assert _step(VALIDATE, "plan")["env"]["RUNNER_FILE_OPTION"] == ""  # neither miles' nor sglang's runner has one


def test_listed_files_run_one_by_one_and_their_lines_are_ingestible(tmp_path):
    repo, _ = _repo(tmp_path, {
        "tests/e2e/test_pass.py": "import os\nassert os.environ['MILES_HARDWARE_PLATFORM'] == 'rocm'\n",
        "tests/e2e/x/test_fail.py": "raise SystemExit(3)\n",
        "tests/e2e/test_slow.py": "import threading\nthreading.Event().wait()\n",  # never ends
        "tests/fast/test_after.py": "print('still ran')\n",
    })
    files = "tests/e2e/test_pass.py tests/e2e/x/test_fail.py tests/e2e/test_slow.py tests/fast/test_after.py"
    # Long enough for a python start-up however busy the machine; the slow file waits it out asleep.
    per_file = max(5, int(PATIENCE / 8))
    [shard] = _plan_files("nightly-stage-c-4-gpu-mi350", files, shards="2", timeout=str(per_file))  # one job: nothing partitions them
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
        (3, 4, "tests/e2e/test_slow.py", "TIMEOUT", 124, per_file),
        (4, 4, "tests/fast/test_after.py", "PASS", None, None),
    ]


def test_listed_files_run_from_sglangs_runner_directory(tmp_path):
    repo, _ = _repo(tmp_path, {"test/registered/amd/test_a.py": "print('a')\n", "test/registered/test_b.py": ""})
    [shard] = _plan_files("nightly-amd-1-gpu-mi35x", "test/registered/amd/test_a.py test/registered/test_b.py",
                          **SGLANG_PLAN_ENV)
    done = _execute(shard["command"], repo / "test")  # the GPU job runs it in test/, as sglang's jobs do
    assert done.returncode == 0, done.stdout + done.stderr
    assert [(r.file, r.status) for r in parse_job_log(done.stdout).records] == [
        ("test/registered/amd/test_a.py", "PASS"), ("test/registered/test_b.py", "PASS")]
