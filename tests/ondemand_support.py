"""Support for the on-demand tests (no tests here): a miles-shaped repository with a dispatch table,
the App against the simulator, and helpers to comment, click and finish runs as GitHub would."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from tests.fixtures.miles import RUN_SUITE, SGLANG_NIGHTLY, SGLANG_NIGHTLY_PATH, miles_tree, test_file
from tests.service_support import World, env_for

SUITE = "nightly-stage-c-4-gpu-mi350"
CONFIG = f"""\
dispatch:
  {SUITE}:
    workflow: rocm-on-demand.yml
    ref: main
  nightly-stage-c-8-gpu-mi350:
    workflow: rocm-on-demand.yml
    ref: main
budgets:
  daily_gpu_hours: 64
  max_files_per_command: 3
"""
EXTRA_TEST = "tests/e2e/sglang/test_qwen3_4B_offload_disk.py"
# The shipped workflow: the simulator checks every dispatch against the inputs it declares.
SHIPPED_WORKFLOW = Path(__file__).resolve().parents[1] / "deploy" / "workflows" / "rocm-on-demand.yml"
# The runner's command line, as miles' tests/ci/run_suite.py (2026-08) declares it: the plan passes
# only options the default branch's runner has.
RUNNER_MAIN = '''

def main():
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--hw", type=str, required=True)
    parser.add_argument("--suite", type=str, required=True)
    cadence = parser.add_mutually_exclusive_group()
    cadence.add_argument("--cadence", default="regular")
    cadence.add_argument("--nightly", dest="cadence", action="store_const", const="nightly")
    parser.add_argument("--timeout-per-file", type=int, default=1800)
    parser.add_argument("--continue-on-error", action="store_true", default=False)
    parser.add_argument("--auto-partition-id", type=int)
    parser.add_argument("--auto-partition-size", type=int)
    parser.add_argument("--enable-retry", action="store_true", default=False)
    parser.add_argument("--max-attempts", type=int, default=2)
    parser.add_argument("--list-only", action="store_true", default=False)
    parser.add_argument("--labels", nargs="*", default=[])
    parser.add_argument("--match-all-labels", action="store_true", default=False)
'''
# A miles deployment with an 8-GPU MI350 runner of its own: its nightly runs the 8-GPU suite there,
# in two partitions, so that suite has a pool and a job to copy (miles itself has only 4-GPU runners).
# The 4-GPU nightly suite, whose consumer (sglang's nightly) runs it on sglang's 8-GPU pool, takes
# this deployment's own 4-GPU runner: the pool of the job is not one of this repository's.
NIGHTLY_8_GPU = '''\
name: Nightly (ROCm, 8 GPUs)
on:
  schedule:
    - cron: "0 3 * * *"
  workflow_dispatch:
jobs:
  nightly-8-gpu:
    runs-on: [self-hosted, amd, mi350, 8gpu]
    timeout-minutes: 240
    strategy:
      matrix:
        part: [0, 1]
    steps:
      - uses: actions/checkout@v4
      - run: python3 tests/ci/run_suite.py --hw rocm --suite nightly-stage-c-8-gpu-mi350 --cadence nightly --auto-partition-id ${{ matrix.part }} --auto-partition-size 2
'''


def ondemand_files(config: str = CONFIG, extra: dict[str, str] | None = None) -> dict[str, str]:
    files = miles_tree(**{
        "tests/ci/run_suite.py": RUN_SUITE + RUNNER_MAIN,
        ".github/workflows/nightly-rocm.yml": NIGHTLY_8_GPU,
        ".github/ci-registrar.yml": config,
        EXTRA_TEST: test_file(
            'register_cuda_ci(est_time=250, suite="stage-c-4-gpu-h200", labels=["sglang"])',
            f'register_rocm_ci(est_time=300, suite="{SUITE}", labels=["sglang"])'),
        "tests/e2e/fsdp/test_disabled_rocm.py": test_file(
            f'register_rocm_ci(est_time=100, suite="{SUITE}", labels=["fsdp"], disabled="flaky on MI350")'),
    })
    files.update(extra or {})
    return files


# Every enabled file of SUITE at the PR's head passes: the log a whole-suite run prints.
ALL_PASS_LOG = ("2026-12-01T04:05:06.1234567Z [1/3] tests/e2e/test_new.py  PASS  elapsed=80s\n"
                f"2026-12-01T04:25:06.1234567Z [2/3] {EXTRA_TEST}  PASS  elapsed=280s\n"
                "2026-12-01T05:05:06.1234567Z [3/3] tests/e2e/fsdp/test_qwen3_0.6B_fsdp_distributed.py  PASS  elapsed=2300s\n")


def next_second() -> None:
    """Wait until the wall clock is in a later whole second than now (GitHub's timestamps have seconds)."""
    start = int(time.time())
    while int(time.time()) <= start:
        time.sleep(0.02)


@dataclass
class OnDemand:
    world: World

    @property
    def sim(self):
        return self.world.sim

    @property
    def repo(self):
        return self.world.repo

    @property
    def pr(self):
        return self.sim.pull(self.repo, self.world.pr.number)

    def comment(self, body: str, author: str = "maint", user_type: str = "User", app=None, sender: str | None = None,
                deliver: bool = True, **overrides):
        c = self.sim.add_comment(self.repo, self.pr.number, body, author=author, user_type=user_type, app=app)
        d = self.sim.webhook("issue_comment", "created", app=self.world.app, repo=self.repo, pull=self.pr, comment=c,
                             sender=sender, **overrides)
        if deliver:
            assert self.world.deliver(d).status_code == 202
            self.world.drain()
        return c, d

    def click(self, check_run_id: int, sender: str):
        d = self.sim.webhook("check_run", "requested_action", app=self.world.app, repo=self.repo,
                             check_run=check_run_id, identifier="approve-run", sender=sender)
        assert self.world.deliver(d).status_code == 202
        self.world.drain()
        return d

    def push(self, files: dict, deliver: bool = True):
        """A push to the PR's branch; returns once GitHub's clock (whole seconds) has moved past it,
        so a comment written next is later than the push, as a person's would be."""
        sha = self.sim.push(self.repo, "feature", files)
        d = self.sim.webhook("pull_request", "synchronize", app=self.world.app, repo=self.repo, pull=self.pr,
                             sender="bob")
        if deliver:
            assert self.world.deliver(d).status_code == 202
            self.world.drain()
        next_second()
        return sha

    def dispatches(self) -> list[dict]:
        return self.sim.dispatches(self.repo)

    def finish_run(self, dispatch: dict, shard_logs: list[str], conclusion: str = "success",
                   shard_conclusions: list[str] | None = None, deliver: bool = True):
        """Complete a dispatched run of the shipped workflow with the jobs GitHub lists for it: the
        validate job, then one job per shard of the matrix calling the reusable job, named
        `<caller job name> / <called job>` and carrying the labels the dispatch asked for."""
        inputs = dispatch["inputs"]
        plan = json.loads(inputs.get("plan") or "{}")
        labels = plan.get("runs_on") or json.loads(inputs.get("runs_on") or '["self-hosted", "amd", "mi350", "4gpu"]')
        jobs = [{"name": "Validate the request", "labels": ["ubuntu-latest"], "conclusion": "success",
                 "log": "inputs: ok\nok: the head of the PR\n"}]
        for i, log in enumerate(shard_logs):
            jobs.append({"name": f"MI350 shard {i} / run", "labels": labels, "log": log,
                         "conclusion": (shard_conclusions or [conclusion] * len(shard_logs))[i],
                         "runner_name": f"mi35x-{i}"})
        self.sim.complete_run(dispatch["run_id"], conclusion=conclusion, jobs=jobs)
        if deliver:
            self.world.deliver(self.sim.webhook("workflow_run", "completed", app=self.world.app, repo=self.repo,
                                                run=dispatch["run_id"]))
            self.world.drain()

    def replies(self) -> list[str]:
        mine = self.world.app.bot_login
        return [c["body"] for c in self.sim.comments(self.repo, self.pr.number)
                if c["user"]["login"] == mine and c["body"] and not c["body"].startswith("/")]

    def check_runs(self, prefix: str) -> list[dict]:
        return [r for r in self.sim.check_runs(self.repo) if r["name"].startswith(prefix)]


def consumer_repo(sim):
    """sgl-project/sglang with its nightly for miles: the external consumer whose job runs miles'
    nightly suites, read by the App at sglang's default branch (install the App there too)."""
    sglang = sim.create_repo("sgl-project/sglang", default_branch="main")
    sglang.commit({SGLANG_NIGHTLY_PATH: SGLANG_NIGHTLY, "README.md": "sglang\n"}, branch="main")
    return sglang


def build_ondemand(sim, tmp_path, *, config: str = CONFIG, app_permissions: dict | None = None,
                   database_url: str | None = None, extra: dict[str, str] | None = None) -> OnDemand:
    """extra: files of the default branch (and so of the PR's head) beyond the miles-shaped tree."""
    from app import create_app
    from bot.worker.queue import QueueConfig, open_queue
    from bot.infra.settings import load_settings
    from bot.store.db import upgrade

    gh_app = sim.create_app(name="CI Registrar", owner="radixark", permissions=app_permissions)
    repo = sim.create_repo("radixark/miles", default_branch="main")
    repo.commit(ondemand_files(config, extra), branch="main")
    repo.add_workflow_file("rocm-on-demand.yml", SHIPPED_WORKFLOW.read_text())
    inst = sim.install(gh_app, "radixark/miles", consumer_repo(sim))
    repo.commit({"tests/e2e/test_new.py": test_file(
        'register_cuda_ci(est_time=60, suite="stage-c-4-gpu-h200", labels=["short"])',
        f'register_rocm_ci(est_time=90, suite="{SUITE}", labels=["short"])')}, branch="feature")
    pr = sim.open_pull_request(repo, "feature", "main", author="bob")
    # The repository was pushed to a while ago: the PR's head predates every comment of a test.
    repo.pushed_at -= 600
    for user, role in (("maint", "maintain"), ("admin1", "admin"), ("writer", "write"), ("triager", "triage"),
                       ("reader", "read"), ("maint2", "maintain")):
        sim.set_permission(repo, user, role)
    extra = {"DATABASE_URL": database_url} if database_url else {}
    settings = load_settings(env_for(sim, gh_app, tmp_path, **extra))
    upgrade(settings.database_url)
    queue = open_queue(settings, config=QueueConfig(f"od-{id(tmp_path) % 100000}", None, str(tmp_path / "queue.db"), 30))
    world = World(sim, gh_app, repo, inst, settings, queue, create_app(settings, queue=queue), pr)
    return OnDemand(world)
