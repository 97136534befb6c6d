"""Shared fixtures: real PostgreSQL and Redis on 127.0.0.1, each test session in its own namespace."""

from __future__ import annotations

import os
import uuid

import pytest

PG_ADMIN_URL = os.environ.get("CI_REGISTRAR_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
REDIS_TEST_URL = os.environ.get("CI_REGISTRAR_TEST_REDIS", "redis://127.0.0.1:6379/0")


@pytest.fixture(scope="session")
def pg_url():
    """A fresh PostgreSQL database for this test session, dropped afterwards.

    Sessions of different developers or helpers never see each other's tables.
    """
    from sqlalchemy import create_engine, text

    name = f"cireg_{uuid.uuid4().hex[:12]}"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:  # pragma: no cover - the machine always has PostgreSQL
        pytest.fail(f"PostgreSQL at {PG_ADMIN_URL} is not reachable: {exc}")
    url = PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    yield url
    from bot.store.db import get_engine

    get_engine.cache_clear()
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture()
def redis_prefix():
    """A unique key prefix (queue name) for one test on the shared Redis; its keys are removed after."""
    import redis

    client = redis.Redis.from_url(REDIS_TEST_URL)
    client.ping()
    prefix = f"cireg-test-{uuid.uuid4().hex[:10]}"
    yield prefix
    for key in client.scan_iter(f"*{prefix}*"):
        client.delete(key)
    client.close()


# The installed `ci-registrar` console script of the interpreter running the tests (the venv's),
# whatever PATH says.
import sys as _sys
from pathlib import Path as _Path

CLI = str(_Path(_sys.executable).with_name("ci-registrar"))


@pytest.fixture(scope="session", autouse=True)
def _scan_cache_dir(tmp_path_factory):
    """`ci-registrar check` keeps scan facts under ~/.cache by default: tests use their own directory."""
    old = os.environ.get("CI_REGISTRAR_CACHE_DIR")
    os.environ["CI_REGISTRAR_CACHE_DIR"] = str(tmp_path_factory.mktemp("scan-cache"))
    yield
    if old is None:
        os.environ.pop("CI_REGISTRAR_CACHE_DIR", None)
    else:
        os.environ["CI_REGISTRAR_CACHE_DIR"] = old


# Tests that assert on wall time (a deadline the service promises). Under pytest-xdist they would
# share the cores with the other workers' tests, so `make test` runs them one at a time at normal
# CPU priority, beside the others at low priority (tests/run.sh); mark a new one with
# @pytest.mark.serial or list its file or node id here.
SERIAL = (
    # test_adversarial: an ordinary check's deadline under attack, and /readyz telling the truth
    # through outages (its other tests assert on what happens, not when):
    "tests/test_adversarial.py::test_an_attack_does_not_stop_an_ordinary_check",
    "tests/test_adversarial.py::test_an_ondemand_attack_from_another_installation",
    "tests/test_adversarial.py::test_serve_outlives_a_redis_outage_and_readyz_tells_the_truth",
    "tests/test_adversarial.py::test_serve_outlives_a_postgresql_outage_and_readyz_tells_the_truth",
    "tests/test_adversarial.py::test_a_worker_process_outlives_a_redis_outage",
    # test_limits bounds CPU (its in-process checks) except where a child process's wall-clock
    # limit is the subject:
    "tests/test_limits.py::test_bounded_run_stops_at_its_time_limit",
    "tests/test_limits.py::test_bounded_run_stops_at_its_memory_limit",
    "tests/test_service_intake_limits.py",
    "tests/test_intake_deadline.py",  # 503 before a bound 10x the intake's deadline
    "tests/test_service_kill.py",
    "tests/test_failure_modes.py::test_an_outage_on_check_run_updates_longer_than_the_old_budget_still_completes_the_run",
    "tests/test_ondemand_workflow.py::test_listed_files_run_one_by_one_and_their_lines_are_ingestible",  # 5 s per file
)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.nodeid.startswith(SERIAL):
            item.add_marker(pytest.mark.serial)
