"""Fair shares of a worker process between installations: one installation's jobs never hold every
worker thread, so an ordinary pull request elsewhere starts within seconds while another
repository's expensive checks run to their limits (bot/analysis/bounded.py bounds each one).

Per process: each worker process keeps its own count (a scale-out deployment has several, each
fair on its own). A job over its installation's share steps back before it starts, without
spending an attempt: into the queue's lot, where the next thread free for its installation takes
it (bot.worker.queue.JobQueue.park), or, when the lot is full, through the schedule, and it comes
again a moment later.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from contextlib import contextmanager


def share_for(threads: int) -> int:
    """Jobs one installation may run at once: CI_REGISTRAR_INSTALLATION_JOBS, else all threads but one."""
    configured = os.environ.get("CI_REGISTRAR_INSTALLATION_JOBS")
    if configured:
        value = int(configured)
        if value < 1:
            raise ValueError("CI_REGISTRAR_INSTALLATION_JOBS must be at least 1")
        return value
    return max(1, threads - 1)


class Shares:
    def __init__(self, limit: int | None = None):
        self.limit = limit  # None: no limit (a process that is not a worker pool)
        self._running: Counter = Counter()
        self._lock = threading.Lock()

    def running(self, installation_id) -> int:
        with self._lock:
            return self._running[installation_id]

    def has_room(self, installation_id) -> bool:
        """Whether one more job of this installation may start now."""
        with self._lock:
            return self._has_room(installation_id)

    def _has_room(self, installation_id) -> bool:  # under self._lock
        return self.limit is None or installation_id is None or self._running[installation_id] < self.limit

    @contextmanager
    def slot(self, installation_id):
        """Yields True with a slot held, or False when the installation has its share running."""
        with self._lock:
            free = self._has_room(installation_id)
            if free:
                self._running[installation_id] += 1
        try:
            yield free
        finally:
            if free:
                with self._lock:
                    self._running[installation_id] -= 1
                    if self._running[installation_id] <= 0:
                        del self._running[installation_id]
