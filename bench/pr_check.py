"""Benchmark: the PR check's latency and the App's CPU for it, cold and warm, as an operator sees it.

`ci-registrar serve` (the embedded default, 4 worker threads) runs as a real process on the GitHub
simulator with a miles-shaped repository (1,686 files, 382 test files) and sglang's nightly
workflow as its external consumer. Each round starts a new world and a new `serve`, opens the seed
PR (34 calibrated test files and 2 new ROCm ones, tests/fixtures/miles_shape.seed_pr) and delivers
it (cold: empty caches, empty registration index), then a second PR of the same shape on other
files (warm: same process, index and caches warm). Rounds alternate the latencies given by
--latencies (seconds added to every simulator response: 0.1 as GitHub over the internet, 0 as
GitHub answering at once).

Figures per (case, latency), median with min and max over --runs rounds:
- seconds from the delivery sent to the check run seen completed (polled every 20 ms);
- the App's own CPU for that check: user + system seconds of the serving process tree (web and
  worker process, the analysis server and its children), read before the delivery and once the
  run is complete (the simulator runs in this process and is not counted).
The load average is printed with each round. Targets of issue 38 (quiet 2-core machine, 100 ms):
warm within 1.0 s, cold within 2.0 s, warm CPU at most 0.2 s. Not a timed test: ends with one
JSON line of the figures.

    .venv/bin/python bench/pr_check.py [--runs 5] [--latencies 0.1 0]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from service_support import Completions, MilesWorld, load, serve, tree_cpu_s

TARGETS = {("warm", "s"): 1.0, ("cold", "s"): 2.0, ("warm", "cpu"): 0.2}


def one_round(latency: float, threads: int) -> dict:
    from checks.reporting.render import CHECK_RUN_NAME
    from tests.fixtures.miles_shape import seed_pr
    from tests.patience import PATIENCE

    world = MilesWorld()
    service = None
    try:
        service = serve(world, Path(tempfile.mkdtemp(prefix="pr-check-")), threads)
        completions = Completions(world.sim, CHECK_RUN_NAME)
        out = {}
        for case, offset in (("cold", 0), ("warm", 100)):
            pr = world.open_pr(seed_pr(world.files, offset=offset, tag=case), case)
            delivery = world.delivery(pr)
            fault = world.sim.inject_fault("*", ".", "slow", times=None, delay=latency) if latency else None
            time.sleep(0.3)  # the App idle: nothing of the previous check still counted
            cpu = tree_cpu_s(service.proc.pid)
            start = time.monotonic()
            assert service.deliver(world.sim, delivery) == 202
            deadline = start + PATIENCE
            while pr.head_sha not in completions.done and time.monotonic() < deadline:
                time.sleep(0.01)
            if fault is not None:
                world.sim._faults.remove(fault)
            time.sleep(0.1)  # the job's last bookkeeping after the run completed
            out[case] = {"s": completions.done[pr.head_sha] - start, "cpu": tree_cpu_s(service.proc.pid) - cpu}
        completions.stop()
        return out
    finally:
        if service is not None:
            service.stop()
        world.stop()


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--latencies", type=float, nargs="+", default=[0.1, 0.0])
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args(argv)
    samples: dict[tuple[str, float, str], list[float]] = {}
    loads = []
    for n in range(args.runs):
        for latency in args.latencies:
            result = one_round(latency, args.threads)
            loads.append(load())
            print(f"round {n + 1}, {latency * 1000:.0f} ms: " + ", ".join(
                f"{case} {r['s']:.3f} s / {r['cpu']:.3f} CPU-s" for case, r in result.items()) + f"; load {loads[-1]}", flush=True)
            for case, r in result.items():
                for what in ("s", "cpu"):
                    samples.setdefault((case, latency, what), []).append(r[what])
    out: dict = {"bench": "pr_check", "runs": args.runs, "load": loads}
    for (case, latency, what), values in samples.items():
        key = f"{case}_{int(latency * 1000)}ms_{'s' if what == 's' else 'cpu_s'}"
        med = statistics.median(values)
        out[key] = round(med, 3)
        target = TARGETS.get((case, what)) if latency == 0.1 else None
        print(f"{case:<4} {latency * 1000:>4.0f} ms {'latency' if what == 's' else 'App CPU':<8} median {med:.3f} s "
              f"(min {min(values):.3f}, max {max(values):.3f})" + (f"; target {target} s" if target else ""))
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
