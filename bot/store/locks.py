"""Exclusive claims on a key (one pull request head and check), across threads and processes.

Deliveries for the same (repository, head SHA, check name) arrive together (`opened`,
`reopened`, `ready_for_review`; replays of a re-run request): one job at a time works on that
check, the others then find it done. The claim lives where the store does, so it holds across
every process that shares the store, and it is released by the operating system or the database
when its holder dies (no lease to expire, nothing to clean up):

- PostgreSQL: a session-level advisory lock (pg_try_advisory_lock) on a connection of its own;
- SQLite (one machine by construction): an flock on a file in the data directory's `locks/`.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import time
from pathlib import Path

from sqlalchemy import text

from bot.store.db import get_engine, secure_dir

POLL_S = 0.1


class Busy(Exception):
    """Another job holds the claim."""


def _key64(key: str) -> int:
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big", signed=True)


def _lock_dir(url: str) -> Path:
    path = url.split("///", 1)[-1]
    directory = Path(path).parent / "locks"
    secure_dir(directory)
    return directory


def _flock(path: Path, deadline: float, key: str) -> int:
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise Busy(key) from None
                    time.sleep(POLL_S)
            try:
                if os.stat(path).st_ino == os.fstat(fd).st_ino:
                    return fd  # the file at the path is the one locked
            except FileNotFoundError:
                pass
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # its holder removed it meanwhile: take the current one


@contextlib.contextmanager
def claim(url: str, key: str, wait_s: float = 0.0):
    """Hold `key` for the block; Busy when another holder keeps it for longer than wait_s."""
    deadline = time.monotonic() + wait_s
    if url.startswith("sqlite"):
        path = _lock_dir(url) / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".lock")
        fd = _flock(path, deadline, key)
        try:
            yield
        finally:
            # Removed while held, so lock files do not pile up (one per head); a waiter that
            # opened the old file notices (_flock compares inodes) and opens the new one.
            try:
                os.unlink(path)
            except OSError:
                pass
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
        return
    k = _key64(key)
    with get_engine(url).connect() as conn:
        while not conn.execute(text("select pg_try_advisory_lock(:k)"), {"k": k}).scalar():
            conn.rollback()
            if time.monotonic() >= deadline:
                raise Busy(key)
            time.sleep(POLL_S)
        conn.commit()
        try:
            yield
        finally:
            try:
                conn.execute(text("select pg_advisory_unlock(:k)"), {"k": k})
                conn.commit()
            except Exception:
                conn.invalidate()  # the session ends with the connection, and its lock with it
