"""The App end to end against the simulated GitHub: a webhook arrives, the check run appears, once."""

from __future__ import annotations

import pytest

from bot.worker.handlers.pull_requests import CHECK_NAME, FAILED_TITLE
from bot.store import service as store
from tests.service_support import build_world
from tests.simulator.fixtures import github_sim  # noqa: F401


@pytest.fixture()
def world(github_sim, tmp_path, monkeypatch):
    monkeypatch.setenv("CI_REGISTRAR_HTTP_BACKOFF_S", "0.01")
    monkeypatch.setenv("CI_REGISTRAR_JOB_BACKOFF_S", "0.01")
    monkeypatch.setenv("CI_REGISTRAR_HTTP_TIMEOUT_S", "2")
    return build_world(github_sim, tmp_path)


def opened(world):
    return world.sim.webhook("pull_request", "opened", app=world.app, repo=world.repo, pull=world.pr, sender="bob")


def runs(world):
    return world.sim.check_runs(world.repo, sha=world.pr.head_sha, name=CHECK_NAME)


def test_a_pull_request_gets_one_completed_check_run_on_its_head(world):
    resp = world.deliver(opened(world))
    assert resp.status_code == 202
    assert world.drain() == 1
    [run] = runs(world)
    assert run["status"] == "completed"
    assert run["conclusion"] in ("success", "failure")
    assert run["output"]["title"]
    [delivery] = store.recent_deliveries(world.settings.database_url)
    assert delivery.status == "done" and delivery.repository == "radixark/miles"


def test_a_redelivery_posts_nothing_twice(world):
    d = opened(world)
    world.deliver(d)
    world.drain()
    again = world.sim.deliver  # the same delivery id, as GitHub's "Redeliver" sends it
    resp = world.client.post("/webhook", data=d.body, headers=d.headers)
    assert resp.status_code == 200 and resp.json["status"] == "duplicate"
    assert world.drain() == 0
    assert len(runs(world)) == 1
    assert again is not None


def test_a_job_that_runs_twice_posts_nothing_twice(world):
    d = opened(world)
    world.deliver(d)
    task = world.queue.dequeue()
    world.queue.execute(task)
    patches = runs(world)[0]["patches"]
    # The same job again (a worker died after finishing but before acknowledging), even with the
    # store's record of it lost.
    world.queue.execute(task)
    store.finish_delivery(world.settings.database_url, d.delivery_id, "running")
    world.queue.execute(task)
    [run] = runs(world)
    assert run["patches"] == patches


def test_a_new_push_gets_its_own_check_run(world):
    world.deliver(opened(world))
    world.drain()
    sha2 = world.sim.push(world.repo, "feature", {"tests/e2e/test_b.py": "x = 1\n"})
    pr = world.sim.pull(world.repo, world.pr.number)
    world.deliver(world.sim.webhook("pull_request", "synchronize", app=world.app, repo=world.repo, pull=pr, sender="bob"))
    world.drain()
    assert len(world.sim.check_runs(world.repo, sha=sha2, name=CHECK_NAME)) == 1
    assert len(runs(world)) == 1


def test_re_run_requested_re_runs_the_existing_run(world):
    world.deliver(opened(world))
    world.drain()
    [first] = runs(world)
    world.deliver(world.sim.webhook("check_run", "rerequested", app=world.app, repo=world.repo, check_run=first["id"]))
    world.drain()
    [again] = runs(world)  # checked again: the verdict is unchanged, so nothing is written
    assert again["id"] == first["id"] and again["status"] == "completed" and again["patches"] == first["patches"]
    assert [d.status for d in store.recent_deliveries(world.settings.database_url)] == ["done", "done"]


def test_installations_are_recorded(world):
    world.deliver(world.sim.webhook("installation", "created", app=world.app, installation=world.installation))
    world.drain()
    [(inst, repos)] = store.installations(world.settings.database_url)
    assert inst.id == world.installation.id and "radixark/miles" in repos
    world.sim.create_repo("radixark/other")
    world.deliver(world.sim.webhook("installation_repositories", "added", app=world.app, installation=world.installation,
                                    added=["radixark/other"]))
    world.drain()
    [(_, repos)] = store.installations(world.settings.database_url)
    assert "radixark/other" in repos
    world.deliver(world.sim.webhook("installation", "deleted", app=world.app, installation=world.installation))
    world.drain()
    assert store.installations(world.settings.database_url) == []


def test_one_installation_token_serves_many_jobs(world):
    world.deliver(opened(world))
    world.drain()
    sha2 = world.sim.push(world.repo, "feature", {"tests/e2e/test_b.py": "x = 1\n"})
    pr = world.sim.pull(world.repo, world.pr.number)
    world.deliver(world.sim.webhook("pull_request", "synchronize", app=world.app, repo=world.repo, pull=pr, sender="bob"))
    world.drain()
    assert len(world.sim.tokens_issued) == 1
    assert world.sim.check_runs(world.repo, sha=sha2, name=CHECK_NAME)


def test_an_unchanged_file_is_fetched_once_across_pushes(world):
    world.deliver(opened(world))
    world.drain()
    blobs_before = [r for r in world.sim.requests_log if "/git/blobs/" in r["path"]]
    world.sim.push(world.repo, "feature", {"tests/e2e/test_b.py": "x = 1\n"})
    pr = world.sim.pull(world.repo, world.pr.number)
    world.deliver(world.sim.webhook("pull_request", "synchronize", app=world.app, repo=world.repo, pull=pr, sender="bob"))
    world.drain()
    blobs = [r["path"] for r in world.sim.requests_log if "/git/blobs/" in r["path"]]
    assert len(blobs) == len(set(blobs)), "a blob was fetched twice"
    assert len(blobs) > len(blobs_before) or blobs_before == []


def test_the_configuration_is_asked_for_conditionally(world):
    world.deliver(opened(world))
    world.drain()
    world.deliver(world.sim.webhook("check_suite", "rerequested", app=world.app, repo=world.repo, head_sha=world.pr.head_sha))
    world.drain()
    statuses = [r["status"] for r in world.sim.requests_log if r["path"].endswith("/contents/.github/ci-registrar.yml")]
    assert len(statuses) == 2
    assert statuses[1] in (304, 404)


def test_the_status_page_shows_deliveries_and_installations(world):
    world.deliver(world.sim.webhook("installation", "created", app=world.app, installation=world.installation))
    world.deliver(opened(world))
    world.drain()
    from tests.signin_support import sign_in

    client = world.client
    assert client.get("/").status_code == 302  # the status page needs a signed-in viewer
    sign_in(client, world.flask, "maint", ["radixark/miles"], [world.installation.id])
    page = client.get("/").data.decode()
    assert "CI Registrar" in page and "radixark" in page
    assert "pull_request.opened" in page and "done" in page
    ready = world.client.get("/readyz")
    assert ready.status_code == 200, ready.json


# -- faults ---------------------------------------------------------------------------------------
FAULTS = [
    ("500", {}), ("502", {}), ("503", {}),
    ("secondary_rate_limit", {"retry_after": 1}), ("429", {"retry_after": 1}),
    ("primary_rate_limit", {"reset_in": 1}),
    ("expired_token", {}), ("slow", {"delay": 3}), ("drop", {}),
]
WHERE = [("POST", r"/check-runs$"), ("GET", r"/git/trees/"), ("PATCH", r"/check-runs/\d+$"),
         ("POST", r"/access_tokens$")]


# Every kind where a read can be retried in place; the ones that matter for a write that must not be
# sent twice (creating the check run) and for the token exchange.
CASES = [("GET", r"/git/trees/", kind, params) for kind, params in FAULTS] + [
    ("POST", r"/check-runs$", kind, params) for kind, params in FAULTS if kind in ("503", "drop", "slow", "expired_token", "429")
] + [("PATCH", r"/check-runs/\d+$", "502", {}), ("POST", r"/access_tokens$", "503", {}),
     ("POST", r"/access_tokens$", "expired_token", {}), ("POST", r"/access_tokens$", "secondary_rate_limit", {"retry_after": 1})]


@pytest.mark.parametrize("method, path, kind, params", CASES, ids=[f"{m}-{p.strip('/$^').split('/')[-1] or p}-{k}" for m, p, k, _ in CASES])
def test_a_fault_is_survived_within_the_retry_budget(world, method, path, kind, params):
    fault = world.sim.inject_fault(method, path, kind, times=2, **params)
    d = opened(world)
    world.deliver(d)
    world.drain()
    assert fault.hits >= 1
    [run] = runs(world)
    assert run["status"] == "completed" and run["output"]["title"] != FAILED_TITLE
    [delivery] = store.recent_deliveries(world.settings.database_url)
    assert delivery.status == "done"
    assert delivery.attempts <= world.queue.runtime.github.policy.job_attempts


@pytest.mark.parametrize("kind", ["503", "drop", "secondary_rate_limit"])
def test_a_fault_that_never_ends_fails_the_job_visibly(world, kind):
    from bot.infra import metrics

    before = metrics.JOB_FAILURES.labels("pull_request", "retry_budget")._value.get()
    world.sim.inject_fault("GET", r"/git/trees/", kind, times=None, **({"retry_after": 1} if kind != "503" and kind != "drop" else {}))
    d = opened(world)
    world.deliver(d)
    world.drain()
    [delivery] = store.recent_deliveries(world.settings.database_url)
    assert delivery.status == "failed"
    assert delivery.attempts == world.queue.runtime.github.policy.job_attempts
    assert metrics.JOB_FAILURES.labels("pull_request", "retry_budget")._value.get() == before + 1
    [run] = runs(world)
    assert run["conclusion"] == "failure" and run["output"]["title"] == FAILED_TITLE
    # a failed delivery may be redelivered by hand, and then runs again, with a fresh budget
    world.sim.clear_faults()
    assert world.client.post("/webhook", data=d.body, headers=d.headers).status_code == 202
    world.drain()
    [delivery] = store.recent_deliveries(world.settings.database_url)
    assert delivery.status == "done" and delivery.attempts == 1
    failed, redone = sorted(runs(world), key=lambda r: r["id"])
    assert redone["status"] == "completed" and redone["output"]["title"] != FAILED_TITLE


def test_a_misspelt_suite_fails_the_check_with_an_annotation_at_the_argument(github_sim, tmp_path, monkeypatch):
    from tests.fixtures.miles import miles_tree, test_file

    sim = github_sim
    gh_app = sim.create_app()
    repo = sim.create_repo("radixark/miles")
    repo.commit(miles_tree(), branch="main")
    sim.install(gh_app, "radixark/miles")
    source = test_file('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi305", labels=["long"])')
    repo.commit({"tests/e2e/test_new.py": source}, branch="typo")
    pr = sim.open_pull_request(repo, "typo", "main", author="bob")
    from tests.service_support import World, env_for
    from app import create_app
    from bot.worker.queue import QueueConfig, open_queue
    from bot.infra.settings import load_settings
    from bot.store.db import upgrade

    settings = load_settings(env_for(sim, gh_app, tmp_path))
    upgrade(settings.database_url)
    queue = open_queue(settings, config=QueueConfig("typo", None, str(tmp_path / "queue.db"), 30))
    world = World(sim, gh_app, repo, None, settings, queue, create_app(settings, queue=queue), pr)
    world.deliver(sim.webhook("pull_request", "opened", app=gh_app, repo=repo, pull=pr, sender="bob"))
    world.drain()
    [run] = sim.check_runs(repo, sha=pr.head_sha, name=CHECK_NAME)
    assert run["conclusion"] == "failure"
    line = next(i for i, text in enumerate(source.splitlines(), 1) if "mi305" in text)
    hits = [a for a in run["annotations"] if a["path"] == "tests/e2e/test_new.py" and a["start_line"] == line]
    assert hits and any(a["annotation_level"] == "failure" for a in hits)


def test_a_rate_limited_installation_waits_without_holding_up_another(world):
    sim = world.sim
    other = sim.create_repo("acme/tools")
    other.commit({"README.md": "x\n"}, branch="main")
    sim.install(world.app, "acme/tools")
    other.commit({"tests/e2e/test_t.py": "x = 1\n"}, branch="feature")
    other_pr = sim.open_pull_request(other, "feature", "main", author="eve")
    sim.inject_fault("GET", r"^/repos/radixark/miles/git/trees/", "secondary_rate_limit", times=1, retry_after=30)

    world.deliver(opened(world))
    world.deliver(sim.webhook("pull_request", "opened", app=world.app, repo=other, pull=other_pr, sender="eve"))
    world.drain(until=lambda: [r for r in sim.check_runs(other, sha=other_pr.head_sha, name=CHECK_NAME)
                               if r["status"] == "completed"] and world.queue.scheduled_count() == 1)

    [done] = sim.check_runs(other, sha=other_pr.head_sha, name=CHECK_NAME)
    assert done["status"] == "completed"
    waiting = {d.repository: d for d in store.recent_deliveries(world.settings.database_url)}
    assert waiting["radixark/miles"].status == "retrying" and waiting["acme/tools"].status == "done"
    assert world.queue.scheduled_count() == 1  # comes back after the 30 s GitHub asked for
