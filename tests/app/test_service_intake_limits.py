"""The web processes under slow clients and SIGTERM; the data directory's permissions."""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time

import pytest
import requests

from bot.worker.handlers.pull_requests import CHECK_NAME
from tests.simulator.fixtures import github_sim  # noqa: F401
from tests.service_support import ROOT, Workers, build_world, env_for, free_port, wait_for, worker_env
from tests import processes
from tests.patience import PATIENCE


def _up(base):
    def check():
        try:
            return requests.get(base + "/healthz", timeout=PATIENCE).status_code == 200
        except requests.RequestException:
            return False
    return check


# How long the App waits for a webhook's whole body here: far longer than a delivery takes, however
# busy the machine, so that a slow client still trickling when a delivery is answered shows the
# delivery did not wait behind it (an order of events, not a stopwatch).
BODY_S = PATIENCE / 4


def _trickle(port: int, results: list, every_s: float, connected: list, total: int = 10_000):
    """A client that declares a body and sends it a byte at a time (it would take `total` x
    `every_s` seconds, far past the body deadline)."""
    start = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=PATIENCE) as s:
            s.sendall(b"POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"X-GitHub-Event: ping\r\nX-GitHub-Delivery: slow\r\nX-Hub-Signature-256: sha256=00\r\n"
                      b"Content-Length: %d\r\n\r\n" % total)
            connected.append(1)
            for _ in range(total):
                try:
                    s.sendall(b" ")
                except OSError:
                    break
                s.settimeout(every_s)
                try:
                    answer = s.recv(4096)
                    if answer:
                        results.append((answer.split(b"\r\n", 1)[0], time.monotonic() - start))
                        return
                except socket.timeout:
                    pass
            s.settimeout(PATIENCE)
            answer = s.recv(4096)
            results.append((answer.split(b"\r\n", 1)[0], time.monotonic() - start))
    except OSError as exc:
        results.append((repr(exc).encode(), time.monotonic() - start))


def _slow_clients(port: int, results: list, n: int = 8) -> list[threading.Thread]:
    """`n` slow clients, each trickling a byte a second; returned once all have sent their headers."""
    connected: list = []
    slow = [threading.Thread(target=_trickle, args=(port, results, 1.0, connected)) for _ in range(n)]
    for t in slow:
        t.start()
    assert wait_for(lambda: len(connected) == n or len(results) == n)
    return slow


def test_serve_answers_deliveries_under_slow_clients_exits_on_sigterm_with_a_stuck_job_and_keeps_its_files_private(
        github_sim, tmp_path):
    sim = github_sim
    gh_app = sim.create_app()
    repo = sim.create_repo("radixark/miles")
    repo.commit({"README.md": "x\n"}, branch="main")
    sim.install(gh_app, "radixark/miles")
    repo.commit({"tests/e2e/test_a.py": "x = 1\n"}, branch="feature")
    pr = sim.open_pull_request(repo, "feature", "main", author="bob")
    data_dir = tmp_path / "data"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "CI_REGISTRAR_", "REDIS_", "DATABASE_"))}
    env.update(env_for(sim, gh_app, data_dir), PORT=str(port), HOST="127.0.0.1", PYTHONPATH=str(ROOT),
               CI_REGISTRAR_BODY_TIMEOUT_S=str(BODY_S), CI_REGISTRAR_SHUTDOWN_GRACE_S="2",
               CI_REGISTRAR_HTTP_TIMEOUT_S=str(8 * PATIENCE))
    log = open(tmp_path / "serve.log", "wb")
    proc = processes.start([sys.executable, "-m", "bot.cli", "serve", "--threads", "2"], cwd=ROOT, env=env,
                           stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        assert wait_for(_up(base)), (tmp_path / "serve.log").read_text()
        # 9. private files: the directory 0700, the databases 0600
        assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
        for name in ("ci-registrar.db", "queue.db"):
            assert stat.S_IMODE((data_dir / name).stat().st_mode) == 0o600, name

        # 8 slow clients, each trickling a byte every second: answered 408 at the body deadline,
        # while a real delivery goes through before that, beside them.
        results: list = []
        slow = _slow_clients(port, results)
        # The tree listing hangs far longer than this test waits for anything (until released).
        hang = sim.inject_fault("GET", r"/git/trees/", "slow", times=1, delay=8 * PATIENCE)
        status = sim.deliver(base + "/webhook",
                             sim.webhook("pull_request", "opened", app=gh_app, repo=repo, pull=pr, sender="bob")).status_code
        assert status == 202 and results == [], results  # answered while every slow client still trickles
        for t in slow:
            t.join(PATIENCE)
        # 408 before their bodies were complete (a complete one would be 401, its signature is wrong)
        assert len(results) == 8 and all(r[0].startswith(b"HTTP/1.1 408") for r in results), results

        # A job stuck on GitHub does not keep the process alive after SIGTERM: the grace period
        # (2 s here), then exit, long before the stuck request would end (8 patiences).
        assert wait_for(lambda: hang.hits == 1), (tmp_path / "serve.log").read_text()
        processes.signal_group(proc, signal.SIGTERM)
        assert proc.wait(PATIENCE) == 0
        assert not hang.released.is_set()
        [run] = sim.check_runs(repo, sha=pr.head_sha, name=CHECK_NAME)
        assert run["status"] == "in_progress"  # the job comes back on the next start (lease)
    finally:
        processes.stop(proc)
        log.close()


@pytest.fixture()
def workers(tmp_path):
    w = Workers(tmp_path)
    yield w
    w.stop_all()


def test_gunicorn_keeps_answering_github_in_time_while_slow_clients_trickle(github_sim, tmp_path, workers):
    world = build_world(github_sim, tmp_path)
    port = free_port()
    env = worker_env(world, CI_REGISTRAR_BODY_TIMEOUT_S=BODY_S)
    web = workers.start_web(env, port, workers=2)
    base = f"http://127.0.0.1:{port}"
    assert wait_for(_up(base)), open(web.log_path).read()
    results: list = []
    slow = _slow_clients(port, results)
    statuses = []
    for _ in range(5):
        d = github_sim.webhook("pull_request", "opened", app=world.app, repo=world.repo, pull=world.pr, sender="bob")
        statuses.append(github_sim.deliver(base + "/webhook", d).status_code)
    assert statuses == [202] * 5 and results == [], results  # all five answered beside the slow clients
    for t in slow:
        t.join(PATIENCE)
    assert len(results) == 8 and all(r[0].startswith(b"HTTP/1.1 408") for r in results), results
    assert world.queue.depth() == 5
