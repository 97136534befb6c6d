"""What the service benchmarks share (bench/burst.py, bench/pr_check.py): the GitHub simulator with a
miles-shaped repository, `ci-registrar serve` as a real process against it, the CPU of that
process tree (the App's own: the simulator lives in the benchmark's process), the moment each
check run completes, and the machine's load."""

from __future__ import annotations

import os
import random
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _children(pid: int) -> list[int]:
    out = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return out


def tree_cpu_s(pid: int) -> float:
    """User + system seconds of `pid` and every descendant alive now, each with its reaped
    children's (cutime, cstime): a process that ended and was waited for is counted in its parent."""
    total, todo = 0, [pid]
    while todo:
        each = todo.pop()
        try:
            with open(f"/proc/{each}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
        todo += _children(each)
    return total / CLOCK_TICKS


def tree_rss_mb(pid: int) -> dict[int, float]:
    out, todo = {}, [pid]
    while todo:
        each = todo.pop()
        try:
            with open(f"/proc/{each}/statm") as f:
                out[each] = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
        except OSError:
            continue
        todo += _children(each)
    return out


class Completions:
    """When each check run (by head SHA) was first seen completed: the simulator's state, polled."""

    def __init__(self, sim, name: str, every_s: float = 0.02):
        self.sim, self.name, self.every_s = sim, name, every_s
        self.done: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            now = time.monotonic()
            with self.sim.lock:
                for run in self.sim._check_runs.values():
                    if run["name"] == self.name and run["status"] == "completed" and run["head_sha"] not in self.done:
                        self.done[run["head_sha"]] = now
            self._stop.wait(self.every_s)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


class MilesWorld:
    """A simulator, the miles-shaped repository, sglang's nightly workflow (the default
    configuration's external consumer) and the App installed on both."""

    def __init__(self, files: int = 1686, tests: int = 382, repo: str = "radixark/miles"):
        from tests.fixtures.miles import SGLANG_NIGHTLY, SGLANG_NIGHTLY_PATH
        from tests.fixtures.miles_shape import miles_shaped
        from tests.simulator import GitHubSimulator

        self.sim = sim = GitHubSimulator().start()
        self.files = miles_shaped(files, tests)
        self.app = sim.create_app(name="CI Registrar", owner=repo.split("/")[0])
        self.repo = sim.create_repo(repo, default_branch="main")
        self.repo.commit(self.files, branch="main")
        sim.create_repo("sgl-project/sglang", default_branch="main").commit({SGLANG_NIGHTLY_PATH: SGLANG_NIGHTLY}, branch="main")
        sim.install(self.app, repo, "sgl-project/sglang")

    def open_pr(self, changes: dict[str, str], branch: str):
        self.repo.commit(changes, branch=branch, parent=self.repo.head("main"))
        return self.sim.open_pull_request(self.repo, branch, "main", author="bob")

    def distinct_prs(self, n: int, low: int = 5, high: int = 40, seed: int = 38):
        """`n` pull requests, each changing between `low` and `high` registered test files (their
        est_time moved), no two alike."""
        from tests.fixtures.miles_shape import calibrated, e2e_tests

        rng = random.Random(seed)
        tested = e2e_tests(self.files)
        prs = []
        for i in range(n):
            k = rng.randint(low, high)
            start = rng.randrange(0, max(1, len(tested) - k))
            chosen = tested[start:start + k]
            prs.append(self.open_pr(calibrated(self.files, chosen, bump=1 + i), f"burst-{i}"))
        return prs

    def delivery(self, pr):
        return self.sim.webhook("pull_request", "opened", app=self.app, repo=self.repo, pull=pr, sender="bob")

    def stop(self) -> None:
        self.sim.stop()


def serve(world: MilesWorld, tmp: Path, threads: int, **env):
    """`ci-registrar serve` on the simulator (tests/adversarial_support.Service), started and answering."""
    from tests.adversarial_support import Service

    return Service(world.sim, world.app, tmp, threads=threads, **env)
