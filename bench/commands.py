"""/run-rocm latency: GitHub calls and wall time from a maintainer's command to the dispatch.

On the GitHub simulator (real HTTP on loopback) with 100 ms added to every response, a
miles-shaped repository with a dispatch table, and the App in this process (queue drained by this
thread, as a worker would). Warm: the PR's check already ran, so the head's tree and blobs are in
the App's caches and its installation token is fresh (the usual case: a PR is checked on open,
then someone comments). Cold: a new App process, empty caches, no token: the command is the first
delivery for its PR (issue 38's target, at most 10 calls, counts the delivery's own calls; the
token request is the new process's, and is printed apart).

Anchor: the calls a dispatch cannot do without before the dispatch itself (the PR's head, the
trusted configuration, the default branch's commit and tree whose CI the run plan copies, the
commenter's permission, the dispatch: 6) times the added latency.

    .venv/bin/python bench/commands.py [--runs 5] [--latency 0.1]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_CALLS = 10
TARGET_S = 1.5
ESSENTIAL_CALLS = 6


def one_command(od, number: int, warm: bool, latency: float) -> dict:
    from tests.ondemand_support import SUITE

    sim = od.sim
    pr = sim.pull(od.repo, number)
    od.world.pr = pr
    if warm:
        od.world.deliver(sim.webhook("pull_request", "opened", app=od.world.app, repo=od.repo, pull=pr, sender="bob"))
        od.world.drain()
    fault = sim.inject_fault("*", ".", "slow", times=None, delay=latency)
    before = len(sim.requests_log)
    c = sim.add_comment(od.repo, number, f"/run-rocm {SUITE}", author="maint")
    delivery = sim.webhook("issue_comment", "created", app=od.world.app, repo=od.repo, pull=pr, comment=c)
    started = time.time()
    od.world.deliver(delivery)
    od.world.drain()
    finished = time.time()
    sim._faults.remove(fault)
    [dispatch] = [d for d in sim.dispatches(od.repo) if d["inputs"]["pull_number"] == str(number)]
    calls = sim.requests_log[before:]
    index = next(i for i, r in enumerate(calls) if r.get("operation") == "actions/create-workflow-dispatch")
    token = sum(1 for r in calls if r.get("operation") == "apps/create-installation-access-token")
    return {"calls": len(calls), "calls_without_token": len(calls) - token, "calls_to_dispatch": index + 1,
            "to_dispatch_s": dispatch["at"] - started,
            "total_s": finished - started, "by_operation": [r["operation"] for r in calls]}


def world(tmp: str):
    from tests.ondemand_support import build_ondemand
    from tests.simulator import GitHubSimulator

    sim = GitHubSimulator().start()
    return sim, build_ondemand(sim, Path(tmp))


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.1, help="seconds added to every simulator response")
    args = parser.parse_args(argv)
    import os

    os.environ.setdefault("CI_REGISTRAR_LOG_LEVEL", "warning")
    results = {}
    for label, warm in (("warm", True), ("cold", False)):
        samples = []
        for i in range(args.runs):
            with tempfile.TemporaryDirectory() as tmp:
                sim, od = world(tmp)
                try:
                    samples.append(one_command(od, od.world.pr.number, warm, args.latency))
                finally:
                    sim.stop()
        results[label] = samples
    anchor_s = ESSENTIAL_CALLS * args.latency
    out = {"bench": "commands", "latency_s": args.latency, "runs": args.runs, "anchor_s": round(anchor_s, 3),
           "target_calls": TARGET_CALLS, "target_s": TARGET_S}
    for label, samples in results.items():
        calls = max(s["calls"] for s in samples)
        to_dispatch = statistics.median(s["to_dispatch_s"] for s in samples)
        total = statistics.median(s["total_s"] for s in samples)
        print(f"{label}: {calls} GitHub calls in all, {samples[0]['calls_to_dispatch']} up to the dispatch; "
              f"dispatched after {to_dispatch:.3f} s (median of {len(samples)}; {to_dispatch / anchor_s:.2f}x the "
              f"anchor {anchor_s:.2f} s), job done after {total:.3f} s")
        print(f"  calls: {', '.join(samples[0]['by_operation'])}")
        out[f"{label}_calls"] = calls
        out[f"{label}_calls_without_token"] = max(s["calls_without_token"] for s in samples)
        out[f"{label}_calls_to_dispatch"] = samples[0]["calls_to_dispatch"]
        out[f"{label}_to_dispatch_s"] = round(to_dispatch, 3)
        out[f"{label}_total_s"] = round(total, 3)
        out[f"{label}_ratio_to_anchor"] = round(to_dispatch / anchor_s, 2)
    first = out["cold_calls_without_token"]
    print(f"targets: warm <= {TARGET_CALLS} calls ({'met' if out['warm_calls'] <= TARGET_CALLS else 'MISSED'}), "
          f"dispatched within {TARGET_S} s ({'met' if out['warm_to_dispatch_s'] <= TARGET_S else 'MISSED'}); "
          f"as the first delivery for its PR <= {TARGET_CALLS} calls ({first} without the new process's token request: "
          f"{'met' if first <= TARGET_CALLS else 'MISSED'})")
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
