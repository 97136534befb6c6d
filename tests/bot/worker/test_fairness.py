"""One installation's jobs never hold every worker thread: another installation's PR goes first."""

from __future__ import annotations

import pytest

from bot.worker.fairness import Shares, share_for
from bot.worker.handlers.pull_requests import CHECK_NAME
from bot.store import service as store
from tests.simulator.fixtures import github_sim  # noqa: F401
from tests.service_support import build_world


def test_a_busy_installation_steps_back_and_another_goes_first(github_sim, tmp_path, monkeypatch):
    monkeypatch.setenv("CI_REGISTRAR_JOB_BACKOFF_S", "0.01")
    world = build_world(github_sim, tmp_path)
    sim = world.sim
    other = sim.create_repo("acme/tools")
    other.commit({"README.md": "x\n"}, branch="main")
    sim.install(world.app, "acme/tools")
    other.commit({"tests/e2e/test_t.py": "x = 1\n"}, branch="feature")
    other_pr = sim.open_pull_request(other, "feature", "main", author="eve")
    runtime = world.queue.runtime
    runtime.shares.limit = 1
    busy = world.installation.id
    with runtime.shares.slot(busy) as held:  # radixark's share is taken by a long job
        assert held
        mine = sim.webhook("pull_request", "opened", app=world.app, repo=world.repo, pull=world.pr, sender="bob")
        world.deliver(mine)
        world.deliver(sim.webhook("pull_request", "opened", app=world.app, repo=other, pull=other_pr, sender="eve"))
        world.drain(until=lambda: [r for r in sim.check_runs(other, sha=other_pr.head_sha, name=CHECK_NAME)
                                   if r["status"] == "completed"])
        [done] = sim.check_runs(other, sha=other_pr.head_sha, name=CHECK_NAME)
        assert done["status"] == "completed"
        assert sim.check_runs(world.repo, sha=world.pr.head_sha, name=CHECK_NAME) == []
        assert mine.delivery_id not in {d.delivery_id for d in store.recent_deliveries(world.settings.database_url)}
    world.drain()  # the share is free again: radixark's check runs, with its attempts untouched
    [run] = sim.check_runs(world.repo, sha=world.pr.head_sha, name=CHECK_NAME)
    assert run["status"] == "completed"
    row = {d.delivery_id: d for d in store.recent_deliveries(world.settings.database_url)}[mine.delivery_id]
    assert row.status == "done" and row.attempts == 1


def test_shares(monkeypatch):
    shares = Shares(limit=2)
    with shares.slot(7) as a, shares.slot(7) as b, shares.slot(7) as c, shares.slot(8) as d:
        assert (a, b, c, d) == (True, True, False, True)
        assert shares.running(7) == 2
    assert shares.running(7) == 0
    assert share_for(4) == 3 and share_for(1) == 1
    monkeypatch.setenv("CI_REGISTRAR_INSTALLATION_JOBS", "2")
    assert share_for(8) == 2
    monkeypatch.setenv("CI_REGISTRAR_INSTALLATION_JOBS", "0")
    with pytest.raises(ValueError):
        share_for(4)
