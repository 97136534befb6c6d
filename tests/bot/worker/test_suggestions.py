"""Fixes offered as ```suggestion``` review comments on the PR's diff, once per head SHA."""

from __future__ import annotations

from app import create_app
from bot.worker.queue import QueueConfig, open_queue
from bot.infra.settings import load_settings
from bot.store.db import upgrade
from bot.worker.suggestions import commentable_lines
from tests.fixtures.miles import miles_tree, test_file
from tests.simulator.fixtures import github_sim  # noqa: F401
from tests.service_support import World, env_for

TYPO = 'register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi35", labels=["long"])'
FIXED = 'register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi350", labels=["long"])'


def test_commentable_lines_are_the_right_side_of_each_hunk():
    patch = "@@ -1,3 +1,4 @@\n a\n-b\n+c\n+d\n e\n@@ -10,2 +11,2 @@\n x\n-y\n+z\n\\ No newline at end of file"
    assert commentable_lines(patch) == {1, 2, 3, 4, 11, 12}
    assert commentable_lines(None) == set()


def _world(sim, tmp_path, extra_main=None):
    gh_app = sim.create_app()
    repo = sim.create_repo("radixark/miles")
    repo.commit({**miles_tree(), **(extra_main or {})}, branch="main")
    sim.install(gh_app, "radixark/miles")
    settings = load_settings(env_for(sim, gh_app, tmp_path))
    upgrade(settings.database_url)
    queue = open_queue(settings, config=QueueConfig("suggest", None, str(tmp_path / "queue.db"), 30))
    return World(sim, gh_app, repo, None, settings, queue, create_app(settings, queue=queue), None)


def test_a_fix_on_a_diff_line_becomes_one_suggestion_even_when_the_job_runs_twice(github_sim, tmp_path):
    world = _world(github_sim, tmp_path)
    world.repo.commit({"tests/e2e/test_new.py": test_file(TYPO)}, branch="typo")
    pr = github_sim.open_pull_request(world.repo, "typo", "main", author="bob")
    opened = github_sim.webhook("pull_request", "opened", app=world.app, repo=world.repo, pull=pr, sender="bob")
    world.deliver(opened)
    world.drain()
    [comment] = github_sim.review_comments(world.repo, pr.number)
    assert comment["path"] == "tests/e2e/test_new.py" and comment["line"] == 3 and comment["side"] == "RIGHT"
    assert comment["commit_id"] == pr.head_sha
    assert f"```suggestion\n{FIXED}\n```" in comment["body"] and "REG010" in comment["body"]
    # the same event delivered again (a new delivery id) and a re-run request: no second comment
    world.deliver(github_sim.webhook("pull_request", "synchronize", app=world.app, repo=world.repo, pull=pr, sender="bob"))
    [run] = [r for r in github_sim.check_runs(world.repo, sha=pr.head_sha)]
    world.deliver(github_sim.webhook("check_run", "rerequested", app=world.app, repo=world.repo, check_run=run["id"], sender="bob"))
    world.drain()
    [again] = github_sim.check_runs(world.repo, sha=pr.head_sha)  # the re-run checked again: same verdict
    assert again["id"] == run["id"] and again["status"] == "completed"
    assert len(github_sim.review_comments(world.repo, pr.number)) == 1  # ... and found its suggestion posted


def test_a_fix_outside_the_diff_stays_an_annotation(github_sim, tmp_path):
    # The PR touches the suite inventory, so every file is checked again; the untouched file's
    # REG010 fix is on no line of the diff: it is offered in the annotation, not as a comment.
    world = _world(github_sim, tmp_path, {"tests/e2e/test_old.py": test_file(TYPO)})
    suites = miles_tree()["tests/ci/run_suite.py"].replace("CI_SUITES = {", "# reviewed\nCI_SUITES = {")
    world.repo.commit({"tests/ci/run_suite.py": suites}, branch="inventory")
    pr = github_sim.open_pull_request(world.repo, "inventory", "main", author="bob")
    world.deliver(github_sim.webhook("pull_request", "opened", app=world.app, repo=world.repo, pull=pr, sender="bob"))
    world.drain()
    assert github_sim.review_comments(world.repo, pr.number) == []
    [run] = github_sim.check_runs(world.repo, sha=pr.head_sha)
    [annotation] = [a for a in run["annotations"] if a["path"] == "tests/e2e/test_old.py"]
    assert annotation["start_line"] == 3 and FIXED in annotation["raw_details"]
