"""Scale-out on the real Redis and PostgreSQL: web and worker processes share 200 deliveries, each processed once."""

from __future__ import annotations

import collections

import pytest
import requests
from sqlalchemy import select

from bot.worker.handlers.pull_requests import CHECK_NAME
from bot.store.db import session_scope
from bot.store.service import Delivery
from tests.conftest import REDIS_TEST_URL
from tests.service_support import Workers, build_world, free_port, wait_for, worker_env
from tests.simulator.fixtures import github_sim  # noqa: F401
from tests.patience import PATIENCE

DELIVERIES = 200
PULL_REQUESTS = 10  # of the 200: full checks (GitHub calls, a check run each); the rest record installations


@pytest.fixture()
def workers(tmp_path):
    w = Workers(tmp_path)
    yield w
    w.stop_all()


def test_two_workers_process_200_deliveries_each_exactly_once(github_sim, tmp_path, pg_url, redis_prefix, workers):
    sim = github_sim
    world = build_world(sim, tmp_path, database_url=pg_url, redis_url=REDIS_TEST_URL, queue_name=redis_prefix)
    assert world.settings.database_url.startswith("postgresql")
    prs = [world.pr]
    for i in range(1, PULL_REQUESTS):
        world.repo.commit({f"tests/e2e/test_{i}.py": f"x = {i}\n"}, branch=f"feature-{i}")
        prs.append(sim.open_pull_request(world.repo, f"feature-{i}", "main", author="bob"))
    deliveries = [sim.webhook("pull_request", "opened", app=world.app, repo=world.repo, pull=pr, sender="bob")
                  for pr in prs]
    deliveries += [sim.webhook("installation_repositories", "added", app=world.app, installation=world.installation,
                               added=["radixark/miles"]) for _ in range(DELIVERIES - PULL_REQUESTS)]
    ids = {d.delivery_id for d in deliveries}
    assert len(ids) == DELIVERIES

    env = worker_env(world)
    port = free_port()
    web = workers.start_web(env, port)
    procs = [workers.start(env, threads=3), workers.start(env, threads=3)]
    url = f"http://127.0.0.1:{port}/webhook"

    def web_up():
        try:
            return requests.get(f"http://127.0.0.1:{port}/healthz", timeout=PATIENCE).ok
        except requests.RequestException:
            return False

    assert wait_for(web_up), open(web.log_path).read()
    # Half through gunicorn (two web workers), half through an in-process app: all on one Redis queue.
    for i, d in enumerate(deliveries):
        status = sim.deliver(url, d).status_code if i % 2 else world.deliver(d).status_code
        assert status == 202
    # GitHub's redelivery of a few of them changes nothing.
    for d in deliveries[:5]:
        assert sim.deliver(url, d).status_code == 200

    def rows():
        with session_scope(pg_url) as s:
            return {r.delivery_id: (r.status, r.attempts) for r in s.scalars(select(Delivery).where(Delivery.delivery_id.in_(ids)))}

    done = wait_for(lambda: (r := rows()) and sum(1 for st, _ in r.values() if st == "done") == DELIVERIES and r, interval=0.5)
    assert done, f"{collections.Counter(st for st, _ in rows().values())}; log: " + open(procs[0].log_path).read()[-2000:]
    assert all(attempts == 1 for _, attempts in done.values())

    processed = [Workers.processed(p) for p in procs]
    assert sorted(processed[0] + processed[1]) == sorted(ids)  # every delivery once, no delivery twice
    assert processed[0] and processed[1], "both workers took a share"
    for pr in prs:
        assert len(sim.check_runs(world.repo, sha=pr.head_sha, name=CHECK_NAME)) == 1
    assert world.queue.depth() == 0 and wait_for(lambda: world.queue.inflight() == 0)
