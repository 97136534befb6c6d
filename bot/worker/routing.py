"""Which handler runs for which event and action: every bot/worker/handlers module's Router, composed.

A job gets a JobContext: the delivery, an authenticated client for its installation, the store.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
from dataclasses import dataclass, field
from functools import cached_property

from gidgethub.routing import Router

from bot.infra.logging import get_logger


# Every handler module, listed (as bedevere's __main__ composes its routers): what the App reacts
# to is read here, and a new module is one visible line. tests/bot/worker/test_routing.py fails when a module
# of bot/worker/handlers is missing from this list.
HANDLER_MODULES = (
    "bot.worker.handlers.pull_requests",   # the "CI registrations" check run
    "bot.worker.handlers.durations",       # durations from the CI runs' job logs
    "bot.worker.handlers.installations",   # installations and their repositories
    "bot.worker.handlers.rocm_commands",   # /run-rocm, /approve-rocm, /deny-rocm, /rocm-status
    "bot.worker.handlers.rocm_approvals",  # the Approve run button; a push makes requests stale
    "bot.worker.handlers.summary_actions", # the summary's Run ROCm suite buttons: a maintainer's /run-rocm
    "bot.worker.handlers.rocm_runs",       # an on-demand run finished
    "bot.worker.handlers.calibration",     # /calibrate-est-time: the calibration pull request now
)


def build_router() -> Router:
    return Router(*(importlib.import_module(name).router for name in HANDLER_MODULES))


# The job this thread (or its asyncio.run) is running: lets a check's completion disarm the
# failure reports of that job without threading the context through every call.
CURRENT_JOB: contextvars.ContextVar["JobContext | None"] = contextvars.ContextVar("ci_registrar_job", default=None)


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
