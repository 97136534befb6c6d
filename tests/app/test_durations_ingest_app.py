"""workflow_run completed -> jobs -> logs -> measurements, against the simulator."""

from __future__ import annotations

import uuid

import sqlalchemy as sa

from bot.worker.queue import QueueConfig, open_queue
from bot.infra.settings import load_settings
from bot.store.db import get_engine, upgrade
from tests.fixtures.miles import miles_tree
from tests.simulator.fixtures import github_sim  # noqa: F401
from tests.service_support import World, env_for

PPO = "tests/e2e/megatron/test_qwen3_4B_ppo.py"
FSDP = "tests/e2e/fsdp/test_qwen3_0.6B_fsdp_distributed.py"

LOG = (
    "2026-11-28T04:00:00.0000000Z ##[group]Run python3 tests/ci/run_suite.py --hw rocm --suite nightly-stage-c-8-gpu-mi350\n"
    f"2026-11-28T04:13:32.1234567Z [1/2] {PPO}  PASS  elapsed=812s\n"
    f"2026-11-28T04:50:00.0000000Z [2/2] {FSDP}  FAIL  elapsed=2190s exit=1\n"
    f"2026-11-28T05:27:00.0000000Z [2/2] {FSDP}  PASS  elapsed=2210s retry_of=attempt=1\n"
    "2026-11-28T05:27:01.0000000Z ##[endgroup]\n"
)


def _world(sim, tmp_path, config: str) -> World:
    gh_app = sim.create_app()
    repo = sim.create_repo("radixark/miles")
    repo.commit({**miles_tree(), ".github/ci-registrar.yml": config}, branch="main")
    inst = sim.install(gh_app, "radixark/miles")
    settings = load_settings(env_for(sim, gh_app, tmp_path))
    upgrade(settings.database_url)
    queue = open_queue(settings, config=QueueConfig(f"t-{uuid.uuid4().hex[:8]}", None, str(tmp_path / "queue.db"), 30))
    from app import create_app

    return World(sim, gh_app, repo, inst, settings, queue, create_app(settings, queue=queue), None)


def _measurements(url):
    with get_engine(url).connect() as conn:
        return conn.execute(sa.text("SELECT file, outcome, elapsed_s, attempt, hardware, repository FROM measurements ORDER BY file, attempt")).all()


def _completed_run(world, workflow="pr-test-rocm.yml"):
    run = world.sim.add_workflow_run(
        world.repo, workflow, head_sha=world.repo.head("main"), event="schedule", status="completed", conclusion="success",
        jobs=[{"name": "nightly (8-gpu)", "labels": ["self-hosted", "linux-mi35x-gpu-8"], "conclusion": "success", "log": LOG}],
    )
    return world.sim.webhook("workflow_run", "completed", app=world.app, repo=world.repo, run=run["id"])


def test_a_configured_workflow_run_is_ingested_once(github_sim, tmp_path):
    world = _world(github_sim, tmp_path, "duration_sources:\n  - workflow: pr-test-rocm.yml\n")
    delivery = _completed_run(world)
    assert world.deliver(delivery).status_code == 202
    world.drain()
    rows = _measurements(world.settings.database_url)
    assert [(r.file, r.outcome, r.elapsed_s, r.attempt) for r in rows] == [
        (FSDP, "FAIL", 2190, 1), (FSDP, "PASS", 2210, 2), (PPO, "PASS", 812, 1)]
    assert {r.hardware for r in rows} == {"MI355X"} and {r.repository for r in rows} == {"radixark/miles"}
    # the same run delivered again (a new delivery of the same event) adds nothing
    world.deliver(github_sim.webhook("workflow_run", "completed", app=world.app, repo=world.repo, run=delivery.payload["workflow_run"]["id"]))
    world.drain()
    assert len(_measurements(world.settings.database_url)) == 3


def test_a_workflow_that_is_not_a_duration_source_is_ignored(github_sim, tmp_path):
    world = _world(github_sim, tmp_path, "duration_sources:\n  - workflow: pr-test-rocm.yml\n")
    world.deliver(_completed_run(world, workflow="lint.yml"))
    world.drain()
    assert _measurements(world.settings.database_url) == []
    assert not [r for r in github_sim.requests_log if r["path"].endswith("/logs")]


def test_an_invalid_configuration_ingests_nothing(github_sim, tmp_path):
    world = _world(github_sim, tmp_path, "duration_sources: yes-please\n")
    world.deliver(_completed_run(world))
    world.drain()
    assert _measurements(world.settings.database_url) == []


def _provenance(url):
    with get_engine(url).connect() as conn:
        return set(conn.execute(sa.text("SELECT event, head_branch, head_repository FROM measurements")).all())


def test_a_run_keeps_its_event_head_branch_and_head_repository(github_sim, tmp_path):
    """Calibration counts the default branch's runs only: every stored row says whose code it ran."""
    world = _world(github_sim, tmp_path, "duration_sources:\n  - workflow: pr-test-rocm.yml\n")
    world.repo.commit({"x.txt": "slow path"}, branch="feature/slow-path")
    run = world.sim.add_workflow_run(
        world.repo, "pr-test-rocm.yml", event="push", head_branch="feature/slow-path", status="completed",
        conclusion="success",
        jobs=[{"name": "nightly (8-gpu)", "labels": ["self-hosted", "linux-mi35x-gpu-8"], "conclusion": "success", "log": LOG}])
    world.deliver(world.sim.webhook("workflow_run", "completed", app=world.app, repo=world.repo, run=run["id"]))
    world.drain()
    assert _provenance(world.settings.database_url) == {("push", "feature/slow-path", "radixark/miles")}


def test_an_infinite_elapsed_time_in_a_log_is_refused_not_stored(github_sim, tmp_path):
    world = _world(github_sim, tmp_path, "duration_sources:\n  - workflow: pr-test-rocm.yml\n")
    log = LOG.replace("elapsed=812s", "elapsed=" + "9" * 301 + "s")
    run = world.sim.add_workflow_run(
        world.repo, "pr-test-rocm.yml", event="workflow_dispatch", status="completed", conclusion="success",
        jobs=[{"name": "nightly (8-gpu)", "labels": ["self-hosted", "linux-mi35x-gpu-8"], "conclusion": "success", "log": log}])
    world.deliver(world.sim.webhook("workflow_run", "completed", app=world.app, repo=world.repo, run=run["id"]))
    world.drain()
    rows = _measurements(world.settings.database_url)
    assert [(r.file, r.elapsed_s) for r in rows] == [(FSDP, 2190), (FSDP, 2210)]  # PPO's line refused, the rest kept
