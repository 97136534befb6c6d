"""The completion stage: a dispatched run finished, its per-file results and durations are kept.

`on_run_completed` is the `workflow_run` (completed) event's use case: the run is found by the id
the dispatch recorded (or, when GitHub's dispatch answer carried none, by the run name the shipped
workflow gives: it holds the head SHA and the suite). `finish` does the work; the dispatch stage
also calls it when a later command finds a run whose completion event never arrived.
"""

from __future__ import annotations

import re

from bot.github.retry import GitHubError, TransientError
from bot.ondemand import texts
from bot.ondemand.pull import GONE, change, client_for, iso_now, requested_files, selected_rows, tolerate_gone, trusted_config
from bot.store import ondemand as store
from bot.durations.ingest import ingest_job_log
from checks.calibration.estimates import runner_timeout
from checks.calibration.job_log import parse_job_log
from checks.target.dispatch_plan import partition
from checks.wording import plural

CONCLUSIONS = {"success", "failure", "cancelled", "timed_out", "neutral", "skipped", "action_required"}


def request_for_run(job, repo: str, run: dict):
    """The request a completed workflow run belongs to, or None."""
    request = store.request_by_workflow_run(job.store_url, repo, int(run["id"]))
    if request is not None:
        return request
    title = str(run.get("display_title") or run.get("name") or "")
    for candidate in store.requests_without_run(job.store_url, repo):
        if candidate.head_sha in title and candidate.suite in title:
            store.update_request(job.store_url, candidate.id, workflow_run_id=int(run["id"]),
                                 run_url=run.get("html_url"))
            return store.get_request(job.store_url, candidate.id)
    return None


def on_run_completed(job, data: dict) -> None:
    """A `workflow_run` completed: the dispatched request it ran for is finished (nothing to post:
    the results go onto its check run)."""
    run = data["workflow_run"]
    if run.get("event") != "workflow_dispatch":
        return
    repo = data["repository"]["full_name"]
    request = request_for_run(job, repo, run)
    if request is None or request.status != store.DISPATCHED:
        return
    finish(job, request, run, job.client)


def verdict(status: str, elapsed: float, est: float | None, timeout_per_file_s: int) -> str:
    if status == "TIMEOUT":
        return "timed out"
    if est is None or est <= 0:
        return "no est_time"
    if elapsed <= est:
        return "within est_time"
    if elapsed <= runner_timeout(est, timeout_per_file_s):
        return f"over est_time (\u00d7{elapsed / est:.2f})"
    return "over the runner's timeout"


def _read_logs(run_client, run_repo: str, jobs: list[dict]) -> tuple[dict, list[tuple[dict, str, bool]]]:
    """Every completed job's log: ({job id: text}, [(job, why it was not read, worth trying again)])."""
    from bot.github.retry import RateLimited

    logs: dict = {}
    unread: list[tuple[dict, str, bool]] = []
    for ran in jobs:
        try:
            logs[ran["id"]] = run_client.job_log(run_repo, ran["id"])
        except RateLimited:
            raise  # the job comes back after the wait GitHub asked for, its attempt not spent on the log
        except TransientError as exc:
            unread.append((ran, f"GitHub did not serve its log ({str(exc)[:120]})", True))
        except GitHubError as exc:
            if exc.status in GONE:
                unread.append((ran, f"GitHub answers {exc.status} for its log (expired or deleted)", False))
            elif exc.status >= 500 or exc.status == 0:
                unread.append((ran, f"GitHub answered {exc.status} for its log", True))
            else:
                raise
    return logs, unread


def _last_attempt(job) -> bool:
    from bot.github.retry import RetryPolicy

    return int(getattr(job, "attempt", 1) or 1) >= RetryPolicy.from_env().job_attempts


def _shard_of(name: str) -> int | None:
    m = re.search(r"shard (\d+)", name or "")
    return int(m.group(1)) if m else None


def finish(job, request, run: dict, run_client) -> None:
    """A dispatched run completed: per-file results onto "MI350 · <suite>", durations into the store.

    Durations belong to the PR's repository and head SHA: the run executes on the trusted branch
    of the workflow's repository, so its own head_sha says nothing about the code that was tested.
    `run_client`: a client for the repository the run lives in.

    Every shard's log is read. A log GitHub fails to serve (5xx, no answer) is asked for again
    with the job's own retries (bot/worker/tasks.py: backoff, a bounded number of attempts); on the last
    attempt, or for a log that is gone (404/410), the check run completes `neutral` and names the
    shard whose log could not be read: a run is never `success` with results missing, and never
    left in progress because a log would not download.
    """
    run_repo = request.dispatch_repository
    pr_client = client_for(job, request.repository, (run_repo, run_client))
    config, _problems = trusted_config(pr_client, request.repository, None)  # None: its default branch
    view = request.details.get("run_plan") or {}
    # the per-file timeout the dispatched job enforced (the run plan's), else the configured one
    timeout_per_file = int(view.get("timeout_per_file_s") or (config.calibration.timeout_per_file_s if config else 1800))
    est_of = dict(selected_rows(request))
    ran_jobs = [ran for ran in tolerate_gone(lambda: run_client.run_jobs(run_repo, int(run["id"]))) or []
                if ran.get("status") == "completed" and ran.get("conclusion") != "skipped"]
    logs, unread = _read_logs(run_client, run_repo, ran_jobs)
    if any(retry for _ran, _why, retry in unread) and not _last_attempt(job):
        raise TransientError(f"{plural(sum(1 for u in unread if u[2]), 'shard log')} of run {run['id']} not served yet")
    latest: dict[str, dict] = {}
    for ran in ran_jobs:
        text = logs.get(ran["id"])
        if text is None:
            continue
        for record in parse_job_log(text).records:
            est = est_of.get(record.file, record.est_time)
            latest[record.file] = {"file": record.file, "status": record.status, "elapsed": record.elapsed,
                                   "est_time": est,
                                   "verdict": verdict(record.status, record.elapsed, est, timeout_per_file)}
        ingest_job_log(job.store_url, text, repository=request.repository, run_id=int(run["id"]), job_id=ran["id"],
                       runner_labels=ran.get("labels") or (), head_sha=request.head_sha, workflow=run.get("path"),
                       source=f"on-demand:{request.id}", backend="rocm", suite=request.suite,
                       hardware_mapping=config.hardware if config else None)
    # Which shard a missing file was in: the runner's own split of the selected files.
    shards = int(view.get("shards") or request.details.get("plan", {}).get("shards") or 1)
    split = partition({f: float(e or 0) for f, e in est_of.items()}, shards) if shards > 1 else [list(est_of)]
    shard_of_file = {f: i for i, files in enumerate(split) for f in files}
    unread_shards = {_shard_of(ran.get("name", "")): (ran, why) for ran, why, _retry in unread}
    # A selected file no job reported (a shard that died, a log not read, a file the runner left out) is shown too.
    for missing in set(est_of) - set(latest):
        lost = unread_shards.get(shard_of_file.get(missing)) or (unread_shards.get(None) if len(unread_shards) == 1 else None)
        why = f"its shard's log could not be read ({lost[0].get('name') or lost[0]['id']})" if lost else "not in any job's log"
        latest[missing] = {"file": missing, "status": "NO RESULT", "elapsed": None, "est_time": est_of[missing],
                           "verdict": why}
    rows = [latest[f] for f in sorted(latest)]
    conclusion = run.get("conclusion") if run.get("conclusion") in CONCLUSIONS else "neutral"
    missing_results = bool(unread) or any(r["status"] == "NO RESULT" for r in rows)
    if missing_results and conclusion in ("success", "skipped"):
        conclusion = "neutral"  # never success while a result is missing
    not_read = [f"{ran.get('name') or 'job'} (job {ran['id']}): {why}" for ran, why, _retry in unread]
    if request.run_check_run_id is not None:
        tolerate_gone(lambda: pr_client.update_check_run(request.repository, request.run_check_run_id, {
            "status": "completed", "conclusion": conclusion, "completed_at": iso_now(),
            "output": texts.run_finished_output(request.suite, conclusion, request.run_url or run.get("html_url"),
                                                rows, not_read)}))
    detail = f"{conclusion}: {sum(1 for r in rows if r['status'] == 'PASS')} of {len(rows)} passed"
    if not_read:
        detail += f"; {plural(len(not_read), 'shard log')} not read"
    change(job, request, "complete", dict(files=requested_files(request), cost_gpu_hours=request.cost_gpu_hours,
                                          run_id=int(run["id"]), detail=detail), completed_at=store.now())
    follow_evidence(job, pr_client, request)


def follow_evidence(job, pr_client, request) -> None:
    """The PR's "CI registrations" summary follows the run's evidence (in place, when this head is
    still the PR's). After the request's completion: a failure here costs the summary an update
    (the next push or re-run shows it), never the run's results. The refresh is the worker's PR
    check, which its job carries (`job.refresh_evidence`): on-demand never imports the worker."""
    refresh_evidence = getattr(job, "refresh_evidence", None)
    if refresh_evidence is None:  # a job the worker's runtime did not make: no PR check to follow
        return
    try:
        refresh_evidence(job, pr_client, request.repository, request.pull_number, request.head_sha)
    except Exception as exc:  # noqa: BLE001 - the results are written; the summary catches up on the next check
        job.log.warning("could not refresh the check run's evidence", request_id=request.id, error=type(exc).__name__)
