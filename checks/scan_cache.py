"""The command line's scan cache: one file's facts on disk, keyed by content (checks/scan_facts.py).

Layout: `<dir>/scans-v<ENGINE_FACTS_VERSION>/<key[:2]>/<key>.json`, one small JSON file per entry,
written to a temporary name and renamed into place, so concurrent checks (a pre-commit hook and an
editor) never see half an entry. JSON only, never pickle: an entry is data, not code. A corrupt or
unreadable entry is a miss (and is removed). The cache is bounded: past `max_entries`, the oldest
entries (by modification time) are removed down to nine tenths of the bound.

Default directory: `$CI_REGISTRAR_CACHE_DIR`, else `$XDG_CACHE_HOME/ci-registrar`, else
`~/.cache/ci-registrar`. A directory that cannot be created or written disables the cache for the
run: the check itself never fails because of its cache.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from checks.scan_facts import ENGINE_FACTS_VERSION, dumps

DEFAULT_MAX_ENTRIES = 50_000
MAX_ENTRY_BYTES = 1 << 20  # facts are a few hundred bytes; anything near this is not ours


def default_cache_dir(environ=None) -> Path:
    env = os.environ if environ is None else environ
    if env.get("CI_REGISTRAR_CACHE_DIR"):
        return Path(env["CI_REGISTRAR_CACHE_DIR"])
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ci-registrar"


class DiskScanCache:
    """`get_many(keys) -> {key: facts}` / `put_many({key: facts})` over a directory (the engine's hook)."""

    def __init__(self, directory: str | os.PathLike | None = None, *, max_entries: int = DEFAULT_MAX_ENTRIES):
        self.root = Path(directory if directory is not None else default_cache_dir()) / f"scans-v{ENGINE_FACTS_VERSION}"
        self.max_entries = max_entries
        self.enabled = True
        self.hits = self.misses = self.writes = 0

    def _path(self, key: str) -> Path | None:
        if not key or not all(c in "0123456789abcdef" for c in key):
            return None  # keys are hex digests: nothing else names a file here
        return self.root / key[:2] / f"{key}.json"

    def get_many(self, keys) -> dict[str, dict]:
        out: dict[str, dict] = {}
        if not self.enabled:
            return out
        for key in keys:
            path = self._path(key)
            if path is None:
                continue
            try:
                with open(path, "rb") as handle:
                    data = handle.read(MAX_ENTRY_BYTES + 1)
            except OSError:
                self.misses += 1
                continue
            try:
                if len(data) > MAX_ENTRY_BYTES:
                    raise ValueError("oversized entry")
                facts = json.loads(data)
                if not isinstance(facts, dict):
                    raise ValueError("not an object")
            except (ValueError, UnicodeDecodeError, RecursionError):
                self.misses += 1
                self._discard(path)
                continue
            self.hits += 1
            out[key] = facts
        return out

    def put_many(self, entries: dict[str, dict]) -> None:
        if not self.enabled or not entries:
            return
        written = 0
        for key, facts in entries.items():
            path = self._path(key)
            if path is None:
                continue
            try:
                text = dumps(facts)
            except (TypeError, ValueError):
                continue
            if len(text) > MAX_ENTRY_BYTES:
                continue
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
                try:
                    with os.fdopen(fd, "w", encoding="ascii") as handle:
                        handle.write(text)
                    os.replace(tmp, path)
                except BaseException:
                    try:
                        os.unlink(tmp)
                    except OSError:
                        pass
                    raise
            except OSError:
                self.enabled = False  # read-only or full: run on without a cache
                return
            written += 1
        self.writes += written
        if written:
            self._bound()

    def _discard(self, path: Path) -> None:
        try:
            path.unlink()
        except OSError:
            pass

    def _bound(self) -> None:
        entries = []
        try:
            with os.scandir(self.root) as shards:
                for shard in shards:
                    if not shard.is_dir(follow_symlinks=False):
                        continue
                    with os.scandir(shard.path) as files:
                        entries.extend(f for f in files if f.name.endswith(".json") and not f.name.startswith("."))
        except OSError:
            return
        if len(entries) <= self.max_entries:
            return
        keep = self.max_entries * 9 // 10

        def mtime(entry):
            try:
                return entry.stat(follow_symlinks=False).st_mtime
            except OSError:
                return 0.0

        entries.sort(key=mtime)
        for entry in entries[: len(entries) - keep]:
            try:
                os.unlink(entry.path)
            except OSError:
                pass
