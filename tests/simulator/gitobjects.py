"""Real git objects (blob, tree, commit SHA-1s as git computes them) and GitHub-style diffs."""

from __future__ import annotations

import difflib
import hashlib
import re
from dataclasses import dataclass, field


def blob_sha(content: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def _object_sha(kind: bytes, payload: bytes) -> str:
    return hashlib.sha1(kind + b" %d\0" % len(payload) + payload).hexdigest()


@dataclass
class Commit:
    sha: str
    tree: str
    parents: list[str]
    message: str
    author: str
    email: str
    timestamp: int
    files: dict[str, bytes] = field(repr=False)  # the whole snapshot, path -> content
    committer: str = ""          # the committer's name and email ("" = the author's)
    committer_email: str = ""
    signed: bool = False         # carries GitHub's own signature (a commit the API made for a GitHub App)
    modes: dict[str, str] = field(default_factory=dict, repr=False)  # path -> mode, only where not 100644

    @property
    def committer_name(self) -> str:
        return self.committer or self.author

    @property
    def committer_mail(self) -> str:
        return self.committer_email or self.email


class ObjectStore:
    """Blobs, trees and commits of one repository, keyed by their git SHA-1."""

    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}
        # tree sha -> list of (mode, name, kind, sha) sorted as git sorts them
        self.trees: dict[str, list[tuple[str, str, str, str]]] = {}
        self.commits: dict[str, Commit] = {}
        self._diffs: dict[tuple[str | None, str], list[dict]] = {}

    def diff(self, old: str | None, new: str) -> list[dict]:
        """`diff_files` between two commits (old None: the empty tree), computed once per pair, as
        GitHub keeps a commit pair's diff: commits never change, and difflib over large files made
        the simulator, not the App, the slowest part of a flood of PR listings (issue 38's fair
        share measurement). Each caller gets its own copies of the entries."""
        key = (old, new)
        entries = self._diffs.get(key)
        if entries is None:
            entries = diff_files(self.commits[old].files if old is not None else {}, self.commits[new].files)
            self._diffs[key] = entries
        return [dict(entry) for entry in entries]

    def put_blob(self, content: bytes) -> str:
        sha = blob_sha(content)
        self.blobs[sha] = content
        return sha

    def put_tree(self, files: dict[str, bytes], modes: dict[str, str] | None = None) -> str:
        """Build the tree objects for a flat {path: content} snapshot; returns the root tree SHA.
        modes: path -> git mode for blobs that are not 100644 (an executable file is 100755)."""
        root: dict = {}
        modes = modes or {}
        for path, content in files.items():
            node = root
            parts = path.split("/")
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            node[parts[-1]] = (modes.get(path, "100644"), content)
        return self._write_tree(root)

    def _write_tree(self, node: dict) -> str:
        entries = []
        for name, value in node.items():
            if isinstance(value, dict):
                entries.append(("40000", name, "tree", self._write_tree(value)))
            else:
                mode, content = value
                entries.append((mode, name, "blob", self.put_blob(content)))
        # git orders entries by name, comparing a tree's name as if it ended with "/"
        entries.sort(key=lambda e: e[1].encode() + (b"/" if e[2] == "tree" else b""))
        payload = b"".join(mode.encode() + b" " + name.encode() + b"\0" + bytes.fromhex(sha)
                           for mode, name, _, sha in entries)
        sha = _object_sha(b"tree", payload)
        self.trees[sha] = entries
        return sha

    def put_commit(self, files: dict[str, bytes], parents: list[str], message: str,
                   author: str, email: str, timestamp: int, *, committer: str = "", committer_email: str = "",
                   modes: dict[str, str] | None = None, signed: bool = False) -> str:
        modes = {p: m for p, m in (modes or {}).items() if p in files and m != "100644"}
        tree = self.put_tree(files, modes)
        lines = [f"tree {tree}"] + [f"parent {p}" for p in parents]
        lines += [f"author {author} <{email}> {timestamp} +0000",
                  f"committer {committer or author} <{committer_email or email}> {timestamp} +0000"]
        if signed:  # GitHub's signature header (its content is not modelled, only that it is there)
            lines.append(f"gpgsig -----BEGIN PGP SIGNATURE----- github {hashlib.sha1(tree.encode()).hexdigest()}")
        lines += ["", message]
        payload = ("\n".join(lines) + "\n").encode()
        sha = _object_sha(b"commit", payload)
        self.commits[sha] = Commit(sha, tree, list(parents), message, author, email, timestamp,
                                   dict(files), committer, committer_email, signed, modes)
        return sha

    def walk_tree(self, tree_sha: str, recursive: bool, prefix: str = ""):
        """Yield (path, mode, kind, sha, size) for the entries of a tree."""
        for mode, name, kind, sha in self.trees[tree_sha]:
            path = prefix + name
            size = len(self.blobs[sha]) if kind == "blob" else None
            yield path, mode, kind, sha, size
            if kind == "tree" and recursive:
                yield from self.walk_tree(sha, True, path + "/")

    def subtree(self, tree_sha: str, path: str) -> tuple[str, str] | None:
        """(kind, sha) of the entry at path below tree_sha, or None."""
        if path in ("", "/"):
            return "tree", tree_sha
        kind, sha = "tree", tree_sha
        for part in path.strip("/").split("/"):
            if kind != "tree":
                return None
            match = [e for e in self.trees[sha] if e[1] == part]
            if not match:
                return None
            _, _, kind, sha = match[0]
        return kind, sha

    def ancestors(self, sha: str) -> list[str]:
        """sha and every ancestor, breadth first."""
        seen, order, queue = set(), [], [sha]
        while queue:
            current = queue.pop(0)
            if current in seen or current not in self.commits:
                continue
            seen.add(current)
            order.append(current)
            queue.extend(self.commits[current].parents)
        return order

    def merge_base(self, a: str, b: str) -> str | None:
        ancestors_a = set(self.ancestors(a))
        for sha in self.ancestors(b):
            if sha in ancestors_a:
                return sha
        return None


def is_binary(content: bytes) -> bool:
    if b"\0" in content:
        return True
    try:
        content.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def unified_patch(old: bytes, new: bytes) -> tuple[str | None, int, int]:
    """GitHub's `patch` field (hunks only, no ---/+++ header), additions, deletions."""
    if is_binary(old) or is_binary(new):
        return None, 0, 0
    a = old.decode().splitlines(keepends=True)
    b = new.decode().splitlines(keepends=True)
    out, additions, deletions = [], 0, 0
    for line in list(difflib.unified_diff(a, b, n=3))[2:]:
        if line.startswith("@@"):
            out.append(line.rstrip("\n"))
            continue
        additions += line.startswith("+")
        deletions += line.startswith("-")
        if line.endswith("\n"):
            out.append(line[:-1])
        else:  # the file's last line has no newline: git says so
            out.append(line)
            out.append("\\ No newline at end of file")
    return "\n".join(out), additions, deletions


HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def commentable_lines(patch: str | None) -> tuple[set[int], set[int]]:
    """(RIGHT-side line numbers, LEFT-side line numbers) that a review comment may target."""
    right: set[int] = set()
    left: set[int] = set()
    if not patch:
        return right, left
    old_line = new_line = 0
    for line in patch.split("\n"):
        match = HUNK.match(line)
        if match:
            old_line, new_line = int(match.group(1)), int(match.group(3))
            continue
        if line.startswith("+"):
            right.add(new_line)
            new_line += 1
        elif line.startswith("-"):
            left.add(old_line)
            old_line += 1
        elif line.startswith("\\"):
            continue
        else:
            right.add(new_line)
            left.add(old_line)
            old_line += 1
            new_line += 1
    return right, left


def diff_files(old: dict[str, bytes], new: dict[str, bytes]) -> list[dict]:
    """GitHub's diff entries between two snapshots: status, sha, patch, counts, renames."""
    removed = {p: c for p, c in old.items() if p not in new}
    added = {p: c for p, c in new.items() if p not in old}
    entries = []
    # exact renames: a removed and an added path with the same blob
    by_blob = {}
    for path, content in removed.items():
        by_blob.setdefault(blob_sha(content), []).append(path)
    renamed_from: dict[str, str] = {}
    for path, content in sorted(added.items()):
        candidates = by_blob.get(blob_sha(content))
        if candidates:
            renamed_from[path] = candidates.pop(0)
    gone = set(renamed_from.values())
    for path in sorted(set(old) | set(new)):
        if path in gone:
            continue
        if path in renamed_from:
            entries.append({"filename": path, "status": "renamed",
                            "previous_filename": renamed_from[path],
                            "sha": blob_sha(new[path]), "additions": 0, "deletions": 0,
                            "changes": 0, "patch": None})
            continue
        before, after = old.get(path), new.get(path)
        if before == after:
            continue
        if before is None:
            status, sha = "added", blob_sha(after)
        elif after is None:
            status, sha = "removed", blob_sha(before)
        else:
            status, sha = "modified", blob_sha(after)
        patch, additions, deletions = unified_patch(before or b"", after or b"")
        if before is None and after == b"" or after is None and before == b"":
            patch = None
        entries.append({"filename": path, "status": status, "sha": sha, "additions": additions,
                        "deletions": deletions, "changes": additions + deletions, "patch": patch})
    return entries
