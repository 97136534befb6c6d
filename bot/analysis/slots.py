"""Analysis slots shared fairly between installations, across every worker process.

Each analysis of PR content runs in a child process (bot/analysis/bounded.py) and costs a core for as long
as it runs. Without a common bound, one installation's on-demand commands or PR checks kept every
core busy and another installation's ordinary check waited for CPU behind them (8.5 to 74 s under
the /run-rocm attack of issue 23, against about 1 s alone). So every analysis first takes one of
CI_REGISTRAR_ANALYSIS_SLOTS slots (default: the machine's cores), and the slots are shared:

- A free slot goes to the waiting installation that holds the fewest slots (among equals, the one
  served longest ago); within one installation, first come first served.
- A holder that has run for its quantum (CI_REGISTRAR_ANALYSIS_QUANTUM_S, 0.25 s) while an
  installation holding fewer slots than its own waits yields: bot/analysis/bounded.py pauses its child
  (SIGSTOP, nothing lost), the slot goes to the waiter, and the paused job queues again behind
  its own installation's line. With one slot, two installations take turns a quantum each.
  An installation holding two or more slots than a waiting one yields one at once, quantum or
  not: that switch never swings back, so only the waiter's wait would buy nothing.
- Jobs of one installation never preempt each other (that would only add switches).

The state (who holds, who waits) is shared by every process: in Redis when the queue is on Redis
(one key, changed in WATCH/MULTI transactions), else in a small JSON file in the data directory
changed under an flock (the embedded default's processes share that directory). Every entry
carries a lease its job renews while it waits or runs; the entries of a process that died expire
and are dropped (CI_REGISTRAR_ANALYSIS_SLOT_LEASE_S, 30 s).

`Scheduler` holds the policy and takes an injected clock, so tests replay an exact sequence of
arrivals and ticks without sleeping.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import threading
import time
import uuid
from pathlib import Path

SLOTS_ENV = "CI_REGISTRAR_ANALYSIS_SLOTS"
QUANTUM_ENV = "CI_REGISTRAR_ANALYSIS_QUANTUM_S"
LEASE_ENV = "CI_REGISTRAR_ANALYSIS_SLOT_LEASE_S"
# A waiter waits at most about one quantum for a slot (plus the holder's next look, YIELD_CHECK_S
# in bot/analysis/bounded.py), and only the holder's next look when the holders' installation holds
# two slots more than the waiter's. An ordinary check's analysis takes a few hundredths of a second
# since the analysis server (issue 38), so a 1 s quantum was most of its time under a flood
# (0.2 s of 1.8 s spent analysing, 1.0 s waiting for a slot); a switch costs two signals.
DEFAULT_QUANTUM_S = 0.25
DEFAULT_LEASE_S = 30.0
WAIT_POLL_S = 0.05  # how often a waiting job looks again (a lease renewal too)
SERVED_MEMORY_S = 3600.0  # how long an installation's last turn is remembered (ties between waiters)
_NO_INSTALLATION = "-"  # a job without an installation (none reaches an analysis today) is its own tenant


def _positive(name: str, default: float, whole: bool = False) -> float:
    raw = os.environ.get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(raw) if whole else float(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r}: expected a {'whole ' if whole else ''}number") from None
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name}={raw!r}: must be a finite number above 0")
    return value


def slots_from_env() -> int:
    return int(_positive(SLOTS_ENV, os.cpu_count() or 1, whole=True))


def quantum_from_env() -> float:
    return _positive(QUANTUM_ENV, DEFAULT_QUANTUM_S)


def lease_from_env() -> float:
    return _positive(LEASE_ENV, DEFAULT_LEASE_S)


# -- where the state lives ------------------------------------------------------------------------
class MemoryState:
    """One process's state (tests, and a process with nothing to share it with)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._state: dict = {}

    def transact(self, change):
        with self._lock:
            state = json.loads(json.dumps(self._state))
            result = change(state)
            self._state = state
            return result


class FileState:
    """A JSON file changed under an flock: every process on this machine sees one state."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._threads = threading.Lock()  # flock is per open file: this process's threads take turns first

    def transact(self, change):
        with self._threads:
            fd = os.open(str(self.path) + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                try:
                    state = json.loads(self.path.read_text() or "{}")
                except (OSError, ValueError):
                    state = {}
                result = change(state)
                tmp = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
                tmp.write_text(json.dumps(state))
                os.replace(tmp, self.path)
                return result
            finally:
                os.close(fd)


class RedisState:
    """One Redis key changed in optimistic transactions (WATCH/MULTI): every process on every machine."""

    def __init__(self, client, key: str):
        self.client, self.key = client, key

    def transact(self, change):
        from redis.exceptions import WatchError

        while True:
            with self.client.pipeline() as pipe:
                try:
                    pipe.watch(self.key)
                    raw = pipe.get(self.key)
                    state = json.loads(raw) if raw else {}
                    result = change(state)
                    pipe.multi()
                    pipe.set(self.key, json.dumps(state))
                    pipe.execute()
                    return result
                except WatchError:
                    continue  # another process changed it meanwhile: read again


# -- the policy -----------------------------------------------------------------------------------
class Scheduler:
    """Who holds a slot, who waits, and who must yield (see the module docstring)."""

    def __init__(self, state, slots: int, quantum_s: float = DEFAULT_QUANTUM_S, lease_s: float = DEFAULT_LEASE_S,
                 clock=time.time):
        if slots < 1:
            raise ValueError("analysis slots must be at least 1")
        self.state, self.slots, self.quantum_s, self.lease_s, self.clock = state, slots, quantum_s, lease_s, clock

    # Each public call is one transaction on the shared state.
    def request(self, job: str, installation) -> bool:
        """Queue `job` for a slot (or keep its place); True once it holds one."""
        tenant = _tenant(installation)

        def change(s):
            now = self._tidy(s)
            if job in s["holders"]:
                s["holders"][job]["seen"] = now
            else:
                s["waiters"].setdefault(job, {"tenant": tenant, "since": now, "seq": _next_seq(s)})["seen"] = now
                self._grant(s, now)
            return job in s["holders"]

        return self.state.transact(change)

    def must_yield(self, job: str) -> bool:
        """Renew `job`'s hold; True when a poorer installation waits and either this job has run its
        quantum or its installation holds at least two slots more than the waiter's."""

        def change(s):
            now = self._tidy(s)
            me = s["holders"].get(job)
            if me is None:
                return True  # its lease ran out (a long stall): it waits like anyone else
            me["seen"] = now
            held = _held(s)
            mine = held.get(me["tenant"], 0)
            poorest = min((held.get(w["tenant"], 0) for w in s["waiters"].values() if w["tenant"] != me["tenant"]),
                          default=None)
            if poorest is None or poorest >= mine:
                return False
            # Two or more apart, the switch cannot come back (the waiter's installation still holds
            # no more than this one afterwards), so it needs no quantum: an ordinary check arriving
            # while a flood holds every slot waited a whole quantum for nothing (issue 38).
            return mine - poorest >= 2 or now - me["granted"] >= self.quantum_s

        return self.state.transact(change)

    def yield_slot(self, job: str, installation) -> None:
        """`job` gives its slot up and queues again, behind its own installation's waiting jobs."""
        tenant = _tenant(installation)

        def change(s):
            now = self._tidy(s)
            s["holders"].pop(job, None)
            s["waiters"][job] = {"tenant": tenant, "since": now, "seq": _next_seq(s), "seen": now}
            self._grant(s, now)

        self.state.transact(change)

    def release(self, job: str) -> None:
        def change(s):
            now = self._tidy(s)
            s["holders"].pop(job, None)
            s["waiters"].pop(job, None)
            self._grant(s, now)

        self.state.transact(change)

    def snapshot(self) -> dict:
        """{"holders": {job: tenant}, "waiters": [job, ...] in the order they would be served}."""

        def change(s):
            self._tidy(s)
            return {"holders": {j: h["tenant"] for j, h in s["holders"].items()},
                    "waiters": [j for j, _ in _queue_order(s)]}

        return self.state.transact(change)

    # -- inside a transaction --
    def _tidy(self, s) -> float:
        now = self.clock()
        s.setdefault("holders", {})
        s.setdefault("waiters", {})
        s.setdefault("seq", 0)
        for table in (s["holders"], s["waiters"]):
            for job in [j for j, e in table.items() if now - e["seen"] > self.lease_s]:
                del table[job]  # its process is gone (or stopped renewing): the slot is free again
        served = s.setdefault("served", {})
        for tenant in [t for t, at in served.items() if now - at > SERVED_MEMORY_S]:
            del served[tenant]  # long ago: as good as never
        return now

    def _grant(self, s, now: float) -> None:
        while len(s["holders"]) < self.slots and s["waiters"]:
            job, entry = _queue_order(s)[0]
            del s["waiters"][job]
            s["holders"][job] = {"tenant": entry["tenant"], "granted": now, "seen": now}
            s.setdefault("served", {})[entry["tenant"]] = now


def _tenant(installation) -> str:
    return _NO_INSTALLATION if installation is None else str(installation)


def _next_seq(s) -> int:
    s["seq"] = s.get("seq", 0) + 1
    return s["seq"]


def _held(s) -> dict:
    held: dict = {}
    for h in s["holders"].values():
        held[h["tenant"]] = held.get(h["tenant"], 0) + 1
    return held


def _queue_order(s) -> list:
    """Waiters in serving order: the installation holding fewest slots first, then the one served
    longest ago (never: first), then arrival."""
    held, served = _held(s), s.get("served", {})
    return sorted(s["waiters"].items(), key=lambda item: (held.get(item[1]["tenant"], 0),
                                                          served.get(item[1]["tenant"], float("-inf")), item[1]["seq"]))


# -- a job's view ---------------------------------------------------------------------------------
class Slot:
    """One analysis's place with the scheduler: wait for it, check whether to yield, give it back.

    The scheduler is a fairness device, not a safety one: when its state cannot be reached (Redis
    away), the analysis goes ahead unscheduled rather than failing the job; it is logged."""

    def __init__(self, scheduler: Scheduler, installation, sleep=time.sleep, log=None):
        self.scheduler = scheduler
        self.installation = installation
        self.job = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self._sleep = sleep
        self._log = log
        self.unscheduled = False
        self.yields = 0
        self.waited_s = 0.0  # before the first grant: where a job's time goes under a flood
        self.paused_s = 0.0  # yielded, waiting to get a slot back

    def _call(self, fn, *args, fallback=None):
        if self.unscheduled:
            return fallback
        try:
            return fn(*args)
        except Exception as exc:  # noqa: BLE001 - see the class docstring
            self.unscheduled = True
            if self._log is not None:
                self._log.warning("analysis slots unavailable, the analysis runs unscheduled", error=type(exc).__name__)
            return fallback

    def wait(self) -> None:
        """Block until this job holds a slot (renewing its place while it waits)."""
        while not self._call(self.scheduler.request, self.job, self.installation, fallback=True):
            self._sleep(WAIT_POLL_S)

    def must_yield(self) -> bool:
        return bool(self._call(self.scheduler.must_yield, self.job, fallback=False))

    def yield_and_wait(self) -> None:
        self.yields += 1
        started = time.monotonic()
        self._call(self.scheduler.yield_slot, self.job, self.installation)
        self.wait()
        self.paused_s += time.monotonic() - started

    def release(self) -> None:
        try:
            self.scheduler.release(self.job)
        except Exception:  # noqa: BLE001 - its lease frees the slot
            pass


_configured: Scheduler | None = None


def configure(settings, redis_client=None, queue_name: str = "ci-registrar") -> Scheduler:
    """This worker process's scheduler: shared through Redis when the queue is there, else the data directory."""
    global _configured
    if redis_client is not None:
        state = RedisState(redis_client, f"ci-registrar.analysis-slots.{queue_name}")
    else:
        state = FileState(Path(settings.data_dir) / "analysis-slots.json")
    _configured = Scheduler(state, slots_from_env(), quantum_from_env(), lease_from_env())
    return _configured


def current() -> Scheduler | None:
    """The scheduler analyses of this process take their slots from; None outside a worker (the CLI)."""
    return _configured


def disable() -> None:
    global _configured
    _configured = None


@contextlib.contextmanager
def held(installation, log=None):
    """A slot for one analysis, or nothing to hold when no scheduler is configured."""
    scheduler = current()
    if scheduler is None:
        yield None
        return
    slot = Slot(scheduler, installation, log=log)
    try:
        started = time.monotonic()
        slot.wait()
        slot.waited_s = time.monotonic() - started
        yield slot
    finally:
        slot.release()
