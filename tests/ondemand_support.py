"""Support for the on-demand tests (no tests here): a miles-shaped repository with a dispatch table,
the App against the simulator, and helpers to comment, click and finish runs as GitHub would."""

from __future__ import annotations

import time
from dataclasses import dataclass

from tests.fixtures.miles import miles_tree, test_file
from tests.test_service_support import World, env_for

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


def ondemand_files(config: str = CONFIG) -> dict[str, str]:
    return miles_tree(**{
        ".github/ci-registrar.yml": config,
        EXTRA_TEST: test_file(
            'register_cuda_ci(est_time=250, suite="stage-c-4-gpu-h200", labels=["sglang"])',
            f'register_rocm_ci(est_time=300, suite="{SUITE}", labels=["sglang"])'),
        "tests/e2e/fsdp/test_disabled_rocm.py": test_file(
            f'register_rocm_ci(est_time=100, suite="{SUITE}", labels=["fsdp"], disabled="flaky on MI350")'),
    })


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

    def replies(self) -> list[str]:
        mine = self.world.app.bot_login
        return [c["body"] for c in self.sim.comments(self.repo, self.pr.number)
                if c["user"]["login"] == mine and c["body"] and not c["body"].startswith("/")]

    def check_runs(self, prefix: str) -> list[dict]:
        return [r for r in self.sim.check_runs(self.repo) if r["name"].startswith(prefix)]


def build_ondemand(sim, tmp_path, *, config: str = CONFIG, app_permissions: dict | None = None,
                   database_url: str | None = None) -> OnDemand:
    from app import create_app
    from bot.queue import QueueConfig, open_queue
    from bot.settings import load_settings
    from bot.store.db import upgrade

    gh_app = sim.create_app(name="CI Registrar", owner="radixark", permissions=app_permissions)
    repo = sim.create_repo("radixark/miles", default_branch="main")
    repo.commit(ondemand_files(config), branch="main")
    repo.add_workflow("rocm-on-demand.yml", name="ROCm on demand", dispatchable=True)
    inst = sim.install(gh_app, "radixark/miles")
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
