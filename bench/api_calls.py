"""GitHub calls of the PR check, by case, on a miles-shaped repository: is the check's cost
independent of the repository's size?

On the GitHub simulator (real HTTP on loopback), with the App in this process (its queue drained
by this thread, as a worker would). The repository is tests/fixtures/miles_shape.py's (default
1,686 files, 382 discovered test files); the seed PR changes 34 registered tests and adds 2.
Cases, in order, one App process unless said:

- cold:        the seed PR opened; empty caches, empty registration index;
- warm:        a second PR on the same repository (34 other files, 2 added), same worker;
- warm-other:  a third PR, checked by a *new* worker on another machine: empty in-process and
               disk caches, only the shared store (registration index) is warm;
- re-push:     one more commit to the seed PR, one file changed;
- re-run:      "Re-run" on the seed PR's check run, same SHA;
- inventory:   the seed PR also edits the suite inventory (every registration re-checked);
- 300-file:    a PR that changes 300 test files.

The default configuration names one external consumer (sglang's MI350 nightly workflow, in
sgl-project/sglang): each worker reads it once per 10 minutes (bot/analysis/sources.py), so the first
check a process makes pays one request more.

Every request counts, 304s included; the installation-token request (once an hour per
installation) is shown apart. Baseline: a per-file bot reads each changed file at head and at
base, plus the PR's files list and the check run's create and complete (2 x files + 3).

Then latency: the seed PR with --latency seconds added to every simulator response, delivery
accepted to completed check run, median of --runs, on a fresh world each time (cold) and as a
second PR (warm). Then memory: the resident set of a real `ci-registrar worker` process (the
simulator stays in this one) once warm and after --checks checks over 20 PRs.
Ends with one JSON line.

    .venv/bin/python bench/api_calls.py [--files 1686 --tests 382] [--runs 5] [--latency 0.1] [--checks 200]

With --real GIT_DIR --base REV --head REV it also replays a real pull request on the simulator:
both revisions' every file (git ls-tree / cat-file), base on main and head on a branch, checked
cold and then again by a new worker elsewhere (the index warm), with the App's verdict compared
to the engine's on the same two trees. For the seed PR: --real PATH/TO/miles.git
--base babb42903^1 --head babb42903.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGETS = {"cold": 8, "warm": 6, "warm-other": 7, "re-push": 6, "re-run": 5, "inventory": 8, "300-file": 10}
TARGET_LATENCY = {"warm": 1.0, "cold": 2.0}
TOKEN_OP = "apps/create-installation-access-token"


class ApiWorld:
    """A simulator, the miles-shaped repository, the App (queue drained in this thread)."""

    def __init__(self, tmp: Path, files: int, tests: int, database_url: str | None = None):
        from app import create_app
        from bot.worker.queue import QueueConfig, open_queue
        from bot.infra.settings import load_settings
        from bot.store.db import upgrade
        from tests.fixtures.miles_shape import miles_shaped
        from tests.simulator import GitHubSimulator
        from tests.service_support import World, env_for

        self.sim = sim = GitHubSimulator().start()
        self.files = miles_shaped(files, tests)
        gh_app = sim.create_app(name="CI Registrar", owner="radixark")
        self.repo = sim.create_repo("radixark/miles", default_branch="main")
        self.repo.commit(self.files, branch="main")
        # miles' MI350 nightly runs in sglang's workflow (the default configuration's external
        # consumer): there, readable by the installation, so every check reads it as the App does.
        from tests.fixtures.miles import SGLANG_NIGHTLY, SGLANG_NIGHTLY_PATH

        sim.create_repo("sgl-project/sglang", default_branch="main").commit({SGLANG_NIGHTLY_PATH: SGLANG_NIGHTLY}, branch="main")
        inst = sim.install(gh_app, "radixark/miles", "sgl-project/sglang")
        extra = {"DATABASE_URL": database_url} if database_url else {}
        self.tmp = tmp
        settings = load_settings(env_for(sim, gh_app, tmp / "data", **extra))
        upgrade(settings.database_url)
        queue = open_queue(settings, config=QueueConfig(f"api-{os.getpid()}-{id(self) % 100000}", None, str(settings.data_dir / "queue.db"), 30))
        self.world = World(sim, gh_app, self.repo, inst, settings, queue, create_app(settings, queue=queue), None)
        self.prs = 0

    def stop(self) -> None:
        self.sim.stop()

    def new_worker_elsewhere(self) -> None:
        """The next job runs in a new worker on another machine: no in-process or disk cache."""
        import dataclasses

        runtime = self.world.queue.runtime
        runtime.settings = dataclasses.replace(runtime.settings, data_dir=self.tmp / f"other-{time.time_ns()}")
        runtime._github = None  # made anew on the next job: empty caches, a new blob directory

    def open_pr(self, changes: dict[str, str], branch: str):
        self.repo.commit(changes, branch=branch, parent=self.repo.head("main"))
        self.prs += 1
        return self.sim.open_pull_request(self.repo, branch, "main", author="bob")

    def event(self, event: str, action: str, **kwargs) -> dict:
        """Deliver one event, run every job it queues; the GitHub calls it cost, and the time."""
        sim = self.sim
        before = len(sim.requests_log)
        delivery = sim.webhook(event, action, app=self.world.app, repo=self.repo, **kwargs)
        started = time.time()
        assert self.world.deliver(delivery).status_code == 202
        self.world.drain()
        elapsed = time.time() - started
        calls = [r for r in sim.requests_log[before:]]
        return {"calls": len([c for c in calls if c["operation"] != TOKEN_OP]),
                "token_calls": len([c for c in calls if c["operation"] == TOKEN_OP]),
                "by_operation": dict(collections.Counter(c["operation"] or c["path"] for c in calls if c["operation"] != TOKEN_OP)),
                "seconds": elapsed}

    def latest_run(self, sha: str) -> dict:
        from checks.reporting.render import CHECK_RUN_NAME

        runs = [r for r in self.sim.check_runs(self.repo, sha) if r["name"] == CHECK_RUN_NAME]
        return max(runs, key=lambda r: r["id"])


def cases(w: ApiWorld) -> dict[str, dict]:
    from tests.fixtures.miles_shape import e2e_tests, calibrated, seed_pr

    out: dict[str, dict] = {}
    seed = w.open_pr(seed_pr(w.files, tag="seed"), "seed")
    out["cold"] = w.event("pull_request", "opened", pull=seed, sender="bob")
    out["cold"]["changed_files"] = 36
    second = w.open_pr(seed_pr(w.files, offset=100, tag="second"), "second")
    out["warm"] = w.event("pull_request", "opened", pull=second, sender="bob")
    out["warm"]["changed_files"] = 36
    third = w.open_pr(seed_pr(w.files, offset=200, tag="third"), "third")
    w.new_worker_elsewhere()
    out["warm-other"] = w.event("pull_request", "opened", pull=third, sender="bob")
    out["warm-other"]["changed_files"] = 36
    one = e2e_tests(w.files)[0]
    w.sim.push(w.repo, "seed", calibrated({one: w.repo.files(w.repo.head("seed"))[one].decode()}, [one], bump=10))
    seed = w.sim.pull(w.repo, seed.number)
    out["re-push"] = w.event("pull_request", "synchronize", pull=seed, sender="bob")
    out["re-push"]["changed_files"] = 36
    run = w.latest_run(seed.head_sha)
    out["re-run"] = w.event("check_run", "rerequested", check_run=run["id"], sender="bob")
    out["re-run"]["changed_files"] = 36
    suites = w.repo.files(w.repo.head("seed"))["tests/ci/run_suite.py"].decode()
    w.sim.push(w.repo, "seed", {"tests/ci/run_suite.py": suites.replace('"stage-b-cpu",', '"stage-b-cpu",\n        "stage-c-cpu",')})
    seed = w.sim.pull(w.repo, seed.number)
    out["inventory"] = w.event("pull_request", "synchronize", pull=seed, sender="bob")
    out["inventory"]["changed_files"] = 37
    big = w.open_pr(calibrated(w.files, e2e_tests(w.files)[:300], bump=5), "big")
    out["300-file"] = w.event("pull_request", "opened", pull=big, sender="bob")
    out["300-file"]["changed_files"] = 300
    return out


def latency(files: int, tests: int, runs: int, seconds: float) -> dict[str, float]:
    from tests.fixtures.miles_shape import seed_pr

    samples: dict[str, list[float]] = {"cold": [], "warm": []}
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            w = ApiWorld(Path(tmp), files, tests)
            try:
                for label, offset in (("cold", 0), ("warm", 100)):
                    pr = w.open_pr(seed_pr(w.files, offset=offset, tag=label), label)
                    fault = w.sim.inject_fault("*", ".", "slow", times=None, delay=seconds)
                    result = w.event("pull_request", "opened", pull=pr, sender="bob")
                    w.sim._faults.remove(fault)
                    assert w.latest_run(pr.head_sha)["status"] == "completed"
                    samples[label].append(result["seconds"])
            finally:
                w.stop()
    return {label: statistics.median(v) for label, v in samples.items()}


def rss_mb(pid: int | str = "self") -> float:
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def memory(files: int, tests: int, checks: int, prs: int = 20) -> dict[str, float]:
    """A real `ci-registrar worker` process (2 threads) checks `checks` pushes over `prs` PRs; its
    resident set once warmed up (first check done) and after the last. The simulator lives in
    this process, so its own growth is not counted."""
    from tests.fixtures.miles_shape import e2e_tests, calibrated, seed_pr
    from tests.service_support import Workers, wait_for, worker_env

    with tempfile.TemporaryDirectory() as tmp:
        w = ApiWorld(Path(tmp), files, tests)
        workers = Workers(Path(tmp))
        try:
            proc = workers.start(worker_env(w.world), threads=2)
            opened = [w.open_pr(seed_pr(w.files, offset=(i * 10) % max(1, tests - 60), tag=f"m{i}"), f"m{i}") for i in range(prs)]

            def push_and_wait(pr, n: int) -> None:
                delivery = w.sim.webhook("pull_request", "synchronize" if n else "opened", app=w.world.app,
                                         repo=w.repo, pull=pr, sender="bob")
                assert w.world.deliver(delivery).status_code == 202
                wait_for(lambda: any(r["status"] == "completed" for r in w.sim.check_runs(w.repo, pr.head_sha)))

            push_and_wait(opened[0], 0)
            idle = rss_mb(proc.pid)
            tested = e2e_tests(w.files)
            at: dict[int, float] = {}
            for n in range(checks):
                pr = opened[n % prs]
                path = tested[n % len(tested)]
                current = w.repo.files(w.repo.head(pr.head_ref))[path].decode()
                w.sim.push(w.repo, pr.head_ref, calibrated({path: current}, [path], bump=1))
                push_and_wait(w.sim.pull(w.repo, pr.number), n + 1)
                if (n + 1) % 50 == 0:
                    at[n + 1] = round(rss_mb(proc.pid), 1)
            after = rss_mb(proc.pid)
            # The analysis server is a process of its own (bot/analysis/server.py): shown apart.
            children = [int(c) for t in os.listdir(f"/proc/{proc.pid}/task")
                        for c in open(f"/proc/{proc.pid}/task/{t}/children").read().split()]
            server = max((rss_mb(c) for c in children), default=0.0)
            return {"idle_mb": round(idle, 1), "after_mb": round(after, 1), "growth_mb": round(after - idle, 1),
                    "every_50": at, "analysis_server_mb": round(server, 1)}
        finally:
            workers.stop_all()
            w.stop()


def git_files(git_dir: str, rev: str) -> dict[str, bytes]:
    """Every blob of `rev` (symlinks and submodules left out), path -> bytes."""
    import subprocess

    listing = subprocess.run(["git", f"--git-dir={git_dir}", "ls-tree", "-r", "-z", rev], check=True,
                             capture_output=True).stdout.decode().split("\0")
    entries = [(line.split("\t", 1)[1], line.split()[2]) for line in listing if line and line.split()[1] == "blob"
               and not line.startswith("120000")]
    batch = subprocess.run(["git", f"--git-dir={git_dir}", "cat-file", "--batch"], check=True, capture_output=True,
                           input="".join(f"{sha}\n" for _, sha in entries).encode()).stdout
    out, at = {}, 0
    for path, _ in entries:
        header_end = batch.index(b"\n", at)
        size = int(batch[at:header_end].split()[2])
        out[path] = batch[header_end + 1:header_end + 1 + size]
        at = header_end + 1 + size + 1
    return out


def real_pr(git_dir: str, base_rev: str, head_rev: str) -> dict:
    from checks.engine import check_tree
    from checks.reporting.render import check_run_annotations, check_run_conclusion
    from checks.scanning.tree import MemoryTree
    from tests.fixtures.miles import CONSUMERS

    base, head = git_files(git_dir, base_rev), git_files(git_dir, head_rev)
    with tempfile.TemporaryDirectory() as tmp:
        w = ApiWorld(Path(tmp), 10, 2)
        try:
            w.repo.commit(base, branch="main", replace=True)
            w.repo.commit(head, branch="real", parent=w.repo.head("main"), replace=True)
            pr = w.sim.open_pull_request(w.repo, "real", "main", author="bob")
            cold = w.event("pull_request", "opened", pull=pr, sender="bob")
            w.repo.commit({}, branch="real2", parent=w.repo.head("real"))  # the same tree, a new commit
            second = w.sim.open_pull_request(w.repo, "real2", "main", author="bob")
            w.new_worker_elsewhere()
            warm = w.event("pull_request", "opened", pull=second, sender="bob")
            run = w.latest_run(pr.head_sha)
            changed = {p: p for p in set(head) | set(base) if head.get(p) != base.get(p)}
            changed.update({p: None for p in head if p not in base})
            changed = {p: b for p, b in changed.items() if p in head or b}
            report = check_tree(MemoryTree(head), MemoryTree(base), changed, config_text=None, fixes=False,
                                consumers_from=CONSUMERS)
            key = lambda a: (a["path"], a["start_line"], a["title"], a["message"])  # noqa: E731
            same = (run["conclusion"] == check_run_conclusion(report)
                    and sorted(map(key, run["annotations"])) == sorted(map(key, check_run_annotations(report))))
            return {"files": len(head), "changed": len(changed), "cold": cold, "warm": warm, "same_verdict": same,
                    "conclusion": run["conclusion"], "annotations": len(run["annotations"])}
        finally:
            w.stop()


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1686)
    parser.add_argument("--tests", type=int, default=382)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.1, help="seconds added to every simulator response")
    parser.add_argument("--checks", type=int, default=200, help="checks for the memory figure (0: skip)")
    parser.add_argument("--real", metavar="GIT_DIR", help="also replay a real PR from this repository (with --base/--head)")
    parser.add_argument("--base")
    parser.add_argument("--head")
    args = parser.parse_args(argv)
    import logging

    logging.disable(logging.INFO)  # the App's per-delivery log lines would bury the figures
    out: dict = {"bench": "api_calls", "files": args.files, "tests": args.tests}
    with tempfile.TemporaryDirectory() as tmp:
        w = ApiWorld(Path(tmp), args.files, args.tests)
        try:
            results = cases(w)
        finally:
            w.stop()
    print(f"repository: {args.files} files, {args.tests} discovered test files")
    print(f"{'case':<11} {'calls':>5} {'target':>6} {'baseline':>8}  by endpoint")
    for case, r in results.items():
        baseline = 2 * r["changed_files"] + 3
        ok = "met" if r["calls"] <= TARGETS[case] else "MISSED"
        print(f"{case:<11} {r['calls']:>5} {TARGETS[case]:>6} {baseline:>8}  {ok}; "
              + ", ".join(f"{k} {v}" for k, v in sorted(r["by_operation"].items()))
              + (f" (+{r['token_calls']} token)" if r["token_calls"] else ""))
        out[f"{case}_calls"] = r["calls"]
        out[f"{case}_baseline"] = baseline
    if args.real:
        real = real_pr(args.real, args.base, args.head)
        for label in ("cold", "warm"):
            r = real[label]
            print(f"real PR ({args.base}..{args.head}: {real['files']} files, {real['changed']} changed) {label}: "
                  f"{r['calls']} calls, baseline {2 * real['changed'] + 3}; "
                  + ", ".join(f"{k} {v}" for k, v in sorted(r["by_operation"].items()))
                  + (f" (+{r['token_calls']} token)" if r["token_calls"] else ""))
            out[f"real_{label}_calls"] = r["calls"]
        print(f"real PR verdict: {real['conclusion']}, {real['annotations']} annotations, "
              f"{'the same as' if real['same_verdict'] else 'DIFFERENT FROM'} the engine's on the same trees")
        out["real_same_verdict"] = real["same_verdict"]
    if args.runs:
        lat = latency(args.files, args.tests, args.runs, args.latency)
        for label, value in lat.items():
            print(f"latency {label}: {value:.3f} s from delivery to completed check run with {args.latency * 1000:.0f} ms "
                  f"per response (median of {args.runs}; target {TARGET_LATENCY[label]} s)")
            out[f"latency_{label}_s"] = round(value, 3)
    if args.checks:
        mem = memory(args.files, args.tests, args.checks)
        print(f"memory: {mem['idle_mb']} MB idle, {mem['after_mb']} MB after {args.checks} checks over 20 PRs "
              f"(+{mem['growth_mb']} MB; target +25 MB, flat from 100 to 200); every 50 checks: {mem['every_50']}; "
              f"the analysis server {mem['analysis_server_mb']} MB")
        out.update({f"memory_{k}": v for k, v in mem.items()})
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
