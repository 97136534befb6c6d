"""Whether the queue (Redis) and the store (PostgreSQL) answer, as this process sees them.

An operator whose Redis or PostgreSQL goes away wants two lines: one when the outage starts (what
does not answer, where, why, and that the process retries) and one when it ends (how long it
lasted). Every thread of a process that meets the outage (each worker thread, the scheduler, the
heartbeat, the reconciler) reports it here instead of logging its own traceback, and waits out the
backoff this tracker gives: short at first, doubling up to a few seconds, so the process neither
floods the log nor hammers a server that is restarting.

One tracker per dependency per process (`QUEUE`, `STORE`); `describe()` names where it points
(host and port only: a URL may hold a password).
"""

from __future__ import annotations

import threading
import time
from urllib.parse import urlsplit

from bot.infra.logging import get_logger

log = get_logger("ci_registrar.outage")

FIRST_WAIT_S = 0.1
LONGEST_WAIT_S = 5.0  # between tries while it lasts: a restarted server is found within this


def where(url: str | None) -> str:
    """`Redis at host:port`, `PostgreSQL at host:port/db`, `SQLite at path`: never the password."""
    if not url:
        return "the embedded store"
    scheme = url.split("://", 1)[0].lower()
    if scheme.startswith("sqlite"):
        return f"SQLite at {url.split(':///', 1)[-1]}"
    if scheme == "unix":
        return f"Redis at {urlsplit(url).path}"
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    kind = "Redis" if scheme.startswith("redis") else "PostgreSQL"
    database = parts.path.strip("/")
    return f"{kind} at {parts.hostname or 'localhost'}:{port or ''}{'/' + database if database and kind == 'PostgreSQL' else ''}"


def is_unreachable(exc: BaseException) -> bool:
    """A connection that failed, broke or timed out: what a server that is down or restarting does
    (not an error of a command or of the data, which waiting would not cure)."""
    try:
        import redis.exceptions as redis_exc

        if isinstance(exc, (redis_exc.ConnectionError, redis_exc.TimeoutError, redis_exc.BusyLoadingError)):
            return True
        if isinstance(exc, redis_exc.ResponseError) and str(exc).startswith(("LOADING", "MASTERDOWN", "READONLY")):
            return True
    except ImportError:  # the command line alone has no Redis client
        pass
    try:
        from sqlalchemy import exc as sa

        if isinstance(exc, sa.DBAPIError) and exc.connection_invalidated:
            return True
        if isinstance(exc, (sa.OperationalError, sa.InterfaceError, sa.DisconnectionError)):
            return True
        if isinstance(exc, sa.TimeoutError):  # the pool's
            return True
    except ImportError:
        pass
    return isinstance(exc, (ConnectionError, TimeoutError))


class Outage:
    """One dependency's outage in this process: its start and end each logged once, and the wait
    before the next try (doubling while it lasts)."""

    def __init__(self, what: str):
        self.what = what  # "queue" | "store"
        self.where = ""
        self._lock = threading.Lock()
        self._since: float | None = None  # monotonic start of the outage, None while it answers
        self._wait = FIRST_WAIT_S
        self._next_try = 0.0
        self.started = 0  # outages seen (tests and /metrics read these)
        self.ended = 0

    def describe(self, url: str | None) -> None:
        self.where = where(url)

    @property
    def down(self) -> bool:
        return self._since is not None

    def failed(self, exc: BaseException) -> bool:
        """Note a failed call. True when it is an outage (the caller logs nothing and waits
        `wait_s()`); False for any other error, which the caller reports as before."""
        if not is_unreachable(exc):
            return False
        now = time.monotonic()
        with self._lock:
            starting = self._since is None
            if starting:
                self._since = now
                self._wait = FIRST_WAIT_S
                self.started += 1
            else:
                self._wait = min(LONGEST_WAIT_S, self._wait * 2)
            self._next_try = now + self._wait
        if starting:
            log.warning(f"{self.what} unreachable, retrying", where=self.where or None, error=_short(exc),
                        retry=f"with backoff, at most {LONGEST_WAIT_S:g} s apart, until it answers")
        return True

    def answered(self) -> None:
        """Note a call that succeeded: ends an outage (one line), else costs one attribute read."""
        if self._since is None:
            return
        with self._lock:
            since, self._since = self._since, None
            self._wait, self._next_try = FIRST_WAIT_S, 0.0
            if since is None:
                return
            self.ended += 1
        log.warning(f"{self.what} reachable again", where=self.where or None, down_s=round(time.monotonic() - since, 1))

    def wait_s(self) -> float:
        """How long a caller that just failed should wait before its next try."""
        return self._wait

    def due(self) -> bool:
        """Whether this caller should try now: always while it answers; during an outage, the first
        caller once each backoff step has passed, and no other until that try has failed or answered.

        The step is the process's, not each thread's: a worker with four threads, a scheduler and a
        heartbeat makes one try a step against a server that is down, not one each. (Each try
        claims the step: the others wait `wait_s()` and ask again.)"""
        if self._since is None:
            return True
        now = time.monotonic()
        with self._lock:
            if self._since is None:
                return True
            if now < self._next_try:
                return False
            self._next_try = now + self._wait  # claimed: the others wait for this try's outcome
            return True


def _short(exc: BaseException) -> str:
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first}"[:200]


QUEUE = Outage("queue")
STORE = Outage("store")
