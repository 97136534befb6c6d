"""One job's context: the delivery, an authenticated client for its installation, the store,
and the check runs its failure may report on.

Below the router (bot/worker/routing.py loads the handlers by name; the handlers and the job
runtime import this module, never the router).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

from bot.infra.current_job import CURRENT_JOB
from bot.infra.logging import get_logger


def check_run_completed(run_id: int) -> None:
    """A check run was completed on GitHub: no failure report of this job may overwrite it now."""
    ctx = CURRENT_JOB.get()
    if ctx is not None:
        ctx.disarm(run_id)


@dataclass
class JobContext:
    delivery_id: str
    event: str
    action: str | None
    installation_id: int | None
    repository: str | None
    settings: object
    github: object  # bot.github.client.GitHub
    store_url: str
    attempt: int = 1
    failure_reporters: list = field(default_factory=list)
    disarmed: set = field(default_factory=set)
    # What follows a PR's completed on-demand run: its "CI registrations" check run is checked
    # again with the new evidence (bot/worker/handlers/pull_requests.refresh_evidence, called as
    # refresh_evidence(ctx, client, repo, number, head_sha)). The job runtime hands it over
    # (bot/worker/tasks.py), so bot/ondemand asks its job for it and never imports the worker.
    refresh_evidence: Callable | None = None

    @cached_property
    def client(self):
        """An InstallationClient for this delivery's installation."""
        if self.installation_id is None:
            raise LookupError("this delivery carries no installation")
        return self.github.for_installation(self.installation_id)

    @property
    def log(self):
        return get_logger("ci_registrar.handlers")

    def report_on_failure(self, repo: str, run_id: int) -> None:
        """If this job fails for good, complete this check run as failed, with a public reason."""
        from bot.worker.checkruns import failure_report

        entry = failure_report(repo, run_id)
        if run_id in self.disarmed or entry in self.failure_reporters:
            return
        self.failure_reporters.append(entry)

    def disarm(self, run_id: int) -> None:
        """No failure report of this job may touch this check run (its verdict stands)."""
        self.disarmed.add(run_id)
        self.failure_reporters[:] = [r for r in self.failure_reporters if r.get("run_id") != run_id]

    @contextlib.contextmanager
    def exclusive(self, repository: str, head_sha: str, name: str):
        """One job at a time on this check of this head, across threads and processes.

        Waits up to CI_REGISTRAR_CLAIM_WAIT_S (30 s) for another job holding it; then raises
        bot.store.locks.Busy and the job comes back a moment later, its attempt not counted.
        """
        from bot.worker.checkruns import head_key
        from bot.infra.settings import env_float
        from bot.store.locks import claim

        wait = env_float("CI_REGISTRAR_CLAIM_WAIT_S", 30)
        with claim(self.store_url, head_key(repository, head_sha, name), wait_s=wait):
            yield
