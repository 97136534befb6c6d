"""A pull request's files as checks/ reads them: a lazy Tree over GitHub's git data, blobs cached by SHA."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor


class GitHubTree:
    """The files of one commit, listed with one git/trees call and read blob by blob on demand.

    Implements checks.tree.Tree. Blob contents go through the App's blob cache, so a re-push only
    fetches the files whose content changed.
    """

    def __init__(self, client, repo: str, sha: str):
        self.client, self.repo, self.sha = client, repo, sha
        self._blobs: dict[str, str] | None = None

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
            if entry.get("type") == "blob":
                out[prefix + entry["path"]] = entry["sha"]
            elif truncated and entry.get("type") == "tree" and "/" not in entry["path"]:
                # GitHub cut the recursive listing (100,000 entries / 7 MB): walk subtrees one by one.
                self._walk(entry["sha"], prefix + entry["path"] + "/", out, recursive=True)

    def paths(self):
        return self._listing().keys()

    def blob_sha(self, path: str) -> str | None:
        return self._listing().get(path)

    def read(self, path: str) -> bytes | None:
        sha = self._listing().get(path)
        if sha is None:
            return None
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
