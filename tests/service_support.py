"""Support for the service tests (no tests here): a simulated GitHub, the App configured against it, a queue, worker processes."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

from bot.worker.queue import QueueConfig, open_queue
from bot.infra.settings import load_settings
from bot.store.db import upgrade

from tests import REPO

SUITES = '''CI_SUITES = {
    "cuda": ["stage-a-1-gpu-h200"],
    "rocm": ["stage-a-1-gpu-mi350"],
}
'''
TEST_FILE = '''from tests.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=120, suite="stage-a-1-gpu-h200", labels=["fast"])


def test_it():
    assert True
'''


@dataclass
class World:
    sim: object
    app: object  # the simulator's GitHub App
    repo: object
    installation: object
    settings: object
    queue: object
    flask: object
    pr: object

    @property
    def client(self):
        return self.flask.test_client()

    def deliver(self, delivery):
        return self.client.post("/webhook", data=delivery.body, headers=delivery.headers)

    def drain(self, max_jobs: int = 50, until=None) -> int:
        """Run queued jobs in this thread until none is queued or scheduled, or until `until()`
        holds (a retry scheduled far ahead can be left waiting that way); returns jobs run.

        Delayed retries run when they are due (a rate-limit wait is real time, as in production).
        Gives up after PATIENCE (tests/patience.py).
        """
        ran = 0
        deadline = time.monotonic() + PATIENCE
        while ran < max_jobs and time.monotonic() < deadline:
            if until is not None and until():
                return ran
            task = self.queue.dequeue()
            if task is None:
                for due in self.queue.read_schedule(_utcnow()):
                    self.queue.enqueue(due)
                if self.queue.depth():
                    continue
                if not self.queue.scheduled_count():
                    return ran
                time.sleep(0.05)
                continue
            self.queue.execute(task)
            ran += 1
        return ran


def _utcnow():
    import datetime as dt

    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


def env_for(sim, gh_app, data_dir, **extra) -> dict:
    env = {"CI_REGISTRAR_DATA_DIR": str(data_dir), "GITHUB_API_URL": sim.url, "GITHUB_APP_ID": str(gh_app.id),
           "GITHUB_PRIVATE_KEY": gh_app.private_key_pem, "GITHUB_WEBHOOK_SECRET": gh_app.webhook_secret}
    env.update(extra)
    return env


_MIGRATED_SQLITE: list = []  # this process's first migrated SQLite store, the template of the others


def migrated(url: str) -> None:
    """The store at `url` at the migrations' head. A new SQLite file is a copy (sqlite3's backup
    API) of the first store this process migrated: a few hundred worlds each ran every migration,
    a dozen fsynced commits and a tenth of a second of CPU apiece. The migrations still run on each
    process's first world, in tests/bot/store/test_durations_store.py and in every `serve` the tests start."""
    import sqlite3
    from contextlib import closing

    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    path = Path(parsed.database) if parsed.get_backend_name() == "sqlite" and parsed.database else None
    if path is None or path.exists() or not _MIGRATED_SQLITE:
        upgrade(url)
        if path is not None and not _MIGRATED_SQLITE:  # copied now, before the world writes to it
            import tempfile

            template = Path(tempfile.mkdtemp(prefix="cireg-migrated-")) / "store.db"
            with closing(sqlite3.connect(path)) as source, closing(sqlite3.connect(template)) as copy:
                source.backup(copy)
            _MIGRATED_SQLITE.append(template)
        return
    with closing(sqlite3.connect(_MIGRATED_SQLITE[0])) as source, closing(sqlite3.connect(path)) as copy:
        source.backup(copy)


def build_world(sim, tmp_path, *, database_url: str | None = None, redis_url: str | None = None,
                queue_name: str | None = None) -> World:
    from app import create_app

    gh_app = sim.create_app(name="CI Registrar", owner="radixark")
    repo = sim.create_repo("radixark/miles", default_branch="main")
    repo.commit({"tests/ci/run_suite.py": SUITES, "tests/ci/ci_register.py": "def register_cuda_ci(est_time, suite, labels=None, nightly=False, disabled=None):\n    pass\n",
                 "README.md": "miles\n"}, branch="main")
    inst = sim.install(gh_app, "radixark/miles")
    repo.commit({"tests/e2e/test_a.py": TEST_FILE}, branch="feature")
    pr = sim.open_pull_request(repo, "feature", "main", author="bob")
    extra = {}
    if database_url:
        extra["DATABASE_URL"] = database_url
    if redis_url:
        extra["REDIS_URL"] = redis_url
    settings = load_settings(env_for(sim, gh_app, tmp_path, **extra))
    migrated(settings.database_url)
    config = QueueConfig(queue_name or f"t-{uuid.uuid4().hex[:8]}", redis_url, str(tmp_path / "queue.db"), 30)
    queue = open_queue(settings, config=config)
    return World(sim, gh_app, repo, inst, settings, queue, create_app(settings, queue=queue), pr)


def free_port() -> int:
    """A TCP port on 127.0.0.1 nothing listens on now (for a server a test starts)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


from tests import processes  # noqa: E402
from tests.patience import PATIENCE, wait_for  # noqa: E402,F401 - the service tests' one way to wait


# -- worker processes -----------------------------------------------------------------------------
import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = REPO


def worker_env(world: "World", **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "CI_REGISTRAR_", "REDIS_", "DATABASE_"))}
    env.update(env_for(world.sim, world.app, world.settings.data_dir))
    env["DATABASE_URL"] = world.settings.database_url
    if world.settings.redis_url:
        env["REDIS_URL"] = world.settings.redis_url
    env["CI_REGISTRAR_QUEUE_NAME"] = world.queue.name
    env["PYTHONPATH"] = str(ROOT)
    env.update({k: str(v) for k, v in extra.items()})
    return env


class Workers:
    """`ci-registrar worker` subprocesses, each in its own process group; all killed at cleanup."""

    def __init__(self, tmp_path: Path):
        self.tmp_path = tmp_path
        self.procs: list[subprocess.Popen] = []

    def start(self, env: dict, threads: int = 2) -> subprocess.Popen:
        log = open(self.tmp_path / f"worker-{len(self.procs)}.log", "wb")
        proc = processes.start([sys.executable, "-m", "bot.cli", "worker", "--threads", str(threads)], cwd=ROOT,
                               env=env, stdout=log, stderr=subprocess.STDOUT)
        proc.log_path = log.name
        log.close()
        self.procs.append(proc)
        return proc

    def kill9(self, proc: subprocess.Popen) -> None:
        processes.signal_group(proc, signal.SIGKILL)
        proc.wait(PATIENCE)

    def stop_all(self) -> None:
        for proc in self.procs:
            processes.stop(proc, grace=5)

    def start_web(self, env: dict, port: int, workers: int = 2) -> subprocess.Popen:
        """The Procfile's web process: `ci-registrar serve --no-worker` (gunicorn, bot/web/server.py)."""
        env = {**env, "PORT": str(port), "HOST": "127.0.0.1", "WEB_CONCURRENCY": str(workers),
               "PROMETHEUS_MULTIPROC_DIR": str(self.tmp_path / "prometheus")}
        log = open(self.tmp_path / f"web-{len(self.procs)}.log", "wb")
        proc = processes.start([sys.executable, "-m", "bot.cli", "serve", "--no-worker"], cwd=ROOT, env=env,
                               stdout=log, stderr=subprocess.STDOUT)
        proc.log_path = log.name
        log.close()
        self.procs.append(proc)
        return proc

    @staticmethod
    def processed(proc) -> list[str]:
        """Delivery ids this worker logged as processed."""
        return processed_in_log(proc.log_path)


def processed_in_log(log_path) -> list[str]:
    """The delivery ids a service's JSON log says "delivery processed" for, once per line, in order
    (a delivery processed twice appears twice)."""
    import json

    out = []
    for line in Path(log_path).read_text(errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("event") == "delivery processed":
            out.append(record.get("delivery_id"))
    return out
