"""The App's calibration pull request on the GitHub simulator (real HTTP, GitHub's description
validating every request and answer): open, update in place, nothing left, closed by a
maintainer, permission missing; and what an update costs in GitHub calls."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from bot.worker.calibration_pr import BRANCH, CLOSED_NOTICE, refresh
from bot.github.client import GitHub
from bot.github.retry import RetryPolicy
from tests.patience import PATIENCE
from tests.simulator.fixtures import github_sim  # noqa: F401

from tests.bot.worker.calibration_support import CONFIG, KIMI, NOW, QWEN, REPO, _files, records  # noqa: F401 - re-exported to the branch tests



def _setup(sim, tmp_path, permissions=None):
    app = sim.create_app(permissions={"checks": "write", "contents": "write", "pull_requests": "write",
                                      "issues": "write", "actions": "write", "metadata": "read"})
    repo = sim.create_repo(REPO, default_branch="main")
    repo.commit(_files(), branch="main", message="the suite as it timed out")
    inst = sim.install(app, REPO, permissions=permissions)
    github = GitHub(sim.url, str(app.id), app.private_key_pem, policy=RetryPolicy(base_s=0.01, read_timeout_s=PATIENCE),
                    blob_dir=tmp_path / "blobs")
    return repo, github.for_installation(inst.id)


def _calls(sim, since: int) -> list[str]:
    """The GitHub requests after `since`, the installation token's (once an hour) left out."""
    return [f"{e['method']} {e['operation']}" for e in sim.requests_log[since:] if e["operation"] != "apps/create-installation-access-token"]


def test_open_update_in_place_and_close_when_nothing_is_left(github_sim, tmp_path):
    sim = github_sim
    repo, client = _setup(sim, tmp_path)
    main_before = repo.head("main")

    out = refresh(client, REPO, records(), now=NOW)
    assert out.action == "opened" and out.changes == 4
    pr = sim.pull(REPO, out.number)
    assert (pr.head_ref, pr.base_ref, pr.state, pr.author) == (BRANCH, "main", "open", "ci-registrar[bot]")
    assert repo.head("main") == main_before  # the default branch is never written
    head_files = repo.files(repo.head(BRANCH))
    assert b"register_amd_ci(est_time=740," in head_files[KIMI] and b"register_amd_ci(est_time=450," in head_files[QWEN]
    # only the est_time numbers differ from the default branch
    changed = {p for p, c in head_files.items() if repo.files(main_before).get(p) != c}
    assert changed == {KIMI, QWEN, "test/registered/amd/test_deepseek_r1_mxfp4_8gpu.py",
                       "test/registered/cuda_graph/breakable/test_breakable_cuda_graph.py"}
    first_commit = repo.head(BRANCH)
    commit = repo.store.commits[first_commit]
    assert commit.parents == [main_before] and commit.author == "ci-registrar[bot]"
    assert "### `stage-c-test-large-8-gpu-amd-mi35x`" in pr.body
    assert f"| `{KIMI}` | 3600 | 740 | 10 | 637 | 642 | over-estimated |" in pr.body
    assert "Suite total est_time: 14520 s -> 6300 s over 5 files." in pr.body  # 1310 + 740 + 3600 + 450 + 200
    assert ".github/workflows/pr-test-amd.yml: 2 shards, timeout 60 min; predicted heaviest shard 66 min -> 44 min" in pr.body

    # the same data again: nothing written
    mark = len(sim.requests_log)
    assert refresh(client, REPO, records(), now=NOW).action == "unchanged"
    assert not [c for c in _calls(sim, mark) if not c.startswith("GET ")]

    # a week later: main moved on, and Qwen3-Coder got slower: the same pull request, its
    # branch moved to a commit on the new main, its body rewritten
    repo.commit({"README.md": "unrelated\n"}, branch="main", message="an unrelated change")
    mark = len(sim.requests_log)
    out2 = refresh(client, REPO, records(**{QWEN: 100}), now=NOW)
    assert (out2.action, out2.number) == ("updated", out.number)
    calls = _calls(sim, mark)
    # pinned: an update reads the default branch (repository, ref, tree; the files' blobs are
    # cached by SHA, a worker that has not seen them adds one GraphQL request), finds its pull
    # request, checks that every commit on its branch is still the App's, and writes one blob per
    # changed file, a tree, a commit, the ref and the body
    assert calls == [
        "GET repos/get", "GET git/get-ref", "GET git/get-tree",
        "GET pulls/list", "GET repos/compare-commits-with-basehead",
        "POST git/create-blob", "POST git/create-blob", "POST git/create-blob", "POST git/create-blob",
        "POST git/create-tree", "POST git/create-commit", "PATCH git/update-ref", "PATCH pulls/update",
    ], calls
    # a fast-forward: the App's last commit, with the new main merged in (never a force-push)
    assert repo.store.commits[repo.head(BRANCH)].parents == [first_commit, repo.head("main")]
    assert {p for p, c in repo.files(repo.head(BRANCH)).items() if repo.files(repo.head("main")).get(p) != c} == changed
    assert b"register_amd_ci(est_time=570," in repo.files(repo.head(BRANCH))[QWEN]
    assert len([p for p in sim.pulls.values() if p.head_ref == BRANCH]) == 1

    # the values land on the default branch (merged by hand): nothing is left, the PR is closed
    repo.commit({p: repo.files(repo.head(BRANCH))[p] for p in changed}, branch="main", message="calibrated by hand")
    out3 = refresh(client, REPO, records(**{QWEN: 100}), now=NOW)
    assert (out3.action, out3.number) == ("closed", out.number)
    assert sim.pull(REPO, out.number).state == "closed"
    assert [c["body"] for c in sim.comments(REPO, out.number)] == [CLOSED_NOTICE]
    assert refresh(client, REPO, records(**{QWEN: 100}), now=NOW).action == "nothing"


def test_closed_by_a_maintainer_it_stays_closed_until_the_values_change(github_sim, tmp_path):
    sim = github_sim
    repo, client = _setup(sim, tmp_path)
    first = refresh(client, REPO, records(), now=NOW)
    sim.close_pull_request(sim.pull(REPO, first.number))  # a maintainer does not want it
    again = refresh(client, REPO, records(), now=NOW)
    assert again.action == "kept-closed" and again.number == first.number
    assert sim.pull(REPO, first.number).state == "closed"
    assert len([p for p in sim.pulls.values() if p.head_ref == BRANCH]) == 1
    # new values: a new pull request (the old branch is moved, not created again)
    later = refresh(client, REPO, records(**{QWEN: 100}), now=NOW + timedelta(hours=1))
    assert later.action == "opened" and later.number != first.number
    assert sim.pull(REPO, later.number).state == "open"


def test_without_contents_write_a_notice_and_nothing_fails(github_sim, tmp_path):
    sim = github_sim
    repo, client = _setup(sim, tmp_path, permissions={"checks": "write", "contents": "read", "pull_requests": "write",
                                                      "issues": "write", "metadata": "read"})
    mark = len(sim.requests_log)
    out = refresh(client, REPO, records(), now=NOW)
    assert out.action == "no-permission" and "contents: write" in out.message and "ci-registrar calibrate" in out.message
    assert BRANCH not in repo.branches and not sim.pulls
    refused = [e for e in sim.requests_log[mark:] if e["status"] == 403]
    assert [e["operation"] for e in refused] == ["git/create-blob"]  # one refused write, then it stops


def test_without_calibration_pull_requests_nothing_is_written(github_sim, tmp_path):
    sim = github_sim
    repo, client = _setup(sim, tmp_path)
    repo.commit({".github/ci-registrar.yml": CONFIG.replace("pull_requests: true", "pull_requests: false")}, branch="main")
    mark = len(sim.requests_log)
    out = refresh(client, REPO, records(), now=NOW)
    assert out.action == "disabled" and not sim.pulls
    assert [c for c in _calls(sim, mark) if not c.startswith("GET ")] == []


def test_the_simulator_refuses_what_github_refuses(github_sim, tmp_path):
    sim = github_sim
    repo, client = _setup(sim, tmp_path)
    from bot.github.retry import GitHubError

    head = repo.head("main")
    with pytest.raises(GitHubError) as exc:
        client.create_ref(REPO, "main", head)
    assert exc.value.status == 422  # Reference already exists
    older = repo.store.commits[head].parents[0] if repo.store.commits[head].parents else None
    blob = client.create_blob(REPO, b"x = 1\n")
    tree = client.create_tree(REPO, client.tree(REPO, head)["sha"], [{"path": "x.py", "mode": "100644", "type": "blob", "sha": blob}])
    side = client.create_commit(REPO, "side", tree, [])  # no parent: not a fast-forward of main
    with pytest.raises(GitHubError) as exc:
        client.update_ref(REPO, "main", side)
    assert exc.value.status == 422 and older is None
    with pytest.raises(GitHubError) as exc:
        client.create_pull(REPO, title="t", head="sgl-project:main", base="main", body="")
    assert exc.value.status == 422  # no commits between main and main


# -- through the App: the command and the schedule ------------------------------------------------


def _world(sim, tmp_path):
    import uuid

    from app import create_app
    from bot.durations.ingest import ingest_json
    from bot.worker.queue import QueueConfig, open_queue
    from bot.infra.settings import load_settings
    from bot.store.db import upgrade
    from tests.service_support import World, env_for

    gh_app = sim.create_app(permissions={"checks": "write", "contents": "write", "pull_requests": "write",
                                         "issues": "write", "actions": "write", "metadata": "read"})
    repo = sim.create_repo(REPO, default_branch="main")
    repo.commit(_files(), branch="main")
    inst = sim.install(gh_app, REPO)
    repo.commit({"README.md": "a change\n"}, branch="feature")
    pr = sim.open_pull_request(repo, "feature", "main", author="bob")
    sim.set_permission(repo, "maint", "maintain")
    sim.set_permission(repo, "reader", "read")
    settings = load_settings(env_for(sim, gh_app, tmp_path))
    upgrade(settings.database_url)
    # the fixture's runs, moved to the last days (the App judges the window as of now)
    shift = datetime.now(timezone.utc) - timedelta(days=2) - datetime(2026, 6, 29, 4, tzinfo=timezone.utc)
    rows = records()
    for r in rows:
        r["measured_at"] = (datetime.fromisoformat(r["measured_at"].replace("Z", "+00:00")) + shift).isoformat()
    assert ingest_json(settings.database_url, json.dumps(rows)).inserted == len(rows)
    queue = open_queue(settings, config=QueueConfig(f"cal-{uuid.uuid4().hex[:8]}", None, str(tmp_path / "queue.db"), 30))
    return World(sim, gh_app, repo, inst, settings, queue, create_app(settings, queue=queue), pr)


def _comment(world, body, author):
    sim = world.sim
    c = sim.add_comment(world.repo, world.pr.number, body, author=author)
    d = sim.webhook("issue_comment", "created", app=world.app, repo=world.repo, pull=sim.pull(world.repo, world.pr.number), comment=c)
    assert world.deliver(d).status_code == 202
    world.drain()
    mine = world.app.bot_login
    return [x["body"] for x in sim.comments(world.repo, world.pr.number) if x["user"]["login"] == mine]


def test_a_maintainers_command_refreshes_it_now_and_anyone_elses_is_refused(github_sim, tmp_path):
    sim = github_sim
    world = _world(sim, tmp_path)
    replies = _comment(world, "please\n/calibrate-est-time\n", "reader")
    assert replies == ["@reader only a maintainer may refresh the calibration pull request (GitHub reports your role as `read`)."]
    assert not [p for p in sim.pulls.values() if p.head_ref == BRANCH]
    assert _comment(world, "`/calibrate-est-time` in a sentence is not the command", "maint") == replies
    replies = _comment(world, "/calibrate-est-time", "maint")
    (cal,) = [p for p in sim.pulls.values() if p.head_ref == BRANCH]
    assert replies[-1] == f"@maint opened the calibration pull request #{cal.number} (4 est_time values)."
    assert b"est_time=740" in world.repo.files(world.repo.head(BRANCH))[KIMI]


def test_the_schedule_refreshes_each_repository_when_due(github_sim, tmp_path):
    from bot.worker.calibration_pr import sweep
    from bot.github.client import GitHub
    from bot.store import service as store

    sim = github_sim
    world = _world(sim, tmp_path)
    url = world.settings.database_url
    store.record_installation(url, installation_id=world.installation.id, account="sgl-project", target_type="Organization",
                              repository_selection="selected", repositories=[REPO])
    github = GitHub(sim.url, str(world.app.id), world.app.private_key_pem, policy=RetryPolicy(base_s=0.01, read_timeout_s=PATIENCE))
    now = datetime.now(timezone.utc)
    (first,) = sweep(github, url, now=now)
    assert first[0] == REPO and first[1].action == "opened"
    assert sweep(github, url, now=now + timedelta(days=6)) == []  # weekly: not due yet
    (again,) = sweep(github, url, now=now + timedelta(days=7))
    assert again[1].action == "unchanged" and again[1].number == first[1].number


def test_the_schedule_leaves_repositories_without_durations_alone(github_sim, tmp_path):
    from bot.worker.calibration_pr import sweep
    from bot.github.client import GitHub
    from bot.store import service as store

    sim = github_sim
    world = _world(sim, tmp_path)
    url = world.settings.database_url
    other = sim.create_repo("sgl-project/other", default_branch="main")
    other.commit(_files(), branch="main")
    sim.install(world.app, "sgl-project/other")
    store.record_installation(url, installation_id=world.installation.id, account="sgl-project", target_type="Organization",
                              repository_selection="selected", repositories=["sgl-project/other"])
    github = GitHub(sim.url, str(world.app.id), world.app.private_key_pem, policy=RetryPolicy(base_s=0.01, read_timeout_s=PATIENCE))
    mark = len(sim.requests_log)
    assert sweep(github, url) == []  # sgl-project/other has no stored durations
    assert _calls(sim, mark) == []
