"""bot/worker/calibration_pr.py's own fast tests, in-process: the refresh against an in-memory
GitHub (git objects, refs with GitHub's fast-forward rule, pull requests, comments), the
ownership checks, the hold and the verdicts an ingest compares (issue 37: its mutation target is
measured with these; tests/bot/worker/test_calibration_branch*.py and tests/bot/worker/test_calibration_pr.py run the
same cycle on the GitHub simulator over real HTTP, with PostgreSQL)."""

from __future__ import annotations

import hashlib
import itertools
import json
from datetime import datetime, timezone
from types import SimpleNamespace

import pytest

from bot.github.retry import GitHubError
from bot.worker import calibration_pr as cp
from bot.worker.calibration_pr import BRANCH, BRANCH_TAKEN, CLOSED_NOTICE, NO_PERMISSION, refresh
from checks.scanning.tree import MemoryTree

from tests import TESTS

from tests.bot.worker.calibration_support import CONFIG, KIMI, NOW, QWEN, REPO, _files, records  # noqa: F401 - re-exported to the branch tests

BOT = "ci-registrar[bot]"


def _sha(*parts) -> str:
    return hashlib.sha1(repr(parts).encode()).hexdigest()


class FakeGitHub:
    """Git objects, refs and pull requests of one repository, as the client methods refresh calls
    answer them. A ref update without force is refused (422) unless it is a fast-forward."""

    def __init__(self, files: dict[str, bytes]):
        self.blobs: dict[str, bytes] = {}
        self.trees: dict[str, dict[str, str]] = {}  # tree sha -> path -> blob sha
        self.commits: dict[str, dict] = {}
        self.refs: dict[str, str] = {}
        self.pulls: list[dict] = []
        self.comments: list[dict] = []
        self.calls: list[str] = []
        self.counter = itertools.count(1)
        self.github = SimpleNamespace(bot_login=lambda: BOT)
        self.refs["main"] = self.commit_files(files, [], "writer", verified=False)
        self.blob_error: GitHubError | None = None
        self.before_ref_update = None

    # -- building history -----------------------------------------------------------------------------
    def _tree_of(self, files: dict[str, bytes]) -> str:
        entries = {}
        for path, data in files.items():
            sha = _sha("blob", data)
            self.blobs[sha] = data
            entries[path] = sha
        sha = _sha("tree", sorted(entries.items()))
        self.trees[sha] = entries
        return sha

    def commit_files(self, files, parents, login, *, verified=True, name=None) -> str:
        sha = _sha("commit", next(self.counter))
        self.commits[sha] = {"tree": self._tree_of(files), "parents": list(parents), "login": login, "verified": verified,
                             "name": name or login}
        return sha

    def files(self, sha: str) -> dict[str, bytes]:
        return {p: self.blobs[b] for p, b in self.trees[self.commits[sha]["tree"]].items()}

    def push(self, branch: str, login: str, change: dict[str, bytes] | None = None, *, verified=False, name=None) -> str:
        parent = self.refs[branch]
        sha = self.commit_files({**self.files(parent), **(change or {"x.txt": b"theirs"})}, [parent], login,
                                verified=verified, name=name)
        self.refs[branch] = sha
        return sha

    def ancestors(self, sha: str) -> set[str]:
        seen, todo = set(), [sha]
        while todo:
            s = todo.pop()
            if s not in seen:
                seen.add(s)
                todo.extend(self.commits[s]["parents"])
        return seen

    def open_pull(self, login: str, *, kind="Bot", state="open", body="", merged=False) -> dict:
        pr = {"number": len(self.pulls) + 1, "user": {"login": login, "type": kind}, "state": state, "body": body,
              "head": {"sha": self.refs[BRANCH]}, "merged_at": "2026-06-30T00:00:00Z" if merged else None, "title": "t"}
        self.pulls.append(pr)
        return pr

    # -- what refresh calls ---------------------------------------------------------------------------
    def get_json(self, path, endpoint, params=None):
        self.calls.append(f"GET {path}")
        if path == f"/repos/{REPO}":
            return {"default_branch": "main"}
        if path.startswith(f"/repos/{REPO}/git/ref/heads/"):
            return {"object": {"sha": self.refs[path.rsplit("/heads/", 1)[1]]}}
        raise AssertionError(path)

    def pulls_from(self, repo, head):
        assert head == f"sgl-project:{BRANCH}"
        for pr in self.pulls:
            if pr["state"] == "open" and BRANCH in self.refs:
                pr["head"]["sha"] = self.refs[BRANCH]
        return [dict(pr) for pr in reversed(self.pulls)]

    def compare(self, repo, base, head):
        ahead = self.ancestors(head) - self.ancestors(base)
        ordered = sorted(ahead, key=lambda s: list(self.commits).index(s))
        return {"total_commits": len(ordered), "commits": [self._commit_json(s) for s in ordered]}

    def _commit_json(self, sha):
        c = self.commits[sha]
        account = None if c["login"] is None else {"login": c["login"]}
        return {"sha": sha, "author": account, "committer": account,
                "commit": {"verification": {"verified": c["verified"]}, "author": {"name": c["name"]}}}

    def branch_head(self, repo, branch):
        if branch not in self.refs:
            raise GitHubError(404, "Not Found", "/repos/{owner}/{repo}/git/ref/{ref}")
        return self.refs[branch]

    def tree(self, repo, sha):
        tree = self.commits[sha]["tree"] if sha in self.commits else sha
        return {"sha": tree, "truncated": False,
                "tree": [{"path": p, "mode": "100755" if p.endswith("_8gpu.py") else "100644", "type": "blob", "sha": b}
                         for p, b in self.trees[tree].items()]}

    def create_blob(self, repo, content):
        self.calls.append("POST blob")
        if self.blob_error is not None:
            raise self.blob_error
        sha = _sha("blob", content)
        self.blobs[sha] = content
        return sha

    def create_tree(self, repo, base_tree, entries):
        assert all(e["mode"] in ("100644", "100755") and e["type"] == "blob" for e in entries)
        self.modes = {e["path"]: e["mode"] for e in entries}
        files = {**{p: self.blobs[b] for p, b in self.trees[base_tree].items()}, **{e["path"]: self.blobs[e["sha"]] for e in entries}}
        return self._tree_of(files)

    def create_commit(self, repo, message, tree, parents):
        self.calls.append("POST commit")
        self.last_message = message
        sha = _sha("commit", next(self.counter))
        self.commits[sha] = {"tree": tree, "parents": list(parents), "login": BOT, "verified": True, "name": BOT}
        return sha

    def create_ref(self, repo, branch, sha):
        self.calls.append("POST ref")
        assert branch not in self.refs
        self.refs[branch] = sha

    def update_ref(self, repo, branch, sha, *, force=False):
        self.calls.append(f"PATCH ref force={force}")
        if self.before_ref_update:
            self.before_ref_update()
        if branch not in self.refs or (not force and self.refs[branch] not in self.ancestors(sha)):
            raise GitHubError(422, "Update is not a fast forward", "/repos/{owner}/{repo}/git/refs/{ref}")
        self.refs[branch] = sha

    def create_pull(self, repo, *, title, head, base, body):
        self.calls.append("POST pull")
        pr = {"number": len(self.pulls) + 1, "user": {"login": BOT, "type": "Bot"}, "state": "open", "body": body,
              "head": {"sha": self.refs[BRANCH]}, "merged_at": None, "title": title, "base": base}
        self.pulls.append(pr)
        return pr

    def update_pull(self, repo, number, body):
        self.calls.append(f"PATCH pull {sorted(body)}")
        self.pulls[number - 1].update(body)

    def comment(self, repo, number, body):
        self.calls.append("POST comment")
        self.comments.append({"id": len(self.comments) + 1, "number": number, "user": {"login": BOT}, "body": body})

    def issue_comments(self, repo, number):
        return [dict(c) for c in self.comments if c["number"] == number]

    def edit_comment(self, repo, comment_id, body):
        self.calls.append("PATCH comment")
        self.comments[comment_id - 1]["body"] = body


class _Tree(MemoryTree):
    """A commit's files, keyed by its tree, so that the checks' work on it is done once per run."""

    def __init__(self, files: dict[str, bytes], key: str):
        super().__init__(files)
        self.key = key


_DONE: dict = {}


def _once(fn, key):
    """`fn` (a pure function of checks/, never of the module under test) memoised on `key` of its
    arguments: the same tree and durations give the same report, context and edits."""
    def wrapped(*args, **kwargs):
        k = (fn.__module__, fn.__name__, key(*args, **kwargs))
        if k not in _DONE:
            _DONE[k] = fn(*args, **kwargs)
        return _DONE[k]
    return wrapped


@pytest.fixture()
def gh(monkeypatch):
    from bot.analysis import sources
    from checks import engine
    from checks.fixing import calibration_edits

    fake = FakeGitHub(_files())
    monkeypatch.setattr(sources, "GitHubTree", lambda client, repo, sha: _Tree(client.files(sha), client.commits[sha]["tree"]))
    def by_tree(tree, *a, **kw):
        return getattr(tree, "key", id(tree)), repr(a), json.dumps(kw, sort_keys=True, default=repr)
    monkeypatch.setattr(engine, "check_tree", _once(engine.check_tree, by_tree))
    monkeypatch.setattr(engine, "build_context", _once(engine.build_context, by_tree))
    monkeypatch.setattr(calibration_edits, "plan_edits", _once(calibration_edits.plan_edits, lambda changes, read: repr(
        [(d.registration.file, d.registration.anchor("est_time").line, d.old, d.new, hashlib.sha1(read(d.registration.file).encode()).hexdigest())
         for d in changes])))
    return fake


def _est(gh, path, branch=BRANCH) -> bytes:
    return gh.files(gh.refs[branch])[path]


# -- the cycle -------------------------------------------------------------------------------------------
def test_open_then_unchanged_then_update_in_place_then_close(gh):
    main = gh.refs["main"]
    out = refresh(gh, REPO, records(), now=NOW)
    assert (out.action, out.number, out.changes) == ("opened", 1, 4) and out.every_days == 7
    assert gh.refs["main"] == main and gh.commits[gh.refs[BRANCH]]["parents"] == [main]
    assert b"register_amd_ci(est_time=740," in _est(gh, KIMI) and b"register_amd_ci(est_time=450," in _est(gh, QWEN)
    assert gh.modes[QWEN] == "100755" and gh.modes[KIMI] == "100644"  # each file keeps its mode
    assert gh.last_message.startswith("Calibrate 4 est_time values from stored MI355X durations\n\n")
    pr = gh.pulls[0]
    print_ = cp._marker(pr["body"])
    assert print_ and len(print_) == 16 and pr["base"] == "main"
    assert json.loads(out.verdicts)["minimum"] in (0, 1)

    calls = len(gh.calls)
    again = refresh(gh, REPO, records(), now=NOW)
    assert (again.action, again.number, again.changes) == ("unchanged", 1, 4)
    assert not [c for c in gh.calls[calls:] if not c.startswith("GET")]  # nothing written

    first = gh.refs[BRANCH]
    updated = refresh(gh, REPO, records(**{QWEN: 100}), now=NOW)
    assert (updated.action, updated.number) == ("updated", 1)
    assert gh.commits[gh.refs[BRANCH]]["parents"] == [first, main]  # a fast-forward from the App's commit
    assert "PATCH ref force=False" in gh.calls and cp._marker(gh.pulls[0]["body"]) != print_
    assert gh.pulls[0]["title"] == cp.TITLE

    opened_body = gh.pulls[0]["body"]
    closed = refresh(gh, REPO, [], now=NOW)
    assert (closed.action, closed.number) == ("closed", 1) and gh.pulls[0]["state"] == "closed"
    assert gh.comments[-1]["body"] == CLOSED_NOTICE and gh.pulls[0]["body"].endswith("<!-- ci-registrar calibration: none -->")
    # the body's text is kept, its marker replaced: one marker, after the text it had
    body = gh.pulls[0]["body"]
    assert body.count("<!-- ci-registrar") == 1 and body.startswith(opened_body[:200]) and len(body) > 200
    assert refresh(gh, REPO, [], now=NOW).action == "nothing"


def test_nothing_to_change_and_no_pull_request_writes_nothing(gh):
    out = refresh(gh, REPO, [], now=NOW)
    assert (out.action, out.number, out.changes) == ("nothing", None, 0) and out.verdicts is not None
    assert not [c for c in gh.calls if not c.startswith("GET")] and BRANCH not in gh.refs


def test_a_pull_request_a_maintainer_closed_stays_closed_until_the_values_change(gh):
    opened = refresh(gh, REPO, records(), now=NOW)
    gh.pulls[0]["state"] = "closed"
    kept = refresh(gh, REPO, records(), now=NOW)
    assert (kept.action, kept.number, kept.changes) == ("kept-closed", opened.number, 4)
    # a merged one with the same values is not "closed by a maintainer": the values are proposed again
    gh.pulls[0]["merged_at"] = "2026-06-30T00:00:00Z"
    assert refresh(gh, REPO, records(), now=NOW).action == "opened"


def test_a_new_value_reopens_from_the_apps_branch(gh):
    refresh(gh, REPO, records(), now=NOW)
    gh.pulls[0]["state"] = "closed"
    app_head = gh.refs[BRANCH]
    out = refresh(gh, REPO, records(**{QWEN: 100}), now=NOW)
    assert out.action == "opened" and out.number == 2
    assert gh.commits[gh.refs[BRANCH]]["parents"] == [app_head, gh.refs["main"]]


def test_a_branch_left_at_the_default_branch_is_moved_without_a_merge(gh):
    gh.refs[BRANCH] = gh.refs["main"]
    out = refresh(gh, REPO, records(), now=NOW)
    assert out.action == "opened" and gh.commits[gh.refs[BRANCH]]["parents"] == [gh.refs["main"]]


def test_disabled_unless_the_configuration_asks_and_an_invalid_one_is_named(gh, monkeypatch):
    files = _files()
    files[".github/ci-registrar.yml"] = (TESTS.parent / "docs" / "configs" / "sglang.yml").read_bytes()
    off = FakeGitHub(files)
    out = refresh(off, REPO, records, now=NOW)
    assert out.action == "disabled" and "calibration.pull_requests is not set" in out.message
    assert refresh(off, REPO, records(), now=NOW, require_enabled=False).action == "opened"
    files[".github/ci-registrar.yml"] = b"calibration:\n  pull_requests: maybe\n"
    bad = refresh(FakeGitHub(files), REPO, records(), now=NOW)
    assert bad.action == "nothing" and bad.message.startswith(".github/ci-registrar.yml is invalid: ")
    assert bad.verdicts is None


def test_records_may_be_given_as_a_callable_read_only_when_enabled(gh):
    asked = []
    out = refresh(gh, REPO, lambda: asked.append(1) or records(), now=NOW)
    assert out.action == "opened" and asked == [1]


def test_without_contents_write_nothing_is_changed(gh):
    gh.blob_error = GitHubError(403, "Resource not accessible by integration")
    out = refresh(gh, REPO, records(), now=NOW)
    assert (out.action, out.number, out.changes) == ("no-permission", None, 4)
    assert out.message == NO_PERMISSION.format(branch=BRANCH) and BRANCH not in gh.refs
    gh.blob_error = GitHubError(404, "Not Found")
    assert refresh(gh, REPO, records(), now=NOW).action == "no-permission"
    gh.blob_error = GitHubError(409, "Conflict")
    with pytest.raises(GitHubError):
        refresh(gh, REPO, records(), now=NOW)


def test_no_permission_on_an_open_pull_request_names_it(gh):
    refresh(gh, REPO, records(), now=NOW)
    gh.blob_error = GitHubError(403, "Resource not accessible by integration")
    out = refresh(gh, REPO, records(**{QWEN: 100}), now=NOW)
    assert (out.action, out.number) == ("no-permission", 1)


# -- whose branch it is -----------------------------------------------------------------------------------
def test_someone_elses_push_holds_the_pull_request_with_one_comment(gh):
    refresh(gh, REPO, records(), now=NOW)
    theirs = gh.push(BRANCH, "alice")
    before = len(gh.calls)
    out = refresh(gh, REPO, records(**{QWEN: 100}), now=NOW)
    assert (out.action, out.number, out.changes) == ("held", 1, 4)
    assert out.message == f"someone else pushed to {BRANCH}: `{theirs[:7]}` by alice"
    assert gh.refs[BRANCH] == theirs and "PATCH ref force=False" not in gh.calls[before:]
    (held,) = [c["body"] for c in gh.comments]
    assert f"held: {theirs} " in held and "| file | line | old | new | why |" in held
    # the next refresh with the same values posts nothing; new values edit the one comment
    refresh(gh, REPO, records(**{QWEN: 100}), now=NOW)
    assert len(gh.comments) == 1 and gh.calls[-1] != "PATCH comment"
    refresh(gh, REPO, records(**{QWEN: 200}), now=NOW)
    assert len(gh.comments) == 1 and gh.calls[-1] == "PATCH comment" and gh.comments[0]["body"] != held
    # nothing left to write: still held, and it says so
    out = refresh(gh, REPO, [], now=NOW)
    assert out.action == "held" and "It would write nothing now" in gh.comments[0]["body"] and gh.pulls[0]["state"] == "open"


def test_a_held_comment_of_someone_else_or_another_comment_of_the_apps_is_not_edited(gh):
    refresh(gh, REPO, records(), now=NOW)
    gh.push(BRANCH, "alice")
    gh.comments.append({"id": 1, "number": 1, "user": {"login": "alice"},
                        "body": f"<!-- ci-registrar calibration held: {'a' * 40} {'b' * 16} -->"})
    gh.comments.append({"id": 2, "number": 1, "user": {"login": BOT}, "body": "an unrelated comment of the App's"})
    before = [c["body"] for c in gh.comments]
    assert refresh(gh, REPO, records(), now=NOW).action == "held"
    assert [c["body"] for c in gh.comments[:2]] == before and len(gh.comments) == 3  # its own, new
    assert "PATCH comment" not in gh.calls


def test_a_commit_naming_the_bot_without_githubs_signature_is_not_the_apps(gh):
    refresh(gh, REPO, records(), now=NOW)
    forged = gh.push(BRANCH, BOT, verified=False)
    out = refresh(gh, REPO, records(**{QWEN: 100}), now=NOW)
    assert out.action == "held" and f"`{forged[:7]}` by {BOT}" in out.message


def test_a_branch_of_someone_elses_work_is_never_moved(gh):
    gh.refs[BRANCH] = gh.refs["main"]
    theirs = gh.push(BRANCH, None, name="Bob Builder")
    out = refresh(gh, REPO, records(), now=NOW)
    assert (out.action, out.number, out.changes) == ("branch-taken", None, 4)
    assert out.message == BRANCH_TAKEN.format(branch=BRANCH, who=f"`{theirs[:7]}` by Bob Builder")
    assert gh.refs[BRANCH] == theirs and not gh.pulls


def test_someone_elses_pull_request_from_the_branch_is_never_adopted(gh):
    gh.refs[BRANCH] = gh.refs["main"]
    other = gh.open_pull("renovate[bot]")
    human = gh.open_pull(BOT, kind="User")  # a person whose login looks like the bot's
    out = refresh(gh, REPO, records(), now=NOW)
    assert out.action == "branch-taken" and f"pull request #{human['number']}" in out.message
    assert gh.pulls[other["number"] - 1]["title"] == "t"
    gh.pulls[0]["state"] = gh.pulls[1]["state"] = "closed"  # closed: the branch is free again
    assert refresh(gh, REPO, records(), now=NOW).action == "opened"


def test_the_apps_own_commits_keep_the_branch_the_apps(gh):
    gh.refs[BRANCH] = gh.refs["main"]
    mine = gh.push(BRANCH, BOT, verified=True)
    out = refresh(gh, REPO, records(), now=NOW)
    assert out.action == "opened" and gh.commits[gh.refs[BRANCH]]["parents"] == [mine, gh.refs["main"]]


def test_a_listing_github_cut_short_is_someone_elses(gh):
    refresh(gh, REPO, records(), now=NOW)
    real = gh.compare
    gh.compare = lambda repo, base, head: {**real(repo, base, head), "total_commits": 300}
    out = refresh(gh, REPO, records(**{QWEN: 100}), now=NOW)
    assert out.action == "held"  # the App's own commit, but GitHub did not list all 300
    gh.compare = lambda repo, base, head: {"total_commits": 300, "commits": []}
    out = refresh(gh, REPO, records(**{QWEN: 100}), now=NOW)
    assert out.action == "held" and f"`{gh.refs[BRANCH][:7]}` by an unknown author" in out.message


def test_who_names_five_and_counts_the_rest():
    commits = [{"sha": f"{i}" * 40, "author": {"login": f"u{i}"}} for i in range(7)]
    assert cp._who(commits[:5]) == ", ".join(f"`{str(i) * 7}` by u{i}" for i in range(5))
    assert cp._who(commits) == ", ".join(f"`{str(i) * 7}` by u{i}" for i in range(5)) + " and 2 more"
    assert cp._who([{"sha": "f" * 40, "author": None, "commit": {"author": {"name": "Eve\u202e"}}}]).startswith("`fffffff` by Eve")
    assert "\u202e" not in cp._who([{"sha": "f" * 40, "author": None, "commit": {"author": {"name": "Eve\u202e"}}}])


def test_is_app_commit_needs_author_committer_and_signature():
    ok = {"author": {"login": BOT}, "committer": {"login": BOT}, "commit": {"verification": {"verified": True}}}
    assert cp.is_app_commit(ok, BOT)
    assert not cp.is_app_commit({**ok, "author": {"login": "alice"}}, BOT)
    assert not cp.is_app_commit({**ok, "committer": {"login": "web-flow"}}, BOT)
    assert not cp.is_app_commit({**ok, "commit": {"verification": {"verified": False}}}, BOT)
    assert not cp.is_app_commit({"author": None, "committer": None, "commit": None}, BOT)


def test_by_app_needs_the_bots_login_and_a_bot_account():
    assert cp._by_app({"user": {"login": BOT, "type": "Bot"}}, BOT)
    assert not cp._by_app({"user": {"login": BOT, "type": "User"}}, BOT)
    assert not cp._by_app({"user": {"login": "x[bot]", "type": "Bot"}}, BOT)
    assert not cp._by_app({"user": None}, BOT)


# -- the race: a push between the App's read and its write ------------------------------------------------
def test_a_push_between_the_read_and_the_write_holds_and_overwrites_nothing(gh):
    refresh(gh, REPO, records(), now=NOW)
    pushed = []
    gh.before_ref_update = lambda: pushed.append(gh.push(BRANCH, "alice")) if not pushed else None
    out = refresh(gh, REPO, records(**{QWEN: 100}), now=NOW)
    assert out.action == "held" and gh.refs[BRANCH] == pushed[0]
    assert f"held: {pushed[0]} " in gh.comments[0]["body"]  # the head it found, not the one it read


def test_a_push_to_a_branch_without_the_apps_pull_request_leaves_it_to_them(gh):
    gh.refs[BRANCH] = gh.refs["main"]
    mine = gh.push(BRANCH, BOT, verified=True)
    pushed = []
    gh.before_ref_update = lambda: pushed.append(gh.push(BRANCH, "alice")) if not pushed else None
    out = refresh(gh, REPO, records(), now=NOW)
    assert (out.action, out.number) == ("branch-taken", None) and f"`{pushed[0][:7]}` by alice" in out.message
    assert gh.refs[BRANCH] == pushed[0] and mine in gh.ancestors(pushed[0])


def test_the_apps_own_commit_meanwhile_is_left_for_the_next_refresh(gh):
    refresh(gh, REPO, records(), now=NOW)
    pushed = []
    gh.before_ref_update = lambda: pushed.append(gh.push(BRANCH, BOT, verified=True)) if not pushed else None
    out = refresh(gh, REPO, records(**{QWEN: 100}), now=NOW)
    assert (out.action, out.number, out.changes) == ("unchanged", 1, 4) and not gh.comments
    assert gh.refs[BRANCH] == pushed[0]


def test_a_branch_deleted_between_the_read_and_the_write_says_so_and_asks_to_retry(gh):
    refresh(gh, REPO, records(), now=NOW)
    gh.before_ref_update = lambda: gh.refs.pop(BRANCH, None)
    out = refresh(gh, REPO, records(**{QWEN: 100}), now=NOW)
    assert (out.action, out.number, out.changes) == ("branch-deleted", 1, 4)
    assert "deleted" in out.message and "next refresh" in out.message
    assert BRANCH not in gh.refs and not gh.comments


def test_a_refusal_other_than_a_fast_forwards_is_raised(gh):
    refresh(gh, REPO, records(), now=NOW)

    def fail():
        raise GitHubError(409, "Conflict")
    gh.before_ref_update = fail
    with pytest.raises(GitHubError):
        refresh(gh, REPO, records(**{QWEN: 100}), now=NOW)


def test_branch_head_is_none_only_when_github_says_404(gh):
    assert cp._branch_head(gh, REPO) is None
    gh.refs[BRANCH] = gh.refs["main"]
    assert cp._branch_head(gh, REPO) == gh.refs["main"]
    gh.branch_head = lambda repo, branch: (_ for _ in ()).throw(GitHubError(403, "Forbidden"))
    with pytest.raises(GitHubError):
        cp._branch_head(gh, REPO)


# -- the file mode, through a listing GitHub cut short --------------------------------------------------
def test_the_mode_of_a_file_in_a_truncated_listing_is_walked_for():
    levels = {"root": [{"path": "test", "sha": "t1", "type": "tree", "mode": "040000"}],
              "t1": [{"path": "run.py", "sha": "b1", "type": "blob", "mode": "100755"}]}
    client = SimpleNamespace(tree_level=lambda repo, sha: {"tree": levels[sha]})
    listing = {"sha": "root", "truncated": True, "tree": [{"path": "other.py", "mode": "100644"}]}
    assert cp._mode(client, REPO, listing, "other.py") == "100644"
    assert cp._mode(client, REPO, listing, "test/run.py") == "100755"
    for missing in ("test/gone.py", "nowhere/run.py"):
        with pytest.raises(ValueError, match="is not in the default branch's tree"):
            cp._mode(client, REPO, listing, missing)
    with pytest.raises(ValueError, match="is not in the default branch's tree"):
        cp._mode(client, REPO, {**listing, "truncated": False}, "test/run.py")


# -- the markers -----------------------------------------------------------------------------------------
def test_the_markers():
    assert cp._marker(f"body\n<!-- ci-registrar calibration: {'0123456789abcdef'} -->") == "0123456789abcdef"
    assert cp._marker("<!-- ci-registrar calibration: none -->") == "none"
    assert cp._marker("<!-- ci-registrar calibration: 0123456789abcde -->") is None  # 15 digits
    assert cp._marker("<!-- ci-registrar calibration: 0123456789ABCDEF -->") is None
    assert cp._marker(None) is None and cp._marker("") is None
    assert cp._HELD.search(f"<!-- ci-registrar calibration held: {'a' * 40} {'b' * 16} -->")
    assert not cp._HELD.search(f"<!-- ci-registrar calibration held: {'a' * 39} {'b' * 16} -->")
    assert not cp._HELD.search(f"<!-- ci-registrar calibration held: {'a' * 40} {'b' * 15} -->")


# -- the verdicts an ingest compares ------------------------------------------------------------------------
def test_the_verdicts_a_refresh_records_and_what_an_ingest_finds_changed(gh):
    from checks.config.schema import load_config

    out = refresh(gh, REPO, records(), now=NOW)
    seen = json.loads(out.verdicts)
    files = {row[0]: row for row in seen["files"]}
    assert files[QWEN][4] is True and files[QWEN][1] == "rocm" and files[QWEN][3]
    assert [row[0] for row in seen["files"]] == sorted(row[0] for row in seen["files"])
    params = load_config(CONFIG.encode())[0].calibration
    assert cp.changed_verdicts(out.verdicts, records(), params, now=NOW, repository=REPO) == []
    flipped = {**seen, "files": [[*row[:4], not row[4]] if row[0] == QWEN else row for row in seen["files"]]}
    assert cp.changed_verdicts(json.dumps(flipped), records(), params, now=NOW, repository=REPO) == [QWEN]


def test_the_reply_to_a_command_says_what_happened_not_nothing_to_calibrate():
    from bot.worker.handlers.calibration import answer

    deleted = cp.Outcome("branch-deleted", 3, 4, cp.BRANCH_DELETED.format(branch=BRANCH))
    text = answer("maint", deleted, REPO)
    assert text.startswith(f"@maint The branch `{BRANCH}` was deleted while the App was writing to it")
    assert "nothing to calibrate" not in text and text.endswith("Ask again (`/calibrate-est-time`) to open it now.")
    invalid = cp.Outcome("nothing", message=".github/ci-registrar.yml is invalid: margin: must be at least 1")
    assert answer("maint", invalid, REPO) == "@maint .github/ci-registrar.yml is invalid: margin: must be at least 1"
    assert answer("maint", cp.Outcome("nothing"), REPO) == "@maint nothing to calibrate: every est_time fits the stored durations."


# -- after an ingest: ask for a refresh when a verdict changed, at most once per interval ------------------
def test_an_ingest_asks_for_a_refresh_when_a_verdict_changed_once_per_interval(monkeypatch):
    from datetime import timedelta

    from bot.store import calibration as runs
    from bot.durations import export as durations
    from checks.config.schema import load_config

    params = load_config(CONFIG.encode())[0].calibration
    assert params.pull_requests and params.ingest_refresh_every_hours > 0
    every = timedelta(hours=params.ingest_refresh_every_hours)
    flagged = json.dumps({"minimum": 0, "files": [[QWEN, "rocm", 100.0, "stage-c-test-large-8-gpu-amd-mi35x", False]]})
    state = {"seen": flagged, "asked_at": None, "granted": True, "requests": []}
    monkeypatch.setattr(runs, "last_verdicts", lambda url, repo: (state["seen"], state["asked_at"]))
    monkeypatch.setattr(runs, "request", lambda url, repo, seen, now, ev: state["requests"].append((seen, now, ev)) or state["granted"])
    monkeypatch.setattr(durations, "export_records", lambda url, repository: records())

    assert cp.after_ingest("db", REPO, params, now=NOW) == [QWEN]  # est_time 100 s is flagged now
    assert state["requests"] == [(flagged, NOW, every)]
    state["asked_at"] = NOW - every + timedelta(seconds=1)  # asked within the interval
    assert cp.after_ingest("db", REPO, params, now=NOW) == [] and len(state["requests"]) == 1
    state["asked_at"] = NOW - every  # exactly one interval ago: may ask again
    assert cp.after_ingest("db", REPO, params, now=NOW) == [QWEN] and len(state["requests"]) == 2
    state["granted"] = False  # another ingest asked first
    assert cp.after_ingest("db", REPO, params, now=NOW) == []
    state["granted"], state["seen"] = True, None  # no refresh yet: the schedule does the first
    assert cp.after_ingest("db", REPO, params, now=NOW) == [] and len(state["requests"]) == 3
    same = json.dumps({"minimum": 0, "files": [[QWEN, "rocm", 100.0, "stage-c-test-large-8-gpu-amd-mi35x", True]]})
    state["seen"] = same  # the verdict is what it was: nothing asked
    assert cp.after_ingest("db", REPO, params, now=NOW) == [] and len(state["requests"]) == 3
    state["seen"] = flagged
    import msgspec

    for changed in ({"pull_requests": False}, {"ingest_refresh_every_hours": 0}):
        assert cp.after_ingest("db", REPO, msgspec.structs.replace(params, **changed), now=NOW) == []
    assert len(state["requests"]) == 3
    # without `now`, the clock's: a request a minute old is within the interval
    state["asked_at"] = datetime.now(timezone.utc) - timedelta(minutes=1)
    assert cp.after_ingest("db", REPO, params) == [] and len(state["requests"]) == 3
