"""The command line's scan cache: each file's facts on disk, keyed by content (checks/scanning/scan_facts.py).

Layout: `<dir>/scans-v<ENGINE_FACTS_VERSION>/pack-*.json`, each pack one JSON object
`{"entries": {key: facts, ...}}`. A check reads every pack once (newer packs win) and writes the
entries it computed as one new pack: a cold check of a whole tree creates one file, not one per
test file, and a warm check reads a handful. Packs are written to a temporary name and renamed
into place, so concurrent checks (a pre-commit hook and an editor) never see half a pack.

JSON only, never pickle: an entry is data, not code. A pack that is not JSON, or not shaped as
above, is ignored and removed; an entry the engine cannot read is a miss (the engine scans the
file again). Bounded: past `max_packs` packs or `max_entries` entries, the packs are merged into
one that keeps the newest entries, up to nine tenths of `max_entries`.

Default directory: `$CI_REGISTRAR_CACHE_DIR`, else `$XDG_CACHE_HOME/ci-registrar`, else
`~/.cache/ci-registrar`. A directory that cannot be created or written disables the cache for
the run: the check itself never fails because of its cache.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from checks.scanning.scan_facts import ENGINE_FACTS_VERSION, dumps

DEFAULT_MAX_ENTRIES = 20_000  # about 10 MB of facts: a warm load stays in the tens of ms
DEFAULT_MAX_PACKS = 16
MAX_PACK_BYTES = 64 << 20


def default_cache_dir(environ=None) -> Path:
    env = os.environ if environ is None else environ
    if env.get("CI_REGISTRAR_CACHE_DIR"):
        return Path(env["CI_REGISTRAR_CACHE_DIR"])
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ci-registrar"


class DiskScanCache:
    """`get_many(keys) -> {key: facts}` / `put_many({key: facts})` over a directory (the engine's hook)."""

    def __init__(self, directory: str | os.PathLike | None = None, *, max_entries: int = DEFAULT_MAX_ENTRIES,
                 max_packs: int = DEFAULT_MAX_PACKS):
        self.root = Path(directory if directory is not None else default_cache_dir()) / f"scans-v{ENGINE_FACTS_VERSION}"
        self.max_entries = max_entries
        self.max_packs = max_packs
        self.enabled = True
        self.hits = self.misses = self.writes = 0
        self._entries: dict[str, dict] | None = None
        self._packs: list[tuple[Path, dict[str, dict]]] = []  # oldest first

    # -- reading ------------------------------------------------------------------------------

    def _pack_paths(self) -> list[Path]:
        try:
            with os.scandir(self.root) as it:
                found = []
                for entry in it:
                    if entry.name.startswith("pack-") and entry.name.endswith(".json") and entry.is_file(follow_symlinks=False):
                        try:
                            found.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.name, Path(entry.path)))
                        except OSError:
                            continue
        except OSError:
            return []
        return [p for _m, _n, p in sorted(found)]

    @staticmethod
    def _read_pack(path: Path) -> dict[str, dict] | None:
        try:
            with open(path, "rb") as handle:
                data = handle.read(MAX_PACK_BYTES + 1)
        except OSError:
            return {}  # gone meanwhile (merged by another check): nothing to read, nothing to remove
        try:
            if len(data) > MAX_PACK_BYTES:
                raise ValueError("oversized pack")
            doc = json.loads(data)
            entries = doc.get("entries") if isinstance(doc, dict) else None
            if not isinstance(entries, dict):
                raise ValueError("not a pack")
        except (ValueError, UnicodeDecodeError, RecursionError):
            return None
        return {k: v for k, v in entries.items() if isinstance(v, dict)}

    def _load(self) -> dict[str, dict]:
        if self._entries is None:
            self._entries = {}
            if self.enabled:
                for path in self._pack_paths():
                    entries = self._read_pack(path)
                    if entries is None:
                        self._discard(path)
                        continue
                    self._packs.append((path, entries))
                    self._entries.update(entries)  # newer packs win
        return self._entries

    def get_many(self, keys) -> dict[str, dict]:
        if not self.enabled:
            return {}
        entries = self._load()
        out = {k: entries[k] for k in keys if k in entries}
        self.hits += len(out)
        self.misses += len(set(keys)) - len(out)
        return out

    # -- writing ------------------------------------------------------------------------------

    def put_many(self, entries: dict[str, dict]) -> None:
        if not self.enabled or not entries:
            return
        known = self._load()
        fresh = {k: v for k, v in entries.items() if isinstance(k, str) and isinstance(v, dict) and known.get(k) != v}
        if not fresh:
            return
        path = self._write_pack(fresh)
        if path is None:
            return
        self.writes += len(fresh)
        known.update(fresh)
        self._packs.append((path, fresh))
        if len(self._packs) > self.max_packs or len(known) > self.max_entries:
            self._merge()

    def _write_pack(self, entries: dict[str, dict]) -> Path | None:
        try:
            text = dumps({"entries": entries})
        except (TypeError, ValueError):
            return None
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            # A name no other writer picks (its process id and random bytes), created exclusively:
            # what tempfile.mkstemp does, without the imports it costs every first check.
            name = f"{os.getpid()}-{os.urandom(8).hex()}"
            tmp = str(self.root / f".tmp-{name}.json")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                with os.fdopen(fd, "w", encoding="ascii") as handle:
                    handle.write(text)
                path = self.root / f"pack-{name}.json"
                os.replace(tmp, path)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
        except OSError:
            self.enabled = False  # read-only or full: run on without a cache
            return None
        return path

    def _merge(self) -> None:
        """Merge every pack into one that keeps the newest entries (up to 9/10 of max_entries)."""
        keep = max(self.max_entries * 9 // 10, 1)
        merged: dict[str, dict] = {}
        for _path, entries in reversed(self._packs):  # newest first
            for key, facts in entries.items():
                if len(merged) >= keep:
                    break
                merged.setdefault(key, facts)
        old = [p for p, _e in self._packs]
        path = self._write_pack(merged)
        if path is None:
            return
        for p in old:
            self._discard(p)
        self._packs = [(path, merged)]
        self._entries = dict(merged)

    @staticmethod
    def _discard(path: Path) -> None:
        try:
            path.unlink()
        except OSError:
            pass
