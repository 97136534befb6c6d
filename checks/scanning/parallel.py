"""One function over many items on every core: forked workers, results back through pipes.

The first check of a checkout parses every discovered file (`ast.parse` is most of its time, and
the target's own collector pays the same): on a machine with more than one core the parse is split
across processes. Workers are forked, not spawned: each starts with the parent's memory (the file
contents already read, the contract), imports nothing and is given nothing; only results travel,
pickled. A worker that fails, dies or returns something unreadable costs only time: the parent
computes that part itself. Where fork is not the platform's safe default (Linux is the only one
used here) everything runs in the calling process.

Only the command line asks for workers (`check_tree(..., workers=N)`); the App's analysis runs in
its own memory- and time-capped child process and stays in one process.
"""

from __future__ import annotations

import os
import sys
from typing import Callable, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")

# Fewer items than this per worker are not worth a fork (a fork and a pickle cost about a file's parse).
MIN_PER_WORKER = 24


def available_workers() -> int:
    """The idle cores this process may run on: its affinity (not the machine's count) less what
    keeps the others busy, as `make -l` does. A busy machine gains nothing from a second process
    (its share of the processors does not grow), and pays for the fork and the pickling.

    Busy is the smaller of two readings: the one-minute load average, and the threads runnable
    right now (this one left out). The average trails by a minute: a CI job or a benchmark that
    runs one process after another reads as one busy core for a minute after the last one ended,
    and a check started then would leave a free core idle. The runnable count alone would be one
    instant's sample; together, a core counts as busy only if both say so."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        busy = os.getloadavg()[0]
    except (AttributeError, OSError):
        busy = 0.0
    others = runnable_now()
    if others is not None:
        busy = min(busy, others)
    return max(1, min(cores, cores - int(busy)))


def runnable_now() -> int | None:
    """Threads runnable on the machine at this instant, this one left out (Linux: the fourth
    field of /proc/loadavg, `running/total`, counts the reader itself); None where unknown."""
    try:
        with open("/proc/loadavg", encoding="ascii") as f:
            running = int(f.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return None
    return max(0, running - 1)


def can_fork() -> bool:
    return sys.platform == "linux" and hasattr(os, "fork")


def map_forked(fn: Callable[[T], R], items: Sequence[T], workers: int) -> list[R]:
    """[fn(item) for item in items], the items split in `workers` contiguous parts: the first in
    this process, each other in a forked worker. `fn` must return picklable values and leave
    nothing behind that the caller needs (a worker's side effects are lost)."""
    workers = min(workers, len(items) // MIN_PER_WORKER) if can_fork() else 1
    if workers <= 1:
        return [fn(item) for item in items]
    import pickle

    size = -(-len(items) // workers)
    parts = [items[i : i + size] for i in range(0, len(items), size)]
    children = []
    for part in parts[1:]:
        read_end, write_end = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(read_end)
            os.close(write_end)
            children.append((None, None, part))
            continue
        if pid == 0:  # the worker: compute, write, leave without running the parent's exit handlers
            status = 1
            try:
                os.close(read_end)
                data = pickle.dumps([fn(item) for item in part], protocol=pickle.HIGHEST_PROTOCOL)
                with os.fdopen(write_end, "wb") as out:
                    out.write(data)
                status = 0
            finally:
                os._exit(status)
        os.close(write_end)
        children.append((pid, read_end, part))
    out = [fn(item) for item in parts[0]]
    for pid, read_end, part in children:
        results = None
        if pid is not None:
            with os.fdopen(read_end, "rb") as source:
                data = source.read()
            _, status = os.waitpid(pid, 0)
            if status == 0:
                try:
                    results = pickle.loads(data)
                except Exception:  # noqa: BLE001 - unreadable: computed here instead
                    results = None
            if not isinstance(results, list) or len(results) != len(part):
                results = None
        out.extend(results if results is not None else [fn(item) for item in part])
    return out
