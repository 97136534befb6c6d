"""The GitHub REST client the handlers use: one installation's token, retries, ETags, blob cache.

Written on requests rather than PyGithub: every call here must pass through the retry policy
(backoff on 5xx and dropped connections, Retry-After and rate-limit headers turned into a later
re-run of the job instead of a sleeping worker), count itself in the metrics by endpoint, refresh
an expired token once, and send If-None-Match; PyGithub's Requester exposes no hook for these,
and its own retry sleeps inside the worker.
"""

from __future__ import annotations

import base64
import collections
import hashlib
import os
import threading
import time
from pathlib import Path

import requests

from bot import metrics
from bot.github.auth import AppAuth
from bot.github.retry import GitHubError, RateLimited, RetryPolicy, TransientError, is_retryable_status, rate_limit_wait
from bot.logging import get_logger

log = get_logger("ci_registrar.github")

API_VERSION = "2022-11-28"
USER_AGENT = "ci-registrar"

_local = threading.local()


def _session() -> requests.Session:
    session = getattr(_local, "session", None)
    if session is None:
        session = _local.session = requests.Session()
        session.headers.update({"User-Agent": USER_AGENT, "X-GitHub-Api-Version": API_VERSION})
    return session


class _LRU:
    def __init__(self, max_items: int = 2048, max_bytes: int | None = None):
        self._data: collections.OrderedDict = collections.OrderedDict()
        self._sizes: dict = {}
        self._bytes = 0
        self.max_items, self.max_bytes = max_items, max_bytes
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
        return None

    def put(self, key, value, size: int = 0):
        with self._lock:
            if key in self._data:
                self._bytes -= self._sizes.pop(key, 0)
            self._data[key] = value
            self._data.move_to_end(key)
            self._sizes[key] = size
            self._bytes += size
            while len(self._data) > self.max_items or (self.max_bytes and self._bytes > self.max_bytes and len(self._data) > 1):
                old, _ = self._data.popitem(last=False)
                self._bytes -= self._sizes.pop(old, 0)


class BlobCache:
    """File contents by git blob SHA: the same content is fetched (and read) once, whatever the repo.

    Memory first; with a directory, also on disk, so processes on one machine share it.
    """

    def __init__(self, directory: Path | None = None, max_bytes: int = 64 * 1024 * 1024):
        self._memory = _LRU(max_items=100_000, max_bytes=max_bytes)
        self._dir = directory
        self.hits = self.misses = 0

    def _path(self, sha: str) -> Path | None:
        if self._dir is None or not all(c in "0123456789abcdef" for c in sha) or len(sha) < 7:
            return None
        return self._dir / sha[:2] / sha[2:]

    def get(self, sha: str) -> bytes | None:
        data = self._memory.get(sha)
        if data is None:
            path = self._path(sha)
            if path is not None:
                try:
                    data = path.read_bytes()
                except OSError:
                    data = None
                if data is not None:
                    self._memory.put(sha, data, len(data))
        if data is None:
            self.misses += 1
        else:
            self.hits += 1
        return data

    def put(self, sha: str, data: bytes) -> None:
        self._memory.put(sha, data, len(data))
        path = self._path(sha)
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
                tmp.write_bytes(data)
                os.replace(tmp, path)
            except OSError:
                pass


def git_blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class GitHub:
    """The App as a whole: its auth, its caches, its retry policy. `for_installation` gives a client."""

    def __init__(self, api_url: str, app_id: str | None, private_key: str | None, *,
                 policy: RetryPolicy | None = None, blob_dir: Path | None = None):
        self.api_url = api_url.rstrip("/")
        self.policy = policy or RetryPolicy.from_env()
        self.etags = _LRU(max_items=4096)
        self.blobs = BlobCache(blob_dir)
        self.trees = _LRU(max_items=256)
        self._blocked: dict[int | None, float] = {}  # installation -> rate limited until (epoch s)
        self.auth = AppAuth(app_id, private_key, self._fetch_token) if app_id and private_key else None

    def _fetch_token(self, installation_id: int, jwt: str) -> dict:
        return self.request("POST", f"/app/installations/{installation_id}/access_tokens",
                            endpoint="/app/installations/{installation_id}/access_tokens",
                            auth=("jwt", jwt), installation=installation_id, idempotent=True,
                            refresh_token=lambda: self.auth.jwt(force=True))

    def for_installation(self, installation_id: int) -> "InstallationClient":
        return InstallationClient(self, installation_id)

    def app_request(self, method: str, path: str, endpoint: str, **kwargs):
        """A call as the App itself (JWT): /app, /app/installations."""
        if self.auth is None:
            raise GitHubError(0, "App credentials not configured", endpoint)
        return self.request(method, path, endpoint=endpoint, auth=("jwt", self.auth.jwt()),
                            refresh_token=lambda: self.auth.jwt(force=True), **kwargs)

    # -- the one place a request is sent -------------------------------------------------------------
    def request(self, method: str, path: str, *, endpoint: str, auth=None, installation: int | None = None,
                params=None, json=None, accept: str = "application/vnd.github+json", idempotent: bool | None = None,
                conditional: bool = False, raw: bool = False, refresh_token=None, redirect: bool = False):
        """Send one call with the retry policy; returns the decoded JSON (or bytes when raw).

        idempotent: may a dropped connection or 5xx be retried here? (GET/PATCH yes; a POST that
        creates something no: its job re-runs, and looks for what it created, instead.)
        refresh_token: called once on a 401 to get a new token (installation tokens).
        redirect: the answer is a 302 whose Location is returned (job logs), not followed.
        """
        method = method.upper()
        if idempotent is None:
            idempotent = method in ("GET", "HEAD", "PATCH", "PUT", "DELETE")
        blocked = self._blocked.get(installation, 0.0)
        if blocked > time.time():
            raise RateLimited(blocked - time.time(), installation, endpoint)
        url = path if path.startswith("http") else self.api_url + path
        headers = {"Accept": accept}
        etag_key = None
        if conditional and method == "GET":
            etag_key = (installation, url, tuple(sorted((params or {}).items())), accept)
            cached = self.etags.get(etag_key)
            if cached is not None:
                headers["If-None-Match"] = cached[0]
        refreshed = False
        attempt = 0
        while True:
            attempt += 1
            if auth is not None:
                headers["Authorization"] = ("Bearer " if auth[0] == "jwt" else "token ") + auth[1]
            try:
                resp = _session().request(method, url, params=params, json=json, headers=headers,
                                          timeout=self.policy.timeout, allow_redirects=False)
            except (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError) as exc:
                metrics.GITHUB_CALLS.labels(method, endpoint, type(exc).__name__).inc()
                if idempotent and attempt < self.policy.attempts:
                    time.sleep(self.policy.backoff(attempt))
                    continue
                raise TransientError(f"{method} {endpoint}: {type(exc).__name__}") from None
            status = resp.status_code
            metrics.GITHUB_CALLS.labels(method, endpoint, str(status)).inc()
            remaining = resp.headers.get("x-ratelimit-remaining")
            if remaining is not None and remaining.isdigit():
                metrics.RATE_LIMIT_REMAINING.labels(str(installation if installation is not None else "app")).set(int(remaining))
            if redirect and status in (301, 302, 307) and resp.headers.get("Location"):
                return resp.headers["Location"]
            if status == 304 and etag_key is not None:
                cached = self.etags.get(etag_key)
                if cached is not None:
                    return cached[1]
            if status < 300:
                try:
                    data = resp.content if raw else (resp.json() if resp.content else None)
                except ValueError:  # a body cut short: as good as a dropped connection
                    if idempotent and attempt < self.policy.attempts:
                        time.sleep(self.policy.backoff(attempt))
                        continue
                    raise TransientError(f"{method} {endpoint}: truncated response") from None
                if etag_key is not None and resp.headers.get("ETag"):
                    self.etags.put(etag_key, (resp.headers["ETag"], data))
                return data
            message = _message(resp)
            if status == 401 and refresh_token is not None and not refreshed:
                refreshed = True
                auth = (auth[0], refresh_token())
                attempt -= 1
                continue
            if status == 401 and refreshed:
                # Refused even with a fresh token: maybe GitHub's replicas lag; the job tries again later.
                raise TransientError(f"{method} {endpoint}: 401 with a fresh token")
            wait = rate_limit_wait(status, resp.headers, message, policy=self.policy)
            if wait is not None:
                # Not slept here: this worker thread goes on with other installations' jobs.
                self._blocked[installation] = max(self._blocked.get(installation, 0.0), time.time() + wait)
                raise RateLimited(wait, installation, endpoint)
            if is_retryable_status(status):
                if idempotent and attempt < self.policy.attempts:
                    time.sleep(self.policy.backoff(attempt))
                    continue
                raise TransientError(f"{method} {endpoint}: {status} {message}")
            raise GitHubError(status, message, endpoint)


def _message(resp) -> str:
    try:
        data = resp.json()
        return str(data.get("message", ""))[:200] if isinstance(data, dict) else ""
    except ValueError:
        return resp.text[:200]


class InstallationClient:
    """Calls as one installation; a handler gets one already made (it never thinks about tokens)."""

    def __init__(self, github: GitHub, installation_id: int):
        self.github = github
        self.installation_id = installation_id
        self._token: str | None = None

    def _auth_token(self) -> str:
        if self.github.auth is None:
            raise GitHubError(0, "App credentials not configured")
        self._token = self.github.auth.token(self.installation_id)
        return self._token

    def _refresh(self) -> str:
        self.github.auth.invalidate(self.installation_id, self._token)
        return self._auth_token()

    def request(self, method: str, path: str, endpoint: str, **kwargs):
        return self.github.request(method, path, endpoint=endpoint, auth=("token", self._auth_token()),
                                   installation=self.installation_id, refresh_token=self._refresh, **kwargs)

    def paginate(self, path: str, endpoint: str, *, key: str | None = None, params=None, limit: int = 3000):
        """Every item of a paged list (per_page 100), following page numbers up to `limit` items."""
        items: list = []
        page = 1
        while len(items) < limit:
            data = self.request("GET", path, endpoint, params={**(params or {}), "per_page": 100, "page": page},
                                conditional=True)
            batch = data.get(key, []) if key else data
            items.extend(batch)
            if len(batch) < 100:
                break
            page += 1
        return items[:limit]

    # -- git data --------------------------------------------------------------------------------
    def tree(self, repo: str, sha: str) -> dict:
        """GET git/trees/{sha}?recursive=1; a tree SHA names immutable content, so it is fetched once."""
        key = (repo, sha)
        cached = self.github.trees.get(key)
        if cached is None:
            cached = self.request("GET", f"/repos/{repo}/git/trees/{sha}", "/repos/{owner}/{repo}/git/trees/{tree_sha}",
                                  params={"recursive": "1"})
            self.github.trees.put(key, cached)
        return cached

    def tree_level(self, repo: str, sha: str) -> dict:
        """One level of a tree (when the recursive listing came back truncated)."""
        return self.request("GET", f"/repos/{repo}/git/trees/{sha}", "/repos/{owner}/{repo}/git/trees/{tree_sha}")

    def blob(self, repo: str, sha: str) -> bytes:
        data = self.github.blobs.get(sha)
        if data is not None:
            return data
        body = self.request("GET", f"/repos/{repo}/git/blobs/{sha}", "/repos/{owner}/{repo}/git/blobs/{file_sha}")
        if body.get("encoding") == "base64":
            data = base64.b64decode(body.get("content") or "")
        else:
            data = (body.get("content") or "").encode()
        self.github.blobs.put(sha, data)
        return data

    def file_at(self, repo: str, path: str, ref: str) -> bytes | None:
        """A file's bytes at a ref (a branch: so asked with If-None-Match, a 304 costs nothing); None if absent."""
        try:
            return self.request("GET", f"/repos/{repo}/contents/{path}", "/repos/{owner}/{repo}/contents/{path}",
                                params={"ref": ref}, accept="application/vnd.github.raw+json", raw=True,
                                conditional=True)
        except GitHubError as exc:
            if exc.status == 404:
                return None
            raise

    def pull_files(self, repo: str, number: int) -> list[dict]:
        return self.paginate(f"/repos/{repo}/pulls/{number}/files", "/repos/{owner}/{repo}/pulls/{pull_number}/files")

    # -- checks ----------------------------------------------------------------------------------
    def check_runs_for_ref(self, repo: str, ref: str, name: str) -> list[dict]:
        data = self.request("GET", f"/repos/{repo}/commits/{ref}/check-runs", "/repos/{owner}/{repo}/commits/{ref}/check-runs",
                            params={"check_name": name, "filter": "all", "per_page": 100}, conditional=True)
        return data.get("check_runs", [])

    def create_check_run(self, repo: str, body: dict) -> dict:
        return self.request("POST", f"/repos/{repo}/check-runs", "/repos/{owner}/{repo}/check-runs", json=body)

    def update_check_run(self, repo: str, check_run_id: int, body: dict) -> dict:
        return self.request("PATCH", f"/repos/{repo}/check-runs/{check_run_id}",
                            "/repos/{owner}/{repo}/check-runs/{check_run_id}", json=body)

    def comment(self, repo: str, number: int, body: str) -> dict:
        return self.request("POST", f"/repos/{repo}/issues/{number}/comments",
                            "/repos/{owner}/{repo}/issues/{issue_number}/comments", json={"body": body})

    # -- actions ---------------------------------------------------------------------------------
    def run_jobs(self, repo: str, run_id: int) -> list[dict]:
        """Every job of a workflow run, every attempt (retried jobs are durations too)."""
        return self.paginate(f"/repos/{repo}/actions/runs/{run_id}/jobs", "/repos/{owner}/{repo}/actions/runs/{run_id}/jobs",
                             key="jobs", params={"filter": "all"})

    def job_log(self, repo: str, job_id: int) -> str:
        """A job's plain-text log. GitHub answers 302 to a short-lived URL on another host, fetched
        without the token (it must never leave GitHub's API host)."""
        location = self.request("GET", f"/repos/{repo}/actions/jobs/{job_id}/logs",
                                "/repos/{owner}/{repo}/actions/jobs/{job_id}/logs", redirect=True)
        data = self.github.request("GET", location, endpoint="job log download", auth=None,
                                   installation=self.installation_id, accept="text/plain", raw=True)
        return data.decode("utf-8", errors="replace")
