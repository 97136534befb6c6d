"""A Redis outage under a running App (no tests here): `ci-registrar serve` with REDIS_URL pointing
at a TCP proxy in front of the real Redis, the path cut for a while, deliveries before, during
and after, and /readyz asked all along.

Used by tests/app/test_adversarial.py (short outages, in CI) and bench/adversarial.py (30 s).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import requests

from tests.adversarial_support import Arena
from tests.tcp_proxy import TcpProxy
from tests.service_support import processed_in_log, wait_for
from tests.patience import PATIENCE


@dataclass
class OutageOutcome:
    kind: str
    outage_s: float
    accepted: list[str] = field(default_factory=list)  # delivery ids answered 202
    refused: dict = field(default_factory=dict)  # delivery id -> status, answered during the outage
    # delivery id -> status of GitHub's redelivery after the outage: 202, or 200 "duplicate" when the
    # refused write had reached Redis after all (a stalled connection delivers what it held)
    redelivered: dict = field(default_factory=dict)
    # each accepted or redelivered delivery id -> times the serve log says "delivery processed"
    processed: dict = field(default_factory=dict)
    states: dict = field(default_factory=dict)  # the same ids -> status in the store
    runs_per_head: dict = field(default_factory=dict)  # head sha -> check runs GitHub holds for it
    readyz: list = field(default_factory=list)  # (proxy mode at ask, at answer, status code, seconds)
    ready_again_s: float | None = None  # restore -> first 200 from /readyz
    drained_s: float | None = None  # restore -> every accepted delivery done
    left_in_queue: int = -1  # queued + in flight once drained
    worker_threads: int = 0

    def lies(self) -> list:
        """/readyz answers that were not the truth: 200 while the queue was cut, 503 while it was up
        (an answer that straddled a change of state may say either)."""
        return [(a, b, code) for a, b, code, _ in self.readyz
                if a == b and ((a != "up" and code != 503) or (a == "up" and code != 200))]


class RedisOutage:
    """The App on the simulator with its queue behind a proxy, ready to have Redis cut away."""

    def __init__(self, sim, tmp: Path, redis_url: str, queue_name: str, threads: int = 2, **env_extra):
        target = urlsplit(redis_url)
        self.proxy = TcpProxy(target.hostname or "127.0.0.1", target.port or 6379)
        self.redis_url = redis_url
        self.queue_name = queue_name
        path = target.path or "/0"
        self.arena = Arena(sim, tmp, REDIS_URL=self.proxy.url("redis", path), CI_REGISTRAR_QUEUE_NAME=queue_name,
                           CI_REGISTRAR_LOG_LEVEL="info", threads=threads, **env_extra)
        self.sim = sim
        self.service = self.arena.service
        self.threads = threads

    def close(self):
        self.arena.close()
        self.proxy.close()

    def _deliver_pr(self):
        pr = self.arena.ordinary_pr()
        d = self.arena.opened(self.arena.miles, pr)
        try:
            status = self.service.deliver(self.sim, d)
        except requests.RequestException:
            status = None
        return pr, d, status

    def run(self, kind: str = "drop", outage_s: float = 8.0) -> OutageOutcome:
        out = OutageOutcome(kind, outage_s, worker_threads=self.threads)
        heads: dict[str, str] = {}  # delivery id -> head sha
        refused: dict[str, tuple] = {}  # delivery id -> (pr, delivery), to be redelivered
        stop = threading.Event()

        def ask():
            while not stop.is_set():
                before, t0 = self.proxy.mode, time.monotonic()
                try:
                    code = requests.get(self.service.base + "/readyz", timeout=PATIENCE).status_code
                except requests.RequestException:
                    code = None
                out.readyz.append((before, self.proxy.mode, code, round(time.monotonic() - t0, 3)))
                stop.wait(0.2)

        def accept(pr, d, status):
            if status == 202:
                out.accepted.append(d.delivery_id)
                heads[d.delivery_id] = pr.head_sha
            return status

        # Warm: a check before the outage, and /readyz true from the start.
        assert accept(*self._deliver_pr()) == 202
        assert wait_for(lambda: self._done(out.accepted)), "the App did not start checking"
        asker = threading.Thread(target=ask, daemon=True)
        asker.start()
        try:
            # Jobs in flight when the path is cut: their ends (the ack) meet the outage.
            for _ in range(2):
                assert accept(*self._deliver_pr()) == 202
            getattr(self.proxy, kind)()
            cut = time.monotonic()
            # Deliveries during the outage: refused (503), never accepted to vanish.
            while time.monotonic() - cut < outage_s:
                pr, d, status = self._deliver_pr()
                if accept(pr, d, status) != 202:
                    out.refused[d.delivery_id] = status
                    refused[d.delivery_id] = (pr, d)
                time.sleep(min(2.0, max(0.0, outage_s - (time.monotonic() - cut))))
            self.proxy.restore()
            back = time.monotonic()
            if wait_for(lambda: any(b == "up" and code == 200 for _a, b, code, _ in out.readyz[-3:])):
                out.ready_again_s = round(time.monotonic() - back, 2)
            # After it: new deliveries, and GitHub's redelivery of what was refused meanwhile.
            for _ in range(3):
                accept(*self._deliver_pr())
            for pr, d in refused.values():
                try:
                    out.redelivered[d.delivery_id] = accept(pr, d, self.service.deliver(self.sim, d))
                except requests.RequestException:
                    out.redelivered[d.delivery_id] = None
                heads[d.delivery_id] = pr.head_sha
            tracked = list(heads)
            if wait_for(lambda: self._done(tracked), interval=0.2):
                out.drained_s = round(time.monotonic() - back, 2)
            wait_for(lambda: self._left() == 0, interval=0.2)  # late acks land
            time.sleep(1.0)  # a job run twice would show by now
        finally:
            stop.set()
            asker.join(PATIENCE)
        out.states = {i: self.service.deliveries().get(i) for i in heads}
        processed = self._processed()
        out.processed = {i: processed.get(i, 0) for i in heads}
        out.runs_per_head = {sha: len(self.arena.sim.check_runs(self.arena.miles, sha=sha)) for sha in heads.values()}
        out.left_in_queue = self._left()
        return out

    def _done(self, ids) -> bool:
        states = self.service.deliveries()
        return all(states.get(i) == "done" for i in ids)

    def _left(self) -> int:
        import redis

        client = redis.Redis.from_url(self.redis_url)
        try:
            return client.llen(f"huey.redis.{self.queue_name}") + client.zcard(f"huey.inflight.{self.queue_name}")
        finally:
            client.close()

    def _processed(self) -> dict[str, int]:
        return dict(Counter(processed_in_log(self.service.log_path)))
