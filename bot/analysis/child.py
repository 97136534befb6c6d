"""The analysis child's side (a fork of bot/analysis/server.py): it sets its limits, runs the
engine, and reads files and the scan cache through the worker (the protocol of bot/analysis/bounded.py).

Nothing here imports the worker's modules: the child holds the engine, the job and the files it
was handed, nothing else.
"""

from __future__ import annotations

import importlib
import os
import resource
import traceback
from multiprocessing.connection import Connection

EXIT_OUT_OF_MEMORY = 3  # the child could not even say it ran out of memory


class _ProxyTree:
    """A checks.scanning.tree.Tree whose files the worker reads (see the module docstring).

    What the engine announces (`prefetch`) comes back in one message with every file's bytes;
    only a read nobody announced costs a round trip of its own.
    """

    def __init__(self, conn, mark, name: str, paths: list[str] | None, shas: dict[str, str] | None = None):
        self._conn, self._mark, self._name, self._paths = conn, mark, name, paths
        self._shas = shas or {}
        self._files: dict[str, bytes | None] = {}  # handed over in bulk by a prefetch
        self.listed = paths is not None  # as the worker's tree: an unlisted base is read at known paths only

    def blob_sha(self, path: str) -> str | None:
        """From the worker's listing: the engine's scan cache answers a file without reading it."""
        return self._shas.get(path)

    def paths(self):
        if self._paths is None:  # an unlisted tree (the base): asked for only if the engine needs it
            self._conn.send(("paths", self._name))
            self._paths = self._conn.recv()
        return self._paths

    def read(self, path: str) -> bytes | None:
        _mark_file(self._mark, path)  # the worker names it if a limit stops the job now
        if path in self._files:
            return self._files[path]
        self._conn.send(("read", self._name, path))
        return self._conn.recv()

    def prefetch(self, paths) -> None:
        self.prefetch_many([(self, paths)])

    def prefetch_many(self, pairs) -> None:
        """checks.scanning.tree.prefetch: head and base paths in one message, their files in one answer."""
        self._conn.send(("prefetch", [(tree._name, list(paths)) for tree, paths in pairs]))
        files = self._conn.recv()
        for tree, _ in pairs:
            tree._files.update(files.get(tree._name, {}))


def _mark_file(mark, path: str) -> None:
    data = path.encode("utf-8", "replace")[: len(mark) - 2]
    mark[2:2 + len(data)] = data
    mark[:2] = len(data).to_bytes(2, "little")


class _ProxyScanCache:
    """The engine's scan-cache hook (checks/scanning/scan_facts.py) answered by the parent's store."""

    def __init__(self, conn):
        self._conn = conn

    def get_many(self, keys) -> dict:
        """The facts the store has of `keys`; what comes as JSON text (bot.store.index.get_texts) is
        decoded here, and a value that is no JSON object is a miss."""
        from checks.scanning.scan_facts import decode

        self._conn.send(("index_get", list(keys)))
        out = {}
        for key, value in self._conn.recv().items():
            value = decode(value) if isinstance(value, str) else value
            if isinstance(value, dict):
                out[key] = value
        return out

    def put_many(self, entries: dict) -> None:
        self._conn.send(("index_put", entries))
        self._conn.recv()


def child_job(job_fd: int, mark_fd: int) -> None:
    """In a child of the analysis server (bot/analysis/server.py): the job comes on `job_fd`,
    answers go back on it; the file being read is written into the shared page `mark_fd`."""
    import mmap

    conn = Connection(job_fd)
    mark = mmap.mmap(mark_fd, mmap.PAGESIZE)
    os.close(mark_fd)
    try:
        job = conn.recv()
    except EOFError:
        return
    memory_bytes, cpu_s = job["memory_bytes"], job["cpu_s"]
    try:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 5))  # if the worker is gone
    except (ValueError, OSError):
        pass
    out_of_memory = False
    try:
        module, name = job["engine"].split(":")
        run = getattr(importlib.import_module(module), name)
        listings = job["listings"]
        head = _ProxyTree(conn, mark, "head", listings["head"], job.get("head_shas"))
        base = _ProxyTree(conn, mark, "base", listings["base"]) if job["has_base"] else None
        extra = {"scan_cache": _ProxyScanCache(conn)} if job.get("scan_cache") else {}
        if job.get("consumers_from") is not None:
            extra["consumers_from"] = job["consumers_from"]
        extra.update(job.get("arguments") or {})
        report = run(head, base, job["changed"], config_text=job["config_text"], limits=job["limits"], **extra)
        del head, base
        conn.send(("report", report))
    except MemoryError:
        out_of_memory = True  # answered below, once the traceback (and what it holds) is freed
    except (EOFError, BrokenPipeError):
        pass  # the worker is gone or stopped us
    except BaseException:  # noqa: BLE001 - reported to the worker, which raises it there
        conn.send(("error", traceback.format_exc()[-4000:]))
    if out_of_memory:
        try:
            conn.send(("memory", None))
        except BaseException:  # noqa: BLE001
            os._exit(EXIT_OUT_OF_MEMORY)
