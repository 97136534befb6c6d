"""The GitHub simulator behaves like GitHub and keeps every exchange inside GitHub's own description."""

from __future__ import annotations

import base64
import json
import time
from urllib.parse import parse_qs, urlsplit

import jwt
import pytest
import requests
from github import Auth, Github, GithubIntegration
from gidgethub.apps import get_jwt
from gidgethub.sansio import Event

from tests.patience import PATIENCE
from tests.simulator import GitHubSimulator, SimulatorError, sign
from tests.simulator.fixtures import github_sim  # noqa: F401  (fixture)
from tests.simulator.gitobjects import ObjectStore, blob_sha, diff_files

SUITES = 'CI_SUITES = {"stage-a": 1}\n'
TEST_A = "from ci_register import register_cuda_ci\n\nregister_cuda_ci(est_time=60, suite=\"stage-a\")\n"


@pytest.fixture()
def world(github_sim):
    """An App installed on radixark/miles with a pull request that adds, changes, renames, removes."""
    sim = github_sim
    app = sim.create_app(name="CI Registrar", owner="radixark")
    repo = sim.create_repo("radixark/miles")
    base = repo.commit({"tests/ci/run_suite.py": SUITES, "tests/e2e/test_a.py": TEST_A,
                        "tests/e2e/test_old.py": "old = 1\n", "docs/moved.md": "# moved\n",
                        "img.bin": b"\x00\x01\x02"}, message="initial")
    repo.set_branch("feature", base)
    head = sim.push(repo, "feature", {
        "tests/e2e/test_a.py": TEST_A.replace("60", "120"),
        "tests/e2e/test_new.py": "new = 1\n",
        "tests/e2e/test_old.py": None,
        "docs/moved.md": None, "docs/renamed.md": "# moved\n",
    }, message="change registrations", author="bob")
    inst = sim.install(app, repo)
    pr = sim.open_pull_request(repo, "feature", "main", author="bob", title="Enable tests")
    token = token_for(sim, app, inst)
    return {"sim": sim, "app": app, "repo": repo, "inst": inst, "pr": pr, "base": base,
            "head": head, "token": token, "auth": {"Authorization": f"token {token}"}}


def token_for(sim, app, inst) -> str:
    jwt_token = get_jwt(app_id=str(app.id), private_key=app.private_key_pem)
    r = requests.post(f"{sim.url}/app/installations/{inst.id}/access_tokens",
                      headers={"Authorization": f"Bearer {jwt_token}",
                               "Accept": "application/vnd.github+json"})
    assert r.status_code == 201, r.text
    return r.json()["token"]


def gh(world) -> Github:
    return Github(auth=Auth.Token(world["token"]), base_url=world["sim"].url, retry=None,
                  seconds_between_requests=0, seconds_between_writes=0)


# -- git objects ------------------------------------------------------------------------------

def test_object_shas_are_the_ones_git_computes():
    assert blob_sha(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"
    assert blob_sha(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
    store = ObjectStore()
    # `git write-tree` of a.txt="hello\n" and d/b.txt="x\n"
    assert store.put_tree({"a.txt": b"hello\n", "d/b.txt": b"x\n"}) == \
        "f0e0f3514c5a1102281e00e1431b0133804f0e51"
    assert store.put_tree({}) == "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def test_a_commit_pairs_diff_is_computed_once_and_each_caller_gets_its_own_entries():
    store = ObjectStore()
    old = store.put_commit({"a.py": b"x = 1\n", "gone.py": b"y\n"}, [], "one", "A", "a@x", 1)
    new = store.put_commit({"a.py": b"x = 2\n", "b.py": b"z\n"}, [old], "two", "A", "a@x", 2)
    first = store.diff(old, new)
    assert first == diff_files(store.commits[old].files, store.commits[new].files)
    assert [(e["filename"], e["status"]) for e in first] == [("a.py", "modified"), ("b.py", "added"),
                                                             ("gone.py", "removed")]
    assert store.diff(old, new) is not first  # its own list and entries, not the one kept
    first[0]["patch"] = "changed by a caller"
    assert store.diff(old, new)[0]["patch"] == "@@ -1 +1 @@\n-x = 1\n+x = 2"
    assert [e["status"] for e in store.diff(None, old)] == ["added", "added"]


# -- authentication ---------------------------------------------------------------------------

def test_token_exchange_with_pygithub_and_real_jwt(world):
    sim, app, inst = world["sim"], world["app"], world["inst"]
    integration = GithubIntegration(auth=Auth.AppAuth(app.id, app.private_key_pem),
                                    base_url=sim.url)
    assert [i.id for i in integration.get_installations()] == [inst.id]
    assert integration.get_repo_installation("radixark", "miles").id == inst.id
    token = integration.get_access_token(inst.id)
    assert token.token.startswith("ghs_")
    assert token.expires_at.timestamp() == pytest.approx(time.time() + 3600, abs=5)
    repo = Github(auth=Auth.Token(token.token), base_url=sim.url).get_repo("radixark/miles")
    assert repo.default_branch == "main"
    # iss may also be the client id
    by_client = jwt.encode({"iat": int(time.time()) - 60, "exp": int(time.time()) + 300,
                            "iss": app.client_id}, app.private_key_pem, algorithm="RS256")
    r = requests.get(f"{sim.url}/app", headers={"Authorization": f"Bearer {by_client}"})
    assert r.status_code == 200 and r.json()["slug"] == "ci-registrar"


@pytest.mark.parametrize("claims, key", [
    ({"iat": -700, "exp": -100}, "app"),           # expired
    ({"iat": -60, "exp": 1200}, "app"),            # exp too far ahead
    ({"iat": -60, "exp": 300}, "other"),           # signed by another key
])
def test_bad_jwts_are_refused(github_sim, claims, key):
    sim = github_sim
    app, other = sim.create_app(), sim.create_app(name="Other")
    now = int(time.time())
    token = jwt.encode({"iat": now + claims["iat"], "exp": now + claims["exp"], "iss": str(app.id)},
                       (app if key == "app" else other).private_key_pem, algorithm="RS256")
    r = requests.get(f"{sim.url}/app", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 401


def test_installation_tokens_expire_and_are_scoped(world):
    sim, auth = world["sim"], world["auth"]
    other = sim.create_repo("elsewhere/repo")
    assert requests.get(f"{sim.url}/repos/{other.full_name}", headers=auth).status_code == 404
    assert requests.get(f"{sim.url}/repos/radixark/miles").status_code == 401
    sim.expire_tokens()
    r = requests.get(f"{sim.url}/repos/radixark/miles", headers=auth)
    assert r.status_code == 401 and r.json()["message"] == "Bad credentials"


def test_token_narrowing_never_exceeds_the_installation(world):
    sim, app, inst = world["sim"], world["app"], world["inst"]
    jwt_token = get_jwt(app_id=str(app.id), private_key=app.private_key_pem)
    headers = {"Authorization": f"Bearer {jwt_token}"}
    url = f"{sim.url}/app/installations/{inst.id}/access_tokens"
    r = requests.post(url, headers=headers, json={"repositories": ["miles"],
                                                  "permissions": {"checks": "write"}})
    assert r.status_code == 201
    assert r.json()["permissions"] == {"checks": "write"}
    assert [x["full_name"] for x in r.json()["repositories"]] == ["radixark/miles"]
    narrowed = {"Authorization": "token " + r.json()["token"]}
    assert requests.get(f"{sim.url}/repos/radixark/miles/pulls/1", headers=narrowed).status_code == 403
    assert requests.get(f"{sim.url}/repos/radixark/miles/commits/{world['head']}/check-runs",
                        headers=narrowed).status_code == 200
    r = requests.post(url, headers=headers, json={"permissions": {"administration": "write"}})
    assert r.status_code == 422


def test_rate_limit_headers_decrease_and_304_is_free(world):
    sim, auth = world["sim"], world["auth"]
    url = f"{sim.url}/repos/radixark/miles/pulls/1"
    first = requests.get(url, headers=auth)
    second = requests.get(url, headers=auth)
    for name in ("x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-used",
                 "x-ratelimit-reset", "x-ratelimit-resource"):
        assert name in first.headers
    assert int(second.headers["x-ratelimit-remaining"]) == int(first.headers["x-ratelimit-remaining"]) - 1
    cached = requests.get(url, headers={**auth, "If-None-Match": second.headers["ETag"]})
    assert cached.status_code == 304
    assert cached.headers["x-ratelimit-remaining"] == second.headers["x-ratelimit-remaining"]
    overview = requests.get(f"{sim.url}/rate_limit", headers=auth).json()
    assert overview["resources"]["core"]["remaining"] == int(second.headers["x-ratelimit-remaining"])


def test_primary_limit_exhaustion_answers_403_until_reset(github_sim):
    sim = github_sim
    sim.rate_limit = 3
    app, repo = sim.create_app(), sim.create_repo("o/r")
    repo.commit({"a": "1"})
    auth = {"Authorization": f"token {token_for(sim, app, sim.install(app, repo))}"}
    statuses = [requests.get(f"{sim.url}/repos/o/r", headers=auth).status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 403]


# -- pull requests and contents ---------------------------------------------------------------

def test_pull_request_files_statuses_shas_and_patches(world):
    pr = gh(world).get_repo("radixark/miles").get_pull(1)
    assert pr.head.sha == world["head"] and pr.base.ref == "main" and pr.user.login == "bob"
    files = {f.filename: f for f in pr.get_files()}
    assert {name: f.status for name, f in files.items()} == {
        "tests/e2e/test_a.py": "modified", "tests/e2e/test_new.py": "added",
        "tests/e2e/test_old.py": "removed", "docs/renamed.md": "renamed"}
    assert files["docs/renamed.md"].previous_filename == "docs/moved.md"
    assert files["tests/e2e/test_new.py"].sha == blob_sha(b"new = 1\n")
    assert "-register_cuda_ci(est_time=60" in files["tests/e2e/test_a.py"].patch
    assert "+register_cuda_ci(est_time=120" in files["tests/e2e/test_a.py"].patch
    assert pr.changed_files == 4


def test_pull_request_files_paginate_with_link_headers(github_sim):
    sim = github_sim
    app, repo = sim.create_app(), sim.create_repo("o/many")
    base = repo.commit({"README": "x"})
    repo.set_branch("many", base)
    sim.push(repo, "many", {f"tests/test_{i:03}.py": f"x = {i}\n" for i in range(130)})
    sim.open_pull_request(repo, "many", "main")
    token = token_for(sim, app, sim.install(app, repo))
    r = requests.get(f"{sim.url}/repos/o/many/pulls/1/files?per_page=100",
                     headers={"Authorization": f"token {token}"})
    assert len(r.json()) == 100 and 'rel="next"' in r.headers["Link"]
    names = [f.filename for f in Github(auth=Auth.Token(token), base_url=sim.url,
                                        seconds_between_requests=0)
             .get_repo("o/many").get_pull(1).get_files()]
    assert len(names) == 130


def test_contents_blobs_trees_refs_commits_compare(world):
    repo = gh(world).get_repo("radixark/miles")
    head = world["head"]
    content = repo.get_contents("tests/e2e/test_a.py", ref=head)
    assert content.decoded_content.decode() == TEST_A.replace("60", "120")
    assert content.sha == blob_sha(content.decoded_content)
    listing = repo.get_contents("tests/e2e", ref=head)
    assert sorted(c.name for c in listing) == ["test_a.py", "test_new.py"]
    blob = repo.get_git_blob(content.sha)
    assert blob.encoding == "base64"
    tree = repo.get_git_tree(head, recursive=True)
    paths = {e.path: e for e in tree.tree}
    assert paths["tests/e2e/test_new.py"].sha == blob_sha(b"new = 1\n")
    assert paths["tests"].type == "tree"
    assert repo.get_git_ref("heads/feature").object.sha == head
    commit = repo.get_commit(head)
    assert commit.commit.message == "change registrations"
    assert commit.parents[0].sha == world["base"]
    comparison = repo.compare("main", "feature")
    assert comparison.status == "ahead" and comparison.ahead_by == 1
    raw = requests.get(f"{world['sim'].url}/repos/radixark/miles/contents/tests/ci/run_suite.py",
                       headers={**world["auth"], "Accept": "application/vnd.github.raw+json"})
    assert raw.text == SUITES
    missing = requests.get(f"{world['sim'].url}/repos/radixark/miles/contents/nope.py",
                           headers=world["auth"])
    assert missing.status_code == 404


# -- comments, reactions, permissions, reviews ------------------------------------------------

def test_comments_reactions_permissions_and_teams(world):
    sim, app = world["sim"], world["app"]
    sim.set_permission("radixark/miles", "carol", "maintain")
    sim.add_team_member("radixark", "rocm", "carol")
    command = sim.add_comment("radixark/miles", 1, "/run-rocm stage-a", author="dave")
    repo = gh(world).get_repo("radixark/miles")
    comment = repo.get_pull(1).get_issue_comment(command["id"])
    assert comment.body == "/run-rocm stage-a" and comment.user.login == "dave"
    auth = world["auth"]
    url = f"{sim.url}/repos/radixark/miles/issues/comments/{command['id']}/reactions"
    assert requests.post(url, headers=auth, json={"content": "eyes"}).status_code == 201
    assert requests.post(url, headers=auth, json={"content": "eyes"}).status_code == 200
    assert sim.reactions("radixark/miles", command["id"]) == ["eyes"]
    reply = requests.post(f"{sim.url}/repos/radixark/miles/issues/1/comments", headers=auth,
                          json={"body": "Dispatched."})
    assert reply.status_code == 201
    assert reply.json()["user"]["login"] == f"{app.slug}[bot]"
    assert reply.json()["performed_via_github_app"]["id"] == app.id
    edited = requests.patch(reply.json()["url"], headers=auth, json={"body": "Done."})
    assert edited.json()["body"] == "Done."
    assert [c["body"] for c in sim.comments("radixark/miles", 1)] == ["/run-rocm stage-a", "Done."]
    perm = repo.get_collaborator_permission("carol")
    assert perm == "write"
    r = requests.get(f"{sim.url}/repos/radixark/miles/collaborators/carol/permission", headers=auth)
    assert r.json()["role_name"] == "maintain"
    assert requests.get(f"{sim.url}/repos/radixark/miles/collaborators/eve/permission",
                        headers=auth).json()["permission"] == "read"
    # team membership is an organization permission the default App does not request
    denied = requests.get(f"{sim.url}/orgs/radixark/teams/rocm/memberships/carol", headers=auth)
    assert denied.status_code == 403
    assert denied.json()["message"] == "Resource not accessible by integration"
    members_app = sim.create_app(name="Members", permissions={"members": "read",
                                                              "metadata": "read"})
    members = {"Authorization": "token " + sim.issue_token(sim.install(members_app, "radixark/miles"))}
    assert requests.get(f"{sim.url}/orgs/radixark/teams/rocm/memberships/carol",
                        headers=members).json()["state"] == "active"
    assert requests.get(f"{sim.url}/orgs/radixark/teams/rocm/memberships/eve",
                        headers=members).status_code == 404
    assert requests.get(f"{sim.url}/repos/radixark/miles/pulls/1", headers=members).status_code == 403


def test_suggestion_review_comments_must_target_the_diff(world):
    sim, auth = world["sim"], world["auth"]
    url = f"{sim.url}/repos/radixark/miles/pulls/1/comments"
    suggestion = "```suggestion\nregister_cuda_ci(est_time=90, suite=\"stage-a\")\n```"
    ok = requests.post(url, headers=auth, json={
        "body": suggestion, "commit_id": world["head"], "path": "tests/e2e/test_a.py",
        "line": 3, "side": "RIGHT"})
    assert ok.status_code == 201, ok.text
    outside = requests.post(url, headers=auth, json={
        "body": suggestion, "commit_id": world["head"], "path": "tests/ci/run_suite.py",
        "line": 1, "side": "RIGHT"})
    assert outside.status_code == 422
    review = requests.post(f"{sim.url}/repos/radixark/miles/pulls/1/reviews", headers=auth, json={
        "commit_id": world["head"], "event": "COMMENT", "body": "fixes",
        "comments": [{"path": "tests/e2e/test_a.py", "line": 3, "body": suggestion}]})
    assert review.status_code == 200, review.text
    assert len(sim.review_comments("radixark/miles", 1)) == 2
    assert sim.reviews("radixark/miles", 1)[0]["state"] == "COMMENTED"


# -- checks -----------------------------------------------------------------------------------

def annotations(start, count):
    return [{"path": "tests/e2e/test_a.py", "start_line": 3, "end_line": 3, "start_column": 1,
             "end_column": 10, "annotation_level": "failure", "message": f"finding {i}"}
            for i in range(start, start + count)]


def test_check_run_with_120_annotations_over_three_patches(world):
    sim = world["sim"]
    repo = gh(world).get_repo("radixark/miles")
    run = repo.create_check_run(name="CI registrations", head_sha=world["head"],
                                status="in_progress")
    for start, count in ((0, 50), (50, 50), (100, 20)):
        run.edit(output={"title": "3 findings", "summary": "summary",
                         "annotations": annotations(start, count)})
    run.edit(status="completed", conclusion="failure",
             output={"title": "120 findings", "summary": "done"},
             actions=[{"label": "Approve run", "description": "Run the suite",
                       "identifier": "approve"}])
    [stored] = sim.check_runs("radixark/miles", world["head"])
    assert len(stored["annotations"]) == 120 and stored["conclusion"] == "failure"
    assert stored["output"]["title"] == "120 findings"
    assert [a.message for a in run.get_annotations()][-1] == "finding 119"
    listed = repo.get_commit(world["head"]).get_check_runs(check_name="CI registrations")
    assert [r.id for r in listed] == [run.id]
    assert repo.get_check_run(run.id).output.annotations_count == 120


def test_more_than_50_annotations_or_3_actions_are_violations(world):
    sim, auth = world["sim"], world["auth"]
    url = f"{sim.url}/repos/radixark/miles/check-runs"
    r = requests.post(url, headers=auth, json={
        "name": "x", "head_sha": world["head"],
        "output": {"title": "t", "summary": "s", "annotations": annotations(0, 51)}})
    assert r.status_code == 422
    r = requests.post(url, headers=auth, json={
        "name": "x", "head_sha": world["head"],
        "actions": [{"label": "a", "description": "b", "identifier": str(i)} for i in range(4)]})
    assert r.status_code == 422
    assert len(sim.violations) == 2
    assert "maxItems=50" in sim.violations[0] and "maxItems=3" in sim.violations[1]
    sim.violations.clear()


def test_schema_violations_are_recorded_and_answered(world):
    sim, auth = world["sim"], world["auth"]
    bad_body = requests.post(f"{sim.url}/repos/radixark/miles/check-runs", headers=auth,
                             json={"name": "no head sha", "status": "bogus"})
    assert bad_body.status_code == 422
    assert "head_sha" in bad_body.json()["message"]
    unknown = requests.get(f"{sim.url}/repos/radixark/miles/branches", headers=auth)
    assert unknown.status_code == 404
    bad_param = requests.get(f"{sim.url}/repos/radixark/miles/pulls/1/files?per_pagee=5",
                             headers=auth)
    assert bad_param.status_code == 422
    assert len(sim.violations) == 3
    assert "not a vendored operation" in sim.violations[1]
    sim.violations.clear()


# -- actions ----------------------------------------------------------------------------------

def test_dispatch_runs_jobs_and_logs_on_another_host(world):
    sim, auth = world["sim"], world["auth"]
    repo = world["repo"]
    repo.add_workflow("rocm-on-demand.yml", name="ROCm on demand")
    url = f"{sim.url}/repos/radixark/miles/actions/workflows/rocm-on-demand.yml/dispatches"
    inputs = {"suite": "stage-a", "head_sha": world["head"], "pull_number": "1"}
    plain = requests.post(url, headers=auth, json={"ref": "main", "inputs": inputs})
    assert plain.status_code == 204
    details = requests.post(url, headers=auth, json={"ref": "main", "inputs": inputs,
                                                     "return_run_details": True})
    assert details.status_code == 200
    versioned = requests.post(url, headers={**auth, "X-GitHub-Api-Version": "2026-03-10"},
                              json={"ref": "main", "inputs": inputs})
    assert versioned.status_code == 200
    run_id = details.json()["workflow_run_id"]
    dispatches = sim.dispatches("radixark/miles")
    assert len(dispatches) == 3 and dispatches[1]["inputs"] == inputs
    assert requests.post(url, headers=auth, json={"ref": "nope"}).status_code == 422

    runs = requests.get(f"{sim.url}/repos/radixark/miles/actions/runs?event=workflow_dispatch",
                        headers=auth).json()
    assert runs["total_count"] == 3
    assert {r["event"] for r in runs["workflow_runs"]} == {"workflow_dispatch"}
    log = "2026-01-01T00:00:00.0000000Z [PASS] tests/e2e/test_a.py (123.4s)\n"
    sim.complete_run(run_id, "success", jobs=[{"name": "stage-a (0)", "labels": ["linux-mi35x-gpu-8"],
                                               "conclusion": "success", "log": log}])
    run = requests.get(f"{sim.url}/repos/radixark/miles/actions/runs/{run_id}", headers=auth).json()
    assert run["status"] == "completed" and run["conclusion"] == "success"
    jobs = requests.get(f"{sim.url}/repos/radixark/miles/actions/runs/{run_id}/jobs",
                        headers=auth).json()["jobs"]
    assert jobs[0]["labels"] == ["linux-mi35x-gpu-8"]
    logs_url = f"{sim.url}/repos/radixark/miles/actions/jobs/{jobs[0]['id']}/logs"
    redirect = requests.get(logs_url, headers=auth, allow_redirects=False)
    assert redirect.status_code == 302
    assert urlsplit(redirect.headers["Location"]).hostname != urlsplit(sim.url).hostname
    followed = requests.get(logs_url, headers=auth)  # requests drops the token cross-host
    assert followed.status_code == 200 and followed.text == log
    assert followed.history[0].status_code == 302
    assert sim.violations == []
    leaked = requests.get(redirect.headers["Location"], headers=auth)
    assert leaked.status_code == 403 and "Authorization" in sim.violations[0]
    sim.violations.clear()


def test_dispatch_is_checked_against_the_workflows_declared_inputs(world):
    sim, auth = world["sim"], world["auth"]
    world["repo"].add_workflow_file("on-demand.yml", """\
name: On demand
run-name: "run ${{ inputs.suite }} x${{ inputs.shards }}"
on:
  workflow_dispatch:
    inputs:
      suite: {required: true, type: string}
      shards: {required: false, type: string, default: "1"}
      label: {required: true, type: string, default: "x"}
jobs: {}
""")
    url = f"{sim.url}/repos/radixark/miles/actions/workflows/on-demand.yml/dispatches"
    extra = requests.post(url, headers=auth, json={"ref": "main", "inputs": {"suite": "s", "files": "a"}})
    assert extra.status_code == 422 and extra.json()["message"] == 'Unexpected inputs provided: ["files"]'
    missing = requests.post(url, headers=auth, json={"ref": "main", "inputs": {"shards": "2"}})
    assert missing.status_code == 422 and missing.json()["message"] == "Required input 'suite' not provided"
    # a required input with a default may be left out; what was left out takes its default
    ok = requests.post(url, headers=auth, json={"ref": "main", "inputs": {"suite": "s"}, "return_run_details": True})
    assert ok.status_code == 200
    run = requests.get(f"{sim.url}/repos/radixark/miles/actions/runs/{ok.json()['workflow_run_id']}", headers=auth).json()
    assert run["display_title"] == "run s x1"
    assert sim.dispatches("radixark/miles")[-1]["inputs"] == {"suite": "s"}  # as sent
    # GitHub Enterprise Server 3.17-3.19 take at most 10 inputs (the shipped workflow declares 8)
    sim.dispatch_max_inputs = 10
    world["repo"].add_workflow_file("wide.yml", "on:\n  workflow_dispatch:\n    inputs:\n"
                                    + "".join(f"      i{n}: {{type: string}}\n" for n in range(11)) + "jobs: {}\n")
    wide = f"{sim.url}/repos/radixark/miles/actions/workflows/wide.yml/dispatches"
    assert requests.post(wide, headers=auth, json={"ref": "main", "inputs": {f"i{n}": "x" for n in range(11)}}).status_code == 422
    assert requests.post(wide, headers=auth, json={"ref": "main", "inputs": {f"i{n}": "x" for n in range(10)}}).status_code == 204
    sim.dispatch_max_inputs = 25
    # a workflow without workflow_dispatch is not dispatchable
    world["repo"].add_workflow_file("push.yml", "on: push\njobs: {}\n")
    refused = requests.post(f"{sim.url}/repos/radixark/miles/actions/workflows/push.yml/dispatches", headers=auth,
                            json={"ref": "main"})
    assert refused.status_code == 422


def test_pygithub_reads_runs_and_jobs(world):
    sim = world["sim"]
    sim.add_workflow_run("radixark/miles", "pr-test-rocm.yml", head_sha=world["head"],
                         event="pull_request", jobs=[{"name": "j", "labels": ["mi350"]}])
    repo = gh(world).get_repo("radixark/miles")
    [run] = repo.get_workflow_runs(head_sha=world["head"])
    assert run.event == "pull_request" and run.conclusion == "success"
    assert [j.name for j in run.jobs()] == ["j"]


# -- faults -----------------------------------------------------------------------------------

@pytest.mark.parametrize("kind, status", [("500", 500), ("502", 502), ("503", 503),
                                          ("secondary_rate_limit", 403), ("429", 429),
                                          ("primary_rate_limit", 403), ("expired_token", 401)])
def test_status_faults(world, kind, status):
    sim, auth = world["sim"], world["auth"]
    fault = sim.inject_fault("GET", r"/pulls/\d+$", kind, times=1, retry_after=7)
    url = f"{sim.url}/repos/radixark/miles/pulls/1"
    r = requests.get(url, headers=auth)
    assert r.status_code == status
    if kind in ("secondary_rate_limit", "429"):
        assert r.headers["retry-after"] == "7"
        assert "secondary rate limit" in r.json()["message"]
    if kind == "primary_rate_limit":
        assert r.headers["x-ratelimit-remaining"] == "0"
        assert int(r.headers["x-ratelimit-reset"]) > time.time()
    if kind == "expired_token":
        assert r.json()["message"] == "Bad credentials"
    assert requests.get(url, headers=auth).status_code == 200 and fault.hits == 1


def test_slow_and_dropped_connections(world):
    sim, auth = world["sim"], world["auth"]
    url = f"{sim.url}/repos/radixark/miles"
    sim.inject_fault("GET", r"^/repos/radixark/miles$", "slow", delay=0.5)
    started = time.time()
    assert requests.get(url, headers=auth).status_code == 200
    assert time.time() - started >= 0.5
    with pytest.raises(requests.Timeout):
        sim.inject_fault("GET", r"^/repos/radixark/miles$", "slow", delay=1.0)
        requests.get(url, headers=auth, timeout=0.3)
    sim.inject_fault("*", r"^/repos/radixark/miles$", "drop")
    with pytest.raises(requests.ConnectionError):
        requests.get(url, headers=auth)
    assert requests.get(url, headers=auth).status_code == 200


# -- webhooks ---------------------------------------------------------------------------------

def test_signature_matches_githubs_documented_vector():
    assert sign(b"Hello, World!", "It's a Secret to Everybody") == \
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"


def test_pull_request_webhooks_are_official_shaped_and_signed(world):
    sim, app, pr = world["sim"], world["app"], world["pr"]
    d = sim.webhook("pull_request", "opened", app=app, pull=pr)
    headers = {k.lower(): v for k, v in d.headers.items()}
    event = Event.from_http(headers, d.body, secret=app.webhook_secret)  # checks the signature
    assert event.event == "pull_request" and event.delivery_id == d.delivery_id
    assert event.data["pull_request"]["head"]["sha"] == world["head"]
    assert event.data["installation"]["id"] == world["inst"].id
    assert event.data["repository"]["full_name"] == "radixark/miles"
    assert d.headers["X-GitHub-Hook-Installation-Target-ID"] == str(app.id)
    assert d.headers["User-Agent"].startswith("GitHub-Hookshot/")
    new_head = sim.push("radixark/miles", "feature", {"x.py": "1\n"})
    sync = sim.webhook("pull_request", "synchronize", app=app, pull=pr)
    assert (sync.payload["before"], sync.payload["after"]) == (world["head"], new_head)
    with pytest.raises(SimulatorError):
        sim.webhook("pull_request", "opened", app=app, pull=pr, number="not a number")
    assert "payload invalid" in sim.violations[0]
    sim.violations.clear()


def test_comment_check_workflow_and_installation_webhooks(world):
    sim, app, pr, repo = world["sim"], world["app"], world["pr"], world["repo"]
    comment = sim.add_comment(repo, pr.number, "/run-rocm stage-a", author="dave")
    d = sim.webhook("issue_comment", "created", app=app, repo=repo, comment=comment)
    assert d.payload["issue"]["number"] == 1 and "pull_request" in d.payload["issue"]
    assert d.payload["comment"]["body"] == "/run-rocm stage-a"
    assert d.payload["sender"]["login"] == "dave"
    issue = sim.create_issue(repo, "bug")
    on_issue = sim.webhook("issue_comment", "created", app=app, repo=repo,
                           comment=sim.add_comment(repo, issue, "/run-rocm x", author="dave"))
    assert "pull_request" not in on_issue.payload["issue"]
    sim.edit_comment(repo, comment["id"], "/run-rocm stage-b")
    edited = sim.webhook("issue_comment", "edited", app=app, repo=repo,
                         comment=sim.comments(repo, 1)[0])
    assert edited.payload["changes"]["body"]["from"] == "/run-rocm stage-a"

    token = world["token"]
    cr = requests.post(f"{sim.url}/repos/radixark/miles/check-runs",
                       headers={"Authorization": f"token {token}"},
                       json={"name": "MI350 · stage-a", "head_sha": world["head"]}).json()
    action = sim.webhook("check_run", "requested_action", app=app, repo=repo,
                         check_run=cr["id"], identifier="approve", sender="carol")
    assert action.payload["requested_action"] == {"identifier": "approve"}
    assert action.payload["check_run"]["pull_requests"][0]["number"] == 1
    assert sim.webhook("check_run", "rerequested", app=app, repo=repo,
                       check_run=cr["id"]).payload["check_run"]["head_sha"] == world["head"]
    suite = sim.webhook("check_suite", "rerequested", app=app, repo=repo, head_sha=world["head"])
    assert suite.payload["check_suite"]["head_sha"] == world["head"]
    sim.webhook("check_suite", "requested", app=app, repo=repo, head_sha=world["head"])

    run = sim.add_workflow_run(repo, "pr-test-rocm.yml", head_sha=world["head"],
                               event="pull_request", jobs=[{"name": "j", "log": "x"}])
    wr = sim.webhook("workflow_run", "completed", app=app, repo=repo, run=run["id"])
    assert wr.payload["workflow_run"]["id"] == run["id"]
    assert wr.payload["workflow_run"]["path"] == ".github/workflows/pr-test-rocm.yml"
    assert wr.payload["workflow"]["path"] == ".github/workflows/pr-test-rocm.yml"
    sim.webhook("workflow_run", "requested", app=app, repo=repo, run=run["id"])

    inst = sim.webhook("installation", "created", app=app, installation=world["inst"])
    assert inst.payload["installation"]["id"] == world["inst"].id
    assert [r["full_name"] for r in inst.payload["repositories"]] == ["radixark/miles"]
    other = sim.create_repo("radixark/other")
    sim.install(app, other)
    added = sim.webhook("installation_repositories", "added", app=app,
                        installation=world["inst"], added=[other])
    assert added.payload["repositories_added"][0]["full_name"] == "radixark/other"
    ping = sim.webhook("ping", app=app)
    assert ping.payload["hook"]["app_id"] == app.id


def test_deliver_posts_and_redelivery_keeps_the_delivery_id(world):
    from tests.simulator.server import LoopbackServer, Response
    received = []

    def receiver(request):
        received.append(request)
        return Response(202, b"")
    server = LoopbackServer(receiver)
    server.start()
    try:
        sim, app = world["sim"], world["app"]
        d = sim.webhook("pull_request", "opened", app=app, pull=world["pr"])
        assert sim.deliver(server.url + "/webhook", d).status_code == 202
        assert sim.deliver(server.url + "/webhook", d).status_code == 202
    finally:
        server.stop()
    assert [r.headers["x-github-delivery"] for r in received] == [d.delivery_id] * 2
    assert received[0].body == d.body
    assert received[0].headers["x-hub-signature-256"] == sign(d.body, app.webhook_secret)


# -- manifest flow ----------------------------------------------------------------------------

def test_manifest_flow_issues_working_credentials(github_sim):
    sim = github_sim
    manifest = {"name": "CI Registrar", "url": "https://example.org",
                "hook_attributes": {"url": "https://example.org/webhook"},
                "redirect_url": "http://127.0.0.1:9/setup/done",
                "default_permissions": {"checks": "write"}, "default_events": ["check_run"]}
    form = requests.post(f"{sim.web_url}/settings/apps/new?state=abc",
                         data={"manifest": json.dumps(manifest)}, allow_redirects=False)
    assert form.status_code == 302
    location = urlsplit(form.headers["Location"])
    assert location.path == "/setup/done"
    query = parse_qs(location.query)
    assert query["state"] == ["abc"]
    code = query["code"][0]
    r = requests.post(f"{sim.url}/app-manifests/{code}/conversions")
    assert r.status_code == 201, r.text
    creds = r.json()
    assert creds["permissions"] == {"checks": "write"} and creds["webhook_secret"]
    token = get_jwt(app_id=str(creds["id"]), private_key=creds["pem"])
    assert requests.get(f"{sim.url}/app", headers={"Authorization": f"Bearer {token}"}).json()["id"] \
        == creds["id"]
    assert requests.post(f"{sim.url}/app-manifests/{code}/conversions").status_code == 404
    direct = sim.manifest_code(manifest)
    assert requests.post(f"{sim.url}/app-manifests/{direct}/conversions").status_code == 201


def test_simulator_can_be_used_as_a_context_manager():
    with GitHubSimulator() as sim:
        assert requests.get(f"{sim.url}/rate_limit").status_code == 200
    assert sim.violations == []


# -- properties of the git model --------------------------------------------------------------

from hypothesis import HealthCheck, assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.simulator.gitobjects import unified_patch  # noqa: E402

_names = st.text(alphabet="abcdefgh_-.0123456789", min_size=1, max_size=6).filter(
    lambda n: n not in (".", "..") and not n.startswith("."))
_paths = st.lists(_names, min_size=1, max_size=3).map("/".join)
_trees = st.dictionaries(_paths, st.binary(max_size=40), min_size=1, max_size=6)


def _no_file_dir_clash(files) -> bool:
    dirs = {"/".join(p.split("/")[:i]) for p in files for i in range(1, p.count("/") + 1)}
    return not (dirs & set(files))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=_trees)
def test_tree_shas_equal_git_write_tree(tmp_path_factory, files):
    import os
    import subprocess
    assume(_no_file_dir_clash(files))
    work = tmp_path_factory.mktemp("git")
    env = {**os.environ, "HOME": str(work), "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "init", "-q", str(work)], check=True, env=env)
    for path, content in files.items():
        target = work / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    subprocess.run(["git", "add", "-A"], cwd=work, check=True, env=env)
    expected = subprocess.run(["git", "write-tree"], cwd=work, check=True, env=env,
                              capture_output=True, text=True).stdout.strip()
    assert ObjectStore().put_tree(files) == expected


def _apply(old: str, patch: str) -> str:
    """Apply a GitHub `patch` (hunks only) to old text."""
    import re
    old_lines = old.splitlines(keepends=True)
    out, cursor = [], 0
    lines = patch.split("\n")
    for i, line in enumerate(lines):
        m = re.match(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", line)
        if m:
            start = int(m.group(1)) - (0 if m.group(2) == "0" else 1)
            out.extend(old_lines[cursor:start])
            cursor = start
            continue
        if line.startswith("\\"):
            continue
        eol = "" if i + 1 < len(lines) and lines[i + 1].startswith("\\") else "\n"
        if line.startswith("+"):
            out.append(line[1:] + eol)
        elif line.startswith("-"):
            cursor += 1
        else:
            out.append(line[1:] + eol)
            cursor += 1
    out.extend(old_lines[cursor:])
    return "".join(out)


_text = st.lists(st.sampled_from(["a", "b", "c", "register_cuda_ci(est_time=1)", ""]),
                 max_size=12).map("\n".join)


@settings(max_examples=200, deadline=None)
@given(old=_text, new=_text, old_eol=st.booleans(), new_eol=st.booleans())
def test_patches_apply_back_to_the_new_content(old, new, old_eol, new_eol):
    old = old + ("\n" if old_eol and old else "")
    new = new + ("\n" if new_eol and new else "")
    patch, additions, deletions = unified_patch(old.encode(), new.encode())
    if old == new:
        assert patch == "" and additions == deletions == 0
        return
    assert _apply(old, patch) == new


def _vendored_webhooks():
    from tests.simulator.schemas import webhooks_spec
    events = ["installation_repositories", "installation", "pull_request", "issue_comment",
              "check_run", "check_suite", "workflow_run", "ping"]
    for name in sorted(webhooks_spec()["webhooks"]):
        event = next(e for e in events
                     if name == e.replace("_", "-") or name.startswith(e.replace("_", "-") + "-"))
        action = name[len(event) + 1:].replace("-", "_") or None
        yield event, action


@pytest.mark.parametrize("event, action", list(_vendored_webhooks()))
def test_every_vendored_webhook_builds_and_validates(world, event, action):
    sim, app, repo, pr = world["sim"], world["app"], world["repo"], world["pr"]
    kwargs = {"app": app}
    if event in ("installation", "installation_repositories"):
        kwargs["installation"] = world["inst"]
    elif event != "ping":
        kwargs["repo"] = repo
    if event == "pull_request":
        kwargs["pull"] = pr
    elif event == "issue_comment":
        kwargs["comment"] = sim.add_comment(repo, pr.number, "hello", author="dave")
    elif event == "check_run":
        kwargs["check_run"] = requests.post(
            f"{sim.url}/repos/radixark/miles/check-runs", headers=world["auth"],
            json={"name": "x", "head_sha": pr.head_sha}).json()["id"]
    elif event == "check_suite":
        kwargs["head_sha"] = pr.head_sha
    elif event == "workflow_run":
        kwargs["run"] = sim.add_workflow_run(repo, "ci.yml", head_sha=pr.head_sha)["id"]
    delivery = sim.webhook(event, action, **kwargs)
    assert delivery.headers["X-GitHub-Event"] == event
    assert delivery.payload.get("action") == action
    assert sim.hooks.validate(event, action, json.loads(delivery.body)) == []


def test_large_trees_come_back_truncated(world):
    sim = world["sim"]
    sim.tree_entry_limit = 3
    r = requests.get(f"{sim.url}/repos/radixark/miles/git/trees/{world['head']}?recursive=1",
                     headers=world["auth"]).json()
    assert r["truncated"] is True and len(r["tree"]) == 3


def test_issued_tokens_work_with_pygithub(world):
    sim = world["sim"]
    token = sim.issue_token(world["inst"])
    repo = Github(auth=Auth.Token(token), base_url=sim.url).get_repo("radixark/miles")
    assert repo.get_pull(1).head.sha == world["head"]
    assert sim.tokens_issued[-1]["token"] == token


def test_fork_pull_requests_carry_the_fork_and_no_pull_requests_array(world):
    sim, app, repo = world["sim"], world["app"], world["repo"]
    fork = sim.fork(repo, "mallory/miles")
    fork.set_branch("evil", repo.head())
    sim.push(fork, "evil", {"tests/e2e/test_a.py": "import os\n"})
    pr = sim.open_pull_request(repo, "evil", "main", author="mallory", head_repo=fork)
    data = requests.get(f"{sim.url}/repos/radixark/miles/pulls/{pr.number}",
                        headers=world["auth"]).json()
    assert data["head"]["repo"]["full_name"] == "mallory/miles"
    assert data["base"]["repo"]["full_name"] == "radixark/miles"
    assert data["head"]["label"] == "mallory:evil"
    opened = sim.webhook("pull_request", "opened", app=app, pull=pr)
    assert opened.payload["pull_request"]["head"]["repo"]["full_name"] == "mallory/miles"
    assert opened.payload["pull_request"]["head"]["repo"]["fork"] is True
    suite = sim.webhook("check_suite", "requested", app=app, repo=repo, head_sha=pr.head_sha)
    assert suite.payload["check_suite"]["pull_requests"] == []
    files = requests.get(f"{sim.url}/repos/radixark/miles/pulls/{pr.number}/files",
                         headers=world["auth"]).json()
    assert [f["filename"] for f in files] == ["tests/e2e/test_a.py"]
    new_head = sim.push(fork, "evil", {"x.py": "1\n"})
    assert sim.pull(repo, pr.number).head_sha == new_head


# -- POST /graphql ----------------------------------------------------------------------------------
BLOB_QUERY = ("query($owner: String!, $name: String!, $e0: String!) { repository(owner: $owner, name: $name) {"
              " f0: object(expression: $e0) { ... on Blob { oid byteSize isBinary isTruncated text } } } }")


def _graphql(sim, token, query, variables=None):
    return requests.post(f"{sim.url}/graphql", json={"query": query, "variables": variables or {}},
                         headers={"Authorization": f"token {token}"}, timeout=PATIENCE)


def test_graphql_reads_a_blob_at_a_commit_by_expression(github_sim):
    sim = github_sim
    app = sim.create_app()
    repo = sim.create_repo("radixark/miles")
    sha = repo.commit({"tests/e2e/test_a.py": TEST_A})
    token = sim.issue_token(sim.install(app, repo))
    answer = _graphql(sim, token, BLOB_QUERY, {"owner": "radixark", "name": "miles", "e0": f"{sha}:tests/e2e/test_a.py"})
    assert answer.status_code == 200 and answer.headers["x-ratelimit-resource"] == "graphql"
    blob = answer.json()["data"]["repository"]["f0"]
    assert blob == {"oid": blob_sha(TEST_A.encode()), "byteSize": len(TEST_A), "isBinary": False,
                    "isTruncated": False, "text": TEST_A}
    missing = _graphql(sim, token, BLOB_QUERY, {"owner": "radixark", "name": "miles", "e0": f"{sha}:nope.py"})
    assert missing.json() == {"data": {"repository": {"f0": None}}}


def test_graphql_refuses_what_github_refuses(github_sim):
    sim = github_sim
    app = sim.create_app()
    repo = sim.create_repo("radixark/miles")
    sha = repo.commit({"a.py": "a = 1\n"})
    sim.create_repo("radixark/other")
    inst = sim.install(app, repo)
    token = sim.issue_token(inst)
    # a repository outside the installation: null and NOT_FOUND, as GitHub answers
    other = _graphql(sim, token, BLOB_QUERY, {"owner": "radixark", "name": "other", "e0": f"{sha}:a.py"}).json()
    assert other["data"] == {"repository": None} and other["errors"][0]["type"] == "NOT_FOUND"
    # no installation token: 401
    assert requests.post(f"{sim.url}/graphql", json={"query": BLOB_QUERY}, timeout=PATIENCE).status_code == 401
    # an installation without contents: read cannot read file contents
    reader = sim.create_app(name="No contents", permissions={"metadata": "read"})
    weak = sim.issue_token(sim.install(reader, repo))
    forbidden = _graphql(sim, weak, BLOB_QUERY, {"owner": "radixark", "name": "miles", "e0": f"{sha}:a.py"}).json()
    assert forbidden["errors"][0]["type"] == "FORBIDDEN"
    # a field GitHub's schema does not have: an error, and a violation of the test that sent it
    bad = _graphql(sim, token, "{ viewer { login } }").json()
    assert "data" not in bad and "Cannot query field 'viewer'" in bad["errors"][0]["message"]
    assert sim.violations and "query invalid" in sim.violations[-1]
    sim.violations.clear()


TREE_QUERY = ("query($owner: String!, $name: String!, $e0: String!, $p: String!) { repository(owner: $owner, name: $name) {"
              " dir: object(expression: $e0) { ... on Tree { entries { name path mode type oid"
              " object { ... on Blob { oid text } ... on Tree { oid } } } } }"
              " defaultBranchRef { target { ... on Commit { file(path: $p) { mode oid } tree { entries { path type } } } } } } }")


def test_graphql_lists_a_directory_with_its_entries_modes(github_sim):
    """Tree.entries: one level in git's order, `path` from the root, `mode` git's octal mode as an
    integer (a symbolic link 0o120000, as Commit.file gives it too)."""
    sim = github_sim
    app = sim.create_app()
    repo = sim.create_repo("radixark/miles")
    sha = repo.commit({".github/workflows/a.yml": "name: a\n", ".github/workflows/b.yml": "a.yml",
                       ".github/workflows/sub/c.yml": "name: c\n"}, modes={".github/workflows/b.yml": "120000"})
    token = sim.issue_token(sim.install(app, repo))
    data = _graphql(sim, token, TREE_QUERY, {"owner": "radixark", "name": "miles", "e0": f"{sha}:.github/workflows",
                                             "p": ".github/workflows/b.yml"}).json()["data"]["repository"]
    entries = data["dir"]["entries"]
    assert [(e["name"], e["path"], e["mode"], e["type"]) for e in entries] == [
        ("a.yml", ".github/workflows/a.yml", 0o100644, "blob"), ("b.yml", ".github/workflows/b.yml", 0o120000, "blob"),
        ("sub", ".github/workflows/sub", 0o40000, "tree")]
    assert entries[0]["object"] == {"oid": blob_sha(b"name: a\n"), "text": "name: a\n"}
    assert entries[2]["object"]["oid"] == entries[2]["oid"]
    assert data["defaultBranchRef"]["target"]["file"]["mode"] == 0o120000
    assert data["defaultBranchRef"]["target"]["tree"]["entries"] == [{"path": ".github", "type": "tree"}]  # the root
    # the contents API reads the file a link leads to, and a link that leads nowhere as the link itself
    contents = lambda p: requests.get(f"{sim.url}/repos/radixark/miles/contents/{p}",  # noqa: E731
                                      headers={"Authorization": f"token {token}"}, timeout=PATIENCE).json()
    led = contents(".github/workflows/b.yml")
    assert (led["type"], led["path"], base64.b64decode(led["content"])) == ("file", ".github/workflows/a.yml", b"name: a\n")
    repo.commit({"dangling.yml": "nowhere.yml"}, modes={"dangling.yml": "120000"})
    assert contents("dangling.yml")["type"] == "symlink" and contents("dangling.yml")["target"] == "nowhere.yml"


COMMENT_QUERY = "query($id: ID!) { node(id: $id) { ... on IssueComment { body } } }"


def test_graphql_reads_a_comment_by_its_node_id_as_it_is_now(github_sim):
    sim = github_sim
    app = sim.create_app()
    repo = sim.create_repo("radixark/miles")
    repo.commit({"a.py": "a = 1\n"})
    repo.commit({"a.py": "a = 2\n"}, branch="feature")
    pr = sim.open_pull_request(repo, "feature")
    comment = sim.add_comment(repo, pr.number, "/run-rocm stage-a", author="dave")
    token = sim.issue_token(sim.install(app, repo))
    read = lambda: _graphql(sim, token, COMMENT_QUERY, {"id": comment["node_id"]}).json()  # noqa: E731
    assert read() == {"data": {"node": {"body": "/run-rocm stage-a"}}}
    sim.edit_comment(repo, comment["id"], "never mind")
    assert read() == {"data": {"node": {"body": "never mind"}}}
    sim.delete_comment(repo, comment["id"])
    gone = read()
    assert gone["data"] == {"node": None} and gone["errors"][0]["type"] == "NOT_FOUND"
    # another installation's repository: not readable, as if it did not exist
    other = sim.create_repo("radixark/other")
    other.commit({"a.py": "a = 1\n"})
    other.commit({"a.py": "a = 2\n"}, branch="feature")
    theirs = sim.add_comment(other, sim.open_pull_request(other, "feature").number, "hi", author="dave")
    hidden = _graphql(sim, token, COMMENT_QUERY, {"id": theirs["node_id"]}).json()
    assert hidden["data"] == {"node": None} and hidden["errors"][0]["type"] == "NOT_FOUND"
