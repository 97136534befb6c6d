"""What goes wrong, on purpose: poison deliveries, crash loops, outages, store errors, races.

Each test checks that the ordinary pull request's check still completes, that the faulty delivery
ends recorded (invalid, dead, failed) with its check run completed with the reason, and that no
delivery is lost or processed twice.
"""

from __future__ import annotations

import json
import threading
import time
import uuid

import pytest

from bot.worker.checkruns import STALE_TITLE
from bot.worker.handlers.pull_requests import CHECK_NAME, FAILED_TITLE
from bot.store import service as store
from tests.simulator import sign
from tests.simulator.fixtures import github_sim  # noqa: F401
from tests.patience import PATIENCE
from tests.service_support import build_world, wait_for


@pytest.fixture()
def world(github_sim, tmp_path, monkeypatch):
    monkeypatch.setenv("CI_REGISTRAR_HTTP_BACKOFF_S", "0.01")
    monkeypatch.setenv("CI_REGISTRAR_JOB_BACKOFF_S", "0.01")
    monkeypatch.setenv("CI_REGISTRAR_HTTP_TIMEOUT_S", "2")
    return build_world(github_sim, tmp_path)


@pytest.fixture(params=["sqlite", "postgresql"])
def any_world(request, github_sim, tmp_path, monkeypatch):
    """The same, on the embedded SQLite store and on PostgreSQL (its data errors, its advisory locks)."""
    monkeypatch.setenv("CI_REGISTRAR_HTTP_BACKOFF_S", "0.01")
    monkeypatch.setenv("CI_REGISTRAR_JOB_BACKOFF_S", "0.01")
    monkeypatch.setenv("CI_REGISTRAR_HTTP_TIMEOUT_S", "2")
    url = request.getfixturevalue("pg_url") if request.param == "postgresql" else None
    return build_world(github_sim, tmp_path, database_url=url)


def opened(world, pr=None):
    return world.sim.webhook("pull_request", "opened", app=world.app, repo=world.repo, pull=pr or world.pr, sender="bob")


def runs(world, sha=None):
    return world.sim.check_runs(world.repo, sha=sha or world.pr.head_sha, name=CHECK_NAME)


def deliveries(world) -> dict:
    return {d.delivery_id: d for d in store.recent_deliveries(world.settings.database_url, limit=500)}


def signed(world, body: bytes, event: str = "pull_request", delivery_id: str | None = None) -> dict:
    return {"X-GitHub-Event": event, "X-GitHub-Delivery": delivery_id or str(uuid.uuid4()),
            "X-Hub-Signature-256": sign(body, world.app.webhook_secret), "Content-Type": "application/json"}


def post(world, body: bytes, **kw):
    return world.client.post("/webhook", data=body, headers=signed(world, body, **kw))


def assert_ordinary_pr_completes(world):
    resp = world.deliver(opened(world))
    assert resp.status_code == 202
    world.drain()
    [run] = runs(world)
    assert run["status"] == "completed" and run["output"]["title"] not in (FAILED_TITLE, STALE_TITLE)
    assert world.queue.depth() == 0 and world.queue.inflight() == 0 and world.queue.scheduled_count() == 0


# -- 7. poison and vanishing deliveries ----------------------------------------------------------
def _poison(payload: dict, kind: str) -> bytes:
    p = json.loads(json.dumps(payload))
    if kind == "installation_id_over_2^63":
        p["installation"]["id"] = 2**63 + 5
    elif kind == "full_name_list":
        p["repository"]["full_name"] = ["radixark", "miles"]
    elif kind == "action_too_long":
        p["action"] = "opened" * 100
    elif kind == "full_name_too_long":
        p["repository"]["full_name"] = "radixark/" + "m" * 5000
    elif kind == "nul_in_full_name":
        p["repository"]["full_name"] = "radixark/mi\u0000les"
    elif kind == "nul_in_ref_name":
        p["pull_request"]["head"]["sha"] = "\u0000" * 40
    elif kind == "pull_request_missing":
        del p["pull_request"]
    return json.dumps(p).encode()


POISON = ["installation_id_over_2^63", "full_name_list", "action_too_long", "full_name_too_long", "nul_in_full_name",
          "nul_in_ref_name", "pull_request_missing"]


@pytest.mark.parametrize("kind", POISON)
def test_a_poison_payload_is_recorded_invalid_and_never_retried(any_world, kind):
    world = any_world
    body = _poison(opened(world).payload, kind)
    headers = signed(world, body)
    resp = world.client.post("/webhook", data=body, headers=headers)
    # Signed, but its schema fails: refused at once with the reason (GitHub shows it in the
    # delivery's log), never queued to fail later; the store records it through the queue.
    assert resp.status_code == 400 and resp.json["error"].startswith("invalid payload:"), resp.data
    assert world.drain() == 1  # the record only, no delivery job, no retry
    row = deliveries(world)[headers["X-GitHub-Delivery"]]
    assert row.status == "invalid" and row.outcome.startswith("invalid payload:")
    assert row.attempts == 1 and row.installation_id is None and row.repository is None
    assert runs(world) == []  # no work started
    assert world.queue.scheduled_count() == 0
    assert_ordinary_pr_completes(world)


UNDECODABLE = {
    "invalid_utf8_in_a_string": lambda good: good.replace(b'"title": "', b'"title": "\xff\xfe', 1),
    "integer_of_5000_digits": lambda good: good[:-1] + b', "n": ' + b"9" * 5000 + b"}",
    "nested_5000_deep": lambda good: good[:-1] + b', "deep": ' + b"[" * 5000 + b"]" * 5000 + b"}",
    "lone_surrogate": lambda good: good[:-1] + b', "s": "\\ud800"}',
}


@pytest.mark.parametrize("kind", sorted(UNDECODABLE))
def test_a_body_the_worker_could_not_decode_is_refused_at_intake_with_400(world, kind):
    good = json.dumps(opened(world).payload).encode()
    body = UNDECODABLE[kind](good)
    assert body != good
    resp = post(world, body)
    assert resp.status_code == 400, resp.data
    assert "JSON" in resp.json["error"]
    assert world.queue.depth() == 0  # refused, not queued to vanish later
    # the fast path and the view agree, and the same id sent again correctly is accepted
    headers = signed(world, good)
    assert world.client.post("/webhook", data=body, headers={**headers, "X-Hub-Signature-256": sign(body, world.app.webhook_secret)}).status_code == 400
    assert world.client.post("/webhook", data=good, headers=headers).status_code == 202
    world.drain()
    assert deliveries(world)[headers["X-GitHub-Delivery"]].status == "done"


# -- 2. a job that kills its process, again and again: dead letter -------------------------------
class ProcessDied(BaseException):
    """What a worker's death looks like to the job: it stops, no bookkeeping runs, no ack."""


def test_a_job_that_crashes_its_process_three_times_is_a_dead_letter(world, monkeypatch):
    import bot.worker.handlers.pull_requests as prs

    def dies(*_a, **_k):
        raise ProcessDied()

    monkeypatch.setattr(prs, "GitHubTree", dies)
    d = opened(world)
    world.deliver(d)
    for death in range(3):
        task = world.queue.dequeue()
        assert task is not None, f"the job did not come back after death {death}"
        with pytest.raises(ProcessDied):
            world.queue.execute(task)
        assert world.queue.inflight() == 1  # not acknowledged: the lease brings it back
        world.queue.storage.requeue_expired(time.time() + 3600)
    [run] = runs(world)
    assert run["status"] == "in_progress"
    assert world.drain() == 1  # the fourth start: set aside, not run
    row = deliveries(world)[d.delivery_id]
    assert row.status == "dead" and "died 3 times" in row.outcome
    [run] = runs(world)
    assert run["status"] == "completed" and run["conclusion"] == "failure"
    assert run["output"]["title"] == "Check stopped: its job kept crashing"
    assert d.delivery_id in run["output"]["summary"] and "3 times" in run["output"]["summary"]
    assert world.queue.depth() == 0 and world.queue.inflight() == 0

    ready = world.client.get("/readyz")
    assert ready.status_code == 200 and ready.json["dead_letters"] == 1
    assert "ci_registrar_dead_letters 1.0" in world.client.get("/metrics").data.decode()
    from tests.signin_support import sign_in

    client = world.client
    sign_in(client, world.flask, "maint", ["radixark/miles"], [world.installation.id])
    page = client.get("/").data.decode()
    assert "Dead letters (1)" in page and d.delivery_id in page

    # Fixed (the process no longer dies): a redelivery by hand runs again, with a fresh budget.
    monkeypatch.undo()
    assert world.client.post("/webhook", data=d.body, headers=d.headers).status_code == 202
    world.drain()
    row = deliveries(world)[d.delivery_id]
    assert row.status == "done" and row.attempts == 1
    newest = max(runs(world), key=lambda r: r["id"])
    assert newest["status"] == "completed" and newest["output"]["title"] not in (FAILED_TITLE, STALE_TITLE)


def test_the_crash_budget_is_configurable(world, monkeypatch):
    import bot.worker.handlers.pull_requests as prs

    monkeypatch.setenv("CI_REGISTRAR_JOB_MAX_CRASHES", "1")

    def dies(*_a, **_k):
        raise ProcessDied()

    monkeypatch.setattr(prs, "GitHubTree", dies)
    d = opened(world)
    world.deliver(d)
    with pytest.raises(ProcessDied):
        world.queue.execute(world.queue.dequeue())
    world.queue.storage.requeue_expired(time.time() + 3600)
    world.drain()
    assert deliveries(world)[d.delivery_id].status == "dead"
    [run] = runs(world)
    assert run["status"] == "completed" and run["conclusion"] == "failure"


# -- 3. an outage longer than the old retry budget ------------------------------------------------
def test_an_outage_on_check_run_updates_longer_than_the_old_budget_still_completes_the_run(world, monkeypatch):
    monkeypatch.setenv("CI_REGISTRAR_HTTP_ATTEMPTS", "1")
    fault = world.sim.inject_fault("PATCH", r"/check-runs/\d+$", "502", times=None)
    d = opened(world)
    world.deliver(d)
    # until the job has given up and its failure report has failed more often than the old budget allowed
    world.drain(max_jobs=1000, until=lambda: fault.hits > 5 + 4 and world.queue.scheduled_count() == 1
                and getattr(deliveries(world).get(d.delivery_id), "status", None) == "failed")
    # 5 job attempts + the failure report: the old report gave up after 4 tries
    assert fault.hits > 5 + 4, fault.hits
    row = deliveries(world)[d.delivery_id]
    assert row.status == "failed"
    [run] = runs(world)
    assert run["status"] == "in_progress"
    assert world.queue.scheduled_count() == 1  # the report, still trying
    world.sim.clear_faults()  # GitHub recovers
    world.drain(max_jobs=1000)
    [run] = runs(world)
    assert run["status"] == "completed" and run["conclusion"] == "failure" and run["output"]["title"] == FAILED_TITLE
    summary = run["output"]["summary"]
    assert d.delivery_id in summary and "502" not in summary and "Traceback" not in summary
    assert world.queue.scheduled_count() == 0


# -- 4. a store outage after the check completed --------------------------------------------------
def test_a_store_failure_after_completion_leaves_the_completed_check_as_it_was(world, monkeypatch):
    from sqlalchemy.exc import OperationalError

    real = store.record_check_run

    def flaky(url, **kw):
        if kw.get("conclusion") is not None:
            raise OperationalError("UPDATE check_runs", {}, Exception(
                'connection to server at "db.internal" (10.0.0.7), port 5432 failed: Connection refused'))
        return real(url, **kw)

    monkeypatch.setattr(store, "record_check_run", flaky)
    d = opened(world)
    world.deliver(d)
    world.drain()
    [run] = runs(world)
    assert run["status"] == "completed" and run["conclusion"] in ("success", "failure")
    assert run["output"]["title"] != FAILED_TITLE
    row = deliveries(world)[d.delivery_id]
    assert row.status == "done" and row.attempts == 2  # retried once, then found the check done
    shown = json.dumps([run["output"], world.sim.comments(world.repo, world.pr.number),
                        world.sim.review_comments(world.repo, world.pr.number)])
    assert "5432" not in shown and "db.internal" not in shown

    # The store still says "in progress": the reconciler asks GitHub, sees it done, and only records it.
    monkeypatch.undo()
    before = run["patches"]
    assert world.queue.runtime and store.stale_check_runs(world.settings.database_url, 0)
    from bot.worker.tasks import reconcile

    assert reconcile(world.queue.runtime, older_than_s=0) == 0
    [run] = runs(world)
    assert run["patches"] == before and run["output"]["title"] != STALE_TITLE
    assert store.stale_check_runs(world.settings.database_url, 0) == []


def test_an_internal_error_shows_a_generic_reason_and_the_delivery_id(world, monkeypatch):
    import bot.worker.handlers.pull_requests as prs

    def broken(*_a, **_k):
        raise RuntimeError("password=hunter2 at postgres://db.internal:5432/app")

    monkeypatch.setattr(prs, "GitHubTree", broken)
    d = opened(world)
    world.deliver(d)
    world.drain()
    [run] = runs(world)
    assert run["status"] == "completed" and run["conclusion"] == "failure" and run["output"]["title"] == FAILED_TITLE
    summary = run["output"]["summary"]
    assert d.delivery_id in summary and "internal error" in summary
    assert "hunter2" not in summary and "5432" not in summary and "RuntimeError" not in summary
    assert deliveries(world)[d.delivery_id].status == "failed"


# -- the reconciler ------------------------------------------------------------------------------
def test_the_reconciler_spares_a_run_being_worked_on_until_its_job_is_stuck(world, monkeypatch):
    import bot.worker.handlers.pull_requests as prs
    from bot.worker.checkruns import head_key
    from bot.store.locks import claim
    from bot.worker.tasks import reconcile

    def dies(*_a, **_k):
        raise ProcessDied()

    monkeypatch.setattr(prs, "GitHubTree", dies)
    d = opened(world)
    world.deliver(d)
    with pytest.raises(ProcessDied):
        world.queue.execute(world.queue.dequeue())
    [run] = runs(world)
    assert run["status"] == "in_progress"
    url = world.settings.database_url
    assert reconcile(world.queue.runtime) == 0  # not stale yet (the default is two hours)
    with claim(url, head_key("radixark/miles", world.pr.head_sha, CHECK_NAME)):
        time.sleep(1.1)
        assert reconcile(world.queue.runtime, older_than_s=1) == 0  # stale, but a job holds the head: spared
        assert runs(world)[0]["status"] == "in_progress"
        time.sleep(2.2)
        # ... unless it has held it for three times the limit: a stuck job does not pin the run either
        assert reconcile(world.queue.runtime, older_than_s=1) == 1
    [run] = runs(world)
    assert run["status"] == "completed" and run["output"]["title"] == STALE_TITLE
    assert reconcile(world.queue.runtime, older_than_s=0) == 0  # once


def test_the_reconciler_completes_a_run_whose_job_died(world, monkeypatch):
    import bot.worker.handlers.pull_requests as prs
    from bot.worker.tasks import reconcile

    def dies(*_a, **_k):
        raise ProcessDied()

    monkeypatch.setattr(prs, "GitHubTree", dies)
    d = opened(world)
    world.deliver(d)
    with pytest.raises(ProcessDied):
        world.queue.execute(world.queue.dequeue())
    assert reconcile(world.queue.runtime, older_than_s=0) == 1
    [run] = runs(world)
    assert run["status"] == "completed" and run["conclusion"] == "failure" and run["output"]["title"] == STALE_TITLE
    assert d.delivery_id in run["output"]["summary"]
    assert reconcile(world.queue.runtime, older_than_s=0) == 0  # once


# -- 6. one result per head --------------------------------------------------------------------
def _consumer_run(world, threads=4, until=None):
    from bot.commands.service import _consumer

    consumer = _consumer(world.queue, threads)
    consumer.start()
    try:
        assert wait_for(until)
    finally:
        consumer.stop_flag.set()
        for _, t in consumer.worker_threads:
            t.join(10)
        consumer.scheduler.join(5)


def test_opened_reopened_and_ready_for_review_together_give_one_run_and_one_suggestion_per_line(any_world):
    world = any_world
    from tests.service_support import TEST_FILE

    sim = world.sim
    typo = TEST_FILE.replace('"stage-a-1-gpu-h200"', '"stgae-a-1-gpu-h200"')  # not -h20: a real GPU model, never "corrected"
    prs = []
    for i in range(6):
        branch = f"typo-{i}"
        world.repo.commit({f"tests/e2e/test_typo_{i}.py": typo}, branch=branch, parent=world.repo.head("main"))
        prs.append(sim.open_pull_request(world.repo, branch, "main", author="bob"))
    ids = []
    for pr in prs:
        for action in ("opened", "reopened", "ready_for_review"):
            d = sim.webhook("pull_request", action, app=world.app, repo=world.repo, pull=pr, sender="bob")
            assert world.deliver(d).status_code == 202
            ids.append(d.delivery_id)

    def all_done():
        rows = deliveries(world)
        return all(rows.get(i) is not None and rows[i].status == "done" for i in ids)

    _consumer_run(world, threads=4, until=all_done)
    for pr in prs:
        [run] = runs(world, sha=pr.head_sha)
        assert run["status"] == "completed"
        comments = sim.review_comments(world.repo, pr.number)
        lines = [(c["path"], c["line"]) for c in comments]
        assert len(lines) == len(set(lines)), comments
    assert any(sim.review_comments(world.repo, pr.number) for pr in prs), "the typo produced no suggestion"


def test_a_create_answered_too_late_is_found_by_the_next_delivery_for_that_head(any_world):
    """The full suite under load once left two runs on one head: `opened` sent its create, GitHub
    made the run, the answer came after the read timeout (TransientError, nothing recorded), and
    `reopened`, a first attempt, took the shortcut "nothing recorded: none exists" and created a
    second. The answer is held here (a slow fault released at the end), so the timeout fires
    whatever the machine's speed."""
    world = any_world
    late = world.sim.inject_fault("POST", r"/check-runs$", "slow", times=1, delay=PATIENCE)
    try:
        world.deliver(opened(world))
        assert world.drain(max_jobs=1) == 1  # its create times out; the job is scheduled again
        assert len(runs(world)) == 1  # GitHub made the run all the same
        reopened = world.sim.webhook("pull_request", "reopened", app=world.app, repo=world.repo, pull=world.pr,
                                     sender="bob")
        assert world.deliver(reopened).status_code == 202
        assert world.drain(max_jobs=1) == 1  # reopened runs before opened's retry is due in the queue
    finally:
        late.release()
    world.drain()
    [run] = runs(world)
    assert run["status"] == "completed"


def test_replays_of_a_rerequested_body_with_fresh_delivery_ids_create_no_runs(world):
    world.deliver(opened(world))
    world.drain()
    [first] = runs(world)
    d = world.sim.webhook("check_suite", "rerequested", app=world.app, repo=world.repo, head_sha=world.pr.head_sha)
    ids = []
    for _ in range(20):
        headers = {**d.headers, "X-GitHub-Delivery": str(uuid.uuid4())}
        assert world.client.post("/webhook", data=d.body, headers=headers).status_code == 202
        ids.append(headers["X-GitHub-Delivery"])
    world.drain(max_jobs=100)
    [run] = runs(world)
    assert run["id"] == first["id"] and run["status"] == "completed" and run["patches"] == first["patches"]
    rows = deliveries(world)
    assert all(rows[i].status == "done" for i in ids)


def test_a_re_run_whose_verdict_changed_gets_one_new_run_however_often_it_is_replayed(world):
    from tests.service_support import TEST_FILE

    sim = world.sim
    world.repo.commit({"tests/e2e/test_typo.py": TEST_FILE.replace('"stage-a-1-gpu-h200"', '"stage-a-1-gpu-h20"')},
                      branch="typo", parent=world.repo.head("main"))
    pr = sim.open_pull_request(world.repo, "typo", "main", author="bob")
    world.deliver(opened(world, pr))
    world.drain()
    [first] = runs(world, sha=pr.head_sha)
    assert first["conclusion"] == "failure"
    # The default branch's configuration changes the verdict; the re-run is requested 5 times over.
    world.repo.commit({".github/ci-registrar.yml": "rules:\n  REG010: notice\n"}, branch="main")
    d = sim.webhook("check_run", "rerequested", app=world.app, repo=world.repo, check_run=first["id"])
    for _ in range(5):
        world.client.post("/webhook", data=d.body, headers={**d.headers, "X-GitHub-Delivery": str(uuid.uuid4())})
    world.drain(max_jobs=100)
    old, new = sorted(runs(world, sha=pr.head_sha), key=lambda r: r["id"])
    assert old["id"] == first["id"] and old["conclusion"] == "failure" and old["patches"] == first["patches"]
    assert new["status"] == "completed" and new["conclusion"] != "failure"


def test_a_re_run_after_a_failed_job_gets_one_new_run_however_often_it_is_replayed(world):
    world.sim.inject_fault("GET", r"/git/trees/", "503", times=None)
    world.deliver(opened(world))
    world.drain()
    [failed] = runs(world)
    assert failed["output"]["title"] == FAILED_TITLE
    world.sim.clear_faults()
    d = world.sim.webhook("check_run", "rerequested", app=world.app, repo=world.repo, check_run=failed["id"])
    for _ in range(5):
        world.client.post("/webhook", data=d.body, headers={**d.headers, "X-GitHub-Delivery": str(uuid.uuid4())})
    world.drain(max_jobs=100)
    old, new = sorted(runs(world), key=lambda r: r["id"])
    assert old["id"] == failed["id"] and new["status"] == "completed" and new["output"]["title"] != FAILED_TITLE


@pytest.mark.parametrize("wait", ["30", "0"])
def test_concurrent_jobs_on_one_head_in_two_threads_make_one_run(any_world, monkeypatch, wait):
    """Two threads start the same head's job at the same moment (no consumer in between). With no
    wait for the claim, the second steps back (its attempt not counted) and finds the check done."""
    world = any_world
    monkeypatch.setenv("CI_REGISTRAR_CLAIM_WAIT_S", wait)
    ds = [opened(world), world.sim.webhook("pull_request", "reopened", app=world.app, repo=world.repo, pull=world.pr,
                                           sender="bob")]
    for d in ds:
        world.deliver(d)
    tasks = [world.queue.dequeue(), world.queue.dequeue()]
    start = threading.Barrier(2)

    def go(task):
        start.wait()
        world.queue.execute(task)

    threads = [threading.Thread(target=go, args=(t,)) for t in tasks]
    for t in threads:
        t.start()
    for t in threads:
        t.join(PATIENCE)
    world.drain()
    assert len(runs(world)) == 1
    rows = deliveries(world)
    assert all(rows[d.delivery_id].status == "done" and rows[d.delivery_id].attempts == 1 for d in ds)


# -- store errors: transient ones wait (within a budget), data errors are not retried -------------
def _store_error(kind: str):
    from sqlalchemy.exc import DataError, OperationalError

    cls = OperationalError if kind == "operational" else DataError
    return cls("INSERT INTO deliveries", {}, Exception(f"{kind} failure"))


def test_a_store_outage_at_the_start_of_a_job_waits_without_spending_the_budget(world, monkeypatch):
    import bot.worker.tasks as tasks

    monkeypatch.setattr(tasks, "STORE_DOWN_RETRY_S", 0.05)
    real = store.start_delivery
    calls = []

    def down_twice(url, **kw):
        calls.append(1)
        if len(calls) <= 2:
            raise _store_error("operational")
        return real(url, **kw)

    monkeypatch.setattr(store, "start_delivery", down_twice)
    d = opened(world)
    world.deliver(d)
    world.drain()
    assert len(calls) == 3  # twice deferred, then run
    row = deliveries(world)[d.delivery_id]
    assert row.status == "done" and row.attempts == 1
    [run] = runs(world)
    assert run["status"] == "completed"


def test_a_store_outage_longer_than_its_budget_gives_the_delivery_up_and_a_redelivery_runs(world, monkeypatch):
    import bot.worker.tasks as tasks

    monkeypatch.setattr(tasks, "STORE_DOWN_RETRY_S", 0.05)
    monkeypatch.setenv("CI_REGISTRAR_STORE_DOWN_BUDGET_S", "0.3")
    real = store.start_delivery

    def down(url, **kw):
        raise _store_error("operational")

    monkeypatch.setattr(store, "start_delivery", down)
    d = opened(world)
    world.deliver(d)
    calls = []
    monkeypatch.setattr(store, "start_delivery", lambda url, **kw: calls.append(1) or down(url, **kw))
    world.drain()
    assert 2 <= len(calls) < 50  # retried for its budget, then given up: not forever
    assert world.queue.depth() == 0 and world.queue.scheduled_count() == 0
    monkeypatch.setattr(store, "start_delivery", real)
    assert world.client.post("/webhook", data=d.body, headers=d.headers).status_code == 202  # not "duplicate"
    world.drain()
    assert deliveries(world)[d.delivery_id].status == "done"


def test_a_store_data_error_is_not_retried(world, monkeypatch):
    def refuses(url, **kw):
        raise _store_error("data")

    monkeypatch.setattr(store, "start_delivery", refuses)
    d = opened(world)
    world.deliver(d)
    assert world.drain() == 1
    row = deliveries(world)[d.delivery_id]
    assert row.status == "invalid" and "DataError" in row.outcome
    assert world.queue.depth() == 0 and world.queue.scheduled_count() == 0


def test_the_head_claim_excludes_other_holders_and_leaves_no_files(tmp_path):
    from bot.store.locks import Busy, claim

    url = f"sqlite:///{tmp_path / 'data' / 'ci-registrar.db'}"
    order = []

    def holder(name, hold_s):
        with claim(url, "check:a/b:sha:name", wait_s=PATIENCE):
            order.append(("in", name))
            time.sleep(hold_s)
            order.append(("out", name))

    threads = [threading.Thread(target=holder, args=(i, 0.2)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(PATIENCE)
    assert len(order) == 8 and all(order[i][0] == "in" and order[i + 1] == ("out", order[i][1]) for i in range(0, 8, 2))
    with claim(url, "check:a/b:sha:name"):
        with pytest.raises(Busy):
            with claim(url, "check:a/b:sha:name", wait_s=0.2):
                pass
        with claim(url, "check:a/b:other:name", wait_s=0):  # another head: independent
            pass
    assert list((tmp_path / "data" / "locks").iterdir()) == []
