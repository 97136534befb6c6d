"""The durable job queue between the webhook endpoint and the workers: huey, made at-least-once.

Why huey: one small, well-kept library with both backends this App needs behind one interface
(an embedded SQLite storage for the one-process default, a Redis storage for many processes on
many machines), a consumer with worker threads, delayed retries and a scheduler. Celery or RQ
would need a broker service even for the default; a hand-written queue would be one more thing
to get wrong.

What huey lacks is an acknowledgement: its dequeue deletes a message before the task runs, so a
worker killed mid-job loses the job. The storages below add a lease. Dequeue moves the message
into an in-flight set with a deadline; while the job runs, the worker's heartbeat pushes the
deadline forward; the message is deleted only once the job has finished (or been re-queued by
huey's own retry). Any worker re-queues messages whose deadline passed: their worker died. A job
can therefore run twice, never zero times, and every handler is idempotent.

The same storages make "first time this delivery id is seen" and "enqueue" one atomic step, so a
redelivery of an accepted delivery is acknowledged and not queued again.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import sqlite3
import threading
import time
from dataclasses import dataclass

from huey.api import Huey
from huey.consumer import Consumer, Worker, WorkerRecycle
from huey.signals import SIGNAL_INTERRUPTED
from huey.storage import RedisStorage, SqliteStorage

from bot.infra import outage
from bot.infra.logging import get_logger

log = get_logger("ci_registrar.queue")

DEFAULT_QUEUE_NAME = "ci-registrar"
# How long a delivery id is remembered: GitHub.com redelivers for 3 days, GHES for 7.
SEEN_TTL_S = 8 * 24 * 3600
DEFAULT_LEASE_S = 60.0
CHECKPOINT_EVERY_S = 1.0
WAL_REWIND_BYTES = 64 * 1024 * 1024
OUTAGE_PAUSE_S = 2.0  # a worker's longest wait between tries while its queue does not answer
SUPERVISE_EVERY_S = 1.0
REDIS_TIMEOUT_S = 2.0
# The intake's and /readyz's Redis deadline: GitHub is answered (503 when the queue does not answer)
# well within 1 s, so that its redelivery applies, where the workers' 2 s (and one retry) would
# keep the delivery waiting for up to 5 s.
INTAKE_TIMEOUT_S = 0.4
INTAKE_TIMEOUT_ENV = "CI_REGISTRAR_INTAKE_TIMEOUT_S"
BELL_WAIT_MAX_S = 0.5  # the longest blocking pop on the doorbell (the consumer's max_delay)


class _LeaseMixin:
    """What the job queue needs of a storage beyond huey's: claims, acks, leases, dedupe."""

    lease_s: float = DEFAULT_LEASE_S

    def claim(self):  # -> (claim_id, data) | None
        raise NotImplementedError

    def ack(self, claim_id) -> None:
        raise NotImplementedError

    def extend(self, claim_ids, until: float) -> None:
        raise NotImplementedError

    def requeue_expired(self, now: float | None = None) -> int:
        raise NotImplementedError

    def enqueue_unique(self, key: str, data: bytes) -> bool:
        """The intake's write: bounded by the intake's deadline (intake_timeout_s) on Redis."""
        raise NotImplementedError

    def enqueue_intake(self, data: bytes) -> None:
        """A job the intake queues (not a delivery): under the intake's deadline too."""
        raise NotImplementedError

    def forget(self, key: str) -> None:
        raise NotImplementedError

    def inflight_size(self) -> int:
        raise NotImplementedError

    def ping(self) -> None:
        """/readyz's question, under the intake's deadline on Redis."""
        raise NotImplementedError

    def shared_client(self):
        """The Redis client every worker process shares state through (bot/analysis/slots.py); None
        for the embedded queue, whose processes share the data directory instead."""
        return None


class LeasedSqliteStorage(_LeaseMixin, SqliteStorage):
    """huey's SQLite storage with an in-flight table and a seen-deliveries table."""

    table_inflight = (
        "create table if not exists inflight (id integer not null primary key, queue text not null, "
        "data blob not null, priority real not null default 0.0, lease_until real not null)"
    )
    index_inflight = "create index if not exists inflight_queue_lease on inflight (queue, lease_until)"
    table_seen = (
        "create table if not exists seen (queue text not null, key text not null, at real not null, "
        "primary key (queue, key)) without rowid"
    )
    ddl = SqliteStorage.ddl + [table_inflight, index_inflight, table_seen]

    def __init__(self, name="huey", filename="queue.db", lease_s=DEFAULT_LEASE_S, synchronous=None, **kwargs):
        synchronous = synchronous or os.environ.get("CI_REGISTRAR_QUEUE_SYNCHRONOUS") or "NORMAL"
        if synchronous.upper() not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise ValueError(f"CI_REGISTRAR_QUEUE_SYNCHRONOUS: {synchronous!r} is not OFF, NORMAL, FULL or EXTRA")
        self.lease_s = lease_s
        # NORMAL in WAL mode survives any process crash (kill -9 included); FULL also survives a
        # power cut at the price of one fsync per accepted delivery.
        self._synchronous = synchronous
        self._lock_fd: int | None = None
        self._lock_pid = 0
        self._flock_threads = threading.Lock()
        kwargs.setdefault("timeout", 30)
        super().__init__(name=name, filename=filename, **kwargs)

    def _create_connection(self):
        conn = super()._create_connection()
        conn.execute(f"pragma synchronous={self._synchronous}")
        # No checkpoint inside a commit: each is an fsync that some webhook request would wait for.
        # A background thread of one writing process does them instead (_checkpoints).
        conn.execute("pragma wal_autocheckpoint=0")
        return conn

    def _checkpoints(self):
        # One checkpointer among the processes writing this file (gunicorn workers, the worker):
        # whichever holds this POSIX lock, for as long as it lives. The kernel drops it with its
        # process (and a forked child never inherits it); another process then takes over.
        fd = os.open(self.filename + ".checkpointer", os.O_RDWR | os.O_CREAT, 0o600)
        conn = sqlite3.connect(self.filename, timeout=self._timeout, check_same_thread=False)
        try:
            page_size = conn.execute("pragma page_size").fetchone()[0]
            while True:
                time.sleep(CHECKPOINT_EVERY_S)
                try:
                    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    continue  # another process checkpoints
                try:
                    # PASSIVE: copies what it can without waiting for (or holding up) any writer.
                    _busy, frames, _copied = conn.execute("pragma wal_checkpoint(PASSIVE)").fetchone()
                    # A checkpoint that always lags behind a busy writer never lets the WAL start
                    # over: under sustained load it grows without end. Past WAL_REWIND_BYTES, the
                    # frames written meanwhile are copied with writers held off (tens of ms: two
                    # fsyncs), and the next writer rewinds the WAL and reuses its pages. At an
                    # ordinary pace the PASSIVE one catches up and the WAL rewinds by itself.
                    if frames * page_size > WAL_REWIND_BYTES:
                        with self._write_lock():
                            conn.execute("pragma wal_checkpoint(PASSIVE)")
                except sqlite3.Error:
                    pass
        finally:
            conn.close()
            os.close(fd)

    @contextlib.contextmanager
    def db(self, commit=False, close=False):
        # Writers in different processes (gunicorn workers, a worker process) queue on an flock:
        # the next one wakes the moment the lock is free, where SQLite's busy handler would sleep
        # and poll (up to 100 ms a try), which is what made ingress slow under load.
        if not commit:
            with super().db(commit=False, close=close) as curs:
                yield curs
            return
        with self._write_lock():
            with super().db(commit=True, close=close) as curs:
                yield curs

    @contextlib.contextmanager
    def _write_lock(self):
        with self._flock_threads:  # flock is per open file: threads of one process take turns first
            if self._lock_fd is None or self._lock_pid != os.getpid():
                # First write of this process (gunicorn forks after the storage may exist).
                self._lock_fd = os.open(self.filename + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
                self._lock_pid = os.getpid()
                threading.Thread(target=self._checkpoints, name="queue-checkpoint", daemon=True).start()
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def claim(self):
        if not self.sql("select 1 from task where queue = ? limit 1", (self.name,), results=True):
            return None
        with self.db(commit=True) as curs:
            curs.execute(
                "select id, data, priority from task where queue = ? order by priority desc, id limit 1",
                (self.name,),
            )
            row = curs.fetchone()
            if row is None:
                return None
            tid, data, priority = row
            curs.execute("delete from task where id = ?", (tid,))
            curs.execute(
                "insert into inflight (queue, data, priority, lease_until) values (?, ?, ?, ?)",
                (self.name, data, priority, time.time() + self.lease_s),
            )
            return curs.lastrowid, bytes(data)

    def dequeue(self):
        claimed = self.claim()
        return None if claimed is None else claimed[1]

    def ack(self, claim_id):
        self.sql("delete from inflight where id = ?", (claim_id,), commit=True)

    def extend(self, claim_ids, until):
        ids = list(claim_ids)
        if ids:
            marks = ",".join("?" * len(ids))
            self.sql(f"update inflight set lease_until = ? where id in ({marks})", (until, *ids), commit=True)

    def requeue_expired(self, now=None):
        now = time.time() if now is None else now
        with self.db(commit=True) as curs:
            curs.execute(
                "select id, data, priority from inflight where queue = ? and lease_until < ? order by id",
                (self.name, now),
            )
            rows = curs.fetchall()
            for rid, data, priority in rows:
                # Back at the head of the queue (highest priority): it has waited long enough.
                curs.execute(
                    "insert into task (queue, data, priority) values (?, ?, ?)", (self.name, data, priority + 1)
                )
                curs.execute("delete from inflight where id = ?", (rid,))
            curs.execute("delete from seen where queue = ? and at < ?", (self.name, now - SEEN_TTL_S))
            return len(rows)

    def promote_due(self, ts) -> int:
        """Move due delayed jobs (retries) into the queue in one transaction: none lost in between."""
        with self.db(commit=True) as curs:
            curs.execute("select id, data from schedule where queue = ? and timestamp <= ? order by timestamp, id",
                         (self.name, ts.timestamp()))
            rows = curs.fetchall()
            for sid, data in rows:
                curs.execute("insert into task (queue, data, priority) values (?, ?, 0)", (self.name, data))
                curs.execute("delete from schedule where id = ?", (sid,))
            return len(rows)

    def enqueue_unique(self, key, data):
        with self.db(commit=True) as curs:
            curs.execute("insert or ignore into seen (queue, key, at) values (?, ?, ?)", (self.name, key, time.time()))
            if curs.rowcount == 0:
                return False
            curs.execute("insert into task (queue, data, priority) values (?, ?, 0)", (self.name, self.to_blob(data)))
            return True

    def enqueue_intake(self, data):
        self.enqueue(data)

    def forget(self, key):
        self.sql("delete from seen where queue = ? and key = ?", (self.name, key), commit=True)

    def inflight_size(self):
        return self.sql("select count(*) from inflight where queue = ?", (self.name,), results=True)[0][0]

    def ping(self):
        self.sql("select 1", results=True)


_CLAIM_LUA = """
local data = redis.call('RPOP', KEYS[1])
if not data then return false end
redis.call('ZADD', KEYS[2], ARGV[1], data)
return data
"""

# KEYS[3] of the scripts below is the doorbell: a short list idle workers wait on with BLPOP, one
# token per job made ready, so a worker in any process starts at once instead of at its next poll.
_RING = "redis.call('LPUSH', KEYS[3], '1') redis.call('LTRIM', KEYS[3], 0, 63)"

_REQUEUE_LUA = """
local res = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
for _, data in ipairs(res) do
  redis.call('ZREM', KEYS[2], data)
  redis.call('RPUSH', KEYS[1], data)
end
if #res > 0 then """ + _RING + """ end
return #res
"""

_PROMOTE_LUA = """
local res = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
for _, data in ipairs(res) do
  redis.call('ZREM', KEYS[1], data)
  redis.call('LPUSH', KEYS[2], data)
end
if #res > 0 then """ + _RING + """ end
return #res
"""

_ENQUEUE_UNIQUE_LUA = """
if redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[2]) then
  redis.call('LPUSH', KEYS[2], ARGV[1])
  """ + _RING + """
  return 1
end
return 0
"""


def redis_timeout_s() -> float:
    """How long one Redis command may take before it counts as an outage."""
    return float(os.environ.get("CI_REGISTRAR_REDIS_TIMEOUT_S") or REDIS_TIMEOUT_S)


def redis_pool(url: str):
    """A connection pool whose every connect and command ends within redis_timeout_s.

    redis-py waits for ever by default: behind a network partition (a connection that stays open
    and carries nothing), a worker's claim would hang. One retry on a fresh connection covers a
    Redis restart. The intake and /readyz have a shorter deadline of their own (intake_pool).
    """
    from redis import ConnectionPool
    from redis.backoff import NoBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError, TimeoutError as RedisTimeoutError
    from redis.retry import Retry

    timeout = redis_timeout_s()
    return ConnectionPool.from_url(
        url, socket_timeout=timeout + BELL_WAIT_MAX_S, socket_connect_timeout=timeout, socket_keepalive=True,
        health_check_interval=30, retry=Retry(NoBackoff(), 1), retry_on_error=[RedisConnectionError, RedisTimeoutError])


def intake_timeout_s() -> float:
    """How long the intake's queue write or /readyz's ping may take before it is answered 503."""
    import math

    raw = os.environ.get(INTAKE_TIMEOUT_ENV)
    if raw in (None, ""):
        return INTAKE_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{INTAKE_TIMEOUT_ENV}={raw!r}: expected a number of seconds") from None
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{INTAKE_TIMEOUT_ENV}={raw!r}: must be a finite number of seconds above 0")
    return value


def intake_pool(url: str):
    """The intake's own connections: every connect and command ends within intake_timeout_s.

    Separate from the workers' pool (redis_pool): a worker may wait seconds for its queue, a
    webhook delivery may not. A connection the server reset is tried once more on a fresh one (a
    Redis restart answers at once either way); a timeout is not retried, so a stalled queue costs
    one deadline, then the answer is 503.
    """
    from redis import ConnectionPool
    from redis.backoff import NoBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.retry import Retry

    timeout = intake_timeout_s()
    return ConnectionPool.from_url(
        url, socket_timeout=timeout, socket_connect_timeout=timeout, socket_keepalive=True,
        retry=Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)))


class LeasedRedisStorage(_LeaseMixin, RedisStorage):
    """huey's Redis storage with an in-flight sorted set (score: lease deadline) and seen keys.

    A message's bytes are its claim id: each holds a unique task id, so no two are equal.
    """

    def __init__(self, name="huey", lease_s=DEFAULT_LEASE_S, url=None, **kwargs):
        self.lease_s = lease_s
        kwargs.setdefault("clean_name", False)
        kwargs["blocking"] = False  # a Lua claim cannot block; the consumer polls instead
        if url:
            kwargs["connection_pool"] = redis_pool(url)
        super().__init__(name=name, **kwargs)
        # The intake's writes and /readyz's ping: a short deadline of their own (intake_pool).
        self.intake_conn = self.redis_client(connection_pool=intake_pool(url)) if url else self.conn
        self.inflight_key = f"huey.inflight.{self.name}"
        self.seen_prefix = f"huey.seen.{self.name}."
        self.bell_key = f"huey.bell.{self.name}"
        self._claim = self.conn.register_script(_CLAIM_LUA)
        self._requeue = self.conn.register_script(_REQUEUE_LUA)
        self._enqueue_unique = self.conn.register_script(_ENQUEUE_UNIQUE_LUA)
        self._promote = self.conn.register_script(_PROMOTE_LUA)

    def promote_due(self, ts) -> int:
        """Move due delayed jobs (retries) into the queue atomically: none lost in between."""
        return int(self._promote(keys=[self.schedule_key, self.queue_key, self.bell_key], args=[self.convert_ts(ts)]))

    def claim(self):
        data = self._claim(keys=[self.queue_key, self.inflight_key], args=[time.time() + self.lease_s])
        return None if data is None else (data, data)

    def dequeue(self):
        claimed = self.claim()
        return None if claimed is None else claimed[1]

    def ack(self, claim_id):
        self.conn.zrem(self.inflight_key, claim_id)

    def extend(self, claim_ids, until):
        ids = list(claim_ids)
        if ids:
            self.conn.zadd(self.inflight_key, {cid: until for cid in ids}, xx=True)

    def requeue_expired(self, now=None):
        now = time.time() if now is None else now
        return int(self._requeue(keys=[self.queue_key, self.inflight_key, self.bell_key], args=[now]))

    def enqueue_unique(self, key, data):
        return bool(self._enqueue_unique(keys=[self.seen_prefix + key, self.queue_key, self.bell_key],
                                         args=[data, SEEN_TTL_S], client=self.intake_conn))

    def enqueue_intake(self, data):
        pipe = self.intake_conn.pipeline(transaction=True)
        pipe.lpush(self.queue_key, data)
        pipe.lpush(self.bell_key, "1")
        pipe.execute()

    def enqueue(self, data, priority=None):
        super().enqueue(data, priority)
        self.conn.lpush(self.bell_key, "1")  # a job queued another way (a task's own enqueue)

    def wait_for_work(self, timeout: float) -> bool:
        """Block until a job is made ready (a blocking pop on the doorbell) or `timeout` passes."""
        return self.conn.blpop([self.bell_key], timeout=min(max(timeout, 0.01), BELL_WAIT_MAX_S)) is not None

    def forget(self, key):
        self.conn.delete(self.seen_prefix + key)

    def inflight_size(self):
        return self.conn.zcard(self.inflight_key)

    def ping(self):
        self.intake_conn.ping()

    def shared_client(self):
        return self.conn

    def flush_queue(self):
        super().flush_queue()
        self.conn.delete(self.inflight_key, self.bell_key)


class _WakingWorker(Worker):
    """A huey worker that a new job wakes at once, instead of at its next poll: on Redis, by a
    blocking pop on the queue's doorbell (any process's enqueue rings it); on the embedded queue,
    by an enqueue in its own process.

    It also outlives its queue: huey ends a worker on any exception its loop lets through, and
    its own loop lets through one raised while it waits after a failed read (the doorbell's pop
    on an unreachable Redis). Here no queue error ends the thread: it waits (up to
    OUTAGE_PAUSE_S between tries) and reads again once the queue answers. huey logs a traceback
    for every failed read (93 in 10 s for four threads on a Redis that is down); here an
    unreachable queue is told once per process, when it goes and when it comes back
    (bot/infra/outage.py), and any other error of a read keeps its traceback.
    """

    def loop(self, now=None):
        # huey's Worker.loop, with the failed read told by the outage tracker; a job this process
        # parked (JobQueue.park) whose installation has a thread free again comes first. While the
        # queue is down, one reader of this process tries it per backoff step; the others wait.
        if not outage.QUEUE.due():
            self._pause()
            return
        try:
            task = self.huey.take_parked() or self.huey.dequeue()
        except Exception as exc:
            if not outage.QUEUE.failed(exc):
                self._logger.exception("Error reading from queue")
            self._pause()
            return
        outage.QUEUE.answered()
        if task is None:
            try:
                self.sleep()
            except WorkerRecycle:
                raise
            except Exception as exc:
                if not outage.QUEUE.failed(exc):
                    self._logger.warning("waiting for work failed", exc_info=True)
                self._pause()
            return
        self.delay = self.default_delay
        self.task_count += 1
        try:
            self.huey.execute(task, now)
        except Exception:
            self._logger.exception("Unhandled error during execution of task %s.", task.id)
        if self.max_tasks and self.task_count >= self.max_tasks:
            self._logger.info("Worker reached max tasks (%d), exiting.", self.max_tasks)
            raise WorkerRecycle()

    def sleep(self):
        if self.delay > self.max_delay:
            self.delay = self.max_delay
        wait_for_work = getattr(self.huey.storage, "wait_for_work", None)
        if wait_for_work is not None:
            try:
                woken = wait_for_work(self.delay)
            except Exception as exc:
                if not outage.QUEUE.failed(exc):
                    self._logger.warning("waiting for work failed", exc_info=True)
                self._pause()
                return
            if woken:
                self.delay = self.default_delay
                return
            self.delay *= self.backoff
            return
        if self.huey.arrived.wait(self.delay):
            self.huey.arrived.clear()
            self.delay = self.default_delay
            return
        self.delay *= self.backoff

    def _pause(self):
        """After a queue error: a short wait (the stop flag still ends it), longer while it lasts."""
        self.stop_flag.wait(min(OUTAGE_PAUSE_S, max(self.delay, self.default_delay, outage.QUEUE.wait_s())))
        self.delay = min(OUTAGE_PAUSE_S, max(self.delay, self.default_delay) * 2)


class _WakingConsumer(Consumer):
    """huey's consumer with workers that outlive queue outages, and a supervisor for `start()`.

    `run()` (the worker process) replaces a dead worker thread at its health check; `start()`
    (`serve`, whose main thread serves HTTP) has no such loop, so `supervise` gives it one.
    """

    worker_class = _WakingWorker

    def stop(self, graceful=False):
        super().stop(graceful)
        self.huey.hand_back_parked()  # the jobs this process parked go back to the queue's head

    def workers_alive(self) -> int:
        return sum(1 for _worker, thread in self.worker_threads if thread.is_alive())

    def supervise(self, every_s: float = SUPERVISE_EVERY_S) -> threading.Thread:
        """Replace dead workers (and the scheduler) every `every_s` until the consumer stops."""

        def loop():
            while not self.stop_flag.wait(every_s):
                try:
                    self.check_worker_health()
                except Exception:  # noqa: BLE001 - the next round tries again
                    self._logger.exception("worker health check failed")

        thread = threading.Thread(target=loop, name="queue-supervisor", daemon=True)
        thread.start()
        return thread


class JobQueue(Huey):
    """A huey instance whose consumer acknowledges a message only after its task has finished."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Set by every enqueue of this process: `serve` answers a webhook and its own worker
        # threads start on it at once (other processes still find it at their next poll).
        self.arrived = threading.Event()
        self._held: dict[object, float] = {}  # claim id -> when claimed, for the heartbeat
        # Parked jobs (claimed, leases renewed) whose installation had its share of threads busy,
        # in claim order, with that installation; `parked_ready(installation)` says when one may run.
        self._lot: list[tuple[object, object]] = []
        self.lot_size = 0  # the consumer's thread count sets it (set_lot_size); 0: nothing is parked
        self.parked_ready = lambda installation: True
        self._running = threading.local()  # the job this thread executes, for park()
        self._held_lock = threading.Lock()
        self._unacked: set = set()  # finished jobs whose ack the queue did not take yet
        self._heartbeat: threading.Thread | None = None
        self._next_reap = 0.0
        self.owner = f"{socket.gethostname()}:{os.getpid()}"

    # -- consumer side ---------------------------------------------------------------------------
    def create_consumer(self, **options):
        return _WakingConsumer(self, **options)

    def enqueue(self, task):
        result = super().enqueue(task)
        self.arrived.set()
        return result

    def dequeue(self):
        now = time.time()
        if now >= self._next_reap:
            # Any worker may re-queue a dead worker's jobs; a quarter lease keeps that prompt.
            self._next_reap = now + max(0.5, self.storage.lease_s / 4)
            self.storage.requeue_expired(now)
        claimed = self.storage.claim()
        if claimed is None:
            return None
        claim_id, data = claimed
        try:
            task = self.deserialize_task(data)
        except Exception:
            self.storage.ack(claim_id)  # an unreadable message would otherwise come back forever
            raise
        task._claim_id = claim_id
        with self._held_lock:
            self._held[claim_id] = now
        self._ensure_heartbeat()
        return task

    def execute(self, task, timestamp=None):
        claim_id = getattr(task, "_claim_id", None)
        finished = False
        task._parked = False
        self._running.task = task
        try:
            result = super().execute(task, timestamp)
            # huey swallows KeyboardInterrupt ("did not finish"): such a job must come back.
            finished = not getattr(task, "_interrupted", False)
            return result
        finally:
            self._running.task = None
            # A parked job stays claimed: it runs from the lot, its lease renewed meanwhile.
            if claim_id is not None and not task._parked:
                acked = not finished
                if finished:
                    try:
                        self.storage.ack(claim_id)
                        acked = True
                    except Exception as exc:
                        # The queue went away as the job ended. The heartbeat keeps its lease
                        # and acks it once the queue answers: a finished job is not run again.
                        if not outage.QUEUE.failed(exc):
                            log.warning("queue write failed at a job's end, its ack will follow", error=type(exc).__name__)
                        with self._held_lock:
                            self._unacked.add(claim_id)
                        self._ensure_heartbeat()
                if acked:
                    with self._held_lock:
                        self._held.pop(claim_id, None)

    # -- the lot: jobs that stepped back for their installation's share ---------------------------
    def set_lot_size(self, threads: int) -> None:
        self.lot_size = 2 * threads

    def park(self, installation) -> bool:
        """Called by the running job whose installation has its share of threads busy (bot/worker/
        fairness.py): keep it here, claimed, until a thread of this process is free for it, and
        let this thread go on to the next job (another installation's, maybe). False when the lot
        is full (or off): the job steps back through the schedule instead.

        Why not always the schedule: a thread that steps back every job of one busy installation
        moves the whole queue into the schedule within milliseconds, and the threads running
        that installation's jobs then found the queue empty until the scheduler brought them
        back (0.5 to 2.5 s later), idle for 60 % of a 200-PR burst from one installation
        (issue 38). From the lot they go on at once, in the order they came. The lot is bounded
        (twice the threads), so a process never claims more than it will run soon; a parked
        job's lease is renewed by the heartbeat, and one left when the process dies comes back
        to the queue when its lease runs out, like any claimed job."""
        task = getattr(self._running, "task", None)
        if task is None or getattr(task, "_claim_id", None) is None:
            return False
        with self._held_lock:
            if len(self._lot) >= self.lot_size:
                return False
            self._lot.append((task, installation))
        task._parked = True
        return True

    def take_parked(self):
        """The oldest parked job whose installation may run one more job now, or None."""
        with self._held_lock:
            for i, (task, installation) in enumerate(self._lot):
                if self.parked_ready(installation):
                    del self._lot[i]
                    return task
        return None

    def hand_back_parked(self) -> None:
        """The process stops: its parked jobs go back to the queue now (their leases end, and the
        expired-lease requeue puts them at the head) rather than when their leases run out."""
        with self._held_lock:
            lot, self._lot = self._lot, []
            claims = [task._claim_id for task, _ in lot]
            for claim_id in claims:
                self._held.pop(claim_id, None)
        if not claims:
            return
        try:
            self.storage.extend(claims, 0.0)
            self.storage.requeue_expired()
        except Exception as exc:  # noqa: BLE001 - their leases still run out: they come back then
            if not outage.QUEUE.failed(exc):
                log.warning("parked jobs not handed back, they return when their leases end",
                            jobs=len(claims), error=type(exc).__name__)

    def parked(self) -> int:
        with self._held_lock:
            return len(self._lot)

    def _emit(self, signal, task, *args, **kwargs):
        if signal == SIGNAL_INTERRUPTED:
            task._interrupted = True
        return super()._emit(signal, task, *args, **kwargs)

    def read_schedule(self, timestamp=None):
        # huey's scheduler pops due jobs and then enqueues them: a crash in between would lose
        # them. Here they move inside the storage in one step, and nothing is left to enqueue.
        # While the queue is down the scheduler tries at the outage's backoff, and says nothing.
        if not outage.QUEUE.due():
            return []
        try:
            self.storage.promote_due(timestamp or self._get_timestamp())
        except Exception as exc:
            if not outage.QUEUE.failed(exc):
                raise
            return []
        outage.QUEUE.answered()
        return []

    def _ensure_heartbeat(self):
        if self._heartbeat is not None and self._heartbeat.is_alive():
            return
        self._heartbeat = threading.Thread(target=self._beat, name="queue-heartbeat", daemon=True)
        self._heartbeat.start()

    def _beat(self):
        while True:
            with self._held_lock:
                unacked = list(self._unacked)
            time.sleep(min(1.0, self.storage.lease_s / 3) if unacked else max(0.2, self.storage.lease_s / 3))
            with self._held_lock:
                idle = not self._unacked and not self._held
            if idle or not outage.QUEUE.due():  # nothing to write, or down and another reader tries this step
                continue
            for claim_id in unacked:
                try:
                    self.storage.ack(claim_id)
                except Exception as exc:  # still unreachable: its lease is extended below, tried again next beat
                    outage.QUEUE.failed(exc)
                    continue
                with self._held_lock:
                    self._unacked.discard(claim_id)
                    self._held.pop(claim_id, None)
            with self._held_lock:
                held = list(self._held)
            if held:
                try:
                    self.storage.extend(held, time.time() + self.storage.lease_s)
                except Exception as exc:  # the next beat tries again; a missed one only risks a re-run
                    outage.QUEUE.failed(exc)
                else:
                    outage.QUEUE.answered()

    # -- producer side ---------------------------------------------------------------------------
    def enqueue_delivery(self, delivery_id: str, event: str, body: bytes) -> bool:
        """Queue one webhook delivery; False when this delivery id was accepted before."""
        # The raw body, uncompressed: zlib (even level 1) cost more CPU than the smaller write saved.
        task = self.process_delivery.s(delivery_id, event, body)
        fresh = self.storage.enqueue_unique(delivery_id, self.serialize_task(task))
        if fresh:
            self.arrived.set()
        return fresh

    def record_refusal(self, delivery_id: str, event: str, reason: str) -> None:
        """Queue the store record of a delivery the intake refused for its payload (no work runs)."""
        self.storage.enqueue_intake(self.serialize_task(self.record_refused.s(delivery_id, event, reason)))
        self.arrived.set()

    def forget_delivery(self, delivery_id: str) -> None:
        """Let a redelivery of this id run again (after its job failed for good)."""
        self.storage.forget(delivery_id)

    def depth(self) -> int:
        return self.storage.queue_size()

    def inflight(self) -> int:
        return self.storage.inflight_size()


@dataclass(frozen=True)
class QueueConfig:
    name: str
    redis_url: str | None
    sqlite_path: str
    lease_s: float


def queue_config(settings) -> QueueConfig:
    return QueueConfig(
        name=os.environ.get("CI_REGISTRAR_QUEUE_NAME") or DEFAULT_QUEUE_NAME,
        redis_url=settings.redis_url,
        sqlite_path=str(settings.data_dir / "queue.db"),
        lease_s=float(os.environ.get("CI_REGISTRAR_JOB_LEASE_S") or DEFAULT_LEASE_S),
    )


def open_queue(settings, *, config: QueueConfig | None = None) -> JobQueue:
    """The queue for these settings: Redis when REDIS_URL is set, else SQLite in the data directory."""
    import bot.worker.tasks

    if config is None:
        config = queue_config(settings)
    outage.QUEUE.describe(config.redis_url or f"sqlite:///{config.sqlite_path}")

    if config.redis_url:
        queue = JobQueue(
            config.name, results=False, storage_class=LeasedRedisStorage, url=config.redis_url, lease_s=config.lease_s
        )
    else:
        from bot.store.db import secure_file

        secure_file(config.sqlite_path)  # 0600 in a 0700 directory: deliveries hold signed payloads
        queue = JobQueue(
            config.name, results=False, storage_class=LeasedSqliteStorage, filename=config.sqlite_path,
            lease_s=config.lease_s,
        )
    bot.worker.tasks.register(queue, settings)
    return queue
