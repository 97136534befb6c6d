"""The command line as a user meets it: light imports, --version, --fix/--diff/--new-only,
--fail-on/--output, and one-line exit-2 errors for usage and environment problems."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests import REPO
from tests.conftest import CLI
from tests.fixtures.miles import miles_tree, test_file
from tests.bot.commands.test_seed_pr import git, write

ROOT = REPO
SERVICE_PACKAGES = {"flask", "gidgethub", "pygithub", "requests", "huey", "redis", "psycopg", "psycopg[binary]",
                    "gunicorn", "prometheus-client", "structlog", "pyjwt", "pyjwt[crypto]", "werkzeug"}
HEAVY_MODULES = ["flask", "werkzeug", "sqlalchemy", "alembic", "libcst", "github", "gidgethub", "huey", "redis",
                 "psycopg", "structlog", "prometheus_client", "requests", "jwt"]

TYPO = 'register_rocm_ci(est_time=800, suite="nightly-stage-c-8-gpu-mi35", labels=["megatron"])'
GOOD = 'register_rocm_ci(est_time=800, suite="nightly-stage-c-8-gpu-mi350", labels=["megatron"])'
PPO = "tests/e2e/megatron/test_qwen3_4B_ppo.py"


def cli(*args, cwd=None, env=None):
    return subprocess.run([CLI, *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, **(env or {})})


def one_line_error(done) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def make_tree(root: Path, **extra: str) -> Path:
    write(root, miles_tree(**{".github/ci-registrar.yml": "consumers: []\nrules:\n  REG013: off\n", **extra}))
    return root


# ------------------------------------------------------------------------------------------------
# A light install and a light start


def test_the_base_install_has_no_service_dependency():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = {d.split(">")[0].split("=")[0].split("<")[0].strip().lower() for d in project["dependencies"]}
    assert base == {"click", "pyyaml", "msgspec", "libcst"}
    store = {d.split(">")[0].strip().lower() for d in project["optional-dependencies"]["store"]}
    assert store == {"sqlalchemy", "alembic"}
    app = {d.split(">")[0].strip().lower() for d in project["optional-dependencies"]["app"]}
    assert {"ci-registrar[store]", "flask", "gidgethub", "pygithub", "huey", "redis", "psycopg[binary]",
            "gunicorn"} <= app
    assert not base & SERVICE_PACKAGES


BLOCK_STORE = (
    "import sys\n"
    "from bot.commands.errors import APP_MODULES, STORE_MODULES\n"
    "class Block:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name.split('.')[0] in {**APP_MODULES, **STORE_MODULES}:\n"
    "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
    "sys.meta_path.insert(0, Block())\n"
    "from bot.cli import main\n"
    "main(sys.argv[1:])\n"
)


def test_the_base_install_checks_and_the_store_commands_name_their_extra(tmp_path):
    """As after `pip install ci-registrar`: neither the store's nor the App's modules importable."""
    repo = make_tree(tmp_path / "miles", **{PPO: test_file(TYPO)})
    env = {**os.environ, "CI_REGISTRAR_DATA_DIR": str(tmp_path / "data")}
    env.pop("DATABASE_URL", None)

    def base(*args):
        return subprocess.run([sys.executable, "-c", BLOCK_STORE, *args], capture_output=True, text=True, cwd=ROOT,
                              env=env)

    done = base("check", "--repo", str(repo))
    assert done.returncode == 1 and "REG010" in done.stdout, done.stderr
    assert base("check", "--repo", str(repo), "--fix").returncode == 0
    assert base("rule", "REG010").returncode == 0 and base("config", "defaults").returncode == 0
    for command in (["durations", "show"], ["durations", "import", "x.log", "--repository", "a/b"], ["audit"],
                    ["db", "upgrade"], ["check", "--repo", str(repo), "--durations"]):
        line = one_line_error(base(*command))
        assert line.startswith(f"ci-registrar {command[0]}: ") and "pip install 'ci-registrar[store]'" in line, line
    assert not (tmp_path / "data").exists()


def test_the_install_recipes_ask_for_the_app_extra_where_the_service_runs():
    assert "'.[app,test]'" in (ROOT / "Makefile").read_text()
    assert '".[app]"' in (ROOT / "deploy/Dockerfile").read_text() and "ci-registrar[app]==" in (ROOT / "deploy/Dockerfile").read_text()
    text = (ROOT / ".pre-commit-hooks.yaml").read_text()
    import yaml

    hooks = {h["id"]: h for h in yaml.safe_load(text)}
    assert "rev: main" in text  # no release tag exists yet (tests/test_readme.py checks every pinned ref)
    assert hooks["ci-registrar"]["entry"] == "ci-registrar check --brief"
    assert hooks["ci-registrar-fix"]["entry"] == "ci-registrar check --brief --fix"
    # the staged files, in one process (the check reads the whole tree once)
    assert all(h["language"] == "python" and h["pass_filenames"] is True and h["require_serial"] is True
               for h in hooks.values())


BLOCK_APP = (
    "import sys\n"
    "from bot.commands.errors import APP_MODULES\n"
    "class Block:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name.split('.')[0] in APP_MODULES:\n"
    "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
    "sys.meta_path.insert(0, Block())\n"
    "from bot.cli import main\n"
    "main(sys.argv[1:])\n"
)


def test_the_light_commands_work_without_the_app_extra(tmp_path):
    """As after `pip install .`: every module of the `app` extra unimportable."""
    repo = make_tree(tmp_path / "miles", **{PPO: test_file(TYPO)})
    env = {**os.environ, "CI_REGISTRAR_DATA_DIR": str(tmp_path / "data")}
    env.pop("DATABASE_URL", None)

    def light(*args):
        return subprocess.run([sys.executable, "-c", BLOCK_APP, *args], capture_output=True, text=True, cwd=ROOT, env=env)

    done = light("check", "--repo", str(repo))
    assert done.returncode == 1 and "REG010" in done.stdout and "fix:" in done.stdout, done.stderr
    assert light("check", "--repo", str(repo), "--diff").returncode == 1
    log = tmp_path / "job.log"
    log.write_text("2024-05-01T10:00:00.0000000Z [1/1] tests/e2e/test_a.py  PASS  elapsed=42s\n")
    done = light("durations", "import", str(log), "--repository", "a/b", "--hardware", "MI355X")
    assert done.returncode == 0, done.stderr
    done = light("durations", "show", "--format", "json", "--window-days", "100000")
    assert done.returncode == 0 and json.loads(done.stdout)[0]["file"] == "tests/e2e/test_a.py", done.stderr
    assert light("durations", "export").returncode == 0
    assert light("rule", "REG010").returncode == 0
    assert light("config", "defaults").returncode == 0
    done = light("serve")
    assert done.returncode == 2 and "ci-registrar[app]" in done.stderr and "Traceback" not in done.stderr


def test_check_without_fixes_imports_no_service_library_nor_libcst(tmp_path):
    repo = make_tree(tmp_path / "miles")
    probe = (
        "import sys\n"
        "from bot.cli import main\n"
        "try:\n"
        f"    main(['check', '--repo', {str(repo)!r}])\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        f"print('LOADED', sorted(m for m in {HEAVY_MODULES!r} if m in sys.modules), code)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "LOADED [] 0"


def test_check_loads_libcst_only_for_a_fix_a_text_edit_cannot_make(tmp_path):
    """A corrected literal on a one-line call that still fits is a text edit; a call the fix makes
    too long for the line is wrapped the way black does, by a libcst codemod."""
    def imported_by(repo) -> set[str]:
        done = subprocess.run([sys.executable, "-X", "importtime", "-m", "bot.cli", "check", "--repo", str(repo)],
                              capture_output=True, text=True, cwd=ROOT)
        assert done.returncode == 1 and "fix:" in done.stdout, done.stdout + done.stderr
        return {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}

    simple = imported_by(make_tree(tmp_path / "simple", **{PPO: test_file(TYPO)}))
    assert "libcst" not in simple
    assert not simple & {"flask", "sqlalchemy", "github", "gidgethub", "huey", "redis", "structlog"}
    long_call = 'register_rocm_ci(est_time=2400, suite="nightly-stage-c-4-gpu-mi35", labels=["long"])  # calibrated'
    long_call += " on MI355X".ljust(120 - len(long_call), ".")
    assert len(long_call) == 120  # the fixed line is one character longer than black allows
    assert "libcst" in imported_by(make_tree(tmp_path / "long", **{PPO: test_file(long_call)}))


def test_outputs_that_show_no_fix_never_load_libcst(tmp_path):
    repo = make_tree(tmp_path / "miles", **{PPO: test_file(TYPO)})
    for fmt in ("github", "json"):
        done = subprocess.run([sys.executable, "-X", "importtime", "-m", "bot.cli", "check", "--repo", str(repo), "--format", fmt],
                              capture_output=True, text=True, cwd=ROOT)
        assert done.returncode == 1 and "REG010" in done.stdout
        imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
        assert "libcst" not in imported, fmt


def test_version_comes_from_the_package_metadata():
    from importlib.metadata import version

    done = cli("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"ci-registrar {version('ci-registrar')}"


def test_a_service_command_without_the_app_extra_says_which_extra(tmp_path):
    probe = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('flask', 'werkzeug'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from bot.cli import main\n"
        "main(['manifest', '--url', 'https://x.example'])\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "CI_REGISTRAR_DATA_DIR": str(tmp_path)})
    line = one_line_error(done)
    assert "ci-registrar[app]" in line and line.startswith("ci-registrar manifest: ")


# ------------------------------------------------------------------------------------------------
# --fix, --diff


def test_diff_previews_the_fix_and_changes_nothing(tmp_path):
    repo = make_tree(tmp_path / "miles", **{PPO: test_file(TYPO)})
    before = (repo / PPO).read_text()
    done = cli("check", "--repo", str(repo), "--diff")
    assert done.returncode == 1, done.stderr  # something to fix
    assert done.stdout.startswith(f"--- a/{PPO}\n+++ b/{PPO}\n@@ ")
    assert f"-{TYPO}\n+{GOOD}\n" in done.stdout
    assert (repo / PPO).read_text() == before
    # the diff applies with git apply
    git(repo, "init", "-q")
    applied = subprocess.run(["git", "-C", str(repo), "apply", "--check", "-"], input=done.stdout, text=True, capture_output=True)
    assert applied.returncode == 0, applied.stderr


def test_fix_writes_the_fixes_and_reports_what_is_left(tmp_path):
    other = "tests/e2e/test_other.py"
    repo = make_tree(tmp_path / "miles", **{
        PPO: test_file(TYPO),
        # two fixes of one call (suite and labels): the second comes in a second round
        other: "\r\n".join(test_file('register_rocm_ci(est_time=5, suite="stage-c-4-gpu-mi35", labels=["long"])').split("\n")),
    })
    done = cli("check", "--repo", str(repo), "--fix")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "fixed 2 findings in 2 files" in done.stderr
    assert (repo / PPO).read_text() == test_file(GOOD)
    fixed_other = (repo / other).read_bytes()
    assert b'suite="stage-c-4-gpu-mi350"' in fixed_other and b"\r\n" in fixed_other and b"\n" not in fixed_other.replace(b"\r\n", b"")
    assert "0 failures" in done.stdout
    again = cli("check", "--repo", str(repo), "--diff")
    assert again.returncode == 0 and again.stdout == ""


def test_fix_in_diff_mode_skips_lines_the_working_tree_changed(tmp_path):
    repo = make_tree(tmp_path / "miles")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    write(repo, {PPO: test_file(TYPO)})
    git(repo, "commit", "-qam", "typo")
    done = cli("check", "--repo", str(repo), "--base", "HEAD~1", "--fix")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (repo / PPO).read_text() == test_file(GOOD)
    write(repo, {PPO: test_file(TYPO.replace("est_time=800", "est_time=801"))})  # edited since the commit
    done = cli("check", "--repo", str(repo), "--base", "HEAD~1", "--fix")
    assert done.returncode == 1 and "differs from the checked revision" in done.stderr
    assert "est_time=801" in (repo / PPO).read_text()


def test_fix_and_diff_refuse_contradictory_options(tmp_path):
    repo = make_tree(tmp_path / "miles")
    assert "exclude each other" in one_line_error(cli("check", "--repo", str(repo), "--fix", "--diff"))
    assert "--head" in one_line_error(cli("check", "--repo", str(repo), "--base", "x", "--head", "y", "--fix"))


# ------------------------------------------------------------------------------------------------
# --new-only


@pytest.fixture()
def adopted_repo(tmp_path):
    """A repository with an old failure (a typo on main) and a branch that adds one file and changes another."""
    repo = make_tree(tmp_path / "miles", **{
        PPO: test_file(TYPO),  # old: on main already
        "tests/e2e/test_changed.py": test_file('register_rocm_ci(est_time=10, suite="stage-c-4-gpu-mi350", labels=["long"])'),
    })
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    git(repo, "checkout", "-qb", "topic")
    return repo


def test_new_only_is_quiet_about_old_findings(adopted_repo):
    write(adopted_repo, {"tests/e2e/test_changed.py": test_file('register_rocm_ci(est_time=20, suite="stage-c-4-gpu-mi350", labels=["long"])')})
    git(adopted_repo, "commit", "-qam", "est_time")
    everything = cli("check", "--repo", str(adopted_repo), "--format", "json")
    assert everything.returncode == 1 and "REG010" in everything.stdout  # the old typo
    done = cli("check", "--repo", str(adopted_repo), "--base", "main", "--new-only", "--format", "json")
    assert done.returncode == 0, done.stdout
    assert json.loads(done.stdout)["findings"] == []


def test_new_only_reports_findings_on_added_and_changed_registrations(adopted_repo):
    write(adopted_repo, {
        "tests/e2e/test_changed.py": test_file('register_rocm_ci(est_time=20, suite="stage-c-4-gpu-mi35", labels=["long"])'),
        "tests/e2e/test_added.py": test_file('register_rocm_ci(est_time=20, suite="stage-c-4-gpu-mi350", labels=["lng"])'),
        "tests/e2e/test_unregistered.py": "def test_x():\n    pass\n",
    })
    git(adopted_repo, "add", "-A")
    git(adopted_repo, "commit", "-qm", "new work")
    done = cli("check", "--repo", str(adopted_repo), "--base", "main", "--new-only", "--format", "json")
    assert done.returncode == 1
    found = sorted((f["rule"], f["file"]) for f in json.loads(done.stdout)["findings"])
    assert found == [("REG002", "tests/e2e/test_added.py"), ("REG004", "tests/e2e/test_unregistered.py"),
                     ("REG010", "tests/e2e/test_changed.py")]
    assert all(f["file"] != PPO for f in json.loads(done.stdout)["findings"])


def test_new_only_needs_a_base(tmp_path):
    repo = make_tree(tmp_path / "miles")
    assert "--new-only needs --base" in one_line_error(cli("check", "--repo", str(repo), "--new-only"))


# ------------------------------------------------------------------------------------------------
# --fail-on, --output


def test_fail_on_warning_and_output_file(tmp_path):
    # REG013 ("this test never runs") is a failure: kept a warning here, to see --fail-on warning
    repo = make_tree(tmp_path / "miles", **{".github/ci-registrar.yml": "consumers: []\nrules:\n  REG013: warning\n"})
    assert cli("check", "--repo", str(repo)).returncode == 0
    done = cli("check", "--repo", str(repo), "--fail-on", "warning", "--format", "sarif", "--output", str(tmp_path / "out.sarif"))
    assert done.returncode == 1 and done.stdout == "" and "warning" in done.stderr
    doc = json.loads((tmp_path / "out.sarif").read_text())
    assert doc["runs"][0]["results"] and doc["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"] == repo.resolve().as_uri() + "/"
    assert doc["runs"][0]["tool"]["driver"]["version"] == cli("--version").stdout.split()[-1]


# ------------------------------------------------------------------------------------------------
# One-line errors, exit 2


def test_unknown_revision_gives_gits_reason(tmp_path):
    repo = make_tree(tmp_path / "miles")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    line = one_line_error(cli("check", "--repo", str(repo), "--base", "origin/nope"))
    assert "origin/nope" in line and "fatal:" in line and "shallow" not in line


def test_a_shallow_clone_gets_the_fetch_depth_hint(tmp_path):
    origin = make_tree(tmp_path / "origin")
    git(origin, "init", "-q", "-b", "main")
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "one")
    write(origin, {PPO: test_file(GOOD) + "\n"})
    git(origin, "commit", "-qam", "two")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", origin.as_uri(), str(clone)], check=True, capture_output=True)
    line = one_line_error(cli("check", "--repo", str(clone), "--base", "HEAD~1"))
    assert "fatal:" in line and "shallow clone? use `fetch-depth: 0` with actions/checkout" in line


def test_not_a_target_repository(tmp_path):
    (tmp_path / "web" / "src").mkdir(parents=True)
    (tmp_path / "web" / "src" / "index.js").write_text("\n")
    line = one_line_error(cli("check", "--repo", str(tmp_path / "web")))
    assert "is not a target repository" in line and "tests/ci/ci_register.py" in line


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_database_is_one_line_naming_host_and_port(tmp_path):
    port = _closed_port()
    env = {"DATABASE_URL": f"postgresql://u:secret@127.0.0.1:{port}/db", "CI_REGISTRAR_DATA_DIR": str(tmp_path)}
    line = one_line_error(cli("durations", "show", env=env))
    assert f"127.0.0.1:{port}" in line and "secret" not in line and "DATABASE_URL" in line
    repo = make_tree(tmp_path / "miles")
    line = one_line_error(cli("check", "--repo", str(repo), "--durations", env=env))
    assert f"127.0.0.1:{port}" in line


def test_a_job_log_without_repo_is_a_usage_error(tmp_path):
    log = tmp_path / "job.log"
    log.write_text("2024-01-01T00:00:00Z [1/1] tests/e2e/test_a.py  PASS  elapsed=5s\n")
    line = one_line_error(cli("durations", "import", str(log), env={"CI_REGISTRAR_DATA_DIR": str(tmp_path)}))
    assert "--repo" in line


# ------------------------------------------------------------------------------------------------
# --select, --ignore, --extend-ignore: the codes and names of the configuration's `rules:`


def test_select_and_ignore_take_codes_prefixes_and_names(tmp_path):
    repo = make_tree(tmp_path / "miles", **{PPO: test_file(TYPO)})
    everything = cli("check", "--repo", str(repo), "--format", "json")
    codes = {f["rule"] for f in json.loads(everything.stdout)["findings"]}
    assert everything.returncode == 1 and "REG010" in codes
    for flags in (["--ignore", "REG010"], ["--ignore", "unknown-suite"], ["--extend-ignore", "reg01"],
                  ["--select", "REG04,REG05"], ["--select", "REG040", "--select", "REG050"]):
        done = cli("check", "--repo", str(repo), "--format", "json", *flags)
        kept = {f["rule"] for f in json.loads(done.stdout)["findings"]}
        assert "REG010" not in kept and done.returncode == 0, (flags, done.stdout)
    only = cli("check", "--repo", str(repo), "--format", "json", "--select", "unknown-suite")
    assert {f["rule"] for f in json.loads(only.stdout)["findings"]} == {"REG010"} and only.returncode == 1
    # The configuration takes the same names.
    named = make_tree(tmp_path / "named", **{PPO: test_file(TYPO),
                                             ".github/ci-registrar.yml": "consumers: []\nrules:\n  REG013: off\n"
                                                                         "  unknown-suite: off\n"})
    assert "REG010" not in cli("check", "--repo", str(named)).stdout
    line = one_line_error(cli("check", "--repo", str(repo), "--ignore", "REG999,no-such-rule"))
    assert line.startswith("ci-registrar check: --ignore: no rule is called REG999, no-such-rule")


def test_select_never_hides_that_the_configuration_is_invalid(tmp_path):
    repo = make_tree(tmp_path / "miles", **{".github/ci-registrar.yml": "calibration:\n  margin: lots\n"})
    done = cli("check", "--repo", str(repo), "--select", "REG010", "--format", "json")
    assert done.returncode == 1 and {f["rule"] for f in json.loads(done.stdout)["findings"]} == {"REG900"}


# ------------------------------------------------------------------------------------------------
# check [PATH...], from anywhere in the checkout


def test_check_finds_the_root_from_a_subdirectory_and_reports_the_named_paths(tmp_path):
    repo = make_tree(tmp_path / "miles", **{PPO: test_file(TYPO)})
    git(repo, "init", "-q")
    deep = repo / "tests" / "e2e" / "megatron"
    done = cli("check", cwd=deep)
    assert done.returncode == 1 and "REG010" in done.stdout and PPO in done.stdout, done.stdout + done.stderr
    named = cli("check", "test_qwen3_4B_ppo.py", cwd=deep)  # relative to where it runs, as ruff takes it
    assert named.returncode == 1 and PPO in named.stdout
    elsewhere = cli("check", "--format", "json", "tests/ci", cwd=repo)
    assert elsewhere.returncode == 0 and not [f for f in json.loads(elsewhere.stdout)["findings"]
                                              if f["file"].startswith("tests/e2e/")], elsewhere.stdout
    both = cli("check", "--format", "json", "tests/ci", PPO, cwd=repo)
    assert both.returncode == 1 and {f["file"] for f in json.loads(both.stdout)["findings"]
                                     if f["rule"] == "REG010"} == {PPO}
    assert one_line_error(cli("check", "--repo", ".", str(tmp_path), cwd=repo)).endswith("is outside the checkout .")
    assert "no such file" in one_line_error(cli("check", "tests/nope.py", cwd=repo))


# ------------------------------------------------------------------------------------------------
# The console script leaves `check` without the interpreter's teardown (bot/cli.py, run)


def test_the_console_script_is_run_and_a_check_ends_as_main_would(tmp_path):
    """`run` ends a check with os._exit: the same report, whole through a pipe, and the same status
    as `main` (click's own exit), for a report with failures (1), one without (0) and an error (2)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["ci-registrar"] == "bot.cli:run"
    bad = make_tree(tmp_path / "bad", **{PPO: test_file(TYPO)})
    good = make_tree(tmp_path / "good", **{PPO: test_file(GOOD)})
    by_main = [sys.executable, "-c", "import sys; from bot.cli import main; sys.argv[0] = 'ci-registrar'; main()"]
    cases = [("check", "--repo", str(bad), "--format", "json", "--no-cache"),
             ("check", "--repo", str(good), "--format", "sarif", "--no-cache"),
             ("check", "--repo", str(tmp_path / "nowhere"))]
    statuses = []
    for args in cases:
        ran = subprocess.run([CLI, *args], capture_output=True, text=True)
        main = subprocess.run([*by_main, *args], capture_output=True, text=True)
        assert (ran.returncode, ran.stdout, ran.stderr) == (main.returncode, main.stdout, main.stderr)
        statuses.append(ran.returncode)
    assert statuses == [1, 0, 2]
    assert json.loads(subprocess.run([CLI, *cases[0]], capture_output=True, text=True).stdout)["findings"]


def test_a_check_whose_reader_leaves_early_is_not_a_traceback(tmp_path):
    """A pipe closed by its reader (`ci-registrar check | head -1`): no traceback from the flush."""
    repo = make_tree(tmp_path / "repo", **{PPO: test_file(TYPO)})
    done = subprocess.run(f"'{CLI}' check --repo '{repo}' --format sarif --no-cache | head -c 1",
                          shell=True, capture_output=True, text=True)
    assert done.stdout == "{"
    assert "Traceback" not in done.stderr


def test_other_commands_end_through_click(monkeypatch, capsys):
    """Only a command of ENDS_WITH_ITS_REPORT leaves by os._exit; `rule` ends as click ends it."""
    import bot.cli

    left = []
    monkeypatch.setattr(bot.cli, "_leave", lambda code: left.append(code))
    monkeypatch.setattr(sys, "argv", ["ci-registrar", "rule", "REG010"])
    with pytest.raises(SystemExit) as exc:
        bot.cli.run()
    assert exc.value.code == 0 and left == [] and "REG010" in capsys.readouterr().out
    monkeypatch.setattr(sys, "argv", ["ci-registrar", "check", "--repo", "/nonexistent-checkout"])
    with pytest.raises(SystemExit):
        bot.cli.run()
    assert left == [2]
