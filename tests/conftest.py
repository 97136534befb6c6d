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


# -- every process a test starts ends with it (tests/processes.py) ---------------------------------
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """What the test's body started and left running is stopped as soon as the body ends, passed
    or failed (a fixture's processes are its own teardown's, or the session end's)."""
    from tests import processes

    index = processes.mark()
    yield
    processes.stop_started_since(index)


@pytest.fixture(scope="session", autouse=True)
def _no_process_outlives_the_session():
    """Torn down last (each xdist worker's session): what a fixture of wider scope left running is
    stopped, and reported as an error of the run (on the session's last test)."""
    yield
    from tests import processes

    left = processes.end_of_session()
    if left:
        pytest.fail("processes left running at the end of the session (stopped now):\n  " + "\n  ".join(left))
