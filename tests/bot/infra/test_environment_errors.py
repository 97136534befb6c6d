"""Clear errors for the environment: a DATABASE_URL or REDIS_URL that cannot work, an unknown
CI_REGISTRAR_LOG_LEVEL and a `manifest --url` that is not a URL are one line on stderr and exit 2,
never a traceback, and never repeat a password; CI_REGISTRAR_LOG_LEVEL sets the level."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import CLI


def run(*args, tmp_path, **env):
    environ = {**os.environ, "CI_REGISTRAR_DATA_DIR": str(tmp_path / "data"), **env}
    for name in ("DATABASE_URL", "REDIS_URL", "CI_REGISTRAR_LOG_LEVEL"):
        if name not in env:
            environ.pop(name, None)
    # timeout: `serve` and `worker` would otherwise run on; subprocess.run kills them at the timeout
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=environ, timeout=60)


def one_line(done, *words):
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    for word in words:
        assert word in done.stderr, done.stderr


GARBAGE = ("garbage", "DATABASE_URL is not a URL")
MYSQL = ("mysql://admin:s3cret-pw@db.example.org/ci", "DATABASE_URL names `mysql`, which CI Registrar cannot use")
PORT = ("postgresql://admin:s3cret-pw@db.example.org:five/ci", "a port that is not a number")


@pytest.mark.parametrize("command, url, says", [
    (["durations", "show"], *GARBAGE), (["durations", "show"], *MYSQL), (["durations", "show"], *PORT),
    (["audit"], *MYSQL), (["db", "upgrade"], *GARBAGE), (["serve"], *MYSQL), (["worker"], *GARBAGE),
])
def test_a_database_url_that_cannot_work(tmp_path, command, url, says):
    done = run(*command, tmp_path=tmp_path, DATABASE_URL=url)
    one_line(done, says, "postgresql://user@host:5432/db")
    assert "s3cret" not in done.stderr


@pytest.mark.parametrize("url, says", [("garbage", "REDIS_URL is not a URL"), ("http://cache:6379", "names `http`")])
def test_a_redis_url_that_cannot_work(tmp_path, url, says):
    one_line(run("worker", tmp_path=tmp_path, REDIS_URL=url), says, "redis://host:6379/0")


def test_an_unknown_log_level_is_one_line(tmp_path):
    one_line(run("worker", tmp_path=tmp_path, CI_REGISTRAR_LOG_LEVEL="loud"), "CI_REGISTRAR_LOG_LEVEL", "debug, info, warning")


@pytest.mark.parametrize("level, shown", [("warning", {"warning"}), ("DEBUG", {"debug", "info", "warning"}),
                                          (None, {"info", "warning"})])
def test_the_log_level_is_read_from_the_environment(level, shown):
    code = ("from bot.infra.logging import configure, get_logger\nconfigure()\nlog = get_logger('t')\n"
            "log.debug('d')\nlog.info('i')\nlog.warning('w')\n")
    env = {k: v for k, v in os.environ.items() if k != "CI_REGISTRAR_LOG_LEVEL"}
    if level is not None:
        env["CI_REGISTRAR_LOG_LEVEL"] = level
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert {json.loads(line)["level"] for line in done.stderr.splitlines()} == shown


@pytest.mark.parametrize("url", ["not a url", "ftp://ci.example.org", "https://", "https://ci.example.org/?x=1"])
def test_manifest_refuses_what_is_not_a_public_url(tmp_path, url):
    one_line(run("manifest", "--url", url, tmp_path=tmp_path), "ci-registrar manifest: --url")


def test_manifest_of_a_public_url(tmp_path):
    done = run("manifest", "--url", "https://ci.example.org", tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["hook_attributes"]["url"] == "https://ci.example.org/webhook"
