"""Benchmark: a burst of pull requests against a running App.

`ci-registrar serve` (the embedded default: SQLite store and queue, --threads worker threads) runs
as a real process on the GitHub simulator, with a miles-shaped repository (tests/fixtures/
miles_shape.py: 1,686 files, 382 test files) and sglang's nightly workflow as its external
consumer. --prs distinct pull requests (each changing 5 to 40 registered test files, chosen by a
fixed seed) are opened first; then their `pull_request` deliveries are sent, evenly spread over
--window seconds, by 4 sender threads. The figures, from the first delivery sent:

- checks/s: completed check runs over the time to the last one;
- p50, p95, max: each PR's time from its delivery to its completed check run;
- CPU per check: user + system seconds of the serving process tree (web and worker process, the
  analysis server, its children; the simulator runs in this process and is not counted) over the
  burst, divided by the checks completed;
- lost: deliveries not answered 202, and check runs not completed within --deadline seconds;
- the machine's load average before and after.

--latency adds that many seconds to every simulator response (0: GitHub answers at once).
--database-url / --redis-url run the App on PostgreSQL and Redis instead of the embedded default.
Not a timed test: it prints its figures and ends with one JSON line of them.

    .venv/bin/python bench/burst.py [--prs 200] [--window 10] [--threads 4] [--latency 0]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from service_support import Completions, MilesWorld, load, serve, tree_cpu_s


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prs", type=int, default=200)
    parser.add_argument("--window", type=float, default=10.0, help="seconds over which the deliveries are sent")
    parser.add_argument("--threads", type=int, default=4, help="the App's worker threads (serve --threads)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every simulator response")
    parser.add_argument("--deadline", type=float, default=900.0, help="seconds after which a check not completed is lost")
    parser.add_argument("--files", type=int, default=1686)
    parser.add_argument("--tests", type=int, default=382)
    parser.add_argument("--database-url")
    parser.add_argument("--redis-url")
    args = parser.parse_args(argv)
    from checks.reporting.render import CHECK_RUN_NAME

    out: dict = {"bench": "burst", "prs": args.prs, "window_s": args.window, "threads": args.threads,
                 "latency_s": args.latency, "store": "postgresql" if args.database_url else "sqlite",
                 "queue": "redis" if args.redis_url else "sqlite", "load_before": load()}
    world = MilesWorld(args.files, args.tests)
    service = None
    try:
        prs = world.distinct_prs(args.prs)
        deliveries = [world.delivery(pr) for pr in prs]
        env = {}
        if args.database_url:
            env["DATABASE_URL"] = args.database_url
        if args.redis_url:
            env["REDIS_URL"] = args.redis_url
        service = serve(world, Path(tempfile.mkdtemp(prefix="burst-")), args.threads, **env)
        if args.latency:
            world.sim.inject_fault("*", ".", "slow", times=None, delay=args.latency)
        completions = Completions(world.sim, CHECK_RUN_NAME)
        cpu_before = tree_cpu_s(service.proc.pid)
        sent: dict[str, float] = {}
        statuses: dict[str, int] = {}
        start = time.monotonic()
        lock = threading.Lock()

        def send(i: int) -> None:
            due = start + args.window * i / max(1, len(deliveries))
            time.sleep(max(0.0, due - time.monotonic()))
            at = time.monotonic()
            code = service.deliver(world.sim, deliveries[i])
            with lock:
                sent[prs[i].head_sha], statuses[prs[i].head_sha] = at, code

        with ThreadPoolExecutor(4) as pool:
            list(pool.map(send, range(len(deliveries))))
        sent_in = time.monotonic() - start
        wanted = {sha for sha, code in statuses.items() if code == 202}
        while time.monotonic() - start < args.deadline and not wanted <= set(completions.done):
            time.sleep(0.1)
        completions.stop()
        cpu = tree_cpu_s(service.proc.pid) - cpu_before
        done = {sha: t for sha, t in completions.done.items() if sha in sent}
        latencies = [done[sha] - sent[sha] for sha in done]
        last = max(done.values()) - start if done else None
        refused = sum(1 for code in statuses.values() if code != 202)
        out.update({
            "sent_in_s": round(sent_in, 2), "completed": len(done), "lost": refused + len(wanted - set(done)),
            "refused": refused, "last_completed_s": round(last, 2) if last else None,
            "checks_per_s": round(len(done) / last, 2) if last else None,
            "p50_s": round(statistics.median(latencies), 2) if latencies else None,
            "p95_s": round(percentile(latencies, 0.95), 2) if latencies else None,
            "max_s": round(max(latencies), 2) if latencies else None,
            "cpu_s": round(cpu, 2), "cpu_per_check_s": round(cpu / len(done), 3) if done else None,
            "load_after": load()})
    finally:
        if service is not None:
            service.stop()
        world.stop()
    print(f"{out['prs']} PRs (5-40 files each) sent in {out.get('sent_in_s')} s to serve --threads {args.threads} "
          f"({out['store']} store, {out['queue']} queue), {args.latency * 1000:.0f} ms per GitHub call")
    print(f"completed {out.get('completed')}, lost {out.get('lost')} (refused {out.get('refused')}); last check after "
          f"{out.get('last_completed_s')} s: {out.get('checks_per_s')} checks/s")
    print(f"delivery to completed check: p50 {out.get('p50_s')} s, p95 {out.get('p95_s')} s, max {out.get('max_s')} s")
    print(f"CPU: {out.get('cpu_s')} s for the serving process tree, {out.get('cpu_per_check_s')} s per check")
    print(f"load average before {out['load_before']}, after {out.get('load_after')}")
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
