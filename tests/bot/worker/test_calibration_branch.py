"""The calibration branch stays the App's (issue 25, item 4), each attack as it was tried, on the
GitHub simulator: a maintainer's commit on the branch, someone else's branch of that name, a
write-access user's pull request from that branch with or without the App's marker, a commit that
claims the App's name; and an executable test stays executable."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.worker.calibration_pr import BRANCH, TITLE, is_app_commit, refresh
from tests.simulator.fixtures import github_sim  # noqa: F401
from tests.bot.worker.test_calibration_pr import KIMI, NOW, QWEN, REPO, _calls, _setup, records

EVIL = ".github/workflows/evil.yml"


def _app(sim):
    (app,) = sim.apps.values()
    return app


def _writes(sim, since: int) -> list[str]:
    return [c for c in _calls(sim, since) if not c.startswith("GET ") and c != "POST graphql"]  # GraphQL: blob reads


def _held_comments(sim, number: int) -> list[dict]:
    return [c for c in sim.comments(REPO, number) if "ci-registrar calibration held:" in c["body"]]


def test_a_maintainers_commit_on_the_branch_is_never_force_pushed_away(github_sim, tmp_path):
    sim = github_sim
    repo, client = _setup(sim, tmp_path)
    opened = refresh(client, REPO, records(), now=NOW)
    pr = sim.pull(REPO, opened.number)
    app_commit = repo.head(BRANCH)
    title, body = pr.title, pr.body
    # a maintainer fixes something on the App's branch
    theirs = sim.push(repo, BRANCH, {KIMI: repo.files(app_commit)[KIMI] + b"# reviewed\n"}, author="maint",
                      message="a maintainer's fix")

    mark = len(sim.requests_log)
    held = refresh(client, REPO, records(**{QWEN: 100}), now=NOW)  # new values: an update is due
    assert (held.action, held.number) == ("held", opened.number)
    assert repo.head(BRANCH) == theirs and pr.head_sha == theirs  # not force-pushed away
    assert (pr.title, pr.body, pr.state) == (title, body, "open")  # not retitled, rewritten or closed
    assert _writes(sim, mark) == ["POST issues/create-comment"]
    (comment,) = _held_comments(sim, opened.number)
    assert f"`{theirs[:7]}` by maint" in comment["body"] and comment["user"]["login"] == _app(sim).bot_login
    assert f"| `{QWEN}` | " in comment["body"] and " | 570 | " in comment["body"]  # the values it would write

    # every later refresh: the same comment, not one per refresh
    mark = len(sim.requests_log)
    assert refresh(client, REPO, records(**{QWEN: 100}), now=NOW).action == "held"
    assert _writes(sim, mark) == []
    # values that change while held: that one comment says so, edited in place
    assert refresh(client, REPO, records(**{QWEN: 200}), now=NOW).action == "held"
    (comment,) = _held_comments(sim, opened.number)
    assert " | 680 | " in comment["body"] and " | 570 | " not in comment["body"]
    # nothing left to calibrate (the App's values merged by hand): still theirs, so not closed either
    calibrated = repo.files(app_commit)
    repo.commit({p: calibrated[p] for p in calibrated if calibrated[p] != repo.files(repo.head("main")).get(p)}, branch="main")
    assert refresh(client, REPO, records(), now=NOW).action == "held"
    (comment,) = _held_comments(sim, opened.number)
    assert "It would write nothing now" in comment["body"] and sim.pull(REPO, opened.number).state == "open"

    # the branch back on the App's commit: the App resumes, in place
    repo.set_branch(BRANCH, app_commit)
    pr.head_sha = app_commit  # a force push moves the pull request's head
    resumed = refresh(client, REPO, records(**{QWEN: 100}), now=NOW)
    assert (resumed.action, resumed.number) == ("updated", opened.number)
    assert b"est_time=570," in repo.files(repo.head(BRANCH))[QWEN]
    assert len(_held_comments(sim, opened.number)) == 1


def test_a_held_pull_request_closed_leaves_the_branch_alone_until_it_is_the_apps_again(github_sim, tmp_path):
    sim = github_sim
    repo, client = _setup(sim, tmp_path)
    opened = refresh(client, REPO, records(), now=NOW)
    theirs = sim.push(repo, BRANCH, {"notes.md": "mine\n"}, author="maint")
    assert refresh(client, REPO, records(), now=NOW).action == "held"
    sim.close_pull_request(sim.pull(REPO, opened.number))
    taken = refresh(client, REPO, records(**{QWEN: 100}), now=NOW + timedelta(hours=1))
    assert taken.action == "branch-taken" and f"`{theirs[:7]}` by maint" in taken.message
    assert repo.head(BRANCH) == theirs
    # the branch deleted (GitHub's "automatically delete head branches" does it on close): resumed
    del repo.branches[BRANCH]
    again = refresh(client, REPO, records(**{QWEN: 100}), now=NOW + timedelta(hours=2))
    assert again.action == "opened" and again.number != opened.number
    assert is_app_commit(client.get_json(f"/repos/{REPO}/commits/{repo.head(BRANCH)}", "/repos/{owner}/{repo}/commits/{ref}"),
                         _app(sim).bot_login)


def test_a_commit_that_claims_the_apps_name_is_not_the_apps(github_sim, tmp_path):
    sim = github_sim
    repo, client = _setup(sim, tmp_path)
    opened = refresh(client, REPO, records(), now=NOW)
    bot = _app(sim).bot_login
    address = f"{_app(sim).id}+{bot}@users.noreply.github.com"
    forged = sim.push(repo, BRANCH, {EVIL: "on: push\n"}, author=bot, email=address, committer=bot, committer_email=address)
    listed = client.get_json(f"/repos/{REPO}/commits/{forged}", "/repos/{owner}/{repo}/commits/{ref}")
    assert listed["author"]["login"] == bot and listed["committer"]["login"] == bot  # GitHub links by address
    assert listed["commit"]["verification"]["verified"] is False  # but only GitHub signs the App's
    assert refresh(client, REPO, records(**{QWEN: 100}), now=NOW).action == "held"
    assert repo.head(BRANCH) == forged  # untouched, and nothing of the App's on top of it
    assert f"`{forged[:7]}` by {bot}" in _held_comments(sim, opened.number)[0]["body"]


def test_someone_elses_branch_of_that_name_is_not_moved(github_sim, tmp_path):
    sim = github_sim
    repo, client = _setup(sim, tmp_path)
    theirs = repo.commit({"scratch.txt": "mine\n"}, branch=BRANCH, author="alice")
    mark = len(sim.requests_log)
    out = refresh(client, REPO, records(), now=NOW)
    assert out.action == "branch-taken" and f"`{theirs[:7]}` by alice" in out.message and BRANCH in out.message
    assert repo.head(BRANCH) == theirs and not sim.pulls
    assert _writes(sim, mark) == []


def test_a_branch_of_that_name_behind_the_default_branch_holds_nothing_to_lose(github_sim, tmp_path):
    sim = github_sim
    repo, client = _setup(sim, tmp_path)
    repo.set_branch(BRANCH, repo.head("main"))  # made by someone, no commit of their own on it
    out = refresh(client, REPO, records(), now=NOW)
    assert out.action == "opened"
    assert repo.store.commits[repo.head(BRANCH)].parents == [repo.head("main")]


def _attackers_pull(sim, repo, body: str):
    """A write-access user's pull request from the App's branch name, carrying a workflow."""
    sim.set_permission(repo, "writer", "write")
    head = repo.commit({EVIL: "on: pull_request_target\njobs: {}\n"}, branch=BRANCH, author="writer")
    return sim.open_pull_request(repo, BRANCH, "main", author="writer", title=TITLE, body=body), head


def test_a_write_users_pull_request_with_the_apps_marker_is_not_adopted(github_sim, tmp_path):
    sim = github_sim
    repo, client = _setup(sim, tmp_path)
    # the marker copied from the App's own (earlier, closed) pull request: the same values
    first = refresh(client, REPO, records(), now=NOW)
    copied = sim.pull(REPO, first.number).body
    sim.close_pull_request(sim.pull(REPO, first.number))
    del repo.branches[BRANCH]
    evil, head = _attackers_pull(sim, repo, copied)
    for values in (records(), records(**{QWEN: 100})):  # the same values, then new ones
        mark = len(sim.requests_log)
        out = refresh(client, REPO, values, now=NOW)
        assert out.action in ("kept-closed", "branch-taken") and out.number != evil.number
        assert _writes(sim, mark) == []
    assert out.action == "branch-taken" and f"`{head[:7]}` by writer" in out.message
    assert (evil.title, evil.body, evil.head_sha, evil.state) == (TITLE, copied, head, "open")
    assert repo.head(BRANCH) == head and sim.comments(REPO, evil.number) == []


def test_a_write_users_pull_request_without_the_marker_is_never_edited(github_sim, tmp_path):
    sim = github_sim
    repo, client = _setup(sim, tmp_path)
    evil, head = _attackers_pull(sim, repo, "my own calibration")
    evil.title = "Faster CI"
    mark = len(sim.requests_log)
    out = refresh(client, REPO, records(), now=NOW)
    assert out.action == "branch-taken"
    assert _writes(sim, mark) == []
    assert (evil.title, evil.body, evil.head_sha) == ("Faster CI", "my own calibration", head)
    assert repo.files(repo.head(BRANCH))[EVIL].startswith(b"on: pull_request_target")


def test_a_pull_request_someone_else_opened_from_the_apps_own_commit_is_not_moved(github_sim, tmp_path):
    sim = github_sim
    repo, client = _setup(sim, tmp_path)
    first = refresh(client, REPO, records(), now=NOW)
    sim.close_pull_request(sim.pull(REPO, first.number))
    app_commit = repo.head(BRANCH)
    theirs = sim.open_pull_request(repo, BRANCH, "main", author="writer", title="take it over")
    out = refresh(client, REPO, records(**{QWEN: 100}), now=NOW)
    assert out.action == "branch-taken" and f"pull request #{theirs.number}" in out.message
    assert repo.head(BRANCH) == app_commit and theirs.title == "take it over"


def test_an_executable_test_stays_executable(github_sim, tmp_path):
    sim = github_sim
    repo, client = _setup(sim, tmp_path)
    repo.commit({KIMI: repo.files(repo.head("main"))[KIMI]}, branch="main", modes={KIMI: "100755"}, message="chmod +x")
    out = refresh(client, REPO, records(), now=NOW)
    assert out.action == "opened"
    modes = {p: m for p, m, kind, _s, _z in repo.store.walk_tree(repo.store.commits[repo.head(BRANCH)].tree, True) if kind == "blob"}
    assert modes[KIMI] == "100755" and modes[QWEN] == "100644"
    assert b"est_time=740," in repo.files(repo.head(BRANCH))[KIMI]


def test_a_files_mode_is_found_when_the_listing_is_cut_short(github_sim, tmp_path):
    from bot.worker.calibration_pr import _mode

    sim = github_sim
    repo, client = _setup(sim, tmp_path)
    head = repo.commit({QWEN: repo.files(repo.head("main"))[QWEN]}, branch="main", modes={QWEN: "100755"}, message="chmod +x")
    root = repo.store.commits[head].tree
    cut = {"sha": root, "truncated": True, "tree": []}  # GitHub's listing cut before these paths
    mark = len(sim.requests_log)
    assert _mode(client, REPO, cut, QWEN) == "100755" and _mode(client, REPO, cut, KIMI) == "100644"
    assert _calls(sim, mark) == ["GET git/get-tree"] * (2 * QWEN.count("/") + 2)  # one level per directory
    for missing in ("test/registered/amd/nope.py", "nope/x.py"):
        with pytest.raises(ValueError):
            _mode(client, REPO, cut, missing)
    with pytest.raises(ValueError):
        _mode(client, REPO, {"sha": root, "truncated": False, "tree": []}, QWEN)


def test_the_simulator_signs_and_attributes_commits_as_github_does(github_sim, tmp_path):
    """What the branch check rests on, as GitHub documents it: a commit the API makes for an App
    with no author or committer is the bot's and signed; one with a custom author is not signed;
    a tree entry's mode replaces the base tree's."""
    sim = github_sim
    repo, client = _setup(sim, tmp_path)
    bot = _app(sim).bot_login
    head = repo.head("main")
    base = client.tree(REPO, head)["sha"]
    blob = client.create_blob(REPO, b"#!/bin/sh\n")
    tree = client.create_tree(REPO, base, [{"path": "run.sh", "mode": "100755", "type": "blob", "sha": blob}])
    plain = client.create_tree(REPO, tree, [{"path": "run.sh", "mode": "100644", "type": "blob", "sha": blob}])
    assert {e["path"]: e["mode"] for e in client.tree(REPO, tree)["tree"]}["run.sh"] == "100755"
    assert {e["path"]: e["mode"] for e in client.tree(REPO, plain)["tree"]}["run.sh"] == "100644"
    own = client.post_json(f"/repos/{REPO}/git/commits", "/repos/{owner}/{repo}/git/commits",
                           {"message": "m", "tree": tree, "parents": [head]})
    custom = client.post_json(f"/repos/{REPO}/git/commits", "/repos/{owner}/{repo}/git/commits",
                              {"message": "m", "tree": tree, "parents": [head],
                               "author": {"name": bot, "email": own["author"]["email"]}})
    assert own["verification"]["verified"] is True and own["author"]["name"] == own["committer"]["name"] == bot
    assert custom["verification"]["verified"] is False
    repo.set_branch("x", custom["sha"])
    compared = client.compare(REPO, "main", "x")
    (listed,) = compared["commits"]
    assert listed["author"]["login"] == bot and not is_app_commit(listed, bot)
    repo.set_branch("y", own["sha"])
    (listed,) = client.compare(REPO, "main", "y")["commits"]
    assert is_app_commit(listed, bot)
    assert client.github.bot_login() == bot


def _web_edit(sim, repo, author_login: str, author_email: str) -> str:
    """A commit made on GitHub's web pages: GitHub signs it, as committer web-flow."""
    return sim.push(repo, BRANCH, {"notes.md": f"edited by {author_login}\n"}, author=author_login, email=author_email,
                    committer="GitHub", committer_email="noreply@github.com", signed=True)


def test_a_signed_web_edit_is_not_the_apps_whoever_it_names_as_author(github_sim, tmp_path):
    sim = github_sim
    repo, client = _setup(sim, tmp_path)
    opened = refresh(client, REPO, records(), now=NOW)
    bot = _app(sim).bot_login
    # a maintainer's edit in the browser: verified, but authored by them
    theirs = _web_edit(sim, repo, "maint", "maint@users.noreply.github.com")
    listed = client.get_json(f"/repos/{REPO}/commits/{theirs}", "/repos/{owner}/{repo}/commits/{ref}")
    assert listed["commit"]["verification"]["verified"] is True and listed["committer"]["login"] == "web-flow"
    assert refresh(client, REPO, records(**{QWEN: 100}), now=NOW).action == "held" and repo.head(BRANCH) == theirs
    # the App's own authorship kept by a web edit (a revert, "update branch"): committed by web-flow
    pr = sim.pull(REPO, opened.number)
    repo.set_branch(BRANCH, pr.base_sha)
    pr.head_sha = pr.base_sha
    kept = _web_edit(sim, repo, bot, f"{_app(sim).id}+{bot}@users.noreply.github.com")
    assert refresh(client, REPO, records(**{QWEN: 100}), now=NOW).action == "held" and repo.head(BRANCH) == kept


def test_a_copied_held_marker_in_someone_elses_comment_is_not_the_apps(github_sim, tmp_path):
    sim = github_sim
    repo, client = _setup(sim, tmp_path)
    opened = refresh(client, REPO, records(), now=NOW)
    theirs = sim.push(repo, BRANCH, {"notes.md": "x\n"}, author="maint")
    fake = f"nothing to see\n<!-- ci-registrar calibration held: {theirs} {'0' * 16} -->"
    sim.add_comment(repo, opened.number, fake, author="maint")
    assert refresh(client, REPO, records(), now=NOW).action == "held"
    mine = [c for c in _held_comments(sim, opened.number) if c["user"]["login"] == _app(sim).bot_login]
    assert len(mine) == 1 and [c["body"] for c in sim.comments(REPO, opened.number) if c["user"]["login"] == "maint"] == [fake]


def test_many_commits_of_others_are_named_five_and_counted(github_sim, tmp_path):
    sim = github_sim
    repo, client = _setup(sim, tmp_path)
    opened = refresh(client, REPO, records(), now=NOW)
    pushed = [sim.push(repo, BRANCH, {f"n{i}.md": "x\n"}, author=f"dev{i}") for i in range(7)]
    out = refresh(client, REPO, records(), now=NOW)
    assert out.action == "held"
    (comment,) = _held_comments(sim, opened.number)
    assert f"(`{pushed[0][:7]}` by dev0, `{pushed[1][:7]}` by dev1, " in comment["body"]
    assert f"`{pushed[4][:7]}` by dev4 and 2 more)" in comment["body"] and "dev5" not in comment["body"]
    assert out.message == f"someone else pushed to {BRANCH}: " + comment["body"].split("(", 1)[1].split(")", 1)[0]


def test_a_branch_longer_than_github_lists_is_not_the_apps(github_sim, tmp_path):
    """GitHub's comparison lists 250 commits: 251 of the App's own are more than it can vouch
    for, so the branch is left alone (the App never makes more than one)."""
    sim = github_sim
    repo, client = _setup(sim, tmp_path)
    opened = refresh(client, REPO, records(), now=NOW)
    sha = repo.head(BRANCH)
    tree = repo.store.commits[sha].tree
    for i in range(250):
        sha = client.create_commit(REPO, f"app {i}", tree, [sha])
    client.update_ref(REPO, BRANCH, sha)
    compared = client.compare(REPO, "main", BRANCH)
    assert compared["total_commits"] == 251 and len(compared["commits"]) == 250
    assert all(is_app_commit(c, _app(sim).bot_login) for c in compared["commits"])
    out = refresh(client, REPO, records(**{QWEN: 100}), now=NOW)
    assert (out.action, out.number) == ("held", opened.number) and repo.head(BRANCH) == sha


# -- the race: a push between the App's read of the branch and its ref update (issue 37 item 1) -----
def _push_when_the_app_commits(sim, repo, client, files: dict, author: str = "maint") -> list[str]:
    """The maintainer's push lands after the App read the branch (its comparison with the default
    branch) and before its ref update: right after GitHub made the App's new commit."""
    real, pushed = client.create_commit, []

    def create_commit(*args, **kwargs):
        sha = real(*args, **kwargs)
        if not pushed:
            pushed.append(sim.push(repo, BRANCH, files, author=author, message="a maintainer's fix"))
        return sha

    client.create_commit = create_commit
    return pushed


def _ref_updates(sim, since: int) -> list[int]:
    return [e["status"] for e in sim.requests_log[since:] if e["operation"] == "git/update-ref"]


def test_a_push_between_the_apps_read_and_its_write_is_never_overwritten(github_sim, tmp_path):
    sim = github_sim
    repo, client = _setup(sim, tmp_path)
    opened = refresh(client, REPO, records(), now=NOW)
    pr = sim.pull(REPO, opened.number)
    app_commit, title, body = repo.head(BRANCH), pr.title, pr.body
    pushed = _push_when_the_app_commits(sim, repo, client, {"notes.md": "reviewed\n"})

    mark = len(sim.requests_log)
    held = refresh(client, REPO, records(**{QWEN: 100}), now=NOW)  # new values: an update is due
    (theirs,) = pushed
    assert (held.action, held.number) == ("held", opened.number)
    assert _ref_updates(sim, mark) == [422]  # GitHub refused the update: not a fast-forward
    assert repo.head(BRANCH) == theirs and pr.head_sha == theirs
    assert repo.store.commits[theirs].parents == [app_commit]  # their commit is on the branch, as pushed
    assert (pr.title, pr.body, pr.state) == (title, body, "open")
    (comment,) = _held_comments(sim, opened.number)  # the one comment the hold writes
    assert f"`{theirs[:7]}` by maint" in comment["body"] and " | 570 | " in comment["body"]
    assert f"held: {theirs} " in comment["body"]  # about the branch as it is now
    assert "The values it would write now:\n\n| file | line | old | new | why |\n| --- | ---: | ---: | ---: | --- |\n| " in comment["body"]
    # the next refresh sees their commit from the start: held, nothing written
    mark = len(sim.requests_log)
    assert refresh(client, REPO, records(**{QWEN: 100}), now=NOW).action == "held"
    assert _writes(sim, mark) == [] and len(_held_comments(sim, opened.number)) == 1


def test_a_push_the_pull_request_listing_does_not_show_yet_is_never_overwritten(github_sim, tmp_path):
    sim = github_sim
    repo, client = _setup(sim, tmp_path)
    opened = refresh(client, REPO, records(), now=NOW)
    pr = sim.pull(REPO, opened.number)
    app_commit = repo.head(BRANCH)
    theirs = sim.push(repo, BRANCH, {KIMI: repo.files(app_commit)[KIMI] + b"# reviewed\n"}, author="maint")
    pr.head_sha = app_commit  # GitHub's pull request listing still shows the App's commit as the head
    mark = len(sim.requests_log)
    held = refresh(client, REPO, records(**{QWEN: 100}), now=NOW)
    assert held.action == "held" and _ref_updates(sim, mark) == [422]
    assert repo.head(BRANCH) == theirs and repo.files(theirs)[KIMI].endswith(b"# reviewed\n")
    (comment,) = _held_comments(sim, opened.number)
    assert f"`{theirs[:7]}` by maint" in comment["body"]


def test_a_push_before_the_apps_write_on_a_branch_without_its_pull_request_leaves_it_theirs(github_sim, tmp_path):
    sim = github_sim
    repo, client = _setup(sim, tmp_path)
    first = refresh(client, REPO, records(), now=NOW)
    sim.close_pull_request(sim.pull(REPO, first.number))  # closed: the branch stays, the App's
    pushed = _push_when_the_app_commits(sim, repo, client, {"notes.md": "mine\n"}, author="alice")
    mark = len(sim.requests_log)
    out = refresh(client, REPO, records(**{QWEN: 100}), now=NOW + timedelta(hours=1))  # new values: a new PR is due
    (theirs,) = pushed
    assert out.action == "branch-taken" and f"`{theirs[:7]}` by alice" in out.message
    assert _ref_updates(sim, mark) == [422] and repo.head(BRANCH) == theirs
    assert [p.number for p in sim.pulls.values() if p.head_ref == BRANCH] == [first.number]  # nothing opened


def test_an_update_is_a_fast_forward_sent_without_force(github_sim, tmp_path):
    sim = github_sim
    repo, client = _setup(sim, tmp_path)
    refresh(client, REPO, records(), now=NOW)
    app_commit = repo.head(BRANCH)
    repo.commit({"README.md": "moved on\n"}, branch="main")
    sent = []
    real = client.update_ref

    def update_ref(*args, **kwargs):
        sent.append(kwargs.get("force"))
        return real(*args, **kwargs)

    client.update_ref = update_ref
    assert refresh(client, REPO, records(**{QWEN: 100}), now=NOW).action == "updated"
    assert sent == [False]
    assert app_commit in repo.store.ancestors(repo.head(BRANCH))  # the App's last commit stays in the history


# -- the same race through the schedule, on each store (issue 37 item 5) -------------------------------
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_the_schedule_never_pushes_over_a_maintainer_on_either_store(github_sim, tmp_path, backend, request):
    """The worker's periodic pass (`sweep`: one worker per repository under the store's lock, the
    outcome recorded in the store) with the maintainer's push landing on GitHub between the App's
    new commit and its ref update: the update is refused, the App holds with its one comment and
    the store records `held`, on SQLite and on PostgreSQL alike."""
    import json
    from datetime import datetime, timezone

    from bot.github.client import GitHub
    from bot.github.retry import RetryPolicy
    from bot.store import calibration as runs
    from bot.store import service as store
    from bot.store.db import upgrade
    from bot.worker.calibration_pr import sweep
    from bot.durations.ingest import ingest_json
    from tests.patience import PATIENCE

    sim = github_sim
    url = request.getfixturevalue("pg_url") if backend == "postgresql" else f"sqlite:///{tmp_path / 'store.db'}"
    upgrade(url)
    repo, _ = _setup(sim, tmp_path)
    (inst,) = sim.installations.values()
    store.record_installation(url, installation_id=inst.id, account="sgl-project", target_type="Organization",
                              repository_selection="selected", repositories=[REPO])
    now = datetime.now(timezone.utc)
    shift = now - timedelta(days=2) - datetime(2026, 6, 29, 4, tzinfo=timezone.utc)  # the fixture's runs, lately
    rows = records()
    for r in rows:
        r["measured_at"] = (datetime.fromisoformat(r["measured_at"].replace("Z", "+00:00")) + shift).isoformat()
    assert ingest_json(url, json.dumps(rows)).inserted == len(rows)
    github = GitHub(sim.url, str(_app(sim).id), _app(sim).private_key_pem,
                    policy=RetryPolicy(base_s=0.01, read_timeout_s=PATIENCE), blob_dir=tmp_path / "blobs")

    ((_, opened),) = sweep(github, url, now=now)
    assert opened.action == "opened"
    # a week later the default branch moved KIMI's est_time: the values to write changed, an update is due
    kimi = repo.files(repo.head("main"))[KIMI]
    repo.commit({KIMI: kimi.replace(b"est_time=3600", b"est_time=4600")}, branch="main")
    app_commit, pushed = repo.head(BRANCH), []
    create_commit = sim.op_git_create_commit

    def maintainer_pushes_meanwhile(req, params, body):
        answer = create_commit(req, params, body)
        if not pushed:  # GitHub made the App's commit; the maintainer's push lands before its ref update
            pushed.append(sim.push(repo, BRANCH, {"notes.md": "reviewed\n"}, author="maint"))
        return answer

    sim.op_git_create_commit = maintainer_pushes_meanwhile
    mark = len(sim.requests_log)
    ((_, held),) = sweep(github, url, now=now + timedelta(days=7))
    (theirs,) = pushed
    assert (held.action, held.number) == ("held", opened.number)
    assert _ref_updates(sim, mark) == [422] and repo.head(BRANCH) == theirs
    assert repo.store.commits[theirs].parents == [app_commit]
    (comment,) = _held_comments(sim, opened.number)
    assert f"`{theirs[:7]}` by maint" in comment["body"]
    with runs.session_scope(url) as session:
        row = session.get(runs.CalibrationRun, REPO)
        assert (row.outcome, row.pull_number) == ("held", opened.number)
    assert runs.due(url, [REPO], now + timedelta(days=7)) == []  # recorded: not due again until its interval


def test_a_branch_deleted_between_the_apps_read_and_its_write_is_not_recreated_by_that_refresh(github_sim, tmp_path):
    sim = github_sim
    repo, client = _setup(sim, tmp_path)
    refresh(client, REPO, records(), now=NOW)
    real = client.create_commit

    def create_commit(*args, **kwargs):
        sha = real(*args, **kwargs)
        repo.branches.pop(BRANCH, None)  # deleted on GitHub before the App's ref update
        return sha

    client.create_commit = create_commit
    mark = len(sim.requests_log)
    out = refresh(client, REPO, records(**{QWEN: 100}), now=NOW)
    assert out.action == "branch-deleted" and "was deleted while the App was writing to it" in out.message
    assert _ref_updates(sim, mark) == [422] and BRANCH not in repo.branches


def test_the_apps_own_commit_between_its_read_and_its_write_is_left_for_the_next_refresh(github_sim, tmp_path):
    """Another worker's refresh moved the branch to a commit of the App's meanwhile: the update is
    refused, nothing of anyone else's is there, so no hold and no comment: `unchanged`."""
    sim = github_sim
    repo, client = _setup(sim, tmp_path)
    opened = refresh(client, REPO, records(), now=NOW)
    real, moved = client.create_commit, []

    def create_commit(repo_name, message, tree, parents, **kwargs):
        sha = real(repo_name, message, tree, parents, **kwargs)
        if not moved:  # the other worker's commit, made through the API as the App, fast-forwarded
            head = repo.head(BRANCH)
            other = real(REPO, "another worker's refresh", client.tree(REPO, head)["sha"], [head])
            client.update_ref(REPO, BRANCH, other)
            moved.append(other)
        return sha

    client.create_commit = create_commit
    mark = len(sim.requests_log)
    out = refresh(client, REPO, records(**{QWEN: 100}), now=NOW)
    assert (out.action, out.number) == ("unchanged", opened.number)
    assert _ref_updates(sim, mark) == [200, 422] and repo.head(BRANCH) == moved[0]
    assert _held_comments(sim, opened.number) == []
