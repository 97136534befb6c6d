"""The simulator's records: Apps, installations, repositories, pull requests, faults, deliveries."""

from __future__ import annotations

import hashlib
import hmac
import re
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

from .gitobjects import ObjectStore

SECONDARY_MESSAGE = ("You have exceeded a secondary rate limit. Please wait a few minutes before "
                     "you try again. If you reach out to GitHub Support for help, please include "
                     "the request ID.")
RATE_DOCS = "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api"
JWT_PATHS = re.compile(r"^/app(/|$)|^/repos/[^/]+/[^/]+/installation$")
# The App permission each operation needs from an installation token: alternatives, any suffices.
OPERATION_PERMISSIONS = {
    "repos/get": [("metadata", "read")],
    "repos/get-collaborator-permission-level": [("metadata", "read")],
    "pulls/get": [("pull_requests", "read")],
    "pulls/list-files": [("pull_requests", "read")],
    "pulls/create-review-comment": [("pull_requests", "write")],
    "pulls/create-review": [("pull_requests", "write")],
    "repos/get-content": [("contents", "read")],
    "git/get-blob": [("contents", "read")],
    "git/get-tree": [("contents", "read")],
    "git/get-ref": [("contents", "read")],
    "repos/get-commit": [("contents", "read")],
    "git/create-blob": [("contents", "write")],
    "git/create-tree": [("contents", "write")],
    "git/create-commit": [("contents", "write")],
    "git/create-ref": [("contents", "write")],
    "git/update-ref": [("contents", "write")],
    "pulls/list": [("pull_requests", "read")],
    "pulls/create": [("pull_requests", "write")],
    "pulls/update": [("pull_requests", "write")],
    "repos/compare-commits-with-basehead": [("contents", "read")],
    "issues/list-comments": [("issues", "read"), ("pull_requests", "read")],
    "issues/get-comment": [("issues", "read"), ("pull_requests", "read")],
    "issues/create-comment": [("issues", "write"), ("pull_requests", "write")],
    "issues/update-comment": [("issues", "write"), ("pull_requests", "write")],
    "reactions/create-for-issue-comment": [("issues", "write"), ("pull_requests", "write")],
    "checks/create": [("checks", "write")],
    "checks/update": [("checks", "write")],
    "checks/get": [("checks", "read")],
    "checks/list-annotations": [("checks", "read")],
    "checks/list-for-ref": [("checks", "read")],
    "actions/create-workflow-dispatch": [("actions", "write")],
    "actions/list-workflow-runs-for-repo": [("actions", "read")],
    "actions/get-workflow-run": [("actions", "read")],
    "actions/cancel-workflow-run": [("actions", "write")],
    "actions/list-jobs-for-workflow-run": [("actions", "read")],
    "actions/download-job-logs-for-workflow-run": [("actions", "read")],
    # an organization permission: the App must request "members: read"
    "teams/get-membership-for-user-in-org": [("members", "read")],
}
# Operations a user access token ("ghu_", the App's sign-in web flow) may call.
USER_OPERATIONS = {"users/get-authenticated", "apps/list-installations-for-authenticated-user",
                   "apps/list-installation-repos-for-authenticated-user"}
LEVELS = {"read": 1, "write": 2, "admin": 3}
# Statuses GitHub may answer on any operation although the description does not list them all.
GENERIC_STATUSES = {304, 401, 403, 404, 422, 429, 500, 502, 503}


def iso(ts: float) -> str:
    return datetime.fromtimestamp(int(ts), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def sign(body: bytes, secret: str) -> str:
    """X-Hub-Signature-256 exactly as GitHub computes it."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class SimulatorError(AssertionError):
    """A webhook or state the simulator was asked to build is invalid."""


class ApiError(Exception):
    def __init__(self, status: int, message: str, headers: dict | None = None, **extra):
        super().__init__(message)
        self.status, self.message, self.headers, self.extra = status, message, headers or {}, extra


@dataclass
class App:
    id: int
    slug: str
    name: str
    owner: str
    client_id: str
    client_secret: str
    webhook_secret: str
    private_key_pem: str
    public_key: object = field(repr=False)
    permissions: dict = field(default_factory=dict)
    events: list = field(default_factory=list)
    hook_id: int = 0
    callback_urls: list = field(default_factory=list)  # the manifest's callback_urls (user sign-in)

    @property
    def bot_login(self) -> str:
        return f"{self.slug}[bot]"


@dataclass
class Installation:
    id: int
    app: App
    account: str
    repos: list = field(default_factory=list)   # full names
    permissions: dict = field(default_factory=dict)


@dataclass
class PullRequest:
    repo: "Repo"
    number: int
    head_ref: str
    base_ref: str
    head_sha: str
    base_sha: str
    author: str
    title: str
    body: str
    draft: bool = False
    state: str = "open"
    merged: bool = False
    created_at: float = 0.0
    updated_at: float = 0.0   # moves with every push to the head branch, as GitHub's does
    id: int = 0
    head_repo: "Repo | None" = None   # the fork the head branch lives in (None: same repository)

    @property
    def head_repository(self) -> "Repo":
        return self.head_repo or self.repo

    @property
    def is_fork(self) -> bool:
        return self.head_repo is not None and self.head_repo is not self.repo

    @property
    def files(self) -> list[dict]:
        store = self.repo.store
        base = store.merge_base(self.base_sha, self.head_sha) or self.base_sha
        return store.diff(base, self.head_sha)


class Repo:
    """A repository: real git objects, branches, workflows, and the objects GitHub keeps for it."""

    def __init__(self, sim: "GitHubSimulator", full_name: str, default_branch: str, private: bool,
                 repo_id: int):
        self.sim = sim
        self.full_name = full_name
        self.owner, self.name = full_name.split("/")
        self.default_branch = default_branch
        self.private = private
        self.id = repo_id
        self.store = ObjectStore()
        self.branches: dict[str, str] = {}
        self.workflows: dict[int, dict] = {}
        self.parent: Repo | None = None   # set on forks (sim.fork)
        self.clock = 1_767_225_600  # 2026-01-01, advanced one minute per commit
        # GitHub's `pushed_at`: the server's time of the latest push to any branch (a commit's own
        # dates are the pusher's to choose; this one is not).
        self.pushed_at = time.time()

    def __repr__(self) -> str:
        return f"Repo({self.full_name!r})"

    def commit(self, files: dict, parent: str | None = None, branch: str | None = None,
               message: str = "commit", author: str = "octocat", replace: bool = False,
               modes: dict[str, str] | None = None, email: str | None = None,
               committer: str | None = None, committer_email: str | None = None, signed: bool = False) -> str:
        """A push by a person (git's identity is theirs to write: `email` may claim anyone's
        address; such a commit is never signed by GitHub). modes: path -> "100755" for an
        executable file (kept from the parent unless given). signed: an edit made on GitHub's web
        pages, which GitHub signs as its committer `web-flow` (GitHub <noreply@github.com>)."""
        with self.sim.lock:
            branch = branch or self.default_branch
            if parent is None:
                parent = self.branches.get(branch) or self.branches.get(self.default_branch)
            base = {} if (replace or parent is None) else dict(self.store.commits[parent].files)
            kept = {} if (replace or parent is None) else dict(self.store.commits[parent].modes)
            kept.update(modes or {})
            for path, content in files.items():
                if content is None:
                    base.pop(path, None)
                else:
                    base[path] = content.encode() if isinstance(content, str) else bytes(content)
            self.clock += 60
            email = email or f"{author}@users.noreply.github.com"
            sha = self.store.put_commit(base, [parent] if parent else [], message, author, email, self.clock,
                                        committer=committer or "",
                                        committer_email=committer_email or (f"{committer}@users.noreply.github.com" if committer else ""),
                                        modes=kept, signed=signed)
            self.branches[branch] = sha
            self.pushed_at = time.time()
            return sha

    def head(self, branch: str | None = None) -> str:
        return self.branches[branch or self.default_branch]

    def set_branch(self, branch: str, sha: str) -> None:
        self.branches[branch] = sha
        self.pushed_at = time.time()  # a force push is a push

    def files(self, sha: str) -> dict[str, bytes]:
        return dict(self.store.commits[sha].files)

    def add_workflow(self, path: str, name: str | None = None, dispatchable: bool = True,
                     run_name: str | None = None, inputs: dict | None = None) -> dict:
        """run_name: the workflow's `run-name:`; `${{ inputs.X }}` in it is filled from a dispatch's inputs.
        inputs: its `on.workflow_dispatch.inputs` (name -> {required, default, ...}); when given, a
        dispatch is checked against them as GitHub checks it (see add_workflow_file)."""
        with self.sim.lock:
            path = path if path.startswith(".github/") else f".github/workflows/{path}"
            wf = {"id": self.sim._next_id(), "path": path, "name": name or path.rsplit("/", 1)[-1],
                  "file": path.rsplit("/", 1)[-1], "dispatchable": dispatchable, "run_name": run_name,
                  "inputs": dict(inputs) if inputs is not None else None}
            self.workflows[wf["id"]] = wf
            return dict(wf)

    def add_workflow_file(self, path: str, text: str) -> dict:
        """A workflow as its YAML declares it: name, run-name, whether it has workflow_dispatch, its inputs."""
        import yaml

        doc = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # libyaml: 10x the pure loader
        on = doc.get("on", doc.get(True)) or {}
        if isinstance(on, str):
            on = {on: None}
        elif isinstance(on, list):
            on = {event: None for event in on}
        dispatch = on.get("workflow_dispatch", False) if "workflow_dispatch" in on else None
        inputs = (dispatch or {}).get("inputs") or {} if dispatch is not None else None
        return self.add_workflow(path, name=doc.get("name"), dispatchable=dispatch is not None,
                                 run_name=doc.get("run-name"), inputs=inputs)

    def workflow(self, key) -> dict | None:
        for wf in self.workflows.values():
            if str(wf["id"]) == str(key) or wf["file"] == key or wf["path"] == key:
                return wf
        return None

    def resolve(self, ref: str | None) -> str | None:
        """A commit SHA for a branch name, refs/heads/x, heads/x or a (full) commit SHA."""
        if ref is None:
            return self.branches.get(self.default_branch)
        for prefix in ("refs/heads/", "heads/"):
            if ref.startswith(prefix):
                ref = ref[len(prefix):]
        if ref in self.branches:
            return self.branches[ref]
        if re.fullmatch(r"[0-9a-f]{7,40}", ref):
            matches = [s for s in self.store.commits if s.startswith(ref)]
            if len(matches) == 1:
                return matches[0]
        return None


@dataclass
class Fault:
    method: str
    path_regex: str
    kind: str
    times: int | None
    params: dict
    hits: int = 0
    # A "slow" answer waits `delay` seconds or until release(), whichever comes first: a test holds
    # GitHub's answer for as long as its scene needs (an event), not for a guessed number of seconds.
    released: threading.Event = field(default_factory=threading.Event)

    def release(self) -> None:
        """Answer every request this fault holds now (and later ones at once)."""
        self.released.set()

    def matches(self, method: str, path: str) -> bool:
        if self.times is not None and self.hits >= self.times:
            return False
        return (self.method in ("*", method)) and re.search(self.path_regex, path) is not None


@dataclass
class Delivery:
    event: str
    action: str | None
    delivery_id: str
    headers: dict
    body: bytes
    payload: dict
    secret: str = ""
