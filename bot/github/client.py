"""The GitHub REST client the handlers use: one installation's token, retries, ETags, blob cache.

REST calls go through PyGithub (pyproject.toml: each dependency has one job): one github.Github per
installation, lazy (so one method here is one HTTP request), with retry=None and no throttling, so
PyGithub never sleeps in a worker. Each call runs inside `GitHub.call`, which applies the retry
policy to what PyGithub raises (GithubException carries status, headers and data; requests'
connection errors and timeouts come through as they are): backoff on 5xx and dropped connections,
Retry-After and rate-limit headers turned into a later re-run of the job, one token refresh on 401.
bot.github.transport counts every answer by endpoint and gives each request the policy's timeouts.

PyGithub's objects cannot send If-None-Match, so the conditional GETs (the configuration file,
check runs of a ref, paged lists) go through the same Github object's requester, which can.
requests stays only where PyGithub has no call: a job log's text, on another host, without the token.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import datetime as dt
import json
import math
import os
import threading
import time
from pathlib import Path
from urllib.parse import quote

import requests
from github import Auth, Github, GithubException
from github.ContentFile import ContentFile

from bot.infra import metrics
from bot.github import branch_read, transport
from bot.github.auth import AppAuth
from bot.github.retry import GitHubError, RateLimited, RetryPolicy, TransientError, is_retryable_status, rate_limit_wait
from bot.github.transport import API_VERSION, USER_AGENT
from bot.infra.logging import get_logger
from checks.scanning.tree import git_blob_sha

log = get_logger("ci_registrar.github")

transport.install()

JSON = "application/vnd.github+json"
_DROPPED = (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError)


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
        self._dir = None if directory is None else str(directory)
        self._made: set[str] = set()  # folders this process made (or found): no mkdir per blob
        self.hits = self.misses = 0

    def _path(self, sha: str) -> str | None:
        if self._dir is None or not all(c in "0123456789abcdef" for c in sha) or len(sha) < 7:
            return None
        return os.path.join(self._dir, sha[:2], sha[2:])

    def get(self, sha: str) -> bytes | None:
        data = self._memory.get(sha)
        if data is None:
            path = self._path(sha)
            if path is not None:
                try:
                    with open(path, "rb") as handle:
                        data = handle.read()
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
            # Content-addressed: a blob on disk already is this blob (another worker wrote it).
            # Plain os calls: pathlib's objects were a tenth of a warm check's reading in the worker.
            try:
                if not os.path.exists(path):
                    self._write(path, data)
            except OSError:
                pass

    def _write(self, path: str, data: bytes) -> None:
        folder = os.path.dirname(path)
        if folder not in self._made:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            self._made.add(folder)
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            handle = open(tmp, "wb")
        except FileNotFoundError:  # the folder was removed since (a cache cleaned by hand): made again
            os.makedirs(folder, mode=0o700, exist_ok=True)
            handle = open(tmp, "wb")
        with handle:
            handle.write(data)
        os.replace(tmp, path)


_TREE_FIELDS = ("path", "type", "mode", "sha", "size")
# Expressions per GraphQL read (GitHub caps a query at 500,000 nodes; an `object` is one) and the
# text one request should carry at most, so a read stays well inside GitHub's 10 s query timeout.
GRAPHQL_BATCH = 500
GRAPHQL_BATCH_BYTES = 8 * 1024 * 1024


def _compact_tree(raw: dict) -> dict:
    """A recursive listing packed into one string: what bot.analysis.sources reads of each entry (type,
    mode, blob SHA, size, path), entries separated by NUL (which no git path holds).

    One str per listing, not a dict per entry: a miles-sized listing is ~0.2 MB either way on the
    wire, but ~1.5 MB as Python dicts, and the cache's byte bound should be what it really holds.
    """
    packed = "\0".join(f"{e.get('type', '')} {e.get('mode', '')} {e.get('sha', '')} {e.get('size', '')} {e['path']}"
                        for e in raw.get("tree", []) if "path" in e)
    return {"sha": raw.get("sha"), "truncated": bool(raw.get("truncated")), "packed": packed}


def _unpack_tree(compact: dict) -> dict:
    """The listing as GitHub's shape (only the fields kept), built anew for each reader."""
    entries = []
    for line in compact["packed"].split("\0") if compact["packed"] else []:
        kind, mode, sha, size, path = line.split(" ", 4)
        entry = {"path": path, "type": kind, "mode": mode, "sha": sha}
        if size:
            entry["size"] = int(size)
        entries.append(entry)
    return {"sha": compact["sha"], "truncated": compact["truncated"], "tree": entries}


class _CurrentToken(Auth.Token):
    """An installation token read from AppAuth's cache at each request, so a refreshed token is used
    at once without rebuilding the Github object (AppAuth decides when to fetch a new one)."""

    def __init__(self, current):
        self._current = current

    @property
    def token(self) -> str:
        return self._current()


class _CurrentJWT(Auth.AppAuthToken):
    """The App's JWT, from AppAuth (gidgethub signs it; cached, re-signed on a 401)."""

    def __init__(self, current):
        self._current = current

    @property
    def token(self) -> str:
        return self._current()


def _message(data) -> str:
    """GitHub's error message; PyGithub keeps a body that is not JSON as {"data": text}."""
    if isinstance(data, dict):
        return str(data.get("message") or data.get("data") or "")[:200]
    return str(data or "")[:200]


def _timestamp(value):
    """PyGithub's check-run calls take datetimes where the REST body has ISO 8601 strings."""
    if isinstance(value, str):
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(dt.timezone.utc)
    return value


def _check_run_args(body: dict) -> dict:
    return {k: _timestamp(v) if k in ("started_at", "completed_at") else v for k, v in body.items()}


class GitHub:
    """The App as a whole: its auth, its caches, its retry policy. `for_installation` gives a client."""

    def __init__(self, api_url: str, app_id: str | None, private_key: str | None, *,
                 policy: RetryPolicy | None = None, blob_dir: Path | None = None):
        self.api_url = api_url.rstrip("/")
        self.policy = policy or RetryPolicy.from_env()
        # Conditional GETs' last answers (bodies as parsed JSON), bounded by their size on the wire
        # times the parsed form's overhead.
        self.etags = _LRU(max_items=4096, max_bytes=32 * 1024 * 1024)
        self.blobs = BlobCache(blob_dir)
        self.consumers = _LRU(max_items=256, max_bytes=8 * 1024 * 1024)  # bot.analysis.sources.external_consumers
        # (installation, repository) -> what its trusted configuration named last (bot.ondemand.pull.ReadAhead)
        self.read_ahead = _LRU(max_items=1024)
        # Listings packed into one string each (_compact_tree) and bounded by what they really hold:
        # a miles-sized recursive listing is ~1.4 MB as GitHub sends it, ~0.15 MB like this.
        # A head's listing is read again only by that head's re-run or /run-rocm, soon after its
        # check: about 25 miles-sized listings are kept. 16 MB (a hundred) was most of a worker's
        # growth over 200 checks (issue 38: +26 MB, still growing from 100 checks to 200).
        self.trees = _LRU(max_items=256, max_bytes=4 * 1024 * 1024)
        # The longest text GraphQL has cut (isTruncated) in this process: a file known to be longer is
        # read from its blob at once (bot.analysis.sources.prefetch_trees), not sent cut first. GitHub
        # does not publish where it cuts; None until it has cut one.
        self.graphql_cut: int | None = None
        self._flights: dict[str, list] = {}  # blob sha -> [lock, waiters]: one fetch per blob at a time
        self._flights_lock = threading.Lock()
        self._blocked: dict[int | None, float] = {}  # installation -> rate limited until (epoch s)
        self.auth = AppAuth(app_id, private_key, self._fetch_token) if app_id and private_key else None
        self._app_gh: Github | None = None
        self._bot_login: str | None = None

    def bot_login(self) -> str:
        """The App's bot account, `<slug>[bot]`: whom GitHub names as the author of the pull requests
        and commits the App makes through the API. Asked once (GET /app) per process."""
        if self._bot_login is None:
            self._bot_login = f"{self.app_request('GET', '/app', '/app')['slug']}[bot]"
        return self._bot_login

    @contextlib.contextmanager
    def single_flight(self, key: str):
        """Threads that want the same blob queue here: the first fetches it, the rest find it cached."""
        with self._flights_lock:
            flight = self._flights.setdefault(key, [threading.Lock(), 0])
            flight[1] += 1
        try:
            with flight[0]:
                yield
        finally:
            with self._flights_lock:
                flight[1] -= 1
                if flight[1] == 0:
                    self._flights.pop(key, None)

    def pygithub(self, auth: Auth.Auth) -> Github:
        """A Github object on this App's API URL that never sleeps: no retries, no throttling.

        Its int timeout is only PyGithub's fallback: bot.github.transport gives each request of a
        call the policy's (connect, read) pair."""
        return Github(auth=auth, base_url=self.api_url, timeout=max(1, math.ceil(self.policy.read_timeout_s)),
                      user_agent=USER_AGENT, per_page=100, retry=None, seconds_between_requests=0,
                      seconds_between_writes=0, lazy=True, api_version=API_VERSION)

    def _app(self) -> Github:
        if self.auth is None:
            raise GitHubError(0, "App credentials not configured")
        if self._app_gh is None:
            self._app_gh = self.pygithub(_CurrentJWT(self.auth.jwt))
        return self._app_gh

    def _fetch_token(self, installation_id: int, jwt: str) -> dict:
        # The requester, not GithubIntegration.get_access_token: that one always sends
        # {"permissions": {}} and signs its own JWTs; AppAuth keeps the cache (five minutes
        # before expiry, forgotten on a 401) and this call keeps the retry policy. `jwt` is the one
        # _CurrentJWT reads from the same cache.
        path = f"/app/installations/{installation_id}/access_tokens"
        return self.call("POST", "/app/installations/{installation_id}/access_tokens",
                         lambda: self._app().requester.requestJsonAndCheck("POST", path, headers={"Accept": JSON})[1],
                         installation=installation_id, idempotent=True, refresh=lambda: self.auth.jwt(force=True))

    def for_installation(self, installation_id: int) -> "InstallationClient":
        return InstallationClient(self, installation_id)

    def app_request(self, method: str, path: str, endpoint: str, **kwargs):
        """A call as the App itself (JWT): /app, /app/installations."""
        app = self._app()
        return self.call(method, endpoint,
                         lambda: app.requester.requestJsonAndCheck(method.upper(), path, headers={"Accept": JSON})[1],
                         refresh=lambda: self.auth.jwt(force=True), **kwargs)

    # -- the one place a call is made ----------------------------------------------------------------
    def call(self, method: str, endpoint: str, fn, *, installation: int | None = None, idempotent: bool | None = None,
             refresh=None):
        """Run `fn` (one PyGithub call: one HTTP request) under the retry policy; returns what fn returns.

        endpoint: the path template, the metrics' label.
        idempotent: may a dropped connection or 5xx be retried here? (GET/PATCH yes; a POST that
        creates something no: its job re-runs, and looks for what it created, instead.)
        refresh: called once on a 401 to get a new token (fn's Auth reads the fresh one).
        """
        method = method.upper()
        if idempotent is None:
            idempotent = method in ("GET", "HEAD", "PATCH", "PUT", "DELETE")
        blocked = self._blocked.get(installation, 0.0)
        if blocked > time.time():
            raise RateLimited(blocked - time.time(), installation, endpoint)
        gauge = str(installation if installation is not None else "app")

        def observe(verb: str, status: str, headers) -> None:
            metrics.GITHUB_CALLS.labels(verb, endpoint, status).inc()
            remaining = headers.get("x-ratelimit-remaining") if headers is not None else None
            if remaining is not None and remaining.isdigit():
                metrics.RATE_LIMIT_REMAINING.labels(gauge).set(int(remaining))

        context = transport.Call(timeout=self.policy.timeout, observe=observe)
        refreshed = False
        attempt = 0
        while True:
            attempt += 1
            try:
                with transport.calling(context):
                    return fn()
            except _DROPPED as exc:
                if idempotent and attempt < self.policy.attempts:
                    time.sleep(self.policy.backoff(attempt))
                    continue
                raise TransientError(f"{method} {endpoint}: {type(exc).__name__}") from None
            except json.JSONDecodeError:  # a body cut short: as good as a dropped connection
                if idempotent and attempt < self.policy.attempts:
                    time.sleep(self.policy.backoff(attempt))
                    continue
                raise TransientError(f"{method} {endpoint}: truncated response") from None
            except GithubException as exc:
                status, headers, message = exc.status, exc.headers or {}, _message(exc.data)
            if status == 401 and refresh is not None and not refreshed:
                refreshed = True
                refresh()
                attempt -= 1
                continue
            if status == 401 and refreshed:
                # Refused even with a fresh token: maybe GitHub's replicas lag; the job tries again later.
                raise TransientError(f"{method} {endpoint}: 401 with a fresh token")
            wait = rate_limit_wait(status, headers, message, policy=self.policy)
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

    def download(self, url: str, *, endpoint: str, installation: int | None, accept: str = "text/plain") -> bytes:
        """A plain GET with requests, never with a token (a signed URL on another host: a job log)."""

        def fetch() -> bytes:
            call = transport.current()
            try:
                resp = transport.session().get(url, headers={"Accept": accept}, timeout=self.policy.timeout,
                                               allow_redirects=False)
            except requests.RequestException as exc:
                call.observe("GET", type(exc).__name__, None)
                raise
            call.observe("GET", str(resp.status_code), resp.headers)
            if resp.status_code >= 300:
                raise GithubException(resp.status_code, {"message": resp.text[:200]},
                                      {k.lower(): v for k, v in resp.headers.items()})
            return resp.content

        return self.call("GET", endpoint, fetch, installation=installation)


class InstallationClient:
    """Calls as one installation; a handler gets one already made (it never thinks about tokens)."""

    def __init__(self, github: GitHub, installation_id: int):
        self.github = github
        self.installation_id = installation_id
        self._token: str | None = None
        self.gh = github.pygithub(_CurrentToken(self._auth_token))
        # (repo, branch) -> the commit branch_file read the branch at: this client's (this job's)
        # next branch_head answer for that branch, once
        self._branch_seen: dict[tuple[str, str | None], str] = {}

    def _auth_token(self) -> str:
        if self.github.auth is None:
            raise GitHubError(0, "App credentials not configured")
        self._token = self.github.auth.token(self.installation_id)
        return self._token

    def _refresh(self) -> str:
        self.github.auth.invalidate(self.installation_id, self._token)
        return self._auth_token()

    def call(self, method: str, endpoint: str, fn, **kwargs):
        return self.github.call(method, endpoint, fn, installation=self.installation_id, refresh=self._refresh, **kwargs)

    def _repo(self, repo: str):
        return self.gh.get_repo(repo)  # lazy: no request

    def get_json(self, path: str, endpoint: str, params: dict | None = None, *, conditional: bool = False):
        """GET through the requester; conditional: with If-None-Match, a 304 returns the cached body."""
        params = {k: v for k, v in (params or {}).items() if v is not None}
        etag_key = (self.installation_id, self.github.api_url + path, tuple(sorted(params.items()))) if conditional else None
        cached = self.github.etags.get(etag_key) if etag_key is not None else None

        def send():
            headers = {"Accept": JSON}
            if cached is not None:
                headers["If-None-Match"] = cached[0]
            return self.gh.requester.requestJsonAndCheck("GET", path, parameters=params, headers=headers)

        headers, data = self.call("GET", endpoint, send)
        if data is None and cached is not None:  # 304 Not Modified: no body, the one we have is current
            return cached[1]
        if etag_key is not None and headers.get("etag"):
            wire = headers.get("content-length")
            size = int(wire) * 4 if wire and str(wire).isdigit() else len(json.dumps(data)) * 4
            self.github.etags.put(etag_key, (headers["etag"], data), size)
        return data

    def paginate(self, path: str, endpoint: str, *, key: str | None = None, params=None, limit: int = 3000,
                 expected: int | None = None):
        """Every item of a paged list (per_page 100), following page numbers up to `limit` items; each
        page asked for conditionally (PyGithub's PaginatedList cannot send If-None-Match).
        `expected`: the list's length when the caller knows it (a PR's changed_files), so a list of
        exactly 100·k items needs no empty page to end."""
        items: list = []
        page = 1
        while len(items) < min(limit, expected if expected is not None else limit):
            data = self.get_json(path, endpoint, {**(params or {}), "per_page": 100, "page": page}, conditional=True)
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
            with self.github.single_flight(f"tree:{repo}:{sha}"):  # a /run-rocm beside its PR's running check
                cached = self.github.trees.get(key)  # listed by another thread while this one waited
                if cached is None:
                    cached = self._list_tree(repo, sha, key)
        return _unpack_tree(cached)

    def _list_tree(self, repo: str, sha: str, key) -> dict:
        # As JSON, not as PyGithub's GitTree: a miles-sized listing is 1,700 entries, and an
        # object per entry cost more CPU than the rest of a warm PR check in this process.
        raw = self.get_json(f"/repos/{repo}/git/trees/{quote(sha, safe='')}", "/repos/{owner}/{repo}/git/trees/{tree_sha}",
                            {"recursive": "1"})
        cached = _compact_tree(raw)
        self.github.trees.put(key, cached, len(cached["packed"]) + 200)
        return cached

    def tree_level(self, repo: str, sha: str) -> dict:
        """One level of a tree (when the recursive listing came back truncated)."""
        return self.get_json(f"/repos/{repo}/git/trees/{quote(sha, safe='')}", "/repos/{owner}/{repo}/git/trees/{tree_sha}")

    def blob(self, repo: str, sha: str) -> bytes:
        data = self.github.blobs.get(sha)
        if data is not None:
            return data
        with self.github.single_flight(sha):
            data = self.github.blobs.get(sha)  # fetched by another thread while this one waited
            if data is not None:
                return data
            data = self.call("GET", "/repos/{owner}/{repo}/git/blobs/{file_sha}",
                             lambda: self._raw_blob(repo, sha))
            self.github.blobs.put(sha, data)
            return data

    def _raw_blob(self, repo: str, sha: str) -> bytes:
        """A blob's bytes as GitHub stores them (`Accept: application/vnd.github.raw`): they come off
        the socket as they are. The JSON form is base64 in JSON, and decoding it held the GIL
        (issue 38: a flood of 3.5 MB files cost the worker 0.74 CPU-s per 20 files, most of it
        base64 and JSON, while other installations' checks waited for the interpreter). Bytes whose
        git blob SHA is not `sha` (a body cut short) are a dropped connection: retried."""
        call = transport.current()
        url = f"{self.github.api_url}/repos/{repo}/git/blobs/{quote(sha, safe='')}"
        headers = {"Accept": "application/vnd.github.raw", "Authorization": f"token {self._auth_token()}"}
        try:
            resp = transport.session().get(url, headers=headers, timeout=self.github.policy.timeout, allow_redirects=False)
        except requests.RequestException as exc:
            if call is not None:
                call.observe("GET", type(exc).__name__, None)
            raise
        if call is not None:
            call.observe("GET", str(resp.status_code), resp.headers)
        if resp.status_code >= 300:
            try:
                body = resp.json()
            except ValueError:
                body = {"message": resp.text[:200]}
            raise GithubException(resp.status_code, body, {k.lower(): v for k, v in resp.headers.items()})
        data = resp.content
        if git_blob_sha(data) != sha:
            raise requests.exceptions.ChunkedEncodingError(f"blob {sha}: the body is not that blob")
        return data

    def read_paths(self, repo: str, expressions: list[str], sizes: dict[str, int] | None = None) -> dict[str, tuple[str, bytes] | None]:
        """Many files in few requests: {"<commit sha>:<path>": (blob sha, bytes) or None if absent}.

        GraphQL `repository { f0: object(expression: $e0) { ... on Blob { ... } } ... }`, up to
        GRAPHQL_BATCH expressions (and about GRAPHQL_BATCH_BYTES of text, from `sizes` when the
        caller knows them) per request: one POST costs one point of the GraphQL budget whatever the
        number of files. Expressions travel as variables, never spliced into the query text.

        A file GraphQL gives no exact text for (binary, cut by isTruncated, or text whose git blob
        SHA is not the oid GitHub reported, e.g. invalid UTF-8) is read again from its blob over
        REST, so no caller ever sees half a file. Everything read lands in the blob cache.
        """
        out: dict[str, tuple[str, bytes] | None] = {}
        pending = list(dict.fromkeys(expressions))
        batches: list[list[str]] = []
        batch: list[str] = []
        weight = 0
        for expression in pending:
            size = (sizes or {}).get(expression, 0)
            if batch and (len(batch) >= GRAPHQL_BATCH or weight + size > GRAPHQL_BATCH_BYTES):
                batches.append(batch)
                batch, weight = [], 0
            batch.append(expression)
            weight += size
        if batch:
            batches.append(batch)
        owner, _, name = repo.partition("/")
        for batch in batches:
            names = [f"e{i}" for i in range(len(batch))]
            query = ("query($owner: String!, $name: String!, " + ", ".join(f"${n}: String!" for n in names) + ") {"
                     " repository(owner: $owner, name: $name) {"
                     + "".join(f" f{i}: object(expression: ${n}) {{ ... on Blob {{ oid byteSize isBinary isTruncated text }} }}"
                               for i, n in enumerate(names))
                     + " } }")
            variables = {"owner": owner, "name": name, **dict(zip(names, batch))}
            _, data = self.call("POST", "/graphql", lambda: self.gh.requester.graphql_query(query, variables),
                                idempotent=True)  # a read: safe to send again
            found = ((data or {}).get("data") or {}).get("repository")
            if found is None:
                raise GitHubError(404, f"{repo} is not readable by this installation", "/graphql")
            for i, expression in enumerate(batch):
                obj = found.get(f"f{i}")
                if not obj or "oid" not in obj:
                    out[expression] = None  # nothing at that path (or a directory, a submodule)
                    continue
                out[expression] = (obj["oid"], self._blob_bytes(repo, obj))
        return out

    def _blob_bytes(self, repo: str, obj: dict) -> bytes:
        """A GraphQL Blob's bytes ({oid, isBinary, isTruncated, text}): its text when GitHub gave it
        whole and exact (_exact_text), else read from its blob over REST."""
        data_bytes = self._exact_text(obj)
        return data_bytes if data_bytes is not None else self.blob(repo, obj["oid"])

    def _exact_text(self, obj: dict) -> bytes | None:
        """A GraphQL Blob's text as bytes when GitHub gave it whole and exact (then kept in the blob
        cache), else None: binary, cut (which teaches this process where GitHub cuts, graphql_cut),
        or text whose git blob SHA is not the oid (invalid UTF-8)."""
        oid, text = obj["oid"], obj.get("text")
        data_bytes = text.encode("utf-8") if isinstance(text, str) else None
        if obj.get("isTruncated") and data_bytes is not None:
            cut = self.github.graphql_cut
            self.github.graphql_cut = len(data_bytes) if cut is None else min(cut, len(data_bytes))
        if data_bytes is None or obj.get("isBinary") or obj.get("isTruncated") or git_blob_sha(data_bytes) != oid:
            return None
        self.github.blobs.put(oid, data_bytes)
        return data_bytes

    def compare(self, repo: str, base: str, head: str) -> dict:
        """GET compare/{base}...{head}: the commits head has that base has not (up to 250, with
        their authors, committers and signature verification), and `total_commits`."""
        return self.get_json(f"/repos/{repo}/compare/{quote(base, safe='')}...{quote(head, safe='')}",
                             "/repos/{owner}/{repo}/compare/{basehead}")

    def branch_head(self, repo: str, branch: str) -> str:
        """The commit a branch points to now (GET git/ref/heads/{branch}); right after a
        branch_file of that branch in this job, the commit that file was read at (once)."""
        seen = self._branch_seen.pop((repo, branch), None)
        if seen is not None:
            return seen
        data = self.get_json(f"/repos/{repo}/git/ref/heads/{quote(branch)}", "/repos/{owner}/{repo}/git/ref/{ref}")
        return data["object"]["sha"]

    def file_at(self, repo: str, path: str, ref: str | None) -> bytes | None:
        """A file's bytes at a ref (a branch: so asked with If-None-Match, a 304 costs nothing); None if absent.

        The JSON form (base64), not the raw media type: PyGithub's requester reads bodies as JSON
        text. A file over 1 MB comes without content; its bytes then come from its blob (cached by SHA).
        """
        try:
            data = self.get_json(f"/repos/{repo}/contents/{quote(path)}", "/repos/{owner}/{repo}/contents/{path}",
                                 {"ref": ref}, conditional=True)
        except GitHubError as exc:
            if exc.status == 404:
                return None
            raise
        if not isinstance(data, dict) or data.get("type") != "file":
            return None  # a directory (a list) or a submodule: not a file's bytes
        content = ContentFile(self.gh.requester, {}, data, completed=True)
        if content.encoding == "base64":
            return content.decoded_content
        return self.blob(repo, content.sha)

    def branch_file(self, repo: str, path: str, branch: str | None) -> bytes | None:
        """A file's bytes at a branch's head (None: the default branch), None if absent, read with
        the commit the branch points to in one GraphQL request (bot.github.branch_read, which also
        reads more alongside: read_branch). That commit is this client's next answer to
        branch_head(repo, branch), once."""
        return self.read_branch(repo, branch, files=[path]).files.get(path)

    def read_branch(self, repo: str, branch: str | None, **what):
        """bot.github.branch_read.read_branch: a branch at one commit, and more, in one GraphQL request."""
        return branch_read.read_branch(self, repo, branch, **what)

    def pull_files(self, repo: str, number: int, expected: int | None = None) -> list[dict]:
        return self.paginate(f"/repos/{repo}/pulls/{number}/files", "/repos/{owner}/{repo}/pulls/{pull_number}/files",
                             expected=expected)

    # -- checks ----------------------------------------------------------------------------------
    def check_runs_for_ref(self, repo: str, ref: str, name: str) -> list[dict]:
        data = self.get_json(f"/repos/{repo}/commits/{ref}/check-runs", "/repos/{owner}/{repo}/commits/{ref}/check-runs",
                             {"check_name": name, "filter": "all", "per_page": 100}, conditional=True)
        return data.get("check_runs", [])

    def create_check_run(self, repo: str, body: dict) -> dict:
        return self.call("POST", "/repos/{owner}/{repo}/check-runs",
                         lambda: self._repo(repo).create_check_run(**_check_run_args(body)).raw_data)

    def update_check_run(self, repo: str, check_run_id: int, body: dict) -> None:
        """PATCH a check run. Nothing is returned: CheckRun.edit keeps GitHub's answer in the
        object's attributes, and reading it back as a dict would cost a GET (no caller wants it)."""
        self.call("PATCH", "/repos/{owner}/{repo}/check-runs/{check_run_id}",
                  lambda: self._repo(repo).get_check_run(check_run_id).edit(**_check_run_args(body)))

    def issue_comment(self, repo: str, comment_id: int) -> dict:
        """GET one comment as it is now: a command is re-read just before it is acted on."""
        return self.get_json(f"/repos/{repo}/issues/comments/{int(comment_id)}",
                             "/repos/{owner}/{repo}/issues/comments/{comment_id}")

    def comment(self, repo: str, number: int, body: str) -> dict:
        return self.call("POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments",
                         lambda: self._repo(repo).get_issue(number).create_comment(body).raw_data)

    def issue_comments(self, repo: str, number: int) -> list[dict]:
        return self.paginate(f"/repos/{repo}/issues/{int(number)}/comments", "/repos/{owner}/{repo}/issues/{issue_number}/comments")

    def edit_comment(self, repo: str, comment_id: int, body: str) -> dict:
        return self.patch_json(f"/repos/{repo}/issues/comments/{int(comment_id)}",
                               "/repos/{owner}/{repo}/issues/comments/{comment_id}", {"body": body})

    def review_comments(self, repo: str, number: int) -> list[dict]:
        return self.paginate(f"/repos/{repo}/pulls/{number}/comments", "/repos/{owner}/{repo}/pulls/{pull_number}/comments")

    def create_review_comment(self, repo: str, number: int, *, body: str, commit_id: str, path: str, line: int,
                              start_line: int | None = None) -> dict:
        """A comment on lines of the PR's diff (right side): how a ```suggestion``` is offered."""
        extra = {"start_line": start_line, "start_side": "RIGHT"} if start_line is not None and start_line != line else {}
        return self.call("POST", "/repos/{owner}/{repo}/pulls/{pull_number}/comments",
                         lambda: self._repo(repo).get_pull(number).create_review_comment(
                             body, commit_id, path, line=line, side="RIGHT", **extra).raw_data)

    def post_json(self, path: str, endpoint: str, body: dict, *, idempotent: bool = False):
        """POST through the requester (for calls whose answer PyGithub's objects drop)."""
        return self.call("POST", endpoint, lambda: self.gh.requester.requestJsonAndCheck(
            "POST", path, input=body, headers={"Accept": JSON})[1], idempotent=idempotent)

    def patch_json(self, path: str, endpoint: str, body: dict):
        """PATCH through the requester: a git ref moved, a pull request edited or closed."""
        return self.call("PATCH", endpoint, lambda: self.gh.requester.requestJsonAndCheck(
            "PATCH", path, input=body, headers={"Accept": JSON})[1])

    # -- git data writes (the calibration pull request) ------------------------------------------
    def create_blob(self, repo: str, content: bytes) -> str:
        body = {"content": base64.b64encode(content).decode(), "encoding": "base64"}
        return self.post_json(f"/repos/{repo}/git/blobs", "/repos/{owner}/{repo}/git/blobs", body)["sha"]

    def create_tree(self, repo: str, base_tree: str, entries: list[dict]) -> str:
        return self.post_json(f"/repos/{repo}/git/trees", "/repos/{owner}/{repo}/git/trees",
                              {"base_tree": base_tree, "tree": entries})["sha"]

    def create_commit(self, repo: str, message: str, tree: str, parents: list[str]) -> str:
        return self.post_json(f"/repos/{repo}/git/commits", "/repos/{owner}/{repo}/git/commits",
                              {"message": message, "tree": tree, "parents": parents})["sha"]

    def create_ref(self, repo: str, branch: str, sha: str) -> dict:
        return self.post_json(f"/repos/{repo}/git/refs", "/repos/{owner}/{repo}/git/refs",
                              {"ref": f"refs/heads/{branch}", "sha": sha})

    def update_ref(self, repo: str, branch: str, sha: str, *, force: bool = False) -> dict:
        return self.patch_json(f"/repos/{repo}/git/refs/heads/{branch}", "/repos/{owner}/{repo}/git/refs/{ref}",
                               {"sha": sha, "force": force})

    def pulls_from(self, repo: str, head: str, state: str = "all") -> list[dict]:
        """Pull requests whose head is `owner:branch`, newest first (one page: a fixed branch has few)."""
        return self.get_json(f"/repos/{repo}/pulls", "/repos/{owner}/{repo}/pulls",
                             {"head": head, "state": state, "sort": "created", "direction": "desc", "per_page": 30})

    def create_pull(self, repo: str, *, title: str, head: str, base: str, body: str) -> dict:
        return self.post_json(f"/repos/{repo}/pulls", "/repos/{owner}/{repo}/pulls",
                              {"title": title, "head": head, "base": base, "body": body})

    def update_pull(self, repo: str, number: int, body: dict) -> dict:
        return self.patch_json(f"/repos/{repo}/pulls/{int(number)}", "/repos/{owner}/{repo}/pulls/{pull_number}", body)

    # -- pull requests and people ----------------------------------------------------------------
    def pull(self, repo: str, number: int) -> dict:
        """GET pulls/{n}: the PR as it is now (head SHA, state). Conditional, so live and cheap."""
        return self.get_json(f"/repos/{repo}/pulls/{int(number)}", "/repos/{owner}/{repo}/pulls/{pull_number}",
                             conditional=True)

    def collaborator_permission(self, repo: str, user: str) -> dict:
        """{permission, role_name, user}: asked on every command, approval and click, never remembered."""
        return self.get_json(f"/repos/{repo}/collaborators/{quote(user, safe='')}/permission",
                             "/repos/{owner}/{repo}/collaborators/{username}/permission", conditional=True)

    def team_membership(self, org: str, team_slug: str, user: str) -> dict | None:
        """{role, state} of a user in an organisation's team; None when not a member.

        Needs the organisation permission `members: read`: without it GitHub answers 403, which
        reaches the caller as GitHubError (it decides what to tell the user)."""
        try:
            return self.get_json(f"/orgs/{quote(org, safe='')}/teams/{quote(team_slug, safe='')}/memberships/"
                                 f"{quote(user, safe='')}", "/orgs/{org}/teams/{team_slug}/memberships/{username}")
        except GitHubError as exc:
            if exc.status == 404:
                return None
            raise

    def react(self, repo: str, comment_id: int, content: str) -> None:
        # GitHub answers 200 for a reaction the App already left: safe to send again.
        self.post_json(f"/repos/{repo}/issues/comments/{int(comment_id)}/reactions",
                       "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions", {"content": content},
                       idempotent=True)

    # -- actions ---------------------------------------------------------------------------------
    def run_jobs(self, repo: str, run_id: int) -> list[dict]:
        """Every job of a workflow run, every attempt (retried jobs are durations too)."""
        return self.paginate(f"/repos/{repo}/actions/runs/{run_id}/jobs", "/repos/{owner}/{repo}/actions/runs/{run_id}/jobs",
                             key="jobs", params={"filter": "all"})

    def dispatch_workflow(self, repo: str, workflow: str, ref: str, inputs: dict) -> dict | None:
        """workflow_dispatch on a branch; {workflow_run_id, run_url, html_url} when GitHub says, else None.

        Never retried by the policy: a dispatch that may have happened is not sent twice (the
        caller looks the run up by listing instead)."""
        path = f"/repos/{repo}/actions/workflows/{quote(workflow, safe='')}/dispatches"
        data = self.post_json(path, "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches",
                              {"ref": ref, "inputs": inputs, "return_run_details": True})
        return data if isinstance(data, dict) and data.get("workflow_run_id") else None

    def cancel_workflow_run(self, repo: str, run_id: int) -> None:
        """Ask GitHub to cancel a run (202); a run already completed answers 409 (GitHubError)."""
        self.post_json(f"/repos/{repo}/actions/runs/{int(run_id)}/cancel",
                       "/repos/{owner}/{repo}/actions/runs/{run_id}/cancel", {}, idempotent=True)

    def workflow_run(self, repo: str, run_id: int) -> dict:
        return self.get_json(f"/repos/{repo}/actions/runs/{int(run_id)}", "/repos/{owner}/{repo}/actions/runs/{run_id}")

    def workflow_runs(self, repo: str, **filters) -> list[dict]:
        """The first page (newest first) of a repository's workflow runs, filtered as GitHub filters."""
        data = self.get_json(f"/repos/{repo}/actions/runs", "/repos/{owner}/{repo}/actions/runs",
                             {**filters, "per_page": 30})
        return data.get("workflow_runs", []) if isinstance(data, dict) else []

    def job_log(self, repo: str, job_id: int) -> str:
        """A job's plain-text log. GitHub answers 302 to a short-lived URL on another host: PyGithub
        gives that location (WorkflowJob.logs_url, not followed), and requests fetches it without
        the token (it must never leave GitHub's API host)."""
        endpoint = "/repos/{owner}/{repo}/actions/jobs/{job_id}/logs"

        def location() -> str:
            try:
                return self._repo(repo).get_workflow_job(job_id).logs_url()
            except KeyError:
                raise GitHubError(0, "no redirect to the log", endpoint) from None

        data = self.github.download(self.call("GET", endpoint, location), endpoint="job log download",
                                    installation=self.installation_id)
        return data.decode("utf-8", errors="replace")
