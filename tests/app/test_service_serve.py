"""`ci-registrar serve`: one process, nothing else running, from an empty data directory to a check run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import requests

from bot.worker.handlers.pull_requests import CHECK_NAME
from tests.service_support import ROOT, env_for, free_port, wait_for
from tests.simulator.fixtures import github_sim  # noqa: F401
from tests import processes
from tests.adversarial_support import up
from tests.patience import PATIENCE


def test_serve_alone_takes_a_webhook_to_a_check_run(github_sim, tmp_path):
    sim = github_sim
    gh_app = sim.create_app()
    repo = sim.create_repo("radixark/miles")
    repo.commit({"README.md": "x\n"}, branch="main")
    sim.install(gh_app, "radixark/miles")
    repo.commit({"tests/e2e/test_a.py": "x = 1\n"}, branch="feature")
    pr = sim.open_pull_request(repo, "feature", "main", author="bob")

    data_dir = tmp_path / "fresh" / "data"  # does not exist yet
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "CI_REGISTRAR_", "REDIS_", "DATABASE_"))}
    env.update(env_for(sim, gh_app, data_dir), PORT=str(port), HOST="127.0.0.1", PYTHONPATH=str(ROOT))
    log = open(tmp_path / "serve.log", "wb")
    proc = processes.start([sys.executable, "-m", "bot.cli", "serve", "--threads", "2"], cwd=ROOT, env=env,
                           stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        assert wait_for(lambda: proc.poll() is not None or up(base)) and proc.poll() is None, (tmp_path / "serve.log").read_text()
        assert (data_dir / "queue.db").exists() and (data_dir / "ci-registrar.db").exists()
        assert requests.get(base + "/readyz", timeout=PATIENCE).status_code == 200

        d = sim.webhook("pull_request", "opened", app=gh_app, repo=repo, pull=pr, sender="bob")
        assert sim.deliver(base + "/webhook", d).status_code == 202
        done = wait_for(lambda: [r for r in sim.check_runs(repo, sha=pr.head_sha, name=CHECK_NAME)
                                 if r["status"] == "completed"])
        assert done, (tmp_path / "serve.log").read_text()
        metrics = wait_for(lambda: (m := requests.get(base + "/metrics", timeout=PATIENCE).text)
                           and 'event="pull_request",outcome="done"' in m and m)
        assert metrics and 'outcome="accepted"' in metrics and "ci_registrar_job_duration_seconds_bucket" in metrics

        processes.signal_group(proc, signal.SIGTERM)
        assert proc.wait(PATIENCE) == 0
        lines = (tmp_path / "serve.log").read_text()
        assert d.delivery_id in lines and gh_app.private_key_pem.splitlines()[1] not in lines
    finally:
        processes.stop(proc)
        log.close()
