"""Where the engine reads files from: a mapping of repository paths to bytes, read lazily.

checks/ never fetches anything itself: a caller hands it a Tree. The GitHub App's tree fetches
blobs on demand (and caches them by blob SHA); the command line reads a checkout or a git revision.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Iterable, Protocol


def git_blob_sha(data: bytes) -> str:
    """The git blob SHA-1 of `data` (what `git hash-object` prints, and GitHub's tree listings give
    without the blob being read): the one content key of the engine's cache and the App's index."""
    h = hashlib.sha1(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


class Tree(Protocol):
    def paths(self) -> Iterable[str]:
        """Every file path in the tree, relative to its root, with forward slashes."""

    def read(self, path: str) -> bytes | None:
        """A file's bytes, or None when the tree has no such file."""


def prefetch(pairs) -> None:
    """Tell trees which paths the check will read, so a remote tree fetches them in bulk.

    `pairs`: (tree, paths). Trees that share a bulk reader (`prefetch_many`, the App's GitHub
    trees of one repository) get one call for all pairs (head and base in one request); others
    get their own `prefetch`, if any; a local tree has neither and reads on demand.
    """
    pairs = [(tree, list(paths)) for tree, paths in pairs if tree is not None]
    pairs = [(tree, paths) for tree, paths in pairs if paths]
    if not pairs:
        return
    if all(getattr(tree, "prefetch_many", None) is not None for tree, _ in pairs):
        pairs[0][0].prefetch_many(pairs)
        return
    for tree, paths in pairs:
        if hasattr(tree, "prefetch"):
            tree.prefetch(paths)


MAX_LINK_HOPS = 8  # a chain of symlinks longer than this leads nowhere (git itself stops at 5-40)
MAX_LINK_BYTES = 4096  # PATH_MAX: a symlink's blob is its target path, never more


def resolve_link(path: str, read_link, is_link, is_file) -> str | None:
    """The file a symlink at `path` leads to inside the tree, as the runner on a checkout reads it,
    or None: an absolute target, one that climbs above the root, a chain of more than
    MAX_LINK_HOPS links, or one that ends at no file of the tree (a directory, nothing).

    `read_link(p)` gives a link's target (its blob's bytes), `is_link(p)`/`is_file(p)` what a path is.
    """
    current = path
    for _ in range(MAX_LINK_HOPS):
        raw = read_link(current)
        if raw is None or len(raw) > MAX_LINK_BYTES:
            return None
        try:
            target = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
        if not target or target.startswith("/") or "\0" in target:
            return None
        parts = current.split("/")[:-1]
        for part in target.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if not parts:
                    return None  # escapes the repository
                parts.pop()
            else:
                parts.append(part)
        current = "/".join(parts)
        if is_link(current):
            continue
        return current if is_file(current) else None
    return None


class MemoryTree:
    """A tree held in memory: tests, and callers that already have the contents."""

    def __init__(self, files: dict[str, bytes | str]):
        self._files = {p: (c.encode() if isinstance(c, str) else c) for p, c in files.items()}

    def paths(self):
        return self._files.keys()

    def read(self, path):
        return self._files.get(path)


class DirectoryTree:
    """A checkout on disk (the whole-tree mode of `ci-registrar check`). A symlink is read as the
    runner reads it (its target), unless the target lies outside the checkout."""

    SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".tox", ".mypy_cache"}

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self._paths: list[str] | None = None

    def paths(self):
        if self._paths is None:
            found = []
            root = str(self.root)
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames[:] = [d for d in dirnames if d not in self.SKIP_DIRS]
                rel = os.path.relpath(dirpath, root)
                prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
                found.extend(prefix + name for name in filenames)
            self._paths = found
        return self._paths

    def read(self, path):
        full = self.root / path
        try:
            if full.is_symlink():
                real = full.resolve(strict=True)
                if not real.is_relative_to(self.root.resolve()):
                    return None  # leads out of the checkout
            with open(full, "rb") as handle:
                return handle.read()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError, RuntimeError, OSError):
            return None


class GitError(Exception):
    pass


def _git(repo: Path, *args: str, input: bytes | None = None) -> bytes:
    import subprocess  # here, not at the top: a directory's check never runs git

    try:
        done = subprocess.run(["git", "-C", str(repo), *args], input=input, capture_output=True, check=False)
    except FileNotFoundError as exc:
        raise GitError("git is not installed") from exc
    if done.returncode != 0:
        raise GitError(_reason(done.stderr) or f"git {args[0]} failed (exit {done.returncode})")
    return done.stdout


def _reason(stderr: bytes) -> str:
    """git's own explanation: its first `fatal:`/`error:` line, else its last line."""
    lines = [line.strip() for line in stderr.decode(errors="replace").splitlines() if line.strip()]
    for line in lines:
        if line.startswith(("fatal:", "error:")):
            return line
    return lines[-1] if lines else ""


class GitRevisionTree:
    """The files of one revision of a local git repository, read with `git cat-file --batch`."""

    def __init__(self, repo: str | os.PathLike, rev: str):
        self.repo = Path(repo)
        self.rev = rev
        try:
            self.commit = _git(self.repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").decode().strip()
        except GitError as exc:
            if str(exc).startswith("git rev-parse failed"):  # --quiet: ask again for git's reason
                try:
                    _git(self.repo, "rev-parse", f"{rev}^{{commit}}", "--")
                except GitError as again:
                    exc = again
            raise GitError(f"revision `{rev}`: {str(exc).replace('^{commit}', '')}") from None
        self._blobs: dict[str, str] = {}
        self._links: dict[str, str] = {}  # symlinks (mode 120000): path -> blob of the target path
        for line in _git(self.repo, "ls-tree", "-r", "-z", "--full-tree", self.commit).split(b"\0"):
            if not line:
                continue
            meta, path = line.split(b"\t", 1)
            mode, kind, sha = meta.split()
            if kind == b"blob":
                target = self._links if mode == b"120000" else self._blobs
                target[path.decode("utf-8", "surrogateescape")] = sha.decode()
        self._cache: dict[str, bytes] = {}

    def paths(self):
        return list(self._blobs) + list(self._links)

    def blob_sha(self, path: str) -> str | None:
        return self._blobs.get(path)

    def _resolve(self, path: str) -> str | None:
        def read_link(p):
            return _git(self.repo, "cat-file", "blob", self._links[p])

        return resolve_link(path, read_link, self._links.__contains__, self._blobs.__contains__)

    def read(self, path):
        if path in self._links:
            target = self._resolve(path)
            return None if target is None else self.read(target)
        if path in self._cache:
            return self._cache[path]
        sha = self._blobs.get(path)
        if sha is None:
            return None
        data = _git(self.repo, "cat-file", "blob", sha)
        self._cache[path] = data
        return data

    def prefetch(self, paths: Iterable[str]) -> None:
        """Read many blobs in one `git cat-file --batch` process instead of one process each."""
        wanted = [p for p in paths if p in self._blobs and p not in self._cache]
        if not wanted:
            return
        out = _git(self.repo, "cat-file", "--batch", input="".join(self._blobs[p] + "\n" for p in wanted).encode())
        pos = 0
        for path in wanted:
            header_end = out.index(b"\n", pos)
            size = int(out[pos:header_end].split()[2])
            start = header_end + 1
            self._cache[path] = out[start : start + size]
            pos = start + size + 1


def changed_paths(repo: str | os.PathLike, base: str, head: str) -> dict[str, str | None]:
    """Paths the diff base..head touches -> their path in base (None when added). Renames followed."""
    out = _git(Path(repo), "diff", "--name-status", "-z", "-M", base, head).split(b"\0")
    changes: dict[str, str | None] = {}
    i = 0
    while i < len(out) and out[i]:
        status = out[i].decode()
        if status.startswith(("R", "C")):
            old, new = out[i + 1].decode(), out[i + 2].decode()
            changes[new] = old
            if status.startswith("R"):
                changes.setdefault(old, old)  # the old path is gone from head: its registrations were removed
            i += 3
        else:
            path = out[i + 1].decode()
            changes[path] = None if status == "A" else path
            i += 2
    return changes
