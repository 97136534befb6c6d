"""Check runs this App left behind: completing one whose job cannot (dead letter, reconciler)."""

from __future__ import annotations

import datetime as dt

from bot.infra.logging import get_logger

log = get_logger("ci_registrar.checkruns")

STALE_TITLE = "Check did not finish"
FAILED_TITLE = "Could not finish the check"
DEAD_TITLE = "Check stopped: its job kept crashing"
FAILED_SUMMARY = (
    "CI Registrar could not finish this check: {reason}.\n\n"
    "It tried within its retry budget and gave up; use **Re-run** to try again."
)
STALLED_SUMMARY = (
    "CI Registrar could not finish this check: {reason}.\n\n"
    "Use **Re-run** to try again; if it keeps happening, the App's operator has the details."
)


def head_key(repository: str, head_sha: str, name: str) -> str:
    """The claim one job holds while it works on one check of one head (bot.store.locks)."""
    return f"check:{repository}:{head_sha}:{name}"


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def complete_stalled(client, reason: str, *, repo: str, head_sha: str, name: str, run_id: int,
                     title: str = STALE_TITLE, store_url: str | None = None) -> bool:
    """Complete the check run with conclusion `failure` and `title`, unless GitHub shows it completed
    already (then only the store learns its conclusion). True when this call completed it."""
    from checks.reporting.render import SUMMARY_LIMIT

    runs = client.check_runs_for_ref(repo, head_sha, name)
    current = next((r for r in runs if r.get("id") == run_id), None)
    if current is not None and current.get("status") == "completed":
        if store_url:
            _record(store_url, run_id, current.get("conclusion") or "neutral")
        return False
    client.update_check_run(repo, run_id, {
        "status": "completed", "conclusion": "failure", "completed_at": _now(),
        "output": {"title": title, "summary": STALLED_SUMMARY.format(reason=reason)[:SUMMARY_LIMIT]}})
    if store_url:
        _record(store_url, run_id, "failure")
    return True


def _record(url: str, run_id: int, conclusion: str) -> None:
    from bot.store import service as store

    try:
        store.set_check_run_conclusion(url, run_id, conclusion)
    except Exception as exc:
        log.warning("could not record a check run's conclusion", check_run_id=run_id, error=type(exc).__name__)


def failure_report(repo: str, run_id: int, *, title: str = FAILED_TITLE, head_sha: str | None = None,
                   name: str | None = None) -> dict:
    """What to do about one check run if its job fails for good: plain data, so a report GitHub
    refused now can be queued and sent later (bot.worker.tasks.run_report). With head_sha and name, GitHub
    is asked first and a run completed meanwhile is left as it is."""
    return {"repo": repo, "run_id": run_id, "title": title, "head_sha": head_sha, "name": name}


def complete_failed(client, reason: str, report: dict, store_url: str | None = None) -> None:
    """Complete the report's check run as failed, with `reason` (public text: never an exception's)."""
    from checks.reporting.render import SUMMARY_LIMIT

    if "call" in report:  # a report queued by an older version: {"call": ..., "kwargs": {...}}
        report = {"title": FAILED_TITLE, **report.get("kwargs", {})}
    if report.get("head_sha") and report.get("name"):
        complete_stalled(client, reason, repo=report["repo"], head_sha=report["head_sha"], name=report["name"],
                         run_id=report["run_id"], title=report.get("title") or STALE_TITLE, store_url=store_url)
        return
    client.update_check_run(report["repo"], report["run_id"], {
        "status": "completed", "conclusion": "failure", "completed_at": _now(),
        "output": {"title": report.get("title") or FAILED_TITLE,
                   "summary": FAILED_SUMMARY.format(reason=reason)[:SUMMARY_LIMIT]}})
