"""A pull request's files as checks/ reads them: a lazy Tree over GitHub's git data, read in bulk, blobs cached by SHA."""

from __future__ import annotations

import time

from bot.github.branch_read import SYMLINK_MODE
from checks.scanning.tree import MAX_LINK_BYTES, git_blob_sha, resolve_link
from checks.workflows.runs import consumer_label

# An external consumer's workflow is read again (conditionally, by ETag) after this many seconds:
# it runs nightly in another repository, so minutes of delay cost nothing, while reading it for
# every check of a busy repository would cost a request each (CI_REGISTRAR_CONSUMER_TTL_S).
CONSUMER_TTL_ENV = "CI_REGISTRAR_CONSUMER_TTL_S"
CONSUMER_TTL_S = 600.0


class GitHubTree:
    """The files of one commit, read from GitHub with as few requests as the check allows.

    Implements checks.scanning.tree.Tree. Two ways to know a commit:
    - listed (the head): one git/trees call lists every path with its blob SHA, so discovery sees
      the whole tree and a file whose blob is cached (or indexed) is never read again;
    - unlisted (the base, `listed=False`): no listing at all. The check reads a base only at
      known paths (the contract, the changed files' old versions), and one GraphQL request gives
      those by `<sha>:<path>` whatever their number; a path absent at that commit reads as None.

    Reads are gathered: `prefetch` (or prefetch_trees for several trees at once, head and base in
    one request) fetches every listed path whose blob is not cached and every unlisted path not
    yet read, through InstallationClient.read_paths (GraphQL, a few hundred files a request). A
    single missing blob is one REST blob call, the same price.

    A symlink (an entry of mode 120000, whose blob holds the target path) is read as the runner on
    a checkout reads it: the file it leads to inside the tree (checks.scanning.tree.resolve_link: relative
    target, never above the root, a bounded number of hops); a link that leads nowhere in the
    tree reads as absent. An unlisted tree cannot tell a link from a file: its paths read as the
    blob GitHub stores there (the base side only compares registrations).
    """

    def __init__(self, client, repo: str, sha: str, *, listed: bool = True):
        self.client, self.repo, self.sha, self.listed = client, repo, sha, listed
        self._blobs: dict[str, str] | None = None
        self._sizes: dict[str, int] = {}
        self._links: dict[str, tuple[str, int | None]] = {}  # path -> (blob sha, size)
        self._by_path: dict[str, tuple[str, bytes] | None] = {}  # unlisted: what read_paths gave
        self._known: dict[str, str] | None = None  # unlisted: the listed directories' files (from_read)
        self._listed_dirs: set[str] = set()  # unlisted: directories whose every file is in _known or _links

    @classmethod
    def from_read(cls, client, repo: str, read) -> "GitHubTree":
        """The branch a read_branch request read (bot.github.branch_read.BranchRead), unlisted: the
        files it read and the directories it listed are known, any other path is read by name when
        asked, unless its directory was listed (then it is known to be absent). Its `paths()` are
        those directories' files only: a /run-rocm reads the default branch's workflows directory
        and known paths, and this spares it the recursive listing."""
        tree = cls(client, repo, read.commit, listed=False)
        for path, data in read.files.items():
            tree._by_path[path] = (git_blob_sha(data), data) if data is not None else None
        tree._known = {}
        tree._listed_dirs = {d for d, entries in read.directories.items() if entries is not None}
        for entries in read.directories.values():
            for path, (sha, mode) in (entries or {}).items():
                if mode == SYMLINK_MODE:
                    tree._links[path] = (sha, None)
                else:
                    tree._known[path] = sha
        return tree

    def _absent(self, path: str) -> bool:
        """Known not to be a file without asking: its directory was listed and does not hold it."""
        return path.rpartition("/")[0] in self._listed_dirs and path not in self._known and path not in self._links

    def _by_sha(self, path: str) -> bool:
        """Is `path` read by its blob SHA (from a listing), not by name?"""
        return self.listed or path in (self._known or ())

    def _listing(self) -> dict[str, str]:
        if not self.listed:
            if self._known is not None:
                return self._known
            raise TypeError("an unlisted tree has no listing: read it at known paths")
        if self._blobs is None:
            blobs: dict[str, str] = {}
            self._walk(self.sha, "", blobs, recursive=True)
            self._blobs = blobs
        return self._blobs

    def _walk(self, sha: str, prefix: str, out: dict[str, str], recursive: bool):
        data = self.client.tree(self.repo, sha) if recursive else self.client.tree_level(self.repo, sha)
        truncated = bool(data.get("truncated"))
        for entry in data.get("tree", []):
            if entry.get("type") == "blob" and entry.get("mode") == "120000":
                self._links[prefix + entry["path"]] = (entry["sha"], entry.get("size"))
            elif entry.get("type") == "blob":
                out[prefix + entry["path"]] = entry["sha"]
                if entry.get("size") is not None:
                    self._sizes[prefix + entry["path"]] = entry["size"]
            elif truncated and entry.get("type") == "tree" and "/" not in entry["path"]:
                # GitHub cut the recursive listing (100,000 entries / 7 MB): walk subtrees one by one.
                self._walk(entry["sha"], prefix + entry["path"] + "/", out, recursive=True)

    def paths(self):
        return list(self._listing()) + list(self._links)

    def blob_sha(self, path: str) -> str | None:
        if not self._by_sha(path):
            found = self._by_path.get(path)
            return found[0] if found else None
        return self._listing().get(path)

    def _read_link(self, path: str) -> bytes | None:
        sha, size = self._links[path]
        if size is not None and size > MAX_LINK_BYTES:
            return None  # not a path: never fetched
        return self.client.blob(self.repo, sha)

    def read(self, path: str) -> bytes | None:
        if not self.listed and self._by_sha(path):
            return self.client.blob(self.repo, self._known[path])
        if not self.listed and path in self._links:
            # a link in a listed directory: the rest of the tree is not listed, so its target is
            # read by name (absent: None)
            target = resolve_link(path, self._read_link, self._links.__contains__, lambda p: True)
            return None if target is None else self.read(target)
        if not self.listed and self._absent(path):
            return None
        if not self.listed:
            if path not in self._by_path:
                prefetch_trees([(self, [path])])
            found = self._by_path.get(path)
            return found[1] if found else None
        sha = self._listing().get(path)
        if sha is None:
            if path not in self._links:
                return None
            target = resolve_link(path, self._read_link, self._links.__contains__, self._listing().__contains__)
            return None if target is None else self.read(target)
        return self.client.blob(self.repo, sha)

    def prefetch(self, paths) -> None:
        """Fetch many files at once; cached ones cost nothing."""
        prefetch_trees([(self, paths)])

    def prefetch_many(self, pairs) -> None:
        """checks.scanning.tree.prefetch: several trees of this repository in one bulk read."""
        prefetch_trees(pairs)


def prefetch_trees(pairs) -> None:
    """One bulk read for the given paths of several GitHubTrees of one repository (head and base)."""
    pairs = [(tree, list(paths)) for tree, paths in pairs if tree is not None]
    if not pairs:
        return
    client, repo = pairs[0][0].client, pairs[0][0].repo
    cache = client.github.blobs
    wanted: dict[str, tuple[GitHubTree, str]] = {}
    sizes: dict[str, int] = {}
    listed_shas: set[str] = set()
    cut = client.github.graphql_cut
    whole: list[str] = []  # blobs longer than GraphQL has cut a text: read over REST at once
    for tree, paths in pairs:
        if tree.client is not client or tree.repo != repo:
            raise ValueError("prefetch_trees reads one repository with one client")
        for path in paths:
            if tree._by_sha(path):
                sha = tree._listing().get(path)
                if sha is None or sha in listed_shas or cache.get(sha) is not None:
                    continue  # absent or a link (read on demand), asked already, or cached
                listed_shas.add(sha)
                if cut is not None and tree._sizes.get(path, 0) > cut:
                    whole.append(sha)
                    continue
            elif path in tree._by_path or tree._absent(path):
                continue
            expression = f"{tree.sha}:{path}"
            wanted.setdefault(expression, (tree, path))
            if tree._by_sha(path) and path in tree._sizes:
                sizes[expression] = tree._sizes[path]
    for sha in whole:
        client.blob(repo, sha)
    if not wanted:
        return
    if len(wanted) == 1:
        (tree, path), = wanted.values()
        if tree._by_sha(path):  # one blob: the REST call is as cheap and needs no GraphQL
            client.blob(repo, tree._listing()[path])
            return
    found = client.read_paths(repo, list(wanted), sizes)
    for expression, (tree, path) in wanted.items():
        if not tree._by_sha(path):
            tree._by_path[path] = found.get(expression)


def consumer_labels(config) -> list[str]:
    """`owner/repo:path` of each configured external consumer whose workflow is read (`consumers:`
    entries without `suites:`, the hand-typed form has nothing to read)."""
    return list(dict.fromkeys(consumer_label(c) for c in config.consumers if c.suites is None))


def kept_consumer(client, label: str):
    """What this process read of a consumer's workflow (bytes, or why not) in the last CONSUMER_TTL_S, else None."""
    from bot.infra.settings import env_float

    cached = client.github.consumers.get((client.installation_id, label))
    if cached is not None and time.monotonic() - cached[0] < env_float(CONSUMER_TTL_ENV, CONSUMER_TTL_S):
        return cached[1]
    return None


def keep_consumer(client, label: str, data: bytes | str | None) -> bytes | str:
    """Keep what was read of a consumer's workflow (None: nothing readable there), as external_consumers reads it."""
    repository = label.partition(":")[0]
    value = data if data is not None else (
        f"it is not a file at the default branch of {repository}, or that repository is not readable by this installation")
    client.github.consumers.put((client.installation_id, label), (time.monotonic(), value), len(value))
    return value


def external_consumers(client, config) -> dict[str, bytes | str]:
    """The configured external consumers' workflows (`consumers:` entries without `suites:`), each
    read at its repository's default branch: `owner/repo:path` -> bytes, or why it could not be
    read (the engine turns that into a REG017 warning, never a failure).

    `client.file_at` asks with If-None-Match: an unchanged workflow costs a 304 from the ETag cache.
    What was read (or why not) is then kept for CONSUMER_TTL_S (10 minutes) in this process: another
    repository's workflow changes seldom, and every PR check of a busy repository would otherwise
    spend a request on it. (A /run-rocm reads it in its first request instead, when its
    configuration is known there: bot.ondemand.pull.ReadAhead, keep_consumer.) A transient error
    (5xx, timeout) is raised and never kept: the job is retried, not checked without it.
    """
    from bot.github.retry import GitHubError

    out: dict[str, bytes | str] = {}
    for label in consumer_labels(config):
        kept = kept_consumer(client, label)
        if kept is not None:
            out[label] = kept
            continue
        repository, _, workflow = label.partition(":")
        try:
            data = client.file_at(repository, workflow, None)
        except GitHubError as exc:
            data = f"GitHub answered {exc.status} reading it at the default branch of {repository}"
        out[label] = keep_consumer(client, label, data)
    return out


def changed_paths(files: list[dict]) -> dict[str, str | None]:
    """The PR's files (GET pulls/{n}/files) as checks.scanning.tree.changed_paths gives them: path -> base path.

    None for an added file; a rename maps the new path to the old, and the old path to itself
    (its registrations were removed from head).
    """
    changes: dict[str, str | None] = {}
    for f in files:
        name, status = f.get("filename"), f.get("status")
        if not name:
            continue
        if status == "added":
            changes[name] = None
        elif status in ("renamed", "copied") and f.get("previous_filename"):
            changes[name] = f["previous_filename"]
            if status == "renamed":
                changes.setdefault(f["previous_filename"], f["previous_filename"])
        else:
            changes[name] = name
    return changes
