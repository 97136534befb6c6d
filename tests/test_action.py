"""action.yml: a composite action that installs the light command line and runs `check`.

Its structure is checked here, zizmor audits it offline (zero findings, pedantic too), and its
check script runs for real on a git repository, with the inputs passed the way Actions passes
them: through env, never `${{ }}` inside `run:`.
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

from tests.conftest import CLI
from tests.fixtures.miles import test_file
from tests.bot.test_cli import GOOD, TYPO, make_tree
from tests.bot.commands.test_seed_pr import git, write
from tests.patience import PATIENCE

ROOT = Path(__file__).resolve().parents[1]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
STEPS = ACTION["runs"]["steps"]
NEW = "tests/e2e/test_new.py"


def _step(name_has: str) -> dict:
    return next(s for s in STEPS if name_has in s.get("name", ""))


def test_the_action_is_a_composite_with_the_documented_inputs():
    assert ACTION["runs"]["using"] == "composite"
    inputs = ACTION["inputs"]
    assert {"base", "format", "fail-on", "version"} <= set(inputs)
    assert inputs["base"]["default"] == "${{ github.event.pull_request.base.sha }}"
    assert inputs["format"]["default"] == "github" and inputs["fail-on"]["default"] == "failure"
    assert all(not i.get("required", False) for i in inputs.values())
    assert ACTION["outputs"]["sarif-file"]["value"] == "${{ steps.check.outputs.sarif-file }}"


def test_inputs_reach_scripts_through_env_only():
    for step in STEPS:
        if "run" in step:
            assert "${{" not in step["run"], step["name"]
            assert step["shell"] == "bash"
    check = _step("Check")
    assert check["env"] == {"BASE": "${{ inputs.base }}", "FORMAT": "${{ inputs.format }}",
                            "FAIL_ON": "${{ inputs.fail-on }}", "NEW_ONLY": "${{ inputs.new-only }}",
                            "OUTPUT": "${{ inputs.output }}", "CONSUMERS_FROM": "${{ inputs.consumers-from }}",
                            "REPO": "${{ inputs.repo }}"}


def test_actions_are_pinned_to_a_commit():
    for step in STEPS:
        if "uses" in step:
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", step["uses"]), step["uses"]


def test_it_installs_the_light_base_install_of_its_own_path():
    install = _step("Install")
    assert install["env"]["ACTION_PATH"] == "${{ github.action_path }}"
    assert '"${venv}/bin/pip" install --quiet --disable-pip-version-check "${ACTION_PATH}"' in install["run"]
    assert "[app]" not in install["run"]


def test_zizmor_finds_nothing():
    zizmor = shutil.which("zizmor", path=str(Path(sys.executable).parent)) or shutil.which("zizmor")
    if zizmor is None:
        pytest.skip("zizmor is not installed (the test extra installs it)")
    for persona in ("regular", "pedantic"):
        done = subprocess.run([zizmor, "--offline", "--no-config", f"--persona={persona}", "--format=json",
                               str(ROOT / "action.yml")], capture_output=True, text=True, timeout=PATIENCE)
        assert done.returncode == 0 or 10 <= done.returncode <= 14, done.stderr
        assert json.loads(done.stdout) == [], persona


def _run_check_step(tmp_path: Path, workspace: Path, **inputs: str) -> tuple[subprocess.CompletedProcess, Path]:
    """The check step's script as the runner runs it: inputs in env, the CLI in RUNNER_TEMP's venv."""
    runner_temp = tmp_path / "runner-temp"
    (runner_temp / "ci-registrar-venv" / "bin").mkdir(parents=True, exist_ok=True)
    link = runner_temp / "ci-registrar-venv" / "bin" / "ci-registrar"
    if not link.exists():
        link.symlink_to(CLI)
    github_output = tmp_path / "github-output"
    github_output.write_text("")
    defaults = {"base": "", "format": "github", "fail-on": "failure", "new-only": "false",
                "output": "ci-registrar.sarif", "consumers-from": "", "repo": "."}
    values = {**defaults, **inputs}
    env = {**os.environ, "RUNNER_TEMP": str(runner_temp), "GITHUB_OUTPUT": str(github_output)}
    for name, template in _step("Check")["env"].items():
        key = re.fullmatch(r"\$\{\{ inputs\.([\w-]+) \}\}", template).group(1)
        env[name] = values[key]
    done = subprocess.run(["bash", "-c", _step("Check")["run"]], cwd=workspace, env=env, capture_output=True, text=True)
    return done, github_output


def test_the_check_step_runs_on_a_pull_request(tmp_path):
    repo = make_tree(tmp_path / "ws")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD").strip()
    write(repo, {NEW: test_file(TYPO)})
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "typo")

    done, _ = _run_check_step(tmp_path, repo, base=base)
    assert done.returncode == 1
    assert f"::error file={NEW},line=3,endLine=3,col=38," in done.stdout

    done, outputs = _run_check_step(tmp_path, repo, base=base, format="sarif", output="out.sarif")
    assert done.returncode == 1
    assert outputs.read_text() == "sarif-file=out.sarif\n"
    doc = json.loads((repo / "out.sarif").read_text())
    assert [r["ruleId"] for r in doc["runs"][0]["results"]] == ["REG010"]

    write(repo, {NEW: test_file(GOOD)})
    git(repo, "commit", "-qam", "fixed")
    done, _ = _run_check_step(tmp_path, repo, base=base)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_check_step_without_a_base_checks_the_whole_tree(tmp_path):
    # REG013 ("this test never runs", a failure) kept a warning here, to see --fail-on warning
    repo = make_tree(tmp_path / "ws", **{".github/ci-registrar.yml": "consumers: []\nrules:\n  REG013: warning\n"})
    done, _ = _run_check_step(tmp_path, repo)
    assert done.returncode == 0 and "::warning" in done.stdout  # REG013: a suite no workflow runs
    done, _ = _run_check_step(tmp_path, repo, **{"fail-on": "warning"})
    assert done.returncode == 1


def test_the_check_step_passes_each_consumers_from_path(tmp_path):
    from tests.fixtures.miles import SGLANG_NIGHTLY

    repo = make_tree(tmp_path / "ws", **{".github/ci-registrar.yml": "rules:\n  REG013: off\n"})
    (repo / "ci").mkdir()
    (repo / "ci" / "nightly-test-amd-miles-rocm720.yml").write_text(SGLANG_NIGHTLY)
    done, _ = _run_check_step(tmp_path, repo, format="json")
    assert "REG017" in {f["rule"] for f in json.loads(done.stdout)["findings"]}  # not read: a warning
    done, _ = _run_check_step(tmp_path, repo, format="json", **{"consumers-from": "\nci/nightly-test-amd-miles-rocm720.yml\n"})
    assert done.returncode == 0, done.stderr
    assert "REG017" not in {f["rule"] for f in json.loads(done.stdout)["findings"]}


@pytest.mark.parametrize("version", ["0.2.0", "v0.2.0; curl evil", "main", "--index-url=https://x"])
def test_the_install_step_refuses_a_version_that_is_not_a_release_tag(tmp_path, version):
    install = _step("Install")
    env = {**os.environ, "RUNNER_TEMP": str(tmp_path), "PYTHON": "true", "ACTION_PATH": str(ROOT), "VERSION": version}
    done = subprocess.run(["bash", "-c", install["run"]], env=env, capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stdout.startswith("::error title=CI Registrar::version must be a release tag such as v0.2.0")


DOC = (ROOT / "docs" / "github-action.md").read_text()


def _doc_workflows() -> list[str]:
    return [block for block in re.findall(r"```yaml\n(.*?)```", DOC, re.S) if block.startswith("name:")]


def test_the_documented_workflows_use_the_action_as_it_is():
    workflows = _doc_workflows()
    assert len(workflows) == 2
    for text in workflows:
        doc = yaml.safe_load(text)
        steps = doc["jobs"]["check"]["steps"]
        checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout@"))
        assert checkout["with"]["fetch-depth"] == 0
        ours = next(s for s in steps if s.get("uses", "").startswith("radixark/ci-registrar@"))
        assert set(ours.get("with", {})) <= set(ACTION["inputs"])
    sarif = yaml.safe_load(workflows[1])["jobs"]["check"]
    upload = next(s for s in sarif["steps"] if "upload-sarif" in s.get("uses", ""))
    assert "!cancelled()" in upload["if"] and sarif["permissions"]["security-events"] == "write"
    for name in ACTION["inputs"]:
        assert f"| `{name}` |" in DOC  # every input is documented


def test_the_documented_workflows_pass_actionlint(tmp_path):
    actionlint = shutil.which("actionlint", path=str(Path(sys.executable).parent)) or shutil.which("actionlint")
    if actionlint is None:
        pytest.skip("actionlint is not installed (the test extra installs it)")
    for i, text in enumerate(_doc_workflows()):
        path = tmp_path / ".github" / "workflows" / f"doc{i}.yml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        done = subprocess.run([actionlint, "-shellcheck", "", str(path)], capture_output=True, text=True, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
