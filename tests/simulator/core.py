"""The simulator: state, its Python API, and the HTTP front (auth, validation, rate limits, faults)."""

from __future__ import annotations

import copy
import hashlib
import json
import re
import secrets
import threading
import time
import uuid
from urllib.parse import unquote, urlencode

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from .model import (GENERIC_STATUSES, JWT_PATHS, LEVELS, OPERATION_PERMISSIONS,  # noqa: F401
                    RATE_DOCS, SECONDARY_MESSAGE, ApiError, App, Delivery, Fault, Installation, PullRequest, Repo,
                    SimulatorError, iso, sign)
from .graphql import GraphQLEndpoint
from .manifests import manifest_errors
from .operations import RestOperations
from .gitwrite import GitWriteOperations
from .schemas import BAD_JSON, NO_BODY, RestDescription, WebhookDescription
from .server import LoopbackServer, Request, Response
from .views import JsonViews



# An RSA key costs ~50 ms of CPU to make, and the suite starts a few hundred simulators. Apps of
# one simulator get distinct keys (a JWT signed with one App's key is refused for another), but
# the n-th App of every simulator in a process gets the same one: simulators share nothing else.
_APP_KEYS: list[tuple[object, str]] = []
_APP_KEYS_LOCK = threading.Lock()


def _app_key(ordinal: int):
    with _APP_KEYS_LOCK:
        while len(_APP_KEYS) <= ordinal:
            key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            _APP_KEYS.append((key, key.private_bytes(serialization.Encoding.PEM,
                                                     serialization.PrivateFormat.TraditionalOpenSSL,
                                                     serialization.NoEncryption()).decode()))
        return _APP_KEYS[ordinal]

class GitHubSimulator(JsonViews, RestOperations, GitWriteOperations):
    """A stateful GitHub on loopback. See tests/simulator/README.md for the API."""

    def __init__(self, token_ttl: int = 3600, rate_limit: int = 5000) -> None:
        self.token_ttl = token_ttl
        self.rate_limit = rate_limit
        self.tree_entry_limit = 100_000   # recursive trees beyond this answer truncated: true
        self.dispatch_run_details = True  # False: dispatches answer 204 without run ids (GHES 3.17-3.19)
        self.dispatch_max_inputs = 25  # 10 on GHES 3.17-3.19
        self.lock = threading.RLock()
        self.rest = RestDescription()
        self.hooks = WebhookDescription()
        self.violations: list[str] = []
        self.requests_log: list[dict] = []
        self.tokens_issued: list[dict] = []
        self.apps: dict[int, App] = {}
        self.installations: dict[int, Installation] = {}
        self.repos: dict[str, Repo] = {}
        self.pulls: dict[tuple[str, int], PullRequest] = {}
        self.issues: dict[tuple[str, int], dict] = {}
        self._numbers: dict[str, int] = {}
        self._comments: dict[int, dict] = {}        # id -> comment record
        self._reactions: dict[int, list[dict]] = {}  # comment id -> reactions
        self._review_comments: list[dict] = []
        self._reviews: list[dict] = []
        self._check_runs: dict[int, dict] = {}
        self._check_suites: dict[tuple, int] = {}
        self._runs: dict[int, dict] = {}
        self._jobs: dict[int, dict] = {}
        self._dispatches: list[dict] = []
        self._tokens: dict[str, dict] = {}
        self._buckets: dict[str, dict] = {}
        self._faults: list[Fault] = []
        self._permissions: dict[tuple[str, str], str] = {}
        self._teams: dict[tuple[str, str, str], dict] = {}
        self._manifest_codes: dict[str, dict] = {}
        self._oauth_codes: dict[str, dict] = {}   # code -> {app, user, redirect_uri, expires}
        self._user_tokens: dict[str, dict] = {}   # "ghu_..." -> {app, user, expires_at}
        self.web_user: str | None = None          # who is signed in on the simulated github.com
        self._log_links: dict[str, tuple[int, float]] = {}
        self._id = 1000
        self._tls = threading.local()
        self._last_bucket = None
        self._auth_app = None
        self._auth_inst = None
        self.graphql = GraphQLEndpoint(self)
        self._api = LoopbackServer(self._handle_api, "127.0.0.1")
        self._web = LoopbackServer(self._handle_web, "127.0.0.2")
        self.url = self._api.url
        self.web_url = self._web.url
        self._started = False

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> "GitHubSimulator":
        if not self._started:
            self._api.start()
            self._web.start()
            self._started = True
        return self

    def stop(self) -> None:
        with self.lock:
            for fault in self._faults:  # a held answer ends with the simulator, not after its delay
                fault.release()
        if self._started:
            self._api.stop()
            self._web.stop()
            self._started = False

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _next_id(self) -> int:
        with self.lock:
            self._id += 1
            return self._id

    def _violation(self, message: str) -> None:
        with self.lock:
            self.violations.append(message)

    # -- set-up API -------------------------------------------------------------------------

    def create_app(self, name: str = "CI Registrar", owner: str = "radixark",
                   slug: str | None = None, permissions: dict | None = None,
                   events: list | None = None) -> App:
        with self.lock:
            key, pem = _app_key(len(self.apps))
            app_id = self._next_id()
            app = App(
                id=app_id, slug=slug or re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-"),
                name=name, owner=owner, client_id="Iv23li" + secrets.token_hex(7),
                client_secret=secrets.token_hex(20), webhook_secret=secrets.token_hex(16),
                private_key_pem=pem, public_key=key.public_key(),
                permissions=permissions or {"checks": "write", "contents": "read",
                                            "pull_requests": "write", "issues": "write",
                                            "actions": "write", "metadata": "read"},
                events=events or ["pull_request", "issue_comment", "check_run", "check_suite",
                                  "workflow_run"],
                hook_id=self._next_id())
            self.apps[app_id] = app
            return app

    def create_repo(self, full_name: str, default_branch: str = "main",
                    private: bool = False) -> Repo:
        with self.lock:
            if full_name in self.repos:
                return self.repos[full_name]
            repo = Repo(self, full_name, default_branch, private, self._next_id())
            self.repos[full_name] = repo
            return repo

    def repo(self, full_name) -> Repo:
        return full_name if isinstance(full_name, Repo) else self.repos[full_name]

    def install(self, app: App, *repos, permissions: dict | None = None) -> Installation:
        with self.lock:
            names = [self.create_repo(r).full_name if isinstance(r, str) else r.full_name
                     for r in repos]
            account = names[0].split("/")[0] if names else app.owner
            for inst in self.installations.values():
                if inst.app is app and inst.account == account:
                    inst.repos.extend(n for n in names if n not in inst.repos)
                    return inst
            inst = Installation(self._next_id(), app, account, names,
                                dict(permissions or app.permissions))
            self.installations[inst.id] = inst
            return inst

    def uninstall(self, inst: Installation) -> None:
        with self.lock:
            self.installations.pop(inst.id, None)

    def _installation_for(self, app: App, full_name: str) -> Installation | None:
        for inst in self.installations.values():
            if inst.app is app and full_name in inst.repos:
                return inst
        return None

    def _next_number(self, repo: Repo) -> int:
        self._numbers[repo.full_name] = self._numbers.get(repo.full_name, 0) + 1
        return self._numbers[repo.full_name]

    def fork(self, repo, full_name: str) -> Repo:
        """A fork: its own name and branches, sharing the parent's git objects (as GitHub does)."""
        parent = self.repo(repo)
        with self.lock:
            fork = self.create_repo(full_name, parent.default_branch, parent.private)
            fork.store = parent.store
            fork.branches = dict(parent.branches)
            fork.parent = parent
            return fork

    def open_pull_request(self, repo, head_branch: str, base_branch: str | None = None,
                          author: str = "octocat", title: str = "A pull request",
                          body: str = "", draft: bool = False, head_repo=None) -> PullRequest:
        repo = self.repo(repo)
        with self.lock:
            head = self.repo(head_repo) if head_repo is not None else repo
            if head.store is not repo.store:
                raise SimulatorError(f"{head.full_name} is not a fork of {repo.full_name} "
                                     f"(use sim.fork)")
            base_branch = base_branch or repo.default_branch
            pr = PullRequest(repo, self._next_number(repo), head_branch, base_branch,
                             head.branches[head_branch], repo.branches[base_branch], author,
                             title, body, draft, created_at=time.time(), id=self._next_id(),
                             head_repo=head if head is not repo else None)
            self.pulls[(repo.full_name, pr.number)] = pr
            return pr

    def pull(self, repo, number: int) -> PullRequest:
        return self.pulls[(self.repo(repo).full_name, number)]

    def push(self, repo, branch: str, files: dict, **kwargs) -> str:
        """Commit on a branch; open pull requests from that branch follow (synchronize)."""
        repo = self.repo(repo)
        with self.lock:
            sha = repo.commit(files, branch=branch, **kwargs)
            for pr in self.pulls.values():
                if pr.head_repository is repo and pr.head_ref == branch and pr.state == "open":
                    pr.head_sha = sha
                    pr.updated_at = time.time()
            return sha

    def close_pull_request(self, pr: PullRequest, merged: bool = False) -> None:
        with self.lock:
            pr.state, pr.merged = "closed", merged

    def create_issue(self, repo, title: str = "An issue", author: str = "octocat") -> int:
        repo = self.repo(repo)
        with self.lock:
            number = self._next_number(repo)
            self.issues[(repo.full_name, number)] = {"number": number, "title": title,
                                                     "author": author, "id": self._next_id()}
            return number

    def set_permission(self, repo, user: str, permission: str) -> None:
        assert permission in ("admin", "maintain", "write", "triage", "read", "none"), permission
        with self.lock:
            self._permissions[(self.repo(repo).full_name, user)] = permission

    def add_team_member(self, org: str, team_slug: str, user: str, role: str = "member",
                        state: str = "active") -> None:
        with self.lock:
            self._teams[(org, team_slug, user)] = {"role": role, "state": state}

    def add_comment(self, repo, number: int, body: str, author: str = "octocat",
                    user_type: str = "User", app: App | None = None) -> dict:
        repo = self.repo(repo)
        with self.lock:
            if (repo.full_name, number) not in self.pulls and (repo.full_name, number) not in self.issues:
                raise SimulatorError(f"no pull request or issue #{number} in {repo.full_name}")
            now = time.time()
            comment = {"id": self._next_id(), "repo": repo.full_name, "number": number,
                       "body": body, "author": author, "user_type": user_type,
                       "app_id": app.id if app else None, "created_at": now, "updated_at": now}
            self._comments[comment["id"]] = comment
            return self._comment_json(comment)

    def delete_comment(self, repo, comment_id: int) -> dict:
        """The author deletes their comment: GitHub answers 404 for it (and its reactions) from now on.
        Returns its last JSON, for the `issue_comment` `deleted` delivery."""
        with self.lock:
            last = self._comment_json(self._comments[comment_id])
            del self._comments[comment_id]
            self._reactions.pop(comment_id, None)
            return last

    def edit_comment(self, repo, comment_id: int, body: str) -> dict:
        with self.lock:
            comment = self._comments[comment_id]
            comment["previous_body"] = comment["body"]
            comment["body"], comment["updated_at"] = body, time.time()
            return self._comment_json(comment)

    def add_workflow_run(self, repo, workflow, head_sha: str | None = None,
                         event: str = "push", status: str = "completed",
                         conclusion: str | None = "success", head_branch: str | None = None,
                         jobs: list | None = None, actor: str = "octocat",
                         pull_requests: list | None = None) -> dict:
        repo = self.repo(repo)
        with self.lock:
            wf = repo.workflow(workflow) if not isinstance(workflow, dict) else workflow
            if wf is None:
                wf = repo.add_workflow(str(workflow))
            head_branch = head_branch or repo.default_branch
            head_sha = head_sha or repo.branches.get(head_branch)
            now = time.time()
            run = {"id": self._next_id(), "repo": repo.full_name, "workflow_id": wf["id"],
                   "head_sha": head_sha, "head_branch": head_branch, "event": event,
                   "status": status, "conclusion": conclusion if status == "completed" else None,
                   "actor": actor, "run_attempt": 1, "run_number": len(self._runs) + 1,
                   "created_at": now, "updated_at": now, "jobs": [],
                   "pull_requests": list(pull_requests or [])}
            self._runs[run["id"]] = run
            for job in jobs or []:
                self.add_job(run["id"], **job)
            return self._run_snapshot(run)

    def add_job(self, run_id: int, name: str = "job", labels: list | None = None,  # log None: no log (404)
                conclusion: str | None = "success", log: str | None = "", status: str | None = None,
                runner_name: str = "runner-1") -> dict:
        with self.lock:
            run = self._runs[run_id]
            job = {"id": self._next_id(), "run_id": run_id, "name": name,
                   "labels": list(labels or ["ubuntu-latest"]),
                   "status": status or ("completed" if conclusion else "in_progress"),
                   "conclusion": conclusion, "log": log, "runner_name": runner_name,
                   "started_at": time.time(), "run_attempt": run["run_attempt"]}
            self._jobs[job["id"]] = job
            run["jobs"].append(job["id"])
            return {k: v for k, v in job.items()}

    def delete_run(self, run_id: int) -> None:
        """Someone deletes a workflow run: GitHub answers 404 for it from now on."""
        with self.lock:
            run = self._runs.pop(run_id)
            for job_id in run["jobs"]:
                self._jobs.pop(job_id, None)

    def complete_run(self, run_id: int, conclusion: str = "success", jobs: list | None = None) -> dict:
        with self.lock:
            run = self._runs[run_id]
            for job in jobs or []:
                self.add_job(run_id, **job)
            run["status"], run["conclusion"], run["updated_at"] = "completed", conclusion, time.time()
            return self._run_snapshot(run)

    def issue_token(self, inst: Installation, ttl: int | None = None) -> str:
        """An installation token minted without the JWT exchange (for tests of other parts)."""
        with self.lock:
            token = "ghs_" + secrets.token_hex(18)
            expires = time.time() + (self.token_ttl if ttl is None else ttl)
            record = {"token": token, "installation_id": inst.id, "expires_at": expires,
                      "permissions": dict(inst.permissions), "repositories": None}
            self._tokens[token] = record
            self.tokens_issued.append(dict(record))
            return token

    def expire_tokens(self) -> None:
        with self.lock:
            for token in self._tokens.values():
                token["expires_at"] = time.time() - 1

    def manifest_code(self, manifest, owner: str | None = None) -> str:
        manifest = json.loads(manifest) if isinstance(manifest, (str, bytes)) else dict(manifest)
        errors = manifest_errors(manifest)
        if errors:
            raise SimulatorError("GitHub would refuse this manifest: " + "; ".join(errors))
        with self.lock:
            code = secrets.token_hex(10)
            self._manifest_codes[code] = {"manifest": manifest, "owner": owner,
                                          "expires": time.time() + 3600}
            return code

    # -- faults -----------------------------------------------------------------------------

    def inject_fault(self, method: str, path_regex: str, kind: str, times: int | None = 1,
                     **params) -> Fault:
        kinds = {"500", "502", "503", "secondary_rate_limit", "429", "primary_rate_limit",
                 "expired_token", "slow", "drop"}
        kind = str(kind)
        if kind not in kinds:
            raise ValueError(f"unknown fault kind {kind!r}; one of {sorted(kinds)}")
        fault = Fault(method.upper(), path_regex, kind, times, params)
        with self.lock:
            self._faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        with self.lock:
            for fault in self._faults:
                fault.release()
            self._faults.clear()

    # -- query helpers ----------------------------------------------------------------------

    def check_runs(self, repo, sha: str | None = None, name: str | None = None) -> list[dict]:
        repo = self.repo(repo)
        with self.lock:
            return [copy.deepcopy(cr) for cr in self._check_runs.values()
                    if cr["repo"] == repo.full_name and (sha is None or cr["head_sha"] == sha)
                    and (name is None or cr["name"] == name)]

    def comments(self, repo, number: int) -> list[dict]:
        repo = self.repo(repo)
        with self.lock:
            return [self._comment_json(c) for c in self._comments.values()
                    if c["repo"] == repo.full_name and c["number"] == number]

    def reactions(self, repo, comment_id: int) -> list[str]:
        with self.lock:
            return [r["content"] for r in self._reactions.get(comment_id, [])]

    def review_comments(self, repo, number: int) -> list[dict]:
        repo = self.repo(repo)
        with self.lock:
            return [copy.deepcopy(c) for c in self._review_comments
                    if c["repo"] == repo.full_name and c["number"] == number]

    def reviews(self, repo, number: int) -> list[dict]:
        repo = self.repo(repo)
        with self.lock:
            return [copy.deepcopy(r) for r in self._reviews
                    if r["repo"] == repo.full_name and r["number"] == number]

    def dispatches(self, repo) -> list[dict]:
        repo = self.repo(repo)
        with self.lock:
            return [dict(d) for d in self._dispatches if d["repo"] == repo.full_name]

    def workflow_runs(self, repo) -> list[dict]:
        repo = self.repo(repo)
        with self.lock:
            return [self._run_snapshot(r) for r in self._runs.values()
                    if r["repo"] == repo.full_name]

    def _run_snapshot(self, run: dict) -> dict:
        out = copy.deepcopy(run)
        out["jobs"] = [copy.deepcopy(self._jobs[j]) for j in run["jobs"]]
        return out

    # -- HTTP: API side ---------------------------------------------------------------------

    def _handle_api(self, req: Request) -> Response:
        try:
            if req.raw_path == "/graphql":  # PyGithub's graphql_url for this base URL
                return self.graphql.handle(req)
            return self._handle_api_request(req)
        except Exception as exc:  # a simulator bug must fail the test that hit it
            self._violation(f"simulator error on {req.method} {req.raw_path}: {exc!r}")
            raise

    def _handle_api_request(self, req: Request) -> Response:
        started = time.time()
        path = req.raw_path
        op, raw_params, other_method = self.rest.match(req.method, path)
        entry = {"method": req.method, "path": path, "query": req.query, "status": None,
                 "operation": op.operation_id if op else None,
                 "auth": (req.headers.get("authorization") or "").split(" ")[0] or None}
        with self.lock:
            self.requests_log.append(entry)
        if op is None:
            message = (f"{req.method} {path} is not a vendored operation"
                       + (" (the path exists for another method)" if other_method else ""))
            self._violation(message)
            entry["status"] = 404
            return self._json(404, {"message": f"Not Found (simulator: {message})",
                                    "documentation_url": "https://docs.github.com/rest"})
        params = {k: unquote(v) for k, v in raw_params.items()}
        body = NO_BODY
        if req.body:
            try:
                body = json.loads(req.body)
            except ValueError:
                body = BAD_JSON
        problems = self.rest.validate_request(op, params, req.query, body)
        if problems:
            message = f"{req.method} {op.template}: request invalid: " + "; ".join(problems)
            self._violation(message)
            entry["status"] = 422
            return self._json(422, {"message": f"Validation Failed (simulator: {message})",
                                    "documentation_url": "https://docs.github.com/rest"})
        faulted = self._faulted(req, entry)
        if faulted is not None:
            return faulted
        # one request at a time through auth and state: handlers read self._auth_* set here
        with self.lock:
            try:
                bucket = self._authenticate(req, op, params)
                if bucket is not None and bucket["used"] >= bucket["limit"]:
                    raise ApiError(403, f"API rate limit exceeded for {bucket['name']}.",
                                   self._rate_headers(bucket), documentation_url=RATE_DOCS)
                handler = getattr(self, "op_" + re.sub(r"[^a-z0-9]+", "_",
                                                       op.operation_id.lower()))
                status, payload, headers = handler(req, params,
                                                   body if body is not NO_BODY else None)
            except ApiError as err:
                status, headers = err.status, err.headers
                payload = {"message": err.message, **err.extra}
                payload.setdefault("documentation_url", "https://docs.github.com/rest")
                bucket = self._last_bucket if err.status != 401 else None
        headers = dict(headers or {})
        is_json = not isinstance(payload, (bytes, str)) and payload is not None
        if status in GENERIC_STATUSES and str(status) not in op.responses:
            problems = [] if isinstance(payload, dict) and "message" in payload else [
                f"error status {status} without a message"]
        else:
            problems = self.rest.validate_response(op, status, payload, is_json)
        if problems:
            message = f"{req.method} {op.template}: response {status} invalid: " + "; ".join(problems)
            self._violation(message)
            entry["status"] = 500
            return self._json(500, {"message": f"simulator produced an invalid response: {message}"})
        if is_json:
            raw = json.dumps(payload).encode()
            headers.setdefault("Content-Type", "application/json; charset=utf-8")
        elif isinstance(payload, str):
            raw = payload.encode()
        else:
            raw = payload or b""
        if req.method == "GET" and status == 200:
            etag = 'W/"' + hashlib.sha1(raw).hexdigest() + '"'
            headers["ETag"] = etag
            if req.headers.get("if-none-match") in (etag, etag[2:]):
                status, raw = 304, b""
        if bucket is not None:
            with self.lock:
                refused = status == 403 and bucket["used"] >= bucket["limit"]
                if status != 304 and not refused and op.operation_id != "rate-limit/get":
                    bucket["used"] += 1
                headers.update(self._rate_headers(bucket))
        headers["X-GitHub-Request-Id"] = uuid.uuid4().hex[:20].upper()
        headers["X-GitHub-Media-Type"] = "github.v3; format=json"
        entry["status"] = status
        entry["elapsed"] = time.time() - started
        return Response(status, raw, headers)

    def _json(self, status: int, payload, headers: dict | None = None) -> Response:
        headers = dict(headers or {})
        headers["Content-Type"] = "application/json; charset=utf-8"
        return Response(status, json.dumps(payload).encode(), headers)

    def _faulted(self, req: Request, entry: dict) -> Response | None:
        """The injected fault's answer to this request, if one applies (REST and GraphQL alike)."""
        fault = self._take_fault(req.method, req.raw_path)
        if fault is None:
            return None
        if fault.kind == "slow":
            with self.lock:
                self.requests_log.remove(entry)  # logged again when it is answered for real
        response = self._fault_response(fault, req)
        entry["status"] = response.status
        return response

    def _take_fault(self, method: str, path: str) -> Fault | None:
        if getattr(self._tls, "skip_faults", False):
            return None
        with self.lock:
            for fault in self._faults:
                if fault.matches(method, path):
                    fault.hits += 1
                    return fault
        return None

    def _fault_response(self, fault: Fault, req: Request) -> Response:
        kind, p = fault.kind, fault.params
        if kind in ("500", "502", "503"):
            return self._json(int(kind), {"message": p.get("message", "Server Error")})
        if kind == "secondary_rate_limit":
            return self._json(403, {"message": SECONDARY_MESSAGE, "documentation_url": RATE_DOCS},
                              {"Retry-After": str(p.get("retry_after", 60))})
        if kind == "429":
            return self._json(429, {"message": SECONDARY_MESSAGE, "documentation_url": RATE_DOCS},
                              {"Retry-After": str(p.get("retry_after", 1))})
        if kind == "primary_rate_limit":
            reset = int(time.time() + p.get("reset_in", 60))
            limit = self.rate_limit
            return self._json(403, {"message": "API rate limit exceeded for installation.",
                                    "documentation_url": RATE_DOCS},
                              {"x-ratelimit-limit": str(limit), "x-ratelimit-remaining": "0",
                               "x-ratelimit-used": str(limit), "x-ratelimit-reset": str(reset),
                               "x-ratelimit-resource": "core"})
        if kind == "expired_token":
            return self._json(401, {"message": "Bad credentials",
                                    "documentation_url": "https://docs.github.com/rest"})
        if kind == "drop":
            return Response(0, drop=True)
        if kind == "slow":
            # answer normally (this request skips the fault table), after the delay
            self._tls.skip_faults = True
            try:
                response = self._handle_api(req)
            finally:
                self._tls.skip_faults = False
            response.delay = float(p.get("delay", 1.0))
            response.hold = fault.released
            return response
        raise AssertionError(kind)

    def _rate_headers(self, bucket: dict) -> dict:
        return {"x-ratelimit-limit": str(bucket["limit"]),
                "x-ratelimit-remaining": str(max(0, bucket["limit"] - bucket["used"])),
                "x-ratelimit-used": str(bucket["used"]), "x-ratelimit-reset": str(bucket["reset"]),
                "x-ratelimit-resource": "core"}

    def _bucket(self, name: str) -> dict:
        with self.lock:
            bucket = self._buckets.get(name)
            now = time.time()
            if bucket is None or bucket["reset"] <= now:
                bucket = {"name": name, "limit": self.rate_limit, "used": 0,
                          "reset": int(now + 3600)}
                self._buckets[name] = bucket
            return bucket

    def _authenticate(self, req: Request, op, params: dict) -> dict | None:
        """Check credentials for op; returns the rate-limit bucket to charge (or None)."""
        self._last_bucket = None
        header = req.headers.get("authorization", "")
        scheme, _, credential = header.partition(" ")
        scheme = scheme.lower()
        self._auth_app = None
        self._auth_inst = None
        self._auth_user = None
        if op.operation_id == "apps/create-from-manifest":
            return None
        if op.operation_id == "rate-limit/get":
            if scheme in ("token", "bearer") and credential.startswith("ghs_"):
                token = self._tokens.get(credential)
                if token:
                    return self._bucket(f"installation ID {token['installation_id']}")
            return self._bucket(f"{req.client}")
        if JWT_PATHS.search(op.template) or op.template.startswith("/app"):
            if scheme != "bearer" or credential.startswith("ghs_"):
                raise ApiError(401, "A JSON web token could not be decoded")
            self._auth_app = self._verify_jwt(credential)
            bucket = self._bucket(f"app ID {self._auth_app.id}")
            self._last_bucket = bucket
            return bucket
        if scheme not in ("token", "bearer") or not credential:
            raise ApiError(401, "Requires authentication")
        if credential.startswith("ghu_"):
            # A user access token of a GitHub App (the "Sign in with GitHub" web flow): the
            # /user endpoints only are modelled for it.
            user_token = self._user_tokens.get(credential)
            if user_token is None or user_token["expires_at"] <= time.time():
                raise ApiError(401, "Bad credentials")
            if not op.template.startswith("/user"):
                raise ApiError(403, "Resource not accessible by integration")
            self._auth_user, self._auth_app = user_token["user"], user_token["app"]
            bucket = self._bucket(f"user {user_token['user']} via app {user_token['app'].id}")
            self._last_bucket = bucket
            return bucket
        if op.template.startswith("/user"):
            raise ApiError(403, "Resource not accessible by integration")
        token = self._tokens.get(credential)
        if token is None or token["expires_at"] <= time.time():
            raise ApiError(401, "Bad credentials")
        inst = self.installations.get(token["installation_id"])
        if inst is None:
            raise ApiError(401, "Bad credentials")
        self._auth_inst, self._auth_app = inst, inst.app
        if "owner" in params and "repo" in params:
            full = f"{params['owner']}/{params['repo']}"
            if full not in inst.repos or (token["repositories"] is not None
                                          and full not in token["repositories"]):
                raise ApiError(404, "Not Found")
        bucket = self._bucket(f"installation ID {inst.id}")
        self._last_bucket = bucket
        granted = token["permissions"]
        needed = OPERATION_PERMISSIONS.get(op.operation_id, [])
        if needed and not any(LEVELS.get(granted.get(name), 0) >= LEVELS[level]
                              for name, level in needed):
            raise ApiError(403, "Resource not accessible by integration",
                           self._rate_headers(bucket))
        return bucket

    def _verify_jwt(self, token: str) -> App:
        try:
            claims = jwt.decode(token, options={"verify_signature": False})
        except jwt.PyJWTError:
            raise ApiError(401, "A JSON web token could not be decoded")
        iss = str(claims.get("iss", ""))
        app = next((a for a in self.apps.values() if str(a.id) == iss or a.client_id == iss), None)
        if app is None:
            raise ApiError(401, "Integration not found")
        now = time.time()
        try:
            claims = jwt.decode(token, app.public_key, algorithms=["RS256"],
                                options={"require": ["iat", "exp", "iss"], "verify_iat": False},
                                leeway=0)
        except jwt.ExpiredSignatureError:
            raise ApiError(401, "'Expiration time' claim ('exp') must be a numeric value "
                                "representing the future time at which the assertion expires")
        except jwt.PyJWTError as exc:
            raise ApiError(401, f"A JSON web token could not be decoded ({exc})")
        if claims["iat"] > now + 60:
            raise ApiError(401, "'Issued at' claim ('iat') must be an Integer representing the "
                                "time that the assertion was issued")
        if claims["exp"] > now + 600 + 5 or claims["exp"] - claims["iat"] > 660:
            raise ApiError(401, "'Expiration time' claim ('exp') is too far in the future")
        return app

    # -- HTTP: web side (github.com, signed log URLs) ----------------------------------------

    def _handle_web(self, req: Request) -> Response:
        path = req.raw_path
        m = re.fullmatch(r"/_apis/pipelines/1/jobs/(\d+)/signedlogcontent", path)
        if m:
            if "authorization" in req.headers:
                self._violation(f"job log URL fetched with an Authorization header: the GitHub "
                                f"token was sent to another host ({self.web_url})")
                return Response(403, b"<Error>Authorization header not allowed with a signed URL"
                                     b"</Error>", {"Content-Type": "application/xml"})
            signature = req.query.get("urlSignature", [""])[-1]
            with self.lock:
                link = self._log_links.get(signature)
                if link is None or link[0] != int(m.group(1)) or link[1] < time.time():
                    return Response(403, b"<Error>AuthenticationFailed</Error>",
                                    {"Content-Type": "application/xml"})
                log = self._jobs[link[0]]["log"]
            return Response(200, log.encode(), {"Content-Type": "text/plain; charset=utf-8"})
        if path == "/login/oauth/authorize" and req.method == "GET":
            return self._oauth_authorize(req)
        if path == "/login/oauth/access_token" and req.method == "POST":
            return self._oauth_access_token(req)
        m = re.fullmatch(r"(?:/organizations/([^/]+))?/settings/apps/new", path)
        if m and req.method == "POST":
            from urllib.parse import parse_qs
            form = parse_qs(req.body.decode(), keep_blank_values=True)
            raw = (form.get("manifest") or [""])[-1]
            try:
                manifest = json.loads(raw)
            except ValueError:
                return Response(422, b"manifest is not valid JSON", {"Content-Type": "text/plain"})
            errors = manifest_errors(manifest)
            if not errors and not manifest.get("redirect_url"):
                errors = ["redirect_url is needed to come back with the code"]
            if errors:
                # GitHub shows the form again with these messages and creates nothing.
                return Response(422, ("Invalid GitHub App manifest:\n" + "\n".join(errors)).encode(),
                                {"Content-Type": "text/plain"})
            code = self.manifest_code(manifest, owner=m.group(1))
            state = req.query.get("state", [None])[-1]
            query = {"code": code, **({"state": state} if state is not None else {})}
            sep = "&" if "?" in manifest["redirect_url"] else "?"
            return Response(302, b"", {"Location": manifest["redirect_url"] + sep + urlencode(query)})
        if m:
            return Response(200, b"<html><body><form method='post'><input name='manifest'>"
                                 b"</form></body></html>", {"Content-Type": "text/html"})
        return Response(200, f"<html><body>simulated github.com page {path}</body></html>".encode(),
                        {"Content-Type": "text/html"})

    # -- "Sign in with GitHub": a GitHub App's web flow -------------------------------------

    def user_can_access(self, user: str, full_name: str) -> bool:
        """Explicit access (read or more) to a repository, as the /user/installations endpoints count it."""
        repo = self.repos.get(full_name)
        if repo is None:
            return False
        role = self._permissions.get((full_name, user))
        return user == repo.owner or role in ("admin", "maintain", "write", "triage", "read")

    def _oauth_authorize(self, req: Request) -> Response:
        q = {k: v[-1] for k, v in req.query.items()}
        app = next((a for a in self.apps.values() if a.client_id == q.get("client_id")), None)
        if app is None:
            return Response(404, b"unknown client_id", {"Content-Type": "text/plain"})
        if self.web_user is None:
            return Response(200, b"<html><body>simulated github.com sign-in page</body></html>",
                            {"Content-Type": "text/html"})
        redirect_uri = q.get("redirect_uri") or (app.callback_urls[0] if app.callback_urls else "")
        if app.callback_urls and not any(redirect_uri.startswith(u) for u in app.callback_urls):
            return Response(400, b"redirect_uri is not one of the App's callback URLs", {"Content-Type": "text/plain"})
        code = secrets.token_hex(10)
        with self.lock:
            self._oauth_codes[code] = {"app": app, "user": self.web_user, "redirect_uri": redirect_uri,
                                       "expires": time.time() + 600}
        query = {"code": code, **({"state": q["state"]} if "state" in q else {})}
        sep = "&" if "?" in redirect_uri else "?"
        return Response(302, b"", {"Location": redirect_uri + sep + urlencode(query)})

    def _oauth_access_token(self, req: Request) -> Response:
        from urllib.parse import parse_qs
        ctype = req.headers.get("content-type", "")
        if "json" in ctype:
            form = json.loads(req.body or b"{}")
        else:
            form = {k: v[-1] for k, v in parse_qs(req.body.decode(), keep_blank_values=True).items()}
        with self.lock:
            record = self._oauth_codes.pop(str(form.get("code", "")), None)
            app = record["app"] if record else None
            if record is None or record["expires"] < time.time() or app.client_id != form.get("client_id") \
                    or app.client_secret != form.get("client_secret"):
                answer = {"error": "bad_verification_code",
                          "error_description": "The code passed is incorrect or expired."}
            else:
                token = "ghu_" + secrets.token_hex(18)
                self._user_tokens[token] = {"app": app, "user": record["user"], "expires_at": time.time() + 8 * 3600}
                answer = {"access_token": token, "token_type": "bearer", "scope": ""}
        return Response(200, json.dumps(answer).encode(), {"Content-Type": "application/json"})

    # -- webhooks ---------------------------------------------------------------------------

    def webhook(self, event: str, action: str | None = None, **kwargs) -> Delivery:
        from .webhooks import build_delivery
        with self.lock:
            return build_delivery(self, event, action, **kwargs)

    def deliver(self, url: str, delivery: Delivery, timeout: float | None = None):
        """POST a delivery as GitHub does (same body, headers and delivery id every time).

        GitHub gives up after 10 s; tests wait one patience (tests/patience.py) instead, since a
        busy test machine is not the App's production host: whether the App answers GitHub in
        time is bench/ingress.py's figure, and its order against slow clients the tests' own."""
        import requests

        from tests.patience import PATIENCE
        return requests.post(url, data=delivery.body, headers=delivery.headers,
                             timeout=PATIENCE if timeout is None else timeout)

    redeliver = deliver
