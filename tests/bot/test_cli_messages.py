"""What the command line says when a person mistypes or trips, read as a person reads it.

- Every message below passes tests/checks/test_wording.py's test (counts agree with their noun, "an AMD
  suite", no "file(s)"): each `run-plan` of every ROCm suite of both vendored targets, and the
  errors of this file.
- One meaning per flag name: `--repo` is a checkout directory, `--repository` an OWNER/NAME;
  `durations` and `audit` still take their old `--repo OWNER/NAME`, with one deprecation line.
- Did-you-mean for a suite (`run-plan`), a rule code or name (`check --select`, `rule`, the
  configuration's `rules:`) and a configuration key (`config validate`).
- `check --base` with the configuration in the working tree but not committed says so.
- The pre-commit hook's batches (`--all-files`): a clean batch does not end with a "0 failures"
  line, so the last line of a failed run is never one.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from bot.cli import main
from tests import REPO
from tests.bot.commands.test_run_plan_cli import ANY, MILES, SGLANG
from tests.bot.commands.test_seed_pr import git
from tests.checks.test_wording import wording_problems

ROOT = REPO
SGLANG_CONFIG = (ROOT / "docs" / "configs" / "sglang.yml").read_text()


def cli(*args, env=None):
    result = CliRunner().invoke(main, list(args), catch_exceptions=False, env=env)
    return result.exit_code, result.stdout, result.stderr


def _checkout(tmp_path: Path, source: Path, config: str | None) -> Path:
    repo = tmp_path / source.name
    shutil.copytree(source, repo)
    if config is not None:
        (repo / ".github").mkdir(exist_ok=True)
        (repo / ".github" / "ci-registrar.yml").write_text(config)
    (repo / ".git").mkdir()
    return repo


@pytest.mark.parametrize("source, config", [(SGLANG, SGLANG_CONFIG + ANY), (MILES, ANY)], ids=["sglang", "miles"])
def test_every_run_plan_of_both_targets_reads_right(tmp_path, source, config):
    from bot.ondemand.selection import rocm_suites
    from checks.limits import Budget
    from checks.scanning.tree import DirectoryTree
    from checks.config.schema import load_config
    from checks.target.contract import read_contract
    from checks.target.target_ci import read_target_ci

    repo = _checkout(tmp_path, source, config)
    tree = DirectoryTree(repo)
    parsed, _ = load_config(config)
    suites = sorted(rocm_suites(read_contract(tree, parsed, Budget()), read_target_ci(tree, parsed, Budget(), {})))
    assert len(suites) >= 3
    messages = []
    for suite in suites:
        code, out, err = cli("run-plan", suite, "--repo", str(repo))
        assert code in (0, 2), err
        messages += (out + err).splitlines()
    assert any(" GPU)" in m or " GPUs)" in m for m in messages)
    assert wording_problems(messages) == []


def test_a_one_gpu_plan_says_one_gpu(tmp_path):
    repo = _checkout(tmp_path, SGLANG, SGLANG_CONFIG + ANY)
    code, out, err = cli("run-plan", "nightly-amd-1-gpu-mi35x", "--repo", str(repo))
    assert code == 0, err
    assert "(1 GPU), 1 shard" in out and "1 GPUs" not in out


def test_a_mistyped_suite_gets_a_did_you_mean_and_says_where_it_looked(tmp_path):
    repo = _checkout(tmp_path, MILES, ANY)
    code, _, err = cli("run-plan", "nightly-stage-c-4-gpu-mi35", "--repo", str(repo))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "in this checkout" in err and "checkou," not in err and "at checkou" not in err
    assert "did you mean `nightly-stage-c-4-gpu-mi350`" in err
    assert wording_problems([err]) == []
    # Nothing near: no suggestion, rather than a wild one.
    code, _, err = cli("run-plan", "zzzz", "--repo", str(repo))
    assert code == 2 and "did you mean" not in err


def test_a_mistyped_rule_gets_a_did_you_mean(tmp_path):
    code, _, err = cli("rule", "unknown-suit")
    assert code == 2 and "did you mean `unknown-suite`" in err
    code, _, err = cli("rule", "REG0100")
    assert code == 2 and "did you mean `REG010`" in err
    repo = _checkout(tmp_path, MILES, None)
    code, _, err = cli("check", "--repo", str(repo), "--ignore", "unknown-suit")
    assert code == 2 and "did you mean `unknown-suite`" in err and len(err.strip().splitlines()) == 1


def test_a_mistyped_configuration_key_or_rule_gets_a_did_you_mean(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("calibraton:\n  margin: 1.2\npaths:\n  suite_module: x.py\nrules:\n  unknown-suit: off\n"
                   "dispatch:\n  s1:\n    workflw: a.yml\nconsumers:\n  - repository: a/b\n    workflow: x.yml\n    shard: 2\n")
    code, out, _ = cli("config", "validate", str(bad))
    lines = out.strip().splitlines()
    assert code == 1 and len(lines) == 5, out
    assert "`calibraton`; did you mean `calibration`?" in lines[0]
    assert "`suite_module`; did you mean `suites_module`" in lines[1] and "(at paths)" in lines[1]
    assert "`unknown-suit`; did you mean `unknown-suite`" in lines[2]
    assert "`workflw`; did you mean `workflow`?" in lines[3]
    assert "`shard`; did you mean `shards`?" in lines[4]
    assert wording_problems(lines) == []


@pytest.mark.parametrize("command", [["durations", "show"], ["durations", "export"], ["audit"]])
def test_owner_name_is_repository_everywhere_and_the_old_repo_still_works(tmp_path, command):
    env = {"CI_REGISTRAR_DATA_DIR": str(tmp_path / "data"), "DATABASE_URL": "", "REDIS_URL": ""}
    new = cli(*command, "--repository", "radixark/miles", env=env)
    old = cli(*command, "--repo", "radixark/miles", env=env)
    assert new[0] == old[0] == 0 and new[1] == old[1]
    deprecated = [line for line in old[2].splitlines() if "deprecated" in line]
    assert deprecated == [f"ci-registrar {' '.join(command)}: --repo OWNER/NAME is deprecated here, write --repository "
                          "radixark/miles (--repo names a checkout directory in check, calibrate, run-plan and config)"]
    assert "deprecated" not in new[2]
    code, _, err = cli(*command, "--repository", "a/b", "--repo", "c/d", env=env)
    assert code == 2 and "name two repositories" in err


def test_every_command_means_the_same_by_each_flag():
    """--repo is a directory wherever it is shown; OWNER/NAME is --repository wherever it is taken."""
    import click

    def commands(group, path=()):
        ctx = click.Context(group)
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            if isinstance(command, click.Group):
                yield from commands(command, (*path, name))
            else:
                yield (*path, name), command

    seen = {}
    for path, command in commands(main):
        for param in command.params:
            if not isinstance(param, click.Option) or param.hidden:
                continue
            for flag in param.opts:
                if flag in ("--repo", "--repository"):
                    seen.setdefault(flag, set()).add(param.metavar or param.make_metavar(click.Context(command)))
    assert seen["--repository"] == {"OWNER/NAME"}
    assert "OWNER/NAME" not in seen["--repo"], seen


def test_check_base_with_an_uncommitted_configuration_says_so(tmp_path):
    repo = tmp_path / "repo"
    (repo / "python" / "pkg" / "ci").mkdir(parents=True)
    (repo / "python" / "pkg" / "ci" / "reg.py").write_text("def register_cuda_ci(est_time, suite):\n    pass\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")
    git(repo, "commit", "-q", "--allow-empty", "-m", "two")
    (repo / ".github").mkdir()
    (repo / ".github" / "ci-registrar.yml").write_text("paths:\n  register_module: python/pkg/ci/reg.py\n")
    code, _, err = cli("check", "--repo", str(repo), "--base", "HEAD~1")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert ".github/ci-registrar.yml is in the working tree but not committed at HEAD" in err
    assert "is not a target repository" not in err
    assert cli("check", "--repo", str(repo))[0] == 0  # the working tree itself is a target
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "three")
    assert cli("check", "--repo", str(repo), "--base", "HEAD~1")[0] == 0


def test_a_failed_hook_run_in_batches_never_ends_with_zero_failures(tmp_path):
    """pre-commit --all-files with more files than one command line holds: one process per batch,
    their outputs shown one after the other. The failing batch first, then a clean one."""
    from tests.test_precommit_hooks import _hook

    [hook] = [h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text()) if h["id"] == "ci-registrar"]
    repo = _checkout(tmp_path, MILES, None)
    shutil.rmtree(repo / ".git")
    git(repo, "init", "-q", "-b", "main")
    files = sorted(str(p.relative_to(repo)) for p in repo.rglob("test_*.py"))
    victim = next(f for f in files if 'suite="nightly-stage-c-4-gpu-mi350"' in (repo / f).read_text())
    (repo / victim).write_text((repo / victim).read_text().replace('"nightly-stage-c-4-gpu-mi350"', '"nightly-stage-c-4-gpu-mi35"', 1))
    first = [victim, *(f for f in files if f != victim)][: len(files) // 2]
    second = [f for f in files if f not in first]
    runs = [_hook(repo, hook, batch) for batch in (first, second)]
    assert [r.returncode for r in runs] == [1, 0]
    shown = "".join(r.stdout + r.stderr for r in runs).strip().splitlines()
    assert "0 failures" not in shown[-1], shown[-3:]
    assert any(": 1 failure, " in line for line in shown)
    # A run of the hook on its own still ends with its counts when it fails, and on a whole tree always.
    assert ": 1 failure, " in runs[0].stdout.strip().splitlines()[-1]
    whole = subprocess.run([sys.executable, "-m", "bot.cli", "check", "--brief"], cwd=repo, capture_output=True, text=True)
    assert whole.stdout.strip().splitlines()[-1].endswith(("notices", "notice"))
