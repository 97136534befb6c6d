"""Kill -9 of a worker in the middle of a job: the job completes after a restart, its effect happens once."""

from __future__ import annotations

import pytest

from bot.worker.handlers.pull_requests import CHECK_NAME
from bot.store import service as store
from tests import processes
from tests.patience import PATIENCE
from tests.service_support import Workers, build_world, wait_for, worker_env
from tests.simulator.fixtures import github_sim  # noqa: F401


@pytest.fixture()
def workers(tmp_path):
    w = Workers(tmp_path)
    yield w
    w.stop_all()


def test_a_killed_workers_job_is_finished_by_the_next_worker_exactly_once(github_sim, tmp_path, workers):
    sim = github_sim
    world = build_world(sim, tmp_path)
    env = worker_env(world, CI_REGISTRAR_JOB_LEASE_S=2, CI_REGISTRAR_HTTP_TIMEOUT_S=60)
    # The job hangs half-way: its check run is created, then the tree listing takes forever.
    hang = sim.inject_fault("GET", r"/git/trees/", "slow", times=1, delay=8 * PATIENCE)
    d = sim.webhook("pull_request", "opened", app=world.app, repo=world.repo, pull=world.pr, sender="bob")
    assert world.deliver(d).status_code == 202

    first = workers.start(env)
    assert wait_for(lambda: hang.hits == 1), open(first.log_path).read()
    [run] = sim.check_runs(world.repo, sha=world.pr.head_sha, name=CHECK_NAME)
    assert run["status"] == "in_progress"
    workers.kill9(first)
    assert world.queue.inflight() == 1  # the message is not lost with its worker

    second = workers.start(env)

    def finished():
        rows = [r for r in store.recent_deliveries(world.settings.database_url) if r.delivery_id == d.delivery_id]
        return rows and rows[0].status == "done" and rows[0]

    row = wait_for(finished)
    assert row, open(second.log_path).read()
    assert row.attempts == 2
    [run] = sim.check_runs(world.repo, sha=world.pr.head_sha, name=CHECK_NAME)
    assert run["status"] == "completed"
    assert run["patches"] == 1  # completed once
    # The worker logs "delivery processed" just after recording it as done: wait for the line, then check it is one.
    wait_for(lambda: Workers.processed(second))
    assert Workers.processed(second) == [d.delivery_id]
    assert wait_for(lambda: world.queue.inflight() == 0 and world.queue.depth() == 0)


def test_a_job_that_gets_its_worker_killed_three_times_is_a_dead_letter(github_sim, tmp_path, workers):
    """The OOM killer under a restart policy: each worker dies mid-job, the next one takes the job
    over; after three deaths the job is set aside and its check run completed with the reason."""
    sim = github_sim
    world = build_world(sim, tmp_path)
    env = worker_env(world, CI_REGISTRAR_JOB_LEASE_S=2, CI_REGISTRAR_HTTP_TIMEOUT_S=60)
    hang = sim.inject_fault("GET", r"/git/trees/", "slow", times=3, delay=8 * PATIENCE)
    d = sim.webhook("pull_request", "opened", app=world.app, repo=world.repo, pull=world.pr, sender="bob")
    assert world.deliver(d).status_code == 202
    for death in range(1, 4):
        proc = workers.start(env)
        assert wait_for(lambda: hang.hits == death), open(proc.log_path).read()
        workers.kill9(proc)
    last = workers.start(env)

    def dead():
        rows = [r for r in store.recent_deliveries(world.settings.database_url) if r.delivery_id == d.delivery_id]
        return rows and rows[0].status == "dead" and rows[0]

    row = wait_for(dead)
    assert row, open(last.log_path).read()
    assert row.attempts == 4 and "died 3 times" in row.outcome
    run = wait_for(lambda: [r for r in sim.check_runs(world.repo, sha=world.pr.head_sha, name=CHECK_NAME)
                            if r["status"] == "completed"])
    assert run, open(last.log_path).read()
    [run] = run
    assert run["conclusion"] == "failure" and run["output"]["title"] == "Check stopped: its job kept crashing"
    assert hang.hits == 3  # the fourth start did not run it again
    assert wait_for(lambda: world.queue.inflight() == 0 and world.queue.depth() == 0)


def test_sigterm_during_a_stuck_job_stops_the_worker_within_its_grace_period(github_sim, tmp_path, workers):
    import signal

    sim = github_sim
    world = build_world(sim, tmp_path)
    env = worker_env(world, CI_REGISTRAR_JOB_LEASE_S=2, CI_REGISTRAR_HTTP_TIMEOUT_S=8 * PATIENCE,
                     CI_REGISTRAR_SHUTDOWN_GRACE_S=2)
    # The tree listing hangs far longer than this test waits for anything: a worker that waited for
    # its job instead of its grace period would not exit within the patience below.
    hang = sim.inject_fault("GET", r"/git/trees/", "slow", times=1, delay=8 * PATIENCE)
    d = sim.webhook("pull_request", "opened", app=world.app, repo=world.repo, pull=world.pr, sender="bob")
    assert world.deliver(d).status_code == 202
    proc = workers.start(env)
    assert wait_for(lambda: hang.hits == 1), open(proc.log_path).read()
    processes.signal_group(proc, signal.SIGTERM)
    assert proc.wait(PATIENCE) == 0, open(proc.log_path).read()
    assert not hang.released.is_set()
    # The job cut off comes back on the next start and completes, once.
    second = workers.start(env)

    def finished():
        rows = [r for r in store.recent_deliveries(world.settings.database_url) if r.delivery_id == d.delivery_id]
        return rows and rows[0].status == "done" and rows[0]

    row = wait_for(finished)
    assert row, open(second.log_path).read()
    [run] = sim.check_runs(world.repo, sha=world.pr.head_sha, name=CHECK_NAME)
    assert run["status"] == "completed" and run["patches"] == 1
