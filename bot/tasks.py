"""The worker's job: run one webhook delivery through the handlers, within its retry budget."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
import time

from gidgethub.sansio import Event
from huey.exceptions import RetryTask

from bot import metrics
from bot.logging import bound, get_logger

log = get_logger("ci_registrar.worker")

STORE_DOWN_RETRY_S = 5.0


class Runtime:
    """What every job of one process shares: settings, the GitHub App client and its caches, the router."""

    def __init__(self, settings, queue):
        self.settings = settings
        self.queue = queue
        self._github = None
        self._router = None
        self._lock = threading.Lock()

    @property
    def github(self):
        with self._lock:
            if self._github is None or (self._github.auth is None and self._reload_credentials()):
                from bot.github.client import GitHub

                s = self.settings
                self._github = GitHub(s.github_api_url, s.app_id, s.private_key, blob_dir=s.data_dir / "blobs")
            return self._github

    def _reload_credentials(self) -> bool:
        """Onboarding may have written the credentials file since this process started."""
        from bot.settings import _read_credentials

        creds = _read_credentials(self.settings.credentials_path)
        if not creds.get("pem"):
            return False
        self.settings = dataclasses.replace(
            self.settings, app_id=self.settings.app_id or str(creds.get("id")),
            private_key=self.settings.private_key or creds["pem"],
            webhook_secret=self.settings.webhook_secret or creds.get("webhook_secret"))
        return True

    @property
    def router(self):
        if self._router is None:
            from bot.routing import build_router

            self._router = build_router()
        return self._router


def register(queue, settings) -> None:
    """Attach this process's runtime and the `process_delivery` task to a queue instance."""
    runtime = Runtime(settings, queue)

    def process_delivery(delivery_id: str, event: str, body: bytes):
        return run_delivery(runtime, delivery_id, event, body)

    def report_failure(delivery_id: str, installation_id: int, report: dict, reason: str, tries: int = 1):
        return run_report(runtime, delivery_id, installation_id, report, reason, tries)

    queue.runtime = runtime
    queue.process_delivery = queue.task(name="process_delivery")(process_delivery)
    queue.report_failure = queue.task(name="report_failure")(report_failure)


def _fields(data) -> tuple[str | None, int | None, str | None]:
    action = data.get("action") if isinstance(data.get("action"), str) else None
    inst = data.get("installation") if isinstance(data.get("installation"), dict) else {}
    repo = data.get("repository") if isinstance(data.get("repository"), dict) else {}
    inst_id = inst.get("id") if isinstance(inst.get("id"), int) else None
    return action, inst_id, repo.get("full_name")


def run_delivery(runtime: Runtime, delivery_id: str, event_name: str, body: bytes) -> None:
    from bot.github.retry import RateLimited, TransientError
    from bot.routing import JobContext
    from bot.store import service as store

    data = json.loads(body)
    action, installation_id, repository = _fields(data)
    settings = runtime.settings
    with bound(delivery_id=delivery_id, event=event_name, action=action, installation=installation_id,
               repository=repository):
        try:
            before, attempt = store.start_delivery(settings.database_url, delivery_id=delivery_id, event=event_name,
                                                   action=action, installation_id=installation_id,
                                                   repository=repository)
        except Exception as exc:  # the store is down: come back later, without spending the budget
            log.warning("store unavailable, job deferred", error=type(exc).__name__)
            raise RetryTask(delay=STORE_DOWN_RETRY_S) from None
        if before == "done":
            log.info("delivery already processed")
            return
        github = runtime.github
        policy = github.policy
        ctx = JobContext(delivery_id=delivery_id, event=event_name, action=action, installation_id=installation_id,
                         repository=repository, settings=runtime.settings, github=github,
                         store_url=settings.database_url, attempt=attempt)
        started = time.monotonic()
        outcome = "done"
        try:
            event = Event(data, event=event_name, delivery_id=delivery_id)
            asyncio.run(runtime.router.dispatch(event, ctx))
        except TransientError as exc:
            if attempt < policy.job_attempts:
                wait = exc.wait_s * (1 + 0.1 * policy.rng.random()) if isinstance(exc, RateLimited) \
                    else policy.job_backoff(attempt)
                log.warning("job will be retried", attempt=attempt, budget=policy.job_attempts, wait_s=round(wait, 1),
                            reason=str(exc))
                store.finish_delivery(settings.database_url, delivery_id, "retrying", str(exc))
                outcome = "retrying"
                raise RetryTask(delay=wait) from None
            outcome = "failed"
            _fail(runtime, ctx, f"gave up after {attempt} attempts: {exc}", "retry_budget")
        except Exception as exc:
            outcome = "failed"
            _fail(runtime, ctx, f"{type(exc).__name__}: {exc}", type(exc).__name__)
        else:
            try:
                store.finish_delivery(settings.database_url, delivery_id, "done")
            except Exception as exc:  # done on GitHub, not recorded: run again (it posts nothing twice)
                log.warning("store unavailable, job will be confirmed later", error=type(exc).__name__)
                outcome = "retrying"
                raise RetryTask(delay=STORE_DOWN_RETRY_S) from None
            log.info("delivery processed", attempt=attempt)
        finally:
            metrics.JOB_DURATION.labels(event_name, outcome).observe(time.monotonic() - started)
            metrics.DELIVERIES.labels(event_name, action or "", outcome).inc()


def _fail(runtime: Runtime, ctx, reason: str, kind: str) -> None:
    """A job that failed for good: logged with its delivery id, counted, reported where a user looks."""
    from bot.store import service as store

    log.error("job failed", reason=reason, attempt=ctx.attempt, exc_info=kind not in ("retry_budget",))
    metrics.JOB_FAILURES.labels(ctx.event, kind).inc()
    try:
        store.finish_delivery(ctx.store_url, ctx.delivery_id, "failed", reason)
    except Exception:
        log.exception("could not record the failure")
    for report in ctx.failure_reporters:
        run_report(runtime, ctx.delivery_id, ctx.installation_id, report, reason[:300], 1)
    try:
        runtime.queue.forget_delivery(ctx.delivery_id)  # a manual redelivery may try again
    except Exception:
        pass


REPORT_TRIES = 4


def run_report(runtime: Runtime, delivery_id: str, installation_id: int, report: dict, reason: str, tries: int) -> None:
    """Tell the user a job failed (complete its check run); when GitHub is what fails, try again later."""
    import importlib

    from bot.github.retry import RateLimited, TransientError

    module, _, name = report["call"].partition(":")
    with bound(delivery_id=delivery_id, installation=installation_id):
        try:
            client = runtime.github.for_installation(installation_id)
            getattr(importlib.import_module(module), name)(client, reason, **report["kwargs"])
        except TransientError as exc:
            if tries >= REPORT_TRIES:
                log.error("could not report the failure on GitHub", error=str(exc)[:200])
                return
            wait = exc.wait_s if isinstance(exc, RateLimited) else runtime.github.policy.job_backoff(tries)
            log.warning("failure report deferred", wait_s=round(wait, 1), error=str(exc)[:200])
            runtime.queue.report_failure.schedule((delivery_id, installation_id, report, reason, tries + 1),
                                                 delay=wait * 1.05)
        except Exception as exc:
            log.error("could not report the failure on GitHub", error=str(exc)[:200])
