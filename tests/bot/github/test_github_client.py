"""Talking to GitHub: tokens cached and refreshed, the retry policy's waits, ETags, secrets kept out of logs."""

from __future__ import annotations

import json
import logging

import pytest

from bot.github.auth import REFRESH_MARGIN_S, AppAuth
from bot.github.client import GitHub, git_blob_sha
from bot.github.retry import GitHubError, RateLimited, RetryPolicy, TransientError, rate_limit_wait
from bot.analysis.sources import GitHubTree, changed_paths
from tests.patience import PATIENCE
from tests.simulator.fixtures import github_sim  # noqa: F401


class Clock:
    def __init__(self, now=1_800_000_000.0):
        self.now = now

    def __call__(self):
        return self.now


def _iso(ts):
    import datetime as dt

    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture()
def rsa_key():
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption()).decode()


def test_an_installation_token_is_reused_until_five_minutes_before_it_expires(rsa_key):
    clock, calls = Clock(), []

    def fetch(installation_id, jwt):
        calls.append(installation_id)
        return {"token": f"ghs_{len(calls)}", "expires_at": _iso(clock.now + 3600)}

    auth = AppAuth("1", rsa_key, fetch, clock=clock)
    assert auth.token(7) == "ghs_1"
    clock.now += 3600 - REFRESH_MARGIN_S - 1
    assert auth.token(7) == "ghs_1"
    clock.now += 2
    assert auth.token(7) == "ghs_2"
    assert auth.token(8) == "ghs_3"  # per installation
    assert calls == [7, 7, 8]


def test_invalidating_forgets_only_the_refused_token(rsa_key):
    clock, n = Clock(), [0]

    def fetch(installation_id, jwt):
        n[0] += 1
        return {"token": f"ghs_{n[0]}", "expires_at": _iso(clock.now + 3600)}

    auth = AppAuth("1", rsa_key, fetch, clock=clock)
    auth.token(7)
    auth.invalidate(7, "ghs_old")  # another thread already replaced that one
    assert auth.token(7) == "ghs_1"
    auth.invalidate(7, "ghs_1")
    assert auth.token(7) == "ghs_2"
    assert "ghs_" not in repr(auth)


def test_retry_after_is_obeyed():
    policy = RetryPolicy()
    assert rate_limit_wait(403, {"retry-after": "30"}, "", policy=policy) == 30
    assert rate_limit_wait(429, {"retry-after": "2"}, "", policy=policy) == 2


def test_an_exhausted_primary_limit_waits_until_reset():
    policy = RetryPolicy()
    wait = rate_limit_wait(403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1100"}, "", policy=policy, now=1000)
    assert 100 <= wait <= 102


def test_a_secondary_limit_without_retry_after_waits_a_minute():
    policy = RetryPolicy()
    assert rate_limit_wait(403, {}, "You have exceeded a secondary rate limit", policy=policy) == 60


def test_a_plain_403_is_not_a_rate_limit():
    assert rate_limit_wait(403, {"x-ratelimit-remaining": "4000"}, "Resource not accessible by integration",
                           policy=RetryPolicy()) is None


def test_backoff_is_bounded_jittered_and_grows():
    policy = RetryPolicy(base_s=1, cap_s=8)
    waits = [[policy.backoff(a) for _ in range(200)] for a in (1, 2, 3, 4, 5, 6)]
    assert all(0 <= w <= 8 for ws in waits for w in ws)
    assert max(waits[0]) <= 1 and max(waits[5]) > 4
    assert len({round(w, 6) for w in waits[3]}) > 100  # jitter: not all the same
    job = [policy.job_backoff(a) for a in (1, 2, 3, 4)]
    assert job[0] < job[3] <= policy.job_cap_s


def test_git_blob_sha_is_gits():
    assert git_blob_sha(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"


def test_changed_paths_follow_renames():
    files = [{"filename": "a.py", "status": "added"}, {"filename": "b.py", "status": "modified"},
             {"filename": "new.py", "status": "renamed", "previous_filename": "old.py"},
             {"filename": "gone.py", "status": "removed"}]
    assert changed_paths(files) == {"a.py": None, "b.py": "b.py", "new.py": "old.py", "old.py": "old.py", "gone.py": "gone.py"}


# -- against the simulator ------------------------------------------------------------------------
@pytest.fixture()
def gh(github_sim, tmp_path):
    app = github_sim.create_app()
    repo = github_sim.create_repo("radixark/miles")
    sha = repo.commit({"a.py": "same\n", "dir/b.py": "same\n", "dir/c.py": "other\n"}, branch="main")
    inst = github_sim.install(app, "radixark/miles")
    # Read timeout: PATIENCE, not a guess of how fast the simulator answers (2 s was exceeded on a
    # loaded machine, and the read sent again counted as one request too many). A test that wants
    # a timeout injects a dropped connection instead.
    github = GitHub(github_sim.url, str(app.id), app.private_key_pem,
                    policy=RetryPolicy(base_s=0.01, read_timeout_s=PATIENCE), blob_dir=tmp_path / "blobs")
    return github_sim, github, github.for_installation(inst.id), repo, sha


def test_a_tree_is_listed_once_and_equal_contents_are_fetched_once(gh):
    sim, github, client, repo, sha = gh
    tree = GitHubTree(client, "radixark/miles", sha)
    assert sorted(tree.paths()) == ["a.py", "dir/b.py", "dir/c.py"]
    assert tree.read("a.py") == b"same\n" and tree.read("dir/b.py") == b"same\n"
    assert tree.read("missing.py") is None
    tree.prefetch(["dir/c.py", "a.py"])
    again = GitHubTree(client, "radixark/miles", sha)
    assert again.read("dir/c.py") == b"other\n"
    blob_calls = [r for r in sim.requests_log if "/git/blobs/" in r["path"]]
    tree_calls = [r for r in sim.requests_log if "/git/trees/" in r["path"]]
    assert len(blob_calls) == 2 and len(tree_calls) == 1


def test_a_second_process_finds_blobs_on_disk(gh, tmp_path):
    sim, github, client, repo, sha = gh
    GitHubTree(client, "radixark/miles", sha).read("a.py")
    fresh = GitHub(github.api_url, github.auth.app_id, github.auth._key, blob_dir=tmp_path / "blobs")
    inst_id = client.installation_id
    assert GitHubTree(fresh.for_installation(inst_id), "radixark/miles", sha).read("dir/b.py") == b"same\n"
    assert len([r for r in sim.requests_log if "/git/blobs/" in r["path"]]) == 1


def test_a_conditional_request_answered_304_returns_the_cached_body(gh):
    sim, github, client, repo, sha = gh
    first = client.file_at("radixark/miles", "a.py", "main")
    second = client.file_at("radixark/miles", "a.py", "main")
    assert first == second == b"same\n"
    statuses = [r["status"] for r in sim.requests_log if r["path"].endswith("/contents/a.py")]
    assert statuses == [200, 304]


def test_an_expired_token_is_refreshed_once(gh):
    sim, github, client, repo, sha = gh
    client.tree("radixark/miles", sha)
    sim.expire_tokens()
    client.github.trees = type(client.github.trees)()  # force a real call
    assert client.tree("radixark/miles", sha)["tree"]
    assert len(sim.tokens_issued) == 2


def test_a_rate_limit_raises_without_sleeping_and_holds_back_that_installation_only(gh):
    import time

    sim, github, client, repo, sha = gh
    sim.inject_fault("GET", r"/git/trees/", "secondary_rate_limit", times=1, retry_after=30)
    started = time.monotonic()
    with pytest.raises(RateLimited) as info:
        client.tree("radixark/miles", sha)
    # raised at once: far sooner than the 30 s a sleep would take, however busy the machine
    assert 29 <= info.value.wait_s <= 31 and time.monotonic() - started < info.value.wait_s / 2
    calls = len(sim.requests_log)
    with pytest.raises(RateLimited):  # the same installation waits without asking GitHub again
        client.file_at("radixark/miles", "a.py", "main")
    assert len(sim.requests_log) == calls
    assert github._blocked.get(client.installation_id + 1) is None


def test_a_create_is_not_resent_after_a_dropped_connection(gh):
    sim, github, client, repo, sha = gh
    sim.inject_fault("POST", r"/check-runs$", "drop", times=1)
    with pytest.raises(TransientError):
        client.create_check_run("radixark/miles", {"name": "x", "head_sha": sha})
    assert len([r for r in sim.requests_log if r["method"] == "POST" and r["path"].endswith("/check-runs")]) <= 1


def test_calls_are_counted_by_endpoint_and_status(gh):
    from bot.infra import metrics

    sim, github, client, repo, sha = gh
    client.file_at("radixark/miles", "a.py", "main")
    value = metrics.GITHUB_CALLS.labels("GET", "/repos/{owner}/{repo}/contents/{path}", "200")._value.get()
    assert value >= 1
    assert metrics.RATE_LIMIT_REMAINING.labels(str(client.installation_id))._value.get() > 0


def test_calls_go_through_pygithub_which_never_sleeps_or_retries_by_itself(gh):
    import github

    sim, github_app, client, repo, sha = gh
    assert isinstance(client.gh, github.Github)
    settings = client.gh.requester.kwargs
    assert settings["retry"] is None and settings["seconds_between_requests"] == 0
    assert settings["seconds_between_writes"] == 0 and settings["base_url"] == sim.url
    fault = sim.inject_fault("GET", r"/git/trees/", "503", times=None)
    with pytest.raises(TransientError):
        client.tree_level("radixark/miles", sha)
    assert fault.hits == github_app.policy.attempts  # the policy's tries, not PyGithub's


def test_a_write_that_fails_with_a_5xx_is_not_sent_again(gh):
    sim, github, client, repo, sha = gh
    fault = sim.inject_fault("POST", r"/comments$", "502", times=None)
    with pytest.raises(TransientError):
        client.comment("radixark/miles", 1, "hello")
    assert fault.hits == 1


def test_a_file_over_a_megabyte_comes_from_its_blob(gh):
    sim, github, client, repo, sha = gh
    big = b"x = 1\n" * 200_000
    repo.commit({"big.py": big}, branch="main")
    assert client.file_at("radixark/miles", "big.py", "main") == big
    assert client.file_at("radixark/miles", "big.py", "main") == big  # 304, then the blob cache
    assert len([r for r in sim.requests_log if "/git/blobs/" in r["path"]]) == 1


def test_many_files_come_in_one_graphql_request(gh):
    sim, github, client, repo, sha = gh
    files = {f"many/f{i}.py": f"n = {i}\n" for i in range(24)}
    head = repo.commit(files, branch="main")
    tree = GitHubTree(client, "radixark/miles", head)
    tree.prefetch(list(files))
    reads = lambda: [r["operation"] for r in sim.requests_log if r["operation"] not in ("apps/create-installation-access-token", "git/get-tree")]  # noqa: E731
    assert reads() == ["graphql"]
    assert {p: tree.read(p).decode() for p in files} == files  # from the blob cache: no request
    assert reads() == ["graphql"]


def test_graphql_reads_are_batched_by_count(gh, monkeypatch):
    from bot.github import client as client_module

    sim, github, client, repo, sha = gh
    monkeypatch.setattr(client_module, "GRAPHQL_BATCH", 10)
    files = {f"many/f{i}.py": f"n = {i}\n" for i in range(25)}
    head = repo.commit(files, branch="main")
    # The first batch answered late, as by a simulator starved of CPU: waited for, not sent again.
    sim.inject_fault("POST", r"^/graphql$", "slow", times=1, delay=2.5)
    found = client.read_paths("radixark/miles", [f"{head}:{p}" for p in files])
    assert {e.split(":", 1)[1]: data.decode() for e, (_, data) in found.items()} == files
    assert len([r for r in sim.requests_log if r["operation"] == "graphql"]) == 3


def test_an_unlisted_tree_reads_known_paths_without_a_listing(gh):
    sim, github, client, repo, sha = gh
    base = GitHubTree(client, "radixark/miles", sha, listed=False)
    base.prefetch(["a.py", "dir/b.py", "gone.py"])
    assert base.read("a.py") == b"same\n" and base.read("gone.py") is None
    assert base.read("dir/c.py") == b"other\n"  # not asked ahead: one more request for it
    assert [r["operation"] for r in sim.requests_log if not r["operation"].startswith("apps/")] == ["graphql", "graphql"]
    assert base.blob_sha("a.py") == git_blob_sha(b"same\n")


def test_bytes_graphql_cannot_carry_exactly_come_from_the_blob(gh):
    """Binary content, invalid UTF-8 and text GitHub cut (isTruncated) are read again over REST."""
    sim, github, client, repo, sha = gh
    sim.graphql.text_limit = 64
    files = {"bin.py": b"\x00\x01", "latin.py": "x = '\xe9'\n".encode("latin-1"), "long.py": b"y = 1\n" * 40, "ok.py": b"z = 2\n"}
    head = repo.commit(files, branch="main")
    tree = GitHubTree(client, "radixark/miles", head)
    tree.prefetch(list(files))
    assert {p: tree.read(p) for p in files} == files
    blobs = [r for r in sim.requests_log if "/git/blobs/" in r["path"]]
    assert len(blobs) == 3  # everything but ok.py


def test_a_repository_graphql_cannot_see_is_an_error_not_empty_files(gh):
    sim, github, client, repo, sha = gh
    sim.create_repo("radixark/private")
    with pytest.raises(GitHubError) as err:
        client.read_paths("radixark/private", [f"{sha}:a.py", f"{sha}:dir/b.py"])
    assert err.value.status == 404


def test_graphql_5xx_is_retried(gh):
    sim, github, client, repo, sha = gh
    sim.inject_fault("POST", r"^/graphql$", "502", times=1)
    found = client.read_paths("radixark/miles", [f"{sha}:a.py", f"{sha}:dir/b.py"])
    assert found[f"{sha}:a.py"][1] == b"same\n"


def test_threads_wanting_one_blob_fetch_it_once(gh):
    """Single-flight: four threads reading one cold blob at once (GitHub slow to answer) make one request."""
    import threading

    sim, github, client, repo, sha = gh
    sim.inject_fault("GET", r"/git/blobs/", "slow", times=None, delay=0.3)
    trees = [GitHubTree(github.for_installation(client.installation_id), "radixark/miles", sha) for _ in range(4)]
    results = []
    threads = [threading.Thread(target=lambda t=t: results.append(t.read("dir/c.py"))) for t in trees]
    for t in threads:
        t.start()
    for t in threads:
        t.join(PATIENCE)
    assert results == [b"other\n"] * 4
    assert len([r for r in sim.requests_log if "/git/blobs/" in r["path"]]) == 1
    assert github._flights == {}


def test_tree_listings_are_kept_compact_and_bounded(gh):
    sim, github, client, repo, sha = gh
    tree = GitHubTree(client, "radixark/miles", sha)
    assert sorted(tree.paths()) == ["a.py", "dir/b.py", "dir/c.py"]
    [cached] = [v for k, v in github.trees._data.items() if k[0] == "radixark/miles"]
    assert set(cached) == {"sha", "truncated", "packed"} and "http" not in cached["packed"]  # one string, no urls
    assert github.trees.max_bytes and 0 < github.trees._bytes < 2000


def test_a_job_log_comes_from_the_redirect_without_the_token(gh):
    sim, github, client, repo, sha = gh
    run = sim.add_workflow_run(repo, "pr-test-rocm.yml", head_sha=sha, event="pull_request", status="completed",
                               conclusion="success", jobs=[{"name": "stage-c (0)", "labels": ["linux-mi35x-gpu-8"],
                                                            "conclusion": "success", "log": "one\ntwo\n"}])
    [job] = client.run_jobs("radixark/miles", run["id"])
    assert client.job_log("radixark/miles", job["id"]) == "one\ntwo\n"
    # the simulator records a violation (checked at teardown) if the signed URL saw an Authorization header
    assert [r["status"] for r in sim.requests_log if r["path"].endswith("/logs")] == [302]


def test_tokens_and_keys_never_reach_the_logs(capsys, rsa_key):
    from bot.infra.logging import configure, get_logger, redact

    configure()
    get_logger("t").info("calling", token="ghs_abcdefghijklmnop", private_key=rsa_key,
                         note=f"Authorization: token ghs_abcdefghijklmnop and {rsa_key}")
    logging.getLogger().handlers[0].flush()
    err = capsys.readouterr().err
    line = json.loads(err.strip().splitlines()[-1])
    assert "ghs_abcdefghijklmnop" not in err and "PRIVATE KEY" not in err
    assert line["event"] == "calling"
    assert redact("x eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiIxIn0.c2lnbmF0dXJl y") == "x [redacted] y"


def test_a_file_on_a_branch_comes_with_the_branchs_commit_in_one_request(gh):
    """branch_file: the file at the branch's head and that head in one GraphQL request; the next
    branch_head of that branch in this client is that commit (no ref request), the one after asks."""
    sim, github, client, repo, sha = gh
    sim.graphql.text_limit = 64
    head = repo.commit({"cfg.yml": b"a: 1\n", "long.py": b"y = 1\n" * 40, "bin.dat": b"\x00\x01"}, branch="main")
    ops = lambda: [r["operation"] for r in sim.requests_log if not r["operation"].startswith("apps/")]  # noqa: E731
    assert client.branch_file("radixark/miles", "cfg.yml", "main") == b"a: 1\n"
    assert ops() == ["graphql"]
    repo.commit({"cfg.yml": b"a: 2\n"}, branch="main")  # the branch moves on after the read
    assert client.branch_head("radixark/miles", "main") == head  # the commit the file was read at
    assert ops() == ["graphql"]
    assert client.branch_head("radixark/miles", "main") != head  # once: then GitHub is asked again
    assert ops() == ["graphql", "git/get-ref"]
    # the default branch by name None; what GraphQL cannot carry exactly comes from the blob
    assert client.branch_file("radixark/miles", "long.py", None) == b"y = 1\n" * 40
    assert client.branch_file("radixark/miles", "bin.dat", None) == b"\x00\x01"
    assert ops()[2:] == ["graphql", "git/get-blob", "graphql", "git/get-blob"]
    # absent: a path, a directory, a branch, a repository this installation cannot read
    assert client.branch_file("radixark/miles", "missing.yml", "main") is None
    assert client.branch_file("radixark/miles", "dir", "main") is None
    assert client.branch_file("radixark/miles", "cfg.yml", "no-such-branch") is None
    sim.create_repo("radixark/private")
    assert client.branch_file("radixark/private", "cfg.yml", None) is None
    assert client.branch_file("radixark/miles", "cfg.yml", "main") == client.file_at("radixark/miles", "cfg.yml", "main") == b"a: 2\n"


def test_threads_wanting_one_tree_list_it_once(gh):
    """A /run-rocm handled beside its PR's running check lists the head once between them."""
    import threading

    sim, github, client, repo, sha = gh
    sim.inject_fault("GET", r"/git/trees/", "slow", times=None, delay=0.3)
    trees = [GitHubTree(github.for_installation(client.installation_id), "radixark/miles", sha) for _ in range(3)]
    results = []
    threads = [threading.Thread(target=lambda t=t: results.append(sorted(t.paths()))) for t in trees]
    for t in threads:
        t.start()
    for t in threads:
        t.join(PATIENCE)
    assert results == [["a.py", "dir/b.py", "dir/c.py"]] * 3
    assert len([r for r in sim.requests_log if "/git/trees/" in r["path"]]) == 1
    assert github._flights == {}


def test_a_file_longer_than_graphql_cuts_comes_from_its_blob_alone(gh):
    """Once GraphQL has cut a text, files known (from the listing) to be longer are read from
    their blobs, raw, without first coming cut through GraphQL."""
    sim, github, client, repo, sha = gh
    sim.graphql.text_limit = 64
    first = repo.commit({"long1.py": b"y = 1\n" * 40, "ok.py": b"z = 2\n"}, branch="main")
    GitHubTree(client, "radixark/miles", first).prefetch(["long1.py", "ok.py"])
    assert github.graphql_cut == 64
    before = len(sim.requests_log)
    files = {"long2.py": b"y = 2\n" * 40, "long3.py": b"y = 3\n" * 40, "ok2.py": b"z = 3\n", "ok3.py": b"z = 4\n"}
    second = repo.commit(files, branch="main")
    tree = GitHubTree(client, "radixark/miles", second)
    tree.paths()
    tree.prefetch(list(files))
    ops = [r["operation"] for r in sim.requests_log[before:] if r["operation"] not in ("git/get-tree", "apps/create-installation-access-token")]
    assert sorted(ops) == ["git/get-blob", "git/get-blob", "graphql"]
    assert {p: tree.read(p) for p in files} == files


def test_the_disk_blob_cache_writes_a_blob_once_and_survives_its_folder_removed(tmp_path):
    """BlobCache: content-addressed, so a blob on disk already is not written again; a folder
    removed by hand since this process made it is made again."""
    import shutil

    from bot.github.client import BlobCache

    cache = BlobCache(tmp_path / "blobs")
    sha = git_blob_sha(b"x = 1\n")
    cache.put(sha, b"x = 1\n")
    path = tmp_path / "blobs" / sha[:2] / sha[2:]
    assert path.read_bytes() == b"x = 1\n"
    stamp = path.stat().st_mtime_ns
    BlobCache(tmp_path / "blobs").put(sha, b"x = 1\n")  # another process, the same blob
    assert path.stat().st_mtime_ns == stamp and not list(path.parent.glob("*.tmp"))
    shutil.rmtree(tmp_path / "blobs")
    cache.put(sha, b"x = 1\n")
    assert BlobCache(tmp_path / "blobs").get(sha) == b"x = 1\n"
