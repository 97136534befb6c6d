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

from bot.handlers.pull_requests import CHECK_NAME
from tests.simulator.fixtures import github_sim  # noqa: F401
from tests.test_service_support import ROOT, Workers, build_world, env_for, free_port, wait_for, worker_env
from tests.patience import PATIENCE


def _up(base):
    def check():
        try:
            return requests.get(base + "/healthz", timeout=PATIENCE).status_code == 200
        except requests.RequestException:
            return False
    return check


def _trickle(port: int, results: list, every_s: float, total: int = 200):
    """A client that declares a body and sends it a byte at a time."""
    start = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
            s.sendall(b"POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"X-GitHub-Event: ping\r\nX-GitHub-Delivery: slow\r\nX-Hub-Signature-256: sha256=00\r\n"
                      b"Content-Length: %d\r\n\r\n" % total)
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
            s.settimeout(30)
            answer = s.recv(4096)
            results.append((answer.split(b"\r\n", 1)[0], time.monotonic() - start))
    except OSError as exc:
        results.append((repr(exc).encode(), time.monotonic() - start))


def _deliver_timed(sim, url, delivery) -> tuple[int, float]:
    t0 = time.monotonic()
    status = sim.deliver(url, delivery).status_code
    return status, time.monotonic() - t0


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
               CI_REGISTRAR_BODY_TIMEOUT_S="2", CI_REGISTRAR_SHUTDOWN_GRACE_S="2", CI_REGISTRAR_HTTP_TIMEOUT_S="120")
    log = open(tmp_path / "serve.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "serve", "--threads", "2"], cwd=ROOT, env=env,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        assert wait_for(_up(base)), (tmp_path / "serve.log").read_text()
        # 9. private files: the directory 0700, the databases 0600
        assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
        for name in ("ci-registrar.db", "queue.db"):
            assert stat.S_IMODE((data_dir / name).stat().st_mode) == 0o600, name

        # 8 slow clients, each trickling a byte every second: answered 408 at the body deadline,
        # while a real delivery goes through at once.
        results: list = []
        slow = [threading.Thread(target=_trickle, args=(port, results, 1.0)) for _ in range(8)]
        for t in slow:
            t.start()
        time.sleep(0.5)
        hang = sim.inject_fault("GET", r"/git/trees/", "slow", times=1, delay=120)
        status, took = _deliver_timed(sim, base + "/webhook",
                                      sim.webhook("pull_request", "opened", app=gh_app, repo=repo, pull=pr, sender="bob"))
        assert status == 202 and took < 2, took
        for t in slow:
            t.join(30)
        assert len(results) == 8 and all(r[0].startswith(b"HTTP/1.1 408") for r in results), results
        assert max(r[1] for r in results) < 6, results

        # A job stuck on GitHub (the tree listing hangs for two minutes) does not keep the process
        # alive after SIGTERM: the grace period (2 s here), then exit.
        assert wait_for(lambda: hang.hits == 1), (tmp_path / "serve.log").read_text()
        t0 = time.monotonic()
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(20) == 0
        assert time.monotonic() - t0 < 15
        [run] = sim.check_runs(repo, sha=pr.head_sha, name=CHECK_NAME)
        assert run["status"] == "in_progress"  # the job comes back on the next start (lease)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
        log.close()


@pytest.fixture()
def workers(tmp_path):
    w = Workers(tmp_path)
    yield w
    w.stop_all()


def test_gunicorn_keeps_answering_github_in_time_while_slow_clients_trickle(github_sim, tmp_path, workers):
    world = build_world(github_sim, tmp_path)
    port = free_port()
    env = worker_env(world, CI_REGISTRAR_BODY_TIMEOUT_S=3)
    web = workers.start_web(env, port, workers=2)
    base = f"http://127.0.0.1:{port}"
    assert wait_for(_up(base)), open(web.log_path).read()
    results: list = []
    slow = [threading.Thread(target=_trickle, args=(port, results, 1.0)) for _ in range(8)]
    for t in slow:
        t.start()
    time.sleep(1.0)
    timings = []
    for _ in range(5):
        d = github_sim.webhook("pull_request", "opened", app=world.app, repo=world.repo, pull=world.pr, sender="bob")
        timings.append(_deliver_timed(github_sim, base + "/webhook", d))
    for t in slow:
        t.join(30)
    assert all(status == 202 for status, _ in timings), timings
    assert max(took for _, took in timings) < 10, timings  # GitHub's limit
    assert len(results) == 8 and all(r[0].startswith(b"HTTP/1.1 408") for r in results), results
    assert world.queue.depth() == 5
