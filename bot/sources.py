"""A pull request's files as checks/ reads them: a lazy Tree over GitHub's git data, blobs cached by SHA."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from checks.tree import MAX_LINK_BYTES, resolve_link


class GitHubTree:
    """The files of one commit, listed with one git/trees call and read blob by blob on demand.

    Implements checks.tree.Tree. Blob contents go through the App's blob cache, so a re-push only
    fetches the files whose content changed.

    A symlink (an entry of mode 120000, whose blob holds the target path) is read as the runner on
    a checkout reads it: the file it leads to inside the tree (checks.tree.resolve_link: relative
    target, never above the root, a bounded number of hops); a link that leads nowhere in the
    tree reads as absent.
    """

    def __init__(self, client, repo: str, sha: str):
        self.client, self.repo, self.sha = client, repo, sha
        self._blobs: dict[str, str] | None = None
        self._links: dict[str, tuple[str, int | None]] = {}  # path -> (blob sha, size)

    def _listing(self) -> dict[str, str]:
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
            elif truncated and entry.get("type") == "tree" and "/" not in entry["path"]:
                # GitHub cut the recursive listing (100,000 entries / 7 MB): walk subtrees one by one.
                self._walk(entry["sha"], prefix + entry["path"] + "/", out, recursive=True)

    def paths(self):
        return list(self._listing()) + list(self._links)

    def blob_sha(self, path: str) -> str | None:
        return self._listing().get(path)

    def _read_link(self, path: str) -> bytes | None:
        sha, size = self._links[path]
        if size is not None and size > MAX_LINK_BYTES:
            return None  # not a path: never fetched
        return self.client.blob(self.repo, sha)

    def read(self, path: str) -> bytes | None:
        sha = self._listing().get(path)
        if sha is None:
            if path not in self._links:
                return None
            target = resolve_link(path, self._read_link, self._links.__contains__, self._listing().__contains__)
            return None if target is None else self.read(target)
        return self.client.blob(self.repo, sha)

    def prefetch(self, paths, workers: int = 4) -> None:
        """Fetch many blobs at once (a few in parallel); cached ones cost nothing."""
        shas = [s for s in (self._listing().get(p) for p in paths) if s is not None]
        missing = [s for s in dict.fromkeys(shas) if self.client.github.blobs.get(s) is None]
        if len(missing) <= 1:
            for sha in missing:
                self.client.blob(self.repo, sha)
            return
        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(lambda s: self.client.blob(self.repo, s), missing))


def external_consumers(client, config) -> dict[str, bytes | str]:
    """The configured external consumers' workflows (`consumers:` entries without `suites:`), each
    read at its repository's default branch: `owner/repo:path` -> bytes, or why it could not be
    read (the engine turns that into a REG017 warning, never a failure).

    `client.file_at` asks with If-None-Match: an unchanged workflow costs a 304 from the ETag cache.
    A transient error (5xx, timeout) is raised: the job is retried, not checked without it.
    """
    from bot.github.retry import GitHubError

    out: dict[str, bytes | str] = {}
    for consumer in config.consumers:
        if consumer.suites is not None:
            continue  # the hand-typed form: nothing to read
        label = f"{consumer.repository}:{consumer.workflow}"
        if label in out:
            continue
        try:
            data = client.file_at(consumer.repository, consumer.workflow, None)
        except GitHubError as exc:
            out[label] = f"GitHub answered {exc.status} reading it at the default branch of {consumer.repository}"
            continue
        out[label] = data if data is not None else (
            f"it is not a file at the default branch of {consumer.repository}, or that repository is not readable by this installation")
    return out


def changed_paths(files: list[dict]) -> dict[str, str | None]:
    """The PR's files (GET pulls/{n}/files) as checks.tree.changed_paths gives them: path -> base path.

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
