"""Durations ingestion keeps tenants apart: who may claim another repository's workflow durations."""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa

from bot.worker.queue import QueueConfig, open_queue
from bot.infra.settings import load_settings
from bot.store import service as store
from bot.store.db import get_engine, upgrade
from tests.fixtures.miles import miles_tree
from tests.simulator.fixtures import github_sim  # noqa: F401
from tests.app.test_durations_ingest_app import LOG
from tests.service_support import World, env_for

NIGHTLY = "nightly-mi350.yml"


def _world(sim, tmp_path, configs: dict[str, str | None]) -> World:
    """One App installed on each repository of `configs` (name -> its .github/ci-registrar.yml)."""
    from app import create_app

    gh_app = sim.create_app()
    repos = {}
    for name, config in configs.items():
        repo = sim.create_repo(name)
        files = {**miles_tree()}
        if config is not None:
            files[".github/ci-registrar.yml"] = config
        repo.commit(files, branch="main")
        repos[name] = repo
    owners: dict[str, list[str]] = {}
    for name in configs:
        owners.setdefault(name.split("/")[0], []).append(name)
    installations = [sim.install(gh_app, *names) for names in owners.values()]
    settings = load_settings(env_for(sim, gh_app, tmp_path))
    upgrade(settings.database_url)
    queue = open_queue(settings, config=QueueConfig(f"t-{uuid.uuid4().hex[:8]}", None, str(tmp_path / "queue.db"), 30))
    world = World(sim, gh_app, repos, installations, settings, queue, create_app(settings, queue=queue), None)
    for inst in installations:
        world.deliver(sim.webhook("installation", "created", app=gh_app, installation=inst))
    world.drain()
    return world


def _run(world, repo_name: str, workflow: str = NIGHTLY):
    repo = world.repo[repo_name]
    run = world.sim.add_workflow_run(
        repo, workflow, head_sha=repo.head("main"), event="schedule", status="completed", conclusion="success",
        jobs=[{"name": "nightly (8-gpu)", "labels": ["self-hosted", "linux-mi35x-gpu-8"], "conclusion": "success", "log": LOG}])
    d = world.sim.webhook("workflow_run", "completed", app=world.app, repo=repo, run=run["id"])
    assert world.deliver(d).status_code == 202
    world.drain()
    [row] = [r for r in store.recent_deliveries(world.settings.database_url) if r.delivery_id == d.delivery_id]
    return row


def _by_repository(world) -> dict[str, int]:
    with get_engine(world.settings.database_url).connect() as conn:
        return dict(conn.execute(sa.text("SELECT repository, count(*) FROM measurements GROUP BY repository")).all())


def _config_reads(world, repo_name: str) -> int:
    return len([r for r in world.sim.requests_log
                if r["path"] == f"/repos/{repo_name}/contents/.github/ci-registrar.yml"])


CLAIMS_MILES = f"duration_sources:\n  - workflow: {NIGHTLY}\n    repository: sgl-project/sglang\n"


def test_another_installed_repository_cannot_claim_a_repositorys_measurements(github_sim, tmp_path):
    world = _world(github_sim, tmp_path, {
        "radixark/miles": f"duration_sources:\n  - workflow: {NIGHTLY}\n",
        "mallory/evil": f"duration_sources:\n  - workflow: {NIGHTLY}\n    repository: radixark/miles\n",
    })
    row = _run(world, "radixark/miles")
    assert row.status == "done"
    assert _by_repository(world) == {"radixark/miles": 3}
    assert _config_reads(world, "mallory/evil") == 0  # not even read: it could not claim this workflow


def test_a_repository_that_names_its_claimant_back_shares_its_durations(github_sim, tmp_path):
    world = _world(github_sim, tmp_path, {
        "radixark/miles": CLAIMS_MILES,
        # sglang names miles back (a source of its own in miles: the two name each other)
        "sgl-project/sglang": "duration_sources:\n  - workflow: pr-test-rocm.yml\n  - workflow: pr-test-rocm.yml\n"
                              "    repository: radixark/miles\n",
    })
    _run(world, "sgl-project/sglang")
    assert _by_repository(world) == {"radixark/miles": 3}


def test_a_claim_the_source_does_not_name_back_is_refused_unless_the_operator_allows_it(github_sim, tmp_path,
                                                                                         monkeypatch):
    world = _world(github_sim, tmp_path, {"radixark/miles": CLAIMS_MILES, "sgl-project/sglang": None})
    assert _run(world, "sgl-project/sglang").status == "done"
    assert _by_repository(world) == {}
    monkeypatch.setenv("CI_REGISTRAR_DURATION_CLAIMS", "radixark/miles<-sgl-project/sglang")
    _run(world, "sgl-project/sglang")
    assert _by_repository(world) == {"radixark/miles": 3}


@pytest.mark.parametrize("broken", [
    "calibration:\n  margin: " + "9" * 5000 + "\n",
    "duration_sources: [\n",
    "\xff not utf-8",
])
def test_a_broken_configuration_elsewhere_fails_nobody_elses_ingestion(github_sim, tmp_path, monkeypatch, broken):
    monkeypatch.setenv("CI_REGISTRAR_DURATION_CLAIMS", "acme/broken<-radixark/miles")
    world = _world(github_sim, tmp_path, {
        "radixark/miles": f"duration_sources:\n  - workflow: {NIGHTLY}\n",
        "acme/broken": None,
        "acme/unrelated": "calibration:\n  margin: " + "9" * 5000 + "\n",
    })
    world.repo["acme/broken"].commit({".github/ci-registrar.yml": broken.encode("latin-1")}, branch="main")
    row = _run(world, "radixark/miles")
    assert row.status == "done"
    assert _by_repository(world) == {"radixark/miles": 3}
    assert _config_reads(world, "acme/unrelated") == 0
