"""The worker's job: run one webhook delivery through the handlers, within its retry budget."""

from __future__ import annotations

import asyncio
import threading
import time

from gidgethub.sansio import Event
from huey.exceptions import RetryTask

from bot.infra import metrics, outage
from bot.infra.logging import bound, get_logger
from bot.infra.settings import env_float as _env_float

log = get_logger("ci_registrar.worker")

STORE_DOWN_RETRY_S = 5.0




def max_crashes() -> int:
    """Process deaths in the middle of one job before it is set aside as a dead letter."""
    return max(1, int(_env_float("CI_REGISTRAR_JOB_MAX_CRASHES", 3)))


def store_down_budget_s() -> float:
    """How long a delivery waits for its store to come back before it is given up (and logged)."""
    return _env_float("CI_REGISTRAR_STORE_DOWN_BUDGET_S", 6 * 3600)


def report_deadline_s() -> float:
    """How long a failure report keeps trying to reach GitHub (an outage of hours is survived)."""
    return _env_float("CI_REGISTRAR_REPORT_DEADLINE_S", 6 * 3600)


def stale_check_s() -> float:
    """A check run recorded in progress this long, with no job working on it, is completed by the
    reconciler. Longer than any job's whole budget (5 attempts, backoff capped at 5 min, one wait
    for a primary rate limit's reset, at most an hour)."""
    return _env_float("CI_REGISTRAR_STALE_CHECK_S", 2 * 3600)


def reconcile_every_s() -> float:
    return _env_float("CI_REGISTRAR_RECONCILE_EVERY_S", 300)


# What a pull request is told; the details (exception, host names, stack) go to the log only.
PUBLIC_GAVE_UP = "GitHub kept failing or rate-limiting its requests, and it gave up after {n} attempts"
PUBLIC_INTERNAL = "an internal error stopped it (the App's log has the details under this delivery id)"
PUBLIC_DEAD = "its job stopped the worker process {n} times (out of memory or killed), so it was set aside"
PUBLIC_STALE = "it did not finish within {m} minutes (its worker stopped or was stuck)"


def public_reason(text: str, delivery_id: str) -> str:
    return f"{text} (delivery `{delivery_id}`)"


class Runtime:
    """What every job of one process shares: settings, the GitHub App client and its caches, the router."""

    def __init__(self, settings, queue):
        from bot.worker.fairness import Shares

        self.settings = settings
        self.queue = queue
        self.shares = Shares()  # the consumer sets its limit from its thread count
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

    def share_threads(self, threads: int) -> None:
        """This process runs jobs on `threads` threads: one installation never holds every one
        (bot/worker/fairness.py), and a job that steps back for its installation's share waits
        in the queue's lot for the next free thread (JobQueue.park)."""
        from bot.worker.fairness import share_for

        self.shares.limit = share_for(threads)
        self.queue.parked_ready = self.shares.has_room
        self.queue.set_lot_size(threads)

    def share_analysis_slots(self) -> None:
        """This process runs jobs: its analyses take their slots from the scheduler every worker
        process shares (bot/analysis/slots.py), in Redis with a Redis queue, else in the data directory."""
        from bot.analysis import server as analysis_server, slots as analysis_slots

        analysis_slots.configure(self.settings, self.queue.storage.shared_client(), self.queue.name)
        # The analysis server imports the engine now, not on the first check (it holds no credentials).
        analysis_server.server().start()

    def _reload_credentials(self) -> bool:
        """Onboarding may have written the credentials file since this process started."""
        from bot.infra.settings import reload_credentials

        self.settings = reload_credentials(self.settings)
        return self.settings.app_configured

    @property
    def router(self):
        if self._router is None:
            from bot.worker.routing import build_router

            self._router = build_router()
        return self._router


def register(queue, settings) -> None:
    """Attach this process's runtime and the `process_delivery` task to a queue instance."""
    runtime = Runtime(settings, queue)
    outage.STORE.describe(settings.database_url)

    def process_delivery(delivery_id: str, event: str, body: bytes, store_down_since: float | None = None):
        return run_delivery(runtime, delivery_id, event, body, store_down_since)

    def report_failure(delivery_id: str, installation_id: int, report: dict, reason: str, tries: int = 1,
                       since: float | None = None):
        return run_report(runtime, delivery_id, installation_id, report, reason, tries, since)

    def record_refused(delivery_id: str, event: str, reason: str):
        return run_record_refused(runtime, delivery_id, event, reason)

    queue.runtime = runtime
    queue.record_refused = queue.task(name="record_refused")(record_refused)
    queue.process_delivery = queue.task(name="process_delivery")(process_delivery)
    queue.report_failure = queue.task(name="report_failure")(report_failure)


def run_delivery(runtime: Runtime, delivery_id: str, event_name: str, body: bytes,
                 store_down_since: float | None = None) -> None:
    from bot.infra import payloads

    try:
        # The intake's own decoder: what it accepted decodes here too. Then the fields this
        # delivery's handler reads, in the bounds the store holds, before any work starts.
        data = payloads.decode(body)
        envelope = payloads.validate(event_name, data)
    except payloads.PayloadError as exc:
        _invalid(runtime, delivery_id, event_name, str(exc))
        return
    action = envelope.action
    installation_id = envelope.installation.id if envelope.installation else None
    repository = envelope.repository.full_name if envelope.repository else None
    with runtime.shares.slot(installation_id) as free:
        if not free:
            # This installation has its share of the threads busy: step back, attempts untouched,
            # into this process's lot (the next free thread takes it), else through the schedule.
            metrics.DELIVERIES.labels(event_name, action or "", "deferred").inc()
            if runtime.queue.park(installation_id):
                return
            raise RetryTask(delay=0.5 + runtime.github.policy.rng.random())
        _run_delivery(runtime, delivery_id, event_name, body, data, action, installation_id, repository,
                      store_down_since)


def _run_delivery(runtime: Runtime, delivery_id: str, event_name: str, body: bytes, data: dict, action,
                  installation_id, repository, store_down_since) -> None:
    from bot.github.retry import RateLimited, TransientError
    from bot.infra.current_job import CURRENT_JOB
    from bot.worker.handlers.pull_requests import refresh_evidence
    from bot.worker.job import JobContext
    from bot.store import service as store
    from bot.store.locks import Busy

    settings = runtime.settings
    with bound(delivery_id=delivery_id, event=event_name, action=action, installation=installation_id,
               repository=repository):
        try:
            before, attempt, crashes = store.start_delivery(
                settings.database_url, delivery_id=delivery_id, event=event_name, action=action,
                installation_id=installation_id, repository=repository)
        except Exception as exc:
            if store.is_transient(exc):  # the store is down: come back later, without spending the budget
                _store_down(runtime, delivery_id, event_name, body, store_down_since, exc)
            else:
                _store_refused(runtime, delivery_id, event_name, exc)
            return
        outage.STORE.answered()
        if before == "done":
            log.info("delivery already processed")
            return
        github = runtime.github
        policy = github.policy
        if crashes >= max_crashes() or attempt > policy.job_attempts + max_crashes():
            try:
                _dead(runtime, delivery_id, event_name, action, crashes or attempt)
            except Exception as exc:  # the store went away meanwhile: the next start decides again
                log.warning("could not set the job aside yet", error=_short(exc))
                raise RetryTask(delay=STORE_DOWN_RETRY_S) from None
            return
        ctx = JobContext(delivery_id=delivery_id, event=event_name, action=action, installation_id=installation_id,
                         repository=repository, settings=runtime.settings, github=github,
                         store_url=settings.database_url, attempt=attempt, refresh_evidence=refresh_evidence)
        started = time.monotonic()
        outcome = "done"
        token = CURRENT_JOB.set(ctx)
        try:
            event = Event(data, event=event_name, delivery_id=delivery_id)
            asyncio.run(runtime.router.dispatch(event, ctx))
        except Busy:
            # Another job holds this head: come back once it is done (and then find it done).
            outcome = "deferred"
            log.info("another job holds this head, job deferred", attempt=attempt)
            _quietly(store.release_attempt, settings.database_url, delivery_id, "waiting for another job on the same head")
            raise RetryTask(delay=1 + policy.rng.random()) from None
        except Exception as exc:
            if _installation_gone(exc):
                # Uninstalled (or suspended) since GitHub sent this: no token, nothing this App may
                # do there. Not an error of the job; nothing was created that needs completing.
                log.info("installation gone, delivery not processed", error=_short(exc))
                _quietly(store.finish_delivery, settings.database_url, delivery_id, "done",
                         "installation gone: no token for it")
                return
            transient = isinstance(exc, TransientError) or (_is_store_error(exc) and store.is_transient(exc))
            if transient and attempt < policy.job_attempts:
                wait = exc.wait_s * (1 + 0.1 * policy.rng.random()) if isinstance(exc, RateLimited) \
                    else policy.job_backoff(attempt)
                log.warning("job will be retried", attempt=attempt, budget=policy.job_attempts, wait_s=round(wait, 1),
                            reason=_short(exc))
                _quietly(store.finish_delivery, settings.database_url, delivery_id, "retrying", _short(exc))
                outcome = "retrying"
                raise RetryTask(delay=wait) from None
            outcome = "failed"
            if transient:
                _fail(runtime, ctx, f"gave up after {attempt} attempts: {_short(exc)}", "retry_budget",
                      PUBLIC_GAVE_UP.format(n=attempt), exc_info=False)
            else:
                _fail(runtime, ctx, _short(exc), type(exc).__name__, PUBLIC_INTERNAL, exc_info=True)
        else:
            try:
                store.finish_delivery(settings.database_url, delivery_id, "done")
            except Exception as exc:  # done on GitHub, not recorded: run again (it posts nothing twice)
                if not outage.STORE.failed(exc):
                    log.warning("store unavailable, job will be confirmed later", error=type(exc).__name__)
                outcome = "retrying"
                raise RetryTask(delay=STORE_DOWN_RETRY_S) from None
            log.info("delivery processed", attempt=attempt, job_s=round(time.monotonic() - started, 3))
        finally:
            CURRENT_JOB.reset(token)
            metrics.JOB_DURATION.labels(event_name, outcome).observe(time.monotonic() - started)
            metrics.DELIVERIES.labels(event_name, action or "", outcome).inc()


def _quietly(fn, *args) -> None:
    """Bookkeeping that must not stop what follows (a retry being scheduled): logged if it fails."""
    try:
        fn(*args)
    except Exception as exc:
        if not outage.STORE.failed(exc):
            log.warning("could not record the delivery's state", error=type(exc).__name__)


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:300]


def _installation_gone(exc: BaseException) -> bool:
    """GitHub refuses this installation a token: 404 (uninstalled, or no such installation) or
    403 (suspended). A retry would get the same answer."""
    from bot.github.retry import GitHubError

    return isinstance(exc, GitHubError) and exc.status in (403, 404) and exc.endpoint.endswith("/access_tokens")


def _is_store_error(exc: BaseException) -> bool:
    from sqlalchemy.exc import SQLAlchemyError

    return isinstance(exc, SQLAlchemyError)


def _forget(runtime: Runtime, delivery_id: str) -> None:
    try:
        runtime.queue.forget_delivery(delivery_id)  # a manual redelivery may try again
    except Exception:
        pass


def _invalid(runtime: Runtime, delivery_id: str, event_name: str, reason: str) -> None:
    """A payload its handler cannot use: recorded with the reason, never retried."""
    from bot.store import service as store

    with bound(delivery_id=delivery_id, event=event_name):
        log.warning("delivery invalid, not retried", reason=reason[:300])
        metrics.DELIVERIES.labels(event_name, "", "invalid").inc()
        try:
            store.record_invalid(runtime.settings.database_url, delivery_id=delivery_id, event=event_name,
                                 reason=f"invalid payload: {reason}")
        except Exception as exc:
            log.error("could not record the invalid delivery", error=type(exc).__name__)
        _forget(runtime, delivery_id)


def run_record_refused(runtime: Runtime, delivery_id: str, event_name: str, reason: str) -> None:
    """The store's record of a delivery the intake refused (400) for its payload: `invalid`, with
    the reason, as a payload the worker found invalid is. A store that does not answer only loses
    the record (the intake's log line has it)."""
    from bot.store import service as store

    with bound(delivery_id=delivery_id, event=event_name):
        try:
            store.record_invalid(runtime.settings.database_url, delivery_id=delivery_id, event=event_name, reason=reason)
        except Exception as exc:
            log.warning("could not record the refused delivery", error=type(exc).__name__)


def _store_down(runtime: Runtime, delivery_id: str, event_name: str, body: bytes, since: float | None, exc) -> None:
    """The store is unreachable: the delivery waits for it (not spending its budget), for hours at most."""
    now = time.time()
    since = since or now
    if now - since > store_down_budget_s():
        log.error("delivery given up: the store stayed unavailable", waited_s=round(now - since),
                  error=type(exc).__name__)
        metrics.JOB_FAILURES.labels(event_name, "store_unavailable").inc()
        _forget(runtime, delivery_id)
        return
    if outage.STORE.failed(exc):  # told once per outage (bot/infra/outage.py), not once per job and try
        log.debug("job deferred until the store answers", waited_s=round(now - since))
    else:
        log.warning("store unavailable, job deferred", error=type(exc).__name__, waited_s=round(now - since))
    try:
        runtime.queue.process_delivery.schedule((delivery_id, event_name, body, since), delay=STORE_DOWN_RETRY_S)
    except Exception:
        raise RetryTask(delay=STORE_DOWN_RETRY_S) from None


def _store_refused(runtime: Runtime, delivery_id: str, event_name: str, exc) -> None:
    """The store refuses this delivery's record (a data error): trying again would fail the same way."""
    log.error("store refused the delivery, not retried", error=_short(exc))
    metrics.JOB_FAILURES.labels(event_name, "store_data_error").inc()
    metrics.DELIVERIES.labels(event_name, "", "invalid").inc()
    try:
        from bot.store import service as store

        store.record_invalid(runtime.settings.database_url, delivery_id=delivery_id, event=event_name,
                             reason=f"the store refused its record: {type(exc).__name__}")
    except Exception:
        pass
    _forget(runtime, delivery_id)


def _dead(runtime: Runtime, delivery_id: str, event_name: str, action: str | None, crashes: int) -> None:
    """A job that keeps killing its process: set aside (a dead letter), its check runs completed."""
    from bot.worker.checkruns import DEAD_TITLE, failure_report
    from bot.store import service as store

    url = runtime.settings.database_url
    log.error("job set aside as a dead letter", crashes=crashes, budget=max_crashes())
    metrics.JOB_FAILURES.labels(event_name, "dead_letter").inc()
    metrics.DELIVERIES.labels(event_name, action or "", "dead").inc()
    store.finish_delivery(url, delivery_id, "dead", f"dead letter: the process running it died {crashes} times")
    reason = public_reason(PUBLIC_DEAD.format(n=crashes), delivery_id)
    for record, installation_id in _open_runs(url, delivery_id):
        report = failure_report(record.repository, record.check_run_id, title=DEAD_TITLE, head_sha=record.head_sha,
                                name=record.name)
        run_report(runtime, delivery_id, installation_id, report, reason, 1)
    _forget(runtime, delivery_id)


def _open_runs(url: str, delivery_id: str):
    from bot.store import service as store

    row = store.get_delivery(url, delivery_id)
    return [(rec, row.installation_id if row else None) for rec in store.open_check_runs_of(url, delivery_id)]


def _fail(runtime: Runtime, ctx, reason: str, kind: str, public: str, exc_info: bool) -> None:
    """A job that failed for good: logged with its delivery id, counted, reported where a user looks.

    The log gets the details; the pull request gets `public` and the delivery id, never an
    exception's text (which can name hosts, ports, paths).
    """
    from bot.store import service as store

    log.error("job failed", reason=reason, attempt=ctx.attempt, exc_info=exc_info)
    metrics.JOB_FAILURES.labels(ctx.event, kind).inc()
    try:
        store.finish_delivery(ctx.store_url, ctx.delivery_id, "failed", reason)
    except Exception:
        log.exception("could not record the failure")
    for report in list(ctx.failure_reporters):
        run_report(runtime, ctx.delivery_id, ctx.installation_id, report, public_reason(public, ctx.delivery_id), 1)
    _forget(runtime, ctx.delivery_id)


REPORT_CAP_S = 600.0


def run_report(runtime: Runtime, delivery_id: str, installation_id: int, report: dict, reason: str, tries: int,
               since: float | None = None) -> None:
    """Tell the user a job failed (complete its check run); when GitHub is what fails, try again
    later, with backoff, until a deadline (hours: a GitHub outage does not leave the check running)."""
    from bot.worker.checkruns import complete_failed
    from bot.github.retry import RateLimited, TransientError

    since = since or time.time()
    with bound(delivery_id=delivery_id, installation=installation_id):
        try:
            client = runtime.github.for_installation(installation_id)
            complete_failed(client, reason, report, store_url=runtime.settings.database_url)
        except TransientError as exc:
            waited = time.time() - since
            if waited > report_deadline_s():
                log.error("could not report the failure on GitHub, gave up", tries=tries, waited_s=round(waited),
                          error=str(exc)[:200])
                return
            wait = exc.wait_s if isinstance(exc, RateLimited) else min(REPORT_CAP_S, runtime.github.policy.job_backoff(tries))
            log.warning("failure report deferred", tries=tries, wait_s=round(wait, 1), error=str(exc)[:200])
            try:
                runtime.queue.report_failure.schedule((delivery_id, installation_id, report, reason, tries + 1, since),
                                                     delay=wait * 1.05)
            except Exception as queue_exc:  # the reconciler completes the run later
                log.error("could not schedule the failure report", error=_short(queue_exc))
        except Exception as exc:
            log.error("could not report the failure on GitHub", error=str(exc)[:200])


# -- the reconciler -------------------------------------------------------------------------------
def reconcile(runtime: Runtime, older_than_s: float | None = None) -> int:
    """Complete this App's check runs left in progress: recorded in progress longer than a job's
    budget allows, with no job working on them (their head's claim is free). Returns how many."""
    from bot.worker.checkruns import complete_stalled, head_key
    from bot.store import service as store
    from bot.store.locks import Busy, claim

    url = runtime.settings.database_url
    older = stale_check_s() if older_than_s is None else older_than_s
    done = 0
    for record, installation_id in store.stale_check_runs(url, older):
        installation_id = installation_id or store.installation_for(url, record.repository)
        with bound(repository=record.repository, check_run_id=record.check_run_id, delivery_id=record.delivery_id):
            if installation_id is None:
                log.warning("stale check run without a known installation")
                continue

            def complete() -> bool:
                client = runtime.github.for_installation(installation_id)
                reason = public_reason(PUBLIC_STALE.format(m=round(older / 60)), record.delivery_id or "?")
                return complete_stalled(client, reason, repo=record.repository, head_sha=record.head_sha,
                                        name=record.name, run_id=record.check_run_id, store_url=url)

            try:
                try:
                    with claim(url, head_key(record.repository, record.head_sha, record.name), wait_s=0):
                        completed = complete()
                except Busy:
                    # A job is working on it right now; unless it has been at it for three times
                    # the limit (a stuck job: its run must not stay in progress for ever either).
                    if _age_s(record.updated_at) < 3 * older:
                        continue
                    log.warning("check run held by a job stuck for too long")
                    completed = complete()
                if completed:
                    done += 1
                    log.warning("stale check run completed by the reconciler")
            except Exception as exc:
                log.warning("could not reconcile a check run", error=_short(exc))
    return done


def _age_s(when) -> float:
    import datetime as dt

    if when is None:
        return float("inf")
    if when.tzinfo is None:  # SQLite hands back naive UTC
        when = when.replace(tzinfo=dt.timezone.utc)
    return (dt.datetime.now(dt.timezone.utc) - when).total_seconds()


def _reconcile_passes(runtime: Runtime) -> None:
    """One pass of each periodic duty; a store found down ends the round (the next step tries it)."""
    try:
        reconcile(runtime)
        outage.STORE.answered()
    except Exception as exc:
        if outage.STORE.failed(exc):
            return
        log.warning("reconciler pass failed", error=_short(exc))
    try:
        from bot.ondemand.housekeeping import sweep_expired
        from bot.store import service as store

        sweep_expired(runtime.github, runtime.settings.database_url, store.installation_for)
    except Exception as exc:
        if outage.STORE.failed(exc):
            return
        log.warning("on-demand expiry pass failed", error=_short(exc))
    try:
        from bot.worker.calibration_pr import sweep

        sweep(runtime.github, runtime.settings.database_url)  # each repository's calibration PR when due
    except Exception as exc:
        if not outage.STORE.failed(exc):
            log.warning("calibration pass failed", error=_short(exc))


def start_reconciler(runtime: Runtime, stop: threading.Event | None = None) -> threading.Thread:
    """At worker start, then every CI_REGISTRAR_RECONCILE_EVERY_S (5 min)."""
    stop = stop or threading.Event()

    def loop():
        while True:
            # A store that does not answer is tried once per backoff step of the process (its jobs'
            # reads count too), not at every pass, and told once (bot/infra/outage.py).
            if outage.STORE.due():
                _reconcile_passes(runtime)
            if stop.wait(reconcile_every_s()):
                return

    thread = threading.Thread(target=loop, name="reconciler", daemon=True)
    thread.start()
    return thread
