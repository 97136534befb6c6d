"""Every command finds the checkout as `check` does: from a subdirectory, with or without `.git`.

sglang's vendored tree carries its configuration (its register module is not at the default
path, so without `.git` only the configuration file marks its root); miles' has none (its
register module at the default path marks it, and `config validate` validates the defaults).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests import FIXTURES, REPO
from tests.conftest import CLI

TARGETS = FIXTURES / "targets"
SGLANG_CONFIG = (REPO / "docs" / "configs" / "sglang.yml").read_text()
ANY = 'dispatch:\n  "*":\n    workflow: rocm-on-demand.yml\n'


def run(*args, cwd):
    return subprocess.run([CLI, *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def copy(tmp_path: Path, source: str, *, git: bool, config: str | None) -> Path:
    repo = tmp_path / source.replace("/", "-")
    shutil.copytree(TARGETS / source, repo)
    if config is not None:
        (repo / ".github" / "ci-registrar.yml").write_text(config)
    if git:
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


@pytest.fixture()
def empty_export(tmp_path):
    path = tmp_path / "export.json"
    path.write_text("[]\n")
    return path


@pytest.mark.parametrize("git", [False, True], ids=["exported", "git"])
def test_sglang_from_a_subdirectory_two_levels_down(tmp_path, empty_export, git):
    repo = copy(tmp_path, "sglang/ci-382343f", git=git, config=SGLANG_CONFIG + ANY)
    inside = repo / "test" / "registered"
    done = run("config", "validate", cwd=inside)
    assert (done.returncode, done.stdout.strip()) == (0, f"{repo / '.github' / 'ci-registrar.yml'}: valid"), done.stderr
    done = run("check", "--format", "json", cwd=inside)
    assert done.returncode in (0, 1) and '"findings"' in done.stdout, done.stderr
    done = run("calibrate", "--durations-file", str(empty_export), cwd=inside)
    assert done.returncode == 0, done.stderr
    assert "unchanged:" in done.stdout  # its registrations were read: not "outside any repository"
    done = run("run-plan", "nightly-amd-1-gpu-mi35x", cwd=inside)
    assert done.returncode == 0 and "runs on `linux-mi35x-gpu-1`" in done.stdout, done.stderr


@pytest.mark.parametrize("git", [False, True], ids=["exported", "git"])
def test_miles_without_a_configuration_file_validates_as_the_defaults(tmp_path, git):
    repo = copy(tmp_path, "miles/ci-31f1ca9", git=git, config=None)
    assert not (repo / ".github" / "ci-registrar.yml").exists()
    for where in (repo, repo / "tests" / "ci"):
        done = run("config", "validate", cwd=where)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == f"{repo}: no .github/ci-registrar.yml, the defaults apply (`ci-registrar config defaults`): valid"
    done = run("check", "--format", "json", cwd=repo / "tests" / "ci")
    assert done.returncode in (0, 1) and '"findings"' in done.stdout, done.stderr


def test_outside_any_repository_every_command_says_so_with_exit_2(tmp_path, empty_export):
    nowhere = tmp_path / "nowhere" / "deep"
    nowhere.mkdir(parents=True)
    for args in (["check"], ["calibrate", "--durations-file", str(empty_export)], ["config", "validate"]):
        done = run(*args, cwd=nowhere)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert done.stderr.count("\n") == 1 and "is not a target repository" in done.stderr, (args, done.stderr)
        assert done.stdout == ""
