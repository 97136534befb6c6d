"""The intake and /readyz answer GitHub quickly while the queue (Redis) stalls: 503 within the
intake's own deadline (CI_REGISTRAR_INTAKE_TIMEOUT_S), so GitHub's redelivery applies, never after
the workers' longer Redis deadline (CI_REGISTRAR_REDIS_TIMEOUT_S, one retry).

The stall is real: the App's Redis is reached through tests/tcp_proxy.py, which holds every byte.
The workers' deadline is set to 10 s here, the intake's to 0.5 s: an answer that waited for the
workers' deadline would take 10 s or more, one on the intake's takes about 0.5 s. The bound asserted
(BOUND_S) lies far from both, so the machine's speed cannot decide the outcome.
"""

from __future__ import annotations

import time
from urllib.parse import urlsplit

import pytest

from tests.conftest import REDIS_TEST_URL
from tests.simulator.fixtures import github_sim  # noqa: F401

INTAKE_S = 0.5
WORKER_S = 10.0
BOUND_S = 5.0  # 10 x the intake's deadline, half the workers'


@pytest.fixture()
def stalled_world(github_sim, tmp_path, redis_prefix, monkeypatch):
    from tests.tcp_proxy import TcpProxy
    from tests.service_support import build_world

    monkeypatch.setenv("CI_REGISTRAR_INTAKE_TIMEOUT_S", str(INTAKE_S))
    monkeypatch.setenv("CI_REGISTRAR_REDIS_TIMEOUT_S", str(WORKER_S))
    target = urlsplit(REDIS_TEST_URL)
    proxy = TcpProxy(target.hostname or "127.0.0.1", target.port or 6379)
    world = build_world(github_sim, tmp_path, redis_url=proxy.url("redis", target.path or "/0"), queue_name=redis_prefix)
    try:
        yield world, proxy
    finally:
        proxy.close()


def _timed(call):
    started = time.monotonic()
    response = call()
    return response, time.monotonic() - started


def test_a_delivery_is_refused_503_within_the_intake_deadline_while_redis_stalls(stalled_world):
    world, proxy = stalled_world
    sim = world.sim
    before = sim.webhook("pull_request", "opened", app=world.app, repo=world.repo, pull=world.pr, sender="bob")
    assert world.deliver(before).status_code == 202  # the path works, the pool holds a connection
    proxy.stall()
    stalled = [sim.webhook("pull_request", "synchronize", app=world.app, repo=world.repo, pull=world.pr, sender="bob")
               for _ in range(3)]
    for d in stalled:
        response, took = _timed(lambda: world.deliver(d))
        assert response.status_code == 503 and "queue unavailable" in response.json["error"], response.data
        assert took < BOUND_S, took
    proxy.restore()
    # GitHub's redelivery of a refused one, once Redis answers: accepted (or a duplicate, when the
    # write held in the stalled connection reached Redis after all).
    assert world.deliver(stalled[0]).status_code in (200, 202)


def test_readyz_is_503_within_the_intake_deadline_while_redis_stalls_and_200_after(stalled_world):
    world, proxy = stalled_world
    client = world.client
    assert client.get("/readyz").status_code == 200
    proxy.stall()
    for _ in range(2):
        response, took = _timed(lambda: client.get("/readyz"))
        assert response.status_code == 503 and "queue" in response.json["missing"], response.json
        assert took < BOUND_S, took
    proxy.restore()
    assert client.get("/readyz").status_code == 200


def test_a_refused_payload_is_answered_400_in_time_while_redis_stalls(stalled_world):
    """A signed delivery whose payload is refused has its record queued best effort: that write
    is under the intake's deadline too, and the 400 does not wait for the workers' one."""
    import json

    from tests.bot.web.test_webhooks import headers

    world, proxy = stalled_world
    body = json.dumps({"action": "opened", "pull_request": "not an object", "repository": {}}).encode()
    proxy.stall()
    secret = world.settings.webhook_secret
    import hashlib
    import hmac

    signed = headers(body, event="pull_request")
    signed["X-Hub-Signature-256"] = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    response, took = _timed(lambda: world.client.post("/webhook", data=body, headers=signed))
    assert response.status_code == 400, response.data
    assert took < BOUND_S, took
