"""deploy/workflows/rocm-on-demand.yml: the workflow the App dispatches for `/run-rocm`.

Linted offline by actionlint (with shellcheck on its shell scripts) and zizmor, with zero findings
allowed; its structure checked from the parsed YAML; and its own scripts (the input checks, the
static inventory check, the commit check and the run step) extracted and run against small git
repositories, so what the workflow enforces is tested for real, not read.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from checks.config import Dispatch
from checks.durations import parse_job_log

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / "deploy" / "workflows" / "rocm-on-demand.yml"
BIN = Path(sys.executable).parent
INPUTS = ("suite", "head_sha", "pull_number", "test_files")
RUNNER_LABELS = ["self-hosted", "amd", "mi350"]

TEXT = WORKFLOW.read_text()
DOC = yaml.safe_load(TEXT)
JOBS = DOC["jobs"]
VALIDATE = JOBS["validate"]
RUN = JOBS["run"]


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
    for job_id, job in JOBS.items():
        for step in job["steps"]:
            if "run" in step:
                yield job_id, step


# ----------------------------------------------------------------------------------------------
# The linters, offline, with zero findings


def _actionlint(path: Path, tmp_path: Path) -> list[dict]:
    config = tmp_path / "actionlint.yaml"
    # Without this, actionlint rejects the self-hosted MI350 labels as unknown runner labels.
    config.write_text("self-hosted-runner:\n  labels: [amd, mi350]\n")
    shellcheck = shutil.which("shellcheck", path=str(BIN)) or shutil.which("shellcheck") or ""
    done = subprocess.run(
        [_tool("actionlint"), "-config-file", str(config), "-shellcheck", shellcheck, "-format", "{{json .}}", str(path)],
        capture_output=True, text=True, timeout=120,
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


def _bad_copy(tmp_path: Path) -> Path:
    """The workflow with three classic mistakes: an input in a script, a floating tag, an unquoted variable."""
    bad = TEXT.replace(
        'echo "running PR code at ${actual}"',
        "echo running ${{ inputs.suite }} at $actual",
    )
    bad = bad.replace(
        "uses: actions/checkout@de0fac2e4500dabe0009e67214ff5f5447ce83dd # v6.0.2\n        with:\n          ref: ${{ inputs.head_sha }}",
        "uses: actions/checkout@v6\n        with:\n          ref: ${{ inputs.head_sha }}",
    )
    bad = bad.replace("runs-on: [self-hosted, amd, mi350]", "runs-on: [self-hosted, amd, mi305]")
    assert bad.count("${{ inputs.suite }} at") == 1 and "actions/checkout@v6\n" in bad and "mi305" in bad
    path = tmp_path / "bad.yml"
    path.write_text(bad)
    return path


def test_actionlint_finds_nothing(tmp_path):
    assert _actionlint(WORKFLOW, tmp_path) == []


def test_actionlint_really_runs_and_lints_the_scripts(tmp_path):
    findings = _actionlint(_bad_copy(tmp_path), tmp_path)
    kinds = {f["kind"] for f in findings}
    assert "runner-label" in kinds, findings  # the unknown label: the config file is read
    if shutil.which("shellcheck", path=str(BIN)) or shutil.which("shellcheck"):
        assert any(f["kind"] == "shellcheck" and "SC2086" in f["message"] for f in findings), findings


def test_zizmor_finds_nothing_even_pedantic():
    assert _zizmor(WORKFLOW, "regular") == []
    assert _zizmor(WORKFLOW, "pedantic") == []


def test_zizmor_auditor_only_notes_the_self_hosted_runner():
    # The auditor persona flags every self-hosted runner: running there is this workflow's purpose.
    findings = _zizmor(WORKFLOW, "auditor")
    assert [f["ident"] for f in findings] == ["self-hosted-runner"]


def test_zizmor_really_runs(tmp_path):
    idents = {f["ident"] for f in _zizmor(_bad_copy(tmp_path), "regular")}
    assert {"template-injection", "unpinned-uses"} <= idents


# ----------------------------------------------------------------------------------------------
# Structure


def test_dispatch_inputs_match_the_apps_dispatch_table():
    on = DOC.get("on", DOC.get(True))  # YAML 1.1 reads a bare `on` key as True
    assert set(on) == {"workflow_dispatch"}
    inputs = on["workflow_dispatch"]["inputs"]
    assert tuple(inputs) == INPUTS
    assert set(inputs) == set(Dispatch(workflow="rocm-on-demand.yml").inputs)  # the App's defaults
    for name, spec in inputs.items():
        assert spec["type"] == "string", name
    for name in ("suite", "head_sha", "pull_number"):
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
    group = DOC["concurrency"]["group"]
    assert "${{ inputs.pull_number }}" in group and "${{ inputs.suite }}" in group


def test_no_expression_inside_any_script():
    # Inputs reach scripts only through env: `${{ }}` in a script is template injection.
    scripts = list(_run_steps())
    assert len(scripts) >= 4
    for job_id, step in scripts:
        assert "${{" not in step["run"], (job_id, step.get("name"))
    for pattern in ("${{ inputs.", "${{ github.event.inputs."):
        assert not any(pattern in step["run"] for _, step in scripts)


def test_every_action_is_pinned_to_a_commit_with_its_version():
    uses_lines = [line.strip() for line in TEXT.splitlines() if line.strip().startswith(("uses:", "- uses:"))]
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
    # The only scripts of this job are the two Python checks: nothing runs a file of the PR.
    assert [s.get("id") for s in steps if "run" in s] == ["shapes", "inventory"]
    for step in (_step(VALIDATE, "shapes"), inventory):
        assert step["shell"] == "python"
        for name, var in (("suite", "SUITE"), ("head_sha", "HEAD_SHA"), ("pull_number", "PULL_NUMBER"), ("test_files", "TEST_FILES")):
            assert step["env"][var] == "${{ inputs.%s }}" % name


def test_the_job_running_pr_code_has_nothing_to_leak():
    assert RUN["needs"] == "validate"
    assert RUN["runs-on"] == RUNNER_LABELS
    assert RUN["permissions"] == {}
    job_text = yaml.safe_dump(RUN)
    assert "secrets." not in job_text and "secrets." not in TEXT
    assert "github.token" not in job_text and "GITHUB_TOKEN" not in job_text
    assert "env" not in RUN and "env" not in DOC  # no job- or workflow-level environment at all
    checkout = _step(RUN, uses="actions/checkout@")
    assert checkout["with"] == {"ref": "${{ inputs.head_sha }}", "persist-credentials": False}
    assert RUN["steps"].index(checkout) == 0
    verify = RUN["steps"][1]
    assert "git rev-parse HEAD" in verify["run"] and verify["env"] == {"HEAD_SHA": "${{ inputs.head_sha }}"}
    for step in RUN["steps"]:
        for value in (step.get("env") or {}).values():
            assert "secret" not in str(value).lower() and "token" not in str(value).lower()


# ----------------------------------------------------------------------------------------------
# The input checks, run


def _python_step(step: dict, env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    # `shell: python` runs the script file with the runner's python; only `env:` reaches it.
    return subprocess.run(
        [sys.executable, "-c", step["run"]], env={"PATH": os.environ["PATH"], **env},
        cwd=cwd, capture_output=True, text=True, timeout=60,
    )


SHA = "0123456789abcdef0123456789abcdef01234567"
GOOD = {"SUITE": "nightly-stage-c-4-gpu-mi350", "HEAD_SHA": SHA, "PULL_NUMBER": "123", "TEST_FILES": ""}


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"TEST_FILES": "tests/e2e/megatron/test_qwen3_4B_ppo.py"},
        {"TEST_FILES": "tests/e2e/fsdp/test_qwen3_0.6B_fsdp_distributed.py tests/fast/test_utils.py"},
        {"TEST_FILES": " tests/fast-gpu/a/b-c/test_x.py  tests/ci/test_y.py "},
        {"SUITE": "a"},
        {"PULL_NUMBER": "9999999999"},
    ],
)
def test_shapes_accepts(changes):
    done = _python_step(_step(VALIDATE, "shapes"), {**GOOD, **changes})
    assert done.returncode == 0, done.stdout + done.stderr


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
# The GPU job's scripts, run on a stand-in repository (python3 instead of GPUs)


def _bash_step(step: dict, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    # A step without `shell:` runs as `bash -e {0}` on Linux runners.
    assert "shell" not in step
    script = cwd / ".step.sh"
    script.write_text(step["run"])
    return subprocess.run(["bash", "-e", str(script)], env={"PATH": os.environ["PATH"], **env}, cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def _run_env(step: dict, repo: Path, **values: str) -> dict[str, str]:
    env = {k: v for k, v in step["env"].items() if "${{" not in v}
    assert step["env"]["PYTHONPATH"] == "${{ github.workspace }}"
    env.update(PYTHONPATH=str(repo), **values)
    return env


def test_verify_step_refuses_another_commit(tmp_path):
    repo, sha = _repo(tmp_path, {"README.md": "x\n"})
    verify = RUN["steps"][1]
    assert _bash_step(verify, {"HEAD_SHA": sha}, repo).returncode == 0
    done = _bash_step(verify, {"HEAD_SHA": "e" * 40}, repo)
    assert done.returncode == 1 and "not the approved" in done.stdout


RUNNER_STANDIN = '''\
import sys
print("argv", sys.argv[1:])
print("[1/1] tests/e2e/test_a.py  PASS  elapsed=3s")
'''


def test_whole_suite_runs_the_runner_unchanged(tmp_path):
    repo, _ = _repo(tmp_path, {"tests/ci/run_suite.py": RUNNER_STANDIN})
    step = _step(RUN, name_has="Run the suite")
    done = _bash_step(step, _run_env(step, repo, SUITE="nightly-stage-c-4-gpu-mi350", TEST_FILES=""), repo)
    assert done.returncode == 0, done.stderr
    assert "argv ['--hw', 'rocm', '--suite', 'nightly-stage-c-4-gpu-mi350']" in done.stdout
    parsed = parse_job_log(done.stdout)
    assert (parsed.suite, parsed.backend) == ("nightly-stage-c-4-gpu-mi350", "rocm")
    assert [(r.file, r.status, r.elapsed) for r in parsed.records] == [("tests/e2e/test_a.py", "PASS", 3)]


def test_listed_files_run_one_by_one_and_their_lines_are_ingestible(tmp_path):
    repo, _ = _repo(tmp_path, {
        "tests/e2e/test_pass.py": "import os\nassert os.environ['MILES_HARDWARE_PLATFORM'] == 'rocm'\n",
        "tests/e2e/x/test_fail.py": "raise SystemExit(3)\n",
        "tests/e2e/test_slow.py": "import time\ntime.sleep(60)\n",
        "tests/fast/test_after.py": "print('still ran')\n",
    })
    step = _step(RUN, name_has="Run the suite")
    files = "tests/e2e/test_pass.py tests/e2e/x/test_fail.py tests/e2e/test_slow.py tests/fast/test_after.py"
    env = _run_env(step, repo, SUITE="nightly-stage-c-4-gpu-mi350", TEST_FILES=files, TIMEOUT_PER_FILE="1")
    done = _bash_step(step, env, repo)
    assert done.returncode == 1, done.stdout + done.stderr  # a file failed: the job fails
    assert "still ran" in done.stdout  # ...but only after every listed file ran
    parsed = parse_job_log(done.stdout)
    assert parsed.malformed == []
    assert (parsed.suite, parsed.backend) == ("nightly-stage-c-4-gpu-mi350", "rocm")
    got = [(r.index, r.total, r.file, r.status, r.exit_code, r.timeout_after) for r in parsed.records]
    assert got == [
        (1, 4, "tests/e2e/test_pass.py", "PASS", None, None),
        (2, 4, "tests/e2e/x/test_fail.py", "FAIL", 3, None),
        (3, 4, "tests/e2e/test_slow.py", "TIMEOUT", 124, 1),
        (4, 4, "tests/fast/test_after.py", "PASS", None, None),
    ]
    assert step["env"]["TIMEOUT_PER_FILE"] == "1800"


def test_listed_files_all_passing_pass(tmp_path):
    repo, _ = _repo(tmp_path, {"tests/e2e/test_a.py": "", "tests/e2e/test_b.py": ""})
    step = _step(RUN, name_has="Run the suite")
    env = _run_env(step, repo, SUITE="s", TEST_FILES="tests/e2e/test_a.py tests/e2e/test_b.py")
    done = _bash_step(step, env, repo)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [r.status for r in parse_job_log(done.stdout).records] == ["PASS", "PASS"]
