"""The adversarial harness (no tests here): `ci-registrar serve` as a real process on the simulator,
an attacker's installation sending pull requests built to stop the App, and an ordinary
repository's pull request that must still get its check within seconds.

Used by tests/app/test_adversarial.py (in CI) and bench/adversarial.py (figures).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests

from bot.worker.handlers.pull_requests import CHECK_NAME
from tests.fixtures.attacks import ATTACKS
from tests.fixtures.miles import miles_tree, test_file
from tests import processes
from tests.patience import PATIENCE
from tests.service_support import ROOT, env_for, free_port, wait_for

# Attacks whose file is a changed test file: they bite in the PR check's diff mode.
ATTACK_PRS = 3  # pull requests per attack at once: more than one worker thread's worth

# The on-demand attack: a dispatch table on the attacker's default branch, a PR of padded test files.
CONFIG_PATH = ".github/ci-registrar.yml"
ONDEMAND_SUITE = "nightly-stage-c-4-gpu-mi350"
# runs_on: the attacker's repository has no workflow that runs the suite (no job to copy)
ONDEMAND_CONFIG = (f"dispatch:\n  {ONDEMAND_SUITE}:\n    workflow: rocm-on-demand.yml\n    ref: main\n"
                   "    runs_on: [self-hosted, amd, mi350, 4gpu]\n")
ONDEMAND_FILES = 20
ONDEMAND_PAD_BYTES = 256 * 1024  # per file; bench/adversarial.py pads more (--pad-kb)


@dataclass
class Outcome:
    attack: str
    ordinary_s: float | None  # delivery to completed check run of the ordinary PR
    attack_runs: list[dict] = field(default_factory=list)  # the attacker's check runs, as GitHub shows them
    peak_rss_mb: float = 0.0
    deliveries: dict = field(default_factory=dict)  # delivery id -> status in the App's store


def up(base: str) -> bool:
    """The App at `base` answers /healthz (a server still starting refuses the connection or has
    not answered yet: asked again by the caller's wait)."""
    try:
        return requests.get(base + "/healthz", timeout=PATIENCE).status_code == 200
    except requests.RequestException:
        return False


class Service:
    """`ci-registrar serve` in its own process group, on the simulator, with its own data directory."""

    def __init__(self, sim, gh_app, tmp: Path, threads: int = 4, **env_extra):
        self.data_dir = tmp / "data"
        self.port = free_port()
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("GITHUB_", "CI_REGISTRAR_", "REDIS_", "DATABASE_"))}
        env.update(env_for(sim, gh_app, self.data_dir), PORT=str(self.port), HOST="127.0.0.1", PYTHONPATH=str(ROOT),
                   CI_REGISTRAR_LOG_LEVEL="warning")
        env.update({k: str(v) for k, v in env_extra.items()})
        self.log_path = tmp / "serve.log"
        self._log = open(self.log_path, "wb")
        self.proc = processes.start([sys.executable, "-m", "bot.cli", "serve", "--threads", str(threads)], cwd=ROOT,
                                     env=env, stdout=self._log, stderr=subprocess.STDOUT)
        self.base = f"http://127.0.0.1:{self.port}"

        if not wait_for(lambda: self.proc.poll() is not None or up(self.base)) or self.proc.poll() is not None:
            self.stop()
            raise RuntimeError("serve did not start: " + self.log_path.read_text()[-2000:])

    def deliver(self, sim, delivery) -> int:
        return sim.deliver(self.base + "/webhook", delivery).status_code

    def peak_rss_mb(self) -> float:
        """The serving processes' peak resident memory (VmHWM): gunicorn's master and its web worker,
        which runs the jobs (an analysis child, the worker's child, has its own cap)."""
        pid = self.proc.pid
        try:
            workers = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            workers = []
        peaks = [0.0]
        for each in [pid, *map(int, workers)]:
            try:
                lines = Path(f"/proc/{each}/status").read_text().splitlines()
            except OSError:
                continue
            peaks += [int(line.split()[1]) / 1024 for line in lines if line.startswith("VmHWM:")]
        return max(peaks)

    def deliveries(self) -> dict[str, str]:
        import sqlite3

        conn = sqlite3.connect(self.data_dir / "ci-registrar.db")
        try:
            return dict(conn.execute("select delivery_id, status from deliveries").fetchall())
        finally:
            conn.close()

    def stop(self) -> None:
        processes.stop(self.proc)
        self._log.close()


class Arena:
    """A simulator with the App, an ordinary repository (radixark/miles) and an attacker's
    installation (mallory/*, its own account), and the App serving it."""

    def __init__(self, sim, tmp: Path, threads: int = 4, **env_extra):
        self.sim = sim
        self.app = sim.create_app(name="CI Registrar", owner="radixark")
        self.miles = sim.create_repo("radixark/miles")
        self.miles.commit(miles_tree(), branch="main")
        sim.install(self.app, "radixark/miles")
        self.evil = sim.create_repo("mallory/evil")
        self.evil.commit(miles_tree(), branch="main")
        sim.install(self.app, "mallory/evil")
        self.service = Service(sim, self.app, tmp, threads=threads, **env_extra)
        self.rounds = 0

    def anchor_s(self) -> float | None:
        """Seconds from delivery to completed check of an ordinary PR with nothing else running: the
        yardstick of the same check under attack, on this machine at this moment (None: not done)."""
        pr = self.ordinary_pr()
        started = time.monotonic()
        self.service.deliver(self.sim, self.opened(self.miles, pr))
        done = wait_for(lambda: self.completed(self.miles, pr.head_sha))
        return time.monotonic() - started if done else None

    def ordinary_pr(self):
        """A fresh, ordinary pull request on radixark/miles (its own branch and head)."""
        self.rounds += 1
        branch = f"ordinary-{self.rounds}"
        self.miles.commit({f"tests/e2e/test_ordinary_{self.rounds}.py": test_file(
            'register_cuda_ci(est_time=120, suite="stage-c-4-gpu-h200", labels=["short"])')},
            branch=branch, parent=self.miles.head("main"))
        return self.sim.open_pull_request(self.miles, branch, "main", author="alice")

    def attack_pr(self, attack: str, i: int):
        branch = f"{attack}-{i}"
        files = dict(ATTACKS[attack]())
        files[f"tests/e2e/test_mark_{attack}_{i}.py"] = "x = 1\n"  # each PR its own head
        self.evil.commit(files, branch=branch, parent=self.evil.head("main"))
        if attack == "wide_config":  # the configuration is read from the default branch
            self.evil.commit(files, branch="main")
        return self.sim.open_pull_request(self.evil, branch, "main", author="mallory")

    def opened(self, repo, pr):
        return self.sim.webhook("pull_request", "opened", app=self.app, repo=repo, pull=pr, sender=pr.author)

    def poison(self):
        """A signed delivery the App cannot hold: an installation id above 2**63."""
        from tests.simulator import sign

        d = self.opened(self.evil, self.attack_pr("many_suites", 99))
        payload = json.loads(d.body)
        payload["installation"]["id"] = 2**64 + 1
        d.body = json.dumps(payload).encode()
        d.headers["X-Hub-Signature-256"] = sign(d.body, self.app.webhook_secret)
        return d

    def completed(self, repo, sha: str) -> list[dict]:
        return [r for r in self.sim.check_runs(repo, sha=sha, name=CHECK_NAME) if r["status"] == "completed"]

    def run(self, attack: str) -> Outcome:
        """The attack's pull requests, then an ordinary one; until every check run is completed."""
        default_branch = self.evil.head("main")  # wide_config changes it: put back afterwards
        if attack == "poison":
            attacks, deliveries = [], [self.poison()]
        else:
            attacks = [self.attack_pr(attack, i) for i in range(ATTACK_PRS)]
            deliveries = [self.opened(self.evil, pr) for pr in attacks]
        for d in deliveries:
            self.service.deliver(self.sim, d)
        ordinary = self.ordinary_pr()
        d = self.opened(self.miles, ordinary)
        started = time.monotonic()
        self.service.deliver(self.sim, d)
        # One patience for each pull request's check in the scene: the attack's are work too, and
        # on a busy machine the ordinary check shares the cores with them.
        done = wait_for(lambda: self.completed(self.miles, ordinary.head_sha), patience=(len(deliveries) + 1) * PATIENCE)
        ordinary_s = time.monotonic() - started if done else None
        wait_for(lambda: all(self.completed(self.evil, pr.head_sha) for pr in attacks),
                 patience=(len(deliveries) + 1) * PATIENCE)
        ids = [x.delivery_id for x in deliveries] + [d.delivery_id]
        wait_for(lambda: all(self.service.deliveries().get(i) in ("done", "invalid", "failed", "dead") for i in ids),
                 patience=(len(deliveries) + 1) * PATIENCE)
        states = self.service.deliveries()
        self.evil.set_branch("main", default_branch)
        return Outcome(attack, ordinary_s,
                       [r for pr in attacks for r in self.sim.check_runs(self.evil, sha=pr.head_sha, name=CHECK_NAME)],
                       self.service.peak_rss_mb(), {i: states.get(i) for i in ids})

    def ondemand_attack(self, files: int = ONDEMAND_FILES, pad_bytes: int = ONDEMAND_PAD_BYTES,
                        commands: int = 6, register_last: bool = False) -> Outcome:
        """A read-only user's PR of `files` padded test files registered in a dispatchable ROCm suite,
        then `commands` whole-suite `/run-rocm` comments on it (each selection reads every file),
        then an ordinary PR on another installation. `attack_runs` are the replies to the commands.
        `register_last`: the registration after the padding (the scan reads each file to its end)."""
        default_branch = self.evil.head("main")
        self.evil.commit({CONFIG_PATH: ONDEMAND_CONFIG}, branch="main", parent=default_branch)
        self.evil.add_workflow("rocm-on-demand.yml", name="ROCm on demand", dispatchable=True)
        self.sim.set_permission(self.evil, "eve", "read")
        padding = "".join(f"PAD_{i} = [{', '.join(str(i + j) for j in range(12))}]\n"
                          for i in range(pad_bytes // 60 + 1))[:pad_bytes]
        padding = padding[: padding.rfind("\n") + 1]
        branch = f"ondemand-{self.rounds}"
        self.rounds += 1
        registered = test_file(f'register_rocm_ci(est_time=60, suite="{ONDEMAND_SUITE}", labels=["short"])')
        self.evil.commit({f"tests/e2e/test_padded_{i}.py": padding + registered if register_last else registered + padding
                          for i in range(files)}, branch=branch, parent=self.evil.head("main"))
        pr = self.sim.open_pull_request(self.evil, branch, "main", author="eve")
        opened = self.opened(self.evil, pr)
        # Commands are written once the App has seen the head (one written before is refused as
        # unseen), as a person comments on a PR they see: the PR's own check comes first.
        self.service.deliver(self.sim, opened)
        wait_for(lambda: self.service.deliveries().get(opened.delivery_id) in ("done", "failed", "dead"))
        deliveries = [opened]
        for _ in range(commands):
            comment = self.sim.add_comment(self.evil, pr.number, f"/run-rocm {ONDEMAND_SUITE}", author="eve")
            deliveries.append(self.sim.webhook("issue_comment", "created", app=self.app, repo=self.evil, pull=pr,
                                               comment=comment))
        for d in deliveries[1:]:
            self.service.deliver(self.sim, d)
        ordinary = self.ordinary_pr()
        d = self.opened(self.miles, ordinary)
        started = time.monotonic()
        self.service.deliver(self.sim, d)
        # One patience for each pull request's check in the scene: the attack's are work too, and
        # on a busy machine the ordinary check shares the cores with them.
        done = wait_for(lambda: self.completed(self.miles, ordinary.head_sha), patience=(len(deliveries) + 1) * PATIENCE)
        ordinary_s = time.monotonic() - started if done else None
        ids = [x.delivery_id for x in deliveries] + [d.delivery_id]
        wait_for(lambda: all(self.service.deliveries().get(i) in ("done", "invalid", "failed", "dead") for i in ids),
                 patience=(len(deliveries) + 1) * PATIENCE)
        states = self.service.deliveries()
        replies = [{"output": {"title": "", "summary": c["body"]}, "status": "completed", "annotations": []}
                   for c in self.sim.comments(self.evil, pr.number) if c["user"]["login"] == self.app.bot_login]
        self.evil.set_branch("main", default_branch)
        return Outcome(ONDEMAND_ATTACK, ordinary_s, replies, self.service.peak_rss_mb(),
                       {i: states.get(i) for i in ids})

    def close(self):
        self.service.stop()


ALL_ATTACKS = list(ATTACKS) + ["poison"]
ONDEMAND_ATTACK = "ondemand_from_another_installation"  # Arena.ondemand_attack
