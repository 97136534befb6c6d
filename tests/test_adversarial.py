"""No pull request can stop the App: `ci-registrar serve` as a real process on the simulator,
an attacker's installation sending every input built to stop it, and an ordinary pull request
that must still be checked within seconds.

Each case asserts four things: the ordinary PR's check completes within ORDINARY_S; the attacker's
check runs end completed, with the reason; no delivery is lost or processed twice; the serving
process's peak memory stays under PEAK_MB (each analysis child has its own 1 GiB cap).
"""

from __future__ import annotations

import pytest

from tests.adversarial_support import ALL_ATTACKS, Arena
from tests.simulator.fixtures import github_sim  # noqa: F401

ORDINARY_S = 10.0  # generous for a loaded 2-core CI machine; bench/adversarial.py measures against 5 s
PEAK_MB = 1024.0
# Inputs that once cost the engine without bound and are now read in linear time under every cap:
# their check is an ordinary verdict, with no limit to report.
CHEAP_NOW = {"flat_alias_workflow", "starred_references"}


@pytest.fixture(scope="module")
def arena(tmp_path_factory):
    from tests.simulator import GitHubSimulator

    sim = GitHubSimulator().start()
    arena = Arena(sim, tmp_path_factory.mktemp("adversarial"))
    yield arena
    arena.close()
    sim.stop()
    assert sim.violations == []


@pytest.mark.parametrize("attack", ALL_ATTACKS)
def test_an_attack_does_not_stop_an_ordinary_check(arena, attack):
    outcome = arena.run(attack)
    assert outcome.ordinary_s is not None and outcome.ordinary_s < ORDINARY_S, outcome
    assert outcome.peak_rss_mb < PEAK_MB, outcome
    assert all(state in ("done", "invalid") for state in outcome.deliveries.values()), outcome.deliveries
    if attack == "poison":
        assert list(outcome.deliveries.values())[0] == "invalid"
        return
    # One run per attacking PR (nothing processed twice), each completed, each saying why.
    assert len(outcome.attack_runs) == 3 and all(r["status"] == "completed" for r in outcome.attack_runs)
    for run in outcome.attack_runs:
        said = run["output"].get("title", "") + run["output"].get("summary", "") + \
            " ".join(a["message"] for a in run["annotations"])
        if attack in CHEAP_NOW:
            assert run["output"].get("title"), run  # read in linear time: an ordinary verdict
        else:
            assert any(word in said for word in ("REG902", "limit", "REG900")), (attack, run["output"])


def test_an_outage_longer_than_the_retry_budget_leaves_no_check_in_progress(github_sim, tmp_path):
    """GitHub answers 502 to every check-run update until well after the job gave up; once it is
    back, the check run is completed (by the job's failure report or the reconciler), none stays
    in progress. Retry budgets are shortened here; docs/failure-modes.md gives the defaults."""
    from tests.test_service_support import wait_for

    arena = Arena(github_sim, tmp_path, CI_REGISTRAR_HTTP_ATTEMPTS=2, CI_REGISTRAR_HTTP_BACKOFF_S=0.05,
                  CI_REGISTRAR_JOB_ATTEMPTS=2, CI_REGISTRAR_JOB_BACKOFF_S=0.2, CI_REGISTRAR_STALE_CHECK_S=5,
                  CI_REGISTRAR_RECONCILE_EVERY_S=2)
    try:
        fault = github_sim.inject_fault("PATCH", r"/check-runs/\d+$", "502", times=None)
        pr = arena.ordinary_pr()
        d = arena.opened(arena.miles, pr)
        arena.service.deliver(github_sim, d)
        assert wait_for(lambda: arena.service.deliveries().get(d.delivery_id) == "failed", timeout=60)
        runs = github_sim.check_runs(arena.miles, sha=pr.head_sha)
        assert runs and all(r["status"] == "in_progress" for r in runs) and fault.hits >= 2
        github_sim.clear_faults()  # GitHub is back
        assert wait_for(lambda: all(r["status"] == "completed" for r in github_sim.check_runs(arena.miles)), timeout=60)
        assert arena.service.peak_rss_mb() < PEAK_MB
    finally:
        arena.close()


# -- the queue cut away: a Redis outage under `serve`, through a TCP proxy ------------------------
@pytest.mark.parametrize("kind,outage_s", [("drop", 8.0), ("stall", 6.0)])
def test_serve_outlives_a_redis_outage_and_readyz_tells_the_truth(tmp_path, redis_prefix, kind, outage_s):
    """Redis is cut (connections reset, or held open carrying nothing) for some seconds while
    `serve` runs its two worker threads. Every delivery accepted before, during or after is
    processed exactly once; deliveries sent during the outage are refused (503), not accepted to
    vanish, and run when redelivered; /readyz answers 503 while the queue is cut and 200 once it is
    back. bench/adversarial.py runs the same for 30 s."""
    from tests.conftest import REDIS_TEST_URL
    from tests.outage_support import RedisOutage
    from tests.simulator import GitHubSimulator

    sim = GitHubSimulator().start()
    # A claim sent into the stall can reach Redis late, after its worker gave up waiting: that
    # message waits out its lease, then is re-queued and found done. A short lease keeps it brief.
    rig = RedisOutage(sim, tmp_path, REDIS_TEST_URL, redis_prefix, threads=2, CI_REGISTRAR_JOB_LEASE_S=5)
    try:
        out = rig.run(kind, outage_s)
    finally:
        rig.close()
        sim.stop()
    assert out.drained_s is not None, (out.states, rig.service.log_path.read_text()[-3000:])
    assert len(out.accepted) >= 6 and all(state == "done" for state in out.states.values()), out.states
    assert all(n == 1 for n in out.processed.values()), out.processed  # once each, none twice
    assert all(n == 1 for n in out.runs_per_head.values()), out.runs_per_head
    assert out.refused and all(status == 503 for status in out.refused.values()), out.refused
    # Redelivered afterwards: accepted then, or "duplicate" when the refused write reached Redis
    # late (a stalled connection delivers what it held); processed once either way (above).
    assert all(out.redelivered[i] in (200, 202) for i in out.refused), out.redelivered
    if kind == "drop":  # a reset connection delivers nothing late
        assert all(out.redelivered[i] == 202 for i in out.refused), out.redelivered
    assert out.left_in_queue == 0
    assert any(code == 503 for a, b, code, _ in out.readyz if a == b != "up"), out.readyz
    assert out.lies() == [], out.readyz
    assert out.ready_again_s is not None and out.ready_again_s < 10, out.ready_again_s


def test_readyz_is_503_while_no_worker_thread_is_alive(tmp_path):
    """`serve` registers its consumer: with none of its worker threads alive, not ready."""
    from app import create_app
    from bot.queue import open_queue
    from bot.settings import load_settings

    settings = load_settings({"CI_REGISTRAR_DATA_DIR": str(tmp_path), "GITHUB_WEBHOOK_SECRET": "s",
                              "GITHUB_APP_ID": "1", "GITHUB_PRIVATE_KEY": "k"})
    from bot.store.db import upgrade

    upgrade(settings.database_url)
    queue = open_queue(settings)
    app = create_app(settings, queue=queue)
    client = app.test_client()
    assert client.get("/readyz").status_code == 200  # no consumer in this process: the web part only
    consumer = queue.create_consumer(workers=2, worker_type="thread")
    app.extensions["ci_registrar.consumer"] = consumer  # as `serve` does; its threads not started
    ready = client.get("/readyz")
    assert ready.status_code == 503 and "workers" in ready.json["missing"], ready.json
    consumer.start()
    try:
        assert consumer.workers_alive() == 2 and client.get("/readyz").status_code == 200
    finally:
        consumer.stop(graceful=True)
