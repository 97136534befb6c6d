"""The PR check's GitHub calls, pinned per case (bench/api_calls.py prints the same figures at
miles' size): a change that makes the check read more from GitHub fails here.

The repository is smaller than miles (the counts do not depend on its size: that is the point),
but has room for the 300-file PR. Every check's verdict is also compared with the engine run
locally on the same commits, so fewer calls never means a different answer.
"""

from __future__ import annotations

import threading
import time

import pytest

from bench.api_calls import ApiWorld, cases
from checks.engine import check_tree
from checks.reporting.render import CHECK_RUN_NAME, check_run_annotations, check_run_conclusion
from checks.scanning.tree import MemoryTree
from tests.fixtures.miles import CONSUMERS
from tests.fixtures.miles_shape import calibrated, e2e_tests, seed_pr
from tests.patience import PATIENCE
from tests.service_support import wait_for

# Calls per case, the installation-token request not counted (it comes once an hour).
# A new process (cold, warm-other) also reads the external consumer's workflow once.
PINNED = {"cold": 8, "warm": 6, "warm-other": 7, "re-push": 6, "re-run": 4, "inventory": 6, "300-file": 9}
TARGETS = {"cold": 8, "warm": 6, "warm-other": 7, "re-push": 6, "re-run": 5, "inventory": 8, "300-file": 10}


@pytest.fixture
def api_world(tmp_path):
    w = ApiWorld(tmp_path, files=700, tests=360)
    yield w
    w.stop()


def local_verdict(w: ApiWorld, base_sha: str, head_sha: str):
    """The engine on the same two commits, in memory: what the App must conclude."""
    head, base = w.repo.files(head_sha), w.repo.files(base_sha)
    changed = {p: p for p in set(head) | set(base) if head.get(p) != base.get(p)}
    changed.update({p: None for p in head if p not in base})
    changed = {p: b for p, b in changed.items() if p in head or b}
    report = check_tree(MemoryTree(head), MemoryTree(base), changed, config_text=None, fixes=False, consumers_from=CONSUMERS)
    return check_run_conclusion(report), sorted(check_run_annotations(report), key=lambda a: (a["path"], a["start_line"], a["title"]))


def noted_head(w: ApiWorld, number: int) -> str | None:
    from bot.store.db import session_scope
    from bot.store.heads import PullRequestHead

    with session_scope(w.world.settings.database_url) as session:
        row = session.get(PullRequestHead, ("radixark/miles", number))
        return row.head_sha if row else None


def app_verdict(w: ApiWorld, sha: str):
    run = w.latest_run(sha)
    annotations = run["annotations"]
    return run["conclusion"], sorted(annotations, key=lambda a: (a["path"], a["start_line"], a["title"]))


def test_each_case_costs_its_pinned_calls_and_concludes_as_the_engine_does(api_world):
    w = api_world
    results = cases(w)
    counts = {case: r["calls"] for case, r in results.items()}
    assert counts == PINNED, {c: r["by_operation"] for c, r in results.items()}
    assert all(counts[c] <= TARGETS[c] for c in counts)
    # Not a single blob read one by one: the bulk reads and the index did it all.
    assert not any("git/get-blob" in r["by_operation"] for r in results.values())
    main = w.repo.head("main")
    for branch in ("seed", "second", "third", "big"):
        head = w.repo.head(branch)
        conclusion, annotations = app_verdict(w, head)
        expected_conclusion, expected = local_verdict(w, main, head)
        assert conclusion == expected_conclusion, branch
        assert [(a["path"], a["start_line"], a["title"], a["message"]) for a in annotations] == \
               [(a["path"], a["start_line"], a["title"], a["message"]) for a in expected], branch


def test_the_index_is_shared_and_versioned(api_world, monkeypatch):
    """A new worker elsewhere reads nothing the index has; rows an older engine wrote (their keys
    digest another facts version) answer nothing, so every file is read again, same verdict."""
    import sqlalchemy as sa

    from bot.store.db import session_scope
    from bot.store.index import IndexRow
    from checks.scanning import scan_facts

    w = api_world
    pr = w.open_pr(seed_pr(w.files, tag="v"), "v")
    first = w.event("pull_request", "opened", pull=pr, sender="bob")
    assert first["by_operation"]["graphql"] > 1  # cold: the unchanged files were read too
    key = scan_facts.scan_key("0" * 40, "f" * 64, False, False)
    monkeypatch.setattr(scan_facts, "ENGINE_FACTS_VERSION", scan_facts.ENGINE_FACTS_VERSION + 1)
    assert scan_facts.scan_key("0" * 40, "f" * 64, False, False) != key  # the version is in every key
    with session_scope(w.world.settings.database_url) as session:  # what an older engine left behind
        session.execute(sa.update(IndexRow).values(key=sa.func.substr(IndexRow.key, 2) + "0"))
    other = w.open_pr(seed_pr(w.files, offset=50, tag="w"), "w")
    w.new_worker_elsewhere()
    upgraded = w.event("pull_request", "opened", pull=other, sender="bob")
    assert upgraded["by_operation"]["graphql"] == first["by_operation"]["graphql"]  # every file read again
    head = w.repo.head("w")
    assert app_verdict(w, head) == local_verdict(w, w.repo.head("main"), head)
    third = w.open_pr(seed_pr(w.files, offset=100, tag="x"), "x")
    w.new_worker_elsewhere()
    assert w.event("pull_request", "opened", pull=third, sender="bob")["by_operation"]["graphql"] == 1  # refilled


def test_a_corrupt_index_row_is_a_miss_not_a_wrong_verdict(api_world):
    import sqlalchemy as sa

    from bot.store.db import session_scope
    from bot.store.index import IndexRow

    w = api_world
    pr = w.open_pr(seed_pr(w.files, tag="c"), "c")
    w.event("pull_request", "opened", pull=pr, sender="bob")
    with session_scope(w.world.settings.database_url) as session:
        rows = session.execute(sa.update(IndexRow).values(facts='{"registrations": "not a list"}')).rowcount
        session.execute(sa.update(IndexRow).where(IndexRow.key.like("a%")).values(facts="{not json"))
    assert rows > 300
    other = w.open_pr(seed_pr(w.files, offset=50, tag="d"), "d")
    w.new_worker_elsewhere()
    w.event("pull_request", "opened", pull=other, sender="bob")
    head = w.repo.head("d")
    assert app_verdict(w, head) == local_verdict(w, w.repo.head("main"), head)


def test_an_index_the_store_cannot_serve_leaves_the_check_correct(api_world, monkeypatch):
    from bot.store.index import RegistrationIndex

    def down(self, *args):
        raise ConnectionError("store down")

    monkeypatch.setattr(RegistrationIndex, "get_many", down)
    monkeypatch.setattr(RegistrationIndex, "put_many", down)
    w = api_world
    pr = w.open_pr(seed_pr(w.files, tag="s"), "s")
    w.event("pull_request", "opened", pull=pr, sender="bob")
    head = w.repo.head("s")
    assert app_verdict(w, head) == local_verdict(w, w.repo.head("main"), head)


def test_a_bulk_read_that_fails_midway_is_retried_then_reported_never_half_read(api_world, monkeypatch):
    monkeypatch.setenv("CI_REGISTRAR_JOB_BACKOFF_S", "0.05")
    monkeypatch.setenv("CI_REGISTRAR_HTTP_BACKOFF_S", "0.01")
    w = api_world
    pr = w.open_pr(seed_pr(w.files, tag="f"), "f")
    w.sim.inject_fault("POST", r"^/graphql$", "drop", times=1)  # the first bulk read: connection lost
    w.event("pull_request", "opened", pull=pr, sender="bob")
    head = w.repo.head("f")
    assert app_verdict(w, head) == local_verdict(w, w.repo.head("main"), head)
    w.sim.inject_fault("POST", r"^/graphql$", "502", times=None)  # GitHub keeps failing
    other = w.open_pr(seed_pr(w.files, offset=50, tag="g"), "g")
    w.event("pull_request", "opened", pull=other, sender="bob")
    w.sim.clear_faults()
    run = w.latest_run(w.repo.head("g"))
    assert run["status"] == "completed" and run["conclusion"] != "success", run["output"]["title"]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_two_workers_filling_one_key_at_once(tmp_path, backend, pg_url):
    from bot.store.db import upgrade
    from bot.store.index import RegistrationIndex

    url = f"sqlite:///{tmp_path / 'store.db'}" if backend == "sqlite" else pg_url
    upgrade(url)
    entries = {f"{i:064x}": {"registrations": [], "n": i} for i in range(300)}
    errors = []

    def fill():
        try:
            RegistrationIndex(url, "o/r").put_many(entries)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=fill) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(PATIENCE)
    assert errors == []
    assert RegistrationIndex(url, "o/r").get_many(list(entries)) == entries
    assert RegistrationIndex(url, "other/repo").get_many(list(entries)) == {}  # per repository


def test_the_index_is_bounded(tmp_path):
    import datetime as dt

    from bot.store.db import upgrade
    from bot.store.index import RegistrationIndex, prune

    url = f"sqlite:///{tmp_path / 'store.db'}"
    upgrade(url)
    index = RegistrationIndex(url, "o/r")
    index.put_many({f"{i:064x}": {"pad": "x" * 1000} for i in range(200)})
    removed = prune(url, dt.timedelta(days=30), max_bytes=100_000)
    left = index.get_many([f"{i:064x}" for i in range(200)])
    assert removed > 100 and 0 < len(left) <= 100
    assert prune(url, dt.timedelta(seconds=0), max_bytes=10**9) == len(left)  # by age too


def test_memory_stays_bounded_over_many_checks(tmp_path):
    """Caches keep compact listings and bounded blobs: many checks do not grow the worker."""
    from bench.api_calls import memory

    figures = memory(files=400, tests=200, checks=40)
    assert figures["growth_mb"] < 50, figures


def test_a_check_queued_behind_a_newer_push_spends_nothing(api_world):
    w = api_world
    pr = w.open_pr(seed_pr(w.files, tag="q"), "q")
    old_sha = pr.head_sha
    sim = w.sim
    before = len(sim.requests_log)
    first = sim.webhook("pull_request", "opened", app=w.world.app, repo=w.repo, pull=pr, sender="bob")
    assert w.world.deliver(first).status_code == 202
    path = e2e_tests(w.files)[0]
    time.sleep(1.1)  # GitHub's updated_at has one-second resolution
    sim.push(w.repo, "q", calibrated({path: w.repo.files(old_sha)[path].decode()}, [path], bump=7))
    pr = sim.pull(w.repo, pr.number)
    second = sim.webhook("pull_request", "synchronize", app=w.world.app, repo=w.repo, pull=pr, sender="bob")
    assert w.world.deliver(second).status_code == 202
    assert wait_for(lambda: noted_head(w, pr.number) == pr.head_sha)  # the intake's buffer, written
    w.world.drain()
    assert sim.check_runs(w.repo, old_sha) == []  # never created
    assert w.latest_run(pr.head_sha)["status"] == "completed"
    calls = [r["operation"] for r in sim.requests_log[before:]]
    assert calls.count("checks/create") == 1


def test_a_check_pushed_over_while_it_runs_says_so_and_writes_no_verdict(api_world):
    w = api_world
    sim = w.sim
    pr = w.open_pr(seed_pr(w.files, tag="r"), "r")
    old_sha = pr.head_sha
    first = sim.webhook("pull_request", "opened", app=w.world.app, repo=w.repo, pull=pr, sender="bob")
    assert w.world.deliver(first).status_code == 202
    # GitHub's answers to the check's GraphQL reads are held until the push has been delivered
    slow = sim.inject_fault("POST", r"^/graphql$", "slow", times=None, delay=8 * PATIENCE)
    worker = threading.Thread(target=w.world.drain)
    worker.start()
    assert wait_for(lambda: any(r["operation"] == "graphql" for r in sim.requests_log))
    path = e2e_tests(w.files)[1]
    sim.push(w.repo, "r", calibrated({path: w.repo.files(old_sha)[path].decode()}, [path], bump=7))
    pr = sim.pull(w.repo, pr.number)
    second = sim.webhook("pull_request", "synchronize", app=w.world.app, repo=w.repo, pull=pr, sender="bob")
    assert w.world.deliver(second).status_code == 202  # while the first check waits on GitHub
    assert worker.is_alive()  # it does wait
    slow.release()
    worker.join(PATIENCE)
    assert not worker.is_alive()
    sim._faults.remove(slow)
    w.world.drain()
    old = w.latest_run(old_sha)
    assert old["conclusion"] == "cancelled" and old["output"]["title"].startswith("Superseded by a newer push")
    assert sim.review_comments(w.repo, pr.number) == [] or all(c["commit_id"] == pr.head_sha for c in sim.review_comments(w.repo, pr.number))
    new = w.latest_run(pr.head_sha)
    assert new["status"] == "completed" and new["conclusion"] != "cancelled"
    assert app_verdict(w, pr.head_sha) == local_verdict(w, w.repo.head("main"), pr.head_sha)


def test_a_head_pushed_back_after_being_superseded_is_checked_again(api_world):
    """Force-push back to a commit whose run says "Superseded": that run is not its verdict."""
    from bot.worker.handlers.pull_requests import superseded_output

    w = api_world
    sim = w.sim
    pr = w.open_pr(seed_pr(w.files, tag="b"), "b")
    old_sha = pr.head_sha
    # as the App leaves a run a newer push superseded: completed "cancelled", recorded in the store
    from bot.github.client import GitHub
    from bot.store import service as store

    settings = w.world.settings
    client = GitHub(sim.url, settings.app_id, settings.private_key).for_installation(w.world.installation.id)
    run = client.create_check_run("radixark/miles", {"name": CHECK_RUN_NAME, "head_sha": old_sha, "status": "in_progress"})
    client.update_check_run("radixark/miles", run["id"], {"status": "completed", "conclusion": "cancelled",
                                                           "output": superseded_output("f" * 40)})
    store.record_check_run(settings.database_url, repository="radixark/miles", head_sha=old_sha, name=CHECK_RUN_NAME,
                           check_run_id=run["id"], delivery_id=None, conclusion="cancelled")
    time.sleep(1.1)
    w.event("pull_request", "synchronize", pull=sim.pull(w.repo, pr.number), sender="bob")
    latest = w.latest_run(old_sha)
    assert latest["conclusion"] not in ("cancelled", None) and not latest["output"]["title"].startswith("Superseded")


def test_the_intakes_head_notes_are_buffered_coalesced_and_written_off_its_path(tmp_path):
    """bot/webhooks hands `synchronize` heads to heads.BUFFER: add() touches no store; the thread
    writes the newest head per PR; an older note never replaces a newer one; a store that fails
    loses the notes, not the delivery."""
    from bot.store import heads
    from bot.store.db import upgrade

    url = f"sqlite:///{tmp_path / 'store.db'}"
    upgrade(url)
    buffer = heads.NoteBuffer(flush_s=0.05)
    buffer.add(url, "o/r", 7, "a" * 40, "2026-08-14T20:05:50Z")
    buffer.add(url, "o/r", 7, "b" * 40, "2026-08-14T20:05:52Z")
    buffer.add(url, "o/r", 7, "c" * 40, "2026-08-14T20:05:51Z")  # arrived late, older: dropped
    assert wait_for(lambda: heads.newer_head(url, "o/r", 7, "a" * 40, "2026-08-14T20:05:50Z") == "b" * 40)
    heads.note(url, "o/r", 7, "d" * 40, "2026-08-14T20:05:49Z")  # an older push's own job: no change
    assert heads.newer_head(url, "o/r", 7, "a" * 40, "2026-08-14T20:05:50Z") == "b" * 40
    broken = heads.NoteBuffer(flush_s=0.05)
    broken.add(f"sqlite:///{tmp_path / 'missing' / 'nowhere' / 'x.db'}", "o/r", 1, "e" * 40, "2026-08-14T20:05:50Z")
    broken.flush()  # logged, never raised
