"""Every environment variable the App reads is in bot/infra/environment.py's table, docs/environment.md
is generated from it, and `serve` and `worker` refuse a value that cannot work: one line, exit 2,
before anything starts (the value itself never printed)."""

from __future__ import annotations

import re

import pytest

from bot.infra import environment
from bot.infra.environment import BY_NAME, LIMIT_PREFIX, VARIABLES, check_environment, markdown, problems
from bot.infra.settings import SettingsError
from tests import REPO
from tests.bot.infra.test_environment_errors import one_line, run

ROOT = REPO
READ = re.compile(r"[\"'](CI_REGISTRAR_[A-Z0-9_]+|GITHUB_[A-Z_]+|DATABASE_URL|REDIS_URL|PORT|HOST|WEB_CONCURRENCY)[\"']")
NOT_THE_APPS = {"GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ACTIONS", "GITHUB_WORKSPACE", "GITHUB_TOKEN",
                "GITHUB_EVENT_PATH", "GITHUB_BASE_REF", "GITHUB_SHA", "GITHUB_REF", "GITHUB_REPOSITORY"}
# Read by the tests and benches, or by the command line only (not `serve` or `worker`).
NOT_THE_SERVICES = {"CI_REGISTRAR_UPDATE_SCREENSHOTS", "CI_REGISTRAR_TEST_PATIENCE", "CI_REGISTRAR_TEST_PG",
                    "CI_REGISTRAR_TEST_REDIS"}


def test_every_variable_read_in_the_code_is_in_the_table():
    read = set()
    for path in [*(ROOT / "bot").rglob("*.py"), *(ROOT / "checks").rglob("*.py"), ROOT / "app.py"]:
        if path.name == "environment.py":
            continue
        read |= set(READ.findall(path.read_text()))
    read = {name for name in read if not name.startswith(LIMIT_PREFIX)} - NOT_THE_APPS - NOT_THE_SERVICES
    assert read - set(BY_NAME) == set(), "add each to bot/infra/environment.py's VARIABLES (then `make docs`)"
    assert len(BY_NAME) == len(VARIABLES)


def test_the_docs_are_current():
    assert (ROOT / "docs/environment.md").read_text() == markdown(), "docs/environment.md is stale: run `make docs`"


BAD = {"PORT": "http", "WEB_CONCURRENCY": "0", "CI_REGISTRAR_LOG_LEVEL": "loud", "CI_REGISTRAR_ACCESS_LOG": "maybe",
       "CI_REGISTRAR_RECONCILE_EVERY_S": "soon", "CI_REGISTRAR_INTAKE_TIMEOUT_S": "-1", "CI_REGISTRAR_JOB_ATTEMPTS": "2.5",
       "CI_REGISTRAR_PROXY_COUNT": "11", "CI_REGISTRAR_METRICS_ALLOW": "everyone", "CI_REGISTRAR_QUEUE_SYNCHRONOUS": "fast",
       "GITHUB_API_URL": "api.github.com", "GITHUB_APP_ID": "my-app", "GITHUB_PRIVATE_KEY_PATH": "/nonexistent/key.pem",
       "CI_REGISTRAR_DURATION_CLAIMS": "miles", "CI_REGISTRAR_ANALYSIS_TIMEOUT_S": "nan", "REDIS_URL": "garbage",
       "DATABASE_URL": "mysql://x/y", "CI_REGISTRAR_INDEX_MAX_MB": "0", "CI_REGISTRAR_LIMIT_FILE_BYTES": "lots",
       "CI_REGISTRAR_LIMIT_BOGUS": "1"}
GOOD = {"PORT": "8080", "WEB_CONCURRENCY": "3", "CI_REGISTRAR_LOG_LEVEL": "WARN", "CI_REGISTRAR_ACCESS_LOG": "off",
        "CI_REGISTRAR_RECONCILE_EVERY_S": "0.5", "CI_REGISTRAR_PROXY_COUNT": "1", "CI_REGISTRAR_METRICS_ALLOW": "10.0.0.0/8, ::1",
        "CI_REGISTRAR_QUEUE_SYNCHRONOUS": "full", "GITHUB_API_URL": "https://ghe.example/api/v3", "GITHUB_APP_ID": "12",
        "CI_REGISTRAR_DURATION_CLAIMS": "radixark/miles<-sgl-project/sglang", "REDIS_URL": "redis://cache:6379/0",
        "DATABASE_URL": "postgresql://u:pw@db/x", "CI_REGISTRAR_LIMIT_FILE_BYTES": "8_388_608", "HOST": "anything"}


@pytest.mark.parametrize("name, value", sorted(BAD.items()))
def test_each_bad_value_is_named(name, value):
    found = problems({name: value})
    assert len(found) == 1 and found[0].startswith(name), found
    assert value not in found[0] or value in ("0", "1", "11"), found  # never echoes what may be a secret


def test_good_values_pass_and_unset_means_the_default():
    assert problems(GOOD) == []
    assert problems({}) == [] and problems({name: "" for name in BY_NAME}) == []
    with pytest.raises(SettingsError, match=r"^PORT: .* \(and 2 more: CI_REGISTRAR_LOG_LEVEL, CI_REGISTRAR_RECONCILE_EVERY_S\)$"):
        check_environment({"PORT": "x", "CI_REGISTRAR_LOG_LEVEL": "loud", "CI_REGISTRAR_RECONCILE_EVERY_S": "soon"})


def test_every_checked_variable_says_what_it_accepts():
    assert all(getattr(v.check, "accepts", None) for v in VARIABLES if v.check), \
        [v.name for v in VARIABLES if v.check and not getattr(v.check, "accepts", None)]
    assert set(v.group for v in VARIABLES) == set(environment.GROUPS)


@pytest.mark.parametrize("command", ["serve", "worker"])
@pytest.mark.parametrize("name, value, says", [
    ("CI_REGISTRAR_LOG_LEVEL", "loud", "expected one of debug, info"),
    ("PORT", "abc", "expected a whole number from 0 to 65535"),
    ("CI_REGISTRAR_RECONCILE_EVERY_S", "soon", "expected a number above 0"),
    ("CI_REGISTRAR_LIMIT_FILE_BYTES", "x", "expected a positive integer"),
])
def test_serve_and_worker_refuse_a_bad_value_in_one_line(tmp_path, command, name, value, says):
    done = run(command, tmp_path=tmp_path, **{name: value})
    one_line(done, f"ci-registrar {command}: {name}", says)
    assert not (tmp_path / "data").exists()  # refused before anything was created
