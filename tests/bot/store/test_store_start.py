"""Processes started together on a fresh PostgreSQL: the web process and two workers take the
migration lock (bot.store.db.upgrade) at start, one migrates, the others wait for it; none reads a
table that does not exist yet. On the real PostgreSQL of the test machine."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tests import REPO
from tests import processes
from tests.conftest import PG_ADMIN_URL
from tests.patience import wait_for
from tests.service_support import free_port

ROOT = REPO


@pytest.fixture
def fresh_pg():
    name = f"cireg_start_{uuid.uuid4().hex[:10]}"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    yield PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    from bot.store.db import get_engine

    get_engine.cache_clear()
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def _env(tmp_path: Path, url: str, name: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "CI_REGISTRAR_", "REDIS_", "DATABASE_"))}
    env.update(CI_REGISTRAR_DATA_DIR=str(tmp_path / name), DATABASE_URL=url, PYTHONPATH=str(ROOT),
               CI_REGISTRAR_LOG_LEVEL="info", CI_REGISTRAR_RECONCILE_EVERY_S="0.2")
    return env


def test_web_and_workers_started_together_on_a_fresh_postgresql_wait_for_one_migration(tmp_path, fresh_pg):
    from bot.store.db import current_revision

    started = []
    logs = []
    try:
        for name, args, extra in (
                ("web", ["serve", "--no-worker"], {"PORT": str(free_port()), "HOST": "127.0.0.1", "WEB_CONCURRENCY": "1"}),
                ("worker-1", ["worker", "--threads", "2"], {}),
                ("worker-2", ["worker", "--threads", "2"], {})):
            log = tmp_path / f"{name}.log"
            logs.append(log)
            with open(log, "wb") as out:
                started.append(processes.start([sys.executable, "-m", "bot.cli", *args], cwd=ROOT,
                                               env={**_env(tmp_path, fresh_pg, name), **extra},
                                               stdout=out, stderr=subprocess.STDOUT))
        text_of = lambda: [log.read_text(errors="replace") for log in logs]  # noqa: E731
        # Both workers took jobs' tables in hand: started, and their reconcilers (every 0.2 s) ran.
        assert wait_for(lambda: all("worker started" in t for t in text_of()[1:]) and "serving" in text_of()[0]), text_of()
        assert wait_for(lambda: all(p.poll() is None for p in started) and current_revision(fresh_pg) is not None)
        import time

        time.sleep(1.0)  # a few reconciler passes on each worker
        everything = "\n".join(text_of())
        assert "does not exist" not in everything and "UndefinedTable" not in everything, everything[-3000:]
        assert everything.count("store migrated from nothing") == 1, everything[-3000:]  # one migrated, the others waited
        assert all(p.poll() is None for p in started)
    finally:
        for proc in started:
            processes.stop(proc, grace=5)
