"""Check runs this App left behind: completing one whose job cannot (dead letter, reconciler)."""

from __future__ import annotations

import datetime as dt

from bot.logging import get_logger

log = get_logger("ci_registrar.checkruns")

STALE_TITLE = "Check did not finish"
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
    from checks.render import SUMMARY_LIMIT

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
