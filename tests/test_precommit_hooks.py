"""The pre-commit hooks (.pre-commit-hooks.yaml) on both layouts the supported targets use: a staged
suite typo makes the hook run (its `files:` pattern matches what is staged) and fail."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from tests.service_support import ROOT
from tests.patience import PATIENCE

TARGETS = ROOT / "tests" / "fixtures" / "targets"
# (excerpt, configuration to put in .github/ci-registrar.yml, file with a typo, registration, typo)
LAYOUTS = {
    "miles": (TARGETS / "miles" / "r2026-08-21-778227d", None, "tests/e2e/ckpt/test_qwen3_4B_ckpt.py",
              'suite="nightly-stage-c-8-gpu-mi350"', 'suite="nightly-stage-c-8-gpu-mi305"'),
    "sglang": (TARGETS / "sglang" / "r2026-08-22-382343f", ROOT / "docs" / "configs" / "sglang.yml",
               "test/registered/attention/test_create_kvindices.py",
               'suite="stage-b-test-1-gpu-small-amd"', 'suite="stage-b-test-1-gpu-smal-amd"'),
}


def _hook(repo, hook, staged, *args):
    """The hook as pre-commit runs it: its entry, its args, then the staged files its `files` matches."""
    files = [f for f in staged if re.search(hook["files"], f)] if hook.get("pass_filenames", True) else []
    return subprocess.run([sys.executable, "-m", "bot.cli", *hook["entry"].split()[1:], *args, *files], cwd=repo,
                          capture_output=True, text=True, timeout=PATIENCE)


def _git(cwd, *args) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("hook_id", ["ci-registrar", "ci-registrar-fix"])
def test_a_staged_suite_typo_runs_the_hook_and_fails_it(tmp_path, layout, hook_id):
    source, config, path, good, typo = LAYOUTS[layout]
    [hook] = [h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text()) if h["id"] == hook_id]
    repo = tmp_path / layout
    shutil.copytree(source, repo)
    if config is not None:
        (repo / ".github").mkdir()
        shutil.copy(config, repo / ".github" / "ci-registrar.yml")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "excerpt")
    target = repo / path
    assert good in target.read_text()
    target.write_text(target.read_text().replace(good, typo))
    _git(repo, "add", path)

    # pre-commit runs a hook when a staged file matches `files` (re.search, as pre-commit does).
    staged = _git(repo, "diff", "--cached", "--name-only").split()
    assert [f for f in staged if re.search(hook["files"], f)], (hook["files"], staged)
    entry = hook["entry"].split()
    assert entry[0] == "ci-registrar"
    run = _hook(repo, hook, staged)
    said = run.stdout + run.stderr
    if "--fix" in entry:
        # The fix hook writes the correction; pre-commit then fails the commit on the changed file.
        assert good in target.read_text() and typo not in target.read_text(), said
        assert _git(repo, "diff", "--name-only").split() == [path]
    else:
        assert run.returncode == 1, said
        assert path in said
        # the typo's REG010: a failure in full (miles), or in sglang (whose runner only warns about an
        # unknown suite) a warning, counted in the one-line summary and listed with --verbose
        assert typo.split('"')[1] in said or "REG010 x1" in said, said
        assert typo.split('"')[1] in _hook(repo, hook, staged, "--verbose").stdout


@pytest.mark.parametrize("path", [
    "tests/e2e/test_a.py", "tests/ci/run_suite.py", "tests/ci/ci_register.py",  # miles
    "test/registered/4-gpu-models/test_x.py", "test/run_suite.py", "python/sglang/test/ci/ci_register.py",  # sglang
    "python/sglang/jit_kernel/tests/test_x.py", "python/sglang/jit_kernel/benchmark/bench_x.py",
    ".github/workflows/pr-test.yml", ".github/ci-registrar.yml",
])
def test_the_hooks_files_pattern_covers_every_supported_layout(path):
    for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text()):
        assert re.search(hook["files"], path), (hook["id"], path)


@pytest.mark.parametrize("path", ["README.md", "python/sglang/srt/server.py", "docs/test.md"])
def test_the_hooks_skip_what_cannot_change_a_registration(path):
    for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text()):
        assert not re.search(hook["files"], path), (hook["id"], path)


def test_the_hook_reports_the_staged_files_failures_first_and_warnings_in_one_line(tmp_path):
    """sglang: its HEAD has warnings all over the tree; a commit that stages one typo sees that
    failure first, and the warnings of the staged file as one line (all of them with --verbose)."""
    source, config, path, good, typo = LAYOUTS["sglang"]
    [hook] = [h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text()) if h["id"] == "ci-registrar"]
    repo = tmp_path / "sglang"
    shutil.copytree(source, repo)
    (repo / ".github").mkdir()
    shutil.copy(config, repo / ".github" / "ci-registrar.yml")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "excerpt")
    whole = subprocess.run([sys.executable, "-m", "bot.cli", "check", "--format", "json"], cwd=repo,
                           capture_output=True, text=True, timeout=PATIENCE)
    everywhere = {f["file"] for f in json.loads(whole.stdout)["findings"]}
    assert len(everywhere) > 3  # the tree has findings in many files: the hook must not print them
    target = repo / path
    target.write_text(target.read_text().replace(good, typo) + "\n# a comment\n")
    _git(repo, "add", path)
    staged = _git(repo, "diff", "--cached", "--name-only").split()

    run = _hook(repo, hook, staged)
    assert run.returncode == 1, run.stderr
    lines = run.stdout.strip().splitlines()
    assert lines[0] == path and "  failure  " in lines[1], run.stdout  # a failure first
    assert all(not line.startswith(f) for f in everywhere - {path} for line in lines)
    assert "  warning  " not in run.stdout and len(lines) < 12
    assert re.search(r"^\d+ warnings? (and \d+ notices? )?not shown \(REG\d{3} x\d+.*\): --verbose lists them$", lines[-2]), lines
    verbose = _hook(repo, hook, staged, "--verbose")
    assert verbose.stdout.splitlines()[:2] == lines[:2]
    # the typo: sglang's runner only warns about an unknown suite (REG010, a warning), but no job
    # runs the mistyped one: "this test never runs" is REG013's one failure in every era (docs/rules.md)
    assert "  failure  REG013  " in run.stdout and typo.split('"')[1] in run.stdout
    assert "  warning  " in verbose.stdout
    assert "not shown" not in verbose.stdout
    assert verbose.stdout.index("  failure  ") < verbose.stdout.index("  warning  ")
