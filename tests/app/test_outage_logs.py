"""An operator's first day: Redis or PostgreSQL going away under a running process.

`ci-registrar worker` and `ci-registrar serve`, each against the real Redis and PostgreSQL through a
TCP proxy this test cuts (the shared servers cannot be stopped): the outage is one warning line when
it starts and one line when it ends, never a traceback, and the process tries again with backoff in
between (the proxy counts the connections it refused). A Redis that is down from the start (the
issue's case: a well-formed REDIS_URL, nothing listening) is the same one line.

bot/infra/outage.py is the tracker; its own fast tests are at the end.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit

import pytest
import requests

from tests.conftest import CLI, REDIS_TEST_URL
from tests.patience import wait_for
from tests.processes import start, stop
from tests.tcp_proxy import TcpProxy
from tests.service_support import free_port

OUTAGE_S = 6.0
RAMP_S = 2.0  # the backoff's doubling, before every reader waits OUTAGE_PAUSE_S between tries
THREADS = 4


def _events(log: Path) -> list[dict]:
    events = []
    for line in log.read_text(errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def _proxies(pg_url: str):
    redis_target = urlsplit(REDIS_TEST_URL)
    pg = urlsplit(pg_url)
    redis_proxy = TcpProxy(redis_target.hostname or "127.0.0.1", redis_target.port or 6379)
    pg_proxy = TcpProxy(pg.hostname or "127.0.0.1", pg.port or 5432)
    pg_via = pg_url.replace(f"{pg.hostname}:{pg.port}", f"127.0.0.1:{pg_proxy.port}", 1)
    return redis_proxy, pg_proxy, redis_proxy.url("redis", redis_target.path or "/0"), pg_via


def _start(command: str, tmp_path: Path, env: dict):
    log = tmp_path / f"{command}.log"
    args = [CLI, command, "--threads", str(THREADS)] + (["--port", str(env["PORT"])] if command == "serve" else [])
    proc = start(args, env={**os.environ, **env}, stdout=log.open("w"), stderr=log.open("a"), cwd=tmp_path)
    if command == "worker":
        started = wait_for(lambda: any(e.get("event") == "worker started" for e in _events(log)))
    else:
        def ready():  # store, queue and worker threads ready; no App is registered here
            try:
                answer = requests.get(f"http://127.0.0.1:{env['PORT']}/readyz", timeout=2).json()
            except (requests.RequestException, ValueError):
                return False
            return set(answer.get("missing", {})) <= {"credentials"}
        started = wait_for(ready, interval=0.2)
    assert started, log.read_text()[-3000:]
    return proc, log


@pytest.mark.parametrize("command", ["worker", "serve"])
@pytest.mark.parametrize("dependency", ["queue", "store"])
def test_an_outage_is_one_line_when_it_starts_and_one_when_it_ends(command, dependency, pg_url, redis_prefix, tmp_path):
    # The store is migrated first: a worker that starts on an empty database is another story.
    migrate = __import__("subprocess").run([CLI, "db", "upgrade"], env={**os.environ, "DATABASE_URL": pg_url,
                                           "CI_REGISTRAR_DATA_DIR": str(tmp_path / "data")}, capture_output=True, text=True)
    assert migrate.returncode == 0, migrate.stderr
    redis_proxy, pg_proxy, redis_via, pg_via = _proxies(pg_url)
    env = {"REDIS_URL": redis_via, "DATABASE_URL": pg_via, "CI_REGISTRAR_QUEUE_NAME": redis_prefix,
           "CI_REGISTRAR_DATA_DIR": str(tmp_path / "data"), "CI_REGISTRAR_LOG_LEVEL": "info",
           # The reconciler reads the store every 0.3 s here (5 min by default): the store's outage
           # meets a reader at once, as a busy worker's jobs would.
           "CI_REGISTRAR_RECONCILE_EVERY_S": "0.3", "PORT": str(free_port()), "CI_REGISTRAR_ACCESS_LOG": "off"}
    proc, log = _start(command, tmp_path, env)
    proxy = redis_proxy if dependency == "queue" else pg_proxy
    try:
        time.sleep(0.5)
        before = len(_events(log))
        proxy.drop()
        assert wait_for(lambda: any(e.get("event") == f"{dependency} unreachable, retrying" for e in _events(log))), \
            log.read_text()[-3000:]
        time.sleep(RAMP_S)
        halfway = proxy.refused
        time.sleep(OUTAGE_S - RAMP_S)
        refused = proxy.refused - halfway  # tries once backed off: the outage's last OUTAGE_S - RAMP_S
        proxy.restore()
        assert wait_for(lambda: any(e.get("event") == f"{dependency} reachable again" for e in _events(log))), \
            log.read_text()[-3000:]
        time.sleep(1.0)  # a flood after the end would show by now
        during = _events(log)[before:]
    finally:
        stop(proc)
        redis_proxy.close()
        pg_proxy.close()
    loud = [e for e in during if e.get("level") in ("warning", "error", "critical")]
    assert [e["event"] for e in loud] == [f"{dependency} unreachable, retrying", f"{dependency} reachable again"], loud
    started, ended = loud
    assert str(proxy.port) in started["where"] and "with backoff" in started["retry"] and started["error"]
    assert ended["down_s"] >= OUTAGE_S - 0.5
    assert not [e for e in during if "exception" in e or "Traceback" in json.dumps(e)]
    assert "Traceback" not in log.read_text()
    # Backoff: once the outage has lasted a while, the process tries the dependency once per backoff
    # step (bot/infra/outage.py: the first reader past the step tries, the others wait), not once per
    # reader: by RAMP_S in the step is 1.6 s or more, so at most 3 tries fall in these 4 s, each of
    # at most 2 connections (the client's one retry on a fresh connection). Each reader trying on
    # its own (THREADS worker threads, the scheduler, the heartbeat, the reconciler at every pass)
    # made 16 to 28 for the queue and 39 for the store; huey's reads alone made 36 or more.
    assert refused <= 3 * 2, refused


def test_a_redis_that_is_down_from_the_start_is_one_line(tmp_path, redis_prefix):
    port = free_port()  # nothing listens there
    env = {"REDIS_URL": f"redis://127.0.0.1:{port}/0", "CI_REGISTRAR_QUEUE_NAME": redis_prefix,
           "CI_REGISTRAR_DATA_DIR": str(tmp_path / "data")}
    proc, log = _start("worker", tmp_path, env)
    try:
        assert wait_for(lambda: any(e.get("event") == "queue unreachable, retrying" for e in _events(log)))
        time.sleep(3.0)
    finally:
        stop(proc)
    loud = [e for e in _events(log) if e.get("level") in ("warning", "error", "critical")]
    assert [e["event"] for e in loud] == ["queue unreachable, retrying"], loud
    assert loud[0]["where"] == f"Redis at 127.0.0.1:{port}"
    assert "Traceback" not in log.read_text()


# -- the tracker, fast ------------------------------------------------------------------------------
def test_the_tracker_tells_each_outage_once_and_backs_off(monkeypatch):
    import redis.exceptions
    from sqlalchemy import exc as sa

    from bot.infra import outage

    told = []
    monkeypatch.setattr(outage.log, "warning", lambda event, **kw: told.append((event, kw)))
    tracker = outage.Outage("queue")
    tracker.describe("redis://:secret@cache.internal:6380/2")
    assert tracker.where == "Redis at cache.internal:6380" and "secret" not in tracker.where
    assert tracker.due() and not tracker.down
    tracker.answered()  # nothing to end
    assert told == []
    waits = []
    for _ in range(8):
        assert tracker.failed(redis.exceptions.ConnectionError("Error 111 connecting"))
        waits.append(tracker.wait_s())
    assert len(told) == 1 and told[0][0] == "queue unreachable, retrying" and tracker.down
    assert waits == sorted(waits) and waits[0] == outage.FIRST_WAIT_S and waits[-1] == outage.LONGEST_WAIT_S
    assert not tracker.due()
    # Once a step has passed, one caller tries; the others wait for its outcome (a step more).
    later = time.monotonic() + outage.LONGEST_WAIT_S + 1
    monkeypatch.setattr(outage, "time", SimpleNamespace(monotonic=lambda: later))
    assert tracker.due() and not tracker.due() and not tracker.due()
    monkeypatch.setattr(outage, "time", SimpleNamespace(monotonic=lambda: later + outage.LONGEST_WAIT_S + 1))
    assert tracker.due() and not tracker.due()
    tracker.answered()
    tracker.answered()
    assert [e for e, _ in told] == ["queue unreachable, retrying", "queue reachable again"]
    assert (tracker.started, tracker.ended) == (1, 1) and tracker.due()
    # Not an outage: a bug or a bad command keeps its own report.
    assert not tracker.failed(ValueError("bad data"))
    assert not tracker.failed(sa.IntegrityError("insert", {}, Exception("duplicate key")))
    assert tracker.failed(sa.OperationalError("select 1", {}, Exception("connection refused")))
    assert outage.where("postgresql+psycopg://u:pw@db:5432/registrar") == "PostgreSQL at db:5432/registrar"
    assert outage.where("sqlite:////var/lib/x.db") == "SQLite at /var/lib/x.db"


def test_the_proxy_carries_bytes_for_a_process_with_many_files_open(tmp_path):
    """A long test run holds more than 1024 descriptors: the proxy must not depend on select()."""
    import redis

    held = [open(tmp_path / "held", "w") for _ in range(1100)]  # the next sockets' numbers are past 1024
    try:
        target = urlsplit(REDIS_TEST_URL)
        proxy = TcpProxy(target.hostname or "127.0.0.1", target.port or 6379)
        client = redis.Redis.from_url(proxy.url("redis", "/0"), socket_timeout=5)
        try:
            assert client.ping() and client.ping()
        finally:
            client.close()
            proxy.close()
    finally:
        for f in held:
            f.close()


def test_a_connection_being_made_as_the_proxy_drops_is_reset_too(monkeypatch):
    """drop() between the proxy's accept and its pairing of the connection: the connection must not
    outlive the outage (it carried a worker's calls through one, seen under load)."""
    import redis

    from tests import tcp_proxy

    target = urlsplit(REDIS_TEST_URL)
    proxy = TcpProxy(target.hostname or "127.0.0.1", target.port or 6379)
    connect = tcp_proxy.socket.create_connection

    def connect_as_the_outage_starts(address, timeout=None):
        proxy.drop()  # after the proxy's check of its mode, before it pairs the connection
        return connect(address, timeout=timeout)

    monkeypatch.setattr(tcp_proxy.socket, "create_connection", connect_as_the_outage_starts)
    client = redis.Redis.from_url(proxy.url("redis", "/0"), socket_timeout=5, retry_on_timeout=False)
    try:
        with pytest.raises(redis.exceptions.ConnectionError):
            client.ping()
        assert proxy.refused == 1 and proxy.accepted == 0
    finally:
        client.close()
        proxy.close()
